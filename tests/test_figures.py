"""Figures a journal accepts: layouts that show the structure (force-directed, circle, by
declared groups), straight edges, readable at 100 variables, PNG at 300 dpi with SVG and
PDF beside it; a wide graph drawn by its strongest edges and a block heatmap, said so; the
edge list's columns documented, none with a sign opposite to the partial correlation's;
plotting imported only when drawing."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import PrivateGraph
from dpggm.cli.main import app
from dpggm.datasets import make_questionnaire
from dpggm.privacy.budgets import ZCDP
from dpggm.report import build_report, draw_graph, graph_layout
from dpggm.report.layout import (
    groups_from_file,
    groups_from_pattern,
    node_groups,
    pair_distance_ratio,
)

runner = CliRunner()
SRC = str(Path(__file__).resolve().parents[1] / "src")


def _chain(p: int) -> tuple[pd.DataFrame, list[str]]:
    names = [f"v{j}" for j in range(p)]
    return pd.DataFrame({"source": names[:-1], "target": names[1:]}), names


def _hub_and_chain(p: int) -> tuple[pd.DataFrame, list[str]]:
    """A hub joined to 30 variables, and a chain through the rest."""
    names = [f"v{j}" for j in range(p)]
    pairs = [(0, j) for j in range(1, 31)] + [(j, j + 1) for j in range(30, p - 1)]
    return pd.DataFrame({"source": [names[a] for a, _ in pairs],
                         "target": [names[b] for _, b in pairs]}), names


def _clusters(p: int = 100, size: int = 10, seed: int = 0) -> tuple[pd.DataFrame, list[str]]:
    """``p / size`` dense clusters (each variable joined to three of its own), a few
    links between them."""
    rng = np.random.default_rng(seed)
    names = [f"item_{j:03d}" for j in range(p)]
    pairs = set()
    for start in range(0, p, size):
        members = range(start, start + size)
        for a in members:
            for b in rng.choice(list(members), 3, replace=False):
                if a != b:
                    pairs.add((min(a, int(b)), max(a, int(b))))
    for _ in range(p // size):
        a, b = rng.integers(0, p, 2)
        if a != b:
            pairs.add((min(a, b), max(a, b)))
    pairs = sorted(pairs)
    r = rng.uniform(0.05, 0.4, len(pairs)) * rng.choice([-1, 1], len(pairs))
    return pd.DataFrame({"source": [names[a] for a, _ in pairs],
                         "target": [names[b] for _, b in pairs],
                         "partial_correlation": r}), names


# -- layouts -----------------------------------------------------------------------------


@pytest.mark.parametrize("make", [_chain, _hub_and_chain, _clusters])
def test_spring_layout_puts_joined_variables_closer_than_the_others(make):
    edges, names = make(100)
    xy = graph_layout(edges, names, layout="spring")
    ratio = pair_distance_ratio(xy, edges, names)
    # Measured 0.06-0.15; a circle in column order gives about 0.05 for the chain (its
    # edges join neighbours) but 0.6 for the clusters with their links.
    assert ratio < 0.3, ratio
    # Room for labels: no two variables closer than 0.74 units (the median nearest
    # neighbour is one unit).
    distance = np.linalg.norm(xy[:, None] - xy[None], axis=-1)
    np.fill_diagonal(distance, np.inf)
    assert distance.min() > 0.74
    assert 0.7 < np.median(distance.min(axis=1)) < 1.5


def test_layouts_are_deterministic_and_use_only_the_edges_and_the_groups():
    edges, names = _clusters()
    groups = {name: f"scale {int(name[-3:]) // 25}" for name in names}
    for layout in ("spring", "circle", "groups"):
        first = graph_layout(edges, names, layout=layout, groups=groups)
        # The same edges in another order, with other numbers beside them: the same
        # positions (a function of which pairs are joined, never of a seed).
        shuffled = edges.sample(frac=1.0, random_state=3).assign(
            partial_correlation=0.9, q_value=0.5)
        again = graph_layout(shuffled, names, layout=layout, groups=groups)
        np.testing.assert_array_equal(first, again)
    # In a fresh interpreter too (no state carried between calls).
    code = ("import numpy as np, pandas as pd, sys\n"
            "from dpggm.report import graph_layout\n"
            f"e = pd.DataFrame({edges[['source', 'target']].to_dict('list')!r})\n"
            f"print(repr(graph_layout(e, {names!r}).round(9).tolist()))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC}, check=True, timeout=120)
    fresh = np.array(eval(done.stdout))  # our own repr of a list of floats
    np.testing.assert_allclose(fresh, graph_layout(edges, names).round(9), atol=1e-9)


def test_circle_layout_starts_at_the_top_and_runs_clockwise():
    edges, names = _chain(12)
    xy = graph_layout(edges, names, layout="circle")
    assert xy[0, 0] == pytest.approx(0.0, abs=1e-12) and xy[0, 1] == xy[:, 1].max()
    assert xy[1, 0] > 0  # clockwise: the second to the right of the first
    radius = np.linalg.norm(xy, axis=1)
    np.testing.assert_allclose(radius, radius[0])


def test_groups_layout_keeps_each_group_together():
    edges, names = _clusters()
    # Groups that cut across the clusters: the layout must follow the declaration.
    groups = {name: "abcd"[j % 4] for j, name in enumerate(names)}
    xy = graph_layout(edges, names, layout="groups", groups=groups)
    labels = np.array(node_groups(groups, names))
    centers = {g: xy[labels == g].mean(axis=0) for g in "abcd"}
    for j in range(len(names)):
        own = np.linalg.norm(xy[j] - centers[labels[j]])
        assert all(own < np.linalg.norm(xy[j] - centers[g]) for g in "abcd" if g != labels[j])


def test_layout_arguments_are_checked():
    edges, names = _chain(5)
    with pytest.raises(ValueError, match="layout must be one of spring, circle, groups"):
        graph_layout(edges, names, layout="kamada")
    with pytest.raises(ValueError, match="needs the variables' groups"):
        graph_layout(edges, names, layout="groups")
    with pytest.raises(ValueError, match="one entry per variable"):
        graph_layout(edges, names, layout="groups", groups=["a", "b"])
    with pytest.raises(ValueError, match="names none of the 5 variables"):
        graph_layout(edges, names, layout="groups", groups={"x": "a"})


def test_groups_are_read_from_csv_json_and_names(tmp_path):
    (tmp_path / "g.csv").write_text("item;scale\nanx_1;anxiety\nanx_2;anxiety\ndep_1;mood\n\n")
    assert groups_from_file(tmp_path / "g.csv") == {"anx_1": "anxiety", "anx_2": "anxiety",
                                                    "dep_1": "mood"}
    (tmp_path / "a.json").write_text(json.dumps({"anxiety": ["anx_1", "anx_2"],
                                                 "mood": ["dep_1"]}))
    (tmp_path / "b.json").write_text(json.dumps({"anx_1": "anxiety", "dep_1": "mood"}))
    assert groups_from_file(tmp_path / "a.json")["anx_2"] == "anxiety"
    assert groups_from_file(tmp_path / "b.json") == {"anx_1": "anxiety", "dep_1": "mood"}
    (tmp_path / "c.json").write_text(json.dumps({"anxiety": ["anx_1"], "mood": ["anx_1"]}))
    with pytest.raises(ValueError, match="puts 'anx_1' in two groups"):
        groups_from_file(tmp_path / "c.json")
    names = ["anx_1", "anx_2", "dep_1", "age"]
    assert groups_from_pattern(r"^([a-z]+)_\d+$", names) == {
        "anx_1": "anx", "anx_2": "anx", "dep_1": "dep"}
    with pytest.raises(ValueError, match="matches none"):
        groups_from_pattern(r"^item", names)
    with pytest.raises(ValueError, match="not a regular expression"):
        groups_from_pattern(r"([a-z", names)


# -- the drawing -------------------------------------------------------------------------


def _node_centers(svg: str) -> dict[int, np.ndarray]:
    """The center of each node disc (``id="dpggm-node-<column>"``), in SVG points."""
    out = {}
    for column, path in re.findall(r'<g id="dpggm-node-(\d+)">\s*<path d="([^"]+)"', svg):
        numbers = np.array([float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", path)])
        points = numbers.reshape(-1, 2)
        out[int(column)] = (points.min(axis=0) + points.max(axis=0)) / 2
    return out


def _label_boxes(svg: str) -> list[np.ndarray]:
    """The white veil under each label (``id="dpggm-label-<column>"``): its box."""
    boxes = []
    for path in re.findall(r'<g id="dpggm-label-\d+">\s*<path d="([^"]+)"', svg):
        points = np.array([float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", path)]).reshape(-1, 2)
        boxes.append(np.concatenate([points.min(axis=0), points.max(axis=0)]))
    return boxes


def _crossings(points: np.ndarray, pairs: list[tuple[int, int]]) -> int:
    """Pairs of edges (without a shared end) whose straight segments cross."""

    def side(a, b, c):
        return np.sign((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))

    count = 0
    for k, (a, b) in enumerate(pairs):
        for c, d in pairs[k + 1:]:
            if len({a, b, c, d}) < 4:
                continue
            p1, p2, p3, p4 = points[a], points[b], points[c], points[d]
            if side(p1, p2, p3) * side(p1, p2, p4) < 0 and side(p3, p4, p1) * side(p3, p4, p2) < 0:
                count += 1
    return count


def test_edges_are_straight_lines_between_node_centers():
    edges, names = _chain(30)
    edges = edges.assign(partial_correlation=0.3)
    for layout in ("circle", "spring"):
        svg = draw_graph(edges, names, layout=layout, fmt="svg")
        strokes = re.findall(r'<path d="([^"]+)"[^>]*style="fill: none; stroke: #1f6fb4', svg)
        assert len(strokes) == len(edges)
        for path in strokes:
            # One move and one line: no curve (C, Q) through the middle of the picture.
            assert re.fullmatch(r"M [-\d. ]+L [-\d. ]+", " ".join(path.split())), path
    # No circle outline behind a circle layout (only the nodes' discs are circles).
    assert "stroke: #e3e3e3" not in draw_graph(edges, names, layout="circle", fmt="svg")


def _font_sizes(svg: str) -> list[float]:
    return [float(v) for v in re.findall(r"font-size: ([\d.]+)px", svg)]


def test_100_variables_are_readable_labels_and_nodes_adapt_to_p():
    edges, names = _clusters()
    svg = draw_graph(edges, names, fmt="svg")
    centers = _node_centers(svg)
    assert sorted(centers) == list(range(100))
    boxes = _label_boxes(svg)
    assert len(boxes) == 100
    # At least 7 pt (9.7 px at the page's 880-1100 px), and no label covering another
    # by more than a tenth of its box: at most 3 of the 100 touch at all.
    labels = [size for size in _font_sizes(svg)][: len(boxes)]
    assert min(labels) >= 7.0
    touching = 0
    for k, a in enumerate(boxes):
        for b in boxes[k + 1:]:
            w = min(a[2], b[2]) - max(a[0], b[0])
            h = min(a[3], b[3]) - max(a[1], b[1])
            if w > 0 and h > 0:
                touching += 1
                area = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
                assert w * h < 0.1 * area
    assert touching <= 3, touching
    # Smaller nodes and type at 100 variables than at 8.
    small_edges, small_names = _chain(8)
    small = draw_graph(small_edges, small_names, fmt="svg")
    assert min(_font_sizes(small)[:8]) > min(labels)


def _png_dpi(png: bytes) -> float:
    """The resolution a PNG declares (its pHYs chunk), in dots per inch."""
    offset = 8
    while offset < len(png):
        length, kind = struct.unpack(">I4s", png[offset:offset + 8])
        if kind == b"pHYs":
            per_metre_x, _, unit = struct.unpack(">IIB", png[offset + 8:offset + 17])
            assert unit == 1  # metres
            return per_metre_x * 0.0254
        offset += 12 + length
    raise AssertionError("no pHYs chunk")


def test_pictures_are_png_at_300_dpi_svg_and_pdf_and_repeatable():
    edges, names = _clusters(30, 6)
    files = draw_graph(edges, names, title="a graph", fmt=("png", "svg", "pdf"))
    png, svg, pdf = files["png"], files["svg"], files["pdf"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and round(_png_dpi(png)) == 300
    width = struct.unpack(">I", png[16:20])[0]
    assert width >= 1500  # at least 5 inches at 300 dpi
    assert svg.startswith("<?xml") and re.search(r'<svg [^>]*width="[\d.]+pt"', svg)
    assert ">item_000<" in svg  # text kept as text
    assert pdf[:5] == b"%PDF-"
    # TrueType fonts (Type 42: editable text, accepted by journals), no Type 3.
    assert b"/FontFile2" in pdf and b"/Type3" not in pdf
    again = draw_graph(edges, names, title="a graph", fmt=("svg", "pdf"))
    assert again["svg"] == svg and again["pdf"] == pdf


def test_groups_colour_the_nodes_with_a_legend():
    edges, names = _clusters(40, 10)
    groups = {name: ("anxiety" if j < 20 else "mood") for j, name in enumerate(names)}
    svg = draw_graph(edges, names, groups=groups, layout="groups", fmt="svg")
    assert "groups (as declared)" in svg and ">anxiety<" in svg and ">mood<" in svg
    fills = re.findall(r'<g id="dpggm-node-\d+">\s*<path d="[^"]+"[^>]*style="fill: (#\w+)', svg)
    assert len(set(fills)) == 2


# -- a wide graph ----------------------------------------------------------------------


def _wide_release(directory: Path, p: int, seed: int = 0) -> int:
    """A ``dpggm graph``-shaped directory of ``p`` variables: public synthetic numbers (a
    chain and random pairs, with p-values and intervals, and a precision matrix)."""
    from dpggm.estimators.edges import edges_csv_text

    rng = np.random.default_rng(seed)
    names = [f"protein_{j:04d}" for j in range(p)]
    pairs = sorted({(j, j + 1) for j in range(p - 1)} | {
        (min(a, b), max(a, b)) for a, b in rng.integers(0, p, (p, 2)) if a != b})
    m = len(pairs)
    r = rng.uniform(0.04, 0.5, m) * rng.choice([-1.0, 1.0], m)
    p_values = np.sort(10.0 ** -rng.uniform(1.5, 30, m))
    edges = pd.DataFrame({
        "source": [names[a] for a, _ in pairs], "target": [names[b] for _, b in pairs],
        "weight": r, "partial_correlation": r, "ci_low": r - 0.03, "ci_high": r + 0.03,
        "p_value": p_values, "q_value": np.minimum(1, p_values * m / np.arange(1, m + 1))})
    precision = np.eye(p) * 2.0
    for (a, b), value in zip(pairs, r):
        precision[a, b] = precision[b, a] = -value
    record = {"command": "graph", "title": "wide", "n_features": p, "features": names,
              "privacy": {"budget": {"notion": "zcdp", "rho": 1.0}, "validity": "valid",
                          "neighbors": "replace"},
              "inference": {"select": "fdr", "fdr": 0.1, "confidence_level": 0.9}}
    directory.mkdir()
    (directory / "result.json").write_text(json.dumps(record))
    (directory / "edges.csv").write_text(edges_csv_text(edges))
    np.save(directory / "precision.npy", precision)
    return m


def test_the_report_of_a_wide_graph_stays_small_and_says_what_it_shows(tmp_path):
    from dpggm.report.plots import GRAPH_EDGE_LIMIT, GRAPH_NODE_LIMIT

    p = 1000
    m = _wide_release(tmp_path / "wide", p)
    page = build_report(tmp_path / "wide")
    # Measured 0.44 MB at p = 1 000 and 0.63 MB at p = 3 000
    # (benchmarks/bench_report_large.py).
    assert len(page.encode()) < 2_000_000
    text = " ".join(re.sub(r"<[^>]+>", " ", re.sub(r"(?s)<svg.*?</svg>", " ", page)).split())
    assert f"too large to draw whole ({p} variables, {m} edges)" in text
    assert "edges with the strongest evidence" in text and "edges.csv have every edge" in text
    assert "blocks of 4 × 4 variables" in text
    graph_svg = re.search(r"(?s)<svg.*?</svg>", page).group(0)
    drawn = _node_centers(graph_svg)
    assert 0 < len(drawn) <= GRAPH_NODE_LIMIT
    assert f"(of {m})" in graph_svg and f"(of {p})" in graph_svg
    # Only the strongest edges are drawn: their ends are the variables drawn.
    edges = pd.read_csv(tmp_path / "wide" / "edges.csv")
    strongest = edges.sort_values("p_value").head(20)
    columns = {f"protein_{j:04d}": j for j in range(p)}
    assert {columns[n] for n in strongest.source} <= set(drawn)
    assert len(re.findall(r"stroke: #(?:1f6fb4|d62728)", graph_svg)) <= GRAPH_EDGE_LIMIT
    assert page.count("<tr><td>") <= 200 + 12  # the edge table's first rows only


def test_block_heatmap_keeps_a_lone_strong_entry():
    from dpggm.report.plots import _block_strongest

    values = np.zeros((10, 10))
    values[7, 2] = values[2, 7] = -0.6
    values[0, 1] = values[1, 0] = 0.2
    blocks = _block_strongest(values, 4)
    assert blocks.shape == (3, 3)
    assert blocks[1, 0] == -0.6 and blocks[0, 1] == -0.6 and blocks[0, 0] == 0.2


def test_the_heatmap_png_takes_memory_by_cell_not_by_pixel():
    """At 60 labelled variables the heatmap's PNG has some 13 million pixels at 300 dpi;
    its cells are filled as rectangles, so NumPy and Python allocate less than 2 bytes a
    pixel while it is drawn (tracemalloc sees every NumPy array; an image resampled to
    the pixels in floating point took 419 MB, 31 bytes a pixel)."""
    import tracemalloc

    from dpggm.report.plots import precision_heatmap

    p = 60
    rng = np.random.default_rng(0)
    sparse = rng.normal(size=(p, p)) * (rng.uniform(size=(p, p)) < 0.05)
    precision = sparse @ sparse.T + p * np.eye(p)
    names = [f"v{j}" for j in range(p)]
    precision_heatmap(precision[:5, :5], names[:5], fmt="png")  # the modules, the fonts
    tracemalloc.start()
    try:
        png = precision_heatmap(precision, names, fmt="png")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    width, height = struct.unpack(">II", png[16:24])
    assert width * height > 10_000_000  # the picture is as large as described
    assert peak < 2 * width * height, (peak, width, height)


def test_plotting_is_imported_only_when_drawing(tmp_path):
    code = (
        "import sys\nimport dpggm\nfrom dpggm import PrivateGraph, ZCDP\n"
        "from dpggm.datasets import make_raw_chain\n"
        "frame, _ = make_raw_chain(n_samples=500, n_features=5, random_state=0)\n"
        "g = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)\n"
        f"g.save({str(tmp_path / 'saved')!r})\n"
        "assert not {'matplotlib', 'networkx'} & {m.split('.')[0] for m in sys.modules}, "
        "sorted(m for m in sys.modules if m.startswith(('matplotlib', 'networkx')))\n"
        "from dpggm.report import build_report\n"
        "assert 'matplotlib' not in sys.modules\n"
        f"build_report({str(tmp_path / 'saved')!r})\n"
        "assert 'matplotlib' in sys.modules and 'networkx' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": SRC},
                   check=True, timeout=300, capture_output=True)


# -- the command line --------------------------------------------------------------------


@pytest.fixture(scope="module")
def questionnaire_csv(tmp_path_factory):
    frame, _ = make_questionnaire(n_samples=3000, n_factors=3, items_per_factor=5,
                                  random_state=0)
    frame.columns = [c.replace("f1_", "anx_").replace("f2_", "dep_").replace("f3_", "sleep_")
                     for c in frame.columns]
    path = tmp_path_factory.mktemp("quest") / "items.csv"
    frame.to_csv(path, index=False)
    return path


def test_graph_layout_and_groups_options(questionnaire_csv, tmp_path):
    out = tmp_path / "g"
    done = runner.invoke(app, ["graph", str(questionnaire_csv), "--rho", "1", "--seed", "1",
                               "--layout", "groups", "--group-pattern", r"^([a-z]+)_",
                               "--out", str(out), "--quiet"])
    assert done.exit_code == 0, done.output
    record = json.loads((out / "result.json").read_text())
    assert record["picture"]["layout"] == "groups"
    assert record["picture"]["groups"]["anx_q1"] == "anx"
    svg = (out / "graph.svg").read_text()
    assert ">sleep<" in svg and "groups (as declared)" in svg
    page = (out / "report.html").read_text()
    assert "one cluster per declared group" in page and "<th>picture</th>" not in page
    # dpggm report redraws with the recorded layout and groups, or another on request.
    again = runner.invoke(app, ["report", str(out)])
    assert again.exit_code == 0, again.output
    assert "one cluster per declared group" in (out / "report.html").read_text()
    circle = runner.invoke(app, ["report", str(out), "--layout", "circle", "--pictures",
                                 "--out", str(tmp_path / "elsewhere" / "r.html")])
    assert circle.exit_code == 0, circle.output
    assert "sit on a circle" in (tmp_path / "elsewhere" / "r.html").read_text()
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == sorted(
        ["r.html"] + [f"{s}.{f}" for s in ("graph", "intervals", "precision")
                      for f in ("png", "svg", "pdf")])
    refused = runner.invoke(app, ["report", str(out), "--pictures",
                                  "--out", str(tmp_path / "elsewhere" / "other.html")])
    assert refused.exit_code == 2 and "exists; pass --overwrite" in refused.output


@pytest.mark.parametrize("args, message", [
    (["--layout", "kamada"], "--layout must be one of spring, circle, groups"),
    (["--layout", "groups"], "--layout groups needs the variables' groups"),
    (["--groups", "nosuch.csv"], "--groups: no such file"),
    (["--group-pattern", "([a-z"], "is not a regular expression"),
    (["--groups", "g.csv", "--group-pattern", "x"], "not both"),
])
def test_picture_options_are_refused_before_any_data(tmp_path, args, message):
    (tmp_path / "g.csv").write_text("variable,group\na,x\n")
    (tmp_path / "d.csv").write_text("a,b\n1,2\n3,4\n")
    os.chdir(tmp_path)
    ledger = tmp_path / "l.db"
    assert runner.invoke(app, ["budget", "init", str(ledger), "--dataset", "d",
                               "--rho", "1"]).exit_code == 0
    done = runner.invoke(app, ["graph", "d.csv", "--rho", "0.5", "--ledger", str(ledger),
                               "--dataset", "d", *args])
    assert done.exit_code == 2 and message in done.output, done.output
    history = runner.invoke(app, ["budget", "history", str(ledger), "--dataset", "d"])
    assert "0.5" not in history.output  # nothing charged


def test_groups_that_fit_no_column_are_reported_not_fatal(questionnaire_csv, tmp_path):
    """After the release nothing may fail (the budget is spent): groups naming none of
    the columns are reported and left out."""
    groups = tmp_path / "scales.csv"
    groups.write_text("item,scale\nq1,anxiety\n")
    done = runner.invoke(app, ["graph", str(questionnaire_csv), "--rho", "1", "--seed", "1",
                               "--layout", "groups", "--groups", str(groups),
                               "--out", str(tmp_path / "g"), "--quiet"])
    assert done.exit_code == 0, done.output
    assert "names none of the 15 variables" in done.output
    assert json.loads((tmp_path / "g" / "result.json").read_text())["picture"] == {
        "layout": "spring", "groups": None}


# -- acceptance: the report of a 100-variable graph, in a browser ----------------------------


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path is not None, (
        "headless Chromium is needed for this test: apt-get install -y chromium "
        "(.ci/run installs it)"
    )
    return path


@pytest.fixture(scope="module")
def hundred_dir(tmp_path_factory):
    """A private graph of a 100-item questionnaire (ten scales of ten items)."""
    frame, _ = make_questionnaire(n_samples=8000, n_factors=10, items_per_factor=10,
                                  random_state=0)
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)
    out = tmp_path_factory.mktemp("hundred") / "g"
    # The library's release files, then the report (as dpggm graph draws it, without the
    # picture files, which other tests check).
    graph.save(out)
    (out / "report.html").write_text(build_report(out), encoding="utf-8")
    return out


def test_a_100_variable_graph_has_no_knot_and_joined_variables_sit_together(hundred_dir):
    page = (hundred_dir / "report.html").read_text(encoding="utf-8")
    svg = re.search(r"(?s)<svg.*?</svg>", page).group(0)
    centers = _node_centers(svg)
    names = json.loads((hundred_dir / "result.json").read_text())["features"]
    assert sorted(centers) == list(range(100))
    points = np.array([centers[j] for j in range(100)])
    edges = pd.read_csv(hundred_dir / "edges.csv")
    assert len(edges) > 100
    ratio = pair_distance_ratio(points, edges, names)
    # Measured in the drawn picture: 0.16 (the same edges on a circle in column order:
    # 0.22).
    assert ratio < 0.5, ratio
    index = {name: j for j, name in enumerate(names)}
    pairs = [(index[a], index[b]) for a, b in zip(edges.source, edges.target)]
    # No knot: few edges cross (measured 0.42 crossings per edge, inside the scales'
    # dense clusters; 2.3 on a circle in column order), and no spot away from the nodes
    # has more than a few edges passing through it (measured 4; the former circle with
    # arcs bent towards its center: 17, at one spot).
    crossings = _crossings(points, pairs)
    assert crossings <= len(pairs), (crossings, len(pairs))
    span = np.ptp(points, axis=0).max()
    grid = np.stack(np.meshgrid(*[np.linspace(points[:, k].min(), points[:, k].max(), 60)
                                  for k in (0, 1)]), axis=-1).reshape(-1, 2)
    near_node = np.min(np.linalg.norm(grid[:, None] - points[None], axis=-1), axis=1)
    grid = grid[near_node > 0.03 * span]
    a, b = points[[p for p, _ in pairs]], points[[q for _, q in pairs]]
    step = b - a
    t = (np.einsum("gk,ek->ge", grid, step) - np.einsum("ek,ek->e", a, step)) / np.maximum(
        np.einsum("ek,ek->e", step, step), 1e-12)
    closest = a[None] + np.clip(t, 0, 1)[..., None] * step[None]
    passing = (np.linalg.norm(grid[:, None] - closest, axis=-1) < 0.015 * span).sum(axis=1)
    assert passing.max() <= 6, passing.max()


def test_the_100_variable_report_in_headless_chromium(hundred_dir, tmp_path):
    """Acceptance: the report viewed in a browser: the graph fills the page's width, its
    labels at a readable size (the screenshot is kept under the test's tmp_path)."""
    from matplotlib.image import imread

    width, height = 1280, 2400
    shot = tmp_path / "report-100.png"
    completed = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
         f"--window-size={width},{height}", f"--screenshot={shot}",
         (hundred_dir / "report.html").as_uri()],
        capture_output=True, text=True, timeout=180,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    image = imread(shot)[..., :3]
    grey = image.mean(axis=2)
    # The graph: dark node outlines and label text spread over most of the text column
    # (about 1100 of the 1280 pixels), below the summary box.
    rows = grey[350:1700]
    dark_columns = np.where((rows < 0.4).sum(axis=0) > 3)[0]
    assert dark_columns.min() < 200 and dark_columns.max() > 900
    dark_rows = np.where((rows < 0.4).sum(axis=1) > 3)[0]
    assert dark_rows.max() - dark_rows.min() > 700
    # Blue and red edges are drawn (their pure colours, translucent over white).
    blue = np.all(np.abs(image - np.array([0x1F, 0x6F, 0xB4]) / 255) < 0.25, axis=2)
    assert blue[350:1700].sum() > 2000
    assert np.isclose(image[:, -20:].mean(), 1.0, atol=0.02)  # white margin: no overflow
