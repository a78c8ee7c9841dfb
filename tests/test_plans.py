"""Ask before you run: for every registered method and every exported estimator, the plan
stated from public facts before ``fit`` is exactly what ``fit`` then records (every step,
its budget and its noise figures, the total in every form); and a bad value of every
declared parameter -- the bad values generated from the declared constraints -- is refused
with a ValueError naming it, before any random word is drawn."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import dpggm
from dpggm import (
    GDP,
    ZCDP,
    ApproxDP,
    Box,
    GWishartGraph,
    NoisyGraphicalLasso,
    PACECovariance,
    PrivateCovariance,
    PrivateGraph,
    PrivateLinearRegression,
    PureDP,
    RowNorm,
)
from dpggm.estimators._base import PlannedEstimator, PostProcessingEstimator
from dpggm.estimators._contract import (
    FLAG,
    AnyOf,
    BoxBounds,
    BudgetOf,
    Constraint,
    Interval,
    Optional,
    Options,
    Required,
    declared_constraints,
)
from dpggm.estimators.registry import METHODS, make_estimator
from dpggm.mechanisms.random import RandomSource

N, P = 400, 4
POST_PROCESSING = {"NoisyGraphicalLasso", "NeighborhoodSelection", "SCIO", "GWishartGraph"}
REGRESSORS = {"AdaSSP", "PrivateLinearRegression"}


def _budget_for(name: str):
    if name in ("laplace", "wishart-pure", "output-perturbation", "OutputPerturbationPrecision"):
        return PureDP(1.0)
    if name in ("sulq", "wishart"):
        return ApproxDP(0.5, 1e-6)
    return ZCDP(1.0)


def _make(name: str, **params):
    """A private estimator (or a method) with a valid budget and bounds."""
    if name in METHODS:
        params.setdefault("budget", _budget_for(name))
        params.setdefault("bounds", "box:1")
        if name in ("wishart-pure", "output-perturbation"):
            params.setdefault("allow_invalid", True)
        return make_estimator(name, **params)
    cls = getattr(dpggm, name)
    if name == "PrivateLinearRegression":
        inner = {"budget": ZCDP(1.0), "bounds": "box:1"}
        for key in ("random_state", "noise", "neighbors", "bounds", "budget"):
            if key in params:
                inner[key] = params.pop(key)
        params.setdefault("covariance_estimator", PrivateCovariance(**inner))
        return cls(**params)
    if name in POST_PROCESSING:
        params.setdefault("noise_sigma", 0.0)
        if name == "GWishartGraph":
            params.setdefault("n_iter", 2000)
        else:
            params.setdefault("alpha", 0.05)
        return cls(**params)
    params.setdefault("budget", _budget_for(name))
    params.setdefault("bounds", "box:1")
    if name == "OutputPerturbationPrecision":
        params.setdefault("allow_invalid", True)
    if name == "AdaSSP":
        params.setdefault("y_bound", 1.0)
    return cls(**params)


EXPORTED = sorted(
    name for name in dpggm.__all__
    if inspect.isclass(getattr(dpggm, name))
    and issubclass(getattr(dpggm, name), (PlannedEstimator, PostProcessingEstimator))
)
CASES = sorted(set(METHODS) | set(EXPORTED))


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.45, 0.45, size=(N, P))
    y = X @ np.array([0.2, -0.1, 0.0, 0.1]) + rng.uniform(-0.05, 0.05, size=N)
    return X, y


def _fit(name, est, X, y):
    return est.fit(X, y) if name in REGRESSORS else est.fit(X)


def test_every_estimator_follows_one_of_two_templates():
    estimators = [getattr(dpggm, n) for n in dpggm.__all__ if inspect.isclass(getattr(dpggm, n))
                  and hasattr(getattr(dpggm, n), "fit")]
    assert len(estimators) == 17
    for cls in estimators:
        assert issubclass(cls, (PlannedEstimator, PostProcessingEstimator)), cls
        # The template's fit is the only fit (a subclass may only document it).
        for klass in cls.__mro__:
            if "fit" in klass.__dict__ and klass not in (PlannedEstimator, PostProcessingEstimator):
                source = inspect.getsource(klass.__dict__["fit"])
                assert "return super().fit(X, y)" in source, klass


@pytest.mark.parametrize("name", CASES)
def test_plan_before_fit_is_what_fit_records(name):
    X, y = _data()
    est = _make(name, random_state=None) if name not in POST_PROCESSING else _make(name)
    plan = est.plan(n_samples=N, n_features=P)
    fitted = _fit(name, est, X, y)
    assert fitted.plan_ == plan
    privacy = fitted.privacy_
    if name in POST_PROCESSING:
        assert plan.steps == () and "nothing spent" in plan.notes["reason"]
        return
    assert plan.steps, "a private release makes at least one measurement"
    breakdown = privacy.noise["breakdown"]
    assert [s["step"] for s in breakdown] == [s.step for s in plan.steps]
    for recorded, planned in zip(breakdown, plan.steps):
        assert recorded["budget"] == planned.budget, planned.step
        assert recorded["mechanism"] == planned.mechanism
        for key, value in planned.noise.items():
            assert recorded[key] == value, (planned.step, key)
    assert privacy.notes["plan"] == plan.to_dict(est.get_params()["report_delta"]
                                                 if "report_delta" in est.get_params()
                                                 else 1e-6)
    # The total in every form, as the plan states it.
    forms = plan.forms(privacy.report_delta)
    assert privacy.budget in forms.values()
    assert set(privacy.forms) <= set(forms.values()) | {plan.total}
    if plan.spends_exactly:
        assert plan.total == plan.accounting
    # What a ledger is checked against before any data are read is what the record holds.
    assert est.release_forms() == forms or name == "PrivateLinearRegression"


@pytest.mark.parametrize("name, budget, bounds", [
    ("PrivateGraph", ApproxDP(2.0, 1e-6), "auto"),
    ("PrivateGraph", PureDP(3.0), "auto"),
    ("PACECovariance", PureDP(1.0), "box:1"),
    ("SSPCovariance", GDP(1.0), "box:1"),
    ("GraphicalLasso", GDP(0.8), "l2:2"),
    ("AdaSSP", ApproxDP(1.0, 1e-6), "l2:2"),
    ("DiagonalCovariance", ZCDP(0.3), Box((1.0, 0.5, 2.0, 1.0))),
])
def test_plan_states_every_budget_form_the_record_holds(name, budget, bounds):
    X, y = _data()
    if name == "PrivateGraph":
        from dpggm.datasets import make_raw_chain

        frame, _ = make_raw_chain(n_samples=3000, n_features=P, random_state=0)
        est = PrivateGraph(budget=budget, bounds=bounds)
        plan = est.plan(n_samples=3000, n_features=P)
        est.fit(frame)
    else:
        est = _make(name, budget=budget, bounds=bounds)
        plan = est.plan(n_samples=N, n_features=P)
        _fit(name, est, X, y)
    assert est.plan_ == plan
    assert set(est.privacy_.forms) == set(plan.forms(est.privacy_.report_delta).values())
    assert est.release_forms() == plan.forms(est.privacy_.report_delta)


def test_add_remove_plans_never_record_the_private_count():
    X, _ = _data()
    est = PrivateCovariance(budget=ZCDP(1.0), bounds="l2:1", neighbors="add-remove")
    plan = est.plan(n_samples=N, n_features=P)
    assert [s.step for s in plan.steps] == ["count", "second moment"]
    assert plan.to_dict()["n_samples"] is None
    est.fit(X)
    assert est.privacy_.notes["plan"]["n_samples"] is None
    assert str(N) not in str(est.privacy_.notes["plan"])


def test_post_processing_plans_are_empty_and_say_so():
    plan = NoisyGraphicalLasso(noise_sigma=0.1).plan(n_samples=10, n_features=3)
    assert plan.steps == () and plan.empty and "nothing spent" in plan.notes["reason"]


def test_regression_plans_the_covariance_estimators_release_of_the_stacked_columns():
    inner = PACECovariance(budget=ZCDP(1.0), bounds=Box(1.0))
    plan = PrivateLinearRegression(covariance_estimator=inner,
                                   fit_intercept=True).plan(n_samples=N, n_features=P)
    assert plan == inner.plan(n_samples=N, n_features=P + 2)


@pytest.mark.parametrize("n_samples, n_features", [(0, 3), (10, True), (10.0, 3), (5, -1)])
def test_plan_refuses_sizes_that_are_not_positive_integers(n_samples, n_features):
    with pytest.raises(ValueError, match="n_samples|n_features"):
        PrivateCovariance(budget=ZCDP(1.0), bounds="l2:1").plan(
            n_samples=n_samples, n_features=n_features)


# ------------------------------------------------------------------ the error contract


def _bad_values(constraint: Constraint) -> list:
    """Values the constraint refuses, generated from what it declares."""
    if isinstance(constraint, Required):
        return [None] + _bad_values(constraint.constraint)
    if isinstance(constraint, Optional):
        return [v for v in _bad_values(constraint.constraint) if v is not None]
    if isinstance(constraint, AnyOf):
        return [object()]
    if isinstance(constraint, Interval):
        out = ["x", float("nan")]
        if constraint.low is not None:
            out.append(constraint.low - 1 if constraint.closed in ("left", "both") else constraint.low)
        if constraint.high is not None:
            out.append(constraint.high + 1 if constraint.closed in ("right", "both")
                       else constraint.high)
        if constraint.integer:
            out.append(1.5)
        return out
    if isinstance(constraint, Options):
        return ["bogus-option" if isinstance(constraint.options[0], str) else "x", 3.5]
    if constraint is FLAG:
        return [0, "yes"]
    if isinstance(constraint, BudgetOf):
        allowed = set(constraint.notions)
        other = next(b for b in (PureDP(1.0), ApproxDP(1.0, 1e-6), ZCDP(1.0), GDP(1.0))
                     if type(b) not in allowed)
        return [1.0, other]
    if isinstance(constraint, BoxBounds):
        return [RowNorm(1.0), "box:-1", 2.0]
    name = type(constraint).__name__
    return {
        "_Budget": [1.0, None],
        "_Bounds": ["l2:x", 1.0],
        "_RandomState": ["x", -1, 1.5],
        "_Vector": [[float("nan")], "v"],
        "_Callable": [1],
        "_Estimator": [None, 3],
        "_Release": [{"noise": {}}, 1],
        "_Grid": [[], [-1.0], "x"],
        "_ColumnRanges": [{"no such column": (0, 1)}, {0: (1, 0)}, {0: (0, float("inf"))},
                          {-1: (0, 1)}, [(0, 1)]],
    }[name]


def _value_id(value) -> str:
    """A test id that is the same in every process: a bare ``object()``'s repr holds its
    address, which differs between pytest-xdist's workers (they must collect alike)."""
    return "object()" if type(value) is object else repr(value)


def _contract_cases():
    cases = []
    for name in CASES:
        est = _make(name)
        params = est.get_params(deep=False)
        if name in METHODS:
            accepted = set(METHODS[name][2]) | {"budget", "bounds", "neighbors", "random_state"}
        else:
            accepted = set(params)
        for param, constraint in declared_constraints(type(est)).items():
            if param not in accepted:
                continue
            for value in _bad_values(constraint):
                cases.append(pytest.param(name, param, value,
                                          id=f"{name}-{param}={_value_id(value)}"))
    return cases


CONTRACT_CASES = _contract_cases()


@pytest.fixture
def draws(monkeypatch):
    """Counts every random word any sampler of the library reads."""
    count = {"words": 0}
    original = RandomSource.words

    def counting(self, n):
        count["words"] += int(n)
        return original(self, n)

    monkeypatch.setattr(RandomSource, "words", counting)
    return count


def test_every_constructor_parameter_is_declared():
    for name in EXPORTED:
        cls = getattr(dpggm, name)
        taken = set(inspect.signature(cls).parameters)
        assert taken == set(declared_constraints(cls)), (name, taken ^ set(declared_constraints(cls)))


def test_the_draw_counter_counts(draws):
    X, _ = _data()
    _make("PrivateCovariance", random_state=None).fit(X)
    assert draws["words"] > 0


def test_every_declared_parameter_has_bad_value_cases():
    covered = {(c.values[0], c.values[1]) for c in CONTRACT_CASES}
    for name in EXPORTED:
        for param in declared_constraints(getattr(dpggm, name)):
            assert (name, param) in covered, (name, param)


@pytest.mark.parametrize(("name", "param", "value"), CONTRACT_CASES)
def test_bad_values_are_refused_with_a_value_error_before_any_draw(name, param, value, draws):
    X, y = _data()
    extra = {} if param == "random_state" or name in POST_PROCESSING else {"random_state": None}
    est = _make(name, **{**extra, param: value})
    with pytest.raises(ValueError) as caught:
        _fit(name, est, X, y)
    assert draws["words"] == 0
    assert param in str(caught.value), str(caught.value)


def test_pace_refuses_an_unknown_reconstruction_before_any_draw(draws):
    X, _ = _data()
    with pytest.raises(ValueError, match="reconstruction must be one of"):
        PACECovariance(budget=ZCDP(1.0), bounds=Box(1.0), reconstruction="bogus",
                       random_state=None).fit(X)
    assert draws["words"] == 0


def test_a_wrong_kind_of_bound_or_budget_is_a_value_error():
    X, _ = _data()
    with pytest.raises(ValueError, match="bounds must be Box"):
        PACECovariance(budget=ZCDP(1.0), bounds=RowNorm(1.0)).fit(X)
    with pytest.raises(ValueError, match=r"drop_fraction must be a number in \(0, 1\]"):
        NoisyGraphicalLasso(noise_sigma=0.0, drop_fraction="x").fit(X)
    with pytest.raises(ValueError, match="release"):
        GWishartGraph(release=3).fit(X)
    with pytest.raises(ValueError, match="budget"):
        PrivateCovariance(budget=PureDP(1.0), bounds="l2:1").fit(X)
    assert math.isfinite(1.0)


def test_a_bound_read_off_the_data_is_expected_data_dependent_before_the_fit():
    # The ledger's pre-check asks expected_validity(): it must agree with the record the
    # fit will write, so a bound read off the data is refused before any data are read.
    from dpggm import PrivateGraph, bounds_from_data

    X = np.random.default_rng(2).normal(size=(200, 3))
    bound = bounds_from_data(X, kind="l2")
    graph = PrivateGraph(budget=ZCDP(1.0), bounds=bound)
    validity, reason = graph.expected_validity()
    assert validity == "data-dependent", reason
    assert graph.fit(X).privacy_.validity == validity
