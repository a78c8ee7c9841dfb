"""`dpggm experiment` behaviour: defaults, figures, warnings, tables (issue 10)."""

from __future__ import annotations

import warnings

import pandas as pd
from typer.testing import CliRunner

from dpggm.cli.main import app

runner = CliRunner()


def test_seed001_writes_a_png_beside_its_csv_files(tmp_path):
    from dpggm.experiments.seed001 import run_seed001

    run_seed001(n_features=5, ratios=(600.0,), epsilons=(0.5, 1.0), repetitions=1,
                out_dir=tmp_path)
    png = tmp_path / "seed001_errors.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".csv"] * 5 + [".png"]
    assert (tmp_path / "seed001_environment.csv").exists()


def test_experiment_prints_and_writes_its_environment_and_wall_time(tmp_path, monkeypatch):
    import numpy
    import scipy
    import sklearn

    import dpggm
    import dpggm.experiments.seed001 as seed001

    original = seed001.run_seed001

    def small(**kwargs):
        # The command's own arguments, at a size a test can afford.
        return original(n_features=5, ratios=(600.0,), epsilons=(1.0,), repetitions=1,
                        **{k: kwargs[k] for k in ("random_state", "out_dir", "overwrite")})

    monkeypatch.setattr(seed001, "run_seed001", small)
    monkeypatch.setattr("sys.argv", ["dpggm", "experiment", "seed001", "--seed", "4"])
    out = tmp_path / "out"
    result = runner.invoke(app, ["experiment", "seed001", "--seed", "4", "--out", str(out)])
    assert result.exit_code == 0, result.output
    printed = result.output.split("environment\n", 1)[1]
    for line in ("experiment: seed001", "random_state: 4",
                 "command: dpggm experiment seed001 --seed 4",
                 f"dpggm: {dpggm.__version__}", f"numpy: {numpy.__version__}",
                 f"scipy: {scipy.__version__}", f"scikit-learn: {sklearn.__version__}"):
        assert line in printed.splitlines()
    assert "wall_seconds: " in printed and "cpu_count: " in printed and "platform: " in printed
    written = pd.read_csv(out / "seed001_environment.csv", dtype=str, keep_default_na=False)
    assert dict(zip(written["key"], written["value"]))["random_state"] == "4"


def test_experiment_uses_its_own_default_repetitions(monkeypatch):
    import dpggm.experiments.seed002 as seed002

    seen = {}

    def fake(**kwargs):
        seen.update(kwargs)
        return {"table": pd.DataFrame({"a_b": [1.0]})}

    monkeypatch.setattr(seed002, "run_seed002", fake)
    result = runner.invoke(app, ["experiment", "seed002"])
    assert result.exit_code == 0, result.output
    assert "repetitions" not in seen
    result = runner.invoke(app, ["experiment", "seed002", "--repetitions", "3"])
    assert result.exit_code == 0 and seen["repetitions"] == 3


def test_warnings_are_summarised_in_one_line_without_paths(monkeypatch):
    import dpggm.experiments.seed004 as seed004
    from dpggm.exceptions import ConvergenceWarning

    def noisy(**kwargs):
        for k in range(5):
            warnings.warn(f"did not converge after {k} steps", ConvergenceWarning, stacklevel=1)
        return {"errors": pd.DataFrame({"method_name": ["x"] * 3, "rel_error_mean": [1.0, 2.0, 3.0]})}

    monkeypatch.setattr(seed004, "run_seed004", noisy)
    result = runner.invoke(app, ["experiment", "seed004"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "ConvergenceWarning" in line]
    assert len(lines) == 1 and "5 x" in lines[0]
    assert ".py" not in result.output


def test_tables_fit_in_100_columns(monkeypatch):
    import dpggm.experiments.seed003 as seed003

    wide = pd.DataFrame({f"metric_number_{k}_mean": [1.23456789e-5 * k, 2.0] for k in range(14)})
    wide.insert(0, "dataset", ["breast_cancer", "wine"])
    monkeypatch.setattr(seed003, "run_seed003", lambda **kwargs: {"errors": wide})
    monkeypatch.setenv("COLUMNS", "100")
    result = runner.invoke(app, ["experiment", "seed003"])
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
