"""Seeded fits of the main job are unchanged by its speed work: plans, releases, records and
the inference table are pinned (``tests/pinned_fits.npz``, written from the code before the
work by ``tests/pinned_fits.py``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pinned_fits import CASES, FIXTURE, fit_case, outputs

PINNED = np.load(FIXTURE)


@pytest.mark.parametrize("name,data,options", CASES, ids=[c[0] for c in CASES])
def test_seeded_fit_is_pinned(name, data, options):
    got = outputs(fit_case(data, options))
    keys = sorted(k.split("/", 1)[1] for k in PINNED.files if k.startswith(name + "/"))
    assert sorted(got) == keys
    for key in keys:
        expected = PINNED[f"{name}/{key}"]
        value = np.asarray(got[key])
        if key == "record":
            assert json.loads(str(value)) == json.loads(str(expected))
        elif expected.dtype.kind in "fc":
            # The release and the plan are exact; the post-processing to 1e-10.
            np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12, err_msg=key)
        else:
            np.testing.assert_array_equal(value, expected, err_msg=key)
