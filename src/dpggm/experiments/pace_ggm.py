"""PACE-GGM (Ferrando et al.) against its baselines.

Tables returned by :func:`run_pace_ggm`:

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
cancer and wine documentation, and clinical ranges for diabetes). As in the paper, the mean
is taken as known and subtracted ("we assume the mean is known and use it to center the
data"), and the centered records are clipped back into the box, so every method runs with
the declared box ``Box(1)`` and the target is the covariance ``S = Z^T Z / n`` of the
centered, clipped records ``Z``. For the real data sets the "known" mean is the sample mean:
like the paper, this reads the mean off the data without paying for it (a release would
spend part of its budget on it, or use a public mean). Breast cancer includes the diagnosis
column, as the paper's copy does (``d = 31``; the paper's 32 columns also hold the record
id, which scikit-learn's copy does not have). The synthetic set is Su, Guo & Zhang's AR(2) model
(``d = 20``, ``n = 2000``, mean zero, so centering by the known mean changes nothing) scaled
by a public factor of its known covariance and clipped.

:func:`run_pace_ggm_variants` measures what moves the number of measured entries on breast
cancer (the paper's Table 4): the diagnosis column, the centering, the paper's uniform
sensitivity, rescaling instead of clipping after centering, and the record id as a 32nd
column, with the data sets' structural properties (the paper's Table 3).

Privacy: evaluation code; it reads the exact statistic to score the private ones.
"""

from __future__ import annotations

import math
import os
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
from dpggm.datasets.synthetic import make_precision_model
from dpggm.estimators.baselines import (
    AdaptiveCovariance,
    DiagonalCovariance,
    SeparateCovariance,
    SSPCovariance,
)
from dpggm.estimators.pace import PACECovariance
from dpggm.estimators.regression import AdaSSP, PrivateLinearRegression
from dpggm.exceptions import NumericalError
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

__all__ = ["METHODS", "REGISTRY_DATASETS", "REGISTRY_SETTINGS", "RHOS", "VARIANTS", "load_unit_box",
           "run_pace_registry_data", "run_pace_ggm", "run_pace_ggm_variants"]

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


def _centered(values: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Subtract the known mean, then clip back into the unit box (the declared bound)."""
    return np.clip(values - mean, -1.0, 1.0)


def load_unit_box(
    name: str, *, random_state: int = 0, center: bool = True, diagnosis: bool = True,
) -> tuple[np.ndarray, np.ndarray | None, str]:
    """Records of data set ``name`` in ``[-1, 1]``, the target mapped the same way when there
    is one with declared bounds, and how the bounds were set.

    Parameters
    ----------
    name : {"breast_cancer", "wine", "diabetes", "synthetic"}
    random_state : int, default=0
        Seed of the synthetic sample.
    center : bool, default=True
        Subtract the known mean (the sample mean for the real data sets, zero for the
        synthetic model) and clip back into ``[-1, 1]``, as in the paper. ``False`` gives
        the uncentered records (the target is then the raw second moment).
    diagnosis : bool, default=True
        Breast cancer only: append the diagnosis (malignant -1, benign +1) as a column, as
        the paper's copy of the data has it.
    """
    if _check_dataset(name) == "synthetic":
        model = make_precision_model(3, n_samples=2000, n_features=20, random_state=random_state)
        scale = 3.0 * float(np.sqrt(np.max(np.diag(model.covariance))))
        # The model's mean is zero and known: centering by it is the identity.
        return np.clip(model.X / scale, -1, 1), None, "3 standard deviations of the known model"
    data = _LOADERS[name]()
    lower, upper, how = declared_ranges(name)
    X = _to_unit(data.X, lower, upper)
    y = None
    if name in _WITH_TARGET:
        lo, hi = DIABETES_TARGET_RANGE
        y = _to_unit(np.asarray(data.target, dtype=float), np.array(lo), np.array(hi))
    if name == "breast_cancer" and diagnosis:
        # The label's range {0, 1} is public; it maps to {-1, +1}.
        X = np.column_stack([X, 2.0 * np.asarray(data.target, dtype=float) - 1.0])
        how += "; diagnosis column in {-1, 1}"
    if center:
        X = _centered(X, X.mean(axis=0))
        if y is not None:
            y = _centered(y, y.mean())
        how += "; centered by the sample mean (taken as known, not paid for) and clipped"
    return X, y, how


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
            # Least squares from a private covariance is heavy-tailed: the median and the
            # largest trial say what the mean hides.
            aggregation=Aggregation(by=["dataset", "rho", "method"], metrics=["mse"],
                                    extra={"mse_median": ("mse", "median"),
                                           "mse_max": ("mse", "max")}),
        ))
        tables["regression"] = lambda r: r.parts["regression"].aggregated
    outputs = {key: f"pace_ggm_{key}.csv" for key in tables} | {"figure": "pace_ggm_errors.png"}
    return ExperimentSpec("pace_ggm", parts, tables=tables,
                          figures={"figure": lambda r: _figure(r.tables["errors"])},
                          outputs=outputs)


def run_pace_ggm(
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


# ---------------------------------------------------------------------------------------
# what moves the number of measured entries on breast cancer (the paper's Table 4)

#: One change at a time from the data and settings of :func:`run_pace_ggm` (first entry).
VARIANTS: dict[str, dict[str, Any]] = {
    "as run: d = 31, centered, clipped": {},
    "no diagnosis column (d = 30)": {"diagnosis": False},
    "not centered": {"center": False},
    "paper's sensitivity 2B^2/n for every entry": {"entry_sensitivity": "paper"},
    "data's own min/max instead of declared ranges": {"ranges": "data"},
    "centered, then divided by the largest deviation (no clipping)": {"after_centering": "rescale"},
    "record id as a 32nd column (d = 32)": {"record_id": True},
    "centered, not clipped (the bound 1 exceeded)": {"after_centering": "none"},
    "all of the paper's choices at once": {
        "record_id": True, "entry_sensitivity": "paper", "ranges": "data",
        "after_centering": "none",
    },
}
# Centered records lie in [-2, 2]. Measuring them with noise calibrated for the bound 1 (what
# a pipeline that centers after rescaling to [-1, 1] and does not clip does) gives every
# Gaussian measurement the noise of the true bound 2 at 16 times the budget (the entry
# sensitivity grows like the bound squared), and the exponential mechanism the same ratio
# of epsilon to sensitivity. The variant runs exactly that: bound 2, budget 16 rho.
_UNCLIPPED_BOUND = 2.0
_VARIANT_DEFAULTS = {"diagnosis": True, "center": True, "entry_sensitivity": "tight",
                     "ranges": "declared", "after_centering": "clip", "record_id": False}


def _read_record_ids(ids: Any) -> np.ndarray:
    """The breast cancer record ids (one per row, in scikit-learn's order): an array, or a
    CSV file with a column ``id``."""
    if isinstance(ids, (str, os.PathLike)):
        ids = pd.read_csv(ids)["id"].to_numpy()
    ids = np.asarray(ids, dtype=float)
    expected = load_breast_cancer().n_samples
    if ids.shape != (expected,) or not np.all(np.isfinite(ids)):
        raise ValueError(f"record ids must be {expected} finite numbers, one per record; "
                         f"got shape {ids.shape}")
    return ids


def _breast_cancer_variant(options: dict[str, Any], ids: np.ndarray | None) -> np.ndarray:
    """The breast cancer records of one variant, in ``[-1, 1]``."""
    data = load_breast_cancer()
    if options["ranges"] == "data":
        # The paper's rescaling: read off the records (no formal guarantee).
        lower, upper = data.X.min(axis=0), data.X.max(axis=0)
    else:
        lower, upper, _ = declared_ranges("breast_cancer")
    columns = [_to_unit(data.X, lower, upper)]
    if options["diagnosis"]:
        columns.append(2.0 * np.asarray(data.target, dtype=float)[:, None] - 1.0)
    if options["record_id"]:
        if ids is None:
            raise ValueError("the record-id variant needs the record ids (ids=...)")
        # An identifier has no declared range; the paper rescales every column by its own
        # minimum and maximum.
        columns.insert(0, _to_unit(ids[:, None], ids.min(), ids.max()))
    X = np.column_stack(columns)
    if not options["center"]:
        return X
    deviations = X - X.mean(axis=0)
    if options["after_centering"] == "rescale":
        return deviations / np.max(np.abs(deviations), axis=0)
    if options["after_centering"] == "none":
        return deviations
    return np.clip(deviations, -1.0, 1.0)


def _structure(Z: np.ndarray) -> dict[str, float]:
    """The paper's Table 3 properties of a data matrix: mean and largest absolute pairwise
    correlation, share of the squared Frobenius norm of the covariance off the diagonal,
    and effective rank ``exp(-sum p_i log p_i)`` of the covariance's eigenvalues."""
    covariance = np.cov(Z, rowvar=False, bias=True)
    correlation = np.corrcoef(Z, rowvar=False)
    upper = np.triu_indices_from(correlation, 1)
    off = covariance - np.diag(np.diag(covariance))
    eigenvalues = np.clip(np.linalg.eigvalsh(covariance), 0.0, None)
    shares = eigenvalues / eigenvalues.sum()
    shares = shares[shares > 0]
    return {
        "mean_abs_r": float(np.mean(np.abs(correlation[upper]))),
        "max_abs_r": float(np.max(np.abs(correlation[upper]))),
        "e_off": float(np.sum(off**2) / np.sum(covariance**2)),
        "rank_eff": float(np.exp(-np.sum(shares * np.log(shares)))),
    }


def run_pace_ggm_variants(
    *,
    repetitions: int = 40,
    random_state: int = 0,
    out_dir: Any = None,
    overwrite: bool = False,
    rhos: tuple[float, ...] | None = None,
    variants: tuple[str, ...] | None = None,
    ids: Any = None,
) -> dict[str, pd.DataFrame]:
    """PACE-GGM's measured off-diagonal entries on breast cancer under one change at a time.

    Parameters
    ----------
    repetitions : int, default=40
        Trials per cell (more than the paper's 10, so that differences between variants
        are resolved).
    random_state : int, default=0
    out_dir : path, optional
        Where to write ``pace_ggm_variants.csv`` and ``pace_ggm_structure.csv``.
    overwrite : bool, default=False
    rhos : sequence of float, optional
        Default: the paper's seven.
    variants : sequence of str, optional
        Keys of :data:`VARIANTS`; default all (the record-id variant only with ``ids``).
    ids : array or path, optional
        The record ids of the UCI copy of the data (``wdbc.data``, first column), one per
        record in scikit-learn's order; a path names a CSV file with a column ``id``.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``"variants"``: per variant and rho, ``measured_offdiag_{mean,se}``,
        ``frobenius_{mean,se}`` (against the variant's own target) and ``n_reps``.
        ``"structure"``: per variant its ``d``, ``n``, the share of values outside the box
        after centering (clipped, or pulled in by the rescaling variant) and the paper's Table 3 properties (:func:`_structure`) of the records
        before clipping (as the paper computed them) and after.

    Privacy: evaluation code on public data; the variants read ranges, means and
    maxima off the records as the paper does, and none is a release.
    """
    random_state = check_random_seed(random_state)
    repetitions = check_positive_int(repetitions, name="repetitions")
    rhos = check_positive_numbers(RHOS if rhos is None else rhos, name="rhos")
    record_ids = None if ids is None else _read_record_ids(ids)
    if variants is None:
        variants = tuple(v for v in VARIANTS if record_ids is not None
                         or not VARIANTS[v].get("record_id"))
    variants = tuple(variants)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise ValueError(f"variants must be among {list(VARIANTS)}; got {unknown or variants}")

    def context(params: dict[str, Any]) -> dict[str, Any]:
        options = {**_VARIANT_DEFAULTS, **VARIANTS[params["variant"]]}
        Z = _breast_cancer_variant(options, record_ids)
        raw = _breast_cancer_variant({**options, "after_centering": "none"}, record_ids)
        bound, budget_factor = 1.0, 1.0
        if options["center"] and options["after_centering"] == "none":
            bound, budget_factor = _UNCLIPPED_BOUND, _UNCLIPPED_BOUND**4
        return {"Z": Z, "S": Z.T @ Z / len(Z), "options": options, "raw": raw,
                "bound": bound, "budget_factor": budget_factor}

    def cell(cell: Cell) -> list[dict[str, Any]]:
        variant, rho, rep = cell.params["variant"], cell.params["rho"], cell.repetition
        Z, S = cell.context["Z"], cell.context["S"]
        estimator = PACECovariance(
            budget=ZCDP(rho * cell.context["budget_factor"]), bounds=Box(cell.context["bound"]),
            entry_sensitivity=cell.context["options"]["entry_sensitivity"],
            random_state=cell.rng("variants", variant, rho, rep),
        )
        try:
            estimator.fit(Z)
        except NumericalError as error:
            # A numerical breakdown of the fit (inside the reconstruction it would be a
            # solver defect, not a property of the variant): counted in n_failed and
            # named, never silently dropped.
            return [{"variant": variant, "d": Z.shape[1], "rho": rho,
                     "measured_offdiag": math.nan, "frobenius": math.nan,
                     "failure": f"numerical breakdown: {error}"}]
        return [{"variant": variant, "d": Z.shape[1], "rho": rho,
                 "measured_offdiag": estimator.n_measured_offdiag_,
                 "frobenius": frobenius_error(estimator.covariance_, S)}]

    def structure(results: Results) -> pd.DataFrame:
        rows = []
        for (variant,), found in results.parts["variants"].contexts.items():
            Z, raw = found["Z"], found["raw"]
            rows.append({
                "variant": variant, "d": Z.shape[1], "n": Z.shape[0],
                "outside_box_after_centering": float(np.mean(np.abs(raw) > 1.0)),
                **{f"{k}_before_clipping": v for k, v in _structure(raw).items()},
                **{f"{k}_as_used": v for k, v in _structure(Z).items()},
            })
        return pd.DataFrame(rows)

    part = Part(
        name="variants", label="breast cancer variants", axes={"variant": variants, "rho": rhos},
        repetitions=repetitions, context=context, context_axes=("variant",), cell=cell,
        aggregation=Aggregation(by=["variant", "d", "rho"],
                                metrics=["measured_offdiag", "frobenius"]),
    )
    spec = ExperimentSpec(
        "pace_ggm_variants", [part],
        tables={"variants": lambda r: r.parts["variants"].aggregated, "structure": structure},
        outputs={"variants": "pace_ggm_variants.csv", "structure": "pace_ggm_structure.csv"},
    )
    return run(spec, random_state=random_state, out=out_dir, overwrite=overwrite).tables


# ---------------------------------------------------------------------------------------
# PACE-GGM on the paper's Table 4 data sets that a package registry ships

#: The paper's Table 4 data sets with a copy in a package registry, by the paper's name:
#: (name in :data:`~dpggm.experiments.registry_data.R_DATASETS`, columns left out).
REGISTRY_DATASETS = {"spambase": ("spam", ("type",))}
#: The settings run on them: name -> (entry sensitivity, clip after centering).
REGISTRY_SETTINGS = {
    "data's own ranges, centered and clipped": ("tight", True),
    "the paper's choices: data's own ranges, uniform sensitivity, not clipped": ("paper", False),
}


def _registry_records(name: str, clip: bool) -> np.ndarray:
    """The paper's preprocessing of a registry data set: every column mapped to [-1, 1]
    by its own minimum and maximum (read off the data, as the paper does), centered by its
    mean, then clipped back into the box (``clip``) or not."""
    from dpggm.experiments.registry_data import load_r_dataset

    source, dropped = REGISTRY_DATASETS[name]
    frame = load_r_dataset(source).drop(columns=list(dropped))
    X = frame.to_numpy(dtype=float)
    X = _to_unit(X, X.min(axis=0), X.max(axis=0))
    deviations = X - X.mean(axis=0)
    return np.clip(deviations, -1.0, 1.0) if clip else deviations


def run_pace_registry_data(
    *,
    repetitions: int = 10,
    random_state: int = 0,
    out_dir: Any = None,
    overwrite: bool = False,
    rhos: tuple[float, ...] | None = None,
    datasets: tuple[str, ...] | None = None,
) -> dict[str, pd.DataFrame]:
    """PACE-GGM's measured off-diagonal entries (the paper's Table 4) on the paper's data
    sets that a package registry ships (:data:`REGISTRY_DATASETS`; needs
    ``apt-get install r-cran-kernlab``).

    Both settings read each column's range off the data, as the paper does (no declared
    ranges are documented for these data): ``"data's own ranges, centered and clipped"``
    is dpggm's pipeline otherwise (tight diagonal sensitivity, the bound 1 holds); the
    other makes the paper's choices (uniform sensitivity ``2B²/n``, centered values not
    clipped, run as the bound 2 at ``16 rho``; see :func:`run_pace_ggm_variants`).

    Returns
    -------
    dict of str to pandas.DataFrame
        ``"measured"``: per (dataset, setting, rho) ``measured_offdiag_{mean,se}``,
        ``frobenius_{mean,se}`` (against the setting's own target), ``n_reps``,
        ``n_failed``; ``"timing"``, ``"environment"``.

    Privacy: evaluation code on public data; the ranges and means are read off the
    records as the paper does, and nothing here is a release.
    """
    random_state = check_random_seed(random_state)
    repetitions = check_positive_int(repetitions, name="repetitions")
    rhos = check_positive_numbers(RHOS if rhos is None else rhos, name="rhos")
    datasets = tuple(REGISTRY_DATASETS if datasets is None else datasets)
    unknown = [name for name in datasets if name not in REGISTRY_DATASETS]
    if unknown or not datasets:
        raise ValueError(f"datasets must be among {sorted(REGISTRY_DATASETS)}; got {datasets!r}")

    def context(params: dict[str, Any]) -> dict[str, Any]:
        sensitivity, clip = REGISTRY_SETTINGS[params["setting"]]
        Z = _registry_records(params["dataset"], clip)
        bound, factor = (1.0, 1.0) if clip else (_UNCLIPPED_BOUND, _UNCLIPPED_BOUND**4)
        return {"Z": Z, "S": Z.T @ Z / len(Z), "sensitivity": sensitivity, "bound": bound,
                "budget_factor": factor}

    def cell(cell: Cell) -> list[dict[str, Any]]:
        name, setting = cell.params["dataset"], cell.params["setting"]
        rho, rep = cell.params["rho"], cell.repetition
        Z, S = cell.context["Z"], cell.context["S"]
        estimator = PACECovariance(
            budget=ZCDP(rho * cell.context["budget_factor"]), bounds=Box(cell.context["bound"]),
            entry_sensitivity=cell.context["sensitivity"],
            random_state=cell.rng("registry", name, setting, rho, rep),
        )
        record = {"dataset": name, "setting": setting, "d": Z.shape[1], "rho": rho}
        try:
            estimator.fit(Z)
        except NumericalError as error:
            # A numerical breakdown of the fit: counted in n_failed and named.
            return [{**record, "measured_offdiag": math.nan, "frobenius": math.nan,
                     "failure": f"numerical breakdown: {error}"}]
        return [{**record, "measured_offdiag": estimator.n_measured_offdiag_,
                 "frobenius": frobenius_error(estimator.covariance_, S)}]

    part = Part(
        name="registry", label="PACE-GGM on registry data",
        axes={"dataset": datasets, "setting": tuple(REGISTRY_SETTINGS), "rho": rhos},
        repetitions=repetitions, context=context, context_axes=("dataset", "setting"),
        cell=cell, aggregation=Aggregation(by=["dataset", "setting", "d", "rho"],
                                           metrics=["measured_offdiag", "frobenius"]),
    )
    spec = ExperimentSpec("pace_registry_data", [part],
                          tables={"measured": lambda r: r.parts["registry"].aggregated},
                          outputs={"measured": "pace_registry_data_measured.csv"})
    return run(spec, random_state=random_state, out=out_dir, overwrite=overwrite).tables
