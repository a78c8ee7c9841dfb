"""Seeded fits of every estimator that reads private records are unchanged by the move of
the data path into its own layer (``tests/pinned_releases.npz``, written from the code
before the move by ``tests/pinned_releases.py``): the plan, the release, the ``privacy_``
record and the saved files, bit for bit, from arrays, DataFrames, CSV and Parquet files;
and what the command line delivers."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dpggm.cli.main import app
from pinned_releases import CASES, CLI_CASES, FIXTURE, command_line, delivered, fit_case, outputs

PINNED = np.load(FIXTURE)
RUNS = [(case, kind) for case in CASES for kind in case[2]]


def _same(prefix: str, got: dict[str, np.ndarray]) -> None:
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


@pytest.mark.parametrize("case,kind", RUNS, ids=[f"{c[0]}-{k}" for c, k in RUNS])
def test_seeded_fit_is_pinned(case, kind, tmp_path):
    _same(f"{case[0]}/{kind}/", outputs(fit_case(case, kind, tmp_path), tmp_path))


@pytest.mark.parametrize("case", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_seeded_command_line_release_is_pinned(case, tmp_path):
    args, out = command_line(case, tmp_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    _same(f"cli:{case[0]}/", delivered(out))
