"""The report and the pictures of a wide graph: time and size at p in the thousands.

A synthetic release (no fit: a result record, an edge list of 2p edges -- a chain and
random pairs -- with p-values and intervals, and a p x p precision matrix) is written for
each p; then ``build_report`` and the picture files (PNG, SVG, PDF) are timed, with the
report's size. The baseline of the same run is ``np.save`` + ``np.load`` of the p x p
matrix (the least any report of it must do). Target: the report a few MB at most at
p = 3 000, built in seconds.

    python benchmarks/bench_report_large.py [--p 1000 3000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def synthetic_release(directory: Path, p: int, *, seed: int = 0) -> None:
    """A ``dpggm graph``-shaped result directory of ``p`` variables (public synthetic
    numbers; no data, no budget)."""
    from dpggm.estimators.edges import edges_csv_text

    rng = np.random.default_rng(seed)
    names = [f"metabolite_{j:04d}" for j in range(p)]
    extra = rng.integers(0, p, size=(p, 2))
    pairs = {(j, j + 1) for j in range(p - 1)}
    pairs |= {(min(a, b), max(a, b)) for a, b in extra if a != b}
    pairs = sorted(pairs)
    m = len(pairs)
    r = rng.uniform(0.04, 0.5, m) * rng.choice([-1.0, 1.0], m)
    p_values = np.sort(10.0 ** -rng.uniform(1.5, 30, m))
    order = np.argsort(-np.abs(r))
    r = r[order]
    edges = pd.DataFrame({
        "source": [names[a] for a, _ in pairs], "target": [names[b] for _, b in pairs],
        "weight": r, "partial_correlation": r, "ci_low": r - 0.03, "ci_high": r + 0.03,
        "p_value": p_values, "q_value": np.minimum(1.0, p_values * m / np.arange(1, m + 1)),
    })
    precision = np.eye(p) * 2.0
    for (a, b), value in zip(pairs, r):
        precision[a, b] = precision[b, a] = -value
    record = {
        "command": "graph", "title": f"synthetic release of {p} variables",
        "method": "glasso", "n_samples": 100_000, "n_features": p, "features": names,
        "n_edges": m,
        "privacy": {"budget": {"notion": "zcdp", "rho": 1.0}, "neighbors": "replace",
                    "validity": "valid", "reason": "",
                    "bounds": {"kind": "auto", "ranges": {"lower": [-1.0] * p,
                                                          "upper": [1.0] * p}}},
        "inference": {"select": "fdr", "fdr": 0.1, "fdr_method": "bh",
                      "confidence_level": 0.9,
                      "detectable": {"partial_correlation": 0.05, "power": 0.8,
                                     "nothing_detectable": False}},
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "result.json").write_text(json.dumps(record), encoding="utf-8")
    (directory / "edges.csv").write_text(edges_csv_text(edges), encoding="utf-8")
    np.save(directory / "precision.npy", precision)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, nargs="+", default=[1000, 3000])
    args = parser.parse_args()
    from dpggm.report import build_report
    from dpggm.report.html import picture_files

    print(f"load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        for p in args.p:
            folder = Path(tmp) / f"p{p}"
            synthetic_release(folder, p)
            start = time.perf_counter()
            matrix = np.load(folder / "precision.npy")
            np.save(Path(tmp) / "copy.npy", matrix)
            baseline = time.perf_counter() - start
            start = time.perf_counter()
            page = build_report(folder)
            report_time = time.perf_counter() - start
            start = time.perf_counter()
            files = picture_files(folder)
            files_time = time.perf_counter() - start
            sizes = ", ".join(f"{name} {len(content) / 1e6:.2f} MB"
                              for name, content in files.items())
            edges = sum(1 for _ in open(folder / "edges.csv", encoding="utf-8")) - 1
            print(f"p = {p}: {edges} edges; report {len(page.encode()) / 1e6:.2f} MB in "
                  f"{report_time:.1f} s; pictures in {files_time:.1f} s ({sizes}); "
                  f"baseline (np.load + np.save of the matrix) {baseline:.2f} s; ratio "
                  f"report/baseline {report_time / max(baseline, 1e-9):.0f}")


if __name__ == "__main__":
    main()
