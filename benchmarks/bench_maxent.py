"""Speed and agreement of the maximum-entropy reconstruction in a PACE-GGM-like run.

What is simulated
-----------------
The sequence of reconstructions that PACE-GGM (Ferrando et al.) performs, on scikit-learn's
breast-cancer data (n = 569, d = 30). This is a solver benchmark, not a private release:

* features are scaled into [-1, 1] with bounds read off the data (min/max of each column);
  that leaks information and is done here only because no privacy is claimed;
* ``S = X^T X / n`` of the scaled data (the raw second moment, not centered);
* every entry has sensitivity ``Delta = 2 B^2 / n`` with ``B = 1`` (the paper's value);
* initialisation: every diagonal entry measured once with ``rho_diag = 0.3 rho`` split over
  the ``d`` entries, ``sigma^2 = Delta^2 / (2 rho_diag / d)``;
* each round selects the entry ``(j, k)``, ``j >= k``, with the largest ``|S_jk - Sigma_jk|``
  (no exponential mechanism: the selection rule only shapes the sequence of patterns),
  measures it with ``sigma^2 = Delta^2 / (2 rho_meas)``, ``rho_meas = 0.02 rho`` (a few per
  cent of the budget per measurement, the regime PACE reaches after budget annealing; the
  paper measures 24 to 49 off-diagonal entries of this data set at rho = 1 to 10), combines
  it with earlier measurements of the same entry by the precision-weighted mean, and
  reconstructs.

Noise levels: at rho = 10, sigma_diag = 0.0079 and sigma_meas = 0.0056; at rho = 1,
sigma_diag = 0.025 and sigma_meas = 0.018 (entries of S are of order 0.1 to 0.6).
The variables are so strongly correlated (up to 0.998) that after the first few rounds the
measured values admit no positive-definite completion: the reconstruction is singular, the
hard case of the problem.

What is timed
-------------
* default: :class:`dpggm.solvers.maxent.MaxEntropyReconstructor` (``"dual-newton"``),
  updated with one measurement per round; it re-solves only the component that changed and
  warm-starts from the previous precision matrix;
* reference: ``max_entropy_completion(..., method="ipm-cholesky")`` from scratch in every
  round (the paper's solver: L-BFGS-B on the Cholesky factor, decreasing barrier).

Both run single-threaded (BLAS pool limited to one thread). Selection uses the default
method's estimate, so both solve exactly the same problems. Reported: total reconstruction
time of each, their ratio, and the relative difference of the covariances (Frobenius norm,
relative to the reference) in the final round and the worst over all rounds.

Usage::

    python benchmarks/bench_maxent.py                    # rho in {10, 1}, 30 rounds each (~3 min)
    python benchmarks/bench_maxent.py --rounds 40 --rho 10
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer
from threadpoolctl import threadpool_limits

from dpggm.exceptions import ConvergenceWarning
from dpggm.solvers.maxent import MaxEntropyReconstructor, max_entropy_completion


def timed(fn, *args, **kwargs):
    """Run ``fn`` and return ``(result, seconds, number of ConvergenceWarnings)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        dt = time.perf_counter() - t0
    return out, dt, sum(issubclass(w.category, ConvergenceWarning) for w in caught)


def second_moment() -> tuple[np.ndarray, int]:
    X = load_breast_cancer().data
    lo, hi = X.min(axis=0), X.max(axis=0)
    X = 2.0 * (X - lo) / (hi - lo) - 1.0
    return X.T @ X / X.shape[0], X.shape[0]


def run(rho: float, rounds: int, diag_frac: float, meas_frac: float, seed: int) -> dict:
    S, n = second_moment()
    d = S.shape[0]
    rng = np.random.default_rng(seed)
    delta = 2.0 / n
    sd_diag = delta / np.sqrt(2.0 * diag_frac * rho / d)
    sd_meas = delta / np.sqrt(2.0 * meas_frac * rho)

    values = np.diag(np.diag(S) + sd_diag * rng.standard_normal(d))
    precisions = np.diag(np.full(d, sd_diag**-2))

    def default_step(j=None, k=None, z=None):
        if j is not None:
            rec.add_measurement(j, k, z, sd_meas**-2)
        return rec.result()

    rec = MaxEntropyReconstructor(values, precisions)
    result, t_default, warn_default = timed(default_step)
    cov = result.estimate
    ref, t_ipm, warn_ipm = timed(max_entropy_completion, values, precisions, method="ipm-cholesky")

    worst = 0.0
    per_round = []
    for _ in range(rounds):
        err = np.abs(S - cov)
        err[np.triu_indices(d, 1)] = -1.0
        j, k = np.unravel_index(np.argmax(err), err.shape)
        z = S[j, k] + sd_meas * rng.standard_normal()

        result, dt_default, w = timed(default_step, j, k, z)
        cov = result.estimate
        warn_default += w
        ref, dt_ipm, w = timed(
            max_entropy_completion, rec.values, rec.precisions, method="ipm-cholesky"
        )
        warn_ipm += w

        t_default += dt_default
        t_ipm += dt_ipm
        diff = np.linalg.norm(cov - ref.estimate) / np.linalg.norm(ref.estimate)
        worst = max(worst, diff)
        per_round.append((int(j), int(k), dt_default, dt_ipm, diff))

    sizes = sorted((len(c) for c in result.extra["components"]), reverse=True)
    final_diff = per_round[-1][4] if per_round else 0.0
    max_entry = np.max(np.abs(cov - ref.estimate)) / np.max(np.abs(ref.estimate))
    return {
        "rho": rho,
        "sd_diag": sd_diag,
        "sd_meas": sd_meas,
        "t_default": t_default,
        "t_ipm": t_ipm,
        "final_diff": final_diff,
        "final_max_entry": max_entry,
        "worst_diff": worst,
        "largest_component": sizes[0],
        "n_components": len(sizes),
        "singular": len(result.extra["singular_components"]),
        "measured_offdiag": int(np.count_nonzero(np.tril(rec.precisions > 0, -1))),
        "warnings": (warn_default, warn_ipm),
        "per_round": per_round,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rho", type=float, nargs="+", default=[10.0, 1.0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--diag-frac", type=float, default=0.3)
    parser.add_argument("--meas-frac", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="print every round")
    args = parser.parse_args()

    print(
        f"breast cancer (n=569, d=30), {args.rounds} rounds, rho_diag={args.diag_frac}*rho, "
        f"rho_meas={args.meas_frac}*rho, seed={args.seed}, single-threaded BLAS"
    )
    header = (
        f"{'rho':>6} {'sd_diag':>8} {'sd_meas':>8} {'offdiag':>7} {'comp':>5} {'sing':>4} "
        f"{'default s':>10} {'ipm s':>9} {'speed-up':>9} {'final rel':>10} {'max entry':>10} "
        f"{'worst rel':>10} {'warn':>6}"
    )
    rows = []
    with threadpool_limits(limits=1):
        for rho in args.rho:
            r = run(rho, args.rounds, args.diag_frac, args.meas_frac, args.seed)
            rows.append(r)
            if args.verbose:
                print(f"rho={rho}: round (j,k) default_s ipm_s rel_diff")
                for i, (j, k, a, b, diff) in enumerate(r["per_round"]):
                    print(f"  {i:3d} ({j:2d},{k:2d}) {a:8.4f} {b:8.3f} {diff:9.2e}")
    print(header)
    for r in rows:
        print(
            f"{r['rho']:>6g} {r['sd_diag']:>8.4f} {r['sd_meas']:>8.4f} "
            f"{r['measured_offdiag']:>7d} {r['largest_component']:>5d} {r['singular']:>4d} "
            f"{r['t_default']:>10.3f} {r['t_ipm']:>9.2f} {r['t_ipm'] / r['t_default']:>8.0f}x "
            f"{r['final_diff']:>10.2e} {r['final_max_entry']:>10.2e} {r['worst_diff']:>10.2e} "
            f"{r['warnings'][0]:>2d}/{r['warnings'][1]:<3d}"
        )
    print(
        "offdiag: measured off-diagonal entries; comp: largest connected component; "
        "sing: components without a PD completion;\nfinal/worst rel: ||default - ipm||_F / "
        "||ipm||_F in the last / worst round; max entry: max|diff| / max|ipm| (last round);\n"
        "warn: ConvergenceWarnings default/ipm over the run."
    )


if __name__ == "__main__":
    main()
