"""``dpggm estimate``: one private estimate, optionally charged to a ledger.

Order of work (nothing is spent for nothing, nothing half-written is ever visible):

1. check every option, the output location (a staging directory is created beside it)
   and, with a ledger, that the release can be booked: the ledger file exists (only
   ``budget init`` creates one), the relation matches, the run would be valid (no seed,
   no ``--allow-invalid``, no data-tuned penalty) and the budget the method will
   guarantee, in the ledger's notion, fits what remains;
2. fit in memory;
3. write every output into the staging directory;
4. charge the ledger ``privacy_`` -- what the release guarantees -- atomically; a refusal
   here (another process spent meanwhile, an unconvertible notion, an invalid release)
   discards the staged output unseen;
5. rename the staging directory into place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from dpggm.cli import data_options as dopt
from dpggm.cli._common import (
    DeltaOpt,
    EpsilonOpt,
    MuOpt,
    QuietOpt,
    RhoOpt,
    UserError,
    budget_from_options,
    console,
    err_console,
    guard,
    load_bounds,
    parse_center,
    parse_seed,
    progress_display,
    summarised_warnings,
)
from dpggm.cli._common import (
    feature_names as _names,
)
from dpggm.estimators.registry import METHODS

__all__ = ["estimate", "result_record", "edge_list_csv"]

# Methods whose release is stated in zCDP whatever notion the total was given in: a
# PureDP or GDP request is converted (eps**2/2, mu**2/2) before any noise is drawn.
ZCDP_METHODS = frozenset({"pace", "ssp-zcdp", "diagonal", "separate", "adaptive"})


def _delivered_budget(method: str, budget: Any) -> Any:
    """The budget the release of ``method`` will state, as far as it is known beforehand."""
    from dpggm.privacy.budgets import GDP, PureDP

    if method in ZCDP_METHODS and isinstance(budget, (PureDP, GDP)):
        return budget.to_zcdp()
    return budget


def _parse_alpha(alpha: str | None) -> Any:
    if alpha is None or alpha in ("auto", "cv-nonprivate"):
        return alpha
    try:
        return float(alpha)
    except ValueError:
        raise UserError(
            f"--alpha must be a number, 'auto' or 'cv-nonprivate'; got {alpha!r}") from None


def _precheck_ledger(ledger: Path, dataset: str, *, method: str, budget: Any, neighbors: str,
                     random_state: Any, allow_invalid: bool, alpha: Any) -> Any:
    from dpggm.privacy.budgets import NonPrivate
    from dpggm.privacy.ledger import Ledger

    if isinstance(budget, NonPrivate):
        raise UserError("a non-private run cannot be recorded against a privacy ledger; "
                        "drop --ledger or give a budget")
    if random_state != "secure":
        raise UserError(
            "a seeded run is an experiment, not a release (whoever holds the seed can "
            "regenerate the noise), so it is never booked against a ledger; drop --seed or "
            "--ledger")
    if allow_invalid:
        raise UserError(
            "--allow-invalid runs a method whose guarantee is known not to hold; such a run "
            "is never booked against a ledger; drop --allow-invalid or --ledger")
    if alpha == "cv-nonprivate":
        raise UserError("--alpha cv-nonprivate tunes the penalty on the private data (no formal "
                        "guarantee), so the run is not booked against a ledger; use --alpha auto")
    if not ledger.exists():
        raise UserError(f"no ledger at {ledger}; create it with `dpggm budget init {ledger} "
                        f"--dataset {dataset} ...` (a mistyped path never creates one)")
    book = Ledger(ledger, create=False)
    book.check(dataset, _delivered_budget(method, budget), neighbors=neighbors)
    return book


# One piece (over 120 lines): a Typer command's signature is its option list; the work is
# in the helpers (_precheck_ledger, _stage_outputs, StagedOutput).
def estimate(
    data: Annotated[Path, typer.Argument(
        help="CSV or Parquet file, one record per row (with --engine dask: a glob or URL)")],
    method: Annotated[str, typer.Option(help=f"one of: {', '.join(METHODS)}")] = "ssp",
    epsilon: EpsilonOpt = None,
    delta: DeltaOpt = None,
    rho: RhoOpt = None,
    mu: MuOpt = None,
    non_private: Annotated[bool, typer.Option(
        "--non-private", help="exact reference run (no privacy)")] = False,
    bound: Annotated[str, typer.Option(
        help="declared bound: l2:B (row norm), box:B, or box:per-column with --bound-file")] = "",
    bound_file: Annotated[Path | None, typer.Option(
        help="CSV of per-column box bounds (with --bound box:per-column)")] = None,
    neighbors: Annotated[str, typer.Option(help="replace or add-remove")] = "replace",
    alpha: Annotated[str | None, typer.Option(
        help="graphical-lasso penalty, 'auto' or 'cv-nonprivate'")] = None,
    ridge: Annotated[float | None, typer.Option(help="ridge penalty (method ridge)")] = None,
    gamma: Annotated[float | None, typer.Option(
        help="threshold constant (method threshold)")] = None,
    solver: Annotated[str | None, typer.Option(
        help="graphical-lasso solver: auto, cd or admm")] = None,
    diag_fraction: Annotated[float | None, typer.Option(
        help="PACE: share of the budget for the diagonal")] = None,
    select_fraction: Annotated[float | None, typer.Option(
        help="PACE: share of each round for selection")] = None,
    max_rounds: Annotated[int | None, typer.Option(
        help="PACE: the round budget divisor T")] = None,
    allow_invalid: Annotated[bool, typer.Option(
        "--allow-invalid",
        help="run a method whose published guarantee is known to be invalid")] = False,
    center: Annotated[str | None, typer.Option(
        help="private, none, or a CSV file of a public mean")] = None,
    seed: Annotated[str | None, typer.Option(
        help="random seed (integer: an experiment, not a release) or 'secure'")] = "secure",
    out: Annotated[Path, typer.Option(help="output directory")] = Path("dpggm-out"),
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing output directory")] = False,
    ledger: Annotated[Path | None, typer.Option(help="budget ledger file to spend from")] = None,
    dataset: Annotated[str | None, typer.Option(help="dataset name in the ledger")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result record as JSON")] = False,
    quiet: QuietOpt = False,
    engine: dopt.EngineOpt = "memory",
    scheduler: dopt.SchedulerOpt = None,
    blocksize: dopt.BlocksizeOpt = None,
    columns: dopt.ColumnsOpt = None,
    delimiter: dopt.DelimiterOpt = ",",
    decimal: dopt.DecimalOpt = ".",
    no_header: dopt.NoHeaderOpt = False,
    index_col: dopt.IndexColOpt = None,
    encoding: dopt.EncodingOpt = "utf-8",
) -> None:
    """Estimate a private covariance or precision matrix from DATA."""
    reading = dopt.data_options(engine, scheduler, blocksize, columns, delimiter, decimal,
                                no_header, index_col, encoding)
    from dpggm.cli.output import StagedOutput, recover_pending
    from dpggm.estimators.registry import make_estimator

    budget = budget_from_options(epsilon, delta, rho, mu, non_private)
    bounds = load_bounds(bound, bound_file)
    if (ledger is None) != (dataset is None):
        raise UserError("--ledger and --dataset go together")
    if neighbors not in ("replace", "add-remove"):
        raise UserError(f"--neighbors must be 'replace' or 'add-remove'; got {neighbors!r}")
    if method not in METHODS:
        raise UserError(f"--method must be one of {', '.join(METHODS)}; got {method!r}")
    random_state = parse_seed(seed)
    if engine == "memory":
        if data.is_dir():
            raise UserError(f"{data} is a directory; give the CSV or Parquet file of records")
        if not data.exists():
            raise UserError(f"no such file: {data}")
    # Options are passed exactly as typed: 0 is a value, not "unset" (None is unset).
    given = {
        "alpha": _parse_alpha(alpha), "ridge": ridge, "gamma": gamma, "solver": solver,
        "diag_fraction": diag_fraction, "select_fraction": select_fraction,
        "max_rounds": max_rounds, "allow_invalid": True if allow_invalid else None,
        "center": None if center is None else _center_option(center),
    }
    options = {k: v for k, v in given.items() if v is not None}
    estimator = make_estimator(method, budget=budget, bounds=bounds, neighbors=neighbors,
                               random_state=random_state, **options)

    recover_pending(Path(out).parent if str(out.parent) else Path("."),
                    report=lambda line: err_console.print(line, markup=False, highlight=False))
    book = None
    if ledger is not None:
        book = _precheck_ledger(ledger, dataset, method=method, budget=budget,
                                neighbors=neighbors, random_state=random_state,
                                allow_invalid=allow_invalid, alpha=options.get("alpha"))
    pending = ({"ledger": str(Path(ledger).resolve()), "dataset": dataset}
               if ledger is not None else {})
    staged = StagedOutput(out, overwrite=overwrite, pending=pending)
    try:
        with summarised_warnings(), progress_display(quiet=quiet) as shown:
            # Dask draws its own bar on standard output: only when both streams are a
            # terminal, so that nothing of it lands in a file or a pipe.
            dask_bar = shown and console.is_terminal
            with dopt.open_data(data, reading, progress=dask_bar) as records:
                estimator.fit(records)
        record = result_record(method, estimator)
        _stage_outputs(staged, estimator, record)
        if book is not None:
            spend = book.spend(
                dataset, estimator.privacy_, mechanism=f"dpggm estimate --method {method}",
                details={"data": str(data), "out": str(out), "output_id": staged.output_id},
            )
            record["ledger"] = {"ledger": pending["ledger"], "dataset": dataset,
                                "spend": spend.sequence, "output_id": staged.output_id}
            staged.json("ledger.json", record["ledger"])
    except BaseException:
        staged.discard()
        raise
    try:
        staged.commit()
    except OSError as exc:
        spent = "" if book is None else (
            f"; {estimator.privacy_.budget} was charged to {dataset!r} (spend "
            f"#{record['ledger']['spend']}) and the complete output is kept in {staged.staging}: "
            "the next `dpggm estimate` into the same directory finishes the delivery")
        raise UserError(f"could not move the output into {out}: {exc}{spent}") from None
    if as_json:
        console.print_json(json.dumps(record))
    else:
        console.print(f"[bold]{method}[/] on {data} "
                      f"(n={estimator.n_samples_}, p={estimator.n_features_in_})")
        console.print(estimator.privacy_.summary(), markup=False)
        if book is not None:
            console.print(f"charged {estimator.privacy_.budget} to {dataset!r} in {ledger}",
                          markup=False)
        console.print("wrote " + ", ".join(str(p) for p in staged.written), markup=False)


estimate = guard(estimate)


def _center_option(value: str) -> Any:
    center = parse_center(value)
    return center if isinstance(center, str) else [float(v) for v in center]


def _stage_outputs(staged: Any, estimator: Any, record: dict[str, Any]) -> None:

    staged.json("result.json", record)
    for attr, name in (("covariance_", "covariance.npy"),
                       ("noisy_covariance_", "noisy_covariance.npy"),
                       ("precision_", "precision.npy")):
        if getattr(estimator, attr, None) is not None:
            staged.npy(name, getattr(estimator, attr))
    names = _names(estimator)
    if getattr(estimator, "precision_", None) is not None:
        staged.text("edges.csv", edge_list_csv(estimator.precision_, names))
    elif getattr(estimator, "adjacency_", None) is not None:
        from dpggm.estimators.graph import edge_table, edges_csv_text

        staged.text("edges.csv", edges_csv_text(edge_table(
            estimator.adjacency_, names, weight=None, partial=None)))


def result_record(method: str, estimator: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "method": method,
        "n_samples": int(estimator.n_samples_),
        "n_features": int(estimator.n_features_in_),
        "features": _names(estimator),
        "privacy": estimator.privacy_.to_dict(),
        "parameters": {k: (v.to_dict() if hasattr(v, "to_dict") else v)
                       for k, v in estimator.get_params().items()
                       if k != "random_state"
                       and (isinstance(v, (int, float, str, bool, type(None)))
                            or hasattr(v, "to_dict"))},
    }
    for attr in ("alpha_", "n_iter_", "converged_", "n_edges_", "n_rounds_",
                 "n_measured_offdiag_"):
        if hasattr(estimator, attr):
            value = getattr(estimator, attr)
            record[attr.rstrip("_")] = value.item() if hasattr(value, "item") else value
    return record


def edge_list_csv(precision: Any, names: list[str], *, tol: float = 0.0) -> str:
    """Edges ``(i, j)`` with a non-zero partial correlation, strongest first, in the one
    edge format ``source,target,weight,partial_correlation``."""
    import numpy as np

    from dpggm.estimators.graph import edges_csv_text, edges_from_precision

    return edges_csv_text(edges_from_precision(precision, names, adjacency=np.abs(precision) > tol))
