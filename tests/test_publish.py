"""Tests of the noisy data release (Guo et al., publisher side)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from dpggm.exceptions import UnsupportedNeighborsError
from dpggm.mechanisms.bounds import Box, RowNorm, bounds_from_data
from dpggm.mechanisms.publish import (
    NoisyRelease,
    guarantee_from_dict,
    publish,
    read_release_metadata,
)
from dpggm.privacy.budgets import GDP, ZCDP, ApproxDP
from exact_noise_reference import grid_and_inflated

# ------------------------------------------------------------------ independent references


def hockey_stick_gaussian(mu: float, epsilon: float) -> float:
    """delta(epsilon) between N(mu, 1) and N(0, 1) by numerical integration of
    (p - e^eps q)_+ over the region where it is positive (x > eps/mu + mu/2)."""
    start = epsilon / mu + mu / 2

    def integrand(x: float) -> float:
        return stats.norm.pdf(x - mu) - math.exp(epsilon) * stats.norm.pdf(x)

    value, _ = integrate.quad(integrand, start, start + 40.0, epsabs=1e-15, epsrel=1e-11, limit=200)
    return value


def discrete_gaussian_variance_by_summation(sigma: float, grid: float = 1.0) -> float:
    """Var of grid * N_Z(0, sigma^2 / grid^2): direct sums over |k| <= 40 sigma/grid + 40."""
    scale = sigma / grid
    reach = int(40 * scale) + 40
    weights = [math.exp(-(k * k) / (2 * scale * scale)) for k in range(-reach, reach + 1)]
    second = math.fsum(k * k * w for k, w in zip(range(-reach, reach + 1), weights))
    return grid * grid * second / math.fsum(weights)


def discrete_hockey_stick(sigma: float, shift: int, epsilon: float) -> float:
    """delta(epsilon) between N_Z(shift, sigma^2) and N_Z(0, sigma^2) by direct summation."""
    reach = int(40 * sigma) + 40 + abs(shift)
    k = np.arange(-reach, reach + 1, dtype=float)
    q = np.exp(-(k**2) / (2 * sigma**2))
    p = np.exp(-((k - shift) ** 2) / (2 * sigma**2))
    q /= q.sum()
    p /= p.sum()
    return float(np.sum(np.maximum(p - math.exp(epsilon) * q, 0.0)))


@pytest.fixture
def X() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(400, 4)) * 0.6


# ---------------------------------------------------------------------- honest accounting


def test_exact_release_is_zcdp_with_the_grid_allowance(X):
    release = publish(X, bounds=RowNorm(1.5), sigma=0.75, random_state=0)
    assert isinstance(release, NoisyRelease)
    grid, inflated = grid_and_inflated(3.0, 2.0, 0.75)
    assert release.privacy_.noise["grid"] == grid
    rho = release.privacy_.budget.rho
    assert Fraction(rho) >= Fraction(inflated) ** 2 / (2 * Fraction(release.sigma) ** 2)
    assert rho == pytest.approx(inflated**2 / (2 * 0.75**2), rel=1e-12)
    # Every released value is an exact multiple of the grid.
    assert np.all(np.mod(release.data, grid) == 0)


def test_mu_is_two_b_over_sigma_exactly(X):
    release = publish(X, bounds=RowNorm(1.5), sigma=0.75, random_state=0, noise="float")
    assert isinstance(release, NoisyRelease)
    assert release.privacy_.budget == GDP(4.0)
    assert release.privacy_.noise["l2_sensitivity"] == 3.0
    # Float noise is never valid (Mironov 2012); the seed is a further reason.
    assert release.privacy_.validity == "invalid"
    assert "noise='float'" in release.privacy_.reason and "seeded" in release.privacy_.reason
    assert release.privacy_.neighbors == "replace"
    assert release.sigma == 0.75
    assert release.noise_variance == 0.5625


@settings(max_examples=40, deadline=None)
@given(
    bound=st.floats(min_value=1e-3, max_value=1e3),
    sigma=st.floats(min_value=1e-3, max_value=1e3),
)
def test_stated_mu_never_below_exact_ratio(bound, sigma):
    data = np.zeros((2, 2))
    mu = publish(
        data, bounds=RowNorm(bound), sigma=sigma, random_state=0, noise="float"
    ).privacy_.budget.mu
    exact = 2 * Fraction(bound) / Fraction(sigma)
    assert Fraction(mu) >= exact
    assert mu == pytest.approx(float(exact), rel=4e-16)


def test_epsilon_delta_matches_hockey_stick_integral(X):
    release = publish(
        X, bounds=RowNorm(1.0), sigma=4.0, report_delta=1e-5, random_state=0, noise="float"
    )
    mu = release.privacy_.budget.mu
    assert mu == 0.5
    approx = release.privacy_.approx_dp
    assert approx.delta == 1e-5
    assert hockey_stick_gaussian(mu, approx.epsilon) == pytest.approx(1e-5, rel=1e-6)
    # The reported epsilon is the smallest: slightly less gives delta above the target.
    assert hockey_stick_gaussian(mu, approx.epsilon * (1 - 1e-4)) > 1e-5


def test_box_and_add_remove_sensitivities(X):
    box = publish(X, bounds=Box((0.1, 0.2, 0.2, 0.4)), sigma=1.0, random_state=0)
    assert box.privacy_.noise["l2_sensitivity"] == pytest.approx(2 * 0.5, rel=1e-15)
    # n noisy rows reveal n: no release of records is private under add/remove.
    with pytest.raises(UnsupportedNeighborsError, match="reveals n"):
        publish(X, bounds=RowNorm(2.0), sigma=1.0, neighbors="add-remove", random_state=0)


def test_mu_target_and_epsilon_delta_target(X):
    by_mu = publish(X, bounds=RowNorm(1.0), mu=0.5, random_state=0, noise="float")
    assert by_mu.sigma == pytest.approx(4.0, rel=1e-15)
    assert by_mu.privacy_.budget.mu <= 0.5
    # Exact noise delivers mu^2/2-zCDP for a mu target.
    exact = publish(X, bounds=RowNorm(1.0), mu=0.5, random_state=0)
    assert exact.privacy_.budget == ZCDP(0.125)
    assert exact.sigma == pytest.approx(4.0, rel=2e-3)
    by_eps = publish(
        X, bounds=RowNorm(1.0), epsilon=1.0, delta=1e-6, random_state=0, noise="float"
    )
    # Analytic calibration: the mechanism meets (1, 1e-6) tightly.
    assert by_eps.privacy_.budget == ApproxDP(1.0, 1e-6)
    mu = 2.0 / by_eps.sigma
    assert hockey_stick_gaussian(mu, 1.0) == pytest.approx(1e-6, rel=1e-5)
    assert by_eps.privacy_.report_delta == 1e-6
    assert by_eps.privacy_.approx_dp.epsilon <= 1.0


def test_paper_accounting_is_present_separate_and_flagged(X):
    bound = 1.0
    release = publish(
        X, bounds=RowNorm(bound), sigma=0.3, report_delta=1e-5, random_state=0, noise="float"
    )
    assert "paper_accounting" not in release.privacy_.notes
    assert "paper_accounting" not in release.privacy_.to_json()
    paper = release.privacy_.curator_notes["paper_accounting"]
    assert (
        paper["status"] == "data-dependent: computed from the private data, not a formal guarantee"
    )
    assert paper["theorem"] == "4.1"
    # Independent evaluation of Theorem 4.1 on the clipped records.
    norms = np.linalg.norm(X, axis=1)
    clipped = X * np.minimum(1.0, bound / norms)[:, None]
    n = X.shape[0]
    delta_f = 2 * (clipped.max() - clipped.min()) ** 2 / n
    C = (clipped**2).sum(axis=0).min() / n**2
    assert paper["mu"] == pytest.approx(delta_f / (0.3 * math.sqrt(2 * C)), rel=1e-12)
    assert paper["mu"] != release.privacy_.budget.mu
    # The paper's figure is not the guarantee and stays out of the published metadata.
    assert release.privacy_.budget == GDP(2 * bound / 0.3)
    published = release.to_json_metadata()
    assert "paper_accounting" not in json.dumps(published)
    curator = release.to_json_metadata(include_curator_only=True)
    assert curator["privacy"]["curator_notes"]["paper_accounting"]["mu"] == pytest.approx(
        paper["mu"]
    )


def test_paper_discrete_accounting_uses_theorem_4_4():
    data = np.array([[1, -2, 3], [2, 2, -1], [-3, 1, 1], [1, 1, 2]])
    release = publish(data, bounds=Box(3), sigma=2.0, discrete=True, random_state=0)
    paper = release.privacy_.curator_notes["paper_accounting"]
    n = 4
    delta_f = 2 * (3 - (-3)) ** 2 / n
    K = 1 / n
    assert paper["theorem"] == "4.4"
    assert paper["mu"] == pytest.approx((delta_f + 2 * K) / (math.sqrt(2 * n) * K * 2.0))


def test_snr_db_sets_sigma_from_power_and_is_data_dependent(X):
    bound = 1.0
    release = publish(X, bounds=RowNorm(bound), snr_db=20.0, random_state=0)
    norms = np.linalg.norm(X, axis=1)
    clipped = X * np.minimum(1.0, bound / norms)[:, None]
    power = float(np.mean(clipped**2))
    assert release.sigma**2 == pytest.approx(power / 100.0, rel=1e-12)
    assert release.privacy_.validity == "data-dependent"
    assert "snr_db" in release.privacy_.reason
    assert not release.privacy_.is_valid


def test_data_derived_bound_is_data_dependent(X):
    release = publish(X, bounds=bounds_from_data(X, kind="l2"), sigma=1.0, random_state=0)
    assert release.privacy_.validity == "data-dependent"
    assert "read off the private data" in release.privacy_.reason


# --------------------------------------------------------------------- release contents


def test_rows_are_clipped_before_noise():
    data = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, -10.0]])
    release = publish(data, bounds=RowNorm(1.0), sigma=1e-12, random_state=0)
    expected = np.array([[0.6, 0.8], [0.3, 0.4], [0.0, -1.0]])
    # The grid is 1024 times finer than sigma: the release is within a few sigma.
    np.testing.assert_allclose(release.data, expected, atol=1e-10)
    assert release.privacy_.noise["grid"] <= 1e-12 / 1024
    assert "clipped" in release.privacy_.notes["clipping"]


def test_dataframe_in_dataframe_out_and_array_in_array_out(X):
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"], index=np.arange(100, 500))
    out = publish(frame, bounds=RowNorm(1.0), sigma=0.5, random_state=0)
    assert isinstance(out.data, pd.DataFrame)
    assert list(out.data.columns) == ["a", "b", "c", "d"]
    # Row labels are often identifiers: not copied unless declared public.
    assert out.data.index.equals(pd.RangeIndex(400))
    public = publish(frame, bounds=RowNorm(1.0), sigma=0.5, random_state=0, index_public=True)
    assert public.data.index.equals(frame.index)
    assert out.columns == ["a", "b", "c", "d"]
    array_out = publish(X, bounds=RowNorm(1.0), sigma=0.5, random_state=0)
    assert isinstance(array_out.data, np.ndarray)
    np.testing.assert_allclose(array_out.data, out.data.to_numpy(), rtol=1e-14, atol=1e-15)


def test_noise_has_the_stated_scale():
    data = np.zeros((20000, 3))
    release = publish(data, bounds=RowNorm(1.0), sigma=0.7, random_state=1)
    # A chi-square interval for the sample variance of 60000 draws.
    assert np.var(release.data) == pytest.approx(0.49, rel=0.03)


def test_seed_reproducible(X):
    a = publish(X, bounds=RowNorm(1.0), sigma=0.5, random_state=7)
    b = publish(X, bounds=RowNorm(1.0), sigma=0.5, random_state=7)
    np.testing.assert_array_equal(a.data, b.data)
    # Reproducible by whoever holds the seed: not a private release, and the seed is
    # written nowhere.
    assert a.privacy_.validity == "none" and "seeded" in a.privacy_.reason
    assert "7" not in a.privacy_.random_state
    assert '"7"' not in json.dumps(a.to_json_metadata()) and "seed 7" not in json.dumps(
        a.to_json_metadata()
    )


def test_metadata_round_trip(X):
    release = publish(X, bounds=RowNorm(1.0), sigma=0.5, random_state=0)
    text = json.dumps(release.to_json_metadata())
    meta = read_release_metadata(json.loads(text))
    assert meta["sigma"] == 0.5
    assert meta["discrete"] is False
    assert meta["guarantee"].budget == release.privacy_.budget
    assert meta["guarantee"].neighbors == "replace"
    rebuilt = guarantee_from_dict(release.privacy_.to_dict())
    assert rebuilt.budget == release.privacy_.budget


# ----------------------------------------------------------------------------- discrete


def test_discrete_keeps_integers_and_reports_zcdp():
    data = np.random.default_rng(3).integers(-4, 5, size=(300, 3))
    release = publish(data, bounds=RowNorm(5.0), sigma=1.5, discrete=True, random_state=0)
    assert release.data.dtype == np.int64
    # Rho = Delta^2 / (2 sigma^2) with Delta = 2B, as an exact fraction; the stated rho is
    # the nearest float not below it.
    exact = Fraction(10) ** 2 / (2 * Fraction(1.5) ** 2)
    budget = release.privacy_.budget
    assert isinstance(budget, ZCDP)
    assert Fraction(budget.rho) >= exact
    assert budget.rho == pytest.approx(float(exact), rel=4e-16)
    assert "Theorem 14" in release.privacy_.notes["guarantee"]
    frame = pd.DataFrame(data, columns=["u", "v", "w"])
    out = publish(frame, bounds=Box(4), sigma=1.5, discrete=True, random_state=0)
    assert all(dtype == np.int64 for dtype in out.data.dtypes)


def test_discrete_grid_keeps_the_lattice():
    data = 2 * np.random.default_rng(4).integers(-3, 4, size=(200, 2))
    release = publish(data, bounds=Box(6), sigma=3.0, discrete=True, grid=2, random_state=0)
    assert release.data.dtype == np.int64
    assert np.all(release.data % 2 == 0)
    halves = publish(data / 4, bounds=Box(6), sigma=0.5, discrete=True, grid=0.5, random_state=0)
    assert np.all(halves.data * 2 == np.round(halves.data * 2))


@pytest.mark.parametrize(("sigma", "grid"), [(0.4, None), (0.9, None), (1.3, None), (3.0, 0.5)])
def test_discrete_variance_matches_direct_summation(sigma, grid):
    data = np.zeros((2, 2), dtype=int)
    release = publish(data, bounds=Box(1), sigma=sigma, discrete=True, grid=grid, random_state=0)
    expected = discrete_gaussian_variance_by_summation(sigma, 1.0 if grid is None else grid)
    assert release.noise_variance == pytest.approx(expected, rel=1e-12, abs=0)
    if sigma < 1:
        assert release.noise_variance < sigma**2


def test_discrete_noise_has_the_stated_variance():
    release = publish(
        np.zeros((30000, 1), dtype=int), bounds=Box(1), sigma=0.8, discrete=True, random_state=2
    )
    assert np.mean(release.data.astype(float) ** 2) == pytest.approx(
        release.noise_variance, rel=0.03
    )


def test_discrete_guarantee_is_sound_and_gdp_would_not_be():
    # One coordinate, Box(1): neighbouring values differ by at most 2.
    sigma = 1.0
    release = publish(
        np.zeros((1, 1), dtype=int),
        bounds=Box(1),
        sigma=sigma,
        discrete=True,
        report_delta=1e-3,
        random_state=0,
    )
    approx = release.privacy_.approx_dp
    assert discrete_hockey_stick(sigma, 2, approx.epsilon) <= 1e-3
    # The continuous 2/sigma-GDP profile understates the discrete Gaussian's delta here.
    assert discrete_hockey_stick(sigma, 2, 1.0) > GDP(2 / sigma).delta_at(1.0)


def test_discrete_clipping_stays_on_lattice_and_inside_bound():
    data = np.array([[7, 7], [1, 0], [-9, 4]])
    release = publish(data, bounds=RowNorm(5.0), sigma=1e-3, discrete=True, random_state=0)
    # With a tiny sigma the noise is zero with overwhelming probability.
    assert np.all(np.sum(release.data.astype(float) ** 2, axis=1) <= 25)
    np.testing.assert_array_equal(release.data[1], [1, 0])


# ---------------------------------------------------------------------------- bad input


def test_two_noise_arguments_refused(X):
    with pytest.raises(ValueError, match="give exactly one noise level: .*got sigma and mu"):
        publish(X, bounds=RowNorm(1.0), sigma=1.0, mu=1.0)
    with pytest.raises(ValueError, match="got sigma and snr_db"):
        publish(X, bounds=RowNorm(1.0), sigma=1.0, snr_db=20)
    with pytest.raises(ValueError, match="got none of them"):
        publish(X, bounds=RowNorm(1.0))
    with pytest.raises(ValueError, match="epsilon needs delta"):
        publish(X, bounds=RowNorm(1.0), epsilon=1.0)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_nonpositive_sigma_refused(X, bad):
    with pytest.raises(ValueError, match=r"sigma must be a finite number > 0; got"):
        publish(X, bounds=RowNorm(1.0), sigma=bad)


def test_bad_mu_delta_snr_refused(X):
    with pytest.raises(ValueError, match="mu must be a finite number > 0; got -2"):
        publish(X, bounds=RowNorm(1.0), mu=-2)
    with pytest.raises(ValueError, match=r"delta must be a number in \(0, 1\); got 1.5"):
        publish(X, bounds=RowNorm(1.0), epsilon=1.0, delta=1.5)
    with pytest.raises(ValueError, match="snr_db must be a finite number"):
        publish(X, bounds=RowNorm(1.0), snr_db=float("nan"))
    with pytest.raises(ValueError, match="non-zero power"):
        publish(np.zeros((3, 2)), bounds=RowNorm(1.0), snr_db=10)


def test_non_integer_data_with_discrete_refused(X):
    with pytest.raises(
        ValueError, match=r"discrete=True needs every value on integers; got X\[0, 0\]"
    ):
        publish(X, bounds=RowNorm(1.0), sigma=1.0, discrete=True)
    with pytest.raises(ValueError, match="needs every value on the grid 2.0Z"):
        publish(np.array([[1, 2], [3, 4]]), bounds=Box(4), sigma=1.0, discrete=True, grid=2)
    with pytest.raises(ValueError, match="grid applies only to discrete=True"):
        publish(X, bounds=RowNorm(1.0), sigma=1.0, grid=0.5)


def test_bad_data_and_bounds_refused(X):
    with pytest.raises(ValueError, match="bounds is required"):
        publish(X, bounds=None, sigma=1.0)
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinite values \(first at row 2, column 'x1'\)"):
        publish(bad, bounds=RowNorm(1.0), sigma=1.0)
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    with pytest.raises(ValueError, match="non-numeric column"):
        publish(frame, bounds=RowNorm(1.0), sigma=1.0)
    with pytest.raises(ValueError, match="Box bound has 3 entries but the data has 4 columns"):
        publish(X, bounds=Box((1.0, 1.0, 1.0)), sigma=1.0)
    with pytest.raises(TypeError, match="read a CSV file first"):
        publish("data.csv", bounds=RowNorm(1.0), sigma=1.0)


# ------------------------------------------------------------------------- file workflow


def test_publish_csv_and_recover_from_csv(tmp_path):
    from dpggm.datasets.synthetic import make_chain
    from dpggm.experiments.publish_io import publish_csv, read_metadata, recover_from_csv
    from dpggm.metrics.graph import edge_auc

    truth = make_chain(n_samples=1500, n_features=6, random_state=0)
    private = tmp_path / "private.csv"
    pd.DataFrame(truth.X, columns=[f"g{j}" for j in range(6)]).to_csv(private, index=False)
    noisy = tmp_path / "noisy.csv"
    release = publish_csv(private, noisy, bounds="l2:30", sigma=0.4, random_state=1)
    meta = read_metadata(tmp_path / "noisy.json")
    assert meta["noise"]["sigma"] == 0.4
    assert meta["privacy"]["budget"] == release.privacy_.budget.to_dict()
    assert "paper_accounting" not in meta["privacy"]["notes"]
    written = pd.read_csv(noisy)
    assert list(written.columns) == [f"g{j}" for j in range(6)]
    np.testing.assert_array_equal(written.to_numpy(), release.data.to_numpy())
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        publish_csv(private, noisy, bounds="l2:30", sigma=0.4)

    est = recover_from_csv(noisy, alpha=0.05, out_dir=tmp_path / "graph")
    assert est.noise_sigma_ == 0.4
    assert est.privacy_.budget == release.privacy_.budget
    assert edge_auc(est.edge_scores(), truth.adjacency) > 0.99
    edges = pd.read_csv(tmp_path / "graph" / "edges.csv")
    assert list(edges.columns) == ["source", "target", "weight", "partial_correlation"]
    assert json.loads((tmp_path / "graph" / "recovery.json").read_text())["alpha"] == 0.05
    with pytest.raises(ValueError, match="does not match the release's noise sigma"):
        recover_from_csv(noisy, noise_sigma=0.5, alpha=0.05)


@pytest.mark.parametrize("units, step, name", [
    (None, Fraction(1), "units"), (Fraction(3), None, "step"), (Fraction(0), Fraction(1), "units"),
    (Fraction(3), -1, "step"), (True, Fraction(1), "units"),
])
def test_record_publication_names_a_bad_lattice_parameter(units, step, name):
    from dpggm.mechanisms.publish import RecordPublication

    with pytest.raises(ValueError, match=rf"{name} \(.*\) must be a positive rational .*got "
                                         rf"{name}="):
        RecordPublication(sensitivity=2.0, p=3, units=units, step=step)


@pytest.mark.parametrize("options", [
    {"sigma": 0.7}, {"sigma": 0.7, "discrete": True},
    {"sigma": 1.3, "discrete": True, "grid": 0.25},
    {"epsilon": 1.0, "delta": 1e-5, "discrete": True, "grid": 0.1},
])
def test_a_noisy_release_describes_its_noise_as_every_release(options):
    X = np.round(np.random.default_rng(0).normal(size=(50, 3)) * 4)
    release = publish(X, bounds="box:3", random_state=1, **options)
    noise = release.noise
    assert noise.std == release.sigma and noise.grid == release.grid
    assert noise.discrete == release.discrete
    assert noise.variance == pytest.approx(release.noise_variance, rel=1e-12, abs=0)
