"""Small real data sets bundled with scikit-learn, and rescaling to a declared box.

The loaders read scikit-learn's bundled copies (no network access) and return the raw
feature values. Differential privacy needs *public* bounds on every record, declared
before looking at the data. These data sets come with no such bounds, so each loader
also returns :attr:`RealData.data_derived_box`, the per-column minimum and maximum of the
data. A box read off the data is itself a function of the private records: using it
gives **no formal privacy guarantee**. It is offered for reproducing experiments only,
and the caller must opt in explicitly (and label the result accordingly) or replace it
with bounds justified by domain knowledge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import sklearn.datasets

__all__ = [
    "RealData",
    "load_breast_cancer",
    "load_diabetes",
    "load_wine",
    "DIABETES_DOMAIN_RANGES",
    "DIABETES_TARGET_RANGE",
    "declared_ranges",
    "rescale_to_unit_box",
]


@dataclass(frozen=True, eq=False)
class RealData:
    """A real data set with the information needed to privatise it honestly.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
        Raw feature values (float).
    target : ndarray of shape (n_samples,)
        The response or class label shipped with the data set.
    feature_names : tuple of str
        Column names of ``X``.
    name : str
        Short identifier, e.g. ``"wine"``.
    description : str
        One-sentence description of the data.
    data_derived_box : tuple of (ndarray, ndarray)
        ``(lower, upper)``: the per-column minimum and maximum of ``X``. Derived from the
        private data, so **not** a public bound: a mechanism calibrated to it carries no
        formal guarantee. Declare bounds from domain knowledge for a real release.
    """

    X: np.ndarray
    target: np.ndarray
    feature_names: tuple[str, ...]
    name: str
    description: str
    data_derived_box: tuple[np.ndarray, np.ndarray]

    @property
    def n_samples(self) -> int:
        """Number of rows of ``X``."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of columns of ``X``."""
        return int(self.X.shape[1])


def _make(bunch, *, name: str, description: str) -> RealData:
    X = np.array(bunch.data, dtype=float)
    lower = X.min(axis=0)
    upper = X.max(axis=0)
    lower.setflags(write=False)
    upper.setflags(write=False)
    return RealData(
        X=X,
        target=np.array(bunch.target),
        feature_names=tuple(str(feature) for feature in bunch.feature_names),
        name=name,
        description=description,
        data_derived_box=(lower, upper),
    )


def load_breast_cancer() -> RealData:
    """Breast cancer Wisconsin (diagnostic): 569 rows, 30 real features, binary label.

    Returns
    -------
    RealData
        Raw features from :func:`sklearn.datasets.load_breast_cancer`; ``target`` is
        0 (malignant) or 1 (benign).

    Notes
    -----
    Privacy: loading consumes no budget. ``data_derived_box`` is read off the data and
    gives no formal guarantee (see the module documentation).
    """
    return _make(
        sklearn.datasets.load_breast_cancer(),
        name="breast_cancer",
        description="Breast cancer Wisconsin (diagnostic), 569 × 30, binary label",
    )


def load_wine() -> RealData:
    """Wine recognition: 178 rows, 13 real features, three classes.

    Returns
    -------
    RealData
        Raw features from :func:`sklearn.datasets.load_wine`; ``target`` in {0, 1, 2}.

    Notes
    -----
    Privacy: loading consumes no budget. ``data_derived_box`` is read off the data and
    gives no formal guarantee (see the module documentation).
    """
    return _make(
        sklearn.datasets.load_wine(),
        name="wine",
        description="Wine recognition, 178 × 13, three classes",
    )


def load_diabetes() -> RealData:
    """Diabetes: 442 rows, 10 features, a continuous disease-progression response.

    Returns
    -------
    RealData
        The *unscaled* features of :func:`sklearn.datasets.load_diabetes` (age in
        years, sex coded 1/2, body-mass index, blood pressure and six serum
        measurements). scikit-learn's default scaled copy is centered and scaled by the
        sample's own mean and standard deviation, which would leak through the
        preprocessing, so it is not used.

    Notes
    -----
    Privacy: loading consumes no budget. ``data_derived_box`` is read off the data and
    gives no formal guarantee (see the module documentation).
    """
    return _make(
        sklearn.datasets.load_diabetes(scaled=False),
        name="diabetes",
        description="Diabetes (unscaled), 442 × 10, continuous response",
    )


def _as_bound(name: str, value, n_features: int) -> np.ndarray:
    try:
        bound = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a number or a 1-D array of numbers; got {value!r}"
        ) from exc
    if bound.ndim > 1 or (bound.ndim == 1 and bound.shape[0] != n_features):
        raise ValueError(
            f"{name} must be a scalar or have shape ({n_features},), one entry per column of "
            f"X; got shape {bound.shape}"
        )
    if not np.all(np.isfinite(bound)):
        raise ValueError(f"{name} must contain only finite values; got {value!r}")
    return np.broadcast_to(bound, (n_features,))


def rescale_to_unit_box(X, lower, upper) -> np.ndarray:
    """Map declared per-column bounds ``[lower, upper]`` affinely onto ``[−1, 1]``.

    Each column is transformed by ``x ↦ 2(x − lower)/(upper − lower) − 1`` and values
    outside the declared interval are clipped to ``±1``. After this every record satisfies
    the box bound ``|x_j| <= 1`` (``B = 1``) exactly, whatever the data.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Records, one per row; finite values.
    lower, upper : float or array_like of shape (n_features,)
        Declared bounds per column, with ``upper > lower`` everywhere.

    Returns
    -------
    ndarray of shape (n_samples, n_features)
        A new array with entries in ``[−1, 1]``.

    Raises
    ------
    ValueError
        If shapes disagree, a value is not finite or some ``upper <= lower``.

    Notes
    -----
    Privacy: record-by-record preprocessing; consumes no budget. The resulting bound is
    a valid public bound only if ``lower`` and ``upper`` were fixed without looking at
    the private data. Passing :attr:`RealData.data_derived_box` reproduces the usual
    min-max scaling but leaks the extremes of the data, so any result built on it has
    no formal guarantee.
    """
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError("X must be a 2-D array of numbers") from exc
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must contain only finite values")
    n_features = X.shape[1]
    lower = _as_bound("lower", lower, n_features)
    upper = _as_bound("upper", upper, n_features)
    bad = np.flatnonzero(~(upper > lower))
    if bad.size:
        j = int(bad[0])
        raise ValueError(
            f"upper must be > lower in every column; column {j} has lower={lower[j]!r}, "
            f"upper={upper[j]!r}"
        )
    # Halving before subtracting keeps the center and half-width finite for any finite
    # bounds; an overflow of X - center can only happen far outside the box, where the
    # clip gives the right sign.
    center = lower / 2.0 + upper / 2.0
    half_width = upper / 2.0 - lower / 2.0
    with np.errstate(over="ignore"):
        scaled = (X - center) / half_width
    return np.clip(scaled, -1.0, 1.0)


#: Domain-knowledge ranges for the diabetes data (raw units), fixed without looking at the
#: records: age in years; sex coded 1/2; body-mass index; mean arterial pressure (mmHg);
#: total cholesterol, LDL, HDL (mg/dL); total/HDL ratio; log triglycerides; glucose (mg/dL).
DIABETES_DOMAIN_RANGES: dict[str, tuple[float, float]] = {
    "age": (0.0, 100.0),
    "sex": (1.0, 2.0),
    "bmi": (10.0, 60.0),
    "bp": (40.0, 180.0),
    "s1": (50.0, 400.0),
    "s2": (0.0, 300.0),
    "s3": (10.0, 120.0),
    "s4": (1.0, 12.0),
    "s5": (3.0, 7.0),
    "s6": (40.0, 200.0),
}
#: Disease progression one year after baseline (the study's score runs from 25 to 346).
DIABETES_TARGET_RANGE: tuple[float, float] = (0.0, 400.0)


def declared_ranges(name: str) -> tuple[np.ndarray, np.ndarray, str]:
    """Per-feature ``(lower, upper)`` bounds that do not come from reading the records.

    * ``"breast_cancer"`` and ``"wine"``: the min/max summary table printed in the data
      set's documentation (scikit-learn's ``DESCR``). The publishers computed it from the
      same records, so treating it as public is the usual "public range" assumption;
    * ``"diabetes"``: :data:`DIABETES_DOMAIN_RANGES`, fixed from clinical plausibility.

    Returns ``(lower, upper, how)`` where ``how`` says where the bounds come from.
    """
    if name == "diabetes":
        names = [str(f) for f in sklearn.datasets.load_diabetes().feature_names]
        lower = np.array([DIABETES_DOMAIN_RANGES[f][0] for f in names])
        upper = np.array([DIABETES_DOMAIN_RANGES[f][1] for f in names])
        return lower, upper, "clinical domain ranges fixed without the data"
    loaders = {"breast_cancer": sklearn.datasets.load_breast_cancer,
               "wine": sklearn.datasets.load_wine}
    if name not in loaders:
        raise ValueError(f"name must be 'breast_cancer', 'wine' or 'diabetes'; got {name!r}")
    bunch = loaders[name]()
    rows = re.findall(r"^[A-Za-z0-9/ ()]+:\s+([-\d.]+)\s+([-\d.]+)", bunch.DESCR, flags=re.MULTILINE)
    lower = np.array([float(a) for a, _ in rows])
    upper = np.array([float(b) for _, b in rows])
    if lower.size != len(bunch.feature_names):
        raise RuntimeError(f"the summary table of {name!r} could not be read from its documentation")
    return lower, upper, "min/max table published in the data set's documentation"
