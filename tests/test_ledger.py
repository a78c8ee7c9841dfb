"""Tests of the persistent privacy-budget ledger (dpggm.privacy.ledger)."""

from __future__ import annotations

import itertools
import math
import multiprocessing
import os
import pickle
import random
import signal
import sqlite3
import threading
import time
from collections import Counter
from contextlib import closing
from datetime import datetime, timedelta, timezone
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpggm.exceptions import BudgetExceededError, IncompatibleBudgetError
from dpggm.privacy.budgets import GDP, ZCDP, ApproxDP, NonPrivate, PureDP
from dpggm.privacy.ledger import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    Ledger,
    LedgerFormatError,
    LedgerIntegrityError,
    SpendRecord,
    UnknownDatasetError,
)

# Fork starts workers in milliseconds; spawn would re-import numpy/scipy/sklearn in each.
FORK = multiprocessing.get_context("fork")


def _raw(path) -> sqlite3.Connection:
    return sqlite3.connect(os.fspath(path), isolation_level=None)


def _largest_float_at_most(value: Fraction) -> float:
    """Independent of the library: scale by a power of two and take the integer floor."""
    if value <= 0:
        return 0.0
    exponent = math.floor(math.log2(value.numerator) - math.log2(value.denominator))
    while Fraction(2) ** exponent > value:
        exponent -= 1
    while Fraction(2) ** (exponent + 1) <= value:
        exponent += 1
    ulp_exponent = max(exponent - 52, -1074)
    units = math.floor(value / Fraction(2) ** ulp_exponent)
    return math.ldexp(units, ulp_exponent)


# --------------------------------------------------------------------------- concurrency


def _spend_repeatedly(path, dataset, attempts, start, results):
    ledger = Ledger(path)
    start.wait()
    accepted = refused = 0
    for attempt in range(attempts):
        try:
            ledger.spend(dataset, ZCDP(2.0**-6), mechanism="gaussian", details={"attempt": attempt})
            accepted += 1
        except BudgetExceededError:
            refused += 1
    results.put((os.getpid(), accepted, refused))


def test_eight_processes_spend_exactly_the_total(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    ledger = Ledger(path)
    ledger.declare("survey", ZCDP(1.0))
    start, results = FORK.Event(), FORK.Queue()
    workers = [
        FORK.Process(target=_spend_repeatedly, args=(path, "survey", 50, start, results))
        for _ in range(8)
    ]
    for worker in workers:
        worker.start()
    start.set()
    outcomes = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0

    capacity = Fraction(1) / Fraction(2.0**-6)
    assert sum(accepted for _, accepted, _ in outcomes) == capacity == 64
    assert sum(refused for _, _, refused in outcomes) == 8 * 50 - capacity
    history = ledger.history("survey")
    assert [record.sequence for record in history] == list(range(1, 65))
    # Every worker's own count agrees with what the ledger attributes to its pid.
    assert Counter(record.pid for record in history) == {
        pid: accepted for pid, accepted, _ in outcomes if accepted
    }
    running = Fraction(0)
    for record in history:
        running += Fraction(record.budget.rho)
        assert running <= 1
    assert running == 1
    assert ledger.exact_spent("survey") == (Fraction(1),)
    assert ledger.spent("survey") == ZCDP(1.0)
    assert ledger.remaining("survey") == ZCDP(0.0)
    ledger.verify()


def test_threads_share_one_ledger_object(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("d", ZCDP(1.0))
    accepted = []

    def spend_ten():
        for _ in range(10):
            try:
                ledger.spend("d", ZCDP(2.0**-5), mechanism="gaussian")
                accepted.append(1)
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=spend_ten) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(accepted) == 32
    assert sum(Fraction(r.budget.rho) for r in ledger.history("d")) == 1


def test_lock_held_elsewhere_times_out_without_recording(tmp_path):
    path = tmp_path / "ledger.sqlite"
    ledger = Ledger(path, timeout=0.3)
    ledger.declare("d", ZCDP(1.0))
    with closing(_raw(path)) as blocker:
        blocker.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="locked"):
            ledger.spend("d", ZCDP(0.5), mechanism="gaussian")
        assert time.monotonic() - started >= 0.3
        blocker.execute("ROLLBACK")
    assert ledger.history("d") == []
    ledger.spend("d", ZCDP(0.5), mechanism="gaussian")


# --------------------------------------------------------------------------- exactness


def test_three_spends_of_a_tenth_against_three_tenths(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("d", ZCDP(0.3))
    ledger.spend("d", ZCDP(0.1), mechanism="m")
    ledger.spend("d", ZCDP(0.1), mechanism="m")
    with localcontext() as context:
        # Decimal(float) is the float's exact binary value; 80 digits hold these sums exactly.
        context.prec = 80
        third_fits = Decimal(0.1) * 3 <= Decimal(0.3)
    assert third_fits == (3 * Fraction(0.1) <= Fraction(0.3))
    assert ledger.can_spend("d", ZCDP(0.1)) is third_fits
    if third_fits:
        ledger.spend("d", ZCDP(0.1), mechanism="m")
    else:
        with pytest.raises(BudgetExceededError, match="would exceed"):
            ledger.spend("d", ZCDP(0.1), mechanism="m")
    assert len(ledger.history("d")) == 2 + third_fits


def test_overspend_hidden_by_float_rounding_is_refused(tmp_path):
    rng = random.Random(7)
    # A pair whose floating-point sum rounds *down* onto the total while the exact sum
    # exceeds it: a float accountant would accept the second spend.
    while True:
        a, b = rng.random(), rng.random()
        if Fraction(a) + Fraction(b) > Fraction(a + b):
            break
    total = a + b
    assert a + b <= total
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("d", ZCDP(total))
    ledger.spend("d", ZCDP(a), mechanism="first")
    assert not ledger.can_spend("d", ZCDP(b))
    with pytest.raises(BudgetExceededError):
        ledger.spend("d", ZCDP(b), mechanism="second")
    assert ledger.exact_spent("d") == (Fraction(a),)


def test_fitting_spends_that_float_accumulation_overshoots_are_accepted(tmp_path):
    rng = random.Random(11)
    # Spends whose exact sum fits the total although the float running sum exceeds it.
    while True:
        spends = [rng.random() for _ in range(12)]
        exact = sum(map(Fraction, spends))
        total = float(exact)
        if Fraction(total) < exact:
            total = math.nextafter(total, math.inf)
        accumulated = 0.0
        for value in spends:
            accumulated += value
        if accumulated > total:
            break
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("d", ZCDP(total))
    for value in spends:
        ledger.spend("d", ZCDP(value), mechanism="m")
    assert ledger.exact_spent("d") == (exact,)
    assert ledger.spent("d").rho == total


@pytest.mark.parametrize(
    "total, earlier",
    [
        (ZCDP(1.0), [ZCDP(0.1), ZCDP(0.2)]),
        (ZCDP(0.7), [PureDP(0.3), GDP(0.45)]),
        (PureDP(2.0), [PureDP(0.1), PureDP(0.7)]),
        (GDP(1.3), [GDP(0.4), GDP(0.7)]),
        (ApproxDP(1.0, 1e-5), [ApproxDP(0.1, 3e-6), PureDP(0.2)]),
    ],
)
def test_spending_the_remainder_succeeds_and_one_ulp_more_is_refused(tmp_path, total, earlier):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("d", total)
    for budget in earlier:
        ledger.spend("d", budget, mechanism="earlier")
    remaining = ledger.remaining("d")
    assert type(remaining) is (ZCDP if isinstance(total, ApproxDP) else type(total))

    if isinstance(total, GDP):
        left = Fraction(total.mu) ** 2 - sum(Fraction(b.mu) ** 2 for b in earlier)
        # The largest mu with mu**2 <= left, checked by its defining property.
        assert Fraction(remaining.mu) ** 2 <= left
        assert Fraction(math.nextafter(remaining.mu, math.inf)) ** 2 > left
        too_much = [GDP(math.nextafter(remaining.mu, math.inf))]
    elif isinstance(total, ApproxDP):
        # Composed in zCDP: the (epsilon, delta)-only spend first (basic composition), the
        # pure one as epsilon**2 / 2; what remains is the rho left under the limit.
        assert isinstance(remaining, ZCDP)
        limit = Fraction(ledger.status("d").limit.rho)
        left = limit - Fraction(earlier[1].epsilon) ** 2 / 2
        assert remaining.rho == _largest_float_at_most(left)
        too_much = [ZCDP(math.nextafter(remaining.rho, math.inf))]
    elif isinstance(total, PureDP):
        left = Fraction(total.epsilon) - sum(Fraction(b.epsilon) for b in earlier)
        assert remaining.epsilon == _largest_float_at_most(left)
        too_much = [PureDP(math.nextafter(remaining.epsilon, math.inf))]
    else:
        costs = {
            ZCDP: lambda b: Fraction(b.rho),
            PureDP: lambda b: Fraction(b.epsilon) ** 2 / 2,
            GDP: lambda b: Fraction(b.mu) ** 2 / 2,
        }
        left = Fraction(total.rho) - sum(costs[type(b)](b) for b in earlier)
        assert remaining.rho == _largest_float_at_most(left)
        too_much = [ZCDP(math.nextafter(remaining.rho, math.inf))]

    for budget in too_much:
        assert not ledger.can_spend("d", budget)
        with pytest.raises(BudgetExceededError):
            ledger.spend("d", budget, mechanism="one ulp too much")
    assert len(ledger.history("d")) == len(earlier)
    assert ledger.can_spend("d", remaining)
    ledger.spend("d", remaining, mechanism="the rest")
    assert len(ledger.history("d")) == len(earlier) + 1


_counter = itertools.count()
_small_floats = st.floats(min_value=0.0, max_value=0.5, allow_nan=False, allow_subnormal=True)
_spends = st.one_of(
    st.builds(ZCDP, _small_floats), st.builds(PureDP, _small_floats), st.builds(GDP, _small_floats)
)


@settings(max_examples=25, deadline=None)
@given(
    total=st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    spends=st.lists(_spends, max_size=6),
)
def test_ledger_matches_an_exact_model(tmp_path_factory, total, spends):
    ledger = Ledger(tmp_path_factory.getbasetemp() / "property.sqlite")
    dataset = f"d{next(_counter)}"
    ledger.declare(dataset, ZCDP(total))
    model = Fraction(0)
    for budget in spends:
        cost = {
            ZCDP: lambda b: Fraction(b.rho),
            PureDP: lambda b: Fraction(b.epsilon) ** 2 / 2,
            GDP: lambda b: Fraction(b.mu) ** 2 / 2,
        }[type(budget)](budget)
        fits = model + cost <= Fraction(total)
        assert ledger.can_spend(dataset, budget) is fits
        if fits:
            record = ledger.spend(dataset, budget, mechanism="m")
            assert record.cost == (cost,)
            model += cost
        else:
            with pytest.raises(BudgetExceededError):
                ledger.spend(dataset, budget, mechanism="m")
    assert ledger.exact_spent(dataset) == (model,)
    spent = ledger.spent(dataset).rho
    assert Fraction(spent) >= model
    assert spent == 0.0 or Fraction(math.nextafter(spent, -math.inf)) < model


def test_tiny_costs_with_huge_denominators_round_trip(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("d", ZCDP(1.0))
    tiny = [PureDP(5e-324), GDP(2.2250738585072014e-308), ZCDP(1e-300)]
    for budget in tiny:
        ledger.spend("d", budget, mechanism="tiny")
    expected = Fraction(5e-324) ** 2 / 2 + Fraction(2.2250738585072014e-308) ** 2 / 2
    expected += Fraction(1e-300)
    assert expected.denominator > 2**2000  # far beyond SQLite's 64-bit integers
    reopened = Ledger(tmp_path / "ledger.sqlite")
    assert reopened.exact_spent("d") == (expected,)
    assert sum(r.cost[0] for r in reopened.history("d")) == expected


# --------------------------------------------------------------------------- crash safety


def _spend_until_killed(path, ready):
    ledger = Ledger(path)
    for step in itertools.count():
        ledger.spend("d", ZCDP(2.0**-12), mechanism="loop", details={"step": step})
        ready.set()


def _assert_consistent(path, total):
    with closing(_raw(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    ledger = Ledger(path)
    ledger.verify()
    history = ledger.history("d")
    assert [r.sequence for r in history] == list(range(1, len(history) + 1))
    summed = sum((Fraction(r.budget.rho) for r in history), Fraction(0))
    assert ledger.exact_spent("d") == (summed,)
    assert summed <= Fraction(total.rho)
    return history


def test_processes_killed_at_random_points_leave_a_consistent_ledger(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    total = ZCDP(1.0)
    Ledger(path).declare("d", total)
    rng = random.Random(20240611)
    recorded = 0
    for _ in range(6):
        ready = FORK.Event()
        worker = FORK.Process(target=_spend_until_killed, args=(path, ready))
        worker.start()
        assert ready.wait(timeout=30)
        time.sleep(rng.uniform(0.0, 0.04))
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(timeout=30)
        assert worker.exitcode == -signal.SIGKILL
        history = _assert_consistent(path, total)
        assert len(history) > recorded
        recorded = len(history)
    Ledger(path).spend("d", ZCDP(2.0**-12), mechanism="after the kills")
    assert len(_assert_consistent(path, total)) == recorded + 1


def _die_inside_a_large_write(path, ready):
    conn = _raw(path)
    # A tiny page cache forces SQLite to write uncommitted pages into the database file
    # (after saving the originals in the rollback journal) before the commit.
    conn.execute("PRAGMA cache_size = 5")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE datasets SET spent_cost = '[\"0/1\"]', spend_count = 0")
    conn.execute("CREATE TABLE filler (payload BLOB)")
    conn.execute("INSERT INTO filler VALUES (randomblob(2000000))")
    ready.set()
    time.sleep(120)


def test_writer_killed_after_partial_writes_is_rolled_back(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    total = ZCDP(1.0)
    ledger = Ledger(path)
    ledger.declare("d", total)
    for step in range(3):
        ledger.spend("d", ZCDP(0.125), mechanism="before", details={"step": step})
    before = ledger.history("d")
    size_before = os.path.getsize(path)

    ready = FORK.Event()
    worker = FORK.Process(target=_die_inside_a_large_write, args=(path, ready))
    worker.start()
    assert ready.wait(timeout=30)
    assert os.path.exists(path + "-journal")
    assert os.path.getsize(path) > size_before + 1_000_000  # uncommitted pages on disk
    os.kill(worker.pid, signal.SIGKILL)
    worker.join(timeout=30)
    assert worker.exitcode == -signal.SIGKILL

    assert _assert_consistent(path, total) == before
    assert os.path.getsize(path) == size_before
    assert not os.path.exists(path + "-journal")
    with closing(_raw(path)) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "filler" not in tables
    assert ledger.remaining("d") == ZCDP(0.625)
    ledger.spend("d", ZCDP(0.625), mechanism="after")


# --------------------------------------------------------------------------- conversion


def test_pure_and_gaussian_dp_spends_count_against_a_zcdp_total(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("d", ZCDP(0.5))
    pure = ledger.spend("d", PureDP(0.3), mechanism="laplace")
    gdp = ledger.spend("d", GDP(0.7), mechanism="gaussian")
    assert pure.cost == (Fraction(0.3) ** 2 / 2,)
    assert gdp.cost == (Fraction(0.7) ** 2 / 2,)
    assert ledger.exact_spent("d") == (Fraction(0.3) ** 2 / 2 + Fraction(0.7) ** 2 / 2,)
    history = ledger.history("d")
    assert history[0].budget == PureDP(0.3)
    assert history[1].budget == GDP(0.7)


def test_approx_dp_only_spends_add_by_basic_composition_before_any_zcdp_spend(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("d", ApproxDP(1.0, 1e-6))
    ledger.spend("d", ApproxDP(0.25, 4e-7), mechanism="gaussian")
    ledger.spend("d", ApproxDP(0.25, 2e-7), mechanism="gaussian")
    assert ledger.exact_spent("d") == (Fraction(0.5), Fraction(4e-7) + Fraction(2e-7), 0)
    with pytest.raises(BudgetExceededError, match="basic composition"):
        ledger.spend("d", ApproxDP(0.25, 7e-7), mechanism="gaussian")
    # What is left, (0.5, 4e-7), implies rho = 0.0061: a pure spend of 0.25 (rho =
    # 0.031) does not fit in zCDP, so it is booked by basic composition.
    limit = ledger.status("d").limit.rho
    assert 0.006 < limit < 0.0062
    ledger.spend("d", PureDP(0.25), mechanism="laplace")
    assert ledger.exact_spent("d")[0] == Fraction(0.75)
    # A zCDP spend then uses the rho left by the basic part, after which an
    # (epsilon, delta)-only spend can no longer be added.
    left = ledger.status("d").limit.rho
    ledger.spend("d", ZCDP(left / 2), mechanism="gaussian")
    assert ledger.exact_spent("d")[2] == Fraction(left / 2)
    with pytest.raises(IncompatibleBudgetError, match="already holds zCDP spends"):
        ledger.spend("d", ApproxDP(0.01, 1e-9), mechanism="gaussian")


@pytest.mark.parametrize(
    "total, spend",
    [
        (ZCDP(1.0), ApproxDP(0.1, 1e-6)),
        (PureDP(1.0), ZCDP(0.01)),
        (GDP(1.0), PureDP(0.1)),
    ],
)
def test_unsound_conversions_are_refused_and_nothing_is_recorded(tmp_path, total, spend):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("d", total)
    before = ledger.exact_spent("d")
    with pytest.raises(IncompatibleBudgetError, match="'d'"):
        ledger.spend("d", spend, mechanism="m")
    with pytest.raises(IncompatibleBudgetError):
        ledger.can_spend("d", spend)
    assert ledger.history("d") == []
    assert ledger.exact_spent("d") == before
    assert all(c == 0 for c in before)


# --------------------------------------------------------------------------- records and API


def test_history_records_what_when_and_who(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("d", ZCDP(1.0), description="hospital records")
    started = datetime.now(timezone.utc)
    returned = ledger.spend(
        "d",
        PureDP(0.5),
        mechanism="laplace",
        details={"sensitivity": 0.25, "shape": [3, 3], "seed": np.int64(4), "w": np.float32(0.5)},
    )
    ledger.spend("d", ZCDP(0.1), mechanism="gaussian")
    finished = datetime.now(timezone.utc)
    first, second = ledger.history("d")
    assert isinstance(first, SpendRecord)
    assert first == returned
    assert (first.mechanism, second.mechanism) == ("laplace", "gaussian")
    assert first.details == {"sensitivity": 0.25, "shape": [3, 3], "seed": 4, "w": 0.5}
    assert second.details == {}
    assert first.budget == PureDP(0.5) and first.cost == (Fraction(1, 8),)
    assert first.time.tzinfo is not None and first.time.utcoffset() == timedelta(0)
    assert started <= first.time <= second.time <= finished
    assert first.pid == os.getpid() and first.host
    assert (first.dataset, first.sequence, second.sequence) == ("d", 1, 2)
    with closing(_raw(ledger.path)) as conn:
        stamp = conn.execute("SELECT time_utc FROM spends WHERE sequence = 1").fetchone()[0]
    assert stamp.endswith("+00:00") and datetime.fromisoformat(stamp) == first.time


def test_declare_is_idempotent_and_refuses_a_different_total(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    assert ledger.declare("a", ZCDP(1.0)) is True
    assert ledger.declare("a", ZCDP(1.0)) is False
    with pytest.raises(ValueError, match=r"already declared with total ZCDP\(rho=1\)"):
        ledger.declare("a", ZCDP(2.0))
    with pytest.raises(ValueError, match="already declared"):
        ledger.declare("a", PureDP(1.0))
    ledger.declare("b", GDP(1.0))
    assert ledger.datasets() == ["a", "b"]
    assert ledger.total("a") == ZCDP(1.0) and ledger.total("b") == GDP(1.0)
    with pytest.raises(IncompatibleBudgetError, match="NonPrivate"):
        ledger.declare("c", NonPrivate())
    with pytest.raises(TypeError, match="total must be"):
        ledger.declare("c", 1.0)
    with pytest.raises(TypeError, match="dataset must be a non-empty string"):
        ledger.declare("", ZCDP(1.0))
    assert ledger.datasets() == ["a", "b"]


def test_bad_inputs_give_named_errors_and_record_nothing(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("known", ZCDP(1.0))
    for call in (
        lambda: ledger.spend("unknown", ZCDP(0.1), mechanism="m"),
        lambda: ledger.remaining("unknown"),
        lambda: ledger.spent("unknown"),
        lambda: ledger.total("unknown"),
        lambda: ledger.history("unknown"),
        lambda: ledger.can_spend("unknown", ZCDP(0.1)),
    ):
        with pytest.raises(UnknownDatasetError, match="'unknown' has not been declared") as info:
            call()
        assert isinstance(info.value, KeyError) and "known" in str(info.value)
    with pytest.raises(TypeError, match="budget must be a PureDP, ApproxDP, ZCDP or GDP"):
        ledger.spend("known", 0.1, mechanism="m")
    with pytest.raises(IncompatibleBudgetError, match="NonPrivate"):
        ledger.spend("known", NonPrivate(), mechanism="m")
    with pytest.raises(TypeError, match="mechanism must be a non-empty string"):
        ledger.spend("known", ZCDP(0.1), mechanism="")
    with pytest.raises(TypeError, match="details must be JSON-serialisable"):
        ledger.spend("known", ZCDP(0.1), mechanism="m", details={"x": object()})
    with pytest.raises(TypeError, match="string keys"):
        ledger.spend("known", ZCDP(0.1), mechanism="m", details={"x": {1: 2}})
    with pytest.raises(ValueError, match="NaN"):
        ledger.spend("known", ZCDP(0.1), mechanism="m", details={"x": math.nan})
    with pytest.raises(TypeError, match="details must be a dict"):
        ledger.spend("known", ZCDP(0.1), mechanism="m", details=[1])
    assert ledger.history("known") == []
    assert ledger.datasets() == ["known"]


def test_zero_total_admits_only_zero_spends(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.declare("d", ZCDP(0.0))
    ledger.spend("d", ZCDP(0.0), mechanism="free")
    with pytest.raises(BudgetExceededError):
        ledger.spend("d", ZCDP(5e-324), mechanism="smallest")
    assert len(ledger.history("d")) == 1


def test_reopening_context_manager_and_pickling(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        ledger.declare("d", ZCDP(1.0))
        ledger.spend("d", ZCDP(0.25), mechanism="m")
    assert ledger.closed
    with pytest.raises(ValueError, match="closed"):
        ledger.remaining("d")
    again = Ledger(path, create=False)
    assert again.exact_spent("d") == (Fraction(1, 4),)
    copy = pickle.loads(pickle.dumps(again))
    assert copy.path == again.path and copy.remaining("d") == ZCDP(0.75)
    with closing(_raw(path)) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert conn.execute("SELECT version FROM ledger_schema").fetchall() == [(SCHEMA_VERSION,)]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_files_that_are_not_ledgers_are_refused(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("these are not the spends you are looking for\n" * 20)
    with pytest.raises(LedgerFormatError, match="not an SQLite database"):
        Ledger(text)
    other = tmp_path / "other.sqlite"
    with closing(_raw(other)) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(LedgerFormatError, match="not a dpggm privacy ledger"):
        Ledger(other)
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(LedgerFormatError, match="empty file"):
        Ledger(empty, create=False)
    with pytest.raises(FileNotFoundError, match="create=False"):
        Ledger(tmp_path / "missing.sqlite", create=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Ledger(tmp_path / "no-such-dir" / "ledger.sqlite")
    newer = tmp_path / "newer.sqlite"
    Ledger(newer)
    with closing(_raw(newer)) as conn:
        conn.execute("DROP TRIGGER ledger_identity_fixed")
        conn.execute("UPDATE ledger_schema SET version = 99")
    with pytest.raises(LedgerFormatError, match="schema version 99"):
        Ledger(newer)


def test_tampering_is_blocked_or_detected(tmp_path):
    path = tmp_path / "ledger.sqlite"
    ledger = Ledger(path)
    ledger.declare("d", ZCDP(1.0))
    ledger.spend("d", ZCDP(0.5), mechanism="m")
    with closing(_raw(path)) as conn:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM spends")
        with pytest.raises(sqlite3.IntegrityError, match="cannot be changed"):
            conn.execute("""UPDATE datasets SET total_json = '{"notion": "zcdp", "rho": 9.0}'""")
        conn.execute("""UPDATE datasets SET spent_cost = '["0/1"]'""")
    with pytest.raises(LedgerIntegrityError, match="differs from the sum of its history"):
        ledger.spend("d", ZCDP(0.5), mechanism="m")
    with pytest.raises(LedgerIntegrityError):
        ledger.verify()
    with closing(_raw(path)) as conn:
        conn.execute("""UPDATE datasets SET spent_cost = '["1/2"]'""")
    ledger.verify()
    assert len(ledger.history("d")) == 1
