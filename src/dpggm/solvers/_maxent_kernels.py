"""Compiled kernels of the dual Newton reconstruction.

The scaled Hessian of ``D_mu``
------------------------------

For pattern entries ``s = (r_s, c_s)`` the Hessian of ``-log det K`` in the free entries
``kappa`` of ``K`` at ``W = K^{-1}`` is

    H_st = c_s c_t (W[r_s, r_t] W[c_s, c_t] + W[r_s, c_t] W[c_s, r_t]) / 2,

``c = 1`` on the diagonal and ``2`` off it. Built with NumPy it takes four gathers of
``|S| x |S|`` arrays; here one pass writes only the triangle that the Cholesky
factorisation reads, already scaled to a unit diagonal (the scaling keeps the
factorisation stable deep in the barrier path, where ``H`` spans many orders of
magnitude).

The error-free residual ``I - K W``
-----------------------------------
Deep in the barrier path ``K`` is carried as ``K_hi + K_lo`` and ``W = K^{-1}`` must be
refined with a residual that is accurate relative to itself, not to ``|K| |W|``. Both
factors are split into slices (Ozaki et al., 2012) whose pairwise products a BLAS product
computes exactly; the exact products are then summed with Knuth's error-free two-sum.
The splitting and the summation are elementwise passes, fused here; the products stay
with BLAS.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["ozaki_split", "residual_sum", "scaled_hessian_upper", "symmetrize_from_lower"]


@njit(cache=True, nogil=True)
def scaled_hessian_upper(W, rows, cols, c, pen, ridge, out, scale):
    """Fill the upper triangle (C order) of ``out`` with ``H + diag(pen)`` scaled to a unit
    diagonal, plus ``ridge`` on that diagonal; ``scale`` receives ``sqrt(diag(H + pen))``.

    Returns False (``out`` unusable) when a diagonal entry is not positive and finite. The
    upper triangle in C order is the lower triangle of ``out.T`` in Fortran order, which is
    what ``dpotrf(out.T, lower=1)`` reads.
    """
    m = rows.size
    for s in range(m):
        r = rows[s]
        k = cols[s]
        w = W[r, k]
        d = 0.5 * c[s] * c[s] * (W[r, r] * W[k, k] + w * w) + pen[s]
        if not (d > 0.0 and d < math.inf):
            return False
        scale[s] = math.sqrt(d)
    for t in range(m):
        rt = rows[t]
        kt = cols[t]
        ft = 0.5 * c[t] / scale[t]
        Wr = W[rt]
        Wk = W[kt]
        for s in range(t, m):
            rs = rows[s]
            ks = cols[s]
            h = Wr[rs] * Wk[ks] + Wr[ks] * Wk[rs]
            out[t, s] = h * ft * c[s] / scale[s]
        out[t, t] = 1.0 + ridge
    return True


@njit(cache=True, nogil=True, inline="always")
def _power_of_two_at_least(x):
    """``2^ceil(log2 x)`` for ``x > 0``, exactly."""
    m, e = math.frexp(x)  # x = m 2^e, 0.5 <= m < 1
    if m == 0.5:
        return x
    return math.ldexp(1.0, e)


@njit(cache=True, nogil=True)
def ozaki_split(A, by_rows, shift, out):
    """Split ``A`` into ``out[0] + out[1] + out[2] + out[3]`` (exactly), each of the first
    three slices keeping the bits of ``A`` within ``shift`` of the largest magnitude of its
    row (``by_rows``) or column, so that a row-split slice times a column-split slice is
    an exact matrix product when ``shift`` is ``2^ceil((53 + log2 n) / 2)``."""
    n, k = A.shape
    rest = A.copy()
    top = np.empty(n if by_rows else k)
    for level in range(3):
        top[:] = 0.0
        for i in range(n):
            for j in range(k):
                a = abs(rest[i, j])
                if by_rows:
                    if a > top[i]:
                        top[i] = a
                elif a > top[j]:
                    top[j] = a
        for t in range(top.size):
            top[t] = shift * _power_of_two_at_least(top[t] if top[t] > 0.0 else 1.0)
        for i in range(n):
            for j in range(k):
                sigma = top[i] if by_rows else top[j]
                hi = (rest[i, j] + sigma) - sigma
                out[level, i, j] = hi
                rest[i, j] = rest[i, j] - hi
    out[3] = rest


@njit(cache=True, nogil=True)
def residual_sum(P, out):
    """``out = I - sum_k P[k]``, each term added with an error-free two-sum and the
    rounding errors summed apart (the carries are far below the result)."""
    n = out.shape[0]
    carry = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.0
        out[i, i] = 1.0
    for k in range(P.shape[0]):
        for i in range(n):
            for j in range(n):
                a = out[i, j]
                t = -P[k, i, j]
                s = a + t
                bp = s - a
                carry[i, j] += (a - (s - bp)) + (t - bp)
                out[i, j] = s
    for i in range(n):
        for j in range(n):
            out[i, j] += carry[i, j]


@njit(cache=True, nogil=True)
def symmetrize_from_lower(A):
    """A C-contiguous symmetric copy of the lower triangle of ``A`` (LAPACK's ``dpotri``
    leaves the other triangle unset)."""
    n = A.shape[0]
    out = np.empty((n, n))
    for i in range(n):
        for j in range(i + 1):
            a = A[i, j]
            out[i, j] = a
            out[j, i] = a
    return out
