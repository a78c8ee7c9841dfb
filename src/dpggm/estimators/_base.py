"""The two fit templates of the library, and the shared release of the second moment.

Every estimator follows one of two templates; a newcomer copies the one that fits.

:class:`PlannedEstimator` -- every estimator that reads private records
    ``fit`` = validate every parameter (:meth:`~PlannedEstimator._settings`) -> read and
    clip the records (nothing random; a file or a Dask collection may be read in passes)
    -> plan the measurements from public facts (:meth:`~PlannedEstimator._plan`, the same
    plan :meth:`~PlannedEstimator.plan` returns before any data are read) -> refuse what
    the plan cannot deliver -> run the plan's measurements in order, each checked against
    one accountant before it runs and booked after (:class:`~dpggm.mechanisms.plan.PlanRun`)
    -> post-process (solve) -> ``privacy_`` from what ran, with the plan in its record.
    Adaptive estimators (PACE-GGM, AdaptiveCovariance) use the same template: their plan
    states the fixed steps and, for the adaptive part, one step whose budget is the total
    of a filter the step runs under (a step that would overspend never runs).

:class:`PostProcessingEstimator` -- the estimators fitted to a published release
    (:class:`~dpggm.estimators.noisy_glasso.NoisyGraphicalLasso`,
    :class:`~dpggm.estimators.gwishart.GWishartGraph`, the graph baselines): validate ->
    read the release's public noise description -> read the released records -> solve.
    They spend nothing: their plan is empty and says so; ``privacy_`` is the release's.

Two templates because the two kinds differ in what they may touch: the first reads private
records and must spend through a plan; the second reads only a release and must never
spend. Nothing random happens in either before every check has passed.
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator

from dpggm.data.records import SecondMoment, check_missing_policy, clipped_second_moment
from dpggm.data.tables import too_few_variables
from dpggm.estimators._contract import (
    BOUNDS,
    BUDGET,
    CALIBRATION,
    FLAG,
    NEIGHBORS,
    NOISE,
    NONE,
    RANDOM_STATE,
    REPORT_DELTA,
    VECTOR,
    AnyOf,
    ContractMixin,
    Options,
    check_budget,
    check_fraction,
    fraction,
)
from dpggm.exceptions import InvalidGuaranteeError, ReleaseFailedError
from dpggm.mechanisms.bounds import check_bounds
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.plan import PlanRun, ReleasePlan, StepFilter, guarantee_forms
from dpggm.mechanisms.record import Release
from dpggm.mechanisms.release import (
    COVARIANCE_MECHANISMS,
    FLOAT_NOISE_MECHANISMS,
    INVALID_MECHANISMS,
    WISHART_FLOAT_REASON,
    check_second_moment_mechanism,
    release_planned_second_moment,
    second_moment_accounting,
    second_moment_plan,
)
from dpggm.privacy.budgets import Budget, NonPrivate

__all__ = [
    "DPEstimator",
    "Deliverable",
    "MomentRecords",
    "PlannedEstimator",
    "PostProcessingEstimator",
    "PrivateEstimatorBase",
    "Settings",
    "check_bounds",
    "check_budget",
    "check_fraction",
    "check_sizes",
    "make_context",
    "result_record",
    "stage_estimate",
]


def make_context(estimator: Any, bounds: Any,
                 data_dependent_reasons: tuple[str, ...] = ()) -> ReleaseContext:
    """The release context of an estimator's fit, from its declared parameters (already
    checked by :meth:`ContractMixin._validate_params`).

    Every estimator that releases from private records builds its context here, so that
    what :meth:`ContractMixin._validate_params` found about the fit -- preprocessing in a
    ``Pipeline`` that voids the guarantee -- reaches every record it assembles
    (``"data-dependent"`` with the steps named). An estimator without a ``noise`` parameter
    releases exact noise. ``data_dependent_reasons`` adds what the estimator itself knows
    voids the guarantee (a penalty tuned on the data, say)."""
    params = estimator.get_params(deep=False)
    return ReleaseContext(
        neighbors=params["neighbors"],
        bounds=bounds,
        random_state=params["random_state"],
        report_delta=float(params["report_delta"]),
        noise=params.get("noise", "exact"),
        data_dependent_reasons=tuple(getattr(estimator, "_preprocessing_reasons", ()))
        + tuple(data_dependent_reasons),
    )


def check_sizes(n_samples: Any, n_features: Any) -> tuple[int, int]:
    """The public sizes a plan is made for: positive integers (``True`` is no size)."""
    out = []
    for name, value in (("n_samples", n_samples), ("n_features", n_features)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
        out.append(int(value))
    return out[0], out[1]


@dataclass(frozen=True)
class Settings:
    """The validated parameters of one fit (every declared parameter, checked and
    converted), the budget asked for and the total the steps compose in, and what makes
    the release other than valid whatever the data (public facts)."""

    params: dict[str, Any]
    requested: Budget
    accounting: Budget
    invalid_reason: str | None = None
    data_dependent: tuple[str, ...] = ()

    def __getitem__(self, name: str) -> Any:
        return self.params[name]

    @property
    def non_private(self) -> bool:
        return isinstance(self.requested, NonPrivate)


def result_record(estimator: Any, *, method: str | None = None) -> dict[str, Any]:
    """The public record of a fitted estimator (``result.json``): sizes, column names, the
    guarantee, the parameters (never the seed) and the solver's public outcome.

    ``n_samples`` is ``null`` when the fit released no count (under add/remove neighbours
    the number of records is private, and an estimator that releases no noisy count sets
    no ``n_samples_``), as in the plan's record."""
    from dpggm.estimators._contract import feature_names

    n_samples = getattr(estimator, "n_samples_", None)
    record: dict[str, Any] = {
        "method": method or type(estimator).__name__,
        "n_samples": None if n_samples is None else int(n_samples),
        "n_features": int(estimator.n_features_in_),
        "features": feature_names(estimator),
        "privacy": estimator.privacy_.to_dict(),
        "parameters": {k: (v.to_dict() if hasattr(v, "to_dict") else v)
                       for k, v in estimator.get_params().items()
                       # Never the seed, nor a nested estimator's (``inner__random_state``).
                       if k.rsplit("__", 1)[-1] != "random_state"
                       and (isinstance(v, (int, float, str, bool, type(None)))
                            or hasattr(v, "to_dict"))},
    }
    solver = getattr(estimator, "solver_", None)
    if solver is not None and hasattr(solver, "iterations"):
        record["n_iter"] = int(solver.iterations)
        if solver.converged is not None:
            record["converged"] = bool(solver.converged)
    for attr in ("alpha_", "n_edges_", "n_rounds_", "n_measured_offdiag_"):
        if getattr(estimator, attr, None) is not None:
            value = getattr(estimator, attr)
            record[attr.rstrip("_")] = value.item() if hasattr(value, "item") else value
    return record


def stage_estimate(staged: Any, estimator: Any, record: dict[str, Any]) -> None:
    """Write a fitted estimator's released files into ``staged``
    (:class:`~dpggm.io.StagedOutput`): ``result.json``, the matrices it holds and, for a
    precision or a graph, ``edges.csv``."""
    from dpggm.estimators._contract import feature_names
    from dpggm.estimators.edges import edge_table, edges_csv_text, edges_from_precision

    staged.json("result.json", record)
    for attr, name in (("covariance_", "covariance.npy"),
                       ("noisy_covariance_", "noisy_covariance.npy"),
                       ("precision_", "precision.npy")):
        if getattr(estimator, attr, None) is not None:
            staged.npy(name, getattr(estimator, attr))
    names = feature_names(estimator)
    precision = getattr(estimator, "precision_", None)
    # The graph is the estimator's own (``adjacency_``: PACE-GGM's measured pattern, a
    # G-Wishart posterior's edges above one half), never re-read off a precision matrix
    # whose zero pattern need not be it.
    adjacency = getattr(estimator, "adjacency_", None)
    if precision is not None:
        staged.text("edges.csv", edges_csv_text(edges_from_precision(
            precision, names,
            adjacency=np.abs(precision) > 0 if adjacency is None else adjacency)))
    elif adjacency is not None:
        staged.text("edges.csv", edges_csv_text(edge_table(
            adjacency, names, partial=None)))


class Deliverable:
    """``save``: a fitted estimator's released files, written whole or not at all and,
    with a ledger, charged before they appear (:func:`dpggm.io.deliver`)."""

    def save(self, out: Any, *, X: Any = None, y: Any = None, ledger: Any = None,
             dataset: str | None = None, overwrite: bool = False,
             record: dict[str, Any] | Callable[[Any], dict[str, Any]] | None = None,
             extra: Callable[[Any], None] | None = None, mechanism: str | None = None,
             details: dict[str, Any] | None = None,
             report: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Write the released files of this fit into the directory ``out`` -- all of them
        or none -- owner-only until delivered; with ``ledger`` (a
        :class:`~dpggm.privacy.ledger.Ledger` or the path of one) and ``dataset``, charge
        ``privacy_`` first: a refused charge leaves nothing, a crash after the charge is
        finished by the next delivery into the same parent directory, nothing is charged
        twice (:func:`dpggm.io.deliver`).

        Parameters
        ----------
        out : path
            The output directory (refused if it holds files, unless ``overwrite``).
        X, y : optional
            Fit on them first, inside the delivery (``fit(X, y)``): ``out`` is checked and
            staged before any record is read, and a fit or a write that fails after the
            release's first draw is charged to ``ledger`` -- the release ran, although
            nothing is delivered -- and reported without its reason
            (:func:`dpggm.io.failed_release`). Without ``X`` the estimator must be fitted
            already, and a write that fails charges nothing: the fit stays in memory, to
            be saved again.
        record : dict or callable, optional
            The ``result.json`` record, or a function of the fitted estimator that gives
            it (default: the estimator's own, :func:`result_record` unless the estimator
            states another).
        extra : callable, optional
            ``extra(staged)`` writes more files into the staging directory (pictures, say)
            after the released files.
        mechanism, details : optional
            The spend's description in the ledger (default ``"<class>.save"``; the details
            always carry ``out``).
        report : callable, optional
            ``report(line)`` hears what the recovery of interrupted deliveries into the
            parent directory did (run first; default: nothing said).

        Returns
        -------
        dict
            ``written`` (the paths of the files delivered) and ``ledger`` (the ledger
            record -- ``ledger``, ``dataset``, ``spend``, ``output_id`` -- or ``None``).
        """
        from pathlib import Path

        from dpggm.io import check_ledger_pair, deliver
        from dpggm.privacy.ledger import Ledger

        if X is None and not hasattr(self, "privacy_"):
            raise ValueError(f"{type(self).__name__} is not fitted: call fit before save")
        check_ledger_pair(ledger, dataset)
        book = ledger if ledger is None or isinstance(ledger, Ledger) else Ledger(
            ledger, create=False)
        fitted_here = False

        def write(staged: Any) -> None:
            nonlocal fitted_here
            if X is not None:
                self.fit(X, y)
                fitted_here = True
            written = record(self) if callable(record) else record
            self._stage_release(staged, written if written is not None
                                else self._release_record())
            if extra is not None:
                extra(staged)

        def drawn() -> Any:
            # The release of the fit this call ran, if it ran to the end (a fit that fails
            # after its draw raises a ReleaseFailedError carrying its own guarantee).
            return self.privacy_ if fitted_here else None

        return deliver(Path(out), write, overwrite=overwrite, ledger=book, dataset=dataset,
                       guarantee=lambda: self.privacy_, drawn=drawn if X is not None else None,
                       mechanism=mechanism or f"{type(self).__name__}.save",
                       details={"out": str(out), **(details or {})}, report=report)

    def _release_record(self) -> dict[str, Any]:
        """The default ``result.json`` record of :meth:`save`."""
        return result_record(self)

    def _stage_release(self, staged: Any, record: dict[str, Any]) -> None:
        """Write the released files of :meth:`save` into ``staged``."""
        stage_estimate(staged, self, record)


class PlannedEstimator(Deliverable, ContractMixin, BaseEstimator):
    """Template 1 (see the module documentation): an estimator that reads private records,
    plans its measurements from public facts and runs them under an accountant.

    Subclasses implement :meth:`_plan`, :meth:`_run` and :meth:`_finish`, and may refine
    :meth:`_settings` (combinations of parameters), :meth:`_records` (how the records are
    read and clipped) and :meth:`_check_plan`.
    """

    # ------------------------------------------------------------------ the template

    def fit(self, X: Any, y: Any = None) -> Any:
        """Validate, read and clip ``X``, plan, check, release, solve (see the module
        documentation). Returns ``self``.

        Raises
        ------
        ReleaseFailedError
            Anything that fails after the first random draw of a valid release (a solver
            breaking down on the noisy statistic, say): whether and how it fails may depend
            on the noise, so the reason is withheld (a seeded run shows it) and the error
            carries the guarantee to charge for what ran (``guarantee``: the whole plan).
        """
        return self._fit(X, y, PlanRun)

    def fit_as_step(self, X: Any, part: StepFilter, y: Any = None) -> Any:
        """Fit as one step of another estimator's plan: the same template as :meth:`fit`,
        its plan's steps run by ``part`` (the :class:`~dpggm.mechanisms.plan.StepFilter`
        of that step, whose budget is this estimator's), so that the fit of which this is
        a step keeps one accountant. Returns ``self``."""
        return self._fit(X, y, part.running)

    def _fit(self, X: Any, y: Any, open_run: Callable[[ReleasePlan], Any]) -> Any:
        settings = self._settings()
        ctx: ReleaseContext | None = None
        plan: ReleasePlan | None = None
        release: Any = None
        ran = False
        try:
            with self._records(X, y, settings) as data:
                plan = self._plan(settings, data.n_samples, data.n_features)
                self._check_plan(settings, plan)
                ctx = self._context(settings)
                run = open_run(plan)
                release = self._run(settings, plan, data, run, ctx)
                ran = True
            self.plan_ = plan
            self._finish(X, settings, plan, data, release, run, ctx)
        except Exception:
            drew = ran or (ctx is not None and ctx.source.drawn)
            failure = None if plan is None or not drew else self._failed_after_draw(
                plan, ctx, release)
            if failure is None:
                raise
            raise failure from None
        return self

    def _failed_after_draw(self, plan: ReleasePlan, ctx: ReleaseContext | None,
                           release: Any) -> Exception | None:
        """The error for a failure after the first draw: ``None`` (re-raise it as it is)
        when the run is no valid release anyway -- seeded (an experiment), non-private,
        float noise, an invalid method --, else a generic :class:`ReleaseFailedError`
        carrying what to charge: the guarantee of a release that ran in full (an inner
        estimator's), or the whole plan in every form it holds."""
        validity, _ = self.expected_validity()
        if validity != "valid" or plan.non_private:
            return None
        guarantee = getattr(release, "privacy_", None)
        if guarantee is None and ctx is not None:
            budget = plan.accounting
            record = ctx.guarantee(
                budget=budget,
                mechanism=f"{type(self).__name__} (failed after its noise was drawn; nothing "
                          "was released)",
                notes={"plan": plan.to_dict(ctx.report_delta),
                       "failure": "the run failed after its first random draw; the reason "
                                  "is withheld (it may depend on the noise)"})
            forms = plan.forms(ctx.report_delta)
            guarantee = replace(record,
                                equivalent=tuple(b for b in forms.values() if b != budget))
        spent = plan.accounting if guarantee is None else guarantee.budget
        return ReleaseFailedError(
            f"{type(self).__name__}: the release failed after its noise was drawn; the "
            "reason is withheld because it may depend on the noisy release (a seeded run, "
            "an experiment, shows it). Nothing was released; count the run as spent: "
            f"{spent} (the error's guarantee)", guarantee=guarantee)

    def plan(self, *, n_samples: int, n_features: int) -> ReleasePlan:
        """The measurements a fit on ``n_samples`` records of ``n_features`` columns will
        make -- every step's mechanism, sensitivity, noise and budget, and their total in
        every form that holds -- from public facts only: no data are read and nothing random
        is drawn. A fit on such data records exactly this plan (``plan_``,
        ``privacy_.notes["plan"]``) and these steps (``privacy_.noise["breakdown"]``).

        Raises
        ------
        ValueError
            Every refusal the fit would make before reading the data (a bad parameter, a
            budget out of range or of the wrong notion, ...).

        Privacy
        -------
        Uses only public quantities (``n`` is public under replace-one neighbours; under
        add/remove the plan depends on it only through public bounds, and is recorded
        without it).
        """
        n, p = check_sizes(n_samples, n_features)
        settings = self._settings()
        plan = self._plan(settings, n, p)
        self._check_plan(settings, plan)
        return plan

    def check_params(self) -> None:
        """Check every declared parameter (and their combinations), as ``fit`` does before
        reading any data; raises a ``ValueError`` naming the parameter, the constraint and
        the value."""
        self._settings()

    def release_forms(self) -> dict[str, Budget]:
        """Every budget form the release will hold (by notion), known before any data are
        read: what a ledger is checked against."""
        settings = self._settings()
        if settings.non_private:
            return {}
        return guarantee_forms(settings.requested, settings.accounting,
                               float(self.get_params(deep=False)["report_delta"]))

    def expected_validity(self) -> tuple[str, str]:
        """``(validity, reason)`` the release will have whatever the data, from public facts
        (a seed, float noise, an invalid mechanism, a penalty tuned on the data, a
        non-private run, preprocessing fitted on the data)."""
        settings = self._settings()
        ctx = self._context(settings)
        return ctx.validity(settings.requested,
                            invalid_reason=getattr(settings, "invalid_reason", None))

    def check_ledger(self, ledger: Any, dataset: str) -> None:
        """Refuse, before any data are read, a release ``ledger`` could not book for
        ``dataset``: one that will not be valid (seeded, float noise, an invalid mechanism,
        a data-tuned penalty, non-private), or whose budget forms (:meth:`release_forms`)
        none converts into the dataset's notion, or that is declared under another
        neighbouring relation, or that exceeds what remains.

        Raises
        ------
        InvalidGuaranteeError, IncompatibleBudgetError, BudgetExceededError
        """
        validity, reason = self.expected_validity()
        if validity != "valid":
            raise InvalidGuaranteeError(
                f"this release would have validity {validity!r} ({reason}), so it is never "
                "booked against a ledger; nothing was read or spent"
            )
        ledger.check_forms(dataset, tuple(self.release_forms().values()),
                           neighbors=self.get_params(deep=False)["neighbors"])

    # ------------------------------------------------------------------ hooks

    def _settings(self) -> Settings:
        """Every declared parameter checked (before any data are read), and the totals."""
        params = self._validate_params()
        requested = params["budget"]
        return Settings(params=params, requested=requested,
                        accounting=self._accounting(params, requested))

    def _accounting(self, params: dict[str, Any], requested: Budget) -> Budget:
        """The total the steps compose in (the requested budget itself by default)."""
        return requested

    @contextlib.contextmanager
    def _records(self, X: Any, y: Any, settings: Settings) -> Iterator[Any]:
        """The clipped records' statistics (no noise): by default the second moment of
        records clipped to the declared bounds, after a public center."""
        center = settings.params.get("center")
        public = None if center is None or isinstance(center, str) else np.asarray(
            center, dtype=float)
        yield MomentRecords(clipped_second_moment(
            X, bounds=settings["bounds"], center=public,
            missing=settings.params.get("missing", "refuse")))

    def _context(self, settings: Settings) -> ReleaseContext:
        return make_context(self, settings.params.get("bounds"), settings.data_dependent)

    def _plan(self, settings: Settings, n: int, p: int) -> ReleasePlan:  # pragma: no cover
        raise NotImplementedError

    def _check_plan(self, settings: Settings, plan: ReleasePlan) -> None:
        """Refuse, before any draw, a plan that cannot be delivered (most refusals are made
        while planning)."""

    def _run(self, settings: Settings, plan: ReleasePlan, data: Any, run: PlanRun,
             ctx: ReleaseContext) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _finish(self, X: Any, settings: Settings, plan: ReleasePlan, data: Any, release: Any,
                run: PlanRun, ctx: ReleaseContext) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class DPEstimator(PlannedEstimator):
    """The base of every estimator that spends a budget (template 1,
    :class:`PlannedEstimator`): ``budget``, ``bounds``, ``neighbors``, ``report_delta``
    and ``random_state`` are declared here; subclasses declare the rest.

    Notes
    -----
    A preprocessing step fitted on the private data (a ``StandardScaler`` in a
    ``Pipeline``, say) voids the guarantee: every transformed record then depends on all
    the records, so the declared bounds and sensitivities no longer hold. When ``fit`` runs
    in a scikit-learn ``Pipeline`` after such a step, ``privacy_.validity`` is
    ``"data-dependent"`` with the step named (no accountant or ledger books it) and a
    :class:`~dpggm.estimators._contract.FittedOnPrivateDataWarning` is issued. A fixed
    public per-record function (``FunctionTransformer(np.log)``, ``Normalizer``) is
    recognised by scikit-learn's tags and a check on a public probe, and changes nothing.
    A transformer fitted by hand before ``fit`` cannot be detected; see
    :func:`~dpggm.estimators._contract.preprocessing_reasons`.
    """

    _reads_private_records = True

    _constraints = {
        "budget": BUDGET,
        "bounds": BOUNDS,
        "neighbors": NEIGHBORS,
        "report_delta": REPORT_DELTA,
        "random_state": RANDOM_STATE,
    }


@dataclass
class MomentRecords:
    """The clipped records' second moment with the sizes the template reads (what a
    planned estimator's steps read when they need only the second moment)."""

    stats: SecondMoment

    @property
    def n_samples(self) -> int:
        return self.stats.n

    @property
    def n_features(self) -> int:
        return self.stats.n_features


class PostProcessingEstimator(Deliverable, ContractMixin, BaseEstimator):
    """Template 2 (see the module documentation): an estimator fitted to a published
    release. It spends nothing; :meth:`plan` is empty and says so."""

    def save(self, out: Any, *, ledger: Any = None, dataset: str | None = None,
             **options: Any) -> dict[str, Any]:
        """Write the files of this fit into the directory ``out``, whole or not at all
        (:meth:`Deliverable.save`), never charging a ledger.

        Raises
        ------
        ValueError
            ``ledger`` or ``dataset`` given: post-processing spends nothing, and the
            release it reads was booked when it was published (charging here would book
            that release a second time).
        """
        if ledger is not None or dataset is not None:
            raise ValueError(
                f"{type(self).__name__}.save takes no ledger (got ledger={ledger!r}, "
                f"dataset={dataset!r}): post-processing of a published release spends "
                "nothing, the release was booked when it was published")
        return super().save(out, **options)

    def plan(self, *, n_samples: int, n_features: int) -> ReleasePlan:
        """The empty plan: post-processing of a published release makes no measurement
        and spends nothing (its privacy is the release's).

        Raises
        ------
        ValueError
            Every refusal the fit would make before reading the data (a bad parameter or
            combination of parameters, a noise description that disagrees with the
            release)."""
        n, p = check_sizes(n_samples, n_features)
        self.check_params()
        return ReleasePlan(type(self).__name__, n, p, NonPrivate(), NonPrivate(), (),
                           notes={"reason": "post-processing of a published release: no "
                                            "measurement, nothing spent"})

    def fit(self, X: Any, y: Any = None) -> Any:
        """Validate, read the release's noise description and the released records,
        solve. Returns ``self``."""
        settings = self._settings()
        noise = self._noise(settings)
        data = self._read(X, settings, noise)
        self.plan_ = self.plan(n_samples=data.n_samples, n_features=data.n_features)
        self._solve(X, settings, noise, data)
        return self

    def check_params(self) -> None:
        """Check every declared parameter, their combinations and the release's noise
        description, as ``fit`` does before reading any data; raises a ``ValueError``
        naming the parameter, the constraint and the value."""
        self._noise(self._settings())

    def _settings(self) -> dict[str, Any]:
        return self._validate_params()

    def _noise(self, settings: dict[str, Any]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _read(self, X: Any, settings: dict[str, Any], noise: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _solve(self, X: Any, settings: dict[str, Any], noise: Any,
               data: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class PrivateEstimatorBase(DPEstimator):
    """The covariance-perturbation estimators (:class:`~dpggm.estimators.PrivateCovariance`
    and the precision estimators built on it): one release of the second moment
    (:func:`~dpggm.mechanisms.release.second_moment_plan`), then post-processing.

    Subclasses set the parameters ``budget``, ``bounds``, ``mechanism``, ``neighbors``,
    ``center``, ``mean_fraction``, ``count_fraction``, ``calibration``, ``noise``,
    ``allow_invalid``, ``wishart_mean_removal``, ``missing``, ``report_delta`` and
    ``random_state``, and implement :meth:`_solve`.
    """

    #: Fewest columns the estimator's post-processing accepts (a 1 x 1 covariance is
    #: meaningful; a 1 x 1 graph or sparse precision is not).
    _min_features: ClassVar[int] = 2

    _constraints = {
        "mechanism": Options(*COVARIANCE_MECHANISMS),
        "center": AnyOf(Options("none", "private"), VECTOR, NONE),
        "mean_fraction": fraction(),
        "count_fraction": fraction(),
        "calibration": CALIBRATION,
        "noise": NOISE,
        "allow_invalid": FLAG,
        "wishart_mean_removal": FLAG,
        "missing": Options("refuse", "drop"),
    }

    def _settings(self) -> Settings:
        settings = super()._settings()
        mechanism = settings["mechanism"]
        # Before any data: a budget the mechanism cannot deliver, an invalid mechanism
        # without allow_invalid, a relation it has no analysis for.
        check_second_moment_mechanism(mechanism, budget=settings.requested,
                                      neighbors=settings["neighbors"],
                                      allow_invalid=settings["allow_invalid"])
        check_missing_policy(settings["missing"], neighbors=settings["neighbors"], drops=True)
        invalid = "; ".join(r for r in (
            INVALID_MECHANISMS.get(mechanism),
            WISHART_FLOAT_REASON if mechanism in FLOAT_NOISE_MECHANISMS else None,
        ) if r) or None
        return replace(settings, invalid_reason=invalid)

    def _accounting(self, params: dict[str, Any], requested: Budget) -> Budget:
        if isinstance(requested, NonPrivate):
            return requested
        return second_moment_accounting(requested, params["mechanism"], params["noise"])

    def _private_center(self, settings: Settings) -> bool:
        center = settings["center"]
        return isinstance(center, str) and center == "private"

    def _plan(self, settings: Settings, n: int, p: int) -> ReleasePlan:
        if p < self._min_features:
            raise too_few_variables(p, minimum=self._min_features, who=type(self).__name__)
        center = settings["center"]
        if center is not None and not isinstance(center, str) and len(center) != p:
            raise ValueError(
                f"center must be a finite vector of length {p} (one per column); got "
                f"length {len(center)}")
        return second_moment_plan(
            n=n, p=p, bounds=settings["bounds"], budget=settings.requested,
            mechanism=settings["mechanism"], neighbors=settings["neighbors"],
            noise=settings["noise"], calibration=settings["calibration"],
            allow_invalid=settings["allow_invalid"],
            mean_fraction=settings["mean_fraction"] if self._private_center(settings) else None,
            count_fraction=settings["count_fraction"], estimator=type(self).__name__,
        )

    def _run(self, settings: Settings, plan: ReleasePlan, data: Any, run: PlanRun,
             ctx: ReleaseContext) -> Release:
        stats: SecondMoment = data.stats
        release = release_planned_second_moment(
            plan, stats.second_moment * stats.n, total=stats.total, n=stats.n, ctx=ctx,
            wishart_mean_removal=settings["wishart_mean_removal"], run=run)
        private_center = self._private_center(settings)
        public = not private_center and not isinstance(settings["center"], str) and (
            settings["center"] is not None)
        centering = (
            "private mean: covariance = noisy second moment - noisy mean outer product"
            if private_center
            else "public mean subtracted before clipping"
            if public
            else "none: raw second moment X^T X / n (no budget; equals the covariance only for "
            "centered data)"
        )
        guarantee = replace(
            release.guarantee,
            notes={**release.guarantee.notes, "centering": centering},
            curator_notes={**release.guarantee.curator_notes, "rows_clipped": stats.n_clipped},
        )
        covariance = release.statistic
        if release.mean is not None:
            covariance = covariance - np.outer(release.mean, release.mean)
        # The record of the covariance: the second moment's, its statistic centered by the
        # released mean (post-processing), with the column names and the centering stated.
        return replace(release, statistic=covariance, n_samples=int(release.n_samples),
                       columns=stats.columns, guarantee=guarantee)

    def _finish(self, X: Any, settings: Settings, plan: ReleasePlan, data: Any,
                release: Release, run: PlanRun, ctx: ReleaseContext) -> None:
        self.noisy_covariance_ = release.statistic
        self.noisy_mean_ = release.mean
        self.noisy_gram_ = release.gram
        self._set_fitted(
            X, n_samples=release.n_samples, n_features=release.n_features,
            columns=release.columns, privacy=release.guarantee,
        )
        self._solve(X, settings, release, data)

    def _solve(self, X: Any, settings: Settings, release: Release,
               data: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
