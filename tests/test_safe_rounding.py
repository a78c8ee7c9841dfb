"""Every conversion between privacy figures rounds toward the safe side: the cost a step
delivers never exceeds the cost it was booked for (exact rational checks)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpggm import GDP, ZCDP, Box
from dpggm.estimators import pace as pace_module
from dpggm.estimators.baselines import AdaptiveCovariance
from dpggm.estimators.pace import PACECovariance
from dpggm.mechanisms import private_bounds
from dpggm.mechanisms.additive import GaussianMechanism
from dpggm.privacy.calibration import (
    EXPONENTIAL_MECHANISM_ZCDP,
    PURE_DP_ZCDP,
    epsilon_for_zcdp,
)

# Shares of a budget as the estimators form them: any non-negative float, subnormals too.
_SHARES = st.floats(min_value=0.0, max_value=1e300, allow_nan=False, allow_infinity=False,
                    allow_subnormal=True)


@settings(max_examples=400, deadline=None)
@given(rho=_SHARES, coefficient=st.sampled_from([EXPONENTIAL_MECHANISM_ZCDP, PURE_DP_ZCDP]))
def test_epsilon_for_zcdp_is_the_largest_float_within_the_share(rho, coefficient):
    epsilon = epsilon_for_zcdp(rho, coefficient=coefficient)
    assert coefficient * Fraction(epsilon) ** 2 <= Fraction(rho)
    above = math.nextafter(epsilon, math.inf)
    assert coefficient * Fraction(above) ** 2 > Fraction(rho)


def test_epsilon_for_zcdp_beats_the_rounded_square_root():
    # Independent count: the square root rounded to nearest overspends for many shares.
    rng = np.random.default_rng(0)
    shares = rng.uniform(1e-6, 1.0, size=400)
    over = [r for r in shares if Fraction(math.sqrt(8 * r)) ** 2 / 8 > Fraction(float(r))]
    assert len(over) > 50
    for r in over:
        epsilon = epsilon_for_zcdp(float(r))
        assert Fraction(epsilon) ** 2 / 8 <= Fraction(float(r))
        assert epsilon == math.nextafter(math.sqrt(8 * r), 0.0)


def test_epsilon_for_zcdp_edges():
    assert epsilon_for_zcdp(0.0) == 0.0
    assert epsilon_for_zcdp(Fraction(10) ** 700) == 1.7976931348623157e308
    tiny = epsilon_for_zcdp(5e-324)
    assert tiny > 0 and Fraction(tiny) ** 2 / 8 <= Fraction(5e-324)
    with pytest.raises(ValueError, match="rho must be >= 0"):
        epsilon_for_zcdp(-1.0)


@pytest.fixture(scope="module")
def box_data():
    rng = np.random.default_rng(4)
    X = rng.multivariate_normal(np.zeros(4), 0.5 * np.eye(4) + 0.5, size=400)
    return np.clip(X / 3, -1, 1)


def test_pace_selection_rounding_on_shares_where_the_root_rounds_up(box_data, monkeypatch):
    # Every selection's epsilon against the share booked for it, over budgets for which
    # the square root rounded to nearest overspends on some of the shares.
    # (The selections are ExponentialMechanism objects; their releases are recorded.)
    used = []
    original = pace_module.ExponentialMechanism.release

    def recording(self, scores, source):
        used.append(self.epsilon)
        return original(self, scores, source)

    monkeypatch.setattr(pace_module.ExponentialMechanism, "release", recording)
    overspent_by_root = 0
    for rho in np.linspace(0.05, 0.5, 12):
        used.clear()
        est = PACECovariance(budget=ZCDP(float(rho)), bounds=Box(1.0), random_state=1,
                             max_rounds=3).fit(box_data)
        booked = [s.budget.rho for s in est.filter_.spends if s.mechanism == "exponential"]
        assert len(used) == len(booked) > 0
        for epsilon, rho_sel in zip(used, booked):
            assert Fraction(epsilon) ** 2 / 8 <= Fraction(rho_sel)
            overspent_by_root += Fraction(math.sqrt(8 * rho_sel)) ** 2 / 8 > Fraction(rho_sel)
    assert overspent_by_root > 0  # the case the fix is about did occur


@settings(max_examples=200, deadline=None)
@given(mu=st.floats(min_value=1e-3, max_value=50.0))
def test_exact_gaussian_under_gdp_never_delivers_more_than_mu_squared_over_two(mu):
    mechanism = GaussianMechanism(sensitivity=1.0, size=3, budget=GDP(mu))
    assert isinstance(mechanism.delivered, ZCDP)
    assert Fraction(mechanism.delivered.rho) <= Fraction(mu) ** 2 / 2


@settings(max_examples=25, deadline=None)
@given(rho=st.floats(min_value=1e-6, max_value=10.0), p=st.integers(1, 3))
def test_private_range_stages_never_cost_more_than_their_share(rho, p):
    X = np.random.default_rng(0).normal(size=(20, p))
    ranges = private_bounds.private_ranges(X, budget=ZCDP(rho), rng=0)
    per_column = Fraction(rho) / p
    shares = private_bounds.range_shares(n=20, per_column=float(per_column), columns=p)
    assert sum(shares.values()) == 1 and all(v > 0 for v in shares.values())
    for stage, share in shares.items():
        exact_share = per_column * share
        assert Fraction(ranges.epsilons[stage]) ** 2 / 8 <= exact_share


def test_adaptive_sparse_vector_epsilon_within_its_zcdp_share():
    rng = np.random.default_rng(2)
    X = np.clip(rng.normal(size=(300, 3)) / 3, -1, 1)
    est = AdaptiveCovariance(budget=ZCDP(0.37), bounds=Box(1.0), random_state=0).fit(X)
    # Booked at its zCDP share (at most radius_fraction of rho), run at an epsilon whose
    # epsilon**2 / 2 is within what was booked.
    (sparse,) = [s for s in est.privacy_.noise["breakdown"] if s["step"] == "radius"]
    booked = Fraction(sparse["budget"].rho)
    assert booked <= Fraction(0.37) * Fraction(est.radius_fraction)
    assert Fraction(est.privacy_.noise["svt_epsilon"]) ** 2 / 2 <= booked
