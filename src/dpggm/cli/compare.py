"""``dpggm compare``: is the network of one group different from another's? One private
release per declared group (:class:`~dpggm.estimators.comparison.PrivateGraphComparison`),
the differences of their partial correlations with intervals and q-values, a global test,
centrality, pictures and a report, in one command.

Released files (all in ``--out``, delivered by ``PrivateGraphComparison.save`` whole or
not at all and charged to ``--ledger`` before they appear, as ``dpggm graph``'s): ``result.json``,
``differences.csv`` (``source,target,difference,ci_low,ci_high,p_value,q_value,selected``),
``centrality.csv``, ``centrality_differences.csv``, each group's ``edges_<level>.csv``, the
pictures (``difference_graph``, ``difference_intervals``, ``graph_1``, ``graph_2``,
``centrality``; PNG, SVG, PDF) and ``report.html``.

The levels of the grouping column are declared (``--levels``): which values a column
holds is a fact about the records, so they are never read off the data.
"""

from __future__ import annotations

import math
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
    open_ledger,
    parse_seed,
    summarised_warnings,
)

__all__ = ["compare", "parse_levels", "parse_sizes", "plan_comparison"]


def parse_levels(text: str | None) -> tuple[str, str]:
    """``"a,b"`` -> ``("a", "b")``: the two declared levels."""
    if text is None:
        raise UserError(
            "--levels is needed: declare the two groups to compare, e.g. --levels "
            "patients,controls (public; never read off the data, since which values a column "
            "holds is a fact about the records)")
    levels = [part.strip() for part in text.split(",")]
    if len(levels) != 2 or not all(levels) or levels[0] == levels[1]:
        raise UserError(f"--levels must be two different labels separated by a comma, e.g. "
                        f"patients,controls; got {text!r}")
    return levels[0], levels[1]


def parse_sizes(text: str | None, levels: tuple[str, str]) -> dict[str, int] | None:
    """``"a=120,b=80"`` -> ``{"a": 120, "b": 80}`` (declared, public group sizes)."""
    if text is None:
        return None
    sizes: dict[str, int] = {}
    for part in text.split(","):
        level, _, size = part.partition("=")
        level = level.strip()
        try:
            value = int(size)
        except ValueError:
            value = -1
        if level not in levels or value < 0:
            raise UserError(f"--group-sizes must be LEVEL=N for each of {', '.join(levels)}, "
                            f"e.g. {levels[0]}=120,{levels[1]}=80; got {text!r}")
        sizes[level] = value
    return sizes


@guard
def compare(
    data: Annotated[Path, typer.Argument(
        help="the table, one record per row, with a column of each record's group (CSV and "
             "the formats of dpggm graph)")],
    group: Annotated[str, typer.Option(help="the column that holds each record's group")],
    levels: Annotated[str | None, typer.Option(
        help="the two groups to compare, first,second (public; the differences are the "
             "first minus the second; records of other values are in no release)")] = None,
    rho: RhoOpt = None,
    epsilon: EpsilonOpt = None,
    delta: DeltaOpt = None,
    mu: MuOpt = None,
    neighbors: Annotated[str, typer.Option(
        help="replace (the number of records public, the groups' sizes private) or "
             "add-remove")] = "replace",
    group_sizes: Annotated[str | None, typer.Option(
        help="declared (public) sizes, LEVEL=N,LEVEL=N: a trial with fixed arms (then "
             "moving a record between groups is no neighbour)")] = None,
    missing: Annotated[str, typer.Option(
        help="what a missing value becomes: impute (the center of its column's private "
             "range) or refuse")] = "impute",
    fdr: Annotated[float, typer.Option(
        help="target false-discovery rate of the edges and the differences")] = 0.1,
    fdr_method: Annotated[str, typer.Option(help="bh or by")] = "bh",
    confidence_level: Annotated[float, typer.Option(
        help="level of the intervals, in (0, 1)")] = 0.9,
    centrality_support: Annotated[str, typer.Option(
        help="which pairs a node's centrality sums over: familywise (those Holm's procedure "
             "selects at family-wise error 1 - confidence level), selected (the "
             "false-discovery selection) or all")] = "familywise",
    out: Annotated[Path, typer.Option(help="output directory")] = Path("dpggm-compare"),
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
    na_values: dopt.NaValuesOpt = None,
    encoding: dopt.EncodingOpt = "utf-8",
    sheet: dopt.SheetOpt = None,
    file_format: dopt.FormatOpt = None,
) -> None:
    """Compare the networks of two groups of DATA privately: differences, tests,
    centrality, pictures and a report."""
    reading = dopt.data_options(columns=columns, delimiter=delimiter, decimal=decimal,
                                encoding=encoding, drop=drop, id_col=id_col, scale=scale,
                                schema=schema, na_values=na_values, sheet=sheet,
                                format=file_format)
    if not data.exists():
        raise UserError(f"no such file: {data}")
    declared_levels = parse_levels(levels)
    sizes = parse_sizes(group_sizes, declared_levels)
    budget = budget_from_options(epsilon, delta, rho, mu, False)
    if (ledger is None) != (dataset is None):
        raise UserError("--ledger and --dataset go together")
    random_state = parse_seed(seed)

    def make_estimator(ranges: dict[str, Any] | None = None) -> Any:
        from dpggm.estimators.comparison import PrivateGraphComparison

        declared = {"column_ranges": ranges} if ranges else {}
        return PrivateGraphComparison(
            budget=budget, levels=declared_levels, group=group, group_sizes=sizes,
            neighbors=neighbors, missing=missing, fdr=fdr, fdr_method=fdr_method,
            confidence_level=confidence_level, centrality_support=centrality_support,
            random_state=random_state, **declared)

    # Every option is checked (and the ledger asked) before the data file is opened.
    make_estimator().release_forms()
    book = None
    if ledger is not None:
        book = open_ledger(ledger, dataset)
        make_estimator().check_ledger(book, dataset)
    ranges = dopt.declared_ranges(data, reading)
    estimator = make_estimator(ranges)
    with summarised_warnings():
        estimator.save(out, X=dopt.table_file(data, reading), ledger=book, dataset=dataset,
                       overwrite=overwrite, extra=lambda staged: _stage_pictures(staged, out.name),
                       mechanism="dpggm compare", details={"data": str(data)},
                       report=lambda line: err_console.print(line, markup=False,
                                                             highlight=False))
    if as_json:
        console.print_json((out / "result.json").read_text(encoding="utf-8"))
        return
    if not quiet:
        outside = getattr(estimator, "n_outside_levels_", 0)
        if outside:
            err_console.print(f"curator only (do not publish): {outside} records hold "
                              f"neither level of {group!r} and are in no release",
                              markup=False)
        n_selected = int(estimator.difference_inference_.selected.sum())
        console.print(estimator.privacy_.summary(), markup=False)
        console.print(f"{n_selected} of {len(estimator.differences_)} pairs differ between "
                      f"{declared_levels[0]} and {declared_levels[1]}; validity "
                      f"{estimator.privacy_.validity}", markup=False)
        console.print(f"wrote {len(list(out.iterdir()))} files into {out}", markup=False)


def _stage_pictures(staged: Any, name: str) -> None:
    """Draw the comparison's pictures and its report, from the released files already in
    ``staged``, into it."""
    from dpggm.report.comparison import comparison_files

    for file_name, content in comparison_files(staged.staging, name=name).items():
        if isinstance(content, str):
            staged.text(file_name, content)
        else:
            staged.bytes(file_name, content)


def plan_comparison(*, columns: int, rows: int | None, groups: int, detect: float | None,
                    epsilon: Any, delta: Any, rho: Any, mu: Any, neighbors: str, fdr: float,
                    as_json: bool) -> None:
    """``dpggm plan --groups 2``: what a ``dpggm compare`` run can detect, from public
    figures only. With ``--rows`` (the records, split equally between the groups) and a
    budget: each group's plan, the spend by neighbouring case, and the smallest difference
    of a pair's partial correlation found with 80 % power (and whether ``--detect`` is);
    with ``--detect`` and ``--rows`` but no budget: the zCDP rho that detects it; with
    ``--detect`` and a budget but no ``--rows``: the records needed."""
    import json

    from dpggm.estimators.comparison import PrivateGraphComparison
    from dpggm.privacy.budgets import ZCDP

    if groups != 2:
        raise UserError(f"--groups: a comparison is between two groups; got {groups}")
    if detect is not None and not (math.isfinite(detect) and 0 < detect < 1):
        raise UserError(f"--detect must be a difference of partial correlations in (0, 1); "
                        f"got {detect!r}")
    budget_given = any(v is not None for v in (epsilon, rho, mu))
    if rows is None and not (budget_given and detect is not None):
        raise UserError("--groups 2 needs --rows (and a budget, or --detect to find the "
                        "budget), or --detect with a budget to find the rows")
    budget = budget_from_options(epsilon, delta, rho, mu) if budget_given else ZCDP(1.0)

    def estimator(total: Any) -> Any:
        return PrivateGraphComparison(budget=total, levels=("group 1", "group 2"),
                                      neighbors=neighbors, fdr=fdr)

    conditions = (f"with 80 % power at FDR {fdr:g} (an edge present in one group only, "
                  "between variables without other neighbours; roughly normal columns; the "
                  "records split equally between the groups)")
    record: dict[str, Any] = {"groups": 2, "n_features": columns, "neighbors": neighbors,
                              "fdr": fdr, "detect": detect}
    try:
        if rows is None:
            needed = estimator(budget).required_rows(difference=detect, n_features=columns)
            record.update(n_samples=needed, budget=budget.to_dict())
            lines = [f"to detect a difference of {detect:g} in a pair's partial correlation "
                     f"{conditions} with {columns} columns at {budget}: {needed} records "
                     f"({needed // 2} a group)"]
        elif not budget_given:
            if detect is None:
                raise UserError("--groups 2 with --rows needs a budget (--rho, ...) or "
                                "--detect")
            rho_needed = estimator(budget).required_budget(
                difference=detect, n_samples=rows, n_features=columns).rho
            record.update(n_samples=rows, rho=rho_needed)
            lines = [f"to detect a difference of {detect:g} {conditions} in {rows} records "
                     f"of {columns} columns: zCDP rho = {rho_needed:.4g}"]
            if delta is not None:
                eps = ZCDP(rho_needed).to_approx(delta).epsilon
                record.update(epsilon=eps, delta=delta)
                lines[0] += f", or (epsilon, delta) = ({eps:.4g}, {delta:g})"
        else:
            planned = estimator(budget).plan(n_samples=rows, n_features=columns)
            record.update(planned.to_dict())
            value = planned.detectable_difference
            finite = value is not None and math.isfinite(value)
            sizes = ", ".join(f"{n}" for n in planned.sizes.values())
            lines = [f"two groups of {sizes} records (assumed; private, released as noisy "
                     f"counts), {columns} columns, {neighbors} neighbours, {budget}",
                     "each group's release: " + str(planned.group_budget) + " under "
                     + planned.spend.group_relation + " neighbours"]
            lines += [f"  {case}: {cost}" for case, cost in planned.spend.cases.items()]
            lines.append(f"booked: {planned.spend.total}")
            lines.append(f"smallest detectable difference {conditions}: "
                         + (f"{value:.3g}" if finite else "none up to 0.99"))
            if detect is not None:
                lines.append(f"a difference of {detect:g} is "
                             + ("detectable" if finite and value <= detect else
                                "NOT detectable at this budget and size"))
    except ValueError as exc:
        raise UserError(f"--groups: {exc}") from None
    if as_json:
        console.print_json(json.dumps(record, default=str))
        return
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)
