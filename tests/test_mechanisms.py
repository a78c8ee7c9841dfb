"""Bounds, clipping, sensitivities and noise primitives."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpggm.exceptions import UnsupportedNeighborsError
from dpggm.mechanisms import (
    Box,
    RowNorm,
    bounds_from_data,
    check_random_state,
    exponential_mechanism,
    exponential_mechanism_probabilities,
    parse_bounds,
    second_moment_entry_sensitivity,
    second_moment_l1_sensitivity,
    second_moment_l2_sensitivity,
    symmetric_gaussian_noise,
    symmetric_laplace_noise,
    wishart_noise,
)
from dpggm.mechanisms.sensitivity import (
    gram_entry_sensitivity,
    gram_l2_sensitivity,
    mean_l2_sensitivity,
    row_l2_sensitivity,
    sum_l2_sensitivity,
)


def _upper(M):
    return M[np.triu_indices(M.shape[0])]


def _random_ball_point(rng, p, B):
    x = rng.normal(size=p)
    return x / np.linalg.norm(x) * B * rng.uniform() ** (1 / p)


class TestBounds:
    def test_row_norm_clip_rescales_only_long_rows(self):
        X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
        clipped, changed = RowNorm(1.0).clip(X)
        np.testing.assert_allclose(clipped, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]])
        assert changed == 1

    def test_box_clip_per_column(self):
        X = np.array([[3.0, -4.0], [0.5, 0.1]])
        clipped, changed = Box((1.0, 2.0)).clip(X)
        np.testing.assert_array_equal(clipped, [[1.0, -2.0], [0.5, 0.1]])
        assert changed == 1

    @pytest.mark.parametrize("bounds", [RowNorm(1.0), Box((1.0, 2.0))])
    def test_clip_in_place_or_on_a_copy(self, bounds):
        X = np.asfortranarray([[3.0, -4.0], [0.5, 0.1], [-2.0, 0.2]])
        original = X.copy()
        clipped, changed = bounds.clip(X)
        np.testing.assert_array_equal(X, original)  # the input is never modified
        assert clipped.flags.f_contiguous  # a column-major block stays column-major
        same, changed_again = bounds.clip(X, in_place=True)
        assert same is X and changed_again == changed == 2
        np.testing.assert_array_equal(X, clipped)

    def test_box_wrong_length_is_named(self):
        with pytest.raises(ValueError, match="Box bound has 3 entries but the data has 2 columns"):
            Box((1.0, 1.0, 1.0)).clip(np.ones((4, 2)))

    @pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
    def test_row_norm_rejects_bad_bound(self, bad):
        with pytest.raises(ValueError, match="RowNorm bound must be a finite number > 0"):
            RowNorm(bad)

    def test_box_rejects_non_positive_entry(self):
        with pytest.raises(ValueError, match="Box bound must be finite and > 0"):
            Box((1.0, 0.0))

    def test_parse(self):
        assert parse_bounds("l2:2.5") == RowNorm(2.5)
        assert parse_bounds("box:1") == Box(1.0)
        assert parse_bounds("box:1", per_column=[1, 2]) == Box((1.0, 2.0))
        with pytest.raises(ValueError, match="bound kind must be 'l2' or 'box'"):
            parse_bounds("linf:1")
        with pytest.raises(ValueError, match="must look like"):
            parse_bounds("1.0")

    def test_data_derived_bounds_are_flagged(self):
        X = np.array([[1.0, 2.0], [-3.0, 0.5]])
        b = bounds_from_data(X, kind="box")
        assert b.data_derived and b.bound == (3.0, 2.0)
        r = bounds_from_data(X, kind="l2")
        assert r.data_derived and r.bound == pytest.approx(math.hypot(3.0, 0.5))


class TestSensitivities:
    """Each formula is checked against a direct computation over neighbouring pairs: the
    worst case is attained by a constructed pair and never exceeded by random pairs."""

    n, p, B = 10, 4, 1.7

    def _pairs(self, rng, bounds, count=2000):
        for _ in range(count):
            if isinstance(bounds, RowNorm):
                x = _random_ball_point(rng, self.p, bounds.bound)
                y = _random_ball_point(rng, self.p, bounds.bound)
            else:
                b = bounds.vector(self.p)
                x = rng.uniform(-b, b) * rng.choice([1.0, 1.0, 0.0])
                y = np.sign(rng.normal(size=self.p)) * b
            yield x, y

    def test_row_norm_l2_replace_attained_and_not_exceeded(self):
        bounds = RowNorm(self.B)
        sens = second_moment_l2_sensitivity(bounds, n=self.n, p=self.p, neighbors="replace")
        assert sens == pytest.approx(math.sqrt(2) * self.B**2 / self.n)
        x = np.array([self.B, 0, 0, 0])
        y = np.array([0, self.B, 0, 0])
        # Upper triangle: the off-diagonal appears once, so the worst case is on the diagonal.
        worst = np.linalg.norm(_upper(np.outer(x, x) - np.outer(y, y))) / self.n
        assert worst == pytest.approx(sens)
        rng = np.random.default_rng(0)
        for x, y in self._pairs(rng, bounds):
            d = np.linalg.norm(_upper(np.outer(x, x) - np.outer(y, y))) / self.n
            assert d <= sens * (1 + 1e-12)

    def test_add_remove_l2(self):
        bounds = RowNorm(self.B)
        # Under add/remove n is private: only the unnormalised Gram matrix has a sensitivity.
        with pytest.raises(UnsupportedNeighborsError, match="private under add/remove"):
            second_moment_l2_sensitivity(bounds, n=self.n, p=self.p, neighbors="add-remove")
        sens = gram_l2_sensitivity(bounds, p=self.p, neighbors="add-remove")
        assert sens == pytest.approx(self.B**2)
        rng = np.random.default_rng(5)
        for x, _ in self._pairs(rng, bounds):
            assert np.linalg.norm(_upper(np.outer(x, x))) <= sens * (1 + 1e-12)

    def test_l1_row_norm_bound(self):
        bounds = RowNorm(self.B)
        sens = second_moment_l1_sensitivity(bounds, n=self.n, p=self.p, neighbors="replace")
        assert sens == pytest.approx((self.p + 1) * self.B**2 / self.n)
        # Attained by x = B/sqrt(p) * ones against -... a rotated vector with disjoint mass.
        rng = np.random.default_rng(1)
        for x, y in self._pairs(rng, bounds):
            d = np.abs(_upper(np.outer(x, x) - np.outer(y, y))).sum() / self.n
            assert d <= sens * (1 + 1e-12)
        x = np.full(self.p, self.B / math.sqrt(self.p))
        one = np.abs(_upper(np.outer(x, x))).sum() / self.n
        assert 2 * one == pytest.approx(sens)

    def test_entry_sensitivity_box(self):
        b = np.array([1.0, 2.0, 0.5, 3.0])
        bounds = Box(tuple(b))
        sens = second_moment_entry_sensitivity(bounds, n=self.n, p=self.p, neighbors="replace")
        rng = np.random.default_rng(2)
        worst = np.zeros((self.p, self.p))
        corners = [np.array(s) * b for s in itertools.product([-1, 1, 0], repeat=self.p)]
        for x, y in itertools.product(corners[::7], corners[::5]):
            worst = np.maximum(worst, np.abs(np.outer(x, x) - np.outer(y, y)) / self.n)
        np.testing.assert_allclose(worst, sens)
        for x, y in self._pairs(rng, bounds, 500):
            assert np.all(np.abs(np.outer(x, x) - np.outer(y, y)) / self.n <= sens * (1 + 1e-12))
        add = gram_entry_sensitivity(bounds, p=self.p, neighbors="add-remove")
        np.testing.assert_allclose(np.diag(add), b**2)
        np.testing.assert_allclose(add[0, 1], b[0] * b[1])
        # Every figure is an upper bound of the exact product, never below it.
        assert all(
            Fraction(add[j, k]) >= Fraction(b[j]) * Fraction(b[k])
            for j in range(self.p) for k in range(self.p)
        )

    def test_box_whole_matrix_uses_norm_of_b(self):
        b = (1.0, 2.0, 2.0, 4.0)
        sens = second_moment_l2_sensitivity(Box(b), n=self.n, p=4, neighbors="replace")
        assert sens == pytest.approx(math.sqrt(2) * 25.0 / self.n)

    def test_mean_and_row(self):
        assert mean_l2_sensitivity(RowNorm(2.0), n=8, p=3, neighbors="replace") == 0.5
        assert row_l2_sensitivity(RowNorm(2.0), p=3, neighbors="replace") == 4.0
        assert sum_l2_sensitivity(Box(1.0), p=4, neighbors="add-remove") == 2.0
        # Publishing rows reveals n: no add/remove sensitivity for it.
        with pytest.raises(UnsupportedNeighborsError):
            row_l2_sensitivity(Box(1.0), p=4, neighbors="add-remove")

    def test_box_norm_is_an_upper_bound(self):
        # ||b||_2 from a float norm can round below the exact value; the bound must not.
        rng = np.random.default_rng(11)
        for _ in range(300):
            b = tuple(rng.uniform(0.01, 10.0, size=int(rng.integers(2, 40))))
            norm = Box(b).row_norm(len(b))
            assert Fraction(norm) ** 2 >= sum(Fraction(v) ** 2 for v in b)

    def test_bad_neighbors_named(self):
        with pytest.raises(ValueError, match="neighbors must be 'replace'"):
            second_moment_l2_sensitivity(RowNorm(1), n=3, p=2, neighbors="swap")


class TestNoise:
    def test_symmetric_gaussian_variance(self):
        rng = np.random.default_rng(3)
        draws = np.stack([symmetric_gaussian_noise(3, 2.0, rng) for _ in range(4000)])
        assert np.all(draws == np.swapaxes(draws, 1, 2))
        # Each upper entry is N(0, 4): KS test on the (0, 2) entry.
        assert stats.kstest(draws[:, 0, 2] / 2.0, "norm").pvalue > 1e-3
        assert stats.kstest(draws[:, 1, 1] / 2.0, "norm").pvalue > 1e-3

    def test_symmetric_laplace(self):
        rng = np.random.default_rng(4)
        draws = np.stack([symmetric_laplace_noise(2, 0.5, rng) for _ in range(4000)])
        assert stats.kstest(draws[:, 0, 1], "laplace", args=(0, 0.5)).pvalue > 1e-3

    def test_wishart_matches_scipy_moments(self):
        rng = np.random.default_rng(5)
        p, df, scale = 3, 7, 0.5
        draws = np.stack([wishart_noise(p, df, scale, rng) for _ in range(20000)])
        np.testing.assert_allclose(draws.mean(axis=0), df * scale * np.eye(p), atol=0.05)
        # Var(W_ij) = df * scale^2 * (1 + delta_ij) for a scaled identity.
        var_off = df * scale**2
        assert draws[:, 0, 1].var() == pytest.approx(var_off, rel=0.05)
        assert draws[:, 2, 2].var() == pytest.approx(2 * var_off, rel=0.05)
        # Compare a trace distribution with scipy's Wishart sampler (independent code).
        ref = stats.wishart(df=df, scale=scale * np.eye(p)).rvs(20000, random_state=6)
        assert stats.ks_2samp(np.trace(draws, axis1=1, axis2=2), np.trace(ref, axis1=1, axis2=2)).pvalue > 1e-3

    def test_wishart_df_validation(self):
        with pytest.raises(ValueError, match="df must be an integer >= p"):
            wishart_noise(4, 3, 1.0, np.random.default_rng(0))


class TestExponentialMechanism:
    def test_probabilities_match_formula(self):
        u = np.array([0.0, 1.0, 2.5, -1.0])
        probs = exponential_mechanism_probabilities(u, sensitivity=0.5, epsilon=0.8)
        weights = np.exp(0.8 * u / (2 * 0.5))
        np.testing.assert_allclose(probs, weights / weights.sum(), rtol=1e-12)

    def test_empirical_selection_frequencies_chi_square(self):
        u = np.array([0.0, 1.0, 2.5, -1.0])
        eps, sens = 0.8, 0.5
        rng = np.random.default_rng(7)
        picks = np.array(
            [exponential_mechanism(u, sensitivity=sens, epsilon=eps, rng=rng) for _ in range(40000)]
        )
        counts = np.bincount(picks, minlength=4)
        weights = np.exp(eps * u / (2 * sens))
        expected = weights / weights.sum() * counts.sum()
        assert stats.chisquare(counts, expected).pvalue > 1e-3
        # The test has power: the frequencies are far from those of twice the epsilon.
        wrong = np.exp(2 * eps * u / (2 * sens))
        assert stats.chisquare(counts, wrong / wrong.sum() * counts.sum()).pvalue < 1e-6

    def test_rejects_bad_scores(self):
        with pytest.raises(ValueError, match="scores must be"):
            exponential_mechanism_probabilities(np.array([np.nan]), sensitivity=1, epsilon=1)


class TestRandomState:
    def test_seed_reproducible_and_secure(self):
        a = check_random_state(5).normal(size=3)
        b = check_random_state(5).normal(size=3)
        np.testing.assert_array_equal(a, b)
        s1 = check_random_state("secure").integers(0, 2**62)
        s2 = check_random_state("secure").integers(0, 2**62)
        assert s1 != s2

    @pytest.mark.parametrize("bad", ["seed", -1, 1.5, np.random.RandomState(0)])
    def test_bad_random_state(self, bad):
        with pytest.raises((ValueError, TypeError), match="random_state must be"):
            check_random_state(bad)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-50, 50), min_size=2, max_size=6),
    st.floats(0.1, 10),
)
def test_row_norm_clip_property(row, bound):
    X = np.array([row, row[::-1]])
    clipped, _ = RowNorm(bound).clip(X)

    def exact_squared_norm(r):
        return sum(Fraction(float(v)) ** 2 for v in r)

    # Exactly within the bound after clipping (the sensitivity analysis needs <= B, not
    # <= B up to rounding), and rows exactly within it are left alone.
    assert all(exact_squared_norm(r) <= Fraction(bound) ** 2 for r in clipped)
    keep = np.array([exact_squared_norm(r) <= Fraction(bound) ** 2 for r in X])
    np.testing.assert_array_equal(clipped[keep], X[keep])
