"""``dpggm compare`` and ``dpggm plan --groups 2``: the released files, names neutralised
as in edges.csv, the ledger charged with the booked spend, refusals before the data; and a
small seeded statistical check of the comparison (planted differences found, equal
networks without selections)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import ZCDP
from dpggm.cli.main import app
from dpggm.datasets import make_group_networks
from dpggm.estimators.comparison import PrivateGraphComparison
from dpggm.privacy.ledger import Ledger

runner = CliRunner()


def _run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    data = make_group_networks(n_samples=(1200, 1200), n_features=6, chain=0.3,
                               n_differences=1, difference=0.4, random_state=4)
    frame = data.frame.copy()
    # A variable a spreadsheet would read as a formula.
    frame = frame.rename(columns={"x0": "=HYPERLINK(1)"})
    path = tmp_path_factory.mktemp("compare") / "groups.csv"
    frame.to_csv(path, index=False)
    return path, data


def _ledger(tmp_path, *total, neighbors="replace"):
    path = tmp_path / "ledger.db"
    result = _run("budget", "init", path, "--dataset", "d", *total, "--neighbors", neighbors)
    assert result.exit_code == 0, result.output
    return path


def test_compare_writes_every_file_and_charges_the_ledger(tmp_path, table):
    path, data = table
    ledger = _ledger(tmp_path, "--rho", "3")
    out = tmp_path / "out"
    result = _run("compare", path, "--group", "group", "--levels", "patients,controls",
                  "--rho", "1", "--out", out, "--ledger", ledger, "--dataset", "d")
    assert result.exit_code == 0, result.output
    names = {p.name for p in out.iterdir()}
    assert {"result.json", "differences.csv", "centrality.csv", "centrality_differences.csv",
            "edges_patients.csv", "edges_controls.csv", "report.html",
            "difference_graph.png", "difference_graph.svg", "centrality.svg"} <= names
    text = (out / "differences.csv").read_text(encoding="utf-8")
    assert text.splitlines()[0] == ("source,target,difference,ci_low,ci_high,p_value,"
                                    "q_value,selected")
    differences = pd.read_csv(out / "differences.csv")
    assert len(differences) == 15
    # The formula-like name is quoted in every CSV cell, never written bare.
    assert "'=HYPERLINK(1)" in set(differences.source) | set(differences.target)
    assert "\n=HYPERLINK" not in text and ",=HYPERLINK" not in text
    centrality = (out / "centrality.csv").read_text(encoding="utf-8")
    assert "'=HYPERLINK(1)" in centrality and ",=HYPERLINK" not in centrality
    record = json.loads((out / "result.json").read_text(encoding="utf-8"))
    assert record["levels"] == ["patients", "controls"]
    assert "random_state" not in record["parameters"] and "seed" not in json.dumps(
        record["parameters"])
    assert record["privacy"]["validity"] == "valid"
    assert record["privacy"]["notes"]["groups"]["cases"]["record moved to another group"] \
        == {"notion": "zcdp", "rho": 1.0}
    (spend,) = Ledger(ledger, create=False).history("d")
    assert spend.budget == ZCDP(1.0)
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "Where the networks differ" in report and "<svg" in report
    assert record["centrality"]["support"] == "familywise"
    assert "Holm" in report
    assert "staging" not in report


def test_compare_needs_declared_levels_and_refuses_a_small_group(tmp_path, table):
    path, _ = table
    result = _run("compare", path, "--group", "group", "--rho", "1", "--out",
                  tmp_path / "o")
    assert result.exit_code == 2 and "--levels is needed" in result.output
    assert not (tmp_path / "o").exists()
    result = _run("compare", path, "--group", "arm", "--levels", "patients,controls",
                  "--rho", "1", "--out", tmp_path / "o")
    assert result.exit_code == 2 and "no column named 'arm'" in result.output
    small = tmp_path / "small.csv"
    frame = pd.read_csv(path)
    frame = pd.concat([frame[frame.group == "patients"], frame[frame.group == "controls"][:5]])
    frame.to_csv(small, index=False)
    result = _run("compare", small, "--group", "group", "--levels", "patients,controls",
                  "--rho", "1", "--out", tmp_path / "o")
    assert result.exit_code == 2, result.output
    assert "fewer than 20 records" in " ".join(result.output.split())
    assert not (tmp_path / "o").exists()


def test_compare_refuses_an_overspend_before_the_data(tmp_path, table):
    path, _ = table
    ledger = _ledger(tmp_path, "--rho", "0.5")
    result = _run("compare", path, "--group", "group", "--levels", "patients,controls",
                  "--rho", "1", "--out", tmp_path / "o", "--ledger", ledger, "--dataset", "d")
    assert result.exit_code == 2
    assert Ledger(ledger, create=False).history("d") == []
    assert not (tmp_path / "o").exists()


def test_plan_groups_says_what_a_budget_detects():
    result = _run("plan", "--rows", "8000", "--columns", "15", "--groups", "2", "--detect",
                  "0.15", "--json")
    assert result.exit_code == 0, result.output
    needed = json.loads(result.output)["rho"]
    assert 0 < needed < 1
    # The budget found detects 0.15 and a tenth less does not.
    at = PrivateGraphComparison(budget=ZCDP(needed), levels=("a", "b"))
    assert at.detectable_difference(n_samples=8000, n_features=15) <= 0.15
    below = PrivateGraphComparison(budget=ZCDP(0.9 * needed), levels=("a", "b"))
    assert below.detectable_difference(n_samples=8000, n_features=15) > 0.15
    result = _run("plan", "--rows", "8000", "--columns", "15", "--groups", "2", "--rho", "1",
                  "--detect", "0.15")
    assert result.exit_code == 0, result.output
    words = " ".join(result.output.split())
    assert "record moved to another group: ZCDP(rho=1)" in words
    assert "a difference of 0.15 is detectable" in words
    result = _run("plan", "--rows", "8000", "--columns", "15", "--groups", "3", "--rho", "1")
    assert result.exit_code == 2 and "between two groups" in result.output


def test_planted_differences_are_found_and_equal_networks_give_none():
    # Seeded statistical check (2 x 3 000 records, 10 variables, rho = 1): both planted
    # differences of 0.35 selected with no false one, and with equal networks nothing
    # selected and the global test not rejecting.
    planted = make_group_networks(n_samples=(3000, 3000), n_features=10, chain=0.3,
                                  n_differences=2, difference=0.35, random_state=11)
    est = PrivateGraphComparison(budget=ZCDP(1.0), levels=planted.levels, group="group",
                                 random_state=12).fit(planted.frame)
    result = est.difference_inference_
    truth = planted.difference_matrix()[result.source, result.target]
    selected = np.asarray(result.selected, dtype=bool)
    assert selected[np.abs(truth) > 0].all()
    assert not selected[truth == 0].any()
    assert est.global_test_["p_value"] < 0.01
    # The intervals of the planted differences cover them.
    rows = np.abs(truth) > 0
    assert np.all((result.ci_low[rows] <= truth[rows]) & (truth[rows] <= result.ci_high[rows]))
    equal = make_group_networks(n_samples=(3000, 3000), n_features=10, chain=0.3,
                                n_differences=0, random_state=13)
    est = PrivateGraphComparison(budget=ZCDP(1.0), levels=equal.levels, group="group",
                                 random_state=14).fit(equal.frame)
    assert not est.difference_inference_.selected.any()
    assert est.global_test_["p_value"] > 0.05


def test_centrality_intervals_cover_in_a_small_cell():
    # Seeded calibration cell (6 comparisons of 2 x 2 500 records, 8 variables, a chain of
    # 0.3 and one difference of 0.35, rho = 1): the 90 % intervals of strength and
    # expected influence (Holm's support) cover the population values of most nodes, and
    # over the false-discovery selection the strength is biased upwards by false edges.
    covered, total = 0, 0
    for run in range(6):
        data = make_group_networks(n_samples=(2500, 2500), n_features=8, chain=0.3,
                                   n_differences=1, difference=0.35, random_state=40 + run)
        est = PrivateGraphComparison(budget=ZCDP(1.0), levels=data.levels, group="group",
                                     random_state=80 + run).fit(data.frame)
        for level in data.levels:
            rows = est.centrality_[est.centrality_["group"] == level]
            R = data.partial_correlations[level].copy()
            np.fill_diagonal(R, 0.0)
            for key, truth in (("strength", np.abs(R).sum(axis=1)),
                               ("expected_influence", R.sum(axis=1))):
                low = rows[f"{key}_ci_low"].to_numpy()
                high = rows[f"{key}_ci_high"].to_numpy()
                assert np.all(low <= rows[key].to_numpy()) and np.all(rows[key] <= high)
                covered += int(np.sum((low <= truth) & (truth <= high)))
                total += truth.size
    assert total == 6 * 2 * 2 * 8
    assert 0.8 <= covered / total <= 0.97
