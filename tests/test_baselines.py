"""Baselines of PACE-GGM (SSP, diagonal-only, SeparateCov, AdaptiveCov): noise scales
against formulas computed here from scratch, accounting, reference runs, statistics of
the noise, and bad input."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, linalg, stats
from sklearn.base import clone

from dpggm import GDP, ZCDP, ApproxDP, Box, IncompatibleBudgetError, NonPrivate, PureDP, RowNorm
from dpggm.estimators.baselines import (
    AdaptiveCovariance,
    DiagonalCovariance,
    SeparateCovariance,
    SSPCovariance,
)
from dpggm.mechanisms import bounds_from_data
from dpggm.mechanisms.noise import above_threshold
from exact_noise_reference import exact_gaussian_sigma_zcdp

ALL = (SSPCovariance, DiagonalCovariance, SeparateCovariance, AdaptiveCovariance)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    p = 6
    mixing = rng.normal(size=(p, p)) / math.sqrt(p)
    return np.clip(rng.normal(size=(800, p)) @ mixing / 2, -1, 1)


def _second_moment(X):
    return X.T @ X / X.shape[0]


def _chi2_two_sided_ok(statistic, df, tail=1e-4):
    return stats.chi2.ppf(tail, df) < statistic < stats.chi2.ppf(1 - tail, df)


# ---------------------------------------------------------------- SSP


def test_ssp_sigma_is_box_norm_formula(data):
    n, p = data.shape
    b = np.array([1.0, 0.5, 2.0, 1.0, 1.5, 1.0])
    rho = 0.3
    k = p * (p + 1) // 2
    sensitivity = math.sqrt(2) * float(np.sum(b**2)) / n
    floating = SSPCovariance(
        budget=ZCDP(rho), bounds=Box(tuple(b)), random_state=0, noise="float"
    ).fit(data)
    assert floating.privacy_.noise["l2_sensitivity"] == pytest.approx(sensitivity, rel=1e-14)
    assert floating.privacy_.noise["sigma"] == pytest.approx(
        sensitivity / math.sqrt(2 * rho), rel=1e-14
    )
    est = SSPCovariance(budget=ZCDP(rho), bounds=Box(tuple(b)), random_state=0).fit(data)
    sigma, grid = exact_gaussian_sigma_zcdp(sensitivity, k, rho)
    assert est.privacy_.noise["sigma"] == pytest.approx(sigma, rel=1e-14)
    assert est.privacy_.noise["grid"] == grid
    # Add/remove: the Gram matrix (sensitivity ||b||^2, no n) with 95% of rho; the count
    # with the rest.
    add = SSPCovariance(
        budget=ZCDP(rho), bounds=Box(tuple(b)), neighbors="add-remove", random_state=0
    ).fit(data)
    add_sigma, _ = exact_gaussian_sigma_zcdp(float(np.sum(b**2)), k, 0.95 * rho)
    assert add.privacy_.noise["sigma"] == pytest.approx(add_sigma, rel=1e-12)
    assert add.privacy_.neighbors == "add-remove"
    assert add.privacy_.budget == ZCDP(rho)


def test_ssp_noise_has_the_stated_variance():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(400, 30))
    est = SSPCovariance(budget=ZCDP(0.05), bounds=Box(1.0), psd=False, random_state=7).fit(X)
    sigma, _ = exact_gaussian_sigma_zcdp(math.sqrt(2) * 30 / 400, 30 * 31 // 2, 0.05)
    residual = (est.noisy_covariance_ - _second_moment(X))[np.triu_indices(30)]
    assert np.allclose(est.noisy_covariance_, est.noisy_covariance_.T)
    assert _chi2_two_sided_ok(np.sum((residual / sigma) ** 2), residual.size)


def test_ssp_projection_is_psd(data):
    est = SSPCovariance(budget=ZCDP(1e-4), bounds=Box(1.0), random_state=1).fit(data)
    assert np.linalg.eigvalsh(est.noisy_covariance_).min() < 0  # the raw release is not PSD
    assert np.linalg.eigvalsh(est.covariance_).min() >= -1e-12


# ---------------------------------------------------------------- diagonal


def test_diagonal_sigma_per_entry_and_zero_off_diagonal(data):
    n, p = data.shape
    b = np.array([1.0, 0.5, 2.0, 1.0, 1.5, 0.25])
    rho = 0.8
    est = DiagonalCovariance(budget=ZCDP(rho), bounds=Box(tuple(b)), random_state=0).fit(data)
    expected = [exact_gaussian_sigma_zcdp(v**2 / n, 1, rho / p)[0] for v in b]
    np.testing.assert_allclose(est.privacy_.noise["diagonal_sigma"], expected, rtol=1e-12)
    off = ~np.eye(p, dtype=bool)
    assert np.all(est.covariance_[off] == 0) and np.all(est.noisy_covariance_[off] == 0)
    np.testing.assert_array_equal(
        np.diag(est.covariance_), np.maximum(np.diag(est.noisy_covariance_), 0)
    )
    # One planned step of p one-entry queries, booked once, spending exactly the total.
    (step,) = est.privacy_.noise["breakdown"]
    assert step["step"] == "diagonal" and est.plan_.step("diagonal").repetitions == p
    assert len(est.accountant_.spends) == 1 and est.accountant_.spent == ZCDP(rho)


def test_diagonal_noise_is_standardised_gaussian():
    rng = np.random.default_rng(3)
    p = 300
    b = rng.uniform(0.5, 2.0, size=p)
    X = rng.uniform(-1, 1, size=(200, p)) * b
    rho = 2.0
    est = DiagonalCovariance(budget=ZCDP(rho), bounds=Box(tuple(b)), random_state=4).fit(X)
    sigma = np.array([exact_gaussian_sigma_zcdp(v**2 / 200, 1, rho / p)[0] for v in b])
    z = (np.diag(est.noisy_covariance_) - np.einsum("ij,ij->j", X, X) / 200) / sigma
    assert _chi2_two_sided_ok(np.sum(z**2), p)
    assert abs(z.mean()) < 4 / math.sqrt(p)


def test_diagonal_clips_negative_variances():
    X = np.full((1000, 3), 1e-3)
    est = DiagonalCovariance(budget=ZCDP(1e-3), bounds=Box(1.0), random_state=0).fit(X)
    assert np.any(np.diag(est.noisy_covariance_) < 0)
    assert np.all(np.diag(est.covariance_) >= 0)


# ---------------------------------------------------------------- SeparateCov


def test_separate_noise_figures(data):
    n, p = data.shape
    rho = 0.5
    est = SeparateCovariance(budget=ZCDP(rho), bounds=RowNorm(2.0), random_state=0).fit(data)
    sensitivity = math.sqrt(2) * 4.0 / n
    noise = est.privacy_.noise
    assert noise["eigenvector_l2_sensitivity"] == pytest.approx(sensitivity, rel=1e-14)
    assert noise["eigenvalue_l2_sensitivity"] == pytest.approx(sensitivity, rel=1e-14)
    k = p * (p + 1) // 2
    assert noise["eigenvector_sigma"] == pytest.approx(
        exact_gaussian_sigma_zcdp(sensitivity, k, rho / 2)[0], rel=1e-14
    )
    # N(0, (sqrt(2) r^2 / n)^2 / rho) on the eigenvalues (Ferrando et al.'s baselines), up
    # to the grid's rounding allowance.
    assert noise["eigenvalue_sigma"] == pytest.approx(
        exact_gaussian_sigma_zcdp(sensitivity, p, rho / 2)[0], rel=1e-14
    )
    floating = SeparateCovariance(
        budget=ZCDP(rho), bounds=RowNorm(2.0), random_state=0, noise="float"
    ).fit(data)
    assert floating.privacy_.noise["eigenvalue_sigma"] ** 2 == pytest.approx(
        sensitivity**2 / rho, rel=1e-13
    )
    box = SeparateCovariance(budget=ZCDP(rho), bounds=Box(0.5), random_state=0).fit(data)
    assert box.privacy_.noise["radius"] == pytest.approx(0.5 * math.sqrt(p), rel=1e-15)


def test_separate_eigenvalue_noise_has_the_stated_variance(data):
    n = data.shape[0]
    rho, r = 2.0, 2.5  # every row of data has norm <= sqrt(6) < r: nothing is clipped
    assert np.linalg.norm(data, axis=1).max() < r
    true = linalg.eigh(_second_moment(data), eigvals_only=True)[::-1]
    residuals = np.concatenate(
        [
            SeparateCovariance(budget=ZCDP(rho), bounds=RowNorm(r), random_state=seed)
            .fit(data)
            .noisy_eigenvalues_
            - true
            for seed in range(250)
        ]
    )
    variance = exact_gaussian_sigma_zcdp(math.sqrt(2) * r**2 / n, 6, rho / 2)[0] ** 2
    assert _chi2_two_sided_ok(np.sum(residuals**2) / variance, residuals.size)
    assert abs(residuals.mean()) < 4 * math.sqrt(variance / residuals.size)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    log_rho=st.floats(-4, 2),
    radius=st.floats(0.5, 4.0),
)
def test_separate_output_is_psd_with_eigenvalues_below_r_squared(seed, log_rho, radius):
    X = np.random.default_rng(seed).normal(size=(60, 4))
    est = SeparateCovariance(
        budget=ZCDP(10.0**log_rho), bounds=RowNorm(radius), random_state=seed
    ).fit(X)
    values = np.linalg.eigvalsh(est.covariance_)
    assert values.min() >= -1e-12 * radius**2
    assert values.max() <= radius**2 * (1 + 1e-12)
    assert np.allclose(est.covariance_, est.covariance_.T)


# ---------------------------------------------------------------- AdaptiveCov


def test_adaptive_spends_the_planned_shares(data):
    n, p = data.shape
    rho = 0.4
    est = AdaptiveCovariance(budget=ZCDP(rho), bounds=Box(1.0), random_state=3).fit(data)
    spends = est.accountant_.spends
    # An eighth of rho rounded down to a multiple of rho's last binary digit (ulp(0.4) =
    # 2**-54), so that the release can take exactly what remains.
    share = Fraction(math.floor(Fraction(rho) / 8 / 2**-54), 2**54)
    assert share <= Fraction(rho) / 8 < share + Fraction(1, 2**54)
    assert spends[0].budget == ZCDP(float(share))
    # The sparse vector is booked at its zCDP share and runs at the largest epsilon with
    # epsilon**2 / 2 within it.
    assert spends[1].budget == ZCDP(float(share))
    noise = est.privacy_.noise
    epsilon = noise["svt_epsilon"]
    assert epsilon == pytest.approx(math.sqrt(rho) / 2, rel=1e-14)
    assert Fraction(epsilon) ** 2 / 2 <= share
    rest = sum(Fraction(s.budget.rho) for s in spends[2:])
    assert rest == Fraction(rho) - 2 * share
    r = math.sqrt(p)
    assert noise["trace_sigma"] == pytest.approx(
        exact_gaussian_sigma_zcdp(r**2 / n, 1, rho / 8)[0], rel=1e-14
    )
    assert noise["svt_threshold_laplace_scale"] == pytest.approx(2 / epsilon)
    # The queries are monotonic (one record moves all of them the same way).
    assert noise["svt_query_laplace_scale"] == pytest.approx(2 / epsilon)
    tau = est.radius_
    # The declared radius is sqrt(p) rounded up (it must bound every clipped row's norm);
    # the chosen one is it times a power of two.
    declared = r if Fraction(r) ** 2 >= p else math.nextafter(r, math.inf)
    assert tau <= declared
    assert math.log2(declared / tau) == pytest.approx(round(math.log2(declared / tau)))
    if est.method_ == "gauss":
        expected, _ = exact_gaussian_sigma_zcdp(
            math.sqrt(2) * tau**2 / n, p * (p + 1) // 2, 0.75 * rho
        )
        assert noise["gauss_sigma"] == pytest.approx(expected, rel=1e-12)
    else:
        expected = math.sqrt(2) * tau**2 / n / math.sqrt(0.75 * rho)
        assert noise["eigenvalue_sigma"] == pytest.approx(expected, rel=1e-12)
    values = np.linalg.eigvalsh(est.covariance_)
    assert values.min() >= -1e-12 and values.max() <= tau**2 * (1 + 1e-12)


@pytest.mark.parametrize("rho", [0.3, 0.7, 1.1])
def test_adaptive_spends_exactly_its_total(data, rho):
    # Totals whose eighths are no exact floats: the shares are dyadic, the release takes
    # exactly what remains.
    est = AdaptiveCovariance(budget=ZCDP(rho), bounds=Box(1.0), random_state=3).fit(data)
    assert est.plan_.spends_exactly
    assert est.privacy_.notes["spent_exactly_total"] is True
    spent = sum((Fraction(s.budget.rho) for s in est.accountant_.spends), Fraction(0))
    assert spent == Fraction(rho)


def test_adaptive_finds_a_smaller_radius_and_beats_separate_at_the_declared_one():
    """Rows of norm at most 1 under a declared bound of 32: the private radius comes down
    and the error with it (the sparse vector resolves the radius only up to its noise, so
    the comparison is on averages)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(50000, 30))
    X /= np.linalg.norm(X, axis=1).max()
    S = _second_moment(X)
    radii, adaptive, separate = [], [], []
    for seed in range(6):
        a = AdaptiveCovariance(budget=ZCDP(10.0), bounds=RowNorm(32.0), random_state=seed).fit(X)
        s = SeparateCovariance(budget=ZCDP(10.0), bounds=RowNorm(32.0), random_state=seed).fit(X)
        radii.append(a.radius_)
        adaptive.append(np.linalg.norm(a.covariance_ - S))
        separate.append(np.linalg.norm(s.covariance_ - S))
    assert np.median(radii) <= 16.0
    assert np.mean(adaptive) < 0.5 * np.mean(separate)


def test_adaptive_prefers_separate_in_high_dimension_and_gauss_in_low():
    rng = np.random.default_rng(2)
    low = rng.normal(size=(20000, 3))
    low /= np.linalg.norm(low, axis=1).max()
    high = rng.normal(size=(500, 200)) @ rng.normal(size=(200, 200)) * 0.1
    high /= np.linalg.norm(high, axis=1).max()
    est_low = AdaptiveCovariance(budget=ZCDP(1.0), bounds=RowNorm(1.0), random_state=0).fit(low)
    est_high = AdaptiveCovariance(budget=ZCDP(0.1), bounds=RowNorm(1.0), random_state=0).fit(high)
    assert est_low.method_ == "gauss"
    assert est_high.method_ == "separate"
    for est in (est_low, est_high):
        gauss, separate = AdaptiveCovariance.predicted_errors(
            est.radius_,
            n=est.n_samples_,
            p=est.n_features_in_,
            rho=0.75 * est.privacy_.budget.rho,
            trace_bound=min(
                max(
                    est.noisy_trace_
                    + est.privacy_.noise["trace_sigma"] * math.sqrt(2 * math.log(4 / 0.1)),
                    0.0,
                ),
                1.0,
            ),
            neighbors="replace",
            failure_probability=0.1,
        )
        assert (est.method_ == "gauss") == (separate >= gauss)


def test_above_threshold_stops_at_the_first_query_far_above():
    rng = np.random.default_rng(0)
    queries = np.array([-1e6, -1e6, 1e6, 1e6, -1e6])
    for _ in range(20):
        assert above_threshold(queries, threshold=0.0, sensitivity=1.0, epsilon=1.0, rng=rng) == 2
    none = np.full(7, -1e6)
    assert above_threshold(none, threshold=0.0, sensitivity=1.0, epsilon=1.0, rng=rng) == 7


@pytest.mark.parametrize("monotonic", [False, True])
def test_above_threshold_halting_probability_matches_laplace_integral(monotonic):
    """One query at value c: it halts iff c + Lap(b_q) >= Lap(b_t), with b_t = 2/eps and
    b_q = 4/eps (2/eps for monotonic queries); the probability by numerical integration."""
    epsilon, c = 0.8, 1.5
    b_t, b_q = 2 / epsilon, (2 if monotonic else 4) / epsilon
    expected = integrate.quad(
        lambda z: stats.laplace.pdf(z, scale=b_t) * stats.laplace.sf(z - c, scale=b_q),
        -np.inf,
        np.inf,
    )[0]
    rng = np.random.default_rng(9)
    trials = 4000
    halts = sum(
        above_threshold(
            np.array([c]),
            threshold=0.0,
            sensitivity=1.0,
            epsilon=epsilon,
            rng=rng,
            monotonic=monotonic,
        )
        == 0
        for _ in range(trials)
    )
    assert stats.binomtest(halts, trials, expected).pvalue > 1e-4


# ---------------------------------------------------------------- all baselines


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize(
    ("budget", "rho"),
    [
        (ZCDP(0.37), Fraction(0.37)),
        (PureDP(0.9), Fraction(0.9) ** 2 / 2),
        (GDP(0.8), Fraction(0.8) ** 2 / 2),
    ],
)
def test_accountant_total_equals_the_budget(data, cls, budget, rho):
    # Unseeded: a seeded run is an experiment and is reported with validity "none".
    est = cls(budget=budget, bounds=Box(1.0), random_state=None).fit(data)
    assert isinstance(est.privacy_.budget, ZCDP)
    total = Fraction(est.privacy_.budget.rho)
    assert total <= rho and float(total) == pytest.approx(float(rho), rel=1e-15)
    assert est.accountant_.total == est.privacy_.budget
    spent = est.accountant_.exact_spent[0]
    assert spent <= total
    assert float(spent) == pytest.approx(float(rho), rel=1e-12)
    assert est.privacy_.is_valid
    if not isinstance(budget, ZCDP):
        assert est.privacy_.notes["requested_budget"] == budget


@pytest.mark.parametrize("cls", ALL)
def test_non_private_is_exact(data, cls):
    est = cls(budget=NonPrivate(), bounds=Box(1.0)).fit(data)
    S = _second_moment(data)
    expected = np.diag(np.diag(S)) if cls is DiagonalCovariance else S
    np.testing.assert_allclose(est.covariance_, expected, rtol=1e-12, atol=1e-15)
    assert est.privacy_.validity == "none" and est.accountant_ is None


@pytest.mark.parametrize("cls", ALL)
def test_large_rho_approaches_the_truth(data, cls):
    est = cls(budget=ZCDP(1e8), bounds=Box(1.0), random_state=0).fit(data)
    S = _second_moment(data)
    target = np.diag(np.diag(S)) if cls is DiagonalCovariance else S
    assert np.linalg.norm(est.covariance_ - target) < 1e-4 * np.linalg.norm(target)


@pytest.mark.parametrize("cls", ALL)
def test_public_center_is_subtracted_before_clipping(data, cls):
    shift = np.linspace(-0.5, 0.5, data.shape[1])
    est = cls(budget=NonPrivate(), bounds=Box(2.0), center=shift).fit(data + shift)
    S = _second_moment(data)
    expected = np.diag(np.diag(S)) if cls is DiagonalCovariance else S
    np.testing.assert_allclose(est.covariance_, expected, atol=1e-12)
    with pytest.raises(ValueError, match="center must be"):
        cls(budget=ZCDP(1.0), bounds=Box(2.0), center="private").fit(data)


@pytest.mark.parametrize("cls", ALL)
def test_data_derived_bounds_void_the_guarantee(data, cls):
    est = cls(budget=ZCDP(1.0), bounds=bounds_from_data(data, kind="box"), random_state=0).fit(data)
    assert est.privacy_.validity == "data-dependent"
    assert "read off the private data" in est.privacy_.reason


@pytest.mark.parametrize("cls", ALL)
def test_seeded_runs_repeat_and_clone_keeps_parameters(data, cls):
    est = cls(budget=ZCDP(0.2), bounds="box:1", random_state=4)
    a = est.fit(data).covariance_.copy()
    b = clone(est).fit(data).covariance_
    np.testing.assert_array_equal(a, b)
    assert clone(est).get_params() == est.get_params()


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("cls", [SSPCovariance, DiagonalCovariance])
def test_row_norm_bound_is_refused_where_a_box_is_required(data, cls):
    # A wrong kind of bound is a bad value: a ValueError (the contract), not a TypeError.
    with pytest.raises(ValueError, match=r"bounds must be Box\(b\).*needs coordinate-wise"):
        cls(budget=ZCDP(1.0), bounds=RowNorm(1.0)).fit(data)


@pytest.mark.parametrize("cls", ALL)
def test_bad_budgets(data, cls):
    with pytest.raises(ValueError, match=r"budget: rho must be > 0"):
        cls(budget=ZCDP(0.0), bounds=Box(1.0)).fit(data)
    with pytest.raises(ValueError, match=r"budget: rho must be > 0"):
        cls(budget=PureDP(0.0), bounds=Box(1.0)).fit(data)
    with pytest.raises(IncompatibleBudgetError, match=r"runs under rho-zCDP"):
        cls(budget=ApproxDP(1.0, 1e-6), bounds=Box(1.0)).fit(data)
    with pytest.raises(ValueError, match="budget is required"):
        cls(bounds=Box(1.0)).fit(data)
    with pytest.raises(ValueError, match="bounds is required"):
        cls(budget=ZCDP(1.0)).fit(data)
    with pytest.raises(ValueError, match="neighbors must be"):
        cls(budget=ZCDP(1.0), bounds=Box(1.0), neighbors="swap").fit(data)


def test_bad_method_parameters(data):
    with pytest.raises(ValueError, match=r"eigenvector_fraction must be a number in \(0, 1\)"):
        SeparateCovariance(budget=ZCDP(1.0), bounds=Box(1.0), eigenvector_fraction=1.0).fit(data)
    with pytest.raises(ValueError, match=r"trace_fraction \+ radius_fraction must be < 1"):
        AdaptiveCovariance(
            budget=ZCDP(1.0), bounds=Box(1.0), trace_fraction=0.5, radius_fraction=0.5
        ).fit(data)
    with pytest.raises(ValueError, match=r"n_radii must be an integer in \[1, 1000\]; got 0"):
        AdaptiveCovariance(budget=ZCDP(1.0), bounds=Box(1.0), n_radii=0).fit(data)
    with pytest.raises(ValueError, match=r"failure_probability must be a number in \(0, 1\)"):
        AdaptiveCovariance(budget=ZCDP(1.0), bounds=Box(1.0), failure_probability=0).fit(data)
    with pytest.raises(ValueError, match="Box bound has 2 entries but the data has 6 columns"):
        SSPCovariance(budget=ZCDP(1.0), bounds=Box((1.0, 1.0))).fit(data)
    with pytest.raises(ValueError, match="NaN or infinite"):
        bad = data.copy()
        bad[3, 2] = np.nan
        AdaptiveCovariance(budget=ZCDP(1.0), bounds=Box(1.0)).fit(bad)
