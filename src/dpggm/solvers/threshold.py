"""Entrywise hard thresholding of a symmetric matrix."""

from __future__ import annotations

import numpy as np

from dpggm.solvers._result import SolverResult
from dpggm.solvers._validation import check_penalty, check_square_symmetric

__all__ = ["hard_threshold"]


def hard_threshold(S, threshold: float, *, keep_diagonal: bool = True) -> SolverResult:
    """Keep the entries with ``|S_ij| > threshold`` and set the others to zero.

    Parameters
    ----------
    S : array_like of shape (p, p)
        Symmetric matrix, ``p >= 2``.
    threshold : float
        Finite and ``>= 0``. The comparison is strict, as in DP-Thresholding (Wang,
        Xu & He): an entry equal to the threshold is removed.
    keep_diagonal : bool, default=True
        Keep every diagonal entry whatever its size (variances are not thresholded).

    Returns
    -------
    SolverResult
        ``estimate`` is the thresholded matrix (symmetric); ``extra`` holds ``n_kept``
        (off-diagonal pairs kept), ``n_removed`` (off-diagonal pairs zeroed) and
        ``threshold``. There is no objective (``nan``).

    Raises
    ------
    ValueError
        Invalid ``S`` or ``threshold``.

    Notes
    -----
    Privacy: post-processing only; consumes no budget. The result need not be positive
    semidefinite; follow with :func:`dpggm.solvers.psd.project_psd` if that is required.
    """
    S = check_square_symmetric(S)
    threshold = check_penalty(threshold, name="threshold")
    keep = np.abs(S) > threshold
    if keep_diagonal:
        np.fill_diagonal(keep, True)
    estimate = np.where(keep, S, 0.0)
    upper = np.triu_indices(S.shape[0], 1)
    n_kept = int(np.count_nonzero(keep[upper]))
    return SolverResult(
        estimate=estimate,
        iterations=0,
        converged=True,
        covariance=estimate,
        extra={
            "n_kept": n_kept,
            "n_removed": int(upper[0].size - n_kept),
            "threshold": threshold,
        },
    )
