"""``dpggm report``: a self-contained HTML report of a result directory (and, with
``--pictures``, its pictures as PNG, SVG and PDF files)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dpggm.cli import picture_options as popt
from dpggm.cli.common import UserError, console, err_console, guard
from dpggm.io import write_atomic

__all__ = ["report"]

#: The pictures --pictures writes (each in every format the report module draws).
PICTURE_STEMS = ("graph", "intervals", "precision")


@guard
def report(
    result_dir: Annotated[Path, typer.Argument(help="output directory of dpggm graph, estimate or recover")],
    out: Annotated[Path | None, typer.Option(
        help="HTML file to write (default RESULT_DIR/report.html, rebuilt in place)")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing file given with --out")] = False,
    layout: popt.LayoutOpt = None,
    groups: popt.GroupsOpt = None,
    group_pattern: popt.GroupPatternOpt = None,
    pictures: Annotated[bool, typer.Option(
        "--pictures", help="also write the pictures (graph, intervals, precision) as PNG "
                           "at 300 dpi, SVG and PDF beside the report")] = False,
) -> None:
    """Build (or rebuild) a self-contained report.html of RESULT_DIR (nothing fetched from the network).

    The graph is drawn with the layout and groups dpggm graph recorded, unless --layout,
    --groups or --group-pattern say otherwise.
    """
    if not result_dir.is_dir():
        raise UserError(f"{result_dir} is not a result directory of dpggm graph, estimate or recover")
    from dpggm.report.html import build_report, load_result, picture_files, picture_settings
    from dpggm.report.plots import FORMATS

    record, _ = load_result(result_dir)
    _, recorded = picture_settings(record)
    options = popt.picture_options(layout, groups, group_pattern,
                                   recorded_groups=recorded is not None)
    own = result_dir / "report.html"
    target = out if out is not None else own
    # The directory's own report (and pictures) are derived from the files beside them, so
    # rebuilding them loses nothing; another existing file is replaced only when asked.
    in_place = target.resolve().parent == result_dir.resolve()
    if target.exists() and not overwrite and target.resolve() != own.resolve():
        raise UserError(f"{target} exists; pass --overwrite to replace it")
    if target.is_dir():
        raise UserError(f"--out {target} is a directory; give the name of the HTML file")
    names = [str(n) for n in record.get("features") or []]
    asked = options.declared is not None or options.pattern is not None
    if asked and not names:
        raise UserError(f"{result_dir}'s result names no variables: --groups and "
                        "--group-pattern cannot be matched to them")
    declared = popt.groups_for(options, names, note=lambda line: err_console.print(
        line, markup=False, soft_wrap=True)) if asked else None
    if asked and declared is None:
        raise UserError("the declared groups name none of the variables")
    chosen = options.layout
    if pictures and not in_place and not overwrite:
        existing = [target.parent / f"{stem}.{fmt}" for stem in PICTURE_STEMS
                    for fmt in FORMATS if (target.parent / f"{stem}.{fmt}").exists()]
        if existing:
            raise UserError(f"{existing[0]} exists; pass --overwrite to replace the pictures "
                            "there")
    files = picture_files(result_dir, layout=chosen, groups=declared) if pictures else {}
    text = build_report(result_dir, layout=chosen, groups=declared)
    # Each file through a temporary sibling and one rename: a reader sees the old file or
    # the new one, never a part.
    written = []
    for name, content in files.items():
        path = target.parent / name
        if isinstance(content, str):
            write_atomic(path, lambda fh, content=content: fh.write(content))
        else:
            write_atomic(path, lambda fh, content=content: fh.write(content), binary=True)
        written.append(str(path))
    write_atomic(target, lambda fh: fh.write(text))
    console.print("wrote " + ", ".join([*written, str(target)]), markup=False)
