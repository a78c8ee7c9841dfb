"""Projection of a symmetric matrix onto the positive semidefinite cone, and its extreme
eigenvalues."""

from __future__ import annotations

import numpy as np
from scipy import linalg

from dpggm.exceptions import NumericalError
from dpggm.solvers._result import SolverResult
from dpggm.solvers._validation import check_penalty, check_square_symmetric
from dpggm.solvers.toolkit import single_threaded_blas

__all__ = ["extreme_eigenvalue", "project_psd"]


def extreme_eigenvalue(matrix: np.ndarray, *, which: str) -> float:
    """The smallest or the largest eigenvalue of a symmetric matrix.

    LAPACK's driver for one eigenvalue (``?syevr``) is asked first; where it fails, which
    it can on a matrix that is diagonal but for a few entries with many equal eigenvalues
    ("Internal Error", and ``?syevx`` then does not converge: a 100-variable refit with one
    edge did, in Su, Guo & Zhang's reproduction), every eigenvalue is computed by divide
    and conquer (``?syevd``). Where ``?syevr`` succeeds its value is returned unchanged.

    Parameters
    ----------
    matrix : ndarray of shape (p, p)
        Symmetric (not checked: the callers hold matrices they built) and finite.
    which : {"smallest", "largest"}

    Returns
    -------
    float

    Raises
    ------
    NumericalError
        When neither driver returns the eigenvalue.
    """
    if which not in ("smallest", "largest"):
        raise ValueError(f"which must be 'smallest' or 'largest'; got {which!r}")
    p = matrix.shape[0]
    index = 0 if which == "smallest" else p - 1
    failure = "LAPACK returned a value that is not finite"
    if not np.isfinite(matrix).all():
        # LAPACK may return a finite number for a matrix with a NaN in it.
        raise NumericalError(f"the {which} eigenvalue of a {p} x {p} symmetric matrix could "
                             "not be computed: its entries are not all finite")
    try:
        value = float(linalg.eigvalsh(matrix, subset_by_index=[index, index],
                                      check_finite=False)[0])
    except np.linalg.LinAlgError:
        try:
            value = float(linalg.eigvalsh(matrix, driver="evd", check_finite=False)[index])
        except (np.linalg.LinAlgError, ValueError) as error:
            value, failure = float("nan"), str(error)
    if not np.isfinite(value):
        raise NumericalError(f"the {which} eigenvalue of a {p} x {p} symmetric matrix could "
                             f"not be computed ({failure})")
    return value


def project_psd(
    S, *, min_eigenvalue: float = 0.0, max_eigenvalue: float | None = None
) -> SolverResult:
    """Nearest matrix (in Frobenius norm) whose eigenvalues all lie in
    ``[min_eigenvalue, max_eigenvalue]``.

    The eigenvalues of ``S`` outside the interval are moved to its ends and the
    eigenvectors kept, which is the Frobenius projection onto
    ``{X : min_eigenvalue·I ⪯ X ⪯ max_eigenvalue·I}`` (Higham 1988). This is the one PSD
    projection of the library: estimators' PSD steps, GaussCov's eigenvalue clipping to
    ``[0, r^2]`` and the repairs of indefinite releases all call it.

    Parameters
    ----------
    S : array_like of shape (p, p)
        Symmetric matrix, ``p >= 1``.
    min_eigenvalue : float, default=0.0
        Floor for the eigenvalues, finite and ``>= 0``; ``> 0`` gives a positive definite
        result.
    max_eigenvalue : float, optional
        Ceiling for the eigenvalues (finite, ``>= min_eigenvalue``); ``None`` for none.

    Returns
    -------
    SolverResult
        ``estimate`` is the projection (exactly symmetric); ``objective`` is the Frobenius
        distance ``‖estimate - S‖_F``; ``extra`` holds ``n_clipped`` (eigenvalues raised),
        ``eigenvalues`` (of the result, ascending) and ``original_eigenvalues``.

    Raises
    ------
    ValueError
        Invalid ``S`` or ``min_eigenvalue``.

    Notes
    -----
    Privacy: post-processing only; consumes no budget (the PSD step of DP-Thresholding,
    Wang, Xu & He, uses ``min_eigenvalue=0``).
    """
    S = check_square_symmetric(S, min_size=1)
    floor = check_penalty(min_eigenvalue, name="min_eigenvalue")
    ceiling = None
    if max_eigenvalue is not None:
        ceiling = check_penalty(max_eigenvalue, name="max_eigenvalue")
        if ceiling < floor:
            raise ValueError(
                f"max_eigenvalue must be >= min_eigenvalue; got {max_eigenvalue!r} < "
                f"{min_eigenvalue!r}"
            )
    with single_threaded_blas(S.shape[0]):
        values, vectors = linalg.eigh(S, check_finite=False)
        clipped = np.clip(values, floor, ceiling)
        projected = (vectors * clipped) @ vectors.T
    projected = 0.5 * (projected + projected.T)
    return SolverResult(
        estimate=projected,
        iterations=0,
        converged=True,
        objective=float(np.sqrt(np.sum((clipped - values) ** 2))),
        covariance=projected,
        extra={
            "n_clipped": int(np.count_nonzero(clipped != values)),
            "eigenvalues": clipped,
            "original_eigenvalues": values,
        },
    )
