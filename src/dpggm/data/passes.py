"""Passes over records: the one way a statistic of the private records is computed.

Every statistic an estimator needs -- the clipped second moment, a regression's sums,
counts of values on public grids, row norms, the main job's moments after its released
ranges -- is a :class:`PassTask`: it starts an empty state for ``p`` columns, adds blocks of
records to it, and merges two states by addition. Every source of records is a
:class:`Records` and runs any task (:meth:`Records.run`):

* an array or a DataFrame in memory (:class:`~dpggm.data.records.ArrayRecords`);
* a data file, read afresh at every pass
  (:class:`~dpggm.data.records.StreamedFile`: a statistic of one pass keeps nothing) or
  parsed once into blocks kept for the passes that follow
  (:class:`~dpggm.data.file_records.FileRecords`);
* a Dask collection (:class:`~dpggm.data.dask_records.DaskRecords`), partition by
  partition on the workers, with a tree reduction in partition order.

:func:`~dpggm.data.records.open_records` chooses the source for an input.

Two orders of work. A task ``in_order`` adds the records' chunks in the order of the
records into one state (an array's chunks of
:data:`~dpggm.data.tables.DEFAULT_CHUNK_ROWS` rows, a file's blocks as they are read):
its floating-point sums are those of one loop over the records, the same on every run and
for every reader of the same file. Any other task gets cache-sized blocks
(:func:`block_rows`) dealt into :data:`PASS_SPLIT` states filled by up to as many threads
(:func:`run_split`) and merged in order, so its sums do not depend on the threads either.
A Dask collection adds each partition's blocks in order and the partitions in partition
order: its sums equal the in-memory ones to rounding.

Every state holds exact counts and sums of the curator's records; nothing here adds noise
or is released as is (that is :mod:`dpggm.mechanisms`' work).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpggm.mechanisms.bounds import Bounds

__all__ = [
    "BLOCK_ROWS",
    "PASS_SPLIT",
    "ClippedSums",
    "CountState",
    "Moments",
    "MomentsState",
    "NormCounts",
    "PassTask",
    "Ranges",
    "Records",
    "RegressionSums",
    "Shifted",
    "SumsState",
    "ValueCounts",
    "block_rows",
    "check_center",
    "grid_parameters",
    "norm_clip_factors",
    "run_in_order",
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
    """One pass: ``new(p)`` an empty state for ``p`` columns (where a task refuses a width
    it cannot take), ``add(state, block)`` a block of records (float64, ``m x p``;
    column-major unless the task is ``in_order``, which gets the records' chunks as they
    are), ``merge(a, b)`` two states; ``finish(state)`` the result."""

    #: Whether the records' chunks are added in their order into one state (see the
    #: module documentation): for sums that must not depend on how the records are read.
    in_order: ClassVar[bool] = False

    def new(self, p: int) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def add(self, state: Any, block: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def finish(self, state: Any) -> Any:
        return state


class Records:
    """Private records read in passes: the one interface every source of records serves
    (arrays, files, Dask collections; see the module documentation).

    ``columns`` and ``n_samples`` are complete after the first pass (before it when
    ``sizes_known``); ``n_features`` once the records' width is known. A pass runs any
    :class:`PassTask` and returns its finished state; every value is checked as it is read
    (a missing value is refused or kept as NaN, as the records were opened), so a pass
    raises before anything is released. ``close`` frees what the records hold (a file's
    parsed blocks, its temporary file); the records are a context manager.
    """

    #: Whether ``n_samples`` and ``n_features`` are known before the first pass.
    sizes_known: ClassVar[bool] = False

    def __init__(self) -> None:
        self.columns: list[str] = []
        self.n_samples = 0
        self.n_features = 0

    def run(self, task: PassTask) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        return None

    def __enter__(self) -> Records:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def run_in_order(task: PassTask, p: int, chunks: Iterable[np.ndarray]) -> Any:
    """``task`` over ``chunks`` in their order, into one state (an ``in_order`` task)."""
    state = task.new(p)
    for chunk in chunks:
        task.add(state, chunk)
    return task.finish(state)


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


def check_center(center: Any, p: int) -> np.ndarray | None:
    """A public center must be a finite vector with one entry per column."""
    if center is None:
        return None
    center = np.asarray(center, dtype=float)
    if center.shape != (p,) or not np.all(np.isfinite(center)):
        raise ValueError(
            f"center must be a finite vector of length {p} (one per column); "
            f"got shape {center.shape}"
        )
    return center


@dataclass
class SumsState:
    """``Z^T Z`` (full, ``p x p``), the column sums and the count of the clipped records
    ``Z``, and the records changed by clipping (a curator-only diagnostic)."""

    gram: np.ndarray
    total: np.ndarray
    n: int = 0
    n_clipped: int = 0


@dataclass(frozen=True)
class ClippedSums(PassTask):
    """The clipped second moment's sums: every record minus a public ``center`` (if any),
    clipped to the declared ``bounds``, then ``Z^T Z`` and ``Z^T 1`` -- one matrix
    product a chunk, added in the records' order (``in_order``: an array's chunks of
    :data:`~dpggm.data.tables.DEFAULT_CHUNK_ROWS` rows, a file's blocks). With
    ``drop_incomplete`` a record holding a missing value (NaN) is left out (listwise
    deletion; the records are then opened with missing values kept)."""

    bounds: Bounds
    center: np.ndarray | None = None
    drop_incomplete: bool = False

    in_order: ClassVar[bool] = True

    def new(self, p: int) -> SumsState:
        self.bounds.check_dimension(p)
        check_center(self.center, p)
        return SumsState(np.zeros((p, p)), np.zeros(p))

    def add(self, state: SumsState, block: np.ndarray) -> None:
        values = block
        if self.drop_incomplete:
            values = values[~np.isnan(values).any(axis=1)]
        if self.center is not None:
            values = values - np.asarray(self.center, dtype=float)
        clipped, changed = self.bounds.clip(values)
        state.gram += clipped.T @ clipped
        state.total += clipped.sum(axis=0)
        state.n += clipped.shape[0]
        state.n_clipped += changed

    def merge(self, a: SumsState, b: SumsState) -> SumsState:
        return SumsState(a.gram + b.gram, a.total + b.total, a.n + b.n,
                         a.n_clipped + b.n_clipped)


@dataclass
class RegressionState:
    """``F^T F``, ``F^T y`` and the count, for the clipped features ``F`` (with a column of
    ones for an intercept) and the clipped targets ``y``."""

    gram: np.ndarray
    moment: np.ndarray
    n: int = 0


@dataclass(frozen=True)
class RegressionSums(PassTask):
    """A linear regression's sufficient statistics from records ``[x, y]`` (the target in
    the last column): the features clipped to ``bounds``, the target to
    ``[-y_bound, y_bound]``, a column of ones appended for ``fit_intercept``; one matrix
    product a chunk, in the records' order (``in_order``)."""

    bounds: Bounds
    y_bound: float
    fit_intercept: bool = False

    in_order: ClassVar[bool] = True

    def new(self, p: int) -> RegressionState:
        self.bounds.check_dimension(p - 1)
        d = p - 1 + int(self.fit_intercept)
        return RegressionState(np.zeros((d, d)), np.zeros(d))

    def add(self, state: RegressionState, block: np.ndarray) -> None:
        features = block[:, :-1]
        if not (features.flags.c_contiguous or features.flags.f_contiguous):
            # The features as one array in memory: the product then runs on the layout
            # the caller's array had (a C- or Fortran-ordered matrix), as one product of
            # the features always has.
            features = np.ascontiguousarray(features)
        features, _ = self.bounds.clip(features)
        target = np.clip(block[:, -1], -self.y_bound, self.y_bound)
        if self.fit_intercept:
            features = np.hstack([features, np.ones((features.shape[0], 1))])
        state.gram += features.T @ features
        state.moment += features.T @ target
        state.n += features.shape[0]

    def merge(self, a: RegressionState, b: RegressionState) -> RegressionState:
        return RegressionState(a.gram + b.gram, a.moment + b.moment, a.n + b.n)
