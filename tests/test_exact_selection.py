"""Tests of the exact exponential mechanism (issue 8, finding 5)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpggm.mechanisms import _exact_kernels as kernels
from dpggm.mechanisms import _exact_selection as selection
from dpggm.mechanisms.noise import exponential_mechanism


def exact_probabilities(scores, *, sensitivity, epsilon) -> np.ndarray:
    """exp(epsilon u_r / (2 sensitivity)) normalised, from the exact rationals in 60 digits."""
    factor = Fraction(epsilon) / (2 * Fraction(sensitivity))
    best = max(Fraction(float(u)) for u in scores)
    with mpmath.workdps(60):
        weights = []
        for u in scores:
            gamma = factor * (best - Fraction(float(u)))
            weights.append(mpmath.exp(-mpmath.mpf(gamma.numerator) / gamma.denominator))
        total = mpmath.fsum(weights)
        return np.array([float(w / total) for w in weights])


def draw(scores, n, *, sensitivity, epsilon, seed) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picks = [
        exponential_mechanism(scores, sensitivity=sensitivity, epsilon=epsilon, rng=rng)
        for _ in range(n)
    ]
    return np.bincount(picks, minlength=len(scores))


def grouped_pvalue(counts, probabilities, groups) -> float:
    observed = np.array([counts[g].sum() for g in groups])
    expected = np.array([probabilities[g].sum() for g in groups]) * counts.sum()
    return stats.chisquare(observed, expected).pvalue


def test_selection_frequencies_match_exact_probabilities_with_far_candidates():
    # Exponents 0, 0.7, 2.3, 5.1 for single candidates and 9.6 for 3000 candidates: the far
    # group has about 20% of the mass, and its acceptance runs 9 compiled exp(-1) coins
    # before the exact remainder coin.
    near = np.array([0.0, -0.7, -2.3, -5.1])
    scores = np.concatenate([near, np.full(3000, -9.6)]) * 1.25 + 40.0
    sensitivity, epsilon = 0.625, 1.0
    probabilities = exact_probabilities(scores, sensitivity=sensitivity, epsilon=epsilon)
    counts = draw(scores, 6000, sensitivity=sensitivity, epsilon=epsilon, seed=3)
    groups = [np.array([0]), np.array([1]), np.array([2]), np.array([3]), np.arange(4, 3004)]
    assert grouped_pvalue(counts, probabilities, groups) > 1e-3
    # Power: the same test rejects epsilon off by 3%.
    wrong = exact_probabilities(scores, sensitivity=sensitivity, epsilon=epsilon * 1.03)
    assert grouped_pvalue(counts, wrong, groups) < 1e-3


def test_rounded_float_logits_are_not_used():
    # The exact exponents are 0 and 3. Forming epsilon * u / (2 sensitivity) in floats
    # rounds 1.5 * (2**53 + 2) to the nearest multiple of 4 and makes the gap 4, so the
    # former float implementation picks index 0 with probability 1/(1 + e^4) = 0.018
    # instead of 1/(1 + e^3) = 0.047; this test fails on it.
    scores = np.array([2.0**53, 2.0**53 + 2])
    counts = draw(scores, 20_000, sensitivity=1.0, epsilon=3.0, seed=11)
    probabilities = exact_probabilities(scores, sensitivity=1.0, epsilon=3.0)
    assert probabilities[0] == pytest.approx(1 / (1 + np.exp(3)), rel=1e-12)
    assert stats.binomtest(int(counts[0]), 20_000, probabilities[0]).pvalue > 1e-3


def bits_to_words(bits: list[int], extra_words: list[int]) -> np.ndarray:
    """Words whose bits, read least significant first, are ``bits``, then ``extra_words``."""
    n_words = -(-len(bits) // 64)
    words = [
        sum(bit << i for i, bit in enumerate(bits[64 * w : 64 * (w + 1)])) for w in range(n_words)
    ]
    return np.array(words + extra_words, dtype=np.uint64)


def test_a_candidate_far_below_the_best_is_reachable(monkeypatch):
    # Exponents 0 and 41.5: no float Gumbel draw (bounded by about [-3.6, 36.7]) can ever
    # select the second candidate, but the exact sampler selects it on this bit string:
    # index bit 1, then 41 exp(-1) coins each decided by the bits 0 (Bernoulli(1/2) heads)
    # and 1 (Bernoulli(1/3) tails), then a word above 2**63 for the remainder coin
    # exp(-1/2) (its first Bernoulli(1/2) coin fails, so the coin succeeds).
    bits = [1] + [0, 1] * 41
    script = bits_to_words(bits, [(1 << 64) - 1])

    def scripted(self, count):
        return np.concatenate([script, np.zeros(max(count - script.size, 0), dtype=np.uint64)])

    monkeypatch.setattr(kernels.BitStream, "_fresh", scripted)
    scores = np.array([41.5, 0.0])
    assert exponential_mechanism(scores, sensitivity=1.0, epsilon=2.0, rng=0) == 1


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    scores=st.lists(
        st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=6
    ),
    factor=st.one_of(
        st.floats(min_value=1e-300, max_value=1e300),
        st.fractions(min_value=Fraction(1, 10**6), max_value=10**6),
    ),
)
def test_whole_parts_never_exceed_the_exact_exponents(scores, factor):
    values = np.array(scores, dtype=float)
    exact_factor = Fraction(factor)
    whole = selection._whole_parts(values, exact_factor)
    best = Fraction(float(values.max()))
    for value, part in zip(values, whole):
        assert 0 <= int(part) <= exact_factor * (best - Fraction(float(value)))


def test_whole_parts_are_tight_enough_to_prefilter():
    whole = selection._whole_parts(np.array([10.0, 9.0, -90.0, -1e6]), Fraction(1, 2))
    np.testing.assert_array_equal(whole, [0, 0, 49, 500_004])


def test_seeded_selection_is_reproducible():
    scores = np.linspace(0.0, 3.0, 50)
    first = [
        exponential_mechanism(scores, sensitivity=1.0, epsilon=1.0, rng=np.random.default_rng(5))
        for _ in range(3)
    ]
    again = [
        exponential_mechanism(scores, sensitivity=1.0, epsilon=1.0, rng=np.random.default_rng(5))
        for _ in range(3)
    ]
    assert first == again
    rng = np.random.default_rng(5)
    sequence = [
        exponential_mechanism(scores, sensitivity=1.0, epsilon=1.0, rng=rng) for _ in range(30)
    ]
    assert len(set(sequence)) > 1


def test_secure_selection_reads_the_os_source(monkeypatch):
    from dpggm.mechanisms import random as random_module

    calls = []
    real_urandom = random_module.os.urandom

    def counting_urandom(n):
        calls.append(n)
        return real_urandom(n)

    monkeypatch.setattr(random_module.os, "urandom", counting_urandom)
    scores = np.array([0.0, 0.0, -100.0])
    picks = {
        exponential_mechanism(scores, sensitivity=1.0, epsilon=1.0, rng="secure") for _ in range(40)
    }
    assert picks == {0, 1}
    assert len(calls) >= 40


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scores": np.array([np.nan, 1.0])}, "scores must be"),
        ({"scores": np.zeros((2, 2))}, "scores must be"),
        ({"scores": np.array([])}, "scores must be"),
        ({"epsilon": 0.0}, "epsilon must be a finite number > 0"),
        ({"sensitivity": float("inf")}, "sensitivity must be a finite number > 0"),
    ],
)
def test_invalid_arguments(kwargs, message):
    arguments = {"scores": np.array([1.0, 2.0]), "sensitivity": 1.0, "epsilon": 1.0, "rng": 0}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        exponential_mechanism(**arguments)


# ------------------------------------------------------------- exact AboveThreshold


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1.0, 0.8), (0.37, 0.05), (3e-7, 2.5)])
def test_above_threshold_noise_is_discrete_laplace_calibrated_on_the_grid(
    monkeypatch, sensitivity, epsilon, monotonic
):
    from dpggm.mechanisms import noise

    scales = []
    real_sampler = noise.sample_discrete_laplace

    def recording(scale, size=None, *, random_state=None):
        scales.append(Fraction(scale))
        return real_sampler(scale, size, random_state=random_state)

    monkeypatch.setattr(noise, "sample_discrete_laplace", recording)
    queries = np.array([-1.0, 0.2, 5.0]) * sensitivity
    noise.above_threshold(
        queries,
        threshold=0.0,
        sensitivity=sensitivity,
        epsilon=epsilon,
        rng=np.random.default_rng(0),
        monotonic=monotonic,
    )
    step = Fraction(2) ** (math.frexp(sensitivity)[1] - 1 - 20)
    assert step <= Fraction(sensitivity) * Fraction(1, 2**20) < 2 * step
    # Rounded queries move by at most sensitivity/step + 1 grid steps.
    grid_sensitivity = -(-Fraction(sensitivity) // step) + 1
    threshold_scale, query_scale = scales
    assert threshold_scale >= 2 * grid_sensitivity / Fraction(epsilon)
    assert query_scale >= (2 if monotonic else 4) * grid_sensitivity / Fraction(epsilon)
    # ... and exceed the continuous calibration by a relative 2**-18 at most.
    assert float(threshold_scale * step * Fraction(epsilon) / (2 * Fraction(sensitivity))) < (
        1 + 2**-18
    )


def test_above_threshold_rejects_non_finite_queries():
    with pytest.raises(ValueError, match="queries must be"):
        from dpggm.mechanisms.noise import above_threshold

        above_threshold(np.array([0.0, np.inf]), threshold=0.0, sensitivity=1.0, epsilon=1.0, rng=0)


# -- batches ---------------------------------------------------------------------------


def test_a_batch_selects_what_the_selections_one_by_one_select():
    from dpggm.mechanisms.noise import exponential_mechanisms
    from dpggm.mechanisms.random import RandomSource

    rng = np.random.default_rng(0)
    # Whole-number scores (rank and count scores), fractions, far candidates, ties.
    scores = np.vstack([
        -np.abs(rng.integers(-400, 400, size=(40, 300))).astype(float),
        rng.normal(scale=30.0, size=(20, 300)),
        np.where(rng.random((20, 300)) < 0.01, 0.0, -1e6),
    ])
    for epsilon in (0.02, 0.7, 3.0):
        one = RandomSource.of(7)
        singles = [exponential_mechanism(row, sensitivity=2.0, epsilon=epsilon, rng=one)
                   for row in scores]
        batch_source = RandomSource.of(7)
        batch = exponential_mechanisms(scores, sensitivity=2.0, epsilon=epsilon,
                                       rng=batch_source)
        np.testing.assert_array_equal(batch, singles)
        # The source is left where the selections one by one left it.
        np.testing.assert_array_equal(batch_source.words(4), one.words(4))


def test_batch_frequencies_match_exact_probabilities():
    from dpggm.mechanisms.noise import exponential_mechanisms

    near = np.array([0.0, -0.7, -2.3, -5.1])
    row = np.concatenate([near, np.full(300, -9.6)]) * 1.25 + 40.0
    probabilities = exact_probabilities(row, sensitivity=0.625, epsilon=1.0)
    picks = exponential_mechanisms(np.tile(row, (4000, 1)), sensitivity=0.625, epsilon=1.0,
                                   rng=np.random.default_rng(3))
    counts = np.bincount(picks, minlength=row.size)
    groups = [np.array([0]), np.array([1]), np.array([2]), np.array([3]), np.arange(4, 304)]
    assert grouped_pvalue(counts, probabilities, groups) > 1e-3


def test_a_secure_batch_reads_every_word_from_the_os(monkeypatch):
    from dpggm.mechanisms import random as random_module
    from dpggm.mechanisms.noise import exponential_mechanisms

    requested = []
    real = random_module.os.urandom

    def counting(n):
        requested.append(n)
        return real(n)

    monkeypatch.setattr(random_module.os, "urandom", counting)
    picks = exponential_mechanisms(np.zeros((5, 3)), sensitivity=1.0, epsilon=1.0,
                                   rng="secure")
    assert picks.shape == (5,) and len(requested) >= 5


def test_a_batch_refuses_bad_scores():
    from dpggm.mechanisms.noise import exponential_mechanisms

    with pytest.raises(ValueError, match="two-dimensional"):
        exponential_mechanisms(np.zeros(3), sensitivity=1.0, epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="finite"):
        exponential_mechanisms(np.array([[0.0, np.nan]]), sensitivity=1.0, epsilon=1.0, rng=0)
