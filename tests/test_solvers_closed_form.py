"""Tests of the closed-form solvers: ridge precision, PSD projection, hard thresholding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose
from scipy import linalg, optimize

from dpggm.exceptions import NumericalError
from dpggm.solvers.psd import project_psd
from dpggm.solvers.ridge import ridge_precision
from dpggm.solvers.threshold import hard_threshold


def random_symmetric(rng, p, scale=1.0):
    A = rng.normal(scale=scale, size=(p, p))
    return (A + A.T) / 2


def ridge_objective(S, theta, ridge):
    sign, logdet = np.linalg.slogdet(theta)
    assert sign > 0
    return -logdet + np.sum(S * theta) + ridge * np.sum(theta**2)


symmetric_matrices = st.integers(2, 7).flatmap(
    lambda p: arrays(
        np.float64,
        (p, p),
        elements=st.floats(-10, 10, allow_nan=False, allow_subnormal=False),
    ).map(lambda A: (A + A.T) / 2)
)


# ---------------------------------------------------------------------------------------
# ridge_precision
# ---------------------------------------------------------------------------------------


def test_ridge_matches_a_generic_optimiser():
    # Minimise the objective over Θ = LLᵀ with a quasi-Newton method, independently of the
    # eigenvalue formula.
    rng = np.random.default_rng(1)
    p, ridge = 4, 0.3
    S = random_symmetric(rng, p)  # indefinite
    assert np.linalg.eigvalsh(S)[0] < 0
    rows, cols = np.tril_indices(p)

    def objective(params):
        L = np.zeros((p, p))
        L[rows, cols] = params
        theta = L @ L.T
        return (
            -2 * np.sum(np.log(np.abs(np.diagonal(L))))
            + np.sum(S * theta)
            + ridge * np.sum(theta**2)
        )

    start = np.eye(p)[rows, cols]
    found = optimize.minimize(objective, start, method="BFGS", options={"gtol": 1e-10})
    L = np.zeros((p, p))
    L[rows, cols] = found.x
    result = ridge_precision(S, ridge)
    assert_allclose(result.estimate, L @ L.T, atol=1e-6)
    assert result.objective == pytest.approx(found.fun, rel=1e-9)
    assert result.iterations == 0 and result.converged


@settings(max_examples=40, deadline=None, database=None, derandomize=True)
@given(S=symmetric_matrices, log_ridge=st.floats(-6, 3))
def test_ridge_stationarity_and_positive_definiteness(S, log_ridge):
    ridge = 10.0**log_ridge
    result = ridge_precision(S, ridge)
    theta = result.estimate
    assert np.all(np.isfinite(theta))
    assert_allclose(theta, theta.T, atol=0)
    assert np.linalg.eigvalsh(theta)[0] > 0
    # Gradient -Θ⁻¹ + S + 2·ridge·Θ vanishes; Θ⁻¹ computed by an LU solve.
    inverse = np.linalg.solve(theta, np.eye(S.shape[0]))
    gradient = -inverse + S + 2 * ridge * theta
    scale = np.abs(inverse).max() + np.abs(S).max() + 2 * ridge * np.abs(theta).max()
    assert np.abs(gradient).max() <= 1e-9 * scale
    assert_allclose(result.covariance, inverse, atol=1e-9 * np.abs(inverse).max())
    assert result.objective == pytest.approx(ridge_objective(S, theta, ridge), rel=1e-9, abs=1e-9)


def test_ridge_is_accurate_for_strongly_negative_eigenvalues():
    # φ = -1e4 with ridge 1e-6: the naive 2 / (φ + √(φ² + 8·ridge)) cancels catastrophically.
    S = np.diag([-1e4, 1.0])
    ridge = 1e-6
    theta = ridge_precision(S, ridge).estimate[0, 0]
    # Positive root of 2·ridge·θ² + φθ - 1 = 0 by Newton's method from the large root.
    root = 1e4 / (2 * ridge)
    for _ in range(50):
        root -= (2 * ridge * root**2 - 1e4 * root - 1) / (4 * ridge * root - 1e4)
    assert theta == pytest.approx(root, rel=1e-12)


def test_ridge_overflow_is_a_numerical_error():
    with pytest.raises(NumericalError, match="ridge = 1e-300 is too small"):
        ridge_precision(np.diag([-1e10, 1.0]), 1e-300)


@pytest.mark.parametrize(
    ("ridge", "error", "message"),
    [
        (0.0, ValueError, r"ridge must be a finite number > 0; got 0.0"),
        (-1.0, ValueError, r"ridge must be a finite number > 0; got -1.0"),
        (np.nan, ValueError, r"ridge must be a finite number > 0; got nan"),
        (np.inf, ValueError, r"ridge must be a finite number > 0; got inf"),
        (None, TypeError, r"ridge must be a real number"),
    ],
)
def test_ridge_rejects_bad_penalty(ridge, error, message):
    with pytest.raises(error, match=message):
        ridge_precision(np.eye(3), ridge)


# ---------------------------------------------------------------------------------------
# project_psd
# ---------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, database=None, derandomize=True)
@given(S=symmetric_matrices)
def test_psd_projection_equals_the_polar_formula(S):
    # The PSD projection is (S + |S|) / 2 with |S| = (SᵀS)^½ the polar factor (Higham 1988),
    # computed here from a singular value decomposition instead of clipping eigenvalues.
    result = project_psd(S)
    absolute = linalg.polar(S)[1]
    scale = max(np.abs(S).max(), 1.0)
    assert_allclose(result.estimate, (S + absolute) / 2, atol=1e-7 * scale)
    assert np.linalg.eigvalsh(result.estimate)[0] >= -1e-12 * scale
    assert result.objective == pytest.approx(
        np.linalg.norm(result.estimate - S), rel=1e-7, abs=1e-9 * scale
    )


def test_psd_projection_with_floor_is_nearest_and_idempotent():
    rng = np.random.default_rng(2)
    S = random_symmetric(rng, 6)
    floor = 0.25
    result = project_psd(S, min_eigenvalue=floor)
    P = result.estimate
    assert np.linalg.eigvalsh(P)[0] >= floor - 1e-12
    assert result.n_clipped == int(np.sum(np.linalg.eigvalsh(S) < floor))
    # Shift: projecting onto {X ⪰ c·I} is c·I plus the PSD projection of S - c·I.
    shifted = project_psd(S - floor * np.eye(6)).estimate + floor * np.eye(6)
    assert_allclose(P, shifted, atol=1e-12)
    assert_allclose(project_psd(P, min_eigenvalue=floor).estimate, P, atol=1e-12)
    # No feasible competitor is closer to S.
    for _ in range(20):
        B = rng.normal(size=(6, 6))
        competitor = project_psd(P + 0.1 * B @ B.T, min_eigenvalue=floor).estimate
        assert np.linalg.norm(competitor - S) >= np.linalg.norm(P - S) - 1e-12


def test_psd_projection_leaves_a_psd_matrix_alone():
    rng = np.random.default_rng(3)
    B = rng.normal(size=(5, 8))
    S = B @ B.T / 8
    result = project_psd(S)
    assert_allclose(result.estimate, S, atol=1e-13)
    assert result.n_clipped == 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-0.1, r"min_eigenvalue must be a finite number >= 0; got -0.1"),
        (np.nan, r"min_eigenvalue must be a finite number >= 0; got nan"),
    ],
)
def test_psd_rejects_bad_floor(value, message):
    with pytest.raises(ValueError, match=message):
        project_psd(np.eye(2), min_eigenvalue=value)


# ---------------------------------------------------------------------------------------
# hard_threshold
# ---------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, database=None, derandomize=True)
@given(S=symmetric_matrices, threshold=st.floats(0, 12), keep_diagonal=st.booleans())
def test_hard_threshold_against_an_entrywise_loop(S, threshold, keep_diagonal):
    result = hard_threshold(S, threshold, keep_diagonal=keep_diagonal)
    p = S.shape[0]
    expected = np.zeros_like(S)
    kept_pairs = 0
    for i in range(p):
        for j in range(p):
            if (i == j and keep_diagonal) or abs(S[i, j]) > threshold:
                expected[i, j] = S[i, j]
                if i < j:
                    kept_pairs += 1
    assert_allclose(result.estimate, expected, atol=0, rtol=0)
    assert result.n_kept == kept_pairs
    assert result.n_kept + result.n_removed == p * (p - 1) // 2


def test_hard_threshold_is_strict_at_the_threshold():
    S = np.array([[1.0, 0.5, -0.2], [0.5, 0.1, 0.0], [-0.2, 0.0, 2.0]])
    result = hard_threshold(S, 0.5)
    assert result.estimate[0, 1] == 0.0 and result.estimate[1, 0] == 0.0
    assert result.estimate[1, 1] == 0.1  # diagonal kept although below the threshold
    assert hard_threshold(S, 0.5, keep_diagonal=False).estimate[1, 1] == 0.0


@pytest.mark.parametrize(
    ("threshold", "error", "message"),
    [
        (-1.0, ValueError, r"threshold must be a finite number >= 0; got -1.0"),
        (np.inf, ValueError, r"threshold must be a finite number >= 0; got inf"),
        (True, TypeError, r"threshold must be a real number"),
    ],
)
def test_hard_threshold_rejects_bad_threshold(threshold, error, message):
    with pytest.raises(error, match=message):
        hard_threshold(np.eye(2), threshold)


# ---------------------------------------------------------------------------------------
# Shared input validation
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda S: ridge_precision(S, 1.0),
        lambda S: project_psd(S),
        lambda S: hard_threshold(S, 0.1),
    ],
    ids=["ridge_precision", "project_psd", "hard_threshold"],
)
@pytest.mark.parametrize(
    ("S", "message"),
    [
        (np.ones((3, 2)), r"S must be a square 2-D matrix; got shape \(3, 2\)"),
        (np.array([[1.0, 2.0], [0.0, 1.0]]), r"S must be symmetric"),
        (np.array([[1.0, 0.0], [0.0, np.nan]]), r"S must contain only finite values"),
        (np.array([[1.0, -np.inf], [-np.inf, 1.0]]), r"S must contain only finite values"),
    ],
)
def test_bad_matrix_is_rejected_by_every_closed_form(call, S, message):
    with pytest.raises(ValueError, match=message):
        call(S)


@pytest.mark.parametrize(
    "call", [lambda S: ridge_precision(S, 1.0), lambda S: hard_threshold(S, 0.1)],
    ids=["ridge_precision", "hard_threshold"],
)
def test_graph_solvers_need_two_variables(call):
    with pytest.raises(ValueError, match=r"S needs at least 2 variables"):
        call(np.ones((1, 1)))


def test_projection_of_a_one_by_one_matrix_and_with_a_ceiling():
    # A 1 x 1 covariance is meaningful: its projection clips the variance at the floor.
    assert project_psd(np.array([[-0.5]])).estimate[0, 0] == 0.0
    assert project_psd(np.array([[2.0]]), max_eigenvalue=1.5).estimate[0, 0] == 1.5
    with pytest.raises(ValueError, match="max_eigenvalue must be >= min_eigenvalue"):
        project_psd(np.eye(2), min_eigenvalue=1.0, max_eigenvalue=0.5)


def test_symmetry_tolerance_is_relative():
    S = 1e6 * np.array([[1.0, 0.3], [0.3, 1.0]])
    S[0, 1] += 1e-4  # relative asymmetry 1e-10: accepted and symmetrised
    estimate = hard_threshold(S, 0.0).estimate
    assert estimate[0, 1] == estimate[1, 0]
    small = 1e-6 * np.array([[1.0, 0.3], [0.3, 1.0]])
    small[0, 1] += 1e-12  # same absolute asymmetry, relative 1e-6: rejected
    with pytest.raises(ValueError, match="S must be symmetric"):
        hard_threshold(small, 0.0)
