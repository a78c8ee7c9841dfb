"""The ledger file is private to its owner and tamper-evident.

Before: a ledger was created 0644; with its append-only triggers dropped, deleting two
spends and fixing the running total, or raising a dataset's total to 100, went unnoticed
(a 0.6 spend was then accepted after 0.9 of 1.0 had been spent). Now every declaration and
spend is chained (SHA-256 of the previous hash and the canonical record, or HMAC-SHA-256
with DPGGM_LEDGER_KEY) and every use recomputes the chain. The chain is rebuilt here from
its documented format (docs/budget.md), independently of the library, to show what it
cannot detect on its own: a history rebuilt by whoever can write the file, or cut back --
which an output's receipt or a written-down head then exposes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import sqlite3
import stat
from contextlib import closing, contextmanager
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import legacy_ledgers
from dpggm.cli.main import app
from dpggm.exceptions import BudgetExceededError
from dpggm.privacy import ZCDP, ApproxDP, Ledger, LedgerFormatError, LedgerIntegrityError, PureDP
from dpggm.privacy.ledger import (
    SCHEMA_VERSION,
    LedgerPermissionError,
    LedgerPermissionWarning,
    ReceiptError,
)

runner = CliRunner()


def _raw(path) -> sqlite3.Connection:
    return sqlite3.connect(os.fspath(path), isolation_level=None)


@contextmanager
def _without_triggers(path):
    """Edit the file as its owner could: the triggers dropped, then put back as they were
    (so that only the edit itself is left to detect)."""
    with closing(_raw(path)) as conn:
        triggers = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
        for name, _ in triggers:
            conn.execute(f'DROP TRIGGER "{name}"')
        yield conn
        for _, sql in triggers:
            conn.execute(sql)


def _spent_text(value: Fraction) -> str:
    return json.dumps([f"{value.numerator}/{value.denominator}"])


@pytest.fixture
def ledger(tmp_path):
    book = Ledger(tmp_path / "l.db")
    book.declare("d", ZCDP(1.0))
    for _ in range(3):
        book.spend("d", ZCDP(0.3), mechanism="m")
    return book


# --------------------------------------------------------------------------- permissions


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_a_new_ledger_is_readable_and_writable_by_its_owner_only(tmp_path, umask):
    old = os.umask(umask)
    try:
        book = Ledger(tmp_path / "l.db")
        book.declare("d", ZCDP(1.0))
        book.spend("d", ZCDP(0.5), mechanism="m")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "l.db").st_mode) == 0o600


def test_a_ledger_every_user_may_write_is_refused_and_one_others_may_read_warns(ledger):
    os.chmod(ledger.path, 0o666)
    with pytest.raises(LedgerPermissionError, match=r"every user .*mode 0666.*chmod 600"):
        Ledger(ledger.path)
    os.chmod(ledger.path, 0o644)
    with pytest.warns(LedgerPermissionWarning, match=r"read by other users \(mode 0644\)"):
        Ledger(ledger.path)
    os.chmod(ledger.path, 0o660)
    with pytest.warns(LedgerPermissionWarning, match="written by its group"):
        Ledger(ledger.path)


# --------------------------------------------------------------------------- edits detected


def test_deleted_spends_with_a_fixed_running_total_are_detected(ledger):
    # The edit: 0.9 of 1.0 spent, two spends deleted and the total set back to 0.3.
    with _without_triggers(ledger.path) as conn:
        conn.execute("DELETE FROM spends WHERE sequence > 1")
        conn.execute("UPDATE datasets SET spent_cost = ?, spend_count = 1",
                     (_spent_text(Fraction(0.3)),))
    with pytest.raises(LedgerIntegrityError, match="removed from"):
        ledger.spend("d", ZCDP(0.6), mechanism="m")
    with closing(_raw(ledger.path)) as conn:
        assert conn.execute("SELECT count(*) FROM spends").fetchone()[0] == 1


def test_a_spend_deleted_from_the_middle_is_named(ledger):
    with _without_triggers(ledger.path) as conn:
        conn.execute("DELETE FROM spends WHERE sequence = 2")
        conn.execute("UPDATE datasets SET spent_cost = ?, spend_count = 2",
                     (_spent_text(Fraction(0.3) * 2),))
    with pytest.raises(LedgerIntegrityError, match=r"dataset 'd': spend #2 is missing"):
        Ledger(ledger.path)
    # Renumbered to hide the gap: the events still have one.
    with _without_triggers(ledger.path) as conn:
        conn.execute("UPDATE spends SET sequence = 2 WHERE sequence = 3")
    with pytest.raises(LedgerIntegrityError, match=r"breaks at event 3 \(next record: "
                       r"dataset 'd', spend #2, event 4\)"):
        ledger.check("d", ZCDP(0.01))
    # And the events renumbered too: the record no longer matches its hash.
    with _without_triggers(ledger.path) as conn:
        conn.execute("UPDATE spends SET event = 3 WHERE event = 4")
        conn.execute("UPDATE ledger_schema SET events = 3")
    with pytest.raises(LedgerIntegrityError,
                       match=r"dataset 'd', spend #2 \(event 3\) .* does not match its chain"):
        ledger.check("d", ZCDP(0.01))


def test_an_edited_total_is_detected(ledger):
    with _without_triggers(ledger.path) as conn:
        conn.execute("""UPDATE datasets SET total_json = '{"notion": "zcdp", "rho": 100.0}'""")
    with pytest.raises(LedgerIntegrityError,
                       match=r"dataset 'd' \(its declaration\) \(event 1\) .* chain hash"):
        ledger.spend("d", ZCDP(0.6), mechanism="m")
    assert len(_history_rows(ledger.path)) == 3


def _history_rows(path):
    with closing(_raw(path)) as conn:
        return conn.execute("SELECT sequence FROM spends").fetchall()


def test_dropped_triggers_are_detected_and_can_be_restored(ledger):
    with closing(_raw(ledger.path)) as conn:
        conn.execute("DROP TRIGGER spends_no_delete")
        conn.execute("DROP TRIGGER datasets_total_fixed")
    with pytest.raises(LedgerIntegrityError,
                       match=r"removed: spends_no_delete, datasets_total_fixed.*restore-triggers"):
        Ledger(ledger.path)
    with pytest.raises(LedgerIntegrityError, match="append-only rules"):
        ledger.spend("d", ZCDP(0.01), mechanism="m")
    assert ledger.restore_triggers() == ["spends_no_delete", "datasets_total_fixed"]
    assert "triggers restored" in ledger.notes()[-1][1]
    ledger.spend("d", ZCDP(0.1), mechanism="m")
    with closing(_raw(ledger.path)) as conn, pytest.raises(sqlite3.IntegrityError,
                                                           match="append-only"):
        conn.execute("DELETE FROM spends")


def test_triggers_are_not_restored_over_an_edited_history(ledger):
    with _without_triggers(ledger.path) as conn:
        conn.execute("UPDATE spends SET mechanism = 'x' WHERE sequence = 1")
    with closing(_raw(ledger.path)) as conn:
        conn.execute("DROP TRIGGER spends_no_update")
    with pytest.raises(LedgerIntegrityError, match=r"spend #1 .*does not match its chain"):
        ledger.restore_triggers()
    with closing(_raw(ledger.path)) as conn:
        names = {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert "spends_no_update" not in names


# --------------------------------------------------------------------------- what a chain
# cannot show alone, and what shows it


def _rebuild_chain(path, key: bytes | None = None) -> str:
    """Recompute every hash after an edit, as the file's owner could (documented format)."""

    def digest(previous, record):
        message = (previous + "\n" + json.dumps(record, sort_keys=True, separators=(",", ":"),
                                                ensure_ascii=True)).encode("ascii")
        if key is None:
            return hashlib.sha256(message).hexdigest()
        return hmac.new(key, message, hashlib.sha256).hexdigest()

    with _without_triggers(path) as conn:
        ledger_id, created, mode, check = conn.execute(
            "SELECT ledger_id, created_utc, chain_mode, key_check FROM ledger_schema").fetchone()
        previous = digest("", {"kind": "ledger", "application": "dpggm-privacy-ledger",
                               "ledger_id": ledger_id, "created_utc": created,
                               "chain_mode": mode, "key_check": check})
        entries = []
        for row in conn.execute(
                "SELECT event, name, notion, total_json, neighbors, description, declared_utc, "
                "composition, rho_limit FROM datasets"):
            entries.append((row[0], "datasets", "name", row[1], {
                "kind": "declare", "event": row[0], "dataset": row[1], "notion": row[2],
                "total": row[3], "neighbors": row[4], "description": row[5],
                "declared_utc": row[6], "composition": row[7], "rho_limit": row[8]}))
        for row in conn.execute(
                "SELECT event, id, dataset, sequence, mechanism, budget_json, cost, time_utc, "
                "details_json, pid, host, spent_after, rho_limit FROM spends"):
            entries.append((row[0], "spends", "id", row[1], {
                "kind": "spend", "event": row[0], "dataset": row[2], "sequence": row[3],
                "mechanism": row[4], "budget": row[5], "cost": row[6], "time_utc": row[7],
                "details": row[8], "pid": row[9], "host": row[10], "spent_after": row[11],
                "rho_limit": row[12]}))
        for _, table, column, value, record in sorted(entries, key=lambda e: e[0]):
            previous = digest(previous, record)
            conn.execute(f"UPDATE {table} SET chain = ? WHERE {column} = ?", (previous, value))
        conn.execute("UPDATE ledger_schema SET events = ?, head = ?", (len(entries), previous))
    return previous


def test_the_documented_chain_format_is_the_one_written(ledger):
    with closing(_raw(ledger.path)) as conn:
        head = conn.execute("SELECT head FROM ledger_schema").fetchone()[0]
    assert _rebuild_chain(ledger.path) == head
    assert ledger.verify().head == head


def test_a_rebuilt_chain_passes_alone_but_not_against_a_receipt(ledger):
    receipt = ledger.receipt("d", 3)
    with _without_triggers(ledger.path) as conn:
        conn.execute("UPDATE spends SET mechanism = 'something else' WHERE sequence = 3")
    _rebuild_chain(ledger.path)
    ledger.verify()  # the owner of the file can rebuild the chain: documented
    with pytest.raises(ReceiptError, match=r"spend #3 .* chain hash differs"):
        ledger.verify_receipt(receipt)


def test_a_restored_older_copy_is_caught_by_a_receipt_or_an_anchor(ledger, tmp_path):
    older = tmp_path / "older.db"
    shutil.copy2(ledger.path, older)
    record = ledger.spend("d", ZCDP(0.1), mechanism="m")
    summary = ledger.verify()
    receipt = ledger.receipt("d", record.sequence, output_id=None)
    shutil.copy2(older, ledger.path)
    ledger.verify()  # a consistent, older history: nothing in the file tells
    with pytest.raises(ReceiptError, match=r"spend #4 of 'd'.*holds 3.*cut back"):
        ledger.verify_receipt(receipt)
    with pytest.raises(LedgerIntegrityError, match="fewer than the 5 of the anchor"):
        ledger.verify(anchor=(summary.events, summary.head))
    # Against the current file, the same anchor holds.
    assert ledger.verify(anchor=(4, ledger.receipt("d", 3)["chain"])).events == 4


def test_a_receipt_of_another_ledger_or_output_is_refused(ledger, tmp_path):
    other = Ledger(tmp_path / "other.db")
    other.declare("d", ZCDP(1.0))
    other.spend("d", ZCDP(0.3), mechanism="m", details={"output_id": "abc"})
    with pytest.raises(ReceiptError, match="another ledger"):
        ledger.verify_receipt(other.receipt("d", 1))
    receipt = other.receipt("d", 1, output_id="abc")
    assert other.verify_receipt(receipt).sequence == 1
    with pytest.raises(ReceiptError, match="not for this one"):
        other.verify_receipt({**receipt, "output_id": "xyz"})
    with pytest.raises(LedgerIntegrityError, match="was charged for output 'abc'"):
        other.receipt("d", 1, output_id="xyz")


def test_a_keyed_chain_cannot_be_rebuilt_without_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("DPGGM_LEDGER_KEY", "correct horse battery staple")
    book = Ledger(tmp_path / "k.db")
    book.declare("d", ZCDP(1.0))
    book.spend("d", ZCDP(0.9), mechanism="m")
    assert book.verify().chain_mode == "hmac-sha256"
    with _without_triggers(book.path) as conn:
        conn.execute("""UPDATE datasets SET total_json = '{"notion": "zcdp", "rho": 100.0}'""")
    _rebuild_chain(book.path)  # with SHA-256: no key
    with pytest.raises(LedgerIntegrityError, match="does not match its chain hash"):
        book.spend("d", ZCDP(0.6), mechanism="m")
    _rebuild_chain(book.path, key=b"correct horse battery staple")  # whoever holds the key can
    book.verify()
    monkeypatch.setenv("DPGGM_LEDGER_KEY", "wrong")
    with pytest.raises(LedgerIntegrityError, match="does not hold the key"):
        book.verify()
    monkeypatch.delenv("DPGGM_LEDGER_KEY")
    with pytest.raises(LedgerIntegrityError, match="sealed with a secret key"):
        Ledger(book.path)


# --------------------------------------------------------------------------- properties

_OPERATIONS = st.lists(st.tuples(st.sampled_from(["z", "a"]),
                                 st.sampled_from([ZCDP(0.05), ZCDP(0.4), PureDP(0.3),
                                                  ApproxDP(0.5, 1e-7)])), max_size=6)


def _edit_values(value):
    """Values different from ``value`` that a column could hold."""
    if value is None:
        return ["1/1"]
    if isinstance(value, int):
        return [value + 1]
    changes = {"replace": "add-remove", "add-remove": "replace", "additive": "zcdp",
               "zcdp": "additive", "sha256": "hmac-sha256"}
    if value in changes:
        return [changes[value]]
    return [value + "0", value[:-1] + ("1" if value[-1:] != "1" else "2")]


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(operations=_OPERATIONS, data=st.data())
def test_the_chain_verifies_after_any_valid_operations_and_fails_after_any_edit(
        tmp_path_factory, operations, data):
    path = tmp_path_factory.mktemp("l") / "l.db"
    book = Ledger(path)
    book.declare("z", ZCDP(1.0))
    book.declare("a", ApproxDP(3.0, 1e-6), description="survey")
    for dataset, budget in operations:
        try:
            book.spend(dataset, budget, mechanism="m", details={"k": 1})
        except (BudgetExceededError, ValueError):
            pass  # a refusal changes nothing: the chain must still verify
        book.verify()
    cells = []
    with closing(_raw(path)) as conn:
        for table in ("datasets", "spends", "ledger_schema"):
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            for rowid, *values in conn.execute(f"SELECT rowid, * FROM {table}"):
                cells += [(table, rowid, column, value)
                          for column, value in zip(columns, values) if column != "id"]
    table, rowid, column, value = data.draw(st.sampled_from(cells))
    new = data.draw(st.sampled_from(_edit_values(value)))
    with _without_triggers(path) as conn:
        try:
            conn.execute(f'UPDATE {table} SET "{column}" = ? WHERE rowid = ?', (new, rowid))
            possible = True
        except sqlite3.IntegrityError:
            possible = False  # e.g. a sequence number taken: SQLite itself refuses the edit
    assume(possible)
    with pytest.raises((LedgerIntegrityError, LedgerFormatError)):
        Ledger(path).verify()


# --------------------------------------------------------------------------- CLI


def test_cli_verify_reports_an_intact_ledger_and_an_edit(ledger, tmp_path):
    done = runner.invoke(app, ["budget", "verify", ledger.path])
    assert done.exit_code == 0, done.output
    text = " ".join(done.output.split())
    assert "history intact (4 events, 1 dataset, SHA-256)" in text
    head = next(line for line in done.output.splitlines() if line.startswith("head: "))[6:]
    again = runner.invoke(app, ["budget", "verify", ledger.path, "--anchor", head])
    assert again.exit_code == 0 and "anchor 4 found unchanged" in again.output
    with _without_triggers(ledger.path) as conn:
        conn.execute("UPDATE spends SET budget_json = ? WHERE sequence = 2",
                     ('{"notion": "zcdp", "rho": 0.01}',))
    failed = runner.invoke(app, ["budget", "verify", ledger.path])
    assert failed.exit_code == 1
    assert "FAILED: dataset 'd', spend #2 (event 3)" in " ".join(failed.output.split())
    shown = runner.invoke(app, ["budget", "show", ledger.path])
    assert shown.exit_code == 2 and "does not match its chain hash" in shown.output


def test_cli_restore_triggers(ledger):
    with closing(_raw(ledger.path)) as conn:
        conn.execute("DROP TRIGGER spends_no_update")
    assert runner.invoke(app, ["budget", "show", ledger.path]).exit_code == 2
    done = runner.invoke(app, ["budget", "verify", ledger.path, "--restore-triggers"])
    assert done.exit_code == 0, done.output
    assert "restored the append-only triggers: spends_no_update" in done.output


# --------------------------------------------------------------------------- migration


def _legacy(tmp_path, version):
    path = tmp_path / f"v{version}.db"
    legacy_ledgers.write(
        path, version=version,
        datasets=[("z", "zcdp", {"rho": 1.0}, "replace"),
                  ("used", "approx-dp", {"epsilon": 3.0, "delta": 1e-6}, "replace"),
                  ("part", "approx-dp", {"epsilon": 3.0, "delta": 1e-6}, "replace")],
        spends=[("z", "zcdp", {"rho": 0.25}, (Fraction(0.25),)),
                # The booking: graph --rho 0.1 as (2.14, 1e-6) by basic composition.
                ("used", "approx-dp", {"epsilon": 2.1419389283854735, "delta": 1e-6},
                 (Fraction(2.1419389283854735), Fraction(1e-6))),
                ("part", "approx-dp", {"epsilon": 1.0, "delta": 1e-7},
                 (Fraction(1.0), Fraction(1e-7))),
                ("part", "pure-dp", {"epsilon": 0.5}, (Fraction(0.5), Fraction(0)))])
    os.chmod(path, 0o644)
    return path


def test_an_older_ledger_is_refused_until_migrated_explicitly(tmp_path):
    path = _legacy(tmp_path, 2)
    with pytest.raises(LedgerFormatError, match=r"schema version 2.*dpggm budget migrate"):
        Ledger(path, create=False)
    with pytest.raises(ValueError, match="only for a version-1 ledger"):
        Ledger.migrate(path, neighbors="replace")
    assert Ledger.migrate(path) is True
    assert Ledger.migrate(path) is False
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    book = Ledger(path, create=False)
    summary = book.verify()
    assert summary.events == 3 + 4 and summary.datasets == ("part", "used", "z")
    # Every earlier spend kept as booked.
    assert book.exact_spent("z") == (Fraction(1, 4),)
    assert [r.budget for r in book.history("part")] == [ApproxDP(1.0, 1e-7), PureDP(0.5)]
    # The ledger: its delta was spent by basic composition, so no zCDP spend fits.
    assert book.status("used").limit == ZCDP(0.0)
    with pytest.raises(BudgetExceededError):
        book.spend("used", ZCDP(0.01), mechanism="m")
    # Where the earlier spends left (1.5, 9e-7), zCDP spends may add up to what implies it.
    left = book.status("part").limit.rho
    assert 0.0 < left == book.remaining("part").rho
    book.spend("part", ZCDP(left), mechanism="m")
    note = book.notes()[-1][1]
    assert "from schema version 2 to 3" in note and "0600 (they were 0644)" in note
    assert "'part'" in note and "basic composition" in note
    with closing(_raw(path)) as conn:
        assert conn.execute("SELECT version FROM ledger_schema").fetchone()[0] == SCHEMA_VERSION


def test_a_version_one_ledger_needs_its_relation(tmp_path):
    path = _legacy(tmp_path, 1)
    with pytest.raises(LedgerFormatError, match="--neighbors replace"):
        Ledger(path, create=False)
    with pytest.raises(ValueError, match="state the one its spends were made under"):
        Ledger.migrate(path)
    assert Ledger.migrate(path, neighbors="add-remove") is True
    book = Ledger(path, create=False)
    assert book.neighbors("z") == "add-remove"
    assert "'add-remove' neighbours" in book.notes()[-1][1]
    book.verify()
    with closing(_raw(path)) as conn, pytest.raises(sqlite3.IntegrityError,
                                                    match="cannot be changed"):
        conn.execute("UPDATE datasets SET neighbors = 'replace'")


def test_an_inconsistent_older_ledger_is_not_migrated(tmp_path):
    path = _legacy(tmp_path, 2)
    with closing(_raw(path)) as conn:
        conn.execute("UPDATE datasets SET spent_cost = ? WHERE name = 'z'",
                     (_spent_text(Fraction(0)),))
    with pytest.raises(LedgerIntegrityError, match="cannot migrate .*'z'"):
        Ledger.migrate(path)
    with closing(_raw(path)) as conn:
        assert conn.execute("SELECT version FROM ledger_schema").fetchone()[0] == 2
        columns = [row[1] for row in conn.execute("PRAGMA table_info(spends)")]
    assert "chain" not in columns


def test_cli_migrate_says_what_it_did(tmp_path):
    path = _legacy(tmp_path, 2)
    done = runner.invoke(app, ["budget", "migrate", str(path)])
    assert done.exit_code == 0, done.output
    text = " ".join(done.output.split())
    assert "the history chained as it stood (7 events)" in text
    assert "dataset 'used'" in text and "may add up to rho = 0" in text
    again = runner.invoke(app, ["budget", "migrate", str(path)])
    assert "already current" in " ".join(again.output.split())
