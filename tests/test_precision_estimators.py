"""Covariance-perturbation precision estimators (Su, Guo & Zhang; Wang, Huai & Xu;
Wang, Xu & He)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpggm import ZCDP, ApproxDP, Box, InvalidGuaranteeError, NonPrivate, PureDP, RowNorm
from dpggm.estimators.precision import (
    GraphicalLasso,
    OutputPerturbationPrecision,
    RidgePrecision,
    ThresholdedCovariance,
    auto_alpha,
)
from exact_noise_reference import (
    exact_gaussian_sigma_zcdp,
    exact_laplace_scale,
    largest_rho_reference,
)


def _independent_analytic_sigma(sens, eps, delta):
    """Balle & Wang's calibration solved here with scipy's normal CDF and brentq."""

    def excess(sigma):
        a = sens / (2 * sigma) - eps * sigma / sens
        b = -sens / (2 * sigma) - eps * sigma / sens
        return stats.norm.cdf(a) - math.exp(eps) * stats.norm.cdf(b) - delta

    return optimize.brentq(excess, 1e-6 * sens, 1e3 * sens, xtol=1e-16, rtol=1e-14)


@pytest.fixture(scope="module")
def chain_data():
    p = 6
    theta = np.eye(p) + np.diag(np.full(p - 1, 0.4), 1) + np.diag(np.full(p - 1, 0.4), -1)
    X = np.random.default_rng(0).multivariate_normal(np.zeros(p), np.linalg.inv(theta), size=1000)
    return X / 6, theta


def test_ridge_sigma_matches_independent_calibration(chain_data):
    """Gaussian, RowNorm(1), n = 1000, replace-one: sigma = analytic calibration of sqrt(2)/1000."""
    X, _ = chain_data
    floating = RidgePrecision(ridge=0.1, budget=ApproxDP(0.8, 1e-5), bounds=RowNorm(1.0),
                              random_state=0, noise="float").fit(X)
    expected = _independent_analytic_sigma(math.sqrt(2) / 1000, 0.8, 1e-5)
    assert floating.privacy_.noise["sigma"] == pytest.approx(expected, rel=1e-6)
    # The exact release is calibrated through zCDP: the largest rho whose conversion gives
    # (0.8, 1e-5), and the grid's rounding allowance.
    est = RidgePrecision(ridge=0.1, budget=ApproxDP(0.8, 1e-5), bounds=RowNorm(1.0),
                         random_state=0).fit(X)
    rho = largest_rho_reference(0.8, 1e-5)
    exact, _ = exact_gaussian_sigma_zcdp(math.sqrt(2) / 1000, 21, rho)
    assert est.privacy_.noise["sigma"] == pytest.approx(exact, rel=1e-6)
    assert est.privacy_.budget == ApproxDP(0.8, 1e-5)
    assert np.all(np.linalg.eigvalsh(est.precision_) > 0)
    # Independent check of the closed form: the ridge objective's gradient vanishes.
    S, T = est.noisy_covariance_, est.precision_
    grad = -np.linalg.inv(T) + S + 2 * 0.1 * T
    assert np.abs(grad).max() < 1e-8


def test_ridge_non_private_matches_definition(chain_data):
    X, _ = chain_data
    est = RidgePrecision(ridge=0.05, budget=NonPrivate(), bounds=RowNorm(10.0)).fit(X)
    S = X.T @ X / len(X)
    phi, M = np.linalg.eigh(S)
    expected = M @ np.diag(2 / (phi + np.sqrt(phi**2 + 8 * 0.05))) @ M.T
    np.testing.assert_allclose(est.precision_, expected, rtol=1e-10)


def test_glasso_non_private_equals_solver(chain_data):
    from dpggm.solvers.glasso import graphical_lasso

    X, _ = chain_data
    est = GraphicalLasso(alpha=0.002, budget=NonPrivate(), bounds=RowNorm(10.0)).fit(X)
    ref = graphical_lasso(X.T @ X / len(X), 0.002)
    np.testing.assert_allclose(est.precision_, ref.estimate, rtol=1e-8, atol=1e-10)
    assert est.alpha_ == 0.002 and est.solver_.converged


def test_glasso_private_recovers_chain_at_large_budget(chain_data):
    X, theta = chain_data
    est = GraphicalLasso(alpha="auto", budget=ZCDP(100.0), bounds=RowNorm(1.0),
                         random_state="secure").fit(X)
    support = np.abs(np.triu(est.precision_, 1)) > 0
    truth = np.abs(np.triu(theta, 1)) > 0
    assert (support & truth).sum() == truth.sum()
    assert est.privacy_.validity == "valid"


def test_auto_alpha_formula():
    S = np.diag([1.0, 2.0, 3.0])
    value = auto_alpha(S, noise_std=0.1, n=100)
    assert value == pytest.approx(0.1 * math.sqrt(2 * math.log(3)) + 2.0 * math.sqrt(2 * math.log(3) / 100))


def test_cv_nonprivate_is_flagged(chain_data):
    X, _ = chain_data
    est = GraphicalLasso(alpha="cv-nonprivate", budget=ZCDP(1.0), bounds=RowNorm(1.0),
                         random_state=0).fit(X)
    assert est.privacy_.validity == "data-dependent"
    assert "cross-validation" in est.privacy_.reason


@pytest.mark.parametrize("mechanism,budget", [
    ("laplace", PureDP(1.0)), ("sulq", ApproxDP(1.0, 1e-5)), ("wishart", ApproxDP(0.5, 1e-5)),
])
def test_glasso_with_each_mechanism(chain_data, mechanism, budget):
    X, _ = chain_data
    est = GraphicalLasso(alpha=0.05, budget=budget, bounds=RowNorm(1.0), mechanism=mechanism,
                         wishart_mean_removal=True, random_state="secure").fit(X)
    assert np.all(np.isfinite(est.precision_))
    seeded = GraphicalLasso(alpha=0.05, budget=budget, bounds=RowNorm(1.0), mechanism=mechanism,
                            wishart_mean_removal=True, random_state=0).fit(X)
    assert "seeded" in seeded.privacy_.reason
    if mechanism == "wishart":
        # Its Gaussian vectors are float draws: never a valid release, seeded or not.
        assert est.privacy_.validity == seeded.privacy_.validity == "invalid"
        assert "Mironov 2012" in est.privacy_.reason
    else:
        assert est.privacy_.validity == "valid"
        assert seeded.privacy_.validity == "none"


def test_laplace_scale_independent(chain_data):
    X, _ = chain_data
    est = GraphicalLasso(alpha=0.05, budget=PureDP(0.5), bounds=RowNorm(1.0), mechanism="laplace",
                         random_state=0).fit(X)
    # l1 sensitivity of the upper triangle: replace-one, ||x|| <= 1, p = 6: (p + 1) / n,
    # plus the grid's rounding allowance for 21 coordinates.
    scale, grid = exact_laplace_scale(7 / 1000, 21, 0.5)
    assert est.privacy_.noise["laplace_scale"] == pytest.approx(scale, rel=1e-12)
    assert est.privacy_.noise["grid"] == grid
    floating = GraphicalLasso(alpha=0.05, budget=PureDP(0.5), bounds=RowNorm(1.0),
                              mechanism="laplace", random_state=0, noise="float").fit(X)
    assert floating.privacy_.noise["laplace_scale"] == pytest.approx(7 / 1000 / 0.5)


def test_sulq_per_entry_budget(chain_data):
    X, _ = chain_data
    est = GraphicalLasso(
        alpha=0.05, budget=ApproxDP(1.0, 1e-5), bounds=RowNorm(1.0), mechanism="sulq",
        random_state=0,
    ).fit(X)
    k = 21
    per = est.privacy_.noise["per_entry_budget"]
    assert per.epsilon == pytest.approx(1.0 / k) and per.delta == pytest.approx(1e-5 / k)
    # Diagonal entries have sensitivity 1/n, off-diagonal ones 1/n too (B^2/n with B = 1).
    rho = largest_rho_reference(1.0 / k, 1e-5 / k)
    expected, _ = exact_gaussian_sigma_zcdp(1.0 / 1000, 1, rho)
    assert est.privacy_.noise["max_entry_sigma"] == pytest.approx(expected, rel=1e-6)


def test_wishart_df_and_validity_range(chain_data):
    X, _ = chain_data
    est = GraphicalLasso(alpha=0.05, budget=ApproxDP(0.5, 1e-4), bounds=RowNorm(1.0),
                         mechanism="wishart", random_state=0).fit(X)
    assert est.privacy_.noise["wishart_df"] == math.ceil(6 + 14 * math.log(4 / 1e-4) / 0.25)
    with pytest.raises(ValueError, match="epsilon in \\(0, 1\\)"):
        GraphicalLasso(alpha=0.05, budget=ApproxDP(1.5, 1e-4), bounds=RowNorm(1.0),
                       mechanism="wishart").fit(X)


def test_output_perturbation_refused_without_opt_in(chain_data):
    X, _ = chain_data
    with pytest.raises(InvalidGuaranteeError, match="allow_invalid=True"):
        OutputPerturbationPrecision(alpha=0.05, budget=PureDP(1.0), bounds=RowNorm(1.0)).fit(X)
    est = OutputPerturbationPrecision(alpha=0.05, budget=PureDP(1.0), bounds=RowNorm(1.0),
                                      allow_invalid=True, random_state=0).fit(X)
    assert est.privacy_.validity == "invalid"
    assert est.privacy_.noise["wishart_scale"] == pytest.approx(6**2.5 / (1000 * 1.0 * 0.05**2))


def test_wishart_pure_refused_without_opt_in(chain_data):
    X, _ = chain_data
    with pytest.raises(InvalidGuaranteeError):
        GraphicalLasso(alpha=0.05, budget=PureDP(1.0), bounds=RowNorm(1.0),
                       mechanism="wishart-pure").fit(X)


def test_thresholded_covariance_threshold(chain_data):
    X, _ = chain_data
    est = ThresholdedCovariance(gamma=0.5, budget=ApproxDP(1.0, 1e-3), bounds=RowNorm(1.0),
                                random_state=0, noise="float").fit(X)
    sigma = _independent_analytic_sigma(math.sqrt(2) / 1000, 1.0, 1e-3)
    expected = 0.5 * math.sqrt(math.log(6) / 1000) + 4 * sigma * math.sqrt(math.log(6))
    assert est.threshold_ == pytest.approx(expected, rel=1e-6)
    off = est.thresholded_covariance_[~np.eye(6, dtype=bool)]
    assert np.all((off == 0) | (np.abs(off) > est.threshold_))
    assert np.linalg.eigvalsh(est.covariance_).min() >= -1e-12


@pytest.mark.parametrize("value,name", [(-1.0, "alpha"), (math.nan, "alpha")])
def test_bad_alpha(chain_data, value, name):
    X, _ = chain_data
    with pytest.raises(ValueError, match=name):
        GraphicalLasso(alpha=value, budget=ZCDP(1.0), bounds=RowNorm(1.0)).fit(X)


def test_bad_ridge(chain_data):
    X, _ = chain_data
    with pytest.raises(ValueError, match="ridge must be a finite number > 0; got 0.0"):
        RidgePrecision(ridge=0.0, budget=ZCDP(1.0), bounds=RowNorm(1.0)).fit(X)
    with pytest.raises(ValueError, match="ridge must be a finite number > 0; got -2.0"):
        RidgePrecision(ridge=-2.0, budget=ZCDP(1.0), bounds=RowNorm(1.0)).fit(X)


def test_one_feature_refused():
    X = np.random.default_rng(0).normal(size=(50, 1))
    with pytest.raises(ValueError, match="at least 2 variables"):
        GraphicalLasso(alpha=0.1, budget=ZCDP(1.0), bounds=Box(1.0)).fit(X)
