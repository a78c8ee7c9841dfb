"""One engine for the paper experiments: an experiment is a spec, the engine runs it.

An :class:`ExperimentSpec` declares *what* an experiment is -- one or more
:class:`Part` grids (axes, a cell function, repetitions, aggregation), the tables and
figures built from their results, and the files they go to -- and :func:`run` does the
rest, the same way for every experiment: it checks the output names before any work,
loops over the cells and repetitions, records a repetition that the solver could not
solve as a failure rather than a crash, aggregates mean ± standard error over
repetitions, builds the tables (trends are tables computed from the aggregates) and
figures, and writes every output file at once, atomically.

Seeding is the experiments' own (:func:`~dpggm.experiments._common.repetition_rng` keyed
by what identifies a draw), so a cell's numbers do not depend on the loop order and the
existing progress display (one tick per keyed draw) keeps working unchanged.

Privacy: evaluation code on synthetic or public data; nothing here is a release.
"""

from __future__ import annotations

import contextlib
import datetime
import itertools
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm.exceptions import NumericalError
from dpggm.experiments._common import (
    aggregate,
    check_out_dir,
    check_positive_int,
    check_random_seed,
    repetition_rng,
    write_csv,
    write_figure,
)
from dpggm.io import owned_scratch_dir, place
from dpggm.progress import report as report_progress

__all__ = [
    "INTERRUPTED_AFTER_WRITING",
    "Aggregation",
    "Cell",
    "ExperimentSpec",
    "Part",
    "PartResult",
    "Results",
    "SourceRevision",
    "attempt",
    "environment",
    "environment_file",
    "environment_table",
    "run",
    "source_revision",
    "write_outputs",
]


#: The packages whose versions an experiment's results depend on (distribution names).
ENVIRONMENT_PACKAGES = ("numpy", "scipy", "scikit-learn", "pandas", "matplotlib")


def environment() -> dict[str, Any]:
    """What a result depends on besides its code and seed: package versions, Python and
    the machine.

    Returns
    -------
    dict
        ``dpggm`` (the imported package's version), the version of every
        :data:`ENVIRONMENT_PACKAGES` entry (``"not installed"`` when absent), ``python``,
        ``platform``, ``machine``, ``cpu_count`` (logical CPUs of the machine) and
        ``cpus_available`` (those this process may run on; the smaller number when the
        machine is shared or the process is pinned).
    """
    from importlib import metadata

    import dpggm

    info: dict[str, Any] = {"dpggm": dpggm.__version__}
    for name in ENVIRONMENT_PACKAGES:
        try:
            info[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            info[name] = "not installed"
    info["python"] = f"{platform.python_implementation()} {platform.python_version()}"
    info["platform"] = platform.platform()
    info["machine"] = platform.machine()
    info["cpu_count"] = os.cpu_count()
    try:
        info["cpus_available"] = len(os.sched_getaffinity(0))
    except AttributeError:  # not every platform can tell (macOS, Windows)
        info["cpus_available"] = os.cpu_count()
    return info


def _command_line() -> str:
    """The process's command line, with the program named as it is typed (``dpggm``, or
    ``python -m dpggm``) rather than by the installation path."""
    if not sys.argv or not sys.argv[0]:
        return ""
    program = Path(sys.argv[0])
    name = f"python -m {program.parent.name}" if program.name == "__main__.py" else program.name
    return " ".join([name, *sys.argv[1:]])


def environment_table(
    name: str,
    *,
    random_state: int,
    started: float,
    seconds: float,
    source: SourceRevision | None = None,
) -> pd.DataFrame:
    """The ``environment`` table of an experiment: one ``key``/``value`` row each for the
    experiment's name, its seed, its start (UTC, ISO 8601, from the epoch time
    ``started``), its wall-clock ``seconds``, the command line of the process,
    :func:`environment` and the source the run was made from.

    ``source`` is :func:`source_revision` taken when the run started: the code that ran
    is the code at the start, and a commit made while a long run is under way must not be
    credited with it. When the package's files differ at the end from what they were at
    the start, the ``source`` row says so (the run may have imported modules of either).
    Without ``source``, the revision is read now.

    Privacy: an experiment's metadata; a seeded run is an experiment, never a release, so
    its seed belongs here.
    """
    start = datetime.datetime.fromtimestamp(started, tz=datetime.timezone.utc)
    now = source_revision()
    if source is None:
        source = now
    label = source.label
    if source.known and (not now.known or now.content != source.content):
        label += " (the package's source changed during the run)"
    rows = {
        "experiment": name,
        "random_state": random_state,
        "started_utc": start.isoformat(timespec="seconds"),
        "wall_seconds": round(float(seconds), 3),
        "command": _command_line(),
        **environment(),
        # How busy the machine was (other jobs share it): load averages over 1, 5 and 15
        # minutes when the table was made, i.e. at the end of the run.
        "load_average_at_end": _load_average(),
        "source": label,
    }
    return pd.DataFrame({"key": list(rows), "value": [str(v) for v in rows.values()]})


@dataclass(frozen=True)
class SourceRevision:
    """Which source the package was imported from (see :func:`source_revision`).

    Attributes
    ----------
    commit : str
        The checkout's ``HEAD`` (abbreviated), or "unknown" when the package is not part of
        a git checkout's ``HEAD`` (an installed copy).
    content : str
        A digest of the package directory's files as they are on disk (git's object id of
        every file git would track there, committed or not): equal digests, equal code,
        whichever commit holds it and whether or not it is committed.
    changed : bool
        Whether the package directory differs from ``commit``.
    """

    commit: str
    content: str = ""
    changed: bool = False

    @property
    def known(self) -> bool:
        """Whether the package was imported from a git checkout."""
        return self.commit != "unknown"

    @property
    def label(self) -> str:
        """The commit, with "+ changes" when the package differs from it."""
        return self.commit + (" + changes" if self.changed else "")


def source_revision(package: Any = None) -> SourceRevision:
    """The git commit the package directory ``package`` (default: this package's) was
    imported from, a digest of its files as they are now and whether they differ from the
    commit; "unknown" when the directory is not part of a checkout's ``HEAD``."""
    import hashlib
    import subprocess

    package = Path(__file__).resolve().parents[1] if package is None else Path(package)

    def git(*arguments: str, stdin: str | None = None) -> str:
        return subprocess.run(["git", "-C", str(package), *arguments], input=stdin,
                              capture_output=True, text=True, timeout=30,
                              check=True).stdout

    try:
        commit = git("rev-parse", "--short", "HEAD").strip()
        # The directory must be in HEAD: an installed copy inside some other repository
        # (a virtual environment in a project) is not that repository's source.
        git("rev-parse", "--verify", "--quiet", "HEAD:./")
        listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
        files = sorted({name for name in listed.split("\0")
                        if name and (package / name).is_file()})
        # Object ids of the files on disk, computed without writing to the repository.
        # (Absolute paths: --stdin-paths does not resolve them against -C's directory.)
        ids = git("hash-object", "--stdin-paths",
                  stdin="".join(f"{package / name}\n" for name in files)).split()
        changed = bool(git("status", "--porcelain", "--", ".").strip())
        digest = hashlib.sha256()
        for name, object_id in zip(files, ids, strict=True):
            digest.update(f"{name}\0{object_id}\n".encode())
    except (OSError, subprocess.SubprocessError, ValueError):
        return SourceRevision("unknown")
    return SourceRevision(commit, digest.hexdigest(), changed)


def _load_average() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except (AttributeError, OSError):  # not every platform can tell
        return "unknown"


def attempt(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, or None when the solver reports that the problem has
    no solution or broke down numerically (a failed repetition of an experiment, not a
    crash). Every other error propagates."""
    try:
        return function(*args, **kwargs)
    except NumericalError:
        return None


@dataclass(frozen=True)
class Cell:
    """One repetition of one cell, as the cell function sees it.

    Attributes
    ----------
    params : dict
        The axis values of the cell (``{axis name: value}``).
    repetition : int
        Index of the repetition (0-based).
    context : object
        What :attr:`Part.context` built for this cell (None without one).
    random_state : int
        The experiment's seed.
    """

    params: Mapping[str, Any]
    repetition: int
    context: Any
    random_state: int

    def rng(self, *keys: Any) -> np.random.Generator:
        """The generator keyed by ``keys`` (see
        :func:`~dpggm.experiments._common.repetition_rng`): equal keys, equal streams, so
        a sample can be shared by every method of a repetition."""
        return repetition_rng(self.random_state, *keys)


@dataclass(frozen=True)
class Aggregation:
    """Mean ± standard error of ``metrics`` over repetitions per group of ``by`` (see
    :func:`~dpggm.experiments._common.aggregate`), plus ``extra`` per-group reductions
    ``{output column: (input column, "mean" | "sum" | ...)}`` merged beside them; only
    the records for which ``where`` is true enter."""

    by: Sequence[str]
    metrics: Sequence[str]
    extra: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    where: Callable[[pd.DataFrame], Any] | None = None

    def __call__(self, records: pd.DataFrame) -> pd.DataFrame:
        if self.where is not None:
            records = records[self.where(records)]
        by = list(self.by)
        table = aggregate(records, by=by, metrics=list(self.metrics))
        if self.extra:
            extra = records.groupby(by, sort=False).agg(**self.extra).reset_index()
            table = table.merge(extra, on=by, how="left")
        return table


@dataclass(frozen=True)
class Part:
    """One grid of an experiment.

    Attributes
    ----------
    name : str
        Key of the part in :attr:`Results.parts`.
    label : str
        Its row in the timing table.
    axes : mapping
        ``{axis name: values}``; the cells are the product, the first axis outermost. A
        tuple of names takes tuples of values (axes that vary together).
    cell : callable
        ``cell(Cell) -> iterable of dict``: the records of one repetition of one cell.
        The engine adds the axis values and ``repetition`` that a record lacks.
    repetitions : int
        Repetitions of every cell.
    context : callable, optional
        ``context(params) -> object`` built once per distinct value of
        ``context_axes`` (e.g. the model of a synthetic experiment) and handed to the
        cells as :attr:`Cell.context`.
    context_axes : tuple of str
        The axes the context depends on (empty: one context for the whole part).
    on_failure : callable, optional
        ``on_failure(Cell, error) -> iterable of dict``: the records of a repetition
        whose cell function raised :class:`~dpggm.exceptions.NumericalError` (the solver
        found no solution). By default one record with the axis values, the repetition
        and the message in ``failure``; its metrics are missing, so the aggregation
        counts it in ``n_failed``.
    arrange : callable, optional
        ``arrange(list of records) -> DataFrame or list``: reshapes the records before
        they are aggregated (e.g. to lay shared computations out per panel).
    aggregation : Aggregation, optional
        How records become :attr:`PartResult.aggregated`.
    """

    name: str
    axes: Mapping[Any, Sequence[Any]]
    cell: Callable[[Cell], Iterable[Mapping[str, Any]]]
    repetitions: int
    label: str = ""
    context: Callable[[Mapping[str, Any]], Any] | None = None
    context_axes: tuple[str, ...] = ()
    on_failure: Callable[[Cell, NumericalError], Iterable[Mapping[str, Any]]] | None = None
    arrange: Callable[[list[dict[str, Any]]], Any] | None = None
    aggregation: Aggregation | None = None

    def cells(self) -> list[dict[str, Any]]:
        """The axis values of every cell, in loop order."""
        names = list(self.axes)
        cells = []
        for values in itertools.product(*(self.axes[name] for name in names)):
            params: dict[str, Any] = {}
            for name, value in zip(names, values):
                if isinstance(name, tuple):
                    params.update(zip(name, value))
                else:
                    params[name] = value
            cells.append(params)
        return cells


@dataclass(frozen=True)
class ExperimentSpec:
    """An experiment: its parts, the tables and figures built from them, its files.

    Attributes
    ----------
    name : str
        E.g. ``"private_precision"``.
    parts : sequence of Part
        Run in order.
    tables : mapping
        ``{key: builder(Results) -> DataFrame}``, built in order after every part ran (a
        builder may read the tables built before it from ``Results.tables``). Trend
        computations are tables.
    figures : mapping
        ``{key: builder(Results) -> matplotlib Figure}``, built only when writing.
    outputs : mapping
        ``{key of a table or figure: file name}``: what :func:`run` writes into ``out``.
    """

    name: str
    parts: Sequence[Part]
    tables: Mapping[str, Callable[[Results], pd.DataFrame]] = field(default_factory=dict)
    figures: Mapping[str, Callable[[Results], Any]] = field(default_factory=dict)
    outputs: Mapping[str, str] = field(default_factory=dict)


@dataclass
class PartResult:
    """What one part produced: its ``records`` (one row per record), ``aggregated``
    (None without an aggregation), the ``contexts`` built (keyed by the tuple of
    context-axis values) and the wall-clock ``seconds``."""

    records: pd.DataFrame
    aggregated: pd.DataFrame | None
    contexts: dict[tuple, Any]
    seconds: float


@dataclass
class Results:
    """Everything a run produced; ``tables`` ends with ``"timing"`` (seconds per part)
    and ``"environment"`` (see :func:`environment_table`: versions, machine, start and
    wall-clock seconds of the whole run)."""

    spec: ExperimentSpec
    parts: dict[str, PartResult]
    tables: dict[str, pd.DataFrame]


def _run_part(
    part: Part,
    random_state: int,
    progress: Callable[[int, int], None] | None,
    done: int,
    total: int,
    task: str = "repetitions",
) -> tuple[PartResult, int]:
    started = time.perf_counter()
    contexts: dict[tuple, Any] = {}
    records: list[dict[str, Any]] = []
    for params in part.cells():
        context = None
        if part.context is not None:
            key = tuple(params[name] for name in part.context_axes)
            if key not in contexts:
                contexts[key] = part.context(params)
            context = contexts[key]
        for repetition in range(part.repetitions):
            cell = Cell(params, repetition, context, random_state)
            try:
                produced = list(part.cell(cell))
            except NumericalError as error:
                produced = (
                    list(part.on_failure(cell, error))
                    if part.on_failure is not None
                    else [{"failure": str(error)}]
                )
            given = {**params, "repetition": repetition}
            for record in produced:
                # The record's own keys keep their order; missing axis values follow.
                records.append({**record, **{k: v for k, v in given.items() if k not in record}})
            done += 1
            if progress is not None:
                progress(done, total)
            report_progress(task, done, total)
    arranged = part.arrange(records) if part.arrange is not None else records
    frame = arranged if isinstance(arranged, pd.DataFrame) else pd.DataFrame(arranged)
    aggregated = None
    if part.aggregation is not None:
        # A metric that failed in every repetition never appears in a record.
        for metric in part.aggregation.metrics:
            if metric not in frame:
                frame[metric] = np.nan
        aggregated = part.aggregation(frame)
    return PartResult(frame, aggregated, contexts, time.perf_counter() - started), done


def run(
    spec: ExperimentSpec,
    *,
    random_state: int = 0,
    out: Any = None,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Results:
    """Run ``spec``: every part, then its tables, then (with ``out``) its figures and files.

    Parameters
    ----------
    spec : ExperimentSpec
    random_state : int, default=0
        Seed of the whole experiment (an integer >= 0).
    out : path, optional
        Directory for the files of ``spec.outputs`` and for
        ``<spec.name>_environment.csv`` (the ``environment`` table); nothing is written
        without it.
    overwrite : bool, default=False
        Replace existing files; otherwise an existing one is an error, raised before any
        computation.
    progress : callable, optional
        ``progress(done, total)`` after every repetition of every cell (the same figures
        also go to :func:`dpggm.progress.report`, for the command line's display).

    Returns
    -------
    Results

    Privacy: evaluation code; a seeded run is an experiment, never a release.
    """
    random_state = check_random_seed(random_state)
    unknown = [key for key in spec.outputs if key not in spec.tables and key not in spec.figures]
    if unknown:
        raise ValueError(f"outputs name no table or figure of {spec.name}: {unknown!r}")
    for part in spec.parts:
        check_positive_int(part.repetitions, name=f"repetitions of part {part.name!r}")
    names = [*spec.outputs.values(), environment_file(spec.name)]
    directory = check_out_dir(out, names, overwrite=overwrite)
    started_at, started = time.time(), time.perf_counter()
    source = source_revision()
    total = sum(len(part.cells()) * part.repetitions for part in spec.parts)
    results = Results(spec, {}, {})
    done = 0
    for part in spec.parts:
        results.parts[part.name], done = _run_part(part, random_state, progress, done, total,
                                                   task=f"{spec.name}: repetitions")
    for key, build in spec.tables.items():
        results.tables[key] = build(results)
    results.tables["timing"] = pd.DataFrame(
        [{"part": part.label or part.name, "seconds": results.parts[part.name].seconds}
         for part in spec.parts]
    )
    # The figures are drawn while writing, so the time is that of the computation.
    results.tables["environment"] = environment_table(
        spec.name, random_state=random_state, started=started_at,
        seconds=time.perf_counter() - started, source=source,
    )
    if directory is not None:
        _write_outputs(results, directory, overwrite=overwrite)
    return results


def environment_file(name: str) -> str:
    """The file name of experiment ``name``'s environment table."""
    return f"{name}_environment.csv"


def _write_outputs(results: Results, directory: Path, *, overwrite: bool) -> None:
    spec = results.spec
    files: dict[str, Any] = {}
    for key, name in spec.outputs.items():
        if key in results.tables:
            files[name] = results.tables[key]
        else:
            files[name] = lambda build=spec.figures[key]: build(results)
    files[environment_file(spec.name)] = results.tables["environment"]
    write_outputs(directory, files, overwrite=overwrite, label=spec.name)


def write_outputs(
    directory: Any, files: Mapping[str, Any], *, overwrite: bool = False, label: str = "outputs"
) -> None:
    """Write a set of files into ``directory``: all of them or none.

    Every file is rendered into a hidden staging directory beside the targets, then moved
    in; without ``overwrite`` a target that appeared meanwhile undoes the files already
    moved. A staging directory left by a run that was killed is removed by the next one
    (:func:`dpggm.io.owned_scratch_dir`).

    Parameters
    ----------
    directory : path
        An existing directory (see :func:`~dpggm.experiments._common.check_out_dir`).
    files : mapping
        ``{file name: content}``; a DataFrame is written as CSV, a matplotlib Figure as
        PNG, and a callable without arguments is called (inside the staging step, so
        that a failure leaves nothing behind) for one of the two.
    overwrite : bool, default=False
        Replace existing files; otherwise an existing one is a ``FileExistsError``.
    label : str
        Part of the staging directory's name.
    """
    directory = Path(directory)
    placed: list[Path] = []
    with owned_scratch_dir(directory, prefix=f".{label}.") as staging:
        for name, content in files.items():
            if callable(content):
                content = content()
            if isinstance(content, pd.DataFrame):
                write_csv(content, staging / name)
            else:
                write_figure(content, staging / name)
        # An interrupt (Ctrl-C) while the files are moved in would leave some new files
        # beside old ones: it takes effect once every file is in place.
        with _interrupt_deferred():
            for name in files:
                target = directory / name
                try:
                    # One step per file; without overwrite a target that appeared meanwhile
                    # is never clobbered (and undoes the files already moved).
                    place(staging / name, target, overwrite=overwrite)
                except FileExistsError:
                    for path in placed:
                        path.unlink(missing_ok=True)
                    raise
                placed.append(target)


#: The message of the KeyboardInterrupt that :func:`write_outputs` raises when the
#: interrupt came while it moved the files in: they are all written.
INTERRUPTED_AFTER_WRITING = "interrupted once every file was in place"


@contextlib.contextmanager
def _interrupt_deferred() -> Iterator[None]:
    """Hold back SIGINT inside the block and raise its KeyboardInterrupt at the end
    (only the main thread receives signals; elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: received.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt(INTERRUPTED_AFTER_WRITING)
