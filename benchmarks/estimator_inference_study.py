"""Calibration of ``inference_`` on the covariance-perturbation estimators
(``GraphicalLasso``, ``RidgePrecision``, ``ThresholdedCovariance``: they share the release).

For every cell (mechanism, neighbouring relation, p, n, rho) the study draws ``--fits``
Gaussian samples from a chain whose edges' partial correlations are spread over
[0.05, 0.45] (random signs, drawn afresh in every fit), declares a row-norm bound at the
0.999 quantile of the rows' norms under the generating model (a public fact of the
study, so that clipping is rare), fits ``GraphicalLasso(alpha="auto", center="private")``
and reads ``inference_``. Against the population partial correlations it measures the
false-discovery rate of the selected pairs (mean false-discovery proportion, with its
Monte-Carlo standard error), the coverage of the 90 % intervals (all pairs, and the true
edges alone), the power and the standard deviation of the null z-scores.

``--mechanisms laplace`` (a pure-DP budget, epsilon = sqrt(2 rho)) measures the Laplace
release, which ``inference_`` does not describe: the study calls the same inference
directly to show why (its false-discovery rate where the noise dominates).

Usage (niced on a shared machine; about two minutes)::

    nice -n 10 python3 benchmarks/estimator_inference_study.py --fits 30
    nice -n 10 python3 benchmarks/estimator_inference_study.py --fits 30 --mechanisms laplace
"""

from __future__ import annotations

import argparse
import itertools
import math

import numpy as np
from scipy import stats

from dpggm import ZCDP
from dpggm.estimators._contract import feature_names
from dpggm.estimators.precision import GraphicalLasso
from dpggm.privacy.budgets import PureDP
from dpggm.solvers.inference import ClippingModel, edge_inference


def chain_precision(p: int, rng: np.random.Generator) -> np.ndarray:
    """A chain whose partial correlations are log-uniform on [0.05, 0.45], random signs;
    diagonal 1, positive definite by construction (diagonally dominant after scaling)."""
    strengths = np.exp(rng.uniform(math.log(0.05), math.log(0.45), size=p - 1))
    signs = rng.choice([-1.0, 1.0], size=p - 1)
    theta = np.eye(p)
    for j, (s, r) in enumerate(zip(strengths, signs)):
        theta[j, j + 1] = theta[j + 1, j] = -s * r
    while np.linalg.eigvalsh(theta)[0] <= 0.05:
        theta = 0.9 * theta + 0.1 * np.eye(p)
    return theta


def partial(theta: np.ndarray) -> np.ndarray:
    d = np.sqrt(np.diag(theta))
    out = -theta / np.outer(d, d)
    np.fill_diagonal(out, 1.0)
    return out


def cell(mechanism: str, neighbors: str, p: int, n: int, rho: float, fits: int,
         seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    fdp, covered, covered_edges, power, null_z = [], [], [], [], []
    for _ in range(fits):
        theta = chain_precision(p, rng)
        sigma = np.linalg.inv(theta)
        X = rng.multivariate_normal(np.zeros(p), sigma, size=n)
        bound = math.sqrt(float(np.max(np.diag(sigma))) * stats.chi2.ppf(0.999, p))
        budget = ZCDP(rho) if mechanism == "gaussian" else PureDP(math.sqrt(2 * rho))
        est = GraphicalLasso(budget=budget, bounds=f"l2:{bound}", mechanism=mechanism,
                             neighbors=neighbors, center="private",
                             random_state=int(rng.integers(2**31))).fit(X)
        table = est.inference_
        if table is None:
            # The Laplace release, which the estimators refuse to describe: the same
            # inference called directly, to show why.
            clipping = ClippingModel(row_norm_bound=bound, box=None, mean=est.noisy_mean_,
                                     recenter=False)
            table = edge_inference(est.noisy_covariance_, n_samples=int(est.n_samples_),
                                   noise_variance=est.entry_noise_std_ ** 2,
                                   clipping=clipping).to_frame(feature_names(est))
        # The table is ordered by evidence: its pairs' population values, row by row.
        index = {name: j for j, name in enumerate(feature_names(est))}
        rows = [index[a] for a in table["source"]]
        cols = [index[b] for b in table["target"]]
        truth = partial(theta)[rows, cols]
        edge = np.abs(truth) > 0
        selected = table["selected"].to_numpy()
        fdp.append((selected & ~edge).sum() / max(selected.sum(), 1))
        inside = (table["ci_low"].to_numpy() <= truth) & (truth <= table["ci_high"].to_numpy())
        covered.append(inside.mean())
        covered_edges.append(inside[edge].mean())
        power.append(selected[edge].mean())
        z = stats.norm.isf(table["p_value"].to_numpy()[~edge] / 2)
        null_z.extend(z * np.sign(table["partial_correlation"].to_numpy()[~edge]))
    return {"FDR": float(np.mean(fdp)), "FDR se": float(np.std(fdp) / math.sqrt(fits)),
            "coverage": float(np.mean(covered)), "coverage edges": float(np.mean(covered_edges)),
            "power": float(np.mean(power)), "null z sd": float(np.std(null_z))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=30)
    parser.add_argument("--p", nargs="+", type=int, default=[10, 30])
    parser.add_argument("--n", nargs="+", type=int, default=[5000, 20000])
    parser.add_argument("--rho", nargs="+", type=float, default=[0.1, 1.0])
    parser.add_argument("--mechanisms", nargs="+", default=["gaussian", "laplace"])
    parser.add_argument("--neighbors", nargs="+", default=["replace", "add-remove"])
    args = parser.parse_args()
    print("| mechanism | neighbours | p | n | rho | FDR ± MC se | coverage | cov. edges | "
          "power | null z sd |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    grid = itertools.product(args.mechanisms, args.neighbors, args.p, args.n, args.rho)
    for k, (mechanism, neighbors, p, n, rho) in enumerate(grid):
        r = cell(mechanism, neighbors, p, n, rho, args.fits, seed=1000 + k)
        print(f"| {mechanism} | {neighbors} | {p} | {n} | {rho:g} | {r['FDR']:.3f} ± "
              f"{r['FDR se']:.3f} | {r['coverage']:.3f} | {r['coverage edges']:.3f} | "
              f"{r['power']:.2f} | {r['null z sd']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
