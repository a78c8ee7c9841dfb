"""Seed 003 (PACE-GGM, Ferrando et al.): PACE-GGM against its baselines.

Tables returned by :func:`run_seed003`:

``errors``
    Mahalanobis error ``||S^{-1/2} S~ S^{-1/2} - I||_F`` and Frobenius error ``||S~ - S||_F`` of
    every method (mean and standard error over trials), per data set and rho.
``measured``
    PACE-GGM's number of measured off-diagonal entries and rounds per rho (the paper's
    Tables 1 and 4).
``runtime``
    Mean seconds per fit (the paper's Table 5).
``regression``
    Mean squared error of least squares from each private covariance of ``(X, y)``, and of
    AdaSSP (Wang 2018), on the diabetes data.

Data. Features are mapped to ``[-1, 1]`` with bounds that are not read from the records
(:func:`dpggm.datasets.real.declared_ranges`: the min/max tables printed in the breast
cancer and wine documentation, and clinical ranges for diabetes), so every method runs
with the declared box ``Box(1)``. As in the paper the mean is taken as known: the target is
the second moment ``S`` of the rescaled records, which every method estimates. The
synthetic set is seed 000's AR(2) model (``d = 20``, ``n = 2000``) scaled by a public
factor of its known covariance and clipped.

Privacy: evaluation code; it reads the exact statistic to score the private ones.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from dpggm.datasets.real import (
    DIABETES_TARGET_RANGE,
    declared_ranges,
    load_breast_cancer,
    load_diabetes,
    load_wine,
)
from dpggm.datasets.synthetic import make_seed000_model
from dpggm.estimators.baselines import (
    AdaptiveCovariance,
    DiagonalCovariance,
    SeparateCovariance,
    SSPCovariance,
)
from dpggm.estimators.pace import PACECovariance
from dpggm.estimators.regression import AdaSSP, PrivateLinearRegression
from dpggm.experiments._common import (
    aggregate,
    check_positive_int,
    check_positive_numbers,
    check_random_seed,
)
from dpggm.experiments.runner import Aggregation, Cell, ExperimentSpec, Part, Results, run
from dpggm.mechanisms.bounds import Box
from dpggm.metrics.matrix import frobenius_error, mahalanobis_error
from dpggm.privacy.budgets import ZCDP

__all__ = ["METHODS", "RHOS", "load_unit_box", "run_seed003"]

RHOS = (1e-4, 1e-3, 1e-2, 0.1, 1.0, 2.0, 10.0)

METHODS: dict[str, Any] = {
    "pace": PACECovariance,
    "ssp": SSPCovariance,
    "diagonal": DiagonalCovariance,
    "separate": SeparateCovariance,
    "adaptive": AdaptiveCovariance,
}

_LOADERS = {"breast_cancer": load_breast_cancer, "wine": load_wine, "diabetes": load_diabetes}
DATASETS = (*_LOADERS, "synthetic")
# The data sets with a target with declared bounds (the regression table).
_WITH_TARGET = ("diabetes",)


def _to_unit(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    return np.clip(2 * (X - lower) / (upper - lower) - 1, -1.0, 1.0)


def _check_dataset(name: Any) -> str:
    if name not in DATASETS:
        raise ValueError(f"data set must be one of {sorted(_LOADERS) + ['synthetic']}; got {name!r}")
    return name


def load_unit_box(name: str, *, random_state: int = 0) -> tuple[np.ndarray, np.ndarray | None, str]:
    """Records of data set ``name`` mapped into ``[-1, 1]`` by declared ranges, the target
    mapped the same way when there is one with declared bounds, and how the bounds were set."""
    if _check_dataset(name) == "synthetic":
        model = make_seed000_model(3, n_samples=2000, n_features=20, random_state=random_state)
        scale = 3.0 * float(np.sqrt(np.max(np.diag(model.covariance))))
        return np.clip(model.X / scale, -1, 1), None, "3 standard deviations of the known model"
    data = _LOADERS[name]()
    lower, upper, how = declared_ranges(name)
    y = None
    if name in _WITH_TARGET:
        lo, hi = DIABETES_TARGET_RANGE
        y = _to_unit(np.asarray(data.target, dtype=float), np.array(lo), np.array(hi))
    return _to_unit(data.X, lower, upper), y, how


def _fit_covariance(method: str, Z: np.ndarray, rho: float, seed: np.random.Generator):
    estimator = METHODS[method](budget=ZCDP(rho), bounds=Box(1.0), random_state=seed)
    start = time.perf_counter()
    estimator.fit(Z)
    return estimator, time.perf_counter() - start


def _data(params: dict[str, Any], *, random_state: int) -> dict[str, Any]:
    Z, y, _ = load_unit_box(params["dataset"], random_state=random_state)
    return {"Z": Z, "y": y, "S": Z.T @ Z / len(Z)}


def _covariance_trial(cell: Cell, *, methods: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every method once on the data set at one rho."""
    name, rho, rep = cell.params["dataset"], cell.params["rho"], cell.repetition
    Z, S = cell.context["Z"], cell.context["S"]
    records = []
    for method in methods:
        est, seconds = _fit_covariance(method, Z, rho, cell.rng(name, rho, rep, method))
        records.append({
            "dataset": name, "d": Z.shape[1], "rho": rho, "method": method,
            "mahalanobis": mahalanobis_error(est.covariance_, S),
            "frobenius": frobenius_error(est.covariance_, S),
            "seconds": seconds,
            "measured_offdiag": getattr(est, "n_measured_offdiag_", np.nan),
            "rounds": getattr(est, "n_rounds_", np.nan),
        })
    return records


def _regression_trial(cell: Cell) -> list[dict[str, Any]]:
    """Least squares from two private covariances of ``(X, y)``, and AdaSSP."""
    name, rho, rep = cell.params["dataset"], cell.params["rho"], cell.repetition
    Z, y = cell.context["Z"], cell.context["y"]
    rows = []
    ols = np.linalg.lstsq(Z, y, rcond=None)[0]
    rows.append({"dataset": name, "rho": rho, "method": "ols (non-private)",
                 "mse": float(np.mean((y - Z @ ols) ** 2))})
    for method in ("pace", "ssp"):
        rng = cell.rng("regression", name, rho, rep, method)
        covariance = METHODS[method](budget=ZCDP(rho), bounds=Box(1.0), random_state=rng)
        model = PrivateLinearRegression(covariance_estimator=covariance).fit(Z, y)
        rows.append({"dataset": name, "rho": rho, "method": f"least squares from {method}",
                     "mse": float(np.mean((y - model.predict(Z)) ** 2))})
    rng = cell.rng("regression", name, rho, rep, "adassp")
    ada = AdaSSP(budget=ZCDP(rho), bounds=Box(1.0), y_bound=1.0, random_state=rng).fit(Z, y)
    rows.append({"dataset": name, "rho": rho, "method": "adassp",
                 "mse": float(np.mean((y - ada.predict(Z)) ** 2))})
    return rows


def _figure(errors: pd.DataFrame) -> Any:
    # A bare Figure renders with Agg when saved and leaves pyplot's global state alone.
    from matplotlib.figure import Figure

    names = list(dict.fromkeys(errors["dataset"]))
    fig = Figure(figsize=(4.5 * len(names), 3.6))
    axes = fig.subplots(1, len(names), squeeze=False)
    for ax, name in zip(axes[0], names):
        part = errors[errors["dataset"] == name]
        for method, rows in part.groupby("method", sort=False):
            ax.errorbar(rows["rho"], rows["mahalanobis_mean"], yerr=rows["mahalanobis_se"],
                        label=method, marker="o", capsize=2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rho (zCDP)")
        ax.set_title(name)
    axes[0][0].set_ylabel("Mahalanobis error")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def _measured(results: Results) -> pd.DataFrame:
    frame = results.parts["covariance"].records
    pace = frame[frame["method"] == "pace"]
    return aggregate(pace, by=["dataset", "d", "rho"], metrics=["measured_offdiag", "rounds"])


def _spec(
    *, datasets: tuple[str, ...], rhos: tuple[float, ...], methods: tuple[str, ...],
    repetitions: int, random_state: int,
) -> ExperimentSpec:
    def data(params: dict[str, Any]) -> dict[str, Any]:
        return _data(params, random_state=random_state)

    parts = [Part(
        name="covariance", label="covariance", axes={"dataset": datasets, "rho": rhos},
        repetitions=repetitions, context=data, context_axes=("dataset",),
        cell=lambda cell: _covariance_trial(cell, methods=methods),
        aggregation=Aggregation(by=["dataset", "d", "rho", "method"],
                                metrics=["mahalanobis", "frobenius"]),
    )]
    tables = {
        "errors": lambda r: r.parts["covariance"].aggregated,
        "measured": _measured,
        "runtime": lambda r: aggregate(r.parts["covariance"].records,
                                       by=["dataset", "d", "rho", "method"], metrics=["seconds"]),
    }
    with_target = tuple(name for name in datasets if name in _WITH_TARGET)
    if with_target:
        parts.append(Part(
            name="regression", label="regression", axes={"dataset": with_target, "rho": rhos},
            repetitions=repetitions, context=data, context_axes=("dataset",),
            cell=_regression_trial,
            aggregation=Aggregation(by=["dataset", "rho", "method"], metrics=["mse"]),
        ))
        tables["regression"] = lambda r: r.parts["regression"].aggregated
    outputs = {key: f"seed003_{key}.csv" for key in tables} | {"figure": "seed003_errors.png"}
    return ExperimentSpec("seed003", parts, tables=tables,
                          figures={"figure": lambda r: _figure(r.tables["errors"])},
                          outputs=outputs)


def run_seed003(
    *,
    full: bool = False,
    repetitions: int | None = None,
    random_state: int = 0,
    out_dir: Any = None,
    overwrite: bool = False,
    rhos: tuple[float, ...] | None = None,
    datasets: tuple[str, ...] | None = None,
    methods: tuple[str, ...] | None = None,
) -> dict[str, pd.DataFrame]:
    """Run the comparison; see the module documentation for the tables.

    Reduced (default): 3 trials, data sets breast_cancer, wine and diabetes.
    ``full=True``: 10 trials and the synthetic AR(2) set too. The returned tables end
    with ``"timing"`` (wall-clock seconds per part).
    """
    random_state = check_random_seed(random_state)
    repetitions = check_positive_int(
        (10 if full else 3) if repetitions is None else repetitions, name="repetitions"
    )
    rhos = check_positive_numbers(RHOS if rhos is None else rhos, name="rhos")
    if datasets is None:
        datasets = ("breast_cancer", "wine", "diabetes", "synthetic") if full else (
            "breast_cancer", "wine", "diabetes")
    datasets = tuple(_check_dataset(name) for name in datasets)
    methods = tuple(METHODS if methods is None else methods)
    unknown = sorted(set(methods) - set(METHODS))
    if unknown or not methods:
        raise ValueError(f"methods must be among {sorted(METHODS)}; got {unknown or methods}")
    spec = _spec(datasets=datasets, rhos=rhos, methods=methods, repetitions=repetitions,
                 random_state=random_state)
    return run(spec, random_state=random_state, out=out_dir, overwrite=overwrite).tables
