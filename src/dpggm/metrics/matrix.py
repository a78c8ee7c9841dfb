"""Errors between an estimated matrix and the truth.

All functions take ``(estimate, truth)``, validate them (2-D, same shape, finite) and
return a Python ``float``. Norms:

- ``"l1"``: the matrix ℓ1 operator norm, the largest absolute column sum
  ``max_j Σ_i |A_ij|`` (Su, Guo & Zhang's "ℓ1 norm");
- ``"fro"``: the Frobenius norm ``(Σ_ij A_ij²)^{1/2}``;
- ``"spectral"``: the ℓ2 operator norm, the largest singular value.

Privacy: evaluation only. These functions compare a release with the truth, which is
private in a real deployment; they belong to experiments, not to a release.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

__all__ = [
    "NORMS",
    "frobenius_error",
    "mahalanobis_error",
    "matrix_error",
    "matrix_norm",
    "relative_error",
]

NORMS = ("l1", "fro", "spectral")


def _as_matrix(name: str, value, *, square: bool = False) -> np.ndarray:
    try:
        matrix = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a 2-D array of numbers; got {type(value).__name__}"
        ) from exc
    if matrix.ndim != 2 or matrix.size == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array; got shape {matrix.shape}")
    if square and matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"{name} must be a square matrix; got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise ValueError(f"{name} must contain only finite values (no NaN or inf)")
    return matrix


def _as_pair(estimate, truth, *, square: bool = False) -> tuple[np.ndarray, np.ndarray]:
    estimate = _as_matrix("estimate", estimate, square=square)
    truth = _as_matrix("truth", truth, square=square)
    if estimate.shape != truth.shape:
        raise ValueError(
            "estimate and truth must have the same shape; "
            f"got estimate {estimate.shape} and truth {truth.shape}"
        )
    return estimate, truth


def _check_norm(norm: str) -> str:
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {', '.join(map(repr, NORMS))}; got {norm!r}")
    return norm


def _norm(matrix: np.ndarray, norm: str) -> float:
    if norm == "l1":
        return float(np.max(np.sum(np.abs(matrix), axis=0)))
    # Rescaling by the largest entry keeps squares from overflowing or underflowing.
    largest = float(np.max(np.abs(matrix)))
    if largest == 0.0:
        return 0.0
    unit = matrix / largest
    if norm == "fro":
        return largest * float(np.sqrt(np.sum(np.square(unit))))
    return largest * float(scipy.linalg.svdvals(unit)[0])


def matrix_norm(matrix, *, norm: str = "fro") -> float:
    """Norm of a matrix.

    Parameters
    ----------
    matrix : array_like of shape (m, n)
        Finite 2-D array.
    norm : {"l1", "fro", "spectral"}, default "fro"
        Largest absolute column sum, Frobenius norm or largest singular value.

    Returns
    -------
    float
    """
    return _norm(_as_matrix("matrix", matrix), _check_norm(norm))


def matrix_error(estimate, truth, *, norm: str = "fro") -> float:
    """Absolute error ``‖estimate − truth‖`` in the chosen norm.

    Parameters
    ----------
    estimate, truth : array_like of shape (m, n)
        Finite 2-D arrays of the same shape.
    norm : {"l1", "fro", "spectral"}, default "fro"
        See the module documentation.

    Returns
    -------
    float
        Non-negative; zero exactly when the matrices are equal.

    Notes
    -----
    Privacy: evaluation only; consumes no budget.
    """
    norm = _check_norm(norm)
    estimate, truth = _as_pair(estimate, truth)
    return _norm(estimate - truth, norm)


def relative_error(estimate, truth, *, norm: str = "fro") -> float:
    """Relative error ``‖estimate − truth‖ / ‖truth‖`` in the chosen norm.

    Su, Guo & Zhang report it in all three norms against the non-private estimate; Wang, Huai & Xu
    in the Frobenius norm; Wang, Xu & He in the spectral norm against the true covariance.

    Parameters
    ----------
    estimate, truth : array_like of shape (m, n)
        Finite 2-D arrays of the same shape; ``truth`` must not be zero.
    norm : {"l1", "fro", "spectral"}, default "fro"
        See the module documentation.

    Returns
    -------
    float
        Non-negative and invariant under scaling both matrices by the same non-zero
        factor.

    Raises
    ------
    ValueError
        If ``truth`` is the zero matrix (the ratio is undefined) or the inputs are
        invalid.

    Notes
    -----
    Privacy: evaluation only; consumes no budget.
    """
    norm = _check_norm(norm)
    estimate, truth = _as_pair(estimate, truth)
    denominator = _norm(truth, norm)
    if denominator == 0.0:
        raise ValueError("truth must not be the zero matrix: the relative error is undefined")
    return _norm(estimate - truth, norm) / denominator


def frobenius_error(estimate, truth) -> float:
    """Frobenius error ``‖estimate − truth‖_F`` (Ferrando et al.'s second metric).

    Parameters
    ----------
    estimate, truth : array_like of shape (m, n)
        Finite 2-D arrays of the same shape.

    Returns
    -------
    float

    Notes
    -----
    Privacy: evaluation only; consumes no budget.
    """
    return matrix_error(estimate, truth, norm="fro")


def mahalanobis_error(estimate, truth) -> float:
    """Mahalanobis error ``‖Σ^{-1/2} Σ̂ Σ^{-1/2} − I‖_F`` with ``Σ = truth``.

    This is the error of Ferrando et al. (PACE-GGM): it measures ``Σ̂`` in the geometry of
    ``Σ``, so it is invariant under ``Σ̂ ↦ A Σ̂ Aᵀ``, ``Σ ↦ A Σ Aᵀ`` for orthogonal
    ``A``, and under a common positive rescaling.

    Parameters
    ----------
    estimate : array_like of shape (p, p)
        The estimate ``Σ̂`` (finite; it need not be symmetric or definite).
    truth : array_like of shape (p, p)
        The reference ``Σ``: symmetric positive definite.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``truth`` is not symmetric or not positive definite (smallest eigenvalue
        ``<= p·eps·λ_max``), or the inputs are invalid. For an empirical covariance this
        happens when ``n < p`` or a column is constant: the metric is then undefined.

    Notes
    -----
    ``Σ^{-1/2}`` is formed from the symmetric eigendecomposition of ``truth``.

    Privacy: evaluation only; consumes no budget.
    """
    estimate, truth = _as_pair(estimate, truth, square=True)
    scale = float(np.max(np.abs(truth)))
    if not np.allclose(truth, truth.T, rtol=0.0, atol=1e-10 * scale):
        raise ValueError("truth must be symmetric for the Mahalanobis error")
    eigenvalues, eigenvectors = scipy.linalg.eigh((truth + truth.T) / 2.0)
    floor = truth.shape[0] * np.finfo(float).eps * max(float(eigenvalues[-1]), 0.0)
    if not eigenvalues[0] > floor:
        raise ValueError(
            "truth must be positive definite for the Mahalanobis error; its smallest "
            f"eigenvalue is {eigenvalues[0]:.3g} (largest {eigenvalues[-1]:.3g})"
        )
    inverse_root = (eigenvectors / np.sqrt(eigenvalues)) @ eigenvectors.T
    whitened = inverse_root @ estimate @ inverse_root
    return _norm(whitened - np.eye(truth.shape[0]), "fro")
