"""The pipeline behind :class:`~dpggm.estimators.graph.PrivateGraph`: a plan from public
facts, then one pass over the records per released step.

Budget forms
    Every step is a Gaussian or an exponential mechanism (or, under pure DP, a Laplace or an
    exponential mechanism). The steps compose in one notion, the *accounting* budget:

    * ``ZCDP(rho)``: as given; the exponential mechanism is ``epsilon**2 / 8``-zCDP;
    * ``ApproxDP(epsilon, delta)``: the largest ``rho`` whose tight conversion (Canonne,
      Kamath & Steinke 2020) implies ``(epsilon, delta)``; the pipeline runs in that zCDP
      budget and the record states both forms. Basic composition of the ``3p + 1``
      exponential mechanisms in ``epsilon`` would leave each one a sliver of the budget;
    * ``GDP(mu)``: ``mu**2 / 2``-zCDP (exact noise delivers zCDP, not GDP, and the
      exponential mechanism is no Gaussian mechanism), stated as zCDP;
    * ``PureDP(epsilon)``: pure composition (``epsilon`` adds up), exponential and Laplace
      mechanisms; with ``method="pace"`` the ``epsilon**2 / 2``-zCDP it implies.

    The shares are dyadic fractions of the accounting total, so the steps add up to it
    exactly.

Passes
    With ``bounds="auto"``: (1) median cells, (2) their refinement, (3) the median of the
    deviations not tied with the center (each needs the previous stage's released cells;
    every stage selects the cells of all columns in one batch), (4) the rescaled rows'
    norms (needs the ranges; ``method="glasso"``), (5) the clipped sums ``Z^T Z``, ``Z^T 1``
    and ``n``, from which the private mean and the second moment are both released (the
    centering is folded in: ``S = Z^T Z / n - m m^T`` from released ``m``). A declared bound
    needs pass 5 only. Columns with a declared range (``column_ranges``) are counted but
    not selected: their ranges are used as given, and when every range is declared passes
    2-3 do not run. The counts of passes 1-4 are histograms on public grids
    (:mod:`dpggm.data.passes`), so files and Dask partitions are read, never sorted.

Add/remove neighbours (``neighbors="add-remove"``)
    The number of records is private. The first step releases a noisy count
    (:func:`release_count`, ``count_fraction`` of the total, a share fixed by the total
    alone); the rest of the plan is made from that released count
    (:func:`plan_from_released_count`: the bound shares, the ranges' epsilons and every
    public figure) and spends exactly the rest. The rank scores of the private ranges and
    norm bound keep sensitivity 1 under either relation (adding a record moves every count
    and the target rank the same way, by at most one); the column sums and the Gram
    matrix are released unnormalised with their add/remove sensitivities (``B`` and
    ``B**2``: :func:`~dpggm.mechanisms.release.release_column_sums`,
    :func:`~dpggm.mechanisms.release.release_gram`) and divided by the released count
    (post-processing), as are the counts of values present. Used for one group of
    records whose size is private (:class:`~dpggm.estimators.comparison.
    PrivateGraphComparison`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from dpggm.data import kernels
from dpggm.data.passes import (
    Moments,
    MomentsState,
    NormCounts,
    Ranges,
    Shifted,
    ValueCounts,
)
from dpggm.estimators._base import Settings
from dpggm.exceptions import BudgetRangeError
from dpggm.mechanisms.additive import (
    MAX_RECORDS,
    GaussianMechanism,
    LaplaceMechanism,
    NoisyCount,
)
from dpggm.mechanisms.bounds import Bounds, Box, RowNorm
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.measurement import RuledMeasurement
from dpggm.mechanisms.plan import PlannedMeasurement, PlanRun, ReleasePlan, StepFilter
from dpggm.mechanisms.private_bounds import (
    RANGE_STAGES,
    PrivateNormBound,
    PrivateRanges,
    RangeStages,
    choose_norm_bound,
    exponential_epsilon,
    kept_untied_share,
    norm_budget_needed,
    norm_edges,
    range_budget_needed,
    range_epsilons,
    ranges_locate_columns,
)
from dpggm.mechanisms.record import NoiseDescription, Release
from dpggm.mechanisms.release import matrix_measurement, sums_measurement
from dpggm.mechanisms.sensitivity import (
    gram_l1_sensitivity,
    gram_l2_sensitivity,
    indicator_l2_sensitivity,
    sum_l1_sensitivity,
    sum_l2_sensitivity,
)
from dpggm.privacy.budgets import (
    ZCDP,
    ApproxDP,
    Budget,
    NonPrivate,
    PureDP,
    accounting_total,
    budget_from_cost,
    dyadic_share,
    exact_cost,
    parameter_of,
)

__all__ = [
    "GraphRun",
    "GraphSettings",
    "clipping_model",
    "accounting_budget",
    "check_not_hopeless",
    "check_plan_budget_range",
    "count_step",
    "graph_plan",
    "pass_threads",
    "plan_from_released_count",
    "planned_entry_sigma",
    "predicted_partial_correlation_noise",
    "release_count",
    "run_plan",
    "run_steps",
]

#: Share of the bound step that chooses the row-norm bound (the rest chooses ranges). One
#: selection near the median of n norms needs far less than the ranges' 3 selections per
#: column (``norm_budget_needed``): at n = 442 and rho = 1 a quarter of a half would give it
#: 150 times its need, taken from the ranges.
NORM_SHARE = Fraction(1, 16)

#: Share of the total for the per-column counts of present values (``missing="impute"``).
MISSING_FRACTION = Fraction(1, 64)

#: The released share of present values is floored here before it divides a moment.
_MIN_PRESENT = 0.02

#: The range of an automatic bound fraction: a power of two (so the parts of a float budget
#: stay exact), at least the first and at most the second.
AUTO_BOUND_FRACTIONS = (Fraction(1, 32), Fraction(1, 2))

#: The largest automatic bound fraction spent to keep heavily tied columns' levels apart
#: beyond locating every column (:func:`bound_fraction_for`).
TIED_LEVELS_FRACTION = Fraction(1, 4)


@dataclass(frozen=True, kw_only=True)
class GraphSettings(Settings):
    """The validated settings of one PrivateGraph fit: the template's
    (:class:`~dpggm.estimators._base.Settings`: every declared parameter checked, the
    budget asked for, the total the steps compose in) and, converted, the public facts the
    pipeline reads."""

    declared: Bounds | None
    center: Any
    method: str
    bound_fraction: Any
    center_fraction: Fraction
    range_width: float
    norm_quantile: float | None
    neighbors: str = "replace"
    missing: str = "impute"
    #: Declared public ranges ``(column name or position, low, high)`` (``bounds="auto"``).
    column_ranges: tuple[tuple[str | int, float, float], ...] = ()
    #: Share of the total for the noisy count (``neighbors="add-remove"`` only).
    count_fraction: Fraction = Fraction(1, 16)

    @property
    def add_remove(self) -> bool:
        """Whether the number of records is private (add/remove neighbours)."""
        return self.neighbors == "add-remove"

    @property
    def auto(self) -> bool:
        return self.declared is None

    @property
    def n_declared_ranges(self) -> int:
        return len(self.column_ranges)

    def private_range_columns(self, p: int) -> int:
        """How many columns get a private range: those not declared (a public fact)."""
        return p - self.n_declared_ranges if self.auto and not self.non_private else 0

    @property
    def private_center(self) -> bool:
        return isinstance(self.center, str) and self.center == "private"

    @property
    def public_center(self) -> np.ndarray | None:
        return None if isinstance(self.center, str) else self.center

    @property
    def with_norm(self) -> bool:
        return self.auto and self.method != "pace" and self.norm_quantile is not None


def accounting_budget(budget: Budget, method: str) -> Budget:
    """The notion and total the steps compose in (see the module documentation): a pure-DP
    budget composes in pure DP (``method="glasso"``), everything else in the zCDP it
    implies (:func:`~dpggm.privacy.budgets.accounting_total`, rounded down)."""
    if isinstance(budget, ApproxDP) and budget.delta == 0:
        budget = PureDP(budget.epsilon)
    if isinstance(budget, PureDP) and method != "pace":
        return budget
    return accounting_total(budget, ZCDP)


def _notion_cost(budget: Budget) -> Fraction:
    return exact_cost(budget, type(budget))[0]


def bound_fraction_for(settings: GraphSettings, n: int, p: int) -> Fraction | None:
    """The share of the accounting total for the bound step: ``bound_fraction``, or for
    ``"auto"`` a power of two within :data:`AUTO_BOUND_FRACTIONS`, from ``n`` and ``p``
    only: the smallest that lets every private center land inside its column and every
    spread inside its column's deviations (and the norm bound near its quantile), with
    probability about ``1 - e**-3``; then doubled, while the share stays at most
    :data:`TIED_LEVELS_FRACTION`, until the spreads also keep the levels of heavily tied
    columns (Likert items, 0/1 flags) apart. The budget a plan keeps for tied columns is
    capped because on continuous columns it buys nothing: the plan states which tied
    columns it keeps apart (``kept_untied_share``), and declared ranges cost nothing."""
    if not settings.auto or settings.non_private:
        return None
    private = settings.private_range_columns(p)
    if private == 0 and not settings.with_norm:
        # Every range declared and no norm bound: no bound step at all.
        return None
    if not isinstance(settings.bound_fraction, str):
        return Fraction(settings.bound_fraction)
    available = _notion_cost(settings.accounting)
    low, high = AUTO_BOUND_FRACTIONS
    fraction = low
    located = _bound_need(settings, n, private, keep_ties=False)
    while fraction < high and fraction * available < located:
        fraction *= 2
    tied = _bound_need(settings, n, private, keep_ties=True)
    while fraction < TIED_LEVELS_FRACTION and fraction * available < tied:
        fraction *= 2
    return fraction


def _bound_need(settings: GraphSettings, n: int, private: int, *, keep_ties: bool) -> Fraction:
    """The bound step's need (in the accounting notion's parameter) for ``private``
    columns' ranges and, with a norm bound, its quantile."""
    notion = type(settings.accounting)
    need = (Fraction(exact_cost(range_budget_needed(n=n, p=private, notion=notion,
                                                    keep_ties=keep_ties), notion)[0])
            if private else Fraction(0))
    if settings.with_norm:
        need /= (1 - NORM_SHARE)
        norm_need = exact_cost(norm_budget_needed(
            n=n, quantile=float(settings.norm_quantile), notion=notion), notion)[0]
        need = max(need, Fraction(norm_need) / NORM_SHARE)
    return need


def _additive(mechanism_budget: Budget, size: int, sensitivity: float | None) -> dict[str, Any]:
    """Public noise figures of a Gaussian (or, for pure DP, Laplace) step; none for a
    budget no exact draw can be calibrated to (check_plan_budget_range refuses it)."""
    return _additive_measurement(mechanism_budget, size, sensitivity)[0]


def _additive_measurement(mechanism_budget: Budget, size: int,
                          sensitivity: float | None) -> tuple[dict[str, Any], Any]:
    """The public noise figures of a Gaussian (Laplace for pure DP) step and the mechanism
    calibrated to ``sensitivity`` (to sensitivity 1 when it follows a rule: the noise
    multiplier); no figures and no mechanism for a budget no exact draw can be calibrated
    to (check_plan_budget_range refuses it)."""
    if sensitivity is None:
        # The noise over the sensitivity the rule will set.
        try:
            multiplier = (1.0 / mechanism_budget.epsilon
                          if isinstance(mechanism_budget, PureDP)
                          else 1.0 / math.sqrt(2 * mechanism_budget.rho))
        except (ValueError, ArithmeticError):
            return {}, None
        try:
            unit = _gaussian_or_laplace(mechanism_budget, 1.0, size)
        except (ValueError, ArithmeticError):
            unit = None
        return {"noise_multiplier": multiplier}, unit
    try:
        mechanism = _gaussian_or_laplace(mechanism_budget, sensitivity, size)
    except (ValueError, ArithmeticError):
        return {}, None
    if isinstance(mechanism, LaplaceMechanism):
        return {"laplace_scale": mechanism.scale, "grid": mechanism.grid}, mechanism
    return {"sigma": mechanism.sigma, "grid": mechanism.grid}, mechanism


def _gaussian_or_laplace(budget: Budget, sensitivity: float,
                         size: int) -> GaussianMechanism | LaplaceMechanism:
    if isinstance(budget, PureDP):
        return LaplaceMechanism(sensitivity=sensitivity, size=size, budget=budget)
    return GaussianMechanism(sensitivity=sensitivity, size=size, budget=budget)


def _mechanism_name(budget: Budget) -> str:
    return "discrete laplace" if isinstance(budget, PureDP) else "discrete gaussian"


def _release_steps(settings: GraphSettings, shares: dict[str, Budget], n: int,
                   p: int) -> list[PlannedMeasurement]:
    """The planned centering and graph steps (after any bound steps)."""
    steps: list[PlannedMeasurement] = []
    fixed = settings.declared
    pure = isinstance(settings.accounting, PureDP)
    neighbors = settings.neighbors
    # Under replace-one the normalised statistics (n public); under add/remove the sums
    # themselves, divided by the released count afterwards.
    per = 1 if settings.add_remove else n
    if settings.private_center:
        budget = shares["mean"]
        if fixed is not None:
            sens = (sum_l1_sensitivity if pure else sum_l2_sensitivity)(fixed, p=p,
                                                                        neighbors=neighbors) / per
            rule = ""
        elif settings.add_remove:
            sens = None
            rule = (f"{'sqrt(p) ' if pure else ''}B (the column sums, divided by the released "
                    "count), B the released norm bound")
        else:
            sens = None
            rule = ("2 sqrt(p) / n, records in the box [-1, 1]^p" if settings.method == "pace"
                    else f"2 {'sqrt(p) ' if pure else ''}B / n, B the released norm bound")
        # Calibrated when it runs, to the bounds the records were clipped to (the
        # released ones, or the declared ones with the release's rounding up of B / n).
        measurement = RuledMeasurement(
            _mechanism_name(budget), budget, unit=_additive_measurement(budget, p, None)[1],
            calibrate=_sums_calibration(budget, p, neighbors))
        steps.append(PlannedMeasurement(
            "mean", _mechanism_name(budget), budget, repetitions=1, sensitivity=sens,
            sensitivity_rule=rule, noise=_additive(budget, p, sens), measurement=measurement))
    budget = shares["second moment"]
    if settings.method == "pace":
        mechanism = ("pace-ggm: exponential selections and discrete gaussian measurements "
                     "under a zCDP filter")
        # PACE-GGM's own plan, made when the step runs from the box of the centered
        # records, under the step's filter.
        steps.append(PlannedMeasurement(
            "second moment", mechanism, budget, repetitions=1,
            sensitivity_rule="per entry of S: b_j^2 / n (diagonal), 2 b_j b_k / n (off it), "
                             "b the box of the centered records",
            measurement=RuledMeasurement(mechanism, budget)))
        return steps
    size = p * (p + 1) // 2
    if fixed is not None:
        sens = (gram_l1_sensitivity if pure else gram_l2_sensitivity)(
            fixed, p=p, neighbors=neighbors) / per
        rule = ""
    elif settings.add_remove:
        sens = None
        rule = (("(p + 1) B^2 / 2 (l1)" if pure else "B^2 (l2)")
                + " of the Gram matrix Z^T Z (divided by the released count), B the released "
                  "norm bound")
    else:
        sens = None
        rule = ("(p + 1) B^2 / n (l1)" if pure else "sqrt(2) B^2 / n (l2)") + \
            ", B the released norm bound"
    name = _mechanism_name(budget) + " on the second moment"
    measurement = RuledMeasurement(
        name, budget, unit=_additive_measurement(budget, size, None)[1],
        calibrate=_matrix_calibration(budget, p, neighbors))
    steps.append(PlannedMeasurement(
        "second moment", name, budget, repetitions=1, sensitivity=sens, sensitivity_rule=rule,
        noise=_additive(budget, size, sens), measurement=measurement))
    return steps


def _sums_calibration(budget: Budget, p: int, neighbors: str) -> Any:
    """``calibrate(bounds, n, noise)``: the mechanism of the mean (replace-one) or of the
    column sums (add/remove: ``n`` is 1, the sums are divided by the released count)."""
    return functools.partial(_sums_mechanism, budget, p, neighbors)


def _sums_mechanism(budget: Budget, p: int, neighbors: str, bounds: Bounds, n: int,
                    noise: str) -> Any:
    return sums_measurement(p=p, n=n, bounds=bounds, budget=budget, neighbors=neighbors,
                            noise=noise, calibration="analytic")


def _matrix_calibration(budget: Budget, p: int, neighbors: str) -> Any:
    """``calibrate(bounds, n, noise)``: the mechanism of the second moment (replace-one)
    or of the Gram matrix (add/remove: ``n`` is 1). A partial of a module function, so
    that a fitted estimator's plan pickles."""
    return functools.partial(_matrix_mechanism, budget, p, neighbors)


def _matrix_mechanism(budget: Budget, p: int, neighbors: str, bounds: Bounds, n: int,
                      noise: str) -> Any:
    mechanism = "laplace" if isinstance(budget, PureDP) else "gaussian"
    return matrix_measurement(mechanism=mechanism, p=p, n=n, bounds=bounds, budget=budget,
                              neighbors=neighbors, noise=noise, calibration="analytic")


def graph_plan(settings: GraphSettings, n: int, p: int) -> ReleasePlan:
    """The measurements of a PrivateGraph fit on ``n`` records of ``p`` columns, from
    public facts only."""
    if settings.non_private:
        return ReleasePlan("PrivateGraph", n, p, settings.requested, settings.accounting, (),
                           settings.neighbors, {"reason": "non-private reference run"})
    total = settings.accounting
    fraction = bound_fraction_for(settings, n, p)
    shares: dict[str, Budget] = {}
    steps: list[PlannedMeasurement] = []
    used = Fraction(0)
    notes: dict[str, Any] = {}
    if settings.add_remove:
        steps.append(count_step(settings))
        used += settings.count_fraction
        notes["count_fraction"] = str(settings.count_fraction)
    private = settings.private_range_columns(p)
    if settings.n_declared_ranges:
        notes["declared_ranges"] = settings.n_declared_ranges
    if fraction is not None and private:
        range_share = fraction * ((1 - NORM_SHARE) if settings.with_norm else 1)
        ranges_budget = dyadic_share(total, range_share)
        try:
            eps = range_epsilons(ranges_budget, private, n=n)
        except ValueError:
            # A budget too small for any selection: the plan says so with epsilon 0, and
            # check_plan_budget_range refuses it with the range that works.
            eps = dict.fromkeys(RANGE_STAGES, 0.0)
        steps.append(PlannedMeasurement(
            "bounds", "exponential", ranges_budget, repetitions=3 * private,
            sensitivity=1.0,
            sensitivity_rule="rank scores of cells of public grids"
            + (f" (the {private} columns without a declared range)"
               if settings.n_declared_ranges else ""),
            noise={f"epsilon_{k}": v for k, v in eps.items()},
            # Exponential selections of rank scores of sensitivity 1, run by the stages.
            measurement=RuledMeasurement("exponential", ranges_budget, runs=3 * private)))
        used += range_share
        # Public: how far off its center a tied column's values must lie, in share of the
        # rows, for the plan to keep its levels apart (with probability ~ 1 - e^-3).
        notes["tied_columns_keep_levels_from_untied_share"] = min(
            1.0, kept_untied_share(n=n, epsilon_spread=eps["spread"]))
    if fraction is not None and settings.with_norm:
        norm_budget = dyadic_share(total, fraction * NORM_SHARE)
        steps.append(PlannedMeasurement(
            "norm bound", "exponential", norm_budget, repetitions=1, sensitivity=1.0,
            sensitivity_rule="rank score of the rescaled rows' norms",
            noise={"epsilon": exponential_epsilon(norm_budget)},
            measurement=RuledMeasurement("exponential", norm_budget)))
        used += fraction * NORM_SHARE
    if fraction is not None:
        # The share the bound steps spend (with every range declared, the norm bound's
        # part alone: the ranges' part goes to the release).
        notes["bound_fraction"] = str(used)
        if not isinstance(settings.bound_fraction, str):
            # What "auto" would choose, for the record's calibration check.
            auto = bound_fraction_for(replace(settings, bound_fraction="auto"), n, p)
            if auto is not None:
                notes["auto_bound_fraction"] = str(auto)
                notes["requested_bound_fraction"] = str(fraction)
    if settings.missing == "impute" and settings.method != "pace":
        budget = dyadic_share(total, MISSING_FRACTION)
        pure = isinstance(total, PureDP)
        sens = float(p) if pure else indicator_l2_sensitivity(p)
        figures, measurement = _additive_measurement(budget, p, sens)
        steps.append(PlannedMeasurement(
            "missing counts", _mechanism_name(budget), budget, repetitions=1, sensitivity=sens,
            sensitivity_rule=f"per-column counts of present values ({'l1' if pure else 'l2'})",
            noise=figures, measurement=measurement))
        used += MISSING_FRACTION
    if settings.private_center:
        shares["mean"] = dyadic_share(total, settings.center_fraction)
        used += settings.center_fraction
        notes["center_fraction"] = str(settings.center_fraction)
    if used >= 1:
        raise ValueError(
            "the bound and centering shares leave nothing for the graph: bound_fraction + "
            f"center_fraction{' + count_fraction' if settings.add_remove else ''} must be "
            f"< 1; got {fraction} + {settings.center_fraction}"
            + (f" + {settings.count_fraction}" if settings.add_remove else "")
        )
    # The graph gets exactly what remains.
    spent = sum((_notion_cost(s.budget) for s in steps), Fraction(0))
    if "mean" in shares:
        spent += _notion_cost(shares["mean"])
    shares["second moment"] = budget_from_cost(type(total), (_notion_cost(total) - spent,))
    steps.extend(_release_steps(settings, shares, n, p))
    return ReleasePlan("PrivateGraph", n, p, settings.requested, total, tuple(steps),
                       settings.neighbors, notes)


#: The fewest records a plan made from a released count is made for (a count released
#: below it is taken as this many: planning only, the data are unchanged).
MIN_PLANNING_COUNT = 2


def count_step(settings: GraphSettings) -> PlannedMeasurement:
    """The noisy count of an add/remove plan: ``count_fraction`` of the total, a share
    fixed by the total alone (so that the count can be released before the rest of the
    plan is made from it)."""
    budget = dyadic_share(settings.accounting, settings.count_fraction)
    measurement = NoisyCount(budget)
    return measurement.planned(
        "count", sensitivity_rule="one record added or removed moves the count by 1")


def release_count(n: int, ctx: ReleaseContext, run: PlanRun) -> float:
    """The noisy count of ``n`` records (add/remove: the first step of ``run``, checked
    against its accountant before and booked after, the count in its breakdown entry)."""
    def release(planned: PlannedMeasurement) -> tuple[float, dict[str, Any]]:
        noisy = planned.measurement.release(int(n), ctx.source)
        return noisy, {**planned.noise, "released_count": noisy}

    return run.measure("count", release)


def planning_count(noisy: float) -> int:
    """The size a plan is made for from a released count (public)."""
    return max(int(round(float(noisy))), MIN_PLANNING_COUNT)


def plan_from_released_count(settings: GraphSettings, noisy: float, p: int) -> ReleasePlan:
    """The plan of an add/remove fit, made from its released count (post-processing of a
    released value): the bound shares, the ranges' epsilons and the public figures follow
    from it; the count step is the one already run."""
    plan = graph_plan(settings, planning_count(noisy), p)
    return replace(plan, notes={**plan.notes, "planned_from": "the released count",
                                "released_count": float(noisy)})


#: Share of the rescaled columns' variance left after the rows longer than the median norm
#: are shrunk.
_AFTER_NORM_CLIPPING = 0.8


def planned_entry_sigma(plan: ReleasePlan, bound_squared: float) -> float | None:
    """The noise standard deviation on one released second-moment entry of the rescaled
    records, from the plan's noise multiplier at a row-norm bound ``B`` with ``B**2 =
    bound_squared`` (``None`` when the second moment's noise follows no rule on ``B``).

    Under replace-one the second moment has sensitivity ``sqrt(2) B**2 / n`` (l2; Laplace:
    ``(p + 1) B**2 / n`` in l1, variance ``2 b**2``); under add/remove the Gram is released
    with sensitivity ``B**2`` (``(p + 1) B**2 / 2``) and divided by the count the plan was
    made from.
    """
    graph = next((s for s in plan.steps if s.step == "second moment"), None)
    if graph is None or "noise_multiplier" not in graph.noise:
        return None
    n, p = plan.n_samples, plan.n_features
    multiplier = graph.noise["noise_multiplier"]
    add_remove = plan.neighbors == "add-remove"
    if isinstance(graph.budget, PureDP):
        return (0.5 if add_remove else 1.0) * math.sqrt(2.0) * (p + 1) * bound_squared / n * \
            multiplier
    return (1.0 if add_remove else math.sqrt(2.0)) * bound_squared / n * multiplier


def predicted_partial_correlation_noise(plan: ReleasePlan) -> float | None:
    """The privacy noise's standard deviation on one partial correlation, predicted from
    public facts for roughly normal columns under ``bounds="auto"`` (``None`` when it
    cannot be predicted: declared bounds, PACE, or a non-private run).

    The rescaled columns have variance ``v = 1 / (5 * 0.674)**2``
    (:data:`~dpggm.solvers.inference.RESCALED_VARIANCE`); the norm bound sits near the
    median row norm, ``B**2 ~ p v``; the second moment's noise is
    :func:`planned_entry_sigma` at that bound, and a partial correlation of weakly
    dependent columns moves by that noise over the (clipped) variance.
    """
    from dpggm.solvers.inference import RESCALED_VARIANCE

    if not any(s.step == "norm bound" for s in plan.steps):
        return None
    entry = planned_entry_sigma(plan, plan.n_features * RESCALED_VARIANCE)
    if entry is None:
        return None
    return entry / (_AFTER_NORM_CLIPPING * RESCALED_VARIANCE)


def check_not_hopeless(plan: ReleasePlan) -> None:
    """Refuse, before any data are read or noise drawn, a release that would be pure noise:
    private ranges that cannot even locate their columns (:func:`check_ranges_locate`), or
    a predicted noise of one partial correlation above 1 (no partial correlation exceeds
    1)."""
    noise = predicted_partial_correlation_noise(plan)
    if noise is not None and noise > 1.0:
        raise ValueError(
            f"this release would be pure noise: with {plan.n_samples} records, "
            f"{plan.n_features} columns and {plan.requested}, the privacy noise on each "
            f"partial correlation has a standard deviation of about {noise:.3g} (a partial "
            "correlation is at most 1). Use more records, fewer columns or a larger budget: "
            "the noise falls like p / (n sqrt(rho))"
        )
    check_ranges_locate(plan)


def check_ranges_locate(plan: ReleasePlan) -> None:
    """Refuse, before any draw, private ranges whose medians would land anywhere on a grid
    that spans every magnitude (:func:`~dpggm.mechanisms.private_bounds.
    ranges_locate_columns`), naming what they need and the way out: declared ranges."""
    steps = {s.step: s for s in plan.steps}
    bounds = steps.get("bounds")
    if bounds is None:
        return
    epsilons = {k[len("epsilon_"):]: v for k, v in bounds.noise.items()}
    n = plan.n_samples
    if ranges_locate_columns(epsilons, n=n):
        return
    private = bounds.repetitions // 3
    notion = type(bounds.budget)
    need = range_budget_needed(n=n, p=private, notion=notion, locate=True)
    name, have = parameter_of(bounds.budget)
    raise ValueError(
        f"bounds='auto' cannot locate the columns: with {n} records and {private} columns "
        f"without a declared range, the private ranges need {name} >= "
        f"{parameter_of(need)[1]:.3g} to find each column's center and scale, and "
        f"{plan.requested} leaves them {name} = {have:.3g} (the share "
        f"{plan.notes.get('bound_fraction')} of the total for the bounds). Declare the "
        "public scales of the columns instead (column_ranges={'item_1': (1, 6), ...}; "
        "dpggm graph --scale or --schema), or use a larger budget, more records or fewer "
        "columns")


def check_plan_budget_range(plan: ReleasePlan, settings: GraphSettings) -> None:
    """Refuse, before the first random draw, a budget for which one of the plan's exact
    Gaussian or Laplace steps cannot be drawn (its noise beyond the exact samplers' range,
    or its statistic beyond the grid's), naming the range that works.

    Every part is stated on the records rescaled into ``[-1, 1]^p`` (or the declared
    bound): the private bounds and the centering rescale the sensitivity and the values by
    the same factor, which leaves the noise in grid steps unchanged. The exponential
    mechanisms have no such limit.
    """
    if settings.non_private:
        return
    from dpggm.mechanisms.additive import NoisePart, check_budget_range

    n, p = plan.n_samples, plan.n_features
    total = _notion_cost(plan.accounting)
    shares_of = plan
    if total == 0:
        # A zero budget: the parts' shares come from the same plan at a nominal total.
        nominal = budget_from_cost(type(plan.accounting), (Fraction(1),))
        shares_of = graph_plan(replace(settings, accounting=nominal), n, p)
        total = Fraction(1)
    bounds = settings.declared if settings.declared is not None else Box(1.0)
    pure = isinstance(plan.accounting, PureDP)
    parts: list[Any] = []
    # Under add/remove the sums are released unnormalised: their size is bounded through
    # the most records a release is analysed for (n is private).
    neighbors = settings.neighbors
    per, records = (1, float(MAX_RECORDS)) if settings.add_remove else (n, 1.0)
    for step in shares_of.steps:
        share = _notion_cost(step.budget) / total
        if step.step == "count":
            parts.append(NoisePart(share=share, sensitivity=1.0, size=1,
                                   value_bound=float(MAX_RECORDS), laplace=pure))
        elif step.step == "missing counts":
            parts.append(NoisePart(share=share, sensitivity=float(step.sensitivity), size=p,
                                   value_bound=float(MAX_RECORDS if settings.add_remove else n),
                                   laplace=pure))
        elif step.step == "mean":
            sens = (sum_l1_sensitivity if pure else sum_l2_sensitivity)(
                bounds, p=p, neighbors=neighbors) / per
            parts.append(NoisePart(share=share, sensitivity=sens, size=p,
                                   value_bound=bounds.row_norm(p) * records, laplace=pure))
        elif step.step == "second moment" and settings.method != "pace":
            sens = (gram_l1_sensitivity if pure else gram_l2_sensitivity)(
                bounds, p=p, neighbors=neighbors) / per
            parts.append(NoisePart(share=share, sensitivity=sens, size=p * (p + 1) // 2,
                                   value_bound=bounds.row_norm(p) ** 2 * records,
                                   laplace=pure))
        elif step.step == "second moment":
            from dpggm.estimators.pace import PACECovariance, pace_noise_parts
            from dpggm.mechanisms.sensitivity import second_moment_entry_sensitivity

            box = bounds if isinstance(bounds, Box) else Box(1.0)
            defaults = PACECovariance().get_params()
            parts += pace_noise_parts(
                second_moment_entry_sensitivity(box, n=n, p=p, neighbors="replace"),
                box.vector(p), diag_fraction=Fraction(defaults["diag_fraction"]),
                select_fraction=Fraction(defaults["select_fraction"]),
                max_rounds=max(1, p * (p - 1)), scale=share)
    release = f"a graph of {p} columns from n = {n} rows"
    requested = settings.requested
    if type(requested) is type(plan.accounting):
        check_budget_range(plan.accounting, parts, release=release)
        return
    try:
        check_budget_range(plan.accounting, parts, release=release)
    except BudgetRangeError as exc:
        # The pipeline runs in zCDP; the caller gave another form: state the range in it.
        name, value, convert = _requested_form(requested)
        low = convert(exc.low) if exc.low > 0 else 0.0
        high = convert(exc.high)
        raise BudgetRangeError(
            f"budget: {name} must be in [{low:.3g}, {high:.3g}] for {release}, run in zCDP at "
            f"the rho that {requested} implies; got {name}={value!r}",
            parameter=name, value=value, low=low, high=high) from None


def _requested_form(requested: Budget) -> tuple[str, float, Any]:
    """The requested budget's parameter, its value (:func:`~dpggm.privacy.budgets.
    parameter_of`), and the map from the zCDP ``rho`` it is run in back to that parameter
    (for messages)."""
    name, value = parameter_of(requested)
    if isinstance(requested, ApproxDP):
        return name, value, lambda rho: ZCDP(rho).to_approx(requested.delta).epsilon
    return name, value, lambda rho: math.sqrt(2 * rho)


# ------------------------------------------------------------------------------ running


@dataclass
class GraphRun:
    """What the steps of a run drew (public) and counted (curator-only), step by step; the
    released statistic is ``record``, what the solver, the inference and the report read.
    """

    ranges: PrivateRanges | None = None
    norm_bound: PrivateNormBound | None = None
    inner_bounds: Bounds | None = None
    mean: np.ndarray | None = None
    moments: MomentsState | None = None
    beyond_grid: np.ndarray | None = None
    tied: np.ndarray | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    #: The fitted PACE-GGM run of the ``graph`` step (``method="pace"``).
    graph_estimator: Any = None
    #: The plan that ran (add/remove: made from the released count).
    plan: ReleasePlan | None = None
    #: The released count (add/remove), its value as drawn.
    count: float | None = None
    #: The released covariance of the rescaled, centered records with its public
    #: description (``None`` for PACE-GGM, whose measurements are its own).
    record: Release | None = None


def clipping_model(settings: GraphSettings, norm_bound: PrivateNormBound | None,
                   mean: np.ndarray | None) -> Any:
    """The clipping the release went through, for the inference's bias correction: the
    records rescaled into ``[-1, 1]^p`` and shrunk onto the released row-norm bound
    (``bounds="auto"``), or onto a declared row-norm bound; no closed form for a declared
    box (``None``)."""
    from dpggm.solvers.inference import ClippingModel

    if settings.declared is None:
        if norm_bound is None:
            return None
        return ClippingModel(row_norm_bound=norm_bound.bound, box=1.0, mean=mean,
                             recenter=False)
    if isinstance(settings.declared, RowNorm):
        return ClippingModel(row_norm_bound=settings.declared.bound, box=None, mean=mean,
                             recenter=False)
    return None


class _Steps:
    """The steps of a PrivateGraph fit, in order, run by the fit template's one
    :class:`~dpggm.mechanisms.plan.PlanRun` (each checked against its accountant, run
    through the measurement its plan holds, then booked: only what ran is spent)."""

    def __init__(self, settings: GraphSettings, run: PlanRun, records: Any,
                 ctx: ReleaseContext) -> None:
        self.settings, self.run, self.records, self.ctx = settings, run, records, ctx
        self.plan = run.plan
        self.steps = {s.step: s for s in self.plan.steps}
        self.out = GraphRun(plan=self.plan)
        # The working values the steps pass on to the record: the second moment before
        # centering, the noise of one of its entries, the shares of values present.
        self._second_moment: np.ndarray | None = None
        self._entry_noise_std = 0.0
        self._shares_present: np.ndarray | None = None

    @property
    def divisor(self) -> int:
        """What the sums are divided by: ``n`` (public under replace-one), or under
        add/remove the count the plan was made from (released)."""
        return self.plan.n_samples

    def _run(self, task: Any) -> Any:
        shift = self.settings.public_center
        with pass_threads():
            return self.records.run(task if shift is None else Shifted(task, shift))


    def ranges(self, first: Any, declared: DeclaredRanges) -> None:
        """The per-column ranges: declared ones as given (nothing spent), the others chosen
        privately from the counts (the ``bounds`` step, booked; absent when every range is
        declared)."""
        rng = self.ctx.source
        p = self.plan.n_features
        epsilons = ({k[len("epsilon_"):]: v for k, v in self.steps["bounds"].noise.items()}
                    if "bounds" in self.steps else {})
        stages = RangeStages(epsilons=epsilons, width=self.settings.range_width)
        exact = self.settings.non_private
        shift = self.settings.public_center
        mask = declared.mask(p)
        private = np.flatnonzero(~mask)
        lower = np.empty(p)
        upper = np.empty(p)
        # A declared range is in raw units; the records are seen minus a public center.
        lower[mask] = declared.lower - (0.0 if shift is None else shift[declared.index])
        upper[mask] = declared.upper - (0.0 if shift is None else shift[declared.index])

        def run(planned: Any) -> tuple[PrivateRanges, dict[str, Any]]:
            chosen = self._private_ranges(stages, first, private, lower[mask], upper[mask],
                                          mask, rng, exact)
            lower[private], upper[private] = chosen.lower, chosen.upper
            budget = planned.budget if not exact else NonPrivate()
            return (PrivateRanges(lower=lower, upper=upper, budget=budget,
                                  epsilons=dict(epsilons), width=chosen.width,
                                  declared=mask),
                    {"mechanism": "exponential-mechanism median and spread",
                     "epsilons": dict(epsilons)})

        if private.size == 0:
            # Every range declared: nothing to choose, nothing spent.
            budget = NonPrivate() if exact else dyadic_share(self.plan.accounting, 0)
            self.out.ranges = PrivateRanges(lower=lower, upper=upper, budget=budget,
                                            epsilons={}, width=stages.width, declared=mask)
            self.out.beyond_grid = np.zeros(p, dtype=np.int64)
            self.out.tied = np.zeros(p)
        elif exact:
            self.out.ranges, _ = run(None)
        else:
            self.out.ranges = self.run.measure("bounds", run)
        if shift is not None:
            # A public center: keep it, with a symmetric range about it.
            r = self.out.ranges
            half = np.maximum(np.abs(r.lower), np.abs(r.upper))
            self.out.ranges = replace(r, lower=-half, upper=half)
        self.out.inner_bounds = Box(1.0)

    def _private_ranges(self, stages: RangeStages, first: Any, private: np.ndarray,
                        declared_lower: np.ndarray, declared_upper: np.ndarray,
                        mask: np.ndarray, rng: Any, exact: bool) -> PrivateRanges:
        """The three stages on the columns ``private`` (each pass counts every column, the
        declared ones on grids spanning their ranges, and keeps the private ones)."""
        p = mask.size
        lower, upper = _choose_median(stages, _rows_of(first, private), rng, exact)
        full_lower, full_upper = np.empty(p), np.empty(p)
        full_lower[mask], full_upper[mask] = declared_lower, declared_upper
        full_lower[private], full_upper[private] = lower, upper
        edges = stages.refine_edges(full_lower, full_upper)
        refine = _rows_of(self._run(ValueCounts(edges, kernels.LINEAR)), private)
        lower, upper = _choose(stages, "refine", refine, rng, exact, edges=edges[private])
        center = np.zeros(p)
        radius = np.zeros(p)
        center[private] = (lower + upper) / 2
        radius[private] = stages.tie_radius(lower, upper)
        spread_counts = self._run(ValueCounts(
            stages.spread_edges, kernels.GEOMETRIC, centers=center, tie_radius=radius))
        spread_counts = _rows_of(spread_counts, private)
        # Curator-only: values the median grid cannot place, and the ties.
        self.out.beyond_grid = np.zeros(p, dtype=np.int64)
        self.out.beyond_grid[private] = (first.counts[private, 0]
                                         + first.counts[private, -1])
        self.out.tied = np.zeros(p)
        self.out.tied[private] = spread_counts.tied / np.maximum(spread_counts.counted, 1)
        spread = _choose_spread(stages, spread_counts, rng, exact)
        return stages.ranges(center[private], spread, NonPrivate())

    def norm_bound(self) -> None:
        p, n = self.plan.n_features, self.plan.n_samples
        cap = math.sqrt(p)
        r = self.out.ranges
        counts = self._run(NormCounts(Ranges(r.lower, r.upper), norm_edges(cap)))
        quantile = float(self.settings.norm_quantile)

        def run(planned: Any) -> tuple[PrivateNormBound, dict[str, Any]]:
            chosen = choose_norm_bound(counts.below(), n, cap=cap, budget=planned.budget,
                                       quantile=quantile, rng=self.ctx.source)
            return chosen, {"epsilon": chosen.epsilon}

        if self.settings.non_private:
            below = counts.below()
            index = int(np.argmin(np.abs(below - int(round(quantile * n)))))
            self.out.norm_bound = PrivateNormBound(float(norm_edges(cap)[index]), cap,
                                                   quantile, math.inf, NonPrivate())
        else:
            self.out.norm_bound = self.run.measure("norm bound", run)
        self.out.inner_bounds = RowNorm(self.out.norm_bound.bound)

    def moments(self, first: Any = None) -> MomentsState:
        r = self.out.ranges
        task = Moments(
            ranges=None if r is None else Ranges(r.lower, r.upper),
            norm_bound=None if self.out.norm_bound is None else self.out.norm_bound.bound,
            declared=self.settings.declared,
        )
        state = first if first is not None else self._run(task)
        self.out.moments = state
        if self.settings.declared is not None:
            self.out.inner_bounds = self.settings.declared
        return state

    def release(self, state: MomentsState) -> None:
        """The private mean and second moment from the clipped sums (pass 5)."""
        gram, total, n = state.second_moment_sums()
        bounds = self.out.inner_bounds
        if self.settings.missing == "impute" and self.settings.method != "pace":
            self._present(state, n)
        if self.settings.non_private:
            self._second_moment = (gram + gram.T) / (2 * n)
            self.out.mean = total / n if self.settings.private_center else None
        elif self.settings.add_remove:
            self._release_sums(gram, total, bounds)
            n = self.divisor
        else:
            if self.settings.private_center:
                # Unprefixed noise keys: the step's record reads as its plan does.
                self.out.mean = self.run.measure("mean", lambda planned: self._sums(
                    total / n, n, bounds, planned))
            if self.settings.method != "pace":
                self._second_moment = self.run.measure(
                    "second moment", lambda planned: self._matrix(gram, n, bounds, planned))
        self._center(gram, total, n)
        if self.settings.method == "pace":
            self._pace(n)

    def _release_sums(self, gram: np.ndarray, total: np.ndarray, bounds: Bounds) -> None:
        """Add/remove: the column sums and the Gram matrix, unnormalised, each divided by
        the released count (post-processing)."""
        divisor = float(self.divisor)
        if self.settings.private_center:
            self.out.mean = self.run.measure("mean", lambda planned: _divided(
                self._sums(np.asarray(total, dtype=float), 1, bounds, planned), divisor))

        def run(planned: PlannedMeasurement) -> tuple[np.ndarray, dict[str, Any]]:
            noisy, record = self._matrix(gram, 1, bounds, planned)
            self._entry_noise_std /= divisor
            return noisy / divisor, record

        self._second_moment = self.run.measure("second moment", run)

    def _pace(self, n: int) -> None:
        """PACE-GGM on the exact centered second moment of the boxed records, as the planned
        ``graph`` step: checked before, booked at the budget the fit delivered (its
        ``privacy_.budget``: its rounds spend exactly the step's budget under their
        filter)."""
        from dpggm.data.records import SecondMoment
        from dpggm.estimators.pace import PACECovariance

        columns = list(self.records.columns)

        def fit(budget: Budget) -> Any:
            inner = PACECovariance(budget=budget, bounds=self.out.inner_bounds,
                                   random_state=self.ctx.source,
                                   report_delta=self.ctx.report_delta)
            # The exact second moment of records already clipped into inner_bounds.
            stats = SecondMoment(second_moment=self._second_moment,
                                 total=np.zeros(len(columns)), n=n, n_clipped=0,
                                 columns=columns)
            if isinstance(budget, NonPrivate):
                return inner.fit(stats)
            # Its two steps (the diagonal, the rounds) run under the step's filter: the
            # fit keeps its one accountant.
            return inner.fit_as_step(stats, StepFilter(budget))

        if self.settings.non_private:
            self.out.graph_estimator = fit(NonPrivate())
            return

        def run(planned: PlannedMeasurement) -> tuple[Any, dict[str, Any]]:
            inner = fit(planned.budget)
            return inner, {k: v for k, v in inner.privacy_.noise.items() if k != "breakdown"}

        self.out.graph_estimator = self.run.measure(
            "second moment", run, delivered=lambda inner: inner.privacy_.budget)

    def _present(self, state: MomentsState, n: int) -> None:
        """The share of values present in each column, from released counts over the
        public ``n``: raised by two noise standard deviations (a public figure) and capped
        at 1, so that the noise of the counts cannot shrink a complete column's moments;
        floored at a small public share."""
        observed = n - state.missing_by_column
        if self.settings.non_private:
            self._shares_present = np.clip(observed / n, _MIN_PRESENT, 1.0)
            return
        # Under add/remove the shares are over the released count (n is private).
        n = self.divisor
        noise: dict[str, Any] = {}

        def run(planned: PlannedMeasurement) -> tuple[np.ndarray, dict[str, Any]]:
            measurement = planned.measurement
            counts = measurement.release(np.asarray(observed, dtype=float), self.ctx.source)
            record = measurement.record("")
            noise.update(record)
            return counts, record

        counts = self.run.measure("missing counts", run)
        spread = noise.get("sigma", noise.get("laplace_scale", 0.0))
        if "laplace_scale" in noise:
            spread = math.sqrt(2.0) * spread
        self._shares_present = np.clip((counts + 2.0 * spread) / n, _MIN_PRESENT, 1.0)

    def _sums(self, values: np.ndarray, n: int, bounds: Bounds,
              planned: PlannedMeasurement) -> tuple[np.ndarray, dict[str, Any]]:
        """The mean (replace-one: ``values`` the sums over ``n``) or the column sums
        (add/remove: ``n`` is 1), by the planned measurement calibrated to ``bounds``."""
        measurement = planned.measurement.calibrated(bounds, n, self.ctx.noise)
        return measurement.release(values, self.ctx.source), measurement.record("")

    def _matrix(self, gram: np.ndarray, n: int, bounds: Bounds,
                planned: PlannedMeasurement) -> tuple[np.ndarray, dict[str, Any]]:
        """The symmetric statistic ``(G + G^T) / 2n`` (replace-one) or the Gram matrix
        (add/remove: ``n`` is 1), noise on its upper triangle by the planned measurement
        calibrated to ``bounds``; the noise of one entry is kept for the solver."""
        measurement = planned.measurement.calibrated(bounds, n, self.ctx.noise)
        p = gram.shape[0]
        upper = np.triu_indices(p)
        noisy = np.zeros((p, p))
        noisy[upper] = measurement.release(((gram + gram.T) / (2 * n))[upper], self.ctx.source)
        noisy = noisy + np.triu(noisy, 1).T
        self._entry_noise_std = float(
            measurement.sigma if isinstance(measurement, GaussianMechanism)
            else math.sqrt(2.0) * measurement.scale)
        return noisy, measurement.record()

    def _center(self, gram: np.ndarray, total: np.ndarray, n: int) -> None:
        """The covariance of the centered records, from released values (post-processing);
        for PACE the exact centered second moment and its box, from the sums and the
        released mean."""
        mean = self.out.mean
        if self.settings.method == "pace":
            exact = (gram + gram.T) / (2 * n)
            if mean is not None:
                sums = total / n
                exact = exact - np.outer(mean, sums) - np.outer(sums, mean) + np.outer(mean, mean)
                box = self.out.inner_bounds.vector(len(mean)) + np.abs(mean)
                self.out.inner_bounds = Box(tuple(box))
            self._second_moment = exact
            return
        covariance = self._second_moment
        present = self._shares_present
        if present is not None:
            # Values imputed at the center shrink the moments of a column by its share of
            # present values, and a pair's by the share present in both (about the
            # product when values are missing at random); dividing undoes it.
            pairs = np.outer(present, present)
            np.fill_diagonal(pairs, present)
            covariance = covariance / pairs
            self._entry_noise_std /= float(np.min(present)) ** 2
            if mean is not None:
                mean = mean / present
                self.out.mean = mean
        if mean is not None:
            covariance = covariance - np.outer(mean, mean)
        # A pure-DP budget releases the second moment with (discrete) Laplace noise.
        kind = "laplace" if isinstance(self.plan.accounting, PureDP) else "gaussian"
        self.out.record = Release(
            statistic=covariance, n_samples=self.plan.n_samples,
            noise=NoiseDescription(kind=kind, std=float(self._entry_noise_std),
                                   mechanism=f"{kind} second moment"),
            mean=self.out.mean, present=self._shares_present, columns=list(self.records.columns),
            clipping=clipping_model(self.settings, self.out.norm_bound, self.out.mean))


def _rows_of(counts: Any, rows: np.ndarray) -> Any:
    """The counts of the columns ``rows`` only."""
    return replace(counts, counts=counts.counts[rows], missing=counts.missing[rows],
                   tied=counts.tied[rows])


@dataclass(frozen=True)
class DeclaredRanges:
    """Declared public ranges resolved against the columns: positions (ascending), names
    and ``(lower, upper)`` in raw units."""

    index: np.ndarray
    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray

    def mask(self, p: int) -> np.ndarray:
        mask = np.zeros(p, dtype=bool)
        mask[self.index] = True
        return mask


def resolve_column_ranges(column_ranges: Any, columns: list[str]) -> DeclaredRanges:
    """The declared ranges of ``column_ranges`` (``(key, low, high)``: a name, or a 0-based
    position) on ``columns``; a ``ValueError`` naming ``column_ranges`` for a name not among
    the columns, a position beyond them, or two keys for one column."""
    p = len(columns)
    where: dict[int, tuple[Any, float, float]] = {}
    for key, low, high in column_ranges:
        if isinstance(key, str):
            if key not in columns:
                shown = ", ".join(repr(c) for c in columns[:10]) + (
                    f", ... ({p} in all)" if p > 10 else "")
                raise ValueError(f"column_ranges: no column named {key!r}; the columns are "
                                 f"{shown}")
            j = columns.index(key)
        else:
            if not 0 <= key < p:
                raise ValueError(f"column_ranges: position {key} is beyond the {p} columns "
                                 f"(positions 0 to {p - 1})")
            j = int(key)
        if j in where:
            raise ValueError(f"column_ranges: {where[j][0]!r} and {key!r} both declare the "
                             f"range of column {columns[j]!r}")
        where[j] = (key, low, high)
    index = np.array(sorted(where), dtype=np.int64)
    return DeclaredRanges(
        index=index, names=tuple(columns[j] for j in index),
        lower=np.array([where[j][1] for j in index], dtype=float),
        upper=np.array([where[j][2] for j in index], dtype=float))


def _choose_median(stages: RangeStages, counts: Any, rng: Any,
                   exact: bool) -> tuple[np.ndarray, np.ndarray]:
    return stages.choose_median(counts.below(), counts.counted, None if exact else rng)


def _choose(stages: RangeStages, stage: str, counts: Any, rng: Any, exact: bool, *,
            edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return stages.choose_refined(edges, counts.below(), counts.counted, None if exact else rng)


def _choose_spread(stages: RangeStages, counts: Any, rng: Any, exact: bool) -> np.ndarray:
    return stages.choose_spread(counts.below(), counts.tied, counts.counted,
                                None if exact else rng)


def run_steps(estimator: Any, settings: GraphSettings, plan: ReleasePlan, data: Any,
              run: PlanRun, ctx: ReleaseContext) -> GraphRun:
    """PrivateGraph's run hook of the fit template: every step of ``plan`` on the records
    (:func:`run_plan`)."""
    return run_plan(settings, run, data.records, ctx, data.first)


def run_plan(settings: GraphSettings, run: PlanRun, records: Any, ctx: ReleaseContext,
             first: Any) -> GraphRun:
    """Run every step of ``run``'s plan on ``records`` (``first`` is the first pass's
    result, already computed while reading), each booked by ``run``."""
    count = None
    if settings.add_remove and not settings.non_private:
        # The count first; the rest of the plan is made from it.
        count = release_count(records.n_samples, ctx, run)
        plan = plan_from_released_count(settings, count, run.plan.n_features)
        # Refused (before anything but the count is drawn, and nothing is released) only
        # when the count lands far from the records' number, whose plan passed these.
        check_plan_budget_range(plan, settings)
        check_not_hopeless(plan)
        run.replan(plan)
    runner = _Steps(settings, run, records, ctx)
    runner.out.steps = run.breakdown
    runner.out.count = count
    if settings.auto:
        # The names are checked against the columns before any draw.
        declared = resolve_column_ranges(settings.column_ranges, list(records.columns))
        runner.ranges(first, declared)
        if settings.with_norm:
            runner.norm_bound()
        state = runner.moments()
    else:
        state = runner.moments(first)
    runner.release(state)
    return runner.out


def pass_threads() -> Any:
    """The context of a pass over the records: BLAS on one thread. A pass already splits
    its blocks between threads (or Dask workers), each with its own ``Z^T Z`` product;
    BLAS threads inside them would oversubscribe the cores (measured at p = 1 000,
    n = 50 000 on two busy cores: the second-moment pass 13-17 s with BLAS's threads,
    4.1 s without; the sums are the same bits, BLAS splitting the output and not the sum
    over records)."""
    from dpggm.solvers.toolkit import single_threaded_blas

    return single_threaded_blas()


def first_pass_task(settings: GraphSettings) -> Any:
    """The task of the first pass, which needs no released value (and, for a file, runs
    while the file is parsed)."""
    task: Any = (ValueCounts(RangeStages(epsilons={}).median_edges, kernels.SYMMETRIC)
                 if settings.auto else Moments(declared=settings.declared))
    shift = settings.public_center
    return task if shift is None else Shifted(task, shift)



def _divided(released: tuple[np.ndarray, dict[str, Any]],
             divisor: float) -> tuple[np.ndarray, dict[str, Any]]:
    """Released sums over a released count (post-processing), with their noise record."""
    values, record = released
    return values / divisor, record
