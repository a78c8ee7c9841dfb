"""PrivateGraph, private clipping ranges and ``dpggm graph``."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import PrivateGraph
from dpggm.cli.main import app
from dpggm.datasets import make_raw_chain
from dpggm.mechanisms.private_bounds import (
    QUANTILE_SCORE_SENSITIVITY,
    candidate_grid,
    norm_budget_needed,
    private_norm_bound,
    private_ranges,
    quantile_cell_scores,
    quantile_scores,
    range_budget_needed,
)
from dpggm.metrics.graph import support_f1
from dpggm.privacy.budgets import GDP, ZCDP, ApproxDP, PureDP, exact_cost
from dpggm.privacy.conversion import zcdp_rho_for

runner = CliRunner()


@pytest.fixture(scope="module")
def raw_chain():
    return make_raw_chain(n_samples=20000, n_features=10, random_state=3)


def _edges_adjacency(edges: pd.DataFrame, names: list[str]) -> np.ndarray:
    index = {n: i for i, n in enumerate(names)}
    adjacency = np.zeros((len(names), len(names)), dtype=bool)
    for a, b in zip(edges["source"], edges["target"]):
        adjacency[index[a], index[b]] = adjacency[index[b], index[a]] = True
    return adjacency


# -- private ranges ---------------------------------------------------------------------


def test_candidate_grid_is_public_sorted_and_symmetric():
    grid = candidate_grid(low_exponent=-2, high_exponent=3, per_octave=4)
    assert np.all(np.diff(grid) > 0)
    np.testing.assert_array_equal(grid, -grid[::-1])
    assert grid[grid > 0].min() == 0.25 and grid.max() == 8.0
    with pytest.raises(ValueError, match="low_exponent must be < high_exponent"):
        candidate_grid(low_exponent=3, high_exponent=3)


def test_quantile_score_sensitivity_holds_for_neighbours():
    # Score -|#{x < r} - q n| for every candidate, before and after replacing one record
    # (and adding one): it never moves by more than the stated sensitivity.
    rng = np.random.default_rng(0)
    grid = candidate_grid(low_exponent=-3, high_exponent=4, per_octave=8)
    for _ in range(50):
        x = rng.normal(size=30) * 3
        q = float(rng.uniform(0.01, 0.99))
        y = x.copy()
        y[rng.integers(30)] = rng.normal() * 10
        z = np.append(x, rng.normal() * 10)
        def score(v, q=q):
            return quantile_scores(np.sort(v), q, candidates=grid)
        def cells(v, q=q):
            return quantile_cell_scores(np.sort(v), q, edges=grid)
        for f in (score, cells):
            assert np.max(np.abs(f(x) - f(y))) <= QUANTILE_SCORE_SENSITIVITY
            assert np.max(np.abs(f(x) - f(z))) <= QUANTILE_SCORE_SENSITIVITY


def test_cell_scores_find_a_median_inside_one_cell():
    # A column at 300 +- 0.5 sits inside one cell of a coarse grid: every point of the grid
    # is n/2 ranks from the median, but the cell that holds it scores 0.
    x = np.sort(300 + np.random.default_rng(0).uniform(-0.5, 0.5, size=1001))
    grid = candidate_grid(per_octave=4)
    points = quantile_scores(x, 0.5, candidates=grid)
    assert np.all(points <= -500)
    cells = quantile_cell_scores(x, 0.5, edges=grid)
    best = np.flatnonzero(cells == 0)
    assert best.size == 1 and grid[best[0]] < 300 < grid[best[0] + 1]


def test_private_ranges_follow_each_column_scale(raw_chain):
    frame, _ = raw_chain
    X = frame.to_numpy()
    ranges = private_ranges(X, budget=ZCDP(0.125), rng=np.random.default_rng(1))
    lo, hi = np.quantile(X, [0.001, 0.999], axis=0)
    spread = X.std(axis=0)
    # The range covers the bulk of every column and is not much wider than it, although
    # the columns' means run from 3 to 300 and their scales from 0.5 to 20.
    assert np.all(ranges.lower < np.quantile(X, 0.05, axis=0))
    assert np.all(ranges.upper > np.quantile(X, 0.95, axis=0))
    assert np.all((ranges.upper - ranges.lower) < 2 * (hi - lo))
    assert np.all(ranges.half_width > spread)
    z, clipped = ranges.transform(X)
    assert np.all(np.abs(z) <= 1)
    assert 0 < clipped < X.shape[0] // 2


def test_private_ranges_epsilons_fit_the_budget():
    X = np.random.default_rng(0).normal(size=(500, 4))
    ranges = private_ranges(X, budget=ZCDP(0.3), rng=np.random.default_rng(0))
    spent = sum((Fraction(e) ** 2 / 8 * 4 for e in ranges.epsilons.values()), Fraction(0))
    assert spent <= Fraction(0.3)
    assert spent > Fraction(0.3) * Fraction(999, 1000)
    pure = private_ranges(X, budget=PureDP(1.2), rng=np.random.default_rng(0))
    assert sum(Fraction(e) * 4 for e in pure.epsilons.values()) <= Fraction(1.2)
    with pytest.raises(ValueError, match="width must be a finite number > 0"):
        private_ranges(X, budget=ZCDP(0.3), width=0, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="ZCDP, PureDP or ApproxDP"):
        private_ranges(X, budget=GDP(1.0), rng=np.random.default_rng(0))


def test_private_ranges_of_a_small_sample_at_the_needed_budget():
    # 178 records: at the budget range_budget_needed states, every column's range is
    # centered within one standard deviation of its median and 1 to 10 deviations wide,
    # in 19 of 20 runs or more; at a tenth of it, ranges go wrong.
    X = np.random.default_rng(5).lognormal(size=(178, 6)) * np.geomspace(0.01, 1e4, 6)
    need = range_budget_needed(n=178, p=6)
    sd, median = X.std(axis=0), np.median(X, axis=0)

    def good_runs(budget):
        good = 0
        for seed in range(20):
            r = private_ranges(X, budget=budget, rng=np.random.default_rng(seed))
            width = r.half_width / sd
            good += bool(np.all((np.abs(r.center - median) < sd) & (width > 0.5)
                                & (width < 10)))
        return good

    assert good_runs(need) >= 19
    assert good_runs(ZCDP(need.rho / 10)) <= 15


def test_budget_needs_fall_with_the_sample_size():
    small, large = range_budget_needed(n=200, p=10), range_budget_needed(n=20000, p=10)
    assert small.rho == pytest.approx(large.rho * 100 ** 2)
    # Twice the columns, a little more than twice the need: every stage aims at all of
    # them landing (a union bound, ln p more in each stage's confidence).
    ratio = range_budget_needed(n=200, p=20).rho / small.rho
    # (ln of the fewest candidates of a stage, 192, bounds the ratio's growth.)
    assert 2 < ratio < 2 * ((3 + math.log(20 * 192)) / (3 + math.log(10 * 192))) ** 2
    pure = range_budget_needed(n=200, p=10, notion=PureDP)
    assert pure.epsilon > 0
    assert norm_budget_needed(n=200, quantile=0.5).rho < norm_budget_needed(
        n=200, quantile=0.9).rho


def test_private_norm_bound_epsilon_fits_its_budget():
    z = np.random.default_rng(1).uniform(-1, 1, size=(300, 4))
    zcdp = private_norm_bound(z, cap=2.0, budget=ZCDP(0.05), quantile=0.5,
                              rng=np.random.default_rng(0))
    # epsilon-DP exponential mechanism is epsilon^2/8-zCDP: the largest such float.
    assert Fraction(zcdp.epsilon) ** 2 / 8 <= Fraction(0.05)
    assert zcdp.epsilon == pytest.approx((8 * 0.05) ** 0.5, rel=1e-12)
    pure = private_norm_bound(z, cap=2.0, budget=PureDP(0.7), quantile=0.5,
                              rng=np.random.default_rng(0))
    assert Fraction(pure.epsilon) <= Fraction(0.7) and pure.epsilon == pytest.approx(0.7)
    assert pure.to_dict()["score_sensitivity"] == 1.0


def test_private_norm_bound_stays_on_its_public_grid():
    z = np.random.default_rng(0).uniform(-1, 1, size=(2000, 9)) * 0.3
    norms = np.linalg.norm(z, axis=1)
    bound = private_norm_bound(z, cap=3.0, budget=ZCDP(0.05), quantile=0.5,
                               rng=np.random.default_rng(0))
    assert 0 < bound.bound <= 3.0
    assert abs(np.mean(norms < bound.bound) - 0.5) < 0.1
    with pytest.raises(ValueError, match="quantile must be a number in"):
        private_norm_bound(z, cap=3.0, budget=ZCDP(0.05), quantile=1.0,
                           rng=np.random.default_rng(0))


# -- PrivateGraph -------------------------------------------------------------------------


def test_private_graph_recovers_raw_chain_and_spends_exactly(raw_chain):
    frame, truth = raw_chain
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)
    assert support_f1(graph.adjacency_, truth) >= 0.8
    # The edge-list format keeps its first four columns and gains the inference's.
    assert list(graph.edges_.columns) == ["source", "target", "weight", "partial_correlation",
                                          "ci_low", "ci_high", "p_value", "q_value"]
    assert (graph.edges_["q_value"] <= 0.1).all()
    assert list(graph.inference_.columns) == ["source", "target", "partial_correlation",
                                              "ci_low", "ci_high", "p_value", "q_value",
                                              "selected"]
    assert len(graph.inference_) == 45 and graph.inference_["selected"].sum() == len(graph.edges_)
    assert list(graph.feature_names_in_) == list(frame.columns)
    assert graph.n_features_in_ == 10
    # The chain's partial correlations are -0.5; the estimate keeps their sign.
    assert (graph.edges_["partial_correlation"] < 0).all()
    steps = graph.privacy_.noise["breakdown"]
    assert [s["step"] for s in steps] == ["bounds", "norm bound", "missing counts", "mean",
                                          "second moment"]
    total = sum((exact_cost(s["budget"], ZCDP)[0] for s in steps), Fraction(0))
    assert total == Fraction(1)
    assert graph.privacy_.budget == ZCDP(1.0)
    assert graph.privacy_.notes["spent_exactly_total"] is True
    np.testing.assert_allclose(graph.precision_, graph.precision_.T)


def test_unseeded_private_graph_is_valid(raw_chain):
    frame, _ = raw_chain
    graph = PrivateGraph(budget=ZCDP(1.0), random_state="secure").fit(frame.iloc[:3000])
    assert graph.privacy_.validity == "valid"
    assert graph.privacy_.budget == ZCDP(1.0)


def test_graph_does_not_depend_on_column_units(raw_chain):
    # Grams next to milligrams: rescaling columns by factors from 1e-3 to 1e3 leaves the
    # graph to recover, and the partial correlations, the same.
    frame, truth = raw_chain
    rescaled = frame * np.geomspace(1e-3, 1e3, frame.shape[1])
    a = PrivateGraph(budget=ZCDP(1.0), random_state=7).fit(frame)
    b = PrivateGraph(budget=ZCDP(1.0), random_state=7).fit(rescaled)
    assert support_f1(a.adjacency_, truth) >= 0.8
    assert support_f1(b.adjacency_, truth) >= 0.8
    np.testing.assert_allclose(a.partial_correlation_, b.partial_correlation_, atol=0.05)


@pytest.mark.parametrize("budget, notion, steps_notion", [
    (ApproxDP(4.0, 1e-6), ApproxDP, ZCDP), (PureDP(4.0), PureDP, PureDP), (GDP(1.2), ZCDP, ZCDP),
])
def test_private_graph_other_budgets(raw_chain, budget, notion, steps_notion):
    frame, _ = raw_chain
    graph = PrivateGraph(budget=budget, random_state=0).fit(frame.iloc[:4000])
    assert isinstance(graph.privacy_.budget, notion)
    steps = graph.privacy_.noise["breakdown"]
    assert all(isinstance(s["budget"], steps_notion) for s in steps)
    # Every budget form: the steps add up to exactly the accounting total.
    assert graph.privacy_.notes["spent_exactly_total"] is True
    accounting = graph.plan_.accounting
    total = sum((exact_cost(s["budget"], steps_notion)[0] for s in steps), Fraction(0))
    assert total == exact_cost(accounting, steps_notion)[0]
    if isinstance(budget, ApproxDP):
        # The largest rho whose tight conversion implies (epsilon, delta), stated too.
        assert accounting == ZCDP(zcdp_rho_for(4.0, 1e-6))
        assert accounting in graph.privacy_.equivalent
        assert accounting.to_approx(1e-6).epsilon <= 4.0
    if isinstance(budget, GDP):
        assert graph.privacy_.notes["requested_budget"] == {"notion": "gdp", "mu": 1.2}
    if isinstance(budget, PureDP):
        assert ZCDP(8.0) in graph.privacy_.equivalent


def test_private_graph_with_pace_and_declared_bounds(raw_chain):
    frame, truth = raw_chain
    graph = PrivateGraph(budget=ZCDP(1.0), method="pace", random_state=0).fit(frame)
    assert support_f1(graph.adjacency_, truth) >= 0.8
    centered = (frame - frame.mean()) / frame.std()
    declared = PrivateGraph(budget=ZCDP(1.0), bounds="box:3", center="none",
                            random_state=0).fit(centered)
    assert declared.privacy_.bounds == {"kind": "box", "bound": 3.0, "data_derived": False}
    assert [s["step"] for s in declared.privacy_.noise["breakdown"]] == ["missing counts",
                                                                         "second moment"]


def test_pace_refuses_a_row_norm_bound_and_says_which():
    with pytest.raises(ValueError, match=r"bounds: method 'pace' needs a box bound .*got the "
                                         r"row-norm bound 'l2:2\.5'"):
        PrivateGraph(budget=ZCDP(1.0), method="pace", bounds="l2:2.5").check_params()


def test_private_graph_books_pace_as_its_planned_graph_step():
    frame, _ = make_raw_chain(n_samples=3000, n_features=5, random_state=1)
    graph = PrivateGraph(budget=ZCDP(1.0), method="pace", random_state=0).fit(frame)
    planned = {s.step: s.budget for s in graph.plan_.steps}
    steps = graph.privacy_.noise["breakdown"]
    assert [s["step"] for s in steps] == ["bounds", "mean", "second moment"] == list(planned)
    # The graph step is booked at what PACE-GGM delivered, which is the planned budget.
    assert steps[-1]["budget"] == graph.graph_estimator_.privacy_.budget == planned["second moment"]
    assert steps[-1]["rounds"] == graph.graph_estimator_.n_rounds_
    total = sum((exact_cost(s["budget"], ZCDP)[0] for s in steps), Fraction(0))
    assert total == Fraction(1)
    assert graph.privacy_.notes["spent_exactly_total"] is True


@pytest.mark.parametrize("params, message", [
    ({"method": "ridge"}, "method must be one of"),
    ({"center": "mean"}, "center must be one of 'private', 'none'"),
    ({"bound_fraction": 0.0}, "bound_fraction must be .auto. or a number in"),
        ({"range_width": 0}, "range_width must be"),
        ({"norm_quantile": 1.0}, "norm_quantile must be"),
    ({"bound_fraction": 0.6, "center_fraction": 0.5}, "must be < 1"),
    ({"alpha": "cv"}, "alpha must be 'auto' or a finite number >= 0"),
    ({"min_partial_correlation": 1.0}, "min_partial_correlation must be"),
    ({"min_partial_correlation": "high"}, "min_partial_correlation must be"),
    ({"center": [0.0, 1.0]}, "public mean vector of length 10"),
    ({"budget": None}, "budget is required"),
])
def test_private_graph_validation(raw_chain, params, message):
    frame, _ = raw_chain
    with pytest.raises(ValueError, match=message):
        PrivateGraph(**{"budget": ZCDP(1.0), **params}).fit(frame.iloc[:100])


# -- dpggm graph ------------------------------------------------------------------------


def test_cli_graph_on_raw_csv(tmp_path, raw_chain):
    frame, truth = raw_chain
    data = tmp_path / "raw.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "g"
    result = runner.invoke(app, ["graph", str(data), "--rho", "1", "--bound", "auto",
                                 "--out", str(out), "--seed", "5"])
    assert result.exit_code == 0, result.output
    # The pictures, each as PNG, SVG and PDF; intervals: the edges' intervals, drawn
    # whenever the edges come with them.
    pictures = [f"{stem}.{fmt}" for stem in ("graph", "intervals", "precision")
                for fmt in ("pdf", "png", "svg")]
    assert sorted(p.name for p in out.iterdir()) == sorted([
        "centrality.csv", "edges.csv", "precision.npy", "report.html", "result.json",
        *pictures])
    record = json.loads((out / "result.json").read_text())
    privacy = record["privacy"]
    assert privacy["budget"] == {"notion": "zcdp", "rho": 1.0}
    steps = privacy["noise"]["breakdown"]
    assert sum(Fraction(s["budget"]["rho"]) for s in steps) == 1
    assert "5" not in privacy["random_state"] and "seed" not in json.dumps(record["parameters"])
    edges = pd.read_csv(out / "edges.csv")
    assert list(edges.columns) == ["source", "target", "weight", "partial_correlation",
                                   "ci_low", "ci_high", "p_value", "q_value"]
    # No column contradicts the partial correlation's sign: weight is the same number.
    assert (edges["weight"] == edges["partial_correlation"]).all()
    assert support_f1(_edges_adjacency(edges, list(frame.columns)), truth) >= 0.8
    assert (out / "graph.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (out / "report.html").read_text()
    # The pictures (graph, the edges' intervals, heatmap), inline with their labels as text.
    assert html.count("<svg") == 3
    assert "https://" not in html and "<img" not in html
    # Curator diagnostics go to stderr only, never into the released files.
    for path in out.iterdir():
        if path.suffix in (".json", ".csv", ".html", ".svg"):
            assert "clipping" not in path.read_text()
    assert not list(tmp_path.glob(".g.*"))
    again = runner.invoke(app, ["graph", str(data), "--rho", "1", "--out", str(out)])
    assert again.exit_code == 2 and "exists" in again.output


def test_cli_graph_unseeded_is_valid_and_charges_ledger(tmp_path, raw_chain):
    frame, _ = raw_chain
    data = tmp_path / "raw.csv"
    frame.iloc[:3000].to_csv(data, index=False)
    ledger = tmp_path / "ledger.db"
    assert runner.invoke(app, ["budget", "init", str(ledger), "--dataset", "d",
                               "--rho", "1.5"]).exit_code == 0
    result = runner.invoke(app, ["graph", str(data), "--rho", "1", "--out",
                                 str(tmp_path / "g"), "--ledger", str(ledger),
                                 "--dataset", "d", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "g" / "result.json").read_text())
    assert record["privacy"]["validity"] == "valid"
    refused = runner.invoke(app, ["graph", str(data), "--rho", "1", "--out",
                                  str(tmp_path / "g2"), "--ledger", str(ledger),
                                  "--dataset", "d"])
    assert refused.exit_code == 2
    assert not (tmp_path / "g2").exists()


def test_cli_graph_errors(tmp_path):
    data = tmp_path / "d.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [2.0, 1.0, 0.0]}).to_csv(data, index=False)
    none = runner.invoke(app, ["graph", str(data), "--out", str(tmp_path / "o")])
    assert none.exit_code == 2 and "exactly one budget" in none.output
    bad = runner.invoke(app, ["graph", str(data), "--rho", "1", "--center", "nofile.csv",
                              "--out", str(tmp_path / "o")])
    assert bad.exit_code == 2 and "public mean" in bad.output
    assert not (tmp_path / "o").exists()


def test_demo_shows_a_graph():
    from dpggm.experiments.demo import demo_graph

    result = demo_graph(random_state=0)
    assert result["f1"] >= 0.8
    assert result["n_true_edges"] == 9
    assert len(result["graph"].edges_) >= 1


def test_cli_estimate_takes_center(tmp_path, raw_chain):
    frame, _ = raw_chain
    data = tmp_path / "raw.csv"
    (frame.iloc[:2000] - frame.mean()).to_csv(data, index=False)
    mean = tmp_path / "mean.csv"
    mean.write_text(",".join(["0"] * frame.shape[1]) + "\n")
    for center in ("private", str(mean)):
        out = tmp_path / f"e{len(center)}"
        result = runner.invoke(app, ["estimate", str(data), "--method", "glasso", "--rho", "1",
                                     "--bound", "box:60", "--center", center, "--seed", "0",
                                     "--out", str(out)])
        assert result.exit_code == 0, result.output
        notes = json.loads((out / "result.json").read_text())["privacy"]["notes"]
        assert ("private mean" in notes["centering"]) == (center == "private")


def test_private_graph_with_public_center(raw_chain):
    frame, truth = raw_chain
    # A public mean (here the generator's own means, known without looking at the data).
    center = np.geomspace(3.0, 300.0, frame.shape[1])
    graph = PrivateGraph(budget=ZCDP(1.0), center=center, random_state=0).fit(frame)
    assert [s["step"] for s in graph.privacy_.noise["breakdown"]] == [
        "bounds", "norm bound", "missing counts", "second moment"]
    assert graph.privacy_.notes["centering"] == "public mean"
    np.testing.assert_allclose(graph.ranges_.center, 0.0, atol=1e-12)
    assert support_f1(graph.adjacency_, truth) >= 0.8


def test_cli_solve_keeps_names(tmp_path):
    covariance = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]])
    with_header = tmp_path / "named.csv"
    with_header.write_text("a,b,c\n" + "\n".join(",".join(map(str, r)) for r in covariance))
    result = runner.invoke(app, ["solve", str(with_header), "--alpha", "0.01",
                                 "--out", str(tmp_path / "s1")])
    assert result.exit_code == 0, result.output
    edges = pd.read_csv(tmp_path / "s1" / "edges.csv")
    assert list(edges.columns) == ["source", "target", "weight", "partial_correlation"]
    assert set(edges["source"]) | set(edges["target"]) <= {"a", "b", "c"}
    assert json.loads((tmp_path / "s1" / "result.json").read_text())["features"] == ["a", "b", "c"]
    np.save(tmp_path / "m.npy", covariance)
    result = runner.invoke(app, ["solve", str(tmp_path / "m.npy"), "--alpha", "0.01",
                                 "--out", str(tmp_path / "s2")])
    record = json.loads((tmp_path / "s2" / "result.json").read_text())
    assert record["features"] == ["x0", "x1", "x2"]
    assert "carries no names" in record["feature_names"]


def test_a_binary_column_keeps_its_levels_inside_its_range():
    from dpggm.cli.graph import curator_diagnostics

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.normal(50, 10, 2000), "bmi": rng.normal(26, 4, 2000),
                          "sex": rng.integers(1, 3, 2000).astype(float)})
    graph = PrivateGraph(budget=ZCDP(10.0), random_state=0).fit(frame)
    counts = graph.clipping_
    assert counts["rows"] == 2000
    # Half the rows are shrunk onto the median norm, by design.
    assert 800 < counts["over_norm_bound"] < 1200
    # The spread leaves out the values tied with the center: the other level is inside
    # the range, not clipped onto it (a plain MAD of a 1/2 column is 0).
    assert counts["outside_by_column"]["sex"] == 0
    assert counts["tied_share_by_column"]["sex"] > 0.4
    assert counts["outside_by_column"]["age"] < 0.01 * 2000
    text = "\n".join(curator_diagnostics(graph))
    assert "column 'sex'" not in text and "column 'age'" not in text
    assert "shrunk onto the private row-norm bound" in text
    z_levels = np.unique(graph.ranges_.transform(frame.to_numpy())[0][:, 2])
    assert z_levels.size == 2
