"""Start-up time of the command line against ``python -c "import numpy"``.

Runs each command several times in fresh interpreters and prints the best wall time and
its ratio to the baseline measured in the same run. Target: at most 4x for ``--help``,
the ``budget`` commands and ``graph`` on a missing file (which must answer before the
estimator and the plotting modules are imported).

    python benchmarks/bench_startup.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def best_of(command: list[str], repeats: int, env: dict[str, str], cwd: str) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        # A refused input exits with status 2 by design; anything else is a failure.
        done = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=False)
        if done.returncode not in (0, 2):
            raise SystemExit(f"{' '.join(command)} exited with status {done.returncode}")
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": SRC}
    with tempfile.TemporaryDirectory() as cwd:
        py = sys.executable
        subprocess.run([py, "-m", "dpggm", "budget", "init", "l.db", "--dataset", "d",
                        "--rho", "1"], env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
        cases = {
            'python -c "import numpy"  (baseline)': [py, "-c", "import numpy"],
            "dpggm --help": [py, "-m", "dpggm", "--help"],
            "dpggm --version": [py, "-m", "dpggm", "--version"],
            "dpggm budget show": [py, "-m", "dpggm", "budget", "show", "l.db"],
            "dpggm budget history": [py, "-m", "dpggm", "budget", "history", "l.db",
                                     "--dataset", "d"],
            'python -c "import dpggm"': [py, "-c", "import dpggm"],
            "dpggm graph nosuch.csv --rho 1": [py, "-m", "dpggm", "graph", "nosuch.csv",
                                               "--rho", "1"],
        }
        results = {name: best_of(cmd, args.repeats, env, cwd) for name, cmd in cases.items()}
    base = next(iter(results.values()))
    for name, seconds in results.items():
        print(f"{name:42s} {seconds:6.3f} s  {seconds / base:5.2f} x baseline")


if __name__ == "__main__":
    main()
