"""Passes over the records: histograms on public grids and clipped sums, merged by addition.

A pipeline of private releases whose later steps depend on earlier released values (the
clipping ranges, then the row-norm bound, then the mean and the second moment) needs one
pass over the records per step. Each pass is a :class:`PassTask`: it starts an empty state
for ``p`` columns, adds blocks of records to it, and merges two states by addition. The
same task runs over

* an array in memory (:class:`ArrayRecords`), block by block;
* a CSV or Parquet file (:class:`FileRecords`): parsed once (the costly part), in a
  background thread, into blocks kept in memory when they are small, otherwise in an
  owner-only temporary file deleted when the records are closed; every pass reads the
  blocks as they arrive (the first one follows the parsing), later passes read binary
  blocks;
* a Dask collection (:mod:`dpggm.data.dask_records`), partition by partition on the
  workers, with a tree reduction.

A pass over blocks in memory or in the temporary file deals them into :data:`PASS_SPLIT`
states filled by up to as many threads (:func:`run_split`) and merged in order, so its
sums do not depend on the threads.

Every state holds exact counts and sums of the curator's records; nothing here adds noise
or is released as is.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import queue
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "ArrayRecords",
    "FileRecords",
    "Moments",
    "MomentsState",
    "NormCounts",
    "PassTask",
    "Shifted",
    "ValueCounts",
    "block_rows",
    "grid_parameters",
    "open_records",
    "reading_ahead",
    "run_split",
]

#: Rows per block, at most: a block of ``BLOCK_ROWS x p`` float64 stays in cache between
#: the steps of a pass for moderate ``p``...
BLOCK_ROWS = 16384
#: ... and at most about this many bytes for large ``p`` (see :func:`block_rows`).
BLOCK_BYTES = 4 << 20


def block_rows(p: int) -> int:
    """Rows per block of ``p`` columns: :data:`BLOCK_ROWS`, fewer for wide records so that a
    block holds about :data:`BLOCK_BYTES` (at least 256 rows)."""
    return int(max(256, min(BLOCK_ROWS, BLOCK_BYTES // (8 * max(p, 1)))))

#: A pass over parsed blocks deals them into this many states, merged at the end...
PASS_SPLIT = 2
#: ... filled by this many threads.
PASS_WORKERS = min(PASS_SPLIT, os.cpu_count() or 1)

#: Parsed file blocks are kept in memory up to this many bytes, beyond it in a temporary
#: file (so a file larger than memory is read with memory O(p^2 + a few blocks)).
MEMORY_LIMIT = 64 << 20


def _kernels() -> Any:
    """The compiled kernels, imported on first use: reading a file starts before numba
    and SciPy are loaded (the command line overlaps the parsing with those imports)."""
    from dpggm.data import kernels

    return kernels


def grid_parameters(edges: np.ndarray, kind: int) -> tuple[float, float, int]:
    """``(log2 of the first positive edge, points per octave, number of positive edges)``
    of a geometric grid (ignored for linear grids)."""
    edges = np.asarray(edges, dtype=float)
    if kind == _kernels().LINEAR:
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
    """Counts of every column's values (or, with ``centers``, of ``|x_j - centers[j]|``)
    below every edge of a public grid: one row of ``edges`` for all columns or one per
    column. With ``tie_radius`` the deviations below ``tie_radius[j]`` are counted apart."""

    edges: np.ndarray
    kind: int
    centers: np.ndarray | None = None
    tie_radius: np.ndarray | None = None
    _grid: tuple[float, float, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        edges = np.atleast_2d(np.asarray(self.edges, dtype=float))
        object.__setattr__(self, "edges", np.ascontiguousarray(edges))
        object.__setattr__(self, "_grid", grid_parameters(edges, self.kind))
        if self.centers is not None:
            object.__setattr__(self, "centers", np.ascontiguousarray(self.centers, dtype=float))
        if self.tie_radius is not None:
            object.__setattr__(self, "tie_radius",
                               np.ascontiguousarray(self.tie_radius, dtype=float))

    def new(self, p: int) -> CountState:
        k = self.edges.shape[1]
        return CountState(np.zeros((p, k + 1), dtype=np.int64), np.zeros(p, dtype=np.int64),
                          np.zeros(p, dtype=np.int64))

    def add(self, state: CountState, block: np.ndarray) -> None:
        p = block.shape[1]
        deviation = self.centers is not None
        centers = self.centers if deviation else np.zeros(p)
        radius = self.tie_radius if self.tie_radius is not None else np.full(p, -1.0)
        log_first, per_octave, half = self._grid
        _kernels().bucket_counts(block, self.edges, self.kind, log_first, per_octave, half,
                              centers, deviation, state.counts, state.missing, radius,
                              state.tied)
        state.rows += block.shape[0]

    def merge(self, a: CountState, b: CountState) -> CountState:
        return CountState(a.counts + b.counts, a.missing + b.missing, a.tied + b.tied,
                          a.rows + b.rows)


@dataclass(frozen=True)
class Ranges:
    """Released per-column ranges as the kernels use them (``lower, upper, center, half``,
    computed as :class:`~dpggm.mechanisms.private_bounds.PrivateRanges` does)."""

    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "lower", np.ascontiguousarray(self.lower, dtype=float))
        object.__setattr__(self, "upper", np.ascontiguousarray(self.upper, dtype=float))

    @property
    def center(self) -> np.ndarray:
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
        kernels = _kernels()
        log_first, per_octave, _ = grid_parameters(edges, kernels.GEOMETRIC)
        r = self.ranges
        kernels.rescaled_norm_counts(block, r.lower, r.upper, r.center, r.half, edges,
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
    missing_by_column: np.ndarray | None = None

    def second_moment_sums(self) -> tuple[np.ndarray, np.ndarray, int]:
        """``(Z^T Z, Z^T 1, n)`` with the lower triangle mirrored."""
        p = self.gram.shape[0] - 1
        upper = np.triu(self.gram[:p, :p])
        return upper + np.triu(upper, 1).T, self.gram[:p, p].copy(), self.rows


def norm_clip_factors(squared: np.ndarray, z: np.ndarray, bound: float,
                      present: np.ndarray | None = None) -> np.ndarray | None:
    """The factors that shrink the rows ``z`` (squared norms ``squared``) onto the l2 ball
    of radius ``bound``, by the rule of :meth:`dpggm.mechanisms.bounds.RowNorm.clip`; 1 for
    the rows left alone, ``None`` when no row is over.

    With ``present`` (values present per row, of ``p``), row ``i`` is shrunk onto the ball
    of radius ``bound * sqrt(present[i] / p)``: a row whose missing values were imputed at
    the center (0) is short by construction, and clipping it to the full bound would
    shrink it less than the complete rows, which biases the moments of columns with
    missing values. Every radius is at most ``bound``: the sensitivity is unchanged.

    The rule: rows clearly inside are kept; rows within the rounding error of the bound
    (``margin = 4 (p + 4) eps``) are settled exactly, in rationals; rows over it are
    rescaled onto ``(1 - 2 margin)`` times their radius, whose exact norm is then below
    it. The squared norms may come from any summation order: their error is far inside the
    margin, so the rows shrunk are the same.
    """
    p = z.shape[1]
    margin = 4.0 * (p + 4) * np.finfo(float).eps
    if present is None or bool(np.all(present == p)):
        share = None
        b2 = np.full(squared.shape[0], bound**2)
    else:
        share = np.asarray(present, dtype=float) / p
        b2 = bound**2 * share
    over = squared > b2 * (1.0 + margin)
    near = np.flatnonzero((squared > b2 * (1.0 - margin)) & ~over)
    if near.size:
        for i in near:
            exact_b2 = Fraction(bound) ** 2 * (1 if share is None
                                                else Fraction(int(present[i]), p))
            if sum((Fraction(float(v)) ** 2 for v in z[i]), Fraction(0)) > exact_b2:
                over[i] = True
    if not over.any():
        return None
    radius = bound if share is None else bound * np.sqrt(share[over])
    factor = np.ones(squared.shape[0])
    factor[over] = radius * (1.0 - 2.0 * margin) / np.sqrt(squared[over])
    return factor


@dataclass(frozen=True)
class Moments(PassTask):
    """Clipped sums of the records: rescaled by ``ranges`` (if any), clipped to
    ``norm_bound`` (if any) or to ``box`` (declared per-column bounds, if any), then
    ``Z^T Z``, ``Z^T 1`` and the count in one BLAS ``dsyrk`` per block of
    :func:`block_rows` rows (which stays in cache between the steps)."""

    ranges: Ranges | None = None
    norm_bound: float | None = None
    declared: Any = None

    def __post_init__(self) -> None:
        if self.ranges is not None and self.declared is not None:
            raise ValueError("Moments takes released ranges or declared bounds, not both")

    def new(self, p: int) -> MomentsState:
        return MomentsState(np.zeros((p + 1, p + 1), order="F"),
                            outside_by_column=np.zeros(p, dtype=np.int64),
                            missing_by_column=np.zeros(p, dtype=np.int64))

    def add(self, state: MomentsState, block: np.ndarray) -> None:
        from scipy.linalg import blas

        m, p = block.shape
        state.missing_by_column += np.count_nonzero(np.isnan(block), axis=0)
        step = block_rows(p + 1)
        work = np.empty((min(m, step), p + 1), order="F")
        work[:, p] = 1.0
        squared = np.empty(work.shape[0])
        outside = np.empty(work.shape[0], dtype=np.bool_)
        present = np.empty(work.shape[0], dtype=np.int64)
        for start in range(0, m, step):
            part = block[start:start + step]
            rows = part.shape[0]
            buffer = work[:rows]
            if self.ranges is not None:
                self._rescaled(state, part, buffer, squared[:rows], outside[:rows],
                               present[:rows])
            else:
                self._declared(state, part, buffer)
            state.gram = blas.dsyrk(1.0, buffer, beta=1.0, c=state.gram, trans=1,
                               overwrite_c=True)
        state.rows += m

    def _rescaled(self, state: MomentsState, part: np.ndarray, buffer: np.ndarray,
                  squared: np.ndarray, outside: np.ndarray, present: np.ndarray) -> None:
        """Rescale by the ranges (and count what falls outside them), then shrink the
        rows over the norm bound (scaled by the share of their values present); in place
        in ``buffer``."""
        p = part.shape[1]
        r = self.ranges
        kernels = _kernels()
        kernels.rescale_rows(part, r.lower, r.upper, r.center, r.half, buffer,
                             state.outside_by_column, outside, squared, present)
        changed = outside
        if self.norm_bound is not None:
            factor = norm_clip_factors(squared, buffer[:, :p], self.norm_bound, present)
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
        # A missing value (NaN) is imputed at 0: the center of the declared box (or of the
        # records minus a public center).
        z[np.isnan(z)] = 0.0
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
                _kernels().scale_rows(buffer, factor, p)
                over = factor != 1.0
                state.over_norm += int(np.count_nonzero(over))
                changed |= over
        state.changed_rows += int(np.count_nonzero(changed))

    def merge(self, a: MomentsState, b: MomentsState) -> MomentsState:
        return MomentsState(a.gram + b.gram, a.rows + b.rows,
                            a.outside_by_column + b.outside_by_column,
                            a.outside_rows + b.outside_rows, a.over_norm + b.over_norm,
                            a.changed_rows + b.changed_rows,
                            a.missing_by_column + b.missing_by_column)


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

    def run(self, task: PassTask) -> Any:
        rows = block_rows(self.n_features)
        count = -(-self.n_samples // rows)

        def read(index: int, worker: int) -> np.ndarray:
            start = index * rows
            return np.asfortranarray(self.values[start:start + rows], dtype=float)

        return run_split(task, self.n_features, lambda index: index < count, read)

    def close(self) -> None:
        return None

    def __enter__(self) -> ArrayRecords:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def run_split(task: PassTask, p: int, exists: Callable[[int], bool],
              read: Callable[[int, int], np.ndarray], *, workers: int | None = None) -> Any:
    """``task`` over the blocks ``read(index, worker)``, for the indices ``0, 1, ...`` while
    ``exists(index)`` (which may wait for a block still being parsed).

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
                index = share
                while not failures and exists(index):
                    task.add(states[share], read(index, worker))
                    index += PASS_SPLIT
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
    except (OSError, AttributeError, TypeError):
        return
    trim(0)


class _Recycler:
    """Column-major matrices for the parser, drawn from buffers handed back once their
    block is written: parsing a large file then allocates a handful of blocks, not one
    per block (repeated large allocations fragment the heap, which then keeps the
    memory)."""

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
    then delays the parsing only when it falls ``depth`` blocks behind), reports each
    block once it is written (``written(rows)``) and hands its buffer back to the
    recycler; :meth:`read_into` reads them back.

    Column-major bytes: a block reads back as a column-major ``m x p`` array; the
    transpose of a column-major block is C-contiguous, so it is written without a copy.

    Privacy: the file holds parsed private records, so it never has a name while it holds
    any. It is created anonymous where the system allows (``O_TMPFILE`` in the directory
    of ``path``) or created at ``path`` and unlinked before anything is written; it is
    readable by its owner only (mode 0600 whatever the umask), reached through this
    object's descriptor only, and its directory (made for it) is removed at once. When
    the process ends -- :meth:`release`, an exception, or ``kill -9`` -- the system frees
    the file: no copy of the records is left behind. (Where an open file cannot be
    unlinked, on Windows, it keeps its name until :meth:`release`.)
    """

    def __init__(self, path: str, recycler: _Recycler, written: Callable[[int], None], *,
                 depth: int = 2) -> None:
        self._fd = _anonymous_file(path)
        self._named = path if os.path.exists(path) else None
        self._recycler = recycler
        self._written = written
        self._queue: queue.Queue[np.ndarray | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._finished = False
        self._thread = threading.Thread(target=self._drain, name="dpggm-spill", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            block = self._queue.get()
            if block is None:
                return
            if self._error is None:
                try:
                    self._write(memoryview(np.asfortranarray(block).T).cast("B"))
                    self._written(block.shape[0])
                except BaseException as exc:  # raised in the parsing thread
                    self._error = exc
            self._recycler.give_back(block)
            del block

    def _write(self, data: memoryview) -> None:
        done = 0
        while done < len(data):
            done += os.write(self._fd, data[done:])

    def put(self, block: np.ndarray) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(block)

    def close(self, *, raising: bool = True) -> None:
        """No more blocks: wait until every block is written (the file stays readable
        until :meth:`release`)."""
        if not self._finished:
            self._finished = True
            self._queue.put(None)
            self._thread.join()
        if raising and self._error is not None:
            raise self._error

    def read_into(self, view: memoryview, offset: int) -> None:
        """Fill ``view`` (bytes) from ``offset`` of the file (positional reads: any number
        of threads at once)."""
        done = 0
        while done < len(view):
            if hasattr(os, "preadv"):
                count = os.preadv(self._fd, [view[done:]], offset + done)
            else:  # pragma: no cover - systems without preadv
                chunk = os.pread(self._fd, len(view) - done, offset + done)
                view[done:done + len(chunk)] = chunk
                count = len(chunk)
            if not count:
                raise OSError("the temporary file of the parsed records was truncated")
            done += count

    def release(self) -> None:
        """Close the file: the system frees it (and its name, where it kept one)."""
        self.close(raising=False)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._named is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._named)


def _anonymous_file(path: str) -> int:
    """A read-write descriptor of a new owner-only file without a name in the directory of
    ``path`` (see :class:`_SpillWriter`); the directory is removed if it is left empty."""
    directory = os.path.dirname(path) or "."
    flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
    fd = -1
    if hasattr(os, "O_TMPFILE"):
        try:
            fd = os.open(directory, flags | os.O_TMPFILE, 0o600)
        except OSError:  # a file system without anonymous files
            fd = -1
    if fd < 0:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o600)
        with contextlib.suppress(OSError):  # Windows keeps it until release()
            os.unlink(path)
    try:
        os.fchmod(fd, 0o600)
    except (OSError, AttributeError):  # pragma: no cover - no fchmod on Windows
        pass
    if hasattr(os, "posix_fadvise"):  # the passes read it from start to end
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
    with contextlib.suppress(OSError):  # not empty where the name could not be removed
        os.rmdir(directory)
    return fd


class _Closed(RuntimeError):
    pass


class FileRecords:
    """A CSV or Parquet file, parsed once, in a background thread, into float64 blocks:
    the first ones kept in memory (up to :data:`MEMORY_LIMIT` bytes), the rest appended to
    an owner-only temporary file deleted by :meth:`close`.

    Every pass (:meth:`run`) reads the blocks by index, on :data:`PASS_WORKERS` threads,
    as soon as they are parsed: the first pass counts block ``k`` while the parser parses
    block ``k + 1`` (pyarrow and the numba kernels release the GIL), and :meth:`start`
    lets the parsing begin before anything else (the command line starts it before it
    imports the estimator). A file larger than the memory limit goes to the temporary
    file from its first block, so memory stays O(p^2 + a few blocks) whatever the number
    of records; the blocks are written by a background thread without copies and read
    back by each thread with its own handle into its own buffer.

    ``n_samples`` and ``columns`` are complete after the first pass. ``scratch`` is the
    directory of the temporary file (default: ``source.scratch`` if the source is a
    :class:`~dpggm.data.tables.TableFile` that names one, else the system's temporary
    directory, ``TMPDIR``): it needs room for ``8 n p`` bytes.

    Privacy
    -------
    The temporary file holds the parsed private records: it is created in a fresh
    directory of mode 0700 (:func:`tempfile.mkdtemp`) and removed when the records are
    closed, also on errors.
    """

    def __init__(self, source: Any, *, memory_limit: int | None = None,
                 scratch: str | os.PathLike | None = None, missing: str = "refuse") -> None:
        self.source = source
        self.missing = missing
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
        self._spill: _SpillWriter | None = None
        self._spill_offsets: list[int] = [0]  # rows before each spilled block
        self._condition = threading.Condition()
        self._available = 0  # blocks that can be read, in order
        self._parsed = False
        self._failure: BaseException | None = None
        self._stop = threading.Event()
        self._parser: threading.Thread | None = None
        # The curator's warnings about the columns, gathered by the parser (a thread) and
        # issued by the first pass that reads the whole file (in the caller's thread).
        self._notes: list[str] = []
        self._noted = False

    # -- parsing (background thread) -------------------------------------------------

    def start(self) -> FileRecords:
        """Start parsing the file in a background thread (once)."""
        if self._parser is None:
            # The parser runs in the caller's context, so that a progress reporter the
            # caller installed (dpggm._progress) hears about the file being read.
            context = contextvars.copy_context()
            self._parser = threading.Thread(target=context.run, args=(self._parse,),
                                            name="dpggm-parse", daemon=True)
            self._parser.start()
        return self

    def _spill_path(self) -> str:
        assert self._spill_dir is not None
        return os.path.join(self._spill_dir, "records.f64")

    def _file_bytes(self) -> int:
        path = getattr(self.source, "path", self.source)
        try:
            return os.path.getsize(path)
        except (OSError, TypeError):
            return 0

    def _arrived(self, rows: int) -> None:
        """One more block can be read (in order)."""
        with self._condition:
            self._available += 1
            self.n_samples += rows
            self._condition.notify_all()

    def _parse(self) -> None:
        from dpggm.data.tables import iter_chunks

        recycler = _Recycler()
        writer: _SpillWriter | None = None
        try:
            spill_all = self._file_bytes() > self.memory_limit
            chunks = iter_chunks(self.source, matrix=recycler.matrix, missing=self.missing,
                                 notes=self._notes)
            with contextlib.closing(chunks):
                for block, columns, _ in chunks:
                    if self._stop.is_set():
                        break
                    if self.n_features == 0:
                        with self._condition:
                            self.columns = list(columns)
                            self.n_features = block.shape[1]
                            self._condition.notify_all()
                    if writer is None and not spill_all and (
                            self._kept_bytes + block.nbytes <= self.memory_limit):
                        self._kept.append(block)
                        self._kept_bytes += block.nbytes
                        self._arrived(block.shape[0])
                    else:
                        if writer is None:
                            self._spill_dir = tempfile.mkdtemp(prefix="dpggm-records-",
                                                               dir=self.scratch)
                            writer = self._spill = _SpillWriter(self._spill_path(), recycler,
                                                                self._arrived)
                        self._spill_offsets.append(self._spill_offsets[-1] + block.shape[0])
                        writer.put(block)
                    del block
            if writer is not None:
                writer.close()
            if self._stop.is_set():
                raise _Closed("the records were closed")
            with self._condition:
                self._parsed = True
                self._condition.notify_all()
        except BaseException as exc:  # raised in the threads that read the blocks
            if writer is not None:
                writer.release()
            # The parsed records are incomplete and of no further use: deleted at once.
            if self._spill_dir is not None:
                shutil.rmtree(self._spill_dir, ignore_errors=True)
            with self._condition:
                self._failure = exc
                self._condition.notify_all()

    # -- reading -----------------------------------------------------------------------

    def _wait(self, ready: Callable[[], bool]) -> None:
        with self._condition:
            while not ready():
                if self._failure is not None:
                    raise self._failure
                self._condition.wait()
            if self._failure is not None:
                raise self._failure

    def _exists(self, index: int) -> bool:
        """Whether block ``index`` exists, waiting for the parser if need be."""
        with self._condition:
            while True:
                if self._failure is not None:
                    raise self._failure
                if index < self._available:
                    return True
                if self._parsed:
                    return False
                self._condition.wait()

    def run(self, task: PassTask) -> Any:
        """``task`` over every block (the first run follows the parsing)."""
        self.start()
        self._wait(lambda: self.n_features > 0 or self._parsed)
        p = self.n_features
        buffers: dict[int, np.ndarray] = {}

        def read(index: int, worker: int) -> np.ndarray:
            if index < len(self._kept):
                return self._kept[index]
            spilled = index - len(self._kept)
            first, last = self._spill_offsets[spilled], self._spill_offsets[spilled + 1]
            rows = last - first
            # Each worker reads into its own buffer (positional reads of the one file).
            buffer = buffers.get(worker)
            if buffer is None or buffer.size < rows * p:
                buffer = buffers[worker] = np.empty(rows * p + rows * p // 8)
            flat = buffer[:rows * p]
            assert self._spill is not None
            self._spill.read_into(memoryview(flat).cast("B"), first * 8 * p)
            return flat.reshape(p, rows).T

        try:
            result = run_split(task, p, self._exists, read)
            if not self._noted:
                self._noted = True
                from dpggm.exceptions import CuratorWarning

                for note in self._notes:
                    warnings.warn(CuratorWarning(note), stacklevel=2)
            return result
        except BaseException:
            # A reader may have tripped over the parser's failure before seeing it.
            failure = self._failure
            if failure is not None and not isinstance(failure, _Closed):
                raise failure from None
            raise

    def close(self) -> None:
        """Stop the parser, delete the temporary file and release the blocks' memory."""
        self._stop.set()
        if self._parser is not None:
            self._parser.join()
        with self._condition:
            if self._failure is None and not self._parsed:
                self._failure = _Closed("the records were closed")
            self._condition.notify_all()
        had_blocks = bool(self._kept) or self._spill_dir is not None
        self._kept = []
        self._kept_bytes = 0
        if self._spill is not None:
            self._spill.release()
            self._spill = None
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None
        if had_blocks:
            release_free_memory()

    def __enter__(self) -> FileRecords:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


#: Records whose parsing started ahead of the fit that reads them (see
#: :func:`reading_ahead`), by the identity of their source.
_STARTED: dict[int, FileRecords] = {}


@contextlib.contextmanager
def reading_ahead(source: Any, *, missing: str = "refuse") -> Iterator[FileRecords]:
    """Start parsing the file ``source`` (a path or a
    :class:`~dpggm.data.tables.TableFile`) in the background; an estimator fitted on
    this same object within the block reads these records instead of parsing the file
    again. The command line starts it before it imports the estimator, so the parsing
    overlaps the imports."""
    records = FileRecords(source, missing=missing).start()
    _STARTED[id(source)] = records
    try:
        yield records
    finally:
        if _STARTED.get(id(source)) is records:
            del _STARTED[id(source)]
        records.close()


def open_records(X: Any, *, name: str = "X", missing: str = "refuse") -> Any:
    """The records of ``X`` as a pass source: :class:`FileRecords` for a path or
    :class:`~dpggm.data.tables.TableFile` (those started by :func:`reading_ahead` if
    any), the Dask source for a Dask collection, :class:`ArrayRecords` otherwise
    (validated by :func:`~dpggm.data.tables.as_matrix`). With ``missing`` other than
    ``"refuse"`` a missing value is kept as NaN: the counting kernels count it apart and
    the rescaling imputes it at the center of its range."""
    from dpggm.data.tables import ColumnProfile, as_matrix, is_dask_collection, is_path

    if is_dask_collection(X):
        from dpggm.data.dask_records import DaskRecords

        return DaskRecords(X, name=name, missing=missing)
    if is_path(X):
        started = _STARTED.pop(id(X), None)
        if started is not None and started.source is X and started.missing == missing:
            return started
        if started is not None:
            started.close()
        return FileRecords(X, missing=missing)
    values, columns = as_matrix(X, name=name, missing=missing)
    # A column with no value or a single value is refused before any draw (the message
    # is the curator's: see refuse_degenerate_columns); an identifier-like one is flagged.
    profile = ColumnProfile(values.shape[1])
    profile.add(values)
    profile.refuse_degenerate(columns, where=name, drop=f"leave it out of {name}")
    profile.warn_identifiers(columns)
    return ArrayRecords(values, columns)
