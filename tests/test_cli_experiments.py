"""`dpggm experiment` behaviour: defaults, figures, warnings, tables."""

from __future__ import annotations

import warnings

import pandas as pd
from typer.testing import CliRunner

from dpggm.cli.main import app

runner = CliRunner()


def test_covariance_perturbation_writes_a_png_beside_its_csv_files(tmp_path):
    from dpggm.experiments.covariance_perturbation import run_covariance_perturbation

    run_covariance_perturbation(n_features=5, ratios=(600.0,), epsilons=(0.5, 1.0), repetitions=1,
                out_dir=tmp_path)
    png = tmp_path / "covariance_perturbation_errors.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".csv"] * 5 + [".png"]
    assert (tmp_path / "covariance_perturbation_environment.csv").exists()


def test_experiment_prints_and_writes_its_environment_and_wall_time(tmp_path, monkeypatch):
    import numpy
    import scipy
    import sklearn

    import dpggm
    import dpggm.experiments.covariance_perturbation as covariance_perturbation

    original = covariance_perturbation.run_covariance_perturbation

    def small(**kwargs):
        # The command's own arguments, at a size a test can afford.
        return original(n_features=5, ratios=(600.0,), epsilons=(1.0,), repetitions=1,
                        **{k: kwargs[k] for k in ("random_state", "out_dir", "overwrite")})

    monkeypatch.setattr(covariance_perturbation, "run_covariance_perturbation", small)
    monkeypatch.setattr("sys.argv",
                        ["dpggm", "experiment", "covariance_perturbation", "--seed", "4"])
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["experiment", "covariance_perturbation", "--seed", "4", "--out", str(out)])
    assert result.exit_code == 0, result.output
    printed = result.output.split("environment\n", 1)[1]
    for line in ("experiment: covariance_perturbation", "random_state: 4",
                 "command: dpggm experiment covariance_perturbation --seed 4",
                 f"dpggm: {dpggm.__version__}", f"numpy: {numpy.__version__}",
                 f"scipy: {scipy.__version__}", f"scikit-learn: {sklearn.__version__}"):
        assert line in printed.splitlines()
    assert "wall_seconds: " in printed and "cpu_count: " in printed and "platform: " in printed
    written = pd.read_csv(out / "covariance_perturbation_environment.csv", dtype=str,
                          keep_default_na=False)
    assert dict(zip(written["key"], written["value"]))["random_state"] == "4"


def test_experiment_uses_its_own_default_repetitions(monkeypatch):
    import dpggm.experiments.noisy_data as noisy_data

    seen = {}

    def fake(**kwargs):
        seen.update(kwargs)
        return {"table": pd.DataFrame({"a_b": [1.0]})}

    monkeypatch.setattr(noisy_data, "run_noisy_data", fake)
    result = runner.invoke(app, ["experiment", "noisy_data"])
    assert result.exit_code == 0, result.output
    assert "repetitions" not in seen
    result = runner.invoke(app, ["experiment", "noisy_data", "--repetitions", "3"])
    assert result.exit_code == 0 and seen["repetitions"] == 3


def test_the_papers_numbers_are_aliases_of_the_method_names(monkeypatch):
    from dpggm.cli.experiment import ALIASES, EXPERIMENTS

    assert set(ALIASES.values()) == set(EXPERIMENTS)
    assert not any(name.startswith("seed") for name in EXPERIMENTS)
    import dpggm.experiments.pace_ggm as pace_ggm

    calls = []
    monkeypatch.setattr(pace_ggm, "run_pace_ggm",
                        lambda **kwargs: calls.append(kwargs) or {"t": pd.DataFrame({"a": [1]})})
    for name in ("pace_ggm", "seed003"):
        result = runner.invoke(app, ["experiment", name, "--seed", "2"])
        assert result.exit_code == 0, result.output
    assert len(calls) == 2 and calls[0] == calls[1]
    result = runner.invoke(app, ["experiment", "seed005"])
    assert result.exit_code != 0
    assert "experiment must be one of private_precision" in result.output
    assert "seed003" in result.output


def test_warnings_are_summarised_in_one_line_without_paths(monkeypatch):
    import dpggm.experiments.thresholding as thresholding
    from dpggm.exceptions import ConvergenceWarning

    def noisy(**kwargs):
        for k in range(5):
            warnings.warn(f"did not converge after {k} steps", ConvergenceWarning, stacklevel=1)
        return {"errors": pd.DataFrame({"method_name": ["x"] * 3, "rel_error_mean": [1.0, 2.0, 3.0]})}

    monkeypatch.setattr(thresholding, "run_thresholding", noisy)
    result = runner.invoke(app, ["experiment", "thresholding"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "ConvergenceWarning" in line]
    assert len(lines) == 1 and "5 x" in lines[0]
    assert ".py" not in result.output


def test_tables_fit_in_100_columns(monkeypatch):
    import dpggm.experiments.pace_ggm as pace_ggm

    wide = pd.DataFrame({f"metric_number_{k}_mean": [1.23456789e-5 * k, 2.0] for k in range(14)})
    wide.insert(0, "dataset", ["breast_cancer", "wine"])
    monkeypatch.setattr(pace_ggm, "run_pace_ggm", lambda **kwargs: {"errors": wide})
    monkeypatch.setenv("COLUMNS", "100")
    result = runner.invoke(app, ["experiment", "pace_ggm"])
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) <= 100
    assert "breast_cancer" in result.output and "1.235e-05" in result.output


def test_progress_counts_every_repetition_draw():
    from dpggm.experiments._common import repetition_rng, report_progress

    ticks = []
    with report_progress(lambda: ticks.append(1)):
        for repetition in range(4):
            repetition_rng(0, "data", repetition)
    repetition_rng(0, "after")
    assert len(ticks) == 4
