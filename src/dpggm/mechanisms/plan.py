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

from dpggm.privacy.accountant import PrivacyAccountant
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

__all__ = ["PlanRun", "PlannedMeasurement", "ReleasePlan", "guarantee_forms"]


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


class PlanRun:
    """Runs the steps of a plan: each is checked against one
    :class:`~dpggm.privacy.PrivacyAccountant` (opened with the plan's accounting total)
    before it runs and booked after, so only what ran is spent and nothing beyond the plan
    can be; the record of every step run is kept for the guarantee (``breakdown``).

    Parameters
    ----------
    plan : ReleasePlan
    """

    def __init__(self, plan: ReleasePlan) -> None:
        self.plan = plan
        self.accountant = None if plan.empty else PrivacyAccountant(plan.accounting)
        self.breakdown: list[dict[str, Any]] = []
        self.delivered: list[Budget] = []

    def run(self, name: str, release: Callable[[PlannedMeasurement], Any],
            **noise: Any) -> Any:
        """Run the planned step ``name``: ``release(planned)`` makes the release (through
        ``planned.measurement`` when the plan holds one) and returns the released value;
        ``noise`` adds public figures known only once it ran (a step under a rule)."""
        planned = self.plan.step(name)
        if self.accountant is not None:
            self.accountant.check(planned.budget)
        result = release(planned)
        self.book(planned, **noise)
        return result

    def book(self, planned: PlannedMeasurement, **noise: Any) -> None:
        """Book a step that ran (see :meth:`run`)."""
        if self.accountant is not None:
            self.accountant.spend(planned.budget, mechanism=planned.mechanism, step=planned.step)
        self.delivered.append(planned.budget)
        self.breakdown.append({"step": planned.step, "mechanism": planned.mechanism,
                               "budget": planned.budget, **planned.noise, **noise})

    @property
    def spent(self) -> Budget:
        """What ran, composed (rounded up once)."""
        if not self.delivered:
            return self.plan.accounting
        return compose(self.delivered)

    @property
    def spent_exactly_total(self) -> bool:
        """Whether what ran adds up exactly to the plan's accounting total."""
        if self.accountant is None:
            return True
        return tuple(self.accountant.exact_spent) == tuple(
            exact_cost(self.plan.accounting, type(self.plan.accounting)))
