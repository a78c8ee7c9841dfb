"""The clipped second moment of a large Parquet data set through Dask, with bounded memory.

Writes ``--rows`` x ``--features`` seeded Gaussian records (default 20 million x 50: 8 GB
as float64) as Parquet parts of ``--part-rows`` rows into a temporary directory, part by
part (never the whole data set in memory). The parts are uncompressed and plain-encoded
(no codec, no dictionary: decoding is then a copy); with ``--required`` the columns are
declared non-nullable (REQUIRED), so pyarrow reads no definition levels. Then:

1. drops the parts from the page cache (``posix_fadvise(DONTNEED)`` on these files only:
   a data set larger than memory is read from disk), starts a ``LocalCluster`` of
   ``--workers`` single-threaded worker processes (or, with ``--threads``, one worker
   process with ``--workers`` threads; BLAS limited to one thread each, Dask's
   default; pyarrow's pools limited to one thread; Dask's statistical profiler off unless
   ``--worker-profiler``) and computes
   :func:`dpggm.data.records.clipped_second_moment` of ``dd.read_parquet(parts)``,
   printing the wall time, rows/s, rows per worker CPU-second (user + system; the system
   part is mostly the kernel reading the files), and every worker's peak resident memory;
2. the baseline in the same run: bare NumPy ``X.T @ X`` on an in-memory slice of
   ``--slice-rows`` rows (C order, float64, one BLAS thread) as rows per CPU-second, the
   best of 3 products and sustained over as many products as there are records (the same
   work as the Dask run, under the same load from the rest of the machine);
3. the ratio ``baseline rows/s per core / Dask rows/s per core`` (target <= 1.5), in CPU
   time (against both baselines; robust to waiting for the cores) and in wall time;
4. where the time goes, in CPU time (user + system) in this process on one thread on the
   first parts (the same records), each as nanoseconds per row and as a multiple of the
   baseline's time per row: reading the bytes of all the files and of the first files
   from disk alone (on this virtual machine the cost per byte grows once a few GB have
   streamed through the page cache), the per-part work
   without Dask (decode, copy into the block buffer, check, clip, the product) with the
   files read from disk and from the page cache, pyarrow decode alone, the block work alone
   on records already in memory, and the product ``ZᵀZ`` alone. Reading + decode + the
   product is a floor no scheduling can remove;
5. a check of the Dask result against a NumPy reference on the first part.

The data directory is deleted at the end unless ``--keep`` is given (or ``--data DIR``
points at existing parts, which are reused and kept).

Run: ``nice -n 10 python benchmarks/bench_dask.py [--rows 20000000] [--features 50]
[--required]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

BOUND = 9.0  # a row-norm bound that clips some of the records (typical norm sqrt(50) ~ 7)


def part(index: int, rows: int, features: int) -> np.ndarray:
    return np.random.default_rng([2026, 11, index]).normal(size=(rows, features))


def write_parts(folder: Path, rows: int, features: int, part_rows: int, required: bool) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = [f"x{j}" for j in range(features)]
    schema = pa.schema([pa.field(name, pa.float64(), nullable=not required) for name in names])
    count = 0
    for start in range(0, rows, part_rows):
        values = part(count, min(part_rows, rows - start), features)
        table = pa.table({name: values[:, j] for j, name in enumerate(names)}, schema=schema)
        pq.write_table(table, folder / f"part-{count:04d}.parquet", compression="none",
                       use_dictionary=False)
        count += 1
    return count


def evict(paths: list[Path]) -> None:
    """Drop these files' pages from the page cache, so that they are read from disk as a
    data set larger than memory would be (only these files; clean pages only)."""
    if not hasattr(os, "posix_fadvise"):
        return
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _cpu_times() -> tuple[float, float]:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def _best_cpu(task: Any, repeat: int = 3, before: Any = None) -> float:
    best = np.inf
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.process_time()
        task()
        best = min(best, time.process_time() - start)
    return best


def baseline_rows_per_second(folder: Path, slice_rows: int,
                             total_rows: int) -> tuple[float, float, float]:
    """Bare NumPy X.T @ X on one thread, on records already in memory (C order, float64):
    rows/s and rows per CPU-second of the best of 3 products, and rows per CPU-second
    sustained over as many products as it takes to cover ``total_rows`` (the same work as
    the Dask run, under the same load from the rest of the machine)."""
    import pandas as pd
    from threadpoolctl import threadpool_limits

    frames = []
    for path in sorted(folder.glob("*.parquet")):
        frames.append(pd.read_parquet(path))
        if sum(len(f) for f in frames) >= slice_rows:
            break
    X = np.ascontiguousarray(pd.concat(frames).to_numpy(dtype=float)[:slice_rows])
    best = cpu = np.inf
    with threadpool_limits(limits=1):
        for _ in range(3):
            start, start_cpu = time.perf_counter(), time.process_time()
            gram = X.T @ X
            best = min(best, time.perf_counter() - start)
            cpu = min(cpu, time.process_time() - start_cpu)
        repeats = max(1, -(-total_rows // X.shape[0]))
        start_cpu = time.process_time()
        for _ in range(repeats):
            gram = X.T @ X
        sustained = repeats * X.shape[0] / (time.process_time() - start_cpu)
    assert np.isfinite(gram).all()
    return X.shape[0] / best, X.shape[0] / cpu, sustained


def breakdown(folder: Path, rows: int, base_cpu: float) -> None:
    """CPU nanoseconds per row of each step of the per-part work, on one thread, in this
    process, on the first parts (about ``rows`` records)."""
    import fsspec
    import pyarrow as pa
    import pyarrow.parquet as pq
    from threadpoolctl import threadpool_limits

    from dpggm.data import dask_records
    from dpggm.data.passes import ClippedSums
    from dpggm.mechanisms.bounds import RowNorm

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    paths, count = [], 0
    for path in sorted(folder.glob("*.parquet")):
        paths.append(str(path))
        count += pq.ParquetFile(path).metadata.num_rows
        if count >= rows:
            break
    names = pq.ParquetFile(paths[0]).schema_arrow.names
    p = len(names)
    local = fsspec.filesystem("file")
    sums = ClippedSums(RowNorm(BOUND))
    rows_per_block = dask_records._pass_rows(p)

    buffer = bytearray(16 << 20)
    every = sorted(folder.glob("*.parquet"))
    total = sum(pq.ParquetFile(path).metadata.num_rows for path in every)

    def read_bytes(files: list[Any] = paths) -> None:
        for path in files:
            with open(path, "rb", buffering=0) as handle:
                while handle.readinto(buffer):
                    pass

    def decode() -> None:
        for path in paths:
            with pq.ParquetFile(path, memory_map=True) as reader:
                for batch in reader.iter_batches(batch_size=rows_per_block, columns=names,
                                                 use_threads=False):
                    [batch.column(j).to_numpy(zero_copy_only=False) for j in range(p)]

    def whole() -> None:
        for k, path in enumerate(paths):
            dask_records._parquet_pass(path, None, k, local, names, sums)

    columns = [c.to_numpy() for c in pq.read_table(paths[0], columns=names).columns]
    n_first = len(columns[0])

    def blocks() -> None:
        dask_records._run_columns(sums, 0, p, [columns])

    work = np.asfortranarray(np.stack([c[:rows_per_block] for c in columns], axis=1))

    def product_only() -> None:
        gram = np.zeros((p, p))
        for _ in range(0, n_first, rows_per_block):
            gram += work.T @ work

    base_ns = 1e9 / base_cpu
    with threadpool_limits(limits=1):
        cold = [Path(path) for path in paths]
        steps = [(f"read all {len(every)} files' bytes from disk, nothing else (cold page "
                  "cache, os.readinto)", lambda: read_bytes(every), total, every),
                 ("read the first files' bytes from disk, nothing else (cold page cache)",
                  read_bytes, count, cold),
                 ("per-part work without Dask, files read from disk (cold page cache)",
                  whole, count, cold),
                 ("per-part work without Dask, files in the page cache (decode, copy, "
                  "check, clip, product)", whole, count, None),
                 ("pyarrow decode alone, files in the page cache (Parquet -> NumPy "
                  "columns)", decode, count, None),
                 ("block work alone on columns in memory (copy, check, clip, product)",
                  blocks, n_first, None),
                 (f"Z^T Z alone on a cached {rows_per_block} x {p} block", product_only,
                  n_first, None)]
        print(f"where the time goes (CPU time, user + system, one thread, first {count:,} "
              f"rows; baseline {base_ns:.0f} ns/row):")
        for label, task, n, files in steps:
            ns = _best_cpu(task, repeat=1 if n > 4 * count else 3,
                           before=None if files is None else (lambda f=files: evict(f))
                           ) / n * 1e9
            print(f"  {label}: {ns:.0f} ns/row = {ns / base_ns:.2f} x baseline")


def _one_thread() -> None:
    import dask.dataframe  # noqa: F401
    import pyarrow as pa
    import pyarrow.parquet

    import dpggm.data.dask_records  # noqa: F401

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--part-rows", type=int, default=250_000)
    parser.add_argument("--workers", type=int, default=2, help="cores used")
    parser.add_argument("--threads", action="store_true",
                        help="one worker process with --workers threads")
    parser.add_argument("--memory-limit", default="2GB", help="per worker")
    parser.add_argument("--slice-rows", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=None, help="existing parts to reuse")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--required", action="store_true",
                        help="write the columns as non-nullable (no definition levels)")
    parser.add_argument("--breakdown-rows", type=int, default=1_000_000)
    parser.add_argument("--worker-profiler", action="store_true",
                        help="keep Dask's statistical profiler on in the workers")
    args = parser.parse_args()

    import dask
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from dpggm.data.records import clipped_second_moment
    from dpggm.mechanisms.bounds import RowNorm

    reuse = args.data is not None and any(args.data.glob("*.parquet"))
    folder = args.data or Path(tempfile.mkdtemp(prefix="dpggm-dask-bench-", dir="/tmp"))
    try:
        if not reuse:
            folder.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            parts = write_parts(folder, args.rows, args.features, args.part_rows,
                                args.required)
            print(f"wrote {parts} parts to {folder} in {time.perf_counter() - start:.0f} s")
        size = sum(p.stat().st_size for p in folder.glob("*.parquet"))
        print(f"data set: {args.rows:,} x {args.features} "
              f"({args.rows * args.features * 8 / 1e9:.1f} GB as float64; "
              f"{size / 1e9:.1f} GB of Parquet)")

        # The workers' statistical profiler (a diagnostic sampling every thread's stack
        # every 10 ms) took a fifth or more of the workers' CPU time here; off by default.
        dask.config.set({"distributed.worker.profile.enabled": args.worker_profiler})
        print(f"Dask worker profiler: {'on' if args.worker_profiler else 'off'}")
        # --threads: one worker process with a thread per core (BLAS and pyarrow's decode
        # release the GIL); otherwise one single-threaded worker process per core.
        processes, threads = (1, args.workers) if args.threads else (args.workers, 1)
        with LocalCluster(n_workers=processes, threads_per_worker=threads, processes=True,
                          memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            # One core per worker: pyarrow's own thread pools would oversubscribe the cores
            # (and make "per core" meaningless); workers import dpggm before the clock starts.
            client.run(_one_thread)
            frame = dd.read_parquet(str(folder / "*.parquet"))
            # The data set does not fit in memory: it is read from disk, not from the cache.
            evict(sorted(folder.glob("*.parquet")))
            cpu_before = client.run(_cpu_times)
            start = time.perf_counter()
            stats = clipped_second_moment(frame, bounds=RowNorm(BOUND))
            seconds = time.perf_counter() - start
            cpu_after = client.run(_cpu_times)
            user = sum(cpu_after[w][0] - cpu_before[w][0] for w in cpu_after)
            system = sum(cpu_after[w][1] - cpu_before[w][1] for w in cpu_after)
            cpu = user + system

            def peak() -> int:
                import resource

                return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

            peaks = client.run(peak)
        assert stats.n == args.rows, stats.n
        rate = stats.n / seconds
        print(f"dask ({processes} worker process(es) x {threads} thread(s)): {seconds:.1f} s, "
              f"{rate:,.0f} rows/s, "
              f"{rate / args.workers:,.0f} rows/s per core; clipped {stats.n_clipped:,} rows")
        print(f"  worker CPU time {cpu:.1f} s (user {user:.1f} s, system {system:.1f} s: the "
              f"kernel reading the files): {stats.n / cpu:,.0f} rows per CPU-second (robust "
              "to other load on the machine)")
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

        base, base_cpu, base_sustained = baseline_rows_per_second(folder, args.slice_rows,
                                                                  stats.n)
        print(f"baseline: bare NumPy X.T @ X on an in-memory {args.slice_rows:,}-row slice, "
              f"1 thread: {base:,.0f} rows/s, {base_cpu:,.0f} rows per CPU-second (best of "
              f"3); {base_sustained:,.0f} rows per CPU-second sustained over {stats.n:,} rows")
        dask_cpu = stats.n / cpu
        print(f"throughput ratio per core (baseline / dask), CPU time: "
              f"{base_sustained / dask_cpu:.2f} (sustained baseline, same amount of work), "
              f"{base_cpu / dask_cpu:.2f} (best-of-3 baseline); wall clock: "
              f"{base / (rate / args.workers):.2f} (target <= 1.5)")
        breakdown(folder, args.breakdown_rows, base_cpu)
    finally:
        if not args.keep and not reuse:
            shutil.rmtree(folder, ignore_errors=True)
            print(f"deleted {folder}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
