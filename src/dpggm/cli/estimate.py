"""``dpggm estimate``: one private estimate, optionally charged to a ledger.

Order of work (nothing is spent for nothing, nothing half-written is ever visible):

1. check every option and build the estimator (every parameter checked) and, with a
   ledger, that the release can be booked -- the library's
   :meth:`~dpggm.estimators.PrivateCovariance.check_ledger`: the run would be valid (no
   seed, no ``--allow-invalid``, no data-tuned penalty), one of the budget forms the
   release will hold converts into the ledger's notion, the relation matches and the
   budget fits what remains -- all before the data file is opened;
2. ``estimator.save(out, X=...)`` does the rest, as for a Python user
   (:func:`dpggm.io.deliver`): the output location is checked and staged, the estimator
   fitted, every output written into the staging directory, the ledger charged
   ``privacy_`` -- what the release guarantees -- and the directory renamed into place;
   a refused charge discards the staged output unseen, a failure after the first draw is
   charged and reported without its reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from dpggm.cli import data_options as dopt
from dpggm.cli.common import (
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
    open_ledger,
    parse_center,
    parse_seed,
    progress_display,
    summarised_warnings,
)
from dpggm.estimators.registry import METHODS

__all__ = ["estimate", "result_record", "edge_list_csv"]

def _parse_alpha(alpha: str | None) -> Any:
    if alpha is None or alpha in ("auto", "cv-nonprivate"):
        return alpha
    try:
        return float(alpha)
    except ValueError:
        raise UserError(
            f"--alpha must be a number, 'auto' or 'cv-nonprivate'; got {alpha!r}") from None


# One piece (over 120 lines): a Typer command's signature is its option list; the work is
# the library's (make_estimator, check_ledger, save).
def estimate(
    data: Annotated[Path, typer.Argument(
        help="the table, one record per row: CSV (also compressed), Parquet (a file or a "
             "folder), .xlsx/.xls/.ods, .sav, .dta or .sas7bdat (with --engine dask: a glob "
             "or URL of CSV or Parquet files)")],
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
    missing: Annotated[str, typer.Option(
        help="what a missing value (an empty field) does: refuse (stop with its line), or "
             "drop its row (only with --neighbors add-remove, whose count is private; the "
             "covariance-perturbation methods)")] = "refuse",
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
    drop: dopt.DropOpt = None,
    id_col: dopt.IdColOpt = None,
    schema: dopt.SchemaOpt = None,
    delimiter: dopt.DelimiterOpt = ",",
    decimal: dopt.DecimalOpt = ".",
    thousands: dopt.ThousandsOpt = None,
    na_values: dopt.NaValuesOpt = None,
    header: dopt.HeaderOpt = False,
    no_header: dopt.NoHeaderOpt = False,
    index_col: dopt.IndexColOpt = None,
    encoding: dopt.EncodingOpt = "utf-8",
    sheet: dopt.SheetOpt = None,
    file_format: dopt.FormatOpt = None,
) -> None:
    """Estimate a private covariance or precision matrix from DATA."""
    reading = dopt.data_options(engine, scheduler, blocksize, columns, delimiter, decimal,
                                no_header, index_col, encoding, drop=drop, id_col=id_col,
                                schema=schema, na_values=na_values, thousands=thousands,
                                sheet=sheet, format=file_format, header=header)
    if dopt.declares_ranges(reading):
        # A schema shared with dpggm graph may declare ranges: said, not silently ignored.
        err_console.print(f"note: the ranges --schema {schema} declares are for dpggm graph; "
                          "dpggm estimate clips to --bound", markup=False, highlight=False)
    from dpggm.estimators.registry import make_estimator

    budget = budget_from_options(epsilon, delta, rho, mu, non_private)
    bounds = load_bounds(bound, bound_file)
    if (ledger is None) != (dataset is None):
        raise UserError("--ledger and --dataset go together")
    if method not in METHODS:
        raise UserError(f"--method must be one of {', '.join(METHODS)}; got {method!r}")
    if missing not in ("refuse", "drop"):
        raise UserError(f"--missing must be refuse or drop; got {missing!r}")
    random_state = parse_seed(seed)
    if engine == "memory":
        if not data.exists():
            raise UserError(f"no such file: {data}")
        if data.is_dir():
            from dpggm.data.formats import parquet_parts

            parquet_parts(data)  # a folder of Parquet files is one table
    # Options are passed exactly as typed: 0 is a value, not "unset" (None is unset).
    given = {
        "alpha": _parse_alpha(alpha), "ridge": ridge, "gamma": gamma, "solver": solver,
        "diag_fraction": diag_fraction, "select_fraction": select_fraction,
        "max_rounds": max_rounds, "allow_invalid": True if allow_invalid else None,
        "center": None if center is None else _center_option(center),
        # Only a non-default policy is passed, so every method keeps refusing by default.
        "missing": None if missing == "refuse" else missing,
    }
    options = {k: v for k, v in given.items() if v is not None}
    estimator = make_estimator(method, budget=budget, bounds=bounds, neighbors=neighbors,
                               random_state=random_state, **options)
    # Every parameter is checked by the estimator (--missing drop under replace-one
    # neighbours is refused there) before the data file is opened.
    estimator.check_params()

    book = None
    if ledger is not None:
        book = open_ledger(ledger, dataset)
        estimator.check_ledger(book, dataset)
    with summarised_warnings(), progress_display(quiet=quiet) as shown:
        # Dask draws its own bar on standard output: only when both streams are a
        # terminal, so that nothing of it lands in a file or a pipe.
        dask_bar = shown and console.is_terminal
        with dopt.open_data(data, reading, progress=dask_bar) as records:
            delivered = estimator.save(
                out, X=records, ledger=book, dataset=dataset, overwrite=overwrite,
                record=lambda fitted: result_record(method, fitted),
                mechanism=f"dpggm estimate --method {method}", details={"data": str(data)},
                report=lambda line: err_console.print(line, markup=False, highlight=False))
    record = json.loads((out / "result.json").read_text(encoding="utf-8"))
    if delivered["ledger"] is not None:
        record["ledger"] = delivered["ledger"]
    if as_json:
        console.print_json(json.dumps(record))
    else:
        console.print(f"[bold]{method}[/] on {data} "
                      f"(n={estimator.n_samples_}, p={estimator.n_features_in_})")
        console.print(estimator.privacy_.summary(), markup=False)
        if book is not None:
            console.print(f"charged {estimator.privacy_.budget} to {dataset!r} in {ledger}",
                          markup=False)
        console.print("wrote " + ", ".join(str(p) for p in delivered["written"]), markup=False)


estimate = guard(estimate)


def _center_option(value: str) -> Any:
    center = parse_center(value)
    return center if isinstance(center, str) else [float(v) for v in center]


def result_record(method: str, estimator: Any) -> dict[str, Any]:
    """The ``result.json`` record of a fitted estimator run as ``method``
    (:func:`dpggm.estimators.result_record`)."""
    from dpggm.estimators import result_record as record_of

    return record_of(estimator, method=method)


def edge_list_csv(precision: Any, names: list[str], *, tol: float = 0.0) -> str:
    """Edges ``(i, j)`` with a non-zero partial correlation, strongest first, in the one
    edge format ``source,target,weight,partial_correlation`` (``weight`` is the partial
    correlation again: :data:`dpggm.estimators.edges.EDGE_COLUMNS`)."""
    import numpy as np

    from dpggm.estimators.graph import edges_csv_text, edges_from_precision

    return edges_csv_text(edges_from_precision(precision, names, adjacency=np.abs(precision) > tol))
