"""Shared pieces of the solvers: one BLAS-threads guard and one component finder.

Privacy: deterministic post-processing helpers; they never see raw data and spend no
budget.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

__all__ = ["SINGLE_THREAD_FROM", "components_of", "single_threaded_blas"]

#: From this matrix order on, BLAS calls are made single-threaded.
SINGLE_THREAD_FROM = 64


def single_threaded_blas(p: int = SINGLE_THREAD_FROM) -> Any:
    """Context in which BLAS/LAPACK run on one thread (for matrices of order >= 64, or
    always when called without ``p``).

    The solvers make many moderate-size factorisations. A multi-threaded BLAS pool whose
    threads compete for shared cores can make each of them orders of magnitude slower
    (measured: a 200 x 200 Cholesky factorisation taking 0.4 s instead of 0.2 ms), while a
    single thread costs at most the parallel speed-up of these calls.
    """
    global _BLAS_CONTROLLER
    if p < SINGLE_THREAD_FROM:
        return contextlib.nullcontext()
    if _BLAS_CONTROLLER is None:
        # Inspecting the loaded libraries takes milliseconds and PACE-GGM enters this once
        # per round: the controller is built once. It knows the libraries loaded when it
        # is built: SciPy's BLAS (a library of its own beside NumPy's) is loaded first.
        import scipy.linalg  # noqa: F401
        from threadpoolctl import ThreadpoolController

        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


_BLAS_CONTROLLER = None


def components_of(adjacency: np.ndarray) -> list[np.ndarray]:
    """The connected components of an undirected graph given by a boolean adjacency matrix
    (the diagonal is ignored), each as a sorted index array; components in order of their
    smallest index."""
    adjacency = np.asarray(adjacency, dtype=bool).copy()
    p = adjacency.shape[0]
    np.fill_diagonal(adjacency, False)
    count, labels = connected_components(csr_matrix(adjacency), directed=False)
    if count == 1:
        return [np.arange(p)]
    order = np.argsort(labels, kind="stable")
    boundaries = np.flatnonzero(np.diff(labels[order])) + 1
    return np.split(order, boundaries)
