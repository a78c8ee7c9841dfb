"""Pinned copy of dpggm.solvers.maxent at commit 5de87ab (before its
reconstruction was rewritten for speed).

The reference path of benchmarks/bench_pace.py: PACE-GGM fits are re-run with this
``MaxEntropyReconstructor`` to measure the speed-up and the agreement of the estimates.
Not part of the library; do not edit (it documents the old algorithm as it was).
"""
# ruff: noqa


from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.optimize as sopt
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from dpggm.exceptions import ConvergenceWarning, NumericalError
from dpggm.solvers._result import SolverResult
from dpggm.solvers._validation import SYMMETRY_RTOL

__all__ = [
    "MaxEntropyReconstructor",
    "max_entropy_completion",
    "pattern_components",
]

_METHODS = ("auto", "dual-newton", "ipm-cholesky")

# Barrier schedule shared by the path-following branch and by IPM-Cholesky: relative mu
# down to 1e-10, by factors of 100 down to 1e-6 and of 10 below. The last three values are
# the extrapolation nodes (truncation error O(mu^3)); the fourth-last enters the error
# estimate.
_MU_FACTOR = 0.1
_MU_REL_MIN = 1e-10
_COARSE_UNTIL = -6
# A ConvergenceWarning is issued when the estimated relative error of an extrapolated
# limit exceeds this (see the module docstring for the accuracy actually reached).
_EXTRAPOLATION_WARN = 1e-6
_IPM_RESTARTS = 20


# --------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------


def _as_square_matrix(name: str, a) -> np.ndarray:
    try:
        arr = np.asarray(a, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real p x p array; got {type(a).__name__}") from exc
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square p x p array; got shape {arr.shape}")
    return arr


def _validate(values, precisions) -> tuple[np.ndarray, np.ndarray]:
    y = _as_square_matrix("values", values)
    lam = _as_square_matrix("precisions", precisions)
    if y.shape != lam.shape:
        raise ValueError(
            f"values and precisions must have the same shape; got {y.shape} and {lam.shape}"
        )
    if not np.all(np.isfinite(y)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(y))[0])
        raise ValueError(f"values must be finite; got {y[bad]} at entry {bad}")
    if not np.all(np.isfinite(lam)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(lam))[0])
        raise ValueError(f"precisions must be finite; got {lam[bad]} at entry {bad}")
    if np.any(lam < 0):
        bad = tuple(int(i) for i in np.argwhere(lam < 0)[0])
        raise ValueError(
            f"precisions must be >= 0 (0 marks an unmeasured entry); got {lam[bad]} at entry {bad}"
        )
    diag = np.diag(lam)
    if np.any(diag <= 0):
        j = int(np.argmin(diag > 0))
        raise ValueError(
            "precisions must be > 0 on the whole diagonal (every diagonal entry must be "
            f"measured); got {diag[j]} at entry ({j}, {j})"
        )
    for name, arr in (("precisions", lam), ("values", y)):
        diff = np.abs(arr - arr.T)
        # Rounding-level asymmetry (e.g. from arithmetic on a symmetric matrix) is averaged
        # away, with the tolerance the other matrix solvers use; anything larger is an error.
        scale = max(float(np.max(np.abs(arr))), np.finfo(float).tiny)
        if np.any(diff > SYMMETRY_RTOL * scale):
            bad = tuple(int(i) for i in np.unravel_index(np.argmax(diff), diff.shape))
            raise ValueError(
                f"{name} must be symmetric (max|{name} - {name}.T| <= {SYMMETRY_RTOL:g} * "
                f"max|{name}|); got {arr[bad]} at {bad} but {arr[bad[::-1]]} at {bad[::-1]}"
            )
    y = 0.5 * (y + y.T)
    lam = 0.5 * (lam + lam.T)
    return y, lam


def _check_positive(name: str, value, *, upper: float | None = None) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}") from exc
    if not math.isfinite(v) or v <= 0 or (upper is not None and v >= upper):
        bound = f" and < {upper}" if upper is not None else ""
        raise ValueError(f"{name} must be a finite number > 0{bound}; got {value!r}")
    return v


def _check_int(name: str, value, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _resolve_tol(tol, method: str) -> float:
    if tol is None:
        return 1e-8 if method == "ipm-cholesky" else 1e-10
    return _check_positive("tol", tol, upper=1.0)


def _resolve_max_iter(max_iter, method: str) -> int:
    if max_iter is None:
        return 2000 if method == "ipm-cholesky" else 200
    return _check_int("max_iter", max_iter)


def _canonical_method(method) -> str:
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}; got {method!r}")
    return "dual-newton" if method == "auto" else method


def pattern_components(precisions) -> list[np.ndarray]:
    """Connected components of the measured pattern ``precisions > 0``.

    Parameters
    ----------
    precisions : array_like of shape (p, p)
        Symmetric precisions; entry ``(j, k)`` is measured when it is ``> 0``.

    Returns
    -------
    list of ndarray
        Sorted index arrays, ordered by their smallest index.
    """
    lam = np.asarray(precisions, dtype=float)
    p = lam.shape[0]
    n_comp, labels = connected_components(csr_matrix(lam > 0), directed=False)
    comps = [np.flatnonzero(labels == c) for c in range(n_comp)]
    comps.sort(key=lambda idx: int(idx[0]) if idx.size else p)
    return comps


# --------------------------------------------------------------------------------------
# One component in normalised units
# --------------------------------------------------------------------------------------


@dataclass
class _Block:
    """A connected component, rescaled so that measured variances are about one."""

    index: np.ndarray  # global indices of the component
    rows: np.ndarray  # local entry rows (rows >= cols), diagonal first
    cols: np.ndarray
    y: np.ndarray  # rescaled measured values per entry
    lam: np.ndarray  # rescaled precisions per entry
    c: np.ndarray  # 1 on the diagonal, 2 off it
    scale: np.ndarray  # D: W_original = D W D
    mu_unit: float  # min rescaled precision: mu = mu_rel * mu_unit

    @property
    def n(self) -> int:
        return self.index.size

    @classmethod
    def build(cls, y: np.ndarray, lam: np.ndarray, index: np.ndarray) -> _Block:
        ysub = y[np.ix_(index, index)]
        lsub = lam[np.ix_(index, index)]
        n = index.size
        diag_y = np.diag(ysub)
        top = float(max(np.max(diag_y), np.max(np.abs(ysub[lsub > 0]))))
        if top <= 0:
            top = 1.0
        # The problem is equivariant under W -> D W D, so D only affects conditioning. A
        # noisy variance can be tiny or negative; its noise level (1/sqrt(lambda_jj)) is
        # then the natural scale of that variable.
        noise = 1.0 / np.sqrt(np.diag(lsub))
        scale = np.sqrt(np.maximum(np.maximum(diag_y, noise), 1e-3 * top))
        rows, cols = np.nonzero(np.tril(lsub > 0, k=-1))
        rows = np.concatenate([np.arange(n), rows])
        cols = np.concatenate([np.arange(n), cols])
        d2 = scale[rows] * scale[cols]
        yv = ysub[rows, cols] / d2
        lv = lsub[rows, cols] * d2**2
        c = np.where(rows == cols, 1.0, 2.0)
        return cls(index, rows, cols, yv, lv, c, scale, float(np.min(lv)))

    def dense(self, kappa: np.ndarray) -> np.ndarray:
        K = np.zeros((self.n, self.n))
        K[self.rows, self.cols] = kappa
        K[self.cols, self.rows] = kappa
        return K

    def to_original(self, W: np.ndarray) -> np.ndarray:
        return W * np.outer(self.scale, self.scale)

    def kappa_from_precision(self, K: np.ndarray) -> np.ndarray:
        """Pattern entries of a precision matrix given in original units."""
        Kn = K * np.outer(self.scale, self.scale)
        return Kn[self.rows, self.cols]


def _richardson_weights(mus: Sequence[float]) -> np.ndarray:
    """Weights of the polynomial through ``(mu_i, f_i)`` evaluated at ``mu = 0``."""
    mus = np.asarray(mus, dtype=float)
    w = np.ones(mus.size)
    for i in range(mus.size):
        for j in range(mus.size):
            if j != i:
                w[i] *= mus[j] / (mus[j] - mus[i])
    return w


def _extrapolate(schedule: Sequence[float], stages: list[np.ndarray]) -> tuple[np.ndarray, float]:
    """Quadratic extrapolation to ``mu = 0`` through the last three stages.

    Returns the extrapolated matrix and an estimate of its relative error. When the stages
    show ``O(mu)`` convergence (successive differences shrink by ``1/q``, ``q`` the barrier
    reduction factor) the standard Richardson estimate applies: the extrapolant one stage
    earlier is off by ``1/q^3`` times as much, so their difference times ``q^3 / (1 - q^3)``
    estimates the error. Otherwise (a path that bends late, typically because the limit has
    a tiny eigenvalue) only the raw difference of the two extrapolants is an honest bound.
    """

    def through(end: int) -> np.ndarray:
        w = _richardson_weights(schedule[end - 3 : end])
        W = sum(wi * Wi for wi, Wi in zip(w, stages[end - 3 : end]))
        return 0.5 * (W + W.T)

    last, before = through(len(stages)), through(len(stages) - 1)
    scale = max(float(np.linalg.norm(last)), np.finfo(float).tiny)
    diff = float(np.linalg.norm(last - before)) / scale
    step_new = float(np.linalg.norm(stages[-1] - stages[-2]))
    step_old = float(np.linalg.norm(stages[-2] - stages[-3]))
    ratio = step_old / max(step_new, np.finfo(float).tiny)
    if 0.5 / _MU_FACTOR <= ratio <= 2.0 / _MU_FACTOR:
        q3 = _MU_FACTOR**3
        return last, diff * q3 / (1.0 - q3)
    return last, diff


def _clip_to_psd(W: np.ndarray) -> np.ndarray:
    """Symmetrise and drop the rounding-level negative eigenvalues of an extrapolated limit."""
    W = 0.5 * (W + W.T)
    evals, evecs = np.linalg.eigh(W)
    if evals[0] >= 0:
        return W
    W = (evecs * np.maximum(evals, 0.0)) @ evecs.T
    return 0.5 * (W + W.T)


def _barrier_schedule(block: _Block, mu_rel_min: float = _MU_REL_MIN) -> list[float]:
    """Relative barrier weights, from the largest rescaled precision down to ``mu_rel_min``.

    Starting at ``max lambda'`` makes the first stage well conditioned for every entry. The
    path is followed in steps of 100 down to ``_COARSE_UNTIL`` and then in steps of 10; the
    last values are exact powers of ten so that the extrapolation weights are the same for
    every block.
    """
    spread = float(np.max(block.lam) / block.mu_unit)
    first = math.ceil(math.log10(max(spread, 1.0)) - 1e-9)
    last = math.floor(math.log10(mu_rel_min) + 1e-9)
    fine_from = min(max(last + 3, _COARSE_UNTIL), first)
    coarse = list(range(first, fine_from, -2))
    return [10.0**k for k in coarse + list(range(fine_from, last - 1, -1))]


@dataclass
class _BlockSolution:
    covariance: np.ndarray  # original units
    precision: np.ndarray | None  # original units, exact zeros off the pattern
    singular: bool
    iterations: int
    converged: bool
    extrapolation_error: float = 0.0
    # Barrier path (original-unit precision matrices by log10 of the relative barrier
    # weight) of a block without a positive-definite completion: a warm start next time.
    path: dict[int, np.ndarray] | None = None


# --------------------------------------------------------------------------------------
# Dual Newton
# --------------------------------------------------------------------------------------


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's error-free sum: ``a + b = s + e`` exactly."""
    s = a + b
    bp = s - a
    e = (a - (s - bp)) + (b - bp)
    return s, e


def _ozaki_slices(A: np.ndarray, axis: int) -> list[np.ndarray]:
    """Split ``A`` into slices whose pairwise products are exact (Ozaki et al., 2012).

    Every slice keeps at most ``(53 - log2 n) / 2`` bits below the largest magnitude of its
    row (``axis=1``) or column (``axis=0``), so a slice of one factor times a slice of the
    other is computed by an ordinary matrix product without rounding.
    """
    n = A.shape[0]
    shift = 2.0 ** math.ceil((53 + math.log2(max(n, 2))) / 2)
    slices = []
    rest = A
    for _ in range(3):
        top = np.max(np.abs(rest), axis=axis, keepdims=True)
        top[top == 0] = 1.0
        sigma = shift * 2.0 ** np.ceil(np.log2(top))
        hi = (rest + sigma) - sigma
        slices.append(hi)
        rest = rest - hi
    slices.append(rest)
    return slices


def _inverse_residual(K_hi: np.ndarray, K_lo: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``I - (K_hi + K_lo) W`` accurate to a few ulps of the result, not of ``|K| |W|``."""
    n = K_hi.shape[0]
    # Products of two low slices are below 2^-100 of the result and are dropped.
    A, B = _ozaki_slices(K_hi, 1), _ozaki_slices(W, 0)
    terms = [-(A[i] @ B[j]) for i in range(4) for j in range(4) if i + j <= 3]
    terms.append(-(K_lo @ W))
    terms.sort(key=lambda t: -float(np.max(np.abs(t))))
    total, carry = np.eye(n), np.zeros((n, n))
    for t in terms:
        total, e = _two_sum(total, t)
        carry += e
    return total + carry


class _DualNewton:
    """Damped Newton on ``D_mu`` for one rescaled block.

    ``kappa`` is carried as an unevaluated sum ``hi + lo`` (a ``2 x |S|`` array): without
    a pattern that has a positive-definite completion, ``K`` grows like ``1/mu`` while the
    part of ``K`` that determines ``Sigma_mu`` stays of order one, so a single double would
    lose ``log10(1/mu)`` of its digits. ``Sigma_mu = K^{-1}`` is obtained by iterative
    refinement with an error-free residual, which keeps it accurate to double precision
    at every barrier stage used here.
    """

    def __init__(self, block: _Block, tol: float, max_iter: int):
        self.b = block
        self.tol = tol
        self.max_iter = max_iter
        r, t = block.rows, block.cols
        self._rr = np.ix_(r, r)
        self._tt = np.ix_(t, t)
        self._rt = np.ix_(r, t)
        self._tr = np.ix_(t, r)
        self._cc = 0.5 * np.outer(block.c, block.c)

    def objective(self, kappa: np.ndarray, mu: float) -> tuple[float, np.ndarray | None]:
        b = self.b
        k = kappa[0]
        try:
            chol = sla.cholesky(b.dense(k), lower=True, check_finite=False)
        except sla.LinAlgError:
            return math.inf, None
        d = np.diag(chol)
        if np.any(d <= 0):
            return math.inf, None
        val = float(b.c @ (k * b.y)) - 2.0 * float(np.sum(np.log(d)))
        if mu > 0:
            val += 0.5 * mu * float(np.sum(b.c**2 * k**2 / b.lam))
        return val, chol

    def inverse(self, kappa: np.ndarray, chol: np.ndarray) -> np.ndarray:
        inv, info = sla.lapack.dpotri(chol, lower=1)
        if info != 0:
            raise NumericalError(f"inverting the precision matrix failed (dpotri info={info})")
        W = np.tril(inv) + np.tril(inv, -1).T
        K_hi, K_lo = self.b.dense(kappa[0]), self.b.dense(kappa[1])
        norm_W = float(np.linalg.norm(W))
        if norm_W * float(np.linalg.norm(K_hi)) < 1e4 and not np.any(kappa[1]):
            # Well conditioned: the plain inverse is already accurate to ~1e-12.
            return W
        for _ in range(8):
            update = W @ _inverse_residual(K_hi, K_lo, W)
            W = W + 0.5 * (update + update.T)
            if float(np.linalg.norm(update)) <= 4 * np.finfo(float).eps * norm_W:
                break
        return W

    def solve(
        self, kappa: np.ndarray, mu: float, *, max_iter: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, int, bool]:
        """Minimise ``D_mu`` from a feasible ``kappa`` (``hi, lo`` rows).

        Returns ``(kappa, W, iterations, converged)``. At ``mu = 0`` a return with
        ``converged=False`` means the iterates ran away (no positive-definite completion)
        or the iteration budget was exhausted.
        """
        b = self.b
        max_iter = self.max_iter if max_iter is None else max_iter
        kappa = np.array(kappa, dtype=float, copy=True)
        f, chol = self.objective(kappa, mu)
        if chol is None:
            raise NumericalError("the starting precision matrix is not positive definite")
        pen = mu * b.c**2 / b.lam if mu > 0 else None
        prev_dec = math.inf
        W = self.inverse(kappa, chol)
        for it in range(max_iter):
            grad = b.c * (b.y - W[b.rows, b.cols])
            if pen is not None:
                grad = grad + pen * (kappa[0] + kappa[1])
            H = self._cc * (W[self._rr] * W[self._tt] + W[self._rt] * W[self._tr])
            if pen is not None:
                H[np.diag_indices_from(H)] += pen
            step = _newton_direction(H, grad)
            if step is None:
                return kappa, W, it, False
            dec = float(-grad @ step)
            if not math.isfinite(dec) or dec < 0:
                return kappa, W, it, False
            # Newton decrement squared ~ twice the objective gap; tol is on its root.
            # Quadratic convergence that stops improving has hit the rounding floor.
            if dec <= self.tol**2 or (dec >= 0.25 * prev_dec and prev_dec <= 1e-8):
                return kappa, W, it, True
            prev_dec = dec
            if mu == 0 and float(b.c @ (kappa[0] * b.y)) <= 0:
                # tr(K Y) <= 0 for some K > 0 certifies that D_0 is unbounded below.
                return kappa, W, it, False
            alpha = 1.0
            # D_mu is self-concordant: once the Newton decrement is below 1/4 the full step
            # stays feasible and converges quadratically, so it is taken without comparing
            # objective values (K grows like 1/mu and the values lose all digits that would
            # decide the test).
            quadratic_region = dec < 0.0625
            while True:
                trial = kappa.copy()
                trial[0], err = _two_sum(kappa[0], alpha * step)
                trial[0], trial[1] = _two_sum(trial[0], kappa[1] + err)
                f_new, chol_new = self.objective(trial, mu)
                if chol_new is not None and (quadratic_region or f_new <= f - 0.25 * alpha * dec):
                    break
                quadratic_region = False
                alpha *= 0.5
                if alpha < 1e-14:
                    # No decrease within rounding: the current point is as good as it gets.
                    return kappa, W, it, dec <= 1e-12
            kappa = trial
            f, chol = f_new, chol_new
            W = self.inverse(kappa, chol)
        return kappa, W, max_iter, False


def _newton_direction(H: np.ndarray, grad: np.ndarray) -> np.ndarray | None:
    """Solve ``H step = -grad``; ``H`` is positive definite in exact arithmetic.

    Deep in the barrier path ``H`` spans many orders of magnitude and a Cholesky
    factorisation can fail on rounding; a ridge at the rounding level of its diagonal then
    restores it without changing the step materially.
    """
    scale = np.sqrt(np.diag(H))
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        return None
    Hs = H / np.outer(scale, scale)
    gs = grad / scale
    for ridge in (0.0, 1e-14, 1e-12, 1e-10):
        try:
            factor = sla.cho_factor(
                Hs + ridge * np.eye(Hs.shape[0]), lower=True, check_finite=False
            )
        except sla.LinAlgError:
            continue
        return -sla.cho_solve(factor, gs, check_finite=False) / scale
    return None


def _default_kappa(block: _Block) -> np.ndarray:
    kappa = np.zeros((2, block.y.size))
    kappa[0, : block.n] = 1.0 / np.maximum(block.y[: block.n], 1.0)
    return kappa


def _solve_dual_newton(
    block: _Block,
    kappa0: np.ndarray | None,
    tol: float,
    max_iter: int,
    try_completion: bool,
    warm_path: dict[int, np.ndarray] | None = None,
) -> _BlockSolution:
    solver = _DualNewton(block, tol, max_iter)
    total = 0
    start = _default_kappa(block)
    if kappa0 is not None:
        candidate = np.zeros_like(start)
        candidate[0] = kappa0
        if np.isfinite(solver.objective(candidate, 0.0)[0]):
            start = candidate

    def completion(kappa, W, iterations):
        K = block.dense(kappa[0] + kappa[1])
        inv_scale = 1.0 / block.scale
        return _BlockSolution(
            covariance=block.to_original(W),
            precision=K * np.outer(inv_scale, inv_scale),
            singular=False,
            iterations=iterations,
            converged=True,
        )

    if try_completion:
        kappa, W, it, ok = solver.solve(start, 0.0)
        total += it
        if ok:
            return completion(kappa, W, total)

    schedule = _barrier_schedule(block)
    exponents = [round(math.log10(m)) for m in schedule]

    def warm_kappa(i: int) -> np.ndarray | None:
        if warm_path is None or exponents[i] not in warm_path:
            return None
        guess = np.zeros_like(start)
        guess[0] = block.kappa_from_precision(warm_path[exponents[i]])
        return guess if np.isfinite(solver.objective(guess, 0.0)[0]) else None

    # With the previous path of this component (one measurement ago) the coarse stages,
    # which only lead into the right region, are skipped.
    first = 0
    if warm_path is not None:
        fine = [i for i, e in enumerate(exponents) if e <= _COARSE_UNTIL and e in warm_path]
        if fine and warm_kappa(fine[0]) is not None:
            first = fine[0]

    last = len(schedule) - 1
    kappa = start
    stages: list[np.ndarray] = []
    kappas: list[np.ndarray] = []
    path: dict[int, np.ndarray] = {}
    stages_ok = True
    previous_norm = None
    i = first
    while i <= last:
        mu = schedule[i] * block.mu_unit
        guess = warm_kappa(i) if first > 0 and i == first else None
        if guess is not None:
            kappa = guess
        elif len(kappas) >= 2:
            kappa = _predict_kappa(solver, schedule[i - 2 : i + 1], kappas[-2:])
        kappa, W, it, ok = solver.solve(kappa, mu)
        total += it
        if not ok and first > 0:
            # The warm start led astray: follow the path from the beginning.
            first, i, kappa = 0, 0, start
            stages, kappas, path, previous_norm = [], [], {}, None
            continue
        # An unconverged early stage is still a usable warm start; only the stages that
        # enter the extrapolation decide convergence.
        if i >= last - 2 and not ok:
            stages_ok = False
        stages.append(W)
        kappas.append(kappa)
        if exponents[i] <= _COARSE_UNTIL:
            inv_scale = 1.0 / block.scale
            path[exponents[i]] = block.dense(kappa[0] + kappa[1]) * np.outer(inv_scale, inv_scale)
        norm = mu * float(np.linalg.norm(kappa[0]))
        # mu * K tends to 0 when a positive-definite completion exists and to a nonzero
        # dual certificate otherwise; a clear drop suggests trying Dempster's problem.
        if previous_norm is not None and norm < 0.5 * previous_norm and i < last:
            k0, W0, it0, ok0 = solver.solve(kappa, 0.0, max_iter=min(30, max_iter))
            total += it0
            if ok0:
                return completion(k0, W0, total)
        previous_norm = norm
        i += 1

    W3, err = _extrapolate(schedule[first:], stages)
    return _BlockSolution(
        covariance=block.to_original(_clip_to_psd(W3)),
        precision=None,
        singular=True,
        iterations=total,
        converged=bool(stages_ok and err <= _EXTRAPOLATION_WARN),
        extrapolation_error=err,
        path=path,
    )


def _predict_kappa(solver: _DualNewton, mus, kappas) -> np.ndarray:
    """Warm start for the stage at ``mus[2]`` from ``kappa ~ G / mu + K~`` fitted to two stages."""
    (mu0, mu1, mu2), (k0, k1) = mus, kappas
    x0, x1 = k0[0] + k0[1], k1[0] + k1[1]
    slope = (x1 - x0) / (1.0 / mu1 - 1.0 / mu0)
    guess = np.zeros_like(k1)
    guess[0] = x1 + slope * (1.0 / mu2 - 1.0 / mu1)
    if np.isfinite(solver.objective(guess, 0.0)[0]):
        return guess
    return k1


# --------------------------------------------------------------------------------------
# IPM-Cholesky (the paper's reference solver)
# --------------------------------------------------------------------------------------


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's exact product: ``a * b = p + e`` in floating point."""
    p = a * b
    split = 134217729.0  # 2**27 + 1
    ca = split * a
    a_hi = ca - (ca - a)
    a_lo = a - a_hi
    cb = split * b
    b_hi = cb - (cb - b)
    b_lo = b - b_hi
    e = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return p, e


def _accurate_residuals(L: np.ndarray, block: _Block) -> np.ndarray:
    """``(L L^T)_s - y_s`` on the pattern, correctly rounded up to a few ulps."""
    p, e = _two_product(L[block.rows], L[block.cols])
    terms = np.concatenate([p, e, -block.y[:, None]], axis=1)
    return np.array([math.fsum(row) for row in terms])


def _gram(x: np.ndarray, n: int, tri) -> np.ndarray:
    L = np.zeros((n, n))
    L[tri] = x
    return L @ L.T


def _solve_ipm_cholesky(
    block: _Block,
    L0: np.ndarray | None,
    tol: float,
    max_iter: int,
    extrapolate: bool,
    mu_min: float,
) -> _BlockSolution:
    n = block.n
    tri = np.tril_indices(n)
    on_diag = tri[0] == tri[1]
    diag_pos = np.flatnonzero(on_diag)
    r, t, lam, c = block.rows, block.cols, block.lam, block.c
    lower = 1e-150  # the barrier keeps L_jj away from 0; log(0) would break the line search
    bounds = [(lower, None) if d else (None, None) for d in on_diag]
    x = (np.eye(n) if L0 is None else L0)[tri].astype(float)

    schedule = _barrier_schedule(block, _MU_REL_MIN if extrapolate else mu_min)

    eye = np.eye(n)[tri]

    def relative_to(mu: float, x_ref: np.ndarray):
        """``phi_mu`` as a function of ``M`` with ``L = L_ref M``, minus ``phi_mu(L_ref)``.

        ``M`` starts at the identity. Working relative to the current factor evens out the
        scales of its rows (rows of tiny pivots otherwise move on a much finer scale than
        the rest) and, with the constant removed and residuals formed without
        cancellation, the line search can resolve the tiny decreases of the last stages.
        """
        L_ref = np.zeros((n, n))
        L_ref[tri] = x_ref
        res_ref = _accurate_residuals(L_ref, block)

        def fun(z: np.ndarray):
            E = np.zeros((n, n))
            E[tri] = z - eye
            dL = L_ref @ E
            L = L_ref + dL
            dW = dL @ L_ref.T + L_ref @ dL.T + dL @ dL.T
            dres = dW[r, t]
            res = res_ref + dres
            R = np.zeros((n, n))
            R[r, t] = lam * res / c
            R[t, r] = lam * res / c
            grad = L_ref.T @ (2.0 * R @ L)
            e_diag = z[diag_pos] - 1.0
            grad[np.diag_indices(n)] -= 2.0 * mu / z[diag_pos]
            val = 0.5 * float(np.sum(lam * dres * (2.0 * res_ref + dres)))
            far = np.abs(e_diag) > 0.5
            logs = np.where(far, np.log(z[diag_pos]), np.log1p(np.where(far, 0.0, e_diag)))
            val -= 2.0 * mu * float(np.sum(logs))
            return val, grad[tri]

        def to_x(z: np.ndarray) -> np.ndarray:
            M = np.zeros((n, n))
            M[tri] = z
            return (L_ref @ M)[tri]

        return fun, to_x

    stages: list[np.ndarray] = []
    path: list[np.ndarray] = []
    total = 0
    converged = True
    n_tight = 3 if extrapolate else 1
    # The last stages are ill-conditioned (curvature lambda along the measured entries, mu
    # along the completion); a memory that can hold every measured direction lets
    # L-BFGS-B resolve the mu-scale remainder.
    maxcor = int(min(max(10, block.y.size + 10), 200))
    for i, mu_rel in enumerate(schedule):
        mu = mu_rel * block.mu_unit
        tight = i >= len(schedule) - n_tight
        # Coarse early, fine at the stages that enter the answer.
        gtol = (tol if tight else 1e-3) * mu
        if len(path) >= 2:
            # Predictor: the barrier path is smooth in mu, so step along its last secant.
            ratio = (schedule[i] - schedule[i - 1]) / (schedule[i - 1] - schedule[i - 2])
            guess = path[-1] + ratio * (path[-1] - path[-2])
            if np.all(guess[diag_pos] > 0.1 * path[-1][diag_pos]):
                x = guess
        W_old = _gram(x, n, tri)
        stage_ok = False
        best_grad = math.inf
        stalls = 0
        for _ in range(_IPM_RESTARTS):
            fun, to_x = relative_to(mu, x)
            res = sopt.minimize(
                fun,
                eye,
                jac=True,
                method="L-BFGS-B",
                bounds=bounds,
                options={
                    "maxiter": max_iter,
                    "maxfun": 2 * max_iter,
                    "maxcor": maxcor,
                    "ftol": 0.0,
                    "gtol": gtol,
                },
            )
            total += int(res.nit)
            x = to_x(res.x)
            W_new = _gram(x, n, tri)
            change = float(np.linalg.norm(W_new - W_old) / max(np.linalg.norm(W_new), 1e-300))
            W_old = W_new
            grad = float(np.max(np.abs(res.jac)))
            if res.status == 0 and grad <= gtol:
                stage_ok = True
                break
            # Restarting clears a quasi-Newton memory spoilt by the ill-conditioning; stop
            # when fresh starts no longer reduce the gradient (the rounding floor).
            stalls = stalls + 1 if (grad > 0.5 * best_grad or change <= 1e-14) else 0
            best_grad = min(best_grad, grad)
            if stalls >= 2:
                # The conditioning/rounding floor of this stage: as accurate as it gets.
                stage_ok = True
                break
        if tight and not stage_ok:
            converged = False
        path.append(x.copy())
        stages.append(W_old)

    if extrapolate:
        W, err = _extrapolate(schedule, stages)
    else:
        W = stages[-1]
        err = float("nan")
    W = _clip_to_psd(W)
    evals = np.linalg.eigvalsh(W)
    # Only a limit that is clearly positive definite gets a precision matrix; the threshold
    # sits well above the extrapolation error of a singular limit.
    singular = bool(evals[0] <= 1e-7 * max(evals[-1], np.finfo(float).tiny))
    precision = None
    if not singular:
        precision = np.linalg.inv(block.to_original(W))
        precision = 0.5 * (precision + precision.T)
        pattern = np.zeros((n, n), dtype=bool)
        pattern[r, t] = pattern[t, r] = True
        precision[~pattern] = 0.0
    return _BlockSolution(
        covariance=block.to_original(W),
        precision=precision,
        singular=singular,
        iterations=total,
        converged=bool(converged and not err > _EXTRAPOLATION_WARN),
        extrapolation_error=err,
    )


# --------------------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------------------


def _singleton_solution(y: np.ndarray, j: int) -> _BlockSolution:
    v = max(float(y[j, j]), 0.0)
    cov = np.array([[v]])
    return _BlockSolution(
        covariance=cov,
        precision=np.array([[1.0 / v]]) if v > 0 else None,
        singular=v <= 0,
        iterations=0,
        converged=True,
    )


def _zero_solution(n: int) -> _BlockSolution:
    return _BlockSolution(np.zeros((n, n)), None, True, 0, True)


def _solve_component(
    y: np.ndarray,
    lam: np.ndarray,
    index: np.ndarray,
    method: str,
    *,
    tol: float,
    max_iter: int,
    warm_precision: np.ndarray | None = None,
    warm_covariance: np.ndarray | None = None,
    warm_path: dict[int, np.ndarray] | None = None,
    try_completion: bool = True,
    extrapolate: bool = True,
    mu_min: float = 1e-9,
) -> _BlockSolution:
    if index.size == 1:
        return _singleton_solution(y, int(index[0]))
    block = _Block.build(y, lam, index)
    if not np.any(block.y):
        # Measured zeros everywhere: W = 0 fits exactly and is the only PSD fit with a zero
        # diagonal.
        return _zero_solution(index.size)
    if method == "dual-newton":
        kappa0 = None
        if warm_precision is not None:
            kappa0 = block.kappa_from_precision(warm_precision)
        elif warm_covariance is not None:
            kappa0 = _kappa_from_covariance(block, warm_covariance)
        return _solve_dual_newton(block, kappa0, tol, max_iter, try_completion, warm_path)
    L0 = None
    if warm_covariance is not None:
        Wn = warm_covariance / np.outer(block.scale, block.scale)
        try:
            L0 = np.linalg.cholesky(Wn + 1e-10 * np.eye(index.size) * np.trace(Wn) / index.size)
        except np.linalg.LinAlgError:
            L0 = None
    return _solve_ipm_cholesky(block, L0, tol, max_iter, extrapolate, mu_min)


def _kappa_from_covariance(block: _Block, cov: np.ndarray) -> np.ndarray | None:
    try:
        K = np.linalg.inv(cov)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(K)):
        return None
    return block.kappa_from_precision(K)


def _assemble(
    p: int,
    components: list[np.ndarray],
    solutions: list[_BlockSolution],
    y: np.ndarray,
    lam: np.ndarray,
    method: str,
) -> SolverResult:
    cov = np.zeros((p, p))
    prec: np.ndarray | None = np.zeros((p, p))
    for idx, sol in zip(components, solutions):
        cov[np.ix_(idx, idx)] = sol.covariance
        if sol.precision is None or prec is None:
            prec = None
        else:
            prec[np.ix_(idx, idx)] = sol.precision
    cov = 0.5 * (cov + cov.T)
    if prec is not None:
        prec = 0.5 * (prec + prec.T)
        prec[lam <= 0] = 0.0
    mask = np.tril(lam > 0)
    objective = float(np.sum(lam[mask] * (cov[mask] - y[mask]) ** 2))
    singular = [i for i, s in enumerate(solutions) if s.singular]
    extra = {
        "precision": prec,
        "components": components,
        "method": method,
        "singular_components": singular,
        # nan (no extrapolation: ipm-cholesky with extrapolate=False) only if nothing else.
        "extrapolation_error": max(
            (e for e in (s.extrapolation_error for s in solutions) if not math.isnan(e)),
            default=float("nan") if solutions else 0.0,
        ),
        "component_iterations": [s.iterations for s in solutions],
    }
    return SolverResult(
        estimate=cov,
        iterations=int(sum(s.iterations for s in solutions)),
        converged=all(s.converged for s in solutions),
        objective=objective,
        extra=extra,
    )


def _single_threaded_blas():
    """BLAS on one thread while solving.

    Both methods make thousands of products and factorisations of matrices of order at
    most a few dozen; a multi-threaded BLAS pool competing for busy cores makes each of
    them far slower (measured: a test run 30 s instead of 10 s on a loaded machine) and
    cannot speed up such small ones.
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def _warn_unconverged(result: SolverResult) -> None:
    if not result.converged:
        warnings.warn(
            "maximum-entropy reconstruction did not reach the requested accuracy "
            f"(method={result.extra['method']!r}, estimated relative error of the "
            f"extrapolated limit {result.extra['extrapolation_error']:.2e}); "
            "increase max_iter or check the measurements",
            ConvergenceWarning,
            stacklevel=3,
        )


def max_entropy_completion(
    values,
    precisions,
    *,
    method: str = "auto",
    init=None,
    tol: float | None = None,
    max_iter: int | None = None,
    extrapolate: bool = True,
    mu_min: float = 1e-9,
) -> SolverResult:
    """Maximum-entropy covariance from noisy measurements of some of its entries.

    Solves ``argmax log|W|`` over the minimisers of
    ``sum_{(j,k) in S, j >= k} lambda_jk (W_jk - y_jk)^2`` over positive semidefinite
    ``W``, as the limit of the log-barrier solutions (PACE-GGM reconstruction step).

    Parameters
    ----------
    values : array_like of shape (p, p)
        Symmetric measured values ``y_jk``; entries outside the pattern are ignored but must
        be finite.
    precisions : array_like of shape (p, p)
        Symmetric precisions ``lambda_jk = 1 / tau_jk^2``: ``> 0`` for a measured entry,
        ``0`` for an unmeasured one. The pattern is ``precisions > 0`` and must contain the
        whole diagonal.
    method : {"auto", "dual-newton", "ipm-cholesky"}, default "auto"
        ``"auto"`` is ``"dual-newton"``; ``"ipm-cholesky"`` is the paper's reference
        solver (see the module docstring).
    init : SolverResult or array_like of shape (p, p), optional
        Warm start: a previous result of this function (its precision is reused by
        ``"dual-newton"``, its covariance by ``"ipm-cholesky"``) or a positive-definite
        covariance guess. An unusable warm start is ignored.
    tol : float, optional
        Accuracy target: for ``"dual-newton"`` the square root of the Newton decrement
        (default 1e-10); for ``"ipm-cholesky"`` the projected-gradient tolerance, relative
        to ``mu``, of the barrier stages that enter the answer (default 1e-8).
    max_iter : int, optional
        Iteration cap per Newton solve for ``"dual-newton"`` (default 200) or per L-BFGS-B
        run for ``"ipm-cholesky"`` (default 2000; a barrier stage restarts L-BFGS-B up to
        20 times while it still makes progress).
    extrapolate : bool, default True
        ``"ipm-cholesky"`` only: extrapolate the last three barrier stages to ``mu = 0``
        (stages down to relative ``mu = 1e-10``, as for ``"dual-newton"``). With ``False``
        the paper's plain scheme is used and ``L L^T`` at ``mu_min`` is returned.
    mu_min : float, default 1e-9
        ``"ipm-cholesky"`` with ``extrapolate=False`` only: the last relative barrier weight
        (rounded down to a power of ten).

    Returns
    -------
    SolverResult
        ``estimate`` is the covariance ``Sigma_hat`` (block diagonal over the components).
        ``extra`` holds ``precision`` (``Sigma_hat^{-1}`` with exact zeros off the pattern,
        or ``None`` when ``Sigma_hat`` is singular, i.e. the measurements admit no
        positive-definite completion), ``components`` (index arrays of the connected
        components of the pattern), ``method``, ``singular_components`` (positions in
        ``components`` of the blocks without a positive-definite completion, whose block of
        ``Sigma_hat`` is singular), ``extrapolation_error`` (estimated relative error of an
        extrapolated limit, 0 when none was needed) and ``component_iterations``.
        ``objective`` is the fit ``L(Sigma_hat)``.

    Raises
    ------
    ValueError
        Non-square, non-symmetric or non-finite input, negative precisions, an unmeasured
        diagonal entry, or an invalid option.

    Warns
    -----
    ConvergenceWarning
        When a component did not reach the requested accuracy.

    Notes
    -----
    Privacy: post-processing only; consumes no budget.
    """
    y, lam = _validate(values, precisions)
    method = _canonical_method(method)
    tol = _resolve_tol(tol, method)
    max_iter = _resolve_max_iter(max_iter, method)
    mu_min = _check_positive("mu_min", mu_min, upper=1.0)
    if not isinstance(extrapolate, (bool, np.bool_)):
        raise ValueError(f"extrapolate must be a bool; got {extrapolate!r}")
    p = y.shape[0]
    warm_prec, warm_cov = _read_init(init, p)
    components = pattern_components(lam)
    solutions = []
    with _single_threaded_blas():
        for idx in components:
            sub = np.ix_(idx, idx)
            solutions.append(
                _solve_component(
                    y,
                    lam,
                    idx,
                    method,
                    tol=tol,
                    max_iter=max_iter,
                    warm_precision=None if warm_prec is None else warm_prec[sub],
                    warm_covariance=None if warm_cov is None else warm_cov[sub],
                    extrapolate=bool(extrapolate),
                    mu_min=mu_min,
                )
            )
    result = _assemble(p, components, solutions, y, lam, method)
    _warn_unconverged(result)
    return result


def _read_init(init, p: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    if init is None:
        return None, None
    if isinstance(init, SolverResult):
        cov = np.asarray(init.estimate, dtype=float)
        prec = init.extra.get("precision")
        prec = None if prec is None else np.asarray(prec, dtype=float)
    else:
        cov = _as_square_matrix("init", init)
        prec = None
    if cov.shape != (p, p) or (prec is not None and prec.shape != (p, p)):
        raise ValueError(f"init must describe a {p} x {p} matrix; got shape {cov.shape}")
    if not np.all(np.isfinite(cov)) or (prec is not None and not np.all(np.isfinite(prec))):
        raise ValueError("init must be finite")
    return prec, cov


# --------------------------------------------------------------------------------------
# Incremental interface
# --------------------------------------------------------------------------------------


class MaxEntropyReconstructor:
    """Maximum-entropy reconstruction kept up to date as measurements arrive.

    Holds the measured values and precisions, the connected components of the measured
    pattern and the solution of every component. Changing one entry marks only its
    component (after merging, if the entry joins two components) for re-solving, and the
    re-solve is warm-started from the previous precision matrices. Solving happens lazily,
    when :attr:`covariance`, :attr:`precision` or :meth:`result` is read.

    Parameters
    ----------
    values, precisions : array_like of shape (p, p)
        Initial measurements, as for :func:`max_entropy_completion` (at least the diagonal).
    method : {"auto", "dual-newton", "ipm-cholesky"}, default "auto"
    tol : float, optional
    max_iter : int, optional
        As for :func:`max_entropy_completion`.

    Attributes
    ----------
    n_solves : int
        Number of component solves so far (singletons included).

    Notes
    -----
    Privacy: post-processing only; consumes no budget.
    """

    def __init__(
        self,
        values,
        precisions,
        *,
        method: str = "auto",
        tol: float | None = None,
        max_iter: int | None = None,
    ):
        y, lam = _validate(values, precisions)
        self._method = _canonical_method(method)
        self._tol = _resolve_tol(tol, self._method)
        self._max_iter = _resolve_max_iter(max_iter, self._method)
        self._y = y.copy()
        self._lam = lam.copy()
        self._p = y.shape[0]
        self._label = np.empty(self._p, dtype=int)
        self._members: dict[int, np.ndarray] = {}
        self._solutions: dict[int, _BlockSolution] = {}
        # Warm starts, in original units and over each label's members: the precision of a
        # block with a positive-definite completion, or the barrier path of one without.
        self._warm: dict[int, np.ndarray] = {}
        self._paths: dict[int, dict[int, np.ndarray]] = {}
        self._expect_singular: set[int] = set()
        self._dirty: set[int] = set()
        self._next_label = 0
        for idx in pattern_components(lam):
            self._new_component(idx)
        self._cache: SolverResult | None = None
        self.n_solves = 0

    # -- bookkeeping ---------------------------------------------------------------
    def _new_component(self, idx: np.ndarray) -> int:
        label = self._next_label
        self._next_label += 1
        self._label[idx] = label
        self._members[label] = np.sort(idx)
        self._dirty.add(label)
        return label

    def _check_entry(self, j, k) -> tuple[int, int]:
        for name, v in (("j", j), ("k", k)):
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, np.integer))
                or not (0 <= v < self._p)
            ):
                raise ValueError(f"{name} must be an integer in [0, {self._p}); got {v!r}")
        return int(j), int(k)

    def update(self, j: int, k: int, value: float, precision: float) -> None:
        """Set the measured value and precision of entry ``(j, k)`` (and ``(k, j)``).

        Parameters
        ----------
        j, k : int
            Entry indices.
        value : float
            The (aggregated) measured value ``y_jk``.
        precision : float
            Its precision ``lambda_jk > 0``.
        """
        j, k = self._check_entry(j, k)
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"value must be finite; got {value!r}")
        precision = _check_positive("precision", precision)
        self._y[j, k] = self._y[k, j] = value
        self._lam[j, k] = self._lam[k, j] = precision
        self._cache = None
        a, b = self._label[j], self._label[k]
        if a == b:
            self._dirty.add(int(a))
            return
        warm, path = self._merged_warm(a, b)
        singular = bool({a, b} & self._expect_singular)
        idx = np.concatenate([self._members.pop(a), self._members.pop(b)])
        for lab in (a, b):
            self._solutions.pop(lab, None)
            self._warm.pop(lab, None)
            self._paths.pop(lab, None)
            self._expect_singular.discard(lab)
            self._dirty.discard(lab)
        label = self._new_component(idx)
        if warm is not None:
            self._warm[label] = warm
        if path is not None:
            self._paths[label] = path
        if singular:
            self._expect_singular.add(label)

    def add_measurement(self, j: int, k: int, measurement: float, precision: float) -> None:
        """Combine a new measurement of ``(j, k)`` with the stored one.

        The stored value becomes the precision-weighted mean and the precisions add
        (PACE-GGM Algorithm 1, line 10; Proposition 4.2).
        """
        j, k = self._check_entry(j, k)
        measurement = float(measurement)
        if not math.isfinite(measurement):
            raise ValueError(f"measurement must be finite; got {measurement!r}")
        precision = _check_positive("precision", precision)
        old_lam = self._lam[j, k]
        new_lam = old_lam + precision
        value = (old_lam * self._y[j, k] + precision * measurement) / new_lam
        self.update(j, k, value, new_lam)

    def _part_precision(self, label: int) -> np.ndarray | None:
        """A fixed precision for a part of a merged component, if one is at hand."""
        if label in self._warm:
            return self._warm[label]
        members = self._members[label]
        if members.size == 1:
            j = int(members[0])
            return np.array([[1.0 / max(self._y[j, j], 1.0 / math.sqrt(self._lam[j, j]))]])
        return None

    def _merged_warm(
        self, a: int, b: int
    ) -> tuple[np.ndarray | None, dict[int, np.ndarray] | None]:
        """Warm starts for the union of two components (block diagonal, hence feasible)."""
        idx = np.concatenate([self._members[a], self._members[b]])
        order = np.argsort(idx)
        sizes = (self._members[a].size, self._members[b].size)

        def block_diag(Ka: np.ndarray, Kb: np.ndarray) -> np.ndarray:
            K = np.zeros((idx.size, idx.size))
            K[: sizes[0], : sizes[0]] = Ka
            K[sizes[0] :, sizes[0] :] = Kb
            return K[np.ix_(order, order)]

        fixed = [self._part_precision(lab) for lab in (a, b)]
        paths = [self._paths.get(lab) for lab in (a, b)]
        if all(p is None for p in paths):
            if any(K is None for K in fixed):
                return None, None
            return block_diag(*fixed), None
        keys = set.intersection(*(set(p) for p in paths if p is not None))
        parts = []
        for K, p in zip(fixed, paths):
            if p is None and K is None:
                return None, None
            parts.append(p if p is not None else dict.fromkeys(keys, K))
        return None, {e: block_diag(parts[0][e], parts[1][e]) for e in keys}

    def _solve_dirty(self) -> None:
        if not self._dirty:
            return
        with _single_threaded_blas():
            self._solve_labels(sorted(self._dirty))
        self._dirty.clear()

    def _solve_labels(self, labels: list[int]) -> None:
        for label in labels:
            idx = self._members[label]
            sol = _solve_component(
                self._y,
                self._lam,
                idx,
                self._method,
                tol=self._tol,
                max_iter=self._max_iter,
                warm_precision=self._warm.get(label),
                warm_covariance=(
                    self._solutions[label].covariance
                    if self._method == "ipm-cholesky" and label in self._solutions
                    else None
                ),
                warm_path=self._paths.get(label),
                # A component that had no PD completion a moment ago rarely has one after a
                # single new measurement; go straight to path-following (which still
                # detects a completion if one appears).
                try_completion=label not in self._expect_singular,
            )
            self.n_solves += 1
            self._solutions[label] = sol
            self._warm.pop(label, None)
            self._paths.pop(label, None)
            self._expect_singular.discard(label)
            if sol.precision is not None:
                self._warm[label] = sol.precision
            if sol.path is not None:
                self._paths[label] = sol.path
            if sol.singular and idx.size > 1:
                self._expect_singular.add(label)

    # -- results -------------------------------------------------------------------
    def result(self) -> SolverResult:
        """The current reconstruction as a :class:`SolverResult` (see
        :func:`max_entropy_completion`)."""
        if self._cache is None:
            self._solve_dirty()
            labels = sorted(self._members, key=lambda lab: int(self._members[lab][0]))
            comps = [self._members[lab] for lab in labels]
            sols = [self._solutions[lab] for lab in labels]
            self._cache = _assemble(self._p, comps, sols, self._y, self._lam, self._method)
            _warn_unconverged(self._cache)
        return self._cache

    @property
    def covariance(self) -> np.ndarray:
        """The reconstructed covariance ``Sigma_hat`` (a copy)."""
        return self.result().estimate.copy()

    @property
    def precision(self) -> np.ndarray | None:
        """``Sigma_hat^{-1}`` with exact zeros off the pattern, or ``None`` if singular."""
        prec = self.result().extra["precision"]
        return None if prec is None else prec.copy()

    @property
    def components(self) -> list[np.ndarray]:
        """Connected components of the measured pattern."""
        return [m.copy() for m in sorted(self._members.values(), key=lambda m: int(m[0]))]

    @property
    def values(self) -> np.ndarray:
        """Stored measured values (a copy)."""
        return self._y.copy()

    @property
    def precisions(self) -> np.ndarray:
        """Stored precisions (a copy); 0 marks an unmeasured entry."""
        return self._lam.copy()
