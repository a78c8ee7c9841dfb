"""``dpggm plan``: what a release will spend and how much noise it will add, before any data
are read.

It builds the estimator a run would build -- ``dpggm graph``'s
:class:`~dpggm.estimators.graph.PrivateGraph`, or the method of ``dpggm estimate`` from the
registry -- and asks it for its plan (``estimator.plan``): every step's mechanism, budget,
sensitivity and noise, and the total in every budget form -- from the numbers of rows and
columns, the budget and the bound, all public. The same figures are recorded in
``result.json`` (``privacy.notes.plan``, ``privacy.noise.breakdown``) by the run itself.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

import typer

from dpggm.cli.common import (
    DeltaOpt,
    EpsilonOpt,
    MuOpt,
    RhoOpt,
    UserError,
    budget_from_options,
    console,
    guard,
)

__all__ = ["detectable_line", "detectable_record", "plan", "plan_table"]

#: The power at which the detectable |partial correlation| is stated.
DETECTABLE_POWER = 0.8


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _budget_text(budget: dict[str, Any], *, separator: str = " ") -> str:
    """``zCDP ρ = 0.5``; with ``separator="\n"`` one figure a line (a table cell)."""
    fields = [f"{_SYMBOLS.get(k, k)} = {_number(v)}" for k, v in budget.items()
              if k != "notion"]
    notion = _NOTIONS.get(budget.get("notion"), str(budget.get("notion")))
    return separator.join([notion] + fields) if separator == "\n" else (
        f"{notion} {', '.join(fields)}")


#: Short names of the budget notions and parameters, for a narrow terminal.
_NOTIONS = {"zcdp": "zCDP", "approx-dp": "(ε, δ)-DP", "pure-dp": "ε-DP", "gdp": "μ-GDP",
            "non-private": "non-private"}
_SYMBOLS = {"rho": "ρ", "epsilon": "ε", "delta": "δ", "mu": "μ"}


def plan_table(record: dict[str, Any]) -> Any:
    """A Rich table of a plan's steps (``ReleasePlan.to_dict()``)."""
    from rich.table import Table

    rows = record["n_samples"] if record["n_samples"] is not None else "private"
    table = Table(title=f"{record['estimator']}: n = {rows}, "
                        f"p = {record['n_features']}, {record['neighbors']} neighbours")
    # Figures are folded onto several lines, never cut with an ellipsis: a budget or a
    # noise scale shown as "zcdp(rho=0.4453..." is no plan at all.
    for column in ("step", "mechanism", "runs", "budget", "sensitivity", "noise"):
        table.add_column(column, overflow="fold")
    for step in record["steps"]:
        sensitivity = (_number(step["sensitivity"]) if "sensitivity" in step
                       else step.get("sensitivity_rule", ""))
        # The sensitivity has its own column and the mechanism names the distribution.
        noise = "\n".join(f"{k.replace('_', ' ')} {_number(v)}"
                          for k, v in (step.get("noise") or {}).items()
                          if k != "distribution" and not k.endswith("sensitivity"))
        table.add_row(step["step"], step["mechanism"], str(step["repetitions"]),
                      _budget_text(step["budget"], separator="\n"), sensitivity, noise)
    return table


def detectable_record(estimator: Any, rows: int, columns: int) -> dict[str, Any]:
    """What a graph estimator's release would detect (``estimator.planned_inference``),
    for the plan's record: ``partial_correlation`` (``None`` when no edge up to 0.99 would be
    detected, or when there is no prediction), ``power``, ``nothing_detectable``, the
    figure for an edge whose variables the others predict with ``R**2`` 0.5
    (``predicted``), whether the selection would be withheld, the declared missing share;
    ``reason`` when there is no prediction. Public parameters only."""
    try:
        figures = estimator.planned_inference(n_samples=rows, n_features=columns)
    except ValueError:
        reason = ("PACE-GGM's edges carry no inference: its adaptive measurements have no "
                  "closed form" if estimator.method == "pace" else
                  "with declared bounds the records' spread within the bound is not known "
                  "before the data")
        return {"partial_correlation": None, "power": DETECTABLE_POWER, "reason": reason}

    def threshold(value: float) -> float | None:
        return float(value) if math.isfinite(value) else None

    value = figures["detectable"]
    record = {"partial_correlation": threshold(value), "power": DETECTABLE_POWER,
              "nothing_detectable": not math.isfinite(value),
              "predicted": {"r2": figures["predicted_r2"],
                            "partial_correlation": threshold(figures["detectable_predicted"])},
              "withheld": figures["withheld"],
              "missing_share": figures["missing_share"]}
    if not figures["calibrated"]:
        record["calibration_note"] = figures["calibration_note"]
    return record


def detectable_line(detectable: dict[str, Any], *, fdr: float) -> str:
    """The plan's sentences on the weakest edge the release would detect."""
    power = f"{100 * detectable['power']:.0f} %"
    if "reason" in detectable:
        return f"detectable |partial correlation|: not predicted ({detectable['reason']})"
    missing = detectable.get("missing_share") or 0.0
    assumption = (f"; {100 * missing:.3g} % of every column's values missing, imputed"
                  if missing else "")
    if detectable["nothing_detectable"]:
        line = (f"detectable |partial correlation|: none -- even 0.99 would be found less "
                f"than {power} of the time at FDR {fdr:g}{assumption}; a larger budget, more "
                "records or fewer columns are needed")
    else:
        line = (f"detectable |partial correlation| ({power} power at FDR {fdr:g}; normal "
                f"columns, sparse graph{assumption}): {detectable['partial_correlation']:.3g} "
                "-- weaker edges cannot be told from noise at this budget and size")
        predicted = (detectable.get("predicted") or {})
        if "r2" in predicted:
            value = predicted.get("partial_correlation")
            line += (f"; an edge whose variables the others predict with R^2 "
                     f"{predicted['r2']:g} needs "
                     + (f"{value:.3g}" if value is not None else "more than 0.99"))
    if detectable.get("withheld"):
        line += ("\nthe false-discovery selection would be withheld (no edge reported): no "
                 "partial correlation reaches even 50 % power at this budget and size")
    if detectable.get("calibration_note"):
        line += f"\nthe inference would not be calibrated: {detectable['calibration_note']}"
    return line


def _graph_estimator(budget: Any, *, bound: str, center: str, method: str,
                     bound_fraction: str, center_fraction: float, missing: str,
                     fdr: float, missing_share: float = 0.0,
                     declared_ranges: int = 0) -> Any:
    if center not in ("private", "none"):
        raise UserError(f"--center must be private or none; got {center!r}")
    if not (math.isfinite(fdr) and 0 < fdr < 1):
        raise UserError(f"--fdr must be in (0, 1); got {fdr!r}")
    if not (math.isfinite(missing_share) and 0 <= missing_share < 1):
        raise UserError(f"--missing-share must be in [0, 1); got {missing_share!r}")
    fraction: Any = bound_fraction
    if bound_fraction != "auto":
        try:
            fraction = float(bound_fraction)
        except ValueError:
            raise UserError(
                f"--bound-fraction must be a number in (0, 1) or auto; got {bound_fraction!r}"
            ) from None
    from dpggm.estimators.graph import PrivateGraph

    if declared_ranges < 0:
        raise UserError(f"--declared-ranges must be an integer >= 0; got {declared_ranges}")
    if declared_ranges and bound != "auto":
        raise UserError("--declared-ranges goes with --bound auto (a declared bound already "
                        f"bounds every column); got --bound {bound}")
    # The plan depends on how many ranges are declared, not on which or what they are:
    # placeholders at the first positions stand for them.
    column_ranges = {j: (0.0, 1.0) for j in range(declared_ranges)} or None
    return PrivateGraph(budget=budget, bounds=bound, center=center, method=method,
                        bound_fraction=fraction, center_fraction=center_fraction,
                        missing=missing, fdr=fdr, planned_missing_share=missing_share,
                        column_ranges=column_ranges)


def _estimate_estimator(budget: Any, *, method: str, bound: str, neighbors: str,
                        options: dict[str, Any]) -> Any:
    if bound == "auto":
        raise UserError("--bound: the methods of dpggm estimate take a declared bound, l2:B or "
                        "box:B (private ranges, --bound auto, are dpggm graph's)")
    from dpggm.estimators.registry import make_estimator

    return make_estimator(method, budget=budget, bounds=bound, neighbors=neighbors,
                          **{k: v for k, v in options.items() if v is not None})


@guard
def plan(
    columns: Annotated[int, typer.Option("--columns", help="number of columns p")],
    rows: Annotated[int | None, typer.Option(
        "--rows", help="number of records n (public); without it, --detect with a budget "
                       "prints the rows needed")] = None,
    rho: RhoOpt = None,
    epsilon: EpsilonOpt = None,
    delta: DeltaOpt = None,
    mu: MuOpt = None,
    method: Annotated[str, typer.Option(
        help="a method of dpggm graph (glasso, pace) or of dpggm estimate")] = "glasso",
    command: Annotated[str | None, typer.Option(
        help="graph or estimate: whose run to plan (default: graph for glasso and pace, "
             "estimate for the other methods)")] = None,
    bound: Annotated[str, typer.Option(
        help="auto (private per-column ranges; dpggm graph), l2:B or box:B")] = "auto",
    neighbors: Annotated[str, typer.Option(
        help="replace or add-remove (dpggm estimate)")] = "replace",
    center: Annotated[str | None, typer.Option(
        help="private or none (default: private for graph, none for estimate)")] = None,
    bound_fraction: Annotated[str, typer.Option(
        help="share of the budget for --bound auto, or auto")] = "auto",
    declared_ranges: Annotated[int, typer.Option(
        "--declared-ranges",
        help="with --bound auto: how many columns have a declared range (dpggm graph "
             "--scale/--schema); they get no private range and cost nothing")] = 0,
    center_fraction: Annotated[float, typer.Option(
        help="share of the budget for --center private (dpggm graph)")] = 0.0625,
    missing: Annotated[str, typer.Option(help="impute or refuse (dpggm graph)")] = "impute",
    fdr: Annotated[float, typer.Option(
        help="target false-discovery rate of the edge selection, for the detectable "
             "|partial correlation| (dpggm graph), in (0, 1)")] = 0.1,
    detect: Annotated[float | None, typer.Option(
        "--detect", help="plan in reverse (dpggm graph): the |partial correlation| to detect "
                         "with 80 % power; with --rows and no budget prints the zCDP rho "
                         "needed (and epsilon at --delta), with a budget and no --rows the "
                         "rows needed")] = None,
    missing_share: Annotated[float, typer.Option(
        "--missing-share", help="declared share of every column's values missing (a public "
                                "assumption, dpggm graph): the figures account for their "
                                "imputation, in [0, 1)")] = 0.0,
    diag_fraction: Annotated[float | None, typer.Option(
        help="PACE: share of the budget for the diagonal")] = None,
    select_fraction: Annotated[float | None, typer.Option(
        help="PACE: share of each round for selection")] = None,
    max_rounds: Annotated[int | None, typer.Option(help="PACE: the round budget divisor T")] = None,
    allow_invalid: Annotated[bool, typer.Option(
        "--allow-invalid", help="plan a method whose published guarantee is invalid")] = False,
    groups: Annotated[int | None, typer.Option(
        "--groups", help="plan dpggm compare: 2 groups of --rows records in all (split "
                         "equally); with --detect, the difference of partial correlations "
                         "to detect")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the plan as JSON")] = False,
) -> None:
    """Every step a `dpggm graph` or `dpggm estimate` run would make on ROWS x COLUMNS
    records -- each step's mechanism, spend and noise, and the total in every budget form --
    before any data are read. The run records the same figures in result.json."""
    from dpggm.estimators.registry import GRAPH_METHODS, METHODS

    if groups is not None:
        from dpggm.cli.compare import plan_comparison

        plan_comparison(columns=columns, rows=rows, groups=groups, detect=detect,
                        epsilon=epsilon, delta=delta, rho=rho, mu=mu, neighbors=neighbors,
                        fdr=fdr, as_json=as_json)
        return
    if detect is not None:
        _plan_in_reverse(columns=columns, rows=rows, detect=detect, epsilon=epsilon,
                         delta=delta, rho=rho, mu=mu, method=method, command=command,
                         bound=bound, center=center, bound_fraction=bound_fraction,
                         center_fraction=center_fraction, missing=missing, fdr=fdr,
                         missing_share=missing_share, as_json=as_json)
        return
    if rows is None:
        raise UserError("--rows is required (or --detect with a budget, to find the rows "
                        "needed)")
    budget = budget_from_options(epsilon, delta, rho, mu)
    if command is None:
        command = "graph" if method in GRAPH_METHODS else "estimate"
    if command not in ("graph", "estimate"):
        raise UserError(f"--command must be graph or estimate; got {command!r}")
    names = GRAPH_METHODS if command == "graph" else tuple(METHODS)
    if method not in names:
        raise UserError(f"--method must be one of {', '.join(names)} for dpggm {command}; "
                        f"got {method!r}")
    if command == "estimate" and missing_share:
        raise UserError("--missing-share plans dpggm graph's imputation (the methods of "
                        "dpggm estimate refuse or drop missing values)")
    estimator = _planned_estimator(
        budget, command=command, columns=columns, method=method, bound=bound,
        neighbors=neighbors, center=center, bound_fraction=bound_fraction,
        declared_ranges=declared_ranges, center_fraction=center_fraction, missing=missing,
        fdr=fdr, missing_share=missing_share,
        options={"center": center, "diag_fraction": diag_fraction,
                 "select_fraction": select_fraction, "max_rounds": max_rounds,
                 "allow_invalid": True if allow_invalid else None})
    release_plan = estimator.plan(n_samples=rows, n_features=columns)
    record = release_plan.to_dict(estimator.get_params()["report_delta"])
    record["command"] = command
    noise = None
    if command == "graph":
        from dpggm.estimators.graph import predicted_partial_correlation_noise

        noise = predicted_partial_correlation_noise(release_plan)
        record["predicted_partial_correlation_noise"] = noise
        record["detectable"] = detectable_record(estimator, rows, columns)
    if as_json:
        console.print_json(json.dumps(record))
        return
    _print_plan(record, release_plan, noise=noise, fdr=fdr)


def _planned_estimator(budget: Any, *, command: str, columns: int, method: str, bound: str,
                       neighbors: str, center: str | None, bound_fraction: str,
                       declared_ranges: int, center_fraction: float, missing: str,
                       fdr: float, missing_share: float, options: dict[str, Any]) -> Any:
    """The estimator whose run ``dpggm plan`` describes, from its options."""
    from dpggm.estimators.registry import METHODS

    if command == "graph":
        if declared_ranges > columns:
            raise UserError(f"--declared-ranges {declared_ranges} is more than the {columns} "
                            "columns")
        return _graph_estimator(budget, bound=bound, center=center or "private",
                                method=method, bound_fraction=bound_fraction,
                                center_fraction=center_fraction, missing=missing,
                                fdr=fdr, missing_share=missing_share,
                                declared_ranges=declared_ranges)
    if declared_ranges:
        raise UserError("--declared-ranges is for dpggm graph's --bound auto")
    accepted = METHODS[method][2]
    given = {k for k, v in options.items() if v is not None}
    if given - accepted:
        raise UserError(f"--method {method} does not take "
                        f"{', '.join('--' + k.replace('_', '-') for k in sorted(given - accepted))}")
    return _estimate_estimator(budget, method=method, bound=bound, neighbors=neighbors,
                               options=options)


def _print_plan(record: dict[str, Any], release_plan: Any, *, noise: float | None,
                fdr: float) -> None:
    """The plan as a table and the sentences under it."""
    console.print(plan_table(record))
    if not release_plan.steps:
        console.print(f"no measurement: {release_plan.notes.get('reason', 'nothing spent')}",
                      markup=False)
        return
    forms = ", ".join(_budget_text(b) for b in record["forms"].values())
    console.print(f"total: {forms}; the steps add up to it exactly: "
                  f"{'yes' if record['spends_exactly_total'] else 'no'}", markup=False)
    kept = release_plan.notes.get("tied_columns_keep_levels_from_untied_share")
    if kept is not None:
        console.print(f"private ranges: a column keeps its levels apart when at least "
                      f"{100 * kept:.0f} % of its values lie off its most common one "
                      "(declared ranges keep them all)", markup=False)
    if noise is not None:
        console.print(f"predicted privacy noise on one partial correlation (normal columns): "
                      f"standard deviation {noise:.3g}", markup=False)
    if "detectable" in record:
        console.print(detectable_line(record["detectable"], fdr=fdr), markup=False)


def _plan_in_reverse(*, columns: int, rows: int | None, detect: float, epsilon: Any,
                     delta: Any, rho: Any, mu: Any, method: str, command: str | None,
                     bound: str, center: str | None, bound_fraction: str,
                     center_fraction: float, missing: str, fdr: float, missing_share: float,
                     as_json: bool) -> None:
    """``dpggm plan --detect``: the budget (with ``--rows``) or the rows (with a budget)
    that detect ``|partial correlation| = detect`` with 80 % power (public figures only)."""
    from dpggm.privacy.budgets import ZCDP

    if not (math.isfinite(detect) and 0 < detect < 1):
        raise UserError(f"--detect must be a |partial correlation| in (0, 1); got {detect!r}")
    if (command or "graph") != "graph" or method != "glasso" or bound != "auto":
        raise UserError("--detect plans dpggm graph's edge inference: --method glasso with "
                        "--bound auto")
    budget_given = any(v is not None for v in (epsilon, rho, mu))
    if rows is not None and budget_given:
        raise UserError("--detect: give --rows (to find the budget) or a budget (to find the "
                        "rows), not both")
    if rows is None and not budget_given:
        raise UserError("--detect needs --rows (to find the budget) or a budget such as "
                        "--rho (to find the rows)")
    if delta is not None and not (math.isfinite(delta) and 0 < delta < 1):
        raise UserError(f"--delta must be in (0, 1); got {delta!r}")
    if rows is not None:
        budget = ZCDP(1.0)  # a placeholder: the answer is the budget
    else:
        budget = budget_from_options(epsilon, delta, rho, mu)
    estimator = _graph_estimator(budget, bound=bound, center=center or "private",
                                 method=method, bound_fraction=bound_fraction,
                                 center_fraction=center_fraction, missing=missing, fdr=fdr,
                                 missing_share=missing_share)
    target = f"|partial correlation| {detect:g}"
    assumption = (f", {100 * missing_share:.3g} % of every column's values missing"
                  if missing_share else "")
    conditions = (f"with 80 % power at FDR {fdr:g} (isolated edges of a sparse graph, "
                  f"roughly normal columns{assumption})")
    try:
        if rows is not None:
            needed = estimator.required_budget(partial_correlation=detect, n_samples=rows,
                                               n_features=columns)
            record: dict[str, Any] = {"detect": detect, "n_samples": rows,
                                      "n_features": columns, "rho": needed.rho,
                                      "missing_share": missing_share, "fdr": fdr}
            line = (f"to detect {target} {conditions} in {rows} rows of {columns} columns: "
                    f"zCDP rho = {needed.rho:.4g}")
            if delta is not None:
                eps = needed.to_approx(delta).epsilon
                record.update(epsilon=eps, delta=delta)
                line += f", or (epsilon, delta) = ({eps:.4g}, {delta:g})"
        else:
            n_needed = estimator.required_rows(partial_correlation=detect, n_features=columns)
            record = {"detect": detect, "n_features": columns, "n_samples": n_needed,
                      "budget": budget.to_dict(), "missing_share": missing_share, "fdr": fdr}
            line = (f"to detect {target} {conditions} with {columns} columns at "
                    f"{_budget_text(budget.to_dict())}: {n_needed} rows")
    except ValueError as exc:
        raise UserError(f"--detect: {exc}") from None
    if as_json:
        console.print_json(json.dumps(record))
    else:
        console.print(line, markup=False, soft_wrap=True)
