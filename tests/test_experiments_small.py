"""Tiny configurations of the paper experiments (private_precision,
covariance_perturbation, thresholding) and their shared machinery: structure of the
returned tables and the qualitative trends the papers report."""

from __future__ import annotations

import math
import os
import stat

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpggm.experiments._common import (
    aggregate,
    check_out_dir,
    format_mean_se,
    gaussian_row_norm_bound,
    loglog_slope,
    mean_and_standard_error,
    repetition_rng,
    write_csv,
)
from dpggm.experiments.covariance_perturbation import run_covariance_perturbation
from dpggm.experiments.private_precision import run_private_precision
from dpggm.experiments.thresholding import run_thresholding

# ---------------------------------------------------------------------------------------
# shared machinery


def test_repetition_rng_is_keyed_and_reproducible():
    a = repetition_rng(7, "noise", 3, 0.5).standard_normal(5)
    b = repetition_rng(7, "noise", 3, 0.5).standard_normal(5)
    c = repetition_rng(7, "noise", 3, 1.5).standard_normal(5)
    d = repetition_rng(8, "noise", 3, 0.5).standard_normal(5)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert not np.allclose(a, d)


@pytest.mark.parametrize("bad", [-1, 1.5, "0", True, None])
def test_repetition_rng_rejects_a_non_integer_seed(bad):
    with pytest.raises(ValueError, match="random_state must be an integer >= 0"):
        repetition_rng(bad, "x")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=30))
def test_mean_and_standard_error_match_scipy(values):
    mean, se, count = mean_and_standard_error(values)
    assert count == len(values)
    assert mean == pytest.approx(float(np.mean(values)), rel=1e-9, abs=1e-6)
    assert se == pytest.approx(float(stats.sem(values)), rel=1e-9, abs=1e-6)


def test_mean_and_standard_error_skip_failures_and_handle_small_sets():
    assert mean_and_standard_error([1.0, math.nan, 3.0])[:2] == pytest.approx((2.0, 1.0))
    mean, se, count = mean_and_standard_error([4.0])
    assert (mean, count) == (4.0, 1) and math.isnan(se)
    mean, se, count = mean_and_standard_error([math.nan])
    assert count == 0 and math.isnan(mean) and math.isnan(se)


def test_aggregate_counts_failures_per_group():
    records = pd.DataFrame({"g": ["a", "a", "a", "b", "b"], "err": [1.0, 2.0, math.nan, 5.0, 7.0]})
    table = aggregate(records, by=["g"], metrics=["err"]).set_index("g")
    assert table.loc["a", "err_mean"] == pytest.approx(1.5)
    assert table.loc["a", "err_se"] == pytest.approx(stats.sem([1.0, 2.0]))
    assert (table.loc["a", "n_reps"], table.loc["a", "n_failed"]) == (3, 1)
    assert (table.loc["b", "n_reps"], table.loc["b", "n_failed"]) == (2, 0)


@settings(max_examples=30, deadline=None)
@given(st.floats(-3, 3), st.floats(0.01, 100))
def test_loglog_slope_recovers_a_power_law(exponent, constant):
    x = np.array([1.0, 3.0, 10.0, 40.0])
    assert loglog_slope(x, constant * x**exponent) == pytest.approx(exponent, abs=1e-9)


def test_loglog_slope_is_nan_without_two_distinct_points():
    assert math.isnan(loglog_slope([2.0, 2.0], [1.0, 3.0]))
    assert math.isnan(loglog_slope([1.0, 2.0], [1.0, -1.0]))


def test_format_mean_se():
    assert format_mean_se(12.345, 0.5, digits=3) == "12.3 (0.5)"
    assert format_mean_se(250.0, 1.0, limit=200.0) == "NA"
    assert format_mean_se(math.nan, 1.0) == "NA"
    assert format_mean_se(1.5, math.nan) == "1.5"


def test_gaussian_row_norm_bound_tail_holds_empirically():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    covariance = A @ A.T + 0.5 * np.eye(6)
    tail = 0.01
    bound = gaussian_row_norm_bound(covariance, tail=tail)
    draws = rng.multivariate_normal(np.zeros(6), covariance, size=50_000)
    exceed = float(np.mean(np.linalg.norm(draws, axis=1) > bound))
    assert exceed <= tail


@pytest.mark.parametrize("p", [1, 10, 40])
def test_gaussian_row_norm_bound_against_the_exact_chi_square_tail(p):
    # For Σ = s² I, ‖x‖² / s² is chi-square with p degrees of freedom.
    tail, s = 0.01, 1.7
    bound = gaussian_row_norm_bound(s**2 * np.eye(p), tail=tail)
    exact = stats.chi2.sf(bound**2 / s**2, df=p)
    assert exact <= tail
    assert exact >= tail / 100  # conservative, but not vacuous


def test_write_csv_refuses_to_overwrite_and_leaves_no_temporary_files(tmp_path):
    frame = pd.DataFrame({"a": [1, 2]})
    path = write_csv(frame, tmp_path / "t.csv")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        write_csv(pd.DataFrame({"a": [3]}), path)
    assert pd.read_csv(path)["a"].tolist() == [1, 2]
    write_csv(pd.DataFrame({"a": [3]}), path, overwrite=True)
    assert pd.read_csv(path)["a"].tolist() == [3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


def test_check_out_dir_reports_conflicts_before_work(tmp_path):
    (tmp_path / "x.csv").write_text("keep")
    with pytest.raises(FileExistsError, match="x.csv"):
        check_out_dir(tmp_path, ["x.csv", "y.csv"], overwrite=False)
    assert check_out_dir(tmp_path, ["x.csv"], overwrite=True) == tmp_path
    assert check_out_dir(None, ["x.csv"], overwrite=False) is None


# ---------------------------------------------------------------------------------------
# Su, Guo & Zhang


def test_private_precision_tiny_errors_fall_with_epsilon(tmp_path):
    result = run_private_precision(
        models=(3,),
        n_features=8,
        sample_sizes=(200,),
        epsilons=(0.3, 3.0),
        repetitions=3,
        alpha_factors=(10.0,),
        auto_alpha=False,
        roc=True,
        roc_repetitions=1,
        out_dir=tmp_path,
    )
    errors = result["errors"]
    for column in ("rel_l1_mean", "rel_l1_se", "rel_fro_mean", "rel_spectral_se", "n_failed"):
        assert column in errors
    assert set(errors["method"]) == {"DP-RP", "DP-AGL", "DP-AGL raw release (paper)"}
    assert (errors["n_failed"] == 0).all()
    assert errors["calibration"].str.startswith("exact through zCDP").all()
    assert errors.loc[errors["epsilon"] >= 1, "calibration"].str.contains("not valid").all()
    for _, group in errors.groupby("method"):
        group = group.set_index("epsilon")
        for norm in ("l1", "fro", "spectral"):
            assert group.loc[3.0, f"rel_{norm}_mean"] < group.loc[0.3, f"rel_{norm}_mean"]
    assert (result["trend"]["slope_vs_n_epsilon"] < 0).all()
    assert result["settings"]["clipped_fraction_mean"].iloc[0] < 0.05
    assert "model3 fro" in result["table1_dp_rp"]
    # Edge recovery: the non-private path beats the private one at epsilon = 1.
    auc = result["roc_auc"].set_index(["model", "budget"])["auc_mean"]
    for model in (3, 4):
        assert auc[(model, "non-private")] > auc[(model, "epsilon=1")]
    written = {p.name for p in tmp_path.iterdir()}
    assert {"private_precision_errors.csv", "private_precision_roc.png",
            "private_precision_trend.csv"} <= written
    assert (tmp_path / "private_precision_roc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(FileExistsError):
        run_private_precision(models=(3,), n_features=8, roc=False, out_dir=tmp_path)


def test_private_precision_paper_setting_steps(tmp_path):
    n, epsilons = 200, (0.5, 2.0)
    result = run_private_precision(
        n_features=8, models=(2,), sample_sizes=(n,), epsilons=epsilons, repetitions=1,
        roc=False, settings=("paper", "honest", "data-max", "data-max+cv"), out_dir=tmp_path,
    )
    assert {"errors", "paper_setting"} <= set(result)
    table = result["paper_setting"]
    assert list(dict.fromkeys(table["setting"])) == ["data-max", "data-max+cv", "paper"]
    assert set(table["method"]) == {"DP-RP", "DP-AGL"}
    assert table["validity"].str.startswith("data-dependent").all()
    paper = table[(table["setting"] == "paper") & (table["method"] == "DP-RP")].set_index("epsilon")
    # The paper's noise: sigma = (sqrt(2)/n) sqrt(2 ln(1.25 n)) / epsilon for rows of norm 1
    # (the exact sampler's grid adds a little, never less).
    for epsilon in epsilons:
        classical = math.sqrt(2) / n * math.sqrt(2 * math.log(1.25 * n)) / epsilon
        assert classical <= paper.loc[epsilon, "sigma_mean"] <= classical * 1.01
    assert paper.loc[0.5, "epsilon_delivered_mean"] < 0.5
    assert "not proven" in paper.loc[2.0, "calibration"]
    # The first two steps spend the (epsilon, delta) asked, as the honest run does.
    steps = table[table["setting"] != "paper"]
    np.testing.assert_allclose(steps["epsilon_delivered_mean"], steps["epsilon"])
    # Cross-validated penalties differ from the fixed ones of the data-max step.
    penalty = table.set_index(["setting", "method", "epsilon"])["penalty_value_mean"]
    assert penalty[("data-max", "DP-AGL", 0.5)] != penalty[("data-max+cv", "DP-AGL", 0.5)]
    assert (tmp_path / "private_precision_paper_setting.csv").exists()
    assert (tmp_path / "private_precision_errors.csv").exists()
    alone = run_private_precision(n_features=8, models=(2,), sample_sizes=(n,), epsilons=(0.5,),
                        repetitions=1, roc=False, settings=("data-max",))
    assert set(alone) == {"paper_setting", "timing", "environment"}
    with pytest.raises(ValueError, match="settings must be"):
        run_private_precision(settings=("paper's",))


def test_private_precision_heldout_likelihood_is_the_gaussian_log_density():
    from dpggm.experiments.private_precision import _heldout_loglik

    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 4))
    precision = np.array([[2.0, 0.3, 0, 0], [0.3, 1.5, 0, 0], [0, 0, 1.0, 0.2],
                          [0, 0, 0.2, 1.2]])
    S = X.T @ X / len(X)
    density = stats.multivariate_normal(np.zeros(4), np.linalg.inv(precision)).logpdf(X).mean()
    assert 0.5 * _heldout_loglik(precision, S) - 2 * math.log(2 * math.pi) == pytest.approx(
        density, rel=1e-12)
    assert _heldout_loglik(np.diag([1.0, -1.0, 1.0, 1.0]), S) == -math.inf


def test_private_precision_rejects_bad_arguments():
    with pytest.raises(ValueError, match="repetitions must be an integer >= 1"):
        run_private_precision(repetitions=0)
    with pytest.raises(ValueError, match="models must be a non-empty subset"):
        run_private_precision(models=(5,))
    with pytest.raises(ValueError, match="epsilons"):
        run_private_precision(epsilons=(-1.0,))


# ---------------------------------------------------------------------------------------
# Wang, Huai & Xu


def test_covariance_perturbation_tiny_gaussian_beats_laplace_and_marks_invalid_methods():
    result = run_covariance_perturbation(n_features=5, ratios=(600.0,), epsilons=(0.5, 1.0),
                                         repetitions=2)
    ordering = result["ordering"]
    floor = ordering[ordering["postprocessing"] == "library repair"].set_index("epsilon")
    assert floor.loc[1.0, "gaussian_mean"] < floor.loc[1.0, "laplace_mean"]
    assert bool(floor.loc[1.0, "gaussian_better"])
    errors = result["errors"]
    assert {"rel_fro_mean", "rel_fro_se", "n_reps", "n_failed", "validity"} <= set(errors)
    approx = result["table2_approx_dp"]
    wishart = approx[approx["method"].str.startswith("Wishart (Sheffet)")].set_index("epsilon")
    assert (wishart.loc[1.0].iloc[:, -1] == "n/a (ε ≥ 1)").all()
    assert not wishart.loc[[0.5]].iloc[:, -1].str.startswith("n/a").any()
    pure = result["table1_pure_dp"]
    invalid = pure[pure["method"].str.contains("INVALID guarantee")]
    assert set(invalid["method"].str.split(" ").str[0]) == {"Wishart-pure", "Output"}
    output = pure[pure["method"].str.startswith("Output")]
    assert (output.iloc[:, -1] == "NA").all()
    # Private error falls with epsilon for the Gaussian mechanism.
    gaussian = errors[
        (errors["method"] == "Gaussian") & (errors["postprocessing"] == "library repair")
    ]
    gaussian = gaussian.set_index("epsilon")["rel_fro_mean"]
    assert gaussian[1.0] < gaussian[0.5]


def test_covariance_perturbation_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="ratios"):
        run_covariance_perturbation(ratios=(0.0,))
    with pytest.raises(ValueError, match="alpha must be a finite number > 0"):
        run_covariance_perturbation(alpha=-1.0)


# ---------------------------------------------------------------------------------------
# Wang, Xu & He


def test_thresholding_tiny_error_falls_with_n(tmp_path):
    result = run_thresholding(
        sample_sizes=(300, 3_000, 30_000),
        repetitions=2,
        sparsity_ratios=(0.2,),
        dimensions=(10,),
        epsilons=(1.0,),
        sparsity_p=10,
        privacy_p=10,
        panels=("sparsity", "dimension", "privacy"),
        out_dir=tmp_path,
    )
    errors = result["errors"]
    assert {"rel_spectral_mean", "rel_spectral_se", "n_reps", "n_failed"} <= set(errors)
    assert set(errors["model"]) == {"paper"}
    private = errors[(errors["panel"] == "privacy") & (errors["epsilon"] == 1.0)]
    means = private.sort_values("n")["rel_spectral_mean"].to_numpy()
    assert np.all(np.diff(means) < 0)
    reference = errors[(errors["panel"] == "privacy") & (errors["epsilon"] == "non-private")]
    smallest = min(errors["n"])
    assert (
        reference.loc[reference["n"] == smallest, "rel_spectral_mean"].iloc[0]
        < private.loc[private["n"] == smallest, "rel_spectral_mean"].iloc[0]
    )
    trend = result["trend"]
    assert (trend["slope_vs_n"].dropna() < 0).all()
    assert result["settings"]["clipped_fraction_mean"].max() < 0.01
    assert (tmp_path / "thresholding_figure1.png").exists()


def test_thresholding_detectable_panel_keeps_true_entries_at_large_n(tmp_path):
    result = run_thresholding(
        panels=("detectable",), sample_sizes=(1_000, 100_000), repetitions=1,
        detectable_p=20, detectable_epsilons=(2.0,), out_dir=tmp_path,
    )
    errors = result["errors"].set_index(["epsilon", "n"])
    private, reference = errors.loc[(2.0, 100_000)], errors.loc[("non-private", 100_000)]
    assert set(errors["panel"]) == {"detectable"} and set(errors["model"]) == {"detectable"}
    assert private["kept_offdiagonal_mean"] > 0 and private["tpr_mean"] > 0.5
    assert private["fdp_mean"] < 0.1
    assert reference["tpr_mean"] >= private["tpr_mean"]
    # The privacy cost shows in the error, above the non-private line.
    assert errors.loc[(2.0, 1_000), "rel_spectral_mean"] > errors.loc[
        ("non-private", 1_000), "rel_spectral_mean"]
    # The model: Ũ + shift·I has smallest eigenvalue 1 (U = that / 200, then / c²).
    settings_row = result["settings"].iloc[0]
    assert settings_row["smallest_eigenvalue_U"] * settings_row["rescaling_factor_c"] ** 2 * 200 \
        == pytest.approx(1.0, rel=1e-9)
    assert 0 < settings_row["largest_correlation"] < 0.5
    assert (tmp_path / "thresholding_detectable.png").exists()
    assert not (tmp_path / "thresholding_figure1.png").exists()


def test_thresholding_panels_do_not_change_each_others_numbers():
    common = {"sample_sizes": (2_000,), "repetitions": 1, "privacy_p": 8, "epsilons": (1.0,),
              "detectable_p": 8, "detectable_epsilons": (1.0,)}
    alone = run_thresholding(panels=("privacy",), **common)["errors"]
    both = run_thresholding(panels=("privacy", "detectable"), **common)["errors"]
    both = both[both["panel"] == "privacy"].reset_index(drop=True)
    pd.testing.assert_frame_equal(alone, both)


def test_thresholding_rejects_bad_arguments():
    with pytest.raises(ValueError, match="sparsity_ratios"):
        run_thresholding(sparsity_ratios=(1.5,))
    with pytest.raises(ValueError, match="sample_sizes"):
        run_thresholding(sample_sizes=(1,))
    with pytest.raises(ValueError, match="panels must be"):
        run_thresholding(panels=("figure 2",))
