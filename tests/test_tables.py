"""Real tables, first time right: the tables people export (blank lines, identifiers,
dates, categories, NA markers, thousands separators, numeric headers, spreadsheets,
statistics packages, compressed CSV, Parquet folders) are read as their public schema
says, and what would distort a release is refused before any draw."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import ZCDP, CuratorWarning, NonPrivate, PrivateGraph, TableFile, TableSchema
from dpggm.cli.main import app
from dpggm.data.records import clipped_second_moment
from dpggm.data.tables import as_matrix
from dpggm.mechanisms.bounds import RowNorm

runner = CliRunner()

VALUES = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 5.0], [4.0, 6.0, 2.0], [3.0, 5.0, 6.0],
                   [5.0, 3.0, 1.0], [6.0, 4.0, 4.0]])


def _write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def _table(values=VALUES, names=("a", "b", "c"), sep=",", ids=True):
    header = (["id"] if ids else []) + list(names)
    lines = [sep.join(header)]
    for k, row in enumerate(values):
        cells = ([str(101 + 7 * k)] if ids else []) + [f"{v:g}" for v in row]
        lines.append(sep.join(cells))
    return "\n".join(lines) + "\n"


def _matrix(source, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CuratorWarning)
        return as_matrix(source, **kw)


# ------------------------------------------------------------------ records of a file


def test_blank_lines_and_rows_of_bare_delimiters_are_not_records(tmp_path):
    body = _table()
    lines = body.splitlines()
    text = "\n".join(lines[:3] + ["", ",,,", " NA , NA ,NA,#N/A"] + lines[3:] + [""]) + "\n\n\n"
    path = _write(tmp_path / "d.csv", text)
    # Today: three trailing empty lines and the empty rows became imputed records.
    values, columns = _matrix(TableFile(path, index_col="id"))
    assert columns == ["a", "b", "c"]
    np.testing.assert_array_equal(values, VALUES)
    # A respondent with an identifier and no answer is someone: a record.
    with_id_only = _write(tmp_path / "e.csv", body + "999,,,\n\n")
    values, _ = _matrix(TableFile(with_id_only, index_col="id"), missing="impute")
    assert values.shape == (7, 3) and np.isnan(values[-1]).all()
    graph = PrivateGraph(budget=NonPrivate(), random_state=0).fit(
        TableFile(path, index_col="id"))
    assert graph.n_samples_ == 6
    # The count released is the same for every reader: in memory, in blocks, by Dask.
    small_blocks = TableFile(path, index_col="id", block_size=1024)
    assert clipped_second_moment(small_blocks, bounds=RowNorm(10.0)).n == 6
    from dpggm.data.file_records import FileRecords
    from dpggm.data.passes import Moments

    with FileRecords(small_blocks, memory_limit=0) as records:  # through the temporary file
        assert records.run(Moments()).rows == 6 and records.n_samples == 6


def test_empty_rows_of_the_dask_reader_match_memory(tmp_path):
    pytest.importorskip("dask.dataframe")
    from dpggm.data.dask_records import read_dask

    path = _write(tmp_path / "d.csv", _table() + "\n,,,\n\n\n")
    frame = read_dask(TableFile(path, index_col="id"))
    assert list(frame.columns) == ["a", "b", "c"]
    np.testing.assert_array_equal(frame.compute().to_numpy(), VALUES)
    parquet = pd.DataFrame(VALUES, columns=["a", "b", "c"])
    parquet.loc[len(parquet)] = np.nan
    parquet.to_parquet(tmp_path / "p.parquet")
    assert len(read_dask(str(tmp_path / "p.parquet")).compute()) == 6
    assert _matrix(tmp_path / "p.parquet")[0].shape == (6, 3)


# ------------------------------------------------------------------ column roles


def test_identifier_column_declared_or_flagged_to_the_curator(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.integers(1, 7, (40, 3)).astype(float)
    path = _write(tmp_path / "d.csv", _table(values))
    values_out, columns = _matrix(TableFile(path, id_columns=["id"]))
    assert columns == ["a", "b", "c"]
    # Undeclared, the identifier stays a variable (the release is never changed
    # silently), and the curator is told why it looks like one.
    with pytest.warns(CuratorWarning, match=r"curator only.*'id'.*whole numbers increasing"):
        _, columns = as_matrix(path)
    assert columns == ["id", "a", "b", "c"]
    shuffled = pd.DataFrame(values, columns=["a", "b", "c"])
    shuffled.insert(0, "patient_id", rng.permutation(40) + 500)
    shuffled.to_csv(tmp_path / "e.csv", index=False)
    with pytest.warns(CuratorWarning, match=r"'patient_id'.*its name"):
        as_matrix(tmp_path / "e.csv")
    result = runner.invoke(app, ["estimate", str(path), "--bound", "l2:10", "--non-private",
                                 "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert "curator only (do not publish): column 'id'" in result.output
    assert "--id-col id" in result.output


def test_drop_by_name_and_pattern(tmp_path):
    frame = pd.DataFrame(VALUES, columns=["item_1", "item_2", "age"])
    frame.insert(0, "date", "2023-01-01")
    frame.insert(1, "sex", "f")
    frame.to_csv(tmp_path / "d.csv", index=False)
    values, columns = _matrix(TableFile(tmp_path / "d.csv", drop=["date", "s?x"]))
    assert columns == ["item_1", "item_2", "age"]
    np.testing.assert_array_equal(values, VALUES)
    _, columns = _matrix(TableFile(tmp_path / "d.csv", drop=["date", "sex", "item_*"]))
    assert columns == ["age"]
    _, columns = _matrix(TableFile(tmp_path / "d.csv", columns=["age", "item_*"]))
    assert columns == ["age", "item_1", "item_2"]
    with pytest.raises(ValueError, match=r"drop 'dat' matches no column.*'date', 'sex'"):
        _matrix(TableFile(tmp_path / "d.csv", drop=["dat", "sex"]))
    result = runner.invoke(app, ["estimate", str(tmp_path / "d.csv"), "--bound", "l2:10",
                                 "--non-private", "--drop", "date,itme_*", "--out",
                                 str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "--drop 'itme_*' matches no column" in result.output
    result = runner.invoke(app, ["estimate", str(tmp_path / "d.csv"), "--bound", "l2:10",
                                 "--non-private", "--json", "--drop", "date,sex", "--out",
                                 str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "o" / "result.json").read_text())["features"] == [
        "item_1", "item_2", "age"]


def test_names_with_commas_and_spaces_can_be_named(tmp_path):
    frame = pd.DataFrame(VALUES, columns=["pain, worst", "sleep quality", "mood"])
    frame.insert(0, "notes, free text", "x")
    frame.to_csv(tmp_path / "d.csv", index=False)
    result = runner.invoke(app, ["estimate", str(tmp_path / "d.csv"), "--bound", "l2:10",
                                 "--non-private", "--drop", '"notes, free text"',
                                 "--columns", '"pain, worst", sleep quality',
                                 "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "o" / "result.json").read_text())
    assert record["features"] == ["pain, worst", "sleep quality"]


def test_duplicated_column_in_columns_refused(tmp_path):
    path = _write(tmp_path / "d.csv", _table(ids=False))
    with pytest.raises(ValueError, match=r"column 'a' is listed twice in columns"):
        _matrix(TableFile(path, columns=["a", "a", "b"]))
    result = runner.invoke(app, ["graph", str(path), "--rho", "1", "--columns", "a,a,b",
                                 "--out", str(tmp_path / "g")])
    assert result.exit_code == 2
    assert "column 'a' is listed twice in --columns" in result.output
    assert not (tmp_path / "g").exists()
    frame = pd.DataFrame(VALUES, columns=["a", "a", "b"])
    with pytest.raises(ValueError, match=r"column name 'a' twice"):
        PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)


def test_messages_name_the_command_line_options(tmp_path):
    path = _write(tmp_path / "d.csv", _table())
    result = runner.invoke(app, ["graph", str(path), "--rho", "1", "--index-col", "99",
                                 "--out", str(tmp_path / "g")])
    assert result.exit_code == 2
    assert "--index-col 99 is not a column" in result.output
    assert "numbered 1 to 4" in result.output and "position" not in result.output
    frame = pd.read_csv(tmp_path / "d.csv")
    frame["city"] = "Oslo"
    frame.to_csv(tmp_path / "e.csv", index=False)
    result = runner.invoke(app, ["estimate", str(tmp_path / "e.csv"), "--bound", "l2:10",
                                 "--non-private", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "--drop" in result.output, result.output
    assert "columns=" not in result.output and "drop=" not in result.output


# ------------------------------------------------------------------ formats


def _expected(tmp_path):
    frame = pd.DataFrame(VALUES, columns=["a", "b", "c"])
    frame.insert(0, "id", np.arange(101, 107))
    return frame


def test_compressed_csv_by_suffix_and_content(tmp_path):
    text = _table().encode()
    zst = pytest.importorskip("zstandard")
    files = {
        "d.csv.gz": gzip.compress(text), "d.csv.bz2": bz2.compress(text),
        "d.csv.xz": lzma.compress(text), "d.csv.zst": zst.ZstdCompressor().compress(text),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    with zipfile.ZipFile(tmp_path / "d.csv.zip", "w") as archive:
        archive.writestr("d.csv", text)
    # A compressed file named like a plain CSV is recognised by its first bytes.
    (tmp_path / "mislabelled.csv").write_bytes(gzip.compress(text))
    for name in [*files, "d.csv.zip", "mislabelled.csv"]:
        values, columns = _matrix(TableFile(tmp_path / name, index_col="id",
                                            block_size=1024))
        assert columns == ["a", "b", "c"], name
        np.testing.assert_array_equal(values, VALUES)


def test_spreadsheets_read_like_the_csv(tmp_path):
    pytest.importorskip("openpyxl")
    frame = _expected(tmp_path).astype(object)
    frame.loc[2, "b"] = "NA"  # text marker in a cell
    frame.loc[3, "c"] = " 5 "  # a number stored as text
    frame.to_excel(tmp_path / "d.xlsx", index=False)
    values, columns = _matrix(TableFile(tmp_path / "d.xlsx", index_col="id"),
                              missing="impute")
    assert columns == ["a", "b", "c"]
    expected = VALUES.copy()
    expected[2, 1] = np.nan
    expected[3, 2] = 5.0
    np.testing.assert_array_equal(values, expected)
    # A workbook saved under a CSV name is read as what it is.
    (tmp_path / "renamed.csv").write_bytes((tmp_path / "d.xlsx").read_bytes())
    renamed, _ = _matrix(TableFile(tmp_path / "renamed.csv", index_col="id"),
                         missing="impute")
    np.testing.assert_array_equal(renamed, expected)
    frame.loc[4, "a"] = "n/a?"
    frame.to_excel(tmp_path / "e.xlsx", index=False)
    with pytest.raises(ValueError, match=r"non-numeric value 'n/a\?' in column 'a' in row 6"):
        _matrix(TableFile(tmp_path / "e.xlsx", index_col="id"))
    pytest.importorskip("odf")
    _expected(tmp_path).to_excel(tmp_path / "d.ods", index=False, engine="odf")
    values, _ = _matrix(TableFile(tmp_path / "d.ods", index_col="id"))
    np.testing.assert_array_equal(values, VALUES)
    result = runner.invoke(app, ["estimate", str(tmp_path / "d.ods"), "--bound", "l2:10",
                                 "--non-private", "--id-col", "id", "--sheet", "1",
                                 "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output


def test_statistics_packages_codes_not_labels(tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    frame = _expected(tmp_path).astype(float)
    frame["sex"] = [1.0, 2.0, 1.0, 2.0, 2.0, 1.0]
    frame.loc[1, "a"] = 99.0  # declared user-missing in SPSS
    frame.loc[len(frame)] = np.nan  # an empty case
    pyreadstat.write_sav(frame, str(tmp_path / "d.sav"),
                         variable_value_labels={"sex": {1.0: "female", 2.0: "male"}},
                         missing_ranges={"a": [99.0]})
    values, columns = _matrix(TableFile(tmp_path / "d.sav", index_col="id"),
                              missing="impute")
    assert columns == ["a", "b", "c", "sex"]
    assert values.shape == (6, 4) and np.isnan(values[1, 0])
    np.testing.assert_array_equal(values[:, 3], [1, 2, 1, 2, 2, 1])  # the codes
    frame.iloc[:6].to_stata(tmp_path / "d.dta", write_index=False)
    values, columns = _matrix(TableFile(tmp_path / "d.dta", index_col="id"),
                              missing="impute")
    assert columns == ["a", "b", "c", "sex"] and values.shape == (6, 4)
    pyreadstat.write_xport(frame.iloc[:6].fillna(0.0), str(tmp_path / "d.xpt"), file_format_version=5)
    values, _ = _matrix(TableFile(tmp_path / "d.xpt", index_col="id"))
    assert values.shape == (6, 4)


def test_parquet_folder_is_one_table_in_memory(tmp_path):
    frame = _expected(tmp_path)
    folder = tmp_path / "parts"
    folder.mkdir()
    frame.iloc[:2].to_parquet(folder / "part-0.parquet")
    frame.iloc[2:].to_parquet(folder / "part-1.parquet")
    (folder / "_SUCCESS").write_text("")
    values, columns = _matrix(TableFile(folder, index_col="id"))
    assert columns == ["a", "b", "c"]
    np.testing.assert_array_equal(values, VALUES)
    result = runner.invoke(app, ["graph", str(folder), "--non-private", "--id-col", "id",
                                 "--out", str(tmp_path / "g")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "g" / "result.json").read_text())["n_samples"] == 6
    frame[["a", "b"]].iloc[:1].to_parquet(folder / "part-2.parquet")
    with pytest.raises(ValueError, match=r"every part must have the same columns"):
        _matrix(TableFile(folder, index_col="id"))


# ------------------------------------------------------------------ cells


def test_missing_value_markers(tmp_path):
    text = ("id,a,b,c\n1,1,2,3\n2,NA,1,5\n3,4,#N/A,2\n4,3,5, NA \n5,nan,3,N/A\n"
            '6,"NA",4,4\n7,-99,2,2\n8,2,-99.0,1\n')
    path = _write(tmp_path / "d.csv", text)
    markers = _write(tmp_path / "m.csv", text.rsplit("7,", 1)[0])
    values, _ = _matrix(TableFile(markers, index_col="id"), missing="impute")
    assert np.isnan(values).sum() == 6  # R's NA, Excel's #N/A, NaN, within spaces, quoted
    values, _ = _matrix(TableFile(path, id_columns=["id"], na_values=["-99"]),
                        missing="impute")
    assert np.isnan(values).sum() == 8
    assert np.isnan(values[[1, 4, 5, 6], 0]).all() and np.isnan(values[[2, 7], 1]).all()
    result = runner.invoke(app, ["estimate", str(path), "--bound", "l2:10", "--non-private",
                                 "--id-col", "id", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "'-99'" not in result.output  # the first missing cell
    assert "missing value (first at line 3, column 'a')" in result.output


def test_thousands_separators(tmp_path):
    text = 'id,income,age\n1,"157,000.00",34\n2,"1,200",51\n3,980.5,29\n4,"12,345,678.9",40\n'
    path = _write(tmp_path / "d.csv", text)
    with pytest.raises(ValueError, match=r"'157,000.00' in column 'income' on line 2.*thousands"):
        _matrix(TableFile(path, id_columns=["id"]))
    values, _ = _matrix(TableFile(path, id_columns=["id"], thousands=","))
    np.testing.assert_array_equal(values[:, 0], [157000.0, 1200.0, 980.5, 12345678.9])
    # A separator not between groups of three digits is no thousands separator.
    bad = _write(tmp_path / "e.csv", 'a,b\n"1,5",2\n3,4\n')
    with pytest.raises(ValueError, match=r"'1,5' in column 'a' on line 2"):
        _matrix(TableFile(bad, thousands=","))
    european = _write(tmp_path / "f.csv", "a;b\n1.234,5;2\n980,25;3\n7;4\n")
    values, _ = _matrix(TableFile(european, delimiter=";", decimal=",", thousands="."))
    np.testing.assert_array_equal(values[:, 0], [1234.5, 980.25, 7.0])
    result = runner.invoke(app, ["estimate", str(path), "--bound", "l2:1e9", "--non-private",
                                 "--id-col", "id", "--thousands", ",",
                                 "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output


def test_header_of_column_numbers(tmp_path):
    for header in ("0,1,2", "1,2,3"):
        path = _write(tmp_path / "d.csv", header + "\n" + _table(ids=False).split("\n", 1)[1])
        values, columns = _matrix(path)
        assert columns == header.split(",")
        np.testing.assert_array_equal(values, VALUES)  # no record lost
    years = _write(tmp_path / "y.csv", "2019,2020,2021\n" + _table(ids=False).split("\n", 1)[1])
    with pytest.raises(ValueError, match=r"looks like a record.*header=False.*header=True"):
        _matrix(years)
    assert _matrix(TableFile(years, header=True))[1] == ["2019", "2020", "2021"]
    result = runner.invoke(app, ["estimate", str(years), "--bound", "l2:10", "--non-private",
                                 "--header", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------ refusals


def _ledger(tmp_path):
    ledger = tmp_path / "l.db"
    assert runner.invoke(app, ["budget", "init", str(ledger), "--dataset", "d",
                               "--rho", "5"]).exit_code == 0
    return ledger


@pytest.mark.parametrize("column, words", [
    (["NA"] * 6, "hold no value"),
    ([3.0] * 6, "hold one value in every record"),
])
def test_empty_or_constant_column_refused_before_any_draw(tmp_path, column, words):
    frame = pd.DataFrame(VALUES, columns=["a", "b", "c"])
    frame["flat"] = column
    frame.to_csv(tmp_path / "d.csv", index=False)
    ledger = _ledger(tmp_path)
    result = runner.invoke(app, ["graph", str(tmp_path / "d.csv"), "--rho", "1", "--ledger",
                                 str(ledger), "--dataset", "d", "--out", str(tmp_path / "g")])
    assert result.exit_code == 2
    assert f"column(s) 'flat' {words}" in result.output and "Curator only" in result.output
    assert not (tmp_path / "g").exists()
    from dpggm.privacy.ledger import Ledger

    assert Ledger(ledger, create=False).history("d") == []
    with pytest.raises(ValueError, match=words):
        PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(
            frame.replace("NA", np.nan).astype(float))


def test_one_extreme_cell_is_clipped_and_counted_not_refused(tmp_path):
    rng = np.random.default_rng(1)
    values = rng.normal(size=(300, 3))
    values[17, 1] = 1e308
    pd.DataFrame(values, columns=["a", "b", "c"]).to_csv(tmp_path / "d.csv", index=False)
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(tmp_path / "d.csv")
    assert graph.n_samples_ == 300
    assert graph.clipping_["outside_by_column"]["b"] >= 1


# ------------------------------------------------------------------ schema


def test_schema_files_declare_roles_and_ranges(tmp_path):
    frame = pd.DataFrame(VALUES, columns=["item_1", "item_2", "crp"])
    frame.insert(0, "id", range(6))
    frame.insert(1, "visit", "2023-01-01")
    frame.to_csv(tmp_path / "d.csv", index=False)
    spec = {"columns": {"id": "id", "visit": "drop",
                        "item_*": {"kind": "ordinal", "bounds": [1, 6]},
                        "crp": {"kind": "continuous", "bounds": "0:300"}}}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    yaml = pytest.importorskip("yaml")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    for schema in ("s.json", "s.yaml"):
        table = TableFile(tmp_path / "d.csv", schema=tmp_path / schema)
        resolved = table.resolve()
        assert resolved.variables == ["item_1", "item_2", "crp"]
        assert resolved.identifiers == ["id"] and resolved.dropped == ["visit"]
        assert resolved.kinds == {"item_1": "ordinal", "item_2": "ordinal",
                                  "crp": "continuous"}
        assert table.declared_ranges() == {"item_1": (1.0, 6.0), "item_2": (1.0, 6.0),
                                           "crp": (0.0, 300.0)}
    # An exact name wins over a pattern; two patterns that disagree are refused.
    schema = TableSchema.build(scales={"item_*": (1, 6), "item_2": (0, 10)})
    assert schema.resolve(["item_1", "item_2"]).ranges["item_2"] == (0.0, 10.0)
    clash = TableSchema.build(scales={"item_*": (1, 6), "*_2": (0, 10)})
    with pytest.raises(ValueError, match=r"'item_2' .* declared twice with different bounds"):
        clash.resolve(["item_1", "item_2"])
    with pytest.raises(ValueError, match=r"declared 'id' .* not a variable"):
        TableSchema.build(id=["id"], scales={"i*": (0, 1)}).resolve(["id", "x"])
    strict = TableSchema.from_dict({"columns": {"item_*": "ordinal"}, "others": "refuse"})
    with pytest.raises(ValueError, match=r"does not declare: 'crp'"):
        strict.resolve(["item_1", "crp"])
    with pytest.raises(ValueError, match=r"kind of 'x' must be one of"):
        TableSchema.from_dict({"columns": {"x": "nominal"}})


def test_declared_ranges_reach_the_release(tmp_path):
    rng = np.random.default_rng(2)
    items = pd.DataFrame(rng.integers(1, 7, (400, 4)).astype(float),
                         columns=[f"item_{k}" for k in range(1, 5)])
    items.insert(0, "id", range(1, 401))
    items.to_csv(tmp_path / "d.csv", index=False)
    table = TableFile(tmp_path / "d.csv", id_columns=["id"], scales={"item_*": (1, 6)})
    with pytest.raises(ValueError, match=r"schema declares 'item_1' in \[1, 6\].*column_ranges"):
        PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(table)
    graph = PrivateGraph(budget=ZCDP(1.0), column_ranges=table.declared_ranges(),
                         random_state=0).fit(table)
    assert graph.privacy_.bounds["declared_ranges"]["item_3"] == [1.0, 6.0]
    result = runner.invoke(app, ["graph", str(tmp_path / "d.csv"), "--rho", "1", "--id-col",
                                 "id", "--scale", "item_*=1:6", "--seed", "0",
                                 "--out", str(tmp_path / "g")])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "g" / "result.json").read_text())
    assert record["privacy"]["bounds"]["declared_ranges"] == {
        f"item_{k}": [1.0, 6.0] for k in range(1, 5)}
    result = runner.invoke(app, ["graph", str(tmp_path / "d.csv"), "--rho", "1", "--scale",
                                 "item_*=6:1", "--out", str(tmp_path / "h")])
    assert result.exit_code == 2 and "--scale 'item_*=6:1'" in result.output


def test_questionnaire_export_is_read_alike_in_every_format(tmp_path):
    pytest.importorskip("openpyxl")
    pytest.importorskip("pyreadstat")
    from dpggm.datasets import make_questionnaire_export

    export = make_questionnaire_export(tmp_path, n_respondents=300, random_state=4)
    assert len(export.skewed) == 8
    assert min(export.top_share[k] for k in export.skewed) >= 0.7
    share = export.answers[export.items].isna().to_numpy().mean()
    assert 0.06 < share < 0.10
    present = export.answers[export.items].notna().to_numpy()
    np.testing.assert_array_equal(export.answers[export.items].to_numpy()[present],
                                  export.complete[export.items].to_numpy()[present])
    expected = export.answers[export.items].to_numpy()
    for kind, path in export.files.items():
        options = {"delimiter": ";", "decimal": ","} if kind == "eu.csv" else {}
        values, columns = _matrix(TableFile(path, drop=["date", "sex"], index_col="id",
                                            **options), missing="impute")
        assert columns == export.items, kind
        np.testing.assert_array_equal(values, expected, err_msg=kind)


def test_a_missing_reader_library_names_the_extra(tmp_path, monkeypatch):
    pytest.importorskip("openpyxl")
    _expected(tmp_path).to_excel(tmp_path / "d.xlsx", index=False)
    monkeypatch.setitem(__import__("sys").modules, "openpyxl", None)
    with pytest.raises(ImportError, match=r"needs the package openpyxl: pip install "
                                          r"'dpggm\[formats\]'"):
        as_matrix(TableFile(tmp_path / "d.xlsx", index_col="id"))
    result = runner.invoke(app, ["estimate", str(tmp_path / "d.xlsx"), "--bound", "l2:10",
                                 "--non-private", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "dpggm[formats]" in result.output
    assert "internal error" not in result.output and len(result.output.splitlines()) <= 2


def test_publish_reads_records_with_the_same_options(tmp_path):
    frame = _expected(tmp_path)
    frame.insert(1, "visit", "2023-01-01")
    frame.to_csv(tmp_path / "d.csv", index=False)
    with open(tmp_path / "d.csv", "a") as handle:
        handle.write("\n,,,,\n\n")
    result = runner.invoke(app, ["publish", str(tmp_path / "d.csv"), "--out",
                                 str(tmp_path / "noisy.csv"), "--bound", "box:10", "--sigma",
                                 "1", "--seed", "0", "--id-col", "id", "--drop", "visit"])
    assert result.exit_code == 0, result.output
    noisy = pd.read_csv(tmp_path / "noisy.csv")
    assert list(noisy.columns) == ["a", "b", "c"] and len(noisy) == 6
