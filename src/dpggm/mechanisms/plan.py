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

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

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
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA

__all__ = ["PlannedMeasurement", "ReleasePlan", "guarantee_forms"]


def guarantee_forms(requested: Budget, accounting: Budget,
                    report_delta: float = DEFAULT_REPORT_DELTA) -> dict[str, Budget]:
    """Every form of a guarantee delivered as ``accounting`` for a ``requested`` budget,
    from public facts (see :meth:`ReleasePlan.forms`)."""
    out: dict[str, Budget] = {accounting.notion: accounting}
    if isinstance(requested, ApproxDP) or type(requested) is type(accounting):
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
    """

    step: str
    mechanism: str
    budget: Budget
    repetitions: int = 1
    sensitivity: float | None = None
    sensitivity_rule: str = ""
    noise: dict[str, Any] = field(default_factory=dict)

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
            out["noise"] = dict(self.noise)
        return out

    def executed(self, **noise: Any) -> PlannedMeasurement:
        """The same step with the noise parameters it actually used."""
        return replace(self, noise={**self.noise, **noise})


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

    def to_dict(self, report_delta: float = DEFAULT_REPORT_DELTA) -> dict[str, Any]:
        return {
            "estimator": self.estimator,
            "n_samples": self.n_samples,
            "n_features": self.n_features,
            "neighbors": self.neighbors,
            "requested": self.requested.to_dict(),
            "accounting": self.accounting.to_dict(),
            "steps": [s.to_dict() for s in self.steps],
            "spends_exactly_total": self.spends_exactly,
            "forms": {k: v.to_dict() for k, v in self.forms(report_delta).items()},
            "notes": dict(self.notes),
        }
