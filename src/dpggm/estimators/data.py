"""The data path: from user input to the clipped second moment.

Input may be a NumPy array, a pandas DataFrame, the path of a CSV or Parquet file (or a
:class:`TableFile` carrying reading options), or a Dask DataFrame / Array (optional extra
``dpggm[dask]``). Every input is checked for what would silently corrupt a private release:
NaN or infinite values, non-numeric columns, fewer than two records, bounds of the wrong
length, and, for CSV files, the usual ways a file is misread (no header row, duplicated or
empty column names, an index column, another delimiter or decimal mark, another encoding).
Files are read in blocks (pyarrow), so a file larger than memory is processed with memory
``O(p^2)`` plus one block.

Messages about files use the file's own terms: 1-based line numbers (the header is line 1)
and column names.

Dask input is reduced on the cluster (see :mod:`dpggm.estimators._dask`); this module
recognises it by the module name of its type, so that ``import dpggm`` never imports Dask.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm import _progress
from dpggm.mechanisms.bounds import Bounds

__all__ = [
    "DEFAULT_BLOCK_BYTES",
    "DEFAULT_CHUNK_ROWS",
    "SecondMoment",
    "TableFile",
    "as_matrix",
    "clipped_second_moment",
    "is_dask_collection",
    "is_path",
    "iter_chunks",
]

#: Rows per chunk when slicing arrays or reading Parquet row groups.
DEFAULT_CHUNK_ROWS = 200_000
#: Bytes per block when streaming a CSV file.
DEFAULT_BLOCK_BYTES = 4 << 20

DataLike = "np.ndarray | pd.DataFrame | str | os.PathLike | TableFile"

_PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
_DELIMITER_HINTS = (";", "\t", "|")
_NUMBER = re.compile(r"^\s*[-+]?(\d+([.,]\d*)?|[.,]\d+)([eE][-+]?\d+)?\s*$")


def is_dask_collection(X: Any) -> bool:
    """Whether ``X`` is a Dask collection, decided without importing Dask."""
    for cls in type(X).__mro__:
        module = getattr(cls, "__module__", "") or ""
        if module.split(".")[0] in ("dask", "dask_expr"):
            return True
    return False


@dataclass(frozen=True)
class TableFile:
    """A CSV or Parquet file with the options needed to read it correctly.

    A plain path is read as ``TableFile(path)``: a comma-separated, UTF-8 CSV file with a
    header row (or a Parquet file, by its suffix).

    Parameters
    ----------
    path : str or path-like
        The file. For Dask input (``engine="dask"`` in the CLI, or
        :func:`dpggm.estimators._dask.read_dask`) a glob or any URL fsspec understands.
    columns : sequence of str, optional
        Use only these columns (in this order).
    delimiter : str
        Field separator of a CSV file (``","``; ``";"`` for many European exports).
    decimal : str
        Decimal mark of a CSV file (``"."`` or ``","``).
    header : bool
        Whether the first line holds the column names. Without one the columns are named
        ``col1, col2, ...``.
    index_col : str or int, optional
        A column holding a record identifier, not a feature: dropped. A name, or a 0-based
        position.
    encoding : str
        Text encoding of a CSV file.
    format : {"csv", "parquet"}, optional
        Default: from the suffix (``.parquet``, ``.pq``, ``.parq`` are Parquet).
    block_size : int
        Bytes per block when streaming a CSV file, and about the bytes of the parsed
        values per block of a Parquet file (memory is bounded by one block).
    scratch : str or path-like, optional
        Directory of the temporary file that keeps the parsed records between the passes of
        an estimator that reads them several times (``PrivateGraph``), when they exceed
        its memory limit; it needs room for 8 bytes per value. Default: the system's
        temporary directory (``TMPDIR``).

    Privacy
    -------
    Reading options are public choices about the file's format; nothing is learnt from
    the data except its column names, which the caller is assumed to know.
    """

    path: str | os.PathLike
    columns: Sequence[str] | None = None
    delimiter: str = ","
    decimal: str = "."
    header: bool = True
    index_col: str | int | None = None
    encoding: str = "utf-8"
    format: str | None = None
    block_size: int = DEFAULT_BLOCK_BYTES
    scratch: str | os.PathLike | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.delimiter, str) or len(self.delimiter) != 1:
            raise ValueError(
                f"delimiter must be a single character; got {self.delimiter!r}"
            )
        if self.decimal not in (".", ","):
            raise ValueError(f"decimal must be '.' or ','; got {self.decimal!r}")
        if self.decimal == self.delimiter:
            raise ValueError(
                f"decimal and delimiter must differ; both are {self.delimiter!r}"
            )
        if self.format not in (None, "csv", "parquet"):
            raise ValueError(f"format must be 'csv' or 'parquet'; got {self.format!r}")
        if isinstance(self.block_size, bool) or not isinstance(self.block_size, int) or (
            self.block_size < 1024
        ):
            raise ValueError(f"block_size must be an integer >= 1024; got {self.block_size!r}")
        if self.columns is not None and isinstance(self.columns, str):
            raise TypeError(f"columns must be a list of names; got the string {self.columns!r}")
        try:
            "x".encode(self.encoding)
        except LookupError:
            raise ValueError(f"unknown encoding {self.encoding!r}") from None

    @property
    def kind(self) -> str:
        if self.format is not None:
            return self.format
        return "parquet" if str(self.path).lower().endswith(_PARQUET_SUFFIXES) else "csv"

    @property
    def where(self) -> str:
        return f"{'Parquet' if self.kind == 'parquet' else 'CSV'} file {str(self.path)!r}"


def is_path(X: Any) -> bool:
    return isinstance(X, (str, os.PathLike, TableFile))


def _as_table(X: Any) -> TableFile:
    return X if isinstance(X, TableFile) else TableFile(X)


def _column_names(X: Any, p: int) -> list[str]:
    if isinstance(X, pd.DataFrame):
        return [str(c) for c in X.columns]
    return [f"x{j}" for j in range(p)]


def _check_frame(frame: pd.DataFrame, *, where: str, allow_missing: bool = False) -> np.ndarray:
    bad = [str(c) for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        raise ValueError(
            f"{where} has non-numeric column(s) {shown}; encode or drop them before estimating"
        )
    return _check_array(frame.to_numpy(dtype=float, na_value=np.nan),
                        columns=[str(c) for c in frame.columns], where=where,
                        allow_missing=allow_missing)


def _check_array(
    values: np.ndarray,
    *,
    columns: list[str] | None,
    where: str,
    row_offset: int = 0,
    unit: str = "row",
    allow_missing: bool = False,
) -> np.ndarray:
    """Refuse non-finite values, naming the first one (with ``allow_missing``, only
    infinite ones: NaN then marks a missing value).

    ``unit`` and ``row_offset`` translate a row of this block into the user's terms: a
    0-based ``row`` of an array, a 1-based ``line`` of a CSV file, a 1-based ``record``
    of a Parquet file.
    """
    if values.ndim != 2:
        raise ValueError(
            f"{where} must be two-dimensional (records x features); got {values.ndim} dimension(s)"
        )
    if values.shape[1] == 0:
        raise ValueError(f"{where} has no columns")
    # Column sums propagate NaN and inf: a cheap test that reads the block once, with the
    # exact search only when it fails (an overflowing sum of finite values merely
    # triggers the search).
    if values.dtype.kind == "f" and np.isfinite(values.sum(axis=0)).all():
        return values
    finite = np.isfinite(values)
    if allow_missing:
        finite |= np.isnan(values)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        name = columns[col] if columns else f"x{col}"
        if allow_missing:
            raise ValueError(
                f"{where} contains infinite values (first at {unit} {row + row_offset}, column "
                f"{name!r}); an infinite value is not a missing one: correct or remove it"
            )
        raise ValueError(
            f"{where} contains NaN or infinite values (first at {unit} "
            f"{row + row_offset}, column {name!r}); missing values (an empty field counts as "
            "missing) are refused with missing='refuse': PrivateGraph imputes them "
            "(missing='impute'; dpggm graph --missing impute), the covariance estimators "
            "under add/remove neighbours leave their rows out (missing='drop'; dpggm "
            "estimate --missing drop), or remove them before estimating"
        )
    return values


def _refuse_dask(X: Any, name: str) -> None:
    if is_dask_collection(X):
        raise TypeError(
            f"{name} is a Dask collection, but this estimator needs the individual records in "
            "memory (it makes several passes over them, or uses more than the clipped second "
            "moment). Dask input is accepted by the estimators built on the clipped second "
            "moment (PrivateCovariance and the precision / graph estimators on it, "
            "SSPCovariance, DiagonalCovariance, SeparateCovariance, PACECovariance) and by "
            "AdaSSP; "
            "otherwise call .compute() on a sample that fits in memory"
        )


def as_matrix(X: Any, *, name: str = "X", missing: str = "refuse") -> tuple[np.ndarray, list[str]]:
    """Validate an in-memory input (array, DataFrame, CSV / Parquet path or
    :class:`TableFile`) and return it as a float matrix with its column names.

    With ``missing="refuse"`` (default) a missing value (NaN, an empty field) is an error;
    otherwise it is kept as NaN for the caller's policy (infinite values are refused).

    Dask collections are refused here: estimators that accept them reduce them with
    :func:`clipped_second_moment` instead.
    """
    _refuse_dask(X, name)
    if type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(
            f"{name} is a scipy.sparse matrix; sparse matrices are not supported: pass a dense "
            f"array ({name}.toarray()) if it fits in memory"
        )
    if is_path(X):
        blocks = []
        columns: list[str] = []
        for block, block_columns, _ in iter_chunks(X, missing=missing):
            blocks.append(block)
            columns = block_columns
        values = np.concatenate(blocks, axis=0) if len(blocks) > 1 else blocks[0]
        values = np.ascontiguousarray(values)
    elif isinstance(X, pd.DataFrame):
        complex_columns = [str(c) for c in X.columns if pd.api.types.is_complex_dtype(X[c])]
        if complex_columns:
            raise ValueError(
                f"{name} has complex-valued column(s) {complex_columns[:5]}; complex data are "
                "not supported"
            )
        values = _check_frame(X, where=name, allow_missing=missing != "refuse")
        columns = _column_names(X, values.shape[1])
    else:
        if hasattr(X, "tocsr") or type(X).__module__.startswith("scipy.sparse"):
            raise TypeError(f"{name} is a sparse matrix; pass a dense array (X.toarray())")
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
        values = _check_array(values.astype(float, copy=False), columns=None, where=name,
                              allow_missing=missing != "refuse")
        columns = _column_names(X, values.shape[1])
    if values.shape[0] < 2:
        raise ValueError(f"{name} needs at least 2 records (rows); got {values.shape[0]}")
    return values, columns


# --------------------------------------------------------------------------- CSV header


@dataclass(frozen=True)
class _Layout:
    """What the header line says about a CSV file: all names, and which are used."""

    names: list[str]  # one per field of the file
    use: list[int]  # positions of the feature columns, in output order
    data_line: int  # 1-based line number of the first record


def _first_line(source: TableFile, raw: bytes) -> str:
    """Decode the first line, naming the file on an encoding error."""
    where = source.where
    if not raw.strip():
        raise ValueError(f"{where} is empty")
    line = raw.split(b"\n", 1)[0].rstrip(b"\r")
    if line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    try:
        return line.decode(source.encoding)
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{where} is not valid {source.encoding} (byte 0x{line[exc.start]:02x} on line 1); "
            "pass its encoding, e.g. encoding='latin-1' (CLI: --encoding latin-1)"
        ) from None


def _looks_numeric(text: str) -> bool:
    return bool(_NUMBER.match(text)) or text.strip().lower() in ("nan", "inf", "-inf")


def _layout(source: TableFile, first_line: str) -> _Layout:
    where = source.where
    fields = next(csv.reader([first_line], delimiter=source.delimiter))
    if len(fields) == 1 and source.delimiter == ",":
        for hint in _DELIMITER_HINTS:
            if hint in fields[0]:
                shown = {"\t": "\\t"}.get(hint, hint)
                raise ValueError(
                    f"{where} has a single column named {fields[0][:60]!r}: it looks "
                    f"{shown!r}-separated. Pass delimiter={hint!r} (CLI: --delimiter "
                    f"'{shown}'), and decimal=',' (--decimal ,) if numbers are written "
                    "like 1,5"
                )
    if source.header:
        names = [f.strip() for f in fields]
        if all(_looks_numeric(f) for f in names):
            raise ValueError(
                f"the first line of {where} looks like a record, not column names "
                f"({first_line[:60]!r}); if the file has no header row pass header=False "
                "(CLI: --no-header)"
            )
    else:
        names = [f"col{j + 1}" for j in range(len(fields))]
    index = _index_position(source, names)
    unnamed = [j for j, name in enumerate(names)
               if j != index and (not name or re.fullmatch(r"Unnamed: \d+", name))]
    if unnamed:
        j = unnamed[0]
        raise ValueError(
            f"column {j + 1} of {where} has no name (often an index written by pandas' "
            f"to_csv); if it identifies records pass index_col={j} (CLI: --index-col {j + 1}), "
            "otherwise give it a name"
        )
    seen: dict[str, int] = {}
    for j, name in enumerate(names):
        if name in seen and j != index:
            raise ValueError(
                f"{where} has the column name {name!r} twice (columns {seen[name] + 1} and "
                f"{j + 1}); rename one so that each feature is named once"
            )
        seen.setdefault(name, j)
    available = [j for j in range(len(names)) if j != index]
    if source.columns is not None:
        missing = [c for c in source.columns if c not in seen or seen[c] == index]
        if missing:
            raise ValueError(
                f"{where} has no column(s) {', '.join(repr(c) for c in missing)}; it has "
                f"{', '.join(names[j] for j in available)}"
            )
        use = [seen[c] for c in source.columns]
    else:
        use = available
    return _Layout(names, use, 2 if source.header else 1)


def _index_position(source: TableFile, names: list[str]) -> int | None:
    index = source.index_col
    if index is None:
        return None
    if isinstance(index, bool):
        raise TypeError(f"index_col must be a column name or a 0-based position; got {index!r}")
    if isinstance(index, (int, np.integer)):
        if not 0 <= index < len(names):
            raise ValueError(
                f"index_col={index} is not a column position of {source.where} "
                f"(it has {len(names)} columns, positions 0 to {len(names) - 1})"
            )
        return int(index)
    if index not in names:
        raise ValueError(
            f"index_col {index!r} is not a column of {source.where}; it has "
            f"{', '.join(names)}"
        )
    return names.index(index)


def read_layout(source: TableFile, *, raw: bytes) -> _Layout:
    """Check a CSV header (given the file's first bytes) and work out its columns."""
    return _layout(source, _first_line(source, raw))


# --------------------------------------------------------------------------- readers


def _open_checked(source: TableFile) -> Path:
    path = Path(source.path)
    if not path.exists():
        kind = "Parquet" if source.kind == "parquet" else "CSV"
        raise FileNotFoundError(f"no such {kind} file: {str(path)!r}")
    if path.is_dir():
        raise ValueError(
            f"{str(path)!r} is a directory; give a data file (a directory of Parquet parts is "
            "read with the Dask engine)"
        )
    return path


def _new_matrix(rows: int, width: int) -> np.ndarray:
    return np.empty((rows, width), order="F")


def _batch_to_matrix(batch: Any, *, rows: int, width: int,
                     matrix: Callable[[int, int], np.ndarray] = _new_matrix) -> np.ndarray:
    # Fortran order: each column is copied once, and X^T X needs no transposed copy.
    out = matrix(rows, width)
    for j in range(width):
        out[:, j] = batch.column(j).to_numpy(zero_copy_only=False)
    return out


def _locate_bad_value(source: TableFile, layout: _Layout,
                      positions: list[int]) -> tuple[int, int, str]:
    """Slow path, on error only: the first field, in reading order (line, then column),
    among ``positions`` that is not a number: ``(line, position, text)``.

    pyarrow converts columns in parallel and reports whichever failed first in time, so
    its column number is not used: the message must name the same cell on every run.
    """
    with open(source.path, encoding=source.encoding, newline="") as handle:
        reader = csv.reader(handle, delimiter=source.delimiter)
        for line, fields in enumerate(reader, start=1):
            if line < layout.data_line:
                continue
            for position in positions:
                if position >= len(fields):
                    continue
                text = fields[position].strip()
                if source.decimal == ",":
                    text = text.replace(",", ".")
                if not text:
                    continue
                try:
                    float(text)
                except ValueError:
                    return line, position, fields[position]
    return 0, -1, ""


def _csv_error(source: TableFile, layout: _Layout, exc: Exception) -> ValueError:
    message = str(exc)
    where = source.where
    match = re.search(r"column #(\d+)", message)
    if match and "conversion error" in message:
        reported = int(match.group(1))  # pyarrow numbers the file's columns from 0
        line, position, value = _locate_bad_value(source, layout, sorted(layout.use))
        if position < 0:
            position = reported
        name = layout.names[position]
        hint = "encode or drop the column, or select numeric columns (columns=...)"
        if source.decimal == "." and re.fullmatch(r"\s*[-+]?\d*,\d+\s*", value or ""):
            hint = "if the file writes decimals with a comma pass decimal=',' (CLI: --decimal ,)"
        at = f" on line {line}" if line else ""
        return ValueError(
            f"{where} has a non-numeric value {value!r} in column {name!r}{at}; {hint}"
        )
    if "Expected" in message and "columns" in message:
        return ValueError(
            f"{where} has a record with the wrong number of fields ({message.splitlines()[0]}); "
            "check the delimiter and quoting"
        )
    if isinstance(exc, UnicodeDecodeError) or "UTF8" in message or "utf-8" in message.lower():
        return ValueError(
            f"{where} is not valid {source.encoding}; pass its encoding, e.g. "
            "encoding='latin-1' (CLI: --encoding latin-1)"
        )
    return ValueError(f"{where} could not be read: {message.splitlines()[0]}")


def _byte_blocks(path: Path, *, block_size: int, skip: int) -> Iterator[memoryview]:
    """The file from byte ``skip`` on, in blocks of about ``block_size`` bytes that end at a
    line break (a record is never split between blocks).

    The blocks are read into one reused buffer: a block is valid until the next one is
    requested (the parser is done with it by then), so reading allocates nothing per block.
    """
    # The parser may hold on to a view of a block after it is done with it, so the buffer
    # is never resized in place (a larger one replaces it) and views are never released
    # explicitly; overwriting the bytes is safe once the parser has returned.
    buffer = bytearray(block_size)
    carry = 0  # bytes of an unfinished line at the start of the buffer
    with open(path, "rb", buffering=0) as handle:
        handle.seek(skip)
        while True:
            end = carry
            view = memoryview(buffer)
            while end < len(buffer):
                count = handle.readinto(view[end:])
                if not count:
                    break
                end += count
            if end == carry:  # end of file
                rest = bytes(buffer[:carry])
                if rest.strip():
                    yield memoryview(rest if rest.endswith(b"\n") else rest + b"\n")
                return
            cut = buffer.rfind(b"\n", 0, end) + 1
            if cut == 0:  # one line longer than the buffer: a larger buffer
                buffer = buffer + bytearray(len(buffer))
                carry = end
                continue
            yield view[:cut]
            buffer[:end - cut] = buffer[cut:end]
            carry = end - cut


def _iter_csv(
    source: TableFile, matrix: Callable[[int, int], np.ndarray] = _new_matrix,
    missing: str = "refuse",
) -> Iterator[tuple[np.ndarray, list[str], int]]:
    """Stream a CSV file: each block of whole lines is parsed by ``pyarrow.csv.read_csv``
    (multi-threaded within the block), so memory is bounded by one block and its matrix.

    Records may not contain line breaks inside quotes (a numeric file never does).
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    path = _open_checked(source)
    with open(path, "rb") as handle:
        raw = handle.read(1 << 20)
    layout = read_layout(source, raw=raw)
    where = source.where
    skip = raw.index(b"\n") + 1 if source.header and b"\n" in raw else (
        len(raw) if source.header else (3 if raw.startswith(b"\xef\xbb\xbf") else 0))
    internal = [f"c{j}" for j in range(len(layout.names))]
    selected = [internal[j] for j in layout.use]
    columns = [layout.names[j] for j in layout.use]
    read_options = pacsv.ReadOptions(column_names=internal, encoding=source.encoding,
                                     block_size=1 << 20)
    # Empty lines are kept (as missing values) so that rows map to file lines.
    parse_options = pacsv.ParseOptions(delimiter=source.delimiter, ignore_empty_lines=False)
    convert_options = pacsv.ConvertOptions(
        column_types={name: pa.float64() for name in selected},
        include_columns=selected,
        decimal_point=source.decimal,
    )
    first = 0
    task, size, consumed = f"reading {Path(path).name}", os.path.getsize(path), skip
    _progress.report(task, consumed, size)
    for block in _byte_blocks(path, block_size=source.block_size, skip=skip):
        consumed += len(block)
        try:
            table = pacsv.read_csv(pa.BufferReader(pa.py_buffer(block)), read_options=read_options,
                                   parse_options=parse_options,
                                   convert_options=convert_options)
        except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
            raise _csv_error(source, layout, exc) from None
        del block
        rows = table.num_rows
        if rows == 0:
            continue
        values = _batch_to_matrix(table, rows=rows, width=len(selected), matrix=matrix)
        del table
        _check_array(values, columns=columns, where=where,
                     row_offset=layout.data_line + first, unit="line",
                     allow_missing=missing != "refuse")
        _progress.report(task, consumed, size)
        yield values, columns, first
        first += rows
    if first == 0:
        raise ValueError(
            f"{where} has a header ({', '.join(layout.names[:8])}) but no records"
            if source.header else f"{where} has no records"
        )


def _iter_parquet(
    source: TableFile, chunk_rows: int, matrix: Callable[[int, int], np.ndarray] = _new_matrix,
    policy: str = "refuse",
) -> Iterator[tuple[np.ndarray, list[str], int]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _open_checked(source)
    where = source.where
    try:
        handle = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ValueError(f"{where} is not a readable Parquet file: {exc}") from None
    schema = handle.schema_arrow
    names = [n for n in schema.names if not n.startswith("__index_level_")]
    index = _index_position(source, names)
    if index is not None:
        names = names[:index] + names[index + 1:]
    if source.columns is not None:
        missing = [c for c in source.columns if c not in names]
        if missing:
            raise ValueError(
                f"{where} has no column(s) {', '.join(repr(c) for c in missing)}; it has "
                f"{', '.join(names)}"
            )
        names = list(source.columns)
    bad = [n for n in names if not _arrow_numeric(schema.field(n).type)]
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        raise ValueError(
            f"{where} has non-numeric column(s) {shown}; encode or drop them before estimating"
        )
    # Rows per batch: at most chunk_rows, and about block_size bytes of float64 values, so
    # that a wide file is read in blocks of bounded memory too.
    rows_per_batch = min(int(chunk_rows), max(1024, source.block_size // (8 * max(len(names), 1))))
    first = 0
    task, total = f"reading {Path(path).name}", handle.metadata.num_rows
    for batch in handle.iter_batches(batch_size=rows_per_batch, columns=names):
        if batch.num_rows == 0:
            continue
        values = _batch_to_matrix(batch, rows=batch.num_rows, width=len(names), matrix=matrix)
        _check_array(values, columns=names, where=where, row_offset=first + 1, unit="record",
                     allow_missing=policy != "refuse")
        _progress.report(task, first + batch.num_rows, total)
        yield values, names, first
        first += batch.num_rows
    if first == 0:
        raise ValueError(f"{where} has columns ({', '.join(names[:8])}) but no records")


def _arrow_numeric(kind: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind)
                or pa.types.is_boolean(kind) or pa.types.is_decimal(kind))


def iter_chunks(
    X: Any, *, chunk_rows: int = DEFAULT_CHUNK_ROWS,
    matrix: Callable[[int, int], np.ndarray] = _new_matrix, missing: str = "refuse",
) -> Iterator[tuple[np.ndarray, list[str], int]]:
    """Yield ``(values, columns, first_row)`` chunks of a validated input.

    Arrays and DataFrames are sliced into ``chunk_rows`` rows; Parquet files are read
    ``chunk_rows`` rows at a time; CSV files are streamed in blocks of
    ``TableFile.block_size`` bytes (pyarrow). ``first_row`` is the 0-based index of the
    chunk's first record. A file's chunks are column-major matrices obtained from
    ``matrix(rows, width)`` (a reader that recycles its buffers passes its own).
    """
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)) or (
        chunk_rows < 1
    ):
        raise ValueError(f"chunk_rows must be a positive integer; got {chunk_rows!r}")
    _refuse_dask(X, "X")
    if is_path(X):
        source = _as_table(X)
        if source.kind == "parquet":
            yield from _iter_parquet(source, int(chunk_rows), matrix, missing)
        else:
            yield from _iter_csv(source, matrix, missing)
        return
    values, columns = as_matrix(X, missing=missing)
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


def check_center(center: Any, p: int) -> np.ndarray | None:
    """A public centre must be a finite vector with one entry per column."""
    if center is None:
        return None
    center = np.asarray(center, dtype=float)
    if center.shape != (p,) or not np.all(np.isfinite(center)):
        raise ValueError(
            f"center must be a finite vector of length {p} (one per column); "
            f"got shape {center.shape}"
        )
    return center


def finish_second_moment(
    gram: np.ndarray, total: np.ndarray, n: int, n_clipped: int, columns: list[str],
    *, name: str = "X",
) -> SecondMoment:
    """Normalise summed statistics (shared by the in-memory and the Dask paths, so that
    both give the same numbers)."""
    if n < 2:
        raise ValueError(f"{name} needs at least 2 records (rows); got {n}")
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
) -> SecondMoment:
    """Clip every record to ``bounds`` and accumulate ``X^T X / n`` in chunks.

    Parameters
    ----------
    X : array, DataFrame, CSV / Parquet path or TableFile
        (A Dask collection is read by :func:`dpggm.estimators.records.clipped_second_moment`,
        which dispatches between this reader and the cluster's.)
    bounds : Bounds
        Declared bounds; records are clipped to them (after subtracting ``center``).
    center : ndarray of shape (p,), optional
        A public mean subtracted from every record before clipping.
    chunk_rows : int
        Rows per chunk (memory is ``O(p^2)`` plus one chunk).
    missing : {"refuse", "drop"}, default="refuse"
        A missing value (NaN, an empty field) is an error, or its whole row is left out
        (``n`` counts the rows kept). Dropping rows makes ``n`` depend on the data: only
        an estimator under add/remove neighbours (whose count is private) may ask for it.

    Privacy
    -------
    The result is the exact (unreleased) statistic; only a mechanism may publish it.
    Nothing here draws noise, so every error is raised before any budget is spent.
    """
    if missing not in ("refuse", "drop"):
        raise ValueError(f"missing must be 'refuse' or 'drop'; got {missing!r}")
    gram: np.ndarray | None = None
    total: np.ndarray | None = None
    n = 0
    n_clipped = 0
    columns: list[str] = []
    for values, chunk_columns, _ in iter_chunks(X, chunk_rows=chunk_rows, missing=missing):
        columns = chunk_columns
        p = values.shape[1]
        if missing == "drop":
            values = values[~np.isnan(values).any(axis=1)]
        if gram is None:
            bounds.check_dimension(p)
            center = check_center(center, p)
            gram = np.zeros((p, p))
            total = np.zeros(p)
        if center is not None:
            values = values - center
        clipped, changed = bounds.clip(values)
        gram += clipped.T @ clipped
        total += clipped.sum(axis=0)
        n += clipped.shape[0]
        n_clipped += changed
    if gram is None or total is None:
        raise ValueError("X needs at least 2 records (rows); got 0")
    return finish_second_moment(gram, total, n, n_clipped, columns)

