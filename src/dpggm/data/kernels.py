"""Compiled kernels (numba) of the passes: histograms on public grids, the rescaling of
records by released ranges and the row-norm clipping of the clipped sums.

A count "below an edge" is exact: every value is placed in its bucket by comparing it with
the grid's own float edges (``b = #{edges <= v}``), so the counts equal
``np.searchsorted(sorted_values, edges, side="left")`` on the same values, whatever the
block boundaries. A column is counted in two loops: the first guesses every value's
bucket from the grid's formula and settles it by two comparisons, without branches (a
mispredicted branch per value cost more than the rest of the work); the second checks
each guess by two comparisons and counts it, and only a wrong guess -- edges that are not
the grid the formula describes -- is corrected by the exact walk :func:`_fix` (so any
sorted edges count exactly, only slower). Missing values (NaN) are counted apart and
placed in no bucket.

The logarithm of the geometric guesses is read off the bits of the double (exponent, and
a 1024-entry table of the leading mantissa bits; error below 0.0008 in log2).

The rescaling ``z_j = clip((clip(x_j, lower_j, upper_j) - center_j) / half_j, -1, 1)`` is
written with the same floating-point operations, in the same order, as
:meth:`dpggm.mechanisms.private_bounds.PrivateRanges.transform`, so every path (memory,
files, Dask) gives bit-identical records. A row's squared norm is summed over the columns
in order, as a loop over the row would.

Every kernel releases the GIL (``nogil``): a pass can count one block while another
thread parses or reads the next.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = [
    "GEOMETRIC",
    "LINEAR",
    "SYMMETRIC",
    "bucket_counts",
    "rescale_rows",
    "rescaled_norm_counts",
    "scale_rows",
]

#: Grid kinds: ``edges = [-P[::-1], 0, P]`` with ``P`` geometric (median grid); a positive
#: geometric grid (spreads, norms); equally spaced edges (refinement grids).
SYMMETRIC = 0
GEOMETRIC = 1
LINEAR = 2


@intrinsic
def _float_bits(typingctx, value):
    """The IEEE-754 bits of a float64, as an int64 (a bit cast, no conversion)."""
    signature = types.int64(types.float64)

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return signature, codegen


#: log2 of the midpoints of the 1024 equal sub-intervals of the mantissa range [1, 2).
_LOG2_MANTISSA = np.log2(1.0 + (np.arange(1024) + 0.5) / 1024.0)
_ABSOLUTE = 0x7FFFFFFFFFFFFFFF


@njit(cache=True, inline="always")
def _fast_log2(bits):
    """log2 of a positive, normal, finite double from its bits (error below 0.0008); for
    zero, subnormal, infinite or NaN bits some number, which the callers clamp."""
    return ((bits >> 52) - 1023) + _LOG2_MANTISSA[(bits >> 42) & 1023]


@njit(cache=True, inline="always")
def _fix(b, v, edges, k):
    """Move the guess ``b`` to the exact ``#{edges <= v}`` (``edges`` sorted, length k)."""
    if b < 0:
        b = 0
    if b > k:
        b = k
    while b < k and edges[b] <= v:
        b += 1
    while b > 0 and edges[b - 1] > v:
        b -= 1
    return b


@njit(cache=True, inline="always")
def _settle(g, v, edges, k):
    """``#{edges <= v}`` when it is ``g - 1``, ``g`` or ``g + 1`` (two comparisons, no
    branch)."""
    g = min(max(g, 1), k - 1)
    return g - 1 + (edges[g - 1] <= v) + (edges[g] <= v)


@njit(cache=True, inline="always")
def _geometric_guess(v, edges, k, log_first, per_octave):
    """About ``#{edges <= v}`` on a positive geometric grid whose edge ``i`` is
    ``2**(log_first + i / per_octave)``: exact for a positive normal ``v``, anything for
    the rest, which :func:`_count` then settles."""
    bits = _float_bits(v) & _ABSOLUTE
    t = (_fast_log2(bits) - log_first) * per_octave
    t = min(max(t, -1.0), float(k))
    return _settle(int(t + 1.0), v, edges, k)


@njit(cache=True, inline="always")
def _symmetric_guess(v, edges, k, log_first, per_octave, half):
    """About ``#{edges <= v}`` on ``[-P[::-1], 0, P]``, ``P`` geometric with ``half``
    edges: exact for normal values and zeros."""
    bits = _float_bits(v) & _ABSOLUTE
    t = (_fast_log2(bits) - log_first) * per_octave
    t = min(max(t, -1.0), float(half))
    # floor(t) for t >= -1; P[i] <= |v| < P[i + 1] at i = floor(t), give or take one.
    below = int(t + 1.0) - 1
    return _settle(half + 2 + below if v > 0 else half - 1 - below, v, edges, k)


@njit(cache=True, inline="always")
def _linear_guess(v, edges, k, first, scale):
    """About ``#{edges <= v}`` on equally spaced edges from ``first``."""
    t = (v - first) * scale
    t = min(max(t, -1.0), float(k))
    return _settle(int(t + 1.0), v, edges, k)


@njit(cache=True, inline="always")
def _count(b, v, edges, k, counts):
    """Count ``v`` in its bucket ``#{edges <= v}``, given the guess ``b``: two comparisons
    check the guess, the exact walk :func:`_fix` corrects it (when the edges are not the
    grid the formula describes). A NaN fails the comparisons and is not counted
    (returns False)."""
    if (b == 0 or edges[b - 1] <= v) and (b == k or v < edges[b]):
        counts[b] += 1
        return True
    if v != v:
        return False
    counts[_fix(b, v, edges, k)] += 1
    return True


@njit(cache=True, nogil=True)
def bucket_counts(block, edges, kind, log_first, per_octave, half, centers, deviation,
                  counts, missing, tie_radius, tied):
    """Add the bucket counts of every column of ``block`` (``m x p``) to ``counts``.

    ``edges`` has one row shared by all columns or one row per column; ``counts`` is
    ``p x (K + 1)`` with ``counts[j, b] = #{values with exactly b edges <= value}``. With
    ``deviation`` the value counted is ``|x - centers[j]|``, and those at most
    ``tie_radius[j]`` are also added to ``tied[j]``. NaN is added to ``missing[j]`` and to
    no bucket.

    Per column, in two loops: the guesses (without branches, so the processor's pipeline
    stays full), then the checks and the counts; a refinement grid (``LINEAR``) in one
    loop that counts the values outside it in registers.
    """
    m, p = block.shape
    k = edges.shape[1]
    shared = edges.shape[0] == 1
    guesses = np.empty(m, dtype=np.int64)
    for j in range(p):
        row = edges[0] if shared else edges[j]
        center = centers[j]
        column = counts[j]
        if kind == LINEAR:
            # A refinement grid spans one cell of the median grid and its neighbours:
            # most values fall below or above it, and are counted in registers (counting
            # them in memory would chain every increment of the same bucket).
            first = row[0]
            last = row[k - 1]
            span = last - first
            scale = (k - 1) / span if span > 0 else 0.0
            low = 0
            high = 0
            lost = 0
            for i in range(m):
                v = block[i, j]
                if v < first:
                    low += 1
                elif v >= last:
                    high += 1
                elif not _count(_linear_guess(v, row, k, first, scale), v, row, k, column):
                    lost += 1
            column[0] += low
            column[k] += high
            missing[j] += lost
            continue
        if deviation:
            for i in range(m):
                guesses[i] = _geometric_guess(abs(block[i, j] - center), row, k, log_first,
                                              per_octave)
        elif kind == GEOMETRIC:
            for i in range(m):
                guesses[i] = _geometric_guess(block[i, j], row, k, log_first, per_octave)
        else:
            for i in range(m):
                guesses[i] = _symmetric_guess(block[i, j], row, k, log_first, per_octave,
                                              half)
        lost = 0
        if deviation:
            radius = tie_radius[j]
            close = 0
            for i in range(m):
                v = abs(block[i, j] - center)
                if _count(guesses[i], v, row, k, column):
                    close += v <= radius
                else:
                    lost += 1
            tied[j] += close
        else:
            for i in range(m):
                if not _count(guesses[i], block[i, j], row, k, column):
                    lost += 1
        missing[j] += lost


@njit(cache=True, inline="always")
def _rescaled(x, lower, upper, center, half):
    # clip(x, lower, upper), then (. - center) / half, then clip to [-1, 1]: the operations
    # of PrivateRanges.transform, in its order.
    if x < lower:
        x = lower
    elif x > upper:
        x = upper
    z = (x - center) / half
    if z < -1.0:
        z = -1.0
    elif z > 1.0:
        z = 1.0
    return z


@njit(cache=True, nogil=True)
def rescaled_norm_counts(block, lower, upper, center, half, edges, log_first, per_octave,
                         counts, squared):
    """Add, for the rows of ``block`` rescaled by the ranges, the bucket counts of their
    l2 norms on the positive geometric ``edges`` (one row) to ``counts`` (``K + 1``).

    ``squared`` is scratch space of at least ``m`` floats. A missing value (NaN) is
    rescaled to 0 (the center of its range), and a row with ``k`` of its ``p`` values
    present is counted by its norm over ``sqrt(k / p)``: the norm it would have if its
    missing values were like the others (see :func:`row_shares`)."""
    m, p = block.shape
    row = edges[0]
    k = row.shape[0]
    present = np.zeros(m, dtype=np.int64)
    for i in range(m):
        squared[i] = 0.0
    for j in range(p):
        lo, hi, c, h = lower[j], upper[j], center[j], half[j]
        for i in range(m):
            x = block[i, j]
            if x == x:
                z = _rescaled(x, lo, hi, c, h)
                squared[i] += z * z
                present[i] += 1
    for i in range(m):
        if present[i] == p:
            v = math.sqrt(squared[i])
        elif present[i] == 0:
            v = 0.0
        else:
            v = math.sqrt(squared[i] * p / present[i])
        _count(_geometric_guess(v, row, k, log_first, per_octave), v, row, k, counts)


@njit(cache=True, nogil=True)
def rescale_rows(block, lower, upper, center, half, out, outside, row_outside, squared,
                 present):
    """``out[:, j] = z_j`` for the rows of ``block`` (missing values become 0);
    ``outside[j] +=`` the values of column ``j`` outside its range, ``row_outside[i]`` =
    whether row ``i`` has one (curator-only counts), ``squared[i]`` = the row's squared
    norm after rescaling, ``present[i]`` = how many of its values are present."""
    m, p = block.shape
    for i in range(m):
        squared[i] = 0.0
        row_outside[i] = False
        present[i] = 0
    for j in range(p):
        lo, hi, c, h = lower[j], upper[j], center[j], half[j]
        beyond = 0
        for i in range(m):
            x = block[i, j]
            if x != x:
                out[i, j] = 0.0
                continue
            present[i] += 1
            if x < lo or x > hi:
                beyond += 1
                row_outside[i] = True
            z = _rescaled(x, lo, hi, c, h)
            out[i, j] = z
            squared[i] += z * z
        outside[j] += beyond


@njit(cache=True, nogil=True)
def scale_rows(out, factor, p):
    """``out[i, :p] *= factor[i]`` (the rows shrunk onto a norm bound)."""
    m = factor.shape[0]
    for j in range(p):
        for i in range(m):
            out[i, j] *= factor[i]
