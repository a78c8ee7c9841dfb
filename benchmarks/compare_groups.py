"""Calibration of ``PrivateGraphComparison`` (``dpggm compare``): is the network of one group
different from another's?

Two groups of ``--rows`` records each of ``--columns`` variables (``make_group_networks``:
raw units, a chain of partial correlation ``--chain`` shared by both groups, and in the
first group ``--differences`` more edges of partial correlation ``--difference``), compared
with ``PrivateGraphComparison(budget=ZCDP(--rho))`` under replace-one neighbours with private
group sizes (each group's release at half the budget). Against the population:

* **planted differences**: the share of runs in which every planted difference is selected
  (and each one's detection rate);
* **FDR** of the selected differences: the mean false-discovery proportion with its
  Monte-Carlo standard error;
* **the global test's size**: with the groups' networks equal (``--null-runs`` comparisons
  of two groups without extra edges), the share of runs whose largest-|z| p-value is at
  most 0.05 (and the Sidak bound's), with the Monte-Carlo error of a share;
* **centrality coverage**: the share of nodes whose 90 % interval of strength (and of
  expected influence; the default support, Holm's family-wise selection) covers the
  population value ``sum_k |rho_jk|`` (``sum_k rho_jk``),
  per group, and of the groups' difference, over every node and run (the calibration cell
  is this one: n = 4 000 per group, p = 15, chain 0.3).

Usage (niced on a shared machine; about 3 s a comparison)::

    nice -n 10 python3 benchmarks/compare_groups.py --runs 60 --null-runs 120 \
        --json benchmarks/results/compare_groups_replace.json
    nice -n 10 python3 benchmarks/compare_groups.py --runs 30 --null-runs 60 \
        --neighbors add-remove --seed 1000 --json benchmarks/results/compare_groups_add_remove.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings

import numpy as np

from dpggm import ZCDP
from dpggm.datasets import make_group_networks
from dpggm.estimators.comparison import PrivateGraphComparison


def _population(partial: np.ndarray, support: str, selected: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Every node's population strength and expected influence."""
    R = partial.copy()
    np.fill_diagonal(R, 0.0)
    return np.abs(R).sum(axis=1), R.sum(axis=1)


def compare_once(data, rho: float, seed: int, neighbors: str) -> PrivateGraphComparison:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateGraphComparison(
            budget=ZCDP(rho), levels=data.levels, group="group", neighbors=neighbors,
            random_state=seed).fit(data.frame)


def _covered(low: np.ndarray, high: np.ndarray, truth: np.ndarray) -> np.ndarray:
    return (low <= truth) & (truth <= high)


def planted_cell(args: argparse.Namespace) -> dict:
    """Runs with planted differences: detection, FDR, centrality coverage."""
    found_all, detections, fdp, rejected = [], [], [], []
    coverage: dict[str, list[np.ndarray]] = {}
    timings = []
    for run in range(args.runs):
        data = make_group_networks(
            n_samples=(args.rows, args.rows), n_features=args.columns, chain=args.chain,
            n_differences=args.differences, difference=args.difference,
            random_state=args.seed + run)
        start = time.perf_counter()
        est = compare_once(data, args.rho, 10_000 + args.seed + run, args.neighbors)
        timings.append(time.perf_counter() - start)
        result = est.difference_inference_
        truth = data.difference_matrix()[result.source, result.target]
        planted = np.abs(truth) > 1e-12
        selected = np.asarray(result.selected, dtype=bool)
        detections.append(selected[planted])
        found_all.append(bool(selected[planted].all()))
        false = int(np.sum(selected & ~planted))
        fdp.append(false / max(int(selected.sum()), 1))
        rejected.append(est.global_test_["p_value"] is not None
                        and est.global_test_["p_value"] <= 0.05)
        frame = est.centrality_
        for level in data.levels:
            rows = frame[frame["group"] == level]
            strength, influence = _population(data.partial_correlations[level], "all")
            coverage.setdefault(f"strength {level}", []).append(_covered(
                rows["strength_ci_low"].to_numpy(), rows["strength_ci_high"].to_numpy(),
                strength))
            coverage.setdefault(f"expected influence {level}", []).append(_covered(
                rows["expected_influence_ci_low"].to_numpy(),
                rows["expected_influence_ci_high"].to_numpy(), influence))
        first, second = (data.partial_correlations[level] for level in data.levels)
        s1, e1 = _population(first, "all")
        s2, e2 = _population(second, "all")
        diff = est.centrality_differences_
        coverage.setdefault("strength difference", []).append(_covered(
            diff["strength_ci_low"].to_numpy(), diff["strength_ci_high"].to_numpy(), s1 - s2))
        coverage.setdefault("expected influence difference", []).append(_covered(
            diff["expected_influence_ci_low"].to_numpy(),
            diff["expected_influence_ci_high"].to_numpy(), e1 - e2))
        print(f"  run {run + 1}/{args.runs}: selected {int(selected.sum())}, planted found "
              f"{int(selected[planted].sum())}/{int(planted.sum())}, false {false}, "
              f"global p {est.global_test_['p_value']:.3g} ({timings[-1]:.1f} s)", flush=True)
    fdp_array = np.array(fdp)
    detect = np.array(detections, dtype=float)
    out = {
        "runs": args.runs,
        "planted_all_found": float(np.mean(found_all)),
        "planted_found_each": detect.mean(axis=0).round(3).tolist(),
        "fdr": float(fdp_array.mean()),
        "fdr_mc_error": float(fdp_array.std(ddof=1) / math.sqrt(len(fdp_array))),
        "global_rejects": float(np.mean(rejected)),
        "detectable_difference": float(est.detectable_difference_),
        "coverage": {k: float(np.mean(np.concatenate(v))) for k, v in coverage.items()},
        "coverage_nodes": int(sum(len(v) for v in next(iter(coverage.values())))),
        "seconds_per_comparison": float(np.median(timings)),
    }
    return out


def null_cell(args: argparse.Namespace) -> dict:
    """Equal networks: the global test's size."""
    p_values, sidak, any_selected = [], [], []
    for run in range(args.null_runs):
        data = make_group_networks(
            n_samples=(args.rows, args.rows), n_features=args.columns, chain=args.chain,
            n_differences=0, random_state=50_000 + args.seed + run)
        est = compare_once(data, args.rho, 60_000 + args.seed + run, args.neighbors)
        p_values.append(est.global_test_["p_value"])
        sidak.append(est.global_test_["sidak_p_value"])
        any_selected.append(bool(est.difference_inference_.selected.any()))
        if (run + 1) % 10 == 0:
            print(f"  null run {run + 1}/{args.null_runs}: rejected so far "
                  f"{np.mean(np.array(p_values) <= 0.05):.3f}", flush=True)
    p = np.array(p_values, dtype=float)
    size = float(np.mean(p <= 0.05))
    return {
        "runs": args.null_runs,
        "size_at_0.05": size,
        "size_mc_error": math.sqrt(max(size * (1 - size), 0.05 * 0.95) / len(p)),
        "sidak_size_at_0.05": float(np.mean(np.array(sidak) <= 0.05)),
        "any_difference_selected": float(np.mean(any_selected)),
        "null_p_value_ks": _ks(p),
    }


def _ks(p: np.ndarray) -> float:
    from scipy import stats

    return float(stats.kstest(p, "uniform").pvalue)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--null-runs", type=int, default=100)
    parser.add_argument("--rows", type=int, default=4000, help="records per group")
    parser.add_argument("--columns", type=int, default=15)
    parser.add_argument("--chain", type=float, default=0.3)
    parser.add_argument("--differences", type=int, default=3)
    parser.add_argument("--difference", type=float, default=0.35)
    parser.add_argument("--rho", type=float, default=1.0)
    parser.add_argument("--neighbors", default="replace", choices=("replace", "add-remove"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=str, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    print(f"planted differences: {args.runs} runs of 2 x {args.rows} records, p = "
          f"{args.columns}, rho = {args.rho}, {args.neighbors}", flush=True)
    planted = planted_cell(args) if args.runs else {}
    print(f"equal networks: {args.null_runs} runs", flush=True)
    null = null_cell(args) if args.null_runs else {}
    result = {"settings": vars(args), "planted": planted, "null": null}
    print(json.dumps(result, indent=2))
    if planted:
        print(f"planted differences all found in {planted['planted_all_found']:.3f} of runs "
              f"(need >= 0.8); FDR {planted['fdr']:.3f} +- {planted['fdr_mc_error']:.3f} "
              "(need <= 0.1 + MC error)")
        print("centrality coverage (90 % intervals, need 0.85-0.95): " + ", ".join(
            f"{k} {v:.3f}" for k, v in planted["coverage"].items()))
    if null:
        print(f"global test size at 0.05: {null['size_at_0.05']:.3f} +- "
              f"{null['size_mc_error']:.3f} (Sidak {null['sidak_size_at_0.05']:.3f})")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
