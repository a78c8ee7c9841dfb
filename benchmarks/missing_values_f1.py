"""The main job on a table with values missing completely at random, against the same
table complete: F1 of ``dpggm graph FILE --rho 1`` (default options: ``--missing impute``,
false-discovery selection) against the true chain, and the validity of each record.

Each seed draws a raw-unit 12-node chain (``make_raw_chain``, n = 20 000), writes it as a
CSV, then blanks a share of its cells (15 % by default) at random and writes that too.
Both files go through the command line as a user would run it, without a seed: every run
is a release (``validity`` must be ``valid``), so the figures vary from run to run.

    nice -n 10 python3 benchmarks/missing_values_f1.py                 # 5 seeds, 15 %
    nice -n 10 python3 benchmarks/missing_values_f1.py --share 0.3 --seeds 3
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

from dpggm.datasets import make_raw_chain


def graph_f1(path: Path, out: Path, truth: np.ndarray, columns: list[str]) -> dict:
    command = [sys.executable, "-m", "dpggm", "graph", str(path), "--rho", "1",
               "--out", str(out), "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()}")
    record = json.loads((out / "result.json").read_text(encoding="utf-8"))
    edges = pd.read_csv(out / "edges.csv")
    index = {name: j for j, name in enumerate(columns)}
    chosen = np.zeros_like(truth, dtype=bool)
    for source, target in zip(edges["source"], edges["target"]):
        chosen[index[source], index[target]] = chosen[index[target], index[source]] = True
    rows, cols = np.triu_indices(len(columns), 1)
    found, real = chosen[rows, cols], truth[rows, cols]
    tp = int((found & real).sum())
    return {"edges": int(found.sum()), "true_positives": tp,
            "f1": 2 * tp / max(int(found.sum()) + int(real.sum()), 1),
            "validity": record["privacy"]["validity"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--share", type=float, default=0.15, help="share of cells blanked")
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--columns", type=int, default=12)
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for seed in range(args.seeds):
            frame, truth = make_raw_chain(n_samples=args.rows, n_features=args.columns,
                                          random_state=seed)
            complete = folder / f"complete{seed}.csv"
            frame.to_csv(complete, index=False)
            holes = np.random.default_rng(1000 + seed).random(frame.shape) < args.share
            frame.mask(holes).to_csv(folder / f"missing{seed}.csv", index=False)
            for name in ("complete", "missing"):
                row = graph_f1(folder / f"{name}{seed}.csv", folder / f"{name}{seed}-out",
                               truth, list(frame.columns))
                results.append({"seed": seed, "table": name, **row})
                print(json.dumps(results[-1]), flush=True)
    table = pd.DataFrame(results)
    summary = table.groupby("table")[["edges", "f1"]].mean()
    print(summary.to_string())
    gap = summary.loc["complete", "f1"] - summary.loc["missing", "f1"]
    print(f"F1 complete - F1 with {args.share:.0%} missing: {gap:+.3f}; validity: "
          f"{sorted(set(table['validity']))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
