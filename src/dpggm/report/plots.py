"""Pictures of a released graph and precision matrix (post-processing only).

Each picture is drawn as a PNG (``fmt="png"``, 300 dpi), an SVG document (``fmt="svg"``)
or a PDF (``fmt="pdf"``), or as several of these from one drawing (``fmt=("png", "svg",
"pdf")`` gives a dict). In SVG the labels stay text (``svg.fonttype = "none"``), so a
browser draws any script (Greek, Cyrillic, CJK, ...) with the fonts of the reader's
machine and the labels scale with the page (:func:`inline_svg` makes the markup to put in
a web page). A PDF embeds its fonts as TrueType (Type 42: the text stays text, as journals
ask). In a PNG or PDF matplotlib must draw every glyph itself: the fonts installed on this
machine that cover the labels' characters are used as fallbacks after DejaVu Sans, and a
label that no installed font can draw is replaced by its column number (``#7``) rather
than by boxes. No warning from matplotlib reaches the user either way.

The graph's variables are placed by :func:`dpggm.report.layout.graph_layout`: by default
a force-directed layout of the released edges (joined variables close together), or on a
circle in the order of the data's columns, or in clusters by declared groups; edges are
straight lines. A large graph is drawn by its strongest edges only
(:func:`shown_graph`), and the picture says so.
"""

from __future__ import annotations

import functools
import io
import logging
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpggm.report.layout import graph_layout, node_groups

__all__ = ["CENTRALITY_LIMIT", "EVIDENCE_STYLES", "FORMATS", "GRAPH_EDGE_LIMIT",
           "GRAPH_NODE_LIMIT", "HEATMAP_CELLS", "centrality_plot", "draw_graph",
           "edge_evidence", "forest_plot", "inline_svg", "precision_heatmap", "shown_graph"]

_POSITIVE = "#1f6fb4"  # blue: positive partial correlation
_NEGATIVE = "#d62728"  # red: negative partial correlation
_BASE_FONT = "DejaVu Sans"  # matplotlib's own font, always present
#: Longest label drawn; longer names end in an ellipsis (the edge list has them whole).
MAX_LABEL = 24
#: Longest label of a graph of more than 40 variables (its middle left out).
CROWDED_LABEL = 16
#: PNG resolution, as journals ask for line art with text: a 10-inch graph is 3000
#: pixels wide.
PNG_DPI = 300
#: The formats a picture is drawn in.
FORMATS = ("png", "svg", "pdf")
#: A graph drawing shows at most this many variables and edges (the strongest evidence
#: first); a larger graph is drawn by its strongest edges and says so.
GRAPH_NODE_LIMIT = 120
GRAPH_EDGE_LIMIT = 250
#: A heatmap shows at most this many cells a side; a larger matrix is shown in blocks.
HEATMAP_CELLS = 300
#: The longest side of a force-directed drawing, in inches.
GRAPH_SIDE = 10.0
#: An edge's evidence is "strong" when its q-value is below this share of the FDR cut
#: (0.01 at the default FDR of 0.1: ten times below the cut).
STRONG_SHARE = 0.1
#: How an edge is drawn by its evidence: (matplotlib dash style, legend words). "beyond"
#: appears only when the edges were not selected by their q-values (a fixed threshold).
EVIDENCE_STYLES = {
    "strong": ("solid", "strong evidence: q < {strong}"),
    "near": ((0, (3.0, 1.6)), "near the cut: {strong} ≤ q ≤ {cut}"),
    "beyond": ((0, (0.6, 1.6)), "no evidence at the cut: q > {cut}"),
}
#: Intervals a forest plot shows at most (the edges with the strongest evidence); the
#: edge list has every one.
FOREST_LIMIT = 40
#: Node colours of declared groups: the Okabe-Ito colour-blind-safe palette, lightened
#: (the edges keep pure blue and red); matplotlib's tab10, then tab20, for more groups.
_GROUP_COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00",
                  "#CC79A7", "#999999")


def _short(name: str, limit: int = MAX_LABEL) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _short_middle(name: str, limit: int = 20) -> str:
    """A long name with its middle left out (``a_rather…name_12``): the ends tell columns
    with a common prefix apart."""
    if len(name) <= limit:
        return name
    head = (limit - 1) // 2
    return name[:head] + "…" + name[len(name) - (limit - 1 - head):]


def edge_evidence(q_value: float, cut: float) -> str | None:
    """``"strong"`` (``q < STRONG_SHARE * cut``), ``"near"`` (up to the cut) or
    ``"beyond"`` (above it); ``None`` without a q-value."""
    if not math.isfinite(q_value):
        return None
    if q_value < STRONG_SHARE * cut:
        return "strong"
    return "near" if q_value <= cut else "beyond"


def _cut_text(value: float) -> str:
    return f"{value:.3g}"


def _evidence_handles(kinds: set[str], cut: float) -> list[Any]:
    """Legend entries (grey line samples) for the evidence styles drawn."""
    from matplotlib.lines import Line2D

    words = {"strong": _cut_text(STRONG_SHARE * cut), "cut": _cut_text(cut)}
    return [Line2D([0, 1], [0, 0], color="#555555", linewidth=2.2, linestyle=style,
                   label=label.format(**words))
            for kind, (style, label) in EVIDENCE_STYLES.items() if kind in kinds]


@functools.lru_cache(maxsize=1)
def _installed_fonts() -> tuple[tuple[str, frozenset[int]], ...]:
    """(family, code points) of every font file matplotlib knows, DejaVu Sans first."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    # matplotlib's font list is a cache made when it first ran: fonts installed since
    # (say, a CJK font for the labels) are added here.
    known = {entry.fname for entry in font_manager.fontManager.ttflist}
    for path in font_manager.findSystemFonts():
        if path not in known and path.lower().endswith((".ttf", ".otf", ".ttc")):
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):
                continue
    fonts: list[tuple[str, frozenset[int]]] = []
    seen: set[str] = set()
    for entry in sorted(font_manager.fontManager.ttflist,
                        key=lambda e: (e.name != _BASE_FONT, e.name, e.fname)):
        # matplotlib's "Last Resort" font has a box for every character: a box is not a
        # glyph of the label.
        if entry.name in seen or entry.name.startswith("Last Resort"):
            continue
        try:
            charmap = FT2Font(entry.fname).get_charmap()
        except (OSError, RuntimeError, ValueError):
            continue
        seen.add(entry.name)
        fonts.append((entry.name, frozenset(charmap)))
    return tuple(fonts)


@functools.lru_cache(maxsize=1)
def _base_charset() -> frozenset[int]:
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    path = font_manager.findfont(font_manager.FontProperties(family=_BASE_FONT),
                                 fallback_to_default=True)
    return frozenset(FT2Font(path).get_charmap())


def _fonts_for(texts: Sequence[str]) -> tuple[list[str], set[int]]:
    """Font families (DejaVu Sans, then fallbacks) that draw ``texts``, and the code
    points that no installed font has."""
    needed = {ord(c) for text in texts for c in text if not c.isspace()}
    missing = needed - _base_charset()
    families = [_BASE_FONT]
    if not missing:
        return families, set()
    for family, charset in _installed_fonts():
        covered = missing & charset
        if covered and family not in families:
            families.append(family)
            missing -= covered
        if not missing:
            break
    return families, missing


def _formats(fmt: str | Sequence[str]) -> tuple[str, ...]:
    formats = (fmt,) if isinstance(fmt, str) else tuple(fmt)
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, or a tuple of them; got "
                         f"{fmt!r}")
    return formats


def _labels(names: Sequence[str], fmt: str | Sequence[str], *,
            limit: int = MAX_LABEL, middle: bool = False) -> tuple[list[str], list[str]]:
    """The labels to draw and the font families to draw them with. In a PNG or PDF a
    label that no installed font draws becomes its column number; in SVG the reader's
    browser draws it."""
    shorten = _short_middle if middle else _short
    labels = [shorten(str(n), limit) for n in names]
    families, missing = _fonts_for(labels)
    if set(_formats(fmt)) - {"svg"} and missing:
        labels = [label if not ({ord(c) for c in label} & missing) else f"#{j + 1}"
                  for j, label in enumerate(labels)]
    return labels, families


def _rc(families: list[str], salt: str) -> dict[str, Any]:
    return {
        "font.family": families,
        "svg.fonttype": "none",  # text stays text: the browser draws every script
        "svg.hashsalt": salt,  # stable ids: the same picture gives the same markup
        "pdf.fonttype": 42,  # TrueType fonts in a PDF: text stays text
        "axes.titlesize": 12,
    }


def _figure(size: tuple[float, float]):
    # The Agg canvas draws without a display and without touching pyplot's global state,
    # so this works in a headless process and in threads.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(figure)
    return figure


#: savefig's options per format: PNG at journal resolution; no dates in SVG and PDF, so
#: that the same picture gives the same file.
_SAVE_OPTIONS = {
    "png": {"dpi": PNG_DPI},
    "svg": {"metadata": {"Date": None}},
    "pdf": {"metadata": {"CreationDate": None, "ModDate": None}},
}


def _render(figure, fmt: str, box: Any) -> bytes | str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, bbox_inches=box, **_SAVE_OPTIONS[fmt])
    if fmt != "svg":
        return buffer.getvalue()
    text = buffer.getvalue().decode("utf-8")
    # The metadata block names matplotlib's web site: a picture refers to nothing outside.
    text = re.sub(r"(?s)\s*<metadata>.*?</metadata>", "", text)
    # After the fonts matplotlib measured with, the reader's own: the browser then finds
    # a glyph for any script.
    return re.sub(r"(font-family: [^;\"]*)", r"\1, sans-serif", text)


def _output(figure, fmt: str | Sequence[str]) -> Any:
    """The figure in one format, or a dict of several, each cut to the drawing plus 0.15
    inch (the box measured once: matplotlib's "tight" option would draw the figure twice
    per format). The figure is done with afterwards."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    box = figure.get_tightbbox(figure.canvas.get_renderer()).padded(0.15)
    try:
        if isinstance(fmt, str):
            return _render(figure, fmt, box)
        return {one: _render(figure, one, box) for one in _formats(fmt)}
    finally:
        # A fresh canvas lets the old one's renderer go now (the last drawn, 300 dpi for
        # a PNG: tens of MB), not when the figure's cycle of references is collected:
        # the next figure reuses the memory instead of adding to it.
        FigureCanvasAgg(figure)


def inline_svg(svg: str) -> str:
    """An SVG document as markup to put in an HTML page: no XML prolog or doctype, and a
    size set by the page (the viewBox keeps the proportions)."""
    text = svg[svg.index("<svg"):]
    head_end = text.index(">")
    head = re.sub(r'\s(width|height)="[^"]*"', "", text[:head_end])
    return head + text[head_end:]


def _quietly(draw):
    """Run a drawing function with matplotlib's warnings (missing glyphs, with file
    paths) kept from the user: the labels were chosen so that nothing is lost."""

    @functools.wraps(draw)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _formats(kwargs.get("fmt", "png"))
        # matplotlib also logs (not warns) when a fallback font has no bold face.
        fonts_log = logging.getLogger("matplotlib.font_manager")
        level = fonts_log.level
        fonts_log.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r"(?s).*[Gg]lyph .*missing from")
                warnings.filterwarnings("ignore",
                                        message=r"(?s).*[Mm]atplotlib currently does not support")
                return draw(*args, **kwargs)
        finally:
            fonts_log.setLevel(level)

    return wrapper


def _evidence_order(edges: pd.DataFrame) -> np.ndarray:
    """Row order by evidence, strongest first: smallest p-value (else q-value), ties and
    edge lists without either by the largest ``|partial correlation|``."""
    strength = -np.abs(np.nan_to_num(_column(edges, "partial_correlation"), nan=0.0))
    for name in ("p_value", "q_value"):
        if name in edges:
            key = np.nan_to_num(_column(edges, name), nan=np.inf)
            return np.lexsort((strength, key))
    return np.argsort(strength, kind="stable")


def shown_graph(edges: pd.DataFrame, names: Sequence[str], *,
                max_edges: int = GRAPH_EDGE_LIMIT,
                max_nodes: int = GRAPH_NODE_LIMIT) -> tuple[pd.DataFrame, list[str]]:
    """The part of a graph a drawing shows: all of it when it has at most ``max_nodes``
    variables and ``max_edges`` edges; else its edges with the strongest evidence (as
    many as fit both limits) and only the variables they join, in column order.

    Returns
    -------
    (DataFrame, list of str)
        The edges drawn (strongest evidence first) and the variables drawn.
    """
    names = [str(n) for n in names]
    known = set(names)
    if {"source", "target"} - set(edges.columns):
        return edges.iloc[:0], names
    source, target = edges["source"].astype(str), edges["target"].astype(str)
    usable = (source.isin(known) & target.isin(known) & (source != target)).to_numpy()
    edges = edges[usable]
    edges = edges.iloc[_evidence_order(edges)]
    if len(names) <= max_nodes and len(edges) <= max_edges:
        return edges, names
    keep: list[int] = []
    touched: set[str] = set()
    for k, (a, b) in enumerate(zip(edges["source"].astype(str), edges["target"].astype(str))):
        if len(keep) >= max_edges:
            break
        if len(touched | {a, b}) > max_nodes:
            continue
        keep.append(k)
        touched |= {a, b}
    shown = edges.iloc[keep]
    if len(names) <= max_nodes:
        return shown, names
    return shown, [name for name in names if name in touched]


def _group_colours(labels: list[str] | None) -> tuple[list[str] | None, dict[str, str]]:
    """Each variable's node colour and the colour of each group (in order of first
    appearance; "other" light grey)."""
    if labels is None:
        return None, {}
    from matplotlib import colormaps
    from matplotlib.colors import to_hex, to_rgb

    order = [g for g in dict.fromkeys(labels) if g != "other"]
    if len(order) <= len(_GROUP_COLOURS):
        palette = list(_GROUP_COLOURS)
    elif len(order) <= 10:
        palette = [to_hex(colormaps["tab10"](k)) for k in range(10)]
    else:
        # tab20's strong hues first, then their light partners: neighbours in the legend
        # differ in hue.
        palette = [to_hex(colormaps["tab20"](k)) for k in [*range(0, 20, 2), *range(1, 20, 2)]]
    colours = {}
    for k, group in enumerate(order):
        rgb = np.array(to_rgb(palette[k % len(palette)]))
        colours[group] = to_hex(0.65 * rgb + 0.35)  # a tint: labels stay readable on it
    if "other" in labels:
        colours["other"] = "#eeeeee"
    return [colours[g] for g in labels], colours


@_quietly
def draw_graph(edges: pd.DataFrame, names: Sequence[str], *, title: str = "",
               fdr: float = 0.1, layout: str = "spring",
               groups: Mapping[str, Any] | Sequence[Any] | None = None,
               max_edges: int = GRAPH_EDGE_LIMIT, max_nodes: int = GRAPH_NODE_LIMIT,
               fmt: str | Sequence[str] = "png", layout_edges: pd.DataFrame | None = None,
               measure: str = "partial correlation") -> Any:
    """A drawing of the graph: one node per variable, straight edges, width by
    \\|partial correlation\\|, colour by sign (blue positive, red negative), line style
    by evidence (with q-values), labels beside the nodes.

    Parameters
    ----------
    edges : DataFrame
        ``source, target`` and, if known, ``partial_correlation`` and ``q_value`` (the
        one edge format).
    names : sequence of str
        Every variable, so that isolated nodes are drawn too.
    title : str
        A first heading line.
    fdr : float, default=0.1
        The false-discovery rate the edges were selected at. With a ``q_value`` column an
        edge is solid when its q-value is below a tenth of it (strong evidence), dashed up
        to it (near the cut) and dotted above it (only when the edges were not selected
        by their q-values); a legend says so.
    layout : {"spring", "circle", "groups"}, default="spring"
        Where the variables are drawn (:func:`dpggm.report.layout.graph_layout`):
        force-directed, on a circle in column order, or in clusters by ``groups``.
    groups : mapping or sequence, optional
        Each variable's declared group (``name -> group``, or one per variable): the
        nodes are coloured by group, with a legend; required by ``layout="groups"``.
    max_edges, max_nodes : int
        A larger graph is drawn by its strongest edges (:func:`shown_graph`); the heading
        says how many of how many.
    fmt : {"png", "svg", "pdf"} or tuple of them
        PNG bytes (300 dpi), an SVG document (text kept as text) or PDF bytes; a dict of
        them for a tuple (one drawing).
    layout_edges : DataFrame, optional
        The edges the variables' positions are computed from (default: those drawn), so
        that several graphs of the same variables -- two groups' networks and their
        difference -- can share one layout. Used when the whole graph is drawn.
    measure : str, default="partial correlation"
        What an edge's ``partial_correlation`` column holds, for the heading (a
        comparison draws the difference of two groups' partial correlations).

    Returns
    -------
    bytes, str or dict

    Privacy
    -------
    Post-processing of the released edges (and the declared groups): deterministic.
    """
    from matplotlib import rc_context

    names = [str(n) for n in names]
    declared = node_groups(groups, names)
    shown, drawn_names = shown_graph(edges, names, max_edges=max_edges, max_nodes=max_nodes)
    where = {name: j for j, name in enumerate(names)}
    group_of = None if declared is None else [declared[where[n]] for n in drawn_names]
    placed = shown if layout_edges is None or len(drawn_names) < len(names) else layout_edges
    positions = graph_layout(placed, drawn_names, layout=layout, groups=group_of)
    m = max(len(drawn_names), 1)
    crowded = m > 40 and layout != "circle"
    labels, families = _labels(drawn_names, fmt, limit=CROWDED_LABEL if crowded else MAX_LABEL,
                               middle=crowded)
    if any(label.startswith("#") for label in labels):
        # A column number counts columns of the data, not of the variables drawn.
        labels = [f"#{where[n] + 1}" if label.startswith("#") and label != _short(n) else label
                  for n, label in zip(drawn_names, labels)]
    index = {name: j for j, name in enumerate(drawn_names)}
    drawn = _drawn_edges(shown, index, fdr)
    with rc_context(_rc(families, "dpggm-graph")):
        canvas = _GraphCanvas(positions, layout, labels, [where[n] for n in drawn_names])
        canvas.measure_labels()
        if layout == "spring" and placed is shown:
            # A shared layout keeps every variable where the other drawings have it.
            canvas.space_isolated(drawn)
        canvas.draw_edges(drawn)
        fills, group_colours = _group_colours(group_of)
        canvas.draw_nodes(drawn, fills)
        canvas.draw_labels(drawn)
        lines = [title] if title else []
        lines += _graph_heading(len(drawn), len(_known_edges(edges, names)), m, len(names),
                                measure)
        if any(label.startswith("#") for label in labels):
            lines.append("#k: the k-th column, whose name needs a font this machine lacks")
        kinds = {item[4] for item in drawn if item[4] is not None}
        canvas.finish(lines, _evidence_handles(kinds, fdr), group_colours)
        return _output(canvas.figure, fmt)


def _known_edges(edges: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    if {"source", "target"} - set(edges.columns):
        return edges.iloc[:0]
    known = set(names)
    source, target = edges["source"].astype(str), edges["target"].astype(str)
    return edges[(source.isin(known) & target.isin(known) & (source != target)).to_numpy()]


def _graph_heading(n_drawn: int, n_edges: int, m: int, p: int,
                   measure: str = "partial correlation") -> list[str]:
    """The heading lines that say what the drawing shows."""
    style = f"width |{measure}|, blue +, red −"
    if n_drawn == n_edges and m == p:
        return [f"{n_edges} edge{'s' if n_edges != 1 else ''} among {p} variables; {style}"]
    joined = f"among the {m} variables they join (of {p})" if m < p else f"among {p} variables"
    return [f"the {n_drawn} edges with the strongest evidence (of {n_edges}), {joined};",
            f"{style}; the edge list has every edge"]


class _GraphCanvas:
    """One graph drawing being built: positions in layout units, ``scale`` inches per
    unit, and the artists drawn so far."""

    def __init__(self, positions: np.ndarray, layout: str, labels: list[str],
                 columns: list[int]) -> None:
        self.xy = np.asarray(positions, dtype=float).reshape(-1, 2)
        self.layout = layout
        self.labels = labels
        self.columns = columns  # each node's column in the data (for the SVG ids)
        m = max(len(labels), 1)
        span = float(np.ptp(self.xy, axis=0).max()) if len(self.xy) > 1 else 1.0
        if layout == "circle":
            # The circle's radius grows with the number of nodes so that labels keep at
            # least ~11 pt of arc each; the label font shrinks only past ~60.
            self.font = 12.0 if m <= 60 else max(6.0, 12.0 * 60 / m)
            radius = max(span / 2, 1.0)
            self.scale = max(3.0 / radius, 2.0 * self.font / 72)
            self.node = min(0.045, 0.35 * math.pi / m) * radius * self.scale
        else:
            self.scale = min(0.9, max(0.22, GRAPH_SIDE / max(span, 1.0)))
            self.font = min(11.0, max(7.0, self.scale * 72 * 0.24))
            self.node = min(0.09, max(0.04, 0.16 * self.scale))
        self.width_factor = min(1.0, max(0.6, self.scale / 0.6))
        side = span * self.scale + 6.0
        self.figure = _figure((side, side))
        self.ax = self.figure.add_axes((0, 0, 1, 1))
        self.ax.set_axis_off()
        center = (self.xy.min(axis=0) + self.xy.max(axis=0)) / 2 if len(self.xy) else (0, 0)
        half = side / 2 / self.scale
        self.ax.set_xlim(center[0] - half, center[0] + half)
        self.ax.set_ylim(center[1] - half, center[1] + half)
        self.texts: list[Any] = []

    def draw_edges(self, drawn: list[tuple[float, float, int, int, str | None]]) -> None:
        from matplotlib.lines import Line2D

        # Strongest edges last, on top.
        for strength, value, i, j, kind in sorted(drawn, key=lambda item: item[0]):
            colour = _NEGATIVE if math.isfinite(value) and value < 0 else _POSITIVE
            style = EVIDENCE_STYLES[kind][0] if kind is not None else "solid"
            self.ax.add_line(Line2D(
                self.xy[[i, j], 0], self.xy[[i, j], 1], color=colour, alpha=0.8,
                linewidth=(0.9 + 5.0 * min(strength, 1.0)) * self.width_factor,
                linestyle=style, solid_capstyle="round", dash_capstyle="butt", zorder=1))

    def draw_nodes(self, drawn: list[tuple[float, float, int, int, str | None]],
                   fills: list[str] | None) -> None:
        """Node discs (white, grey without an edge, or their group's colour), each with
        an id naming its column (``dpggm-node-<k>``) in SVG."""
        from matplotlib.patches import Circle

        degree = np.zeros(len(self.xy), dtype=int)
        for _, _, i, j, _ in drawn:
            degree[i] += 1
            degree[j] += 1
        self.degree = degree
        radius = self.node / self.scale
        for j, (x, y) in enumerate(self.xy):
            fill = fills[j] if fills is not None else ("#ffffff" if degree[j] else "#eeeeee")
            disc = Circle((x, y), radius, facecolor=fill, edgecolor="#333333",
                          linewidth=1.0 if self.scale >= 0.45 else 0.7, zorder=2)
            disc.set_gid(f"dpggm-node-{self.columns[j]}")
            self.ax.add_patch(disc)

    def draw_labels(self, drawn: list[tuple[float, float, int, int, str | None]]) -> None:
        if self.layout == "circle":
            self._radial_labels()
        else:
            segments = np.array([[self.xy[i], self.xy[j]] for _, _, i, j, _ in drawn]
                                ).reshape(-1, 2, 2)
            self._placed_labels(segments)

    def _radial_labels(self) -> None:
        """Labels pointing away from the circle's center, read left to right."""
        center = (self.xy.min(axis=0) + self.xy.max(axis=0)) / 2
        for (x, y), label in zip(self.xy, self.labels):
            dx, dy = x - center[0], y - center[1]
            angle = math.degrees(math.atan2(dy, dx))
            right = dx >= -1e-9
            reach = math.hypot(dx, dy) or 1.0
            gap = (self.node + 0.04) / self.scale
            self.texts.append(self.ax.text(
                x + gap * dx / reach, y + gap * dy / reach, label, fontsize=self.font,
                parse_math=False, rotation=angle if right else angle + 180,
                rotation_mode="anchor", ha="left" if right else "right", va="center",
                color="#111111", zorder=3))

    def measure_labels(self) -> None:
        """The labels' sizes in layout units (at the drawing's scale)."""
        renderer = self.figure.canvas.get_renderer()
        dpi = self.figure.dpi
        self.sizes = []
        for label in self.labels:
            text = self.ax.text(0, 0, label, fontsize=self.font, parse_math=False)
            box = text.get_window_extent(renderer)
            self.sizes.append((box.width / dpi / self.scale, box.height / dpi / self.scale))
            text.remove()

    def space_isolated(self, drawn: list[tuple[float, float, int, int, str | None]]) -> None:
        """The rows of variables without an edge (below the rest, in column order) spaced
        by their longest label, so that each label fits beside its node."""
        joined = np.zeros(len(self.xy), dtype=bool)
        for _, _, i, j, _ in drawn:
            joined[[i, j]] = True
        alone = np.flatnonzero(~joined)
        if len(alone) < 2:
            return
        radius = self.node / self.scale
        step = max(1.0, max(self.sizes[j][0] for j in alone) + 2 * radius + 0.35)
        # As wide as the drawing above, or wider, to a block about 1.6 times as wide as
        # it is high.
        columns = max(1, round(math.sqrt(1.6 * len(alone) / step)))
        top = left = 0.0
        if joined.any():
            columns = max(columns, int(float(np.ptp(self.xy[joined, 0])) // step) + 1)
            top = self.xy[joined, 1].min() - 1.5
            left = self.xy[joined, 0].min()
        columns = min(columns, len(alone))
        for k, j in enumerate(alone):
            self.xy[j] = (left + (k % columns) * step, top - 0.7 * (k // columns))

    def _placed_labels(self, segments: np.ndarray) -> None:
        """Each label on the side of its node where it covers the fewest other labels,
        nodes and edges (greedy, the best-connected nodes first); a white veil under the
        text keeps it readable where an edge passes."""
        texts = [self.ax.text(0, 0, label, fontsize=self.font, parse_math=False,
                              color="#111111", zorder=3) for label in self.labels]
        sizes = self.sizes
        radius = self.node / self.scale
        placed: list[np.ndarray] = []
        nodes = np.column_stack([self.xy - radius, self.xy + radius])
        order = sorted(range(len(texts)), key=lambda j: (-self.degree[j], j))
        for j in order:
            best = _best_label_box(self.xy[j], sizes[j], radius, nodes, j, placed, segments)
            box, ha, va = best
            placed.append(box)
            anchor_x = {"left": box[0], "right": box[2], "center": (box[0] + box[2]) / 2}[ha]
            anchor_y = {"bottom": box[1], "top": box[3], "center": (box[1] + box[3]) / 2}[va]
            texts[j].set_position((anchor_x, anchor_y))
            texts[j].set_horizontalalignment(ha)
            texts[j].set_verticalalignment("center_baseline" if va == "center" else va)
            texts[j].set_bbox({"facecolor": "white", "alpha": 0.7, "edgecolor": "none",
                               "pad": 0.3})
            texts[j].get_bbox_patch().set_gid(f"dpggm-label-{self.columns[j]}")
        self.texts = texts

    def finish(self, lines: list[str], handles: list[Any], group_colours: dict[str, str]
               ) -> None:
        """Fit the axes to the drawing and its labels (measured at the same scale), then
        add the heading, the line styles' legend and the groups' legend."""
        renderer = self.figure.canvas.get_renderer()
        inverse = self.ax.transData.inverted()
        radius = self.node / self.scale
        corners = [tuple(self.xy.min(axis=0) - radius), tuple(self.xy.max(axis=0) + radius)]
        for text in self.texts:
            box = text.get_window_extent(renderer)
            corners += [tuple(inverse.transform((box.x0, box.y0))),
                        tuple(inverse.transform((box.x1, box.y1)))]
        low = np.min(corners, axis=0) - 0.15 / self.scale
        high = np.max(corners, axis=0) + 0.15 / self.scale
        text_inches = 0.28 * len(lines) + 0.2  # inches above the drawing
        width, height = (high - low) * self.scale
        width = max(width, 4.0)
        middle = (low[0] + high[0]) / 2
        low[0], high[0] = middle - width / 2 / self.scale, middle + width / 2 / self.scale
        heading = text_inches + (0.3 if handles else 0.0)
        figure, ax = self.figure, self.ax
        figure.set_size_inches(width, height + heading)
        ax.set_position((0, 0, 1, height / (height + heading)))
        ax.set_xlim(low[0], high[0])
        ax.set_ylim(low[1], high[1])
        ax.set_aspect("equal")
        figure.text(0.5, 1 - 0.1 / (height + heading), "\n".join(lines), ha="center",
                    va="top", fontsize=13, parse_math=False, color="#222222")
        if handles:
            _style_legend(figure, handles, top=1 - (text_inches - 0.05) / (height + heading))
        if group_colours:
            _groups_legend(figure, group_colours)


def _overlap(box: np.ndarray, boxes: np.ndarray) -> float:
    """The total area of ``boxes`` (rows ``x0, y0, x1, y1``) inside ``box``."""
    if len(boxes) == 0:
        return 0.0
    w = np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0])
    h = np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1])
    return float(np.sum(np.clip(w, 0, None) * np.clip(h, 0, None)))


def _crossings(box: np.ndarray, segments: np.ndarray) -> int:
    """How many segments (``k x 2 x 2``) pass through ``box`` (Liang-Barsky clipping)."""
    if len(segments) == 0:
        return 0
    start, step = segments[:, 0], segments[:, 1] - segments[:, 0]
    enter, leave = np.zeros(len(segments)), np.ones(len(segments))
    for axis in (0, 1):
        low, high = box[axis], box[axis + 2]
        a, d = start[:, axis], step[:, axis]
        flat = np.abs(d) < 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            t1, t2 = (low - a) / d, (high - a) / d
        inside = (a >= low) & (a <= high)
        enter = np.maximum(enter, np.where(flat, np.where(inside, -np.inf, np.inf),
                                           np.minimum(t1, t2)))
        leave = np.minimum(leave, np.where(flat, np.where(inside, np.inf, -np.inf),
                                           np.maximum(t1, t2)))
    return int(np.sum(enter <= leave))


#: Where a label may sit beside its node: (direction x, direction y, ha, va), in order of
#: preference (right, left, above, below, then the corners).
_LABEL_SPOTS = ((1, 0, "left", "center"), (-1, 0, "right", "center"),
                (0, 1, "center", "bottom"), (0, -1, "center", "top"),
                (0.7, 0.7, "left", "bottom"), (-0.7, 0.7, "right", "bottom"),
                (0.7, -0.7, "left", "top"), (-0.7, -0.7, "right", "top"))


def _best_label_box(point: np.ndarray, size: tuple[float, float], radius: float,
                    nodes: np.ndarray, own: int, placed: list[np.ndarray],
                    segments: np.ndarray) -> tuple[np.ndarray, str, str]:
    """The spot beside a node whose label box covers the least of the others."""
    width, height = size
    others = np.delete(nodes, own, axis=0)
    labels = np.array(placed).reshape(-1, 4)
    best = None
    for rank, (dx, dy, ha, va) in enumerate(_LABEL_SPOTS):
        gap = radius * 1.15 + 0.08 * height
        x = point[0] + dx * gap
        y = point[1] + dy * gap
        x0 = {"left": x, "right": x - width, "center": x - width / 2}[ha]
        y0 = {"bottom": y, "top": y - height, "center": y - height / 2}[va]
        box = np.array([x0, y0, x0 + width, y0 + height])
        cost = (10 * (_overlap(box, labels) + _overlap(box, others)) / (width * height)
                + 0.3 * _crossings(box, segments) + 0.01 * rank)
        if best is None or cost < best[0]:
            best = (cost, box, ha, va)
    return best[1], best[2], best[3]


def _groups_legend(figure, colours: dict[str, str]) -> None:
    """The groups' colours under the drawing, in as many columns as the width holds (the
    figure grows to hold the rows)."""
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=colour, edgecolor="#333333", label=_short(group))
               for group, colour in colours.items()]
    width, height = figure.get_size_inches()
    longest = max(len(handle.get_label()) for handle in handles)
    columns = max(1, min(len(handles), int(width / (0.5 + 0.085 * longest))))
    rows = math.ceil(len(handles) / columns)
    extra = 0.26 * rows + 0.25
    figure.set_size_inches(width, height + extra)
    for ax in figure.axes:
        x0, y0, w, h = ax.get_position().bounds
        ax.set_position((x0, (y0 * height + extra) / (height + extra), w,
                         h * height / (height + extra)))
    for text in figure.texts:
        x, y = text.get_position()
        text.set_position((x, (y * height + extra) / (height + extra)))
    for legend in figure.legends:
        _, y = legend.get_bbox_to_anchor().transformed(figure.transFigure.inverted()).p0
        legend.set_bbox_to_anchor((0.5, (y * height + extra) / (height + extra)),
                                  transform=figure.transFigure)
    figure.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.0),
                  ncol=columns, frameon=False, fontsize=10, title="groups (as declared)",
                  title_fontsize=10)


def _drawn_edges(edges: pd.DataFrame, index: dict[str, int],
                 fdr: float) -> list[tuple[float, float, int, int, str | None]]:
    """(width strength, partial correlation, i, j, evidence) of every edge between two
    known variables."""
    partial = _column(edges, "partial_correlation")
    q_values = _column(edges, "q_value")
    drawn = []
    for k, (a, b) in enumerate(zip(edges["source"].astype(str), edges["target"].astype(str))):
        if a not in index or b not in index or a == b:
            continue
        value = float(partial[k])
        drawn.append((abs(value) if math.isfinite(value) else 0.3, value, index[a],
                      index[b], edge_evidence(float(q_values[k]), fdr)))
    return drawn


def _column(edges: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column of an edge table as floats (NaN where absent or empty)."""
    if name not in edges:
        return np.full(len(edges), np.nan)
    return pd.to_numeric(edges[name], errors="coerce").to_numpy(dtype=float)


def _style_legend(figure, handles: list[Any], *, top: float) -> None:
    """The line styles' legend under the heading: on one row when it fits the figure's
    width, else one entry per row (the figure grows to hold them)."""
    legend = figure.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, top),
                           ncol=len(handles), frameon=False, fontsize=11, handlelength=3.2,
                           columnspacing=1.6)
    renderer = figure.canvas.get_renderer()
    if legend.get_window_extent(renderer).width <= 0.98 * figure.bbox.width:
        return
    legend.remove()
    width, height = figure.get_size_inches()
    extra = 0.24 * (len(handles) - 1)
    figure.set_size_inches(width, height + extra)
    for ax in figure.axes:
        x0, y0, w, h = ax.get_position().bounds
        ax.set_position((x0, y0 * height / (height + extra), w, h * height / (height + extra)))
    for text in figure.texts:
        x, y = text.get_position()
        text.set_position((x, 1 - (1 - y) * height / (height + extra)))
    figure.legend(handles=handles, loc="upper center",
                  bbox_to_anchor=(0.5, 1 - (1 - top) * height / (height + extra)), ncol=1,
                  frameon=False, fontsize=11, handlelength=3.2)


def _block_strongest(values: np.ndarray, block: int) -> np.ndarray:
    """The matrix in ``block x block`` blocks, each cell the block's entry of largest
    magnitude with its sign (NaN where the block has none): a strong entry is never
    averaged away or skipped, as resampling would."""
    p = values.shape[0]
    q = math.ceil(p / block)
    padded = np.full((q * block, q * block), np.nan)
    padded[:p, :p] = values
    cells = padded.reshape(q, block, q, block).transpose(0, 2, 1, 3).reshape(q, q, -1)
    magnitude = np.where(np.isnan(cells), -1.0, np.abs(cells))
    pick = np.argmax(magnitude, axis=2)
    return np.take_along_axis(cells, pick[..., None], axis=2)[..., 0]


@_quietly
def precision_heatmap(matrix: np.ndarray, names: Sequence[str], *, title: str = "",
                      max_cells: int = HEATMAP_CELLS,
                      fmt: str | Sequence[str] = "png") -> Any:
    """A heatmap of a precision matrix as partial correlations (off the diagonal),
    diverging colours centered at zero, in the formats of :func:`draw_graph`.

    Up to 60 variables each row and column is labelled; beyond, the axes count the
    data's columns. Beyond ``max_cells`` variables the matrix is shown in square blocks
    of ``ceil(p / max_cells)`` variables a side, each cell the block's strongest partial
    correlation (with its sign), and the title says so: the picture stays small, and no
    strong entry disappears in the downsampling.
    """
    from matplotlib import rc_context

    matrix = np.asarray(matrix, dtype=float)
    d = np.sqrt(np.abs(np.diag(matrix)))
    d[d == 0] = 1.0
    shown = -matrix / np.outer(d, d)
    np.fill_diagonal(shown, np.nan)
    p = matrix.shape[0]
    block = max(1, math.ceil(p / max(int(max_cells), 1)))
    if block > 1:
        shown = _block_strongest(shown, block)
    labelled = p <= 60
    labels, families = _labels([str(n) for n in names] if labelled else [], fmt)
    font = 10.0 if p <= 30 else 8.0
    cell = max(0.22, font * 1.45 / 72)  # inches per row: labels never overlap
    label_inches = (0.6 * font / 72 * max((len(s) for s in labels), default=1)
                    if labelled else 0.4)
    # Labelled rows need their 0.22 inch each; without labels (beyond 60 variables) the
    # width of a journal's double column is enough.
    side = min(max(4.0, cell * p), 14.0) if labelled else 8.0
    heading = title or "precision matrix as partial correlations"
    if block > 1:
        heading += (f"\n{p} variables in blocks of {block} × {block}: each cell the "
                    "block's strongest")
    with rc_context(_rc(families, "dpggm-heatmap")):
        figure = _figure((side + label_inches + 1.6, side + label_inches + 0.8))
        ax = figure.add_subplot()
        finite = shown[np.isfinite(shown)]
        limit = float(np.abs(finite).max()) if finite.size else 1.0
        limit = limit if limit > 0 else 1.0
        # Cell edges in column numbers (1 to p) beyond 60 variables, so that a block's
        # cell sits over the columns it covers; up to 60, cell j is centered on tick j.
        q = shown.shape[0]
        cell_edges = (np.arange(q + 1) - 0.5 if labelled else 0.5 + block * np.arange(q + 1))
        # The cells as a mesh of rectangles, not an image: an image is resampled to the
        # picture's pixels in floating point (at 300 dpi up to 16 million of them: some
        # 400 MB for a moment at 60 variables), a mesh is filled rectangle by rectangle.
        # Rasterized, an SVG or PDF holds one picture of the cells, not a shape per cell.
        image = ax.pcolormesh(cell_edges, cell_edges, np.ma.masked_invalid(shown), cmap="RdBu",
                              vmin=-limit, vmax=limit, shading="flat", rasterized=True)
        ax.set_xlim(cell_edges[0], cell_edges[-1])
        ax.set_ylim(cell_edges[-1], cell_edges[0])
        ax.set_aspect("equal")
        bar = figure.colorbar(image, ax=ax, fraction=0.046, pad=0.03)
        bar.set_label("partial correlation", fontsize=font)
        bar.ax.tick_params(labelsize=font)
        if labelled:
            ax.set_xticks(range(p), labels, rotation=90, fontsize=font, parse_math=False)
            ax.set_yticks(range(p), labels, fontsize=font, parse_math=False)
        else:
            ax.set_xlim(0.5, p + 0.5)
            ax.set_ylim(p + 0.5, 0.5)
            ax.tick_params(labelsize=font)
            ax.set_xlabel("variable (its column number in the data)", fontsize=font)
        ax.set_title(heading, fontsize=12, parse_math=False)
        return _output(figure, fmt)


def _q_text(q_value: float) -> str:
    """A q-value in a plot's margin: two significant digits, small ones as a bound."""
    if not math.isfinite(q_value):
        return ""
    if q_value < 0.001:
        return "< 0.001"
    return f"{q_value:.2g}"


@_quietly
def forest_plot(edges: pd.DataFrame, names: Sequence[str], *, confidence_level: float = 0.9,
                fdr: float = 0.1, detectable: float | None = None,
                limit: int = FOREST_LIMIT, fmt: str | Sequence[str] = "png",
                measure: str = "partial correlation", span: float = 1.0,
                what: str = "edges") -> Any:
    """The edges' intervals, one row per edge (a forest plot).

    Each row is an edge's ``[ci_low, ci_high]`` with a dot at its ``partial_correlation``,
    coloured by sign (blue positive, red negative) and styled by evidence as in
    :func:`draw_graph`; its q-value is written in the right margin. The rows are the first
    ``limit`` edges of ``edges`` (an edge list is ordered by evidence, strongest first),
    sorted by partial correlation; the title says how many of how many are shown. With
    ``detectable``, a grey band marks ``|partial correlation| < detectable``: what the
    release cannot tell from noise.

    Parameters
    ----------
    edges : DataFrame
        An edge list with ``source, target, partial_correlation, ci_low, ci_high`` and,
        if known, ``q_value``.
    names : sequence of str
        Every variable (for the labels' fonts; see :func:`draw_graph`).
    confidence_level, fdr : float
        The intervals' level and the false-discovery rate of the selection (for the
        words and the line styles).
    detectable : float, optional
        The smallest ``|partial correlation|`` the release detects with 80 % power.
    limit : int, default=FOREST_LIMIT
        Rows drawn at most.
    fmt : {"png", "svg", "pdf"} or tuple of them
        As in :func:`draw_graph`.
    measure : str, default="partial correlation"
        What ``partial_correlation`` holds, for the axis (a comparison's difference).
    span : float, default=1.0
        The axis ends at most at ``+-span`` (2 for a difference of partial correlations).
    what : str, default="edges"
        What a row is, for the title ("differences", say).

    Returns
    -------
    bytes, str or dict
    """
    from matplotlib import rc_context
    from matplotlib.patches import Patch

    for column in ("source", "target", "ci_low", "ci_high"):
        if column not in edges:
            raise ValueError(f"a forest plot needs the edge list's {column!r} column")
    names = [str(n) for n in names]
    labels, families = _labels(names, fmt)
    # A label that no font draws is its column number (#k); the others lose their middle.
    label_of = {name: label if label.startswith("#") and label != _short(name)
                else _short_middle(name) for name, label in zip(names, labels)}
    low_all, high_all = _column(edges, "ci_low"), _column(edges, "ci_high")
    keep = np.isfinite(low_all) & np.isfinite(high_all)
    total = int(keep.sum())
    rows = edges[keep].head(limit)
    low, high = _column(rows, "ci_low"), _column(rows, "ci_high")
    point, q_values = _column(rows, "partial_correlation"), _column(rows, "q_value")
    point = np.where(np.isfinite(point), point, (low + high) / 2)
    order = np.argsort(point, kind="stable")  # the largest at the top
    m = len(rows)
    pairs = [f"{label_of.get(str(a), _short_middle(str(a)))} – "
             f"{label_of.get(str(b), _short_middle(str(b)))}"
             for a, b in zip(rows["source"], rows["target"])]
    level = f"{100 * confidence_level:.3g} %"
    band = detectable is not None and math.isfinite(detectable) and detectable > 0
    with rc_context(_rc(families, "dpggm-forest")):
        kinds = [edge_evidence(float(q), fdr) for q in q_values]
        handles = _evidence_handles(set(kinds) - {None}, fdr)
        if band:
            handles.append(Patch(facecolor="#ececec", edgecolor="none",
                                 label=f"|r| < {detectable:.2g}: not told from noise "
                                       "(80 % power)"))
        # Inches: a row each 0.27, the title above, the axis and the legend below.
        below = 0.62 + 0.22 * math.ceil(len(handles) / 2)
        height = 0.27 * max(m, 1) + 0.5 + below
        figure = _figure((8.0, height))
        ax = figure.add_axes((0.2, below / height, 0.68, 0.27 * max(m, 1) / height))
        for y, k in enumerate(order):
            kind = kinds[k]
            colour = _NEGATIVE if point[k] < 0 else _POSITIVE
            style = EVIDENCE_STYLES[kind][0] if kind is not None else "solid"
            ax.plot([low[k], high[k]], [y, y], color=colour, linewidth=2.2, linestyle=style,
                    solid_capstyle="butt", zorder=2)
            ax.plot([point[k]], [y], marker="o", markersize=5, color=colour, zorder=3)
            ax.text(1.015, y, _q_text(float(q_values[k])), transform=ax.get_yaxis_transform(),
                    va="center", ha="left", fontsize=9, color="#333333", parse_math=False)
        ax.axvline(0.0, color="#888888", linewidth=0.8, zorder=1)
        if band:
            ax.axvspan(-detectable, detectable, color="#ececec", zorder=0, linewidth=0)
        ax.set_yticks(range(m), [pairs[k] for k in order], fontsize=9, parse_math=False)
        ax.set_ylim(-0.7, m - 0.3)
        reach = [0.0, *low, *high] + ([-detectable, detectable] if band else [])
        left, right = min(reach), max(reach)
        pad = 0.05 * max(right - left, 0.1)
        ax.set_xlim(max(-span, left - pad), min(span, right + pad))
        ax.set_xlabel(f"{measure}, with its {level} interval", fontsize=10)
        ax.tick_params(axis="x", labelsize=9)
        ax.grid(axis="x", color="#f0f0f0", linewidth=0.6, zorder=0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if any(np.isfinite(q_values)):
            ax.text(1.015, 1.0, "q-value", transform=ax.transAxes, va="bottom", ha="left",
                    fontsize=9, color="#333333", fontweight="bold")
        shown = (f"the {m} {what}" if m == total else
                 f"{m} of the {total} {what}\n(those with the strongest evidence; the "
                 "list has all)")
        ax.set_title(f"{level} intervals of {shown}", fontsize=11, parse_math=False,
                     loc="left", pad=16)
        if handles:
            figure.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.0),
                          ncol=2, frameon=False, fontsize=9, handlelength=3.0)
        return _output(figure, fmt)


#: Nodes a centrality plot shows at most (the largest first); the table has every one.
CENTRALITY_LIMIT = 60
#: The groups' colours in a centrality plot (Okabe-Ito, colour-blind safe).
_SERIES_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
_MEASURE_WORDS = {"strength": "strength (sum of |partial correlation| over the node's edges)",
                  "expected_influence": "expected influence (sum of the node's signed partial "
                                        "correlations)"}


@_quietly
def centrality_plot(centrality: pd.DataFrame, *, confidence_level: float = 0.9,
                    limit: int = CENTRALITY_LIMIT, fmt: str | Sequence[str] = "png") -> Any:
    """Every node's strength and expected influence with their intervals, side by side;
    one colour per group when ``centrality`` has a ``group`` column (a comparison).

    Parameters
    ----------
    centrality : DataFrame
        ``node, strength, strength_ci_low, strength_ci_high, expected_influence,
        expected_influence_ci_low, expected_influence_ci_high`` and optionally ``group``
        (``PrivateGraph.centrality_``, a comparison's ``centrality.csv``).
    confidence_level : float
        The intervals' level (for the axis).
    limit : int
        Nodes drawn at most (the largest strength first; the title says so).
    fmt : {"png", "svg", "pdf"} or tuple of them
        As in :func:`draw_graph`.

    Returns
    -------
    bytes, str or dict

    Privacy
    -------
    Post-processing of released estimates: deterministic.
    """
    from matplotlib import rc_context
    from matplotlib.lines import Line2D

    frame = centrality.copy()
    if "group" not in frame:
        frame["group"] = ""
    frame["node"] = frame["node"].astype(str)
    frame["group"] = frame["group"].astype(str)
    series = list(dict.fromkeys(frame["group"]))
    nodes = list(dict.fromkeys(frame["node"]))
    strongest = frame.groupby("node", sort=False)["strength"].max()
    order = [n for n in strongest.sort_values(ascending=False, kind="stable").index][:limit]
    order = order[::-1]  # the largest at the top
    labels, families = _labels(order, fmt)
    label_of = {name: label if label.startswith("#") and label != _short(name)
                else _short_middle(name) for name, label in zip(order, labels)}
    m = len(order)
    level = f"{100 * confidence_level:.3g} %"
    with rc_context(_rc(families, "dpggm-centrality")):
        height = 0.3 * max(m, 1) * max(1.0, 0.6 * len(series)) + 1.6
        figure = _figure((9.0, height))
        bottom = 0.9 / height
        for k, measure in enumerate(("strength", "expected_influence")):
            ax = figure.add_axes((0.2 + 0.41 * k, bottom, 0.36, 1 - bottom - 0.55 / height))
            for s_index, group in enumerate(series):
                rows = frame[frame["group"] == group].set_index("node")
                offset = (s_index - (len(series) - 1) / 2) * (0.6 / max(len(series), 1))
                colour = _SERIES_COLOURS[s_index % len(_SERIES_COLOURS)]
                for y, node in enumerate(order):
                    if node not in rows.index:
                        continue
                    row = rows.loc[node]
                    value = float(row[measure])
                    if not math.isfinite(value):
                        continue
                    low = float(row.get(f"{measure}_ci_low", value))
                    high = float(row.get(f"{measure}_ci_high", value))
                    ax.plot([low, high], [y + offset] * 2, color=colour, linewidth=2.0,
                            solid_capstyle="butt", zorder=2)
                    ax.plot([value], [y + offset], marker="o", markersize=4.5, color=colour,
                            zorder=3)
            ax.axvline(0.0, color="#888888", linewidth=0.8, zorder=1)
            ax.set_yticks(range(m), [label_of[n] for n in order] if k == 0 else [""] * m,
                          fontsize=9, parse_math=False)
            ax.set_ylim(-0.7, m - 0.3)
            ax.set_xlabel(_MEASURE_WORDS[measure].split(" (")[0] + f", {level} interval",
                          fontsize=10)
            ax.tick_params(axis="x", labelsize=9)
            ax.grid(axis="x", color="#f0f0f0", linewidth=0.6, zorder=0)
            for side in ("top", "right"):
                ax.spines[side].set_visible(False)
        shown = (f"all {len(nodes)} nodes" if m == len(nodes)
                 else f"the {m} nodes of largest strength (of {len(nodes)})")
        figure.text(0.5, 1 - 0.12 / height, f"Centrality of {shown}", ha="center", va="top",
                    fontsize=12, parse_math=False, color="#222222")
        if len(series) > 1 or series[0]:
            handles = [Line2D([0], [0], color=_SERIES_COLOURS[i % len(_SERIES_COLOURS)],
                              marker="o", linewidth=2.0, label=str(group))
                       for i, group in enumerate(series)]
            figure.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.0),
                          ncol=min(len(series), 4), frameon=False, fontsize=9)
        return _output(figure, fmt)
