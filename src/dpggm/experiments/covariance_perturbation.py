"""Wang, Huai & Xu: covariance and output perturbation for the graphical
lasso, Tables 1-2 on the synthetic ``U Uᵀ`` model.

The relative error ``‖Θ_priv − Θ*‖_F / ‖Θ*‖_F`` is measured against the non-private
graphical lasso at the same penalty (``alpha = 0.001``, the paper's value) on the same
sample; values above 200 print as ``NA`` (the paper's convention).

Mechanisms (one release of the second moment each, then the graphical lasso):

* pure epsilon-DP (paper Table 1): Laplace; the pure-epsilon Wishart mechanism of Jiang
  et al. and the Wishart output perturbation of the paper's Algorithm 1. **The last two
  have no valid guarantee** (their privacy argument is flawed: Sheffet 2019, footnote 4;
  Amin et al. 2019, section 1.2); they run only with ``allow_invalid=True`` and are
  labelled "INVALID guarantee" in every table.
* (epsilon, delta)-DP with ``delta = 1e-4`` (paper Table 2): Gaussian (analytic
  calibration), Wishart (Sheffet; proven only for epsilon < 1, so the cells with
  epsilon >= 1 read "n/a (ε ≥ 1)") and SULQ.

What differs from the paper, and why:

* **Bound.** The paper "normalises" the data. Here every record is scaled to unit norm
  individually (record-level preprocessing, which needs no budget:
  ``make_uut_precision(normalize_rows=True)``) and the declared bound is ``RowNorm(1)``,
  so clipping changes nothing. Sensitivities are for replace-one neighbours (the paper's
  Gaussian uses the add/remove value ``1/n``; replace-one is ``sqrt(2)/n``).
* **Model.** ``U = P (I + N) Pᵀ`` with ``N`` strictly upper triangular, entries ±1 with
  probability ``2/(p − 1)`` (about one per row, as the generator's default at p = 400),
  so that ``U Uᵀ`` is positive definite for every draw.
* **No solution.** The paper runs the graphical lasso directly on the noisy matrix. When
  a released variance is not positive (or the noisy matrix is otherwise too far from
  positive definite for ``alpha``) that problem has no solution; such repetitions are
  counted, and the cell reads ``"no solution (k/m)"`` when every repetition failed
  (postprocessing ``"none (paper)"``). The library's
  :class:`~dpggm.estimators.precision.GraphicalLasso` (postprocessing ``"library
  repair"``) raises released variances below the per-entry noise standard deviation (a
  public quantity) to it and, if the problem still has no solution, solves it on the
  projection of the release onto the matrices with eigenvalues at least that floor; this
  is post-processing and costs no budget. ``n_repaired`` counts the repetitions where it
  acted.
* **Signal regime.** At the paper's ratios ``r = n/p <= 1.5`` every valid mechanism's
  noise dwarfs the signal for unit-norm records, so the reduced default adds ``r = 20``
  (marked "added") where the Gaussian-versus-Laplace ordering is visible.

Privacy: an evaluation on synthetic data; the invalid mechanisms are run only to
reproduce the paper's comparison.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from dpggm.datasets.synthetic import make_uut_precision
from dpggm.estimators.precision import GraphicalLasso, OutputPerturbationPrecision
from dpggm.exceptions import ConvergenceWarning, NumericalError
from dpggm.experiments._common import (
    NA_LIMIT,
    check_positive_int,
    check_positive_number,
    check_positive_numbers,
    check_random_seed,
    format_mean_se,
    mean_and_standard_error,
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
from dpggm.metrics.matrix import relative_error
from dpggm.privacy.budgets import ApproxDP, PureDP
from dpggm.solvers.glasso import graphical_lasso

__all__ = ["run_covariance_perturbation"]

#: The label of this experiment's random streams (the ``keys`` of
#: :func:`~dpggm.experiments._common.repetition_rng`). The committed runs in
#: docs/reproduction/ drew their data and noise from streams with this label (the number
#: the experiment had before it was named after its methods): it stays, because another
#: label would change every draw and the reduced re-run could no longer repeat them.
_STREAMS = "seed001"

PAPER_ALPHA = 1e-3
PAPER_DELTA = 1e-4
PAPER_EPSILONS = (0.5, 1.0, 1.5)
PAPER_RATIOS = (0.5, 1.0, 1.5)
ADDED_RATIOS = (20.0,)
INVALID = "INVALID guarantee"
NOT_APPLICABLE = "n/a (ε ≥ 1)"

_FULL = {"n_features": 400, "repetitions": 10, "ratios": PAPER_RATIOS}
_REDUCED = {"n_features": 50, "repetitions": 3, "ratios": PAPER_RATIOS + ADDED_RATIOS}

# (label, family, mechanism, budget kind, validity note)
_METHODS = (
    ("Laplace", "pure", "laplace", "pure", "valid"),
    ("Wishart-pure (Jiang et al.)", "pure", "wishart-pure", "pure", INVALID),
    ("Output perturbation (Alg. 1)", "pure", "output", "pure", INVALID),
    ("Gaussian", "approx", "gaussian", "approx", "valid"),
    ("Wishart (Sheffet)", "approx", "wishart", "approx", "valid for epsilon < 1"),
    ("SULQ", "approx", "sulq", "approx", "valid"),
)
POSTPROCESSING = ("none (paper)", "library repair")
APPROX_FAMILY = f"(epsilon, delta={PAPER_DELTA:g})-DP"

_OUTPUTS = {
    "errors": "covariance_perturbation_errors.csv",
    "table1_pure_dp": "covariance_perturbation_table1_pure_dp.csv",
    "table2_approx_dp": "covariance_perturbation_table2_approx_dp.csv",
    "ordering": "covariance_perturbation_ordering.csv",
    "figure": "covariance_perturbation_errors.png",
}


def _solve(S: np.ndarray, alpha: float) -> np.ndarray | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # A bounded iteration count: on a release with no solution ADMM may otherwise
        # spend its whole default budget before the divergence is certain.
        result = attempt(graphical_lasso, S, alpha, max_iter=1000)
    return None if result is None else result.estimate


def _common_fields(
    *, label: str, family: str, validity: str, epsilon: float, ratio: float, n: int, p: int,
    repetition: int,
) -> dict[str, Any]:
    return {
        "family": "epsilon-DP" if family == "pure" else APPROX_FAMILY,
        "method": label,
        "validity": validity,
        "epsilon": epsilon,
        "r": ratio,
        "n": n,
        "p": p,
        "repetition": repetition,
    }


def _method_records(
    *, X: np.ndarray, reference: np.ndarray, method: tuple, epsilon: float, alpha: float,
    rng: Any, common: dict[str, Any],
) -> list[dict[str, Any]]:
    """One mechanism at one epsilon on one sample, with and without the library repair."""
    label, family, mechanism, kind, validity = method
    bounds = RowNorm(1.0)
    budget = PureDP(epsilon) if kind == "pure" else ApproxDP(epsilon, PAPER_DELTA)
    if mechanism == "wishart" and epsilon >= 1:
        return [
            {**common, "postprocessing": post, "rel_fro": math.nan, "repaired": math.nan,
             "status": NOT_APPLICABLE}
            for post in POSTPROCESSING
        ]
    if mechanism == "output":
        estimator = OutputPerturbationPrecision(
            alpha=alpha, budget=budget, bounds=bounds, allow_invalid=True, random_state=rng
        ).fit(X)
        error = relative_error(estimator.precision_, estimator.non_private_precision_)
        return [
            {**common, "postprocessing": post, "rel_fro": error, "repaired": 0.0, "status": "ok"}
            for post in POSTPROCESSING
        ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        estimator = GraphicalLasso(
            alpha=alpha,
            budget=budget,
            bounds=bounds,
            mechanism=mechanism,
            allow_invalid=(validity == INVALID),
            max_iter=1000,
            random_state=rng,
        ).fit(X)
    repaired = bool(getattr(estimator, "n_diagonal_repaired_", 0)) or bool(
        getattr(estimator, "repaired_", False)
    )
    # The paper's pipeline: the graphical lasso on the raw release itself.
    estimate = _solve(estimator.noisy_covariance_, alpha)
    return [
        {
            **common,
            "postprocessing": "library repair",
            "rel_fro": relative_error(estimator.precision_, reference),
            "repaired": float(repaired),
            "status": "ok",
        },
        {
            **common,
            "postprocessing": "none (paper)",
            "rel_fro": math.nan if estimate is None else relative_error(estimate, reference),
            "repaired": 0.0,
            "status": "ok" if estimate is not None else "no solution",
        },
    ]


def _cell_records(cell: Cell, *, p: int, epsilons: tuple[float, ...], alpha: float,
                  methods: tuple[str, ...]):
    """One sample at ratio ``r``: every mechanism of ``methods`` at every epsilon."""
    ratio, repetition = cell.params["r"], cell.repetition
    n = int(round(ratio * p))
    X = cell.context.resample(
        n_samples=n, random_state=cell.rng(f"{_STREAMS}-data", ratio, repetition)
    ).X
    reference = _solve(X.T @ X / n, alpha)
    if reference is None:
        raise NumericalError(
            f"the non-private graphical lasso at alpha={alpha!r} has no solution for this sample"
        )
    records = []
    for epsilon in epsilons:
        for method in (m for m in _METHODS if m[0] in methods):
            label, family, mechanism, _, validity = method
            common = _common_fields(label=label, family=family, validity=validity,
                                    epsilon=epsilon, ratio=ratio, n=n, p=p, repetition=repetition)
            rng = cell.rng(f"{_STREAMS}-noise", ratio, repetition, epsilon, mechanism)
            records.extend(_method_records(X=X, reference=reference, method=method,
                                           epsilon=epsilon, alpha=alpha, rng=rng, common=common))
    return records


def _no_reference(cell: Cell, error: NumericalError, *, p: int, epsilons: tuple[float, ...]):
    """A sample whose non-private reference has no solution: every cell of it failed."""
    ratio, n = cell.params["r"], int(round(cell.params["r"] * p))
    return [
        {
            **_common_fields(label=label, family=family, validity=validity, epsilon=epsilon,
                             ratio=ratio, n=n, p=p, repetition=cell.repetition),
            "postprocessing": post,
            "rel_fro": math.nan,
            "repaired": 0.0,
            "status": NOT_APPLICABLE
            if mechanism == "wishart" and epsilon >= 1
            else "no solution",
        }
        for epsilon in epsilons
        for label, family, mechanism, _, validity in _METHODS
        for post in POSTPROCESSING
    ]


def _cell(group: pd.DataFrame) -> str:
    status = set(group["status"])
    if status == {NOT_APPLICABLE}:
        return NOT_APPLICABLE
    values = group["rel_fro"].to_numpy(dtype=float)
    failed = int(np.sum(~np.isfinite(values)))
    if failed == len(values):
        return f"no solution ({failed}/{len(values)})"
    mean, se, _ = mean_and_standard_error(values)
    text = format_mean_se(mean, se, digits=4, limit=NA_LIMIT)
    if failed:
        text += f" [no solution {failed}/{len(values)}]"
    repaired = int(np.nansum(group["repaired"].to_numpy(dtype=float)))
    if repaired:
        text += f" [repaired {repaired}/{len(values)}]"
    return text


def _wide_table(raw: pd.DataFrame, family: str) -> pd.DataFrame:
    subset = raw[raw["family"] == family]
    rows = []
    for (post, epsilon, method), group in subset.groupby(
        ["postprocessing", "epsilon", "method"], sort=False
    ):
        validity = group["validity"].iloc[0]
        row: dict[str, Any] = {
            "postprocessing": post,
            "epsilon": epsilon,
            "method": method + (f" [{INVALID}]" if validity == INVALID else ""),
        }
        for ratio, cell in group.groupby("r", sort=False):
            added = "" if ratio in PAPER_RATIOS else " (added)"
            row[f"r={ratio:g}{added}"] = _cell(cell)
        rows.append(row)
    return pd.DataFrame(rows)


def _errors_table(results: Results) -> pd.DataFrame:
    errors = results.parts["errors"].aggregated.copy()
    errors["n_repaired"] = errors["n_repaired"].astype(int)
    errors["display"] = [
        format_mean_se(m, s, digits=4, limit=NA_LIMIT) if math.isfinite(m) else "no solution"
        for m, s in zip(errors["rel_fro_mean"], errors["rel_fro_se"])
    ]
    return errors


def _ordering(errors: pd.DataFrame) -> pd.DataFrame:
    """Gaussian against Laplace at the same epsilon (the Gaussian also has delta = 1e-4,
    so the guarantees are not identical; this is the paper's comparison)."""
    rows = []
    keyed = errors.set_index(["postprocessing", "epsilon", "r", "method"])
    for post in POSTPROCESSING:
        for epsilon in sorted(set(errors["epsilon"])):
            for ratio in sorted(set(errors["r"])):
                gaussian = keyed.loc[(post, epsilon, ratio, "Gaussian")]
                laplace = keyed.loc[(post, epsilon, ratio, "Laplace")]
                g, lap = float(gaussian["rel_fro_mean"]), float(laplace["rel_fro_mean"])
                if not (math.isfinite(g) or math.isfinite(lap)):
                    continue
                rows.append(
                    {
                        "postprocessing": post,
                        "epsilon": epsilon,
                        "r": ratio,
                        "gaussian_mean": g,
                        "gaussian_se": float(gaussian["rel_fro_se"]),
                        "laplace_mean": lap,
                        "laplace_se": float(laplace["rel_fro_se"]),
                        "gaussian_better": bool(g < lap)
                        if math.isfinite(g) and math.isfinite(lap)
                        else None,
                    }
                )
    return pd.DataFrame(rows)


def _figure(errors: pd.DataFrame) -> Any:
    """Relative Frobenius error against epsilon, one panel per privacy family, one line per
    method and post-processing (averaged over the other settings)."""
    # A bare Figure renders with Agg when saved and leaves pyplot's global state alone.
    from matplotlib.figure import Figure

    families = list(dict.fromkeys(errors["family"]))
    figure = Figure(figsize=(6 * max(len(families), 1), 4.5))
    axes = figure.subplots(1, max(len(families), 1), squeeze=False)[0]
    for axis, family in zip(axes, families):
        subset = errors[(errors["family"] == family) & np.isfinite(errors["rel_fro_mean"])]
        for (method, post), group in subset.groupby(["method", "postprocessing"], sort=False):
            line = group.groupby("epsilon")["rel_fro_mean"].mean().sort_index()
            axis.plot(line.index, line.to_numpy(), marker="o", label=f"{method} ({post})")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("epsilon")
        axis.set_ylabel("relative Frobenius error")
        axis.set_title(str(family))
        axis.legend(fontsize=7)
    return figure


def _spec(
    *, p: int, ratios: tuple[float, ...], epsilons: tuple[float, ...], alpha: float,
    repetitions: int, random_state: int, methods: tuple[str, ...],
) -> ExperimentSpec:
    def model(params: Any) -> Any:
        return make_uut_precision(
            n_samples=1,
            n_features=p,
            density=2.0 / (p - 1),
            normalize_rows=True,
            random_state=repetition_rng(random_state, f"{_STREAMS}-model"),
        )

    part = Part(
        name="errors",
        label="tables",
        axes={"r": ratios},
        repetitions=repetitions,
        context=model,
        cell=lambda cell: _cell_records(cell, p=p, epsilons=epsilons, alpha=alpha,
                                        methods=methods),
        on_failure=lambda cell, error: _no_reference(cell, error, p=p, epsilons=epsilons),
        aggregation=Aggregation(
            by=["postprocessing", "family", "method", "validity", "epsilon", "r", "n", "p"],
            metrics=["rel_fro"],
            extra={"n_repaired": ("repaired", "sum")},
            where=lambda records: records["status"] != NOT_APPLICABLE,
        ),
    )
    tables = {
        "errors": _errors_table,
        "table1_pure_dp": lambda r: _wide_table(r.parts["errors"].records, "epsilon-DP"),
        "table2_approx_dp": lambda r: _wide_table(r.parts["errors"].records, APPROX_FAMILY),
        "ordering": lambda r: _ordering(r.tables["errors"]),
    }
    figures = {"figure": lambda r: _figure(r.tables["errors"])}
    return ExperimentSpec("covariance_perturbation", [part], tables=tables, figures=figures,
                          outputs=_OUTPUTS)


def run_covariance_perturbation(
    *,
    full: bool = False,
    repetitions: int | None = None,
    random_state: int = 0,
    out_dir: Any = None,
    overwrite: bool = False,
    n_features: int | None = None,
    ratios: Any = None,
    epsilons: Any = None,
    alpha: float = PAPER_ALPHA,
    methods: Any = None,
) -> dict[str, pd.DataFrame]:
    """Wang, Huai & Xu's Tables 1-2: relative Frobenius error of private graphical lassos.

    Parameters
    ----------
    full : bool, default=False
        The paper's size ``p = 400`` with ``r`` in {0.5, 1, 1.5} and 10 repetitions (the
        paper reports one run). The reduced default uses ``p = 50``, 3 repetitions and
        adds ``r = 20``; it runs in about a minute.
    repetitions : int, optional
        Repetitions per cell (overrides the preset).
    random_state : int, default=0
        Seed of the whole experiment.
    out_dir : path, optional
        Where to write the CSV tables.
    overwrite : bool, default=False
        Replace existing output files; otherwise an existing file is an error, raised
        before any computation.
    n_features : int, optional
        Dimension ``p`` (overrides the preset).
    ratios : sequence of float, optional
        Values of ``r = n/p`` (``n = round(r p)``).
    epsilons : sequence of float, optional
        Default ``(0.5, 1, 1.5)``; ``delta = 1e-4`` for the approximate-DP methods.
    alpha : float, default=0.001
        Graphical-lasso penalty (off-diagonal only), the paper's value.
    methods : sequence of str, optional
        Labels of the mechanisms to run (default all six); Gaussian and Laplace always
        (the ordering table compares them). The other cells' random streams do not
        depend on which mechanisms run.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``"errors"``: one row per (postprocessing, family, method, epsilon, r) with
        ``rel_fro_mean``, ``rel_fro_se``, ``n_reps``, ``n_failed`` (no solution),
        ``n_repaired`` (library repair acted) and ``validity``.
        ``"table1_pure_dp"``, ``"table2_approx_dp"``: the paper's layout, cells
        ``"mean (se)"`` (with ``[repaired k/m]`` when the library repair acted), ``"NA"``
        above 200, ``"no solution (k/m)"`` or ``"n/a (ε ≥ 1)"``;
        invalid methods carry "[INVALID guarantee]". ``"ordering"``: Gaussian versus
        Laplace per cell where at least one has a solution. ``"timing"``: wall-clock seconds.

    Notes
    -----
    See the module documentation for every departure from the paper and why.

    Privacy: an evaluation on synthetic data.
    """
    preset = _FULL if full else _REDUCED
    random_state = check_random_seed(random_state)
    repetitions = check_positive_int(
        preset["repetitions"] if repetitions is None else repetitions, name="repetitions"
    )
    p = check_positive_int(
        preset["n_features"] if n_features is None else n_features, name="n_features"
    )
    if p < 3:
        raise ValueError(f"n_features must be an integer >= 3; got {p}")
    labels = tuple(method[0] for method in _METHODS)
    methods = labels if methods is None else tuple(methods)
    if not methods or any(m not in labels for m in methods) or not {
            "Gaussian", "Laplace"} <= set(methods):
        raise ValueError(f"methods must be among {labels} and include 'Gaussian' and "
                         f"'Laplace' (the ordering table compares them); got {methods!r}")
    ratios = check_positive_numbers(preset["ratios"] if ratios is None else ratios, name="ratios")
    if min(round(r * p) for r in ratios) < 2:
        raise ValueError(
            f"ratios must give n = round(r p) >= 2 samples; got ratios={ratios!r} with p={p}"
        )
    spec = _spec(
        p=p,
        ratios=ratios,
        epsilons=check_positive_numbers(
            PAPER_EPSILONS if epsilons is None else epsilons, name="epsilons"
        ),
        alpha=check_positive_number(alpha, name="alpha"),
        repetitions=repetitions,
        random_state=random_state,
        methods=methods,
    )
    return run(spec, random_state=random_state, out=out_dir, overwrite=overwrite).tables
