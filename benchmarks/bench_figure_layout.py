"""How well the graph drawing shows a 100-variable structure, measured in the report's SVG.

A private graph of a 100-item questionnaire (ten scales of ten items, n = 8 000,
rho = 1, seeded: an experiment) is drawn in its report with each layout; for each, from
the node positions in the drawn SVG:

* joined/unjoined: the mean distance between joined variables over that between the
  others (below 1: joined variables sit together);
* crossings per edge;
* knot: the most edges passing within 1.5 % of the drawing's size of one spot at least 3 %
  away from every node -- also for the former drawing (a circle with edges bent towards its
  center), computed from its geometry;
* the time to draw the report and the nine picture files.

    python benchmarks/bench_figure_layout.py
"""

from __future__ import annotations

import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def node_centers(svg: str) -> dict[int, np.ndarray]:
    out = {}
    for column, path in re.findall(r'<g id="dpggm-node-(\d+)">\s*<path d="([^"]+)"', svg):
        points = np.array([float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", path)])
        points = points.reshape(-1, 2)
        out[int(column)] = (points.min(axis=0) + points.max(axis=0)) / 2
    return out


def crossings(points: np.ndarray, pairs: list[tuple[int, int]]) -> int:
    def side(a, b, c):
        return np.sign((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))

    count = 0
    for k, (a, b) in enumerate(pairs):
        for c, d in pairs[k + 1:]:
            if len({a, b, c, d}) == 4:
                p1, p2, p3, p4 = points[a], points[b], points[c], points[d]
                count += bool(side(p1, p2, p3) * side(p1, p2, p4) < 0
                              and side(p3, p4, p1) * side(p3, p4, p2) < 0)
    return count


def knot(points: np.ndarray, curves: list[np.ndarray]) -> int:
    """The most curves (each a polyline) passing near one spot away from the nodes."""
    span = np.ptp(points, axis=0).max()
    axes = [np.linspace(points[:, k].min(), points[:, k].max(), 60) for k in (0, 1)]
    grid = np.stack(np.meshgrid(*axes), axis=-1).reshape(-1, 2)
    far = np.min(np.linalg.norm(grid[:, None] - points[None], axis=-1), axis=1) > 0.03 * span
    grid = grid[far]
    counts = np.zeros(len(grid), dtype=int)
    for curve in curves:
        near = np.min(np.linalg.norm(grid[:, None] - curve[None], axis=-1), axis=1)
        counts += near < 0.015 * span
    return int(counts.max())


def main() -> None:
    from dpggm import ZCDP, PrivateGraph
    from dpggm.datasets import make_questionnaire
    from dpggm.report import build_report
    from dpggm.report.html import picture_files
    from dpggm.report.layout import pair_distance_ratio

    print(f"load average {os.getloadavg()[0]:.2f}")
    frame, _ = make_questionnaire(n_samples=8000, n_factors=10, items_per_factor=10,
                                  random_state=0)
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)
    with tempfile.TemporaryDirectory() as tmp:
        graph.save(Path(tmp) / "g")
        folder = Path(tmp) / "g"
        names = list(frame.columns)
        edges = pd.read_csv(folder / "edges.csv")
        index = {name: j for j, name in enumerate(names)}
        pairs = [(index[a], index[b]) for a, b in zip(edges.source, edges.target)]
        print(f"{len(names)} variables, {len(pairs)} edges")
        t = np.linspace(0, 1, 100)[:, None]
        for layout in ("spring", "circle", "groups"):
            groups = {name: name.split("_")[0] for name in names}
            start = time.perf_counter()
            page = build_report(folder, layout=layout, groups=groups)
            report_time = time.perf_counter() - start
            start = time.perf_counter()
            picture_files(folder, layout=layout, groups=groups)
            files_time = time.perf_counter() - start
            svg = re.search(r"(?s)<svg.*?</svg>", page).group(0)
            centers = node_centers(svg)
            points = np.array([centers[j] for j in range(len(names))])
            lines = [(1 - t) * points[a] + t * points[b] for a, b in pairs]
            print(f"{layout:>7}: joined/unjoined {pair_distance_ratio(points, edges, names):.3f}"
                  f"; crossings per edge {crossings(points, pairs) / len(pairs):.2f}; knot "
                  f"{knot(points, lines)}; report {report_time:.1f} s, nine picture files "
                  f"{files_time:.1f} s")
        # The former drawing: a circle in column order, edges as quadratic curves whose
        # control point is 0.45 of the way from the center to the chord's middle.
        angles = [math.pi / 2 - 2 * math.pi * j / len(names) for j in range(len(names))]
        circle = np.array([[math.cos(a), math.sin(a)] for a in angles])
        arcs = []
        for a, b in pairs:
            control = 0.45 * (circle[a] + circle[b]) / 2
            arcs.append((1 - t) ** 2 * circle[a] + 2 * (1 - t) * t * control
                        + t ** 2 * circle[b])
        print(f" former: joined/unjoined {pair_distance_ratio(circle, edges, names):.3f}; "
              f"knot {knot(circle, arcs)} (arcs bent towards the center)")


if __name__ == "__main__":
    main()
