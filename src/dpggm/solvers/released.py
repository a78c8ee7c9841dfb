"""The graphical lasso on a released second moment: a penalty from the release and its
public noise scale (:func:`auto_alpha`), and the solve, repaired by post-processing when
the noisy matrix admits no solution (:func:`solve_released`). Matrix work only: what a
release's noise is comes in as a number."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpggm.exceptions import NoSolutionError
from dpggm.solvers.glasso import graphical_lasso
from dpggm.solvers.psd import project_psd

__all__ = ["auto_alpha", "solve_released"]


def auto_alpha(noisy_covariance: np.ndarray, *, noise_std: float, n: int) -> float:
    """A graphical-lasso penalty from the release and public quantities only (no budget).

    ``alpha = noise_std * sqrt(2 ln(p (p - 1) / 2)) + s * sqrt(2 ln(p) / n)``, where ``s``
    is the median of the released diagonal (floored at 0). The first term is the
    universal threshold of the privacy noise: with high probability it exceeds every
    off-diagonal noise entry, so noise alone creates no edge. The second is the usual
    sampling-error rate of a sample covariance entry, scaled by a typical variance.
    """
    p = noisy_covariance.shape[0]
    pairs = max(p * (p - 1) / 2, 2.0)
    scale = max(float(np.median(np.diag(noisy_covariance))), 0.0)
    return noise_std * math.sqrt(2 * math.log(pairs)) + scale * math.sqrt(2 * math.log(max(p, 2)) / n)


def _floor_diagonal(S: np.ndarray, noise_std: float) -> tuple[np.ndarray, int]:
    """Raise released variances below a public floor to it (post-processing).

    A noisy diagonal entry can be zero or negative, and then the graphical lasso without a
    diagonal penalty has no solution. The floor is the off-diagonal noise standard
    deviation (a public quantity), or a tiny multiple of the largest variance for a
    non-private release.
    """
    diagonal = np.diag(S)
    floor = noise_std if noise_std > 0 else 1e-12 * max(float(np.max(np.abs(diagonal))), 1e-300)
    low = diagonal < floor
    if not low.any():
        return S, 0
    S = S.copy()
    S[np.diag_indices_from(S)] = np.maximum(diagonal, floor)
    return S, int(low.sum())


def solve_released(S: np.ndarray, alpha: float, *, noise_std: float,
                   **options: Any) -> tuple[Any, bool, int]:
    """The graphical lasso on a released second moment, repaired when it has no solution.

    A release can be too far from positive definite for ``alpha``. It is then repaired by
    post-processing, least first: variances below the public noise floor (``noise_std``,
    the off-diagonal noise standard deviation) are raised to it, and if that is not enough
    the matrix is projected onto the matrices with eigenvalues at least that floor.

    Returns the solver result, whether a repair was needed, and how many variances were
    raised.
    """
    try:
        return graphical_lasso(S, alpha, **options), False, 0
    except NoSolutionError:
        pass
    S, raised = _floor_diagonal(S, noise_std)
    try:
        return graphical_lasso(S, alpha, **options), True, raised
    except NoSolutionError:
        S = project_psd(S, min_eigenvalue=max(noise_std, 1e-12)).estimate
        return graphical_lasso(S, alpha, **options), True, raised
