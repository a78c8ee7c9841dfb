"""The data path: input validation, chunked second moments, centering."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpggm import ZCDP, Box, PrivateCovariance, RowNorm
from dpggm.estimators.data import as_matrix, clipped_second_moment


@pytest.fixture
def data():
    return np.random.default_rng(0).normal(size=(257, 4))


def test_chunked_equals_in_memory(data, tmp_path):
    bounds = RowNorm(2.0)
    whole = clipped_second_moment(data, bounds=bounds, chunk_rows=10_000)
    pieces = clipped_second_moment(data, bounds=bounds, chunk_rows=13)
    np.testing.assert_allclose(pieces.second_moment, whole.second_moment, rtol=1e-12, atol=1e-15)
    path = tmp_path / "d.csv"
    pd.DataFrame(data, columns=list("abcd")).to_csv(path, index=False)
    from_csv = clipped_second_moment(path, bounds=bounds, chunk_rows=50)
    np.testing.assert_allclose(from_csv.second_moment, whole.second_moment, rtol=1e-10, atol=1e-13)
    assert from_csv.columns == list("abcd") and from_csv.n == 257
    # Independent computation of the clipped second moment.
    norms = np.linalg.norm(data, axis=1, keepdims=True)
    clipped = data * np.minimum(1.0, 2.0 / norms)
    np.testing.assert_allclose(whole.second_moment, clipped.T @ clipped / 257, rtol=1e-12)
    assert whole.n_clipped == int((norms > 2.0).sum())


def test_public_center_subtracted_before_clipping(data):
    center = np.array([0.5, -1.0, 0.0, 2.0])
    stats = clipped_second_moment(data + center, bounds=Box(10.0), center=center)
    np.testing.assert_allclose(stats.second_moment, data.T @ data / len(data), rtol=1e-12)


def test_nan_named(data):
    data[5, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinite values \(first at row 5, column 'x2'\)"):
        as_matrix(data)


def test_inf_in_csv_named_with_row(tmp_path, data):
    frame = pd.DataFrame(data, columns=list("abcd"))
    frame.loc[100, "c"] = np.inf
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"first at line 102, column 'c'"):
        clipped_second_moment(path, bounds=RowNorm(1.0), chunk_rows=30)


def test_non_numeric_column_named():
    frame = pd.DataFrame({"age": [30, 40, 50], "city": ["a", "b", "c"]})
    with pytest.raises(ValueError, match=r"non-numeric column\(s\) 'city'"):
        as_matrix(frame)


def test_non_numeric_later_in_csv(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b\n" + "1,2\n" * 40 + "3,oops\n")
    with pytest.raises(ValueError, match="non-numeric value"):
        clipped_second_moment(path, bounds=RowNorm(1.0), chunk_rows=10)


def test_too_few_rows_named():
    with pytest.raises(ValueError, match="at least 2 records"):
        as_matrix(np.ones((1, 3)))


def test_one_dimensional_named():
    with pytest.raises(ValueError, match="two-dimensional"):
        as_matrix(np.ones(5))


def test_bound_wrong_length_named(data):
    with pytest.raises(ValueError, match="Box bound has 3 entries but the data has 4 columns"):
        PrivateCovariance(budget=ZCDP(1.0), bounds=Box((1.0, 1.0, 1.0)), random_state=0).fit(data)


def test_missing_csv_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such CSV file"):
        as_matrix(tmp_path / "absent.csv")


def test_string_array_named():
    with pytest.raises(ValueError, match="must be numeric"):
        as_matrix(np.array([["a", "b"], ["c", "d"]]))
