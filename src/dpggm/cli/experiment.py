"""``dpggm experiment``: reproduce a paper's tables (reduced sizes unless --full)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated, Any

import typer

from dpggm.cli.common import (
    QuietOpt,
    UserError,
    console,
    guard,
    progress_display,
    summarised_warnings,
)

#: The papers' experiments by the name of their methods: module, function, description.
EXPERIMENTS = {
    "private_precision": ("dpggm.experiments.private_precision", "run_private_precision",
                          "DP ridge precision and DP graphical lasso (Su, Guo, Zhang)"),
    "covariance_perturbation": ("dpggm.experiments.covariance_perturbation",
                                "run_covariance_perturbation",
                                "output and covariance perturbation (Wang, Huai, Xu)"),
    "noisy_data": ("dpggm.experiments.noisy_data", "run_noisy_data",
                   "noisy data publishing and graph recovery (Guo et al.)"),
    "pace_ggm": ("dpggm.experiments.pace_ggm", "run_pace_ggm",
                 "PACE-GGM and its baselines (Ferrando et al.)"),
    "thresholding": ("dpggm.experiments.thresholding", "run_thresholding",
                     "DP-Thresholding for sparse covariance (Wang, Xu, He)"),
}

#: Earlier names of the experiments (the papers' numbers in the source collection), still
#: accepted so that the commands recorded with committed runs keep working.
ALIASES = {
    "seed000": "private_precision",
    "seed001": "covariance_perturbation",
    "seed002": "noisy_data",
    "seed003": "pace_ggm",
    "seed004": "thresholding",
}


def resolve_experiment(name: str) -> str:
    """The experiment ``name`` refers to (its own name, or the one an alias stands for)."""
    if name in EXPERIMENTS:
        return name
    if name in ALIASES:
        return ALIASES[name]
    raise UserError(f"experiment must be one of {', '.join(EXPERIMENTS)} (or the aliases "
                    f"{', '.join(ALIASES)}); got {name!r}")


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
        f"{k} ({v[2]})" for k, v in EXPERIMENTS.items()) + "; aliases: " + ", ".join(
        f"{alias} = {name}" for alias, name in ALIASES.items()))],
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
    name = resolve_experiment(name)
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
