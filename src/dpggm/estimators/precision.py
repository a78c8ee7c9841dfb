"""Private precision matrices and sparse covariances by covariance perturbation
(Su, Guo & Zhang; Wang, Huai & Xu; Wang, Xu & He: docs/papers.md).

* :class:`RidgePrecision` -- DP-RP: closed-form ridge precision of the released matrix.
* :class:`GraphicalLasso` -- DP-AGL / covariance perturbation: graphical lasso on the
  released matrix, with any covariance mechanism.
* :class:`OutputPerturbationPrecision` -- Wang, Huai & Xu, Algorithm 1 (Wishart output
  perturbation); its published guarantee rests on a flawed argument, so it runs only
  with ``allow_invalid=True`` and reports ``validity="invalid"``.
* :class:`ThresholdedCovariance` -- DP-Thresholding (Wang, Xu & He).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
from sklearn.model_selection import KFold

from dpggm.data.records import RecordMatrix
from dpggm.data.tables import as_matrix, too_few_variables
from dpggm.estimators._base import (
    DPEstimator,
    PrivateEstimatorBase,
    Settings,
)
from dpggm.estimators._contract import FLAG, AnyOf, BudgetOf, Interval, Options
from dpggm.estimators.edges import INFERENCE_COLUMNS
from dpggm.exceptions import ConvergenceWarning, InvalidGuaranteeError
from dpggm.mechanisms.additive import GaussianMechanism
from dpggm.mechanisms.bounds import RowNorm
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.noise import WishartMechanism
from dpggm.mechanisms.plan import PlanRun, ReleasePlan
from dpggm.mechanisms.record import Release
from dpggm.mechanisms.release import WISHART_FLOAT_REASON
from dpggm.privacy.budgets import NonPrivate, PureDP
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA
from dpggm.solvers.glasso import graphical_lasso
from dpggm.solvers.inference import ClippingModel
from dpggm.solvers.psd import project_psd
from dpggm.solvers.released import auto_alpha, solve_released
from dpggm.solvers.ridge import ridge_precision
from dpggm.solvers.threshold import hard_threshold

__all__ = [
    "GraphicalLasso",
    "OutputPerturbationPrecision",
    "RidgePrecision",
    "ThresholdedCovariance",
    "auto_alpha",
    "non_private_cv_alpha",
    "solve_released",
]


def _gaussian_loglik(precision: np.ndarray, covariance: np.ndarray) -> float:
    sign, logdet = np.linalg.slogdet(precision)
    if sign <= 0:
        return -np.inf
    return float(logdet - np.sum(precision * covariance))


def non_private_cv_alpha(
    X: np.ndarray, alphas: np.ndarray, *, n_folds: int = 5, solver: str = "auto",
    penalize_diagonal: bool = False,
) -> tuple[float, np.ndarray]:
    """Su, Guo & Zhang's K-fold likelihood cross-validation of the penalty, **on the raw data**.

    This is not private: the chosen penalty depends on the private records. Results using
    it are reported as ``validity="data-dependent"``.
    """
    scores = np.zeros(len(alphas))
    for train, test in KFold(n_splits=n_folds, shuffle=True, random_state=0).split(X):
        S_train = X[train].T @ X[train] / len(train)
        S_test = X[test].T @ X[test] / len(test)
        for i, alpha in enumerate(alphas):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                res = graphical_lasso(S_train, float(alpha), method=solver,
                                      penalize_diagonal=penalize_diagonal)
            scores[i] += _gaussian_loglik(res.estimate, S_test) / n_folds
    return float(alphas[int(np.argmax(scores))]), scores


#: Why edge inference does not describe a release, by the class of the measurement of
#: its second moment. It describes the Gaussian mechanism: symmetric noise whose upper
#: triangle, diagonal included, is independent with one stated variance.
_NO_INFERENCE = {
    "LaplaceMechanism": "Laplace noise (a pure-DP budget) has heavy tails: where it "
                        "dominates, the few pairs selected were mostly false in our "
                        "measurements (FDR up to 0.9 at a target of 0.1; "
                        "docs/inference.md, 'Other estimators')",
    "EntrywiseGaussian": "SULQ adds noise of a different variance to each entry (one query "
                         "per entry, calibrated to its own sensitivity), which the closed "
                         "form's one variance does not describe",
    "WishartMechanism": "Wishart noise is not independent entrywise with one variance (its "
                        "diagonal has twice the off-diagonal variance, its entries are sums "
                        "of p + 1 squares, its mean is not zero), which the closed form does "
                        "not describe",
}


class _PerturbationEstimator(PrivateEstimatorBase):
    """Shared constructor parameters of the covariance-perturbation estimators, and edge
    inference on their release (:meth:`infer`, ``inference_``)."""

    def _finish(self, X: Any, settings: Settings, plan: ReleasePlan, data: Any,
                release: Release, run: PlanRun, ctx: ReleaseContext) -> None:
        super()._finish(X, settings, plan, data, release, run, ctx)
        self.entry_noise_std_ = float(release.noise.std)
        measurement = (None if settings.non_private
                       else plan.step("second moment").measurement)
        kind = type(measurement).__name__
        self._inference_refusal = (
            None if measurement is None or isinstance(measurement, GaussianMechanism)
            else _NO_INFERENCE.get(kind, f"its release ({kind}) is not the Gaussian mechanism"))
        bounds = settings["bounds"]
        # Rows shrunk onto a declared ball: the correction of the intervals, as
        # PrivateGraph's with declared bounds (records located at the released mean, or at
        # zero); a declared box has no closed form.
        # The record the inference reads: the release with how its records were clipped.
        self._release = replace(release, clipping=(
            ClippingModel(row_norm_bound=bounds.bound, box=None, mean=release.mean,
                          recenter=False) if isinstance(bounds, RowNorm) else None))
        self.inference_ = None
        if self._inference_refusal is None:
            from dpggm.estimators._contract import feature_names

            frame = self.infer().to_frame(list(feature_names(self)))
            self.inference_ = frame[list(INFERENCE_COLUMNS)]

    def _inference_pilot(self) -> tuple[Any, Any]:
        """The pilot precision and penalty of the inference: by default its own graphical
        lasso at the noise-calibrated penalty (a penalty chosen otherwise would change the
        pilot's support, and the calibration was measured with this one)."""
        return None, "auto"

    def infer(self, *, confidence_level: float = 0.9, fdr: float = 0.1,
              fdr_method: str = "bh", method: str = "closed-form", n_bootstrap: int = 200,
              clipping_correction: str = "intervals") -> Any:
        """Edge inference on this fit's release: every pair's de-biased partial
        correlation, interval, p-value and q-value, and the pairs selected at ``fdr``
        (:func:`~dpggm.solvers.inference.edge_inference`; ``to_frame(names)`` for a table).

        Available for the Gaussian mechanism (``mechanism="gaussian"`` with a zCDP,
        ``(epsilon, delta)`` or GDP budget), whose noise is symmetric with one stated
        variance on every entry (``entry_noise_std_``), and for a non-private run. The
        estimand is the partial correlations of the clipped records' second moment (their
        covariance with ``center="private"`` or a public center); with a declared
        row-norm bound the intervals are corrected for the shrinkage of the rows onto it
        (``clipping_correction``, as :meth:`PrivateGraph.infer
        <dpggm.estimators.graph.PrivateGraph.infer>`). ``inference_`` is this at the
        defaults.

        Privacy
        -------
        Post-processing: reads the release record (the statistic ``noisy_covariance_``),
        the public description of its noise and the number of records behind it -- ``n``, public under replace-one
        neighbours; under add/remove the released noisy count (``n_samples_``), the only
        count a release states -- never the data; spends nothing.
        """
        from dpggm.solvers.inference import edge_inference

        refusal = getattr(self, "_inference_refusal", None)
        if not hasattr(self, "noisy_covariance_"):
            raise ValueError(f"{type(self).__name__} is not fitted: call fit first")
        if refusal is not None:
            raise ValueError(f"edge inference needs the Gaussian mechanism (mechanism="
                             f"'gaussian' with a zCDP, (epsilon, delta) or GDP budget): "
                             f"{refusal}")
        if clipping_correction not in ("intervals", "all", "none"):
            raise ValueError("clipping_correction must be one of 'intervals', 'all', 'none'; "
                             f"got {clipping_correction!r}")
        precision, alpha = self._inference_pilot()
        release = self._release
        clipping = None if clipping_correction == "none" else release.clipping
        return edge_inference(
            release.statistic, n_samples=int(release.n_samples),
            noise_variance=release.noise.variance, precision=precision, alpha=alpha,
            clipping=clipping,
            clipping_correction="all" if clipping_correction == "none" else clipping_correction,
            confidence_level=confidence_level, fdr=fdr, fdr_method=fdr_method, method=method,
            n_bootstrap=n_bootstrap)


_COMMON_DOC = """
    budget : Budget
        What to spend; its notion must suit ``mechanism`` (see
        :class:`~dpggm.estimators.covariance.PrivateCovariance`). ``NonPrivate()`` gives the
        exact non-private estimate. Required.
    bounds : RowNorm or Box
        Declared public bound on every record. Required.
    mechanism : {"gaussian", "laplace", "sulq", "wishart", "wishart-pure"}, default="gaussian"
    neighbors : {"replace", "add-remove"}, default="replace"
    center : {"none", "private"} or array, default="none"
    mean_fraction : float, default=0.1
    count_fraction : float, default=0.05
        Share of the budget spent on the noisy count under ``neighbors="add-remove"``.
    calibration : {"analytic", "classical"}, default="analytic"
    noise : {"exact", "float"}, default="exact"
    allow_invalid : bool, default=False
    wishart_mean_removal : bool, default=False
    missing : {"refuse", "drop"}, default="refuse"
        A missing value (NaN, an empty field) is refused, or (``"drop"``, only with
        ``neighbors="add-remove"``, whose count is private) its row is left out: one
        person's record is kept or left out whatever the others hold, so the guarantee is
        unchanged.
    report_delta : float, default=1e-6
    random_state : None, int, Generator or "secure"
"""


def _init_common(self, budget, bounds, mechanism, neighbors, center, mean_fraction,
                 calibration, allow_invalid, wishart_mean_removal, report_delta, random_state,
                 count_fraction, noise, missing="refuse"):
    self.budget = budget
    self.bounds = bounds
    self.mechanism = mechanism
    self.neighbors = neighbors
    self.center = center
    self.mean_fraction = mean_fraction
    self.calibration = calibration
    self.allow_invalid = allow_invalid
    self.wishart_mean_removal = wishart_mean_removal
    self.report_delta = report_delta
    self.random_state = random_state
    self.count_fraction = count_fraction
    self.noise = noise
    self.missing = missing


class RidgePrecision(_PerturbationEstimator):
    """DP-RP: ridge precision of a privately released second moment (Su, Guo & Zhang).

    ``Theta = argmin -log|Theta| + tr(S~ Theta) + ridge ||Theta||_F^2`` in closed form from
    the eigendecomposition of the release; positive definite even when ``S~`` is not.

    Parameters
    ----------
    ridge : float > 0
        Frobenius penalty.
    """ + _COMMON_DOC + """
    Attributes
    ----------
    precision_, covariance_, noisy_covariance_, privacy_, n_samples_, n_features_in_
    inference_ : DataFrame or None
        Edge inference on the release (:meth:`infer` at its defaults): every pair
        ``j < k`` with ``source, target, partial_correlation, ci_low, ci_high, p_value,
        q_value, selected`` (FDR 0.1, 90 % intervals); ``None`` for a release it does
        not describe (Laplace noise under a pure-DP budget, ``"sulq"``, ``"wishart"``,
        ``"wishart-pure"``).
    entry_noise_std_ : float
        The noise standard deviation of one entry of ``noisy_covariance_`` (public).

    Privacy
    -------
    One release of the second moment; the ridge solution is post-processing.
    """

    _constraints = {"ridge": Interval(0, None)}

    def __init__(self, *, ridge: float = 0.1, budget: Any = None, bounds: Any = None,
                 mechanism: str = "gaussian", neighbors: str = "replace", center: Any = "none",
                 mean_fraction: float = 0.1, calibration: str = "analytic",
                 allow_invalid: bool = False, wishart_mean_removal: bool = False,
                 report_delta: float = DEFAULT_REPORT_DELTA, random_state: Any = None,
                 count_fraction: float = 0.05, noise: str = "exact", missing: str = "refuse") -> None:
        self.ridge = ridge
        _init_common(self, budget, bounds, mechanism, neighbors, center, mean_fraction,
                     calibration, allow_invalid, wishart_mean_removal, report_delta, random_state,
                     count_fraction, noise, missing)

    def _solve(self, X: Any, settings: Settings, release: Release,
               data: Any) -> None:
        """The ridge precision of the release (post-processing)."""
        self.solver_ = ridge_precision(release.statistic, float(settings["ridge"]))
        self.precision_ = self.solver_.estimate
        self.covariance_ = np.linalg.inv(self.precision_)


class GraphicalLasso(_PerturbationEstimator):
    """Graphical lasso on a privately released second moment (DP-AGL, Su, Guo & Zhang;
    covariance perturbation, Wang, Huai & Xu).

    Parameters
    ----------
    alpha : float >= 0, "auto" or "cv-nonprivate"
        The l1 penalty. ``"auto"`` uses :func:`auto_alpha` (release and public noise scale
        only; no extra budget). ``"cv-nonprivate"`` reproduces Su, Guo & Zhang's 5-fold likelihood
        cross-validation on the raw data -- **not private**: the result is reported as
        ``validity="data-dependent"``.
    solver : {"auto", "cd", "admm"}, default="auto"
    penalize_diagonal : bool, default=False
        Su, Guo & Zhang penalise the diagonal too; scikit-learn does not.
    tol : float, default=1e-8
    max_iter : int, default=1000
    """ + _COMMON_DOC + """
    Attributes
    ----------
    precision_ : ndarray (p, p)
    covariance_ : ndarray (p, p)
    alpha_ : float
    solver_ : SolverResult
        The graphical-lasso solver's outcome (``iterations``, ``converged``, ...).
    n_edges_ : int
    repaired_ : bool
        True when the graphical lasso had no solution on the release at ``alpha_`` (it was
        too far from positive definite) and the release was repaired by post-processing:
        variances below the public floor (the off-diagonal noise standard deviation) are
        raised to it and, if that is not enough, the matrix is projected onto the matrices
        with eigenvalues at least that floor.
    n_diagonal_repaired_ : int
        Released variances raised to the floor by that repair.
    noisy_covariance_, privacy_, n_samples_, n_features_in_
    inference_ : DataFrame or None
        Edge inference on the release (:meth:`infer` at its defaults): every pair
        ``j < k`` with ``source, target, partial_correlation, ci_low, ci_high, p_value,
        q_value, selected`` (FDR 0.1, 90 % intervals); ``None`` for a release it does
        not describe (Laplace noise under a pure-DP budget, ``"sulq"``, ``"wishart"``,
        ``"wishart-pure"``).
    entry_noise_std_ : float
        The noise standard deviation of one entry of ``noisy_covariance_`` (public).

    Privacy
    -------
    One release of the second moment; the solver is post-processing. With
    ``alpha="cv-nonprivate"`` the penalty depends on the data: no formal guarantee.
    """

    _constraints = {
        "alpha": AnyOf(Interval(0, None, closed="left"), Options("auto", "cv-nonprivate")),
        "solver": Options("auto", "cd", "admm"),
        "penalize_diagonal": FLAG,
        "tol": Interval(0, None),
        "max_iter": Interval(1, None, closed="left", integer=True),
    }

    def __init__(self, *, alpha: Any = "auto", solver: str = "auto",
                 penalize_diagonal: bool = False, tol: float = 1e-8, max_iter: int = 1000,
                 budget: Any = None, bounds: Any = None, mechanism: str = "gaussian",
                 neighbors: str = "replace", center: Any = "none", mean_fraction: float = 0.1,
                 calibration: str = "analytic", allow_invalid: bool = False,
                 wishart_mean_removal: bool = False, report_delta: float = DEFAULT_REPORT_DELTA,
                 random_state: Any = None, count_fraction: float = 0.05,
                 noise: str = "exact", missing: str = "refuse") -> None:
        self.alpha = alpha
        self.solver = solver
        self.penalize_diagonal = penalize_diagonal
        self.tol = tol
        self.max_iter = max_iter
        _init_common(self, budget, bounds, mechanism, neighbors, center, mean_fraction,
                     calibration, allow_invalid, wishart_mean_removal, report_delta, random_state,
                     count_fraction, noise, missing)

    def _settings(self) -> Settings:
        settings = super()._settings()
        if isinstance(settings["alpha"], str) and settings["alpha"] == "cv-nonprivate" and (
                not settings.non_private):
            return replace(settings, data_dependent=settings.data_dependent + (
                "the penalty alpha was chosen by non-private cross-validation on the private "
                "data (Su, Guo & Zhang's procedure): no formal guarantee",))
        return settings

    def _solve(self, X: Any, settings: Settings, release: Release,
               data: Any) -> None:
        """The graphical lasso on the release (post-processing; with
        ``alpha="cv-nonprivate"`` the penalty is tuned on the raw data)."""
        S = release.statistic
        alpha = settings["alpha"]
        if alpha == "auto":
            alpha = auto_alpha(S, noise_std=release.noise.std, n=release.n_samples)
        elif alpha == "cv-nonprivate":
            values, _ = as_matrix(X)
            clipped, _ = settings["bounds"].clip(values)
            grid = np.geomspace(1e-3, 1.0, 12) * float(np.max(np.abs(np.diag(S))) or 1.0)
            alpha, _ = non_private_cv_alpha(clipped, grid, solver=self.solver,
                                            penalize_diagonal=self.penalize_diagonal)
        options = {"method": self.solver, "penalize_diagonal": self.penalize_diagonal,
                   "tol": self.tol, "max_iter": self.max_iter}
        result, self.repaired_, self.n_diagonal_repaired_ = solve_released(
            S, float(alpha), noise_std=release.noise.std, **options)
        self.alpha_ = float(alpha)
        self.solver_ = result
        self.precision_ = result.estimate
        self.covariance_ = result.covariance
        self._set_graph(np.abs(result.estimate) > 0)
        self.n_edges_ = int(np.triu(self.adjacency_, 1).sum())

    def _inference_pilot(self) -> tuple[Any, Any]:
        # At the noise-calibrated penalty the fit's own solution is the inference's pilot.
        if self.alpha == "auto":
            return self.precision_, self.alpha_
        return super()._inference_pilot()


_OUTPUT_PERTURBATION_FLAW = (
    "Wang, Huai & Xu's output perturbation adds Wishart noise whose privacy proof rests on the "
    "same flawed argument as the pure-epsilon Wishart mechanism (Sheffet 2019, footnote 4; "
    "Amin et al. 2019, section 1.2): the claimed epsilon-DP guarantee does not hold"
)


class OutputPerturbationPrecision(DPEstimator):
    """Wang, Huai & Xu, Algorithm 1: graphical lasso on the exact ``S`` plus Wishart noise
    ``W ~ Wishart_p(p + 1, p^{5/2} / (n epsilon alpha^2) I)``.

    **Its published guarantee is invalid.** It runs only with ``allow_invalid=True`` and then
    reports ``validity="invalid"``; use it to reproduce the paper, never to release data.

    Parameters
    ----------
    alpha : float > 0
    budget : PureDP
        The paper's claimed epsilon (not a valid guarantee).
    bounds : RowNorm
        The paper assumes ``||x||_2 <= 1``; records are clipped to the declared bound.
    allow_invalid : bool, default=False
    solver, penalize_diagonal, tol, max_iter : as in :class:`GraphicalLasso`
    neighbors, report_delta, random_state : as elsewhere

    Privacy
    -------
    None that can be relied on: see above.
    """

    _constraints = {
        "budget": BudgetOf(PureDP, NonPrivate, why="the paper's claim"),
        "alpha": Interval(0, None),
        "allow_invalid": FLAG,
        "solver": Options("auto", "cd", "admm"),
        "penalize_diagonal": FLAG,
        "tol": Interval(0, None),
        "max_iter": Interval(1, None, closed="left", integer=True),
    }

    def __init__(self, *, alpha: float = 0.1, budget: Any = None, bounds: Any = None,
                 allow_invalid: bool = False, solver: str = "auto",
                 penalize_diagonal: bool = False, tol: float = 1e-8, max_iter: int = 1000,
                 neighbors: str = "replace", report_delta: float = DEFAULT_REPORT_DELTA,
                 random_state: Any = None) -> None:
        self.alpha = alpha
        self.budget = budget
        self.bounds = bounds
        self.allow_invalid = allow_invalid
        self.solver = solver
        self.penalize_diagonal = penalize_diagonal
        self.tol = tol
        self.max_iter = max_iter
        self.neighbors = neighbors
        self.report_delta = report_delta
        self.random_state = random_state

    def _settings(self) -> Settings:
        settings = super()._settings()
        if not settings["allow_invalid"]:
            raise InvalidGuaranteeError(
                f"OutputPerturbationPrecision is refused: {_OUTPUT_PERTURBATION_FLAW}. Pass "
                "allow_invalid=True only to reproduce the paper."
            )
        return replace(settings, invalid_reason=f"{_OUTPUT_PERTURBATION_FLAW}; "
                                                f"{WISHART_FLOAT_REASON}")

    @contextlib.contextmanager
    def _records(self, X: Any, y: Any, settings: Settings) -> Iterator[Any]:
        values, columns = as_matrix(X)
        clipped, _ = settings["bounds"].clip(values)
        yield RecordMatrix(clipped, columns)

    def _plan(self, settings: Settings, n: int, p: int) -> ReleasePlan:
        if p < 2:
            raise too_few_variables(p, minimum=2, who=type(self).__name__)
        budget = settings.requested
        if isinstance(budget, NonPrivate):
            return ReleasePlan(type(self).__name__, n, p, budget, budget, (),
                               settings["neighbors"], {"reason": "non-private reference run"})
        alpha = settings["alpha"]
        mechanism = WishartMechanism(
            p=p, df=p + 1, scale=p**2.5 / (n * budget.epsilon * alpha**2), claimed=budget,
            row_bound=settings["bounds"].row_norm(p), invalid_reason=_OUTPUT_PERTURBATION_FLAW)
        return ReleasePlan(type(self).__name__, n, p, budget, budget,
                           (mechanism.planned("precision (output perturbation)"),),
                           settings["neighbors"], {"invalid_reason": _OUTPUT_PERTURBATION_FLAW})

    def _run(self, settings: Settings, plan: ReleasePlan, data: Any, run: PlanRun,
             ctx: ReleaseContext) -> Any:
        n, p = data.values.shape
        S = data.values.T @ data.values / n
        result = graphical_lasso(S, settings["alpha"], method=self.solver,
                                 penalize_diagonal=self.penalize_diagonal, tol=self.tol,
                                 max_iter=self.max_iter)
        self.non_private_precision_ = result.estimate
        # The solver ran on the exact private matrix: its outcome (iterations, convergence)
        # is a figure of the private data, kept for the curator and never written.
        self.non_private_solver_ = result
        self.solver_ = None
        if plan.non_private:
            return result.estimate
        return run.run("precision (output perturbation)",
                       lambda planned: planned.measurement.release(result.estimate, ctx.source))

    def _finish(self, X: Any, settings: Settings, plan: ReleasePlan, data: Any, release: Any,
                run: PlanRun, ctx: ReleaseContext) -> None:
        self.precision_ = release
        mechanism = ("output perturbation (non-private reference)" if plan.non_private
                     else "wishart output perturbation (Wang, Huai & Xu, Algorithm 1)")
        noise = {} if plan.non_private else plan.steps[0].measurement.record()
        privacy = ctx.planned_guarantee(plan, run, mechanism=mechanism, noise=noise,
                                   invalid_reason=settings.invalid_reason)
        self._set_fitted(X, n_samples=data.n_samples, n_features=data.n_features,
                         columns=data.columns, privacy=privacy,
                         covariance=np.linalg.pinv(self.precision_))



class ThresholdedCovariance(_PerturbationEstimator):
    """DP-Thresholding for sparse covariance (Wang, Xu & He).

    The second moment is released with the Gaussian mechanism, entries with
    ``|S~_ij| <= gamma * B^2 * sqrt(log p / n) + 4 * sigma * sqrt(log p)`` are set to zero
    (``sigma`` the noise standard deviation actually used, ``B`` the row-norm bound), and the
    result is projected onto the PSD cone. With ``B = 1`` and the classical calibration this
    is the paper's threshold ``gamma sqrt(log p / n) + 4 sqrt(2 ln(1.25/delta)) sqrt(log p) /
    (n epsilon)``.

    Parameters
    ----------
    gamma : float >= 0, default=1.0
        The paper's unspecified constant of the sampling-error term. The default 1.0 keeps
        entries that exceed about one standard deviation of sampling error for bounded data;
        tune it on public or synthetic data, not on the private data.
    keep_diagonal : bool, default=True
        Never threshold the diagonal (variances are not sparse).
    """ + _COMMON_DOC + """
    Attributes
    ----------
    covariance_, thresholded_covariance_, threshold_, noisy_covariance_, privacy_
    inference_ : DataFrame or None
        Edge inference on the release (:meth:`infer` at its defaults): every pair
        ``j < k`` with ``source, target, partial_correlation, ci_low, ci_high, p_value,
        q_value, selected`` (FDR 0.1, 90 % intervals); ``None`` for a release it does
        not describe (Laplace noise under a pure-DP budget, ``"sulq"``, ``"wishart"``,
        ``"wishart-pure"``).
    entry_noise_std_ : float
        The noise standard deviation of one entry of ``noisy_covariance_`` (public).

    Privacy
    -------
    One Gaussian release of the second moment; thresholding and projection are
    post-processing. The threshold uses only public quantities.
    """

    _constraints = {"gamma": Interval(0, None, closed="left"), "keep_diagonal": FLAG}

    def __init__(self, *, gamma: float = 1.0, keep_diagonal: bool = True, budget: Any = None,
                 bounds: Any = None, mechanism: str = "gaussian", neighbors: str = "replace",
                 center: Any = "none", mean_fraction: float = 0.1, calibration: str = "analytic",
                 allow_invalid: bool = False, wishart_mean_removal: bool = False,
                 report_delta: float = DEFAULT_REPORT_DELTA, random_state: Any = None,
                 count_fraction: float = 0.05, noise: str = "exact", missing: str = "refuse") -> None:
        self.gamma = gamma
        self.keep_diagonal = keep_diagonal
        _init_common(self, budget, bounds, mechanism, neighbors, center, mean_fraction,
                     calibration, allow_invalid, wishart_mean_removal, report_delta, random_state,
                     count_fraction, noise, missing)

    def _solve(self, X: Any, settings: Settings, release: Release,
               data: Any) -> None:
        """Threshold the release at a public level and project it (post-processing)."""
        gamma = float(settings["gamma"])
        S = release.statistic
        p, n = S.shape[0], release.n_samples
        B = settings["bounds"].row_norm(p)
        sigma = release.noise.std
        log_p = math.log(max(p, 2))
        self.threshold_ = gamma * B**2 * math.sqrt(log_p / n) + 4 * sigma * math.sqrt(log_p)
        self.solver_ = hard_threshold(S, self.threshold_, keep_diagonal=self.keep_diagonal)
        self.thresholded_covariance_ = self.solver_.estimate
        self.covariance_ = project_psd(self.thresholded_covariance_).estimate
