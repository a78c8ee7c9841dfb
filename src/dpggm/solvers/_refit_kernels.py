"""Compiled kernel of the support refit's Newton system (numba).

The conjugate-gradient solve of :func:`dpggm.solvers.inference.support_refit` multiplies a
symmetric direction ``D`` supported on a sparse pattern by the Hessian of
``-log det Theta``: ``W D W`` read on the pattern (``W = Theta^-1``, dense). As two dense
matrix products this costs ``4 p^3`` operations per conjugate-gradient step; with ``D``
sparse it is ``F = D W`` (``nnz * p``) and ``(W D W)_ij = sum_a W_ai F_aj`` for the ``s``
pattern entries wanted (``s * p``), which at ``p = 2000`` and a graph of a few thousand
edges is a thousand times less.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["least_level_with_indefinite_triangle", "support_congruence", "support_sandwich"]


def _congruence(W, indptr, indices, to_upper, values, rows, cols, out, F, chunks):
    p = W.shape[0]
    for c in prange(p):
        f = F[c]
        for a in range(p):
            f[a] = 0.0
        for k in range(indptr[c], indptr[c + 1]):
            v = values[to_upper[k]]
            if v != 0.0:
                w = W[indices[k]]
                for a in range(p):
                    f[a] += v * w[a]
    m = out.shape[0]
    partial = np.zeros((chunks, m))
    # (W D W)_ij = sum_a W_ia (D W)_aj = sum_a W[a, i] F[a, j]: rows a of W and F stay in
    # cache while every wanted entry takes its term.
    for chunk in prange(chunks):
        total = partial[chunk]
        for a in range(chunk * p // chunks, (chunk + 1) * p // chunks):
            w = W[a]
            f = F[a]
            for e in range(m):
                total[e] += w[rows[e]] * f[cols[e]]
    for e in range(m):
        value = 0.0
        for chunk in range(chunks):
            value += partial[chunk, e]
        out[e] = value


#: The second product's sum over the rows of ``W`` runs in this many fixed chunks, summed
#: in order: the result does not depend on how many threads ran them.
CONGRUENCE_CHUNKS = 8
#: From this many variables the products run on every core numba is given (p = 1 000:
#: 16 ms on one core, 8 ms on two idle ones); below, a product is too short to gain from
#: threads, and threads that find a core busy cost more than they save.
PARALLEL_FROM = 512

_congruence_serial = njit(cache=True, nogil=True)(_congruence)
_congruence_parallel = njit(cache=True, nogil=True, parallel=True)(_congruence)


def support_congruence(W, indptr, indices, to_upper, values, rows, cols, out, F):
    """``out[e] = (W D W)[rows[e], cols[e]]`` for the symmetric ``D`` whose upper-triangle
    entries (diagonal included) are ``values``, in the order of ``rows, cols``.

    ``indptr, indices`` is the pattern of ``D`` (both triangles) in compressed sparse rows,
    ``to_upper[k]`` the position in ``values`` of its ``k``-th entry. ``W`` is symmetric,
    C-contiguous; ``F`` is ``p x p`` scratch (it holds ``D W`` on return). Rows of ``F``
    are independent and the sum over the rows of ``W`` is split into
    :data:`CONGRUENCE_CHUNKS` partial sums added in a fixed order, so the result is the
    same on one thread (below :data:`PARALLEL_FROM` variables) or many.
    """
    kernel = _congruence_parallel if W.shape[0] >= PARALLEL_FROM else _congruence_serial
    kernel(W, indptr, indices, to_upper, values, rows, cols, out, F, CONGRUENCE_CHUNKS)


@njit(cache=True, nogil=True)
def support_sandwich(indptr, indices, theta_values, to_upper, values, rows, cols, out, F):
    """``out[e] = (Theta R Theta)[rows[e], cols[e]]`` for the symmetric ``R`` whose
    upper-triangle entries (diagonal included) are ``values``, with ``Theta`` and ``R`` both
    on the pattern ``indptr, indices`` (both triangles, compressed sparse rows;
    ``theta_values[k]`` is ``Theta``'s ``k``-th entry, ``to_upper[k]`` the position of that
    entry's value in ``values``). ``F`` is ``p x p`` scratch, zero on entry and on return.

    With ``d`` entries a row this is ``O(p d^2)``: the conjugate gradients of the refit use
    it as their preconditioner, the inverse of ``D -> W D W`` had the pattern been full.
    """
    p = indptr.shape[0] - 1
    # F = R Theta, row by row (rows of F have the pattern's distance-2 neighbourhood).
    for k in range(p):
        f = F[k]
        for a in range(indptr[k], indptr[k + 1]):
            r = values[to_upper[a]]
            if r == 0.0:
                continue
            l = indices[a]
            for b in range(indptr[l], indptr[l + 1]):
                f[indices[b]] += r * theta_values[b]
    m = out.shape[0]
    for e in range(m):
        i = rows[e]
        j = cols[e]
        total = 0.0
        for a in range(indptr[i], indptr[i + 1]):
            total += theta_values[a] * F[indices[a], j]
        out[e] = total
    # Back to zero, touching only what was written.
    for k in range(p):
        f = F[k]
        for a in range(indptr[k], indptr[k + 1]):
            l = indices[a]
            for b in range(indptr[l], indptr[l + 1]):
                f[indices[b]] = 0.0


@njit(cache=True, nogil=True)
def least_level_with_indefinite_triangle(indptr, indices, edge_rank, S):
    """The fewest strongest edges that hold a triangle whose 3 x 3 block of ``S`` is not
    positive definite (``len(indices) + 1`` when none is): every pattern that holds it has
    no positive definite completion (its block is fully specified).

    ``indptr, indices`` are the upper triangle of the pattern (``j > i`` only, sorted, in
    compressed sparse rows); ``edge_rank[e]`` is edge ``e``'s place in the order of
    strength (0 the strongest). Triangles ``i < j < k`` are found by merging the sorted
    rows of ``i`` and ``j``: ``O(sum of squared degrees)``.
    """
    p = indptr.shape[0] - 1
    best = indices.shape[0] + 1
    for i in range(p):
        end_i = indptr[i + 1]
        for a in range(indptr[i], end_i):
            j = indices[a]
            b = a + 1
            c = indptr[j]
            end_j = indptr[j + 1]
            while b < end_i and c < end_j:
                k_i = indices[b]
                k_j = indices[c]
                if k_i == k_j:
                    level = max(edge_rank[a], edge_rank[b], edge_rank[c]) + 1
                    if level < best:
                        k = k_i
                        s_ii = S[i, i]
                        s_jj = S[j, j]
                        s_kk = S[k, k]
                        x = S[i, j]
                        y = S[i, k]
                        z = S[j, k]
                        minor = s_ii * s_jj - x * x
                        det = (s_ii * (s_jj * s_kk - z * z) - x * (x * s_kk - z * y)
                               + y * (x * z - s_jj * y))
                        if s_ii <= 0.0 or minor <= 0.0 or det <= 0.0:
                            best = level
                    b += 1
                    c += 1
                elif k_i < k_j:
                    b += 1
                else:
                    c += 1
    return best
