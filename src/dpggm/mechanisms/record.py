"""The release record: a released statistic with the public description of how it was
released.

Every mechanism that publishes a matrix statistic (the second moment, the covariance of
the rescaled records) returns a :class:`Release`; every solver, the edge inference and
the reports read it. The noise is described once, in :class:`NoiseDescription`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpggm.mechanisms.discrete_gaussian import discrete_gaussian_variance

__all__ = ["NoiseDescription", "Release"]


@dataclass(frozen=True)
class NoiseDescription:
    """The public description of the noise on one entry of a release.

    Attributes
    ----------
    kind : str
        The distribution of the noise on one entry: ``"gaussian"`` (continuous or
        discrete Gaussian noise on a released matrix, or Wishart noise read through its
        Gaussian approximation), ``"laplace"`` (a pure-DP release of a matrix), or
        ``"discrete-gaussian"`` (discrete Gaussian noise on published records, whose exact
        variance a data user subtracts).
    std : float
        The noise scale of one (off-diagonal) entry, from public parameters and released
        quantities only: its standard deviation, or for discrete Gaussian noise the
        ``sigma`` of ``N_Z(0, sigma^2)``; 0 for no noise (the exact statistic of a
        non-private reference).
    mechanism : str
        The mechanism that drew it (empty when not stated).
    grid : float or None
        The lattice step ``t`` of discrete noise on ``tZ`` (``None``: the integers).
    """

    kind: str = "gaussian"
    std: float = 0.0
    mechanism: str = ""
    grid: float | None = None

    @property
    def discrete(self) -> bool:
        """Whether the noise is discrete Gaussian noise on published records."""
        return self.kind == "discrete-gaussian"

    @property
    def variance(self) -> float:
        """The variance of the noise on one (off-diagonal) entry: ``std ** 2``, or for
        ``"discrete-gaussian"`` noise the exact variance summed from its mass function
        (below ``std ** 2``)."""
        if self.discrete and self.std != 0:
            return float(discrete_gaussian_variance(self.std, grid=self.grid))
        return float(self.std) ** 2


@dataclass(frozen=True)
class Release:
    """A released statistic and its public description.

    Attributes
    ----------
    statistic : ndarray of shape (p, p)
        The released matrix, symmetric: the noisy second moment, or the noisy covariance
        once a released mean is subtracted.
    n_samples : int
        ``n``: public under replace-one, the released (noisy, rounded, at least 1) count
        under add/remove.
    noise : NoiseDescription
        The noise on one entry of ``statistic``.
    guarantee : PrivacyGuarantee or None
        What the release delivers.
    mean : ndarray of shape (p,) or None
        The released mean, when one was asked for.
    gram : ndarray of shape (p, p) or None
        The released noisy Gram matrix ``X^T X`` (add/remove neighbours only).
    clipping : ClippingModel, Bounds or None
        How the records were clipped before the statistic was formed, for the
        inference's bias correction (``None`` when no closed form describes it).
    present : ndarray of shape (p,) or None
        The released share of values present in every column (missing values).
    columns : list of str
        The column names (public).
    precision : ndarray of shape (p, p) or None
        The precision a solver estimated from ``statistic`` (post-processing), which the
        edge inference linearises around; ``None`` for a release not yet solved.
    alpha : float or None
        The penalty of that solve.
    """

    statistic: np.ndarray
    n_samples: int
    noise: NoiseDescription
    guarantee: Any = None
    mean: np.ndarray | None = None
    gram: np.ndarray | None = None
    clipping: Any = None
    present: np.ndarray | None = None
    columns: list[str] | None = None
    precision: np.ndarray | None = None
    alpha: float | None = None

    @property
    def n_features(self) -> int:
        """The number of variables ``p``."""
        return int(self.statistic.shape[0])

    @property
    def covariance(self) -> np.ndarray:
        """``statistic``, by the name ``PrivateGraph.release_`` gave it before the records
        were one type (a released covariance or second moment): code written against
        ``release_.covariance`` keeps working."""
        return self.statistic

    @property
    def noise_variance(self) -> float:
        """The variance of the noise on one off-diagonal entry of ``statistic``."""
        return self.noise.variance

    @property
    def noise_distribution(self) -> str:
        """The law of that noise as the edge inference reads it (``"gaussian"`` or
        ``"laplace"``)."""
        return "gaussian" if self.noise.discrete else self.noise.kind
