"""``dpggm experiment``: reproduce a paper's tables (reduced sizes unless --full)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated, Any

import typer

from dpggm.cli._common import (
    QuietOpt,
    UserError,
    console,
    guard,
    progress_display,
    summarised_warnings,
)

EXPERIMENTS = {
    "seed000": ("dpggm.experiments.seed000", "run_seed000",
                "DP ridge precision and DP graphical lasso (Su, Guo, Zhang)"),
    "seed001": ("dpggm.experiments.seed001", "run_seed001",
                "output and covariance perturbation (Wang, Huai, Xu)"),
    "seed002": ("dpggm.experiments.seed002", "run_seed002",
                "noisy data publishing and graph recovery (Guo et al.)"),
    "seed003": ("dpggm.experiments.seed003", "run_seed003",
                "PACE-GGM and its baselines (Ferrando et al.)"),
    "seed004": ("dpggm.experiments.seed004", "run_seed004",
                "DP-Thresholding for sparse covariance (Wang, Xu, He)"),
}


def print_frame(title: str, frame: Any) -> None:
    """A table readable in a terminal of 100 columns (or $COLUMNS): numbers to 4
    significant digits; pandas splits a table that is still too wide into stacked blocks
    of whole columns, instead of squeezing or cutting the cells."""
    import shutil

    width = max(60, min(shutil.get_terminal_size((100, 24)).columns, 160))
    text = frame.to_string(index=False, line_width=width,
                           float_format=lambda v: f"{v:.4g}", na_rep="NA")
    console.print(f"[bold]{title}[/]")
    console.print(text, markup=False, highlight=False, soft_wrap=True)
    console.print()


def print_environment(frame: Any) -> None:
    """The run's environment and wall time as ``key: value`` lines (a long value, such as
    the platform, does not stretch a table)."""
    console.print("[bold]environment[/]")
    for key, value in zip(frame["key"], frame["value"]):
        console.print(f"{key}: {value}", markup=False, highlight=False, soft_wrap=True)
    console.print()


@guard
def experiment(
    name: Annotated[str, typer.Argument(help="one of: " + ", ".join(
        f"{k} ({v[2]})" for k, v in EXPERIMENTS.items()))],
    full: Annotated[bool, typer.Option("--full", help="the papers' sizes (slow)")] = False,
    repetitions: Annotated[int | None, typer.Option(
        help="repetitions per cell (default: the experiment's own)")] = None,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    out: Annotated[Path | None, typer.Option(help="directory for CSV and PNG files")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace existing output files")] = False,
    quiet: QuietOpt = False,
) -> None:
    """Reproduce a paper's experiments (reduced sizes unless --full); prints the tables."""
    if name not in EXPERIMENTS:
        raise UserError(f"experiment must be one of {', '.join(EXPERIMENTS)}; got {name!r}")
    if out is not None and out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a directory")
    module_name, function, title = EXPERIMENTS[name]
    run = getattr(importlib.import_module(module_name), function)
    # The experiment's own default applies unless the user typed a number.
    kwargs: dict[str, Any] = {} if repetitions is None else {"repetitions": repetitions}
    # A bar per experiment part (repetitions done of all), on a terminal's standard error
    # only, gone when done.
    with summarised_warnings(), progress_display(quiet=quiet):
        tables = run(full=full, random_state=seed, out_dir=out, overwrite=overwrite, **kwargs)
    if isinstance(tables, dict):
        for key, frame in tables.items():
            if key == "environment" and list(getattr(frame, "columns", ())) == ["key", "value"]:
                print_environment(frame)
            elif hasattr(frame, "columns"):
                print_frame(key, frame)
    else:
        print_frame(name, tables)
    if out is not None:
        console.print(f"tables written to {out}", markup=False)
