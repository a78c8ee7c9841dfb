"""Pictures and self-contained HTML reports of released graphs (layer 5: reads released
results only; no privacy budget)."""

from dpggm.report.html import build_report, guarantee_in_words
from dpggm.report.plots import draw_graph, precision_heatmap

__all__ = ["build_report", "draw_graph", "guarantee_in_words", "precision_heatmap"]
