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
    out: Annotated[Path | None, typer.Option(
        help="HTML file to write (default RESULT_DIR/report.html, rebuilt in place)")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing file given with --out")] = False,
) -> None:
    """Build (or rebuild) a self-contained report.html of RESULT_DIR (nothing fetched from the network)."""
    from dpggm.report import build_report

    if not result_dir.is_dir():
        raise UserError(f"{result_dir} is not a result directory of dpggm graph, estimate or recover")
    own = result_dir / "report.html"
    target = out if out is not None else own
    # The directory's own report is derived from the files beside it, so rebuilding it
    # loses nothing; another existing file is replaced only when asked.
    if target.exists() and not overwrite and target.resolve() != own.resolve():
        raise UserError(f"{target} exists; pass --overwrite to replace it")
    if target.is_dir():
        raise UserError(f"--out {target} is a directory; give the name of the HTML file")
    text = build_report(result_dir)
    # Written through a temporary sibling and one rename: a reader sees the old report
    # or the new one, never a part.
    write_atomic(target, lambda fh: fh.write(text))
    console.print(f"wrote {target}", markup=False)
