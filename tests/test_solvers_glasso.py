"""Tests of the graphical lasso solvers (coordinate descent and ADMM)."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.datasets import load_iris

from dpggm.exceptions import ConvergenceWarning, NumericalError
from dpggm.solvers._result import SolverResult
from dpggm.solvers.glasso import (
    graphical_lasso,
    graphical_lasso_objective,
    graphical_lasso_path,
)

METHODS = ("cd", "admm")


def empirical_covariance(X):
    """Covariance without Bessel correction, as R's ``cov(X) * (n - 1) / n``."""
    return np.cov(X, rowvar=False, bias=True)


def random_covariance(rng, p, n):
    X = rng.standard_normal((n, p)) @ rng.standard_normal((p, p))
    return empirical_covariance(X)


def assert_kkt(S, result, alpha, penalize_diagonal=False, atol=1e-5):
    """First-order optimality, checked with an independently computed inverse."""
    theta = result.estimate
    W = np.linalg.inv(theta)
    p = S.shape[0]
    off = ~np.eye(p, dtype=bool)
    scale = np.max(np.abs(W))
    diagonal_target = np.diagonal(S) + (alpha if penalize_diagonal else 0.0)
    assert_allclose(np.diagonal(W), diagonal_target, atol=atol * scale)
    residual = W - S
    support = off & (theta != 0)
    assert_allclose(residual[support], alpha * np.sign(theta[support]), atol=atol * scale)
    assert np.all(np.abs(residual[off & (theta == 0)]) <= alpha + atol * scale)


def assert_certified(result):
    assert result.converged
    assert 0.0 <= result.duality_gap <= result.tol * max(1.0, abs(result.objective)) + 1e-12


# R glasso solutions quoted in scikit-learn's sklearn/covariance/tests/test_graphical_lasso.py
# (test_graphical_lasso_iris and test_graphical_lasso_iris_singular), obtained there with
# glasso(emp_cov, rho, penalize.diagonal = FALSE) on the covariance without Bessel correction.
IRIS_COV_R = np.array(
    [
        [0.68112222, 0.0000000, 0.265820, 0.02464314],
        [0.00000000, 0.1887129, 0.000000, 0.00000000],
        [0.26582000, 0.0000000, 3.095503, 0.28697200],
        [0.02464314, 0.0000000, 0.286972, 0.57713289],
    ]
)
IRIS_ICOV_R = np.array(
    [
        [1.5190747, 0.000000, -0.1304475, 0.0000000],
        [0.0000000, 5.299055, 0.0000000, 0.0000000],
        [-0.1304475, 0.000000, 0.3498624, -0.1683946],
        [0.0000000, 0.000000, -0.1683946, 1.8164353],
    ]
)
IRIS_SINGULAR_COV_R = np.array(
    [
        [0.08, 0.056666662595, 0.00229729713223, 0.00153153142149],
        [0.056666662595, 0.082222222222, 0.00333333333333, 0.00222222222222],
        [0.002297297132, 0.003333333333, 0.00666666666667, 0.00009009009009],
        [0.001531531421, 0.002222222222, 0.00009009009009, 0.00222222222222],
    ]
)
IRIS_SINGULAR_ICOV_R = np.array(
    [
        [24.42244057, -16.831679593, 0.0, 0.0],
        [-16.83168201, 24.351841681, -6.206896552, -12.5],
        [0.0, -6.206896171, 153.103448276, 0.0],
        [0.0, -12.499999143, 0.0, 462.5],
    ]
)


@pytest.mark.parametrize("method", METHODS)
def test_iris_matches_r_glasso(method):
    S = empirical_covariance(load_iris().data)
    result = graphical_lasso(S, 1.0, method=method)
    assert result.method == method
    assert_allclose(result.estimate, IRIS_ICOV_R, atol=1e-5)
    assert_allclose(result.covariance, IRIS_COV_R, atol=1e-5)
    assert_certified(result)


@pytest.mark.parametrize("method", METHODS)
def test_iris_singular_matches_r_glasso(method):
    S = empirical_covariance(load_iris().data[10:13])
    assert np.linalg.eigvalsh(S)[0] < 1e-12  # three samples in four dimensions
    result = graphical_lasso(S, 0.01, method=method)
    assert_allclose(result.estimate, IRIS_SINGULAR_ICOV_R, atol=1e-5)
    assert_allclose(result.covariance, IRIS_SINGULAR_COV_R, atol=1e-6)
    assert_certified(result)


def test_cd_and_admm_agree_on_random_problems():
    rng = np.random.default_rng(20240601)
    for _ in range(20):
        p = int(rng.integers(3, 13))
        S = random_covariance(rng, p, int(rng.integers(p // 2 + 1, 3 * p)))
        off = np.abs(S[~np.eye(p, dtype=bool)])
        alpha = float(rng.uniform(0.05, 0.8) * off.max())
        penalize_diagonal = bool(rng.integers(2))
        cd = graphical_lasso(S, alpha, method="cd", penalize_diagonal=penalize_diagonal)
        admm = graphical_lasso(S, alpha, method="admm", penalize_diagonal=penalize_diagonal)
        assert cd.method == "cd" and admm.method == "admm"
        assert_certified(cd)
        assert_certified(admm)
        assert abs(cd.objective - admm.objective) <= 1e-7 * abs(cd.objective)
        assert_kkt(S, cd, alpha, penalize_diagonal)


@pytest.mark.parametrize("penalize_diagonal", [False, True])
def test_objective_matches_cvxpy(penalize_diagonal):
    rng = np.random.default_rng(7)
    p = 6
    S = random_covariance(rng, p, 10)
    alpha = 0.3 * np.max(np.abs(S - np.diag(np.diagonal(S))))
    theta = cp.Variable((p, p), symmetric=True)
    mask = np.ones((p, p)) - (0 if penalize_diagonal else np.eye(p))
    problem = cp.Problem(
        cp.Minimize(
            -cp.log_det(theta)
            + cp.trace(S @ theta)
            + alpha * cp.sum(cp.abs(cp.multiply(mask, theta)))
        )
    )
    problem.solve()
    result = graphical_lasso(S, alpha, penalize_diagonal=penalize_diagonal)
    assert_certified(result)
    # The conic solver is accurate to about 1e-7; ours is certified to 1e-8 relative.
    assert result.objective <= problem.value + 1e-6 * abs(problem.value)
    assert abs(result.objective - problem.value) <= 1e-5 * abs(problem.value)
    objective = graphical_lasso_objective(
        S, result.estimate, alpha, penalize_diagonal=penalize_diagonal
    )
    assert objective == pytest.approx(result.objective, rel=1e-12)
    assert_kkt(S, result, alpha, penalize_diagonal)


def block_problem(rng):
    """Three blocks of correlated variables and two variables unrelated to anything."""
    blocks = [random_covariance(rng, size, 3 * size) for size in (4, 3, 5)]
    p = sum(b.shape[0] for b in blocks) + 2
    S = np.zeros((p, p))
    start = 0
    for block in blocks:
        stop = start + block.shape[0]
        S[start:stop, start:stop] = block
        start = stop
    S[start, start], S[start + 1, start + 1] = 2.0, 0.5
    # Small cross-block entries, below the penalty, so the screening graph still splits.
    noise = rng.uniform(-0.01, 0.01, size=(p, p))
    S += np.triu(noise, 1) + np.triu(noise, 1).T
    order = rng.permutation(p)
    return S[np.ix_(order, order)], order, start


@pytest.mark.parametrize("method", METHODS)
def test_screening_gives_the_same_solution(method):
    rng = np.random.default_rng(3)
    S, order, isolated_start = block_problem(rng)
    alpha = 0.05
    screened = graphical_lasso(S, alpha, method=method)
    full = graphical_lasso(S, alpha, method=method, screening=False)
    assert screened.n_components >= 5
    assert full.n_components == 1
    assert_certified(screened)
    assert_certified(full)
    assert screened.objective == pytest.approx(full.objective, rel=1e-8)
    assert_allclose(screened.estimate, full.estimate, atol=1e-5 * np.abs(full.estimate).max())
    # Isolated variables have the closed form 1 / S_ii.
    for original in (isolated_start, isolated_start + 1):
        i = int(np.flatnonzero(order == original)[0])
        assert screened.estimate[i, i] == pytest.approx(1.0 / S[i, i], rel=1e-14)
        assert np.count_nonzero(screened.estimate[i]) == 1


def test_isolated_variable_with_penalized_diagonal():
    S = np.array([[2.0, 0.1], [0.1, 3.0]])
    result = graphical_lasso(S, 0.5, penalize_diagonal=True)
    assert result.n_components == 2
    assert_allclose(result.estimate, np.diag([1 / 2.5, 1 / 3.5]), rtol=1e-14)
    assert result.duality_gap == 0.0


def noisy_indefinite(rng, p=25):
    S = random_covariance(rng, p, 4 * p)
    S /= np.mean(np.diagonal(S))
    noise = rng.normal(scale=0.15, size=(p, p))
    S_noisy = S + (noise + noise.T) / np.sqrt(2)
    np.fill_diagonal(S_noisy, np.diagonal(S))
    return S_noisy


def test_indefinite_input_auto_continuation_and_cd():
    rng = np.random.default_rng(11)
    S = noisy_indefinite(rng)
    assert np.linalg.eigvalsh(S)[0] < 0
    # Small enough that neither cd start is positive definite, large enough to be bounded.
    alpha = 0.12
    auto = graphical_lasso(S, alpha)
    admm = graphical_lasso(S, alpha, method="admm")
    # The start comes from the solutions with a raised diagonal, lowered stage by stage.
    assert auto.method == "continuation+cd"
    assert admm.method == "admm"
    assert_certified(auto)
    assert_certified(admm)
    assert auto.objective == pytest.approx(admm.objective, rel=1e-7)
    assert np.all(np.isfinite(auto.estimate))
    assert np.linalg.eigvalsh(auto.estimate)[0] > 0
    assert_kkt(S, auto, alpha)
    with pytest.raises(NumericalError, match=r"method='cd' needs a positive definite starting"):
        graphical_lasso(S, alpha, method="cd")


def test_auto_falls_back_on_admm_when_the_continuation_stalls(monkeypatch):
    import dpggm.solvers.glasso as glasso_module

    rng = np.random.default_rng(11)
    S = noisy_indefinite(rng)
    monkeypatch.setattr(glasso_module, "_continuation_start", lambda S, alpha: None)
    auto = graphical_lasso(S, 0.12)
    assert auto.method == "admm+cd"
    assert_certified(auto)
    assert auto.objective == pytest.approx(graphical_lasso(S, 0.12).objective, rel=1e-7)


def test_continuation_start_is_positive_definite_and_dual_feasible():
    from dpggm.solvers.glasso import _continuation_start

    rng = np.random.default_rng(11)
    S = noisy_indefinite(rng)
    alpha = 0.12
    W, _, _ = _continuation_start(S, alpha)
    assert np.linalg.eigvalsh(W)[0] > 0
    assert_allclose(np.diagonal(W), np.diagonal(S), rtol=0, atol=1e-15)
    off = ~np.eye(len(S), dtype=bool)
    assert np.max(np.abs(W - S)[off]) <= alpha * (1 + 1e-12)


@pytest.mark.parametrize("method", ["auto", "admm"])
def test_unbounded_problem_raises(method):
    # |W_12 - 2| <= 0.5 with W_11 = W_22 = 1 admits no positive definite W.
    S = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(NumericalError, match="unbounded below"):
        graphical_lasso(S, 0.5, method=method)


def test_nonpositive_diagonal_raises_or_is_repaired_by_the_diagonal_penalty():
    S = np.array([[1.0, 0.2, 0.0], [0.2, -0.1, 0.1], [0.0, 0.1, 1.0]])
    with pytest.raises(ValueError, match=r"S\[1, 1\] = -0.1 is not positive"):
        graphical_lasso(S, 0.05)
    with pytest.raises(ValueError, match=r"S\[1, 1\] \+ alpha = -0.05 is not positive"):
        graphical_lasso(S, 0.05, penalize_diagonal=True)
    result = graphical_lasso(S, 0.3, penalize_diagonal=True)
    assert_certified(result)
    assert np.all(np.isfinite(result.estimate))


def test_zero_penalty_is_the_inverse():
    rng = np.random.default_rng(5)
    S = random_covariance(rng, 5, 20)
    result = graphical_lasso(S, 0.0)
    assert_allclose(result.estimate, np.linalg.inv(S), rtol=1e-10)
    assert_certified(result)
    singular = random_covariance(rng, 5, 3)
    with pytest.raises(NumericalError, match="has no solution: it needs S positive definite"):
        graphical_lasso(singular, 0.0)


def test_path_matches_cold_starts_and_keeps_order():
    rng = np.random.default_rng(9)
    S = random_covariance(rng, 15, 40)
    top = np.max(np.abs(S - np.diag(np.diagonal(S))))
    alphas = [0.1 * top, 0.6 * top, 0.3 * top, 0.02 * top]
    path = graphical_lasso_path(S, alphas)
    assert [r.alpha for r in path] == alphas
    for alpha, result in zip(alphas, path):
        cold = graphical_lasso(S, alpha)
        assert_certified(result)
        assert result.objective == pytest.approx(cold.objective, rel=1e-8)
    with pytest.raises(TypeError, match="does not take init"):
        graphical_lasso_path(S, alphas, init=path[0])
    with pytest.raises(TypeError, match="alphas must be a sequence"):
        graphical_lasso_path(S, 0.1)
    with pytest.raises(ValueError, match="alphas must contain at least one penalty"):
        graphical_lasso_path(S, [])
    with pytest.raises(ValueError, match=r"alphas\[1\] must be a finite number >= 0; got -0.2"):
        graphical_lasso_path(S, [0.1, -0.2])


def test_objective_rejects_mismatched_precision():
    with pytest.raises(ValueError, match=r"precision must have the shape of S \(2, 2\)"):
        graphical_lasso_objective(np.eye(2), np.eye(3), 0.1)
    # Not positive definite: the objective is +inf, not NaN.
    assert graphical_lasso_objective(np.eye(2), -np.eye(2), 0.1) == np.inf


def test_warm_start_from_result_or_matrix():
    rng = np.random.default_rng(13)
    S = random_covariance(rng, 12, 30)
    cold = graphical_lasso(S, 0.2)
    from_result = graphical_lasso(S, 0.15, init=cold)
    from_matrix = graphical_lasso(S, 0.15, init=cold.estimate, method="admm")
    reference = graphical_lasso(S, 0.15)
    for result in (from_result, from_matrix):
        assert_certified(result)
        assert result.objective == pytest.approx(reference.objective, rel=1e-8)
    with pytest.raises(ValueError, match=r"init must be a \(12, 12\) precision matrix"):
        graphical_lasso(S, 0.1, init=SolverResult(estimate=np.eye(3)))


def test_fixed_admm_penalty():
    rng = np.random.default_rng(17)
    S = random_covariance(rng, 8, 20)
    fixed = graphical_lasso(S, 0.2, method="admm", admm_penalty=0.1 * np.mean(np.diag(S)) ** 2)
    reference = graphical_lasso(S, 0.2, method="cd")
    assert_certified(fixed)
    assert fixed.objective == pytest.approx(reference.objective, rel=1e-7)


@pytest.mark.parametrize("method", METHODS)
def test_non_convergence_warns_and_still_reports_a_gap(method):
    rng = np.random.default_rng(19)
    S = random_covariance(rng, 30, 40)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        result = graphical_lasso(S, 0.05, method=method, max_iter=1)
    assert not result.converged
    assert np.isfinite(result.objective)
    assert result.duality_gap > result.tol * max(1.0, abs(result.objective))
    assert np.all(np.isfinite(result.estimate))
    assert np.linalg.eigvalsh(result.estimate)[0] > 0


@settings(max_examples=25, deadline=None, database=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    p=st.integers(2, 8),
    fraction=st.floats(0.01, 1.2),
    penalize_diagonal=st.booleans(),
)
def test_property_certified_and_optimal(seed, p, fraction, penalize_diagonal):
    rng = np.random.default_rng(seed)
    S = random_covariance(rng, p, int(rng.integers(2, 3 * p)))
    # A variable with (numerically) zero variance has no bounded solution.
    assume(np.min(np.diagonal(S)) > 1e-8 * np.max(np.diagonal(S)))
    off = np.abs(S - np.diag(np.diagonal(S)))
    alpha = fraction * max(off.max(), 1e-3 * np.mean(np.diagonal(S)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = graphical_lasso(S, alpha, penalize_diagonal=penalize_diagonal)
    assert_certified(result)
    theta = result.estimate
    assert_allclose(theta, theta.T, atol=0)
    assert np.linalg.eigvalsh(theta)[0] > 0
    # The certificate bounds the objective from below: no small perturbation beats it.
    for _ in range(3):
        direction = rng.standard_normal((p, p))
        direction = 1e-3 * (direction + direction.T) * np.abs(theta).max()
        value = graphical_lasso_objective(
            S, theta + direction, alpha, penalize_diagonal=penalize_diagonal
        )
        assert value >= result.dual_objective - 1e-9 * abs(result.dual_objective)


@pytest.mark.parametrize(
    ("S", "error", "message"),
    [
        (np.ones((2, 3)), ValueError, r"S must be a square 2-D matrix; got shape \(2, 3\)"),
        (np.ones(4), ValueError, r"S must be a square 2-D matrix; got shape \(4,\)"),
        (np.ones((1, 1)), ValueError, "S needs at least 2 variables"),
        (np.array([[1.0, 0.5], [0.2, 1.0]]), ValueError, "S must be symmetric"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), ValueError, "S must contain only finite"),
        (np.array([[np.inf, 0.0], [0.0, 1.0]]), ValueError, "S must contain only finite"),
        (np.array([["a", "b"], ["c", "d"]]), TypeError, "S must be a real square matrix"),
    ],
)
def test_bad_matrix_is_rejected(S, error, message):
    with pytest.raises(error, match=message):
        graphical_lasso(S, 0.1)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"alpha": -1.0}, ValueError, r"alpha must be a finite number >= 0; got -1.0"),
        ({"alpha": np.nan}, ValueError, r"alpha must be a finite number >= 0; got nan"),
        ({"alpha": np.inf}, ValueError, r"alpha must be a finite number >= 0; got inf"),
        ({"alpha": "0.1"}, TypeError, r"alpha must be a real number"),
        ({"alpha": 0.1, "method": "lars"}, ValueError, r"method must be one of"),
        ({"alpha": 0.1, "tol": 0.0}, ValueError, r"tol must be a finite number > 0; got 0.0"),
        ({"alpha": 0.1, "max_iter": 0}, ValueError, r"max_iter must be an integer >= 1; got 0"),
        (
            {"alpha": 0.1, "admm_penalty": -2.0},
            ValueError,
            r"admm_penalty must be a finite number > 0; got -2.0",
        ),
    ],
)
def test_bad_options_are_rejected(options, error, message):
    S = np.array([[1.0, 0.3], [0.3, 1.0]])
    with pytest.raises(error, match=message):
        graphical_lasso(S, **options)


def test_input_is_not_modified_and_near_symmetric_input_is_accepted():
    rng = np.random.default_rng(23)
    S = random_covariance(rng, 6, 20)
    S[0, 1] += 1e-12 * np.abs(S).max()
    before = S.copy()
    result = graphical_lasso(S, 0.1)
    assert_allclose(S, before, rtol=0, atol=0)
    assert_certified(result)
