"""Files in, files out: publish a noisy CSV release with its metadata, and recover a graph
from such a release (the ``dpggm publish`` / ``dpggm recover`` workflow of Guo et al.).

``publish_csv`` reads a CSV file with a header row, releases a noisy copy with
:func:`dpggm.mechanisms.publish.publish` and writes it next to a JSON metadata file (the
noise scale and distribution, and the guarantee; never the curator-only figures).
``recover_from_csv`` reads a released CSV file and its metadata and fits
:class:`dpggm.estimators.noisy_glasso.NoisyGraphicalLasso`.

Every file is written atomically (a temporary file in the target directory, then a
rename), and an existing file is replaced only with ``overwrite=True``.

Privacy: ``publish_csv`` is the one step that touches private data and adds noise;
``recover_from_csv`` is post-processing of the release and consumes no budget.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm.estimators._contract import feature_names as _names
from dpggm.estimators.data import TableFile, as_matrix, iter_chunks
from dpggm.estimators.graph import edges_from_precision
from dpggm.estimators.noisy_glasso import NoisyGraphicalLasso
from dpggm.experiments._common import write_csv
from dpggm.io import write_atomic
from dpggm.mechanisms.publish import NoisyRelease, publish

__all__ = ["default_metadata_path", "publish_csv", "read_metadata", "recover_from_csv"]

RECOVERY_OUTPUT_NAMES = ("precision.csv", "edges.csv", "recovery.json")


def default_metadata_path(csv_path: Any) -> Path:
    """Where the metadata of a released CSV file lives: the same name with ``.json``."""
    return Path(csv_path).with_suffix(".json")


def _write_text(path: Path, text: str, *, overwrite: bool) -> Path:
    return write_atomic(Path(path), lambda fh: fh.write(text), overwrite=overwrite)


def _read_csv(path: Any) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such CSV file: {str(path)!r}")
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise ValueError(f"CSV file {str(path)!r} is empty") from None
    numeric = all(pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns)
    if not numeric or not np.isfinite(frame.to_numpy(dtype=float)).all():
        # Name the problem in the file's terms (its name, the 1-based line, the column),
        # as the data path does, rather than as a 0-based row of an anonymous table.
        for _ in iter_chunks(path):
            pass
    return frame


def _read_records(source: Any) -> pd.DataFrame:
    """The private records of a data file (a path or a
    :class:`~dpggm.estimators.data.TableFile` with its schema and reading options), read
    by the data path: every format, its checks, messages in the file's terms. A column of
    whole numbers is kept as integers (as reading a CSV file with pandas did), so that a
    discrete release of integer data writes integers."""
    values, columns = as_matrix(source if isinstance(source, TableFile) else TableFile(source))
    frame = pd.DataFrame(values, columns=columns)
    for name in columns:
        column = frame[name].to_numpy()
        if np.all(column == np.round(column)) and np.all(np.abs(column) < 2.0**53):
            frame[name] = column.astype(np.int64)
    return frame


def publish_csv(
    input_csv: Any,
    output_csv: Any,
    *,
    bounds: Any,
    sigma: float | None = None,
    mu: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    snr_db: float | None = None,
    discrete: bool = False,
    grid: float | None = None,
    neighbors: str = "replace",
    report_delta: float | None = None,
    random_state: Any = "secure",
    metadata_path: Any = None,
    overwrite: bool = False,
) -> NoisyRelease:
    """Release a noisy copy of a CSV file and write it with its metadata.

    Parameters
    ----------
    input_csv : path or TableFile
        Private records, one per row, with a header row: a data file in any format the
        data path reads, or a :class:`~dpggm.estimators.data.TableFile` with its schema
        (dropped and identifier columns are not released) and reading options.
    output_csv : path
        Where to write the released records (same header). Must differ from
        ``input_csv``.
    bounds, sigma, mu, epsilon, delta, snr_db, discrete, grid, neighbors, report_delta
        As for :func:`dpggm.mechanisms.publish.publish` (exactly one noise level).
    random_state : None, int, numpy.random.Generator or "secure", default="secure"
        A production release should keep the default.
    metadata_path : path, optional
        Where to write the JSON metadata; default :func:`default_metadata_path`.
    overwrite : bool, default=False
        Replace existing output files.

    Returns
    -------
    NoisyRelease

    Raises
    ------
    FileExistsError
        An output file exists and ``overwrite`` is false (checked before any noise is
        drawn).
    ValueError, TypeError
        As for :func:`~dpggm.mechanisms.publish.publish`, or unreadable input.

    Privacy
    -------
    The release's guarantee (``release.privacy_``); the metadata file carries it. The
    paper's data-dependent figures stay out of the file.
    """
    output_csv = Path(output_csv)
    metadata_path = (
        default_metadata_path(output_csv) if metadata_path is None else Path(metadata_path)
    )
    if Path(getattr(input_csv, "path", input_csv)).resolve() == output_csv.resolve():
        raise ValueError("output_csv must differ from input_csv: the private file is kept")
    if not overwrite:
        for target in (output_csv, metadata_path):
            if target.exists():
                raise FileExistsError(f"{str(target)!r} exists; pass overwrite=True to replace it")
    frame = _read_records(input_csv)
    release = publish(
        frame,
        bounds=bounds,
        sigma=sigma,
        mu=mu,
        epsilon=epsilon,
        delta=delta,
        snr_db=snr_db,
        discrete=discrete,
        grid=grid,
        neighbors=neighbors,
        report_delta=report_delta,
        random_state=random_state,
    )
    write_csv(release.data, output_csv, overwrite=overwrite)
    _write_text(
        metadata_path, json.dumps(release.to_json_metadata(), indent=2), overwrite=overwrite
    )
    return release


def read_metadata(path: Any) -> dict[str, Any]:
    """Read release metadata written by :func:`publish_csv`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such metadata file: {str(path)!r}")
    with open(path, encoding="utf-8") as stream:
        try:
            return json.load(stream)
        except json.JSONDecodeError as exc:
            raise ValueError(f"metadata file {str(path)!r} is not valid JSON: {exc}") from None


def recover_from_csv(
    noisy_csv: Any,
    *,
    metadata: Any = None,
    noise_sigma: float | None = None,
    discrete: bool | None = None,
    grid: float | None = None,
    alpha: Any = "cv",
    selection: str = "drop",
    cv: int = 5,
    solver: str = "auto",
    penalize_diagonal: bool = False,
    assume_centered: bool = False,
    out_dir: Any = None,
    overwrite: bool = False,
) -> NoisyGraphicalLasso:
    """Recover the graph from a released CSV file.

    Parameters
    ----------
    noisy_csv : path
        The released records (header row, numeric columns).
    metadata : path or dict, optional
        The release's metadata; by default :func:`default_metadata_path` of ``noisy_csv``
        is used when it exists. Without metadata ``noise_sigma`` is required.
    noise_sigma : float, optional
        The release's noise scale; when metadata is present it must agree with it.
    discrete, grid : optional
        The release's noise distribution; taken from the metadata when omitted.
    alpha, selection, cv, solver, penalize_diagonal, assume_centered
        As for :class:`~dpggm.estimators.noisy_glasso.NoisyGraphicalLasso`.
    out_dir : path, optional
        Where to write ``precision.csv`` (the precision matrix, with a ``variable``
        column), ``edges.csv`` (``source, target, weight, partial_correlation`` for every
        non-zero off-diagonal pair; ``weight`` is the partial correlation, see
        :data:`dpggm.estimators.edges.EDGE_COLUMNS`) and ``recovery.json`` (penalty, cross-validation curve, the
        privacy record).
    overwrite : bool, default=False
        Replace existing output files (checked before fitting).

    Returns
    -------
    NoisyGraphicalLasso
        The fitted estimator.

    Privacy
    -------
    Post-processing of the release; consumes no budget. ``privacy_`` is the release's
    guarantee when metadata is available.
    """
    release = None
    if isinstance(metadata, dict):
        release = metadata
    elif metadata is not None:
        release = read_metadata(metadata)
    else:
        candidate = default_metadata_path(noisy_csv)
        if candidate.exists():
            release = read_metadata(candidate)
    directory = None
    if out_dir is not None:
        directory = Path(out_dir)
        if not overwrite:
            existing = [n for n in RECOVERY_OUTPUT_NAMES if (directory / n).exists()]
            if existing:
                raise FileExistsError(
                    f"out_dir {str(directory)!r} already holds {', '.join(existing)}; pass "
                    "overwrite=True to replace them"
                )
    if discrete is None:
        discrete = bool(
            release is not None
            and release.get("noise", {}).get("distribution") == "discrete-gaussian"
        )
    if grid is None and release is not None:
        grid = release.get("noise", {}).get("grid")
    frame = _read_csv(noisy_csv)
    estimator = NoisyGraphicalLasso(
        alpha=alpha,
        noise_sigma=noise_sigma,
        discrete=discrete,
        grid=grid,
        solver=solver,
        penalize_diagonal=penalize_diagonal,
        cv=cv,
        selection=selection,
        release=release,
        assume_centered=assume_centered,
    ).fit(frame)
    if directory is not None:
        _write_recovery(estimator, directory, overwrite=overwrite)
    return estimator


def _write_recovery(estimator: NoisyGraphicalLasso, directory: Path, *, overwrite: bool) -> None:
    names = _names(estimator)
    precision = pd.DataFrame(estimator.precision_, columns=names)
    precision.insert(0, "variable", names)
    write_csv(precision, directory / "precision.csv", overwrite=overwrite)
    edges = edges_from_precision(estimator.precision_, names)
    write_csv(edges, directory / "edges.csv", overwrite=overwrite)
    summary: dict[str, Any] = {
        "alpha": estimator.alpha_,
        "noise_sigma": estimator.noise_sigma_,
        "noise_variance_subtracted": estimator.noise_variance_,
        "n_samples": estimator.n_samples_,
        "n_features": estimator.n_features_in_,
        "n_edges": len(edges),
        "solver": {
            "method": estimator.solver_.extra.get("method"),
            "converged": bool(estimator.solver_.converged),
            "duality_gap": estimator.solver_.extra.get("duality_gap"),
        },
        "privacy": estimator.privacy_.to_dict(),
    }
    if hasattr(estimator, "cv_results_"):
        results = estimator.cv_results_
        summary["cross_validation"] = {
            "rule": results["rule"],
            "alphas": [float(a) for a in results["alphas"]],
            "mean_mse": [float(m) if np.isfinite(m) else None for m in results["mean_mse"]],
            "selected_index": int(results["selected_index"]),
        }
    _write_text(
        directory / "recovery.json", json.dumps(summary, indent=2, default=str), overwrite=overwrite
    )
