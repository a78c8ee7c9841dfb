"""Edge inference on the covariance-perturbation estimators' release (``inference_``,
``infer``): calibrated against population partial correlations, independent of the
estimator's own penalty, and refused, with the reason, for releases it does not describe."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpggm import ZCDP
from dpggm.estimators.edges import INFERENCE_COLUMNS
from dpggm.estimators.precision import GraphicalLasso, RidgePrecision, ThresholdedCovariance
from dpggm.privacy.budgets import ApproxDP, NonPrivate, PureDP


def _chain(p: int, rng: np.random.Generator) -> np.ndarray:
    """A chain whose partial correlations are spread over [0.05, 0.45], random signs."""
    strengths = np.exp(rng.uniform(math.log(0.05), math.log(0.45), size=p - 1))
    theta = np.eye(p)
    for j, s in enumerate(strengths * rng.choice([-1.0, 1.0], size=p - 1)):
        theta[j, j + 1] = theta[j + 1, j] = -s
    return theta


def _population_partial(theta: np.ndarray, table, names) -> np.ndarray:
    d = np.sqrt(np.diag(theta))
    partial = -theta / np.outer(d, d)
    index = {name: j for j, name in enumerate(names)}
    return partial[[index[a] for a in table["source"]], [index[b] for b in table["target"]]]


def test_glasso_inference_is_calibrated_against_the_population():
    """Seeded: 24 releases of 10-variable chains (n = 5 000, rho = 0.3): the selected
    pairs' false-discovery proportion averages at most the target plus three Monte-Carlo
    standard errors, and the 90 % intervals cover the population partial correlations
    0.85-0.95 of the time."""
    rng = np.random.default_rng(7)
    p, n, fits = 10, 5000, 24
    names = [f"x{j}" for j in range(p)]
    fdp, covered = [], []
    for _ in range(fits):
        theta = _chain(p, rng)
        X = rng.multivariate_normal(np.zeros(p), np.linalg.inv(theta), size=n)
        est = GraphicalLasso(budget=ZCDP(0.3), bounds="l2:12", center="private",
                             random_state=int(rng.integers(2**31))).fit(X)
        table = est.inference_
        assert list(table.columns) == list(INFERENCE_COLUMNS) and len(table) == 45
        truth = _population_partial(theta, table, names)
        selected = table["selected"].to_numpy()
        fdp.append((selected & (truth == 0)).sum() / max(selected.sum(), 1))
        covered.append(np.mean((table["ci_low"] <= truth) & (truth <= table["ci_high"])))
    assert np.mean(fdp) <= 0.1 + 3 * np.std(fdp) / math.sqrt(fits)
    assert 0.85 <= np.mean(covered) <= 0.95


def test_inference_reads_the_release_not_the_penalty():
    rng = np.random.default_rng(3)
    X = rng.multivariate_normal(np.zeros(6), np.linalg.inv(_chain(6, rng)), size=3000)
    options = {"budget": ZCDP(1.0), "bounds": "l2:10", "random_state": 11}
    auto = GraphicalLasso(**options).fit(X)
    dense = GraphicalLasso(alpha=1e-4, **options).fit(X)
    ridge = RidgePrecision(**options).fit(X)
    # One release (same seed, same plan): the same inference whatever is solved on it.
    assert np.array_equal(auto.noisy_covariance_, dense.noisy_covariance_)
    for other in (dense, ridge):
        np.testing.assert_allclose(other.inference_["partial_correlation"],
                                   auto.inference_["partial_correlation"], atol=1e-6)
    assert auto.entry_noise_std_ > 0
    assert ThresholdedCovariance(**options).fit(X).inference_ is not None
    # A non-private run: sampling error only.
    exact = GraphicalLasso(budget=NonPrivate(), bounds="l2:10").fit(X)
    assert exact.entry_noise_std_ == 0 and exact.inference_["selected"].any()


def test_add_remove_reads_the_released_count():
    rng = np.random.default_rng(5)
    X = rng.multivariate_normal(np.zeros(5), np.linalg.inv(_chain(5, rng)), size=4000)
    est = GraphicalLasso(budget=ZCDP(1.0), bounds="l2:10", neighbors="add-remove",
                         random_state=2).fit(X)
    # n is private under add/remove: the inference uses the released noisy count.
    assert est.n_samples_ != 4000
    from dpggm.solvers.inference import edge_inference

    direct = edge_inference(est.noisy_covariance_, n_samples=est.n_samples_,
                            noise_variance=est.entry_noise_std_ ** 2,
                            precision=est.precision_, alpha=est.alpha_,
                            clipping=None).to_frame([f"x{j}" for j in range(5)])
    ours = est.infer(clipping_correction="none").to_frame([f"x{j}" for j in range(5)])
    np.testing.assert_allclose(ours["p_value"], direct["p_value"])


@pytest.mark.parametrize("budget, mechanism, reason", [
    (PureDP(1.0), "laplace", "Laplace noise"),
    (ApproxDP(1.0, 1e-6), "sulq", "SULQ"),
])
def test_releases_the_closed_form_does_not_describe_are_refused(budget, mechanism, reason):
    X = np.random.default_rng(0).normal(size=(2000, 4))
    est = GraphicalLasso(budget=budget, bounds="l2:5", mechanism=mechanism,
                         random_state=0).fit(X)
    assert est.inference_ is None
    with pytest.raises(ValueError, match=reason):
        est.infer()
