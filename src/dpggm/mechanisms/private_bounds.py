"""Clipping ranges chosen privately: per-column quantiles by the exponential mechanism.

A declared bound is the weakest link of a private covariance release: too small and most
rows are clipped (the estimate is of the clipped data), too large and the noise, which
scales with the bound squared, drowns the signal. When no bound can be declared from
domain knowledge, :func:`private_ranges` spends a stated budget to choose one per column.

For every column ``j`` a private median ``m_j`` and then the ``q`` and ``1 - q`` quantiles
of ``x_j - m_j`` are chosen with the exponential mechanism over a *public* candidate grid
(Smith 2011, "Privacy-preserving statistical estimation with optimal convergence rates",
section 3; here discretised): the score of a candidate ``r`` is
``-| #{i : x_ij < r} - q n |``. The grid is geometric (``per_octave`` points per factor
of two, from ``2**low_exponent`` to ``2**high_exponent``, both signs, and zero), so its
resolution follows the magnitude of the values -- and, applied to deviations from the
median, the spread of a column: columns in grams and in milligrams are handled alike. The range
``[lo_j, hi_j]`` gives a centre ``c_j = (lo_j + hi_j) / 2`` and a half-width ``b_j``, and
a record is mapped to ``z_j = (clip(x_j, lo_j, hi_j) - c_j) / b_j`` in ``[-1, 1]``. This
affine map is a function of the private outputs only (post-processing), and a diagonal
rescaling leaves the conditional-independence graph (the zero pattern of the precision
matrix, and the partial correlations) unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpggm.mechanisms.noise import exponential_mechanism
from dpggm.privacy.budgets import ZCDP, ApproxDP, Budget, PureDP, exact_cost

__all__ = [
    "PrivateRanges",
    "candidate_grid",
    "private_quantile",
    "private_ranges",
    "quantile_scores",
    "tail_quantile",
]

#: Sensitivity of the quantile score of :func:`quantile_scores`.
QUANTILE_SCORE_SENSITIVITY = 1.0


def candidate_grid(
    *, low_exponent: int = -20, high_exponent: int = 40, per_octave: int = 64
) -> np.ndarray:
    """The public candidate grid: ``0`` and ``+-2**(k / per_octave)`` for
    ``low_exponent <= k / per_octave <= high_exponent``, sorted.

    With the default 64 points per octave neighbouring candidates differ by about 1.1 %,
    which bounds the relative error of a chosen range caused by the grid alone.
    """
    for name, value in (("low_exponent", low_exponent), ("high_exponent", high_exponent),
                        ("per_octave", per_octave)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an integer; got {value!r}")
    if not low_exponent < high_exponent:
        raise ValueError(
            f"low_exponent must be < high_exponent; got {low_exponent} and {high_exponent}"
        )
    if per_octave < 1:
        raise ValueError(f"per_octave must be >= 1; got {per_octave}")
    positive = np.exp2(np.arange(low_exponent * per_octave, high_exponent * per_octave + 1)
                       / per_octave)
    return np.concatenate([-positive[::-1], [0.0], positive])


def quantile_scores(sorted_values: np.ndarray, q: float, *, candidates: np.ndarray) -> np.ndarray:
    """``-| #{i : x_i < r} - round(q n) |`` for every candidate ``r``.

    The target rank is rounded to an integer so that every score is an exact integer:
    a float ``q n`` would let rounding push a neighbour's score change past 1. Changing
    one record moves the count by at most 1; adding or removing one moves the count and
    the target rank each by at most 1, in the same direction, so the score moves by at
    most 1 (:data:`QUANTILE_SCORE_SENSITIVITY`) under either relation.
    """
    target = int(round(q * sorted_values.shape[0]))
    below = np.searchsorted(sorted_values, candidates, side="left")
    return -np.abs(below - target).astype(float)


def private_quantile(
    sorted_values: np.ndarray, q: float, *, candidates: np.ndarray, epsilon: float,
    rng: np.random.Generator,
) -> float:
    """One candidate chosen near the ``q``-quantile of ``sorted_values``.

    Privacy
    -------
    The exponential mechanism with score sensitivity 1 (see
    :data:`QUANTILE_SCORE_SENSITIVITY`): ``epsilon``-DP and ``epsilon**2 / 8``-zCDP under
    either neighbouring relation. Only the chosen candidate is released.
    """
    scores = quantile_scores(sorted_values, q, candidates=candidates)
    index = exponential_mechanism(
        scores, sensitivity=QUANTILE_SCORE_SENSITIVITY, epsilon=epsilon, rng=rng
    )
    return float(candidates[index])


def _epsilon_for_zcdp(rho: Fraction) -> float:
    """The largest float ``epsilon`` with ``epsilon**2 / 8 <= rho`` (exactly)."""
    epsilon = math.sqrt(8 * float(rho))
    while epsilon > 0 and Fraction(epsilon) ** 2 / 8 > rho:
        epsilon = math.nextafter(epsilon, 0.0)
    return epsilon


@dataclass(frozen=True)
class PrivateRanges:
    """Per-column ranges chosen privately, and what they cost.

    Attributes
    ----------
    lower, upper : ndarray of shape (p,)
        The released ranges (``upper > lower`` in every column).
    center, half_width : ndarray of shape (p,)
        ``(lower + upper) / 2`` and ``(upper - lower) / 2``.
    budget : Budget
        The budget charged for all ``3 p`` quantiles.
    epsilon_per_quantile : float
        The exponential mechanism's ``epsilon`` for each tail quantile.
    quantile : float
        The target tail quantile ``q`` (and ``1 - q``) actually used.
    epsilon_per_median : float
        The exponential mechanism's ``epsilon`` for each median.
    widening : float
        The public factor the ``q`` range was widened by.
    """

    lower: np.ndarray
    upper: np.ndarray
    budget: Budget
    epsilon_per_quantile: float
    quantile: float
    epsilon_per_median: float = math.inf
    widening: float = 1.0

    @property
    def center(self) -> np.ndarray:
        return (self.lower + self.upper) / 2

    @property
    def half_width(self) -> np.ndarray:
        return (self.upper - self.lower) / 2

    def transform(self, X: np.ndarray) -> tuple[np.ndarray, int]:
        """Clip ``X`` to the ranges and map them onto ``[-1, 1]``; also returns how many
        rows were clipped (a curator-only figure: it is computed from the private data)."""
        clipped = np.clip(X, self.lower, self.upper)
        changed = int(np.any(clipped != X, axis=1).sum())
        # The division can land an ulp outside [-1, 1]; the box the release assumes is exact.
        return np.clip((clipped - self.center) / self.half_width, -1.0, 1.0), changed

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "private per-column ranges (exponential-mechanism quantiles)",
            "quantile": self.quantile,
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "budget": self.budget.to_dict(),
            "epsilon_per_quantile": self.epsilon_per_quantile,
            "epsilon_per_median": self.epsilon_per_median,
            "widening": self.widening,
            "score_sensitivity": QUANTILE_SCORE_SENSITIVITY,
        }


def tail_quantile(*, n: int, epsilon: float, n_candidates: int, minimum: float = 0.01,
                  maximum: float = 0.25) -> float:
    """The tail share to aim at, from public quantities only.

    The exponential mechanism picks, with probability about ``1 - e**-3``, a candidate
    whose rank is within ``(2 / epsilon) (ln(n_candidates) + 3)`` of the target; the tail
    share is made at least that over ``n``, so that the chosen quantile lies inside the
    data rather than anywhere among the equally scored candidates beyond it. It is kept
    in ``[minimum, maximum]``.
    """
    rank_error = 2.0 / epsilon * (math.log(n_candidates) + 3.0)
    return float(min(maximum, max(minimum, rank_error / n)))


def _range_factor(q: float, target: float) -> float:
    """How much to widen a ``q`` / ``1 - q`` range so that it covers the ``target`` /
    ``1 - target`` range of a normal distribution (a public constant)."""
    from scipy.stats import norm

    return float(norm.ppf(1 - target) / norm.ppf(1 - q)) if q > target else 1.0


def private_ranges(
    X: np.ndarray, *, budget: Budget, quantile: float = 0.01, rng: np.random.Generator,
    candidates: np.ndarray | None = None, median_share: float = 0.25,
) -> PrivateRanges:
    """Choose ``[lo_j, hi_j]`` for every column privately, in two stages.

    1. a private median ``m_j`` of every column (share ``median_share`` of ``budget``);
    2. private ``q`` and ``1 - q`` quantiles of ``x_j - m_j`` (the rest), where
       ``q = tail_quantile(...)`` is at least ``quantile`` and larger when ``n`` is too
       small for so extreme a quantile at this budget; the range is then widened about
       its centre by the public factor that makes a ``q`` range of a normal distribution
       its ``quantile`` range.

    The geometric grid is applied to the deviations ``x_j - m_j``, so its resolution
    follows the spread of a column, not its magnitude: a column at 300 +- 0.5 is
    resolved as finely as one at 0 +- 0.5.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        The private records.
    budget : ZCDP, PureDP or ApproxDP
        What all ``3 p`` quantiles together may cost. Under ``ZCDP(rho)`` a quantile with
        a share ``r`` of ``rho`` gets the largest ``epsilon`` with ``epsilon**2 / 8 <= r``;
        under ``PureDP(eps)`` or ``ApproxDP(eps, delta)`` it gets that share of ``eps``
        (pure DP; ``delta`` is not used).
    quantile : float in (0, 0.5), default=0.01
        The tail share clipped on each side when ``n`` is large enough.
    rng : numpy.random.Generator
    candidates : ndarray, optional
        A public, sorted candidate grid; :func:`candidate_grid` by default.
    median_share : float in (0, 1), default=0.25

    Privacy
    -------
    ``3 p`` exponential mechanisms with score sensitivity 1, composed (the second stage
    uses the released medians only): ``budget`` under either neighbouring relation. The
    grid, ``quantile`` and ``n`` are public. If the two quantiles of a column coincide, the
    upper end is moved to the next candidate (post-processing).
    """
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float)) or not (
        0 < quantile < 0.5
    ):
        raise ValueError(f"quantile must be a number in (0, 0.5); got {quantile!r}")
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    grid = candidate_grid() if candidates is None else np.asarray(candidates, dtype=float)
    shares = (Fraction(median_share) / p, (1 - Fraction(median_share)) / (2 * p))
    if isinstance(budget, ZCDP):
        rho = exact_cost(budget, ZCDP)[0]
        eps_median, eps_tail = (_epsilon_for_zcdp(rho * s) for s in shares)
    elif isinstance(budget, (PureDP, ApproxDP)):
        eps_median, eps_tail = (_float_below(Fraction(budget.epsilon) * s) for s in shares)
    else:
        raise TypeError(
            f"budget for private ranges must be ZCDP, PureDP or ApproxDP; got {budget!r}"
        )
    if not (eps_median > 0 and eps_tail > 0):
        raise ValueError(f"the bound budget {budget} is too small to choose ranges")
    q = tail_quantile(n=n, epsilon=eps_tail, n_candidates=grid.size, minimum=float(quantile))
    widen = _range_factor(q, float(quantile))
    lower = np.empty(p)
    upper = np.empty(p)
    for j in range(p):
        column = np.sort(X[:, j])
        median = private_quantile(column, 0.5, candidates=grid, epsilon=eps_median, rng=rng)
        deviation = column - median
        lo = private_quantile(deviation, q, candidates=grid, epsilon=eps_tail, rng=rng)
        hi = private_quantile(deviation, 1 - q, candidates=grid, epsilon=eps_tail, rng=rng)
        lo, hi = min(lo, hi), max(lo, hi)
        if hi == lo:
            above = np.flatnonzero(grid > lo)
            hi = float(grid[above[0]]) if above.size else lo + 1.0
        mid, half = (lo + hi) / 2, (hi - lo) / 2 * widen
        lower[j], upper[j] = median + mid - half, median + mid + half
    return PrivateRanges(lower=lower, upper=upper, budget=budget,
                         epsilon_per_quantile=eps_tail, quantile=q,
                         epsilon_per_median=eps_median, widening=widen)


def _float_below(value: Fraction) -> float:
    result = float(value)
    if Fraction(result) > value:
        result = math.nextafter(result, 0.0)
    return result
