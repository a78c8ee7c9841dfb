"""The main job in one estimator: a private conditional-dependence graph of raw data.

:class:`PrivateGraph` composes three private steps under one total budget, each checked
against one :class:`~dpggm.privacy.PrivacyAccountant` before it runs:

1. **bounds** (``bounds="auto"``): per-column ranges, private median +- 5 private MADs
   (:func:`dpggm.mechanisms.private_bounds.private_ranges`); every column is mapped onto
   ``[-1, 1]`` by its own range, so columns on very different scales are treated alike;
   then a private row-norm bound (:func:`~dpggm.mechanisms.private_bounds.private_norm_bound`)
   inside that box, since typical rows are far shorter than the box's corner;
2. **centring** (``center="private"``): a private mean of the bounded records, which are
   then centred and clipped again to a bound computed from released values;
3. **graph**: the recommended covariance release and graph solver (``method``) on the
   centred, rescaled records -- by default the Gaussian mechanism on the second moment
   and the graphical lasso with the noise-calibrated penalty ``alpha="auto"``.

Rescaling columns by positive constants changes neither the zero pattern of the precision
matrix nor the partial correlations, so the graph of the rescaled data is the graph of the
raw data; ``precision_`` and ``covariance_`` are mapped back to the raw units.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from dpggm.estimators._base import DPEstimator, check_budget, check_fraction, make_context
from dpggm.estimators._contract import BOUNDS, VECTOR, AnyOf, Interval, Options, fraction
from dpggm.estimators.data import as_matrix
from dpggm.exceptions import UnsupportedNeighborsError
from dpggm.mechanisms.additive import NoisePart, check_budget_range
from dpggm.mechanisms.bounds import Box, RowNorm, check_bounds, check_neighbors
from dpggm.mechanisms.private_bounds import (
    RANGE_WIDTH,
    PrivateNormBound,
    PrivateRanges,
    norm_budget_needed,
    private_norm_bound,
    private_ranges,
    range_budget_needed,
)
from dpggm.mechanisms.release import release_mean
from dpggm.mechanisms.sensitivity import (
    gram_l1_sensitivity,
    gram_l2_sensitivity,
    second_moment_entry_sensitivity,
    sum_l1_sensitivity,
    sum_l2_sensitivity,
)
from dpggm.privacy.accountant import PrivacyAccountant
from dpggm.privacy.budgets import (
    GDP,
    ZCDP,
    ApproxDP,
    Budget,
    NonPrivate,
    PureDP,
    budget_from_cost,
    exact_cost,
    scale_budget,
)
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA, PrivacyGuarantee

__all__ = [
    "GRAPH_METHODS",
    "PrivateGraph",
    "edge_table",
    "edges_csv_text",
    "edges_from_precision",
    "partial_correlation",
]

#: Graph methods :class:`PrivateGraph` can finish with.
GRAPH_METHODS = ("glasso", "pace")


def partial_correlation(precision: np.ndarray) -> np.ndarray:
    """``-Theta_ij / sqrt(Theta_ii Theta_jj)`` off the diagonal, 1 on it."""
    d = np.sqrt(np.abs(np.diag(precision)))
    d[d == 0] = 1.0
    out = -precision / np.outer(d, d)
    np.fill_diagonal(out, 1.0)
    return out


#: Share of ``bound_fraction`` that chooses the row-norm bound (the rest chooses ranges).
_NORM_SHARE = Fraction(1, 4)


def _exact_ranges(data: np.ndarray, *, width: float) -> PrivateRanges:
    """The non-private counterpart of :func:`private_ranges` (exact median and MAD)."""
    centre = np.median(data, axis=0)
    spread = np.median(np.abs(data - centre), axis=0)
    spread = np.where(spread > 0, spread, np.maximum(np.abs(centre), 1.0) * 2.0**-20)
    return PrivateRanges(lower=centre - width * spread, upper=centre + width * spread,
                         budget=NonPrivate(), epsilons={}, width=width)


#: The range of an automatic ``bound_fraction``: it is rounded up to a power of two
#: (so the parts of a float budget stay exact) and kept within these.
_AUTO_BOUND_FRACTIONS = (Fraction(1, 32), Fraction(1, 2))


def _bound_share(total: Budget, fraction: Fraction) -> Budget:
    """The bound step's budget: ``fraction`` of the total's additive cost, in a notion the
    exponential mechanism satisfies (pure DP for an (epsilon, delta) total)."""
    if isinstance(total, ApproxDP):
        return budget_from_cost(PureDP, (Fraction(total.epsilon) * fraction,))
    return scale_budget(total, fraction)


class PrivateGraph(DPEstimator):
    """A private Gaussian-graphical-model graph of raw data, in one step.

    Parameters
    ----------
    budget : ZCDP, ApproxDP, PureDP or GDP
        The total spent by everything (bounds, centring and the release). ``GDP(mu)`` is
        accounted as the ``mu**2 / 2``-zCDP it implies (the exponential mechanism of the
        bound step is not a Gaussian mechanism) and reported as zCDP. Required.
    bounds : "auto", RowNorm, Box or str, default="auto"
        ``"auto"`` chooses, from ``bound_fraction`` of the budget, per-column ranges
        (private median +- ``range_width`` private MADs) that map every column onto
        ``[-1, 1]``, and then (``method="glasso"``) a private row-norm bound at the
        ``norm_quantile`` of the rescaled rows' norms. A declared bound (``"l2:B"``, ``"box:B"``, ``RowNorm``, ``Box``)
        is used as given, on the raw (or publicly centred) records.
    center : {"private", "none"} or array of shape (p,), default="private"
        ``"private"`` spends ``center_fraction`` of the budget on a private mean;
        ``"none"`` keeps the raw second moment (right only for data centred by
        construction); a vector is a public mean, subtracted first (costs nothing; it
        must not be computed from the data).
    method : {"glasso", "pace"}, default="glasso"
        ``"glasso"``: one Gaussian release of the second moment and the graphical lasso
        with ``alpha``. ``"pace"``: PACE-GGM (zCDP budgets only; needs a box bound, which
        ``bounds="auto"`` provides).
    neighbors : {"replace", "add-remove"}, default="replace"
    bound_fraction : float in (0, 1) or "auto", default="auto"
        Share of the budget for ``bounds="auto"`` (a quarter of it for the row-norm
        bound). ``"auto"`` takes the smallest power of two from 1/32 to 1/2 that lets
        every private median and MAD land inside its column with probability about
        ``1 - e**-3`` (:func:`~dpggm.mechanisms.private_bounds.range_budget_needed`):
        it depends on ``n`` and ``p`` only, which are public under replace-one. In our
        measurements at ``rho = 1``: 1/32 for 20 000 x 10, 1/8 for 569 x 30, 1/16 for
        442 x 10 and 1/2 for 178 x 13 (small samples pay most to find their scales).
    center_fraction : float in (0, 1), default=0.0625
        Share of the budget for ``center="private"``. The shares are dyadic, so the
        parts of a float budget are exact floats and add up to exactly the total.
    range_width : float > 0, default=5.0
        Private MADs either side of the private median (5 MADs is 3.4 standard deviations
        of a normal column).
    norm_quantile : float in (0, 1) or None, default=0.5
        Target share of rescaled rows inside the private row-norm bound. Shrinking the
        longer half of the rows onto the median norm biases the scale of
        ``covariance_`` down but leaves the partial correlations nearly unchanged, and it
        cuts the noise, which grows with the bound squared: on the bundled data sets at
        ``rho = 1`` the edge F1 against the non-private graph was 0.58 / 0.70 (breast
        cancer / diabetes) at 0.5 against 0.38 / 0.73 at 0.9 and 0.01 / 0.14 with the box
        alone (``None``); see the user guide's "Choosing bounds and centring".
    alpha : float or "auto", default="auto"
        Graphical-lasso penalty (``method="glasso"``), on the rescaled data.
    min_partial_correlation : float in [0, 1) or "auto", default="auto"
        An edge of ``adjacency_`` / ``edges_`` needs ``|partial correlation|`` at least
        this (post-processing; ``precision_`` is left as solved). At the noise-calibrated
        penalty the graphical lasso leaves small non-zero entries off the true graph
        (shrinkage artefacts, typically ``|rho| < 0.04`` in our measurements), and a
        sample partial correlation of an absent edge is of the order ``1 / sqrt(n)``.
        ``"auto"`` is ``max(0.05, sqrt(2 ln(p (p - 1) / 2) / n))``: the larger of the
        artefact level and the universal threshold of the sampling error (public
        quantities only). ``0`` keeps every non-zero entry.
    report_delta : float, default=1e-6
    random_state : None, int, Generator or "secure"
        A seed makes a reproducible experiment, not a release: use ``"secure"`` (or
        ``None``) to release.

    Attributes
    ----------
    precision_ : ndarray of shape (p, p) or None
        Precision matrix in the raw units (``None`` if PACE's reconstruction is singular).
    covariance_ : ndarray of shape (p, p)
    partial_correlation_ : ndarray of shape (p, p)
    adjacency_ : ndarray of bool, shape (p, p)
    edges_ : DataFrame
        Columns ``source, target, weight, partial_correlation``; ``weight`` is the
        precision entry in raw units; strongest partial correlation first.
    min_partial_correlation_ : float
        The edge threshold used.
    ranges_ : PrivateRanges or None
        The private clipping ranges (``bounds="auto"``); released.
    mean_ : ndarray of shape (p,) or None
        The private mean in raw units (``center="private"``); released.
    graph_estimator_ : estimator
        The fitted inner estimator (on rescaled, centred records).
    n_clipped_rows_ : int
        Rows changed by clipping. **Curator-only**: computed from the private data, never
        to be released.
    clipping_ : dict
        **Curator-only** counts: ``rows``, ``changed``, ``outside_ranges`` (a value
        outside its column's range, or a declared bound), ``over_norm_bound`` (shrunk
        onto the row-norm bound) and ``outside_by_column``.
    bound_fraction_ : Fraction or None
        The share of the budget the bound step used (``bound_fraction``, or the one
        ``"auto"`` chose from ``n`` and ``p``); ``None`` with declared bounds.
    norm_bound_ : PrivateNormBound or None
        The private row-norm bound (``bounds="auto"`` with ``norm_quantile``); released.
    privacy_ : PrivacyGuarantee
        ``budget`` is the total; ``noise["breakdown"]`` lists every step's spend.
    n_samples_, n_features_in_, feature_names_in_

    Privacy
    -------
    Sequential composition of (1) ``3p`` exponential-mechanism quantiles (each
    ``epsilon``-DP and ``epsilon**2/8``-zCDP, score sensitivity 1), (2) one more for the
    row-norm bound, (3) a Gaussian (or, under pure DP, Laplace) mean of the bounded
    records and (4) the covariance release of the centred records clipped to a bound
    computed from released values only. An automatic ``bound_fraction`` depends on ``n``
    and ``p``, public under replace-one (the only relation offered). Every
    spend is checked by one accountant; the parts add up to at most the total (exactly
    the total for the default dyadic shares). The graph solver, the rescaling to raw units
    and the edge list are post-processing.

    Examples
    --------
    >>> from dpggm import PrivateGraph, ZCDP
    >>> from dpggm.datasets import make_raw_chain
    >>> frame, truth = make_raw_chain(n_samples=20000, random_state=0)
    >>> graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)
    >>> sorted(graph.edges_.columns)
    ['partial_correlation', 'source', 'target', 'weight']
    """

    _constraints = {
        "bounds": AnyOf(Options("auto"), BOUNDS),
        "center": AnyOf(Options("private", "none"), VECTOR),
        "method": Options("glasso", "pace"),
        "bound_fraction": AnyOf(Options("auto"), fraction()),
        "center_fraction": fraction(),
        "range_width": Interval(0, None, closed="neither"),
        "norm_quantile": AnyOf(Options(None), Interval(0, 1)),
        "alpha": AnyOf(Options("auto"), Interval(0, None, closed="left")),
        "min_partial_correlation": AnyOf(Options("auto"), Interval(0, 1, closed="left")),
    }

    def __init__(
        self,
        *,
        budget: Any = None,
        bounds: Any = "auto",
        center: Any = "private",
        method: str = "glasso",
        neighbors: str = "replace",
        bound_fraction: Any = "auto",
        center_fraction: float = 0.0625,
        range_width: float = RANGE_WIDTH,
        norm_quantile: Any = 0.5,
        alpha: Any = "auto",
        min_partial_correlation: Any = "auto",
        report_delta: float = DEFAULT_REPORT_DELTA,
        random_state: Any = None,
    ) -> None:
        self.budget = budget
        self.bounds = bounds
        self.center = center
        self.method = method
        self.neighbors = neighbors
        self.bound_fraction = bound_fraction
        self.center_fraction = center_fraction
        self.range_width = range_width
        self.norm_quantile = norm_quantile
        self.alpha = alpha
        self.min_partial_correlation = min_partial_correlation
        self.report_delta = report_delta
        self.random_state = random_state

    # -- validation -------------------------------------------------------------------

    def _validate(self, p: int) -> tuple[Budget, Any, Any]:
        budget = check_budget(self.budget)
        if check_neighbors(self.neighbors) != "replace":
            raise UnsupportedNeighborsError(
                "PrivateGraph chooses its bounds from private quantiles whose scores use the "
                "number of records, which is private under add/remove neighbours; use "
                "neighbors='replace' (or declare bounds and use GraphicalLasso with "
                "neighbors='add-remove')"
            )
        if self.method not in GRAPH_METHODS:
            raise ValueError(f"method must be one of {GRAPH_METHODS}; got {self.method!r}")
        auto = isinstance(self.bounds, str) and self.bounds == "auto"
        bounds = None if auto else check_bounds(self.bounds)
        center: Any = self.center
        if isinstance(center, str):
            if center not in ("private", "none"):
                raise ValueError(
                    f"center must be 'private', 'none' or a public mean vector; got {center!r}"
                )
        else:
            center = np.asarray(center, dtype=float)
            if center.shape != (p,) or not np.all(np.isfinite(center)):
                raise ValueError(
                    f"center must be a finite public mean vector of length {p}; got shape "
                    f"{center.shape}"
                )
        fixed_bound_fraction = not (isinstance(self.bound_fraction, str)
                                    and self.bound_fraction == "auto")
        if auto and fixed_bound_fraction:
            check_fraction(self.bound_fraction, name="bound_fraction")
        if isinstance(center, str) and center == "private":
            check_fraction(self.center_fraction, name="center_fraction")
        # An automatic bound fraction is at most 1/2, and center_fraction < 1/2 is checked
        # where it is combined with it.
        if auto and isinstance(center, str) and center == "private" and (
            (self.bound_fraction if fixed_bound_fraction else 0.5) + self.center_fraction >= 1
        ):
            raise ValueError(
                "bound_fraction + center_fraction must be < 1 (the rest releases the "
                f"covariance); got {self.bound_fraction} + {self.center_fraction}"
            )
        if self.method == "pace" and isinstance(bounds, RowNorm):
            raise ValueError("method 'pace' needs a box bound: pass bounds='auto' or 'box:B'")
        mpc = self.min_partial_correlation
        if not (isinstance(mpc, str) and mpc == "auto") and (
            isinstance(mpc, bool) or not isinstance(mpc, numbers.Real) or not 0 <= mpc < 1
        ):
            raise ValueError(
                f"min_partial_correlation must be a number in [0, 1) or 'auto'; got {mpc!r}"
            )
        if isinstance(self.alpha, str):
            if self.alpha != "auto":
                raise ValueError(f"alpha must be a number >= 0 or 'auto'; got {self.alpha!r}")
        elif isinstance(self.alpha, bool) or not isinstance(self.alpha, numbers.Real) or not (
            math.isfinite(self.alpha) and self.alpha >= 0
        ):
            raise ValueError(f"alpha must be a number >= 0 or 'auto'; got {self.alpha!r}")
        return budget, bounds, center

    # -- fit --------------------------------------------------------------------------

    def fit(self, X: Any, y: Any = None) -> PrivateGraph:
        """Choose bounds, centre and release the graph of ``X`` (array, DataFrame or CSV
        path with a header row)."""
        self._validate_params()
        values, columns = as_matrix(X)
        n, p = values.shape
        if p < 2:
            raise ValueError(f"a graph needs at least 2 columns; got {p}")
        budget, declared, center = self._validate(p)
        self._ctx = make_context(self, None)
        rng = self._ctx.source  # the one random source of every step of this fit
        non_private = isinstance(budget, NonPrivate)
        requested = budget
        if isinstance(budget, GDP):
            budget = budget_from_cost(ZCDP, exact_cost(budget, ZCDP))
        if self.method == "pace" and isinstance(budget, PureDP):
            budget = budget_from_cost(ZCDP, exact_cost(budget, ZCDP))
        if self.method == "pace" and not isinstance(budget, (ZCDP, NonPrivate)):
            raise ValueError("method 'pace' runs under zCDP: pass a ZCDP, PureDP or GDP budget")
        accountant = None if non_private else PrivacyAccountant(budget)
        breakdown: list[dict[str, Any]] = []
        public_shift = center if isinstance(center, np.ndarray) else np.zeros(p)
        data = values - public_shift
        private_centre = isinstance(center, str) and center == "private"

        # 1. Bounds: map every column onto [-1, 1] by its private range.
        ranges: PrivateRanges | None = None
        norm_bound: PrivateNormBound | None = None
        with_norm = (declared is None and self.method != "pace"
                     and self.norm_quantile is not None)
        bound_fraction = (self._auto_bound_fraction(budget, n, p, with_norm)
                          if declared is None and not non_private else None)
        self.bound_fraction_ = bound_fraction
        if not non_private:
            # Before any draw: every noisy part of the fit must be drawable at this budget.
            self._check_budget_range(requested, budget, n, p, bound_fraction, private_centre)
        outside = np.zeros(n, dtype=bool)
        if declared is None:
            if non_private:
                ranges = _exact_ranges(data, width=float(self.range_width))
            else:
                share = _bound_share(budget, bound_fraction * (
                    (1 - _NORM_SHARE) if with_norm else 1))
                accountant.spend(share, mechanism="private ranges (exponential mechanism)")
                ranges = private_ranges(data, budget=share, rng=rng,
                                        width=float(self.range_width))
                breakdown.append({"step": "bounds", "budget": share,
                                  "mechanism": "exponential-mechanism median and MAD",
                                  "epsilons": dict(ranges.epsilons)})
            if not isinstance(center, str):
                # A public centre: keep it, with a symmetric range about it.
                half = np.maximum(np.abs(ranges.lower), np.abs(ranges.upper))
                ranges = PrivateRanges(lower=-half, upper=half, budget=ranges.budget,
                                       epsilons=ranges.epsilons, width=ranges.width)
            beyond = (data < ranges.lower) | (data > ranges.upper)
            outside |= beyond.any(axis=1)
            n_outside_ranges = int(outside.sum())
            by_column = beyond.sum(axis=0)
            z, _ = ranges.transform(data)
            shift, scale = ranges.center, ranges.half_width
            inner_bounds: Any = Box(tuple(np.ones(p)))
        else:
            z, _ = declared.clip(data)
            outside |= np.any(z != data, axis=1)
            n_outside_ranges = int(outside.sum())
            by_column = np.sum(z != data, axis=0)
            shift, scale = np.zeros(p), np.ones(p)
            inner_bounds = declared
        # 2. A row-norm bound inside the box: a box bound charges every record as if all
        # its coordinates were extreme at once (||b||^2 = p), while typical rows are far
        # shorter, so a private quantile of the row norms cuts the noise several-fold.
        if with_norm:
            cap = math.sqrt(p)
            if non_private:
                norms = np.sqrt(np.einsum("ij,ij->i", z, z))
                chosen = float(np.quantile(norms, self.norm_quantile)) or cap
                norm_bound = PrivateNormBound(bound=min(chosen, cap), cap=cap,
                                              quantile=float(self.norm_quantile),
                                              epsilon=math.inf, budget=NonPrivate())
            else:
                share = _bound_share(budget, bound_fraction * _NORM_SHARE)
                accountant.spend(share, mechanism="private row-norm bound (exponential mechanism)")
                norm_bound = private_norm_bound(z, cap=cap, budget=share,
                                                quantile=float(self.norm_quantile), rng=rng)
                breakdown.append({"step": "norm bound", "budget": share,
                                  "mechanism": "exponential-mechanism row-norm quantile",
                                  "epsilon": norm_bound.epsilon})
            inner_bounds = RowNorm(norm_bound.bound)
            before = z
            z, _ = inner_bounds.clip(z)
            over_norm = np.any(z != before, axis=1)
            outside |= over_norm
        # 3. Centring: a private mean of the bounded records. The centred records are
        # clipped again (to the same ball, or to the box shifted by the released mean),
        # a function of released values only.
        mean_z = None
        if private_centre:
            if non_private:
                mean_z = z.mean(axis=0)
            else:
                share = scale_budget(budget, Fraction(self.center_fraction))
                accountant.spend(share, mechanism="private mean")
                mean_z, mean_noise = release_mean(
                    z.sum(axis=0), n=n, bounds=inner_bounds, budget=share, ctx=self._ctx
                )
                breakdown.append({"step": "centring", "budget": share,
                                  "mechanism": "Gaussian mean" if "mean_sigma" in mean_noise
                                  else "Laplace mean", **mean_noise})
            z = z - mean_z
            if isinstance(inner_bounds, Box):
                inner_bounds = Box(tuple(inner_bounds.vector(p) + np.abs(mean_z)))
            elif with_norm:
                z, _ = inner_bounds.clip(z)
            else:
                inner_bounds = RowNorm(inner_bounds.bound + float(np.linalg.norm(mean_z)))
        clipped = int(outside.sum())
        self.clipping_ = {
            "rows": n,
            "changed": clipped,
            "outside_ranges": n_outside_ranges,
            "over_norm_bound": int(over_norm.sum()) if with_norm else 0,
            "outside_by_column": {str(c): int(k) for c, k in zip(columns, by_column)},
        }
        # 4. The graph, from everything that remains.
        rest = NonPrivate() if non_private else accountant.remaining
        inner = self._inner_estimator(rest, inner_bounds, rng)
        inner.fit(pd.DataFrame(z, columns=columns))
        if not non_private:
            accountant.spend(rest, mechanism=f"graph ({self.method})")
            breakdown.append({"step": "graph", "budget": rest,
                              "mechanism": inner.privacy_.mechanism, **inner.privacy_.noise})
        self._finish(inner, values, columns, scale, shift + public_shift, mean_z, ranges,
                     clipped, X)
        self.norm_bound_ = norm_bound
        self.privacy_ = self._guarantee(requested, budget, inner, accountant, breakdown,
                                        declared, ranges, inner_bounds)
        return self

    def _auto_bound_fraction(self, budget: Budget, n: int, p: int,
                             with_norm: bool) -> Fraction:
        """``bound_fraction``, or for ``"auto"`` the share the bound step needs to choose
        its ranges (and row-norm bound) reliably at this ``n`` and ``p`` -- public
        quantities -- rounded up to a power of two within ``_AUTO_BOUND_FRACTIONS``."""
        if not isinstance(self.bound_fraction, str):
            return Fraction(self.bound_fraction)
        notion = ZCDP if isinstance(budget, ZCDP) else PureDP
        available = (exact_cost(budget, ZCDP)[0] if notion is ZCDP
                     else Fraction(budget.epsilon))
        ranges_need = Fraction(exact_cost(range_budget_needed(n=n, p=p, notion=notion),
                                          notion)[0])
        need = ranges_need / ((1 - _NORM_SHARE) if with_norm else 1)
        if with_norm:
            norm_need = exact_cost(norm_budget_needed(
                n=n, quantile=float(self.norm_quantile), notion=notion), notion)[0]
            need = max(need, Fraction(norm_need) / _NORM_SHARE)
        low, high = _AUTO_BOUND_FRACTIONS
        fraction = low
        while fraction < high and fraction * available < need:
            fraction *= 2
        return fraction

    def _check_budget_range(self, requested: Budget, budget: Budget, n: int, p: int,
                            bound_fraction: Fraction | None, private_centre: bool) -> None:
        """Refuse a budget for which a Gaussian or Laplace part cannot be drawn exactly,
        naming the range that works (public parameters only). Every part is stated for the
        rescaled records in ``[-1, 1]^p``: the private bounds, the norm bound and the
        centring change the sensitivity and the values by the same factor, which leaves
        the noise in grid steps unchanged."""
        box = Box(tuple(np.ones(p)))
        laplace = isinstance(budget, PureDP)
        centre = Fraction(self.center_fraction) if private_centre else Fraction(0)
        inner = 1 - centre - (bound_fraction or Fraction(0))
        parts: list[NoisePart] = []
        if centre:
            parts.append(NoisePart(
                share=centre, size=p, value_bound=math.sqrt(p), laplace=laplace,
                sensitivity=(sum_l1_sensitivity if laplace else sum_l2_sensitivity)(
                    box, p=p, neighbors=self.neighbors) / n))
        if self.method == "pace":
            from dpggm.estimators.pace import PACECovariance, pace_noise_parts

            defaults = PACECovariance().get_params()
            sens = second_moment_entry_sensitivity(box, n=n, p=p, neighbors=self.neighbors)
            parts += pace_noise_parts(
                sens, box.vector(p), diag_fraction=Fraction(defaults["diag_fraction"]),
                select_fraction=Fraction(defaults["select_fraction"]),
                max_rounds=max(1, p * (p - 1)), scale=inner)
        else:
            parts.append(NoisePart(
                share=inner, size=p * (p + 1) // 2, value_bound=float(p), laplace=laplace,
                sensitivity=(gram_l1_sensitivity if laplace else gram_l2_sensitivity)(
                    box, p=p, neighbors=self.neighbors) / n))
        check_budget_range(requested, parts,
                           release=f"a graph of {p} columns from n = {n} rows")

    def _inner_estimator(self, rest: Budget, bounds: Any, rng: Any) -> Any:
        # The inner estimator continues this fit's random source (cryptographic for None
        # and "secure", the seeded stream otherwise).
        if self.method == "pace":
            from dpggm.estimators.pace import PACECovariance

            return PACECovariance(budget=rest, bounds=bounds, neighbors=self.neighbors,
                                  random_state=rng)
        from dpggm.estimators.precision import GraphicalLasso

        mechanism = "laplace" if isinstance(rest, PureDP) else "gaussian"
        return GraphicalLasso(alpha=self.alpha, budget=rest, bounds=bounds, mechanism=mechanism,
                              neighbors=self.neighbors, center="none",
                              report_delta=self.report_delta, random_state=rng)

    def _finish(self, inner, values, columns, scale, shift, mean_z, ranges, clipped, X) -> None:
        n, p = values.shape
        self.min_partial_correlation_ = (
            max(0.05, math.sqrt(2 * math.log(max(p * (p - 1) / 2, 2)) / n))
            if isinstance(self.min_partial_correlation, str)
            else float(self.min_partial_correlation)
        )
        D_inv = np.diag(1.0 / scale)
        precision_z = getattr(inner, "precision_", None)
        covariance_z = inner.covariance_
        self.covariance_ = covariance_z * np.outer(scale, scale)
        if precision_z is not None:
            self.precision_ = D_inv @ precision_z @ D_inv
            self.partial_correlation_ = partial_correlation(precision_z)
            off = (np.abs(precision_z) > 0) & (
                np.abs(self.partial_correlation_) >= self.min_partial_correlation_
            )
        else:
            self.precision_ = None
            self.partial_correlation_ = np.eye(len(columns))
            off = np.asarray(inner.adjacency_, dtype=bool)
        np.fill_diagonal(off, False)
        self.mean_ = None if mean_z is None else shift + scale * mean_z
        self.ranges_ = ranges
        self.graph_estimator_ = inner
        self._set_fitted(
            X, n_samples=values.shape[0], n_features=values.shape[1],
            columns=list(columns), privacy=None, covariance=self.covariance_,
            adjacency=off,
        )
        self.n_clipped_rows_ = int(clipped)
        self.edges_ = edge_table(
            self.adjacency_, columns,
            weight=self.precision_, partial=self.partial_correlation_,
        )

    def _guarantee(self, requested, budget, inner, accountant, breakdown, declared, ranges,
                   inner_bounds) -> PrivacyGuarantee:
        bounds_record: dict[str, Any] = (
            declared.to_dict() if declared is not None
            else {"kind": "auto", "ranges": ranges.to_dict(),
                  "rescaled_box": inner_bounds.to_dict()}
        )
        ctx = make_context(self, bounds_record)
        private_mean = isinstance(self.center, str) and self.center == "private"
        mechanism = (f"PrivateGraph: {'private ranges + ' if declared is None else ''}"
                     f"{'private norm bound + ' if self.norm_bound_ is not None else ''}"
                     f"{'private mean + ' if private_mean else ''}"
                     f"{inner.privacy_.mechanism}")
        notes: dict[str, Any] = {"centering": self.center if isinstance(self.center, str)
                                 else "public mean", "method": self.method}
        if isinstance(requested, GDP):
            notes["requested_budget"] = requested.to_dict()
            notes["accounted_as"] = (
                "mu-GDP implies mu^2/2-zCDP; the bound step (exponential mechanism) is not a "
                "Gaussian mechanism, so the total is stated as zCDP"
            )
        if accountant is None:
            return ctx.guarantee(budget=NonPrivate(), mechanism=mechanism, notes=notes)
        spent = accountant.exact_spent
        total = exact_cost(budget, type(budget))
        notes["spent_exactly_total"] = all(s == t for s, t in zip(spent, total))
        # The inner estimator ran on a generator handed down from this fit, so its own seed
        # policy says nothing: validity follows this fit's random_state and bounds.
        return ctx.guarantee(
            budget=budget, mechanism=mechanism, noise={"breakdown": breakdown}, notes=notes,
            invalid_reason=inner.privacy_.reason if inner.privacy_.validity == "invalid" else None,
        )


def edge_table(adjacency: np.ndarray, names: list[str], *, weight: np.ndarray | None,
               partial: np.ndarray | None) -> pd.DataFrame:
    """The one edge-list format: ``source, target, weight, partial_correlation``, one row
    per edge ``i < j`` of ``adjacency``, strongest ``|partial_correlation|`` first.

    ``weight`` is the precision entry (empty when there is none, e.g. a graph without a
    precision matrix); ``partial_correlation`` likewise.
    """
    adjacency = np.asarray(adjacency, dtype=bool)
    i, j = np.nonzero(np.triu(adjacency, 1))
    frame = pd.DataFrame({
        "source": [names[a] for a in i],
        "target": [names[b] for b in j],
        "weight": weight[i, j] if weight is not None else np.full(len(i), np.nan),
        "partial_correlation": partial[i, j] if partial is not None else np.full(len(i), np.nan),
    })
    order = np.argsort(-np.abs(frame["partial_correlation"].fillna(0).to_numpy()), kind="stable")
    return frame.iloc[order].reset_index(drop=True)


def edges_from_precision(
    precision: np.ndarray, names: list[str], *, adjacency: np.ndarray | None = None
) -> pd.DataFrame:
    """:func:`edge_table` of a precision matrix: every non-zero off-diagonal entry is an
    edge (or the given ``adjacency``), with its partial correlation."""
    precision = np.asarray(precision, dtype=float)
    if adjacency is None:
        adjacency = precision != 0
    return edge_table(adjacency, names, weight=precision, partial=partial_correlation(precision))


def edges_csv_text(edges: pd.DataFrame) -> str:
    """The CSV text of an edge table (header ``source,target,weight,partial_correlation``)."""
    return edges.to_csv(index=False, float_format="%.10g", lineterminator="\n")
