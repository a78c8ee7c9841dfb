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

__all__ = ["draw_graph", "precision_heatmap"]

_POSITIVE = "#1f6fb4"  # blue: positive partial correlation
_NEGATIVE = "#d62728"  # red: negative partial correlation
_BASE_FONT = "DejaVu Sans"  # matplotlib's own font, always present
#: Longest label drawn; longer names end in an ellipsis (the edge list has them whole).
MAX_LABEL = 24
#: PNG resolution: a 10-inch graph is 1500 pixels wide.
PNG_DPI = 150


def _short(name: str) -> str:
    return name if len(name) <= MAX_LABEL else name[: MAX_LABEL - 1] + "…"


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
               fmt: str = "png") -> bytes | str:
    """A drawing of the graph: one node per variable on a circle, edge width by
    \\|partial correlation\\|, colour by sign (blue positive, red negative), labels.

    Parameters
    ----------
    edges : DataFrame
        ``source, target`` and, if known, ``partial_correlation`` (the one edge format).
    names : sequence of str
        Every variable, so that isolated nodes are drawn too.
    title : str
        A first heading line.
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
        partial = edges["partial_correlation"] if "partial_correlation" in edges else None
        drawn = []
        for k, row in enumerate(edges.itertuples(index=False)):
            a, b = str(row.source), str(row.target)
            if a not in index or b not in index or a == b:
                continue
            value = float(partial.iloc[k]) if partial is not None else math.nan
            drawn.append((abs(value) if math.isfinite(value) else 0.3, value, index[a],
                          index[b]))
        # Strongest edges last, on top.
        for strength, value, i, j in sorted(drawn, key=lambda item: item[0]):
            colour = _NEGATIVE if math.isfinite(value) and value < 0 else _POSITIVE
            ax.add_patch(PathPatch(_arc(points[i], points[j]), fill=False, edgecolor=colour,
                                   linewidth=0.9 + 5.0 * min(strength, 1.0), alpha=0.8,
                                   capstyle="round", zorder=1))
        degree = np.zeros(p, dtype=int)
        for _, _, i, j in drawn:
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
        heading = 0.28 * len(lines) + 0.2  # inches above the drawing
        width, height = (high - low) * radius
        figure.set_size_inches(width, height + heading)
        ax.set_position((0, 0, 1, height / (height + heading)))
        ax.set_xlim(low[0], high[0])
        ax.set_ylim(low[1], high[1])
        ax.set_aspect("equal")
        figure.text(0.5, 1 - 0.1 / (height + heading), "\n".join(lines), ha="center",
                    va="top", fontsize=13, parse_math=False, color="#222222")
        return _render(figure, fmt)


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
