"""``dpggm audit``: the empirical privacy audit of every mechanism."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

__all__ = ["audit_command", "audit_table", "mechanism_record"]


def _audit_one(name: str, options: dict) -> tuple[str, list]:
    from dpggm.audit import audit

    return name, audit(name, **options)


def _audit_all(names: list[str], options: dict, *, jobs: int,
               report: Callable[[str], None] | None) -> dict[str, list]:
    """Every mechanism's audit, ``jobs`` at a time in worker processes (each target's runs
    are seeded by its own streams, so the results do not depend on ``jobs``)."""
    done: dict[str, list] = {}
    if jobs <= 1 or len(names) <= 1:
        for name in names:
            done[name] = _audit_one(name, options)[1]
            if report is not None:
                report(name)
        return done
    import concurrent.futures
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else methods[0])
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(names)),
                                                mp_context=context) as pool:
        futures = [pool.submit(_audit_one, name, options) for name in names]
        for future in concurrent.futures.as_completed(futures):
            name, results = future.result()
            done[name] = results
            if report is not None:
                report(name)
    return done

# Eight columns of figures do not fit 80 columns; logs (CI) are not terminals.
console = Console(width=None if sys.stdout.isatty() else 132)
err_console = Console(stderr=True)


def audit_table(results: list, *, title: str = "dpggm audit") -> Table:
    """A Rich table of audit results."""
    table = Table(title=title)
    for column in ("mechanism", "relation", "claimed ε", "δ", "ε lower bound", "runs",
                   "verdict", "expected"):
        table.add_column(column, no_wrap=column != "mechanism", min_width=len(column))
    for r in results:
        table.add_row(
            r.mechanism + (" (double)" if r.double else ""),
            r.relation,
            f"{r.claimed['epsilon']:.3g}" if r.claimed else "-",
            f"{r.claimed['delta']:g}" if r.claimed else "-",
            f"{r.epsilon_lower_bound:.3f}",
            str(r.samples),
            r.verdict,
            r.expected,
        )
    return table


def mechanism_record(name: str, results: list) -> dict:
    """One JSON record per mechanism: the row that decides its verdict (the largest excess
    of the lower bound over the claim) at top level, every relation under ``relations``."""
    audited = [r for r in results if r.verdict != "refused"]
    record: dict = {"mechanism": name}
    if audited:
        worst = max(audited, key=lambda r: r.epsilon_lower_bound - r.claimed["epsilon"])
        record.update(
            claimed=worst.claimed,
            epsilon_lower_bound=worst.epsilon_lower_bound,
            samples=worst.samples,
            verdict="fail" if any(r.verdict == "fail" for r in audited) else "pass",
            relation=worst.relation,
            event=worst.event,
        )
    else:
        record.update(verdict="refused")
    record["relations"] = [r.to_dict() for r in results]
    return record


def audit_command(
    mechanism: Annotated[str | None, typer.Option("--mechanism", help="mechanism to audit (see --list)")] = None,
    samples: Annotated[int | None, typer.Option("--samples", help="runs per data set (default: the mechanism's full number, or its quick number with --quick)")] = None,
    seed: Annotated[int, typer.Option("--seed", help="seed of the sample streams (an audit is an experiment)")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON records instead of a table")] = False,
    list_: Annotated[bool, typer.Option("--list", help="list the mechanisms and exit")] = False,
    all_: Annotated[bool, typer.Option("--all", help="audit every mechanism (test doubles included)")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="reduced number of runs (for CI)")] = False,
    confidence: Annotated[float, typer.Option("--confidence", help="confidence of each lower bound")] = 0.95,
    float_support: Annotated[bool, typer.Option("--float-support/--no-float-support", help="include Mironov's float-support event")] = True,
    verbose: Annotated[bool, typer.Option("--verbose", help="print the separating event of each row")] = False,
    jobs: Annotated[int, typer.Option("--jobs", help="mechanisms audited at once, in separate processes (default: the number of CPUs)")] = 0,
) -> None:
    """Run mechanisms on worst-case neighbouring data sets and print a Clopper–Pearson lower bound on epsilon at the claimed delta; "fail" when it exceeds the claim.

    Exit code 1 when a row's verdict differs from what is expected of it (a valid mechanism
    fails, or a known-broken one or a test double passes).
    """
    # Imported here: the audit loads every estimator, and `dpggm --help` must start fast.
    from dpggm.audit import TARGETS
    from dpggm.audit.targets import RENAMED_TARGETS

    if list_:
        for name, target in TARGETS.items():
            tag = " [test double]" if target.double else (
                " [known invalid]" if target.expected == "fail" else "")
            console.print(f"{name}{tag}: {target.summary}; relations: {', '.join(target.relations)}",
                          markup=False, highlight=False)
        return
    if (mechanism is None) == (not all_):
        err_console.print("[bold red]error:[/] give exactly one of --mechanism NAME, --all or --list")
        raise typer.Exit(code=2)
    mechanism = RENAMED_TARGETS.get(mechanism, mechanism) if mechanism is not None else None
    if mechanism is not None and mechanism not in TARGETS:
        err_console.print(f"[bold red]error:[/] --mechanism must be one of {sorted(TARGETS)}; "
                          f"got {mechanism!r}")
        raise typer.Exit(code=2)
    if samples is not None and samples < 20:
        err_console.print(f"[bold red]error:[/] --samples must be at least 20; got {samples}")
        raise typer.Exit(code=2)
    if not 0 < confidence < 1:
        err_console.print(f"[bold red]error:[/] --confidence must be in (0, 1); got {confidence}")
        raise typer.Exit(code=2)
    if jobs < 0:
        err_console.print(f"[bold red]error:[/] --jobs must be 0 (the number of CPUs) or more; "
                          f"got {jobs}")
        raise typer.Exit(code=2)
    names = list(TARGETS) if all_ else [mechanism]
    options = {"samples": samples, "quick": quick, "seed": seed, "confidence": confidence,
               "float_support": float_support}
    by_name = _audit_all(names, options, jobs=jobs or (os.cpu_count() or 1),
                         report=(lambda name: err_console.print(f"audited {name}", highlight=False))
                         if not as_json and all_ else None)
    results = [r for name in names for r in by_name[name]]
    if as_json:
        records = [mechanism_record(name, [r for r in results if r.mechanism == name])
                   for name in names]
        typer.echo(json.dumps(records[0] if mechanism is not None else records, indent=2))
    else:
        console.print(audit_table(results))
        if verbose:
            for r in results:
                console.print(f"{r.mechanism} / {r.relation}: {r.pair}: {r.event or r.note}",
                              markup=False, highlight=False)
    unexpected = [r for r in results if r.verdict != "refused" and r.verdict != r.expected]
    if unexpected:
        raise typer.Exit(code=1)
