"""Private releases of second-moment matrices, single values and means.

This is where statistics meet noise. Each function takes the exact statistics of the
clipped records, the public parameters that fix their sensitivity, a budget and a
:class:`~dpggm.mechanisms.context.ReleaseContext`, and returns the noisy statistics with
the :class:`~dpggm.privacy.PrivacyGuarantee` the release delivers.

Covariance mechanisms (SPEC section 3, seeds 001 and 003):

``"gaussian"``
    Symmetric Gaussian noise on the upper triangle; ``ApproxDP``, ``ZCDP`` or ``GDP``.
``"laplace"``
    Symmetric Laplace noise; ``PureDP``; l1 sensitivity.
``"sulq"``
    Every one of the ``p(p+1)/2`` entries answered as its own Gaussian query with the
    ``(epsilon, delta)`` budget split evenly by basic composition (Blum et al. 2005).
``"wishart"``
    Sheffet (2019): ``(G + W) / n`` with ``W ~ Wishart_p(m, B^2 I)``,
    ``m = ceil(p + 14 ln(4/delta) / epsilon^2)``; ``ApproxDP`` with ``epsilon < 1`` and
    ``delta < 1/e``, replace-one neighbours. Its Gaussian vectors are drawn in floating
    point, so the release is reported ``validity="invalid"`` (:data:`WISHART_FLOAT_REASON`:
    float draws leak through floating-point gaps, Mironov 2012); it runs without
    ``allow_invalid`` because the mechanism itself is sound. ``wishart_mean_removal=True``
    subtracts the noise's mean ``m B^2 / n * I`` (post-processing).
``"wishart-pure"``
    Jiang et al. (2016): ``S + W`` with ``W ~ Wishart_p(p + 1, 3 B^2 / (2 n epsilon) I)``,
    claimed ``epsilon``-DP. **Not differentially private** (Sheffet 2019, footnote 4;
    Amin et al. 2019, section 1.2): runs only with ``allow_invalid=True`` and reports
    ``validity="invalid"``.

Neighbouring relations. Under replace-one, ``n`` is public and ``S = X^T X / n`` is
released directly. Under add/remove, ``n`` is private: the unnormalised Gram ``X^T X``
(and the column sums for a private mean) are released with noise set from public
parameters only, together with a noisy count from ``count_fraction`` of the budget, and
``S`` is formed afterwards as ``G~ / max(n~, 1)`` (post-processing). The Wishart
mechanisms are analysed for replace-one only and refuse add/remove.

Every Gaussian and Laplace release here is exact by default (integer noise on a grid, see
:mod:`dpggm.mechanisms.additive`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpggm.exceptions import InvalidGuaranteeError, UnsupportedNeighborsError
from dpggm.mechanisms.additive import (
    MAX_RECORDS,
    GaussianMechanism,
    LaplaceMechanism,
    NoisePart,
    check_budget_range,
)
from dpggm.mechanisms.bounds import Bounds
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.noise import wishart_noise
from dpggm.mechanisms.random import RandomSource
from dpggm.mechanisms.sensitivity import (
    gram_entry_sensitivity,
    gram_l1_sensitivity,
    gram_l2_sensitivity,
    indicator_l2_sensitivity,
    sum_l1_sensitivity,
    sum_l2_sensitivity,
)
from dpggm.privacy.budgets import (
    GDP,
    ZCDP,
    ApproxDP,
    Budget,
    NonPrivate,
    PureDP,
    compose,
    scale_budget,
    split_budget,
)

__all__ = [
    "COVARIANCE_MECHANISMS",
    "DEFAULT_COUNT_FRACTION",
    "FLOAT_NOISE_MECHANISMS",
    "INVALID_MECHANISMS",
    "WISHART_FLOAT_REASON",
    "SecondMomentRelease",
    "release_count",
    "release_mean",
    "release_observed_counts",
    "release_second_moment",
    "release_value",
]

COVARIANCE_MECHANISMS = ("gaussian", "laplace", "sulq", "wishart", "wishart-pure")

#: Share of the budget spent on the noisy count under add/remove neighbours.
DEFAULT_COUNT_FRACTION = 0.05

#: Methods whose published guarantee is known to be wrong, with the reason reported.
INVALID_MECHANISMS = {
    "wishart-pure": (
        "the pure epsilon-DP Wishart mechanism of Jiang et al. (2016) is not differentially "
        "private (Sheffet 2019, footnote 4; Amin et al. 2019, section 1.2); the claimed "
        "guarantee does not hold"
    ),
}

#: Mechanisms whose noise is drawn by floating-point samplers whatever ``noise`` says.
FLOAT_NOISE_MECHANISMS = ("wishart", "wishart-pure")

WISHART_FLOAT_REASON = (
    "the Wishart noise is built from floating-point Gaussian and chi-square draws (no exact "
    "sampler exists for it here), whose set of possible outputs differs between neighbouring "
    "data sets (Mironov 2012, 'On significance of the least significant bits for differential "
    "privacy'); the stated budget holds only for the idealised mechanism"
)

_BUDGETS_FOR = {
    "gaussian": (ApproxDP, ZCDP, GDP),
    "laplace": (PureDP,),
    "sulq": (ApproxDP,),
    "wishart": (ApproxDP,),
    "wishart-pure": (PureDP,),
}


def _check_budget(mechanism: str, budget: Budget) -> None:
    allowed = _BUDGETS_FOR[mechanism]
    if not isinstance(budget, allowed):
        names = " or ".join(cls.__name__ for cls in allowed)
        article = "an" if names[0] in "AEIOU" else "a"
        raise TypeError(
            f"mechanism {mechanism!r} needs {article} {names} budget; got {type(budget).__name__}"
        )


def _upper(matrix: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    iu = np.triu_indices(matrix.shape[0])
    return iu, matrix[iu]


def _mirror(p: int, iu: tuple[np.ndarray, np.ndarray], values: np.ndarray) -> np.ndarray:
    out = np.zeros((p, p))
    out[iu] = values
    return out + np.triu(out, 1).T


@dataclass(frozen=True)
class SecondMomentRelease:
    """A released second moment and what it cost.

    Attributes
    ----------
    second_moment : ndarray (p, p)
        The noisy ``S`` (replace-one) or ``G~ / max(n~, 1)`` (add/remove), symmetric.
    mean : ndarray (p,) or None
        The noisy mean, when a private mean was asked for.
    count : int or float
        ``n`` under replace-one (public), the noisy count under add/remove.
    gram : ndarray (p, p) or None
        The released noisy Gram matrix (add/remove only).
    entry_noise_std : float
        Standard deviation of the noise on one off-diagonal entry of ``second_moment``
        (from released quantities only).
    guarantee : PrivacyGuarantee
    """

    second_moment: np.ndarray
    mean: np.ndarray | None
    count: int | float
    gram: np.ndarray | None
    entry_noise_std: float
    guarantee: Any


def release_value(
    value: float | np.ndarray,
    *,
    sensitivity: float,
    budget: Budget,
    rng: RandomSource | Any,
    calibration: str = "analytic",
    noise: str = "exact",
) -> tuple[float | np.ndarray, float]:
    """Gaussian mechanism on a scalar or vector with l2 ``sensitivity`` (exact by default),
    every random word from ``rng`` (a :class:`~dpggm.mechanisms.random.RandomSource`, e.g.
    ``ctx.source``, or anything it accepts).

    Returns the noisy value and the noise scale ``sigma`` used.
    """
    array = np.asarray(value, dtype=float)
    mechanism = GaussianMechanism(
        sensitivity=float(sensitivity),
        size=max(array.size, 1),
        budget=budget,
        calibration=calibration,
        noise=noise,
    )
    noisy = mechanism.release(array.reshape(-1), rng).reshape(array.shape)
    return (float(noisy) if noisy.ndim == 0 else noisy), mechanism.sigma


def release_count(
    n: int, *, budget: Budget, ctx: ReleaseContext
) -> tuple[float, Budget, dict[str, Any]]:
    """A noisy count of sensitivity 1 (add/remove): discrete Laplace for ``PureDP``, the
    discrete Gaussian otherwise; the count is an integer, so no grid rounding is needed
    and the release is an integer. Returns the noisy count, the budget delivered and the
    public noise record."""
    mechanism: GaussianMechanism | LaplaceMechanism
    if isinstance(budget, PureDP):
        mechanism = LaplaceMechanism(sensitivity=1.0, size=1, budget=budget, noise=ctx.noise)
    else:
        mechanism = GaussianMechanism(sensitivity=1.0, size=1, budget=budget, noise=ctx.noise)
    noisy = mechanism.release(np.array([float(n)]), ctx.source)[0]
    return float(noisy), mechanism.delivered, mechanism.record("count_")


def release_observed_counts(
    observed: np.ndarray, *, budget: Budget, ctx: ReleaseContext
) -> tuple[np.ndarray, dict[str, Any]]:
    """Noisy per-column counts of the values present (not missing), for replace-one
    neighbours: discrete Gaussian (discrete Laplace for ``PureDP``), exact.

    Privacy
    -------
    One record's indicator of present values lies in ``{0, 1}^p``; replacing it moves the
    count vector by at most ``sqrt(p)`` in l2 and ``p`` in l1 (also the add/remove bound).
    The counts are integers: the release is exact on the integer grid's refinement.
    """
    if ctx.neighbors != "replace":
        raise UnsupportedNeighborsError("observed counts are released under replace-one only")
    observed = np.asarray(observed, dtype=float)
    p = observed.shape[0]
    mechanism = _gaussian_or_laplace(budget, l2=indicator_l2_sensitivity(p), l1=float(p),
                                     size=p, ctx=ctx, calibration="analytic")
    return mechanism.release(observed, ctx.source), mechanism.record("observed_")


def _gaussian_or_laplace(
    budget: Budget, *, l2: float, l1: float, size: int, ctx: ReleaseContext, calibration: str
) -> GaussianMechanism | LaplaceMechanism:
    if isinstance(budget, PureDP):
        return LaplaceMechanism(sensitivity=l1, size=size, budget=budget, noise=ctx.noise)
    return GaussianMechanism(
        sensitivity=l2, size=size, budget=budget, calibration=calibration, noise=ctx.noise
    )


def _sulq(
    statistic: np.ndarray,
    entry_sensitivity: np.ndarray,
    budget: Budget,
    ctx: ReleaseContext,
    calibration: str,
) -> tuple[np.ndarray, Budget, dict[str, Any], np.ndarray]:
    """Every upper-triangle entry as its own Gaussian query; the budget split evenly."""
    p = statistic.shape[0]
    iu, values = _upper(statistic)
    k = values.size
    # Rounded down, so that k spends of it never exceed the budget.
    per_entry = scale_budget(budget, Fraction(1, k))
    sensitivities = entry_sensitivity[iu]
    noisy = np.empty(k)
    sigmas = np.empty(k)
    grids = set()
    # Entries sharing a sensitivity share a mechanism (a row-norm bound has two values).
    for value in np.unique(sensitivities):
        where = np.flatnonzero(sensitivities == value)
        mechanism = GaussianMechanism(
            sensitivity=float(value), size=1, budget=per_entry, calibration=calibration,
            noise=ctx.noise,
        )
        noisy[where] = mechanism.release(
            values[where], ctx.source, independent=True
        )
        sigmas[where] = mechanism.sigma
        grids.add(mechanism.grid)
        delivered_each = mechanism.delivered
    delivered = scale_budget(delivered_each, k) if isinstance(delivered_each, ZCDP) else budget
    record: dict[str, Any] = {
        "per_entry_budget": per_entry,
        "max_entry_sigma": float(sigmas.max()),
        "max_entry_sensitivity": float(sensitivities.max()),
        "distribution": "discrete-gaussian" if ctx.noise == "exact" else "gaussian",
    }
    if ctx.noise == "exact":
        record["grid"] = min(grids)
    return _mirror(p, iu, noisy), delivered, record, _mirror(p, iu, sigmas)


def _wishart(
    statistic: np.ndarray, *, n: int, bounds: Bounds, budget: Budget, mechanism: str,
    rng: RandomSource, mean_removal: bool,
) -> tuple[np.ndarray, dict[str, Any], float]:
    p = statistic.shape[0]
    B = bounds.row_norm(p)
    if mechanism == "wishart":
        if not (budget.epsilon < 1 and 0 < budget.delta < 1 / math.e):
            raise ValueError(
                "the Wishart mechanism needs epsilon in (0, 1) and delta in (0, 1/e); got "
                f"epsilon={budget.epsilon!r}, delta={budget.delta!r}"
            )
        df = math.ceil(p + 14.0 * math.log(4.0 / budget.delta) / budget.epsilon**2)
        noisy = statistic + wishart_noise(p, df, B**2, rng) / n
        noise: dict[str, Any] = {"wishart_df": df, "wishart_scale": B**2, "divided_by_n": n}
        if mean_removal:
            noisy = noisy - (df * B**2 / n) * np.eye(p)
            noise["mean_removed"] = df * B**2 / n
        entry_std = math.sqrt(df) * B**2 / n
    else:
        scale = 3.0 * B**2 / (2.0 * n * budget.epsilon)
        noisy = statistic + wishart_noise(p, p + 1, scale, rng)
        noise = {"wishart_df": p + 1, "wishart_scale": scale}
        entry_std = math.sqrt(p + 1) * scale
    return noisy, noise, entry_std


def _split_off(budget: Budget, fraction: float | None) -> tuple[Budget | None, Budget]:
    if fraction is None:
        return None, budget
    return split_budget(budget, fraction)


# One piece (over 120 lines, half of it the parameter documentation): the one place where
# the parts of a release (count, matrix, mean) are split off one budget and composed back
# into one guarantee; the statistics themselves are released by the helpers below.
def release_second_moment(
    gram: np.ndarray,
    *,
    total: np.ndarray | None = None,
    n: int,
    bounds: Bounds,
    budget: Budget,
    mechanism: str,
    ctx: ReleaseContext,
    calibration: str = "analytic",
    allow_invalid: bool = False,
    wishart_mean_removal: bool = False,
    mean_fraction: float | None = None,
    count_fraction: float = DEFAULT_COUNT_FRACTION,
) -> SecondMomentRelease:
    """Release the second moment of records clipped to ``bounds``.

    Parameters
    ----------
    gram : ndarray of shape (p, p)
        ``X^T X`` of the clipped records (curator side).
    total : ndarray of shape (p,), optional
        Column sums of the clipped records; needed when ``mean_fraction`` is given.
    n : int
        Number of records: public under replace-one, private under add/remove (where it
        is used only as the value of the count query).
    bounds : Bounds
        The declared bounds the records were clipped to.
    budget : Budget
        What to spend; its notion must suit ``mechanism``. ``NonPrivate()`` returns the
        exact statistics.
    mechanism : str
        One of :data:`COVARIANCE_MECHANISMS`.
    ctx : ReleaseContext
        Neighbouring relation, randomness, report delta and noise mode.
    calibration : {"analytic", "classical"}
        Gaussian calibration of an ``ApproxDP`` budget (float noise).
    allow_invalid : bool
        Required to run a mechanism of :data:`INVALID_MECHANISMS`.
    wishart_mean_removal : bool
        Subtract the Wishart noise's mean (``"wishart"`` only).
    mean_fraction : float in (0, 1), optional
        Spend this share on a private mean (column sums over the count).
    count_fraction : float in (0, 1)
        Under add/remove, the share spent on the noisy count.

    Returns
    -------
    SecondMomentRelease
    """
    if mechanism not in COVARIANCE_MECHANISMS:
        raise ValueError(f"mechanism must be one of {COVARIANCE_MECHANISMS}; got {mechanism!r}")
    p = gram.shape[0]
    bounds.check_dimension(p)
    add_remove = ctx.neighbors == "add-remove"
    if isinstance(budget, NonPrivate):
        S = (gram + gram.T) / (2 * n)
        return SecondMomentRelease(
            second_moment=S,
            mean=None if mean_fraction is None or total is None else total / n,
            count=n,
            gram=gram.copy() if add_remove else None,
            entry_noise_std=0.0,
            guarantee=ctx.guarantee(
                budget=budget, mechanism=f"{mechanism} (non-private reference: exact statistic)"
            ),
        )
    _check_budget(mechanism, budget)
    invalid_reason = None
    if mechanism in INVALID_MECHANISMS:
        if not allow_invalid:
            raise InvalidGuaranteeError(
                f"mechanism {mechanism!r} is refused: {INVALID_MECHANISMS[mechanism]}. Pass "
                "allow_invalid=True only to reproduce the paper; the result will be reported "
                "as invalid."
            )
        invalid_reason = INVALID_MECHANISMS[mechanism]
    if mechanism in FLOAT_NOISE_MECHANISMS:
        invalid_reason = "; ".join(r for r in (invalid_reason, WISHART_FLOAT_REASON) if r)
    if add_remove and mechanism in ("wishart", "wishart-pure"):
        raise UnsupportedNeighborsError(
            f"the {mechanism!r} mechanism is analysed for replace-one neighbours only; use "
            "neighbors='replace' or the 'gaussian' / 'laplace' mechanism"
        )
    if mean_fraction is not None and total is None:
        raise ValueError("a private mean needs the column sums (total)")
    # Before any draw: every noisy part must be drawable at this budget.
    check_budget_range(
        budget,
        _planned_parts(p=p, n=n, bounds=bounds, budget=budget, mechanism=mechanism, ctx=ctx,
                       mean_fraction=mean_fraction,
                       count_fraction=count_fraction if add_remove else None),
        release=f"the {mechanism!r} release of a {p} x {p} second moment from n = {n} rows"
        if not add_remove else f"the {mechanism!r} release of a {p} x {p} Gram matrix",
    )

    count_budget, rest = _split_off(budget, count_fraction if add_remove else None)
    mean_budget, matrix_budget = _split_off(rest, mean_fraction)
    noise: dict[str, Any] = {}
    delivered: list[Budget] = []
    notes: dict[str, Any] = {}

    count: int | float = n
    if count_budget is not None:
        count, count_delivered, count_record = release_count(n, budget=count_budget, ctx=ctx)
        delivered.append(count_delivered)
        noise.update(count_record, count_budget=count_budget)
    divisor = max(float(count), 1.0)

    # Under replace-one the normalised statistic is released (n public); under add/remove
    # the Gram itself, whose sensitivity does not involve n.
    scale_by = 1 if add_remove else n
    matrix = _release_matrix(
        (gram + gram.T) / (2 * scale_by), n=n, bounds=bounds, budget=matrix_budget,
        mechanism=mechanism, ctx=ctx, calibration=calibration,
        wishart_mean_removal=wishart_mean_removal,
    )
    noisy, gram_noise_std = matrix.values, matrix.entry_std
    delivered.append(matrix.delivered)
    noise.update(matrix.noise)
    notes.update(matrix.notes)

    mean = None
    if mean_budget is not None:
        assert total is not None
        mean_release = _release_sums(
            np.asarray(total, dtype=float) / scale_by, n=n, bounds=bounds, budget=mean_budget,
            ctx=ctx, calibration=calibration,
        )
        mean = mean_release.values / divisor if add_remove else mean_release.values
        delivered.append(mean_release.delivered)
        noise.update(mean_release.noise, mean_budget=mean_budget)

    if add_remove:
        released_gram = noisy
        second_moment = noisy / divisor
        entry_std = gram_noise_std / divisor
        notes["normalisation"] = (
            "add/remove neighbours: the Gram matrix X^T X and a noisy count were released; "
            "the second moment is their ratio (post-processing)"
        )
    else:
        released_gram = None
        second_moment = noisy
        entry_std = gram_noise_std
    if len(delivered) > 1:
        noise["second_moment_budget"] = matrix_budget
    guarantee = ctx.guarantee(
        budget=compose(delivered),
        mechanism=mechanism,
        noise=noise,
        notes=notes,
        invalid_reason=invalid_reason,
    )
    return SecondMomentRelease(
        second_moment=second_moment,
        mean=mean,
        # A noisy count can be small or negative; estimators divide by it.
        count=max(int(round(count)), 1) if add_remove else n,
        gram=released_gram,
        entry_noise_std=float(entry_std),
        guarantee=guarantee,
    )


def _planned_parts(
    *, p: int, n: int, bounds: Bounds, budget: Budget, mechanism: str, ctx: ReleaseContext,
    mean_fraction: float | None, count_fraction: float | None,
) -> list[NoisePart]:
    """The exact noisy parts :func:`release_second_moment` will draw, with their shares of
    the budget, sensitivities and public value bounds (for :func:`check_budget_range`).
    Float noise has no grid, hence no part (a zero budget is still refused)."""
    if mechanism not in ("gaussian", "laplace", "sulq"):
        return []  # the Wishart mechanisms check their own epsilon and delta
    add_remove = ctx.neighbors == "add-remove"
    laplace = isinstance(budget, PureDP)
    if ctx.noise == "float":
        return []  # no grid: only a zero budget is out of range
    rest = Fraction(1)
    parts: list[NoisePart] = []
    if count_fraction is not None:
        parts.append(NoisePart(share=Fraction(count_fraction), sensitivity=1.0, size=1,
                               value_bound=float(MAX_RECORDS), laplace=laplace))
        rest -= Fraction(count_fraction)
    matrix_share = rest
    scale = 1 if add_remove else n
    square = bounds.row_norm(p) ** 2
    if mean_fraction is not None:
        mean_share = rest * Fraction(mean_fraction)
        matrix_share = rest - mean_share
        l2 = sum_l2_sensitivity(bounds, p=p, neighbors=ctx.neighbors)
        l1 = sum_l1_sensitivity(bounds, p=p, neighbors=ctx.neighbors)
        parts.append(NoisePart(
            share=mean_share, sensitivity=(l1 if laplace else l2) / scale, size=p,
            value_bound=bounds.row_norm(p) * (MAX_RECORDS if add_remove else 1),
            laplace=laplace))
    # n is private under add/remove: the Gram matrix is bounded through MAX_RECORDS.
    value_bound = square * (MAX_RECORDS if add_remove else 1)
    if mechanism == "sulq":
        entry = gram_entry_sensitivity(bounds, p=p, neighbors=ctx.neighbors) / scale
        k = p * (p + 1) // 2
        for sensitivity in {float(entry.min()), float(entry.max())}:
            parts.append(NoisePart(share=matrix_share / k, sensitivity=sensitivity, size=1,
                                   value_bound=value_bound))
        return parts
    l2 = gram_l2_sensitivity(bounds, p=p, neighbors=ctx.neighbors) / scale
    l1 = gram_l1_sensitivity(bounds, p=p, neighbors=ctx.neighbors) / scale
    parts.append(NoisePart(share=matrix_share, sensitivity=l1 if laplace else l2,
                           size=p * (p + 1) // 2, value_bound=value_bound, laplace=laplace))
    return parts


@dataclass(frozen=True)
class _Part:
    """One noisy statistic of a release and its public record."""

    values: np.ndarray
    delivered: Budget
    noise: dict[str, Any]
    entry_std: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)


def release_mean(
    total: np.ndarray, *, n: int, bounds: Bounds, budget: Budget, ctx: ReleaseContext,
    calibration: str = "analytic",
) -> tuple[np.ndarray, dict[str, Any]]:
    """The private mean ``total / n`` of records clipped to ``bounds`` (replace-one: ``n``
    public), with the Gaussian mechanism (Laplace for ``PureDP``), exact by default.
    Returns the noisy mean and its public noise record (``mean_*`` keys)."""
    if ctx.neighbors != "replace":
        raise UnsupportedNeighborsError(
            "a mean divides by n, which is private under add/remove neighbours; release the "
            "column sums with a noisy count (release_second_moment with mean_fraction)"
        )
    part = _release_sums(
        np.asarray(total, dtype=float) / n, n=n, bounds=bounds, budget=budget, ctx=ctx,
        calibration=calibration,
    )
    return part.values, part.noise


def _release_matrix(
    statistic: np.ndarray, *, n: int, bounds: Bounds, budget: Budget, mechanism: str,
    ctx: ReleaseContext, calibration: str, wishart_mean_removal: bool,
) -> _Part:
    """The noisy symmetric ``statistic`` (``S`` under replace-one, ``G`` under add/remove)."""
    p = statistic.shape[0]
    add_remove = ctx.neighbors == "add-remove"
    if mechanism in ("gaussian", "laplace"):
        l2 = gram_l2_sensitivity(bounds, p=p, neighbors=ctx.neighbors)
        l1 = gram_l1_sensitivity(bounds, p=p, neighbors=ctx.neighbors)
        if not add_remove:
            l2, l1 = _per_record(l2, n), _per_record(l1, n)
        iu, values = _upper(statistic)
        noiser = _gaussian_or_laplace(
            budget, l2=l2, l1=l1, size=values.size, ctx=ctx, calibration=calibration
        )
        noisy = _mirror(p, iu, noiser.release(values, ctx.source))
        entry_std = (
            noiser.sigma if isinstance(noiser, GaussianMechanism)
            else math.sqrt(2.0) * noiser.scale
        )
        return _Part(
            noisy, noiser.delivered, noiser.record(), entry_std,
            notes={"derivation": noiser.derivation},
        )
    if mechanism == "sulq":
        entry = gram_entry_sensitivity(bounds, p=p, neighbors=ctx.neighbors)
        if not add_remove:
            entry = np.nextafter(entry / n, np.inf)
        noisy, delivered, record, sigmas = _sulq(statistic, entry, budget, ctx, calibration)
        return _Part(noisy, delivered, record, float(np.max(sigmas)))
    noisy, record, entry_std = _wishart(
        statistic, n=n, bounds=bounds, budget=budget, mechanism=mechanism, rng=ctx.source,
        mean_removal=wishart_mean_removal,
    )
    return _Part(noisy, budget, record, entry_std)


def _release_sums(
    vector: np.ndarray, *, n: int, bounds: Bounds, budget: Budget, ctx: ReleaseContext,
    calibration: str,
) -> _Part:
    """Noisy column sums (add/remove) or mean (replace-one, ``vector`` already over n)."""
    p = vector.shape[0]
    l2 = sum_l2_sensitivity(bounds, p=p, neighbors=ctx.neighbors)
    l1 = sum_l1_sensitivity(bounds, p=p, neighbors=ctx.neighbors)
    if ctx.neighbors == "replace":
        l2, l1 = _per_record(l2, n), _per_record(l1, n)
    noiser = _gaussian_or_laplace(budget, l2=l2, l1=l1, size=p, ctx=ctx, calibration=calibration)
    return _Part(
        noiser.release(vector, ctx.source), noiser.delivered,
        noiser.record("mean_"),
    )


def _per_record(sensitivity: float, n: int) -> float:
    """``sensitivity / n`` rounded up (the normalised statistic, replace-one)."""
    value = sensitivity / n
    if Fraction(value) < Fraction(sensitivity) / n:
        value = math.nextafter(value, math.inf)
    return value
