"""Budgets outside what a release can deliver are refused before any random draw, with a
one-line error naming the budget's parameter and the range that works."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import GDP, ZCDP, ApproxDP, Box, PureDP, RowNorm
from dpggm.cli.main import app
from dpggm.estimators.baselines import AdaptiveCovariance, SeparateCovariance, SSPCovariance
from dpggm.estimators.covariance import PrivateCovariance
from dpggm.estimators.graph import PrivateGraph
from dpggm.estimators.pace import PACECovariance
from dpggm.estimators.precision import GraphicalLasso
from dpggm.exceptions import BudgetRangeError
from dpggm.mechanisms import random as random_module
from dpggm.mechanisms.additive import GaussianMechanism, LaplaceMechanism, exact_parameter_range

_RANGE = re.compile(r"(rho|epsilon|mu) must be in [\[(]([0-9.e+-]+), ([0-9.e+-]+)\]")


@pytest.fixture(scope="module")
def X():
    return np.clip(np.random.default_rng(0).normal(size=(400, 4)) / 3, -1, 1)


@pytest.fixture
def no_draws(monkeypatch):
    """Any random word drawn fails the test: the refusal comes first."""
    def refuse(self, count):
        raise AssertionError("a random word was drawn before the budget was checked")

    monkeypatch.setattr(random_module.RandomSource, "words", refuse)
    monkeypatch.setattr(random_module.RandomSource, "_uniform", refuse)


def _range(message):
    found = _RANGE.search(message)
    assert found, message
    return found.group(1), float(found.group(2)), float(found.group(3))


CASES = [
    ("PrivateCovariance", lambda b: PrivateCovariance(budget=b, bounds=RowNorm(1.0))),
    ("laplace", lambda b: PrivateCovariance(budget=b, bounds=RowNorm(1.0), mechanism="laplace")),
    ("add-remove", lambda b: PrivateCovariance(budget=b, bounds=RowNorm(1.0),
                                               neighbors="add-remove")),
    ("sulq", lambda b: PrivateCovariance(budget=b, bounds=RowNorm(1.0), mechanism="sulq")),
    ("GraphicalLasso", lambda b: GraphicalLasso(alpha=0.1, budget=b, bounds=RowNorm(1.0))),
    ("SSPCovariance", lambda b: SSPCovariance(budget=b, bounds=Box(1.0))),
    ("SeparateCovariance", lambda b: SeparateCovariance(budget=b, bounds=Box(1.0))),
    ("AdaptiveCovariance", lambda b: AdaptiveCovariance(budget=b, bounds=Box(1.0))),
    ("PACECovariance", lambda b: PACECovariance(budget=b, bounds=Box(1.0))),
    ("PrivateGraph", lambda b: PrivateGraph(budget=b)),
]
BUDGETS = {
    "PrivateCovariance": [ZCDP(1e-300), ZCDP(1e300), ZCDP(0.0), GDP(0.0), GDP(1e300),
                          ApproxDP(0.0, 1e-6), ApproxDP(1e300, 1e-6)],
    "laplace": [PureDP(0.0), PureDP(1e-300), PureDP(1e300)],
    "add-remove": [ZCDP(1e-300), ZCDP(0.0)],
    "sulq": [ApproxDP(0.0, 1e-6), ApproxDP(1e300, 1e-6)],
    "GraphicalLasso": [ZCDP(1e-300), ZCDP(1e300)],
    "SSPCovariance": [ZCDP(1e-300), ZCDP(1e300)],
    "SeparateCovariance": [ZCDP(1e-300), ZCDP(1e300)],
    "AdaptiveCovariance": [ZCDP(1e-300), ZCDP(1e300)],
    "PACECovariance": [ZCDP(1e-300), ZCDP(1e300), PureDP(1e300)],
    "PrivateGraph": [ZCDP(1e-300), ZCDP(1e300), PureDP(0.0), ZCDP(0.0), GDP(0.0),
                     ApproxDP(1e300, 1e-6)],
}


@pytest.mark.parametrize("name, make", CASES, ids=[c[0] for c in CASES])
def test_out_of_range_budgets_are_refused_before_any_draw(X, name, make, no_draws):
    for budget in BUDGETS[name]:
        with pytest.raises(BudgetRangeError) as caught:
            make(budget).set_params(random_state="secure").fit(X)
        message = str(caught.value)
        assert "\n" not in message and message.startswith("budget:"), message
        parameter = {"ZCDP": "rho", "GDP": "mu"}.get(type(budget).__name__, "epsilon")
        assert f"{parameter} " in message, message


@pytest.mark.parametrize("name, make", [c for c in CASES if c[0] != "PrivateGraph"],
                         ids=[c[0] for c in CASES if c[0] != "PrivateGraph"])
def test_the_stated_range_works(X, name, make):
    # Both ends of the range named for an out-of-range budget are accepted (and any value
    # between); values a little outside are refused.
    budget = BUDGETS[name][0]
    with pytest.raises(BudgetRangeError) as caught:
        make(budget).set_params(random_state=0).fit(X)
    parameter, low, high = _range(str(caught.value))
    low = low or 1e-300  # "(0, high]": any positive value
    kind = type(budget)
    build = (lambda v: ApproxDP(v, budget.delta)) if kind is ApproxDP else kind
    for value in (low * 1.001, math.sqrt(low * high), high * 0.999):
        make(build(value)).set_params(random_state=0).fit(X)
    for value in ((low / 4) if low > 1e-300 else 0.0, high * 4):
        with pytest.raises(BudgetRangeError):
            make(build(value)).set_params(random_state=0).fit(X)


def test_exact_parameter_range_matches_the_mechanisms_limits():
    # Independent check of the two limits on the mechanism itself: sigma / grid <= 2**48
    # at the low end, a statistic of 9 within 2**52 grid steps at the high end.
    low, high = exact_parameter_range(sensitivity=0.01, size=10, value_bound=9.0)
    inside = GaussianMechanism(sensitivity=0.01, size=10, budget=ZCDP(low * 1.01))
    assert inside.sigma / inside.grid <= 2.0**48
    below = GaussianMechanism(sensitivity=0.01, size=10, budget=ZCDP(low / 1.1))
    assert below.sigma / below.grid > 2.0**48
    top = GaussianMechanism(sensitivity=0.01, size=10, budget=ZCDP(high * 0.99))
    assert (9.0 + 12 * top.sigma) / top.grid < 2.0**52
    over = GaussianMechanism(sensitivity=0.01, size=10, budget=ZCDP(high * 1.1))
    assert (9.0 + 12 * over.sigma) / over.grid >= 2.0**52
    lap_low, _ = exact_parameter_range(sensitivity=0.05, size=10, laplace=True)
    mechanism = LaplaceMechanism(sensitivity=0.05, size=10, budget=PureDP(lap_low * 1.01))
    assert mechanism.scale / mechanism.grid <= 2.0**48


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "d.csv"
    X = np.random.default_rng(1).normal(size=(300, 4))
    pd.DataFrame(X, columns=list("abcd")).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("command", ["estimate", "graph"])
@pytest.mark.parametrize("budget, parameter", [
    (["--rho", "1e-300"], "rho"), (["--rho", "1e300"], "rho"), (["--epsilon", "0"], "epsilon"),
    (["--mu", "0"], "mu"), (["--epsilon", "1e300", "--delta", "1e-6"], "epsilon"),
])
def test_cli_names_the_budget_and_its_range(csv, tmp_path, command, budget, parameter):
    extra = ["--bound", "l2:3"] if command == "estimate" else []
    if command == "estimate" and budget == ["--epsilon", "0"]:
        extra += ["--method", "laplace"]
    result = CliRunner().invoke(app, [command, str(csv), *budget, *extra,
                                      "--out", str(tmp_path / "o")])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: budget:"), result.output
    assert f"{parameter} must be in" in result.output.replace("\n", " ")
    assert "Traceback" not in result.output and not (tmp_path / "o").exists()


@pytest.mark.parametrize("neighbors", ["replace", "add-remove"])
def test_diagonal_covariance_budget_range(X, neighbors, no_draws):
    from dpggm.estimators.baselines import DiagonalCovariance

    for rho in (1e-300, 1e300, 0.0):
        with pytest.raises(BudgetRangeError, match=r"budget: rho must be (in \[|> 0)"):
            DiagonalCovariance(budget=ZCDP(rho), bounds=Box(1.0), neighbors=neighbors,
                               random_state="secure").fit(X)


def test_publish_budget_range(X, no_draws):
    from dpggm.mechanisms.publish import publish

    for kwargs in ({"mu": 1e-300}, {"mu": 1e300}, {"epsilon": 1e300, "delta": 1e-6}):
        with pytest.raises(BudgetRangeError, match="budget: (mu|epsilon) must be in"):
            publish(X, bounds=RowNorm(1.0), random_state="secure", **kwargs)
    integers = (X * 10).astype(np.int64)
    with pytest.raises(BudgetRangeError, match="budget: mu must be at least"):
        publish(integers, bounds=RowNorm(20.0), mu=1e-300, discrete=True, random_state="secure")
