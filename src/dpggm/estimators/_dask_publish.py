"""Publishing a noisy copy of a Dask data set (optional extra ``dpggm[dask]``).

:func:`publish_dask` is :func:`dpggm.mechanisms.publish.publish` applied partition by
partition: every record is clipped to the declared bound and gets independent noise --
from the operating system's cryptographic generator for ``random_state=None`` or
``"secure"``, else each partition from its own stream of one
:class:`numpy.random.SeedSequence` (``spawn``) -- and
the release is written as a Parquet data set with its ``_metadata`` file and the release's
JSON metadata (``_release.json``).

Does the release depend on the partitioning?
--------------------------------------------
Its *distribution* and its *guarantee* do not: every record gets i.i.d. noise of the same
scale whatever partition it is in, and the guarantee depends only on the bound, the
neighbouring relation and ``sigma``. The *realised values* for a given seed do: stream
``k`` of the seed sequence goes to partition ``k``, so re-partitioning the same data (other
files, other ``blocksize``) with the same seed gives a different (equally valid) noisy
copy; the same data, partitioning and seed give the same release. Seeds are for
experiments only; a production release uses ``random_state="secure"``.

Privacy
-------
The noise scale is calibrated on the client from public parameters only (bound, number of
columns, neighbouring relation, target guarantee) by the in-memory code, so the guarantee
is identical to :func:`~dpggm.mechanisms.publish.publish` on the same records. Options
that read the data to set the noise (``snr_db``) are refused here. The data are validated
(NaN, non-numeric, bound length) in a first pass, before any noise is drawn; the output is
written to a staging directory beside the target and renamed into place only when
complete (and, with a ledger, charged), so a failure leaves nothing visible
(:mod:`dpggm.io`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm.estimators._dask import clipped_second_moment, partition_blocks
from dpggm.io import RECEIPT_NAME
from dpggm.mechanisms.bounds import check_bounds, check_neighbors
from dpggm.mechanisms.publish import publish
from dpggm.mechanisms.random import SEEDED_REASON, describe_random_state, is_reproducible

__all__ = ["publish_dask", "seed_streams"]

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

    from dpggm.io import StagedOutput, check_target, failed_release, recover_pending
    from dpggm.mechanisms.publish import check_publish_ledger
    from dpggm.privacy.ledger import Ledger

    out = Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{str(out)!r} exists; pass overwrite=True to replace it")
    check_target(out, overwrite=overwrite)
    if (ledger is None) != (dataset is None):
        raise ValueError(
            "ledger and dataset go together: give both (to charge the release) or neither; "
            f"got ledger={ledger!r}, dataset={dataset!r}")
    bounds = check_bounds(bounds)
    check_neighbors(neighbors)
    blocks, columns = partition_blocks(X, "X")
    p = len(columns)
    bounds.check_dimension(p)
    options = {"bounds": bounds, "discrete": discrete, "grid": grid, "neighbors": neighbors,
               "report_delta": report_delta}
    book = None
    if ledger is not None:
        if not isinstance(ledger, Ledger) and not Path(ledger).is_file():
            raise FileNotFoundError(
                f"no ledger at {str(ledger)!r}; declare the dataset first (dpggm budget init)")
        book = ledger if isinstance(ledger, Ledger) else Ledger(ledger, create=False)
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
    recover_pending(out.parent if str(out.parent) else Path("."), report=lambda line: None)
    pending = {} if book is None else {"ledger": str(Path(book.path).resolve()),
                                       "dataset": dataset}
    # Parquet readers skip names starting with "_" or ".": the receipt is "_ledger.json".
    staged = StagedOutput(out, overwrite=overwrite, pending=pending,
                          receipt="_" + RECEIPT_NAME, receipt_into=METADATA_NAME)
    try:
        released.to_parquet(str(staged.staging), write_index=False, write_metadata_file=True)
        staged.json(METADATA_NAME, metadata)
    except BaseException as exc:
        staged.discard()
        # The partitions draw their noise while they are written: every failure here is
        # taken as one after the first draw (charged with a ledger, reported generically).
        raise failed_release(exc, guarantee, ledger=book, dataset=dataset,
                             mechanism="publish_dask", details={"out": str(out)}) from None
    receipt = staged.deliver(ledger=book, dataset=dataset, guarantee=guarantee,
                             mechanism="publish_dask (noisy copy of the records)",
                             details={"out": str(out)})
    if receipt is not None:
        metadata["ledger"] = receipt
    return metadata
