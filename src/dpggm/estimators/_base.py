"""Shared parameter validation and the validate -> clip -> release path of the
covariance-perturbation estimators."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator

from dpggm.estimators._contract import (
    BOUNDS,
    BUDGET,
    CALIBRATION,
    FLAG,
    NEIGHBORS,
    NOISE,
    NONE,
    RANDOM_STATE,
    REPORT_DELTA,
    VECTOR,
    AnyOf,
    ContractMixin,
    Options,
    check_budget,
    check_fraction,
    fraction,
)
from dpggm.estimators.data import SecondMoment, clipped_second_moment
from dpggm.mechanisms.bounds import check_bounds
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.release import COVARIANCE_MECHANISMS, release_second_moment
from dpggm.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "DPEstimator",
    "PrivateEstimatorBase",
    "ReleasedCovariance",
    "check_bounds",
    "check_budget",
    "check_fraction",
    "make_context",
]


@dataclass(frozen=True)
class ReleasedCovariance:
    """The released statistic and what it cost.

    ``stats_n`` is the public ``n`` under replace-one and the noisy count under add/remove
    (the exact count is never exposed there); ``entry_noise_std`` is the noise standard
    deviation of one off-diagonal entry of ``noisy_covariance``, from released quantities.
    """

    noisy_covariance: np.ndarray
    noisy_mean: np.ndarray | None
    stats_n: int
    n_features: int
    columns: list[str]
    guarantee: PrivacyGuarantee
    entry_noise_std: float
    noisy_gram: np.ndarray | None = None


def make_context(estimator: Any, bounds: Any) -> ReleaseContext:
    """The release context of an estimator's fit, from its declared parameters (already
    checked by :meth:`ContractMixin._validate_params`).

    Every estimator that releases from private records builds its context here, so that
    what :meth:`ContractMixin._validate_params` found about the fit -- preprocessing in a
    ``Pipeline`` that voids the guarantee -- reaches every record it assembles
    (``"data-dependent"`` with the steps named). An estimator without a ``noise`` parameter
    releases exact noise."""
    params = estimator.get_params(deep=False)
    return ReleaseContext(
        neighbors=params["neighbors"],
        bounds=bounds,
        random_state=params["random_state"],
        report_delta=float(params["report_delta"]),
        noise=params.get("noise", "exact"),
        data_dependent_reasons=tuple(getattr(estimator, "_preprocessing_reasons", ())),
    )


class DPEstimator(ContractMixin, BaseEstimator):
    """The base of every estimator that spends a budget: ``budget``, ``bounds``,
    ``neighbors``, ``report_delta`` and ``random_state`` are declared here; subclasses
    declare the rest.

    Notes
    -----
    A preprocessing step fitted on the private data (a ``StandardScaler`` in a
    ``Pipeline``, say) voids the guarantee: every transformed record then depends on all
    the records, so the declared bounds and sensitivities no longer hold. When ``fit`` runs
    in a scikit-learn ``Pipeline`` after such a step, ``privacy_.validity`` is
    ``"data-dependent"`` with the step named (no accountant or ledger books it) and a
    :class:`~dpggm.estimators._contract.FittedOnPrivateDataWarning` is issued. A fixed
    public per-record function (``FunctionTransformer(np.log)``, ``Normalizer``) is
    recognised by scikit-learn's tags and a check on a public probe, and changes nothing.
    A transformer fitted by hand before ``fit`` cannot be detected; see
    :func:`~dpggm.estimators._contract.preprocessing_reasons`.
    """

    _reads_private_records = True

    _constraints = {
        "budget": BUDGET,
        "bounds": BOUNDS,
        "neighbors": NEIGHBORS,
        "report_delta": REPORT_DELTA,
        "random_state": RANDOM_STATE,
    }


class PrivateEstimatorBase(DPEstimator):
    """Common machinery: parameter checks and the covariance release.

    Subclasses set the parameters ``budget``, ``bounds``, ``mechanism``, ``neighbors``,
    ``center``, ``mean_fraction``, ``count_fraction``, ``calibration``, ``noise``,
    ``allow_invalid``, ``wishart_mean_removal``, ``report_delta`` and ``random_state``.
    """

    #: Fewest columns the estimator's post-processing accepts (a 1 x 1 covariance is
    #: meaningful; a 1 x 1 graph or sparse precision is not).
    _min_features: ClassVar[int] = 2

    _constraints = {
        "mechanism": Options(*COVARIANCE_MECHANISMS),
        "center": AnyOf(Options("none", "private"), VECTOR, NONE),
        "mean_fraction": fraction(),
        "count_fraction": fraction(),
        "calibration": CALIBRATION,
        "noise": NOISE,
        "allow_invalid": FLAG,
        "wishart_mean_removal": FLAG,
    }

    def _validate_common(self) -> None:
        self._bounds = self._validate_params()["bounds"]

    def _private_center(self) -> bool:
        return isinstance(self.center, str) and self.center == "private"

    def _release_covariance(self, X: Any) -> ReleasedCovariance:
        """Validate, clip, and release the second moment (and a private mean if asked)."""
        self._validate_common()
        bounds = self._bounds
        ctx = make_context(self, bounds)
        public_center = None if isinstance(self.center, str) or self.center is None else (
            np.asarray(self.center, dtype=float)
        )
        stats: SecondMoment = clipped_second_moment(X, bounds=bounds, center=public_center)
        if stats.n_features < self._min_features:
            # Refused before the release: nothing is spent on a matrix the solver rejects.
            raise ValueError(
                f"{type(self).__name__} needs at least {self._min_features} variables "
                f"(columns); X has {stats.n_features}"
            )
        gram = stats.second_moment * stats.n
        release = release_second_moment(
            gram,
            total=stats.total,
            n=stats.n,
            bounds=bounds,
            budget=self.budget,
            mechanism=self.mechanism,
            ctx=ctx,
            calibration=self.calibration,
            allow_invalid=self.allow_invalid,
            wishart_mean_removal=self.wishart_mean_removal,
            mean_fraction=self.mean_fraction if self._private_center() else None,
            count_fraction=self.count_fraction,
        )
        centring = (
            "private mean: covariance = noisy second moment - noisy mean outer product"
            if self._private_center()
            else "public mean subtracted before clipping"
            if public_center is not None
            else "none: raw second moment X^T X / n (no budget; equals the covariance only for "
            "centred data)"
        )
        guarantee = replace(
            release.guarantee,
            notes={**release.guarantee.notes, "centering": centring},
            curator_notes={**release.guarantee.curator_notes, "rows_clipped": stats.n_clipped},
        )
        covariance = release.second_moment
        if release.mean is not None:
            covariance = covariance - np.outer(release.mean, release.mean)
        return ReleasedCovariance(
            noisy_covariance=covariance,
            noisy_mean=release.mean,
            stats_n=int(release.count),
            n_features=stats.n_features,
            columns=stats.columns,
            guarantee=guarantee,
            entry_noise_std=release.entry_noise_std,
            noisy_gram=release.gram,
        )
