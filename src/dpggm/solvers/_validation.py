"""Input checks shared by the matrix solvers.

Every check raises :class:`ValueError` (or :class:`TypeError` for a wrong kind of object)
with a message that names the parameter, the constraint and the offending value.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "check_square_symmetric",
    "check_penalty",
    "check_positive_int",
    "check_tolerance",
]

# Statistics produced by this library are symmetric up to rounding of a few operations;
# anything further from symmetry is a caller's mistake (e.g. a transposed or raw Gram block).
SYMMETRY_RTOL = 1e-8


def check_square_symmetric(
    S,
    *,
    name: str = "S",
    symmetry_rtol: float = SYMMETRY_RTOL,
    min_size: int = 2,
) -> np.ndarray:
    """Return ``S`` as a symmetric C-contiguous float64 array, or raise.

    Parameters
    ----------
    S : array_like of shape (p, p)
        Candidate matrix.
    name : str, default="S"
        Name used in error messages.
    min_size : int, default=2
        Smallest order accepted (a graph needs 2 variables; a projection needs 1).
    symmetry_rtol : float
        ``S`` is accepted as symmetric when ``max|S - Sᵀ| <= symmetry_rtol * max|S|``;
        the accepted matrix is then replaced by ``(S + Sᵀ) / 2``.

    Returns
    -------
    ndarray of shape (p, p)
        A new, exactly symmetric array (the input is never modified).

    Raises
    ------
    TypeError
        If ``S`` cannot be read as a real numeric array.
    ValueError
        If ``S`` is not two-dimensional and square, has fewer than 2 rows, contains a
        non-finite entry, or is not symmetric within the tolerance.
    """
    try:
        array = np.asarray(S)
    except Exception as exc:  # pragma: no cover - exotic array-likes
        raise TypeError(f"{name} must be a real square matrix; got {type(S).__name__}") from exc
    if array.dtype == object or not (
        np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must be a real square matrix; got an array of dtype {array.dtype}")
    if np.iscomplexobj(array):
        raise TypeError(f"{name} must be a real square matrix; got complex dtype {array.dtype}")
    if array.ndim != 2 or array.shape[0] != array.shape[1]:
        raise ValueError(f"{name} must be a square 2-D matrix; got shape {array.shape}")
    if array.shape[0] < min_size:
        raise ValueError(
            f"{name} needs at least {min_size} variables (a p x p matrix with p >= "
            f"{min_size}); got shape {array.shape}"
        )
    matrix = np.array(array, dtype=np.float64, order="C", copy=True)
    if not np.all(np.isfinite(matrix)):
        bad = np.argwhere(~np.isfinite(matrix))[0]
        raise ValueError(
            f"{name} must contain only finite values; got {matrix[bad[0], bad[1]]} at "
            f"position ({bad[0]}, {bad[1]})"
        )
    scale = float(np.max(np.abs(matrix)))
    asymmetry = float(np.max(np.abs(matrix - matrix.T)))
    if asymmetry > symmetry_rtol * scale:
        bad = np.unravel_index(np.argmax(np.abs(matrix - matrix.T)), matrix.shape)
        raise ValueError(
            f"{name} must be symmetric (max|{name} - {name}.T| <= {symmetry_rtol:g} * "
            f"max|{name}|); got max|{name} - {name}.T| = {asymmetry:.3g} with max|{name}| = "
            f"{scale:.3g}, e.g. {name}[{bad[0]}, {bad[1]}] = {matrix[bad]:.6g} but "
            f"{name}[{bad[1]}, {bad[0]}] = {matrix[bad[1], bad[0]]:.6g}"
        )
    matrix += matrix.T
    matrix *= 0.5
    return matrix


def _as_real_scalar(value, name: str) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number; got {value!r} of type {type(value).__name__}"
        )
    return float(value)


def check_penalty(value, *, name: str, strictly_positive: bool = False) -> float:
    """Return a penalty as a float, or raise.

    Parameters
    ----------
    value : float
        The penalty.
    name : str
        Parameter name for error messages (``"alpha"``, ``"ridge"``, ...).
    strictly_positive : bool, default=False
        Require ``value > 0`` instead of ``value >= 0``.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If ``value`` is negative, NaN or infinite (or zero when ``strictly_positive``).
    """
    number = _as_real_scalar(value, name)
    if strictly_positive:
        if not (np.isfinite(number) and number > 0):
            raise ValueError(f"{name} must be a finite number > 0; got {number!r}")
    elif not (np.isfinite(number) and number >= 0):
        raise ValueError(f"{name} must be a finite number >= 0; got {number!r}")
    return number


def check_tolerance(value, *, name: str = "tol") -> float:
    """Return a convergence tolerance (finite, > 0) as a float, or raise."""
    number = _as_real_scalar(value, name)
    if not (np.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {number!r}")
    return number


def check_positive_int(value, *, name: str) -> int:
    """Return a positive integer (>= 1), or raise."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= 1; got {value!r}")
    if int(value) < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {int(value)}")
    return int(value)
