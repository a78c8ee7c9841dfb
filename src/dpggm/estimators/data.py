"""The data path: from user input to the clipped second moment.

Input may be a NumPy array, a pandas DataFrame, or the path of a CSV file (with a header
row). Every input is checked for what would silently corrupt a private release: NaN or
infinite values, non-numeric columns, fewer than two records, and bounds of the wrong
length. CSV files are read in chunks, so a file larger than memory is processed with
memory ``O(p^2)`` plus one chunk.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm.mechanisms.bounds import Bounds

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "SecondMoment",
    "as_matrix",
    "clipped_second_moment",
    "iter_chunks",
]

#: Rows per chunk when streaming a CSV file.
DEFAULT_CHUNK_ROWS = 200_000

DataLike = "np.ndarray | pd.DataFrame | str | os.PathLike"


def _is_path(X: Any) -> bool:
    return isinstance(X, (str, os.PathLike))


def _column_names(X: Any, p: int) -> list[str]:
    if isinstance(X, pd.DataFrame):
        return [str(c) for c in X.columns]
    return [f"x{j}" for j in range(p)]


def _check_frame(frame: pd.DataFrame, *, where: str) -> np.ndarray:
    bad = [str(c) for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        raise ValueError(
            f"{where} has non-numeric column(s) {shown}; encode or drop them before estimating"
        )
    return _check_array(frame.to_numpy(dtype=float), columns=[str(c) for c in frame.columns],
                        where=where)


def _check_array(
    values: np.ndarray, *, columns: list[str] | None, where: str, row_offset: int = 0
) -> np.ndarray:
    if values.ndim != 2:
        raise ValueError(
            f"{where} must be two-dimensional (records x features); got {values.ndim} dimension(s)"
        )
    if values.shape[1] == 0:
        raise ValueError(f"{where} has no columns")
    finite = np.isfinite(values)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        name = columns[col] if columns else f"x{col}"
        raise ValueError(
            f"{where} contains NaN or infinite values (first at row {row + row_offset}, "
            f"column {name!r}); remove or impute them before estimating"
        )
    return values


def as_matrix(X: Any, *, name: str = "X") -> tuple[np.ndarray, list[str]]:
    """Validate an in-memory input (array, DataFrame or CSV path) and return it as a float
    matrix with its column names."""
    if type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(
            f"{name} is a scipy.sparse matrix; sparse matrices are not supported: pass a dense "
            f"array ({name}.toarray()) if it fits in memory"
        )
    if _is_path(X):
        frame = _read_csv(Path(X))
        values = _check_frame(frame, where=f"CSV file {str(X)!r}")
        columns = [str(c) for c in frame.columns]
    elif isinstance(X, pd.DataFrame):
        complex_columns = [str(c) for c in X.columns if pd.api.types.is_complex_dtype(X[c])]
        if complex_columns:
            raise ValueError(
                f"{name} has complex-valued column(s) {complex_columns[:5]}; complex data are "
                "not supported"
            )
        values = _check_frame(X, where=name)
        columns = _column_names(X, values.shape[1])
    else:
        try:
            values = np.asarray(X)
        except Exception as exc:  # pragma: no cover - exotic inputs
            raise TypeError(f"{name} must be an array, a DataFrame or a CSV path") from exc
        if np.iscomplexobj(values):
            raise ValueError(
                f"{name} has complex values (dtype {values.dtype}); complex data are not supported"
            )
        if values.dtype == object or not (
            np.issubdtype(values.dtype, np.number) or values.dtype == bool
        ):
            raise ValueError(f"{name} must be numeric; got an array of dtype {values.dtype}")
        values = _check_array(values.astype(float, copy=False), columns=None, where=name)
        columns = _column_names(X, values.shape[1])
    if values.shape[0] < 2:
        raise ValueError(f"{name} needs at least 2 records (rows); got {values.shape[0]}")
    return values, columns


def _read_csv(path: Path, chunksize: int | None = None) -> Any:
    if not path.exists():
        raise FileNotFoundError(f"no such CSV file: {str(path)!r}")
    try:
        return pd.read_csv(path, chunksize=chunksize)
    except pd.errors.EmptyDataError:
        raise ValueError(f"CSV file {str(path)!r} is empty") from None


def iter_chunks(
    X: Any, *, chunk_rows: int = DEFAULT_CHUNK_ROWS
) -> Iterator[tuple[np.ndarray, list[str], int]]:
    """Yield ``(values, columns, first_row)`` chunks of a validated input.

    Arrays and DataFrames are sliced; CSV files are streamed from disk.
    """
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be a positive integer; got {chunk_rows!r}")
    if _is_path(X):
        where = f"CSV file {str(X)!r}"
        first = 0
        columns: list[str] | None = None
        for frame in _read_csv(Path(X), chunksize=chunk_rows):
            if columns is None:
                columns = [str(c) for c in frame.columns]
            values = _check_frame(frame, where=where) if first == 0 else None
            if values is None:
                bad = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
                if bad:
                    raise ValueError(
                        f"{where} has non-numeric value(s) in column {str(bad[0])!r} "
                        f"after row {first}"
                    )
                values = _check_array(
                    frame.to_numpy(dtype=float), columns=columns, where=where, row_offset=first
                )
            yield values, columns, first
            first += values.shape[0]
        if columns is None:
            raise ValueError(f"{where} has a header but no records")
        return
    values, columns = as_matrix(X)
    for start in range(0, values.shape[0], chunk_rows):
        yield values[start : start + chunk_rows], columns, start


@dataclass(frozen=True)
class SecondMoment:
    """Exact statistics of the clipped records (curator side; never released as is).

    Attributes
    ----------
    second_moment : ndarray (p, p)
        ``X^T X / n`` of the clipped (and, with a public centre, centred) records.
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


def clipped_second_moment(
    X: Any,
    *,
    bounds: Bounds,
    center: np.ndarray | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
) -> SecondMoment:
    """Clip every record to ``bounds`` and accumulate ``X^T X / n`` in chunks.

    Parameters
    ----------
    X : array, DataFrame or CSV path
    bounds : Bounds
        Declared bounds; records are clipped to them (after subtracting ``center``).
    center : ndarray of shape (p,), optional
        A public mean subtracted from every record before clipping.
    chunk_rows : int
        Rows per chunk (memory is ``O(p^2)`` plus one chunk).
    """
    gram: np.ndarray | None = None
    total: np.ndarray | None = None
    n = 0
    n_clipped = 0
    columns: list[str] = []
    for values, chunk_columns, _ in iter_chunks(X, chunk_rows=chunk_rows):
        columns = chunk_columns
        p = values.shape[1]
        if gram is None:
            bounds.check_dimension(p)
            if center is not None:
                center = np.asarray(center, dtype=float)
                if center.shape != (p,) or not np.all(np.isfinite(center)):
                    raise ValueError(
                        f"center must be a finite vector of length {p} (one per column); "
                        f"got shape {center.shape}"
                    )
            gram = np.zeros((p, p))
            total = np.zeros(p)
        if center is not None:
            values = values - center
        clipped, changed = bounds.clip(values)
        gram += clipped.T @ clipped
        total += clipped.sum(axis=0)
        n += clipped.shape[0]
        n_clipped += changed
    if gram is None or n < 2:
        raise ValueError(f"X needs at least 2 records (rows); got {n}")
    second_moment = gram / n
    # Symmetrise exactly: the chunked products are symmetric only up to rounding.
    second_moment = (second_moment + second_moment.T) / 2
    return SecondMoment(second_moment, total, n, n_clipped, list(columns))
