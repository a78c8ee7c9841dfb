"""The ``dpggm`` command line: a thin layer over the public API.

Each command lives in its own module and is registered here with one line:
``app.command()(module.function)`` or ``app.add_typer(module.app, name=...)``. Command
modules import heavy libraries inside the command function, so ``dpggm --help`` and the
``budget`` commands start fast. Wrap a new command in :func:`dpggm.cli.common.guard` so that
user errors end in one line, never a traceback.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Annotated, Any, NoReturn

import typer

from dpggm.cli import audit, budget, compare, estimate, experiment, graph, plan, report, tools
from dpggm.cli.common import console

app = typer.Typer(
    name="dpggm",
    help="Differentially private covariance, precision matrices and Gaussian graphical models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        from dpggm import __version__

        console.print(f"dpggm {__version__}", markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="print the version and exit")] = False,
) -> None:
    """Differentially private covariance, precision matrices and Gaussian graphical models."""


app.command()(estimate.estimate)
app.add_typer(budget.app, name="budget")
app.command()(tools.solve)
app.command()(tools.demo)
app.command()(tools.publish)
app.command()(tools.recover)
app.command()(experiment.experiment)
app.command("example-data")(tools.example_data)
app.command("graph")(graph.graph)
app.command("compare")(compare.compare)
app.command("plan")(plan.plan)
app.command("report")(report.report)
app.command("audit")(audit.audit_command)


def main() -> None:  # pragma: no cover - the process entry point (tested in a child)
    """The ``dpggm`` command: run the app, then leave the process without tearing down the
    interpreter's modules, once the exit handlers have run and the output is flushed.

    Tearing down the scientific stack a command imported (pandas, SciPy, scikit-learn,
    numba, matplotlib) took over a second, on top of the command's own work; the outputs
    are complete and committed by then, so there is nothing left to clean but memory.
    """
    try:
        app(prog_name="dpggm")
        status: Any = 0
    except SystemExit as exc:
        status = exc.code
    leave(status)


def leave(status: Any) -> NoReturn:  # pragma: no cover - ends the process
    """End the process with ``status`` (as ``sys.exit`` reads it) after the exit handlers,
    without the interpreter's final tear-down -- unless a non-daemon thread is still
    running, which the ordinary exit waits for."""
    others = [t for t in threading.enumerate()
              if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if others:
        sys.exit(status)
    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:
        print(status, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
