"""``dpggm plan``: the figures of a run, before any data are read."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm.cli.main import app
from dpggm.datasets import make_raw_chain

runner = CliRunner()


@pytest.mark.parametrize("budget, bound", [
    (["--rho", "0.7"], "auto"),
    (["--epsilon", "2", "--delta", "1e-6"], "auto"),
    (["--epsilon", "3"], "auto"),
    (["--rho", "1"], "box:60"),
])
def test_plan_equals_what_the_run_records(tmp_path, budget, bound):
    frame, _ = make_raw_chain(n_samples=3000, n_features=6, random_state=0)
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    planned = runner.invoke(app, ["plan", "--rows", "3000", "--columns", "6", *budget,
                                  "--bound", bound, "--json"])
    assert planned.exit_code == 0, planned.output
    plan = json.loads(planned.output)
    out = tmp_path / "g"
    run = runner.invoke(app, ["graph", str(data), *budget, "--bound", bound, "--seed", "1",
                              "--out", str(out), "--quiet"])
    assert run.exit_code == 0, run.output
    recorded = json.loads((out / "result.json").read_text())["privacy"]
    assert recorded["notes"]["plan"]["steps"] == plan["steps"]
    assert recorded["notes"]["plan"]["forms"] == plan["forms"]
    breakdown = recorded["noise"]["breakdown"]
    assert [s["budget"] for s in breakdown] == [s["budget"] for s in plan["steps"]]
    if bound != "auto":
        # Declared bounds fix the sensitivity: the plan states the noise itself.
        assert breakdown[-1]["sigma"] == plan["steps"][-1]["noise"]["sigma"]
        assert plan["detectable"]["partial_correlation"] is None
        assert "declared bounds" in plan["detectable"]["reason"]
    else:
        # What the plan predicts before the data is what the release states after it
        # (at the expected row-norm bound against the released one).
        before = plan["detectable"]["partial_correlation"]
        after = json.loads((out / "result.json").read_text())["inference"]["detectable"]
        assert after["partial_correlation"] == pytest.approx(before, rel=0.25)
        assert after["power"] == plan["detectable"]["power"] == 0.8


def test_plan_needs_no_data_and_refuses_bad_options():
    ok = runner.invoke(app, ["plan", "--rows", "20000", "--columns", "10", "--rho", "1"])
    assert ok.exit_code == 0 and "graph" in ok.output and "exactly: yes" in ok.output
    # Every method of dpggm estimate is planned too (it needs a declared bound).
    ridge = runner.invoke(app, ["plan", "--rows", "20000", "--columns", "10", "--rho", "1",
                                "--method", "ridge", "--bound", "l2:1"])
    assert ridge.exit_code == 0 and "RidgePrecision" in ridge.output, ridge.output
    auto = runner.invoke(app, ["plan", "--rows", "20000", "--columns", "10", "--rho", "1",
                               "--method", "ridge"])
    assert auto.exit_code == 2 and "--bound" in auto.output
    bad = runner.invoke(app, ["plan", "--rows", "20000", "--columns", "10", "--rho", "1",
                              "--method", "bogus"])
    assert bad.exit_code == 2 and "--method" in bad.output
    none = runner.invoke(app, ["plan", "--rows", "20", "--columns", "10"])
    assert none.exit_code == 2 and "exactly one budget" in none.output


def test_plan_states_the_detectable_partial_correlation():
    from dpggm import ZCDP, PrivateGraph

    def planned(*options):
        done = runner.invoke(app, ["plan", "--rows", "5000", "--columns", "30", *options])
        assert done.exit_code == 0, done.output
        return done.output

    text = " ".join(planned("--rho", "1").split())
    value = PrivateGraph(budget=ZCDP(1.0)).detectable(n_samples=5000, n_features=30)
    assert 0 < value < 0.2
    assert (f"detectable |partial correlation| (80 % power at FDR 0.1; normal columns, "
            f"sparse graph): {value:.3g}") in text
    record = json.loads(planned("--rho", "1", "--json"))["detectable"]
    figures = PrivateGraph(budget=ZCDP(1.0)).planned_inference(n_samples=5000, n_features=30)
    assert record == {"partial_correlation": value, "power": 0.8, "nothing_detectable": False,
                      "predicted": {"r2": 0.5,
                                    "partial_correlation": figures["detectable_predicted"]},
                      "withheld": False, "missing_share": 0.0}
    assert figures["detectable_predicted"] > value
    # A stricter FDR needs stronger edges; a smaller budget too, down to none at all.
    strict = json.loads(planned("--rho", "1", "--fdr", "0.01", "--json"))["detectable"]
    assert strict["partial_correlation"] > value
    starved = json.loads(planned("--rho", "0.006", "--json"))["detectable"]
    assert starved["partial_correlation"] is None and starved["nothing_detectable"]
    assert starved["withheld"]  # the plan's noise on a partial correlation is above 0.1
    assert "would be withheld" in " ".join(planned("--rho", "0.006").split())
    assert "none -- even 0.99" in " ".join(planned("--rho", "0.006").split())
    assert "not predicted (PACE-GGM" in " ".join(planned("--rho", "1", "--method",
                                                         "pace").split())
    bad = runner.invoke(app, ["plan", "--rows", "5000", "--columns", "30", "--rho", "1",
                              "--fdr", "1.5"])
    assert bad.exit_code == 2 and "--fdr must be in (0, 1)" in bad.output


@pytest.mark.parametrize("method, budget, bound, extra", [
    ("ssp", ["--rho", "0.5"], "l2:1", []),
    ("laplace", ["--epsilon", "2"], "l2:1", []),
    ("sulq", ["--epsilon", "0.8", "--delta", "1e-6"], "box:1", []),
    ("glasso", ["--mu", "1.2"], "l2:1", ["--command", "estimate"]),
    ("pace", ["--epsilon", "2"], "box:1", ["--command", "estimate"]),
    ("diagonal", ["--rho", "0.4"], "box:1", ["--neighbors", "add-remove"]),
    ("adaptive", ["--rho", "0.6"], "box:1", []),
])
def test_plan_of_an_estimate_run_equals_its_result_json(tmp_path, method, budget, bound, extra):
    rng = np.random.default_rng(0)
    data = tmp_path / "d.csv"
    pd.DataFrame(rng.uniform(-0.5, 0.5, size=(1500, 4)), columns=list("abcd")).to_csv(
        data, index=False)
    planned = runner.invoke(app, ["plan", "--rows", "1500", "--columns", "4", *budget,
                                  "--method", method, "--bound", bound, *extra, "--json"])
    assert planned.exit_code == 0, planned.output
    plan = json.loads(planned.output)
    neighbors = extra[1:2] if extra[:1] == ["--neighbors"] else []
    out = tmp_path / "o"
    run = runner.invoke(app, ["estimate", str(data), "--method", method, *budget, "--bound",
                              bound, *(["--neighbors", *neighbors] if neighbors else []),
                              "--out", str(out), "--quiet"])
    assert run.exit_code == 0, run.output
    recorded = json.loads((out / "result.json").read_text())["privacy"]
    assert recorded["notes"]["plan"]["steps"] == plan["steps"]
    assert recorded["notes"]["plan"]["forms"] == plan["forms"]
    breakdown = recorded["noise"]["breakdown"]
    assert [s["budget"] for s in breakdown] == [s["budget"] for s in plan["steps"]]
    for step, planned_step in zip(breakdown, plan["steps"]):
        for key, value in planned_step.get("noise", {}).items():
            assert step[key] == value, (planned_step["step"], key)
    assert recorded["budget"] in plan["forms"].values()


@pytest.mark.parametrize("options", [
    ["--rows", "2000", "--columns", "6", "--rho", "0.5"],
    ["--rows", "1000", "--columns", "5", "--epsilon", "1", "--delta", "1e-6", "--method",
     "ssp", "--bound", "l2:1"],
])
def test_the_plan_table_never_cuts_a_figure(options):
    # At the terminal width of CliRunner (80 columns) every figure is folded, not cut.
    result = runner.invoke(app, ["plan", *options])
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert "ρ = " in result.output or "ε = " in result.output


def test_plan_in_reverse_finds_the_budget_and_the_rows():
    from dpggm import ZCDP, PrivateGraph

    done = runner.invoke(app, ["plan", "--rows", "5000", "--columns", "30", "--detect", "0.1",
                               "--delta", "1e-6", "--json"])
    assert done.exit_code == 0, done.output
    record = json.loads(done.output)
    rho = record["rho"]
    # The budget round-trips: at rho the plan detects 0.1, at 0.99 rho it does not.
    # (2 000 rows of 30 columns cannot detect 0.1 at any budget: refused below.)
    assert PrivateGraph(budget=ZCDP(rho)).detectable(n_samples=5000, n_features=30) <= 0.1
    assert PrivateGraph(budget=ZCDP(0.99 * rho)).detectable(
        n_samples=5000, n_features=30) > 0.1
    assert record["epsilon"] == pytest.approx(ZCDP(rho).to_approx(1e-6).epsilon)
    text = " ".join(runner.invoke(app, ["plan", "--rows", "5000", "--columns", "30",
                                        "--detect", "0.1"]).output.split())
    assert f"zCDP rho = {rho:.4g}" in text
    rows = json.loads(runner.invoke(app, ["plan", "--columns", "30", "--rho", "1", "--detect",
                                          "0.1", "--json"]).output)["n_samples"]
    assert PrivateGraph(budget=ZCDP(1.0)).detectable(n_samples=rows, n_features=30) <= 0.1
    assert PrivateGraph(budget=ZCDP(1.0)).detectable(n_samples=rows - 1,
                                                     n_features=30) > 0.1
    assert f"{rows} rows" in " ".join(runner.invoke(app, [
        "plan", "--columns", "30", "--rho", "1", "--detect", "0.1"]).output.split())
    # Refusals name the option.
    for options, message in (
            (["--rows", "2000", "--rho", "1"], "not both"),
            ([], "needs --rows"),
            (["--rows", "2000", "--bound", "l2:1"], "--bound auto"),
    ):
        bad = runner.invoke(app, ["plan", "--columns", "30", "--detect", "0.1", *options])
        assert bad.exit_code == 2 and message in bad.output, bad.output
    bad = runner.invoke(app, ["plan", "--columns", "30", "--rows", "20", "--detect", "1.5"])
    assert bad.exit_code == 2 and "--detect must be" in bad.output
    bad = runner.invoke(app, ["plan", "--columns", "30", "--rows", "2000", "--detect", "0.1"])
    assert bad.exit_code == 2 and "more records are needed" in bad.output


def test_plan_with_a_declared_missing_share():
    from dpggm import ZCDP, PrivateGraph

    def detectable(*options):
        done = runner.invoke(app, ["plan", "--rows", "2400", "--columns", "25", "--rho", "0.5",
                                   *options, "--json"])
        assert done.exit_code == 0, done.output
        return json.loads(done.output)["detectable"]

    complete, holes = detectable(), detectable("--missing-share", "0.15")
    assert holes["missing_share"] == 0.15
    assert holes["partial_correlation"] > 1.05 * complete["partial_correlation"]
    assert holes["partial_correlation"] == PrivateGraph(
        budget=ZCDP(0.5), planned_missing_share=0.15).detectable(n_samples=2400, n_features=25)
    text = " ".join(runner.invoke(app, ["plan", "--rows", "2400", "--columns", "25", "--rho",
                                        "0.5", "--missing-share", "0.15"]).output.split())
    assert "15 % of every column's values missing" in text
    bad = runner.invoke(app, ["plan", "--rows", "20", "--columns", "5", "--rho", "1",
                              "--missing-share", "1"])
    assert bad.exit_code == 2 and "--missing-share" in bad.output
