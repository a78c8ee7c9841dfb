"""Maximum-entropy covariance reconstruction from noisy measured entries (PACE-GGM).

Given measurements ``y_jk`` with precisions ``lambda_jk > 0`` of the entries of a symmetric
pattern ``S`` that contains the whole diagonal, the reconstruction is

    Sigma_hat = argmax { log|W| : W in argmin_{W >= 0} L(W) },
    L(W) = sum_{(j,k) in S, j >= k} lambda_jk (W_jk - y_jk)^2,

defined, as in the PACE-GGM paper (Section 4.4), as the limit ``mu -> 0`` of the barrier
solutions ``Sigma_mu = argmin_W L(W)/2 - mu log|W|``.

Structure used here
-------------------
* **Components.** ``L`` only couples entries inside a connected component of the measured
  pattern and Fischer's inequality makes the maximiser block diagonal, so every component is
  solved on its own (a singleton ``{j}`` gives ``max(y_jj, 0)``).
* **Dual of the barrier problem.** Stationarity of the barrier problem gives
  ``Sigma_mu^{-1} = K`` with ``K`` supported on the pattern. Eliminating ``W`` leads to a
  smooth, strictly convex problem in the ``|S|`` free entries ``kappa`` of ``K``::

      D_mu(kappa) = tr(K Y) - log det K + (mu/2) sum_s c_s^2 kappa_s^2 / lambda_s,

  ``c_s = 1`` on the diagonal and ``2`` off it, ``Y`` the matrix of measured values (zero
  off the pattern). Its minimiser gives ``Sigma_mu = K^{-1}``. At ``mu = 0`` this is exactly
  Dempster's covariance-selection dual, which is bounded below if and only if the measured
  values admit a positive-definite completion; then the limit ``mu -> 0`` is Dempster's
  maximum-entropy completion of the measured values themselves (they are fitted exactly) and
  its inverse is exactly zero off the pattern.
* **No positive-definite completion** (typical when noisy off-diagonal measurements of
  strongly correlated variables exceed what the noisy diagonal allows). Then every minimiser
  of ``L`` is singular, ``D_0`` is unbounded and ``Sigma_mu`` converges to a singular
  limit. The limit is obtained by following the barrier path with Newton's method on
  ``D_mu`` down to relative ``mu = 1e-10`` and extrapolating to ``mu = 0`` (Richardson,
  quadratic in ``mu`` through the stages 1e-8, 1e-9, 1e-10). Such small ``mu`` are needed:
  when the limit has a small but nonzero eigenvalue the path bends late, and extrapolating
  from ``mu`` around 1e-6 can be off by 1e-5 (measured on PACE-like problems). Where even
  1e-10 is too early (an extrapolation error estimate above 1e-8; about 1 PACE
  reconstruction in 35 at rho = 10 on d = 100, where the estimate reached 3e-3) the path
  is followed further, in half decades, down to at most 1e-13, until the estimate is
  below 1e-8. Along the
  path ``K`` grows like ``1/mu`` while the part that determines ``Sigma_mu`` stays of
  order one, so ``kappa`` is carried in double-double form and ``K^{-1}`` is refined with
  an error-free residual (Ozaki splitting); a plain double inverse would lose
  ``log10(1/mu)`` digits. The refinement is only paid where it matters: Newton steps use
  the plain inverse (its error only slows them down) until the decrement computed with it
  falls below 1e-6 or stalls; a refined inverse is accepted once its residual certifies
  double accuracy (``||I - K W|| <= 1e-8`` before the last Newton-Schulz step), and after a
  small step it starts from the previous refined inverse with a second-order Neumann
  correction (usually one error-free residual instead of two). Every stage that enters the
  answer is solved to the same certified point whatever the starting point: it ends with
  a full Newton step from a decrement ``lambda^2 <= tol`` computed with a fresh Hessian and
  the refined inverse (self-concordance then bounds the new decrement by ``tol``), or at
  the rounding floor; a stage whose damped Newton iteration stalls is approached through
  intermediate barrier weights rather than entering the extrapolation unconverged (this
  was the cause of reconstructions with entries of 1e6 and more). Stages above the four
  that enter the extrapolation (the three nodes and the fourth-last, which enters only
  the error estimate) only lead the way: they use the plain inverse and end with the full
  Newton step from the first decrement ``lambda^2`` below 1/4 (``lambda <= 1/2``, where
  that step is feasible); the fourth-last, with Richardson weight 1/891 in the estimate,
  uses the plain inverse and ends with the full step from ``lambda^2 <= 1e-6``. A stage
  may also end with a full step taken with a slightly stale Hessian when self-concordance
  certifies that it lands at ``lambda <= tol`` (``_stale_step_certified``).
  Each stage starts from a prediction: the tangent of the path (from the last stage's
  Hessian factorisation) and the secant through the last two stages are both tried and
  the one with the lowest ``D_mu`` is taken. The Hessian (``|S| x |S|``, built only in the
  triangle the factorisation reads) and the splitting and summation of the error-free
  residual are compiled (numba). Checked against 34-digit
  (mpmath) path-following at
  ``mu = 1e-22`` on small PACE-like problems, including limits of rank 3 of 5, 4 of 7 and
  limits with an eigenvalue of 2.5e-4: relative (Frobenius) errors 1e-16 to 2e-10. The
  Richardson error estimate is reported and a ConvergenceWarning is issued above 1e-6.
  In the incremental reconstructor, a component whose warm-started solve (from the last
  round's path) misses that accuracy is solved again from a cold start, and the solution
  with the lower error estimate is kept.

Why this design: a PACE-GGM run changes one entry per round and the measured pattern stays
sparse, so the natural unknowns are the ``|S|`` pattern entries of the precision matrix,
not the ``p(p+1)/2`` entries of a Cholesky factor. Newton's method with exact second
derivatives reaches full accuracy in a few steps where a first-order method on the factor
needs thousands of iterations to resolve the entries off the pattern (they are fixed only
by the ``mu``-weighted log-determinant, so that problem's conditioning grows like
``lambda / mu``). Whether a positive-definite completion exists is decided by whether
Newton's method on ``D_0`` converges (an iterate ``K > 0`` with ``tr(K Y) <= 0`` certifies
that none exists); when one exists the answer is exact rather than extrapolated.

Methods
-------
``"dual-newton"`` (the default, ``"auto"``)
    Per component: damped Newton on Dempster's dual ``D_0`` from a warm start; if that
    problem turns out unbounded, barrier path-following on ``D_mu`` with extrapolation.
    Each Newton step costs ``O(n_c^3 + |S_c|^3)``; a stage converges in a handful of steps.
    Warm starts: a previous precision matrix restricted to a larger pattern stays feasible,
    and :class:`MaxEntropyReconstructor` keeps the barrier path of a component without a
    completion (every stage), restarts it at relative ``mu = 1e-7`` from the previous path
    (the first stage the extrapolation's error estimate uses) and re-solves only the
    component that a new measurement touched. The warm start is first improved by a few
    exact minimisations along single entries and far from the minimiser longer steps are
    tried along the Newton direction; a warm-started stage that needs more than 20 Newton
    steps, starts at a decrement above 1e3 or is still above 10 after 4 steps (the new
    measurement turned the path) restarts from the previous path at ``mu = 1e-3``, and
    then from the start. The
    path steps by factors of 10 (larger steps cost more damped Newton steps than they
    save). Close to a stage's minimiser a Hessian factorisation is reused while the
    decrement contracts 100-fold per step (such steps end the iteration only through the
    certified stale finish).
    :meth:`MaxEntropyReconstructor.pop_changed` tells PACE-GGM which blocks changed, so its
    selection scores are updated on those blocks only.
``"ipm-cholesky"``
    The paper's reference solver (Algorithm 4): ``Sigma = L L^T``, L-BFGS-B on
    ``sum lambda ((L L^T)_jk - y_jk)^2 / 2 - 2 mu sum log L_jj`` with ``L_jj`` bounded
    below by a tiny positive number, for a geometrically decreasing ``mu``, per component,
    warm-started from stage to stage with a secant predictor. As in the paper the answer is
    read off at the end of the ``mu`` sequence; by default it is extrapolated to ``mu = 0``
    from the same three stages as the default method, so both target the same limit. Each
    L-BFGS-B run works relative to the factor it starts from (``L = L_start M``, ``M``
    lower triangular from the identity: a fixed linear change of variables), the objective
    is evaluated relative to its starting value with compensated residuals, the memory
    holds every measured direction, and a stage restarts L-BFGS-B until the gradient
    tolerance is met or restarts stop helping. Without these the last stages (conditioning
    ``lambda / mu``, differences far below ``eps * |objective|``) stall at errors of 1e-6
    and more. It remains slow: seconds to tens of seconds per component.

Units: each component is rescaled by ``D = diag(d_j)``, ``d_j^2 = max(y_jj, 1/sqrt(lambda_jj),
1e-3 * max |y|)``, before solving; the problem is equivariant under ``W -> D W D`` (with
``lambda_jk -> lambda_jk d_j^2 d_k^2``), so this only affects conditioning. Barrier values
are relative, ``mu = mu_rel * min_s lambda'_s`` in the rescaled problem (so ``mu_rel``
bounds the relative shift ``mu / lambda'_s`` of every fitted entry); the path runs from
``mu_rel = max_s lambda'_s / min_s lambda'_s`` down to ``1e-10`` (to at most ``1e-13``
for a path that bends late, see above).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.optimize as sopt

from dpggm.exceptions import ConvergenceWarning, NumericalError
from dpggm.solvers._maxent_kernels import (
    ozaki_split,
    residual_sum,
    scaled_hessian_upper,
    symmetrize_from_lower,
)
from dpggm.solvers._result import SolverResult
from dpggm.solvers._validation import SYMMETRY_RTOL
from dpggm.solvers.psd import project_psd
from dpggm.solvers.toolkit import components_of, single_threaded_blas

__all__ = [
    "RECONSTRUCTION_METHODS",
    "MaxEntropyReconstructor",
    "max_entropy_completion",
    "pattern_components",
]

#: The methods :class:`MaxEntropyReconstructor` offers.
RECONSTRUCTION_METHODS = ("auto", "dual-newton", "ipm-cholesky")

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
# A path whose extrapolation error estimate at mu_rel = 1e-10 is above _DEEPEN_ABOVE is
# followed further down, stage by stage to at most 10^_DEEPEST, until the estimate is
# below it. On PACE runs about 1 reconstruction in 35 needs this (a limit with a tiny
# eigenvalue bends the path late): one such estimate of 2e-3 at 1e-10 (true error 1.2e-4
# against the path followed to 1e-14) fell to 7e-8 at 1e-12 (true error 8e-10). Below
# 1e-13 the products in the refined inverse approach overflow.
_DEEPEN_ABOVE = 1e-8
_DEEPEST = -13
# Stages solved with the refined inverse: the three extrapolation nodes. The fourth-last
# stage only enters the error estimate, with Richardson weight 1/891, so its plain
# inverse (relative error about eps cond(K), 1e-9 at mu_rel = 1e-7) moves the estimate by
# about 1e-12; it saved a sixth of the error-free residuals on PACE runs.
_REFINED_STAGES = 3
# ... and it ends with the full Newton step from the first decrement below this (lambda
# after it about 1e-6, moving the error estimate by about 1e-9).
_ESTIMATE_STAGE_TOL = 1e-6
# Finish a stage with a step from a slightly stale Hessian when that step is certified.
_STALE_FINISH = True
# Failed steps (each halves the step) allowed while following a path below 1e-10.
_DEEPEN_RETRIES = 4
_IPM_RESTARTS = 20
# Newton steps of the dual use the plain double inverse of K until the Newton decrement
# computed with it falls below this; from there on the inverse is refined (see
# _DualNewton.solve).
_REFINE_BELOW = 1e-6
# Dual Newton's barrier path steps by factors of 10 throughout (factors of 100 above
# 1e-6 cost more damped Newton steps per stage than the extra stages cost).
_DUAL_COARSE_UNTIL = 99
# The warm-started path starts at the first stored stage at or below this exponent (the
# fourth-last, the first one the extrapolation's error estimate uses) ...
_WARM_FROM = -7
# ... with at most this many Newton steps; if that fails it restarts from the stored
# stage at this exponent (same cap), and only then from the beginning.
_WARM_STAGE_MAX_ITER = 20
_WARM_RETRY = -3
# Stages stored as warm starts for the next solve: every exponent at or below this.
_PATH_FROM = 99
# Longer steps far from the minimiser (a new measurement that moves K along a nearly
# linear direction of D_mu).
_LONG_STEPS = True
# Exact single-entry minimisations that improve a warm start from the previous round.
_COORDINATE_STEPS = 4
# Simplified Newton: a Hessian factorisation is reused once the decrement is below
# _CHORD_BELOW while each step contracts it by _CHORD_CONTRACTION or better; such steps
# never end an iteration (see _DualNewton.solve).
_CHORD = True
_CHORD_BELOW = 1e-4
_CHORD_CONTRACTION = 0.01
# Intermediate barrier weights tried before a stalled stage is given up.
_MAX_SPLITS = 4
# Finish a converging stage with the last full Newton step instead of another Hessian.
_FINISH = True
# Refined inverses after a step start from the previous one (see _DualNewton.inverse).
_NEUMANN = True
# A warm-started stage whose first Newton decrement (squared) exceeds this is abandoned at
# once: measured on PACE runs, such starts (the new measurement turned the path) converged
# within the warm step cap in 3 of 107 cases, while starts below 10 converged in 93%.
_WARM_GIVE_UP = 1e3
# ... and so is one still above _WARM_CHECK_BELOW after _WARM_CHECK_AT Newton steps (on the
# same runs: 5 of 163 warm starts that would have converged are given up, and 784 of
# the 1100 steps spent on warm starts that failed are saved).
_WARM_CHECK_AT = 4
_WARM_CHECK_BELOW = 10.0
# Leading stages end with the full Newton step from the first decrement lambda^2 below
# this (lambda <= 1/2, where the full step is feasible; measured on PACE runs, tighter
# values cost more factorisations and looser ones more damped steps at the next stage).
_LEAD_TOL = 0.25
# Switch to the refined inverse right after a full step that will land below _REFINE_BELOW.
_EARLY_REFINE = True
# Predict the next stage from the tangent of the barrier path (else start from the last).
_TANGENT = True

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
    if method not in RECONSTRUCTION_METHODS:
        raise ValueError(f"method must be one of {RECONSTRUCTION_METHODS}; got {method!r}")
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
    return components_of(np.asarray(precisions, dtype=float) > 0)


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

    Returns the extrapolated matrix and an estimate of its relative error: relative to the
    limit's norm, or to one when the limit is smaller. The stages are in the block's
    rescaled units, where every diagonal measurement's noise standard deviation is at most
    one, so a limit far below one (exactly zero when all measured variances are negative
    and the fit is the zero matrix) is judged against the noise level rather than against
    its own vanishing size (which made a limit of zero report relative errors of 0.2). When the stages
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
    scale = max(float(np.linalg.norm(last)), 1.0)
    diff = float(np.linalg.norm(last - before)) / scale
    step_new = float(np.linalg.norm(stages[-1] - stages[-2]))
    step_old = float(np.linalg.norm(stages[-2] - stages[-3]))
    ratio = step_old / max(step_new, np.finfo(float).tiny)
    if 0.5 / _MU_FACTOR <= ratio <= 2.0 / _MU_FACTOR:
        q3 = _MU_FACTOR**3
        return last, diff * q3 / (1.0 - q3)
    return last, diff


def _clip_to_psd(W: np.ndarray) -> np.ndarray:
    """Symmetrise and drop the rounding-level negative eigenvalues of an extrapolated limit
    (left unchanged when there are none)."""
    W = 0.5 * (W + W.T)
    if np.linalg.eigvalsh(W)[0] >= 0:
        return W
    return project_psd(W).estimate


def _barrier_schedule(
    block: _Block, mu_rel_min: float = _MU_REL_MIN, coarse_until: int = _COARSE_UNTIL
) -> list[float]:
    """Relative barrier weights, from the largest rescaled precision down to ``mu_rel_min``.

    Starting at ``max lambda'`` makes the first stage well conditioned for every entry. The
    path is followed in steps of 100 down to ``_COARSE_UNTIL`` and then in steps of 10; the
    last values are exact powers of ten so that the extrapolation weights are the same for
    every block.
    """
    spread = float(np.max(block.lam) / block.mu_unit)
    first = math.ceil(math.log10(max(spread, 1.0)) - 1e-9)
    last = math.floor(math.log10(mu_rel_min) + 1e-9)
    fine_from = min(max(last + 3, coarse_until), first)
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


def _ozaki_shift(n: int) -> float:
    return 2.0 ** math.ceil((53 + math.log2(max(n, 2))) / 2)


def _ozaki_slices(A: np.ndarray, axis: int) -> np.ndarray:
    """Split ``A`` into 4 slices whose pairwise products are exact (Ozaki et al., 2012).

    Every slice keeps at most ``(53 - log2 n) / 2`` bits below the largest magnitude of its
    row (``axis=1``) or column (``axis=0``), so a slice of one factor times a slice of the
    other is computed by an ordinary matrix product without rounding.
    """
    A = np.ascontiguousarray(A, dtype=float)
    out = np.empty((4,) + A.shape)
    ozaki_split(A, axis == 1, _ozaki_shift(A.shape[0]), out)
    return out


# Slice pairs of the residual's products; products of two low slices are below 2^-100 of
# the result and are dropped.
_SLICE_PAIRS = [(i, j) for i in range(4) for j in range(4) if i + j <= 3]


def _inverse_residual(K_hi: np.ndarray, K_lo: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``I - (K_hi + K_lo) W`` accurate relative to itself (about 1e-12 of it against exact
    rational arithmetic), not merely to ``eps |K| |W|`` as a plain product."""
    n = K_hi.shape[0]
    A, B = _ozaki_slices(K_hi, 1), _ozaki_slices(W, 0)
    products = np.empty((len(_SLICE_PAIRS) + 1, n, n))
    for k, (i, j) in enumerate(_SLICE_PAIRS):
        np.matmul(A[i], B[j], out=products[k])
    np.matmul(K_lo, W, out=products[-1])
    out = np.empty((n, n))
    residual_sum(products, out)
    return out


def _newton_schulz(
    K_hi: np.ndarray, K_lo: np.ndarray, W: np.ndarray, norm_W: float
) -> tuple[np.ndarray, bool]:
    """Refine ``W ~ (K_hi + K_lo)^{-1}`` with error-free residuals; whether it is now
    accurate to double precision."""
    for _ in range(8):
        R = _inverse_residual(K_hi, K_lo, W)
        norm_R = float(np.linalg.norm(R))
        if not norm_R < 1.0:
            # Newton-Schulz only contracts from ||R|| < 1: the start is too far off (K
            # too badly conditioned for it), and W is no refined inverse.
            return W, False
        update = W @ R
        W = W + 0.5 * (update + update.T)
        # The step is a Newton-Schulz step: the new residual is about R^2 (up to the
        # rounding of the residual itself), so ||R|| <= 1e-8 certifies that W is now
        # accurate to double precision without computing another residual.
        if norm_R <= 1e-8 or float(np.linalg.norm(update)) <= 4 * np.finfo(float).eps * norm_W:
            return W, True
    return W, False


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
        self._zeros = np.zeros(block.y.size)
        self._buffer: np.ndarray | None = None
        self._scale: np.ndarray | None = None
        self.last_factor: tuple[np.ndarray, np.ndarray] | None = None
        self.last_ridge = 0.0

    def objective(self, kappa: np.ndarray, mu: float) -> tuple[float, np.ndarray | None]:
        b = self.b
        k = kappa[0]
        # Only the lower triangle (in Fortran order) is read: K^T holds it without a copy.
        K = np.zeros((b.n, b.n))
        K[b.cols, b.rows] = k
        chol, info = sla.lapack.dpotrf(K.T, lower=1, clean=0, overwrite_a=1)
        if info != 0 or not np.all(np.isfinite(k)):
            return math.inf, None
        d = np.diag(chol)
        if np.any(d <= 0):
            return math.inf, None
        val = float(b.c @ (k * b.y)) - 2.0 * float(np.sum(np.log(d)))
        if mu > 0:
            val += 0.5 * mu * float(np.sum(b.c**2 * k**2 / b.lam))
        return val, chol

    def inverse(
        self,
        kappa: np.ndarray,
        chol: np.ndarray,
        *,
        refine: bool = True,
        start: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> tuple[np.ndarray, bool]:
        """``K^{-1}`` and whether it is accurate to double precision.

        ``refine=False`` returns the plain double inverse (error about ``eps cond(K)``),
        which is all the Newton steps far from the minimiser need: there the gradient is
        large against that error and the Hessian only sets the convergence rate.

        ``start=(W0, dK)``: ``W0`` an accurate inverse of ``K - dK`` (the point before a
        small step ``dK``). The refinement then starts from ``W0 - W0 dK W0 + (W0 dK)^2 W0``,
        whose residual is ``(dK W0)^3``, instead of the plain inverse (error ``eps cond(K)``):
        usually one refinement step instead of two. The certificate is the same.
        """
        K_hi = self.b.dense(kappa[0])
        K_lo = None
        W = None
        if start is not None and refine:
            W0, dK = start
            A = W0 @ dK
            # Only a small step gives a better start than the plain inverse.
            if float(np.linalg.norm(A)) <= 1e-2:
                AW = A @ W0
                W = W0 - AW + A @ AW
                W = 0.5 * (W + W.T)
                norm_W = float(np.linalg.norm(W))
                if norm_W * float(np.linalg.norm(K_hi)) < 1e4 and not np.any(kappa[1]):
                    W = None  # well conditioned: the plain inverse is accurate, use it
                else:
                    K_lo = self.b.dense(kappa[1])
                    W, ok = _newton_schulz(K_hi, K_lo, W, norm_W)
                    if ok:
                        return W, True
                    W = None  # the start was too far off: refine the plain inverse
        if W is None:
            inv, info = sla.lapack.dpotri(chol, lower=1)
            if info != 0:
                raise NumericalError(
                    f"inverting the precision matrix failed (dpotri info={info})"
                )
            W = symmetrize_from_lower(inv)
            norm_W = float(np.linalg.norm(W))
            if norm_W * float(np.linalg.norm(K_hi)) < 1e4 and not np.any(kappa[1]):
                # Well conditioned: the plain inverse is already accurate to ~1e-12.
                return W, True
            if not refine:
                return W, False
        if K_lo is None:
            K_lo = self.b.dense(kappa[1])
        return _newton_schulz(K_hi, K_lo, W, norm_W)

    def coordinate_steps(self, kappa: np.ndarray, mu: float, steps: int) -> np.ndarray:
        """Improve a warm start by exact minimisation along single pattern entries.

        A warm start from the previous round is off mostly in the entry whose measurement
        changed (a new entry starts at 0 where the solution may need a value of order
        ``1/mu``); damped Newton steps cover such a distance slowly. Each step here picks
        the entry with the largest decrease predicted by its own curvature and minimises
        ``D_mu`` exactly along it (``det(K + t E_s)`` is a quadratic in ``t``), updating
        ``K^{-1}`` by a rank-two formula. Plain double precision: this only builds a start.
        """
        b = self.b
        f, chol = self.objective(kappa, mu)
        if chol is None:
            return kappa
        W, _ = self.inverse(kappa, chol, refine=False)
        x = kappa[0] + kappa[1]
        pen = mu * b.c**2 / b.lam if mu > 0 else np.zeros_like(x)
        r, t = b.rows, b.cols
        for _ in range(steps):
            Wrt = W[r, t]
            grad = b.c * (b.y - Wrt) + pen * x
            curv = 0.5 * b.c**2 * (W[r, r] * W[t, t] + Wrt**2) + pen
            gain = grad**2 / curv
            s = int(np.argmax(gain))
            if not gain[s] > 1e-6:
                break
            j, k = int(r[s]), int(t[s])
            step = _coordinate_minimiser(W, j, k, b.c[s] * b.y[s], pen[s], x[s])
            if step is None or step == 0.0:
                break
            if j == k:
                col = W[:, j]
                W = W - (step / (1.0 + step * W[j, j])) * np.outer(col, col)
            else:
                WU = W[:, [j, k]]
                M = np.array([[W[j, j], W[j, k] + 1.0 / step], [W[j, k] + 1.0 / step, W[k, k]]])
                try:
                    W = W - WU @ np.linalg.solve(M, WU.T)
                except np.linalg.LinAlgError:
                    # The line minimum sits on the boundary of the cone to rounding
                    # (K + t E singular), where the rank-two update of K^{-1} does not
                    # exist: the start stays where the previous steps left it.
                    break
            W = 0.5 * (W + W.T)
            x[s] += step
        out = np.zeros_like(kappa)
        out[0] = x
        if not np.isfinite(self.objective(out, mu)[0]):
            return kappa
        return out

    def factor_hessian(
        self, W: np.ndarray, pen: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Cholesky factor of the Hessian of ``D_mu`` (``pen`` its barrier diagonal) scaled
        to a unit diagonal, and the scale; ``None`` when it is not positive definite.

        Deep in the barrier path ``H`` spans many orders of magnitude and a Cholesky
        factorisation can fail on rounding; a ridge at the rounding level of its diagonal
        then restores it without changing the step materially.
        """
        b = self.b
        m = b.rows.size
        if self._buffer is None:
            self._buffer = np.empty((m, m))
            self._scale = np.empty(m)
        pen = self._zeros if pen is None else pen
        W = np.ascontiguousarray(W)
        for ridge in (0.0, 1e-14, 1e-12, 1e-10):
            self.last_ridge = ridge
            # A failed dpotrf has overwritten the buffer: rebuild it with the ridge.
            if not scaled_hessian_upper(W, b.rows, b.cols, b.c, pen, ridge, self._buffer, self._scale):
                return None
            chol, info = sla.lapack.dpotrf(self._buffer.T, lower=1, clean=0, overwrite_a=1)
            if info == 0:
                # The buffer now holds the factor: the next factorisation needs a new one.
                self._buffer = None
                return chol, self._scale.copy()
        return None

    # One piece (over 120 lines): the damped Newton iteration, its chord steps on a reused
    # factorisation and the refinement of the inverse share the iterate's state and its
    # certificates; split, every part would have to pass them around.
    def solve(
        self,
        kappa: np.ndarray,
        mu: float,
        *,
        max_iter: int | None = None,
        refine: bool = True,
        give_up_above: float | None = None,
        lead_tol: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray, int, bool]:
        """Minimise ``D_mu`` from a feasible ``kappa`` (``hi, lo`` rows).

        Returns ``(kappa, W, iterations, converged)``. At ``mu = 0`` a return with
        ``converged=False`` means the iterates ran away (no positive-definite completion)
        or the iteration budget was exhausted. ``give_up_above``: return unconverged at
        once when the first Newton decrement exceeds it, or when the decrement after
        ``_WARM_CHECK_AT`` steps still exceeds ``_WARM_CHECK_BELOW`` (a start too far away).
        ``lead_tol``: a stage that only leads the way to the next one; it ends with the
        full Newton step from the first decrement below ``lead_tol`` (inside the
        quadratic region, so the point returned has a decrement of about its square).
        The last Hessian factorisation used is left in ``self.last_factor`` (the
        tangent of the barrier path, see :func:`_predict_kappa`).

        The steps far from the minimiser use the plain double inverse; from the point where
        the Newton decrement computed with it falls below ``_REFINE_BELOW`` (or stops
        decreasing, its rounding floor) the inverse is refined to double precision, and
        only such accurate steps may end the iteration, so the answer is the same as with
        refinement on every step. ``refine=False`` never refines: for barrier stages that
        only lead the way (warm starts), where an error of ``eps cond(K)`` is harmless.
        """
        b = self.b
        max_iter = self.max_iter if max_iter is None else max_iter
        kappa = np.array(kappa, dtype=float, copy=True)
        f, chol = self.objective(kappa, mu)
        if chol is None:
            raise NumericalError("the starting precision matrix is not positive definite")
        pen = mu * b.c**2 / b.lam if mu > 0 else None
        self.last_factor = None
        prev_dec = math.inf
        precise = False
        W, accurate = self.inverse(kappa, chol, refine=precise)
        factor, last_dec = None, math.inf
        # Whether the factorisation was built from the refined inverse, and a bound on the
        # distance travelled since, in the local norm of the point where it was built.
        factor_accurate, factor_dist = False, math.inf
        it = 0
        while it < max_iter:
            grad = b.c * (b.y - W[b.rows, b.cols])
            if pen is not None:
                grad = grad + pen * (kappa[0] + kappa[1])
            step = None
            chord = stale_finish = False
            if _CHORD and factor is not None and last_dec <= _CHORD_BELOW:
                # Close to the minimiser the Hessian hardly changes from one step to the
                # next: the last factorisation is reused while the decrement keeps
                # contracting fast (the minimiser is the same, only the rate differs);
                # otherwise it is refreshed. Tests of a stall use fresh Hessians only.
                step = _factored_direction(factor, grad)
                dec = float(-grad @ step)
                stale_finish = (
                    _FINISH and _STALE_FINISH and accurate and factor_accurate
                    and _stale_step_certified(dec, factor_dist, self.tol)
                )
                # A stale factorisation's decrement may not end the iteration: below 1e-12
                # (where the convergence tests start) the direction is recomputed, unless
                # the step it gives is certified (see _stale_step_certified).
                chord = math.isfinite(dec) and 1e-12 < dec <= _CHORD_CONTRACTION * last_dec
                if not chord and not stale_finish:
                    step = None
            if step is None:
                factor = self.factor_hessian(W, pen)
                self.last_factor = factor
                # The certificate of a stale step needs the exact Hessian: no ridge.
                factor_accurate, factor_dist = accurate and self.last_ridge == 0.0, 0.0
                step = None if factor is None else _factored_direction(factor, grad)
                dec = math.nan if step is None else float(-grad @ step)
                if give_up_above is not None and (
                    (it == 0 and not dec <= give_up_above)
                    or (it == _WARM_CHECK_AT and not dec <= _WARM_CHECK_BELOW)
                ):
                    return kappa, W, it, False
            last_dec = dec
            if refine and not accurate and (
                not math.isfinite(dec)
                or dec <= _REFINE_BELOW
                or (dec >= 0.25 * prev_dec and prev_dec <= _REFINE_BELOW**0.5)
            ):
                # Close enough that the plain inverse's error matters (or it failed):
                # every further step, and the convergence test, uses the refined inverse.
                precise = True
                W, accurate = self.inverse(kappa, chol, refine=True)
                if not accurate:
                    return kappa, W, it, False  # no accurate inverse at this point
                prev_dec = math.inf
                continue
            if step is None:
                return kappa, W, it, False
            if not math.isfinite(dec) or dec < 0:
                return kappa, W, it, False
            if lead_tol is not None and not chord and dec <= lead_tol:
                trial = kappa.copy()
                trial[0], err = _two_sum(kappa[0], step)
                trial[0], trial[1] = _two_sum(trial[0], kappa[1] + err)
                chol_new = self.objective(trial, mu)[1]
                if chol_new is not None:
                    W_new, _ = self.inverse(trial, chol_new, refine=False)
                    return trial, W_new, it + 1, True
            if _FINISH and accurate and (stale_finish or (not chord and dec <= self.tol)):
                # D_mu is self-concordant: a full Newton step from decrement lambda lands at
                # decrement <= (lambda / (1 - lambda))^2, so from lambda^2 <= tol the new
                # point meets lambda <= tol (up to rounding) without another Hessian; a
                # step with a slightly stale Hessian is certified by _stale_step_certified.
                trial = kappa.copy()
                trial[0], err = _two_sum(kappa[0], step)
                trial[0], trial[1] = _two_sum(trial[0], kappa[1] + err)
                chol_new = self.objective(trial, mu)[1]
                if chol_new is not None:
                    start = None
                    if _NEUMANN:
                        start = (W, b.dense((trial[0] - kappa[0]) + (trial[1] - kappa[1])))
                    W_new, accurate_new = self.inverse(trial, chol_new, refine=True, start=start)
                    if accurate_new:
                        return trial, W_new, it + 1, True
                if stale_finish:
                    # Not finished after all: the stale decrement must not end the
                    # iteration, so the next direction is computed afresh.
                    last_dec = math.inf
                    continue
            # Newton decrement squared ~ twice the objective gap; tol is on its root.
            # Quadratic convergence that stops improving has hit the rounding floor.
            if not chord and (dec <= self.tol**2 or (dec >= 0.25 * prev_dec and prev_dec <= 1e-8)):
                return kappa, W, it, True
            if not refine and (dec <= 1e-12 or (dec >= 0.25 * prev_dec and prev_dec <= 1e-6)):
                # The plain inverse's error sets a floor on the decrement near eps cond(K);
                # a leading stage is done once it is reached.
                return kappa, W, it, True
            # A stale factorisation's decrement is no reference for the stall tests.
            prev_dec = math.inf if chord else dec
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
                    break
            if _LONG_STEPS and alpha == 1.0 and not quadratic_region:
                # Far from the minimiser along a direction where D_mu is nearly linear (a
                # new measurement that pushes K towards a new dual certificate of size
                # 1/mu), full Newton steps only advance by a bounded amount each; longer
                # steps along the same direction are tried while they keep decreasing D_mu.
                while alpha < 2.0**40:
                    longer = kappa.copy()
                    longer[0], err = _two_sum(kappa[0], 2.0 * alpha * step)
                    longer[0], longer[1] = _two_sum(longer[0], kappa[1] + err)
                    f_long, chol_long = self.objective(longer, mu)
                    if chol_long is None or not f_long < f_new:
                        break
                    alpha *= 2.0
                    trial, f_new, chol_new = longer, f_long, chol_long
            if alpha < 1e-14:
                if refine and not accurate and not precise:
                    precise = True
                    W, accurate = self.inverse(kappa, chol, refine=True)
                    if not accurate:
                        return kappa, W, it, False
                    prev_dec = math.inf
                    continue
                # No decrease within rounding: the current point is as good as it gets.
                return kappa, W, it, dec <= 1e-12
            start = None
            if _NEUMANN and precise and accurate:
                start = (W, b.dense((trial[0] - kappa[0]) + (trial[1] - kappa[1])))
            if _EARLY_REFINE and refine and not precise and alpha == 1.0 and dec <= _REFINE_BELOW**0.5:
                # Quadratic convergence: the decrement after this full step is about dec^2,
                # below _REFINE_BELOW, where the next iteration would switch to the refined
                # inverse anyway; switching now saves the Hessian built on the plain one.
                precise = True
                prev_dec = math.inf
            kappa = trial
            f, chol = f_new, chol_new
            W, accurate = self.inverse(kappa, chol, refine=precise, start=start)
            if precise and not accurate:
                return kappa, W, it + 1, False
            # The step was alpha times the direction of the factorisation in use, whose
            # length in the local norm at the factorisation's point is sqrt(dec).
            factor_dist += alpha * math.sqrt(dec)
            it += 1
        return kappa, W, max_iter, False


def _stale_step_certified(dec: float, dist: float, tol: float) -> bool:
    """Whether a full Newton step with a stale Hessian certifiably lands at decrement
    ``lambda <= tol``.

    ``dec = g^T H~^{-1} g`` with ``H~`` the (exact) Hessian at a point ``x~`` at local
    distance ``r <= dist`` from the current point ``x``. Self-concordance gives
    ``(1 - r)^2 H~ <= H(x) <= H~ / (1 - r)^2``, so the true decrement is at most
    ``l = sqrt(dec) / (1 - r)``, the step's length at ``x`` is at most ``l``, and the step
    leaves the gradient ``(I - H H~^{-1}) g`` (at most ``rho l``, ``rho = (1 - r)^-2 - 1``)
    plus the second-order rest (at most ``l^2 / (1 - l)``, Nesterov's bounds on the
    averaged Hessian along the step); measured at the new point that is
    ``lambda+ <= (rho l + l^2 / (1 - l)) / (1 - l)``. Deep in the barrier path a stage
    typically reaches ``dec`` of 1e-16 at ``r`` of 1e-4, where the bound is 2e-12: the
    Hessian that would only certify the last step is saved.
    """
    if not (math.isfinite(dec) and dec >= 0 and dist < 0.1):
        return False
    lam = math.sqrt(dec) / (1.0 - dist)
    if lam >= 0.1:
        return False
    rho = (1.0 - dist) ** -2 - 1.0
    return (rho * lam + lam * lam / (1.0 - lam)) / (1.0 - lam) <= tol


def _coordinate_minimiser(
    W: np.ndarray, j: int, k: int, cy: float, pen: float, x: float
) -> float | None:
    """Minimiser ``t`` of ``cy t - log det(I + t E W) + pen (x + t)^2 / 2``, ``E`` the
    symmetric unit matrix of entry ``(j, k)``; ``None`` when unbounded or not bracketed."""
    if j == k:
        w = W[j, j]
        lo, hi = -1.0 / w, None

        def slope(t):
            return cy - w / (1.0 + t * w) + pen * (x + t)
    else:
        a, bb = W[j, k], W[j, j] * W[k, k]
        gap = bb - a * a
        if not gap > 0:
            return None
        root = math.sqrt(bb)
        lo, hi = (a - root) / gap, (a + root) / gap

        def slope(t):
            q = 1.0 + 2.0 * a * t - gap * t * t
            return cy - (2.0 * a - 2.0 * gap * t) / q + pen * (x + t)

    if hi is None:
        hi = 1.0 / W[j, j]
        while slope(hi) <= 0:
            hi *= 2.0
            if hi > 1e300:
                return None
    width = hi - lo
    a_, b_ = lo + 1e-14 * width, hi - 1e-14 * width
    fa, fb = slope(a_), slope(b_)
    if not (fa < 0 < fb):
        return None
    try:
        return float(sopt.brentq(slope, a_, b_, xtol=1e-15 * max(abs(a_), abs(b_)), rtol=1e-14))
    except (ValueError, RuntimeError):
        return None


def _factored_direction(factor: tuple[np.ndarray, np.ndarray], grad: np.ndarray) -> np.ndarray:
    c, scale = factor
    x, info = sla.lapack.dpotrs(c, grad / scale, lower=1)
    if info != 0:
        raise NumericalError(f"solving the Newton system failed (dpotrs info={info})")
    return -x / scale


def _default_kappa(block: _Block) -> np.ndarray:
    kappa = np.zeros((2, block.y.size))
    kappa[0, : block.n] = 1.0 / np.maximum(block.y[: block.n], 1.0)
    return kappa


# One piece (over 120 lines): the completion attempt, the barrier path and its warm
# starts are one strategy over one solver's state, each stage deciding the next.
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

    schedule = _barrier_schedule(block, coarse_until=_DUAL_COARSE_UNTIL)
    exponents = [round(math.log10(m)) for m in schedule]

    def warm_kappa(i: int) -> np.ndarray | None:
        if warm_path is None or exponents[i] not in warm_path:
            return None
        guess = np.zeros_like(start)
        guess[0] = block.kappa_from_precision(warm_path[exponents[i]])
        return guess if np.isfinite(solver.objective(guess, 0.0)[0]) else None

    # With the previous path of this component (one measurement ago) the coarse stages,
    # which only lead into the right region, are skipped.
    tries: list[int] = []
    if warm_path is not None:
        fine = [i for i, e in enumerate(exponents) if e <= _WARM_FROM and e in warm_path]
        if fine and warm_kappa(fine[0]) is not None:
            tries.append(fine[0])
        if _WARM_RETRY is not None:
            up = [
                i
                for i, e in enumerate(exponents)
                if e == _WARM_RETRY and e in warm_path and (not tries or i < tries[0])
            ]
            if up and warm_kappa(up[0]) is not None:
                tries.append(up[0])
    first = tries.pop(0) if tries else 0

    last = len(schedule) - 1
    kappa = start
    stages: list[np.ndarray] = []
    kappas: list[np.ndarray] = []
    mus_done: list[float] = []  # relative barrier weights of `stages`
    path: dict[int, np.ndarray] = {}
    stages_ok = True
    previous_norm = None
    tangent = None  # Hessian factorisation of the last stage solved
    i = first
    while i <= last:
        mu = schedule[i] * block.mu_unit
        guess = warm_kappa(i) if first > 0 and i == first else None
        if guess is not None:
            kappa = solver.coordinate_steps(guess, mu, _COORDINATE_STEPS) if _COORDINATE_STEPS else guess
        elif kappas:
            kappa = _predict_kappa(solver, block, mus_done[-2:], kappas[-2:], schedule[i], tangent)
        # Only the stages that enter the extrapolation need W to full double accuracy.
        kappa, W, it, ok = solver.solve(
            kappa,
            mu,
            refine=i >= last - _REFINED_STAGES + 1,
            # A warm start that needs many damped steps is far from this round's path
            # (the path turned); following it from the start is then cheaper.
            max_iter=min(max_iter, _WARM_STAGE_MAX_ITER) if guess is not None else None,
            give_up_above=_WARM_GIVE_UP if guess is not None else None,
            lead_tol=(
                _LEAD_TOL
                if i < last - _REFINED_STAGES
                else (_ESTIMATE_STAGE_TOL if i == last - _REFINED_STAGES else None)
            ),
        )
        tangent = solver.last_factor
        total += it
        splits = 0
        while not ok and guess is None and kappas and splits < _MAX_SPLITS:
            # Damped Newton stalled (far from the minimiser the plain inverse of a badly
            # conditioned K gives poor directions): approach this stage through an
            # intermediate barrier weight, from the last converged stage. Without this
            # an unconverged stage would enter the answer.
            mid = math.sqrt(mus_done[-1] * schedule[i])
            k_mid, W_mid, it, ok_mid = solver.solve(kappas[-1], mid * block.mu_unit)
            total += it
            if not ok_mid:
                break
            stages.append(W_mid)
            kappas.append(k_mid)
            mus_done.append(mid)
            kappa = _predict_kappa(
                solver, block, mus_done[-2:], kappas[-2:], schedule[i], solver.last_factor
            )
            kappa, W, it, ok = solver.solve(kappa, mu, refine=True)
            tangent = solver.last_factor
            total += it
            splits += 1
        if not ok and first > 0:
            # The warm start led astray: follow the path from an earlier stage of the
            # previous path, or from the beginning.
            first = tries.pop(0) if tries else 0
            i, kappa = first, start
            stages, kappas, path, previous_norm = [], [], {}, None
            mus_done = []
            continue
        # An unconverged early stage is still a usable warm start; only the stages that
        # enter the extrapolation decide convergence.
        if i >= last - 2 and not ok:
            stages_ok = False
        stages.append(W)
        kappas.append(kappa)
        mus_done.append(schedule[i])
        if exponents[i] <= _PATH_FROM:
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

    W3, err = _extrapolate(mus_done, stages)
    deeper = exponents[-1] - 1
    while stages_ok and err > _DEEPEN_ABOVE and deeper >= _DEEPEST:
        # The path bends late (the limit has a tiny eigenvalue): follow it further down
        # instead of extrapolating from stages that do not yet show the limit.
        # In steps of a half decade, halved where a step fails (the predictor's model
        # of the path fails where it bends: a whole decade then starts damped Newton at
        # decrements of 1e9, and fails).
        ok = True
        mus_sub, kappas_sub = mus_done[-2:], kappas[-2:]
        exponent, step_size, failures = deeper + 1.0, 0.5, 0
        while ok and exponent > deeper + 1e-9:
            target = max(exponent - step_size, float(deeper))
            mu_rel = 10.0**target
            guess = _predict_kappa(solver, block, mus_sub, kappas_sub, mu_rel, tangent)
            kappa, W, it, ok_step = solver.solve(
                guess, mu_rel * block.mu_unit, give_up_above=_WARM_GIVE_UP
            )
            total += it
            if ok_step:
                tangent = solver.last_factor
                mus_sub, kappas_sub = [mus_sub[-1], mu_rel], [kappas_sub[-1], kappa]
                exponent = target
            else:
                failures += 1
                step_size /= 2.0
                ok = failures <= _DEEPEN_RETRIES
        if not ok:
            break
        mu_rel = 10.0**deeper
        stages.append(W)
        kappas.append(kappa)
        mus_done.append(mu_rel)
        inv_scale = 1.0 / block.scale
        path[deeper] = block.dense(kappa[0] + kappa[1]) * np.outer(inv_scale, inv_scale)
        W_deeper, err_deeper = _extrapolate(mus_done, stages)
        if not err_deeper < err:
            break
        W3, err = W_deeper, err_deeper
        deeper -= 1

    if warm_path is not None and _PATH_FROM > _COARSE_UNTIL:
        # Stages above this round's start keep their earlier values (warm starts only).
        for e, K in warm_path.items():
            path.setdefault(e, K)
    return _BlockSolution(
        covariance=block.to_original(_clip_to_psd(W3)),
        precision=None,
        singular=True,
        iterations=total,
        converged=bool(stages_ok and err <= _EXTRAPOLATION_WARN),
        extrapolation_error=err,
        path=path,
    )


def _predict_kappa(
    solver: _DualNewton,
    block: _Block,
    mus: Sequence[float],
    kappas: Sequence[np.ndarray],
    mu_to: float,
    factor: tuple[np.ndarray, np.ndarray] | None,
) -> np.ndarray:
    """Warm start for the stage at relative weight ``mu_to`` from the solutions ``kappas``
    at the last stages ``mus`` (one or two) and the Hessian factorisation of the last.

    Along the path ``kappa(mu) ~ G / mu + K~`` (``G`` the dual certificate when there is
    no positive-definite completion). Two predictions of that form are tried: from the
    tangent (``kappa' = -H^{-1} c^2 kappa / lambda``, differentiating the stationarity
    condition of ``D_mu``; then ``G = -mu^2 kappa'`` and the prediction is
    ``kappa - mu kappa' (mu / mu_to - 1)``), halved until it is positive definite, and
    the secant through the last two stages. The one with the lowest ``D_mu`` at the new
    weight is taken, or the last solution if that is lower still. Measured on PACE runs
    the tangent usually wins deep in the path (decrements 1e-2 to 1e-4 where the secant
    gives 1 to 1e-2), but an ill-conditioned Hessian can spoil it (a start at decrement
    5e10 was seen), which the comparison catches.
    """
    mu_abs = mu_to * block.mu_unit
    last = kappas[-1]
    x = last[0] + last[1]
    best, best_f = last, solver.objective(last, mu_abs)[0]

    def consider(move: np.ndarray) -> bool:
        nonlocal best, best_f
        guess = np.zeros_like(last)
        guess[0], err = _two_sum(last[0], move)
        guess[1] = last[1] + err
        f = solver.objective(guess, mu_abs)[0]
        if not math.isfinite(f):
            return False
        if f < best_f:
            best, best_f = guess, f
        return True

    if _TANGENT and factor is not None:
        mu = mus[-1] * block.mu_unit
        slope = _factored_direction(factor, block.c**2 * x / block.lam)
        move = (-mu * (mus[-1] / mu_to - 1.0)) * slope
        if np.all(np.isfinite(move)):
            for _ in range(12):
                if consider(move):
                    break
                move = 0.5 * move
    if len(kappas) >= 2:
        x0 = kappas[-2][0] + kappas[-2][1]
        slope = (x - x0) / (1.0 / mus[-1] - 1.0 / mus[-2])
        consider(slope * (1.0 / mu_to - 1.0 / mus[-1]))
    return best


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


# One piece (over 120 lines): the paper's IPM-Cholesky reference solver, kept as one
# readable transcription of its algorithm so that it can be checked against the paper.
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


def _breakdown_is_numerical_error(
    solve: Callable[..., _BlockSolution],
) -> Callable[..., _BlockSolution]:
    """``solve`` with LAPACK breaking down inside it raised as this solver's
    :class:`~dpggm.exceptions.NumericalError` (a numerical breakdown of the fit), not as a
    NumPy ``LinAlgError`` from deep inside the iteration."""

    @functools.wraps(solve)
    def guarded(y: np.ndarray, lam: np.ndarray, index: np.ndarray, *args: Any,
                **kwargs: Any) -> _BlockSolution:
        try:
            return solve(y, lam, index, *args, **kwargs)
        except np.linalg.LinAlgError as error:
            raise NumericalError(
                f"the maximum-entropy reconstruction broke down on a component of "
                f"{index.size} variables ({error})"
            ) from error

    return guarded


@_breakdown_is_numerical_error
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
        extrapolated limit, relative to the measurement noise where the limit is smaller;
        0 when none was needed) and ``component_iterations``.
        ``objective`` is the fit ``L(Sigma_hat)``.

    Raises
    ------
    ValueError
        Non-square, non-symmetric or non-finite input, negative precisions, an unmeasured
        diagonal entry, or an invalid option.
    NumericalError
        LAPACK broke down inside a component's solve (named in the message).

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
    with single_threaded_blas():
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
        self._changed: list[np.ndarray] = []
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
        with single_threaded_blas():
            self._solve_labels(sorted(self._dirty))
        self._dirty.clear()

    def _solve_labels(self, labels: list[int]) -> None:
        for label in labels:
            idx = self._members[label]
            warm = {
                "warm_precision": self._warm.get(label),
                "warm_covariance": (
                    self._solutions[label].covariance
                    if self._method == "ipm-cholesky" and label in self._solutions
                    else None
                ),
                "warm_path": self._paths.get(label),
            }
            # A component that had no PD completion a moment ago rarely has one after a
            # single new measurement; go straight to path-following (which still detects
            # a completion if one appears).
            common = {"tol": self._tol, "max_iter": self._max_iter,
                      "try_completion": label not in self._expect_singular}
            sol = _solve_component(self._y, self._lam, idx, self._method, **common, **warm)
            if not sol.converged and any(v is not None for v in warm.values()):
                # The earlier round's path can lead the new one astray where the limit
                # bends late (once in the 2 520 fits of the pace_ggm_variants
                # reproduction: an estimated error of 2.6e-4 warm, 2.4e-8 from a cold
                # start): solve it again from scratch, and keep whichever estimates its
                # error lower.
                cold = _solve_component(self._y, self._lam, idx, self._method, **common)
                if cold.converged or cold.extrapolation_error < sol.extrapolation_error:
                    sol = cold
            self.n_solves += 1
            self._changed.append(idx)
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

    def pop_changed(self) -> np.ndarray:
        """Indices of the variables whose rows of the reconstruction may have changed since
        the last call (the components solved in between; sorted, possibly empty).

        Entries outside the blocks of these components are unchanged, so a caller can
        update quantities derived from :attr:`covariance` on these blocks only.
        """
        self._solve_dirty()
        changed = np.unique(np.concatenate(self._changed)) if self._changed else np.empty(0, int)
        self._changed = []
        return changed

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
