"""PNG pictures of a released graph and precision matrix (post-processing only)."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["draw_graph", "precision_heatmap"]

_POSITIVE = "#1f77b4"  # blue: positive partial correlation
_NEGATIVE = "#d62728"  # red: negative partial correlation


def _figure(size: tuple[float, float]):
    # The Agg canvas draws without a display and without touching pyplot's global state,
    # so this works in a headless process and in threads.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(figure)
    return figure


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def draw_graph(edges: pd.DataFrame, names: Sequence[str], *, title: str = "") -> bytes:
    """A PNG drawing of the graph: one node per variable, edge width by |partial
    correlation|, colour by sign (blue positive, red negative), labels.

    Parameters
    ----------
    edges : DataFrame
        ``source, target`` and, if known, ``partial_correlation`` (the one edge format).
    names : sequence of str
        Every variable, so that isolated nodes are drawn too.
    """
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(str(n) for n in names)
    partial = edges["partial_correlation"] if "partial_correlation" in edges else None
    for k, row in enumerate(edges.itertuples(index=False)):
        value = float(partial.iloc[k]) if partial is not None else math.nan
        graph.add_edge(str(row.source), str(row.target), pc=value)
    p = max(len(names), 1)
    side = min(4.0 + 0.25 * p, 12.0)
    figure = _figure((side, side))
    ax = figure.add_subplot()
    # A circle is readable for the sizes dpggm handles and, unlike a force layout, gives
    # the same picture for the same nodes, so two releases can be compared by eye.
    position = nx.circular_layout(graph)
    weights = [abs(d["pc"]) if math.isfinite(d["pc"]) else 0.3
               for _, _, d in graph.edges(data=True)]
    colours = [_NEGATIVE if math.isfinite(d["pc"]) and d["pc"] < 0 else _POSITIVE
               for _, _, d in graph.edges(data=True)]
    nx.draw_networkx_edges(graph, position, ax=ax, width=[0.5 + 6 * w for w in weights],
                           edge_color=colours, alpha=0.8)
    nx.draw_networkx_nodes(graph, position, ax=ax, node_size=300, node_color="#f0f0f0",
                           edgecolors="#333333")
    font = 9 if p <= 15 else 7
    for node, (x, y) in position.items():
        # Labels sit outside the circle, aligned away from it, so they never cover it.
        label = node if len(node) <= 18 else node[:17] + "…"
        ax.text(1.08 * x, 1.08 * y, label, fontsize=font,
                ha="left" if x > 0.05 else "right" if x < -0.05 else "center",
                va="bottom" if y > 0.05 else "top" if y < -0.05 else "center")
    ax.set_axis_off()
    ax.set_xlim(-1.7, 1.7)
    ax.set_ylim(-1.3, 1.3)
    n_edges = graph.number_of_edges()
    heading = f"{title}\n" if title else ""
    ax.set_title(f"{heading}{n_edges} edge{'s' if n_edges != 1 else ''}; width |partial "
                 "correlation|, blue +, red −", fontsize=10)
    return _png(figure)


def precision_heatmap(matrix: np.ndarray, names: Sequence[str], *, title: str = "") -> bytes:
    """A PNG heatmap of a precision matrix as partial correlations (off the diagonal),
    diverging colours centred at zero."""
    matrix = np.asarray(matrix, dtype=float)
    d = np.sqrt(np.abs(np.diag(matrix)))
    d[d == 0] = 1.0
    shown = -matrix / np.outer(d, d)
    np.fill_diagonal(shown, np.nan)
    p = matrix.shape[0]
    side = min(4.0 + 0.22 * p, 12.0)
    figure = _figure((side + 1.0, side))
    ax = figure.add_subplot()
    limit = float(np.nanmax(np.abs(shown))) if p > 1 and np.isfinite(shown).any() else 1.0
    limit = limit if limit > 0 else 1.0
    image = ax.imshow(shown, cmap="RdBu", vmin=-limit, vmax=limit)
    figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="partial correlation")
    if p <= 40:
        ax.set_xticks(range(p), [str(n) for n in names], rotation=90, fontsize=7)
        ax.set_yticks(range(p), [str(n) for n in names], fontsize=7)
    ax.set_title(title or "precision matrix as partial correlations", fontsize=10)
    return _png(figure)
