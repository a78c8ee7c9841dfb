"""The records of a fit, whatever holds them, and the statistics estimators read off them.

:func:`open_records` is the one entry point: it gives the :class:`~dpggm.data.passes.Records`
of an input -- :class:`ArrayRecords` for an array or a DataFrame, :class:`StreamedFile` or
:class:`~dpggm.data.file_records.FileRecords` for a data file (a path or a
:class:`~dpggm.data.tables.TableFile`), :class:`~dpggm.data.dask_records.DaskRecords` for
a Dask collection -- and every statistic is a pass of a
:class:`~dpggm.data.passes.PassTask` over them. :func:`clipped_second_moment` is the pass
most estimators need; :func:`reading_ahead` lets the command line start parsing a file
before the estimator is even imported.

Privacy
-------
Every result here is an exact (unreleased) statistic of the curator's records; only a
mechanism (:mod:`dpggm.mechanisms`) may publish it. Nothing here draws noise, so every
error is raised before any budget is spent.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpggm.data.file_records import FileRecords
from dpggm.data.passes import (
    ClippedSums,
    PassTask,
    Records,
    block_rows,
    run_in_order,
    run_split,
)
from dpggm.data.tables import (
    DEFAULT_CHUNK_ROWS,
    ColumnProfile,
    as_matrix,
    check_chunk_rows,
    is_dask_collection,
    is_path,
    iter_chunks,
    too_few_records,
)
from dpggm.mechanisms.bounds import Bounds

__all__ = [
    "ArrayRecords",
    "RecordMatrix",
    "SecondMoment",
    "StreamedFile",
    "check_missing_policy",
    "clipped_second_moment",
    "finish_second_moment",
    "open_records",
    "reading_ahead",
]


def check_missing_policy(missing: str, *, neighbors: str, drops: bool) -> None:
    """The one rule for leaving incomplete records out (``missing="drop"``), checked before
    any data are read.

    Dropping records makes their number depend on the private data, which replace-one
    neighbours take as public: it needs add/remove neighbours, whose count is private (and
    released with noise anyway). And it needs an estimator whose statistic is the clipped
    second moment alone (``drops``: :class:`~dpggm.data.passes.ClippedSums` leaves the
    records out); any other pass -- the ranges and norm bound ``PrivateGraph`` chooses --
    would count every record.

    Raises
    ------
    ValueError
        ``missing="drop"`` where it cannot hold.
    """
    if missing != "drop":
        return
    if not drops:
        raise ValueError(
            "missing='drop' is refused: dropping incomplete rows makes the number of "
            "records depend on the private data, while replace-one neighbours take it "
            "as public (and the ranges and norm bound of bounds='auto' count every "
            "record); use missing='impute' (the default) or missing='refuse'")
    if neighbors != "add-remove":
        raise ValueError(
            "missing='drop' needs neighbors='add-remove': leaving out incomplete rows "
            "makes the number of records depend on the data, which replace-one "
            "neighbours take as public; under add/remove the count is released with "
            "noise anyway")


class ArrayRecords(Records):
    """Records in memory (validated by :func:`~dpggm.data.tables.as_matrix`): an ``in_order``
    task reads them in chunks of ``chunk_rows`` rows (views, in the array's own layout),
    any other task in cache-sized column-major blocks spread over threads."""

    sizes_known = True

    def __init__(self, values: np.ndarray, columns: list[str], *,
                 chunk_rows: int = DEFAULT_CHUNK_ROWS) -> None:
        super().__init__()
        self.values = values
        self.columns = list(columns)
        self.n_samples, self.n_features = values.shape
        self.chunk_rows = check_chunk_rows(chunk_rows)

    @classmethod
    def with_target(cls, features: np.ndarray, target: np.ndarray, columns: list[str], *,
                    name: str = "y") -> ArrayRecords:
        """The records ``[x, y]`` of a regression: the (checked) features with the target
        as their last column, named ``name``, stored in the features' own layout (row- or
        column-major: a product over the features then runs on the layout they had)."""
        n, p = features.shape
        layout = "F" if features.flags.f_contiguous and not features.flags.c_contiguous else "C"
        stacked = np.empty((n, p + 1), order=layout)
        stacked[:, :p] = features
        stacked[:, p] = target
        return cls(stacked, [*columns, name], chunk_rows=max(n, 1))

    def run(self, task: PassTask) -> Any:
        p = self.n_features
        if task.in_order:
            step = self.chunk_rows
            return run_in_order(task, p, (self.values[start:start + step]
                                          for start in range(0, self.n_samples, step)))
        rows = block_rows(p)
        count = -(-self.n_samples // rows)

        def read(index: int, worker: int) -> np.ndarray:
            start = index * rows
            return np.asfortranarray(self.values[start:start + rows], dtype=float)

        return run_split(task, p, lambda index: index < count, read)


class StreamedFile(Records):
    """A data file read afresh at every pass, block by block, in the caller's thread: a
    statistic of one pass reads a file larger than memory with memory ``O(p^2)`` plus one
    block, and keeps nothing (see :func:`~dpggm.data.tables.iter_chunks` for the blocks
    and the checks). ``columns`` and ``n_samples`` are set by the first pass."""

    def __init__(self, source: Any, *, missing: str = "refuse",
                 chunk_rows: int = DEFAULT_CHUNK_ROWS) -> None:
        super().__init__()
        self.source = source
        self.missing = missing
        self.chunk_rows = check_chunk_rows(chunk_rows)

    def run(self, task: PassTask) -> Any:
        state = None
        rows = 0
        for block, columns, _ in iter_chunks(self.source, chunk_rows=self.chunk_rows,
                                             missing=self.missing):
            if state is None:
                self.columns = list(columns)
                self.n_features = block.shape[1]
                state = task.new(self.n_features)
            task.add(state, block)
            rows += block.shape[0]
        if state is None:
            raise too_few_records(0)
        self.n_samples = rows
        return task.finish(state)


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


def open_records(X: Any, *, name: str = "X", missing: str = "refuse", keep: bool = True,
                 check_columns: bool = True,
                 chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Records:
    """The records of ``X``, for passes.

    Parameters
    ----------
    X : array, DataFrame, path, TableFile or Dask collection
        A Dask collection gives :class:`~dpggm.data.dask_records.DaskRecords`; a path or a
        :class:`~dpggm.data.tables.TableFile` gives the records :func:`reading_ahead`
        started for it, else :class:`~dpggm.data.file_records.FileRecords` (``keep``) or
        :class:`StreamedFile`; anything else :class:`ArrayRecords`.
    name : str
        What messages call the records.
    missing : {"refuse", "impute", "drop"}
        ``"refuse"``: a missing value (NaN, an empty field) is an error, naming the first
        one; otherwise it is kept as NaN for the task's policy (the counting kernels count
        it apart, the rescaling imputes it at the center of its range,
        :class:`~dpggm.data.passes.ClippedSums` may drop its row). An infinite value is
        never missing.
    keep : bool
        For a file: parse it once and keep its blocks for the passes that follow (in
        memory up to a limit, beyond it in an owner-only temporary file); ``False`` reads
        it afresh at every pass (a statistic of one pass: nothing is kept).
    check_columns : bool
        For an array or a DataFrame: refuse a column with no value or a single value
        before any draw (a message for the curator only) and flag one that looks like a
        record identifier. A file's and a Dask collection's columns are always checked
        while they are read (see :mod:`dpggm.data.tables`).
    chunk_rows : int
        Rows per chunk of an array, and of a Parquet file, read by an ``in_order`` task.
    """
    if is_dask_collection(X):
        from dpggm.data.dask_records import DaskRecords

        return DaskRecords(X, name=name, missing=missing)
    if is_path(X):
        started = _STARTED.pop(id(X), None)
        if started is not None and started.source is X and started.missing == missing:
            return started
        if started is not None:
            started.close()
        if not keep:
            return StreamedFile(X, missing=missing, chunk_rows=chunk_rows)
        return FileRecords(X, missing=missing)
    values, columns = as_matrix(X, name=name, missing=missing)
    if check_columns:
        # A column with no value or a single value is refused before any draw (the
        # message is the curator's: see refuse_degenerate_columns); an identifier-like one
        # is flagged.
        profile = ColumnProfile(values.shape[1])
        profile.add(values)
        profile.refuse_degenerate(columns, where=name, drop=f"leave it out of {name}")
        profile.warn_identifiers(columns)
    return ArrayRecords(values, columns, chunk_rows=chunk_rows)


@dataclass
class RecordMatrix:
    """Records of a fit held in memory (clipped, or as released) with their column names:
    what a planned estimator's steps read when they need the rows themselves."""

    values: np.ndarray
    columns: list[str]

    @property
    def n_samples(self) -> int:
        return self.values.shape[0]

    @property
    def n_features(self) -> int:
        return self.values.shape[1]


@dataclass(frozen=True)
class SecondMoment:
    """Exact statistics of the clipped records (curator side; never released as is).

    Attributes
    ----------
    second_moment : ndarray (p, p)
        ``X^T X / n`` of the clipped (and, with a public center, centered) records.
    total : ndarray (p,)
        Column sums of the same records.
    n : int
        Number of records.
    n_clipped : int
        Records changed by clipping (a curator-only diagnostic, not part of any release).
    columns : list of str
    """

    second_moment: np.ndarray
    total: np.ndarray
    n: int
    n_clipped: int
    columns: list[str] = field(default_factory=list)

    @property
    def n_features(self) -> int:
        return self.second_moment.shape[0]


def finish_second_moment(
    gram: np.ndarray, total: np.ndarray, n: int, n_clipped: int, columns: list[str],
    *, name: str = "X",
) -> SecondMoment:
    """Normalise summed statistics: ``X^T X / n``, made exactly symmetric."""
    if n < 2:
        raise too_few_records(n, name=name)
    second_moment = gram / n
    # Symmetrise exactly: the chunked products are symmetric only up to rounding.
    second_moment = (second_moment + second_moment.T) / 2
    return SecondMoment(second_moment, total, n, n_clipped, list(columns))


def clipped_second_moment(
    X: Any,
    *,
    bounds: Bounds,
    center: np.ndarray | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    missing: str = "refuse",
    name: str = "X",
) -> SecondMoment:
    """Clip every record to ``bounds`` and accumulate ``X^T X / n``: one pass of
    :class:`~dpggm.data.passes.ClippedSums` over the records of ``X``
    (:func:`open_records`).

    Parameters
    ----------
    X : array, DataFrame, data file (path or TableFile) or Dask collection
    bounds : Bounds
        Declared bounds; records are clipped to them (after subtracting ``center``).
    center : ndarray of shape (p,), optional
        A public mean subtracted from every record before clipping.
    chunk_rows : int
        Rows per chunk of an array or a Parquet file (memory is ``O(p^2)`` plus one
        chunk); a file is read afresh, block by block, and nothing of it is kept.
    missing : {"refuse", "drop"}, default="refuse"
        A missing value (NaN, an empty field) is an error, or its whole row is left out
        (``n`` counts the rows kept). Dropping rows makes ``n`` depend on the data: only
        an estimator under add/remove neighbours (whose count is private) may ask for it.
    name : str
        What messages call the records.

    Privacy
    -------
    The result is the exact (unreleased) statistic; only a mechanism may publish it.
    Nothing here draws noise, so every error is raised before any budget is spent.
    """
    if missing not in ("refuse", "drop"):
        raise ValueError(f"missing must be 'refuse' or 'drop'; got {missing!r}")
    task = ClippedSums(bounds, center, drop_incomplete=missing == "drop")
    # An array's columns are taken as given here (a constant column has a second moment);
    # a file's and a Dask collection's are checked as they are read.
    with open_records(X, name=name, missing=missing, keep=False, check_columns=False,
                      chunk_rows=chunk_rows) as records:
        sums = records.run(task)
        columns = records.columns
    return finish_second_moment(sums.gram, sums.total, sums.n, sums.n_clipped, columns,
                                name=name)
