"""``dpggm budget``: the persistent privacy-budget ledger (init, show, history, verify,
migrate).

Only ``budget init`` creates a ledger file; every other command refuses a missing one, so
a mistyped path never creates an empty ledger. Every figure is printed whole (folded at the
terminal's width, never cut short), a spent figure rounded up and a remaining one down.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
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
    fail,
    guard,
    summarised_warnings,
)

app = typer.Typer(help="A persistent privacy-budget ledger per dataset.", no_args_is_help=True)


def _open(ledger: Path) -> Any:
    from dpggm.privacy.ledger import Ledger

    if ledger.is_dir():
        raise UserError(f"{ledger} is a directory; give the ledger file")
    if not ledger.exists():
        raise UserError(f"no ledger at {ledger}; create one with `dpggm budget init {ledger} "
                        "--dataset NAME --rho R` (or --epsilon/--mu)")
    with summarised_warnings():
        return Ledger(ledger, create=False)


def _figure(value: float, rounding: str | None = None) -> str:
    """``value`` in at most four significant digits, rounded ``"up"`` or ``"down"`` (never
    the unsafe way), or as given (``None``: the shortest text that is exactly it)."""
    if rounding is None:
        text = f"{value:g}"
        return text if float(text) == value else repr(value)
    text = f"{value:.4g}"
    # A figure within a few units in the last place of the float is that float (0.1 + 0.2
    # spends are 0.3, not 0.3001): the difference is the binary spelling of the decimals.
    if abs(float(text) - value) <= 4 * math.ulp(value):
        return text
    if (rounding == "up" and float(text) < value) or (rounding == "down" and float(text) > value):
        step = 10.0 ** (math.floor(math.log10(abs(float(text)))) - 3)
        moved = float(text) + (step if rounding == "up" else -step)
        text = f"{max(moved, 0.0):.4g}"
    return text


def _parameters(budget: Any, rounding: str | None = None) -> str:
    """``rho = 0.25``, ``epsilon = 3, delta = 1e-06``, ``mu = 1``: a budget's figures."""
    from dpggm.privacy.budgets import GDP, ZCDP, ApproxDP

    if isinstance(budget, ZCDP):
        return f"rho = {_figure(budget.rho, rounding)}"
    if isinstance(budget, GDP):
        return f"mu = {_figure(budget.mu, rounding)}"
    if isinstance(budget, ApproxDP):
        return (f"epsilon = {_figure(budget.epsilon, rounding)}, "
                f"delta = {_figure(budget.delta, rounding)}")
    return f"epsilon = {_figure(budget.epsilon, rounding)}"


_NOTION_NAMES = {"pure-dp": "pure DP", "approx-dp": "(epsilon, delta)-DP", "zcdp": "zCDP",
                 "gdp": "Gaussian DP"}


def _status_lines(status: Any) -> list[str]:
    """The lines ``budget show`` prints for one dataset (each well under 80 characters for
    any figure of four significant digits)."""
    total = status.total
    count = f"{status.spends} spend{'' if status.spends == 1 else 's'}"
    lines = [f"dataset {status.dataset!r}: {_NOTION_NAMES[total.notion]}, "
             f"{status.neighbors} neighbours",
             f"  total      {_parameters(total)}"]
    if status.composition == "zcdp":
        lines += [
            f"             composed in zCDP: its spends may add up to "
            f"{_parameters(status.limit, 'down')}",
            f"  spent      {_parameters(status.spent, 'up')} in {count}",
            f"             all releases so far: {_parameters(status.guarantee, 'up')}",
            f"  remaining  {_parameters(status.remaining, 'down')}",
        ]
        if status.next_release is not None and status.next_release.epsilon > 0:
            lines.append(f"             one more release of up to "
                         f"{_parameters(status.next_release, 'down')}")
        else:
            lines.append("             no further release fits")
        return lines
    return lines + [f"  spent      {_parameters(status.spent, 'up')} in {count}",
                    f"  remaining  {_parameters(status.remaining, 'down')}"]


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
    """Declare a dataset's total privacy budget (creates the ledger file, 0600, if needed).

    An (epsilon, delta) total composes its spends in zCDP: they may add up to the largest
    rho whose tight conversion implies it. Set DPGGM_LEDGER_KEY when a new ledger is created
    to seal its history with that secret key (every later use then needs it).
    """
    from dpggm.privacy.ledger import Ledger

    total = budget_from_options(epsilon, delta, rho, mu)
    if ledger.is_dir():
        raise UserError(f"{ledger} is a directory; give a file name for the ledger")
    with summarised_warnings(), Ledger(ledger) as book:
        created = book.declare(dataset, total, description=description, neighbors=neighbors)
        status = book.status(dataset)
    verb = "declared" if created else "already declared:"
    console.print(f"{verb} {dataset!r} with total {total} ({neighbors} neighbours) in {ledger}",
                  markup=False)
    if status.composition == "zcdp":
        console.print(f"its spends are composed in zCDP and may add up to "
                      f"{_parameters(status.limit, 'down')}", markup=False)


@app.command("show")
@guard
def budget_show(
    ledger: Annotated[Path, typer.Argument(help="ledger file")],
    dataset: Annotated[str | None, typer.Option(help="only this dataset")] = None,
) -> None:
    """Show each dataset's total, what was spent and what remains, in the declared form."""
    with _open(ledger) as book:
        names = [dataset] if dataset is not None else book.datasets()
        blocks = [_status_lines(book.status(name)) for name in names]
    if not blocks:
        console.print(f"{ledger} declares no dataset yet", markup=False)
    for number, block in enumerate(blocks):
        if number:
            console.print("")
        for line in block:
            console.print(line, markup=False, highlight=False)


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
             "details": r.details, "pid": r.pid, "host": r.host, "event": r.event,
             "chain": r.chain}
            for r in records
        ]))
        return
    table = Table("#", "time (UTC)", "mechanism", "budget", "output")
    for column in table.columns:
        column.overflow = "fold"
    for r in records:
        table.add_row(str(r.sequence), r.time.strftime("%Y-%m-%d %H:%M:%S"), r.mechanism,
                      _parameters(r.budget), str(r.details.get("out", "")))
    console.print(table)


def _parse_anchor(anchor: str | None) -> tuple[int, str] | None:
    if anchor is None:
        return None
    event, _, digest = anchor.partition(":")
    if not (event.isdigit() and len(digest) == 64
            and all(c in "0123456789abcdef" for c in digest.lower())):
        raise UserError(f"--anchor must be EVENT:HASH (an event number and its 64-digit chain "
                        f"hash, as `dpggm budget verify` prints them); got {anchor!r}")
    return int(event), digest.lower()


def _receipt(output: Path) -> dict[str, Any]:
    path = output / "ledger.json" if output.is_dir() else output
    if not path.is_file():
        raise UserError(f"{output} holds no ledger receipt (ledger.json): it was not charged "
                        "to a ledger")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UserError(f"{path} is not a ledger receipt: {exc}") from None


@app.command("verify")
@guard
def budget_verify(
    ledger: Annotated[Path, typer.Argument(help="ledger file")],
    output: Annotated[list[Path] | None, typer.Option(
        help="an output directory (or its ledger.json) to check against the ledger; "
             "repeat for several")] = None,
    anchor: Annotated[str | None, typer.Option(
        help="EVENT:HASH printed by an earlier verify: the history must still hold it")] = None,
    restore_triggers: Annotated[bool, typer.Option(
        "--restore-triggers", help="put back the append-only triggers if they were removed "
        "and the history still verifies")] = False,
) -> None:
    """Check a ledger's history (its hash chain, running totals and append-only rules),
    and optionally outputs' receipts against it; exit status 1 if anything is wrong."""
    from dpggm.privacy.ledger import LedgerIntegrityError
    from dpggm.privacy.ledger import restore_triggers as restore

    pinned = _parse_anchor(anchor)
    failures = 0
    try:
        if restore_triggers:
            if not ledger.is_file():
                raise UserError(f"no ledger at {ledger}")
            restored = restore(ledger)
            console.print(f"restored the append-only triggers: {', '.join(restored)}"
                          if restored else "the append-only triggers were in place",
                          markup=False)
        book = _open(ledger)
        summary = book.verify(anchor=pinned)
    except LedgerIntegrityError as exc:
        fail_line = f"FAILED: {' '.join(str(exc).split())}"
        console.print(fail_line, markup=False, highlight=False)
        raise typer.Exit(code=1) from None
    mode = "HMAC-SHA-256, keyed" if summary.chain_mode == "hmac-sha256" else "SHA-256"
    count = len(summary.datasets)
    console.print(f"{ledger}: history intact ({summary.events} events, {count} "
                  f"dataset{'' if count == 1 else 's'}, {mode})", markup=False)
    console.print(f"head: {summary.events}:{summary.head}", markup=False, highlight=False)
    if pinned is not None:
        console.print(f"anchor {pinned[0]} found unchanged", markup=False)
    for item in output or []:
        receipt = _receipt(item)
        try:
            record = book.verify_receipt(receipt)
        except LedgerIntegrityError as exc:
            failures += 1
            console.print(f"{item}: FAILED: {' '.join(str(exc).split())}", markup=False,
                          highlight=False)
            continue
        how = "" if "chain" in receipt else " (an older receipt, without a chain hash)"
        console.print(f"{item}: spend #{record.sequence} of {record.dataset!r} "
                      f"({_parameters(record.budget)}) matches{how}", markup=False)
    if failures:
        raise typer.Exit(code=1)


@app.command("migrate")
@guard
def budget_migrate(
    ledger: Annotated[Path, typer.Argument(help="ledger file written by an older dpggm")],
    neighbors: Annotated[str | None, typer.Option(
        help="only for a version-1 ledger: the relation every existing total and spend was "
             "made under, replace or add-remove")] = None,
) -> None:
    """Upgrade a ledger written by an older dpggm (checks its records, chains its history,
    composes (epsilon, delta) totals in zCDP, restricts the file to its owner)."""
    from dpggm.privacy.ledger import Ledger

    if not ledger.exists():
        raise UserError(f"no ledger at {ledger}")
    with summarised_warnings():
        changed = Ledger.migrate(ledger, neighbors=neighbors)
    if not changed:
        console.print(f"{ledger} is already current", markup=False)
        return
    console.print(f"migrated {ledger}:", markup=False)
    with _open(ledger) as book:
        note = book.notes()[-1][1]
    if not note:
        fail("the migration left no note")
    for part in note.split("; "):
        console.print(f"  {part}", markup=False, highlight=False)
