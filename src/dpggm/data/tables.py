"""Reading tables: arrays, DataFrames and data files, checked, as blocks of float64 records.

Input may be a NumPy array, a pandas DataFrame or the path of a data file (or a
:class:`TableFile` carrying reading options and the table's public schema);
:func:`as_matrix` gives the records in memory and :func:`iter_chunks` block by block. What
is computed from them is a pass over their :class:`~dpggm.data.passes.Records`
(:func:`~dpggm.data.records.open_records`), which read through this module.

Files
-----
CSV (plain or compressed: ``.gz``, ``.bz2``, ``.xz``, ``.zip``, ``.zst``), Parquet (a file
or a folder of files read as one table), spreadsheets (``.xlsx``, ``.xls``, ``.ods``) and
the files of statistics packages (SPSS ``.sav``, Stata ``.dta``, SAS ``.sas7bdat``); see
:mod:`dpggm.data.formats` for the libraries and the optional extra
``dpggm[formats]``. CSV and Parquet files are read in blocks (pyarrow), so a file larger
than memory is processed with memory ``O(p^2)`` plus one block.

Every input is checked for what would silently corrupt a private release: NaN or infinite
values, non-numeric columns, fewer than two records, bounds of the wrong length, and, for
files, the usual ways a file is misread (no header row, duplicated or empty column names,
an index column, another delimiter, decimal mark or thousands separator, another
encoding). What a file's columns are is public and declared by its
:class:`~dpggm.data.schema.TableSchema` (which columns are variables, identifiers or
left out, and their declared ranges).

Records of a file
-----------------
A row with no value at all -- a blank line, a row of bare delimiters, a row whose every
field (in every column of the file, used or not) is empty or a missing-value marker -- is
not a record: it is not read, and not counted in ``n``. Every other row is one record,
even if all its *used* values are missing (a respondent who skipped every item is
someone). Under replace-one neighbours ``n`` is public: the count of non-empty rows is the
``n`` a release states. In-memory arrays and DataFrames are taken as given: each row is a
record.

Before anything is released, a file whose column is entirely missing or holds one value
only is refused, naming the column. That is a decision made from the private values, but
it only stops the run, before any budget is spent or anything is written, and its message
goes to the curator (the one who runs it) only.

Messages use the file's own terms (1-based line or row numbers, column names) and the
caller's: ``TableFile(..., terms="cli")`` names the command line's options (``--drop``),
the default the Python parameters (``drop=[...]``).

A Dask DataFrame / Array (optional extra ``dpggm[dask]``) is read on its cluster (see
:mod:`dpggm.data.dask_records`); this module recognises it by the module name of its type,
so that ``import dpggm`` never imports Dask.
"""

from __future__ import annotations

import csv
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm.data import formats
from dpggm.data.schema import ResolvedColumns, TableSchema
from dpggm.exceptions import CuratorWarning
from dpggm.progress import report as report_progress

__all__ = [
    "DEFAULT_BLOCK_BYTES",
    "DEFAULT_CHUNK_ROWS",
    "DEFAULT_NA_VALUES",
    "ColumnProfile",
    "TableFile",
    "TableSchema",
    "as_matrix",
    "bad_value_error",
    "check_chunk_rows",
    "is_dask_collection",
    "is_path",
    "iter_chunks",
    "looks_like_identifier",
    "read_text_column",
    "refuse_degenerate_columns",
    "too_few_records",
    "too_few_variables",
]

#: Rows per chunk when slicing arrays or reading Parquet row groups.
DEFAULT_CHUNK_ROWS = 200_000
#: Bytes per block when streaming a CSV file.
DEFAULT_BLOCK_BYTES = 4 << 20
#: Text that marks a missing value in a file (pandas' and pyarrow's list: R's ``NA``,
#: Excel's ``#N/A``, ``NaN``, ``NULL``, an empty field, ...); ``TableFile.na_values`` adds
#: to it.
DEFAULT_NA_VALUES = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                     "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                     "nan", "null")

DataLike = "np.ndarray | pd.DataFrame | str | os.PathLike | TableFile"

_DELIMITER_HINTS = (";", "\t", "|")
_NUMBER = re.compile(r"^\s*[-+]?(\d+([.,]\d*)?|[.,]\d+)([eE][-+]?\d+)?\s*$")
#: Names a record identifier usually has (public: a column's name).
_IDENTIFIER_NAME = re.compile(
    r"^(?:(?:.*[ _.\-])?(?:id|ids|uid|uuid|guid)|(?:record|respondent|participant|subject|"
    r"patient|case|person|serial|row)(?:[ _.\-]?(?:id|no|nr|num|number|code|key))?)$",
    re.IGNORECASE)
#: Rows of whole, strictly increasing values a column needs before it is said to look like
#: a record number.
_IDENTIFIER_ROWS = 20


def is_dask_collection(X: Any) -> bool:
    """Whether ``X`` is a Dask collection, decided without importing Dask."""
    for cls in type(X).__mro__:
        module = getattr(cls, "__module__", "") or ""
        if module.split(".")[0] in ("dask", "dask_expr"):
            return True
    return False


def _names_tuple(value: Any, option: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    out = tuple(value)
    for name in out:
        if not isinstance(name, str):
            raise TypeError(f"{option} must hold column names (strings); got {name!r}")
    return out


@dataclass(frozen=True)
class TableFile:
    """A data file with the options needed to read it correctly and its public schema.

    A plain path is read as ``TableFile(path)``: its format from its suffix (and, for a
    file named as CSV, from its first bytes), a CSV file as comma-separated UTF-8 with a
    header row.

    Parameters
    ----------
    path : str or path-like
        The file, or a folder of Parquet files read as one table. For Dask input
        (``engine="dask"`` in the CLI, or :func:`dpggm.data.dask_records.read_dask`) a glob
        or any URL fsspec understands.
    columns : sequence of str, optional
        Use only these columns as variables, in this order (names or glob patterns).
    delimiter : str
        Field separator of a CSV file (``","``; ``";"`` for many European exports).
    decimal : str
        Decimal mark of a CSV file, and of numbers stored as text in a spreadsheet (``"."``
        or ``","``).
    header : bool, optional
        Whether the first line (or the first non-empty row of a sheet) holds the column
        names. Default (``None``): it does, and a first line of numbers is refused as a
        record -- unless its numbers are the columns' numbers ``0, 1, 2, ...`` or
        ``1, 2, 3, ...`` (a header pandas, NumPy or R writes for unnamed columns), read as
        names; ``True`` takes it as names whatever it holds; ``False``: no header, the
        columns are named ``col1, col2, ...``.
    index_col : str or int, optional
        A column holding a record identifier, not a feature: dropped. A name, or a 0-based
        position.
    encoding : str
        Text encoding of a CSV file.
    format : str, optional
        ``csv``, ``parquet``, ``xlsx``, ``xls``, ``ods``, ``sav``, ``por``, ``dta``,
        ``sas7bdat`` or ``xpt``. Default: from the suffix (and the first bytes).
    block_size : int
        Bytes per block when streaming a CSV file, and about the bytes of the parsed
        values per block of a Parquet file (memory is bounded by one block).
    scratch : str or path-like, optional
        Directory of the temporary file that keeps the parsed records between the passes of
        an estimator that reads them several times (``PrivateGraph``), when they exceed
        its memory limit; it needs room for 8 bytes per value. Default: the system's
        temporary directory (``TMPDIR``).
    drop : sequence of str
        Columns that are not variables (names or glob patterns; each must match a column).
    id_columns : sequence of str
        Record identifiers: never variables (names or glob patterns).
    scales : mapping, optional
        Declared ranges, column name or pattern -> ``(low, high)``, such as
        ``{"item_*": (1, 6)}`` for items answered 1 to 6 (see
        :class:`~dpggm.data.schema.TableSchema`).
    schema : TableSchema, mapping, or path of a JSON / YAML file, optional
        The table's public schema; ``columns``, ``drop``, ``id_columns``, ``index_col``
        and ``scales`` add to it.
    na_values : sequence of str
        Text marking a missing value, in addition to :data:`DEFAULT_NA_VALUES`. A marker
        that is a number (``"-99"``) marks that number in every format (``-99.0`` too).
    thousands : str, optional
        Thousands separator of numbers written as text (``","`` for ``157,000.00``; ``"."``
        with ``decimal=","``). A number that uses it must group its digits by three.
    sheet : str or int, optional
        The sheet of a spreadsheet (name, or 0-based number; default the first).
    terms : {"python", "cli"}
        Whether messages name the Python parameters or the command line's options.

    Privacy
    -------
    Reading options and the schema are public choices about the file's format; nothing is
    learnt from the data except its column names, which the caller is assumed to know.
    Two facts about the values stop a run before anything is released (a column entirely
    missing, or constant); their messages are for the curator only.
    """

    path: str | os.PathLike
    columns: Sequence[str] | None = None
    delimiter: str = ","
    decimal: str = "."
    header: bool | None = None
    index_col: str | int | None = None
    encoding: str = "utf-8"
    format: str | None = None
    block_size: int = DEFAULT_BLOCK_BYTES
    scratch: str | os.PathLike | None = None
    drop: Sequence[str] = ()
    id_columns: Sequence[str] = ()
    scales: Mapping[str, Sequence[float]] | None = None
    schema: Any = None
    na_values: Sequence[str] = ()
    thousands: str | None = None
    sheet: str | int | None = None
    terms: str = "python"
    _schema: TableSchema = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.terms not in ("python", "cli"):
            raise ValueError(f"terms must be 'python' or 'cli'; got {self.terms!r}")
        if not isinstance(self.delimiter, str) or len(self.delimiter) != 1:
            raise ValueError(
                f"{self._say('delimiter', '--delimiter')} must be a single character; got "
                f"{self.delimiter!r}")
        if self.decimal not in (".", ","):
            raise ValueError(f"{self._say('decimal', '--decimal')} must be '.' or ','; got "
                             f"{self.decimal!r}")
        if self.decimal == self.delimiter:
            raise ValueError(
                f"{self._say('decimal and delimiter', '--decimal and --delimiter')} must "
                f"differ; both are {self.delimiter!r}")
        if self.thousands is not None:
            if (not isinstance(self.thousands, str) or len(self.thousands) != 1
                    or self.thousands.isdigit() or self.thousands in "+-eE"):
                raise ValueError(f"{self._say('thousands', '--thousands')} must be one "
                                 f"character such as ',' '.' or ' '; got {self.thousands!r}")
            if self.thousands == self.decimal:
                raise ValueError(
                    f"{self._say('thousands', '--thousands')} must differ from the decimal "
                    f"mark; both are {self.decimal!r}")
        if self.format not in (None, *formats.FORMATS):
            raise ValueError(f"{self._say('format', '--format')} must be one of "
                             f"{', '.join(formats.FORMATS)}; got {self.format!r}")
        if self.header not in (None, True, False):
            raise ValueError(f"header must be None, True or False; got {self.header!r}")
        if isinstance(self.block_size, bool) or not isinstance(self.block_size, int) or (
            self.block_size < 1024
        ):
            raise ValueError(f"block_size must be an integer >= 1024; got {self.block_size!r}")
        if self.columns is not None and isinstance(self.columns, str):
            raise TypeError(f"columns must be a list of names; got the string {self.columns!r}")
        if isinstance(self.na_values, str):
            raise TypeError(f"{self._say('na_values', '--na-values')} must be a list of "
                            f"markers; got the string {self.na_values!r}")
        for marker in self.na_values:
            if not isinstance(marker, str):
                raise TypeError(f"{self._say('na_values', '--na-values')} must hold text; "
                                f"got {marker!r}")
        if self.sheet is not None and (isinstance(self.sheet, bool)
                                       or not isinstance(self.sheet, (str, int))):
            raise TypeError(f"sheet must be a sheet name or a 0-based number; got {self.sheet!r}")
        try:
            "x".encode(self.encoding)
        except LookupError:
            raise ValueError(f"unknown encoding {self.encoding!r}") from None
        object.__setattr__(self, "na_values", tuple(self.na_values))
        object.__setattr__(self, "drop", _names_tuple(self.drop, self._say("drop", "--drop")))
        object.__setattr__(self, "id_columns",
                           _names_tuple(self.id_columns, self._say("id_columns", "--id-col")))
        if self.columns is not None:
            object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "_schema", self._build_schema())

    def _say(self, python: str, cli: str) -> str:
        return cli if self.terms == "cli" else python

    def _build_schema(self) -> TableSchema:
        schema = self.schema
        if schema is None:
            base = TableSchema(terms=self.terms)
        elif isinstance(schema, TableSchema):
            base = schema
        elif isinstance(schema, Mapping):
            base = TableSchema.from_dict(schema, terms=self.terms)
        elif isinstance(schema, (str, os.PathLike)):
            base = TableSchema.from_file(schema, terms=self.terms)
        else:
            raise TypeError("schema must be a TableSchema, a mapping or the path of a JSON or "
                            f"YAML file; got {type(schema).__name__}")
        extra = TableSchema.build(columns=self.columns, drop=self.drop, id=self.id_columns,
                                  scales=self.scales, terms=self.terms)
        return base.merged(extra)

    @property
    def table_schema(self) -> TableSchema:
        """Every declaration about the columns (``schema`` with ``columns``, ``drop``,
        ``id_columns`` and ``scales`` added)."""
        return self._schema

    @property
    def kind(self) -> str:
        """The file's format (``csv``, ``parquet``, ``xlsx``, ...)."""
        return formats.detect_format(self.path, self.format)[0]

    @property
    def compression(self) -> str | None:
        """The compression of a CSV file (``gzip``, ``bz2``, ``xz``, ``zip``, ``zstd``)."""
        return formats.detect_format(self.path, self.format)[1]

    @property
    def where(self) -> str:
        if os.path.isdir(self.path):
            return f"Parquet folder {str(self.path)!r}"
        return f"{formats.format_name(self.kind)} file {str(self.path)!r}"

    def resolve(self) -> ResolvedColumns:
        """The columns the schema makes variables, identifiers or dropped, with their
        declared kinds and ranges; reads the file's column names only (its header row, or
        its metadata), never a value."""
        return _read_layout(self).resolved

    def declared_ranges(self) -> dict[str, tuple[float, float]]:
        """The declared range of every variable that has one, by column name (for
        ``PrivateGraph(column_ranges=...)``); reads the column names only."""
        return dict(self.resolve().ranges)


def is_path(X: Any) -> bool:
    return isinstance(X, (str, os.PathLike, TableFile))


def _as_table(X: Any) -> TableFile:
    return X if isinstance(X, TableFile) else TableFile(X)


def _column_names(X: Any, p: int) -> list[str]:
    if isinstance(X, pd.DataFrame):
        return [str(c) for c in X.columns]
    return [f"x{j}" for j in range(p)]


def _check_frame(frame: pd.DataFrame, *, where: str, allow_missing: bool = False) -> np.ndarray:
    names = [str(c) for c in frame.columns]
    seen: dict[str, int] = {}
    for j, name in enumerate(names):
        if name in seen:
            raise ValueError(
                f"{where} has the column name {name!r} twice (columns {seen[name] + 1} and "
                f"{j + 1}); rename one so that each variable is named once")
        seen[name] = j
    bad = [str(c) for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        raise ValueError(
            f"{where} has non-numeric column(s) {shown}; encode or drop them before estimating"
        )
    return _check_array(frame.to_numpy(dtype=float, na_value=np.nan),
                        columns=names, where=where, allow_missing=allow_missing)


def too_few_records(n: int, *, name: str = "X") -> ValueError:
    """The error for fewer than two records, worded once for every path (in-memory, files,
    Dask): it names the count as ``n_samples=...``, the term scikit-learn's checks look for."""
    return ValueError(f"{name} needs at least 2 records (rows); got n_samples={n}")


def too_few_variables(p: int, *, minimum: int, who: str, name: str = "X") -> ValueError:
    """The error for fewer columns than an estimator needs (``minimum``: 2 for a graph or a
    precision matrix), worded once for every estimator."""
    return ValueError(f"{who} needs at least {minimum} variables (columns); {name} has "
                      f"{p} feature(s) (n_features={p})")


def _check_array(
    values: np.ndarray,
    *,
    columns: list[str] | None,
    where: str,
    row_offset: int = 0,
    unit: str = "row",
    allow_missing: bool = False,
    rows: np.ndarray | None = None,
    terms: str = "python",
) -> np.ndarray:
    """Refuse non-finite values, naming the first one (with ``allow_missing``, only
    infinite ones: NaN then marks a missing value).

    ``unit`` and ``row_offset`` (or ``rows``, the file's number of each row) translate a
    row of this block into the user's terms: a 0-based ``row`` of an array, a 1-based
    ``line`` of a CSV file, a 1-based ``record`` of a Parquet file.
    """
    if values.ndim != 2:
        raise ValueError(
            f"{where} must be two-dimensional (records x features); got {values.ndim} dimension(s)"
        )
    if values.shape[1] == 0:
        raise ValueError(f"{where} has no columns: 0 feature(s) (shape={values.shape}) while a "
                         "minimum of 1 is required.")
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
        at = int(rows[row]) if rows is not None else int(row) + row_offset
        raise bad_value_error(where, unit, at, name, allow_missing=allow_missing, terms=terms)
    return values


def bad_value_error(where: str, unit: str, at: int, column: str, *, allow_missing: bool,
                    terms: str = "python") -> ValueError:
    """The error for the first value that is not a finite number, at ``unit`` ``at`` (the
    user's terms: a 0-based ``row`` of an array, a 1-based ``line`` of a CSV file) of
    ``column``, worded once for every source of records. With ``allow_missing`` only an
    infinite value can be one (NaN then marks a missing value)."""
    if allow_missing:
        return ValueError(
            f"{where} contains infinite values (first at {unit} {at}, column "
            f"{column!r}); an infinite value is not a missing one: correct or remove it"
        )
    if terms == "cli":
        return ValueError(
            f"{where} has a missing value (first at {unit} {at}, column {column!r}); it is "
            "refused with --missing refuse: dpggm graph imputes it (--missing impute), "
            "dpggm estimate leaves its row out under add/remove neighbours "
            "(--missing drop --neighbors add-remove)")
    return ValueError(
        f"{where} contains NaN or infinite values (first at {unit} "
        f"{at}, column {column!r}); missing values (an empty field counts as "
        "missing) are refused with missing='refuse': PrivateGraph imputes them "
        "(missing='impute'; dpggm graph --missing impute), the covariance estimators "
        "under add/remove neighbours leave their rows out (missing='drop'; dpggm "
        "estimate --missing drop), or remove them before estimating"
    )


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
    """Validate an in-memory input (array, DataFrame, a data file's path or
    :class:`TableFile`) and return it as a float matrix with its column names.

    With ``missing="refuse"`` (default) a missing value (NaN, an empty field) is an error;
    otherwise it is kept as NaN for the caller's policy (infinite values are refused).

    Dask collections are refused here: their records are read in passes on the cluster
    (:func:`~dpggm.data.records.open_records`), never gathered into memory.
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
                f"Complex data not supported: {name} has complex-valued column(s) "
                f"{complex_columns[:5]}; pass real numbers (the real part or the modulus)"
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
                f"Complex data not supported: {name} has complex values (dtype "
                f"{values.dtype}); pass real numbers (the real part or the modulus)"
            )
        if values.dtype == object:
            values = _numbers_from_objects(values, name)
        if not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
            raise ValueError(f"{name} must be numeric; got an array of dtype {values.dtype}")
        values = _check_array(values.astype(float, copy=False), columns=None, where=name,
                              allow_missing=missing != "refuse")
        columns = _column_names(X, values.shape[1])
    if values.shape[0] < 2:
        raise too_few_records(values.shape[0], name=name)
    return values, columns


def _numbers_from_objects(values: np.ndarray, name: str) -> np.ndarray:
    """An array of Python objects as floats when every cell is a number (or text that reads
    as one), as NumPy converts them; otherwise the first cell that is not, by position and
    type (never its value: it is private data)."""
    try:
        return values.astype(float)
    except (TypeError, ValueError):
        pass
    flat = values.reshape(values.shape[0], -1) if values.ndim >= 2 else values.reshape(-1, 1)
    for (row, col), cell in np.ndenumerate(flat):
        try:
            float(cell)
        except (TypeError, ValueError):
            where = f"{name} must be numeric: the cell at row {row}, column {col}"
            if isinstance(cell, str):
                raise ValueError(f"{where} is text that does not read as a number") from None
            # A TypeError, as NumPy's conversion raises it for a dict or a list.
            raise TypeError(f"{where} is a {type(cell).__name__} (an argument must be a string "
                            "or a number)") from None
    return values.astype(float)  # pragma: no cover - astype failed, every cell converts


# ------------------------------------------------------------------ profiles of columns


def looks_like_identifier(name: str) -> bool:
    """Whether a column's name is one a record identifier usually has (``id``,
    ``patient_id``, ``RespondentID``, ``record_no``, ...): public, from the name only."""
    return bool(_IDENTIFIER_NAME.match(name.strip())) or name.strip().endswith("ID")


def refuse_degenerate_columns(low: np.ndarray, high: np.ndarray, columns: Sequence[str], *,
                              where: str, drop: str) -> None:
    """Refuse a column with no value (``low`` NaN: every value missing) or a single value
    (``low == high``), given each column's smallest and largest value.

    A decision from the private values, made before anything is released: it only stops
    the run (nothing is spent, nothing written), and its message goes to whoever runs it --
    the curator, who is told not to publish it. ``drop`` says how the caller leaves a
    column out (``--drop NAME``)."""
    empty = [columns[j] for j in np.flatnonzero(np.isnan(low))]
    if empty:
        raise ValueError(
            f"{where}: column(s) {', '.join(repr(c) for c in empty[:5])} hold no value (every "
            "cell is empty or a missing-value marker): nothing can be estimated for them; "
            f"leave them out ({drop}). Curator only: a fact about the private data, do not "
            "publish it")
    constant = [columns[j] for j in np.flatnonzero(~(low < high))]
    if constant:
        raise ValueError(
            f"{where}: column(s) {', '.join(repr(c) for c in constant[:5])} hold one value in "
            "every record: a constant has no variance and no partial correlation; leave them "
            f"out ({drop}). Curator only: a fact about the private data, do not publish it")


class ColumnProfile:
    """What the curator must know about each column before a release, gathered while the
    records are read: whether it holds any value, whether its values differ, and whether
    it looks like a record number (whole numbers increasing down the file).

    Cheap: once a column has shown two values (and broken the record-number pattern) it
    is no longer looked at.

    Privacy
    -------
    Computed from the private values: it may stop a run before anything is released
    (:meth:`refuse_degenerate`) or warn the curator (:meth:`warn_identifiers`); it never
    changes what a release holds, and nothing of it is written.
    """

    def __init__(self, p: int) -> None:
        self.rows = 0
        self.low = np.full(p, np.nan)
        self.high = np.full(p, np.nan)
        self.varies = np.zeros(p, dtype=bool)
        self.counting = np.ones(p, dtype=bool)  # still a record-number candidate
        self.last = np.full(p, -np.inf)

    @property
    def present(self) -> np.ndarray:
        return ~np.isnan(self.low)

    def add(self, values: np.ndarray, *, in_order: bool = True) -> None:
        """Add a block of records (in file order when ``in_order``)."""
        if values.shape[0] == 0:
            return
        self.rows += values.shape[0]
        open_ = np.flatnonzero(~self.varies)
        if open_.size:
            part = values[:, open_]
            self.low[open_] = np.fmin(self.low[open_], np.fmin.reduce(part, axis=0))
            self.high[open_] = np.fmax(self.high[open_], np.fmax.reduce(part, axis=0))
            self.varies[open_] = self.low[open_] < self.high[open_]
        if not in_order:
            self.counting[:] = False
            return
        candidates = np.flatnonzero(self.counting)
        for j in candidates:
            column = values[:, j]
            ok = (not np.isnan(column).any() and column[0] > self.last[j]
                  and bool(np.all(column == np.floor(column)))
                  and bool(np.all(np.diff(column) > 0)))
            if ok:
                self.last[j] = column[-1]
            else:
                self.counting[j] = False

    def refuse_degenerate(self, columns: Sequence[str], *, where: str, drop: str) -> None:
        """Refuse a column with no value or a single value
        (:func:`refuse_degenerate_columns`)."""
        refuse_degenerate_columns(self.low, self.high, columns, where=where, drop=drop)

    def warn_identifiers(self, columns: Sequence[str], *, terms: str = "python",
                         notes: list[str] | None = None) -> None:
        """Warn the curator about a variable that looks like a record identifier: by its
        name (public), or by its values (whole numbers increasing down the file, over at
        least 20 records). A warning only (a :class:`~dpggm.exceptions.CuratorWarning`,
        or appended to ``notes`` for a caller that warns from another thread): the release
        is unchanged."""
        for j, name in enumerate(columns):
            by_values = bool(self.counting[j]) and self.rows >= _IDENTIFIER_ROWS
            by_name = looks_like_identifier(name)
            if not (by_values or by_name):
                continue
            why = ("its values are whole numbers increasing down the file, like a record "
                   "number" if by_values else "its name is one an identifier usually has")
            identify = (f"--id-col {name}" if terms == "cli" else f"id_columns=[{name!r}]")
            note = (f"curator only (do not publish): column {name!r} is used as a variable, "
                    f"but {why}; an identifier used as a variable makes spurious edges. If it "
                    f"identifies records, declare it ({identify})")
            if notes is not None:
                notes.append(note)
            else:
                warnings.warn(CuratorWarning(note), stacklevel=2)


# --------------------------------------------------------------------------- headers


@dataclass(frozen=True)
class _Layout:
    """What the header says about a file: all names, and which are used."""

    names: list[str]  # one per column of the file
    use: list[int]  # positions of the feature columns, in output order
    data_line: int  # 1-based line (CSV) or row (sheet) number of the first record
    resolved: ResolvedColumns


def _say(source: TableFile, python: str, cli: str) -> str:
    return cli if source.terms == "cli" else python


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
        hint = _say(source, "encoding='latin-1'", "--encoding latin-1")
        raise ValueError(
            f"{where} is not valid {source.encoding} (byte 0x{line[exc.start]:02x} on line 1); "
            f"pass its encoding, e.g. {hint}"
        ) from None


def _looks_numeric(text: str) -> bool:
    return bool(_NUMBER.match(text)) or text.strip().lower() in ("nan", "inf", "-inf")


def _column_numbers(names: Sequence[str]) -> bool:
    """Whether the names are the columns' numbers, ``0, 1, 2, ...`` or ``1, 2, 3, ...``."""
    if not names or not all(re.fullmatch(r"\d+", n) for n in names):
        return False
    numbers = [int(n) for n in names]
    return numbers in (list(range(len(names))), list(range(1, len(names) + 1)))


def _check_header(source: TableFile, names: list[str], *, what: str) -> None:
    """Refuse a header of numbers that are not the columns' numbers (the rule reads the
    header line only, which ``header`` declares to be names)."""
    if source.header is None and names and all(_looks_numeric(n) for n in names) and (
            not _column_numbers(names)):
        shown = ",".join(names)
        raise ValueError(
            f"{what} of {source.where} looks like a record, not column names "
            f"({shown[:60]!r}); if the file has no header row pass "
            f"{_say(source, 'header=False', '--no-header')}, if these numbers are its "
            f"column names pass {_say(source, 'header=True', '--header')}"
        )


def _index_position(source: TableFile, names: list[str]) -> int | None:
    index = source.index_col
    if index is None:
        return None
    if isinstance(index, bool):
        raise TypeError(f"index_col must be a column name or a 0-based position; got {index!r}")
    if isinstance(index, (int, np.integer)):
        if not 0 <= index < len(names):
            if source.terms == "cli":
                raise ValueError(
                    f"--index-col {index + 1} is not a column of {source.where}: it has "
                    f"{len(names)} columns, numbered 1 to {len(names)}")
            raise ValueError(
                f"index_col={index} is not a column position of {source.where} "
                f"(it has {len(names)} columns, positions 0 to {len(names) - 1})"
            )
        return int(index)
    if index not in names:
        raise ValueError(
            f"{_say(source, 'index_col', '--index-col')} {index!r} is not a column of "
            f"{source.where}; it has {', '.join(names)}"
        )
    return names.index(index)


def _resolve_layout(source: TableFile, names: list[str], *, data_line: int) -> _Layout:
    """Apply the schema (and ``index_col``) to the file's column names."""
    where = source.where
    index = _index_position(source, names)
    resolved = source.table_schema.resolve(
        names, where=where, identifiers_at=() if index is None else (index,))
    use = list(resolved.positions)
    unnamed = [j for j in use if not names[j] or re.fullmatch(r"Unnamed: \d+", names[j])]
    if unnamed:
        j = unnamed[0]
        if source.terms == "cli":
            advice = f"if it identifies records pass --index-col {j + 1}, otherwise name it"
        else:
            advice = f"if it identifies records pass index_col={j}, otherwise give it a name"
        raise ValueError(
            f"column {j + 1} of {where} has no name (often an index written by pandas' "
            f"to_csv); {advice}")
    if not use:
        raise ValueError(f"{where} has no column left to use: every column is an identifier "
                         f"or dropped ({', '.join(names[:8])})")
    return _Layout(names, use, data_line, resolved)


def _csv_layout(source: TableFile, first_line: str) -> _Layout:
    where = source.where
    fields = next(csv.reader([first_line], delimiter=source.delimiter))
    if len(fields) == 1 and source.delimiter == ",":
        for hint in _DELIMITER_HINTS:
            if hint in fields[0]:
                shown = {"\t": "\\t"}.get(hint, hint)
                options = _say(source, f"delimiter={hint!r}", f"--delimiter '{shown}'")
                decimal = _say(source, "decimal=','", "--decimal ,")
                raise ValueError(
                    f"{where} has a single column named {fields[0][:60]!r}: it looks "
                    f"{shown!r}-separated. Pass {options}, and {decimal} if numbers are "
                    "written like 1,5"
                )
    if source.header is not False:
        names = [f.strip() for f in fields]
        _check_header(source, names, what="the first line")
    else:
        names = [f"col{j + 1}" for j in range(len(fields))]
    return _resolve_layout(source, names, data_line=2 if source.header is not False else 1)


def read_layout(source: TableFile, *, raw: bytes) -> _Layout:
    """Check a CSV header (given the file's first bytes) and work out its columns."""
    return _csv_layout(source, _first_line(source, raw))


def _read_layout(source: TableFile) -> _Layout:
    """The layout of any file, from its header or metadata only."""
    kind = source.kind
    path = _open_checked(source)
    if kind == "csv":
        with formats.open_binary(path, source.compression) as stream:
            raw = stream.read(1 << 20)
        return read_layout(source, raw=raw)
    if kind == "parquet":
        return _parquet_layout(source, _parquet_parts(source))[0]
    return _open_frame_table(source, path)[0]


# ----------------------------------------------------------------- text and markers


class _Markers:
    """The missing-value markers of a source: text markers (matched after trimming
    spaces) and numeric ones (matched by value, in every format)."""

    def __init__(self, source: TableFile) -> None:
        text = set(DEFAULT_NA_VALUES)
        numbers = []
        for marker in source.na_values:
            stripped = marker.strip()
            text.add(stripped)
            try:
                value = float(stripped.replace(source.decimal, ".")
                              if source.decimal == "," else stripped)
            except ValueError:
                continue
            if np.isfinite(value):
                numbers.append(value)
        self.text = sorted(text)
        self.numbers = np.array(sorted(set(numbers)), dtype=float)

    def apply(self, values: np.ndarray) -> None:
        """Numeric markers become missing (in place)."""
        for number in self.numbers:
            values[values == number] = np.nan

    def is_missing_text(self, text: str) -> bool:
        stripped = text.strip()
        if stripped in self.text:
            return True
        if self.numbers.size:
            try:
                return float(stripped) in self.numbers
            except ValueError:
                return False
        return False


class _TextNumbers:
    """Numbers written as text, parsed strictly: the declared decimal mark only, the
    declared thousands separator only between groups of three digits, spaces around
    ignored, a missing-value marker missing."""

    def __init__(self, *, decimal: str, thousands: str | None, markers: _Markers) -> None:
        d = re.escape(decimal)
        plain = rf"[+-]?(?:\d+(?:{d}\d*)?|{d}\d+)(?:[eE][+-]?\d+)?"
        forms = [plain, r"(?i:[+-]?(?:inf|infinity))"]
        if thousands is not None:
            t = re.escape(thousands)
            forms.append(rf"[+-]?\d{{1,3}}(?:{t}\d{{3}})+(?:{d}\d*)?(?:[eE][+-]?\d+)?")
        self.pattern = "^(?:" + "|".join(forms) + ")$"
        self.decimal = decimal
        self.thousands = thousands
        self.markers = markers

    def parse(self, array: Any) -> tuple[np.ndarray, int]:
        """``(values, first_bad)`` of a pyarrow string array: NaN where missing;
        ``first_bad`` is the index of the first text that is not a number (-1 if none)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        text = pc.utf8_trim_whitespace(array)
        missing = pc.fill_null(pc.is_in(text, value_set=pa.array(self.markers.text)), True)
        valid = pc.fill_null(pc.match_substring_regex(text, self.pattern), False)
        bad = pc.and_(pc.invert(missing), pc.invert(valid))
        if pc.any(bad).as_py():
            return np.empty(0), int(pc.index(bad, True).as_py())
        if self.thousands is not None:
            text = pc.replace_substring(text, self.thousands, "")
        if self.decimal != ".":
            text = pc.replace_substring(text, self.decimal, ".")
        numbers = pc.cast(pc.if_else(missing, pa.scalar(None, pa.string()), text), pa.float64())
        return numbers.to_numpy(zero_copy_only=False).astype(float, copy=False), -1


def _non_numeric(source: TableFile, *, column: str, value: str, at: str) -> ValueError:
    """The message for a value that is not a number, with the likely cause."""
    text = value.strip()
    if source.decimal == "." and re.fullmatch(r"[-+]?\d*,\d+", text):
        if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+", text):
            hint = (f"if the file groups thousands with a comma pass "
                    f"{_say(source, 'thousands=','--thousands ')}','; if it writes decimals "
                    f"with a comma pass {_say(source, 'decimal=', '--decimal ')}','")
        else:
            hint = (f"if the file writes decimals with a comma pass "
                    f"{_say(source, 'decimal=', '--decimal ')}','")
    elif re.fullmatch(r"[-+]?\d{1,3}([,. '\u00a0]\d{3})+([.,]\d*)?", text):
        hint = (f"if the file groups thousands pass "
                f"{_say(source, 'thousands=', '--thousands ')}<separator>")
    elif re.fullmatch(r"\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}([ T].*)?", text):
        hint = (f"the column holds dates: leave it out "
                f"({_say(source, 'drop=[' + repr(column) + ']', '--drop ' + repr(column))})")
    elif text and not _looks_numeric(text):
        hint = (f"if the column is not numeric leave it out "
                f"({_say(source, 'drop=[' + repr(column) + ']', '--drop ' + repr(column))}); "
                f"if {value!r} marks a missing value pass "
                f"{_say(source, 'na_values=[' + repr(text) + ']', '--na-values ' + repr(text))}")
    else:
        hint = (f"encode or leave out the column "
                f"({_say(source, 'drop=[' + repr(column) + ']', '--drop ' + repr(column))})")
    return ValueError(
        f"{source.where} has a non-numeric value {value!r} in column {column!r} {at}; {hint}")


# --------------------------------------------------------------------------- readers


def _open_checked(source: TableFile) -> Path:
    path = Path(source.path)
    if not path.exists():
        kind = formats.format_name(source.kind)
        raise FileNotFoundError(f"no such {kind} file: {str(path)!r}")
    if path.is_dir() and source.kind != "parquet":
        raise ValueError(
            f"{str(path)!r} is a directory; give a data file (or a folder of Parquet files)")
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


def _byte_blocks(stream: Any, *, block_size: int, skip: int) -> Iterator[memoryview]:
    """The stream (a binary stream, or the path of a file) from byte ``skip`` on, in
    blocks of about ``block_size`` bytes that end at a line break (a record is never split
    between blocks).

    The blocks are read into one reused buffer: a block is valid until the next one is
    requested (the parser is done with it by then), so reading allocates nothing per block.
    """
    # The parser may hold on to a view of a block after it is done with it, so the buffer
    # is never resized in place (a larger one replaces it) and views are never released
    # explicitly; overwriting the bytes is safe once the parser has returned.
    if isinstance(stream, (str, os.PathLike)):
        with open(stream, "rb", buffering=0) as handle:
            yield from _byte_blocks(handle, block_size=block_size, skip=skip)
        return
    buffer = bytearray(block_size)
    while skip > 0:  # a compressed stream cannot seek: read the bytes to skip
        count = stream.readinto(memoryview(buffer)[:min(skip, len(buffer))])
        if not count:
            return
        skip -= count
    carry = 0  # bytes of an unfinished line at the start of the buffer
    while True:
        end = carry
        view = memoryview(buffer)
        while end < len(buffer):
            count = stream.readinto(view[end:])
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


def _block_lines(block: Any, source: TableFile) -> list[str]:
    """The lines of a block of bytes, decoded (for the rare checks that need them)."""
    text = bytes(block).decode(source.encoding, errors="replace")
    return text.split("\n")


def _empty_line(text: str, source: TableFile, markers: _Markers) -> bool:
    """Whether a line holds no value at all (every field empty or a marker)."""
    if not text.strip():
        return True
    fields = next(csv.reader([text.rstrip("\r")], delimiter=source.delimiter), [])
    return all(markers.is_missing_text(f) for f in fields)


def _field_count_error(source: TableFile, layout: _Layout, block: Any, first_line: int,
                       message: str) -> ValueError:
    """Name the first line whose number of fields differs from the header's."""
    expected = len(layout.names)
    for k, text in enumerate(_block_lines(block, source)[:-1]):
        if not text.strip():
            continue
        fields = next(csv.reader([text.rstrip("\r")], delimiter=source.delimiter), [])
        if len(fields) != expected:
            return ValueError(
                f"{source.where} has {len(fields)} field(s) on line {first_line + k} where "
                f"the header has {expected}; check the delimiter "
                f"({_say(source, 'delimiter', '--delimiter')}) and the quoting")
    return ValueError(
        f"{source.where} has a record with the wrong number of fields "
        f"({message.splitlines()[0]}); check the delimiter and quoting")


def _parse_text_block(pacsv: Any, buffer: Any, options: tuple[Any, Any, Any],
                      parser: _TextNumbers, source: TableFile, layout: _Layout,
                      first_line: int) -> tuple[list[np.ndarray], int]:
    """Slow path of a block the fast parser refused: its used columns as text, parsed
    strictly; a value that is not a number is named with its line and column."""
    read_options, parse_options, convert_options = options
    table = pacsv.read_csv(buffer, read_options=read_options, parse_options=parse_options,
                           convert_options=convert_options)
    columns = []
    first_bad: tuple[int, int, str] | None = None
    for k, j in enumerate(layout.use):
        array = table.column(k)
        values, bad = parser.parse(array)
        if bad >= 0:
            found = (bad, j, str(array[bad].as_py()))
            if first_bad is None or found[:2] < first_bad[:2]:
                first_bad = found
        columns.append(values)
    if first_bad is not None:
        row, j, value = first_bad
        raise _non_numeric(source, column=layout.names[j], value=value,
                           at=f"on line {first_line + row}")
    return columns, table.num_rows


def _missing_rows(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Indices of the rows missing in every one of ``arrays`` (cheap when there are
    none: the first column is looked at first)."""
    if not arrays:
        return np.empty(0, dtype=np.intp)
    rows = np.flatnonzero(np.isnan(arrays[0]))
    for array in arrays[1:]:
        if rows.size == 0:
            break
        rows = rows[np.isnan(array[rows])]
    return rows


def _assemble(arrays: list[np.ndarray], numbers: np.ndarray, empty: np.ndarray,
              matrix: Callable[[int, int], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The block's matrix without its ``empty`` rows (column-major, from ``matrix``)."""
    if empty.size:
        keep = np.ones(numbers.shape[0], dtype=bool)
        keep[empty] = False
        arrays = [array[keep] for array in arrays]
        numbers = numbers[keep]
    out = matrix(numbers.shape[0], len(arrays))
    for j, array in enumerate(arrays):
        out[:, j] = array
    return out, numbers


def _csv_blocks(source: TableFile, layout: _Layout, skip: int,
                matrix: Callable[[int, int], np.ndarray]
                ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(values, line numbers)`` of the records of a CSV file, block by block: each block
    of whole lines parsed by ``pyarrow.csv.read_csv`` (multi-threaded within the block); a
    block whose numbers the fast parser refuses (thousands separators, a marker within
    spaces, a bad value) is parsed again as text, strictly. Rows with no value at all are
    left out."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    path = Path(source.path)
    markers = _Markers(source)
    parser = _TextNumbers(decimal=source.decimal, thousands=source.thousands, markers=markers)
    internal = [f"c{j}" for j in range(len(layout.names))]
    selected = [internal[j] for j in layout.use]
    # When every column of the file is used, a row missing in all of them is empty;
    # otherwise its line is looked at (the unused columns may hold a value).
    every = sorted(layout.use) == list(range(len(layout.names)))
    read_options = pacsv.ReadOptions(column_names=internal, encoding=source.encoding,
                                     block_size=1 << 20)
    # Empty lines are kept (as rows of missing values) so that rows map to file lines.
    parse_options = pacsv.ParseOptions(delimiter=source.delimiter, ignore_empty_lines=False)
    fast = pacsv.ConvertOptions(column_types={name: pa.float64() for name in selected},
                                include_columns=selected, decimal_point=source.decimal,
                                null_values=markers.text, strings_can_be_null=True)
    slow = (read_options, parse_options, pacsv.ConvertOptions(
        column_types={name: pa.string() for name in selected}, include_columns=selected,
        null_values=[], strings_can_be_null=False, quoted_strings_can_be_null=False))
    line = layout.data_line
    task, size = f"reading {path.name}", os.path.getsize(path)
    report_progress(task, 0, size)
    with formats.open_binary(path, source.compression) as stream:
        for block in _byte_blocks(stream, block_size=source.block_size, skip=skip):
            try:
                table = pacsv.read_csv(pa.BufferReader(pa.py_buffer(block)),
                                       read_options=read_options, parse_options=parse_options,
                                       convert_options=fast)
                rows = table.num_rows
                arrays = [table.column(k).to_numpy(zero_copy_only=False)
                          for k in range(len(selected))]
                del table
            except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
                message = str(exc)
                if isinstance(exc, UnicodeDecodeError) or "UTF8" in message or (
                        "utf-8" in message.lower()):
                    hint = _say(source, "encoding='latin-1'", "--encoding latin-1")
                    raise ValueError(f"{source.where} is not valid {source.encoding}; pass "
                                     f"its encoding, e.g. {hint}") from None
                if "conversion error" not in message:
                    raise _field_count_error(source, layout, block, line, message) from None
                try:
                    arrays, rows = _parse_text_block(
                        pacsv, pa.BufferReader(pa.py_buffer(block)), slow, parser, source,
                        layout, line)
                except pa.ArrowInvalid as again:
                    raise _field_count_error(source, layout, block, line, str(again)) from None
            numbers = np.arange(line, line + rows)
            line += rows
            if markers.numbers.size:
                arrays = [np.array(a, dtype=float) for a in arrays]
                for array in arrays:
                    markers.apply(array)
            empty = _missing_rows(arrays)
            if empty.size and not every:
                lines = _block_lines(block, source)
                empty = np.array([r for r in empty if _empty_line(lines[r], source, markers)],
                                 dtype=np.intp)
            values, numbers = _assemble(arrays, numbers, empty, matrix)
            report_progress(task, stream.raw_position(), size)
            yield values, numbers


def _csv_layout_and_skip(source: TableFile) -> tuple[_Layout, int]:
    path = _open_checked(source)
    with formats.open_binary(path, source.compression) as stream:
        raw = stream.read(1 << 20)
    layout = read_layout(source, raw=raw)
    bom = 3 if raw.startswith(b"\xef\xbb\xbf") else 0
    if source.header is False:
        return layout, bom
    return layout, raw.index(b"\n") + 1 if b"\n" in raw else len(raw)


# ---------------------------------------------------------------------------- Parquet


def _parquet_parts(source: TableFile) -> list[Path]:
    path = _open_checked(source)
    return formats.parquet_parts(path) if path.is_dir() else [path]


def _parquet_layout(source: TableFile, parts: list[Path]) -> tuple[_Layout, list[Any]]:
    """The layout of a Parquet file or folder (every part must have the same columns),
    and the open files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = source.where
    handles = []
    names: list[str] | None = None
    for part in parts:
        try:
            handle = pq.ParquetFile(part)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ValueError(f"{str(part)!r} is not a readable Parquet file: {exc}") from None
        part_names = [n for n in handle.schema_arrow.names if not n.startswith("__index_level_")]
        if names is None:
            names = part_names
        elif part_names != names:
            raise ValueError(
                f"{where}: {str(part)!r} has the columns {', '.join(part_names[:8])}, "
                f"{str(parts[0])!r} has {', '.join(names[:8])}; every part must have the same "
                "columns in the same order")
        handles.append(handle)
    layout = _resolve_layout(source, names or [], data_line=1)
    schema = handles[0].schema_arrow
    bad = [layout.names[j] for j in layout.use
           if not _arrow_numeric(schema.field(layout.names[j]).type)]
    if bad:
        raise _non_numeric_columns(source, bad)
    return layout, handles


def _non_numeric_columns(source: TableFile, bad: list[str]) -> ValueError:
    shown = ", ".join(repr(c) for c in bad[:5])
    leave = _say(source, "drop=[" + ", ".join(repr(c) for c in bad[:5]) + "]",
                 "--drop " + ",".join(bad[:5]))
    return ValueError(f"{source.where} has non-numeric column(s) {shown} (text, dates or "
                      f"categories); encode them or leave them out ({leave})")


def _may_hold_empty_rows(handle: Any, names: list[str]) -> bool:
    """Whether a row with no value can exist, from the files' statistics: not if every
    row group has a column without nulls (no value is read to decide this)."""
    metadata = handle.metadata
    positions = [handle.schema_arrow.get_field_index(n) for n in names]
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        complete = False
        for j in positions:
            stats = group.column(j).statistics
            if stats is not None and stats.has_null_count and stats.null_count == 0:
                complete = True
                break
        if not complete:
            return True
    return False


def _parquet_blocks(source: TableFile, layout: _Layout, handles: list[Any], chunk_rows: int,
                    matrix: Callable[[int, int], np.ndarray]
                    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    markers = _Markers(source)
    names = [layout.names[j] for j in layout.use]
    others = [n for j, n in enumerate(layout.names) if j not in set(layout.use)]
    # Rows per batch: at most chunk_rows, and about block_size bytes of float64 values, so
    # that a wide file is read in blocks of bounded memory too.
    rows_per_batch = min(int(chunk_rows), max(1024, source.block_size // (8 * max(len(names), 1))))
    total = sum(h.metadata.num_rows for h in handles)
    task, first = f"reading {Path(source.path).name}", 1
    for handle in handles:
        check_others = bool(others) and _may_hold_empty_rows(handle, layout.names)
        read = names + others if check_others else names
        for batch in handle.iter_batches(batch_size=rows_per_batch, columns=read):
            rows = batch.num_rows
            if rows == 0:
                continue
            arrays = [np.array(batch.column(k).to_numpy(zero_copy_only=False), dtype=float)
                      for k in range(len(names))]
            for array in arrays:
                markers.apply(array)
            empty = _missing_rows(arrays)
            if empty.size and check_others:
                for k in range(len(names), len(read)):
                    column = batch.column(k)
                    present = column.is_valid().to_numpy(zero_copy_only=False)[empty]
                    empty = empty[~present]
            numbers = np.arange(first, first + rows)
            first += rows
            values, numbers = _assemble(arrays, numbers, empty, matrix)
            report_progress(task, first - 1, total)
            yield values, numbers


def _arrow_numeric(kind: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind)
                or pa.types.is_boolean(kind) or pa.types.is_decimal(kind))


# ----------------------------------------------- spreadsheets and statistics packages


def _open_frame_table(source: TableFile, path: Path) -> tuple[_Layout, Any]:
    kind = source.kind
    table = formats.frame_table(path, kind, sheet=source.sheet,
                                 header=source.header is not False)
    if table.header_cells is not None:  # a spreadsheet's header row
        if not table.names:
            raise ValueError(f"{source.where} is empty")
        _check_header(source, table.names, what="the first row")
    return _resolve_layout(source, table.names, data_line=1), table


def _frame_values(series: pd.Series, parser: _TextNumbers, markers: _Markers
                  ) -> tuple[np.ndarray, int]:
    """A column of a spreadsheet or a statistics file as floats: numbers as they are, text
    parsed strictly (``(values, index of the first text that is no number or -1)``)."""
    import pyarrow as pa

    if pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series):
        values = series.to_numpy(dtype=float, na_value=np.nan)
        return values.copy() if not values.flags.writeable else values, -1
    if pd.api.types.is_datetime64_any_dtype(series) or isinstance(
            series.dtype, pd.PeriodDtype):
        return np.empty(0), 0
    cells = series.to_numpy(dtype=object)
    values = np.full(cells.shape[0], np.nan)
    is_text = np.fromiter((isinstance(v, str) for v in cells), dtype=bool, count=cells.size)
    for i in np.flatnonzero(~is_text):
        cell = cells[i]
        if cell is None or (isinstance(cell, float) and cell != cell):
            continue
        if isinstance(cell, (bool, np.bool_, int, float, np.integer, np.floating)):
            values[i] = float(cell)
        else:  # a date, a time: not a number
            return np.empty(0), int(i)
    texts = np.flatnonzero(is_text)
    if texts.size:
        parsed, bad = parser.parse(pa.array(cells[texts].tolist(), type=pa.string()))
        if bad >= 0:
            return np.empty(0), int(texts[bad])
        values[texts] = parsed
    return values, -1


def _frame_blocks(source: TableFile, layout: _Layout, table: Any,
                  matrix: Callable[[int, int], np.ndarray]
                  ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    markers = _Markers(source)
    parser = _TextNumbers(decimal=source.decimal, thousands=source.thousands, markers=markers)
    used = set(layout.use)
    for chunk in table.chunks:
        frame = chunk.frame
        rows = frame.shape[0]
        arrays = []
        for j in layout.use:
            values, bad = _frame_values(frame.iloc[:, j], parser, markers)
            if bad >= 0:
                cell = frame.iloc[bad, j]
                if values.size == 0 and not isinstance(cell, str) and bad == 0 and (
                        pd.api.types.is_datetime64_any_dtype(frame.iloc[:, j])):
                    raise _non_numeric_columns(source, [layout.names[j]])
                raise _non_numeric(source, column=layout.names[j], value=str(cell),
                                   at=f"in {table.unit} {chunk.first + bad}")
            markers.apply(values)
            arrays.append(values)
        empty = _missing_rows(arrays)
        if empty.size:
            for j in range(frame.shape[1]):
                if j in used or empty.size == 0:
                    continue
                column = frame.iloc[empty, j]
                blank = column.isna().to_numpy(dtype=bool)  # NaN, None, NaT
                cells = column.to_numpy(dtype=object)
                for i in np.flatnonzero(~blank):
                    cell = cells[i]
                    if isinstance(cell, str):
                        blank[i] = markers.is_missing_text(cell)
                    elif isinstance(cell, (int, float, np.number)) and not isinstance(
                            cell, (bool, np.bool_)):
                        blank[i] = float(cell) in markers.numbers
                empty = empty[blank]
        numbers = np.arange(chunk.first, chunk.first + rows)
        yield _assemble(arrays, numbers, empty, matrix)


# ---------------------------------------------------------------------------- driver


def _file_unit(kind: str) -> str:
    return {"csv": "line", "xlsx": "row", "xls": "row", "ods": "row"}.get(kind, "record")


def _iter_file(source: TableFile, chunk_rows: int,
               matrix: Callable[[int, int], np.ndarray], missing: str,
               notes: list[str] | None = None) -> Iterator[tuple[np.ndarray, list[str], int]]:
    """The records of a file, checked, with the columns' profile checked at the end
    (before the last block is handed on, so that nothing follows a refusal)."""
    kind = source.kind
    where = source.where
    blocks: Iterator[tuple[np.ndarray, np.ndarray]]
    if kind == "csv":
        layout, skip = _csv_layout_and_skip(source)
        blocks = _csv_blocks(source, layout, skip, matrix)
    elif kind == "parquet":
        layout, handles = _parquet_layout(source, _parquet_parts(source))
        blocks = _parquet_blocks(source, layout, handles, chunk_rows, matrix)
    else:
        path = _open_checked(source)
        layout, table = _open_frame_table(source, path)
        blocks = _frame_blocks(source, layout, table, matrix)
    columns = [layout.names[j] for j in layout.use]
    unit = _file_unit(kind)
    profile = ColumnProfile(len(columns))
    first = 0
    pending: tuple[np.ndarray, list[str], int] | None = None
    for values, numbers in blocks:
        if values.shape[0] == 0:
            continue
        _check_array(values, columns=columns, where=where, rows=numbers, unit=unit,
                     allow_missing=missing != "refuse", terms=source.terms)
        profile.add(values)
        # One block is held back: the last one is handed on only once the whole table
        # has passed the checks below.
        if pending is not None:
            yield pending
        pending = (values, columns, first)
        first += values.shape[0]
    if first == 0:
        names = ", ".join(layout.names[:8])
        raise ValueError(f"{where} has a header ({names}) but no records"
                         if source.header is not False or kind != "csv"
                         else f"{where} has no records")
    drop = _say(source, "drop=[...]", "--drop NAME")
    profile.refuse_degenerate(columns, where=where, drop=drop)
    profile.warn_identifiers(columns, terms=source.terms, notes=notes)
    assert pending is not None
    yield pending


def check_chunk_rows(chunk_rows: Any) -> int:
    """Rows per chunk must be a positive integer."""
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)) or (
        chunk_rows < 1
    ):
        raise ValueError(f"chunk_rows must be a positive integer; got {chunk_rows!r}")
    return int(chunk_rows)


def iter_chunks(
    X: Any, *, chunk_rows: int = DEFAULT_CHUNK_ROWS,
    matrix: Callable[[int, int], np.ndarray] = _new_matrix, missing: str = "refuse",
    notes: list[str] | None = None,
) -> Iterator[tuple[np.ndarray, list[str], int]]:
    """Yield ``(values, columns, first_row)`` chunks of a validated input.

    Arrays and DataFrames are sliced into ``chunk_rows`` rows; Parquet files are read
    ``chunk_rows`` rows at a time; CSV files are streamed in blocks of
    ``TableFile.block_size`` bytes (pyarrow); spreadsheets and the files of statistics
    packages are read whole or in chunks (see :mod:`dpggm.data.formats`).
    ``first_row`` is the 0-based index of the chunk's first record. A file's chunks are
    column-major matrices obtained from ``matrix(rows, width)`` (a reader that recycles
    its buffers passes its own); its rows with no value at all are not records. The
    curator's warnings about a file's columns are appended to ``notes`` if given (a reader
    in another thread re-issues them), else issued as ``CuratorWarning``.
    """
    chunk_rows = check_chunk_rows(chunk_rows)
    _refuse_dask(X, "X")
    if is_path(X):
        yield from _iter_file(_as_table(X), chunk_rows, matrix, missing, notes)
        return
    values, columns = as_matrix(X, missing=missing)
    for start in range(0, values.shape[0], chunk_rows):
        yield values[start : start + chunk_rows], columns, start


# ------------------------------------------------------------------- a column as text


def _text_label(value: Any, markers: _Markers) -> str | None:
    """A cell as a label: its text (spaces trimmed; a whole number without its ``.0``),
    ``None`` when missing."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return None if float(value) in markers.numbers else str(int(value))
    if isinstance(value, (float, np.floating)):
        if float(value) in markers.numbers:
            return None
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    text = str(value).strip()
    return None if markers.is_missing_text(text) else text


def read_text_column(source: TableFile, column: str) -> list[str | None]:
    """The cells of ``column`` of a file, as text, one per record: in the order in which
    :func:`iter_chunks` yields the records of ``source`` (a row with no value at all in any
    column is no record, there as here), ``None`` where the cell is missing. For a
    grouping column left out of the variables (``drop``): ``patients``, ``1``, ``M``.

    Whole numbers read as numbers are written without a decimal part (``1.0`` as ``1``).

    Privacy
    -------
    Reads private values (the column's): the result is for the curator's code, which
    splits the records by it; nothing is released.
    """
    kind = source.kind
    markers = _Markers(source)
    if kind == "csv":
        return _csv_text_column(source, column, markers)
    if kind == "parquet":
        return _parquet_text_column(source, column, markers)
    path = _open_checked(source)
    layout, table = _open_frame_table(source, path)
    position = _column_position(source, layout, column)
    out: list[str | None] = []
    for chunk in table.chunks:
        frame = chunk.frame
        # A row with no value in any column is no record (as the records are read).
        present = np.zeros(frame.shape[0], dtype=bool)
        for j in range(frame.shape[1]):
            cells = frame.iloc[:, j].to_numpy(dtype=object)
            present |= np.array([_text_label(c, markers) is not None for c in cells], dtype=bool)
        labels = [_text_label(c, markers) for c in frame.iloc[:, position].to_numpy(dtype=object)]
        out.extend(label for label, kept in zip(labels, present) if kept)
    return out


def _column_position(source: TableFile, layout: _Layout, column: str) -> int:
    if column not in layout.names:
        shown = ", ".join(repr(c) for c in layout.names[:10])
        raise ValueError(f"{source.where} has no column named {column!r}; its columns are "
                         f"{shown}{', ...' if len(layout.names) > 10 else ''}")
    return layout.names.index(column)


def _csv_text_column(source: TableFile, column: str, markers: _Markers) -> list[str | None]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    layout, skip = _csv_layout_and_skip(source)
    position = _column_position(source, layout, column)
    internal = [f"c{j}" for j in range(len(layout.names))]
    read_options = pacsv.ReadOptions(column_names=internal, encoding=source.encoding,
                                     block_size=1 << 20)
    parse_options = pacsv.ParseOptions(delimiter=source.delimiter, ignore_empty_lines=False)
    convert = pacsv.ConvertOptions(column_types={name: pa.string() for name in internal},
                                   null_values=[], strings_can_be_null=False,
                                   quoted_strings_can_be_null=False)
    text_markers = pa.array(markers.text)
    out: list[str | None] = []
    path = Path(source.path)
    with formats.open_binary(path, source.compression) as stream:
        for block in _byte_blocks(stream, block_size=source.block_size, skip=skip):
            table = pacsv.read_csv(pa.BufferReader(pa.py_buffer(block)),
                                   read_options=read_options, parse_options=parse_options,
                                   convert_options=convert)
            present = np.zeros(table.num_rows, dtype=bool)
            for k in range(len(internal)):
                text = pc.utf8_trim_whitespace(table.column(k))
                missing = pc.fill_null(pc.is_in(text, value_set=text_markers), True)
                present |= ~missing.to_numpy(zero_copy_only=False)
            if markers.numbers.size:
                # A field that is a numeric marker (-99) is missing too.
                for i in np.flatnonzero(present):
                    present[i] = any(_text_label(table.column(k)[i].as_py(), markers) is not None
                                     for k in range(len(internal)))
            cells = table.column(position).to_pylist()
            out.extend(_text_label(c, markers) for c, kept in zip(cells, present) if kept)
    return out


def _parquet_text_column(source: TableFile, column: str, markers: _Markers
                         ) -> list[str | None]:
    parts = _parquet_parts(source)
    layout, handles = _parquet_layout(source, parts)
    position = _column_position(source, layout, column)
    used = set(layout.use)
    out: list[str | None] = []
    for handle in handles:
        for batch in handle.iter_batches(batch_size=DEFAULT_CHUNK_ROWS):
            present = np.zeros(batch.num_rows, dtype=bool)
            for j, name in enumerate(layout.names):
                values = batch.column(batch.schema.get_field_index(name))
                if j in used:
                    # A variable: missing when null, NaN or a numeric marker (as read).
                    numbers = np.array(values.to_numpy(zero_copy_only=False), dtype=float)
                    markers.apply(numbers)
                    present |= ~np.isnan(numbers)
                else:
                    present |= values.is_valid().to_numpy(zero_copy_only=False)
            cells = batch.column(batch.schema.get_field_index(layout.names[position])
                                 ).to_pylist()
            out.extend(_text_label(c, markers) for c, kept in zip(cells, present) if kept)
    return out
