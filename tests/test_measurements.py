"""Every noise-adding step is a measurement with a privacy map: each map checked against a
number computed here independently (exact rationals, the papers' formulas), each rounded
toward more privacy loss."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpggm import GDP, ZCDP, ApproxDP, PureDP
from dpggm.exceptions import BudgetRangeError, IncompatibleBudgetError
from dpggm.mechanisms.additive import GaussianMechanism, LaplaceMechanism, NoisyCount
from dpggm.mechanisms.grid import grid_step, sampler_scale_at_least
from dpggm.mechanisms.measurement import Measurement
from dpggm.mechanisms.noise import AboveThreshold, ExponentialMechanism, WishartMechanism
from dpggm.mechanisms.publish import RecordPublication
from dpggm.mechanisms.release import EntrywiseGaussian
from dpggm.privacy.budgets import accounting_total
from dpggm.privacy.calibration import gaussian_mu, gaussian_zcdp, laplace_epsilon
from exact_noise_reference import (
    exact_gaussian_sigma_zcdp,
    exact_laplace_scale,
    largest_rho_reference,
)


def _just_above(value: float, exact: Fraction) -> bool:
    """``value`` is the smallest float not below ``exact``."""
    return Fraction(value) >= exact and Fraction(math.nextafter(value, -math.inf)) < exact


@pytest.mark.parametrize("sensitivity, sigma", [(1.0, 2.0), (1.0, 3.0), (0.3, 0.7), (2.0, 1e-3)])
def test_the_one_gaussian_map(sensitivity, sigma):
    exact = Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2)
    assert _just_above(gaussian_zcdp(sensitivity, sigma), exact)
    assert _just_above(gaussian_mu(sensitivity, sigma), Fraction(sensitivity) / Fraction(sigma))
    assert _just_above(laplace_epsilon(sensitivity, sigma), Fraction(sensitivity) / Fraction(sigma))
    assert gaussian_zcdp(1.0, 2.0) == 0.125  # exactly 1 / 8


def test_accounting_totals_round_down():
    assert accounting_total(PureDP(1.0), ZCDP) == ZCDP(0.5)
    assert accounting_total(GDP(1.0), ZCDP) == ZCDP(0.5)
    rho = accounting_total(PureDP(0.1), ZCDP).rho
    assert Fraction(rho) <= Fraction(0.1) ** 2 / 2 < Fraction(math.nextafter(rho, 1.0))
    approx = accounting_total(ApproxDP(1.0, 1e-6), ZCDP).rho
    assert approx == pytest.approx(largest_rho_reference(1.0, 1e-6), rel=1e-6)
    assert accounting_total(ApproxDP(0.5, 0.0), PureDP) == PureDP(0.5)
    with pytest.raises(IncompatibleBudgetError):
        accounting_total(ApproxDP(1.0, 1e-6), PureDP)
    with pytest.raises(BudgetRangeError, match="epsilon"):
        accounting_total(PureDP(1e200), ZCDP)


def test_gaussian_map_meets_its_budget():
    sensitivity, k, rho = 0.01, 10, 0.3
    mechanism = GaussianMechanism(sensitivity=sensitivity, size=k, budget=ZCDP(rho))
    sigma, grid = exact_gaussian_sigma_zcdp(sensitivity, k, rho)
    assert mechanism.sigma == pytest.approx(sigma, rel=1e-15) and mechanism.grid == grid
    inflated = (Fraction(sensitivity) + Fraction(grid) * Fraction(math.sqrt(k))) * (
        1 + Fraction(1, 2**20))
    own = mechanism.privacy_map(sensitivity)
    assert isinstance(own, ZCDP)
    assert Fraction(own.rho) >= inflated**2 / (2 * Fraction(mechanism.sigma) ** 2) * (
        1 - Fraction(1, 2**40))
    assert own.rho <= rho and mechanism.delivered == ZCDP(rho)
    # Half the sensitivity: the same formula with the grid's allowance added to it.
    half = (Fraction(sensitivity / 2) + Fraction(grid) * Fraction(math.sqrt(k))) * (
        1 + Fraction(1, 2**20))
    expected = half**2 / (2 * Fraction(mechanism.sigma) ** 2)
    assert float(expected) == pytest.approx(mechanism.privacy_map(sensitivity / 2).rho, rel=1e-12)
    assert mechanism.privacy_map(sensitivity / 2).rho < rho / 3.9
    float_noise = GaussianMechanism(sensitivity=1.0, size=1, budget=GDP(0.5), noise="float")
    assert float_noise.privacy_map(1.0) == GDP(gaussian_mu(1.0, float_noise.sigma))
    assert float_noise.privacy_map(1.0).mu == pytest.approx(0.5, rel=1e-15)


def test_laplace_map_meets_its_budget():
    mechanism = LaplaceMechanism(sensitivity=2.0, size=5, budget=PureDP(0.7))
    scale, grid = exact_laplace_scale(2.0, 5, 0.7)
    assert mechanism.scale == pytest.approx(scale, rel=1e-15) and mechanism.grid == grid
    assert mechanism.privacy_map(2.0).epsilon <= 0.7
    assert mechanism.privacy_map(2.0).epsilon == pytest.approx(0.7, rel=1e-5)
    assert mechanism.privacy_map(1.0).epsilon == pytest.approx(0.35, rel=1e-3)


def test_selection_mechanisms_map_their_score_sensitivity():
    em = ExponentialMechanism.for_budget(ZCDP(0.5), sensitivity=1.0)
    assert em.epsilon == 2.0  # 2**2 / 8 = 0.5 exactly
    assert em.privacy_map(1.0) == ZCDP(0.5) and em.privacy_map(0.5) == ZCDP(0.125)
    pure = ExponentialMechanism.for_budget(PureDP(0.3), sensitivity=2.0)
    assert pure.epsilon == 0.3 and pure.privacy_map(4.0) == PureDP(0.6)
    rho = ZCDP(0.1)
    em = ExponentialMechanism.for_budget(rho, sensitivity=1.0)
    assert Fraction(em.epsilon) ** 2 / 8 <= Fraction(0.1)  # never above what was booked
    assert em.privacy_map(1.0).rho <= 0.1
    svt = AboveThreshold.for_budget(ZCDP(0.5), sensitivity=1.0, monotonic=True)
    assert svt.epsilon == 1.0 and svt.privacy_map(1.0) == ZCDP(0.5)
    assert AboveThreshold(epsilon=0.4, sensitivity=1.0).privacy_map(3.0).epsilon == pytest.approx(1.2)
    record = svt.record()
    assert record["threshold_laplace_scale"] == pytest.approx(2.0, rel=1e-5)
    assert record["query_laplace_scale"] == pytest.approx(2.0, rel=1e-5)


def test_wishart_map_is_its_claim_within_the_bound():
    budget = ApproxDP(0.5, 1e-6)
    mechanism = WishartMechanism.sheffet(budget, p=3, row_bound=1.0, n=100)
    assert mechanism.df == math.ceil(3 + 14 * math.log(4e6) / 0.25)
    assert mechanism.privacy_map(1.0) == budget and mechanism.privacy_map(0.5) == budget
    with pytest.raises(ValueError, match="rows of norm"):
        mechanism.privacy_map(2.0)
    with pytest.raises(ValueError, match="epsilon in"):
        WishartMechanism.sheffet(ApproxDP(1.5, 1e-6), p=3, row_bound=1.0, n=100)


def test_count_record_publication_and_sulq_maps():
    count = NoisyCount(ZCDP(0.1))
    assert count.privacy_map(1.0).rho <= 0.1 and count.delivered == ZCDP(0.1)
    assert NoisyCount(PureDP(0.2)).privacy_map(1.0).epsilon <= 0.2
    lattice = RecordPublication.on_lattice(sensitivity=2.0, p=3, sigma=4.0, step=Fraction(1))
    assert lattice.delivered == ZCDP(0.125)  # 2**2 / (2 * 4**2)
    entries = np.array([1.0, 2.0, 1.0])
    sulq = EntrywiseGaussian(entries, ZCDP(0.01))
    assert _just_above(sulq.delivered.rho, 3 * Fraction(0.01)) and sulq.runs == 3
    assert sulq.privacy_map(2.0).rho <= sulq.delivered.rho
    halved = sulq.privacy_map(1.0).rho  # every entry's sensitivity halved
    assert halved == pytest.approx(0.03 / 4, rel=1e-2)
    last = EntrywiseGaussian(entries, [ZCDP(0.01), ZCDP(0.01), ZCDP(0.02)])
    assert _just_above(last.delivered.rho, 2 * Fraction(0.01) + Fraction(0.02))


def test_every_measurement_states_itself_as_a_planned_step():
    cases: list[Measurement] = [
        GaussianMechanism(sensitivity=1.0, size=3, budget=ZCDP(0.2)),
        LaplaceMechanism(sensitivity=1.0, size=3, budget=PureDP(0.2)),
        NoisyCount(ZCDP(0.1)),
        ExponentialMechanism.for_budget(ZCDP(0.1), sensitivity=1.0),
        AboveThreshold.for_budget(PureDP(0.5), sensitivity=1.0),
        WishartMechanism.sheffet(ApproxDP(0.5, 1e-6), p=3, row_bound=1.0, n=100),
        RecordPublication.on_lattice(sensitivity=2.0, p=3, sigma=4.0, step=Fraction(1)),
        EntrywiseGaussian(np.ones(3), ZCDP(0.01)),
    ]
    for mechanism in cases:
        planned = mechanism.planned("step", repetitions=2)
        assert planned.measurement is mechanism and planned.repetitions == 2 * mechanism.runs
        assert planned.noise == {**mechanism.record()}
        assert planned.to_dict()["budget"]["notion"] == mechanism.delivered.notion


def test_grid_rounding_never_lowers_the_noise():
    assert grid_step(1.0, 1.0, 1.0) == 2.0**-10
    assert grid_step(3.0, 2.0, 100.0) == 2.0**-10  # 3 / 2 / 1024 = 1.46e-3 -> 2**-10
    for value in (Fraction(1, 3), Fraction(10**12 + 1, 7 * 3**30), Fraction(2**70 + 1, 2**75)):
        rounded = sampler_scale_at_least(value)
        assert rounded >= value and rounded.denominator <= 2**56 and rounded.numerator < 2**62
        assert rounded - value <= Fraction(1, 2**56) * max(value, 1)
        short = sampler_scale_at_least(value, significant_bits=51)
        assert value <= short and short - value <= Fraction(1, 2**51) * max(value, 1)


def test_above_threshold_map_never_states_less_than_the_grid_delivers():
    # Queries of sensitivity d move by up to ceil(d / t) + 1 grid steps once rounded; the
    # map must cover that for every d, below the calibrated sensitivity too.
    svt = AboveThreshold(epsilon=0.5, sensitivity=1.0)
    assert svt.privacy_map(1.0).epsilon == pytest.approx(0.5, rel=0, abs=1e-15)
    step = svt.step
    calibrated_units = math.ceil(1.0 / step) + 1
    for d in (1e-3, 0.1, 0.5, 0.999, 2.0):
        units = math.ceil(d / step) + 1
        assert svt.privacy_map(d).epsilon >= 0.5 * units / calibrated_units
        if d < 1.0:
            # Linear scaling eps * d / Delta would understate the loss.
            assert svt.privacy_map(d).epsilon > 0.5 * d
