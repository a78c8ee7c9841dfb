"""Su, Guo & Zhang: DP-RP and DP-AGL on the four simulation models.

Reproduces, in reduced or full form, the paper's Tables 1-2 (relative l1, Frobenius and
spectral error of the private precision estimate against the non-private estimate at the
same penalty) and Figure 1 (ROC curves of DP-AGL for models 3 and 4).

What differs from the paper, and why:

* **Bound.** The paper divides every record by the data's largest row norm, a
  data-dependent bound with no formal guarantee. Here records are clipped to a declared
  :class:`~dpggm.mechanisms.bounds.RowNorm` bound ``B`` computed from the model's known
  covariance (public for a synthetic model): the Laurent-Massart level that a row of
  ``N(0, Σ)`` exceeds with probability at most 1e-3
  (:func:`~dpggm.experiments._common.gaussian_row_norm_bound`). The fraction of rows it
  actually clips is reported in the ``settings`` table.
* **Penalties.** The paper picks the penalty by non-private 5-fold cross-validation.
  Here the penalties are fixed public multiples of the public scale ``v = B² / p`` (an
  upper proxy for a typical variance): ``ridge = ridge_factor · v²`` for DP-RP,
  ``alpha = alpha_factor · v`` for DP-AGL (defaults 0.1 and {1, 10}), plus
  ``alpha="auto"`` (a penalty from the release and the public noise scale). With a
  penalised diagonal the graphical lasso on a noisy matrix has **no solution** when some
  released variance plus ``alpha`` is not positive (the paper's fixed-iteration ADMM
  returned an iterate regardless). The library's
  :class:`~dpggm.estimators.precision.GraphicalLasso` (method ``"DP-AGL"``) repairs the
  release by post-processing before solving: released variances below the public
  per-entry noise standard deviation are raised to it, and the release is projected onto
  well-conditioned matrices if the problem still has no solution; ``n_repaired`` counts
  the repetitions where it acted (at these noise levels, nearly all). The method
  ``"DP-AGL raw release (paper)"`` solves the paper's problem on the release as it is,
  for the fixed penalties; a repetition without a solution counts in ``n_failed``.
* **Calibration.** The Gaussian noise is the library's exact discrete Gaussian,
  calibrated through zCDP (the largest rho whose conversion implies the (epsilon, delta)
  asked), valid for every epsilon. The paper used the classical formula, which is proven
  only for epsilon < 1; the ``calibration`` column says so on every row and
  ``sigma_classical_formula`` shows what the paper's formula would have used.
* **Solver.** DP-AGL is the graphical lasso by ADMM with a penalised diagonal, as in the
  paper, but with the solver's adaptive augmented-Lagrangian parameter (the estimator
  does not expose the paper's fixed value 100) and a certified duality gap. The ROC
  penalty paths use the solver's ``"auto"`` method (warm-started coordinate descent,
  ADMM only to find a start): the problem is strictly convex, so this changes the speed,
  not the answer beyond the certified tolerance.
* **ROC scores.** The score of a node pair is the largest penalty on a path (15 values
  from the largest off-diagonal entry of the release down by a factor 100, a
  post-processing of the release) at which the pair is an edge; the paper's "smoothed
  average ROC" becomes the vertical average of the per-repetition curves.

The paper's own setting, like for like (``settings``). Beside the honest run, the same
samples and noise streams are run in the paper's setting, one step at a time, so that each
gap to the paper is split into its causes: ``"data-max"`` divides every record by the
sample's largest row norm and declares the bound 1 (the paper's normalisation: the bound
is read off the data), with the fixed penalties in those units; ``"data-max+cv"`` also
picks both penalties by the paper's non-private 5-fold likelihood cross-validation (Bien
and Tibshirani) on the normalised records; ``"paper"`` also draws the noise of the paper's
classical formula ``sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon``, released as the zCDP
budget that noise amounts to, ``rho = epsilon^2 / (4 ln(1.25/delta))`` (a proven
(epsilon, delta) calibration below epsilon = 1 only; ``epsilon_delivered`` is what it gives
at ``delta``). None of these carries a formal guarantee: their records say
``validity = "data-dependent: ..."``.

Privacy: an evaluation. Each repetition spends its stated budget once on one synthetic
sample; the comparison with the non-private estimate is not part of any release.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpggm.datasets.synthetic import make_precision_model
from dpggm.estimators.covariance import PrivateCovariance
from dpggm.estimators.precision import GraphicalLasso, RidgePrecision, non_private_cv_alpha
from dpggm.exceptions import ConvergenceWarning
from dpggm.experiments._common import (
    check_integers,
    check_positive_int,
    check_positive_number,
    check_positive_numbers,
    check_random_seed,
    format_mean_se,
    gaussian_row_norm_bound,
    loglog_slope,
    repetition_rng,
)
from dpggm.experiments.runner import (
    Aggregation,
    Cell,
    ExperimentSpec,
    Part,
    Results,
    attempt,
    run,
)
from dpggm.mechanisms.bounds import RowNorm
from dpggm.metrics.graph import edge_auc, edge_scores_to_roc
from dpggm.metrics.matrix import relative_error
from dpggm.privacy.budgets import ZCDP, ApproxDP, NonPrivate
from dpggm.solvers.glasso import graphical_lasso
from dpggm.solvers.ridge import ridge_precision

__all__ = ["LDA_EPSILONS", "run_ridge_precision_lda", "run_private_precision"]

#: The label of this experiment's random streams (the ``keys`` of
#: :func:`~dpggm.experiments._common.repetition_rng`). The committed runs in
#: docs/reproduction/ drew their data and noise from streams with this label (the number
#: the experiment had before it was named after its methods): it stays, because another
#: label would change every draw and the reduced re-run could no longer repeat them.
_STREAMS = "seed000"

PAPER_EPSILONS = (0.1, 0.3, 0.5, 0.8, 1.2, 2.0)
PAPER_SAMPLE_SIZES = (100, 200, 400)
PAPER_MODELS = (1, 2, 3, 4)
NORMS = ("l1", "fro", "spectral")
ROW_BOUND_TAIL = 1e-3

_FULL = {"n_features": 100, "repetitions": 50, "roc_repetitions": 50, "inner_dimension": 10_000}
_REDUCED = {"n_features": 20, "repetitions": 8, "roc_repetitions": 8, "inner_dimension": 2_000}

ROC_N_FEATURES = 20
ROC_SAMPLE_SIZE = 2000
ROC_DELTA = 1e-3
ROC_EPSILONS = (1.0, 2.0)
ROC_MODELS = (3, 4)
ROC_PATH_LENGTH = 15
ROC_PATH_RANGE = 1e-2
ROC_FPR_GRID = np.linspace(0.0, 1.0, 101)

_OUTPUTS = {
    "errors": "private_precision_errors.csv",
    "table1_dp_rp": "private_precision_table1_dp_rp.csv",
    "table2_dp_agl": "private_precision_table2_dp_agl.csv",
    "trend": "private_precision_trend.csv",
    "settings": "private_precision_settings.csv",
}
_PAPER_OUTPUTS = {"paper_setting": "private_precision_paper_setting.csv"}
#: The steps from the honest run to the paper's setting, in order (see the module notes).
SETTINGS = ("honest", "data-max", "data-max+cv", "paper")
#: Cross-validation grids, in units of the normalised scale ``v = 1/p`` (ridge: ``v^2``).
CV_RIDGE_GRID = np.geomspace(1e-6, 1e2, 33)
CV_ALPHA_GRID = np.geomspace(1e-4, 1e2, 25)
CV_FOLDS = 5
_ROC_OUTPUTS = {
    "roc_auc": "private_precision_roc_auc.csv",
    "roc_curves": "private_precision_roc_curves.csv",
    "roc_figure": "private_precision_roc.png",
}


@dataclass(frozen=True)
class _Settings:
    """The validated arguments of :func:`run_private_precision`."""

    p: int
    inner: int
    models: tuple[int, ...]
    sizes: tuple[int, ...]
    epsilons: tuple[float, ...]
    repetitions: int
    roc_repetitions: int
    ridge_factor: float
    alpha_factors: tuple[float, ...]
    auto_alpha: bool
    settings: tuple[str, ...] = ("honest",)


def _calibration_note(epsilon: float) -> str:
    if epsilon >= 1:
        return "exact through zCDP (paper: classical formula, not valid for epsilon >= 1)"
    return "exact through zCDP (paper: classical formula)"


def _check_choice(values: Any, *, name: str, allowed: tuple) -> tuple:
    values = tuple(values)
    if not values or any(v not in allowed for v in values):
        raise ValueError(f"{name} must be a non-empty subset of {allowed}; got {values!r}")
    return values


def _errors(estimate: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    return {f"rel_{norm}": relative_error(estimate, reference, norm=norm) for norm in NORMS}


_FAILED = {f"rel_{norm}": math.nan for norm in NORMS}


def _was_repaired(estimator: GraphicalLasso) -> bool:
    """Whether the estimator had to floor released variances or project the release
    before the graphical lasso had a solution (its post-processing repair)."""
    return bool(getattr(estimator, "n_diagonal_repaired_", 0)) or bool(
        getattr(estimator, "repaired_", False)
    )


RAW_AGL = "DP-AGL raw release (paper)"


def _solve_raw(S: np.ndarray, alpha: float) -> np.ndarray | None:
    """The paper's DP-AGL: ADMM with a penalised diagonal on the release as it is; None
    when the problem has no solution."""
    result = attempt(graphical_lasso, S, alpha, method="admm", penalize_diagonal=True)
    return None if result is None else result.estimate


def _fit_agl(alpha: Any, budget: Any, bounds: RowNorm, X: np.ndarray, rng: Any):
    """DP-AGL as in the paper (ADMM, penalised diagonal); None when no solution exists."""
    estimator = GraphicalLasso(
        alpha=alpha,
        solver="admm",
        penalize_diagonal=True,
        budget=budget,
        bounds=bounds,
        random_state=rng,
    )
    return attempt(estimator.fit, X)


# ---------------------------------------------------------------------------------------
# the error tables (paper Tables 1-2)


def _model_context(settings: _Settings, random_state: int, model: int) -> dict[str, Any]:
    """The model, its declared row bound and the penalties (public: from the model)."""
    p = settings.p
    truth = make_precision_model(
        model,
        n_samples=1,
        n_features=p,
        inner_dimension=settings.inner,
        random_state=repetition_rng(random_state, f"{_STREAMS}-model", model),
    )
    B = gaussian_row_norm_bound(truth.covariance, tail=ROW_BOUND_TAIL)
    scale = B * B / p
    alphas: dict[str, Any] = {f"alpha={f:g}*B^2/p": f * scale for f in settings.alpha_factors}
    if settings.auto_alpha:
        alphas["alpha=auto"] = "auto"
    return {
        "truth": truth,
        "B": B,
        "bounds": RowNorm(B),
        "ridge": settings.ridge_factor * scale**2,
        "ridge_label": f"ridge={settings.ridge_factor:g}*(B^2/p)^2",
        "alphas": alphas,
    }


def _agl_records(
    *, label: str, alpha: Any, X: np.ndarray, budget: Any, rng: Any, model: dict[str, Any],
    references: dict[str, Any], common: dict[str, Any],
) -> list[dict[str, Any]]:
    """DP-AGL at one penalty on one release, and the paper's solve of the raw release."""
    bounds = model["bounds"]
    private = _fit_agl(alpha, budget, bounds, X, rng)
    if private is None:
        return [{"method": "DP-AGL", "penalty": label, "penalty_value": math.nan, **common,
                 **_FAILED, "converged": False, "repaired": 0.0}]
    reference = (
        references[label]
        if alpha != "auto"
        else _fit_agl(private.alpha_, NonPrivate(), bounds, X, None)
    )
    records = [{
        "method": "DP-AGL",
        "penalty": label,
        "penalty_value": private.alpha_,
        **common,
        **_errors(private.precision_, reference.precision_),
        "converged": bool(private.solver_.converged and reference.solver_.converged),
        "repaired": float(_was_repaired(private)),
    }]
    if alpha != "auto":
        raw = _solve_raw(private.noisy_covariance_, private.alpha_)
        records.append({
            "method": RAW_AGL,
            "penalty": label,
            "penalty_value": private.alpha_,
            **common,
            **(_FAILED if raw is None else _errors(raw, reference.precision_)),
            "converged": raw is not None,
            "repaired": 0.0,
        })
    return records


def _error_cell(cell: Cell, *, epsilons: tuple[float, ...]) -> list[dict[str, Any]]:
    """One sample of (model, n): DP-RP and DP-AGL at every epsilon and penalty."""
    model, n, repetition = cell.params["model"], cell.params["n"], cell.repetition
    context = cell.context
    bounds, ridge = context["bounds"], context["ridge"]
    X = context["truth"].resample(
        n_samples=n, random_state=cell.rng(f"{_STREAMS}-data", model, n, repetition)
    ).X
    clipped = float(np.mean(np.linalg.norm(X, axis=1) > context["B"]))
    records = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference_rp = RidgePrecision(ridge=ridge, budget=NonPrivate(), bounds=bounds).fit(X)
        references_agl = {
            label: _fit_agl(alpha, NonPrivate(), bounds, X, None)
            for label, alpha in context["alphas"].items()
            if alpha != "auto"
        }
        for epsilon in epsilons:
            budget = ApproxDP(epsilon, 1.0 / n)
            keys = (f"{_STREAMS}-noise", model, n, repetition, epsilon)
            # Every fit at this (sample, epsilon) draws its noise from the same stream, so
            # the methods and penalties are compared on the same release.
            private_rp = RidgePrecision(
                ridge=ridge, budget=budget, bounds=bounds, random_state=cell.rng(*keys)
            ).fit(X)
            noise = private_rp.privacy_.noise
            sensitivity = float(noise["l2_sensitivity"])
            common = {
                "model": model,
                "n": n,
                "epsilon": epsilon,
                "delta": 1.0 / n,
                "repetition": repetition,
                "sigma": float(noise["sigma"]),
                "sigma_classical_formula": sensitivity
                * math.sqrt(2 * math.log(1.25 * n))
                / epsilon,
                "calibration": _calibration_note(epsilon),
            }
            records.append({
                "method": "DP-RP",
                "penalty": context["ridge_label"],
                "penalty_value": ridge,
                **common,
                **_errors(private_rp.precision_, reference_rp.precision_),
                "converged": True,
                "repaired": 0.0,
            })
            for label, alpha in context["alphas"].items():
                records.extend(_agl_records(
                    label=label, alpha=alpha, X=X, budget=budget, rng=cell.rng(*keys),
                    model=context, references=references_agl, common=common,
                ))
    return [
        {**r, "not_converged": float(not r["converged"]), "clipped": clipped} for r in records
    ]


def _errors_table(results: Results) -> pd.DataFrame:
    errors = results.parts["errors"].aggregated.copy()
    # A repetition without a solution did not converge either; count it once.
    errors["n_not_converged"] = (errors["n_not_converged"].astype(int) - errors["n_failed"]).clip(
        lower=0
    )
    return errors


def _wide_table(errors: pd.DataFrame, methods: tuple[str, ...]) -> pd.DataFrame:
    """The paper's layout: one row per (method, penalty, n, epsilon), one column per
    (model, norm), cells ``"mean (se)"``; for DP-AGL also how many repetitions were
    repaired or had no solution."""
    subset = errors[errors["method"].isin(methods)]
    rows = []
    for (method, penalty, n, epsilon), group in subset.groupby(
        ["method", "penalty", "n", "epsilon"], sort=False
    ):
        row: dict[str, Any] = {"method": method, "penalty": penalty, "n": n, "epsilon": epsilon}
        for _, cell in group.iterrows():
            for norm in NORMS:
                row[f"model{cell['model']} {norm}"] = format_mean_se(
                    cell[f"rel_{norm}_mean"], cell[f"rel_{norm}_se"]
                )
            if method != "DP-RP":
                reps = int(cell["n_reps"])
                row[f"model{cell['model']} repaired/no solution"] = (
                    f"{int(cell['n_repaired'])}/{int(cell['n_failed'])} of {reps}"
                )
        rows.append(row)
    return pd.DataFrame(rows)


def _trend(errors: pd.DataFrame) -> pd.DataFrame:
    """Fitted log-log slopes of the mean error against ``n·epsilon`` and against the noise
    scale; an error proportional to ``1/(n epsilon)`` has slopes -1 and +1. Cells with a
    repetition without a solution are left out (their survivors are a biased sample)."""
    rows = []
    complete = errors[errors["n_failed"] == 0]
    for (method, penalty, model), group in complete.groupby(
        ["method", "penalty", "model"], sort=False
    ):
        for norm in NORMS:
            means = group[f"rel_{norm}_mean"].to_numpy(dtype=float)
            n_eps = (group["n"] * group["epsilon"]).to_numpy(dtype=float)
            rows.append(
                {
                    "method": method,
                    "penalty": penalty,
                    "model": model,
                    "norm": norm,
                    "slope_vs_n_epsilon": loglog_slope(n_eps, means),
                    "slope_vs_sigma": loglog_slope(
                        group["sigma_mean"].to_numpy(dtype=float), means
                    ),
                    "n_cells": int(len(group)),
                    "expected": "-1 vs n*epsilon, +1 vs sigma",
                }
            )
    return pd.DataFrame(rows)


def _settings_table(results: Results, p: int) -> pd.DataFrame:
    """Per model the declared bound, the penalties and the fraction of rows clipped."""
    part = results.parts["errors"]
    samples = part.records.drop_duplicates(["model", "n", "repetition"])
    rows = []
    for (model,), context in part.contexts.items():
        clipped = samples.loc[samples["model"] == model, "clipped"].to_numpy(dtype=float)
        rows.append(
            {
                "model": model,
                "p": p,
                "trace_sigma": float(np.trace(context["truth"].covariance)),
                "row_bound_B": context["B"],
                "bound_rule": f"Laurent-Massart level exceeded w.p. <= "
                f"{ROW_BOUND_TAIL:g} under the model's covariance (public for a synthetic model)",
                "clipped_fraction_mean": float(np.mean(clipped[np.isfinite(clipped)])),
                "ridge": context["ridge"],
                **{
                    f"alpha {label}": value
                    for label, value in context["alphas"].items()
                    if value != "auto"
                },
                "admm_penalty": "solver default (adaptive); paper: 100",
                "paper_bound": "data's maximum row norm (data-dependent; not used)",
                "paper_penalty": "non-private 5-fold CV (not used)",
            }
        )
    return pd.DataFrame(rows)


def _error_part(settings: _Settings, random_state: int) -> Part:
    by = ["method", "penalty", "model", "n", "epsilon", "delta", "calibration"]
    return Part(
        name="errors",
        label="error tables",
        axes={"model": settings.models, "n": settings.sizes},
        repetitions=settings.repetitions,
        context=lambda params: _model_context(settings, random_state, params["model"]),
        context_axes=("model",),
        cell=lambda cell: _error_cell(cell, epsilons=settings.epsilons),
        aggregation=Aggregation(
            by=by,
            metrics=[f"rel_{norm}" for norm in NORMS],
            extra={
                "sigma_mean": ("sigma", "mean"),
                "sigma_classical_formula_mean": ("sigma_classical_formula", "mean"),
                "penalty_value_mean": ("penalty_value", "mean"),
                "n_not_converged": ("not_converged", "sum"),
                "n_repaired": ("repaired", "sum"),
            },
        ),
    )


# ---------------------------------------------------------------------------------------
# the paper's own setting, step by step (like for like)

PAPER_AGL_FACTOR = 10.0
DATA_DEPENDENT = (
    "data-dependent: the bound is the sample's largest row norm (read off the data){}"
)


def _heldout_loglik(precision: np.ndarray, covariance: np.ndarray) -> float:
    sign, logdet = np.linalg.slogdet(precision)
    return float(logdet - np.sum(precision * covariance)) if sign > 0 else -math.inf


def _cv_ridge(X: np.ndarray, grid: np.ndarray) -> tuple[float, bool]:
    """The paper's 5-fold likelihood cross-validation of the ridge penalty (not private):
    the penalty of largest mean held-out Gaussian log-likelihood, and whether it lies at
    an end of the grid."""
    from sklearn.model_selection import KFold

    scores = np.zeros(len(grid))
    for train, test in KFold(n_splits=CV_FOLDS, shuffle=True, random_state=0).split(X):
        S_train = X[train].T @ X[train] / len(train)
        S_test = X[test].T @ X[test] / len(test)
        for i, ridge in enumerate(grid):
            scores[i] += _heldout_loglik(ridge_precision(S_train, float(ridge)).estimate,
                                         S_test) / CV_FOLDS
    best = int(np.argmax(scores))
    return float(grid[best]), best in (0, len(grid) - 1)


def _cv_alpha(X: np.ndarray, grid: np.ndarray) -> tuple[float, bool]:
    """The same for the graphical lasso with a penalised diagonal (DP-AGL's problem)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        alpha, scores = non_private_cv_alpha(X, grid, n_folds=CV_FOLDS, solver="auto",
                                             penalize_diagonal=True)
    best = int(np.argmax(scores))
    return alpha, best in (0, len(grid) - 1)


def _paper_step(step: str, epsilon: float, delta: float) -> tuple[Any, str, str]:
    """(budget, calibration, validity note) of a step at (epsilon, delta).

    The paper's classical formula ``sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon`` is the
    Gaussian mechanism at ``rho = Delta^2 / (2 sigma^2) = epsilon^2 / (4 ln(1.25/delta))``
    zCDP whatever ``Delta``: the "paper" step releases with that zCDP budget, so it has
    the paper's noise at every epsilon, and its record states what that noise delivers.
    Below epsilon = 1 the formula is a proven (epsilon, delta) calibration; at epsilon >= 1
    it is not (the library's ``calibration="classical"`` refuses it there).
    """
    penalty = "; penalty by non-private cross-validation" if step != "data-max" else ""
    validity = DATA_DEPENDENT.format(penalty)
    if step != "paper":
        return ApproxDP(epsilon, delta), "library (exact, through zCDP)", validity
    budget = ZCDP(epsilon**2 / (4 * math.log(1.25 / delta)))
    if epsilon < 1:
        return budget, "classical formula", validity
    return budget, "classical formula (not proven for epsilon >= 1)", (
        validity + "; classical formula at epsilon >= 1: no proven (epsilon, delta) guarantee"
    )


def _paper_setting_cell(cell: Cell, *, epsilons: tuple[float, ...],
                        steps: tuple[str, ...]) -> list[dict[str, Any]]:
    """One sample of (model, n) in the paper's setting, step by step, on the honest run's
    sample and noise streams."""
    model, n, repetition = cell.params["model"], cell.params["n"], cell.repetition
    context = cell.context
    X = context["truth"].resample(
        n_samples=n, random_state=cell.rng(f"{_STREAMS}-data", model, n, repetition)
    ).X
    p = X.shape[1]
    data_max = float(np.max(np.linalg.norm(X, axis=1)))
    Xn = X / data_max  # the paper's normalisation: every row norm at most 1
    bounds, scale = RowNorm(1.0), 1.0 / p
    penalties = {"data-max": (context["ridge_factor"] * scale**2, PAPER_AGL_FACTOR * scale),
                 "edge": (False, False)}
    if any(step != "data-max" for step in steps):
        ridge_cv, ridge_edge = _cv_ridge(Xn, CV_RIDGE_GRID * scale**2)
        alpha_cv, alpha_edge = _cv_alpha(Xn, CV_ALPHA_GRID * scale)
        penalties["cv"] = (ridge_cv, alpha_cv)
        penalties["edge"] = (ridge_edge, alpha_edge)
    records = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        references: dict[tuple[str, float], Any] = {}

        def reference(method: str, value: float) -> Any:
            if (method, value) not in references:
                if method == "DP-RP":
                    fit = RidgePrecision(ridge=value, budget=NonPrivate(), bounds=bounds).fit(Xn)
                else:
                    fit = _fit_agl(value, NonPrivate(), bounds, Xn, None)
                references[(method, value)] = fit
            return references[(method, value)]

        for epsilon in epsilons:
            budget = ApproxDP(epsilon, 1.0 / n)
            keys = (f"{_STREAMS}-noise", model, n, repetition, epsilon)
            for step in steps:
                ridge, alpha = penalties["data-max" if step == "data-max" else "cv"]
                budget, calibration, validity = _paper_step(step, epsilon, 1.0 / n)
                common = {"setting": step, "model": model, "n": n, "epsilon": epsilon,
                          "delta": 1.0 / n, "repetition": repetition, "calibration": calibration,
                          "validity": validity, "data_max_row_norm": data_max,
                          "cv_ridge_at_grid_edge": float(penalties["edge"][0] and step != "data-max"),
                          "cv_alpha_at_grid_edge": float(penalties["edge"][1] and step != "data-max")}
                rp = RidgePrecision(ridge=ridge, budget=budget, bounds=bounds,
                                    random_state=cell.rng(*keys)).fit(Xn)
                sigma = float(rp.privacy_.noise["sigma"])
                common["epsilon_delivered"] = rp.privacy_.budget.to_approx(1.0 / n).epsilon \
                    if isinstance(rp.privacy_.budget, ZCDP) else epsilon
                rows = [{"method": "DP-RP", "penalty_value": ridge, "sigma": sigma,
                         **_errors(rp.precision_, reference("DP-RP", ridge).precision_),
                         "repaired": 0.0, "raw_failed": 0.0}]
                agl = attempt(GraphicalLasso(
                    alpha=alpha, solver="admm", penalize_diagonal=True, budget=budget,
                    bounds=bounds, random_state=cell.rng(*keys),
                ).fit, Xn)
                if agl is None:
                    rows.append({"method": "DP-AGL", "penalty_value": alpha, "sigma": sigma,
                                 **_FAILED, "repaired": 0.0, "raw_failed": math.nan})
                else:
                    raw = _solve_raw(agl.noisy_covariance_, agl.alpha_)
                    rows.append({"method": "DP-AGL", "penalty_value": alpha, "sigma": sigma,
                                 **_errors(agl.precision_, reference("DP-AGL", alpha).precision_),
                                 "repaired": float(_was_repaired(agl)),
                                 "raw_failed": float(raw is None)})
                records.extend({**r, **common} for r in rows)
    return records


def _paper_part(settings: _Settings, random_state: int, steps: tuple[str, ...]) -> Part:
    return Part(
        name="paper_setting",
        label="paper's setting",
        axes={"model": settings.models, "n": settings.sizes},
        repetitions=settings.repetitions,
        context=lambda params: {**_model_context(settings, random_state, params["model"]),
                                "ridge_factor": settings.ridge_factor},
        context_axes=("model",),
        cell=lambda cell: _paper_setting_cell(cell, epsilons=settings.epsilons, steps=steps),
        aggregation=Aggregation(
            by=["setting", "method", "model", "n", "epsilon", "delta", "calibration",
                "validity"],
            metrics=[f"rel_{norm}" for norm in NORMS],
            extra={
                "sigma_mean": ("sigma", "mean"),
                "epsilon_delivered_mean": ("epsilon_delivered", "mean"),
                "penalty_value_mean": ("penalty_value", "mean"),
                "data_max_row_norm_mean": ("data_max_row_norm", "mean"),
                "n_repaired": ("repaired", "sum"),
                "n_raw_failed": ("raw_failed", "sum"),
                "n_cv_ridge_at_grid_edge": ("cv_ridge_at_grid_edge", "sum"),
                "n_cv_alpha_at_grid_edge": ("cv_alpha_at_grid_edge", "sum"),
            },
        ),
    )


# ---------------------------------------------------------------------------------------
# the ROC experiment (paper Figure 1)


def _alpha_grid(S: np.ndarray) -> np.ndarray:
    """Penalties from the largest off-diagonal magnitude of the released matrix down by a
    factor ``ROC_PATH_RANGE``: computed from the release only (post-processing)."""
    off = np.abs(S - np.diag(np.diag(S)))
    top = max(float(off.max()), np.finfo(float).tiny)
    return top * np.geomspace(1.0, ROC_PATH_RANGE, ROC_PATH_LENGTH)


def _edge_scores(S: np.ndarray) -> np.ndarray:
    """Score of pair (i, j): the largest penalty on the grid at which DP-AGL puts an edge
    there (0 if none). The path stops at the first penalty without a solution."""
    scores = np.zeros_like(S)
    previous = None
    for alpha in _alpha_grid(S):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            # The problem is strictly convex, so the solver only changes the speed;
            # warm-started coordinate descent ("auto") is far quicker along a path.
            previous = attempt(
                graphical_lasso, S, float(alpha), method="auto", penalize_diagonal=True,
                init=previous,
            )
        if previous is None:
            break
        support = np.abs(previous.estimate) > 0
        scores = np.where(support & (scores == 0), alpha, scores)
    np.fill_diagonal(scores, 0.0)
    return scores


def _roc_budgets() -> dict[str, Any]:
    return {"non-private": NonPrivate()} | {
        f"epsilon={eps:g}": ApproxDP(eps, ROC_DELTA) for eps in ROC_EPSILONS
    }


def _roc_context(random_state: int, model: int) -> dict[str, Any]:
    truth = make_precision_model(
        model,
        n_samples=1,
        n_features=ROC_N_FEATURES,
        random_state=repetition_rng(random_state, f"{_STREAMS}-roc-model", model),
    )
    return {
        "truth": truth,
        "bounds": RowNorm(gaussian_row_norm_bound(truth.covariance, tail=ROW_BOUND_TAIL)),
    }


def _roc_cell(cell: Cell) -> list[dict[str, Any]]:
    """One release of one sample, its penalty path (post-processing) and its ROC."""
    model, label, repetition = cell.params["model"], cell.params["budget"], cell.repetition
    truth = cell.context["truth"]
    X = truth.resample(
        n_samples=ROC_SAMPLE_SIZE, random_state=cell.rng(f"{_STREAMS}-roc-data", model, repetition)
    ).X
    S = (
        PrivateCovariance(
            budget=_roc_budgets()[label],
            bounds=cell.context["bounds"],
            psd=False,
            random_state=cell.rng(f"{_STREAMS}-roc-noise", model, repetition, label),
        )
        .fit(X)
        .noisy_covariance_
    )
    scores = _edge_scores(S)
    fpr, tpr, _ = edge_scores_to_roc(scores, truth.adjacency)
    return [{
        "model": model,
        "budget": label,
        "repetition": repetition,
        "auc": edge_auc(scores, truth.adjacency),
        "tpr": np.interp(ROC_FPR_GRID, fpr, tpr),
    }]


def _roc_curves(results: Results) -> pd.DataFrame:
    """Vertical average of the per-repetition ROC curves on a grid of FPR."""
    curves = []
    records = results.parts["roc"].records
    for (model, label), group in records.groupby(["model", "budget"], sort=False):
        tprs = list(group["tpr"])
        curves.append(
            pd.DataFrame(
                {
                    "model": model,
                    "budget": label,
                    "fpr": ROC_FPR_GRID,
                    "tpr_mean": np.mean(tprs, axis=0),
                    "tpr_se": np.std(tprs, axis=0, ddof=1) / math.sqrt(len(tprs))
                    if len(tprs) > 1
                    else np.nan,
                }
            )
        )
    return pd.concat(curves, ignore_index=True)


def _roc_figure(results: Results) -> Any:
    # A bare Figure renders with Agg when saved and leaves pyplot's global state alone.
    from matplotlib.figure import Figure

    curves, records = results.tables["roc_curves"], results.parts["roc"].records
    figure = Figure(figsize=(5 * len(ROC_MODELS), 4.5))
    axes = figure.subplots(1, len(ROC_MODELS))
    for axis, model in zip(np.atleast_1d(axes), ROC_MODELS):
        for label in _roc_budgets():
            curve = curves[(curves["model"] == model) & (curves["budget"] == label)]
            aucs = records.loc[(records["model"] == model) & (records["budget"] == label), "auc"]
            axis.plot(ROC_FPR_GRID, curve["tpr_mean"].to_numpy(),
                      label=f"{label} (AUC {np.mean(aucs.to_numpy(dtype=float)):.2f})")
        axis.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=0.8)
        axis.set_title(
            f"Model {model}: p={ROC_N_FEATURES}, n={ROC_SAMPLE_SIZE}, delta={ROC_DELTA:g}"
        )
        axis.set_xlabel("false positive rate")
        axis.set_ylabel("true positive rate")
        axis.legend(loc="lower right", fontsize=8)
    repetitions = int(records["repetition"].max()) + 1
    figure.suptitle(f"DP-AGL edge recovery, mean ROC over {repetitions} repetitions")
    return figure


def _roc_part(settings: _Settings, random_state: int) -> Part:
    return Part(
        name="roc",
        label="ROC",
        axes={"model": ROC_MODELS, "budget": tuple(_roc_budgets())},
        repetitions=settings.roc_repetitions,
        context=lambda params: _roc_context(random_state, params["model"]),
        context_axes=("model",),
        cell=_roc_cell,
        aggregation=Aggregation(by=["model", "budget"], metrics=["auc"]),
    )


# ---------------------------------------------------------------------------------------
# the experiment


def _validate(
    *, full: bool, repetitions: Any, roc_repetitions: Any, n_features: Any, models: Any,
    sample_sizes: Any, epsilons: Any, ridge_factor: Any, alpha_factors: Any, auto_alpha: bool,
    settings: Any = ("honest",),
) -> _Settings:
    preset = _FULL if full else _REDUCED
    p = check_positive_int(
        preset["n_features"] if n_features is None else n_features, name="n_features"
    )
    if p < 2:
        raise ValueError(f"n_features must be an integer >= 2; got {p}")
    alpha_factors = tuple(() if alpha_factors is None else alpha_factors)
    if alpha_factors:
        alpha_factors = check_positive_numbers(alpha_factors, name="alpha_factors")
    if not alpha_factors and not auto_alpha:
        raise ValueError("alpha_factors must be non-empty when auto_alpha is False")
    settings = _check_choice(settings, name="settings", allowed=SETTINGS)
    return _Settings(
        p=p,
        inner=max(preset["inner_dimension"], p),
        models=_check_choice(
            PAPER_MODELS if models is None else models, name="models", allowed=PAPER_MODELS
        ),
        sizes=check_integers(
            PAPER_SAMPLE_SIZES if sample_sizes is None else sample_sizes,
            name="sample_sizes", minimum=2,
        ),
        epsilons=check_positive_numbers(
            PAPER_EPSILONS if epsilons is None else epsilons, name="epsilons"
        ),
        repetitions=check_positive_int(
            preset["repetitions"] if repetitions is None else repetitions, name="repetitions"
        ),
        roc_repetitions=check_positive_int(
            preset["roc_repetitions"] if roc_repetitions is None else roc_repetitions,
            name="roc_repetitions",
        ),
        ridge_factor=check_positive_number(ridge_factor, name="ridge_factor"),
        alpha_factors=alpha_factors,
        auto_alpha=bool(auto_alpha),
        # In the order of SETTINGS, whatever order the caller gave.
        settings=tuple(step for step in SETTINGS if step in settings),
    )


def _spec(settings: _Settings, *, random_state: int, roc: bool) -> ExperimentSpec:
    tables = {
        "errors": _errors_table,
        "table1_dp_rp": lambda r: _wide_table(r.tables["errors"], ("DP-RP",)),
        "table2_dp_agl": lambda r: _wide_table(r.tables["errors"], ("DP-AGL", RAW_AGL)),
        "trend": lambda r: _trend(r.tables["errors"]),
        "settings": lambda r: _settings_table(r, settings.p),
    }
    parts, outputs = [], {}
    if "honest" in settings.settings:
        parts.append(_error_part(settings, random_state))
        outputs.update(_OUTPUTS)
    else:
        tables = {}
    steps = tuple(step for step in settings.settings if step != "honest")
    if steps:
        parts.append(_paper_part(settings, random_state, steps))
        tables["paper_setting"] = lambda r: r.parts["paper_setting"].aggregated
        outputs.update(_PAPER_OUTPUTS)
    if roc:
        parts.append(_roc_part(settings, random_state))
        tables["roc_auc"] = lambda r: r.parts["roc"].aggregated
        tables["roc_curves"] = _roc_curves
        outputs.update(_ROC_OUTPUTS)
    figures = {"roc_figure": _roc_figure} if roc else {}
    return ExperimentSpec("private_precision", parts, tables=tables, figures=figures,
                          outputs=outputs)


def run_private_precision(
    *,
    full: bool = False,
    repetitions: int | None = None,
    random_state: int = 0,
    out_dir: Any = None,
    overwrite: bool = False,
    n_features: int | None = None,
    models: Any = None,
    sample_sizes: Any = None,
    epsilons: Any = None,
    ridge_factor: float = 0.1,
    alpha_factors: Any = (1.0, 10.0),
    auto_alpha: bool = True,
    roc: bool = True,
    roc_repetitions: int | None = None,
    settings: Any = ("honest",),
) -> dict[str, pd.DataFrame]:
    """Su, Guo & Zhang's simulation: Tables 1-2 (DP-RP, DP-AGL errors) and Figure 1 (ROC).

    Parameters
    ----------
    full : bool, default=False
        The paper's sizes (``p = 100``, 50 repetitions, W with 10000 columns in model 1).
        The reduced default uses ``p = 20``, 8 repetitions and 2000 columns; it runs in
        about a minute.
    repetitions : int, optional
        Repetitions per cell (overrides the preset).
    random_state : int, default=0
        Seed of the whole experiment; see :func:`~dpggm.experiments._common.repetition_rng`.
    out_dir : path, optional
        Where to write the CSV tables (and ``private_precision_roc.png``).
    overwrite : bool, default=False
        Replace existing output files; otherwise an existing file is an error, raised
        before any computation.
    n_features : int, optional
        Dimension ``p`` of the error tables (overrides the preset).
    models : sequence of {1, 2, 3, 4}, optional
        Default all four.
    sample_sizes : sequence of int, optional
        Default ``(100, 200, 400)``.
    epsilons : sequence of float, optional
        Default ``(0.1, 0.3, 0.5, 0.8, 1.2, 2)``. ``delta = 1/n`` always.
    ridge_factor : float, default=0.1
        DP-RP penalty ``ridge = ridge_factor · (B²/p)²``.
    alpha_factors : sequence of float, default=(1, 10)
        DP-AGL penalties ``alpha = alpha_factor · B²/p``.
    auto_alpha : bool, default=True
        Also run DP-AGL with ``alpha="auto"``.
    roc : bool, default=True
        Run the ROC experiment (models 3-4, ``p = 20``, ``n = 2000``, ``delta = 1e-3``,
        epsilon in {1, 2} and non-private).
    roc_repetitions : int, optional
        Repetitions of the ROC experiment (overrides the preset).
    settings : sequence of {"honest", "data-max", "data-max+cv", "paper"}
        Which settings of the error tables to run (default the honest one). The other
        three are the steps to the paper's own setting (see the module documentation),
        run on the same samples and noise streams; they go to ``"paper_setting"``.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``"errors"``: one row per (method, penalty, model, n, epsilon) with
        ``rel_{l1,fro,spectral}_{mean,se}``, ``sigma_mean`` (noise actually used),
        ``sigma_classical_formula_mean``, ``calibration``, ``n_reps``, ``n_failed``,
        ``n_repaired``, ``n_not_converged``. ``"table1_dp_rp"``, ``"table2_dp_agl"``: the same in the
        paper's layout (``"mean (se)"`` strings). ``"trend"``: log-log slopes of the mean
        error against ``n·epsilon`` (expected about -1). ``"settings"``: per model the
        declared bound ``B``, the penalties and the fraction of rows clipped.
        With ``roc``: ``"roc_auc"`` (mean ± se of the edge AUC) and ``"roc_curves"``
        (mean TPR on a grid of FPR). With a step of the paper's setting:
        ``"paper_setting"``, one row per (setting, method, model, n, epsilon) with the
        relative errors, ``sigma_mean``, ``penalty_value_mean``, ``calibration``,
        ``validity`` ("data-dependent: ..."), ``data_max_row_norm_mean`` (the
        normalisation), ``n_repaired``, ``n_raw_failed`` (releases on which the paper's
        DP-AGL has no solution) and ``n_cv_*_at_grid_edge`` (a cross-validated penalty at an
        end of its grid). ``"timing"``: wall-clock seconds per part.

    Notes
    -----
    See the module documentation for every departure from the paper and why.

    Privacy: an evaluation on synthetic data; each repetition spends its stated budget
    once, and the non-private references are for comparison only.
    """
    random_state = check_random_seed(random_state)
    settings = _validate(
        full=full,
        repetitions=repetitions,
        roc_repetitions=roc_repetitions,
        n_features=n_features,
        models=models,
        sample_sizes=sample_sizes,
        epsilons=epsilons,
        ridge_factor=ridge_factor,
        alpha_factors=alpha_factors,
        auto_alpha=auto_alpha,
        settings=settings,
    )
    spec = _spec(settings, random_state=random_state, roc=roc)
    return run(spec, random_state=random_state, out=out_dir, overwrite=overwrite).tables


# ---------------------------------------------------------------------------------------
# the paper's Figure 2: LDA on the Ionosphere data with a DP ridge precision

#: Privacy levels of the LDA run (the paper's Figure 2 does not state its own).
LDA_EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0)
LDA_DELTA = 1e-3
LDA_TRAIN = 40
LDA_VALIDATION = 40
#: Ridge penalties tried on the validation set (post-processing of one release).
LDA_RIDGES = tuple(float(v) for v in np.geomspace(1e-6, 10.0, 15))


def _lda_error(precision: np.ndarray, means: np.ndarray, priors: np.ndarray,
               X: np.ndarray, y: np.ndarray) -> float:
    """Misclassification rate of linear discriminant analysis with ``precision``."""
    scores = X @ precision @ means.T - 0.5 * np.einsum("kj,jl,kl->k", means, precision, means)
    scores = scores + np.log(priors)
    return float(np.mean(np.argmax(scores, axis=1) != y))


def run_ridge_precision_lda(
    *,
    repetitions: int = 50,
    epsilons: Any = LDA_EPSILONS,
    random_state: int = 0,
    out_dir: Any = None,
    overwrite: bool = False,
) -> dict[str, pd.DataFrame]:
    """The paper's Figure 2: LDA on the Ionosphere data with a DP-RP precision matrix.

    As in the paper, each repetition splits the 351 records at random into a training set
    of 40, a validation set of 40 (which chooses the ridge penalty) and a test set (the
    rest); the precision matrix of the training records, centered within each class, is
    released by DP-RP at ``(epsilon, 1e-3)``; the class means and priors are those of the
    training records, not private (the paper privatises the precision matrix only). The
    34 features are documented to lie in ``[-1, 1]``, so a centered record lies in
    ``[-2, 2]`` per coordinate and the declared row bound is ``2·sqrt(34)``. The ridge
    penalties of the validation grid are post-processing of the one release. Needs the R
    package mlbench (``apt-get install r-cran-mlbench``).

    Returns
    -------
    dict of str to pandas.DataFrame
        ``"errors"``: per budget (``"non-private"`` or ``"epsilon=..."``) the test
        misclassification rate ``error_{mean,se}``, the chosen ridge's median and
        ``n_reps``; ``"timing"``, ``"environment"``.

    Privacy: an evaluation on a public data set; the validation and test sets, the class
    means and the priors are not private, as in the paper.
    """
    from dpggm.experiments.registry_data import load_r_dataset

    random_state = check_random_seed(random_state)
    repetitions = check_positive_int(repetitions, name="repetitions")
    epsilons = check_positive_numbers(epsilons, name="epsilons")
    budgets = ("non-private", *(f"epsilon={e:g}" for e in epsilons))

    def context(params: dict[str, Any]) -> dict[str, Any]:
        frame = load_r_dataset("Ionosphere")
        y = (frame.pop("Class") == "good").to_numpy(dtype=int)
        X = frame.to_numpy(dtype=float)
        return {"X": X, "y": y, "bound": RowNorm(2.0 * math.sqrt(X.shape[1]))}

    def cell(cell: Cell) -> list[dict[str, Any]]:
        X, y = cell.context["X"], cell.context["y"]
        order = cell.rng("lda-split", cell.repetition).permutation(len(y))
        train, valid = order[:LDA_TRAIN], order[LDA_TRAIN:LDA_TRAIN + LDA_VALIDATION]
        test = order[LDA_TRAIN + LDA_VALIDATION:]
        classes = np.unique(y)
        means = np.array([X[train][y[train] == k].mean(axis=0) for k in classes])
        priors = np.array([np.mean(y[train] == k) for k in classes])
        Z = X[train] - means[np.searchsorted(classes, y[train])]
        records = []
        for budget_label in budgets:
            if budget_label == "non-private":
                S = Z.T @ Z / len(Z)
            else:
                epsilon = float(budget_label.split("=")[1])
                release = RidgePrecision(
                    ridge=LDA_RIDGES[0], budget=ApproxDP(epsilon, LDA_DELTA),
                    bounds=cell.context["bound"],
                    random_state=cell.rng("lda-noise", cell.repetition, epsilon),
                ).fit(Z)
                S = release.noisy_covariance_
            errors = [(_lda_error(ridge_precision(S, r).estimate, means, priors, X[valid],
                                  y[valid]), r) for r in LDA_RIDGES]
            _, ridge = min(errors)
            records.append({
                "budget": budget_label, "ridge": ridge,
                "error": _lda_error(ridge_precision(S, ridge).estimate, means, priors,
                                    X[test], y[test]),
            })
        return records

    part = Part(name="lda", label="LDA on Ionosphere", axes={"data": ("Ionosphere",)},
                repetitions=repetitions, context=context, context_axes=("data",), cell=cell,
                aggregation=Aggregation(by=["budget"], metrics=["error"],
                                        extra={"ridge_median": ("ridge", "median")}))
    spec = ExperimentSpec("ridge_precision_lda", [part],
                          tables={"errors": lambda r: r.parts["lda"].aggregated},
                          outputs={"errors": "ridge_precision_lda_errors.csv"})
    return run(spec, random_state=random_state, out=out_dir, overwrite=overwrite).tables
