"""Edge inference from a released second moment (dpggm.solvers.inference).

Reference values are computed independently of the code under test: variances by
simulation and by finite-difference Jacobians, FDR adjustments by SciPy, the restricted
maximum-likelihood property by Dempster's moment equations, radial-clipping gains by
simulation.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpggm.solvers import inference
from dpggm.solvers.inference import (
    ClippingModel,
    detectable_partial_correlation,
    edge_inference,
    expected_row_norm_bound,
    false_discovery_control,
    support_refit,
)


def _chain_precision(p: int, weight: float = 0.4) -> np.ndarray:
    return np.eye(p) + np.diag(np.full(p - 1, -weight), 1) + np.diag(np.full(p - 1, -weight), -1)


def _symmetric_noise(rng: np.random.Generator, p: int, sigma: float, size: int) -> np.ndarray:
    """``size`` symmetric matrices with i.i.d. N(0, sigma^2) upper triangles (diagonal
    included), mirrored."""
    upper = np.triu_indices(p)
    out = np.zeros((size, p, p))
    out[:, upper[0], upper[1]] = rng.normal(0.0, sigma, (size, len(upper[0])))
    return out + np.triu(out, 1).transpose(0, 2, 1)


def _partial(theta: np.ndarray) -> np.ndarray:
    d = np.sqrt(np.diag(theta))
    return -theta / np.outer(d, d)


# ---------------------------------------------------------------------------------------
# the variance formula
# ---------------------------------------------------------------------------------------


def test_noise_variance_of_debiased_entry_matches_simulation():
    # T = 2 Theta - Theta (S + E) Theta with Theta fixed: Var(T_jk) over 100 000 symmetric
    # noise draws against sigma^2 [(Theta^2)_jj (Theta^2)_kk + ((Theta^2)_jk)^2
    # - sum_l Theta_jl^2 Theta_lk^2] (the formula of dpggm.solvers.inference, step 3).
    rng = np.random.default_rng(0)
    p, sigma = 5, 0.05
    theta = _chain_precision(p) + 0.1 * np.eye(p)
    theta[0, 3] = theta[3, 0] = 0.2
    E = _symmetric_noise(rng, p, sigma, 100_000)
    T = -np.einsum("ab,rbc,cd->rad", theta, E, theta)  # the noise part of T
    empirical = T.var(axis=0)
    G = theta @ theta
    squares = theta**2
    formula = sigma**2 * (np.outer(np.diag(G), np.diag(G)) + G**2 - squares.T @ squares)
    off = ~np.eye(p, dtype=bool)
    assert np.allclose(empirical[off] / formula[off], 1.0, atol=0.02)
    # The diagonal and the mirrored off-diagonal noise both matter: dropping the
    # correction term (treating every entry as independent) is measurably wrong.
    wrong = sigma**2 * (np.outer(np.diag(G), np.diag(G)) + G**2)
    assert np.max(np.abs(empirical[off] / wrong[off] - 1.0)) > 0.05


def test_partial_correlation_variance_matches_finite_difference_jacobian():
    # The delta-method variance of r_jk (sampling and noise) against a variance built from
    # a numerical Jacobian of r with respect to every released entry.
    p, n, variance = 6, 500, 1e-4
    theta = _chain_precision(p, 0.35)
    theta[1, 4] = theta[4, 1] = -0.15
    S = np.linalg.inv(theta)
    T, r, diagonal = inference._debiased(S, theta)
    c, a, b = inference._coefficients(r, diagonal, null=False)
    noise = inference._noise_variance(theta, c, a, b, variance)
    sampling = inference._sampling_variance(inference._moments_gaussian(theta), c, a, b, n)
    upper = np.triu_indices(p)
    jacobian = np.zeros((len(upper[0]), p, p))
    step = 1e-6
    for index, (i, j) in enumerate(zip(*upper)):
        bump = np.zeros((p, p))
        bump[i, j] = bump[j, i] = step
        _, plus, _ = inference._debiased(S + bump, theta)
        _, minus, _ = inference._debiased(S - bump, theta)
        jacobian[index] = (plus - minus) / (2 * step)
    reference_noise = variance * np.sum(jacobian**2, axis=0)
    # Sampling: Cov(S_ab, S_cd) = (S_ac S_bd + S_ad S_bc) / n for Gaussian records.
    cov = np.zeros((len(upper[0]), len(upper[0])))
    for x, (a1, b1) in enumerate(zip(*upper)):
        for y, (c1, d1) in enumerate(zip(*upper)):
            cov[x, y] = (S[a1, c1] * S[b1, d1] + S[a1, d1] * S[b1, c1]) / n
    reference_sampling = np.einsum("xjk,xy,yjk->jk", jacobian, cov, jacobian)
    off = ~np.eye(p, dtype=bool)
    assert np.allclose(noise[off], reference_noise[off], rtol=1e-5)
    assert np.allclose(sampling[off], reference_sampling[off], rtol=1e-5)
    # Gaussian records: the sampling variance of a partial correlation is (1 - r^2)^2 / n.
    assert np.allclose(sampling[off], (1 - r[off] ** 2) ** 2 / n, rtol=1e-9)


def test_standard_errors_match_the_spread_over_releases():
    # Whole pipeline (pilot, refit, de-biasing) on many releases of one population matrix:
    # the reported standard error against the spread of the estimates.
    rng = np.random.default_rng(1)
    p, sigma = 5, 0.02
    theta = _chain_precision(p)
    S = np.linalg.inv(theta)
    estimates, errors = [], []
    for E in _symmetric_noise(rng, p, sigma, 300):
        result = edge_inference(S + E, n_samples=10**9, noise_variance=sigma**2)
        estimates.append(result.partial_correlation)
        errors.append(result.std_error)
    ratio = np.std(estimates, axis=0) / np.mean(errors, axis=0)
    assert np.all(np.abs(ratio - 1.0) < 0.15), ratio


def test_interval_coverage_on_gaussian_data_with_noise():
    rng = np.random.default_rng(2)
    p, n, sigma = 6, 800, 0.01
    theta = _chain_precision(p)
    truth = _partial(theta)[np.triu_indices(p, 1)]
    factor = np.linalg.cholesky(np.linalg.inv(theta))
    covered = []
    for E in _symmetric_noise(rng, p, sigma, 150):
        X = rng.standard_normal((n, p)) @ factor.T
        result = edge_inference(X.T @ X / n + E, n_samples=n, noise_variance=sigma**2,
                                confidence_level=0.9)
        covered.append((result.ci_low <= truth) & (truth <= result.ci_high))
    coverage = float(np.mean(covered))
    # 150 x 15 intervals, correlated within a release: Monte-Carlo error about 0.01.
    assert 0.86 <= coverage <= 0.94, coverage


# ---------------------------------------------------------------------------------------
# false-discovery control
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["bh", "by"])
def test_false_discovery_control_matches_scipy(method):
    rng = np.random.default_rng(3)
    p_values = np.concatenate([rng.uniform(size=300), rng.uniform(0, 1e-3, size=40), [0.0, 1.0]])
    rng.shuffle(p_values)
    ours = false_discovery_control(p_values, method=method)
    reference = stats.false_discovery_control(p_values, method=method)
    assert np.allclose(ours, reference, rtol=1e-12, atol=1e-15)


def test_false_discovery_control_by_hand():
    # Benjamini-Hochberg on four p-values: sorted 0.01, 0.02, 0.03, 0.5 give
    # 4 * p / rank = 0.04, 0.04, 0.04, 0.5 (monotone already).
    q = false_discovery_control([0.03, 0.5, 0.01, 0.02])
    assert np.allclose(q, [0.04, 0.5, 0.04, 0.04])
    by = false_discovery_control([0.03, 0.5, 0.01, 0.02], method="by")
    assert np.allclose(by, np.minimum(1.0, q * (1 + 1 / 2 + 1 / 3 + 1 / 4)))


def test_selection_is_q_values_at_most_fdr():
    rng = np.random.default_rng(4)
    p = 8
    theta = _chain_precision(p)
    S = np.linalg.inv(theta) + _symmetric_noise(rng, p, 0.01, 1)[0]
    result = edge_inference(S, n_samples=2000, noise_variance=1e-4, fdr=0.05)
    assert np.array_equal(result.selected, result.q_value <= 0.05)
    assert np.allclose(result.q_value, stats.false_discovery_control(result.p_value))
    # The chain's edges are strong: all found, and nothing else at this noise.
    chain = result.target - result.source == 1
    assert result.selected[chain].all()


# ---------------------------------------------------------------------------------------
# pieces
# ---------------------------------------------------------------------------------------


def test_support_refit_solves_dempsters_equations():
    rng = np.random.default_rng(5)
    p = 7
    A = rng.standard_normal((40, p))
    S = A.T @ A / 40
    support = np.abs(_chain_precision(p)) > 0
    support[0, 4] = support[4, 0] = True
    theta, _, converged = support_refit(S, support)
    assert converged
    W = np.linalg.inv(theta)
    assert np.allclose(W[support], S[support], atol=1e-8)
    assert np.all(theta[~support] == 0)
    assert np.all(np.linalg.eigvalsh(theta) > 0)


def test_support_refit_refuses_a_release_without_positive_definite_completion():
    S = np.array([[1.0, 2.0], [2.0, 1.0]])  # indefinite, full support
    with pytest.raises(inference.NoSolutionError):
        support_refit(S, np.ones((2, 2), dtype=bool))


def test_radial_gains_match_simulation():
    # Ten eigenvalues spread over two decades, rows clipped at their median norm: the
    # gamma (two-moment) approximation is within 1.5 % of 400 000 simulated rows.
    rng = np.random.default_rng(6)
    eigenvalues = np.geomspace(0.003, 0.3, 10)
    squared = rng.standard_normal((400_000, 10)) ** 2
    Q = squared @ eigenvalues
    bound_squared = float(np.median(Q))
    weights = np.minimum(1.0, bound_squared / Q)
    simulated = (weights[:, None] * squared).mean(axis=0)
    approximated = inference._radial_gains(eigenvalues, bound_squared)
    # The spread across eigenvalues is what the correction uses.
    assert np.allclose(approximated / approximated.mean(), simulated / simulated.mean(),
                       rtol=0.015)
    assert np.allclose(approximated, simulated, rtol=0.02)


def test_clipping_correction_recovers_the_population_partial_correlations():
    # Rows shrunk onto the ball at their median norm shrink the partial correlations; the
    # correction undoes it (Gaussian working model, no noise, a large sample).
    rng = np.random.default_rng(7)
    p, n = 6, 200_000
    theta = _chain_precision(p, 0.45)
    X = rng.standard_normal((n, p)) @ np.linalg.cholesky(0.1 * np.linalg.inv(theta)).T
    model = ClippingModel(row_norm_bound=float(np.median(np.linalg.norm(X, axis=1))),
                          box=None, recenter=False)
    Z = model.clip(X)
    S = Z.T @ Z / n
    truth = _partial(theta)[np.triu_indices(p, 1)]
    edges = np.abs(truth) > 0
    plain = edge_inference(S, n_samples=n, noise_variance=0.0)
    corrected = edge_inference(S, n_samples=n, noise_variance=0.0, clipping=model)
    # The same rows unclipped: their estimate carries the same sampling error, so the
    # comparison isolates the clipping bias.
    unclipped = edge_inference(X.T @ X / n, n_samples=n, noise_variance=0.0)
    sign = np.sign(truth[edges])

    def bias(result):  # towards the truth's sign: clipping pulls towards 0
        return np.mean((result.partial_correlation - unclipped.partial_correlation)[edges] * sign)

    assert bias(plain) < -0.03
    assert abs(bias(corrected)) < 0.1 * abs(bias(plain))


def test_the_default_corrects_the_intervals_and_tests_the_release_as_clipped():
    rng = np.random.default_rng(8)
    p, n = 6, 5000
    theta = _chain_precision(p, 0.3)
    X = rng.standard_normal((n, p)) @ np.linalg.cholesky(0.1 * np.linalg.inv(theta)).T
    model = ClippingModel(row_norm_bound=float(np.median(np.linalg.norm(X, axis=1))),
                          box=None, recenter=False)
    Z = model.clip(X)
    S = Z.T @ Z / n + np.diag(np.full(p, 1e-4))
    default = edge_inference(S, n_samples=n, noise_variance=1e-8, clipping=model)
    everything = edge_inference(S, n_samples=n, noise_variance=1e-8, clipping=model,
                                clipping_correction="all")
    as_clipped = edge_inference(S, n_samples=n, noise_variance=1e-8)
    for name in ("partial_correlation", "ci_low", "ci_high", "std_error"):
        np.testing.assert_array_equal(getattr(default, name), getattr(everything, name))
    for name in ("p_value", "q_value", "selected", "null_std_error"):
        np.testing.assert_array_equal(getattr(default, name), getattr(as_clipped, name))
    # The two halves differ: the correction moved the edges' estimates away from 0.
    edges = np.abs(_partial(theta)[np.triu_indices(p, 1)]) > 0
    assert np.all(np.abs(default.partial_correlation[edges])
                  > np.abs(as_clipped.partial_correlation[edges]))


def _clipped_release(p: int, weight: float, n: int, seed: int):
    """A large sample's clipped second moment and the clipping (rows shrunk onto the ball
    at their median norm): a release without noise whose working model is exact."""
    rng = np.random.default_rng(seed)
    theta = _chain_precision(p, weight)
    theta[0, 1] = theta[1, 0] = -0.9  # a strong edge beside weak ones
    theta += 0.6 * np.eye(p)
    X = rng.standard_normal((n, p)) @ np.linalg.cholesky(0.09 * np.linalg.inv(theta)).T
    model = ClippingModel(row_norm_bound=float(np.median(np.linalg.norm(X, axis=1))),
                          box=None, recenter=False)
    Z = model.clip(X)
    return Z.T @ Z / n, model


def _jacobian(function, S: np.ndarray, step: float = 1e-7) -> np.ndarray:
    """Central differences of ``function(S)`` (pairs) over every released entry (upper
    triangle, diagonal included, mirrored)."""
    p = S.shape[0]
    upper = np.triu_indices(p)
    rows = []
    for i, j in zip(*upper):
        bump = np.zeros((p, p))
        bump[i, j] = bump[j, i] = step
        rows.append((function(S + bump) - function(S - bump)) / (2 * step))
    return np.array(rows)


def test_corrected_standard_errors_include_the_correction_s_own_variability():
    # The clipping correction is estimated from the release it corrects, so it moves with
    # the release's errors. Reference: finite-difference Jacobians of the whole pipeline
    # (the correction re-estimated at every bump, or held at its value), pushed through the
    # Gaussian sampling covariance of the release and through white noise. The standard
    # errors with and without the correction's variability must stand in the same ratio
    # (earlier versions held it fixed: at p = 7 the weak edges' spread was 5-15 % wider
    # than their stated standard error).
    p, n = 7, 400_000
    S, model = _clipped_release(p, 0.25, n, seed=11)
    full = np.linalg.inv(S)  # a dense pilot: the refit is the inverse, smooth in S

    def corrected(matrix):
        return edge_inference(matrix, n_samples=1000, noise_variance=0.0, precision=full,
                              clipping=model, clipping_correction="all",
                              tail_allowance=0.0).partial_correlation

    base = edge_inference(S, n_samples=1000, noise_variance=0.0, precision=full,
                          clipping=model, clipping_correction="all")
    fixed_correction = base.clipping_correction

    def held(matrix):
        return edge_inference(matrix + fixed_correction, n_samples=1000, noise_variance=0.0,
                              precision=full).partial_correlation

    # A step the refit's convergence test registers (at 1e-7 it stops at its start).
    J_full, J_held = _jacobian(corrected, S, 3e-5), _jacobian(held, S, 3e-5)
    upper = np.triu_indices(p)
    cov = np.array([[S[a, c] * S[b, d] + S[a, d] * S[b, c] for c, d in zip(*upper)]
                    for a, b in zip(*upper)])
    reference_sampling = (np.einsum("xk,xy,yk->k", J_full, cov, J_full)
                          / np.einsum("xk,xy,yk->k", J_held, cov, J_held))
    reference_noise = np.sum(J_full**2, axis=0) / np.sum(J_held**2, axis=0)
    strong = np.abs(base.partial_correlation) > 0.5
    # The noise ratio leaves out the diagonal term of the symmetric noise's variance
    # (2 ||X||^2 - sum_l X_ll^2): within 1 % except for the strong edge (6 %).
    for noise_variance, n_samples, reference, tolerance in (
            (0.0, 1000, reference_sampling, (0.002, 0.002)),
            (1e-8, 10**12, reference_noise, (0.01, 0.07))):
        kwargs = dict(n_samples=n_samples, noise_variance=noise_variance, clipping=model,
                      clipping_correction="all", excess_kurtosis=0.0, precision=full)
        with_variability = edge_inference(S, **kwargs)
        without = edge_inference(S, correction_variance=False, **kwargs)
        ratio = (with_variability.std_error / without.std_error) ** 2
        np.testing.assert_allclose(ratio[~strong], reference[~strong], rtol=tolerance[0])
        np.testing.assert_allclose(ratio[strong], reference[strong], rtol=tolerance[1])
        # and the effect is not negligible here: the check has teeth.
        assert np.max(np.abs(reference - 1.0)) > 0.08


def test_bootstrap_agrees_with_the_closed_form_on_a_simple_release():
    rng = np.random.default_rng(8)
    p, n, sigma = 5, 2000, 2e-3
    theta = _chain_precision(p)
    X = rng.standard_normal((n, p)) @ np.linalg.cholesky(np.linalg.inv(theta)).T
    S = X.T @ X / n + _symmetric_noise(rng, p, sigma, 1)[0]
    result = edge_inference(S, n_samples=n, noise_variance=sigma**2, method="bootstrap",
                            n_bootstrap=200)
    assert result.method == "bootstrap"
    assert 0.85 < result.diagnostics["se_ratio"] < 1.15


def test_bootstrap_simulates_the_clipping():
    # Records clipped at their median norm (box, ball, recentering): the bootstrap re-simulates
    # that from the released quantities and agrees with the closed form.
    rng = np.random.default_rng(10)
    p, n, sigma = 6, 3000, 1e-3
    theta = _chain_precision(p, 0.45)
    X = rng.standard_normal((n, p)) @ np.linalg.cholesky(0.08 * np.linalg.inv(theta)).T
    model = ClippingModel(row_norm_bound=float(np.median(np.linalg.norm(X, axis=1))), box=1.0)
    Z = model.clip(X)
    S = Z.T @ Z / n + _symmetric_noise(rng, p, sigma, 1)[0]
    result = edge_inference(S, n_samples=n, noise_variance=sigma**2, clipping=model,
                            method="bootstrap", n_bootstrap=150)
    assert result.clipping_correction is not None
    assert 0.85 < result.diagnostics["se_ratio"] < 1.15
    # The bias the bootstrap finds is small next to the standard error: the closed-form
    # correction already removed the clipping bias.
    assert np.median(np.abs(result.diagnostics["bootstrap_bias"]) / result.std_error) < 0.25


# ---------------------------------------------------------------------------------------
# what a budget can detect
# ---------------------------------------------------------------------------------------


def test_detectable_without_noise_solves_the_power_equation():
    # No noise and no other edge expected (one selection: the cut-off is the Bonferroni-like
    # first step of Benjamini-Hochberg, |z| > Phi^{-1}(1 - fdr / (2m))). The null standard
    # error of the test, from the pilot without the pair (the independence model), is
    # 1 / sqrt(n) whatever the edge's strength; the estimate's is (1 - t^2) / sqrt(n).
    # (A bound far above the rows' norms: no clipping.) The default assumes no other edge.
    n, p = 2000, 10
    t = detectable_partial_correlation(n, p, 0.0, row_norm_bound=1e3)
    assert t == detectable_partial_correlation(n, p, 0.0, row_norm_bound=1e3, expected_edges=0)
    cutoff = stats.norm.isf(0.1 / (2 * 45))
    reference = 0.1
    for _ in range(200):
        reference = (cutoff + stats.norm.ppf(0.8) * (1 - reference**2)) / math.sqrt(n)
    assert t == pytest.approx(reference, rel=1e-7)
    # More edges expected: more selections, a lower cut-off, a lower threshold.
    assert detectable_partial_correlation(n, p, 0.0, row_norm_bound=1e3,
                                          expected_edges=20) < t


def test_detectable_is_on_the_population_scale_of_a_clipped_release():
    # The test of "no edge" reads the release as clipped, which shrinks an edge: the figure
    # is the population strength whose clipped strength solves the power equation. The
    # shrinkage against 400 000 simulated rows (an isolated pair among p = 10 independent
    # rescaled columns, rows shrunk onto the ball at their median norm).
    rng = np.random.default_rng(12)
    p, t, v = 10, 0.3, inference.RESCALED_VARIANCE
    covariance = v * np.eye(p)
    covariance[0, 1] = covariance[1, 0] = t * v
    X = rng.standard_normal((400_000, p)) @ np.linalg.cholesky(covariance).T
    bound = expected_row_norm_bound(p)
    Z = ClippingModel(row_norm_bound=bound, box=None, recenter=False).clip(X)
    simulated = np.corrcoef(Z[:, :2].T)[0, 1]
    assert simulated < 0.95 * t  # clipping shrinks it by about 7 % at p = 10
    assert inference._clipped_partial(t, 0.0, v, p, bound**2) == pytest.approx(simulated,
                                                                              abs=0.003)
    n = 2000
    population = detectable_partial_correlation(n, p, 0.0)
    unclipped = detectable_partial_correlation(n, p, 0.0, row_norm_bound=1e3)
    assert population > 1.05 * unclipped
    assert inference._clipped_partial(population, 0.0, v, p, bound**2) == pytest.approx(
        unclipped, rel=1e-6)


def test_detectable_grows_with_noise_and_shrinks_with_samples():
    base = detectable_partial_correlation(5000, 30, 5e-4)
    assert detectable_partial_correlation(5000, 30, 1e-3) > base
    assert detectable_partial_correlation(20000, 30, 5e-4) < base
    assert detectable_partial_correlation(5000, 30, 5e-4, fdr_method="by") > base
    assert detectable_partial_correlation(5000, 30, 1.0) == math.inf


def test_expected_row_norm_bound_is_the_chi_square_quantile():
    v = inference.RESCALED_VARIANCE
    assert v == pytest.approx(1 / (5 * 0.6744897501960817) ** 2)
    assert expected_row_norm_bound(30) == pytest.approx(math.sqrt(v * stats.chi2.ppf(0.5, 30)))


# ---------------------------------------------------------------------------------------
# output and refusals
# ---------------------------------------------------------------------------------------


def test_frame_and_matrix_views():
    p = 4
    S = np.linalg.inv(_chain_precision(p))
    result = edge_inference(S, n_samples=1000, noise_variance=0.0)
    frame = result.to_frame(["a", "b", "c", "d"])
    assert list(frame.columns[:8]) == ["source", "target", "partial_correlation", "ci_low",
                                       "ci_high", "p_value", "q_value", "selected"]
    assert len(frame) == p * (p - 1) // 2
    assert isinstance(frame, pd.DataFrame)
    assert frame["p_value"].is_monotonic_increasing
    matrix = result.matrix("partial_correlation")
    assert np.allclose(matrix, matrix.T) and np.all(np.diag(matrix) == 1)
    assert np.all((result.ci_low <= result.partial_correlation)
                  & (result.partial_correlation <= result.ci_high))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"noise_variance": -1.0}, "noise_variance must be a finite number >= 0"),
        ({"noise_variance": float("nan")}, "noise_variance must be a finite number >= 0"),
        ({"n_samples": 1}, "n_samples must be an integer >= 2"),
        ({"n_samples": 10.5}, "n_samples must be an integer"),
        ({"confidence_level": 1.0}, "confidence_level must be in the open interval (0, 1)"),
        ({"fdr": 0.0}, "fdr must be in the open interval (0, 1)"),
        ({"fdr_method": "holm"}, "fdr_method must be one of"),
        ({"method": "exact"}, "method must be one of"),
        ({"n_bootstrap": 5}, "n_bootstrap must be an integer >= 10"),
        ({"alpha": -0.1}, "alpha must be a finite number >= 0"),
        ({"alpha": "cv"}, "alpha must be a number >= 0 or 'auto'"),
        ({"precision": np.eye(3)}, "precision must have the shape of noisy_covariance"),
        ({"precision": -np.eye(4)}, "precision must be positive definite"),
        ({"clipping": 1.0}, "clipping must be a ClippingModel"),
        ({"clipping": ClippingModel(row_norm_bound=-1.0)}, "row_norm_bound must be a finite"),
        ({"clipping": ClippingModel(row_norm_bound=1.0, mean=np.zeros(3))},
         "mean must be a finite vector of length 4"),
        ({"random_state": "secure"}, "random_state must be an integer seed"),
        ({"clipping_correction": "tests"}, "clipping_correction must be one of"),
        ({"clipping_correction": True}, "clipping_correction must be one of"),
        ({"noise_distribution": "cauchy"}, "noise_distribution must be one of"),
        ({"noise_distribution": "laplace", "method": "bootstrap"}, "simulates Gaussian noise"),
    ],
)
def test_bad_arguments_are_refused_with_their_name(kwargs, message):
    S = np.linalg.inv(_chain_precision(4))
    arguments = {"n_samples": 100, "noise_variance": 0.0, **kwargs}
    with pytest.raises((ValueError, TypeError)) as error:
        edge_inference(S, **arguments)
    assert message in str(error.value)


def test_bad_matrices_are_refused():
    with pytest.raises(ValueError, match="noisy_covariance must be a square"):
        edge_inference(np.ones((3, 4)), n_samples=10, noise_variance=0.0)
    with pytest.raises(ValueError, match="noisy_covariance must be symmetric"):
        edge_inference(np.array([[1.0, 0.5], [0.1, 1.0]]), n_samples=10, noise_variance=0.0)
    with pytest.raises(ValueError, match="noisy_covariance must contain only finite"):
        edge_inference(np.array([[1.0, np.nan], [np.nan, 1.0]]), n_samples=10,
                       noise_variance=0.0)
    with pytest.raises(ValueError, match="p_values must lie in"):
        false_discovery_control([0.1, 1.5])
    with pytest.raises(ValueError, match="noise_sigma must be a finite number >= 0"):
        detectable_partial_correlation(100, 5, -1.0)


def test_an_indefinite_release_still_gives_finite_answers():
    rng = np.random.default_rng(9)
    p = 12
    S = np.linalg.inv(_chain_precision(p)) + _symmetric_noise(rng, p, 0.3, 1)[0]
    assert np.linalg.eigvalsh(S)[0] < 0
    result = edge_inference(S, n_samples=500, noise_variance=0.09)
    for name in ("partial_correlation", "std_error", "ci_low", "ci_high", "p_value", "q_value"):
        assert np.all(np.isfinite(getattr(result, name))), name


def test_laplace_noise_p_values_are_the_laplace_tail_plus_the_sampling_part():
    from dpggm.solvers.inference import _laplace_noise_p_values

    t = np.array([0.5, 2.0, 5.0, 8.0])
    # Noise alone: the Laplace law of variance v has P(|L| > t) = exp(-t sqrt(2 / v)).
    pure = _laplace_noise_p_values(t, np.zeros(4), np.ones(4))
    np.testing.assert_allclose(pure[1:], np.exp(-t[1:] * np.sqrt(2.0)), rtol=1e-5)
    # Sampling alone: the normal tail.
    normal = _laplace_noise_p_values(t, np.ones(4), np.zeros(4))
    np.testing.assert_allclose(normal, 2 * stats.norm.sf(t), rtol=1e-9)
    # Both: against a simulation of N(0, 1) + Laplace of variance 1.
    rng = np.random.default_rng(11)
    draws = rng.standard_normal(2_000_000) + rng.laplace(0.0, np.sqrt(0.5), 2_000_000)
    both = _laplace_noise_p_values(t[:3], np.ones(3), np.ones(3))
    simulated = np.array([np.mean(np.abs(draws) > x) for x in t[:3]])
    np.testing.assert_allclose(both, simulated, rtol=0.03)
    # The Laplace tail is heavier than the normal one of the same variance.
    assert _laplace_noise_p_values(np.array([4.0]), np.array([0.5]), np.array([0.5]))[0] \
        > 2 * stats.norm.sf(4.0)


# ---------------------------------------------------------------------------------------
# the test's null distribution, heavy tails, speed of the missing-value term
# ---------------------------------------------------------------------------------------


def test_the_null_standard_error_does_not_grow_with_the_edge_tested():
    # An isolated edge of partial correlation t between two variables of unit variance,
    # released with noise: the test's standard error under "no edge" must not depend on t
    # (the old test took it from the pilot containing the edge: it grew by 50 % from t = 0
    # to 0.85 and a strong edge went unselected).
    n, sigma2 = 2000, 4e-4
    errors, p_values = [], []
    for t in (0.0, 0.3, 0.6, 0.85):
        covariance = np.array([[1.0, t], [t, 1.0]])
        result = edge_inference(covariance, n_samples=n, noise_variance=sigma2,
                                precision=np.linalg.inv(covariance))
        errors.append(result.null_std_error[0])
        p_values.append(result.p_value[0])
    assert np.ptp(errors) < 1e-6 * errors[0]
    assert errors[0] == pytest.approx(math.sqrt(1 / n + sigma2), rel=1e-6)
    assert np.all(np.diff(p_values) <= 0)
    old = [edge_inference(np.array([[1.0, t], [t, 1.0]]), n_samples=n, noise_variance=sigma2,
                          precision=np.linalg.inv(np.array([[1.0, t], [t, 1.0]])),
                          test="pilot").null_std_error[0] for t in (0.0, 0.85)]
    assert old[1] > 1.4 * old[0]


def test_null_pilot_standard_error_matches_a_refit_without_the_pair():
    # The closed-form null pilot against the maximum-likelihood pilot refitted with the
    # tested pair's entry held at zero (support_refit), pair by pair, on a chain with a
    # chord: the noise variances agree within 8 % (the closed form keeps the pair's
    # regressions on the rest; the refit also re-matches the neighbours' covariances).
    p, n, sigma2 = 8, 2000, 1e-4
    theta = _chain_precision(p) + 0.3 * np.eye(p)
    theta[0, 3] = theta[3, 0] = 0.2
    S = np.linalg.inv(theta)
    result = edge_inference(S, n_samples=n, noise_variance=sigma2, precision=theta,
                            excess_kurtosis=0.0)
    for index, (j, k) in enumerate(zip(result.source, result.target)):
        if theta[j, k] == 0:
            continue
        support = theta != 0
        support[j, k] = support[k, j] = False
        refit, _, _ = support_refit(S, support, start=np.diag(np.diag(theta)))
        _, r, diagonal = inference._debiased(S, refit)
        c, a, b = inference._coefficients(r, diagonal, null=True)
        noise = inference._noise_variance(refit, c, a, b, sigma2)[j, k]
        assert result.null_std_error[index] ** 2 - 1 / n == pytest.approx(noise, rel=0.08)


def test_power_rises_with_the_strength_of_a_single_edge():
    # Seeded releases of a 12-variable table with one edge: the new test finds a stronger
    # edge at least as often (noise dominating: sigma comparable to the sampling error).
    rng = np.random.default_rng(11)
    p, n, sigma = 12, 1500, 0.02
    found = {}
    for t in (0.15, 0.3, 0.6, 0.85):
        theta = np.eye(p)
        theta[0, 1] = theta[1, 0] = -t
        factor = np.linalg.cholesky(np.linalg.inv(theta))
        hits = 0
        for E in _symmetric_noise(rng, p, sigma, 30):
            x = rng.standard_normal((n, p)) @ factor.T
            result = edge_inference(x.T @ x / n + E, n_samples=n, noise_variance=sigma**2)
            hits += bool(result.selected[0])
        found[t] = hits
    values = list(found.values())
    assert values == sorted(values), found
    assert found[0.6] >= 27 and found[0.85] == 30, found


def test_clipped_excess_kurtosis_bounds_the_records_kurtosis():
    # Records clipped onto a ball: the public bound p B^2 / ((p + 2) tr S) - 1 is at least
    # the elliptical excess kurtosis of the clipped records, near 0 for Gaussian records
    # clipped at their median norm and larger for t5 records.
    rng = np.random.default_rng(3)
    p, n = 20, 50000
    bounds = {}
    for name in ("gaussian", "t5"):
        x = rng.standard_normal((n, p))
        if name == "t5":
            x /= np.sqrt(rng.chisquare(5, (n, 1)) / 5)
        norms = np.linalg.norm(x, axis=1)
        B = float(np.median(norms))
        y = x * np.minimum(1.0, B / norms)[:, None]
        squared = (y**2).sum(axis=1)
        actual = p * np.mean(squared**2) / ((p + 2) * np.mean(squared) ** 2) - 1
        bounds[name] = inference.clipped_excess_kurtosis(float(squared.mean()), B, p)
        assert bounds[name] >= actual - 1e-3
    assert bounds["gaussian"] < 0.05 < bounds["t5"]


def test_heavy_tailed_records_keep_the_coverage_of_a_strong_edge():
    # t5 records rescaled and clipped as PrivateGraph does (box at median +- 5 MAD, ball at
    # the median norm), 100 000 of them: the Gaussian working model leaves a strong edge
    # shrunk by several standard errors; the tail allowance extends the interval over it.
    rng = np.random.default_rng(8)
    p, n = 10, 100_000
    theta = np.eye(p)
    theta[0, 1] = theta[1, 0] = -0.85
    theta[2, 3] = theta[3, 2] = -0.4
    x = rng.standard_normal((n, p)) @ np.linalg.cholesky(np.linalg.inv(theta)).T
    x /= np.sqrt(rng.chisquare(5, (n, 1)) / 5)
    median = np.median(x, axis=0)
    spread = np.median(np.abs(x - median), axis=0)
    z = np.clip((x - median) / (5 * spread), -1, 1)
    norms = np.linalg.norm(z, axis=1)
    B = float(np.median(norms))
    z = z * np.minimum(1, B / norms)[:, None]
    z -= z.mean(axis=0)
    S = z.T @ z / n
    clipping = ClippingModel(row_norm_bound=B, box=1.0, recenter=False)
    honest = edge_inference(S, n_samples=n, noise_variance=0.0, clipping=clipping)
    trusting = edge_inference(S, n_samples=n, noise_variance=0.0, clipping=clipping,
                              tail_allowance=0.0)
    for index, truth in ((0, 0.85), (list(zip(honest.source, honest.target)).index((2, 3)),
                                     0.4)):
        assert honest.ci_low[index] <= truth <= honest.ci_high[index]
        assert honest.ci_low[index] == trusting.ci_low[index]  # only the outer end moves
    assert not (trusting.ci_low[0] <= 0.85 <= trusting.ci_high[0])


def _missing_extra_variance_loop(theta, working, c, a, b, present, n):
    """The per-row loop the matrix form replaced (the reference for its test)."""
    p = theta.shape[0]
    delta = 1.0 / np.asarray(present, dtype=float) - 1.0
    s_diag = np.diag(working)
    W = theta @ working
    G = W @ theta
    out = np.zeros((p, p))
    for j in range(p):
        k = np.arange(p)
        aj, bj, cj = a[j], b[j], c[j]
        tj = theta[:, j][None, :]
        tk = theta.T
        m_diag = aj[:, None] * tj**2 + cj[:, None] * tj * tk + bj[:, None] * tk**2
        wj = W[j][None, :]
        ms_diag = (tj * (aj[:, None] * wj + 0.5 * cj[:, None] * W)
                   + tk * (0.5 * cj[:, None] * wj + bj[:, None] * W))
        g11, g12, g22 = G[j, j], G[j, k], G[k, k]
        d11, d12, d22 = aj, 0.5 * cj, bj
        e11 = d11 * (d11 * g11 + d12 * g12) + d12 * (d11 * g12 + d12 * g22)
        e12 = d11 * (d12 * g11 + d22 * g12) + d12 * (d12 * g12 + d22 * g22)
        e22 = d12 * (d12 * g11 + d22 * g12) + d22 * (d12 * g12 + d22 * g22)
        msm_diag = e11[:, None] * tj**2 + 2 * e12[:, None] * tj * tk + e22[:, None] * tk**2
        one = (4 * s_diag * msm_diag + 8 * ms_diag**2 - 12 * s_diag * m_diag * ms_diag
               + 3 * s_diag**2 * m_diag**2)
        weight = delta * s_diag
        a11 = (tj**2 * weight).sum(axis=1)
        a12 = (tj * tk * weight).sum(axis=1)
        a22 = (tk**2 * weight).sum(axis=1)
        da11, da12 = d11 * a11 + d12 * a12, d11 * a12 + d12 * a22
        da21, da22 = d12 * a11 + d22 * a12, d12 * a12 + d22 * a22
        out[j] = (one @ delta + 6 * (da11**2 + 2 * da12 * da21 + da22**2)) / n
    return np.maximum(0.5 * (out + out.T), 0.0)


@pytest.mark.parametrize("p", [3, 9, 25])
def test_missing_value_term_as_matrix_products_equals_the_loop(p):
    rng = np.random.default_rng(p)
    A = 0.2 * rng.standard_normal((p, p))
    theta = 2.0 * np.eye(p) + (A + A.T) / 2
    working = np.linalg.inv(theta)
    _, r, diagonal = inference._debiased(working + 0.01 * np.eye(p), theta)
    present = rng.uniform(0.5, 1.0, p)
    present[::3] = 1.0
    for coefficients in (inference._coefficients(r, diagonal, null=False),
                         inference._null_pilot_coefficients(theta, diagonal)):
        fast = inference._missing_extra_variance(theta, working, *coefficients, present, 100)
        slow = _missing_extra_variance_loop(theta, working, *coefficients, present, 100)
        off = ~np.eye(p, dtype=bool)  # the pairs (the diagonal is no pair)
        np.testing.assert_allclose(fast[off], slow[off], rtol=1e-10, atol=1e-300)
    assert not inference._missing_extra_variance(theta, working, *coefficients,
                                                 np.ones(p), 100).any()
