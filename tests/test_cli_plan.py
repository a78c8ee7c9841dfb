"""``dpggm plan``: the figures of a run, before any data are read."""

from __future__ import annotations

import json

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


def test_plan_needs_no_data_and_refuses_bad_options():
    ok = runner.invoke(app, ["plan", "--rows", "20000", "--columns", "10", "--rho", "1"])
    assert ok.exit_code == 0 and "graph" in ok.output and "exactly: yes" in ok.output
    bad = runner.invoke(app, ["plan", "--rows", "20000", "--columns", "10", "--rho", "1",
                              "--method", "ridge"])
    assert bad.exit_code == 2 and "--method" in bad.output
    none = runner.invoke(app, ["plan", "--rows", "20", "--columns", "10"])
    assert none.exit_code == 2 and "exactly one budget" in none.output
