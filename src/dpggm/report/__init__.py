"""Pictures and self-contained HTML reports of released graphs (layer 5: reads released
results only; no privacy budget). Matplotlib and NetworkX are imported only when a picture
is drawn."""

from dpggm.report.html import (
    build_report,
    detectable_in_words,
    guarantee_in_words,
    selection_in_words,
)
from dpggm.report.layout import LAYOUTS, graph_layout, groups_from_file, groups_from_pattern
from dpggm.report.plots import (
    draw_graph,
    forest_plot,
    inline_svg,
    precision_heatmap,
    shown_graph,
)

__all__ = ["LAYOUTS", "build_report", "detectable_in_words", "draw_graph", "forest_plot",
           "graph_layout", "groups_from_file", "groups_from_pattern", "guarantee_in_words",
           "inline_svg", "precision_heatmap", "selection_in_words", "shown_graph"]
