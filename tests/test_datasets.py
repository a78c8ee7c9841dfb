"""Tests for dpggm.datasets.synthetic and dpggm.datasets.real."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.preprocessing import MinMaxScaler

from dpggm.datasets.real import (
    load_breast_cancer,
    load_diabetes,
    load_wine,
    rescale_to_unit_box,
)
from dpggm.datasets.synthetic import (
    SyntheticData,
    make_chain,
    make_precision_model,
    make_sparse_covariance,
    make_sparse_precision,
    make_uut_precision,
    sample_gaussian,
)
from dpggm.exceptions import NumericalError


def assert_valid_truth(data: SyntheticData, n_samples: int, n_features: int) -> None:
    assert data.X.shape == (n_samples, n_features)
    assert np.all(np.isfinite(data.X))
    for matrix in (data.covariance, data.precision):
        assert matrix.shape == (n_features, n_features)
        np.testing.assert_array_equal(matrix, matrix.T)
        assert np.linalg.eigvalsh(matrix)[0] > 0.0
    np.testing.assert_allclose(data.covariance @ data.precision, np.eye(n_features), atol=1e-8)
    assert data.adjacency.dtype == bool
    np.testing.assert_array_equal(data.adjacency, data.adjacency.T)
    assert not np.any(np.diag(data.adjacency))


def max_abs_deviation_bound(covariance: np.ndarray, n_samples: int) -> float:
    """Six standard deviations of an entry of the sample second moment."""
    diag = np.diag(covariance)
    entry_sd = np.sqrt((np.outer(diag, diag) + covariance**2) / n_samples)
    return 6.0 * float(entry_sd.max())


# --------------------------------------------------------------------------------------
# Su, Guo & Zhang


def test_model1_is_scaled_gram_and_dense():
    data = make_precision_model(
        1, n_samples=30, n_features=15, inner_dimension=400, random_state=np.random.default_rng(7)
    )
    assert_valid_truth(data, 30, 15)
    # W Wᵀ/m has expectation I and entry standard deviation about 1/sqrt(m).
    assert np.max(np.abs(data.precision - np.eye(15))) < 6.0 * np.sqrt(2.0 / 400)
    assert data.adjacency.sum() == 15 * 14


def test_model1_needs_inner_dimension_at_least_p():
    with pytest.raises(ValueError, match="inner_dimension must be >= n_features"):
        make_precision_model(1, n_samples=5, n_features=20, inner_dimension=10, random_state=0)


def test_model1_default_inner_dimension_matches_paper():
    data = make_precision_model(1, n_samples=5, n_features=10, random_state=0)
    # With m = 10000 the diagonal of W Wᵀ/m is within a few 1/sqrt(m) of 1.
    assert np.max(np.abs(np.diag(data.precision) - 1.0)) < 6.0 * np.sqrt(2.0 / 10_000)


def test_model2_covariance_matches_sherman_morrison():
    p = 12
    data = make_precision_model(2, n_samples=10, n_features=p, random_state=0)
    assert_valid_truth(data, 10, p)
    # Θ = 0.5 I + 0.5 11ᵀ, so Σ = 2 (I − 11ᵀ/(1 + p)).
    expected = 2.0 * (np.eye(p) - np.ones((p, p)) / (1 + p))
    np.testing.assert_allclose(data.covariance, expected, atol=1e-12)
    assert data.adjacency.sum() == p * (p - 1)


def test_model3_is_banded_toeplitz():
    p = 9
    data = make_precision_model(3, n_samples=10, n_features=p, random_state=0)
    assert_valid_truth(data, 10, p)
    first_column = np.zeros(p)
    first_column[:3] = [1.0, 0.5, 0.25]
    np.testing.assert_array_equal(data.precision, scipy.linalg.toeplitz(first_column))
    i, j = np.nonzero(data.adjacency)
    assert set(np.abs(i - j)) == {1, 2}
    assert data.adjacency.sum() == 2 * ((p - 1) + (p - 2))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("p", [2, 20, 100])
def test_model4_condition_number_and_unit_diagonal(seed, p):
    data = make_precision_model(4, n_samples=5, n_features=p, random_state=seed)
    assert_valid_truth(data, 5, p)
    eigenvalues = np.linalg.eigvalsh(data.precision)
    assert eigenvalues[-1] / eigenvalues[0] == pytest.approx(p, rel=1e-8)
    np.testing.assert_allclose(np.diag(data.precision), 1.0, rtol=0, atol=1e-15)
    off = data.precision[~np.eye(p, dtype=bool)]
    nonzero = np.unique(off[off != 0.0])
    assert nonzero.size == 1  # every edge carries 0.5/a
    np.testing.assert_array_equal(data.adjacency, (data.precision != 0.0) & ~np.eye(p, dtype=bool))


def test_model4_edge_density_is_about_one_tenth():
    p = 100
    data = make_precision_model(4, n_samples=2, n_features=p, random_state=3)
    pairs = p * (p - 1) / 2
    edges = data.adjacency.sum() / 2
    assert abs(edges - 0.1 * pairs) < 5.0 * np.sqrt(pairs * 0.1 * 0.9)


@pytest.mark.parametrize("model", [0, 5, 2.0, True, "1"])
def test_private_precision_rejects_unknown_model(model):
    with pytest.raises(ValueError, match="model must be one of"):
        make_precision_model(model, n_samples=5, n_features=5, random_state=0)


# --------------------------------------------------------------------------------------
# Wang, Huai & Xu


def test_covariance_perturbation_precision_has_unit_determinant():
    data = make_uut_precision(n_samples=20, n_features=60, density=0.03, random_state=4)
    assert_valid_truth(data, 20, 60)
    # det(U Uᵀ) = det(U)² = 1 because U is a permuted unit triangular matrix.
    sign, logdet = np.linalg.slogdet(data.precision)
    assert sign == 1.0
    assert logdet == pytest.approx(0.0, abs=1e-8)
    np.testing.assert_array_equal(data.precision, np.round(data.precision))
    assert np.all(np.diag(data.precision) >= 1.0)
    np.testing.assert_array_equal(data.adjacency, (data.precision != 0) & ~np.eye(60, dtype=bool))


def test_covariance_perturbation_density_zero_gives_identity():
    data = make_uut_precision(n_samples=5, n_features=8, density=0.0, random_state=0)
    np.testing.assert_array_equal(data.precision, np.eye(8))
    assert not data.adjacency.any()


def test_covariance_perturbation_row_normalisation():
    data = make_uut_precision(n_samples=50, n_features=30, normalize_rows=True, random_state=1)
    np.testing.assert_allclose(np.linalg.norm(data.X, axis=1), 1.0, rtol=1e-12)
    assert data.rows_normalized
    again = data.resample(n_samples=7, random_state=2)
    np.testing.assert_allclose(np.linalg.norm(again.X, axis=1), 1.0, rtol=1e-12)


def test_covariance_perturbation_rejects_bad_density():
    with pytest.raises(ValueError, match=r"density must be a finite number in \[0.0, 1.0\]"):
        make_uut_precision(n_samples=5, n_features=5, density=1.5, random_state=0)


# --------------------------------------------------------------------------------------
# Guo et al.


def test_chain_structure():
    data = make_chain(n_samples=40, random_state=0)
    assert_valid_truth(data, 40, 50)
    expected = np.eye(50) + 0.5 * (np.eye(50, k=1) + np.eye(50, k=-1))
    np.testing.assert_array_equal(data.precision, expected)
    np.testing.assert_array_equal(data.adjacency, (np.eye(50, k=1) + np.eye(50, k=-1)) == 1)


@pytest.mark.parametrize("sparsity", [0.99, 0.9])
def test_sparse_precision_eigenvalue_rule(sparsity):
    p = 150
    data = make_sparse_precision(n_samples=10, n_features=p, sparsity=sparsity, random_state=5)
    assert_valid_truth(data, 10, p)
    assert data.adjacency.sum() // 2 == round((1 - sparsity) * p * (p - 1) / 2)
    off = data.precision[data.adjacency]
    np.testing.assert_array_equal(off, 0.1)
    assert np.all(data.precision[~data.adjacency & ~np.eye(p, dtype=bool)] == 0.0)
    # Constant diagonal chosen so the smallest eigenvalue is exactly the margin.
    assert np.unique(np.diag(data.precision)).size == 1
    assert np.linalg.eigvalsh(data.precision)[0] == pytest.approx(0.1, abs=1e-10)


def test_sparse_precision_row_sum_rule_is_diagonally_dominant():
    p = 80
    data = make_sparse_precision(
        n_samples=10, n_features=p, sparsity=0.9, diagonal="row_sum", margin=0.2, random_state=1
    )
    assert_valid_truth(data, 10, p)
    off_sums = np.abs(data.precision).sum(axis=1) - np.diag(data.precision)
    np.testing.assert_allclose(np.diag(data.precision) - off_sums, 0.2, atol=1e-12)


def test_sparse_precision_paper_size():
    data = make_sparse_precision(n_samples=20, random_state=0)
    assert data.X.shape == (20, 1000)
    assert data.adjacency.sum() // 2 == round(0.01 * 1000 * 999 / 2)
    np.linalg.cholesky(data.precision)  # raises unless positive definite


def test_sparse_precision_validation():
    with pytest.raises(ValueError, match="diagonal must be 'eigenvalue' or 'row_sum'"):
        make_sparse_precision(n_samples=5, n_features=5, diagonal="max", random_state=0)
    with pytest.raises(ValueError, match="margin must be a finite number > 0"):
        make_sparse_precision(n_samples=5, n_features=5, margin=0.0, random_state=0)
    with pytest.raises(ValueError, match="off_diagonal must be a finite non-zero number"):
        make_sparse_precision(n_samples=5, n_features=5, off_diagonal=0.0, random_state=0)


# --------------------------------------------------------------------------------------
# Wang, Xu & He


@pytest.mark.parametrize("entries", ["uniform", "sign"])
@pytest.mark.parametrize("sparsity_ratio", [0.1, 0.5])
def test_sparse_covariance_construction(entries, sparsity_ratio):
    p = 60
    data = make_sparse_covariance(
        n_samples=10,
        n_features=p,
        sparsity_ratio=sparsity_ratio,
        entries=entries,
        random_state=2,
    )
    assert_valid_truth(data, 10, p)
    np.testing.assert_allclose(np.diag(data.covariance), 50.0 / 200.0, rtol=0, atol=1e-15)
    off = data.covariance[~np.eye(p, dtype=bool)]
    nonzero = off[off != 0.0]
    assert nonzero.size == 2 * round(sparsity_ratio * p * p / 2)
    if entries == "sign":
        np.testing.assert_allclose(np.abs(nonzero), 1.0 / 200.0, rtol=1e-15)
    else:
        assert np.all(np.abs(nonzero) <= 1.0 / 200.0)
        assert np.any(nonzero > 0) and np.any(nonzero < 0)


def test_sparse_covariance_not_positive_definite_is_reported():
    with pytest.raises(NumericalError, match="not positive definite"):
        make_sparse_covariance(
            n_samples=5, n_features=100, sparsity_ratio=0.5, entries="sign", shift=2.0
        )


def test_sparse_covariance_rejects_too_many_nonzeros():
    with pytest.raises(ValueError, match="sparsity_ratio must satisfy"):
        make_sparse_covariance(n_samples=5, n_features=10, sparsity_ratio=1.0, random_state=0)


# --------------------------------------------------------------------------------------
# common behaviour


GENERATORS = {
    "model1": lambda seed, n: make_precision_model(
        1, n_samples=n, n_features=8, inner_dimension=50, random_state=seed
    ),
    "model4": lambda seed, n: make_precision_model(4, n_samples=n, n_features=8, random_state=seed),
    "uut": lambda seed, n: make_uut_precision(
        n_samples=n, n_features=8, density=0.2, random_state=seed
    ),
    "chain": lambda seed, n: make_chain(n_samples=n, n_features=8, random_state=seed),
    "sparse_precision": lambda seed, n: make_sparse_precision(
        n_samples=n, n_features=8, sparsity=0.7, random_state=seed
    ),
    "sparse_covariance": lambda seed, n: make_sparse_covariance(
        n_samples=n, n_features=8, sparsity_ratio=0.3, random_state=seed
    ),
}


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_seeded_reproducibility(name):
    make = GENERATORS[name]
    first, second, other = make(11, 25), make(11, 25), make(12, 25)
    np.testing.assert_array_equal(first.X, second.X)
    np.testing.assert_array_equal(first.precision, second.precision)
    np.testing.assert_array_equal(first.covariance, second.covariance)
    assert not np.array_equal(first.X, other.X)
    from_generator = make(np.random.default_rng(11), 25)
    assert from_generator.X.shape == (25, 8)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_sample_covariance_close_to_truth(name):
    n = 40_000
    data = GENERATORS[name](3, n)
    sample_second_moment = data.X.T @ data.X / n
    deviation = np.max(np.abs(sample_second_moment - data.covariance))
    assert deviation < max_abs_deviation_bound(data.covariance, n)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_truth_is_read_only_and_resample_keeps_it(name):
    data = GENERATORS[name](0, 10)
    with pytest.raises(ValueError, match="read-only"):
        data.precision[0, 0] = 5.0
    with pytest.raises(ValueError, match="read-only"):
        data.covariance[0, 0] = 5.0
    fresh = data.resample(n_samples=13, random_state=1)
    assert fresh.X.shape == (13, 8)
    assert fresh.precision is data.precision
    assert not np.array_equal(fresh.X[:10], data.X)


def test_generators_validate_sample_size():
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1; got 0"):
        make_chain(n_samples=0, random_state=0)
    with pytest.raises(TypeError, match="n_samples must be an integer"):
        make_chain(n_samples=10.5, random_state=0)
    with pytest.raises(ValueError, match="random_state"):
        make_chain(n_samples=10, random_state="fixed")


def test_sample_gaussian_checks_its_covariance():
    with pytest.raises(NumericalError, match="positive definite"):
        sample_gaussian(np.array([[1.0, 2.0], [2.0, 1.0]]), n_samples=3, random_state=0)
    with pytest.raises(ValueError, match="covariance must be symmetric"):
        sample_gaussian(np.array([[1.0, 0.5], [0.0, 1.0]]), n_samples=3, random_state=0)
    with pytest.raises(ValueError, match="non-empty square"):
        sample_gaussian(np.ones((2, 3)), n_samples=3, random_state=0)


# --------------------------------------------------------------------------------------
# real data


@pytest.mark.parametrize(
    ("loader", "shape"),
    [(load_breast_cancer, (569, 30)), (load_wine, (178, 13)), (load_diabetes, (442, 10))],
)
def test_real_loaders(loader, shape):
    data = loader()
    assert data.X.shape == shape
    assert data.X.dtype == float
    assert np.all(np.isfinite(data.X))
    assert len(data.feature_names) == shape[1]
    assert data.target.shape == (shape[0],)
    lower, upper = data.data_derived_box
    np.testing.assert_array_equal(lower, data.X.min(axis=0))
    np.testing.assert_array_equal(upper, data.X.max(axis=0))
    assert np.all(upper > lower)


def test_diabetes_is_unscaled():
    data = load_diabetes()
    age = data.X[:, data.feature_names.index("age")]
    assert 18 <= age.min() and age.max() <= 90
    sex = data.X[:, data.feature_names.index("sex")]
    assert set(np.unique(sex)) == {1.0, 2.0}


def test_rescale_with_data_box_matches_min_max_scaler():
    data = load_wine()
    lower, upper = data.data_derived_box
    scaled = rescale_to_unit_box(data.X, lower, upper)
    reference = MinMaxScaler(feature_range=(-1, 1)).fit_transform(data.X)
    np.testing.assert_allclose(scaled, reference, atol=1e-12)


def test_rescale_clips_outside_declared_box():
    X = np.array([[-5.0, 0.0], [0.0, 10.0], [2.0, 30.0]])
    scaled = rescale_to_unit_box(X, [-1.0, 0.0], [1.0, 20.0])
    expected = np.array([[-1.0, -1.0], [0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_array_equal(scaled, expected)


@given(
    st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=20),
    st.floats(min_value=-1e3, max_value=1e3),
    st.floats(min_value=1e-3, max_value=1e3),
)
@settings(max_examples=60, deadline=None)
def test_rescale_stays_in_unit_box_and_is_monotone(values, lower, width):
    X = np.array(values).reshape(-1, 1)
    scaled = rescale_to_unit_box(X, lower, lower + width)
    assert np.all(np.abs(scaled) <= 1.0)
    order = np.argsort(X[:, 0], kind="stable")
    assert np.all(np.diff(scaled[order, 0]) >= 0.0)


def test_rescale_validation():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="upper must be > lower in every column; column 1"):
        rescale_to_unit_box(X, [0.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"lower must be a scalar or have shape \(2,\)"):
        rescale_to_unit_box(X, [0.0, 0.0, 0.0], 1.0)
    with pytest.raises(ValueError, match="upper must contain only finite values"):
        rescale_to_unit_box(X, 0.0, np.inf)
    with pytest.raises(ValueError, match="X must contain only finite values"):
        rescale_to_unit_box(np.array([[np.nan, 0.0]]), 0.0, 1.0)
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        rescale_to_unit_box(np.ones(3), 0.0, 1.0)
