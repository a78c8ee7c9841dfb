"""Private linear regression: ordinary least squares from a private second moment, and
AdaSSP (Wang 2018).

* :class:`PrivateLinearRegression` fits any covariance estimator of this package to the
  stacked records ``[x, y]`` (``[x, 1, y]`` with an intercept) and solves the normal
  equations from the private joint second moment -- how PACE-GGM is used for regression
  in its Appendix G. It spends exactly what the covariance estimator spends.
* :class:`AdaSSP` is Algorithm 2 of Wang (2018), "Revisiting differentially private linear
  regression: optimal and adaptive prediction & estimation in unbounded domain": a private
  smallest eigenvalue of ``X^T X`` sets a ridge penalty, and ``X^T X`` and ``X^T y`` are
  released with the Gaussian mechanism; the budget is split in three.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted

from dpggm.estimators._base import DPEstimator, check_bounds, make_context
from dpggm.estimators._contract import (
    CALIBRATION,
    ESTIMATOR,
    FLAG,
    NOISE,
    ContractMixin,
    Interval,
    Required,
    check_feature_names,
    fraction,
)
from dpggm.estimators.data import as_matrix, is_dask_collection
from dpggm.exceptions import IncompatibleBudgetError, NumericalError
from dpggm.mechanisms.bounds import Box, RowNorm
from dpggm.mechanisms.sensitivity import (
    gram_entry_sensitivity,
    gram_l2_sensitivity,
    sum_l2_sensitivity,
)
from dpggm.privacy.accountant import PrivacyAccountant
from dpggm.privacy.budgets import GDP, ZCDP, ApproxDP, NonPrivate, PureDP, compose, scale_budget
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA

__all__ = ["AdaSSP", "PrivateLinearRegression", "solve_normal_equations"]

#: Eigenvalues of the (regularised) feature block at or below this fraction of its largest
#: eigenvalue count as zero: the block is then treated as singular.
SINGULAR_TOLERANCE = 1e-10


def _as_target(y: Any, n: int) -> np.ndarray:
    try:
        values = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("y must be a one-dimensional array of numbers") from None
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        raise ValueError(f"y must be one-dimensional; got an array of shape {values.shape}")
    if values.shape[0] != n:
        raise ValueError(f"y must have one value per record of X ({n}); got {values.shape[0]}")
    if not np.all(np.isfinite(values)):
        raise ValueError("y contains NaN or infinite values; remove or impute them before fitting")
    return values


def _check_predict_input(estimator: BaseEstimator, X: Any) -> np.ndarray:
    check_is_fitted(estimator, "coef_")
    if type(X).__module__.startswith("scipy.sparse"):
        raise TypeError("X is a scipy.sparse matrix; sparse matrices are not supported")
    if np.iscomplexobj(X):
        raise ValueError("X has complex values; complex data are not supported")
    check_feature_names(estimator, X)
    frame = X.to_numpy(dtype=float) if hasattr(X, "to_numpy") else X
    try:
        values = np.asarray(frame, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("X must be a two-dimensional array of numbers") from None
    if values.ndim != 2:
        raise ValueError(
            f"X must be two-dimensional (records x features); got {values.ndim} dimension(s)"
        )
    if values.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {values.shape[1]} features, but the model was fitted with "
            f"{estimator.n_features_in_}"
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(
            "X contains NaN or infinite values; remove or impute them before predicting"
        )
    return values


def solve_normal_equations(
    joint: np.ndarray, *, n_features: int, ridge: float = 0.0, penalized: np.ndarray | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Least-squares coefficients from a joint second moment of ``[features, target]``.

    Solves ``(A + ridge D) beta = c`` with ``A`` the leading ``n_features`` block of
    ``joint``, ``c`` the last column above the diagonal and ``D`` the diagonal matrix of
    ``penalized`` (all ones by default).

    A private ``A`` can be indefinite or singular. When the smallest eigenvalue of
    ``A + ridge D`` is at most :data:`SINGULAR_TOLERANCE` times its largest in magnitude,
    the whole joint matrix is first projected onto the PSD cone (negative eigenvalues set to
    zero): for a PSD joint matrix ``c`` lies in the range of ``A``, so the minimum-norm
    least-squares solution (``numpy.linalg.lstsq`` with the same relative cut-off) is finite
    and is what is returned.

    Post-processing only: consumes no budget.

    Returns
    -------
    coef : ndarray of shape (n_features,)
    info : dict
        ``min_eigenvalue`` of the regularised feature block before any repair,
        ``repaired`` (bool) and ``method`` (``"solve"`` or ``"psd-projection + lstsq"``).
    """
    joint = np.asarray(joint, dtype=float)
    k = int(n_features)
    if joint.shape != (k + 1, k + 1):
        raise ValueError(
            f"joint must be of shape ({k + 1}, {k + 1}) for {k} features; got {joint.shape}"
        )
    if not np.all(np.isfinite(joint)):
        raise NumericalError("the joint second moment has non-finite entries")
    joint = (joint + joint.T) / 2
    weights = np.ones(k) if penalized is None else np.asarray(penalized, dtype=float)
    regulariser = ridge * np.diag(weights)

    def blocks(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return matrix[:k, :k] + regulariser, matrix[:k, k]

    A, c = blocks(joint)
    eigenvalues = np.linalg.eigvalsh(A)
    scale = max(float(np.max(np.abs(eigenvalues))), np.finfo(float).tiny)
    info: dict[str, Any] = {"min_eigenvalue": float(eigenvalues[0]), "ridge": float(ridge)}
    if eigenvalues[0] > SINGULAR_TOLERANCE * scale:
        coef = np.linalg.solve(A, c)
        info.update(repaired=False, method="solve")
    else:
        values, vectors = np.linalg.eigh(joint)
        projected = (vectors * np.maximum(values, 0.0)) @ vectors.T
        A, c = blocks((projected + projected.T) / 2)
        coef = np.linalg.lstsq(A, c, rcond=SINGULAR_TOLERANCE)[0]
        info.update(repaired=True, method="psd-projection + lstsq")
    if not np.all(np.isfinite(coef)):
        raise NumericalError("the least-squares solution is not finite")
    return coef, info


class PrivateLinearRegression(RegressorMixin, ContractMixin, BaseEstimator):
    """Linear regression from a private joint second moment of ``[X, y]``.

    A clone of ``covariance_estimator`` is fitted to the stacked records ``[x, y]`` (with
    ``fit_intercept=True``, ``[x, 1, y]``: the constant column makes the joint second moment
    carry the means, and its coefficient is the intercept). The coefficients minimise
    ``(1/n) ||y - X beta - b||^2 + ridge ||beta||^2`` with every second moment replaced by
    its private version; the intercept is not penalised. See
    :func:`solve_normal_equations` for the repair applied when the private feature block
    is singular or indefinite (``solver_info_`` records it).

    Parameters
    ----------
    covariance_estimator : estimator
        Any estimator whose ``fit`` sets ``covariance_`` (the private second moment of what
        it was fitted on) and ``privacy_``, e.g. :class:`~dpggm.estimators.PrivateCovariance`
        with ``center="none"``, :class:`~dpggm.estimators.baselines.SSPCovariance` or
        PACE-GGM. Its ``bounds`` are for the stacked columns: ``p + 1`` columns, or
        ``p + 2`` with an intercept, where the constant column's own bound must be at least
        1 (a row-norm bound must allow for the extra ``1`` in every row).
    fit_intercept : bool, default=False
    ridge : float, default=0.0
        Penalty on the coefficients, in the units of the second moment (``ridge * n`` in
        the units of ``X^T X``).

    Attributes
    ----------
    coef_ : ndarray of shape (p,)
    intercept_ : float
    covariance_estimator_ : estimator
        The fitted clone.
    joint_second_moment_ : ndarray
        The private joint matrix the coefficients were solved from.
    solver_info_ : dict
    n_samples_ : int
        That of the fitted covariance estimator (the noisy count under add/remove).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` is a DataFrame; ``predict`` then requires the same columns in the
        same order.
    privacy_ : PrivacyGuarantee
        That of the covariance estimator (the regression is post-processing).

    Privacy
    -------
    Post-processing of the covariance estimator's release: the guarantee is exactly that
    estimator's, for neighbouring datasets that differ in one ``(x, y)`` record.
    """

    _constraints = {
        "covariance_estimator": ESTIMATOR,
        "fit_intercept": FLAG,
        "ridge": Interval(0, None, closed="left"),
    }
    # Its covariance estimator reads the private records; preprocessing before this one
    # in a Pipeline is reported there (and warned about here).
    _reads_private_records = True

    def __init__(
        self, *, covariance_estimator: Any = None, fit_intercept: bool = False, ridge: float = 0.0
    ) -> None:
        self.covariance_estimator = covariance_estimator
        self.fit_intercept = fit_intercept
        self.ridge = ridge

    def _validate(self) -> float:
        ridge = self._validate_params()["ridge"]
        # The covariance estimator's own parameters are checked now, before X is read,
        # so that a bad budget or bound fails before any work on the data.
        inner = self.covariance_estimator
        if isinstance(inner, ContractMixin):
            clone(inner)._validate_params()
        return ridge

    def _check_constant_column(self, estimator: Any, column: int, width: int) -> None:
        bounds = estimator.get_params(deep=False).get("bounds")
        if isinstance(bounds, str):
            bounds = check_bounds(bounds)
        if isinstance(bounds, Box):
            bound = bounds.vector(width)[column]
            if bound < 1:
                raise ValueError(
                    "with fit_intercept=True the covariance estimator's Box bound for the "
                    f"constant column (column {column}) must be >= 1, or the column of ones is "
                    f"clipped; got {bound!r}"
                )

    def fit(self, X: Any, y: Any) -> PrivateLinearRegression:
        """Fit the covariance estimator to the stacked data and solve for the coefficients.

        Parameters
        ----------
        X : array-like of shape (n, p) or DataFrame
        y : array-like of shape (n,)

        Returns
        -------
        self
        """
        ridge = self._validate()
        features, columns = as_matrix(X)
        n, p = features.shape
        target = _as_target(y, n)
        parts = [features]
        if self.fit_intercept:
            parts.append(np.ones((n, 1)))
        parts.append(target[:, None])
        stacked = np.hstack(parts)
        estimator = clone(self.covariance_estimator)
        if self.fit_intercept:
            self._check_constant_column(estimator, p, stacked.shape[1])
        estimator.fit(stacked)
        joint = np.asarray(getattr(estimator, "covariance_", None), dtype=float)
        width = stacked.shape[1]
        if joint.shape != (width, width):
            raise ValueError(
                "covariance_estimator must set covariance_ of shape "
                f"({width}, {width}) for the stacked data; got {joint.shape}"
            )
        k = width - 1
        penalized = np.ones(k)
        if self.fit_intercept:
            penalized[p] = 0.0
        coef, info = solve_normal_equations(joint, n_features=k, ridge=ridge, penalized=penalized)
        self.coef_ = coef[:p]
        self.intercept_ = float(coef[p]) if self.fit_intercept else 0.0
        self.covariance_estimator_ = estimator
        self.joint_second_moment_ = joint
        self.solver_info_ = info
        guarantee = estimator.privacy_
        self._set_fitted(
            X, n_samples=getattr(estimator, "n_samples_", None), n_features=p, columns=columns,
            privacy=replace(
                guarantee,
                notes={
                    **guarantee.notes,
                    "regression": "ordinary least squares from the private joint second moment "
                    "of [X, (1,) y] (post-processing)",
                },
            ),
        )
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predictions ``X coef_ + intercept_``.

        Post-processing only: consumes no budget.
        """
        values = _check_predict_input(self, X)
        return values @ self.coef_ + self.intercept_


def _clipped_regression_statistics(
    X: Any, y: Any, *, bounds: Any, y_bound: float, fit_intercept: bool
) -> tuple[np.ndarray, np.ndarray, int, list[str], float]:
    """``[X, 1]^T [X, 1]``, ``[X, 1]^T y``, n, the column names and the row-norm bound of
    ``[x, 1]``, for records clipped to ``bounds`` and targets to ``[-y_bound, y_bound]``
    (in memory, or per partition and tree-reduced for Dask input)."""
    if is_dask_collection(X) or is_dask_collection(y):
        from dpggm.estimators import _dask

        gram, moment, n, columns = _dask.regression_statistics(
            X, y, bounds=bounds, y_bound=y_bound, fit_intercept=fit_intercept)
        x_bound = bounds.row_norm(len(columns))
    else:
        features, columns = as_matrix(X)
        n, p = features.shape
        target = _as_target(y, n)
        bounds.check_dimension(p)
        features, _ = bounds.clip(features)
        target = np.clip(target, -y_bound, y_bound)
        x_bound = bounds.row_norm(p)
        if fit_intercept:
            features = np.hstack([features, np.ones((n, 1))])
        gram = features.T @ features
        gram = (gram + gram.T) / 2
        moment = features.T @ target
    if fit_intercept:
        # ||(x, 1)|| <= sqrt(B^2 + 1), rounded up so that it stays a bound.
        squared = Fraction(x_bound) ** 2 + 1
        x_bound = math.sqrt(float(squared))
        while Fraction(x_bound) ** 2 < squared:
            x_bound = math.nextafter(x_bound, math.inf)
    return gram, moment, n, columns, x_bound


class AdaSSP(RegressorMixin, DPEstimator):
    """AdaSSP: adaptive sufficient-statistic perturbation for linear regression (Wang 2018,
    Algorithm 2).

    With ``B`` the row-norm bound of the features and ``B_y`` that of the target, records are
    clipped to them and the budget is split in three equal parts:

    1. ``lambda_min(X^T X)`` (sensitivity ``B^2``) is released with noise ``sigma_1`` and
       shifted down: ``l = max(lambda_min + sigma_1 Z - sigma_1 t, 0)``;
    2. ``X^T X`` (sensitivity ``sqrt(2) B^2`` replace-one, ``B^2`` add/remove) gets
       symmetric Gaussian noise ``sigma_2``;
    3. ``X^T y`` (sensitivity ``2 B B_y`` replace-one, ``B B_y`` add/remove) gets Gaussian
       noise ``sigma_3``;

    and ``theta = (X^T X~ + lambda I)^{-1} X^T y~`` with the ridge
    ``lambda = max(0, sigma_2 sqrt(d ln(2 d^2 / failure_probability)) - l)``.

    For ``ApproxDP(epsilon, delta)`` each third is ``(epsilon/3, delta/3)`` and the shift is
    ``t = sqrt(ln(6 / delta))``, as in the paper, whose noise scales
    ``sqrt(ln(6/delta)) B^2 / (epsilon/3)`` are replaced by the analytic Gaussian calibration
    (Balle & Wang 2018), which is tight and valid for every epsilon. For ``ZCDP(rho)`` (and
    ``GDP(mu)``) each third is ``rho / 3`` (``mu^2 / 3``) and, there being no delta, the
    shift is ``t = sqrt(2 ln(3 / failure_probability))``, so that ``l <= lambda_min`` with
    probability ``1 - failure_probability / 3``.

    Parameters
    ----------
    budget : ApproxDP, ZCDP or GDP
        The total. ``NonPrivate()`` gives ordinary least squares (reference only). Required.
    bounds : RowNorm, Box or str
        Declared bound on every feature vector (``B`` is its row norm).
    y_bound : float
        Declared bound ``|y| <= y_bound``; larger targets are clipped.
    failure_probability : float in (0, 1), default=0.05
        The paper's ``rho`` (renamed: ``rho`` is reserved for zCDP).
    fit_intercept : bool, default=False
        Append a constant feature 1 (then ``B`` becomes ``sqrt(B^2 + 1)``); its coefficient
        is the intercept and is penalised like the others, as in the paper's formulation.
    neighbors : {"replace", "add-remove"}, default="replace"
    calibration : {"analytic", "classical"}, default="analytic"
        Gaussian calibration for ``ApproxDP``.
    report_delta : float, default=1e-6
    random_state : None, int, numpy.random.Generator or "secure"

    Attributes
    ----------
    coef_ : ndarray of shape (p,)
    intercept_ : float
    ridge_ : float
        The chosen ``lambda`` (units of ``X^T X``).
    noisy_min_eigenvalue_ : float
        ``l`` above.
    solver_info_ : dict
    accountant_ : PrivacyAccountant or None
    n_features_in_ : int
    privacy_ : PrivacyGuarantee

    Privacy
    -------
    Three Gaussian releases with the sensitivities above (Weyl's inequality bounds the change
    of ``lambda_min`` by ``B^2`` under both relations), each with a third of the budget,
    composed under a :class:`~dpggm.privacy.PrivacyAccountant` (basic composition for
    ``(epsilon, delta)``); the last spends exactly the remainder. Everything else is
    post-processing.
    """

    def __init__(
        self,
        *,
        budget: Any = None,
        bounds: Any = None,
        y_bound: Any = None,
        failure_probability: float = 0.05,
        fit_intercept: bool = False,
        neighbors: str = "replace",
        calibration: str = "analytic",
        noise: str = "exact",
        report_delta: float = DEFAULT_REPORT_DELTA,
        random_state: Any = None,
    ) -> None:
        self.budget = budget
        self.bounds = bounds
        self.y_bound = y_bound
        self.failure_probability = failure_probability
        self.fit_intercept = fit_intercept
        self.neighbors = neighbors
        self.calibration = calibration
        self.noise = noise
        self.report_delta = report_delta
        self.random_state = random_state

    _constraints = {
        "y_bound": Required(Interval(0, None), "declare |y| <= y_bound from domain knowledge"),
        "failure_probability": fraction(),
        "fit_intercept": FLAG,
        "calibration": CALIBRATION,
        "noise": NOISE,
    }

    def _validate(self) -> tuple[Any, Any, float, float]:
        params = self._validate_params()
        budget = params["budget"]
        if isinstance(budget, PureDP):
            raise IncompatibleBudgetError(
                "AdaSSP releases Gaussian noise, which cannot satisfy pure epsilon-DP: budget "
                f"must be ApproxDP, ZCDP or GDP; got {budget}"
            )
        if isinstance(budget, ApproxDP) and not (budget.epsilon > 0 and budget.delta > 0):
            raise ValueError(f"budget must have epsilon > 0 and delta > 0 for AdaSSP; got {budget}")
        if isinstance(budget, ZCDP) and not budget.rho > 0:
            raise ValueError(f"budget must have rho > 0 for AdaSSP; got {budget}")
        if isinstance(budget, GDP) and not budget.mu > 0:
            raise ValueError(f"budget must have mu > 0 for AdaSSP; got {budget}")
        return budget, params["bounds"], params["y_bound"], params["failure_probability"]

    def fit(self, X: Any, y: Any) -> AdaSSP:
        """Fit AdaSSP.

        Parameters
        ----------
        X : array-like of shape (n, p) or DataFrame
        y : array-like of shape (n,)

        Returns
        -------
        self
        """
        budget, bounds, y_bound, beta = self._validate()
        gram, moment, n, columns, x_bound = _clipped_regression_statistics(
            X, y, bounds=bounds, y_bound=y_bound, fit_intercept=self.fit_intercept
        )
        p, d = len(columns), gram.shape[0]
        ctx = make_context(
            self,
            {
                "x": bounds.to_dict(),
                "y": {"kind": "abs", "bound": y_bound},
                "data_derived": bool(bounds.data_derived),
            },
        )

        if isinstance(budget, NonPrivate):
            coef, info = solve_normal_equations(
                np.block([[gram, moment[:, None]], [moment[None, :], np.zeros((1, 1))]]),
                n_features=d,
            )
            self._set_coefficients(coef, p)
            self.ridge_ = 0.0
            self.noisy_min_eigenvalue_ = float(np.linalg.eigvalsh(gram)[0])
            self.solver_info_ = info
            self.accountant_ = None
            self._set_fitted(
                X, n_samples=n, n_features=p, columns=columns,
                privacy=ctx.guarantee(
                    budget=budget,
                    mechanism="adassp (non-private reference: ordinary least squares)",
                ),
            )
            return self

        accountant = PrivacyAccountant(budget)
        third = scale_budget(budget, Fraction(1, 3))
        calibration = self.calibration
        row = RowNorm(x_bound)

        # lambda_min(X^T X) moves by at most ||x||^2 <= x_bound^2 (Weyl) under both relations.
        eigen_sensitivity = gram_entry_sensitivity(row, p=1, neighbors="add-remove")[0, 0]
        accountant.spend(third, mechanism="gaussian (smallest eigenvalue of X^T X)")
        lambda_min = float(np.linalg.eigvalsh(gram)[0])
        noisy_lambda_min, eigen_mechanism = ctx.gaussian(
            lambda_min, sensitivity=eigen_sensitivity, budget=third, calibration=calibration
        )
        sigma_eigen = eigen_mechanism.sigma
        if isinstance(budget, ApproxDP):
            shift = math.sqrt(math.log(6.0 / budget.delta))
        else:
            shift = math.sqrt(2.0 * math.log(3.0 / beta))
        noisy_min = max(float(noisy_lambda_min) - sigma_eigen * shift, 0.0)

        gram_sensitivity = gram_l2_sensitivity(row, p=d, neighbors=ctx.neighbors)
        accountant.spend(third, mechanism="gaussian (X^T X)")
        noisy_gram, gram_mechanism = ctx.symmetric_gaussian(
            gram, sensitivity=gram_sensitivity, budget=third, calibration=calibration
        )
        sigma_gram = gram_mechanism.sigma

        moment_sensitivity = sum_l2_sensitivity(
            RowNorm(x_bound * y_bound), p=d, neighbors=ctx.neighbors
        )
        last = accountant.remaining
        accountant.spend(last, mechanism="gaussian (X^T y)")
        noisy_moment, moment_mechanism = ctx.gaussian(
            moment, sensitivity=moment_sensitivity, budget=last, calibration=calibration
        )
        noisy_moment = np.atleast_1d(np.asarray(noisy_moment, dtype=float))

        ridge = max(0.0, sigma_gram * math.sqrt(d * math.log(2.0 * d * d / beta)) - noisy_min)
        joint = np.zeros((d + 1, d + 1))
        joint[:d, :d] = noisy_gram
        joint[:d, d] = joint[d, :d] = noisy_moment
        coef, info = solve_normal_equations(joint, n_features=d, ridge=ridge)
        self._set_coefficients(coef, p)
        self.ridge_ = ridge
        self.noisy_min_eigenvalue_ = noisy_min
        self.solver_info_ = info
        self.accountant_ = accountant
        privacy = ctx.guarantee(
            budget=compose(
                [m.delivered for m in (eigen_mechanism, gram_mechanism, moment_mechanism)]
            ),
            mechanism="adassp (Wang 2018, Algorithm 2)",
            noise={
                **eigen_mechanism.record("min_eigenvalue_"),
                "min_eigenvalue_shift": sigma_eigen * shift,
                **gram_mechanism.record("gram_"),
                **moment_mechanism.record("moment_"),
                "budget_per_release": third,
                "calibration": calibration if isinstance(budget, ApproxDP) else "exact",
            },
            notes={
                "ridge": ridge,
                "spends": [
                    {"mechanism": s.mechanism, "budget": s.budget} for s in accountant.spends
                ],
            },
        )
        # n is public under replace-one; under add/remove AdaSSP releases no count, so
        # n_samples_ is not set (the exact count is never exposed there).
        self._set_fitted(
            X, n_samples=n if ctx.neighbors == "replace" else None, n_features=p,
            columns=columns, privacy=privacy,
        )
        return self

    def _set_coefficients(self, coef: np.ndarray, p: int) -> None:
        self.coef_ = coef[:p]
        self.intercept_ = float(coef[p]) if self.fit_intercept else 0.0

    def predict(self, X: Any) -> np.ndarray:
        """Predictions ``X coef_ + intercept_``.

        Post-processing only: consumes no budget.
        """
        values = _check_predict_input(self, X)
        return values @ self.coef_ + self.intercept_
