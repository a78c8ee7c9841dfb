"""Command-line options for reading data, shared by the commands that read records.

``estimate`` and ``graph`` take the same reading options (``graph`` reads in memory, so
it has no ``--engine``)::

    dpggm estimate data.csv --delimiter ';' --decimal , --index-col id ...
    dpggm estimate 'data/*.parquet' --engine dask [--scheduler ADDRESS] [--blocksize 64MB]

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
import logging
import re
from collections.abc import Iterator
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
    "EncodingOpt",
    "EngineOpt",
    "IndexColOpt",
    "NoHeaderOpt",
    "SchedulerOpt",
    "data_options",
    "fit_records",
    "open_data",
    "table_file",
]

EngineOpt = Annotated[str, typer.Option("--engine", help="memory (this machine, streamed) or dask (a cluster; needs dpggm[dask])")]
SchedulerOpt = Annotated[str | None, typer.Option("--scheduler", help="Dask scheduler address (default: a local cluster on this machine)")]
BlocksizeOpt = Annotated[str | None, typer.Option("--blocksize", help="Dask partition size, e.g. 64MB (default: Dask's)")]
ColumnsOpt = Annotated[str | None, typer.Option("--columns", help="comma-separated names of the columns to use (default: all)")]
DelimiterOpt = Annotated[str, typer.Option("--delimiter", help="CSV field separator, e.g. ';' or '\\t'")]
DecimalOpt = Annotated[str, typer.Option("--decimal", help="CSV decimal mark: . or ,")]
NoHeaderOpt = Annotated[bool, typer.Option("--no-header", help="the CSV file has no header row (columns are named col1, col2, ...)")]
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


def data_options(
    engine: str = "memory", scheduler: str | None = None, blocksize: str | None = None,
    columns: str | None = None, delimiter: str = ",", decimal: str = ".",
    no_header: bool = False, index_col: str | None = None, encoding: str = "utf-8",
) -> DataOptions:
    """Check the option values (before any data is read) and bundle them."""
    if engine not in ("memory", "dask"):
        raise ValueError(f"--engine must be 'memory' or 'dask'; got {engine!r}")
    if engine == "memory" and scheduler is not None:
        raise ValueError("--scheduler needs --engine dask")
    if engine == "memory" and blocksize is not None:
        raise ValueError("--blocksize needs --engine dask")
    delimiter = {"\\t": "\t", "tab": "\t"}.get(delimiter, delimiter)
    return DataOptions(engine, scheduler, blocksize, columns, delimiter, decimal, no_header,
                       index_col, encoding)


def table_file(data: str | Path, options: DataOptions) -> Any:
    """The :class:`~dpggm.estimators.data.TableFile` the options describe."""
    from dpggm.estimators.data import TableFile

    text = str(data)
    # A URL passed through pathlib loses one slash of "scheme://" ("s3:/bucket/..."): put
    # it back, so that commands may declare DATA as a Path.
    text = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]+):/(?!/)", r"\1://", text)
    columns = None
    if options.columns is not None:
        columns = [c.strip() for c in options.columns.split(",")]
        if not all(columns):
            raise ValueError(f"--columns must be comma-separated names; got {options.columns!r}")
    index: str | int | None = options.index_col
    if index is not None and index.isdigit():
        if int(index) < 1:
            raise ValueError(f"--index-col numbers columns from 1; got {index}")
        index = int(index) - 1
    return TableFile(text, columns=columns, delimiter=options.delimiter,
                     decimal=options.decimal, header=not options.no_header, index_col=index,
                     encoding=options.encoding)


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

        from dpggm.estimators import _dask
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
        frame = _dask.read_dask(source, blocksize=options.blocksize)
        token = _dask.show_progress.set(progress)
        try:
            yield frame
        finally:
            _dask.show_progress.reset(token)


def fit_records(
    estimator: Any, data: str | Path, options: DataOptions | None = None, *,
    progress: bool = False,
) -> Any:
    """``estimator.fit`` on DATA read as the options say (for commands such as ``graph``);
    returns the fitted estimator."""
    with open_data(data, options, progress=progress) as records:
        return estimator.fit(records)
