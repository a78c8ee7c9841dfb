"""The data path: the private records of a fit, read, checked and summed.

One API serves every input -- NumPy arrays, pandas DataFrames, data files (CSV, Parquet,
spreadsheets, the files of statistics packages) and Dask collections:

* :mod:`dpggm.data.tables` reads tables: :class:`~dpggm.data.tables.TableFile` (a file with
  its reading options and public schema, :mod:`dpggm.data.schema`), the checks that stop a
  misread file or a bad value before anything is released, the formats
  (:mod:`dpggm.data.formats`);
* :mod:`dpggm.data.passes` is how anything is computed from the records: a
  :class:`~dpggm.data.passes.PassTask` (the clipped second moment's sums, a regression's,
  counts on public grids, row norms, the main job's moments) run over
  :class:`~dpggm.data.passes.Records`;
* :func:`~dpggm.data.records.open_records` gives the records of any input
  (:mod:`dpggm.data.records`: arrays and streamed files; :mod:`dpggm.data.file_records`:
  a file parsed once for several passes; :mod:`dpggm.data.dask_records`: a Dask
  collection, reduced on its cluster), and
  :func:`~dpggm.data.records.clipped_second_moment` is the pass most estimators need.

The layer sits below the mechanisms (:mod:`dpggm.mechanisms`: it clips to their declared
:class:`~dpggm.mechanisms.bounds.Bounds`) and above the estimators, which are its only
users besides the command line. It transforms records and never adds noise: publishing a
statistic is a mechanism's work, as OpenDP keeps transformations apart from measurements.
Every result here is an exact statistic of the curator's records, and every refusal is
made before any budget is spent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpggm._lazy import lazy_exports

# Name -> module; imported on first use (see dpggm._lazy) so that start-up stays fast.
_EXPORTS = {
    "ClippedSums": "dpggm.data.passes",
    "PassTask": "dpggm.data.passes",
    "Records": "dpggm.data.passes",
    "SecondMoment": "dpggm.data.records",
    "clipped_second_moment": "dpggm.data.records",
    "open_records": "dpggm.data.records",
    "reading_ahead": "dpggm.data.records",
    "ResolvedColumns": "dpggm.data.schema",
    "TableSchema": "dpggm.data.schema",
    "TableFile": "dpggm.data.tables",
    "as_matrix": "dpggm.data.tables",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover
    from dpggm.data.passes import ClippedSums, PassTask, Records
    from dpggm.data.records import (
        SecondMoment,
        clipped_second_moment,
        open_records,
        reading_ahead,
    )
    from dpggm.data.schema import ResolvedColumns, TableSchema
    from dpggm.data.tables import TableFile, as_matrix

__all__ = [
    "ClippedSums",
    "PassTask",
    "Records",
    "ResolvedColumns",
    "SecondMoment",
    "TableFile",
    "TableSchema",
    "as_matrix",
    "clipped_second_moment",
    "open_records",
    "reading_ahead",
]
