"""Files in, files out: publish a noisy copy of private records with its metadata, and
recover a graph from such a release (the ``dpggm publish`` / ``dpggm recover`` workflow of
Guo et al.).

``publish_csv`` reads a data file, releases a noisy copy with
:func:`dpggm.mechanisms.publish.publish` and writes it next to a JSON metadata file (the
noise scale and distribution, and the guarantee; never the curator-only figures).
``publish_dask`` does the same for a Dask collection, partition by partition, into a
Parquet data set (optional extra ``dpggm[dask]``). ``recover_from_csv`` reads a released
CSV file and its metadata and fits
:class:`dpggm.estimators.noisy_glasso.NoisyGraphicalLasso`.

The noise is the mechanism's (:mod:`dpggm.mechanisms.publish`); this module reads the
records through the data path (:mod:`dpggm.data`) and delivers the files through
:mod:`dpggm.io`: staged, charged to a ledger when one is given, then placed, so a reader
sees all of a release or none of it, and an existing file is replaced only with
``overwrite=True``.

Does a Dask release depend on the partitioning?
-----------------------------------------------
Its *distribution* and its *guarantee* do not: every record gets i.i.d. noise of the same
scale whatever partition it is in, and the guarantee depends only on the bound, the
neighbouring relation and ``sigma``. The *realised values* for a given seed do: stream
``k`` of the seed sequence goes to partition ``k``, so re-partitioning the same data (other
files, other ``blocksize``) with the same seed gives a different (equally valid) noisy
copy; the same data, partitioning and seed give the same release. Seeds are for
experiments only; a production release uses ``random_state="secure"``.

Privacy
-------
``publish_csv`` and ``publish_dask`` are the steps that touch private data and add noise;
``recover_from_csv`` is post-processing of the release and consumes no budget. The Dask
release's noise scale is calibrated on the client from public parameters only (bound,
number of columns, neighbouring relation, target guarantee) by the in-memory code, so its
guarantee is that of :func:`~dpggm.mechanisms.publish.publish` on the same records; options
that read the data to set the noise (``snr_db``) are not offered there. The records are
validated (NaN, non-numeric, bound length) in a first pass, before any noise is drawn.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm.data.tables import TableFile, as_matrix, iter_chunks
from dpggm.estimators import feature_names
from dpggm.estimators.graph import edges_from_precision
from dpggm.estimators.noisy_glasso import NoisyGraphicalLasso
from dpggm.experiments._common import write_csv
from dpggm.io import name_from_csv, write_atomic
from dpggm.mechanisms.publish import NoisyRelease, publish

__all__ = ["default_metadata_path", "publish_csv", "publish_dask", "read_metadata",
           "recover_from_csv", "seed_streams"]

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
    :class:`~dpggm.data.tables.TableFile` with its schema and reading options), read
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


# One piece (over 120 lines, half of it the parameter documentation): the order of the
# delivery -- check everything, read, draw, stage, charge, place -- reads top to bottom.
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
    ledger: Any = None,
    dataset: str | None = None,
    report: Callable[[str], None] | None = None,
) -> NoisyRelease:
    """Release a noisy copy of a CSV file and write it with its metadata, charged to a
    ledger before either file appears when ``ledger`` is given.

    Order of work: every parameter, the output location and (with a ledger) the booking
    are checked before the records are read -- the release's guarantee follows from the
    bound, the number of columns (the header) and the noise level alone
    (:func:`~dpggm.mechanisms.publish.check_publish_ledger`) -- then the records are read,
    the noise drawn, both files written into a staging directory, the ledger charged and
    the files placed (the metadata first), as :mod:`dpggm.io` describes: an interrupted
    delivery is finished by the next one into the same directory, never charged twice.

    Parameters
    ----------
    input_csv : path or TableFile
        Private records, one per row, with a header row: a data file in any format the
        data path reads, or a :class:`~dpggm.data.tables.TableFile` with its schema
        (dropped and identifier columns are not released) and reading options.
    output_csv : path
        Where to write the released records (same header; a column name a spreadsheet
        would read as a formula gets a ``'`` in front, :func:`dpggm.io.csv_name`). Must
        differ from ``input_csv``.
    bounds, sigma, mu, epsilon, delta, snr_db, discrete, grid, neighbors, report_delta
        As for :func:`dpggm.mechanisms.publish.publish` (exactly one noise level).
    random_state : None, int, numpy.random.Generator or "secure", default="secure"
        A production release should keep the default (a seeded run is never booked).
    metadata_path : path, optional
        Where to write the JSON metadata, in the directory of ``output_csv``; default
        :func:`default_metadata_path`.
    overwrite : bool, default=False
        Replace existing output files.
    ledger : Ledger or path, optional
        Charge the release to ``dataset`` in this ledger (an existing file); the metadata
        then carries the receipt under ``"ledger"`` (ledger, dataset, spend, output id).
    dataset : str, optional
        The dataset's name in ``ledger`` (given with ``ledger``).
    report : callable, optional
        ``report(line)`` hears what the recovery of interrupted deliveries into the
        directory of ``output_csv`` did (:func:`dpggm.io.recover_pending`, run first).

    Returns
    -------
    NoisyRelease

    Raises
    ------
    FileExistsError
        An output file exists and ``overwrite`` is false (checked before any noise is
        drawn).
    InvalidGuaranteeError, IncompatibleBudgetError, BudgetExceededError
        The ledger cannot book the release (checked before the records are read; nothing
        is written or spent).
    ValueError, TypeError
        As for :func:`~dpggm.mechanisms.publish.publish`, or unreadable input.

    Privacy
    -------
    The release's guarantee (``release.privacy_``); the metadata file carries it. The
    paper's data-dependent figures stay out of the file.
    """
    from dpggm.io import check_ledger_pair, deliver
    from dpggm.mechanisms.publish import check_publish_ledger
    from dpggm.privacy.ledger import Ledger

    output_csv = Path(output_csv)
    metadata_path = (
        default_metadata_path(output_csv) if metadata_path is None else Path(metadata_path)
    )
    if Path(getattr(input_csv, "path", input_csv)).resolve() == output_csv.resolve():
        raise ValueError("output_csv must differ from input_csv: the private file is kept")
    if metadata_path.resolve().parent != output_csv.resolve().parent or (
            metadata_path.name == output_csv.name):
        raise ValueError(
            f"metadata_path must be another file in the directory of output_csv (they are "
            f"delivered together); got {str(metadata_path)!r} for {str(output_csv)!r}")
    check_ledger_pair(ledger, dataset)
    if not overwrite:
        for target in (output_csv, metadata_path):
            if target.exists():
                raise FileExistsError(f"{str(target)!r} exists; pass overwrite=True to replace it")
    options = {"bounds": bounds, "sigma": sigma, "mu": mu, "epsilon": epsilon, "delta": delta,
               "snr_db": snr_db, "discrete": discrete, "grid": grid, "neighbors": neighbors,
               "report_delta": report_delta}
    book = None
    if ledger is not None:
        book = ledger if isinstance(ledger, Ledger) else _open_ledger(ledger)
        check_publish_ledger(book, dataset, n_features=_n_variables(input_csv),
                             random_state=random_state, **options)
    release: NoisyRelease | None = None

    def write(staged: Any) -> None:
        nonlocal release
        release = publish(_read_records(input_csv), random_state=random_state, **options)
        staged.text(output_csv.name, released_csv_text(release.data))
        staged.json(metadata_path.name, release.to_json_metadata())

    def drawn() -> Any:
        return None if release is None else release.privacy_

    # After the draw a failure is charged (with a ledger) and reported generically.
    deliver(output_csv, write, overwrite=overwrite, ledger=book, dataset=dataset,
            guarantee=drawn, drawn=drawn,
            mechanism="dpggm publish (noisy copy of the records)",
            details={"data": str(input_csv), "out": str(output_csv)},
            files=[metadata_path, output_csv], receipt_into=metadata_path.name, report=report)
    return release


#: Name of the JSON metadata written inside the output directory.
METADATA_NAME = "_release.json"  # a leading "_": Parquet readers skip it


def seed_streams(random_state: Any, count: int) -> list[Any]:
    """``count`` independent seed sequences from one ``random_state`` (an int seed, a
    Generator, ``"secure"`` or ``None``), one per partition. ``None`` and ``"secure"`` give
    ``None`` for every partition: each then draws its noise from the operating system's
    cryptographic generator, never from a PCG64 stream."""
    if isinstance(random_state, np.random.Generator):
        root = np.random.SeedSequence(random_state.integers(0, 2**63, size=4).tolist())
    elif random_state is None:
        return [None] * count
    elif isinstance(random_state, str):
        if random_state != "secure":
            raise ValueError(
                f"random_state must be None, an int, a numpy Generator or 'secure'; got "
                f"{random_state!r}"
            )
        return [None] * count
    elif isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be a non-negative integer seed; got {random_state}")
        root = np.random.SeedSequence(int(random_state))
    else:
        raise TypeError(
            "random_state must be None, an int, a numpy Generator or 'secure'; got "
            f"{type(random_state).__name__}"
        )
    return root.spawn(count)


def _publish_partition(block: Any, seed: Any, columns: list[str], options: dict[str, Any]
                       ) -> pd.DataFrame:
    frame = block if isinstance(block, pd.DataFrame) else pd.DataFrame(
        np.asarray(block), columns=columns)
    frame = frame.reset_index(drop=True)
    frame.columns = columns
    if len(frame) == 0:
        return frame.astype(float)
    source = "secure" if seed is None else np.random.Generator(np.random.PCG64(seed))
    return publish(frame, random_state=source, **options).data


# One piece (over 120 lines, a third of it the parameter documentation): the order of the
# delivery -- check the booking, validate, calibrate, stage, charge, rename -- reads top to
# bottom.
def publish_dask(
    X: Any,
    out: str | os.PathLike,
    *,
    bounds: Any,
    sigma: float | None = None,
    mu: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    discrete: bool = False,
    grid: float | None = None,
    neighbors: str = "replace",
    report_delta: float | None = None,
    random_state: Any = "secure",
    overwrite: bool = False,
    ledger: Any = None,
    dataset: str | None = None,
) -> dict[str, Any]:
    """Release a noisy copy of a Dask DataFrame / Array as a Parquet data set, charged to
    a ledger before it appears when ``ledger`` is given.

    Parameters
    ----------
    X : dask.dataframe.DataFrame or dask.array.Array
        The private records (numeric, finite).
    out : path
        Output directory (local): ``part.*.parquet``, ``_metadata``, ``_common_metadata``
        and ``_release.json``.
    bounds, sigma, mu, epsilon, delta, discrete, grid, neighbors, report_delta
        As for :func:`dpggm.mechanisms.publish.publish` (exactly one noise level;
        ``snr_db`` is not available because it reads the data).
    random_state : int, numpy Generator, "secure" or None, default="secure"
        One seed; partition ``k`` uses stream ``k`` of its :class:`~numpy.random.SeedSequence`.
    overwrite : bool, default=False
    ledger : Ledger or path, optional
        Charge the release to ``dataset`` in this ledger (an existing file). The booking
        is checked before any partition is read (the guarantee follows from the bound, the
        number of columns and the noise level); the data set is written into a staging
        directory, the ledger charged, the receipt written (``_ledger.json``, and under
        ``"ledger"`` in ``_release.json``) and the directory renamed into place
        (:mod:`dpggm.io`: an interrupted delivery is finished by the next one into the
        same parent directory, never charged twice).
    dataset : str, optional
        The dataset's name in ``ledger`` (given with ``ledger``).

    Returns
    -------
    dict
        The metadata written to ``_release.json`` (the same fields as
        :meth:`~dpggm.mechanisms.publish.NoisyRelease.to_json_metadata`, plus
        ``partitions``; with a ledger, ``ledger``: the receipt).

    Raises
    ------
    InvalidGuaranteeError, IncompatibleBudgetError, BudgetExceededError
        The ledger cannot book the release (a seeded run, another notion or relation, not
        enough left): refused before any data are read; nothing written or spent.

    Privacy
    -------
    As :func:`~dpggm.mechanisms.publish.publish`: ``Delta/sigma``-GDP (continuous) or
    ``Delta^2/(2 sigma^2)``-zCDP (discrete) for the whole release; see the module
    documentation for the dependence on the partitioning.
    """
    import dask
    import dask.dataframe as dd

    from dpggm.data.dask_records import partition_blocks
    from dpggm.data.records import clipped_second_moment
    from dpggm.io import RECEIPT_NAME, check_ledger_pair, check_target, deliver
    from dpggm.mechanisms.bounds import check_bounds, check_neighbors
    from dpggm.mechanisms.publish import check_publish_ledger
    from dpggm.mechanisms.random import SEEDED_REASON, describe_random_state, is_reproducible
    from dpggm.privacy.ledger import Ledger

    out = Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{str(out)!r} exists; pass overwrite=True to replace it")
    check_target(out, overwrite=overwrite)
    check_ledger_pair(ledger, dataset)
    bounds = check_bounds(bounds)
    check_neighbors(neighbors)
    blocks, columns = partition_blocks(X, "X")
    p = len(columns)
    bounds.check_dimension(p)
    options = {"bounds": bounds, "discrete": discrete, "grid": grid, "neighbors": neighbors,
               "report_delta": report_delta}
    book = None
    if ledger is not None:
        book = ledger if isinstance(ledger, Ledger) else _open_ledger(ledger)
        # Before any partition is read: the booking of the guarantee the release will have.
        check_publish_ledger(book, dataset, n_features=p, random_state=random_state,
                             sigma=sigma, mu=mu, epsilon=epsilon, delta=delta, **options)
    # Validation pass (NaN / infinite values with their row, record count) before any
    # noise is drawn.
    n = clipped_second_moment(X, bounds=bounds).n
    # Calibration from public parameters only: the in-memory code on two zero records
    # (inside every bound and on every lattice) gives sigma and the guarantee.
    calibration = publish(np.zeros((2, p)), sigma=sigma, mu=mu, epsilon=epsilon, delta=delta,
                          random_state=None, **options)
    options["sigma"] = calibration.sigma
    guarantee = calibration.privacy_
    notes = {k: v for k, v in guarantee.notes.items() if k != "paper_accounting"}
    notes["partitioning"] = (
        f"{len(blocks)} partitions, each with its own stream of one SeedSequence: the noise "
        "distribution and the guarantee do not depend on the partitioning, the realised "
        "values for a given seed do"
    )
    guarantee = replace(guarantee, notes=notes,
                        random_state=describe_random_state(random_state))
    if is_reproducible(random_state) and guarantee.validity == "valid":
        # The calibration ran unseeded; the partitions' noise follows the caller's seed.
        guarantee = replace(guarantee, validity="none", reason=SEEDED_REASON)
    metadata = calibration.to_json_metadata()
    metadata.update({"n_samples": int(n), "n_features": p, "columns": list(columns),
                     "partitions": len(blocks), "privacy": guarantee.to_dict()})

    seeds = seed_streams(random_state, len(blocks))
    sample = _publish_partition(np.zeros((2, p)), np.random.SeedSequence(0), columns, options)
    meta = sample.iloc[:0]
    parts = [dask.delayed(_publish_partition, pure=False)(block, seeds[k], columns, options)
             for k, block in enumerate(blocks)]
    released = dd.from_delayed(parts, meta=meta, verify_meta=False)

    def write(staged: Any) -> None:
        released.to_parquet(str(staged.staging), write_index=False, write_metadata_file=True)
        staged.json(METADATA_NAME, metadata)

    # The partitions draw their noise while they are written: every failure of the write is
    # taken as one after the first draw (charged with a ledger, reported generically).
    # Parquet readers skip names starting with "_" or ".": the receipt is "_ledger.json".
    delivered = deliver(out, write, overwrite=overwrite, ledger=book, dataset=dataset,
                        guarantee=lambda: guarantee, drawn=lambda: guarantee,
                        mechanism="publish_dask (noisy copy of the records)",
                        details={"out": str(out)}, receipt="_" + RECEIPT_NAME,
                        receipt_into=METADATA_NAME)
    if delivered["ledger"] is not None:
        metadata["ledger"] = delivered["ledger"]
    return metadata


def released_csv_text(data: Any) -> str:
    """The CSV text of released records: the header's names through
    :func:`dpggm.io.csv_name` (a name a spreadsheet would read as a formula gets a ``'``),
    every value as a number, written so that it reads back exactly."""
    from dpggm.io import csv_names_frame

    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(
        np.asarray(data), columns=[f"x{j}" for j in range(np.shape(data)[1])])
    return csv_names_frame(frame).to_csv(index=False, lineterminator="\n")


def _n_variables(source: Any) -> int:
    """The number of columns a data file's records will have once read (its schema
    applied): from its column names only, never a value."""
    table = source if isinstance(source, TableFile) else TableFile(source)
    return len(table.resolve().variables)


def _open_ledger(path: Any) -> Any:
    """An existing ledger (a mistyped path never creates one)."""
    from dpggm.privacy.ledger import Ledger

    if not Path(path).is_file():
        raise FileNotFoundError(
            f"no ledger at {str(path)!r}; declare the dataset first (dpggm budget init)")
    return Ledger(path, create=False)


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
    # The names as published (a name a spreadsheet would read as a formula was written
    # with a quote in front: dpggm.io.csv_name).
    frame.columns = [name_from_csv(c) for c in frame.columns]
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
    names = feature_names(estimator)
    precision = pd.DataFrame(estimator.precision_, columns=names)
    precision.insert(0, "variable", names)
    write_csv(precision, directory / "precision.csv", overwrite=overwrite,
              name_columns=("variable",))
    edges = edges_from_precision(estimator.precision_, names)
    write_csv(edges, directory / "edges.csv", overwrite=overwrite,
              name_columns=("source", "target"))
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
