"""``dpggm report`` and the HTML report, checked in headless Chromium."""

from __future__ import annotations

import html
import html as html_module
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import PrivateGraph
from dpggm.cli.graph import stage_graph_outputs
from dpggm.cli.main import app
from dpggm.datasets import make_chain, make_raw_chain
from dpggm.io import StagedOutput
from dpggm.privacy.budgets import ZCDP
from dpggm.report import build_report, guarantee_in_words

runner = CliRunner()

WIDTH, HEIGHT = 1200, 1600
SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory):
    frame, _ = make_raw_chain(n_samples=5000, n_features=8, random_state=0)
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)
    out = tmp_path_factory.mktemp("report") / "g"
    staged = StagedOutput(out)
    stage_graph_outputs(graph, staged, data_name="raw.csv", name=out.name)
    staged.commit()
    return out


def test_guarantee_in_words_states_what_rho_means():
    words = " ".join(guarantee_in_words({
        "budget": {"notion": "zcdp", "rho": 0.5},
        "approx_dp": {"notion": "approx-dp", "epsilon": 5.2, "delta": 1e-6},
        "neighbors": "add-remove", "validity": "valid", "reason": "",
    }))
    assert "ρ = 0.5" in words and "adding or removing one person's record" in words
    assert "ε = 5.2" in words and "δ = 10⁻⁶" in words and "valid" in words
    invalid = " ".join(guarantee_in_words({
        "budget": {"notion": "pure-dp", "epsilon": 1.0}, "neighbors": "replace",
        "validity": "invalid", "reason": "the proof is wrong",
    }))
    assert "e^ε = 2.719" in invalid and "invalid -- the proof is wrong" in invalid


def test_report_of_graph_output_is_self_contained(graph_dir):
    html = build_report(graph_dir)
    assert html.startswith("<!DOCTYPE html>")
    # The pictures are inline SVG (labels kept as text): the graph, the edges' intervals
    # and the heatmap; nothing refers outside the file.
    assert html.count("<svg") == 3 and "<img " not in html
    for remote in ("https://", "<script", "<link", "xlink:href=\"http", "src=\"http"):
        assert remote not in html
    assert "How the budget was spent" in html and "bounds" in html and "second moment" in html
    assert "x0" in html and "<th>partial correlation</th>" in html


def test_report_of_estimate_and_recover_outputs(tmp_path):
    data = make_chain(n_samples=2000, n_features=6, random_state=1)
    csv = tmp_path / "d.csv"
    pd.DataFrame(data.X / 4, columns=[f"v{j}" for j in range(6)]).to_csv(csv, index=False)
    est = tmp_path / "est"
    result = runner.invoke(app, ["estimate", str(csv), "--method", "glasso", "--rho", "1",
                                 "--bound", "l2:2", "--alpha", "auto", "--seed", "0",
                                 "--out", str(est)])
    assert result.exit_code == 0, result.output
    written = runner.invoke(app, ["report", str(est)])
    assert written.exit_code == 0, written.output
    html = (est / "report.html").read_text()
    assert html.count("<svg") == 2  # drawn from edges.csv and precision.npy
    assert "v0" in html and "ρ = 1" in html
    # The directory's own report is rebuilt in place (it is derived from the files there).
    again = runner.invoke(app, ["report", str(est)])
    assert again.exit_code == 0, again.output

    noisy = tmp_path / "noisy.csv"
    assert runner.invoke(app, ["publish", str(csv), "--out", str(noisy), "--bound", "l2:2",
                               "--sigma", "0.1", "--seed", "0"]).exit_code == 0
    rec = tmp_path / "rec"
    assert runner.invoke(app, ["recover", str(noisy), "--alpha", "0.05",
                               "--out", str(rec)]).exit_code == 0
    html = build_report(rec)
    # Exact noise: the release states rho-zCDP (mu-GDP is claimed only for float noise).
    assert "ρ = " in html and html.count("<svg") == 2
    edges = pd.read_csv(rec / "edges.csv")
    assert list(edges.columns) == ["source", "target", "weight", "partial_correlation"]


def test_report_refuses_a_directory_without_result(tmp_path):
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "result.json" in result.output


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path is not None, (
        "headless Chromium is needed for this test: apt-get install -y chromium "
        "(.ci/run installs it)"
    )
    return path


def test_report_renders_in_headless_chromium(graph_dir, tmp_path):
    from matplotlib.image import imread

    shot = tmp_path / "report.png"
    completed = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
         f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}",
         (graph_dir / "report.html").as_uri()],
        capture_output=True, text=True, timeout=180,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    image = imread(shot)
    assert image.shape[:2] == (HEIGHT, WIDTH)
    grey = image[..., :3].mean(axis=2)
    # The picture sits below the title: rows 150-900, left half. A blank (white) or
    # missing image would leave it flat; the drawing has dark nodes, labels and edges.
    picture = grey[150:900, 40:600]
    assert picture.std() > 0.05
    assert (picture < 0.5).mean() > 0.002
    # The page also has text further down (the guarantee), so the render is complete.
    assert grey[900:HEIGHT].std() > 0.02
    assert np.isclose(grey[:, -20:].mean(), 1.0, atol=0.02)  # white margin: no overflow


# A 30-column data set with Cyrillic, Greek, CJK and Latin names, as a third party's
# table would have.
UNICODE_NAMES = [
    "температура", "давление", "пульс", "вес", "рост", "возраст",
    "άλφα", "βήτα", "γάμμα", "δέλτα", "έψιλον", "ζήτα",
    "血压", "体重", "身高", "年龄", "血糖", "胆固醇",
    "cholesterol_total_mg", "glucose", "systolic", "diastolic", "bmi", "age_years",
    "körpergröße", "ñandú", "straße", "x27", "a_rather_long_column_name_indeed", "x29",
]


@pytest.fixture(scope="module")
def unicode_dir(tmp_path_factory):
    frame, _ = make_raw_chain(n_samples=3000, n_features=30, random_state=1)
    frame.columns = UNICODE_NAMES
    folder = tmp_path_factory.mktemp("unicode")
    frame.to_csv(folder / "survey.csv", index=False)
    done = subprocess.run(
        [sys.executable, "-m", "dpggm", "graph", "survey.csv", "--rho", "0.5", "--out", "g"],
        cwd=folder, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert done.returncode == 0, done.stderr
    return folder / "g", done.stderr


def _visible_text(page: str) -> str:
    """The report's text as a reader sees it (pictures and markup left out)."""
    page = re.sub(r"(?s)<svg.*?</svg>", " ", page)
    page = re.sub(r"(?s)<style>.*?</style>", " ", page)
    return html_module.unescape(re.sub(r"<[^>]+>", " ", page))


def test_report_text_has_no_none_no_raw_json_and_no_float_noise(unicode_dir):
    page = (unicode_dir[0] / "report.html").read_text(encoding="utf-8")
    text = _visible_text(page)
    assert "None" not in text and "null" not in text
    assert "{" not in text and '"notion"' not in text and "'rho'" not in text
    # No float noise such as 9.374999999999999e-07 or 0.024999999999999998.
    assert not re.search(r"\d\.?\d{9,}", text), re.search(r".{40}\d\.?\d{9,}.{10}", text)
    assert "ρ = 0.5 (zero-concentrated DP)" in text and "share of the total" in text
    assert "Column ranges" in text and "температура" in text


def test_report_pictures_keep_every_unicode_label_as_text(unicode_dir):
    page = (unicode_dir[0] / "report.html").read_text(encoding="utf-8")
    graph_svg = re.search(r"(?s)<svg.*?</svg>", page).group(0)
    labels = set(re.findall(r"<text[^>]*>([^<]*)</text>", graph_svg))
    for name in UNICODE_NAMES:
        shown = name if len(name) <= 24 else name[:23] + "…"
        assert shown in labels, name
    assert "sans-serif" in graph_svg  # the reader's fonts come after matplotlib's


def test_graph_writes_nothing_from_matplotlib_on_stderr(unicode_dir):
    out, stderr = unicode_dir
    for word in ("Glyph", "missing from font", "matplotlib", "findfont", "UserWarning", ".py:"):
        assert word not in stderr, stderr
    assert all(line.startswith("curator only") or line.startswith("  ") or not line.strip()
               or line.startswith("(") or line[0].islower()
               for line in stderr.splitlines()), stderr
    from matplotlib.image import imread

    graph = imread(out / "graph.png")
    assert graph.shape[1] >= 1200  # labels at 12 pt are ~25 px high in the file


def test_png_labels_no_font_can_draw_become_column_numbers(monkeypatch):
    from dpggm.report import plots

    monkeypatch.setattr(plots, "_installed_fonts", lambda: ())
    labels, families = plots._labels(["a", "血压", "βήτα"], "png")
    assert labels == ["a", "#2", "βήτα"] and families == ["DejaVu Sans"]
    svg_labels, _ = plots._labels(["a", "血压"], "svg")
    assert svg_labels == ["a", "血压"]  # the browser draws it
    edges = pd.DataFrame({"source": ["a"], "target": ["血压"], "partial_correlation": [0.4]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        png = plots.draw_graph(edges, ["a", "血压", "βήτα"], fmt="png")
        svg = plots.draw_graph(edges, ["a", "血压", "βήτα"], fmt="svg")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and ">血压<" in svg


@pytest.mark.parametrize("value, up, expected", [
    (0.0234375, True, "0.0234375"),
    (9.374999999999999e-07, True, "9.375 × 10⁻⁷"),
    (1e-06, True, "10⁻⁶"),
    (5.22153444453017, True, "5.222"),
    (7.766216625311721, True, "7.767"),
    (7.766216625311721, False, "7.766"),
    (0.024999999999999998, True, "0.025"),
    (1.0, True, "1"),
    (20000, False, "20000"),
    (1234567.0, False, "1234567"),
    (12345678.9, False, "1.235 × 10⁷"),
    (0.000123456789, True, "0.0001235"),
    (1.23456789e-5, True, "1.235 × 10⁻⁵"),
    (float("inf"), True, "∞"),
    (True, False, "yes"),
])
def test_numbers_are_written_for_people(value, up, expected):
    from dpggm.report.html import format_number

    assert format_number(value, up=up) == expected


def test_shortened_privacy_figures_are_never_rounded_down():
    from decimal import Decimal

    from dpggm.report.html import format_number

    rng = np.random.default_rng(0)
    digits = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")

    def parse(text):
        if " × 10" in text:
            mantissa, power = text.split(" × 10")
            return Decimal(mantissa).scaleb(int(power.translate(digits)))
        if text.startswith("10") and text[2:3] in set("⁻⁰¹²³⁴⁵⁶⁷⁸⁹"):
            return Decimal(1).scaleb(int(text[2:].translate(digits)))
        return Decimal(text)

    for value in 10.0 ** rng.uniform(-9, 8, size=3000):
        text = format_number(float(value), up=True)
        shown = parse(text)
        assert shown >= Decimal(float(value)), (value, text)
        assert shown <= Decimal(float(value)) * Decimal("1.002"), (value, text)


def test_budgets_are_written_in_symbols():
    from dpggm.report.html import format_budget

    assert format_budget({"notion": "zcdp", "rho": 0.0234375}) == (
        "ρ = 0.0234375 (zero-concentrated DP)")
    assert format_budget({"notion": "pure-dp", "epsilon": 1.0}) == "ε = 1 (pure DP)"
    assert format_budget({"notion": "approx-dp", "epsilon": 1.0,
                          "delta": 9.374999999999999e-07}) == "ε = 1, δ = 9.375 × 10⁻⁷"
    assert format_budget({"notion": "gdp", "mu": 0.5}) == "μ = 0.5 (Gaussian DP)"


def test_pure_dp_is_not_restated_at_a_positive_delta():
    from dpggm.privacy.budgets import PureDP
    from dpggm.privacy.guarantee import PrivacyGuarantee

    pure = PrivacyGuarantee(budget=PureDP(1.0), neighbors="replace", bounds={},
                            mechanism="laplace")
    assert pure.summary() == "laplace: PureDP(epsilon=1), replace neighbours"
    words = " ".join(guarantee_in_words(pure.to_dict()))
    assert "δ" not in words and "e^ε = 2.719" in words  # e = 2.71828...: rounded up
    zcdp = PrivacyGuarantee(budget=ZCDP(1.0), neighbors="replace", bounds={},
                            mechanism="gaussian")
    # epsilon = 7.7662...: four digits, rounded up.
    assert "~ (epsilon=7.767, delta=1e-06)" in zcdp.summary()


def test_approx_dp_guarantee_in_words():
    words = " ".join(guarantee_in_words({
        "budget": {"notion": "approx-dp", "epsilon": 1.0, "delta": 1e-6},
        "approx_dp": {"notion": "approx-dp", "epsilon": 1.0, "delta": 1e-6},
        "neighbors": "replace", "validity": "valid", "reason": "",
    }))
    assert "(ε, δ)-differential privacy with ε = 1 and δ = 10⁻⁶" in words
    assert words.count("ε = 1") == 1  # stated once, not again "in (ε, δ) form"


def test_unicode_report_renders_readably_in_headless_chromium(unicode_dir, tmp_path):
    from matplotlib.image import imread

    width, height = 1280, 1400
    shot = tmp_path / "report.png"
    completed = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
         f"--window-size={width},{height}", f"--screenshot={shot}",
         (unicode_dir[0] / "report.html").as_uri()],
        capture_output=True, text=True, timeout=180,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    grey = imread(shot)[..., :3].mean(axis=2)
    # The graph spans most of the page's text column (about 880 of 1280 pixels), so its
    # labels are drawn at about 14 pixels, not squeezed into a thumbnail.
    rows = grey[200:1300]
    dark_columns = np.where((rows < 0.5).any(axis=0))[0]
    assert dark_columns.min() < 250 and dark_columns.max() > 850, (
        dark_columns.min(), dark_columns.max())


# -- the report of edge inference: intervals, q-values, what an FDR means, what a budget
# -- detects -----------------------------------------------------------------------------


def _staged_report(graph, folder: Path, name: str = "g") -> Path:
    out = folder / name
    staged = StagedOutput(out)
    stage_graph_outputs(graph, staged, data_name="raw.csv", name=out.name)
    staged.commit()
    return out


@pytest.fixture(scope="module")
def interval_dir(tmp_path_factory):
    """A 12-variable chain whose edges mix strong evidence and evidence near the cut."""
    frame, _ = make_raw_chain(n_samples=2000, n_features=12, random_state=0)
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=2).fit(frame)
    q = graph.edges_["q_value"]
    assert (q < 0.01).sum() >= 5 and ((q >= 0.01) & (q <= 0.1)).sum() >= 2
    return _staged_report(graph, tmp_path_factory.mktemp("intervals")), graph


def test_edge_list_keeps_its_four_columns_first_and_gains_the_intervals(interval_dir):
    out, graph = interval_dir
    edges = pd.read_csv(out / "edges.csv")
    assert list(edges.columns) == ["source", "target", "weight", "partial_correlation",
                                   "ci_low", "ci_high", "p_value", "q_value"]
    assert len(edges) == len(graph.edges_) and (edges["q_value"] <= 0.1).all()
    assert (out / "intervals.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_states_the_runs_fdr_level_and_detectable_threshold(interval_dir, tmp_path):
    out, graph = interval_dir
    text = " ".join(_visible_text((out / "report.html").read_text(encoding="utf-8")).split())
    assert ("false-discovery-rate control at 0.1 (Benjamini–Hochberg q-values): of the "
            "edges shown, about 1 in 10 may be false") in text
    assert "cover the true partial correlation with 90 % probability" in text
    assert (f"Edges weaker than {graph.detectable_:.2g} (|partial correlation|) cannot be "
            "told from noise at this budget and size") in text
    # The edge table: every edge with its interval and q-value, strongest evidence first.
    first = graph.edges_.iloc[0]
    assert "90 % interval" in text and "q-value" in text and "near the cut" in text
    assert f"[{first.ci_low:.3f}, {first.ci_high:.3f}]".replace("-", "−") in text
    assert "solid when q < 0.01 (strong evidence), dashed when 0.01 ≤ q ≤ 0.1" in text

    # Another FDR and level are stated as they were run.
    frame, _ = make_raw_chain(n_samples=2000, n_features=12, random_state=0)
    other = PrivateGraph(budget=ZCDP(1.0), random_state=2, fdr=0.05,
                         confidence_level=0.8).fit(frame)
    page = " ".join(_visible_text(build_report(_staged_report(other, tmp_path))).split())
    assert "control at 0.05" in page and "about 1 in 20 may be false" in page
    assert "with 80 % probability" in page and "80 % interval" in page
    assert "about 1 in 10" not in page


def test_report_of_a_threshold_graph_says_no_error_control(tmp_path):
    frame, _ = make_raw_chain(n_samples=2000, n_features=12, random_state=0)
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=2, select="threshold").fit(frame)
    out = _staged_report(graph, tmp_path)
    record = json.loads((out / "result.json").read_text())["inference"]
    assert record["select"] == "threshold"
    assert record["min_partial_correlation"] == graph.min_partial_correlation_
    text = " ".join(_visible_text(build_report(out)).split())
    assert "No error control was applied" in text and "may be false" not in text
    assert "centered on the de-biased estimate" in text


def test_an_empty_graph_is_explained_by_a_number(tmp_path):
    frame, _ = make_raw_chain(n_samples=3000, n_features=20, random_state=0)
    data = tmp_path / "raw.csv"
    frame.to_csv(data, index=False)
    done = subprocess.run(
        [sys.executable, "-m", "dpggm", "graph", str(data), "--rho", "0.008", "--seed", "1",
         "--out", str(tmp_path / "g"), "--quiet"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": SRC})
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "g" / "result.json").read_text())
    assert record["n_edges"] == 0
    detectable = record["inference"]["detectable"]
    stderr = " ".join(done.stderr.split())
    text = " ".join(_visible_text((tmp_path / "g" / "report.html").read_text()).split())
    assert "the graph is EMPTY" in stderr
    if record["inference"].get("withheld"):
        # Where the plan cannot reach even odds the selection is withheld, and both say so
        # and which public figure decided it.
        assert "No edge is reported" in text and "not reliable" in stderr
        assert record["inference"]["withheld_by"] in " ".join(html.unescape(text).split())
        assert "WITHHELD by a public figure of the plan" in stderr
        sentence = "o edge can be told from noise at this budget and size"
    elif detectable["nothing_detectable"]:
        assert "No pair passed" in text
        sentence = "o edge can be told from noise at this budget and size"
    else:
        assert "No pair passed" in text
        sentence = (f"dges weaker than {detectable['partial_correlation']:.2g} "
                    "(|partial correlation|) cannot be told from noise")
    assert sentence in stderr and sentence in text
    assert stderr.count(sentence) == 1  # stated once, in the curator's line on the graph


def test_the_public_detectable_line_of_a_graph_with_edges(tmp_path):
    frame, _ = make_raw_chain(n_samples=2000, n_features=12, random_state=0)
    data = tmp_path / "raw.csv"
    frame.to_csv(data, index=False)
    done = subprocess.run(
        [sys.executable, "-m", "dpggm", "graph", str(data), "--rho", "1", "--seed", "2",
         "--out", str(tmp_path / "g"), "--quiet"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": SRC})
    assert done.returncode == 0, done.stderr
    value = json.loads((tmp_path / "g" / "result.json").read_text())["inference"][
        "detectable"]["partial_correlation"]
    # One line, marked public, apart from the curator's lines.
    public = [line for line in done.stderr.splitlines()
              if line.startswith("(public, also in the report) ")]
    assert len(public) == 1 and f"Edges weaker than {value:.2g} (|partial" in public[0]


def test_graph_lines_are_styled_by_evidence():
    """Solid below a tenth of the FDR, dashed up to it, dotted above it (a threshold
    graph), with a legend naming each style drawn."""
    from dpggm.report.plots import draw_graph

    edges = pd.DataFrame({"source": ["a", "b", "c"], "target": ["b", "c", "d"],
                          "partial_correlation": [0.5, -0.3, 0.2],
                          "q_value": [0.001, 0.05, 0.4]})
    svg = draw_graph(edges, ["a", "b", "c", "d"], fdr=0.1, fmt="svg")
    assert "strong evidence: q &lt; 0.01" in svg
    assert "near the cut: 0.01 ≤ q ≤ 0.1" in svg and "no evidence at the cut: q &gt; 0.1" in svg
    # Three arcs and three legend samples: two of each with a dash pattern but the solid.
    assert svg.count("stroke-dasharray") == 4
    plain = draw_graph(edges.drop(columns="q_value"), ["a", "b", "c", "d"], fmt="svg")
    assert "stroke-dasharray" not in plain and "evidence" not in plain


def test_forest_plot_is_capped_and_says_so():
    from dpggm.report.plots import FOREST_LIMIT, forest_plot

    m = FOREST_LIMIT + 20
    names = [f"v{j:03d}" for j in range(m + 1)]
    r = np.linspace(-0.5, 0.5, m)
    edges = pd.DataFrame({"source": names[:-1], "target": names[1:], "weight": r,
                          "partial_correlation": r, "ci_low": r - 0.05, "ci_high": r + 0.05,
                          "p_value": np.linspace(1e-6, 0.01, m),
                          "q_value": np.linspace(1e-5, 0.09, m)})
    svg = forest_plot(edges, names, detectable=0.1, fmt="svg")
    assert f"{FOREST_LIMIT} of the {m} edges" in svg
    labels = set(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    shown = {f"{a} – {b}" for a, b in zip(edges.source, edges.target)} & labels
    # The first rows of the edge list (strongest evidence) are drawn, the rest left out.
    assert shown == {f"{a} – {b}" for a, b in zip(edges.source[:FOREST_LIMIT],
                                                   edges.target[:FOREST_LIMIT])}
    assert "not told from noise (80 % power)" in svg


def test_report_with_intervals_renders_in_headless_chromium(interval_dir, tmp_path):
    """The report of edge inference as a reader's browser draws it: the summary box,
    and a forest plot with one drawn interval per edge."""
    from matplotlib.image import imread

    out, graph = interval_dir
    width, height = 1200, 3600
    shot = tmp_path / "report.png"
    completed = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
         f"--window-size={width},{height}", f"--screenshot={shot}",
         (out / "report.html").as_uri()],
        capture_output=True, text=True, timeout=180,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    image = imread(shot)[..., :3]
    assert image.shape[:2] == (height, width)
    # The summary box (its pale blue background) sits under the title.
    pale = np.all(np.abs(image - np.array([0xF4, 0xF8, 0xFC]) / 255) < 0.01, axis=2)
    assert pale[:500].sum() > 50_000
    # The forest plot's area is where its grey band (what the release cannot tell from
    # noise) runs down the page: the longest run of rows with a stretch of that grey (its
    # legend has a small patch of it too).
    band = np.all(np.abs(image - 0xEC / 255) < 0.01, axis=2)
    grey_rows = np.nonzero(band.sum(axis=1) >= 30)[0]
    runs = np.split(grey_rows, np.nonzero(np.diff(grey_rows) > 1)[0] + 1)
    plot_rows = max(runs, key=len)
    assert plot_rows.size > 200, "no forest plot with its band in the page"
    top, bottom = plot_rows.min(), plot_rows.max() + 1
    # Inside it the intervals are drawn in the pure colours of the signs (the graph's
    # arcs above are translucent); its rows of such pixels, grouped, are the intervals:
    # one per edge.
    colours = [np.array([0xD6, 0x27, 0x28]) / 255, np.array([0x1F, 0x6F, 0xB4]) / 255]
    pure = np.zeros((bottom - top, width), dtype=bool)
    for colour in colours:
        pure |= np.all(np.abs(image[top:bottom] - colour) < 0.03, axis=2)
    rows = np.nonzero(pure.sum(axis=1) >= 20)[0]
    groups = 1 + int(np.sum(np.diff(rows) > 3)) if rows.size else 0
    assert groups == len(graph.edges_)
    # The intervals are evenly spaced, one row each, down the whole plot.
    assert rows.max() - rows.min() > 0.8 * (bottom - top)
    assert np.isclose(image[:, -20:].mean(), 1.0, atol=0.02)  # white margin: no overflow
