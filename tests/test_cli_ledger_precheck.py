"""Every run a ledger could not book is refused before the data file is opened: a notion
the release cannot be stated in, another neighbouring relation, an overspend, a release
that would not be valid -- the same check (the library's ``check_ledger``: the plan's
budget forms against the ledger) for ``dpggm graph`` and ``dpggm estimate``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm.cli import data_options
from dpggm.cli.main import app
from dpggm.data import records as data_records
from dpggm.privacy.ledger import Ledger

runner = CliRunner()


class DataOpened(BaseException):
    """Raised if a command opens the data (a BaseException: no handler swallows it)."""


@pytest.fixture
def untouchable(monkeypatch, tmp_path):
    """A data file whose opening is an error of the test."""
    path = tmp_path / "d.csv"
    pd.DataFrame(np.zeros((20, 4)), columns=list("abcd")).to_csv(path, index=False)

    def opened(*args, **kwargs):
        raise DataOpened("the data were opened")

    monkeypatch.setattr(data_options, "open_data", opened)
    monkeypatch.setattr(data_records, "open_records", opened)
    import dpggm.estimators.graph as graph_module

    monkeypatch.setattr(graph_module, "open_records", opened)
    return path


def _ledger(tmp_path, *total, neighbors="replace"):
    path = tmp_path / "ledger.db"
    result = runner.invoke(app, ["budget", "init", str(path), "--dataset", "d", *total,
                                 "--neighbors", neighbors])
    assert result.exit_code == 0, result.output
    return path


CASES = [
    # (ledger total, ledger relation, command and options, what the refusal names)
    (["--epsilon", "5"], "replace", ["graph", "--method", "pace", "--epsilon", "2"],
     "ledger cannot book"),
    (["--epsilon", "5"], "replace",
     ["estimate", "--method", "pace", "--epsilon", "1", "--bound", "box:1"],
     "ledger cannot book"),
    # Exact Gaussian noise under GDP(mu) delivers zCDP: a GDP ledger cannot take it.
    (["--mu", "2"], "replace", ["estimate", "--method", "ssp", "--mu", "1", "--bound", "l2:1"],
     "ledger cannot book"),
    (["--rho", "5"], "add-remove", ["graph", "--rho", "1"], "neighbours"),
    (["--rho", "5"], "replace",
     ["estimate", "--method", "ssp", "--rho", "1", "--bound", "l2:1", "--neighbors",
      "add-remove"], "neighbours"),
    (["--rho", "0.1"], "replace", ["graph", "--rho", "0.5"], "exceed"),
    (["--rho", "0.1"], "replace",
     ["estimate", "--method", "diagonal", "--rho", "0.5", "--bound", "box:1"], "exceed"),
    (["--rho", "5"], "replace",
     ["estimate", "--method", "wishart-pure", "--allow-invalid", "--epsilon", "1", "--bound",
      "l2:1"], "never booked"),
    (["--rho", "5"], "replace",
     ["estimate", "--method", "ssp", "--rho", "1", "--bound", "l2:1", "--seed", "3"],
     "never booked"),
    (["--rho", "5"], "replace", ["graph", "--rho", "1", "--seed", "3"], "never booked"),
]


@pytest.mark.parametrize("total, relation, command, refusal", CASES)
def test_mismatch_refused_before_the_data_are_opened(tmp_path, untouchable, total, relation,
                                                      command, refusal):
    ledger = _ledger(tmp_path, *total, neighbors=relation)
    name, *options = command
    result = runner.invoke(app, [name, str(untouchable), *options, "--ledger", str(ledger),
                                 "--dataset", "d", "--out", str(tmp_path / "o"), "--quiet"])
    assert not isinstance(result.exception, DataOpened), refusal
    assert result.exit_code == 2, result.output
    assert refusal in result.output, result.output
    assert Ledger(ledger, create=False).history("d") == []
    assert not (tmp_path / "o").exists()


def test_a_bookable_run_passes_the_check_and_is_booked(tmp_path):
    data = tmp_path / "d.csv"
    rng = np.random.default_rng(1)
    pd.DataFrame(rng.uniform(-0.5, 0.5, size=(500, 4)), columns=list("abcd")).to_csv(
        data, index=False)
    ledger = _ledger(tmp_path, "--epsilon", "5", "--delta", "1e-5")
    result = runner.invoke(app, ["estimate", str(data), "--method", "pace", "--epsilon", "1",
                                 "--delta", "1e-6", "--bound", "box:1", "--ledger", str(ledger),
                                 "--dataset", "d", "--out", str(tmp_path / "o"), "--quiet"])
    # PACE under (epsilon, delta) is refused: it runs only in zCDP (PureDP / GDP convert).
    assert result.exit_code == 2 and "budget" in result.output
    result = runner.invoke(app, ["estimate", str(data), "--method", "ssp", "--epsilon", "1",
                                 "--delta", "1e-6", "--bound", "l2:1", "--ledger", str(ledger),
                                 "--dataset", "d", "--out", str(tmp_path / "o"), "--quiet"])
    assert result.exit_code == 0, result.output
    (spend,) = Ledger(ledger, create=False).history("d")
    assert spend.budget.notion == "approx-dp"
