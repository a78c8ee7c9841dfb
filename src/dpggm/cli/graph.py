"""``dpggm graph``: the private graph of a CSV, with pictures and a report, in one command.

Released files (all in ``--out``): ``result.json`` (guarantee and parameters; no seed),
``edges.csv``, ``precision.npy``, the pictures ``graph``, ``precision`` and ``intervals``
(the edges' intervals, when the edges come with them) each as ``.png`` (300 dpi), ``.svg``
and ``.pdf``, and ``report.html``. ``--layout`` and ``--groups``/``--group-pattern``
choose where the graph's variables are drawn (:mod:`dpggm.cli.picture_options`).
They are delivered by ``PrivateGraph.save`` (:func:`dpggm.io.deliver`): written into a
staging directory beside ``--out``, charged to ``--ledger`` and renamed into place once,
so ``--out`` is either complete or absent.

Curator diagnostics -- how many rows were clipped, whether the graph is empty or complete,
what to try -- are computed from the private data. They are printed to standard error
only (never written into ``--out``): the curator reads them, nobody else.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from dpggm.cli import data_options as dopt
from dpggm.cli import picture_options as popt
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
    open_ledger,
    parse_center,
    parse_seed,
    progress_display,
    summarised_warnings,
)
from dpggm.cli.common import (
    feature_names as _names,
)
from dpggm.estimators.registry import GRAPH_METHODS
from dpggm.progress import report as report_progress

__all__ = ["curator_diagnostics", "graph", "graph_result_record", "inference_record",
           "stage_graph_outputs", "stage_graph_pictures"]

#: The interpreter's thread switch interval while a file is read (see _records).
GIL_SWITCH_SECONDS = 0.0005


def inference_record(estimator: Any) -> dict[str, Any] | None:
    """How a fitted ``PrivateGraph`` chose its edges and what its release can detect
    (:func:`dpggm.estimators.graph.inference_record`, imported when called)."""
    from dpggm.estimators.graph import inference_record as record_of

    return record_of(estimator)


def graph_result_record(estimator: Any, *, data_name: str, layout: str = "spring",
                        groups: dict[str, str] | None = None) -> dict[str, Any]:
    """The public record of a fitted ``PrivateGraph`` (no seed, nothing computed from the
    private data beyond the release): the library's record
    (:func:`dpggm.estimators.graph.graph_result_record`, the one ``PrivateGraph.save``
    writes, with its ``inference`` record) with the command and its title, and under
    ``picture`` the ``layout`` and the declared ``groups`` (``name -> group``) the pictures
    are drawn with, so that ``dpggm report`` redraws the same pictures."""
    from dpggm.estimators.graph import graph_result_record as library_record

    return {"command": "graph", "title": f"dpggm graph of {data_name}",
            **library_record(estimator), "picture": {"layout": layout, "groups": groups}}


def stage_graph_pictures(staged: Any, *, name: str) -> None:
    """Draw the pictures (each in PNG, SVG and PDF) and the report of the released files
    already in ``staged`` into it (``name``: the report's title)."""
    from dpggm.report import build_report
    from dpggm.report.html import picture_files

    for file_name, content in picture_files(staged.staging).items():
        if isinstance(content, str):
            staged.text(file_name, content)
        else:
            staged.bytes(file_name, content)
    staged.text("report.html", build_report(staged.staging, name=name))


def stage_graph_outputs(estimator: Any, staged: Any, *, data_name: str, name: str,
                        layout: str = "spring", groups: dict[str, str] | None = None) -> None:
    """Write every released file of a fitted ``PrivateGraph`` into ``staged``, as ``dpggm
    graph`` delivers them: those ``PrivateGraph.save`` writes (the same function) with the
    command's record (:func:`graph_result_record`), then the pictures and the report
    (:func:`stage_graph_pictures`)."""
    from dpggm.estimators.graph import stage_graph_release

    stage_graph_release(staged, estimator, graph_result_record(
        estimator, data_name=data_name, layout=layout, groups=groups))
    stage_graph_pictures(staged, name=name)


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
            why = (f"it is heavily tied ({100 * share:.0f}% of its values equal its center): "
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
                               "(imputed at its range's center): its edges rest on few records"))
    return sorted(out, key=lambda item: -item[0])


def curator_diagnostics(estimator: Any) -> list[str]:
    """Advice for the curator, computed from the private data: **never release it**.

    It states facts and what they mean; it advises only what measurements back, and it
    names at most :data:`MAX_COLUMN_LINES` columns (the most affected), with one summary
    line for the rest.
    """
    from dpggm.estimators.graph import predicted_partial_correlation_noise

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
                     f"{with_holes} of {p} columns, imputed at their column's range center")
    if n_edges == 0:
        noise = predicted_partial_correlation_noise(estimator.plan_)
        beyond = sum(counts.get("beyond_grid_by_column", {}).values())
        detectable = getattr(estimator, "detectable_", None)
        if beyond:
            lines.append("the graph is EMPTY: columns with values beyond the ranges' grid "
                         "(above) are the likely cause")
        elif detectable is not None:
            # The figure is public (the report states it too): the number that explains
            # the empty graph.
            words = _detectable_words(estimator)
            figures = getattr(estimator, "planned_inference_", None) or {}
            withheld = (" The selection was WITHHELD by a public figure of the plan ("
                        f"{figures.get('withheld_by') or 'no partial correlation reaches 50 % power'}"
                        "): there the false-discovery control is not reliable, so no edge is "
                        "reported; --select threshold draws an exploratory graph without "
                        "error control."
                        if getattr(estimator, "selection_withheld_", False) else "")
            lines.append(f"the graph is EMPTY: {words[0].lower()}{words[1:]}{withheld} A "
                         "larger budget, more records or fewer columns lower that threshold "
                         "(it falls like p / (n sqrt(rho)))")
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
                     "Check the bounds and centering (--center private).")
    return lines


def _detectable_words(estimator: Any) -> str:
    """The report's sentence on what the release can detect (public: from
    ``detectable_``)."""
    from dpggm.estimators.graph import DETECTABLE_POWER
    from dpggm.report import detectable_in_words

    private = estimator.privacy_.budget.to_dict().get("notion") != "non-private"
    return detectable_in_words(estimator.detectable_, private=private, power=DETECTABLE_POWER,
                               predicted=getattr(estimator, "detectable_predicted_", None))


# over 120 lines: 50 of them are the signature that declares the command's options.
@guard
def graph(
    data: Annotated[Path, typer.Argument(
        help="the table, one record per row: CSV (also .gz, .bz2, .xz, .zip, .zst), "
             "Parquet (a file or a folder), .xlsx/.xls/.ods, SPSS .sav, Stata .dta or SAS "
             ".sas7bdat (see --drop, --id-col, --scale, --schema, --delimiter, --decimal; "
             "with --engine dask: a glob or URL of CSV or Parquet files)")],
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
        help="what a missing value (an empty field) becomes: impute (the center of its "
             "column's private range; the guarantee is unchanged), refuse, or drop (refused "
             "under replace-one neighbours: it would make the row count private)")] = "impute",
    select: Annotated[str, typer.Option(
        help="how the edges are chosen (post-processing): fdr (false-discovery-rate "
             "control over every pair's q-value) or threshold (the graphical lasso's "
             "non-zero entries above a fixed |partial correlation|; no error "
             "control)")] = "fdr",
    fdr: Annotated[float, typer.Option(
        help="target false-discovery rate of --select fdr, in (0, 1)")] = 0.1,
    fdr_method: Annotated[str, typer.Option(
        help="bh (Benjamini-Hochberg) or by (Benjamini-Yekutieli, any dependence)")] = "bh",
    confidence_level: Annotated[float, typer.Option(
        help="level of the edges' intervals, in (0, 1)")] = 0.9,
    layout: popt.LayoutOpt = None,
    groups: popt.GroupsOpt = None,
    group_pattern: popt.GroupPatternOpt = None,
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
    drop: dopt.DropOpt = None,
    id_col: dopt.IdColOpt = None,
    scale: dopt.ScaleOpt = None,
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
                                index_col=index_col, encoding=encoding, drop=drop,
                                id_col=id_col, scale=scale, schema=schema,
                                na_values=na_values, thousands=thousands, sheet=sheet,
                                format=file_format, header=header)
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
    _check_selection(select, fdr, fdr_method, confidence_level)
    if missing not in ("impute", "refuse", "drop"):
        raise UserError(f"--missing must be impute, refuse or drop; got {missing!r}")
    pictures = popt.picture_options(layout, groups, group_pattern)
    random_state = parse_seed(seed)
    center_value = parse_center(center)
    fraction = _parse_fraction(bound_fraction, "--bound-fraction")

    def make_estimator(ranges: dict[str, Any] | None = None) -> Any:
        from dpggm.estimators.graph import PrivateGraph

        declared = {"column_ranges": ranges} if ranges else {}
        return PrivateGraph(
            budget=budget, bounds=bound, center=center_value, method=method,
            bound_fraction=fraction, center_fraction=center_fraction, missing=missing,
            select=select, fdr=fdr, fdr_method=fdr_method, confidence_level=confidence_level,
            random_state=random_state, **declared,
        )

    # Every parameter is checked by the estimator (--missing drop is refused there), and the
    # ledger asked, before the data file is even opened (the estimator's own check: every
    # budget form the release will hold, its validity, what remains).
    make_estimator().check_params()
    book = None
    if ledger is not None:
        book = open_ledger(ledger, dataset)
        make_estimator().check_ledger(book, dataset)
    # Declared ranges (--scale, --schema) by column: from the header only (public).
    ranges = dopt.declared_ranges(data, reading)
    if ranges and bound != "auto":
        raise UserError("--scale and the bounds of --schema declare columns' ranges for "
                        f"--bound auto; with --bound {bound} the bound is declared already "
                        "(drop one of them)")
    fitting = "private graph (bounds, centering, noise, solver)"

    def record(fitted: Any) -> dict[str, Any]:
        # The fit is done: its pictures are drawn next, with the groups it was declared.
        report_progress(fitting, 1, 1)
        report_progress("pictures and report", 0, None)
        declared = popt.groups_for(
            pictures, _names(fitted),
            note=lambda line: err_console.print(line, markup=False, soft_wrap=True))
        drawn_as = pictures.layout or "spring"
        if drawn_as == "groups" and declared is None:
            drawn_as = "spring"
        return graph_result_record(fitted, data_name=data.name, layout=drawn_as,
                                   groups=declared)

    with progress_display(quiet=quiet), _records(data, reading, scratch, missing,
                                                 progress=not (as_json or quiet)) as records:
        # A file is being parsed (in the background) while the estimator, the solvers and
        # the plotting modules are imported.
        estimator = make_estimator(ranges)
        with summarised_warnings():
            report_progress(fitting, 0, None)
            delivered = estimator.save(
                out, X=records, ledger=book, dataset=dataset, overwrite=overwrite,
                record=record, extra=lambda staged: stage_graph_pictures(staged, name=out.name),
                mechanism="dpggm graph", details={"data": str(data)},
                report=lambda line: err_console.print(line, markup=False, highlight=False))
    for line in curator_diagnostics(estimator):
        err_console.print(f"curator only (do not publish): {line}", markup=False)
    if getattr(estimator, "detectable_", None) is not None and estimator.adjacency_.any():
        # A public figure (the report states it too), one line however long; for an
        # empty graph the curator's line above states it.
        err_console.print(f"(public, also in the report) {_detectable_words(estimator)}",
                          markup=False, soft_wrap=True)
    if as_json:
        console.print_json((out / "result.json").read_text(encoding="utf-8"))
        return
    n_edges = int(estimator.adjacency_.sum() // 2)
    console.print(estimator.privacy_.summary(), markup=False)
    console.print(f"{n_edges} edges among {estimator.n_features_in_} variables; validity "
                  f"{estimator.privacy_.validity}", markup=False)
    console.print("wrote " + ", ".join(str(p) for p in delivered["written"]), markup=False)


@contextlib.contextmanager
def _records(data: Path, reading: Any, scratch: Path | None, missing: str, *,
             progress: bool) -> Iterator[Any]:
    """What the fit reads. With ``--engine memory``: the file (a ``TableFile``), whose
    parsing starts now, in the background (the records are closed, and their temporary
    file deleted, on the way out). With Dask: the DataFrame on its cluster
    (:func:`dpggm.cli.data_options.open_data`; ``progress``: Dask's bar)."""
    if reading.engine != "memory":
        with dopt.open_data(data, reading, progress=progress) as frame:
            yield frame
        return
    from dataclasses import replace

    from dpggm.data.records import reading_ahead

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
    if not data.exists():
        raise UserError(f"no such file: {data}")
    if data.is_dir():
        from dpggm.data.formats import parquet_parts

        parquet_parts(data)  # a folder of Parquet files is one table; any other is refused


def _check_selection(select: str, fdr: float, fdr_method: str,
                     confidence_level: float) -> None:
    """The edge-selection options, checked before the data are opened."""
    if select not in ("fdr", "threshold"):
        raise UserError(f"--select must be fdr or threshold; got {select!r}")
    if fdr_method not in ("bh", "by"):
        raise UserError(f"--fdr-method must be bh or by; got {fdr_method!r}")
    for option, value in (("--fdr", fdr), ("--confidence-level", confidence_level)):
        if not (math.isfinite(value) and 0 < value < 1):
            raise UserError(f"{option} must be in (0, 1); got {value!r}")


def _parse_fraction(text: str, option: str) -> Any:
    if text == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise UserError(f"{option} must be a number in (0, 1) or auto; got {text!r}") from None
