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

import contextlib
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_is_fitted

from dpggm.data.passes import RegressionSums
from dpggm.data.records import ArrayRecords
from dpggm.data.tables import as_matrix, is_dask_collection, too_few_records
from dpggm.estimators._base import (
    DPEstimator,
    PlannedEstimator,
    Settings,
    check_bounds,
    make_context,
)
from dpggm.estimators._contract import (
    CALIBRATION,
    ESTIMATOR,
    FLAG,
    NOISE,
    BudgetOf,
    Interval,
    Required,
    check_feature_names,
    fraction,
)
from dpggm.exceptions import NumericalError
from dpggm.mechanisms.additive import (
    MAX_RECORDS,
    GaussianMechanism,
    NoisePart,
    check_budget_range,
)
from dpggm.mechanisms.bounds import Box, RowNorm
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.plan import PlanRun, ReleasePlan
from dpggm.mechanisms.sensitivity import (
    gram_entry_sensitivity,
    gram_l2_sensitivity,
    sum_l2_sensitivity,
)
from dpggm.privacy.budgets import (
    GDP,
    ZCDP,
    ApproxDP,
    Budget,
    NonPrivate,
    accounting_total,
    budget_from_cost,
    dyadic_share,
    exact_cost,
)
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA

__all__ = ["INTERCEPT_TERM", "AdaSSP", "PrivateLinearRegression", "coefficients_csv_text",
           "solve_normal_equations"]

#: Eigenvalues of the (regularised) feature block at or below this fraction of its largest
#: eigenvalue count as zero: the block is then treated as singular.
SINGULAR_TOLERANCE = 1e-10


def _as_target(y: Any, n: int) -> np.ndarray:
    if y is None:
        raise ValueError("a regression requires y to be passed, but the target y is None")
    try:
        values = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("y must be a one-dimensional array of numbers") from None
    if values.ndim == 2 and values.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected (shape "
                      "(n, 1)); it is read as y.ravel()", DataConversionWarning, stacklevel=4)
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
    check_feature_names(estimator, X)
    frame = X.to_numpy() if hasattr(X, "to_numpy") else X
    try:
        values = np.asarray(frame)
        if np.iscomplexobj(values):
            raise ValueError(
                "Complex data not supported: X has complex values; pass real numbers")
        values = values.astype(float, copy=False)
    except (TypeError, ValueError) as exc:
        if "Complex" in str(exc):
            raise
        raise ValueError("X must be a two-dimensional array of numbers") from None
    if values.ndim != 2:
        raise ValueError(
            f"X must be two-dimensional (records x features); got {values.ndim} dimension(s). "
            "Reshape your data: X.reshape(-1, 1) for one feature, X.reshape(1, -1) for one "
            "record"
        )
    if values.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {values.shape[1]} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input (the number it was fitted with)"
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


#: The term of the intercept's row in ``coef.csv`` (R's name for it).
INTERCEPT_TERM = "(Intercept)"


def coefficients_csv_text(estimator: Any) -> str:
    """The released coefficients of a fitted regression as the text of ``coef.csv``: header
    ``term,coefficient``; with ``fit_intercept=True`` a first row ``(Intercept)``, then
    one row per feature in the order of the columns (named as fitted: ``x0 .. x{p-1}``
    without names; a name a spreadsheet would read as a formula with a ``'`` in front,
    :func:`dpggm.io.csv_name`), every number written with 17 significant digits (read
    back exactly)."""
    import pandas as pd

    from dpggm.estimators._contract import feature_names
    from dpggm.io import csv_name

    terms = [csv_name(name) for name in feature_names(estimator)]
    values = [float(v) for v in np.asarray(estimator.coef_, dtype=float)]
    if estimator.fit_intercept:
        terms, values = [INTERCEPT_TERM, *terms], [float(estimator.intercept_), *values]
    return pd.DataFrame({"term": terms, "coefficient": values}).to_csv(
        index=False, float_format="%.17g", lineterminator="\n")


class _SavesCoefficients:
    """``save`` of a regression: the common files and ``coef.csv``
    (:func:`coefficients_csv_text`), the estimate the release was paid for."""

    def _stage_release(self, staged: Any, record: dict[str, Any]) -> None:
        super()._stage_release(staged, record)  # type: ignore[misc]
        staged.text("coef.csv", coefficients_csv_text(self))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        # The noise a budget adds: at scikit-learn's check size (200 records, 10 features,
        # rho = 1, box bound 3) R^2 is about 0.23 (AdaSSP) and below 0 (the second-moment
        # release), under the 0.5 the check asks of a non-private regressor.
        tags.regressor_tags.poor_score = True
        return tags


class PrivateLinearRegression(_SavesCoefficients, RegressorMixin, PlannedEstimator):
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
    solver_ : SolverResult
        The normal equations' outcome (``estimate``: the coefficients; ``extra``: the
        smallest eigenvalue, whether the feature block was repaired, the method).
    plan_ : ReleasePlan
        The covariance estimator's plan on the stacked columns.
    n_samples_ : int
        That of the fitted covariance estimator (the noisy count under add/remove).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` is a DataFrame; ``predict`` then requires the same columns in the
        same order.
    privacy_ : PrivacyGuarantee
        That of the covariance estimator (the regression is post-processing).

    Notes
    -----
    ``save(directory, ledger=..., dataset=...)`` writes ``result.json`` and ``coef.csv``
    (:func:`coefficients_csv_text`: ``term,coefficient``, the ``(Intercept)`` row first
    when ``fit_intercept=True``, then one row per feature).

    Privacy
    -------
    Post-processing of the covariance estimator's release: the guarantee is exactly that
    estimator's, for neighbouring datasets that differ in one ``(x, y)`` record; its plan
    is that estimator's plan on the ``p + 1`` (``p + 2``) stacked columns.
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

    def _width(self, p: int) -> int:
        return p + (2 if self.fit_intercept else 1)

    def _settings(self) -> Settings:
        params = self._validate_params()
        # The covariance estimator's own parameters are checked now, before X is read,
        # so that a bad budget or bound fails before any work on the data.
        inner = self.covariance_estimator
        if hasattr(inner, "check_params"):
            clone(inner).check_params()
        return Settings(params=params, requested=NonPrivate(), accounting=NonPrivate())

    def _inner(self) -> Any:
        return clone(self.covariance_estimator)

    def release_forms(self) -> dict[str, Budget]:
        """Those of the covariance estimator (the regression is post-processing)."""
        return self._inner().release_forms()

    def expected_validity(self) -> tuple[str, str]:
        """That of the covariance estimator."""
        return self._inner().expected_validity()

    def check_ledger(self, ledger: Any, dataset: str) -> None:
        """As the covariance estimator's :meth:`~PlannedEstimator.check_ledger`."""
        self._inner().check_ledger(ledger, dataset)

    @contextlib.contextmanager
    def _records(self, X: Any, y: Any, settings: Settings) -> Iterator[Any]:
        features, columns = as_matrix(X)
        n, p = features.shape
        target = _as_target(y, n)
        parts = [features]
        if self.fit_intercept:
            parts.append(np.ones((n, 1)))
        parts.append(target[:, None])
        yield _Stacked(np.hstack(parts), columns)

    def _context(self, settings: Settings) -> Any:
        return None

    def _plan(self, settings: Settings, n: int, p: int) -> ReleasePlan:
        """The covariance estimator's plan on the stacked columns."""
        inner = self._inner()
        if self.fit_intercept:
            self._check_constant_column(inner, p, self._width(p))
        return inner.plan(n_samples=n, n_features=self._width(p))

    def _run(self, settings: Settings, plan: ReleasePlan, data: Any, run: PlanRun,
             ctx: Any) -> Any:
        # The covariance estimator runs its own plan (the same plan, from the same facts).
        return self._inner().fit(data.stacked)

    def _finish(self, X: Any, settings: Settings, plan: ReleasePlan, data: Any, release: Any,
                run: PlanRun, ctx: Any) -> None:
        estimator = release
        p = data.n_features
        width = self._width(p)
        joint = np.asarray(getattr(estimator, "covariance_", None), dtype=float)
        if joint.shape != (width, width):
            raise ValueError(
                "covariance_estimator must set covariance_ of shape "
                f"({width}, {width}) for the stacked data; got {joint.shape}"
            )
        k = width - 1
        penalized = np.ones(k)
        if self.fit_intercept:
            penalized[p] = 0.0
        coef, info = solve_normal_equations(joint, n_features=k, ridge=settings["ridge"],
                                            penalized=penalized)
        self.solver_ = _solver_result(coef, info)
        self.coef_ = coef[:p]
        self.intercept_ = float(coef[p]) if self.fit_intercept else 0.0
        self.covariance_estimator_ = estimator
        self.plan_ = getattr(estimator, "plan_", plan)
        self.joint_second_moment_ = joint
        guarantee = estimator.privacy_
        self._set_fitted(
            X, n_samples=getattr(estimator, "n_samples_", None), n_features=p,
            columns=data.columns,
            privacy=replace(
                guarantee,
                notes={
                    **guarantee.notes,
                    "regression": "ordinary least squares from the private joint second moment "
                    "of [X, (1,) y] (post-processing)",
                },
            ),
        )

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
        return super().fit(X, y)

    def predict(self, X: Any) -> np.ndarray:
        """Predictions ``X coef_ + intercept_``.

        Post-processing only: consumes no budget.
        """
        values = _check_predict_input(self, X)
        return values @ self.coef_ + self.intercept_


def _solver_result(coef: np.ndarray, info: dict[str, Any]) -> Any:
    """The normal equations' outcome as the one solver-result type of the library."""
    from dpggm.solvers import SolverResult

    return SolverResult(estimate=coef, extra=dict(info), message=str(info.get("method", "")))


@dataclass
class _Stacked:
    """The records ``[x, (1,) y]`` of a regression, for the covariance estimator."""

    stacked: np.ndarray
    columns: list[str]

    @property
    def n_samples(self) -> int:
        return self.stacked.shape[0]

    @property
    def n_features(self) -> int:
        return len(self.columns)


def _row_bound(x_bound: float, fit_intercept: bool) -> float:
    """The row-norm bound of ``[x, 1]``: ``sqrt(B^2 + 1)``, rounded up so that it stays a
    bound (``B`` itself without an intercept)."""
    if not fit_intercept:
        return x_bound
    squared = Fraction(x_bound) ** 2 + 1
    bound = math.sqrt(float(squared))
    while Fraction(bound) ** 2 < squared:
        bound = math.nextafter(bound, math.inf)
    return bound


@dataclass
class _RegressionStatistics:
    """``[X, 1]^T [X, 1]``, ``[X, 1]^T y`` and the sizes of the clipped records."""

    gram: np.ndarray
    moment: np.ndarray
    n: int
    columns: list[str]
    x_bound: float

    @property
    def n_samples(self) -> int:
        return self.n

    @property
    def n_features(self) -> int:
        return len(self.columns)


def _clipped_regression_statistics(
    X: Any, y: Any, *, bounds: Any, y_bound: float, fit_intercept: bool
) -> tuple[np.ndarray, np.ndarray, int, list[str], float]:
    """``[X, 1]^T [X, 1]``, ``[X, 1]^T y``, n, the column names and the row-norm bound of
    ``[x, 1]``, for records clipped to ``bounds`` and targets to ``[-y_bound, y_bound]``:
    one pass of :class:`~dpggm.data.passes.RegressionSums` over the records ``[x, y]`` (in
    memory, or partition by partition for Dask input)."""
    if is_dask_collection(X) or is_dask_collection(y):
        from dpggm.data.dask_records import DaskRecords

        records: Any = DaskRecords(X, target=y)
    else:
        features, columns = as_matrix(X)
        records = ArrayRecords.with_target(features, _as_target(y, features.shape[0]),
                                           columns)
    with records:
        sums = records.run(RegressionSums(bounds, float(y_bound), fit_intercept))
        columns = records.columns[:-1]
    if sums.n < 2:
        raise too_few_records(sums.n)
    gram = (sums.gram + sums.gram.T) / 2
    x_bound = bounds.row_norm(len(columns))
    return gram, sums.moment, sums.n, columns, _row_bound(x_bound, fit_intercept)


class AdaSSP(_SavesCoefficients, RegressorMixin, DPEstimator):
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
    solver_ : SolverResult
        The normal equations' outcome.
    accountant_ : PrivacyAccountant or None
    n_samples_ : int
        Under replace-one neighbours only: under add/remove the number of records is
        private and AdaSSP releases no count, so it is not set (``result.json`` records
        ``n_samples: null``).
    n_features_in_ : int
    privacy_ : PrivacyGuarantee

    Notes
    -----
    ``save(directory, ledger=..., dataset=...)`` writes ``result.json`` and ``coef.csv``
    (:func:`coefficients_csv_text`: ``term,coefficient``, the ``(Intercept)`` row first
    when ``fit_intercept=True``, then one row per feature).

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
        "budget": BudgetOf(ApproxDP, ZCDP, GDP, NonPrivate, positive_delta=True,
                           why="AdaSSP releases Gaussian noise, which cannot satisfy pure "
                               "epsilon-DP"),
        "y_bound": Required(Interval(0, None), "declare |y| <= y_bound from domain knowledge"),
        "failure_probability": fraction(),
        "fit_intercept": FLAG,
        "calibration": CALIBRATION,
        "noise": NOISE,
    }

    _STEPS = ("smallest eigenvalue", "X^T X", "X^T y")

    def _accounting(self, params: dict[str, Any], requested: Budget) -> Budget:
        # Exact noise under GDP(mu) delivers zCDP: the thirds are split off mu**2 / 2.
        if isinstance(requested, GDP) and params["noise"] == "exact":
            return accounting_total(requested, ZCDP)
        return requested

    @contextlib.contextmanager
    def _records(self, X: Any, y: Any, settings: Settings) -> Iterator[Any]:
        yield _RegressionStatistics(*_clipped_regression_statistics(
            X, y, bounds=settings["bounds"], y_bound=settings["y_bound"],
            fit_intercept=settings["fit_intercept"]))

    def _context(self, settings: Settings) -> ReleaseContext:
        bounds = settings["bounds"]
        return make_context(self, {"x": bounds.to_dict(),
                                   "y": {"kind": "abs", "bound": settings["y_bound"]},
                                   "data_derived": bool(bounds.data_derived)})

    def _mechanisms(self, settings: Settings, p: int) -> tuple[float, list[GaussianMechanism]]:
        """The row-norm bound of ``[x, (1)]`` and the three Gaussian releases, a third of
        the total each (the last exactly what remains)."""
        x_bound = _row_bound(settings["bounds"].row_norm(p), settings["fit_intercept"])
        d = p + (1 if settings["fit_intercept"] else 0)
        neighbors = settings["neighbors"]
        row = RowNorm(x_bound)
        total = settings.accounting
        third = dyadic_share(total, Fraction(1, 3))
        notion = type(total)
        last = budget_from_cost(notion, tuple(
            t - 2 * c for t, c in zip(exact_cost(total, notion), exact_cost(third, notion))))
        sensitivities = (
            # lambda_min(X^T X) moves by at most ||x||^2 <= x_bound^2 (Weyl), both relations.
            gram_entry_sensitivity(row, p=1, neighbors="add-remove")[0, 0],
            gram_l2_sensitivity(row, p=d, neighbors=neighbors),
            sum_l2_sensitivity(RowNorm(x_bound * settings["y_bound"]), p=d, neighbors=neighbors),
        )
        sizes = (1, d * (d + 1) // 2, d)
        return x_bound, [
            GaussianMechanism(sensitivity=float(sens), size=size, budget=budget,
                              calibration=settings["calibration"], noise=settings["noise"])
            for sens, size, budget in zip(sensitivities, sizes, (third, third, last))
        ]

    def _check_range(self, settings: Settings, n: int, p: int) -> None:
        """Before any draw: every release must be drawable at its third of the budget."""
        if settings["noise"] == "float":
            check_budget_range(settings.requested, [], release="AdaSSP")
            return
        x_bound = _row_bound(settings["bounds"].row_norm(p), settings["fit_intercept"])
        d = p + (1 if settings["fit_intercept"] else 0)
        neighbors = settings["neighbors"]
        records = n if neighbors == "replace" else MAX_RECORDS  # n is private under add/remove
        row = RowNorm(x_bound)
        y_bound = settings["y_bound"]
        parts = [
            NoisePart(share=Fraction(1, 3), size=1, value_bound=x_bound**2 * records,
                      sensitivity=gram_entry_sensitivity(row, p=1, neighbors="add-remove")[0, 0]),
            NoisePart(share=Fraction(1, 3), size=d * (d + 1) // 2,
                      value_bound=x_bound**2 * records,
                      sensitivity=gram_l2_sensitivity(row, p=d, neighbors=neighbors)),
            NoisePart(share=Fraction(1, 3), size=d, value_bound=x_bound * y_bound * records,
                      sensitivity=sum_l2_sensitivity(RowNorm(x_bound * y_bound), p=d,
                                                     neighbors=neighbors)),
        ]
        check_budget_range(settings.requested, parts,
                           release=f"AdaSSP on {p} features" + (
                               f" from n = {n} rows" if neighbors == "replace" else ""))

    def _plan(self, settings: Settings, n: int, p: int) -> ReleasePlan:
        """Three Gaussian releases: the smallest eigenvalue of ``X^T X``, ``X^T X`` and
        ``X^T y``."""
        if settings.non_private:
            return ReleasePlan("AdaSSP", n, p, settings.requested, settings.requested, (),
                               settings["neighbors"], {"reason": "non-private reference run"})
        self._check_range(settings, n, p)
        _, mechanisms = self._mechanisms(settings, p)
        return ReleasePlan("AdaSSP", n, p, settings.requested, settings.accounting,
                           tuple(m.planned(name) for name, m in zip(self._STEPS, mechanisms)),
                           settings["neighbors"], {})

    def _run(self, settings: Settings, plan: ReleasePlan, data: Any, run: PlanRun,
             ctx: ReleaseContext) -> Any:
        gram, moment = data.gram, data.moment
        if plan.non_private:
            return None
        lambda_min = float(np.linalg.eigvalsh(gram)[0])
        noisy_lambda_min = float(run.run("smallest eigenvalue", lambda s: s.measurement.release(
            np.array([lambda_min]), ctx.source)[0]))
        iu = np.triu_indices(gram.shape[0])

        def release_gram(planned: Any) -> np.ndarray:
            out = np.zeros_like(gram)
            out[iu] = planned.measurement.release(gram[iu], ctx.source)
            return out + np.triu(out, 1).T

        noisy_gram = run.run("X^T X", release_gram)
        noisy_moment = run.run("X^T y", lambda s: s.measurement.release(moment, ctx.source))
        return noisy_lambda_min, noisy_gram, np.atleast_1d(np.asarray(noisy_moment, dtype=float))

    def _finish(self, X: Any, settings: Settings, plan: ReleasePlan, data: Any, release: Any,
                run: PlanRun, ctx: ReleaseContext) -> None:
        gram, moment, n, columns = data.gram, data.moment, data.n_samples, data.columns
        p, d = len(columns), gram.shape[0]
        beta = settings["failure_probability"]
        if release is None:
            coef, info = solve_normal_equations(
                np.block([[gram, moment[:, None]], [moment[None, :], np.zeros((1, 1))]]),
                n_features=d,
            )
            self._set_coefficients(coef, p)
            self.ridge_ = 0.0
            self.noisy_min_eigenvalue_ = float(np.linalg.eigvalsh(gram)[0])
            self.solver_ = _solver_result(coef, info)
            self.accountant_ = None
            self._set_fitted(
                X, n_samples=n, n_features=p, columns=columns,
                privacy=ctx.guarantee(
                    budget=settings.requested,
                    mechanism="adassp (non-private reference: ordinary least squares)",
                ),
            )
            return
        noisy_lambda_min, noisy_gram, noisy_moment = release
        eigen, gram_step, moment_step = (plan.step(name).measurement for name in self._STEPS)
        sigma_eigen = eigen.sigma
        if isinstance(settings.requested, ApproxDP):
            shift = math.sqrt(math.log(6.0 / settings.requested.delta))
        else:
            shift = math.sqrt(2.0 * math.log(3.0 / beta))
        noisy_min = max(noisy_lambda_min - sigma_eigen * shift, 0.0)
        ridge = max(0.0, gram_step.sigma * math.sqrt(d * math.log(2.0 * d * d / beta)) - noisy_min)
        joint = np.zeros((d + 1, d + 1))
        joint[:d, :d] = noisy_gram
        joint[:d, d] = joint[d, :d] = noisy_moment
        coef, info = solve_normal_equations(joint, n_features=d, ridge=ridge)
        self._set_coefficients(coef, p)
        self.ridge_ = ridge
        self.noisy_min_eigenvalue_ = noisy_min
        self.solver_ = _solver_result(coef, info)
        self.accountant_ = run.accountant
        privacy = ctx.planned_guarantee(
            plan, run, mechanism="adassp (Wang 2018, Algorithm 2)",
            noise={
                **eigen.record("min_eigenvalue_"),
                "min_eigenvalue_shift": sigma_eigen * shift,
                **gram_step.record("gram_"),
                **moment_step.record("moment_"),
                "budget_per_release": plan.step("smallest eigenvalue").budget,
                "calibration": settings["calibration"]
                if isinstance(settings.requested, ApproxDP) else "exact",
            },
            notes={"ridge": ridge},
        )
        # n is public under replace-one; under add/remove AdaSSP releases no count, so
        # n_samples_ is not set (the exact count is never exposed there).
        self._set_fitted(
            X, n_samples=n if ctx.neighbors == "replace" else None, n_features=p,
            columns=columns, privacy=privacy,
        )

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
        return super().fit(X, y)

    def _set_coefficients(self, coef: np.ndarray, p: int) -> None:
        self.coef_ = coef[:p]
        self.intercept_ = float(coef[p]) if self.fit_intercept else 0.0

    def predict(self, X: Any) -> np.ndarray:
        """Predictions ``X coef_ + intercept_``.

        Post-processing only: consumes no budget.
        """
        values = _check_predict_input(self, X)
        return values @ self.coef_ + self.intercept_
