"""The private ranges' cost at biobank width, against ``X^T X``.

For each ``p`` (n = 50 000 Gaussian records in raw units) the script times, in one
process:

* ``X^T X``: the floor of any second-moment release (one BLAS-3 product);
* the range step of ``PrivateGraph(bounds="auto")`` as the pipeline runs it: the three
  counting passes (median grid, refinement grids, deviations; compiled histograms) and the
  three stages' selections, all columns at once (``RangeStages``: one batch of exact
  exponential mechanisms a stage);
* the same selections one column at a time (``choose_cell`` in a loop, as before the batch
  form), on the same counts and a stream from the same seed -- the indices must be
  identical, and are checked.

It prints the seconds and the ratios to ``X^T X``, with the machine's load (``uptime``):
the machine may be shared, so read the ratios, measured in the same run -- both of wall
time and of CPU time (``time.process_time``, all threads of the process: the work done,
which a loaded machine stretches less than the wall time).

Usage::

    nice -n 10 python3 benchmarks/bench_private_ranges_speed.py [--p 100 1000 3000]
        [--n 50000] [--skip-loop]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from dpggm.data import kernels
from dpggm.data.passes import ValueCounts
from dpggm.data.records import ArrayRecords
from dpggm.mechanisms.private_bounds import (
    STAGE_COUNT_WEIGHTS,
    RangeStages,
    choose_cell,
    range_epsilons,
    spread_target,
    target_rank,
)
from dpggm.mechanisms.random import RandomSource
from dpggm.privacy.budgets import ZCDP


def _records(n: int, p: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    means = np.geomspace(3.0, 300.0, p)
    scales = np.geomspace(0.5, 20.0, p)
    X = np.asfortranarray(rng.standard_normal((n, p)))
    X *= scales
    X += means
    return X


def _looped(stages: RangeStages, counts: dict, seed: int) -> dict[str, np.ndarray]:
    """The three stages' cells chosen one column at a time (``choose_cell`` in a loop, as
    before the batch form), on one stream from ``seed``: the released values."""
    source = RandomSource.of(seed)
    out = {}
    for stage, (below, targets, edges) in counts.items():
        weight = STAGE_COUNT_WEIGHTS[stage]
        index = np.array([choose_cell(below[j], int(targets[j]), epsilon=stages.epsilons[stage],
                                      rng=source, count_weight=weight)
                          for j in range(below.shape[0])])
        rows = np.arange(below.shape[0])
        if edges.ndim == 1:
            out[stage] = (edges[index], edges[index + 1])
        else:
            out[stage] = (edges[rows, index], edges[rows, index + 1])
    return out


class _Clock:
    """Wall and CPU seconds of a block, added to ``timings[name]`` and ``cpu[name]``."""

    def __init__(self, timings: dict[str, float], cpu: dict[str, float]) -> None:
        self.timings, self.cpu = timings, cpu

    def __call__(self, name: str) -> _Clock:
        self.name = name
        return self

    def __enter__(self) -> None:
        self.wall, self.process = time.perf_counter(), time.process_time()

    def __exit__(self, *exc: object) -> None:
        self.timings[self.name] = time.perf_counter() - self.wall
        self.cpu[self.name] = time.process_time() - self.process


def run(n: int, p: int, *, loop: bool) -> tuple[dict[str, float], dict[str, float]]:
    X = _records(n, p)
    timings: dict[str, float] = {}
    cpu: dict[str, float] = {}
    clock = _Clock(timings, cpu)
    with clock("xtx"):
        gram = X.T @ X
    del gram
    records = ArrayRecords(X, [f"x{j}" for j in range(p)])
    stages = RangeStages(epsilons=range_epsilons(ZCDP(0.03), p, n=n))
    seed = 11
    stream = RandomSource.of(seed)

    with clock("count median"):
        first = records.run(ValueCounts(stages.median_edges, kernels.SYMMETRIC))
    with clock("select median"):
        median = stages.choose_median(first.below(), first.counted, stream)
    with clock("count refine"):
        edges = stages.refine_edges(*median)
        refine = records.run(ValueCounts(edges, kernels.LINEAR))
    with clock("select refine"):
        lower, upper = stages.choose_refined(edges, refine.below(), refine.counted, stream)
    with clock("count spread"):
        center = (lower + upper) / 2
        spread_counts = records.run(ValueCounts(stages.spread_edges, kernels.GEOMETRIC,
                                                centers=center,
                                                tie_radius=stages.tie_radius(lower, upper)))
    with clock("select spread"):
        spread = stages.choose_spread(spread_counts.below(), spread_counts.tied,
                                      spread_counts.counted, stream)
    if loop:
        half = np.array([target_rank(int(m), 0.5) for m in first.counted])
        counts = {
            "median": (first.below(), half, stages.median_edges),
            "refine": (refine.below(), np.array([target_rank(int(m), 0.5)
                                                 for m in refine.counted]), edges),
            "spread": (spread_counts.below(),
                       spread_target(spread_counts.counted, spread_counts.tied),
                       stages.spread_edges),
        }
        with clock("select, one column at a time"):
            looped = _looped(stages, counts, seed)
        low, high = looped["spread"]
        timings["identical"] = float(
            np.array_equal(looped["median"][0], median[0])
            and np.array_equal(looped["refine"][0], lower)
            and np.array_equal(np.sqrt(low * high), spread))
    return timings, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--p", type=int, nargs="+", default=[100, 1000, 3000])
    parser.add_argument("--n", type=int, default=50000)
    parser.add_argument("--skip-loop", action="store_true",
                        help="do not time the one-column-at-a-time selections")
    args = parser.parse_args()
    # Compile the kernels and start the BLAS threads before anything is timed.
    run(2000, 20, loop=True)
    print(f"load before: {os.getloadavg()}")
    for p in args.p:
        t, c = run(args.n, p, loop=not args.skip_loop)
        for label, d in (("wall", t), ("cpu", c)):
            counting = d["count median"] + d["count refine"] + d["count spread"]
            selecting = d["select median"] + d["select refine"] + d["select spread"]
            line = (f"p = {p:>5}, n = {args.n}, {label:>4}: X^T X {d['xtx']:.2f} s; range step "
                    f"{counting + selecting:.2f} s = {(counting + selecting) / d['xtx']:.2f} x "
                    f"X^T X (counting {counting:.2f} s = {counting / d['xtx']:.2f} x, selecting "
                    f"{selecting:.2f} s = {selecting / d['xtx']:.3f} x)")
            if "identical" in t:
                looped = d["select, one column at a time"]
                line += (f"; selecting one column at a time: {looped:.2f} s = "
                         f"{looped / d['xtx']:.3f} x")
            print(line, flush=True)
        if "identical" in t:
            print(f"    batch and one column at a time chose the same cells: "
                  f"{'yes' if t['identical'] else 'NO'}", flush=True)
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
