"""The ``dpggm`` command line: a thin layer over the public API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from dpggm.cli.audit import audit_command
from dpggm.cli.output import OutputDir
from dpggm.estimators.registry import METHODS, make_estimator
from dpggm.exceptions import BudgetExceededError, IncompatibleBudgetError, InvalidGuaranteeError
from dpggm.mechanisms.bounds import parse_bounds
from dpggm.privacy.budgets import GDP, ZCDP, ApproxDP, Budget, NonPrivate, PureDP

app = typer.Typer(
    name="dpggm",
    help="Differentially private covariance, precision matrices and Gaussian graphical models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
budget_app = typer.Typer(help="A persistent privacy-budget ledger per dataset.", no_args_is_help=True)
app.add_typer(budget_app, name="budget")
app.command("audit")(audit_command)

console = Console()
err_console = Console(stderr=True)

_USER_ERRORS = (
    ValueError,
    TypeError,
    FileNotFoundError,
    FileExistsError,
    KeyError,
    BudgetExceededError,
    IncompatibleBudgetError,
    InvalidGuaranteeError,
)


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=2)


def budget_from_options(
    epsilon: float | None, delta: float | None, rho: float | None, mu: float | None,
    non_private: bool = False,
) -> Budget:
    """Exactly one of: --epsilon [--delta], --rho, --mu, --non-private."""
    given = [name for name, v in (("--epsilon", epsilon), ("--rho", rho), ("--mu", mu)) if v is not None]
    if non_private:
        given.append("--non-private")
    if len(given) != 1:
        fail(
            "give exactly one budget: --epsilon E [--delta D], --rho R, --mu M or --non-private; "
            f"got {', '.join(given) or 'none'}"
        )
    if delta is not None and epsilon is None:
        fail("--delta goes with --epsilon")
    if non_private:
        return NonPrivate()
    if rho is not None:
        return ZCDP(rho)
    if mu is not None:
        return GDP(mu)
    return ApproxDP(epsilon, delta) if delta is not None else PureDP(epsilon)


EpsilonOpt = Annotated[float | None, typer.Option("--epsilon", help="epsilon (pure DP, or (eps, delta) with --delta)")]
DeltaOpt = Annotated[float | None, typer.Option("--delta", help="delta for (epsilon, delta)-DP")]
RhoOpt = Annotated[float | None, typer.Option("--rho", help="rho for rho-zCDP")]
MuOpt = Annotated[float | None, typer.Option("--mu", help="mu for mu-Gaussian DP")]


def _load_bounds(bound: str, bound_file: Path | None):
    per_column = None
    if bound_file is not None:
        per_column = np.loadtxt(bound_file, delimiter=",", ndmin=1).ravel().tolist()
    return parse_bounds(bound, per_column=per_column)


@app.command()
def estimate(
    data: Annotated[Path, typer.Argument(help="CSV file with a header row; one record per row")],
    method: Annotated[str, typer.Option(help=f"one of: {', '.join(METHODS)}")] = "ssp",
    epsilon: EpsilonOpt = None,
    delta: DeltaOpt = None,
    rho: RhoOpt = None,
    mu: MuOpt = None,
    non_private: Annotated[bool, typer.Option("--non-private", help="exact reference run (no privacy)")] = False,
    bound: Annotated[str, typer.Option(help="declared bound: l2:B (row norm) or box:B")] = "",
    bound_file: Annotated[Path | None, typer.Option(help="CSV of per-column box bounds (with --bound box:per-column)")] = None,
    neighbors: Annotated[str, typer.Option(help="replace or add-remove")] = "replace",
    alpha: Annotated[str | None, typer.Option(help="graphical-lasso penalty, or 'auto'")] = None,
    ridge: Annotated[float | None, typer.Option(help="ridge penalty (method ridge)")] = None,
    gamma: Annotated[float | None, typer.Option(help="threshold constant (method threshold)")] = None,
    solver: Annotated[str | None, typer.Option(help="graphical-lasso solver: auto, cd or admm")] = None,
    diag_fraction: Annotated[float | None, typer.Option(help="PACE: share of the budget for the diagonal")] = None,
    select_fraction: Annotated[float | None, typer.Option(help="PACE: share of each round for selection")] = None,
    max_rounds: Annotated[int | None, typer.Option(help="PACE: the round budget divisor T")] = None,
    allow_invalid: Annotated[bool, typer.Option("--allow-invalid", help="run a method whose published guarantee is known to be invalid")] = False,
    seed: Annotated[str | None, typer.Option(help="random seed (integer) or 'secure'")] = "secure",
    out: Annotated[Path, typer.Option(help="output directory")] = Path("dpggm-out"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace existing output files")] = False,
    ledger: Annotated[Path | None, typer.Option(help="budget ledger file to spend from")] = None,
    dataset: Annotated[str | None, typer.Option(help="dataset name in the ledger")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result record as JSON")] = False,
) -> None:
    """Estimate a private covariance or precision matrix from DATA."""
    try:
        budget = budget_from_options(epsilon, delta, rho, mu, non_private)
        if not bound:
            fail("--bound is required (l2:B or box:B): declare it from domain knowledge")
        bounds = _load_bounds(bound, bound_file)
        if (ledger is None) != (dataset is None):
            fail("--ledger and --dataset go together")
        random_state: Any = int(seed) if seed not in (None, "secure") else seed
        options = {
            "alpha": alpha, "ridge": ridge, "gamma": gamma, "solver": solver,
            "allow_invalid": allow_invalid, "diag_fraction": diag_fraction,
            "select_fraction": select_fraction, "max_rounds": max_rounds,
        }
        if alpha is not None and alpha not in ("auto", "cv-nonprivate"):
            try:
                options["alpha"] = float(alpha)
            except ValueError:
                fail(f"--alpha must be a number, 'auto' or 'cv-nonprivate'; got {alpha!r}")
        estimator = make_estimator(
            method, budget=budget, bounds=bounds, neighbors=neighbors,
            random_state=random_state, **{k: v for k, v in options.items() if v not in (None, False)},
        )
        outdir = OutputDir(out, overwrite=overwrite)
        names = ["result.json", "covariance.npy", "noisy_covariance.npy"]
        outdir.check(names + ["precision.npy", "edges.csv"])
        book = None
        if ledger is not None:
            from dpggm.privacy.ledger import Ledger

            book = Ledger(ledger)
            if isinstance(budget, NonPrivate):
                fail("a non-private run cannot be recorded against a privacy ledger")
            if not book.can_spend(dataset, budget):
                raise BudgetExceededError(
                    f"dataset {dataset!r} has {book.remaining(dataset)} left; {budget} was asked"
                )
        if method == "pace" and not as_json:
            with _budget_progress() as advance:
                estimator.set_params(progress=advance)
                estimator.fit(str(data))
            estimator.set_params(progress=None)
        else:
            estimator.fit(str(data))
        if book is not None:
            # The spend is recorded before anything is written: if another process used
            # the budget meanwhile, the refused release is discarded unseen.
            book.spend(dataset, budget, mechanism=f"dpggm estimate --method {method}",
                       details={"data": str(data), "out": str(out)})
    except _USER_ERRORS as exc:
        fail(str(exc))
    record = result_record(method, estimator)
    outdir.json("result.json", record)
    for attr, name in (("covariance_", "covariance.npy"), ("noisy_covariance_", "noisy_covariance.npy"),
                       ("precision_", "precision.npy")):
        if getattr(estimator, attr, None) is not None:
            outdir.npy(name, getattr(estimator, attr))
    if getattr(estimator, "precision_", None) is not None:
        outdir.text("edges.csv", edge_list_csv(estimator.precision_, estimator.feature_names_in_))
    elif getattr(estimator, "adjacency_", None) is not None:
        names = estimator.feature_names_in_
        pairs = np.argwhere(np.triu(estimator.adjacency_, 1))
        outdir.text("edges.csv", "source,target\n" + "".join(
            f"{names[i]},{names[j]}\n" for i, j in pairs))
    if as_json:
        console.print_json(json.dumps(record))
    else:
        console.print(f"[bold]{method}[/] on {data} (n={estimator.n_samples_}, p={estimator.n_features_in_})")
        console.print(estimator.privacy_.summary())
        console.print("wrote " + ", ".join(str(p) for p in outdir.written))


class _budget_progress:
    """A Rich progress bar over the share of the budget spent (adaptive methods)."""

    def __enter__(self):
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(TextColumn("rounds"), BarColumn(), TextColumn("{task.percentage:>5.1f}% of budget"),
                                  TimeElapsedColumn(), console=err_console, transient=True)
        self._progress.__enter__()
        self._task = self._progress.add_task("spend", total=1.0)
        return lambda used, total: self._progress.update(self._task, completed=used / total)

    def __exit__(self, *exc):
        return self._progress.__exit__(*exc)


def result_record(method: str, estimator: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "method": method,
        "n_samples": int(estimator.n_samples_),
        "n_features": int(estimator.n_features_in_),
        "features": list(estimator.feature_names_in_),
        "privacy": estimator.privacy_.to_dict(),
        "parameters": {k: (v.to_dict() if hasattr(v, "to_dict") else v)
                       for k, v in estimator.get_params().items()
                       if isinstance(v, (int, float, str, bool, type(None))) or hasattr(v, "to_dict")},
    }
    for attr in ("alpha_", "n_iter_", "converged_", "n_edges_", "n_rounds_", "n_measured_offdiag_"):
        if hasattr(estimator, attr):
            value = getattr(estimator, attr)
            record[attr.rstrip("_")] = value.item() if hasattr(value, "item") else value
    return record


def edge_list_csv(precision: np.ndarray, names: list[str], *, tol: float = 0.0) -> str:
    """Edges ``(i, j)`` with a non-zero partial correlation, strongest first."""
    p = precision.shape[0]
    d = np.sqrt(np.abs(np.diag(precision)))
    rows = []
    for i in range(p):
        for j in range(i + 1, p):
            if abs(precision[i, j]) > tol:
                rows.append((names[i], names[j], precision[i, j], -precision[i, j] / (d[i] * d[j])))
    rows.sort(key=lambda r: -abs(r[3]))
    lines = ["source,target,precision,partial_correlation"]
    lines += [f"{a},{b},{w:.10g},{pc:.10g}" for a, b, w, pc in rows]
    return "\n".join(lines) + "\n"


@app.command()
def solve(
    matrix: Annotated[Path, typer.Argument(help="covariance matrix as .npy (or .csv without header)")],
    alpha: Annotated[float, typer.Option(help="graphical-lasso penalty")],
    solver: Annotated[str, typer.Option(help="auto, cd or admm")] = "auto",
    penalize_diagonal: Annotated[bool, typer.Option("--penalize-diagonal", help="penalise the diagonal too")] = False,
    tol: Annotated[float, typer.Option(help="duality-gap tolerance")] = 1e-8,
    out: Annotated[Path, typer.Option(help="output directory")] = Path("dpggm-solve"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace existing output files")] = False,
) -> None:
    """Run the graphical lasso on a matrix (non-private post-processing: no budget)."""
    from dpggm.solvers.glasso import graphical_lasso

    try:
        if not matrix.exists():
            raise FileNotFoundError(f"no such file: {matrix}")
        S = np.load(matrix) if matrix.suffix == ".npy" else np.loadtxt(matrix, delimiter=",")
        outdir = OutputDir(out, overwrite=overwrite)
        outdir.check(["precision.npy", "covariance.npy", "edges.csv", "result.json"])
        result = graphical_lasso(S, alpha, method=solver, penalize_diagonal=penalize_diagonal, tol=tol)
    except _USER_ERRORS as exc:
        fail(str(exc))
    names = [f"x{j}" for j in range(S.shape[0])]
    outdir.npy("precision.npy", result.estimate)
    outdir.npy("covariance.npy", result.extra["covariance"])
    outdir.text("edges.csv", edge_list_csv(result.estimate, names))
    outdir.json("result.json", {
        "alpha": alpha, "method": result.extra.get("method"), "iterations": result.iterations,
        "converged": result.converged, "objective": result.objective,
        "duality_gap": result.extra.get("duality_gap"),
        "privacy": "post-processing of the input matrix; no budget spent",
    })
    console.print(f"graphical lasso ({result.extra.get('method')}): {result.iterations} iterations, "
                  f"objective {result.objective:.10g}, duality gap {result.extra.get('duality_gap'):.3g}")
    console.print("wrote " + ", ".join(str(p) for p in outdir.written))


@app.command()
def demo(
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
) -> None:
    """Run a short demonstration on built-in data (breast-cancer features)."""
    from dpggm.experiments.demo import run_demo

    run_demo(console=console, random_state=seed)


@app.command()
def publish(
    data: Annotated[Path, typer.Argument(help="CSV file with a header row; one record per row")],
    out: Annotated[Path, typer.Option(help="where to write the noisy CSV (metadata goes beside it as .json)")],
    bound: Annotated[str, typer.Option(help="declared bound: l2:B (row norm) or box:B")] = "",
    bound_file: Annotated[Path | None, typer.Option(help="CSV of per-column box bounds")] = None,
    sigma: Annotated[float | None, typer.Option(help="noise standard deviation")] = None,
    mu: MuOpt = None,
    epsilon: EpsilonOpt = None,
    delta: DeltaOpt = None,
    snr_db: Annotated[float | None, typer.Option(help="signal-to-noise ratio in dB (uses the data's power: data-dependent)")] = None,
    discrete: Annotated[bool, typer.Option("--discrete", help="exact discrete Gaussian noise for integer data")] = False,
    grid: Annotated[float | None, typer.Option(help="with --discrete: noise on the lattice grid*Z")] = None,
    neighbors: Annotated[str, typer.Option(help="replace or add-remove")] = "replace",
    seed: Annotated[str | None, typer.Option(help="random seed (integer) or 'secure'")] = "secure",
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace existing output files")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the guarantee as JSON")] = False,
) -> None:
    """Publish a noisy copy of DATA once (seed 002); data users recover graphs from it."""
    from dpggm.experiments.publish_io import publish_csv

    try:
        if not bound:
            fail("--bound is required (l2:B or box:B): declare it from domain knowledge")
        random_state: Any = int(seed) if seed not in (None, "secure") else seed
        release = publish_csv(
            data, out, bounds=_load_bounds(bound, bound_file), sigma=sigma, mu=mu,
            epsilon=epsilon, delta=delta, snr_db=snr_db, discrete=discrete, grid=grid,
            neighbors=neighbors, random_state=random_state, overwrite=overwrite,
        )
    except _USER_ERRORS as exc:
        fail(str(exc))
    if as_json:
        console.print_json(release.privacy_.to_json())
    else:
        console.print(release.privacy_.summary())
        console.print(f"wrote {out} and {out.with_suffix('.json')}")


@app.command()
def recover(
    noisy: Annotated[Path, typer.Argument(help="a noisy CSV written by 'dpggm publish'")],
    sigma: Annotated[float | None, typer.Option(help="the release's noise sigma (read from its metadata when present)")] = None,
    metadata: Annotated[Path | None, typer.Option(help="release metadata JSON (default: NOISY with .json)")] = None,
    alpha: Annotated[str, typer.Option(help="penalty, or 'cv' for cross-validation")] = "cv",
    selection: Annotated[str, typer.Option(help="cv rule: drop or min-mse")] = "drop",
    solver: Annotated[str, typer.Option(help="auto, cd or admm")] = "auto",
    truth: Annotated[Path | None, typer.Option(help="CSV of true edges (source,target) for an AUC")] = None,
    out: Annotated[Path, typer.Option(help="output directory")] = Path("dpggm-recover"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace existing output files")] = False,
) -> None:
    """Recover the Gaussian graphical model from a noisy release (post-processing)."""
    from dpggm.experiments.publish_io import default_metadata_path, recover_from_csv

    try:
        meta = metadata if metadata is not None else default_metadata_path(noisy)
        alpha_value: Any = alpha if alpha == "cv" else float(alpha)
        estimator = recover_from_csv(
            noisy, metadata=meta if meta.exists() else None, noise_sigma=sigma,
            alpha=alpha_value, selection=selection, solver=solver, out_dir=out,
            overwrite=overwrite,
        )
        auc = None
        if truth is not None:
            auc = _truth_auc(estimator, truth)
            OutputDir(out, overwrite=overwrite).json("auc.json", {"auc": auc, "truth": str(truth)})
    except _USER_ERRORS as exc:
        fail(str(exc))
    console.print(f"alpha = {estimator.alpha_:.4g}; {int((np.triu(estimator.precision_, 1) != 0).sum())} edges")
    if auc is not None:
        console.print(f"edge-recovery AUC against {truth}: {auc:.4f}")
    console.print(f"wrote {out}")


def _truth_auc(estimator: Any, truth: Path) -> float:
    """AUC of |precision| as edge scores against an edge list with column names."""
    import pandas as pd

    from dpggm.metrics.graph import edge_auc

    names = [str(c) for c in estimator.feature_names_in_]
    index = {name: i for i, name in enumerate(names)}
    edges = pd.read_csv(truth)
    if edges.shape[1] < 2:
        raise ValueError(f"{truth} must have two columns (source,target)")
    adjacency = np.zeros((len(names), len(names)), dtype=bool)
    for a, b in edges.iloc[:, :2].astype(str).itertuples(index=False):
        if a not in index or b not in index:
            raise ValueError(f"edge ({a}, {b}) in {truth} names a column not in the data")
        adjacency[index[a], index[b]] = adjacency[index[b], index[a]] = True
    return float(edge_auc(np.abs(estimator.precision_), adjacency))


_EXPERIMENTS = {
    "seed000": ("dpggm.experiments.seed000", "run_seed000",
                "DP ridge precision and DP graphical lasso (Su, Guo, Zhang)"),
    "seed001": ("dpggm.experiments.seed001", "run_seed001",
                "output and covariance perturbation (Wang, Huai, Xu)"),
    "seed002": ("dpggm.experiments.seed002", "run_seed002",
                "noisy data publishing and graph recovery (Guo et al.)"),
    "seed003": ("dpggm.experiments.seed003", "run_seed003",
                "PACE-GGM and its baselines (Ferrando et al.)"),
    "seed004": ("dpggm.experiments.seed004", "run_seed004",
                "DP-Thresholding for sparse covariance (Wang, Xu, He)"),
}


def _print_frame(title: str, frame: Any) -> None:
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(str(column))
    for row in frame.itertuples(index=False):
        table.add_row(*(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row))
    console.print(table)


@app.command()
def experiment(
    name: Annotated[str, typer.Argument(help="one of: " + ", ".join(
        f"{k} ({v[2]})" for k, v in _EXPERIMENTS.items()))],
    full: Annotated[bool, typer.Option("--full", help="the papers' sizes (slow)")] = False,
    repetitions: Annotated[int | None, typer.Option(help="repetitions per cell")] = None,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    out: Annotated[Path | None, typer.Option(help="directory for CSV and PNG files")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace existing output files")] = False,
) -> None:
    """Reproduce a paper's experiments (reduced sizes unless --full); prints the tables."""
    import importlib

    if name not in _EXPERIMENTS:
        fail(f"experiment must be one of {', '.join(_EXPERIMENTS)}; got {name!r}")
    module_name, function, _ = _EXPERIMENTS[name]
    run = getattr(importlib.import_module(module_name), function)
    try:
        tables = run(full=full, repetitions=repetitions, random_state=seed, out_dir=out,
                     overwrite=overwrite)
    except _USER_ERRORS as exc:
        fail(str(exc))
    if isinstance(tables, dict):
        for title, frame in tables.items():
            _print_frame(title, frame)
    else:
        _print_frame(name, tables)
    if out is not None:
        console.print(f"tables written to {out}")


@budget_app.command("init")
def budget_init(
    ledger: Annotated[Path, typer.Argument(help="ledger file (created if missing)")],
    dataset: Annotated[str, typer.Option(help="dataset name")],
    epsilon: EpsilonOpt = None,
    delta: DeltaOpt = None,
    rho: RhoOpt = None,
    mu: MuOpt = None,
    description: Annotated[str, typer.Option(help="free text")] = "",
) -> None:
    """Declare a dataset's total privacy budget."""
    from dpggm.privacy.ledger import Ledger

    total = budget_from_options(epsilon, delta, rho, mu)
    try:
        with Ledger(ledger) as book:
            book.declare(dataset, total, description=description)
    except _USER_ERRORS as exc:
        fail(str(exc))
    console.print(f"declared {dataset!r} with total {total} in {ledger}")


@budget_app.command("show")
def budget_show(
    ledger: Annotated[Path, typer.Argument(help="ledger file")],
    dataset: Annotated[str | None, typer.Option(help="only this dataset")] = None,
) -> None:
    """Show each dataset's total, spent and remaining budget."""
    from dpggm.privacy.ledger import Ledger

    if not ledger.exists():
        fail(f"no ledger at {ledger}")
    try:
        with Ledger(ledger) as book:
            names = [dataset] if dataset else book.datasets()
            table = Table("dataset", "total", "spent", "remaining", "spends")
            for name in names:
                table.add_row(name, str(book.total(name)), str(book.spent(name)),
                              str(book.remaining(name)), str(len(book.history(name))))
    except _USER_ERRORS as exc:
        fail(str(exc))
    console.print(table)


@budget_app.command("history")
def budget_history(
    ledger: Annotated[Path, typer.Argument(help="ledger file")],
    dataset: Annotated[str, typer.Option(help="dataset name")],
    as_json: Annotated[bool, typer.Option("--json", help="print as JSON")] = False,
) -> None:
    """List every spend recorded for a dataset."""
    from dpggm.privacy.ledger import Ledger

    if not ledger.exists():
        fail(f"no ledger at {ledger}")
    try:
        with Ledger(ledger) as book:
            records = book.history(dataset)
    except _USER_ERRORS as exc:
        fail(str(exc))
    if as_json:
        console.print_json(json.dumps([
            {"sequence": r.sequence, "time": r.time.isoformat(), "mechanism": r.mechanism,
             "budget": r.budget.to_dict(), "cost": [str(c) for c in r.cost],
             "details": r.details, "pid": r.pid, "host": r.host}
            for r in records
        ]))
        return
    table = Table("time", "mechanism", "budget", "details")
    for r in records:
        table.add_row(str(r.time), r.mechanism, str(r.budget), json.dumps(r.details))
    console.print(table)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
