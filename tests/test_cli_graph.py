"""``dpggm graph`` reads the files its own error messages describe (semicolon-separated,
decimal comma, an index column, no header, a subset of columns) and runs a non-private
reference; a mistyped path is answered before the estimators are imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dpggm.cli.main import app
from dpggm.datasets import make_raw_chain

runner = CliRunner()
SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def frame():
    data, _ = make_raw_chain(n_samples=1500, n_features=5, random_state=3)
    return data


def _graph(path, out, *options):
    result = runner.invoke(app, ["graph", str(path), "--rho", "1", "--seed", "4",
                                 "--out", str(out), "--quiet", *options])
    assert result.exit_code == 0, result.output
    record = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return record, np.load(out / "precision.npy")


@pytest.fixture(scope="module")
def reference(frame, tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    frame.to_csv(folder / "plain.csv", index=False)
    return _graph(folder / "plain.csv", folder / "g")


@pytest.mark.parametrize("layout", ["semicolon-decimal-comma", "indexed", "headerless",
                                    "tab-latin-1"])
def test_graph_reads_the_files_its_errors_describe(frame, reference, tmp_path, layout):
    path = tmp_path / "data.csv"
    if layout == "semicolon-decimal-comma":
        frame.to_csv(path, sep=";", decimal=",", index=False)
        options = ["--delimiter", ";", "--decimal", ","]
        plain = runner.invoke(app, ["graph", str(path), "--rho", "1", "--out",
                                    str(tmp_path / "refused")])
        # Without the options the file is refused with the advice the options follow.
        assert plain.exit_code == 2 and "--delimiter ';'" in plain.output
        assert "--decimal ," in plain.output
    elif layout == "indexed":
        frame.rename(index=lambda i: f"id{i}").to_csv(path)
        options = ["--index-col", "1"]
        plain = runner.invoke(app, ["graph", str(path), "--rho", "1", "--out",
                                    str(tmp_path / "refused")])
        assert plain.exit_code == 2 and "--index-col 1" in plain.output
    elif layout == "headerless":
        frame.to_csv(path, header=False, index=False)
        options = ["--no-header"]
        plain = runner.invoke(app, ["graph", str(path), "--rho", "1", "--out",
                                    str(tmp_path / "refused")])
        assert plain.exit_code == 2 and "--no-header" in plain.output
    else:
        renamed = frame.rename(columns={"x0": "température"})
        renamed.to_csv(path, sep="\t", index=False, encoding="latin-1")
        options = ["--delimiter", "\\t", "--encoding", "latin-1"]
        plain = runner.invoke(app, ["graph", str(path), "--rho", "1", "--out",
                                    str(tmp_path / "refused")])
        assert plain.exit_code == 2 and "--encoding latin-1" in plain.output
    assert not (tmp_path / "refused").exists()
    record, precision = _graph(path, tmp_path / "g", *options)
    expected_record, expected = reference
    # The same records, the same seed: the same release, whatever the file's layout.
    np.testing.assert_array_equal(precision, expected)
    names = {"headerless": [f"col{j + 1}" for j in range(5)],
             "tab-latin-1": ["température", "x1", "x2", "x3", "x4"]}.get(
                 layout, [f"x{j}" for j in range(5)])
    assert record["features"] == names
    assert record["privacy"] == expected_record["privacy"]


def test_graph_columns_option_selects_and_orders(frame, tmp_path):
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    record, precision = _graph(path, tmp_path / "g", "--columns", "x3, x1,x2")
    assert record["features"] == ["x3", "x1", "x2"] and precision.shape == (3, 3)
    missing = runner.invoke(app, ["graph", str(path), "--rho", "1", "--columns", "x1,nope",
                                  "--out", str(tmp_path / "h")])
    assert missing.exit_code == 2 and "nope" in missing.output


def test_graph_non_private_reference_run(frame, tmp_path):
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    result = runner.invoke(app, ["graph", str(path), "--non-private", "--out",
                                 str(tmp_path / "g")])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "g" / "result.json").read_text())
    assert record["privacy"]["validity"] == "none"
    assert record["privacy"]["budget"] == {"notion": "non-private"}
    assert "non-private reference run" in result.output
    page = (tmp_path / "g" / "report.html").read_text(encoding="utf-8")
    assert "found exactly from the data" in page and "chosen privately" not in page
    two = runner.invoke(app, ["graph", str(path), "--non-private", "--rho", "1"])
    assert two.exit_code == 2 and "exactly one budget" in two.output
    ledger = tmp_path / "l.db"
    assert runner.invoke(app, ["budget", "init", str(ledger), "--dataset", "d",
                               "--rho", "1"]).exit_code == 0
    booked = runner.invoke(app, ["graph", str(path), "--non-private", "--ledger", str(ledger),
                                 "--dataset", "d", "--out", str(tmp_path / "h")])
    assert booked.exit_code == 2 and "non-private" in booked.output
    assert not (tmp_path / "h").exists()


def test_graph_reading_options_are_checked_before_any_work(frame, tmp_path):
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    for options, words in ((["--decimal", ";"], "decimal must be"),
                           (["--delimiter", ";;"], "single character"),
                           (["--index-col", "0"], "numbers columns from 1")):
        result = runner.invoke(app, ["graph", str(path), "--rho", "1",
                                     "--out", str(tmp_path / "g"), *options])
        assert result.exit_code == 2 and words in result.output, result.output
        assert not (tmp_path / "g").exists()


def test_mistyped_path_is_answered_without_importing_the_estimators(tmp_path):
    probe = (
        "import sys, json\nfrom typer.testing import CliRunner\nfrom dpggm.cli.main import app\n"
        "r = CliRunner().invoke(app, ['graph', 'nosuch.csv', '--rho', '1'])\n"
        "assert r.exit_code == 2 and 'no such file' in r.output, r.output\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                          text=True, check=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": SRC})
    loaded = {name.split(".")[0] for name in json.loads(done.stdout.strip().splitlines()[-1])}
    assert not loaded & {"sklearn", "scipy", "pandas", "matplotlib", "numba"}


def test_graph_selects_by_fdr_by_default_and_by_threshold_by_name(frame, tmp_path):
    path = tmp_path / "raw.csv"
    frame.to_csv(path, index=False)
    fdr_record, _ = _graph(path, tmp_path / "fdr", "--fdr", "0.05", "--confidence-level", "0.8")
    threshold_record, _ = _graph(path, tmp_path / "threshold", "--select", "threshold")
    assert "q-value <= 0.05" in fdr_record["privacy"]["notes"]["selection"]
    assert threshold_record["privacy"]["notes"]["selection"].startswith("threshold")
    header = (tmp_path / "fdr" / "edges.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "source,target,weight,partial_correlation,ci_low,ci_high,p_value,q_value"
    plain = (tmp_path / "threshold" / "edges.csv").read_text(encoding="utf-8").splitlines()[0]
    assert plain.startswith("source,target,weight,partial_correlation")
    for option, value in (("--fdr", "0"), ("--fdr", "1"), ("--confidence-level", "1.5"),
                          ("--select", "top")):
        result = runner.invoke(app, ["graph", str(path), "--rho", "1", "--out",
                                     str(tmp_path / "bad"), option, value])
        assert result.exit_code != 0
        assert option in result.output and value in result.output
        assert not (tmp_path / "bad").exists()


def test_a_release_that_can_detect_nothing_reports_no_edge_and_says_why(tmp_path):
    data, _ = make_raw_chain(n_samples=2000, n_features=30, random_state=4)
    path = tmp_path / "starved.csv"
    data.to_csv(path, index=False)
    result = runner.invoke(app, ["graph", str(path), "--rho", "0.03", "--seed", "1",
                                 "--out", str(tmp_path / "o"), "--quiet"])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "o" / "result.json").read_text(encoding="utf-8"))
    assert record["inference"]["withheld"] is True
    assert record["inference"]["detectable"]["nothing_detectable"] is True
    assert (tmp_path / "o" / "edges.csv").read_text(encoding="utf-8").count("\n") == 1
    assert "the false-discovery control is not reliable, so no edge is reported" in " ".join(
        result.output.split())
    report = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "No edge is reported" in report
    # Which public figure decided it, in the record, the report and the curator's line.
    decided = record["inference"]["withheld_by"]
    assert "noise standard error of a partial correlation" in decided
    import html

    assert decided in " ".join(html.unescape(report).split())
    assert "WITHHELD by a public figure of the plan" in " ".join(result.output.split())
