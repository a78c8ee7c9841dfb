"""Publishing a noisy copy of a data set once (Guo et al., "Graph structure learning with
privacy guarantees for open graph data").

A data publisher clips every record to a declared bound and releases
``X~ = X + E`` with ``E`` i.i.d. Gaussian ``N(0, sigma^2)`` (continuous data) or i.i.d.
discrete Gaussian ``N_Z(0, sigma^2)`` on the integers or on a grid ``tZ`` (integer or
lattice data), sampled exactly. Data users then recover a graph from the release with
:class:`dpggm.estimators.noisy_glasso.NoisyGraphicalLasso`, which needs only ``sigma``.

The guarantee reported
----------------------
Releasing the noisy rows is a Gaussian mechanism applied to the records themselves.
Replacing one record changes one row by at most ``Delta = 2B`` in l2 norm for a row-norm
bound ``||x||_2 <= B`` (``2 ||b||_2`` for a box ``|x_j| <= b_j``;
:func:`~dpggm.mechanisms.sensitivity.row_l2_sensitivity`), so:

* continuous noise: the release is ``mu``-GDP with ``mu = Delta / sigma`` (Dong, Roth &
  Su 2022, Theorem 2.7), stated also as ``(epsilon, delta)`` by the exact GDP profile;
* discrete noise: the release is ``rho``-zCDP with ``rho = Delta^2 / (2 sigma^2)``
  (Canonne, Kamath & Steinke 2020, Theorem 4 for one coordinate; the multivariate form,
  Theorem 14 of arXiv:2004.00010, for a row of independent discrete Gaussians and an
  integer-valued query with l2 sensitivity ``Delta``). On a grid ``tZ`` the lattice
  coordinates ``x / t`` have sensitivity ``Delta / t`` and noise scale ``sigma / t``, which
  gives the same ``rho``. No ``mu``-GDP guarantee is claimed for discrete noise: the
  discrete Gaussian is *not* in general at least as private as the continuous one at the
  same ``sigma``. Its exact privacy profile can exceed the continuous ``delta(epsilon)``
  (for one coordinate with ``Delta = 1``: at ``sigma = 1``, ``epsilon = 1`` the discrete
  ``delta`` is 0.141 against 0.127; at ``sigma = 0.3`` it is 0.986 against 0.847), so a
  ``Delta / sigma``-GDP claim would be false; ``rho``-zCDP is what CKS prove for every
  ``sigma``. The ``(epsilon, delta)`` form uses the tight zCDP conversion (CKS 2020,
  Corollary 13).

The guarantee holds under the declared bounds and the neighbouring relation
(``"replace"``: one record replaced, ``n`` public; ``"add-remove"``: as everywhere in this
library, ``n`` is public and a removed record is replaced by the zero vector, so
``Delta = B``). Rows are clipped to the bound before the noise is added: a row-norm bound
rescales long rows onto the ball, a box clips each coordinate; for discrete data the
clipped values are then rounded toward zero onto the lattice, which keeps them inside
the bound. How many rows were clipped is a curator-only diagnostic and is not part of
the release.

Two conveniences make the guarantee *data-dependent* (``validity="data-dependent"``, no
formal guarantee): a bound read off the data (:func:`~dpggm.mechanisms.bounds.bounds_from_data`),
and ``snr_db``, which sets ``sigma`` from the power (mean of ``X^2``) of the clipped data
and therefore publishes a function of the private data with ``sigma``.

The paper's own accounting
--------------------------
The paper's Theorem 4.1 states ``mu = Delta_f / (sigma sqrt(2C))`` with
``Delta_f = 2 (max X - min X)^2 / n`` and ``C = min_k sum_l X_lk^2 / n^2``; Theorem 4.4
(discrete noise) states ``mu = (Delta_f + 2K) / (sqrt(2n) K sigma)`` with
``K = min |x_li| / n``. Both are computed from the private data, the proofs treat a
sum of products of the data and the noise as independent Gaussian noise on the
covariance, and they account for the covariance rather than for the released rows. They
are recorded in ``privacy_.notes["paper_accounting"]`` for comparison only, flagged as
data-dependent, and are kept out of :meth:`NoisyRelease.to_json_metadata` unless asked
for, because publishing them reveals the range and the smallest column energy of the
private data.
"""

from __future__ import annotations

import contextvars
import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from dpggm.exceptions import (
    BudgetRangeError,
    InvalidGuaranteeError,
    ReleaseFailedError,
    UnsupportedNeighborsError,
)
from dpggm.mechanisms.additive import (
    GaussianMechanism,
    NoisePart,
    check_budget_range,
    check_noise_mode,
)
from dpggm.mechanisms.bounds import (
    Bounds,
    Box,
    RowNorm,
    check_bounds,
    check_neighbors,
)
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.discrete_gaussian import (
    discrete_gaussian_variance,
    sample_discrete_gaussian,
)
from dpggm.mechanisms.grid import round_up, sampler_scale_at_least
from dpggm.mechanisms.measurement import Measurement
from dpggm.mechanisms.random import RandomSource
from dpggm.mechanisms.record import NoiseDescription
from dpggm.mechanisms.sensitivity import row_l2_sensitivity
from dpggm.privacy.budgets import (
    GDP,
    ZCDP,
    ApproxDP,
    Budget,
)
from dpggm.privacy.calibration import gaussian_sigma, gaussian_zcdp
from dpggm.privacy.conversion import gdp_to_approx_epsilon, zcdp_rho_for
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA, PrivacyGuarantee, jsonable

__all__ = [
    "METADATA_FORMAT",
    "NoisyRelease",
    "RecordPublication",
    "check_publish_ledger",
    "guarantee_from_dict",
    "paper_accounting",
    "publish",
    "read_release_metadata",
]

#: Identifies the JSON metadata written next to a released CSV file.
METADATA_FORMAT = "dpggm-noisy-release"
_METADATA_VERSION = 1

_PAPER_FLAG = "data-dependent: computed from the private data, not a formal guarantee"
# Integers beyond 2**53 are not all representable as float64, so "integer data" in a
# float array is only meaningful below it.
_MAX_EXACT_INTEGER = float(2**53)


# ------------------------------------------------------------------------------ release


@dataclass(frozen=True)
class NoisyRelease:
    """A noisy copy of a data set, released once, and what it guarantees.

    Attributes
    ----------
    data : ndarray or DataFrame of shape (n, p)
        The released records, of the input's type (a DataFrame keeps its column names and
        index). Discrete releases hold integers (int64) when the input held integers and
        the grid is the integers (or an integer step); otherwise float64.
    sigma : float
        The noise scale: the standard deviation of the Gaussian noise, or the scale
        parameter of the discrete Gaussian ``N_Z(0, sigma^2)`` in data units.
    privacy_ : PrivacyGuarantee
        The guarantee of the release (see the module documentation).
    discrete : bool
        Whether discrete Gaussian noise was added.
    grid : float or None
        The lattice step ``t`` of a discrete release on ``tZ`` (``None``: the integers).
    noise_variance : float
        The exact variance of one noise entry: ``sigma^2``, or for discrete noise the
        variance of the discrete Gaussian summed from its mass function (smaller than
        ``sigma^2``). This is what a data user subtracts from the diagonal.
    columns : list of str
        Column names.
    """

    data: Any
    sigma: float
    privacy_: PrivacyGuarantee
    discrete: bool = False
    grid: float | None = None
    noise_variance: float = float("nan")
    columns: list[str] = field(default_factory=list)

    @property
    def n_samples(self) -> int:
        """Number of released records."""
        return int(np.shape(self.data)[0])

    @property
    def noise(self) -> NoiseDescription:
        """The noise on one released value, described as every release describes it.

        Its ``variance`` is recomputed from ``sigma`` and ``grid``: equal to
        :attr:`noise_variance` (the figure the release states, and what a data user
        subtracts) up to rounding."""
        return NoiseDescription(kind="discrete-gaussian" if self.discrete else "gaussian",
                                std=self.sigma, mechanism="gaussian noise on every value",
                                grid=self.grid)

    @property
    def n_features(self) -> int:
        """Number of columns."""
        return int(np.shape(self.data)[1])

    def to_json_metadata(self, *, include_curator_only: bool = False) -> dict[str, Any]:
        """The metadata to publish next to the data (a JSON-serialisable dictionary).

        Parameters
        ----------
        include_curator_only : bool, default=False
            Also include the paper's data-dependent accounting figures. They are
            functions of the private data (its range and smallest column energy), so
            publishing them leaks; keep the default for a real release.

        Returns
        -------
        dict
            ``format``, ``version``, ``noise`` (distribution, ``sigma``, ``grid``,
            ``variance``), ``n_samples``, ``n_features``, ``columns`` and ``privacy``
            (the guarantee record). :func:`read_release_metadata` reads it back.
        """
        privacy = self.privacy_.to_dict()
        if include_curator_only:
            privacy["curator_notes"] = jsonable(self.privacy_.curator_notes)
        return {
            "format": METADATA_FORMAT,
            "version": _METADATA_VERSION,
            "noise": {
                "distribution": "discrete-gaussian" if self.discrete else "gaussian",
                "sigma": float(self.sigma),
                "grid": None if self.grid is None else float(self.grid),
                "variance": float(self.noise_variance),
                "clipped_before_noise": True,
            },
            "n_samples": self.n_samples,
            "n_features": self.n_features,
            "columns": list(self.columns),
            "privacy": privacy,
        }

    def summary(self) -> str:
        """One line for people."""
        kind = "discrete Gaussian" if self.discrete else "Gaussian"
        return (
            f"noisy release of {self.n_samples} x {self.n_features} records, {kind} noise "
            f"sigma={self.sigma:.6g}: {self.privacy_.summary()}"
        )


# --------------------------------------------------------------------------- validation


def _finite_real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {value!r}")
    return float(value)


def _positive_real(name: str, value: Any) -> float:
    number = _finite_real(name, value)
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return number


def _noise_request(
    sigma: Any, mu: Any, epsilon: Any, delta: Any, snr_db: Any
) -> tuple[str, dict[str, float]]:
    """Which single noise specification was given, validated."""
    if (epsilon is None) != (delta is None):
        given, missing = ("epsilon", "delta") if delta is None else ("delta", "epsilon")
        raise ValueError(
            f"{given} needs {missing}: give epsilon and delta together for an "
            f"(epsilon, delta) target; got {given}={epsilon if delta is None else delta!r} "
            f"and {missing}=None"
        )
    given = [
        name
        for name, value in (("sigma", sigma), ("mu", mu), ("epsilon", epsilon), ("snr_db", snr_db))
        if value is not None
    ]
    if len(given) != 1:
        shown = " and ".join("epsilon with delta" if g == "epsilon" else g for g in given)
        raise ValueError(
            "give exactly one noise level: sigma, mu, epsilon with delta, or snr_db; got "
            f"{shown or 'none of them'}"
        )
    kind = given[0]
    if kind == "sigma":
        return kind, {"sigma": _positive_real("sigma", sigma)}
    if kind == "mu":
        return kind, {"mu": _positive_real("mu", mu)}
    if kind == "epsilon":
        eps = _positive_real("epsilon", epsilon)
        dlt = _finite_real("delta", delta)
        if not 0 < dlt < 1:
            raise ValueError(f"delta must be a number in (0, 1); got {delta!r}")
        return kind, {"epsilon": eps, "delta": dlt}
    snr = _finite_real("snr_db", snr_db)
    if not math.isfinite(snr):
        raise ValueError(f"snr_db must be a finite number (decibels); got {snr_db!r}")
    return kind, {"snr_db": snr}


def _as_records(X: Any) -> tuple[np.ndarray, list[str], pd.Index | None, bool]:
    """Validate the input: its values, column names, DataFrame index, and whether the
    input's storage type is integer."""
    if isinstance(X, pd.DataFrame):
        bad = [str(c) for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
        if bad:
            shown = ", ".join(repr(c) for c in bad[:5])
            raise ValueError(
                f"X has non-numeric column(s) {shown}; encode or drop them before publishing"
            )
        integer_storage = all(
            pd.api.types.is_integer_dtype(X[c]) or pd.api.types.is_bool_dtype(X[c])
            for c in X.columns
        )
        values = X.to_numpy(dtype=float)
        columns = [str(c) for c in X.columns]
        index = X.index
    else:
        if isinstance(X, (str, bytes)) or hasattr(X, "__fspath__"):
            raise TypeError(
                "X must be an array or a DataFrame; read a CSV file first (for example with "
                "dpggm.experiments.publish_io.publish_csv)"
            )
        array = np.asarray(X)
        if array.dtype == object or not (
            np.issubdtype(array.dtype, np.number) or array.dtype == bool
        ):
            raise ValueError(f"X must be numeric; got an array of dtype {array.dtype}")
        if np.iscomplexobj(array):
            raise ValueError(f"X must be real; got an array of dtype {array.dtype}")
        integer_storage = bool(np.issubdtype(array.dtype, np.integer) or array.dtype == bool)
        values = array.astype(float)
        columns = None
        index = None
    if values.ndim != 2:
        raise ValueError(
            f"X must be two-dimensional (records x features); got {values.ndim} dimension(s)"
        )
    if values.shape[1] == 0:
        raise ValueError("X has no columns")
    if values.shape[0] < 1:
        raise ValueError("X has no records (rows)")
    finite = np.isfinite(values)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        name = columns[col] if columns else f"x{col}"
        raise ValueError(
            f"X contains NaN or infinite values (first at row {row}, column {name!r}); "
            "remove or impute them before publishing"
        )
    if columns is None:
        columns = [f"x{j}" for j in range(values.shape[1])]
    return values, columns, index, integer_storage


def _lattice_coordinates(values: np.ndarray, grid: float | None) -> np.ndarray:
    """``values / grid`` as int64, or raise if a value is not on the lattice."""
    step = 1.0 if grid is None else grid
    where = "integers" if grid is None else f"the grid {grid!r}Z (integer multiples of grid)"
    coordinates = np.rint(values / step)
    if not np.all(np.abs(coordinates) < _MAX_EXACT_INTEGER):
        raise ValueError(
            f"discrete=True needs data on {where} with |x / grid| < 2**53; got a value too "
            "large to be handled exactly"
        )
    # A value counts as on the lattice when it is the float nearest to k * grid: then the
    # released value, formed as (k + noise) * grid in one rounding, depends on k only.
    off = coordinates * step != values
    if off.any():
        row, col = np.argwhere(off)[0]
        raise ValueError(
            f"discrete=True needs every value on {where}; got X[{row}, {col}] = "
            f"{values[row, col]!r}. Discrete noise on a lattice added to values off it keeps "
            "them on a different coset, which reveals them exactly; use discrete=False (or "
            "a grid that divides the data)"
        )
    return coordinates.astype(np.int64)


def _clip_lattice(
    coordinates: np.ndarray, bounds: Bounds, grid: float | None
) -> tuple[np.ndarray, int]:
    """Clip lattice points (``coordinates * grid``) to ``bounds``, staying on the lattice.

    Exact: the bound is compared with rational arithmetic, so a clipped point is never
    outside the bound by a rounding error.
    """
    step = Fraction(1) if grid is None else Fraction(grid)
    p = coordinates.shape[1]
    bounds.check_dimension(p)
    k = coordinates.copy()
    if isinstance(bounds, Box):
        limit = np.array([math.floor(Fraction(b) / step) for b in bounds.vector(p)], dtype=np.int64)
        changed = np.any(np.abs(k) > limit, axis=1)
        k = np.clip(k, -limit, limit)
        return k, int(changed.sum())
    if not isinstance(bounds, RowNorm):
        raise TypeError(f"unsupported bounds {bounds!r}")
    # ||k * step||^2 <= B^2  <=>  sum k^2 <= B^2 / step^2, in integers.
    limit_sq = math.floor(Fraction(bounds.bound) ** 2 / step**2)
    approx = np.einsum("ij,ij->i", k.astype(float), k.astype(float))
    candidates = np.flatnonzero(approx > limit_sq * (1 - 1e-9))
    n_changed = 0
    for i in candidates:
        row = [int(v) for v in k[i]]
        total = sum(v * v for v in row)
        if total <= limit_sq:
            continue
        n_changed += 1
        shrink = math.sqrt(limit_sq / total) if limit_sq > 0 else 0.0
        # Truncation toward zero only shortens the row; the loop settles the few cases
        # where the float shrink factor was rounded up.
        row = [int(math.trunc(v * shrink)) for v in row]
        total = sum(v * v for v in row)
        while total > limit_sq:
            j = max(range(p), key=lambda m: abs(row[m]))
            row[j] -= 1 if row[j] > 0 else -1
            total = sum(v * v for v in row)
        k[i] = row
    return k, n_changed


# -------------------------------------------------------------------- paper's accounting


def paper_accounting(
    X: np.ndarray, *, sigma: float, discrete: bool, report_delta: float
) -> dict[str, Any]:
    """The paper's data-dependent privacy figures (Theorem 4.1 or 4.4) for ``X``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        The records the noise is added to (clipped, as released before noise).
    sigma : float
        The noise scale.
    discrete : bool
        Theorem 4.4 (discrete Gaussian noise) instead of Theorem 4.1.
    report_delta : float
        The delta at which the paper's ``mu`` is also converted to ``epsilon``.

    Returns
    -------
    dict
        ``theorem``, ``mu``, ``epsilon_at_report_delta`` (of ``mu``-GDP), ``delta_f``,
        ``C`` or ``K``, ``table_epsilon`` (``Delta_f / sigma``, the figure of the paper's
        Section 5.1 and Table 2), and ``status`` = "data-dependent: ...".

    Notes
    -----
    Privacy: **reads the private data**; the figures are not a guarantee and must not be
    published with the release. ``inf`` stands for a bound that the formula does not give
    (``C = 0`` or ``K = 0``).
    """
    n = X.shape[0]
    value_range = float(np.max(X) - np.min(X))
    delta_f = 2.0 * value_range**2 / n
    out: dict[str, Any] = {
        "status": _PAPER_FLAG,
        "delta_f": delta_f,
        "table_epsilon": delta_f / sigma,
        "why_not_a_guarantee": (
            "Delta_f and C (or K) are read off the private data; the proof treats the "
            "data-noise cross terms of the covariance as independent Gaussian noise and "
            "accounts for the covariance of the release, not for the released rows"
        ),
    }
    if discrete:
        K = float(np.min(np.abs(X))) / n
        mu = (delta_f + 2 * K) / (math.sqrt(2 * n) * K * sigma) if K > 0 else math.inf
        out.update(theorem="4.4", K=K)
    else:
        C = float(np.min(np.einsum("ij,ij->j", X, X))) / n**2
        mu = delta_f / (sigma * math.sqrt(2 * C)) if C > 0 else math.inf
        out.update(theorem="4.1", C=C)
    out["mu"] = mu
    out["epsilon_at_report_delta"] = (
        gdp_to_approx_epsilon(mu, report_delta) if math.isfinite(mu) else math.inf
    )
    out["report_delta"] = report_delta
    return out


# ------------------------------------------------------------------------------ publish


# One piece (over 120 lines, most of it the parameter documentation of the public entry
# point): validation and the one guarantee record; the noise is drawn by
# _publish_continuous and _publish_discrete.
def publish(
    X: Any,
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
    noise: str = "exact",
    index_public: bool = False,
    report_delta: float | None = None,
    random_state: Any = None,
) -> NoisyRelease:
    """Release a noisy copy of ``X`` once: clip every record, add i.i.d. noise.

    Parameters
    ----------
    X : ndarray or DataFrame of shape (n, p)
        The private records (finite, numeric). The release has the same type, column
        names and (for a DataFrame) index.
    bounds : RowNorm or Box or str
        Declared public bound on every record (``"l2:B"`` / ``"box:B"`` accepted). Rows
        are clipped to it before the noise is added.
    sigma : float, optional
        Noise scale (> 0).
    mu : float, optional
        Target ``mu``-GDP: ``sigma = Delta / mu``. With ``discrete=True`` the same
        ``sigma`` is used but the guarantee stated is ``mu^2 / 2``-zCDP (see the module
        documentation).
    epsilon, delta : float, optional
        Target ``(epsilon, delta)``-DP, given together. Continuous noise: the analytic
        Gaussian calibration (Balle & Wang 2018). Discrete noise: the largest ``rho``
        whose tight zCDP conversion meets the target, and ``sigma = Delta / sqrt(2 rho)``.
    snr_db : float, optional
        Signal-to-noise ratio in decibels (the paper's noise axis):
        ``sigma^2 = P / 10^(snr_db / 10)`` with ``P`` the mean of the squared clipped
        records. This uses the private data to set the noise, so the guarantee is then
        reported as data-dependent (no formal guarantee), and ``sigma`` itself reveals
        ``P``.
    discrete : bool, default=False
        Add exact discrete Gaussian noise (Canonne, Kamath & Steinke 2020). ``X`` must
        then hold integers (or integer multiples of ``grid``); the release stays on the
        same lattice.
    grid : float, optional
        Lattice step ``t`` for ``discrete=True``: noise on ``tZ`` and data required on
        ``tZ``. ``None`` means the integers.
    neighbors : "replace", default="replace"
        Neighbouring relation; the sensitivity is ``2B``. Add/remove is refused: the
        number of released rows reveals ``n``.
    noise : {"exact", "float"}, default="exact"
        For continuous data: ``"exact"`` rounds every value to a fine power-of-two grid
        and adds exact discrete Gaussian noise (no floating-point leak; the guarantee is
        then ``rho``-zCDP); ``"float"`` uses a floating-point normal sampler: the
        ``mu``-GDP it states holds only for the idealised mechanism, so the release is
        reported ``validity="invalid"`` (Mironov 2012) and never booked.
    index_public : bool, default=False
        Copy a DataFrame's index (row labels) into the release. Row labels are often
        identifiers, so by default the release gets a fresh 0..n-1 index.
    report_delta : float, optional
        The delta at which the guarantee is also stated as ``(epsilon, delta)``; defaults
        to ``delta`` when given, else 1e-6.
    random_state : None, int, numpy.random.Generator or "secure"
        Randomness. Use ``"secure"`` for a production release.

    Returns
    -------
    NoisyRelease

    Raises
    ------
    ValueError
        Not exactly one of ``sigma`` / ``mu`` / ``epsilon`` with ``delta`` / ``snr_db``; a
        noise parameter out of range (``sigma <= 0``, ...); missing bounds; non-finite or
        non-numeric data; ``discrete=True`` with data off the lattice; ``grid`` without
        ``discrete=True``; ``snr_db`` on data of zero power.
    TypeError
        A parameter of the wrong type.

    Privacy
    -------
    ``Delta/sigma``-GDP (continuous) or ``Delta^2/(2 sigma^2)``-zCDP (discrete) for the
    whole release under ``neighbors``, with ``Delta`` from the declared bounds; see the
    module documentation. The continuous noise is drawn with NumPy's floating-point
    normal sampler (the library-wide convention); ``discrete=True`` samples exactly.

    Examples
    --------
    >>> import numpy as np
    >>> from dpggm.mechanisms.bounds import RowNorm
    >>> X = np.random.default_rng(0).normal(size=(100, 3)) / 4
    >>> release = publish(X, bounds=RowNorm(1.0), sigma=2.0, random_state="secure")
    >>> release.privacy_.budget.rho > 0.125
    True
    """
    kind, request = _noise_request(sigma, mu, epsilon, delta, snr_db)
    bounds = check_bounds(bounds)
    if check_neighbors(neighbors) != "replace":
        raise UnsupportedNeighborsError(
            "publish releases one noisy row per record, so the number of rows reveals n: "
            "a release of records cannot be private under add/remove neighbours. Use "
            "neighbors='replace' (n public)"
        )
    if not isinstance(discrete, (bool, np.bool_)):
        raise TypeError(f"discrete must be True or False; got {discrete!r}")
    discrete = bool(discrete)
    if not isinstance(index_public, (bool, np.bool_)):
        raise TypeError(f"index_public must be True or False; got {index_public!r}")
    if grid is not None:
        if not discrete:
            raise ValueError(
                f"grid applies only to discrete=True (noise on the lattice grid*Z); got "
                f"grid={grid!r} with discrete=False. Continuous releases choose their own "
                "exact grid"
            )
        grid = _positive_real("grid", grid)
    if report_delta is None:
        report_delta = request.get("delta", DEFAULT_REPORT_DELTA)
    else:
        report_delta = _finite_real("report_delta", report_delta)
        if not 0 < report_delta < 1:
            raise ValueError(f"report_delta must be a number in (0, 1); got {report_delta!r}")
    ctx = ReleaseContext(
        neighbors=neighbors,
        bounds=bounds,
        random_state=random_state,
        report_delta=report_delta,
        noise="exact" if discrete else check_noise_mode(noise),
    )

    values, columns, index, integer_storage = _as_records(X)
    n, p = values.shape
    bounds.check_dimension(p)
    sensitivity = row_l2_sensitivity(bounds, p=p, neighbors=neighbors)
    if kind in ("mu", "epsilon"):
        # Before any draw: a budget the exact release can deliver (float and lattice
        # releases have no grid of their own to outgrow; only a zero budget is refused).
        asked = GDP(request["mu"]) if kind == "mu" else ApproxDP(request["epsilon"],
                                                                  request["delta"])
        exact_grid = not discrete and ctx.noise == "exact"
        check_budget_range(asked, [NoisePart(
            share=Fraction(1), sensitivity=sensitivity, size=p,
            value_bound=bounds.row_norm(p))] if exact_grid else [],
            release=f"a noisy copy of {n} records of {p} columns")
        if discrete:
            _check_lattice_budget(asked, sensitivity=sensitivity,
                                  step=Fraction(1) if grid is None else Fraction(grid))
    try:
        if discrete:
            outcome = _publish_discrete(
                values, bounds=bounds, grid=grid, sensitivity=sensitivity, kind=kind,
                request=request, ctx=ctx, integer_storage=integer_storage,
            )
        else:
            outcome = _publish_continuous(
                values, bounds=bounds, sensitivity=sensitivity, kind=kind, request=request, ctx=ctx
            )
        released, scale, budget, noise_record, guarantee_note, noise_variance, clipped = outcome

        data_dependent: list[str] = []
        if kind == "snr_db":
            noise_record["snr_db"] = request["snr_db"]
            data_dependent.append(
                "sigma was set from the power (mean of X^2) of the private data via snr_db, so "
                "the noise scale depends on the data and Delta/sigma is not a formal guarantee"
            )
        guarantee = ctx.guarantee(
            budget=budget,
            mechanism=(
                "discrete Gaussian (exact, Canonne-Kamath-Steinke) noise added to every clipped record"
                if discrete
                else "Gaussian noise added to every clipped record (noisy data release)"
            ),
            noise=noise_record,
            notes={
                "guarantee": guarantee_note,
                "clipping": (
                    "every record was clipped to the declared bound before the noise was added"
                    + (" and rounded toward zero onto the lattice" if discrete else "")
                ),
            },
            curator_notes={
                "paper_accounting": paper_accounting(
                    clipped, sigma=scale, discrete=discrete, report_delta=report_delta
                ),
            },
            data_dependent_reasons=data_dependent,
        )
        if isinstance(X, pd.DataFrame):
            # Row labels are often identifiers: they are copied only when declared public.
            data: Any = pd.DataFrame(
                released, columns=list(X.columns), index=index if index_public else None
            )
        else:
            data = released
        return NoisyRelease(
            data=data,
            sigma=float(scale),
            privacy_=guarantee,
            discrete=discrete,
            grid=grid,
            noise_variance=float(noise_variance),
            columns=columns,
        )
    except Exception:
        if not ctx.source.drawn or _CALIBRATING.get():
            raise
        failure = _failed_after_draw(
            ctx, kind=kind, p=p, bounds=bounds, sigma=sigma, mu=mu, epsilon=epsilon,
            delta=delta, discrete=discrete, grid=grid, neighbors=neighbors, noise=noise,
            report_delta=report_delta)
        if failure is None:
            raise
        raise failure from None


def _failed_after_draw(ctx: ReleaseContext, *, kind: str, p: int,
                       **options: Any) -> Exception | None:
    """The error for a release that failed after its first draw (see
    :class:`~dpggm.exceptions.ReleaseFailedError`): ``None`` -- re-raise it as it is --
    when the release would not have been valid anyway (seeded, float noise, ``snr_db``);
    else a generic error carrying the guarantee the release would have had (computed on a
    zero record, from public parameters)."""
    if kind == "snr_db" or ctx.validity(ZCDP(1.0))[0] != "valid":
        return None
    token = _CALIBRATING.set(True)
    try:
        expected: PrivacyGuarantee | None = publish(
            np.zeros((1, p)), random_state=None, **options).privacy_
    except Exception:  # the calibration itself failed: no figure to state
        expected = None
    finally:
        _CALIBRATING.reset(token)
    if expected is not None and expected.validity != "valid":
        return None
    spent = "" if expected is None else f": {expected.budget} (the error's guarantee)"
    return ReleaseFailedError(
        "publish: the release failed after its noise was drawn; the reason is withheld "
        "because it may depend on the noise (a seeded run, an experiment, shows it). "
        f"Nothing was released; count the run as spent{spent}", guarantee=expected)


#: Set while :func:`_failed_after_draw` computes the guarantee on a zero record (whose own
#: failure is then raised as it is).
_CALIBRATING: contextvars.ContextVar[bool] = contextvars.ContextVar("calibrating",
                                                                    default=False)


def check_publish_ledger(ledger: Any, dataset: str, *, n_features: int,
                         random_state: Any = "secure", **options: Any) -> PrivacyGuarantee:
    """Refuse, before any record is read, a release of ``n_features`` columns that
    ``ledger`` could not book for ``dataset``; return the guarantee it will have.

    The guarantee of :func:`publish` depends on public parameters only (the bound, the
    number of columns, the relation, the noise level): it is computed here on a release of
    one zero record (no private data). Refused: a release that will not be valid -- a
    seeded ``random_state`` (an experiment), float noise, ``snr_db`` (the noise set from
    the private data) -- one whose budget forms none converts into the dataset's notion,
    one under another neighbouring relation, and one that exceeds what remains.

    Parameters
    ----------
    ledger : Ledger
    dataset : str
    n_features : int
        The number of columns to be released.
    random_state
        As for :func:`publish`.
    **options
        The other keyword arguments of :func:`publish` (``bounds``, ``sigma``, ``mu``,
        ``epsilon``, ``delta``, ``snr_db``, ``discrete``, ``grid``, ``neighbors``,
        ``noise``, ``report_delta``).

    Returns
    -------
    PrivacyGuarantee
        The guarantee the release will hold (its budget is what the ledger will be
        charged).

    Raises
    ------
    InvalidGuaranteeError, IncompatibleBudgetError, BudgetExceededError
        As :meth:`~dpggm.privacy.ledger.Ledger.check_forms`, and for an invalid release.
    ValueError, TypeError
        Every refusal :func:`publish` would make before drawing.

    Privacy
    -------
    Reads no record; the draw on the zero record is discarded.
    """
    if options.get("snr_db") is not None:
        raise InvalidGuaranteeError(
            "snr_db sets the noise from the power of the private data, so the release has "
            "no formal guarantee and is never booked against a ledger; give sigma, mu, or "
            "epsilon with delta; nothing was read or spent")
    expected = publish(np.zeros((1, int(n_features))), random_state=None, **options).privacy_
    ctx = ReleaseContext(neighbors=expected.neighbors, bounds=check_bounds(options["bounds"]),
                         random_state=random_state, report_delta=expected.report_delta,
                         noise="exact" if options.get("discrete") else options.get(
                             "noise", "exact"))
    validity, reason = ctx.validity(expected.budget)
    if expected.validity != "valid" or validity != "valid":
        worst = validity if validity != "valid" else expected.validity
        reasons = "; ".join(r for r in (expected.reason, reason) if r)
        raise InvalidGuaranteeError(
            f"this release would have validity {worst!r} ({reasons}), so it is never booked "
            "against a ledger; nothing was read or spent")
    ledger.check_forms(dataset, expected.forms, neighbors=expected.neighbors)
    return expected


def _continuous_mechanism(
    clipped: np.ndarray, *, sensitivity: float, kind: str, request: dict[str, float],
    ctx: ReleaseContext,
) -> GaussianMechanism:
    p = clipped.shape[1]
    if kind == "mu":
        return GaussianMechanism(
            sensitivity=sensitivity, size=p, budget=GDP(request["mu"]), noise=ctx.noise
        )
    if kind == "epsilon":
        return GaussianMechanism(
            sensitivity=sensitivity, size=p,
            budget=ApproxDP(request["epsilon"], request["delta"]), noise=ctx.noise,
        )
    if kind == "sigma":
        scale = request["sigma"]
    else:
        power = float(np.mean(clipped**2))
        if not power > 0:
            raise ValueError(
                f"snr_db needs data with non-zero power (mean of X^2 after clipping); got {power!r}"
            )
        scale = math.sqrt(power / 10.0 ** (request["snr_db"] / 10.0))
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(
                f"snr_db={request['snr_db']!r} gives a noise scale {scale!r} that is not a "
                "finite number > 0"
            )
    return GaussianMechanism.for_sigma(
        sensitivity=sensitivity, size=p, sigma=scale, noise=ctx.noise
    )


def _publish_continuous(
    values: np.ndarray, *, bounds: Bounds, sensitivity: float, kind: str,
    request: dict[str, float], ctx: ReleaseContext,
) -> tuple[np.ndarray, float, Budget, dict[str, Any], str, float, np.ndarray]:
    """Clip, then add Gaussian noise to every record: exact on a grid, or float."""
    clipped, _ = bounds.clip(values)
    mechanism = _continuous_mechanism(
        clipped, sensitivity=sensitivity, kind=kind, request=request, ctx=ctx
    )
    # Every row is one query of p coordinates; neighbours differ in one row only.
    released = RecordPublication(sensitivity=sensitivity, p=clipped.shape[1],
                                 gaussian=mechanism).release(clipped, ctx.source)
    record = {**mechanism.record(), "variance": mechanism.sigma**2, "calibrated_from": kind}
    if mechanism.grid is None:
        note = (
            "Gaussian mechanism on the released rows: mu = Delta / sigma with Delta the l2 "
            "sensitivity of one record (Dong, Roth & Su 2022, Theorem 2.7); (epsilon, "
            "delta) by the exact GDP privacy profile"
        )
    else:
        note = (
            "every record rounded to the grid and shifted by exact discrete Gaussian noise: "
            f"{mechanism.derivation}; the grid is fine enough (sigma above 1000 grid steps) "
            "that the noise variance equals sigma^2 to double precision"
        )
    return released, mechanism.sigma, mechanism.delivered, record, note, mechanism.sigma**2, clipped


def _check_lattice_budget(asked: Budget, *, sensitivity: float, step: Fraction) -> None:
    """A lattice release draws ``sigma / step`` in lattice units, at most ``2**48`` of them:
    refuse, naming the smallest budget that works, a budget calling for more."""
    # The smallest rho: sigma = sensitivity / sqrt(2 rho) <= 2**48 step (with a margin).
    rho_low = gaussian_zcdp(sensitivity, Fraction(2**48) * step) * (1 + 1e-6)
    if isinstance(asked, GDP):
        name, value, low = "mu", asked.mu, math.sqrt(2 * rho_low)
    else:
        name, value = "epsilon", asked.epsilon
        low = ZCDP(rho_low).to_approx(asked.delta).epsilon
    if value < low:
        raise BudgetRangeError(
            f"budget: {name} must be at least {low:.3g} for a release on this lattice; got "
            f"{name}={value!r} (smaller budgets call for noise beyond 2**48 lattice steps, "
            "which the exact sampler cannot draw)",
            parameter=name, value=value, low=low, high=math.inf,
        )


class RecordPublication(Measurement):
    """Noise on every published record: each row of ``p`` coordinates is one query of l2
    ``sensitivity`` (``2B`` under replace-one), answered with independent noise of scale
    ``sigma``.

    Continuous records get the Gaussian mechanism (:class:`GaussianMechanism`, exact on a
    power-of-two grid or float); records on a lattice ``step Z`` get discrete Gaussian
    noise on the same lattice, of scale ``units * step`` with ``units`` the exact rational
    the sampler draws in lattice steps.

    Privacy
    -------
    ``privacy_map(d)``: the Gaussian mechanism's map (continuous), or ``d**2 / (2 (units *
    step)**2)``-zCDP for the lattice (Canonne, Kamath & Steinke 2020, Thm 4 and 14; the
    lattice coordinates have sensitivity ``d / step`` and scale ``units``), rounded up.
    """

    mechanism = "noise on every record"

    def __init__(self, *, sensitivity: float, p: int, gaussian: GaussianMechanism | None = None,
                 units: Fraction | None = None, step: Fraction | None = None) -> None:
        self.sensitivity, self.p = float(sensitivity), int(p)
        self.gaussian, self.units, self.step = gaussian, units, step
        if gaussian is not None:
            self.sigma = gaussian.sigma
        else:
            for name, value, what in (("units", units, "the noise scale in lattice steps"),
                                      ("step", step, "the lattice step")):
                if (isinstance(value, bool) or not isinstance(value, numbers.Rational)
                        or not value > 0):
                    raise ValueError(
                        f"{name} ({what}) must be a positive rational when no gaussian "
                        f"mechanism is given; got {name}={value!r}")
            # The noise drawn has scale units * step (never below the scale asked for).
            scale = float(units * step)
            self.sigma = scale if Fraction(scale) >= units * step else round_up(scale)
        self.delivered = self.privacy_map(self.sensitivity)

    @classmethod
    def on_lattice(cls, *, sensitivity: float, p: int, sigma: float,
                   step: Fraction) -> RecordPublication:
        """Discrete Gaussian noise of scale at least ``sigma`` on the lattice ``step Z``."""
        return cls(sensitivity=sensitivity, p=p, step=step,
                   units=sampler_scale_at_least(Fraction(sigma) / step))

    def privacy_map(self, sensitivity: float) -> Budget:
        if self.gaussian is not None:
            return self.gaussian.privacy_map(sensitivity)
        return ZCDP(gaussian_zcdp(sensitivity, self.units * self.step))

    def record(self, prefix: str = "") -> dict[str, Any]:
        if self.gaussian is not None:
            return self.gaussian.record(prefix)
        return {f"{prefix}distribution": "discrete-gaussian", f"{prefix}sigma": self.sigma,
                f"{prefix}l2_sensitivity": self.sensitivity}

    def release(self, values: np.ndarray, source: RandomSource | Any) -> np.ndarray:
        """Every row plus its noise: float (or grid) values for the continuous release,
        lattice coordinates (integers) plus integer noise for the lattice."""
        if self.gaussian is not None:
            return self.gaussian.release(values.reshape(-1), source,
                                         independent=True).reshape(values.shape)
        return values + sample_discrete_gaussian(self.units, size=values.shape,
                                                 random_state=RandomSource.of(source))


def _publish_discrete(
    values: np.ndarray, *, bounds: Bounds, grid: float | None, sensitivity: float, kind: str,
    request: dict[str, float], ctx: ReleaseContext, integer_storage: bool,
) -> tuple[np.ndarray, float, Budget, dict[str, Any], str, float, np.ndarray]:
    """Integer (or lattice) data plus exact discrete Gaussian noise on the same lattice."""
    lattice = _lattice_coordinates(values, grid)
    lattice, _ = _clip_lattice(lattice, bounds, grid)
    clipped = lattice * (1.0 if grid is None else grid)
    if kind == "sigma":
        scale = request["sigma"]
    elif kind == "mu":
        scale = gaussian_sigma(sensitivity, GDP(request["mu"]))
    elif kind == "epsilon":
        rho = zcdp_rho_for(request["epsilon"], request["delta"])
        scale = gaussian_sigma(sensitivity, ZCDP(rho))
    else:
        power = float(np.mean(clipped**2))
        if not power > 0:
            raise ValueError(
                f"snr_db needs data with non-zero power (mean of X^2 after clipping); got {power!r}"
            )
        scale = math.sqrt(power / 10.0 ** (request["snr_db"] / 10.0))
    step = Fraction(1) if grid is None else Fraction(grid)
    mechanism = RecordPublication.on_lattice(sensitivity=sensitivity, p=lattice.shape[1],
                                             sigma=scale, step=step)
    scale, units = mechanism.sigma, mechanism.units
    total = mechanism.release(lattice, ctx.source)
    variance = discrete_gaussian_variance(units * step, grid=grid)
    budget = mechanism.delivered
    if (grid is None or float(grid).is_integer()) and integer_storage:
        released = total if grid is None else total * int(grid)
    else:
        # One multiplication of two exact doubles: the value depends on k + noise only.
        released = total.astype(np.float64) * (1.0 if grid is None else grid)
    record = {
        "distribution": "discrete-gaussian",
        "sigma": scale,
        "grid": grid,
        "variance": variance,
        "l2_sensitivity": sensitivity,
        "calibrated_from": kind,
    }
    note = (
        "rho-zCDP for a row of independent discrete Gaussians and an integer-valued "
        "query of l2 sensitivity Delta: rho = Delta^2 / (2 sigma^2) (Canonne, Kamath & "
        "Steinke 2020, Theorem 4 and its multivariate form, Theorem 14 of "
        "arXiv:2004.00010); (epsilon, delta) by their tight conversion (Corollary 13). "
        "mu-GDP is not claimed: the discrete Gaussian's privacy profile can exceed the "
        "continuous one at the same sigma"
    )
    return released, scale, budget, record, note, variance, clipped


# ------------------------------------------------------------------------ reading back


def guarantee_from_dict(data: dict[str, Any]) -> PrivacyGuarantee:
    """Rebuild a guarantee from its ``to_dict()`` (see ``PrivacyGuarantee.from_dict``)."""
    return PrivacyGuarantee.from_dict(data)


def read_release_metadata(release: Any) -> dict[str, Any]:
    """The noise description and guarantee of a release, from a :class:`NoisyRelease` or
    from its :meth:`~NoisyRelease.to_json_metadata` dictionary.

    Returns
    -------
    dict
        ``sigma`` (float), ``discrete`` (bool), ``grid`` (float or None),
        ``noise_variance`` (float) and ``guarantee`` (PrivacyGuarantee).

    Raises
    ------
    ValueError
        If the dictionary is not release metadata or is inconsistent.
    """
    if isinstance(release, NoisyRelease):
        return {
            "sigma": release.sigma,
            "discrete": release.discrete,
            "grid": release.grid,
            "noise_variance": release.noise_variance,
            "guarantee": release.privacy_,
        }
    if not isinstance(release, dict):
        raise TypeError(
            "release must be a NoisyRelease or its to_json_metadata() dictionary; got "
            f"{type(release).__name__}"
        )
    if release.get("format") != METADATA_FORMAT:
        raise ValueError(
            f"release metadata must have format {METADATA_FORMAT!r}; got {release.get('format')!r}"
        )
    noise = release.get("noise")
    if not isinstance(noise, dict) or "sigma" not in noise:
        raise ValueError("release metadata lacks noise.sigma")
    distribution = noise.get("distribution")
    if distribution not in ("gaussian", "discrete-gaussian"):
        raise ValueError(
            "release metadata noise.distribution must be 'gaussian' or 'discrete-gaussian'; "
            f"got {distribution!r}"
        )
    sigma_value = _positive_real("release noise.sigma", noise["sigma"])
    grid_value = noise.get("grid")
    if grid_value is not None:
        grid_value = _positive_real("release noise.grid", grid_value)
    discrete = distribution == "discrete-gaussian"
    variance = (
        discrete_gaussian_variance(sigma_value, grid=grid_value) if discrete else sigma_value**2
    )
    privacy = release.get("privacy")
    return {
        "sigma": sigma_value,
        "discrete": discrete,
        "grid": grid_value,
        "noise_variance": variance,
        "guarantee": None if privacy is None else guarantee_from_dict(privacy),
    }
