"""Delivery never loses a charge: the process that owns a delivery is killed (SIGKILL) at
every step boundary of it -- for ``graph``, ``estimate`` and ``publish``, with and without
``--overwrite`` -- and after the next run's recovery every spend in the ledger has its
output and every output its spend (issue 29).

How each kill is made without repeating the fit for every step: the command runs once, in
a child process. At every step boundary (:func:`dpggm.io.delivery_step`) the process that
owns the delivery forks a continuer and kills itself with SIGKILL, so the file system is
left exactly as a kill there leaves it. The test then saves a copy of the directory, runs
the recovery every delivery begins with (:func:`dpggm.io.recover_pending`) and checks the
result, puts the saved copy back, and lets the continuer go on to the next boundary, where
it does the same. The pending record names the first process (dead from the first kill
on), as it would after a real crash.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import dpggm.io as dio
from dpggm.cli.main import app
from dpggm.io import STAGING_PREFIX, recover_pending
from dpggm.privacy.ledger import Ledger

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="needs fork and PR_SET_CHILD_SUBREAPER (Linux)")

# Rows of the data of a first, complete output (replaced with --overwrite) and of the runs
# that are killed: result.json / the metadata say which output a file set belongs to.
FIRST_ROWS, KILLED_ROWS = 150, 100
COMMANDS = {
    "graph": ["--rho", "2"],
    "estimate": ["--rho", "1", "--bound", "l2:1"],
    "publish": ["--mu", "1", "--bound", "l2:1"],
}
DIRECTORY_FILES = {
    "graph": {"result.json", "edges.csv", "report.html", "graph.png", "ledger.json"},
    "estimate": {"result.json", "covariance.npy", "noisy_covariance.npy", "ledger.json"},
}


@contextlib.contextmanager
def _subreaper():
    """Orphans (the continuers, once their parent is killed) become this process's
    children, so that each can be waited for: a dead owner is then truly gone."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        pytest.skip("PR_SET_CHILD_SUBREAPER is not available")
    try:
        yield
    finally:
        libc.prctl(36, 0, 0, 0, 0)


def _kill_at_every_step(args: list[str], directory: Path, check) -> tuple[list[str], int]:
    """Run ``dpggm *args`` in a child killed at every step boundary of its delivery (see
    the module documentation); ``check(step)`` runs after each kill. Returns the steps and
    the exit code of the run that finally completes.

    A boundary reached while another thread of the command is running (the parser of
    ``dpggm graph`` reads ahead while the output is being prepared) cannot be forked: the
    continuer would lack the thread. Such a boundary is killed in a run of its own, from
    the directory as it was at the start."""
    initial = directory.with_name(directory.name + "-initial")
    shutil.copytree(directory, initial, symlinks=True)
    report_r, report_w = os.pipe()
    go_r, go_w = os.pipe()
    with _subreaper():
        first = os.fork()
        if first == 0:  # pragma: no cover - the child
            os.close(report_r)
            os.close(go_w)
            reached = [0]

            def step(name):
                reached[0] += 1
                if threading.active_count() > 1:
                    os.write(report_w, f"alone {reached[0]} {name}\n".encode())
                    return
                continuer = os.fork()
                if continuer == 0:
                    if os.read(go_r, 1) != b"g":
                        os._exit(3)
                    return
                os.write(report_w, f"{continuer} {reached[0]} {name}\n".encode())
                os.kill(os.getpid(), signal.SIGKILL)

            _run_child(step, args, report_w)
        os.close(report_w)
        os.close(go_r)
        steps, alone, code, dying = [], [], None, first
        with os.fdopen(report_r, encoding="utf-8") as reports:
            for line in reports:
                word, index, name = line.rstrip("\n").split(" ", 2)
                if word == "done":
                    code = int(index)
                    break
                steps.append(name)
                if word == "alone":
                    alone.append((int(index), name))
                    continue
                _, status = os.waitpid(dying, 0)
                assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
                _check_and_restore(directory, check, name)
                dying = int(word)
                os.write(go_w, b"g")
        os.waitpid(dying, 0)
        os.close(go_w)
        final = directory.with_name(directory.name + "-final")
        os.rename(directory, final)
        for index, name in alone:
            shutil.copytree(initial, directory, symlinks=True)
            _, status = os.waitpid(_killed_at(index, args), 0)
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, name
            check(name)
            shutil.rmtree(directory)
        os.rename(final, directory)
    return steps, code


def _run_child(step, args, report) -> None:  # pragma: no cover - runs in a child
    code = 99
    try:
        dio.delivery_step = step
        code = CliRunner().invoke(app, args).exit_code
    finally:
        os.write(report, f"done {code} -\n".encode())
        os._exit(0)


def _killed_at(index: int, args: list[str]) -> int:
    """A child running ``dpggm *args`` that kills itself at its ``index``-th boundary."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        reached = [0]

        def step(name):
            reached[0] += 1
            if reached[0] == index:
                os.kill(os.getpid(), signal.SIGKILL)

        _run_child(step, args, os.open(os.devnull, os.O_WRONLY))
    return pid


def _check_and_restore(directory: Path, check, step: str) -> None:
    """``check(step)`` (which recovers ``directory``), then ``directory`` put back as the
    kill left it, for the continuer."""
    saved = directory.with_name(directory.name + "-saved")
    shutil.copytree(directory, saved, symlinks=True)
    try:
        check(step)
    finally:
        shutil.rmtree(directory)
        os.rename(saved, directory)


def _data(path: Path, rows: int) -> Path:
    X = np.random.default_rng(rows).uniform(-1, 1, size=(rows, 3)) / 2
    pd.DataFrame(X, columns=["a", "b", "c"]).to_csv(path, index=False)
    return path


def _args(command, data, out, ledger, overwrite):
    args = [command, str(data), "--out", str(out), *COMMANDS[command]]
    if ledger is not None:
        args += ["--ledger", str(ledger), "--dataset", "d"]
    return args + (["--overwrite"] if overwrite else [])


def _delivered(command: str, out: Path) -> tuple[dict | None, int | None]:
    """The receipt of the output at ``out`` and its number of records (None, None when
    absent); asserts the output is complete."""
    if command == "publish":
        metadata = out.with_suffix(".json")
        assert out.exists() == metadata.exists(), "a file of the pair without the other"
        if not out.exists():
            return None, None
        record = json.loads(metadata.read_text())
        rows = len(pd.read_csv(out))
        assert rows == record["n_samples"], "the CSV and its metadata are of two releases"
        return record.get("ledger"), rows
    if not out.exists():
        return None, None
    names = {p.name for p in out.iterdir()}
    assert not [n for n in names if n.startswith(".")], names
    expected = DIRECTORY_FILES[command] - ({"ledger.json"} if "ledger.json" not in names
                                            else set())
    assert expected <= names, names
    receipt = (json.loads((out / "ledger.json").read_text())
               if "ledger.json" in names else None)
    return receipt, json.loads((out / "result.json").read_text())["n_samples"]


@pytest.mark.parametrize("overwrite", [False, True], ids=["new", "overwrite"])
@pytest.mark.parametrize("command", ["graph", "estimate", "publish"])
def test_a_kill_at_any_step_of_a_delivery_loses_no_charge(tmp_path, command, overwrite):
    data, first_data = _data(tmp_path / "data.csv", KILLED_ROWS), _data(
        tmp_path / "first.csv", FIRST_ROWS)
    directory = tmp_path / "work"
    directory.mkdir()
    ledger = directory / "ledger.db"
    with Ledger(ledger) as book:
        book.declare("d", __import__("dpggm").ZCDP(100.0))
    out = directory / ("noisy.csv" if command == "publish" else "out")
    first_id = None
    if overwrite:
        done = CliRunner().invoke(app, _args(command, first_data, out, ledger, False))
        assert done.exit_code == 0, done.output
        first_id = _delivered(command, out)[0]["output_id"]

    def check(step):
        messages = []
        recover_pending(directory, report=messages.append)
        assert not [p.name for p in directory.iterdir() if p.name.startswith(STAGING_PREFIX)]
        spends = [s.details["output_id"] for s in Ledger(ledger, create=False).history("d")]
        receipt, rows = _delivered(command, out)
        where = f"killed after {step!r}: spends {spends}, output {receipt}, {messages}"
        if not overwrite:
            assert spends == ([] if receipt is None else [receipt["output_id"]]), where
            assert rows in (None, KILLED_ROWS), where
            return
        # The first output is replaced only by a complete, charged one.
        assert receipt is not None and spends[0] == first_id and len(spends) <= 2, where
        assert receipt["output_id"] == spends[-1], where
        assert rows == (FIRST_ROWS if len(spends) == 1 else KILLED_ROWS), where

    steps, code = _kill_at_every_step(_args(command, data, out, ledger, overwrite),
                                      directory, check)
    assert code == 0
    # Every boundary of the delivery was a kill: staged, charged, receipt, rename, cleanup.
    assert {"created", "wrote", "charged", "receipt written", "permissions",
            "pending removed"} <= set(steps), steps
    if command != "publish":
        assert "renamed" in steps
        assert ("old moved aside" in steps and "old removed" in steps) == overwrite
    else:
        assert steps.count("placed") == 2
    check("the end")
    receipt, _ = _delivered(command, out)
    assert receipt is not None and len(Ledger(ledger, create=False).history("d")) == 1 + overwrite


def test_an_interrupted_overwrite_without_a_ledger_keeps_the_old_output(tmp_path):
    data = _data(tmp_path / "data.csv", KILLED_ROWS)
    directory = tmp_path / "work"
    directory.mkdir()
    out = directory / "out"
    done = CliRunner().invoke(app, _args("estimate", _data(tmp_path / "first.csv", FIRST_ROWS),
                                         out, None, False))
    assert done.exit_code == 0, done.output

    def check(step):
        recover_pending(directory, report=lambda line: None)
        assert not [p.name for p in directory.iterdir() if p.name.startswith(STAGING_PREFIX)]
        # The old output or the new one, always complete; never none.
        assert _delivered("estimate", out)[1] in (FIRST_ROWS, KILLED_ROWS), step
        if step in ("created", "wrote", "permissions", "old moved aside"):
            assert _delivered("estimate", out)[1] == FIRST_ROWS, step

    steps, code = _kill_at_every_step(_args("estimate", data, out, None, True), directory,
                                      check)
    assert code == 0 and "old moved aside" in steps
    assert _delivered("estimate", out)[1] == KILLED_ROWS


def test_a_run_whose_ledger_cannot_be_read_is_left_not_removed(tmp_path):
    """An interrupted, ledger-charged run whose ledger is unreadable (edited, moved, a
    wrong key) may have been paid for: recovery leaves it and says why, rather than
    deleting what the ledger may count as spent."""
    directory = tmp_path / "work"
    directory.mkdir()
    ledger = directory / "ledger.db"
    ledger.write_bytes(b"not a ledger at all")
    staging = directory / f"{STAGING_PREFIX}out-{'a' * 32}"
    staging.mkdir()
    (staging / "result.json").write_text("{}")
    (staging / ".pending.json").write_text(json.dumps(
        {"target": "out", "output_id": "a" * 32, "overwrite": False,
         "ledger": str(ledger), "dataset": "d", "pid": 1, "host": "elsewhere"}))
    messages = []
    recover_pending(directory, report=messages.append)
    assert staging.is_dir() and (staging / "result.json").exists()
    assert any("may have been charged" in m and "cannot be read" in m for m in messages), \
        messages
    # Once the ledger reads and holds no such spend, the run was not charged: removed.
    ledger.unlink()
    with Ledger(ledger) as book:
        book.declare("d", __import__("dpggm").ZCDP(1.0))
    recover_pending(directory, report=messages.append)
    assert not staging.exists()
