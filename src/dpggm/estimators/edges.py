"""Edge lists: the one format of a graph's edges (``source, target, weight,
partial_correlation``), from a precision matrix or an adjacency matrix. Post-processing of
released estimates only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "EDGE_INFERENCE_COLUMNS",
    "INFERENCE_COLUMNS",
    "edge_table",
    "edges_csv_text",
    "edges_from_precision",
    "partial_correlation",
]


def partial_correlation(precision: np.ndarray) -> np.ndarray:
    """``-Theta_ij / sqrt(Theta_ii Theta_jj)`` off the diagonal, 1 on it."""
    d = np.sqrt(np.abs(np.diag(precision)))
    d[d == 0] = 1.0
    out = -precision / np.outer(d, d)
    np.fill_diagonal(out, 1.0)
    return out


#: The columns of ``PrivateGraph.inference_``, one row per pair.
INFERENCE_COLUMNS = ("source", "target", "partial_correlation", "ci_low", "ci_high", "p_value",
                     "q_value", "selected")

#: The columns an edge list gains from edge inference.
EDGE_INFERENCE_COLUMNS = ("ci_low", "ci_high", "p_value", "q_value")


def edge_table(adjacency: np.ndarray, names: list[str], *, weight: np.ndarray | None,
               partial: np.ndarray | None, inference: Any = None) -> pd.DataFrame:
    """The one edge-list format: ``source, target, weight, partial_correlation``, one row
    per edge ``i < j`` of ``adjacency`` -- and, given an
    :class:`~dpggm.solvers.inference.EdgeInference`, its ``ci_low, ci_high, p_value,
    q_value`` -- strongest evidence first (smallest p-value, else largest
    ``|partial_correlation|``).

    ``weight`` is the precision entry (empty when there is none, e.g. a graph without a
    precision matrix); ``partial_correlation`` likewise.
    """
    adjacency = np.asarray(adjacency, dtype=bool)
    i, j = np.nonzero(np.triu(adjacency, 1))
    frame = pd.DataFrame({
        "source": [names[a] for a in i],
        "target": [names[b] for b in j],
        "weight": weight[i, j] if weight is not None else np.full(len(i), np.nan),
        "partial_correlation": partial[i, j] if partial is not None else np.full(len(i), np.nan),
    })
    strength = -np.abs(frame["partial_correlation"].fillna(0).to_numpy())
    if inference is not None:
        for column in EDGE_INFERENCE_COLUMNS:
            frame[column] = inference.matrix(column)[i, j]
        order = np.lexsort((strength, frame["p_value"].to_numpy()))
    else:
        order = np.argsort(strength, kind="stable")
    return frame.iloc[order].reset_index(drop=True)


def edges_from_precision(
    precision: np.ndarray, names: list[str], *, adjacency: np.ndarray | None = None
) -> pd.DataFrame:
    """:func:`edge_table` of a precision matrix: every non-zero off-diagonal entry is an
    edge (or the given ``adjacency``), with its partial correlation."""
    precision = np.asarray(precision, dtype=float)
    if adjacency is None:
        adjacency = precision != 0
    return edge_table(adjacency, names, weight=precision, partial=partial_correlation(precision))


def edges_csv_text(edges: pd.DataFrame) -> str:
    """The CSV text of an edge table (header ``source,target,weight,partial_correlation``);
    a variable name a spreadsheet would read as a formula gets a ``'`` in front
    (:func:`dpggm.io.csv_name`), the numbers are written as they are."""
    from dpggm.io import csv_names_frame

    return csv_names_frame(edges, ("source", "target")).to_csv(
        index=False, float_format="%.10g", lineterminator="\n")
