"""Ledger files as dpggm wrote them before schema version 3 (the layouts frozen here, not
taken from the library), for the migration tests."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from fractions import Fraction

_V2_TABLES = """
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
"""

# Version 1 had no relation column and no notes.
_V1_TABLES = (_V2_TABLES
              .replace(",\n    neighbors TEXT NOT NULL DEFAULT 'replace' CHECK (neighbors IN "
                       "('replace', 'add-remove'))\n", "\n")
              .replace("CREATE TABLE ledger_notes (\n    time_utc TEXT NOT NULL,\n"
                       "    note TEXT NOT NULL\n);\n", "")
              .replace("BEFORE UPDATE OF name, notion, total_json, neighbors",
                       "BEFORE UPDATE OF name, notion, total_json"))


def _budget(notion: str, **fields: float) -> str:
    return json.dumps({"notion": notion, **fields})


def _cost(values) -> str:
    return json.dumps([f"{Fraction(v).numerator}/{Fraction(v).denominator}" for v in values])


def write(path, *, version: int, datasets, spends) -> None:
    """A version-1 or -2 ledger. ``datasets``: (name, notion, fields, neighbors);
    ``spends``: (dataset, notion, fields, exact cost as a tuple of Fractions), in order."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(_V1_TABLES if version == 1 else _V2_TABLES)
        conn.execute("PRAGMA application_id = 1145128780")
        conn.execute("INSERT INTO ledger_schema VALUES ('dpggm-privacy-ledger', ?, "
                     "'2025-01-01T00:00:00.000000+00:00')", (version,))
        sums, counts = {}, {}
        for name, notion, fields, neighbors in datasets:
            width = 2 if notion == "approx-dp" else 1
            sums[name], counts[name] = [Fraction(0)] * width, 0
            columns = "name, notion, total_json, spent_cost, spend_count, description, declared_utc"
            values = [name, notion, _budget(notion, **fields), _cost(sums[name]), 0, "",
                      "2025-01-01T00:00:01.000000+00:00"]
            if version == 2:
                columns += ", neighbors"
                values.append(neighbors)
            conn.execute(f"INSERT INTO datasets ({columns}) VALUES "
                         f"({', '.join('?' * len(values))})", values)
        for number, (name, notion, fields, cost) in enumerate(spends):
            counts[name] += 1
            sums[name] = [s + c for s, c in zip(sums[name], cost)]
            conn.execute(
                "INSERT INTO spends (dataset, sequence, mechanism, budget_json, cost, time_utc, "
                "details_json, pid, host) VALUES (?, ?, 'dpggm graph', ?, ?, ?, '{}', 1, 'h')",
                (name, counts[name], _budget(notion, **fields), _cost(cost),
                 f"2025-01-02T00:00:{number:02d}.000000+00:00"))
        for name in sums:
            conn.execute("UPDATE datasets SET spent_cost = ?, spend_count = ? WHERE name = ?",
                         (_cost(sums[name]), counts[name], name))
