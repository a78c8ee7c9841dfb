"""Seeded fits of every estimator that reads private records, pinned (``pinned_releases.npz``)
from every kind of input the data path serves in memory: NumPy arrays, DataFrames, CSV and
Parquet files.

The fixture was written by this module from the code *before* the data path moved into its
own layer (``dpggm.data``: one pass API over arrays, files and Dask): a seeded fit's plan,
its release (every fitted array and number, the tables too), its ``privacy_`` record and the
``result.json`` that ``save`` writes must stay identical, bit for bit, whatever the records
are read through. Every method of the registry (:data:`dpggm.estimators.registry.METHODS`)
is pinned, and the estimators the registry does not name: ``PrivateGraph`` (both methods),
``PrivateGraphComparison``, ``AdaSSP`` and ``PrivateLinearRegression``.

The command line's releases are pinned too (:data:`CLI_CASES`): what ``dpggm estimate``,
``dpggm graph`` and ``dpggm compare`` deliver from a CSV file -- the names of every file,
and the records, matrices and tables among them (the pictures and the report are drawn
from those).

Dask collections are not pinned: their sums are added partition by partition and then
across partitions, an order no array or file shares, so a seeded release through Dask
equals the in-memory one to rounding only (``tests/test_dask.py``).

Run ``PYTHONPATH=src python tests/pinned_releases.py`` to rewrite the fixture (only when a
change of the numbers is intended -- a solver's arithmetic, say -- and say so in the commit).
"""

from __future__ import annotations

import json
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm import (
    ZCDP,
    AdaSSP,
    ApproxDP,
    PrivateCovariance,
    PrivateGraph,
    PrivateLinearRegression,
    PureDP,
    make_estimator,
)
from dpggm.estimators import PrivateGraphComparison

FIXTURE = Path(__file__).with_name("pinned_releases.npz")

#: Records of every case: ``N`` rows of ``P`` correlated columns, some beyond the bounds.
N, P = 600, 5


def records(seed: int = 0, *, missing: float = 0.0, groups: bool = False) -> pd.DataFrame:
    """The case's records: a chain of correlated columns (about a third of the rows beyond
    ``l2:2``, a few values beyond ``box:1``), with a share of values missing and a group
    column when asked."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(N, P))
    values = np.empty_like(z)
    values[:, 0] = z[:, 0]
    for j in range(1, P):
        values[:, j] = 0.6 * values[:, j - 1] + 0.8 * z[:, j]
    frame = pd.DataFrame(0.45 * values, columns=[f"v{j}" for j in range(P)])
    if missing:
        frame = frame.mask(rng.random(frame.shape) < missing)
    if groups:
        frame.insert(0, "group", np.where(rng.random(N) < 0.5, "a", "b"))
    return frame


def target(seed: int = 0) -> np.ndarray:
    """A target for the regressions: linear in the records plus noise."""
    frame = records(seed)
    rng = np.random.default_rng(seed + 1)
    return frame.to_numpy() @ np.linspace(0.4, -0.2, P) + 0.1 * rng.normal(size=N)


def _input(kind: str, frame: pd.DataFrame, directory: Path) -> Any:
    """The records as the estimator receives them: an array, a DataFrame, or the path of a
    CSV or Parquet file written from the DataFrame."""
    if kind == "array":
        return frame.to_numpy(dtype=float)
    if kind == "frame":
        return frame
    if kind == "csv":
        path = directory / "records.csv"
        frame.to_csv(path, index=False, float_format="%.17g")
        return str(path)
    if kind == "parquet":
        path = directory / "records.parquet"
        frame.to_parquet(path, index=False)
        return str(path)
    raise ValueError(kind)


def _registered(method: str, budget: Any, **params: Any) -> Callable[[], Any]:
    """The method of the registry, as the command line builds it."""
    return lambda: make_estimator(method, budget=budget, **params)


#: (name, estimator, input kinds, records options, whether the fit takes a target).
CASES: tuple[tuple[str, Callable[[], Any], tuple[str, ...], dict, bool], ...] = (
    ("ssp", _registered("ssp", ZCDP(1.0), bounds="l2:2", random_state=11),
     ("array", "frame", "csv", "parquet"), {}, False),
    ("ssp-drop", _registered("ssp", ZCDP(1.0), bounds="l2:2", neighbors="add-remove",
                             missing="drop", random_state=12),
     ("array", "csv", "parquet"), {"missing": 0.05}, False),
    ("laplace", _registered("laplace", PureDP(2.0), bounds="l2:2", random_state=13),
     ("array", "csv"), {}, False),
    ("sulq", _registered("sulq", ApproxDP(1.0, 1e-6), bounds="box:1", random_state=14),
     ("array",), {}, False),
    ("wishart", _registered("wishart", ApproxDP(0.5, 1e-6), bounds="l2:2", random_state=15),
     ("array",), {}, False),
    ("wishart-pure", _registered("wishart-pure", PureDP(2.0), bounds="l2:2",
                                 allow_invalid=True, random_state=16), ("array",), {}, False),
    ("ridge", _registered("ridge", ZCDP(1.0), bounds="l2:2", center="private",
                          random_state=17), ("array", "csv"), {}, False),
    ("glasso", _registered("glasso", ZCDP(1.0), bounds="l2:2", alpha=0.1,
                           center=[0.05] * P, random_state=18), ("array", "csv"), {}, False),
    ("glasso-auto", _registered("glasso", ApproxDP(2.0, 1e-6), bounds="box:1", alpha="auto",
                                random_state=19), ("array",), {}, False),
    ("threshold", _registered("threshold", ZCDP(1.0), bounds="l2:2", random_state=20),
     ("array",), {}, False),
    ("output-perturbation", _registered("output-perturbation", PureDP(2.0), bounds="l2:2",
                                        alpha=0.1, allow_invalid=True, random_state=21),
     ("array",), {}, False),
    ("pace", _registered("pace", ZCDP(1.0), bounds="box:1", random_state=22),
     ("array", "csv"), {}, False),
    ("ssp-zcdp", _registered("ssp-zcdp", ZCDP(1.0), bounds="box:1", random_state=23),
     ("array", "csv"), {}, False),
    ("diagonal", _registered("diagonal", ZCDP(1.0), bounds="box:1", random_state=24),
     ("array",), {}, False),
    ("separate", _registered("separate", ZCDP(1.0), bounds="l2:2", random_state=25),
     ("array",), {}, False),
    ("adaptive", _registered("adaptive", ZCDP(1.0), bounds="l2:2", random_state=26),
     ("array", "csv"), {}, False),
    ("graph-glasso", lambda: PrivateGraph(budget=ZCDP(1.0), random_state=27),
     ("frame", "csv", "parquet"), {}, False),
    ("graph-missing", lambda: PrivateGraph(budget=ZCDP(1.0), random_state=28),
     ("frame", "csv"), {"missing": 0.1}, False),
    ("graph-pace", lambda: PrivateGraph(budget=ZCDP(2.0), method="pace", random_state=29),
     ("frame",), {}, False),
    ("graph-declared", lambda: PrivateGraph(budget=ApproxDP(2.0, 1e-6), bounds="l2:2",
                                            center="none", random_state=30),
     ("array", "csv"), {}, False),
    ("comparison", lambda: PrivateGraphComparison(budget=ZCDP(2.0), levels=("a", "b"),
                                                  group="group", random_state=31),
     ("frame", "csv"), {"groups": True}, False),
    ("adassp", lambda: AdaSSP(budget=ZCDP(1.0), bounds="l2:2", y_bound=1.5, random_state=32),
     ("array",), {}, True),
    ("linear-regression", lambda: PrivateLinearRegression(covariance_estimator=PrivateCovariance(
        budget=ZCDP(1.0), bounds="l2:3", random_state=33)), ("array",), {}, True),
)


def fit_case(case: tuple, kind: str, directory: Path) -> Any:
    """The fitted estimator of ``case`` on its records given as ``kind``."""
    _, build, _, data, with_target = case
    X = _input(kind, records(**data), directory)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build().fit(X, target()) if with_target else build().fit(X)


def _jsonable(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def outputs(estimator: Any, directory: Path) -> dict[str, np.ndarray]:
    """Every pinned output of a fit: the plan, the ``privacy_`` record (with its curator
    notes), the released files ``save`` writes (``result.json``, the matrices, the edges)
    and every fitted array, number, mapping and table."""
    out: dict[str, np.ndarray] = {
        "plan": np.array(_jsonable(estimator.plan_.to_dict())),
        "privacy": np.array(_jsonable(estimator.privacy_.to_dict())),
        # What the curator is told (rows clipped, say): counted by the data path too.
        "curator_notes": np.array(_jsonable(estimator.privacy_.curator_notes)),
    }
    saved = directory / "saved"
    estimator.save(saved)
    for path in sorted(saved.iterdir()):
        if path.suffix == ".json":
            out["file:" + path.name] = np.array(
                _jsonable(json.loads(path.read_text(encoding="utf-8"))))
        elif path.suffix == ".npy":
            out["file:" + path.name] = np.load(path)
        else:
            out["file:" + path.name] = np.array(path.read_text(encoding="utf-8"))
    for name, value in sorted(vars(estimator).items()):
        if not name.endswith("_") or name.startswith("_") or name in ("plan_", "privacy_"):
            continue
        if isinstance(value, np.ndarray):
            out[name] = value
        elif isinstance(value, (bool, int, float, np.number, np.bool_)):
            out[name] = np.array(value)
        elif isinstance(value, pd.DataFrame):
            for column in value.columns:
                out[f"{name}[{column}]"] = value[column].to_numpy()
        elif isinstance(value, dict):
            out[name] = np.array(_jsonable(value))
        elif hasattr(value, "to_dict"):
            out[name] = np.array(_jsonable(value.to_dict()))
    # Columns of text (names, labels) as text: an array of objects cannot be stored safely.
    return {key: value.astype(str) if value.dtype == object else value
            for key, value in out.items()}


#: (name, command line before the data file, records options): runs of the command line
#: on a CSV file of :func:`records`, each with its seed.
CLI_CASES: tuple[tuple[str, tuple[str, ...], dict], ...] = (
    ("estimate", ("estimate", "--method", "glasso", "--alpha", "0.1", "--rho", "1",
                  "--bound", "l2:2", "--seed", "5"), {}),
    ("estimate-drop", ("estimate", "--method", "ssp", "--rho", "1", "--bound", "l2:2",
                       "--neighbors", "add-remove", "--missing", "drop", "--seed", "8"),
     {"missing": 0.05}),
    ("graph", ("graph", "--rho", "1", "--seed", "6"), {}),
    ("compare", ("compare", "--group", "group", "--levels", "a,b", "--rho", "2",
                 "--seed", "7"), {"groups": True}),
)


def command_line(case: tuple, directory: Path) -> tuple[list[str], Path]:
    """The arguments of ``case``'s command on a CSV file of its records (written into
    ``directory``) and the output directory they name."""
    _, command, data = case
    path = directory / "records.csv"
    records(**data).to_csv(path, index=False, float_format="%.17g")
    out = directory / "out"
    return [command[0], str(path), *command[1:], "--out", str(out)], out


def delivered(out: Path) -> dict[str, np.ndarray]:
    """What a command delivered into ``out``: the names of its files, and the contents of
    its records, matrices and tables."""
    found: dict[str, np.ndarray] = {"files": np.array(sorted(p.name for p in out.iterdir()))}
    for file in sorted(out.iterdir()):
        if file.suffix == ".json":
            found["file:" + file.name] = np.array(
                _jsonable(json.loads(file.read_text(encoding="utf-8"))))
        elif file.suffix == ".npy":
            found["file:" + file.name] = np.load(file)
        elif file.suffix == ".csv":
            found["file:" + file.name] = np.array(file.read_text(encoding="utf-8"))
    return found


def compute() -> dict[str, np.ndarray]:
    pinned: dict[str, np.ndarray] = {}
    from typer.testing import CliRunner

    from dpggm.cli.main import app

    for case in CLI_CASES:
        with tempfile.TemporaryDirectory() as tmp:
            args, out = command_line(case, Path(tmp))
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, result.output
            for key, value in delivered(out).items():
                pinned[f"cli:{case[0]}/{key}"] = np.asarray(value)
    for case in CASES:
        for kind in case[2]:
            with tempfile.TemporaryDirectory() as tmp:
                fitted = fit_case(case, kind, Path(tmp))
                for key, value in outputs(fitted, Path(tmp)).items():
                    pinned[f"{case[0]}/{kind}/{key}"] = np.asarray(value)
    return pinned


if __name__ == "__main__":
    np.savez_compressed(FIXTURE, **compute())
    print(f"wrote {FIXTURE}")
