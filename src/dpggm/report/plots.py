"""Pictures of a released graph and precision matrix (post-processing only).

Each picture is drawn as a PNG file (``fmt="png"``) or as SVG markup to put inline in a
report (``fmt="svg"``). In SVG the labels stay text (``svg.fonttype = "none"``), so the
browser draws any script (Greek, Cyrillic, CJK, ...) with the fonts of the reader's
machine and the labels scale with the page. In a PNG matplotlib must draw every glyph
itself: the fonts installed on this machine that cover the labels' characters are used
as fallbacks after DejaVu Sans, and a label that no installed font can draw is replaced
by its column number (``#7``) rather than by boxes. No warning from matplotlib reaches
the user either way.

The graph is drawn on a circle, the first variable at the top and the others clockwise,
so that two releases over the same columns can be compared by eye. Edges are arcs bent
towards the centre: the edge between two neighbours on the circle is a visible loop,
distinct from the edges of the next neighbours, where straight chords would merge into
the circle's outline.
"""

from __future__ import annotations

import functools
import io
import math
import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["EVIDENCE_STYLES", "draw_graph", "edge_evidence", "forest_plot", "precision_heatmap"]

_POSITIVE = "#1f6fb4"  # blue: positive partial correlation
_NEGATIVE = "#d62728"  # red: negative partial correlation
_BASE_FONT = "DejaVu Sans"  # matplotlib's own font, always present
#: Longest label drawn; longer names end in an ellipsis (the edge list has them whole).
MAX_LABEL = 24
#: PNG resolution: a 10-inch graph is 1500 pixels wide.
PNG_DPI = 150
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


def _short(name: str) -> str:
    return name if len(name) <= MAX_LABEL else name[: MAX_LABEL - 1] + "…"


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


def _labels(names: Sequence[str], fmt: str) -> tuple[list[str], list[str]]:
    """The labels to draw and the font families to draw them with."""
    labels = [_short(str(n)) for n in names]
    families, missing = _fonts_for(labels)
    if fmt == "png" and missing:
        labels = [label if not ({ord(c) for c in label} & missing) else f"#{j + 1}"
                  for j, label in enumerate(labels)]
    return labels, families


def _rc(families: list[str], salt: str) -> dict[str, Any]:
    return {
        "font.family": families,
        "svg.fonttype": "none",  # text stays text: the browser draws every script
        "svg.hashsalt": salt,  # stable ids: the same picture gives the same markup
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


def _render(figure, fmt: str) -> bytes | str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, bbox_inches="tight", pad_inches=0.15,
                   **({"dpi": PNG_DPI} if fmt == "png" else {"metadata": {"Date": None}}))
    if fmt == "png":
        return buffer.getvalue()
    text = buffer.getvalue().decode("utf-8")
    # Markup for an HTML page: no XML prolog or doctype, and a size set by the page (the
    # viewBox keeps the proportions).
    text = text[text.index("<svg"):]
    # The metadata block names matplotlib's web site: a report refers to nothing outside.
    text = re.sub(r"(?s)\s*<metadata>.*?</metadata>", "", text)
    # After the fonts matplotlib measured with, the reader's own: the browser then finds
    # a glyph for any script.
    text = re.sub(r"(font-family: [^;\"]*)", r"\1, sans-serif", text)
    head_end = text.index(">")
    head = re.sub(r'\s(width|height)="[^"]*"', "", text[:head_end])
    return head + text[head_end:]


def _quietly(draw):
    """Run a drawing function with matplotlib's warnings (missing glyphs, with file
    paths) kept from the user: the labels were chosen so that nothing is lost."""

    @functools.wraps(draw)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        fmt = kwargs.get("fmt", "png")
        if fmt not in ("png", "svg"):
            raise ValueError(f"fmt must be 'png' or 'svg'; got {fmt!r}")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"(?s).*[Gg]lyph .*missing from")
            warnings.filterwarnings("ignore", message=r"(?s).*[Mm]atplotlib currently does not support")
            return draw(*args, **kwargs)

    return wrapper


def _arc(start: np.ndarray, end: np.ndarray):
    """A quadratic Bézier from ``start`` to ``end`` bent towards the centre: the closer
    the two nodes on the circle, the deeper the bend relative to their distance."""
    from matplotlib.path import Path

    middle = (start + end) / 2
    control = middle * 0.45
    return Path([start, control, end], [Path.MOVETO, Path.CURVE3, Path.CURVE3])


@_quietly
def draw_graph(edges: pd.DataFrame, names: Sequence[str], *, title: str = "",
               fdr: float = 0.1, fmt: str = "png") -> bytes | str:
    """A drawing of the graph: one node per variable on a circle, edge width by
    \\|partial correlation\\|, colour by sign (blue positive, red negative), line style
    by evidence (with q-values), labels.

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
    fmt : {"png", "svg"}
        PNG bytes, or SVG markup (text kept as text) to put inline in a web page.

    Returns
    -------
    bytes or str
    """
    from matplotlib import rc_context
    from matplotlib.patches import Circle, PathPatch

    names = [str(n) for n in names]
    index = {name: j for j, name in enumerate(names)}
    p = max(len(names), 1)
    labels, families = _labels(names, fmt)
    # Sizes in inches and points: the circle's radius grows with the number of nodes so
    # that labels keep at least ~11 pt of arc each; the label font shrinks only past ~60.
    longest = max((len(label) for label in labels), default=1)
    font = 12.0 if p <= 60 else max(6.0, 12.0 * 60 / p)
    label_inches = 0.6 * font / 72 * longest + 0.15
    radius = max(3.0, 2.0 * p * font / 72 / (2 * math.pi))
    side = 2 * (radius + label_inches) + 0.2
    angles = [math.pi / 2 - 2 * math.pi * j / p for j in range(p)]
    points = np.array([[math.cos(a), math.sin(a)] for a in angles])
    node = min(0.045, 0.35 * math.pi / p)  # node radius, in units of the circle's radius

    with rc_context(_rc(families, "dpggm-graph")):
        figure = _figure((side, side))
        ax = figure.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        limit = side / 2 / radius
        ax.set_xlim(-limit, limit)
        ax.set_ylim(-limit, limit)
        ax.add_patch(Circle((0, 0), 1.0, fill=False, edgecolor="#e3e3e3", linewidth=0.8,
                            zorder=0))
        drawn = _drawn_edges(edges, index, fdr)
        # Strongest edges last, on top.
        for strength, value, i, j, kind in sorted(drawn, key=lambda item: item[0]):
            colour = _NEGATIVE if math.isfinite(value) and value < 0 else _POSITIVE
            style = EVIDENCE_STYLES[kind][0] if kind is not None else "solid"
            ax.add_patch(PathPatch(_arc(points[i], points[j]), fill=False, edgecolor=colour,
                                   linewidth=0.9 + 5.0 * min(strength, 1.0), alpha=0.8,
                                   linestyle=style,
                                   capstyle="round" if style == "solid" else "butt",
                                   zorder=1))
        kinds = {item[4] for item in drawn if item[4] is not None}
        degree = np.zeros(p, dtype=int)
        for _, _, i, j, _ in drawn:
            degree[i] += 1
            degree[j] += 1
        texts = []
        for j, (x, y) in enumerate(points):
            ax.add_patch(Circle((x, y), node, facecolor="#ffffff" if degree[j] else "#eeeeee",
                                edgecolor="#333333", linewidth=1.0, zorder=2))
            angle = math.degrees(angles[j])
            right = x >= -1e-9
            gap = 1.0 + node + 0.04
            texts.append(ax.text(gap * x, gap * y, labels[j], fontsize=font, parse_math=False,
                                 rotation=angle if right else angle + 180,
                                 rotation_mode="anchor", ha="left" if right else "right",
                                 va="center", color="#111111", zorder=3))
        # Fit the picture to its labels: measure them, then give the axes exactly the
        # space they take at the same scale (inches per unit of the circle's radius).
        renderer = figure.canvas.get_renderer()
        inverse = ax.transData.inverted()
        corners = [(-1.0 - node, -1.0 - node), (1.0 + node, 1.0 + node)]
        for text in texts:
            box = text.get_window_extent(renderer)
            corners += [tuple(inverse.transform((box.x0, box.y0))),
                        tuple(inverse.transform((box.x1, box.y1)))]
        low = np.min(corners, axis=0) - 0.03
        high = np.max(corners, axis=0) + 0.03
        n_edges = len(drawn)
        lines = [title] if title else []
        lines.append(f"{n_edges} edge{'s' if n_edges != 1 else ''} among {len(names)} "
                     "variables; width |partial correlation|, blue +, red −")
        if any(label != _short(name) for label, name in zip(labels, names)):
            lines.append("#k: the k-th column, whose name needs a font this machine lacks")
        text_inches = 0.28 * len(lines) + 0.2  # inches above the drawing
        width, height = (high - low) * radius
        handles = _evidence_handles(kinds, fdr)
        heading = text_inches + (0.3 if handles else 0.0)
        figure.set_size_inches(width, height + heading)
        ax.set_position((0, 0, 1, height / (height + heading)))
        ax.set_xlim(low[0], high[0])
        ax.set_ylim(low[1], high[1])
        ax.set_aspect("equal")
        figure.text(0.5, 1 - 0.1 / (height + heading), "\n".join(lines), ha="center",
                    va="top", fontsize=13, parse_math=False, color="#222222")
        if handles:
            _style_legend(figure, handles, top=1 - (text_inches - 0.05) / (height + heading))
        return _render(figure, fmt)


def _drawn_edges(edges: pd.DataFrame, index: dict[str, int],
                 fdr: float) -> list[tuple[float, float, int, int, str | None]]:
    """(width strength, partial correlation, i, j, evidence) of every edge between two
    known variables."""
    partial = _column(edges, "partial_correlation")
    q_values = _column(edges, "q_value")
    drawn = []
    for k, row in enumerate(edges.itertuples(index=False)):
        a, b = str(row.source), str(row.target)
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


@_quietly
def precision_heatmap(matrix: np.ndarray, names: Sequence[str], *, title: str = "",
                      fmt: str = "png") -> bytes | str:
    """A heatmap of a precision matrix as partial correlations (off the diagonal),
    diverging colours centred at zero; PNG bytes or SVG markup (see :func:`draw_graph`)."""
    from matplotlib import rc_context

    matrix = np.asarray(matrix, dtype=float)
    d = np.sqrt(np.abs(np.diag(matrix)))
    d[d == 0] = 1.0
    shown = -matrix / np.outer(d, d)
    np.fill_diagonal(shown, np.nan)
    p = matrix.shape[0]
    labels, families = _labels([str(n) for n in names], fmt)
    font = 10.0 if p <= 30 else 8.0
    cell = max(0.22, font * 1.45 / 72)  # inches per row: labels never overlap
    label_inches = 0.6 * font / 72 * max((len(s) for s in labels), default=1)
    side = min(max(4.0, cell * p), 14.0)
    with rc_context(_rc(families, "dpggm-heatmap")):
        figure = _figure((side + label_inches + 1.6, side + label_inches + 0.8))
        ax = figure.add_subplot()
        finite = shown[np.isfinite(shown)]
        limit = float(np.abs(finite).max()) if finite.size else 1.0
        limit = limit if limit > 0 else 1.0
        image = ax.imshow(shown, cmap="RdBu", vmin=-limit, vmax=limit,
                          interpolation="nearest")
        bar = figure.colorbar(image, ax=ax, fraction=0.046, pad=0.03)
        bar.set_label("partial correlation", fontsize=font)
        bar.ax.tick_params(labelsize=font)
        if p <= 60:
            ax.set_xticks(range(p), labels, rotation=90, fontsize=font, parse_math=False)
            ax.set_yticks(range(p), labels, fontsize=font, parse_math=False)
        else:
            ax.set_xlabel("variable (in the order of the data's columns)", fontsize=font)
        ax.set_title(title or "precision matrix as partial correlations", fontsize=12,
                     parse_math=False)
        return _render(figure, fmt)


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
                limit: int = FOREST_LIMIT, fmt: str = "png") -> bytes | str:
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
    fmt : {"png", "svg"}

    Returns
    -------
    bytes or str
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
        ax.set_xlim(max(-1.0, left - pad), min(1.0, right + pad))
        ax.set_xlabel(f"partial correlation, with its {level} interval", fontsize=10)
        ax.tick_params(axis="x", labelsize=9)
        ax.grid(axis="x", color="#f0f0f0", linewidth=0.6, zorder=0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if any(np.isfinite(q_values)):
            ax.text(1.015, 1.0, "q-value", transform=ax.transAxes, va="bottom", ha="left",
                    fontsize=9, color="#333333", fontweight="bold")
        shown = (f"the {m} edges" if m == total else
                 f"{m} of the {total} edges\n(those with the strongest evidence; the edge "
                 "list has all)")
        ax.set_title(f"{level} intervals of {shown}", fontsize=11, parse_math=False,
                     loc="left", pad=16)
        if handles:
            figure.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.0),
                          ncol=2, frameon=False, fontsize=9, handlelength=3.0)
        return _render(figure, fmt)
