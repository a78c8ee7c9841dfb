"""Edge lists: the one format of a graph's edges (``source, target, weight,
partial_correlation`` and, with edge inference, ``ci_low, ci_high, p_value, q_value``),
from a precision matrix or an adjacency matrix. Post-processing of released estimates
only. :data:`EDGE_COLUMNS` says what each column means.

``weight`` is the partial correlation again, under the name network software reads as an
edge's strength: its sign is the partial correlation's. (Early builds wrote the raw-unit
precision entry there, whose sign is the opposite and whose size depends on the columns'
units; the precision matrix itself is ``precision.npy``.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "EDGE_COLUMNS",
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


#: What each column of an edge list means (README, docs/quickstart.md and the report say
#: the same).
EDGE_COLUMNS = {
    "source": "the first of the two variables the edge joins (in the data's column order)",
    "target": "the second variable",
    "weight": ("the same number as partial_correlation, under the name that network "
               "software (igraph, NetworkX, Gephi, Cytoscape, qgraph) reads as an edge's "
               "strength: its sign is the partial correlation's"),
    "partial_correlation": ("the partial correlation of the two variables: their "
                            "correlation given all the other variables, from -1 to 1"),
    "ci_low": "the lower end of the edge's interval for the partial correlation",
    "ci_high": "the upper end of that interval",
    "p_value": "the p-value of no partial correlation between the two variables",
    "q_value": ("the false-discovery-rate q-value: the smallest target rate at which the "
                "edge is selected"),
}

#: The columns of ``PrivateGraph.inference_``, one row per pair.
INFERENCE_COLUMNS = ("source", "target", "partial_correlation", "ci_low", "ci_high", "p_value",
                     "q_value", "selected")

#: The columns an edge list gains from edge inference.
EDGE_INFERENCE_COLUMNS = ("ci_low", "ci_high", "p_value", "q_value")


def edge_table(adjacency: np.ndarray, names: list[str], *, partial: np.ndarray | None,
               inference: Any = None) -> pd.DataFrame:
    """The one edge-list format: ``source, target, weight, partial_correlation``, one row
    per edge ``i < j`` of ``adjacency`` -- and, given an
    :class:`~dpggm.solvers.inference.EdgeInference`, its ``ci_low, ci_high, p_value,
    q_value`` -- strongest evidence first (smallest p-value, else largest
    ``|partial_correlation|``).

    ``partial_correlation`` is ``partial[i, j]`` and ``weight`` the same number (both
    empty without ``partial``, e.g. a graph without a precision matrix); see
    :data:`EDGE_COLUMNS`.
    """
    adjacency = np.asarray(adjacency, dtype=bool)
    i, j = np.nonzero(np.triu(adjacency, 1))
    values = partial[i, j] if partial is not None else np.full(len(i), np.nan)
    frame = pd.DataFrame({
        "source": [names[a] for a in i],
        "target": [names[b] for b in j],
        "weight": values,
        "partial_correlation": values,
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
    return edge_table(adjacency, names, partial=partial_correlation(precision))


def edges_csv_text(edges: pd.DataFrame) -> str:
    """The CSV text of an edge table (header ``source,target,weight,partial_correlation``);
    a variable name a spreadsheet would read as a formula gets a ``'`` in front
    (:func:`dpggm.io.csv_name`), the numbers are written as they are."""
    from dpggm.io import csv_names_frame

    return csv_names_frame(edges, ("source", "target")).to_csv(
        index=False, float_format="%.10g", lineterminator="\n")
