"""The privacy accountant (filter semantics, exact boundaries) and the guarantee record."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpggm.exceptions import BudgetExceededError, IncompatibleBudgetError
from dpggm.privacy import (
    DEFAULT_REPORT_DELTA,
    GDP,
    ZCDP,
    ApproxDP,
    NonPrivate,
    PrivacyAccountant,
    PrivacyGuarantee,
    PureDP,
    budget_from_dict,
    exact_cost,
)

PROPERTY = settings(derandomize=True, database=None, deadline=None, max_examples=100)


def _up(x: float) -> float:
    return math.nextafter(x, math.inf)


def _snapshot(accountant: PrivacyAccountant):
    return accountant.exact_spent, accountant.spends, accountant.remaining, accountant.spent


def _refused(accountant: PrivacyAccountant, budget) -> None:
    """Assert ``budget`` is refused and that the refusal recorded nothing."""
    before = _snapshot(accountant)
    assert not accountant.can_spend(budget)
    with pytest.raises(BudgetExceededError, match="would exceed the total"):
        accountant.spend(budget, mechanism="probe")
    assert _snapshot(accountant) == before


# ---------------------------------------------------------------------------------------
# Exact boundaries
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "spends"),
    [
        (ZCDP(1.0), [ZCDP(0.1), ZCDP(0.2), ZCDP(0.3)]),
        (ZCDP(0.7), [ZCDP(1 / 3), PureDP(0.1), GDP(0.2)]),
        (PureDP(2.0), [PureDP(0.1), PureDP(0.7), PureDP(1 / 7)]),
    ],
)
def test_single_parameter_spend_of_exactly_the_remainder(total, spends):
    accountant = PrivacyAccountant(total)
    for budget in spends:
        accountant.spend(budget)
    remaining = accountant.remaining
    (field,) = remaining._fields()
    value = getattr(remaining, field)
    _refused(accountant, type(remaining)(_up(value)))
    accountant.spend(remaining)
    # What is left is below one ulp of the remainder just spent (it was the largest float
    # not above the exact remainder), and it too can be spent exactly.
    limit = exact_cost(total, type(total))[0]
    gap = limit - accountant.exact_spent[0]
    assert 0 <= gap < Fraction(math.ulp(value))
    last = accountant.remaining
    assert Fraction(getattr(last, field)) <= gap
    accountant.spend(last)
    _refused(accountant, type(last)(_up(getattr(last, field))))


def test_approx_dp_spend_of_exactly_the_remainder_in_both_coordinates():
    accountant = PrivacyAccountant(ApproxDP(1.0, 1e-5))
    accountant.spend(ApproxDP(0.1, 1e-6 / 3))
    accountant.spend(ApproxDP(0.2, 2e-6 / 3))
    accountant.spend(PureDP(0.3))
    remaining = accountant.remaining
    _refused(accountant, ApproxDP(_up(remaining.epsilon), remaining.delta))
    _refused(accountant, ApproxDP(remaining.epsilon, _up(remaining.delta)))
    _refused(accountant, PureDP(_up(remaining.epsilon)))
    accountant.spend(remaining)
    limit = exact_cost(ApproxDP(1.0, 1e-5), ApproxDP)
    gaps = [lim - s for lim, s in zip(limit, accountant.exact_spent)]
    assert 0 <= gaps[0] < Fraction(math.ulp(remaining.epsilon))
    assert 0 <= gaps[1] < Fraction(math.ulp(remaining.delta))


def test_gdp_composes_in_mu_squared_up_to_the_exact_remainder():
    accountant = PrivacyAccountant(GDP(1.0))
    accountant.spend(GDP(0.3))
    accountant.spend(GDP(0.4))
    remaining = accountant.remaining
    # sqrt(1 - 0.09 - 0.16) = sqrt(0.75), up to the exact binary values of 0.3 and 0.4.
    assert remaining.mu == pytest.approx(math.sqrt(0.75), rel=1e-15)
    exact_left = 1 - Fraction(0.3) ** 2 - Fraction(0.4) ** 2
    assert Fraction(remaining.mu) ** 2 <= exact_left < Fraction(_up(remaining.mu)) ** 2
    _refused(accountant, GDP(_up(remaining.mu)))
    accountant.spend(remaining)
    gap = 1 - accountant.exact_spent[0]
    assert 0 <= gap < Fraction(_up(remaining.mu)) ** 2 - Fraction(remaining.mu) ** 2


@pytest.mark.parametrize(
    "total", [PureDP(1.0), ApproxDP(1.0, 1e-6), ZCDP(0.5), GDP(1.0), PureDP(0.0), ZCDP(0.0)]
)
def test_spending_the_whole_total_at_once_succeeds(total):
    accountant = PrivacyAccountant(total)
    accountant.spend(total)
    assert accountant.exact_spent == exact_cost(total, type(total))
    assert accountant.remaining == type(total)(*(0.0 for _ in total._fields()))


@pytest.mark.parametrize("total", [PureDP(1.0), ZCDP(0.5), GDP(1.0)])
def test_next_float_above_the_total_is_refused_on_a_fresh_accountant(total):
    (field,) = total._fields()
    accountant = PrivacyAccountant(total)
    _refused(accountant, type(total)(_up(getattr(total, field))))
    assert accountant.spends == ()


# ---------------------------------------------------------------------------------------
# Cross-notion spends
# ---------------------------------------------------------------------------------------


def test_zcdp_total_accounts_pure_and_gdp_spends_at_their_zcdp_cost():
    accountant = PrivacyAccountant(ZCDP(1.0))
    accountant.spend(PureDP(1.0), mechanism="laplace")  # 1/2
    accountant.spend(GDP(0.5), mechanism="gaussian")  # 1/8
    assert accountant.exact_spent == (Fraction(5, 8),)
    assert accountant.remaining == ZCDP(0.375)


def test_approx_total_accounts_pure_spends_with_zero_delta():
    accountant = PrivacyAccountant(ApproxDP(1.0, 1e-6))
    accountant.spend(PureDP(0.5))
    assert accountant.exact_spent == (Fraction(1, 2), Fraction(0))


@pytest.mark.parametrize(
    ("total", "spend"),
    [
        (ApproxDP(1.0, 1e-6), ZCDP(0.01)),
        (ApproxDP(1.0, 1e-6), GDP(0.01)),
        (ZCDP(1.0), ApproxDP(0.1, 1e-9)),
        (GDP(1.0), ZCDP(0.01)),
        (GDP(1.0), PureDP(0.01)),
        (PureDP(1.0), ZCDP(0.01)),
        (PureDP(1.0), ApproxDP(0.1, 1e-9)),
        (ZCDP(1.0), NonPrivate()),
    ],
)
def test_incompatible_spends_are_refused_and_record_nothing(total, spend):
    accountant = PrivacyAccountant(total)
    accountant.spend(type(total)(*(0.0 for _ in total._fields())))
    before = _snapshot(accountant)
    with pytest.raises(IncompatibleBudgetError):
        accountant.spend(spend)
    with pytest.raises(IncompatibleBudgetError):
        accountant.can_spend(spend)
    assert _snapshot(accountant) == before


@pytest.mark.parametrize("total", [NonPrivate(), 1.0, None, "zcdp"])
def test_total_must_be_a_private_budget(total):
    with pytest.raises(TypeError, match="total must be a PureDP, ApproxDP, ZCDP or GDP budget"):
        PrivacyAccountant(total)


def test_spend_log_keeps_mechanism_and_details():
    accountant = PrivacyAccountant(ZCDP(1.0))
    accountant.spend(ZCDP(0.25), mechanism="gaussian", sigma=2.0, step=1)
    (entry,) = accountant.spends
    assert entry.budget == ZCDP(0.25)
    assert entry.mechanism == "gaussian"
    assert entry.details == {"sigma": 2.0, "step": 1}


# ---------------------------------------------------------------------------------------
# Filter semantics
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_filter_under_many_random_spends(seed):
    # An adaptive loop whose requests depend on what was granted: the accountant must grant
    # exactly the requests that fit the exact running sum, and never go over.
    rng = np.random.default_rng(seed)
    total = ApproxDP(3.0, 1e-5)
    accountant = PrivacyAccountant(total)
    limit = exact_cost(total, ApproxDP)
    expected = [Fraction(0), Fraction(0)]
    granted = 0
    for step in range(2000):
        scale = 0.02 if granted % 2 else 0.2
        if rng.random() < 0.3:
            request = PureDP(float(rng.exponential(scale)))
        else:
            request = ApproxDP(float(rng.exponential(scale)), float(rng.exponential(1e-7)))
        if step % 97 == 0:
            # Occasionally ask for exactly what is left.
            request = accountant.remaining
        cost = exact_cost(request, ApproxDP)
        fits = all(e + c <= lim for e, c, lim in zip(expected, cost, limit))
        assert accountant.can_spend(request) == fits
        if fits:
            accountant.spend(request, mechanism=f"step {step}")
            expected = [e + c for e, c in zip(expected, cost)]
            granted += 1
        else:
            _refused(accountant, request)
        assert list(accountant.exact_spent) == expected
        assert all(s <= lim for s, lim in zip(accountant.exact_spent, limit))
    assert len(accountant.spends) == granted
    assert 10 < granted < 2000


costs = st.floats(min_value=0.0, max_value=0.5, allow_nan=False)


@PROPERTY
@given(
    notion=st.sampled_from([PureDP, ZCDP, GDP]),
    total=st.floats(min_value=0.0, max_value=5.0),
    requests=st.lists(costs, max_size=25),
)
def test_remaining_plus_spent_never_exceeds_total(notion, total, requests):
    accountant = PrivacyAccountant(notion(total))
    limit = exact_cost(notion(total), notion)[0]
    for value in requests:
        budget = notion(value)
        if accountant.can_spend(budget):
            accountant.spend(budget)
        else:
            _refused(accountant, budget)
        remaining, spent = accountant.remaining, accountant.spent
        assert accountant.exact_spent[0] <= limit
        assert exact_cost(remaining, notion)[0] + accountant.exact_spent[0] <= limit
        # One rounding rule with the ledger: the reported loss is never understated
        # (spent rounds up, to the nearest float at or above the exact sum) and the
        # reported remainder never overstated.
        assert exact_cost(spent, notion)[0] >= accountant.exact_spent[0]
        below = notion(math.nextafter(getattr(spent, spent._fields()[0]), -math.inf)) if (
            getattr(spent, spent._fields()[0]) > 0) else None
        assert below is None or exact_cost(below, notion)[0] < accountant.exact_spent[0]
    # The reported remainder is spendable: a replay of the same spends accepts it.
    replay = PrivacyAccountant(notion(total))
    for entry in accountant.spends:
        replay.spend(entry.budget)
    replay.spend(accountant.remaining)


@PROPERTY
@given(
    total=st.tuples(st.floats(0.0, 5.0), st.floats(0.0, 0.5)),
    requests=st.lists(st.tuples(costs, st.floats(0.0, 0.05)), max_size=30),
)
def test_approx_dp_remaining_plus_spent_never_exceeds_total(total, requests):
    accountant = PrivacyAccountant(ApproxDP(*total))
    limit = exact_cost(ApproxDP(*total), ApproxDP)
    for request in requests:
        budget = ApproxDP(*request)
        if accountant.can_spend(budget):
            accountant.spend(budget)
        else:
            _refused(accountant, budget)
        remaining = exact_cost(accountant.remaining, ApproxDP)
        spent = exact_cost(accountant.spent, ApproxDP)
        assert all(r + s <= lim for r, s, lim in zip(remaining, accountant.exact_spent, limit))
        assert all(r >= s for r, s in zip(spent, accountant.exact_spent))
        assert all(s <= lim for s, lim in zip(accountant.exact_spent, limit))


# ---------------------------------------------------------------------------------------
# The guarantee record
# ---------------------------------------------------------------------------------------


def _guarantee(**overrides) -> PrivacyGuarantee:
    fields = {
        "budget": ZCDP(0.5),
        "neighbors": "replace",
        "bounds": {"kind": "row-norm", "bound": 1.0},
        "mechanism": "gaussian",
        "noise": {"sigma": np.float64(1.25), "sensitivities": np.array([0.5, 1.0])},
        "random_state": "seeded",
        "notes": {"paper_epsilon": float("inf"), "steps": (1, 2)},
    }
    fields.update(overrides)
    return PrivacyGuarantee(**fields)


@pytest.mark.parametrize(
    "budget", [ZCDP(0.5), GDP(1.0), PureDP(1.0), ApproxDP(1.0, 1e-6), NonPrivate()]
)
def test_guarantee_json_round_trip(budget):
    validity = "none" if isinstance(budget, NonPrivate) else "valid"
    reason = "reference run" if validity == "none" else ""
    guarantee = _guarantee(budget=budget, validity=validity, reason=reason)
    record = guarantee.to_dict()
    text = json.dumps(record, allow_nan=False)
    assert json.loads(text) == record
    assert json.loads(guarantee.to_json()) == record
    assert budget_from_dict(record["budget"]) == budget
    assert record["validity"] == validity
    assert record["report_delta"] == DEFAULT_REPORT_DELTA
    assert record["noise"] == {"sigma": 1.25, "sensitivities": [0.5, 1.0]}
    assert record["notes"] == {"paper_epsilon": "inf", "steps": [1, 2]}
    if isinstance(budget, NonPrivate):
        assert record["approx_dp"] is None
    else:
        approx = budget_from_dict(record["approx_dp"])
        assert approx == budget.to_approx(DEFAULT_REPORT_DELTA)


def test_guarantee_reports_zcdp_as_approx_dp_at_report_delta():
    guarantee = _guarantee(budget=ZCDP(0.5), report_delta=1e-9)
    assert guarantee.approx_dp == ZCDP(0.5).to_approx(1e-9)
    assert guarantee.to_dict()["approx_dp"]["delta"] == 1e-9
    assert "ZCDP(rho=0.5)" in guarantee.summary()


@pytest.mark.parametrize("validity", ["Valid", "ok", "", None, "invalid "])
def test_validity_values_are_enforced(validity):
    with pytest.raises(ValueError, match="validity must be 'valid', 'data-dependent', 'invalid'"):
        _guarantee(validity=validity, reason="because")


@pytest.mark.parametrize("validity", ["data-dependent", "invalid"])
@pytest.mark.parametrize("reason", ["", "   "])
def test_reason_required_when_not_valid(validity, reason):
    with pytest.raises(ValueError, match="needs a non-empty reason"):
        _guarantee(validity=validity, reason=reason)
    guarantee = _guarantee(validity=validity, reason="bound read off the data")
    assert not guarantee.is_valid
    assert validity.upper() in guarantee.summary()


def test_non_private_budget_and_validity_none_go_together():
    with pytest.raises(ValueError, match="NonPrivate\\(\\) budget must have validity 'none'"):
        _guarantee(budget=NonPrivate(), validity="valid")
    # A private budget may be reported "none" with a reason: a seeded run spends on paper,
    # but whoever holds the seed removes the noise.
    seeded = _guarantee(budget=ZCDP(0.5), validity="none", reason="seeded for reproducibility")
    assert not seeded.is_valid
    with pytest.raises(ValueError, match="needs a non-empty reason"):
        _guarantee(budget=ZCDP(0.5), validity="none", reason="")
    reference = _guarantee(budget=NonPrivate(), validity="none", reason="reference")
    assert not reference.is_valid
    assert reference.approx_dp is None


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        ({"budget": 0.5}, TypeError, "budget must be"),
        ({"neighbors": "swap"}, ValueError, "neighbors must be 'replace' or 'add-remove'"),
        ({"report_delta": 0.0}, ValueError, r"report_delta must be a number in \(0, 1\)"),
        ({"report_delta": 1.0}, ValueError, r"report_delta must be a number in \(0, 1\)"),
        ({"report_delta": math.nan}, ValueError, r"report_delta must be a number in \(0, 1\)"),
    ],
)
def test_guarantee_fields_are_validated(overrides, error, match):
    with pytest.raises(error, match=match):
        _guarantee(**overrides)
