"""Privacy budgets: validation, serialisation, composition and conversion properties.

The pure-DP conversion is checked against randomised response's privacy profile computed
from its two output distributions in 60-digit decimal arithmetic; the numerical references
for zCDP and GDP conversions are in ``test_privacy_calibration.py``.
"""

from __future__ import annotations

import decimal
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpggm.exceptions import IncompatibleBudgetError
from dpggm.privacy import (
    GDP,
    ZCDP,
    ApproxDP,
    Budget,
    NonPrivate,
    PrivacyAccountant,
    PureDP,
    budget_from_dict,
    exact_cost,
)
from dpggm.privacy.conversion import (
    gdp_delta,
    gdp_mu_for,
    gdp_to_approx_epsilon,
    pure_to_approx_epsilon,
    zcdp_delta,
    zcdp_to_approx_epsilon,
)

PROPERTY = settings(derandomize=True, database=None, deadline=None, max_examples=150)

EPSILONS = [0.01, 0.1, 1.0, 5.0, 20.0]
DELTAS = [1e-12, 1e-9, 1e-5, 1e-2]

# (class, field name) for every validated parameter.
FIELDS = [
    (PureDP, "epsilon"),
    (ApproxDP, "epsilon"),
    (ApproxDP, "delta"),
    (ZCDP, "rho"),
    (GDP, "mu"),
]

parameters = st.floats(min_value=0.0, max_value=1e3, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-6, max_value=50.0, allow_nan=False, allow_infinity=False)
small_delta = st.floats(min_value=0.0, max_value=0.05, allow_nan=False)
target_delta = st.floats(min_value=1e-15, max_value=0.5, allow_nan=False)


def _build(cls, field, value):
    """A budget of ``cls`` with ``field`` set to ``value`` and any other field valid."""
    kwargs = {"epsilon": 1.0, "delta": 1e-6} if cls is ApproxDP else {}
    kwargs[field] = value
    return cls(**kwargs)


@st.composite
def budgets(draw, notions=(PureDP, ApproxDP, ZCDP, GDP)):
    notion = draw(st.sampled_from(notions))
    if notion is ApproxDP:
        return ApproxDP(draw(parameters), draw(small_delta))
    return notion(draw(parameters))


def _cost(budget: Budget) -> tuple[Fraction, ...]:
    return exact_cost(budget, type(budget))


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cls", "field"), FIELDS)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1.0, -5e-324])
def test_non_finite_or_negative_parameters_are_named(cls, field, bad):
    with pytest.raises(ValueError, match=rf"{field} must be a finite number >= 0; got"):
        _build(cls, field, bad)


@pytest.mark.parametrize(("cls", "field"), FIELDS)
@pytest.mark.parametrize("bad", [True, False, np.bool_(True), "0.5", None, 1j, [0.5]])
def test_non_numbers_are_refused_with_a_named_type_error(cls, field, bad):
    with pytest.raises(TypeError, match=rf"{field} must be a real number"):
        _build(cls, field, bad)


@PROPERTY
@given(
    data=st.data(),
    value=st.one_of(
        st.floats(max_value=-1e-300),
        st.just(math.nan),
        st.sampled_from([math.inf, -math.inf]),
        st.integers(max_value=-1),
    ),
)
def test_any_invalid_value_raises_a_named_error(data, value):
    cls, field = data.draw(st.sampled_from(FIELDS))
    with pytest.raises(ValueError, match=field):
        _build(cls, field, value)


@pytest.mark.parametrize("delta", [1.0, math.nextafter(1.0, 2.0), 1.5, 1e300])
def test_delta_of_one_or_more_is_refused(delta):
    with pytest.raises(ValueError, match=r"delta must be < 1.0; got"):
        ApproxDP(1.0, delta)
    for budget in (ZCDP(1.0), GDP(1.0), PureDP(1.0)):
        with pytest.raises(ValueError, match="delta must be in"):
            budget.to_approx(delta)
    with pytest.raises(ValueError, match="delta must be < 1.0"):
        ApproxDP(1.0, 1e-5).to_approx(delta)


def test_delta_just_below_one_is_accepted():
    delta = math.nextafter(1.0, 0.0)
    assert ApproxDP(1.0, delta).delta == delta


@pytest.mark.parametrize("delta", [0.0, -1e-9, math.nan])
def test_zcdp_and_gdp_conversions_need_positive_delta(delta):
    for budget in (ZCDP(1.0), GDP(1.0)):
        with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
            budget.to_approx(delta)


@pytest.mark.parametrize(
    ("function", "name"),
    [
        (lambda v: zcdp_to_approx_epsilon(v, 1e-5), "rho"),
        (lambda v: zcdp_delta(v, 1.0), "rho"),
        (lambda v: zcdp_delta(1.0, v), "epsilon"),
        (lambda v: gdp_to_approx_epsilon(v, 1e-5), "mu"),
        (lambda v: gdp_delta(v, 1.0), "mu"),
        (lambda v: gdp_delta(1.0, v), "epsilon"),
        (lambda v: pure_to_approx_epsilon(v, 1e-5), "epsilon"),
    ],
)
@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_conversion_functions_validate_their_inputs(function, name, bad):
    with pytest.raises(ValueError, match=rf"{name} must be a finite number >= 0; got"):
        function(bad)


def test_numpy_scalars_are_accepted_and_stored_as_floats():
    budget = ApproxDP(np.float32(0.5), np.float64(1e-6))
    assert budget == ApproxDP(0.5, 1e-6)
    assert type(budget.epsilon) is float
    assert ZCDP(np.int64(2)).rho == 2.0


def test_fraction_larger_than_any_float_is_refused():
    with pytest.raises(ValueError, match="rho must be a finite number >= 0"):
        ZCDP(Fraction(10**400))


# ---------------------------------------------------------------------------------------
# Serialisation
# ---------------------------------------------------------------------------------------


@PROPERTY
@given(budget=st.one_of(budgets(), st.just(NonPrivate())))
def test_dict_round_trip_through_json(budget):
    data = json.loads(json.dumps(budget.to_dict()))
    assert budget_from_dict(data) == budget


def test_unknown_notion_and_missing_field_are_named():
    with pytest.raises(ValueError, match="unknown privacy notion 'renyi'"):
        budget_from_dict({"notion": "renyi", "alpha": 2})
    with pytest.raises(ValueError, match=r"needs the field\(s\) \['delta'\]"):
        budget_from_dict({"notion": "approx-dp", "epsilon": 1.0})


# ---------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------


def test_same_notion_composition_adds_the_right_quantity():
    assert PureDP(0.25) + PureDP(0.5) == PureDP(0.75)
    assert ApproxDP(0.25, 2**-20) + ApproxDP(0.5, 2**-21) == ApproxDP(0.75, 3 * 2**-21)
    assert ZCDP(0.125) + ZCDP(0.375) == ZCDP(0.5)
    # GDP composes in mu^2: 3-4-5.
    assert GDP(3.0) + GDP(4.0) == GDP(5.0)
    assert sum([ZCDP(0.25), ZCDP(0.25), ZCDP(0.5)]) == ZCDP(1.0)


def test_composition_across_notions():
    # Pure DP is epsilon^2/2-zCDP; GDP is mu^2/2-zCDP (exact binary values used throughout).
    assert PureDP(0.5) + ZCDP(0.25) == ZCDP(0.125 + 0.25)
    assert ZCDP(0.25) + PureDP(0.5) == ZCDP(0.375)
    assert GDP(1.5) + ZCDP(0.25) == ZCDP(1.125 + 0.25)
    assert PureDP(1.0) + GDP(2.0) == ZCDP(0.5 + 2.0)
    assert PureDP(0.5) + ApproxDP(0.25, 1e-6) == ApproxDP(0.75, 1e-6)
    assert NonPrivate() + ZCDP(1.0) == NonPrivate()
    assert ApproxDP(1.0, 1e-6) + NonPrivate() == NonPrivate()


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (ApproxDP(1.0, 1e-6), ZCDP(0.5)),
        (ApproxDP(1.0, 1e-6), GDP(0.5)),
        (ZCDP(0.5), GDP(0.5).to_approx(1e-6)),
    ],
)
def test_approximate_dp_does_not_compose_with_zcdp_or_gdp(left, right):
    with pytest.raises(IncompatibleBudgetError, match="cannot compose"):
        left + right
    with pytest.raises(IncompatibleBudgetError, match="cannot compose"):
        right + left


@PROPERTY
@given(epsilon=positive, rho=parameters)
def test_pure_plus_zcdp_is_zcdp_with_epsilon_squared_over_two(epsilon, rho):
    combined = PureDP(epsilon) + ZCDP(rho)
    assert isinstance(combined, ZCDP)
    exact = Fraction(epsilon) ** 2 / 2 + Fraction(rho)
    assert Fraction(combined.rho) >= exact
    assert Fraction(math.nextafter(combined.rho, 0.0)) < exact


@PROPERTY
@given(mu=positive, rho=parameters)
def test_gdp_plus_zcdp_is_zcdp_with_mu_squared_over_two(mu, rho):
    combined = GDP(mu) + ZCDP(rho)
    assert isinstance(combined, ZCDP)
    exact = Fraction(mu) ** 2 / 2 + Fraction(rho)
    assert Fraction(combined.rho) >= exact
    assert Fraction(math.nextafter(combined.rho, 0.0)) < exact


compatible_pairs = st.sampled_from(
    [
        (PureDP, PureDP),
        (PureDP, ApproxDP),
        (ApproxDP, ApproxDP),
        (PureDP, ZCDP),
        (GDP, ZCDP),
        (PureDP, GDP),
        (ZCDP, ZCDP),
        (GDP, GDP),
    ]
)


@PROPERTY
@given(data=st.data(), pair=compatible_pairs)
def test_composition_is_commutative(data, pair):
    a = data.draw(budgets(notions=(pair[0],)))
    b = data.draw(budgets(notions=(pair[1],)))
    assert a + b == b + a


@PROPERTY
@given(data=st.data(), pair=compatible_pairs)
def test_composed_budget_is_the_smallest_float_at_least_the_exact_cost(data, pair):
    a = data.draw(budgets(notions=(pair[0],)))
    b = data.draw(budgets(notions=(pair[1],)))
    if isinstance(a, ApproxDP) or isinstance(b, ApproxDP):
        assume(getattr(a, "delta", 0.0) + getattr(b, "delta", 0.0) < 0.9)
    combined = a + b
    notion = type(combined)
    exact = [x + y for x, y in zip(exact_cost(a, notion), exact_cost(b, notion))]
    stated = _cost(combined)
    assert all(s >= e for s, e in zip(stated, exact))
    # And no more than needed: one float lower in any parameter would understate the cost.
    for field, e in zip(combined._fields(), exact):
        if e == 0:
            continue
        lower = math.nextafter(getattr(combined, field), 0.0)
        lower_cost = Fraction(lower) ** 2 if notion is GDP else Fraction(lower)
        assert lower_cost < e


# Dyadic values with few significant bits: every sum of three is exact in double precision.
dyadic = st.integers(min_value=0, max_value=2**30).map(lambda k: k / 2**20)


@PROPERTY
@given(notion=st.sampled_from([PureDP, ZCDP]), x=dyadic, y=dyadic, z=dyadic)
def test_composition_is_associative_when_sums_are_representable(notion, x, y, z):
    a, b, c = notion(x), notion(y), notion(z)
    assert (a + b) + c == a + (b + c)
    assert _cost((a + b) + c)[0] == _cost(a)[0] + _cost(b)[0] + _cost(c)[0]


@PROPERTY
@given(data=st.data(), notion=st.sampled_from([PureDP, ApproxDP, ZCDP, GDP]))
def test_composition_is_associative_in_exact_cost(data, notion):
    a, b, c = (data.draw(budgets(notions=(notion,))) for _ in range(3))
    if notion is ApproxDP:
        assume(a.delta + b.delta + c.delta < 0.9)
    exact = [x + y + z for x, y, z in zip(_cost(a), _cost(b), _cost(c))]
    left, right = _cost((a + b) + c), _cost(a + (b + c))
    # Each grouping rounds up twice at most, so both are sound and within a few ulps.
    for lo, ro, e in zip(left, right, exact):
        assert lo >= e
        assert ro >= e
        assert lo <= e * (1 + Fraction(1, 2**49)) + Fraction(1, 2**1074)
        assert ro <= e * (1 + Fraction(1, 2**49)) + Fraction(1, 2**1074)
    # The accountant keeps exact sums, which are independent of order and grouping.
    spent = []
    for order in ([a, b, c], [c, a, b], [b, c, a]):
        accountant = PrivacyAccountant(ApproxDP(1e9, 0.95) if notion is ApproxDP else notion(1e9))
        for budget in order:
            accountant.spend(budget)
        spent.append(accountant.exact_spent)
    assert spent[0] == spent[1] == spent[2] == tuple(exact)


@PROPERTY
@given(data=st.data(), notion=st.sampled_from([PureDP, ApproxDP, ZCDP, GDP]))
def test_accountant_opened_with_a_sum_accepts_its_parts(data, notion):
    # Regression: a sum rounded down made the second part overspend the total.
    a, b = (data.draw(budgets(notions=(notion,))) for _ in range(2))
    if notion is ApproxDP:
        assume(a.delta + b.delta < 0.9)
    accountant = PrivacyAccountant(a + b)
    accountant.spend(a)
    accountant.spend(b)


def test_accountant_opened_with_a_sum_accepts_its_parts_known_case():
    # 0.1 + 0.2 in exact binary values lies above the float 0.3.
    accountant = PrivacyAccountant(ZCDP(0.1) + ZCDP(0.2))
    accountant.spend(ZCDP(0.1))
    accountant.spend(ZCDP(0.2))


@PROPERTY
@given(value=positive)
def test_to_zcdp_is_never_below_the_accounted_cost(value):
    for budget in (PureDP(value), GDP(value)):
        converted = budget.to_zcdp()
        assert Fraction(converted.rho) >= exact_cost(budget, ZCDP)[0]
        PrivacyAccountant(converted).spend(budget)


# ---------------------------------------------------------------------------------------
# Pure DP -> (epsilon, delta): randomised response
# ---------------------------------------------------------------------------------------


def randomised_response_delta(epsilon: float, epsilon_prime: float) -> decimal.Decimal:
    """Hockey-stick divergence of the two output laws of epsilon-randomised response, summed
    over its two outcomes, in 60-digit decimal arithmetic."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        e = decimal.Decimal(epsilon).exp()
        e_prime = decimal.Decimal(epsilon_prime).exp()
        p = [e / (1 + e), 1 / (1 + e)]
        q = [1 / (1 + e), e / (1 + e)]
        return sum(max(decimal.Decimal(0), pi - e_prime * qi) for pi, qi in zip(p, q))


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_pure_to_approx_matches_randomised_response_profile(epsilon, delta):
    epsilon_prime = PureDP(epsilon).to_approx(delta).epsilon
    # Every conversion aims inside delta by a relative 2**-20 (and the float profile is
    # within a few ulps of the exact one).
    target = decimal.Decimal(delta) / (1 + decimal.Decimal(2) ** -20)
    slack = decimal.Decimal(1e-12)
    if epsilon_prime == 0.0:
        assert randomised_response_delta(epsilon, 0.0) <= target * (1 + slack)
        return
    assert epsilon_prime < epsilon
    # For a tiny delta, eps' lies within a few ulps of eps and one ulp moves the profile by
    # a large factor, so the exact statement is: eps' is the smallest float that is sound.
    assert randomised_response_delta(epsilon, epsilon_prime) <= target * (1 + slack)
    assert randomised_response_delta(epsilon, math.nextafter(epsilon_prime, 0.0)) > target * (
        1 - slack)
    # Where the float grid is fine enough, the profile at eps' is delta itself.
    # d delta / d eps' = -e^(eps' - eps) / (1 + e^-eps).
    ulp_effect = (
        math.ulp(epsilon_prime) * math.exp(epsilon_prime - epsilon) / (1 + math.exp(-epsilon))
    )
    relative = max(1e-12, 4 * ulp_effect / delta)
    attained = randomised_response_delta(epsilon, epsilon_prime)
    assert float(attained / target) == pytest.approx(1.0, rel=relative)


def test_pure_to_approx_with_zero_delta_is_unchanged():
    assert PureDP(0.7).to_approx(0.0) == ApproxDP(0.7, 0.0)


@PROPERTY
@given(
    epsilon=st.floats(min_value=0.0, max_value=10.0),
    delta=st.floats(min_value=1e-12, max_value=0.5),
    a=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=2, max_size=6),
    b=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=2, max_size=6),
)
def test_pure_to_approx_holds_for_other_pure_dp_pairs(epsilon, delta, a, b):
    # P = (e^eps A + B)/(1 + e^eps), Q = (A + e^eps B)/(1 + e^eps) is a pair of laws with
    # likelihood ratio within [e^-eps, e^eps], i.e. some epsilon-DP mechanism's outputs.
    k = min(len(a), len(b))
    a_arr, b_arr = np.array(a[:k]), np.array(b[:k])
    assume(a_arr.sum() > 1e-3 and b_arr.sum() > 1e-3)
    a_arr, b_arr = a_arr / a_arr.sum(), b_arr / b_arr.sum()
    e = math.exp(epsilon)
    p = (e * a_arr + b_arr) / (1 + e)
    q = (a_arr + e * b_arr) / (1 + e)
    epsilon_prime = pure_to_approx_epsilon(epsilon, delta)
    attained = np.maximum(p - math.exp(epsilon_prime) * q, 0.0).sum()
    assert attained <= delta * (1 + 1e-9) + 1e-15


# ---------------------------------------------------------------------------------------
# Conversion properties
# ---------------------------------------------------------------------------------------


@PROPERTY
@given(mu=st.floats(min_value=1e-3, max_value=30.0), delta=target_delta)
def test_gdp_to_approx_is_the_smallest_sound_epsilon(mu, delta):
    epsilon = GDP(mu).to_approx(delta).epsilon
    assert gdp_delta(mu, epsilon) <= delta
    if epsilon == 0.0:
        return
    assume(epsilon > 1e-2)
    assert gdp_delta(mu, epsilon * (1 - 1e-9)) > delta


@PROPERTY
@given(rho=st.floats(min_value=1e-6, max_value=100.0), delta=target_delta)
def test_zcdp_to_approx_is_the_smallest_sound_epsilon(rho, delta):
    epsilon = ZCDP(rho).to_approx(delta).epsilon
    assert zcdp_delta(rho, epsilon) <= delta * (1 + 1e-12)
    if epsilon == 0.0:
        return
    assume(epsilon > 1e-2)
    assert zcdp_delta(rho, epsilon * (1 - 1e-7)) > delta


@PROPERTY
@given(
    notion=st.sampled_from(["zcdp", "gdp", "pure"]),
    value=positive,
    deltas=st.lists(target_delta, min_size=2, max_size=2, unique=True),
)
def test_epsilon_decreases_with_delta(notion, value, deltas):
    small, large = sorted(deltas)
    convert = {
        "zcdp": zcdp_to_approx_epsilon,
        "gdp": gdp_to_approx_epsilon,
        "pure": pure_to_approx_epsilon,
    }[notion]
    at_small, at_large = convert(value, small), convert(value, large)
    assert at_large <= at_small
    if at_large > 0:
        assert at_large < at_small


@PROPERTY
@given(
    notion=st.sampled_from(["zcdp", "gdp", "pure"]),
    values=st.lists(positive, min_size=2, max_size=2, unique=True),
    delta=target_delta,
)
def test_epsilon_increases_with_rho_mu_and_epsilon(notion, values, delta):
    low, high = sorted(values)
    convert = {
        "zcdp": zcdp_to_approx_epsilon,
        "gdp": gdp_to_approx_epsilon,
        "pure": pure_to_approx_epsilon,
    }[notion]
    at_low, at_high = convert(low, delta), convert(high, delta)
    assert at_low <= at_high
    if at_low > 0:
        assert at_low < at_high


@PROPERTY
@given(mu=st.floats(min_value=0.05, max_value=20.0), delta=target_delta)
def test_gdp_mu_for_inverts_gdp_to_approx(mu, delta):
    epsilon = gdp_to_approx_epsilon(mu, delta)
    assume(epsilon > 1e-3)
    assert gdp_mu_for(epsilon, delta) == pytest.approx(mu, rel=1e-9)


@PROPERTY
@given(epsilon=parameters, delta=small_delta, larger=st.floats(min_value=0.06, max_value=0.9))
def test_approx_dp_at_a_larger_delta_keeps_epsilon(epsilon, delta, larger):
    assert ApproxDP(epsilon, delta).to_approx(larger) == ApproxDP(epsilon, larger)
    assert ApproxDP(epsilon, delta).to_approx(delta) == ApproxDP(epsilon, delta)


def test_approx_dp_cannot_lower_its_delta():
    with pytest.raises(IncompatibleBudgetError, match="says nothing about"):
        ApproxDP(1.0, 1e-5).to_approx(1e-6)


def test_non_private_has_no_approx_form():
    assert NonPrivate().to_approx(1e-6) is None
