"""The main job in one estimator: a private conditional-dependence graph of raw data.

:class:`PrivateGraph` plans its releases from public facts (the numbers of rows and
columns, the budget, the bound rule; :meth:`PrivateGraph.plan`), then runs them in order,
each checked against one :class:`~dpggm.privacy.PrivacyAccountant` before it runs and
booked after (:mod:`dpggm.estimators._graph_pipeline`):

1. **bounds** (``bounds="auto"``): per-column ranges, private median +- 5 private spreads
   (:mod:`dpggm.mechanisms.private_bounds`); every column is mapped onto ``[-1, 1]`` by its
   own range, so columns on very different scales are treated alike; then a private
   row-norm bound inside that box, since typical rows are far shorter than the box's corner;
2. **centering** (``center="private"``): a private mean of the bounded records;
3. **graph**: the second moment of the bounded records, released once (the covariance is
   the second moment minus the released mean's outer product), and the graphical lasso
   with the noise-calibrated penalty ``alpha="auto"`` -- or PACE-GGM (``method="pace"``).

The records are read in passes (one per step that needs released values), from memory, a
file or a Dask collection alike: histograms on public grids for the bounds, then clipped
sums. Rescaling columns by positive constants changes neither the zero pattern of the
precision matrix nor the partial correlations, so the graph of the rescaled data is the
graph of the raw data; ``precision_`` and ``covariance_`` are mapped back to the raw units.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from dpggm.data.records import check_missing_policy, open_records
from dpggm.data.tables import too_few_records, too_few_variables
from dpggm.estimators._base import DPEstimator, make_context
from dpggm.estimators._contract import (
    BOUNDS,
    COLUMN_RANGES,
    VECTOR,
    AnyOf,
    Interval,
    Options,
    fraction,
)
from dpggm.estimators._graph_pipeline import (
    GraphRun,
    GraphSettings,
    accounting_budget,
    check_not_hopeless,
    check_plan_budget_range,
    first_pass_task,
    graph_plan,
    pass_threads,
    planned_entry_sigma,
    predicted_partial_correlation_noise,
    run_steps,
)
from dpggm.estimators.edges import (
    EDGE_INFERENCE_COLUMNS,
    INFERENCE_COLUMNS,
    edge_table,
    edges_csv_text,
    edges_from_precision,
    partial_correlation,
)
from dpggm.estimators.registry import GRAPH_METHODS
from dpggm.exceptions import UnsupportedNeighborsError
from dpggm.mechanisms.bounds import RowNorm
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.plan import ReleasePlan
from dpggm.mechanisms.private_bounds import RANGE_WIDTH
from dpggm.mechanisms.record import Release
from dpggm.privacy.budgets import GDP, ApproxDP, NonPrivate, PureDP
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA, PrivacyGuarantee

__all__ = [
    "EDGE_INFERENCE_COLUMNS",
    "GRAPH_METHODS",
    "INFERENCE_COLUMNS",
    "ReleasedMoment",
    "PrivateGraph",
    "edge_table",
    "edges_csv_text",
    "edges_from_precision",
    "DETECTABLE_POWER",
    "graph_result_record",
    "inference_record",
    "partial_correlation",
    "planned_release_noise",
    "predicted_partial_correlation_noise",
    "stage_graph_release",
]


#: The power at which ``PrivateGraph.detectable_`` states the weakest edge it detects.
DETECTABLE_POWER = 0.8


def _target_strength(value: Any) -> float:
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
            0 < abs(float(value)) < 1):
        raise ValueError(f"partial_correlation must be a number with 0 < |value| < 1; got "
                         f"{value!r}")
    return abs(float(value))


#: The power below which no partial correlation may be detected for the selection to be
#: withheld: where the plan cannot reach even odds at any |partial correlation| <= 0.99.
WITHHOLD_POWER = 0.5


def _planned_sigma(plan: ReleasePlan, bound: float) -> float | None:
    """The noise standard deviation on one released second-moment entry of the rescaled
    records, from the plan at the row-norm bound ``bound``
    (:func:`~dpggm.estimators._graph_pipeline.planned_entry_sigma`)."""
    if plan.non_private:
        return 0.0
    return planned_entry_sigma(plan, bound**2)


def planned_release_noise(plan: ReleasePlan, estimator: Any) -> tuple[float, float] | None:
    """``(sigma, bound)``: the noise standard deviation of one released second-moment
    entry of the rescaled records, and the row-norm bound the rule is expected to choose
    (roughly normal columns, the declared missing share), from ``plan`` (a
    :class:`PrivateGraph` plan, ``bounds="auto"``, ``method="glasso"``); ``None`` where no
    public prediction exists. A function of the plan and the options only."""
    from scipy import stats

    from dpggm.solvers.inference import RESCALED_VARIANCE

    steps = {s.step: s for s in plan.steps}
    if estimator.method != "glasso" or (not plan.non_private and "norm bound" not in steps):
        return None
    p = plan.n_features
    missing = float(estimator.planned_missing_share)
    present = max(p * (1.0 - missing), 1.0)
    bound = math.sqrt(RESCALED_VARIANCE * float(stats.chi2.ppf(float(estimator.norm_quantile),
                                                                present)))
    sigma = _planned_sigma(plan, bound)
    return None if sigma is None else (sigma, bound)


#: The floor of a released share of values present (the pipeline's, before it divides a
#: moment): only a share this small matters, where the figure is infinite anyway.
_MIN_PRESENT_SHARE = 0.02


def _present_noise_factor(plan: ReleasePlan, missing: float) -> float:
    """What dividing the moments by the released shares of values present does to the noise
    the inference reads, in expectation over the counts' noise, relative to dividing by
    the declared share ``1 - missing``: the shares are the released counts raised by two of
    their noise standard deviations over ``n`` (capped at 1), and the release's stated noise
    variance is divided by the smallest share squared. For complete columns a count whose
    noise falls below minus two standard deviations gives a share under 1: at
    p = 100, n = 2 000 the smallest of the p shares raises the noise by 3.1 % at rho = 1
    and 10.6 % at rho = 0.1, at p = 30, n = 500, rho = 1 by 2.9 %.
    A function of the plan: the counts' noise is the plan's."""
    from scipy import stats

    counts = {s.step: s for s in plan.steps}.get("missing counts")
    if counts is None:
        return 1.0
    if "sigma" in counts.noise:
        law = stats.norm(scale=float(counts.noise["sigma"]))
        spread = float(counts.noise["sigma"])
    elif "laplace_scale" in counts.noise:
        law = stats.laplace(scale=float(counts.noise["laplace_scale"]))
        spread = math.sqrt(2.0) * float(counts.noise["laplace_scale"])
    else:
        return 1.0
    n, p = plan.n_samples, plan.n_features
    # The smallest of p independent count noises, at its quantiles u: F^-1(1 - (1-u)^(1/p)).
    nodes, weights = np.polynomial.legendre.leggauss(64)
    u = (nodes + 1.0) / 2.0
    smallest = law.ppf(-np.expm1(np.log1p(-u) / p))
    share = np.clip((1.0 - missing) + (smallest + 2.0 * spread) / n, _MIN_PRESENT_SHARE, 1.0)
    return float(np.sum(weights / 2.0 * (1.0 - missing) ** 2 / share**2))


def _detectable(plan: ReleasePlan, estimator: Any, *, power: float = DETECTABLE_POWER,
                neighbour_r2: float = 0.0) -> float | None:
    """:func:`~dpggm.solvers.inference.detectable_partial_correlation` for a plan: its
    noise at the row-norm bound the rule is expected to choose, the declared missing share;
    ``None`` where no public prediction exists. A function of the plan and the options
    only, so every release of one plan states the same figure."""
    from dpggm.solvers.inference import detectable_partial_correlation

    steps = {s.step: s for s in plan.steps}
    if estimator.method != "glasso" or (not plan.non_private and "norm bound" not in steps):
        return None
    n, p = plan.n_samples, plan.n_features
    quantile = float(estimator.norm_quantile)
    missing = float(estimator.planned_missing_share)
    present = max(p * (1.0 - missing), 1.0)
    from scipy import stats

    from dpggm.solvers.inference import RESCALED_VARIANCE

    bound = math.sqrt(RESCALED_VARIANCE * float(stats.chi2.ppf(quantile, present)))
    sigma = _planned_sigma(plan, bound)
    if sigma is None:
        return None
    sigma *= _present_noise_factor(plan, missing)
    return detectable_partial_correlation(
        n, p, sigma, row_norm_bound=bound, norm_quantile=quantile, fdr=float(estimator.fdr),
        power=power, fdr_method=estimator.fdr_method, missing_share=missing,
        neighbour_r2=neighbour_r2)


#: The largest noise standard error of a partial correlation (planned, isolated edge under
#: "no edge") at which the closed form's linearisation is relied on: beyond it the
#: calibration study found neither the false-discovery rate nor the intervals' coverage
#: kept, so there the plan promises nothing (the measurements: docs/inference.md,
#: "Settings that break calibration").
NOISE_LIMIT = 0.1


def _planned_noise(plan: ReleasePlan, estimator: Any) -> float | None:
    """The plan's noise standard error of one partial correlation (an isolated edge,
    under "no edge"; roughly normal columns, the declared missing share)."""
    from scipy import stats

    from dpggm.solvers.inference import RESCALED_VARIANCE, partial_correlation_noise

    p = plan.n_features
    missing = float(estimator.planned_missing_share)
    span = max(p * (1.0 - missing), 1.0)
    bound = math.sqrt(RESCALED_VARIANCE * float(stats.chi2.ppf(
        float(estimator.norm_quantile), span)))
    sigma = _planned_sigma(plan, bound)
    if sigma is None:
        return None
    sigma *= _present_noise_factor(plan, missing)
    return partial_correlation_noise(sigma, p, row_norm_bound=bound,
                                     norm_quantile=float(estimator.norm_quantile),
                                     missing_share=missing)


def _planned_inference(plan: ReleasePlan, estimator: Any) -> dict[str, Any] | None:
    """The public figures of a plan's edge inference: ``detectable`` (isolated edges, 80 %
    power), ``detectable_predicted`` (an edge whose variables the others predict with
    ``R**2 = PREDICTED_R2``), ``withheld`` (no |partial correlation| reaches
    :data:`WITHHOLD_POWER`) and ``withheld_by`` (the figure that decided it), and
    ``calibrated`` with its ``calibration_note``."""
    from dpggm.solvers.inference import PREDICTED_R2

    detectable = _detectable(plan, estimator)
    if detectable is None:
        return None
    even_odds = _detectable(plan, estimator, power=WITHHOLD_POWER)
    predicted = _detectable(plan, estimator, neighbour_r2=PREDICTED_R2)
    noise = _planned_noise(plan, estimator) if not plan.non_private else 0.0
    too_noisy = noise is not None and noise > NOISE_LIMIT
    if too_noisy:
        # Beyond the linearisation's reach the plan promises nothing (NOISE_LIMIT).
        detectable = predicted = math.inf
    calibration = _calibration(plan)
    if not calibration["calibrated"]:
        decided = ("the settings are not calibrated: " + calibration["calibration_note"])
    elif too_noisy:
        decided = (f"the plan's noise standard error of a partial correlation, {noise:.3g}, "
                   f"exceeds {NOISE_LIMIT:g}, beyond which the intervals and the "
                   "false-discovery control are not reliable")
    elif math.isinf(even_odds):
        decided = (f"the plan's detectable |partial correlation| at "
                   f"{100 * WITHHOLD_POWER:.0f} % power is none up to 0.99")
    else:
        decided = None
    withheld = bool(estimator.select == "fdr" and decided is not None)
    figures: dict[str, Any] = {
        "detectable": detectable,
        "detectable_predicted": predicted,
        "predicted_r2": PREDICTED_R2,
        "detectable_even_odds": even_odds,
        "noise_std_error": noise,
        "withheld": withheld,
        "withheld_by": decided if withheld else None,
        "missing_share": float(estimator.planned_missing_share),
    }
    figures.update(calibration)
    return figures


#: The least share of the budget for the bounds, relative to the share ``"auto"`` would
#: choose, at which the inference is calibrated: below it the private ranges and norm
#: bound miss their targets, the records are clipped hard and the false-discovery rate is
#: out of control, so such a plan's selection is withheld and the record says why (the
#: measurements at a quarter and at half of auto's share: docs/inference.md, "Settings
#: that break calibration").
_CALIBRATED_BOUND_SHARE = Fraction(1, 2)


def _calibration(plan: ReleasePlan) -> dict[str, Any]:
    """Whether the plan's settings keep the inference calibrated (a function of the plan)."""
    # The share asked for, against what "auto" would choose (the share the bound steps
    # spent differs when ranges are declared).
    chosen = plan.notes.get("requested_bound_fraction")
    auto = plan.notes.get("auto_bound_fraction")
    if chosen is None or auto is None or Fraction(chosen) >= _CALIBRATED_BOUND_SHARE * Fraction(auto):
        return {"calibrated": True, "calibration_note": None}
    return {"calibrated": False,
            "calibration_note": (
                f"bound_fraction {chosen} is below half of the {auto} that 'auto' chooses for "
                "this size: the private ranges and norm bound are then too noisy for the "
                "clipping model, and the intervals and false-discovery control are not "
                "calibrated (measured FDR 0.64-0.82 at a target of 0.1)")}


def _check_table_ranges(X: Any, settings: GraphSettings) -> None:
    """A table whose schema declares ranges (``TableFile(scales=...)``, a schema file) is
    fitted with those ranges in ``column_ranges`` (``table.declared_ranges()``): the plan
    and the ledger's check are made from the estimator's parameters, so a declaration the
    parameters do not hold is refused rather than silently ignored or silently used."""
    from dpggm.data.tables import TableFile

    if not isinstance(X, TableFile) or not X.table_schema.declares_ranges:
        return
    declared = X.declared_ranges()
    given = {key: (low, high) for key, low, high in settings.column_ranges}
    differ = [name for name, span in declared.items() if given.get(name) != span]
    if differ:
        name = differ[0]
        raise ValueError(
            f"column_ranges: the table's schema declares {name!r} in "
            f"[{declared[name][0]:g}, {declared[name][1]:g}], but column_ranges "
            + (f"gives {given[name]}" if name in given else "does not hold it")
            + "; fit with PrivateGraph(column_ranges=table.declared_ranges(), ...)")


#: What edge inference reads off a fit: a :class:`~dpggm.mechanisms.record.Release`.
ReleasedMoment = Release


class PrivateGraph(DPEstimator):
    """A private Gaussian-graphical-model graph of raw data, in one step.

    Parameters
    ----------
    budget : ZCDP, ApproxDP, PureDP or GDP
        The total spent by everything (bounds, centering and the release). Required.
        ``ZCDP(rho)``: the steps add up to ``rho``. ``ApproxDP(epsilon, delta)``: the
        pipeline runs in the largest ``rho``-zCDP that implies it, and the record states
        both forms. ``GDP(mu)``: accounted and reported as the ``mu**2 / 2``-zCDP it
        implies (exact noise delivers zCDP, and the bound step is no Gaussian mechanism).
        ``PureDP(epsilon)``: pure composition (exponential and Laplace mechanisms);
        ``method="pace"`` runs in the ``epsilon**2 / 2``-zCDP it implies.
    bounds : "auto", RowNorm, Box or str, default="auto"
        ``"auto"`` chooses, from ``bound_fraction`` of the budget, per-column ranges
        (private median +- ``range_width`` private spreads, the spread being the median
        of the deviations not tied with the center, so that discrete columns keep their
        levels) that map every column onto ``[-1, 1]``, and then (``method="glasso"``) a private row-norm bound at the
        ``norm_quantile`` of the rescaled rows' norms. A declared bound (``"l2:B"``,
        ``"box:B"``, ``RowNorm``, ``Box``) is used as given, on the raw (or publicly
        centered) records.
    column_ranges : mapping or None, default=None
        Public ranges of some columns under ``bounds="auto"``: ``{name: (low, high)}``
        (a ``str`` key is a column name -- ``x0, x1, ...`` for an array -- an ``int`` key a
        0-based position), e.g. a questionnaire's answer scale ``(1, 6)`` or a lab
        protocol's measuring range. A declared column is clipped to its range and mapped
        onto ``[-1, 1]`` by it, like a private range, and costs nothing: the private
        ranges' budget is spread over the other columns only, and when every range is
        declared the range step is left out of the plan and its share goes to the
        release. The ranges must be finite with ``low < high`` and must not be read off the
        private data. Recorded in ``privacy_.bounds["declared_ranges"]``.
    center : {"private", "none"} or array of shape (p,), default="private"
        ``"private"`` spends ``center_fraction`` of the budget on a private mean;
        ``"none"`` keeps the raw second moment (right only for data centered by
        construction); a vector is a public mean, subtracted first (costs nothing; it
        must not be computed from the data).
    method : {"glasso", "pace"}, default="glasso"
        ``"glasso"``: one release of the second moment and the graphical lasso with
        ``alpha``. ``"pace"``: PACE-GGM (needs a box bound, which ``bounds="auto"``
        provides).
    neighbors : {"replace", "add-remove"}, default="replace"
        ``"replace"``: replacing one record (the number of records ``n`` is public).
        ``"add-remove"``: adding or removing one record (``n`` is private): the first step
        releases a noisy count from ``count_fraction`` of the budget, the rest of the plan
        is made from that released count, and the column sums and the Gram matrix are
        released unnormalised (sensitivities ``B`` and ``B**2``) and divided by it. This is
        how :class:`~dpggm.estimators.comparison.PrivateGraphComparison` releases a group
        whose size is private. Not with ``method="pace"``.
    count_fraction : float in (0, 1), default=0.0625
        Share of the budget for the noisy count under ``neighbors="add-remove"`` (unused
        under replace-one).
    bound_fraction : float in (0, 1) or "auto", default="auto"
        Share of the budget for ``bounds="auto"`` (a sixteenth of it for the row-norm
        bound). ``"auto"`` takes the smallest power of two from 1/32 to 1/2 with which,
        with probability about ``1 - e**-3`` a column, every private median lands inside
        its column and every spread keeps the levels of a column with at least a quarter
        of its values off its most common one
        (:func:`~dpggm.mechanisms.private_bounds.range_budget_needed`): it depends on
        ``n``, the number of columns without a declared range and the budget only, public
        under replace-one. The plan states the untied share it resolves
        (``plan_.notes["tied_columns_keep_levels_from_untied_share"]``); a budget whose
        ranges cannot even locate their columns is refused before any draw.
    center_fraction : float in (0, 1), default=0.0625
        Share of the budget for ``center="private"``. The shares are dyadic, so the
        parts of a float budget are exact floats and add up to exactly the total.
    missing : {"impute", "refuse", "drop"}, default="impute"
        What a missing value (NaN, an empty CSV field) becomes. ``"impute"``: the center
        of its column's private range (``bounds="auto"``), or of the declared box (0 after
        subtracting a public center); the ranges' quantiles count only the values present.
        The imputed record is a fixed function of the record and released values, so the
        guarantee is unchanged. ``"refuse"``: an error naming the first missing value.
        ``"drop"`` (listwise deletion) is refused: it makes the number of records depend on
        the private data, while replace-one neighbours (the only relation here) take it as
        public. See the user guide's "Missing values".
    range_width : float > 0, default=5.0
        Private spreads either side of the private median (5 MADs is 3.4 standard
        deviations of a normal column).
    norm_quantile : float in (0, 1) or None, default=0.5
        Target share of rescaled rows inside the private row-norm bound. Shrinking the
        longer half of the rows onto the median norm biases the scale of
        ``covariance_`` down but leaves the partial correlations nearly unchanged, and it
        cuts the noise, which grows with the bound squared; see the user guide's
        "Choosing bounds and centering". ``None`` keeps the box alone.
    alpha : float or "auto", default="auto"
        Graphical-lasso penalty (``method="glasso"``), on the rescaled data.
    select : {"fdr", "threshold"}, default="fdr"
        How the edges are chosen from the release (post-processing). ``"fdr"``: the
        de-biased partial correlation of every pair gets a standard error that accounts
        for the sampling and the privacy noise (whose distribution the release states), a
        p-value and a Benjamini-Hochberg q-value; the edges are the pairs with
        ``q <= fdr`` (:func:`dpggm.solvers.inference.edge_inference`; see the user guide's
        "Edges you can trust"), none when the release can detect nothing even half of
        the time (``selection_withheld_``). ``"threshold"``: the non-zero entries of the graphical
        lasso with ``|partial correlation| >= min_partial_correlation``. PACE-GGM
        (``method="pace"``) reports its measured pattern either way: its adaptive,
        unevenly noisy measurements are not what the closed form describes.
    fdr : float in (0, 1), default=0.1
        Target false-discovery rate of ``select="fdr"``: of the edges reported, on average
        at most this share is not a real conditional dependence.
    fdr_method : {"bh", "by"}, default="bh"
        Benjamini-Hochberg, or Benjamini-Yekutieli (valid under any dependence between the
        tests, more conservative; our calibration study found BH within its target).
    confidence_level : float in (0, 1), default=0.9
        Level of the intervals in ``inference_`` and ``edges_``.
    min_partial_correlation : float in [0, 1) or "auto", default="auto"
        With ``select="threshold"``: an edge needs ``|partial correlation|`` at least this
        (``precision_`` is left as solved). ``"auto"`` is
        ``max(0.05, sqrt(2 ln(p (p - 1) / 2) / n))``. ``0`` keeps every non-zero entry.
    planned_missing_share : float in [0, 1), default=0.0
        The share of every column's values assumed missing when planning (a stated public
        assumption, not read from the data): the public figures -- what the release can
        detect, whether the selection is withheld -- account for the imputation of that
        share (its extra noise and variance), and the record states the assumption.
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
        The selected pairs: ``source, target, weight, partial_correlation`` and, for
        ``method="glasso"``, ``ci_low, ci_high, p_value, q_value``; ``weight`` is the
        partial correlation again, named for network software (its sign is the partial
        correlation's; see :data:`dpggm.estimators.edges.EDGE_COLUMNS`); strongest
        evidence first.
    inference_ : DataFrame or None
        Every pair ``j < k``: ``source, target, partial_correlation, ci_low, ci_high,
        p_value, q_value, selected`` (``method="glasso"``; ``None`` for PACE-GGM).
    centrality_ : DataFrame or None
        Every node: ``node, strength, strength_ci_low, strength_ci_high,
        expected_influence, expected_influence_ci_low, expected_influence_ci_high`` --
        the sum of ``|partial correlation|`` (strength) and of the signed partial
        correlations (expected influence) over the node's pairs selected by Holm's
        procedure at family-wise error ``1 - confidence_level``, with intervals at ``confidence_level`` by the delta
        method (the covariance of the node's pairs' estimates; the edges taken as given;
        :meth:`centrality` for other options). NaN when the selection is withheld;
        ``None`` for PACE-GGM. Post-processing of the release.
    detectable_ : float or None
        The smallest ``|partial correlation|`` the plan detects with 80 % power at ``fdr``
        for an edge between variables without other neighbours (roughly normal columns, a
        sparse graph); ``inf`` when none is. A function of the plan alone (``n``, ``p``,
        the budget, the bound rule, ``planned_missing_share``): equal to
        :meth:`detectable` before the data, identical for every release of the plan.
    detectable_predicted_ : float or None
        The same for an edge whose two variables the other variables predict with
        ``R**2 = 0.5`` (the partner left out): the noise of such an edge is about three
        times larger.
    planned_inference_ : dict or None
        Every public figure of the inference (:meth:`planned_inference`).
    selection_withheld_ : bool
        True when ``select="fdr"`` reported no edge because the plan cannot detect any
        partial correlation even half of the time (its detectable threshold at power 0.5
        is infinite; ``planned_inference_["withheld_by"]``): there the error control is not
        reliable (measured false-discovery rates of 0.2-0.8 at a target of 0.1), so the
        selection is withheld; ``inference_`` keeps every pair's estimate and interval.
        A function of the plan alone.
    inference_calibrated_ : bool
        False when the settings are known to break the inference's calibration (a
        ``bound_fraction`` below half of what ``"auto"`` chooses): a warning is raised and
        the record says so.
    release_ : Release or None
        What the inference reads: the released covariance of the rescaled records
        (``statistic``), the description of its noise, ``n``, the solved precision and
        how the records were clipped (all public).
    min_partial_correlation_ : float
        The edge threshold used.
    plan_ : ReleasePlan
        The measurements the fit made, as :meth:`plan` states them.
    ranges_ : PrivateRanges or None
        The private clipping ranges (``bounds="auto"``); released.
    norm_bound_ : PrivateNormBound or None
        The private row-norm bound; released.
    mean_ : ndarray of shape (p,) or None
        The private mean in raw units (``center="private"``); released.
    noisy_covariance_ : ndarray of shape (p, p) or None
        The released covariance of the rescaled, centered records (``method="glasso"``).
    entry_noise_std_ : float
        The noise standard deviation of one entry of ``noisy_covariance_`` (public).
    alpha_ : float or None
        The graphical-lasso penalty used (rescaled data).
    solver_ : result object or None
        The solver's outcome (``estimate``, ``iterations``, ``converged``, ``objective``).
    repaired_ : bool
        Whether the release had to be repaired to have a graphical-lasso solution.
    graph_estimator_ : PACECovariance or None
        The fitted PACE-GGM run (``method="pace"``).
    bound_fraction_ : Fraction or None
        The share of the budget the bound step used.
    n_clipped_rows_ : int
        Rows changed by clipping. **Curator-only**: computed from the private data.
    clipping_ : dict
        **Curator-only** counts: ``rows``, ``changed``, ``outside_ranges`` (a value
        outside its column's range, or a declared bound), ``over_norm_bound`` (shrunk
        onto the row-norm bound), ``outside_by_column``, ``missing_by_column`` and, with
        ``bounds="auto"``, ``beyond_grid_by_column`` (values of magnitude ``2**40`` or
        more, which the ranges' grid cannot place) and ``tied_share_by_column`` (the share
        of values tied with the center).
    privacy_ : PrivacyGuarantee
        ``budget`` is the total; ``noise["breakdown"]`` lists every step's spend and
        ``notes["plan"]`` the plan.
    n_samples_, n_features_in_, feature_names_in_

    Privacy
    -------
    Sequential composition of (1) ``3 p'`` exponential-mechanism selections, ``p'`` the
    number of columns without a declared range (each ``epsilon``-DP and
    ``epsilon**2/8``-zCDP: cells scored by rank distance, sensitivity 1, plus the cell's
    count for the two center stages, sensitivity 2; none when every range is declared),
    (2) one more for the row-norm bound, (3) a Gaussian (or, under pure DP, Laplace) mean
    of the bounded records and (4) the release of their second moment (or PACE-GGM's
    measurements under a zCDP filter). Every step is planned from public facts (``n``,
    ``p``, the budget and how many ranges are declared), checked against one accountant
    before it runs and booked after; the parts add up to exactly the total. A declared
    range is a public input, like a declared bound: it spends nothing, and the guarantee
    holds only if it was not read off the private data.
    The graph solver, the rescaling to raw units and the edge list are post-processing.

    Examples
    --------
    >>> from dpggm import PrivateGraph, ZCDP
    >>> from dpggm.datasets import make_raw_chain
    >>> frame, truth = make_raw_chain(n_samples=20000, random_state=0)
    >>> graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)
    >>> sorted(graph.edges_.columns)  # each edge with its confidence interval and q-value
    ['ci_high', 'ci_low', 'p_value', 'partial_correlation', 'q_value', 'source', 'target', 'weight']
    """

    _constraints = {
        "bounds": AnyOf(Options("auto"), BOUNDS),
        "column_ranges": COLUMN_RANGES,
        "center": AnyOf(Options("private", "none"), VECTOR),
        "method": Options(*GRAPH_METHODS),
        "neighbors": Options("replace", "add-remove"),
        "count_fraction": fraction(),
        "bound_fraction": AnyOf(Options("auto"), fraction()),
        "center_fraction": fraction(),
        "range_width": Interval(0, None, closed="neither"),
        "norm_quantile": AnyOf(Options(None), Interval(0, 1)),
        "missing": Options("impute", "refuse", "drop"),
        "alpha": AnyOf(Options("auto"), Interval(0, None, closed="left")),
        "min_partial_correlation": AnyOf(Options("auto"), Interval(0, 1, closed="left")),
        "select": Options("fdr", "threshold"),
        "fdr": fraction(),
        "fdr_method": Options("bh", "by"),
        "confidence_level": fraction(),
        "planned_missing_share": Interval(0, 1, closed="left"),
    }

    def __init__(
        self,
        *,
        budget: Any = None,
        bounds: Any = "auto",
        column_ranges: Any = None,
        center: Any = "private",
        method: str = "glasso",
        neighbors: str = "replace",
        count_fraction: float = 0.0625,
        bound_fraction: Any = "auto",
        center_fraction: float = 0.0625,
        range_width: float = RANGE_WIDTH,
        norm_quantile: Any = 0.5,
        missing: str = "impute",
        alpha: Any = "auto",
        select: str = "fdr",
        fdr: float = 0.1,
        fdr_method: str = "bh",
        confidence_level: float = 0.9,
        min_partial_correlation: Any = "auto",
        planned_missing_share: float = 0.0,
        report_delta: float = DEFAULT_REPORT_DELTA,
        random_state: Any = None,
    ) -> None:
        self.budget = budget
        self.bounds = bounds
        self.column_ranges = column_ranges
        self.center = center
        self.method = method
        self.neighbors = neighbors
        self.count_fraction = count_fraction
        self.bound_fraction = bound_fraction
        self.center_fraction = center_fraction
        self.range_width = range_width
        self.norm_quantile = norm_quantile
        self.missing = missing
        self.alpha = alpha
        self.select = select
        self.fdr = fdr
        self.fdr_method = fdr_method
        self.confidence_level = confidence_level
        self.min_partial_correlation = min_partial_correlation
        self.planned_missing_share = planned_missing_share
        self.report_delta = report_delta
        self.random_state = random_state

    # -- settings and plan --------------------------------------------------------------

    def _settings(self) -> GraphSettings:
        """Every parameter checked, before any data are read."""
        params = self._validate_params()
        if params["neighbors"] == "add-remove" and self.method == "pace":
            raise UnsupportedNeighborsError(
                "method 'pace' divides its measurements by the number of records, which is "
                "private under add/remove neighbours; use method='glasso' or "
                "neighbors='replace'")
        check_missing_policy(params["missing"], neighbors=params["neighbors"], drops=False)
        budget = params["budget"]
        auto = isinstance(params["bounds"], str)
        declared = None if auto else params["bounds"]
        if self.method == "pace" and isinstance(declared, RowNorm):
            raise ValueError(
                "bounds: method 'pace' needs a box bound (bounds='auto' or 'box:B'); got "
                f"the row-norm bound 'l2:{declared.bound!r}'")
        column_ranges = params["column_ranges"]
        if column_ranges and declared is not None:
            raise ValueError(
                "column_ranges: declared column ranges go with bounds='auto' (the other "
                "columns get private ranges); a declared bound already bounds every column; "
                f"got bounds={self.bounds!r} and column_ranges={self.column_ranges!r}")
        center = params["center"]
        if not isinstance(center, str):
            center = np.asarray(center, dtype=float)
        accounting = accounting_budget(budget, self.method)
        bound_fraction = params["bound_fraction"]
        return GraphSettings(
            params=params, requested=budget, accounting=accounting, declared=declared, center=center,
            method=self.method,
            bound_fraction=bound_fraction if isinstance(bound_fraction, str)
            else Fraction(bound_fraction),
            center_fraction=Fraction(params["center_fraction"]),
            range_width=float(params["range_width"]),
            norm_quantile=params["norm_quantile"], neighbors=params["neighbors"],
            missing=params["missing"], column_ranges=column_ranges,
            count_fraction=Fraction(params["count_fraction"]),
        )

    @staticmethod
    def _check_sizes(settings: GraphSettings, n: int, p: int) -> None:
        if p < 2:
            raise too_few_variables(p, minimum=2, who="PrivateGraph")
        if n < 2:
            raise too_few_records(n)
        center = settings.public_center
        if center is not None and center.shape != (p,):
            raise ValueError(
                f"center must be a finite public mean vector of length {p}; got shape "
                f"{center.shape}"
            )
        if settings.declared is not None:
            settings.declared.check_dimension(p)
        beyond = [k for k, _, _ in settings.column_ranges if isinstance(k, int) and k >= p]
        if beyond:
            raise ValueError(f"column_ranges: position {beyond[0]} is beyond the {p} columns "
                             f"(positions 0 to {p - 1})")
        if settings.n_declared_ranges > p:
            raise ValueError(f"column_ranges: {settings.n_declared_ranges} ranges declared for "
                             f"{p} columns")

    @staticmethod
    def _check_plan(settings: GraphSettings, plan: ReleasePlan) -> None:
        """Refuse, before any random draw, a budget no exact step can be drawn with, then
        a release that would be pure noise."""
        check_plan_budget_range(plan, settings)
        check_not_hopeless(plan)

    def detectable(self, *, n_samples: int, n_features: int, power: float = 0.8,
                   neighbour_r2: float = 0.0) -> float:
        """The smallest ``|partial correlation|`` an edge needs to be selected with
        probability ``power`` at this estimator's ``fdr``, from public facts only: the
        plan's noise on the second moment, at the row-norm bound the rule is expected to
        choose for roughly normal columns (``bounds="auto"``, ``method="glasso"``), with
        ``planned_missing_share`` of every column's values imputed. ``inf`` when no partial
        correlation would be detected. A fit states exactly this figure (``detectable_``).

        ``neighbour_r2=0`` is an edge between variables without other neighbours (a sparse
        graph); an edge whose variables the other variables predict with ``R**2 =
        neighbour_r2`` (the partner left out) needs more (``detectable_predicted_`` is the
        figure at ``R**2 = 0.5``).

        Privacy
        -------
        Public parameters only; no data are read.
        """
        plan = self.plan(n_samples=n_samples, n_features=n_features)
        value = _detectable(plan, self, power=power, neighbour_r2=neighbour_r2)
        noise = _planned_noise(plan, self) if value is not None and not plan.non_private else 0.0
        if value is not None and noise is not None and noise > NOISE_LIMIT:
            value = math.inf
        if value is None:
            raise ValueError(
                "detectable() needs bounds='auto' and method='glasso': with declared bounds "
                "the data's spread within the bound is unknown before the data, and "
                "PACE-GGM's adaptive measurements have no closed form")
        return value

    def planned_inference(self, *, n_samples: int, n_features: int) -> dict[str, Any]:
        """Every public figure of the edge inference a fit on ``n_samples`` records of
        ``n_features`` columns will state, before the data: ``detectable``,
        ``detectable_predicted`` (at ``R**2 = predicted_r2``), ``withheld`` (whether the
        false-discovery selection will be withheld), ``withheld_by``, ``calibrated`` and
        ``calibration_note``, ``missing_share`` (the declared assumption). A fit records
        exactly these (``detectable_``, ``selection_withheld_``, ...).

        Privacy
        -------
        Public parameters only; no data are read.
        """
        plan = self.plan(n_samples=n_samples, n_features=n_features)
        figures = _planned_inference(plan, self)
        if figures is None:
            raise ValueError(
                "planned_inference() needs bounds='auto' and method='glasso' (see detectable)")
        return figures

    def _detectable_at(self, budget: Any, n: int, p: int) -> float:
        """``detectable`` of this estimator with another budget or size (no refusal of a
        hopeless plan: it detects nothing)."""
        from sklearn.base import clone

        other = clone(self).set_params(budget=budget)
        settings = other._settings()
        try:
            plan = other._plan(settings, n, p)
        except ValueError:
            return math.inf
        value = _detectable(plan, other)
        noise = _planned_noise(plan, other) if value is not None and not plan.non_private else 0.0
        if value is not None and noise is not None and noise > NOISE_LIMIT:
            value = math.inf
        if value is None:
            raise ValueError(
                "planning in reverse needs bounds='auto' and method='glasso' (see detectable)")
        return value

    def required_budget(self, *, partial_correlation: float, n_samples: int,
                        n_features: int) -> Any:
        """The smallest zCDP budget whose plan detects ``|partial_correlation|`` with 80 %
        power at this estimator's ``fdr`` (:meth:`detectable` at that budget is at most it),
        with this estimator's other options, for ``n_samples`` records of ``n_features``
        columns. Returns a :class:`~dpggm.ZCDP` (its ``to_approx(delta)`` gives the
        ``(epsilon, delta)`` form).

        Raises
        ------
        ValueError
            ``partial_correlation`` outside (0, 1), or no budget up to ``rho = 1e6`` would do
            (more records are needed).

        Privacy
        -------
        Public parameters only; no data are read.
        """
        from dpggm.privacy.budgets import ZCDP

        target = _target_strength(partial_correlation)
        n, p = int(n_samples), int(n_features)
        low, high = 1e-8, 1e6
        if self._detectable_at(ZCDP(high), n, p) > target:
            raise ValueError(
                f"no budget detects |partial correlation| {target:g} with {n} records of {p} "
                "columns (even rho = 1e6: the sampling error alone is too large); more "
                "records are needed (required_rows)")
        # detectable falls as rho grows: bisect on log rho to 0.1 %.
        while high / low > 1.001:
            middle = math.sqrt(low * high)
            if self._detectable_at(ZCDP(middle), n, p) <= target:
                high = middle
            else:
                low = middle
        return ZCDP(float(high))

    def required_rows(self, *, partial_correlation: float, n_features: int) -> int:
        """The fewest records for which a fit at this estimator's budget detects
        ``|partial_correlation|`` with 80 % power at its ``fdr`` (:meth:`detectable` at that
        size is at most it), ``n_features`` columns.

        Raises
        ------
        ValueError
            ``partial_correlation`` outside (0, 1), or more than 1e9 rows would be needed.

        Privacy
        -------
        Public parameters only; no data are read.
        """
        target = _target_strength(partial_correlation)
        p = int(n_features)
        budget = self.budget
        low, high = 1, 16
        while self._detectable_at(budget, high, p) > target:
            low, high = high, high * 2
            if high > 10**9:
                raise ValueError(f"more than 1e9 records would be needed to detect "
                                 f"|partial correlation| {target:g} with {p} columns at "
                                 f"{budget}")
        while high - low > 1:
            middle = (low + high) // 2
            if self._detectable_at(budget, middle, p) <= target:
                high = middle
            else:
                low = middle
        return int(high)

    # -- fit: the template of PlannedEstimator, its steps here --------------------------

    def fit(self, X: Any, y: Any = None) -> PrivateGraph:
        """Choose bounds, center and release the graph of ``X``: an array, a DataFrame, the
        path of a CSV or Parquet file (or a ``TableFile``), or a Dask collection."""
        return super().fit(X, y)

    @contextlib.contextmanager
    def _records(self, X: Any, y: Any, settings: GraphSettings) -> Iterator[Any]:
        """The records, opened for passes; the first pass (which needs no released value)
        runs here, while a file is parsed."""
        _check_table_ranges(X, settings)
        with open_records(X, missing=settings.missing) as records:
            if records.sizes_known:
                # The sizes are known: refuse before even the first pass.
                self._check_plan(settings, self._plan(settings, records.n_samples,
                                                      records.n_features))
            with pass_threads():
                first = records.run(first_pass_task(settings))
            yield _GraphRecords(records, first)

    def _plan(self, settings: GraphSettings, n: int, p: int) -> ReleasePlan:
        self._check_sizes(settings, n, p)
        return graph_plan(settings, n, p)

    def _context(self, settings: GraphSettings) -> ReleaseContext:
        # The declared bounds, so that a bound read off the data makes the expected
        # validity (and the ledger's pre-check) "data-dependent" as the record will be.
        return make_context(self, settings.declared)

    #: Every step of the plan, one pass per step that needs released values, run by the
    #: template's plan run (:func:`~dpggm.estimators._graph_pipeline.run_steps`).
    _run = run_steps

    def _finish(self, X: Any, settings: GraphSettings, plan: ReleasePlan, data: Any,
                release: Any, run: Any, ctx: ReleaseContext) -> None:
        # Under add/remove the plan that ran was made from the released count.
        plan = release.plan if release.plan is not None else plan
        self.plan_ = plan
        columns = list(data.records.columns)
        self.bound_fraction_ = (Fraction(plan.notes["bound_fraction"])
                                if "bound_fraction" in plan.notes else None)
        # The solve and the inference make dense p x p factorisations and products: on one
        # BLAS thread (as the solvers do within), since BLAS's threads on busy cores made
        # a Cholesky factorisation 3-17 times slower at p = 1 000-2 000 (measured).
        with pass_threads():
            inner_privacy = self._solve(settings, plan, release)
            self._finish_graph(X, release, columns, plan.n_samples)
        self.privacy_ = self._guarantee(settings, plan, release, run, inner_privacy)
        if self.release_ is not None:
            # The record states what the fit delivers.
            self.release_ = replace(self.release_, guarantee=self.privacy_)

    def _solve(self, settings: GraphSettings, plan: ReleasePlan,
               release: GraphRun) -> PrivacyGuarantee | None:
        """The graph from the release (post-processing), or PACE-GGM's own measurements."""
        n = plan.n_samples
        self.graph_estimator_ = None
        self.solver_ = None
        self.alpha_ = None
        self.repaired_ = False
        record = release.record
        self.noisy_covariance_ = None if record is None else record.statistic
        self.entry_noise_std_ = 0.0 if record is None else float(record.noise.std)
        self.release_ = None
        if settings.method == "pace":
            # Fitted as the plan's graph step, under the fit's one accountant.
            inner = release.graph_estimator
            self.graph_estimator_ = inner
            self._precision_z, self._covariance_z = inner.precision_, inner.covariance_
            self._adjacency_z = np.asarray(inner.adjacency_, dtype=bool)
            return inner.privacy_
        from dpggm.solvers.released import auto_alpha, solve_released

        S = record.statistic
        alpha = (auto_alpha(S, noise_std=record.noise.std, n=n)
                 if isinstance(self.alpha, str) else float(self.alpha))
        result, self.repaired_, _ = solve_released(S, alpha, noise_std=record.noise.std)
        self.alpha_, self.solver_ = float(alpha), result
        self._precision_z, self._covariance_z = result.estimate, result.covariance
        self._adjacency_z = None
        # The release with the solve the edge inference linearises around.
        self.release_ = replace(record, precision=result.estimate, alpha=float(alpha))
        return None

    # -- the released files --------------------------------------------------------------

    def save(self, out: Any, **options: Any) -> dict[str, Any]:
        """Write the released files of this fit into the directory ``out``, whole or not
        at all, charged to ``ledger`` (with ``dataset``) before they appear
        (:meth:`~dpggm.estimators._base.Deliverable.save`, same options).

        The files are those ``dpggm graph`` writes, from the same functions:
        ``result.json`` (:func:`graph_result_record`: sizes, names, guarantee, parameters
        without the seed, public diagnostics, how the edges were chosen and what the
        release can detect), ``edges.csv`` (exactly :attr:`edges_`: the
        selected edges with their intervals and q-values, or the threshold's) and
        ``precision.npy`` (when there is a precision matrix). The pictures (``graph``,
        ``intervals``, ``precision`` as PNG, SVG and PDF) and ``report.html`` are drawn
        by the command line, or by :func:`dpggm.report.build_report` and
        :func:`dpggm.report.html.picture_files` from the saved files
        (:mod:`dpggm.report` sits above the estimators).
        """
        return super().save(out, **options)

    def _release_record(self) -> dict[str, Any]:
        return graph_result_record(self)

    def _stage_release(self, staged: Any, record: dict[str, Any]) -> None:
        stage_graph_release(staged, self, record)

    # -- inference (post-processing of the release) -----------------------------------

    def centrality(self, *, support: str = "familywise",
                   confidence_level: float | None = None) -> Any:
        """Strength and expected influence of every node, with intervals: a
        :class:`~dpggm.solvers.comparison.CentralityInference` (``to_frame(names)`` for a
        table; ``centrality_`` holds the default's).

        ``support="familywise"`` (the default) sums over the pairs Holm's procedure
        selects at family-wise error ``1 - confidence_level``: a node's sum then rarely
        holds a false edge, whose estimate -- large because it was selected -- no interval
        allows for (over the false-discovery selection, ``"selected"``, the 90 % intervals
        covered 0.79-0.86 in the calibration cell of benchmarks/compare_groups.py, over
        Holm's 0.84-0.89); ``"all"`` over every pair (no selection: unbiased for the
        expected influence, but a non-edge adds its noise to the strength, whose estimate
        is then biased upwards). The intervals use the delta method with the covariance
        of the node's pairs' estimates (:func:`~dpggm.solvers.comparison.pair_covariance`),
        the edges taken as given.

        Privacy
        -------
        Post-processing: reads the release and the public description of its noise
        (:attr:`release_`), never the data; spends nothing.
        """
        from dpggm.solvers.comparison import node_centrality

        release = getattr(self, "release_", None)
        if release is None:
            raise ValueError(
                "centrality needs the edge inference of a release of the second moment "
                "(method='glasso')")
        withheld = None
        if getattr(self, "selection_withheld_", False) and support != "all":
            withheld = (self.planned_inference_ or {}).get("withheld_by") or (
                "the selection was withheld")
        inference = (self._inference if confidence_level is None
                     else self.infer(confidence_level=confidence_level))
        return node_centrality(inference, n_samples=release.n_samples,
                               noise_variance=release.noise_variance, support=support,
                               withheld=withheld)

    def infer(self, *, confidence_level: float | None = None, fdr: float | None = None,
              fdr_method: str | None = None, method: str = "closed-form",
              n_bootstrap: int = 200, clipping_correction: str = "intervals",
              test: str = "null-pilot") -> Any:
        """Edge inference on this fit's release, with other options if wanted.

        Returns an :class:`~dpggm.solvers.inference.EdgeInference` (``to_frame(names)``
        for a table). Defaults: the estimator's ``confidence_level``, ``fdr`` and
        ``fdr_method``; the closed form. ``clipping_correction``: ``"intervals"`` (the
        default) removes the row-norm clipping's shrinkage from the estimates and their
        intervals (a Gaussian working model: their estimand is the population's partial
        correlations) while the test of "no edge" reads the release as clipped, which
        keeps a zero at zero; ``"all"`` corrects the tests too (less power: F1 0.71
        against 0.92 on the 30-node raw chain); ``"none"`` corrects nothing (intervals for
        the clipped records' partial correlations, which cover the population's only
        54-63 % of the time for the strong edges of 10-variable graphs at n = 20 000). See
        the user guide's "Edges you can trust". ``test``: how "no edge" is tested
        (:func:`~dpggm.solvers.inference.edge_inference`; the default's null standard
        error comes from the pilot with the tested pair taken out).

        Privacy
        -------
        Post-processing: reads the release and the public description of its noise and
        bounds (:attr:`release_`), never the data; spends nothing.
        """
        from dpggm.solvers.inference import edge_inference

        mode = clipping_correction
        if not isinstance(mode, str) or mode not in ("intervals", "all", "none"):
            raise ValueError("clipping_correction must be one of 'intervals', 'all', 'none'; "
                             f"got {mode!r}")
        release = getattr(self, "release_", None)
        if release is None:
            raise ValueError(
                "edge inference needs a release of the second moment (method='glasso'); "
                "PACE-GGM's adaptive, unevenly noisy measurements are not what it describes")
        return edge_inference(
            release.statistic, n_samples=release.n_samples,
            noise_variance=release.noise_variance, precision=release.precision,
            alpha=release.alpha, clipping=None if mode == "none" else release.clipping,
            clipping_correction="all" if mode == "none" else mode,
            present=release.present, noise_distribution=release.noise_distribution,
            confidence_level=self.confidence_level if confidence_level is None
            else confidence_level,
            fdr=self.fdr if fdr is None else fdr,
            fdr_method=self.fdr_method if fdr_method is None else fdr_method,
            method=method, test=test, n_bootstrap=n_bootstrap)

    def _finish_graph(self, X: Any, release: GraphRun, columns: list[str], n: int) -> None:
        p = len(columns)
        ranges = release.ranges
        scale = ranges.half_width if ranges is not None else np.ones(p)
        shift = ranges.center if ranges is not None else np.zeros(p)
        if not isinstance(self.center, str):
            shift = shift + np.asarray(self.center, dtype=float)
        self.min_partial_correlation_ = (
            max(0.05, math.sqrt(2 * math.log(max(p * (p - 1) / 2, 2)) / n))
            if isinstance(self.min_partial_correlation, str)
            else float(self.min_partial_correlation)
        )
        precision_z = self._precision_z
        self.covariance_ = self._covariance_z * np.outer(scale, scale)
        inference = self.infer() if self.release_ is not None else None
        if precision_z is not None:
            self.precision_ = precision_z / np.outer(scale, scale)
            self.partial_correlation_ = partial_correlation(precision_z)
            off = (np.abs(precision_z) > 0) & (
                np.abs(self.partial_correlation_) >= self.min_partial_correlation_)
        else:
            self.precision_ = None
            self.partial_correlation_ = np.eye(p)
            off = self._adjacency_z.copy()
        self.norm_bound_ = release.norm_bound
        # Public figures of the plan, identical for every release of it (what a fit states
        # is what detectable() said before the data): never read off the noisy release.
        figures = _planned_inference(self.plan_, self) if inference is not None else None
        self.planned_inference_ = figures
        self.detectable_ = None if figures is None else figures["detectable"]
        self.detectable_predicted_ = None if figures is None else figures["detectable_predicted"]
        self.selection_withheld_ = bool(figures is not None and figures["withheld"])
        self.inference_calibrated_ = bool(figures is None or figures["calibrated"])
        if not self.inference_calibrated_:
            import warnings

            warnings.warn(f"the edge inference is not calibrated: {figures['calibration_note']}",
                          UserWarning, stacklevel=4)
        if self.selection_withheld_:
            # Where the plan cannot reach even odds of detecting any partial correlation, the
            # normal approximation behind the p-values fails (the pilot's support is noise):
            # measured FDRs of 0.2-0.8 at a target of 0.1 (docs/inference.md, "Where
            # nothing can be detected"). No edge is reported; the estimates and intervals
            # stay in inference_.
            inference = replace(inference, selected=np.zeros_like(inference.selected))
        if inference is not None and self.select == "fdr":
            off = inference.matrix("selected")
        np.fill_diagonal(off, False)
        self._inference = inference
        self.mean_ = None if release.mean is None else shift + scale * release.mean
        self.ranges_ = ranges
        self._set_fitted(X, n_samples=n, n_features=p, columns=list(columns), privacy=None,
                         covariance=self.covariance_, adjacency=off)
        state = release.moments
        self.clipping_ = {
            "rows": n,
            "changed": int(state.changed_rows),
            "outside_ranges": int(state.outside_rows),
            "over_norm_bound": int(state.over_norm),
            "outside_by_column": {str(c): int(k)
                                  for c, k in zip(columns, state.outside_by_column)},
            "missing_by_column": {str(c): int(k)
                                  for c, k in zip(columns, state.missing_by_column)},
        }
        if release.beyond_grid is not None:
            self.clipping_["beyond_grid_by_column"] = {
                str(c): int(k) for c, k in zip(columns, release.beyond_grid)}
            self.clipping_["tied_share_by_column"] = {
                str(c): float(t) for c, t in zip(columns, release.tied)}
        self.n_clipped_rows_ = int(state.changed_rows)
        if inference is None:
            self.inference_ = None
            self.centrality_ = None
            self.edges_ = edge_table(self.adjacency_, list(columns),
                                     partial=self.partial_correlation_)
        else:
            self.centrality_ = self.centrality().to_frame(list(columns))
            self.inference_ = inference.to_frame(list(columns))[list(INFERENCE_COLUMNS)]
            # With --select fdr an edge's partial correlation is the de-biased one, which
            # its interval and p-value describe.
            partial = (inference.matrix("partial_correlation") if self.select == "fdr"
                       else self.partial_correlation_)
            self.edges_ = edge_table(self.adjacency_, list(columns), partial=partial,
                                     inference=inference)

    def _selection_note(self, settings: GraphSettings) -> str:
        if settings.method == "pace":
            return ("PACE-GGM's measured pattern (edge inference does not describe its "
                    "adaptive, unevenly noisy measurements)")
        if self.select == "fdr" and getattr(self, "selection_withheld_", False):
            return ("false-discovery control withheld: the plan cannot detect any partial "
                    "correlation even half of the time at this budget and size (a public "
                    "figure of the plan: its detectable |partial correlation| at 50 % power "
                    "is none up to 0.99), where the error control is not "
                    "reliable, so no edge is reported (the estimates and intervals of every "
                    "pair are kept; select='threshold' gives a graph without error control)")
        if self.select == "fdr":
            return (f"false-discovery control: pairs whose de-biased partial correlation has a "
                    f"{'Benjamini-Hochberg' if self.fdr_method == 'bh' else 'Benjamini-Yekutieli'}"
                    f" q-value <= {self.fdr:g} (sampling and privacy noise in the standard "
                    f"errors; post-processing of the release)")
        return (f"threshold: non-zero graphical-lasso entries with |partial correlation| >= "
                f"{self.min_partial_correlation_:g}")

    def _guarantee(self, settings: GraphSettings, plan: ReleasePlan, release: GraphRun,
                   run: Any, inner_privacy: PrivacyGuarantee | None) -> PrivacyGuarantee:
        from dpggm.estimators._contract import feature_names

        declared = settings.declared
        if declared is not None:
            bounds_record = declared.to_dict()
        else:
            bounds_record = {"kind": "auto",
                             "ranges": release.ranges.to_dict(feature_names(self)),
                             "rescaled_bound": release.inner_bounds.to_dict()}
            if settings.column_ranges:
                # As the caller declared them (raw units): public, nothing spent on them.
                bounds_record["declared_ranges"] = {
                    str(k): [low, high] for k, low, high in settings.column_ranges}
            if release.norm_bound is not None:
                bounds_record["norm_bound"] = release.norm_bound.to_dict()
        ctx = make_context(self, bounds_record)
        n_private = settings.private_range_columns(len(release.ranges.lower)) if (
            declared is None) else 0
        parts = (["private ranges"] if n_private else []) + (
            ["declared ranges"] if declared is None and settings.column_ranges else []) + (
            ["private norm bound"] if release.norm_bound is not None else []) + (
            ["private mean"] if settings.private_center else []) + [
            "PACE-GGM" if settings.method == "pace"
            else f"{release.record.noise.mechanism} + graphical lasso"]
        mechanism = "PrivateGraph: " + " + ".join(parts)
        notes: dict[str, Any] = {
            "centering": self.center if isinstance(self.center, str) else "public mean",
            "method": settings.method,
            "missing": _MISSING_NOTES[settings.missing],
            "selection": self._selection_note(settings),
        }
        if settings.method != "pace":
            notes["planned_missing_share"] = (
                f"{float(self.planned_missing_share):g}: the public figures (what the release "
                "can detect, whether the selection is withheld) were planned assuming this "
                "share of every column's values missing")
        if not getattr(self, "inference_calibrated_", True):
            notes["inference_calibrated"] = (
                "no: " + self.planned_inference_["calibration_note"])
        if settings.non_private:
            return ctx.guarantee(budget=NonPrivate(), mechanism=mechanism, notes=notes)
        notes["plan"] = plan.to_dict(self.report_delta)
        notes["spent_exactly_total"] = run.spent_exactly_total
        budget = plan.accounting
        if isinstance(settings.requested, ApproxDP):
            # The pipeline ran in the largest rho-zCDP that implies the (epsilon, delta) asked.
            budget = settings.requested
            notes["accounted_as"] = plan.accounting.to_dict()
        elif isinstance(settings.requested, (GDP, PureDP)) and not isinstance(
                plan.accounting, type(settings.requested)):
            notes["requested_budget"] = settings.requested.to_dict()
            notes["accounted_as"] = (
                "the budget implies this zCDP budget, in which every step was run and is "
                "stated (exact noise and the exponential mechanism deliver zCDP)")
        invalid = (inner_privacy.reason if inner_privacy is not None
                   and inner_privacy.validity == "invalid" else None)
        record = ctx.guarantee(budget=budget, mechanism=mechanism,
                               noise={"breakdown": release.steps}, notes=notes,
                               invalid_reason=invalid, caveats=release.caveats)
        return replace(record, equivalent=tuple(
            b for k, b in plan.forms(self.report_delta).items() if b != budget))


def _json_threshold(value: float | None, power: float, **extra: Any) -> dict[str, Any]:
    # JSON has no infinity: null, with a flag, when no edge up to 0.99 is detected.
    finite = value is not None and math.isfinite(value)
    return {"partial_correlation": float(value) if finite else None, "power": power,
            "nothing_detectable": not finite, **extra}


def inference_record(estimator: PrivateGraph) -> dict[str, Any] | None:
    """How a fitted :class:`PrivateGraph` chose its edges and what its plan can detect,
    for ``result.json``; ``None`` without edge inference (PACE-GGM).

    Every figure is public and a function of the plan alone (``n`` and ``p``, public under
    replace-one neighbours; under add/remove the released count the plan was made from;
    the budget; the bound rule; the declared missing share) and the options: ``detectable`` (isolated edges of a
    sparse graph), ``detectable_predicted`` (an edge whose variables the others predict with
    ``R**2`` 0.5), whether the selection was ``withheld`` and by which figure, and whether
    the settings keep the inference ``calibrated`` -- identical for every release of the
    plan, nothing read from the data or the noisy release. One entry is read from the
    release (post-processing, public with it) and says so: ``unreliable``, where the
    refit's completion is singular within the release's noise.
    """
    if getattr(estimator, "inference_", None) is None:
        return None
    record: dict[str, Any] = {
        "select": estimator.select,
        "fdr": float(estimator.fdr),
        "fdr_method": estimator.fdr_method,
        "confidence_level": float(estimator.confidence_level),
        "test": "standard error under no edge, from the pilot without the tested pair",
    }
    if estimator.select == "threshold":
        record["min_partial_correlation"] = float(estimator.min_partial_correlation_)
    figures = getattr(estimator, "planned_inference_", None)
    if getattr(estimator, "selection_withheld_", False):
        record["withheld"] = True
        if figures is not None:
            record["withheld_by"] = figures["withheld_by"]
    if figures is not None:
        record["detectable"] = _json_threshold(
            figures["detectable"], DETECTABLE_POWER,
            assumes="roughly normal columns, a sparse graph: an edge between variables "
                    "without other neighbours")
        record["detectable_predicted"] = _json_threshold(
            figures["detectable_predicted"], DETECTABLE_POWER, r2=figures["predicted_r2"],
            assumes=f"an edge whose two variables the other variables predict with R^2 "
                    f"{figures['predicted_r2']:g} (the partner left out)")
        record["planned_missing_share"] = figures["missing_share"]
        record["calibrated"] = bool(figures["calibrated"])
        if not figures["calibrated"]:
            record["calibration_note"] = figures["calibration_note"]
    inference = getattr(estimator, "_inference", None)
    smallest = None if inference is None else inference.diagnostics.get(
        "near_singular_completion")
    if smallest is not None:
        # Read from the release (post-processing, public with it), not a figure of the
        # plan: the refit's completion is singular within the noise of this release.
        record["unreliable"] = (
            "the refit's completion is singular within the release's noise (smallest "
            f"eigenvalue {float(smallest):.3g}): the variables are too close to collinear "
            "for this budget and size, and the partial correlations, intervals and "
            "q-values are not reliable (read from the release, not from the plan)")
    return record


def graph_result_record(estimator: PrivateGraph) -> dict[str, Any]:
    """The public record of a fitted :class:`PrivateGraph` (``result.json``): sizes, column
    names, the number of edges, the guarantee, the parameters (never the seed) and public
    diagnostics -- nothing computed from the private data beyond the release. ``dpggm
    graph`` adds its command and title."""
    from dpggm.estimators._contract import feature_names

    params = {k: v for k, v in estimator.get_params().items()
              if k not in ("random_state", "budget") and isinstance(v, (int, float, str, bool))}
    params["budget"] = estimator.budget.to_dict()
    p = estimator.n_features_in_
    n_edges = int(estimator.adjacency_.sum() // 2)
    diagnostics: dict[str, Any] = {
        "edges": f"{n_edges} of {p * (p - 1) // 2} possible",
    }
    if estimator.bound_fraction_ is not None:
        diagnostics["share of the budget for the bounds"] = str(estimator.bound_fraction_)
    if estimator.alpha_ is not None:
        diagnostics["graphical-lasso penalty (rescaled data)"] = float(estimator.alpha_)
        diagnostics["solver converged"] = bool(estimator.solver_.converged)
        diagnostics["release repaired to positive definite"] = bool(estimator.repaired_)
    record = {
        "method": estimator.method,
        "n_samples": int(estimator.n_samples_),
        "n_features": int(p),
        "features": feature_names(estimator),
        "n_edges": n_edges,
        "privacy": estimator.privacy_.to_dict(),
        "parameters": params,
        "diagnostics": diagnostics,
    }
    inference = inference_record(estimator)
    if inference is not None:
        record["inference"] = inference
    return record


def stage_graph_release(staged: Any, estimator: PrivateGraph, record: dict[str, Any]) -> None:
    """Write the released files of a fitted :class:`PrivateGraph` that need no drawing into
    ``staged`` (:class:`~dpggm.io.StagedOutput`): ``result.json`` (``record``),
    ``edges.csv`` (exactly ``edges_``), ``precision.npy`` (when there is one) and
    ``centrality.csv`` (exactly ``centrality_``, with edge inference)."""
    staged.json("result.json", record)
    staged.text("edges.csv", edges_csv_text(estimator.edges_))
    if estimator.precision_ is not None:
        staged.npy("precision.npy", estimator.precision_)
    if getattr(estimator, "centrality_", None) is not None:
        from dpggm.io import csv_names_frame

        staged.text("centrality.csv", csv_names_frame(estimator.centrality_, ("node",)).to_csv(
            index=False, float_format="%.10g", lineterminator="\n"))


_MISSING_NOTES = {
    "impute": "impute: a missing value is replaced by the center of its column's released "
              "range (or of the declared box); the ranges' quantiles count the values "
              "present; the moments are divided by the released shares of values present "
              "(per column, and their products for pairs), which undoes the shrinkage of "
              "values missing at random (method 'glasso')",
    "refuse": "refuse: the data had no missing value",
}


@dataclass
class _GraphRecords:
    """The records opened for passes and the first pass's counts."""

    records: Any
    first: Any

    @property
    def n_samples(self) -> int:
        return self.records.n_samples

    @property
    def n_features(self) -> int:
        return self.records.n_features
