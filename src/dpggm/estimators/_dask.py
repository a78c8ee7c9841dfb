"""Dask back end of the data path (optional extra ``dpggm[dask]``).

Imported only when an input is a Dask collection (see
:func:`dpggm.estimators.data.is_dask_collection`), so ``import dpggm`` never imports Dask.

The only step that touches records is clip -> sums. Each partition computes its clipped
statistics (``X^T X``, column sums, count, clipped count, and the first non-finite value
if any); a tree reduction adds them; the client normalises them with the same code as the
in-memory path (:func:`dpggm.estimators.data.finish_second_moment`). Noise is drawn once,
on the client, by the estimator, after the reduction: a seeded release through Dask equals
the in-memory one (up to floating-point summation order in the statistic, ~1e-15
relative), and the budget spent is the same.

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
the exact ones of the curator and leave the cluster only as the reduced ``p x p`` sums.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpggm.estimators.data import (
    SecondMoment,
    TableFile,
    check_center,
    finish_second_moment,
    read_layout,
)
from dpggm.mechanisms.bounds import Bounds

__all__ = [
    "PartitionStats",
    "clipped_second_moment",
    "read_dask",
    "reduce_partitions",
    "regression_statistics",
    "show_progress",
]

#: Set (by the CLI) to show Dask's progress bar while a reduction runs.
show_progress: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "dpggm_dask_progress", default=False
)

_FAN_IN = 8
_SLICE_ROWS = 8192


@dataclass
class PartitionStats:
    """Summed clipped statistics of some partitions (exact; curator side)."""

    gram: np.ndarray | None
    total: np.ndarray | None
    n: int
    n_clipped: int
    counts: dict[int, int]  # records per partition index (to place the first bad value)
    bad: tuple[int, int, int] | None  # (partition, row in partition, column) of a NaN/inf


def _partition_stats(
    block: Any, index: int, bounds: Bounds, center: np.ndarray | None
) -> PartitionStats:
    """Clipped sums of one partition, computed slice by slice: each slice is converted to a
    float matrix, checked, clipped and multiplied out while it is in cache, and no copy of
    the whole partition is made."""
    if isinstance(block, pd.DataFrame):
        frame = block

        def piece_of(start: int, stop: int) -> np.ndarray:
            return frame.iloc[start:stop].to_numpy(dtype=float)
    else:
        values = np.asarray(block, dtype=float)
        if values.ndim == 1:
            values = values[:, None]

        def piece_of(start: int, stop: int) -> np.ndarray:
            return values[start:stop]
    rows = len(block)
    if rows == 0:
        return PartitionStats(None, None, 0, 0, {index: 0}, None)
    gram = total = None
    changed = 0
    for start in range(0, rows, _SLICE_ROWS):
        piece = piece_of(start, start + _SLICE_ROWS)
        # Column sums propagate NaN and inf: a cheap test, with the exact search only on
        # failure (an overflowing sum of finite values merely triggers the search).
        if not np.isfinite(piece.sum(axis=0)).all():
            finite = np.isfinite(piece)
            if not finite.all():
                row, col = np.argwhere(~finite)[0]
                return PartitionStats(None, None, rows, 0, {index: rows},
                                      (index, start + int(row), int(col)))
        if center is not None:
            piece = piece - center
        clipped, count = bounds.clip(piece)
        if gram is None:
            gram = clipped.T @ clipped
            total = clipped.sum(axis=0)
        else:
            gram += clipped.T @ clipped
            total += clipped.sum(axis=0)
        changed += count
    return PartitionStats(gram, total, rows, changed, {index: rows}, None)


def _combine(*parts: PartitionStats) -> PartitionStats:
    gram = total = None
    n = n_clipped = 0
    counts: dict[int, int] = {}
    bad = None
    for part in parts:
        if part.gram is not None:
            gram = part.gram.copy() if gram is None else gram + part.gram
            total = part.total.copy() if total is None else total + part.total
        n += part.n
        n_clipped += part.n_clipped
        counts.update(part.counts)
        if part.bad is not None and (bad is None or part.bad < bad):
            bad = part.bad
    return PartitionStats(gram, total, n, n_clipped, counts, bad)


def reduce_partitions(
    blocks: Sequence[Any], statistic: Callable[..., Any], combine: Callable[..., Any],
    *args: Any,
) -> Any:
    """Apply ``statistic(block, index, *args)`` to every block and tree-reduce the results
    with ``combine`` (fan-in 8), computing on the current Dask scheduler."""
    import dask

    level = [dask.delayed(statistic, pure=True)(block, k, *args)
             for k, block in enumerate(blocks)]
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


def clipped_second_moment(
    X: Any, *, bounds: Bounds, center: np.ndarray | None = None, name: str = "X"
) -> SecondMoment:
    """The clipped second moment of a Dask DataFrame / Array, reduced on the cluster.

    Same checks and messages as in memory (bound length and centre before any work;
    NaN / infinite values with their 0-based row and column name); the result equals
    :func:`dpggm.estimators.data.clipped_second_moment` on the same records.
    """
    blocks, columns = partition_blocks(X, name)
    p = len(columns)
    bounds.check_dimension(p)
    center = check_center(center, p)
    stats: PartitionStats = reduce_partitions(blocks, _partition_stats, _combine, bounds, center)
    if stats.bad is not None:
        part, row, col = stats.bad
        before = sum(count for k, count in stats.counts.items() if k < part)
        raise ValueError(
            f"{name} contains NaN or infinite values (first at row {before + row}, "
            f"column {columns[col]!r}); remove or impute them before estimating"
        )
    if stats.gram is None or stats.total is None:
        raise ValueError(f"{name} needs at least 2 records (rows); got 0")
    return finish_second_moment(stats.gram, stats.total, stats.n, stats.n_clipped, columns,
                                name=name)


def _regression_partition(
    block: Any, target: Any, index: int, bounds: Bounds, y_bound: float, fit_intercept: bool
) -> dict[str, Any]:
    values = block.to_numpy(dtype=float) if isinstance(block, pd.DataFrame) else (
        np.asarray(block, dtype=float))
    if values.ndim == 1:
        values = values[:, None]
    y = np.asarray(target.to_numpy(dtype=float) if hasattr(target, "to_numpy") else target,
                   dtype=float).reshape(-1)
    rows = values.shape[0]
    result: dict[str, Any] = {"counts": {index: rows}, "bad": None, "bad_y": None,
                              "lengths": {index: (rows, y.shape[0])}, "gram": None,
                              "moment": None}
    if y.shape[0] != rows:
        return result
    finite = np.isfinite(values)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        result["bad"] = (index, int(row), int(col))
        return result
    if not np.isfinite(y).all():
        result["bad_y"] = (index, int(np.flatnonzero(~np.isfinite(y))[0]))
        return result
    features, _ = bounds.clip(values)
    if fit_intercept:
        features = np.hstack([features, np.ones((rows, 1))])
    y = np.clip(y, -y_bound, y_bound)
    result["gram"] = features.T @ features
    result["moment"] = features.T @ y
    return result


def _regression_combine(*parts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"counts": {}, "bad": None, "bad_y": None, "lengths": {},
                           "gram": None, "moment": None}
    for part in parts:
        out["counts"].update(part["counts"])
        out["lengths"].update(part["lengths"])
        for key in ("bad", "bad_y"):
            if part[key] is not None and (out[key] is None or part[key] < out[key]):
                out[key] = part[key]
        if part["gram"] is not None:
            out["gram"] = part["gram"] if out["gram"] is None else out["gram"] + part["gram"]
            out["moment"] = (part["moment"] if out["moment"] is None
                             else out["moment"] + part["moment"])
    return out


def regression_statistics(
    X: Any, y: Any, *, bounds: Bounds, y_bound: float, fit_intercept: bool
) -> tuple[np.ndarray, np.ndarray, int, list[str]]:
    """Clipped ``[X, 1]^T [X, 1]`` and ``[X, 1]^T y`` of Dask ``X`` and ``y`` with the same
    partitions (for example columns of one Dask DataFrame), tree-reduced.

    Same checks and messages as in memory; returns ``(gram, moment, n, columns)``.
    """
    import dask.array as da
    import dask.dataframe as dd

    blocks, columns = partition_blocks(X, "X")
    bounds.check_dimension(len(columns))
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
    if len(targets) != len(blocks):
        raise ValueError(
            f"y must have the same partitions as X; X has {len(blocks)}, y has {len(targets)} "
            "(take both from one Dask DataFrame, or rechunk)"
        )
    import dask

    level = [dask.delayed(_regression_partition, pure=True)(block, target, k, bounds,
                                                            float(y_bound), fit_intercept)
             for k, (block, target) in enumerate(zip(blocks, targets))]
    combine = dask.delayed(_regression_combine, pure=True)
    while len(level) > 1:
        level = [combine(*level[k:k + _FAN_IN]) for k in range(0, len(level), _FAN_IN)]
    stats = _compute(level[0])
    mismatched = {k: v for k, v in stats["lengths"].items() if v[0] != v[1]}
    if mismatched:
        k, (rows, values) = min(mismatched.items())
        raise ValueError(
            f"y must have one value per record of X; partition {k} has {rows} records and "
            f"{values} values of y"
        )

    def before(part: int) -> int:
        return sum(count for k, count in stats["counts"].items() if k < part)

    if stats["bad"] is not None:
        part, row, col = stats["bad"]
        raise ValueError(
            f"X contains NaN or infinite values (first at row {before(part) + row}, column "
            f"{columns[col]!r}); remove or impute them before estimating"
        )
    if stats["bad_y"] is not None:
        raise ValueError("y contains NaN or infinite values; remove or impute them before fitting")
    n = sum(stats["counts"].values())
    if stats["gram"] is None or n < 2:
        raise ValueError(f"X needs at least 2 records (rows); got {n}")
    gram = stats["gram"]
    return (gram + gram.T) / 2, stats["moment"], n, columns


def read_dask(source: TableFile | str, *, blocksize: int | str | None = None) -> Any:
    """Open a CSV or Parquet glob (local path or any fsspec URL) as a Dask DataFrame.

    The same options and checks as :class:`~dpggm.estimators.data.TableFile` in memory: a
    CSV header is checked on the first matching file (no header row, duplicated or unnamed
    columns, another delimiter, another encoding) before anything is read in parallel;
    every column is read as float64, so a non-numeric value is reported with its column.
    """
    import dask.dataframe as dd
    import fsspec

    if not isinstance(source, TableFile):
        source = TableFile(source)
    where = source.where.replace(" file ", " files ")
    files = fsspec.open_files(str(source.path), mode="rb")
    if len(files) == 0:
        raise FileNotFoundError(f"no file matches {str(source.path)!r}")
    if source.kind == "parquet":
        frame = dd.read_parquet(str(source.path), columns=list(source.columns)
                                if source.columns is not None else None,
                                blocksize=blocksize if blocksize is not None else "default")
        names = [str(c) for c in frame.columns]
        if source.index_col is not None:
            index = source.index_col if isinstance(source.index_col, str) else (
                names[int(source.index_col)])
            frame = frame.drop(columns=[index])
        return frame
    with files[0] as handle:
        raw = handle.read(1 << 20)
    layout = read_layout(TableFile(files[0].path, **_options(source)), raw=raw)
    names = layout.names
    if source.header:
        # Every file is read with the first file's names: a file with other columns (or
        # another order) would be silently misaligned, so all headers must agree.
        first_line = raw.split(b"\n", 1)[0].rstrip(b"\r")
        for other in files[1:]:
            with other as handle:
                line = handle.readline().rstrip(b"\r\n")
            if line != first_line:
                raise ValueError(
                    f"{where}: the header of {other.path!r} ({line[:80]!r}) differs from "
                    f"that of {files[0].path!r} ({first_line[:80]!r}); all files must have "
                    "the same columns in the same order"
                )
    use = [names[j] for j in layout.use]
    try:
        frame = dd.read_csv(
            str(source.path),
            sep=source.delimiter,
            decimal=source.decimal,
            header=0 if source.header else None,
            names=names,
            usecols=use,
            dtype=dict.fromkeys(use, "float64"),
            encoding=source.encoding,
            blocksize=blocksize if blocksize is not None else "default",
            skip_blank_lines=False,
        )
    except ValueError as exc:
        raise ValueError(f"{where} could not be read: {exc}") from None
    return frame[use]


def _options(source: TableFile) -> dict[str, Any]:
    return {
        "columns": source.columns, "delimiter": source.delimiter, "decimal": source.decimal,
        "header": source.header, "index_col": source.index_col, "encoding": source.encoding,
        "format": source.format,
    }
