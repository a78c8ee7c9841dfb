"""Counting passes: exact histograms on public grids, spilled file blocks, and the same
release from memory and from a file."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from dpggm import ZCDP, PrivateGraph
from dpggm.datasets import make_raw_chain
from dpggm.estimators import _count_kernels as kernels
from dpggm.estimators._passes import (
    ArrayRecords,
    FileRecords,
    Moments,
    NormCounts,
    Ranges,
    ValueCounts,
)
from dpggm.mechanisms.private_bounds import RangeStages, candidate_grid, norm_edges


def _awkward_values(rng: np.random.Generator, n: int) -> np.ndarray:
    """Values on every scale, exact grid edges, zeros, ties and extremes."""
    grid = candidate_grid(per_octave=16)
    parts = [
        rng.normal(0, 1, n) * np.exp2(rng.integers(-30, 50, n)),
        rng.choice(grid, n),                       # exactly on edges
        np.nextafter(rng.choice(grid, n), np.inf),  # just above edges
        np.zeros(n // 10),
        np.full(n // 10, 3.0),                     # ties
        np.array([1e300, -1e300, 5e-324, -5e-324, np.finfo(float).max]),
    ]
    return np.concatenate(parts)


def _reference_below(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.sort(values), edges, side="left")


@pytest.mark.parametrize("kind, edges", [
    (kernels.SYMMETRIC, candidate_grid(per_octave=16)),
    (kernels.GEOMETRIC, candidate_grid(per_octave=16)[candidate_grid(per_octave=16) > 0]),
    (kernels.GEOMETRIC, norm_edges(7.3)),
])
def test_bucket_counts_equal_searchsorted_on_awkward_values(kind, edges):
    rng = np.random.default_rng(0)
    X = np.column_stack([_awkward_values(rng, 3000) for _ in range(3)])
    task = ValueCounts(edges, kind)
    state = ArrayRecords(X, ["a", "b", "c"]).run(task)
    below = state.below()
    for j in range(3):
        np.testing.assert_array_equal(below[j], _reference_below(X[:, j], edges))
    assert (state.counted == X.shape[0]).all()


def test_linear_and_deviation_counts_equal_searchsorted():
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.normal(5, 2, 5000), rng.integers(1, 7, 5000).astype(float)])
    lower, upper = np.array([4.5, 3.0]), np.array([5.1, 3.4])
    edges = RangeStages.refine_edges(lower, upper)
    below = ArrayRecords(X, ["a", "b"]).run(ValueCounts(edges, kernels.LINEAR)).below()
    for j in range(2):
        np.testing.assert_array_equal(below[j], _reference_below(X[:, j], edges[j]))
    centre = np.array([5.0, 3.2])
    radius = np.array([0.01, 0.25])
    spread = RangeStages(epsilons={}).spread_edges
    state = ArrayRecords(X, ["a", "b"]).run(
        ValueCounts(spread, kernels.GEOMETRIC, centres=centre, tie_radius=radius))
    for j in range(2):
        deviations = np.abs(X[:, j] - centre[j])
        np.testing.assert_array_equal(state.below()[j], _reference_below(deviations, spread))
        assert state.tied[j] == np.sum(deviations <= radius[j])


def test_missing_values_are_counted_apart():
    X = np.array([[1.0, np.nan], [2.0, 3.0], [np.nan, np.nan]])
    state = ArrayRecords(X, ["a", "b"]).run(ValueCounts(candidate_grid(per_octave=4),
                                                        kernels.SYMMETRIC))
    np.testing.assert_array_equal(state.missing, [1, 2])
    np.testing.assert_array_equal(state.counted, [2, 1])
    assert state.counts.sum() == 3


def test_norm_counts_follow_the_rescaling_of_the_ranges():
    rng = np.random.default_rng(2)
    X = rng.normal(10, 3, size=(4000, 5))
    lower, upper = np.full(5, 4.0), np.full(5, 16.0)
    edges = norm_edges(np.sqrt(5))
    state = ArrayRecords(X, list("abcde")).run(NormCounts(Ranges(lower, upper), edges))
    z = np.clip((np.clip(X, lower, upper) - 10.0) / 6.0, -1, 1)
    norms = np.sqrt(np.sum(z * z, axis=1))
    np.testing.assert_array_equal(state.below(), _reference_below(norms, edges))


def test_moments_match_the_clipped_records():
    rng = np.random.default_rng(3)
    X = rng.normal(0, 2, size=(5000, 4))
    r = Ranges(np.full(4, -3.0), np.full(4, 3.0))
    state = ArrayRecords(X, list("abcd")).run(Moments(ranges=r, norm_bound=1.2))
    gram, total, n = state.second_moment_sums()
    z = np.clip(X, -3, 3) / 3
    norms = np.linalg.norm(z, axis=1)
    z = z * np.minimum(1.0, 1.2 * (1 - 1e-12) / norms)[:, None]
    np.testing.assert_allclose(gram, z.T @ z, rtol=1e-9)
    np.testing.assert_allclose(total, z.sum(axis=0), rtol=1e-9, atol=1e-9)
    assert n == 5000 and state.over_norm == int(np.sum(norms > 1.2))
    assert state.outside_rows == int(np.any(np.abs(X) > 3, axis=1).sum())


def test_file_records_spill_owner_only_and_are_removed(tmp_path):
    frame, _ = make_raw_chain(n_samples=3000, n_features=4, random_state=0)
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    seen = {}

    class Watch(ValueCounts):
        def add(self, state, block):
            if records._spill_dir is not None and "mode" not in seen:
                seen["mode"] = stat.S_IMODE(os.stat(records._spill_dir).st_mode)
            super().add(state, block)

    old = os.umask(0)
    try:
        records = FileRecords(path, memory_limit=1024)
        task = Watch(candidate_grid(per_octave=16), kernels.SYMMETRIC)
        first = records.run(task)
        spill_dir = records._spill_dir
        assert spill_dir is not None and stat.S_IMODE(os.stat(spill_dir).st_mode) == 0o700
        again = records.run(ValueCounts(candidate_grid(per_octave=16), kernels.SYMMETRIC))
        np.testing.assert_array_equal(first.counts, again.counts)
        assert records.n_samples == 3000 and records.columns == list(frame.columns)
        records.close()
        assert not os.path.exists(spill_dir)
    finally:
        os.umask(old)
    assert seen.get("mode", 0o700) == 0o700


@pytest.mark.parametrize("memory_limit", [1 << 30, 4096])
def test_private_graph_on_a_file_equals_in_memory(tmp_path, monkeypatch, memory_limit):
    from dpggm.estimators import _passes

    monkeypatch.setattr(_passes, "MEMORY_LIMIT", memory_limit)
    frame, _ = make_raw_chain(n_samples=6000, n_features=6, random_state=1)
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False, float_format="%.17g")
    memory = PrivateGraph(budget=ZCDP(1.0), random_state=4).fit(frame)
    streamed = PrivateGraph(budget=ZCDP(1.0), random_state=4).fit(str(path))
    np.testing.assert_array_equal(memory.ranges_.lower, streamed.ranges_.lower)
    assert memory.norm_bound_.bound == streamed.norm_bound_.bound
    np.testing.assert_allclose(memory.noisy_covariance_, streamed.noisy_covariance_,
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(memory.adjacency_, streamed.adjacency_)
    assert list(streamed.feature_names_in_) == list(frame.columns)
    assert not list(tmp_path.glob("dpggm-records-*"))


def test_plan_states_what_the_fit_records():
    frame, _ = make_raw_chain(n_samples=5000, n_features=6, random_state=2)
    estimator = PrivateGraph(budget=ZCDP(0.5), random_state=0)
    plan = estimator.plan(n_samples=5000, n_features=6)
    fitted = estimator.fit(frame)
    assert fitted.plan_ == plan
    recorded = fitted.privacy_.noise["breakdown"]
    assert [s["step"] for s in recorded] == [s.step for s in plan.steps]
    assert [s["budget"] for s in recorded] == [s.budget for s in plan.steps]
    assert plan.spends_exactly and fitted.privacy_.notes["spent_exactly_total"]
    # The record carries the plan, so a reader sees both.
    assert fitted.privacy_.notes["plan"] == plan.to_dict()
