"""``dpggm report``: a self-contained HTML report of a result directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dpggm.cli._common import UserError, console, guard
from dpggm.cli.output import write_atomic

__all__ = ["report"]


@guard
def report(
    result_dir: Annotated[Path, typer.Argument(help="output directory of dpggm graph, estimate or recover")],
    out: Annotated[Path | None, typer.Option(help="HTML file to write (default RESULT_DIR/report.html)")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace an existing report")] = False,
) -> None:
    """Build a self-contained report.html (images inline, no network) from RESULT_DIR."""
    from dpggm.report import build_report

    if not result_dir.is_dir():
        raise UserError(f"{result_dir} is not a result directory of dpggm graph, estimate or recover")
    target = out if out is not None else result_dir / "report.html"
    if target.exists() and not overwrite:
        raise UserError(f"{target} exists; pass --overwrite to replace it")
    text = build_report(result_dir)
    write_atomic(target, lambda fh: fh.write(text))
    console.print(f"wrote {target}", markup=False)
