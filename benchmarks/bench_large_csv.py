"""Second moment of a CSV file larger than 2 GB with bounded memory.

Writes a CSV of seeded Gaussian records (``--gigabytes``, default 2.1), then in two
separate child processes computes

* the streamed, clipped second moment with :func:`dpggm.data.records.clipped_second_moment`
  (chunked reading), recording the child's peak resident memory, and
* the in-memory reference: the same records regenerated from the same seeds into one
  array, clipped with plain NumPy and multiplied out,

and prints both peak memories and the largest relative difference. Values are written with
17 significant digits, so the file holds the records exactly.

Run: ``python benchmarks/bench_large_csv.py [--gigabytes 2.1] [--keep]``.
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

N_FEATURES = 20
BLOCK_ROWS = 250_000
BOUND = 4.0


def _block(index: int) -> np.ndarray:
    return np.random.default_rng([2026, index]).normal(size=(BLOCK_ROWS, N_FEATURES))


def write_csv(path: Path, gigabytes: float) -> int:
    header = ",".join(f"x{j}" for j in range(N_FEATURES)) + "\n"
    blocks = 0
    with open(path, "w") as fh:
        fh.write(header)
        while fh.tell() < gigabytes * 1e9:
            block = _block(blocks)
            lines = "\n".join(",".join(f"{v!r}" for v in row) for row in block.tolist())
            fh.write(lines + "\n")
            blocks += 1
    return blocks


def child_streamed(path: str) -> None:
    import resource

    from dpggm.data.records import clipped_second_moment
    from dpggm.mechanisms.bounds import RowNorm

    start = time.perf_counter()
    stats = clipped_second_moment(path, bounds=RowNorm(BOUND))
    elapsed = time.perf_counter() - start
    np.save(path + ".streamed.npy", stats.second_moment)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"peak_bytes": peak, "seconds": elapsed, "n": stats.n}))


def child_in_memory(path: str, blocks: int) -> None:
    import resource

    X = np.concatenate([_block(i) for i in range(blocks)])
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    X *= np.minimum(1.0, BOUND / norms)
    reference = X.T @ X / X.shape[0]
    np.save(path + ".reference.npy", reference)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"peak_bytes": peak, "n": X.shape[0]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=2.1)
    parser.add_argument("--dir", type=Path, default=None, help="where to write the CSV")
    parser.add_argument("--keep", action="store_true", help="keep the CSV afterwards")
    args = parser.parse_args()
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="dpggm-bench-"))
    path = workdir / "large.csv"
    t0 = time.perf_counter()
    blocks = write_csv(path, args.gigabytes)
    size = path.stat().st_size
    print(f"wrote {path} ({size / 1e9:.2f} GB, {blocks * BLOCK_ROWS} rows x {N_FEATURES}) "
          f"in {time.perf_counter() - t0:.0f} s")
    streamed = json.loads(subprocess.check_output(
        [sys.executable, __file__, "--child-streamed", str(path)]).decode())
    reference = json.loads(subprocess.check_output(
        [sys.executable, __file__, "--child-in-memory", str(path), str(blocks)]).decode())
    a = np.load(str(path) + ".streamed.npy")
    b = np.load(str(path) + ".reference.npy")
    rel = float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
    print(f"streamed:  peak memory {streamed['peak_bytes'] / 2**20:.0f} MiB, "
          f"{streamed['seconds']:.0f} s, n = {streamed['n']}")
    print(f"in memory: peak memory {reference['peak_bytes'] / 2**20:.0f} MiB, n = {reference['n']}")
    print(f"max relative difference: {rel:.3e}  (requirement: <= 1e-10)")
    print(f"peak memory under 1 GiB: {streamed['peak_bytes'] < 2**30}")
    for suffix in (".streamed.npy", ".reference.npy"):
        os.unlink(str(path) + suffix)
    if not args.keep:
        path.unlink()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-streamed":
        child_streamed(sys.argv[2])
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-in-memory":
        child_in_memory(sys.argv[2], int(sys.argv[3]))
    else:
        main()
