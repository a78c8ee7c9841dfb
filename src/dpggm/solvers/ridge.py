"""Ridge-penalised precision matrix in closed form (DP-RP of Su, Guo and Zhang)."""

from __future__ import annotations

import numpy as np
from scipy import linalg

from dpggm.exceptions import NumericalError
from dpggm.solvers._result import SolverResult
from dpggm.solvers._validation import check_penalty, check_square_symmetric
from dpggm.solvers.toolkit import single_threaded_blas

__all__ = ["ridge_precision"]


def ridge_precision(S, ridge: float) -> SolverResult:
    """Minimiser of ``-log det Θ + tr(SΘ) + ridge·‖Θ‖_F²`` over positive definite Θ.

    With ``S = M diag(φ) Mᵀ`` the solution is ``Θ = M diag(θ) Mᵀ`` where ``θ_i`` is the
    positive root of ``2·ridge·θ² + φ_i θ - 1 = 0``,
    ``θ_i = 2 / (φ_i + √(φ_i² + 8·ridge))``. It is positive definite for every symmetric
    ``S``, including an indefinite noisy one, and needs no iteration.

    Parameters
    ----------
    S : array_like of shape (p, p)
        Symmetric matrix (covariance or noisy second-moment matrix), ``p >= 2``.
    ridge : float
        Frobenius penalty, ``> 0``.

    Returns
    -------
    SolverResult
        ``estimate`` is Θ; ``objective`` the penalised objective at Θ; ``extra`` holds
        ``covariance`` (Θ⁻¹), ``eigenvalues`` (of Θ, paired with the ascending eigenvalues of
        S, hence descending) and ``ridge``.

    Raises
    ------
    ValueError
        Invalid ``S`` or ``ridge`` (``ridge`` must be finite and ``> 0``).
    NumericalError
        If ``ridge`` is so small relative to a negative eigenvalue of ``S`` that Θ
        overflows.

    Notes
    -----
    Privacy: post-processing only; consumes no budget. This is the estimator DP-RP of
    Su, Guo & Zhang when applied to the privatised ``S``.
    """
    S = check_square_symmetric(S)
    ridge = check_penalty(ridge, name="ridge", strictly_positive=True)
    with single_threaded_blas(S.shape[0]):
        phi, vectors = linalg.eigh(S, check_finite=False)
        root = np.hypot(phi, np.sqrt(8.0 * ridge))
        with np.errstate(over="ignore", divide="ignore"):
            # Each form avoids cancellation on its side of zero: φ + root loses accuracy
            # for φ << 0, root - φ for φ >> 0.
            theta = np.where(phi >= 0, 2.0 / (phi + root), (root - phi) / (4.0 * ridge))
        if not (np.all(np.isfinite(theta)) and np.all(theta > 0)):
            raise NumericalError(
                f"ridge = {ridge:g} is too small for the most negative eigenvalue of S "
                f"({phi[0]:.3g}): the ridge precision overflows. Use a larger ridge."
            )
        precision = (vectors * theta) @ vectors.T
        covariance = (vectors / theta) @ vectors.T
    precision = 0.5 * (precision + precision.T)
    covariance = 0.5 * (covariance + covariance.T)
    objective = float(-np.sum(np.log(theta)) + phi @ theta + ridge * theta @ theta)
    return SolverResult(
        estimate=precision,
        iterations=0,
        converged=True,
        objective=objective,
        precision=precision,
        covariance=covariance,
        extra={"eigenvalues": theta, "ridge": ridge},
    )
