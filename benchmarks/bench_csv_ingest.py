"""CSV ingestion speed and memory: dpggm's reader against ``pyarrow.csv.read_csv``.

Writes a CSV of seeded Gaussian records to a temporary directory (``--rows`` x
``--features``, 17 significant digits), then, each in a fresh child process so that peak
resident memory is its own:

* ``pyarrow.csv.read_csv`` (the baseline: the whole file into an Arrow table),
* ``pandas.read_csv`` (for reference),
* dpggm ``iter_chunks`` (read, check for NaN / non-numeric, convert each block to a float
  matrix; nothing kept),
* dpggm ``clipped_second_moment`` (the same plus clipping and ``X^T X``).

Prints MB/s, the time ratio to ``pyarrow.csv.read_csv`` (target <= 1.5) and the peak memory
above the interpreter's baseline (dpggm's is bounded by one block, about 2x the block size
plus the Arrow buffers; the baselines hold the whole file).

Run: ``python benchmarks/bench_csv_ingest.py [--rows 1000000] [--features 50] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

METHODS = ("pyarrow.csv.read_csv", "pandas.read_csv", "dpggm iter_chunks",
           "dpggm clipped_second_moment")


def write_csv(path: Path, rows: int, features: int) -> None:
    block = 100_000
    with open(path, "w") as fh:
        fh.write(",".join(f"x{j}" for j in range(features)) + "\n")
        for start in range(0, rows, block):
            values = np.random.default_rng([7, start]).normal(size=(min(block, rows - start),
                                                                     features))
            np.savetxt(fh, values, delimiter=",", fmt="%.17g")


def child(method: str, path: str) -> None:
    import resource

    import pandas as pd
    import pyarrow.csv as pacsv

    from dpggm.data.records import clipped_second_moment
    from dpggm.data.tables import iter_chunks
    from dpggm.mechanisms.bounds import RowNorm

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    if method == "pyarrow.csv.read_csv":
        rows = pacsv.read_csv(path).num_rows
    elif method == "pandas.read_csv":
        rows = len(pd.read_csv(path))
    elif method == "dpggm iter_chunks":
        rows = sum(values.shape[0] for values, _, _ in iter_chunks(path))
    else:
        rows = clipped_second_moment(path, bounds=RowNorm(5.0)).n
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "rows": rows, "peak_above_base": peak - base}))


def run(method: str, path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run([sys.executable, __file__, "--child", method, str(path)],
                          capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory(prefix="dpggm-csv-") as folder:
        path = Path(folder) / "records.csv"
        write_csv(path, args.rows, args.features)
        size = path.stat().st_size
        print(f"file: {args.rows} x {args.features}, {size / 1e6:.0f} MB; "
              f"best of {args.repeat} (methods interleaved)")
        best: dict[str, dict] = {}
        for _ in range(args.repeat):
            for method in METHODS:
                result = run(method, path)
                assert result["rows"] == args.rows, (method, result)
                if method not in best or result["seconds"] < best[method]["seconds"]:
                    best[method] = result
        baseline = best["pyarrow.csv.read_csv"]["seconds"]
        print(f"{'method':30s} {'seconds':>8s} {'MB/s':>7s} {'ratio':>6s} {'peak MB':>8s}")
        for method in METHODS:
            r = best[method]
            print(f"{method:30s} {r['seconds']:8.2f} {size / 1e6 / r['seconds']:7.0f} "
                  f"{r['seconds'] / baseline:6.2f} {r['peak_above_base'] / 1e6:8.0f}")
        ratio = best["dpggm iter_chunks"]["seconds"] / baseline
        print(f"dpggm iter_chunks / pyarrow.csv.read_csv time ratio: {ratio:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
