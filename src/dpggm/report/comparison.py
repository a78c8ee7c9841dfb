"""The pictures and the self-contained HTML report of a group comparison (the directory
``dpggm compare`` or ``PrivateGraphComparison.save`` writes): the difference graph, the
differences' intervals, each group's network on the same layout, every node's strength
and expected influence with intervals, the global test, what the plan can detect and the
guarantee in words.

Everything shown is read from the released files (``result.json``, ``differences.csv``,
``centrality.csv``, ``centrality_differences.csv``, ``edges_<level>.csv``): the report is
post-processing and spends no budget.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import pandas as pd

from dpggm.io import name_from_csv
from dpggm.report.html import format_budget, format_number, guarantee_in_words, load_result
from dpggm.report.plots import FORMATS, centrality_plot, draw_graph, forest_plot, inline_svg

__all__ = ["comparison_files", "comparison_report"]

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,"Noto Sans",sans-serif;
margin:2em auto;max-width:1100px;color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;border-bottom:1px solid #ddd;
padding-bottom:.2em;margin-top:1.6em}
.badge{display:inline-block;padding:.15em .6em;border-radius:.3em;font-weight:600;color:#fff}
.valid{background:#2e7d32}.invalid{background:#c62828}.data-dependent{background:#ef6c00}
.none{background:#616161}
figure{margin:1em 0}figure svg{display:block;width:100%;height:auto;max-width:880px}
.pair{display:flex;gap:1em;flex-wrap:wrap}.pair figure{flex:1 1 420px}
figcaption{color:#444;font-size:.95em;max-width:880px}
table{border-collapse:collapse;font-size:.92em;margin:.4em 0}td,th{border:1px solid #ddd;
padding:.25em .6em;text-align:left;vertical-align:top}th{background:#f5f5f5;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.note{color:#555;font-size:.92em}
.summary{border-left:4px solid #1f6fb4;background:#f4f8fc;padding:.5em .9em;max-width:880px}
.summary p{margin:.3em 0}
"""

#: Rows of the differences table shown in the report (differences.csv has every pair).
TABLE_LIMIT = 60


def _read(directory: Path, name: str, names: tuple[str, ...]) -> pd.DataFrame | None:
    path = directory / name
    if not path.exists():
        return None
    frame = pd.read_csv(path, dtype={c: str for c in names}, keep_default_na=False)
    for column in names:
        if column in frame:
            frame[column] = [name_from_csv(v) for v in frame[column]]
    return frame


def _loaded(directory: Path) -> dict[str, Any]:
    record, _ = load_result(directory)
    if record.get("method") != "PrivateGraphComparison":
        raise FileNotFoundError(f"{directory} is not the output of 'dpggm compare'")
    levels = [str(v) for v in record.get("levels", [])]
    edge_files = (record.get("files") or {}).get("edges") or {}
    return {
        "record": record,
        "levels": levels,
        "names": [str(v) for v in record.get("features") or []],
        "differences": _read(directory, "differences.csv", ("source", "target")),
        "centrality": _read(directory, "centrality.csv", ("group", "node")),
        "edges": {level: _read(directory, edge_files[level], ("source", "target"))
                  for level in levels if level in edge_files},
    }


def _difference_edges(differences: pd.DataFrame) -> pd.DataFrame:
    """The selected differences as an edge list draw_graph reads (the difference in the
    partial-correlation column, its q-value for the line style)."""
    chosen = differences[differences["selected"].astype(str).str.lower() == "true"]
    return pd.DataFrame({
        "source": chosen["source"], "target": chosen["target"],
        "weight": chosen["difference"], "partial_correlation": chosen["difference"],
        "ci_low": chosen["ci_low"], "ci_high": chosen["ci_high"],
        "p_value": chosen["p_value"], "q_value": chosen["q_value"],
    }).reset_index(drop=True)


def _drawings(loaded: dict[str, Any], formats: tuple[str, ...]) -> dict[str, Any]:
    record, levels, names = loaded["record"], loaded["levels"], loaded["names"]
    settings = record.get("differences") or {}
    fdr = float(settings.get("fdr", 0.1))
    level = float(settings.get("confidence_level", 0.9))
    union = pd.concat([e[["source", "target", "partial_correlation"]]
                       for e in loaded["edges"].values() if e is not None and not e.empty]
                      or [pd.DataFrame(columns=["source", "target", "partial_correlation"])])
    drawings: dict[str, Any] = {}
    differences = loaded["differences"]
    if differences is not None:
        chosen = _difference_edges(differences)
        drawings["difference_graph"] = draw_graph(
            chosen, names, title=f"{levels[0]} minus {levels[1]}" if len(levels) == 2 else "",
            fdr=fdr, fmt=formats, layout_edges=union,
            measure="difference of partial correlations")
        if not chosen.empty:
            drawings["difference_intervals"] = forest_plot(
                chosen, names, confidence_level=level, fdr=fdr, fmt=formats, span=2.0,
                measure="difference of partial correlations", what="selected differences")
    for index, (group, edges) in enumerate(loaded["edges"].items()):
        if edges is not None:
            drawings[f"graph_{index + 1}"] = draw_graph(
                edges, names, title=f"{group}", fdr=fdr, fmt=formats, layout_edges=union)
    if loaded["centrality"] is not None and not loaded["centrality"].empty:
        drawings["centrality"] = centrality_plot(loaded["centrality"], confidence_level=level,
                                                 fmt=formats)
    return drawings


def comparison_files(directory: Path | str, *, name: str | None = None,
                     formats: tuple[str, ...] = FORMATS) -> dict[str, bytes | str]:
    """The pictures of a comparison directory as files to write beside it --
    ``difference_graph``, ``difference_intervals`` (when a difference is selected), each
    group's ``graph_<k>`` (k its position among the levels) and ``centrality``, each in
    ``formats`` -- and ``report.html`` (:func:`comparison_report`, the directory shown as
    ``name``)."""
    directory = Path(directory)
    loaded = _loaded(directory)
    files: dict[str, bytes | str] = {
        f"{stem}.{fmt}": content for stem, drawing in _drawings(loaded, formats).items()
        for fmt, content in drawing.items()}
    files["report.html"] = comparison_report(directory, name=name)
    return files


def _p(value: Any) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return ""
    return f"{value:.2g}" if value >= 1e-4 else "< 0.0001"


def _summary(record: dict[str, Any], differences: pd.DataFrame | None) -> str:
    levels = record.get("levels", [])
    test = record.get("global_test") or {}
    settings = record.get("differences") or {}
    sizes = record.get("group_sizes") or {}
    size_words = ", ".join(f"{html.escape(str(k))}: {v}" for k, v in sizes.items())
    are = record.get("group_sizes_are") or ""
    lines = [f"<p>Groups ({size_words}; sizes {html.escape(str(are))}). Differences are "
             f"{html.escape(str(settings.get('difference', '')))}.</p>"]
    n_selected = record.get("n_differences")
    if settings.get("selection_withheld"):
        lines.append(f"<p><b>No difference is selected:</b> "
                     f"{html.escape(str(settings['selection_withheld']))}.</p>")
    elif differences is not None:
        lines.append(
            f"<p><b>{n_selected}</b> of {len(differences)} pairs differ between the groups at "
            f"a false-discovery rate of {format_number(settings.get('fdr'))} "
            f"({html.escape(str(settings.get('fdr_method', 'bh')).upper())}).</p>")
    if test.get("p_value") is not None:
        lines.append(
            "<p>Global test of “the two networks are equal” ("
            f"{html.escape(str(test.get('statistic', '')))}): statistic "
            f"{format_number(test.get('value'))}, "
            + (f"p = {_p(test['p_value'])}" if test["p_value"] >= 0.001 else "p < 0.001")
            + " "
            f"({html.escape(str(test.get('calibration', '')))}).</p>")
    detectable = (record.get("detectable_difference") or {}).get("difference")
    if isinstance(detectable, (int, float)):
        lines.append(f"<p>With this plan a pair whose partial correlation differs by "
                     f"{detectable:.2g} or more between the groups is found at least 80 % of "
                     "the time (a public figure of the plan, not of the data).</p>")
    else:
        lines.append("<p>With this plan no difference of partial correlations up to 0.99 "
                     "is found 80 % of the time (a figure of the plan).</p>")
    del levels
    return f'<div class="summary">{"".join(lines)}</div>'


def _difference_rows(differences: pd.DataFrame) -> str:
    ordered = differences.sort_values(["p_value"], kind="stable").head(TABLE_LIMIT)
    head = ("<tr><th>source</th><th>target</th><th>difference</th><th>interval</th>"
            "<th>p-value</th><th>q-value</th><th>selected</th></tr>")
    rows = "".join(
        f"<tr><td>{html.escape(r.source)}</td><td>{html.escape(r.target)}</td>"
        f"<td class='num'>{r.difference:+.3f}</td>"
        f"<td class='num'>[{r.ci_low:+.3f}, {r.ci_high:+.3f}]</td>"
        f"<td class='num'>{_p(r.p_value)}</td><td class='num'>{_p(r.q_value)}</td>"
        f"<td>{'yes' if str(r.selected).lower() == 'true' else ''}</td></tr>"
        for r in ordered.itertuples())
    more = ("" if len(differences) <= TABLE_LIMIT else
            f"<p class='note'>The {TABLE_LIMIT} pairs with the smallest p-values; "
            f"differences.csv has all {len(differences)}.</p>")
    return f"<table>{head}{rows}</table>{more}"


def _budget_rows(privacy: dict[str, Any]) -> str:
    steps = (privacy.get("noise") or {}).get("breakdown") or []
    rows = "".join(
        f"<tr><td>{html.escape(str(s.get('step', '')))}</td>"
        f"<td>{html.escape(str(s.get('mechanism', '')))}</td>"
        f"<td>{html.escape(format_budget(s.get('budget') or {}))}</td></tr>" for s in steps)
    return ("<table><tr><th>step</th><th>mechanism</th><th>budget</th></tr>"
            f"{rows}</table>")


def _cases(privacy: dict[str, Any]) -> str:
    groups = (privacy.get("notes") or {}).get("groups") or {}
    parts = []
    if groups.get("composition"):
        parts.append(f"<p>{html.escape(str(groups['composition']))}.</p>")
    cases = groups.get("cases") or {}
    if cases:
        rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(format_budget(v))}</td>"
                       "</tr>" for k, v in cases.items())
        parts.append(f"<table><tr><th>neighbouring case</th><th>cost</th></tr>{rows}</table>")
    return "".join(parts)


def _support_words(record: dict[str, Any]) -> str:
    edges = (record.get("centrality") or {}).get("edges")
    return f"its edges ({edges})" if edges else "its edges"


def _figure(drawing: Any, caption: str, label: str) -> str:
    return (f'<figure role="img" aria-label="{html.escape(label)}">{inline_svg(drawing)}'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def comparison_report(directory: Path | str, *, name: str | None = None) -> str:
    """The HTML text of a self-contained report of a comparison directory."""
    directory = Path(directory)
    loaded = _loaded(directory)
    record, levels = loaded["record"], loaded["levels"]
    privacy = record.get("privacy") or {}
    validity = str(privacy.get("validity") or "none")
    drawings = _drawings(loaded, ("svg",))
    differences = loaded["differences"]
    title = f"dpggm compare: {' vs '.join(levels)}"
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p><span class="badge {html.escape(validity)}">{html.escape(validity)}</span> '
        f'<span class="note">from <code>result.json</code> in '
        f"<code>{html.escape(name or directory.name)}</code></span></p>",
        _summary(record, differences), "<h2>Where the networks differ</h2>",
    ]
    if "difference_graph" in drawings:
        parts.append(_figure(
            drawings["difference_graph"]["svg"],
            "The difference graph: an edge joins two variables whose partial correlation "
            f"differs between the groups ({levels[0]} minus {levels[1]}), selected at the "
            "stated false-discovery rate; width grows with the difference, blue when it is "
            "larger in the first group, red when smaller. The variables sit where they sit "
            "in the groups' networks below.", "the difference graph"))
    if "difference_intervals" in drawings:
        parts.append(_figure(
            drawings["difference_intervals"]["svg"],
            "Each selected difference with its interval (the two releases' sampling and "
            "privacy noise in quadrature; per pair, not widened for the selection).",
            "intervals of the differences"))
    parts.append("<h2>Each group's network</h2><div class='pair'>")
    for index, level in enumerate(levels):
        key = f"graph_{index + 1}"
        if key in drawings:
            parts.append(_figure(drawings[key]["svg"], f"The network of {level} (its own "
                                 "release and edge selection).", f"network of {level}"))
    parts.append("</div>")
    if "centrality" in drawings:
        parts.append("<h2>Centrality</h2>" + _figure(
            drawings["centrality"]["svg"],
            "Every node's strength (sum of |partial correlation| over its edges) and expected "
            "influence (sum of its signed partial correlations), one colour per group, over "
            + _support_words(loaded["record"]) + ", with delta-method intervals that take "
            "those edges as given "
            "(centrality.csv; centrality_differences.csv has the groups' differences with "
            "intervals and p-values).", "centrality"))
    if differences is not None:
        parts.append("<h2>Differences</h2>" + _difference_rows(differences))
    parts.append("<h2>Privacy guarantee</h2><ul>")
    parts += [f"<li>{html.escape(line)}</li>" for line in guarantee_in_words(privacy)]
    parts.append("</ul>" + _cases(privacy))
    if (privacy.get("noise") or {}).get("breakdown"):
        parts.append("<h3>How the budget was spent</h3>" + _budget_rows(privacy))
    parts.append("</body></html>")
    return "\n".join(parts)
