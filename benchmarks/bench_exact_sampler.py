"""Throughput of the exact integer samplers against NumPy's float ``normal``.

What is timed
-------------
* ``sample_discrete_gaussian(sigma, n, random_state=...)`` and
  ``sample_discrete_laplace(sigma, n, random_state=...)`` at sigma (grid units) in
  {3.7, 3.7e3, 1e9, 1e12}, with a seeded Generator (PCG64 words) and with ``"secure"``
  (every word from ``os.urandom`` through ``RandomSource``: what a release uses);
* baseline, in the same run and interleaved with each measurement:
  ``numpy.random.default_rng(0).normal(0.0, sigma, n)``;
* the random word sources themselves, in MB/s: ``os.urandom`` (what ``"secure"`` reads),
  a ChaCha20 key stream keyed from it (``cryptography``'s, when that package is installed:
  the alternative considered for ``"secure"``) and PCG64's ``integers``;
* the exponential mechanism over ``N = d (d - 1) / 2`` candidates (d = 500, PACE-GGM's
  largest case) for three score profiles, against the former float sampler (argmax of
  logits plus ``Generator.gumbel``) as baseline.

Each figure is the best of ``--repeats`` runs timed in CPU time of this process
(:func:`time.process_time`, user + system, so the ``os.urandom`` system calls count): on a
shared machine wall-clock time mostly measures waiting for a core. Both sides are
single-threaded. A warm-up call loads the compiled kernels first.
The ratio is (exact time per sample) / (``normal`` time per sample): the target is at
most 30 under ``"secure"``.

Run: ``PYTHONPATH=src python3 benchmarks/bench_exact_sampler.py [--samples N] [--repeats R]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpggm.mechanisms.discrete_gaussian import sample_discrete_gaussian, sample_discrete_laplace
from dpggm.mechanisms.noise import exponential_mechanism
from dpggm.mechanisms.random import RandomSource

SIGMAS = (3.7, 3.7e3, 1e9, 1e12)


def best_time(function, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return best


def sampler_table(samples: int, repeats: int) -> None:
    generator = np.random.default_rng(0)
    for sampler in (sample_discrete_gaussian, sample_discrete_laplace):
        sampler(3.7, 10, random_state=0)
    print(f"exact samplers, n = {samples:,} per call, best of {repeats}")
    print(
        f"{'sampler':<18}{'sigma':>9}{'source':>9}{'samples/s':>14}"
        f"{'normal/s':>14}{'ratio':>8}"
    )
    worst = {"seeded": 0.0, "secure": 0.0}
    for sampler, name in (
        (sample_discrete_gaussian, "discrete gaussian"),
        (sample_discrete_laplace, "discrete laplace"),
    ):
        for sigma in SIGMAS:
            for source in ("seeded", "secure"):
                state = (np.random.default_rng(1) if source == "seeded"
                         else RandomSource("secure"))
                exact = best_time(
                    lambda f=sampler, s=sigma, r=state: f(s, samples, random_state=r), repeats
                )
                normal = best_time(lambda s=sigma: generator.normal(0.0, s, samples), repeats)
                ratio = exact / normal
                worst[source] = max(worst[source], ratio)
                print(
                    f"{name:<18}{sigma:>9.3g}{source:>9}{samples / exact:>14,.0f}"
                    f"{samples / normal:>14,.0f}{ratio:>8.1f}"
                )
    print(f"worst ratio to numpy normal: secure {worst['secure']:.1f} (target <= 30), "
          f"seeded {worst['seeded']:.1f}")


def source_table(repeats: int, megabytes: int = 64) -> None:
    """MB/s of the word sources: os.urandom, ChaCha20 keyed from it, PCG64."""
    import os

    size = megabytes << 20
    rows = [("os.urandom (secure)", lambda: os.urandom(size))]
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

        def chacha() -> None:
            key, nonce = os.urandom(32), os.urandom(16)
            encryptor = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()
            encryptor.update(bytes(size))

        rows.append(("ChaCha20 keyed from os.urandom", chacha))
    except ImportError:
        rows.append(("ChaCha20 (cryptography not installed)", None))
    pcg = np.random.default_rng(3)
    rows.append(("PCG64 integers", lambda: pcg.integers(0, 1 << 64, size=size // 8,
                                                        dtype=np.uint64)))
    print(f"\nrandom word sources, {megabytes} MB per call, best of {repeats}")
    for name, draw in rows:
        if draw is None:
            print(f"{name:<40}{'-':>12}")
            continue
        seconds = best_time(draw, repeats)
        print(f"{name:<40}{megabytes / seconds:>12,.0f} MB/s")


def float_gumbel(scores: np.ndarray, factor: float, rng: np.random.Generator) -> int:
    return int(np.argmax(factor * scores + rng.gumbel(size=scores.shape)))


def selection_table(repeats: int) -> None:
    d = 500
    count = d * (d - 1) // 2
    rng = np.random.default_rng(2)
    profiles = {
        "spread 0..20 logits": rng.random(count) * 20.0,
        "one best, rest 5 below": np.concatenate([[5.0], np.zeros(count - 1)]),
        "one best, rest 50 below": np.concatenate([[50.0], np.zeros(count - 1)]),
    }
    calls = 10
    print(f"\nexponential mechanism, N = {count:,} candidates, {calls} calls, best of {repeats}")
    print(f"{'scores':<26}{'exact ms/call':>15}{'float ms/call':>15}{'ratio':>8}")
    for name, scores in profiles.items():
        exponential_mechanism(scores, sensitivity=1.0, epsilon=2.0, rng=rng)

        def exact(scores=scores):
            for _ in range(calls):
                exponential_mechanism(scores, sensitivity=1.0, epsilon=2.0, rng=rng)

        def baseline(scores=scores):
            for _ in range(calls):
                float_gumbel(scores, 1.0, rng)

        exact_ms = best_time(exact, repeats) / calls * 1e3
        float_ms = best_time(baseline, repeats) / calls * 1e3
        print(f"{name:<26}{exact_ms:>15.2f}{float_ms:>15.2f}{exact_ms / float_ms:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    sampler_table(args.samples, args.repeats)
    source_table(args.repeats)
    selection_table(args.repeats)


if __name__ == "__main__":
    main()
