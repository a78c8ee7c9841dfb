"""Dask input: the same statistics and the same seeded release as in memory."""

from __future__ import annotations

import json
import subprocess
import sys

import dask.array as da
import dask.dataframe as dd
import distributed
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import ZCDP, Box, NonPrivate, PrivateCovariance, RowNorm
from dpggm.data.records import clipped_second_moment

COLUMNS = [f"v{j}" for j in range(5)]


def _frame(rows: int = 1200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(rows, 5)) @ rng.normal(size=(5, 5))
    return pd.DataFrame(data, columns=COLUMNS)


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    """A 6-file Parquet data set and the same records in memory."""
    folder = tmp_path_factory.mktemp("parts")
    frame = _frame()
    for k, piece in enumerate(np.array_split(np.arange(len(frame)), 6)):
        frame.iloc[piece].to_parquet(folder / f"part-{k}.parquet", index=False)
    return folder, frame


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as local:
        with distributed.Client(local) as client:
            yield local, client


def test_cluster_second_moment_and_seeded_release_match_memory(parts, cluster):
    folder, frame = parts
    from dpggm.data.dask_records import read_dask

    lazy = read_dask(str(folder / "*.parquet"))
    assert lazy.npartitions == 6
    bounds = RowNorm(3.0)
    remote = clipped_second_moment(lazy, bounds=bounds)
    local = clipped_second_moment(frame, bounds=bounds)
    np.testing.assert_allclose(remote.second_moment, local.second_moment, rtol=1e-10, atol=0)
    np.testing.assert_allclose(remote.total, local.total, rtol=1e-10)
    assert (remote.n, remote.n_clipped, remote.columns) == (local.n, local.n_clipped, COLUMNS)
    assert local.n_clipped > 0  # the bound is active, so clipping is exercised on workers

    exact_remote = PrivateCovariance(budget=NonPrivate(), bounds=bounds).fit(lazy)
    exact_local = PrivateCovariance(budget=NonPrivate(), bounds=bounds).fit(frame)
    np.testing.assert_allclose(exact_remote.covariance_, exact_local.covariance_, rtol=1e-10)

    private_remote = PrivateCovariance(budget=ZCDP(0.5), bounds=bounds, random_state=7).fit(lazy)
    private_local = PrivateCovariance(budget=ZCDP(0.5), bounds=bounds, random_state=7).fit(frame)
    np.testing.assert_allclose(private_remote.noisy_covariance_, private_local.noisy_covariance_,
                               rtol=1e-9, atol=1e-12)
    assert private_remote.privacy_.to_dict() == private_local.privacy_.to_dict()


def test_cli_estimate_on_cluster(parts, cluster, tmp_path):
    from dpggm.cli.main import app

    folder, _ = parts
    local, _ = cluster
    out = tmp_path / "out"
    result = CliRunner().invoke(app, [
        "estimate", str(folder / "*.parquet"), "--engine", "dask",
        "--scheduler", local.scheduler_address, "--bound", "l2:3", "--rho", "0.5",
        "--seed", "3", "--out", str(out), "--json",
    ])
    assert result.exit_code == 0, result.output
    api = PrivateCovariance(budget=ZCDP(0.5), bounds=RowNorm(3.0), random_state=3).fit(
        pd.concat([pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))]))
    np.testing.assert_allclose(np.load(out / "noisy_covariance.npy"), api.noisy_covariance_,
                               rtol=1e-9, atol=1e-12)


def test_dask_array_and_partition_order(parts):
    """Synchronous scheduler: a Dask array with uneven chunks gives the same statistic."""
    import dask

    _, frame = parts
    values = frame.to_numpy()
    with dask.config.set(scheduler="synchronous"):
        lazy = da.from_array(values, chunks=((100, 500, 600), (2, 3)))
        remote = clipped_second_moment(lazy, bounds=Box(2.0))
    local = clipped_second_moment(values, bounds=Box(2.0))
    np.testing.assert_allclose(remote.second_moment, local.second_moment, rtol=1e-10)
    assert remote.columns == [f"x{j}" for j in range(5)]


def test_dask_errors_match_memory(parts):
    import dask

    _, frame = parts
    broken = frame.copy()
    broken.iloc[731, 2] = np.nan
    with dask.config.set(scheduler="synchronous"):
        lazy = dd.from_pandas(broken, npartitions=5)
        with pytest.raises(ValueError, match=r"NaN or infinite values \(first at row 731, "
                                             r"column 'v2'\)"):
            clipped_second_moment(lazy, bounds=RowNorm(1.0))
        with pytest.raises(ValueError, match="Box bound has 3 entries but the data has 5"):
            PrivateCovariance(budget=ZCDP(1.0), bounds=Box((1.0, 1.0, 1.0))).fit(
                dd.from_pandas(frame, npartitions=3))
        text = dd.from_pandas(frame.assign(city="x"), npartitions=2)
        with pytest.raises(ValueError, match=r"non-numeric column\(s\) 'city'"):
            clipped_second_moment(text, bounds=RowNorm(1.0))


def test_adassp_on_dask_matches_memory_and_record_estimators_refuse(parts):
    import dask

    from dpggm.estimators.regression import AdaSSP, PrivateLinearRegression

    _, frame = parts
    frame = frame / 4
    target = frame["v0"] - 0.5 * frame["v3"]
    features = frame[["v1", "v2", "v3", "v4"]]
    lazy = dd.from_pandas(frame.assign(t=target), npartitions=3)
    params = {"budget": ZCDP(1.0), "bounds": RowNorm(1.0), "y_bound": 1.0, "random_state": 4}
    local = AdaSSP(**params).fit(features, target)
    with dask.config.set(scheduler="synchronous"):
        remote = AdaSSP(**params).fit(lazy[["v1", "v2", "v3", "v4"]], lazy["t"])
        np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-9)
        assert remote.intercept_ == pytest.approx(local.intercept_, rel=1e-9, abs=1e-12)
        broken = frame.assign(t=target)
        broken.iloc[400, 2] = np.nan
        lazy_broken = dd.from_pandas(broken, npartitions=3)
        with pytest.raises(ValueError, match=r"first at row 400, column 'v2'"):
            AdaSSP(**params).fit(lazy_broken[["v1", "v2"]], lazy_broken["t"])
        with pytest.raises(ValueError, match="same partitions as X"):
            AdaSSP(**params).fit(lazy[["v1"]], dd.from_pandas(target, npartitions=2))
        with pytest.raises(TypeError, match="needs the individual records in memory"):
            PrivateLinearRegression(covariance_estimator=PrivateCovariance(
                budget=ZCDP(1.0), bounds=RowNorm(1.0))).fit(lazy[["v1"]], lazy["t"])


def test_csv_glob_through_dask(tmp_path):
    import dask

    frame = _frame(300, seed=2)
    for k in range(3):
        frame.iloc[k * 100:(k + 1) * 100].to_csv(tmp_path / f"p{k}.csv", sep=";", decimal=",",
                                                   index=False)
    from dpggm.data.dask_records import read_dask
    from dpggm.data.tables import TableFile

    with pytest.raises(ValueError, match="looks ';'-separated"):
        read_dask(str(tmp_path / "*.csv"))
    lazy = read_dask(TableFile(tmp_path / "*.csv", delimiter=";", decimal=",",
                               columns=["v3", "v1"]))
    with dask.config.set(scheduler="synchronous"):
        remote = clipped_second_moment(lazy, bounds=RowNorm(2.0))
    local = clipped_second_moment(frame[["v3", "v1"]], bounds=RowNorm(2.0))
    np.testing.assert_allclose(remote.second_moment, local.second_moment, rtol=1e-10)
    assert remote.columns == ["v3", "v1"]


def test_import_dpggm_does_not_import_dask():
    code = ("import sys, dpggm, dpggm.data.tables, dpggm.cli.data_options; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('dask', 'distributed', 'dask_expr')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_publish_on_dask_per_partition_streams(parts, tmp_path):
    import dask

    from dpggm.experiments.publish_io import publish_dask, seed_streams
    from dpggm.mechanisms.publish import publish

    folder, frame = parts
    from dpggm.data.dask_records import read_dask

    lazy = read_dask(str(folder / "*.parquet"))
    out = tmp_path / "release"
    with dask.config.set(scheduler="synchronous"):
        meta = publish_dask(lazy, out, bounds=RowNorm(3.0), mu=1.0, random_state=11)
        again = publish_dask(lazy, tmp_path / "again", bounds=RowNorm(3.0), mu=1.0,
                             random_state=11)
        other = publish_dask(dd.from_pandas(frame, npartitions=4), tmp_path / "other",
                             bounds=RowNorm(3.0), mu=1.0, random_state=11)
    assert (out / "_metadata").exists() and (out / "_release.json").exists()
    written = pd.read_parquet(out)
    assert list(written.columns) == COLUMNS and len(written) == len(frame)
    assert meta["n_samples"] == len(frame) and meta["partitions"] == 6 == again["partitions"]
    # Partition k is publish() of partition k with stream k of the seed's SeedSequence.
    streams = seed_streams(11, 6)
    pieces = [pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))]
    expected = pd.concat([
        publish(piece, bounds=RowNorm(3.0), mu=1.0,
                random_state=np.random.Generator(np.random.PCG64(streams[k]))).data
        for k, piece in enumerate(pieces)], ignore_index=True)
    np.testing.assert_array_equal(written.to_numpy(), expected.to_numpy())
    np.testing.assert_array_equal(pd.read_parquet(tmp_path / "again").to_numpy(),
                                  written.to_numpy())
    # Same seed, other partitioning: another (equally valid) noisy copy, same guarantee.
    assert not np.allclose(pd.read_parquet(tmp_path / "other").to_numpy(), written.to_numpy())
    in_memory = publish(frame, bounds=RowNorm(3.0), mu=1.0, random_state=11)
    assert meta["noise"]["sigma"] == in_memory.sigma == other["noise"]["sigma"]
    assert meta["privacy"]["budget"] == in_memory.privacy_.to_dict()["budget"]
    assert "paper_accounting" not in json.dumps(meta)


def test_publish_on_dask_validates_before_noise(parts, tmp_path):
    import dask

    from dpggm.experiments.publish_io import publish_dask

    _, frame = parts
    broken = frame.copy()
    broken.iloc[500, 1] = np.inf
    with dask.config.set(scheduler="synchronous"), pytest.raises(
            ValueError, match=r"first at row 500, column 'v1'"):
        publish_dask(dd.from_pandas(broken, npartitions=3), tmp_path / "r",
                     bounds=RowNorm(3.0), sigma=1.0, random_state=1)
    assert list(tmp_path.iterdir()) == []  # nothing written, no staging debris


# Estimators that need the individual records refuse Dask input (see data._refuse_dask).
_NEEDS_RECORDS = {"adaptive", "output-perturbation"}
_OPTIONS = {"glasso": {"alpha": 0.1}, "wishart-pure": {"allow_invalid": True},
            "output-perturbation": {"allow_invalid": True, "alpha": 0.1},
            "pace": {"max_rounds": 2}}


def test_every_registered_method_on_dask_matches_memory(parts):
    """Every method of `dpggm estimate`: through Dask the same seeded result as in memory,
    or a refusal that says why."""
    import dask

    from dpggm import ApproxDP, PureDP
    from dpggm.estimators.registry import METHODS, make_estimator

    _, frame = parts
    frame = frame / 4
    lazy = dd.from_pandas(frame, npartitions=4)
    budgets = (ZCDP(0.5), PureDP(1.0), ApproxDP(0.5, 1e-6))
    for method in METHODS:
        for budget in budgets:
            try:
                local = make_estimator(method, budget=budget, bounds=Box(1.0), random_state=5,
                                       **_OPTIONS.get(method, {})).fit(frame)
            except (TypeError, ValueError):
                continue
            break
        else:
            raise AssertionError(f"no budget fits method {method!r} in memory")
        remote = make_estimator(method, budget=budget, bounds=Box(1.0), random_state=5,
                                **_OPTIONS.get(method, {}))
        with dask.config.set(scheduler="synchronous"):
            if method in _NEEDS_RECORDS:
                with pytest.raises(TypeError, match="needs the individual records in memory"):
                    remote.fit(lazy)
                continue
            remote.fit(lazy)
        compared = 0
        for attr in ("noisy_covariance_", "covariance_", "precision_", "adjacency_"):
            value = getattr(local, attr, None)
            if value is not None:
                np.testing.assert_allclose(getattr(remote, attr), value, rtol=1e-7, atol=1e-9,
                                           err_msg=f"{method}: {attr}")
                compared += 1
        assert compared, method
        assert list(remote.feature_names_in_) == list(local.feature_names_in_)


def test_csv_glob_with_different_headers_refused(tmp_path):
    from dpggm.data.dask_records import read_dask

    (tmp_path / "a.csv").write_text("x,y\n1,2\n3,4\n")
    (tmp_path / "b.csv").write_text("y,x\n5,6\n7,8\n")
    with pytest.raises(ValueError, match=r"header of .*b\.csv.* differs from that of .*a\.csv"):
        read_dask(str(tmp_path / "*.csv"))


def _typed_parts(folder, frames):
    """Parquet files of several row groups each, written by pyarrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for k, piece in enumerate(frames):
        pq.write_table(pa.Table.from_pandas(piece, preserve_index=False),
                       folder / f"part-{k}.parquet", row_group_size=40)


def test_parquet_pieces_read_directly_match_memory(tmp_path, monkeypatch):
    """A Dask DataFrame that is only a Parquet read is decoded by pyarrow into the block
    buffer (no pandas partitions): same statistic as in memory, for float, integer and
    boolean columns, a column selection, row-group partitions and a subset of partitions,
    with decode batches (and so blocks) that cut across row groups and files."""
    import dask

    from dpggm.data import dask_records

    monkeypatch.setattr(dask_records, "_pass_rows", lambda p: 7)
    rng = np.random.default_rng(3)
    rows = 301
    frame = pd.DataFrame({
        "a": rng.normal(size=rows) * 2, "n": rng.integers(-3, 4, size=rows),
        "b": rng.random(rows) < 0.3, "c": rng.normal(size=rows) + 1.0,
    })
    _typed_parts(tmp_path, [frame.iloc[:90], frame.iloc[90:100], frame.iloc[100:]])
    center = np.array([0.5, 0.0, 0.0, 0.25])
    order = ["c", "a", "n", "b"]
    with dask.config.set(scheduler="synchronous"):
        for lazy, expected in [
            (dd.read_parquet(str(tmp_path / "*.parquet"), columns=order), frame[order]),
            (dd.read_parquet(str(tmp_path / "*.parquet"), split_row_groups=True)[order],
             frame[order]),
            (dd.read_parquet(str(tmp_path / "*.parquet"), split_row_groups=True)[order]
             .partitions[2:5], frame[order].iloc[80:140]),  # row groups of 40, 10; 10; 40
        ]:
            assert dask_records.parquet_pieces(lazy) is not None  # the direct path is taken
            for bounds, shift in [(RowNorm(2.5), None), (Box((1.0, 2.0, 2.0, 0.5)), center)]:
                remote = clipped_second_moment(lazy, bounds=bounds, center=shift)
                local = clipped_second_moment(expected.astype(float), bounds=bounds,
                                              center=shift)
                np.testing.assert_allclose(remote.second_moment, local.second_moment,
                                           rtol=1e-10, atol=0)
                np.testing.assert_allclose(remote.total, local.total, rtol=1e-10, atol=1e-12)
                assert (remote.n, remote.n_clipped, remote.columns) == (
                    local.n, local.n_clipped, order)
                assert 0 < local.n_clipped < local.n
        # Anything but a plain read (here arithmetic) goes through pandas partitions.
        shifted = dd.read_parquet(str(tmp_path / "*.parquet"), columns=order) + 1.0
        assert dask_records.parquet_pieces(shifted) is None
        np.testing.assert_allclose(
            clipped_second_moment(shifted, bounds=RowNorm(2.5)).second_moment,
            clipped_second_moment(frame[order].astype(float) + 1.0,
                                  bounds=RowNorm(2.5)).second_moment, rtol=1e-10)


def test_parquet_read_directly_reports_missing_and_infinite_values(tmp_path, monkeypatch):
    import dask

    from dpggm.data import dask_records

    monkeypatch.setattr(dask_records, "_pass_rows", lambda p: 5)
    frame = _frame(120, seed=4)
    missing = frame.copy()
    missing.iloc[97, 3] = np.nan  # written as a Parquet null
    infinite = frame.copy()
    infinite.iloc[64, 1] = -np.inf
    infinite.iloc[97, 0] = np.inf
    for name, broken, row, column in [("missing", missing, 97, "v3"),
                                      ("infinite", infinite, 64, "v1")]:
        folder = tmp_path / name
        folder.mkdir()
        _typed_parts(folder, [broken.iloc[:50], broken.iloc[50:]])
        lazy = dd.read_parquet(str(folder / "*.parquet"))
        assert dask_records.parquet_pieces(lazy) is not None
        message = rf"NaN or infinite values \(first at row {row}, column '{column}'\)"
        with dask.config.set(scheduler="synchronous"):
            for bounds in (RowNorm(1.0), Box(1.0)):
                with pytest.raises(ValueError, match=message):
                    clipped_second_moment(lazy, bounds=bounds)
        with pytest.raises(ValueError, match=message):
            clipped_second_moment(broken, bounds=RowNorm(1.0))


# -- PrivateGraph: every pass on the workers -------------------------------------------


@pytest.fixture(scope="module")
def graph_parts(tmp_path_factory):
    """Raw columns on different scales (with ties), as 6 Parquet files, and in memory."""
    from dpggm.datasets import make_raw_chain

    folder = tmp_path_factory.mktemp("graph-parts")
    frame, _ = make_raw_chain(n_samples=6000, n_features=6, random_state=1)
    for k, piece in enumerate(np.array_split(np.arange(len(frame)), 6)):
        frame.iloc[piece].to_parquet(folder / f"part-{k}.parquet", index=False)
    return folder, frame


def _same_release(remote, local):
    np.testing.assert_array_equal(remote.ranges_.lower, local.ranges_.lower)
    np.testing.assert_array_equal(remote.ranges_.upper, local.ranges_.upper)
    assert remote.norm_bound_.bound == local.norm_bound_.bound
    np.testing.assert_allclose(remote.noisy_covariance_, local.noisy_covariance_, rtol=0,
                               atol=1e-12)
    np.testing.assert_array_equal(remote.adjacency_, local.adjacency_)
    assert list(remote.edges_[["source", "target"]].itertuples(index=False)) == list(
        local.edges_[["source", "target"]].itertuples(index=False))
    assert remote.clipping_ == local.clipping_
    assert remote.n_samples_ == local.n_samples_
    assert list(remote.feature_names_in_) == list(local.feature_names_in_)


def test_private_graph_on_cluster_matches_memory(graph_parts, cluster):
    """Two worker processes, six Parquet files read straight into blocks on every pass:
    the same seeded release and the same edges as in memory (noise drawn once, on the
    client)."""
    from dpggm import PrivateGraph
    from dpggm.data.dask_records import parquet_pieces, read_dask

    folder, frame = graph_parts
    lazy = read_dask(str(folder / "*.parquet"))
    assert lazy.npartitions == 6 and parquet_pieces(lazy) is not None
    remote = PrivateGraph(budget=ZCDP(1.0), random_state=4).fit(lazy)
    local = PrivateGraph(budget=ZCDP(1.0), random_state=4).fit(frame)
    _same_release(remote, local)
    assert remote.privacy_.to_dict() == local.privacy_.to_dict()
    assert remote.adjacency_.sum() > 0


def test_cli_graph_on_cluster(graph_parts, cluster, tmp_path):
    from dpggm import PrivateGraph
    from dpggm.cli.main import app
    from dpggm.estimators.graph import edges_csv_text

    folder, frame = graph_parts
    local, _ = cluster
    out = tmp_path / "g"
    result = CliRunner().invoke(app, [
        "graph", str(folder / "*.parquet"), "--engine", "dask",
        "--scheduler", local.scheduler_address, "--rho", "1", "--seed", "4",
        "--out", str(out), "--json",
    ])
    assert result.exit_code == 0, result.output
    api = PrivateGraph(budget=ZCDP(1.0), random_state=4).fit(frame)
    assert (out / "edges.csv").read_text() == edges_csv_text(api.edges_)
    record = json.loads((out / "result.json").read_text())
    assert record["n_samples"] == len(frame)


def test_private_graph_on_dask_partitions_and_arrays(graph_parts):
    """The general path (pandas partitions, uneven array chunks) gives the same release;
    counts on public grids are exact whatever the partitions."""
    import dask

    from dpggm import PrivateGraph
    from dpggm.data import kernels
    from dpggm.data.dask_records import DaskRecords
    from dpggm.data.passes import ValueCounts
    from dpggm.data.records import ArrayRecords
    from dpggm.mechanisms.private_bounds import RangeStages

    _, frame = graph_parts
    local = PrivateGraph(budget=ZCDP(1.0), random_state=9).fit(frame)
    values = frame.to_numpy()
    with dask.config.set(scheduler="synchronous"):
        remote = PrivateGraph(budget=ZCDP(1.0), random_state=9).fit(
            dd.from_pandas(frame, npartitions=4))
        _same_release(remote, local)
        task = ValueCounts(RangeStages(epsilons={}).median_edges, kernels.SYMMETRIC)
        chunks = da.from_array(values, chunks=((1, 2500, 3499), (6,)))
        with DaskRecords(chunks) as records:
            counted = records.run(task)
            assert records.n_samples == 6000 and records.columns == [f"x{j}" for j in range(6)]
    expected = ArrayRecords(values, list(frame.columns)).run(task)
    np.testing.assert_array_equal(counted.counts, expected.counts)
    for j in range(6):
        np.testing.assert_array_equal(
            counted.below()[j],
            np.searchsorted(np.sort(values[:, j]), task.edges[0], side="left"))


def test_private_graph_on_dask_refuses_bad_values_before_any_noise(graph_parts):
    import dask

    from dpggm import PrivateGraph

    _, frame = graph_parts
    broken = frame.copy()
    broken.iloc[4321, 3] = np.inf
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match=r"infinite values \(first at row 4321, "
                                             r"column 'x3'\)"):
            PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(
                dd.from_pandas(broken, npartitions=5))
        holed = frame.copy()
        holed.iloc[4321, 3] = np.nan
        with pytest.raises(ValueError, match=r"NaN or infinite values \(first at row 4321, "
                                             r"column 'x3'\).*missing='refuse'"):
            PrivateGraph(budget=ZCDP(1.0), random_state=0, missing="refuse").fit(
                dd.from_pandas(holed, npartitions=5))
        with pytest.raises(ValueError, match=r"non-numeric column\(s\) 'city'"):
            PrivateGraph(budget=ZCDP(1.0)).fit(
                dd.from_pandas(frame.assign(city="x"), npartitions=2))
