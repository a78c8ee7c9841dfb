"""Persistent, multi-process privacy-budget ledger backed by SQLite.

A :class:`Ledger` is a file that records, per dataset, the declared total privacy budget
and every spend charged against it. :meth:`Ledger.spend` checks and records in one
transaction, so any number of processes (on one machine) may spend against the same
dataset at once and the declared total is never exceeded.

How a total is composed
    A pure-DP, zCDP or GDP total adds its spends' costs exactly (epsilon, rho, ``mu**2``).
    An ``(epsilon, delta)`` total with ``delta > 0`` composes its spends in **zCDP**: their
    rho add up (pure ``epsilon`` counts ``epsilon**2 / 2``, GDP ``mu**2 / 2``) and the total
    holds while the sum stays within the largest rho whose tight conversion implies
    ``(epsilon, delta)`` -- fixed, as an exact rational, when the dataset is declared. Basic
    composition would spend the whole delta on the first release. A release that holds
    only an ``(epsilon, delta)`` guarantee is booked by basic composition, and only before
    the first zCDP spend (:mod:`dpggm.privacy.accountant` says why this is sound under fully
    adaptive choices). See ``docs/budget.md``.

Exactness
    Costs are accumulated as exact rationals (:class:`fractions.Fraction` of the floats'
    binary values, see :func:`~dpggm.privacy.budgets.exact_cost`) and stored as
    ``"numerator/denominator"`` text, because Python integers outgrow SQLite's 64-bit
    integers. No running total is ever a float: a spend whose exact cost takes the exact
    sum above the total's exact cost is refused even when the floating-point sum would
    round it back under the total (and a spend that fits exactly is accepted even when
    the floating-point sum would round it above).

Tamper evidence
    Every declaration and every spend is an *event*, numbered across the file and chained:
    its hash is SHA-256 of the previous event's hash and of the event's canonical record
    (every stored field, the running total after it and, for an ``(epsilon, delta)`` total,
    the rho it may still reach), starting from the ledger's random id. Every operation
    recomputes the whole chain, the running totals and the append-only triggers, and
    refuses to go on (:class:`LedgerIntegrityError`, naming the dataset, the spend and the
    event) if anything was edited, deleted or re-ordered. A delivered output's receipt
    (``ledger.json``) holds its spend's chain hash (:meth:`Ledger.receipt`), so an output
    can be checked against the ledger (:meth:`Ledger.verify_receipt`, ``dpggm budget
    verify``). What this cannot detect -- a cut-back history or a restored older copy
    without a receipt or a written-down head to compare with, or a chain rebuilt by whoever
    can write the file -- is said in ``docs/budget.md``; a secret key in the environment
    variable ``DPGGM_LEDGER_KEY`` when the ledger is created turns the hashes into
    HMAC-SHA-256, which nobody without the key can rebuild.

Permissions
    A new ledger file is created readable and writable by its owner only (0600). An
    existing file that every user may write is refused (:class:`LedgerPermissionError`);
    one that others may read, or the group may write, is opened with a
    :class:`LedgerPermissionWarning`.

Reported values
    :meth:`Ledger.remaining` is rounded *down* to floats (spending exactly ``remaining``
    always succeeds) and :meth:`Ledger.spent` is rounded *up* (the reported loss is never
    understated); the exact values are available from :meth:`Ledger.exact_spent`. For an
    ``(epsilon, delta)`` total, ``spent`` is the ``(epsilon, delta)`` guarantee of all its
    releases and ``remaining`` the rho left; :meth:`Ledger.status` gives every form.

What is charged
    A release is charged at ``privacy_.budget`` -- what it guarantees, which may be a zCDP
    budget even when a pure-DP or GDP total was asked for -- or at another of its forms
    (``privacy_.equivalent``) that the total accepts, and only when its validity is
    ``"valid"``: ``Ledger.spend(dataset, estimator.privacy_)``. Every dataset stores the
    neighbouring relation its total is declared for (``"replace"`` by default), and a
    spend under the other relation is refused: the two are not comparable units.

Schema versions
    Version 2 added the neighbouring relation; version 3 the event chain, the composition
    of each total and the file's identity. An older file is refused with a message until
    it is migrated explicitly (:meth:`Ledger.migrate`, ``dpggm budget migrate``): the
    migration checks the old records, chains the history as it stands, keeps every earlier
    spend as it was booked (an ``(epsilon, delta)`` total's earlier spends stay booked by
    basic composition, and its later zCDP spends may add up to the rho that implies what
    is left), restricts the file to its owner and writes what it did into the file's
    notes. A version-1 file also needs the relation its spends were made under.

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
    journal is rolled back by the next connection; SQLite gives it the database file's
    permissions). Like any SQLite database, the ledger must live on a local file system:
    network file systems do not implement the locks reliably.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import math
import os
import random
import re
import socket
import sqlite3
import stat
import time
import uuid
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, NoReturn, TypeVar

from dpggm.exceptions import IncompatibleBudgetError
from dpggm.privacy.accountant import (
    ADDITIVE,
    ZCDP_COMPOSED,
    charge_forms,
    check_neighbors,
    composed_spent,
    default_composition,
    guarantee_forms,
    largest_release,
    reported_remaining,
    reported_spent,
    start_cost,
    zcdp_limit,
)
from dpggm.privacy.budgets import (
    GDP,
    ZCDP,
    ApproxDP,
    Budget,
    NonPrivate,
    PureDP,
    budget_from_cost,
    exact_cost,
)
from dpggm.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "KEY_ENVIRONMENT",
    "DatasetStatus",
    "Ledger",
    "LedgerFormatError",
    "LedgerIntegrityError",
    "LedgerPermissionError",
    "LedgerPermissionWarning",
    "LedgerSink",
    "LedgerSummary",
    "ReceiptError",
    "SpendRecord",
    "UnknownDatasetError",
    "restore_triggers",
    "spend_receipt",
]

APPLICATION = "dpggm-privacy-ledger"
SCHEMA_VERSION = 3
# Stored in the SQLite header (bytes 68-71) so that tools such as `file` can recognise
# the format: ASCII "DPGL".
APPLICATION_ID = 0x4450474C
#: The environment variable whose value, when set as a ledger is created, keys its chain
#: (HMAC-SHA-256); every later use of that ledger needs it.
KEY_ENVIRONMENT = "DPGGM_LEDGER_KEY"
_CHAIN_PLAIN = "sha256"
_CHAIN_KEYED = "hmac-sha256"

_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26

# The columns that version 3 added come last in each table, with defaults, so that a file
# migrated with ALTER TABLE and a new file have the same layout.
_TABLES = """
CREATE TABLE ledger_schema (
    application TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_utc TEXT NOT NULL,
    ledger_id TEXT NOT NULL DEFAULT '',
    chain_mode TEXT NOT NULL DEFAULT 'sha256',
    key_check TEXT NOT NULL DEFAULT '',
    events INTEGER NOT NULL DEFAULT 0,
    head TEXT NOT NULL DEFAULT ''
);
CREATE TABLE datasets (
    name TEXT PRIMARY KEY NOT NULL,
    notion TEXT NOT NULL,
    total_json TEXT NOT NULL,
    spent_cost TEXT NOT NULL,
    spend_count INTEGER NOT NULL CHECK (spend_count >= 0),
    description TEXT NOT NULL,
    declared_utc TEXT NOT NULL,
    neighbors TEXT NOT NULL DEFAULT 'replace' CHECK (neighbors IN ('replace', 'add-remove')),
    composition TEXT NOT NULL DEFAULT 'additive',
    rho_limit TEXT,
    event INTEGER NOT NULL DEFAULT 0,
    chain TEXT NOT NULL DEFAULT ''
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
    spent_after TEXT NOT NULL DEFAULT '',
    rho_limit TEXT,
    event INTEGER NOT NULL DEFAULT 0,
    chain TEXT NOT NULL DEFAULT '',
    UNIQUE (dataset, sequence)
);
"""

_INDEXES = """
CREATE UNIQUE INDEX datasets_event ON datasets (event);
CREATE UNIQUE INDEX spends_event ON spends (event);
"""

# The append-only rules. They stop casual edits with a clear message; the chain detects
# the edits of anyone who removes them (and their removal itself).
_TRIGGERS = {
    "spends_no_update": "CREATE TRIGGER spends_no_update BEFORE UPDATE ON spends\n"
    "BEGIN SELECT RAISE(ABORT, 'the spends of a privacy ledger are append-only'); END;",
    "spends_no_delete": "CREATE TRIGGER spends_no_delete BEFORE DELETE ON spends\n"
    "BEGIN SELECT RAISE(ABORT, 'the spends of a privacy ledger are append-only'); END;",
    "datasets_no_delete": "CREATE TRIGGER datasets_no_delete BEFORE DELETE ON datasets\n"
    "BEGIN SELECT RAISE(ABORT, 'a declared dataset cannot be removed from a privacy ledger'); "
    "END;",
    "datasets_total_fixed": "CREATE TRIGGER datasets_total_fixed BEFORE UPDATE OF name, "
    "notion, total_json, neighbors, description, declared_utc, composition, rho_limit, "
    "event, chain\nON datasets\n"
    "BEGIN SELECT RAISE(ABORT, 'the total of a declared dataset cannot be changed'); END;",
    "ledger_identity_fixed": "CREATE TRIGGER ledger_identity_fixed BEFORE UPDATE OF "
    "application, version, created_utc, ledger_id, chain_mode, key_check ON ledger_schema\n"
    "BEGIN SELECT RAISE(ABORT, 'the identity of a privacy ledger cannot be changed'); END;",
    "ledger_identity_kept": "CREATE TRIGGER ledger_identity_kept BEFORE DELETE ON "
    "ledger_schema\n"
    "BEGIN SELECT RAISE(ABORT, 'the identity of a privacy ledger cannot be removed'); END;",
}

_SCHEMA = _TABLES + _INDEXES + "\n".join(_TRIGGERS.values()) + f"""
PRAGMA application_id = {APPLICATION_ID};
"""

_T = TypeVar("_T")
_RATIONAL = re.compile(r"([0-9]+)/([0-9]+)")
_HEX64 = re.compile(r"[0-9a-f]{64}")


class LedgerFormatError(ValueError):
    """The file is not a dpggm privacy ledger, or was written by an unsupported version."""


class LedgerIntegrityError(RuntimeError, ValueError):
    """The stored records of a ledger contradict each other (the file was altered or damaged).

    A ``ValueError`` too: the file given is at fault, as with any other refused input."""


class ReceiptError(LedgerIntegrityError):
    """An output's ledger receipt does not match the ledger."""


class LedgerPermissionError(PermissionError):
    """The ledger file may be written by every user of the machine."""


class LedgerPermissionWarning(UserWarning):
    """The ledger file is open to other users (it is created 0600)."""


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
        The form of the release's guarantee that was charged.
    cost : tuple of Fraction
        Its exact cost: in the notion of the dataset's total, or, for an
        ``(epsilon, delta)`` total composed in zCDP, ``(epsilon, delta, rho)`` (the first
        two for a release booked by basic composition, the last for a zCDP one).
    time : datetime
        When it was recorded (timezone-aware, UTC).
    details : dict
        Caller-supplied JSON details.
    pid : int or None
        Process id of the spender.
    host : str or None
        Host name of the spender.
    event : int or None
        Its number in the file's chain of events (declarations and spends).
    chain : str or None
        Its chain hash (hex): what an output's receipt quotes.
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
    event: int | None = None
    chain: str | None = None


@dataclass(frozen=True)
class DatasetStatus:
    """Where a dataset's budget stands (:meth:`Ledger.status`).

    Attributes
    ----------
    dataset, neighbors : str
        The dataset and the relation its total is declared for.
    total : Budget
        The declared total.
    composition : {"additive", "zcdp"}
        How its spends add up (``"zcdp"``: an ``(epsilon, delta)`` total composed in zCDP).
    limit : Budget
        What the spends may add up to, in the notion they are added in: the total itself,
        or ``ZCDP(rho)`` for the zCDP composition.
    spent : Budget
        What has been spent, in the notion of ``limit``, rounded up.
    remaining : Budget
        What is left, in the notion of ``limit``, rounded down (spending it succeeds).
    guarantee : Budget
        The guarantee of all releases so far in the declared form, rounded up.
    next_release : Budget or None
        The largest budget, in the declared form, one more release may be given (for the
        zCDP composition: the ``(epsilon, delta)`` whose zCDP form fits); None when nothing
        is left.
    spends : int
        How many spends were booked.
    """

    dataset: str
    total: Budget
    neighbors: str
    composition: str
    limit: Budget
    spent: Budget
    remaining: Budget
    guarantee: Budget
    next_release: Budget | None
    spends: int


@dataclass(frozen=True)
class LedgerSummary:
    """The result of :meth:`Ledger.verify`: the chain's length and head (write it down to
    detect later a cut-back history or a restored older copy), how it is hashed, and the
    datasets."""

    ledger_id: str
    events: int
    head: str
    chain_mode: str
    datasets: tuple[str, ...]


@dataclass(frozen=True)
class _DatasetState:
    name: str
    total: Budget
    neighbors: str
    composition: str
    limit: tuple[Fraction, ...]
    spent: tuple[Fraction, ...]
    rho_limit: Fraction | None
    count: int
    spent_text: str


@dataclass(frozen=True)
class _Snapshot:
    """A verified reading of the whole file."""

    ledger_id: str
    chain_mode: str
    events: int
    head: str
    states: dict[str, _DatasetState]
    spends: dict[str, list[dict[str, Any]]]


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


def _encode_fraction(value: Fraction | None) -> str | None:
    return None if value is None else f"{value.numerator}/{value.denominator}"


def _decode_fraction(text: Any, *, where: str) -> Fraction:
    try:
        return _parse_fraction(text)
    except ValueError as exc:
        raise LedgerIntegrityError(f"malformed exact value in {where}: {exc}") from exc


def _canonical(record: dict[str, Any]) -> str:
    """The one text of a record that is hashed: sorted keys, no spaces, ASCII."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def _digest(key: bytes | None, previous: str, record: dict[str, Any]) -> str:
    """The chain hash of ``record`` after ``previous``: SHA-256, or HMAC-SHA-256 with
    ``key``."""
    message = (previous + "\n" + _canonical(record)).encode("ascii")
    if key is None:
        return hashlib.sha256(message).hexdigest()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _key_check(key: bytes, ledger_id: str) -> str:
    """A fingerprint of the key (so that a wrong key is told apart from an edit)."""
    return hmac.new(key, f"dpggm-ledger-key:{ledger_id}".encode("ascii"),
                    hashlib.sha256).hexdigest()


def _environment_key() -> bytes | None:
    value = os.environ.get(KEY_ENVIRONMENT)
    return value.encode("utf-8") if value else None


def _genesis(ledger_id: str, created: str, chain_mode: str, key_check: str) -> dict[str, Any]:
    return {"kind": "ledger", "application": APPLICATION, "ledger_id": ledger_id,
            "created_utc": created, "chain_mode": chain_mode, "key_check": key_check}


def _declaration_record(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": "declare", "event": row["event"], "dataset": row["name"],
            "notion": row["notion"], "total": row["total_json"], "neighbors": row["neighbors"],
            "description": row["description"], "declared_utc": row["declared_utc"],
            "composition": row["composition"], "rho_limit": row["rho_limit"]}


def _spend_record(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": "spend", "event": row["event"], "dataset": row["dataset"],
            "sequence": row["sequence"], "mechanism": row["mechanism"],
            "budget": row["budget_json"], "cost": row["cost"], "time_utc": row["time_utc"],
            "details": row["details_json"], "pid": row["pid"], "host": row["host"],
            "spent_after": row["spent_after"], "rho_limit": row["rho_limit"]}


_DATASET_COLUMNS = ("name", "notion", "total_json", "spent_cost", "spend_count", "description",
                    "declared_utc", "neighbors", "composition", "rho_limit", "event", "chain")
_SPEND_COLUMNS = ("dataset", "sequence", "mechanism", "budget_json", "cost", "time_utc",
                  "details_json", "pid", "host", "spent_after", "rho_limit", "event", "chain")


def _rows(conn: sqlite3.Connection, table: str, columns: tuple[str, ...],
          order: str) -> list[dict[str, Any]]:
    cursor = conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}")
    return [dict(zip(columns, row)) for row in cursor]


def _normalised(sql: str | None) -> str:
    return " ".join((sql or "").replace(";", " ").split())


def _trigger_problem(conn: sqlite3.Connection, path: str) -> str | None:
    """What is wrong with the append-only triggers (None: all there, as written)."""
    found = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"))
    missing = [name for name in _TRIGGERS if name not in found]
    altered = [name for name, sql in _TRIGGERS.items()
               if name in found and _normalised(found[name]) != _normalised(sql)]
    extra = [name for name in found if name not in _TRIGGERS]
    if not (missing or altered or extra):
        return None
    parts = ([f"removed: {', '.join(missing)}"] if missing else []) + (
        [f"altered: {', '.join(altered)}"] if altered else []) + (
        [f"added: {', '.join(extra)}"] if extra else [])
    return (f"the append-only rules of the ledger {path!r} were changed outside dpggm "
            f"({'; '.join(parts)})")


def _check_permissions(path: str) -> None:
    """Refuse a ledger every user may write; warn about one open to others."""
    if os.name != "posix":
        return
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return
    if mode & 0o002:
        raise LedgerPermissionError(
            f"the ledger {path!r} can be written by every user of this machine (mode "
            f"{mode:04o}): anyone could rewrite its history. Restrict it with `chmod 600 "
            f"{path}` (dpggm creates ledgers 0600)")
    if mode & 0o077:
        who = "written by its group" if mode & 0o020 else "read by other users"
        warnings.warn(LedgerPermissionWarning(
            f"the ledger {path!r} can be {who} (mode {mode:04o}); dpggm creates ledgers 0600: "
            f"restrict it with `chmod 600 {path}`"), stacklevel=4)


def _create_private_file(path: str) -> None:
    """Create ``path`` empty and 0600 (if it does not exist): SQLite would create it with
    the umask's permissions, usually 0644."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    except OSError:
        # Left to SQLite, which reports a missing directory or a refused write its way.
        return
    try:
        if os.name == "posix":
            os.fchmod(descriptor, 0o600)
    finally:
        os.close(descriptor)


def _verify_costs(state: _DatasetState, declared_limit: Fraction | None,
                  rows: list[dict[str, Any]], path: str) -> Fraction | None:
    """Each spend's cost is its budget's exact cost (in one of the ways the composition
    books it), the running totals follow, the composition's rules and the limits hold.
    Returns the current rho limit (zCDP composition)."""
    width = len(state.spent)
    composed = state.composition == ZCDP_COMPOSED
    running = list(start_cost(state.total, state.composition))
    rho_limit = declared_limit
    for row in rows:
        where = f"dataset {state.name!r}, spend #{row['sequence']} (event {row['event']})"
        cost = _decode_cost(row["cost"], width=width, where=where)
        try:
            budget = _budget_from_json(row["budget_json"])
        except (ValueError, TypeError, KeyError) as exc:
            raise LedgerIntegrityError(f"malformed budget in {where}: {exc}") from exc
        if cost not in _allowed_costs(budget, state):
            raise LedgerIntegrityError(
                f"{where}: its cost {row['cost']} is not what {budget} costs against the total "
                f"{state.total}")
        after = tuple(r + c for r, c in zip(running, cost))
        if after != _decode_cost(row["spent_after"], width=width, where=where):
            raise LedgerIntegrityError(
                f"{where}: the running total it records differs from the sum of the history")
        if composed:
            new_limit = _decode_fraction(row["rho_limit"], where=where)
            basic = cost[2] == 0 and (cost[0] > 0 or cost[1] > 0)
            # Booked by basic composition only before the first zCDP spend; the rho limit
            # moves only then.
            if (basic and running[2] > 0) or (not basic and new_limit != rho_limit):
                raise LedgerIntegrityError(
                    f"{where}: it breaks the order of an (epsilon, delta) total's spends")
            rho_limit = new_limit
            over = after[0] > state.limit[0] or after[1] > state.limit[1] or after[2] > rho_limit
        else:
            over = any(s > lim for s, lim in zip(after, state.limit))
        if over:
            raise LedgerIntegrityError(
                f"{where}: it takes dataset {state.name!r} beyond its declared total "
                f"{state.total} (ledger {path!r})")
        running = list(after)
    if tuple(running) != state.spent:
        raise LedgerIntegrityError(
            f"the running total of dataset {state.name!r} ({_encode_cost(state.spent)}) "
            f"differs from the sum of its history ({_encode_cost(tuple(running))})")
    return rho_limit


def _allowed_costs(budget: Budget, state: _DatasetState) -> list[tuple[Fraction, ...]]:
    """The exact costs a spend of ``budget`` may have been booked at."""
    if state.composition == ADDITIVE:
        try:
            return [exact_cost(budget, type(state.total))]
        except IncompatibleBudgetError:
            return []
    zero = Fraction(0)
    allowed = []
    if isinstance(budget, (ZCDP, PureDP, GDP)):
        allowed.append((zero, zero, exact_cost(budget, ZCDP)[0]))
    if isinstance(budget, ApproxDP) and budget.delta == 0:
        allowed.append((zero, zero, Fraction(budget.epsilon) ** 2 / 2))
    if isinstance(budget, PureDP):
        allowed.append((Fraction(budget.epsilon), zero, zero))
    if isinstance(budget, ApproxDP):
        allowed.append((Fraction(budget.epsilon), Fraction(budget.delta), zero))
    return allowed


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
    LedgerIntegrityError
        Its history does not verify (see the module notes); so does every later call.
    LedgerPermissionError
        Every user of the machine may write the file (a :class:`LedgerPermissionWarning`
        when others may read it or its group write it).

    Notes
    -----
    Privacy: the ledger releases nothing about any data and consumes no budget; it only
    refuses spends that would exceed the declared totals. It is an accounting record,
    not an access control: anyone who can write the file can alter it. The hash chain
    detects an edit, a deletion or a dropped trigger on the next use; a history rebuilt or
    cut back by whoever can write the file shows only against an output's receipt or a
    written-down head (:meth:`verify_receipt`, :meth:`verify`), unless the chain is keyed
    (``DPGGM_LEDGER_KEY``).

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
        if version == 2:
            raise LedgerFormatError(
                f"the ledger {self._path!r} has schema version 2, written by an older dpggm; "
                "migrate it once with `dpggm budget migrate LEDGER` (or Ledger.migrate(path)): "
                "it checks the records, chains the history as it stands so that later edits "
                "are detected, and composes (epsilon, delta) totals in zCDP (docs/budget.md)"
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
        if not exists and os.path.isdir(os.path.dirname(self._path)):
            _create_private_file(self._path)

        def table_names(conn: sqlite3.Connection) -> set[str]:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            return {row[0] for row in rows}

        if self._transact(table_names, write=False, check_schema=False):
            # A ledger's format first (another file gets no advice on its permissions).
            self._transact(lambda conn: None, write=False)
            _check_permissions(self._path)
        else:
            if not create:
                raise LedgerFormatError(
                    f"{self._path!r} is an empty file, not a dpggm privacy ledger"
                )
            _check_permissions(self._path)
            key = _environment_key()

            def initialise(conn: sqlite3.Connection) -> None:
                # Another process may have initialised the file since it was inspected.
                if table_names(conn):
                    return
                for statement in _split_sql(_SCHEMA):
                    conn.execute(statement)
                ledger_id, created = uuid.uuid4().hex, _utc_now()
                mode = _CHAIN_PLAIN if key is None else _CHAIN_KEYED
                check = "" if key is None else _key_check(key, ledger_id)
                head = _digest(key, "", _genesis(ledger_id, created, mode, check))
                conn.execute(
                    "INSERT INTO ledger_schema (application, version, created_utc, ledger_id, "
                    "chain_mode, key_check, events, head) VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
                    (APPLICATION, SCHEMA_VERSION, created, ledger_id, mode, check, head),
                )

            self._transact(initialise, write=True, check_schema=False)
        self._transact(self._load, write=False)

    def _known_names(self, conn: sqlite3.Connection) -> list[str]:
        return [row[0] for row in conn.execute("SELECT name FROM datasets ORDER BY name")]

    def _unknown(self, conn: sqlite3.Connection, dataset: str) -> UnknownDatasetError:
        names = self._known_names(conn)
        shown = names if len(names) <= 20 else [*names[:20], "..."]
        return UnknownDatasetError(
            f"dataset {dataset!r} has not been declared in the ledger {self._path!r}; "
            f"declared datasets: {shown}"
        )

    def _chain_key(self, mode: str, ledger_id: str, key_check: str) -> bytes | None:
        if mode == _CHAIN_PLAIN:
            return None
        if mode != _CHAIN_KEYED:
            raise LedgerIntegrityError(f"the ledger {self._path!r} names an unknown chain {mode!r}")
        key = _environment_key()
        if key is None:
            raise LedgerIntegrityError(
                f"the history of the ledger {self._path!r} is sealed with a secret key "
                f"(HMAC-SHA-256): set the environment variable {KEY_ENVIRONMENT} to it")
        if not hmac.compare_digest(_key_check(key, ledger_id), key_check):
            raise LedgerIntegrityError(
                f"{KEY_ENVIRONMENT} does not hold the key of the ledger {self._path!r}")
        return key

    def _load(self, conn: sqlite3.Connection) -> _Snapshot:
        """Read and verify the whole file: identity, triggers, the chain of events, and each
        dataset's history against its running total and limits."""
        identity = conn.execute(
            "SELECT ledger_id, created_utc, chain_mode, key_check, events, head "
            "FROM ledger_schema").fetchall()
        if len(identity) != 1:
            raise LedgerIntegrityError(
                f"the ledger {self._path!r} has {len(identity)} identity records; it needs one")
        ledger_id, created, mode, key_check, events, head = identity[0]
        key = self._chain_key(mode, ledger_id, key_check)
        triggers = _trigger_problem(conn, self._path)
        try:
            snapshot = self._verified(conn, key, identity[0])
        except LedgerIntegrityError as exc:
            if triggers is None:
                raise
            raise LedgerIntegrityError(f"{exc} (and {triggers})") from None
        if triggers is not None:
            raise LedgerIntegrityError(
                f"{triggers}; its history still verifies: `dpggm budget verify {self._path} "
                "--restore-triggers` (or Ledger.restore_triggers()) puts them back")
        return snapshot

    def _verified(self, conn: sqlite3.Connection, key: bytes | None,
                  identity: tuple[Any, ...]) -> _Snapshot:
        ledger_id, created, mode, key_check, events, head = identity
        declared = _rows(conn, "datasets", _DATASET_COLUMNS, "event")
        spends = _rows(conn, "spends", _SPEND_COLUMNS, "event")
        by_dataset: dict[str, list[dict[str, Any]]] = {row["name"]: [] for row in declared}
        for row in spends:
            if row["dataset"] not in by_dataset:
                raise LedgerIntegrityError(
                    f"spend #{row['sequence']} (event {row['event']}) of the ledger "
                    f"{self._path!r} names no declared dataset ({row['dataset']!r})")
            by_dataset[row["dataset"]].append(row)
        for name, rows in by_dataset.items():
            sequences = sorted(row["sequence"] for row in rows)
            if sequences != list(range(1, len(rows) + 1)):
                gap = next(i for i, s in enumerate(sequences, 1) if s != i)
                raise LedgerIntegrityError(
                    f"dataset {name!r}: spend #{gap} is missing from the history of "
                    f"{self._path!r} (sequence numbers {sequences[:8]}): a spend was deleted")
            rows.sort(key=lambda row: row["sequence"])
        self._verify_chain(key, _genesis(ledger_id, created, mode, key_check), declared,
                           spends, events, head)
        states = {row["name"]: self._dataset_state(row, by_dataset[row["name"]])
                  for row in declared}
        return _Snapshot(ledger_id, mode, events, head, states, by_dataset)

    def _verify_chain(self, key: bytes | None, genesis: dict[str, Any],
                      declared: list[dict[str, Any]], spends: list[dict[str, Any]],
                      events: int, head: str) -> None:
        entries = sorted([(row["event"], 0, row) for row in declared]
                         + [(row["event"], 1, row) for row in spends],
                         key=lambda entry: (entry[0], entry[1]))
        previous = _digest(key, "", genesis)
        for expected, (event, kind, row) in enumerate(entries, 1):
            what = (f"dataset {row['name']!r} (its declaration)" if kind == 0 else
                    f"dataset {row['dataset']!r}, spend #{row['sequence']}")
            if event != expected:
                missing = expected if event > expected else event
                raise LedgerIntegrityError(
                    f"the history of the ledger {self._path!r} breaks at event {missing} "
                    f"(next record: {what}, event {event}): a record was deleted or renumbered")
            record = _declaration_record(row) if kind == 0 else _spend_record(row)
            digest = _digest(key, previous, record)
            if not hmac.compare_digest(digest, str(row["chain"])):
                raise LedgerIntegrityError(
                    f"{what} (event {event}) of the ledger {self._path!r} does not match its "
                    "chain hash: it, or a record before it, was edited after it was written")
            previous = digest
        if len(entries) != events or not hmac.compare_digest(previous, str(head)):
            raise LedgerIntegrityError(
                f"the ledger {self._path!r} records {events} events ending in {str(head)[:16]}, "
                f"but its history holds {len(entries)} ending in {previous[:16]}: records were "
                "removed from (or added to) its end outside dpggm")

    def _dataset_state(self, row: dict[str, Any], rows: list[dict[str, Any]]) -> _DatasetState:
        name = row["name"]
        try:
            total = _budget_from_json(row["total_json"])
        except (ValueError, TypeError, KeyError) as exc:
            raise LedgerIntegrityError(
                f"the total of dataset {name!r} is malformed: {row['total_json']!r}") from exc
        composition = row["composition"]
        if composition != default_composition(total):
            raise LedgerIntegrityError(
                f"dataset {name!r}: its total {total} is not composed {composition!r}")
        if composition == ZCDP_COMPOSED:
            limit = (Fraction(total.epsilon), Fraction(total.delta))
            declared_limit = _decode_fraction(row["rho_limit"], where=f"dataset {name!r}")
            width = 3
        else:
            limit = exact_cost(total, type(total))
            declared_limit, width = None, len(limit)
        spent = _decode_cost(row["spent_cost"], width=width, where=f"dataset {name!r}")
        if row["spend_count"] != len(rows):
            raise LedgerIntegrityError(
                f"dataset {name!r} records {row['spend_count']} spends but its history holds "
                f"{len(rows)}")
        state = _DatasetState(name, total, row["neighbors"], composition, limit, spent,
                              declared_limit, len(rows), row["spent_cost"])
        rho_limit = _verify_costs(state, declared_limit, rows, self._path)
        return dataclasses.replace(state, rho_limit=rho_limit)

    def _state(self, conn: sqlite3.Connection, dataset: str) -> _DatasetState:
        snapshot = self._load(conn)
        if dataset not in snapshot.states:
            raise self._unknown(conn, dataset)
        return snapshot.states[dataset]

    def _append(self, conn: sqlite3.Connection, record: dict[str, Any]) -> tuple[int, str]:
        """The event number and chain hash of ``record`` (its ``event`` field is set here),
        with the file's head moved onto it."""
        ledger_id, created, mode, key_check, events, head = conn.execute(
            "SELECT ledger_id, created_utc, chain_mode, key_check, events, head "
            "FROM ledger_schema").fetchone()
        key = self._chain_key(mode, ledger_id, key_check)
        event = events + 1
        record["event"] = event
        digest = _digest(key, head, record)
        moved = conn.execute(
            "UPDATE ledger_schema SET events = ?, head = ? WHERE events = ? AND head = ?",
            (event, digest, events, head)).rowcount
        if moved != 1:
            raise LedgerIntegrityError(
                f"the head of the ledger {self._path!r} changed during a write transaction")
        return event, digest

    # ------------------------------------------------------------------ public API

    @property
    def ledger_id(self) -> str:
        """The file's random identity (every receipt names it)."""
        return self._transact(lambda conn: self._load(conn).ledger_id, write=False)

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
            Spends of other notions are converted into this notion where that is sound;
            an ``(epsilon, delta)`` total (``delta > 0``) composes its spends in zCDP up to
            the largest rho whose tight conversion implies it (see the module notes).
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
        composition = default_composition(total)
        zero = start_cost(total, composition)
        # The rho limit is found (a root search) before the write lock is taken.
        rho_limit = zcdp_limit(total, zero) if composition == ZCDP_COMPOSED else None

        def work(conn: sqlite3.Connection) -> bool:
            snapshot = self._load(conn)
            existing = snapshot.states.get(name)
            if existing is not None:
                if (type(existing.total) is type(total) and existing.total == total
                        and existing.neighbors == relation):
                    return False
                raise ValueError(
                    f"dataset {name!r} is already declared with total {existing.total} for "
                    f"{existing.neighbors!r} neighbours; it cannot be re-declared with total "
                    f"{total} for {relation!r} neighbours"
                )
            row = {"name": name, "notion": total.notion, "total_json": total_json,
                   "neighbors": relation, "description": description,
                   "declared_utc": _utc_now(), "composition": composition,
                   "rho_limit": _encode_fraction(rho_limit)}
            event, digest = self._append(conn, _declaration_record({**row, "event": 0}))
            conn.execute(
                "INSERT INTO datasets (name, notion, total_json, spent_cost, spend_count, "
                "description, declared_utc, neighbors, composition, rho_limit, event, chain) "
                "VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)",
                (name, total.notion, total_json, _encode_cost(zero), description,
                 row["declared_utc"], relation, composition, row["rho_limit"], event, digest),
            )
            return True

        return self._transact(work, write=True)

    def _amount(
        self, dataset: str, spend: Budget | PrivacyGuarantee, neighbors: str | None
    ) -> tuple[tuple[Budget, ...], str | None]:
        """The budgets the spend may be charged at (a guarantee's forms) and the relation
        they are stated under (None: unstated)."""
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

    @staticmethod
    def _charge(state: _DatasetState, forms: tuple[Budget, ...], what: str) -> Any:
        return charge_forms(state.total, state.composition, state.spent, state.rho_limit,
                            forms, what=what)

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
            the first of its forms the total accepts (for an ``(epsilon, delta)`` total, its
            zCDP form), refused unless its validity is ``"valid"``, and refused if its
            relation differs from the dataset's. A bare budget is what a mechanism costs;
            it is taken as stated under ``neighbors`` (default: the dataset's relation --
            the caller vouches for it). Either is converted exactly into the notion the
            total composes in (pure ``epsilon``-DP counts ``epsilon**2 / 2`` against a zCDP
            total or a zCDP-composed ``(epsilon, delta)`` one; ``mu``-GDP counts
            ``mu**2 / 2``).
        mechanism : str, optional
            Name of what ran; required with a bare budget, defaults to the guarantee's.
        details : dict, optional
            JSON-serialisable details stored with the record.
        neighbors : {"replace", "add-remove"}, optional
            The relation of a bare budget.

        Returns
        -------
        SpendRecord
            The record written, with its event number and chain hash.

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
        LedgerIntegrityError
            The file was edited outside dpggm (see :meth:`verify`); nothing is recorded.
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
            booked = self._charge(state, forms, f"dataset {name!r} ({mechanism!r})")
            sequence = state.count + 1
            row = {"dataset": name, "sequence": sequence, "mechanism": mechanism,
                   "budget_json": _budget_to_json(booked.budget),
                   "cost": _encode_cost(booked.cost), "time_utc": _utc_now(),
                   "details_json": details_json, "pid": pid, "host": host,
                   "spent_after": _encode_cost(booked.spent),
                   "rho_limit": _encode_fraction(booked.rho_limit)}
            event, digest = self._append(conn, _spend_record({**row, "event": 0}))
            conn.execute(
                "INSERT INTO spends (dataset, sequence, mechanism, budget_json, cost, "
                "time_utc, details_json, pid, host, spent_after, rho_limit, event, chain) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*row.values(), event, digest),
            )
            updated = conn.execute(
                "UPDATE datasets SET spent_cost = ?, spend_count = ? "
                "WHERE name = ? AND spent_cost = ? AND spend_count = ?",
                (row["spent_after"], sequence, name, state.spent_text, state.count),
            ).rowcount
            if updated != 1:
                raise LedgerIntegrityError(
                    f"the running total of dataset {name!r} changed during a write transaction"
                )
            return SpendRecord(
                dataset=name,
                sequence=sequence,
                mechanism=mechanism,
                budget=booked.budget,
                cost=booked.cost,
                time=datetime.fromisoformat(row["time_utc"]),
                details=json.loads(details_json),
                pid=pid,
                host=host,
                event=event,
                chain=digest,
            )

        return self._transact(work, write=True)

    def check(self, dataset: str, budget: Budget, *, neighbors: str | None = None) -> None:
        """Raise unless ``budget`` (under ``neighbors``, if given) could be charged to
        ``dataset`` right now; records nothing.

        Advisory, like :meth:`can_spend`: another process may spend in between, so the
        final :meth:`spend` checks again. Use it to refuse a run before computing anything.

        Raises
        ------
        BudgetExceededError, IncompatibleBudgetError, LedgerIntegrityError,
        UnknownDatasetError
            As :meth:`spend` would.
        """
        name = _check_dataset(dataset)
        forms, relation = self._amount(name, budget, neighbors)

        def work(conn: sqlite3.Connection) -> None:
            state = self._state(conn, name)
            self._check_relation(state, relation)
            self._charge(state, forms, f"dataset {name!r}")

        self._transact(work, write=False)

    def check_forms(self, dataset: str, forms: tuple[Budget, ...] | list[Budget], *,
                    neighbors: str | None = None) -> None:
        """Raise unless a release holding every budget of ``forms`` (the forms of one
        guarantee, as a plan states them before any data are read) could be charged to
        ``dataset`` right now, as :meth:`spend` would charge it. Records nothing.

        Raises
        ------
        IncompatibleBudgetError
            No form converts into the notion the total composes in, or the relation
            differs.
        BudgetExceededError, LedgerIntegrityError, UnknownDatasetError
            As :meth:`spend` would.
        """
        name = _check_dataset(dataset)
        forms = tuple(_check_budget(b, name="budget", dataset=name) for b in forms)
        if not forms:
            raise IncompatibleBudgetError(
                f"dataset {name!r}: a release with no privacy guarantee (non-private, or "
                "post-processing only) is never charged")
        relation = None if neighbors is None else check_neighbors(neighbors)

        def work(conn: sqlite3.Connection) -> None:
            state = self._state(conn, name)
            self._check_relation(state, relation)
            try:
                self._charge(state, forms, f"dataset {name!r}")
            except IncompatibleBudgetError as exc:
                raise IncompatibleBudgetError(
                    f"the ledger cannot book this release: it would hold "
                    f"{', '.join(map(str, forms))}, which the {type(state.total).__name__} "
                    f"total of dataset {name!r} does not accept ({exc})") from None

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
        """The exact cost spent on ``dataset``: in the total's notion (see
        :func:`~dpggm.privacy.budgets.exact_cost`), or ``(epsilon, delta, rho)`` for an
        ``(epsilon, delta)`` total composed in zCDP."""
        name = _check_dataset(dataset)
        return self._transact(lambda conn: self._state(conn, name).spent, write=False)

    def spent(self, dataset: str) -> Budget:
        """What has been spent on ``dataset``, each parameter rounded *up* so that the
        reported loss is never understated: in the total's notion (for an
        ``(epsilon, delta)`` total, the ``(epsilon, delta)`` guarantee of all its releases)."""
        return self.status(dataset).guarantee

    def remaining(self, dataset: str) -> Budget:
        """What ``dataset`` has left, each parameter rounded *down* so that spending exactly
        ``remaining`` succeeds (barring other spends): in the total's notion, or, for an
        ``(epsilon, delta)`` total, the rho its zCDP spends may still add
        (:meth:`status` also gives the ``(epsilon, delta)`` of one more release)."""
        return self.status(dataset).remaining

    def status(self, dataset: str) -> DatasetStatus:
        """Where ``dataset``'s budget stands, in every form (see :class:`DatasetStatus`)."""
        name = _check_dataset(dataset)
        state = self._transact(lambda conn: self._state(conn, name), write=False)
        return _status(state)

    def history(self, dataset: str) -> list[SpendRecord]:
        """Every spend charged to ``dataset``, oldest first."""
        name = _check_dataset(dataset)

        def work(conn: sqlite3.Connection) -> list[SpendRecord]:
            snapshot = self._load(conn)
            if name not in snapshot.states:
                raise self._unknown(conn, name)
            width = len(snapshot.states[name].spent)
            return [_spend_from_row(row, width) for row in snapshot.spends[name]]

        return self._transact(work, write=False)

    def datasets(self) -> list[str]:
        """Names of the declared datasets, sorted."""
        return self._transact(lambda conn: sorted(self._load(conn).states), write=False)

    def verify(self, *, anchor: tuple[int, str] | None = None) -> LedgerSummary:
        """Check the whole file; raise if anything is inconsistent.

        Runs SQLite's ``PRAGMA integrity_check`` and the checks every operation makes: the
        append-only triggers are in place, the chain of events is unbroken and every record
        matches its hash, the file's head is the last event's, and each dataset's history
        adds up to its running total within its declared total.

        Parameters
        ----------
        anchor : (int, str), optional
            An ``(event, chain hash)`` written down earlier (a previous :meth:`verify`'s
            ``events`` and ``head``, or a receipt's): the history must still hold that
            event with that hash, which detects a cut-back history or a restored older copy
            that the file alone cannot show.

        Returns
        -------
        LedgerSummary

        Raises
        ------
        LedgerIntegrityError
            Describing the first inconsistency found.
        """

        def work(conn: sqlite3.Connection) -> LedgerSummary:
            result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            if result != ["ok"]:
                raise LedgerIntegrityError(
                    f"SQLite integrity check of {self._path!r} failed: {result[:5]}"
                )
            snapshot = self._load(conn)
            if anchor is not None:
                self._check_anchor(conn, snapshot, *anchor)
            return LedgerSummary(snapshot.ledger_id, snapshot.events, snapshot.head,
                                 snapshot.chain_mode, tuple(sorted(snapshot.states)))

        return self._transact(work, write=False)

    def _check_anchor(self, conn: sqlite3.Connection, snapshot: _Snapshot, event: int,
                      digest: str) -> None:
        if isinstance(event, bool) or not isinstance(event, int) or event < 0:
            raise ValueError(f"an anchor's event must be an integer >= 0; got {event!r}")
        if event > snapshot.events:
            raise LedgerIntegrityError(
                f"the ledger {self._path!r} holds {snapshot.events} events, fewer than the "
                f"{event} of the anchor: its history was cut back (an older copy restored?)")
        if event == 0:
            return
        found = conn.execute(
            "SELECT chain FROM datasets WHERE event = ? UNION ALL "
            "SELECT chain FROM spends WHERE event = ?", (event, event)).fetchone()
        if found is None or not hmac.compare_digest(str(found[0]), str(digest).lower()):
            raise LedgerIntegrityError(
                f"event {event} of the ledger {self._path!r} is not the one anchored (its "
                "chain hash differs): the history was rewritten")

    def receipt(self, dataset: str, sequence: int, *, output_id: str | None = None
                ) -> dict[str, Any]:
        """The receipt of spend ``sequence`` of ``dataset``, as a delivered output carries
        it (``ledger.json``): the ledger file and identity, the dataset, the spend's number,
        event and chain hash, and the output's id (checked against the spend's).

        Raises
        ------
        LedgerIntegrityError
            The spend does not exist or names another output.
        """
        name = _check_dataset(dataset)

        def work(conn: sqlite3.Connection) -> dict[str, Any]:
            snapshot = self._load(conn)
            if name not in snapshot.states:
                raise self._unknown(conn, name)
            rows = snapshot.spends[name]
            if not (isinstance(sequence, int) and 1 <= sequence <= len(rows)):
                raise LedgerIntegrityError(
                    f"dataset {name!r} has no spend #{sequence} in {self._path!r}")
            row = rows[sequence - 1]
            recorded = json.loads(row["details_json"]).get("output_id")
            if output_id is not None and recorded is not None and recorded != output_id:
                raise LedgerIntegrityError(
                    f"spend #{sequence} of dataset {name!r} was charged for output "
                    f"{recorded!r}, not {output_id!r}")
            return {"ledger": self._path, "dataset": name, "spend": sequence,
                    "output_id": output_id if output_id is not None else recorded,
                    "ledger_id": snapshot.ledger_id, "event": row["event"],
                    "chain": row["chain"]}

        return self._transact(work, write=False)

    def verify_receipt(self, receipt: Mapping[str, Any]) -> SpendRecord:
        """Check an output's receipt (the ``ledger.json`` it was delivered with) against
        this ledger and return the spend it was charged as.

        The ledger must be the one named (its identity), hold the dataset and the spend
        with the same event, chain hash and output id. A receipt written before chained
        ledgers (no ``chain``) is checked by its spend number and output id only.

        Raises
        ------
        ReceiptError
            Saying what does not match: another ledger, a spend missing (the history was
            cut back, or an older copy of the ledger restored), a different chain hash (the
            history was rewritten), or another output.
        """
        if not isinstance(receipt, Mapping):
            raise TypeError(f"a receipt is a mapping (ledger.json); got {type(receipt).__name__}")
        name, sequence = receipt.get("dataset"), receipt.get("spend")
        if not isinstance(name, str) or isinstance(sequence, bool) or not isinstance(sequence, int):
            raise ReceiptError(f"a receipt names a dataset and a spend number; got {dict(receipt)!r}")

        def work(conn: sqlite3.Connection) -> SpendRecord:
            snapshot = self._load(conn)
            if receipt.get("ledger_id") not in (None, snapshot.ledger_id):
                raise ReceiptError(
                    f"the output was charged to another ledger (id {receipt['ledger_id']}); "
                    f"{self._path!r} is {snapshot.ledger_id}")
            if name not in snapshot.states:
                raise ReceiptError(f"the ledger {self._path!r} has no dataset {name!r}")
            rows = snapshot.spends[name]
            if not 1 <= sequence <= len(rows):
                raise ReceiptError(
                    f"the output was charged as spend #{sequence} of {name!r}, but the ledger "
                    f"{self._path!r} holds {len(rows)}: its history was cut back (an older "
                    "copy restored?)")
            row = rows[sequence - 1]
            if "chain" in receipt and (
                    not hmac.compare_digest(str(receipt["chain"]), str(row["chain"]))
                    or receipt.get("event") != row["event"]):
                raise ReceiptError(
                    f"spend #{sequence} of {name!r} in {self._path!r} is not the spend the "
                    "output was charged as (its event or chain hash differs): the history was "
                    "rewritten")
            recorded = json.loads(row["details_json"]).get("output_id")
            if receipt.get("output_id") is not None and recorded != receipt.get("output_id"):
                raise ReceiptError(
                    f"spend #{sequence} of {name!r} was charged for output {recorded!r}, not "
                    f"for this one ({receipt.get('output_id')!r})")
            return _spend_from_row(row, len(snapshot.states[name].spent))

        return self._transact(work, write=False)

    def restore_triggers(self) -> list[str]:
        """Put back the append-only triggers removed (or altered) outside dpggm, if the
        history still verifies without them; returns their names (and writes a note).

        Raises
        ------
        LedgerIntegrityError
            The history itself does not verify: nothing is changed.
        """

        def work(conn: sqlite3.Connection) -> list[str]:
            found = dict(conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"))
            changed = [name for name, sql in _TRIGGERS.items()
                       if _normalised(found.get(name)) != _normalised(sql)]
            for name in [*changed, *(n for n in found if n not in _TRIGGERS)]:
                conn.execute(f'DROP TRIGGER IF EXISTS "{name}"')
            for name in changed:
                conn.execute(_TRIGGERS[name])
            self._load(conn)
            if changed:
                conn.execute("INSERT INTO ledger_notes (time_utc, note) VALUES (?, ?)",
                             (_utc_now(), "append-only triggers restored after they were "
                              f"changed outside dpggm: {', '.join(changed)}; the history "
                              "verified"))
            return changed

        return self._transact(work, write=True)

    @classmethod
    def migrate(cls, path: str | os.PathLike[str], *, neighbors: str | None = None) -> bool:
        """Upgrade a ledger written by an older dpggm (schema version 1 or 2) in place.

        One transaction -- it happens entirely or not at all -- that first checks the old
        records (each dataset's history contiguous, adding up to its running total within
        its total; an inconsistent file is refused, not certified), then:

        * numbers every declaration and spend as an event and chains them (the hashes
          certify the history as it stands now: an edit made *before* the migration cannot
          be detected);
        * keeps every earlier spend as it was booked; an ``(epsilon, delta)`` total is then
          composed in zCDP, its earlier spends counting by basic composition and its later
          zCDP spends adding up to the largest rho that implies what they left;
        * restricts the file to its owner (0600) and writes all this into its notes.

        Parameters
        ----------
        path : str or os.PathLike
            The ledger file.
        neighbors : {"replace", "add-remove"}, optional
            Only for a version-1 file, which did not record the neighbouring relation: the
            relation every existing total and spend was made under (stored for each).

        Returns
        -------
        bool
            False if the file is already current.

        Raises
        ------
        FileNotFoundError, LedgerFormatError
            No file, or not a dpggm ledger of version 1, 2 or 3.
        LedgerIntegrityError
            The old records contradict each other; nothing is changed.
        ValueError
            ``neighbors`` missing for a version-1 file, or given for a later one.
        """
        relation = None if neighbors is None else check_neighbors(neighbors)
        raw = os.fspath(path)
        if not os.path.isfile(raw):
            raise FileNotFoundError(f"no ledger file at {raw!r}")
        ledger = cls.__new__(cls)
        ledger._path = os.path.abspath(raw)
        ledger._timeout = 30.0
        ledger._closed = False
        mode = stat.S_IMODE(os.stat(raw).st_mode) if os.name == "posix" else 0o600
        key = _environment_key()

        def work(conn: sqlite3.Connection) -> bool:
            try:
                rows = conn.execute("SELECT application, version FROM ledger_schema").fetchall()
            except sqlite3.OperationalError as exc:
                raise LedgerFormatError(f"{raw!r} is not a dpggm privacy ledger") from exc
            if len(rows) != 1 or rows[0][0] != APPLICATION:
                raise LedgerFormatError(f"{raw!r} is not a dpggm privacy ledger")
            version = rows[0][1]
            if version == SCHEMA_VERSION:
                return False
            if version not in (1, 2):
                raise LedgerFormatError(
                    f"{raw!r} has schema version {version!r}; only versions 1 and 2 can be "
                    "migrated")
            if version == 1 and relation is None:
                raise ValueError(
                    f"{raw!r} is a version-1 ledger, which does not record the neighbouring "
                    "relation of its totals: state the one its spends were made under "
                    "(neighbors='replace' or 'add-remove', --neighbors on the command line)")
            if version == 2 and relation is not None:
                raise ValueError(
                    f"{raw!r} records the neighbouring relation of every total already; "
                    "neighbors is only for a version-1 ledger")
            for (name,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
                conn.execute(f'DROP TRIGGER "{name}"')
            notes = []
            if version == 1:
                conn.execute(
                    "ALTER TABLE datasets ADD COLUMN neighbors TEXT NOT NULL DEFAULT 'replace' "
                    "CHECK (neighbors IN ('replace', 'add-remove'))")
                conn.execute("UPDATE datasets SET neighbors = ?", (relation,))
                conn.execute("CREATE TABLE IF NOT EXISTS ledger_notes "
                             "(time_utc TEXT NOT NULL, note TEXT NOT NULL)")
                notes.append(f"every existing total and spend stated by the user as under "
                             f"{relation!r} neighbours")
            notes += _migrate_to_chain(conn, raw, key)
            if mode & 0o077:
                notes.append(f"the file's permissions set to 0600 (they were {mode:04o})")
            conn.execute(
                "INSERT INTO ledger_notes (time_utc, note) VALUES (?, ?)",
                (_utc_now(), f"migrated from schema version {version} to {SCHEMA_VERSION}: "
                 + "; ".join(notes)))
            return True

        changed = ledger._transact(work, write=True, check_schema=False)
        if changed and mode & 0o077:
            try:
                os.chmod(raw, 0o600)
            except OSError as exc:
                warnings.warn(LedgerPermissionWarning(
                    f"could not restrict the migrated ledger {raw!r} to its owner ({exc}); "
                    f"run `chmod 600 {raw}`"), stacklevel=2)
        return changed


def _spend_from_row(row: Mapping[str, Any], width: int) -> SpendRecord:
    where = f"spend {row['sequence']} of {row['dataset']!r}"
    try:
        budget = _budget_from_json(row["budget_json"])
        details = json.loads(row["details_json"])
        when = datetime.fromisoformat(row["time_utc"])
    except (ValueError, TypeError, KeyError) as exc:
        raise LedgerIntegrityError(f"malformed record in {where}: {exc}") from exc
    return SpendRecord(
        dataset=row["dataset"],
        sequence=row["sequence"],
        mechanism=row["mechanism"],
        budget=budget,
        cost=_decode_cost(row["cost"], width=width, where=where),
        time=when,
        details=details,
        pid=row["pid"],
        host=row["host"],
        event=row["event"],
        chain=row["chain"],
    )


def _status(state: _DatasetState) -> DatasetStatus:
    if state.composition == ZCDP_COMPOSED:
        assert state.rho_limit is not None
        rho = state.spent[2]
        return DatasetStatus(
            dataset=state.name, total=state.total, neighbors=state.neighbors,
            composition=state.composition,
            limit=budget_from_cost(ZCDP, (state.rho_limit,)),
            spent=budget_from_cost(ZCDP, (rho,), rounding="up"),
            remaining=budget_from_cost(ZCDP, (state.rho_limit - rho,)),
            guarantee=composed_spent(state.total, state.spent),
            next_release=largest_release(state.total, state.spent, state.rho_limit),
            spends=state.count)
    notion = type(state.total)
    spent = reported_spent(notion, state.spent)
    remaining = reported_remaining(notion, state.limit, state.spent)
    left = any(lim > s for lim, s in zip(state.limit, state.spent))
    return DatasetStatus(
        dataset=state.name, total=state.total, neighbors=state.neighbors,
        composition=state.composition, limit=state.total, spent=spent, remaining=remaining,
        guarantee=spent, next_release=remaining if left else None, spends=state.count)


def _migrate_to_chain(conn: sqlite3.Connection, path: str, key: bytes | None) -> list[str]:
    """The version-3 part of :meth:`Ledger.migrate` on an open write transaction: check the
    old records, add the columns, compose (epsilon, delta) totals in zCDP, chain every
    record. Returns the notes to write."""
    added = {
        "ledger_schema": ["ledger_id TEXT NOT NULL DEFAULT ''",
                          "chain_mode TEXT NOT NULL DEFAULT 'sha256'",
                          "key_check TEXT NOT NULL DEFAULT ''",
                          "events INTEGER NOT NULL DEFAULT 0", "head TEXT NOT NULL DEFAULT ''"],
        "datasets": ["composition TEXT NOT NULL DEFAULT 'additive'", "rho_limit TEXT",
                     "event INTEGER NOT NULL DEFAULT 0", "chain TEXT NOT NULL DEFAULT ''"],
        "spends": ["spent_after TEXT NOT NULL DEFAULT ''", "rho_limit TEXT",
                   "event INTEGER NOT NULL DEFAULT 0", "chain TEXT NOT NULL DEFAULT ''"],
    }
    for table, columns in added.items():
        for column in columns:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
    declared = _rows(conn, "datasets", _DATASET_COLUMNS, "rowid")
    spends = _rows(conn, "spends", ("id", *_SPEND_COLUMNS), "id")
    ledger_id = uuid.uuid4().hex
    created = conn.execute("SELECT created_utc FROM ledger_schema").fetchone()[0]
    mode = _CHAIN_PLAIN if key is None else _CHAIN_KEYED
    check = "" if key is None else _key_check(key, ledger_id)
    previous = _digest(key, "", _genesis(ledger_id, created, mode, check))
    event, notes, updates = 0, [], []
    names = {row["name"] for row in declared}
    for row in spends:
        if row["dataset"] not in names:
            raise LedgerIntegrityError(
                f"cannot migrate {path!r}: spend {row['sequence']} names no declared dataset "
                f"({row['dataset']!r})")
    histories = {}
    for row in declared:
        event += 1
        total, history, spent, limit = _old_history(row, spends, path)
        composition = default_composition(total)
        row.update(event=event, composition=composition,
                   rho_limit=_encode_fraction(zcdp_limit(total, start_cost(total, composition))
                                              if composition == ZCDP_COMPOSED else None))
        row["chain"] = previous = _digest(key, previous, _declaration_record(row))
        histories[row["name"]] = (total, composition, history)
        if composition == ZCDP_COMPOSED and history:
            left = zcdp_limit(total, (spent[0], spent[1], Fraction(0)))
            notes.append(
                f"dataset {row['name']!r} ({total}) is now composed in zCDP: its "
                f"{len(history)} earlier spends stay booked by basic composition "
                f"({budget_from_cost(ApproxDP, spent, rounding='up')}), and its zCDP spends "
                f"may add up to rho = {float(left):.6g}")
    for row in declared:
        total, composition, history = histories[row["name"]]
        running = start_cost(total, composition)
        rho_limit = row["rho_limit"]
        for spend in history:
            cost = _decode_cost(spend["cost"], width=len(exact_cost(total, type(total))),
                                where=f"spend {spend['sequence']} of {row['name']!r}")
            if composition == ZCDP_COMPOSED:
                cost = (*cost, Fraction(0))
            running = tuple(r + c for r, c in zip(running, cost))
            if composition == ZCDP_COMPOSED:
                rho_limit = _encode_fraction(zcdp_limit(total, running))
            spend.update(cost=_encode_cost(cost), spent_after=_encode_cost(running),
                         rho_limit=rho_limit)
            updates.append(spend)
        row["spent_cost"] = _encode_cost(running)
    # Spends are chained after every declaration, in the order they were written.
    for spend in sorted(updates, key=lambda s: s["id"]):
        event += 1
        spend["event"] = event
        spend["chain"] = previous = _digest(key, previous, _spend_record(spend))
        conn.execute(
            "UPDATE spends SET cost = ?, spent_after = ?, rho_limit = ?, event = ?, chain = ? "
            "WHERE id = ?", (spend["cost"], spend["spent_after"], spend["rho_limit"],
                             spend["event"], spend["chain"], spend["id"]))
    for row in declared:
        conn.execute(
            "UPDATE datasets SET composition = ?, rho_limit = ?, event = ?, chain = ?, "
            "spent_cost = ? WHERE name = ?", (row["composition"], row["rho_limit"],
                                              row["event"], row["chain"], row["spent_cost"],
                                              row["name"]))
    conn.execute(
        "UPDATE ledger_schema SET version = ?, ledger_id = ?, chain_mode = ?, key_check = ?, "
        "events = ?, head = ?", (SCHEMA_VERSION, ledger_id, mode, check, event, previous))
    for statement in _split_sql(_INDEXES + "\n".join(_TRIGGERS.values())):
        conn.execute(statement)
    notes.insert(0, f"the history chained as it stood ({event} events"
                 + (", keyed by DPGGM_LEDGER_KEY" if key is not None else "") + ")")
    return notes


def _old_history(row: dict[str, Any], spends: list[dict[str, Any]], path: str
                 ) -> tuple[Budget, list[dict[str, Any]], tuple[Fraction, ...], tuple]:
    """A dataset of an old ledger, checked: its total, its spends in order, their exact sum
    (in the total's notion) and the limit."""
    name = row["name"]
    try:
        total = _budget_from_json(row["total_json"])
    except (ValueError, TypeError, KeyError) as exc:
        raise LedgerIntegrityError(
            f"cannot migrate {path!r}: the total of dataset {name!r} is malformed") from exc
    limit = exact_cost(total, type(total))
    history = sorted((s for s in spends if s["dataset"] == name), key=lambda s: s["sequence"])
    if [s["sequence"] for s in history] != list(range(1, len(history) + 1)) or (
            row["spend_count"] != len(history)):
        raise LedgerIntegrityError(
            f"cannot migrate {path!r}: the history of dataset {name!r} is not contiguous "
            f"({row['spend_count']} spends recorded, sequence numbers "
            f"{[s['sequence'] for s in history][:8]})")
    spent = [Fraction(0)] * len(limit)
    for spend in history:
        cost = _decode_cost(spend["cost"], width=len(limit),
                            where=f"spend {spend['sequence']} of {name!r}")
        spent = [s + c for s, c in zip(spent, cost)]
    recorded = _decode_cost(row["spent_cost"], width=len(limit), where=f"dataset {name!r}")
    if tuple(spent) != recorded or any(s > lim for s, lim in zip(spent, limit)):
        raise LedgerIntegrityError(
            f"cannot migrate {path!r}: the history of dataset {name!r} does not add up to "
            f"its running total within its total {total}")
    return total, history, tuple(spent), limit


def restore_triggers(path: str | os.PathLike[str]) -> list[str]:
    """:meth:`Ledger.restore_triggers` for a file that cannot be opened because its
    triggers were removed (opening verifies them)."""
    raw = os.fspath(path)
    if not os.path.isfile(raw):
        raise FileNotFoundError(f"no ledger file at {raw!r}")
    ledger = Ledger.__new__(Ledger)
    ledger._path = os.path.abspath(raw)
    ledger._timeout = 30.0
    ledger._closed = False
    return ledger.restore_triggers()


def spend_receipt(ledger: str | os.PathLike[str], dataset: str, sequence: int,
                  output_id: str) -> dict[str, Any]:
    """The receipt a delivered output carries for spend ``sequence`` of ``dataset`` in the
    ledger file ``ledger`` (see :meth:`Ledger.receipt`); ``"ledger"`` is the path as given."""
    receipt = Ledger(ledger, create=False).receipt(dataset, sequence, output_id=output_id)
    return {**receipt, "ledger": os.fspath(ledger)}


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
