"""The data path: input validation, chunked second moments, centering, and a fit from a
file holding a few blocks of it, whatever its number of records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpggm import ZCDP, Box, PrivateCovariance, RowNorm
from dpggm.data.records import clipped_second_moment
from dpggm.data.tables import as_matrix

SRC = str(Path(__file__).resolve().parents[1] / "src")


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


# -- a fit from a file holds a few blocks of it ---------------------------------------

#: In a fresh interpreter (nothing left by other tests): a first fit of a small file loads
#: the modules and compiled kernels, then each file's fit is measured alone -- the peak of
#: what Python and NumPy allocate during it (tracemalloc sees every NumPy array) -- and,
#: over the whole run, the peak of pyarrow's pool (which holds what the CSV parser reads).
_MEASURED_FITS = """
import json, sys, tracemalloc
import pyarrow as pa
from dpggm import ZCDP, PrivateGraph, TableFile
from dpggm.data import file_records

block, limit, small, *paths = sys.argv[1:]
file_records.MEMORY_LIMIT = int(limit)


def fit(path):
    table = TableFile(path, block_size=int(block))
    return PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(table)


fit(small)
tracemalloc.start()
peaks, records = [], []
for path in paths:
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    graph = fit(path)
    peaks.append(tracemalloc.get_traced_memory()[1] - before)
    records.append(int(graph.n_samples_))
    del graph
print(json.dumps({"peaks": peaks, "records": records,
                  "arrow": pa.default_memory_pool().max_memory()}))
"""


def _write_records(path: Path, n: int, p: int = 5) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(n)
    values = rng.standard_normal((n, p)) @ np.triu(np.ones((p, p)))
    pacsv.write_csv(pa.table({f"x{j}": values[:, j] for j in range(p)}), path)


def _measured_fits(block: int, memory_limit: int, small: Path, *paths: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED_FITS, str(block), str(memory_limit), str(small),
         *map(str, paths)],
        env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, check=True,
        timeout=600)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_fit_from_a_csv_file_holds_a_few_blocks_of_it_whatever_its_length(tmp_path):
    """PrivateGraph on a CSV file larger than the memory limit streams it: the file is
    parsed in blocks of ``block_size`` bytes and every pass reads them back one by one,
    so what the fit allocates does not grow with the number of records. The control (the
    same fit with the limit above the file, which keeps the parsed blocks in memory)
    shows that the measurement sees records held in memory."""
    p, block = 5, 1 << 16
    small, shorter, longer = (tmp_path / f"{name}.csv" for name in ("small", "short", "long"))
    _write_records(small, 2_000, p)
    _write_records(shorter, 40_000, p)
    _write_records(longer, 320_000, p)
    matrix = 320_000 * p * 8  # the longer file's records as one float64 matrix: 12.8 MB
    assert longer.stat().st_size > 20 * (1 << 20)
    streamed = _measured_fits(block, 1 << 18, small, shorter, longer)
    held = _measured_fits(block, 1 << 30, small, longer)
    assert streamed["records"] == [40_000, 320_000] and held["records"] == [320_000]
    assert held["peaks"][0] > matrix  # the blocks kept in memory are seen
    shorter_peak, longer_peak = streamed["peaks"]
    # Not a copy of the records (12.8 MB), nor anything that grows with their number: 8
    # times the records (11 MB more as one matrix) take no more than a few blocks more.
    assert longer_peak < matrix / 4, streamed
    assert longer_peak - shorter_peak < 8 * block, streamed
    # pyarrow parses a block at a time (a whole-file read_csv would hold the 30 MB file).
    assert streamed["arrow"] < 16 * block, streamed
