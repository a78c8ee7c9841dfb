"""Passes over the records: histograms on public grids and clipped sums, merged by addition.

A pipeline of private releases whose later steps depend on earlier released values (the
clipping ranges, then the row-norm bound, then the mean and the second moment) needs one
pass over the records per step. Each pass is a :class:`PassTask`: it starts an empty state
for ``p`` columns, adds blocks of records to it, and merges two states by addition. The
same task runs over

* an array in memory (:class:`ArrayRecords`), block by block;
* a CSV or Parquet file (:class:`FileRecords`): the first pass parses the file once (the
  costly part) and keeps the parsed blocks -- in memory when they are small, otherwise in
  an owner-only temporary file that is deleted when the records are closed -- so that
  later passes read binary blocks;
* a Dask collection (:mod:`dpggm.estimators._dask`), partition by partition on the
  workers, with a tree reduction.

Every state holds exact counts and sums of the curator's records; nothing here adds noise
or is released as is.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.linalg.blas import dsyrk

from dpggm.estimators import _count_kernels as kernels

__all__ = [
    "ArrayRecords",
    "FileRecords",
    "Moments",
    "MomentsState",
    "NormCounts",
    "PassTask",
    "Shifted",
    "ValueCounts",
    "grid_parameters",
    "open_records",
    "prefetched",
]

#: Rows per block: a block of ``BLOCK_ROWS x p`` float64 stays in cache between the steps
#: of a pass for moderate ``p``.
BLOCK_ROWS = 16384

#: Parsed blocks waiting to be counted while the next one is parsed (each about
#: ``TableFile.block_size`` bytes of values).
PARSE_AHEAD = 1

#: A pass over parsed blocks deals them into this many states, merged at the end...
PASS_SPLIT = 2
#: ... filled by this many threads.
PASS_WORKERS = min(PASS_SPLIT, os.cpu_count() or 1)

#: Parsed file blocks are kept in memory up to this many bytes, beyond it in a temporary
#: file (so a file larger than memory is read with memory O(p^2 + one block)).
MEMORY_LIMIT = 64 << 20


def grid_parameters(edges: np.ndarray, kind: int) -> tuple[float, float, int]:
    """``(log2 of the first positive edge, points per octave, number of positive edges)``
    of a geometric grid (ignored for linear grids)."""
    edges = np.asarray(edges, dtype=float)
    if kind == kernels.LINEAR:
        return 0.0, 1.0, 0
    positive = edges[edges > 0] if edges.ndim == 1 else edges[0][edges[0] > 0]
    if positive.size < 2:
        raise ValueError("a geometric grid needs at least two positive edges")
    per_octave = 1.0 / float(np.log2(positive[1] / positive[0]))
    return float(np.log2(positive[0])), float(round(per_octave, 9)), int(positive.size)


class PassTask:
    """One pass: ``new(p)`` an empty state, ``add(state, block)`` a block of records
    (float64, ``m x p``, column-major), ``merge(a, b)`` two states; ``finish(state)``."""

    def new(self, p: int) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def add(self, state: Any, block: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def finish(self, state: Any) -> Any:
        return state


@dataclass
class CountState:
    """Bucket counts per column, values counted apart (missing, tied), and rows seen."""

    counts: np.ndarray
    missing: np.ndarray
    tied: np.ndarray
    rows: int = 0

    def below(self) -> np.ndarray:
        """``below[j, k] = #{values of column j < edges[k]}``."""
        return np.cumsum(self.counts, axis=1)[:, :-1]

    @property
    def counted(self) -> np.ndarray:
        return self.rows - self.missing


@dataclass(frozen=True)
class ValueCounts(PassTask):
    """Counts of every column's values (or, with ``centres``, of ``|x_j - centres[j]|``)
    below every edge of a public grid: one row of ``edges`` for all columns or one per
    column. With ``tie_radius`` the deviations below ``tie_radius[j]`` are counted apart."""

    edges: np.ndarray
    kind: int
    centres: np.ndarray | None = None
    tie_radius: np.ndarray | None = None
    _grid: tuple[float, float, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        edges = np.atleast_2d(np.asarray(self.edges, dtype=float))
        object.__setattr__(self, "edges", np.ascontiguousarray(edges))
        object.__setattr__(self, "_grid", grid_parameters(edges, self.kind))
        if self.centres is not None:
            object.__setattr__(self, "centres", np.ascontiguousarray(self.centres, dtype=float))
        if self.tie_radius is not None:
            object.__setattr__(self, "tie_radius",
                               np.ascontiguousarray(self.tie_radius, dtype=float))

    def new(self, p: int) -> CountState:
        k = self.edges.shape[1]
        return CountState(np.zeros((p, k + 1), dtype=np.int64), np.zeros(p, dtype=np.int64),
                          np.zeros(p, dtype=np.int64))

    def add(self, state: CountState, block: np.ndarray) -> None:
        p = block.shape[1]
        deviation = self.centres is not None
        centres = self.centres if deviation else np.zeros(p)
        radius = self.tie_radius if self.tie_radius is not None else np.full(p, -1.0)
        log_first, per_octave, half = self._grid
        kernels.bucket_counts(block, self.edges, self.kind, log_first, per_octave, half,
                              centres, deviation, state.counts, state.missing, radius,
                              state.tied)
        state.rows += block.shape[0]

    def merge(self, a: CountState, b: CountState) -> CountState:
        return CountState(a.counts + b.counts, a.missing + b.missing, a.tied + b.tied,
                          a.rows + b.rows)


@dataclass(frozen=True)
class Ranges:
    """Released per-column ranges as the kernels use them (``lower, upper, centre, half``,
    computed as :class:`~dpggm.mechanisms.private_bounds.PrivateRanges` does)."""

    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "lower", np.ascontiguousarray(self.lower, dtype=float))
        object.__setattr__(self, "upper", np.ascontiguousarray(self.upper, dtype=float))

    @property
    def centre(self) -> np.ndarray:
        return (self.lower + self.upper) / 2

    @property
    def half(self) -> np.ndarray:
        return (self.upper - self.lower) / 2


@dataclass
class NormState:
    counts: np.ndarray
    rows: int = 0

    def below(self) -> np.ndarray:
        return np.cumsum(self.counts)[:-1]


@dataclass(frozen=True)
class NormCounts(PassTask):
    """Counts of the rescaled rows' l2 norms below every edge of a positive geometric
    grid."""

    ranges: Ranges
    edges: np.ndarray

    def new(self, p: int) -> NormState:
        return NormState(np.zeros(np.asarray(self.edges).size + 1, dtype=np.int64))

    def add(self, state: NormState, block: np.ndarray) -> None:
        edges = np.atleast_2d(np.asarray(self.edges, dtype=float))
        log_first, per_octave, _ = grid_parameters(edges, kernels.GEOMETRIC)
        r = self.ranges
        kernels.rescaled_norm_counts(block, r.lower, r.upper, r.centre, r.half, edges,
                                     log_first, per_octave, state.counts,
                                     np.empty(block.shape[0]))
        state.rows += block.shape[0]

    def merge(self, a: NormState, b: NormState) -> NormState:
        return NormState(a.counts + b.counts, a.rows + b.rows)


@dataclass
class MomentsState:
    """Upper triangle of ``[Z, 1]^T [Z, 1]`` (``Z^T Z``, column sums, count) of the
    transformed records, and curator-only clipping counts: rows with a value outside its
    range or declared bound (``outside_rows``, by column in ``outside_by_column``), rows
    shrunk onto the norm bound (``over_norm``) and rows changed either way."""

    gram: np.ndarray
    rows: int = 0
    outside_by_column: np.ndarray | None = None
    outside_rows: int = 0
    over_norm: int = 0
    changed_rows: int = 0

    def second_moment_sums(self) -> tuple[np.ndarray, np.ndarray, int]:
        """``(Z^T Z, Z^T 1, n)`` with the lower triangle mirrored."""
        p = self.gram.shape[0] - 1
        upper = np.triu(self.gram[:p, :p])
        return upper + np.triu(upper, 1).T, self.gram[:p, p].copy(), self.rows


def norm_clip_factors(squared: np.ndarray, z: np.ndarray, bound: float) -> np.ndarray | None:
    """The factors that shrink the rows ``z`` (squared norms ``squared``) onto the l2 ball
    of radius ``bound``, by the rule of :meth:`dpggm.mechanisms.bounds.RowNorm.clip`; 1 for
    the rows left alone, ``None`` when no row is over.

    The rule: rows clearly inside are kept; rows within the rounding error of the bound
    (``margin = 4 (p + 4) eps``) are settled exactly, in rationals; rows over it are
    rescaled onto ``(1 - 2 margin) bound``, whose exact norm is then below the bound. The
    squared norms may come from any summation order: their error is far inside the
    margin, so the rows shrunk are the same.
    """
    p = z.shape[1]
    margin = 4.0 * (p + 4) * np.finfo(float).eps
    b2 = bound**2
    over = squared > b2 * (1.0 + margin)
    near = np.flatnonzero((squared > b2 * (1.0 - margin)) & ~over)
    if near.size:
        exact_b2 = Fraction(bound) ** 2
        for i in near:
            if sum((Fraction(float(v)) ** 2 for v in z[i]), Fraction(0)) > exact_b2:
                over[i] = True
    if not over.any():
        return None
    target = bound * (1.0 - 2.0 * margin)
    factor = np.ones(squared.shape[0])
    factor[over] = target / np.sqrt(squared[over])
    return factor


@dataclass(frozen=True)
class Moments(PassTask):
    """Clipped sums of the records: rescaled by ``ranges`` (if any), clipped to
    ``norm_bound`` (if any) or to ``box`` (declared per-column bounds, if any), then
    ``Z^T Z``, ``Z^T 1`` and the count in one BLAS ``dsyrk`` per block of
    :data:`BLOCK_ROWS` rows (which stays in cache between the steps)."""

    ranges: Ranges | None = None
    norm_bound: float | None = None
    declared: Any = None

    def __post_init__(self) -> None:
        if self.ranges is not None and self.declared is not None:
            raise ValueError("Moments takes released ranges or declared bounds, not both")

    def new(self, p: int) -> MomentsState:
        return MomentsState(np.zeros((p + 1, p + 1), order="F"),
                            outside_by_column=np.zeros(p, dtype=np.int64))

    def add(self, state: MomentsState, block: np.ndarray) -> None:
        m, p = block.shape
        work = np.empty((min(m, BLOCK_ROWS), p + 1), order="F")
        work[:, p] = 1.0
        squared = np.empty(work.shape[0])
        outside = np.empty(work.shape[0], dtype=np.bool_)
        for start in range(0, m, BLOCK_ROWS):
            part = block[start:start + BLOCK_ROWS]
            rows = part.shape[0]
            buffer = work[:rows]
            if self.ranges is not None:
                self._rescaled(state, part, buffer, squared[:rows], outside[:rows])
            else:
                self._declared(state, part, buffer)
            state.gram = dsyrk(1.0, buffer, beta=1.0, c=state.gram, trans=1,
                               overwrite_c=True)
        state.rows += m

    def _rescaled(self, state: MomentsState, part: np.ndarray, buffer: np.ndarray,
                  squared: np.ndarray, outside: np.ndarray) -> None:
        """Rescale by the ranges (and count what falls outside them), then shrink the
        rows over the norm bound; in place in ``buffer``."""
        p = part.shape[1]
        r = self.ranges
        kernels.rescale_rows(part, r.lower, r.upper, r.centre, r.half, buffer,
                             state.outside_by_column, outside, squared)
        changed = outside
        if self.norm_bound is not None:
            factor = norm_clip_factors(squared, buffer[:, :p], self.norm_bound)
            if factor is not None:
                kernels.scale_rows(buffer, factor, p)
                over = factor != 1.0
                state.over_norm += int(np.count_nonzero(over))
                changed = outside | over
        state.outside_rows += int(np.count_nonzero(outside))
        state.changed_rows += int(np.count_nonzero(changed))

    def _declared(self, state: MomentsState, part: np.ndarray, buffer: np.ndarray) -> None:
        """Copy the records and clip them to the declared bounds (if any), then to the norm
        bound (if any)."""
        p = part.shape[1]
        z = buffer[:, :p]
        z[...] = part
        changed = np.zeros(part.shape[0], dtype=bool)
        if self.declared is not None:
            before = z.copy(order="F")
            self.declared.clip(z, in_place=True)
            moved = z != before
            state.outside_by_column += moved.sum(axis=0)
            changed = moved.any(axis=1)
            state.outside_rows += int(np.count_nonzero(changed))
        if self.norm_bound is not None:
            factor = norm_clip_factors(np.einsum("ij,ij->i", z, z), z, self.norm_bound)
            if factor is not None:
                kernels.scale_rows(buffer, factor, p)
                over = factor != 1.0
                state.over_norm += int(np.count_nonzero(over))
                changed |= over
        state.changed_rows += int(np.count_nonzero(changed))

    def merge(self, a: MomentsState, b: MomentsState) -> MomentsState:
        return MomentsState(a.gram + b.gram, a.rows + b.rows,
                            a.outside_by_column + b.outside_by_column,
                            a.outside_rows + b.outside_rows, a.over_norm + b.over_norm,
                            a.changed_rows + b.changed_rows)


@dataclass(frozen=True)
class Shifted(PassTask):
    """``task`` on the records minus a public ``shift`` (a public mean, say)."""

    task: PassTask
    shift: np.ndarray

    def new(self, p: int) -> Any:
        return self.task.new(p)

    def add(self, state: Any, block: np.ndarray) -> None:
        if block.shape[1] != self.shift.shape[0]:
            raise ValueError(
                f"center must be a finite public mean vector of length {block.shape[1]}; got "
                f"length {self.shift.shape[0]}"
            )
        shifted = np.empty(block.shape, order="F")
        np.subtract(block, self.shift, out=shifted)
        self.task.add(state, shifted)

    def merge(self, a: Any, b: Any) -> Any:
        return self.task.merge(a, b)

    def finish(self, state: Any) -> Any:
        return self.task.finish(state)


# ------------------------------------------------------------------------------ sources


class ArrayRecords:
    """Records in memory, passed block by block."""

    def __init__(self, values: np.ndarray, columns: list[str]) -> None:
        self.values = values
        self.columns = list(columns)
        self.n_samples, self.n_features = values.shape

    def blocks(self) -> Iterator[np.ndarray]:
        for start in range(0, self.n_samples, BLOCK_ROWS):
            yield np.asfortranarray(self.values[start:start + BLOCK_ROWS], dtype=float)

    def run(self, task: PassTask) -> Any:
        count = -(-self.n_samples // BLOCK_ROWS)

        def read(index: int, worker: int) -> np.ndarray:
            start = index * BLOCK_ROWS
            return np.asfortranarray(self.values[start:start + BLOCK_ROWS], dtype=float)

        return run_split(task, self.n_features, count, read)

    def close(self) -> None:
        return None

    def __enter__(self) -> ArrayRecords:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def run_split(task: PassTask, p: int, count: int,
              read: Callable[[int, int], np.ndarray], *, workers: int | None = None) -> Any:
    """``task`` over the blocks ``read(index, worker)`` for ``index < count``.

    The blocks are dealt into :data:`PASS_SPLIT` states (block ``i`` to state
    ``i mod PASS_SPLIT``), merged in order at the end, so the sums do not depend on the
    number of threads or their timing; ``workers`` threads (default
    :data:`PASS_WORKERS`) share the states out (the kernels release the GIL)."""
    workers = max(1, min(PASS_WORKERS if workers is None else workers, PASS_SPLIT))
    states = [task.new(p) for _ in range(PASS_SPLIT)]
    failures: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for share in range(worker, PASS_SPLIT, workers):
                for index in range(share, count, PASS_SPLIT):
                    if failures:
                        return
                    task.add(states[share], read(index, worker))
        except BaseException as exc:  # re-raised in the calling thread
            failures.append(exc)

    if workers == 1:
        work(0)
    else:
        threads = [threading.Thread(target=work, args=(w,), name=f"dpggm-pass-{w}",
                                    daemon=True) for w in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if failures:
        raise failures[0]
    state = states[0]
    for other in states[1:]:
        state = task.merge(state, other)
    return task.finish(state)


def release_free_memory() -> None:
    """Hand the free memory of pyarrow's pool and of the C heap back to the system
    (glibc's ``malloc_trim``; nothing on other C libraries): the blocks of a large file,
    parsed by several threads, leave free but fragmented memory behind that would
    otherwise stay counted against the process."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    try:
        import ctypes

        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def prefetched(items: Iterator[Any], *, depth: int = 2, name: str = "dpggm-read") -> Iterator[Any]:
    """The items of ``items``, produced by a background thread at most ``depth`` ahead.

    A block is parsed (pyarrow, which releases the GIL) while the previous one is counted
    (numba kernels, which release it too). An error in the producer is raised here; when
    the consumer stops early the producer is stopped and ``items`` closed.
    """
    handoff: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                handoff.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((False, item)):
                    return
            put((True, None))
        except BaseException as exc:  # handed to the consumer, which raises it
            put((True, exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=produce, name=name, daemon=True)
    worker.start()
    try:
        while True:
            done, item = handoff.get()
            if done:
                if item is not None:
                    raise item
                return
            yield item
            del item
    finally:
        stop.set()
        while worker.is_alive():
            try:
                handoff.get(timeout=0.05)
            except queue.Empty:
                pass
        worker.join()


class _Recycler:
    """Column-major matrices for the parser, drawn from buffers handed back once their
    block is counted and written: parsing a large file then allocates a handful of
    blocks, not one per block (repeated large allocations fragment the heap, which then
    keeps the memory)."""

    def __init__(self) -> None:
        self._free: queue.SimpleQueue[np.ndarray] = queue.SimpleQueue()
        self._owner: dict[int, np.ndarray] = {}

    def matrix(self, rows: int, width: int) -> np.ndarray:
        size = rows * width
        try:
            flat = self._free.get_nowait()
            if flat.size < size:
                flat = np.empty(size + size // 8)
        except queue.Empty:
            flat = np.empty(size + size // 8)
        block = flat[:size].reshape(width, rows).T
        self._owner[id(block)] = flat
        return block

    def give_back(self, block: np.ndarray) -> None:
        flat = self._owner.pop(id(block), None)
        if flat is not None:
            self._free.put(flat)


class _SpillWriter:
    """Appends blocks to the temporary file from a background thread (a throttled disk
    then delays the parsing only when it falls ``depth`` blocks behind), and hands each
    written block's buffer back to the recycler.

    Column-major bytes: a block reads back as a column-major ``m x p`` array; the
    transpose of a column-major block is C-contiguous, so it is written without a copy.
    """

    def __init__(self, path: str, recycler: _Recycler, *, depth: int = 2) -> None:
        self._handle = open(path, "wb", buffering=0)
        self._recycler = recycler
        self._queue: queue.Queue[np.ndarray | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name="dpggm-spill", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            block = self._queue.get()
            if block is None:
                return
            if self._error is None:
                try:
                    data = memoryview(np.asfortranarray(block).T).cast("B")
                    written = 0
                    while written < len(data):
                        written += self._handle.write(data[written:])
                except BaseException as exc:  # raised in the reading thread
                    self._error = exc
            self._recycler.give_back(block)
            del block

    def put(self, block: np.ndarray) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(block)

    def close(self, *, raising: bool = True) -> None:
        self._queue.put(None)
        self._thread.join()
        self._handle.close()
        if raising and self._error is not None:
            raise self._error


class FileRecords:
    """A CSV or Parquet file: parsed once, on the first pass, into float64 blocks kept in
    memory (up to :data:`MEMORY_LIMIT` bytes) or in an owner-only temporary file deleted by
    :meth:`close`.

    The first pass parses the next block in a background thread while it counts the
    current one and appends it, as it is, to the temporary file (column-major bytes, no
    copy). Later passes read the file block by block into one reused buffer. A file larger
    than the memory limit goes to the temporary file from its first block, so memory stays
    O(p^2 + one block) whatever the number of records.

    ``n_samples`` and ``columns`` are known after the first pass (:meth:`parse`).
    ``scratch`` is the directory of the temporary file (default: the system's temporary
    directory, ``TMPDIR``): it needs room for ``8 n p`` bytes.

    Privacy
    -------
    The temporary file holds the parsed private records: it is created in a fresh
    directory of mode 0700 (:func:`tempfile.mkdtemp`) and removed when the records are
    closed, also on errors.
    """

    def __init__(self, source: Any, *, memory_limit: int | None = None,
                 scratch: str | os.PathLike | None = None) -> None:
        self.source = source
        self.memory_limit = int(MEMORY_LIMIT if memory_limit is None else memory_limit)
        if scratch is None:
            scratch = getattr(source, "scratch", None)
        self.scratch = scratch
        self.columns: list[str] = []
        self.n_samples = 0
        self.n_features = 0
        self._kept: list[np.ndarray] = []
        self._kept_bytes = 0
        self._spill_dir: str | None = None
        self._spill_rows: list[int] = []
        self._parsed = False

    def _spill_path(self) -> str:
        assert self._spill_dir is not None
        return os.path.join(self._spill_dir, "records.f64")

    def _file_bytes(self) -> int:
        path = getattr(self.source, "path", self.source)
        try:
            return os.path.getsize(path)
        except (OSError, TypeError):
            return 0

    def _open_spill(self, recycler: _Recycler) -> _SpillWriter:
        self._spill_dir = tempfile.mkdtemp(prefix="dpggm-records-", dir=self.scratch)
        return _SpillWriter(self._spill_path(), recycler)

    def _keep(self, block: np.ndarray, writer: _SpillWriter | None,
              recycler: _Recycler) -> _SpillWriter | None:
        """Keep one parsed block; move everything to the temporary file once the blocks
        kept in memory pass the limit."""
        if writer is None and self._kept_bytes + block.nbytes <= self.memory_limit:
            self._kept.append(block)
            self._kept_bytes += block.nbytes
            return None
        if writer is None:
            writer = self._open_spill(recycler)
            for kept in self._kept:
                writer.put(kept)
                self._spill_rows.append(kept.shape[0])
            self._kept = []
            self._kept_bytes = 0
        writer.put(block)
        self._spill_rows.append(block.shape[0])
        return writer

    def parse(self, task: PassTask | None = None) -> Any:
        """The first pass: parse the file, keep its blocks, and run ``task`` on them."""
        from dpggm.estimators.data import iter_chunks

        state = None
        recycler = _Recycler()
        writer = None
        try:
            if self._file_bytes() > self.memory_limit:
                writer = self._open_spill(recycler)
            chunks = prefetched(iter_chunks(self.source, matrix=recycler.matrix),
                                depth=PARSE_AHEAD, name="dpggm-parse")
            with contextlib.closing(chunks):
                for block, columns, _ in chunks:
                    if self.n_features == 0:
                        self.columns = list(columns)
                        self.n_features = block.shape[1]
                        state = task.new(self.n_features) if task is not None else None
                    if task is not None:
                        task.add(state, block)
                    self.n_samples += block.shape[0]
                    writer = self._keep(block, writer, recycler)
                    del block
            if writer is not None:
                writer.close()
        except BaseException:
            if writer is not None:
                writer.close(raising=False)
            self.close()
            raise
        self._parsed = True
        return None if task is None else task.finish(state)

    def blocks(self) -> Iterator[np.ndarray]:
        """The parsed blocks (column-major ``m x p``). A block read from the temporary
        file lives in a reused buffer: it is valid until the next block is requested."""
        if not self._parsed:
            raise RuntimeError("parse() must run first")
        if self._spill_dir is None:
            yield from self._kept
            return
        p = self.n_features
        buffer = np.empty(max(self._spill_rows, default=0) * p)
        with open(self._spill_path(), "rb", buffering=0) as handle:
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
            for rows in self._spill_rows:
                flat = buffer[:rows * p]
                view = memoryview(flat).cast("B")
                done = 0
                while done < len(view):
                    count = handle.readinto(view[done:])
                    if not count:
                        raise OSError(f"the temporary file {self._spill_path()} was truncated")
                    done += count
                yield flat.reshape(p, rows).T

    def run(self, task: PassTask) -> Any:
        if not self._parsed:
            return self.parse(task)
        p = self.n_features
        if self._spill_dir is None:
            return run_split(task, p, len(self._kept),
                             lambda index, worker: self._kept[index])
        offsets = np.concatenate([[0], np.cumsum(self._spill_rows)]) * (8 * p)
        buffers: dict[int, np.ndarray] = {}
        with open(self._spill_path(), "rb", buffering=0) as handle:
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
            descriptor = handle.fileno()
            largest = max(self._spill_rows, default=0) * p

            def read(index: int, worker: int) -> np.ndarray:
                # Each worker reads into its own buffer, at the block's offset.
                buffer = buffers.get(worker)
                if buffer is None:
                    buffer = buffers[worker] = np.empty(largest)
                rows = self._spill_rows[index]
                flat = buffer[:rows * p]
                view = memoryview(flat).cast("B")
                done = 0
                while done < len(view):
                    count = os.preadv(descriptor, [view[done:]], int(offsets[index]) + done)
                    if not count:
                        raise OSError(f"the temporary file {self._spill_path()} was truncated")
                    done += count
                return flat.reshape(p, rows).T

            return run_split(task, p, len(self._spill_rows), read)

    def close(self) -> None:
        had_blocks = self._parsed or bool(self._kept)
        self._kept = []
        self._kept_bytes = 0
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None
        if had_blocks:
            release_free_memory()

    def __enter__(self) -> FileRecords:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_records(X: Any, *, name: str = "X") -> Any:
    """The records of ``X`` as a pass source: :class:`FileRecords` for a path or
    :class:`~dpggm.estimators.data.TableFile`, the Dask source for a Dask collection,
    :class:`ArrayRecords` otherwise (validated by
    :func:`~dpggm.estimators.data.as_matrix`)."""
    from dpggm.estimators.data import _is_path, as_matrix, is_dask_collection

    if is_dask_collection(X):
        from dpggm.estimators._dask import DaskRecords

        return DaskRecords(X, name=name)
    if _is_path(X):
        return FileRecords(X)
    values, columns = as_matrix(X, name=name)
    return ArrayRecords(values, columns)
