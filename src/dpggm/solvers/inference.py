"""Per-edge inference from a released second moment: intervals, p-values, FDR control.

Everything here is post-processing of one release ``S~ = S + E`` (``S`` the second moment of
the clipped, centered records, ``E`` symmetric noise with independent upper-triangle entries,
diagonal included, of known variance ``sigma**2``) together with the public description of
how it was made (``n``, ``sigma``, the clipping bounds). No data, no budget.

The estimator (see ``docs/inference.md`` for the derivations and the calibration study):

1. **Pilot.** A precision matrix ``Theta`` with the right zeros: the graphical lasso at the
   noise-calibrated penalty (or a precision the caller already solved), refitted without
   penalty on its own support (:func:`support_refit`). The refit matters: at a strongly
   penalised pilot the de-biased estimate depends on the noise through the pilot, and the
   plug-in variance below then understates the truth (null z-scores with standard deviation
   1.1 to 1.35 in our measurements, false-discovery rates of 0.2 to 0.5 at a nominal 0.1);
   unpenalised on its support the pilot satisfies ``Theta^{-1} = S~`` there, the first-order
   dependence cancels and the z-scores are standard.
2. **De-biased precision** ``T = 2 Theta - Theta S~ Theta`` (Jankova & van de Geer 2015) and
   partial correlations ``r_jk = -T_jk / sqrt(T_jj T_kk)``.
3. **Variance** of ``r_jk`` by the delta method, ``dr = <M_jk, dS~>`` with
   ``M_jk = c u_j u_k' + a u_j u_j' + b u_k u_k'``, ``u_j = Theta e_j``,
   ``c = 1 / sqrt(T_jj T_kk)``, ``a = r / (2 T_jj)``, ``b = r / (2 T_kk)``:

   * sampling: ``Var(y' M y) / n`` over the records ``y``, with Gaussian fourth moments:
     ``(1 - r**2)**2 / n``. Clipped records have shorter tails, so this errs on the safe
     side (by 5 to 15 % in variance at a median row-norm bound without the correction of
     step 4; null z-scores with standard deviation 0.93 to 0.99);
   * noise: ``sigma**2 (2 ||sym M||_F**2 - sum_l (sym M)_ll**2)``, which for ``T_jk``
     itself (``c = 1``, ``a = b = 0``) is
     ``sigma**2 [(Theta^2)_jj (Theta^2)_kk + ((Theta^2)_jk)**2 - sum_l Theta_jl**2 Theta_lk**2]``
     (checked by simulation in tests/test_inference.py): the diagonal noise and the
     mirrored off-diagonal noise each enter once.

4. **Clipping.** Clipping changes the estimand: shrinking long rows onto the ball
   ``||z|| <= B`` shrinks the partial correlations of the clipped records towards zero
   (by 8 % at ``p = 10``, 2 % at ``p = 30``, 1 % at ``p = 100`` with a median bound). For a
   centered Gaussian, radial clipping keeps the eigenvectors of the covariance and scales
   its ``j``-th eigenvalue by ``g_j = E[min(1, B^2/Q) z_j^2]`` (:func:`_radial_gains`, in
   closed form under a gamma approximation of the quadratic form ``Q``). Given a
   :class:`ClippingModel`, the eigenvalues of the pre-clipping covariance are solved from
   the pilot's (``lambda_j g_j(lambda) = mu_j``, indirect inference under a Gaussian working
   model) and the release is shifted by the change of shape (scale does not move partial
   correlations) before steps 1-3.
5. **Tests.** ``p = 2 Phi(-|r| / se0)`` with ``se0`` the standard error of ``r_jk`` under
   "no edge", computed from the pilot with the tested pair taken out
   (:func:`_null_pilot_coefficients`: ``u0_j = u_j - (Theta_jk / Theta_kk) u_k``, the
   pair's regressions on the other variables kept), so that it does not grow with the
   tested edge's own strength; Benjamini-Hochberg (or Benjamini-Yekutieli) q-values over
   the ``p (p - 1) / 2`` pairs; an edge is selected when its q-value is at most ``fdr``.
6. **Heavy tails.** The sampling variances take the largest excess kurtosis the public
   row-norm bound and the released trace allow (:func:`clipped_excess_kurtosis`), and the
   outer end of every clipping-corrected interval is extended by
   ``TAIL_ALLOWANCE |r| (1 - r**2)`` for the further shrinkage of heavy-tailed records.

A parametric bootstrap (``method="bootstrap"``) re-simulates the mechanism from the released
quantities -- clipped Gaussian records from the working model, the second moment, the noise,
the refit pilot on the same support and the de-biased estimate -- and uses the replicates'
spread and bias in place of the closed form; it is the calibration check of the closed
form and the fallback where the linearisation is doubtful (``||Theta E||`` not small).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import numbers
import warnings
from dataclasses import InitVar, dataclass, field, replace
from typing import Any

import numpy as np
from scipy import linalg, stats

from dpggm.exceptions import (
    ConvergenceWarning,
    NoSolutionError,
    NumericalError,
    UnreliableInferenceWarning,
)
from dpggm.solvers._validation import check_square_symmetric
from dpggm.solvers.glasso import graphical_lasso
from dpggm.solvers.psd import extreme_eigenvalue, project_psd
from dpggm.solvers.toolkit import single_threaded_blas

__all__ = [
    "EDGE_STRENGTHS",
    "FDR_METHODS",
    "NOISE_AMPLIFICATION",
    "RESCALED_VARIANCE",
    "TESTS",
    "ClippingModel",
    "EdgeInference",
    "TAIL_ALLOWANCE",
    "clipped_excess_kurtosis",
    "delta_method_terms",
    "detectable_difference",
    "detectable_partial_correlation",
    "edge_inference",
    "expected_row_norm_bound",
    "false_discovery_control",
    "noise_calibrated_alpha",
    "partial_correlation_noise",
    "support_refit",
]

#: Multiple-testing procedures of :func:`false_discovery_control`.
FDR_METHODS = ("bh", "by")
_METHODS = ("closed-form", "bootstrap")
#: How far the outer end of an interval corrected for clipping is extended, as a multiple of
#: ``|r| (1 - r**2)``: what records with tails as heavy as a t with 5 degrees of freedom
#: shrink a partial correlation beyond the Gaussian working model (measured 0.013-0.024 at
#: the median edge, up to 0.047, p = 10-100, 200 000 records).
TAIL_ALLOWANCE = 0.03

#: The largest excess kurtosis :func:`clipped_excess_kurtosis` returns: above what records
#: clipped at their median norm showed even for t5 data (0.19), where only a loose bound
#: allows more.
KURTOSIS_CAP = 0.25

#: How :func:`edge_inference` tests "no edge": the null standard error from the pilot with
#: the tested pair taken out (the default), the standard error at the estimate (Wald), or
#: from the pilot that contains the pair (before 2026-12; its null standard error grows
#: with the edge's own strength, so power fell as an edge grew).
TESTS = ("null-pilot", "wald", "pilot")


# ---------------------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------------------


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {value!r}")
    return float(value)


def _open_unit(value: Any, name: str) -> float:
    number = _real(value, name)
    if not (0.0 < number < 1.0):
        raise ValueError(f"{name} must be in the open interval (0, 1); got {number!r}")
    return number


def _nonnegative(value: Any, name: str) -> float:
    number = _real(value, name)
    if not (math.isfinite(number) and number >= 0.0):
        raise ValueError(f"{name} must be a finite number >= 0; got {number!r}")
    return number


def _positive_int(value: Any, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}; got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {int(value)}")
    return int(value)


def _choice(value: Any, name: str, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}; got {value!r}")
    return value


# ---------------------------------------------------------------------------------------
# multiple testing
# ---------------------------------------------------------------------------------------


def false_discovery_control(p_values: Any, *, method: str = "bh") -> np.ndarray:
    """Benjamini-Hochberg or Benjamini-Yekutieli adjusted p-values (q-values).

    Selecting every hypothesis with q-value at most ``q`` controls the false-discovery rate
    at ``q``: under independence or positive regression dependence (``"bh"``, Benjamini &
    Hochberg 1995; Benjamini & Yekutieli 2001) or under any dependence (``"by"``, at the
    cost of a factor ``sum_{k<=m} 1/k``, about ``ln m + 0.58``).

    Parameters
    ----------
    p_values : array_like of shape (m,)
        p-values in ``[0, 1]``.
    method : {"bh", "by"}, default="bh"

    Returns
    -------
    ndarray of shape (m,)
        ``q_(i) = min_{k >= i} min(1, c m p_(k) / k)`` in the original order, with
        ``c = 1`` (BH) or ``c = sum_{k<=m} 1/k`` (BY).

    Raises
    ------
    ValueError
        Empty or non-finite input, a value outside ``[0, 1]``, or an unknown method.

    Notes
    -----
    Privacy: post-processing only; consumes no budget.
    """
    method = _choice(method, "method", FDR_METHODS)
    values = np.asarray(p_values, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"p_values must be a non-empty 1-D array; got shape {values.shape}")
    if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values > 1):
        bad = values[~(np.isfinite(values) & (values >= 0) & (values <= 1))][0]
        raise ValueError(f"p_values must lie in [0, 1]; got {bad!r}")
    m = values.size
    factor = float(np.sum(1.0 / np.arange(1, m + 1))) if method == "by" else 1.0
    order = np.argsort(values, kind="stable")
    scaled = values[order] * (factor * m / np.arange(1, m + 1))
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


# ---------------------------------------------------------------------------------------
# pilot precision
# ---------------------------------------------------------------------------------------


def noise_calibrated_alpha(noisy_covariance: Any, *, noise_std: float, n_samples: int) -> float:
    """The graphical-lasso penalty from the release and public quantities only.

    ``alpha = noise_std sqrt(2 ln(p (p - 1) / 2)) + s sqrt(2 ln(p) / n)`` with ``s`` the
    median released variance (floored at 0): the universal threshold of the noise plus the
    sampling rate of a covariance entry (the rule of ``GraphicalLasso(alpha="auto")``).

    Notes
    -----
    Privacy: post-processing only; consumes no budget.
    """
    S = check_square_symmetric(noisy_covariance, name="noisy_covariance")
    noise_std = _nonnegative(noise_std, "noise_std")
    n = _positive_int(n_samples, "n_samples")
    p = S.shape[0]
    pairs = max(p * (p - 1) / 2, 2.0)
    scale = max(float(np.median(np.diag(S))), 0.0)
    return noise_std * math.sqrt(2 * math.log(pairs)) + scale * math.sqrt(
        2 * math.log(max(p, 2)) / n
    )


def _cholesky(matrix: np.ndarray) -> np.ndarray | None:
    # LAPACK's potrf itself (what scipy.linalg.cholesky calls, without its copies).
    factor, info = linalg.lapack.dpotrf(matrix, lower=1, clean=1)
    if info != 0:
        return None
    if not np.all(np.isfinite(factor)) or not np.all(np.diagonal(factor) > 0):
        return None
    return factor


def _inverse_from_cholesky(factor: np.ndarray) -> np.ndarray:
    """The symmetric inverse ``(L L')^-1`` from the lower factor ``L``: LAPACK's potri
    (``p^3`` operations, against ``2 p^3`` for two triangular solves with ``p`` right-hand
    sides), its triangle mirrored; C-ordered."""
    lower, info = linalg.lapack.dpotri(factor, lower=1)
    if info != 0:  # pragma: no cover - a factor from _cholesky has a positive diagonal
        inverse = linalg.cho_solve((factor, True), np.eye(factor.shape[0]), check_finite=False)
        return 0.5 * (inverse + inverse.T)
    inverse = np.array(lower.T, order="C")
    inverse += np.triu(inverse, 1).T
    return inverse


def support_refit(
    S: Any,
    support: Any,
    *,
    start: Any = None,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> tuple[np.ndarray, int, bool]:
    """Maximum-likelihood precision with a given zero pattern (covariance selection).

    Minimises ``-log det Theta + tr(S Theta)`` over positive definite ``Theta`` with
    ``Theta_jk = 0`` wherever ``support`` is false (the diagonal is always free), by Newton's
    method with the Newton system solved by preconditioned conjugate gradients (each
    Hessian product ``W V W`` costs two matrix products) and a backtracking line search
    that keeps ``Theta`` positive definite. At the solution ``Theta^{-1}`` equals ``S`` on the
    support and the diagonal (Dempster 1972).

    Parameters
    ----------
    S : array_like of shape (p, p)
        Symmetric matrix, possibly indefinite (a noisy release).
    support : array_like of bool, shape (p, p)
        Symmetric pattern of the free off-diagonal entries.
    start : array_like of shape (p, p), optional
        Positive definite start with zeros off ``support`` (e.g. a graphical-lasso
        solution); default the inverse of the diagonal of ``S``.
    tol : float, default=1e-10
        Stop when half the squared Newton decrement is below ``tol``.
    max_iter : int, default=100
        Newton steps.

    Returns
    -------
    precision : ndarray of shape (p, p)
    iterations : int
    converged : bool

    Raises
    ------
    NoSolutionError
        When no positive definite matrix agrees with ``S`` on the support (the objective is
        unbounded below), or the start is not positive definite.

    Notes
    -----
    Privacy: post-processing only; consumes no budget.
    """
    theta, _, iterations, converged = _refit_with_inverse(S, support, start=start, tol=tol,
                                                          max_iter=max_iter)
    return theta, iterations, converged


def _refit_with_inverse(S: Any, support: Any, *, start: Any = None, tol: float = 1e-10,
                        max_iter: int = 100) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """:func:`support_refit` and the inverse of its precision (the Newton iteration's last
    ``W``, which is what inverting the precision again would give, bit for bit)."""
    S = check_square_symmetric(S)
    # One BLAS thread at every size: LAPACK's potri took 55 ms at p = 30 with its threads
    # on busy cores (against well under a millisecond on one).
    with single_threaded_blas():
        return _refit_from_candidates(S, support, start, tol, max_iter)


def _refit_from_candidates(S: np.ndarray, support: Any, start: Any, tol: float,
                           max_iter: int) -> tuple[np.ndarray, np.ndarray, int, bool]:
    p = S.shape[0]
    mask = np.asarray(support, dtype=bool)
    if mask.shape != (p, p):
        raise ValueError(f"support must have shape {(p, p)}; got {mask.shape}")
    mask = mask | mask.T | np.eye(p, dtype=bool)
    # Starts, best first: the given one with its entries off the support dropped (which
    # can lose positive definiteness), its diagonal, the inverse diagonal of S.
    candidates = []
    if start is not None:
        given = np.asarray(start, dtype=float)
        if given.shape != (p, p):
            raise ValueError(f"start must have shape {(p, p)}; got {given.shape}")
        masked = np.where(mask, given, 0.0)
        candidates += [0.5 * (masked + masked.T), np.diag(np.diag(given))]
    if np.all(np.diag(S) > 0):
        candidates.append(np.diag(1.0 / np.diag(S)))
    theta = factor = None
    for candidate in candidates:
        factor = _cholesky(candidate)
        if factor is not None:
            theta = candidate
            break
    if theta is None:
        raise NoSolutionError(
            "support_refit needs a positive definite start: none was given and S has a "
            f"diagonal entry <= 0 ({float(np.diag(S).min()):.3g})"
        )
    return _newton_refit(S, mask, theta, factor, tol, max_iter)


def _newton_refit(S, mask, theta, factor, tol, max_iter):
    logdet = 2.0 * float(np.sum(np.log(np.diagonal(factor))))
    value = -logdet + float(np.vdot(S, theta))
    start_scale = float(np.max(np.abs(theta)))
    W = _inverse_from_cholesky(factor)
    hessian = _SparseHessian.of(mask)
    for iteration in range(1, max_iter + 1):
        gradient = np.where(mask, S - W, 0.0)
        direction = (_newton_direction(W, gradient, mask, theta) if hessian is None
                     else hessian.direction(W, gradient, theta))
        slope = float(np.vdot(gradient, direction))
        if -slope / 2 <= tol * max(1.0, abs(value)):
            return theta, W, iteration - 1, True
        step = 1.0
        while True:
            candidate = theta + step * direction
            candidate_factor = _cholesky(candidate)
            if candidate_factor is not None:
                candidate_value = -2.0 * float(
                    np.sum(np.log(np.diagonal(candidate_factor)))
                ) + float(np.vdot(S, candidate))
                if candidate_value <= value + 0.25 * step * slope:
                    break
            step *= 0.5
            if step < 1e-12:
                return theta, W, iteration, False
        theta, factor, value = candidate, candidate_factor, candidate_value
        # A positive definite Theta supported on the pattern with tr(S Theta) <= 0 proves
        # that no completion exists: any positive definite W equal to S on the pattern
        # would give tr(W Theta) = tr(S Theta) <= 0, impossible for two positive definite
        # matrices. The iterates of a release without a completion head for a singular
        # precision and reach such a Theta within tens of steps (p = 300: 9 to 40), where
        # the objective alone decreases too slowly to tell (100 steps, maximum entry x 40).
        if (float(np.vdot(S, theta)) <= 0.0 or not math.isfinite(value)
                or float(np.max(np.abs(theta))) > 1e8 * start_scale):
            raise NoSolutionError(
                "no positive definite precision matches the matrix on this support: the "
                "refit objective is unbounded below"
            )
        W = _inverse_from_cholesky(factor)
    return theta, W, max_iter, False


#: At most this many conjugate-gradient steps for one Newton direction (a truncated Newton
#: method: every conjugate-gradient iterate is a descent direction, and the line search and
#: the Newton decrement do the rest). A release with no positive definite completion on the
#: support drives the refit towards a singular precision, where the Hessian's condition
#: number passes 1e10 and the solve took thousands of steps a direction (p = 400,
#: n = 20 000, zCDP 1: 9 635 steps for one direction, minutes for the refit).
_CONJUGATE_GRADIENT_STEPS = 250


def _newton_direction(W: np.ndarray, gradient: np.ndarray, mask: np.ndarray,
                      theta: np.ndarray) -> np.ndarray:
    """Solve ``P(W D W) = -gradient`` on the support by preconditioned conjugate gradients
    (inexact: relative residual ``min(0.1, sqrt(||g||))``), preconditioned by
    ``R -> P(Theta R Theta)`` (see :meth:`_SparseHessian.direction`)."""
    residual = -gradient
    norm0 = math.sqrt(float(np.vdot(residual, residual)))
    if norm0 == 0.0:
        return np.zeros_like(gradient)
    target = min(0.1, math.sqrt(norm0)) * norm0
    x = np.zeros_like(gradient)

    def precondition(r: np.ndarray) -> np.ndarray:
        return np.where(mask, theta @ r @ theta, 0.0)

    z = precondition(residual)
    search = z.copy()
    rz = float(np.vdot(residual, z))
    for _ in range(min(4 * int(mask.sum()) + 10, _CONJUGATE_GRADIENT_STEPS)):
        product = np.where(mask, W @ search @ W, 0.0)
        curvature = float(np.vdot(search, product))
        if curvature <= 0:
            break
        step = rz / curvature
        x += step * search
        residual -= step * product
        if math.sqrt(float(np.vdot(residual, residual))) <= target:
            break
        z = precondition(residual)
        rz_new = float(np.vdot(residual, z))
        search = z + (rz_new / rz) * search
        rz = rz_new
    return 0.5 * (x + x.T)


#: The sparse Newton system is used when the support holds at most this share of the
#: ``p x p`` entries: below it the sparse products cost less than two dense ones.
_SPARSE_SUPPORT = 0.125


class _SparseHessian:
    """:func:`_newton_direction` on a sparse support, in the coordinates of its upper
    triangle: the same conjugate-gradient iteration (the same inner products, each
    off-diagonal entry counted twice as in the full matrix, the same preconditioner and
    stopping rule), with the Hessian product ``P(W D W)`` formed from the sparse ``D``
    (:func:`~dpggm.solvers._refit_kernels.support_congruence`, ``O(p s)`` for ``s``
    entries) instead of two dense ``p x p`` products (``O(p^3)``). The result equals the
    dense iteration's up to rounding."""

    def __init__(self, mask: np.ndarray) -> None:
        p = mask.shape[0]
        self.p = p
        self.rows, self.cols = np.nonzero(np.triu(mask))
        self.weight = np.where(self.rows == self.cols, 1.0, 2.0)
        full_rows, full_cols = np.nonzero(mask)
        self.indptr = np.searchsorted(full_rows, np.arange(p + 1)).astype(np.int64)
        self.indices = full_cols.astype(np.int64)
        keys = self.rows.astype(np.int64) * p + self.cols
        low, high = np.minimum(full_rows, full_cols), np.maximum(full_rows, full_cols)
        self.to_upper = np.searchsorted(keys, low.astype(np.int64) * p + high)
        self.full_rows, self.full_cols = full_rows, full_cols
        self.scratch: np.ndarray | None = None
        self.sandwich_scratch: np.ndarray | None = None

    @classmethod
    def of(cls, mask: np.ndarray) -> _SparseHessian | None:
        """The sparse system for ``mask`` (diagonal included), or ``None`` when it is too
        dense to gain from it."""
        p = mask.shape[0]
        if int(np.count_nonzero(mask)) > _SPARSE_SUPPORT * p * p:
            return None
        return cls(mask)

    def _product(self, W: np.ndarray, values: np.ndarray) -> np.ndarray:
        from dpggm.solvers._refit_kernels import support_congruence

        if self.scratch is None:
            self.scratch = np.empty((self.p, self.p))
        out = np.empty(values.shape[0])
        support_congruence(W, self.indptr, self.indices, self.to_upper, values, self.rows,
                           self.cols, out, self.scratch)
        return out

    def _preconditioned(self, theta_values: np.ndarray, residual: np.ndarray) -> np.ndarray:
        from dpggm.solvers._refit_kernels import support_sandwich

        if self.sandwich_scratch is None:
            self.sandwich_scratch = np.zeros((self.p, self.p))
        out = np.empty(residual.shape[0])
        support_sandwich(self.indptr, self.indices, theta_values, self.to_upper, residual,
                         self.rows, self.cols, out, self.sandwich_scratch)
        return out

    def direction(self, W: np.ndarray, gradient: np.ndarray,
                  theta: np.ndarray) -> np.ndarray:
        W = np.ascontiguousarray(W)
        rows, cols, weight = self.rows, self.cols, self.weight
        # The preconditioner is D -> Theta D Theta on the pattern: the exact inverse of the
        # Hessian D -> W D W were the pattern full, and computed from the sparse Theta in
        # O(p d^2). Against the Hessian's diagonal it cut the conjugate-gradient steps five
        # times (p = 100, n = 50 000, zCDP 1: 2 875 -> 591 for the whole refit) and the
        # Newton steps by half, where W's condition number (10^3 to 10^5 for
        # neighbours correlated at 0.98 and more) squares in the Hessian's.
        theta_values = theta[self.full_rows, self.full_cols]
        residual = -gradient[rows, cols]
        norm0 = math.sqrt(float(np.dot(weight * residual, residual)))
        out = np.zeros_like(gradient)
        if norm0 == 0.0:
            return out
        target = min(0.1, math.sqrt(norm0)) * norm0
        x = np.zeros_like(residual)
        z = self._preconditioned(theta_values, residual)
        search = z.copy()
        rz = float(np.dot(weight * residual, z))
        for _ in range(min(4 * int(np.sum(weight)) + 10, _CONJUGATE_GRADIENT_STEPS)):
            product = self._product(W, search)
            curvature = float(np.dot(weight * search, product))
            if curvature <= 0:
                break
            step = rz / curvature
            x += step * search
            residual -= step * product
            if math.sqrt(float(np.dot(weight * residual, residual))) <= target:
                break
            z = self._preconditioned(theta_values, residual)
            rz_new = float(np.dot(weight * residual, z))
            search = z + (rz_new / rz) * search
            rz = rz_new
        out[rows, cols] = x
        out[cols, rows] = x
        return out


#: The refit's completion is called singular within the noise when its smallest eigenvalue
#: is below this share of the noise standard deviation. Measured (zCDP 1): the raw chains
#: where the inference fails fall at 0.037 (p = 300, n = 100 000: 96 % of the selected
#: edges false) and 0.038 (p = 1 000, n = 50 000); a 100-variable chain at n = 20 000,
#: whose inference is calibrated, at 0.39.
NEAR_SINGULAR_SHARE = 0.1


def _smallest_eigenvalue_of_inverse(theta: np.ndarray) -> float:
    """``1 / lambda_max(theta)`` for a positive definite ``theta``: the smallest eigenvalue of
    the completion the refit found, from the sparse precision (Lanczos above 400
    variables, where a dense eigendecomposition would cost seconds)."""
    p = theta.shape[0]
    if p > 400:
        from scipy.sparse import csr_matrix
        from scipy.sparse.linalg import ArpackNoConvergence, eigsh

        try:
            top = eigsh(csr_matrix(theta), k=1, which="LA", return_eigenvectors=False,
                        tol=1e-6)[0]
            return float(1.0 / top)
        except ArpackNoConvergence:
            pass
    return 1.0 / extreme_eigenvalue(theta, which="largest")


def _glasso_pilot(S: np.ndarray, alpha: float, floor: float) -> np.ndarray:
    """Graphical lasso on the release, repaired least-first when it has no solution (as
    ``GraphicalLasso`` does): variances raised to ``floor``, then eigenvalues."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            return graphical_lasso(S, alpha).estimate
        except (NoSolutionError, NumericalError, ValueError):
            pass
        repaired = S.copy()
        diagonal = np.diag(repaired)
        repaired[np.diag_indices_from(repaired)] = np.maximum(diagonal, floor)
        try:
            return graphical_lasso(repaired, alpha).estimate
        except (NoSolutionError, NumericalError, ValueError):
            repaired = project_psd(repaired, min_eigenvalue=floor).estimate
            return graphical_lasso(repaired, alpha).estimate


def _refit_pilot(S: np.ndarray, start: np.ndarray,
                 floor: float) -> tuple[np.ndarray, str, np.ndarray, np.ndarray | None]:
    """The pilot refitted on the support of ``start``, how, its inverse, and what the pair
    repair added to the release's variances (``None`` when nothing).

    A noisy release can have no positive definite completion on that support (the refit
    objective is then unbounded below). A pair of the support whose 2 x 2 block of the
    release is not positive definite first has its two variances raised (the pair repair,
    below); patterns holding a triangle whose 3 x 3 block is not positive definite are not
    tried. The weakest edges of the support (smallest
    ``|partial correlation|`` of ``start``) are then dropped, half of them at a time, until
    the refit exists: raising the release's diagonal instead (the least of
    ``lambda / 64, ..., lambda / 2, lambda``, ``lambda = floor - min eig(S)``, the last
    resort) shrinks every de-biased estimate towards zero (an isolated 0.3 edge at
    p = 100, n = 2 000, rho = 1 was estimated 0.15-0.19 with standard errors near 0.05,
    and its intervals covered it half of the time), while the weak edges dropped are the
    ones the noise makes doubtful anyway."""
    support = start != 0
    scale = np.sqrt(np.abs(np.diag(start)))
    strength = np.abs(start) / np.outer(scale, scale)
    # A released variance at or below the noise floor (a column the noise swamps, e.g. one
    # whose private range missed its values) has no completion at all: only those entries
    # are raised to the floor, so that they do not force a raise of every variance.
    low = np.diag(S) < floor
    if low.any():
        S = S.copy()
        S[np.flatnonzero(low), np.flatnonzero(low)] = floor
    rows, cols = np.nonzero(np.triu(support, 1))
    # The same for a pair: an edge whose 2 x 2 block of the release is not positive
    # definite (a noisy correlation of magnitude 1 or more; neighbours of a long chain
    # correlate at 0.98-0.998, and the noise of a wide release carries them over) has no
    # completion on any pattern that holds it, and dropping it would drop the strongest
    # edges. The two variances are raised until the block's smallest eigenvalue reaches
    # the floor (each variance by the most any of its pairs needs).
    diagonal = np.diag(S)
    pair_smallest = 0.5 * ((diagonal[rows] + diagonal[cols])
                           - np.hypot(diagonal[rows] - diagonal[cols], 2.0 * S[rows, cols]))
    indefinite = pair_smallest <= 0.0
    repaired = ""
    lift = None
    if indefinite.any():
        need = floor - pair_smallest[indefinite]
        lift = np.zeros(S.shape[0])
        np.maximum.at(lift, rows[indefinite], need)
        np.maximum.at(lift, cols[indefinite], need)
        S = S.copy()
        S[np.diag_indices_from(S)] += lift
        diagonal = np.diag(S)
        repaired = (f"; {int(np.count_nonzero(lift))} variances raised (at most by "
                    f"{float(lift.max()):.3g}) where {int(indefinite.sum())} of its pairs "
                    "were not positive definite")
    order = np.argsort(-strength[rows, cols], kind="stable")
    # Likewise a triangle of the pattern whose 3 x 3 block is not positive definite: the
    # patterns that hold it are not tried (p = 1 000, a chain: one such triangle among
    # 3 866 ruled out the first two patterns, which had taken 50 s to refute by Newton).
    from dpggm.solvers._refit_kernels import least_level_with_indefinite_triangle

    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    least_indefinite = least_level_with_indefinite_triangle(
        np.searchsorted(rows, np.arange(S.shape[0] + 1)).astype(np.int64),
        cols.astype(np.int64), rank, np.ascontiguousarray(S))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if least_indefinite > len(order):
            try:
                theta, inverse, _, converged = _refit_with_inverse(S, support, start=start)
                return (theta, ("refit" if converged else "refit (not converged)") + repaired,
                        inverse, lift)
            except NoSolutionError:
                pass
        # Down to the strongest edge: a pilot without edges tests marginal correlations,
        # which in a chain are large between every pair of near variables (p = 200:
        # 19 565 edges selected, 99 % of them false).
        kept = len(order)
        while kept > 1:
            kept //= 2
            if kept >= least_indefinite:
                continue
            reduced = np.eye(S.shape[0], dtype=bool)
            reduced[rows[order[:kept]], cols[order[:kept]]] = True
            reduced |= reduced.T
            try:
                theta, inverse, _, converged = _refit_with_inverse(
                    S, reduced, start=np.where(reduced, start, 0))
            except NoSolutionError:
                continue
            return theta, (f"refit on the {kept} strongest of the pilot's {len(order)} edges "
                           "(the release has no positive definite completion on all of them)"
                           + repaired), inverse, lift
        shift = floor - extreme_eigenvalue(S, which="smallest")
        for fraction in (1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0):
            shifted = S + fraction * shift * np.eye(S.shape[0])
            try:
                theta, inverse, _, converged = _refit_with_inverse(shifted, support, start=start)
            except NoSolutionError:
                continue
            return (theta, f"refit on the release with its diagonal raised by "
                    f"{fraction * shift:.3g}" + repaired, inverse, lift)
    raise NumericalError("the pilot could not be refitted on its support")  # pragma: no cover


# ---------------------------------------------------------------------------------------
# clipping model
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClippingModel:
    """How the released records were bounded, in the coordinates of the release.

    The records are taken as Gaussian before clipping (the working model); each row ``z``
    is clipped to the box ``|z_j| <= box_j``, then shrunk onto the ball ``||z|| <= B``
    (``row_norm_bound``), then (``recenter``) centered on the released mean and shrunk onto
    the ball again -- what ``PrivateGraph`` does to its rescaled records.

    Attributes
    ----------
    row_norm_bound : float or None
        ``B``; ``None`` for no row-norm clipping.
    box : float, array of shape (p,) or None, default=1.0
        Per-coordinate bound applied first (``1`` for records rescaled onto ``[-1, 1]``).
    mean : array of shape (p,) or None
        Location of the records before clipping (the released mean); ``None`` for zero.
    recenter : bool, default=True
        Whether the records were centered on their mean and clipped to the ball again.
        (``recentre=``, its earlier spelling, is still accepted, with a
        ``DeprecationWarning``.)
    """

    row_norm_bound: float | None
    box: Any = 1.0
    mean: Any = None
    recenter: bool = True
    recentre: InitVar[bool | None] = None

    def __post_init__(self, recentre: bool | None) -> None:
        if recentre is not None:
            warnings.warn("ClippingModel(recentre=...) is now spelled recenter=",
                          DeprecationWarning, stacklevel=3)
            object.__setattr__(self, "recenter", bool(recentre))

    def check(self, p: int) -> ClippingModel:
        """This model with its arrays checked against ``p`` variables."""
        bound = self.row_norm_bound
        if bound is not None:
            bound = _real(bound, "row_norm_bound")
            if not (math.isfinite(bound) and bound > 0):
                raise ValueError(f"row_norm_bound must be a finite number > 0; got {bound!r}")
        box = self.box
        if box is not None:
            box = np.broadcast_to(np.asarray(box, dtype=float), (p,)).copy()
            if not np.all(np.isfinite(box)) or np.any(box <= 0):
                raise ValueError("box must be finite and > 0 in every coordinate")
        mean = np.zeros(p) if self.mean is None else np.asarray(self.mean, dtype=float)
        if mean.shape != (p,) or not np.all(np.isfinite(mean)):
            raise ValueError(f"mean must be a finite vector of length {p}; got shape {mean.shape}")
        return ClippingModel(row_norm_bound=bound, box=box, mean=mean,
                             recenter=bool(self.recenter))

    def clip(self, rows: np.ndarray) -> np.ndarray:
        """The clipped (and recentered) records, as the mechanism computes them."""
        out = rows if self.box is None else np.clip(rows, -self.box, self.box)
        out = self._ball(out)
        if self.recenter:
            out = self._ball(out - out.mean(axis=0))
        return out

    def _ball(self, rows: np.ndarray) -> np.ndarray:
        if self.row_norm_bound is None:
            return rows
        norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
        scale = np.minimum(1.0, self.row_norm_bound / np.maximum(norms, 1e-300))
        return rows * scale[:, None]


def _gain_from_moments(mean: np.ndarray, var: np.ndarray, bound_squared: float) -> np.ndarray:
    """``E[min(1, B^2 / G)]`` for a gamma variable ``G`` of the given mean and variance
    (closed form: ``F_k(B^2) + B^2 / (theta (k - 1)) (1 - F_{k-1}(B^2))``)."""
    scale = var / mean
    shape = mean / scale
    below = stats.gamma.cdf(bound_squared, shape, scale=scale)
    tail = np.where(shape > 1.0,
                    stats.gamma.sf(bound_squared, np.maximum(shape - 1.0, 1e-12), scale=scale)
                    * bound_squared / (scale * np.maximum(shape - 1.0, 1e-12)),
                    0.0)
    return np.clip(below + tail, 1e-12, 1.0)


def _radial_gains(eigenvalues: np.ndarray, bound_squared: float) -> np.ndarray:
    """``g_j = E[min(1, B^2 / Q) z_j^2]`` for ``Q = sum_i lambda_i z_i^2``, ``z ~ N(0, I)``:
    the factor by which shrinking rows onto the ball ``||x|| <= B`` scales the ``j``-th
    eigenvalue of a centered Gaussian's covariance (the eigenvectors do not change, by
    symmetry).

    ``E[z_j^2 f(Q)] = E[f(Q_j)]`` where ``Q_j`` has ``z_j^2`` replaced by a chi-square with 3
    degrees of freedom; ``Q_j`` is approximated by the gamma law with its mean and variance
    (Satterthwaite), for which ``E[min(1, B^2 / G)] = F_k(B^2) + B^2 / (theta (k - 1))
    (1 - F_{k-1}(B^2))`` in closed form. Against 2e6 simulated rows the gains agree within
    0.5 % on the calibration graphs (p >= 10) and 1.5 % for ten eigenvalues spread over two
    decades.
    """
    lam = np.maximum(eigenvalues, 0.0)
    mean = lam.sum() + 2.0 * lam
    var = 2.0 * float(np.sum(lam * lam)) + 4.0 * lam * lam
    return _gain_from_moments(mean, var, bound_squared)


@dataclass(frozen=True)
class _Declipped:
    """The spectrum of the declipping map at a working covariance ``V diag(mu) V'``: the
    pre-clipping eigenvalues ``lam`` (``lam_j g_j(lam) = mu_j``) and the bound."""

    mu: np.ndarray
    vectors: np.ndarray
    lam: np.ndarray
    bound_squared: float

    @property
    def covariance(self) -> np.ndarray:
        return (self.vectors * self.lam) @ self.vectors.T


def _declip_spectrum(covariance: np.ndarray, bound: float, max_iter: int = 200) -> _Declipped:
    # The divide-and-conquer driver: 20-40 % faster than the default at p = 400-2000.
    mu, vectors = linalg.eigh(covariance, check_finite=False, driver="evd")
    mu = np.maximum(mu, 1e-12 * max(float(mu[-1]), 1e-300))
    lam = mu.copy()
    squared = bound * bound
    for _ in range(max_iter):
        updated = mu / _radial_gains(lam, squared)
        if np.max(np.abs(updated - lam) / updated) < 1e-10:
            lam = updated
            break
        lam = updated
    return _Declipped(mu=mu, vectors=vectors, lam=lam, bound_squared=squared)


def _declip(covariance: np.ndarray, bound: float, max_iter: int = 200) -> np.ndarray:
    """The covariance of a centered Gaussian whose rows, shrunk onto the ball of radius
    ``bound``, have covariance ``covariance``: the eigenvalues solve
    ``lambda_j g_j(lambda) = mu_j`` (fixed point; ``g`` from :func:`_radial_gains`), the
    eigenvectors are those of ``covariance``."""
    return _declip_spectrum(covariance, bound, max_iter).covariance


def _declip_jacobian(spectrum: _Declipped) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The derivative of the declipped eigenvalues with respect to the working ones,
    ``J = d lam / d mu = (diag(own) + A Bm')^{-1}``: ``lam_j g_j = mu_j`` where ``g_j``
    depends on ``lam_j`` and on the sums ``s1 = sum lam``, ``s2 = sum lam**2`` (the gamma
    law's mean ``s1 + 2 lam_j`` and variance ``2 s2 + 4 lam_j**2``), so the Jacobian is the
    inverse of a diagonal (``own``) plus a rank-two term (``A`` holds ``lam_j dg_j/ds1`` and
    ``lam_j dg_j/ds2``, ``Bm`` the sums' gradients ``1`` and ``2 lam``). Returns ``own``,
    ``A`` and ``Bm``; derivatives of the gamma closed form by central differences."""
    lam = spectrum.lam
    squared = spectrum.bound_squared
    mean = lam.sum() + 2.0 * lam
    var = 2.0 * float(np.sum(lam * lam)) + 4.0 * lam * lam
    gain = _gain_from_moments(mean, var, squared)
    step_mean, step_var = 1e-5 * mean, 1e-5 * var
    d_mean = (_gain_from_moments(mean + step_mean, var, squared)
              - _gain_from_moments(mean - step_mean, var, squared)) / (2 * step_mean)
    d_var = (_gain_from_moments(mean, var + step_var, squared)
             - _gain_from_moments(mean, var - step_var, squared)) / (2 * step_var)
    own = gain + lam * (2.0 * d_mean + 8.0 * lam * d_var)
    A = np.column_stack([lam * d_mean, 2.0 * lam * d_var])
    Bm = np.column_stack([np.ones_like(lam), 2.0 * lam])
    return own, A, Bm


def _smooth_kernel_factors(kernel: np.ndarray, points: np.ndarray, degree: int = 7,
                           ) -> tuple[np.ndarray, np.ndarray]:
    """``kernel ~ sum_r values_r q_r q_r'`` for a symmetric kernel that is a smooth function
    of ``(points_a, points_b)``: its range is nearly spanned by low-degree polynomials in the
    points, so it is projected on Chebyshev polynomials up to ``degree`` (``O(p**2)``), with
    a full eigendecomposition where that leaves more than ``1e-9`` of it."""
    low, high = float(points.min()), float(points.max())
    t = (2.0 * points - low - high) / max(high - low, 1e-300)
    probes = np.polynomial.chebyshev.chebvander(t, min(degree, len(points) - 1))
    basis, _ = np.linalg.qr(kernel @ probes)
    small = basis.T @ kernel @ basis
    values, vectors = linalg.eigh(0.5 * (small + small.T), check_finite=False)
    components = basis @ vectors
    residual = kernel - (components * values) @ components.T
    if float(np.linalg.norm(residual)) > 1e-9 * float(np.linalg.norm(kernel)):
        if len(points) > _WHOLE_KERNEL_UP_TO:
            return None
        values, components = linalg.eigh(kernel, check_finite=False)
    keep = np.abs(values) > 1e-12 * float(np.max(np.abs(values)))
    return values[keep], components[:, keep]


#: Above this many variables a declipping kernel that the polynomials do not factor is not
#: decomposed whole: each of its up to p components costs a p x p product per weighting
#: (p = 2 000: two hours). It happens where the release's spectrum spans several orders of
#: magnitude (near-collinear variables; 7 % of the kernel outside every polynomial basis
#: tried, linear or logarithmic, up to degree 31), and the correction's own variability is
#: then left out, which the result states.
_WHOLE_KERNEL_UP_TO = 256


#: Where the declipping map is this close to a scaling (``|k F_ab - 1|`` at most this for
#: every pair of eigenvalues), the correction's own variability changes no variance by more
#: than ``(1 + e)**2 - 1`` (2.5 %; measured: a fifth of that, under 0.25 % on a standard
#: error) and is left out: from p = 300 or so with a median bound.
_SCALING_TOLERANCE = 0.0124


def _quadratic_pair_form(H: np.ndarray, c, a, b) -> np.ndarray:
    """``tr((C A_q)**2)`` for every pair, ``C = [[a, c/2], [c/2, b]]`` and the pair's
    weighted Gram ``A_q = [[H_jj, H_jk], [H_jk, H_kk]]`` read off ``H = U diag(q) U'``."""
    half = 0.5 * c
    hj = np.diag(H)[:, None]
    hk = np.diag(H)[None, :]
    m11 = a * hj + half * H
    m12 = a * H + half * hk
    m21 = half * hj + b * H
    m22 = half * H + b * hk
    return m11 * m11 + 2.0 * m12 * m21 + m22 * m22


def _linear_pair_form(H: np.ndarray, c, a, b) -> np.ndarray:
    """``tr(C A_q)`` for every pair (see :func:`_quadratic_pair_form`)."""
    return a * np.diag(H)[:, None] + c * H + b * np.diag(H)[None, :]


def _correction_variance_ratios(spectrum: _Declipped, theta: np.ndarray, *coefficient_sets,
                                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """How much the clipping correction's own dependence on the release changes the
    variance of every pair's statistic: for each ``(c, a, b)`` of ``coefficient_sets``, the
    ratios (sampling, noise) of the variance of the statistic computed on the corrected
    release ``S~ + C(S~)`` to its variance with the correction held fixed.

    The correction maps the working covariance ``W = V diag(mu) V'`` to the shape of
    ``k V diag(lam(mu)) V'`` (``k = sum mu / sum lam``; scale does not move a partial
    correlation, so the change of ``k`` drops out). A statistic ``<M, dS_c>`` of the
    corrected release therefore moves by ``k <D*[M], dS~>`` with ``D`` the derivative of the
    spectral map (Daleckii-Krein): in the eigenbasis, ``F o (V' M V)`` with the divided
    differences ``F_ab = (lam_a - lam_b) / (mu_a - mu_b)`` (``lam``'s own derivative on the
    diagonal) plus the diagonal ``J' diag(V' M V)`` of the cross-derivatives (the adjoint of
    :func:`_declip_jacobian`'s rank-two part). The variance of ``<X, dS~>`` is
    ``2 sum_ab w_ab X~_ab**2`` with ``w = mu mu'`` for Gaussian sampling and ``w = 1`` for
    white noise (up to its diagonal term, which cancels in the ratio to first order).

    With ``V' M V = Z C Z'`` (``Z = [x y]``, ``x = V' u_j``, ``y = V' u_k``,
    ``C = [[a, c/2], [c/2, b]]``), ``sum_ab q_a q_b (V'MV)_ab**2 = tr((C A_q)**2)`` with the
    pair's weighted Gram ``A_q = sum_a q_a z_a z_a'``, read for every pair off
    ``U diag(q) U'`` (``U = theta V``); the kernel ``F o F`` is smooth in the eigenvalues
    and factored in a handful of components (:func:`_smooth_kernel_factors`), so the cost
    is about fifteen ``p x p`` products, shared by the coefficient sets. Checked against
    finite differences of the whole map to 1e-4 (``tests/test_inference.py``). Measured at
    p = 10 (strong graph, 300 samples of 2 000 clipped Gaussian rows): the corrected
    estimates' spread is 1.05-1.14 times the uncorrected ones' for weak edges and 0.96 for
    a 0.9 edge, which this reproduces (1.05-1.10 and 0.99).
    """
    p = theta.shape[0]
    mu, vectors, lam = spectrum.mu, spectrum.vectors, spectrum.lam
    own, A, Bm = _declip_jacobian(spectrum)
    inverse_own = 1.0 / own
    # Divided differences of lam(mu); the own derivative where eigenvalues (nearly) tie.
    gap = mu[:, None] - mu[None, :]
    close = np.abs(gap) <= 1e-7 * float(np.max(mu))
    F = np.where(close, 0.5 * (inverse_own[:, None] + inverse_own[None, :]),
                 (lam[:, None] - lam[None, :]) / np.where(close, 1.0, gap))
    k = float(mu.sum() / lam.sum())
    if float(np.max(np.abs(k * F - 1.0))) <= _SCALING_TOLERANCE:
        return [(np.ones((p, p)), np.ones((p, p))) for _ in coefficient_sets]
    # J' = diag(1/own) + R', R' = -D^-1 Bm M^-T A' D^-1 (Woodbury): rho = R' diag(N~) =
    # sum_r t_r (s_r' diag(N~)).
    small = np.eye(2) + Bm.T @ (inverse_own[:, None] * A)
    t_vectors = -(inverse_own[:, None] * Bm) @ np.linalg.inv(small).T
    s_vectors = inverse_own[:, None] * A
    U = theta @ vectors

    def gram(weights: np.ndarray) -> list[np.ndarray]:
        """``U diag(q) U'`` for each column ``q`` of ``weights``."""
        return [(U * q) @ U.T for q in weights.T]

    factors = _smooth_kernel_factors(F * F, mu)
    if factors is None:
        return None
    values, components = factors
    sums_grams = gram(s_vectors)
    sums = [[_linear_pair_form(H, c, a, b) for H in sums_grams]
            for c, a, b in coefficient_sets]
    del sums_grams
    # Sampling (Gaussian records: w = mu mu') and white noise (w = 1). The kernel's grams
    # are made one at a time and taken into every set's total at once: held together they
    # are one p x p matrix per component (with 2 000 variables and a kernel of many
    # components, gigabytes).
    ratios: list[list[np.ndarray]] = [[] for _ in coefficient_sets]
    for base_weights in (mu, np.ones_like(mu)):
        totals: list[Any] = [0 for _ in coefficient_sets]
        for value, component in zip(values, components.T):
            [H] = gram((base_weights * component)[:, None])
            for index, (c, a, b) in enumerate(coefficient_sets):
                totals[index] = totals[index] + value * _quadratic_pair_form(H, c, a, b)
            del H
        cross = gram((base_weights * base_weights * np.diag(F))[:, None] * t_vectors)
        [base_gram] = gram(base_weights[:, None])
        for index, (c, a, b) in enumerate(coefficient_sets):
            total = totals[index]
            for r in range(2):
                total = total + 2.0 * sums[index][r] * _linear_pair_form(cross[r], c, a, b)
                for s in range(2):
                    total = total + sums[index][r] * sums[index][s] * float(
                        np.sum(base_weights * base_weights * t_vectors[:, r] * t_vectors[:, s]))
            base = _quadratic_pair_form(base_gram, c, a, b)
            ratios[index].append(np.where(base > 0, k * k * total / np.maximum(base, 1e-300),
                                          1.0))
            totals[index] = None
        del cross, base_gram
    return [(first, second) for first, second in ratios]


# ---------------------------------------------------------------------------------------
# the de-biased estimate and its variance
# ---------------------------------------------------------------------------------------


#: A pilot precision of at least this order whose share of non-zero entries is at most
#: _SPARSE_SHARE is multiplied as a sparse matrix: a product with it then costs
#: ``nnz * p`` operations instead of ``p^3``, with the same result up to rounding.
_SPARSE_FROM = 200
_SPARSE_SHARE = 0.05


def _sparse_operator(theta: np.ndarray) -> Any:
    """``theta`` as a compressed-sparse-row matrix when it is large and sparse, else
    ``None`` (the dense products are then used as they are)."""
    p = theta.shape[0]
    if p < _SPARSE_FROM or np.count_nonzero(theta) > _SPARSE_SHARE * p * p:
        return None
    from scipy import sparse

    return sparse.csr_array(theta)


def _sandwich(theta: np.ndarray, middle: np.ndarray) -> np.ndarray:
    """``theta @ middle @ theta`` for symmetric ``theta`` and ``middle``; from the sparse
    ``theta`` when it is sparse (``theta (theta middle)'``)."""
    operator = _sparse_operator(theta)
    if operator is None:
        return theta @ middle @ theta
    return operator @ np.ascontiguousarray((operator @ middle).T)


def _debiased(S: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    T = 2.0 * theta - _sandwich(theta, S)
    T = 0.5 * (T + T.T)
    diagonal = np.diag(T).copy()
    pilot_diagonal = np.diag(theta)
    # A de-biased variance that is not clearly positive means the release is dominated by
    # noise there; the pilot's own diagonal is then the safer standardiser.
    diagonal = np.where(diagonal > 0.25 * pilot_diagonal, diagonal, pilot_diagonal)
    scale = np.sqrt(diagonal)
    r = -T / np.outer(scale, scale)
    np.fill_diagonal(r, 1.0)
    return T, r, diagonal


def _coefficients(r: np.ndarray, diagonal: np.ndarray, null: bool):
    scale = np.sqrt(diagonal)
    c = 1.0 / np.outer(scale, scale)
    if null:
        zero = np.zeros_like(r)
        return c, zero, zero
    return c, r / (2.0 * diagonal)[:, None], r / (2.0 * diagonal)[None, :]


def _null_pilot_coefficients(theta: np.ndarray, diagonal: np.ndarray | None = None):
    """``(c, a, b)`` of the test statistic's linear functional under "no edge", for every
    pair at once, from the pilot with the tested pair taken out.

    Taking the edge ``(j, k)`` out of ``theta`` while keeping how the other variables
    predict ``j`` and ``k`` (their regressions on the rest) gives the null pilot
    ``theta0`` whose rows are ``u0_j = u_j - (theta_jk / theta_kk) u_k`` and
    ``u0_k = u_k - (theta_jk / theta_jj) u_j`` (``u_j = theta e_j``), with
    ``theta0_jj = theta_jj (1 - r**2)``, ``r**2 = theta_jk**2 / (theta_jj theta_kk)``,
    and ``theta0_jk = 0``: for two variables without other neighbours this is the
    independence model with the same variances. Under it the statistic moves by
    ``c0 <u0_j u0_k', dS~>``, ``c0 = 1 / sqrt(theta0_jj theta0_kk)``; its symmetric part in
    the basis ``u_j, u_k`` is ``c' / 2 (u_j u_k' + u_k u_j') + a' u_j u_j' + b' u_k u_k'``
    with ``c' = c0 (1 + beta_j beta_k)``, ``a' = -c0 beta_k``, ``b' = -c0 beta_j``
    (``beta_j = theta_jk / theta_kk``, ``beta_k = theta_jk / theta_jj``), the form
    :func:`_noise_variance` reads. Nothing of it grows with the tested edge's strength.
    """
    d = np.diag(theta)
    beta_j = theta / d[None, :]
    beta_k = theta / d[:, None]
    null_diagonal = np.maximum(1.0 - theta * theta / np.outer(d, d), 1e-12)
    # The statistic is standardised by the de-biased diagonal (``diagonal``; the pilot's own
    # when none is given): the same scale under "no edge" as the estimate's.
    scale = d if diagonal is None else diagonal
    c0 = 1.0 / (np.sqrt(np.outer(scale, scale)) * null_diagonal)
    return c0 * (1.0 + beta_j * beta_k), -c0 * beta_k, -c0 * beta_j


def _noise_variance(theta: np.ndarray, c, a, b, variance: float) -> np.ndarray:
    """``variance (2 ||sym M||_F^2 - sum_l (sym M)_ll^2)`` for every pair at once."""
    operator = _sparse_operator(theta)
    if operator is None:
        G = theta @ theta
        squares = theta * theta
        Q22 = squares.T @ squares
        Q31 = (squares * theta).T @ theta
    else:
        # The same products of a sparse pilot (theta is symmetric).
        G = (operator @ operator).toarray()
        squares = operator.multiply(operator)
        Q22 = (squares.T @ squares).toarray()
        Q31 = (squares.multiply(operator).T @ operator).toarray()
    g = np.diag(G)
    Q40 = np.diag(Q22)
    frobenius = (c * c * (np.outer(g, g) + G * G) / 2 + a * a * (g * g)[:, None]
                 + b * b * (g * g)[None, :] + 2 * c * a * G * g[:, None]
                 + 2 * c * b * G * g[None, :] + 2 * a * b * G * G)
    diagonal = (c * c * Q22 + a * a * Q40[:, None] + b * b * Q40[None, :]
                + 2 * c * a * Q31 + 2 * c * b * Q31.T + 2 * a * b * Q22)
    return variance * np.maximum(2.0 * frobenius - diagonal, 0.0)


def _moments_gaussian(theta: np.ndarray):
    K = theta
    k = np.diag(K)
    return K, k, np.outer(k, k) + 2 * K * K, 3 * k[:, None] * K, 3 * k * k


def _sampling_variance(moments, c, a, b, n: int, excess: float = 0.0) -> np.ndarray:
    """``Var(y' M y) / n`` for Gaussian records, or for elliptical records of excess
    kurtosis ``excess`` (``E[(y'Ay)(y'By)]`` is ``1 + excess`` times the Gaussian's)."""
    M11, M20, M22, M31, M40 = moments
    second = (c * c * M22 + a * a * M40[:, None] + b * b * M40[None, :]
              + 2 * c * a * M31 + 2 * c * b * M31.T + 2 * a * b * M22)
    first = c * M11 + a * M20[:, None] + b * M20[None, :]
    return np.maximum((1.0 + excess) * second - first * first, 0.0) / n


def clipped_excess_kurtosis(released_trace: float, row_norm_bound: float, p: int) -> float:
    """An upper bound on the excess kurtosis of records clipped to ``||y|| <= B``, from
    public figures: for elliptical records ``1 + kappa = p E||y||^4 / ((p + 2)
    (E||y||^2)^2)``, and ``E||y||^4 <= B^2 E||y||^2`` whatever the law, so
    ``kappa <= p B^2 / ((p + 2) tr S) - 1`` with ``tr S`` the released second moment's
    trace. Gaussian records clipped at their median norm give 0 to 0.04 (``p`` 10 to 100);
    heavier tails leave more rows short of the bound (a smaller trace) and a larger
    bound (t5: 0.05 to 0.19, actual 0 to 0.05). A bound far above the rows' norms (a loose
    declared bound) says nothing: the figure is capped at :data:`KURTOSIS_CAP`."""
    if not (released_trace > 0 and row_norm_bound > 0):
        return 0.0
    return min(KURTOSIS_CAP,
               max(0.0, p * row_norm_bound**2 / ((p + 2) * released_trace) - 1.0))


def _missing_extra_variance(theta: np.ndarray, working: np.ndarray, c, a, b,
                            present: np.ndarray, n: int) -> np.ndarray:
    """What values missing completely at random add to the sampling variance of every
    pair's estimate, when they were imputed at 0 and the moments divided by the shares
    present (``present``; a pair's by the product of its two shares).

    With ``u_i = 1 / o_i - 1`` the extra covariance of two corrected entries ``C_ab`` and
    ``C_cd`` is ``(w - 1) (S_ac S_bd + S_ad S_bc + S_ab S_cd) / n``, ``w`` the product of
    ``1 / o_i`` over the variables the two entries share (1 for disjoint entries: their
    records are independent). For the estimate's linear functional ``<M, C>``, ``M = U D
    U^T`` with ``U`` the columns ``j, k`` of ``theta`` and ``D = [[a, c/2], [c/2, b]]``,
    the sum over entries sharing one variable ``i`` is, per ``i``,
    ``4 S_ii (M S M)_ii + 8 (M S)_ii^2 - 12 S_ii M_ii (M S)_ii + 3 S_ii^2 M_ii^2``; over
    entries sharing two, ``2 sum_{i != l} u_i u_l M_il^2 (S_ii S_ll + 2 S_il^2)``, bounded
    here by ``6 tr(D A D A)``, ``A = U^T diag(u S_diag) U`` (Cauchy-Schwarz; conservative).
    ``S`` is the working covariance (the inverse of ``theta``).

    Every term is a sum over ``i`` of ``x_i`` (the pair's rows of ``theta``) and ``y_i``
    (of ``theta S``) in bilinear forms with ``D``: with the rows indexed by ``j`` multiplied
    into one matrix ``F`` and those indexed by ``k`` into ``G``, each is ``F diag(w) G^T``,
    one matrix product (BLAS-3) over the columns ``i`` with a missing share only.
    """
    delta_all = 1.0 / np.asarray(present, dtype=float) - 1.0
    columns = np.flatnonzero(delta_all > 0)
    p = theta.shape[0]
    if columns.size == 0:
        return np.zeros((p, p))
    delta = delta_all[columns]
    s_diag = np.diag(working)[columns]
    operator = _sparse_operator(theta)
    if operator is None:
        rows = {"t": theta[:, columns], "w": (theta @ working)[:, columns]}
    else:
        rows = {"t": theta[:, columns], "w": operator @ working[:, columns]}
    G = _sandwich(theta, working)
    g = np.diag(G)
    weights = {"d": delta, "ds": delta * s_diag, "dss": delta * s_diag * s_diag}
    products: dict[tuple, np.ndarray] = {}

    def pair_sum(weight: str, factors: tuple[tuple[str, int], ...]) -> np.ndarray:
        """``sum_i w_i prod_f F_f[index_f, i]`` for every pair (index 0 = j, 1 = k)."""
        first = tuple(sorted(name for name, index in factors if index == 0))
        second = tuple(sorted(name for name, index in factors if index == 1))
        key = (weight, first, second)
        if key in products:
            return products[key]
        mirrored = (weight, second, first)
        if mirrored in products:
            return products[mirrored].T
        left = np.ones_like(rows["t"])
        for name in first:
            left = left * rows[name]
        right = np.ones_like(rows["t"])
        for name in second:
            right = right * rows[name]
        products[key] = (left * weights[weight]) @ right.T
        return products[key]

    D = ((a, 0.5 * c), (0.5 * c, b))
    G2 = ((g[:, None], G), (G, g[None, :]))
    E = [[sum(D[p_][r] * G2[r][s] * D[s][q] for r in (0, 1) for s in (0, 1))
          for q in (0, 1)] for p_ in (0, 1)]
    pairs = ((0, 0), (0, 1), (1, 0), (1, 1))
    # 4 sum_i u_i s_i (M S M)_ii: (M S M)_ii = x_i' E x_i.
    total = sum(4.0 * E[p_][q] * pair_sum("ds", (("t", p_), ("t", q))) for p_, q in pairs)
    for (p_, q) in pairs:
        for (r, s) in pairs:
            coefficient = D[p_][q] * D[r][s]
            # 8 (M S)_ii^2 = 8 (x' D y)^2, -12 s M_ii (M S)_ii = -12 s (x' D x)(x' D y),
            # 3 s^2 M_ii^2 = 3 s^2 (x' D x)^2.
            total = total + coefficient * (
                8.0 * pair_sum("d", (("t", p_), ("w", q), ("t", r), ("w", s)))
                - 12.0 * pair_sum("ds", (("t", p_), ("t", q), ("t", r), ("w", s)))
                + 3.0 * pair_sum("dss", (("t", p_), ("t", q), ("t", r), ("t", s))))
    A = ((pair_sum("ds", (("t", 0), ("t", 0))), pair_sum("ds", (("t", 0), ("t", 1)))),
         (pair_sum("ds", (("t", 0), ("t", 1))), pair_sum("ds", (("t", 1), ("t", 1)))))
    DA = [[D[p_][0] * A[0][q] + D[p_][1] * A[1][q] for q in (0, 1)] for p_ in (0, 1)]
    trace = DA[0][0] ** 2 + 2 * DA[0][1] * DA[1][0] + DA[1][1] ** 2
    out = (total + 6.0 * trace) / n
    out = 0.5 * (out + out.T)
    return np.maximum(out, 0.0)


# ---------------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EdgeInference:
    """Inference for every pair ``j < k`` of a released second moment.

    Pair arrays are in the order of ``numpy.triu_indices(p, 1)``.

    Attributes
    ----------
    source, target : ndarray of int
        The pair ``(j, k)``, ``j < k``.
    partial_correlation : ndarray
        The de-biased partial correlation.
    std_error : ndarray
        Its standard error (sampling and noise).
    ci_low, ci_high : ndarray
        The interval at ``confidence_level`` (within ``[-1, 1]``).
    p_value : ndarray
        Two-sided p-value of "no edge" (partial correlation 0).
    q_value : ndarray
        False-discovery-adjusted p-value (``fdr_method``).
    selected : ndarray of bool
        ``q_value <= fdr``.
    confidence_level, fdr : float
    fdr_method, method : str
    debiased_precision : ndarray of shape (p, p)
        ``T = 2 Theta - Theta S~ Theta`` on the (clipping-corrected) release.
    pilot_precision : ndarray of shape (p, p)
        The refitted pilot ``Theta``.
    null_std_error : ndarray
        The standard error under "no edge" (used for the p-value).
    noise_share : ndarray
        Share of the variance due to the privacy noise.
    clipping_correction : ndarray of shape (p, p) or None
        What was added to the release to undo the clipping bias (working model).
    diagnostics : dict
        ``pilot`` (how the pilot was obtained), ``alpha``, and for the bootstrap
        ``n_bootstrap`` and ``se_ratio`` (median bootstrap / closed-form standard error).
    """

    source: np.ndarray
    target: np.ndarray
    partial_correlation: np.ndarray
    std_error: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_value: np.ndarray
    q_value: np.ndarray
    selected: np.ndarray
    confidence_level: float
    fdr: float
    fdr_method: str
    method: str
    debiased_precision: np.ndarray
    pilot_precision: np.ndarray
    null_std_error: np.ndarray
    noise_share: np.ndarray
    clipping_correction: np.ndarray | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def n_features(self) -> int:
        """Number of variables ``p``."""
        return int(self.debiased_precision.shape[0])

    def matrix(self, name: str) -> np.ndarray:
        """A pair attribute as a symmetric ``p x p`` matrix (diagonal 0, or 1 for
        ``partial_correlation``; boolean for ``selected``)."""
        values = np.asarray(getattr(self, name))
        p = self.n_features
        out = np.zeros((p, p), dtype=values.dtype)
        out[self.source, self.target] = values
        out[self.target, self.source] = values
        if name == "partial_correlation":
            np.fill_diagonal(out, 1.0)
        return out

    def to_frame(self, names: list[str] | None = None):
        """A DataFrame with one row per pair: ``source, target, partial_correlation,
        ci_low, ci_high, p_value, q_value, selected`` and ``std_error``, strongest evidence
        first (smallest p-value)."""
        import pandas as pd

        p = self.n_features
        labels = [str(j) for j in range(p)] if names is None else [str(x) for x in names]
        if len(labels) != p:
            raise ValueError(f"names must have {p} entries; got {len(labels)}")
        frame = pd.DataFrame({
            "source": [labels[j] for j in self.source],
            "target": [labels[k] for k in self.target],
            "partial_correlation": self.partial_correlation,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_value": self.p_value,
            "q_value": self.q_value,
            "selected": self.selected,
            "std_error": self.std_error,
        })
        order = np.lexsort((-np.abs(self.partial_correlation), self.p_value))
        return frame.iloc[order].reset_index(drop=True)


# ---------------------------------------------------------------------------------------
# the entry point
# ---------------------------------------------------------------------------------------


#: The steps already computed in this edge_inference call (see _shared_step), or None.
_SHARED_STEPS: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "dpggm_inference_shared_steps", default=None)


@contextlib.contextmanager
def _sharing_steps() -> Any:
    """Within it, :func:`_shared_step` computes a step once per set of equal inputs: the
    two passes of ``clipping_correction="intervals"`` (the corrected estimates, the tests
    on the release as clipped) validate, solve and refit the same pilot on the same
    release."""
    token = _SHARED_STEPS.set([])
    try:
        yield
    finally:
        _SHARED_STEPS.reset(token)


#: The one part an edge_inference pass computes ("estimates" or "tests"), or None for both.
_ONLY_PART: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "dpggm_inference_only_part", default=None)


@contextlib.contextmanager
def _only_part(part: str) -> Any:
    """Within it, :func:`edge_inference` computes only ``part``: "estimates" (the standard
    errors and intervals; the p-values are left NaN) or "tests" (the null standard errors,
    p-values and q-values; the others NaN) -- for a pass whose other part is discarded."""
    token = _ONLY_PART.set(part)
    try:
        yield
    finally:
        _ONLY_PART.reset(token)


def _wanted_parts(method: str, test: str) -> tuple[bool, bool]:
    """Whether this pass computes the estimates' standard errors, and the tests (the
    bootstrap and the Wald test need both)."""
    part = _ONLY_PART.get()
    if part is None or method == "bootstrap":
        return True, True
    return part == "estimates" or test == "wald", part == "tests"


def _shared_step(name: str, arrays: tuple, values: tuple, compute: Any) -> Any:
    """``compute()``, or what it returned for the same ``name``, equal ``arrays`` and
    ``values`` earlier under :func:`_sharing_steps` (the same deterministic computation
    on the same inputs: the same result)."""
    done = _SHARED_STEPS.get()
    if done is None:
        return compute()
    for entry, entry_arrays, entry_values, result in done:
        if entry == name and entry_values == values and all(
                a.shape == b.shape and np.array_equal(a, b)
                for a, b in zip(entry_arrays, arrays)):
            return result
    result = compute()
    done.append((name, arrays, values, result))
    return result


def _support_entries(vectors: np.ndarray, values: np.ndarray, support: np.ndarray,
                     chunk: int = 512) -> np.ndarray:
    """``(vectors * values) @ vectors.T`` on ``support`` (symmetric; diagonal included)
    and 0 elsewhere, for ``s`` entries in ``O(s p)`` instead of the whole product."""
    p = vectors.shape[0]
    rows, cols = np.nonzero(np.triu(support | np.eye(p, dtype=bool)))
    weighted = vectors * values
    entries = np.empty(rows.size)
    for start in range(0, rows.size, chunk):
        part = slice(start, start + chunk)
        entries[part] = np.einsum("ek,ek->e", weighted[rows[part]], vectors[cols[part]])
    out = np.zeros((p, p))
    out[rows, cols] = entries
    out[cols, rows] = entries
    return out


# over 120 lines: 83 of them are the numpydoc documentation of its options and of the
# estimand; the computation (about 110 lines) reads as one sequence of steps 1-4.
def edge_inference(
    noisy_covariance: Any,
    *,
    n_samples: int,
    noise_variance: float,
    precision: Any = None,
    alpha: Any = "auto",
    clipping: ClippingModel | None = None,
    clipping_correction: str = "intervals",
    noise_distribution: str = "gaussian",
    present: Any = None,
    confidence_level: float = 0.9,
    fdr: float = 0.1,
    fdr_method: str = "bh",
    method: str = "closed-form",
    test: str = "null-pilot",
    excess_kurtosis: Any = "bound",
    tail_allowance: float = TAIL_ALLOWANCE,
    correction_variance: bool = True,
    n_bootstrap: int = 200,
    random_state: int = 0,
) -> EdgeInference:
    """Partial correlations with intervals, p-values and FDR-controlled edges, from a
    released second moment.

    Parameters
    ----------
    noisy_covariance : array_like of shape (p, p)
        The release ``S~`` (symmetric, possibly indefinite): second moment of the clipped,
        centered records plus symmetric noise.
    n_samples : int
        Number of records ``n`` behind the release.
    noise_variance : float
        Variance of every noise entry of the upper triangle, diagonal included (``sigma**2``
        for the Gaussian mechanism; ``2 b**2`` for Laplace noise of scale ``b``); ``0`` for
        a non-private matrix.
    precision : array_like of shape (p, p), optional
        A pilot precision already solved on this release (e.g. ``GraphicalLasso.precision_``);
        only its zero pattern and its values as a start are used. Default: the graphical
        lasso at ``alpha``.
    alpha : float or "auto", default="auto"
        Penalty of the pilot when ``precision`` is not given; ``"auto"`` is
        :func:`noise_calibrated_alpha`.
    clipping : ClippingModel, optional
        How the records were bounded. With a row-norm bound, the shrinkage of the partial
        correlations that clipping causes is removed under a Gaussian working model (the
        estimand is then the population's partial correlations); without it the estimand
        is that of the clipped records. Recommended whenever rows were clipped onto a
        ball (it changes a 0.45 partial correlation by 0.03 at p = 10 with a median bound).
    clipping_correction : {"intervals", "all"}, default="intervals"
        What the correction (with ``clipping``) applies to. ``"intervals"``: the estimate
        and its interval are corrected, while the test of "no edge" (p-value, q-value,
        selection) reads the release as clipped, because clipping keeps a zero partial
        correlation at zero (within 0.002 in our measurements) and the correction's own
        variability only costs power (F1 0.92 against 0.71 on the 30-node raw chain).
        ``"all"``: the tests use the corrected release too.
    noise_distribution : {"gaussian", "laplace"}, default="gaussian"
        The law of the release's noise entries. With ``"laplace"`` (a pure-DP release) the
        p-values take the noise part of a null statistic as a Laplace variable of the same
        variance (a Gaussian scale mixture with exponential mixing, integrated by
        Gauss-Laguerre quadrature) plus the Gaussian sampling part: exact where one noise
        entry dominates, whose heavy tails the normal approximation misses (measured FDRs
        of 0.14-0.17 at a target of 0.1 without it). Intervals stay normal.
    present : array_like of shape (p,), optional
        The shares of values present per variable, when missing values were imputed at 0
        and every moment divided by the shares present (a pair's by the product of its
        two): the sampling variance then gains what values missing completely at random
        add (:func:`_missing_extra_variance`). The noise variance given must already be
        the largest of the corrected entries'.
    confidence_level : float in (0, 1), default=0.9
    fdr : float in (0, 1), default=0.1
        Target false-discovery rate of the selected edges.
    fdr_method : {"bh", "by"}, default="bh"
        Benjamini-Hochberg, or Benjamini-Yekutieli (valid under any dependence, more
        conservative).
    method : {"closed-form", "bootstrap"}, default="closed-form"
        Standard errors (and bias) from the delta method, or from a parametric bootstrap
        of the whole mechanism (``n_bootstrap`` replicates).
    test : {"null-pilot", "wald", "pilot"}, default="null-pilot"
        The standard error the p-value divides by. ``"null-pilot"``: the statistic's
        standard error under "no edge", from the pilot with the tested pair taken out
        (:func:`_null_pilot_coefficients`: the pair's regressions on the other variables
        kept), so that the null distribution does not depend on the edge's own strength
        and power rises with it. ``"wald"``: the standard error at the estimate.
        ``"pilot"``: under "no edge" but from the pilot that contains the pair (the test of
        earlier versions: its standard error grows with the edge's strength, e.g. 0.185
        against a true 0.073 for an isolated 0.6 edge, and strong edges went unselected).
        See ``docs/inference.md`` for the measurements.
    excess_kurtosis : float >= 0 or "bound", default="bound"
        Excess kurtosis of the (clipped) records in the sampling variances (0: Gaussian).
        ``"bound"``: the largest any record law allows given the public row-norm bound and
        the released trace (:func:`clipped_excess_kurtosis`; 0 without a row-norm bound):
        0 to 0.04 for Gaussian records clipped at their median norm, more for heavy tails.
    tail_allowance : float >= 0, default=TAIL_ALLOWANCE
        With a clipping correction, the outer end of each interval (away from zero) is
        extended by ``tail_allowance |r| (1 - r**2)``: the further shrinkage that records
        with heavy tails (t with 5 degrees of freedom) undergo beyond the Gaussian working
        model. 0 trusts the working model.
    correction_variance : bool, default=True
        With a clipping correction, whether the standard errors include the correction's
        own variability: the correction is estimated from the same release, so it moves
        with the release's sampling error and noise (by the delta method through the
        declipping map, :func:`_correction_variance_ratios`; at p = 10 it widens the weak
        edges' intervals by 5-10 %, and narrows a 0.9 edge's). ``False`` holds the
        correction fixed (earlier versions).
    n_bootstrap : int, default=200
    random_state : int, default=0
        Seed of the bootstrap's simulations. They draw synthetic records from a model
        fitted to the release (public quantities only), so the seed has no bearing on
        privacy; it makes the post-processing reproducible.

    Returns
    -------
    EdgeInference
        Estimate, standard error, interval, p-value, q-value and selection for every pair
        ``j < k`` (``to_frame()`` for a table), the de-biased precision and the pilot.

    Raises
    ------
    ValueError, TypeError
        A bad argument, named in the message.

    Privacy
    -------
    Post-processing of the release: it reads the released matrix and the public
    description of its noise and bounds, never the data, and spends no budget. The
    simulations draw synthetic records from a model fitted to the release.

    Notes
    -----
    The closed form costs a few ``p x p`` matrix products and one Newton refit of the
    pilot (0.05 s at p = 100); the bootstrap 200 refits (about 5 s at p = 100). See the
    module docstring and ``docs/inference.md`` for the derivations and the calibration.

    Examples
    --------
    >>> import numpy as np
    >>> from dpggm.solvers import edge_inference
    >>> theta = np.eye(4) + np.diag([-0.4] * 3, 1) + np.diag([-0.4] * 3, -1)
    >>> result = edge_inference(np.linalg.inv(theta), n_samples=5000, noise_variance=1e-6)
    >>> frame = result.to_frame(["a", "b", "c", "d"])
    >>> sorted(zip(frame.source[frame.selected], frame.target[frame.selected]))
    [('a', 'b'), ('b', 'c'), ('c', 'd')]
    """
    S = check_square_symmetric(noisy_covariance, name="noisy_covariance")
    p = S.shape[0]
    n = _positive_int(n_samples, "n_samples", minimum=2)
    variance = _nonnegative(noise_variance, "noise_variance")
    level = _open_unit(confidence_level, "confidence_level")
    fdr = _open_unit(fdr, "fdr")
    fdr_method = _choice(fdr_method, "fdr_method", FDR_METHODS)
    method = _choice(method, "method", _METHODS)
    test = _choice(test, "test", TESTS)
    replicates = _positive_int(n_bootstrap, "n_bootstrap", minimum=10)
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise TypeError(f"random_state must be an integer seed; got {random_state!r}")
    if clipping is not None:
        if not isinstance(clipping, ClippingModel):
            raise TypeError(f"clipping must be a ClippingModel or None; got {type(clipping).__name__}")
        clipping = clipping.check(p)
    clipping_correction = _choice(clipping_correction, "clipping_correction",
                                  ("intervals", "all"))
    noise_distribution = _choice(noise_distribution, "noise_distribution",
                                 ("gaussian", "laplace"))
    if noise_distribution == "laplace" and method == "bootstrap":
        raise ValueError("method='bootstrap' simulates Gaussian noise; use the closed form "
                         "for a release with noise_distribution='laplace'")
    if excess_kurtosis == "bound":
        excess = (clipped_excess_kurtosis(float(np.trace(S)), clipping.row_norm_bound, p)
                  if clipping is not None and clipping.row_norm_bound is not None else 0.0)
    else:
        excess = _nonnegative(excess_kurtosis, "excess_kurtosis")
    allowance = _nonnegative(tail_allowance, "tail_allowance")
    if not isinstance(correction_variance, bool | np.bool_):
        raise TypeError(f"correction_variance must be True or False; got {correction_variance!r}")
    if clipping is not None and clipping_correction == "intervals":
        common = dict(n_samples=n, noise_variance=variance, precision=precision, alpha=alpha,
                      present=present, noise_distribution=noise_distribution,
                      confidence_level=level, fdr=fdr, fdr_method=fdr_method, method=method,
                      test=test, n_bootstrap=replicates, random_state=random_state,
                      excess_kurtosis=excess, tail_allowance=allowance,
                      correction_variance=bool(correction_variance))
        # The two passes read the same release and refit the same pilot: done once.
        with _sharing_steps():
            with _only_part("estimates"):
                corrected = edge_inference(S, clipping=clipping, clipping_correction="all",
                                           **common)
            with _only_part("tests"):
                tests = edge_inference(S, clipping=None, **common)
        combined = replace(
            corrected, p_value=tests.p_value, q_value=tests.q_value, selected=tests.selected,
            null_std_error=tests.null_std_error,
            diagnostics={**corrected.diagnostics,
                         "tests": "on the release as clipped (no clipping correction)"})
        return _not_estimable_in_either(combined, corrected, tests, fdr, fdr_method)
    shares = None
    if present is not None:
        shares = np.asarray(present, dtype=float)
        if shares.shape != (p,) or not np.all(np.isfinite(shares)) or np.any(shares <= 0) \
                or np.any(shares > 1):
            raise ValueError(f"present must hold {p} shares in (0, 1]; got {present!r}")
        if np.all(shares == 1.0):
            shares = None
    noise_std = math.sqrt(variance)
    if precision is not None:
        start = check_square_symmetric(precision, name="precision")
        if start.shape != (p, p):
            raise ValueError(
                f"precision must have the shape of noisy_covariance {(p, p)}; got {start.shape}"
            )
        with single_threaded_blas(p):
            definite = _shared_step("positive definite", (start,), (),
                                    lambda: _cholesky(start) is not None)
        if not definite:
            raise ValueError("precision must be positive definite (a solved pilot precision)")
        alpha_used = None
    else:
        if isinstance(alpha, str):
            if alpha != "auto":
                raise ValueError(f"alpha must be a number >= 0 or 'auto'; got {alpha!r}")
            alpha_used = noise_calibrated_alpha(S, noise_std=noise_std, n_samples=n)
        else:
            alpha_used = _nonnegative(alpha, "alpha")

    with single_threaded_blas(p):
        floor = max(noise_std, 1e-12 * float(np.max(np.abs(np.diag(S)))))
        if precision is None:
            start = _shared_step("graphical lasso", (S,), (alpha_used, floor),
                                 lambda: _glasso_pilot(S, alpha_used, floor))
        # The refit's inverse is the working covariance (the Newton iteration's last W).
        theta, pilot_note, working, lift = _shared_step("refit", (S, start), (floor,),
                                                        lambda: _refit_pilot(S, start, floor))
        correction = None
        if clipping is not None and clipping.row_norm_bound is not None:
            # Partial correlations do not change with the scale of the matrix and the
            # declipping map is close to a scaling: only its change of shape is added to
            # the release, in the release's own scale, so that the sampling and noise
            # variances (of the release) keep their scale.
            spectrum = _declip_spectrum(working, clipping.row_norm_bound)
            pre_clip = spectrum.covariance
            ratio = np.trace(working) / np.trace(pre_clip)
            shaped = pre_clip * ratio
            correction = shaped - working
            S = S + correction
            # The inverse of shaped on the pilot's support, from its eigenpairs.
            start = _support_entries(spectrum.vectors, 1.0 / (spectrum.lam * ratio),
                                     theta != 0)
            if _cholesky(start) is None:
                start = np.diag(1.0 / np.diag(shaped))
            theta, pilot_note, _, lift = _refit_pilot(S, start, floor)
        else:
            pre_clip = working
            spectrum = None
        # De-biased against the release the pilot was fitted to: the variances a pair
        # repair raised enter as they were raised (raising a variance shrinks every
        # partial correlation of its variable towards zero, so the repair can cost power
        # but not make edges). Against the release as it was, the raises reappear in
        # every pair near a raised variable through the pilot's large entries there:
        # partial correlations of +-1 between variables 6 to 17 apart of a 1 000-variable
        # chain, 79 % of the selected edges false.
        T, r, diagonal = _debiased(S if lift is None else S + np.diag(lift), theta)
        moments = _moments_gaussian(theta)
        rows, cols = np.triu_indices(p, 1)
        estimate = r[rows, cols]
        # A pass of clipping_correction="intervals" computes only the part of it that is
        # kept (the estimates' standard errors, or the tests'); a p x p matrix is freed as
        # soon as its pairs are read off (each is 72 MB at p = 3 000).
        wanted_estimates, wanted_tests = _wanted_parts(method, test)
        se = share = np.full(rows.size, np.nan)
        left_out = None
        # The correction is estimated from the same release: its own variability moves the
        # corrected estimate too (at p = 10 its spread is 5-14 % larger for weak edges than
        # with the correction held fixed, 4 % smaller for a 0.9 edge).
        vary = spectrum is not None and bool(correction_variance)
        gain = np.ones(rows.size)
        if wanted_estimates:
            c, a, b = _coefficients(r, diagonal, null=False)
            sampling = _sampling_variance(moments, c, a, b, n, excess)
            noise = _noise_variance(theta, c, a, b, variance)
            if shares is not None:
                sampling = sampling + _missing_extra_variance(theta, working, c, a, b,
                                                              shares, n)
            ratios = _correction_variance_ratios(spectrum, theta, (c, a, b)) if vary else None
            if vary and ratios is None:
                left_out = _CORRECTION_VARIANCE_LEFT_OUT
            if ratios is not None:
                [(ratio_sampling, ratio_noise)] = ratios
                held = sampling + noise
                sampling, noise = sampling * ratio_sampling, noise * ratio_noise
                gain = np.sqrt((sampling + noise) / np.maximum(held, 1e-300))[rows, cols]
                del held, ratio_sampling, ratio_noise
            del c, a, b
            se = np.sqrt(sampling + noise)[rows, cols]
            share = (noise / np.maximum(sampling + noise, 1e-300))[rows, cols]
            if test == "wald":
                wald_parts = (sampling[rows, cols], noise[rows, cols])
            del sampling, noise
        se0 = np.full(rows.size, np.nan)
        null_parts = None
        if wanted_tests and test != "wald":
            if test == "pilot":
                c0, a0, b0 = _coefficients(r, diagonal, null=True)
                null_sampling = _sampling_variance(moments, c0, a0, b0, n, excess)
            else:
                c0, a0, b0 = _null_pilot_coefficients(theta, diagonal)
                # Gaussian records under "no edge": Var(r) = 1 / n (the pair's null pilot
                # makes u0_j' S u0_k vanish); clipped records have shorter tails.
                null_sampling = np.full((p, p), (1.0 + excess) / n)
            null_noise = _noise_variance(theta, c0, a0, b0, variance)
            if shares is not None:
                null_sampling = null_sampling + _missing_extra_variance(
                    theta, working, c0, a0, b0, shares, n)
            ratios = _correction_variance_ratios(spectrum, theta, (c0, a0, b0)) if vary else None
            if vary and ratios is None:
                left_out = _CORRECTION_VARIANCE_LEFT_OUT
            if ratios is not None:
                [(null_ratio_sampling, null_ratio_noise)] = ratios
                null_sampling = null_sampling * null_ratio_sampling
                null_noise = null_noise * null_ratio_noise
            del c0, a0, b0
            null_variance = null_sampling + null_noise
            se0 = np.sqrt(null_variance)[rows, cols]
            null_parts = (null_sampling[rows, cols], null_noise[rows, cols])
            del null_variance, null_sampling, null_noise
        del r, moments
        diagnostics: dict[str, Any] = {"pilot": pilot_note, "alpha": alpha_used}
        smallest = _smallest_eigenvalue_of_inverse(theta)
        if smallest < NEAR_SINGULAR_SHARE * floor:
            # The completion the refit found is singular within the release's noise: the
            # variables are too close to collinear for this budget and size, and the
            # refit's estimates pile up at +-1 with small standard errors (a 300-variable
            # raw chain, neighbours correlated at up to 0.998, n = 100 000, zCDP 1: 6 252
            # edges selected, 96 % of them false, 18 % of the true edges' intervals
            # covering their value). The numbers are returned, and said not to hold.
            diagnostics["near_singular_completion"] = smallest
            warnings.warn(UnreliableInferenceWarning(
                "the edge inference does not hold for this release: its completion on the "
                f"pilot's support has smallest eigenvalue {smallest:.3g}, below a tenth of "
                f"the noise standard deviation {floor:.3g} (variables too close to collinear "
                "for this "
                "budget and number of records); partial correlations, intervals and "
                "q-values are not reliable -- use a larger budget or fewer, less redundant "
                "variables"), stacklevel=2)
        if left_out is not None:
            diagnostics["correction_variance"] = left_out
        if method == "bootstrap":
            # The replicates simulate public quantities only (post-processing), so a seeded
            # stream is what makes the interval reproducible; no release noise comes from it.
            rng = np.random.default_rng(int(random_state))
            boot_se, bias = _bootstrap(
                theta=theta, working=working, pre_clip=pre_clip, correction=correction,
                clipping=clipping, n=n, variance=variance, replicates=replicates, rng=rng,
            )
            # The replicates apply the release's correction as it is (held fixed): its own
            # variability enters as in the closed form.
            boot_se = boot_se * gain
            diagnostics.update(
                n_bootstrap=replicates,
                se_ratio=float(np.median(boot_se / np.maximum(se, 1e-300))),
                closed_form_std_error=se,
                bootstrap_bias=bias,
            )
            estimate = estimate - bias
            se = boot_se
            se0 = boot_se
        # A variable whose variance the pair repair raised: the release puts one of its
        # correlations at +-1 or beyond, which only noise larger than what the others
        # leave of its variance can do (neighbours of a long chain, correlated at 0.998);
        # the release says nothing about its partial correlations, and their estimates
        # and standard errors (from a pilot near singular there) are not to be trusted:
        # such pairs get an infinite standard error (interval [-1, 1], p-value 1). On a
        # 1 000-variable chain (n = 50 000, zCDP 1) they were 86 % of the selected edges.
        not_estimable = None
        if lift is not None:
            raised = lift > 0
            not_estimable = raised[rows] | raised[cols]
            se = np.where(not_estimable, np.inf, se)
            se0 = np.where(not_estimable, np.inf, se0)
            diagnostics["not_estimable"] = not_estimable
    estimate = np.clip(estimate, -1.0, 1.0)
    quantile = float(stats.norm.ppf(0.5 + level / 2))
    ci_low = estimate - quantile * se
    ci_high = estimate + quantile * se
    if correction is not None and allowance > 0:
        # The clipping correction's working model is Gaussian; heavier tails (and the box
        # winsorising them) shrink a partial correlation r further, by about
        # kappa r (1 - r^2) (kappa 0.013-0.024 at the median for t5 records, 0 for
        # Gaussian ones): the interval's outer end is extended by that much.
        extension = allowance * np.abs(estimate) * (1.0 - estimate**2)
        ci_high = ci_high + np.where(estimate > 0, extension, 0.0)
        ci_low = ci_low - np.where(estimate < 0, extension, 0.0)
        diagnostics["tail_allowance"] = allowance
    diagnostics["excess_kurtosis"] = excess
    ci_low = np.clip(ci_low, -1.0, 1.0)
    ci_high = np.clip(ci_high, -1.0, 1.0)
    if test == "wald":
        # The standard error at the estimate in place of the null one.
        se0 = se
        null_parts = wald_parts
    if not wanted_tests:
        p_value = q_value = np.full(rows.size, np.nan)
    elif noise_distribution == "laplace":
        p_value = _laplace_noise_p_values(np.abs(estimate), *null_parts)
    else:
        p_value = 2.0 * stats.norm.sf(np.abs(estimate) / np.maximum(se0, 1e-300))
    if wanted_tests:
        if not_estimable is not None:
            p_value = np.where(not_estimable, 1.0, p_value)
        q_value = false_discovery_control(p_value, method=fdr_method)
    return EdgeInference(
        source=rows, target=cols, partial_correlation=estimate, std_error=se,
        ci_low=ci_low, ci_high=ci_high, p_value=p_value, q_value=q_value,
        selected=q_value <= fdr, confidence_level=level, fdr=fdr, fdr_method=fdr_method,
        method=method, debiased_precision=T, pilot_precision=theta, null_std_error=se0,
        noise_share=share, clipping_correction=correction, diagnostics=diagnostics,
    )


def _not_estimable_in_either(combined: EdgeInference, corrected: EdgeInference,
                             tests: EdgeInference, fdr: float, fdr_method: str) -> EdgeInference:
    """The pairs one of the two passes found not estimable, not estimable in both: an
    infinite standard error, the interval [-1, 1], p-value 1."""
    masks = [m for m in (corrected.diagnostics.get("not_estimable"),
                         tests.diagnostics.get("not_estimable")) if m is not None]
    if not masks:
        return combined
    mask = np.logical_or.reduce(masks)
    p_value = np.where(mask, 1.0, combined.p_value)
    q_value = false_discovery_control(p_value, method=fdr_method)
    return replace(
        combined, std_error=np.where(mask, np.inf, combined.std_error),
        null_std_error=np.where(mask, np.inf, combined.null_std_error),
        ci_low=np.where(mask, -1.0, combined.ci_low), ci_high=np.where(mask, 1.0, combined.ci_high),
        p_value=p_value, q_value=q_value, selected=q_value <= fdr,
        diagnostics={**combined.diagnostics, "not_estimable": mask})


_CORRECTION_VARIANCE_LEFT_OUT = (
    "left out: the declipping map's kernel does not factor (a release spectrum over many "
    "orders of magnitude), so the standard errors hold the clipping correction fixed")


#: Gauss-Laguerre nodes of the Laplace noise's p-values (the tail probabilities that false-
#: discovery control reads, below 0.05, are exact to 1e-6 relative with 80).
_LAPLACE_NODES = 80


def _laplace_noise_p_values(statistic: np.ndarray, sampling: np.ndarray,
                            noise: np.ndarray) -> np.ndarray:
    """Two-sided p-values of ``statistic`` under a Gaussian part of variance ``sampling``
    plus a Laplace part of variance ``noise``: the Laplace law is the Gaussian scale
    mixture ``N(0, noise * W)``, ``W ~ Exp(1)``, so the tail is
    ``E_W[2 Phi(-t / sqrt(sampling + noise W))]``, integrated by Gauss-Laguerre."""
    nodes, weights = np.polynomial.laguerre.laggauss(_LAPLACE_NODES)
    out = np.empty_like(statistic, dtype=float)
    for start in range(0, statistic.size, 20_000):
        part = slice(start, start + 20_000)
        variance = sampling[part, None] + noise[part, None] * nodes[None, :]
        tails = 2.0 * stats.norm.sf(statistic[part, None]
                                    / np.sqrt(np.maximum(variance, 1e-300)))
        out[part] = tails @ weights
    return np.clip(out, 0.0, 1.0)


#: Records simulated per bootstrap replicate at most; beyond, the replicate's deviation
#: from the working model's clipped covariance is scaled by sqrt(m / n).
_BOOTSTRAP_ROWS = 4000


def _bootstrap(*, theta, working, pre_clip, correction, clipping, n, variance, replicates,
               rng):
    """Parametric bootstrap of the closed-form pipeline under the fitted working model.

    Each replicate draws Gaussian records with the pre-clipping covariance, clips them as
    the mechanism does (box, ball, recentering, ball), forms their second moment, adds the
    noise, applies the same clipping correction and refits the pilot on the same support;
    the replicates' spread is the standard error and their mean minus the model's partial
    correlations the bias."""
    p = theta.shape[0]
    support = theta != 0
    factor = _cholesky(pre_clip)
    model_precision = _inverse_from_cholesky(factor)
    scale = np.sqrt(np.diag(model_precision))
    model_r = -model_precision / np.outer(scale, scale)
    rows, cols = np.triu_indices(p, 1)
    upper = np.triu_indices(p)
    m = min(n, _BOOTSTRAP_ROWS)
    shrink = math.sqrt(m / n)
    location = clipping.mean if clipping is not None else np.zeros(p)
    draws = np.empty((replicates, len(rows)))
    for b in range(replicates):
        records = location + rng.standard_normal((m, p)) @ factor.T
        if clipping is not None:
            records = clipping.clip(records)
        records = records - records.mean(axis=0)
        moment = records.T @ records / m
        if m < n:
            moment = working + shrink * (moment - working)
        if variance > 0:
            noise = np.zeros((p, p))
            noise[upper] = rng.normal(0.0, math.sqrt(variance), len(upper[0]))
            moment = moment + noise + np.triu(noise, 1).T
        if correction is not None:
            moment = moment + correction
        try:
            refit, _, _ = support_refit(moment, support, start=theta, tol=1e-8)
        except NoSolutionError:
            refit = theta
        _, r_b, _ = _debiased(moment, refit)
        draws[b] = r_b[rows, cols]
    se = draws.std(axis=0, ddof=1)
    bias = draws.mean(axis=0) - model_r[rows, cols]
    return se, bias


# ---------------------------------------------------------------------------------------
# what a budget can detect
# ---------------------------------------------------------------------------------------


#: Per-coordinate variance of a Gaussian column rescaled by its median +- 5 MADs onto
#: ``[-1, 1]`` (``PrivateGraph``'s ranges): ``1 / (5 Phi^{-1}(3/4))**2``.
RESCALED_VARIANCE = 1.0 / (5.0 * float(stats.norm.ppf(0.75))) ** 2

#: Default ratio of the noise standard error of a partial correlation to that of an edge
#: between two variables that have no other neighbours (what the rest of the graph adds).
#: 1: the stated figure is for isolated edges of a sparse graph; an edge between variables
#: the others predict well needs more, which ``neighbour_r2`` describes.
NOISE_AMPLIFICATION = 1.0

#: The share of an edge's variables' variance the other variables predict (R**2, the pair's
#: partner left out) at which the second detectable figure is stated.
PREDICTED_R2 = 0.5

#: Range of the edges' |partial correlation| assumed by :func:`detectable_partial_correlation`
#: to predict how many edges will be selected (spread log-uniformly over it).
EDGE_STRENGTHS = (0.01, 0.5)

#: Other neighbours of each variable of the pair in the model of a predicted pair.
_MODEL_NEIGHBOURS = 4


def expected_row_norm_bound(n_features: int, *, norm_quantile: float = 0.5,
                            record_variance: float = RESCALED_VARIANCE) -> float:
    """The row-norm bound a ``norm_quantile`` rule is expected to choose, before the data.

    Assumes ``p`` roughly independent columns of per-coordinate variance
    ``record_variance`` (Gaussian columns mapped by median +- 5 MADs give
    :data:`RESCALED_VARIANCE`): ``||z||^2 ~ v chi^2_p`` and the bound is
    ``sqrt(v F^{-1}_{chi^2_p}(q))``. Correlated columns spread the norms more and lower
    the median a little (by 1 to 4 % on the calibration graphs).

    Notes
    -----
    Privacy: public parameters only.
    """
    p = _positive_int(n_features, "n_features", minimum=2)
    q = _open_unit(norm_quantile, "norm_quantile")
    v = _real(record_variance, "record_variance")
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"record_variance must be a finite number > 0; got {v!r}")
    return math.sqrt(v * float(stats.chi2.ppf(q, p)))


def partial_correlation_noise(noise_sigma: float, n_features: int, *,
                              row_norm_bound: float, norm_quantile: float = 0.5,
                              record_variance: float = RESCALED_VARIANCE,
                              missing_share: float = 0.0) -> float:
    """The noise standard error of one partial correlation under "no edge" (two
    variables without other neighbours): ``sigma / present**2`` over the clipped
    per-coordinate variance, as :func:`detectable_partial_correlation` models it (the
    rows' values present span ``p (1 - missing_share)`` coordinates).

    Notes
    -----
    Privacy: public parameters only.
    """
    p = _positive_int(n_features, "n_features", minimum=2)
    present = 1.0 - _real(missing_share, "missing_share")
    span = max(int(round(p * present)), 1)
    v = _real(record_variance, "record_variance")
    clipped = v * float(_radial_gains(np.full(span, v), float(row_norm_bound) ** 2)[0])
    return _nonnegative(noise_sigma, "noise_sigma") / present**2 / clipped


def _pair_model(t: float, neighbour_r2: float, variance: float) -> np.ndarray:
    """The precision of a model with an edge of partial correlation ``t`` between
    variables 0 and 1, every variable of variance ``variance``: alone
    (``neighbour_r2 = 0``), or each of the two predicted with ``R**2 = neighbour_r2`` by
    :data:`_MODEL_NEIGHBOURS` independent neighbours of its own (the pair's residuals
    correlated ``t``, so the partial correlation given everything else is ``t``)."""
    if neighbour_r2 <= 0:
        return np.array([[1.0, -t], [-t, 1.0]]) / (variance * (1.0 - t * t))
    m = _MODEL_NEIGHBOURS
    size = 2 + 2 * m
    covariance = np.eye(size)
    beta = math.sqrt(neighbour_r2 / m)
    covariance[0, 2:2 + m] = covariance[2:2 + m, 0] = beta
    covariance[1, 2 + m:] = covariance[2 + m:, 1] = beta
    covariance[0, 1] = covariance[1, 0] = t * (1.0 - neighbour_r2)
    return np.linalg.inv(covariance * variance)


def _clipped_partial(t: float, neighbour_r2: float, variance: float, span: int,
                     bound_squared: float) -> float:
    """The partial correlation of the clipped records for an edge of population partial
    correlation ``t`` (:func:`_pair_model` with per-coordinate variance ``variance``, beside
    ``span`` minus its size independent coordinates of that variance), rows shrunk onto the
    ball of radius ``sqrt(bound_squared)``: the eigenvalues scale by their radial gains
    (:func:`_radial_gains`). The test of "no edge" reads the release as clipped, so this is
    the strength it sees (0.93 t at p = 10, 0.97 t at p = 30 with a median bound)."""
    if t == 0.0:
        return 0.0
    covariance = np.linalg.inv(_pair_model(t, neighbour_r2, variance))
    lam, vectors = np.linalg.eigh(covariance)
    everything = np.concatenate([lam, np.full(max(span - len(lam), 0), variance)])
    gains = _radial_gains(everything, bound_squared)[:len(lam)]
    precision = np.linalg.inv((vectors * (lam * gains)) @ vectors.T)
    return float(-precision[0, 1] / math.sqrt(precision[0, 0] * precision[1, 1]))


def _edge_standard_errors(t: float, n: int, sigma: float, clipped_variance: float,
                          amplification: float, *, present: float = 1.0,
                          neighbour_r2: float = 0.0) -> tuple[float, float]:
    """The test's null standard error and the estimate's standard error for an edge of
    partial correlation ``t`` (:func:`_pair_model`; records of per-coordinate variance
    ``clipped_variance``), the noise part scaled by ``amplification``, with a share
    ``present`` of every column's values present (imputed otherwise); by the closed form
    :func:`edge_inference` uses (its default test)."""
    theta = _pair_model(t, neighbour_r2, clipped_variance)
    working = np.linalg.inv(theta)
    _, r, diagonal = _debiased(working, theta)
    moments = _moments_gaussian(theta)
    shares = np.full(theta.shape[0], present)
    out = []
    for coefficients, sampling in (
            (_null_pilot_coefficients(theta, diagonal), None),
            (_coefficients(r, diagonal, null=False), True)):
        c, a, b = coefficients
        variance = (1.0 / n if sampling is None
                    else _sampling_variance(moments, c, a, b, n)[0, 1])
        variance += amplification**2 * _noise_variance(theta, c, a, b, sigma * sigma)[0, 1]
        if present < 1.0:
            variance += _missing_extra_variance(theta, working, c, a, b, shares, n)[0, 1]
        out.append(math.sqrt(variance))
    return out[0], out[1]


# over 120 lines: its documentation states every assumption (55 lines); the solve is 70.
def detectable_partial_correlation(
    n_samples: int,
    n_features: int,
    noise_sigma: float,
    *,
    row_norm_bound: float | None = None,
    norm_quantile: float = 0.5,
    record_variance: float = RESCALED_VARIANCE,
    fdr: float = 0.1,
    power: float = 0.8,
    fdr_method: str = "bh",
    expected_edges: float = 0.0,
    edge_strengths: tuple[float, float] = EDGE_STRENGTHS,
    noise_amplification: float = NOISE_AMPLIFICATION,
    missing_share: float = 0.0,
    neighbour_r2: float = 0.0,
) -> float:
    """The smallest ``|partial correlation|`` an edge needs to be selected with probability
    ``power`` by :func:`edge_inference` at false-discovery rate ``fdr``, from public
    parameters only.

    Parameters
    ----------
    n_samples, n_features : int
        ``n`` and ``p``.
    noise_sigma : float
        Standard deviation of the noise on every released second-moment entry of the
        rescaled records, as planned (before any division by shares of values present).
    row_norm_bound : float, optional
        Row-norm bound of the rescaled records; default :func:`expected_row_norm_bound` at
        ``norm_quantile`` (for rows with ``missing_share`` of their values imputed at the
        center, over the values present).
    norm_quantile : float, default=0.5
    record_variance : float, default=RESCALED_VARIANCE
        Per-coordinate variance of the rescaled records before the row-norm clipping.
    fdr, power : float in (0, 1)
    fdr_method : {"bh", "by"}
    expected_edges : float, default=0
        Number of other edges of the graph. Default 0: the edge may be the only one
        selected, so the Benjamini-Hochberg cut-off is at its strictest,
        ``|z| > Phi^{-1}(1 - fdr / (2 m))``, ``m = p (p - 1) / 2``: the figure then holds
        for a lone edge as for one among many (where other detections lower the cut-off
        it is cautious, by up to 20 % on the calibration study's graphs). Otherwise
        their strengths are taken as log-uniform over ``edge_strengths`` and their
        expected detections give the expected number ``R`` of selections, hence the
        cut-off ``|z| > Phi^{-1}(1 - fdr R / (2 m))`` (solved jointly).
    edge_strengths : (float, float), default=EDGE_STRENGTHS
    noise_amplification : float, default=NOISE_AMPLIFICATION
        What the rest of the graph adds to the noise standard error of an edge.
    missing_share : float in [0, 1), default=0
        The declared share of every column's values that are missing (completely at
        random) and imputed at the center of the column's range: the moments are divided
        by the shares present, which multiplies the noise of an entry by up to
        ``1 / (1 - missing_share)**2`` and adds the variance of the imputation.
    neighbour_r2 : float in [0, 1), default=0
        How well the other variables predict each variable of the pair (``R**2``, the
        partner left out): 0 for an edge between variables without other neighbours; the
        noise standard error of an edge grows like ``(1 + R**2) / (1 - R**2)``.

    Returns
    -------
    float
        The threshold ``t`` solving ``t' = c se_0 + z_power se(t')`` for the strength ``t'``
        the test sees (``t`` shrunk by the clipping), with the standard errors of
        :func:`edge_inference`'s test (the smallest root); ``inf`` when no partial
        correlation up to 0.99 would be detected.

    Notes
    -----
    Assumptions (see ``docs/inference.md``): Gaussian-like columns mapped by median +- 5
    MADs (per-coordinate variance :data:`RESCALED_VARIANCE`), rows shrunk onto the ball at
    the ``norm_quantile`` of their norms (which scales the variances by the radial gain of
    independent coordinates), a sparse graph. The threshold is on the population scale:
    the test reads the release as clipped, which shrinks the edge
    (:func:`_clipped_partial`), so the edge must be that much stronger.

    Privacy: public parameters only; nothing is read from data.
    """
    n = _positive_int(n_samples, "n_samples", minimum=2)
    p = _positive_int(n_features, "n_features", minimum=2)
    sigma = _nonnegative(noise_sigma, "noise_sigma")
    v = _real(record_variance, "record_variance")
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"record_variance must be a finite number > 0; got {v!r}")
    fdr = _open_unit(fdr, "fdr")
    power = _open_unit(power, "power")
    fdr_method = _choice(fdr_method, "fdr_method", FDR_METHODS)
    amplification = _real(noise_amplification, "noise_amplification")
    if not (math.isfinite(amplification) and amplification > 0):
        raise ValueError(f"noise_amplification must be a finite number > 0; got {amplification!r}")
    missing = _real(missing_share, "missing_share")
    if not (0.0 <= missing < 1.0):
        raise ValueError(f"missing_share must be in [0, 1); got {missing!r}")
    r2 = _real(neighbour_r2, "neighbour_r2")
    if not (0.0 <= r2 < 1.0):
        raise ValueError(f"neighbour_r2 must be in [0, 1); got {r2!r}")
    low, high = (_real(x, "edge_strengths") for x in edge_strengths)
    if not (0 < low < high < 1):
        raise ValueError(f"edge_strengths must satisfy 0 < low < high < 1; got {edge_strengths!r}")
    present = 1.0 - missing
    # The rows' values present span about p (1 - missing) coordinates.
    span = max(p * present, 1.0)
    if row_norm_bound is None:
        bound = math.sqrt(v * float(stats.chi2.ppf(_open_unit(norm_quantile, "norm_quantile"),
                                                   span)))
    else:
        bound = _real(row_norm_bound, "row_norm_bound")
        if not (math.isfinite(bound) and bound > 0):
            raise ValueError(f"row_norm_bound must be a finite number > 0; got {bound!r}")
    m = p * (p - 1) / 2
    edges = _nonnegative(expected_edges, "expected_edges")
    level = fdr / (float(np.sum(1.0 / np.arange(1, int(m) + 1))) if fdr_method == "by" else 1.0)
    clipped_variance = v * float(_radial_gains(np.full(max(int(round(span)), 1), v),
                                               bound * bound)[0])
    # Dividing the moments by the shares present multiplies the noise by 1 / present**2.
    sigma_corrected = sigma / present**2
    z_power = float(stats.norm.ppf(power))

    def errors(t: float, model_r2: float = 0.0) -> tuple[float, float]:
        return _edge_standard_errors(t, n, sigma_corrected, clipped_variance, amplification,
                                     present=present, neighbour_r2=model_r2)

    # The Benjamini-Hochberg cut-off c rejects |z| > c with c = Phi^{-1}(1 - fdr R / (2m)),
    # R the expected number of selections: the expected detections of the edges (their
    # strengths log-uniform over edge_strengths, isolated) inflated by the false ones
    # (R / (1 - fdr)). R grows as c falls; iterate from the single-selection cut-off.
    bound_squared = bound * bound
    width = max(int(round(span)), 2)

    def clipped(t: float, model_r2: float = 0.0) -> float:
        return _clipped_partial(t, model_r2, v, width, bound_squared)

    cutoff = float(stats.norm.isf(level / (2 * m)))
    if edges > 0:
        nodes, weights = np.polynomial.legendre.leggauss(24)
        strengths = np.array([clipped(float(t)) for t in
                              np.exp(math.log(low) + (nodes + 1) / 2 * math.log(high / low))])
        weights = weights / 2
        standard = np.array([errors(float(t)) for t in strengths])
    for _ in range(100 if edges > 0 else 0):
        detection = stats.norm.cdf((strengths - cutoff * standard[:, 0]) / standard[:, 1])
        selections = min(max(edges * float(weights @ detection) / (1.0 - fdr), 1.0), m)
        updated = float(stats.norm.isf(level * selections / (2 * m)))
        if abs(updated - cutoff) < 1e-10:
            break
        cutoff = updated

    def gap(t: float) -> float:
        seen = clipped(t, r2)
        null_se, se = errors(seen, r2)
        return seen - cutoff * null_se - z_power * se

    # The null standard error does not depend on t, and the estimate's shrinks as t grows:
    # the gap rises with t; the smallest root is bracketed on a grid first all the same.
    grid = np.geomspace(1e-4, 0.99, 32)
    values = np.array([gap(float(t)) for t in grid])
    positive = np.flatnonzero(values >= 0)
    if positive.size == 0:
        return math.inf
    first = int(positive[0])
    if first == 0:
        return float(grid[0])
    from scipy.optimize import brentq

    return float(brentq(gap, float(grid[first - 1]), float(grid[first]), xtol=1e-10))


def delta_method_terms(result: EdgeInference) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                       np.ndarray]:
    """``(theta, c, a, b)`` of the linearisation :func:`edge_inference` used for
    ``result``: a perturbation ``dS`` of the (clipping-corrected) release moves the
    de-biased partial correlation of the pair ``(j, k)`` by
    ``c_jk W_jk + a_jk W_jj + b_jk W_kk`` with ``W = theta dS theta`` (``theta`` the
    refitted pilot; ``p x p`` arrays, read at ``[j, k]``). The standardisation is the
    estimate's (the de-biased diagonal, or the pilot's where that is not clearly
    positive), so that the fluctuations this describes are those ``std_error`` measures.

    Privacy: post-processing of a release's inference; nothing is read from data.
    """
    theta = np.asarray(result.pilot_precision, dtype=float)
    T = np.asarray(result.debiased_precision, dtype=float)
    pilot_diagonal = np.diag(theta)
    diagonal = np.diag(T).copy()
    diagonal = np.where(diagonal > 0.25 * pilot_diagonal, diagonal, pilot_diagonal)
    scale = np.sqrt(diagonal)
    r = -T / np.outer(scale, scale)
    np.fill_diagonal(r, 1.0)
    c, a, b = _coefficients(r, diagonal, null=False)
    return theta, c, a, b


#: The number of pairs whose partial correlation differs between the groups that
#: :func:`detectable_difference` assumes by default, as a share of the variables.
DIFFERENCES_PER_VARIABLE = 0.2


def _difference_errors(t: float, sizes: tuple[int, int], sigmas: tuple[float, float],
                       variances: tuple[float, float], present: float) -> float:
    """The standard error of the difference of two groups' estimates of one pair, an edge
    of strength ``t`` in the first group and none in the second (each by
    :func:`_edge_standard_errors`, the estimate's standard error: the test is Wald's)."""
    first = _edge_standard_errors(t, sizes[0], sigmas[0], variances[0], NOISE_AMPLIFICATION,
                                  present=present)[1]
    second = _edge_standard_errors(0.0, sizes[1], sigmas[1], variances[1], NOISE_AMPLIFICATION,
                                   present=present)[1]
    return math.hypot(first, second)


def detectable_difference(
    n_samples: tuple[int, int],
    n_features: int,
    noise_sigma: tuple[float, float],
    *,
    row_norm_bound: tuple[float, float] | None = None,
    norm_quantile: float = 0.5,
    record_variance: float = RESCALED_VARIANCE,
    fdr: float = 0.1,
    power: float = 0.8,
    fdr_method: str = "bh",
    expected_differences: float | None = None,
    missing_share: float = 0.0,
) -> float:
    """The smallest difference of a pair's partial correlation between two groups that a
    comparison of their releases finds with probability ``power`` at false-discovery rate
    ``fdr``, from public parameters only: an edge of that strength in one group, none in
    the other (both isolated edges of sparse graphs).

    Each group's release is modelled as :func:`detectable_partial_correlation` models one
    (``n_samples[g]`` records, entry noise ``noise_sigma[g]``, the row-norm bound the rule
    is expected to choose); the difference of the two estimates has the standard error of
    both added in quadrature (the releases are independent given the data, and so are the
    groups' records), and it is tested by Wald's z with Benjamini-Hochberg (or -Yekutieli)
    over the ``p (p - 1) / 2`` pairs: the cut-off from the expected number of selections,
    ``expected_differences`` differences (default ``p / 5``) of strengths log-uniform over
    :data:`EDGE_STRENGTHS`.

    Returns
    -------
    float
        The threshold ``t`` solving ``t = (c + z_power) se_d(t)``; ``inf`` when no
        difference up to 0.99 is found with that power.

    Privacy: public parameters only; nothing is read from data.
    """
    sizes = tuple(_positive_int(n, "n_samples", minimum=2) for n in n_samples)
    sigmas = tuple(_nonnegative(x, "noise_sigma") for x in noise_sigma)
    if len(sizes) != 2 or len(sigmas) != 2:
        raise ValueError("n_samples and noise_sigma must each hold two groups' figures")
    p = _positive_int(n_features, "n_features", minimum=2)
    v = _real(record_variance, "record_variance")
    fdr = _open_unit(fdr, "fdr")
    power = _open_unit(power, "power")
    fdr_method = _choice(fdr_method, "fdr_method", FDR_METHODS)
    missing = _real(missing_share, "missing_share")
    if not (0.0 <= missing < 1.0):
        raise ValueError(f"missing_share must be in [0, 1); got {missing!r}")
    present = 1.0 - missing
    span = max(p * present, 1.0)
    if row_norm_bound is None:
        bound = math.sqrt(v * float(stats.chi2.ppf(_open_unit(norm_quantile, "norm_quantile"),
                                                   span)))
        bounds = (bound, bound)
    else:
        bounds = tuple(_real(b, "row_norm_bound") for b in row_norm_bound)
    variances = tuple(v * float(_radial_gains(np.full(max(int(round(span)), 1), v), b * b)[0])
                      for b in bounds)
    corrected = tuple(x / present**2 for x in sigmas)
    m = p * (p - 1) / 2
    expected = (max(1.0, DIFFERENCES_PER_VARIABLE * p) if expected_differences is None
                else _nonnegative(expected_differences, "expected_differences"))
    level = fdr / (float(np.sum(1.0 / np.arange(1, int(m) + 1))) if fdr_method == "by" else 1.0)
    z_power = float(stats.norm.ppf(power))

    def error(t: float) -> float:
        return _difference_errors(t, sizes, corrected, variances, present)

    low, high = EDGE_STRENGTHS
    nodes, weights = np.polynomial.legendre.leggauss(16)
    strengths = np.exp(math.log(low) + (nodes + 1) / 2 * math.log(high / low))
    weights = weights / 2
    standard = np.array([error(float(t)) for t in strengths])
    cutoff = float(stats.norm.isf(level / (2 * m)))
    for _ in range(100):
        detection = stats.norm.cdf(strengths / standard - cutoff)
        selections = min(max(expected * float(weights @ detection) / (1.0 - fdr), 1.0), m)
        updated = float(stats.norm.isf(level * selections / (2 * m)))
        if abs(updated - cutoff) < 1e-10:
            break
        cutoff = updated

    def gap(t: float) -> float:
        return t - (cutoff + z_power) * error(t)

    grid = np.geomspace(1e-4, 0.99, 32)
    values = np.array([gap(float(t)) for t in grid])
    positive = np.flatnonzero(values >= 0)
    if positive.size == 0:
        return math.inf
    first = int(positive[0])
    if first == 0:
        return float(grid[0])
    from scipy.optimize import brentq

    return float(brentq(gap, float(grid[first - 1]), float(grid[first]), xtol=1e-10))
