"""Persistent, multi-process privacy-budget ledger backed by SQLite.

A :class:`Ledger` is a file that records, per dataset, the declared total privacy budget
and every spend charged against it. :meth:`Ledger.spend` checks and records in one
transaction, so any number of processes (on one machine) may spend against the same
dataset at once and the declared total is never exceeded.

Exactness
    Costs are accumulated as exact rationals (:class:`fractions.Fraction` of the floats'
    binary values, see :func:`~dpggm.privacy.budgets.exact_cost`) and stored as
    ``"numerator/denominator"`` text, because Python integers outgrow SQLite's 64-bit
    integers. No running total is ever a float: a spend whose exact cost takes the exact
    sum above the total's exact cost is refused even when the floating-point sum would
    round it back under the total (and a spend that fits exactly is accepted even when
    the floating-point sum would round it above). Each dataset row also keeps the exact
    running total; every operation recomputes the sum of the history and refuses to go on
    (:class:`LedgerIntegrityError`) if the two disagree.

Reported values
    :meth:`Ledger.remaining` is rounded *down* to floats (spending exactly ``remaining``
    always succeeds) and :meth:`Ledger.spent` is rounded *up* (the reported loss is never
    understated); the exact values are available from :meth:`Ledger.exact_spent`. The
    check, the exact sum and the rounding are those of
    :class:`~dpggm.privacy.accountant.PrivacyAccountant` (one core,
    :func:`~dpggm.privacy.accountant.charge`).

What is charged
    A release is charged at ``privacy_.budget`` -- what it guarantees, which may be a zCDP
    budget even when a pure-DP or GDP total was asked for -- and only when its validity is
    ``"valid"``: ``Ledger.spend(dataset, estimator.privacy_)``. Every dataset stores the
    neighbouring relation its total is declared for (``"replace"`` by default), and a
    spend under the other relation is refused: the two are not comparable units.

Schema versions
    Version 2 added the neighbouring relation. A version-1 file is refused with a message
    until it is migrated explicitly (:meth:`Ledger.migrate`, ``dpggm budget migrate``):
    the user states under which relation the old spends were made, and the migration is
    recorded in the file's notes. Nothing is assumed silently.

Concurrency
    Every spend runs in a ``BEGIN IMMEDIATE`` transaction: the write lock is taken before
    anything is read, so check-then-record is serialised across processes and a
    read-then-upgrade deadlock cannot occur. The write lock is polled at short random
    intervals (at most a few milliseconds) rather than through SQLite's busy handler,
    whose sleeps grow to 100 ms and let a lucky process re-take the lock again and again
    while others starve (seconds-long waits with a dozen spenders). Once the lock is held,
    the busy timeout lets the commit wait for readers to finish. A transaction that still
    meets a busy database is rolled back and retried until ``timeout`` seconds have passed
    (then :class:`TimeoutError`).
    Every call opens its own connection and closes it before returning, so a connection
    is never shared between processes (fork-safe) or threads, and a :class:`Ledger` can be
    pickled and sent to a worker process.

Journal mode and durability
    The ledger uses SQLite's default rollback journal (``journal_mode=DELETE``) with
    ``synchronous=FULL``, rather than write-ahead logging. Spends are rare and tiny, so
    WAL's concurrent readers buy nothing here, while the rollback journal (i) leaves a
    single self-contained file at rest (a ledger copied without its ``-wal`` file could
    silently lose recorded spends, which would later allow an overspend), (ii) needs no
    shared-memory ``-shm`` file, and (iii) does not make new connections fail with
    ``SQLITE_BUSY`` while the last connection of a WAL database checkpoints, which with
    one connection per call would happen constantly. ``synchronous=FULL`` syncs the
    journal and the database at every commit, so a committed spend survives a power cut,
    and a process killed at any point leaves either the whole spend or none of it (a hot
    journal is rolled back by the next connection). Like any SQLite database, the ledger
    must live on a local file system: network file systems do not implement the locks
    reliably.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import re
import socket
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, NoReturn, TypeVar

from dpggm.exceptions import IncompatibleBudgetError
from dpggm.privacy.accountant import (
    charge,
    check_neighbors,
    form_for,
    guarantee_forms,
    reported_remaining,
    reported_spent,
)
from dpggm.privacy.budgets import (
    GDP,
    ZCDP,
    ApproxDP,
    Budget,
    NonPrivate,
    PureDP,
    exact_cost,
)
from dpggm.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "Ledger",
    "LedgerFormatError",
    "LedgerSink",
    "LedgerIntegrityError",
    "SpendRecord",
    "UnknownDatasetError",
]

APPLICATION = "dpggm-privacy-ledger"
SCHEMA_VERSION = 2
# Stored in the SQLite header (bytes 68-71) so that tools such as `file` can recognise
# the format: ASCII "DPGL".
APPLICATION_ID = 0x4450474C

_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26

_SCHEMA = f"""
CREATE TABLE ledger_schema (
    application TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_utc TEXT NOT NULL
);
CREATE TABLE datasets (
    name TEXT PRIMARY KEY NOT NULL,
    notion TEXT NOT NULL,
    total_json TEXT NOT NULL,
    spent_cost TEXT NOT NULL,
    spend_count INTEGER NOT NULL CHECK (spend_count >= 0),
    description TEXT NOT NULL,
    declared_utc TEXT NOT NULL,
    neighbors TEXT NOT NULL DEFAULT 'replace' CHECK (neighbors IN ('replace', 'add-remove'))
);
CREATE TABLE ledger_notes (
    time_utc TEXT NOT NULL,
    note TEXT NOT NULL
);
CREATE TABLE spends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset TEXT NOT NULL REFERENCES datasets (name),
    sequence INTEGER NOT NULL CHECK (sequence >= 1),
    mechanism TEXT NOT NULL,
    budget_json TEXT NOT NULL,
    cost TEXT NOT NULL,
    time_utc TEXT NOT NULL,
    details_json TEXT NOT NULL,
    pid INTEGER,
    host TEXT,
    UNIQUE (dataset, sequence)
);
CREATE TRIGGER spends_no_update BEFORE UPDATE ON spends
BEGIN SELECT RAISE(ABORT, 'the spends of a privacy ledger are append-only'); END;
CREATE TRIGGER spends_no_delete BEFORE DELETE ON spends
BEGIN SELECT RAISE(ABORT, 'the spends of a privacy ledger are append-only'); END;
CREATE TRIGGER datasets_no_delete BEFORE DELETE ON datasets
BEGIN SELECT RAISE(ABORT, 'a declared dataset cannot be removed from a privacy ledger'); END;
CREATE TRIGGER datasets_total_fixed BEFORE UPDATE OF name, notion, total_json, neighbors
ON datasets
BEGIN SELECT RAISE(ABORT, 'the total of a declared dataset cannot be changed'); END;
PRAGMA application_id = {APPLICATION_ID};
"""

_T = TypeVar("_T")
_RATIONAL = re.compile(r"([0-9]+)/([0-9]+)")


class LedgerFormatError(ValueError):
    """The file is not a dpggm privacy ledger, or was written by an unsupported version."""


class LedgerIntegrityError(RuntimeError):
    """The stored records of a ledger contradict each other (the file was altered or damaged)."""


class UnknownDatasetError(KeyError):
    """No dataset of that name has been declared in the ledger."""

    def __str__(self) -> str:
        # KeyError would print the repr of its argument, quoting the whole message.
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class SpendRecord:
    """One recorded spend.

    Attributes
    ----------
    dataset : str
        The dataset charged.
    sequence : int
        Position of the spend in the dataset's history, from 1.
    mechanism : str
        What ran.
    budget : Budget
        The budget as it was passed to :meth:`Ledger.spend`.
    cost : tuple of Fraction
        Its exact additive cost in the notion of the dataset's total.
    time : datetime
        When it was recorded (timezone-aware, UTC).
    details : dict
        Caller-supplied JSON details.
    pid : int or None
        Process id of the spender.
    host : str or None
        Host name of the spender.
    """

    dataset: str
    sequence: int
    mechanism: str
    budget: Budget
    cost: tuple[Fraction, ...]
    time: datetime
    details: dict[str, Any]
    pid: int | None
    host: str | None


@dataclass(frozen=True)
class _DatasetState:
    name: str
    total: Budget
    neighbors: str
    limit: tuple[Fraction, ...]
    spent: tuple[Fraction, ...]
    count: int
    spent_text: str


def _encode_cost(cost: tuple[Fraction, ...]) -> str:
    return json.dumps([f"{c.numerator}/{c.denominator}" for c in cost])


def _parse_fraction(text: Any) -> Fraction:
    match = _RATIONAL.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not a non-negative rational 'numerator/denominator': {text!r}")
    numerator, denominator = int(match[1]), int(match[2])
    if denominator == 0:
        raise ValueError(f"zero denominator in {text!r}")
    return Fraction(numerator, denominator)


def _decode_cost(text: str, *, width: int, where: str) -> tuple[Fraction, ...]:
    try:
        items = json.loads(text)
        if not isinstance(items, list) or len(items) != width:
            raise ValueError(f"expected a list of {width} rationals; got {text!r}")
        return tuple(_parse_fraction(item) for item in items)
    except ValueError as exc:
        raise LedgerIntegrityError(f"malformed exact cost in {where}: {exc}") from exc


_NOTIONS: dict[str, type[Budget]] = {cls.notion: cls for cls in (PureDP, ApproxDP, ZCDP, GDP)}


def _budget_to_json(budget: Budget) -> str:
    # The file format is spelled out here rather than borrowed from Budget.to_dict so that
    # a ledger stays readable whatever that method's future output.
    fields = {field.name: getattr(budget, field.name) for field in dataclasses.fields(budget)}
    return json.dumps({"notion": budget.notion, **fields}, allow_nan=False)


def _budget_from_json(text: str) -> Budget:
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("notion") not in _NOTIONS:
        raise ValueError(f"not a stored privacy budget: {text!r}")
    cls = _NOTIONS[data["notion"]]
    names = [field.name for field in dataclasses.fields(cls)]
    if sorted(data) != sorted(["notion", *names]):
        raise ValueError(f"a {cls.__name__} budget has the fields {names}; got {text!r}")
    return cls(**{name: data[name] for name in names})


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _check_dataset(dataset: Any) -> str:
    if not isinstance(dataset, str) or not dataset.strip():
        raise TypeError(f"dataset must be a non-empty string; got {dataset!r}")
    return dataset


def _check_budget(budget: Any, *, name: str, dataset: str | None = None) -> Budget:
    if not isinstance(budget, Budget) or type(budget) is Budget:
        raise TypeError(
            f"{name} must be a PureDP, ApproxDP, ZCDP or GDP budget; "
            f"got {type(budget).__name__} {budget!r}"
        )
    if isinstance(budget, NonPrivate):
        target = f" to dataset {dataset!r}" if dataset is not None else ""
        raise IncompatibleBudgetError(
            f"{name} must be a PureDP, ApproxDP, ZCDP or GDP budget; a NonPrivate run "
            f"carries no privacy guarantee and cannot be charged{target}"
        )
    return budget


def _check_json_keys(value: Any, path: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"details must have string keys (it is stored as JSON); "
                    f"got key {key!r} at {path}"
                )
            _check_json_keys(item, f"{path}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json_keys(item, f"{path}[{index}]")


def _json_scalar(value: Any) -> Any:
    # numpy scalars and 0-d arrays expose .item(); anything else is refused.
    if getattr(value, "shape", None) == () and callable(getattr(value, "item", None)):
        return value.item()
    raise TypeError(f"{type(value).__name__} {value!r} is not JSON-serialisable")


def _encode_details(details: Any) -> str:
    if details is None:
        return "{}"
    if not isinstance(details, dict):
        raise TypeError(f"details must be a dict or None; got {type(details).__name__}")
    _check_json_keys(details, "details")
    try:
        return json.dumps(details, allow_nan=False, default=_json_scalar)
    except TypeError as exc:
        raise TypeError(f"details must be JSON-serialisable: {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"details must not contain NaN or infinite numbers: {exc}") from exc


def _error_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def _is_busy(exc: sqlite3.Error) -> bool:
    code = _error_code(exc)
    if code is not None:
        return code in (_SQLITE_BUSY, _SQLITE_LOCKED)
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _rollback_quietly(conn: sqlite3.Connection) -> None:
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        # The transaction may already have been rolled back by SQLite itself; the
        # connection is closed right after, which discards any remnant.
        pass


class Ledger:
    """Persistent privacy-budget ledger in an SQLite file, safe for concurrent processes.

    Parameters
    ----------
    path : str or os.PathLike
        The ledger file. It is created (with its schema) if it does not exist and
        ``create`` is true; an existing file must be a dpggm ledger.
    create : bool, default True
        Whether a missing file may be created.
    timeout : float, default 30.0
        Seconds to keep waiting for, and retrying on, a database locked by another
        process before raising :class:`TimeoutError`.

    Raises
    ------
    FileNotFoundError
        The file (or its directory) does not exist and cannot or may not be created.
    LedgerFormatError
        The file exists but is not a dpggm ledger of a supported schema version.

    Notes
    -----
    Privacy: the ledger releases nothing about any data and consumes no budget; it only
    refuses spends that would exceed the declared totals. It is an accounting record,
    not an access control: anyone who can write the file can alter it, and the checks
    only detect inconsistent alterations.

    Each call opens, uses and closes its own connection, so one :class:`Ledger` may be
    used from several threads, inherited by forked processes or pickled to spawned ones.
    Using it as a context manager marks it closed on exit.

    Examples
    --------
    >>> import os, tempfile
    >>> from dpggm.privacy import ZCDP, PureDP
    >>> path = os.path.join(tempfile.mkdtemp(), "budget.sqlite")
    >>> with Ledger(path) as ledger:
    ...     ledger.declare("census", ZCDP(1.0))
    ...     _ = ledger.spend("census", ZCDP(0.25), mechanism="gaussian")
    ...     _ = ledger.spend("census", PureDP(1.0), mechanism="laplace")
    ...     ledger.remaining("census")
    True
    ZCDP(rho=0.25)
    """

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = True, timeout: float = 30.0
    ) -> None:
        try:
            raw_path = os.fspath(path)
        except TypeError:
            raise TypeError(f"path must be a str or os.PathLike; got {path!r}") from None
        if isinstance(raw_path, bytes):
            raw_path = os.fsdecode(raw_path)
        if not raw_path:
            raise ValueError("path must name a file; got an empty string")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"timeout must be a number of seconds; got {timeout!r}")
        if not math.isfinite(timeout) or timeout <= 0:
            raise ValueError(f"timeout must be a finite number > 0; got {timeout!r}")
        # Absolute, so that a later chdir (for example in a worker) opens the same file.
        self._path = os.path.abspath(raw_path)
        self._timeout = float(timeout)
        self._closed = False
        self._open(create=bool(create))

    # ------------------------------------------------------------------ plumbing

    @property
    def path(self) -> str:
        """Absolute path of the ledger file."""
        return self._path

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Mark the ledger closed. No connection outlives a call, so nothing else is held."""
        self._closed = True

    def __enter__(self) -> Ledger:
        self._ensure_open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = ", closed" if self._closed else ""
        return f"Ledger({self._path!r}{state})"

    def _ensure_open(self) -> None:
        if self._closed:
            raise ValueError(f"the ledger {self._path!r} is closed")

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self._path, timeout=self._timeout, isolation_level=None, check_same_thread=True
            )
        except sqlite3.OperationalError as exc:
            directory = os.path.dirname(self._path)
            if not os.path.isdir(directory):
                raise FileNotFoundError(
                    f"cannot open the ledger {self._path!r}: directory {directory!r} does not exist"
                ) from exc
            if os.path.isdir(self._path):
                raise IsADirectoryError(
                    f"cannot open the ledger {self._path!r}: it is a directory"
                ) from exc
            raise
        try:
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            conn.close()
            self._reraise(exc)
        except BaseException:
            conn.close()
            raise
        return conn

    def _transact(
        self,
        work: Callable[[sqlite3.Connection], _T],
        *,
        write: bool,
        check_schema: bool = True,
    ) -> _T:
        """Run ``work`` in one transaction on a fresh connection, retrying while busy."""
        self._ensure_open()
        deadline = time.monotonic() + self._timeout
        attempt = 0
        while True:
            conn = self._connect()
            try:
                try:
                    if write:
                        self._begin_immediate(conn, deadline)
                    else:
                        conn.execute("BEGIN DEFERRED")
                    if check_schema:
                        self._check_schema(conn)
                    result = work(conn)
                    conn.execute("COMMIT")
                    return result
                except BaseException:
                    _rollback_quietly(conn)
                    raise
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    self._reraise(exc)
                if time.monotonic() >= deadline:
                    raise self._timed_out() from exc
            except sqlite3.DatabaseError as exc:
                self._reraise(exc)
            finally:
                conn.close()
            attempt += 1
            # Randomised back-off keeps retrying processes from waking in lock-step.
            pause = min(0.002 * 2 ** min(attempt, 6), 0.1) * (0.5 + random.random())
            time.sleep(max(0.0, min(pause, deadline - time.monotonic())))

    def _begin_immediate(self, conn: sqlite3.Connection, deadline: float) -> None:
        conn.execute("PRAGMA busy_timeout = 0")
        attempt = 0
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise self._timed_out() from exc
            attempt += 1
            time.sleep(random.uniform(0.0, 0.0005 * 2 ** min(attempt, 3)))
        # The commit may still have to wait for readers to release their shared locks.
        wait_ms = max(1000, int(1000 * (deadline - time.monotonic())))
        conn.execute(f"PRAGMA busy_timeout = {wait_ms}")

    def _timed_out(self) -> TimeoutError:
        return TimeoutError(
            f"the ledger {self._path!r} stayed locked by another connection for {self._timeout:g} s"
        )

    def _reraise(self, exc: sqlite3.DatabaseError) -> NoReturn:
        """Raise ``exc``, as a ledger error where SQLite says the file is not usable."""
        code = _error_code(exc)
        message = str(exc).lower()
        if code == _SQLITE_NOTADB or "not a database" in message:
            raise LedgerFormatError(
                f"{self._path!r} is not a dpggm privacy ledger (not an SQLite database)"
            ) from exc
        if code == _SQLITE_CORRUPT or "malformed" in message:
            raise LedgerIntegrityError(f"the ledger {self._path!r} is damaged: {exc}") from exc
        raise exc

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        has_table = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'ledger_schema'"
        ).fetchone()[0]
        if not has_table:
            raise LedgerFormatError(
                f"{self._path!r} is an SQLite database but not a dpggm privacy ledger "
                "(no ledger_schema table)"
            )
        rows = conn.execute("SELECT application, version FROM ledger_schema").fetchall()
        if len(rows) != 1 or rows[0][0] != APPLICATION:
            raise LedgerFormatError(
                f"{self._path!r} is not a dpggm privacy ledger (ledger_schema holds {rows!r})"
            )
        version = rows[0][1]
        if version == 1:
            raise LedgerFormatError(
                f"the ledger {self._path!r} has schema version 1, which does not record the "
                "neighbouring relation of each total; migrate it once with `dpggm budget "
                "migrate LEDGER --neighbors replace` (or add-remove: the relation its spends "
                "were made under), or Ledger.migrate(path, neighbors=...)"
            )
        if version != SCHEMA_VERSION:
            raise LedgerFormatError(
                f"the ledger {self._path!r} has schema version {version!r}; this version of "
                f"dpggm reads schema version {SCHEMA_VERSION} only"
            )

    def _open(self, *, create: bool) -> None:
        exists = os.path.exists(self._path)
        if not exists and not create:
            raise FileNotFoundError(f"no ledger file at {self._path!r} (and create=False)")
        if exists and os.path.isfile(self._path) and os.path.getsize(self._path) > 0:
            # SQLite treats a file shorter than its header as an empty database and would
            # write a ledger over it: check the magic string first.
            with open(self._path, "rb") as fh:
                if fh.read(16) != b"SQLite format 3\x00":
                    raise LedgerFormatError(
                        f"{self._path!r} is not a dpggm privacy ledger (not an SQLite database)"
                    )

        def table_names(conn: sqlite3.Connection) -> set[str]:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            return {row[0] for row in rows}

        if not self._transact(table_names, write=False, check_schema=False):
            if not create:
                raise LedgerFormatError(
                    f"{self._path!r} is an empty file, not a dpggm privacy ledger"
                )

            def initialise(conn: sqlite3.Connection) -> None:
                # Another process may have initialised the file since it was inspected.
                if table_names(conn):
                    return
                for statement in _split_sql(_SCHEMA):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO ledger_schema (application, version, created_utc) "
                    "VALUES (?, ?, ?)",
                    (APPLICATION, SCHEMA_VERSION, _utc_now()),
                )

            self._transact(initialise, write=True, check_schema=False)
        self._transact(lambda conn: None, write=False)

    def _known_names(self, conn: sqlite3.Connection) -> list[str]:
        return [row[0] for row in conn.execute("SELECT name FROM datasets ORDER BY name")]

    def _unknown(self, conn: sqlite3.Connection, dataset: str) -> UnknownDatasetError:
        names = self._known_names(conn)
        shown = names if len(names) <= 20 else [*names[:20], "..."]
        return UnknownDatasetError(
            f"dataset {dataset!r} has not been declared in the ledger {self._path!r}; "
            f"declared datasets: {shown}"
        )

    def _state(self, conn: sqlite3.Connection, dataset: str) -> _DatasetState:
        row = conn.execute(
            "SELECT total_json, spent_cost, spend_count, neighbors FROM datasets WHERE name = ?",
            (dataset,),
        ).fetchone()
        if row is None:
            raise self._unknown(conn, dataset)
        total_json, spent_text, count, neighbors = row
        try:
            total = _budget_from_json(total_json)
        except (ValueError, TypeError, KeyError) as exc:
            raise LedgerIntegrityError(
                f"the total of dataset {dataset!r} is malformed: {total_json!r}"
            ) from exc
        notion = type(total)
        limit = exact_cost(total, notion)
        spent = _decode_cost(spent_text, width=len(limit), where=f"dataset {dataset!r}")

        history_sum = [Fraction(0)] * len(limit)
        sequences = []
        for sequence, cost_text in conn.execute(
            "SELECT sequence, cost FROM spends WHERE dataset = ? ORDER BY sequence", (dataset,)
        ):
            sequences.append(sequence)
            cost = _decode_cost(
                cost_text, width=len(limit), where=f"spend {sequence} of {dataset!r}"
            )
            history_sum = [h + c for h, c in zip(history_sum, cost)]
        if sequences != list(range(1, count + 1)):
            raise LedgerIntegrityError(
                f"dataset {dataset!r} records {count} spends but its history holds "
                f"{len(sequences)} (sequence numbers {sequences[:5]}...)"
            )
        if tuple(history_sum) != spent:
            raise LedgerIntegrityError(
                f"the running total of dataset {dataset!r} ({_encode_cost(spent)}) differs "
                f"from the sum of its history ({_encode_cost(tuple(history_sum))})"
            )
        if any(s > lim for s, lim in zip(spent, limit)):
            raise LedgerIntegrityError(
                f"dataset {dataset!r} has spent more than its declared total {total}"
            )
        return _DatasetState(dataset, total, neighbors, limit, spent, count, spent_text)

    # ------------------------------------------------------------------ public API

    def declare(
        self,
        dataset: str,
        total: Budget,
        *,
        description: str = "",
        neighbors: str = "replace",
    ) -> bool:
        """Declare the total privacy budget of ``dataset``.

        Parameters
        ----------
        dataset : str
            Name of the dataset.
        total : Budget
            The total that may ever be spent on it (PureDP, ApproxDP, ZCDP or GDP).
            Spends of other notions are converted into this notion where that is sound.
        description : str, default ""
            Free text stored with the declaration.
        neighbors : {"replace", "add-remove"}, default "replace"
            The neighbouring relation the total is stated for; spends under the other
            relation are refused.

        Returns
        -------
        bool
            True if the dataset was declared now; False if it already had exactly this
            total and relation (re-declaring is then a no-op and ``description`` is not
            changed, so every process of a job may declare before spending).

        Raises
        ------
        ValueError
            The dataset was already declared with a different total or relation: a
            declared total is permanent, since raising it would invalidate the guarantee
            of past releases.

        Notes
        -----
        Privacy: consumes no budget.
        """
        name = _check_dataset(dataset)
        total = _check_budget(total, name="total")
        relation = check_neighbors(neighbors)
        if not isinstance(description, str):
            raise TypeError(f"description must be a string; got {type(description).__name__}")
        total_json = _budget_to_json(total)
        zero = _encode_cost(tuple(Fraction(0) for _ in exact_cost(total, type(total))))

        def work(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                "SELECT total_json, neighbors FROM datasets WHERE name = ?", (name,)
            ).fetchone()
            if row is not None:
                existing = _budget_from_json(row[0])
                if type(existing) is type(total) and existing == total and row[1] == relation:
                    return False
                raise ValueError(
                    f"dataset {name!r} is already declared with total {existing} for "
                    f"{row[1]!r} neighbours; it cannot be re-declared with total {total} for "
                    f"{relation!r} neighbours"
                )
            conn.execute(
                "INSERT INTO datasets (name, notion, total_json, spent_cost, spend_count, "
                "description, declared_utc, neighbors) VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
                (name, total.notion, total_json, zero, description, _utc_now(), relation),
            )
            return True

        return self._transact(work, write=True)

    def _amount(
        self, dataset: str, spend: Budget | PrivacyGuarantee, neighbors: str | None
    ) -> tuple[tuple[Budget, ...], str | None]:
        """The budgets the spend may be charged at (a guarantee's forms, the first that
        converts into the dataset's notion is used) and the relation they are stated
        under (None: unstated)."""
        if isinstance(spend, PrivacyGuarantee):
            if neighbors is not None and neighbors != spend.neighbors:
                raise ValueError(
                    f"neighbors={neighbors!r} contradicts the guarantee's {spend.neighbors!r}"
                )
            # The relation is checked against the stored one inside the transaction.
            forms = guarantee_forms(spend, neighbors=None, what=f"dataset {dataset!r}")
            return forms, spend.neighbors
        budget = _check_budget(spend, name="budget", dataset=dataset)
        return (budget,), None if neighbors is None else check_neighbors(neighbors)

    @staticmethod
    def _check_relation(state: _DatasetState, relation: str | None) -> None:
        if relation is not None and relation != state.neighbors:
            raise IncompatibleBudgetError(
                f"dataset {state.name!r}: its total is declared for {state.neighbors!r} "
                f"neighbours; a spend under {relation!r} neighbours cannot be added to it"
            )

    def spend(
        self,
        dataset: str,
        budget: Budget | PrivacyGuarantee,
        *,
        mechanism: str | None = None,
        details: dict[str, Any] | None = None,
        neighbors: str | None = None,
    ) -> SpendRecord:
        """Charge a spend to ``dataset`` if it fits, atomically across processes.

        Parameters
        ----------
        dataset : str
            A declared dataset.
        budget : PrivacyGuarantee or Budget
            Preferably the release's guarantee (``estimator.privacy_``): it is charged at
            its ``budget``, refused unless its validity is ``"valid"``, and refused if its
            relation differs from the dataset's. A bare budget is what a mechanism costs;
            it is taken as stated under ``neighbors`` (default: the dataset's relation --
            the caller vouches for it). Either is converted exactly into the notion of the
            dataset's total (pure ``epsilon``-DP counts ``epsilon**2 / 2`` against a zCDP
            total; ``mu``-GDP counts ``mu**2 / 2``).
        mechanism : str, optional
            Name of what ran; required with a bare budget, defaults to the guarantee's.
        details : dict, optional
            JSON-serialisable details stored with the record.
        neighbors : {"replace", "add-remove"}, optional
            The relation of a bare budget.

        Returns
        -------
        SpendRecord
            The record written.

        Raises
        ------
        BudgetExceededError
            The exact sum of the spends would exceed the exact total; nothing is recorded.
            A spend that brings the sum exactly to the total succeeds.
        IncompatibleBudgetError
            The spend cannot be soundly accounted in the total's notion, is under another
            neighbouring relation, or is :class:`~dpggm.privacy.budgets.NonPrivate`;
            nothing is recorded.
        InvalidGuaranteeError
            The guarantee's validity is not ``"valid"``; nothing is recorded.
        UnknownDatasetError
            ``dataset`` has not been declared.
        TimeoutError
            Other processes kept the ledger locked for longer than ``timeout``.

        Notes
        -----
        Privacy: this is the budget filter. Either spend *before* running the mechanism
        and run it only if this returns, or (as the command line does) :meth:`check`
        first, compute the release in memory, spend its guarantee here and make the
        release visible only if this returns.
        """
        name = _check_dataset(dataset)
        forms, relation = self._amount(name, budget, neighbors)
        if mechanism is None and isinstance(budget, PrivacyGuarantee):
            mechanism = budget.mechanism
        if not isinstance(mechanism, str) or not mechanism.strip():
            raise TypeError(f"mechanism must be a non-empty string; got {mechanism!r}")
        details_json = _encode_details(details)
        pid = os.getpid()
        host = socket.gethostname()

        def work(conn: sqlite3.Connection) -> SpendRecord:
            state = self._state(conn, name)
            self._check_relation(state, relation)
            amount = form_for(forms, type(state.total))
            budget_json = _budget_to_json(amount)
            cost, new_spent = charge(
                state.limit, state.spent, amount, type(state.total),
                what=f"dataset {name!r} ({mechanism!r})",
            )
            sequence = state.count + 1
            stamp = _utc_now()
            cost_text = _encode_cost(cost)
            conn.execute(
                "INSERT INTO spends (dataset, sequence, mechanism, budget_json, cost, "
                "time_utc, details_json, pid, host) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (name, sequence, mechanism, budget_json, cost_text, stamp, details_json, pid, host),
            )
            updated = conn.execute(
                "UPDATE datasets SET spent_cost = ?, spend_count = ? "
                "WHERE name = ? AND spent_cost = ? AND spend_count = ?",
                (_encode_cost(new_spent), sequence, name, state.spent_text, state.count),
            ).rowcount
            if updated != 1:
                raise LedgerIntegrityError(
                    f"the running total of dataset {name!r} changed during a write transaction"
                )
            return SpendRecord(
                dataset=name,
                sequence=sequence,
                mechanism=mechanism,
                budget=amount,
                cost=cost,
                time=datetime.fromisoformat(stamp),
                details=json.loads(details_json),
                pid=pid,
                host=host,
            )

        return self._transact(work, write=True)

    def check(self, dataset: str, budget: Budget, *, neighbors: str | None = None) -> None:
        """Raise unless ``budget`` (under ``neighbors``, if given) could be charged to
        ``dataset`` right now; records nothing.

        Advisory, like :meth:`can_spend`: another process may spend in between, so the
        final :meth:`spend` checks again. Use it to refuse a run before computing anything.

        Raises
        ------
        BudgetExceededError, IncompatibleBudgetError, UnknownDatasetError
            As :meth:`spend` would.
        """
        name = _check_dataset(dataset)
        forms, relation = self._amount(name, budget, neighbors)

        def work(conn: sqlite3.Connection) -> None:
            state = self._state(conn, name)
            self._check_relation(state, relation)
            charge(state.limit, state.spent, form_for(forms, type(state.total)),
                   type(state.total), what=f"dataset {name!r}")

        self._transact(work, write=False)

    def can_spend(self, dataset: str, budget: Budget) -> bool:
        """Whether ``budget`` fits in what ``dataset`` has left right now.

        Advisory only: another process may spend in between. :meth:`spend` is the
        atomic check-then-record.

        Raises
        ------
        IncompatibleBudgetError
            ``budget`` cannot be soundly accounted in the total's notion.
        UnknownDatasetError
            ``dataset`` has not been declared.
        """
        from dpggm.exceptions import BudgetExceededError

        try:
            self.check(dataset, budget)
        except BudgetExceededError:
            return False
        return True

    def sink(self, dataset: str, *, mechanism: str | None = None,
             details: dict[str, Any] | None = None) -> LedgerSink:
        """This ledger bound to ``dataset``, as a :class:`~dpggm.privacy.accountant.SpendSink`."""
        return LedgerSink(self, _check_dataset(dataset), mechanism, details)

    def neighbors(self, dataset: str) -> str:
        """The neighbouring relation the total of ``dataset`` is declared for."""
        name = _check_dataset(dataset)
        return self._transact(lambda conn: self._state(conn, name).neighbors, write=False)

    @classmethod
    def migrate(cls, path: str | os.PathLike[str], *, neighbors: str) -> bool:
        """Upgrade a schema-version-1 ledger to the current version in place.

        Version 1 did not record the neighbouring relation. The caller states the relation
        every existing total and spend was made under; it is stored for every dataset and
        the migration is written to the file's notes. Returns False if the file is already
        current. The upgrade is one transaction: it happens entirely or not at all.

        Raises
        ------
        FileNotFoundError, LedgerFormatError
            No file, or not a dpggm ledger of version 1 or 2.
        """
        relation = check_neighbors(neighbors)
        raw = os.fspath(path)
        if not os.path.isfile(raw):
            raise FileNotFoundError(f"no ledger file at {raw!r}")
        ledger = cls.__new__(cls)
        ledger._path = os.path.abspath(raw)
        ledger._timeout = 30.0
        ledger._closed = False

        def work(conn: sqlite3.Connection) -> bool:
            try:
                rows = conn.execute("SELECT application, version FROM ledger_schema").fetchall()
            except sqlite3.OperationalError as exc:
                raise LedgerFormatError(f"{raw!r} is not a dpggm privacy ledger") from exc
            if len(rows) != 1 or rows[0][0] != APPLICATION:
                raise LedgerFormatError(f"{raw!r} is not a dpggm privacy ledger")
            if rows[0][1] == SCHEMA_VERSION:
                return False
            if rows[0][1] != 1:
                raise LedgerFormatError(
                    f"{raw!r} has schema version {rows[0][1]!r}; only version 1 can be migrated"
                )
            conn.execute(
                "ALTER TABLE datasets ADD COLUMN neighbors TEXT NOT NULL DEFAULT 'replace' "
                "CHECK (neighbors IN ('replace', 'add-remove'))"
            )
            conn.execute("UPDATE datasets SET neighbors = ?", (relation,))
            conn.execute("DROP TRIGGER datasets_total_fixed")
            for statement in _split_sql(_SCHEMA):
                if "datasets_total_fixed" in statement or "CREATE TABLE ledger_notes" in statement:
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO ledger_notes (time_utc, note) VALUES (?, ?)",
                (_utc_now(), f"migrated from schema version 1 to {SCHEMA_VERSION}; every "
                 f"existing total and spend stated by the user as under {relation!r} neighbours"),
            )
            conn.execute("UPDATE ledger_schema SET version = ?", (SCHEMA_VERSION,))
            return True

        return ledger._transact(work, write=True, check_schema=False)

    def notes(self) -> list[tuple[str, str]]:
        """The file's notes (e.g. migrations), as ``(time_utc, text)``, oldest first."""
        return self._transact(
            lambda conn: list(conn.execute("SELECT time_utc, note FROM ledger_notes ORDER BY rowid")),
            write=False,
        )

    def total(self, dataset: str) -> Budget:
        """The declared total of ``dataset``."""
        name = _check_dataset(dataset)
        return self._transact(lambda conn: self._state(conn, name).total, write=False)

    def exact_spent(self, dataset: str) -> tuple[Fraction, ...]:
        """The exact additive cost spent on ``dataset``, in the total's notion
        (see :func:`~dpggm.privacy.budgets.exact_cost`)."""
        name = _check_dataset(dataset)
        return self._transact(lambda conn: self._state(conn, name).spent, write=False)

    def spent(self, dataset: str) -> Budget:
        """What has been spent on ``dataset``, in the total's notion, each parameter
        rounded *up* to a float so that the reported loss is never understated."""
        name = _check_dataset(dataset)

        def work(conn: sqlite3.Connection) -> Budget:
            state = self._state(conn, name)
            return reported_spent(type(state.total), state.spent)

        return self._transact(work, write=False)

    def remaining(self, dataset: str) -> Budget:
        """What ``dataset`` has left, in the total's notion, each parameter rounded *down*
        to a float so that spending exactly ``remaining`` succeeds (barring other spends)."""
        name = _check_dataset(dataset)

        def work(conn: sqlite3.Connection) -> Budget:
            state = self._state(conn, name)
            return reported_remaining(type(state.total), state.limit, state.spent)

        return self._transact(work, write=False)

    def history(self, dataset: str) -> list[SpendRecord]:
        """Every spend charged to ``dataset``, oldest first."""
        name = _check_dataset(dataset)

        def work(conn: sqlite3.Connection) -> list[SpendRecord]:
            state = self._state(conn, name)
            width = len(state.limit)
            records = []
            for row in conn.execute(
                "SELECT sequence, mechanism, budget_json, cost, time_utc, details_json, pid, "
                "host FROM spends WHERE dataset = ? ORDER BY sequence",
                (name,),
            ):
                sequence, mechanism, budget_json, cost_text, stamp, details_json, pid, host = row
                where = f"spend {sequence} of {name!r}"
                try:
                    budget = _budget_from_json(budget_json)
                    details = json.loads(details_json)
                    when = datetime.fromisoformat(stamp)
                except (ValueError, TypeError, KeyError) as exc:
                    raise LedgerIntegrityError(f"malformed record in {where}: {exc}") from exc
                records.append(
                    SpendRecord(
                        dataset=name,
                        sequence=sequence,
                        mechanism=mechanism,
                        budget=budget,
                        cost=_decode_cost(cost_text, width=width, where=where),
                        time=when,
                        details=details,
                        pid=pid,
                        host=host,
                    )
                )
            return records

        return self._transact(work, write=False)

    def datasets(self) -> list[str]:
        """Names of the declared datasets, sorted."""
        return self._transact(self._known_names, write=False)

    def verify(self) -> None:
        """Check the file and every dataset's records; raise if anything is inconsistent.

        Runs SQLite's ``PRAGMA integrity_check`` and, for each dataset, checks that the
        history is contiguous, that its exact sum equals the stored running total and
        that it does not exceed the declared total.

        Raises
        ------
        LedgerIntegrityError
            Describing the first inconsistency found.
        """

        def work(conn: sqlite3.Connection) -> None:
            result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            if result != ["ok"]:
                raise LedgerIntegrityError(
                    f"SQLite integrity check of {self._path!r} failed: {result[:5]}"
                )
            orphans = conn.execute(
                "SELECT count(*) FROM spends WHERE dataset NOT IN (SELECT name FROM datasets)"
            ).fetchone()[0]
            if orphans:
                raise LedgerIntegrityError(f"{orphans} spends name no declared dataset")
            for name in self._known_names(conn):
                self._state(conn, name)

        self._transact(work, write=False)


class LedgerSink:
    """A :class:`Ledger` bound to one dataset: a :class:`~dpggm.privacy.accountant.SpendSink`."""

    def __init__(self, ledger: Ledger, dataset: str, mechanism: str | None,
                 details: dict[str, Any] | None) -> None:
        self.ledger = ledger
        self.dataset = dataset
        self.mechanism = mechanism
        self.details = details

    def check(self, budget: Budget, *, neighbors: str | None = None) -> None:
        """Raise unless ``budget`` could be charged now (records nothing)."""
        self.ledger.check(self.dataset, budget, neighbors=neighbors)

    def spend(self, guarantee: PrivacyGuarantee) -> SpendRecord:
        """Charge what ``guarantee`` states, atomically, or raise and record nothing."""
        return self.ledger.spend(
            self.dataset, guarantee, mechanism=self.mechanism, details=self.details
        )

    def __repr__(self) -> str:
        return f"LedgerSink({self.ledger!r}, {self.dataset!r})"


def _split_sql(script: str) -> list[str]:
    """Split the schema into statements, keeping trigger bodies whole."""
    statements, current = [], []
    for line in script.strip().splitlines():
        current.append(line)
        candidate = "\n".join(current)
        if sqlite3.complete_statement(candidate):
            statements.append(candidate.strip())
            current = []
    if current and "\n".join(current).strip():
        statements.append("\n".join(current).strip())
    return statements
