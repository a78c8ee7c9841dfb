"""What ``dpggm graph`` tells the curator, and what it refuses before reading the data:
advice that names the right cause, a summary instead of a line per column, releases that
would be pure noise, missing values, and ledgers that could not book the release."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import ZCDP, PrivateGraph
from dpggm.cli.graph import MAX_COLUMN_LINES, curator_diagnostics
from dpggm.cli.main import app
from dpggm.datasets import make_raw_chain

runner = CliRunner()


def test_values_beyond_the_grid_are_named_as_the_cause():
    frame, _ = make_raw_chain(n_samples=3000, n_features=4, random_state=0)
    frame["x1"] = frame["x1"] * 1e300
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)
    text = "\n".join(curator_diagnostics(graph))
    assert "column 'x1'" in text and "beyond the grid" in text
    assert "log" not in text


def test_a_tied_column_is_not_told_to_log_transform():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.normal(size=2000), "b": rng.normal(size=2000),
                          "flag": (rng.random(2000) < 0.2).astype(float)})
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=1).fit(frame)
    text = "\n".join(curator_diagnostics(graph))
    assert "log" not in text


def test_advice_is_capped_at_a_summary():
    rng = np.random.default_rng(2)
    # Heavy tails in every column: each would get a line.
    X = rng.standard_t(1.2, size=(400, 3 * MAX_COLUMN_LINES))
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=2).fit(X)
    lines = curator_diagnostics(graph)
    named = [line for line in lines if "column '" in line]
    assert len(named) <= MAX_COLUMN_LINES
    assert any("more columns like these" in line for line in lines)


def test_an_empty_graph_is_explained_by_a_number():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1000, 12))
    graph = PrivateGraph(budget=ZCDP(0.05), random_state=3).fit(X)
    assert graph.edges_.shape[0] == 0  # independent columns, small budget (seeded)
    text = " ".join(" ".join(curator_diagnostics(graph)).split())
    # The number is the release's own detectable_ (public figures only).
    if np.isfinite(graph.detectable_):
        assert (f"the graph is EMPTY: edges weaker than {graph.detectable_:.2g} "
                "(|partial correlation|) cannot be told from noise") in text
    else:
        assert ("the graph is EMPTY: no edge can be told from noise at this budget and "
                "size: even a partial correlation of 0.99 would be found less than 80 %") in text
    assert "a larger budget, more records or fewer columns" in text.lower()


def test_pure_noise_is_refused_before_anything_is_written(tmp_path):
    data = tmp_path / "wide.csv"
    wide = pd.DataFrame(np.random.default_rng(4).normal(size=(5, 2000)))
    wide.columns = [f"gene{j}" for j in range(2000)]
    wide.to_csv(data, index=False)
    out = tmp_path / "g"
    result = runner.invoke(app, ["graph", str(data), "--rho", "1", "--out", str(out)])
    assert result.exit_code == 2
    assert "pure noise" in result.output and "Traceback" not in result.output
    assert not out.exists() and not list(tmp_path.glob(".dpggm-staging-*"))


def test_missing_values_through_the_command_line(tmp_path):
    frame, _ = make_raw_chain(n_samples=3000, n_features=5, random_state=5)
    holed = frame.mask(np.random.default_rng(5).random(frame.shape) < 0.1)
    data = tmp_path / "holes.csv"
    holed.to_csv(data, index=False)
    ok = runner.invoke(app, ["graph", str(data), "--rho", "1", "--seed", "1", "--out",
                             str(tmp_path / "g"), "--quiet"])
    assert ok.exit_code == 0, ok.output
    record = json.loads((tmp_path / "g" / "result.json").read_text())
    assert record["privacy"]["notes"]["missing"].startswith("impute")
    assert "missing values:" in ok.output  # curator line, on stderr
    refused = runner.invoke(app, ["graph", str(data), "--rho", "1", "--missing", "refuse",
                                  "--out", str(tmp_path / "r")])
    assert refused.exit_code == 2 and "missing" in refused.output
    dropped = runner.invoke(app, ["graph", str(data), "--rho", "1", "--missing", "drop",
                                  "--out", str(tmp_path / "d")])
    assert dropped.exit_code == 2 and "replace-one" in dropped.output
    assert not (tmp_path / "r").exists() and not (tmp_path / "d").exists()


@pytest.mark.parametrize("total, asked, refused", [
    (["--epsilon", "5"], ["--method", "pace", "--epsilon", "2"], True),
    (["--rho", "5"], ["--epsilon", "1", "--delta", "1e-6"], False),
    (["--epsilon", "5", "--delta", "1e-5"], ["--epsilon", "1", "--delta", "1e-6"], False),
])
def test_the_ledger_is_checked_before_the_data_are_opened(tmp_path, total, asked, refused):
    ledger = tmp_path / "ledger.db"
    assert runner.invoke(app, ["budget", "init", str(ledger), "--dataset", "d",
                               *total]).exit_code == 0
    frame, _ = make_raw_chain(n_samples=2000, n_features=4, random_state=6)
    data = tmp_path / "d.csv"
    if refused:
        # A file that cannot be read: the refusal must come first.
        data.write_text("this is not a table\n")
    else:
        frame.to_csv(data, index=False)
    result = runner.invoke(app, ["graph", str(data), *asked, "--ledger", str(ledger),
                                 "--dataset", "d", "--out", str(tmp_path / "g"), "--quiet"])
    if refused:
        assert result.exit_code == 2
        assert "ledger cannot book" in result.output and "not a table" not in result.output
        return
    assert result.exit_code == 0, result.output
    history = runner.invoke(app, ["budget", "history", str(ledger), "--dataset", "d"])
    assert history.exit_code == 0 and "dpggm graph" in history.output
