"""PACE-GGM: private adaptive covariance estimation via Gaussian graphical models
(Ferrando, Fuentes, Mullins, Musco & Sheldon).

Under coordinate-wise (box) bounds one entry of the second moment is far cheaper to
measure than the whole matrix. PACE-GGM spends part of a zCDP budget on the diagonal,
then repeatedly *selects* the worst-approximated entry with the exponential mechanism,
*measures* it with the Gaussian mechanism, and *reconstructs* the maximum-entropy
covariance consistent with all measurements -- whose inverse is zero off the measured
pattern, i.e. a Gaussian graphical model.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpggm.data.records import SecondMoment, clipped_second_moment
from dpggm.estimators._base import DPEstimator, MomentRecords, Settings
from dpggm.estimators._contract import (
    CALLABLE,
    NOISE,
    NONE,
    AnyOf,
    BoxBounds,
    BudgetOf,
    Interval,
    Options,
    fraction,
)
from dpggm.exceptions import UnsupportedNeighborsError
from dpggm.mechanisms.additive import GaussianMechanism, NoisePart, check_budget_range
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.noise import ExponentialMechanism
from dpggm.mechanisms.plan import PlannedMeasurement, PlanRun, ReleasePlan, StepFilter
from dpggm.mechanisms.release import EntrywiseGaussian
from dpggm.mechanisms.sensitivity import second_moment_entry_sensitivity
from dpggm.privacy.budgets import (
    GDP,
    ZCDP,
    NonPrivate,
    PureDP,
    accounting_total,
    budget_from_cost,
    dyadic_share,
    exact_cost,
)
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA
from dpggm.progress import report as report_progress
from dpggm.solvers.maxent import RECONSTRUCTION_METHODS

__all__ = ["PACECovariance", "PACERound", "pace_noise_parts"]


@dataclass(frozen=True)
class PACERound:
    """One select-measure-reconstruct round."""

    entry: tuple[int, int]
    rho_select: float
    rho_measure: float
    sigma: float
    annealed: bool


def pace_noise_parts(sens: np.ndarray, box: np.ndarray, *, diag_fraction: Fraction,
                     select_fraction: Fraction, max_rounds: int,
                     scale: Fraction = Fraction(1)) -> list[NoisePart]:
    """Every Gaussian measurement PACE may make, with its share of the total (times
    ``scale``) for :func:`~dpggm.mechanisms.additive.check_budget_range`. The diagonal ones
    get ``diag_fraction / d``; an off-diagonal one at least ``(1 - diag_fraction)(1 -
    select_fraction) / max_rounds`` (the first round's; the last round spends at least one
    round's share) and at most ``1 - diag_fraction``. Public parameters only."""
    d = sens.shape[0]
    largest = float(np.max(box)) ** 2
    diagonal, off = np.diag(sens), sens[~np.eye(d, dtype=bool)]
    parts = [NoisePart(share=scale * diag_fraction / d, sensitivity=s, size=1,
                       value_bound=largest) for s in {float(diagonal.min()), float(diagonal.max())}]
    rest = 1 - diag_fraction
    if off.size:
        for share in (rest * (1 - select_fraction) / max_rounds, rest):
            for s in {float(off.min()), float(off.max())}:
                parts.append(NoisePart(share=scale * share, sensitivity=s, size=1,
                                       value_bound=largest))
    return parts


def _check_pace_budget(requested: Any, sens: np.ndarray, box: np.ndarray, *, n: int, d: int,
                       noise: str, diag_fraction: Fraction, select_fraction: Fraction,
                       max_rounds: int) -> None:
    """Before any draw: every Gaussian measurement PACE may make must be drawable."""
    parts = [] if noise == "float" else pace_noise_parts(
        sens, box, diag_fraction=diag_fraction, select_fraction=select_fraction,
        max_rounds=max_rounds)
    check_budget_range(requested, parts, release=f"PACE-GGM on {d} columns from n = {n} rows")


def _selection_scores(S, estimate, scores, changed) -> np.ndarray:
    """Scores ``|S_jk - estimate_jk|`` of the candidates ``(j, k)``, ``j >= k``, in the
    order of ``np.tril_indices``, updated in place on the block ``changed x changed``.

    The reconstruction only changes on the components it re-solved (it is block diagonal
    over the components), so the other scores stay as they are; the updated ones are
    computed by the same float64 operations as a full recomputation, hence identical.
    """
    if changed.size:
        J, K = np.meshgrid(changed, changed, indexing="ij")
        low = J >= K
        J, K = J[low], K[low]
        scores[J * (J + 1) // 2 + K] = np.abs(S[J, K] - estimate[J, K])
    # A copy: the selection must not be able to alter the running scores.
    return scores.copy()


class PACECovariance(DPEstimator):
    """PACE-GGM private covariance estimation under rho-zCDP.

    Parameters
    ----------
    budget : ZCDP, PureDP or GDP
        Total budget; PureDP(eps) counts as eps^2/2-zCDP and GDP(mu) as mu^2/2-zCDP.
        ``NonPrivate()`` returns the exact second moment (reference only).
    bounds : Box or str
        Declared coordinate-wise bound (one value or one per column; ``"box:B"``
        accepted). Required.
    diag_fraction : float in (0, 1), default=0.3
        Share of the budget spent measuring the diagonal (the paper's alpha).
    select_fraction : float in (0, 1), default=0.5
        Share of each round's budget spent on selection (the paper's beta).
    max_rounds : int or None, default=None
        The paper's T; ``None`` means ``d(d-1)``. The per-round budget starts at the
        remainder over ``max_rounds``; annealing may finish sooner.
    entry_sensitivity : {"tight", "paper"}, default="tight"
        ``"paper"`` uses ``2 b^2 / n`` for every entry; ``"tight"`` uses the per-entry
        sensitivities of :mod:`dpggm.mechanisms.sensitivity` (diagonal ``b_j^2 / n``; off-diagonal
        ``2 b_j b_k / n``), which is valid and never larger.
    reconstruction : {"auto", "dual-newton", "ipm-cholesky"}, default="auto"
        Method of :class:`dpggm.solvers.maxent.MaxEntropyReconstructor`
        (``"ipm-cholesky"`` is the paper's reference solver).
    neighbors : {"replace", "add-remove"}, default="replace"
    report_delta : float, default=1e-6
    random_state : None, int, Generator or "secure"
    progress : callable or None
        Called as ``progress(rho_used, rho_total)`` after every round (for progress bars).

    Attributes
    ----------
    covariance_ : ndarray (d, d)
    precision_ : ndarray (d, d) or None
        Inverse of ``covariance_``, exactly zero off the measured pattern; ``None`` when the
        noisy measurements admit no positive-definite completion and the reconstruction
        is singular (common at small budgets).
    adjacency_ : ndarray of bool (d, d)
        The measured off-diagonal pattern: the graph of the Gaussian graphical model.
    measurements_ : dict
        ``entries`` (list of (j, k), j >= k), ``values`` and ``precisions`` (the
        precision-weighted measurement and its combined precision per entry).
    n_rounds_ : int
    n_measured_offdiag_ : int
    history_ : list of PACERound
    accountant_ : PrivacyAccountant, StepFilter or None
        The accountant of the fit's two planned steps (the diagonal, the rounds); the
        filter of the step the fit ran as, when it ran as one step of another estimator's
        plan (:meth:`~dpggm.estimators._base.PlannedEstimator.fit_as_step`).
    filter_ : StepFilter or None
        The zCDP filter the rounds ran under (every selection and measurement).
    plan_ : ReleasePlan
    privacy_ : PrivacyGuarantee

    ``X`` may also be the :class:`~dpggm.data.records.SecondMoment` of records already
    clipped to ``bounds`` (the caller vouches for the clipping).

    Privacy
    -------
    The plan (:meth:`plan`) has two steps: the diagonal (``d`` Gaussian measurements) and
    the rounds, one step whose budget is the total of the zCDP filter they run under.
    The diagonal phase spends ``diag_fraction * rho`` (the ``d`` diagonal measurements
    compose), each round spends ``rho_sel`` on an exponential-mechanism selection
    (``eps``: the largest float with ``eps^2/8 <= rho_sel``, checked exactly, so a square
    root rounded up never costs more than is booked) and ``rho_meas`` on one Gaussian
    measurement. All spends go through a :class:`~dpggm.mechanisms.plan.StepFilter` (the
    filter of the rounds' step), so whatever the data-dependent annealing does the total never exceeds
    ``rho``; the last round spends exactly the remainder. The rounds compose
    adaptively (fully adaptive zCDP composition, Whitehouse et al. 2023).
    Reconstruction is post-processing.
    """

    _constraints = {
        "budget": BudgetOf(ZCDP, PureDP, GDP, NonPrivate,
                           why="PACE-GGM runs under zCDP; PureDP and GDP convert soundly"),
        "bounds": BoxBounds("PACECovariance"),
        "diag_fraction": fraction(),
        "select_fraction": fraction(),
        "max_rounds": AnyOf(Interval(1, None, closed="left", integer=True), NONE),
        "entry_sensitivity": Options("tight", "paper"),
        "reconstruction": Options(*RECONSTRUCTION_METHODS),
        "progress": AnyOf(CALLABLE, NONE),
        "noise": NOISE,
    }

    def __init__(
        self,
        *,
        budget: Any = None,
        bounds: Any = None,
        diag_fraction: float = 0.3,
        select_fraction: float = 0.5,
        max_rounds: int | None = None,
        entry_sensitivity: str = "tight",
        reconstruction: str = "auto",
        neighbors: str = "replace",
        report_delta: float = DEFAULT_REPORT_DELTA,
        random_state: Any = None,
        progress: Any = None,
        noise: str = "exact",
    ) -> None:
        self.budget = budget
        self.bounds = bounds
        self.diag_fraction = diag_fraction
        self.select_fraction = select_fraction
        self.max_rounds = max_rounds
        self.entry_sensitivity = entry_sensitivity
        self.reconstruction = reconstruction
        self.neighbors = neighbors
        self.report_delta = report_delta
        self.random_state = random_state
        self.progress = progress
        self.noise = noise

    # ------------------------------------------------------------------ the template

    def _settings(self) -> Settings:
        settings = super()._settings()
        if settings["neighbors"] == "add-remove":
            raise UnsupportedNeighborsError(
                "PACECovariance measures entries of X^T X / n, and n is private under "
                "add/remove neighbours; it has no honest add/remove version here. Use "
                "neighbors='replace'"
            )
        return settings

    def _accounting(self, params: dict[str, Any], requested: Any) -> Any:
        # PureDP(eps) -> eps**2/2, GDP(mu) -> mu**2/2, rounded down: the filter's total.
        return accounting_total(requested, ZCDP)

    @contextlib.contextmanager
    def _records(self, X: Any, y: Any, settings: Settings) -> Iterator[Any]:
        stats = X if isinstance(X, SecondMoment) else clipped_second_moment(
            X, bounds=settings["bounds"])
        yield MomentRecords(stats)

    def _sensitivities(self, settings: Settings, n: int, d: int) -> np.ndarray:
        bounds = settings["bounds"]
        if settings["entry_sensitivity"] == "paper":
            b_max = float(np.max(bounds.vector(d)))
            return np.full((d, d), 2 * b_max**2 / n)
        return second_moment_entry_sensitivity(bounds, n=n, p=d, neighbors="replace")

    def _plan(self, settings: Settings, n: int, d: int) -> ReleasePlan:
        """Two steps: the ``d`` diagonal measurements, then the rounds under a filter whose
        total is what remains (its first round's shares are stated)."""
        requested, total = settings.requested, settings.accounting
        settings["bounds"].check_dimension(d)
        if isinstance(requested, NonPrivate):
            return ReleasePlan("PACECovariance", n, d, requested, requested, (), "replace",
                               {"reason": "non-private reference run"})
        sens = self._sensitivities(settings, n, d)
        max_rounds = settings["max_rounds"] or max(1, d * (d - 1))
        alpha, beta = Fraction(settings["diag_fraction"]), Fraction(settings["select_fraction"])
        _check_pace_budget(requested, sens, settings["bounds"].vector(d), n=n, d=d,
                           noise=settings["noise"], diag_fraction=alpha, select_fraction=beta,
                           max_rounds=max_rounds)
        rho = Fraction(total.rho)
        # Rounded down to a multiple of rho's last binary digit: the d diagonal spends never
        # add up to more than their share, and the rounds get exactly what remains.
        each = dyadic_share(total, alpha / d)
        diagonal = EntrywiseGaussian(np.diag(sens).copy(), each, noise=settings["noise"])
        diagonal_step = diagonal.planned("diagonal")
        rest = budget_from_cost(ZCDP, (rho - exact_cost(diagonal_step.budget, ZCDP)[0],))
        per_round = Fraction(rest.rho) / max_rounds
        rounds = PlannedMeasurement(
            "rounds", "exponential selections and discrete gaussian measurements under a "
            "zCDP filter", rest, repetitions=max_rounds, sensitivity=float(sens.max()),
            sensitivity_rule="per entry of S: b_j^2 / n (diagonal), 2 b_j b_k / n (off it); "
                             "selection score |S_jk - estimate_jk| of the largest",
            noise={"filter_rho": rest.rho, "max_rounds": max_rounds,
                   "first_round_rho_select": float(per_round * beta),
                   "first_round_rho_measure": float(per_round * (1 - beta))})
        return ReleasePlan("PACECovariance", n, d, requested, total, (diagonal_step, rounds),
                           "replace", {"diag_fraction": str(settings["diag_fraction"]),
                                       "select_fraction": str(settings["select_fraction"]),
                                       "entry_sensitivity": settings["entry_sensitivity"]})

    def _run(self, settings: Settings, plan: ReleasePlan, data: Any, run: PlanRun,
             ctx: ReleaseContext) -> Any:
        from dpggm.solvers.maxent import MaxEntropyReconstructor

        S = data.stats.second_moment
        d = S.shape[0]
        if plan.non_private:
            return None
        diagonal = plan.step("diagonal").measurement
        values = np.zeros((d, d))
        precisions = np.zeros((d, d))
        values[np.diag_indices(d)] = run.run(
            "diagonal", lambda planned: planned.measurement.release(np.diag(S), ctx.source))
        precisions[np.diag_indices(d)] = diagonal.sigmas ** -2.0
        reconstructor = MaxEntropyReconstructor(values, precisions,
                                                method=settings["reconstruction"])
        state = _RoundsState(S=S, values=values, precisions=precisions,
                             reconstructor=reconstructor,
                             sens=self._sensitivities(settings, data.n_samples, d))
        run.filtered("rounds", lambda planned, part: self._rounds(settings, planned, part,
                                                                 state, ctx))
        return state

    def _finish(self, X: Any, settings: Settings, plan: ReleasePlan, data: Any, release: Any,
                run: PlanRun, ctx: ReleaseContext) -> None:
        S, n = data.stats.second_moment, data.n_samples
        d = S.shape[0]
        columns = data.stats.columns
        names = X if not isinstance(X, SecondMoment) else None
        if release is None:
            precision = np.linalg.pinv(S)
            self.measurements_ = {"entries": [], "values": [], "precisions": []}
            self.n_rounds_, self.n_measured_offdiag_, self.history_ = 0, 0, []
            self.accountant_ = self.filter_ = None
            self.spent_exact_ = Fraction(0)
            self._set_fitted(
                names, n_samples=n, n_features=d, columns=columns, covariance=S.copy(),
                precision=precision, adjacency=np.abs(precision) > 0,
                privacy=ctx.guarantee(budget=plan.requested,
                                      mechanism="pace-ggm (non-private reference)"),
            )
            return
        values, precisions = release.values, release.precisions
        lower = np.argwhere(np.tril(precisions > 0))
        self.measurements_ = {
            "entries": [(int(a), int(b)) for a, b in lower],
            "values": [float(values[a, b]) for a, b in lower],
            "precisions": [float(precisions[a, b]) for a, b in lower],
        }
        self.n_rounds_ = len(release.history)
        self.n_measured_offdiag_ = int(sum(a != b for a, b in self.measurements_["entries"]))
        self.history_ = release.history
        self.accountant_ = run.accountant
        self.filter_ = release.filter
        self.spent_exact_ = sum(run.accountant.exact_spent, Fraction(0))
        diagonal = plan.step("diagonal")
        privacy = ctx.planned_guarantee(
            plan, run,
            mechanism="pace-ggm (exponential selection + Gaussian measurement, zCDP filter)",
            noise={
                "entry_sensitivity": settings["entry_sensitivity"],
                "selection_sensitivity": float(release.sens.max()),
                "rho_diagonal": float(Fraction(diagonal.budget.rho)),
                "rounds": self.n_rounds_,
                "spent_rho": float(self.spent_exact_),
            },
        )
        reconstructor = release.reconstructor
        self._set_fitted(
            names, n_samples=n, n_features=d, columns=columns, covariance=release.estimate,
            precision=reconstructor.precision, adjacency=precisions > 0, privacy=privacy,
        )
        # None (documented) when the reconstruction is singular, never a previous fit's.
        self.precision_ = reconstructor.precision

    def _rounds(self, settings: Settings, planned: PlannedMeasurement, part: StepFilter,
                state: _RoundsState, ctx: ReleaseContext) -> None:
        """Algorithms 1 and 3 under ``part``, the zCDP filter whose total is the step's
        budget: select an entry (exponential mechanism), measure it (Gaussian), reconstruct,
        anneal; the last round spends exactly what remains."""
        S, values, precisions = state.S, state.values, state.precisions
        reconstructor, sens = state.reconstructor, state.sens
        d = S.shape[0]
        rows, cols = np.tril_indices(d)  # candidates (j, k) with j >= k
        select_sensitivity = float(sens.max())
        accountant = part
        total_rho = float(settings.accounting.rho)
        before = float(Fraction(settings.accounting.rho) - Fraction(planned.budget.rho))
        estimate = reconstructor.covariance
        scores = np.abs(S[rows, cols] - estimate[rows, cols])
        reconstructor.pop_changed()
        beta = settings["select_fraction"]
        per_round = accountant.remaining.rho / planned.noise["max_rounds"]
        rho_sel, rho_meas = beta * per_round, (1 - beta) * per_round
        history: list[PACERound] = []
        final = False
        while not final:
            remaining = accountant.remaining.rho
            if remaining <= 0:
                break
            if remaining < 2 * (rho_sel + rho_meas):
                # Algorithm 3, lines 4-6: spend exactly what is left in this round.
                rho_sel = beta * remaining
                final = True
            err = _selection_scores(S, estimate, scores, reconstructor.pop_changed())
            accountant.spend(ZCDP(rho_sel), mechanism="exponential", score="|S_jk - estimate_jk|")
            selection = ExponentialMechanism.for_budget(ZCDP(rho_sel),
                                                        sensitivity=select_sensitivity)
            pick = selection.release(err, ctx.source)
            j, k = int(rows[pick]), int(cols[pick])
            if final:
                rho_meas = accountant.remaining.rho
            accountant.spend(ZCDP(rho_meas), mechanism="gaussian", entry=(j, k))
            measurement = GaussianMechanism(sensitivity=float(sens[j, k]), size=1,
                                            budget=ZCDP(rho_meas), noise=settings["noise"])
            z = float(measurement.release(np.array([S[j, k]]), ctx.source)[0])
            sigma = measurement.sigma
            lam = precisions[j, k]
            values[j, k] = values[k, j] = (lam * values[j, k] + z / sigma**2) / (lam + sigma**-2)
            precisions[j, k] = precisions[k, j] = lam + sigma**-2
            reconstructor.update(j, k, values[j, k], precisions[j, k])
            previous = estimate[j, k]
            estimate = reconstructor.covariance
            annealed = abs(estimate[j, k] - previous) <= math.sqrt(2 / math.pi) * sigma
            history.append(PACERound((j, k), rho_sel, rho_meas, sigma, annealed and not final))
            if annealed and not final:
                rho_sel, rho_meas = 2 * rho_sel, 4 * rho_meas
            spent = before + float(sum(accountant.exact_spent))
            if self.progress is not None:
                self.progress(spent, total_rho)
            report_progress("PACE rounds: share of the budget spent", spent, total_rho)
        state.history, state.filter, state.estimate = history, accountant, estimate



@dataclass
class _RoundsState:
    """What the rounds read and update: the exact statistic, the precision-weighted
    measurements, the reconstruction; then the history and the filter."""

    S: np.ndarray
    values: np.ndarray
    precisions: np.ndarray
    reconstructor: Any
    sens: np.ndarray
    history: list[PACERound] | None = None
    filter: StepFilter | None = None
    estimate: np.ndarray | None = None
