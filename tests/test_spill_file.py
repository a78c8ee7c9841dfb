"""The parsed records spilled to a temporary file never have a name, and nothing of them is
left after ``kill -9`` (issue 29: ``TMPDIR/dpggm-records-*/records.f64`` survived)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dpggm.datasets import make_raw_chain

SRC = str(Path(__file__).resolve().parents[1] / "src")

SCRIPT = """
import sys, time
from dpggm.data import kernels
from dpggm.data.file_records import FileRecords
from dpggm.data.passes import ValueCounts
from dpggm.mechanisms.private_bounds import candidate_grid

class Stuck(ValueCounts):
    def add(self, state, block):
        print("reading", flush=True)
        time.sleep(600)

records = FileRecords(sys.argv[1], memory_limit=1024)
records.run(ValueCounts(candidate_grid(per_octave=16), kernels.SYMMETRIC))
records.run(Stuck(candidate_grid(per_octave=16), kernels.SYMMETRIC))
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux)")
def test_no_copy_of_the_records_survives_kill_9(tmp_path):
    frame, _ = make_raw_chain(n_samples=4000, n_features=4, random_state=0)
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "PYTHONPATH": SRC, "TMPDIR": str(scratch)}
    process = subprocess.Popen([sys.executable, "-c", SCRIPT, str(data)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "reading", process.stderr.read()
        # Mid-read: the records are in a file that has no name, owner-only.
        names = [os.path.join(root, f) for root, _, files in os.walk(scratch) for f in files]
        assert names == []
        spilled = []
        for fd in os.listdir(f"/proc/{process.pid}/fd"):
            link = os.readlink(f"/proc/{process.pid}/fd/{fd}")
            if link.startswith(str(scratch)):
                spilled.append((link, os.stat(f"/proc/{process.pid}/fd/{fd}")))
        assert len(spilled) == 1, spilled
        link, info = spilled[0]
        assert link.endswith("(deleted)") and info.st_nlink == 0
        assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_size == 4000 * 4 * 8
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert os.listdir(scratch) == []
