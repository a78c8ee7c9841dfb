"""The covariance estimators PACE-GGM is compared with (SPEC section 3, seed 003,
"Baselines"), all under rho-zCDP.

* :class:`SSPCovariance` -- sufficient-statistic perturbation: the Gaussian mechanism on
  the whole second moment, with box bounds.
* :class:`DiagonalCovariance` -- the diagonal only, ``rho / p`` per entry, zeros elsewhere.
* :class:`SeparateCovariance` -- SeparateCov of Dong, Liang & Yi (NeurIPS 2022,
  "Differentially private covariance revisited"): eigenvectors from a Gaussian-mechanism
  release, eigenvalues released separately.
* :class:`AdaptiveCovariance` -- their AdaptiveCov: a private clipping radius (noisy trace,
  then a sparse vector over dyadic radii) and a private choice between GaussCov and
  SeparateCov at that radius.

Every multi-step release runs under a :class:`~dpggm.privacy.PrivacyAccountant` opened with
the total, used as a filter: a step that would overspend is refused before it runs, and the
last step spends exactly what remains. A ``PureDP(epsilon)`` budget is accounted as
``epsilon**2 / 2``-zCDP and ``GDP(mu)`` as ``mu**2 / 2``-zCDP; ``privacy_`` then states the
zCDP guarantee actually obtained (Gaussian noise is never pure DP).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpggm.estimators._base import DPEstimator, check_budget, make_context
from dpggm.estimators._contract import FLAG, NOISE, VECTOR, AnyOf, Interval, Options, fraction
from dpggm.estimators.data import as_matrix, clipped_second_moment
from dpggm.exceptions import (
    BudgetRangeError,
    IncompatibleBudgetError,
    NumericalError,
    UnsupportedNeighborsError,
)
from dpggm.mechanisms.additive import MAX_RECORDS, NoisePart, check_budget_range
from dpggm.mechanisms.bounds import Bounds, Box, RowNorm
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.noise import above_threshold, above_threshold_min_epsilon
from dpggm.mechanisms.release import release_count, release_second_moment
from dpggm.mechanisms.sensitivity import (
    gram_entry_sensitivity,
    second_moment_l2_sensitivity,
)
from dpggm.privacy.accountant import PrivacyAccountant
from dpggm.privacy.budgets import (
    GDP,
    ZCDP,
    NonPrivate,
    PureDP,
    budget_from_cost,
    compose,
    exact_cost,
    scale_budget,
    split_budget,
)
from dpggm.privacy.calibration import PURE_DP_ZCDP, epsilon_for_zcdp
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA, PrivacyGuarantee
from dpggm.solvers.psd import project_psd

__all__ = [
    "AdaptiveCovariance",
    "DiagonalCovariance",
    "SSPCovariance",
    "SeparateCovariance",
    "as_zcdp_total",
]


def as_zcdp_total(budget: Any, *, owner: str) -> ZCDP | NonPrivate:
    """The zCDP total a baseline may spend for ``budget``.

    ``ZCDP`` is taken as is; ``PureDP(epsilon)`` becomes ``epsilon**2 / 2`` and
    ``GDP(mu)`` becomes ``mu**2 / 2`` (exact conversions, rounded down so that the total
    never exceeds what was declared). ``NonPrivate()`` is passed through.

    Raises
    ------
    IncompatibleBudgetError
        For ``ApproxDP``: an ``(epsilon, delta)`` guarantee implies no zCDP guarantee.
    ValueError
        If the resulting ``rho`` is not positive.
    """
    budget = check_budget(budget)
    if isinstance(budget, NonPrivate):
        return budget
    try:
        cost = exact_cost(budget, ZCDP)
    except IncompatibleBudgetError as exc:
        raise IncompatibleBudgetError(
            f"{owner} runs under rho-zCDP: budget must be ZCDP, or PureDP / GDP (which "
            f"convert soundly); got {budget}. {exc}"
        ) from None
    try:
        total = budget_from_cost(ZCDP, cost, rounding="down")
    except ValueError:
        name, value = ("mu", budget.mu) if isinstance(budget, GDP) else ("epsilon", budget.epsilon)
        raise BudgetRangeError(
            f"budget: {name} must be below 1.8e+154 for {owner}, which accounts in zCDP "
            f"({name}**2/2 exceeds the largest float); got {name}={value!r}",
            parameter=name, value=value,
        ) from None
    if not total.rho > 0:
        raise BudgetRangeError(
            f"budget: rho must be > 0 for {owner} (a zero budget allows no release; use "
            f"NonPrivate() for an exact reference run); got rho={total.rho!r} from {budget}",
            parameter="rho", value=total.rho, low=0.0, high=math.inf,
        )
    return total


def _check_center(center: Any) -> np.ndarray | None:
    """The public centre (already checked against the declared constraint)."""
    if center is None or isinstance(center, str):
        return None
    return np.asarray(center, dtype=float)


def _clip_spectrum(matrix: np.ndarray, lower: float, upper: float | None) -> np.ndarray:
    """The release with its eigenvalues clipped to ``[lower, upper]`` (post-processing)."""
    if not np.all(np.isfinite(matrix)):
        raise NumericalError("the released matrix has non-finite entries; cannot clip its spectrum")
    return project_psd((matrix + matrix.T) / 2, min_eigenvalue=lower, max_eigenvalue=upper).estimate


def _gauss_cov(
    S: np.ndarray,
    *,
    radius: float,
    n: int,
    budget: ZCDP,
    accountant: PrivacyAccountant,
    ctx: ReleaseContext,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """GaussCov: symmetric Gaussian noise on ``S`` of rows with norm <= ``radius``, then the
    eigenvalues clipped to ``[0, radius**2]`` (every eigenvalue of such an ``S`` lies there)."""
    p = S.shape[0]
    sensitivity = second_moment_l2_sensitivity(RowNorm(radius), n=n, p=p, neighbors=ctx.neighbors)
    accountant.spend(budget, mechanism="gaussian (whole second moment)", radius=radius)
    noisy, mechanism = ctx.symmetric_gaussian(S, sensitivity=sensitivity, budget=budget)
    estimate = _clip_spectrum(noisy, 0.0, radius**2)
    noise = {**mechanism.record("gauss_"), "gauss_rho": budget.rho}
    return noisy, estimate, noise


def _separate_cov(
    S: np.ndarray,
    *,
    radius: float,
    n: int,
    eigenvector_budget: ZCDP,
    accountant: PrivacyAccountant,
    ctx: ReleaseContext,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """SeparateCov: eigenvectors of a GaussCov release at ``eigenvector_budget``, and the
    true eigenvalues released with everything the accountant has left.

    The eigenvalue vector has the l2 sensitivity of ``S`` in Frobenius norm
    (Hoffman-Wielandt: ``||lambda(A) - lambda(B)||_2 <= ||A - B||_F``): ``sqrt(2) r^2 / n``
    under replace-one (``||x x^T - x' x'^T||_F^2 = |x|^4 + |x'|^4 - 2 (x^T x')^2 <= 2 r^4``).

    Returns the noisy GaussCov matrix, the noisy eigenvalues (descending, before clipping),
    the estimate, and the noise record.
    """
    p = S.shape[0]
    sensitivity = second_moment_l2_sensitivity(RowNorm(radius), n=n, p=p, neighbors=ctx.neighbors)
    accountant.spend(
        eigenvector_budget,
        mechanism="gaussian (whole second moment, for eigenvectors)",
        radius=radius,
    )
    noisy, vector_mechanism = ctx.symmetric_gaussian(
        S, sensitivity=sensitivity, budget=eigenvector_budget
    )
    _, vectors = np.linalg.eigh((noisy + noisy.T) / 2)
    vectors = vectors[:, ::-1]  # descending, to pair with descending eigenvalues

    value_budget = accountant.remaining
    accountant.spend(value_budget, mechanism="gaussian (eigenvalues)", radius=radius)
    true_values = np.linalg.eigvalsh(S)[::-1]
    noisy_values, value_mechanism = ctx.gaussian(
        true_values, sensitivity=sensitivity, budget=value_budget
    )
    noisy_values = np.atleast_1d(np.asarray(noisy_values, dtype=float))
    clipped = np.clip(noisy_values, 0.0, radius**2)
    estimate = (vectors * clipped) @ vectors.T
    estimate = (estimate + estimate.T) / 2
    noise = {
        **vector_mechanism.record("eigenvector_"),
        "eigenvector_rho": eigenvector_budget.rho,
        **value_mechanism.record("eigenvalue_"),
        "eigenvalue_rho": value_budget.rho,
    }
    return noisy, noisy_values, estimate, noise


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


class _ZCDPCovarianceBase(DPEstimator):
    """Validation, the non-private path, and the guarantee record of the baselines."""

    _owner: ClassVar[str] = ""
    _needs_box: ClassVar[bool] = False
    _mechanism: ClassVar[str] = ""
    #: Whether the release can be made honest under add/remove neighbours (n private).
    _supports_add_remove: ClassVar[bool] = False
    _constraints = {"center": AnyOf(Options("none"), VECTOR), "noise": NOISE}

    def _validate_common(self) -> tuple[ZCDP | NonPrivate, Bounds, np.ndarray | None]:
        params = self._validate_params()
        budget = as_zcdp_total(params["budget"], owner=self._owner)
        bounds = params["bounds"]
        if self._needs_box and not isinstance(bounds, Box):
            raise TypeError(
                f"{self._owner} needs coordinate-wise bounds: bounds must be Box(b) "
                f"(|x_j| <= b_j); got {bounds!r}"
            )
        self._ctx = make_context(self, bounds)
        if self._ctx.neighbors == "add-remove" and not self._supports_add_remove:
            raise UnsupportedNeighborsError(
                f"{self._owner} normalises by the number of records, which is private under "
                "add/remove neighbours, and has no honest add/remove version here; use "
                "neighbors='replace', or SSPCovariance / DiagonalCovariance / PrivateCovariance"
            )
        center = _check_center(self.center)
        return budget, bounds, center

    def _centering_note(self, center: np.ndarray | None) -> str:
        if center is None:
            return "none: raw second moment X^T X / n (equals the covariance only for centred data)"
        return "public mean subtracted before clipping"

    def _fit_exact(self, X: Any, S: np.ndarray, center: np.ndarray | None, *, n: int,
                   columns: list[str]) -> None:
        self.noisy_covariance_ = S.copy()
        self.accountant_ = None
        self._set_fitted(
            X, n_samples=n, n_features=S.shape[0], columns=columns, covariance=S.copy(),
            privacy=self._ctx.guarantee(
                budget=NonPrivate(),
                mechanism=f"{self._mechanism} (non-private reference: exact statistic)",
                notes={"centering": self._centering_note(center)},
            ),
        )

    def _guarantee(
        self,
        accountant: PrivacyAccountant,
        center: np.ndarray | None,
        *,
        noise: dict[str, Any],
        notes: dict[str, Any] | None = None,
        delivered: list[Any] | None = None,
    ) -> PrivacyGuarantee:
        requested = check_budget(self.budget)
        record: dict[str, Any] = {
            "centering": self._centering_note(center),
            "spends": [
                {"mechanism": s.mechanism, "budget": s.budget, **s.details}
                for s in accountant.spends
            ],
        }
        if not isinstance(requested, ZCDP):
            record["requested_budget"] = requested
            record["conversion"] = (
                "accounted as rho-zCDP (PureDP eps -> eps^2/2, GDP mu -> mu^2/2); the release "
                "is Gaussian, so the guarantee is stated in zCDP"
            )
        record.update(notes or {})
        spent = delivered if delivered is not None else [s.budget for s in accountant.spends]
        return self._ctx.guarantee(
            budget=compose(spent), mechanism=self._mechanism, noise=noise, notes=record
        )


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
    ``sqrt(2) ||b||_2^2 / n`` (replace-one) or ``||b||_2^2 / n`` (add/remove) (SPEC
    section 2), so ``sigma = sensitivity / sqrt(2 rho)``: rho-zCDP. The projection is
    post-processing.
    """

    _owner = "SSPCovariance"
    _needs_box = True
    _supports_add_remove = True
    _mechanism = "ssp (gaussian mechanism on the whole second moment)"
    _constraints = {"psd": FLAG, "count_fraction": fraction()}

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

    def fit(self, X: Any, y: Any = None) -> SSPCovariance:
        """Release a private second moment of ``X`` (array, DataFrame or CSV path).

        Returns
        -------
        self
        """
        budget, bounds, center = self._validate_common()
        stats = clipped_second_moment(X, bounds=bounds, center=center)
        n, p = stats.n, stats.n_features
        if isinstance(budget, NonPrivate):
            self._fit_exact(X, stats.second_moment, center, n=n, columns=stats.columns)
            return self
        accountant = PrivacyAccountant(budget)
        accountant.spend(budget, mechanism="gaussian (whole second moment)")
        release = release_second_moment(
            stats.second_moment * n,
            n=n,
            bounds=bounds,
            budget=budget,
            mechanism="gaussian",
            ctx=self._ctx,
            count_fraction=self.count_fraction,
        )
        noisy = release.second_moment
        self.noisy_covariance_ = noisy
        self.accountant_ = accountant
        self._set_fitted(
            X, n_samples=release.count, n_features=p, columns=stats.columns,
            covariance=_clip_spectrum(noisy, 0.0, None) if self.psd else noisy.copy(),
            privacy=self._guarantee(
                accountant, center, noise=dict(release.guarantee.noise),
                notes={k: v for k, v in release.guarantee.notes.items() if k != "caveats"},
                delivered=[release.guarantee.budget],
            ),
        )
        return self


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
    _needs_box = True
    _supports_add_remove = True
    _mechanism = "diagonal only (gaussian mechanism per diagonal entry)"
    _constraints = {"count_fraction": fraction()}

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

    def fit(self, X: Any, y: Any = None) -> DiagonalCovariance:
        """Release the private diagonal of the second moment of ``X``.

        Returns
        -------
        self
        """
        budget, bounds, center = self._validate_common()
        stats = clipped_second_moment(X, bounds=bounds, center=center)
        S, n, p = stats.second_moment, stats.n, stats.n_features
        if isinstance(budget, NonPrivate):
            self._fit_exact(X, np.diag(np.diag(S)), center, n=n, columns=stats.columns)
            return self
        ctx = self._ctx
        accountant = PrivacyAccountant(budget)
        noise: dict[str, Any] = {}
        delivered: list[Any] = []
        # Under add/remove the diagonal of the Gram matrix is released with sensitivities
        # free of n, and divided by a noisy count afterwards.
        divisor = 1.0
        n_samples = n
        diagonal = np.diag(S).copy()
        sensitivity = np.diag(gram_entry_sensitivity(bounds, p=p, neighbors=ctx.neighbors))
        add_remove = ctx.neighbors == "add-remove"
        if ctx.noise != "float":
            # Before any draw: the count and every diagonal entry must be drawable.
            count_share = Fraction(self.count_fraction) if add_remove else Fraction(0)
            scale = 1 if add_remove else n
            records = MAX_RECORDS if add_remove else 1  # n is private under add/remove
            box = bounds.vector(p)
            parts = [NoisePart(share=(1 - count_share) / p, sensitivity=float(s) / scale,
                               size=1, value_bound=float(np.max(box)) ** 2 * records)
                     for s in {float(sensitivity.min()), float(sensitivity.max())}]
            if add_remove:
                parts.append(NoisePart(share=count_share, sensitivity=1.0, size=1,
                                       value_bound=float(MAX_RECORDS)))
            check_budget_range(check_budget(self.budget), parts,
                               release=f"DiagonalCovariance of {p} columns")
        else:
            check_budget_range(check_budget(self.budget), [], release="DiagonalCovariance")
        if ctx.neighbors == "add-remove":
            count_budget, _ = split_budget(budget, self.count_fraction)
            accountant.spend(count_budget, mechanism="noisy count")
            count, count_delivered, count_record = release_count(n, budget=count_budget, ctx=ctx)
            delivered.append(count_delivered)
            noise.update(count_record)
            divisor = max(count, 1.0)
            n_samples = max(int(round(count)), 1)
            diagonal = diagonal * n
        else:
            sensitivity = np.nextafter(sensitivity / n, np.inf)
        per_entry = scale_budget(accountant.remaining, Fraction(1, p))
        released = np.empty(p)
        sigmas = np.empty(p)
        grids = []
        for j in range(p):
            part = per_entry if j < p - 1 else accountant.remaining
            accountant.spend(part, mechanism="gaussian (diagonal entry)", entry=(j, j))
            value, mechanism = ctx.gaussian(
                diagonal[j], sensitivity=float(sensitivity[j]), budget=part
            )
            released[j] = float(value) / divisor
            sigmas[j] = mechanism.sigma
            grids.append(mechanism.grid)
            delivered.append(mechanism.delivered)
        self.noisy_covariance_ = np.diag(released)
        self.accountant_ = accountant
        noise.update(
            diagonal_sigma=sigmas.tolist(),
            diagonal_sensitivity=sensitivity.tolist(),
            rho_per_entry=per_entry.rho,
        )
        if ctx.noise == "exact":
            noise["diagonal_grid"] = grids
        self._set_fitted(
            X, n_samples=n_samples, n_features=p, columns=stats.columns,
            covariance=np.diag(np.maximum(released, 0.0)),
            privacy=self._guarantee(accountant, center, noise=noise, delivered=delivered),
        )
        return self


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
    _constraints = {"eigenvector_fraction": fraction()}

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

    def fit(self, X: Any, y: Any = None) -> SeparateCovariance:
        """Release a private second moment of ``X`` by SeparateCov.

        Returns
        -------
        self
        """
        budget, bounds, center = self._validate_common()
        share = float(self.eigenvector_fraction)
        stats = clipped_second_moment(X, bounds=bounds, center=center)
        S, n, p = stats.second_moment, stats.n, stats.n_features
        if isinstance(budget, NonPrivate):
            self._fit_exact(X, S, center, n=n, columns=stats.columns)
            self.noisy_eigenvalues_ = np.linalg.eigvalsh(S)[::-1].copy()
            return self
        accountant = PrivacyAccountant(budget)
        radius = bounds.row_norm(p)
        vector_share = Fraction(share)
        check_budget_range(
            check_budget(self.budget),
            _whole_matrix_parts([vector_share], radius=radius, n=n, p=p,
                                neighbors=self.neighbors, noise=self._ctx.noise)
            + _whole_matrix_parts([1 - vector_share], radius=radius, n=n, p=p,
                                  neighbors=self.neighbors, noise=self._ctx.noise,
                                  eigenvalues=True),
            release=f"SeparateCovariance of {p} columns from n = {n} rows",
        )
        noisy, values, estimate, noise = _separate_cov(
            S,
            radius=radius,
            n=n,
            eigenvector_budget=scale_budget(budget, Fraction(share)),
            accountant=accountant,
            ctx=self._ctx,
        )
        self.noisy_covariance_ = noisy
        self.noisy_eigenvalues_ = values
        self.accountant_ = accountant
        self._set_fitted(
            X, n_samples=n, n_features=p, columns=stats.columns, covariance=estimate,
            privacy=self._guarantee(accountant, center, noise={**noise, "radius": radius}),
        )
        return self


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
    section 4.2), i.e. ``epsilon^2 / 2``-zCDP. The final release at radius ``tau`` has the sensitivities
    of GaussCov / SeparateCov with ``r`` replaced by ``tau``. The three steps compose
    adaptively to rho-zCDP under the accountant; the final step spends exactly the
    remainder.
    """

    EIGENVECTOR_BOUND_SCALE: ClassVar[float] = 2.0 / 6.0

    _owner = "AdaptiveCovariance"
    _mechanism = "adaptivecov (Dong, Liang & Yi 2022)"
    _constraints = {
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

    def _validate_adaptive(self) -> tuple[float, float, float, int]:
        trace_fraction = float(self.trace_fraction)
        radius_fraction = float(self.radius_fraction)
        if not trace_fraction + radius_fraction < 1:
            raise ValueError(
                "trace_fraction + radius_fraction must be < 1 (the rest pays for the release); "
                f"got {trace_fraction!r} + {radius_fraction!r}"
            )
        return trace_fraction, radius_fraction, float(self.failure_probability), int(self.n_radii)

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

    # One piece (over 120 lines): the three adaptive steps (noisy trace, sparse-vector radius,
    # final release) run under one accountant and each feeds the next one's public inputs.
    def fit(self, X: Any, y: Any = None) -> AdaptiveCovariance:
        """Release a private second moment of ``X`` by AdaptiveCov.

        Returns
        -------
        self
        """
        budget, bounds, center = self._validate_common()
        trace_fraction, radius_fraction, beta, n_radii = self._validate_adaptive()
        values, columns = as_matrix(X)
        n, p = values.shape
        bounds.check_dimension(p)
        if center is not None:
            if center.shape != (p,):
                raise ValueError(
                    f"center must be a finite vector of length {p} (one per column); "
                    f"got shape {center.shape}"
                )
            values = values - center
        rows, _ = bounds.clip(values)
        S = rows.T @ rows / n
        S = (S + S.T) / 2
        if isinstance(budget, NonPrivate):
            self._fit_exact(X, S, center, n=n, columns=columns)
            self.radius_ = bounds.row_norm(p)
            self.method_ = "exact"
            self.noisy_trace_ = float(np.trace(S))
            return self

        ctx = self._ctx
        accountant = PrivacyAccountant(budget)
        r = bounds.row_norm(p)
        rho = Fraction(budget.rho)
        # Before any draw. The final release's radius is chosen privately, but its noise
        # in grid steps does not depend on it (sensitivity and values both scale as r^2).
        final_share = 1 - Fraction(trace_fraction) - Fraction(radius_fraction)
        check_budget_range(
            check_budget(self.budget),
            ([] if ctx.noise == "float" else [NoisePart(
                share=Fraction(trace_fraction), sensitivity=math.nextafter(r**2 / n, math.inf),
                size=1, value_bound=r**2)])
            + _whole_matrix_parts([final_share, final_share / 2], radius=r, n=n, p=p,
                                  neighbors=self.neighbors, noise=ctx.noise)
            + _whole_matrix_parts([final_share / 2], radius=r, n=n, p=p,
                                  neighbors=self.neighbors, noise=ctx.noise, eigenvalues=True),
            release=f"AdaptiveCovariance of {p} columns from n = {n} rows",
            minimum=_svt_minimum(check_budget(self.budget), radius_fraction),
        )
        # Rounding can put a clipped row a hair above r; the sensitivity argument needs <= r^2.
        squared_norms = np.minimum(np.einsum("ij,ij->i", rows, rows), r**2)

        trace_budget = scale_budget(budget, Fraction(trace_fraction))
        accountant.spend(trace_budget, mechanism="gaussian (trace)")
        trace_sensitivity = math.nextafter(r**2 / n, math.inf)
        noisy_trace, trace_mechanism = ctx.gaussian(
            float(squared_norms.sum() / n), sensitivity=trace_sensitivity, budget=trace_budget
        )
        trace_sigma = trace_mechanism.sigma
        trace_bound = float(noisy_trace) + trace_sigma * math.sqrt(2 * math.log(4.0 / beta))
        trace_bound = min(max(trace_bound, 0.0), r**2)

        epsilon = epsilon_for_zcdp(rho * Fraction(radius_fraction), coefficient=PURE_DP_ZCDP)
        release_rho = float(rho * (1 - Fraction(trace_fraction) - Fraction(radius_fraction)))
        radii = r * 2.0 ** -np.arange(n_radii)
        queries = np.empty(n_radii)
        for k, tau in enumerate(radii):
            bias = float(np.maximum(squared_norms - tau**2, 0.0).sum())
            gauss, separate = self.predicted_errors(
                float(tau),
                n=n,
                p=p,
                rho=release_rho,
                trace_bound=trace_bound,
                neighbors=self.neighbors,
                failure_probability=beta,
            )
            queries[k] = (bias - n * min(gauss, separate)) / r**2
        accountant.spend(PureDP(epsilon), mechanism="sparse vector (AboveThreshold)")
        stop = above_threshold(
            queries, threshold=0.0, sensitivity=1.0, epsilon=epsilon, rng=ctx.source, monotonic=True
        )
        index = max(min(stop, n_radii) - 1, 0)
        # The radius r itself needs no rescaling; a power of two times r is recomputed
        # exactly rather than taken from the float array.
        radius = r if index == 0 else r * 2.0**-index

        gauss, separate = self.predicted_errors(
            radius,
            n=n,
            p=p,
            rho=release_rho,
            trace_bound=trace_bound,
            neighbors=self.neighbors,
            failure_probability=beta,
        )
        clipped_rows = rows if index == 0 else RowNorm(radius).clip(rows)[0]
        S_radius = clipped_rows.T @ clipped_rows / n
        S_radius = (S_radius + S_radius.T) / 2
        final = accountant.remaining
        if separate >= gauss:
            method = "gauss"
            noisy, estimate, noise = _gauss_cov(
                S_radius,
                radius=radius,
                n=n,
                budget=final,
                accountant=accountant,
                ctx=ctx,
            )
        else:
            method = "separate"
            noisy, _, estimate, noise = _separate_cov(
                S_radius,
                radius=radius,
                n=n,
                eigenvector_budget=scale_budget(final, Fraction(1, 2)),
                accountant=accountant,
                ctx=ctx,
            )
        self.noisy_covariance_ = noisy
        self.radius_ = radius
        self.method_ = method
        self.noisy_trace_ = float(noisy_trace)
        self.accountant_ = accountant
        noise = {
            **noise,
            "trace_sigma": trace_sigma,
            "trace_sensitivity": trace_sensitivity,
            "trace_rho": trace_budget.rho,
            "svt_epsilon": epsilon,
            "svt_threshold_laplace_scale": 2.0 / epsilon,
            "svt_query_laplace_scale": 2.0 / epsilon,
            "radius": radius,
            "declared_radius": r,
            "method": method,
        }
        notes = {
            "predicted_errors_at_radius": {"gauss": gauss, "separate": separate},
            "radii_scanned": n_radii,
        }
        self._set_fitted(
            X, n_samples=n, n_features=p, columns=columns, covariance=estimate,
            privacy=self._guarantee(accountant, center, noise=noise, notes=notes),
        )
        return self
