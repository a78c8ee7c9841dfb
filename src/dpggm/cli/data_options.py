"""Command-line options for reading data, shared by the commands that read records.

``estimate`` and ``graph`` take the same reading options::

    dpggm graph export.csv.gz --drop date,sex --id-col id --scale 'item_*=1:6' ...
    dpggm graph survey.sav --schema schema.yaml ...
    dpggm estimate data.csv --delimiter ';' --decimal , --thousands . --index-col id ...
    dpggm estimate 'data/*.parquet' --engine dask [--scheduler ADDRESS] [--blocksize 64MB]

Column names are given as in the file; a name that holds a comma is CSV-quoted
(``--drop '"a, b",c'``); a pattern (``item_*``) names every column it matches. They make
the table's public schema (:class:`~dpggm.data.schema.TableSchema`), built here and
applied by the library.

With ``--engine memory`` (the default) the file is streamed block by block on this machine.
With ``--engine dask`` the data (a path, a glob or any fsspec URL) is read as a Dask
DataFrame and reduced on a cluster: the scheduler at ``--scheduler``, or a local cluster on
this machine; Dask's progress bar is shown on a terminal. Dask is imported only then.

A command uses :func:`open_data` as a context manager around ``fit``::

    with open_data(data, options) as X:
        estimator.fit(X)
"""

from __future__ import annotations

import contextlib
import csv
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = [
    "BlocksizeOpt",
    "ColumnsOpt",
    "DataOptions",
    "DecimalOpt",
    "DelimiterOpt",
    "DropOpt",
    "EncodingOpt",
    "EngineOpt",
    "FormatOpt",
    "HeaderOpt",
    "IdColOpt",
    "IndexColOpt",
    "NaValuesOpt",
    "NoHeaderOpt",
    "ScaleOpt",
    "SchedulerOpt",
    "SchemaOpt",
    "SheetOpt",
    "ThousandsOpt",
    "data_options",
    "declared_ranges",
    "declares_ranges",
    "fit_records",
    "open_data",
    "parse_names",
    "parse_scale",
    "table_file",
]

_QUOTING = "quote a name holding a comma: '\"a, b\",c'"

EngineOpt = Annotated[str, typer.Option("--engine", help="memory (this machine, streamed) or dask (a cluster; needs dpggm[dask])")]
SchedulerOpt = Annotated[str | None, typer.Option("--scheduler", help="Dask scheduler address (default: a local cluster on this machine)")]
BlocksizeOpt = Annotated[str | None, typer.Option("--blocksize", help="Dask partition size, e.g. 64MB (default: Dask's)")]
ColumnsOpt = Annotated[str | None, typer.Option("--columns", help="comma-separated names or patterns (item_*) of the columns to use, in this order (default: all but --drop and --id-col); " + _QUOTING)]
DropOpt = Annotated[str | None, typer.Option("--drop", help="comma-separated names or patterns of columns that are not variables (dates, categories, free text); " + _QUOTING)]
IdColOpt = Annotated[str | None, typer.Option("--id-col", help="comma-separated names or patterns of record-identifier columns: never variables")]
ScaleOpt = Annotated[list[str] | None, typer.Option("--scale", help="a declared range, PATTERN=LOW:HIGH, e.g. 'item_*=1:6' for items answered 1 to 6 (repeatable): public, so nothing is spent on those columns' ranges")]
SchemaOpt = Annotated[Path | None, typer.Option("--schema", help="a JSON or YAML schema of the columns: per name or pattern a kind (continuous, ordinal, binary, id, drop) and optional bounds")]
NaValuesOpt = Annotated[str | None, typer.Option("--na-values", help="comma-separated extra markers of a missing value, e.g. '-99,.' (always: empty, NA, N/A, #N/A, NaN, nan, NULL, ...)")]
ThousandsOpt = Annotated[str | None, typer.Option("--thousands", help="thousands separator of numbers such as 157,000.00 (e.g. ',' or '.' with --decimal ,)")]
SheetOpt = Annotated[str | None, typer.Option("--sheet", help="the sheet of a spreadsheet: its name or 1-based number (default: the first)")]
FormatOpt = Annotated[str | None, typer.Option("--format", help="the file's format if its name does not say: csv, parquet, xlsx, xls, ods, sav, por, dta, sas7bdat, xpt")]
DelimiterOpt = Annotated[str, typer.Option("--delimiter", help="CSV field separator, e.g. ';' or '\\t'")]
DecimalOpt = Annotated[str, typer.Option("--decimal", help="CSV decimal mark: . or ,")]
NoHeaderOpt = Annotated[bool, typer.Option("--no-header", help="the file has no header row (columns are named col1, col2, ...)")]
HeaderOpt = Annotated[bool, typer.Option("--header", help="the first line holds the column names even if they are numbers (0,1,2,... and 1,2,3,... are read as names without it)")]
IndexColOpt = Annotated[str | None, typer.Option("--index-col", help="a record-identifier column to drop: its name, or its 1-based number")]
EncodingOpt = Annotated[str, typer.Option("--encoding", help="text encoding of the CSV file, e.g. latin-1")]


@dataclass(frozen=True)
class DataOptions:
    """What the user said about how to read the data (all public choices)."""

    engine: str = "memory"
    scheduler: str | None = None
    blocksize: str | None = None
    columns: str | None = None
    delimiter: str = ","
    decimal: str = "."
    no_header: bool = False
    index_col: str | None = None
    encoding: str = "utf-8"
    drop: str | None = None
    id_col: str | None = None
    scale: tuple[str, ...] = ()
    schema: Path | None = None
    na_values: str | None = None
    thousands: str | None = None
    sheet: str | None = None
    format: str | None = None
    header: bool = False


def parse_names(text: str | None, option: str) -> list[str]:
    """A comma-separated list of names or patterns, CSV-quoted where a name holds a comma
    (``'"a, b",c'``); spaces around a name are not part of it."""
    if text is None:
        return []
    try:
        fields = next(csv.reader([text], skipinitialspace=True), [])
    except csv.Error as exc:
        raise ValueError(f"{option} {text!r}: {exc}; {_QUOTING}") from None
    names = [f.strip() for f in fields]
    if not names or not all(names):
        raise ValueError(f"{option} must be comma-separated column names; got {text!r} "
                         f"({_QUOTING})")
    return names


def parse_scale(entries: Sequence[str]) -> dict[str, tuple[float, float]]:
    """``--scale PATTERN=LOW:HIGH`` (repeatable; ``PATTERN`` may list several names or
    patterns, comma-separated)."""
    scales: dict[str, tuple[float, float]] = {}
    for entry in entries:
        patterns, sep, span = entry.rpartition("=")
        low, colon, high = span.partition(":")
        if not sep or not colon:
            raise ValueError(f"--scale must be PATTERN=LOW:HIGH, e.g. 'item_*=1:6'; got "
                             f"{entry!r}")
        try:
            bounds = (float(low), float(high))
        except ValueError:
            raise ValueError(f"--scale {entry!r}: LOW and HIGH must be numbers (written "
                             "with a decimal point)") from None
        for pattern in parse_names(patterns, f"--scale {entry!r}"):
            if pattern in scales and scales[pattern] != bounds:
                raise ValueError(f"--scale gives {pattern!r} two ranges; give it one")
            scales[pattern] = bounds
    return scales


def data_options(
    engine: str = "memory", scheduler: str | None = None, blocksize: str | None = None,
    columns: str | None = None, delimiter: str = ",", decimal: str = ".",
    no_header: bool = False, index_col: str | None = None, encoding: str = "utf-8", *,
    drop: str | None = None, id_col: str | None = None, scale: Sequence[str] | None = None,
    schema: Path | None = None, na_values: str | None = None, thousands: str | None = None,
    sheet: str | None = None, format: str | None = None, header: bool = False,
) -> DataOptions:
    """Check the option values (before any data is read) and bundle them."""
    if engine not in ("memory", "dask"):
        raise ValueError(f"--engine must be 'memory' or 'dask'; got {engine!r}")
    if engine == "memory" and scheduler is not None:
        raise ValueError("--scheduler needs --engine dask")
    if engine == "memory" and blocksize is not None:
        raise ValueError("--blocksize needs --engine dask")
    if header and no_header:
        raise ValueError("--header and --no-header contradict each other; give one")
    delimiter = {"\\t": "\t", "tab": "\t"}.get(delimiter, delimiter)
    if thousands is not None:
        thousands = {"space": " ", "nbsp": "\u00a0", "'": "'"}.get(thousands, thousands)
    options = DataOptions(engine, scheduler, blocksize, columns, delimiter, decimal, no_header,
                          index_col, encoding, drop, id_col, tuple(scale or ()), schema,
                          na_values, thousands, sheet, format, header)
    # Every option is parsed now, so that a mistyped one is answered before any data.
    _reading_arguments(options)
    return options


def _reading_arguments(options: DataOptions) -> dict[str, Any]:
    """The :class:`~dpggm.data.tables.TableFile` arguments the options stand for."""
    from dpggm.data.schema import TableSchema

    index: str | int | None = options.index_col
    if index is not None and index.isdigit():
        if int(index) < 1:
            raise ValueError(f"--index-col numbers columns from 1; got {index}")
        index = int(index) - 1
    sheet: str | int | None = options.sheet
    if sheet is not None and sheet.isdigit():
        if int(sheet) < 1:
            raise ValueError(f"--sheet numbers sheets from 1; got {sheet}")
        sheet = int(sheet) - 1
    schema = None
    if options.schema is not None:
        schema = TableSchema.from_file(options.schema, terms="cli")
    columns = parse_names(options.columns, "--columns") if options.columns is not None else None
    return {
        "columns": columns, "delimiter": options.delimiter, "decimal": options.decimal,
        "header": False if options.no_header else (True if options.header else None),
        "index_col": index, "encoding": options.encoding, "format": options.format,
        "drop": parse_names(options.drop, "--drop"),
        "id_columns": parse_names(options.id_col, "--id-col"),
        "scales": parse_scale(options.scale) or None, "schema": schema,
        "na_values": parse_names(options.na_values, "--na-values")
        if options.na_values is not None else (),
        "thousands": options.thousands, "sheet": sheet, "terms": "cli",
    }


def table_file(data: str | Path, options: DataOptions) -> Any:
    """The :class:`~dpggm.data.tables.TableFile` the options describe."""
    from dpggm.data.tables import TableFile

    text = str(data)
    # A URL passed through pathlib loses one slash of "scheme://" ("s3:/bucket/..."): put
    # it back, so that commands may declare DATA as a Path.
    text = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]+):/(?!/)", r"\1://", text)
    return TableFile(text, **_reading_arguments(options))


def declares_ranges(options: DataOptions) -> bool:
    """Whether ``--scale`` or the ``--schema`` file declares a range (nothing is read but
    the schema file)."""
    if options.scale:
        return True
    if options.schema is None:
        return False
    from dpggm.data.schema import TableSchema

    return TableSchema.from_file(options.schema, terms="cli").declares_ranges


def declared_ranges(data: str | Path, options: DataOptions) -> dict[str, tuple[float, float]]:
    """The declared range of each variable that has one (``--scale``, ``--schema``), by
    column name, from the table's column names only (its header or metadata)."""
    if not declares_ranges(options):
        return {}
    source = table_file(data, options)
    if options.engine == "memory":
        return source.declared_ranges()
    from dpggm.data import dask_records

    return dict(dask_records.resolve_columns(source).ranges)


@contextlib.contextmanager
def open_data(
    data: str | Path, options: DataOptions | None = None, *, progress: bool = False
) -> Iterator[Any]:
    """Yield what ``fit`` should receive: a :class:`TableFile` in memory, or a Dask
    DataFrame bound to a client (closed, with its local cluster, on exit). ``progress``
    shows Dask's progress bar on stdout (only for a terminal: never into a file)."""
    options = options if options is not None else DataOptions()
    source = table_file(data, options)
    if options.engine == "memory":
        yield source
        return
    try:
        import distributed

        from dpggm.data import dask_records
    except ImportError:
        raise ValueError(
            "--engine dask needs the optional dependencies: pip install 'dpggm[dask]'"
        ) from None
    with contextlib.ExitStack() as stack:
        if options.scheduler is not None:
            try:
                client = distributed.Client(options.scheduler, timeout="20s")
            except OSError as exc:
                raise ValueError(
                    f"cannot reach the Dask scheduler at {options.scheduler!r}: {exc}"
                ) from None
        else:
            # Worker shutdown chatter ("still alive after 4 s, killing") is not the user's
            # concern; errors still show.
            cluster = stack.enter_context(distributed.LocalCluster(
                dashboard_address=None, silence_logs=logging.ERROR))
            client = distributed.Client(cluster)
        stack.enter_context(client)
        frame = dask_records.read_dask(source, blocksize=options.blocksize)
        token = dask_records.show_progress.set(progress)
        try:
            yield frame
        finally:
            dask_records.show_progress.reset(token)


def fit_records(
    estimator: Any, data: str | Path, options: DataOptions | None = None, *,
    progress: bool = False,
) -> Any:
    """``estimator.fit`` on DATA read as the options say (for commands such as ``graph``);
    returns the fitted estimator."""
    with open_data(data, options, progress=progress) as records:
        return estimator.fit(records)
