"""The support refit's sparse Newton system equals the dense one.

The small seeded fits of ``test_pinned_fits.py`` have supports too dense for the sparse
path, so it is checked here on its own: the Hessian product against ``W D W`` formed
densely, its preconditioner against ``Theta R Theta`` formed densely, one Newton direction
against the dense conjugate-gradient solve, and a whole refit on a sparse support with the
sparse path on and off.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpggm.solvers.inference as inference
from dpggm.solvers.inference import support_refit


def _problem(p: int, seed: int):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(p, 3 * p))
    S = A @ A.T / (3 * p)
    mask = rng.random((p, p)) < 0.04
    mask |= mask.T
    np.fill_diagonal(mask, True)
    return S, mask


def test_hessian_product_is_w_d_w_on_the_support():
    S, mask = _problem(70, 0)
    W = np.linalg.inv(S + np.eye(70))
    hessian = inference._SparseHessian(mask)
    values = np.random.default_rng(1).normal(size=hessian.rows.size)
    D = np.zeros_like(W)
    D[hessian.rows, hessian.cols] = values
    D[hessian.cols, hessian.rows] = values
    expected = (W @ D @ W)[hessian.rows, hessian.cols]
    np.testing.assert_allclose(hessian._product(np.ascontiguousarray(W), values), expected,
                               rtol=0, atol=1e-12 * np.abs(expected).max())


def test_preconditioner_is_theta_r_theta_on_the_support():
    S, mask = _problem(70, 5)
    hessian = inference._SparseHessian(mask)
    theta = np.where(mask, np.linalg.inv(S + np.eye(70)), 0.0)
    theta = 0.5 * (theta + theta.T)
    values = np.random.default_rng(6).normal(size=hessian.rows.size)
    R = np.zeros_like(theta)
    R[hessian.rows, hessian.cols] = values
    R[hessian.cols, hessian.rows] = values
    expected = (theta @ R @ theta)[hessian.rows, hessian.cols]
    got = hessian._preconditioned(theta[hessian.full_rows, hessian.full_cols], values)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    # The scratch is left at zero for the next call.
    assert not np.any(hessian.sandwich_scratch)


def test_newton_direction_matches_the_dense_solve():
    S, mask = _problem(60, 2)
    W = np.linalg.inv(np.diag(np.diag(S)) + 0.5 * np.eye(60))
    theta = np.linalg.inv(W)
    gradient = np.where(mask, S - W, 0.0)
    dense = inference._newton_direction(W, gradient, mask, theta)
    sparse = inference._SparseHessian(mask).direction(W, gradient, theta)
    np.testing.assert_allclose(sparse, dense, rtol=0, atol=1e-9 * np.abs(dense).max())
    assert not np.any(sparse[~mask])


@pytest.mark.parametrize("seed", [3, 4])
def test_refit_on_a_sparse_support_equals_the_dense_path(seed, monkeypatch):
    S, mask = _problem(60, seed)
    assert np.count_nonzero(mask) <= inference._SPARSE_SUPPORT * 60 * 60
    sparse, _, sparse_converged = support_refit(S, mask, tol=1e-12)
    monkeypatch.setattr(inference._SparseHessian, "of", classmethod(lambda cls, m: None))
    dense, _, dense_converged = support_refit(S, mask, tol=1e-12)
    assert sparse_converged and dense_converged
    assert not np.any(sparse[~mask])
    np.testing.assert_allclose(sparse, dense, rtol=0, atol=1e-8 * np.abs(dense).max())
