"""``dpggm graph`` on a Likert questionnaire under an (epsilon, delta) budget and under the
zCDP budget it is run in: ranges, clipping, exact spending and edge F1, side by side.

The questionnaire is :func:`dpggm.datasets.make_questionnaire` (5 latent factors x 5
items, answers 1-6 cut from a Gaussian, n = 2 400). For each seed the command line is run
three times on the same CSV, in fresh processes, with the default secure randomness:

* ``--epsilon 1 --delta 1e-6``;
* ``--rho R`` with ``R`` the largest rho whose tight conversion implies (1, 1e-6);
* ``--non-private`` (the reference graph).

Printed per run: whether every item's released range covers its six answers, the share of
rows with a value outside its range (computed here, by the curator, from the released
ranges), whether the steps spend exactly the budget, and the edge F1 against the
non-private graph.

Run: ``python benchmarks/questionnaire_budget_forms.py [--seeds 5] [--skew 0.0]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from dpggm.datasets import make_questionnaire
from dpggm.privacy.conversion import zcdp_rho_for


def _graph(data: Path, out: Path, *budget: str) -> dict:
    subprocess.run([sys.executable, "-m", "dpggm", "graph", str(data), *budget, "--out",
                    str(out), "--quiet"], check=True, capture_output=True)
    return json.loads((out / "result.json").read_text())


def _edges(out: Path, names: list[str]) -> np.ndarray:
    edges = pd.read_csv(out / "edges.csv")
    index = {n: i for i, n in enumerate(names)}
    adjacency = np.zeros((len(names), len(names)), dtype=bool)
    for a, b in zip(edges["source"], edges["target"]):
        adjacency[index[a], index[b]] = adjacency[index[b], index[a]] = True
    return adjacency


def _f1(estimate: np.ndarray, reference: np.ndarray) -> float:
    upper = np.triu_indices(estimate.shape[0], 1)
    e, r = estimate[upper], reference[upper]
    tp = np.sum(e & r)
    return 2 * tp / max(e.sum() + r.sum(), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--skew", type=float, default=0.0)
    args = parser.parse_args()
    rho = zcdp_rho_for(1.0, 1e-6)
    print(f"questionnaire: 25 items, answers 1-6, n = 2400, skew {args.skew}; "
          f"(1, 1e-6)-DP is implied by rho = {rho:.6g}-zCDP")
    print("seed  budget            items covered  rows outside  exact spend  F1 vs non-private")
    scores: dict[str, list[float]] = {"epsilon-delta": [], "rho": []}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for seed in range(args.seeds):
            frame, _ = make_questionnaire(n_samples=2400, skew=args.skew, random_state=seed)
            data = root / f"q{seed}.csv"
            frame.to_csv(data, index=False)
            names = list(frame.columns)
            _graph(data, root / f"np{seed}", "--non-private")
            reference = _edges(root / f"np{seed}", names)
            runs = {"epsilon-delta": ("--epsilon", "1", "--delta", "1e-6"),
                    "rho": ("--rho", repr(rho))}
            for label, budget in runs.items():
                out = root / f"{label}{seed}"
                record = _graph(data, out, *budget)
                ranges = record["privacy"]["bounds"]["ranges"]
                lower, upper = np.array(ranges["lower"]), np.array(ranges["upper"])
                X = frame.to_numpy()
                covered = int(np.sum((lower <= X.min(axis=0)) & (upper >= X.max(axis=0))))
                outside = float(np.mean(np.any((X < lower) | (X > upper), axis=1)))
                exact = record["privacy"]["notes"]["spent_exactly_total"]
                f1 = _f1(_edges(out, names), reference)
                scores[label].append(f1)
                print(f"{seed:4d}  {label:16s}  {covered:2d} of 25       {100 * outside:5.1f} %"
                      f"      {str(exact):5s}        {f1:.3f}")
    for label, values in scores.items():
        print(f"mean F1, {label}: {np.mean(values):.3f}")
    print(f"difference of the means: {abs(np.mean(scores['epsilon-delta']) - np.mean(scores['rho'])):.3f}")


if __name__ == "__main__":
    main()
