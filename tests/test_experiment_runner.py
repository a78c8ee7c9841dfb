"""The shared experiment engine: cells, failures, aggregation, output."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpggm.exceptions import NoSolutionError
from dpggm.experiments._common import (
    check_integers,
    check_positive_number,
    check_positive_numbers,
    repetition_rng,
    report_progress,
)
from dpggm.experiments.runner import Aggregation, ExperimentSpec, Part, attempt, run


def _toy_spec(*, calls: list, fail_at: tuple | None = None, figure=None) -> ExperimentSpec:
    def context(params):
        calls.append(("context", params["model"]))
        return {"scale": 10.0 * params["model"]}

    def cell(cell):
        calls.append(("cell", cell.params["model"], cell.params["n"], cell.repetition))
        if fail_at == (cell.params["model"], cell.params["n"], cell.repetition):
            raise NoSolutionError("no solution for this draw")
        draw = cell.rng("toy", cell.params["model"], cell.params["n"], cell.repetition)
        value = cell.context["scale"] + cell.params["n"] + draw.standard_normal()
        return [{"method": "a", "value": value}, {"method": "b", "value": 2 * value}]

    part = Part(
        name="toy",
        label="toy part",
        axes={"model": (1, 2), "n": (5, 7)},
        repetitions=3,
        context=context,
        context_axes=("model",),
        cell=cell,
        aggregation=Aggregation(by=["method", "model", "n"], metrics=["value"]),
    )
    figures = {} if figure is None else {"plot": figure}
    outputs = {"values": "toy_values.csv"} | ({"plot": "toy.png"} if figure is not None else {})
    return ExperimentSpec(
        "toy",
        [part],
        tables={"values": lambda r: r.parts["toy"].aggregated},
        figures=figures,
        outputs=outputs,
    )


def test_cells_run_in_axis_order_with_one_context_per_model_and_keyed_draws():
    calls: list = []
    seen = []
    results = run(_toy_spec(calls=calls), random_state=7, progress=lambda *a: seen.append(a))
    assert [c for c in calls if c[0] == "context"] == [("context", 1), ("context", 2)]
    cells = [c[1:] for c in calls if c[0] == "cell"]
    assert cells == [(m, n, r) for m in (1, 2) for n in (5, 7) for r in range(3)]
    assert seen == [(k, 12) for k in range(1, 13)]
    records = results.parts["toy"].records
    assert list(records.columns) == ["method", "value", "model", "n", "repetition"]
    # The value of a repetition is its own keyed draw: recompute one by hand.
    row = records[(records["model"] == 2) & (records["n"] == 7) & (records["repetition"] == 1)]
    expected = 20.0 + 7 + repetition_rng(7, "toy", 2, 7, 1).standard_normal()
    assert row["value"].tolist() == [expected, 2 * expected]
    table = results.tables["values"]
    first = records[(records["method"] == "a") & (records["model"] == 1) & (records["n"] == 5)]
    values = first["value"].to_numpy()
    got = table.iloc[0]
    assert (got["method"], got["model"], got["n"]) == ("a", 1, 5)
    assert got["value_mean"] == pytest.approx(values.mean())
    assert got["value_se"] == pytest.approx(values.std(ddof=1) / math.sqrt(3))
    assert list(results.tables) == ["values", "timing", "environment"]
    assert results.tables["timing"]["part"].tolist() == ["toy part"]


def test_a_repetition_without_a_solution_is_recorded_as_failed():
    calls: list = []
    results = run(_toy_spec(calls=calls, fail_at=(2, 5, 1)), random_state=0)
    table = results.tables["values"]
    failed = table[(table["model"] == 2) & (table["n"] == 5)]
    # The failed repetition has no method, so it forms its own group of one failure.
    assert failed["n_failed"].tolist() == [0, 0, 1]
    assert failed["n_reps"].tolist() == [2, 2, 1]
    assert table["n_failed"].sum() == 1
    records = results.parts["toy"].records
    assert records["failure"].dropna().tolist() == ["no solution for this draw"]


def test_other_errors_propagate():
    def cell(cell):
        raise ValueError("a bug, not a failed repetition")

    spec = ExperimentSpec("bad", [Part(name="p", axes={"x": (1,)}, cell=cell, repetitions=1)])
    with pytest.raises(ValueError, match="a bug"):
        run(spec)


def test_linked_axes_vary_together_and_arrange_reshapes_records():
    def cell(cell):
        return [{"y": cell.params["p"] * cell.params["sr"]}]

    part = Part(
        name="p",
        axes={("p", "sr"): [(10, 0.5), (20, 0.25)], "n": (1, 2)},
        cell=cell,
        repetitions=1,
        arrange=lambda records: pd.DataFrame(records).sort_values("n", kind="stable"),
        aggregation=Aggregation(by=["p", "n"], metrics=["y"], extra={"total": ("y", "sum")}),
    )
    results = run(ExperimentSpec("linked", [part]))
    table = results.parts["p"].aggregated
    assert table[["p", "n"]].values.tolist() == [[10, 1], [20, 1], [10, 2], [20, 2]]
    assert table["y_mean"].tolist() == [5.0] * 4
    assert table["total"].tolist() == [5.0] * 4


def test_outputs_are_checked_before_any_work_and_written_all_or_nothing(tmp_path):
    from matplotlib.figure import Figure

    def figure(results):
        fig = Figure()
        fig.subplots().plot([0, 1], [0, 1])
        return fig

    calls: list = []
    run(_toy_spec(calls=calls, figure=figure), out=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.png", "toy_environment.csv", "toy_values.csv"]
    assert (tmp_path / "toy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    written = pd.read_csv(tmp_path / "toy_values.csv")
    assert written.shape == (8, 7)  # (method, model, n) groups

    calls.clear()
    with pytest.raises(FileExistsError, match="toy_values.csv"):
        run(_toy_spec(calls=calls, figure=figure), out=tmp_path)
    assert calls == []  # refused before the first cell

    def broken(results):
        raise RuntimeError("figure failed")

    fresh = tmp_path / "fresh"
    with pytest.raises(RuntimeError, match="figure failed"):
        run(_toy_spec(calls=[], figure=broken), out=fresh)
    # Neither the table rendered before the figure nor the staging directory is left.
    assert list(fresh.iterdir()) == []

    before = (tmp_path / "toy_values.csv").read_bytes()
    run(_toy_spec(calls=[], figure=figure), random_state=1, out=tmp_path, overwrite=True)
    assert (tmp_path / "toy_values.csv").read_bytes() != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "toy.png", "toy_environment.csv", "toy_values.csv"]


def test_a_run_records_its_environment_and_wall_time_and_writes_them(tmp_path, monkeypatch):
    import platform
    import sys

    import numpy
    import scipy
    import sklearn

    import dpggm

    monkeypatch.setattr(sys, "argv", ["dpggm", "experiment", "toy", "--seed", "3"])
    results = run(_toy_spec(calls=[]), random_state=3, out=tmp_path)
    table = results.tables["environment"]
    assert list(table.columns) == ["key", "value"]
    info = dict(zip(table["key"], table["value"]))
    assert info["experiment"] == "toy" and info["random_state"] == "3"
    assert info["command"] == "dpggm experiment toy --seed 3"
    assert info["dpggm"] == dpggm.__version__
    assert info["numpy"] == numpy.__version__
    assert info["scipy"] == scipy.__version__
    assert info["scikit-learn"] == sklearn.__version__
    assert info["python"].endswith(platform.python_version())
    assert int(info["cpu_count"]) >= int(info["cpus_available"]) >= 1
    # wall_seconds is rounded to the millisecond, the cells' timings are not.
    assert float(info["wall_seconds"]) >= results.tables["timing"]["seconds"].sum() - 0.0005
    assert info["started_utc"].endswith("+00:00")
    written = pd.read_csv(tmp_path / "toy_environment.csv", dtype=str, keep_default_na=False)
    assert written.equals(table)
    # Like every output, an existing environment file stops the run before any work.
    (tmp_path / "toy_values.csv").unlink()
    calls: list = []
    with pytest.raises(FileExistsError, match="toy_environment.csv"):
        run(_toy_spec(calls=calls), out=tmp_path)
    assert calls == []


def test_a_part_needs_at_least_one_repetition():
    spec = ExperimentSpec("none", [Part(name="p", axes={"x": (1,)}, cell=lambda c: [],
                                        repetitions=0)])
    with pytest.raises(ValueError, match="repetitions of part 'p' must be an integer >= 1"):
        run(spec)


def test_outputs_must_name_a_table_or_figure():
    spec = ExperimentSpec(
        "typo",
        [Part(name="p", axes={"x": (1,)}, cell=lambda c: [{"y": 1.0}], repetitions=1)],
        outputs={"tabel": "x.csv"},
    )
    with pytest.raises(ValueError, match="tabel"):
        run(spec)


def test_the_progress_display_still_counts_keyed_draws():
    ticks = []
    with report_progress(lambda: ticks.append(1)):
        run(_toy_spec(calls=[]))
    assert len(ticks) == 12


def test_attempt_turns_no_solution_into_none_and_nothing_else():
    def no_solution():
        raise NoSolutionError("unbounded")

    def bad_input():
        raise ValueError("alpha must be > 0")

    assert attempt(no_solution) is None
    assert attempt(np.add, 1, 2) == 3
    with pytest.raises(ValueError, match="alpha"):
        attempt(bad_input)


@pytest.mark.parametrize("bad", [(), (0.0,), (1.0, -2.0), (True,), ("0.5",), (math.inf,), None])
def test_check_positive_numbers_rejects(bad):
    with pytest.raises(ValueError, match="epsilons must be a non-empty sequence of numbers > 0"):
        check_positive_numbers(bad, name="epsilons")


def test_check_positive_numbers_upper_bound_and_scalar_and_integer_checks():
    assert check_positive_numbers((1, np.float64(0.5)), name="x") == (1.0, 0.5)
    with pytest.raises(ValueError, match=r"sr must be .* and <= 1.0; got \(1.5,\)"):
        check_positive_numbers((1.5,), name="sr", upper=1.0)
    assert check_positive_number(2, name="alpha") == 2.0
    for bad in (0, -1.0, math.nan, False, "1"):
        with pytest.raises(ValueError, match="alpha must be a finite number > 0"):
            check_positive_number(bad, name="alpha")
    assert check_integers((2, np.int64(3)), name="sizes", minimum=2) == (2, 3)
    for bad in ((1,), (2.0,), (True,), ()):
        with pytest.raises(ValueError, match="sizes must be a non-empty sequence of integers >= 2"):
            check_integers(bad, name="sizes", minimum=2)


def test_the_source_is_the_revision_the_run_started_from_not_a_later_commit(monkeypatch):
    # A long run in a checkout where a commit lands while it runs (the same code, a new
    # HEAD): the run was made from the commit at its start.
    from dpggm.experiments import runner

    revisions = iter([runner.SourceRevision("aaaaaaa", "tree-1"),
                      runner.SourceRevision("bbbbbbb", "tree-1")])
    monkeypatch.setattr(runner, "source_revision", lambda: next(revisions))
    info = dict(run(_toy_spec(calls=[])).tables["environment"].values)
    assert info["source"] == "aaaaaaa"


@pytest.mark.parametrize(
    ("end", "expected"),
    [
        # A file edited (again) during the run: other content, whatever the commit.
        (("bbbbbbb", "content-2", False), "aaaaaaa (the package's source changed during the run)"),
        (("aaaaaaa", "content-2", True), "aaaaaaa (the package's source changed during the run)"),
        (("unknown",), "aaaaaaa (the package's source changed during the run)"),
        # A commit of the same content during the run: the code that ran is unchanged.
        (("bbbbbbb", "content-1", False), "aaaaaaa"),
    ],
)
def test_a_source_that_changed_during_the_run_is_labelled(monkeypatch, end, expected):
    from dpggm.experiments import runner

    monkeypatch.setattr(runner, "source_revision", lambda: runner.SourceRevision(*end))
    table = runner.environment_table("toy", random_state=0, started=0.0, seconds=1.0,
                                     source=runner.SourceRevision("aaaaaaa", "content-1"))
    assert dict(table.values)["source"] == expected


def _git(directory, *arguments):
    import subprocess

    return subprocess.run(["git", "-C", str(directory), "-c", "user.name=dpggm",
                           "-c", "user.email=dpggm@example.org", *arguments],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_the_source_digest_follows_the_files_on_disk_not_the_status_lines(tmp_path):
    from dpggm.experiments.runner import source_revision

    package = tmp_path / "src" / "toy"
    package.mkdir(parents=True)
    (package / "a.py").write_text("A = 1\n")
    (package / "b.py").write_text("B = 2\n")
    (tmp_path / ".gitignore").write_text("__pycache__/\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "first")
    committed = source_revision(package)
    assert committed.commit == _git(tmp_path, "rev-parse", "--short", "HEAD")
    assert not committed.changed and committed.label == committed.commit
    # The digest of a clean checkout is that of the files git committed (independently:
    # the blob ids of ls-tree).
    import hashlib

    digest = hashlib.sha256()
    for line in _git(package, "ls-tree", "-r", "HEAD", ".").splitlines():
        _mode, _kind, object_id, name = line.split(maxsplit=3)
        digest.update(f"{name}\0{object_id}\n".encode())
    assert committed.content == digest.hexdigest()
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "a.pyc").write_bytes(b"ignored")
    assert source_revision(package) == committed
    (package / "a.py").write_text("A = 10\n")
    edited = source_revision(package)
    status = _git(package, "status", "--porcelain", "--", ".")
    assert edited.changed and edited.label == committed.commit + " + changes"
    assert edited.content != committed.content
    # Edited again: git status prints the same line, the code is not the same.
    (package / "a.py").write_text("A = 100\n")
    edited_again = source_revision(package)
    assert _git(package, "status", "--porcelain", "--", ".") == status == "M src/toy/a.py"
    assert edited_again.content != edited.content
    # Committing it changes the commit, not the code.
    _git(tmp_path, "commit", "-q", "-am", "second")
    recommitted = source_revision(package)
    assert recommitted.content == edited_again.content and not recommitted.changed
    assert recommitted.commit != committed.commit
    # A new file counts until it is ignored; a deleted one counts too.
    (package / "c.py").write_text("C = 3\n")
    assert source_revision(package).content != recommitted.content
    (package / "c.py").unlink()
    (package / "b.py").unlink()
    assert source_revision(package).content != recommitted.content


def test_a_directory_outside_a_checkouts_head_is_unknown(tmp_path):
    from dpggm.experiments.runner import SourceRevision, source_revision

    assert source_revision(tmp_path) == SourceRevision("unknown")
    # An installed copy inside some other repository (a virtual environment in a project).
    (tmp_path / "README").write_text("project\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "README")
    _git(tmp_path, "commit", "-q", "-m", "project")
    installed = tmp_path / ".venv" / "site-packages" / "toy"
    installed.mkdir(parents=True)
    (installed / "a.py").write_text("A = 1\n")
    revision = source_revision(installed)
    assert revision == SourceRevision("unknown") and not revision.known


def test_uncommitted_changes_are_named_in_the_label():
    from dpggm.experiments.runner import SourceRevision

    assert SourceRevision("aaaaaaa", "c", True).label == "aaaaaaa + changes"
    assert SourceRevision("aaaaaaa", "c", False).label == "aaaaaaa"


def test_source_revision_names_this_checkout():
    import subprocess
    from pathlib import Path

    from dpggm.experiments import runner

    package = Path(runner.__file__).resolve().parents[1]
    revision = runner.source_revision()
    try:
        subprocess.run(["git", "-C", str(package), "rev-parse", "--verify", "--quiet",
                        "HEAD:./"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        # Imported from an installed copy, not from a checkout's HEAD: nothing to name.
        assert revision == runner.SourceRevision("unknown")
        return
    head = subprocess.run(["git", "-C", str(package), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert revision.commit == head and len(revision.content) == 64


def test_an_interrupt_while_files_are_moved_in_waits_until_all_are_in_place(tmp_path,
                                                                           monkeypatch):
    import os
    import signal

    from dpggm.experiments import runner

    run(_toy_spec(calls=[]), out=tmp_path)
    old = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    place = runner.place
    moved = []

    def place_then_interrupt(source, target, *, overwrite):
        place(source, target, overwrite=overwrite)
        moved.append(target.name)
        if len(moved) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C after the first file

    monkeypatch.setattr(runner, "place", place_then_interrupt)
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        run(_toy_spec(calls=[]), random_state=1, out=tmp_path, overwrite=True)
    # Every file is the new run's, none is left half-way, and the handler is restored.
    assert sorted(moved) == sorted(old)
    new = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert new.keys() == old.keys()
    assert all(new[name] != old[name] for name in ("toy_values.csv", "toy_environment.csv"))
    assert signal.getsignal(signal.SIGINT) is handler


def test_a_killed_run_s_staging_is_removed_by_the_next_run(tmp_path):
    """A run killed while it writes its files leaves its hidden staging directory; the next
    run into the same directory removes it (its process is gone) and leaves the staging of
    a run that is still going alone."""
    import subprocess
    import sys

    from dpggm.io import _owner_tag

    host = _owner_tag().split("-")[1]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        killed = tmp_path / f".toy.abc123.{gone.pid}-{host}.tmp"
        killed.mkdir()
        (killed / "toy_values.csv").write_text("half a file")
        live = tmp_path / f".toy.def456.{running.pid}-{host}.tmp"
        live.mkdir()
        other = tmp_path / f".toy_other.ghi789.{gone.pid}-{host}.tmp"
        other.mkdir()
        run(_toy_spec(calls=[]), out=tmp_path)
        hidden = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
        assert hidden == sorted([live.name, other.name])
        assert (tmp_path / "toy_values.csv").read_text() != "half a file"
    finally:
        running.kill()
        running.wait()
