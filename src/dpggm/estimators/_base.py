"""Shared parameter validation and the validate -> clip -> release path of the
covariance-perturbation estimators."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from dpggm.estimators.data import SecondMoment, clipped_second_moment
from dpggm.mechanisms.additive import check_noise_mode
from dpggm.mechanisms.bounds import check_bounds, check_neighbors
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.release import COVARIANCE_MECHANISMS, release_second_moment
from dpggm.privacy.budgets import Budget
from dpggm.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "PrivateEstimatorBase",
    "ReleasedCovariance",
    "check_budget",
    "check_count_fraction",
    "check_fraction",
    "make_context",
]


def check_budget(budget: Any, *, name: str = "budget") -> Budget:
    """A budget must be given explicitly; ``NonPrivate()`` for a reference run."""
    if budget is None:
        raise ValueError(
            f"{name} is required: pass PureDP, ApproxDP, ZCDP or GDP, or NonPrivate() for a "
            "non-private reference run"
        )
    if not isinstance(budget, Budget):
        raise TypeError(
            f"{name} must be a PureDP, ApproxDP, ZCDP, GDP or NonPrivate value; got {budget!r}"
        )
    return budget


def check_fraction(value: Any, *, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
        raise ValueError(f"{name} must be a number in (0, 1); got {value!r}")
    return float(value)


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


def check_count_fraction(estimator: Any) -> float:
    """The share of the budget spent on the noisy count under add/remove."""
    return check_fraction(estimator.count_fraction, name="count_fraction")


def make_context(estimator: Any, bounds: Any) -> ReleaseContext:
    """The release context of an estimator's fit, from its declared parameters."""
    report_delta = estimator.report_delta
    if isinstance(report_delta, bool) or not (
        isinstance(report_delta, numbers.Real) and 0 < report_delta < 1
    ):
        raise ValueError(f"report_delta must be a number in (0, 1); got {report_delta!r}")
    return ReleaseContext(
        neighbors=check_neighbors(estimator.neighbors),
        bounds=bounds,
        random_state=estimator.random_state,
        report_delta=float(report_delta),
        noise=check_noise_mode(estimator.noise),
    )


class PrivateEstimatorBase(BaseEstimator):
    """Common machinery: parameter checks and the covariance release.

    Subclasses set the parameters ``budget``, ``bounds``, ``mechanism``, ``neighbors``,
    ``center``, ``mean_fraction``, ``count_fraction``, ``calibration``, ``noise``,
    ``allow_invalid``, ``wishart_mean_removal``, ``report_delta`` and ``random_state``.
    """

    def _validate_common(self) -> None:
        check_budget(self.budget)
        self._bounds = check_bounds(self.bounds)
        check_neighbors(self.neighbors)
        check_noise_mode(self.noise)
        if self.mechanism not in COVARIANCE_MECHANISMS:
            raise ValueError(
                f"mechanism must be one of {COVARIANCE_MECHANISMS}; got {self.mechanism!r}"
            )
        center = self.center
        if isinstance(center, str):
            if center not in ("none", "private"):
                raise ValueError(
                    "center must be 'none', 'private' or a public mean vector; got "
                    f"{center!r}"
                )
        elif center is not None:
            center = np.asarray(center, dtype=float)
            if center.ndim != 1 or not np.all(np.isfinite(center)):
                raise ValueError("center must be a finite one-dimensional public mean vector")
        if self._private_center():
            check_fraction(self.mean_fraction, name="mean_fraction")
        check_count_fraction(self)
        if self.calibration not in ("analytic", "classical"):
            raise ValueError(
                f"calibration must be 'analytic' or 'classical'; got {self.calibration!r}"
            )

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
