"""Tests for the maximum-entropy reconstruction (PACE-GGM) in dpggm.solvers.maxent."""

from __future__ import annotations

import warnings

import cvxpy as cp
import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer

from dpggm.exceptions import ConvergenceWarning
from dpggm.solvers._result import SolverResult
from dpggm.solvers.maxent import (
    MaxEntropyReconstructor,
    max_entropy_completion,
    pattern_components,
)

# ----------------------------------------------------------------------------------------
# Helpers (independent of the solver)
# ----------------------------------------------------------------------------------------


def rel_err(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def random_covariance(rng, n, extra=3):
    A = rng.standard_normal((n, n + extra))
    return A @ A.T / (n + extra)


def symmetric_pattern(n, edges):
    P = np.eye(n, dtype=bool)
    for j, k in edges:
        P[j, k] = P[k, j] = True
    return P


def noiseless(sigma, pattern, precision=100.0):
    return np.where(pattern, sigma, 0.0), np.where(pattern, precision, 0.0)


def cvxpy_max_det(sigma, pattern):
    """Dempster's completion: maximise log det W subject to W_jk = sigma_jk on the pattern."""
    n = sigma.shape[0]
    W = cp.Variable((n, n), PSD=True)
    cons = [W[j, k] == sigma[j, k] for j in range(n) for k in range(j + 1) if pattern[j, k]]
    cp.Problem(cp.Maximize(cp.log_det(W)), cons).solve(
        solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10
    )
    return W.value


def cvxpy_weighted_psd_projection(values, precisions):
    """argmin over PSD W of sum_{j>=k} lambda_jk (W_jk - y_jk)^2 (all entries measured)."""
    n = values.shape[0]
    W = cp.Variable((n, n), PSD=True)
    rows, cols = np.tril_indices(n)
    w = np.sqrt(precisions[rows, cols])
    terms = cp.hstack([W[j, k] for j, k in zip(rows, cols)])
    obj = cp.sum_squares(cp.multiply(w, terms - values[rows, cols]))
    cp.Problem(cp.Minimize(obj)).solve(
        solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10
    )
    return W.value


def mpmath_barrier_solution(values, precisions, mu_final=1e-20, dps=40):
    """Sigma_mu of the barrier problem at a tiny mu, by Newton's method in 40 digits.

    Minimises the dual tr(KY) - log det K + mu/2 sum_s c_s^2 kappa_s^2 / lambda_s over
    pattern-supported K (c_s = 2 off the diagonal) for mu decreasing by 1e3 per stage,
    without extrapolation. With mu = 1e-20 the O(mu) distance to the mu -> 0 limit is far
    below double precision.
    """
    mp = mpmath.mp
    mp.dps = dps
    n = values.shape[0]
    rows, cols = np.nonzero(np.tril(precisions > 0))
    y = [mp.mpf(float(values[r, c])) for r, c in zip(rows, cols)]
    lam = [mp.mpf(float(precisions[r, c])) for r, c in zip(rows, cols)]
    cs = [1 if r == c else 2 for r, c in zip(rows, cols)]
    m = len(rows)

    def dense(kappa):
        K = mp.zeros(n, n)
        for s_, (r, c) in enumerate(zip(rows, cols)):
            K[r, c] = K[c, r] = kappa[s_]
        return K

    def objective(kappa, mu):
        try:
            C = mp.cholesky(dense(kappa))
        except ValueError:
            return mp.inf
        logdet = 2 * sum(mp.log(C[i, i]) for i in range(n))
        return (
            sum(cs[i] * kappa[i] * y[i] for i in range(m))
            - logdet
            + mu / 2 * sum(cs[i] ** 2 * kappa[i] ** 2 / lam[i] for i in range(m))
        )

    kappa = [mp.one / y[i] if rows[i] == cols[i] else mp.zero for i in range(m)]
    mu = min(lam)
    while mu > mu_final:
        for _ in range(100):
            W = dense(kappa) ** -1
            grad = [
                cs[i] * (y[i] - W[rows[i], cols[i]]) + mu * cs[i] ** 2 * kappa[i] / lam[i]
                for i in range(m)
            ]
            H = mp.zeros(m, m)
            for i in range(m):
                for j in range(m):
                    H[i, j] = (
                        mp.mpf(cs[i] * cs[j])
                        / 2
                        * (
                            W[rows[i], rows[j]] * W[cols[i], cols[j]]
                            + W[rows[i], cols[j]] * W[cols[i], rows[j]]
                        )
                    )
                H[i, i] += mu * cs[i] ** 2 / lam[i]
            step = mp.lu_solve(H, mp.matrix([-g for g in grad]))
            dec = -sum(grad[i] * step[i] for i in range(m))
            if dec < mp.mpf(10) ** (-dps + 8):
                break
            f0, alpha = objective(kappa, mu), mp.one
            while (
                objective([kappa[i] + alpha * step[i] for i in range(m)], mu) > f0 - alpha * dec / 4
            ):
                alpha /= 2
            kappa = [kappa[i] + alpha * step[i] for i in range(m)]
        mu /= 1000
    W = dense(kappa) ** -1
    return np.array([[float(W[i, j]) for j in range(n)] for i in range(n)])


def tree_closed_form_precision(sigma, edges):
    """Dempster's completion on a tree pattern: cliques are edges, separators are vertices.

    K = sum_edges [Sigma_e^{-1}]^0 - sum_v (deg(v) - 1) [1 / Sigma_vv]^0.
    """
    n = sigma.shape[0]
    K = np.zeros((n, n))
    degree = np.zeros(n, dtype=int)
    for j, k in edges:
        idx = [j, k]
        K[np.ix_(idx, idx)] += np.linalg.inv(sigma[np.ix_(idx, idx)])
        degree[j] += 1
        degree[k] += 1
    for v in range(n):
        K[v, v] -= (degree[v] - 1) / sigma[v, v]
    return K


def off_pattern_inverse_ratio(cov, pattern):
    K = np.linalg.inv(cov)
    return np.max(np.abs(K[~pattern])) / np.max(np.abs(K)) if np.any(~pattern) else 0.0


def random_tree_edges(rng, n):
    return [(v, int(rng.integers(0, v))) for v in range(1, n)]


def pace_like_measurements(seed, size, n_extra, *, rho=1.0, features=None):
    """Noisy PACE-style measurements on a connected pattern of breast-cancer features.

    Features are scaled into [-1, 1] from their observed min/max (declared bounds for a test),
    S = X^T X / n, per-entry sensitivity 2/n, diagonal budget 0.3 rho split over d = 30
    entries, off-diagonal measurements at 2% of rho each.
    """
    X = load_breast_cancer().data
    X = 2 * (X - X.min(0)) / (X.max(0) - X.min(0)) - 1
    n_rows, d = X.shape
    S = X.T @ X / n_rows
    delta = 2.0 / n_rows
    sd_diag = delta / np.sqrt(2 * 0.3 * rho / d)
    sd_off = delta / np.sqrt(2 * 0.02 * rho)
    rng = np.random.default_rng(seed)
    idx = rng.choice(d, size, replace=False) if features is None else np.asarray(features)
    Sx = S[np.ix_(idx, idx)]
    perm = rng.permutation(size)
    edges = [(perm[i + 1], perm[i]) for i in range(size - 1)]
    others = [(a, b) for a in range(size) for b in range(a) if (a, b) not in edges]
    others = [others[i] for i in rng.permutation(len(others))[:n_extra]]
    values = np.diag(np.diag(Sx) + sd_diag * rng.standard_normal(size))
    precisions = np.diag(np.full(size, sd_diag**-2))
    for a, b in edges + others:
        values[a, b] = values[b, a] = Sx[a, b] + sd_off * rng.standard_normal()
        precisions[a, b] = precisions[b, a] = sd_off**-2
    return values, precisions


# ----------------------------------------------------------------------------------------
# Noiseless measurements: Dempster's maximum-entropy completion
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "edges"),
    [
        (4, [(1, 0), (2, 1), (3, 2), (3, 0)]),  # 4-cycle: not chordal
        (6, [(1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (5, 0)]),  # 6-cycle
        (6, [(1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (5, 0), (3, 0)]),  # two 4-cycles
        (5, [(1, 0), (2, 0), (2, 1), (3, 2), (4, 3)]),  # chordal (triangle + chain)
        (
            9,
            [(i + 1, i) for i in range(8)]
            + [(j, i) for i in range(9) for j in range(i + 2, 9) if (i * 7 + j * 3) % 5 == 0],
        ),
    ],
)
def test_noiseless_matches_cvxpy_max_det(n, edges):
    rng = np.random.default_rng(n + len(edges))
    sigma = random_covariance(rng, n)
    pattern = symmetric_pattern(n, edges)
    assert len(pattern_components(pattern.astype(float))) == 1
    values, precisions = noiseless(sigma, pattern)
    res = max_entropy_completion(values, precisions)
    assert isinstance(res, SolverResult) and res.converged
    assert res.extra["method"] == "dual-newton"
    ref = cvxpy_max_det(sigma, pattern)
    assert rel_err(res.estimate, ref) < 1e-6
    assert off_pattern_inverse_ratio(res.estimate, pattern) < 1e-6
    np.testing.assert_allclose(res.estimate[pattern], sigma[pattern], rtol=1e-9, atol=1e-12)
    # The reported precision is the inverse with structural zeros.
    assert np.all(res.precision[~pattern] == 0.0)
    assert rel_err(res.precision, np.linalg.inv(res.estimate)) < 1e-8


@pytest.mark.parametrize("n", [3, 7, 15, 30])
def test_tree_pattern_matches_clique_separator_formula(n):
    rng = np.random.default_rng(100 + n)
    sigma = random_covariance(rng, n)
    edges = random_tree_edges(rng, n)
    pattern = symmetric_pattern(n, edges)
    values, precisions = noiseless(sigma, pattern, precision=1e4)
    K_ref = tree_closed_form_precision(sigma, edges)
    res = max_entropy_completion(values, precisions)
    assert rel_err(res.precision, K_ref) < 1e-6
    assert rel_err(res.estimate, np.linalg.inv(K_ref)) < 1e-6


def test_ipm_cholesky_matches_closed_form_on_a_chain():
    rng = np.random.default_rng(7)
    sigma = random_covariance(rng, 5)
    edges = [(i + 1, i) for i in range(4)]
    pattern = symmetric_pattern(5, edges)
    values, precisions = noiseless(sigma, pattern, precision=400.0)
    res = max_entropy_completion(values, precisions, method="ipm-cholesky")
    assert res.extra["method"] == "ipm-cholesky"
    K_ref = tree_closed_form_precision(sigma, edges)
    assert rel_err(res.estimate, np.linalg.inv(K_ref)) < 1e-6


# ----------------------------------------------------------------------------------------
# Components
# ----------------------------------------------------------------------------------------


def test_components_solved_separately_equal_whole():
    rng = np.random.default_rng(11)
    n = 9
    sigma = random_covariance(rng, n)
    # Components {0, 3, 6, 8} (a 4-cycle), {1, 4, 7} (a chain), {2} and {5}.
    edges = [(3, 0), (6, 3), (8, 6), (8, 0), (4, 1), (7, 4)]
    pattern = symmetric_pattern(n, edges)
    values, precisions = noiseless(sigma, pattern)
    values[5, 5] = -0.2  # a noisy negative variance in a singleton
    whole = max_entropy_completion(values, precisions)
    comps = whole.extra["components"]
    assert [list(c) for c in comps] == [[0, 3, 6, 8], [1, 4, 7], [2], [5]]
    for idx in comps:
        sub = np.ix_(idx, idx)
        part = max_entropy_completion(values[sub], precisions[sub])
        np.testing.assert_allclose(whole.estimate[sub], part.estimate, rtol=1e-10, atol=1e-14)
    label = np.empty(n, dtype=int)
    for c, idx in enumerate(comps):
        label[idx] = c
    assert np.all(whole.estimate[label[:, None] != label[None, :]] == 0.0)
    # The singleton answer is max(y_jj, 0); the whole covariance is then singular.
    assert whole.estimate[5, 5] == 0.0
    assert whole.estimate[2, 2] == values[2, 2]
    assert whole.precision is None
    assert whole.extra["singular_components"] == [3]


# ----------------------------------------------------------------------------------------
# Noisy measurements with no positive-definite completion
# ----------------------------------------------------------------------------------------


def test_inconsistent_2x2_is_the_weighted_psd_projection():
    values = np.array([[0.5, 0.9], [0.9, 1.0]])  # |y12| > sqrt(y11 y22)
    precisions = np.array([[400.0, 100.0], [100.0, 900.0]])
    res = max_entropy_completion(values, precisions)
    ref = cvxpy_weighted_psd_projection(values, precisions)
    assert rel_err(res.estimate, ref) < 1e-6
    assert res.precision is None and res.extra["singular_components"] == [0]
    assert np.linalg.matrix_rank(res.estimate, tol=1e-8) == 1


@pytest.mark.parametrize("seed", [0, 1])
def test_complete_noisy_pattern_is_the_weighted_psd_projection(seed):
    # With every entry measured the minimiser of the fit is unique: the entropy plays no
    # role and the answer is the precision-weighted projection onto the PSD cone.
    # Radius, perimeter and area features: correlations above 0.94, so noise breaks PSD.
    values, precisions = pace_like_measurements(seed, 5, 10, features=[0, 2, 3, 20, 23])
    res = max_entropy_completion(values, precisions)
    assert res.extra["singular_components"] == [0]
    ref = cvxpy_weighted_psd_projection(values, precisions)
    assert rel_err(res.estimate, ref) < 1e-6


def test_singular_limit_matches_high_precision_barrier_path():
    # A reconstruction from a PACE-like run (breast cancer, rho = 1, a star around one
    # variable). No PD completion exists and the limit has an eigenvalue of 2.5e-4, so the
    # barrier path bends late: extrapolating from mu ~ 1e-6 would be off by ~1e-5.
    values = np.array(
        [
            [0.6446322148092565, 0.0, 0.7183125440668943, 0.0],
            [0.0, 0.6204503382517593, 0.727504181131125, 0.0],
            [0.7183125440668943, 0.727504181131125, 0.7885384792795027, 0.7230897583749114],
            [0.0, 0.0, 0.7230897583749114, 0.7134622343588475],
        ]
    )
    precisions = np.where(values != 0, 3237.61, 0.0)
    np.fill_diagonal(precisions, 1618.805)
    ref = mpmath_barrier_solution(values, precisions)
    fast = max_entropy_completion(values, precisions)
    assert fast.extra["singular_components"] == [0]
    assert rel_err(fast.estimate, ref) < 1e-8
    slow = max_entropy_completion(values, precisions, method="ipm-cholesky")
    assert rel_err(slow.estimate, ref) < 1e-7


@pytest.mark.parametrize(
    ("seed", "features", "n_extra"),
    [
        (3, [0, 2, 23, 12], 1),
        (5, [0, 3, 20, 22, 23, 7], 2),
        (8, [2, 3, 20, 22, 13], 0),
        (1, [0, 2, 3, 20, 22, 23], 3),  # rank 4 of 6
    ],
)
def test_default_agrees_with_ipm_cholesky_on_pace_like_noise(seed, features, n_extra):
    # Strongly correlated features: the noisy measurements admit no PD completion.
    values, precisions = pace_like_measurements(seed, len(features), n_extra, features=features)
    fast = max_entropy_completion(values, precisions)
    ref = max_entropy_completion(values, precisions, method="ipm-cholesky")
    assert fast.extra["singular_components"] == [0]  # no PD completion: the hard case
    assert rel_err(fast.estimate, ref.estimate) < 1e-6
    # Both fit the measurements equally well.
    assert abs(fast.objective - ref.objective) <= 1e-6 * max(ref.objective, 1.0)


def test_default_agrees_with_ipm_cholesky_when_a_pd_completion_exists():
    values, precisions = pace_like_measurements(2, 5, 1, rho=10.0)
    values = values + np.diag(np.full(5, 0.3))  # comfortably inside the PD-completable set
    fast = max_entropy_completion(values, precisions)
    ref = max_entropy_completion(values, precisions, method="ipm-cholesky")
    assert fast.extra["singular_components"] == []
    assert rel_err(fast.estimate, ref.estimate) < 1e-6


def test_negative_singleton_variance_is_clipped():
    values = np.diag([0.3, -0.1, 0.0])
    precisions = np.diag([10.0, 10.0, 10.0])
    res = max_entropy_completion(values, precisions)
    np.testing.assert_array_equal(res.estimate, np.diag([0.3, 0.0, 0.0]))


# ----------------------------------------------------------------------------------------
# Property test
# ----------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=7),
    seed=st.integers(min_value=0, max_value=10_000),
    density=st.floats(min_value=0.1, max_value=0.9),
)
def test_noiseless_completion_properties(n, seed, density):
    rng = np.random.default_rng(seed)
    sigma = random_covariance(rng, n)
    upper = np.triu(rng.random((n, n)) < density, 1)
    pattern = upper | upper.T | np.eye(n, dtype=bool)
    values, precisions = noiseless(sigma, pattern, precision=float(rng.uniform(1.0, 1e4)))
    res = max_entropy_completion(values, precisions)
    assert res.converged and res.extra["singular_components"] == []
    # Entries near zero are held to the matrix's scale (a seed found 1.7e-11 off an entry
    # of 3e-4 beside entries of order 1).
    scale = float(np.max(np.abs(sigma)))
    np.testing.assert_allclose(res.estimate[pattern], sigma[pattern], rtol=1e-8,
                               atol=1e-10 * scale)
    assert np.linalg.eigvalsh(res.estimate)[0] > 0
    assert off_pattern_inverse_ratio(res.estimate, pattern) < 1e-6
    # Maximum entropy: no other completion has a larger determinant, e.g. the truth.
    assert np.linalg.slogdet(res.estimate)[1] >= np.linalg.slogdet(sigma)[1] - 1e-9


# ----------------------------------------------------------------------------------------
# Warm starts and the incremental interface
# ----------------------------------------------------------------------------------------


def test_warm_start_gives_the_same_answer():
    rng = np.random.default_rng(21)
    sigma = random_covariance(rng, 8)
    pattern = symmetric_pattern(8, [(i + 1, i) for i in range(7)])
    values, precisions = noiseless(sigma, pattern)
    first = max_entropy_completion(values, precisions)
    pattern2 = pattern.copy()
    pattern2[7, 0] = pattern2[0, 7] = True
    values2, precisions2 = noiseless(sigma, pattern2)
    cold = max_entropy_completion(values2, precisions2)
    warm = max_entropy_completion(values2, precisions2, init=first)
    warm_cov = max_entropy_completion(values2, precisions2, init=first.estimate)
    assert rel_err(warm.estimate, cold.estimate) < 1e-10
    assert rel_err(warm_cov.estimate, cold.estimate) < 1e-10
    assert warm.iterations < cold.iterations


def test_reconstructor_tracks_from_scratch_solutions_and_resolves_one_component():
    values, precisions = pace_like_measurements(4, 8, 0, rho=10.0)
    n = values.shape[0]
    diag_values = np.diag(np.diag(values))
    diag_prec = np.diag(np.diag(precisions))
    rec = MaxEntropyReconstructor(diag_values, diag_prec)
    np.testing.assert_allclose(rec.covariance, np.diag(np.maximum(np.diag(values), 0)))
    solves = rec.n_solves
    rng = np.random.default_rng(0)
    entries = [(j, k) for j in range(n) for k in range(j) if precisions[j, k] > 0]
    entries += [(3, 3), (2, 1), (6, 0)]  # re-measurements and a new entry
    for j, k in entries:
        z = values[j, k] + 0.01 * rng.standard_normal()
        rec.add_measurement(j, k, z, 2500.0)
        cov = rec.covariance
        assert rec.n_solves == solves + 1  # only the touched component was re-solved
        solves = rec.n_solves
        scratch = max_entropy_completion(rec.values, rec.precisions)
        assert rel_err(cov, scratch.estimate) < 1e-8
    # add_measurement keeps the precision-weighted mean (Proposition 4.2 of the paper).
    rec2 = MaxEntropyReconstructor(diag_values, diag_prec)
    rec2.add_measurement(1, 0, 0.2, 100.0)
    rec2.add_measurement(0, 1, 0.5, 300.0)
    assert rec2.precisions[1, 0] == 400.0
    assert rec2.values[0, 1] == pytest.approx((0.2 * 100 + 0.5 * 300) / 400)
    assert [list(c) for c in rec2.components][0] == [0, 1]


def test_lazy_refinement_gives_the_refined_answer(monkeypatch):
    # Refining K^{-1} only near convergence must give the same stage solution as refining
    # it on every Newton step, deep in the barrier path of a singular limit.
    from dpggm.solvers import maxent

    values, precisions = pace_like_measurements(1, 6, 3, features=[0, 2, 3, 20, 22, 23])
    block = maxent._Block.build(values, precisions, np.arange(6))
    start = maxent._default_kappa(block)

    def path(refine_below):
        monkeypatch.setattr(maxent, "_REFINE_BELOW", refine_below)
        solver = maxent._DualNewton(block, 1e-10, 200)
        kappa, out = start, []
        for mu_rel in maxent._barrier_schedule(block):
            kappa, W, _, ok = solver.solve(kappa, mu_rel * block.mu_unit)
            assert ok
            out.append(W)
        return out

    lazy, always = path(1e-6), path(np.inf)
    for a, b in zip(lazy[-3:], always[-3:]):
        assert rel_err(a, b) < 1e-12


@pytest.mark.parametrize("entry", [(2, 0), (3, 3)])
def test_coordinate_minimiser_is_the_exact_line_minimum(entry):
    from dpggm.solvers import maxent

    rng = np.random.default_rng(3)
    K = np.linalg.inv(random_covariance(rng, 4))
    W = np.linalg.inv(K)
    j, k = entry
    E = np.zeros((4, 4))
    E[j, k] = E[k, j] = 1.0
    cy, pen, x = 0.7, 0.05, K[j, k]

    def g(t):
        sign, logdet = np.linalg.slogdet(K + t * E)
        return cy * t - logdet + pen * (x + t) ** 2 / 2 if sign > 0 else np.inf

    t = maxent._coordinate_minimiser(W, j, k, cy, pen, x)
    h = 1e-5 * max(1.0, abs(t))
    assert g(t) <= min(g(t - h), g(t + h))
    grid = np.linspace(t - 5, t + 5, 2001)
    assert g(t) <= min(g(u) for u in grid) + 1e-12


def test_coordinate_steps_decrease_the_dual_and_keep_the_solution():
    from dpggm.solvers import maxent

    values, precisions = pace_like_measurements(5, 6, 2, features=[0, 3, 20, 22, 23, 7])
    block = maxent._Block.build(values, precisions, np.arange(6))
    solver = maxent._DualNewton(block, 1e-10, 200)
    mu = 1e-6 * block.mu_unit
    kappa = maxent._default_kappa(block)
    improved = solver.coordinate_steps(kappa, mu, 4)
    assert solver.objective(improved, mu)[0] < solver.objective(kappa, mu)[0]
    a = solver.solve(kappa, mu)
    b = solver.solve(improved, mu)
    assert a[3] and b[3]
    assert rel_err(a[1], b[1]) < 1e-10


def test_reconstructor_update_sets_values():
    rng = np.random.default_rng(5)
    sigma = random_covariance(rng, 4)
    rec = MaxEntropyReconstructor(np.diag(np.diag(sigma)), np.eye(4) * 50.0)
    rec.update(1, 0, sigma[1, 0], 50.0)
    rec.update(2, 1, sigma[2, 1], 50.0)
    rec.update(1, 0, sigma[1, 0], 70.0)  # replace, not combine
    assert rec.precisions[0, 1] == 70.0
    values, precisions = rec.values, rec.precisions
    res = max_entropy_completion(values, precisions)
    assert rel_err(rec.covariance, res.estimate) < 1e-12
    assert rel_err(rec.precision, res.precision) < 1e-10
    assert rec.result().extra["method"] == "dual-newton"


# ----------------------------------------------------------------------------------------
# Bad input and non-convergence
# ----------------------------------------------------------------------------------------


def _good():
    return np.array([[1.0, 0.3], [0.3, 2.0]]), np.array([[10.0, 5.0], [5.0, 10.0]])


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda y, l: (y + np.array([[0, 0.1], [0, 0]]), l), "values must be symmetric"),
        (lambda y, l: (y, l + np.array([[0, 1.0], [0, 0]])), "precisions must be symmetric"),
        (lambda y, l: (y, l * np.array([[1, 1], [1, 0]])), r"precisions must be > 0 on the"),
        (lambda y, l: (y, -l), "precisions must be >= 0"),
        (lambda y, l: (y * np.array([[1, np.nan], [np.nan, 1]]), l), "values must be finite"),
        (lambda y, l: (y, l * np.array([[1, np.inf], [np.inf, 1]])), "precisions must be finite"),
        (lambda y, l: (y[:1], l), "values must be a non-empty square"),
        (lambda y, l: (y, np.eye(3)), "same shape"),
    ],
)
def test_bad_input_raises_named_errors(mutate, match):
    y, lam = mutate(*_good())
    with pytest.raises(ValueError, match=match):
        max_entropy_completion(y, lam)
    with pytest.raises(ValueError, match=match):
        MaxEntropyReconstructor(y, lam)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "newton-raphson"}, "method must be one of"),
        ({"tol": 0.0}, "tol must be a finite number > 0"),
        ({"tol": float("nan")}, "tol must be a finite number > 0"),
        ({"max_iter": 0}, "max_iter must be an integer >= 1"),
        ({"max_iter": 2.5}, "max_iter must be an integer >= 1"),
        ({"init": np.eye(3)}, "init must describe a 2 x 2 matrix"),
        ({"extrapolate": "yes"}, "extrapolate must be a bool"),
    ],
)
def test_bad_options_raise_named_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        max_entropy_completion(*_good(), **kwargs)


def test_reconstructor_rejects_bad_updates():
    rec = MaxEntropyReconstructor(*_good())
    with pytest.raises(ValueError, match=r"j must be an integer in \[0, 2\)"):
        rec.update(2, 0, 0.1, 1.0)
    with pytest.raises(ValueError, match="precision must be a finite number > 0"):
        rec.update(1, 0, 0.1, 0.0)
    with pytest.raises(ValueError, match="value must be finite"):
        rec.update(1, 0, np.nan, 1.0)
    with pytest.raises(ValueError, match="measurement must be finite"):
        rec.add_measurement(1, 0, np.inf, 1.0)


def test_iteration_cap_warns_and_never_returns_nan():
    values, precisions = pace_like_measurements(5, 6, 2)
    with pytest.warns(ConvergenceWarning, match="did not reach the requested accuracy"):
        res = max_entropy_completion(values, precisions, max_iter=1)
    assert not res.converged
    assert np.all(np.isfinite(res.estimate))


def test_converged_run_emits_no_warning():
    values, precisions = pace_like_measurements(5, 6, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        max_entropy_completion(values, precisions)


def test_singular_limit_that_bends_late_is_followed_below_1e_10():
    # A reconstruction from a PACE-GGM run (d = 5 factor data, rho = 10): no PD completion
    # exists and the barrier path bends so late that extrapolating from 1e-8..1e-10 is
    # off by 6e-6 (and warned). The path is followed further down until the
    # extrapolation's error estimate is small; the answer must then match the
    # 40-digit path at mu = 1e-20.
    values = np.array(
        [
            [0.06216585636138917, 0.0, 0.01656341552734375, -0.06058382987976074, -0.02647876739501953],
            [0.0, 0.06259632110595703, 0.0, -0.028355836868286136, 0.02951192855834961],
            [0.01656341552734375, 0.0, 0.06171834468841553, -0.030265331268310547, 0.0],
            [-0.06058382987976074, -0.028355836868286136, -0.030265331268310547, 0.06252098083496094, 0.0],
            [-0.02647876739501953, 0.02951192855834961, 0.0, 0.0, 0.06275105476379395],
        ]
    )
    precisions = np.where(values != 0, 2184890.459058103, 0.0)
    np.fill_diagonal(precisions, 29964212.009939708)
    ref = mpmath_barrier_solution(values, precisions)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fast = max_entropy_completion(values, precisions)
    assert fast.extra["singular_components"] == [0]
    assert rel_err(fast.estimate, ref) < 1e-8


def _exact_hessian(W, rows, cols):
    c = np.where(rows == cols, 1.0, 2.0)
    m = rows.size
    H = np.empty((m, m))
    for s in range(m):
        for t in range(m):
            H[s, t] = 0.5 * c[s] * c[t] * (
                W[rows[s], rows[t]] * W[cols[s], cols[t]] + W[rows[s], cols[t]] * W[cols[s], rows[t]]
            )
    return H


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_scaled_hessian_is_the_hessian_formula(seed):
    from dpggm.solvers._maxent_kernels import scaled_hessian_upper

    rng = np.random.default_rng(seed)
    n = 7
    W = random_covariance(rng, n)
    rows, cols = np.nonzero(np.tril(rng.random((n, n)) < 0.5, k=-1))
    rows = np.concatenate([np.arange(n), rows])
    cols = np.concatenate([np.arange(n), cols])
    c = np.where(rows == cols, 1.0, 2.0)
    pen = rng.random(rows.size)
    H = _exact_hessian(W, rows, cols) + np.diag(pen)
    out, scale = np.full((rows.size, rows.size), np.nan), np.empty(rows.size)
    assert scaled_hessian_upper(W, rows, cols, c, pen, 1e-12, out, scale)
    np.testing.assert_allclose(scale, np.sqrt(np.diag(H)), rtol=1e-15)
    expected = H / np.outer(scale, scale) + 1e-12 * np.eye(rows.size)
    upper = np.triu_indices(rows.size)
    np.testing.assert_allclose(out[upper], expected[upper], rtol=1e-14, atol=1e-15)
    # A diagonal entry that is not positive (or not finite) is refused.
    assert not scaled_hessian_upper(W, rows, cols, c, pen - 10.0 * np.diag(H).max(), 0.0, out, scale)


def test_error_free_residual_matches_exact_rational_arithmetic():
    from fractions import Fraction

    from dpggm.solvers.maxent import _inverse_residual, _ozaki_slices

    rng = np.random.default_rng(4)
    n = 6
    A = rng.standard_normal((n, n)) * 10.0 ** rng.integers(-6, 6, size=(n, 1))
    K_hi = A @ A.T + np.eye(n)
    K_lo = 1e-17 * K_hi * rng.standard_normal((n, n))
    K_lo = 0.5 * (K_lo + K_lo.T)
    W = np.linalg.inv(K_hi)
    W = 0.5 * (W + W.T)
    # The slices add up to the matrix exactly, for both splitting directions.
    for axis in (0, 1):
        slices = _ozaki_slices(K_hi, axis)
        for i in range(n):
            for j in range(n):
                assert sum(Fraction(float(s[i, j])) for s in slices) == Fraction(float(K_hi[i, j]))
    exact = [
        [
            Fraction(int(i == j))
            - sum(
                (Fraction(float(K_hi[i, k])) + Fraction(float(K_lo[i, k]))) * Fraction(float(W[k, j]))
                for k in range(n)
            )
            for j in range(n)
        ]
        for i in range(n)
    ]
    R = _inverse_residual(K_hi, K_lo, W)
    err = max(abs(float(Fraction(float(R[i, j])) - exact[i][j])) for i in range(n) for j in range(n))
    plain = np.eye(n) - (K_hi + K_lo) @ W
    plain_err = max(abs(float(Fraction(float(plain[i, j])) - exact[i][j])) for i in range(n) for j in range(n))
    scale = max(abs(float(x)) for row in exact for x in row)
    # The residual is tiny against |K| |W| (W is an accurate inverse): a plain product
    # gets it wrong in its leading digits, the error-free one to ~1e-12 of itself.
    assert plain_err > 1e-3 * scale
    assert err <= 1e-11 * scale


def test_stage_prediction_is_never_worse_than_staying():
    # The next barrier stage starts from the best of the tangent and secant predictions
    # and the last solution, by the value of D_mu at the new weight; a spoiled tangent
    # (a factorisation of the wrong matrix) must not make the start worse.
    from dpggm.solvers.maxent import _Block, _DualNewton, _predict_kappa, _solve_dual_newton

    values, precisions = pace_like_measurements(3, 4, 1, features=[0, 2, 23, 12])
    block = _Block.build(values, precisions, np.arange(values.shape[0]))
    solver = _DualNewton(block, 1e-10, 200)
    assert _solve_dual_newton(block, None, 1e-10, 200, True).singular
    kappa = np.zeros((2, block.y.size))
    kappa[0, : block.n] = 1.0 / np.maximum(block.y[: block.n], 1.0)
    mus, kappas = [], []
    for mu_rel in (1e-3, 1e-4):
        kappa, W, _, ok = solver.solve(kappa, mu_rel * block.mu_unit)
        assert ok
        mus.append(mu_rel)
        kappas.append(kappa)
    good = solver.last_factor
    stay = solver.objective(kappas[-1], 1e-5 * block.mu_unit)[0]
    # A factorisation of the wrong matrix (the Hessian scaled up 1e6 times gives a tangent
    # a millionth as long) must not make the start worse than the secant alone.
    c, scale = good
    secant_only = _predict_kappa(solver, block, mus, kappas, 1e-5, None)
    spoiled = _predict_kappa(solver, block, mus, kappas, 1e-5, (c, scale * 1e3))
    assert solver.objective(spoiled, 1e-5 * block.mu_unit)[0] <= solver.objective(
        secant_only, 1e-5 * block.mu_unit
    )[0]
    better = _predict_kappa(solver, block, mus, kappas, 1e-5, good)
    assert solver.objective(better, 1e-5 * block.mu_unit)[0] < stay


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_stale_hessian_step_lands_within_its_certified_bound(seed):
    # From a point x~ near the barrier minimiser take a full Newton step to x, then a
    # second step with the Hessian of x~ (stale). _stale_step_certified claims the new
    # decrement is at most (rho l + l^2/(1-l))/(1-l), l = sqrt(dec)/(1-r): check it with a
    # fresh Hessian at the new point.
    from dpggm.solvers.maxent import (
        _Block,
        _DualNewton,
        _factored_direction,
        _stale_step_certified,
    )

    values, precisions = pace_like_measurements(seed, 5, 2)
    block = _Block.build(values, precisions, np.arange(values.shape[0]))
    solver = _DualNewton(block, 1e-10, 200)
    mu = 1e-2 * block.mu_unit
    kappa = np.zeros((2, block.y.size))
    kappa[0, : block.n] = 1.0 / np.maximum(block.y[: block.n], 1.0)
    kappa, _, _, ok = solver.solve(kappa, mu)
    assert ok
    pen = mu * block.c**2 / block.lam
    rng = np.random.default_rng(seed)

    def grad_and_w(k):
        _, chol = solver.objective(k, mu)
        W, _ = solver.inverse(k, chol, refine=True)
        return block.c * (block.y - W[block.rows, block.cols]) + pen * (k[0] + k[1]), W

    def decrement(k):
        g, W = grad_and_w(k)
        factor = solver.factor_hessian(W, pen)
        return float(-g @ _factored_direction(factor, g)), factor, g

    checked = 0
    for size in (1e-2, 3e-3, 1e-3, 3e-4, 1e-4):
        start = kappa.copy()
        start[0] = kappa[0] * (1.0 + size * rng.standard_normal(kappa.shape[1]))
        if not np.isfinite(solver.objective(start, mu)[0]):
            continue
        dec0, factor, g0 = decrement(start)
        step = _factored_direction(factor, g0)
        x = start.copy()
        x[0] += step
        r = np.sqrt(dec0)
        g, _ = grad_and_w(x)
        stale_step = _factored_direction(factor, g)
        dec_stale = float(-g @ stale_step)
        lam = np.sqrt(dec_stale) / (1 - r)
        if not (r < 0.1 and lam < 0.1):
            continue
        rho = (1 - r) ** -2 - 1
        bound = (rho * lam + lam * lam / (1 - lam)) / (1 - lam)
        assert _stale_step_certified(dec_stale, r, bound * (1 + 1e-9))
        assert not _stale_step_certified(dec_stale, r, bound * (1 - 1e-9))
        new = x.copy()
        new[0] += stale_step
        dec_new, _, _ = decrement(new)
        assert np.sqrt(dec_new) <= bound * (1 + 1e-6)
        checked += 1
    assert checked >= 1



def test_factor_hessian_solves_the_newton_system():
    # factor_hessian (compiled build, LAPACK orientation, scaling) must give the direction
    # -H^{-1} g of the Hessian formula.
    from dpggm.solvers.maxent import _Block, _DualNewton, _factored_direction

    values, precisions = pace_like_measurements(2, 5, 2)
    block = _Block.build(values, precisions, np.arange(values.shape[0]))
    solver = _DualNewton(block, 1e-10, 200)
    rng = np.random.default_rng(0)
    W = random_covariance(rng, block.n)
    pen = rng.random(block.y.size)
    g = rng.standard_normal(block.y.size)
    H = _exact_hessian(W, block.rows, block.cols) + np.diag(pen)
    direction = _factored_direction(solver.factor_hessian(W, pen), g)
    np.testing.assert_allclose(direction, -np.linalg.solve(H, g), rtol=1e-9)
    assert solver.last_ridge == 0.0


def test_stale_finish_gives_the_same_stage_solutions(monkeypatch):
    # The certified stale finish saves Hessians, not accuracy: with it switched off the
    # reconstruction of a late-bending PACE block is the same to rounding.
    from dpggm.solvers import maxent

    values, precisions = pace_like_measurements(1, 6, 3, features=[0, 2, 3, 20, 22, 23])
    with_stale = max_entropy_completion(values, precisions)
    monkeypatch.setattr(maxent, "_STALE_FINISH", False)
    without = max_entropy_completion(values, precisions)
    assert with_stale.extra["singular_components"] == without.extra["singular_components"] == [0]
    assert rel_err(with_stale.estimate, without.estimate) < 1e-10


def test_zero_limit_is_not_reported_as_inaccurate():
    # Both measured variances negative and a large covariance: the weighted PSD projection
    # is the zero matrix, reached like mu along the path. Its error estimate must be judged
    # against the noise level, not against the vanishing limit itself (0.2 before).
    values = np.array([[-0.2, 0.03], [0.03, -0.9]])
    precisions = np.array([[1.0, 5.5], [5.5, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = max_entropy_completion(values, precisions)
    np.testing.assert_allclose(result.estimate, 0.0, atol=1e-12)
    assert result.extra["extrapolation_error"] < 1e-8
