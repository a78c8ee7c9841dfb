"""`import dpggm` and the command line's start-up import only what they use.

Timings are in benchmarks/bench_startup.py; here the imported modules are checked, which
is what decides the start-up time and does not depend on the machine's load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
HEAVY = ("sklearn", "numba", "matplotlib", "scipy", "pandas")


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "PYTHONPATH": SRC},
                          capture_output=True, text=True, check=True, timeout=120)
    return {name.split(".")[0] for name in json.loads(done.stdout.strip().splitlines()[-1])}


@pytest.mark.parametrize("code", [
    "import dpggm",
    "from dpggm import ZCDP, PureDP, Ledger, PrivacyAccountant, PrivacyGuarantee",
    "from dpggm.cli.main import app",
    "from dpggm.cli.main import app\nfrom typer.testing import CliRunner\n"
    "CliRunner().invoke(app, ['--help'])",
])
def test_light_entry_points_import_no_heavy_library(code):
    loaded = _modules_after(code)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_budget_commands_import_no_heavy_library(tmp_path):
    code = (
        f"import os\nos.chdir({str(tmp_path)!r})\nfrom dpggm.cli.main import app\n"
        "from typer.testing import CliRunner\nr = CliRunner()\n"
        "assert r.invoke(app, ['budget', 'init', 'l.db', '--dataset', 'd', '--rho', '1'])"
        ".exit_code == 0\n"
        "assert r.invoke(app, ['budget', 'show', 'l.db']).exit_code == 0\n"
        "assert r.invoke(app, ['budget', 'history', 'l.db', '--dataset', 'd']).exit_code == 0\n"
    )
    loaded = _modules_after(code)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_a_fit_from_a_csv_file_imports_no_plotting_library(tmp_path):
    """The pictures' modules (some 50 MB resident) are loaded when a picture is drawn, not
    by a fit: a fit's peak memory is the estimator's."""
    rng = np.random.default_rng(0)
    values = rng.standard_normal((500, 4)) @ np.triu(np.ones((4, 4)))
    path = tmp_path / "records.csv"
    path.write_text("a,b,c,d\n" + "".join(",".join(f"{v:.6g}" for v in row) + "\n"
                                         for row in values))
    code = ("from dpggm import ZCDP, PrivateGraph\n"
            f"graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit({str(path)!r})\n"
            "assert graph.n_samples_ == 500\n")
    plotting = {"matplotlib", "networkx", "PIL", "fontTools"}
    loaded = _modules_after(code)
    assert not loaded & plotting, sorted(loaded & plotting)


@pytest.mark.parametrize("args, message", [
    (["graph", "nosuch.csv", "--rho", "1"], "no such file"),
    (["graph", "nosuch/*.parquet", "--rho", "1", "--engine", "dask"], "no file matches"),
    (["graph", ".", "--rho", "1"], "is a directory"),
    (["graph", "d.csv"], "exactly one budget"),
    (["graph", "nosuch.csv", "--rho", "1", "--engine", "spark"], "--engine must be"),
])
def test_graph_refuses_bad_input_before_importing_the_estimator(tmp_path, args, message):
    (tmp_path / "d.csv").write_text("a,b\n1,2\n3,4\n")
    code = (
        f"import os\nos.chdir({str(tmp_path)!r})\nfrom dpggm.cli.main import app\n"
        "from typer.testing import CliRunner\n"
        f"r = CliRunner().invoke(app, {args!r})\n"
        f"assert r.exit_code == 2 and {message!r} in r.output, r.output\n"
    )
    loaded = _modules_after(code)
    assert not loaded & {*HEAVY, "dask", "pyarrow"}, sorted(loaded & {*HEAVY, "dask", "pyarrow"})


def test_lazy_exports_resolve_to_the_real_objects():
    import dpggm
    from dpggm.estimators.precision import GraphicalLasso
    from dpggm.mechanisms.publish import publish

    assert dpggm.GraphicalLasso is GraphicalLasso
    assert dpggm.publish is publish and callable(dpggm.mechanisms.publish)
    assert set(dpggm.__all__) <= set(dir(dpggm))
    for name in dpggm.__all__:
        assert getattr(dpggm, name) is not None
    with pytest.raises(AttributeError):
        dpggm.no_such_name  # noqa: B018


def test_version_option():
    from typer.testing import CliRunner

    import dpggm
    from dpggm.cli.main import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"dpggm {dpggm.__version__}"


def test_the_process_entry_point_flushes_its_output_and_keeps_exit_codes(tmp_path):
    """``python -m dpggm`` leaves without the interpreter's tear-down: the output must be
    complete and the exit status that of the command."""
    env = {**os.environ, "PYTHONPATH": SRC}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "dpggm", *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)

    import dpggm

    version = run("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"dpggm {dpggm.__version__}"
    missing = run("graph", "nosuch.csv", "--rho", "1")
    assert missing.returncode == 2 and "no such file: nosuch.csv" in missing.stderr
    unknown = run("no-such-command")
    assert unknown.returncode == 2 and "No such command" in unknown.stderr
    helped = run("--help")
    assert helped.returncode == 0 and "graph" in helped.stdout and "budget" in helped.stdout
