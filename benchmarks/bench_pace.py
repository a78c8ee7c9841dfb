"""Speed of whole PACE-GGM fits: the current reconstruction against the one before its rewrite
(commit 5de87ab).

What is run
-----------
:class:`dpggm.estimators.pace.PACECovariance` fits (``Box(1)``, default fractions) on

* the bundled real data sets, mapped into ``[-1, 1]`` by their declared ranges
  (:func:`dpggm.experiments.pace_ggm.load_unit_box`): breast cancer (d = 30), wine (13),
  diabetes (10);
* ``synthetic100``: a d = 100 factor model (5 factors, noise 0.3, n = 5000), whose
  measurements admit no positive-definite completion after a few rounds (the hard,
  singular case) and which needs well over 150 rounds at rho = 10;
* with ``--large D``: a highly correlated d = D factor model (3 factors, noise 0.1,
  n = 5000; effective rank, ``tr(C)^2 / tr(C^2)`` of its correlation, printed) at rho = 1.

Every fit runs twice with the same seed: with the library's current
``MaxEntropyReconstructor`` ("new") and with a pinned copy of the solver as it was before
that rewrite (``benchmarks/_maxent_reference.py``, "old"). Noise drawing and selection are the
same code in both runs, so with equal reconstructions the measurement sequences are equal;
``same picks`` says whether they were. Printed per fit: both times, their ratio, the
relative difference of the covariances (``max |new - old| / max |old|``), rounds and
measured off-diagonal entries, and whether the result is singular. The old run can be cut
short (``--old-limit`` seconds): then its time per round is compared.

``--profile`` splits each round of the new fit (and of the old one) into reconstruction
(update and solve), residual (the scores ``|S_jk - Sigma_jk|``), selection (the exponential
mechanism) and the rest (measurement, accounting), and counts the reconstruction's two
expensive operations per round: Hessian factorisations (``|S| x |S|`` Cholesky, one per
Newton direction computed afresh) and error-free residuals of the refined inverse.

Both runs use single-threaded BLAS (the reconstruction limits itself to one thread).

Usage::

    nice -n 10 python benchmarks/bench_pace.py                 # real sets + synthetic100
    nice -n 10 python benchmarks/bench_pace.py --rho 10 --profile
    nice -n 10 python benchmarks/bench_pace.py --large 200 --old-limit 120
    nice -n 10 python benchmarks/bench_pace.py --large 500 --no-old
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import pathlib
import sys
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

import dpggm.estimators.pace as pace_module
import dpggm.solvers.maxent as maxent_module
from dpggm import ZCDP, Box
from dpggm.estimators.pace import PACECovariance
from dpggm.exceptions import ConvergenceWarning
from dpggm.experiments.pace_ggm import load_unit_box

HERE = pathlib.Path(__file__).resolve().parent


def load_reference():
    spec = importlib.util.spec_from_file_location("_maxent_reference", HERE / "_maxent_reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def factor_data(d: int, *, n: int, rank: int, noise: float, seed: int = 0) -> np.ndarray:
    """``n`` records of a ``rank``-factor model in ``d`` dimensions, clipped into [-1, 1]
    at four standard deviations (bounds fixed by construction, not read off the data)."""
    rng = np.random.default_rng(seed)
    loadings = rng.standard_normal((d, rank))
    X = rng.standard_normal((n, rank)) @ loadings.T + noise * rng.standard_normal((n, d))
    sd = np.sqrt(np.sum(loadings**2, axis=1) + noise**2)
    return np.clip(X / (4 * sd), -1.0, 1.0)


def effective_rank(X: np.ndarray) -> float:
    C = np.corrcoef(X, rowvar=False)
    return float(np.trace(C) ** 2 / np.sum(C * C))


class _Stop(Exception):
    pass


class Profile:
    """Patches the pieces of a PACE round with timers (seconds summed over the fit)."""

    def __init__(self):
        self.recon = self.residual = self.select = 0.0
        self.rounds = 0
        self.factorisations = self.residuals = 0

    @contextlib.contextmanager
    def installed(self, reconstructor_cls):
        prof = self
        original_em = pace_module.exponential_mechanism
        original_scores = pace_module._selection_scores
        solver_module = sys.modules[reconstructor_cls.__module__]
        # The current solver factors in _DualNewton.factor_hessian, the pinned one in
        # _newton_direction.
        if hasattr(solver_module._DualNewton, "factor_hessian"):
            factor_owner, factor_name = solver_module._DualNewton, "factor_hessian"
        else:
            factor_owner, factor_name = solver_module, "_newton_direction"
        original_factor = getattr(factor_owner, factor_name)
        original_residual = solver_module._inverse_residual

        def counted_factor(*args, **kwargs):
            prof.factorisations += 1
            return original_factor(*args, **kwargs)

        def counted_residual(*args, **kwargs):
            prof.residuals += 1
            return original_residual(*args, **kwargs)

        class Timed(reconstructor_cls):
            def update(self, *args, **kwargs):
                t0 = time.perf_counter()
                super().update(*args, **kwargs)
                prof.recon += time.perf_counter() - t0

            def pop_changed(self):
                # The pinned pre-issue class has no change tracking: every score is
                # recomputed, as it was then.
                if hasattr(reconstructor_cls, "pop_changed"):
                    return super().pop_changed()
                return np.arange(self._p)

            def result(self):
                t0 = time.perf_counter()
                out = super().result()
                prof.recon += time.perf_counter() - t0
                return out

        def em(*args, **kwargs):
            t0 = time.perf_counter()
            out = original_em(*args, **kwargs)
            prof.select += time.perf_counter() - t0
            prof.rounds += 1
            return out

        def scores(*args, **kwargs):
            t0 = time.perf_counter()
            out = original_scores(*args, **kwargs)
            prof.residual += time.perf_counter() - t0
            return out

        saved = maxent_module.MaxEntropyReconstructor
        maxent_module.MaxEntropyReconstructor = Timed
        pace_module.exponential_mechanism = em
        pace_module._selection_scores = scores
        setattr(factor_owner, factor_name, counted_factor)
        solver_module._inverse_residual = counted_residual
        try:
            yield
        finally:
            maxent_module.MaxEntropyReconstructor = saved
            pace_module.exponential_mechanism = original_em
            pace_module._selection_scores = original_scores
            setattr(factor_owner, factor_name, original_factor)
            solver_module._inverse_residual = original_residual


def fit(X, rho: float, seed: int, reconstructor_cls, limit: float | None = None) -> dict:
    prof = Profile()
    c0 = time.process_time()
    t0 = time.perf_counter()
    rounds = [0]

    def progress(used, total):
        rounds[0] += 1
        if limit is not None and time.perf_counter() - t0 > limit:
            raise _Stop

    est = PACECovariance(budget=ZCDP(rho), bounds=Box(1.0), random_state=seed, progress=progress)
    complete = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with prof.installed(reconstructor_cls):
            try:
                est.fit(X)
            except _Stop:
                complete = False
    unconverged = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return {
        "cpu": cpu,
        "est": est if complete else None,
        "seconds": seconds,
        "complete": complete,
        "rounds": rounds[0],
        "profile": prof,
        "unconverged": unconverged,
    }


def compare(new: dict, old: dict | None) -> dict:
    out = {"ratio": float("nan"), "diff": float("nan"), "same": "-"}
    if old is None:
        return out
    if old["complete"]:
        out["ratio"] = old["seconds"] / new["seconds"]
        a, b = new["est"], old["est"]
        out["diff"] = float(np.max(np.abs(a.covariance_ - b.covariance_)) / np.max(np.abs(b.covariance_)))
        out["same"] = "yes" if [r.entry for r in a.history_] == [r.entry for r in b.history_] else "no"
    else:
        # Cut short: compare the time per round over the rounds the old run finished.
        per_old = old["seconds"] / max(old["rounds"], 1)
        per_new = new["seconds"] / max(new["rounds"], 1)
        out["ratio"] = per_old / per_new
    return out


def profile_line(label: str, r: dict) -> str:
    p, n = r["profile"], max(r["rounds"], 1)
    rest = r["seconds"] - p.recon - p.residual - p.select
    ms = 1e3 / n
    return (
        f"    {label}: per round {r['seconds'] * ms:8.2f} ms = reconstruction {p.recon * ms:8.2f} + "
        f"residual {p.residual * ms:6.3f} + selection {p.select * ms:6.3f} + rest {rest * ms:6.3f} ms; "
        f"{p.factorisations / n:.1f} Hessian factorisations and {p.residuals / n:.1f} error-free "
        f"residuals per round"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rho", type=float, nargs="+", default=[0.01, 1.0, 10.0])
    parser.add_argument("--data", nargs="+",
                        default=["breast_cancer", "wine", "diabetes", "synthetic100"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--large", type=int, default=None,
                        help="only the highly correlated synthetic set of this dimension, rho=1")
    parser.add_argument("--old-limit", type=float, default=None,
                        help="cut old runs short after this many seconds (compare per round)")
    parser.add_argument("--no-old", action="store_true", help="skip the old reconstruction")
    parser.add_argument("--profile", action="store_true", help="per-round time split")
    args = parser.parse_args()

    reference = None if args.no_old else load_reference()
    current = maxent_module.MaxEntropyReconstructor
    sets = {}
    if args.large is not None:
        X = factor_data(args.large, n=5000, rank=3, noise=0.1)
        sets[f"corr{args.large}"] = X
        rhos = [1.0] if args.rho == [0.01, 1.0, 10.0] else args.rho
        print(f"corr{args.large}: d={args.large}, n=5000, effective rank {effective_rank(X):.2f}")
    else:
        rhos = args.rho
        for name in args.data:
            if name == "synthetic100":
                sets[name] = factor_data(100, n=5000, rank=5, noise=0.3)
            else:
                sets[name] = load_unit_box(name)[0]

    print(f"{'data':>14} {'d':>4} {'rho':>5} {'seed':>4} {'rounds':>6} {'offdiag':>7} "
          f"{'sing':>4} {'new s':>8} {'old s':>8} {'ratio':>7} {'new cpu':>8} {'old cpu':>8} "
          f"{'max rel diff':>12} {'same picks':>10} {'unconv':>7}")
    times: dict[float, list[tuple[float, float]]] = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for name, X in sets.items():
            for rho in rhos:
                for seed in args.seeds:
                    new = fit(X, rho, seed, current)
                    old = None
                    if reference is not None:
                        old = fit(X, rho, seed, reference.MaxEntropyReconstructor,
                                  limit=args.old_limit)
                    cmp = compare(new, old)
                    old_cpu = "-" if old is None else f"{old['cpu']:8.2f}"
                    est = new["est"]
                    old_s = "-" if old is None else (
                        f"{old['seconds']:8.2f}" if old["complete"]
                        else f">{old['seconds']:.0f}({old['rounds']})")
                    print(f"{name:>14} {X.shape[1]:>4} {rho:>5g} {seed:>4} {est.n_rounds_:>6} "
                          f"{est.n_measured_offdiag_:>7} {'yes' if getattr(est, 'precision_', None) is None else 'no':>4} "
                          f"{new['seconds']:>8.2f} {old_s:>8} {cmp['ratio']:>6.1f}x "
                          f"{new['cpu']:>8.2f} {old_cpu:>8} "
                          f"{cmp['diff']:>12.2e} {cmp['same']:>10} "
                          f"{new['unconverged']:>3}/{'-' if old is None else old['unconverged']:<3}",
                          flush=True)
                    if args.profile:
                        print(profile_line("new", new))
                        if old is not None:
                            print(profile_line("old", old))
                    done = old is not None and old["complete"]
                    times.setdefault(rho, []).append(
                        (new["seconds"], old["seconds"] if done else float("nan"),
                         new["cpu"], old["cpu"] if done else float("nan")))
    for rho, ts in times.items():
        t = np.array(ts)
        print(f"rho={rho:g}: mean fit time new {t[:, 0].mean():.2f} s, old {t[:, 1].mean():.2f} s "
              f"(CPU new {t[:, 2].mean():.2f} s, old {t[:, 3].mean():.2f} s) over {len(ts)} fits")
    print("new/old s: wall-clock seconds; cpu: CPU seconds of this process (the machine is shared);"
          "\nratio: old/new time (per round when the old run was cut short, shown as >s(rounds));"
          " max rel diff: max|new - old| / max|old| of covariance_;\nsing: no positive-definite "
          "completion (precision_ is None); same picks: identical selected entries in every round;"
          "\nunconv: reconstructions that warned they did not converge (new/old; an unconverged "
          "old run is no reference).")


if __name__ == "__main__":
    main()
