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

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.linalg.blas import dsyrk

from dpggm.estimators import _count_kernels as kernels
from dpggm.mechanisms.bounds import RowNorm

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
]

#: Rows per block: a block of ``BLOCK_ROWS x p`` float64 stays in cache between the steps
#: of a pass for moderate ``p``.
BLOCK_ROWS = 16384

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

    def new(self, p: int) -> CountState:
        k = self.edges.shape[1]
        return CountState(np.zeros((p, k + 1), dtype=np.int64), np.zeros(p, dtype=np.int64),
                          np.zeros(p, dtype=np.int64))

    def add(self, state: CountState, block: np.ndarray) -> None:
        p = block.shape[1]
        deviation = self.centres is not None
        centres = (np.asarray(self.centres, dtype=float) if deviation else np.zeros(p))
        radius = (np.asarray(self.tie_radius, dtype=float) if self.tie_radius is not None
                  else np.full(p, -1.0))
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
                                     log_first, per_octave, state.counts)
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


@dataclass(frozen=True)
class Moments(PassTask):
    """Clipped sums of the records: rescaled by ``ranges`` (if any), clipped to
    ``norm_bound`` (if any) or to ``box`` (declared per-column bounds, if any), then
    ``Z^T Z``, ``Z^T 1`` and the count in one BLAS ``dsyrk`` per block."""

    ranges: Ranges | None = None
    norm_bound: float | None = None
    declared: Any = None

    def new(self, p: int) -> MomentsState:
        return MomentsState(np.zeros((p + 1, p + 1), order="F"),
                            outside_by_column=np.zeros(p, dtype=np.int64),
                            missing_by_column=np.zeros(p, dtype=np.int64))

    def add(self, state: MomentsState, block: np.ndarray) -> None:
        m, p = block.shape
        state.missing_by_column += np.count_nonzero(np.isnan(block), axis=0)
        work = np.empty((m, p + 1), order="F")
        work[:, p] = 1.0
        z = work[:, :p]
        if self.ranges is not None:
            r = self.ranges
            kernels.rescale_block(block, r.lower, r.upper, r.centre, r.half, z,
                                  state.outside_by_column)
            outside = np.any((block < r.lower) | (block > r.upper), axis=1)
        else:
            # A missing value (NaN) is imputed at 0: the centre of the declared box (or of
            # the records minus a public centre).
            np.copyto(z, block)
            z[np.isnan(z)] = 0.0
            outside = np.zeros(m, dtype=bool)
        if self.declared is not None:
            before = z.copy(order="F")
            self.declared.clip(z, in_place=True)
            moved = z != before
            state.outside_by_column += moved.sum(axis=0)
            outside |= moved.any(axis=1)
        changed = outside.copy()
        if self.norm_bound is not None:
            norms_before = np.einsum("ij,ij->i", z, z)
            RowNorm(self.norm_bound).clip(z, in_place=True)
            over = np.einsum("ij,ij->i", z, z) != norms_before
            state.over_norm += int(over.sum())
            changed |= over
        state.outside_rows += int(outside.sum())
        state.changed_rows += int(changed.sum())
        state.gram = dsyrk(1.0, work, beta=1.0, c=state.gram, trans=1, overwrite_c=True)
        state.rows += m

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
        self.task.add(state, np.asfortranarray(block - self.shift))

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
        state = task.new(self.n_features)
        for block in self.blocks():
            task.add(state, block)
        return task.finish(state)

    def close(self) -> None:
        return None

    def __enter__(self) -> ArrayRecords:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class FileRecords:
    """A CSV or Parquet file: parsed once, on the first pass, into float64 blocks kept in
    memory (up to :data:`MEMORY_LIMIT` bytes) or in an owner-only temporary file deleted by
    :meth:`close`.

    ``n_samples`` and ``columns`` are known after the first pass (:meth:`parse`).

    Privacy
    -------
    The temporary file holds the parsed private records: it is created in a fresh
    directory of mode 0700 (:func:`tempfile.mkdtemp`) and removed when the records are
    closed, also on errors.
    """

    def __init__(self, source: Any, *, memory_limit: int = MEMORY_LIMIT,
                 scratch: str | os.PathLike | None = None, missing: str = "refuse") -> None:
        self.source = source
        self.missing = missing
        self.memory_limit = int(memory_limit)
        self.scratch = scratch
        self.columns: list[str] = []
        self.n_samples = 0
        self.n_features = 0
        self._kept: list[np.ndarray] = []
        self._spill_dir: str | None = None
        self._spill_rows: list[int] = []
        self._parsed = False

    def _spill_path(self) -> str:
        assert self._spill_dir is not None
        return os.path.join(self._spill_dir, "records.f64")

    def _keep(self, block: np.ndarray, handle: Any) -> Any:
        """Keep one parsed block; move everything to the temporary file once the blocks
        kept in memory pass the limit."""
        if handle is None and sum(b.nbytes for b in self._kept) + block.nbytes <= self.memory_limit:
            self._kept.append(block)
            return None
        if handle is None:
            self._spill_dir = tempfile.mkdtemp(prefix="dpggm-records-", dir=self.scratch)
            handle = open(self._spill_path(), "wb")
            for kept in self._kept:
                self._write(handle, kept)
            self._kept = []
        self._write(handle, block)
        return handle

    def _write(self, handle: Any, block: np.ndarray) -> None:
        # Column-major bytes: a block reads back as a column-major m x p array.
        handle.write(np.asfortranarray(block).T.tobytes(order="C"))
        self._spill_rows.append(block.shape[0])

    def parse(self, task: PassTask | None = None) -> Any:
        """The first pass: parse the file, keep its blocks, and run ``task`` on them."""
        from dpggm.estimators.data import iter_chunks

        state = None
        handle = None
        try:
            for values, columns, _ in iter_chunks(self.source, missing=self.missing):
                block = np.asfortranarray(values, dtype=float)
                if state is None:
                    self.columns = list(columns)
                    self.n_features = block.shape[1]
                    state = task.new(self.n_features) if task is not None else None
                for start in range(0, block.shape[0], BLOCK_ROWS):
                    part = np.asfortranarray(block[start:start + BLOCK_ROWS])
                    if task is not None:
                        task.add(state, part)
                    handle = self._keep(part, handle)
                self.n_samples += block.shape[0]
        except BaseException:
            if handle is not None:
                handle.close()
            self.close()
            raise
        if handle is not None:
            handle.close()
        self._parsed = True
        return None if task is None else task.finish(state)

    def blocks(self) -> Iterator[np.ndarray]:
        if not self._parsed:
            raise RuntimeError("parse() must run first")
        if self._spill_dir is None:
            yield from self._kept
            return
        p = self.n_features
        with open(self._spill_path(), "rb") as handle:
            for rows in self._spill_rows:
                flat = np.fromfile(handle, dtype=np.float64, count=rows * p)
                yield flat.reshape(p, rows).T

    def run(self, task: PassTask) -> Any:
        if not self._parsed:
            return self.parse(task)
        state = task.new(self.n_features)
        for block in self.blocks():
            task.add(state, block)
        return task.finish(state)

    def close(self) -> None:
        self._kept = []
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None

    def __enter__(self) -> FileRecords:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_records(X: Any, *, name: str = "X", missing: str = "refuse") -> Any:
    """The records of ``X`` as a pass source: :class:`FileRecords` for a path or
    :class:`~dpggm.estimators.data.TableFile`, the Dask source for a Dask collection,
    :class:`ArrayRecords` otherwise (validated by
    :func:`~dpggm.estimators.data.as_matrix`). With ``missing`` other than ``"refuse"``
    a missing value is kept as NaN: the counting kernels count it apart and the
    rescaling imputes it at the centre of its range."""
    from dpggm.estimators.data import as_matrix, is_dask_collection, is_path

    if is_dask_collection(X):
        from dpggm.estimators._dask import DaskRecords

        return DaskRecords(X, name=name, missing=missing)
    if is_path(X):
        return FileRecords(X, missing=missing)
    values, columns = as_matrix(X, name=name, missing=missing)
    return ArrayRecords(values, columns)
