"""A tiny configuration of the PACE-GGM experiment (Ferrando et al.): structure and output files."""

from __future__ import annotations

import numpy as np
import pytest

from dpggm.experiments.pace_ggm import load_unit_box, run_pace_ggm


def test_unit_box_loading_uses_declared_ranges():
    Z, y, how = load_unit_box("diabetes")
    assert Z.shape == (442, 10) and y.shape == (442,)
    assert np.abs(Z).max() <= 1 and np.abs(y).max() <= 1
    assert "clinical" in how


def test_small_run_tables_and_files(tmp_path):
    tables = run_pace_ggm(datasets=("diabetes",), rhos=(0.5, 5.0), repetitions=2,
                         out_dir=tmp_path, random_state=1)
    errors = tables["errors"]
    assert set(errors["method"]) == {"pace", "ssp", "diagonal", "separate", "adaptive"}
    assert np.all(np.isfinite(errors["mahalanobis_mean"]))
    # More budget, smaller error, for every method.
    for _, rows in errors.groupby("method"):
        assert rows.sort_values("rho")["frobenius_mean"].is_monotonic_decreasing
    assert set(tables["regression"]["method"]) >= {"adassp", "least squares from pace"}
    assert (tables["measured"]["measured_offdiag_mean"] >= 0).all()
    for name in ("errors", "measured", "runtime", "regression"):
        assert (tmp_path / f"pace_ggm_{name}.csv").exists()
    assert (tmp_path / "pace_ggm_errors.png").exists()


def test_breast_cancer_is_centered_clipped_and_has_the_diagnosis_column():
    Z, y, how = load_unit_box("breast_cancer")
    assert Z.shape == (569, 31) and y is None
    assert np.abs(Z).max() <= 1
    # Centered by the sample mean before clipping: what clipping moved stays small.
    assert np.abs(Z.mean(axis=0)).max() < 0.1
    # 357 benign (+1) of 569: centered, malignant is -1.2548, clipped to -1.
    assert set(np.unique(Z[:, -1]).round(6)) == {-1.0, round(1 - (2 * 357 / 569 - 1), 6)}
    assert "centered" in how and "diagnosis" in how
    raw, _, _ = load_unit_box("breast_cancer", center=False, diagnosis=False)
    assert raw.shape == (569, 30) and raw.min() == -1 and raw.max() == 1
    # Centering then clipping is what the loader does to the uncentered records.
    with_label, _, _ = load_unit_box("breast_cancer", center=False)
    np.testing.assert_allclose(Z, np.clip(with_label - with_label.mean(axis=0), -1, 1))


def test_diabetes_target_is_centered_too():
    Z, y, _ = load_unit_box("diabetes")
    assert abs(float(y.mean())) < 0.05 and np.abs(y).max() <= 1
    assert np.abs(Z.mean(axis=0)).max() < 0.05


def test_unclipped_variant_has_the_noise_of_the_bound_one():
    # Centered records in [-2, 2] measured with noise for the bound 1 at rho: the variant
    # runs the bound 2 at 16 rho. With the uniform sensitivity 2 B^2 / n, the first
    # round's Gaussian measurement has sigma^2 = (2 / n)^2 / (2 rho_meas) with
    # rho_meas = (1 - beta) (1 - alpha) rho / (d (d - 1)), computed here from the paper.
    from dpggm.estimators.pace import PACECovariance
    from dpggm.experiments.pace_ggm import _VARIANT_DEFAULTS, _breast_cancer_variant
    from dpggm.mechanisms.bounds import Box
    from dpggm.privacy.budgets import ZCDP

    W = _breast_cancer_variant({**_VARIANT_DEFAULTS, "after_centering": "none"}, None)
    assert 1 < np.abs(W).max() <= 2
    n, d, rho = W.shape[0], W.shape[1], 0.5
    fit = PACECovariance(budget=ZCDP(16 * rho), bounds=Box(2.0), entry_sensitivity="paper",
                         max_rounds=d * (d - 1), random_state=3).fit(W)
    rho_meas = 0.5 * 0.7 * rho / (d * (d - 1))
    expected = np.sqrt((2 / n) ** 2 / (2 * rho_meas))
    # Exact noise is drawn on a grid and its sigma rounded up (never less noise).
    assert expected <= fit.history_[0].sigma <= expected * (1 + 1e-3)


def test_variants_change_one_thing_at_a_time(tmp_path):
    from dpggm.experiments.pace_ggm import run_pace_ggm_variants

    ids = np.arange(569) * 1000 + 8670
    tables = run_pace_ggm_variants(
        repetitions=1, rhos=(1.0,), ids=ids, out_dir=tmp_path, random_state=2,
        variants=("as run: d = 31, centered, clipped", "not centered",
                  "record id as a 32nd column (d = 32)",
                  "centered, not clipped (the bound 1 exceeded)"),
    )
    variants = tables["variants"].set_index("variant")
    assert variants["d"].tolist() == [31, 31, 32, 31]
    assert (variants["measured_offdiag_mean"] >= 0).all() and (variants["n_failed"] == 0).all()
    structure = tables["structure"].set_index("variant")
    assert structure.loc["not centered", "outside_box_after_centering"] == 0
    assert 0 < structure.loc["as run: d = 31, centered, clipped", "outside_box_after_centering"] < 0.05
    # Before clipping, correlations are those of the records: the unclipped variant uses them.
    assert structure.loc["centered, not clipped (the bound 1 exceeded)", "mean_abs_r_as_used"] == (
        pytest.approx(structure.loc["as run: d = 31, centered, clipped",
                                    "mean_abs_r_before_clipping"]))
    assert (tmp_path / "pace_ggm_variants.csv").exists()
    assert (tmp_path / "pace_ggm_structure.csv").exists()
    with pytest.raises(ValueError, match="variants must be among"):
        run_pace_ggm_variants(variants=("no such variant",))
    with pytest.raises(ValueError, match="record ids must be 569"):
        run_pace_ggm_variants(ids=[1, 2, 3])


def test_a_numerical_breakdown_of_a_trial_is_counted_as_failed_not_dropped(monkeypatch):
    from dpggm.estimators.pace import PACECovariance
    from dpggm.exceptions import NumericalError
    from dpggm.experiments.pace_ggm import run_pace_ggm_variants

    fit = PACECovariance.fit
    calls = []

    def second_fit_breaks(self, X, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise NumericalError("the maximum-entropy reconstruction broke down")
        return fit(self, X, *args, **kwargs)

    monkeypatch.setattr(PACECovariance, "fit", second_fit_breaks)
    tables = run_pace_ggm_variants(repetitions=3, rhos=(1.0,),
                                   variants=("as run: d = 31, centered, clipped",))
    row = tables["variants"].iloc[0]
    assert (row["n_reps"], row["n_failed"], row["d"]) == (3, 1, 31)
    assert np.isfinite(row["measured_offdiag_mean"])
