"""Pictures and self-contained HTML reports of released graphs (layer 5: reads released
results only; no privacy budget)."""

from dpggm.report.html import (
    build_report,
    detectable_in_words,
    guarantee_in_words,
    selection_in_words,
)
from dpggm.report.plots import draw_graph, forest_plot, precision_heatmap

__all__ = ["build_report", "detectable_in_words", "draw_graph", "forest_plot",
           "guarantee_in_words", "precision_heatmap", "selection_in_words"]
