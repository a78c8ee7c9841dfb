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

from numba import njit

__all__ = ["support_congruence"]


@njit(cache=True, nogil=True)
def support_congruence(W, indptr, indices, to_upper, values, rows, cols, out, F):
    """``out[e] = (W D W)[rows[e], cols[e]]`` for the symmetric ``D`` whose upper-triangle
    entries (diagonal included) are ``values``, in the order of ``rows, cols``.

    ``indptr, indices`` is the pattern of ``D`` (both triangles) in compressed sparse rows,
    ``to_upper[k]`` the position in ``values`` of its ``k``-th entry. ``W`` is symmetric,
    C-contiguous; ``F`` is ``p x p`` scratch (it holds ``D W`` on return).
    """
    p = W.shape[0]
    for c in range(p):
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
    for e in range(m):
        out[e] = 0.0
    # (W D W)_ij = sum_a W_ia (D W)_aj = sum_a W[a, i] F[a, j]: rows a of W and F stay in
    # cache while every wanted entry takes its term.
    for a in range(p):
        w = W[a]
        f = F[a]
        for e in range(m):
            out[e] += w[rows[e]] * f[cols[e]]
