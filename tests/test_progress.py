"""Progress of long work: the library reports through :mod:`dpggm.progress`; the command
line draws it on a terminal's standard error only, never into a pipe or a file."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console

from dpggm import progress
from dpggm.cli.common import progress_display
from dpggm.data.tables import TableFile, iter_chunks

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _collect():
    seen: list[tuple[str, float, float | None]] = []
    return seen, lambda task, done, total: seen.append((task, done, total))


def test_report_without_reporter_does_nothing_and_reporting_nests():
    progress.report("nobody listens", 1, 2)
    outer, inner = _collect(), _collect()
    with progress.reporting(outer[1]):
        progress.report("a", 1, 2)
        with progress.reporting(inner[1]):
            progress.report("b", 1, None)
        progress.report("c", 2, 2)
    progress.report("after", 1, 1)
    assert outer[0] == [("a", 1, 2), ("c", 2, 2)] and inner[0] == [("b", 1, None)]


def test_a_pass_over_a_csv_file_reports_its_bytes(tmp_path):
    path = tmp_path / "records.csv"
    pd.DataFrame(np.arange(6000.0).reshape(2000, 3), columns=["a", "b", "c"]).to_csv(
        path, index=False)
    seen, reporter = _collect()
    with progress.reporting(reporter):
        blocks = list(iter_chunks(TableFile(path, block_size=4096)))
    assert len(blocks) > 5
    done = [d for task, d, total in seen if task == "reading records.csv"]
    assert {total for *_, total in seen} == {path.stat().st_size}
    assert done == sorted(done) and done[-1] == path.stat().st_size and len(done) > 5


def test_the_experiment_runner_reports_repetitions():
    from dpggm.experiments.runner import ExperimentSpec, Part, run

    part = Part(name="toy", cell=lambda cell: [{"value": 1.0}], axes={"n": (1, 2, 3)},
                repetitions=2)
    seen, reporter = _collect()
    with progress.reporting(reporter):
        run(ExperimentSpec("toy", [part]), random_state=0)
    assert seen == [("toy: repetitions", k, 6) for k in range(1, 7)]


def test_pace_reports_the_share_of_the_budget_spent():
    from dpggm import ZCDP, Box, PACECovariance
    from dpggm.datasets import make_chain

    data = make_chain(n_samples=500, n_features=4, random_state=0).X / 4
    seen, reporter = _collect()
    with progress.reporting(reporter):
        PACECovariance(budget=ZCDP(1.0), bounds=Box(1.0), random_state=0).fit(data)
    spent = [done for task, done, total in seen if total == 1.0]
    assert spent and spent == sorted(spent) and all(0 < s <= 1.0 for s in spent)
    assert all(task.startswith("PACE") for task, *_ in seen)


def _terminal(buffer, *, terminal):
    return Console(file=buffer, force_terminal=terminal, width=80)


def test_display_draws_on_a_terminal_only_and_not_when_quiet():
    shown = io.StringIO()
    with progress_display(stream=_terminal(shown, terminal=True)) as active:
        progress.report("reading data.csv", 50, 100)
    assert active and "reading data.csv" in shown.getvalue()
    for quiet, terminal in ((False, False), (True, True)):
        silent = io.StringIO()
        seen, reporter = _collect()
        with progress.reporting(reporter):
            with progress_display(quiet=quiet, stream=_terminal(silent, terminal=terminal)) as active:
                progress.report("reading data.csv", 50, 100)
        assert not active and silent.getvalue() == ""
        assert seen == [("reading data.csv", 50, 100)]  # the caller's reporter is untouched


def _run(args, cwd, *, stderr_tty):
    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "100"}
    command = [sys.executable, "-m", "dpggm", *args]
    if not stderr_tty:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, timeout=300)
        return done.returncode, done.stdout, done.stderr
    leader, follower = pty.openpty()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    stdout = proc.stdout.read()
    proc.wait(timeout=300)
    os.close(leader)
    return proc.returncode, stdout, b"".join(chunks)


def test_graph_shows_progress_on_a_terminal_and_nothing_in_a_pipe(tmp_path):
    from dpggm.datasets import make_raw_chain

    frame, _ = make_raw_chain(n_samples=2000, n_features=4, random_state=0)
    frame.to_csv(tmp_path / "d.csv", index=False)
    base = ["graph", "d.csv", "--rho", "1", "--seed", "0", "--overwrite"]
    code, stdout, terminal = _run([*base, "--out", "a"], tmp_path, stderr_tty=True)
    assert code == 0
    assert b"reading d.csv" in terminal and b"private graph" in terminal
    assert b"reading" not in stdout
    code, stdout, piped = _run([*base, "--out", "b"], tmp_path, stderr_tty=False)
    assert code == 0
    assert b"reading" not in piped and b"\r" not in piped and b"\x1b[" not in piped
    assert b"curator only" in piped  # the curator's lines still come
    code, _, quiet = _run([*base, "--out", "c", "--quiet"], tmp_path, stderr_tty=True)
    assert code == 0 and b"reading d.csv" not in quiet
    for out in ("a", "b", "c"):
        for path in (tmp_path / out).iterdir():
            if path.suffix in (".json", ".csv", ".html"):
                assert "reading d.csv" not in path.read_text(encoding="utf-8")
