"""The clipped second moment of a large Parquet data set through Dask, with bounded memory.

Writes ``--rows`` x ``--features`` seeded Gaussian records (default 20 million x 50: 8 GB
as float64) as uncompressed Parquet parts of ``--part-rows`` rows into a temporary
directory, part by part (never the whole data set in memory), then:

1. starts a ``LocalCluster`` of ``--workers`` single-threaded worker processes (BLAS
   limited to one thread each, Dask's default) and computes
   :func:`dpggm.estimators.data.clipped_second_moment` of ``dd.read_parquet(parts)``,
   printing the wall time, rows/s, and every worker's peak resident memory;
2. the baseline in the same run: bare NumPy ``X.T @ X`` on an in-memory slice of
   ``--slice-rows`` rows (one thread, ``threadpoolctl``), as rows/s per core;
3. the ratio ``baseline rows/s per core / Dask rows/s per core`` (target <= 1.5), and a
   check of the Dask result against a NumPy reference on the first part.

The data directory is deleted at the end unless ``--keep`` is given (or ``--data DIR``
points at existing parts, which are reused and kept).

Run: ``nice -n 10 python benchmarks/bench_dask.py [--rows 20000000] [--features 50]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

BOUND = 9.0  # a row-norm bound that clips some of the records (typical norm sqrt(50) ~ 7)


def part(index: int, rows: int, features: int) -> np.ndarray:
    return np.random.default_rng([2026, 11, index]).normal(size=(rows, features))


def write_parts(folder: Path, rows: int, features: int, part_rows: int) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = [f"x{j}" for j in range(features)]
    count = 0
    for start in range(0, rows, part_rows):
        values = part(count, min(part_rows, rows - start), features)
        table = pa.table({name: values[:, j] for j, name in enumerate(names)})
        pq.write_table(table, folder / f"part-{count:04d}.parquet", compression="none",
                       use_dictionary=False)
        count += 1
    return count


def baseline_rows_per_second(folder: Path, slice_rows: int) -> tuple[float, float]:
    """Bare NumPy X.T @ X on one thread, on records already in memory."""
    import pandas as pd
    from threadpoolctl import threadpool_limits

    frames = []
    for path in sorted(folder.glob("*.parquet")):
        frames.append(pd.read_parquet(path))
        if sum(len(f) for f in frames) >= slice_rows:
            break
    X = np.ascontiguousarray(pd.concat(frames).to_numpy()[:slice_rows])
    best = cpu = np.inf
    with threadpool_limits(limits=1):
        for _ in range(3):
            start, start_cpu = time.perf_counter(), time.process_time()
            gram = X.T @ X
            best = min(best, time.perf_counter() - start)
            cpu = min(cpu, time.process_time() - start_cpu)
    assert np.isfinite(gram).all()
    return X.shape[0] / best, X.shape[0] / cpu


def _one_thread() -> None:
    import dask.dataframe  # noqa: F401
    import pyarrow as pa
    import pyarrow.parquet

    import dpggm.estimators._dask  # noqa: F401

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--part-rows", type=int, default=250_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GB", help="per worker")
    parser.add_argument("--slice-rows", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=None, help="existing parts to reuse")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from dpggm.estimators.data import clipped_second_moment
    from dpggm.mechanisms.bounds import RowNorm

    reuse = args.data is not None and any(args.data.glob("*.parquet"))
    folder = args.data or Path(tempfile.mkdtemp(prefix="dpggm-dask-bench-", dir="/tmp"))
    try:
        if not reuse:
            folder.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            parts = write_parts(folder, args.rows, args.features, args.part_rows)
            print(f"wrote {parts} parts to {folder} in {time.perf_counter() - start:.0f} s")
        size = sum(p.stat().st_size for p in folder.glob("*.parquet"))
        print(f"data set: {args.rows:,} x {args.features} "
              f"({args.rows * args.features * 8 / 1e9:.1f} GB as float64; "
              f"{size / 1e9:.1f} GB of Parquet)")

        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            # One core per worker: pyarrow's own thread pools would oversubscribe the cores
            # (and make "per core" meaningless); workers import dpggm before the clock starts.
            client.run(_one_thread)
            frame = dd.read_parquet(str(folder / "*.parquet"))
            cpu_before = client.run(time.process_time)
            start = time.perf_counter()
            stats = clipped_second_moment(frame, bounds=RowNorm(BOUND))
            seconds = time.perf_counter() - start
            cpu_after = client.run(time.process_time)
            cpu = sum(cpu_after[w] - cpu_before[w] for w in cpu_after)

            def peak() -> int:
                import resource

                return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

            peaks = client.run(peak)
        assert stats.n == args.rows, stats.n
        rate = stats.n / seconds
        print(f"dask ({args.workers} workers x 1 thread): {seconds:.1f} s, {rate:,.0f} rows/s, "
              f"{rate / args.workers:,.0f} rows/s per core; clipped {stats.n_clipped:,} rows")
        print(f"  worker CPU time {cpu:.1f} s: {stats.n / cpu:,.0f} rows per CPU-second "
              "(robust to other load on the machine)")
        for address, value in sorted(peaks.items()):
            print(f"  worker {address}: peak resident memory {value / 1e9:.2f} GB "
                  f"(limit {args.memory_limit})")

        first = part(0, min(args.part_rows, args.rows), args.features)
        norms = np.linalg.norm(first, axis=1, keepdims=True)
        first = first * np.minimum(1.0, BOUND / norms)
        reference = first.T @ first
        check = clipped_second_moment(dd.read_parquet(str(sorted(folder.glob("*.parquet"))[0])),
                                      bounds=RowNorm(BOUND))
        error = np.max(np.abs(check.second_moment * check.n - reference)) / np.max(
            np.abs(reference))
        print(f"first part through Dask vs NumPy reference: max relative difference {error:.1e}")

        base, base_cpu = baseline_rows_per_second(folder, args.slice_rows)
        print(f"baseline: bare NumPy X.T @ X on an in-memory {args.slice_rows:,}-row slice, "
              f"1 thread: {base:,.0f} rows/s, {base_cpu:,.0f} rows per CPU-second")
        print(f"throughput ratio per core (baseline / dask), wall clock: "
              f"{base / (rate / args.workers):.2f}; CPU time: {base_cpu / (stats.n / cpu):.2f} "
              "(target <= 1.5)")
    finally:
        if not args.keep and not reuse:
            shutil.rmtree(folder, ignore_errors=True)
            print(f"deleted {folder}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
