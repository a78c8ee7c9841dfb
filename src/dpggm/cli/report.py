"""``dpggm report``: a self-contained HTML report of a result directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from dpggm.cli.output import write_atomic

__all__ = ["report"]


def report(
    result_dir: Annotated[Path, typer.Argument(help="output directory of dpggm graph, estimate or recover")],
    out: Annotated[Path | None, typer.Option(help="HTML file to write (default RESULT_DIR/report.html)")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace an existing report")] = False,
) -> None:
    """Build a self-contained report.html (images inline, no network) from RESULT_DIR."""
    from dpggm.report import build_report

    console, errors = Console(), Console(stderr=True)
    target = out if out is not None else result_dir / "report.html"
    try:
        if target.exists() and not overwrite:
            raise FileExistsError(f"{target} exists; pass --overwrite to replace it")
        text = build_report(result_dir)
        write_atomic(target, lambda fh: fh.write(text))
    except (FileNotFoundError, FileExistsError, ValueError, KeyError) as exc:
        errors.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(code=2) from None
    console.print(f"wrote {target}")
