"""``dpggm graph``: the private graph of a CSV, with pictures and a report, in one command.

Released files (all in ``--out``): ``result.json`` (guarantee and parameters; no seed),
``edges.csv``, ``precision.npy``, ``graph.png``, ``precision.png`` and ``report.html``.
They are written into a staging directory beside ``--out`` and renamed into place once
(see :mod:`dpggm.cli.output`), so ``--out`` is either complete or absent.

Curator diagnostics -- how many rows were clipped, whether the graph is empty or complete,
what to try -- are computed from the private data. They are printed to standard error
only (never written into ``--out``): the curator reads them, nobody else.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from dpggm import _progress
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
    parse_center,
    parse_seed,
    progress_display,
    summarised_warnings,
)
from dpggm.cli._common import (
    feature_names as _names,
)

__all__ = ["curator_diagnostics", "graph", "graph_result_record", "stage_graph_outputs"]

#: The interpreter's thread switch interval while a file is read (see _reading_ahead).
GIL_SWITCH_SECONDS = 0.0005

#: Kept in sync with dpggm.estimators.graph.GRAPH_METHODS (not imported: start-up speed).
GRAPH_METHODS = ("glasso", "pace")


def graph_result_record(estimator: Any, *, data_name: str) -> dict[str, Any]:
    """The public record of a fitted ``PrivateGraph`` (no seed, nothing computed from the
    private data beyond the release)."""
    privacy = estimator.privacy_.to_dict()
    params = {k: v for k, v in estimator.get_params().items()
              if k not in ("random_state", "budget") and isinstance(v, (int, float, str, bool))}
    params["budget"] = estimator.budget.to_dict()
    p = estimator.n_features_in_
    n_edges = int(estimator.adjacency_.sum() // 2)
    diagnostics: dict[str, Any] = {
        "edges": f"{n_edges} of {p * (p - 1) // 2} possible",
    }
    if estimator.bound_fraction_ is not None:
        diagnostics["share of the budget for the bounds"] = str(estimator.bound_fraction_)
    if estimator.alpha_ is not None:
        diagnostics["graphical-lasso penalty (rescaled data)"] = float(estimator.alpha_)
        diagnostics["solver converged"] = bool(estimator.solver_.converged)
        diagnostics["release repaired to positive definite"] = bool(estimator.repaired_)
    return {
        "command": "graph",
        "title": f"dpggm graph of {data_name}",
        "method": estimator.method,
        "n_samples": int(estimator.n_samples_),
        "n_features": int(p),
        "features": _names(estimator),
        "n_edges": n_edges,
        "privacy": privacy,
        "parameters": params,
        "diagnostics": diagnostics,
    }


def stage_graph_outputs(estimator: Any, staged: Any, *, data_name: str, name: str) -> None:
    """Write every released file of a fitted ``PrivateGraph`` into ``staged``."""
    from dpggm.estimators.graph import edges_csv_text
    from dpggm.report import build_report, draw_graph, precision_heatmap

    record = graph_result_record(estimator, data_name=data_name)
    names = _names(estimator)
    staged.json("result.json", record)
    staged.text("edges.csv", edges_csv_text(estimator.edges_))
    if estimator.precision_ is not None:
        staged.npy("precision.npy", estimator.precision_)
        staged.bytes("precision.png", precision_heatmap(estimator.precision_, names))
    staged.bytes("graph.png", draw_graph(estimator.edges_, names, title=record["title"]))
    staged.text("report.html", build_report(staged.staging, name=name))


#: Column lines the curator advice prints at most; the rest are summarised in one line.
MAX_COLUMN_LINES = 10


def _column_advice(estimator: Any) -> list[tuple[int, str]]:
    """(severity, line) for the columns worth a word, computed from the private data."""
    n = estimator.n_samples_
    counts = estimator.clipping_
    beyond = counts.get("beyond_grid_by_column", {})
    tied = counts.get("tied_share_by_column", {})
    out: list[tuple[int, str]] = []
    for name, k in counts["outside_by_column"].items():
        far = beyond.get(name, 0)
        if far:
            out.append((3 * n + far, (
                f"column {name!r}: {far} values of magnitude 2^40 (1.1e12) or more, beyond the "
                "grid the private ranges are chosen from, so its range is unreliable: change "
                "its units (divide it by a power of ten) before the release")))
        elif k > 0.05 * n:
            share = tied.get(name, 0.0)
            why = (f"it is heavily tied ({100 * share:.0f}% of its values equal its centre): "
                   "the private median or spread of a column with few levels can land on a "
                   "neighbouring level at this budget; a larger budget helps, or declared "
                   "bounds if its levels are public" if share >= 0.2 else
                   "a long tail: values beyond the range are set to its edge, so the graph "
                   "describes the clipped column")
            out.append((2 * n + k, f"column {name!r}: {k} values ({100 * k / n:.1f}%) outside "
                                   f"its range; {why}"))
    for name, k in counts.get("missing_by_column", {}).items():
        if k > 0.5 * n:
            out.append((n + k, f"column {name!r}: {100 * k / n:.0f}% of its values are missing "
                               "(imputed at its range's centre): its edges rest on few records"))
    return sorted(out, key=lambda item: -item[0])


def curator_diagnostics(estimator: Any) -> list[str]:
    """Advice for the curator, computed from the private data: **never release it**.

    It states facts and what they mean; it advises only what measurements back, and it
    names at most :data:`MAX_COLUMN_LINES` columns (the most affected), with one summary
    line for the rest.
    """
    from dpggm.estimators._graph_pipeline import predicted_partial_correlation_noise

    n, p = estimator.n_samples_, estimator.n_features_in_
    n_edges = int(estimator.adjacency_.sum() // 2)
    counts = estimator.clipping_
    lines = [f"rows changed by clipping: {counts['changed']} of {n} "
             f"({100 * counts['changed'] / n:.1f}%)"]
    outside = counts["outside_ranges"] / n
    if estimator.ranges_ is None:
        if outside > 0.5:
            lines.append("most rows were clipped: the graph describes the clipped data; try "
                         "--bound auto (or a larger declared bound)")
        elif outside == 0:
            lines.append("no row was clipped: a smaller declared bound would mean less noise")
    else:
        lines.append(f"  {counts['outside_ranges']} with a value outside its column's private "
                     "range (median +- 5 spreads)")
        if counts["over_norm_bound"]:
            lines.append(f"  {counts['over_norm_bound']} shrunk onto the private row-norm "
                         "bound (about half by design: less noise for a smaller scale; "
                         "partial correlations are little affected)")
    advice = _column_advice(estimator)
    lines.extend("  " + line for _, line in advice[:MAX_COLUMN_LINES])
    if len(advice) > MAX_COLUMN_LINES:
        lines.append(f"  ... and {len(advice) - MAX_COLUMN_LINES} more columns like these "
                     "(PrivateGraph.clipping_ has every count)")
    missing = counts.get("missing_by_column", {})
    holes = sum(missing.values())
    if holes:
        with_holes = sum(1 for k in missing.values() if k)
        lines.append(f"missing values: {holes} of {n * p} ({100 * holes / (n * p):.1f}%) in "
                     f"{with_holes} of {p} columns, imputed at their column's range centre")
    if n_edges == 0:
        noise = predicted_partial_correlation_noise(estimator.plan_)
        beyond = sum(counts.get("beyond_grid_by_column", {}).values())
        if beyond:
            lines.append("the graph is EMPTY: columns with values beyond the ranges' grid "
                         "(above) are the likely cause")
        elif noise is not None:
            lines.append(
                f"the graph is EMPTY: at this budget and size the privacy noise on one partial "
                f"correlation has a standard deviation of about {noise:.2g}, so partial "
                f"correlations weaker than about {min(1.0, 3 * noise):.2g} cannot be told from "
                "it; a larger budget, more records or fewer columns lower it (it falls like "
                "p / (n sqrt(rho)))")
        else:
            lines.append("the graph is EMPTY: no partial correlation stood out from the noise "
                         "at this budget")
    elif n_edges == p * (p - 1) // 2:
        lines.append("the graph is COMPLETE: every pair is joined, which is rarely real. "
                     "Check the bounds and centring (--center private).")
    return lines


@guard
def graph(
    data: Annotated[Path, typer.Argument(
        help="CSV or Parquet file, one record per row (see --delimiter, --decimal, "
             "--no-header, --index-col, --encoding, --columns; with --engine dask: a glob "
             "or URL)")],
    rho: RhoOpt = None,
    epsilon: EpsilonOpt = None,
    delta: DeltaOpt = None,
    mu: MuOpt = None,
    non_private: Annotated[bool, typer.Option(
        "--non-private", help="exact reference run (no privacy; never booked)")] = False,
    bound: Annotated[str, typer.Option(
        help="auto (private per-column ranges), l2:B or box:B")] = "auto",
    center: Annotated[str, typer.Option(
        help="private, none, or a CSV file of a public mean")] = "private",
    method: Annotated[str, typer.Option(help=f"one of: {', '.join(GRAPH_METHODS)}")] = "glasso",
    bound_fraction: Annotated[str, typer.Option(
        help="share of the budget for --bound auto: a number in (0, 1), or auto (from the "
             "numbers of rows and columns)")] = "auto",
    center_fraction: Annotated[float, typer.Option(
        help="share of the budget for --center private")] = 0.0625,
    missing: Annotated[str, typer.Option(
        help="what a missing value (an empty field) becomes: impute (the centre of its "
             "column's private range; the guarantee is unchanged), refuse, or drop (refused "
             "under replace-one neighbours: it would make the row count private)")] = "impute",
    out: Annotated[Path, typer.Option(help="output directory")] = Path("dpggm-graph"),
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing --out")] = False,
    ledger: Annotated[Path | None, typer.Option(help="budget ledger file to spend from")] = None,
    dataset: Annotated[str | None, typer.Option(help="dataset name in the ledger")] = None,
    seed: Annotated[str | None, typer.Option(
        help="'secure' (a release) or an integer (an experiment, never booked)")] = "secure",
    as_json: Annotated[bool, typer.Option("--json", help="print result.json")] = False,
    quiet: QuietOpt = False,
    columns: dopt.ColumnsOpt = None,
    delimiter: dopt.DelimiterOpt = ",",
    decimal: dopt.DecimalOpt = ".",
    no_header: dopt.NoHeaderOpt = False,
    index_col: dopt.IndexColOpt = None,
    encoding: dopt.EncodingOpt = "utf-8",
    engine: dopt.EngineOpt = "memory",
    scheduler: dopt.SchedulerOpt = None,
    scratch: Annotated[Path | None, typer.Option(
        help="directory for the temporary file of parsed records (8 bytes per value, "
             "deleted at the end) when they exceed 64 MB; default: the system's temporary "
             "directory (TMPDIR)")] = None,
) -> None:
    """The private conditional-dependence graph of DATA, with pictures and a report."""
    # Every option and the input are checked before the estimator, the solvers and the
    # plotting modules are imported: a mistyped path or option is answered at once.
    reading = dopt.data_options(engine=engine, scheduler=scheduler, columns=columns,
                                delimiter=delimiter, decimal=decimal, no_header=no_header,
                                index_col=index_col, encoding=encoding)
    _check_input(data, engine)
    if scratch is not None:
        if engine != "memory":
            raise UserError("--scratch is for --engine memory (Dask workers keep nothing)")
        if not scratch.is_dir():
            raise UserError(f"--scratch must be an existing directory; got {scratch}")
    budget = budget_from_options(epsilon, delta, rho, mu, non_private)
    if (ledger is None) != (dataset is None):
        raise UserError("--ledger and --dataset go together")
    if non_private and ledger is not None:
        raise UserError("a non-private run cannot be recorded against a privacy ledger; "
                        "drop --ledger or give a budget")
    if method not in GRAPH_METHODS:
        raise UserError(f"--method must be one of {', '.join(GRAPH_METHODS)}; got {method!r}")
    if missing not in ("impute", "refuse", "drop"):
        raise UserError(f"--missing must be impute, refuse or drop; got {missing!r}")
    if missing == "drop":
        raise UserError(
            "--missing drop is refused: dropping incomplete rows makes the number of records "
            "depend on the private data, which replace-one neighbours (the relation of dpggm "
            "graph) take as public; use --missing impute (the default) or refuse")
    random_state = parse_seed(seed)
    center_value = parse_center(center)
    fraction = _parse_fraction(bound_fraction, "--bound-fraction")
    # The ledger is asked before the data file is even opened.
    book = None
    if ledger is not None:
        book = _precheck_ledger(ledger, dataset, budget=budget, method=method,
                                random_state=random_state)
    with progress_display(quiet=quiet), _reading_ahead(data, reading, scratch,
                                                       missing) as source:
        # The file is being parsed (in the background) while the estimator, the solvers
        # and the plotting modules are imported.
        from dpggm.cli.output import StagedOutput, recover_pending
        from dpggm.estimators.graph import PrivateGraph

        estimator = PrivateGraph(
            budget=budget, bounds=bound, center=center_value, method=method,
            bound_fraction=fraction, center_fraction=center_fraction, missing=missing,
            random_state=random_state,
        )
        recover_pending(Path(out).parent if str(out.parent) else Path("."),
                        report=lambda line: err_console.print(line, markup=False,
                                                              highlight=False))
        pending = ({"ledger": str(Path(ledger).resolve()), "dataset": dataset}
                   if ledger is not None else {})
        staged = StagedOutput(out, overwrite=overwrite, pending=pending)
        try:
            with summarised_warnings():
                fitting = "private graph (bounds, centring, noise, solver)"
                _progress.report(fitting, 0, None)
                if source is not None:
                    estimator.fit(source)
                else:
                    dopt.fit_records(estimator, data, reading, progress=not (as_json or quiet))
                _progress.report(fitting, 1, 1)
                _progress.report("pictures and report", 0, None)
                stage_graph_outputs(estimator, staged, data_name=data.name, name=out.name)
            if book is not None:
                spend = book.spend(
                    dataset, estimator.privacy_, mechanism="dpggm graph",
                    details={"data": str(data), "out": str(out),
                             "output_id": staged.output_id},
                )
                staged.json("ledger.json", {"ledger": pending["ledger"], "dataset": dataset,
                                            "spend": spend.sequence,
                                            "output_id": staged.output_id})
        except BaseException:
            staged.discard()
            raise
        staged.commit()
    for line in curator_diagnostics(estimator):
        err_console.print(f"curator only (do not publish): {line}", markup=False)
    if as_json:
        console.print_json((out / "result.json").read_text(encoding="utf-8"))
        return
    n_edges = int(estimator.adjacency_.sum() // 2)
    console.print(estimator.privacy_.summary(), markup=False)
    console.print(f"{n_edges} edges among {estimator.n_features_in_} variables; validity "
                  f"{estimator.privacy_.validity}", markup=False)
    console.print("wrote " + ", ".join(str(p) for p in staged.written), markup=False)


@contextlib.contextmanager
def _reading_ahead(data: Path, reading: Any, scratch: Path | None,
                   missing: str) -> Iterator[Any]:
    """With ``--engine memory``: the file to fit (a ``TableFile``), whose parsing starts
    now, in the background (the records are closed, and their temporary file deleted, on
    the way out); with Dask: None (the cluster reads the data)."""
    if reading.engine != "memory":
        yield None
        return
    from dataclasses import replace

    from dpggm.estimators._passes import reading_ahead

    source = dopt.table_file(data, reading)
    if scratch is not None:
        source = replace(source, scratch=str(scratch))
    # The parser's and the passes' threads take the GIL back briefly at every block,
    # while the main thread imports (pure Python): with the default 5 ms switch interval
    # each block would wait that long for it. Measured: the first pass ends about 1 s
    # earlier on the 2 000 000 x 20 file.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    try:
        with reading_ahead(source, missing=missing):
            yield source
    finally:
        sys.setswitchinterval(interval)


def _check_input(data: Path, engine: str) -> None:
    """The records must exist: a file on this machine, or with ``--engine dask`` a file, a
    glob matching at least one file, or a URL (checked by the cluster's reader)."""
    if engine == "dask":
        import glob
        import re

        text = str(data)
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:/", text):
            return
        if glob.has_magic(text):
            if not glob.glob(text):
                raise UserError(f"no file matches {text!r}")
            return
    if data.is_dir():
        raise UserError(f"{data} is a directory; give the CSV or Parquet file of records, or "
                        f"with --engine dask a glob of its parts such as '{data}/*.parquet'")
    if not data.exists():
        raise UserError(f"no such file: {data}")


def _parse_fraction(text: str, option: str) -> Any:
    if text == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise UserError(f"{option} must be a number in (0, 1) or auto; got {text!r}") from None


def _precheck_ledger(ledger: Path, dataset: str, *, budget: Any, method: str,
                     random_state: Any) -> Any:
    """Refuse, before the data are opened, a run the ledger could not book: every form
    the release will hold (the requested budget where it follows, and the budget it is
    run in) is tried against the dataset's notion and relation."""
    from dpggm.estimators._graph_pipeline import accounting_budget
    from dpggm.exceptions import IncompatibleBudgetError
    from dpggm.mechanisms.plan import guarantee_forms
    from dpggm.privacy.ledger import Ledger

    if random_state != "secure":
        raise UserError(
            "a seeded run is an experiment, not a release (whoever holds the seed can "
            "regenerate the noise), so it is never booked against a ledger; drop --seed or "
            "--ledger")
    if not ledger.exists():
        raise UserError(f"no ledger at {ledger}; create it with `dpggm budget init {ledger} "
                        f"--dataset {dataset} ...` (a mistyped path never creates one)")
    book = Ledger(ledger, create=False)
    forms = list(guarantee_forms(budget, accounting_budget(budget, method)).values())
    first_error: Exception | None = None
    for form in forms:
        try:
            book.check(dataset, form, neighbors="replace")
            return book
        except IncompatibleBudgetError as exc:
            first_error = first_error or exc
    raise IncompatibleBudgetError(
        f"the ledger cannot book this release: it would hold {', '.join(map(str, forms))}, "
        f"none of which its total's notion accepts ({first_error})")
