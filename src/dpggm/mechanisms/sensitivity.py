"""Sensitivities of the second moment, the Gram matrix, sums and counts.

All figures depend only on public parameters -- the declared bounds, ``p``, the
neighbouring relation and (under replace-one only) ``n`` -- and every figure is an
**upper bound** in floating point: sums and products of bounds are formed exactly with
rationals and rounded up.

Two statistics are distinguished:

* the normalised second moment ``S = X^T X / n``, which may be released only under
  replace-one neighbours, where ``n`` is public;
* the unnormalised Gram matrix ``G = X^T X``, column sums ``X^T 1`` and the count ``n``,
  released under add/remove neighbours, where ``n`` itself is private: one record adds or
  removes one outer product ``x x^T``. (Dividing by the true ``n`` under add/remove would
  make the noise scale, and the divergence between neighbours, depend on private data.)

Under replace-one, ``G`` changes by ``x x^T - x' x'^T``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpggm.exceptions import UnsupportedNeighborsError
from dpggm.mechanisms.bounds import Bounds, Box, RowNorm, check_neighbors

__all__ = [
    "gram_entry_sensitivity",
    "gram_l1_sensitivity",
    "gram_l2_sensitivity",
    "indicator_l2_sensitivity",
    "mean_l2_sensitivity",
    "row_l2_sensitivity",
    "second_moment_entry_sensitivity",
    "second_moment_l1_sensitivity",
    "second_moment_l2_sensitivity",
    "sum_l1_sensitivity",
    "sum_l2_sensitivity",
]

#: Factor by which replace-one exceeds add/remove for a sum of per-record terms.
_REPLACE_FACTOR = {"replace": 2, "add-remove": 1}


def _up(value: Fraction) -> float:
    """The smallest float not below ``value``."""
    result = float(value)
    if Fraction(result) < value:
        result = math.nextafter(result, math.inf)
    return result


def _check_n(n: int) -> int:
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    return int(n)


def _box_vector(bounds: Box, p: int) -> list[Fraction]:
    return [Fraction(float(b)) for b in bounds.vector(p)]


def _squared_row_norm(bounds: Bounds, p: int) -> Fraction:
    """An exact upper bound on ``||x||_2^2`` for every clipped record."""
    bounds.check_dimension(p)
    if isinstance(bounds, Box):
        return sum((b * b for b in _box_vector(bounds, p)), Fraction(0))
    if isinstance(bounds, RowNorm):
        return Fraction(bounds.bound) ** 2
    raise TypeError(f"unsupported bounds {bounds!r}")


def _replace_only(neighbors: str, what: str) -> None:
    if check_neighbors(neighbors) != "replace":
        raise UnsupportedNeighborsError(
            f"{what} divides by the number of records n, which is private under add/remove "
            "neighbours; release the unnormalised Gram matrix and a noisy count instead "
            "(gram_*_sensitivity)"
        )


# --------------------------------------------------------------------------- Gram X^T X


def gram_l2_sensitivity(bounds: Bounds, *, p: int, neighbors: str) -> float:
    """l2 sensitivity of the upper triangle (with diagonal) of ``G = X^T X``.

    Add/remove: ``||x x^T||_F <= ||x||^2 <= B^2``. Replace-one:
    ``||x x^T - x' x'^T||_F^2 = |x|^4 + |x'|^4 - 2 (x^T x')^2 <= 2 B^4``, so ``sqrt(2) B^2``.
    (The upper triangle's norm is at most the whole matrix's.) A box ``b`` gives
    ``B^2 = ||b||_2^2``.
    """
    check_neighbors(neighbors)
    b2 = _squared_row_norm(bounds, p)
    if neighbors == "add-remove":
        return _up(b2)
    # sqrt(2) b2, rounded up: the smallest float s with s^2 >= 2 b2^2.
    value = math.sqrt(2.0) * float(b2)
    while Fraction(value) ** 2 < 2 * b2 * b2:
        value = math.nextafter(value, math.inf)
    return value


def gram_l1_sensitivity(bounds: Bounds, *, p: int, neighbors: str) -> float:
    """l1 sensitivity of the upper triangle (with diagonal) of ``G`` (for Laplace noise).

    One record contributes ``sum_{j<=k} |x_j x_k| = (||x||_1^2 + ||x||_2^2) / 2``: at most
    ``(p + 1) B^2 / 2`` under a row-norm bound and ``(||b||_1^2 + ||b||_2^2) / 2`` under a
    box. Replace-one doubles it.
    """
    check_neighbors(neighbors)
    bounds.check_dimension(p)
    if isinstance(bounds, Box):
        b = _box_vector(bounds, p)
        one = (sum(b, Fraction(0)) ** 2 + sum((v * v for v in b), Fraction(0))) / 2
    elif isinstance(bounds, RowNorm):
        one = (p + 1) * Fraction(bounds.bound) ** 2 / 2
    else:
        raise TypeError(f"unsupported bounds {bounds!r}")
    return _up(_REPLACE_FACTOR[neighbors] * one)


def gram_entry_sensitivity(bounds: Bounds, *, p: int, neighbors: str) -> np.ndarray:
    """Per-entry sensitivity matrix of ``G``.

    Box ``b``: off-diagonal ``2 b_j b_k`` (replace) or ``b_j b_k`` (add/remove); diagonal
    ``b_j^2`` under both (``x_j^2`` lies in ``[0, b_j^2]``). Row norm ``B``:
    ``|x_j x_k| <= B^2 / 2`` off the diagonal, so ``B^2`` (replace) or ``B^2 / 2``
    (add/remove); diagonal ``B^2``.
    """
    check_neighbors(neighbors)
    bounds.check_dimension(p)
    factor = _REPLACE_FACTOR[neighbors]
    if isinstance(bounds, Box):
        b = bounds.vector(p)
        out = np.outer(b, b) * factor
        np.fill_diagonal(out, b * b)
    elif isinstance(bounds, RowNorm):
        b2 = _up(Fraction(bounds.bound) ** 2)
        out = np.full((p, p), factor * b2 / 2)
        np.fill_diagonal(out, b2)
    else:
        raise TypeError(f"unsupported bounds {bounds!r}")
    # One rounding per product (multiplying by 2 or halving is exact): one step up bounds it.
    return np.nextafter(out, np.inf)


def sum_l2_sensitivity(bounds: Bounds, *, p: int, neighbors: str) -> float:
    """l2 sensitivity of the column sums ``X^T 1``: ``2B`` (replace) or ``B`` (add/remove)."""
    check_neighbors(neighbors)
    b2 = _squared_row_norm(bounds, p) * _REPLACE_FACTOR[neighbors] ** 2
    value = math.sqrt(float(b2))
    while Fraction(value) ** 2 < b2:
        value = math.nextafter(value, math.inf)
    return value


def sum_l1_sensitivity(bounds: Bounds, *, p: int, neighbors: str) -> float:
    """l1 sensitivity of the column sums: ``||b||_1`` (box) or ``sqrt(p) B`` (row norm),
    doubled under replace-one."""
    check_neighbors(neighbors)
    bounds.check_dimension(p)
    if isinstance(bounds, Box):
        one = sum(_box_vector(bounds, p), Fraction(0))
        return _up(_REPLACE_FACTOR[neighbors] * one)
    if isinstance(bounds, RowNorm):
        squared = p * Fraction(bounds.bound) ** 2 * _REPLACE_FACTOR[neighbors] ** 2
        value = math.sqrt(float(squared))
        while Fraction(value) ** 2 < squared:
            value = math.nextafter(value, math.inf)
        return value
    raise TypeError(f"unsupported bounds {bounds!r}")


# ------------------------------------------------------------ normalised, replace-one only


def _divided(value: float, n: int) -> float:
    return _up(Fraction(value) / n)


def second_moment_l2_sensitivity(bounds: Bounds, *, n: int, p: int, neighbors: str) -> float:
    """l2 sensitivity of the upper triangle of ``S = X^T X / n``: ``sqrt(2) B^2 / n``.

    Replace-one only (``n`` public); add/remove raises
    :class:`~dpggm.exceptions.UnsupportedNeighborsError`.
    """
    _replace_only(neighbors, "the normalised second moment X^T X / n")
    n = _check_n(n)
    return _divided(gram_l2_sensitivity(bounds, p=p, neighbors=neighbors), n)


def second_moment_l1_sensitivity(bounds: Bounds, *, n: int, p: int, neighbors: str) -> float:
    """l1 sensitivity of the upper triangle of ``S`` (replace-one only)."""
    _replace_only(neighbors, "the normalised second moment X^T X / n")
    n = _check_n(n)
    return _divided(gram_l1_sensitivity(bounds, p=p, neighbors=neighbors), n)


def second_moment_entry_sensitivity(
    bounds: Bounds, *, n: int, p: int, neighbors: str
) -> np.ndarray:
    """Per-entry sensitivity matrix of ``S`` (replace-one only): the Gram's over ``n``."""
    _replace_only(neighbors, "the normalised second moment X^T X / n")
    n = _check_n(n)
    return np.nextafter(gram_entry_sensitivity(bounds, p=p, neighbors=neighbors) / n, np.inf)


def mean_l2_sensitivity(bounds: Bounds, *, n: int, p: int, neighbors: str) -> float:
    """l2 sensitivity of the mean ``X^T 1 / n``: ``2B / n`` (replace-one only)."""
    _replace_only(neighbors, "the mean X^T 1 / n")
    n = _check_n(n)
    return _divided(sum_l2_sensitivity(bounds, p=p, neighbors=neighbors), n)


def indicator_l2_sensitivity(p: int) -> float:
    """l2 sensitivity of the per-column counts of present (not missing) values: one
    record's indicator lies in ``{0, 1}^p``, so replacing it (or adding or removing it)
    moves the counts by at most ``sqrt(p)``, rounded up here."""
    p = _check_n(p)
    value = math.sqrt(p)
    while Fraction(value) ** 2 < p:
        value = math.nextafter(value, math.inf)
    return value


def row_l2_sensitivity(bounds: Bounds, *, p: int, neighbors: str) -> float:
    """l2 sensitivity of releasing the records themselves (one changed row): ``2B``
    (replace-one). Releasing ``n`` noisy rows reveals ``n``, so add/remove is refused."""
    _replace_only(neighbors, "a release of the records themselves (it reveals n)")
    return sum_l2_sensitivity(bounds, p=p, neighbors=neighbors)
