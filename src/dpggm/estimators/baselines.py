"""The covariance estimators PACE-GGM is compared with (Ferrando et al.,
section "Baselines"), all under rho-zCDP.

* :class:`SSPCovariance` -- sufficient-statistic perturbation: the Gaussian mechanism on
  the whole second moment, with box bounds.
* :class:`DiagonalCovariance` -- the diagonal only, ``rho / p`` per entry, zeros elsewhere.
* :class:`SeparateCovariance` -- SeparateCov of Dong, Liang & Yi (NeurIPS 2022,
  "Differentially private covariance revisited"): eigenvectors from a Gaussian-mechanism
  release, eigenvalues released separately.
* :class:`AdaptiveCovariance` -- their AdaptiveCov: a private clipping radius (noisy trace,
  then a sparse vector over dyadic radii) and a private choice between GaussCov and
  SeparateCov at that radius.

Every estimator plans its steps from public facts (:meth:`plan`) and runs them under one
:class:`~dpggm.privacy.PrivacyAccountant` opened with the total: a step that would
overspend is refused before it runs, and the last step spends exactly what remains. A
``PureDP(epsilon)`` budget is accounted as ``epsilon**2 / 2``-zCDP and ``GDP(mu)`` as
``mu**2 / 2``-zCDP (:func:`~dpggm.privacy.budgets.accounting_total`); ``privacy_`` then
states the zCDP guarantee actually obtained (Gaussian noise is never pure DP).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpggm.data.records import RecordMatrix
from dpggm.data.tables import as_matrix
from dpggm.estimators._base import DPEstimator, Settings
from dpggm.estimators._contract import (
    BOUNDS,
    FLAG,
    NOISE,
    VECTOR,
    AnyOf,
    BoxBounds,
    BudgetOf,
    Interval,
    Options,
    fraction,
)
from dpggm.exceptions import BudgetRangeError, NumericalError, UnsupportedNeighborsError
from dpggm.mechanisms.additive import (
    MAX_RECORDS,
    GaussianMechanism,
    NoisePart,
    NoisyCount,
    check_budget_range,
)
from dpggm.mechanisms.bounds import RowNorm
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.noise import AboveThreshold, above_threshold_min_epsilon
from dpggm.mechanisms.plan import PlannedMeasurement, PlanRun, ReleasePlan
from dpggm.mechanisms.release import (
    EntrywiseGaussian,
    release_planned_second_moment,
    second_moment_plan,
)
from dpggm.mechanisms.sensitivity import gram_entry_sensitivity, second_moment_l2_sensitivity
from dpggm.privacy.budgets import (
    GDP,
    ZCDP,
    Budget,
    NonPrivate,
    PureDP,
    accounting_total,
    budget_from_cost,
    dyadic_share,
    exact_cost,
    scale_budget,
    split_budget,
)
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA
from dpggm.solvers.psd import project_psd

__all__ = [
    "AdaptiveCovariance",
    "DiagonalCovariance",
    "SSPCovariance",
    "SeparateCovariance",
    "as_zcdp_total",
]


def as_zcdp_total(budget: Any, *, owner: str) -> ZCDP | NonPrivate:
    """The zCDP total a baseline may spend for ``budget``
    (:func:`~dpggm.privacy.budgets.accounting_total` into ``ZCDP``: exact conversions,
    rounded down), refused when it is zero.

    Raises
    ------
    IncompatibleBudgetError
        For ``ApproxDP``: an ``(epsilon, delta)`` guarantee implies no zCDP guarantee.
    BudgetRangeError
        If the resulting ``rho`` is not positive (or overflows).
    """
    if isinstance(budget, NonPrivate):
        return budget
    total = accounting_total(budget, ZCDP)
    if not total.rho > 0:
        raise BudgetRangeError(
            f"budget: rho must be > 0 for {owner} (a zero budget allows no release; use "
            f"NonPrivate() for an exact reference run); got rho={total.rho!r} from {budget}",
            parameter="rho", value=total.rho, low=0.0, high=math.inf,
        )
    return total


def _clip_spectrum(matrix: np.ndarray, lower: float, upper: float | None) -> np.ndarray:
    """The release with its eigenvalues clipped to ``[lower, upper]`` (post-processing)."""
    if not np.all(np.isfinite(matrix)):
        raise NumericalError("the released matrix has non-finite entries; cannot clip its spectrum")
    return project_psd((matrix + matrix.T) / 2, min_eigenvalue=lower, max_eigenvalue=upper).estimate


def _symmetric_release(mechanism: GaussianMechanism, S: np.ndarray,
                       ctx: ReleaseContext) -> np.ndarray:
    """Gaussian noise on the upper triangle (with diagonal) of ``S``, mirrored."""
    p = S.shape[0]
    iu = np.triu_indices(p)
    out = np.zeros((p, p))
    out[iu] = mechanism.release(S[iu], ctx.source)
    return out + np.triu(out, 1).T


def _matrix_mechanism(radius: float, *, n: int, p: int, neighbors: str, budget: Budget,
                      noise: str, eigenvalues: bool = False) -> GaussianMechanism:
    """The Gaussian release of a second moment of rows of norm <= ``radius`` (upper
    triangle), or of its eigenvalue vector (``eigenvalues=True``: by the Hoffman-Wielandt
    inequality it moves no more than ``S`` in Frobenius norm)."""
    sensitivity = second_moment_l2_sensitivity(RowNorm(radius), n=n, p=p, neighbors=neighbors)
    return GaussianMechanism(sensitivity=sensitivity, size=p if eigenvalues else p * (p + 1) // 2,
                             budget=budget, noise=noise)


def _gauss_cov(S: np.ndarray, *, radius: float, mechanism: GaussianMechanism,
               ctx: ReleaseContext) -> tuple[np.ndarray, np.ndarray]:
    """GaussCov: symmetric Gaussian noise on ``S`` of rows with norm <= ``radius``, then the
    eigenvalues clipped to ``[0, radius**2]`` (every eigenvalue of such an ``S`` lies there)."""
    noisy = _symmetric_release(mechanism, S, ctx)
    return noisy, _clip_spectrum(noisy, 0.0, radius**2)


def _separate_cov(S: np.ndarray, *, radius: float, vectors: GaussianMechanism,
                  values: GaussianMechanism,
                  ctx: ReleaseContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SeparateCov: eigenvectors of a GaussCov release (``vectors``), and the true
    eigenvalues released with ``values``.

    The eigenvalue vector has the l2 sensitivity of ``S`` in Frobenius norm
    (Hoffman-Wielandt: ``||lambda(A) - lambda(B)||_2 <= ||A - B||_F``): ``sqrt(2) r^2 / n``
    under replace-one (``||x x^T - x' x'^T||_F^2 = |x|^4 + |x'|^4 - 2 (x^T x')^2 <= 2 r^4``).

    Returns the noisy GaussCov matrix, the noisy eigenvalues (descending, before clipping)
    and the estimate.
    """
    noisy = _symmetric_release(vectors, S, ctx)
    _, eigenvectors = np.linalg.eigh((noisy + noisy.T) / 2)
    eigenvectors = eigenvectors[:, ::-1]  # descending, to pair with descending eigenvalues
    true_values = np.linalg.eigvalsh(S)[::-1]
    noisy_values = np.atleast_1d(np.asarray(values.release(true_values, ctx.source), dtype=float))
    clipped = np.clip(noisy_values, 0.0, radius**2)
    estimate = (eigenvectors * clipped) @ eigenvectors.T
    return noisy, noisy_values, (estimate + estimate.T) / 2


def _separate_record(vectors: GaussianMechanism, values: GaussianMechanism) -> dict[str, Any]:
    return {
        **vectors.record("eigenvector_"), "eigenvector_rho": vectors.delivered.rho,
        **values.record("eigenvalue_"), "eigenvalue_rho": values.delivered.rho,
    }


def _whole_matrix_parts(shares: list[Fraction], *, radius: float, n: int, p: int,
                        neighbors: str, noise: str, eigenvalues: bool = False) -> list[NoisePart]:
    """The Gaussian releases of a second moment of rows of norm <= ``radius`` at the given
    shares of the total (for :func:`check_budget_range`; none for float noise)."""
    if noise == "float":
        return []
    sensitivity = second_moment_l2_sensitivity(RowNorm(radius), n=n, p=p, neighbors=neighbors)
    size = p if eigenvalues else p * (p + 1) // 2
    return [NoisePart(share=share, sensitivity=sensitivity, size=size, value_bound=radius**2)
            for share in shares]


def _svt_minimum(requested: Any, radius_fraction: float) -> float:
    """The smallest total (in the requested budget's parameter) at which AdaptiveCov's
    AboveThreshold, run at epsilon with epsilon**2 / 2 = radius_fraction * rho, can draw."""
    epsilon = above_threshold_min_epsilon(sensitivity=1.0, monotonic=True)
    rho = epsilon**2 / 2 / float(radius_fraction)
    if isinstance(requested, ZCDP):
        return rho
    return math.sqrt(2 * rho)  # PureDP epsilon or GDP mu, accounted as x**2 / 2


def _zcdp_budget(owner: str) -> BudgetOf:
    return BudgetOf(ZCDP, PureDP, GDP, NonPrivate,
                    why=f"{owner} runs under rho-zCDP; PureDP and GDP convert soundly")


class _ZCDPCovarianceBase(DPEstimator):
    """Validation, the non-private path and the record of the zCDP baselines (the fit
    template is :class:`~dpggm.estimators._base.PlannedEstimator`)."""

    _owner: ClassVar[str] = ""
    _mechanism: ClassVar[str] = ""
    #: Whether the release can be made honest under add/remove neighbours (n private).
    _supports_add_remove: ClassVar[bool] = False
    _constraints = {"center": AnyOf(Options("none"), VECTOR), "noise": NOISE}

    def _settings(self) -> Settings:
        settings = super()._settings()
        if settings["neighbors"] == "add-remove" and not self._supports_add_remove:
            raise UnsupportedNeighborsError(
                f"{self._owner} normalises by the number of records, which is private under "
                "add/remove neighbours, and has no honest add/remove version here; use "
                "neighbors='replace', or SSPCovariance / DiagonalCovariance / PrivateCovariance"
            )
        return settings

    def _accounting(self, params: dict[str, Any], requested: Budget) -> Budget:
        return as_zcdp_total(requested, owner=self._owner)

    def _centering_note(self, settings: Settings) -> str:
        if isinstance(settings["center"], str):
            return "none: raw second moment X^T X / n (equals the covariance only for centered data)"
        return "public mean subtracted before clipping"

    def _empty_plan(self, settings: Settings, n: int, p: int) -> ReleasePlan:
        return ReleasePlan(self._owner, n, p, settings.requested, settings.requested, (),
                           settings["neighbors"], {"reason": "non-private reference run"})

    def _exact(self, X: Any, settings: Settings, S: np.ndarray, n: int, columns: list[str],
               ctx: ReleaseContext) -> None:
        """The non-private reference: the exact statistic, recorded as such."""
        self.noisy_covariance_ = S.copy()
        self.accountant_ = None
        self._set_fitted(
            X, n_samples=n, n_features=S.shape[0], columns=columns, covariance=S.copy(),
            privacy=ctx.guarantee(
                budget=NonPrivate(),
                mechanism=f"{self._mechanism} (non-private reference: exact statistic)",
                notes={"centering": self._centering_note(settings)},
            ),
        )

    def _record(self, ctx: ReleaseContext, plan: ReleasePlan, run: PlanRun,
                settings: Settings, *, noise: dict[str, Any],
                notes: dict[str, Any] | None = None) -> Any:
        record = {"centering": self._centering_note(settings), **(notes or {})}
        if not isinstance(settings.requested, ZCDP):
            record["conversion"] = (
                "accounted as rho-zCDP (PureDP eps -> eps^2/2, GDP mu -> mu^2/2); the release "
                "is Gaussian, so the guarantee is stated in zCDP"
            )
        return ctx.planned_guarantee(plan, run, mechanism=self._mechanism, noise=noise,
                                     notes=record)


class SSPCovariance(_ZCDPCovarianceBase):
    """Sufficient-statistic perturbation under rho-zCDP with box bounds (the "SSP" baseline
    of PACE-GGM).

    Records are clipped coordinate-wise to the declared box, and the whole second moment
    ``S = X^T X / n`` is released once with the Gaussian mechanism.

    Parameters
    ----------
    budget : ZCDP, PureDP or GDP
        The total; PureDP(eps) is accounted as eps^2/2-zCDP and GDP(mu) as mu^2/2-zCDP.
        ``NonPrivate()`` returns the exact second moment (reference only). Required.
    bounds : Box or str
        Declared coordinate-wise bound ``|x_j| <= b_j`` (``"box:B"`` accepted).
    neighbors : {"replace", "add-remove"}, default="replace"
    center : "none" or array of shape (p,), default="none"
        A public mean subtracted before clipping; ``"none"`` releases the raw second moment.
    psd : bool, default=True
        Clip the negative eigenvalues of the release to zero for ``covariance_``.
    report_delta : float, default=1e-6
        The delta at which ``privacy_`` also states the guarantee as ``(epsilon, delta)``.
    random_state : None, int, numpy.random.Generator or "secure"
    noise : {"exact", "float"}, default="exact"
        Exact integer noise on a grid, or floating-point samplers (exploration only: the
        release is then reported ``validity="invalid"``, Mironov 2012).
    count_fraction : float in (0, 1), default=0.05
        Under ``neighbors="add-remove"``, the share of the budget spent on a noisy count
        (the Gram matrix is released and divided by it).

    Attributes
    ----------
    covariance_ : ndarray of shape (p, p)
    noisy_covariance_ : ndarray of shape (p, p)
        The release before the PSD projection.
    accountant_ : PrivacyAccountant or None
        The filter the release ran under (``None`` for a non-private run).
    n_samples_, n_features_in_, feature_names_in_
    privacy_ : PrivacyGuarantee

    Privacy
    -------
    One Gaussian release of the upper triangle of ``S`` with l2 sensitivity
    ``sqrt(2) ||b||_2^2 / n`` (replace-one) or ``||b||_2^2 / n`` (add/remove)
    (:mod:`dpggm.mechanisms.sensitivity`), so ``sigma = sensitivity / sqrt(2 rho)``:
    rho-zCDP. The projection is post-processing.
    """


    _owner = "SSPCovariance"
    _supports_add_remove = True
    _mechanism = "ssp (gaussian mechanism on the whole second moment)"
    _constraints = {
        "budget": _zcdp_budget("SSPCovariance"),
        "bounds": BoxBounds("SSPCovariance"),
        "psd": FLAG,
        "count_fraction": fraction(),
    }

    def __init__(
        self,
        *,
        budget: Any = None,
        bounds: Any = None,
        neighbors: str = "replace",
        center: Any = "none",
        psd: bool = True,
        report_delta: float = DEFAULT_REPORT_DELTA,
        random_state: Any = None,
        noise: str = "exact",
        count_fraction: float = 0.05,
    ) -> None:
        self.budget = budget
        self.bounds = bounds
        self.neighbors = neighbors
        self.center = center
        self.psd = psd
        self.report_delta = report_delta
        self.random_state = random_state
        self.noise = noise
        self.count_fraction = count_fraction

    def _plan(self, settings: Settings, n: int, p: int) -> ReleasePlan:
        if settings.non_private:
            return self._empty_plan(settings, n, p)
        plan = second_moment_plan(
            n=n, p=p, bounds=settings["bounds"], budget=settings.accounting,
            mechanism="gaussian", neighbors=settings["neighbors"], noise=settings["noise"],
            count_fraction=settings["count_fraction"], estimator=self._owner)
        return replace(plan, requested=settings.requested)

    def _run(self, settings: Settings, plan: ReleasePlan, data: Any, run: PlanRun,
             ctx: ReleaseContext) -> Any:
        stats = data.stats
        if plan.non_private:
            return None
        return release_planned_second_moment(plan, stats.second_moment * stats.n, n=stats.n,
                                             ctx=ctx, run=run)

    def _finish(self, X: Any, settings: Settings, plan: ReleasePlan, data: Any, release: Any,
                run: PlanRun, ctx: ReleaseContext) -> None:
        stats = data.stats
        if release is None:
            self._exact(X, settings, stats.second_moment, stats.n, stats.columns, ctx)
            return
        noisy = release.statistic
        self.noisy_covariance_ = noisy
        self.accountant_ = run.accountant
        noise = {k: v for k, v in release.guarantee.noise.items() if k != "breakdown"}
        notes = {k: v for k, v in release.guarantee.notes.items()
                 if k not in ("caveats", "plan", "spent_exactly_total", "requested_budget",
                              "accounted_as")}
        self._set_fitted(
            X, n_samples=release.n_samples, n_features=stats.n_features, columns=stats.columns,
            covariance=_clip_spectrum(noisy, 0.0, None) if settings["psd"] else noisy.copy(),
            privacy=self._record(ctx, plan, run, settings, noise=noise, notes=notes),
        )


class DiagonalCovariance(_ZCDPCovarianceBase):
    """The diagonal-only baseline of PACE-GGM: each diagonal entry measured separately with
    ``rho / p``, off-diagonal entries set to zero, negative variances clipped to zero (the
    PSD projection of a diagonal matrix).

    Parameters
    ----------
    budget : ZCDP, PureDP or GDP
        The total (PureDP and GDP converted as for :class:`SSPCovariance`);
        ``NonPrivate()`` returns the exact diagonal. Required.
    bounds : Box or str
        Declared coordinate-wise bound ``|x_j| <= b_j``.
    neighbors : {"replace", "add-remove"}, default="replace"
    center : "none" or array of shape (p,), default="none"
    report_delta : float, default=1e-6
    random_state : None, int, numpy.random.Generator or "secure"
    noise : {"exact", "float"}, default="exact"
        Exact integer noise on a grid, or floating-point samplers (exploration only: the
        release is then reported ``validity="invalid"``, Mironov 2012).
    count_fraction : float in (0, 1), default=0.05
        Under ``neighbors="add-remove"``, the share of the budget spent on a noisy count
        (the Gram matrix is released and divided by it).

    Attributes
    ----------
    covariance_ : ndarray of shape (p, p)
        ``diag(max(y_jj, 0))``.
    noisy_covariance_ : ndarray of shape (p, p)
        ``diag(y_jj)``, the released entries.
    accountant_ : PrivacyAccountant or None
    n_samples_, n_features_in_, feature_names_in_
    privacy_ : PrivacyGuarantee

    Privacy
    -------
    Entry ``S_jj`` has sensitivity ``b_j^2 / n`` under both neighbour relations
    (``x_j^2`` lies in ``[0, b_j^2]``) and gets ``sigma_j = (b_j^2 / n) / sqrt(2 rho / p)``.
    The ``p`` releases compose to rho-zCDP; the last one spends exactly the remainder, so
    the float rounding of ``rho / p`` never overspends.
    """


    _owner = "DiagonalCovariance"
    _supports_add_remove = True
    _mechanism = "diagonal only (gaussian mechanism per diagonal entry)"
    _constraints = {
        "budget": _zcdp_budget("DiagonalCovariance"),
        "bounds": BoxBounds("DiagonalCovariance"),
        "count_fraction": fraction(),
    }

    def __init__(
        self,
        *,
        budget: Any = None,
        bounds: Any = None,
        neighbors: str = "replace",
        center: Any = "none",
        report_delta: float = DEFAULT_REPORT_DELTA,
        random_state: Any = None,
        noise: str = "exact",
        count_fraction: float = 0.05,
    ) -> None:
        self.budget = budget
        self.bounds = bounds
        self.neighbors = neighbors
        self.center = center
        self.report_delta = report_delta
        self.random_state = random_state
        self.noise = noise
        self.count_fraction = count_fraction

    def _plan(self, settings: Settings, n: int, p: int) -> ReleasePlan:
        """The noisy count (add/remove), then the ``p`` diagonal entries, each its own
        query with ``1/p`` of the rest (the last with exactly what remains)."""
        if settings.non_private:
            return self._empty_plan(settings, n, p)
        bounds, neighbors, noise = settings["bounds"], settings["neighbors"], settings["noise"]
        bounds.check_dimension(p)
        add_remove = neighbors == "add-remove"
        # Under add/remove the diagonal of the Gram matrix is released with sensitivities
        # free of n, and divided by a noisy count afterwards.
        sensitivity = np.diag(gram_entry_sensitivity(bounds, p=p, neighbors=neighbors))
        if not add_remove:
            sensitivity = np.nextafter(sensitivity / n, np.inf)
        self._check_range(settings, n, p)
        steps: list[PlannedMeasurement] = []
        rest = settings.accounting
        if add_remove:
            count_budget, rest = split_budget(rest, settings["count_fraction"])
            steps.append(NoisyCount(count_budget, noise=noise).planned("count"))
        per_entry = dyadic_share(rest, Fraction(1, p))
        last = budget_from_cost(ZCDP, (exact_cost(rest, ZCDP)[0]
                                       - (p - 1) * exact_cost(per_entry, ZCDP)[0],))
        diagonal = EntrywiseGaussian(sensitivity, [per_entry] * (p - 1) + [last], noise=noise)
        steps.append(diagonal.planned("diagonal"))
        return ReleasePlan(self._owner, n, p, settings.requested, settings.accounting,
                           tuple(steps), neighbors, {})

    def _check_range(self, settings: Settings, n: int, p: int) -> None:
        """Before any draw: the count and every diagonal entry must be drawable."""
        if settings["noise"] == "float":
            check_budget_range(settings.requested, [], release="DiagonalCovariance")
            return
        bounds = settings["bounds"]
        add_remove = settings["neighbors"] == "add-remove"
        sensitivity = np.diag(gram_entry_sensitivity(bounds, p=p, neighbors=settings["neighbors"]))
        count_share = Fraction(settings["count_fraction"]) if add_remove else Fraction(0)
        scale = 1 if add_remove else n
        records = MAX_RECORDS if add_remove else 1  # n is private under add/remove
        box = bounds.vector(p)
        parts = [NoisePart(share=(1 - count_share) / p, sensitivity=float(s) / scale,
                           size=1, value_bound=float(np.max(box)) ** 2 * records)
                 for s in {float(sensitivity.min()), float(sensitivity.max())}]
        if add_remove:
            parts.append(NoisePart(share=count_share, sensitivity=1.0, size=1,
                                   value_bound=float(MAX_RECORDS)))
        check_budget_range(settings.requested, parts, release=f"DiagonalCovariance of {p} columns")

    def _run(self, settings: Settings, plan: ReleasePlan, data: Any, run: PlanRun,
             ctx: ReleaseContext) -> Any:
        stats = data.stats
        if plan.non_private:
            return None
        diagonal = np.diag(stats.second_moment).copy()
        divisor = 1.0
        count = float(stats.n)
        if settings["neighbors"] == "add-remove":
            count = run.run("count", lambda s: s.measurement.release(stats.n, ctx.source))
            divisor = max(count, 1.0)
            diagonal = diagonal * stats.n
        released = run.run("diagonal", lambda s: s.measurement.release(diagonal, ctx.source))
        return released / divisor, count

    def _finish(self, X: Any, settings: Settings, plan: ReleasePlan, data: Any, release: Any,
                run: PlanRun, ctx: ReleaseContext) -> None:
        stats = data.stats
        if release is None:
            S = stats.second_moment
            self._exact(X, settings, np.diag(np.diag(S)), stats.n, stats.columns, ctx)
            return
        released, count = release
        diagonal = plan.step("diagonal").measurement
        noise: dict[str, Any] = {}
        if "count" in {s.step for s in plan.steps}:
            noise.update(plan.step("count").measurement.record("count_"))
        noise.update(
            diagonal_sigma=diagonal.sigmas.tolist(),
            diagonal_sensitivity=diagonal.sensitivities.tolist(),
            rho_per_entry=diagonal.budgets[0].rho,
        )
        if settings["noise"] == "exact":
            noise["diagonal_grid"] = diagonal.grids
        self.noisy_covariance_ = np.diag(released)
        self.accountant_ = run.accountant
        self._set_fitted(
            X, n_samples=max(int(round(count)), 1), n_features=stats.n_features,
            columns=stats.columns, covariance=np.diag(np.maximum(released, 0.0)),
            privacy=self._record(ctx, plan, run, settings, noise=noise),
        )


class SeparateCovariance(_ZCDPCovarianceBase):
    """SeparateCov (Dong, Liang & Yi, NeurIPS 2022): eigenvectors and eigenvalues of the
    second moment released separately under rho-zCDP.

    The eigenvectors are those of a Gaussian-mechanism release of ``S`` (GaussCov) with
    ``eigenvector_fraction * rho``; the true eigenvalues of ``S`` get independent Gaussian
    noise with the rest, are clipped to ``[0, r^2]`` and paired in decreasing order with the
    noisy eigenvectors. ``r`` is the row-norm bound (``||b||_2`` for a box).

    Parameters
    ----------
    budget : ZCDP, PureDP or GDP
        The total (PureDP and GDP converted as for :class:`SSPCovariance`);
        ``NonPrivate()`` returns the exact second moment. Required.
    bounds : RowNorm, Box or str
        Declared bound; records are clipped to it.
    neighbors : "replace", default="replace"
        Add/remove is refused (the release is normalised by the private count).
    center : "none" or array of shape (p,), default="none"
    eigenvector_fraction : float in (0, 1), default=0.5
        Share of ``rho`` spent on the eigenvectors (the paper uses one half).
    report_delta : float, default=1e-6
    random_state : None, int, numpy.random.Generator or "secure"
    noise : {"exact", "float"}, default="exact"

    Attributes
    ----------
    covariance_ : ndarray of shape (p, p)
    noisy_covariance_ : ndarray of shape (p, p)
        The GaussCov release the eigenvectors were taken from.
    noisy_eigenvalues_ : ndarray of shape (p,)
        The released eigenvalues (decreasing order of the true ones), before clipping.
    accountant_ : PrivacyAccountant or None
    n_samples_, n_features_in_, feature_names_in_
    privacy_ : PrivacyGuarantee

    Privacy
    -------
    Two Gaussian releases with the same l2 sensitivity, ``sqrt(2) r^2 / n`` (replace-one) or
    ``r^2 / n`` (add/remove): the upper triangle of ``S`` and its eigenvalue vector (by the
    Hoffman-Wielandt inequality the eigenvalues move no more than ``S`` in Frobenius norm).
    With ``rho / 2`` each the eigenvalue noise is ``N(0, sensitivity^2 / rho)``. Together
    rho-zCDP; the rest is post-processing.
    """


    _owner = "SeparateCovariance"
    _mechanism = "separatecov (Dong, Liang & Yi 2022)"
    _constraints = {
        "budget": _zcdp_budget("SeparateCovariance"),
        "eigenvector_fraction": fraction(),
    }

    def __init__(
        self,
        *,
        budget: Any = None,
        bounds: Any = None,
        neighbors: str = "replace",
        center: Any = "none",
        eigenvector_fraction: float = 0.5,
        report_delta: float = DEFAULT_REPORT_DELTA,
        random_state: Any = None,
        noise: str = "exact",
    ) -> None:
        self.budget = budget
        self.bounds = bounds
        self.neighbors = neighbors
        self.center = center
        self.eigenvector_fraction = eigenvector_fraction
        self.report_delta = report_delta
        self.random_state = random_state
        self.noise = noise

    def _plan(self, settings: Settings, n: int, p: int) -> ReleasePlan:
        """The eigenvector release (a share of the total), then the eigenvalues (the rest)."""
        if settings.non_private:
            return self._empty_plan(settings, n, p)
        radius = settings["bounds"].row_norm(p)
        share = Fraction(settings["eigenvector_fraction"])
        neighbors, noise = settings["neighbors"], settings["noise"]
        check_budget_range(
            settings.requested,
            _whole_matrix_parts([share], radius=radius, n=n, p=p, neighbors=neighbors,
                                noise=noise)
            + _whole_matrix_parts([1 - share], radius=radius, n=n, p=p, neighbors=neighbors,
                                  noise=noise, eigenvalues=True),
            release=f"SeparateCovariance of {p} columns from n = {n} rows",
        )
        total = settings.accounting
        vector_budget = scale_budget(total, share)
        value_budget = budget_from_cost(ZCDP, (exact_cost(total, ZCDP)[0]
                                               - exact_cost(vector_budget, ZCDP)[0],))
        vectors = _matrix_mechanism(radius, n=n, p=p, neighbors=neighbors,
                                    budget=vector_budget, noise=noise)
        values = _matrix_mechanism(radius, n=n, p=p, neighbors=neighbors, budget=value_budget,
                                   noise=noise, eigenvalues=True)
        return ReleasePlan(self._owner, n, p, settings.requested, total,
                           (vectors.planned("eigenvectors"), values.planned("eigenvalues")),
                           neighbors, {"radius": radius})

    def _run(self, settings: Settings, plan: ReleasePlan, data: Any, run: PlanRun,
             ctx: ReleaseContext) -> Any:
        if plan.non_private:
            return None
        S = data.stats.second_moment
        radius = plan.notes["radius"]
        vectors, values = plan.step("eigenvectors"), plan.step("eigenvalues")
        # The two steps are one computation (the eigenvalues pair with the eigenvectors):
        # both are checked first and booked in order.
        run.accountant.check(vectors.budget)
        outcome = _separate_cov(S, radius=radius, vectors=vectors.measurement,
                                values=values.measurement, ctx=ctx)
        run.book(vectors)
        run.book(values)
        return outcome

    def _finish(self, X: Any, settings: Settings, plan: ReleasePlan, data: Any, release: Any,
                run: PlanRun, ctx: ReleaseContext) -> None:
        stats = data.stats
        if release is None:
            self._exact(X, settings, stats.second_moment, stats.n, stats.columns, ctx)
            self.noisy_eigenvalues_ = np.linalg.eigvalsh(stats.second_moment)[::-1].copy()
            return
        noisy, values, estimate = release
        self.noisy_covariance_ = noisy
        self.noisy_eigenvalues_ = values
        self.accountant_ = run.accountant
        noise = {**_separate_record(plan.step("eigenvectors").measurement,
                                    plan.step("eigenvalues").measurement),
                 "radius": plan.notes["radius"]}
        self._set_fitted(
            X, n_samples=stats.n, n_features=stats.n_features, columns=stats.columns,
            covariance=estimate, privacy=self._record(ctx, plan, run, settings, noise=noise),
        )


class AdaptiveCovariance(_ZCDPCovarianceBase):
    """AdaptiveCov (Dong, Liang & Yi, NeurIPS 2022) under rho-zCDP: a privately chosen
    clipping radius, then GaussCov or SeparateCov at that radius, whichever has the smaller
    predicted error.

    1. *Noisy trace* (``trace_fraction * rho``): ``t = tr(S) + N(0, s^2)``, shifted up by
       ``s sqrt(2 ln(4 / beta))`` so that it bounds ``tr(S)`` with probability
       ``1 - beta / 4``, and clamped to ``[0, r^2]``.
    2. *Radius* (``radius_fraction * rho``, as ``epsilon = sqrt(2 rho_radius)``-DP): a
       sparse vector (AboveThreshold, threshold 0) over the dyadic radii ``tau_k = r 2^{-k}``,
       ``k = 0, ..., n_radii - 1``, stops at the first ``k`` where the clipping bias
       ``sum_i (|x_i|^2 - tau_k^2)_+`` exceeds ``n`` times the predicted noise error
       ``min(E_gauss(tau_k), E_separate(tau_k))``; the radius is the one before it
       (``r`` when ``k = 0``; the smallest when none does).
    3. *Choice and release* (the rest): rows rescaled to the radius ``tau``; GaussCov if
       ``E_separate(tau) >= E_gauss(tau)``, otherwise SeparateCov with half of the rest for
       the eigenvectors. Eigenvalues are clipped to ``[0, tau^2]``.

    The predicted errors are high-probability Frobenius bounds computed from public
    quantities and the noisy trace only: ``E_gauss = sigma_g (d + 2 sqrt(ln(2/beta)))`` for
    the Wigner noise of GaussCov, and ``E_separate = c sqrt(t' ||E||_2) + sigma_v (sqrt(d)
    + sqrt(2 ln(2/beta)))`` with ``||E||_2 <= sigma_e (2 sqrt(d) + 2 sqrt(ln(2/beta)))``
    the spectral norm of the eigenvector release and ``t' = min(t, tau^2)``. The worst-case
    constant of Dong et al.'s eigenvector bound is 2; like the authors' experiments, the
    comparison uses ``c = 2 / 6`` (:attr:`EIGENVECTOR_BOUND_SCALE`) because the worst case
    is far from typical. These choices affect accuracy only, never privacy.

    Parameters
    ----------
    budget : ZCDP, PureDP or GDP
        The total (PureDP and GDP converted as for :class:`SSPCovariance`);
        ``NonPrivate()`` returns the exact second moment. Required.
    bounds : RowNorm, Box or str
        Declared bound; ``r`` is its row norm (``||b||_2`` for a box).
    neighbors : "replace", default="replace"
        Add/remove is refused (the release is normalised by the private count).
    center : "none" or array of shape (p,), default="none"
    trace_fraction : float in (0, 1), default=0.125
        Share of ``rho`` for the noisy trace (Dong et al. use one eighth).
    radius_fraction : float in (0, 1), default=0.125
        Share of ``rho`` for the sparse vector (one eighth).
    failure_probability : float in (0, 1), default=0.1
        The ``beta`` of the error bounds above.
    n_radii : int, default=32
        Number of dyadic radii the sparse vector scans.
    report_delta : float, default=1e-6
    random_state : None, int, numpy.random.Generator or "secure"
    noise : {"exact", "float"}, default="exact"

    Attributes
    ----------
    covariance_ : ndarray of shape (p, p)
    noisy_covariance_ : ndarray of shape (p, p)
        The Gaussian release of the chosen method (GaussCov's matrix, or the one
        SeparateCov took its eigenvectors from).
    radius_ : float
        The chosen clipping radius.
    method_ : {"gauss", "separate", "exact"}
        The chosen release (``"exact"`` for a non-private run).
    noisy_trace_ : float
        The released trace (before the upward shift and the clamp).
    accountant_ : PrivacyAccountant or None
    n_samples_, n_features_in_, feature_names_in_
    privacy_ : PrivacyGuarantee

    Privacy
    -------
    The trace has sensitivity ``r^2 / n`` (replace-one and add/remove). Each sparse-vector
    query ``(sum_i (|x_i|^2 - tau^2)_+ - n E(tau)) / r^2`` has sensitivity 1, because one
    record contributes a term in ``[0, r^2]`` and ``E`` depends only on public values and
    the already released trace. The queries are also monotonic: replacing one record moves
    every term ``(|x|^2 - tau^2)_+`` in the direction of the change of ``|x|`` (adding one
    raises them all), so AboveThreshold with ``Laplace(2 / epsilon)`` on the threshold and
    on every query is ``epsilon``-DP for any number of queries (Lyu, Su & Li 2017,
    section 4.2), i.e. ``epsilon^2 / 2``-zCDP. The final release at radius ``tau`` has the
    sensitivities of GaussCov / SeparateCov with ``r`` replaced by ``tau``. The trace and
    the sparse vector get dyadic shares of ``rho`` (``trace_fraction`` and
    ``radius_fraction`` of it, rounded down to multiples of its last binary digit); the
    sparse vector runs at the largest ``epsilon`` with ``epsilon^2 / 2`` at most its share
    and is booked at the share. The three steps compose adaptively to rho-zCDP under the
    accountant; the final step spends exactly the remainder, so they add up to ``rho``
    exactly.
    """


    EIGENVECTOR_BOUND_SCALE: ClassVar[float] = 2.0 / 6.0

    _owner = "AdaptiveCovariance"
    _mechanism = "adaptivecov (Dong, Liang & Yi 2022)"
    _constraints = {
        "budget": _zcdp_budget("AdaptiveCovariance"),
        "bounds": BOUNDS,
        "trace_fraction": fraction(),
        "radius_fraction": fraction(),
        "failure_probability": fraction(),
        "n_radii": Interval(1, 1000, closed="both", integer=True),
    }

    def __init__(
        self,
        *,
        budget: Any = None,
        bounds: Any = None,
        neighbors: str = "replace",
        center: Any = "none",
        trace_fraction: float = 0.125,
        radius_fraction: float = 0.125,
        failure_probability: float = 0.1,
        n_radii: int = 32,
        report_delta: float = DEFAULT_REPORT_DELTA,
        random_state: Any = None,
        noise: str = "exact",
    ) -> None:
        self.budget = budget
        self.bounds = bounds
        self.neighbors = neighbors
        self.center = center
        self.trace_fraction = trace_fraction
        self.radius_fraction = radius_fraction
        self.failure_probability = failure_probability
        self.n_radii = n_radii
        self.report_delta = report_delta
        self.random_state = random_state
        self.noise = noise

    def _settings(self) -> Settings:
        settings = super()._settings()
        if not settings["trace_fraction"] + settings["radius_fraction"] < 1:
            raise ValueError(
                "trace_fraction + radius_fraction must be < 1 (the rest pays for the release); "
                f"got {settings['trace_fraction']!r} + {settings['radius_fraction']!r}"
            )
        return settings

    @classmethod
    def predicted_errors(
        cls,
        radius: float,
        *,
        n: int,
        p: int,
        rho: float,
        trace_bound: float,
        neighbors: str,
        failure_probability: float,
    ) -> tuple[float, float]:
        """Predicted Frobenius errors ``(E_gauss, E_separate)`` of GaussCov and SeparateCov
        at ``radius`` with ``rho``, from public quantities and a (private, already
        released) bound on the trace.

        Post-processing only: consumes no budget.
        """
        beta = failure_probability
        sensitivity = (math.sqrt(2.0) if neighbors == "replace" else 1.0) * radius**2 / n
        gauss_sigma = sensitivity / math.sqrt(2 * rho)
        half_sigma = sensitivity / math.sqrt(rho)  # each half of SeparateCov gets rho / 2
        log_term = math.log(2.0 / beta)
        frobenius = p + 2 * math.sqrt(log_term)
        spectral = 2 * math.sqrt(p) + 2 * math.sqrt(log_term)
        vector_norm = math.sqrt(p) + math.sqrt(2 * log_term)
        gauss = gauss_sigma * frobenius
        trace = min(trace_bound, radius**2)
        separate = (
            cls.EIGENVECTOR_BOUND_SCALE * math.sqrt(trace * half_sigma * spectral)
            + half_sigma * vector_norm
        )
        return gauss, separate

    @contextlib.contextmanager
    def _records(self, X: Any, y: Any, settings: Settings) -> Iterator[Any]:
        """The clipped rows themselves (the radius step reads their norms)."""
        values, columns = as_matrix(X)
        n, p = values.shape
        settings["bounds"].check_dimension(p)
        center = settings["center"]
        if not isinstance(center, str):
            center = np.asarray(center, dtype=float)
            if center.shape != (p,):
                raise ValueError(
                    f"center must be a finite vector of length {p} (one per column); "
                    f"got shape {center.shape}"
                )
            values = values - center
        rows, _ = settings["bounds"].clip(values)
        yield RecordMatrix(rows, columns)

    def _plan(self, settings: Settings, n: int, p: int) -> ReleasePlan:
        """The noisy trace, the sparse vector over the radii, then the release at the chosen
        radius with what remains (GaussCov, or SeparateCov with half for the
        eigenvectors): its noise follows the released radius, its budget is fixed."""
        if settings.non_private:
            return self._empty_plan(settings, n, p)
        r = settings["bounds"].row_norm(p)
        trace_fraction = Fraction(settings["trace_fraction"])
        radius_fraction = Fraction(settings["radius_fraction"])
        noise = settings["noise"]
        # Before any draw. The final release's radius is chosen privately, but its noise
        # in grid steps does not depend on it (sensitivity and values both scale as r^2).
        final_share = 1 - trace_fraction - radius_fraction
        check_budget_range(
            settings.requested,
            ([] if noise == "float" else [NoisePart(
                share=trace_fraction, sensitivity=math.nextafter(r**2 / n, math.inf),
                size=1, value_bound=r**2)])
            + _whole_matrix_parts([final_share, final_share / 2], radius=r, n=n, p=p,
                                  neighbors=settings["neighbors"], noise=noise)
            + _whole_matrix_parts([final_share / 2], radius=r, n=n, p=p,
                                  neighbors=settings["neighbors"], noise=noise, eigenvalues=True),
            release=f"AdaptiveCovariance of {p} columns from n = {n} rows",
            minimum=_svt_minimum(settings.requested, settings["radius_fraction"]),
        )
        total = settings.accounting
        rho = Fraction(total.rho)
        # Dyadic shares of the total (multiples of its last binary digit), so that the
        # release can take exactly what remains and the steps add up to the total.
        trace = GaussianMechanism(sensitivity=math.nextafter(r**2 / n, math.inf), size=1,
                                  budget=dyadic_share(total, trace_fraction), noise=noise)
        radius_budget = dyadic_share(total, radius_fraction)
        # The sparse vector runs at the largest epsilon with epsilon**2 / 2 <= its share
        # (exactly), so booking the share never understates what it delivers.
        radius = AboveThreshold.for_budget(radius_budget, sensitivity=1.0, monotonic=True)
        trace_step = trace.planned("trace")
        radius_step = replace(radius.planned("radius"), budget=radius_budget)
        spent = sum((exact_cost(s.budget, ZCDP)[0] for s in (trace_step, radius_step)),
                    Fraction(0))
        release = budget_from_cost(ZCDP, (rho - spent,))
        release_step = PlannedMeasurement(
            "release", "discrete gaussian at the released radius: GaussCov, or SeparateCov "
            "(eigenvectors and eigenvalues, half each)" if noise == "exact" else
            "gaussian at the released radius: GaussCov or SeparateCov", release,
            sensitivity_rule="sqrt(2) tau^2 / n (replace-one) or tau^2 / n (add/remove), "
                             "tau the released radius",
            noise={"noise_multiplier": 1.0 / math.sqrt(2 * release.rho)})
        return ReleasePlan(self._owner, n, p, settings.requested, total,
                           (trace_step, radius_step, release_step), settings["neighbors"],
                           {"declared_radius": r, "radii": int(settings["n_radii"])})

    def _run(self, settings: Settings, plan: ReleasePlan, data: Any, run: PlanRun,
             ctx: ReleaseContext) -> Any:
        rows = data.values
        n, p = rows.shape
        if plan.non_private:
            return None
        r = plan.notes["declared_radius"]
        beta = settings["failure_probability"]
        # Rounding can put a clipped row a hair above r; the sensitivity argument needs <= r^2.
        squared_norms = np.minimum(np.einsum("ij,ij->i", rows, rows), r**2)
        noisy_trace = float(run.run("trace", lambda s: s.measurement.release(
            np.array([squared_norms.sum() / n]), ctx.source)[0]))
        trace_sigma = plan.step("trace").measurement.sigma
        trace_bound = noisy_trace + trace_sigma * math.sqrt(2 * math.log(4.0 / beta))
        trace_bound = min(max(trace_bound, 0.0), r**2)
        release_step = plan.step("release")
        release_rho = release_step.budget.rho
        n_radii = int(settings["n_radii"])
        radii = r * 2.0 ** -np.arange(n_radii)
        queries = np.empty(n_radii)
        for k, tau in enumerate(radii):
            bias = float(np.maximum(squared_norms - tau**2, 0.0).sum())
            gauss, separate = self.predicted_errors(
                float(tau), n=n, p=p, rho=release_rho, trace_bound=trace_bound,
                neighbors=settings["neighbors"], failure_probability=beta)
            queries[k] = (bias - n * min(gauss, separate)) / r**2
        stop = run.run("radius", lambda s: s.measurement.release(queries, 0.0, ctx.source))
        index = max(min(stop, n_radii) - 1, 0)
        # The radius r itself needs no rescaling; a power of two times r is recomputed
        # exactly rather than taken from the float array.
        radius = r if index == 0 else r * 2.0**-index
        gauss, separate = self.predicted_errors(
            radius, n=n, p=p, rho=release_rho, trace_bound=trace_bound,
            neighbors=settings["neighbors"], failure_probability=beta)
        clipped_rows = rows if index == 0 else RowNorm(radius).clip(rows)[0]
        S_radius = clipped_rows.T @ clipped_rows / n
        S_radius = (S_radius + S_radius.T) / 2
        method = "gauss" if separate >= gauss else "separate"
        outcome = run.run("release", lambda s: self._release_at(
            S_radius, n=n, radius=radius, method=method, budget=s.budget, settings=settings,
            ctx=ctx), radius=radius, method=method)
        return _AdaptiveRelease(noisy_trace=noisy_trace, trace_sigma=trace_sigma,
                                radius=radius, method=method, gauss=gauss, separate=separate,
                                outcome=outcome)

    def _release_at(self, S: np.ndarray, *, n: int, radius: float, method: str, budget: ZCDP,
                    settings: Settings, ctx: ReleaseContext) -> Any:
        """GaussCov with all of ``budget``, or SeparateCov with half of it for the
        eigenvectors and the rest for the eigenvalues, at ``radius``."""
        p = S.shape[0]
        options = dict(n=n, p=p, neighbors=settings["neighbors"], noise=settings["noise"])
        if method == "gauss":
            mechanism = _matrix_mechanism(radius, budget=budget, **options)
            noisy, estimate = _gauss_cov(S, radius=radius, mechanism=mechanism, ctx=ctx)
            return noisy, estimate, {**mechanism.record("gauss_"), "gauss_rho": budget.rho}
        half = dyadic_share(budget, Fraction(1, 2))
        rest = budget_from_cost(ZCDP, (exact_cost(budget, ZCDP)[0] - exact_cost(half, ZCDP)[0],))
        vectors = _matrix_mechanism(radius, budget=half, **options)
        values = _matrix_mechanism(radius, budget=rest, eigenvalues=True, **options)
        noisy, _, estimate = _separate_cov(S, radius=radius, vectors=vectors, values=values,
                                           ctx=ctx)
        return noisy, estimate, _separate_record(vectors, values)

    def _finish(self, X: Any, settings: Settings, plan: ReleasePlan, data: Any, release: Any,
                run: PlanRun, ctx: ReleaseContext) -> None:
        rows = data.values
        n, p = rows.shape
        if release is None:
            S = rows.T @ rows / n
            self._exact(X, settings, (S + S.T) / 2, n, data.columns, ctx)
            self.radius_ = settings["bounds"].row_norm(p)
            self.method_ = "exact"
            self.noisy_trace_ = float(np.trace(S))
            return
        noisy, estimate, release_noise = release.outcome
        radius_step = plan.step("radius").measurement
        self.noisy_covariance_ = noisy
        self.radius_ = release.radius
        self.method_ = release.method
        self.noisy_trace_ = release.noisy_trace
        self.accountant_ = run.accountant
        trace_step = plan.step("trace")
        noise = {
            **release_noise,
            "trace_sigma": release.trace_sigma,
            "trace_sensitivity": trace_step.sensitivity,
            "trace_rho": trace_step.budget.rho,
            "svt_epsilon": radius_step.epsilon,
            "svt_threshold_laplace_scale": 2.0 / radius_step.epsilon,
            "svt_query_laplace_scale": 2.0 / radius_step.epsilon,
            "radius": release.radius,
            "declared_radius": plan.notes["declared_radius"],
            "method": release.method,
        }
        notes = {
            "predicted_errors_at_radius": {"gauss": release.gauss, "separate": release.separate},
            "radii_scanned": plan.notes["radii"],
        }
        self._set_fitted(
            X, n_samples=n, n_features=p, columns=data.columns, covariance=estimate,
            privacy=self._record(ctx, plan, run, settings, noise=noise, notes=notes),
        )



@dataclass
class _AdaptiveRelease:
    noisy_trace: float
    trace_sigma: float
    radius: float
    method: str
    gauss: float
    separate: float
    outcome: Any
