"""The ``dpggm`` command line: a thin layer over the public API.

Each command lives in its own module and is registered here with one line:
``app.command()(module.function)`` or ``app.add_typer(module.app, name=...)``. Command
modules import heavy libraries inside the command function, so ``dpggm --help`` and the
``budget`` commands start fast. Wrap a new command in :func:`dpggm.cli._common.guard` so that
user errors end in one line, never a traceback.
"""

from __future__ import annotations

from typing import Annotated

import typer

from dpggm.cli import audit, budget, estimate, experiment, graph, plan, report, tools
from dpggm.cli._common import console

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
app.command("plan")(plan.plan)
app.command("report")(report.report)
app.command("audit")(audit.audit_command)


def main() -> None:  # pragma: no cover
    app(prog_name="dpggm")


if __name__ == "__main__":  # pragma: no cover
    main()
