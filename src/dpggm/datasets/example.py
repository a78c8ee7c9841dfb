"""A small synthetic data set for trying the command line (``dpggm example-data``).

Privacy: made-up records from a public model; nothing here is private.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["EXAMPLE_COLUMNS", "example_records"]

#: Clinical-style measurements, each standardised by a public reference value and range.
EXAMPLE_COLUMNS = ("age", "systolic_bp", "diastolic_bp", "cholesterol", "bmi", "glucose")


def example_records(n_rows: int, *, random_state: Any = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``n_rows`` records from a chain-structured Gaussian graphical model over
    :data:`EXAMPLE_COLUMNS`, scaled by 1/3 and clipped to ``[-1, 1]``, and the true edges.

    Returns
    -------
    records : DataFrame
        One record per row, a header of column names.
    edges : DataFrame
        The true graph, columns ``source, target``.
    """
    p = len(EXAMPLE_COLUMNS)
    precision = np.eye(p)
    for j in range(p - 1):
        precision[j, j + 1] = precision[j + 1, j] = -0.45
    covariance = np.linalg.inv(precision)
    rng = np.random.default_rng(random_state)
    X = rng.multivariate_normal(np.zeros(p), covariance, size=int(n_rows), method="cholesky")
    X = np.clip(X / 3.0, -1.0, 1.0)
    records = pd.DataFrame(X, columns=list(EXAMPLE_COLUMNS))
    edges = pd.DataFrame([(EXAMPLE_COLUMNS[j], EXAMPLE_COLUMNS[j + 1]) for j in range(p - 1)],
                         columns=["source", "target"])
    return records, edges
