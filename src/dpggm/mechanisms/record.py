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

__all__ = ["NoiseDescription", "Release"]


@dataclass(frozen=True)
class NoiseDescription:
    """The public description of the noise on one entry of a released matrix.

    Attributes
    ----------
    kind : str
        The distribution of the noise on one entry: ``"gaussian"`` (continuous or
        discrete Gaussian noise, or Wishart noise read through its Gaussian
        approximation) or ``"laplace"`` (a pure-DP release): the two laws the edge
        inference reads.
    std : float
        The standard deviation of the noise on one off-diagonal entry, from public
        parameters and released quantities only (0 for the exact statistic of a
        non-private reference).
    mechanism : str
        The mechanism that drew it, as the guarantee names it (empty when not stated).
    """

    kind: str = "gaussian"
    std: float = 0.0
    mechanism: str = ""

    @property
    def variance(self) -> float:
        """The variance of the noise on one off-diagonal entry (``std ** 2``)."""
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
    def noise_variance(self) -> float:
        """The variance of the noise on one off-diagonal entry of ``statistic``."""
        return self.noise.variance

    @property
    def noise_distribution(self) -> str:
        """The distribution of that noise (``noise.kind``)."""
        return self.noise.kind
