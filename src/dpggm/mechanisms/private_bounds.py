"""Clipping ranges and a row-norm bound chosen privately, from counts.

A declared bound is the weakest link of a private covariance release: too small and most
rows are clipped (the estimate is of the clipped data), too large and the noise, which
scales with the bound squared, drowns the signal. When no bound can be declared from
domain knowledge, these mechanisms spend a stated budget to choose one.

Every choice here is an exponential mechanism over the cells of a *public* grid, scored by
how far the cell is, in ranks, from a target rank (Smith 2011, section 3; here discretised
and on cells). A score needs only the number of values below each edge of the grid -- a
histogram -- never the sorted values: the counts of any number of blocks, files or Dask
partitions are added, and the mechanism is the same whether the data were in memory or
streamed (:func:`cell_scores`). The functions that take raw values (:func:`private_ranges`,
:func:`private_norm_bound`, :func:`quantile_cell_scores`) count first and then call the
count-based mechanisms.

Per column ``j`` (:class:`RangeStages`):

1. the cell of a geometric grid (any magnitude, both signs) that holds the median;
2. a refinement: the median's cell among ``3 * REFINE_POINTS`` equal cells spanning the
   first cell and one cell's width either side; its midpoint is the center ``m_j``. Both
   center stages add a cell's count to its rank score (:data:`STAGE_COUNT_WEIGHTS`), so
   that a column split about 50/50 between two values is centered on one of them rather
   than in the empty cells between (most of them near 0 on a grid of every magnitude);
3. the cell of a positive geometric grid (:data:`SPREAD_PER_OCTAVE` per octave) that holds
   the median of the deviations ``|x - m_j|`` not tied with the center (within ``tau_j``,
   half the refinement's cell width, a released quantity; :func:`spread_target`): the
   median absolute deviation of a continuous column, the distance to the nearest levels
   of an ordinal, binary or heavily tied one -- when most of a Likert item answers "6",
   the plain MAD is 0 and every other answer would be clipped onto one value.

How each column's share is split among the stages, and how much the stages need, are
public functions of ``n`` and the budget (:func:`range_shares`,
:func:`stage_epsilons_needed`); the plan states which tied columns keep their levels
(:func:`kept_untied_share`) and refuses ranges that cannot locate their columns
(:func:`ranges_locate_columns`).

The range is ``m_j +- width * s_j``; a record is mapped to ``z_j = (clip(x_j) - m_j) / (width
s_j)`` in ``[-1, 1]``: a function of released values only (post-processing), and a diagonal
rescaling leaves the conditional-independence graph unchanged. The row-norm bound is the
cell edge nearest the ``quantile`` of the rescaled rows' norms on a public grid ending at
``sqrt(p)`` (:func:`choose_norm_bound`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpggm.mechanisms.noise import (
    exponential_mechanism,
    exponential_mechanisms,
    selection_epsilon,
)
from dpggm.mechanisms.random import RandomSource
from dpggm.privacy.budgets import ZCDP, ApproxDP, Budget, PureDP, exact_cost, float_at_most
from dpggm.privacy.calibration import EXPONENTIAL_MECHANISM_ZCDP, epsilon_for_zcdp

__all__ = [
    "NORM_GRID_OCTAVES",
    "QUANTILE_SCORE_SENSITIVITY",
    "RANGE_STAGES",
    "RANGE_WIDTH",
    "STAGE_COUNT_WEIGHTS",
    "SPREAD_PER_OCTAVE",
    "UNTIED_SHARE",
    "PrivateNormBound",
    "PrivateRanges",
    "RangeStages",
    "candidate_grid",
    "cell_scores",
    "choose_cell",
    "choose_norm_bound",
    "exponential_epsilon",
    "norm_budget_needed",
    "norm_edges",
    "private_norm_bound",
    "private_quantile",
    "private_quantile_cell",
    "private_ranges",
    "quantile_cell_scores",
    "quantile_scores",
    "kept_untied_share",
    "range_budget_needed",
    "range_epsilons",
    "range_shares",
    "ranges_locate_columns",
    "score_sensitivity",
    "spread_target",
    "stage_epsilons_needed",
    "target_rank",
]

#: Sensitivity of every rank score here (:func:`cell_scores`, :func:`quantile_scores`).
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


def target_rank(n: int, q: float) -> int:
    """The integer rank ``round(q n)`` a quantile's score aims at.

    An integer target keeps every score an exact integer: a float ``q n`` would let
    rounding push a neighbour's score change past 1.
    """
    return int(round(q * n))


def cell_scores(below: np.ndarray, target: Any, count_weight: float = 0.0) -> np.ndarray:
    """Scores of the cells ``[e_k, e_{k+1})`` of a grid from the counts
    ``below[k] = #{values < e_k}`` (a matrix: one row of counts and one target per column
    of data): 0 when the target rank lies between the counts at the
    cell's two ends, otherwise minus the distance from the target to the nearer count;
    plus ``count_weight`` times the number of values in the cell.

    Sensitivity 1 (:data:`QUANTILE_SCORE_SENSITIVITY`) under either neighbouring relation
    whenever, between neighbours, every count and the target each move by at most 1 and a
    count and the target never move in opposite directions -- as for the counts of one
    column with target ``round(q n)`` (replacing a record moves a count by at most one and
    leaves ``n``; adding one moves counts and target up, or not at all), and for the
    deviations' counts with the target of :func:`spread_target`. The maximum of such terms
    and 0 then moves by at most 1. A cell's count moves by at most 1 too (one record leaves
    or enters it), so with ``count_weight`` the score's sensitivity is
    ``1 + count_weight`` (:func:`score_sensitivity`).

    The count term breaks the ties of a *plateau*: when the target rank falls between two
    groups of equal values (a 0/1 column split about 50/50), every empty cell between them
    scores 0 like the cells that hold the data, and on a grid that spans every magnitude
    most of those empty cells lie close to zero.
    """
    below = np.asarray(below, dtype=np.int64)
    lo, hi = below[..., :-1], below[..., 1:]
    # One target per row for a matrix of counts (one row per column of data).
    target = np.asarray(target, dtype=np.int64)
    target = target[..., None] if target.ndim else target
    scores = -np.maximum(0, np.maximum(lo - target, target - hi)).astype(float)
    if count_weight:
        scores += count_weight * (hi - lo)
    return scores


def score_sensitivity(count_weight: float = 0.0) -> float:
    """The sensitivity of :func:`cell_scores` with ``count_weight``."""
    return QUANTILE_SCORE_SENSITIVITY + count_weight


def choose_cell(
    below: np.ndarray, target: int, *, epsilon: float, rng: Any, count_weight: float = 0.0,
) -> int:
    """The index ``k`` of the cell ``[e_k, e_{k+1})`` chosen by the exponential mechanism
    on :func:`cell_scores` (sensitivity :func:`score_sensitivity`).

    Privacy
    -------
    ``epsilon``-DP and ``epsilon**2 / 8``-zCDP under either relation when the counts meet
    the condition of :func:`cell_scores`. Only the index is released.
    """
    return exponential_mechanism(
        cell_scores(below, target, count_weight), sensitivity=score_sensitivity(count_weight),
        epsilon=epsilon, rng=rng,
    )


def quantile_scores(sorted_values: np.ndarray, q: float, *, candidates: np.ndarray) -> np.ndarray:
    """``-| #{i : x_i < r} - round(q n) |`` for every candidate point ``r``.

    Changing one record moves the count by at most 1; adding or removing one moves the
    count and the target rank each by at most 1, in the same direction, so the score moves
    by at most 1 (:data:`QUANTILE_SCORE_SENSITIVITY`) under either relation.
    """
    target = target_rank(sorted_values.shape[0], q)
    below = np.searchsorted(sorted_values, candidates, side="left")
    return -np.abs(below - target).astype(float)


def private_quantile(
    sorted_values: np.ndarray, q: float, *, candidates: np.ndarray, epsilon: float,
    rng: Any,
) -> float:
    """One candidate point chosen near the ``q``-quantile of ``sorted_values``.

    Privacy
    -------
    The exponential mechanism with score sensitivity 1 (:func:`quantile_scores`):
    ``epsilon``-DP and ``epsilon**2 / 8``-zCDP under either neighbouring relation.
    """
    scores = quantile_scores(sorted_values, q, candidates=candidates)
    index = exponential_mechanism(
        scores, sensitivity=QUANTILE_SCORE_SENSITIVITY, epsilon=epsilon, rng=rng
    )
    return float(candidates[index])


def quantile_cell_scores(sorted_values: np.ndarray, q: float, *, edges: np.ndarray) -> np.ndarray:
    """:func:`cell_scores` of the ``q``-quantile of ``sorted_values`` on the cells between
    consecutive ``edges``.

    Scoring cells rather than points matters when the data are concentrated: a column at
    ``300 +- 0.5`` can fall inside a single cell of a grid built for every magnitude, and
    then every *point* of the grid is equally far (``n / 2`` ranks) from the median while
    the cell holding it scores 0.
    """
    below = np.searchsorted(sorted_values, edges, side="left")
    return cell_scores(below, target_rank(sorted_values.shape[0], q))


def private_quantile_cell(
    sorted_values: np.ndarray, q: float, *, edges: np.ndarray, epsilon: float,
    rng: Any,
) -> tuple[float, float]:
    """One cell ``(edges[k], edges[k + 1])`` chosen to hold the ``q``-quantile.

    Privacy
    -------
    The exponential mechanism with score sensitivity 1 (:func:`cell_scores`):
    ``epsilon``-DP and ``epsilon**2 / 8``-zCDP under either neighbouring relation.
    """
    below = np.searchsorted(sorted_values, edges, side="left")
    index = choose_cell(below, target_rank(sorted_values.shape[0], q), epsilon=epsilon,
                        rng=rng)
    return float(edges[index]), float(edges[index + 1])


def exponential_epsilon(budget: Budget) -> float:
    """The ``epsilon`` of one exponential mechanism that costs at most ``budget``
    (:func:`~dpggm.mechanisms.noise.selection_epsilon`, the one map).

    ``ZCDP(rho)``: the largest float ``epsilon`` with ``epsilon**2 / 8 <= rho`` exactly (the
    exponential mechanism is ``epsilon**2 / 8``-zCDP, Cesar & Rogers 2021). ``PureDP(eps)``
    (or ``ApproxDP(eps, delta)``, ``delta`` unused): the largest float ``<= eps``.
    """
    return selection_epsilon(budget, EXPONENTIAL_MECHANISM_ZCDP)


# ----------------------------------------------------------------------- per-column ranges

#: The three stages of a private range, in order.
RANGE_STAGES = ("median", "refine", "spread")

#: Weight of a cell's count in the score of each stage (:func:`cell_scores`): the center's
#: stages prefer cells that hold values, so that the center of a column split about 50/50
#: between two values lands on one of them rather than in the empty cells between.
STAGE_COUNT_WEIGHTS = {"median": 1.0, "refine": 1.0, "spread": 0.0}

#: Points per octave of the grid the median is chosen from. Coarse on purpose: the
#: refinement stage resolves the center, and every candidate beyond the data costs the
#: mechanism accuracy.
RANGE_GRID_PER_OCTAVE = 16

#: Points per octave of the spread's grid (from ``2**-20`` to ``2**40``): 240 cells of
#: 19 %. A range needs no finer scale (its width of 5 spreads is itself a rule of thumb),
#: and the fewer the cells, the fewer the empty ones between a tied column's center and
#: its next level, each of which the mechanism might pick.
SPREAD_PER_OCTAVE = 4

#: The untied share a private spread is planned to resolve: a column whose values away
#: from its center hold at least this share of the rows (a Likert item with up to 75 % of
#: its answers on one level, a 0/1 flag split 75/25) keeps its levels apart
#: (:func:`range_budget_needed`, :func:`kept_untied_share`). Smaller shares cost more:
#: the budget a spread needs grows like ``1 / share**2``.
UNTIED_SHARE = 0.2

#: Cells of the refinement grid per cell of the first median's grid.
REFINE_POINTS = 64

#: Public multiple of the median absolute deviation on each side of the median: for a
#: normal column ``5 MAD`` is ``3.37`` standard deviations, which clips 0.04 % per side.
RANGE_WIDTH = 5.0

_REFINE_FRACTIONS = np.linspace(-1.0, 2.0, 3 * REFINE_POINTS + 1)
_MEDIAN_GRID = candidate_grid(per_octave=RANGE_GRID_PER_OCTAVE)
_MEDIAN_GRID.setflags(write=False)
_SPREAD_GRID = candidate_grid(per_octave=SPREAD_PER_OCTAVE)
_SPREAD_GRID = _SPREAD_GRID[_SPREAD_GRID > 0]
_SPREAD_GRID.setflags(write=False)


@dataclass(frozen=True)
class RangeStages:
    """The public grids of the three range stages, and their mechanisms on counts.

    Parameters
    ----------
    epsilons : dict
        The exponential mechanism's ``epsilon`` for ``"median"``, ``"refine"`` and
        ``"spread"`` (the same for every column).
    width : float
        Public multiple of the spread on each side of the center.
    median_edges : ndarray, optional
        The sorted geometric grid of stage 1 (default
        ``candidate_grid(per_octave=RANGE_GRID_PER_OCTAVE)``; when given, its positive
        part is also the grid of stage 3, otherwise that is the positive part of
        ``candidate_grid(per_octave=SPREAD_PER_OCTAVE)``).

    Every ``choose_*`` method takes, per column, the counts ``below[j, k] = #{values <
    edges_j[k]}`` and the number of values counted, and releases one cell per column.
    """

    epsilons: dict[str, float]
    width: float = RANGE_WIDTH
    median_edges: np.ndarray | None = None
    spread_edges: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.width, bool) or not isinstance(self.width, (int, float)) or not (
            math.isfinite(self.width) and self.width > 0
        ):
            raise ValueError(f"width must be a finite number > 0; got {self.width!r}")
        if self.median_edges is None:
            edges = _MEDIAN_GRID
            spread = _SPREAD_GRID
        else:
            edges = np.asarray(self.median_edges, dtype=float)
            spread = edges[edges > 0]
        object.__setattr__(self, "median_edges", edges)
        # The candidates for the spread: a positive geometric grid.
        object.__setattr__(self, "spread_edges", spread)

    @staticmethod
    def refine_edges(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """Per column, ``3 * REFINE_POINTS`` equal cells spanning the chosen cell
        ``[lower, upper)`` and one cell's width either side (shape ``(p, 193)``)."""
        lower = np.asarray(lower, dtype=float)[:, None]
        upper = np.asarray(upper, dtype=float)[:, None]
        return lower + (upper - lower) * _REFINE_FRACTIONS[None, :]

    @staticmethod
    def tie_radius(refine_lower: np.ndarray, refine_upper: np.ndarray) -> np.ndarray:
        """Half the width of the chosen refinement cell: values at most this far from the
        center (every value inside the cell) count as tied with it (stage 3 leaves them
        out)."""
        return (np.asarray(refine_upper) - np.asarray(refine_lower)) / 2

    def _choose(self, stage: str, below: np.ndarray, targets: np.ndarray,
                rng: Any) -> np.ndarray:
        """One cell per column; ``rng=None`` is the exact, non-private choice (the first
        highest-scoring cell), for reference runs."""
        weight = STAGE_COUNT_WEIGHTS[stage]
        scores = cell_scores(below, targets, weight)
        if rng is None:
            return np.argmax(scores, axis=1).astype(np.int64)
        # Every column's selection at once, on one stream in column order: the same cells
        # as one choose_cell per column.
        return exponential_mechanisms(scores, sensitivity=score_sensitivity(weight),
                                      epsilon=self.epsilons[stage], rng=RandomSource.of(rng))

    def choose_median(self, below: np.ndarray, counted: np.ndarray,
                      rng: Any) -> tuple[np.ndarray, np.ndarray]:
        """Stage 1: per column, the cell ``(lower, upper)`` of :attr:`median_edges`."""
        index = self._choose("median", below, _targets(counted), rng)
        return self.median_edges[index], self.median_edges[index + 1]

    def choose_refined(self, edges: np.ndarray, below: np.ndarray, counted: np.ndarray,
                       rng: Any) -> tuple[np.ndarray, np.ndarray]:
        """Stage 2: per column, the cell of its refinement grid ``edges[j]``."""
        index = self._choose("refine", below, _targets(counted), rng)
        rows = np.arange(edges.shape[0])
        return edges[rows, index], edges[rows, index + 1]

    def choose_spread(self, below: np.ndarray, tied: np.ndarray, counted: np.ndarray,
                      rng: Any) -> np.ndarray:
        """Stage 3: per column, the geometric midpoint of the cell of :attr:`spread_edges`
        that holds the deviation ``|x - center|`` of rank ``tied + round((m - tied) / 2)``:
        the median of the deviations that are not tied with the center (``tied[j]`` of
        the ``m`` values lie within the tie radius): the median absolute deviation of a
        continuous column, the distance to the nearest levels of a heavily tied one.

        ``below[j, k]`` counts the deviations below ``spread_edges[k]``. See
        :func:`spread_target` for the score's sensitivity.
        """
        targets = spread_target(np.asarray(counted), np.asarray(tied, dtype=np.int64))
        index = self._choose("spread", np.asarray(below, dtype=np.int64), targets, rng)
        edges = self.spread_edges
        return np.sqrt(edges[index] * edges[index + 1])

    def ranges(self, center: np.ndarray, spread: np.ndarray, budget: Budget) -> PrivateRanges:
        """The released ranges ``center +- width * spread``."""
        half = self.width * np.asarray(spread, dtype=float)
        lower, upper = center - half, center + half
        # A spread too small to separate from the center in floating point.
        flat = ~(upper > lower)
        lower[flat] = np.nextafter(center[flat], -np.inf)
        upper[flat] = np.nextafter(center[flat], np.inf)
        return PrivateRanges(lower=lower, upper=upper, budget=budget,
                             epsilons=dict(self.epsilons), width=float(self.width))


def spread_target(counted: np.ndarray, tied: np.ndarray) -> np.ndarray:
    """The spread's target rank ``tied + round((m - tied) / 2)`` per column: the median of
    the deviations not tied with the center.

    A column with many values tied with the center (a binary flag, a Likert item piled on
    one answer) has a median absolute deviation inside the ties, or just past them: a
    range built on it would clip every other level onto one value. Aiming at the middle of
    the *untied* deviations keeps its target ``(m - tied) / 2`` ranks from both kinds of
    empty cells a mechanism may wrongly pick -- those between the ties and the next level,
    and those beyond the data -- while a continuous column (few ties) keeps its median
    absolute deviation. (Aiming at the first untied rank, as an earlier version did, left
    every empty cell between the center and the next level scoring as well as the right
    one: the range of a Likert item with 78 % of its answers on one level was ``5 +-
    0.005``.)

    Privacy: replacing a record moves ``tied`` by at most 1 and ``round((m - tied) / 2)``
    the other way by 0 or 1 (``m`` is fixed), so the target moves by at most 1, in the
    direction of ``tied``. A record that leaves the ties moves to a larger deviation: it
    lowers some counts below edges by 1 and raises none, in that same direction (and one
    that joins them the reverse); a record that stays tied, or untied, leaves the target
    and moves each count by at most 1. Adding a record raises the target by 0 or 1 and
    every count by 0 or 1. Either way no count and the target move apart:
    :func:`cell_scores` keeps sensitivity 1 under either relation.
    """
    counted = np.asarray(counted, dtype=np.int64)
    tied = np.asarray(tied, dtype=np.int64)
    return tied + _targets(counted - tied)


def _targets(counted: np.ndarray) -> np.ndarray:
    """``target_rank(m, 0.5)`` for every count ``m``: ``round(m / 2)``, halves to even, as
    Python's ``round`` (exact for every count below ``2**53``)."""
    return np.rint(np.asarray(counted, dtype=np.int64) / 2).astype(np.int64)


def _stage_candidates(grid_size: int | None = None) -> dict[str, int]:
    median = _MEDIAN_GRID.size if grid_size is None else int(grid_size)
    spread = _SPREAD_GRID.size if grid_size is None else (int(grid_size) - 1) // 2
    return {"median": median - 1, "refine": 3 * REFINE_POINTS, "spread": spread - 1}


def _epsilon_needed(*, n: int, candidates: int, gap: float, confidence: float) -> float:
    """The ``epsilon`` with which a quantile's exponential mechanism lands, with
    probability about ``1 - e**-confidence``, fewer than ``gap * n`` ranks from its target.

    It lands within ``(2 / epsilon) (ln(candidates) + confidence)`` ranks. The candidates
    beyond the data all score alike, and a grid that must serve any unit has many of
    them, so small samples need a larger ``epsilon`` than a quantile's variance suggests.
    """
    return 2.0 * (math.log(candidates) + confidence) / (gap * n)


def stage_epsilons_needed(*, n: int, confidence: float = 3.0, untied_share: float = UNTIED_SHARE,
                          locate: bool = False, columns: int = 1) -> dict[str, float]:
    """The ``epsilon`` each range stage needs, from public quantities only.

    The median and its refinement land within ``n / 2`` ranks of the middle, inside the
    column; their scores count the values in a cell too (:data:`STAGE_COUNT_WEIGHTS`), so
    that on a column with more than half of its values on one level the cell holding that
    level leads every empty cell by more than ``n / 2`` (a refinement that missed it by one
    empty cell would count no ties and shrink the range onto that cell). A center that
    misses its column is a range far from the data, which squeezes the column onto a point
    and upsets the inference of every pair (measured: one such column of 30 left the 90 %
    intervals of all pairs covering nothing), so with ``locate=False`` the center stages
    aim at every one of ``columns`` columns landing with probability ``1 -
    e**-confidence`` (``confidence + ln(columns)`` a column, a union bound).

    ``locate=False`` (what the plan aims at): the spread lands within ``untied_share * n /
    2`` ranks of its target, the middle of the untied deviations (:func:`spread_target`),
    so that a column whose values off its center hold at least ``untied_share`` of the rows
    keeps its next levels inside the range -- the empty cells between the ties and those
    levels, and those beyond the data, each score ``(m - tied) / 2`` below the target.
    ``locate=True`` (below this the plan is refused): the spread lands within ``n / 2``
    ranks of its target, inside the column.

    Each with probability about ``1 - e**-confidence`` (a column).
    """
    gaps = {"median": 0.5, "refine": 0.5, "spread": 0.5 if locate else untied_share / 2}
    center = confidence if locate else confidence + math.log(max(int(columns), 1))
    sure = {"median": center, "refine": center, "spread": center}
    # A score of sensitivity 1 + w needs 1 + w times the epsilon for the same ranks.
    return {k: _epsilon_needed(n=n, candidates=c, gap=gaps[k], confidence=sure[k])
            * score_sensitivity(STAGE_COUNT_WEIGHTS[k])
            for k, c in _stage_candidates().items()}


def _cost(epsilon: float, notion: type) -> float:
    if notion is ZCDP:
        return epsilon * epsilon / 8
    if notion is PureDP:
        return epsilon
    raise TypeError(f"notion must be ZCDP or PureDP; got {notion!r}")


def range_shares(*, n: int, per_column: float, notion: type = ZCDP,
                 columns: int = 1) -> dict[str, Fraction]:
    """Shares of one column's range budget ``per_column`` (zCDP ``rho``, or pure
    ``epsilon``) for the three stages, from public quantities only (``n``, the budget).
    With ``F`` the needs the plan aims at and ``L`` those of locating the column
    (:func:`stage_epsilons_needed` without and with ``locate``):

    * ``per_column >= F_median + F_refine + F_spread``: in proportion to ``F``, so that each
      stage meets its need with the same margin;
    * down to ``F_median + F_refine + L_spread``: the median and the refinement get
      exactly ``F``, the spread all the rest (the plan states which tied columns it keeps
      apart, :func:`kept_untied_share`);
    * down to ``L_median + L_refine + L_spread``: the spread gets ``L_spread``, the median
      and the refinement the rest in proportion to ``F`` (each at least its ``L``);
    * less (the plan refuses it, :func:`ranges_locate_columns`): in proportion to ``L``.

    The shares are continuous in ``per_column``. The median's and refinement's shares are
    multiples of ``2**-30``, the spread takes the remainder: they add up to exactly 1.
    """
    full = {k: _cost(e, notion)
            for k, e in stage_epsilons_needed(n=n, columns=columns).items()}
    low = {k: _cost(e, notion) for k, e in stage_epsilons_needed(n=n, locate=True).items()}
    head = full["median"] + full["refine"]
    c = float(per_column)
    if c >= head + full["spread"]:
        weights = (full["median"], full["refine"], full["spread"])
    elif c >= head + low["spread"]:
        weights = (full["median"], full["refine"], c - head)
    elif c >= sum(low.values()):
        scale = (c - low["spread"]) / head
        weights = (scale * full["median"], scale * full["refine"], low["spread"])
    else:
        weights = (low["median"], low["refine"], low["spread"])
    total = sum(weights)
    unit = 1 << 30
    median = Fraction(max(1, math.floor(weights[0] / total * unit)), unit)
    refine = Fraction(max(1, math.floor(weights[1] / total * unit)), unit)
    return {"median": median, "refine": refine, "spread": 1 - median - refine}


def range_epsilons(budget: Budget, p: int, *, n: int) -> dict[str, float]:
    """The per-stage ``epsilon`` of :func:`private_ranges` for ``budget`` over ``p``
    columns of ``n`` records: each stage gets its :func:`range_shares` of ``budget / p``,
    through :func:`exponential_epsilon` (rounded toward less privacy loss)."""
    if isinstance(budget, ZCDP):
        rho = exact_cost(budget, ZCDP)[0] / p
        shares = range_shares(n=n, per_column=float(rho), notion=ZCDP, columns=p)
        epsilons = {k: epsilon_for_zcdp(rho * share) for k, share in shares.items()}
    elif isinstance(budget, (PureDP, ApproxDP)):
        epsilon = Fraction(budget.epsilon) / p
        shares = range_shares(n=n, per_column=float(epsilon), notion=PureDP, columns=p)
        epsilons = {k: float_at_most(epsilon * share) for k, share in shares.items()}
    else:
        raise TypeError(
            f"budget for private ranges must be ZCDP, PureDP or ApproxDP; got {budget!r}"
        )
    if not all(e > 0 for e in epsilons.values()):
        raise ValueError(f"the bound budget {budget} is too small to choose ranges")
    return epsilons


def range_budget_needed(*, n: int, p: int, notion: type = ZCDP, locate: bool = False,
                        keep_ties: bool = True) -> Budget:
    """What :func:`private_ranges` needs on ``p`` columns of ``n`` records for every stage
    to meet :func:`stage_epsilons_needed` (with ``locate=True``, to find the columns at
    all) under :func:`range_shares` (public quantities only).

    ``keep_ties=False`` (ignored with ``locate=True``): the centers as planned, but the
    spread only located (:func:`range_shares`' second regime) -- what a continuous column
    needs; the spread's further share keeps the levels of heavily tied columns apart.

    ``notion`` is ``ZCDP`` (the budget's ``rho``) or ``PureDP`` (its ``epsilon``).
    """
    needs = stage_epsilons_needed(n=n, locate=locate, columns=p)
    if not locate and not keep_ties:
        needs["spread"] = stage_epsilons_needed(n=n, locate=True, columns=p)["spread"]
    per_column = sum(_cost(e, notion) for e in needs.values())
    return ZCDP(p * per_column) if notion is ZCDP else PureDP(p * per_column)


def kept_untied_share(*, n: int, epsilon_spread: float, confidence: float = 3.0) -> float:
    """The smallest share of a column's values off its center with which its private
    spread, chosen with ``epsilon_spread``, lands past the ties with probability about
    ``1 - e**-confidence`` (the inverse of :func:`stage_epsilons_needed`'s spread need):
    a public figure of the plan. A Likert item with 78 % of its answers on one level has
    an untied share of 0.22; a 0/1 flag split 90/10, 0.1. ``inf`` without a budget."""
    if not epsilon_spread > 0:
        return math.inf
    return 4.0 * (math.log(_stage_candidates()["spread"]) + confidence) / (epsilon_spread * n)


def ranges_locate_columns(epsilons: dict[str, float], *, n: int) -> bool:
    """Whether every stage, with these ``epsilons``, lands inside its column with
    probability about ``1 - e**-3`` (:func:`stage_epsilons_needed` with ``locate=True``):
    below that a median may land anywhere on a grid that spans every magnitude."""
    need = stage_epsilons_needed(n=n, locate=True)
    # A relative slack for the rounding of the shares and of the epsilons (~1e-9).
    return all(epsilons.get(k, 0.0) >= need[k] * (1 - 1e-6) for k in RANGE_STAGES)


@dataclass(frozen=True)
class PrivateRanges:
    """Per-column ranges chosen privately, and what they cost.

    Attributes
    ----------
    lower, upper : ndarray of shape (p,)
        The released ranges (``upper > lower`` in every column).
    center, half_width : ndarray of shape (p,)
        ``(lower + upper) / 2`` (the private median) and ``(upper - lower) / 2``
        (``width`` times the private spread).
    budget : Budget
        The budget charged for all ``3 p`` quantiles.
    epsilons : dict
        The exponential mechanism's ``epsilon`` for each stage (``"median"``,
        ``"refine"``, ``"spread"``), the same for every column.
    width : float
        The public multiple of the spread on each side.
    declared : ndarray of bool, shape (p,), optional
        Columns whose range was declared (public, given by the caller: nothing was spent
        on them); ``None`` when none was.
    """

    lower: np.ndarray
    upper: np.ndarray
    budget: Budget
    epsilons: dict[str, float]
    width: float
    declared: np.ndarray | None = None

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

    def to_dict(self, columns: list[str] | None = None) -> dict[str, Any]:
        """The public record; with ``columns``, the declared ranges by column name."""
        record = {
            "kind": "private per-column ranges: median +- width * median absolute deviation "
                    "(or, for a column mostly tied with its median, the nearest untied "
                    "deviation; exponential-mechanism quantiles)",
            "width": self.width,
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "budget": self.budget.to_dict(),
            "epsilons": dict(self.epsilons),
            "score_sensitivity": QUANTILE_SCORE_SENSITIVITY,
        }
        if self.declared is not None and self.declared.any():
            index = np.flatnonzero(self.declared)
            names = ([str(columns[j]) for j in index] if columns is not None
                     else [int(j) for j in index])
            record["declared"] = {
                "note": "ranges declared by the caller (public; nothing spent on them)",
                "columns": names,
                "lower": self.lower[index].tolist(),
                "upper": self.upper[index].tolist(),
            }
            record["private_columns"] = int(self.declared.size - index.size)
        return record


def _sorted_counts(sorted_columns: list[np.ndarray], edges: np.ndarray) -> np.ndarray:
    """``below[j, k] = #{x_j < edges(j)[k]}`` from sorted columns; ``edges`` is one grid
    for every column or one row per column."""
    rows = [np.searchsorted(column, edges if edges.ndim == 1 else edges[j], side="left")
            for j, column in enumerate(sorted_columns)]
    return np.asarray(rows, dtype=np.int64)


def private_ranges(
    X: np.ndarray, *, budget: Budget, rng: Any, width: float = RANGE_WIDTH,
    candidates: np.ndarray | None = None,
) -> PrivateRanges:
    """Choose ``[lo_j, hi_j]`` for every column of an in-memory ``X`` privately:
    ``median +- width * spread`` (see the module documentation for the three stages).

    The same mechanisms run on streamed data through :class:`RangeStages` and counts
    gathered pass by pass; this function gathers the counts from ``X`` in memory.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        The private records.
    budget : ZCDP, PureDP or ApproxDP
        What all ``3 p`` quantiles together may cost, split equally over columns and by
        :func:`range_shares` over stages (:func:`range_epsilons`).
    rng : RandomSource, None, "secure", int or numpy.random.Generator
        The source of the mechanisms' random words (an ``int`` starts one stream for all
        the selections).
    width : float, default=RANGE_WIDTH
        Public; spreads on each side of the center.
    candidates : ndarray, optional
        A public, sorted grid for the median and the spread;
        ``candidate_grid(per_octave=RANGE_GRID_PER_OCTAVE)`` by default.

    Privacy
    -------
    ``3 p`` exponential mechanisms with score sensitivity 1 (:func:`cell_scores`),
    composed sequentially (each stage's grid depends on released values only): ``budget``
    under either neighbouring relation. The grids, ``width`` and ``n`` are public.
    """
    stages = RangeStages(epsilons={}, width=width, median_edges=candidates)
    rng = RandomSource.of(rng)  # one stream for all 3 p selections
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    stages = RangeStages(epsilons=range_epsilons(budget, p, n=n), width=width,
                         median_edges=stages.median_edges)
    counted = np.full(p, n, dtype=np.int64)
    columns = [np.sort(X[:, j]) for j in range(p)]
    lower, upper = stages.choose_median(_sorted_counts(columns, stages.median_edges),
                                        counted, rng)
    edges = stages.refine_edges(lower, upper)
    lower, upper = stages.choose_refined(edges, _sorted_counts(columns, edges), counted, rng)
    center = (lower + upper) / 2
    radius = stages.tie_radius(lower, upper)
    deviations = [np.sort(np.abs(X[:, j] - center[j])) for j in range(p)]
    below = _sorted_counts(deviations, stages.spread_edges)
    tied = np.array([np.searchsorted(d, r, side="right") for d, r in zip(deviations, radius)])
    spread = stages.choose_spread(below, tied, counted, rng)
    return stages.ranges(center, spread, budget)


# ---------------------------------------------------------------------------- norm bound


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


def norm_edges(cap: float) -> np.ndarray:
    """The public candidates of the norm bound: ``cap * 2**(-k / 64)`` for ``0 <= k <= 64
    NORM_GRID_OCTAVES``, ascending, the last exactly ``cap``."""
    if not (math.isfinite(cap) and cap > 0):
        raise ValueError(f"cap must be a finite number > 0; got {cap!r}")
    steps = np.arange(64 * NORM_GRID_OCTAVES, -1, -1)
    grid = cap * np.exp2(-steps / 64.0)
    grid[-1] = cap
    return grid


def _check_quantile(quantile: Any) -> float:
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float)) or not (
        0 < quantile < 1
    ):
        raise ValueError(f"quantile must be a number in (0, 1); got {quantile!r}")
    return float(quantile)


def choose_norm_bound(
    below: np.ndarray, n: int, *, cap: float, budget: Budget, quantile: float, rng: Any,
) -> PrivateNormBound:
    """The norm bound from the counts ``below[k] = #{rows with norm < norm_edges(cap)[k]}``
    of ``n`` rows: the grid point nearest, in ranks, to the ``quantile`` of the norms.

    Privacy
    -------
    One exponential mechanism with score sensitivity 1 under either neighbouring relation
    (:func:`quantile_scores`: the count moves by at most 1, in the direction of the target
    when ``n`` changes): ``budget``. ``cap``, the grid, ``quantile`` and ``n`` are public.
    """
    quantile = _check_quantile(quantile)
    epsilon = exponential_epsilon(budget)
    if not epsilon > 0:
        raise ValueError(f"the norm-bound budget {budget} is too small")
    grid = norm_edges(cap)
    scores = -np.abs(np.asarray(below, dtype=np.int64) - target_rank(n, quantile)).astype(float)
    index = exponential_mechanism(scores, sensitivity=QUANTILE_SCORE_SENSITIVITY,
                                  epsilon=epsilon, rng=rng)
    return PrivateNormBound(bound=float(grid[index]), cap=float(cap), quantile=quantile,
                            epsilon=epsilon, budget=budget)


def private_norm_bound(
    X: np.ndarray, *, cap: float, budget: Budget, quantile: float, rng: Any,
) -> PrivateNormBound:
    """Choose an l2 clipping bound near the ``quantile`` of the row norms of an in-memory
    ``X``, privately (:func:`choose_norm_bound` on its counts).

    The candidates end at the public ``cap`` (for records in a box ``[-b, b]``,
    ``cap = ||b||_2``). Ending the grid at the cap matters: the candidates above the
    largest row all score alike, and an unbounded grid would put so many of them there
    that the mechanism would choose one far above the data with high probability.

    Privacy
    -------
    As :func:`choose_norm_bound`: ``budget`` under either relation.
    """
    _check_quantile(quantile)
    norms = np.sort(np.sqrt(np.einsum("ij,ij->i", X, X)))
    below = np.searchsorted(norms, norm_edges(cap), side="left")
    return choose_norm_bound(below, norms.size, cap=cap, budget=budget, quantile=quantile,
                             rng=rng)
