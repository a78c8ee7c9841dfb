"""Tests of graph recovery from a noisy data release (Guo et al., data-user side)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpggm.datasets.synthetic import make_chain
from dpggm.estimators.graph_baselines import SCIO, NeighborhoodSelection
from dpggm.estimators.noisy_glasso import (
    NoisyGraphicalLasso,
    PostProcessingRecord,
    bias_corrected_covariance,
    noise_variance,
    select_alpha,
)
from dpggm.mechanisms.bounds import Box, RowNorm
from dpggm.mechanisms.publish import publish
from dpggm.metrics.graph import edge_auc
from dpggm.solvers.psd import project_psd


def relative_error(estimate: np.ndarray, truth: np.ndarray) -> float:
    return float(np.linalg.norm(estimate - truth) / np.linalg.norm(truth))


def chain_release(n: int, p: int, snr_db: float, seed: int):
    """A chain sample and its release at an SNR set from the model's (public) power."""
    truth = make_chain(n_samples=n, n_features=p, random_state=seed)
    power = np.trace(truth.covariance) / p
    sigma = math.sqrt(power / 10 ** (snr_db / 10))
    release = publish(truth.X, bounds=RowNorm(100.0), sigma=sigma, random_state=seed + 1000)
    return truth, release


# ------------------------------------------------------------------------ the correction


def test_bias_corrected_covariance_closed_form():
    X = np.random.default_rng(0).normal(size=(50, 4)) + 3.0
    centered = bias_corrected_covariance(X, noise_variance=0.3)
    np.testing.assert_allclose(
        centered, np.cov(X, rowvar=False, bias=True) - 0.3 * 49 / 50 * np.eye(4), atol=1e-12
    )
    raw = bias_corrected_covariance(X, noise_variance=0.3, assume_centered=True)
    np.testing.assert_allclose(raw, X.T @ X / 50 - 0.3 * np.eye(4), atol=1e-12)


def test_bias_corrected_covariance_is_unbiased():
    rng = np.random.default_rng(1)
    X0 = rng.normal(size=(40, 3)) @ np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.3], [0.0, 0.0, 1.0]])
    target = np.cov(X0, rowvar=False, bias=True)
    sigma = 0.8
    draws = 4000
    total = np.zeros((3, 3))
    for _ in range(draws):
        noisy = X0 + rng.normal(0.0, sigma, size=X0.shape)
        total += bias_corrected_covariance(noisy, noise_variance=sigma**2)
    # The Monte Carlo error of each entry is about sigma^2 sqrt(2/40)/sqrt(4000) < 0.003.
    np.testing.assert_allclose(total / draws, target, atol=0.015)


def test_discrete_noise_variance_is_exact():
    sigma = 0.6
    k = np.arange(-60, 61, dtype=float)
    weights = np.exp(-(k**2) / (2 * sigma**2))
    direct = math.fsum((k**2 * weights).tolist()) / math.fsum(weights.tolist())
    assert noise_variance(sigma, discrete=True) == pytest.approx(direct, rel=1e-12)
    assert noise_variance(sigma) == sigma**2
    assert noise_variance(0.0, discrete=True) == 0.0


def test_bias_correction_recovers_precision_better_than_uncorrected():
    for seed in (0, 1):
        truth, release = chain_release(n=2000, p=20, snr_db=5.0, seed=seed)
        corrected = NoisyGraphicalLasso(alpha=0.02, release=release).fit(release.data)
        plain = NoisyGraphicalLasso(alpha=0.02, noise_sigma=0.0).fit(release.data)
        corrected_error = relative_error(corrected.precision_, truth.precision)
        plain_error = relative_error(plain.precision_, truth.precision)
        assert corrected_error < 0.7 * plain_error


def test_auc_trend_with_sample_size():
    small, large = [], []
    for seed in (0, 1):
        truth, release = chain_release(n=300, p=20, snr_db=0.0, seed=seed)
        est = NoisyGraphicalLasso(release=release).fit(release.data)
        small.append(edge_auc(est.edge_scores(), truth.adjacency))
        truth, release = chain_release(n=3000, p=20, snr_db=0.0, seed=seed)
        est = NoisyGraphicalLasso(release=release).fit(release.data)
        large.append(edge_auc(est.edge_scores(), truth.adjacency))
    assert np.mean(large) > 0.99
    assert np.mean(large) > np.mean(small) + 0.02


def test_indefinite_corrected_covariance_is_handled():
    truth, release = chain_release(n=15, p=20, snr_db=10.0, seed=3)
    est = NoisyGraphicalLasso(alpha=1.0, release=release).fit(release.data)
    assert np.linalg.eigvalsh(est.corrected_covariance_)[0] < 0
    assert np.all(np.isfinite(est.precision_))
    assert np.linalg.eigvalsh(est.precision_)[0] > 0
    # The indefinite corrected covariance is repaired by post-processing (recorded), so
    # even coordinate descent, which needs a positive definite start, has a solution.
    assert est.projected_
    assert np.linalg.eigvalsh(est.solver_covariance_)[0] > 0
    cd = NoisyGraphicalLasso(alpha=0.05, release=release, solver="cd").fit(release.data)
    assert np.all(np.isfinite(cd.precision_)) and cd.projected_


def test_discrete_release_end_to_end():
    truth = make_chain(n_samples=3000, n_features=8, random_state=5)
    counts = np.rint(4 * truth.X).astype(int)
    release = publish(counts, bounds=Box(40), sigma=0.9, discrete=True, random_state=0)
    est = NoisyGraphicalLasso(alpha=0.5, release=release).fit(release.data)
    assert est.noise_variance_ == pytest.approx(release.noise_variance, rel=0, abs=0)
    assert est.noise_variance_ < 0.81
    assert edge_auc(est.edge_scores(), truth.adjacency) > 0.95


# ------------------------------------------------------------------- release agreement


def test_release_guarantee_is_carried_and_json_dict_accepted():
    truth, release = chain_release(n=300, p=6, snr_db=20.0, seed=2)
    est = NoisyGraphicalLasso(alpha=0.1, release=release).fit(release.data)
    assert est.privacy_ is release.privacy_
    assert est.noise_sigma_ == release.sigma
    meta = json.loads(json.dumps(release.to_json_metadata()))
    from_json = NoisyGraphicalLasso(alpha=0.1, release=meta, noise_sigma=release.sigma)
    from_json.fit(release.data)
    assert from_json.privacy_.budget == release.privacy_.budget
    np.testing.assert_array_equal(from_json.precision_, est.precision_)


def test_without_release_privacy_is_unknown():
    truth, release = chain_release(n=300, p=6, snr_db=20.0, seed=2)
    est = NoisyGraphicalLasso(alpha=0.1, noise_sigma=release.sigma).fit(release.data)
    assert isinstance(est.privacy_, PostProcessingRecord)
    assert est.privacy_.validity == "unknown"
    assert "not known here" in est.privacy_.reason
    assert not est.privacy_.is_valid


def test_noise_sigma_disagreeing_with_release_refused():
    _, release = chain_release(n=100, p=5, snr_db=20.0, seed=0)
    wrong = release.sigma * 1.01
    with pytest.raises(
        ValueError, match=r"noise_sigma=.* does not match the release's noise sigma="
    ):
        NoisyGraphicalLasso(alpha=0.1, noise_sigma=wrong, release=release).fit(release.data)
    meta = release.to_json_metadata()
    with pytest.raises(ValueError, match="does not match the release's noise sigma"):
        NoisyGraphicalLasso(alpha=0.1, noise_sigma=wrong, release=meta).fit(release.data)
    with pytest.raises(ValueError, match=r"discrete=True does not match the release"):
        NoisyGraphicalLasso(alpha=0.1, release=release, discrete=True).fit(release.data)
    with pytest.raises(ValueError, match="must have format 'dpggm-noisy-release'"):
        NoisyGraphicalLasso(alpha=0.1, release={"noise": {"sigma": 1.0}}).fit(release.data)


def test_bad_parameters_refused():
    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match="noise_sigma is required"):
        NoisyGraphicalLasso(alpha=0.1).fit(X)
    with pytest.raises(ValueError, match="noise_sigma must be a finite number >= 0; got -1"):
        NoisyGraphicalLasso(alpha=0.1, noise_sigma=-1).fit(X)
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0 or 'cv'; got -1.0"):
        NoisyGraphicalLasso(alpha=-1.0, noise_sigma=0.1).fit(X)
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0 or 'cv'; got 'auto'"):
        NoisyGraphicalLasso(alpha="auto", noise_sigma=0.1).fit(X)
    with pytest.raises(ValueError, match="selection must be one of"):
        NoisyGraphicalLasso(noise_sigma=0.1, selection="best").fit(X)
    with pytest.raises(ValueError, match="cv must be an integer >= 2; got 1"):
        NoisyGraphicalLasso(noise_sigma=0.1, cv=1).fit(X)
    with pytest.raises(ValueError, match="grid applies only to discrete=True"):
        NoisyGraphicalLasso(alpha=0.1, noise_sigma=0.1, grid=0.5).fit(X)
    with pytest.raises(ValueError, match="cv=5 folds need at least 10 records"):
        NoisyGraphicalLasso(noise_sigma=0.1).fit(X[:8])
    with pytest.raises(ValueError, match="NaN or infinite"):
        NoisyGraphicalLasso(alpha=0.1, noise_sigma=0.1).fit(np.array([[1.0, np.nan], [0, 1]]))


def test_noise_larger_than_the_data_variance_degrades_gracefully():
    # The regime of an honest per-row guarantee: the noise variance exceeds a column's
    # own variance, so the corrected variance is negative. The estimator floors it (a
    # public post-processing rule), records that, and still returns a graph.
    X = np.random.default_rng(0).normal(size=(200, 3)) * np.array([1.0, 0.1, 1.0])
    est = NoisyGraphicalLasso(alpha=0.1, noise_sigma=0.5).fit(pd.DataFrame(X))
    assert est.diagonal_floored_ == 1
    assert np.all(np.isfinite(est.precision_))
    assert np.all(np.linalg.eigvalsh(est.precision_) > 0)
    assert est.edge_scores().shape == (3, 3)


# --------------------------------------------------------------------- cross-validation


def test_select_alpha_rules_on_a_known_curve():
    alphas = [8.0, 4.0, 2.0, 1.0, 0.5, 0.25]
    mse = [10.0, 9.9, 2.0, 1.05, 1.0, 1.0]
    # Range 9: the drop rule wants MSE <= 10 - 0.99 * 9 = 1.09 and a next step gaining
    # less than 0.09: alpha = 1 (MSE 1.05, next 1.0).
    assert select_alpha(alphas, mse, rule="drop") == (3, False)
    # Minimum MSE: the larger of the two tied penalties.
    assert select_alpha(alphas, mse, rule="min-mse") == (4, False)
    # Order of the grid does not matter.
    assert select_alpha(alphas[::-1], mse[::-1], rule="drop") == (2, False)
    # A flat curve gives the largest penalty; infinite MSE (no solution) is skipped.
    assert select_alpha(alphas, [3.0] * 6, rule="drop") == (0, True)
    assert select_alpha(alphas, [np.inf, 5.0, 1.0, 1.0, np.inf, np.inf], rule="drop") == (2, False)
    with pytest.raises(ValueError, match="no penalty on the grid has a solution"):
        select_alpha(alphas, [np.inf] * 6)
    with pytest.raises(ValueError, match="drop_fraction must be a number in"):
        select_alpha(alphas, mse, drop_fraction=0.0)


def test_cross_validation_results_are_consistent():
    truth, release = chain_release(n=400, p=10, snr_db=20.0, seed=4)
    est = NoisyGraphicalLasso(release=release, cv=4, n_alphas=8).fit(release.data)
    results = est.cv_results_
    assert results["alphas"].shape == (8,)
    assert np.all(np.diff(results["alphas"]) < 0)
    assert results["fold_mse"].shape == (4, 8)
    np.testing.assert_allclose(results["mean_mse"], results["fold_mse"].mean(axis=0))
    index, _ = select_alpha(results["alphas"], results["mean_mse"], rule="drop")
    assert results["selected_index"] == index
    assert est.alpha_ == results["alphas"][index]
    # alpha_max gives a diagonal model.
    assert results["alphas"][0] == pytest.approx(
        np.max(np.abs(est.corrected_covariance_ - np.diag(np.diag(est.corrected_covariance_))))
    )
    by_min = NoisyGraphicalLasso(release=release, cv=4, n_alphas=8, selection="min-mse")
    by_min.fit(release.data)
    assert by_min.alpha_ == results["alphas"][np.argmin(results["mean_mse"])]
    assert edge_auc(est.edge_scores(), truth.adjacency) > 0.95


# ---------------------------------------------------------------------------- baselines


def test_neighborhood_selection_solves_the_covariance_form_lasso():
    truth, release = chain_release(n=1000, p=8, snr_db=20.0, seed=6)
    alpha = 0.05
    est = NeighborhoodSelection(alpha=alpha, noise_sigma=release.sigma, tol=1e-10).fit(release.data)
    S = bias_corrected_covariance(release.data, noise_variance=release.noise_variance)
    S = project_psd(S).estimate
    d = 1 / np.sqrt(np.diag(S))
    R = S * np.outer(d, d)
    for j in range(8):
        others = np.arange(8) != j
        b = est.coef_[j, others]
        gradient = R[np.ix_(others, others)] @ b - R[others, j]
        # KKT conditions of 1/2 b'Rb - r'b + alpha |b|_1.
        assert np.all(np.abs(gradient) <= alpha + 1e-6)
        active = b != 0
        np.testing.assert_allclose(gradient[active], -alpha * np.sign(b[active]), atol=1e-6)
    assert edge_auc(est.edge_scores(), truth.adjacency) > 0.99
    either = NeighborhoodSelection(alpha=alpha, noise_sigma=release.sigma, rule="or")
    assert np.all(est.adjacency_ <= either.fit(release.data).adjacency_)


def test_scio_solves_the_column_problems_and_symmetrises():
    truth, release = chain_release(n=1000, p=8, snr_db=20.0, seed=7)
    alpha = 0.05
    est = SCIO(alpha=alpha, noise_sigma=release.sigma, standardize=False, tol=1e-12).fit(
        release.data
    )
    assert np.allclose(est.precision_, est.precision_.T)
    S = project_psd(
        bias_corrected_covariance(release.data, noise_variance=release.noise_variance)
    ).estimate
    from dpggm.estimators.graph_baselines import scio_columns

    B, _, converged = scio_columns(S, alpha, tol=1e-12, max_iter=5000)
    assert converged
    gradient = S @ B - np.eye(8)
    assert np.all(np.abs(gradient) <= alpha + 1e-8)
    active = B != 0
    np.testing.assert_allclose(gradient[active], -alpha * np.sign(B[active]), atol=1e-8)
    smaller = np.where(np.abs(B) <= np.abs(B.T), B, B.T)
    np.testing.assert_allclose(est.precision_, smaller, atol=1e-10)
    assert edge_auc(est.edge_scores(), truth.adjacency) > 0.99


def test_baselines_validate_input():
    X = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(ValueError, match="alpha must be a finite number > 0; got 0"):
        SCIO(alpha=0).fit(X)
    with pytest.raises(ValueError, match="rule must be one of"):
        NeighborhoodSelection(alpha=0.1, rule="both").fit(X)
    with pytest.raises(ValueError, match="noise_sigma must be a finite number >= 0"):
        SCIO(alpha=0.1, noise_sigma=-0.1).fit(X)


# --------------------------------------------------------------------------- experiment


def test_table_1a_runner_small():
    from dpggm.experiments.noisy_data import run_table_1a

    table, runs, roc = run_table_1a(
        repetitions=2, sample_sizes=(500,), snr_levels=(20.0,), n_features=10, cv=3
    )
    assert list(table["noise"]) == ["no noise", "20 dB"]
    noisy = runs[runs["noise"] == "20 dB"]
    # Honest mu = 2B / sigma for the declared bound and the sigma of each release.
    np.testing.assert_allclose(
        noisy["mu_honest"], 2 * noisy["row_bound_B"] / noisy["sigma"], rtol=2.0**-9
    )
    assert np.all(noisy["mu_paper"] != noisy["mu_honest"])
    assert table.loc[1, "auc_paper"] == 0.934
    assert table.loc[1, "n_reps"] == 2
    assert np.all(table["auc_corrected_mean"] > 0.9)
    assert set(roc[500]) == {None, 20.0}
    # The paper's scoring: against the noiseless fit's graph, which scores itself 1.
    clean = runs[runs["noise"] == "no noise"]
    assert (clean["auc_reference_corrected"] == 1.0).all()
    assert (clean["auc_reference_uncorrected"] == 1.0).all()
    assert table["auc_reference_corrected_mean"].between(0.5, 1.0).all()


def test_reference_auc_against_a_hand_made_graph():
    from types import SimpleNamespace

    from dpggm.experiments.noisy_data import _reference_auc, _reference_graph

    precision = np.array([[2.0, 0.5, 0.0], [0.5, 2.0, 0.1], [0.0, 0.1, 2.0]])
    fit = SimpleNamespace(precision_=precision,
                          edge_scores=lambda: np.abs(precision - np.diag(np.diag(precision))))
    reference = _reference_graph(fit)
    assert reference.tolist() == [[False, True, False], [True, False, True], [False, True, False]]
    assert _reference_auc(fit, reference) == 1.0
    # Scores that rank the one non-edge first: pairs (0,1), (1,2) edges, (0,2) not.
    other = SimpleNamespace(edge_scores=lambda: np.array([[0, 0.2, 0.9], [0.2, 0, 0.1],
                                                          [0.9, 0.1, 0]]))
    assert _reference_auc(other, reference) == 0.0
    # Undefined without a non-edge, or without a fit.
    assert np.isnan(_reference_auc(fit, np.ones((3, 3), dtype=bool)))
    assert np.isnan(_reference_auc(None, reference))


def test_table_1b_variants_small(tmp_path):
    from dpggm.experiments.noisy_data import VARIANTS_1B, run_table_1b, run_table_1b_variants

    common = {"n_samples": 400, "n_features": 30, "sparsities": (0.9,)}
    tables = run_table_1b_variants(
        repetitions=1, out_dir=tmp_path, snr_levels=(20.0,),
        variants=("as run: penalty factor 0.5, diagonal margin 0.1", "penalty factor 0.1",
                  "like for like: penalty factor 0.1, the paper's diagonal"), **common)
    variants = tables["variants"]
    assert list(variants["noise"]) == ["no noise", "no noise", "no noise", "20 dB"]
    first = variants.iloc[0]
    # The first variant repeats the run's streams: the same AUC as run_table_1b.
    table, _, _ = run_table_1b(full=False, **common)
    assert first["auc_mean"] == table.loc[table["noise"] == "no noise",
                                          "auc_corrected_mean"].iloc[0]
    # A smaller penalty keeps more entries.
    assert variants.iloc[1]["edges_mean"] > first["edges_mean"]
    assert variants.iloc[1]["alpha_mean"] == pytest.approx(first["alpha_mean"] / 5)
    assert set(variants["auc_paper"]) == {0.626, 0.623}
    assert VARIANTS_1B[variants.iloc[2]["variant"]]["margin"] == 1e-6
    assert (tmp_path / "noisy_data_1b_variants.csv").exists()
    with pytest.raises(ValueError, match="variants must be among"):
        run_table_1b_variants(variants=("no such",))


def test_run_noisy_data_writes_files(tmp_path, monkeypatch):
    from dpggm.experiments import noisy_data

    original_1a, original_1b = noisy_data.run_table_1a, noisy_data.run_table_1b
    monkeypatch.setattr(
        noisy_data,
        "run_table_1a",
        lambda **kw: original_1a(
            repetitions=1, sample_sizes=(200,), snr_levels=(20.0,), n_features=8, cv=3
        ),
    )
    monkeypatch.setattr(
        noisy_data,
        "run_table_1b",
        lambda **kw: original_1b(
            full=False,
            sparsities=(0.9,),
            n_samples=400,
            n_features=30,
            random_state=kw["random_state"],
        ),
    )
    result = noisy_data.run_noisy_data(out_dir=tmp_path)
    for name in ("table_1a", "runs_1a", "table_1b", "runs_1b"):
        assert (tmp_path / f"noisy_data_{name}.csv").exists()
        assert name in result
    assert (tmp_path / "noisy_data_roc.png").stat().st_size > 0
    assert list(result["table_1b"]["noise"]) == ["no noise", "60 dB", "20 dB"]
    # The environment of the whole run (both tables), in the result and beside the tables.
    environment = dict(zip(result["environment"]["key"], result["environment"]["value"]))
    assert environment["experiment"] == "noisy_data" and environment["random_state"] == "0"
    # wall_seconds is rounded to the millisecond, the cells' timings are not.
    assert float(environment["wall_seconds"]) >= result["timing"]["seconds"].sum() - 0.0005
    written = pd.read_csv(tmp_path / "noisy_data_environment.csv", dtype=str, keep_default_na=False)
    assert written.equals(result["environment"])
    with pytest.raises(FileExistsError, match="already holds"):
        noisy_data.run_noisy_data(out_dir=tmp_path)
