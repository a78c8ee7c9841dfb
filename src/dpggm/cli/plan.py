"""``dpggm plan``: what a release will spend and how much noise it will add, before any data
are read.

It builds the estimator a run would build and asks it for its plan
(:meth:`~dpggm.estimators.graph.PrivateGraph.plan`): every step's mechanism, budget,
sensitivity and noise, and the total in every budget form -- from the numbers of rows and
columns, the budget and the bound rule, all public. The same figures are recorded in
``result.json`` (``privacy.notes.plan``) by the run itself.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from dpggm.cli._common import (
    DeltaOpt,
    EpsilonOpt,
    MuOpt,
    RhoOpt,
    UserError,
    budget_from_options,
    console,
    guard,
)

__all__ = ["plan", "plan_table"]

GRAPH_METHODS = ("glasso", "pace")


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _budget_text(budget: dict[str, Any]) -> str:
    fields = [f"{k}={_number(v)}" for k, v in budget.items() if k != "notion"]
    return f"{budget.get('notion')}({', '.join(fields)})"


def plan_table(record: dict[str, Any]) -> Any:
    """A Rich table of a plan's steps (``ReleasePlan.to_dict()``)."""
    from rich.table import Table

    table = Table(title=f"{record['estimator']}: n = {record['n_samples']}, "
                        f"p = {record['n_features']}, {record['neighbors']} neighbours")
    for column in ("step", "mechanism", "runs", "budget", "sensitivity", "noise"):
        table.add_column(column)
    for step in record["steps"]:
        sensitivity = (_number(step["sensitivity"]) if "sensitivity" in step
                       else step.get("sensitivity_rule", ""))
        noise = ", ".join(f"{k} {_number(v)}" for k, v in (step.get("noise") or {}).items())
        table.add_row(step["step"], step["mechanism"], str(step["repetitions"]),
                      _budget_text(step["budget"]), sensitivity, noise)
    return table


@guard
def plan(
    rows: Annotated[int, typer.Option("--rows", help="number of records n (public)")],
    columns: Annotated[int, typer.Option("--columns", help="number of columns p")],
    rho: RhoOpt = None,
    epsilon: EpsilonOpt = None,
    delta: DeltaOpt = None,
    mu: MuOpt = None,
    method: Annotated[str, typer.Option(help=f"one of: {', '.join(GRAPH_METHODS)}")] = "glasso",
    bound: Annotated[str, typer.Option(
        help="auto (private per-column ranges), l2:B or box:B")] = "auto",
    center: Annotated[str, typer.Option(help="private or none")] = "private",
    bound_fraction: Annotated[str, typer.Option(
        help="share of the budget for --bound auto, or auto")] = "auto",
    center_fraction: Annotated[float, typer.Option(
        help="share of the budget for --center private")] = 0.0625,
    missing: Annotated[str, typer.Option(help="impute or refuse")] = "impute",
    as_json: Annotated[bool, typer.Option("--json", help="print the plan as JSON")] = False,
) -> None:
    """Every step a `dpggm graph` run would make on ROWS x COLUMNS records, and what it
    would spend, before any data are read."""
    budget = budget_from_options(epsilon, delta, rho, mu)
    if method not in GRAPH_METHODS:
        raise UserError(f"--method must be one of {', '.join(GRAPH_METHODS)}; got {method!r}")
    if center not in ("private", "none"):
        raise UserError(f"--center must be private or none; got {center!r}")
    fraction: Any = bound_fraction
    if bound_fraction != "auto":
        try:
            fraction = float(bound_fraction)
        except ValueError:
            raise UserError(
                f"--bound-fraction must be a number in (0, 1) or auto; got {bound_fraction!r}"
            ) from None
    from dpggm.estimators._graph_pipeline import predicted_partial_correlation_noise
    from dpggm.estimators.graph import PrivateGraph

    estimator = PrivateGraph(budget=budget, bounds=bound, center=center, method=method,
                             bound_fraction=fraction, center_fraction=center_fraction,
                             missing=missing)
    release_plan = estimator.plan(n_samples=rows, n_features=columns)
    record = release_plan.to_dict(estimator.report_delta)
    noise = predicted_partial_correlation_noise(release_plan)
    record["predicted_partial_correlation_noise"] = noise
    if as_json:
        console.print_json(json.dumps(record))
        return
    console.print(plan_table(record))
    forms = ", ".join(_budget_text(b) for b in record["forms"].values())
    console.print(f"total: {forms}; the steps add up to it exactly: "
                  f"{'yes' if record['spends_exactly_total'] else 'no'}", markup=False)
    if noise is not None:
        console.print(f"predicted privacy noise on one partial correlation (normal columns): "
                      f"standard deviation {noise:.3g}", markup=False)
