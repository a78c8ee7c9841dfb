"""Command-line options for drawing a graph, shared by ``dpggm graph`` and ``dpggm report``::

    dpggm graph items.csv --rho 1 --layout groups --groups scales.csv
    dpggm graph items.csv --rho 1 --group-pattern '^([a-z]+)_'
    dpggm report dpggm-graph --layout circle --pictures

``--groups FILE`` declares each variable's group (a CSV with a header row, variable then
group, or a JSON object); ``--group-pattern REGEX`` reads it off the names. The groups are
drawn (node colours, a legend, the clusters of ``--layout groups``) and kept in
``result.json``: declare only what is public, such as a questionnaire's scales.

The options are checked before any data are read; the plotting modules are imported only
when pictures are drawn.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from dpggm.cli.common import UserError

__all__ = ["GroupPatternOpt", "GroupsOpt", "LAYOUT_NAMES", "LayoutOpt", "PictureOptions",
           "groups_for", "picture_options"]

#: The layouts (dpggm.report.layout.LAYOUTS, named here so that checking the option
#: imports no plotting module).
LAYOUT_NAMES = ("spring", "circle", "groups")

LayoutOpt = Annotated[str | None, typer.Option(
    "--layout", help="where the graph's variables are drawn: spring (force-directed: joined "
                     "variables close together), circle (in column order) or groups (one "
                     "cluster per declared group; needs --groups or --group-pattern); "
                     "default spring (dpggm report: the layout dpggm graph recorded)")]
GroupsOpt = Annotated[Path | None, typer.Option(
    "--groups", help="a CSV file (header row; variable, group) or JSON object declaring "
                     "each variable's group, e.g. a questionnaire's scales: nodes are "
                     "coloured by group. Drawn in the pictures: declare only what is "
                     "public")]
GroupPatternOpt = Annotated[str | None, typer.Option(
    "--group-pattern", help="a regular expression whose first (...) part, found in a "
                            "variable's name, is its group, e.g. '^([a-z]+)_' for "
                            "anx_1, anx_2, dep_1")]


@dataclass(frozen=True)
class PictureOptions:
    """The checked drawing options: a layout (None: the default or the one recorded), and
    groups declared by a file (already read) or by a pattern (applied to the names)."""

    layout: str | None
    declared: dict[str, str] | None
    pattern: str | None
    source: str | None


def picture_options(layout: str | None, groups: Path | None, group_pattern: str | None, *,
                    recorded_groups: bool = False) -> PictureOptions:
    """The drawing options, checked (and the groups file read) before any data;
    ``recorded_groups``: the result being drawn already declares groups (``dpggm
    report``)."""
    if layout is not None and layout not in LAYOUT_NAMES:
        raise UserError(f"--layout must be one of {', '.join(LAYOUT_NAMES)}; got {layout!r}")
    if groups is not None and group_pattern is not None:
        raise UserError("give --groups or --group-pattern, not both")
    if layout == "groups" and groups is None and group_pattern is None and not recorded_groups:
        raise UserError("--layout groups needs the variables' groups: --groups FILE or "
                        "--group-pattern REGEX")
    declared = None
    if groups is not None:
        if not groups.is_file():
            raise UserError(f"--groups: no such file: {groups}")
        from dpggm.report.layout import groups_from_file

        try:
            declared = groups_from_file(groups)
        except ValueError as exc:
            raise UserError(f"--groups: {exc}") from None
    if group_pattern is not None:
        try:
            re.compile(group_pattern)
        except re.error as exc:
            raise UserError(f"--group-pattern {group_pattern!r} is not a regular expression: "
                            f"{exc}") from None
    return PictureOptions(layout=layout, declared=declared, pattern=group_pattern,
                          source=str(groups) if groups is not None else None)


def groups_for(options: PictureOptions, names: list[str], *,
               note: Callable[[str], Any]) -> dict[str, str] | None:
    """Each named variable's declared group (only the variables that have one), from the
    file or the pattern; None without either, or when they name none of the variables.
    ``note(line)`` is told which variables have no group, or why there are none: after a
    release nothing here may fail (the budget is spent), so a grouping that does not fit
    the data is reported and left out."""
    if options.pattern is not None:
        from dpggm.report.layout import groups_from_pattern

        option = f"--group-pattern {options.pattern!r}"
        try:
            found = groups_from_pattern(options.pattern, names)
        except ValueError:
            found = {}
    elif options.declared is not None:
        option = f"--groups {options.source}"
        found = {name: options.declared[name] for name in names if name in options.declared}
    else:
        return None
    if not found:
        note(f"{option} names none of the {len(names)} variables (for example "
             f"{names[0]!r}): the pictures are drawn without groups")
        return None
    missing = [name for name in names if name not in found]
    if missing:
        shown = ", ".join(repr(name) for name in missing[:8])
        more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        note(f"{option}: {len(missing)} of {len(names)} variables have no declared group "
             f"(drawn as 'other'): {shown}{more}")
    return found
