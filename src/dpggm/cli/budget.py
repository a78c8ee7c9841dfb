"""``dpggm budget``: the persistent privacy-budget ledger (init, show, history, migrate).

Only ``budget init`` creates a ledger file; every other command refuses a missing one, so
a mistyped path never creates an empty ledger.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

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

app = typer.Typer(help="A persistent privacy-budget ledger per dataset.", no_args_is_help=True)


def _open(ledger: Path):
    from dpggm.privacy.ledger import Ledger

    if ledger.is_dir():
        raise UserError(f"{ledger} is a directory; give the ledger file")
    if not ledger.exists():
        raise UserError(f"no ledger at {ledger}; create one with `dpggm budget init {ledger} "
                        "--dataset NAME --rho R` (or --epsilon/--mu)")
    return Ledger(ledger, create=False)


def _short(budget) -> str:
    """``ZCDP(rho=0.25)`` as ``rho=0.25``: the notion has its own column."""
    text = str(budget)
    return text[text.index("(") + 1:-1] if "(" in text else text


@app.command("init")
@guard
def budget_init(
    ledger: Annotated[Path, typer.Argument(help="ledger file (created if missing)")],
    dataset: Annotated[str, typer.Option(help="dataset name")],
    epsilon: EpsilonOpt = None,
    delta: DeltaOpt = None,
    rho: RhoOpt = None,
    mu: MuOpt = None,
    neighbors: Annotated[str, typer.Option(
        help="the neighbouring relation of the total: replace or add-remove")] = "replace",
    description: Annotated[str, typer.Option(help="free text")] = "",
) -> None:
    """Declare a dataset's total privacy budget (creates the ledger file if needed)."""
    from dpggm.privacy.ledger import Ledger

    total = budget_from_options(epsilon, delta, rho, mu)
    if ledger.is_dir():
        raise UserError(f"{ledger} is a directory; give a file name for the ledger")
    with Ledger(ledger) as book:
        created = book.declare(dataset, total, description=description, neighbors=neighbors)
    verb = "declared" if created else "already declared:"
    console.print(f"{verb} {dataset!r} with total {total} ({neighbors} neighbours) in {ledger}",
                  markup=False)


@app.command("show")
@guard
def budget_show(
    ledger: Annotated[Path, typer.Argument(help="ledger file")],
    dataset: Annotated[str | None, typer.Option(help="only this dataset")] = None,
) -> None:
    """Show each dataset's total, spent and remaining budget."""
    from rich.table import Table

    with _open(ledger) as book:
        names = [dataset] if dataset is not None else book.datasets()
        table = Table("dataset", "notion", "neighbours", "total", "spent", "remaining",
                      "spends")
        for name in names:
            total = book.total(name)
            table.add_row(name, type(total).__name__, book.neighbors(name), _short(total),
                          _short(book.spent(name)), _short(book.remaining(name)),
                          str(len(book.history(name))))
    console.print(table)


@app.command("history")
@guard
def budget_history(
    ledger: Annotated[Path, typer.Argument(help="ledger file")],
    dataset: Annotated[str, typer.Option(help="dataset name")],
    as_json: Annotated[bool, typer.Option("--json", help="print as JSON")] = False,
) -> None:
    """List every spend recorded for a dataset."""
    from rich.table import Table

    with _open(ledger) as book:
        records = book.history(dataset)
    if as_json:
        console.print_json(json.dumps([
            {"sequence": r.sequence, "time": r.time.isoformat(), "mechanism": r.mechanism,
             "budget": r.budget.to_dict(), "cost": [str(c) for c in r.cost],
             "details": r.details, "pid": r.pid, "host": r.host}
            for r in records
        ]))
        return
    table = Table("#", "time (UTC)", "mechanism", "budget", "output")
    for r in records:
        table.add_row(str(r.sequence), r.time.strftime("%Y-%m-%d %H:%M:%S"), r.mechanism,
                      str(r.budget), str(r.details.get("out", "")))
    console.print(table)


@app.command("migrate")
@guard
def budget_migrate(
    ledger: Annotated[Path, typer.Argument(help="ledger file written by an older dpggm")],
    neighbors: Annotated[str, typer.Option(
        help="the relation every existing total and spend was made under: replace or "
             "add-remove")],
) -> None:
    """Upgrade an old ledger (schema 1) that did not record the neighbouring relation."""
    from dpggm.privacy.ledger import Ledger

    if not ledger.exists():
        raise UserError(f"no ledger at {ledger}")
    changed = Ledger.migrate(ledger, neighbors=neighbors)
    console.print(f"migrated {ledger} (every total and spend recorded as {neighbors} neighbours)"
                  if changed else f"{ledger} is already current", markup=False)
