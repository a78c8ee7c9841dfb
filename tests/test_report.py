"""``dpggm report`` and the HTML report, checked in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpggm import PrivateGraph
from dpggm.cli.graph import stage_graph_outputs
from dpggm.cli.main import app
from dpggm.cli.output import StagedOutput
from dpggm.datasets import make_chain, make_raw_chain
from dpggm.privacy.budgets import ZCDP
from dpggm.report import build_report, guarantee_in_words

runner = CliRunner()

WIDTH, HEIGHT = 1200, 1600


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory):
    frame, _ = make_raw_chain(n_samples=5000, n_features=8, random_state=0)
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)
    out = tmp_path_factory.mktemp("report") / "g"
    staged = StagedOutput(out)
    stage_graph_outputs(graph, staged, data_name="raw.csv", name=out.name)
    staged.commit()
    return out


def test_guarantee_in_words_states_what_rho_means():
    words = " ".join(guarantee_in_words({
        "budget": {"notion": "zcdp", "rho": 0.5},
        "approx_dp": {"notion": "approx-dp", "epsilon": 5.2, "delta": 1e-6},
        "neighbors": "add-remove", "validity": "valid", "reason": "",
    }))
    assert "ρ = 0.5" in words and "adding or removing one person's record" in words
    assert "ε = 5.2" in words and "δ = 1e-06" in words and "valid" in words
    invalid = " ".join(guarantee_in_words({
        "budget": {"notion": "pure-dp", "epsilon": 1.0}, "neighbors": "replace",
        "validity": "invalid", "reason": "the proof is wrong",
    }))
    assert "e^ε = 2.718" in invalid and "invalid -- the proof is wrong" in invalid


def test_report_of_graph_output_is_self_contained(graph_dir):
    html = build_report(graph_dir)
    assert html.startswith("<!DOCTYPE html>")
    assert html.count("<img ") == 2 and html.count("data:image/png;base64,") == 2
    for remote in ("http://", "https://", "<script", "<link"):
        assert remote not in html
    assert "How the budget was spent" in html and "bounds" in html and "centring" in html
    assert "x0" in html and "partial_correlation" in html


def test_report_of_estimate_and_recover_outputs(tmp_path):
    data = make_chain(n_samples=2000, n_features=6, random_state=1)
    csv = tmp_path / "d.csv"
    pd.DataFrame(data.X / 4, columns=[f"v{j}" for j in range(6)]).to_csv(csv, index=False)
    est = tmp_path / "est"
    result = runner.invoke(app, ["estimate", str(csv), "--method", "glasso", "--rho", "1",
                                 "--bound", "l2:2", "--alpha", "auto", "--seed", "0",
                                 "--out", str(est)])
    assert result.exit_code == 0, result.output
    written = runner.invoke(app, ["report", str(est)])
    assert written.exit_code == 0, written.output
    html = (est / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 2  # drawn from edges.csv and precision.npy
    assert "v0" in html and "ρ = 1" in html
    assert runner.invoke(app, ["report", str(est)]).exit_code == 2  # no silent overwrite

    noisy = tmp_path / "noisy.csv"
    assert runner.invoke(app, ["publish", str(csv), "--out", str(noisy), "--bound", "l2:2",
                               "--sigma", "0.1", "--seed", "0"]).exit_code == 0
    rec = tmp_path / "rec"
    assert runner.invoke(app, ["recover", str(noisy), "--alpha", "0.05",
                               "--out", str(rec)]).exit_code == 0
    html = build_report(rec)
    # Exact noise: the release states rho-zCDP (mu-GDP is claimed only for float noise).
    assert "ρ = " in html and html.count("data:image/png;base64,") == 2
    edges = pd.read_csv(rec / "edges.csv")
    assert list(edges.columns) == ["source", "target", "weight", "partial_correlation"]


def test_report_refuses_a_directory_without_result(tmp_path):
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "result.json" in result.output


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path is not None, (
        "headless Chromium is needed for this test: apt-get install -y chromium "
        "(.ci/run installs it)"
    )
    return path


def test_report_renders_in_headless_chromium(graph_dir, tmp_path):
    from matplotlib.image import imread

    shot = tmp_path / "report.png"
    completed = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
         f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}",
         (graph_dir / "report.html").as_uri()],
        capture_output=True, text=True, timeout=180,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    image = imread(shot)
    assert image.shape[:2] == (HEIGHT, WIDTH)
    grey = image[..., :3].mean(axis=2)
    # The picture sits below the title: rows 150-900, left half. A blank (white) or
    # missing image would leave it flat; the drawing has dark nodes, labels and edges.
    picture = grey[150:900, 40:600]
    assert picture.std() > 0.05
    assert (picture < 0.5).mean() > 0.002
    # The page also has text further down (the guarantee), so the render is complete.
    assert grey[900:HEIGHT].std() > 0.02
    assert np.isclose(grey[:, -20:].mean(), 1.0, atol=0.02)  # white margin: no overflow
