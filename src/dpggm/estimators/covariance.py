"""Private covariance by perturbing the second-moment matrix (sufficient-statistic
perturbation / Analyze Gauss and its Laplace, SULQ and Wishart variants)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpggm.estimators._base import PrivateEstimatorBase
from dpggm.estimators._contract import FLAG
from dpggm.mechanisms.record import Release
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA
from dpggm.solvers.psd import project_psd

__all__ = ["PrivateCovariance"]


class PrivateCovariance(PrivateEstimatorBase):
    """Differentially private covariance by perturbing ``S = X^T X / n``.

    Records are clipped to the declared ``bounds``, the second moment is released once
    with the chosen noise ``mechanism``, and the release is projected onto the positive
    semidefinite cone (post-processing).

    Parameters
    ----------
    budget : Budget
        ``ApproxDP``, ``ZCDP`` or ``GDP`` for ``"gaussian"``; ``PureDP`` for ``"laplace"``;
        ``ApproxDP`` for ``"sulq"`` and ``"wishart"``; ``NonPrivate()`` releases the exact
        statistic (for reference only). Required: there is no default.
    bounds : RowNorm or Box or str
        Declared public bound on every record (``"l2:B"`` / ``"box:B"`` also accepted).
    mechanism : {"gaussian", "laplace", "sulq", "wishart", "wishart-pure"}, default="gaussian"
        See :mod:`dpggm.mechanisms.release`. ``"wishart-pure"`` is not private and needs
        ``allow_invalid=True``.
    neighbors : {"replace", "add-remove"}, default="replace"
        The neighbouring relation. ``"replace"`` (bounded DP, ``n`` public) is the default.
        Under ``"add-remove"`` the count is private: the Gram matrix ``X^T X`` and a noisy
        count (``count_fraction`` of the budget) are released and divided afterwards.
    center : {"none", "private"} or array of shape (p,), default="none"
        ``"none"`` releases the raw second moment (costs nothing; it is the covariance only
        when the data are centered, as the source papers assume). A vector is a public mean
        subtracted before clipping (costs nothing; must not be computed from the data).
        ``"private"`` spends ``mean_fraction`` of the budget on a private mean and returns
        ``S~ - m~ m~^T``.
    mean_fraction : float, default=0.1
        Share of the budget spent on the mean when ``center="private"``.
    count_fraction : float, default=0.05
        Share of the budget spent on the noisy count under ``neighbors="add-remove"``.
    calibration : {"analytic", "classical"}, default="analytic"
        Gaussian calibration for ``ApproxDP`` (classical is refused for epsilon >= 1).
    allow_invalid : bool, default=False
        Opt-in for mechanisms whose published guarantee is known to be invalid.
    wishart_mean_removal : bool, default=False
        Subtract the Wishart noise's known mean (``"wishart"`` only; post-processing).
    missing : {"refuse", "drop"}, default="refuse"
        A missing value (NaN, an empty field) is refused, or (``"drop"``, only with
        ``neighbors="add-remove"``, whose count is private) its row is left out: one
        person's record is kept or left out whatever the others hold, so the guarantee is
        unchanged. ``PrivateGraph`` imputes instead (see the user guide's "Missing values").
    noise : {"exact", "float"}, default="exact"
        ``"exact"`` draws integer noise on a grid (no floating-point leak); ``"float"``
        uses floating-point samplers for fast exploration, and the release is then
        reported ``validity="invalid"`` (Mironov 2012) and never booked.
    psd : bool, default=True
        Project the release onto the PSD cone for ``covariance_``.
    report_delta : float, default=1e-6
        The delta at which ``privacy_`` states zCDP/GDP guarantees as ``(epsilon, delta)``.
    random_state : None, int, numpy.random.Generator or "secure"
        Source of randomness; use ``"secure"`` for a production release.

    Attributes
    ----------
    covariance_ : ndarray of shape (p, p)
        The estimate (post-processed release).
    noisy_covariance_ : ndarray of shape (p, p)
        The released statistic before the PSD projection.
    noisy_mean_ : ndarray of shape (p,) or None
        The private mean when ``center="private"``.
    noisy_gram_ : ndarray of shape (p, p) or None
        The released Gram matrix under ``neighbors="add-remove"``.
    n_samples_ : int
        ``n`` (replace-one, public) or the noisy count (add/remove).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        The column names, only when ``X`` is a DataFrame or a CSV file with a header.
    privacy_ : PrivacyGuarantee
        What was spent and what it guarantees.

    Privacy
    -------
    One release of the second moment with sensitivity from the declared bounds
    (:mod:`dpggm.mechanisms.sensitivity`); the guarantee is ``budget`` under
    ``neighbors``. Projection is post-processing. A bound read off the data voids the
    formal guarantee and is reported as ``validity="data-dependent"``. So does a
    preprocessing step fitted on the private data (a ``StandardScaler`` in a ``Pipeline``, say): see
    :mod:`dpggm.estimators`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpggm import PrivateCovariance, ZCDP, RowNorm
    >>> X = np.random.default_rng(0).normal(size=(1000, 3)) / 4
    >>> est = PrivateCovariance(budget=ZCDP(0.5), bounds=RowNorm(1.0), random_state=0).fit(X)
    >>> est.covariance_.shape
    (3, 3)
    """

    _constraints = {"psd": FLAG}
    _min_features = 1

    def __init__(
        self,
        *,
        budget: Any = None,
        bounds: Any = None,
        mechanism: str = "gaussian",
        neighbors: str = "replace",
        center: Any = "none",
        mean_fraction: float = 0.1,
        count_fraction: float = 0.05,
        calibration: str = "analytic",
        noise: str = "exact",
        allow_invalid: bool = False,
        wishart_mean_removal: bool = False,
        missing: str = "refuse",
        psd: bool = True,
        report_delta: float = DEFAULT_REPORT_DELTA,
        random_state: Any = None,
    ) -> None:
        self.budget = budget
        self.bounds = bounds
        self.mechanism = mechanism
        self.neighbors = neighbors
        self.center = center
        self.mean_fraction = mean_fraction
        self.count_fraction = count_fraction
        self.calibration = calibration
        self.noise = noise
        self.allow_invalid = allow_invalid
        self.wishart_mean_removal = wishart_mean_removal
        self.missing = missing
        self.psd = psd
        self.report_delta = report_delta
        self.random_state = random_state

    def _projected(self, noisy: np.ndarray) -> np.ndarray:
        if not self.psd:
            return noisy
        if noisy.shape == (1, 1):
            # A 1 x 1 matrix is PSD when its entry is >= 0 (the solver needs p >= 2).
            return np.maximum(noisy, 0.0)
        return project_psd(noisy).estimate

    def fit(self, X: Any, y: Any = None) -> PrivateCovariance:
        """Release a private covariance of ``X``.

        Parameters
        ----------
        X : array-like of shape (n, p), DataFrame, or path of a CSV file
        y : ignored

        Returns
        -------
        self
        """
        return super().fit(X, y)

    def _solve(self, X: Any, settings: Any, release: Release, data: Any) -> None:
        self.covariance_ = self._projected(release.statistic)
