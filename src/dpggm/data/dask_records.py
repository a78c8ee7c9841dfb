"""Dask collections as records (optional extra ``dpggm[dask]``).

Imported only when an input is a Dask collection (see
:func:`dpggm.data.tables.is_dask_collection`), so ``import dpggm`` never imports Dask.

:class:`DaskRecords` runs every pass task (:mod:`dpggm.data.passes`) on the workers: each
partition copies its records block by block into one column-major buffer, checks them and
adds them to the task's state; a tree reduction (fan-in 8, in partition order) merges the
states, and only the reduced state -- counts on public grids, or ``p x p`` sums -- comes
back to the client, where the estimator draws the noise once. A seeded release through
Dask therefore equals the in-memory one up to floating-point summation order (~1e-15
relative), and the budget spent is the same.

A Dask DataFrame that is only ``dd.read_parquet`` (see :func:`parquet_pieces`) is read by
the workers with pyarrow straight into that buffer, without building pandas partitions,
whose conversion used to cost more than the work on the records.

:func:`read_dask` opens a glob (or URL) of CSV or Parquet files as a Dask DataFrame with
the checks and the schema of :class:`~dpggm.data.tables.TableFile`.

Counts and neighbouring relations
---------------------------------
Under ``neighbors="replace"`` (replace-one) the number of records ``n`` is public by
definition: neighbouring data sets have the same size, so the exact count from the
reduction is used to normalise ``X^T X / n``. Under add/remove the count itself is private;
the estimators then use the private (noisy) count of the privacy layer, exactly as in
memory: this module only supplies the exact sums, and the release code decides what of them
may be used.

Privacy
-------
Nothing here draws noise or publishes anything; the statistics computed on the workers are
the exact ones of the curator and leave the cluster only as the reduced sums and counts.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpggm.data.passes import PassTask, Records
from dpggm.data.schema import ResolvedColumns
from dpggm.data.tables import (
    DEFAULT_NA_VALUES,
    ColumnProfile,
    TableFile,
    bad_value_error,
    read_layout,
    refuse_degenerate_columns,
)

__all__ = [
    "DaskRecords",
    "PassResult",
    "parquet_pieces",
    "partition_blocks",
    "read_dask",
    "resolve_columns",
    "show_progress",
]

#: Set (by the CLI) to show Dask's progress bar while a reduction runs.
show_progress: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "dpggm_dask_progress", default=False
)

_FAN_IN = 8


def _extend_range(low: np.ndarray, high: np.ndarray, values: np.ndarray) -> None:
    """Widen each column's range ``[low, high]`` (NaN: no value yet) to hold ``values``."""
    np.fmin(low, np.fmin.reduce(values, axis=0), out=low)
    np.fmax(high, np.fmax.reduce(values, axis=0), out=high)


def _merge_range(low: np.ndarray | None, high: np.ndarray | None, other_low: np.ndarray | None,
                 other_high: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    if other_low is None or other_high is None:
        return low, high
    if low is None or high is None:
        return other_low.copy(), other_high.copy()
    return np.fmin(low, other_low), np.fmax(high, other_high)


def _tree_reduce(level: list[Any], combine: Callable[..., Any]) -> Any:
    import dask

    if not level:
        raise ValueError("X has no partitions")
    combine_delayed = dask.delayed(combine, pure=True)
    while len(level) > 1:
        level = [combine_delayed(*level[k:k + _FAN_IN]) for k in range(0, len(level), _FAN_IN)]
    return _compute(level[0])


def _compute(obj: Any) -> Any:
    """Compute on the distributed client if there is one (with its progress bar when asked),
    else on Dask's default scheduler."""
    try:
        from distributed import default_client
        client = default_client()
    except (ImportError, ValueError):
        client = None
    if client is None:
        if show_progress.get():
            from dask.diagnostics import ProgressBar

            with ProgressBar():
                return obj.compute()
        return obj.compute()
    future = client.compute(obj)
    if show_progress.get():
        from distributed import progress

        progress(future)
    return future.result()


def parquet_pieces(X: Any) -> tuple[list[tuple[str, list[int] | None]], Any] | None:
    """The Parquet files (and row groups) behind a Dask DataFrame that is nothing but
    ``dd.read_parquet`` (with a column selection), one piece per partition in partition
    order, and their fsspec filesystem; None for any other DataFrame.

    Reads Dask's own plan of the read (not public API), so anything unexpected in it
    (filters, hive partitions, categories, another engine) gives None, and the caller
    then computes the partitions as DataFrames: slower, same result.
    """
    try:
        from dask.dataframe.dask_expr._expr import Projection
        from dask.dataframe.dask_expr.io.parquet import ReadParquetFSSpec

        expr = X.expr.optimize(fuse=False)
        if type(expr) is Projection:  # a selection not pushed into the read (reordering)
            expr = expr.frame
        if type(expr) is not ReadParquetFSSpec or expr.operand("filters") is not None:
            return None
        info = expr._dataset_info
        if (info.get("partitions") or info.get("partition_keys") or info.get("categories")
                or info.get("filters") is not None):
            return None
        schema = info["physical_schema"].names
        if not all(isinstance(c, str) and c in schema for c in X.columns):
            return None
        parts = info["plan"]["parts"]
        selected = expr._partitions
        if selected is not None:
            parts = [parts[k] for k in selected]
        pieces: list[tuple[str, list[int] | None]] = []
        for part in parts:
            path, row_groups, piece_filters = part["piece"]
            if not isinstance(path, str) or piece_filters:
                return None
            if row_groups is not None:
                row_groups = [int(g) for g in row_groups]
            pieces.append((path, row_groups))
        if len(pieces) != X.npartitions:
            return None
        return pieces, info["fs"]
    except Exception:  # an unknown plan only means the general path
        return None


def partition_blocks(X: Any, name: str) -> tuple[list[Any], list[str]]:
    """The partitions of a Dask DataFrame or Array as delayed objects, with column names;
    non-numeric columns are refused from the metadata, before anything is computed."""
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(X, dd.Series):
        X = X.to_frame()
    if isinstance(X, dd.DataFrame):
        columns = [str(c) for c in X.columns]
        bad = [str(c) for c in X.columns if not pd.api.types.is_numeric_dtype(X.dtypes[c])]
        if bad:
            shown = ", ".join(repr(c) for c in bad[:5])
            raise ValueError(
                f"{name} has non-numeric column(s) {shown}; encode or drop them before "
                "estimating"
            )
        if not columns:
            raise ValueError(f"{name} has no columns")
        return list(X.to_delayed()), columns
    if isinstance(X, da.Array):
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2:
            raise ValueError(
                f"{name} must be two-dimensional (records x features); got {X.ndim} "
                "dimension(s)"
            )
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise ValueError(f"{name} must be numeric; got an array of dtype {X.dtype}")
        if np.isnan(X.shape[1]):
            raise ValueError(f"{name} has an unknown number of columns; call X.compute_chunk_sizes()")
        p = int(X.shape[1])
        if p == 0:
            raise ValueError(f"{name} has no columns")
        X = X.rechunk({1: -1})
        return list(X.to_delayed().ravel()), [f"x{j}" for j in range(p)]
    raise TypeError(
        f"{name} is a {type(X).__module__}.{type(X).__name__}; Dask input must be a "
        "dask.dataframe.DataFrame or a dask.array.Array"
    )


def _target_blocks(y: Any, partitions: int) -> list[Any]:
    """The partitions of a regression's target ``y``, which must be a Dask Series (or a
    one-column DataFrame) or a one-dimensional Dask Array with as many partitions as the
    features; refused from the metadata, before anything is computed."""
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(y, dd.DataFrame):
        if len(y.columns) != 1:
            raise ValueError(f"y must be one-dimensional; got {len(y.columns)} columns")
        y = y[y.columns[0]]
    if isinstance(y, dd.Series):
        if not pd.api.types.is_numeric_dtype(y.dtype):
            raise ValueError("y must be a one-dimensional array of numbers")
        targets = list(y.to_delayed())
    elif isinstance(y, da.Array):
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1:
            raise ValueError(f"y must be one-dimensional; got an array of shape {y.shape}")
        targets = list(y.to_delayed().ravel())
    else:
        raise TypeError(
            "with Dask X, y must be a Dask Series or Array with the same partitions as X "
            "(for example a column of the same Dask DataFrame)"
        )
    if len(targets) != partitions:
        raise ValueError(
            f"y must have the same partitions as X; X has {partitions}, y has "
            f"{len(targets)} (take both from one Dask DataFrame, or rechunk)"
        )
    return targets


def _with_target(block: Any, target: Any, index: int) -> np.ndarray:
    """One partition of a regression's records ``[x, y]``: the features with the target as
    their last column."""
    if isinstance(block, pd.Series):
        block = block.to_frame()
    values = (block.to_numpy(dtype=float) if isinstance(block, pd.DataFrame)
              else np.asarray(block, dtype=float))
    if values.ndim == 1:
        values = values[:, None]
    y = np.asarray(target.to_numpy(dtype=float) if hasattr(target, "to_numpy") else target,
                   dtype=float).reshape(-1)
    if y.shape[0] != values.shape[0]:
        raise ValueError(
            f"y must have one value per record of X; partition {index} has "
            f"{values.shape[0]} records and {y.shape[0]} values of y"
        )
    return np.column_stack([values, y])


@dataclass
class PassResult:
    """A pass task's state over some partitions, with their record counts (to place the
    first bad value) and the first NaN / infinite value, if any."""

    state: Any
    rows: int
    counts: dict[int, int]
    bad: tuple[int, int, int] | None  # (partition, row in partition, column)
    low: np.ndarray | None = None  # each column's smallest and largest value
    high: np.ndarray | None = None


def _pass_rows(p: int) -> int:
    """Rows per block handed to a pass task: about 4 MB of values."""
    return max(1024, (4 << 20) // (8 * max(p, 1)))


def _run_columns(task: Any, index: int, p: int,
                 column_batches: Any, allow_missing: bool = False) -> PassResult:
    """Run ``task`` over batches of columns (each a list of ``p`` 1-D arrays), copied
    block by block into one column-major buffer and checked before they are added (NaN
    passes as a missing value with ``allow_missing``; an infinite value never does)."""
    state = task.new(p)
    rows = 0
    buffer: np.ndarray | None = None
    low, high = np.full(p, np.nan), np.full(p, np.nan)
    for columns in column_batches:
        length = len(columns[0]) if columns else 0
        step = _pass_rows(p)
        for start in range(0, length, step):
            stop = min(start + step, length)
            if buffer is None or buffer.shape[0] < stop - start:
                buffer = np.empty((min(step, max(length, 1)), p), order="F")
            block = buffer[: stop - start]
            for j, column in enumerate(columns):
                block[:, j] = column[start:stop]
            # Column sums propagate NaN and inf: the exact search runs only on failure.
            if not np.isfinite(block.sum(axis=0)).all():
                finite = np.isfinite(block)
                if allow_missing:
                    finite |= np.isnan(block)
                if not finite.all():
                    row, col = np.argwhere(~finite)[0]
                    return PassResult(None, 0, {index: 0},
                                      (index, rows + start + int(row), int(col)))
            _extend_range(low, high, block)
            task.add(state, block)
        rows += length
    return PassResult(state, rows, {index: rows}, None, low, high)


def _partition_pass(block: Any, index: int, task: Any, p: int,
                    allow_missing: bool = False) -> PassResult:
    """``task`` over one in-memory partition (pandas DataFrame or NumPy block)."""
    if isinstance(block, pd.Series):
        block = block.to_frame()
    if isinstance(block, pd.DataFrame):
        columns = [block.iloc[:, j].to_numpy(dtype=float) for j in range(block.shape[1])]
    else:
        values = np.asarray(block, dtype=float)
        if values.ndim == 1:
            values = values[:, None]
        columns = [values[:, j] for j in range(values.shape[1])]
    return _run_columns(task, index, p, [columns], allow_missing)


def _parquet_batches(path: str, row_groups: list[int] | None, filesystem: Any,
                     names: list[str], batch_rows: int) -> Any:
    """The columns of one Parquet piece, ``batch_rows`` rows at a time, decoded by pyarrow
    (no pandas DataFrame: its conversion costs more than the work on the records)."""
    import pyarrow.parquet as pq

    local = type(filesystem).__name__ == "LocalFileSystem"
    # A local file is memory-mapped: pyarrow decodes its pages without first copying
    # them into a read buffer.
    with (contextlib.nullcontext(path) if local else filesystem.open(path, "rb")) as source, \
            pq.ParquetFile(source, memory_map=local) as reader:
        for batch in reader.iter_batches(batch_size=batch_rows, row_groups=row_groups,
                                         columns=names, use_threads=False):
            yield [batch.column(j).to_numpy(zero_copy_only=False) for j in range(len(names))]


def _parquet_pass(path: str, row_groups: list[int] | None, index: int, filesystem: Any,
                  names: list[str], task: Any, allow_missing: bool = False) -> PassResult:
    """``task`` over one Parquet piece, read straight into blocks."""
    return _run_columns(task, index, len(names),
                        _parquet_batches(path, row_groups, filesystem, names,
                                         _pass_rows(len(names))), allow_missing)


def _merge_passes(task: Any, *parts: PassResult) -> PassResult:
    """Add up the results of some partitions, in partition order."""
    state = None
    rows = 0
    counts: dict[int, int] = {}
    bad = None
    low = high = None
    for part in parts:
        if part.state is not None:
            state = part.state if state is None else task.merge(state, part.state)
        rows += part.rows
        counts.update(part.counts)
        if part.bad is not None and (bad is None or part.bad < bad):
            bad = part.bad
        low, high = _merge_range(low, high, part.low, part.high)
    return PassResult(state, rows, counts, bad, low, high)


class DaskRecords(Records):
    """A Dask DataFrame or Array as records (:class:`~dpggm.data.passes.Records`): every
    pass runs partition by partition on the workers, block by block, and the partitions'
    states are added up by a tree reduction (fan-in 8, in partition order); only the
    reduced state comes back to the client.

    A DataFrame that is only ``dd.read_parquet`` is read by the workers with pyarrow
    straight into blocks on every pass (see :func:`parquet_pieces`). Values are checked on
    every pass: a NaN or infinite value is reported with its row and column, as in memory;
    the first pass refuses a column with no value or a single value (before any draw).
    ``n_samples`` is known after the first pass. A task refuses the records' width (a
    bound of another length, say) on the client, before any partition is read.

    With ``target`` (a regression's ``y``: a Dask Series or Array with the partitions of
    ``X``) each record is ``[x, y]``, the target its last column (named ``"y"``).

    Privacy
    -------
    Nothing here draws noise or publishes anything; the workers' states are the exact
    counts and sums of the curator's records.
    """

    def __init__(self, X: Any, *, name: str = "X", missing: str = "refuse",
                 target: Any = None) -> None:
        import dask

        super().__init__()
        self.name = name
        self.allow_missing = missing != "refuse"
        self._blocks, self.columns = partition_blocks(X, name)
        self._pieces = parquet_pieces(X) if target is None else None
        self._names = [str(c) for c in X.columns] if self._pieces is not None else []
        self._target = target is not None
        if self._target:
            targets = _target_blocks(target, len(self._blocks))
            self._blocks = [dask.delayed(_with_target, pure=True)(block, y, k)
                            for k, (block, y) in enumerate(zip(self._blocks, targets))]
            self.columns = [*self.columns, "y"]
        self.n_features = len(self.columns)
        self._checked = False

    def run(self, task: PassTask) -> Any:
        import dask

        p = self.n_features
        empty = task.new(p)
        if self._pieces is not None:
            files, filesystem = self._pieces
            level = [dask.delayed(_parquet_pass, pure=True)(path, groups, k, filesystem,
                                                            self._names, task,
                                                            self.allow_missing)
                     for k, (path, groups) in enumerate(files)]
        else:
            level = [dask.delayed(_partition_pass, pure=True)(block, k, task, p,
                                                              self.allow_missing)
                     for k, block in enumerate(self._blocks)]
        result: PassResult = _tree_reduce(level, functools.partial(_merge_passes, task))
        if result.bad is not None:
            part, row, col = result.bad
            if self._target and col == p - 1:
                raise ValueError(
                    "y contains NaN or infinite values; remove or impute them before fitting")
            before = sum(count for k, count in result.counts.items() if k < part)
            raise bad_value_error(self.name, "row", before + row, self.columns[col],
                                  allow_missing=self.allow_missing)
        self.n_samples = result.rows
        if not self._checked and result.low is not None and result.high is not None:
            # Before any draw (this is the first pass): see refuse_degenerate_columns.
            refuse_degenerate_columns(result.low, result.high, self.columns, where=self.name,
                                      drop="leave it out of the DataFrame")
            self._checked = True
        return task.finish(result.state if result.state is not None else empty)


def _first_header(source: TableFile) -> tuple[Any, bytes, list[Any]]:
    """The files of a CSV glob (fsspec, decompressed by their suffix) and the first
    megabyte of the first one."""
    import fsspec

    files = fsspec.open_files(str(source.path), mode="rb", compression="infer")
    if len(files) == 0:
        raise FileNotFoundError(f"no file matches {str(source.path)!r}")
    with files[0] as handle:
        raw = handle.read(1 << 20)
    return files[0], raw, list(files)


def resolve_columns(source: TableFile | str) -> ResolvedColumns:
    """The columns of a CSV or Parquet glob (or URL) as its schema makes them, from the
    first file's header or the files' metadata (public; no value is read)."""
    if not isinstance(source, TableFile):
        source = TableFile(source)
    if source.kind == "parquet":
        import dask.dataframe as dd

        names = [str(c) for c in dd.read_parquet(str(source.path)).columns]
        index = source.index_col
        if isinstance(index, str):
            index = names.index(index) if index in names else None
        return source.table_schema.resolve(
            names, where=_where(source), identifiers_at=() if index is None else (int(index),))
    first, raw, _ = _first_header(source)
    return read_layout(TableFile(first.path, **_options(source)), raw=raw).resolved


def _where(source: TableFile) -> str:
    return source.where.replace(" file ", " files ")


def read_dask(source: TableFile | str, *, blocksize: int | str | None = None) -> Any:
    """Open a CSV or Parquet glob (local path or any fsspec URL) as a Dask DataFrame.

    The same options and checks as :class:`~dpggm.data.tables.TableFile` in memory: a
    CSV header is checked on the first matching file (no header row, duplicated or unnamed
    columns, another delimiter, another encoding) and the table's schema applied to it
    before anything is read in parallel; every used column is read as float64, so a
    non-numeric value is reported with its column. A row with no value at all (a blank
    line, a row of bare delimiters, a row whose every field is missing) is not a record,
    as in memory; a compressed CSV file (``.gz``, ``.bz2``, ``.xz``, ``.zst``) is read
    whole by one worker (it cannot be split).
    """
    import dask.dataframe as dd

    if not isinstance(source, TableFile):
        source = TableFile(source)
    if source.kind not in ("csv", "parquet"):
        raise ValueError(f"{_where(source)}: the Dask engine reads CSV and Parquet files; read "
                         "this file in memory (--engine memory, the default)")
    where = _where(source)
    if source.kind == "parquet":
        import fsspec

        if len(fsspec.open_files(str(source.path), mode="rb")) == 0 and not (
                os.path.isdir(source.path)):
            raise FileNotFoundError(f"no file matches {str(source.path)!r}")
        resolved = resolve_columns(source)
        frame = dd.read_parquet(str(source.path),
                                blocksize=blocksize if blocksize is not None else "default")
        # A row with no value in any column of the file is not a record; the files'
        # statistics tell when no such row can exist (the filter is then left out, and
        # the workers keep their fast path).
        if _may_hold_empty_rows(frame):
            frame = frame.dropna(how="all")
        _warn_identifier_names(resolved.variables, source.terms)
        return frame[resolved.variables]
    first, raw, files = _first_header(source)
    layout = read_layout(TableFile(first.path, **_options(source)), raw=raw)
    names = layout.names
    if source.header is not False:
        # Every file is read with the first file's names: a file with other columns (or
        # another order) would be silently misaligned, so all headers must agree.
        first_line = raw.split(b"\n", 1)[0].rstrip(b"\r")
        for other in files[1:]:
            with other as handle:
                line = handle.readline().rstrip(b"\r\n")
            if line != first_line:
                raise ValueError(
                    f"{where}: the header of {other.path!r} ({line[:80]!r}) differs from "
                    f"that of {first.path!r} ({first_line[:80]!r}); all files must have "
                    "the same columns in the same order"
                )
    use = [names[j] for j in layout.use]
    compressed = source.compression is not None
    markers = list(DEFAULT_NA_VALUES) + [m.strip() for m in source.na_values]
    try:
        frame = dd.read_csv(
            str(source.path),
            sep=source.delimiter,
            decimal=source.decimal,
            thousands=source.thousands,
            header=0 if source.header is not False else None,
            names=names,
            dtype={name: ("float64" if name in use else "object") for name in names},
            na_values=markers,
            keep_default_na=False,
            skipinitialspace=True,
            encoding=source.encoding,
            compression="infer",
            blocksize=None if compressed else (
                blocksize if blocksize is not None else "default"),
            skip_blank_lines=True,
        )
    except ValueError as exc:
        raise ValueError(f"{where} could not be read: {exc}") from None
    _warn_identifier_names(use, source.terms)
    # Rows of bare delimiters (or of markers only) are not records either.
    return frame.dropna(how="all")[use]


def _warn_identifier_names(columns: list[str], terms: str) -> None:
    """The curator's warning about variables named like identifiers (from the names only:
    the cluster's values are not looked at in file order)."""
    profile = ColumnProfile(len(columns))
    profile.counting[:] = False
    profile.warn_identifiers(columns, terms=terms)


def _may_hold_empty_rows(frame: Any) -> bool:
    """Whether a Dask DataFrame read from Parquet may hold a row with no value, from the
    files' statistics (every row group needs a column without nulls); True when they do
    not say. Filtering costs the workers' fast Parquet path (:func:`parquet_pieces`)."""
    pieces = parquet_pieces(frame)
    if pieces is None:
        return True
    import pyarrow.parquet as pq

    files, filesystem = pieces
    names = [str(c) for c in frame.columns]
    for path, groups in files:
        with filesystem.open(path, "rb") as handle:
            metadata = pq.ParquetFile(handle).metadata
            schema = metadata.schema.to_arrow_schema()
            positions = [schema.get_field_index(n) for n in names]
            for g in (groups if groups is not None else range(metadata.num_row_groups)):
                group = metadata.row_group(g)
                if not any((st := group.column(j).statistics) is not None
                           and st.has_null_count and st.null_count == 0 for j in positions):
                    return True
    return False


def _options(source: TableFile) -> dict[str, Any]:
    # The schema holds columns, drop, id_columns and scales already.
    return {
        "delimiter": source.delimiter, "decimal": source.decimal, "header": source.header,
        "index_col": source.index_col, "encoding": source.encoding, "format": "csv",
        "schema": source.table_schema, "na_values": source.na_values,
        "thousands": source.thousands, "terms": source.terms,
    }
