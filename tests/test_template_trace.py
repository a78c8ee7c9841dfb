"""A fit of :class:`~dpggm.PrivateGraph` runs on the one fit template, traced at run time:
one privacy accountant and one plan runner per fit (PACE-GGM included), every planned step
holding the measurement it runs, and the second moment's noise reached from ``fit``
through few modules."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpggm import ZCDP, PrivateGraph
from dpggm.mechanisms import plan as plan_module
from dpggm.privacy import accountant as accountant_module

N, P = 2_000, 5


def _records() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    z = rng.normal(size=(N, P))
    values = np.empty_like(z)
    values[:, 0] = z[:, 0]
    for j in range(1, P):
        values[:, j] = 0.6 * values[:, j - 1] + 0.8 * z[:, j]
    return pd.DataFrame(values, columns=[f"v{j}" for j in range(P)])


def _counted(monkeypatch: pytest.MonkeyPatch, cls: type) -> list[Any]:
    """Every instance of ``cls`` (or of a subclass) built from now on."""
    built: list[Any] = []
    original = cls.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(cls, "__init__", init)
    return built


def _fit(method: str) -> PrivateGraph:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateGraph(budget=ZCDP(1), random_state=0, method=method).fit(_records())


@pytest.mark.parametrize("method", ["glasso", "pace"])
def test_one_accountant_and_one_plan_run_per_fit(method, monkeypatch):
    accountants = _counted(monkeypatch, accountant_module.PrivacyAccountant)
    runs = _counted(monkeypatch, plan_module.PlanRun)
    graph = _fit(method)
    assert graph.bounds == "auto"
    assert len(runs) == 1, f"{len(runs)} PlanRun built in one {method} fit"
    assert len(accountants) == 1, f"{len(accountants)} PrivacyAccountant built in one {method} fit"
    # The one accountant is the plan run's, and it booked the whole plan.
    assert runs[0].accountant is accountants[0]
    assert graph.privacy_.notes["spent_exactly_total"] is True


@pytest.mark.parametrize("method", ["glasso", "pace"])
def test_every_planned_step_holds_its_measurement(method):
    graph = _fit(method)
    steps = graph.plan_.steps
    names = [s.step for s in steps]
    expected = (["bounds", "norm bound", "missing counts", "mean", "second moment"]
                if method == "glasso" else ["bounds", "mean", "second moment"])
    assert names == expected
    missing = [s.step for s in steps if s.measurement is None]
    assert not missing, f"{len(steps) - len(missing)} of {len(steps)} steps hold a measurement"
    for step in steps:
        # Each measurement states its privacy: what it delivers is the step's budget.
        measurement = step.measurement
        assert callable(getattr(measurement, "privacy_map", None)), step.step
        assert measurement.delivered == step.budget, step.step


def _modules_to_sampler(size: int) -> list[str]:
    """The dpggm modules on the stack, from the template's ``fit`` to the exact sampler,
    when the sampler draws ``size`` coordinates of noise (the second moment's upper
    triangle)."""
    from dpggm.estimators._base import PlannedEstimator
    from dpggm.mechanisms import discrete_gaussian

    fit_code = PlannedEstimator.fit.__code__
    sampler_code = discrete_gaussian.sample_discrete_gaussian.__code__
    seen: list[list[str]] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code is not sampler_code:
            return
        shape = frame.f_locals.get("size")
        if shape != (size,):
            return
        modules: list[str] = []
        current = frame
        while current is not None:
            name = current.f_globals.get("__name__", "")
            if name.startswith("dpggm") and name not in modules:
                modules.append(name)
            if current.f_code is fit_code:
                break
            current = current.f_back
        seen.append(modules[::-1])

    sys.setprofile(profile)
    try:
        _fit("glasso")
    finally:
        sys.setprofile(None)
    assert len(seen) == 1, f"the second moment's sampler ran {len(seen)} times"
    return seen[0]


def test_the_second_moment_step_crosses_few_modules():
    modules = _modules_to_sampler(P * (P + 1) // 2)
    assert modules[0] == "dpggm.estimators._base"
    assert modules[-1] == "dpggm.mechanisms.discrete_gaussian"
    assert len(modules) <= 5, modules


def test_a_step_filter_refuses_a_part_beyond_its_step():
    from dpggm.exceptions import BudgetExceededError
    from dpggm.mechanisms.plan import StepFilter

    part = StepFilter(ZCDP(0.5))
    part.spend(ZCDP(0.25), mechanism="exponential")
    with pytest.raises(BudgetExceededError):
        part.spend(ZCDP(0.375))
    # Exactly what remains succeeds, and the filter then holds its whole total.
    part.spend(part.remaining, mechanism="gaussian")
    assert part.spent_exactly_total
    assert [s.mechanism for s in part.spends] == ["exponential", "gaussian"]


def test_a_replan_keeps_the_steps_already_run():
    from dpggm.mechanisms.plan import PlannedMeasurement, PlanRun, ReleasePlan

    def plan(count: float) -> ReleasePlan:
        steps = (PlannedMeasurement("count", "discrete gaussian", ZCDP(count)),
                 PlannedMeasurement("rest", "discrete gaussian", ZCDP(1 - count)))
        return ReleasePlan("x", 10, 2, ZCDP(1), ZCDP(1), steps)

    run = PlanRun(plan(0.25))
    run.run("count", lambda planned: None)
    with pytest.raises(ValueError, match="already ran"):
        run.replan(plan(0.5))
    run.replan(plan(0.25))
    run.run("rest", lambda planned: None)
    assert run.spent_exactly_total
    assert len(run.accountant.spends) == 2


def test_the_second_moment_releases_through_its_planned_measurement():
    graph = _fit("glasso")
    planned = graph.plan_.step("second moment")
    bound = graph.norm_bound_.bound
    from dpggm.mechanisms.bounds import RowNorm

    mechanism = planned.measurement.calibrated(RowNorm(bound), N, "exact")
    ran = next(s for s in graph.privacy_.noise["breakdown"] if s["step"] == "second moment")
    assert ran["sigma"] == mechanism.sigma and ran["grid"] == mechanism.grid
    # The noise over the sensitivity the rule set is the plan's multiplier (slightly
    # more: the exact noise on a grid pays for the rounding of the values onto it).
    ratio = mechanism.sigma / mechanism.sensitivity
    assert planned.noise["noise_multiplier"] <= ratio <= 1.01 * planned.noise["noise_multiplier"]
    # The privacy map: the planned budget at the rule's sensitivity, more beyond it.
    assert planned.measurement.privacy_map(1.0) == planned.budget
    assert planned.measurement.privacy_map(2.0).rho > planned.budget.rho
