"""Counting passes: exact histograms on public grids, spilled file blocks, and the same
release from memory and from a file."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from dpggm import ZCDP, PrivateGraph
from dpggm.data import kernels
from dpggm.data.file_records import FileRecords
from dpggm.data.passes import Moments, NormCounts, Ranges, ValueCounts
from dpggm.data.records import ArrayRecords
from dpggm.data.tables import TableFile
from dpggm.datasets import make_raw_chain
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
    center = np.array([5.0, 3.2])
    radius = np.array([0.01, 0.25])
    spread = RangeStages(epsilons={}).spread_edges
    state = ArrayRecords(X, ["a", "b"]).run(
        ValueCounts(spread, kernels.GEOMETRIC, centers=center, tie_radius=radius))
    for j in range(2):
        deviations = np.abs(X[:, j] - center[j])
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
            if records._spill is not None and "mode" not in seen:
                # The spilled records have no name: only the open descriptor reaches them,
                # owner-only whatever the umask; their directory is gone.
                info = os.fstat(records._spill._fd)
                seen["mode"], seen["links"] = stat.S_IMODE(info.st_mode), info.st_nlink
                seen["dir"] = os.path.exists(records._spill_dir)
            super().add(state, block)

    old = os.umask(0)
    try:
        records = FileRecords(path, memory_limit=1024)
        task = Watch(candidate_grid(per_octave=16), kernels.SYMMETRIC)
        first = records.run(task)
        assert seen == {"mode": 0o600, "links": 0, "dir": False}
        again = records.run(ValueCounts(candidate_grid(per_octave=16), kernels.SYMMETRIC))
        np.testing.assert_array_equal(first.counts, again.counts)
        assert records.n_samples == 3000 and records.columns == list(frame.columns)
        records.close()
        assert records._spill is None
    finally:
        os.umask(old)


@pytest.mark.parametrize("memory_limit", [1 << 30, 4096])
def test_private_graph_on_a_file_equals_in_memory(tmp_path, monkeypatch, memory_limit):
    from dpggm.data import file_records

    monkeypatch.setattr(file_records, "MEMORY_LIMIT", memory_limit)
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


def test_counts_stay_exact_on_edges_the_grid_formula_does_not_describe():
    """A sorted grid that is not geometric: the guesses are wrong, the counts still exact."""
    rng = np.random.default_rng(5)
    edges = np.sort(np.concatenate([rng.uniform(0.1, 5, 40), np.exp2(rng.uniform(-8, 8, 40))]))
    X = np.column_stack([rng.exponential(2, 4000), rng.uniform(0, 300, 4000)])
    for kind in (kernels.GEOMETRIC, kernels.LINEAR):
        below = ArrayRecords(X, ["a", "b"]).run(ValueCounts(edges, kind)).below()
        for j in range(2):
            np.testing.assert_array_equal(below[j], _reference_below(X[:, j], edges))


def test_norm_clip_follows_the_row_norm_rule():
    """The fused clip of the clipped sums shrinks exactly the rows RowNorm.clip shrinks
    (rows within rounding of the bound are settled in rationals), onto the same point."""
    from dpggm.data.passes import norm_clip_factors
    from dpggm.mechanisms.bounds import RowNorm

    rng = np.random.default_rng(6)
    bound = 1.3
    z = rng.normal(size=(3000, 7))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    scale = bound * (1 + rng.choice([-1, 1], 3000) * rng.choice([0.0, 1e-17, 1e-16, 1e-15,
                                                                   1e-3, 0.5], 3000))
    z *= scale[:, None]
    z[:5] = 0.0
    squared = np.zeros(len(z))
    for j in range(z.shape[1]):  # the kernels' order: column by column
        squared += z[:, j] * z[:, j]
    expected, changed = RowNorm(bound).clip(z)
    factor = norm_clip_factors(squared, z, bound)
    assert factor is not None and int(np.sum(factor != 1.0)) == changed > 0
    np.testing.assert_allclose(z * factor[:, None], expected, rtol=2e-15, atol=0)
    assert np.all(np.linalg.norm(z * factor[:, None], axis=1) <= bound)


def test_byte_blocks_end_at_line_breaks_and_cover_the_file(tmp_path):
    from dpggm.data.tables import _byte_blocks

    rng = np.random.default_rng(7)
    lines = [b"x" * int(n) for n in rng.integers(0, 3000, 400)]
    body = b"\n".join(lines)  # no final line break; some lines longer than a block
    path = tmp_path / "lines.txt"
    path.write_bytes(b"header\n" + body)
    blocks = [bytes(b) for b in _byte_blocks(path, block_size=1024, skip=7)]
    assert all(b.endswith(b"\n") for b in blocks)
    assert b"".join(blocks) == body + b"\n"


def test_passes_do_not_depend_on_the_number_of_threads(tmp_path, monkeypatch):
    from dpggm.data import passes

    frame, _ = make_raw_chain(n_samples=20000, n_features=5, random_state=3)
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    r = Ranges(frame.quantile(0.1).to_numpy(), frame.quantile(0.9).to_numpy())
    results = []
    for workers in (1, 2):
        monkeypatch.setattr(passes, "PASS_WORKERS", workers)
        with FileRecords(TableFile(path, block_size=4096), memory_limit=8192) as records:
            records.run(ValueCounts(candidate_grid(per_octave=16), kernels.SYMMETRIC))
            results.append(records.run(Moments(ranges=r, norm_bound=1.0)))
    np.testing.assert_array_equal(results[0].gram, results[1].gram)
    assert results[0].changed_rows == results[1].changed_rows


def test_a_failed_write_of_the_temporary_file_is_raised_and_cleaned_up(tmp_path,
                                                                     monkeypatch):
    from dpggm.data import file_records

    frame, _ = make_raw_chain(n_samples=5000, n_features=4, random_state=0)
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)

    def full(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(file_records._SpillWriter, "_write", full)
    records = FileRecords(TableFile(path, block_size=4096, scratch=str(tmp_path)),
                          memory_limit=1024)
    with pytest.raises(OSError, match="No space left"):
        records.run(ValueCounts(candidate_grid(per_octave=16), kernels.SYMMETRIC))
    assert not list(tmp_path.glob("dpggm-records-*"))


def test_private_graph_on_a_parquet_file_equals_in_memory(tmp_path):
    frame, _ = make_raw_chain(n_samples=6000, n_features=6, random_state=2)
    path = tmp_path / "d.parquet"
    frame.to_parquet(path, index=False)
    memory = PrivateGraph(budget=ZCDP(1.0), random_state=3).fit(frame)
    streamed = PrivateGraph(budget=ZCDP(1.0), random_state=3).fit(
        TableFile(path, block_size=8192))
    np.testing.assert_array_equal(memory.ranges_.lower, streamed.ranges_.lower)
    assert memory.norm_bound_.bound == streamed.norm_bound_.bound
    np.testing.assert_allclose(memory.noisy_covariance_, streamed.noisy_covariance_,
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(memory.adjacency_, streamed.adjacency_)


def test_blocks_beyond_the_memory_limit_go_to_the_temporary_file(tmp_path):
    """A small file whose parsed values outgrow the limit: the first blocks stay in memory,
    the rest go to the temporary file, and every pass reads both, in order."""
    rng = np.random.default_rng(8)
    values = rng.integers(0, 10, size=(40000, 3)).astype(float)
    path = tmp_path / "digits.csv"
    np.savetxt(path, values, fmt="%d", delimiter=",", header="a,b,c", comments="")
    limit = path.stat().st_size + 1  # the file fits, its parsed values (4x larger) do not
    task = ValueCounts(candidate_grid(per_octave=16), kernels.SYMMETRIC)
    with FileRecords(TableFile(path, block_size=8192), memory_limit=limit) as records:
        first = records.run(task)
        assert records._kept and records._spill_dir is not None
        again = records.run(task)
        sums = records.run(Moments())
    expected = ArrayRecords(values, ["a", "b", "c"]).run(task)
    np.testing.assert_array_equal(first.counts, expected.counts)
    np.testing.assert_array_equal(again.counts, expected.counts)
    gram, total, n = sums.second_moment_sums()
    np.testing.assert_allclose(gram, values.T @ values, rtol=1e-12)
    np.testing.assert_allclose(total, values.sum(axis=0), rtol=1e-12)
    assert n == 40000


def test_an_error_while_parsing_reaches_the_fit_and_leaves_nothing_behind(tmp_path):
    """The parser runs in a background thread: its error (here a non-numeric value far
    into the file, after blocks went to the temporary file) is raised by the fit, before
    any noise is drawn, and the temporary file is gone."""
    frame, _ = make_raw_chain(n_samples=20000, n_features=4, random_state=0)
    text = frame.to_csv(index=False).splitlines()
    text[15000] = text[15000].replace(text[15000].split(",")[2], "abc", 1)
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(text) + "\n")
    source = TableFile(path, block_size=4096, scratch=str(tmp_path))
    with pytest.raises(ValueError, match=r"non-numeric value 'abc' in column 'x2' on line 15001"):
        PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(source)
    assert not list(tmp_path.glob("dpggm-records-*"))
