"""A self-contained HTML report of a result directory (``graph``, ``estimate`` or
``recover`` output): picture, edge table, the guarantee in plain words, the budget's
breakdown, parameters and public diagnostics, written for a reader who did not run the
command. Pictures are inline SVG with their labels kept as text (so the reader's browser
draws every script and the labels scale with the page); no resource is fetched from the
network, so the file can be mailed or archived as it is.

Numbers are written for people: a value that a few digits state exactly is written
exactly (ρ = 0.0234375), any other to four significant digits -- privacy figures (ε, δ,
ρ, μ) rounded up, towards the weaker claim, never down. Nothing is shown as raw JSON, and
an absent value is left out rather than printed as ``None``.

Only what the directory holds is shown; everything there is already released, so the
report is post-processing and spends no budget.
"""

from __future__ import annotations

import html
import json
import math
from decimal import ROUND_CEILING, Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm.io import name_from_csv
from dpggm.report.plots import (
    EVIDENCE_STYLES,
    FOREST_LIMIT,
    FORMATS,
    HEATMAP_CELLS,
    STRONG_SHARE,
    draw_graph,
    edge_evidence,
    forest_plot,
    inline_svg,
    precision_heatmap,
    shown_graph,
)

__all__ = ["build_report", "detectable_in_words", "format_budget", "format_number",
           "guarantee_in_words", "load_result", "picture_files", "picture_settings",
           "selection_in_words"]

_RESULT_FILES = ("result.json", "recovery.json")

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,"Noto Sans",sans-serif;
margin:2em auto;max-width:1100px;color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;border-bottom:1px solid #ddd;
padding-bottom:.2em;margin-top:1.6em}h3{font-size:1.05em;margin-top:1.2em}
.badge{display:inline-block;padding:.15em .6em;border-radius:.3em;font-weight:600;color:#fff}
.valid{background:#2e7d32}.invalid{background:#c62828}.data-dependent{background:#ef6c00}
.none{background:#616161}
figure{margin:1em 0}figure svg{display:block;width:100%;height:auto;max-width:880px}
figure.wide svg{max-width:1100px}
figcaption{color:#444;font-size:.95em;max-width:880px}
table{border-collapse:collapse;font-size:.92em;margin:.4em 0}td,th{border:1px solid #ddd;
padding:.25em .6em;text-align:left;vertical-align:top}th{background:#f5f5f5;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.note{color:#555;font-size:.92em}code{background:#f5f5f5;padding:0 .2em}
ul.values{margin:0;padding-left:1.1em}
.summary{border-left:4px solid #1f6fb4;background:#f4f8fc;padding:.5em .9em;max-width:880px}
.summary p{margin:.3em 0}
"""

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _scientific(text: str) -> str:
    """``9.375e-07`` as ``9.375 × 10⁻⁷``; other text unchanged."""
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    return power if mantissa == "1" else f"{mantissa} × {power}"


def format_number(value: Any, *, up: bool = False) -> str:
    """A number for people.

    Integers as they are; a float that at most eight digits state exactly, leading zeros
    included (``0.0234375``, ``1234567``, ``1e-06``), exactly; any other to four
    significant digits, rounded up
    when ``up`` (privacy figures: the statement may only get weaker) and to the nearest
    otherwise. Small and large magnitudes as ``9.375 × 10⁻⁷``.
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return "not a number"
    if math.isinf(number):
        return "∞" if number > 0 else "−∞"
    if number == 0:
        return "0"
    for digits in range(1, 9):
        text = f"{number:.{digits}g}"
        if float(text) == number:
            if abs(number) < 1e-3:
                # 0.0009765625 (a grid step of 2^-10) reads better as 9.765625 x 10^-4.
                text = f"{number:.{digits - 1}e}"
            plain = _plain(text)
            if sum(c.isdigit() for c in plain.split("e")[0]) <= 8:
                return _scientific(plain)
            break
    if up:
        exact = Decimal(number)
        step = Decimal(1).scaleb(exact.adjusted() - 3)
        rounded = (exact / step).to_integral_value(rounding=ROUND_CEILING) * step
        text = f"{float(rounded):.4g}"
        # The float nearest the decimal may fall below it; a statement is only weakened.
        if float(text) < number:
            text = f"{float(text) + float(step):.4g}"
    else:
        text = f"{number:.4g}"
    return _scientific(_plain(text))


def _plain(text: str) -> str:
    """Python's ``1e+03`` as ``1000`` (exponents only where they help: below 10⁻⁴ or from
    10⁶ on)."""
    if "e" not in text:
        return text
    number = float(text)
    if 1e-4 <= abs(number) < 1e6:
        return f"{number:f}".rstrip("0").rstrip(".")
    mantissa, exponent = text.split("e")
    return f"{mantissa}e{int(exponent)}"


def format_budget(budget: Any) -> str:
    """A recorded budget (``{"notion": "zcdp", "rho": ...}``) in words and symbols."""
    if not isinstance(budget, dict):
        return str(budget)
    notion = budget.get("notion")

    def figure(key: str) -> str:
        return format_number(budget.get(key), up=True)

    if notion == "zcdp":
        return f"ρ = {figure('rho')} (zero-concentrated DP)"
    if notion == "pure-dp":
        return f"ε = {figure('epsilon')} (pure DP)"
    if notion == "approx-dp":
        return f"ε = {figure('epsilon')}, δ = {figure('delta')}"
    if notion == "gdp":
        return f"μ = {figure('mu')} (Gaussian DP)"
    if notion == "non-private":
        return "none (a non-private reference run)"
    return ", ".join(f"{k} = {format_number(v, up=True)}" for k, v in budget.items()
                     if k != "notion" and v is not None) or str(notion)


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

    def up(key: str, source: dict[str, Any] = budget) -> str:
        return format_number(source.get(key), up=True)

    def factor(epsilon: Any) -> str:
        if not isinstance(epsilon, (int, float)) or epsilon >= 700:
            return "an astronomically large number"
        return format_number(math.exp(epsilon), up=True)

    lines = []
    approx = privacy.get("approx_dp") or {}
    if notion == "zcdp":
        lines.append(
            f"ρ-zero-concentrated differential privacy with ρ = {up('rho')}: for two data sets "
            f"that differ by {who}, the Rényi divergence of every order α between the "
            "distributions of this output is at most ρ·α."
        )
    elif notion == "gdp":
        lines.append(
            f"μ-Gaussian differential privacy with μ = {up('mu')}: telling, from this output, "
            f"which of two data sets that differ by {who} it came from is no easier than "
            f"telling a draw of N(0, 1) from a draw of N({up('mu')}, 1)."
        )
    elif notion == "pure-dp":
        lines.append(
            f"ε-differential privacy with ε = {up('epsilon')}: {who} changes the probability "
            f"of any outcome by a factor of at most e^ε = {factor(budget.get('epsilon'))}."
        )
    elif notion == "approx-dp":
        lines.append(
            f"(ε, δ)-differential privacy with ε = {up('epsilon')} and δ = {up('delta')}: "
            f"whatever anyone does with this output, {who} makes any conclusion at most "
            f"e^ε = {factor(budget.get('epsilon'))} times more (or less) likely, except with "
            "probability at most δ."
        )
    elif notion == "non-private":
        lines.append("No privacy guarantee: this is a non-private reference run.")
    if approx and notion in ("zcdp", "gdp"):
        lines.append(
            f"In (ε, δ) form: ε = {up('epsilon', approx)}, δ = {up('delta', approx)}. "
            f"Whatever anyone does with this output, {who} makes any conclusion at most "
            f"e^ε = {factor(approx.get('epsilon'))} times more (or less) likely, except with "
            "probability at most δ."
        )
    if notion != "non-private":
        lines.append(
            "The guarantee holds for every person in the data at once, whatever else an "
            "observer knows; it covers everything released here (the picture, the edge "
            "list and the matrices are computed from the private release only)."
        )
    validity = privacy.get("validity", "")
    reason = privacy.get("reason", "")
    if validity == "valid":
        lines.append("Validity: valid -- a formal differential-privacy guarantee holds.")
    elif validity:
        lines.append(f"Validity: {validity} -- {reason}" if reason else f"Validity: {validity}")
    return lines


def _share_in_words(rate: float) -> str:
    """``0.1`` as "1 in 10", ``0.05`` as "1 in 20"; otherwise as a percentage."""
    inverse = 1.0 / rate
    if abs(inverse - round(inverse)) < 1e-9 * inverse:
        return f"1 in {round(inverse)}"
    return f"{format_number(100 * rate)} in 100"


def _percent(value: float) -> str:
    return f"{format_number(100 * value)} %"


def selection_in_words(inference: dict[str, Any], *, n_edges: int | None = None) -> list[str]:
    """Plain sentences on how the edges were chosen and what their q-values and intervals
    promise, from a result record's ``inference`` entry (``select``, ``fdr``,
    ``fdr_method``, ``confidence_level`` and, for a threshold, ``min_partial_correlation``);
    ``n_edges=0`` for a graph without edges.
    """
    fdr = float(inference.get("fdr", 0.1))
    level = float(inference.get("confidence_level", 0.9))
    method = ("Benjamini–Hochberg" if inference.get("fdr_method", "bh") == "bh"
              else "Benjamini–Yekutieli")
    interval = (f"Each interval is built to cover the true partial correlation with "
                f"{_percent(level)} probability.")
    if inference.get("select") == "threshold":
        cut = inference.get("min_partial_correlation")
        rule = (f" with |partial correlation| at least {format_number(cut)}"
                if isinstance(cut, (int, float)) else "")
        return [
            "No error control was applied: the edges are the graphical lasso's non-zero "
            f"entries{rule} (a fixed threshold), so nothing bounds how many of them are "
            "false.",
            f"Their q-values ({method}) and {_percent(level)} intervals describe each "
            "edge's evidence but did not choose the edges; the intervals are centered on "
            "the de-biased estimate, not on the graphical lasso's partial correlation "
            "shown. " + interval,
        ]
    if inference.get("withheld"):
        decided = inference.get("withheld_by") or (
            "the plan's detectable |partial correlation| at 50 % power is none up to 0.99")
        return [f"No edge is reported. The selection was withheld by a public figure of the "
                f"release's plan, known before the data: {decided}. At this budget and "
                "size no partial correlation can be told from the privacy noise, and there "
                "false-discovery-rate control is not reliable (in our measurements, up to 8 "
                "in 10 of the edges it would select were false). The estimates and "
                "intervals of every pair are kept; a larger budget, more records or fewer "
                "columns would make edges detectable."]
    caution = ([f"Caution: these settings are known to break the inference's calibration "
                f"({inference['calibration_note']}): the q-values and intervals are not "
                "reliable."] if inference.get("calibrated") is False
               and inference.get("calibration_note") else [])
    if n_edges == 0:
        return [f"No pair passed false-discovery-rate control at {format_number(fdr)} "
                f"({method} q-values): the released graph has no edges."] + caution
    return [
        f"The edges were selected by false-discovery-rate control at {format_number(fdr)} "
        f"({method} q-values): of the edges shown, about {_share_in_words(fdr)} may be "
        "false (on average; which ones is not known). " + interval,
    ] + caution


def detectable_in_words(value: float | None, *, private: bool = True,
                        power: float = 0.8, predicted: float | None = None,
                        r2: float = 0.5) -> str:
    """The sentence on what a release can detect, from its ``detectable_`` (the smallest
    ``|partial correlation|`` found with probability ``power``; ``None`` or infinite when
    none up to 0.99 is) and, when given, ``detectable_predicted_`` (the same for an edge
    whose variables the others predict with ``R**2 = r2``). Both are public figures of the
    plan."""
    noise = "noise at this budget and size" if private else "sampling noise at this size"
    if value is None or not math.isfinite(value):
        return (f"No edge can be told from {noise}: even a partial correlation of 0.99 "
                f"would be found less than {_percent(power)} of the time (a figure of the "
                "plan, for roughly normal columns).")
    if predicted is None:
        more = "an edge between variables that the others predict well needs more"
    elif math.isfinite(predicted):
        more = (f"an edge between variables that the others predict with R² "
                f"{format_number(r2)} needs {predicted:.2g}")
    else:
        more = (f"an edge between variables that the others predict with R² "
                f"{format_number(r2)} cannot be told from it at all")
    return (f"Edges weaker than {value:.2g} (|partial correlation|) cannot be told from "
            f"{noise}: they are found less than {_percent(power)} of the time (a figure of "
            f"the plan, for roughly normal columns and a sparse graph; {more}).")


def _bounds_words(bounds: Any, *, private: bool = True) -> str:
    """What the clipping bound was, from the recorded ``bounds`` (whatever fields it has);
    ``private`` is false for a non-private reference run (its ranges are exact)."""
    if not isinstance(bounds, dict):
        return str(bounds)
    kind = bounds.get("kind")
    if kind == "auto" and not private:
        return ("found exactly from the data (a non-private reference run): every column "
                "was clipped to its range and rescaled to [-1, 1]. The ranges are listed "
                "below.")
    if kind == "auto":
        ranges = bounds.get("ranges") if isinstance(bounds.get("ranges"), dict) else {}
        how = []
        if isinstance(ranges.get("width"), (int, float)):
            how.append(f"median ± {format_number(ranges['width'])} median absolute "
                       "deviations")
        if isinstance(ranges.get("quantile"), (int, float)):
            how.append(f"tail share {format_number(ranges['quantile'])} each side")
        method = f" ({'; '.join(how)})" if how else ""
        text = ("chosen privately, with part of the budget above: every column was clipped "
                f"to a range found by private quantiles{method} and rescaled to [-1, 1]")
        inner = bounds.get("rescaled_box")
        if isinstance(inner, dict) and inner.get("kind") == "l2":
            text += (f"; then every record was clipped to Euclidean norm "
                     f"{format_number(inner.get('bound'))}, a bound also chosen privately")
        return text + ". The ranges are listed below."
    data_derived = " (read off the data: no formal guarantee)" if bounds.get("data_derived") else ""
    if kind == "l2":
        return (f"declared: every record clipped to Euclidean norm "
                f"{format_number(bounds.get('bound'))}{data_derived}.")
    if kind == "box":
        bound = bounds.get("bound")
        if isinstance(bound, list):
            return (f"declared: every value clipped to ± its column's bound "
                    f"({_values_text(bound)}){data_derived}.")
        return f"declared: every value clipped to ±{format_number(bound)} per column{data_derived}."
    return _values_text(bounds)


def _label(key: Any) -> str:
    names = {
        "n_samples": "records (n)", "n_features": "variables (p)", "n_edges": "edges",
        "n_iter": "solver iterations", "alpha": "graphical-lasso penalty α",
        "l2_sensitivity": "L2 sensitivity", "sigma": "noise standard deviation σ",
        "mean_sigma": "noise standard deviation σ of the mean",
        "mean_l2_sensitivity": "L2 sensitivity of the mean", "grid": "noise grid step",
        "mean_grid": "noise grid step of the mean", "distribution": "noise distribution",
        "mean_distribution": "noise distribution of the mean",
        "l1_sensitivity": "L1 sensitivity", "mean_l1_sensitivity": "L1 sensitivity of the mean",
        "laplace_scale": "Laplace scale b", "mean_laplace_scale": "Laplace scale b of the mean",
        "epsilons": "ε of each part", "epsilon": "ε", "delta": "δ", "rho": "ρ", "mu": "μ",
        "report_delta": "δ of the (ε, δ) form", "random_state": "randomness",
        "budget": "budget",
    }
    text = str(key)
    return names.get(text, text.replace("_", " "))


def _privacy_key(key: Any) -> bool:
    """Whether values under ``key`` are privacy figures (rounded up when shortened)."""
    text = str(key)
    return text in ("epsilon", "delta", "rho", "mu", "report_delta") or text.startswith(
        ("epsilon", "rho_", "delta_"))


def _values_text(value: Any, key: Any = None, *, up: bool = False) -> str:
    """Plain text of a value (no markup): numbers for people, budgets in symbols."""
    up = up or _privacy_key(key)
    if value is None:
        return "—"
    if isinstance(value, dict):
        if "notion" in value:
            return format_budget(value)
        parts = [f"{_label(k)} {_values_text(v, k, up=up)}" for k, v in value.items()
                 if v is not None]
        return "; ".join(parts) or "—"
    if isinstance(value, (list, tuple)):
        shown = [_values_text(v, up=up) for v in value[:12]]
        more = f", … ({len(value)} values)" if len(value) > 12 else ""
        return ", ".join(shown) + more
    if isinstance(value, (bool, int, float, np.integer, np.floating)):
        return format_number(value, up=up)
    return str(value)


def _values_html(value: Any, key: Any = None, *, up: bool = False) -> str:
    """A value as HTML: a nested list for a mapping, text otherwise."""
    up = up or _privacy_key(key)
    if isinstance(value, dict) and "notion" not in value:
        items = [f"<li>{html.escape(_label(k))}: {_values_html(v, k, up=up)}</li>"
                 for k, v in value.items() if v is not None]
        return f'<ul class="values">{"".join(items)}</ul>' if items else "—"
    return html.escape(_values_text(value, key, up=up))


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
    # ``weight`` repeats the partial correlation (for network software): shown once.
    columns = [c for c in edges.columns if not (c == "weight" and "partial_correlation" in edges)]
    head = "".join(f"<th>{html.escape(str(c).replace('_', ' '))}</th>" for c in columns)
    rows = []
    for row in edges[columns].head(limit).itertuples(index=False):
        cells = []
        for value in row:
            if isinstance(value, (float, np.floating)):
                cells.append(f'<td class="num">{html.escape(format_number(float(value)))}</td>')
            else:
                cells.append(f"<td>{html.escape(str(value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = (f'<p class="note">… and {len(edges) - limit} more (see edges.csv).</p>'
            if len(edges) > limit else "")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>{more}"


def _edge_columns_note(edges: pd.DataFrame) -> str:
    """What each column of edges.csv means (those the file has)."""
    from dpggm.estimators.edges import EDGE_COLUMNS

    items = "".join(f"<li><code>{html.escape(c)}</code>: {html.escape(EDGE_COLUMNS[c])}</li>"
                    for c in edges.columns if c in EDGE_COLUMNS)
    if not items:
        return ""
    return ("<details><summary class='note'>The columns of <code>edges.csv</code> (one row "
            f"per edge, the strongest evidence first)</summary><ul>{items}</ul></details>")


#: The edge-list columns of edge inference (an edge list without them has none).
_INTERVAL_COLUMNS = ("ci_low", "ci_high", "q_value")


def _has_intervals(edges: pd.DataFrame | None) -> bool:
    return edges is not None and set(_INTERVAL_COLUMNS) <= set(edges.columns)


def _probability(value: Any) -> str:
    """A p- or q-value: two significant digits (``4.2 × 10⁻⁴⁸``)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return ""
    if not math.isfinite(number):
        return ""
    return "0" if number == 0 else _scientific(_plain(f"{number:.2g}"))


def _correlation(value: Any) -> str:
    number = float(value)
    return "" if not math.isfinite(number) else f"{number:.3f}".replace("-", "−")


_EVIDENCE_WORDS = {"strong": "strong", "near": "near the cut", "beyond": "above the cut"}


def _interval_edge_rows(edges: pd.DataFrame, inference: dict[str, Any],
                        limit: int = 200) -> str:
    """The edge table with intervals and q-values (an edge list from edge inference)."""
    level = f"{format_number(100 * float(inference.get('confidence_level', 0.9)))} %"
    fdr = float(inference.get("fdr", 0.1))
    head = ("<tr><th>source</th><th>target</th><th>partial correlation</th>"
            f"<th>{html.escape(level)} interval</th><th>q-value</th><th>p-value</th>"
            "<th>evidence</th></tr>")
    rows = []
    for row in edges.head(limit).itertuples(index=False):
        kind = edge_evidence(float(row.q_value), fdr)
        cells = [
            f"<td>{html.escape(str(row.source))}</td>",
            f"<td>{html.escape(str(row.target))}</td>",
            f'<td class="num">{_correlation(row.partial_correlation)}</td>',
            f'<td class="num">[{_correlation(row.ci_low)}, {_correlation(row.ci_high)}]</td>',
            f'<td class="num">{html.escape(_probability(row.q_value))}</td>',
            f'<td class="num">{html.escape(_probability(getattr(row, "p_value", "")))}</td>',
            f"<td>{_EVIDENCE_WORDS.get(kind or '', '')}</td>",
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = (f'<p class="note">… and {len(edges) - limit} more (see edges.csv).</p>'
            if len(edges) > limit else "")
    return f"<table>{head}{''.join(rows)}</table>{more}"


def _evidence_caption(edges: pd.DataFrame, fdr: float) -> str:
    """What the line styles of the pictures mean, for the styles present."""
    kinds = {edge_evidence(float(q), fdr) for q in edges["q_value"]} - {None}
    strong, cut = format_number(STRONG_SHARE * fdr), format_number(fdr)
    words = {"strong": f"solid when q < {strong} (strong evidence)",
             "near": f"dashed when {strong} ≤ q ≤ {cut} (near the cut)",
             "beyond": f"dotted when q > {cut} (no evidence at the cut)"}
    parts = [words[kind] for kind in EVIDENCE_STYLES if kind in kinds]
    return f"A line is {', '.join(parts)}." if parts else ""


def _inference_summary(record: dict[str, Any], edges: pd.DataFrame | None,
                       private: bool) -> str | None:
    """The boxed sentences under the title: how the edges were chosen, what an FDR
    means, and what the release can detect."""
    inference = record.get("inference")
    if not isinstance(inference, dict):
        if record.get("command") == "graph" and record.get("method") == "pace":
            return ('<div class="summary"><p>These edges are PACE-GGM\'s measured pattern: '
                    "they carry no measure of confidence (its adaptive, unevenly noisy "
                    "measurements are not what the edge inference describes).</p></div>")
        return None
    lines = selection_in_words(inference, n_edges=None if edges is None else len(edges))
    detectable = inference.get("detectable")
    if isinstance(detectable, dict):
        predicted = inference.get("detectable_predicted")
        lines.append(detectable_in_words(
            detectable.get("partial_correlation"), private=private,
            power=float(detectable.get("power", 0.8)),
            predicted=(None if not isinstance(predicted, dict) else
                       (predicted.get("partial_correlation") if predicted.get(
                           "partial_correlation") is not None else math.inf)),
            r2=float(predicted.get("r2", 0.5)) if isinstance(predicted, dict) else 0.5))
        if detectable.get("nothing_detectable") and edges is not None and len(edges):
            # Measured (docs/inference.md, "Where nothing can be detected"): a threshold
            # graph there is mostly noise; an FDR selection there (withheld only where
            # even odds are out of reach) kept its error rate but finds few real edges.
            if inference.get("select") == "threshold":
                lines.append("Caution: at this budget and size no edge can be told from "
                             "noise reliably, and these edges were chosen without error "
                             "control: treat them as noise.")
            else:
                lines.append("Caution: at this budget and size even the strongest edges "
                             "are found less than 80 % of the time: the edges shown keep "
                             "the error control above, but most real ones are missing.")
    if isinstance(inference.get("unreliable"), str):
        lines.append("Caution: " + inference["unreliable"] + ".")
    body = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return f'<div class="summary">{body}</div>'


def _forest_figure(record: dict[str, Any], edges: pd.DataFrame | None,
                   names: list[str]) -> str | None:
    """The forest plot of the edges' intervals, with its caption."""
    inference = record.get("inference")
    if not (_has_intervals(edges) and isinstance(inference, dict)) or edges.empty:
        return None
    fdr = float(inference.get("fdr", 0.1))
    level = float(inference.get("confidence_level", 0.9))
    detectable = (inference.get("detectable") or {}).get("partial_correlation")
    svg = inline_svg(forest_plot(
        edges, names, confidence_level=level, fdr=fdr,
        detectable=detectable if isinstance(detectable, (int, float)) else None, fmt="svg"))
    shown = (f"The {FOREST_LIMIT} edges with the strongest evidence are drawn; the table "
             "below and edges.csv have every one. " if len(edges) > FOREST_LIMIT else "")
    point = ("the graphical lasso's partial correlation (the interval is centered on the "
             "de-biased estimate)" if inference.get("select") == "threshold"
             else "the de-biased partial correlation (corrected for the rows shrunk onto "
                   "their bound)")
    caption = (
        f"The edges' {format_number(100 * level)} % intervals, sorted by partial "
        f"correlation; the dot is {point}, blue when positive, red when negative; the "
        f"q-value is on the right. {_evidence_caption(edges, fdr)} {shown}"
        "The grey band holds the partial correlations this release cannot tell from noise. "
        "The intervals are per pair, not widened for the selection: among the edges "
        "selected because they looked strongest, a few more may miss, and a selected "
        "edge's interval may touch zero (the selection is adjusted for every pair tested, "
        "the interval is not)."
    )
    return (f'<figure role="img" aria-label="intervals of the edges">{svg}'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _table(rows: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _parameter_rows(record: dict[str, Any]) -> str:
    """Everything in the record not shown elsewhere, as a readable table."""
    skip = {"privacy", "features", "diagnostics", "parameters", "title", "command", "picture"}
    rows = [(_label(k), _values_html(v, k)) for k, v in record.items()
            if k not in skip and v is not None]
    parameters = record.get("parameters")
    if isinstance(parameters, dict):
        rows += [(_label(k), _values_html(v, k)) for k, v in parameters.items()
                 if v is not None and k not in record]
    privacy = record.get("privacy")
    if isinstance(privacy, dict):
        if privacy.get("mechanism"):
            rows.append(("mechanism", html.escape(str(privacy["mechanism"]))))
        noise = {k: v for k, v in (privacy.get("noise") or {}).items() if k != "breakdown"}
        if noise:
            rows.append(("noise", _values_html(noise)))
        for key in ("notes", "random_state"):
            if privacy.get(key):
                rows.append((_label(key), _values_html(privacy[key], key)))
    return _table(rows)


def _budget_rows(privacy: dict[str, Any]) -> str:
    breakdown = (privacy.get("noise") or {}).get("breakdown") or []
    total = privacy.get("budget") or {}
    head = ("<tr><th>step</th><th>mechanism</th><th>budget</th><th>share of the total</th>"
            "<th>details</th></tr>")
    rows = []
    for step in breakdown:
        budget = step.get("budget") or {}
        share = ""
        # Shares of an additive parameter: rho under zCDP, epsilon under pure DP.
        key = {"zcdp": "rho", "pure-dp": "epsilon"}.get(str(total.get("notion")))
        if (key is not None and budget.get("notion") == total.get("notion")
                and isinstance(total.get(key), (int, float)) and total[key] > 0
                and isinstance(budget.get(key), (int, float))):
            share = f"{100 * budget[key] / total[key]:.3g} %"
        details = {k: v for k, v in step.items()
                   if k not in ("step", "mechanism", "budget") and v is not None}
        rows.append(
            f"<tr><td>{html.escape(str(step.get('step', '')))}</td>"
            f"<td>{html.escape(str(step.get('mechanism', '')))}</td>"
            f"<td>{html.escape(format_budget(budget))}</td>"
            f'<td class="num">{share}</td><td>{_values_html(details)}</td></tr>'
        )
    rows.append(f"<tr><th>total</th><td></td><th>{html.escape(format_budget(total))}</th>"
                f'<td class="num">{"100 %" if breakdown else ""}</td><td></td></tr>')
    return f"<table>{head}{''.join(rows)}</table>"


def _range_rows(bounds: Any, names: list[str]) -> str | None:
    ranges = bounds.get("ranges") if isinstance(bounds, dict) else None
    if not isinstance(ranges, dict):
        return None
    lower, upper = ranges.get("lower"), ranges.get("upper")
    if not (isinstance(lower, list) and isinstance(upper, list)
            and len(lower) == len(upper) == len(names)):
        return None
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td class='num'>{html.escape(format_number(a))}</td>"
        f"<td class='num'>{html.escape(format_number(b))}</td></tr>"
        for name, a, b in zip(names, lower, upper))
    return f"<table><tr><th>variable</th><th>lower</th><th>upper</th></tr>{rows}</table>"


def picture_settings(record: dict[str, Any], *, layout: str | None = None,
                     groups: Any = None) -> tuple[str, Any]:
    """The graph's layout and declared groups: those given, else those the result record
    keeps under ``picture`` (``dpggm graph --layout/--groups``), else ``"spring"`` and
    none."""
    kept = record.get("picture") if isinstance(record.get("picture"), dict) else {}
    chosen = layout if layout is not None else kept.get("layout") or "spring"
    if groups is None and isinstance(kept.get("groups"), dict):
        groups = kept["groups"]
    return str(chosen), groups


_LAYOUT_WORDS = {
    "spring": ("The variables are placed by a force-directed layout of the released edges, "
               "so that joined variables sit close together and distances between unjoined "
               "ones mean nothing; separate parts of the graph are set side by side, and "
               "variables without an edge in rows below them. The layout is computed from "
               "the edges alone, the same for the same edges."),
    "circle": ("The variables sit on a circle in the order of the data's columns, the first "
               "at the top."),
    "groups": ("The variables are placed in one cluster per declared group (each laid out "
               "from its edges, joined variables close together), the clusters around a "
               "circle."),
}


def _picture_parts(edges: pd.DataFrame | None, precision: np.ndarray | None,
                   names: list[str], *, fdr: float, layout: str,
                   groups: Any) -> tuple[str | None, str | None]:
    """The graph's and the heatmap's figures with their captions; a large graph is drawn
    by its strongest edges and a large matrix in blocks, and the captions say so."""
    graph = heatmap = None
    if edges is not None and {"source", "target"} <= set(edges.columns):
        every = names or sorted(set(edges.source) | set(edges.target))
        svg = inline_svg(draw_graph(edges, every, fdr=fdr, layout=layout, groups=groups,
                                    fmt="svg"))
        shown, drawn_names = shown_graph(edges, every)
        part = ""
        if len(shown) < len(edges) or len(drawn_names) < len(every):
            which = (f"the {len(drawn_names)} variables they join" if len(drawn_names) < len(every)
                     else f"all {len(every)} variables")
            part = (f" This graph is too large to draw whole ({len(every)} variables, "
                    f"{len(edges)} edges): the picture shows the {len(shown)} edges with the "
                    f"strongest evidence and {which}; the table below and edges.csv have "
                    "every edge.")
        styles = _evidence_caption(edges, fdr) if _has_intervals(edges) else ""
        grouped = (" A node's colour is its declared group (the legend under the picture)."
                   if groups is not None else "")
        caption = ("The graph: an edge joins two variables that are dependent given all the "
                   "others; its width grows with the partial correlation, blue when positive, "
                   f"red when negative. {styles} {_LAYOUT_WORDS[layout]}{grouped}{part}")
        graph = (f'<figure class="wide" role="img" aria-label="the released graph">{svg}'
                 f"<figcaption>{html.escape(' '.join(caption.split()))}</figcaption></figure>")
    if precision is not None:
        svg = inline_svg(precision_heatmap(precision, names, fmt="svg"))
        p = precision.shape[0]
        block = -(-p // HEATMAP_CELLS)
        blocks = (f" With {p} variables the matrix is shown in blocks of {block} × {block} "
                  "variables, each cell the block's partial correlation of largest "
                  "magnitude (with its sign), so that no strong entry is lost; "
                  "precision.npy has every entry." if block > 1 else "")
        caption = ("Partial correlations (off the diagonal of the normalised precision "
                   f"matrix).{blocks}")
        heatmap = (f'<figure role="img" aria-label="precision matrix heatmap">{svg}'
                   f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    return graph, heatmap


def _read_edges(directory: Path) -> pd.DataFrame | None:
    if not (directory / "edges.csv").exists():
        return None
    edges = pd.read_csv(directory / "edges.csv", dtype={"source": str, "target": str},
                        keep_default_na=False)
    # The names as fitted (edges.csv quotes a name a spreadsheet would read as a formula:
    # dpggm.io.csv_name).
    for column in ("source", "target"):
        if column in edges:
            edges[column] = [name_from_csv(v) for v in edges[column]]
    return edges


def picture_files(directory: Path | str, *, layout: str | None = None, groups: Any = None,
                  formats: tuple[str, ...] = FORMATS) -> dict[str, bytes | str]:
    """The pictures of a result directory, as files to write beside it: ``graph`` (from
    edges.csv), ``intervals`` (the edges' intervals, when edges.csv has them) and
    ``precision`` (the heatmap of precision.npy), each in ``formats`` (PNG at 300 dpi, SVG,
    PDF): ``{"graph.png": bytes, "graph.svg": str, ...}``. ``layout`` and ``groups`` as in
    :func:`build_report`.
    """
    directory = Path(directory)
    record, _ = load_result(directory)
    precision = _read_precision(directory)
    names = _features(record, precision)
    edges = _read_edges(directory)
    layout, groups = picture_settings(record, layout=layout, groups=groups)
    inference = record.get("inference") if isinstance(record.get("inference"), dict) else {}
    fdr = float(inference.get("fdr", 0.1))
    drawings = {}
    if edges is not None and {"source", "target"} <= set(edges.columns):
        every = names or sorted(set(edges.source) | set(edges.target))
        drawings["graph"] = draw_graph(edges, every, title=str(record.get("title") or ""),
                                       fdr=fdr, layout=layout, groups=groups, fmt=formats)
        if _has_intervals(edges) and inference and not edges.empty:
            detectable = (inference.get("detectable") or {}).get("partial_correlation")
            drawings["intervals"] = forest_plot(
                edges, every, confidence_level=float(inference.get("confidence_level", 0.9)),
                fdr=fdr, detectable=detectable if isinstance(detectable, (int, float)) else None,
                fmt=formats)
    if precision is not None:
        drawings["precision"] = precision_heatmap(precision, names, fmt=formats)
    return {f"{stem}.{fmt}": content for stem, drawing in drawings.items()
            for fmt, content in drawing.items()}


def build_report(directory: Path | str, *, name: str | None = None,
                 layout: str | None = None, groups: Any = None) -> str:
    """The HTML text of a self-contained report of ``directory`` (shown as ``name``,
    default its directory name).

    ``layout`` (``"spring"``, ``"circle"`` or ``"groups"``) and ``groups`` (``name ->
    group``) place the graph's variables (:func:`dpggm.report.layout.graph_layout`);
    by default those ``dpggm graph`` recorded, else ``"spring"`` without groups. A graph
    too large to draw whole is drawn by its strongest edges and a large precision matrix
    in blocks; the report says so, and its size stays bounded (a few MB at p = 3 000).

    Raises
    ------
    FileNotFoundError
        ``directory`` is not a ``graph``, ``estimate`` or ``recover`` output.
    """
    directory = Path(directory)
    record, source = load_result(directory)
    precision = _read_precision(directory)
    names = _features(record, precision)
    edges = _read_edges(directory)
    privacy = record.get("privacy", {})
    if not isinstance(privacy, dict):
        privacy = {}
    title = record.get("title") or f"dpggm {record.get('command', record.get('method', 'result'))}"
    inference = record.get("inference") if isinstance(record.get("inference"), dict) else {}
    fdr = float(inference.get("fdr", 0.1))
    layout, groups = picture_settings(record, layout=layout, groups=groups)
    graph, heatmap = _picture_parts(edges, precision, names, fdr=fdr, layout=layout,
                                    groups=groups)
    validity = privacy.get("validity") or "none"
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
    private = (privacy.get("budget") or {}).get("notion") != "non-private"
    summary = _inference_summary(record, edges, private)
    if summary is not None:
        parts.append(summary)
    if graph is not None or heatmap is not None:
        parts.append("<h2>Picture</h2>")
    forest = _forest_figure(record, edges, names)
    parts += [figure for figure in (graph, forest, heatmap) if figure is not None]
    parts.append("<h2>Privacy guarantee</h2><ul>")
    parts += [f"<li>{html.escape(line)}</li>" for line in guarantee_in_words(privacy)]
    if "bounds" in privacy:
        words = _bounds_words(privacy["bounds"], private=private)
        parts.append(f"<li>Bounds: {html.escape(words)}</li>")
    parts.append("</ul>")
    if (privacy.get("noise") or {}).get("breakdown"):
        parts.append("<h3>How the budget was spent</h3>" + _budget_rows(privacy))
    ranges = _range_rows(privacy.get("bounds"), names)
    if ranges is not None:
        parts.append(f"<h3>Column ranges{' (chosen privately)' if private else ''}</h3>"
                     "<p class='note'>Values outside a range were clipped to it"
                     f"{' before the noise was added' if private else ''}.</p>" + ranges)
    parts.append("<h2>Edges</h2>")
    if edges is None:
        parts.append('<p class="note">No edge list in this directory.</p>')
    elif edges.empty:
        parts.append("<p>The released graph has no edges.</p>")
    elif _has_intervals(edges) and inference:
        parts.append(_interval_edge_rows(edges, inference) + _edge_columns_note(edges))
    else:
        parts.append(_edge_rows(edges) + _edge_columns_note(edges))
    diagnostics = dict(record.get("diagnostics") or {})
    if edges is not None and names:
        p = len(names)
        diagnostics.setdefault("edges", f"{len(edges)} of {p * (p - 1) // 2} possible")
    if diagnostics:
        rows = [(_label(k), _values_html(v, k)) for k, v in diagnostics.items()
                if v is not None]
        parts.append("<h2>Diagnostics</h2><p class='note'>Computed from the release only "
                     f"(public).</p>{_table(rows)}")
    parts.append("<h2>Parameters</h2>" + _parameter_rows(record))
    parts.append("</body></html>")
    return "\n".join(parts)
