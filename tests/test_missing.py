"""Missing values: imputation that keeps the guarantee, the sensitivities it relies on, and
the policies that are refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpggm import ZCDP, PrivateGraph
from dpggm.data import kernels
from dpggm.data.passes import Moments, ValueCounts
from dpggm.data.records import ArrayRecords
from dpggm.datasets import make_raw_chain
from dpggm.mechanisms.private_bounds import (
    QUANTILE_SCORE_SENSITIVITY,
    candidate_grid,
    cell_scores,
    target_rank,
)
from dpggm.mechanisms.sensitivity import indicator_l2_sensitivity
from dpggm.metrics.graph import support_f1


def _with_holes(frame: pd.DataFrame, share: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return frame.mask(rng.random(frame.shape) < share)


@pytest.fixture(scope="module")
def chain():
    return make_raw_chain(n_samples=8000, n_features=8, random_state=11)


def test_impute_recovers_the_chain_with_15_percent_missing(chain):
    frame, truth = chain
    holed = _with_holes(frame, 0.15, seed=1)
    complete = PrivateGraph(budget=ZCDP(1.0), random_state=2).fit(frame)
    imputed = PrivateGraph(budget=ZCDP(1.0), random_state=2).fit(holed)
    assert support_f1(imputed.adjacency_, truth) >= support_f1(complete.adjacency_, truth) - 0.1
    assert "impute" in imputed.privacy_.notes["missing"]
    counts = imputed.clipping_["missing_by_column"]
    assert counts == {c: int(holed[c].isna().sum()) for c in holed.columns}
    # The released shares of present values are in the record; the counts are not.
    steps = [s["step"] for s in imputed.privacy_.noise["breakdown"]]
    assert "missing counts" in steps
    assert str(counts[frame.columns[0]]) not in imputed.privacy_.to_json()


def test_the_corrected_release_is_on_the_scale_of_the_complete_data(chain):
    # What the released shares of present values buy: dividing the moments by them.
    frame, truth = chain
    holed = _with_holes(frame, 0.15, seed=3)
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=4).fit(holed)
    assert support_f1(graph.adjacency_, truth) >= 0.9
    corrected = graph.noisy_covariance_
    present = 1 - holed.isna().mean().to_numpy()
    # The corrected release is on the scale of the complete data's covariance: its
    # off-diagonal entries are not shrunk by the product of the shares present.
    reference = PrivateGraph(budget=ZCDP(1.0), random_state=4).fit(frame).noisy_covariance_
    ratio = np.median(np.abs(corrected[np.triu_indices(8, 1)])) / np.median(
        np.abs(reference[np.triu_indices(8, 1)]))
    shrink = np.median(np.outer(present, present))
    assert abs(ratio - 1) < 0.1 and shrink < 0.75


def test_a_secure_imputed_release_is_valid(chain):
    frame, _ = chain
    graph = PrivateGraph(budget=ZCDP(1.0), random_state="secure").fit(
        _with_holes(frame.iloc[:3000], 0.1, seed=5))
    assert graph.privacy_.validity == "valid"
    assert graph.privacy_.notes["spent_exactly_total"] is True


def test_refuse_and_drop(chain):
    frame, _ = chain
    holed = _with_holes(frame.iloc[:500], 0.05, seed=6)
    with pytest.raises(ValueError, match="missing='refuse'"):
        PrivateGraph(budget=ZCDP(1.0), missing="refuse").fit(holed)
    with pytest.raises(ValueError, match="number of records depend on the private data"):
        PrivateGraph(budget=ZCDP(1.0), missing="drop").fit(holed)
    with pytest.raises(ValueError, match="missing must be one of"):
        PrivateGraph(budget=ZCDP(1.0), missing="mean").fit(holed)
    infinite = holed.copy()
    infinite.iloc[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinite value is not a missing one"):
        PrivateGraph(budget=ZCDP(1.0)).fit(infinite)


def test_a_csv_with_empty_fields_equals_the_frame_with_nan(tmp_path, chain):
    frame, _ = chain
    holed = _with_holes(frame.iloc[:3000], 0.1, seed=7)
    path = tmp_path / "holes.csv"
    holed.to_csv(path, index=False, float_format="%.17g")
    assert ",," in path.read_text() or ",\n" in path.read_text()
    a = PrivateGraph(budget=ZCDP(1.0), random_state=8).fit(holed)
    b = PrivateGraph(budget=ZCDP(1.0), random_state=8).fit(str(path))
    np.testing.assert_array_equal(a.ranges_.lower, b.ranges_.lower)
    np.testing.assert_allclose(a.noisy_covariance_, b.noisy_covariance_, atol=1e-12)


# -- the sensitivities the mechanisms rely on, with missing values ------------------------


def _column_scores(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    state = ArrayRecords(values[:, None], ["x"]).run(ValueCounts(edges, kernels.SYMMETRIC))
    return cell_scores(state.below()[0], target_rank(int(state.counted[0]), 0.5))


def test_median_cell_scores_move_by_at_most_one_when_a_value_goes_missing():
    rng = np.random.default_rng(0)
    edges = candidate_grid(low_exponent=-3, high_exponent=5, per_octave=4)
    for _ in range(200):
        x = rng.normal(size=int(rng.integers(3, 40))) * 4
        x[rng.random(x.size) < 0.3] = np.nan
        y = x.copy()
        i = int(rng.integers(x.size))
        # Replace one record: a value by a missing one, a missing one by a value, or a
        # value by another.
        y[i] = np.nan if not np.isnan(x[i]) and rng.random() < 0.5 else rng.normal() * 40
        if np.isnan(x).all() or np.isnan(y).all():
            continue
        delta = np.abs(_column_scores(x, edges) - _column_scores(y, edges))
        assert delta.max() <= QUANTILE_SCORE_SENSITIVITY


def test_present_counts_move_by_at_most_sqrt_p():
    rng = np.random.default_rng(1)
    p = 7
    for _ in range(200):
        X = rng.normal(size=(20, p))
        X[rng.random(X.shape) < 0.4] = np.nan
        Y = X.copy()
        Y[int(rng.integers(20))] = np.where(rng.random(p) < 0.5, np.nan, 1.0)
        cx = ArrayRecords(X, list("abcdefg")).run(Moments()).missing_by_column
        cy = ArrayRecords(Y, list("abcdefg")).run(Moments()).missing_by_column
        assert np.linalg.norm(cx - cy) <= indicator_l2_sensitivity(p)
    assert indicator_l2_sensitivity(2) ** 2 >= 2


def test_an_imputed_record_stays_inside_the_bound():
    X = np.array([[np.nan, 5.0, -7.0], [1.0, np.nan, np.nan]])
    state = ArrayRecords(X, list("abc")).run(Moments(declared=__import__(
        "dpggm").Box(2.0)))
    gram, total, n = state.second_moment_sums()
    # Imputed at the box's center (0); the rest clipped to the box.
    np.testing.assert_allclose(total, [1.0, 2.0, -2.0])
    assert np.all(np.diag(gram) <= n * 4.0)
