"""Every conversion between privacy notions lands inside its target, checked against the
profiles in 60-digit arithmetic (tests/privacy_reference.py) on a grid of parameters.

The library aims each figure inside by a relative 2**-20 of delta: a stated delta is at
least the exact one times (1 + 2**-20); an epsilon, rho or mu is one whose exact delta is at
most delta / (1 + 2**-20). The tests ask for at least half of that margin (so a few ulps of
rounding cannot cross the target) and, where the float grid is fine enough, that the
figure is no more than a small relative step from the edge (so the margin is not a
loophole for a sloppy conversion). Before the margin, ``zcdp_rho_for(10, 1e-12)`` had a
true delta of 1e-12 * (1 + 1.7e-15) and ``zcdp_to_approx_epsilon`` fell short by up to
2.4e-15 relative.
"""

from __future__ import annotations

import math

import mpmath
import pytest

import privacy_reference as reference
from dpggm.privacy import ZCDP, ApproxDP
from dpggm.privacy.budgets import accounting_total
from dpggm.privacy.conversion import (
    gdp_delta,
    gdp_mu_for,
    gdp_to_approx_epsilon,
    pure_to_approx_epsilon,
    zcdp_delta,
    zcdp_rho_for,
    zcdp_to_approx_epsilon,
)

MARGIN = mpmath.mpf(2) ** -20
INSIDE = 1 - MARGIN / 2  # at least half the margin to spare
TIGHT = 1 - mpmath.mpf(2) ** -12  # and not much more than the margin, where floats allow

EPSILONS = [1e-3, 0.01, 0.1, 1.0, 3.0, 10.0, 20.0, 50.0]
DELTAS = [1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.1]
RHOS = [1e-4, 0.01, 0.1, 1.0, 10.0, 100.0]
MUS = [1e-3, 0.01, 0.1, 1.0, 3.0, 10.0]


def _step_effect(profile, value: float) -> mpmath.mpf:
    """Relative change of the exact delta when ``value`` moves by one ulp."""
    here, there = profile(value), profile(math.nextafter(value, math.inf))
    return abs(there - here) / here if here > 0 else mpmath.mpf(0)


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_rho_for_epsilon_delta_has_its_true_delta_inside(epsilon, delta):
    rho = zcdp_rho_for(epsilon, delta)
    true = reference.zcdp_delta(rho, epsilon)
    assert true <= delta * INSIDE
    assert true >= delta * TIGHT - _step_effect(lambda r: reference.zcdp_delta(r, epsilon), rho)
    # The total a pipeline or a ledger composes in is this very rho.
    assert accounting_total(ApproxDP(epsilon, delta), ZCDP) == ZCDP(rho)


def test_the_reported_case_ten_and_one_in_a_trillion():
    rho = zcdp_rho_for(10.0, 1e-12)
    true = reference.zcdp_delta(rho, 10.0)
    assert true <= mpmath.mpf(1e-12) * INSIDE
    assert reference.zcdp_delta(rho, zcdp_to_approx_epsilon(rho, 1e-12)) <= mpmath.mpf(
        1e-12) * INSIDE


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("rho", RHOS)
def test_zcdp_epsilon_is_never_below_the_true_one(rho, delta):
    epsilon = zcdp_to_approx_epsilon(rho, delta)
    # The exact delta falls with epsilon: delta at the figure within target <=> the figure
    # is at least the true epsilon of (rho, delta).
    true = reference.zcdp_delta(rho, epsilon)
    assert true <= delta * INSIDE
    if epsilon > 0:
        below = epsilon * (1 - 2.0**-12)
        assert reference.zcdp_delta(rho, below) > delta


@pytest.mark.parametrize("epsilon", [0.0, *EPSILONS])
@pytest.mark.parametrize("rho", RHOS)
def test_zcdp_delta_is_an_upper_bound(rho, epsilon):
    stated, true = zcdp_delta(rho, epsilon), reference.zcdp_delta(rho, epsilon)
    if true < mpmath.mpf("1e-300"):
        assert stated >= 0
        return
    if stated < 1.0:
        assert stated >= true * (1 + MARGIN / 2)
        assert stated <= true * (1 + 4 * MARGIN)


@pytest.mark.parametrize("epsilon", [0.0, *EPSILONS])
@pytest.mark.parametrize("mu", MUS)
def test_gdp_delta_is_an_upper_bound(mu, epsilon):
    stated, true = gdp_delta(mu, epsilon), reference.gdp_delta(mu, epsilon)
    if true < mpmath.mpf("1e-300"):
        assert stated >= 0
        return
    assert stated >= true * (1 + MARGIN / 2)
    assert stated <= true * (1 + 4 * MARGIN)


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("mu", MUS)
def test_gdp_epsilon_is_never_below_the_true_one(mu, delta):
    epsilon = gdp_to_approx_epsilon(mu, delta)
    assert reference.gdp_delta(mu, epsilon) <= delta * INSIDE
    if epsilon > 1e-6:
        assert reference.gdp_delta(mu, epsilon * (1 - 2.0**-12)) > delta * INSIDE


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_gdp_mu_for_epsilon_delta_has_its_true_delta_inside(epsilon, delta):
    mu = gdp_mu_for(epsilon, delta)
    true = reference.gdp_delta(mu, epsilon)
    assert true <= delta * INSIDE
    assert true >= delta * TIGHT - _step_effect(lambda m: reference.gdp_delta(m, epsilon), mu)


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_pure_epsilon_is_never_below_the_true_one(epsilon, delta):
    epsilon_prime = pure_to_approx_epsilon(epsilon, delta)
    true = reference.pure_delta(epsilon, epsilon_prime)
    assert true <= delta * INSIDE
    if epsilon_prime > 0:
        # One ulp below is already outside the margin'd target, or the profile is the
        # target itself to within the float grid.
        below = reference.pure_delta(epsilon, math.nextafter(epsilon_prime, 0.0))
        assert below > delta * (1 - MARGIN) * (1 - mpmath.mpf(1e-12))


@pytest.mark.parametrize("epsilon", [1e3, 1e7, 1e12])
def test_rho_of_a_huge_epsilon_is_still_inside(epsilon):
    # Where the tight search may overflow, the simple conversion solved for rho is used.
    rho = accounting_total(ApproxDP(epsilon, 1e-6), ZCDP).rho
    assert rho > 0
    assert reference.zcdp_delta(rho, epsilon) <= mpmath.mpf(1e-6) * INSIDE
