"""Every command and function that releases anything can be charged to a ledger, through
the same staged delivery (issue 29): ``dpggm publish``, ``publish_csv`` and
``publish_dask`` book their spend, and a publish the ledger cannot book is refused before
the records are read and before any file appears."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from dpggm import ZCDP
from dpggm.cli.main import app
from dpggm.exceptions import BudgetExceededError, InvalidGuaranteeError
from dpggm.experiments import publish_io
from dpggm.experiments.publish_io import publish_csv
from dpggm.io import STAGING_PREFIX
from dpggm.mechanisms import random as random_module
from dpggm.privacy.ledger import Ledger

runner = CliRunner()

#: Options that set a privacy budget or a noise level: a command with one of them draws
#: noise or describes it.
BUDGET_OPTIONS = {"--epsilon", "--rho", "--mu", "--sigma", "--snr-db", "--non-private"}

#: Every command without --ledger, and why it releases nothing about a user's records.
NOT_RELEASING = {
    "plan": "prints the plan of a release from public sizes; reads no records, draws nothing",
    "solve": "graphical lasso on a matrix the user gives: post-processing, no noise",
    "recover": "post-processing of a published release (--sigma describes its noise)",
    "report": "re-draws the report of an output directory: post-processing",
    "example-data": "writes made-up example records (a seeded generator, no user data)",
    "demo": "runs on synthetic and public data only (seeded)",
    "experiment": "the papers' experiments on generated data (seeded)",
    "audit": "tests the mechanisms on synthetic neighbouring data sets",
    "budget init": "declares a dataset's total; draws nothing",
    "budget show": "reads the ledger",
    "budget history": "reads the ledger",
    "budget migrate": "rewrites an old ledger's schema",
    "budget verify": "checks a ledger's hash chain and outputs' receipts",
}


def _commands():
    root = typer.main.get_command(app)

    def walk(command, prefix):
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            yield prefix, command
            return
        for name, sub in subcommands.items():
            yield from walk(sub, f"{prefix} {name}".strip())

    return dict(walk(root, ""))


def _options(command):
    return {o for p in command.params for o in getattr(p, "opts", []) if o.startswith("--")}


def test_every_releasing_command_takes_a_ledger():
    commands = _commands()
    assert {"graph", "estimate", "publish"} <= set(commands)
    for name, command in commands.items():
        options = _options(command)
        if name in NOT_RELEASING:
            assert "--ledger" not in options, f"{name} is listed as not releasing"
            continue
        # Not listed: it must be chargeable. A new command is either chargeable or listed
        # above with the reason it releases nothing about a user's records.
        assert {"--ledger", "--dataset"} <= options, (
            f"dpggm {name} lacks --ledger/--dataset; every command that releases noisy "
            "figures of the user's records must be chargeable")
    # Every command with a budget or noise option either books or is one of the few
    # listed that only describe a budget (checked below to draw nothing).
    describing = {name for name, command in commands.items()
                  if _options(command) & BUDGET_OPTIONS and "--ledger" not in _options(command)}
    assert describing == {"plan", "recover", "budget init"}, describing
    assert set(NOT_RELEASING) <= set(commands), set(NOT_RELEASING) - set(commands)


class Drew(BaseException):
    """Raised if a command that should draw nothing draws noise."""


def test_the_commands_that_only_describe_a_budget_draw_nothing(tmp_path, monkeypatch):
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(200, 3))
    pd.DataFrame(X, columns=list("abc")).to_csv(tmp_path / "noisy.csv", index=False)
    for name in ("words", "_uniform", "normal", "standard_normal", "laplace", "chisquare"):
        monkeypatch.setattr(random_module.RandomSource, name,
                            lambda *a, **k: (_ for _ in ()).throw(Drew("drew noise")))
    for args in (["plan", "--rho", "1", "--rows", "100", "--columns", "4", "--bound", "l2:1"],
                 ["recover", tmp_path / "noisy.csv", "--sigma", "0.1", "--alpha", "0.1",
                  "--out", tmp_path / "rec"],
                 ["budget", "init", tmp_path / "l.db", "--dataset", "d", "--rho", "1"]):
        result = runner.invoke(app, [str(a) for a in args])
        assert result.exit_code == 0, (args, result.output, result.exception)


# ------------------------------------------------------------------ dpggm publish


@pytest.fixture
def data(tmp_path):
    X = np.random.default_rng(1).uniform(-1, 1, size=(120, 3)) / 2
    path = tmp_path / "data.csv"
    pd.DataFrame(X, columns=["a", "b", "c"]).to_csv(path, index=False)
    return path


def _ledger(tmp_path, *total, neighbors="replace"):
    path = tmp_path / "ledger.db"
    result = runner.invoke(app, ["budget", "init", str(path), "--dataset", "d", *total,
                                 "--neighbors", neighbors])
    assert result.exit_code == 0, result.output
    return path


def _publish(data, out, ledger, *extra):
    return runner.invoke(app, ["publish", str(data), "--out", str(out), "--bound", "l2:1",
                               "--ledger", str(ledger), "--dataset", "d", *extra])


def _debris(directory):
    return [p.name for p in directory.iterdir() if p.name.startswith(STAGING_PREFIX)]


class RecordsRead(BaseException):
    """Raised if the records are read (a BaseException: no handler swallows it)."""


@pytest.fixture
def unreadable(monkeypatch):
    """Reading the records is an error of the test: refusals come before it."""
    def read(*args, **kwargs):
        raise RecordsRead("the records were read")

    monkeypatch.setattr(publish_io, "_read_csv", read)


def test_publish_books_its_spend_and_carries_the_receipt(tmp_path, data):
    ledger = _ledger(tmp_path, "--rho", "1")
    result = _publish(data, tmp_path / "noisy.csv", ledger, "--mu", "1")
    assert result.exit_code == 0, result.output
    words = " ".join(result.output.split())
    assert "charged ZCDP(rho=0.5) to 'd'" in words and "(spend #1)" in words
    (spend,) = Ledger(ledger, create=False).history("d")
    metadata = json.loads((tmp_path / "noisy.json").read_text())
    assert spend.budget == ZCDP(0.5)
    assert metadata["privacy"]["budget"] == {"notion": "zcdp", "rho": 0.5}
    assert metadata["ledger"]["output_id"] == spend.details["output_id"]
    assert metadata["ledger"]["spend"] == spend.sequence == 1
    assert len(pd.read_csv(tmp_path / "noisy.csv")) == 120
    assert not _debris(tmp_path)


def test_an_overspending_publish_is_refused_before_the_records_and_any_file(
        tmp_path, data, unreadable):
    ledger = _ledger(tmp_path, "--rho", "0.4")
    before = set(tmp_path.iterdir())
    result = _publish(data, tmp_path / "noisy.csv", ledger, "--mu", "1")
    assert result.exit_code == 2, result.output
    assert "exceed" in " ".join(result.output.split()), result.output
    assert set(tmp_path.iterdir()) == before
    assert Ledger(ledger, create=False).history("d") == []


@pytest.mark.parametrize("extra, words", [
    (["--mu", "1", "--seed", "3"], "experiment"),
    (["--snr-db", "20"], "snr_db"),
    # Refused once the records are read (they are not integers): still nothing written.
    (["--sigma", "2", "--discrete"], "discrete=True"),
])
def test_a_publish_the_ledger_cannot_book_is_refused_first(tmp_path, data, extra, words,
                                                            monkeypatch):
    ledger = _ledger(tmp_path, "--rho", "5")
    if words != "discrete=True":
        monkeypatch.setattr(publish_io, "_read_csv",
                            lambda *a, **k: (_ for _ in ()).throw(RecordsRead("read")))
    result = _publish(data, tmp_path / "noisy.csv", ledger, *extra)
    assert result.exit_code == 2 and words in result.output, result.output
    assert not (tmp_path / "noisy.csv").exists() and not (tmp_path / "noisy.json").exists()
    assert Ledger(ledger, create=False).history("d") == [] and not _debris(tmp_path)


def test_a_publish_under_another_relation_is_refused(tmp_path, data, unreadable):
    ledger = _ledger(tmp_path, "--rho", "5", neighbors="add-remove")
    result = _publish(data, tmp_path / "noisy.csv", ledger, "--mu", "1")
    assert result.exit_code == 2 and "neighbours" in result.output
    assert Ledger(ledger, create=False).history("d") == []


def test_publish_ledger_and_dataset_go_together(tmp_path, data):
    result = runner.invoke(app, ["publish", str(data), "--out", str(tmp_path / "n.csv"),
                                 "--bound", "l2:1", "--mu", "1", "--ledger",
                                 str(tmp_path / "l.db")])
    assert result.exit_code == 2 and "go together" in result.output
    result = _publish(data, tmp_path / "n.csv", tmp_path / "missing.db", "--mu", "1")
    assert result.exit_code == 2 and "budget init" in result.output
    assert not (tmp_path / "missing.db").exists()


# ------------------------------------------------------------------ the Python functions


def test_publish_csv_charges_a_ledger(tmp_path, data):
    book = Ledger(tmp_path / "l.db")
    book.declare("d", ZCDP(0.6))
    release = publish_csv(data, tmp_path / "n.csv", bounds="l2:1", mu=1.0, ledger=book,
                          dataset="d")
    (spend,) = book.history("d")
    assert spend.budget == release.privacy_.budget
    receipt = json.loads((tmp_path / "n.json").read_text())["ledger"]
    assert receipt["output_id"] == spend.details["output_id"]
    with pytest.raises(BudgetExceededError):
        publish_csv(data, tmp_path / "m.csv", bounds="l2:1", mu=1.0,
                    ledger=str(tmp_path / "l.db"), dataset="d")
    assert not (tmp_path / "m.csv").exists() and not _debris(tmp_path)
    with pytest.raises(InvalidGuaranteeError, match="experiment"):
        publish_csv(data, tmp_path / "m.csv", bounds="l2:1", mu=0.1, random_state=0,
                    ledger=book, dataset="d")
    with pytest.raises(ValueError, match="go together"):
        publish_csv(data, tmp_path / "m.csv", bounds="l2:1", mu=0.1, ledger=book)


def test_publish_dask_charges_a_ledger(tmp_path):
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame(np.random.default_rng(2).uniform(-0.5, 0.5, size=(60, 3)),
                         columns=["a", "b", "c"])
    from dpggm.experiments.publish_io import publish_dask

    book = Ledger(tmp_path / "l.db")
    book.declare("d", ZCDP(0.6))
    metadata = publish_dask(dd.from_pandas(frame, npartitions=3), tmp_path / "out",
                            bounds="l2:1", mu=1.0, ledger=book, dataset="d")
    (spend,) = book.history("d")
    receipt = json.loads((tmp_path / "out" / "_ledger.json").read_text())
    assert receipt["output_id"] == spend.details["output_id"] == metadata["ledger"]["output_id"]
    released = json.loads((tmp_path / "out" / "_release.json").read_text())
    assert released["ledger"] == receipt
    # The Parquet data set reads as before: the receipt is skipped by its readers.
    assert len(dd.read_parquet(str(tmp_path / "out")).compute()) == 60
    with pytest.raises(BudgetExceededError):
        publish_dask(dd.from_pandas(frame, npartitions=3), tmp_path / "again",
                     bounds="l2:1", mu=1.0, ledger=book, dataset="d")
    assert not (tmp_path / "again").exists() and not _debris(tmp_path)
    with pytest.raises(InvalidGuaranteeError, match="experiment"):
        publish_dask(dd.from_pandas(frame, npartitions=3), tmp_path / "seeded",
                     bounds="l2:1", mu=0.1, random_state=3, ledger=book, dataset="d")
