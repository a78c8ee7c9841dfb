"""Seeded fits of every estimator that reads private records are unchanged by the move of
the data path into its own layer (``tests/pinned_releases.npz``, written from the code
before the move by ``tests/pinned_releases.py``): the plan, the release, the ``privacy_``
record and the saved files, bit for bit, from arrays, DataFrames, CSV and Parquet files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pinned_releases import CASES, FIXTURE, fit_case, outputs

PINNED = np.load(FIXTURE)
RUNS = [(case, kind) for case in CASES for kind in case[2]]


@pytest.mark.parametrize("case,kind", RUNS, ids=[f"{c[0]}-{k}" for c, k in RUNS])
def test_seeded_fit_is_pinned(case, kind, tmp_path):
    prefix = f"{case[0]}/{kind}/"
    got = outputs(fit_case(case, kind, tmp_path), tmp_path)
    keys = sorted(k[len(prefix):] for k in PINNED.files if k.startswith(prefix))
    assert keys, f"nothing pinned for {prefix}"
    assert sorted(got) == keys
    for key in keys:
        expected = PINNED[prefix + key]
        value = np.asarray(got[key])
        if expected.dtype.kind == "U" and expected.ndim == 0 and key != "file:edges.csv" and (
                str(expected)[:1] in "{["):
            assert json.loads(str(value)) == json.loads(str(expected)), key
        else:
            assert value.dtype == expected.dtype, key
            np.testing.assert_array_equal(value, expected, err_msg=key, strict=True)
