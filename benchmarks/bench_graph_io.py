"""``dpggm graph`` on large CSV files against the floor of reading them, in the same run.

Prints each figure of the main job's speed and memory next to its floor, measured in the
same run (the machine may be shared: only ratios mean anything):

1. **The 2 000 000 x 20 CSV** (``--csv``; written by ``make_raw_chain`` with ``%.6g`` when
   not given): wall time of ``python -m dpggm graph FILE --rho 1 --out DIR`` in a fresh
   interpreter against the floor, a fresh interpreter that reads the file with
   ``pyarrow.csv.read_csv``, converts it to a NumPy matrix and computes ``X^T X`` (target:
   at most 2x), and the command's peak resident memory (target: at most 400 MB). The
   runs alternate (floor, command, floor, ...) and the medians are compared.
2. **A CSV of ``--large-gb`` GB** (0 to skip; the body of the first file repeated, so it
   costs only disk space; deleted at the end unless ``--keep``): the command's rows per
   second and peak resident memory (target: at most 400 MB) against the floor of a
   bounded-memory read, pyarrow's streaming CSV reader with ``X^T X`` per batch.
3. **Start-up**: ``dpggm graph nosuch.csv --rho 1`` against ``python -c "import numpy"``
   (best of ``--repeats``; target: at most 4x).

The CSV is written by a child process: Linux counts the launching process's own peak in
a child's ``ru_maxrss`` (the child is started by ``vfork``, and at ``exec`` the kernel
folds the high mark of the memory it leaves -- the launcher's -- into the child's), so a
launcher that had written the file itself (some 1.4 GB) made every command look as large.
The launcher's own peak is printed with the peaks.

Run: ``nice -n 10 python benchmarks/bench_graph_io.py [--csv FILE] [--repeats 3]
[--large-gb 10] [--scratch DIR]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")

FLOOR = """
import sys
import numpy as np
import pyarrow.csv as pacsv
table = pacsv.read_csv(sys.argv[1])
X = np.empty((table.num_rows, table.num_columns), order="F")
for j in range(table.num_columns):
    X[:, j] = table.column(j).to_numpy()
del table
gram = X.T @ X
print(X.shape[0])
"""

STREAMED_FLOOR = """
import sys
import numpy as np
import pyarrow.csv as pacsv
reader = pacsv.open_csv(sys.argv[1])
gram = None
rows = 0
for batch in reader:
    X = np.empty((batch.num_rows, batch.num_columns), order="F")
    for j in range(batch.num_columns):
        X[:, j] = batch.column(j).to_numpy()
    gram = X.T @ X if gram is None else gram + X.T @ X
    rows += X.shape[0]
print(rows)
"""


#: CPU seconds (user + system) of the last child run by :func:`peak_of`.
LAST_CPU = [0.0]


def peak_of(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """``(wall seconds, peak resident MB, stdout)`` of a child process (its own peak,
    from ``os.wait4``); its CPU time goes to :data:`LAST_CPU`."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(command, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        LAST_CPU[0] = usage.ru_utime + usage.ru_stime
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed ({child.returncode}): "
                             f"{err.read()[-2000:]}")
        return wall, usage.ru_maxrss / 1024, out.read()


def load() -> str:
    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg()) + \
        f" on {os.cpu_count()} cores"


WRITE_RAW_CSV = """
import sys
from dpggm.datasets import make_raw_chain

frame, _ = make_raw_chain(n_samples=int(sys.argv[2]), n_features=20, random_state=0)
frame.to_csv(sys.argv[1], index=False, float_format="%.6g")
"""


def write_raw_csv(path: Path, rows: int, env: dict[str, str]) -> None:
    """The CSV, written by a child (the launcher stays small: see the module's docstring)."""
    subprocess.run([sys.executable, "-c", WRITE_RAW_CSV, str(path), str(rows)], env=env,
                   check=True)


def launcher_peak() -> str:
    """The launching process's own peak resident memory: a floor under every child's."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return f"the launcher's own peak {peak:.0f} MB"


def write_large_csv(source: Path, path: Path, gigabytes: float) -> None:
    """The body of ``source`` repeated until the file holds ``gigabytes`` GB."""
    with open(source, "rb") as handle:
        header = handle.readline()
        body_start = handle.tell()
    size = source.stat().st_size - body_start
    with open(path, "wb") as out:
        out.write(header)
        written = 0
        while written < gigabytes * 1e9:
            with open(source, "rb") as handle:
                handle.seek(body_start)
                shutil.copyfileobj(handle, out, 16 << 20)
            written += size


def graph_command(csv: Path, out: Path, scratch: str | None) -> list[str]:
    command = [sys.executable, "-m", "dpggm", "graph", str(csv), "--rho", "1", "--out",
               str(out), "--overwrite"]
    return command + (["--scratch", scratch] if scratch else [])


def figure_one(csv: Path, work: Path, repeats: int, env: dict[str, str],
               scratch: str | None) -> None:
    floors, runs, peaks, floor_cpu, run_cpu = [], [], [], [], []
    for _ in range(repeats):
        wall, _, _ = peak_of([sys.executable, "-c", FLOOR, str(csv)], env)
        floors.append(wall)
        floor_cpu.append(LAST_CPU[0])
        wall, peak, _ = peak_of(graph_command(csv, work / "out", scratch), env)
        runs.append(wall)
        run_cpu.append(LAST_CPU[0])
        peaks.append(peak)
    floor, run = statistics.median(floors), statistics.median(runs)
    print(f"1. {csv.name} ({csv.stat().st_size / 1e6:.0f} MB), {repeats} alternating runs, "
          f"{load()} at the end")
    print(f"   floor (pyarrow read_csv + NumPy X^T X, fresh interpreter): median {floor:6.2f} s "
          f" runs {' '.join(f'{t:.2f}' for t in floors)}")
    print(f"   dpggm graph FILE --rho 1 --out DIR:                        median {run:6.2f} s "
          f" runs {' '.join(f'{t:.2f}' for t in runs)}")
    ratios = [r / f for r, f in zip(runs, floors)]
    print(f"   ratio {run / floor:.2f} x floor (median of pairs {statistics.median(ratios):.2f}; "
          "target <= 2)")
    print(f"   CPU time (user + system): floor {statistics.median(floor_cpu):.2f} s, dpggm "
          f"{statistics.median(run_cpu):.2f} s = "
          f"{statistics.median(run_cpu) / statistics.median(floor_cpu):.2f} x (the wall-time "
          "ratio tends to it when the cores are busy)")
    print(f"   peak resident memory {max(peaks):.0f} MB (runs {' '.join(f'{m:.0f}' for m in peaks)};"
          f" target <= 400; {launcher_peak()})")
    small = work / "first-20000-rows.csv"
    with open(csv, "rb") as source, open(small, "wb") as out:
        for _ in range(20001):
            out.write(source.readline())
    _, small_peak, _ = peak_of(graph_command(small, work / "out-small", scratch), env)
    print(f"   the same command on the first 20 000 rows: peak {small_peak:.0f} MB (the modules "
          "it loads; the records' share is the difference)")


def figure_two(csv: Path, large: Path, gigabytes: float, work: Path, env: dict[str, str],
               scratch: str | None, keep: bool) -> None:
    made = not large.exists()
    if made:
        write_large_csv(csv, large, gigabytes)
    size = large.stat().st_size
    free = shutil.disk_usage(scratch or tempfile.gettempdir()).free
    try:
        wall_floor, peak_floor, out = peak_of([sys.executable, "-c", STREAMED_FLOOR, str(large)],
                                              env)
        rows = int(out.strip().splitlines()[-1])
        wall, peak, _ = peak_of(graph_command(large, work / "out-large", scratch), env)
    finally:
        if made and not keep:
            large.unlink()
    print(f"2. {large.name}: {size / 1e9:.1f} GB, {rows} rows; temporary space free before "
          f"the run {free / 1e9:.0f} GB; {load()} at the end")
    print(f"   floor (pyarrow streaming reader + X^T X per batch): {wall_floor:7.1f} s "
          f"{rows / wall_floor:12,.0f} rows/s  peak {peak_floor:.0f} MB")
    print(f"   dpggm graph FILE --rho 1 --out DIR:                {wall:7.1f} s "
          f"{rows / wall:12,.0f} rows/s  peak {peak:.0f} MB (target <= 400)")
    print(f"   ratio {wall / wall_floor:.2f} x floor in time")


def figure_three(repeats: int, env: dict[str, str], work: Path) -> None:
    def best(command: list[str]) -> float:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            subprocess.run(command, env=env, cwd=work, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
            times.append(time.perf_counter() - start)
        return min(times)

    base = best([sys.executable, "-c", "import numpy"])
    graph = best([sys.executable, "-m", "dpggm", "graph", "nosuch.csv", "--rho", "1"])
    print(f"3. start-up, best of {repeats}: python -c 'import numpy' {base:.3f} s; "
          f"dpggm graph nosuch.csv --rho 1 {graph:.3f} s = {graph / base:.2f} x (target <= 4)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=None,
                        help="the 2 000 000 x 20 CSV (default: written into a temporary "
                             "directory)")
    parser.add_argument("--rows", type=int, default=2_000_000,
                        help="rows of the CSV written when --csv is not given")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--large-gb", type=float, default=0.0,
                        help="size of the large CSV in GB (0: skip figure 2)")
    parser.add_argument("--large", type=Path, default=None,
                        help="where to write the large CSV (default: beside --csv)")
    parser.add_argument("--scratch", default=None,
                        help="directory of dpggm's temporary file of parsed records")
    parser.add_argument("--keep", action="store_true", help="keep the large CSV")
    parser.add_argument("--figures", default="1,2,3",
                        help="which figures to measure, e.g. 2 or 1,3 (default: all)")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": SRC}
    with tempfile.TemporaryDirectory(prefix="bench-graph-io-") as tmp:
        work = Path(tmp)
        csv = args.csv
        if csv is None:
            csv = work / "raw.csv"
            write_raw_csv(csv, args.rows, env)
        figures = {int(f) for f in args.figures.split(",")}
        # One untimed run compiles (and caches) the kernels and warms the page cache.
        peak_of(graph_command(csv, work / "out", args.scratch), env)
        print(f"dpggm graph I/O benchmark ({load()} at the start)")
        if 1 in figures:
            figure_one(csv, work, args.repeats, env, args.scratch)
        if 2 in figures and args.large_gb > 0:
            large = args.large or csv.with_name(f"large-{args.large_gb:g}gb.csv")
            figure_two(csv, large, args.large_gb, work, env, args.scratch, args.keep)
        if 3 in figures:
            figure_three(max(args.repeats, 5), env, work)


if __name__ == "__main__":
    main()
