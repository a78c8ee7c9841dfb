"""Declared public ranges of some columns (``PrivateGraph(column_ranges=...)``): used as
given, nothing spent on them, the private ranges' budget spent on the other columns."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import PrivateGraph
from dpggm.cli.main import app
from dpggm.datasets import make_questionnaire
from dpggm.mechanisms.random import RandomSource
from dpggm.privacy.budgets import ZCDP, ApproxDP, PureDP, exact_cost

runner = CliRunner()


@pytest.fixture(scope="module")
def items():
    frame, _ = make_questionnaire(n_samples=1200, n_factors=2, items_per_factor=4,
                                  random_state=1)
    return frame


@pytest.fixture
def draws(monkeypatch):
    count = {"words": 0}
    original = RandomSource.words

    def counting(self, n):
        count["words"] += int(n)
        return original(self, n)

    monkeypatch.setattr(RandomSource, "words", counting)
    return count


def _steps(plan):
    return {s.step: s for s in plan.steps}


def _total(plan):
    return sum((exact_cost(s.budget, type(plan.accounting))[0] for s in plan.steps),
               Fraction(0))


def test_declared_columns_keep_their_range_and_the_others_are_private(items):
    names = list(items.columns)
    declared = {names[0]: (1, 6), 3: (0.5, 6.5)}
    graph = PrivateGraph(budget=ZCDP(1.0), column_ranges=declared, random_state=0).fit(items)
    r = graph.ranges_
    assert (r.lower[0], r.upper[0]) == (1.0, 6.0)
    assert (r.lower[3], r.upper[3]) == (0.5, 6.5)
    np.testing.assert_array_equal(r.declared, [True, False, False, True] + [False] * 4)
    # Only the six undeclared columns are measured: 3 selections each.
    bounds = _steps(graph.plan_)["bounds"]
    assert bounds.repetitions == 3 * 6
    assert graph.plan_.notes["declared_ranges"] == 2
    assert graph.privacy_.notes["spent_exactly_total"]
    assert _total(graph.plan_) == Fraction(1)
    # The record names the declared ranges as given and what the others cost.
    record = graph.privacy_.to_dict()["bounds"]
    assert record["declared_ranges"] == {names[0]: [1.0, 6.0], "3": [0.5, 6.5]}
    assert record["ranges"]["declared"]["columns"] == [names[0], names[3]]
    assert record["ranges"]["private_columns"] == 6
    assert "declared ranges" in graph.privacy_.mechanism
    json.dumps(graph.privacy_.to_dict())


def test_the_private_ranges_budget_is_split_over_the_undeclared_columns_only(items):
    names = list(items.columns)
    base = PrivateGraph(budget=ZCDP(1.0), bound_fraction=0.25)
    part = PrivateGraph(budget=ZCDP(1.0), bound_fraction=0.25,
                        column_ranges={n: (1, 6) for n in names[:6]})
    full = _steps(base.plan(n_samples=1200, n_features=8))["bounds"]
    two = _steps(part.plan(n_samples=1200, n_features=8))["bounds"]
    # The same share of the total, over 2 columns instead of 8: each column's three
    # selections together cost four times as much rho.
    assert full.budget == two.budget

    def per_column(step):
        return sum(step.noise[f"epsilon_{k}"] ** 2 / 8 for k in ("median", "refine", "spread"))

    assert per_column(two) == pytest.approx(4 * per_column(full), rel=1e-6)
    assert 2 * per_column(two) <= two.budget.rho


def test_auto_bound_fraction_counts_only_undeclared_columns():
    # 200 columns at n = 2000: the private ranges of all of them need a large share; of
    # 10, a smaller one.
    names = {j: (0, 1) for j in range(190)}
    every = PrivateGraph(budget=ZCDP(1.0)).plan(n_samples=2000, n_features=200)
    few = PrivateGraph(budget=ZCDP(1.0), column_ranges=names).plan(n_samples=2000,
                                                                  n_features=200)
    assert Fraction(few.notes["bound_fraction"]) < Fraction(every.notes["bound_fraction"])
    assert _total(every) == _total(few) == Fraction(1)


@pytest.mark.parametrize("budget", [ZCDP(0.5), ApproxDP(1.0, 1e-6), PureDP(2.0)])
def test_every_range_declared_removes_the_range_step_and_its_share_goes_to_the_rest(
        items, budget):
    names = list(items.columns)
    declared = {n: (1, 6) for n in names}
    graph = PrivateGraph(budget=budget, column_ranges=declared, random_state=0).fit(items)
    steps = _steps(graph.plan_)
    assert "bounds" not in steps and "norm bound" in steps
    assert [s["step"] for s in graph.privacy_.noise["breakdown"]] == [
        s.step for s in graph.plan_.steps]
    assert graph.privacy_.notes["spent_exactly_total"]
    assert _total(graph.plan_) == exact_cost(graph.plan_.accounting,
                                             type(graph.plan_.accounting))[0]
    # The bound steps' share is the norm bound's alone, and the release gets the rest.
    some = {n: (1, 6) for n in names[:6]}
    undeclared = _steps(PrivateGraph(budget=budget, column_ranges=some).plan(
        n_samples=1200, n_features=8))
    notion = type(graph.plan_.accounting)
    norm = exact_cost(steps["norm bound"].budget, notion)[0]
    # (a dyadic share of the total, rounded down to the total's last binary digit)
    assert float(Fraction(graph.plan_.notes["bound_fraction"])) == pytest.approx(
        float(norm / exact_cost(graph.plan_.accounting, notion)[0]), rel=1e-12)
    assert exact_cost(steps["second moment"].budget, notion)[0] > exact_cost(
        undeclared["second moment"].budget, notion)[0]
    np.testing.assert_array_equal(graph.ranges_.lower, 1.0)
    np.testing.assert_array_equal(graph.ranges_.upper, 6.0)
    assert "private ranges" not in graph.privacy_.mechanism
    # Nothing outside a declared 1..6 scale is clipped by the ranges.
    assert graph.clipping_["outside_ranges"] == 0


def test_every_range_declared_without_a_norm_bound_has_no_bound_step(items):
    declared = {n: (1, 6) for n in items.columns}
    graph = PrivateGraph(budget=ZCDP(1.0), column_ranges=declared, norm_quantile=None,
                         random_state=0).fit(items)
    assert [s.step for s in graph.plan_.steps] == ["missing counts", "mean",
                                                      "second moment"]
    assert "bound_fraction" not in graph.plan_.notes and graph.bound_fraction_ is None
    assert graph.privacy_.notes["spent_exactly_total"]


def test_declared_ranges_are_in_raw_units_under_a_public_center(items):
    center = np.full(8, 3.5)
    graph = PrivateGraph(budget=ZCDP(1.0), center=center, column_ranges={2: (1, 6)},
                         random_state=0).fit(items)
    # Seen minus the center, and symmetric about it.
    assert (graph.ranges_.lower[2], graph.ranges_.upper[2]) == (-2.5, 2.5)


def test_declared_ranges_from_a_file_by_name(tmp_path, items):
    path = tmp_path / "items.csv"
    items.to_csv(path, index=False)
    name = items.columns[5]
    graph = PrivateGraph(budget=ZCDP(1.0), column_ranges={name: (1, 6)},
                         random_state=0).fit(str(path))
    assert (graph.ranges_.lower[5], graph.ranges_.upper[5]) == (1.0, 6.0)
    memory = PrivateGraph(budget=ZCDP(1.0), column_ranges={name: (1, 6)},
                          random_state=0).fit(items)
    np.testing.assert_array_equal(graph.ranges_.lower, memory.ranges_.lower)


def test_an_array_takes_positions_and_its_default_names():
    X = np.random.default_rng(0).normal(size=(800, 4))
    by_position = PrivateGraph(budget=ZCDP(1.0), column_ranges={1: (-4, 4)},
                               random_state=0).fit(X)
    by_name = PrivateGraph(budget=ZCDP(1.0), column_ranges={"x1": (-4, 4)},
                           random_state=0).fit(X)
    np.testing.assert_array_equal(by_position.ranges_.lower, by_name.ranges_.lower)
    assert by_position.ranges_.lower[1] == -4.0


@pytest.mark.parametrize(("column_ranges", "message"), [
    ({"nope": (1, 6)}, "column_ranges: no column named 'nope'"),
    ({9: (1, 6)}, "column_ranges: position 9 is beyond the 8 columns"),
    ({"f1_q1": (6, 1)}, r"column_ranges: the range of 'f1_q1' must have low < high; got \(6, 1\)"),
    ({"f1_q1": (1, float("nan"))}, "column_ranges: the range of 'f1_q1' must be finite"),
    ({"f1_q1": (1, 2, 3)}, "column_ranges: the range of 'f1_q1' must be a pair"),
    ({"f1_q1": ("1", 6)}, "column_ranges: the range of 'f1_q1' must be two numbers"),
    ({0: (1, 6), "f1_q1": (1, 6)}, "column_ranges: 0 and 'f1_q1' both declare the range"),
    ({1.5: (1, 6)}, "column_ranges: the key 1.5 must be a column name"),
    ({-2: (1, 6)}, r"column_ranges: the position -2 must be >= 0"),
    ([("f1_q1", (1, 6))], "column_ranges must be None or a mapping"),
])
def test_bad_column_ranges_are_refused_before_any_draw(items, draws, column_ranges, message):
    with pytest.raises(ValueError, match=message):
        PrivateGraph(budget=ZCDP(1.0), column_ranges=column_ranges,
                     random_state=None).fit(items)
    assert draws["words"] == 0


def test_column_ranges_go_with_private_bounds_only(items):
    with pytest.raises(ValueError, match="column_ranges: declared column ranges go with "
                                         "bounds='auto'"):
        PrivateGraph(budget=ZCDP(1.0), bounds="box:3", column_ranges={0: (1, 6)}).fit(items)
    # An empty mapping declares nothing.
    PrivateGraph(budget=ZCDP(1.0), bounds="box:3", column_ranges={}).check_params()


def test_the_plan_counts_declared_columns_and_refuses_too_many():
    plan = PrivateGraph(budget=ZCDP(1.0), column_ranges={0: (0, 1), 1: (0, 1)}).plan(
        n_samples=1000, n_features=5)
    assert _steps(plan)["bounds"].repetitions == 9
    with pytest.raises(ValueError, match="column_ranges: position 5 is beyond the 5"):
        PrivateGraph(budget=ZCDP(1.0), column_ranges={5: (0, 1)}).plan(n_samples=1000,
                                                                      n_features=5)


def test_cli_plan_takes_the_number_of_declared_ranges():
    result = runner.invoke(app, ["plan", "--rows", "1000", "--columns", "25", "--rho", "1",
                                 "--declared-ranges", "10", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    steps = {s["step"]: s for s in record["steps"]}
    assert steps["bounds"]["repetitions"] == 45
    assert record["notes"]["declared_ranges"] == 10
    every = runner.invoke(app, ["plan", "--rows", "1000", "--columns", "25", "--rho", "1",
                                "--declared-ranges", "25", "--json"])
    assert "bounds" not in {s["step"] for s in json.loads(every.output)["steps"]}
    text = " ".join(runner.invoke(app, ["plan", "--rows", "1000", "--columns", "25", "--rho",
                                        "1", "--declared-ranges", "10"]).output.split())
    kept = record["notes"]["tied_columns_keep_levels_from_untied_share"]
    assert (f"private ranges: a column keeps its levels apart when at least {100 * kept:.0f} % "
            "of its values lie off its most common one") in text
    too_many = runner.invoke(app, ["plan", "--rows", "1000", "--columns", "25", "--rho", "1",
                                   "--declared-ranges", "26"])
    assert too_many.exit_code != 0 and "more than the 25 columns" in too_many.output
    declared_bound = runner.invoke(app, ["plan", "--rows", "1000", "--columns", "25", "--rho",
                                         "1", "--bound", "box:1", "--declared-ranges", "2"])
    assert declared_bound.exit_code != 0 and "--bound auto" in declared_bound.output


def test_no_declared_range_changes_nothing(items):
    a = PrivateGraph(budget=ZCDP(1.0), random_state=3).fit(items)
    b = PrivateGraph(budget=ZCDP(1.0), column_ranges={}, random_state=3).fit(items)
    np.testing.assert_array_equal(a.ranges_.lower, b.ranges_.lower)
    np.testing.assert_array_equal(a.noisy_covariance_, b.noisy_covariance_)
    assert "declared" not in a.privacy_.to_dict()["bounds"]["ranges"]
    assert pd.Series(a.plan_.notes).get("declared_ranges") is None


def test_declared_ranges_through_dask_equal_memory():
    dd = pytest.importorskip("dask.dataframe")
    from dpggm.datasets import make_raw_chain

    X, _ = make_raw_chain(n_samples=4000, n_features=6, random_state=0)
    declared = {"x0": (-100, 100), 3: (0, 500)}
    memory = PrivateGraph(budget=ZCDP(1.0), column_ranges=declared, random_state=0).fit(X)
    lazy = PrivateGraph(budget=ZCDP(1.0), column_ranges=declared, random_state=0).fit(
        dd.from_pandas(X, npartitions=3))
    np.testing.assert_array_equal(memory.ranges_.lower, lazy.ranges_.lower)
    np.testing.assert_array_equal(memory.ranges_.upper, lazy.ranges_.upper)
    assert (memory.ranges_.lower[3], memory.ranges_.upper[3]) == (0.0, 500.0)
