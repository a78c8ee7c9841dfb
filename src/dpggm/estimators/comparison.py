"""Is the network of one group different from another's? One private release per group,
and the differences, tests, centrality and intervals that follow from them.

:class:`PrivateGraphComparison` splits the records by a declared grouping (patients and
controls, before and after a treatment), releases each group's graph with
:class:`~dpggm.estimators.graph.PrivateGraph` (its public API only), and post-processes
the releases (:mod:`dpggm.solvers.comparison`): per-pair differences of the de-biased
partial correlations with intervals, p-values and Benjamini-Hochberg q-values, a global
test of "the two networks are equal", and every node's strength and expected influence
in each group and their differences.

The privacy of groups
---------------------
The groups partition the records (a record whose group is not a declared level is in no
release). What one release per group costs depends on the neighbouring relation:

add/remove (``neighbors="add-remove"``)
    Adding or removing a record changes one group only: the releases compose in parallel.
    Each group's release runs under add/remove with the whole budget (a private count
    first, the rest planned from it, sums released unnormalised), and the spend is the
    largest group's: the budget.

replace-one, group sizes private (``neighbors="replace"``, the default)
    The number of records is public, the groups' sizes are not. Two cases: a record
    replaced by one of the same group moves one release by a replacement; a record
    replaced by one of another group is removed from one release and added to the other,
    so *both* releases move by one record each, and the groups' sizes change. So each
    group's release runs under add/remove (its size private: a noisy count, quantile
    targets and normalisations from it) with half the budget, ``rho_g = rho / 2``, and

    * a record moving between groups costs ``rho_a + rho_b = rho`` (each release at its
      add/remove cost);
    * a record replaced within a group costs at most ``sum_s f_s**2 rho_s`` over the
      group's steps ``s`` (zCDP; ``sum_s f_s epsilon_s`` under pure DP), ``f_s`` the ratio
      of the step's replace-one to its add/remove sensitivity: 0 for the count (a
      replacement within the group leaves it), 1 for the ranges, the norm bound and the
      counts of values present (rank scores and indicators move by one either way), 2 for
      the column sums (``2B`` against ``B``) and ``sqrt(2)`` for the Gram matrix (``sqrt(2)
      B**2`` against ``B**2``; 2 in l1). With the count's share at least the mean's (the
      default: 1/16 each) this is at most ``2 rho_g = rho``.

    The spend is the larger case, ``rho``; the record states both
    (:func:`grouped_spend`). The groups' sizes are released as noisy counts.

replace-one, group sizes declared (``group_sizes=...``)
    A trial with fixed arms: the sizes are public, so a replacement that would change
    them is not a neighbour. Each group's release is an ordinary replace-one release of the
    whole budget, the releases compose in parallel, and the record says the sizes were
    declared (and the fit refuses data whose groups have other sizes).

The levels of the grouping are declared (``levels``), never read off the data: which
values a column holds is itself a fact about the records. A level with fewer than
:data:`MIN_GROUP_ROWS` records (or whose plan would be pure noise) is refused before any
draw -- from the declared sizes when there are some, else from the data (the refusal is a
message to the curator; nothing is released).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from dpggm.estimators._base import Deliverable, make_context
from dpggm.estimators._contract import (
    BOUNDS,
    BUDGET,
    COLUMN_RANGES,
    RANDOM_STATE,
    REPORT_DELTA,
    VECTOR,
    AnyOf,
    Constraint,
    ContractMixin,
    Interval,
    Options,
    fraction,
)
from dpggm.estimators._graph_pipeline import accounting_budget
from dpggm.mechanisms.plan import ReleasePlan, guarantee_forms
from dpggm.mechanisms.private_bounds import RANGE_WIDTH
from dpggm.privacy.budgets import (
    Budget,
    NonPrivate,
    PureDP,
    budget_from_cost,
    exact_cost,
)
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA, PrivacyGuarantee, jsonable

__all__ = [
    "MIN_GROUP_ROWS",
    "REPLACEMENT_FACTORS",
    "ComparisonPlan",
    "GroupedSpend",
    "PrivateGraphComparison",
    "comparison_result_record",
    "group_release_budget",
    "grouped_spend",
    "label_key",
    "stage_comparison_release",
]

#: The fewest records a group's release is made from.
MIN_GROUP_ROWS = 20

#: Per step of a group's add/remove release: the ratio of its replace-one sensitivity to
#: its add/remove sensitivity, ``(l2, l1)`` (a record replaced within the group). The
#: count does not move; rank scores and indicators move by one either way; the column
#: sums by ``2B`` against ``B``; the Gram matrix by ``sqrt(2) B**2`` against ``B**2`` in
#: l2 and ``(p + 1) B**2`` against ``(p + 1) B**2 / 2`` in l1.
REPLACEMENT_FACTORS: dict[str, tuple[float, float]] = {
    "count": (0.0, 0.0),
    "bounds": (1.0, 1.0),
    "norm bound": (1.0, 1.0),
    "missing counts": (1.0, 1.0),
    "mean": (2.0, 2.0),
    "second moment": (math.sqrt(2.0), 2.0),
}


def label_key(value: Any) -> str | None:
    """A group label as compared with the declared levels: its text (spaces trimmed), a
    whole number without its decimal part (``1.0`` is ``"1"``); ``None`` when missing."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if value != value:
            return None
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    text = str(value).strip()
    return text or None


def _half(budget: Budget) -> Budget:
    """Exactly half of a budget's additive cost (a float halves exactly)."""
    notion = type(budget)
    return budget_from_cost(notion, tuple(c / 2 for c in exact_cost(budget, notion)))


def group_release_budget(total: Budget, *, neighbors: str,
                         declared_sizes: bool) -> tuple[Budget, str]:
    """The budget of each group's release and the relation it is calibrated for, from the
    comparison's accounting total and relation (see the module documentation): the whole
    budget under add/remove (parallel composition), or under replace-one with declared
    sizes (parallel; each group replace-one); half of it, each group under add/remove,
    under replace-one with private sizes."""
    if isinstance(total, NonPrivate):
        return total, "replace" if declared_sizes else "add-remove"
    if neighbors == "add-remove":
        return total, "add-remove"
    if declared_sizes:
        return total, "replace"
    return _half(total), "add-remove"


def _cost(budget: Budget, notion: type) -> Fraction:
    return exact_cost(budget, notion)[0]


def within_group_replacement(steps: list[tuple[str, Budget]], notion: type) -> Fraction:
    """An upper bound on the cost of replacing one record by another of the same group,
    for a group's release made under add/remove: every step's add/remove cost times its
    :data:`REPLACEMENT_FACTORS` ratio squared (zCDP: a Gaussian's ``rho`` grows with the
    sensitivity squared, the grid's rounding allowance less) or the ratio itself (pure DP:
    a Laplace's ``epsilon`` grows linearly); an exponential mechanism of the same score
    sensitivity costs the same."""
    total = Fraction(0)
    pure = notion is PureDP
    for name, budget in steps:
        l2, l1 = REPLACEMENT_FACTORS.get(name, (math.inf, math.inf))
        if not math.isfinite(l2):
            raise ValueError(f"no replace-one sensitivity is known for the step {name!r}")
        factor = Fraction(l1) if pure else (Fraction(2) if l2 == math.sqrt(2.0)
                                            else Fraction(l2) ** 2)
        total += factor * _cost(budget, notion)
    return total


@dataclass(frozen=True)
class GroupedSpend:
    """What one release per group costs, by case, and the total booked.

    Attributes
    ----------
    neighbors : {"replace", "add-remove"}
        The relation of the whole data set.
    sizes : {"private", "declared"}
    group_relation : {"replace", "add-remove"}
        The relation each group's release is calibrated for.
    group_budgets : dict
        Level -> what its release spent (its steps added up).
    cases : dict
        Case -> its cost: under add/remove ``"record added or removed"``; under
        replace-one ``"record replaced within its group"`` and, with private sizes,
        ``"record moved to another group"``.
    total : Budget
        The largest case: what is booked.
    """

    neighbors: str
    sizes: str
    group_relation: str
    group_budgets: dict[str, Budget]
    cases: dict[str, Budget]
    total: Budget

    def to_dict(self) -> dict[str, Any]:
        explanation = {
            ("add-remove", "private"): (
                "add/remove: a record added or removed changes one group's release only; the "
                "releases compose in parallel and the spend is the largest group's"),
            ("replace", "declared"): (
                "replace-one with the groups' sizes declared (public): a replacement that "
                "would move a record to another group changes the sizes and is not a "
                "neighbour; a replacement within a group changes that group's release "
                "only, and the releases compose in parallel"),
            ("replace", "private"): (
                "replace-one with the groups' sizes private: a record replaced by one of "
                "another group is removed from one release and added to the other (both move "
                "by one record, each at its add/remove cost), a record replaced within its "
                "group moves one release by a replacement (each step's add/remove cost "
                "times its sensitivity ratio squared: count 0, ranges, norm bound and "
                "counts of values present 1, column sums 4, Gram matrix 2); the spend is "
                "the larger case"),
        }
        return {
            "neighbors": self.neighbors,
            "group_sizes": self.sizes,
            "group_releases": self.group_relation,
            "composition": explanation[(self.neighbors, self.sizes)],
            "group_budgets": {k: v.to_dict() for k, v in self.group_budgets.items()},
            "cases": {k: v.to_dict() for k, v in self.cases.items()},
            "total": self.total.to_dict(),
        }


def grouped_spend(steps_by_group: dict[str, list[tuple[str, Budget]]], *, notion: type,
                  neighbors: str, declared_sizes: bool) -> GroupedSpend:
    """The cases and the total of one release per group (see the module documentation),
    from every group's steps ``(name, budget)`` as they ran (or as planned), in the
    accounting ``notion``; exact (rational) arithmetic, the total the largest case."""
    sizes = "declared" if declared_sizes else "private"
    spent = {level: sum((_cost(b, notion) for _, b in steps), Fraction(0))
             for level, steps in steps_by_group.items()}

    def budget(cost: Fraction) -> Budget:
        return budget_from_cost(notion, (cost,), rounding="up")

    group_budgets = {level: budget(cost) for level, cost in spent.items()}
    if neighbors == "add-remove":
        cases = {"record added or removed": max(spent.values())}
        relation = "add-remove"
    elif declared_sizes:
        cases = {"record replaced within its group": max(spent.values())}
        relation = "replace"
    else:
        levels = list(spent)
        within = max(within_group_replacement(steps_by_group[level], notion)
                     for level in levels)
        moved = max(spent[a] + spent[b] for i, a in enumerate(levels) for b in levels[i + 1:])
        cases = {"record replaced within its group": within,
                 "record moved to another group": moved}
        relation = "add-remove"
    total = max(cases.values())
    return GroupedSpend(neighbors=neighbors, sizes=sizes, group_relation=relation,
                        group_budgets=group_budgets,
                        cases={k: budget(v) for k, v in cases.items()}, total=budget(total))


@dataclass(frozen=True)
class ComparisonPlan:
    """The releases of a comparison, planned from public facts: each group's plan (at its
    declared size, or at the size assumed for planning), the cases of the spend and their
    total, and what the comparison can detect."""

    levels: tuple[str, ...]
    n_features: int
    sizes: dict[str, int]
    sizes_known: str
    requested: Budget
    accounting: Budget
    group_budget: Budget
    group_plans: dict[str, ReleasePlan]
    spend: GroupedSpend
    detectable_difference: float | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def forms(self, report_delta: float = DEFAULT_REPORT_DELTA) -> dict[str, Budget]:
        """The total in every form that holds."""
        if isinstance(self.requested, NonPrivate):
            return {}
        return guarantee_forms(self.requested, self.spend.total, report_delta)

    def to_dict(self, report_delta: float = DEFAULT_REPORT_DELTA) -> dict[str, Any]:
        detectable = self.detectable_difference
        return {
            "estimator": "PrivateGraphComparison",
            "levels": list(self.levels),
            "n_features": self.n_features,
            "group_sizes": dict(self.sizes),
            "group_sizes_are": self.sizes_known,
            "requested": self.requested.to_dict(),
            "accounting": self.accounting.to_dict(),
            "group_budget": self.group_budget.to_dict(),
            "spend": self.spend.to_dict(),
            "forms": {k: v.to_dict() for k, v in self.forms(report_delta).items()},
            "detectable_difference": None if detectable is None or not math.isfinite(
                detectable) else float(detectable),
            "groups": {level: plan.to_dict(report_delta)
                       for level, plan in self.group_plans.items()},
            "notes": jsonable(self.notes),
        }


class _ColumnName(Constraint):
    """``None`` or a non-empty column name."""

    def describe(self) -> str:
        return "None or a column name (a non-empty str)"

    def accepts_type(self, value: Any) -> bool:
        return value is None or isinstance(value, str)

    def accepts(self, value: Any) -> bool:
        return value is None or bool(value.strip())


class _Labels(Constraint):
    """The declared levels: a list or tuple of labels (checked further in ``fit``)."""

    required_hint = ("declare the groups to compare, e.g. levels=('patients', 'controls') "
                     "(dpggm compare --levels patients,controls): they are public and never "
                     "read off the data")

    def describe(self) -> str:
        return "a list or tuple of two labels"

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (list, tuple, np.ndarray, pd.Index))


class _Sizes(Constraint):
    """``None`` or a mapping from levels to declared sizes."""

    def describe(self) -> str:
        return "None or a mapping {level: number of records}"

    def accepts_type(self, value: Any) -> bool:
        return value is None or hasattr(value, "items")


#: Options passed on to every group's PrivateGraph, as given.
_GRAPH_OPTIONS = ("bounds", "column_ranges", "center", "bound_fraction", "center_fraction",
                  "count_fraction", "range_width", "norm_quantile", "missing", "alpha",
                  "fdr", "fdr_method", "confidence_level", "planned_missing_share",
                  "report_delta")


class PrivateGraphComparison(Deliverable, ContractMixin, BaseEstimator):
    """Compare the networks of two groups privately: one release per group, and the
    differences of their partial correlations with intervals, tests and centrality.

    Parameters
    ----------
    budget : ZCDP, ApproxDP, PureDP, GDP or NonPrivate
        The total spent by the whole comparison, for the relation ``neighbors`` (see the
        module documentation: how it is shared between the groups depends on it).
    levels : sequence of two labels
        The declared levels of the grouping, in order (the differences are the first minus
        the second): public, never read off the data. Records of other levels are in no
        release.
    group : str or None, default=None
        The column of ``X`` that holds each record's group (a DataFrame's, or a file's:
        it is then left out of the variables). Or pass ``groups=`` to :meth:`fit`.
    group_sizes : mapping or None, default=None
        Declared (public) sizes of the groups, ``{level: n}`` -- a trial with fixed arms.
        Then a replacement that changes a record's group is no neighbour, each group's
        release is an ordinary replace-one release of the whole budget, and a fit whose
        groups have other sizes is refused. Only with ``neighbors="replace"``.
    neighbors : {"replace", "add-remove"}, default="replace"
        The relation of the whole data set.
    count_fraction : float in (0, 1), default=0.0625
        Share of each group's budget for its noisy count (private sizes). Under
        replace-one it must be at least ``center_fraction`` (so that a replacement within
        a group never costs more than a record moving between groups).
    bounds, column_ranges, center, bound_fraction, center_fraction, range_width, \
norm_quantile, missing, alpha, fdr, fdr_method, confidence_level, planned_missing_share
        As :class:`~dpggm.estimators.graph.PrivateGraph`'s, for every group's release
        (``select="fdr"``); ``fdr`` and ``confidence_level`` also for the differences.
    centrality_support : {"familywise", "selected", "all"}, default="familywise"
        A node's centrality sums over the pairs Holm's procedure selects at family-wise
        error ``1 - confidence_level`` (so that a false edge, large because it was
        selected, rarely enters a node's sum), over the edges the false-discovery control
        selects, or over every pair (:meth:`PrivateGraph.centrality
        <dpggm.estimators.graph.PrivateGraph.centrality>`).
    n_draws : int, default=2000
        Linearised draws of each release that calibrate the global test (more than 100
        variables: the Sidak bound instead).
    report_delta : float, default=1e-6
    random_state : None, int, Generator or "secure"
        One stream for every group's release: a seed makes an experiment, never a valid
        release.

    Attributes
    ----------
    groups_ : dict
        Level -> its fitted :class:`~dpggm.estimators.graph.PrivateGraph`.
    group_sizes_ : dict
        Level -> its size as released (the noisy count, rounded) or declared.
    differences_ : DataFrame
        Every pair: ``source, target, difference, ci_low, ci_high, p_value, q_value,
        selected`` (``differences.csv``), strongest evidence first.
    difference_inference_ : DifferenceInference
        The same with both groups' estimates, standard errors and z's.
    global_test_ : dict
        The test of "the networks are equal": the largest ``|z|``, its p-value
        (linearised draws of both releases) and the Sidak bound's.
    centrality_ : DataFrame
        ``node, group`` and each group's strength and expected influence with intervals.
    centrality_differences_ : DataFrame
        Every node's differences of strength and expected influence (first minus second),
        intervals and p-values.
    detectable_difference_ : float or None
        The smallest difference of a pair's partial correlation found with 80 % power
        (an edge in one group only, isolated), from the plan: a public figure.
    selection_withheld_ : str or None
        Why no difference is selected and no global p-value stated (a group's plan cannot
        support the inference), if so.
    plan_ : ComparisonPlan
    spend_ : GroupedSpend
        The cases of the spend and the total booked.
    privacy_ : PrivacyGuarantee
        The whole comparison's guarantee (relation ``neighbors``; the cases in
        ``notes["groups"]``; every group's steps in ``noise["breakdown"]``).
    n_features_in_, feature_names_in_

    Privacy
    -------
    One :class:`~dpggm.estimators.graph.PrivateGraph` release per group, composed as the
    module documentation derives: in parallel under add/remove or with declared sizes;
    under replace-one with private sizes each group at half the budget under add/remove,
    the spend the larger of a record replaced within its group and a record moved between
    groups. Everything else (differences, tests, centrality, pictures) is post-processing.
    """

    _reads_private_records = True

    _constraints = {
        "budget": BUDGET,
        "levels": _Labels(),
        "group": _ColumnName(),
        "group_sizes": _Sizes(),
        "neighbors": Options("replace", "add-remove"),
        "count_fraction": fraction(),
        "bounds": AnyOf(Options("auto"), BOUNDS),
        "column_ranges": COLUMN_RANGES,
        "center": AnyOf(Options("private", "none"), VECTOR),
        "bound_fraction": AnyOf(Options("auto"), fraction()),
        "center_fraction": fraction(),
        "range_width": Interval(0, None, closed="neither"),
        "norm_quantile": AnyOf(Options(None), Interval(0, 1)),
        "missing": Options("impute", "refuse"),
        "alpha": AnyOf(Options("auto"), Interval(0, None, closed="left")),
        "fdr": fraction(),
        "fdr_method": Options("bh", "by"),
        "confidence_level": fraction(),
        "planned_missing_share": Interval(0, 1, closed="left"),
        "centrality_support": Options("familywise", "selected", "all"),
        "n_draws": Interval(100, None, closed="left", integer=True),
        "report_delta": REPORT_DELTA,
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        budget: Any = None,
        levels: Any = None,
        group: str | None = None,
        group_sizes: Any = None,
        neighbors: str = "replace",
        count_fraction: float = 0.0625,
        bounds: Any = "auto",
        column_ranges: Any = None,
        center: Any = "private",
        bound_fraction: Any = "auto",
        center_fraction: float = 0.0625,
        range_width: float = RANGE_WIDTH,
        norm_quantile: Any = 0.5,
        missing: str = "impute",
        alpha: Any = "auto",
        fdr: float = 0.1,
        fdr_method: str = "bh",
        confidence_level: float = 0.9,
        planned_missing_share: float = 0.0,
        centrality_support: str = "familywise",
        n_draws: int = 2000,
        report_delta: float = DEFAULT_REPORT_DELTA,
        random_state: Any = None,
    ) -> None:
        self.budget = budget
        self.levels = levels
        self.group = group
        self.group_sizes = group_sizes
        self.neighbors = neighbors
        self.count_fraction = count_fraction
        self.bounds = bounds
        self.column_ranges = column_ranges
        self.center = center
        self.bound_fraction = bound_fraction
        self.center_fraction = center_fraction
        self.range_width = range_width
        self.norm_quantile = norm_quantile
        self.missing = missing
        self.alpha = alpha
        self.fdr = fdr
        self.fdr_method = fdr_method
        self.confidence_level = confidence_level
        self.planned_missing_share = planned_missing_share
        self.centrality_support = centrality_support
        self.n_draws = n_draws
        self.report_delta = report_delta
        self.random_state = random_state

    # -- settings and plan ---------------------------------------------------------------

    def _checked_levels(self) -> tuple[str, ...]:
        levels = self.levels
        if levels is None or isinstance(levels, (str, bytes)) or not hasattr(levels, "__iter__"):
            raise ValueError(
                "levels: declare the two groups to compare, e.g. levels=('patients', "
                "'controls') (dpggm compare --levels patients,controls); they are public and "
                "are never read off the data (which values a column holds is a fact about "
                f"the records); got {levels!r}")
        keys = [label_key(level) for level in levels]
        if any(k is None for k in keys):
            raise ValueError(f"levels: a level must be a non-empty label; got {list(levels)!r}")
        if len(set(keys)) != len(keys):
            raise ValueError(f"levels: the levels must differ; got {list(levels)!r}")
        if len(keys) != 2:
            raise ValueError(
                f"levels: a comparison is between two groups; got {len(keys)} levels "
                f"({', '.join(keys)}): compare them two at a time (each comparison spends "
                "its own budget)")
        return tuple(keys)  # type: ignore[arg-type]

    def _checked_sizes(self, levels: tuple[str, ...]) -> dict[str, int] | None:
        sizes = self.group_sizes
        if sizes is None:
            return None
        if not hasattr(sizes, "items"):
            raise ValueError(f"group_sizes must be a mapping {{level: size}}; got {sizes!r}")
        out: dict[str, int] = {}
        for level, size in sizes.items():
            key = label_key(level)
            if key not in levels:
                raise ValueError(f"group_sizes: {level!r} is not one of the levels "
                                 f"{list(levels)!r}")
            if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)) \
                    or size < 0:
                raise ValueError(f"group_sizes: the size of {level!r} must be an integer >= 0; "
                                 f"got {size!r}")
            out[key] = int(size)
        missing = [level for level in levels if level not in out]
        if missing:
            raise ValueError(f"group_sizes: declare the size of every level; {missing[0]!r} "
                             "has none")
        if self.neighbors == "add-remove":
            raise ValueError(
                "group_sizes: declared (public) group sizes go with neighbors='replace': "
                "under add/remove neighbours adding a record changes a group's size")
        small = [level for level in levels if out[level] < MIN_GROUP_ROWS]
        if small:
            raise ValueError(
                f"group_sizes: the group {small[0]!r} is declared with {out[small[0]]} "
                f"records; a group's release needs at least {MIN_GROUP_ROWS}")
        return out

    def _settings(self) -> dict[str, Any]:
        """Every parameter checked, before any data are read."""
        params = self._validate_params()
        levels = self._checked_levels()
        sizes = self._checked_sizes(levels)
        budget = params["budget"]
        accounting = (budget if isinstance(budget, NonPrivate)
                      else accounting_budget(budget, "glasso"))
        if (self.neighbors == "replace" and sizes is None and params["center"] == "private"
                and Fraction(params["count_fraction"]) < Fraction(params["center_fraction"])):
            raise ValueError(
                "count_fraction: with private group sizes under replace-one neighbours the "
                "count's share must be at least center_fraction, so that a record replaced "
                "within its group never costs more than one moved to another group; got "
                f"count_fraction={self.count_fraction!r} and center_fraction="
                f"{self.center_fraction!r}")
        group_budget, relation = group_release_budget(
            accounting, neighbors=self.neighbors, declared_sizes=sizes is not None)
        return {**params, "levels_checked": levels, "sizes_checked": sizes,
                "accounting": accounting, "group_budget": group_budget,
                "group_relation": relation}

    def _graph(self, settings: dict[str, Any], random_state: Any) -> Any:
        from dpggm.estimators.graph import PrivateGraph

        options = {name: self.get_params(deep=False)[name] for name in _GRAPH_OPTIONS}
        return PrivateGraph(budget=settings["group_budget"],
                            neighbors=settings["group_relation"], select="fdr",
                            random_state=random_state, **options)

    def plan(self, *, n_samples: int | None = None, n_features: int,
             group_sizes: Any = None) -> ComparisonPlan:
        """The releases a fit will make, from public facts: every group's plan, the cases
        of the spend and the total, and the detectable difference -- at the declared group
        sizes, at ``group_sizes`` (an assumption for planning), or with ``n_samples``
        records split equally between the levels.

        Raises
        ------
        ValueError
            Every refusal the fit would make before reading the data.

        Privacy
        -------
        Public parameters only; no data are read.
        """
        settings = self._settings()
        levels = settings["levels_checked"]
        sizes = settings["sizes_checked"]
        known = "declared"
        if sizes is None:
            if group_sizes is not None:
                sizes = {label_key(k): int(v) for k, v in dict(group_sizes).items()}
                if set(sizes) != set(levels):
                    raise ValueError(f"group_sizes must give the size of each level "
                                     f"{list(levels)!r}; got {dict(group_sizes)!r}")
                known = "assumed for planning (private: released as noisy counts)"
            elif n_samples is not None:
                n = int(n_samples)
                sizes = {level: n // len(levels) for level in levels}
                known = ("assumed for planning: the records split equally (private: released "
                         "as noisy counts)")
            else:
                raise ValueError("plan needs n_samples (split equally between the levels) or "
                                 "group_sizes (declared or assumed)")
        for level in levels:
            if sizes[level] < MIN_GROUP_ROWS:
                raise ValueError(f"the group {level!r} would have {sizes[level]} records; a "
                                 f"group's release needs at least {MIN_GROUP_ROWS}")
        graph = self._graph(settings, None)
        plans = {level: graph.plan(n_samples=sizes[level], n_features=n_features)
                 for level in levels}
        spend = self._spend(settings, {level: [(s.step, s.budget) for s in plan.steps]
                                       for level, plan in plans.items()})
        return ComparisonPlan(
            levels=levels, n_features=int(n_features), sizes=dict(sizes), sizes_known=known,
            requested=settings["budget"], accounting=settings["accounting"],
            group_budget=settings["group_budget"], group_plans=plans, spend=spend,
            detectable_difference=self._detectable(graph, plans, int(n_features)))

    def _spend(self, settings: dict[str, Any],
               steps: dict[str, list[tuple[str, Budget]]]) -> GroupedSpend:
        accounting = settings["accounting"]
        if isinstance(accounting, NonPrivate):
            return GroupedSpend(self.neighbors, "declared" if settings["sizes_checked"]
                                else "private", settings["group_relation"],
                                dict.fromkeys(steps, accounting), {}, accounting)
        return grouped_spend(steps, notion=type(accounting), neighbors=self.neighbors,
                             declared_sizes=settings["sizes_checked"] is not None)

    def _detectable(self, graph: Any, plans: dict[str, ReleasePlan], p: int) -> float | None:
        """The plan's detectable difference (public: from the groups' plans alone)."""
        from dpggm.estimators.graph import planned_release_noise
        from dpggm.solvers.inference import detectable_difference

        noise = [planned_release_noise(plan, graph) for plan in plans.values()]
        if any(x is None for x in noise):
            return None
        sizes = tuple(plan.n_samples for plan in plans.values())
        return detectable_difference(
            sizes, p, tuple(x[0] for x in noise), row_norm_bound=tuple(x[1] for x in noise),
            norm_quantile=float(self.norm_quantile), fdr=float(self.fdr),
            fdr_method=self.fdr_method, missing_share=float(self.planned_missing_share))

    def detectable_difference(self, *, n_features: int, n_samples: int | None = None,
                              group_sizes: Any = None) -> float:
        """The smallest difference of a pair's partial correlation between the groups that
        the comparison finds with 80 % power at ``fdr`` (an edge in one group only,
        isolated; roughly normal columns), from the plan (:meth:`plan`); ``inf`` when none
        up to 0.99 is.

        Privacy
        -------
        Public parameters only; no data are read.
        """
        value = self.plan(n_samples=n_samples, n_features=n_features,
                          group_sizes=group_sizes).detectable_difference
        if value is None:
            raise ValueError("detectable_difference() needs bounds='auto': with declared "
                             "bounds the data's spread within them is unknown before the data")
        return value

    def required_budget(self, *, difference: float, n_features: int,
                        n_samples: int | None = None, group_sizes: Any = None) -> Any:
        """The smallest zCDP total whose comparison detects a difference of ``difference``
        with 80 % power (:meth:`detectable_difference` at most it).

        Raises
        ------
        ValueError
            ``difference`` outside (0, 1), or no budget up to ``rho = 1e6`` would do.

        Privacy
        -------
        Public parameters only; no data are read.
        """
        from sklearn.base import clone

        from dpggm.privacy.budgets import ZCDP

        target = _target(difference)

        def at(rho: float) -> float:
            other = clone(self).set_params(budget=ZCDP(rho))
            try:
                return other.detectable_difference(n_features=n_features, n_samples=n_samples,
                                                   group_sizes=group_sizes)
            except ValueError as exc:
                # Declared bounds: no prediction at any budget. Any other refusal (too
                # small a budget or group to locate the columns): nothing detectable there.
                if str(exc).startswith("detectable_difference() needs"):
                    raise
                return math.inf

        low, high = 1e-6, 1e6
        if at(high) > target:
            raise ValueError(f"no budget detects a difference of {target:g} with these group "
                             "sizes (even rho = 1e6: the sampling error alone is too large); "
                             "more records are needed")
        while high / low > 1.001:
            middle = math.sqrt(low * high)
            if at(middle) <= target:
                high = middle
            else:
                low = middle
        return ZCDP(float(high))

    def required_rows(self, *, difference: float, n_features: int) -> int:
        """The fewest records (split equally between the levels) for which the comparison
        at this budget detects a difference of ``difference`` with 80 % power.

        Privacy
        -------
        Public parameters only; no data are read.
        """
        target = _target(difference)
        k = 2

        def at(n: int) -> float:
            try:
                return self.detectable_difference(n_features=n_features, n_samples=n)
            except ValueError as exc:
                # Declared bounds: no prediction at any budget. Any other refusal (too
                # small a budget or group to locate the columns): nothing detectable there.
                if str(exc).startswith("detectable_difference() needs"):
                    raise
                return math.inf

        low, high = k * MIN_GROUP_ROWS, k * MIN_GROUP_ROWS * 2
        while at(high) > target:
            low, high = high, high * 2
            if high > 10**9:
                raise ValueError(f"more than 1e9 records would be needed to detect a "
                                 f"difference of {target:g}")
        while high - low > k:
            middle = (low + high) // 2
            if at(middle) <= target:
                high = middle
            else:
                low = middle
        return int(high)

    def release_forms(self) -> dict[str, Budget]:
        """Every budget form the comparison's guarantee will hold (public: the total is
        the accounting budget whatever the data)."""
        settings = self._settings()
        if isinstance(settings["budget"], NonPrivate):
            return {}
        return guarantee_forms(settings["budget"], settings["accounting"],
                               float(self.report_delta))

    def expected_validity(self) -> tuple[str, str]:
        """``(validity, reason)`` the release will have whatever the data (a seed, a
        non-private run, preprocessing fitted on the data)."""
        settings = self._settings()
        ctx = make_context(self, None)
        return ctx.validity(settings["budget"])

    def check_ledger(self, ledger: Any, dataset: str) -> None:
        """Refuse, before any data are read, a comparison ``ledger`` could not book for
        ``dataset`` (not valid, no convertible form, another relation, too much).

        Raises
        ------
        InvalidGuaranteeError, IncompatibleBudgetError, BudgetExceededError
        """
        from dpggm.exceptions import InvalidGuaranteeError

        validity, reason = self.expected_validity()
        if validity != "valid":
            raise InvalidGuaranteeError(
                f"this release would have validity {validity!r} ({reason}), so it is never "
                "booked against a ledger; nothing was read or spent")
        ledger.check_forms(dataset, tuple(self.release_forms().values()),
                           neighbors=self.neighbors)

    # -- fit -----------------------------------------------------------------------------

    def fit(self, X: Any, y: Any = None, *, groups: Any = None) -> PrivateGraphComparison:
        """Release each group's graph and compare them.

        ``X``: an array, a DataFrame, or a file (a path or a
        :class:`~dpggm.data.tables.TableFile`); the group of each record in
        ``groups`` (one label per record) or in the column ``group`` of ``X``.

        Every check (parameters, labels, group sizes, each group's data and plan) runs
        before any random draw; a refusal releases nothing.
        """
        from dpggm.mechanisms.random import RandomSource

        settings = self._settings()
        split = _split_records(X, groups, settings, self)
        self._check_groups(split, settings)
        source = RandomSource.of(self.random_state)
        fitted: dict[str, Any] = {}
        for level in settings["levels_checked"]:
            graph = self._graph(settings, source)
            fitted[level] = graph.fit(split.frames[level])
        self._finish(X, split, settings, fitted)
        return self

    def _check_groups(self, split: _Split, settings: dict[str, Any]) -> None:
        """Before any draw: declared sizes match, every group is large enough and its
        data and plan pass the group estimator's own refusals (messages for the curator;
        nothing is released)."""
        from dpggm.data.records import open_records

        declared = settings["sizes_checked"]
        for level in settings["levels_checked"]:
            n = int(split.frames[level].shape[0])
            if declared is not None and n != declared[level]:
                raise ValueError(
                    f"group_sizes declares {declared[level]} records in the group {level!r}, "
                    f"but the data hold {n}: declared sizes must be the groups' true sizes "
                    "(nothing was released; message for the curator)")
            if declared is None and n < MIN_GROUP_ROWS:
                raise ValueError(
                    f"the group {level!r} has fewer than {MIN_GROUP_ROWS} records: too few "
                    "for a release (nothing was released; message for the curator)")
            graph = self._graph(settings, None)
            with open_records(split.frames[level], name=f"the group {level!r}",
                              missing=self.missing) as records:
                p = records.n_features
            # The group's own refusals at its true size (the plan it will make from its
            # released count lands within a few records of it).
            graph.plan(n_samples=n, n_features=p)

    def _finish(self, X: Any, split: _Split, settings: dict[str, Any],
                fitted: dict[str, Any]) -> None:
        from dpggm.solvers.comparison import (
            compare_centrality,
            compare_inferences,
            linearised_draws,
            node_centrality,
        )

        levels = settings["levels_checked"]
        columns = split.columns
        p = len(columns)
        self.groups_ = fitted
        self.levels_ = levels
        self.group_sizes_ = {level: int(fitted[level].n_samples_) for level in levels}
        steps = {level: [(s["step"], s["budget"]) for s in
                         fitted[level].privacy_.noise.get("breakdown", [])] for level in levels}
        self.spend_ = self._spend(settings, steps)
        graph = self._graph(settings, None)
        plans = {level: fitted[level].plan_ for level in levels}
        self.plan_ = ComparisonPlan(
            levels=levels, n_features=p, sizes=dict(self.group_sizes_),
            sizes_known="declared" if settings["sizes_checked"] else
            "released as noisy counts (each group's plan made from its count)",
            requested=settings["budget"], accounting=settings["accounting"],
            group_budget=settings["group_budget"], group_plans=plans, spend=self.spend_,
            detectable_difference=self._detectable(graph, plans, p))
        self.detectable_difference_ = self.plan_.detectable_difference
        withheld = _withheld(fitted, levels)
        self.selection_withheld_ = withheld
        inferences = {level: fitted[level].infer() for level in levels}
        draws = {}
        large = p > 100
        for index, level in enumerate(levels):
            release = fitted[level].release_
            draws[level] = (np.zeros((self.n_draws, inferences[level].source.size)) if large
                            else linearised_draws(
                                inferences[level], n_samples=release.n_samples,
                                noise_variance=release.noise_variance,
                                noise_distribution=release.noise_distribution,
                                n_draws=int(self.n_draws), random_state=index))
        first, second = levels
        result = compare_inferences(
            inferences[first], inferences[second], first_draws=draws[first],
            second_draws=draws[second], confidence_level=float(self.confidence_level),
            fdr=float(self.fdr), fdr_method=self.fdr_method, withheld=withheld)
        self.difference_inference_ = result
        self.differences_ = result.to_frame(columns)
        self.global_test_ = result.global_record()
        if large and not withheld:
            # Draws of p > 100 releases are too costly: the Sidak bound alone (valid for
            # any correlation of the tests).
            self.global_test_.update(p_value=self.global_test_["sidak_p_value"],
                                     calibration="the Sidak bound (more than 100 variables)")
            self.global_test_.pop("critical_value_at_0.05", None)
        centrality = {}
        for level in levels:
            release = fitted[level].release_
            group_withheld = (withheld if withheld and self.centrality_support != "all"
                              else None)
            centrality[level] = node_centrality(
                inferences[level], n_samples=release.n_samples,
                noise_variance=release.noise_variance, support=self.centrality_support,
                confidence_level=float(self.confidence_level), withheld=group_withheld)
        frames = []
        for level in levels:
            frame = centrality[level].to_frame(columns)
            frame.insert(1, "group", level)
            frames.append(frame)
        self.centrality_ = pd.concat(frames, ignore_index=True)
        self.centrality_differences_ = compare_centrality(
            centrality[first], centrality[second]).to_frame(columns)
        self.centrality_inference_ = centrality
        self.n_features_in_ = p
        if split.named:
            self.feature_names_in_ = np.asarray(columns, dtype=object)
        elif "feature_names_in_" in self.__dict__:
            del self.feature_names_in_
        self.privacy_ = self._guarantee(settings, fitted)

    def _guarantee(self, settings: dict[str, Any], fitted: dict[str, Any]) -> PrivacyGuarantee:
        levels = settings["levels_checked"]
        budget = settings["budget"]
        bounds = {"kind": "per group", "groups": {level: fitted[level].privacy_.bounds
                                                  for level in levels}}
        ctx = make_context(self, bounds)
        breakdown = []
        for level in levels:
            for step in fitted[level].privacy_.noise.get("breakdown", []):
                breakdown.append({**step, "group": level,
                                  "step": f"{level}: {step['step']}"})
        reasons = [fitted[level].privacy_.reason for level in levels
                   if fitted[level].privacy_.validity == "data-dependent"]
        invalid = next((fitted[level].privacy_.reason for level in levels
                        if fitted[level].privacy_.validity == "invalid"), None)
        notes: dict[str, Any] = {
            "groups": self.spend_.to_dict(),
            "levels": list(levels),
            "group_sizes": {level: self.group_sizes_[level] for level in levels},
            "group_sizes_are": ("declared (public)" if settings["sizes_checked"]
                                else "released as noisy counts"),
            "comparison": "post-processing of the group releases: differences of the "
                          "de-biased partial correlations (Wald, both releases' standard "
                          "errors in quadrature), Benjamini-Hochberg q-values, the largest "
                          "|z| calibrated by linearised draws, centrality by the delta method",
        }
        if isinstance(budget, NonPrivate):
            return ctx.guarantee(budget=budget, mechanism=_MECHANISM, notes=notes)
        total = self.spend_.total
        record_budget: Budget = total
        if type(budget) is not type(total):
            notes["accounted_as"] = total.to_dict()
            notes["requested_budget"] = budget.to_dict()
            if budget.notion in guarantee_forms(budget, total, float(self.report_delta)):
                record_budget = budget
        notes["spent_exactly_total"] = exact_cost(total, type(total)) == exact_cost(
            settings["accounting"], type(total))
        record = ctx.guarantee(budget=record_budget, mechanism=_MECHANISM,
                               noise={"breakdown": breakdown}, notes=notes,
                               invalid_reason=invalid, data_dependent_reasons=reasons)
        forms = guarantee_forms(budget, total, float(self.report_delta))
        return replace(record, equivalent=tuple(b for b in forms.values()
                                                if b != record_budget))

    # -- the released files --------------------------------------------------------------

    def _release_record(self) -> dict[str, Any]:
        return comparison_result_record(self)

    def _stage_release(self, staged: Any, record: dict[str, Any]) -> None:
        stage_comparison_release(staged, self, record)

    def save(self, out: Any, **options: Any) -> dict[str, Any]:
        """Write the released files of this comparison into the directory ``out``, whole
        or not at all, charged to ``ledger`` (with ``dataset``) before they appear: those
        :func:`stage_comparison_release` writes (``result.json``, ``differences.csv``,
        ``centrality.csv``, ``centrality_differences.csv`` and each group's
        ``edges_<level>.csv``). The pictures and ``report.html`` are drawn by ``dpggm
        compare`` (or :func:`dpggm.report.comparison.comparison_files` from the saved
        files)."""
        return super().save(out, **options)


_MECHANISM = ("PrivateGraphComparison: one PrivateGraph release per group (private ranges, "
              "norm bound, mean and second moment of the group's records), composed by the "
              "relation; differences, tests and centrality are post-processing")


def _target(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < abs(value) < 1:
        raise ValueError(f"difference must be a number with 0 < |value| < 1; got {value!r}")
    return abs(float(value))


def _withheld(fitted: dict[str, Any], levels: tuple[str, ...]) -> str | None:
    """Why the comparison's selection is withheld: a group's own selection is (a public
    figure of its plan), or its inference is not calibrated."""
    for level in levels:
        graph = fitted[level]
        figures = getattr(graph, "planned_inference_", None) or {}
        if getattr(graph, "selection_withheld_", False):
            return (f"the release of the group {level!r} cannot support the inference: "
                    f"{figures.get('withheld_by') or 'its plan detects nothing'}")
        if not getattr(graph, "inference_calibrated_", True):
            return (f"the inference of the group {level!r} is not calibrated: "
                    f"{figures.get('calibration_note')}")
    return None


@dataclass
class _Split:
    """The records of each declared level (DataFrames), the variables' names, whether the
    input named them, and how many records fell outside the levels (curator-only)."""

    frames: dict[str, pd.DataFrame]
    columns: list[str]
    named: bool
    outside: int


def _split_records(X: Any, groups: Any, settings: dict[str, Any], owner: Any) -> _Split:
    """Split ``X`` by the groups (``groups``, or the column ``group`` of ``X``) into the
    declared levels; curator-side, nothing drawn."""
    from dpggm.data.tables import (
        TableFile,
        as_matrix,
        is_dask_collection,
        is_path,
        iter_chunks,
        read_text_column,
    )

    column = settings["group"]
    levels = settings["levels_checked"]
    if is_dask_collection(X):
        raise ValueError("PrivateGraphComparison reads its records into memory: pass a "
                         "DataFrame or a file, not a Dask collection")
    if (groups is None) == (column is None):
        raise ValueError("give the groups either as the column group=... of X or as "
                         "fit(X, groups=...), not both and not neither"
                         if groups is not None else
                         "the records' groups are needed: set group='COLUMN' (a column of X) "
                         "or pass fit(X, groups=...)")
    missing = "refuse" if settings["missing"] == "refuse" else "impute"
    named = True
    if is_path(X):
        table = X if isinstance(X, TableFile) else TableFile(X)
        if column is None:
            raise ValueError("for a file, name its grouping column: group='COLUMN'")
        names = table.resolve().names  # the header only
        if column not in names:
            raise ValueError(f"group: {table.where} has no column named {column!r}; its "
                             f"columns are {', '.join(repr(n) for n in names[:20])}"
                             + (", ..." if len(names) > 20 else ""))
        variables = replace(table, drop=tuple(table.drop) + (column,))
        blocks = list(iter_chunks(variables, missing=missing))
        values = np.concatenate([b[0] for b in blocks]) if blocks else np.empty((0, 0))
        columns = list(blocks[0][1]) if blocks else []
        labels = read_text_column(variables, column)
        if len(labels) != values.shape[0]:
            raise ValueError(f"the grouping column {column!r} of {table.where} has "
                             f"{len(labels)} records but the variables {values.shape[0]}; "
                             "check the file's blank rows")
        _check_declared_ranges(variables, settings)
    else:
        if column is not None:
            if not isinstance(X, pd.DataFrame):
                raise ValueError(f"group={column!r} names a column of a DataFrame; X is a "
                                 f"{type(X).__name__}: pass fit(X, groups=...)")
            if column not in X.columns:
                raise ValueError(f"group: X has no column named {column!r}")
            labels = list(X[column])
            X = X.drop(columns=[column])
        else:
            labels = list(np.asarray(groups, dtype=object).ravel())
        named = isinstance(X, pd.DataFrame)
        values, columns = as_matrix(X, missing=missing)
        if len(labels) != values.shape[0]:
            raise ValueError(f"groups must hold one label per record ({values.shape[0]}); "
                             f"got {len(labels)}")
    keys = np.array([label_key(label) for label in labels], dtype=object)
    frames = {level: pd.DataFrame(values[keys == level], columns=columns) for level in levels}
    outside = int(values.shape[0] - sum(len(f) for f in frames.values()))
    owner.n_outside_levels_ = outside  # curator-only
    return _Split(frames=frames, columns=[str(c) for c in columns], named=named,
                  outside=outside)


def _check_declared_ranges(table: Any, settings: dict[str, Any]) -> None:
    """A table whose schema declares ranges is compared with those ranges in
    ``column_ranges`` (as :class:`~dpggm.estimators.graph.PrivateGraph` requires)."""
    if not table.table_schema.declares_ranges:
        return
    declared = table.declared_ranges()
    given = {key: (low, high) for key, low, high in settings["column_ranges"]}
    for name, span in declared.items():
        if given.get(name) != span:
            raise ValueError(
                f"column_ranges: the table's schema declares {name!r} in "
                f"[{span[0]:g}, {span[1]:g}], but column_ranges "
                + (f"gives {given[name]}" if name in given else "does not hold it")
                + "; compare with column_ranges=table.declared_ranges()")


def comparison_result_record(estimator: PrivateGraphComparison) -> dict[str, Any]:
    """The public record of a fitted comparison (``result.json``): the levels and their
    sizes as released (or declared), the global test, what the plan can detect, how the
    differences were tested, the guarantee, every group's own record, the parameters (never
    the seed) -- nothing computed from the private data beyond the releases."""
    from dpggm.estimators._contract import feature_names
    from dpggm.estimators.graph import graph_result_record

    params = {k: v for k, v in estimator.get_params().items()
              if k not in ("random_state", "budget", "levels", "group_sizes")
              and isinstance(v, (int, float, str, bool))}
    params["budget"] = estimator.budget.to_dict()
    levels = list(estimator.levels_)
    detectable = estimator.detectable_difference_
    result = estimator.difference_inference_
    record: dict[str, Any] = {
        "method": "PrivateGraphComparison",
        "levels": levels,
        "group": estimator.group,
        "group_sizes": dict(estimator.group_sizes_),
        "group_sizes_are": estimator.privacy_.notes.get("group_sizes_are"),
        "n_features": int(estimator.n_features_in_),
        "features": feature_names(estimator),
        "n_differences": int(np.sum(result.selected)),
        "differences": {
            "difference": f"{levels[0]} minus {levels[1]}",
            "test": "Wald: the difference over the two releases' standard errors in "
                    "quadrature (independent releases and records); Benjamini-Hochberg"
                    if estimator.fdr_method == "bh" else "Benjamini-Yekutieli",
            "fdr": float(estimator.fdr),
            "fdr_method": estimator.fdr_method,
            "confidence_level": float(estimator.confidence_level),
            "selection_withheld": estimator.selection_withheld_,
        },
        "global_test": estimator.global_test_,
        "detectable_difference": {
            "difference": None if detectable is None or not math.isfinite(detectable)
            else float(detectable),
            "power": 0.8,
            "assumes": "an edge present in one group only, between variables without other "
                       "neighbours; roughly normal columns; a function of the plan (the "
                       "groups' sizes as released or declared, the budget, the bound rule)",
        },
        "centrality": {
            "support": estimator.centrality_support,
            "strength": "sum of |partial correlation| over the node's edges",
            "expected_influence": "sum of the node's partial correlations over its edges",
            "edges": {"familywise": "the pairs Holm's procedure selects at family-wise "
                                    "error 1 - confidence_level",
                      "selected": "the edges the false-discovery control selects",
                      "all": "every pair"}[estimator.centrality_support],
            "intervals": "delta method with the covariance of the node's pairs' estimates; "
                         "the edges taken as given",
        },
        "privacy": estimator.privacy_.to_dict(),
        "groups": {level: graph_result_record(estimator.groups_[level]) for level in levels},
        "files": {"edges": {level: name for level, name in _edge_files(levels).items()}},
        "parameters": params,
    }
    return record


def _edge_files(levels: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Each level's edge-list file name: ``edges_<level>.csv`` with the level's letters,
    digits, ``-`` and ``_`` (others as ``_``); by position where two would clash."""
    import re

    names: dict[str, str] = {}
    for index, level in enumerate(levels):
        stem = re.sub(r"[^A-Za-z0-9_-]+", "_", str(level)).strip("_")[:40] or f"group{index + 1}"
        name = f"edges_{stem}.csv"
        if name in names.values():
            name = f"edges_{stem}_{index + 1}.csv"
        names[level] = name
    return names


def stage_comparison_release(staged: Any, estimator: PrivateGraphComparison,
                             record: dict[str, Any]) -> None:
    """Write the released files of a fitted comparison that need no drawing into
    ``staged``: ``result.json`` (``record``), ``differences.csv`` (exactly
    ``differences_``), ``centrality.csv``, ``centrality_differences.csv`` and each group's
    ``edges_<level>.csv`` (its ``edges_``)."""
    from dpggm.estimators.edges import edges_csv_text
    from dpggm.io import csv_names_frame

    def csv(frame: pd.DataFrame, names: tuple[str, ...]) -> str:
        # Names (variables, levels) a spreadsheet would read as formulas get a quote, as
        # in edges.csv.
        return csv_names_frame(frame, names).to_csv(index=False, float_format="%.10g",
                                                     lineterminator="\n")

    staged.json("result.json", record)
    staged.text("differences.csv", csv(estimator.differences_, ("source", "target")))
    staged.text("centrality.csv", csv(estimator.centrality_, ("group", "node")))
    staged.text("centrality_differences.csv",
                csv(estimator.centrality_differences_, ("node",)))
    for level, name in _edge_files(estimator.levels_).items():
        staged.text(name, edges_csv_text(estimator.groups_[level].edges_))
