"""Missing values in the covariance-perturbation estimators: refused by default, their rows
left out (``missing="drop"``) only under add/remove neighbours, where the count is
private; the same in memory, from a file, through Dask and on the command line."""

from __future__ import annotations

import json

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import ZCDP, GraphicalLasso, PrivateCovariance, RowNorm
from dpggm.cli.main import app
from dpggm.data.records import clipped_second_moment

runner = CliRunner()


@pytest.fixture(scope="module")
def gappy():
    rng = np.random.default_rng(5)
    X = rng.uniform(-0.5, 0.5, size=(1500, 4))
    X[rng.random(X.shape) < 0.08] = np.nan
    return X


def test_an_incomplete_row_adds_nothing_so_dropping_is_removing_one_record(gappy):
    # The neighbouring pair: D and D plus one incomplete record. With missing="drop" their
    # statistics are identical, so the pair's privacy loss is that of removing a record
    # (add/remove), never more.
    complete = gappy[~np.isnan(gappy).any(axis=1)]
    extra = np.array([[0.4, np.nan, -0.3, 0.2]])
    bounds = RowNorm(1.0)
    a = clipped_second_moment(complete, bounds=bounds, missing="drop")
    b = clipped_second_moment(np.vstack([complete, extra]), bounds=bounds, missing="drop")
    assert a.n == b.n == complete.shape[0]
    np.testing.assert_array_equal(a.second_moment, b.second_moment)
    np.testing.assert_array_equal(a.total, b.total)
    with pytest.raises(ValueError, match="missing must be 'refuse' or 'drop'"):
        clipped_second_moment(complete, bounds=bounds, missing="impute")


def test_drop_under_add_remove_is_the_fit_on_the_complete_rows(gappy, tmp_path):
    complete = gappy[~np.isnan(gappy).any(axis=1)]
    common = dict(budget=ZCDP(1.0), bounds="l2:1", neighbors="add-remove", random_state=3)
    dropped = PrivateCovariance(missing="drop", **common).fit(gappy)
    reference = PrivateCovariance(**common).fit(complete)
    np.testing.assert_array_equal(dropped.noisy_covariance_, reference.noisy_covariance_)
    assert dropped.privacy_.neighbors == "add-remove"
    # From a CSV file with empty fields, the same release.
    path = tmp_path / "gaps.csv"
    pd.DataFrame(gappy, columns=list("abcd")).to_csv(path, index=False)
    from_file = PrivateCovariance(missing="drop", **common).fit(str(path))
    np.testing.assert_array_equal(from_file.noisy_covariance_, reference.noisy_covariance_)


def test_drop_through_dask_is_the_drop_in_memory(gappy):
    common = dict(budget=ZCDP(1.0), bounds="l2:1", neighbors="add-remove", random_state=4,
                  missing="drop")
    in_memory = GraphicalLasso(**common).fit(gappy)
    frame = dd.from_pandas(pd.DataFrame(gappy, columns=list("abcd")), npartitions=3)
    through_dask = GraphicalLasso(**common).fit(frame)
    np.testing.assert_allclose(through_dask.noisy_covariance_, in_memory.noisy_covariance_,
                               rtol=0, atol=1e-12)
    array = da.from_array(gappy, chunks=(400, 4))
    as_array = GraphicalLasso(**common).fit(array)
    np.testing.assert_allclose(as_array.noisy_covariance_, in_memory.noisy_covariance_,
                               rtol=0, atol=1e-12)


def test_drop_is_refused_under_replace_one_and_missing_values_by_default(gappy):
    with pytest.raises(ValueError, match="missing='drop' needs neighbors='add-remove'"):
        PrivateCovariance(budget=ZCDP(1.0), bounds="l2:1", missing="drop").fit(gappy)
    with pytest.raises(ValueError, match="missing"):
        PrivateCovariance(budget=ZCDP(1.0), bounds="l2:1", missing="listwise").fit(gappy)
    with pytest.raises(ValueError, match="NaN or infinite values"):
        PrivateCovariance(budget=ZCDP(1.0), bounds="l2:1", neighbors="add-remove").fit(gappy)


def test_the_command_line_drops_only_under_add_remove(gappy, tmp_path):
    path = tmp_path / "gaps.csv"
    pd.DataFrame(gappy, columns=list("abcd")).to_csv(path, index=False)
    base = ["estimate", str(path), "--method", "glasso", "--rho", "1", "--bound", "l2:1"]
    refused = runner.invoke(app, [*base, "--missing", "drop", "--out", str(tmp_path / "r")])
    assert refused.exit_code == 2 and "needs neighbors='add-remove'" in refused.output
    assert not (tmp_path / "r").exists()
    bad = runner.invoke(app, [*base, "--missing", "impute", "--out", str(tmp_path / "b")])
    assert bad.exit_code == 2 and "--missing must be refuse or drop" in bad.output
    done = runner.invoke(app, [*base, "--missing", "drop", "--neighbors", "add-remove",
                               "--seed", "2", "--out", str(tmp_path / "o"), "--quiet"])
    assert done.exit_code == 0, done.output
    record = json.loads((tmp_path / "o" / "result.json").read_text(encoding="utf-8"))
    assert record["parameters"]["missing"] == "drop"
    assert record["privacy"]["neighbors"] == "add-remove"
