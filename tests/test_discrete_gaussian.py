"""Tests of the exact discrete Gaussian, discrete Laplace and Bernoulli(exp(-gamma)) samplers."""

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
from dpggm.mechanisms import discrete_gaussian as dg
from dpggm.mechanisms.discrete_gaussian import (
    discrete_gaussian_pmf,
    discrete_gaussian_variance,
    sample_bernoulli_exp,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

WORD = 1 << 64


# ----------------------------------------------------------------- independent references


def reference_pmf(sigma, support: np.ndarray, grid=1) -> np.ndarray:
    """Discrete Gaussian pmf on grid*support by 40-digit mpmath summation.

    The normaliser runs over |k| <= 16 sigma/grid + 10, where terms are below e^-128.
    """
    with mpmath.workdps(40):
        variance = mpmath.mpf(Fraction(sigma).numerator) / Fraction(sigma).denominator
        variance = variance / (mpmath.mpf(Fraction(grid).numerator) / Fraction(grid).denominator)
        variance = variance**2
        reach = int(16 * math.sqrt(float(variance))) + 10
        z = 1 + 2 * mpmath.fsum(mpmath.exp(-(k * k) / (2 * variance)) for k in range(1, reach))
        return np.array([float(mpmath.exp(-(int(k) ** 2) / (2 * variance)) / z) for k in support])


def reference_variance(sigma) -> float:
    """Var N_Z(0, sigma^2) by 30-digit mpmath summation of both series over k >= 1."""
    with mpmath.workdps(30):
        s = mpmath.mpf(sigma) ** 2
        reach = int(14 * float(sigma)) + 10
        weights = [mpmath.exp(-(k * k) / (2 * s)) for k in range(1, reach)]
        numerator = 2 * mpmath.fsum(k * k * w for k, w in zip(range(1, reach), weights))
        denominator = 1 + 2 * mpmath.fsum(weights)
        return float(numerator / denominator)


def chisquare_pvalue(samples: np.ndarray, support: np.ndarray, probabilities: np.ndarray) -> float:
    """Chi-square goodness of fit, adjacent cells merged until each expects >= 5 draws."""
    n = samples.size
    assert samples.min() >= support[0] and samples.max() <= support[-1]
    observed_all = np.bincount(samples - support[0], minlength=support.size)
    expected_all = n * probabilities / probabilities.sum()
    observed, expected = [], []
    cell_observed = cell_expected = 0.0
    for obs, exp in zip(observed_all, expected_all):
        cell_observed += obs
        cell_expected += exp
        if cell_expected >= 5:
            observed.append(cell_observed)
            expected.append(cell_expected)
            cell_observed = cell_expected = 0.0
    observed[-1] += cell_observed
    expected[-1] += cell_expected
    assert len(expected) >= 3
    return stats.chisquare(observed, expected).pvalue


def support_for(sigma: float) -> np.ndarray:
    reach = int(12 * sigma) + 8
    return np.arange(-reach, reach + 1)


# ------------------------------------------------------------------ goodness of fit


@pytest.mark.parametrize(("sigma", "seed"), [(0.5, 11), (3.0, 12), (50.0, 13)])
def test_discrete_gaussian_matches_exact_pmf(sigma, seed):
    support = support_for(sigma)
    reference = reference_pmf(sigma, support)
    samples = sample_discrete_gaussian(sigma, 100_000, random_state=seed)
    assert samples.dtype == np.int64
    assert chisquare_pvalue(samples, support, reference) > 1e-3
    # Power: the same test detects 5% too much noise, even from fewer draws.
    wider = sample_discrete_gaussian(sigma * 1.05, 30_000, random_state=seed + 100)
    wide_support = support_for(sigma * 1.05)
    assert chisquare_pvalue(wider, wide_support, reference_pmf(sigma, wide_support)) < 1e-3


def test_rounded_continuous_gaussian_is_rejected_at_small_sigma():
    support = support_for(0.5)
    rounded = np.rint(np.random.default_rng(5).normal(0.0, 0.5, 100_000)).astype(np.int64)
    assert chisquare_pvalue(rounded, support, reference_pmf(0.5, support)) < 1e-3


def test_float_sigma_with_long_binary_expansion_matches_pmf():
    # 1.7 has a 52-bit denominator, so the acceptance test works on ~110-bit integers.
    support = support_for(1.7)
    samples = sample_discrete_gaussian(1.7, 50_000, random_state=21)
    assert chisquare_pvalue(samples, support, reference_pmf(1.7, support)) > 1e-3


def test_grid_samples_match_pmf_on_the_grid():
    step = Fraction(1, 3)
    values = sample_discrete_gaussian(1.0, 40_000, random_state=22, grid=step)
    indices = np.rint(values * 3).astype(np.int64)
    np.testing.assert_array_equal(values, np.array([float(Fraction(int(i), 3)) for i in indices]))
    support = support_for(3.0)
    assert chisquare_pvalue(indices, support, reference_pmf(1.0, support, grid=step)) > 1e-3


def test_grid_is_scaled_integer_sampler():
    on_grid = sample_discrete_gaussian(1.5, 2_000, random_state=7, grid=0.5)
    integers = sample_discrete_gaussian(3, 2_000, random_state=7)
    np.testing.assert_array_equal(on_grid, 0.5 * integers)
    assert on_grid.dtype == np.float64


# ------------------------------------------------------------------ exact variance and pmf


@pytest.mark.parametrize("sigma", [0.03, 0.1, 0.5, 0.97, 1.0, 1.3, 3.0, 50.0, 1000.0])
def test_variance_matches_high_precision_summation(sigma):
    assert discrete_gaussian_variance(sigma) == pytest.approx(reference_variance(sigma), rel=1e-12)


def test_variance_below_sigma_squared_and_increasing():
    # Beyond sigma ~ 1.5 the gap to sigma^2 is below double precision.
    sigmas = [0.2, 0.4, 0.8, 1.0, 1.2]
    variances = [discrete_gaussian_variance(s) for s in sigmas]
    assert all(v < s * s for v, s in zip(variances, sigmas))
    assert all(a < b for a, b in zip(variances, variances[1:]))


def test_variance_on_grid_is_scaled():
    expected = 0.25 * reference_variance(0.6 / 0.5)
    assert discrete_gaussian_variance(0.6, grid=0.5) == pytest.approx(expected, rel=1e-12)


def test_sample_variance_agrees_with_exact_variance():
    samples = sample_discrete_gaussian(0.7, 100_000, random_state=3)
    exact = discrete_gaussian_variance(0.7)
    # Standard error of the sample variance from the fourth moment of the exact pmf.
    support = support_for(0.7)
    pmf = reference_pmf(0.7, support)
    fourth = float(np.sum(pmf * support.astype(float) ** 4))
    standard_error = math.sqrt((fourth - exact**2) / samples.size)
    assert abs(np.mean(samples.astype(float) ** 2) - exact) < 4.5 * standard_error


@pytest.mark.parametrize("sigma", [0.3, 2.0, 20.0])
def test_pmf_matches_high_precision_summation(sigma):
    support = support_for(sigma)
    np.testing.assert_allclose(
        discrete_gaussian_pmf(support, sigma), reference_pmf(sigma, support), rtol=1e-12, atol=0
    )
    assert isinstance(discrete_gaussian_pmf(0, sigma), float)


def test_pmf_rejects_non_integers():
    with pytest.raises(ValueError, match="k must be integer-valued"):
        discrete_gaussian_pmf([0.5], 1.0)


# --------------------------------------------------------- exact coins and discrete Laplace


@pytest.mark.parametrize(
    "gamma", [Fraction(1, 3), Fraction(1), Fraction(7, 5), Fraction(5, 2), 0.1, 3]
)
def test_bernoulli_exp_frequency(gamma):
    coins = sample_bernoulli_exp(gamma, 40_000, random_state=31)
    target = math.exp(-float(gamma))
    assert stats.binomtest(int(coins.sum()), coins.size, target).pvalue > 1e-3


def test_bernoulli_exp_of_zero_is_certain():
    assert sample_bernoulli_exp(0, 1000, random_state=1).all()
    assert sample_bernoulli_exp(Fraction(0), random_state=1) is True


def test_bernoulli_rational_beyond_one_word():
    numerator, denominator = (1 << 70) + 1, 3 << 70
    source = kernels.BitStream(8).next_word
    heads = sum(dg._bernoulli_rational(numerator, denominator, source) for _ in range(20_000))
    assert stats.binomtest(heads, 20_000, numerator / denominator).pvalue > 1e-3


def scripted_words(words):
    iterator = iter(words)
    return iterator.__next__


def test_bernoulli_rational_resolves_ties_with_the_next_word():
    third = WORD // 3  # 2^64 / 3 = third + 1/3, and the expansion of 1/3 repeats
    assert dg._bernoulli_rational(1, 3, scripted_words([third, third - 1])) is True
    assert dg._bernoulli_rational(1, 3, scripted_words([third, third + 1])) is False
    assert dg._bernoulli_rational(1, 3, scripted_words([third, third, third, 0])) is True


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    denominator=st.integers(min_value=1, max_value=1 << 200),
    fraction=st.fractions(min_value=0, max_value=1),
    moves=st.lists(st.sampled_from(["tie", "below", "above"]), min_size=1, max_size=4),
)
def test_bernoulli_rational_decision_is_consistent_with_revealed_bits(denominator, fraction, moves):
    """Each decision must be implied by the words consumed: U's interval lies on one side."""
    numerator = int(fraction * denominator)
    p = Fraction(numerator, denominator)
    consumed: list[int] = []
    script = iter(moves + ["below"] * 64)

    def next_word() -> int:
        digit = math.floor(p * WORD ** (len(consumed) + 1)) % WORD
        move = next(script)
        word = digit
        if move == "below" and digit > 0:
            word = digit - 1
        elif move == "above" and digit < WORD - 1:
            word = digit + 1
        consumed.append(word)
        return word

    decision = dg._bernoulli_rational(numerator, denominator, next_word)
    if p >= 1:
        assert decision is True
        return
    if p == 0:
        assert decision is False
        return
    revealed = 0
    for word in consumed:
        revealed = revealed * WORD + word
    low = Fraction(revealed, WORD ** len(consumed))
    high = Fraction(revealed + 1, WORD ** len(consumed))
    assert (high <= p) if decision else (low >= p)


def test_uniform_below_rejects_out_of_range_values():
    # Bits are read least significant first: 0b11 = 3 is redrawn, then 0b10 = 2 is kept.
    words = np.array([0b1011], dtype=np.uint64)
    state = np.zeros(2, dtype=np.int64)
    assert kernels._uniform_below(3, 2, words, state) == 2
    assert state[0] == 4 and state[1] == 0


def test_kernel_bernoulli_follows_the_binary_expansion():
    # 1/3 = 0.010101...b: U starting with bits 0,0 is below it, U starting with 0,1,1 above.
    words = np.array([0b00, 0b110], dtype=np.uint64)
    state = np.zeros(2, dtype=np.int64)
    assert kernels._bernoulli(1, 3, words, state)
    state[0] = 64
    assert not kernels._bernoulli(1, 3, words, state)
    assert state[0] == 64 + 3


@pytest.mark.parametrize(("scale", "seed"), [(1, 41), (3, 42), (Fraction(7, 2), 43), (0.25, 44)])
def test_discrete_laplace_matches_pmf(scale, seed):
    samples = sample_discrete_laplace(scale, 50_000, random_state=seed)
    reach = int(30 * float(scale)) + 10
    support = np.arange(-reach, reach + 1)
    reference = stats.dlaplace.pmf(support, 1.0 / float(scale))
    assert chisquare_pvalue(samples, support, reference) > 1e-3


# ------------------------------------------------------------- randomness conventions


def test_seeded_reproducibility_and_generator_input():
    first = sample_discrete_gaussian(2.5, 500, random_state=123)
    np.testing.assert_array_equal(first, sample_discrete_gaussian(2.5, 500, random_state=123))
    from_generator = sample_discrete_gaussian(2.5, 500, random_state=np.random.default_rng(123))
    np.testing.assert_array_equal(first, from_generator)
    assert not np.array_equal(first, sample_discrete_gaussian(2.5, 500, random_state=124))


def test_float_sigma_is_its_exact_binary_value():
    np.testing.assert_array_equal(
        sample_discrete_gaussian(0.3, 300, random_state=5),
        sample_discrete_gaussian(Fraction(0.3), 300, random_state=5),
    )


def test_secure_random_state():
    first = sample_discrete_gaussian(3.0, (20, 50), random_state="secure")
    second = sample_discrete_gaussian(3.0, (20, 50), random_state="secure")
    assert first.shape == (20, 50) and first.dtype == np.int64
    assert np.abs(first).max() < 200
    assert not np.array_equal(first, second)


def test_shapes_and_scalar_output():
    scalar = sample_discrete_gaussian(1.0, random_state=0)
    assert type(scalar) is int
    assert type(sample_discrete_gaussian(1.0, random_state=0, grid=0.5)) is float
    assert sample_discrete_gaussian(1.0, 0, random_state=0).shape == (0,)
    assert sample_discrete_gaussian(1.0, (2, 3, 4), random_state=0).shape == (2, 3, 4)
    assert type(sample_discrete_laplace(2, random_state=0)) is int


def test_large_sigma_stays_exact_in_int64():
    samples = sample_discrete_gaussian(2.0**40, 200, random_state=9)
    assert samples.dtype == np.int64
    assert 0.5 < np.std(samples.astype(float)) / 2.0**40 < 1.5


# ------------------------------------------------------------------------- validation


@pytest.mark.parametrize("sigma", [0, -1.0, float("nan"), float("inf"), Fraction(-1, 2)])
def test_invalid_sigma_values(sigma):
    with pytest.raises(ValueError, match="sigma must be a finite number > 0"):
        sample_discrete_gaussian(sigma, 3, random_state=0)


@pytest.mark.parametrize("sigma", ["3", True, None, [1.0]])
def test_invalid_sigma_types(sigma):
    with pytest.raises(TypeError, match="sigma must be a real number"):
        sample_discrete_gaussian(sigma, 3, random_state=0)


def test_sigma_too_large():
    with pytest.raises(ValueError, match=r"sigma must be <= 2\*\*48"):
        sample_discrete_gaussian(1e15, 3, random_state=0)
    with pytest.raises(ValueError, match=r"sigma/grid must be <= 2\*\*48"):
        sample_discrete_gaussian(1.0, 3, random_state=0, grid=1e-15)


@pytest.mark.parametrize("grid", [0, -0.5, float("nan")])
def test_invalid_grid(grid):
    with pytest.raises(ValueError, match="grid must be a finite number > 0"):
        sample_discrete_gaussian(1.0, 3, random_state=0, grid=grid)


@pytest.mark.parametrize(
    ("size", "error"),
    [(-1, ValueError), ((2, -1), ValueError), (2.5, TypeError), ((2, 1.0), TypeError)],
)
def test_invalid_size(size, error):
    with pytest.raises(error, match="size must be None, a non-negative integer"):
        sample_discrete_gaussian(1.0, size, random_state=0)


def test_invalid_gamma_and_scale():
    for gamma in (-0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="gamma must be a finite number >= 0"):
            sample_bernoulli_exp(gamma, random_state=0)
    with pytest.raises(ValueError, match="scale must be a finite number > 0"):
        sample_discrete_laplace(0, random_state=0)


def test_variance_and_pmf_at_extreme_scales_are_finite():
    # Var = 2 exp(-1/(2 sigma^2)) + ... underflows to 0 below sigma ~ 0.026.
    assert discrete_gaussian_variance(0.02) == reference_variance(0.02) == 0.0
    np.testing.assert_array_equal(discrete_gaussian_pmf([0, 1, -1], 1e-300), [1.0, 0.0, 0.0])
    huge = 1e150
    assert discrete_gaussian_variance(huge) == float(Fraction(huge) ** 2)
    assert discrete_gaussian_pmf(0, huge) == pytest.approx(1 / (math.sqrt(2 * math.pi) * huge))


def test_variance_rejects_unrepresentable_sigma():
    with pytest.raises(ValueError, match="sigma must be a finite number > 0"):
        discrete_gaussian_variance(-2.0)
    with pytest.raises(ValueError, match="representable as a float64"):
        discrete_gaussian_variance(1e200)


# ------------------------------------------------------- large scales, binned exactly


def gaussian_bin_probabilities(sigma, edges: list[int]) -> np.ndarray:
    """Pr[edges[i] <= X < edges[i+1]] for X ~ N_Z(0, sigma^2), with -inf/+inf outer bins.

    For sigma >= 10^3 the sum over each bin of the decreasing (or increasing) weights
    exp(-k^2/(2 sigma^2)) differs from their integral by less than the largest weight, 1,
    and the normaliser is sigma sqrt(2 pi) (1 + O(exp(-2 pi^2 sigma^2))); the Gaussian
    integrals in 50 digits are therefore within 2/(sigma sqrt(2 pi)) of the exact bin
    probabilities (below 1e-3 / sqrt(n) for the sample sizes used here).
    """
    with mpmath.workdps(50):
        s = mpmath.mpf(Fraction(sigma).numerator) / Fraction(sigma).denominator
        cdf = [mpmath.mpf(0)]
        cdf += [mpmath.ncdf((mpmath.mpf(e) - mpmath.mpf(1) / 2) / s) for e in edges]
        cdf += [mpmath.mpf(1)]
        return np.array([float(b - a) for a, b in zip(cdf, cdf[1:])])


def laplace_bin_probabilities(scale, edges: list[int]) -> np.ndarray:
    """Exact Pr[edges[i] <= X < edges[i+1]] for the discrete Laplace, in 50 digits:
    Pr[X >= k] = q^k / (1 + q) for k >= 1 with q = exp(-1/scale), and symmetry."""
    with mpmath.workdps(50):
        q = mpmath.exp(-mpmath.mpf(Fraction(scale).denominator) / Fraction(scale).numerator)

        def at_least(k: int):
            if k >= 1:
                return q**k / (1 + q)
            return 1 - q ** (1 - k) / (1 + q)

        tail = [mpmath.mpf(1)] + [at_least(e) for e in edges] + [mpmath.mpf(0)]
        return np.array([float(a - b) for a, b in zip(tail, tail[1:])])


def binned_pvalue(samples: np.ndarray, edges: list[int], probabilities: np.ndarray) -> float:
    observed = np.bincount(np.searchsorted(edges, samples, side="right"), minlength=len(edges) + 1)
    return stats.chisquare(observed, samples.size * probabilities / probabilities.sum()).pvalue


@pytest.mark.parametrize(("sigma", "seed"), [(3.7e3, 51), (1e9, 52), (1e12, 53), (2.0**48, 54)])
def test_discrete_gaussian_at_large_sigma_matches_exact_bins(sigma, seed):
    samples = sample_discrete_gaussian(sigma, 200_000, random_state=seed)
    edges = [round(sigma * x / 4) for x in range(-12, 13)]
    assert binned_pvalue(samples, edges, gaussian_bin_probabilities(sigma, edges)) > 1e-3
    # Power: 2% too little noise is detected by the same bins.
    assert binned_pvalue(samples, edges, gaussian_bin_probabilities(sigma * 0.98, edges)) < 1e-3


@pytest.mark.parametrize(("scale", "seed"), [(3.7, 61), (3.7e3, 62), (1e9, 63), (1e12, 64)])
def test_discrete_laplace_at_large_scale_matches_exact_bins(scale, seed):
    samples = sample_discrete_laplace(scale, 200_000, random_state=seed)
    edges = sorted({round(scale * x / 4) for x in range(-24, 25)})
    assert binned_pvalue(samples, edges, laplace_bin_probabilities(scale, edges)) > 1e-3
    assert binned_pvalue(samples, edges, laplace_bin_probabilities(scale * 0.98, edges)) < 1e-3


# ------------------------------------------------------------ the replayable bit stream


def test_output_does_not_depend_on_how_the_bits_are_blocked():
    # With one-word blocks nearly every sample runs out of bits and is replayed from its
    # start; the result must equal that of a single large block.
    scale = Fraction(3.7)
    a, b = scale.numerator, scale.denominator
    args = (a, b, 4, 2, 50)
    tiny = dg._run_kernel(kernels.gaussian_kernel, 2_000, 17, 1, *args)
    large = dg._run_kernel(kernels.gaussian_kernel, 2_000, 17, 10_000, *args)
    np.testing.assert_array_equal(tiny, large)
    t_bits = kernels.bit_length(a)
    tiny = dg._run_kernel(kernels.laplace_kernel, 2_000, 18, 1, a, b, t_bits, 50)
    large = dg._run_kernel(kernels.laplace_kernel, 2_000, 18, 10_000, a, b, t_bits, 50)
    np.testing.assert_array_equal(tiny, large)


def test_kernel_overflow_is_an_error_not_a_wrong_sample():
    # k_max = 0 makes every proposal with k >= 1 an overflow; one occurs within a few draws.
    with pytest.raises(OverflowError, match="does not fit in int64"):
        dg._run_kernel(kernels.gaussian_kernel, 1_000, 3, 64, 3, 1, 3, 2, 0)
    with pytest.raises(OverflowError, match="does not fit in int64"):
        dg._run_kernel(kernels.laplace_kernel, 1_000, 3, 64, 3, 1, 2, 0)


def test_secure_words_come_from_the_os_cryptographic_source(monkeypatch):
    from dpggm.mechanisms import random as random_module

    requested = []
    real_urandom = random_module.os.urandom

    def counting_urandom(n):
        requested.append(n)
        return real_urandom(n)

    monkeypatch.setattr(random_module.os, "urandom", counting_urandom)
    for name in ("default_rng", "PCG64"):
        monkeypatch.setattr(
            random_module.np.random, name,
            lambda *a, **k: pytest.fail("'secure' must not construct a numpy Generator"),
        )
    gaussian = sample_discrete_gaussian(1e6, 50_000, random_state="secure")
    laplace = sample_discrete_laplace(1e6, 50_000, random_state=None)
    assert sum(requested) >= 8 * 50_000
    assert 0.97 < gaussian.std() / 1e6 < 1.03
    assert 0.97 < laplace.std() / (1e6 * math.sqrt(2)) < 1.03


def test_seeded_laplace_is_reproducible_and_advances_a_generator():
    first = sample_discrete_laplace(Fraction(7, 2), 1_000, random_state=99)
    np.testing.assert_array_equal(
        first, sample_discrete_laplace(Fraction(7, 2), 1_000, random_state=99)
    )
    generator = np.random.default_rng(99)
    np.testing.assert_array_equal(
        first, sample_discrete_laplace(Fraction(7, 2), 1_000, random_state=generator)
    )
    assert not np.array_equal(
        first, sample_discrete_laplace(Fraction(7, 2), 1_000, random_state=generator)
    )


def test_scale_must_be_a_ratio_of_kernel_sized_integers():
    with pytest.raises(ValueError, match=r"ratio of integers below 2\*\*62"):
        sample_discrete_gaussian(Fraction(1, 3 << 62), 3, random_state=0)
    # Below 2**62 but so long that a sample could overflow int64 within a few scales.
    long_expansion = Fraction((1 << 61) + 1, 1 << 14)
    with pytest.raises(ValueError, match="sigma has too long a binary expansion"):
        sample_discrete_gaussian(long_expansion, 3, random_state=0)
    with pytest.raises(ValueError, match="scale has too long a binary expansion"):
        sample_discrete_laplace(long_expansion, 3, random_state=0)
    # Small floats stay exact: sigma = 1e-3 has denominator 2**60.
    assert np.all(sample_discrete_gaussian(1e-3, 1_000, random_state=0) == 0)
    with pytest.raises(ValueError, match=r"scale must be <= 2\*\*48"):
        sample_discrete_laplace(2.0**49, 3, random_state=0)
