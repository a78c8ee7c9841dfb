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
from dpggm.mechanisms.random import RandomSource
from dpggm.privacy.budgets import ZCDP, ApproxDP, Budget, PureDP, exact_cost
from dpggm.privacy.calibration import epsilon_for_zcdp

__all__ = [
    "PrivateNormBound",
    "PrivateRanges",
    "candidate_grid",
    "private_norm_bound",
    "private_quantile",
    "private_quantile_cell",
    "quantile_cell_scores",
    "private_ranges",
    "quantile_scores",
    "norm_budget_needed",
    "range_budget_needed",
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


def quantile_cell_scores(sorted_values: np.ndarray, q: float, *, edges: np.ndarray) -> np.ndarray:
    """For every cell ``[edges[k], edges[k + 1])``: ``0`` if the target rank
    ``round(q n)`` lies between the counts below its two ends, otherwise minus the distance
    from the target to the nearer count.

    Scoring cells rather than points matters when the data are concentrated: a column
    at ``300 +- 0.5`` can fall inside a single cell of a grid built for every magnitude,
    and then every *point* of the grid is equally far (``n / 2`` ranks) from the median
    while the cell holding it scores 0. Each count and the target move by at most 1 in the
    same direction (see :func:`quantile_scores`), and a maximum of such terms and 0 moves
    by at most 1: sensitivity :data:`QUANTILE_SCORE_SENSITIVITY` under either relation.
    """
    target = int(round(q * sorted_values.shape[0]))
    below = np.searchsorted(sorted_values, edges, side="left")
    lo, hi = below[:-1], below[1:]
    return -np.maximum(0, np.maximum(lo - target, target - hi)).astype(float)


def private_quantile_cell(
    sorted_values: np.ndarray, q: float, *, edges: np.ndarray, epsilon: float,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """One cell ``(edges[k], edges[k + 1])`` chosen to hold the ``q``-quantile.

    Privacy
    -------
    The exponential mechanism with score sensitivity 1 (:func:`quantile_cell_scores`):
    ``epsilon``-DP and ``epsilon**2 / 8``-zCDP under either neighbouring relation.
    """
    scores = quantile_cell_scores(sorted_values, q, edges=edges)
    index = exponential_mechanism(
        scores, sensitivity=QUANTILE_SCORE_SENSITIVITY, epsilon=epsilon, rng=rng
    )
    return float(edges[index]), float(edges[index + 1])


@dataclass(frozen=True)
class PrivateRanges:
    """Per-column ranges chosen privately, and what they cost.

    Attributes
    ----------
    lower, upper : ndarray of shape (p,)
        The released ranges (``upper > lower`` in every column).
    center, half_width : ndarray of shape (p,)
        ``(lower + upper) / 2`` (the private median) and ``(upper - lower) / 2``
        (``width`` times the private median absolute deviation).
    budget : Budget
        The budget charged for all ``3 p`` quantiles.
    epsilons : dict
        The exponential mechanism's ``epsilon`` for each stage (``"median"``,
        ``"refine"``, ``"spread"``), the same for every column.
    width : float
        The public multiple of the median absolute deviation on each side.
    """

    lower: np.ndarray
    upper: np.ndarray
    budget: Budget
    epsilons: dict[str, float]
    width: float

    @property
    def center(self) -> np.ndarray:
        return (self.lower + self.upper) / 2

    @property
    def half_width(self) -> np.ndarray:
        return (self.upper - self.lower) / 2

    def outside(self, X: np.ndarray) -> np.ndarray:
        """Which rows of ``X`` have a value outside the ranges (curator-only)."""
        return np.any((X < self.lower) | (X > self.upper), axis=1)

    def transform(self, X: np.ndarray) -> tuple[np.ndarray, int]:
        """Clip ``X`` to the ranges and map them onto ``[-1, 1]``; also returns how many
        rows were clipped (a curator-only figure: it is computed from the private data)."""
        clipped = np.clip(X, self.lower, self.upper)
        changed = int(self.outside(X).sum())
        # The division can land an ulp outside [-1, 1]; the box the release assumes is exact.
        return np.clip((clipped - self.center) / self.half_width, -1.0, 1.0), changed

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "private per-column ranges: median +- width * median absolute deviation "
                    "(exponential-mechanism quantiles)",
            "width": self.width,
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "budget": self.budget.to_dict(),
            "epsilons": dict(self.epsilons),
            "score_sensitivity": QUANTILE_SCORE_SENSITIVITY,
        }


#: Shares of a column's range budget (in zCDP ``rho``, or pure ``epsilon``) for the median,
#: its refinement and the median absolute deviation.
RANGE_SHARES = {"median": Fraction(2, 5), "refine": Fraction(1, 5), "spread": Fraction(2, 5)}

#: Points per octave of the grid the median and the MAD are chosen from. Coarse on
#: purpose: the refinement stage resolves the centre, a scale needs no finer steps than
#: 9 %, and every candidate beyond the data costs the mechanism accuracy.
RANGE_GRID_PER_OCTAVE = 16

#: Cells of the refinement grid per cell of the first median's grid.
REFINE_POINTS = 64

#: Public multiple of the median absolute deviation on each side of the median: for a
#: normal column ``5 MAD`` is ``3.37`` standard deviations, which clips 0.04 % per side.
RANGE_WIDTH = 5.0


def _stage_candidates(grid_size: int) -> dict[str, int]:
    return {"median": grid_size - 1, "refine": 3 * REFINE_POINTS,
            "spread": (grid_size - 1) // 2 - 1}


def _epsilon_needed(*, n: int, candidates: int, gap: float, confidence: float) -> float:
    """The ``epsilon`` with which a quantile's exponential mechanism lands, with
    probability about ``1 - e**-confidence``, fewer than ``gap * n`` ranks from its target.

    It lands within ``(2 / epsilon) (ln(candidates) + confidence)`` ranks. The candidates
    beyond the data all score alike, and a grid that must serve any unit has many of
    them, so small samples need a larger ``epsilon`` than a quantile's variance suggests.
    """
    return 2.0 * (math.log(candidates) + confidence) / (gap * n)


def range_budget_needed(*, n: int, p: int, notion: type = ZCDP, confidence: float = 3.0,
                        grid_size: int | None = None) -> Budget:
    """What :func:`private_ranges` needs so that every median and median absolute
    deviation lands inside the middle half of its column (public quantities only).

    ``notion`` is ``ZCDP`` (the budget's ``rho``) or ``PureDP`` (its ``epsilon``).
    """
    size = (candidate_grid(per_octave=RANGE_GRID_PER_OCTAVE).size if grid_size is None
            else int(grid_size))
    stages = {k: _epsilon_needed(n=n, candidates=c, gap=0.5, confidence=confidence)
              for k, c in _stage_candidates(size).items()}
    if notion is ZCDP:
        # The stage whose need is largest relative to its share sets the total.
        return ZCDP(p * max(e * e / 8 / float(RANGE_SHARES[k]) for k, e in stages.items()))
    if notion is PureDP:
        return PureDP(p * max(e / float(RANGE_SHARES[k]) for k, e in stages.items()))
    raise TypeError(f"notion must be ZCDP or PureDP; got {notion!r}")


def norm_budget_needed(*, n: int, quantile: float, notion: type = ZCDP,
                       confidence: float = 3.0) -> Budget:
    """What :func:`private_norm_bound` needs to land within ``min(quantile, 1 -
    quantile) * n`` ranks of its target (public quantities only)."""
    epsilon = _epsilon_needed(n=n, candidates=64 * NORM_GRID_OCTAVES + 1,
                              gap=min(quantile, 1 - quantile), confidence=confidence)
    if notion is ZCDP:
        return ZCDP(epsilon * epsilon / 8)
    if notion is PureDP:
        return PureDP(epsilon)
    raise TypeError(f"notion must be ZCDP or PureDP; got {notion!r}")


def private_ranges(
    X: np.ndarray, *, budget: Budget, rng: np.random.Generator, width: float = RANGE_WIDTH,
    candidates: np.ndarray | None = None,
) -> PrivateRanges:
    """Choose ``[lo_j, hi_j]`` for every column privately: ``median +- width * MAD``.

    Three exponential-mechanism quantiles per column, all at the middle rank, where the
    score separates the data from the empty candidates beyond it best:

    1. the cell of the geometric grid (any magnitude) that holds the median;
    2. a refinement: the median's cell again among ``3 REFINE_POINTS`` equal cells
       spanning the first cell and one cell's width either side; its midpoint is the
       centre ``m'``. A column at ``300 +- 0.5`` gets a centre resolved to its spread,
       not to the 4 % steps of the geometric grid near 300;
    3. the cell of the positive grid holding the median absolute deviation
       ``median |x - m'|``, whose geometric midpoint is ``s``.

    Cells are scored, not points (:func:`quantile_cell_scores`).

    The range is ``m' +- width * s``. A column with more than half its values equal to
    ``m'`` (a binary column, say) gets a tiny ``s``; its values then map to ``{-1, 0, 1}``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        The private records.
    budget : ZCDP, PureDP or ApproxDP
        What all ``3 p`` quantiles together may cost, split equally over columns and by
        :data:`RANGE_SHARES` over stages. Under ``ZCDP(rho)`` a stage with share ``r``
        gets the largest ``epsilon`` with ``epsilon**2 / 8 <= r``; under ``PureDP(eps)``
        or ``ApproxDP(eps, delta)`` it gets that share of ``eps`` (``delta`` unused).
    rng : RandomSource, None, "secure", int or numpy.random.Generator
        Source of the random words (a fit passes its context's ``source``).
    width : float, default=RANGE_WIDTH
        Public; median absolute deviations on each side.
    candidates : ndarray, optional
        A public, sorted candidate grid for the median and the MAD;
        ``candidate_grid(per_octave=RANGE_GRID_PER_OCTAVE)`` by default.

    Privacy
    -------
    ``3 p`` exponential mechanisms with score sensitivity 1 (:func:`quantile_cell_scores`),
    composed sequentially (each stage's grid depends on released values only): ``budget``
    under either neighbouring relation. The grids, ``width`` and ``n`` are public.
    """
    if isinstance(width, bool) or not isinstance(width, (int, float)) or not (
        math.isfinite(width) and width > 0
    ):
        raise ValueError(f"width must be a finite number > 0; got {width!r}")
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    grid = (candidate_grid(per_octave=RANGE_GRID_PER_OCTAVE) if candidates is None
            else np.asarray(candidates, dtype=float))
    positive = grid[grid > 0]
    rng = RandomSource.of(rng)  # one stream for all 3 p selections
    if isinstance(budget, ZCDP):
        rho = exact_cost(budget, ZCDP)[0] / p
        epsilons = {k: epsilon_for_zcdp(rho * share) for k, share in RANGE_SHARES.items()}
    elif isinstance(budget, (PureDP, ApproxDP)):
        epsilon = Fraction(budget.epsilon) / p
        epsilons = {k: _float_below(epsilon * share) for k, share in RANGE_SHARES.items()}
    else:
        raise TypeError(
            f"budget for private ranges must be ZCDP, PureDP or ApproxDP; got {budget!r}"
        )
    if not all(e > 0 for e in epsilons.values()):
        raise ValueError(f"the bound budget {budget} is too small to choose ranges")
    fractions = np.linspace(-1.0, 2.0, 3 * REFINE_POINTS + 1)
    lower = np.empty(p)
    upper = np.empty(p)
    for j in range(p):
        column = np.sort(X[:, j])
        lo, hi = private_quantile_cell(column, 0.5, edges=grid, epsilon=epsilons["median"],
                                       rng=rng)
        # The refinement grid spans the chosen cell and one cell's width either side.
        lo, hi = private_quantile_cell(column, 0.5, edges=lo + (hi - lo) * fractions,
                                       epsilon=epsilons["refine"], rng=rng)
        centre = (lo + hi) / 2
        deviations = np.sort(np.abs(column - centre))
        lo, hi = private_quantile_cell(deviations, 0.5, edges=positive,
                                       epsilon=epsilons["spread"], rng=rng)
        half = width * math.sqrt(lo * hi)
        lower[j], upper[j] = centre - half, centre + half
        if not upper[j] > lower[j]:
            # A spread too small to separate from the centre in floating point.
            lower[j] = math.nextafter(centre, -math.inf)
            upper[j] = math.nextafter(centre, math.inf)
    return PrivateRanges(lower=lower, upper=upper, budget=budget, epsilons=epsilons,
                         width=float(width))


@dataclass(frozen=True)
class PrivateNormBound:
    """A row-norm clipping bound chosen privately, and what it cost.

    Attributes
    ----------
    bound : float
        The released bound ``B`` (a grid point in ``(0, cap]``).
    cap : float
        The public largest row norm (every row is known to lie in a ball of this radius).
    quantile : float
        The target share of rows with norm below ``B``.
    epsilon : float
        The exponential mechanism's ``epsilon``.
    budget : Budget
        What the choice was charged.
    """

    bound: float
    cap: float
    quantile: float
    epsilon: float
    budget: Budget

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "private row-norm quantile (exponential mechanism)",
            "bound": self.bound,
            "cap": self.cap,
            "quantile": self.quantile,
            "epsilon": self.epsilon,
            "budget": self.budget.to_dict(),
            "score_sensitivity": QUANTILE_SCORE_SENSITIVITY,
        }


#: Octaves below the public cap that :func:`private_norm_bound` considers.
NORM_GRID_OCTAVES = 8


def private_norm_bound(
    X: np.ndarray, *, cap: float, budget: Budget, quantile: float, rng: np.random.Generator,
) -> PrivateNormBound:
    """Choose an l2 clipping bound near the ``quantile`` of the row norms, privately.

    The candidates are ``cap * 2**(-k / 64)`` for ``0 <= k <= 64 * NORM_GRID_OCTAVES``: a
    public grid that ends at the public ``cap`` (for records in a box ``[-b, b]``,
    ``cap = ||b||_2``). Ending the grid at the cap matters: the candidates above the
    largest row all score alike, and an unbounded grid would put so many of them there
    that the mechanism would choose one far above the data with high probability.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        The private records, each of norm at most ``cap``.
    cap : float
        Public, finite and positive.
    budget : ZCDP, PureDP or ApproxDP
        ``ZCDP(rho)`` gives the largest ``epsilon`` with ``epsilon**2 / 8 <= rho``;
        ``PureDP(eps)`` / ``ApproxDP(eps, delta)`` give ``eps`` (``delta`` unused).
    quantile : float in (0, 1)
    rng : RandomSource, None, "secure", int or numpy.random.Generator
        Source of the random words (a fit passes its context's ``source``).

    Privacy
    -------
    One exponential mechanism with score sensitivity 1 under either neighbouring
    relation (:func:`quantile_scores`): ``budget``. ``cap``, the grid, ``quantile`` and
    ``n`` are public.
    """
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float)) or not (
        0 < quantile < 1
    ):
        raise ValueError(f"quantile must be a number in (0, 1); got {quantile!r}")
    if not (math.isfinite(cap) and cap > 0):
        raise ValueError(f"cap must be a finite number > 0; got {cap!r}")
    if isinstance(budget, ZCDP):
        epsilon = epsilon_for_zcdp(exact_cost(budget, ZCDP)[0])
    elif isinstance(budget, (PureDP, ApproxDP)):
        epsilon = _float_below(Fraction(budget.epsilon))
    else:
        raise TypeError(
            f"budget for a private norm bound must be ZCDP, PureDP or ApproxDP; got {budget!r}"
        )
    if not epsilon > 0:
        raise ValueError(f"the norm-bound budget {budget} is too small")
    steps = np.arange(64 * NORM_GRID_OCTAVES, -1, -1)
    grid = cap * np.exp2(-steps / 64.0)
    grid[-1] = cap
    norms = np.sort(np.sqrt(np.einsum("ij,ij->i", X, X)))
    bound = private_quantile(norms, quantile, candidates=grid, epsilon=epsilon, rng=rng)
    return PrivateNormBound(bound=bound, cap=float(cap), quantile=float(quantile),
                            epsilon=epsilon, budget=budget)


def _float_below(value: Fraction) -> float:
    result = float(value)
    if Fraction(result) > value:
        result = math.nextafter(result, 0.0)
    return result
