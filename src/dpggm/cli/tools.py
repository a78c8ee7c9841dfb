"""``dpggm solve | demo | publish | recover | example-data``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dpggm.cli import data_options as dopt
from dpggm.cli.common import (
    DeltaOpt,
    EpsilonOpt,
    MuOpt,
    UserError,
    console,
    err_console,
    guard,
    load_bounds,
    open_ledger,
    parse_seed,
    summarised_warnings,
)
from dpggm.cli.common import (
    feature_names as _names,
)

__all__ = ["demo", "example_data", "publish", "recover", "solve"]


def _input_file(path: Path, what: str) -> None:
    if path.is_dir():
        raise UserError(f"{path} is a directory; give the {what}")
    if not path.exists():
        raise UserError(f"no such file: {path}")


def _load_matrix(matrix: Path) -> tuple[Any, list[str], str]:
    """The matrix, its variable names and where they came from: a CSV header row (or a
    ``features`` list in a ``result.json`` beside a ``.npy``) keeps them; otherwise they
    are ``x0 .. x{p-1}`` and the record says why."""
    import json

    import numpy as np

    if matrix.suffix == ".npy":
        try:
            S = np.load(matrix, allow_pickle=False)
        except (ValueError, OSError, EOFError):
            raise UserError(f"{matrix} is not a NumPy .npy file of numbers (write it with "
                            "numpy.save, or give a CSV file)") from None
        _check_square(S, matrix)
        beside = matrix.parent / "result.json"
        if beside.exists():
            features = json.loads(beside.read_text(encoding="utf-8")).get("features")
            if isinstance(features, list) and len(features) == S.shape[0]:
                return S, [str(f) for f in features], f"features of {beside}"
        return S, [f"x{j}" for j in range(S.shape[0])], "x0..: a .npy matrix carries no names"
    import pandas as pd

    try:
        frame = pd.read_csv(matrix, header=None, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise UserError(f"{matrix} is empty; a matrix file holds p rows of p numbers") from None
    except (pd.errors.ParserError, UnicodeDecodeError):
        raise UserError(f"{matrix} is not a comma-separated text file of numbers; give a .npy "
                        "file or a CSV of p rows of p numbers") from None
    numbers = frame.apply(pd.to_numeric, errors="coerce")
    header = bool(numbers.iloc[0].isna().any())
    body, body_numbers = (frame.iloc[1:], numbers.iloc[1:]) if header else (frame, numbers)
    bad = body_numbers.isna().to_numpy() & (body.to_numpy() != "")
    missing = body.to_numpy() == ""
    if body.empty or bad.any() or missing.any():
        where = np.argwhere(bad | missing)
        line = (int(where[0][0]) + 1 + int(header)) if len(where) else None
        if line is None:
            first = ",".join(frame.iloc[0])
            found = (f"line 1 holds {first if len(first) <= 40 else first[:39] + '…'!r} and "
                     "no line of numbers follows")
        elif body.to_numpy()[tuple(where[0])] != "":
            found = f"line {line} holds {body.to_numpy()[tuple(where[0])]!r}"
        else:
            found = f"line {line} has an empty field"
        raise UserError(
            f"{matrix} is not a matrix of numbers ({found}); a matrix file holds p rows of p "
            "comma-separated numbers, optionally below one header row of names")
    values = body_numbers.to_numpy(dtype=float)
    _check_square(values, matrix)
    if header:
        return values, [str(v) for v in frame.iloc[0]], f"header row of {matrix}"
    return values, [f"x{j}" for j in range(values.shape[1])], "x0..: the CSV has no header row"


def _check_square(S: Any, matrix: Path) -> None:
    import numpy as np

    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 1:
        raise UserError(f"{matrix} holds a matrix of shape {tuple(S.shape)}; the graphical lasso "
                        "needs a square covariance matrix (p rows of p numbers)")
    if not np.issubdtype(S.dtype, np.number) or not np.isfinite(S).all():
        raise UserError(f"{matrix} holds values that are not finite numbers")


@guard
def solve(
    matrix: Annotated[Path, typer.Argument(help="covariance matrix as .npy (or .csv without header)")],
    alpha: Annotated[float, typer.Option(help="graphical-lasso penalty")],
    solver: Annotated[str, typer.Option(help="auto, cd or admm")] = "auto",
    penalize_diagonal: Annotated[bool, typer.Option(
        "--penalize-diagonal", help="penalise the diagonal too")] = False,
    tol: Annotated[float, typer.Option(help="duality-gap tolerance")] = 1e-8,
    out: Annotated[Path, typer.Option(help="output directory")] = Path("dpggm-solve"),
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing output directory")] = False,
) -> None:
    """Run the graphical lasso on a matrix (non-private post-processing: no budget)."""

    from dpggm.cli.estimate import edge_list_csv
    from dpggm.io import deliver
    from dpggm.solvers.glasso import graphical_lasso

    _input_file(matrix, "matrix file (.npy, or .csv with or without a header row)")
    S, names, names_from = _load_matrix(matrix)
    result: Any = None

    def write(staged: Any) -> None:
        nonlocal result
        with summarised_warnings():
            result = graphical_lasso(S, alpha, method=solver,
                                     penalize_diagonal=penalize_diagonal, tol=tol)
        staged.npy("precision.npy", result.estimate)
        staged.npy("covariance.npy", result.covariance)
        staged.text("edges.csv", edge_list_csv(result.estimate, names))
        staged.json("result.json", {
            "alpha": alpha, "method": result.extra.get("method"),
            "iterations": result.iterations, "converged": result.converged,
            "objective": result.objective, "duality_gap": result.extra.get("duality_gap"),
            "privacy": "post-processing of the input matrix; no budget spent",
            "features": names, "feature_names": names_from,
        })

    delivered = deliver(out, write, overwrite=overwrite, report=_report)
    console.print(f"graphical lasso ({result.extra.get('method')}): {result.iterations} "
                  f"iterations, objective {result.objective:.10g}, duality gap "
                  f"{result.extra.get('duality_gap'):.3g}", markup=False)
    console.print("wrote " + ", ".join(str(p) for p in delivered["written"]), markup=False)


def _report(line: str) -> None:
    """A line about the recovery of an interrupted delivery, for the curator."""
    err_console.print(line, markup=False, highlight=False)


@guard
def demo(seed: Annotated[int, typer.Option(help="random seed")] = 0) -> None:
    """A short demonstration: a private graph of synthetic measurements (a 10-variable chain), then private covariances of scikit-learn's breast-cancer data."""
    from dpggm.experiments.demo import run_demo

    with summarised_warnings():
        run_demo(console=console, random_state=seed)


def _check_out_file(out: Path, overwrite: bool) -> None:
    if out.is_dir():
        raise UserError(f"--out {out} is a directory; give the name of the CSV file to write")
    for path in (out, out.with_suffix(".json")):
        if path.exists() and not overwrite:
            raise UserError(f"{path} exists; choose another --out or pass --overwrite")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"--out {out}: directory {parent} does not exist")
    from dpggm.io import check_writable_dir

    check_writable_dir(parent)


@guard
def publish(
    data: Annotated[Path, typer.Argument(
        help="the table, one record per row (CSV, also compressed, Parquet, .xlsx/.xls/.ods, "
             ".sav, .dta, .sas7bdat; see --drop, --id-col, --columns)")],
    out: Annotated[Path, typer.Option(
        help="where to write the noisy CSV (metadata goes beside it as .json)")],
    bound: Annotated[str, typer.Option(
        help="declared bound: l2:B (row norm), box:B, or box:per-column with --bound-file")] = "",
    bound_file: Annotated[Path | None, typer.Option(help="CSV of per-column box bounds")] = None,
    sigma: Annotated[float | None, typer.Option(help="noise standard deviation")] = None,
    mu: MuOpt = None,
    epsilon: EpsilonOpt = None,
    delta: DeltaOpt = None,
    snr_db: Annotated[float | None, typer.Option(
        help="signal-to-noise ratio in dB (uses the data's power: data-dependent)")] = None,
    discrete: Annotated[bool, typer.Option(
        "--discrete", help="exact discrete Gaussian noise for integer data")] = False,
    grid: Annotated[float | None, typer.Option(
        help="with --discrete: noise on the lattice grid*Z")] = None,
    neighbors: Annotated[str, typer.Option(help="replace or add-remove")] = "replace",
    seed: Annotated[str | None, typer.Option(
        help="random seed (integer: an experiment, not a release) or 'secure'")] = "secure",
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace existing output files")] = False,
    ledger: Annotated[Path | None, typer.Option(help="budget ledger file to spend from")] = None,
    dataset: Annotated[str | None, typer.Option(help="dataset name in the ledger")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the guarantee as JSON")] = False,
    columns: dopt.ColumnsOpt = None,
    drop: dopt.DropOpt = None,
    id_col: dopt.IdColOpt = None,
    schema: dopt.SchemaOpt = None,
    delimiter: dopt.DelimiterOpt = ",",
    decimal: dopt.DecimalOpt = ".",
    thousands: dopt.ThousandsOpt = None,
    na_values: dopt.NaValuesOpt = None,
    header: dopt.HeaderOpt = False,
    no_header: dopt.NoHeaderOpt = False,
    index_col: dopt.IndexColOpt = None,
    encoding: dopt.EncodingOpt = "utf-8",
    sheet: dopt.SheetOpt = None,
    file_format: dopt.FormatOpt = None,
) -> None:
    """Publish a noisy copy of DATA once (Guo et al.); data users recover graphs from it.

    With --ledger and --dataset the release is charged before either file appears: the
    booking is checked before the records are read (the guarantee follows from the bound,
    the number of columns and the noise level), and a release the ledger cannot book is
    refused with nothing written or spent."""
    import json

    from dpggm.experiments.publish_io import publish_csv

    reading = dopt.data_options(columns=columns, delimiter=delimiter, decimal=decimal,
                                no_header=no_header, index_col=index_col, encoding=encoding,
                                drop=drop, id_col=id_col, schema=schema, na_values=na_values,
                                thousands=thousands, sheet=sheet, format=file_format,
                                header=header)
    bounds = load_bounds(bound, bound_file)
    random_state: Any = parse_seed(seed)
    if (ledger is None) != (dataset is None):
        raise UserError("--ledger and --dataset go together")
    if not data.is_dir():
        _input_file(data, "file of records")
    _check_out_file(out, overwrite)
    book = None if ledger is None else open_ledger(ledger, dataset)
    release = publish_csv(
        dopt.table_file(data, reading), out, bounds=bounds, sigma=sigma, mu=mu, epsilon=epsilon, delta=delta,
        snr_db=snr_db, discrete=discrete, grid=grid, neighbors=neighbors,
        random_state=random_state, overwrite=overwrite, ledger=book, dataset=dataset,
        report=_report,
    )
    metadata = out.with_suffix(".json")
    if as_json:
        console.print_json(release.privacy_.to_json())
    else:
        console.print(release.privacy_.summary(), markup=False)
        if book is not None:
            receipt = json.loads(metadata.read_text(encoding="utf-8")).get("ledger", {})
            console.print(f"charged {release.privacy_.budget} to {dataset!r} in {ledger} "
                          f"(spend #{receipt.get('spend')})", markup=False)
        console.print(f"wrote {out} and {metadata}", markup=False)


@guard
def recover(
    noisy: Annotated[Path, typer.Argument(help="a noisy CSV written by 'dpggm publish'")],
    sigma: Annotated[float | None, typer.Option(
        help="the release's noise sigma (read from its metadata when present)")] = None,
    metadata: Annotated[Path | None, typer.Option(
        help="release metadata JSON (default: NOISY with .json)")] = None,
    alpha: Annotated[str, typer.Option(help="penalty, or 'cv' for cross-validation")] = "cv",
    selection: Annotated[str, typer.Option(help="cv rule: drop or min-mse")] = "drop",
    solver: Annotated[str, typer.Option(help="auto, cd or admm")] = "auto",
    penalize_diagonal: Annotated[bool, typer.Option(
        "--penalize-diagonal",
        help="penalise the diagonal too (needed when the noise swamps a column)")] = False,
    truth: Annotated[Path | None, typer.Option(
        help="CSV of true edges (source,target) for an AUC")] = None,
    out: Annotated[Path, typer.Option(
        help="output directory (written whole or not at all)")] = Path("dpggm-recover"),
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing output directory")] = False,
) -> None:
    """Recover the Gaussian graphical model from a noisy release (post-processing)."""
    import numpy as np

    if alpha == "cv":
        alpha_value: Any = "cv"
    else:
        try:
            alpha_value = float(alpha)
        except ValueError:
            raise UserError(f"--alpha must be a number or 'cv'; got {alpha!r}") from None
    _input_file(noisy, "noisy CSV written by 'dpggm publish'")
    if truth is not None:
        _input_file(truth, "CSV of true edges (source,target)")
    from dpggm.experiments.publish_io import default_metadata_path

    meta = metadata if metadata is not None else default_metadata_path(noisy)
    if metadata is not None:
        _input_file(metadata, "release metadata JSON written by 'dpggm publish'")
    if sigma is None and not meta.exists():
        raise UserError(
            f"{noisy} has no release metadata ({meta} does not exist), so the noise level is "
            "unknown: give --metadata FILE (the .json 'dpggm publish' wrote beside the CSV) "
            "or --sigma S (the release's noise standard deviation; 0 for no correction)")
    from dpggm.experiments.publish_io import recover_from_csv
    from dpggm.io import deliver

    # Everything the user typed is checked before the fit; every file is written into a
    # staging directory and appears only when all of them (the AUC too) are written.
    truth_edges = None if truth is None else _read_truth(truth, _csv_header(noisy))
    estimator: Any = None
    auc = None

    def write(staged: Any) -> None:
        nonlocal estimator, auc
        with summarised_warnings():
            estimator = recover_from_csv(
                noisy, metadata=meta if meta.exists() else None, noise_sigma=sigma,
                alpha=alpha_value, selection=selection, solver=solver,
                penalize_diagonal=penalize_diagonal, out_dir=staged.staging, overwrite=True,
            )
        if truth_edges is not None:
            auc = _truth_auc(estimator, truth_edges)
            staged.json("auc.json", {"auc": auc, "truth": str(truth)})

    deliver(out, write, overwrite=overwrite, report=_report)
    edges = int((np.triu(estimator.precision_, 1) != 0).sum())
    console.print(f"alpha = {estimator.alpha_:.4g}; {edges} edges", markup=False)
    if auc is not None:
        console.print(f"edge-recovery AUC against {truth}: {auc:.4f}", markup=False)
    console.print(f"wrote {out}", markup=False)


def _csv_header(path: Path) -> list[str]:
    """The column names on the first line of a CSV file (nothing else is read)."""
    import csv

    with open(path, encoding="utf-8", newline="") as handle:
        return next(csv.reader(handle), [])


def _read_truth(truth: Path, names: list[str]) -> list[tuple[str, str]]:
    """The edges of a truth file, each naming two columns of the data (checked here, before
    any work, so that a bad file leaves nothing behind)."""
    import pandas as pd

    try:
        edges = pd.read_csv(truth, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"--truth {truth} is not a CSV of edges (source,target): "
                        f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    if edges.shape[1] < 2:
        raise UserError(f"--truth {truth} must have two columns (source,target); it has "
                        f"{edges.shape[1]}")
    known = set(names)
    pairs = []
    for line, (a, b) in enumerate(edges.iloc[:, :2].itertuples(index=False), start=2):
        unknown = [name for name in (a, b) if name not in known]
        if unknown:
            raise UserError(
                f"--truth {truth}, line {line}: edge ({a}, {b}) names "
                f"{', '.join(repr(u) for u in unknown)}, not a column of the data "
                f"({', '.join(names[:8])}{', ...' if len(names) > 8 else ''})")
        pairs.append((a, b))
    if not pairs:
        raise UserError(f"--truth {truth} lists no edges")
    return pairs


def _truth_auc(estimator: Any, edges: list[tuple[str, str]]) -> float:
    """AUC of |precision| as edge scores against the true edges."""
    import numpy as np

    from dpggm.metrics.graph import edge_auc

    names = _names(estimator)
    index = {name: i for i, name in enumerate(names)}
    adjacency = np.zeros((len(names), len(names)), dtype=bool)
    for a, b in edges:
        adjacency[index[a], index[b]] = adjacency[index[b], index[a]] = True
    return float(edge_auc(np.abs(estimator.precision_), adjacency))


@guard
def example_data(
    path: Annotated[Path, typer.Argument(help="CSV file to write")],
    rows: Annotated[int, typer.Option(help="number of records")] = 2000,
    seed: Annotated[int, typer.Option(help="random seed of the synthetic records")] = 0,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace the file")] = False,
) -> None:
    """Write a synthetic example data set (a CSV with a header) to try the commands on.

    The records are made up: six clinical-style measurements (age, systolic and diastolic
    blood pressure, cholesterol, BMI, glucose) drawn from a Gaussian graphical model with
    a chain of dependencies, standardised by public reference values and clipped to
    ``|x| <= 1`` per column, so ``--bound box:1`` (or ``l2:2.5``) is a true declared bound.
    Also writes ``<name>-edges.csv``, the true graph, for ``dpggm recover --truth``.
    """
    from dpggm.datasets.example import example_records
    from dpggm.io import write_atomic

    if isinstance(rows, bool) or rows < 2:
        raise UserError(f"--rows must be an integer >= 2; got {rows}")
    edges_path = path.with_name(path.stem + "-edges.csv")
    for target in (path, edges_path):
        if target.is_dir():
            raise UserError(f"{target} is a directory; give a file name")
        if target.exists() and not overwrite:
            raise UserError(f"{target} exists; choose another name or pass --overwrite")
    frame, edges = example_records(rows, random_state=seed)
    write_atomic(path, lambda fh: frame.to_csv(fh, index=False, float_format="%.4f"))
    write_atomic(edges_path, lambda fh: edges.to_csv(fh, index=False))
    console.print(f"wrote {path} ({rows} records, columns {', '.join(frame.columns)}) and "
                  f"{edges_path} (the true graph)", markup=False)
