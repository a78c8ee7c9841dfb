"""``dpggm graph`` on a generated clinical questionnaire export, in every file format it is
written in, as a new user would run it.

The export is :func:`dpggm.datasets.make_questionnaire_export`: an ``id``, a visit
``date``, a categorical ``sex``, 20 Likert items answered 1-6 (8 of them with about 80 % of
their answers on one level), 8 % of the item cells empty (written ``NA``), three trailing
blank lines (or empty rows / cases) -- written as CSV, gzip CSV, a semicolon /
decimal-comma CSV, an Excel workbook and an SPSS file. On each file, in a fresh process
with the default secure randomness::

    dpggm graph FILE --rho 1 --drop id,date,sex [--delimiter ';' --decimal ',']

Measured per file (from the released ``result.json`` and ``edges.csv``, against the
generated answers, which the benchmark knows):

* ``n``: the number of records the release states (must equal the respondents);
* ``outside``: the largest share, over the items, of respondents whose answer lies
  outside the item's released range (must stay under 5 %), and the share of respondents
  with any answer outside its item's range;
* ``within``: the share of the release's edges that are edges of the non-private
  Benjamini-Hochberg graph of the complete items (every respondent's answers before cells
  were emptied; Fisher's z test of each sample partial correlation, FDR 0.1; must be at
  least 85 %), the share of the reference edges it finds, and the share of its edges
  that join items of one factor (the true graph).

Run: ``python3 benchmarks/questionnaire_export.py [--respondents 2000] [--repeats 1]
[--seed 0]`` (needs ``dpggm[formats]`` for the workbook and the SPSS file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpggm.datasets import make_questionnaire_export

ROOT = Path(__file__).resolve().parents[1]


def reference_edges(export, fdr: float = 0.1) -> set[frozenset[str]]:
    """The non-private Benjamini-Hochberg graph of the complete items (every answer, before
    cells were emptied): every pair's sample partial correlation, tested by Fisher's z
    (``sqrt(n - p - 1) atanh(r)``), selected at false-discovery rate ``fdr``."""
    from scipy.stats import norm

    complete = export.complete[export.items].to_numpy()
    n, p = complete.shape
    precision = np.linalg.inv(np.cov(complete, rowvar=False))
    scale = np.sqrt(np.diag(precision))
    partial = -precision / np.outer(scale, scale)
    upper = np.triu_indices(p, 1)
    z = np.sqrt(n - p - 1) * np.arctanh(partial[upper])
    pvalues = 2 * norm.sf(np.abs(z))
    order = np.argsort(pvalues)
    passed = pvalues[order] <= fdr * np.arange(1, pvalues.size + 1) / pvalues.size
    keep = order[: (np.flatnonzero(passed).max() + 1) if passed.any() else 0]
    return {frozenset((export.items[upper[0][k]], export.items[upper[1][k]])) for k in keep}


def run_graph(path: Path, options: tuple[str, ...], out: Path) -> tuple[dict, pd.DataFrame,
                                                                         float]:
    command = [sys.executable, "-m", "dpggm", "graph", str(path), "--rho", "1", "--drop",
               "id,date,sex", *options, "--out", str(out), "--overwrite", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    record = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return record, pd.read_csv(out / "edges.csv"), seconds


def outside_shares(export, record: dict) -> tuple[float, float, str]:
    """(largest share of respondents outside one item's released range, share outside
    any item's range); missing answers count as inside (they are imputed at the
    center)."""
    features = record["features"]
    ranges = record["privacy"]["bounds"]["ranges"]
    low = dict(zip(features, ranges["lower"]))
    high = dict(zip(features, ranges["upper"]))
    answers = export.answers[export.items]
    outside = np.zeros(answers.shape, dtype=bool)
    for k, item in enumerate(export.items):
        values = answers[item].to_numpy()
        outside[:, k] = (values < low[item]) | (values > high[item])
    worst = int(outside.mean(axis=0).argmax())
    item = export.items[worst]
    where = f"{item} [{low[item]:.3g}, {high[item]:.3g}]" if outside[:, worst].any() else ""
    return float(outside.mean(axis=0).max()), float(outside.any(axis=1).mean()), where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--respondents", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as folder:
        export = make_questionnaire_export(folder, n_respondents=args.respondents,
                                           random_state=args.seed)
        reference = reference_edges(export)
        skewed = ", ".join(f"{k} {export.top_share[k]:.0%}" for k in export.skewed)
        print(f"{export.n_respondents} respondents; skewed items (share on the top level): "
              f"{skewed}; reference graph: {len(reference)} edges")
        print(f"{'file':<22}{'n':>6}{'max out':>9}{'any out':>9}{'edges':>7}{'within':>8}"
              f"{'found':>7}{'true':>7}{'s':>7}")
        runs = []
        for kind, path in export.files.items():
            for repeat in range(args.repeats):
                out = Path(folder) / f"out-{kind}-{repeat}"
                record, edges, seconds = run_graph(path, export.options[kind], out)
                largest, any_item, where = outside_shares(export, record)
                found = {frozenset((a, b)) for a, b in edges[["source", "target"]].itertuples(
                    index=False)}
                within = len(found & reference) / len(found) if found else float("nan")
                factor = dict(zip(export.items, export.factor))
                true = (sum(factor[a] == factor[b] for a, b in map(tuple, found)) / len(found)
                        if found else float("nan"))
                recall = len(found & reference) / len(reference) if reference else float("nan")
                print(f"{path.name:<22}{record['n_samples']:>6}{largest:>9.1%}{any_item:>9.1%}"
                      f"{len(found):>7}{within:>8.1%}{recall:>7.0%}{true:>7.0%}{seconds:>7.1f}"
                      f"  {where}")
                runs.append((record["n_samples"] == export.n_respondents, largest, within))
        count = len(runs)
        withins = np.array([w for _, _, w in runs if w == w])
        print(f"{count} runs: n = respondents in {sum(ok for ok, _, _ in runs)}; under 5 % of "
              f"rows outside every item's range in {sum(o < 0.05 for _, o, _ in runs)} (worst "
              f"{max(o for _, o, _ in runs):.1%}); edges within the reference >= 85 % in "
              f"{int((withins >= 0.85).sum())} of {withins.size} with edges (mean "
              f"{withins.mean():.1%}, min {withins.min():.1%})")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
