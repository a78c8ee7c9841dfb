"""Graphical lasso: exact solvers with a certified duality gap.

The problem, for a symmetric (possibly indefinite) matrix ``S`` and ``alpha >= 0``, is

    minimise over Θ ≻ 0:  f(Θ) = -log det Θ + tr(SΘ) + alpha Σ_{i≠j} |Θ_ij|
                                 [+ alpha Σ_i Θ_ii   when penalize_diagonal=True].

Because ``Θ_ii > 0`` the diagonal penalty is linear, so a penalised diagonal is the same
problem with ``S + alpha I`` and an unpenalised diagonal; both solvers work on that form.
Its dual is

    maximise over W ≻ 0:  log det W + p   subject to  W_ii = S_ii,  |W_ij - S_ij| <= alpha,

and every result reports ``duality_gap = f(Θ) - (log det W + p) >= 0`` for the returned
precision ``Θ`` and a dual-feasible ``W`` (the returned ``covariance``). This gap bounds the
suboptimality of ``Θ`` whatever the method; convergence is declared when it is at most
``tol * max(1, |f(Θ)|)`` (or below the rounding noise of its own evaluation).

Methods
-------
``"cd"``: block coordinate descent of Friedman, Hastie and Tibshirani (2008) on the working
covariance ``W``, one lasso per variable solved by active-set coordinate descent (compiled
with numba). The lasso tolerance is tied to the progress of the outer sweeps. The start
``W`` must be positive definite and dual feasible (then every block update keeps it so);
candidates are ``S`` with the (possibly penalised) diagonal and ``S`` with soft-thresholded
off-diagonal entries. The precision is assembled from the lasso coefficients, so its zeros
are exact.

``"admm"``: the alternating direction method of multipliers of Boyd et al. (2011, §6.5),
as in Su, Guo and Zhang's DP-AGL: an eigendecomposition Θ-step, a soft-thresholding Z-step
and a scaled dual update, with the penalty adapted by residual balancing unless fixed by
the caller. It stops when Boyd's primal and dual residuals are below ``tol`` relative to
the iterates *and* the certified gap meets the tolerance (the residuals pin Θ down along
flat directions of the objective, e.g. for a singular ``S``, where a small gap alone does
not). ``S + admm_penalty·U`` is dual feasible by construction, which gives the
certificate; the returned precision is the sparse iterate Z or, when its objective is
lower, the inverse of the dual iterate restricted to the support of Z. ADMM copes with an
indefinite ``S``, but costs one eigendecomposition per iteration.

``"auto"``: coordinate descent when a positive definite start exists; otherwise ADMM is run
only until it yields a positive definite dual-feasible ``W``, and coordinate descent
finishes from there (reported as ``"admm+cd"``).

Exact screening (Witten, Friedman and Simon 2011; Mazumder and Hastie 2012): the solution
is block diagonal along the connected components of the graph ``|S_ij| > alpha`` (i ≠ j),
so blocks are solved independently and isolated variables in closed form.

When no positive definite matrix lies within ``alpha`` of ``S`` in the sense of the dual
constraints, the objective is unbounded below and there is no estimate: a diagonal entry
``S_ii (+ alpha) <= 0`` is reported up front as a :class:`ValueError`. Otherwise no
positive definite start exists for coordinate descent, so ADMM runs (under "admm" and
"auto"); its iterates then approach a positive definite Θ with
``tr(SΘ) + alpha·Σ_{i≠j}|Θ_ij| < 0``, a direction along which the objective decreases
without bound, and meeting one raises :class:`~dpggm.exceptions.NumericalError` ("no
solution").

Dense linear algebra runs with single-threaded BLAS for ``p >= 64`` (see
``dpggm.solvers.toolkit.single_threaded_blas``).
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from dpggm.exceptions import ConvergenceWarning, NoSolutionError, NumericalError
from dpggm.solvers._result import SolverResult
from dpggm.solvers._validation import (
    check_penalty,
    check_positive_int,
    check_square_symmetric,
    check_tolerance,
)
from dpggm.solvers.psd import extreme_eigenvalue
from dpggm.solvers.toolkit import components_of, single_threaded_blas

__all__ = ["graphical_lasso", "graphical_lasso_path", "graphical_lasso_objective"]

_METHODS = ("auto", "cd", "admm")
_DEFAULT_MAX_ITER = {"cd": 1000, "admm": 20000}
_EPS = np.finfo(np.float64).eps
# Lasso tolerance = this fraction of the largest change of W in the previous sweep: loose
# while the outer iteration is far from converged, tight near the end.
_INNER_TOL_FRACTION = 0.1
_MAX_INNER_PASSES = 100_000
# Sweeps allowed between two duality-gap evaluations (each costs two Cholesky factorisations).
_MAX_SWEEPS_BETWEEN_GAPS = 10


def _cd_sweep():
    # numba is imported (and its kernels loaded from cache or compiled) on the first
    # coordinate-descent solve, not when dpggm is imported: ADMM and every caller that
    # never solves pay nothing.
    from dpggm.solvers._glasso_kernels import cd_sweep

    return cd_sweep


@dataclass
class _BlockState:
    """Solution of one block and what is needed to continue from it."""

    precision: np.ndarray
    covariance: np.ndarray
    objective: float
    dual_objective: float
    noise: float
    iterations: int
    method: str
    met_target: bool = False

    @property
    def gap(self) -> float:
        return max(self.objective - self.dual_objective, 0.0)


# ---------------------------------------------------------------------------------------
# Objective and certificate
# ---------------------------------------------------------------------------------------


def _logdet_pd(matrix: np.ndarray) -> float | None:
    """log det of a symmetric positive definite matrix, or ``None`` if it is not one."""
    try:
        factor = linalg.cholesky(matrix, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return None
    diagonal = np.diagonal(factor)
    if not np.all(diagonal > 0) or not np.all(np.isfinite(diagonal)):
        return None
    return 2.0 * float(np.sum(np.log(diagonal)))


def _inverse_pd(matrix: np.ndarray) -> np.ndarray | None:
    """Symmetric inverse of a positive definite matrix, or ``None`` if it is not one."""
    try:
        factor = linalg.cho_factor(matrix, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return None
    inverse = linalg.cho_solve(factor, np.eye(matrix.shape[0]), check_finite=False)
    inverse += inverse.T
    inverse *= 0.5
    return inverse


def _primal(S: np.ndarray, theta: np.ndarray, alpha: float) -> tuple[float, float]:
    """Objective (unpenalised diagonal) and the size of its terms (for rounding noise)."""
    logdet = _logdet_pd(theta)
    if logdet is None:
        return math.inf, math.inf
    trace = float(np.vdot(S, theta))
    l1 = float(np.sum(np.abs(theta)) - np.sum(np.abs(np.diagonal(theta))))
    value = -logdet + trace + alpha * l1
    return value, abs(logdet) + abs(trace) + alpha * l1


def _project_to_dual_box(S: np.ndarray, W: np.ndarray, alpha: float) -> np.ndarray:
    projected = np.clip(W, S - alpha, S + alpha)
    np.fill_diagonal(projected, np.diagonal(S))
    return projected


def _dual(S: np.ndarray, W: np.ndarray) -> float:
    """Dual objective of a dual-feasible ``W`` (``-inf`` if ``W`` is not positive definite)."""
    logdet = _logdet_pd(W)
    if logdet is None:
        return -math.inf
    return logdet + S.shape[0]


def graphical_lasso_objective(
    S, precision, alpha: float, *, penalize_diagonal: bool = False
) -> float:
    """Graphical lasso objective ``-log det Θ + tr(SΘ) + alpha·‖Θ‖₁`` (off-diagonal ℓ1).

    Parameters
    ----------
    S : array_like of shape (p, p)
        Symmetric matrix (covariance or noisy second-moment matrix).
    precision : array_like of shape (p, p)
        Symmetric candidate precision matrix.
    alpha : float
        ℓ1 penalty, ``>= 0``.
    penalize_diagonal : bool, default=False
        Also add ``alpha·Σ_i |Θ_ii|``.

    Returns
    -------
    float
        The objective, ``inf`` when ``precision`` is not positive definite.

    Notes
    -----
    Privacy: post-processing only; consumes no budget.
    """
    S = check_square_symmetric(S)
    theta = check_square_symmetric(precision, name="precision")
    if theta.shape != S.shape:
        raise ValueError(f"precision must have the shape of S {S.shape}; got shape {theta.shape}")
    alpha = check_penalty(alpha, name="alpha")
    value, _ = _primal(S, theta, alpha)
    if penalize_diagonal:
        value += alpha * float(np.sum(np.abs(np.diagonal(theta))))
    return value


def _noise_floor(p: int, magnitude: float) -> float:
    # The gap is a difference of quantities of this size, each carrying rounding error
    # growing with p: below this it cannot be resolved.
    return 16.0 * p * _EPS * (magnitude + p)


# ---------------------------------------------------------------------------------------
# Coordinate descent
# ---------------------------------------------------------------------------------------


def _precision_from_coefficients(W: np.ndarray, B: np.ndarray) -> np.ndarray:
    # Θ_ii = 1 / (W_ii - w_iᵀ β_i) and Θ_ji = -β_ij Θ_ii; the two halves of each pair come
    # from different lasso solutions and are averaged.
    schur = np.diagonal(W) - np.einsum("ij,ij->i", W, B)
    with np.errstate(divide="ignore"):
        theta_diag = 1.0 / schur
    theta = B * (-theta_diag)[:, None]
    theta += theta.T
    theta *= 0.5
    np.fill_diagonal(theta, theta_diag)
    return theta


def _coefficients_from_precision(theta: np.ndarray) -> np.ndarray:
    diagonal = np.diagonal(theta).copy()
    if not np.all(diagonal > 0):
        return np.zeros_like(theta)
    B = -theta / diagonal[:, None]
    np.fill_diagonal(B, 0.0)
    return np.ascontiguousarray(B)


def _cd_start(S: np.ndarray, alpha: float, init_W: np.ndarray | None) -> np.ndarray | None:
    """A positive definite, dual-feasible starting W, or ``None`` if none was found."""
    candidates = []
    if init_W is not None:
        candidates.append(_project_to_dual_box(S, init_W, alpha))
    candidates.append(S.copy())
    off = S - np.diag(np.diagonal(S))
    thresholded = np.sign(off) * np.maximum(np.abs(off) - alpha, 0.0)
    np.fill_diagonal(thresholded, np.diagonal(S))
    candidates.append(thresholded)
    for candidate in candidates:
        if _logdet_pd(candidate) is not None:
            return np.ascontiguousarray(candidate)
    return None


class _CDBreakdown(Exception):
    """A block update lost positive definiteness."""


def _cd_block(
    S: np.ndarray,
    alpha: float,
    W: np.ndarray,
    B: np.ndarray,
    target_of,
    max_iter: int,
    iterations_done: int = 0,
    method: str = "cd",
) -> _BlockState:
    p = S.shape[0]
    W = np.ascontiguousarray(W, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    np.fill_diagonal(W, np.diagonal(S))
    np.fill_diagonal(B, 0.0)
    scale = float(np.mean(np.abs(np.diagonal(S))))
    # Lasso steps are measured as |Δβ_j|·W_jj, the change of the j-th gradient entry, which
    # is compared with alpha in the optimality conditions.
    inner_tol = 0.05 * alpha
    tiny = 1e-15 * scale
    # First certificate once W moves by less than this; later ones where the observed
    # gap/change ratio predicts success.
    check_below = 1e-4 * scale
    sweeps_since_check = 0
    iterations = iterations_done
    best: _BlockState | None = None
    while True:
        change, failed_at, _ = _cd_sweep()(S, W, B, alpha, inner_tol, _MAX_INNER_PASSES)
        iterations += 1
        sweeps_since_check += 1
        if failed_at >= 0 or not math.isfinite(change):
            raise _CDBreakdown(int(failed_at))
        stalled = change <= tiny
        out_of_iterations = iterations >= max_iter
        if (
            change <= check_below
            or sweeps_since_check >= _MAX_SWEEPS_BETWEEN_GAPS
            or stalled
            or out_of_iterations
        ):
            sweeps_since_check = 0
            theta = _precision_from_coefficients(W, B)
            objective, magnitude = _primal(S, theta, alpha)
            dual_W = _project_to_dual_box(S, W, alpha)
            dual_value = _dual(S, dual_W)
            state = _BlockState(
                precision=theta,
                covariance=dual_W,
                objective=objective,
                dual_objective=dual_value,
                noise=_noise_floor(p, magnitude + abs(dual_value)),
                iterations=iterations,
                method=method,
            )
            if math.isfinite(objective) and (best is None or state.gap < best.gap):
                best = state
            gap = state.gap
            target = max(target_of(objective), state.noise) if math.isfinite(objective) else 0.0
            if gap <= target:
                state.met_target = True
                return state
            if stalled or out_of_iterations:
                if best is not None:
                    return best
                # The coefficients do not yet assemble into a positive definite matrix;
                # the inverse of the (positive definite) iterate W is a valid estimate.
                fallback = _inverse_pd(W)
                if fallback is not None:
                    state.precision = fallback
                    state.objective, magnitude = _primal(S, fallback, alpha)
                    state.noise = _noise_floor(p, magnitude + abs(dual_value))
                return state
            if math.isfinite(gap) and gap > 0:
                check_below = min(check_below, 0.5 * change * target / gap)
            else:
                check_below = min(check_below, 0.1 * change)
        inner_tol = max(min(inner_tol, _INNER_TOL_FRACTION * change), tiny)


# ---------------------------------------------------------------------------------------
# ADMM
# ---------------------------------------------------------------------------------------


def _soft_threshold_off_diagonal(matrix: np.ndarray, threshold: float) -> np.ndarray:
    result = np.sign(matrix) * np.maximum(np.abs(matrix) - threshold, 0.0)
    np.fill_diagonal(result, np.diagonal(matrix))
    return result


def _admm_theta_step(A: np.ndarray, penalty: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Solve ``penalty·Θ - Θ⁻¹ = A``: returns Θ and its eigen-decomposition (θ, Q)."""
    values, vectors = linalg.eigh(A, check_finite=False, driver="evd")
    root = np.sqrt(values * values + 4.0 * penalty)
    # Both forms are the positive root; each avoids cancellation on its side of zero.
    theta_values = np.where(
        values >= 0, (values + root) / (2.0 * penalty), 2.0 / np.maximum(root - values, 1e-300)
    )
    theta = (vectors * theta_values) @ vectors.T
    theta += theta.T
    theta *= 0.5
    return theta, theta_values, vectors


_UNBOUNDED_MESSAGE = (
    "the graphical lasso has no solution for this S and alpha: the objective is unbounded "
    "below (a positive definite direction D with tr(SD) + alpha·Σ_{i≠j}|D_ij| < 0 exists, "
    "i.e. no positive definite matrix lies within alpha of S off the diagonal and equals it "
    "on the diagonal). S is too far from positive definite for this alpha: increase alpha, "
    "use penalize_diagonal=True, or repair S first (project_psd or ridge_precision)."
)


# One piece (over 120 lines): the ADMM iteration of Boyd et al. section 6.5 with its
# divergence, unboundedness and duality-gap checks shares one loop's state; split, the
# checks would have to pass that state around.
def _admm_block(
    S: np.ndarray,
    alpha: float,
    target_of,
    residual_tol: float,
    max_iter: int,
    admm_penalty: float | None,
    init_theta: np.ndarray | None,
    init_W: np.ndarray | None,
    handoff_to_cd: bool,
) -> tuple[_BlockState, np.ndarray | None]:
    """ADMM on one block.

    Stops when Boyd's primal and dual residuals are below ``residual_tol`` (relative) and
    the certified gap meets its target. With ``handoff_to_cd`` it stops instead as soon as
    a positive definite dual-feasible W appears and returns it as the second element (the
    block state is then provisional).
    """
    p = S.shape[0]
    diag_scale = float(np.mean(np.abs(np.diagonal(S))))
    S_norm = float(np.linalg.norm(S))
    adaptive = admm_penalty is None
    penalty = diag_scale**2 if adaptive else float(admm_penalty)
    if init_theta is not None and np.all(np.diagonal(init_theta) > 0):
        Z = init_theta.copy()
    else:
        Z = np.diag(1.0 / np.diagonal(S))
    if init_W is not None:
        U = (_project_to_dual_box(S, init_W, alpha) - S) / penalty
    else:
        U = np.zeros_like(S)
    # Relative residual tolerance: the gap alone does not pin down Θ along flat directions
    # of the objective (e.g. a singular S), while the residuals do; it cannot usefully be
    # smaller than rounding allows.
    residual_tol = max(residual_tol, 1e3 * _EPS)
    # Iterates this large mean the objective is unbounded below (the dual is infeasible).
    blow_up = 1e12 / max(float(np.min(np.diagonal(S))), _EPS * diag_scale)
    best: _BlockState | None = None
    theta = Z
    for iteration in range(1, max_iter + 1):
        theta, theta_values, vectors = _admm_theta_step(penalty * (Z - U) - S, penalty)
        Z_previous = Z
        V = theta + U
        Z = _soft_threshold_off_diagonal(V, alpha / penalty)
        U = V - Z
        if not np.all(np.isfinite(Z)) or float(np.max(np.abs(Z))) > blow_up:
            raise NoSolutionError(_UNBOUNDED_MESSAGE)
        # Θ ≻ 0 with tr(SΘ) + alpha·Σ_{i≠j}|Θ_ij| < 0 certifies that the objective is
        # unbounded below along the ray tΘ, t -> infinity.
        trace = float(np.vdot(S, theta))
        l1 = float(np.sum(np.abs(theta)) - np.sum(np.abs(np.diagonal(theta))))
        if trace + alpha * l1 < -1e-10 * (abs(trace) + alpha * l1):
            raise NoSolutionError(_UNBOUNDED_MESSAGE)
        primal_residual = float(np.linalg.norm(theta - Z))
        dual_residual = penalty * float(np.linalg.norm(Z - Z_previous))
        residuals_small = primal_residual <= residual_tol * max(
            float(np.linalg.norm(theta)), float(np.linalg.norm(Z))
        ) and dual_residual <= residual_tol * max(penalty * float(np.linalg.norm(U)), S_norm)
        last = iteration == max_iter
        checking = handoff_to_cd or residuals_small or last or iteration % 50 == 0
        if checking:
            inverse = (vectors / theta_values) @ vectors.T
            dual_value, dual_W = -math.inf, None
            for candidate in (S + penalty * U, inverse):
                candidate = _project_to_dual_box(S, candidate, alpha)
                value = _dual(S, candidate)
                if value > dual_value:
                    dual_value, dual_W = value, candidate
            if handoff_to_cd and dual_W is not None:
                provisional = _BlockState(
                    precision=Z,
                    covariance=dual_W,
                    objective=math.inf,
                    dual_objective=dual_value,
                    noise=0.0,
                    iterations=iteration,
                    method="admm",
                )
                return provisional, dual_W
        if checking and not handoff_to_cd:
            # Z has the exact sparsity but converges slowly along flat directions of the
            # objective; the inverse of the (better determined) dual W, restricted to the
            # support of Z, is usually more accurate.
            estimate = Z
            objective, magnitude = _primal(S, Z, alpha)
            if dual_W is not None:
                polished = _inverse_pd(dual_W)
                if polished is not None:
                    polished[Z == 0] = 0.0
                    polished_objective, polished_magnitude = _primal(S, polished, alpha)
                    if polished_objective < objective:
                        estimate = polished
                        objective, magnitude = polished_objective, polished_magnitude
            state = _BlockState(
                precision=estimate,
                covariance=dual_W if dual_W is not None else inverse,
                objective=objective,
                dual_objective=dual_value,
                noise=_noise_floor(p, magnitude + abs(dual_value)),
                iterations=iteration,
                method="admm",
            )
            if math.isfinite(objective) and (best is None or state.gap < best.gap):
                best = state
            if (
                residuals_small
                and math.isfinite(objective)
                and state.gap <= max(target_of(objective), state.noise)
            ):
                state.met_target = True
                return state, None
        if adaptive:
            # Residual balancing (Boyd et al. 2011, §3.4.1): keeps the two residuals within
            # a factor 10; U is the scaled dual variable, so it is rescaled with the penalty.
            if primal_residual > 10.0 * dual_residual:
                penalty *= 2.0
                U *= 0.5
            elif dual_residual > 10.0 * primal_residual:
                penalty *= 0.5
                U *= 2.0
    if best is not None:
        return best, None
    # No positive definite sparse iterate: fall back on the positive definite Θ-iterate.
    objective, magnitude = _primal(S, theta, alpha)
    dual_W = _project_to_dual_box(S, S + penalty * U, alpha)
    dual_value = _dual(S, dual_W)
    state = _BlockState(
        precision=theta,
        covariance=dual_W,
        objective=objective,
        dual_objective=dual_value,
        noise=_noise_floor(p, magnitude),
        iterations=max_iter,
        method="admm",
    )
    return state, None


# ---------------------------------------------------------------------------------------
# A start for an indefinite S: continuation on the diagonal
# ---------------------------------------------------------------------------------------

#: Sweeps of coordinate descent at each raised diagonal (the stages only carry W along).
_CONTINUATION_SWEEPS = 20
#: Relative duality gap at which a stage stops early.
_CONTINUATION_TOL = 1e-4
#: Stages before giving up (each at least halves the raise that is left, or the raise is
#: not reduced at all and the search stops).
_CONTINUATION_STAGES = 60
#: A stage that cannot lower the raise by this share of it ends the continuation.
_CONTINUATION_LEAST_STEP = 1 / 64


def _continuation_start(S: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, int] | None:
    """A positive definite, dual-feasible ``W`` for ``S`` (and lasso coefficients ``B``),
    from the solutions with a raised diagonal, or ``None``.

    ``S + c I`` with ``c`` just above ``-λ_min`` of the soft-thresholded ``S`` has a
    positive definite start. Coordinate descent runs a few sweeps there; its ``W`` is
    positive definite and dual feasible for ``S + c I``, so ``W - δ I`` is dual feasible for
    ``S + (c - δ) I`` and stays positive definite for every ``δ < λ_min(W)``: the raise
    is lowered by the largest of ``c, c/2, c/4, ...`` that keeps ``W - δ I`` positive
    definite (one Cholesky factorisation each), the sweeps resume, and so on until it is
    zero. An indefinite release (every one of p = 1 000 columns, zCDP 1) reached its start
    in 5 stages and 3 s, where ADMM took 822 eigendecompositions (255 s); the solution is
    the same (a duality gap certifies it).
    """
    p = S.shape[0]
    scale = float(np.mean(np.abs(np.diagonal(S))))
    off = S - np.diag(np.diagonal(S))
    thresholded = np.sign(off) * np.maximum(np.abs(off) - alpha, 0.0)
    np.fill_diagonal(thresholded, np.diagonal(S))
    smallest = extreme_eigenvalue(thresholded, which="smallest")
    raise_by = 1.05 * max(-smallest, 0.0) + 1e-3 * scale
    W = thresholded
    W[np.diag_indices(p)] += raise_by
    del off
    B = np.zeros_like(S)
    iterations = 0
    identity_diagonal = np.diag_indices(p)
    for _ in range(_CONTINUATION_STAGES):
        raised = S.copy()
        raised[identity_diagonal] += raise_by
        state = _cd_block(
            raised, alpha, W, B,
            lambda objective: _CONTINUATION_TOL * max(1.0, abs(objective)),
            iterations + _CONTINUATION_SWEEPS, iterations_done=iterations,
        )
        iterations = state.iterations
        del raised
        # A positive definite Θ with tr(SΘ) + alpha·Σ_{i≠j}|Θ_ij| < 0 for the S itself
        # proves its objective unbounded below: as the raise nears the least one with a
        # solution, the stages' Θ grows along such a direction.
        if math.isfinite(state.objective):
            trace = float(np.vdot(S, state.precision))
            l1 = float(np.sum(np.abs(state.precision))
                       - np.sum(np.abs(np.diagonal(state.precision))))
            if trace + alpha * l1 < -1e-10 * (abs(trace) + alpha * l1):
                raise NoSolutionError(_UNBOUNDED_MESSAGE)
        # The state's W is positive definite and dual feasible for the raised S (B, updated
        # in place, is only the next stage's warm start).
        W = state.covariance
        lower = raise_by
        while lower > _CONTINUATION_LEAST_STEP * raise_by:
            candidate = W.copy()
            candidate[identity_diagonal] -= lower
            if _logdet_pd(candidate) is not None:
                break
            lower *= 0.5
        else:
            # The raise no longer comes down: the problem is at (or past) the edge of
            # having a solution; ADMM decides.
            return None
        W = candidate
        if lower == raise_by:
            return np.ascontiguousarray(W), B, iterations
        raise_by -= lower
    return None


# ---------------------------------------------------------------------------------------
# One block, any method
# ---------------------------------------------------------------------------------------


def _solve_zero_penalty(S: np.ndarray) -> _BlockState:
    try:
        factor = linalg.cho_factor(S, lower=True, check_finite=False)
    except linalg.LinAlgError:
        raise NoSolutionError(
            "the graphical lasso with alpha = 0 (maximum likelihood) has no solution: it "
            "needs S positive definite, and this S (or one of its screened blocks) is not. "
            "Use alpha > 0, penalize_diagonal=True, or ridge_precision."
        ) from None
    theta = linalg.cho_solve(factor, np.eye(S.shape[0]), check_finite=False)
    theta = 0.5 * (theta + theta.T)
    objective, magnitude = _primal(S, theta, 0.0)
    dual_value = _dual(S, S)
    return _BlockState(
        precision=theta,
        covariance=S.copy(),
        objective=objective,
        dual_objective=dual_value,
        noise=_noise_floor(S.shape[0], magnitude + abs(dual_value)),
        iterations=0,
        method="closed_form",
        met_target=True,
    )


def _solve_block(
    S: np.ndarray,
    alpha: float,
    method: str,
    target_of,
    tol: float,
    max_iter: int | None,
    admm_penalty: float | None,
    init_theta: np.ndarray | None,
    init_W: np.ndarray | None,
) -> _BlockState:
    if alpha == 0.0:
        return _solve_zero_penalty(S)
    def admm(handoff_to_cd: bool) -> tuple[_BlockState, np.ndarray | None]:
        return _admm_block(S, alpha, target_of, tol, max_iter or _DEFAULT_MAX_ITER["admm"],
                           admm_penalty, init_theta, init_W, handoff_to_cd=handoff_to_cd)

    def admm_only() -> _BlockState:
        return admm(False)[0]

    if method == "admm":
        return admm_only()

    cd_max_iter = max_iter or _DEFAULT_MAX_ITER["cd"]
    start = _cd_start(S, alpha, init_W)
    B = _coefficients_from_precision(init_theta) if init_theta is not None else np.zeros_like(S)
    prefix = ""
    start_iterations = 0
    if start is None:
        if method == "cd":
            smallest = float(np.linalg.eigvalsh(S)[0])
            raise NumericalError(
                "method='cd' needs a positive definite starting covariance W inside the dual "
                "box |W_ij - S_ij| <= alpha, W_ii = S_ii (+ alpha if penalize_diagonal); "
                f"neither S (smallest eigenvalue {smallest:.3g}) nor S with soft-thresholded "
                "off-diagonal entries is positive definite. Use method='auto' or 'admm' (they "
                "handle an indefinite S), penalize_diagonal=True or a larger alpha, or "
                "repair S with project_psd."
            )
        try:
            continued = _continuation_start(S, alpha)
        except _CDBreakdown:
            continued = None
        if continued is not None:
            start, B, start_iterations = continued
            prefix = "continuation+"
        else:
            handoff, start = admm(True)
            if start is None:
                return handoff
            B = _coefficients_from_precision(handoff.precision)
            prefix = "admm+"
            start_iterations = handoff.iterations
    try:
        return _cd_block(
            S,
            alpha,
            start,
            B,
            target_of,
            cd_max_iter + start_iterations,
            iterations_done=start_iterations,
            method=prefix + "cd",
        )
    except _CDBreakdown as breakdown:
        if method == "cd":
            raise NumericalError(
                "coordinate descent lost positive definiteness while updating variable "
                f"{breakdown.args[0]} of a {S.shape[0]}-variable block (S is too "
                "ill-conditioned for it at this alpha); use method='admm' or 'auto'."
            ) from None
    return admm_only()


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------


def _check_init(init, p: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Initial precision and working covariance from ``init``."""
    if init is None:
        return None, None
    if isinstance(init, SolverResult):
        theta = np.asarray(init.estimate, dtype=np.float64)
        W = init.covariance
        W = None if W is None else np.asarray(W, dtype=np.float64)
    else:
        theta = check_square_symmetric(init, name="init")
        W = None
    if theta.shape != (p, p) or (W is not None and W.shape != (p, p)):
        raise ValueError(f"init must be a ({p}, {p}) precision matrix; got shape {theta.shape}")
    if not np.all(np.isfinite(theta)):
        raise ValueError("init must contain only finite values")
    if W is None:
        try:
            W = np.linalg.inv(theta) if _logdet_pd(theta) is not None else None
        except np.linalg.LinAlgError:  # pragma: no cover - excluded by the check above
            W = None
    return theta, W


def _block_index(component: np.ndarray, p: int):
    # A block holding every variable (in order) is addressed without copying.
    if component.size == p:
        return (slice(None), slice(None))
    return np.ix_(component, component)


def _components(S: np.ndarray, alpha: float, screening: bool) -> list[np.ndarray]:
    # Exact screening (Witten, Friedman & Simon 2011): the solution is block diagonal over
    # the components of {|S_ij| > alpha}.
    if not screening:
        return [np.arange(S.shape[0])]
    return components_of(np.abs(S) > alpha)


def graphical_lasso(
    S,
    alpha: float,
    *,
    method: str = "auto",
    penalize_diagonal: bool = False,
    tol: float = 1e-8,
    max_iter: int | None = None,
    init=None,
    screening: bool = True,
    admm_penalty: float | None = None,
) -> SolverResult:
    """Sparse precision matrix by the graphical lasso, with a certified duality gap.

    Minimises ``-log det Θ + tr(SΘ) + alpha·Σ_{i≠j}|Θ_ij|`` (plus ``alpha·Σ_i Θ_ii`` when
    ``penalize_diagonal``) over positive definite ``Θ``.

    Parameters
    ----------
    S : array_like of shape (p, p)
        Symmetric matrix: an empirical covariance or a noisy (possibly indefinite)
        second-moment matrix. ``p >= 2``.
    alpha : float
        ℓ1 penalty, ``>= 0``. ``alpha = 0`` returns ``S⁻¹`` (needs ``S`` positive definite).
    method : {"auto", "cd", "admm"}, default="auto"
        ``"cd"``: block coordinate descent (Friedman, Hastie, Tibshirani 2008); needs a
        positive definite start (see Raises). ``"admm"``: Boyd et al. (2011) §6.5, one
        eigendecomposition per iteration; handles an indefinite ``S``. ``"auto"``:
        coordinate descent, started by ADMM when ``S`` offers no positive definite start.
    penalize_diagonal : bool, default=False
        Penalise the diagonal too (as in Su, Guo and Zhang's DP-AGL). scikit-learn and
        R's ``glasso(..., penalize.diagonal=FALSE)`` do not.
    tol : float, default=1e-8
        Convergence when the certified duality gap is at most ``tol·max(1, |objective|)``
        (or below the rounding noise of its evaluation). The gap bounds how far the
        returned objective is above the optimum.
    max_iter : int, optional
        Maximum sweeps over all variables (``"cd"``, default 1000) or iterations
        (``"admm"``, default 20000), per screened block.
    init : SolverResult or array_like of shape (p, p), optional
        Warm start: a previous result (its precision and working covariance are used) or
        an initial precision matrix. A start that is not dual feasible for this ``alpha``
        is projected, and ignored if that loses positive definiteness.
    screening : bool, default=True
        Split the problem along the connected components of ``|S_ij| > alpha``; exact.
    admm_penalty : float, optional
        ADMM augmented-Lagrangian parameter. ``None`` starts at ``mean(diag S)²`` (the
        natural scale of the problem) and adapts it by residual balancing (doubling or
        halving when one residual exceeds ten times the other); a number is used fixed
        throughout, as in DP-AGL.

    Returns
    -------
    SolverResult
        ``estimate`` is the precision Θ (exact zeros off the support). ``extra`` holds
        ``covariance`` (the dual-feasible working covariance W ≈ Θ⁻¹ that certifies the
        gap), ``duality_gap`` (absolute), ``relative_duality_gap``, ``dual_objective``,
        ``method`` (the method actually used: "cd", "admm", "admm+cd", "closed_form", or
        "mixed" with ``component_methods``), ``n_components``, ``alpha``, ``tol`` and
        ``penalize_diagonal``. ``iterations`` is the largest count over blocks.

    Raises
    ------
    ValueError
        Invalid ``S`` or options, or a diagonal entry ``S_ii`` (``+ alpha`` with
        ``penalize_diagonal``) that is not positive: the objective is then unbounded.
    NumericalError
        ``method="cd"`` with no positive definite dual-feasible start (use "auto" or
        "admm"); a breakdown of coordinate descent; an objective shown by ADMM to be
        unbounded below, or ``alpha = 0`` with ``S`` not positive definite (both say "no
        solution").

    Warns
    -----
    ConvergenceWarning
        When the gap tolerance is not met within ``max_iter``.

    Notes
    -----
    Privacy: post-processing only; consumes no budget.
    """
    S = check_square_symmetric(S)
    p = S.shape[0]
    alpha = check_penalty(alpha, name="alpha")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}; got {method!r}")
    tol = check_tolerance(tol)
    if max_iter is not None:
        max_iter = check_positive_int(max_iter, name="max_iter")
    if admm_penalty is not None:
        admm_penalty = check_penalty(admm_penalty, name="admm_penalty", strictly_positive=True)
    penalize_diagonal = bool(penalize_diagonal)
    init_theta, init_W = _check_init(init, p)

    with single_threaded_blas(p):
        return _graphical_lasso(
            S,
            alpha,
            method,
            penalize_diagonal,
            tol,
            max_iter,
            init_theta,
            init_W,
            screening,
            admm_penalty,
        )


# One piece (over 120 lines): screening, the per-component solves and the summed
# duality-gap certificate are one pass over the components, and the certificate needs
# every component's result at hand.
def _graphical_lasso(
    S,
    alpha,
    method,
    penalize_diagonal,
    tol,
    max_iter,
    init_theta,
    init_W,
    screening,
    admm_penalty,
) -> SolverResult:
    p = S.shape[0]
    work = S.copy()
    if penalize_diagonal:
        work[np.diag_indices(p)] += alpha
    diagonal = np.diagonal(work)
    if not np.all(diagonal > 0):
        index = int(np.flatnonzero(~(diagonal > 0))[0])
        shown = f"S[{index}, {index}] + alpha" if penalize_diagonal else f"S[{index}, {index}]"
        raise NoSolutionError(
            f"the graphical lasso has no solution: {shown} = {diagonal[index]:.6g} is not "
            "positive, which makes the objective unbounded below (Θ_ii -> infinity). "
            "Use penalize_diagonal=True with alpha > -min(diag S), or repair S first "
            "(project_psd(S, min_eigenvalue=...) or ridge_precision)."
        )

    components = _components(work, alpha, screening)
    isolated = [c for c in components if c.size == 1]
    blocks = [c for c in components if c.size > 1]
    precision = np.zeros((p, p))
    covariance = np.zeros((p, p))
    objective_isolated = 0.0
    for component in isolated:
        i = int(component[0])
        precision[i, i] = 1.0 / work[i, i]
        covariance[i, i] = work[i, i]
        objective_isolated += math.log(work[i, i]) + 1.0

    block_p = sum(c.size for c in blocks)
    states: list[_BlockState] = []
    for component in blocks:
        index = _block_index(component, p)
        block_S = np.ascontiguousarray(work[index])
        share = component.size / block_p

        def target_of(objective, share=share):
            return tol * max(1.0, abs(objective)) * share

        states.append(
            _solve_block(
                block_S,
                alpha,
                method,
                target_of,
                tol,
                max_iter,
                admm_penalty,
                None if init_theta is None else init_theta[index],
                None if init_W is None else init_W[index],
            )
        )

    total_objective = objective_isolated + sum(s.objective for s in states)
    total_gap = sum(s.gap for s in states)
    noise = sum(s.noise for s in states)
    required = tol * max(1.0, abs(total_objective))
    if total_gap > max(required, noise) and math.isfinite(total_objective):
        # Block objectives of opposite signs: tighten each block to its share of the
        # tolerance of the total, continuing from where it stopped.
        for position, component in enumerate(blocks):
            share_required = required * component.size / block_p
            state = states[position]
            if not state.met_target or state.gap <= max(share_required, state.noise):
                continue
            index = _block_index(component, p)
            states[position] = _solve_block(
                np.ascontiguousarray(work[index]),
                alpha,
                method,
                lambda objective, value=share_required: value,
                tol,
                max_iter,
                admm_penalty,
                state.precision,
                state.covariance,
            )
        total_objective = objective_isolated + sum(s.objective for s in states)
        total_gap = sum(s.gap for s in states)
        noise = sum(s.noise for s in states)
        required = tol * max(1.0, abs(total_objective))

    for component, state in zip(blocks, states):
        index = _block_index(component, p)
        precision[index] = state.precision
        covariance[index] = state.covariance

    methods = sorted({s.method for s in states}) or ["closed_form"]
    converged = bool(math.isfinite(total_gap) and total_gap <= max(required, noise))
    iterations = max((s.iterations for s in states), default=0)
    if not converged:
        warnings.warn(
            f"graphical_lasso did not converge: duality gap {total_gap:.3g} > "
            f"tol·max(1, |objective|) = {required:.3g} after {iterations} iterations "
            f"(method {'/'.join(methods)}); increase max_iter or tol.",
            ConvergenceWarning,
            stacklevel=3,
        )
    dual_objective = total_objective - total_gap
    return SolverResult(
        estimate=precision,
        iterations=int(iterations),
        converged=converged,
        objective=float(total_objective),
        precision=precision,
        covariance=covariance,
        message=(
            f"duality gap {total_gap:.3g} <= {required:.3g}" if converged
            else f"not converged: duality gap {total_gap:.3g} > {required:.3g}"
        ),
        extra={
            "duality_gap": float(total_gap),
            "relative_duality_gap": float(total_gap / max(1.0, abs(total_objective))),
            "dual_objective": float(dual_objective),
            "method": methods[0] if len(methods) == 1 else "mixed",
            "component_methods": [s.method for s in states],
            "n_components": len(components),
            "alpha": alpha,
            "tol": tol,
            "penalize_diagonal": penalize_diagonal,
        },
    )


def graphical_lasso_path(S, alphas, **options) -> list[SolverResult]:
    """Graphical lasso over a grid of penalties, warm-started from large to small.

    Parameters
    ----------
    S : array_like of shape (p, p)
        Symmetric matrix, as in :func:`graphical_lasso`.
    alphas : sequence of float
        Penalties (each ``>= 0``), in any order; they are solved in decreasing order, each
        from the previous solution.
    **options
        Keyword options of :func:`graphical_lasso` (``init`` is not allowed).

    Returns
    -------
    list of SolverResult
        One result per penalty, in the order of ``alphas``.

    Notes
    -----
    Privacy: post-processing only; consumes no budget.
    """
    if "init" in options:
        raise TypeError("graphical_lasso_path does not take init: it warm-starts itself")
    S = check_square_symmetric(S)
    if isinstance(alphas, numbers.Real):
        raise TypeError("alphas must be a sequence of penalties; got a single number")
    values = [check_penalty(a, name=f"alphas[{k}]") for k, a in enumerate(alphas)]
    if not values:
        raise ValueError("alphas must contain at least one penalty; got an empty sequence")
    order = sorted(range(len(values)), key=lambda k: -values[k])
    results: list[SolverResult | None] = [None] * len(values)
    previous = None
    for k in order:
        previous = graphical_lasso(S, values[k], init=previous, **options)
        results[k] = previous
    return results  # type: ignore[return-value]
