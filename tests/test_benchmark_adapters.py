"""The benchmarks run on demand, not in CI, so what they read off the library is checked
here: a renamed step or attribute must fail a test, not the next person's hour-long run
(the calibration study read the second moment's budget off a step called "graph" for
three weeks after the step was renamed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from dpggm import ZCDP, PrivateGraph

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_calibration_study_reads_the_release_of_a_fit():
    study = _module("calibration_study")
    X = np.random.default_rng(0).normal(size=(400, 4))
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(X)
    release = study.release_from_private_graph(graph)
    planned = graph.plan_.step("second moment").budget
    assert release.release_budget == pytest.approx(float(planned.rho))
    assert 0 < release.release_budget < 1.0
    assert release.noise_variance == graph.release_.noise_variance
    assert release.noisy_covariance.shape == (4, 4)
