"""Ledger and accountant charge what a release guarantees, under one
relation."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpggm.exceptions import BudgetExceededError, IncompatibleBudgetError, InvalidGuaranteeError
from dpggm.privacy import (
    GDP,
    ZCDP,
    Ledger,
    NonPrivate,
    PrivacyAccountant,
    PrivacyGuarantee,
    PureDP,
)
from dpggm.privacy.accountant import SpendSink


def _guarantee(budget, *, neighbors="replace", validity="valid", reason=""):
    return PrivacyGuarantee(budget=budget, neighbors=neighbors, bounds={"kind": "box"},
                            mechanism="test-mechanism", validity=validity, reason=reason)


@pytest.fixture
def ledger(tmp_path):
    book = Ledger(tmp_path / "l.db")
    book.declare("d", ZCDP(1.0))
    book.declare("pure", PureDP(2.0))
    book.declare("ar", ZCDP(1.0), neighbors="add-remove")
    return book


def test_guarantee_is_charged_at_its_budget(ledger):
    record = ledger.spend("d", _guarantee(ZCDP(0.25)))
    assert record.mechanism == "test-mechanism" and record.cost == (Fraction(1, 4),)
    ledger.spend("d", _guarantee(PureDP(0.5)))      # 0.125 as zCDP
    ledger.spend("d", _guarantee(GDP(0.5)))         # 0.125 as zCDP
    assert ledger.exact_spent("d") == (Fraction(1, 2),)


def test_pure_ledger_refuses_a_zcdp_release_and_records_nothing(ledger):
    with pytest.raises(IncompatibleBudgetError, match="ZCDP spend cannot be accounted"):
        ledger.spend("pure", _guarantee(ZCDP(0.01)))
    with pytest.raises(IncompatibleBudgetError):
        ledger.check("pure", ZCDP(0.01))
    assert ledger.history("pure") == []


@pytest.mark.parametrize("validity", ["invalid", "data-dependent"])
def test_release_that_is_not_valid_is_never_booked(ledger, validity):
    with pytest.raises(InvalidGuaranteeError, match=validity):
        ledger.spend("d", _guarantee(ZCDP(0.1), validity=validity, reason="because"))
    assert ledger.history("d") == []


def test_non_private_release_is_never_booked(ledger):
    guarantee = PrivacyGuarantee(budget=NonPrivate(), neighbors="replace", bounds={},
                                 mechanism="exact", validity="none", reason="reference")
    with pytest.raises(InvalidGuaranteeError):
        ledger.spend("d", guarantee)
    assert ledger.history("d") == []


def test_spends_under_another_relation_are_refused(ledger):
    with pytest.raises(IncompatibleBudgetError, match="'add-remove' neighbours"):
        ledger.spend("d", _guarantee(ZCDP(0.1), neighbors="add-remove"))
    with pytest.raises(IncompatibleBudgetError, match="'replace' neighbours"):
        ledger.spend("ar", _guarantee(ZCDP(0.1)))
    with pytest.raises(IncompatibleBudgetError):
        ledger.spend("ar", ZCDP(0.1), mechanism="m", neighbors="replace")
    assert ledger.history("d") == [] and ledger.history("ar") == []
    ledger.spend("ar", _guarantee(ZCDP(0.1), neighbors="add-remove"))
    assert ledger.neighbors("ar") == "add-remove" and ledger.neighbors("d") == "replace"


def test_relation_is_part_of_the_permanent_declaration(ledger):
    assert ledger.declare("ar", ZCDP(1.0), neighbors="add-remove") is False
    with pytest.raises(ValueError, match="already declared"):
        ledger.declare("ar", ZCDP(1.0), neighbors="replace")
    with pytest.raises(ValueError, match="neighbors must be"):
        ledger.declare("x", ZCDP(1.0), neighbors="swap")


def test_accountant_and_ledger_are_spend_sinks_with_one_rule(ledger):
    accountant = PrivacyAccountant(ZCDP(1.0), neighbors="replace")
    sink = ledger.sink("d")
    assert isinstance(accountant, SpendSink) and isinstance(sink, SpendSink)
    third = ZCDP(float(Fraction(1, 3)))
    for target in (accountant, sink):
        for _ in range(3):
            target.check(third)
            target.spend(_guarantee(third))
        with pytest.raises(BudgetExceededError):
            target.check(ZCDP(0.01))
        with pytest.raises(InvalidGuaranteeError):
            target.spend(_guarantee(ZCDP(0.0), validity="invalid", reason="r"))
        with pytest.raises(IncompatibleBudgetError):
            target.spend(_guarantee(ZCDP(0.0), neighbors="add-remove"))
    assert accountant.exact_spent == ledger.exact_spent("d")
    # One rounding rule: the reported loss is never understated, in both.
    assert accountant.spent == ledger.spent("d")
    assert Fraction(accountant.spent.rho) >= accountant.exact_spent[0]
    assert accountant.remaining == ledger.remaining("d")
