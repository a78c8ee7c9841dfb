"""The refit of the pilot on a release that has no positive definite completion on its
support: the certificate that proves it, the patterns that cannot have one (a pair or a
triangle whose block of the release is not positive definite), the pair repair, and the
pairs it leaves without an estimate.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpggm.exceptions import NoSolutionError
from dpggm.solvers import inference
from dpggm.solvers._refit_kernels import least_level_with_indefinite_triangle
from dpggm.solvers.inference import edge_inference, support_refit


def _chain_covariance(p: int, strength: float = 0.5) -> np.ndarray:
    precision = np.eye(p) + np.diag([strength] * (p - 1), 1) + np.diag([strength] * (p - 1), -1)
    return np.linalg.inv(precision)


def test_a_release_without_completion_is_refuted_by_a_positive_definite_certificate():
    # The 3-cycle 0-1-2 with correlations 0.9, 0.9 and -0.9 has no positive definite
    # completion of any kind (its full matrix is indefinite and every entry is specified).
    S = np.array([[1.0, 0.9, -0.9], [0.9, 1.0, 0.9], [-0.9, 0.9, 1.0]])
    assert np.linalg.eigvalsh(S)[0] < 0
    with pytest.raises(NoSolutionError, match="unbounded below"):
        support_refit(S, np.ones((3, 3), dtype=bool))


def test_the_certificate_never_refutes_a_release_with_a_completion():
    # A long chain whose neighbours correlate at 0.99: near singular, but positive definite
    # on its own pattern (a path is chordal and every 2 x 2 block is positive definite).
    S = _chain_covariance(60)
    support = np.abs(np.linalg.inv(S)) > 1e-9
    theta, _, converged = support_refit(S, support)
    assert converged
    # To the accuracy of a Newton decrement of 1e-10 at condition number 1 500.
    assert np.allclose(np.linalg.inv(theta)[support], S[support], rtol=0,
                       atol=1e-5 * np.abs(S).max())


def _brute_force_least_level(S: np.ndarray, edges: list[tuple[int, int]]) -> int:
    """The fewest of the (ordered) edges that hold a triangle with an indefinite block."""
    best = len(edges) + 1
    position = {frozenset(e): k for k, e in enumerate(edges)}
    nodes = sorted({v for e in edges for v in e})
    for i, j, k in itertools.combinations(nodes, 3):
        sides = [frozenset((i, j)), frozenset((i, k)), frozenset((j, k))]
        if all(side in position for side in sides):
            block = S[np.ix_([i, j, k], [i, j, k])]
            if np.linalg.eigvalsh(block)[0] <= 0:
                best = min(best, max(position[side] for side in sides) + 1)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_least_level_with_an_indefinite_triangle_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    p = 12
    A = rng.standard_normal((p, 3))
    S = A @ A.T / 3 + 0.05 * np.eye(p) + rng.normal(scale=0.4, size=(p, p))
    S = 0.5 * (S + S.T)
    upper = [(i, j) for i in range(p) for j in range(i + 1, p) if rng.random() < 0.45]
    order = rng.permutation(len(upper))
    ordered = [upper[k] for k in order]
    rows = np.array([e[0] for e in upper], dtype=np.int64)
    cols = np.array([e[1] for e in upper], dtype=np.int64)
    rank = np.empty(len(upper), dtype=np.int64)
    rank[order] = np.arange(len(upper))
    indptr = np.searchsorted(rows, np.arange(p + 1)).astype(np.int64)
    got = least_level_with_indefinite_triangle(indptr, cols, rank, np.ascontiguousarray(S))
    assert got == _brute_force_least_level(S, ordered)


def test_pair_repair_raises_the_variances_of_a_pair_beyond_one_to_the_noise_floor():
    # Variables 0 and 1 correlate at 1.05 in the release: no pattern holding the pair has
    # a completion; the repair raises both variances until the pair's block has smallest
    # eigenvalue at the floor, and says so.
    S = np.eye(4)
    S[0, 1] = S[1, 0] = 1.05
    S[2, 3] = S[3, 2] = 0.3
    start = np.eye(4)
    start[0, 1] = start[1, 0] = -0.4
    start[2, 3] = start[3, 2] = -0.2
    floor = 0.01
    theta, note, inverse, lift = inference._refit_pilot(S, start, floor)
    assert "2 variances raised" in note and "1 of its pairs" in note
    assert np.allclose(lift, [0.06, 0.06, 0.0, 0.0])
    block = S[:2, :2] + np.diag(lift[:2])
    assert np.linalg.eigvalsh(block)[0] == pytest.approx(floor)
    # The refit holds on the repaired release.
    assert np.allclose(inverse[0, 1], 1.05) and np.allclose(np.diag(inverse)[:2], 1.06)


def test_pairs_of_a_raised_variable_are_not_estimable():
    # A 6-variable chain, variable 0 and 1 beyond a correlation of one in the release: every
    # pair with 0 or 1 gets an infinite standard error, the interval [-1, 1] and p-value 1;
    # the others keep their inference.
    S = _chain_covariance(6, 0.4)
    scale = np.sqrt(np.diag(S))
    S = S / np.outer(scale, scale)
    S[0, 1] = S[1, 0] = 1.02
    result = edge_inference(S, n_samples=5000, noise_variance=1e-6, alpha=0.02)
    touched = np.isin(result.source, [0, 1]) | np.isin(result.target, [0, 1])
    assert np.all(np.isinf(result.std_error[touched]))
    assert np.all(result.ci_low[touched] == -1.0) and np.all(result.ci_high[touched] == 1.0)
    assert np.all(result.p_value[touched] == 1.0) and not result.selected[touched].any()
    assert np.all(np.isfinite(result.std_error[~touched]))
    assert result.diagnostics["not_estimable"].sum() == touched.sum()
    # The chain's other edges are still found.
    chain = (result.target - result.source == 1) & ~touched
    assert result.selected[chain].all()


def test_a_kernel_the_polynomials_do_not_factor_is_decomposed_whole_only_when_small():
    rng = np.random.default_rng(3)
    for p, whole in ((40, True), (inference._WHOLE_KERNEL_UP_TO + 1, False)):
        A = rng.standard_normal((p, p))
        kernel = A @ A.T  # no smooth function of the points
        points = np.sort(rng.uniform(0.1, 2.0, p))
        factors = inference._smooth_kernel_factors(kernel, points)
        if whole:
            values, components = factors
            assert np.allclose((components * values) @ components.T, kernel, rtol=0,
                               atol=1e-9 * np.abs(kernel).max())
        else:
            assert factors is None


def test_a_correction_variance_left_out_is_stated(monkeypatch):
    from dpggm.solvers.inference import ClippingModel

    rng = np.random.default_rng(8)
    p, n = 6, 4000
    X = rng.standard_normal((n, p)) @ np.linalg.cholesky(0.09 * _chain_covariance(p, 0.3)).T
    model = ClippingModel(row_norm_bound=float(np.median(np.linalg.norm(X, axis=1))),
                          box=None, recenter=False)
    Z = model.clip(X)
    S = Z.T @ Z / n
    kept = edge_inference(S, n_samples=n, noise_variance=1e-8, clipping=model)
    assert "correction_variance" not in kept.diagnostics
    monkeypatch.setattr(inference, "_correction_variance_ratios", lambda *a, **k: None)
    left = edge_inference(S, n_samples=n, noise_variance=1e-8, clipping=model)
    assert left.diagnostics["correction_variance"].startswith("left out")
    # Held fixed, the correction's own variability is not in the standard errors.
    assert not np.allclose(left.std_error, kept.std_error)


def test_a_completion_singular_within_the_noise_is_said_not_to_hold():
    # Neighbours correlated at 0.999 and a release whose noise exceeds what the pair leaves
    # of its variance: the refit's partial correlations sit at the boundary.
    import warnings

    from dpggm.exceptions import UnreliableInferenceWarning
    from dpggm.solvers.inference import NEAR_SINGULAR_SHARE, edge_inference

    p = 12
    correlation = 0.999 ** np.abs(np.subtract.outer(np.arange(p), np.arange(p)))
    rng = np.random.default_rng(3)
    noise = rng.normal(scale=2e-3, size=(p, p))
    S = correlation + (noise + noise.T) / np.sqrt(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = edge_inference(S, noise_variance=4e-6, n_samples=100_000, alpha=0.01)
    smallest = result.diagnostics.get("near_singular_completion")
    assert smallest is not None and smallest < NEAR_SINGULAR_SHARE * 2e-3
    assert any(issubclass(w.category, UnreliableInferenceWarning) for w in caught)
    # A well-conditioned release: no warning, no diagnostic.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreliableInferenceWarning)
        quiet = edge_inference(np.eye(p) + 0.3 * np.eye(p, k=1) + 0.3 * np.eye(p, k=-1),
                               noise_variance=1e-4, n_samples=10_000, alpha=0.05)
    assert "near_singular_completion" not in quiet.diagnostics


def test_the_record_and_the_report_say_when_the_inference_does_not_hold():
    import warnings

    from dpggm import ZCDP, PrivateGraph
    from dpggm.datasets import make_raw_chain
    from dpggm.estimators.graph import graph_result_record
    from dpggm.report.html import _inference_summary

    frame, _ = make_raw_chain(n_samples=2000, n_features=100, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)
    record = graph_result_record(graph)
    assert "singular within the release's noise" in record["inference"]["unreliable"]
    assert "Caution: the refit&#x27;s completion is singular" in _inference_summary(
        record, graph.edges_, private=True)
