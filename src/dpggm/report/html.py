"""A self-contained HTML report of a result directory (``graph``, ``estimate`` or
``recover`` output): picture, edge table, the guarantee in plain words, parameters and
public diagnostics. Images are inlined as base64 and no resource is fetched from the
network, so the file can be mailed or archived as it is.

Only what the directory holds is shown; everything there is already released, so the
report is post-processing and spends no budget.
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm.report.plots import draw_graph, precision_heatmap

__all__ = ["build_report", "guarantee_in_words", "load_result"]

_RESULT_FILES = ("result.json", "recovery.json")

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2em auto;
max-width:1100px;color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;border-bottom:1px solid #ddd;
padding-bottom:.2em;margin-top:1.6em}
.badge{display:inline-block;padding:.15em .6em;border-radius:.3em;font-weight:600;color:#fff}
.valid{background:#2e7d32}.invalid{background:#c62828}.data-dependent{background:#ef6c00}
.none{background:#616161}
.pictures{display:flex;flex-wrap:wrap;gap:1em}.pictures figure{margin:0}
.pictures img{max-width:520px;width:100%;border:1px solid #eee}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ddd;padding:.25em .6em;
text-align:left}th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#555;font-size:.9em}code{background:#f5f5f5;padding:0 .2em}
"""


def load_result(directory: Path) -> tuple[dict[str, Any], str]:
    """The result record of ``directory`` and its file name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"no such result directory: {directory}")
    for name in _RESULT_FILES:
        path = directory / name
        if path.exists():
            try:
                return json.loads(path.read_text(encoding="utf-8")), name
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} is not valid JSON: {exc}") from None
    raise FileNotFoundError(
        f"{directory} has none of {', '.join(_RESULT_FILES)}: is it the output of "
        "'dpggm graph', 'dpggm estimate' or 'dpggm recover'?"
    )


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    return str(value)


def guarantee_in_words(privacy: Any) -> list[str]:
    """Sentences that say what a recorded guarantee means for one person in the data."""
    if not isinstance(privacy, dict):
        return [f"Privacy: {privacy}"]
    budget = privacy.get("budget") or {}
    notion = budget.get("notion")
    neighbors = privacy.get("neighbors", "replace")
    who = (
        "replacing one person's record by any other record (the number of records is "
        "public)" if neighbors == "replace"
        else "adding or removing one person's record"
    )
    lines = []
    approx = privacy.get("approx_dp") or {}
    if notion == "zcdp":
        lines.append(
            f"ρ-zero-concentrated differential privacy with ρ = {_fmt(budget['rho'])}: "
            f"for two data sets that differ by {who}, the Rényi divergence of every order α "
            f"between the distributions of this output is at most ρ·α."
        )
    elif notion == "gdp":
        lines.append(
            f"μ-Gaussian differential privacy with μ = {_fmt(budget['mu'])}: telling, from "
            f"this output, which of two data sets that differ by {who} it came from is no "
            f"easier than telling a draw of N(0, 1) from a draw of N({_fmt(budget['mu'])}, 1)."
        )
    elif notion == "pure-dp":
        lines.append(
            f"ε-differential privacy with ε = {_fmt(budget['epsilon'])}: {who} changes "
            f"the probability of any outcome by a factor of at most e^ε = "
            f"{_fmt(math.exp(budget['epsilon']))}."
        )
    elif notion == "non-private":
        lines.append("No privacy guarantee: this is a non-private reference run.")
    if approx and notion != "pure-dp" and notion != "non-private":
        eps, delta = approx.get("epsilon"), approx.get("delta")
        lines.append(
            f"In (ε, δ) form: ε = {_fmt(eps)}, δ = {_fmt(delta)}. Whatever anyone does with "
            f"this output, {who} makes any conclusion at most e^ε = "
            f"{_fmt(math.exp(eps)) if isinstance(eps, (int, float)) and eps < 700 else 'huge'}"
            f" times more (or less) likely, except with probability at most δ."
        )
    lines.append(
        "The guarantee holds for every person in the data at once, whatever else an "
        "observer knows; it covers everything released here (the picture, the edge list "
        "and the matrices are computed from the private release only)."
    )
    validity = privacy.get("validity", "")
    reason = privacy.get("reason", "")
    if validity == "valid":
        lines.append("Validity: valid -- a formal differential-privacy guarantee holds.")
    else:
        lines.append(f"Validity: {validity} -- {reason}")
    return lines


def _bounds_words(bounds: Any) -> str:
    if not isinstance(bounds, dict):
        return str(bounds)
    kind = bounds.get("kind")
    if kind == "auto":
        ranges = bounds.get("ranges", {})
        return (
            "chosen privately (part of the budget above): every column was clipped to a "
            "range found by private quantiles "
            f"(tail share {_fmt(ranges.get('quantile'))} each side) and rescaled to [-1, 1]; "
            "the ranges are listed under Parameters."
        )
    if kind == "l2":
        return f"declared: every record clipped to Euclidean norm {_fmt(bounds.get('bound'))}."
    if kind == "box":
        return f"declared: every value clipped to ±{_fmt(bounds.get('bound'))} per column."
    return json.dumps(bounds)


def _image(data: bytes, alt: str) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{encoded}">'


def _features(record: dict[str, Any], precision: np.ndarray | None) -> list[str]:
    names = record.get("features")
    if isinstance(names, list) and names:
        return [str(n) for n in names]
    p = precision.shape[0] if precision is not None else 0
    return [f"x{j}" for j in range(p)]


def _read_precision(directory: Path) -> np.ndarray | None:
    if (directory / "precision.npy").exists():
        return np.load(directory / "precision.npy", allow_pickle=False)
    if (directory / "precision.csv").exists():
        frame = pd.read_csv(directory / "precision.csv", index_col=0)
        return frame.to_numpy(dtype=float)
    return None


def _edge_rows(edges: pd.DataFrame, limit: int = 200) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in edges.columns)
    rows = []
    for row in edges.head(limit).itertuples(index=False):
        cells = []
        for value in row:
            if isinstance(value, (float, np.floating)):
                cells.append(f'<td class="num">{_fmt(float(value))}</td>')
            else:
                cells.append(f"<td>{html.escape(str(value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = (f'<p class="note">… and {len(edges) - limit} more (see edges.csv).</p>'
            if len(edges) > limit else "")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>{more}"


def _parameter_rows(record: dict[str, Any]) -> str:
    shown = {k: v for k, v in record.items() if k not in ("privacy", "features", "diagnostics")}
    privacy = record.get("privacy")
    if isinstance(privacy, dict):
        for key in ("mechanism", "bounds", "noise", "notes", "random_state"):
            if key in privacy:
                shown[f"privacy.{key}"] = privacy[key]
    rows = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td><code>{html.escape(json.dumps(v, default=str) if not isinstance(v, str) else v)}</code></td></tr>"
        for k, v in shown.items()
    )
    return f"<table>{rows}</table>"


def build_report(directory: Path | str, *, name: str | None = None) -> str:
    """The HTML text of a self-contained report of ``directory`` (shown as ``name``,
    default its directory name).

    Raises
    ------
    FileNotFoundError
        ``directory`` is not a ``graph``, ``estimate`` or ``recover`` output.
    """
    directory = Path(directory)
    record, source = load_result(directory)
    precision = _read_precision(directory)
    names = _features(record, precision)
    edges = None
    if (directory / "edges.csv").exists():
        edges = pd.read_csv(directory / "edges.csv")
    privacy = record.get("privacy", {})
    title = record.get("title") or f"dpggm {record.get('command', record.get('method', 'result'))}"
    if (directory / "graph.png").exists():
        graph_png = (directory / "graph.png").read_bytes()
    elif edges is not None and {"source", "target"} <= set(edges.columns):
        graph_png = draw_graph(edges, names or sorted(set(edges.source) | set(edges.target)))
    else:
        graph_png = None
    if (directory / "precision.png").exists():
        heat_png = (directory / "precision.png").read_bytes()
    elif precision is not None:
        heat_png = precision_heatmap(precision, names)
    else:
        heat_png = None
    validity = privacy.get("validity", "none") if isinstance(privacy, dict) else "none"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p><span class="badge {html.escape(validity)}">{html.escape(validity)}</span> '
        f'<span class="note">from <code>{html.escape(source)}</code> in '
        f"<code>{html.escape(name or directory.name)}</code></span></p>",
    ]
    pictures = []
    if graph_png is not None:
        pictures.append(f"<figure>{_image(graph_png, 'the released graph')}"
                        "<figcaption>The graph: an edge joins two variables that are "
                        "dependent given all the others.</figcaption></figure>")
    if heat_png is not None:
        pictures.append(f"<figure>{_image(heat_png, 'precision matrix heatmap')}"
                        "<figcaption>Partial correlations (off the diagonal of the "
                        "normalised precision matrix).</figcaption></figure>")
    if pictures:
        parts.append('<h2>Picture</h2><div class="pictures">' + "".join(pictures) + "</div>")
    parts.append("<h2>Privacy guarantee</h2><ul>")
    parts += [f"<li>{html.escape(line)}</li>" for line in guarantee_in_words(privacy)]
    if isinstance(privacy, dict) and "bounds" in privacy:
        parts.append(f"<li>Bounds: {html.escape(_bounds_words(privacy['bounds']))}</li>")
    parts.append("</ul>")
    breakdown = (privacy.get("noise") or {}).get("breakdown") if isinstance(privacy, dict) else None
    if breakdown:
        rows = "".join(
            f"<tr><td>{html.escape(str(step.get('step')))}</td>"
            f"<td>{html.escape(str(step.get('mechanism', '')))}</td>"
            f"<td><code>{html.escape(json.dumps(step.get('budget')))}</code></td></tr>"
            for step in breakdown
        )
        parts.append("<h3>How the budget was spent</h3><table><tr><th>step</th>"
                     f"<th>mechanism</th><th>budget</th></tr>{rows}</table>")
    parts.append("<h2>Edges</h2>")
    if edges is None:
        parts.append('<p class="note">No edge list in this directory.</p>')
    elif edges.empty:
        parts.append("<p>The released graph has no edges.</p>")
    else:
        parts.append(_edge_rows(edges))
    diagnostics = dict(record.get("diagnostics") or {})
    if edges is not None and names:
        p = len(names)
        diagnostics.setdefault("edges", f"{len(edges)} of {p * (p - 1) // 2} possible")
    if diagnostics:
        rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_fmt(v))}</td></tr>"
                       for k, v in diagnostics.items())
        parts.append("<h2>Diagnostics</h2><p class='note'>Computed from the release only "
                     f"(public).</p><table>{rows}</table>")
    parts.append("<h2>Parameters</h2>" + _parameter_rows(record))
    parts.append("</body></html>")
    return "\n".join(parts)
