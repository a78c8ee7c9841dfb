"""Command-line dead ends: every refusal names the option or the file's line and leaves
nothing behind; ``dpggm report`` rebuilds its own page."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm.cli.main import app
from dpggm.datasets import make_chain

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A private CSV, its noisy release (with metadata) and the true edges."""
    folder = tmp_path_factory.mktemp("release")
    data = make_chain(n_samples=400, n_features=5, random_state=2)
    frame = pd.DataFrame(data.X / 4, columns=[f"v{j}" for j in range(5)])
    frame.to_csv(folder / "private.csv", index=False)
    result = invoke("publish", folder / "private.csv", "--bound", "l2:2", "--sigma", "0.05",
                    "--seed", "1", "--out", folder / "noisy.csv")
    assert result.exit_code == 0, result.output
    pd.DataFrame([(f"v{j}", f"v{j + 1}") for j in range(4)],
                 columns=["source", "target"]).to_csv(folder / "truth.csv", index=False)
    return folder


@pytest.mark.parametrize("truth", ["a,b\nv0,nope\n", "source\nv0\n", "source,target\n"])
def test_recover_with_a_bad_truth_file_leaves_nothing(release, tmp_path, truth):
    bad = tmp_path / "truth.csv"
    bad.write_text(truth)
    out = tmp_path / "rec"
    result = invoke("recover", release / "noisy.csv", "--alpha", "0.05", "--truth", bad,
                    "--out", out)
    assert result.exit_code == 2 and "--truth" in result.output, result.output
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["truth.csv"]  # no staging debris


def test_recover_names_the_line_of_an_unknown_column(release, tmp_path):
    bad = tmp_path / "truth.csv"
    bad.write_text("source,target\nv0,v1\nv1,weight\n")
    result = invoke("recover", release / "noisy.csv", "--alpha", "0.05", "--truth", bad,
                    "--out", tmp_path / "rec")
    assert result.exit_code == 2
    assert "line 3" in result.output and "'weight'" in result.output


def test_recover_with_a_good_truth_file_writes_everything_at_once(release, tmp_path):
    out = tmp_path / "rec"
    result = invoke("recover", release / "noisy.csv", "--alpha", "0.05", "--truth",
                    release / "truth.csv", "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "auc.json", "edges.csv", "precision.csv", "recovery.json"]
    assert 0.5 < json.loads((out / "auc.json").read_text())["auc"] <= 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec"]


def test_recover_without_metadata_or_sigma_names_the_options(release, tmp_path):
    bare = tmp_path / "bare.csv"
    bare.write_text((release / "noisy.csv").read_text())
    out = tmp_path / "rec"
    result = invoke("recover", bare, "--alpha", "0.05", "--out", out)
    assert result.exit_code == 2
    assert "--sigma" in result.output and "--metadata" in result.output
    assert "noise_sigma" not in result.output and "bare.json" in result.output
    assert not out.exists()
    given = invoke("recover", bare, "--alpha", "0.05", "--sigma", "0.05", "--out", out)
    assert given.exit_code == 0, given.output


@pytest.mark.parametrize("field, words", [("", "line 4, column 'v2'"),
                                          ("inf", "line 4, column 'v2'"),
                                          ("abc", "'abc' in column 'v2' on line 4")])
def test_publish_names_the_file_and_its_line(release, tmp_path, field, words):
    lines = (release / "private.csv").read_text().splitlines()
    cells = lines[3].split(",")
    cells[2] = field
    lines[3] = ",".join(cells)
    broken = tmp_path / "broken.csv"
    broken.write_text("\n".join(lines) + "\n")
    out = tmp_path / "noisy.csv"
    result = invoke("publish", broken, "--bound", "l2:2", "--sigma", "0.1", "--out", out)
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "broken.csv" in text and words in text, text
    assert "row 2" not in text
    assert not out.exists()


@pytest.mark.parametrize("content, words", [
    ("hello world\n", "line 1 holds 'hello world' and no line of numbers follows"),
    ("a,b\n1,0.5\n0.5,oops\n", "line 3 holds 'oops'"),
    ("a,b\n1,\n0.5,1\n", "line 2 has an empty field"),
    ("1,0.5,0\n0.5,1,0\n", "shape (2, 3)"),
    ("", "is empty"),
])
def test_solve_says_what_is_wrong_with_the_file(tmp_path, content, words):
    path = tmp_path / "matrix.txt"
    path.write_text(content)
    result = invoke("solve", path, "--alpha", "0.1", "--out", tmp_path / "s")
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert words in text and "got shape (0, 1)" not in text, text
    assert not (tmp_path / "s").exists()


def test_solve_refuses_a_file_that_is_not_npy(tmp_path):
    path = tmp_path / "matrix.npy"
    path.write_text("1,2\n3,4\n")
    result = invoke("solve", path, "--alpha", "0.1", "--out", tmp_path / "s")
    assert result.exit_code == 2 and "not a NumPy .npy file" in result.output


def test_solve_reads_a_matrix_with_and_without_header(tmp_path):
    with_names = tmp_path / "named.csv"
    with_names.write_text("a,b\n1,0.5\n0.5,1\n")
    plain = tmp_path / "plain.csv"
    plain.write_text("1,0.5\n0.5,1\n")
    for path, names in ((with_names, ["a", "b"]), (plain, ["x0", "x1"])):
        out = tmp_path / f"s-{path.stem}"
        result = invoke("solve", path, "--alpha", "0.1", "--out", out)
        assert result.exit_code == 0, result.output
        assert json.loads((out / "result.json").read_text())["features"] == names
        # 2x2 lasso with an unpenalised diagonal: off-diagonal covariance 0.5 - 0.1.
        covariance = np.load(out / "covariance.npy")
        np.testing.assert_allclose(covariance, [[1.0, 0.4], [0.4, 1.0]], atol=1e-8)


def test_report_rebuilds_its_own_page_atomically(release, tmp_path):
    out = tmp_path / "rec"
    assert invoke("recover", release / "noisy.csv", "--alpha", "0.05", "--out",
                  out).exit_code == 0
    first = invoke("report", out)
    assert first.exit_code == 0, first.output
    page = out / "report.html"
    page.write_text("stale")
    again = invoke("report", out)
    assert again.exit_code == 0, again.output
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in out.iterdir()) == [
        "edges.csv", "precision.csv", "recovery.json", "report.html"]  # no temporary left
    elsewhere = tmp_path / "copy.html"
    elsewhere.write_text("mine")
    refused = invoke("report", out, "--out", elsewhere)
    assert refused.exit_code == 2 and "--overwrite" in refused.output
    assert elsewhere.read_text() == "mine"
    assert invoke("report", out, "--out", elsewhere, "--overwrite").exit_code == 0
    assert elsewhere.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
