"""Reading CSV (and Parquet) files: the usual misreadings are refused in the user's terms,
or read correctly with the matching option (library and CLI)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import NonPrivate, PrivateCovariance, RowNorm
from dpggm.cli.main import app
from dpggm.data.records import clipped_second_moment
from dpggm.data.tables import TableFile, as_matrix

DATA = np.array([[1.5, -2.0, 0.25], [0.5, 1.0, -1.75], [-1.0, 0.5, 2.0], [2.5, -0.5, 1.0]])


def _write(path, text: str, encoding: str = "utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def _csv(rows, sep=",", decimal="."):
    lines = []
    for row in rows:
        lines.append(sep.join(str(v).replace(".", decimal) for v in row))
    return "\n".join(lines) + "\n"


def test_file_without_header_refused_then_read_whole(tmp_path):
    path = _write(tmp_path / "d.csv", _csv(DATA))
    with pytest.raises(ValueError, match=r"first line of CSV file .* looks like a record.*"
                                         r"pass header=False"):
        as_matrix(path)
    values, columns = as_matrix(TableFile(path, header=False))
    np.testing.assert_array_equal(values, DATA)  # the first row is not lost
    assert columns == ["col1", "col2", "col3"]


def test_duplicated_names_refused(tmp_path):
    path = _write(tmp_path / "d.csv", "a,b,a\n" + _csv(DATA))
    with pytest.raises(ValueError, match=r"column name 'a' twice \(columns 1 and 3\)"):
        as_matrix(path)


def test_index_column_refused_then_dropped(tmp_path):
    frame = pd.DataFrame(DATA, columns=["a", "b", "c"])
    path = tmp_path / "d.csv"
    frame.to_csv(path)  # pandas writes the index as an unnamed first column
    with pytest.raises(ValueError, match=r"column 1 of CSV file .* has no name.*index_col=0"):
        as_matrix(path)
    values, columns = as_matrix(TableFile(path, index_col=0))
    np.testing.assert_array_equal(values, DATA)
    assert columns == ["a", "b", "c"]
    named = _write(tmp_path / "e.csv", "id,a,b,c\n" + _csv(np.column_stack([[7, 8, 9, 10], DATA])))
    values, columns = as_matrix(TableFile(named, index_col="id"))
    assert columns == ["a", "b", "c"]
    np.testing.assert_array_equal(values, DATA)


def test_semicolon_and_decimal_comma(tmp_path):
    path = _write(tmp_path / "d.csv", "a;b;c\n" + _csv(DATA, sep=";", decimal=","))
    with pytest.raises(ValueError, match=r"looks ';'-separated.*delimiter=';'.*decimal=','"):
        as_matrix(path)
    with pytest.raises(ValueError, match=r"non-numeric value '1,5' in column 'a' on line 2; "
                                         r"if the file writes decimals with a comma"):
        as_matrix(TableFile(path, delimiter=";"))
    values, columns = as_matrix(TableFile(path, delimiter=";", decimal=","))
    np.testing.assert_array_equal(values, DATA)
    assert columns == ["a", "b", "c"]


def test_header_only_file(tmp_path):
    path = _write(tmp_path / "d.csv", "a,b,c\n")
    with pytest.raises(ValueError, match=r"has a header \(a, b, c\) but no records"):
        as_matrix(path)


def test_latin1_file_named(tmp_path):
    path = _write(tmp_path / "d.csv", "âge,poids\n" + _csv(DATA[:, :2]), encoding="latin-1")
    with pytest.raises(ValueError, match=r"CSV file '.*d\.csv' is not valid utf-8 .*line 1.*"
                                         r"encoding='latin-1'"):
        as_matrix(path)
    values, columns = as_matrix(TableFile(path, encoding="latin-1"))
    assert columns == ["âge", "poids"]
    np.testing.assert_array_equal(values, DATA[:, :2])


def test_messages_use_file_lines_and_column_names(tmp_path):
    path = _write(tmp_path / "d.csv", "a,b,c\n1,2,3\n4,,6\n")
    with pytest.raises(ValueError, match=r"first at line 3, column 'b'"):
        as_matrix(path)
    path = _write(tmp_path / "e.csv", "a,b\n1,2\n3,4\n5,abc\n")
    with pytest.raises(ValueError, match=r"non-numeric value 'abc' in column 'b' on line 4"):
        as_matrix(path)
    path = _write(tmp_path / "f.csv", "id,a,b,c\n1,2,3,4\n2,5,x,6\n")
    for options in ({"index_col": "id"}, {"columns": ["c", "b"]}):
        with pytest.raises(ValueError, match=r"non-numeric value 'x' in column 'b' on line 3"):
            as_matrix(TableFile(path, **options))


def test_line_numbers_across_blocks(tmp_path):
    rows = np.random.default_rng(1).normal(size=(5000, 3))
    frame = pd.DataFrame(rows, columns=list("abc"))
    frame.loc[4321, "c"] = np.nan
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"first at line 4323, column 'c'"):
        clipped_second_moment(TableFile(path, block_size=4096), bounds=RowNorm(1.0))


def test_blocks_equal_whole_file_and_column_selection(tmp_path):
    rows = np.random.default_rng(2).normal(size=(3000, 4))
    frame = pd.DataFrame(rows, columns=list("abcd"))
    frame["a"] = np.arange(3000.0)
    frame.loc[2500:, "a"] += 0.5
    path = tmp_path / "d.csv"
    # Integers in the first blocks, decimals later: one column type throughout.
    lines = ["a,b,c,d"] + [",".join([f"{int(r[0])}" if r[0].is_integer() else repr(float(r[0]))]
                                    + [repr(float(v)) for v in r[1:]]) for r in frame.to_numpy()]
    path.write_text("\n".join(lines) + "\n")
    assert path.read_text().splitlines()[1].startswith("0,")
    streamed = clipped_second_moment(TableFile(path, block_size=2048), bounds=RowNorm(5.0))
    whole = clipped_second_moment(frame, bounds=RowNorm(5.0))
    np.testing.assert_allclose(streamed.second_moment, whole.second_moment, rtol=1e-12)
    values, columns = as_matrix(TableFile(path, columns=["d", "b"]))
    assert columns == ["d", "b"]
    np.testing.assert_array_equal(values, frame[["d", "b"]].to_numpy())
    with pytest.raises(ValueError, match=r"columns: 'z' is not a column of CSV file .*; its columns are 'a', 'b', 'c', 'd'"):
        as_matrix(TableFile(path, columns=["z"]))


def test_parquet_read_directly(tmp_path):
    frame = pd.DataFrame(DATA, columns=["a", "b", "c"])
    path = tmp_path / "d.parquet"
    frame.to_parquet(path)
    values, columns = as_matrix(path)
    np.testing.assert_array_equal(values, DATA)
    assert columns == ["a", "b", "c"]
    frame.assign(city="x").to_parquet(tmp_path / "e.parquet")
    with pytest.raises(ValueError, match=r"Parquet file .* non-numeric column\(s\) 'city'"):
        as_matrix(tmp_path / "e.parquet")
    frame.loc[2, "b"] = np.nan
    frame.to_parquet(tmp_path / "f.parquet")
    with pytest.raises(ValueError, match=r"first at record 3, column 'b'"):
        as_matrix(tmp_path / "f.parquet")


def test_directory_given_as_file(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        as_matrix(tmp_path)


def test_cli_reading_options(tmp_path):
    path = _write(tmp_path / "d.csv", "id;a;b;c\n" + _csv(
        np.column_stack([[1, 2, 3, 4], DATA]), sep=";", decimal=","))
    runner = CliRunner()
    base = ["estimate", str(path), "--bound", "l2:10", "--non-private", "--json"]
    refused = runner.invoke(app, base + ["--out", str(tmp_path / "o1")])
    assert refused.exit_code == 2
    assert "--delimiter" in refused.output and "Traceback" not in refused.output
    done = runner.invoke(app, base + ["--out", str(tmp_path / "o2"), "--delimiter", ";",
                                      "--decimal", ",", "--index-col", "id"])
    assert done.exit_code == 0, done.output
    expected = PrivateCovariance(budget=NonPrivate(), bounds=RowNorm(10.0)).fit(DATA)
    np.testing.assert_allclose(np.load(tmp_path / "o2" / "covariance.npy"),
                               expected.covariance_, rtol=1e-12)
    headless = _write(tmp_path / "h.csv", _csv(DATA))
    done = runner.invoke(app, ["estimate", str(headless), "--bound", "l2:10", "--non-private",
                               "--json", "--no-header", "--out", str(tmp_path / "o3")])
    assert done.exit_code == 0, done.output
    np.testing.assert_allclose(np.load(tmp_path / "o3" / "covariance.npy"),
                               expected.covariance_, rtol=1e-12)


def test_cli_engine_options_checked_before_reading(tmp_path):
    path = _write(tmp_path / "d.csv", "a,b\n" + _csv(DATA[:, :2]))
    runner = CliRunner()
    base = ["estimate", str(path), "--bound", "l2:10", "--non-private", "--out",
            str(tmp_path / "o")]
    for extra, message in ((["--engine", "spark"], "--engine must be 'memory' or 'dask'"),
                           (["--scheduler", "tcp://x:1"], "--scheduler needs --engine dask"),
                           (["--index-col", "0"], "--index-col numbers columns from 1"),
                           (["--columns", "a,,b"], "--columns must be comma-separated")):
        result = runner.invoke(app, base + extra)
        assert result.exit_code == 2, (extra, result.output)
        assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_cli_reads_parquet_in_memory_and_fit_records_helper(tmp_path):
    from dpggm.cli.data_options import data_options, fit_records

    frame = pd.DataFrame(DATA, columns=["a", "b", "c"])
    path = tmp_path / "d.parquet"
    frame.to_parquet(path)
    result = CliRunner().invoke(app, ["estimate", str(path), "--bound", "l2:10",
                                      "--non-private", "--json", "--columns", "c,a",
                                      "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    expected = PrivateCovariance(budget=NonPrivate(), bounds=RowNorm(10.0)).fit(
        frame[["c", "a"]])
    np.testing.assert_allclose(np.load(tmp_path / "o" / "covariance.npy"),
                               expected.covariance_, rtol=1e-12)
    fitted = fit_records(PrivateCovariance(budget=NonPrivate(), bounds=RowNorm(10.0)), path,
                         data_options(columns="c,a"))
    np.testing.assert_allclose(fitted.covariance_, expected.covariance_, rtol=1e-12)
    assert list(fitted.feature_names_in_) == ["c", "a"]
