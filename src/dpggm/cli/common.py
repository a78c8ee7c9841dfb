"""What every command shares: consoles, the one-line error rule, budget and bound options.

Every user error ends in one line on standard error (``error: <problem>; <what to do>``)
and exit status 2, never a Python traceback: commands are wrapped by :func:`guard`, which
turns the library's named errors (and ``OSError`` from the file system) into that line.
An unexpected exception is also reported in one line, asking for a bug report; set
``DPGGM_DEBUG=1`` to see its traceback.

Imports here must stay light (no NumPy-heavy or scikit-learn modules): ``dpggm --help``
and the ``budget`` commands import this module and must start fast.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from dpggm.exceptions import (
    BudgetExceededError,
    IncompatibleBudgetError,
    InvalidGuaranteeError,
    NumericalError,
    ReleaseFailedError,
)

__all__ = [
    "DeltaOpt", "EpsilonOpt", "MuOpt", "QuietOpt", "RhoOpt", "UserError", "budget_from_options",
    "console", "err_console", "fail", "feature_names", "parse_center", "guard", "load_bounds",
    "open_ledger",
    "parse_seed", "progress_display", "summarised_warnings",
]

# Wide enough for the tables at 100 columns, and stable under pytest's captured output.
console = Console(width=int(os.environ.get("COLUMNS", 0)) or None)
err_console = Console(stderr=True)


class UserError(Exception):
    """A problem with what the user asked for; the message says what to do."""


_USER_ERRORS: tuple[type[BaseException], ...] = (
    UserError,
    ValueError,
    TypeError,
    KeyError,
    OSError,
    ArithmeticError,
    BudgetExceededError,
    IncompatibleBudgetError,
    InvalidGuaranteeError,
    NumericalError,
    ReleaseFailedError,
    sqlite3.Error,
    TimeoutError,
    # A missing optional dependency (a reader of a file format): its message names the
    # extra to install.
    ImportError,
)


def feature_names(estimator: Any) -> list[str]:
    """The column names of a fitted estimator (``x0 ..`` when its input named none)."""
    from dpggm.estimators import feature_names as names

    return names(estimator)


def parse_center(value: str) -> Any:
    """``--center``: 'private', 'none' or the path of a CSV file holding a public mean."""
    if value in ("private", "none"):
        return value
    path = Path(value)
    if not path.exists():
        raise UserError(
            f"--center must be 'private', 'none' or a CSV file of a public mean; no file {value!r}"
        )
    import numpy as np

    try:
        return np.loadtxt(path, delimiter=",", ndmin=1).ravel()
    except ValueError as exc:
        raise UserError(f"--center {value}: a public mean must be one line of numbers ({exc})") from None


def fail(message: str) -> NoReturn:
    """Print ``error: message`` on one line and exit with status 2."""
    from rich.markup import escape

    text = " ".join(str(message).split()) or "unknown error"
    # The message is text, not markup: "dpggm[formats]" must print as written.
    err_console.print(f"[bold red]error:[/] {escape(text)}", markup=True, highlight=False,
                      soft_wrap=True)
    raise typer.Exit(code=2)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        name = exc.filename
        hint = {
            "EACCES": "check its permissions or choose another location",
            "EROFS": "it is on a read-only file system; choose another location",
            "ENOENT": "check the path",
            "EISDIR": "give a file, not a directory",
            "ENOTDIR": "a part of the path is a file, not a directory",
            "ENOSPC": "free some space or choose another location",
        }
        import errno

        code = errno.errorcode.get(exc.errno or 0, "")
        extra = hint.get(code, "check the path")
        return f"{name}: {exc.strerror.lower()}; {extra}"
    text = str(exc)
    if isinstance(exc, KeyError) and exc.args and isinstance(exc.args[0], str):
        text = exc.args[0]
    return text or type(exc).__name__


def guard(command: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``command`` with the one-line error rule (see the module docstring)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            err_console.print("[bold red]interrupted[/]")
            raise typer.Exit(code=130) from None
        except _USER_ERRORS as exc:
            fail(_describe(exc))
        except Exception as exc:
            if os.environ.get("DPGGM_DEBUG"):
                raise
            fail(
                f"internal error ({type(exc).__name__}: {_describe(exc)}); please report it, "
                "with DPGGM_DEBUG=1 set to include the traceback"
            )

    return wrapper


@contextlib.contextmanager
def progress_display(*, quiet: bool = False, stream: Console | None = None) -> Iterator[bool]:
    """Show the library's progress reports (:mod:`dpggm.progress`) as Rich bars on
    standard error while the block runs; yields whether they are shown.

    Only on a terminal: piped or redirected standard error gets nothing, nor does any
    file, and ``quiet`` turns the bars off. A task leaves the display when it reaches its
    total (a task of unknown total shows a pulsing bar until then); all of it disappears
    when the block ends.
    """
    stream = err_console if stream is None else stream
    if quiet or not stream.is_terminal:
        yield False
        return
    from rich.progress import (
        BarColumn,
        Progress,
        SpinnerColumn,
        TaskID,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from dpggm.progress import reporting

    tasks: dict[str, TaskID] = {}
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                  TaskProgressColumn(), TimeElapsedColumn(), console=stream,
                  transient=True) as bars:

        def show(task: str, done: float, total: float | None) -> None:
            if task not in tasks:
                tasks[task] = bars.add_task(task, total=total)
            # A finished task leaves the display: what shows is the work still going on.
            finished = total is not None and done >= total
            bars.update(tasks[task], completed=done, total=total, visible=not finished)

        with reporting(show):
            yield True


@contextlib.contextmanager
def summarised_warnings() -> Iterator[list[str]]:
    """Collect warnings raised inside (ConvergenceWarning and others) and print each kind
    once, as one line without file paths."""
    lines: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield lines
    by_category: dict[str, list[str]] = {}
    for item in caught:
        text = " ".join(str(item.message).split())
        by_category.setdefault(item.category.__name__, []).append(text)
    for message in dict.fromkeys(by_category.pop("CuratorWarning", [])):
        # Each of the curator's warnings is its own finding, printed whole (its text
        # starts with "curator only").
        lines.append(message)
        err_console.print(message, markup=False, highlight=False, soft_wrap=True)
    for category, messages in by_category.items():
        # One line per kind: the first message, shortened, stands for all of them (raw
        # warnings would print a file path and source line each).
        example = messages[0] if len(messages[0]) <= 120 else messages[0][:117] + "..."
        count = f"{len(messages)} x " if len(messages) > 1 else ""
        line = f"warning: {count}{category}, e.g. {example}"
        lines.append(line)
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)


def budget_from_options(
    epsilon: float | None, delta: float | None, rho: float | None, mu: float | None,
    non_private: bool = False,
) -> Any:
    """Exactly one of: --epsilon [--delta], --rho, --mu, --non-private; validated."""
    from dpggm.privacy.budgets import GDP, ZCDP, ApproxDP, NonPrivate, PureDP

    given = [name for name, v in (("--epsilon", epsilon), ("--rho", rho), ("--mu", mu))
             if v is not None]
    if non_private:
        given.append("--non-private")
    if len(given) != 1:
        fail(
            "give exactly one budget: --epsilon E [--delta D], --rho R, --mu M or --non-private; "
            f"got {', '.join(given) or 'none'}"
        )
    if delta is not None and epsilon is None:
        fail("--delta goes with --epsilon")
    try:
        if non_private:
            return NonPrivate()
        if rho is not None:
            return ZCDP(rho)
        if mu is not None:
            return GDP(mu)
        return ApproxDP(epsilon, delta) if delta is not None else PureDP(epsilon)
    except (ValueError, TypeError) as exc:
        option = {"rho": "--rho", "mu": "--mu", "delta": "--delta"}.get(
            str(exc).split(" ")[0], "--epsilon")
        fail(f"{option}: {exc}")


def open_ledger(ledger: Path, dataset: str) -> Any:
    """The ledger a run will be charged to: it must exist (only ``budget init`` creates
    one, so a mistyped path never does)."""
    if not Path(ledger).exists():
        raise UserError(f"no ledger at {ledger}; create it with `dpggm budget init {ledger} "
                        f"--dataset {dataset} ...` (a mistyped path never creates one)")
    from dpggm.privacy.ledger import Ledger

    return Ledger(ledger, create=False)


def parse_seed(seed: str | None) -> Any:
    """``"secure"`` (the default) or a non-negative integer."""
    if seed is None or seed == "secure":
        return "secure"
    try:
        value = int(seed)
    except ValueError:
        fail(f"--seed must be an integer >= 0 or 'secure'; got {seed!r}")
    if value < 0:
        fail(f"--seed must be an integer >= 0 or 'secure'; got {seed!r}")
    return value


def load_bounds(bound: str, bound_file: Path | None) -> Any:
    """The declared bounds: ``l2:B`` or ``box:B``, or ``box:per-column`` with a file of one
    bound per column. A file with any other bound is a contradiction and is refused."""
    from dpggm.mechanisms.bounds import parse_bounds

    if not bound:
        fail("--bound is required (l2:B, box:B, or box:per-column with --bound-file): "
             "declare it from domain knowledge, not from the data")
    if bound_file is None:
        if bound.strip() == "box:per-column":
            fail("--bound box:per-column needs --bound-file FILE (one bound per column)")
        return parse_bounds(bound)
    if bound.strip() != "box:per-column":
        fail(f"--bound-file goes with --bound box:per-column; got --bound {bound!r} as well "
             "(give one or the other)")
    if bound_file.is_dir():
        fail(f"--bound-file {bound_file} is a directory; give a CSV file of bounds")
    text = bound_file.read_text(encoding="utf-8")
    values = []
    for token in text.replace("\n", ",").split(","):
        token = token.strip()
        if not token:
            continue
        try:
            values.append(float(token))
        except ValueError:
            fail(f"--bound-file {bound_file}: {token!r} is not a number; give one bound per "
                 "column, comma- or line-separated")
    if not values:
        fail(f"--bound-file {bound_file} holds no bounds")
    return parse_bounds("box:per-column", per_column=values)


EpsilonOpt = Annotated[float | None, typer.Option(
    "--epsilon", help="epsilon (pure DP, or (eps, delta) with --delta)")]
DeltaOpt = Annotated[float | None, typer.Option("--delta", help="delta for (epsilon, delta)-DP")]
RhoOpt = Annotated[float | None, typer.Option("--rho", help="rho for rho-zCDP")]
MuOpt = Annotated[float | None, typer.Option("--mu", help="mu for mu-Gaussian DP")]
QuietOpt = Annotated[bool, typer.Option(
    "--quiet", "-q", help="no progress bars (they are shown on a terminal only, on stderr)")]
