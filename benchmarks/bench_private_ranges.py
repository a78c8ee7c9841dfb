"""Private ranges (``bounds="auto"``) on the tables people have: skewed Likert items, binary
columns, mixed tables, continuous columns -- what is clipped, and what the graph loses.

Every figure is measured by the curator from the released ranges (rows with a value
outside its column's range are clipped onto the range) and from seeded fits: this is an
experiment, not a release. Sections:

``likert``
    20 Likert items (answers 1-6, four factors of five items, loading 0.7), 8 of them with
    78 % of their answers on level 5 (2/3/4/6.6/78/7 %); n in {442, 1000, 2500}; rho = 1
    and (epsilon, delta) = (1, 1e-6). Per cell: the bound share, the untied share the plan
    keeps apart (``plan_.notes``), the mean over runs of the worst item's share of rows
    outside its range, the runs in which every item kept under 5 % of its rows inside, the
    mean share outside over the skewed items, and the mean number of items whose range
    leaves out a level that holds more than 2 % of the rows, and the edge F1 against the
    non-private BH graph (see ``binary``). A refused cell says so (the plan refuses private
    ranges that cannot locate their columns).
``binary``
    A 14-node Gaussian chain in raw units whose last four columns are cut into 0/1 flags
    split 50/50, 80/20, 90/10 and 95/5; n in {1000, 5000}; rho = 1. Per flag: mean share of
    rows outside its range and how often both values lie inside it; edge F1 against the
    non-private BH graph of the same table (:func:`bh_graph`: sample partial correlations,
    Fisher-z tests, Benjamini-Hochberg at 0.1 -- the same for every version).
``continuous``
    ``make_raw_chain`` (p = 10, n = 20 000; p = 30, n = 2 000), rho = 1: edge F1 against the
    true chain, the false-discovery proportion of the selected edges, and the coverage of
    the 90 % intervals of the population partial correlations (all pairs, true edges);
    and scikit-learn's diabetes (442 x 10), breast cancer (569 x 30) and wine (178 x 13):
    edge F1 against the non-private BH graph at rho = 1, with the default false-discovery
    selection and with ``select="threshold"``.

To compare two versions, run the script under each (``PYTHONPATH=<src>``): it uses only
``PrivateGraph`` and its fitted attributes.

Usage::

    nice -n 10 python3 benchmarks/bench_private_ranges.py [--seeds 8] [--sections likert ...]
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import pandas as pd
from scipy.stats import norm

from dpggm import PrivateGraph
from dpggm.datasets import make_chain, make_raw_chain
from dpggm.privacy.budgets import ZCDP, ApproxDP

BUDGETS = {"rho=1": ZCDP(1.0), "(1, 1e-6)": ApproxDP(1.0, 1e-6)}


def skewed_items(n: int, *, seed: int, n_items: int = 20, n_skewed: int = 8,
                 peak: float = 0.78) -> tuple[pd.DataFrame, np.ndarray]:
    """Likert answers 1-6 cut from a four-factor Gaussian; ``n_skewed`` items put ``peak``
    of their answers on level 5."""
    rng = np.random.default_rng(seed)
    factors = 4
    per = n_items // factors
    loading = 0.7
    latent = (loading * np.repeat(rng.standard_normal((n, factors)), per, axis=1)
              + math.sqrt(1 - loading**2) * rng.standard_normal((n, n_items)))
    symmetric = norm.ppf(np.arange(1, 6) / 6)
    shares = np.array([0.1, 0.15, 0.2, 0.22, 0.0, 0.33]) * (1 - peak)
    shares[4] = peak
    peaked = norm.ppf(np.cumsum(shares)[:-1])
    skewed = np.sort(rng.permutation(n_items)[:n_skewed])
    X = np.empty((n, n_items))
    for j in range(n_items):
        X[:, j] = 1 + np.searchsorted(peaked if j in skewed else symmetric, latent[:, j])
    return pd.DataFrame(X, columns=[f"item_{j + 1}" for j in range(n_items)]), skewed


def _outside(graph: PrivateGraph, n: int) -> np.ndarray:
    return np.array(list(graph.clipping_["outside_by_column"].values()), dtype=float) / n


def _levels_left_out(graph: PrivateGraph, X: pd.DataFrame, share: float = 0.02) -> int:
    """Items whose range leaves out a level held by more than ``share`` of the rows."""
    values = X.to_numpy()
    out = 0
    for j in range(values.shape[1]):
        levels, counts = np.unique(values[:, j], return_counts=True)
        held = levels[counts > share * values.shape[0]]
        lower, upper = graph.ranges_.lower[j], graph.ranges_.upper[j]
        out += bool(np.any((held < lower) | (held > upper)))
    return out


def _fit(X, budget, seed, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateGraph(budget=budget, random_state=seed, **options).fit(X)


def bh_graph(X: pd.DataFrame, fdr: float = 0.1) -> np.ndarray:
    """The non-private reference graph, independent of the library's version: the sample
    partial correlations of the complete rows, Fisher-z tests, Benjamini-Hochberg at
    ``fdr``."""
    values = X.dropna().to_numpy(dtype=float)
    n, p = values.shape
    precision = np.linalg.inv(np.cov(values, rowvar=False))
    d = np.sqrt(np.diag(precision))
    partial = -precision / np.outer(d, d)
    iu = np.triu_indices(p, 1)
    z = np.arctanh(np.clip(partial[iu], -0.999999, 0.999999)) * math.sqrt(n - p - 1)
    pvalues = 2 * norm.sf(np.abs(z))
    order = np.argsort(pvalues)
    m = pvalues.size
    passed = pvalues[order] <= fdr * np.arange(1, m + 1) / m
    keep = np.zeros(m, dtype=bool)
    if passed.any():
        keep[order[: np.max(np.nonzero(passed)[0]) + 1]] = True
    graph = np.zeros((p, p), dtype=bool)
    graph[iu] = keep
    return graph | graph.T


def _f1(found: np.ndarray, truth: np.ndarray) -> float:
    iu = np.triu_indices(truth.shape[0], 1)
    f, t = found[iu], truth[iu]
    tp = np.sum(f & t)
    if not f.any() and not t.any():
        return 1.0
    return float(2 * tp / max(f.sum() + t.sum(), 1))


def likert(seeds: int) -> None:
    print("\n== likert: 20 items 1-6, 8 with 78 % on level 5 ==")
    print(f"{'n':>5} {'budget':>10} {'share':>6} {'U*':>6} {'worst':>7} {'ok<5%':>6} "
          f"{'skewed':>7} {'levels':>7} {'F1':>6}")
    for n in (442, 1000, 2500):
        for label, budget in BUDGETS.items():
            worst, ok, skew_out, left, f1, refused = [], 0, [], [], [], None
            share = kept = "-"
            for seed in range(seeds):
                X, skewed = skewed_items(n, seed=seed)
                try:
                    graph = _fit(X, budget, seed)
                except ValueError as exc:
                    refused = str(exc)
                    break
                out = _outside(graph, n)
                worst.append(out.max())
                ok += bool(out.max() < 0.05)
                skew_out.append(out[skewed].mean())
                left.append(_levels_left_out(graph, X))
                f1.append(_f1(graph.adjacency_, bh_graph(X)))
                share = graph.plan_.notes.get("bound_fraction", "-")
                kept = graph.plan_.notes.get("tied_columns_keep_levels_from_untied_share", "-")
            if refused is not None:
                print(f"{n:>5} {label:>10}  refused: {refused[:90]}...")
                continue
            kept = f"{kept:.3f}" if isinstance(kept, float) else kept
            print(f"{n:>5} {label:>10} {share:>6} {kept:>6} {np.mean(worst):>7.3f} "
                  f"{ok:>3}/{seeds:<2} {np.mean(skew_out):>7.3f} {np.mean(left):>7.2f} "
                  f"{np.mean(f1):>6.3f}")


def _mixed_table(n: int, seed: int) -> tuple[pd.DataFrame, list[str]]:
    base = make_chain(n_samples=n, n_features=14, random_state=seed)
    z = base.X / np.sqrt(np.diag(base.covariance))
    means = np.geomspace(3.0, 300.0, 10)
    scales = np.geomspace(0.5, 20.0, 10)
    frame = pd.DataFrame(means + scales * z[:, :10], columns=[f"x{j}" for j in range(10)])
    flags = []
    for j, minority in zip(range(10, 14), (0.5, 0.2, 0.1, 0.05)):
        name = f"flag_{round(100 * (1 - minority))}_{round(100 * minority)}"
        frame[name] = (z[:, j] > norm.ppf(1 - minority)).astype(float)
        flags.append(name)
    return frame, flags


def binary(seeds: int) -> None:
    print("\n== binary: 10 raw Gaussian columns + 4 flags, chain of 14, rho = 1 ==")
    for n in (1000, 5000):
        outside: dict[str, list[float]] = {}
        kept: dict[str, int] = {}
        f1 = []
        for seed in range(seeds):
            X, flags = _mixed_table(n, seed)
            graph = _fit(X, ZCDP(1.0), seed)
            reference = bh_graph(X)
            out = _outside(graph, n)
            for name in flags:
                j = list(X.columns).index(name)
                outside.setdefault(name, []).append(out[j])
                kept[name] = kept.get(name, 0) + bool(
                    graph.ranges_.lower[j] <= 0.0 and graph.ranges_.upper[j] >= 1.0)
            f1.append(_f1(graph.adjacency_, reference))
        cells = ", ".join(f"{k}: {np.mean(v):.3f} out, both values in {kept[k]}/{seeds}"
                          for k, v in outside.items())
        print(f"n = {n:>5}: {cells}; F1 vs non-private {np.mean(f1):.3f}")


def continuous(seeds: int) -> None:
    print("\n== continuous, rho = 1 ==")
    for p, n in ((10, 20000), (30, 2000)):
        f1, fdp, cover_all, cover_edges, share = [], [], [], [], set()
        truth_partial = np.zeros((p, p))
        index = np.arange(p - 1)
        truth_partial[index, index + 1] = truth_partial[index + 1, index] = -0.5
        for seed in range(seeds):
            X, adjacency = make_raw_chain(n_samples=n, n_features=p, random_state=seed)
            graph = _fit(X, ZCDP(1.0), seed)
            share.add(graph.plan_.notes.get("bound_fraction"))
            found = graph.adjacency_
            f1.append(_f1(found, adjacency))
            iu = np.triu_indices(p, 1)
            selected = found[iu]
            false = np.sum(selected & ~adjacency[iu])
            fdp.append(false / max(selected.sum(), 1))
            table = graph.inference_
            names = list(X.columns)
            j = table["source"].map(names.index).to_numpy()
            k = table["target"].map(names.index).to_numpy()
            target = truth_partial[j, k]
            inside = (table["ci_low"].to_numpy() <= target) & (target <= table["ci_high"].to_numpy())
            cover_all.append(inside.mean())
            cover_edges.append(inside[adjacency[j, k]].mean())
        print(f"raw chain p = {p:>2}, n = {n:>5}: share {sorted(share)}, F1 {np.mean(f1):.3f}, "
              f"FDP {np.mean(fdp):.3f}, 90 % coverage all pairs {np.mean(cover_all):.3f}, "
              f"true edges {np.mean(cover_edges):.3f}")
    from sklearn import datasets

    for name, loader in (("diabetes", datasets.load_diabetes), ("breast cancer",
                         datasets.load_breast_cancer), ("wine", datasets.load_wine)):
        data = loader()
        X = pd.DataFrame(data.data, columns=[str(c) for c in data.feature_names])
        reference = bh_graph(X)
        f1: dict[str, list[float]] = {"fdr": [], "threshold": []}
        shares: set = set()
        for seed in range(seeds):
            try:
                for select in f1:
                    graph = _fit(X, ZCDP(1.0), seed, select=select)
                    f1[select].append(_f1(graph.adjacency_, reference))
            except ValueError as exc:
                print(f"{name}: refused: {str(exc)[:100]}...")
                break
            shares.add(graph.plan_.notes.get("bound_fraction"))
        if f1["fdr"]:
            print(f"{name} {X.shape[0]} x {X.shape[1]}: share {sorted(shares)}, F1 vs the "
                  f"non-private BH graph ({int(reference.sum() // 2)} edges): select=fdr "
                  f"{np.mean(f1['fdr']):.3f}, select=threshold {np.mean(f1['threshold']):.3f}")


SECTIONS = {"likert": likert, "binary": binary, "continuous": continuous}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--sections", nargs="+", choices=sorted(SECTIONS),
                        default=list(SECTIONS))
    args = parser.parse_args()
    for section in args.sections:
        start = time.perf_counter()
        SECTIONS[section](args.seeds)
        print(f"({section}: {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
