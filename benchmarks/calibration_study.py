"""Calibration study of ``dpggm.solvers.inference.edge_inference`` through ``PrivateGraph``.

For every cell (graph, p, n, rho) the study draws ``--fits`` independent samples in raw
units (column means 3..300, scales 0.5..20), fits ``PrivateGraph(budget=ZCDP(rho))`` on each
(private ranges, private row-norm bound, private centering, Gaussian release, graphical
lasso) and runs the edge inference on the release alone. Against the population partial
correlations of the generating model it measures:

* the false-discovery rate of the selected edges (mean false-discovery proportion over the
  fits, with its Monte-Carlo standard error);
* the coverage of the intervals (all pairs, true edges, non-edges);
* the power (share of true edges selected) and the standard deviation of the null
  z-scores (1 when calibrated);
* the smallest |partial correlation| detected with 80 % power, from a probit fit of the
  detections of every edge in every fit against its |partial correlation| (the edges'
  strengths are drawn afresh in every fit, log-uniformly over [0.01, 0.45], so the curve
  is read over a continuum), next to ``detectable_partial_correlation`` from public
  parameters only.

Graphs (edges fixed per (kind, p); strengths drawn log-uniformly over [0.01, 0.45] in
every fit, with random signs): ``chain`` (path), ``hub`` (groups of 10 nodes, one hub
joined to the other 9), ``random`` (2p edges drawn uniformly), ``strong`` (disjoint pairs
at 0.80-0.92 beside a chain of weak edges), ``pairs`` (isolated edges: what
``detectable()`` describes); ``--single-edge`` runs one edge of each strength in
``SINGLE_EDGE_STRENGTHS`` in an otherwise independent table. Distributions: Gaussian and
multivariate t with 5 degrees of freedom (same scatter matrix; its partial correlations are
the estimand). Budgets: ``--rho`` (zCDP) and ``--epsilon`` (at delta 1e-6).

On every release the three tests of ``edge_inference(test=...)`` are computed ("pilot" is
the test of earlier versions), so their FDR and power compare on the same releases;
``--table`` reprints runs with the power ratio and the acceptance summary.

The adapter ``release_from_private_graph`` is the only place that reads ``PrivateGraph``'s
fitted attributes; switch it when the estimator exposes its release plan.

Usage (on a shared machine run it niced; a full run takes about an hour per distribution)::

    nice -n 10 python3 benchmarks/calibration_study.py --reduced           # quick look
    nice -n 10 python3 benchmarks/calibration_study.py --fits 50 \\
        --distributions gaussian t5 --json calibration.json                 # the full grid
    nice -n 10 python3 benchmarks/calibration_study.py --chain-f1          # 30-node raw chain
    nice -n 10 python3 benchmarks/calibration_study.py --timing            # speed at p = 100

Options ``--norm-quantile``, ``--fdr-method``, ``--method`` and ``--clipping-correction``
compare the alternatives.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

from dpggm import ZCDP, PrivateGraph
from dpggm.datasets import make_raw_chain
from dpggm.solvers.inference import (
    RESCALED_VARIANCE,
    ClippingModel,
    edge_inference,
    expected_row_norm_bound,
    noise_calibrated_alpha,
)

GRAPHS = ("chain", "hub", "random", "strong", "pairs")
#: The tests compared on the same releases (``edge_inference(test=...)``): "pilot" is the
#: test of earlier versions (main at 72c8928), "null-pilot" the default.
TESTS = ("null-pilot", "wald", "pilot")
#: The single-edge grid: |partial correlation| of the one edge of an otherwise independent
#: table.
SINGLE_EDGE_STRENGTHS = (0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.75, 0.9)
FULL_GRID = {"p": (10, 30, 100), "n": (2000, 20000), "rho": (0.1, 1.0)}
REDUCED_GRID = {"p": (10, 30), "n": (2000, 20000), "rho": (0.1, 1.0)}
WEAKEST, STRONGEST = 0.01, 0.45


# ---------------------------------------------------------------------------------------
# models and data
# ---------------------------------------------------------------------------------------


def study_precision(kind: str, p: int, draw: np.random.Generator | None = None) -> np.ndarray:
    """The precision matrix of a study graph: the edges are fixed for each kind and size;
    their strengths are spread geometrically over [WEAKEST, STRONGEST] (fixed), or, with
    ``draw``, drawn log-uniformly from it, with random signs."""
    rng = np.random.default_rng([GRAPHS.index(kind), p])
    if kind == "chain":
        pairs = [(j, j + 1) for j in range(p - 1)]
    elif kind == "hub":
        pairs = []
        for first in range(0, p, 10):
            group = range(first, min(first + 10, p))
            pairs += [(first, k) for k in group if k != first]
    elif kind == "strong":
        return _strong_precision(p, rng if draw is None else draw)
    elif kind == "pairs":
        # Isolated edges of a sparse graph (what detectable() describes): disjoint pairs.
        pairs = [(j, j + 1) for j in range(0, p - 1, 2)]
    elif kind == "random":
        upper = np.transpose(np.triu_indices(p, 1))
        chosen = rng.choice(len(upper), size=min(2 * p, len(upper)), replace=False)
        pairs = [tuple(upper[k]) for k in chosen]
    else:
        raise ValueError(f"kind must be one of {GRAPHS}; got {kind!r}")
    if draw is None:
        strengths = np.geomspace(WEAKEST, STRONGEST, len(pairs))[rng.permutation(len(pairs))]
        signs = rng.choice([-1.0, 1.0], size=len(pairs))
    else:
        strengths = np.exp(draw.uniform(math.log(WEAKEST), math.log(STRONGEST), len(pairs)))
        signs = draw.choice([-1.0, 1.0], size=len(pairs))
    off = np.zeros((p, p))
    for (j, k), strength, sign in zip(pairs, strengths, signs):
        off[j, k] = off[k, j] = sign * strength
    # Unit diagonal when that is positive definite (partial correlations = the strengths);
    # otherwise the smallest diagonal with smallest eigenvalue 0.25.
    diagonal = max(1.0, 0.25 - float(np.linalg.eigvalsh(-off)[0]))
    return diagonal * np.eye(p) - off


def _strong_precision(p: int, rng: np.random.Generator) -> np.ndarray:
    """Strong edges beside weak ones (like the signalling graph of the issue that asked for
    it): ``max(1, p // 6)`` disjoint pairs with |partial correlation| uniform on
    [0.8, 0.92], a chain through the other variables with strengths log-uniform on
    [0.05, 0.3], and each pair's second variable joined to the chain by a weak edge
    (0.05-0.12); unit diagonal, so the partial correlations are the strengths (the
    smallest eigenvalue stays above 0.02)."""
    pairs = max(1, p // 6)
    off = np.zeros((p, p))
    signs = rng.choice([-1.0, 1.0], size=p)
    for index in range(pairs):
        j, k = 2 * index, 2 * index + 1
        off[j, k] = off[k, j] = signs[index] * rng.uniform(0.8, 0.92)
    rest = list(range(2 * pairs, p))
    for a, b in zip(rest[:-1], rest[1:]):
        off[a, b] = off[b, a] = rng.choice([-1.0, 1.0]) * math.exp(
            rng.uniform(math.log(0.05), math.log(0.3)))
    if rest:
        for index in range(pairs):
            k, link = 2 * index + 1, rest[index % len(rest)]
            off[k, link] = off[link, k] = rng.choice([-1.0, 1.0]) * rng.uniform(0.05, 0.12)
    for scale in (1.0, 0.8, 0.6, 0.4):
        # Shrink the weak edges until the matrix is safely positive definite.
        weak = np.where(np.abs(off) < 0.5, scale * off, off)
        if float(np.linalg.eigvalsh(np.eye(p) - weak)[0]) > 0.02:
            return np.eye(p) - weak
    raise AssertionError("no positive definite strong graph")  # pragma: no cover


def single_edge_precision(p: int, strength: float) -> np.ndarray:
    """An otherwise independent table with one edge of |partial correlation| ``strength``
    (between the first two variables)."""
    precision = np.eye(p)
    precision[0, 1] = precision[1, 0] = -strength
    return precision


def partial_correlations(precision: np.ndarray) -> np.ndarray:
    scale = np.sqrt(np.diag(precision))
    out = -precision / np.outer(scale, scale)
    np.fill_diagonal(out, 1.0)
    return out


def sample_raw(precision: np.ndarray, n: int, rng: np.random.Generator,
               distribution: str) -> pd.DataFrame:
    """``n`` records in raw units: Gaussian or multivariate t5 with scatter ``precision^-1``."""
    covariance = np.linalg.inv(precision)
    p = len(covariance)
    values = rng.standard_normal((n, p)) @ np.linalg.cholesky(covariance).T
    if distribution == "t5":
        values /= np.sqrt(rng.chisquare(5, size=(n, 1)) / 5)
    elif distribution != "gaussian":
        raise ValueError(f"distribution must be 'gaussian' or 't5'; got {distribution!r}")
    means = np.geomspace(3.0, 300.0, p)
    scales = np.geomspace(0.5, 20.0, p)
    scales[1::2] = scales[1::2][::-1]
    standardised = values / np.sqrt(np.diag(covariance))
    return pd.DataFrame(means + scales * standardised, columns=[f"x{j}" for j in range(p)])


# ---------------------------------------------------------------------------------------
# the adapter: what the inference needs from a fitted PrivateGraph
# ---------------------------------------------------------------------------------------


@dataclass
class Release:
    noisy_covariance: np.ndarray
    noise_variance: float
    n_samples: int
    precision: np.ndarray
    clipping: ClippingModel
    release_budget: float  # zCDP rho of the covariance release (public: depends on n, p)


def release_from_private_graph(graph: PrivateGraph) -> Release:
    """Read the release and its public description off a fitted ``PrivateGraph``
    (``graph.release_``: what its own inference reads)."""
    released = graph.release_
    step = next(s for s in graph.privacy_.noise["breakdown"] if s["step"] == "second moment")
    budget = step["budget"]
    return Release(
        noisy_covariance=released.statistic, noise_variance=released.noise_variance,
        n_samples=released.n_samples, precision=released.precision,
        clipping=released.clipping,
        release_budget=float(getattr(budget, "rho", float("nan"))),
    )


# ---------------------------------------------------------------------------------------
# one cell
# ---------------------------------------------------------------------------------------


def measured_threshold(strengths: np.ndarray, detected: np.ndarray,
                       target: float = 0.8) -> tuple[float, str]:
    """The |partial correlation| with ``target`` detection probability, by a probit fit
    ``P(detected) = Phi(b0 + b1 |r|)``; a note says when it lies outside the edges' range."""
    x = np.asarray(strengths, dtype=float)
    y = np.asarray(detected, dtype=float)
    if y.mean() >= 0.999:
        return float("nan"), f"< {x.min():.2f} (all detected)"
    if y.mean() <= 0.001:
        return float("nan"), f"> {x.max():.2f} (none detected)"

    def loss(beta):
        eta = beta[0] + beta[1] * x
        return -np.sum(y * stats.norm.logcdf(eta) + (1 - y) * stats.norm.logcdf(-eta))

    fit = optimize.minimize(loss, x0=np.array([-1.0, 5.0]), method="Nelder-Mead",
                            options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000})
    b0, b1 = fit.x
    if b1 <= 0:
        return float("nan"), "no increasing power curve"
    threshold = (stats.norm.ppf(target) - b0) / b1
    if threshold < x.min():
        return float(threshold), f"< {x.min():.2f} (extrapolated)"
    if threshold > x.max():
        return float(threshold), f"> {x.max():.2f} (extrapolated)"
    return float(threshold), ""


def threshold_mc_se(strengths: list[np.ndarray], detected: list[np.ndarray],
                    replicates: int = 200, seed: int = 0) -> float:
    """Monte-Carlo standard error of :func:`measured_threshold`: the spread of the
    threshold over bootstrap resamples of the fits (each fit's edges kept together)."""
    rng = np.random.default_rng(seed)
    fits = len(strengths)
    values = []
    for _ in range(replicates):
        chosen = rng.integers(0, fits, fits)
        threshold, note = measured_threshold(np.concatenate([strengths[i] for i in chosen]),
                                             np.concatenate([detected[i] for i in chosen]))
        if math.isfinite(threshold):
            values.append(threshold)
    return float(np.std(values, ddof=1)) if len(values) > replicates // 2 else float("nan")


def noise_amplification(precision: np.ndarray) -> float:
    """The median over the edges of the noise standard error of a partial correlation
    (under "no edge") relative to ``sigma / v``, for the population graph in rescaled
    units (per-coordinate variance ``v``): what ``detectable_partial_correlation`` assumes
    when told the graph."""
    scale = np.sqrt(np.diag(np.linalg.inv(precision)))
    theta = precision * np.outer(scale, scale) / RESCALED_VARIANCE  # inverse of v * corr
    d = np.diag(theta)
    G = theta @ theta
    squares = theta**2
    variance = (np.outer(np.diag(G), np.diag(G)) + G**2 - squares.T @ squares) / np.outer(d, d)
    rows, cols = np.triu_indices(len(theta), 1)
    edge = precision[rows, cols] != 0
    return float(np.median(np.sqrt(variance[rows, cols][edge]) * RESCALED_VARIANCE))


def planned_sigma(n: int, p: int, release_rho: float, norm_quantile: float) -> float:
    """The noise scale a release plan expects before the data: the Gaussian mechanism on
    the second moment (l2 sensitivity sqrt(2) B^2 / n) with the expected row-norm bound."""
    bound = expected_row_norm_bound(p, norm_quantile=norm_quantile)
    return math.sqrt(2.0) * bound**2 / n / math.sqrt(2.0 * release_rho)


def budget_of(rho: float | None, epsilon: float | None) -> object:
    """``ZCDP(rho)``, or ``ApproxDP(epsilon, 1e-6)``."""
    from dpggm import ApproxDP

    return ZCDP(rho) if epsilon is None else ApproxDP(epsilon, 1e-6)


def _fit(frame: pd.DataFrame, budget: object, rng: np.random.Generator, **options) -> PrivateGraph:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateGraph(budget=budget, random_state=int(rng.integers(2**31)),
                            **options).fit(frame)


def _held_correction_intervals(graph: PrivateGraph):
    """The fit's inference with the clipping correction held fixed in the standard errors
    (``correction_variance=False``, earlier versions), otherwise as ``graph.infer()``."""
    released = graph.release_
    return edge_inference(
        released.statistic, n_samples=released.n_samples,
        noise_variance=released.noise_variance, precision=released.precision,
        alpha=released.alpha, clipping=released.clipping, present=released.present,
        noise_distribution=released.noise_distribution,
        confidence_level=graph.confidence_level, fdr=graph.fdr, fdr_method=graph.fdr_method,
        correction_variance=False)


# over 120 lines: one loop over the fits that records every measure of the study, three
# tests on the same releases, then the summary of the cell.
def run_cell(kind: str, p: int, n: int, rho: float | None, *, distribution: str, fits: int,
             norm_quantile: float, fdr: float, fdr_method: str, method: str,
             clipping_correction: str, pilot_alpha_factor: float | None = None,
             epsilon: float | None = None, strength: float | None = None,
             bound_fraction: object = "auto", seed: int = 0) -> dict:
    """One cell; ``kind="single"`` is the one-edge table of |partial correlation|
    ``strength``."""
    budget = budget_of(rho, epsilon)
    pattern = (single_edge_precision(p, strength) if kind == "single"
               else study_precision(kind, p))
    rows, cols = np.triu_indices(p, 1)
    edge = pattern[rows, cols] != 0
    kind_index = GRAPHS.index(kind) if kind in GRAPHS else 9
    rng = np.random.default_rng([seed, kind_index, p, n, int((rho or 0) * 1000),
                                 int((epsilon or 0) * 1000), int((strength or 0) * 1000),
                                 0 if distribution == "gaussian" else 1])
    options = dict(norm_quantile=norm_quantile, fdr=fdr, fdr_method=fdr_method,
                   bound_fraction=bound_fraction)
    measures = {test: {"fdp": [], "power": [], "detected": []} for test in TESTS}
    reported = {"fdp": [], "power": [], "detected": []}
    cover, null_z, strengths, withheld, detectable_after, calibrated = [], [], [], [], [], []
    cover_held = []
    sigmas, bounds, budgets, fit_time, inference_time, clipped_share = [], [], [], [], [], []
    for _ in range(fits):
        # Fresh edge strengths in every fit: the power curve is read over a continuum.
        precision = pattern if kind == "single" else study_precision(kind, p, rng)
        truth = partial_correlations(precision)[rows, cols]
        frame = sample_raw(precision, n, rng, distribution)
        start = time.perf_counter()
        graph = _fit(frame, budget, rng, **options)
        fit_time.append(time.perf_counter() - start)
        release = release_from_private_graph(graph)
        start = time.perf_counter()
        results = {}
        for test in TESTS:
            if pilot_alpha_factor is None and method == "closed-form":
                results[test] = graph.infer(test=test, clipping_correction=clipping_correction)
                continue
            pilot: dict = {"precision": release.precision}
            if pilot_alpha_factor is not None:
                pilot = {"alpha": pilot_alpha_factor * noise_calibrated_alpha(
                    release.noisy_covariance, noise_std=math.sqrt(release.noise_variance),
                    n_samples=release.n_samples)}
            results[test] = edge_inference(
                release.noisy_covariance, n_samples=release.n_samples,
                noise_variance=release.noise_variance,
                clipping=None if clipping_correction == "none" else release.clipping,
                clipping_correction=("all" if clipping_correction == "none"
                                     else clipping_correction),
                fdr=fdr, fdr_method=fdr_method, method=method, test=test, **pilot)
        inference_time.append((time.perf_counter() - start) / len(TESTS))
        for test, result in results.items():
            selected = result.selected
            measures[test]["fdp"].append(float((selected & ~edge).sum() / max(selected.sum(), 1)))
            measures[test]["power"].append(float((selected & edge).sum() / edge.sum()))
            measures[test]["detected"].append(selected[edge])
        # What PrivateGraph reports (its own test, withheld where its rule says so).
        chosen = graph.adjacency_[rows, cols]
        reported["fdp"].append(float((chosen & ~edge).sum() / max(chosen.sum(), 1)))
        reported["power"].append(float((chosen & edge).sum() / edge.sum()))
        reported["detected"].append(chosen[edge])
        result = results["null-pilot"]
        if release.clipping is not None and clipping_correction == "intervals":
            # The intervals with the clipping correction held fixed (earlier versions).
            held = _held_correction_intervals(graph)
            cover_held.append((held.ci_low <= truth) & (truth <= held.ci_high))
        withheld.append(bool(graph.selection_withheld_))
        detectable_after.append(graph.detectable_)
        calibrated.append(bool(getattr(graph, "inference_calibrated_", True)))
        cover.append((result.ci_low <= truth) & (truth <= result.ci_high))
        null_z.append((result.partial_correlation / result.null_std_error)[~edge])
        strengths.append(np.abs(truth[edge]))
        sigmas.append(math.sqrt(release.noise_variance))
        bounds.append(release.clipping.row_norm_bound)
        budgets.append(release.release_budget)
        clipped_share.append(graph.clipping_["over_norm_bound"] / n)
    cover = np.array(cover)
    z = np.concatenate(null_z)
    all_strengths = np.concatenate(strengths)
    release_rho = float(np.median(budgets))
    planned = PrivateGraph(budget=budget, **options)
    out = {
        "graph": kind, "p": p, "n": n, "rho": rho, "epsilon": epsilon, "strength": strength,
        "distribution": distribution, "bound_fraction": str(bound_fraction),
        "fits": fits, "edges": int(edge.sum()),
        "withheld_share": float(np.mean(withheld)),
        "detectable_after_fit": sorted(set(float(d) for d in detectable_after if d is not None)),
        "calibrated_share": float(np.mean(calibrated)),
        "coverage": float(cover.mean()), "coverage_edges": float(cover[:, edge].mean()),
        "coverage_non_edges": float(cover[:, ~edge].mean()) if (~edge).any() else float("nan"),
        "null_z_sd": float(z.std()),
        "coverage_held_correction": (float(np.mean(cover_held)) if cover_held
                                     else float("nan")),
        "coverage_edges_held_correction": (float(np.array(cover_held)[:, edge].mean())
                                           if cover_held else float("nan")),
        "sigma": float(np.mean(sigmas)), "row_norm_bound": float(np.mean(bounds)),
        "release_rho": release_rho,
        "clipped_share": float(np.mean(clipped_share)),
        "fit_seconds": float(np.mean(fit_time)),
        "inference_seconds": float(np.mean(inference_time)),
    }
    try:
        out["detectable"] = planned.detectable(n_samples=n, n_features=p)
    except ValueError:
        out["detectable"] = float("nan")
    for extra in ("detectable_figures", "selection_withheld"):
        method_of = getattr(planned, f"planned_{extra}", None)
        if method_of is not None:
            out[f"planned_{extra}"] = method_of(n_samples=n, n_features=p)
    amplification = noise_amplification(pattern)
    out["noise_amplification"] = amplification
    for name, record in [("reported", reported)] + [(t, measures[t]) for t in TESTS]:
        fdp = np.array(record["fdp"])
        threshold, note = measured_threshold(all_strengths, np.concatenate(record["detected"]))
        suffix = "" if name == "null-pilot" else f"_{name}"
        out.update({f"fdr{suffix}": float(fdp.mean()),
                    f"fdr_mc_se{suffix}": float(fdp.std(ddof=1) / math.sqrt(fits)),
                    f"power{suffix}": float(np.mean(record["power"])),
                    f"threshold_80{suffix}": threshold, f"threshold_note{suffix}": note})
    if math.isfinite(out["threshold_80"]) and not out["threshold_note"]:
        out["threshold_80_mc_se"] = threshold_mc_se(
            strengths, [np.asarray(d, dtype=float) for d in measures["null-pilot"]["detected"]])
    return out


def _budget_label(r: dict) -> str:
    return f"eps={r['epsilon']:g}" if r.get("epsilon") else f"rho={r['rho']:g}"


def _held(r: dict, key: str) -> str:
    value = r.get(key)
    return "--" if value is None or not math.isfinite(value) else f"{value:.3f}"


def format_row(r: dict) -> str:
    if math.isfinite(r["threshold_80"]) and not r["threshold_note"]:
        measured = f"{r['threshold_80']:.3f}"
        ratio = f"{r['detectable'] / r['threshold_80']:.2f}" if math.isfinite(
            r["detectable"]) else "inf"
    else:
        measured = r["threshold_note"]
        ratio = "--"
    graph = r["graph"] if r["graph"] != "single" else f"single {r['strength']:g}"
    old = (f"{r['fdr_pilot']:.3f} | {r['power_pilot']:.2f} | {r['power_wald']:.2f} | "
           if "power_pilot" in r else "-- | -- | -- | ")
    return (f"| {r['distribution']} | {graph} | {r['p']} | {r['n']} | {_budget_label(r)} | "
            f"{r['fits']} | {r['fdr']:.3f} ± {r['fdr_mc_se']:.3f} | {r['coverage']:.3f} | "
            f"{r['coverage_edges']:.3f} | {_held(r, 'coverage_edges_held_correction')} | "
            f"{r['power']:.2f} | {old}{r['null_z_sd']:.2f} | "
            f"{measured} | {r['detectable']:.3f} | {ratio} |"
            + (f" {r['withheld_share']:.2f} |" if "withheld_share" in r else " -- |"))


HEADER = ("| data | graph | p | n | budget | fits | FDR ± MC se | coverage | cov. edges | "
          "cov. edges, correction held | power | FDR old | power old | power Wald | "
          "null z sd | t80 measured | detectable() | ratio | withheld |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def _planned_figures(c: dict) -> dict:
    """The plan's public figures for a cell (as the estimator states them now)."""
    return PrivateGraph(budget=budget_of(c.get("rho"), c.get("epsilon"))).planned_inference(
        n_samples=c["n"], n_features=c["p"])


def _cell_name(c: dict) -> str:
    return f"{c['graph']} p={c['p']} n={c['n']} {_budget_label(c)}"


def acceptance_summary(cells: list[dict]) -> str:
    """Per distribution: cells whose FDR exceeds 0.1 + 2 Monte-Carlo errors (among those
    the plan does not withhold), the range of all-pairs coverage (cells kept by the plan,
    and the withheld ones apart), and the cells with a finite planned figure whose edge
    coverage is below 0.85."""
    lines = []
    for distribution in sorted({c["distribution"] for c in cells}):
        chosen = [c for c in cells if c["distribution"] == distribution
                  and c["graph"] not in ("single", "pairs")]
        if not chosen:
            continue
        for c in chosen:
            c["_figures"] = _planned_figures(c)
        kept = [c for c in chosen if not c["_figures"]["withheld"]]
        withheld = [c for c in chosen if c["_figures"]["withheld"]]
        high = [c for c in kept if c["fdr"] > 0.1 + 2 * c["fdr_mc_se"]]
        low_edges = [c for c in chosen if math.isfinite(c["_figures"]["detectable"])
                     and c["coverage_edges"] < 0.85]
        edges = [c["coverage_edges"] for c in chosen
                 if math.isfinite(c["_figures"]["detectable"])]
        held = [c["coverage_edges_held_correction"] for c in chosen
                if math.isfinite(c["_figures"]["detectable"])
                and math.isfinite(c.get("coverage_edges_held_correction", math.nan))]

        def span(values):
            return f"{min(values):.3f}-{max(values):.3f}" if values else "--"

        lines.append(
            f"{distribution}: {len(chosen)} cells ({len(kept)} kept by the plan, "
            f"{sum(c['fits'] for c in chosen)} fits); FDR > 0.1 + 2 MC (kept): "
            + (", ".join(f"{_cell_name(c)} {c['fdr']:.3f}±{c['fdr_mc_se']:.3f}" for c in high)
               or "none")
            + f"; all-pairs coverage {span([c['coverage'] for c in kept])} where kept, "
            f"{span([c['coverage'] for c in withheld])} where withheld; edge coverage where "
            f"the plan states a figure {span(edges)} (correction held fixed: {span(held)}); "
            "below 0.85: "
            + (", ".join(f"{_cell_name(c)} {c['coverage_edges']:.3f}" for c in low_edges)
               or "none"))
    return "\n".join(lines)


def _pooled_threshold(group: list[dict]) -> tuple[float, str, float]:
    """The 80 %-power threshold of the single-edge cells of one plan: a probit over every
    fit's detection of the edge, at the strengths of the rise of the power curve (from
    the last found at most 20 % of the time to the first found at least 95 %: one probit
    line cannot also fit the plateaus, where a rare miss at 0.9 flattens it)."""
    group = sorted(group, key=lambda c: c["strength"])
    powers = [c["power"] for c in group]
    low = max([i for i, value in enumerate(powers) if value <= 0.2], default=0)
    high = min([i for i, value in enumerate(powers) if value >= 0.95 and i > low],
               default=len(group) - 1)
    chosen = group[low:high + 1]

    def threshold_of(founds: list[int]) -> tuple[float, str]:
        strengths, detected = [], []
        for c, found in zip(chosen, founds):
            strengths += [c["strength"]] * c["fits"]
            detected += [1.0] * found + [0.0] * (c["fits"] - found)
        return measured_threshold(np.array(strengths), np.array(detected))

    founds = [int(round(c["power"] * c["fits"])) for c in chosen]
    threshold, note = threshold_of(founds)
    # Monte-Carlo error: the detections redrawn (binomial at the measured powers).
    rng = np.random.default_rng(0)
    redrawn = [threshold_of([int(rng.binomial(c["fits"], c["power"])) for c in chosen])[0]
               for _ in range(200)]
    redrawn = [value for value in redrawn if math.isfinite(value)]
    error = float(np.std(redrawn, ddof=1)) if len(redrawn) > 100 else float("nan")
    return threshold, note, error


def _with_error(value: float, error: float) -> str:
    return f"{value:.3f}" + (f" ± {error:.3f}" if math.isfinite(error) else "")


def detectable_summary(cells: list[dict]) -> str:
    """``detectable()`` against the measured 80 %-power threshold of isolated edges: the
    ``pairs`` cells and the single-edge grids (pooled over strengths), with the ratio and
    whether it is within 25 %."""
    lines = ["| edges | data | p | n | budget | fits | measured t80 | detectable() | ratio | "
             "within 25 % |", "|---|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple, list[dict]] = {}
    rows = []
    for c in cells:
        if c["graph"] == "pairs":
            rows.append(("isolated pairs", c, c["threshold_80"], c["threshold_note"], c["fits"],
                         c.get("threshold_80_mc_se", math.nan)))
        elif c["graph"] == "single":
            key = (c["distribution"], c["p"], c["n"], c.get("rho"), c.get("epsilon"))
            groups.setdefault(key, []).append(c)
    for group in groups.values():
        threshold, note, error = _pooled_threshold(group)
        rows.append(("single edge", group[0], threshold, note,
                     sum(c["fits"] for c in group), error))
    misses = []
    for label, c, threshold, note, fits, error in rows:
        detectable = _planned_figures(c)["detectable"]
        if math.isfinite(threshold) and not note and math.isfinite(detectable):
            ratio = detectable / threshold
            verdict = "yes" if 0.75 <= ratio <= 1.25 else "NO"
            if verdict == "NO":
                misses.append(f"{label} {_cell_name(c)} {ratio:.2f}")
            measured, shown = _with_error(threshold, error), f"{ratio:.2f}"
        else:
            measured, shown, verdict = note or f"{threshold:.3f}", "--", "--"
        lines.append(f"| {label} | {c['distribution']} | {c['p']} | {c['n']} | "
                     f"{_budget_label(c)} | {fits} | {measured} | {detectable:.3f} | {shown} | "
                     f"{verdict} |")
    lines.append("\noutside 25 %: " + (", ".join(misses) or "none"))
    return "\n".join(lines)


#: The reverse plans checked by simulation: (what, |partial correlation|, n or None, p,
#: rho or None).
REVERSE_CHECKS = (("required_budget", 0.2, 2000, 30), ("required_budget", 0.1, 5000, 30),
                  ("required_rows", 0.15, None, 30), ("required_rows", 0.1, None, 30))


def reverse_summary(cells: list[dict]) -> str:
    """``required_budget`` / ``required_rows`` against the measured 80 %-power threshold
    of isolated pairs at the plan they return (cells of ``--graphs pairs`` run there)."""
    lines = ["| question | target | plan | fits | measured t80 | measured / target |",
             "|---|---|---|---|---|---|"]
    planner = PrivateGraph(budget=ZCDP(1.0))
    for what, target, n, p in REVERSE_CHECKS:
        if what == "required_budget":
            rho = planner.required_budget(partial_correlation=target, n_samples=n,
                                          n_features=p).rho
        else:
            rho, n = 1.0, planner.required_rows(partial_correlation=target, n_features=p)
        match = [c for c in cells if c["graph"] == "pairs" and c["p"] == p and c["n"] == n
                 and c.get("rho") is not None and abs(c["rho"] - rho) < 1e-5 * rho]
        plan = f"n = {n}, p = {p}, rho = {rho:.4g}"
        if not match:
            lines.append(f"| {what}({target:g}) | {target:g} | {plan} | -- | not run | -- |")
            continue
        c = match[0]
        measured = c["threshold_80"]
        error = c.get("threshold_80_mc_se", math.nan)
        ratio = f"{measured / target:.2f}" + (f" ± {error / target:.2f}"
                                               if math.isfinite(error) else "")
        lines.append(f"| {what}({target:g}) | {target:g} | {plan} | {c['fits']} | "
                     f"{_with_error(measured, error)} | {ratio} |")
    return "\n".join(lines)


def power_summary(cells: list[dict]) -> str:
    """The new test's power against the old one's on the same releases, over the
    noise-dominated cells (rho <= 0.1 at n = 2 000, and every (epsilon, delta) cell)."""
    chosen = [c for c in cells if c["graph"] != "single" and "power_pilot" in c
              and ((c.get("rho") is not None and c["rho"] <= 0.1 and c["n"] == 2000)
                   or c.get("epsilon"))]
    ratios = [c["power"] / c["power_pilot"] for c in chosen if c["power_pilot"] > 0]
    wald = [c["power_wald"] / c["power_pilot"] for c in chosen
            if c["power_pilot"] > 0 and c["power_wald"] > 0]
    lost = [c for c in chosen if c["power"] + 1e-12 < c["power_pilot"]]
    if not ratios:
        return "no noise-dominated cell with power"
    return (f"noise-dominated cells: {len(chosen)} ({len(ratios)} with power); power "
            f"null-pilot / old: geometric mean {math.exp(np.mean(np.log(ratios))):.2f} "
            f"(range {min(ratios):.2f}-{max(ratios):.2f}); Wald / old: "
            f"{math.exp(np.mean(np.log(wald))):.2f} (where it found anything); cells losing power: "
            + (", ".join(f"{c['graph']} p={c['p']} {_budget_label(c)} {c['distribution']} "
                         f"{c['power']:.3f}<{c['power_pilot']:.3f}" for c in lost) or "none"))


# ---------------------------------------------------------------------------------------
# the 30-node raw chain, and speed
# ---------------------------------------------------------------------------------------


def chain_f1(seeds: int, *, norm_quantile: float, fdr: float, fdr_method: str) -> list[dict]:
    """F1 on the 30-node raw chain of four selections of the same seeded release:
    PrivateGraph's default (tests without the clipping correction), the tests with the
    correction, no correction at all, and the fixed threshold (``select="threshold"``)."""
    out = []
    rows, cols = np.triu_indices(30, 1)
    for seed in range(seeds):
        frame, truth = make_raw_chain(n_samples=5000, n_features=30, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = PrivateGraph(budget=ZCDP(1.0), norm_quantile=norm_quantile, fdr=fdr,
                                 fdr_method=fdr_method, random_state=seed).fit(frame)
            corrected = graph.infer(clipping_correction="all")
            uncorrected = graph.infer(clipping_correction="none")
            threshold = PrivateGraph(budget=ZCDP(1.0), norm_quantile=norm_quantile,
                                     select="threshold", random_state=seed).fit(frame)
        true_edges = truth[rows, cols]
        for name, chosen in (("fdr (default)", graph.adjacency_[rows, cols]),
                             ("fdr, tests corrected", corrected.selected),
                             ("fdr, nothing corrected", uncorrected.selected),
                             ("threshold", threshold.adjacency_[rows, cols])):
            chosen = np.asarray(chosen, dtype=bool)
            tp = int((chosen & true_edges).sum())
            f1 = 2 * tp / max(int(chosen.sum()) + int(true_edges.sum()), 1)
            out.append({"seed": seed, "selection": name, "edges": int(chosen.sum()),
                        "true_positives": tp, "f1": f1})
    return out


def timing(p: int, n: int, replicates: int) -> dict:
    precision = study_precision("random", p)
    frame = sample_raw(precision, n, np.random.default_rng(0), "gaussian")
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph.fit(frame)  # compile / warm caches
        start = time.perf_counter()
        graph = PrivateGraph(budget=ZCDP(1.0), random_state=1).fit(frame)
        fit_seconds = time.perf_counter() - start
    release = release_from_private_graph(graph)
    kwargs = dict(n_samples=release.n_samples, noise_variance=release.noise_variance,
                  precision=release.precision, clipping=release.clipping)
    edge_inference(release.noisy_covariance, **kwargs)
    start = time.perf_counter()
    edge_inference(release.noisy_covariance, **kwargs)
    closed = time.perf_counter() - start
    start = time.perf_counter()
    boot = edge_inference(release.noisy_covariance, method="bootstrap", n_bootstrap=replicates,
                          **kwargs)
    bootstrap = time.perf_counter() - start
    return {"p": p, "n": n, "fit_seconds": fit_seconds, "closed_form_seconds": closed,
            "closed_form_over_fit": closed / fit_seconds, "bootstrap_replicates": replicates,
            "bootstrap_seconds": bootstrap,
            "bootstrap_se_over_closed_form": boot.diagnostics["se_ratio"]}


def _save(path: str | None, results: list[dict]) -> None:
    """Write the cells measured so far (a long run can be read before it ends)."""
    if path:
        with open(path, "w") as handle:
            json.dump(results, handle, indent=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reduced", action="store_true", help="p in {10, 30} only")
    parser.add_argument("--fits", type=int, default=50)
    parser.add_argument("--graphs", nargs="+", default=list(GRAPHS[:4]),
                        help="graphs of the study; 'pairs' (isolated edges) calibrates "
                             "detectable()")
    parser.add_argument("--p", nargs="+", type=int)
    parser.add_argument("--n", nargs="+", type=int)
    parser.add_argument("--rho", nargs="*", type=float,
                        help="zCDP budgets (none: only the --epsilon ones)")
    parser.add_argument("--epsilon", nargs="+", type=float,
                        help="also (epsilon, 1e-6) budgets")
    parser.add_argument("--bound-fraction", default="auto")
    parser.add_argument("--single-edge", action="store_true",
                        help="one edge of each |partial correlation| in SINGLE_EDGE_STRENGTHS "
                             "in an otherwise independent table")
    parser.add_argument("--distributions", nargs="+", default=["gaussian"])
    parser.add_argument("--norm-quantile", type=float, default=0.5)
    parser.add_argument("--fdr", type=float, default=0.1)
    parser.add_argument("--fdr-method", default="bh")
    parser.add_argument("--method", default="closed-form")
    parser.add_argument("--clipping-correction", choices=("intervals", "all", "none"),
                        default="intervals",
                        help="what the row-norm clipping's correction applies to "
                             "(PrivateGraph's default: the intervals, not the tests)")
    parser.add_argument("--pilot-alpha-factor", type=float,
                        help="solve the pilot at this multiple of the noise-calibrated "
                             "penalty instead of reusing PrivateGraph's precision")
    parser.add_argument("--json", help="write the cell results here")
    parser.add_argument("--chain-f1", action="store_true",
                        help="F1 on the 30-node raw chain, rho = 1, 10 seeds, and exit")
    parser.add_argument("--table", nargs="+", metavar="JSON",
                        help="print the tables of earlier runs, with detectable() as it is "
                             "now, and exit")
    parser.add_argument("--timing", action="store_true",
                        help="inference time against the fit at p = 100, and exit")
    args = parser.parse_args(argv)

    if args.chain_f1:
        rows = chain_f1(10, norm_quantile=args.norm_quantile, fdr=args.fdr,
                        fdr_method=args.fdr_method)
        frame = pd.DataFrame(rows)
        print(frame.to_string(index=False))
        print(frame.groupby("selection")[["edges", "f1"]].mean().to_string())
        return 0
    if args.table:
        print(HEADER)
        cells = []
        for path in args.table:
            with open(path) as handle:
                for cell in json.load(handle):
                    cell["detectable"] = PrivateGraph(
                        budget=budget_of(cell["rho"], cell.get("epsilon")),
                        norm_quantile=args.norm_quantile, fdr=args.fdr,
                        fdr_method=args.fdr_method).detectable(n_samples=cell["n"],
                                                               n_features=cell["p"])
                    cells.append(cell)
                    print(format_row(cell))
        print()
        print(power_summary(cells))
        print(acceptance_summary(cells))
        if any(c["graph"] in ("pairs", "single") for c in cells):
            print()
            print(detectable_summary(cells))
            print()
            print(reverse_summary(cells))
        return 0
    if args.timing:
        for n in (2000, 20000):
            print(json.dumps(timing(100, n, 200)))
        return 0

    grid = dict(REDUCED_GRID if args.reduced else FULL_GRID)
    for key in ("p", "n", "rho"):
        if getattr(args, key) is not None:
            grid[key] = tuple(getattr(args, key))
    budgets = [(rho, None) for rho in grid["rho"]] + [(None, e) for e in args.epsilon or ()]
    common = dict(fits=args.fits, norm_quantile=args.norm_quantile, fdr=args.fdr,
                  fdr_method=args.fdr_method, method=args.method,
                  clipping_correction=args.clipping_correction,
                  pilot_alpha_factor=args.pilot_alpha_factor,
                  bound_fraction=(args.bound_fraction if args.bound_fraction == "auto"
                                  else float(args.bound_fraction)))
    print(HEADER, flush=True)
    results = []
    for distribution in args.distributions:
        if args.single_edge:
            for p in grid["p"]:
                for n in grid["n"]:
                    for rho, epsilon in budgets:
                        for strength in SINGLE_EDGE_STRENGTHS:
                            cell = run_cell("single", p, n, rho, epsilon=epsilon,
                                            strength=strength, distribution=distribution,
                                            **common)
                            results.append(cell)
                            print(format_row(cell), flush=True)
                            _save(args.json, results)
            continue
        for kind in args.graphs:
            for p in grid["p"]:
                for n in grid["n"]:
                    for rho, epsilon in budgets:
                        cell = run_cell(kind, p, n, rho, epsilon=epsilon,
                                        distribution=distribution, **common)
                        results.append(cell)
                        print(format_row(cell), flush=True)
                        _save(args.json, results)
    if not args.single_edge:
        print(power_summary(results))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
