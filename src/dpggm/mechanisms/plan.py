"""Release plans: the measurements a fit will make, stated from public facts before any
data are read.

A :class:`ReleasePlan` lists, in order, every noise-adding step of a fit
(:class:`PlannedMeasurement`: what is measured, by which mechanism, how many times, with
which sensitivity and noise, and the budget the step delivers) and their composition. It is
built from public quantities only -- the numbers of rows and columns, the budget, the
declared bounds or the bound rule, the neighbouring relation -- so it can be shown, checked
against an accountant or a ledger, and compared with what the fit then records.

Steps whose sensitivity depends on a value released by an earlier step (a private row-norm
bound, say) state it as a formula in ``sensitivity_rule`` and the noise as a multiple of
that sensitivity (``noise_multiplier``); the budget of every step is fixed by the plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpggm.privacy.accountant import PrivacyAccountant, Spend, charge, reported_remaining
from dpggm.privacy.budgets import (
    ZCDP,
    ApproxDP,
    Budget,
    NonPrivate,
    PureDP,
    budget_from_cost,
    compose,
    exact_cost,
)
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA, jsonable

__all__ = ["PlanRun", "PlannedMeasurement", "ReleasePlan", "StepFilter", "guarantee_forms"]


def guarantee_forms(requested: Budget, accounting: Budget,
                    report_delta: float = DEFAULT_REPORT_DELTA) -> dict[str, Budget]:
    """Every form of a guarantee delivered as ``accounting`` for a ``requested`` budget,
    from public facts (see :meth:`ReleasePlan.forms`)."""
    out: dict[str, Budget] = {accounting.notion: accounting}
    # (epsilon, delta) holds when the steps ran in the zCDP that implies it -- not when
    # delta = 0 (no zCDP budget implies pure DP), unless they ran in pure DP.
    implied = isinstance(requested, ApproxDP) and (
        requested.delta > 0 or isinstance(accounting, PureDP))
    if implied or type(requested) is type(accounting):
        out[requested.notion] = requested
    if isinstance(accounting, PureDP):
        out.setdefault("zcdp", budget_from_cost(ZCDP, exact_cost(accounting, ZCDP),
                                                rounding="up"))
    if "approx-dp" not in out:
        approx = accounting.to_approx(report_delta)
        if isinstance(approx, ApproxDP):
            out["approx-dp"] = approx
    return out


@dataclass(frozen=True)
class PlannedMeasurement:
    """One noise-adding step of a release.

    Attributes
    ----------
    step : str
        What is measured (``"ranges: median"``, ``"second moment"``, ...).
    mechanism : str
        ``"exponential"``, ``"discrete gaussian"``, ``"discrete laplace"``, ...
    repetitions : int
        How many times the mechanism runs in this step (one per column, say).
    budget : Budget
        What the whole step delivers (all repetitions composed).
    sensitivity : float or None
        The sensitivity of one repetition (score sensitivity for the exponential
        mechanism, l2 or l1 for additive noise), when it is fixed by public parameters.
    sensitivity_rule : str
        How the sensitivity follows from released values when it is not fixed.
    noise : dict
        Public noise parameters of one repetition: ``epsilon`` (exponential), ``sigma``
        and ``grid`` (Gaussian), ``scale`` (Laplace); ``noise_multiplier`` (noise scale
        over sensitivity) when the sensitivity is set by an earlier step.
    measurement : Measurement or None
        The mechanism object the fit runs for this step (not serialised, not compared):
        a step built from a measurement states exactly that measurement's figures, and
        the fit releases through it, so plan and record cannot disagree. ``None`` for a
        step whose mechanism is made at run time from released values (its sensitivity
        then follows ``sensitivity_rule``) or that runs under a filter.
    """

    step: str
    mechanism: str
    budget: Budget
    repetitions: int = 1
    sensitivity: float | None = None
    sensitivity_rule: str = ""
    noise: dict[str, Any] = field(default_factory=dict)
    measurement: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step,
            "mechanism": self.mechanism,
            "repetitions": self.repetitions,
            "budget": self.budget.to_dict(),
        }
        if self.sensitivity is not None:
            out["sensitivity"] = self.sensitivity
        if self.sensitivity_rule:
            out["sensitivity_rule"] = self.sensitivity_rule
        if self.noise:
            out["noise"] = {k: jsonable(v) for k, v in self.noise.items()}
        return out


@dataclass(frozen=True)
class ReleasePlan:
    """The ordered measurements of a fit and their composition.

    Attributes
    ----------
    estimator : str
    n_samples, n_features : int
        The public sizes the plan was made for.
    requested : Budget
        The budget the caller declared.
    accounting : Budget
        The same total in the notion the steps compose in (``ZCDP`` for a pipeline of
        Gaussian and exponential mechanisms given an ``(epsilon, delta)`` budget: the
        largest ``rho`` whose conversion implies it).
    steps : tuple of PlannedMeasurement
    neighbors : str
    notes : dict
        Public facts about how the plan was made (the shares chosen, say).
    """

    estimator: str
    n_samples: int
    n_features: int
    requested: Budget
    accounting: Budget
    steps: tuple[PlannedMeasurement, ...]
    neighbors: str = "replace"
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def non_private(self) -> bool:
        return isinstance(self.requested, NonPrivate)

    @property
    def total(self) -> Budget:
        """The composition of the steps, rounded up once (never understated)."""
        if self.non_private or not self.steps:
            return self.accounting
        return compose([s.budget for s in self.steps])

    def exact_spend(self) -> tuple[Fraction, ...]:
        """The exact sum of the steps' costs in the accounting notion."""
        notion = type(self.accounting)
        total = [Fraction(0)] * len(exact_cost(self.accounting, notion))
        for step in self.steps:
            for i, c in enumerate(exact_cost(step.budget, notion)):
                total[i] += c
        return tuple(total)

    @property
    def spends_exactly(self) -> bool:
        """Whether the steps add up to exactly the accounting total."""
        if self.non_private:
            return True
        return self.exact_spend() == exact_cost(self.accounting, type(self.accounting))

    def forms(self, report_delta: float = DEFAULT_REPORT_DELTA) -> dict[str, Budget]:
        """The guarantee of the whole release in every form that holds: the accounting
        one, the requested one when it follows from it (an ``(epsilon, delta)`` budget run
        in the zCDP that implies it; not a GDP or pure-DP budget run in zCDP), the
        ``epsilon**2 / 2``-zCDP of a pure-DP release, and ``(epsilon, delta)`` at
        ``report_delta``."""
        if self.non_private:
            return {}
        return guarantee_forms(self.requested, self.accounting, report_delta)

    def step(self, name: str) -> PlannedMeasurement:
        """The planned step called ``name``."""
        for planned in self.steps:
            if planned.step == name:
                return planned
        raise KeyError(f"the plan of {self.estimator} has no step {name!r}")

    @property
    def empty(self) -> bool:
        """Whether the release spends nothing (a non-private run, or post-processing of a
        published release)."""
        return self.non_private or not self.steps

    def to_dict(self, report_delta: float = DEFAULT_REPORT_DELTA) -> dict[str, Any]:
        return {
            "estimator": self.estimator,
            # Under add/remove neighbours the number of records is private: never recorded.
            "n_samples": self.n_samples if self.neighbors == "replace" else None,
            "n_features": self.n_features,
            "neighbors": self.neighbors,
            "requested": self.requested.to_dict(),
            "accounting": self.accounting.to_dict(),
            "steps": [s.to_dict() for s in self.steps],
            "spends_exactly_total": self.spends_exactly,
            "forms": {k: v.to_dict() for k, v in self.forms(report_delta).items()},
            "notes": dict(self.notes),
        }


class _Booking:
    """What a runner of planned steps does, whatever checks its spends: run a step, book
    it, keep the record of every step run (``breakdown``) and what each delivered."""

    plan: ReleasePlan | None
    breakdown: list[dict[str, Any]]
    delivered: list[Budget]

    def _limit(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, name: str, release: Callable[[PlannedMeasurement], Any],
            **noise: Any) -> Any:
        """Run the planned step ``name``: ``release(planned)`` makes the release (through
        ``planned.measurement`` when the plan holds one) and returns the released value;
        ``noise`` adds public figures known only once it ran (a step under a rule)."""
        planned = self._planned(name)
        self._check(planned.budget)
        result = release(planned)
        self.book(planned, **noise)
        return result

    def measure(self, name: str, release: Callable[[PlannedMeasurement], tuple[Any, dict]],
                *, delivered: Callable[[Any], Budget] | None = None) -> Any:
        """Run the planned step ``name`` whose public figures are known only once it ran:
        ``release(planned)`` returns ``(value, record)``, and the step's entry in
        ``breakdown`` states ``record`` in place of the planned figures. The step is booked
        at its planned budget, or at ``delivered(value)`` for a step that states its own
        guarantee (never more than planned: the check before it ran was of the plan's)."""
        planned = self._planned(name)
        self._check(planned.budget)
        result, record = release(planned)
        budget = planned.budget if delivered is None else delivered(result)
        self._spend(budget, planned)
        self.delivered.append(budget)
        self.breakdown.append({"step": planned.step, "budget": budget,
                               "mechanism": planned.mechanism, **record})
        return result

    def filtered(self, name: str, release: Callable[[PlannedMeasurement, StepFilter], Any],
                 **noise: Any) -> Any:
        """Run the planned step ``name`` whose parts are chosen while it runs (an adaptive
        algorithm's rounds): ``release(planned, part)`` spends every part through ``part``
        (:class:`StepFilter`, whose total is the step's budget), which refuses a part that
        would take the step beyond its plan; the step is checked before its first part
        and booked at its planned budget after its last."""
        planned = self._planned(name)
        self._check(planned.budget)
        result = release(planned, StepFilter(planned.budget))
        self.book(planned, **noise)
        return result

    def book(self, planned: PlannedMeasurement, **noise: Any) -> None:
        """Book a step that ran (see :meth:`run`)."""
        self._spend(planned.budget, planned)
        self.delivered.append(planned.budget)
        self.breakdown.append({"step": planned.step, "mechanism": planned.mechanism,
                               "budget": planned.budget, **planned.noise, **noise})

    def _planned(self, name: str) -> PlannedMeasurement:
        if self.plan is None:
            raise ValueError("this filter runs no plan: spend its parts directly")
        return self.plan.step(name)

    def _check(self, budget: Budget) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _spend(self, budget: Budget, planned: PlannedMeasurement) -> None:  # pragma: no cover
        raise NotImplementedError

    @property
    def spent(self) -> Budget:
        """What ran, composed (rounded up once)."""
        if not self.delivered:
            return self._limit()
        return compose(self.delivered)


class PlanRun(_Booking):
    """Runs the steps of a plan: each is checked against one
    :class:`~dpggm.privacy.PrivacyAccountant` (opened with the plan's accounting total)
    before it runs and booked after, so only what ran is spent and nothing beyond the plan
    can be; the record of every step run is kept for the guarantee (``breakdown``).

    A fit builds one: a step whose parts are chosen while it runs spends them through a
    :class:`StepFilter` over the step's budget (:meth:`filtered`), never through an
    accountant of its own.

    Parameters
    ----------
    plan : ReleasePlan
    """

    def __init__(self, plan: ReleasePlan) -> None:
        self.plan = plan
        self.accountant = None if plan.empty else PrivacyAccountant(plan.accounting)
        self.breakdown: list[dict[str, Any]] = []
        self.delivered: list[Budget] = []

    def replan(self, plan: ReleasePlan) -> None:
        """Go on with ``plan`` in place of the plan this run was opened with (a plan made
        from a value released by a step already run: an add/remove fit's count), under
        the same accountant; it must have the same accounting total and hold every step
        already run, at the budget it ran at."""
        if plan.accounting != self.plan.accounting:
            raise ValueError(f"a run opened for {self.plan.accounting} cannot go on with a plan "
                             f"for {plan.accounting}")
        for entry in self.breakdown:
            if plan.step(entry["step"]).budget != entry["budget"]:
                raise ValueError(f"the new plan changes the budget of step {entry['step']!r}, "
                                 "which already ran")
        self.plan = plan

    def _limit(self) -> Budget:
        return self.plan.accounting

    def _check(self, budget: Budget) -> None:
        if self.accountant is not None:
            self.accountant.check(budget)

    def _spend(self, budget: Budget, planned: PlannedMeasurement) -> None:
        if self.accountant is not None:
            self.accountant.spend(budget, mechanism=planned.mechanism, step=planned.step)

    @property
    def spent_exactly_total(self) -> bool:
        """Whether what ran adds up exactly to the plan's accounting total."""
        if self.accountant is None:
            return True
        return tuple(self.accountant.exact_spent) == tuple(
            exact_cost(self.plan.accounting, type(self.plan.accounting)))


class StepFilter(_Booking):
    """The parts of one planned step, chosen while it runs, checked against the step's
    budget: a privacy filter (Rogers, Roth, Ullman & Vadhan 2016) whose total is fixed by
    the plan, by the accountant's own exact rule (:func:`~dpggm.privacy.accountant.charge`:
    a part that would take the sum above the total is refused before it runs, a part that
    brings it exactly to the total succeeds). It holds no budget of the fit's: the run's
    one accountant checked the step before its first part and books it after its last.

    A filter may also run an inner plan whose total is the step's (:meth:`running`): the
    steps of an estimator fitted as one step of another's plan, each checked against the
    filter and booked in it.

    Parameters
    ----------
    total : Budget
        The step's budget.
    plan : ReleasePlan, optional
        The inner plan the filter runs (see :meth:`running`).
    """

    def __init__(self, total: Budget, plan: ReleasePlan | None = None) -> None:
        self.total = total
        self.plan = plan
        self._notion = type(total)
        self._cap = exact_cost(total, self._notion)
        self._exact = tuple(Fraction(0) for _ in self._cap)
        self._log: list[Spend] = []
        self.breakdown: list[dict[str, Any]] = []
        self.delivered: list[Budget] = []

    def running(self, plan: ReleasePlan) -> StepFilter:
        """A filter over ``plan``'s accounting total (no more than this one's, checked)
        that runs ``plan``'s steps; what they deliver is booked here when it is booked
        (:meth:`spend` of the result's guarantee)."""
        inner = StepFilter(plan.accounting, plan)
        self.check(plan.accounting)
        return inner

    @property
    def accountant(self) -> StepFilter:
        """The filter itself: what the steps of its inner plan are checked against."""
        return self

    @property
    def remaining(self) -> Budget:
        """What is left of the step's budget, rounded down (spending exactly it succeeds)."""
        return reported_remaining(self._notion, self._cap, self._exact)

    @property
    def exact_spent(self) -> tuple[Fraction, ...]:
        """The exact sum of the parts spent so far, in the step's notion."""
        return self._exact

    @property
    def spends(self) -> tuple[Spend, ...]:
        """Every part, in order."""
        return tuple(self._log)

    def check(self, budget: Budget) -> None:
        """Raise unless ``budget`` fits in what remains of the step; records nothing."""
        charge(self._cap, self._exact, budget, self._notion, what="step filter")

    def spend(self, budget: Budget, *, mechanism: str | None = None, **details: Any) -> None:
        """Record a part, or refuse it (``BudgetExceededError``) if it would take the step
        beyond its budget."""
        _, self._exact = charge(self._cap, self._exact, budget, self._notion,
                                what="step filter")
        self._log.append(Spend(budget, "unspecified" if mechanism is None else mechanism,
                               dict(details)))

    def _limit(self) -> Budget:
        return self.total

    def _check(self, budget: Budget) -> None:
        self.check(budget)

    def _spend(self, budget: Budget, planned: PlannedMeasurement) -> None:
        self.spend(budget, mechanism=planned.mechanism, step=planned.step)

    @property
    def spent_exactly_total(self) -> bool:
        """Whether the parts add up exactly to the filter's total."""
        return tuple(self._exact) == tuple(self._cap)
