"""One data API: every statistic is a pass task over one ``Records`` interface, served by
arrays, streamed files, files parsed once and Dask collections alike (``dpggm.data``)."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpggm.data
from dpggm.data import kernels
from dpggm.data.dask_records import DaskRecords
from dpggm.data.file_records import FileRecords
from dpggm.data.passes import ClippedSums, RegressionSums, ValueCounts
from dpggm.data.records import (
    ArrayRecords,
    StreamedFile,
    check_missing_policy,
    clipped_second_moment,
    open_records,
)
from dpggm.data.tables import TableFile
from dpggm.mechanisms.bounds import Box, RowNorm
from dpggm.mechanisms.private_bounds import RangeStages


@pytest.fixture
def frame():
    rng = np.random.default_rng(5)
    values = rng.normal(size=(3000, 4)) * np.array([1.0, 0.5, 2.0, 1.5])
    return pd.DataFrame(values, columns=["a", "b", "c", "d"])


@pytest.fixture
def csv(tmp_path, frame):
    path = tmp_path / "records.csv"
    frame.to_csv(path, index=False, float_format="%.17g")
    # Small blocks: the file is read in many of them.
    return TableFile(path, block_size=8192)


def _sources(frame, csv):
    """Every kind of records, each holding the same rows."""
    return {
        "array": lambda: ArrayRecords(frame.to_numpy(), list(frame.columns)),
        "streamed file": lambda: StreamedFile(csv),
        "file parsed once": lambda: FileRecords(csv, memory_limit=1 << 16),
        "dask": lambda: DaskRecords(dd.from_pandas(frame, npartitions=3)),
    }


def test_every_source_runs_the_same_tasks(frame, csv):
    """Counts on a public grid are exact from every source; the clipped second moment's
    sums agree to rounding, and a file streamed or parsed once gives them bit for bit (the
    same blocks, in the same order)."""
    task = ValueCounts(RangeStages(epsilons={}).median_edges, kernels.SYMMETRIC)
    sums = ClippedSums(RowNorm(2.0), center=np.array([0.1, 0.0, -0.2, 0.0]))
    counted, summed = {}, {}
    with dask.config.set(scheduler="synchronous"):
        for name, make in _sources(frame, csv).items():
            with make() as records:
                counted[name] = records.run(task)
                summed[name] = records.run(sums)
                assert records.n_samples == 3000 and records.columns == ["a", "b", "c", "d"]
    for name in counted:
        np.testing.assert_array_equal(counted[name].counts, counted["array"].counts,
                                      err_msg=name)
        assert summed[name].n == 3000 and summed[name].n_clipped == summed["array"].n_clipped
        np.testing.assert_allclose(summed[name].gram, summed["array"].gram, rtol=1e-12,
                                   err_msg=name)
    for field in ("gram", "total"):
        np.testing.assert_array_equal(getattr(summed["streamed file"], field),
                                      getattr(summed["file parsed once"], field))


def test_open_records_chooses_the_source(frame, csv):
    assert isinstance(open_records(frame), ArrayRecords)
    assert isinstance(open_records(csv), FileRecords)
    assert isinstance(open_records(csv, keep=False), StreamedFile)
    assert isinstance(open_records(dd.from_pandas(frame, npartitions=2)), DaskRecords)
    assert open_records(frame).sizes_known and not open_records(csv, keep=False).sizes_known


def test_an_in_order_task_reads_an_array_chunk_by_chunk(frame):
    """The clipped second moment adds an array's chunks in their order: the chunk size
    changes the sums by rounding only, and one chunk is one product over the records."""
    values = frame.to_numpy()
    whole = clipped_second_moment(values, bounds=Box(1.5))
    pieces = clipped_second_moment(values, bounds=Box(1.5), chunk_rows=7)
    np.testing.assert_allclose(pieces.second_moment, whole.second_moment, rtol=1e-12)
    clipped, _ = Box(1.5).clip(values)
    product = clipped.T @ clipped / len(values)
    np.testing.assert_array_equal(whole.second_moment, (product + product.T) / 2)


def test_a_task_refuses_the_width_before_any_partition_is_read(frame):
    lazy = dd.from_pandas(frame, npartitions=2)

    def computed(*args, **kwargs):
        raise AssertionError("a partition was computed")

    with dask.config.set(scheduler="synchronous"), pytest.MonkeyPatch.context() as patch:
        import dpggm.data.dask_records as module

        patch.setattr(module, "_compute", computed)
        with pytest.raises(ValueError, match="Box bound has 3 entries but the data has 4"):
            DaskRecords(lazy).run(ClippedSums(Box((1.0, 1.0, 1.0))))


def test_a_regression_reads_its_records_with_the_target_last(frame):
    """Dask ``X`` and ``y`` become records ``[x, y]`` partition by partition; the sums equal
    those of the same records in memory."""
    target = frame["a"] - 0.5 * frame["d"]
    features = frame[["b", "c", "d"]]
    task = RegressionSums(RowNorm(2.0), y_bound=1.0, fit_intercept=True)
    local = ArrayRecords.with_target(features.to_numpy(), target.to_numpy(),
                                     list(features.columns)).run(task)
    lazy = dd.from_pandas(frame.assign(t=target), npartitions=4)
    with dask.config.set(scheduler="synchronous"):
        records = DaskRecords(lazy[["b", "c", "d"]], target=lazy["t"])
        remote = records.run(task)
    assert records.columns == ["b", "c", "d", "y"] and remote.n == local.n == 3000
    np.testing.assert_allclose(remote.gram, local.gram, rtol=1e-12)
    np.testing.assert_allclose(remote.moment, local.moment, rtol=1e-12)


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_regression_in_memory_is_one_product_in_the_layout_of_its_features(frame, order):
    """The records ``[x, y]`` keep the features' layout, so the sums are the one product
    over the clipped features a regression has always made, bit for bit."""
    features = np.asarray(frame.to_numpy(), order=order)
    target = frame["a"].to_numpy()
    records = ArrayRecords.with_target(features, target, list(frame.columns))
    assert records.values.flags[f"{order}_CONTIGUOUS"]
    sums = records.run(RegressionSums(RowNorm(2.0), y_bound=1.0))
    clipped, _ = RowNorm(2.0).clip(features)
    np.testing.assert_array_equal(sums.gram, clipped.T @ clipped)
    np.testing.assert_array_equal(sums.moment, clipped.T @ np.clip(target, -1.0, 1.0))


def test_dropping_incomplete_records_is_ruled_in_one_place():
    check_missing_policy("refuse", neighbors="replace", drops=False)
    check_missing_policy("drop", neighbors="add-remove", drops=True)
    with pytest.raises(ValueError, match="needs neighbors='add-remove'"):
        check_missing_policy("drop", neighbors="replace", drops=True)
    with pytest.raises(ValueError, match="number of records depend on the private data"):
        check_missing_policy("drop", neighbors="add-remove", drops=False)


def test_the_data_package_exports_resolve():
    assert set(dpggm.data.__all__) <= set(dir(dpggm.data))
    for name in dpggm.data.__all__:
        assert getattr(dpggm.data, name) is not None
    assert dpggm.data.open_records is open_records
    assert dpggm.TableFile is TableFile
