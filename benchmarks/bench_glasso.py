"""Speed and accuracy of ``dpggm.solvers.graphical_lasso`` against scikit-learn.

Problems
--------
* ``random``: a sparse precision matrix with about 5% of the off-diagonal pairs non-zero
  (values ±U[0.3, 0.6], shifted to smallest eigenvalue 0.5 and rescaled to unit diagonal),
  redrawn until its graph is one connected component, so screening cannot split it.
* ``chain``: a tridiagonal chain, θ_ii = 1, θ_i,i±1 = 0.4 (condition number 9; SPEC seed
  002's 0.5 makes Θ nearly singular at these sizes, with covariance entries in the tens and
  a screening graph that falls apart at the penalty that recovers ~p edges).

For each size ``p`` the data are ``n = 2p`` Gaussian samples and ``S`` is their empirical
covariance (centered, divided by ``n``). ``alpha`` is chosen by bisection so that the
graphical lasso estimate has about as many edges as the true graph.

Matching accuracy
-----------------
All solvers are scored on the same objective, ``-log det Θ + tr(SΘ) + alpha·Σ_{i≠j}|Θ_ij|``
(scikit-learn penalises only off-diagonal entries; so does ``graphical_lasso`` by default),
evaluated on each solver's returned precision (scikit-learn's symmetrised). The reference
value is a tight solve (``tol=1e-12``, certified duality gap printed) that is not timed.
"Relative difference" is ``(objective - reference) / |reference|``; the target for the
default method is ``<= 1e-6``. Our default (``tol=1e-8``) stops on a certified relative
duality gap, so its objective is within ``1e-8`` relative of the optimum by construction.

Timing
------
Wall-clock time of one call each (``--repeat k`` takes the best of ``k``), all in one run.
Numba compilation (or loading of its on-disk cache) and scikit-learn's first-call costs are
excluded by solving a small problem with each solver first. scikit-learn runs
``GraphicalLasso(alpha, covariance="precomputed")`` with its defaults (``tol=1e-4``,
``enet_tol=1e-4``, ``max_iter=100``) and with ``enet_tol=1e-8``; its ConvergenceWarnings are
noted, not shown. ``graphical_lasso`` runs BLAS single-threaded (a multi-threaded BLAS pool
on shared cores can be orders of magnitude slower); to keep the comparison fair,
scikit-learn is timed both with the default BLAS threading and single-threaded, and the
speed-up is computed against the faster of the two.

Usage::

    python benchmarks/bench_glasso.py                 # p in {200, 500, 1000}
    python benchmarks/bench_glasso.py --sizes 200 500 --kinds random
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from sklearn.covariance import GraphicalLasso
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from dpggm.solvers.glasso import graphical_lasso, graphical_lasso_objective


def random_precision(p: int, density: float, rng: np.random.Generator) -> np.ndarray:
    while True:
        upper = np.triu(rng.random((p, p)) < density, 1)
        values = rng.uniform(0.3, 0.6, size=(p, p)) * rng.choice([-1.0, 1.0], size=(p, p))
        A = np.where(upper, values, 0.0)
        A = A + A.T
        count, _ = connected_components(csr_matrix(A != 0), directed=False)
        if count == 1:
            break
    theta = A + (0.5 - np.linalg.eigvalsh(A)[0]) * np.eye(p)
    d = np.sqrt(np.diagonal(theta))
    return theta / d[:, None] / d[None, :]


def chain_precision(p: int) -> np.ndarray:
    return np.eye(p) + 0.4 * (np.eye(p, k=1) + np.eye(p, k=-1))


def empirical_covariance(theta: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    factor = np.linalg.cholesky(theta)
    # x = L⁻ᵀ z has covariance Θ⁻¹ when Θ = LLᵀ.
    X = np.linalg.solve(factor.T, rng.standard_normal((theta.shape[0], n))).T
    X -= X.mean(axis=0)
    return X.T @ X / n


def edge_count(precision: np.ndarray) -> int:
    return int(np.count_nonzero(np.triu(precision, 1)))


def alpha_for_edges(S: np.ndarray, target: int, steps: int = 14) -> float:
    low, high = 0.0, float(np.max(np.abs(S - np.diag(np.diagonal(S)))))
    best_alpha, best_miss = high, target
    previous = None
    for _ in range(steps):
        alpha = 0.5 * (low + high)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            result = graphical_lasso(S, alpha, tol=1e-6, init=previous)
        previous = result
        edges = edge_count(result.estimate)
        if abs(edges - target) < best_miss:
            best_alpha, best_miss = alpha, abs(edges - target)
        if edges > target:
            low = alpha
        else:
            high = alpha
    return best_alpha


def timed(function, repeat: int):
    best, value = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - start)
    return best, value


def run_sklearn(S: np.ndarray, alpha: float, single_thread: bool = False, **options):
    if single_thread:
        with threadpool_limits(limits=1, user_api="blas"):
            return run_sklearn(S, alpha, **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            model = GraphicalLasso(alpha=alpha, covariance="precomputed", **options).fit(S)
        except FloatingPointError as error:
            return None, f"failed: {error}"[:60]
    precision = 0.5 * (model.precision_ + model.precision_.T)
    note = f"n_iter={model.solver_.iterations}" + (" (not converged)" if caught else "")
    return precision, note


def warm_up() -> None:
    rng = np.random.default_rng(12345)
    S = empirical_covariance(random_precision(150, 0.05, rng), 300, rng)
    graphical_lasso(S, 0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        GraphicalLasso(alpha=0.2, covariance="precomputed").fit(S[:30, :30])


def run_problem(kind: str, p: int, seed: int, repeat: int) -> tuple:
    rng = np.random.default_rng([seed, p, len(kind)])
    theta = random_precision(p, 0.05, rng) if kind == "random" else chain_precision(p)
    S = empirical_covariance(theta, 2 * p, rng)
    true_edges = edge_count(theta)
    alpha = alpha_for_edges(S, true_edges)

    reference = graphical_lasso(S, alpha, tol=1e-12)
    f_ref = reference.objective

    t_ours, ours = timed(lambda: graphical_lasso(S, alpha), repeat)
    d_ours = (ours.objective - f_ref) / abs(f_ref)
    print(
        f"\n== {kind} p={p} n={2 * p} alpha={alpha:.5g} true edges={true_edges} "
        f"estimated={edge_count(ours.estimate)} components={ours.n_components}"
    )
    print(f"   reference objective {f_ref:.12g} (certified gap {reference.duality_gap:.1e})")
    print(f"   {'solver':<30}{'time [s]':>10}{'objective':>22}{'rel. diff':>12}  notes")
    print(
        f"   {'dpggm (default, tol=1e-8)':<30}{t_ours:>10.3f}{ours.objective:>22.12g}"
        f"{d_ours:>12.1e}  method={ours.method} sweeps={ours.iterations} "
        f"gap={ours.duality_gap:.1e}"
    )
    times = {}
    for label, options in [
        ("sklearn defaults", {}),
        ("sklearn defaults, 1 thread", {"single_thread": True}),
        ("sklearn enet_tol=1e-8", {"enet_tol": 1e-8}),
        ("sklearn enet_tol=1e-8, 1 thr", {"enet_tol": 1e-8, "single_thread": True}),
    ]:
        elapsed, (precision, note) = timed(
            lambda options=options: run_sklearn(S, alpha, **options), repeat
        )
        if precision is None:
            value = difference = float("nan")
        else:
            value = graphical_lasso_objective(S, precision, alpha)
            difference = (value - f_ref) / abs(f_ref)
        times[label] = elapsed
        print(f"   {label:<30}{elapsed:>10.3f}{value:>22.12g}{difference:>12.1e}  {note}")
    # The faster of the two BLAS settings is the one compared against.
    t_sk = min(times["sklearn defaults"], times["sklearn defaults, 1 thread"])
    t_sk8 = min(times["sklearn enet_tol=1e-8"], times["sklearn enet_tol=1e-8, 1 thr"])
    ratio, ratio8 = t_sk / t_ours, t_sk8 / t_ours
    ok = d_ours <= 1e-6 and ratio >= 5 and ratio8 >= 1
    print(
        f"   speed-up: {ratio:.1f}x vs defaults, {ratio8:.1f}x vs enet_tol=1e-8  "
        f"[{'PASS' if ok else 'FAIL'}: rel. diff <= 1e-6, >= 5x, >= 1x]"
    )
    return kind, p, t_ours, t_sk, t_sk8, ratio, ratio8, d_ours, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 500, 1000])
    parser.add_argument("--kinds", nargs="+", default=["random", "chain"])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    warm_up()
    rows = []
    for p in args.sizes:
        for kind in args.kinds:
            rows.append(run_problem(kind, p, args.seed, args.repeat))

    print("\nsummary")
    print(
        f"{'problem':<14}{'dpggm':>9}{'sk def':>9}{'sk 1e-8':>9}{'x def':>8}{'x 1e-8':>8}"
        f"{'rel.diff':>10}  check"
    )
    for kind, p, t_ours, t_sk, t_sk8, ratio, ratio8, d_ours, ok in rows:
        print(
            f"{kind + ' ' + str(p):<14}{t_ours:>9.3f}{t_sk:>9.2f}{t_sk8:>9.2f}{ratio:>8.1f}"
            f"{ratio8:>8.1f}{d_ours:>10.1e}  {'PASS' if ok else 'FAIL'}"
        )


if __name__ == "__main__":
    main()
