"""The command line spends only for what it delivers, takes options as typed, and answers
every user error with one line."""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm.cli.main import app
from dpggm.io import STAGING_PREFIX, recover_pending
from dpggm.privacy.ledger import Ledger

runner = CliRunner()
SRC = str(Path(__file__).resolve().parents[1] / "src")


def invoke(*args):
    result = runner.invoke(app, [str(a) for a in args])
    # An exception that escaped the command would be a traceback for a user.
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{args}: {result.exception!r}\n{result.output}")
    assert "Traceback" not in result.output
    return result


@pytest.fixture
def csv(tmp_path):
    X = np.random.default_rng(0).uniform(-1, 1, size=(300, 4)) / 2
    path = tmp_path / "data.csv"
    pd.DataFrame(X, columns=["a", "b", "c", "d"]).to_csv(path, index=False)
    return path


def _ledger(tmp_path, *budget, neighbors="replace"):
    path = tmp_path / "ledger.db"
    result = invoke("budget", "init", path, "--dataset", "d", *budget, "--neighbors", neighbors)
    assert result.exit_code == 0, result.output
    return path


def _spends(path):
    return Ledger(path, create=False).history("d")


# ------------------------------------------------------------------ spend only what ran


def test_pure_dp_ledger_refuses_pace_whose_release_is_zcdp(csv, tmp_path):
    ledger = _ledger(tmp_path, "--epsilon", "5")
    result = invoke("estimate", csv, "--method", "pace", "--epsilon", "1", "--bound", "box:1",
                    "--out", tmp_path / "o", "--ledger", ledger, "--dataset", "d")
    assert result.exit_code == 2
    assert "ZCDP" in result.output and "PureDP" in result.output
    assert _spends(ledger) == []
    assert not (tmp_path / "o").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(STAGING_PREFIX)]


def test_invalid_method_is_never_booked(csv, tmp_path):
    ledger = _ledger(tmp_path, "--rho", "5")
    result = invoke("estimate", csv, "--method", "wishart-pure", "--allow-invalid",
                    "--epsilon", "1", "--bound", "l2:1", "--out", tmp_path / "o",
                    "--ledger", ledger, "--dataset", "d")
    assert result.exit_code == 2 and "never booked" in result.output
    assert _spends(ledger) == [] and not (tmp_path / "o").exists()


def test_zcdp_ledger_books_pace_at_exactly_what_it_guarantees(csv, tmp_path):
    ledger = _ledger(tmp_path, "--rho", "1")
    result = invoke("estimate", csv, "--method", "pace", "--rho", "0.25", "--bound", "box:1",
                    "--out", tmp_path / "o", "--ledger", ledger, "--dataset", "d")
    assert result.exit_code == 0, result.output
    (spend,) = _spends(ledger)
    assert spend.budget.to_dict() == {"notion": "zcdp", "rho": 0.25}
    assert spend.cost == (Fraction(1, 4),)
    record = json.loads((tmp_path / "o" / "ledger.json").read_text())
    assert record["spend"] == 1 and record["output_id"] == spend.details["output_id"]


def test_pure_dp_request_is_booked_as_the_zcdp_it_delivers(csv, tmp_path):
    ledger = _ledger(tmp_path, "--rho", "1")
    result = invoke("estimate", csv, "--method", "ssp-zcdp", "--epsilon", "1", "--bound", "box:1",
                    "--out", tmp_path / "o", "--ledger", ledger, "--dataset", "d")
    assert result.exit_code == 0, result.output
    (spend,) = _spends(ledger)
    delivered = json.loads((tmp_path / "o" / "result.json").read_text())["privacy"]["budget"]
    assert spend.budget.to_dict() == delivered and delivered["notion"] == "zcdp"


@pytest.mark.parametrize("declared, used", [("replace", "add-remove"), ("add-remove", "replace")])
def test_spends_under_another_relation_are_refused(csv, tmp_path, declared, used):
    ledger = _ledger(tmp_path, "--rho", "1", neighbors=declared)
    result = invoke("estimate", csv, "--rho", "0.1", "--bound", "l2:1", "--neighbors", used,
                    "--out", tmp_path / "o", "--ledger", ledger, "--dataset", "d")
    assert result.exit_code == 2 and "neighbours" in result.output
    assert _spends(ledger) == []


def test_seeded_run_is_an_experiment_and_never_booked(csv, tmp_path):
    ledger = _ledger(tmp_path, "--rho", "1")
    result = invoke("estimate", csv, "--rho", "0.1", "--bound", "l2:1", "--seed", "3",
                    "--out", tmp_path / "o", "--ledger", ledger, "--dataset", "d")
    assert result.exit_code == 2 and "experiment" in result.output
    assert _spends(ledger) == []


# ------------------------------------------------------------------ budget & output


def test_mistyped_ledger_path_creates_nothing(csv, tmp_path):
    missing = tmp_path / "ledgr.db"
    for args in (("estimate", csv, "--rho", "0.1", "--bound", "l2:1", "--out", tmp_path / "o",
                  "--ledger", missing, "--dataset", "d"),
                 ("budget", "show", missing), ("budget", "history", missing, "--dataset", "d")):
        result = invoke(*args)
        assert result.exit_code == 2 and "budget init" in result.output
        assert not missing.exists()


@pytest.mark.parametrize("kind", ["file", "proc", "unwritable"])
def test_unusable_out_is_refused_before_fit_and_spend(csv, tmp_path, kind):
    if kind == "unwritable" and os.geteuid() == 0:
        # root writes anywhere; a path whose parent is a file is unusable for everyone.
        kind = "parent-is-file"
    out = {"file": tmp_path / "taken", "proc": Path("/proc/dpggm-out"),
           "unwritable": tmp_path / "locked" / "o",
           "parent-is-file": tmp_path / "taken" / "o"}[kind]
    (tmp_path / "taken").write_text("x")
    (tmp_path / "locked").mkdir()
    os.chmod(tmp_path / "locked", 0o500)
    ledger = _ledger(tmp_path, "--rho", "1")
    try:
        result = invoke("estimate", csv, "--rho", "0.1", "--bound", "l2:1", "--out", out,
                        "--ledger", ledger, "--dataset", "d")
    finally:
        os.chmod(tmp_path / "locked", 0o700)
    assert result.exit_code == 2
    assert _spends(ledger) == []


def test_outputs_honour_the_umask(csv, tmp_path):
    old = os.umask(0o022)
    try:
        assert invoke("estimate", csv, "--rho", "0.1", "--bound", "l2:1",
                      "--out", tmp_path / "o").exit_code == 0
        assert invoke("example-data", tmp_path / "x.csv").exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "o").stat().st_mode) == 0o755
    for path in [*(tmp_path / "o").iterdir(), tmp_path / "x.csv"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


@pytest.mark.parametrize("method, option, name", [
    ("glasso", "--alpha", "alpha"), ("threshold", "--gamma", "gamma"),
    ("pace", "--diag-fraction", "diag_fraction"), ("pace", "--max-rounds", "max_rounds"),
])
def test_zero_is_passed_as_typed(csv, tmp_path, monkeypatch, method, option, name):
    import dpggm.estimators.registry as registry

    seen = {}
    real = registry.make_estimator

    def spy(method, **params):
        seen.update(params)
        return real(method, **params)

    monkeypatch.setattr(registry, "make_estimator", spy)
    bound = "box:1" if method == "pace" else "l2:1"
    result = invoke("estimate", csv, "--method", method, "--rho", "0.5", "--bound", bound,
                    option, "0", "--out", tmp_path / "o")
    assert seen[name] == 0 and seen[name] is not None
    if result.exit_code == 0:
        record = json.loads((tmp_path / "o" / "result.json").read_text())
        assert record["parameters"][name] == 0
    else:
        assert result.exit_code == 2 and name in result.output


def test_bound_file_conflicts_are_refused(csv, tmp_path):
    bounds = tmp_path / "b.csv"
    bounds.write_text("1,1,1,1\n")
    conflict = invoke("estimate", csv, "--rho", "0.1", "--bound", "l2:3", "--bound-file", bounds,
                      "--out", tmp_path / "o")
    assert conflict.exit_code == 2 and "--bound-file" in conflict.output
    other = invoke("estimate", csv, "--rho", "0.1", "--bound", "box:anything", "--bound-file",
                   bounds, "--out", tmp_path / "o")
    assert other.exit_code == 2 and "box:per-column" in other.output
    ok = invoke("estimate", csv, "--rho", "0.1", "--bound", "box:per-column", "--bound-file",
                bounds, "--out", tmp_path / "o")
    assert ok.exit_code == 0, ok.output
    record = json.loads((tmp_path / "o" / "result.json").read_text())
    assert "1.0" in json.dumps(record["privacy"]["bounds"])


# ------------------------------------------------------------------ no tracebacks


def _bad_inputs(tmp_path, csv):
    indefinite = tmp_path / "indefinite.npy"
    np.save(indefinite, np.array([[1.0, 2.0], [2.0, 1.0]]))
    folder = tmp_path / "folder"
    folder.mkdir()
    afile = tmp_path / "afile"
    afile.write_text("x")
    ledger = tmp_path / "l.db"
    return [
        ("budget", "init", ledger, "--dataset", "d", "--rho", "-1"),
        ("budget", "init", ledger, "--dataset", "d", "--epsilon", "1", "--delta", "1"),
        ("budget", "init", ledger, "--dataset", "d", "--epsilon", "nan"),
        ("budget", "init", folder, "--dataset", "d", "--rho", "1"),
        ("budget", "init", afile, "--dataset", "d", "--rho", "1"),
        ("budget", "show", afile),
        ("budget", "show", folder),
        ("budget", "history", afile, "--dataset", "d"),
        ("budget", "migrate", afile, "--neighbors", "replace"),
        ("solve", indefinite, "--alpha", "0.1", "--out", tmp_path / "s"),
        ("solve", folder, "--alpha", "0.1", "--out", tmp_path / "s"),
        ("solve", afile, "--alpha", "0.1", "--out", tmp_path / "s"),
        ("solve", indefinite, "--alpha", "-1", "--out", tmp_path / "s"),
        ("estimate", folder, "--rho", "1", "--bound", "l2:1"),
        ("estimate", tmp_path / "missing.csv", "--rho", "1", "--bound", "l2:1"),
        ("estimate", afile, "--rho", "1", "--bound", "l2:1", "--out", tmp_path / "e"),
        ("estimate", csv, "--rho", "1", "--bound", "l2:1", "--out", afile),
        ("estimate", csv, "--rho", "1", "--bound", "l2:1", "--out", "/proc/x"),
        ("estimate", csv, "--rho", "1", "--bound", "l2:1", "--seed", "abc"),
        ("estimate", csv, "--rho", "1", "--bound", "l2:1", "--seed", "-4"),
        ("estimate", csv, "--rho", "1", "--bound", "l2:abc"),
        ("estimate", csv, "--rho", "1", "--bound", "cube:1"),
        ("estimate", csv, "--rho", "-1", "--bound", "l2:1"),
        ("estimate", csv, "--epsilon", "1", "--delta", "1", "--bound", "l2:1"),
        ("estimate", csv, "--rho", "1", "--bound", "l2:1", "--method", "nope"),
        ("estimate", csv, "--rho", "1", "--bound", "l2:1", "--neighbors", "swap"),
        ("estimate", csv, "--rho", "1", "--bound", "l2:1", "--alpha", "abc", "--method", "glasso"),
        ("estimate", csv, "--rho", "1", "--bound", "l2:1", "--ledger", afile, "--dataset", "d"),
        ("estimate", csv, "--rho", "1", "--bound", "box:per-column", "--bound-file", folder),
        ("estimate", csv, "--rho", "1", "--bound", "box:per-column", "--bound-file", afile),
        ("estimate", csv, "--rho", "1", "--bound", "box:per-column"),
        ("publish", csv, "--bound", "l2:1", "--mu", "1", "--out", "/proc/noisy.csv"),
        ("publish", csv, "--bound", "l2:1", "--mu", "1", "--out", afile / "noisy.csv"),
        ("publish", csv, "--bound", "l2:1", "--mu", "1", "--out", folder),
        ("publish", folder, "--bound", "l2:1", "--mu", "1", "--out", tmp_path / "n.csv"),
        ("publish", csv, "--bound", "l2:1", "--mu", "1", "--seed", "abc", "--out", tmp_path / "n.csv"),
        ("recover", csv, "--alpha", "abc"),
        ("recover", folder),
        ("recover", tmp_path / "missing.csv"),
        ("experiment", "seed999"),
        ("experiment", "covariance_perturbation", "--out", afile),
        ("experiment", "covariance_perturbation", "--repetitions", "0"),
        ("example-data", folder),
        ("example-data", tmp_path / "x.csv", "--rows", "1"),
    ]


def test_no_command_answers_bad_input_with_a_traceback(tmp_path, csv):
    for args in _bad_inputs(tmp_path, csv):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert any(line.startswith("error:") for line in lines), (args, result.output)
        assert "internal error" not in result.output, (args, result.output)


def test_bad_input_through_the_real_entry_point_has_no_traceback(tmp_path, csv):
    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "100"}
    for args in [("budget", "init", tmp_path / "l.db", "--dataset", "d", "--rho", "-1"),
                 ("estimate", tmp_path, "--rho", "1", "--bound", "l2:1"),
                 ("estimate", csv, "--rho", "1", "--bound", "l2:1", "--seed", "abc")]:
        done = subprocess.run([sys.executable, "-m", "dpggm", *map(str, args)], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2
        assert "Traceback" not in done.stderr + done.stdout
        assert done.stderr.strip().startswith("error:")


# ------------------------------------------------------------------ crashes


def _estimate_command(csv, out, ledger):
    return [sys.executable, "-m", "dpggm", "estimate", str(csv), "--rho", "0.01",
            "--bound", "l2:1", "--out", str(out), "--ledger", str(ledger), "--dataset", "d"]


def _check_consistent(parent, ledger, outs):
    """Every output complete or absent, no debris, and the ledger's spends are exactly the
    delivered outputs."""
    recover_pending(parent, report=lambda line: None)
    assert not [p for p in parent.iterdir() if p.name.startswith(STAGING_PREFIX)]
    delivered = set()
    for out in outs:
        if out.exists():
            names = {p.name for p in out.iterdir()}
            assert {"result.json", "covariance.npy", "noisy_covariance.npy",
                    "ledger.json"} <= names, names
            assert not [n for n in names if n.startswith(".")]
            delivered.add(json.loads((out / "ledger.json").read_text())["output_id"])
    spent = {r.details["output_id"] for r in Ledger(ledger, create=False).history("d")}
    assert spent == delivered


def test_killed_between_spend_and_rename_is_finished_not_charged_twice(csv, tmp_path):
    ledger = _ledger(tmp_path, "--rho", "1")
    out = tmp_path / "o"
    script = (
        "import os, signal, sys\n"
        "import dpggm.io as o\n"
        "def die(self):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "o.StagedOutput.commit = die\n"
        "from dpggm.cli.main import app\n"
        "sys.argv = ['dpggm'] + sys.argv[1:]\n"
        "app()\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-c", script, *_estimate_command(csv, out, ledger)[3:]],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL
    assert not out.exists() and len(_spends(ledger)) == 1
    # The re-run finishes the paid-for output and then refuses to overwrite it.
    again = invoke(*_estimate_command(csv, out, ledger)[3:])
    assert "finished the output of an interrupted run" in again.output
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert len(_spends(ledger)) == 1
    _check_consistent(tmp_path, ledger, [out])


def test_kill_at_random_moments_leaves_complete_or_absent_outputs(csv, tmp_path):
    ledger = _ledger(tmp_path, "--rho", "100")
    env = {**os.environ, "PYTHONPATH": SRC}
    chooser = random.Random(20261122)
    # One complete run measures how long a run takes here, so that the kills fall across
    # the whole of a run (start-up, fit, staging, charge, rename), whatever the machine.
    outs = [tmp_path / "complete"]
    started = time.monotonic()
    subprocess.run(_estimate_command(csv, outs[0], ledger), env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    duration = time.monotonic() - started
    for trial in range(8):
        out = tmp_path / f"o{trial}"
        outs.append(out)
        process = subprocess.Popen(_estimate_command(csv, out, ledger), env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(chooser.uniform(0.3, 1.1) * duration)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    _check_consistent(tmp_path, ledger, outs)


def test_cleanup_leaves_the_staging_of_a_running_process_alone(tmp_path):
    import socket

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        staging = tmp_path / f"{STAGING_PREFIX}o-abc"
        staging.mkdir()
        (staging / ".pending.json").write_text(json.dumps(
            {"output_id": "abc", "target": "o", "pid": sleeper.pid,
             "host": socket.gethostname()}))
        recover_pending(tmp_path, report=lambda line: None)
        assert staging.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    recover_pending(tmp_path, report=lambda line: None)
    assert not staging.exists()


def _killed_staging(script, directory):
    """Run ``script`` (which SIGKILLs itself) on the target ``directory / "o"``; return the
    one staging entry it left."""
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-c", script, str(directory / "o")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    (left,) = [p for p in directory.iterdir() if p.name.startswith(STAGING_PREFIX)]
    return left


def test_a_kill_before_the_pending_record_leaves_nothing_for_the_next_delivery(tmp_path):
    """Killed while the staging directory's pending record is written: the next delivery,
    moments later, removes the directory (its creator is gone), rather than leaving it for
    a minute because it might be being created."""
    script = (
        "import os, signal, sys\n"
        "import dpggm.io as o\n"
        "write = o._write_file\n"
        "def die(path, *args, **kwargs):\n"
        "    if path.name == '.pending.json':\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return write(path, *args, **kwargs)\n"
        "o._write_file = die\n"
        "o.StagedOutput(o.Path(sys.argv[1]))\n"
    )
    left = _killed_staging(script, tmp_path)
    assert left.is_dir() and not (left / ".pending.json").exists()
    recover_pending(tmp_path, report=lambda line: None)
    assert not list(tmp_path.iterdir())


def test_a_removal_cut_short_leaves_nothing_for_the_next_delivery(tmp_path):
    """Killed while removing a staging directory (a refused charge's, or an interrupted
    run's during recovery), after its pending record went: the next delivery removes the
    rest at once."""
    script = (
        "import os, shutil, signal, sys\n"
        "import dpggm.io as o\n"
        "def cut(path, *args, **kwargs):\n"
        "    (o.Path(path) / '.pending.json').unlink()\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "staged = o.StagedOutput(o.Path(sys.argv[1]))\n"
        "staged.json('result.json', {'a': 1})\n"
        "shutil.rmtree = cut\n"
        "staged.discard()\n"
    )
    left = _killed_staging(script, tmp_path)
    assert (left / "result.json").exists() and not (left / ".pending.json").exists()
    recover_pending(tmp_path, report=lambda line: None)
    assert not list(tmp_path.iterdir())


def test_an_interrupt_just_after_the_charge_keeps_the_paid_for_output(tmp_path, monkeypatch):
    """The ledger committed the spend, then the user pressed Ctrl-C: the output is not
    thrown away (the ledger counts it as spent); the next delivery finishes it."""
    from dpggm import ZCDP
    from dpggm.io import deliver

    ledger = Ledger(tmp_path / "ledger.db")
    ledger.declare("d", ZCDP(1.0))
    original = Ledger.spend

    def spend_then_interrupt(self, *args, **kwargs):
        original(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Ledger, "spend", spend_then_interrupt)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        deliver(out, lambda staged: staged.json("result.json", {"a": 1}), ledger=ledger,
                dataset="d", guarantee=lambda: ZCDP(0.25), mechanism="a test release")
    assert not out.exists()
    monkeypatch.setattr(Ledger, "spend", original)
    messages = []
    assert recover_pending(tmp_path, report=messages.append) == [out]
    assert json.loads((out / "result.json").read_text()) == {"a": 1}
    (spend,) = Ledger(tmp_path / "ledger.db", create=False).history("d")
    assert json.loads((out / "ledger.json").read_text())["output_id"] == \
        spend.details["output_id"]
    assert any("nothing new was charged" in m for m in messages), messages


def test_a_refused_charge_leaves_no_staging(tmp_path):
    from dpggm import ZCDP
    from dpggm.exceptions import BudgetExceededError
    from dpggm.io import deliver

    ledger = Ledger(tmp_path / "ledger.db")
    ledger.declare("d", ZCDP(1.0))
    with pytest.raises(BudgetExceededError):
        deliver(tmp_path / "out", lambda staged: staged.json("result.json", {}), ledger=ledger,
                dataset="d", guarantee=lambda: ZCDP(2.0), mechanism="a test release")
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.db"]


def test_entries_being_created_by_a_running_process_are_left_alone(tmp_path):
    """A temporary file, a probe or a staging directory before its record, named for a
    process that is running: another delivery into the same directory does not touch it;
    once the process is gone, it is removed."""
    from dpggm.io import _owner_tag

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    host = _owner_tag().split("-")[1]
    try:
        tag = f"{sleeper.pid}-{host}"
        temporary = tmp_path / f"{STAGING_PREFIX}edges.csv-{'b' * 32}.{tag}.tmp"
        temporary.write_text("x,y\n")
        probe = tmp_path / f"{STAGING_PREFIX}probe-{'c' * 32}.{tag}.tmp"
        probe.write_bytes(b"")
        creating = tmp_path / f"{STAGING_PREFIX}o-{'d' * 32}.{tag}.new"
        creating.mkdir()
        recover_pending(tmp_path, report=lambda line: None)
        assert temporary.exists() and probe.exists() and creating.is_dir()
    finally:
        sleeper.kill()
        sleeper.wait()
    recover_pending(tmp_path, report=lambda line: None)
    assert not list(tmp_path.iterdir())


def test_entries_made_on_another_host_are_removed_only_once_old(tmp_path):
    """A creator on another host (a shared directory) cannot be asked: its entries are
    presumed in use for the grace period, then removed."""
    from dpggm.io import RECORDLESS_GRACE, _owner_tag

    other = "0" * 8 if _owner_tag().split("-")[1] != "0" * 8 else "1" * 8
    creating = tmp_path / f"{STAGING_PREFIX}o-{'d' * 32}.{os.getpid()}-{other}.new"
    creating.mkdir()
    temporary = tmp_path / f"{STAGING_PREFIX}m.npy-{'e' * 32}.{os.getpid()}-{other}.tmp"
    temporary.write_bytes(b"")
    recover_pending(tmp_path, report=lambda line: None)
    assert creating.is_dir() and temporary.exists()
    old = time.time() - 2 * RECORDLESS_GRACE
    for entry in (creating, temporary):
        os.utime(entry, (old, old))
    recover_pending(tmp_path, report=lambda line: None)
    assert not list(tmp_path.iterdir())


def test_this_process_s_own_entries_are_told_from_a_former_process_s(tmp_path):
    """A staging directory this process holds is left alone by a recovery in the same
    process (another thread delivering beside it); an entry that names this process's pid
    but that it does not hold is a former process's (a restarted container reuses pids)
    and is removed."""
    from dpggm.io import StagedOutput, _owner_tag

    staged = StagedOutput(tmp_path / "live")
    former = tmp_path / f"{STAGING_PREFIX}{'f' * 32}.{_owner_tag()}.new"
    former.mkdir()
    recover_pending(tmp_path, report=lambda line: None)
    assert staged.staging.is_dir() and not former.exists()
    staged.json("result.json", {"a": 1})
    staged.commit()
    assert json.loads((tmp_path / "live" / "result.json").read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["live"]


def test_a_name_with_an_impossible_process_id_does_not_stop_deliveries(tmp_path):
    """Anyone who can write to the directory can leave such a name: it is treated as no
    process's (removed once old), and the delivery goes on."""
    from dpggm.io import RECORDLESS_GRACE, _owner_tag, write_atomic

    host = _owner_tag().split("-")[1]
    junk = [tmp_path / f"{STAGING_PREFIX}{'a' * 32}.{10 ** 30}-{host}.new",
            tmp_path / f"{STAGING_PREFIX}{'b' * 32}.0-{host}.tmp"]
    junk[0].mkdir()
    junk[1].write_bytes(b"")
    write_atomic(tmp_path / "f.txt", lambda fh: fh.write("x"))
    recover_pending(tmp_path, report=lambda line: None)
    assert all(entry.exists() for entry in junk)
    old = time.time() - 2 * RECORDLESS_GRACE
    for entry in junk:
        os.utime(entry, (old, old))
    recover_pending(tmp_path, report=lambda line: None)
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_long_target_names_are_not_shortened_by_the_staging_names(tmp_path):
    """The names of entries being created have a fixed length: an output name as long as
    its staging name allows (255 bytes in all) is delivered."""
    from dpggm.io import StagedOutput, write_atomic

    longest = 255 - len(STAGING_PREFIX) - 33
    staged = StagedOutput(tmp_path / ("d" * longest))
    staged.json("result.json", {})
    staged.commit()
    write_atomic(tmp_path / ("f" * 255), lambda fh: fh.write("x"))
    assert sorted(len(p.name) for p in tmp_path.iterdir()) == [longest, 255]


# ------------------------------------------------------------------ staging modes


def _modes(directory):
    return (stat.S_IMODE(directory.stat().st_mode),
            {p.name: stat.S_IMODE(p.stat().st_mode) for p in directory.iterdir()})


def test_staging_is_owner_only_until_commit_whatever_the_umask(tmp_path):
    from dpggm.io import StagedOutput

    old = os.umask(0o000)
    try:
        staged = StagedOutput(tmp_path / "o")
        staged.json("result.json", {"a": 1})
        staged.npy("m.npy", np.eye(2))
        staged.text("edges.csv", "x,y\n")
        directory_mode, file_modes = _modes(staged.staging)
        assert directory_mode == 0o700
        assert file_modes == {".pending.json": 0o600, "result.json": 0o600, "m.npy": 0o600,
                              "edges.csv": 0o600}
        staged.commit()
        directory_mode, file_modes = _modes(tmp_path / "o")
    finally:
        os.umask(old)
    # Delivered: the ordinary permissions under this umask.
    assert directory_mode == 0o777
    assert set(file_modes.values()) == {0o666}


def test_staging_is_owner_only_at_the_moment_of_the_charge(csv, tmp_path, monkeypatch):
    ledger = _ledger(tmp_path, "--rho", "1")
    seen = {}
    original = Ledger.spend

    def spy(self, *args, **kwargs):
        (staging,) = [p for p in tmp_path.iterdir() if p.name.startswith(STAGING_PREFIX)]
        seen["modes"] = _modes(staging)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Ledger, "spend", spy)
    old = os.umask(0o000)
    try:
        result = invoke("estimate", csv, "--rho", "0.1", "--bound", "l2:1", "--out",
                        tmp_path / "o", "--ledger", ledger, "--dataset", "d")
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    directory_mode, file_modes = seen["modes"]
    assert directory_mode == 0o700
    assert "result.json" in file_modes and set(file_modes.values()) == {0o600}
    assert stat.S_IMODE((tmp_path / "o").stat().st_mode) == 0o777
    assert {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "o").iterdir()} == {0o666}


def test_killed_before_the_charge_leaves_nothing_readable_by_others(csv, tmp_path):
    ledger = _ledger(tmp_path, "--rho", "1")
    out = tmp_path / "o"
    # Dies where a run would wait for the ledger's lock: staged, not yet charged.
    script = (
        "import os, signal, sys\n"
        "os.umask(0)\n"
        "import dpggm.privacy.ledger as l\n"
        "def die(self, *args, **kwargs):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "l.Ledger.spend = die\n"
        "from dpggm.cli.main import app\n"
        "sys.argv = ['dpggm'] + sys.argv[1:]\n"
        "app()\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-c", script, *_estimate_command(csv, out, ledger)[3:]],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL
    (staging,) = [p for p in tmp_path.iterdir() if p.name.startswith(STAGING_PREFIX)]
    directory_mode, file_modes = _modes(staging)
    assert directory_mode == 0o700
    assert "noisy_covariance.npy" in file_modes and set(file_modes.values()) == {0o600}
    assert _spends(ledger) == []
