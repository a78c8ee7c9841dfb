"""Noise primitives and the selection mechanisms: symmetric Gaussian and Laplace matrices,
Wishart matrices, and three measurements (:mod:`dpggm.mechanisms.measurement`) --
:class:`ExponentialMechanism`, :class:`AboveThreshold` and :class:`WishartMechanism`. The
functions :func:`exponential_mechanism` and :func:`above_threshold` run the first two once.

Every function takes its randomness as ``rng``: a
:class:`~dpggm.mechanisms.random.RandomSource` (a fit passes its context's ``source``) or
anything it accepts (``None`` / ``"secure"``: every word from the operating system's
cryptographic generator; a seed or a Generator: a reproducible experiment).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import special

from dpggm.exceptions import IncompatibleBudgetError
from dpggm.mechanisms._exact_selection import (
    exact_exponential_selection,
    exact_exponential_selections,
)
from dpggm.mechanisms.discrete_gaussian import sample_discrete_laplace
from dpggm.mechanisms.grid import binade_step, sampler_scale_at_least, to_grid_clipped
from dpggm.mechanisms.measurement import Measurement
from dpggm.mechanisms.random import RandomSource
from dpggm.privacy.budgets import (
    ZCDP,
    ApproxDP,
    Budget,
    PureDP,
    budget_from_cost,
    float_at_most,
)
from dpggm.privacy.calibration import EXPONENTIAL_MECHANISM_ZCDP, PURE_DP_ZCDP, epsilon_for_zcdp

__all__ = [
    "AboveThreshold",
    "ExponentialMechanism",
    "WishartMechanism",
    "above_threshold",
    "above_threshold_min_epsilon",
    "exponential_mechanism",
    "exponential_mechanisms",
    "exponential_mechanism_probabilities",
    "selection_epsilon",
    "symmetric_gaussian_noise",
    "symmetric_laplace_noise",
    "wishart_noise",
]


def _mirror_upper(p: int, draws: np.ndarray) -> np.ndarray:
    out = np.zeros((p, p))
    iu = np.triu_indices(p)
    out[iu] = draws
    return out + np.triu(out, 1).T


def _check_scale(name: str, value: float) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return value


def symmetric_gaussian_noise(p: int, sigma: float, rng: RandomSource | Any) -> np.ndarray:
    """A ``p x p`` symmetric matrix whose upper triangle (with diagonal) is i.i.d.
    ``N(0, sigma^2)`` from a floating-point sampler (not a release mechanism: releases use
    :class:`~dpggm.mechanisms.additive.GaussianMechanism`)."""
    sigma = _check_scale("sigma", sigma)
    return _mirror_upper(p, RandomSource.of(rng).normal(0.0, sigma, size=p * (p + 1) // 2))


def symmetric_laplace_noise(p: int, scale: float, rng: RandomSource | Any) -> np.ndarray:
    """A ``p x p`` symmetric matrix whose upper triangle (with diagonal) is i.i.d.
    ``Laplace(0, scale)`` from a floating-point sampler (see
    :func:`symmetric_gaussian_noise`)."""
    scale = _check_scale("scale", scale)
    return _mirror_upper(p, RandomSource.of(rng).laplace(0.0, scale, size=p * (p + 1) // 2))


def wishart_noise(p: int, df: int, scale: float, rng: RandomSource | Any) -> np.ndarray:
    """A draw from ``Wishart_p(df, scale * I)``: the sum of ``df`` outer products of
    ``N(0, scale * I)`` vectors (Bartlett decomposition, ``O(p^2)`` normal draws).

    The draws are floating-point (normal and chi-square), so a release that adds this
    noise is reported ``"invalid"`` (Mironov 2012); under a cryptographic source their
    uniforms come from the operating system's generator."""
    scale = _check_scale("scale", scale)
    if int(df) != df or df < p:
        raise ValueError(f"df must be an integer >= p = {p}; got {df!r}")
    df = int(df)
    source = RandomSource.of(rng)
    # Bartlett: A lower triangular, A_ii ~ sqrt(chi2(df - i)), A_ij ~ N(0, 1) below.
    lower = np.tril(source.standard_normal((p, p)), -1)
    lower[np.diag_indices(p)] = np.sqrt(source.chisquare(df - np.arange(p)))
    return scale * (lower @ lower.T)


class WishartMechanism(Measurement):
    """Wishart noise on a second moment: ``(statistic * divide_by + W) / divide_by`` with
    ``W ~ Wishart_p(df, scale I)`` (:func:`wishart_noise`).

    Its Gaussian vectors and chi-square draws are floating-point (no exact sampler exists
    for it here), so a release with it is reported ``"invalid"`` whatever its analysis
    (Mironov 2012); the parameters and the claimed guarantee are still stated exactly.

    Parameters
    ----------
    p, df : int
        Dimension and degrees of freedom (``df >= p``).
    scale : float
        The Wishart scale (of ``I``), > 0.
    claimed : Budget
        The guarantee the mechanism's analysis states for records of row norm at most
        ``row_bound``.
    row_bound : float
        The row-norm bound the analysis assumes (from declared bounds).
    divide_by : int, default=1
        ``n`` when the noise is added to ``X^T X`` and the sum divided afterwards.
    invalid_reason : str, optional
        Why the claimed guarantee is known not to hold (the pure-DP Wishart of Jiang et al.
        and the output perturbation of Wang, Huai & Xu); ``None`` for Sheffet's analysis.
    """

    mechanism = "wishart"

    def __init__(self, *, p: int, df: int, scale: float, claimed: Budget, row_bound: float,
                 divide_by: int = 1, invalid_reason: str | None = None) -> None:
        self.p, self.df = int(p), int(df)
        if self.df < self.p:
            raise ValueError(f"df must be an integer >= p = {p}; got {df!r}")
        self.scale = _check_scale("scale", scale)
        self.sensitivity = _check_scale("row_bound", row_bound)
        self.claimed = claimed
        self.divide_by = int(divide_by)
        self.invalid_reason = invalid_reason
        self.delivered = claimed

    @classmethod
    def sheffet(cls, budget: Budget, *, p: int, row_bound: float, n: int) -> WishartMechanism:
        """Sheffet (2019): ``W ~ Wishart_p(m, B**2 I)`` added to ``X^T X``, divided by ``n``,
        ``m = ceil(p + 14 ln(4/delta) / epsilon**2)``: ``(epsilon, delta)``-DP for rows of
        norm at most ``B``, valid for ``epsilon`` in (0, 1) and ``delta`` in (0, 1/e)."""
        if not isinstance(budget, ApproxDP):
            raise IncompatibleBudgetError(
                f"the Wishart mechanism needs an ApproxDP budget; got {type(budget).__name__}")
        if not (0 < budget.epsilon < 1 and 0 < budget.delta < 1 / math.e):
            raise ValueError(
                "budget: the Wishart mechanism needs epsilon in (0, 1) and delta in (0, 1/e); "
                f"got epsilon={budget.epsilon!r}, delta={budget.delta!r}"
            )
        df = math.ceil(p + 14.0 * math.log(4.0 / budget.delta) / budget.epsilon**2)
        return cls(p=p, df=df, scale=row_bound**2, claimed=budget, row_bound=row_bound,
                   divide_by=n)

    def privacy_map(self, sensitivity: float) -> Budget:
        """The claimed guarantee, for records of row norm at most the bound analysed; no
        guarantee is known beyond it."""
        if _check_scale("sensitivity", sensitivity) > self.sensitivity:
            raise ValueError(
                f"the Wishart analysis covers rows of norm at most {self.sensitivity!r}; got "
                f"{sensitivity!r}")
        return self.claimed

    @property
    def entry_std(self) -> float:
        """The standard deviation of one off-diagonal entry of the released noise (after
        the division): ``sqrt(df) * scale / divide_by``."""
        return math.sqrt(self.df) * self.scale / self.divide_by

    @property
    def noise_mean(self) -> float:
        """The mean of a diagonal entry of the released noise: ``df * scale / divide_by``."""
        return self.df * self.scale / self.divide_by

    def record(self, prefix: str = "") -> dict[str, Any]:
        out = {f"{prefix}wishart_df": self.df, f"{prefix}wishart_scale": self.scale}
        if self.divide_by != 1:
            out[f"{prefix}divided_by_n"] = self.divide_by
        return out

    def release(self, statistic: np.ndarray, source: RandomSource | Any) -> np.ndarray:
        """``statistic`` plus the Wishart draw over ``divide_by``."""
        noise = wishart_noise(self.p, self.df, self.scale, source)
        return statistic + (noise / self.divide_by if self.divide_by != 1 else noise)


def exponential_mechanism_probabilities(
    scores: np.ndarray, *, sensitivity: float, epsilon: float
) -> np.ndarray:
    """Selection probabilities ``exp(epsilon u_r / (2 sensitivity))``, normalised.

    A float helper for display and tests; :func:`exponential_mechanism` does not use it.
    """
    sensitivity = _check_scale("sensitivity", sensitivity)
    epsilon = _check_scale("epsilon", epsilon)
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1 or scores.size == 0 or not np.all(np.isfinite(scores)):
        raise ValueError("scores must be a non-empty one-dimensional array of finite numbers")
    logits = epsilon * scores / (2 * sensitivity)
    return np.exp(logits - special.logsumexp(logits))


def _scaled_epsilon(epsilon: float, sensitivity: float, calibrated: float) -> Fraction:
    """The privacy loss ``epsilon * sensitivity / calibrated`` of a score (query) of
    ``sensitivity`` under a mechanism calibrated for ``calibrated``, exactly."""
    sensitivity = _check_scale("sensitivity", sensitivity)
    return Fraction(epsilon) * Fraction(sensitivity) / Fraction(calibrated)


def _pure_step_budget(loss: Fraction, notion: type[Budget], coefficient: Fraction) -> Budget:
    """A pure ``loss``-DP step stated in ``notion`` (``ZCDP``: ``coefficient * loss**2``),
    rounded up."""
    if notion is ZCDP:
        return budget_from_cost(ZCDP, (coefficient * loss**2,), rounding="up")
    return budget_from_cost(PureDP, (loss,), rounding="up")


def selection_epsilon(budget: Budget, coefficient: Fraction) -> float:
    """The largest ``epsilon`` a pure-DP selection may run at for ``budget`` -- the one map
    from a budget to a selection's ``epsilon``: ``ZCDP(rho)`` through ``coefficient *
    epsilon**2 <= rho`` (exactly; ``coefficient`` is 1/8 for the exponential mechanism,
    1/2 for AboveThreshold), ``PureDP(eps)`` (or the ``epsilon`` of ``ApproxDP``, delta
    unused) as is (the largest float not above it)."""
    if isinstance(budget, ZCDP):
        return epsilon_for_zcdp(budget.rho, coefficient=coefficient)
    if isinstance(budget, (PureDP, ApproxDP)):
        return float_at_most(Fraction(budget.epsilon))
    raise IncompatibleBudgetError(
        f"a selection mechanism's budget must be ZCDP, PureDP or ApproxDP; got {budget!r}"
    )


class ExponentialMechanism(Measurement):
    """The exponential mechanism: an index chosen with probability proportional to
    ``exp(epsilon u_r / (2 sensitivity))``, drawn **exactly**
    (:mod:`dpggm.mechanisms._exact_selection`).

    Parameters
    ----------
    epsilon, sensitivity : float
        Finite and > 0 (the score sensitivity, from public parameters).
    notion : {ZCDP, PureDP}, default=ZCDP
        The notion the selection is accounted in: ``epsilon**2 / 8``-zCDP (Cesar & Rogers
        2021) or ``epsilon``-DP.

    Privacy
    -------
    ``privacy_map(d)``: a score of sensitivity ``d`` loses ``epsilon d / sensitivity``:
    that pure DP, or its square over 8 in zCDP, rounded up.
    """

    mechanism = "exponential"

    def __init__(self, *, epsilon: float, sensitivity: float, notion: type[Budget] = ZCDP) -> None:
        self.sensitivity = _check_scale("sensitivity", sensitivity)
        self.epsilon = _check_scale("epsilon", epsilon)
        if notion not in (ZCDP, PureDP):
            raise ValueError(f"notion must be ZCDP or PureDP; got {notion!r}")
        self.notion = notion
        self.delivered = self.privacy_map(self.sensitivity)

    @classmethod
    def for_budget(cls, budget: Budget, *, sensitivity: float) -> ExponentialMechanism:
        """The selection that costs at most ``budget`` (the largest ``epsilon`` it allows;
        ``ZCDP``: ``epsilon**2 / 8 <= rho`` exactly)."""
        notion = ZCDP if isinstance(budget, ZCDP) else PureDP
        return cls(epsilon=selection_epsilon(budget, EXPONENTIAL_MECHANISM_ZCDP),
                   sensitivity=sensitivity, notion=notion)

    def privacy_map(self, sensitivity: float) -> Budget:
        return _pure_step_budget(_scaled_epsilon(self.epsilon, sensitivity, self.sensitivity),
                                 self.notion, EXPONENTIAL_MECHANISM_ZCDP)

    def record(self, prefix: str = "") -> dict[str, Any]:
        return {f"{prefix}epsilon": self.epsilon, f"{prefix}score_sensitivity": self.sensitivity}

    def release(self, scores: np.ndarray, source: RandomSource | Any) -> int:
        """The selected index (see :func:`exponential_mechanism`)."""
        scores = np.asarray(scores, dtype=float)
        if scores.ndim != 1 or scores.size == 0 or not np.all(np.isfinite(scores)):
            raise ValueError("scores must be a non-empty one-dimensional array of finite numbers")
        return exact_exponential_selection(
            scores, sensitivity=self.sensitivity, epsilon=self.epsilon, random_state=source
        )

    def release_rows(self, scores: np.ndarray, source: RandomSource | Any) -> np.ndarray:
        """One selected index per row of ``scores`` (``m x k``), each row its own
        selection, in row order (see :func:`exponential_mechanisms`)."""
        scores = np.asarray(scores, dtype=float)
        if scores.ndim != 2 or scores.shape[1] == 0 or not np.all(np.isfinite(scores)):
            raise ValueError("scores must be a two-dimensional array of finite numbers with at "
                             "least one column")
        return exact_exponential_selections(
            scores, sensitivity=self.sensitivity, epsilon=self.epsilon,
            random_state=RandomSource.of(source))


def exponential_mechanism(
    scores: np.ndarray, *, sensitivity: float, epsilon: float, rng: RandomSource | Any
) -> int:
    """Index chosen with probability proportional to ``exp(epsilon u_r / (2 sensitivity))``.

    The selection is drawn **exactly** (:mod:`dpggm.mechanisms._exact_selection`): the
    exponents ``epsilon (max(u) - u_r) / (2 sensitivity)`` are exact rationals formed from
    the binary values of the floats, and a rejection sampler with a uniform proposal and an
    exact Bernoulli(``exp(-exponent)``) acceptance coin (Canonne, Kamath, Steinke 2020,
    Algorithm 1, in integer arithmetic) draws from exactly these probabilities, including
    candidates whose float probability would underflow. The expected number of proposals
    is at most the number of candidates; far-below candidates are rejected after a few
    random bits.

    Parameters
    ----------
    scores : array_like of float
        Finite utilities, one per candidate (one-dimensional, non-empty).
    sensitivity, epsilon : float
        Finite and > 0; used at their exact binary values.
    rng : RandomSource, None, "secure", int or numpy.random.Generator
        Source of the random words (a fit passes its context's ``source``): ``None`` or
        ``"secure"`` reads every word from :func:`os.urandom`; a seed or a Generator
        supplies them from its PCG64 stream (reproducible experiments).

    Returns
    -------
    int
        The selected index.

    Privacy
    -------
    ``epsilon``-DP and ``epsilon**2 / 8``-zCDP when every score has sensitivity at most
    ``sensitivity`` (Cesar & Rogers 2021); the exact sampler makes these bounds hold for
    the released index as computed, not only for an idealised float sampler.
    """
    return ExponentialMechanism(epsilon=epsilon, sensitivity=sensitivity).release(scores, rng)


def exponential_mechanisms(
    scores: np.ndarray, *, sensitivity: float, epsilon: float, rng: RandomSource | Any
) -> np.ndarray:
    """:func:`exponential_mechanism` on every row of ``scores`` (``m x k``): ``m``
    independent selections, drawn exactly, in row order -- with a seeded ``rng`` the same
    indices as ``m`` calls of :func:`exponential_mechanism` on one
    :class:`~dpggm.mechanisms.random.RandomSource`, at a fraction of the cost (the whole
    parts of every row's exponents at once, one compiled rejection loop a row).

    Privacy
    -------
    Each selection is ``epsilon``-DP and ``epsilon**2 / 8``-zCDP when its row's scores have
    sensitivity at most ``sensitivity``; ``m`` of them compose (``m epsilon``, or ``m
    epsilon**2 / 8``), or in parallel when the rows read disjoint records.
    """
    return ExponentialMechanism(epsilon=epsilon, sensitivity=sensitivity).release_rows(
        scores, rng)


# The exact AboveThreshold works on the grid t Z with t the power of two at 2**-20 of the
# sensitivity: rounding a query to the grid moves it by at most t/2, which adds at most
# one step (a relative 2**-20) to the sensitivity in grid units.
_THRESHOLD_GRID_BITS = 20


def _threshold_grid(sensitivity: float) -> tuple[float, int]:
    """The grid step and the sensitivity in grid units, ``ceil(sensitivity / t) + 1``."""
    step = binade_step(sensitivity, _THRESHOLD_GRID_BITS)
    return step, math.ceil(Fraction(sensitivity) / Fraction(step)) + 1


def above_threshold_min_epsilon(*, sensitivity: float, monotonic: bool = False) -> float:
    """The smallest ``epsilon`` :func:`above_threshold` can run at: its discrete Laplace
    scales, ``(2 or 4) D / epsilon`` grid steps, must stay within the exact sampler's
    ``2**48`` (public parameters only; a hair is added for the rounding of the scales)."""
    sensitivity = _check_scale("sensitivity", sensitivity)
    _, grid_sensitivity = _threshold_grid(sensitivity)
    return (2 if monotonic else 4) * grid_sensitivity / 2.0**48 * (1 + 2.0**-30)


class AboveThreshold(Measurement):
    """AboveThreshold (Dwork & Roth 2014, Algorithm 1; Lyu, Su & Li 2017, Algorithm 1): the
    index of the first query whose noisy value reaches the noisy threshold, or the number
    of queries if none does; exact discrete Laplace noise on a grid.

    Parameters
    ----------
    epsilon, sensitivity : float
        Finite and > 0 (the queries' sensitivity, from public parameters).
    monotonic : bool, default=False
        Queries that all move in the same direction between neighbours (the caller
        guarantees it): half the query noise (Lyu, Su & Li 2017, section 4.2).
    notion : {PureDP, ZCDP}, default=PureDP
        The notion the step is accounted in: ``epsilon``-DP, or ``epsilon**2 / 2``-zCDP.

    Privacy
    -------
    ``privacy_map(d)``: queries of sensitivity ``d`` lose ``epsilon d / sensitivity``
    whatever their number (that pure DP, or half its square in zCDP), rounded up.
    """

    mechanism = "above threshold (exact sparse vector)"

    def __init__(self, *, epsilon: float, sensitivity: float, monotonic: bool = False,
                 notion: type[Budget] = PureDP) -> None:
        self.sensitivity = _check_scale("sensitivity", sensitivity)
        self.epsilon = _check_scale("epsilon", epsilon)
        self.monotonic = bool(monotonic)
        if notion not in (ZCDP, PureDP):
            raise ValueError(f"notion must be ZCDP or PureDP; got {notion!r}")
        self.notion = notion
        self.step, grid_sensitivity = _threshold_grid(self.sensitivity)
        self._grid_units = grid_sensitivity
        per_unit = Fraction(grid_sensitivity) / Fraction(self.epsilon)
        self.threshold_scale = sampler_scale_at_least(2 * per_unit, significant_bits=51)
        self.query_scale = sampler_scale_at_least((2 if self.monotonic else 4) * per_unit,
                                                  significant_bits=51)
        self.delivered = self.privacy_map(self.sensitivity)

    @classmethod
    def for_budget(cls, budget: Budget, *, sensitivity: float,
                   monotonic: bool = False) -> AboveThreshold:
        """The sparse vector that costs at most ``budget`` (``ZCDP``: ``epsilon**2 / 2 <=
        rho`` exactly)."""
        notion = ZCDP if isinstance(budget, ZCDP) else PureDP
        return cls(epsilon=selection_epsilon(budget, PURE_DP_ZCDP), sensitivity=sensitivity,
                   monotonic=monotonic, notion=notion)

    def privacy_map(self, sensitivity: float) -> Budget:
        # Queries of sensitivity d are rounded to the grid: they move by at most
        # ceil(d / t) + 1 steps, against the calibrated sensitivity's units.
        sensitivity = _check_scale("sensitivity", sensitivity)
        units = math.ceil(Fraction(sensitivity) / Fraction(self.step)) + 1
        loss = Fraction(self.epsilon) * units / self._grid_units
        return _pure_step_budget(loss, self.notion, PURE_DP_ZCDP)

    def record(self, prefix: str = "") -> dict[str, Any]:
        return {
            f"{prefix}epsilon": self.epsilon,
            f"{prefix}query_sensitivity": self.sensitivity,
            f"{prefix}threshold_laplace_scale": float(self.threshold_scale * Fraction(self.step)),
            f"{prefix}query_laplace_scale": float(self.query_scale * Fraction(self.step)),
            f"{prefix}grid": self.step,
        }

    def release(self, queries: np.ndarray, threshold: float, source: RandomSource | Any) -> int:
        """The index of the first noisy query at or above the noisy threshold."""
        queries = np.asarray(queries, dtype=float)
        if queries.ndim != 1 or not np.all(np.isfinite(queries)):
            raise ValueError("queries must be a one-dimensional array of finite numbers")
        if not math.isfinite(float(threshold)):
            raise ValueError(f"threshold must be a finite number; got {threshold!r}")
        source = RandomSource.of(source)
        noisy_threshold = int(to_grid_clipped(np.array([threshold]), self.step)[0]) + (
            sample_discrete_laplace(self.threshold_scale, random_state=source))
        noisy_queries = to_grid_clipped(queries, self.step) + sample_discrete_laplace(
            self.query_scale, len(queries), random_state=source
        )
        above = np.flatnonzero(noisy_queries >= noisy_threshold)
        return int(above[0]) if above.size else len(queries)


def above_threshold(
    queries: np.ndarray,
    *,
    threshold: float,
    sensitivity: float,
    epsilon: float,
    rng: RandomSource | Any,
    monotonic: bool = False,
) -> int:
    """AboveThreshold (Dwork & Roth 2014, Algorithm 1; Lyu, Su & Li 2017, Algorithm 1):
    the index of the first query whose noisy value reaches the noisy threshold, or
    ``len(queries)`` if none does (one run of :class:`AboveThreshold`).

    The noise is exact: queries and threshold are rounded to the grid ``t Z`` (``t`` the
    power of two at ``2**-20`` of ``sensitivity``'s binade), and integer discrete Laplace
    noise (:func:`dpggm.mechanisms.discrete_gaussian.sample_discrete_laplace`) is added in
    grid units; the comparison is between integers. ``rng`` is the source of random words
    (a :class:`~dpggm.mechanisms.random.RandomSource` or anything it accepts; both noise
    draws read the same stream).

    Privacy
    -------
    ``epsilon``-DP (hence ``epsilon**2 / 2``-zCDP) when every query has sensitivity at most
    ``sensitivity``, whatever the number of queries. In grid units the rounded queries have
    sensitivity at most ``D = ceil(sensitivity / t) + 1``; the threshold gets discrete
    ``Laplace(b_T)`` noise and every query discrete ``Laplace(b_Q)``, with ``b_T >= 2 D /
    epsilon`` and ``b_Q >= 4 D / epsilon`` (rounded up to short dyadic rationals). With
    ``monotonic=True``, ``b_Q >= 2 D / epsilon``, which is ``epsilon``-DP only for monotonic
    queries -- for every pair of neighbours, all queries move in the same direction (Lyu,
    Su & Li 2017, section 4.2): the caller must guarantee that. The proofs hold verbatim
    for integer queries with two-sided geometric noise (shifts by the integer ``D``). Only
    the index is released.
    """
    mechanism = AboveThreshold(epsilon=epsilon, sensitivity=sensitivity, monotonic=monotonic)
    return mechanism.release(queries, threshold, rng)
