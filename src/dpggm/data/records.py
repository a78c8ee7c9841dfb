"""Reading the private records of a fit: the one entry point that dispatches between the
in-memory reader (:mod:`dpggm.data.tables`: arrays, DataFrames, CSV and Parquet files)
and the cluster reader (:mod:`dpggm.data.dask_records`: Dask collections).

It sits above both, so neither imports the other (:mod:`dpggm.data.dask_records` builds on
:mod:`dpggm.data.tables`; this module chooses between them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpggm.data.tables import (
    DEFAULT_CHUNK_ROWS,
    SecondMoment,
    is_dask_collection,
)
from dpggm.data.tables import clipped_second_moment as _in_memory_second_moment
from dpggm.mechanisms.bounds import Bounds

__all__ = ["RecordMatrix", "SecondMoment", "clipped_second_moment"]


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


def clipped_second_moment(
    X: Any,
    *,
    bounds: Bounds,
    center: np.ndarray | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    missing: str = "refuse",
) -> SecondMoment:
    """Clip every record to ``bounds`` and accumulate ``X^T X / n``: in chunks for data in
    memory or in files (:func:`dpggm.data.tables.clipped_second_moment`), per partition
    and tree-reduced on its cluster for a Dask collection
    (:func:`dpggm.data.dask_records.clipped_second_moment`); the results agree up to
    floating-point summation order.

    Privacy
    -------
    The result is the exact (unreleased) statistic; only a mechanism may publish it.
    Nothing here draws noise, so every error is raised before any budget is spent.
    """
    if is_dask_collection(X):
        from dpggm.data import dask_records

        if missing == "drop":
            X = dask_records.without_incomplete_rows(X)
        return dask_records.clipped_second_moment(X, bounds=bounds, center=center)
    return _in_memory_second_moment(X, bounds=bounds, center=center, chunk_rows=chunk_rows,
                                    missing=missing)
