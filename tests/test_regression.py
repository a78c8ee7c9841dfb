"""Private linear regression: OLS from a private joint second moment, and AdaSSP (Wang
2018). Reference fits come from scikit-learn and numpy's pseudo-inverse; noise scales from
formulas written out here."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression, Ridge

from dpggm import GDP, ZCDP, ApproxDP, Box, IncompatibleBudgetError, NonPrivate, PureDP, RowNorm
from dpggm.estimators.baselines import SSPCovariance
from dpggm.estimators.regression import AdaSSP, PrivateLinearRegression, solve_normal_equations
from exact_noise_reference import exact_gaussian_sigma_zcdp


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    n, p = 4000, 4
    X = rng.uniform(-1, 1, size=(n, p))
    coef = np.array([0.3, -0.2, 0.1, 0.05])
    y = np.clip(X @ coef + 0.2 + 0.1 * rng.normal(size=n), -1, 1)
    return X, y


def _balle_wang_delta(sigma, sens, eps):
    """delta of the Gaussian mechanism (Balle & Wang 2018, Theorem 8), via scipy."""
    a = sens / (2 * sigma) - eps * sigma / sens
    b = -sens / (2 * sigma) - eps * sigma / sens
    return stats.norm.cdf(a) - math.exp(eps) * stats.norm.cdf(b)


# ---------------------------------------------------------------- from a covariance


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_non_private_joint_moment_gives_ols(problem, fit_intercept):
    X, y = problem
    model = PrivateLinearRegression(
        covariance_estimator=SSPCovariance(budget=NonPrivate(), bounds=Box(1.0)),
        fit_intercept=fit_intercept,
    ).fit(X, y)
    reference = LinearRegression(fit_intercept=fit_intercept).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-9, atol=1e-12)
    assert model.intercept_ == pytest.approx(reference.intercept_, abs=1e-10)
    np.testing.assert_allclose(model.predict(X[:5]), reference.predict(X[:5]), atol=1e-10)
    assert model.privacy_.validity == "none"
    assert not model.solver_.repaired


def test_ridge_matches_sklearn_with_unpenalised_intercept(problem):
    X, y = problem
    ridge = 0.05
    model = PrivateLinearRegression(
        covariance_estimator=SSPCovariance(budget=NonPrivate(), bounds=Box(1.0)),
        fit_intercept=True,
        ridge=ridge,
    ).fit(X, y)
    # (1/n)||y - Xb - c||^2 + ridge ||b||^2  <=>  sklearn's ||.||^2 + (ridge n) ||b||^2.
    reference = Ridge(alpha=ridge * len(y)).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-8)
    assert model.intercept_ == pytest.approx(reference.intercept_, rel=1e-8)


def test_private_fit_keeps_the_estimators_guarantee_and_approaches_ols(problem):
    X, y = problem
    reference = LinearRegression().fit(X, y)
    model = PrivateLinearRegression(
        covariance_estimator=SSPCovariance(budget=ZCDP(0.5), bounds=Box(1.0), random_state=1),
        fit_intercept=True,
    ).fit(X, y)
    assert model.privacy_.budget == ZCDP(0.5)
    assert model.privacy_.budget == model.covariance_estimator_.privacy_.budget
    assert "regression" in model.privacy_.notes
    # The estimator was fitted on [x, 1, y]: the noise is that of a 6-column box.
    n = len(y)
    assert model.privacy_.noise["sigma"] == pytest.approx(
        exact_gaussian_sigma_zcdp(math.sqrt(2) * 6 / n, 21, 0.5)[0], rel=1e-14
    )
    errors = []
    for rho in (1e-2, 1.0, 1e4):
        fitted = PrivateLinearRegression(
            covariance_estimator=SSPCovariance(budget=ZCDP(rho), bounds=Box(1.0), random_state=2),
            fit_intercept=True,
        ).fit(X, y)
        errors.append(np.linalg.norm(fitted.coef_ - reference.coef_))
    assert errors[2] < 1e-3 and errors[2] < errors[0]


def test_the_passed_estimator_is_not_modified(problem):
    X, y = problem
    estimator = SSPCovariance(budget=ZCDP(1.0), bounds=Box(1.0), random_state=0)
    PrivateLinearRegression(covariance_estimator=estimator).fit(X, y)
    assert not hasattr(estimator, "covariance_")


def test_singular_feature_block_gives_the_minimum_norm_solution():
    rng = np.random.default_rng(4)
    base = rng.uniform(-1, 1, size=(500, 2))
    X = np.hstack([base, base[:, :1]])  # duplicated column: X^T X is singular
    y = base @ np.array([0.5, -0.25]) + 0.01 * rng.normal(size=500)
    model = PrivateLinearRegression(
        covariance_estimator=SSPCovariance(budget=NonPrivate(), bounds=Box(1.0))
    ).fit(X, y)
    assert model.solver_.repaired
    np.testing.assert_allclose(model.coef_, np.linalg.pinv(X) @ y, rtol=1e-6, atol=1e-9)


def test_indefinite_private_block_is_repaired_to_a_finite_solution():
    joint = np.array([[1.0, 2.0, 0.5], [2.0, 1.0, 0.3], [0.5, 0.3, 1.0]])  # eigenvalue -1
    coef, info = solve_normal_equations(joint, n_features=2)
    assert info["repaired"] and info["min_eigenvalue"] < 0
    assert np.all(np.isfinite(coef))
    values, vectors = np.linalg.eigh(joint)
    projected = (vectors * np.clip(values, 0, None)) @ vectors.T
    # The repaired coefficients solve the normal equations of the PSD projection.
    np.testing.assert_allclose(projected[:2, :2] @ coef, projected[:2, 2], atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5), st.floats(0.0, 2.0))
def test_normal_equations_hold_for_positive_definite_blocks(seed, k, ridge):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(3 * (k + 1) + 5, k + 1))
    joint = Z.T @ Z / len(Z)
    coef, info = solve_normal_equations(joint, n_features=k, ridge=ridge)
    assert not info["repaired"]
    np.testing.assert_allclose(
        (joint[:k, :k] + ridge * np.eye(k)) @ coef, joint[:k, k], rtol=1e-8, atol=1e-10
    )


def test_linear_regression_bad_input(problem):
    X, y = problem
    estimator = SSPCovariance(budget=ZCDP(1.0), bounds=Box(1.0))
    with pytest.raises(ValueError, match=r"ridge must be a finite number >= 0; got -1"):
        PrivateLinearRegression(covariance_estimator=estimator, ridge=-1.0).fit(X, y)
    with pytest.raises(TypeError, match="covariance_estimator must be an estimator"):
        PrivateLinearRegression(covariance_estimator="ssp").fit(X, y)
    with pytest.raises(ValueError, match=r"constant column \(column 4\) must be >= 1"):
        PrivateLinearRegression(
            covariance_estimator=SSPCovariance(budget=ZCDP(1.0), bounds=Box(0.5)),
            fit_intercept=True,
        ).fit(X, y)
    with pytest.raises(ValueError, match="y must have one value per record"):
        PrivateLinearRegression(covariance_estimator=estimator).fit(X, y[:-1])
    with pytest.raises(NotFittedError):
        PrivateLinearRegression(covariance_estimator=estimator).predict(X)
    model = PrivateLinearRegression(covariance_estimator=estimator).fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but PrivateLinearRegression is expecting 4 features"):
        model.predict(X[:, :3])


# ---------------------------------------------------------------- AdaSSP


def test_adassp_zcdp_sigmas(problem):
    X, y = problem
    rho, B, B_y = 0.6, 2.0, 1.0
    model = AdaSSP(
        budget=ZCDP(rho), bounds=RowNorm(B), y_bound=B_y, random_state=0, noise="float"
    ).fit(X, y)
    noise = model.privacy_.noise
    third = rho / 3
    assert noise["min_eigenvalue_sigma"] == pytest.approx(B**2 / math.sqrt(2 * third), rel=1e-14)
    assert noise["gram_sigma"] == pytest.approx(
        math.sqrt(2) * B**2 / math.sqrt(2 * third), rel=1e-14
    )
    assert noise["moment_sigma"] == pytest.approx(2 * B * B_y / math.sqrt(2 * third), rel=1e-14)
    # Exact noise: the same figures with the grid's rounding allowance (d = 4 features).
    exact = AdaSSP(budget=ZCDP(rho), bounds=RowNorm(B), y_bound=B_y).fit(X, y).privacy_.noise
    d = X.shape[1]
    assert exact["gram_sigma"] == pytest.approx(
        exact_gaussian_sigma_zcdp(math.sqrt(2) * B**2, d * (d + 1) // 2, third)[0], rel=1e-14
    )
    assert exact["moment_sigma"] == pytest.approx(
        exact_gaussian_sigma_zcdp(2 * B * B_y, d, third)[0], rel=1e-14
    )
    add = AdaSSP(
        budget=ZCDP(rho), bounds=RowNorm(B), y_bound=B_y, neighbors="add-remove", random_state=0,
        noise="float",
    ).fit(X, y)
    assert add.privacy_.noise["gram_sigma"] == pytest.approx(B**2 / math.sqrt(2 * third), rel=1e-14)
    assert add.privacy_.noise["moment_sigma"] == pytest.approx(
        B * B_y / math.sqrt(2 * third), rel=1e-14
    )
    gdp = AdaSSP(
        budget=GDP(0.9), bounds=RowNorm(B), y_bound=B_y, random_state=0, noise="float"
    ).fit(X, y)
    assert gdp.privacy_.noise["min_eigenvalue_sigma"] == pytest.approx(
        B**2 / (0.9 / math.sqrt(3)), rel=1e-12
    )


def test_adassp_approx_dp_sigmas_satisfy_balle_wang(problem):
    X, y = problem
    eps, delta, B, B_y = 1.5, 1e-5, 2.0, 1.0
    model = AdaSSP(
        budget=ApproxDP(eps, delta), bounds=RowNorm(B), y_bound=B_y, random_state=0,
        noise="float",
    ).fit(X, y)
    noise = model.privacy_.noise
    for key, sens in (
        ("min_eigenvalue_sigma", B**2),
        ("gram_sigma", math.sqrt(2) * B**2),
        ("moment_sigma", 2 * B * B_y),
    ):
        sigma = noise[key]
        assert _balle_wang_delta(sigma, sens, eps / 3) <= delta / 3 * (1 + 1e-9)
        assert _balle_wang_delta(sigma * (1 - 1e-6), sens, eps / 3) > delta / 3 * (1 - 2e-6)
    # The paper's downward shift sqrt(ln(6 / delta)) sigma_1.
    assert noise["min_eigenvalue_shift"] == pytest.approx(
        math.sqrt(math.log(6 / delta)) * noise["min_eigenvalue_sigma"], rel=1e-14
    )
    spent = model.accountant_.exact_spent
    assert spent[0] <= Fraction(eps) and float(spent[0]) == pytest.approx(eps, rel=1e-12)
    assert spent[1] <= Fraction(delta) and float(spent[1]) == pytest.approx(delta, rel=1e-12)
    assert model.privacy_.budget == ApproxDP(eps, delta)


def test_adassp_ridge_follows_the_private_eigenvalue():
    rng = np.random.default_rng(6)
    X = rng.uniform(-1, 1, size=(300, 8)) * np.array([1, 1, 1, 1, 1, 1, 0.01, 0.01])
    y = np.clip(X[:, 0] * 0.5 + 0.1 * rng.normal(size=300), -1, 1)
    model = AdaSSP(budget=ZCDP(0.1), bounds=RowNorm(math.sqrt(8)), y_bound=1.0, random_state=0).fit(
        X, y
    )
    sigma = model.privacy_.noise["gram_sigma"]
    expected = max(
        0.0, sigma * math.sqrt(8 * math.log(2 * 64 / 0.05)) - model.noisy_min_eigenvalue_
    )
    assert model.ridge_ == pytest.approx(expected, rel=1e-12)
    assert model.ridge_ > 0
    assert np.all(np.isfinite(model.coef_))


def test_adassp_eigenvalue_release_is_gaussian_around_the_truth(problem):
    X, y = problem
    lambda_min = np.linalg.eigvalsh(X.T @ X)[0]
    z = []
    for seed in range(400):
        model = AdaSSP(budget=ZCDP(1.0), bounds=RowNorm(2.0), y_bound=1.0, random_state=seed).fit(
            X, y
        )
        noise = model.privacy_.noise
        assert model.noisy_min_eigenvalue_ > 0  # lambda_min ~ n/3 is far from the clamp
        z.append(
            (model.noisy_min_eigenvalue_ + noise["min_eigenvalue_shift"] - lambda_min)
            / noise["min_eigenvalue_sigma"]
        )
    assert stats.kstest(z, "norm").pvalue > 1e-4


@pytest.mark.parametrize("budget", [ApproxDP(1e4, 1e-6), ZCDP(1e8)])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_adassp_at_large_budget_approaches_ols(problem, budget, fit_intercept):
    X, y = problem
    model = AdaSSP(
        budget=budget,
        bounds=RowNorm(2.0),
        y_bound=1.0,
        fit_intercept=fit_intercept,
        random_state=0,
    ).fit(X, y)
    reference = LinearRegression(fit_intercept=fit_intercept).fit(X, y)
    assert model.ridge_ < 1e-2
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-3)
    assert model.intercept_ == pytest.approx(reference.intercept_, abs=1e-3)


def test_adassp_non_private_is_ols(problem):
    X, y = problem
    model = AdaSSP(budget=NonPrivate(), bounds=RowNorm(2.0), y_bound=1.0, fit_intercept=True).fit(
        X, y
    )
    reference = LinearRegression().fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-9)
    assert model.intercept_ == pytest.approx(reference.intercept_, rel=1e-9)
    assert model.privacy_.validity == "none" and model.accountant_ is None


def test_adassp_is_reproducible_and_clips_targets(problem):
    X, y = problem
    a = AdaSSP(budget=ZCDP(1.0), bounds=RowNorm(2.0), y_bound=1.0, random_state=3).fit(X, y)
    b = AdaSSP(budget=ZCDP(1.0), bounds=RowNorm(2.0), y_bound=1.0, random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    exact = AdaSSP(budget=NonPrivate(), bounds=RowNorm(2.0), y_bound=0.1).fit(X, y)
    reference = LinearRegression(fit_intercept=False).fit(X, np.clip(y, -0.1, 0.1))
    np.testing.assert_allclose(exact.coef_, reference.coef_, rtol=1e-9)


def test_adassp_bad_input(problem):
    X, y = problem
    with pytest.raises(IncompatibleBudgetError, match="cannot satisfy pure epsilon-DP"):
        AdaSSP(budget=PureDP(1.0), bounds=RowNorm(2.0), y_bound=1.0).fit(X, y)
    # The one budget-range refusal (names the parameter, the range and the value).
    with pytest.raises(ValueError, match=r"budget: rho must be in .* for AdaSSP.*got rho=0.0"):
        AdaSSP(budget=ZCDP(0.0), bounds=RowNorm(2.0), y_bound=1.0).fit(X, y)
    with pytest.raises(ValueError, match=r"budget must be .*ApproxDP with delta > 0"):
        AdaSSP(budget=ApproxDP(1.0, 0.0), bounds=RowNorm(2.0), y_bound=1.0).fit(X, y)
    with pytest.raises(ValueError, match="y_bound is required"):
        AdaSSP(budget=ZCDP(1.0), bounds=RowNorm(2.0)).fit(X, y)
    with pytest.raises(ValueError, match=r"y_bound must be a finite number > 0; got -1"):
        AdaSSP(budget=ZCDP(1.0), bounds=RowNorm(2.0), y_bound=-1).fit(X, y)
    with pytest.raises(ValueError, match=r"failure_probability must be a number in \(0, 1\)"):
        AdaSSP(budget=ZCDP(1.0), bounds=RowNorm(2.0), y_bound=1.0, failure_probability=1.0).fit(
            X, y
        )
    with pytest.raises(ValueError, match="bounds is required"):
        AdaSSP(budget=ZCDP(1.0), y_bound=1.0).fit(X, y)
    bad = y.copy()
    bad[7] = np.inf
    with pytest.raises(ValueError, match="y contains NaN or infinite values"):
        AdaSSP(budget=ZCDP(1.0), bounds=RowNorm(2.0), y_bound=1.0).fit(X, bad)
    with pytest.raises(ValueError, match="neighbors must be"):
        AdaSSP(budget=ZCDP(1.0), bounds=RowNorm(2.0), y_bound=1.0, neighbors="x").fit(X, y)
