"""Shared machinery of the paper experiments: seeding, aggregation, trend fits and safe
file output.

Seeding. Every repetition of every cell draws from its own generator, derived from the
experiment's ``random_state`` and a tuple of keys (model, n, repetition, method, ...)
through :class:`numpy.random.SeedSequence`. A cell's numbers therefore do not depend on
which other cells were run or in which order, and the data sample of one repetition can be
shared by every mechanism and privacy level (paired comparisons) simply by deriving the
data generator from the keys that identify the sample only.

Output. Tables and figures are written atomically (a temporary file in the target
directory, then a rename), and an existing file is never replaced unless the caller says
``overwrite=True``; all target names are checked before an experiment starts, so a
conflict is reported before minutes of computation rather than after.

Privacy: evaluation code. It reads the true model of a synthetic experiment, which is
public by construction; it is not part of any release.
"""

from __future__ import annotations

import math
import numbers
import os
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm.io import csv_names_frame, write_atomic

__all__ = [
    "NA_LIMIT",
    "aggregate",
    "check_integers",
    "check_out_dir",
    "check_positive_int",
    "check_positive_number",
    "check_positive_numbers",
    "check_random_seed",
    "format_mean_se",
    "gaussian_row_norm_bound",
    "loglog_slope",
    "mean_and_standard_error",
    "repetition_rng",
    "report_progress",
    "write_csv",
    "write_figure",
]

#: Wang, Huai & Xu print relative errors above this value as "NA".
NA_LIMIT = 200.0


def check_random_seed(random_state: Any) -> int:
    """Experiments need a reproducible integer seed (>= 0)."""
    if (
        isinstance(random_state, bool)
        or not isinstance(random_state, numbers.Integral)
        or int(random_state) < 0
    ):
        raise ValueError(f"random_state must be an integer >= 0; got {random_state!r}")
    return int(random_state)


def check_positive_int(value: Any, *, name: str) -> int:
    """An integer >= 1, with an error that names the parameter."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
    return int(value)


def check_positive_number(value: Any, *, name: str) -> float:
    """A finite number > 0 (not a bool), with an error that names the parameter."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not (math.isfinite(value) and value > 0)
    ):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


def check_positive_numbers(
    values: Any, *, name: str, upper: float | None = None
) -> tuple[float, ...]:
    """A non-empty sequence of finite numbers > 0 (and <= ``upper``), as floats."""
    try:
        values = tuple(values)
    except TypeError:
        values = ()
    if not values or not all(
        isinstance(v, numbers.Real)
        and not isinstance(v, bool)
        and math.isfinite(v)
        and v > 0
        and (upper is None or v <= upper)
        for v in values
    ):
        bound = f" and <= {upper}" if upper is not None else ""
        raise ValueError(
            f"{name} must be a non-empty sequence of numbers > 0{bound}; got {values!r}"
        )
    return tuple(float(v) for v in values)


def check_integers(values: Any, *, name: str, minimum: int = 1) -> tuple[int, ...]:
    """A non-empty sequence of integers >= ``minimum`` (not bools)."""
    try:
        values = tuple(values)
    except TypeError:
        values = ()
    if not values or not all(
        isinstance(v, numbers.Integral) and not isinstance(v, bool) and int(v) >= minimum
        for v in values
    ):
        raise ValueError(
            f"{name} must be a non-empty sequence of integers >= {minimum}; got {values!r}"
        )
    return tuple(int(v) for v in values)


def _key_to_int(key: Any) -> int:
    if isinstance(key, bool):
        return int(key)
    if isinstance(key, numbers.Integral) and int(key) >= 0:
        return int(key)
    # Floats and strings enter through a stable hash of their text (Python's own hash of
    # a string changes between interpreter runs).
    return zlib.crc32(repr(key).encode("utf-8"))


_PROGRESS: list[Callable[[], None]] = []


class report_progress:
    """Within ``with report_progress(callback):``, ``callback()`` is called at every
    :func:`repetition_rng` draw -- once per repetition of a cell and stream -- so that a
    caller (the command line) can show that a long experiment is advancing."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self._callback = callback

    def __enter__(self) -> report_progress:
        _PROGRESS.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        _PROGRESS.remove(self._callback)


def repetition_rng(random_state: int, *keys: Any) -> np.random.Generator:
    """The generator of one repetition of one experimental cell.

    Parameters
    ----------
    random_state : int
        The experiment's seed (>= 0).
    *keys : int, float or str
        What identifies the draw, e.g. ``("data", model, n, repetition)`` or
        ``("noise", model, n, repetition, method, epsilon)``. Equal keys give equal
        streams; different keys give independent streams.

    Returns
    -------
    numpy.random.Generator
    """
    seed = check_random_seed(random_state)
    for callback in _PROGRESS:
        callback()
    sequence = np.random.SeedSequence(entropy=seed, spawn_key=tuple(_key_to_int(k) for k in keys))
    return np.random.Generator(np.random.PCG64(sequence))


def mean_and_standard_error(values: Iterable[float]) -> tuple[float, float, int]:
    """Mean, standard error of the mean (``sd / sqrt(k)``, ``ddof=1``) and count of the
    finite values; NaN for an empty set and a standard error of NaN for a single value."""
    array = np.asarray([float(v) for v in values], dtype=float)
    array = array[np.isfinite(array)]
    count = int(array.size)
    if count == 0:
        return math.nan, math.nan, 0
    mean = float(array.mean())
    if count == 1:
        return mean, math.nan, 1
    return mean, float(array.std(ddof=1) / math.sqrt(count)), count


def aggregate(records: pd.DataFrame, *, by: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """Mean ± standard error of ``metrics`` over repetitions, per group of ``by``.

    Non-finite values (failed repetitions) are left out of the mean; the output counts
    them in ``n_failed`` next to ``n_reps`` (the number of repetitions attempted).

    Returns
    -------
    pandas.DataFrame
        Columns ``by``, then ``<metric>_mean`` and ``<metric>_se`` for each metric, then
        ``n_reps`` and ``n_failed``. Group order follows first appearance in ``records``.
    """
    rows = []
    for group_values, group in records.groupby(list(by), sort=False, dropna=False):
        if not isinstance(group_values, tuple):
            group_values = (group_values,)
        row: dict[str, Any] = dict(zip(by, group_values))
        failed = np.zeros(len(group), dtype=bool)
        for metric in metrics:
            values = group[metric].to_numpy(dtype=float)
            failed |= ~np.isfinite(values)
            mean, se, _ = mean_and_standard_error(values)
            row[f"{metric}_mean"] = mean
            row[f"{metric}_se"] = se
        row["n_reps"] = int(len(group))
        row["n_failed"] = int(failed.sum())
        rows.append(row)
    return pd.DataFrame(rows)


def format_mean_se(mean: float, se: float, *, digits: int = 3, limit: float | None = None) -> str:
    """``"mean (se)"`` with ``digits`` significant digits, ``"NA"`` for a missing mean or
    one above ``limit`` (Wang, Huai & Xu's convention), and the mean alone when ``se`` is NaN."""
    if not math.isfinite(mean):
        return "NA"
    if limit is not None and mean > limit:
        return "NA"
    if not math.isfinite(se):
        return f"{mean:.{digits}g}"
    return f"{mean:.{digits}g} ({se:.{digits}g})"


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of ``log y`` on ``log x`` over the pairs with both values
    positive and finite; NaN when fewer than two distinct ``x`` remain.

    An error that falls like ``1/(n epsilon)`` has slope -1 against ``n epsilon``.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    x, y = np.log(x[keep]), np.log(y[keep])
    if np.unique(x).size < 2:
        return math.nan
    slope, _ = np.polyfit(x, y, 1)
    return float(slope)


def gaussian_row_norm_bound(covariance: np.ndarray, *, tail: float = 1e-3) -> float:
    """A row-norm bound ``B`` that a draw from ``N(0, covariance)`` exceeds with
    probability at most ``tail``.

    By Laurent and Massart (2000, Lemma 1) applied to the eigenvalues of ``Σ``,
    ``P(‖x‖² >= tr Σ + 2 sqrt(tr(Σ²) t) + 2 ‖Σ‖₂ t) <= exp(-t)``; with ``t = ln(1/tail)``
    the square root of that level is returned.

    The covariance of a synthetic model is public (the experimenter chose it), so a bound
    computed from it is a declared bound, not one read off the data. With real data the
    bound must come from domain knowledge instead.
    """
    if not (isinstance(tail, numbers.Real) and 0 < tail < 1):
        raise ValueError(f"tail must be a number in (0, 1); got {tail!r}")
    covariance = np.asarray(covariance, dtype=float)
    eigenvalues = np.clip(np.linalg.eigvalsh((covariance + covariance.T) / 2), 0.0, None)
    t = math.log(1.0 / tail)
    level = (
        eigenvalues.sum()
        + 2.0 * math.sqrt(float(np.sum(eigenvalues**2)) * t)
        + 2.0 * float(eigenvalues.max()) * t
    )
    return float(math.sqrt(level))


# ---------------------------------------------------------------------------------------
# output


def check_out_dir(out_dir: Any, names: Iterable[str], *, overwrite: bool) -> Path | None:
    """Create ``out_dir`` if needed and make sure none of ``names`` would be overwritten
    unintentionally. Returns the directory as a Path, or None when ``out_dir`` is None."""
    if out_dir is None:
        return None
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir must be a path or None; got {type(out_dir).__name__}")
    directory = Path(out_dir)
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(f"out_dir must be a directory; {str(directory)!r} is a file")
    if not overwrite:
        existing = [name for name in names if (directory / name).exists()]
        if existing:
            raise FileExistsError(
                f"out_dir {str(directory)!r} already holds {', '.join(existing)}; pass "
                "overwrite=True to replace them or choose another directory"
            )
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def write_csv(frame: pd.DataFrame, path: Any, *, overwrite: bool = False,
              name_columns: tuple[str, ...] = ()) -> Path:
    """Write ``frame`` to ``path`` as CSV (no index), atomically: the header and the cells
    of ``name_columns`` (columns of names) through :func:`dpggm.io.csv_name`, so that no
    name is read as a formula by a spreadsheet; every other cell as it is.

    Raises
    ------
    FileExistsError
        If ``path`` exists and ``overwrite`` is false.
    """
    safe = csv_names_frame(frame, name_columns)
    return write_atomic(Path(path), lambda fh: safe.to_csv(fh, index=False),
                        overwrite=overwrite)


def write_figure(figure: Any, path: Any, *, overwrite: bool = False, dpi: int = 120) -> Path:
    """Save a matplotlib figure to ``path`` as PNG, atomically.

    Raises
    ------
    FileExistsError
        If ``path`` exists and ``overwrite`` is false.
    """
    return write_atomic(
        Path(path),
        lambda fh: figure.savefig(fh, format="png", dpi=dpi, bbox_inches="tight"),
        binary=True, overwrite=overwrite,
    )
