"""Utility of exact (grid) noise against NumPy's float noise, estimator by estimator.

Each estimator is fitted on the same data with ``noise="exact"`` (the default: integer
noise on a power-of-two grid) and ``noise="float"`` over many seeds, and its error against
the non-private estimate of the same estimator is summarised by its mean and by the
seed-to-seed standard deviation. The exact path may add slightly more noise (the grid's
rounding allowance is at most 2^-10 of the sensitivity; an ``ApproxDP`` budget is
calibrated through zCDP for discrete noise), so the question is whether the difference
of the mean errors stays within the seed-to-seed spread.

Usage::

    python benchmarks/bench_exact_noise_utility.py [--repetitions 30]

Prints one table: estimator, budget, mean error (exact), mean error (float), their
difference, the seed-to-seed standard deviation, and whether the difference is within
it. Data: a 12-variable chain (n = 4000), rescaled into the declared bounds.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from dpggm import GDP, ZCDP, ApproxDP, Box, NonPrivate, PrivateCovariance, PureDP, RowNorm
from dpggm.estimators.baselines import (
    AdaptiveCovariance,
    DiagonalCovariance,
    SeparateCovariance,
    SSPCovariance,
)
from dpggm.estimators.pace import PACECovariance
from dpggm.estimators.precision import GraphicalLasso, RidgePrecision, ThresholdedCovariance


def _data(n: int = 4000, p: int = 12) -> np.ndarray:
    rng = np.random.default_rng(0)
    theta = np.eye(p) + np.diag(np.full(p - 1, 0.45), 1) + np.diag(np.full(p - 1, 0.45), -1)
    X = rng.multivariate_normal(np.zeros(p), np.linalg.inv(theta), size=n)
    return np.clip(X / (4 * np.sqrt(p)), -1 / np.sqrt(p), 1 / np.sqrt(p))


CASES = [
    ("ssp (gaussian)", lambda **k: PrivateCovariance(budget=ZCDP(0.1), bounds=RowNorm(1.0), **k),
     "covariance_"),
    ("ssp (approx dp)", lambda **k: PrivateCovariance(
        budget=ApproxDP(1.0, 1e-6), bounds=RowNorm(1.0), **k), "covariance_"),
    ("ssp (gdp)", lambda **k: PrivateCovariance(budget=GDP(0.5), bounds=RowNorm(1.0), **k),
     "covariance_"),
    ("laplace", lambda **k: PrivateCovariance(
        budget=PureDP(1.0), bounds=RowNorm(1.0), mechanism="laplace", **k), "covariance_"),
    ("sulq", lambda **k: PrivateCovariance(
        budget=ApproxDP(2.0, 1e-5), bounds=RowNorm(1.0), mechanism="sulq", **k), "covariance_"),
    ("ridge (dp-rp)", lambda **k: RidgePrecision(
        ridge=0.05, budget=ZCDP(0.5), bounds=RowNorm(1.0), **k), "precision_"),
    ("glasso (dp-agl)", lambda **k: GraphicalLasso(
        alpha=0.02, budget=ZCDP(0.5), bounds=RowNorm(1.0), **k), "precision_"),
    ("threshold", lambda **k: ThresholdedCovariance(
        budget=ApproxDP(1.0, 1e-5), bounds=RowNorm(1.0), **k), "covariance_"),
    ("ssp-zcdp (box)", lambda **k: SSPCovariance(budget=ZCDP(0.1), bounds=Box(0.3), **k),
     "covariance_"),
    ("diagonal", lambda **k: DiagonalCovariance(budget=ZCDP(0.1), bounds=Box(0.3), **k),
     "covariance_"),
    ("separate", lambda **k: SeparateCovariance(budget=ZCDP(0.1), bounds=Box(0.3), **k),
     "covariance_"),
    ("adaptive", lambda **k: AdaptiveCovariance(budget=ZCDP(0.1), bounds=Box(0.3), **k),
     "covariance_"),
    ("pace", lambda **k: PACECovariance(budget=ZCDP(0.1), bounds=Box(0.3), max_rounds=40, **k),
     "covariance_"),
    ("ssp add/remove", lambda **k: PrivateCovariance(
        budget=ZCDP(0.1), bounds=RowNorm(1.0), neighbors="add-remove", **k), "covariance_"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=30)
    args = parser.parse_args()
    X = _data()
    print(f"data: n={X.shape[0]}, p={X.shape[1]}; {args.repetitions} seeds per cell")
    header = (
        f"{'estimator':<18}{'exact':>12}{'float':>12}{'difference':>12}{'seed sd':>12}"
        f"{'within':>8}{'s':>7}"
    )
    print(header)
    print("-" * len(header))
    for name, make, attribute in CASES:
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference = getattr(make().set_params(budget=NonPrivate()).fit(X), attribute)
            errors = {"exact": [], "float": []}
            for seed in range(args.repetitions):
                for mode in errors:
                    estimate = getattr(make(noise=mode, random_state=seed).fit(X), attribute)
                    errors[mode].append(np.linalg.norm(estimate - reference))
        exact, floating = np.array(errors["exact"]), np.array(errors["float"])
        spread = float(np.std(np.concatenate([exact, floating]), ddof=1))
        difference = float(exact.mean() - floating.mean())
        within = abs(difference) <= spread
        print(
            f"{name:<18}{exact.mean():>12.4g}{floating.mean():>12.4g}{difference:>12.3g}"
            f"{spread:>12.3g}{'yes' if within else 'NO':>8}{time.perf_counter() - started:>7.1f}"
        )


if __name__ == "__main__":
    main()
