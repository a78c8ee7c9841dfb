"""Compiled kernels (numba) of the counting passes: histograms on public grids and the
rescaling of records by released ranges.

A count "below an edge" is exact: every value is placed in its bucket by comparing it with
the grid's own float edges (``b = #{edges <= v}``), after an O(1) guess from the grid's
formula, so the counts equal ``np.searchsorted(sorted_values, edges, side="left")`` on
the same values, whatever the block boundaries. Missing values (NaN) are counted apart and
placed in no bucket.

The rescaling ``z_j = clip((clip(x_j, lower_j, upper_j) - centre_j) / half_j, -1, 1)`` is
written with the same floating-point operations, in the same order, as
:meth:`dpggm.mechanisms.private_bounds.PrivateRanges.transform`, so every path (memory,
files, Dask) gives bit-identical records.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "GEOMETRIC",
    "LINEAR",
    "SYMMETRIC",
    "bucket_counts",
    "rescale_block",
    "rescaled_norm_counts",
]

#: Grid kinds: ``edges = [-P[::-1], 0, P]`` with ``P`` geometric (median grid); a positive
#: geometric grid (spreads, norms); equally spaced edges (refinement grids).
SYMMETRIC = 0
GEOMETRIC = 1
LINEAR = 2


@njit(cache=True, inline="always")
def _fix(b, v, edges, row):
    """Move the guess ``b`` to the exact ``#{edges[row] <= v}``."""
    k = edges.shape[1]
    if b < 0:
        b = 0
    if b > k:
        b = k
    while b < k and edges[row, b] <= v:
        b += 1
    while b > 0 and edges[row, b - 1] > v:
        b -= 1
    return b


#: log2 of the midpoints of 512 equal sub-intervals of [0.5, 1): with ``frexp`` it gives
#: log2(v) within 0.003 (enough for a guess that the exact fix-up then settles).
_LOG2_TABLE = np.log2(0.5 + (np.arange(512) + 0.5) / 1024.0)


@njit(cache=True, inline="always")
def _log2(v):
    if not v > 0.0 or v == math.inf:
        return math.log2(v)
    mantissa, exponent = math.frexp(v)
    return exponent + _LOG2_TABLE[int((mantissa - 0.5) * 1024.0)]


@njit(cache=True, inline="always")
def _guess(kind, v, edges, row, log_first, per_octave, half):
    """A bucket index near ``#{edges[row] <= v}`` from the grid's formula."""
    k = edges.shape[1]
    if kind == LINEAR:
        first = edges[row, 0]
        span = edges[row, k - 1] - first
        if not span > 0:
            return 0
        t = (v - first) / span * (k - 1)
        if t < -1.0:
            return 0
        if t > k:
            return k
        return int(math.floor(t)) + 1
    if kind == GEOMETRIC:
        if not v > 0:
            return 0
        t = (_log2(v) - log_first) * per_octave
        if t < -1.0:
            return 0
        if t > k:
            return k
        return int(math.floor(t)) + 1
    # SYMMETRIC: half = number of positive edges; 0 sits at index half.
    if v == 0.0:
        return half + 1
    t = (_log2(abs(v)) - log_first) * per_octave
    if v > 0:
        if t < -1.0:
            t = -1.0
        if t > half:
            t = half
        return half + 1 + int(math.floor(t)) + 1
    if t < 0.0:
        t = 0.0
    if t > half:
        t = half
    return half - int(math.ceil(t))


@njit(cache=True, nogil=True)
def bucket_counts(block, edges, kind, log_first, per_octave, half, centres, deviation,
                  counts, missing, tie_radius, tied):
    """Add the bucket counts of every column of ``block`` (``m x p``) to ``counts``.

    ``edges`` has one row shared by all columns or one row per column; ``counts`` is
    ``p x (K + 1)`` with ``counts[j, b] = #{values with exactly b edges <= value}``. With
    ``deviation`` the value counted is ``|x - centres[j]|``, and those at most
    ``tie_radius[j]`` are also added to ``tied[j]``. NaN is added to ``missing[j]`` and to
    no bucket.
    """
    m, p = block.shape
    row_step = 0 if edges.shape[0] == 1 else 1
    for j in range(p):
        row = j * row_step
        centre = centres[j]
        for i in range(m):
            v = block[i, j]
            if v != v:
                missing[j] += 1
                continue
            if deviation:
                v = abs(v - centre)
                if v <= tie_radius[j]:
                    tied[j] += 1
            b = _fix(_guess(kind, v, edges, row, log_first, per_octave, half), v, edges, row)
            counts[j, b] += 1


@njit(cache=True, inline="always")
def _rescaled(x, lower, upper, centre, half):
    # clip(x, lower, upper), then (. - centre) / half, then clip to [-1, 1]: the operations
    # of PrivateRanges.transform, in its order.
    if x < lower:
        x = lower
    elif x > upper:
        x = upper
    z = (x - centre) / half
    if z < -1.0:
        z = -1.0
    elif z > 1.0:
        z = 1.0
    return z


@njit(cache=True)
def rescaled_norm_counts(block, lower, upper, centre, half, edges, log_first, per_octave,
                         counts):
    """Add, for the rows of ``block`` rescaled by the ranges, the bucket counts of their
    l2 norms on the positive geometric ``edges`` (one row) to ``counts`` (``K + 1``).

    A missing value (NaN) is rescaled to 0 (the centre of its range)."""
    m, p = block.shape
    for i in range(m):
        total = 0.0
        for j in range(p):
            x = block[i, j]
            if x != x:
                continue
            z = _rescaled(x, lower[j], upper[j], centre[j], half[j])
            total += z * z
        v = math.sqrt(total)
        b = _fix(_guess(GEOMETRIC, v, edges, 0, log_first, per_octave, 0), v, edges, 0)
        counts[b] += 1


@njit(cache=True, nogil=True)
def rescale_block(block, lower, upper, centre, half, out, outside):
    """``out[:, :p] = z`` for the rows of ``block`` (missing values become 0), and
    ``outside[j] +=`` the values of column ``j`` outside its range (curator-only)."""
    m, p = block.shape
    for j in range(p):
        beyond = 0
        for i in range(m):
            x = block[i, j]
            if x != x:
                out[i, j] = 0.0
                continue
            if x < lower[j] or x > upper[j]:
                beyond += 1
            out[i, j] = _rescaled(x, lower[j], upper[j], centre[j], half[j])
        outside[j] += beyond
