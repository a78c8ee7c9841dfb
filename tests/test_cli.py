"""The command line, driven in-process."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm.cli.main import app

runner = CliRunner()


@pytest.fixture
def csv(tmp_path):
    X = np.random.default_rng(0).normal(size=(400, 4)) / 4
    path = tmp_path / "data.csv"
    pd.DataFrame(X, columns=["a", "b", "c", "d"]).to_csv(path, index=False)
    return path


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_help():
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("estimate", "demo", "budget", "solve"):
        assert command in result.output
    # The demo is described as what it runs: a synthetic graph, then breast-cancer data.
    text = " ".join(result.output.replace("│", " ").split())
    assert "synthetic measurements (a 10-variable chain)" in text
    assert "breast-cancer" in text


def test_estimate_writes_result_and_refuses_overwrite(csv, tmp_path):
    out = tmp_path / "out"
    result = invoke("estimate", csv, "--method", "ssp", "--rho", "0.5", "--bound", "l2:1",
                    "--out", out, "--seed", "3")
    assert result.exit_code == 0, result.output
    record = json.loads((out / "result.json").read_text())
    assert record["privacy"]["budget"] == {"notion": "zcdp", "rho": 0.5}
    assert record["features"] == ["a", "b", "c", "d"]
    cov = np.load(out / "covariance.npy")
    assert cov.shape == (4, 4)
    again = invoke("estimate", csv, "--rho", "0.5", "--bound", "l2:1", "--out", out)
    assert again.exit_code == 2
    assert "--overwrite" in again.output
    np.testing.assert_array_equal(np.load(out / "covariance.npy"), cov)


def test_estimate_same_seed_same_result_as_api(csv, tmp_path):
    from dpggm import ZCDP, PrivateCovariance, RowNorm

    invoke("estimate", csv, "--rho", "0.5", "--bound", "l2:1", "--out", tmp_path / "o", "--seed", "7")
    api = PrivateCovariance(budget=ZCDP(0.5), bounds=RowNorm(1.0), random_state=7).fit(str(csv))
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "noisy_covariance.npy"), api.noisy_covariance_)


def test_budget_options_must_be_exactly_one(csv, tmp_path):
    result = invoke("estimate", csv, "--rho", "0.5", "--mu", "1", "--bound", "l2:1", "--out", tmp_path / "x")
    assert result.exit_code == 2
    assert "exactly one budget" in result.output
    result = invoke("estimate", csv, "--rho", "0.5", "--out", tmp_path / "x")
    assert result.exit_code == 2 and "--bound is required" in result.output


def test_ledger_round_trip_and_overspend_refused(csv, tmp_path):
    ledger = tmp_path / "ledger.db"
    assert invoke("budget", "init", ledger, "--dataset", "d", "--rho", "1.0").exit_code == 0
    ok = invoke("estimate", csv, "--rho", "0.75", "--bound", "l2:1", "--out", tmp_path / "a",
                "--ledger", ledger, "--dataset", "d")
    assert ok.exit_code == 0, ok.output
    refused = invoke("estimate", csv, "--rho", "0.5", "--bound", "l2:1", "--out", tmp_path / "b",
                     "--ledger", ledger, "--dataset", "d")
    assert refused.exit_code == 2
    assert not (tmp_path / "b" / "result.json").exists()
    shown = invoke("budget", "show", ledger)
    assert shown.exit_code == 0 and "0.25" in shown.output
    history = invoke("budget", "history", ledger, "--dataset", "d", "--json")
    assert history.exit_code == 0
    assert "estimate --method ssp" in history.output


def test_demo_runs():
    result = invoke("demo")
    assert result.exit_code == 0, result.output
    assert "ssp" in result.output
    # The Mahalanobis errors (thousands) come with what they mean.
    text = " ".join(result.output.split())
    assert "Mahalanobis error: ||exact^-1/2 estimate exact^-1/2 - I||_F" in text
    assert "nearly collinear" in text and "Relative Frobenius error" in text


def test_publish_recover_round_trip_matches_api(tmp_path):
    from dpggm import NoisyGraphicalLasso, RowNorm, publish
    from dpggm.datasets import make_chain

    data = make_chain(n_samples=600, n_features=8, random_state=0)
    frame = pd.DataFrame(data.X / 4, columns=[f"v{j}" for j in range(8)])
    source = tmp_path / "private.csv"
    frame.to_csv(source, index=False)
    noisy_csv = tmp_path / "noisy.csv"
    result = invoke("publish", source, "--bound", "l2:2", "--sigma", "0.05", "--seed", "5",
                    "--out", noisy_csv)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "noisy.json").exists()
    api_release = publish(pd.read_csv(source), bounds=RowNorm(2.0), sigma=0.05, random_state=5)
    from_cli = pd.read_csv(noisy_csv)
    np.testing.assert_allclose(from_cli.to_numpy(), api_release.data.to_numpy(), rtol=1e-15)

    edges = tmp_path / "truth.csv"
    pairs = [(f"v{j}", f"v{j + 1}") for j in range(7)]
    pd.DataFrame(pairs, columns=["source", "target"]).to_csv(edges, index=False)
    out = tmp_path / "recovered"
    result = invoke("recover", noisy_csv, "--alpha", "0.01", "--truth", edges, "--out", out)
    assert result.exit_code == 0, result.output
    api = NoisyGraphicalLasso(alpha=0.01, noise_sigma=0.05, release=api_release).fit(from_cli)
    precision = pd.read_csv(out / "precision.csv").drop(columns="variable").to_numpy()
    np.testing.assert_allclose(precision, api.precision_, rtol=1e-8, atol=1e-10)
    assert "AUC" in result.output

    mismatch = invoke("recover", noisy_csv, "--sigma", "0.5", "--alpha", "0.01",
                      "--out", tmp_path / "other")
    assert mismatch.exit_code == 2
