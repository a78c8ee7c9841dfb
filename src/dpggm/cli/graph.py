"""``dpggm graph``: the private graph of a CSV, with pictures and a report, in one command.

Released files (all in ``--out``): ``result.json`` (guarantee and parameters; no seed),
``edges.csv``, ``precision.npy``, ``graph.png``, ``precision.png`` and ``report.html``.
They are written into a temporary sibling directory and renamed into place, so ``--out``
is either complete or absent.

Curator diagnostics -- how many rows were clipped, whether the graph is empty or complete,
what to try -- are computed from the private data. They are printed to standard error
only (never written into ``--out``): the curator reads them, nobody else.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from dpggm.estimators.graph import GRAPH_METHODS, PrivateGraph, edges_csv_text
from dpggm.exceptions import BudgetExceededError, IncompatibleBudgetError, InvalidGuaranteeError
from dpggm.privacy.budgets import GDP, ZCDP, ApproxDP, Budget, PureDP

__all__ = ["graph", "graph_result_record", "write_graph_outputs"]

console = Console()
err_console = Console(stderr=True)

_USER_ERRORS = (ValueError, TypeError, FileNotFoundError, FileExistsError, KeyError,
                BudgetExceededError, IncompatibleBudgetError, InvalidGuaranteeError)


def _fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=2)


def _budget(epsilon: float | None, delta: float | None, rho: float | None,
            mu: float | None) -> Budget:
    given = [n for n, v in (("--epsilon", epsilon), ("--rho", rho), ("--mu", mu)) if v is not None]
    if len(given) != 1:
        _fail("give exactly one budget: --rho R, --epsilon E [--delta D] or --mu M; got "
              f"{', '.join(given) or 'none'}")
    if delta is not None and epsilon is None:
        _fail("--delta goes with --epsilon")
    if rho is not None:
        return ZCDP(rho)
    if mu is not None:
        return GDP(mu)
    return ApproxDP(epsilon, delta) if delta is not None else PureDP(epsilon)


def _center(value: str) -> Any:
    if value in ("private", "none"):
        return value
    path = Path(value)
    if not path.exists():
        raise FileNotFoundError(
            f"--center must be 'private', 'none' or a CSV file of a public mean; no file {value!r}"
        )
    import numpy as np

    return np.loadtxt(path, delimiter=",", ndmin=1).ravel()


def charge_ledger(ledger: Path, dataset: str, budget: Budget, *, check_only: bool,
                  details: dict[str, Any]) -> None:
    """Check (``check_only``) or record a spend in a budget ledger. Kept in one place so
    that the ledger API can be rewired here alone."""
    from dpggm.privacy.ledger import Ledger

    book = Ledger(ledger)
    if check_only:
        if not book.can_spend(dataset, budget):
            raise BudgetExceededError(
                f"dataset {dataset!r} has {book.remaining(dataset)} left; {budget} was asked"
            )
        return
    book.spend(dataset, budget, mechanism="dpggm graph", details=details)


def graph_result_record(estimator: PrivateGraph, *, data_name: str) -> dict[str, Any]:
    """The public record of a fitted :class:`PrivateGraph` (no seed, nothing computed from
    the private data beyond the release)."""
    privacy = estimator.privacy_.to_dict()
    if "seed" in str(privacy.get("random_state", "")):
        # The seed value would let anyone regenerate the noise: it is never written.
        privacy["random_state"] = "fixed seed (value withheld; a seeded run is not a release)"
    params = {k: v for k, v in estimator.get_params().items()
              if k not in ("random_state", "budget") and isinstance(v, (int, float, str, bool))}
    params["budget"] = estimator.budget.to_dict()
    inner = estimator.graph_estimator_
    p = estimator.n_features_in_
    n_edges = int(estimator.adjacency_.sum() // 2)
    diagnostics: dict[str, Any] = {
        "edges": f"{n_edges} of {p * (p - 1) // 2} possible",
    }
    if hasattr(inner, "alpha_"):
        diagnostics["graphical-lasso penalty (rescaled data)"] = float(inner.alpha_)
        diagnostics["solver converged"] = bool(inner.converged_)
        diagnostics["release repaired to positive definite"] = bool(inner.repaired_)
    return {
        "command": "graph",
        "title": f"dpggm graph of {data_name}",
        "method": estimator.method,
        "n_samples": int(estimator.n_samples_),
        "n_features": int(p),
        "features": list(estimator.feature_names_in_),
        "n_edges": n_edges,
        "privacy": privacy,
        "parameters": params,
        "diagnostics": diagnostics,
    }


def write_graph_outputs(estimator: PrivateGraph, out: Path, *, data_name: str,
                        overwrite: bool) -> list[Path]:
    """Write every released file into a temporary sibling of ``out`` and rename it into
    place (replacing ``out`` only with ``overwrite``)."""
    import numpy as np

    from dpggm.report import build_report, draw_graph, precision_heatmap

    out = Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; choose another --out or pass --overwrite")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        record = graph_result_record(estimator, data_name=data_name)
        names = list(estimator.feature_names_in_)
        (staging / "result.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
        (staging / "edges.csv").write_text(edges_csv_text(estimator.edges_), encoding="utf-8")
        if estimator.precision_ is not None:
            np.save(staging / "precision.npy", estimator.precision_)
            (staging / "precision.png").write_bytes(
                precision_heatmap(estimator.precision_, names))
        (staging / "graph.png").write_bytes(
            draw_graph(estimator.edges_, names, title=record["title"]))
        (staging / "report.html").write_text(build_report(staging, name=out.name), encoding="utf-8")
        for path in staging.iterdir():
            with open(path, "rb") as fh:
                os.fsync(fh.fileno())
        if out.exists():
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".old"))
            os.replace(out, old / out.name)
            os.replace(staging, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sorted(out.iterdir())


def curator_diagnostics(estimator: PrivateGraph) -> list[str]:
    """Advice for the curator, computed from the private data: **never release it**."""
    n, p = estimator.n_samples_, estimator.n_features_in_
    n_edges = int(estimator.adjacency_.sum() // 2)
    lines = [f"rows changed by clipping: {estimator.n_clipped_rows_} of {n} "
             f"({100 * estimator.n_clipped_rows_ / n:.1f}%)"]
    share = estimator.n_clipped_rows_ / n
    if share > 0.5 and estimator.ranges_ is None:
        lines.append("most rows were clipped: the graph describes the clipped data; try "
                     "--bound auto (or a larger declared bound)")
    elif share > 0.5:
        lines.append("most rows have some value outside its private range (each column "
                     "clips its tails; with many columns most rows touch one): the graph "
                     "describes the clipped data. A larger budget or more records gives "
                     "ranges closer to the data's own tails.")
    elif share == 0 and estimator.ranges_ is None:
        lines.append("no row was clipped: a smaller declared bound would mean less noise")
    if n_edges == 0:
        lines.append("the graph is EMPTY: the noise hides every dependence at this budget. "
                     "Try a larger budget, more records or fewer columns (what matters is "
                     "n * sqrt(rho) / p).")
    elif n_edges == p * (p - 1) // 2:
        lines.append("the graph is COMPLETE: every pair is joined, which is rarely real. "
                     "Check the bounds and centring (--center private).")
    return lines


def graph(
    data: Annotated[Path, typer.Argument(help="CSV file with a header row; one record per row")],
    rho: Annotated[float | None, typer.Option("--rho", help="total rho for rho-zCDP")] = None,
    epsilon: Annotated[float | None, typer.Option("--epsilon", help="total epsilon")] = None,
    delta: Annotated[float | None, typer.Option("--delta", help="delta, with --epsilon")] = None,
    mu: Annotated[float | None, typer.Option("--mu", help="mu (accounted as mu^2/2-zCDP)")] = None,
    bound: Annotated[str, typer.Option(help="auto (private per-column ranges), l2:B or box:B")] = "auto",
    center: Annotated[str, typer.Option(help="private, none, or a CSV file of a public mean")] = "private",
    method: Annotated[str, typer.Option(help=f"one of: {', '.join(GRAPH_METHODS)}")] = "glasso",
    neighbors: Annotated[str, typer.Option(help="replace or add-remove")] = "replace",
    bound_fraction: Annotated[float, typer.Option(help="share of the budget for --bound auto")] = 0.125,
    center_fraction: Annotated[float, typer.Option(help="share of the budget for --center private")] = 0.0625,
    out: Annotated[Path, typer.Option(help="output directory (created; must not exist)")] = Path("dpggm-graph"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace an existing --out")] = False,
    ledger: Annotated[Path | None, typer.Option(help="budget ledger file to spend from")] = None,
    dataset: Annotated[str | None, typer.Option(help="dataset name in the ledger")] = None,
    seed: Annotated[str, typer.Option(help="'secure' (a release) or an integer (an experiment)")] = "secure",
    as_json: Annotated[bool, typer.Option("--json", help="print result.json")] = False,
) -> None:
    """The private conditional-dependence graph of DATA, with pictures and a report."""
    try:
        budget = _budget(epsilon, delta, rho, mu)
        if (ledger is None) != (dataset is None):
            _fail("--ledger and --dataset go together")
        if out.exists() and not overwrite:
            raise FileExistsError(f"{out} exists; choose another --out or pass --overwrite")
        random_state: Any = seed if seed == "secure" else int(seed)
        estimator = PrivateGraph(
            budget=budget, bounds=bound, center=_center(center), method=method,
            neighbors=neighbors, bound_fraction=bound_fraction,
            center_fraction=center_fraction, random_state=random_state,
        )
        if ledger is not None:
            charge_ledger(ledger, dataset, budget, check_only=True, details={})
        estimator.fit(str(data))
        if ledger is not None:
            # Recorded before anything is written: a refused spend leaves no release.
            charge_ledger(ledger, dataset, estimator.privacy_.budget, check_only=False,
                          details={"data": str(data), "out": str(out)})
        written = write_graph_outputs(estimator, out, data_name=data.name, overwrite=overwrite)
    except _USER_ERRORS as exc:
        _fail(str(exc))
    for line in curator_diagnostics(estimator):
        err_console.print(f"[yellow]curator only (do not publish):[/] {line}")
    if as_json:
        console.print_json((out / "result.json").read_text(encoding="utf-8"))
        return
    n_edges = int(estimator.adjacency_.sum() // 2)
    console.print(estimator.privacy_.summary())
    console.print(f"{n_edges} edges among {estimator.n_features_in_} variables; validity "
                  f"{estimator.privacy_.validity}")
    console.print("wrote " + ", ".join(str(p) for p in written))
