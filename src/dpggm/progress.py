"""Progress of long work: a hook the library calls and a front end may render.

Library code that runs for a while (a pass over a file, the rounds of an adaptive
estimator, the repetitions of an experiment) calls :func:`report`::

    from dpggm import progress

    progress.report("reading data.csv", done=bytes_read, total=file_size)

Nothing happens unless a caller installed a reporter for the current context::

    with progress.reporting(lambda task, done, total: print(task, done, total)):
        estimator.fit(path)

A reporter receives the task's name (a short phrase, the same for every call of one
task), how much is done and the total (``None`` when unknown), in any unit the task
chooses. It must be cheap and must not raise; the command line renders it with Rich on a
terminal only. This module imports nothing beyond the standard library, so every layer
may use it.

Privacy: progress describes the work (bytes of a file, rounds spent of a public budget,
repetitions of an experiment), never a value computed from the private records.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Reporter", "report", "reporting"]

#: ``reporter(task, done, total)``: see the module docstring.
Reporter = Callable[[str, float, "float | None"], None]

_reporter: contextvars.ContextVar[Reporter | None] = contextvars.ContextVar(
    "dpggm_progress_reporter", default=None
)


def report(task: str, done: float, total: float | None = None) -> None:
    """Tell the current reporter (if any) that ``done`` of ``total`` of ``task`` is done."""
    reporter = _reporter.get()
    if reporter is not None:
        reporter(task, done, total)


@contextmanager
def reporting(reporter: Reporter | None) -> Iterator[None]:
    """Within the block, :func:`report` calls ``reporter`` (``None``: nobody)."""
    token = _reporter.set(reporter)
    try:
        yield
    finally:
        _reporter.reset(token)
