"""PACE-GGM: accounting under the filter, structure of the result, bad input."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpggm import GDP, ZCDP, ApproxDP, Box, IncompatibleBudgetError, NonPrivate, PureDP, RowNorm
from dpggm.estimators.pace import PACECovariance


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    p = 6
    cov = 0.5 * np.eye(p) + 0.5 * np.ones((p, p)) * (np.arange(p)[:, None] < 3) * (np.arange(p) < 3)
    cov[np.diag_indices(p)] = 1.0
    X = rng.multivariate_normal(np.zeros(p), cov, size=2000)
    return np.clip(X / 3, -1, 1)


@pytest.mark.parametrize("rho", [1e-3, 0.1, 5.0])
def test_spend_equals_budget_and_never_exceeds(data, rho):
    seen = []
    est = PACECovariance(budget=ZCDP(rho), bounds=Box(1.0), random_state=1,
                         progress=lambda used, total: seen.append(used)).fit(data)
    # Independent sum of the history: diagonal phase plus every round's two spends.
    total = Fraction(est.privacy_.noise["rho_diagonal"]) + sum(
        Fraction(r.rho_select) + Fraction(r.rho_measure) for r in est.history_
    )
    assert abs(float(total) - rho) <= 1e-12 * rho
    assert est.spent_exact_ <= Fraction(rho)
    assert float(est.spent_exact_) == pytest.approx(rho, rel=1e-12)
    assert all(u <= rho for u in seen)
    assert est.n_rounds_ == len(est.history_) >= 1


def test_last_round_spends_the_remainder_and_annealing_is_recorded(data):
    est = PACECovariance(budget=ZCDP(1.0), bounds=Box(1.0), random_state=2).fit(data)
    rounds = est.history_
    # Budgets only grow (annealing doubles/quadruples) until the final round.
    for a, b in zip(rounds[:-2], rounds[1:-1]):
        assert b.rho_select in (a.rho_select, 2 * a.rho_select)
        assert b.rho_measure in (a.rho_measure, 4 * a.rho_measure)
        assert b.rho_measure == 4 * a.rho_measure if a.annealed else b.rho_measure == a.rho_measure


def test_precision_zero_off_measured_pattern(data):
    est = PACECovariance(budget=ZCDP(0.5), bounds=Box(1.0), random_state=3).fit(data)
    measured = np.zeros((6, 6), dtype=bool)
    for j, k in est.measurements_["entries"]:
        measured[j, k] = measured[k, j] = True
    off = ~measured
    scale = np.abs(est.precision_).max()
    assert np.abs(est.precision_[off]).max() <= 1e-6 * scale
    np.testing.assert_allclose(est.precision_ @ est.covariance_, np.eye(6), atol=1e-6)
    assert est.n_measured_offdiag_ == sum(j != k for j, k in est.measurements_["entries"])
    np.testing.assert_array_equal(est.adjacency_, measured & ~np.eye(6, dtype=bool))


def test_large_budget_approaches_second_moment(data):
    S = data.T @ data / len(data)
    est = PACECovariance(budget=ZCDP(1e4), bounds=Box(1.0), random_state=4).fit(data)
    assert np.abs(est.covariance_ - S).max() < 0.05


def test_non_private_reference(data):
    est = PACECovariance(budget=NonPrivate(), bounds=Box(1.0)).fit(data)
    np.testing.assert_allclose(est.covariance_, data.T @ data / len(data))
    assert est.privacy_.validity == "none"


def test_pure_and_gdp_budgets_convert(data):
    est = PACECovariance(budget=PureDP(1.0), bounds=Box(1.0), random_state=5).fit(data)
    assert est.privacy_.budget == ZCDP(0.5)
    est = PACECovariance(budget=GDP(1.0), bounds=Box(1.0), random_state=5).fit(data)
    assert est.privacy_.budget == ZCDP(0.5)


def test_seed_reproducible(data):
    a = PACECovariance(budget=ZCDP(0.2), bounds=Box(1.0), random_state=9).fit(data)
    b = PACECovariance(budget=ZCDP(0.2), bounds=Box(1.0), random_state=9).fit(data)
    np.testing.assert_array_equal(a.covariance_, b.covariance_)


def test_row_norm_bound_refused(data):
    # A wrong kind of bound is a bad value: a ValueError (the contract), not a TypeError.
    with pytest.raises(ValueError, match="bounds must be Box"):
        PACECovariance(budget=ZCDP(1.0), bounds=RowNorm(1.0)).fit(data)


@pytest.mark.parametrize("rho", [0.0, -1.0])
def test_non_positive_rho_refused(data, rho):
    with pytest.raises(ValueError, match="rho"):
        PACECovariance(budget=ZCDP(rho), bounds=Box(1.0)).fit(data)


@pytest.mark.parametrize("name", ["diag_fraction", "select_fraction"])
@pytest.mark.parametrize("value", [0.0, 1.0, -0.2, 1.5])
def test_fractions_outside_unit_interval(data, name, value):
    with pytest.raises(ValueError, match=f"{name} must be a number in \\(0, 1\\)"):
        PACECovariance(budget=ZCDP(1.0), bounds=Box(1.0), **{name: value}).fit(data)


def test_approx_budget_refused(data):
    with pytest.raises(IncompatibleBudgetError, match="zCDP"):
        PACECovariance(budget=ApproxDP(1.0, 1e-6), bounds=Box(1.0)).fit(data)


def test_paper_sensitivity_option(data):
    est = PACECovariance(budget=ZCDP(0.1), bounds=Box(1.0), entry_sensitivity="paper",
                         random_state=0).fit(data)
    assert est.privacy_.noise["selection_sensitivity"] == pytest.approx(2 / 2000)


def test_incremental_scores_equal_full_recomputation(data, monkeypatch):
    import dpggm.estimators.pace as pace

    original = pace._selection_scores
    checked = []

    def checking(S, estimate, scores, changed):
        out = original(S, estimate, scores, changed)
        rows, cols = np.tril_indices(S.shape[0])
        np.testing.assert_array_equal(out, np.abs(S[rows, cols] - estimate[rows, cols]))
        checked.append(changed.size)
        return out

    monkeypatch.setattr(pace, "_selection_scores", checking)
    est = PACECovariance(budget=ZCDP(2.0), bounds=Box(1.0), random_state=6).fit(data)
    assert len(checked) == est.n_rounds_
    # Some round re-solved only part of the variables: the incremental path was exercised.
    assert any(0 < c < data.shape[1] for c in checked) or est.n_rounds_ == 1


# The earlier path (factor-100 barrier steps above 1e-6, uncapped warm stage at 1e-6): it
# stalled on this trial; intermediate barrier weights must rescue it.
_EARLIER_PATH = {
    "_DUAL_COARSE_UNTIL": -6, "_WARM_FROM": -6, "_WARM_STAGE_MAX_ITER": 200,
    "_WARM_RETRY": None, "_PATH_FROM": -6, "_LONG_STEPS": False, "_COORDINATE_STEPS": 0,
}


@pytest.mark.parametrize("path", ["default", "earlier"])
def test_reconstruction_converges_where_a_barrier_stage_used_to_stall(path, monkeypatch):
    # docs/reproduction.md: this trial returned entries of order 1e7 (unconverged barrier
    # stages entered the extrapolation). The reconstruction must converge and stay within
    # the declared box: |Sigma_jk| <= max_j Sigma_jj <= 1 up to the noise.
    import warnings

    from dpggm.solvers import maxent

    if path == "earlier":
        for name, value in _EARLIER_PATH.items():
            monkeypatch.setattr(maxent, name, value)

    from dpggm.exceptions import ConvergenceWarning
    from dpggm.experiments._common import repetition_rng
    from dpggm.experiments.pace_ggm import load_unit_box

    X = load_unit_box("breast_cancer")[0]
    rng = repetition_rng(0, "breast_cancer", 0.1, 3, "pace")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = PACECovariance(budget=ZCDP(0.1), bounds=Box(1.0), random_state=rng).fit(X)
    assert np.max(np.abs(est.covariance_)) <= 1.5


def test_refit_to_a_singular_reconstruction_leaves_no_stale_precision():
    # precision_ is documented as None when the reconstruction is singular: a refit must
    # not keep the previous fit's matrix.
    from dpggm import PACECovariance
    from dpggm.privacy.budgets import ZCDP as _ZCDP

    X = np.random.default_rng(0).uniform(-1, 1, size=(400, 5))
    est = PACECovariance(budget=_ZCDP(5.0), bounds="box:1", random_state=0).fit(X)
    assert hasattr(est, "precision_")
    est.precision_ = np.full((5, 5), 123.0)  # a stand-in for an earlier fit's matrix
    est.fit(X)
    assert est.precision_ is None or not np.any(est.precision_ == 123.0)


def _fit_variants_trial(rho, trial):
    """PACE-GGM on breast cancer as scikit-learn ships it (with the diagnosis, d = 31), not
    centered, with the stream of ``trial`` at ``rho`` of the reproduction's variants run."""
    from dpggm.experiments import pace_ggm
    from dpggm.experiments._common import repetition_rng

    options = {**pace_ggm._VARIANT_DEFAULTS, **pace_ggm.VARIANTS["not centered"]}
    records = pace_ggm._breast_cancer_variant(options, None)
    assert records.shape == (569, 31)
    return PACECovariance(
        budget=ZCDP(rho), bounds=Box(1.0),
        random_state=repetition_rng(0, "variants", "not centered", rho, trial),
    ).fit(records)


def test_a_coordinate_step_onto_the_boundary_of_the_cone_does_not_break_the_fit():
    # Breast cancer as scikit-learn ships it (with the diagnosis, d = 31), not centered, at
    # rho = 0.001 and the stream of trial 10 of the reproduction's variants run: the
    # reconstruction's warm start took a coordinate step whose exact line minimum lies on
    # the boundary of the positive-definite cone to rounding, and numpy.linalg.solve raised
    # "Singular matrix" out of fit. The start now stops before that step.
    estimator = _fit_variants_trial(0.001, 10)
    covariance = estimator.covariance_
    assert np.all(np.isfinite(covariance))
    np.testing.assert_allclose(covariance, covariance.T)
    assert np.linalg.eigvalsh(covariance)[0] >= -1e-9 * np.abs(covariance).max()
    assert estimator.n_measured_offdiag_ >= 1


def test_a_breakdown_inside_the_reconstruction_is_a_numerical_error_naming_it(
    data, monkeypatch
):
    from dpggm.exceptions import NumericalError
    from dpggm.solvers import maxent

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("Singular matrix")

    monkeypatch.setattr(maxent, "_solve_dual_newton", broken)
    message = (r"maximum-entropy reconstruction broke down on a component of \d+ variables "
               r"\(Singular matrix\)")
    estimator = PACECovariance(budget=ZCDP(1.0), bounds=Box(1.0), random_state=0)
    with pytest.raises(NumericalError, match=message):
        estimator.fit(data)
    # The solver's own entry point says the same.
    covariance = np.cov(data, rowvar=False)
    with pytest.raises(NumericalError, match=message):
        maxent.max_entropy_completion(covariance, np.ones_like(covariance))


def test_a_reconstruction_led_astray_by_its_warm_path_is_solved_again_from_scratch():
    # Breast cancer not centered, rho = 10, the stream of trial 15 of the reproduction's
    # variants run: one round's reconstruction, started from the previous round's path,
    # stopped at an estimated relative error of 2.6e-4 (a ConvergenceWarning); solved from
    # a cold start it reaches 2.4e-8. The reconstructor now retries cold and keeps the
    # better solution.
    import warnings

    from dpggm.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        estimator = _fit_variants_trial(10.0, 15)
    covariance = estimator.covariance_
    assert np.all(np.isfinite(covariance))
    assert np.linalg.eigvalsh(covariance)[0] >= -1e-9 * np.abs(covariance).max()
