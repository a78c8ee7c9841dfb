"""Private releases of second-moment matrices, single values and means.

This is where statistics meet noise. Each function takes the exact statistics of the
clipped records, the public parameters that fix their sensitivity, a budget and a
:class:`~dpggm.mechanisms.context.ReleaseContext`, and returns the noisy statistics with
the :class:`~dpggm.privacy.PrivacyGuarantee` the release delivers.

Covariance mechanisms (those of Wang, Huai & Xu and of PACE-GGM's baselines):

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

Plan, then release. :func:`second_moment_plan` states, from public facts only, every
measurement of a release (the noisy count under add/remove, the matrix, a private mean)
with its mechanism object, budget and noise, and refuses before any draw what cannot be
released (a budget of the wrong notion or out of range, an invalid mechanism not opted
into, a relation the mechanism has no analysis for). :func:`release_planned_second_moment`
runs exactly those measurements, each checked against an accountant before and booked
after, and states the guarantee from what ran. :func:`release_second_moment` does both.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpggm.exceptions import (
    IncompatibleBudgetError,
    InvalidGuaranteeError,
    UnsupportedNeighborsError,
)
from dpggm.mechanisms.additive import (
    MAX_RECORDS,
    GaussianMechanism,
    LaplaceMechanism,
    NoisePart,
    NoisyCount,
    check_budget_range,
)
from dpggm.mechanisms.bounds import Bounds
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.measurement import Measurement
from dpggm.mechanisms.noise import WishartMechanism
from dpggm.mechanisms.plan import PlannedMeasurement, PlanRun, ReleasePlan
from dpggm.mechanisms.random import RandomSource
from dpggm.mechanisms.record import NoiseDescription, Release
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
    accounting_total,
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
    "EntrywiseGaussian",
    "check_second_moment_mechanism",
    "SecondMomentRelease",
    "matrix_measurement",
    "release_matrix",
    "sums_measurement",
    "release_column_sums",
    "release_gram",
    "release_mean",
    "release_observed_counts",
    "release_planned_second_moment",
    "release_second_moment",
    "second_moment_accounting",
    "second_moment_plan",
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
    if mechanism != "laplace" and isinstance(budget, ApproxDP) and not budget.delta > 0:
        raise IncompatibleBudgetError(
            f"budget: mechanism {mechanism!r} needs delta > 0 (Gaussian and Wishart noise "
            f"cannot satisfy (epsilon, 0)-DP; use mechanism='laplace'); got {budget}"
        )
    allowed = _BUDGETS_FOR[mechanism]
    if not isinstance(budget, allowed):
        names = " or ".join(cls.__name__ for cls in allowed)
        article = "an" if names[0] in "AEIOU" else "a"
        raise IncompatibleBudgetError(
            f"budget: mechanism {mechanism!r} needs {article} {names} budget; got "
            f"{type(budget).__name__}"
        )


def _upper(matrix: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    iu = np.triu_indices(matrix.shape[0])
    return iu, matrix[iu]


def _mirror(p: int, iu: tuple[np.ndarray, np.ndarray], values: np.ndarray) -> np.ndarray:
    out = np.zeros((p, p))
    out[iu] = values
    return out + np.triu(out, 1).T


#: The record :func:`release_second_moment` returns: a :class:`~dpggm.mechanisms.record.Release`
#: (``statistic`` the noisy ``S``, or ``G~ / max(n~, 1)`` under add/remove).
SecondMomentRelease = Release


def release_observed_counts(
    observed: np.ndarray, *, budget: Budget, ctx: ReleaseContext, prefix: str = "observed_"
) -> tuple[np.ndarray, dict[str, Any]]:
    """Noisy per-column counts of the values present (not missing): discrete Gaussian
    (discrete Laplace for ``PureDP``), exact.

    Privacy
    -------
    One record's indicator of present values lies in ``{0, 1}^p``; replacing it moves the
    count vector by at most ``sqrt(p)`` in l2 and ``p`` in l1, and adding or removing it
    by as much: the same calibration holds under either relation. The counts are
    integers: the release is exact on the integer grid's refinement.
    """
    observed = np.asarray(observed, dtype=float)
    p = observed.shape[0]
    mechanism = _gaussian_or_laplace(budget, l2=indicator_l2_sensitivity(p), l1=float(p),
                                     size=p, noise=ctx.noise, calibration="analytic")
    return mechanism.release(observed, ctx.source), mechanism.record(prefix)


def _gaussian_or_laplace(
    budget: Budget, *, l2: float, l1: float, size: int, noise: str, calibration: str
) -> GaussianMechanism | LaplaceMechanism:
    if isinstance(budget, PureDP):
        return LaplaceMechanism(sensitivity=l1, size=size, budget=budget, noise=noise)
    return GaussianMechanism(
        sensitivity=l2, size=size, budget=budget, calibration=calibration, noise=noise
    )


class EntrywiseGaussian(Measurement):
    """Every coordinate of a vector answered as its own one-coordinate Gaussian query:
    SULQ (Blum et al. 2005, every upper-triangle entry of the second moment with an equal
    share of the budget), the diagonal baselines (one entry per column). Coordinates that
    share a sensitivity and a budget share a mechanism.

    Parameters
    ----------
    sensitivities : array of shape (k,)
        The l2 sensitivity of every coordinate (from public parameters).
    budgets : Budget or sequence of k Budgets
        What every coordinate's query may spend.

    Privacy
    -------
    ``privacy_map(d)``: the coordinates' sensitivities scaled by ``d`` over the largest,
    each query's map composed over the ``k`` queries; ``delivered`` is the composition of
    the per-coordinate budgets (basic composition for ``(epsilon, delta)``).
    """

    mechanism = "one gaussian query per entry"

    def __init__(self, sensitivities: np.ndarray, budgets: Budget | Any, *,
                 calibration: str = "analytic", noise: str = "exact") -> None:
        self.sensitivities = np.asarray(sensitivities, dtype=float).reshape(-1)
        k = self.sensitivities.size
        self.budgets = [budgets] * k if isinstance(budgets, Budget) else list(budgets)
        if len(self.budgets) != k:
            raise ValueError(f"budgets must be one budget or {k} of them; got {len(self.budgets)}")
        self.noise, self.runs = noise, k
        self._where: dict[tuple[float, Budget], list[int]] = {}
        for index, key in enumerate(self._keys()):
            self._where.setdefault(key, []).append(index)
        self.mechanisms = {
            key: GaussianMechanism(sensitivity=key[0], size=1, budget=key[1],
                                   calibration=calibration, noise=noise)
            for key in self._where
        }
        self.sensitivity = float(self.sensitivities.max())
        self.delivered = compose([self.mechanisms[key].delivered for key in self._keys()])

    def _keys(self) -> list[tuple[float, Budget]]:
        return [(float(s), b) for s, b in zip(self.sensitivities, self.budgets)]

    def privacy_map(self, sensitivity: float) -> Budget:
        factor = Fraction(float(sensitivity)) / Fraction(self.sensitivity)
        return compose([self.mechanisms[key].privacy_map(float(Fraction(key[0]) * factor))
                        for key in self._keys()])

    @property
    def sigmas(self) -> np.ndarray:
        """The noise scale of every coordinate."""
        return np.array([self.mechanisms[key].sigma for key in self._keys()])

    @property
    def grids(self) -> list[float | None]:
        """The grid step of every coordinate's exact noise (``None`` for float noise)."""
        return [self.mechanisms[key].grid for key in self._keys()]

    def record(self, prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {
            f"{prefix}per_entry_budget": self.budgets[0],
            f"{prefix}max_entry_sigma": float(self.sigmas.max()),
            f"{prefix}max_entry_sensitivity": self.sensitivity,
            f"{prefix}distribution": "discrete-gaussian" if self.noise == "exact" else "gaussian",
        }
        if self.noise == "exact":
            out[f"{prefix}grid"] = min(m.grid for m in self.mechanisms.values())
        return out

    def release(self, values: np.ndarray, source: RandomSource | Any) -> np.ndarray:
        """Every coordinate plus its own noise."""
        values = np.asarray(values, dtype=float).reshape(-1)
        if values.size != self.runs:
            raise ValueError(f"this measurement was planned for {self.runs} coordinates; "
                             f"got {values.size}")
        noisy = np.empty(values.size)
        for key, mechanism in self.mechanisms.items():
            where = np.asarray(self._where[key])
            noisy[where] = mechanism.release(values[where], source, independent=True)
        return noisy


def _per_record(sensitivity: float, n: int) -> float:
    """``sensitivity / n`` rounded up (the normalised statistic, replace-one)."""
    value = sensitivity / n
    if Fraction(value) < Fraction(sensitivity) / n:
        value = math.nextafter(value, math.inf)
    return value


def matrix_measurement(
    *, mechanism: str, p: int, n: int, bounds: Bounds, budget: Budget, neighbors: str,
    noise: str, calibration: str,
) -> Measurement:
    """The measurement of the symmetric statistic: ``S`` under replace-one, the Gram ``G``
    under add/remove (whose sensitivity does not involve the private ``n``)."""
    add_remove = neighbors == "add-remove"
    if mechanism in ("gaussian", "laplace"):
        l2 = gram_l2_sensitivity(bounds, p=p, neighbors=neighbors)
        l1 = gram_l1_sensitivity(bounds, p=p, neighbors=neighbors)
        if not add_remove:
            l2, l1 = _per_record(l2, n), _per_record(l1, n)
        return _gaussian_or_laplace(budget, l2=l2, l1=l1, size=p * (p + 1) // 2, noise=noise,
                                    calibration=calibration)
    if mechanism == "sulq":
        entry = gram_entry_sensitivity(bounds, p=p, neighbors=neighbors)
        if not add_remove:
            entry = np.nextafter(entry / n, np.inf)
        # Rounded down, so that k spends of it never exceed the budget.
        per_entry = scale_budget(budget, Fraction(1, p * (p + 1) // 2))
        return EntrywiseGaussian(entry[np.triu_indices(p)], per_entry, calibration=calibration,
                                 noise=noise)
    B = bounds.row_norm(p)
    if mechanism == "wishart":
        return WishartMechanism.sheffet(budget, p=p, row_bound=B, n=n)
    return WishartMechanism(p=p, df=p + 1, scale=3.0 * B**2 / (2.0 * n * budget.epsilon),
                            claimed=budget, row_bound=B,
                            invalid_reason=INVALID_MECHANISMS["wishart-pure"])


def sums_measurement(*, p: int, n: int, bounds: Bounds, budget: Budget, neighbors: str,
                      noise: str, calibration: str) -> GaussianMechanism | LaplaceMechanism:
    """The measurement of the column sums (add/remove) or the mean (replace-one)."""
    l2 = sum_l2_sensitivity(bounds, p=p, neighbors=neighbors)
    l1 = sum_l1_sensitivity(bounds, p=p, neighbors=neighbors)
    if neighbors == "replace":
        l2, l1 = _per_record(l2, n), _per_record(l1, n)
    return _gaussian_or_laplace(budget, l2=l2, l1=l1, size=p, noise=noise,
                                calibration=calibration)


def _split_off(budget: Budget, fraction: float | None) -> tuple[Budget | None, Budget]:
    if fraction is None:
        return None, budget
    return split_budget(budget, fraction)


def second_moment_accounting(budget: Budget, mechanism: str, noise: str) -> Budget:
    """The total the parts are split from: a ``GDP(mu)`` budget of exact Gaussian noise is
    run (and stated) in the ``mu**2 / 2``-zCDP it implies (the discrete Gaussian delivers
    zCDP, not GDP); every other budget as given."""
    if isinstance(budget, GDP) and noise == "exact" and mechanism == "gaussian":
        return accounting_total(budget, ZCDP)
    return budget


def check_second_moment_mechanism(mechanism: str, *, budget: Budget, neighbors: str,
                                  allow_invalid: bool) -> None:
    """Refuse, from the parameters alone, a release of the second moment that cannot be
    made: a budget of a notion ``mechanism`` cannot deliver, an invalid mechanism without
    ``allow_invalid``, a relation the mechanism has no analysis for. A ``NonPrivate``
    budget draws no noise and is never refused here.

    Raises
    ------
    IncompatibleBudgetError, InvalidGuaranteeError, UnsupportedNeighborsError
    """
    if mechanism not in COVARIANCE_MECHANISMS:
        raise ValueError(f"mechanism must be one of {COVARIANCE_MECHANISMS}; got {mechanism!r}")
    if isinstance(budget, NonPrivate):
        return
    _check_budget(mechanism, budget)
    if mechanism in INVALID_MECHANISMS and not allow_invalid:
        raise InvalidGuaranteeError(
            f"mechanism {mechanism!r} is refused: {INVALID_MECHANISMS[mechanism]}. Pass "
            "allow_invalid=True only to reproduce the paper; the result will be reported "
            "as invalid."
        )
    if neighbors == "add-remove" and mechanism in ("wishart", "wishart-pure"):
        raise UnsupportedNeighborsError(
            f"the {mechanism!r} mechanism is analysed for replace-one neighbours only; use "
            "neighbors='replace' or the 'gaussian' / 'laplace' mechanism"
        )


def second_moment_plan(
    *,
    n: int,
    p: int,
    bounds: Bounds,
    budget: Budget,
    mechanism: str = "gaussian",
    neighbors: str = "replace",
    noise: str = "exact",
    calibration: str = "analytic",
    allow_invalid: bool = False,
    mean_fraction: float | None = None,
    count_fraction: float = DEFAULT_COUNT_FRACTION,
    estimator: str = "second moment",
) -> ReleasePlan:
    """The measurements of one release of the second moment of ``n`` records of ``p``
    columns clipped to ``bounds``, from public facts only; refuses (before any draw) what
    cannot be released.

    Steps, in the order they run: ``"count"`` (add/remove: a noisy count from
    ``count_fraction`` of the budget), ``"second moment"`` (the matrix, by ``mechanism``),
    ``"mean"`` (with ``mean_fraction``: the private mean, or the column sums under
    add/remove). Each holds its measurement object (:mod:`dpggm.mechanisms.measurement`).

    Raises
    ------
    ValueError
        An unknown mechanism, a dimension the bounds do not fit, a budget out of range
        (:class:`~dpggm.exceptions.BudgetRangeError`), a budget of the wrong notion
        (:class:`~dpggm.exceptions.IncompatibleBudgetError`), an invalid mechanism without
        ``allow_invalid`` (:class:`~dpggm.exceptions.InvalidGuaranteeError`), a relation
        the mechanism has no analysis for
        (:class:`~dpggm.exceptions.UnsupportedNeighborsError`).
    """
    if mechanism not in COVARIANCE_MECHANISMS:
        raise ValueError(f"mechanism must be one of {COVARIANCE_MECHANISMS}; got {mechanism!r}")
    bounds.check_dimension(p)
    add_remove = neighbors == "add-remove"
    if isinstance(budget, NonPrivate):
        return ReleasePlan(estimator, n, p, budget, budget, (), neighbors,
                           {"reason": "NonPrivate(): the exact statistic, no noise",
                            "mechanism": mechanism, "mean": mean_fraction is not None})
    check_second_moment_mechanism(mechanism, budget=budget, neighbors=neighbors,
                                  allow_invalid=allow_invalid)
    invalid_reason = INVALID_MECHANISMS.get(mechanism)
    if mechanism in FLOAT_NOISE_MECHANISMS:
        invalid_reason = "; ".join(r for r in (invalid_reason, WISHART_FLOAT_REASON) if r)
    # Before any draw: every noisy part must be drawable at this budget.
    check_budget_range(
        budget,
        _planned_parts(p=p, n=n, bounds=bounds, budget=budget, mechanism=mechanism,
                       neighbors=neighbors, noise=noise, mean_fraction=mean_fraction,
                       count_fraction=count_fraction if add_remove else None),
        release=f"the {mechanism!r} release of a {p} x {p} second moment from n = {n} rows"
        if not add_remove else f"the {mechanism!r} release of a {p} x {p} Gram matrix",
    )
    working = second_moment_accounting(budget, mechanism, noise)
    count_budget, rest = _split_off(working, count_fraction if add_remove else None)
    mean_budget, matrix_budget = _split_off(rest, mean_fraction)
    steps: list[PlannedMeasurement] = []
    if count_budget is not None:
        steps.append(NoisyCount(count_budget, noise=noise).planned("count"))
    matrix = matrix_measurement(mechanism=mechanism, p=p, n=n, bounds=bounds,
                                 budget=matrix_budget, neighbors=neighbors, noise=noise,
                                 calibration=calibration)
    steps.append(matrix.planned("second moment"))
    if mean_budget is not None:
        steps.append(sums_measurement(p=p, n=n, bounds=bounds, budget=mean_budget,
                                       neighbors=neighbors, noise=noise,
                                       calibration=calibration).planned("mean"))
    notes: dict[str, Any] = {"mechanism": mechanism}
    if invalid_reason:
        notes["invalid_reason"] = invalid_reason
    return ReleasePlan(estimator, n, p, budget, working, tuple(steps), neighbors, notes)


def release_matrix(measurement: Any, statistic: np.ndarray,
                    source: RandomSource) -> tuple[np.ndarray, float]:
    """The noisy symmetric statistic and the noise standard deviation of one off-diagonal
    entry, by the planned measurement."""
    p = statistic.shape[0]
    if isinstance(measurement, (GaussianMechanism, LaplaceMechanism)):
        iu, values = _upper(statistic)
        noisy = _mirror(p, iu, measurement.release(values, source))
        entry_std = (measurement.sigma if isinstance(measurement, GaussianMechanism)
                     else math.sqrt(2.0) * measurement.scale)
        return noisy, entry_std
    if isinstance(measurement, EntrywiseGaussian):
        iu, values = _upper(statistic)
        return _mirror(p, iu, measurement.release(values, source)), float(measurement.sigmas.max())
    return measurement.release(statistic, source), measurement.entry_std


def release_planned_second_moment(
    plan: ReleasePlan,
    gram: np.ndarray,
    *,
    total: np.ndarray | None = None,
    n: int,
    ctx: ReleaseContext,
    wishart_mean_removal: bool = False,
    run: PlanRun | None = None,
) -> Release:
    """Run the measurements of ``plan`` (:func:`second_moment_plan`) on the exact
    statistics of the clipped records -- ``gram = X^T X`` and the column sums ``total``
    (needed with a ``"mean"`` step) of ``n`` records (private under add/remove, where it
    is only the value of the count query) -- each checked against an accountant before it
    runs and booked after; the guarantee states what ran (``noise["breakdown"]``) and the
    plan (``notes["plan"]``).

    ``wishart_mean_removal`` subtracts the Wishart noise's known mean (post-processing);
    ``run`` is the :class:`~dpggm.mechanisms.plan.PlanRun` of the calling fit (a new one by
    default).
    """
    p = plan.n_features
    add_remove = plan.neighbors == "add-remove"
    steps = {s.step for s in plan.steps}
    if plan.non_private:
        mean = None if total is None or not plan.notes.get("mean") else total / n
        return Release(
            statistic=(gram + gram.T) / (2 * n), mean=mean, n_samples=n,
            gram=gram.copy() if add_remove else None,
            noise=NoiseDescription(kind="gaussian", std=0.0,
                                   mechanism=str(plan.notes.get("mechanism", "second moment"))),
            guarantee=ctx.guarantee(
                budget=plan.requested,
                mechanism=f"{plan.notes.get('mechanism', 'second moment')} (non-private "
                          "reference: exact statistic)"),
        )
    if "mean" in steps and total is None:
        raise ValueError("a private mean needs the column sums (total)")
    run = PlanRun(plan) if run is None else run
    source = ctx.source
    count: int | float = n
    if "count" in steps:
        count = run.run("count", lambda s: s.measurement.release(n, source))
    divisor = max(float(count), 1.0)
    # Under replace-one the normalised statistic is released (n public); under add/remove
    # the Gram itself, whose sensitivity does not involve n.
    scale_by = 1 if add_remove else n
    noisy, entry_std = run.run("second moment", lambda s: release_matrix(
        s.measurement, (gram + gram.T) / (2 * scale_by), source))
    matrix = plan.step("second moment").measurement
    noise: dict[str, Any] = {}
    notes: dict[str, Any] = {}
    if "count" in steps:
        noise.update(plan.step("count").measurement.record("count_"),
                     count_budget=plan.step("count").budget)
    noise.update(matrix.record())
    if hasattr(matrix, "derivation"):
        notes["derivation"] = matrix.derivation
    if isinstance(matrix, WishartMechanism) and wishart_mean_removal:
        noisy = noisy - matrix.noise_mean * np.eye(p)
        noise["mean_removed"] = matrix.noise_mean
    mean = None
    if "mean" in steps:
        assert total is not None
        sums = run.run("mean", lambda s: s.measurement.release(
            np.asarray(total, dtype=float) / scale_by, source))
        mean = sums / divisor if add_remove else sums
        noise.update(plan.step("mean").measurement.record("mean_"),
                     mean_budget=plan.step("mean").budget)
    if len(plan.steps) > 1:
        noise["second_moment_budget"] = plan.step("second moment").budget
    if add_remove:
        released_gram, second_moment = noisy, noisy / divisor
        entry_std = entry_std / divisor
        notes["normalisation"] = (
            "add/remove neighbours: the Gram matrix X^T X and a noisy count were released; "
            "the second moment is their ratio (post-processing)"
        )
    else:
        released_gram, second_moment = None, noisy
    guarantee = ctx.planned_guarantee(
        plan, run, mechanism=str(plan.notes.get("mechanism", "second moment")), noise=noise,
        notes=notes, invalid_reason=plan.notes.get("invalid_reason"),
    )
    return Release(
        statistic=second_moment,
        mean=mean,
        # A noisy count can be small or negative; estimators divide by it.
        n_samples=max(int(round(count)), 1) if add_remove else n,
        gram=released_gram,
        noise=NoiseDescription(
            kind="laplace" if isinstance(matrix, LaplaceMechanism) else "gaussian",
            std=float(entry_std), mechanism=str(plan.notes.get("mechanism", "second moment"))),
        guarantee=guarantee,
    )


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
) -> Release:
    """Release the second moment of records clipped to ``bounds``: the plan
    (:func:`second_moment_plan`, every check before any draw), then its measurements
    (:func:`release_planned_second_moment`).

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
    Release
        ``statistic`` the noisy ``S`` (replace-one) or ``G~ / max(n~, 1)`` (add/remove),
        ``n_samples`` the public ``n`` or the released count, ``gram`` the released Gram
        (add/remove), ``mean`` the released mean when asked for, ``noise`` the noise on one
        off-diagonal entry, ``guarantee`` what the release delivers.
    """
    plan = second_moment_plan(
        n=n, p=gram.shape[0], bounds=bounds, budget=budget, mechanism=mechanism,
        neighbors=ctx.neighbors, noise=ctx.noise, calibration=calibration,
        allow_invalid=allow_invalid, mean_fraction=mean_fraction,
        count_fraction=count_fraction,
    )
    return release_planned_second_moment(plan, gram, total=total, n=n, ctx=ctx,
                                         wishart_mean_removal=wishart_mean_removal)


def _planned_parts(
    *, p: int, n: int, bounds: Bounds, budget: Budget, mechanism: str, neighbors: str,
    noise: str, mean_fraction: float | None, count_fraction: float | None,
) -> list[NoisePart]:
    """The exact noisy parts of a release of the second moment, with their shares of the
    budget, sensitivities and public value bounds (for :func:`check_budget_range`). Float
    noise has no grid, hence no part (a zero budget is still refused)."""
    if mechanism not in ("gaussian", "laplace", "sulq"):
        return []  # the Wishart mechanisms check their own epsilon and delta
    add_remove = neighbors == "add-remove"
    laplace = isinstance(budget, PureDP)
    if noise == "float":
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
        l2 = sum_l2_sensitivity(bounds, p=p, neighbors=neighbors)
        l1 = sum_l1_sensitivity(bounds, p=p, neighbors=neighbors)
        parts.append(NoisePart(
            share=mean_share, sensitivity=(l1 if laplace else l2) / scale, size=p,
            value_bound=bounds.row_norm(p) * (MAX_RECORDS if add_remove else 1),
            laplace=laplace))
    # n is private under add/remove: the Gram matrix is bounded through MAX_RECORDS.
    value_bound = square * (MAX_RECORDS if add_remove else 1)
    if mechanism == "sulq":
        entry = gram_entry_sensitivity(bounds, p=p, neighbors=neighbors) / scale
        k = p * (p + 1) // 2
        for sensitivity in {float(entry.min()), float(entry.max())}:
            parts.append(NoisePart(share=matrix_share / k, sensitivity=sensitivity, size=1,
                                   value_bound=value_bound))
        return parts
    l2 = gram_l2_sensitivity(bounds, p=p, neighbors=neighbors) / scale
    l1 = gram_l1_sensitivity(bounds, p=p, neighbors=neighbors) / scale
    parts.append(NoisePart(share=matrix_share, sensitivity=l1 if laplace else l2,
                           size=p * (p + 1) // 2, value_bound=value_bound, laplace=laplace))
    return parts


def release_mean(
    total: np.ndarray, *, n: int, bounds: Bounds, budget: Budget, ctx: ReleaseContext,
    calibration: str = "analytic", prefix: str = "mean_",
) -> tuple[np.ndarray, dict[str, Any]]:
    """The private mean ``total / n`` of records clipped to ``bounds`` (replace-one: ``n``
    public), with the Gaussian mechanism (Laplace for ``PureDP``), exact by default.
    Returns the noisy mean and its public noise record (keys with ``prefix``)."""
    if ctx.neighbors != "replace":
        raise UnsupportedNeighborsError(
            "a mean divides by n, which is private under add/remove neighbours; release the "
            "column sums with a noisy count (release_second_moment with mean_fraction)"
        )
    total = np.asarray(total, dtype=float)
    measurement = sums_measurement(p=total.shape[0], n=n, bounds=bounds, budget=budget,
                                    neighbors="replace", noise=ctx.noise,
                                    calibration=calibration)
    return measurement.release(total / n, ctx.source), measurement.record(prefix)


def release_column_sums(
    total: np.ndarray, *, bounds: Bounds, budget: Budget, ctx: ReleaseContext,
    prefix: str = "",
) -> tuple[np.ndarray, dict[str, Any]]:
    """The column sums ``X^T 1`` of records clipped to ``bounds``, under add/remove
    neighbours (the count is private: the caller divides by a released count), with the
    Gaussian mechanism (Laplace for ``PureDP``), exact. Returns the noisy sums and their
    public noise record (keys with ``prefix``).

    Privacy
    -------
    Adding or removing one record moves the sums by the record itself: l2 sensitivity
    ``B`` (``||b||_2`` for a box), l1 ``sqrt(p) B`` (``||b||_1``)
    (:func:`~dpggm.mechanisms.sensitivity.sum_l2_sensitivity`); no figure involves ``n``.
    """
    if ctx.neighbors != "add-remove":
        raise UnsupportedNeighborsError(
            "the unnormalised column sums are the add/remove release; under replace-one "
            "release the mean (release_mean)")
    total = np.asarray(total, dtype=float)
    measurement = sums_measurement(p=total.shape[0], n=1, bounds=bounds, budget=budget,
                                    neighbors="add-remove", noise=ctx.noise,
                                    calibration="analytic")
    return measurement.release(total, ctx.source), measurement.record(prefix)


def release_gram(
    gram: np.ndarray, *, bounds: Bounds, budget: Budget, mechanism: str, ctx: ReleaseContext,
) -> tuple[np.ndarray, float, dict[str, Any]]:
    """The Gram matrix ``X^T X`` of records clipped to ``bounds``, under add/remove
    neighbours (the caller divides by a released count), with symmetric Gaussian
    (``mechanism="gaussian"``) or Laplace (``"laplace"``, ``PureDP``) noise on the upper
    triangle, exact. Returns the noisy Gram, the noise standard deviation of one entry and
    the public noise record.

    Privacy
    -------
    Adding or removing one record moves the Gram by ``x x^T``: l2 sensitivity ``B**2`` of
    the upper triangle, l1 ``(p + 1) B**2 / 2`` (row norm) or ``(||b||_1**2 +
    ||b||_2**2) / 2`` (box) (:func:`~dpggm.mechanisms.sensitivity.gram_l2_sensitivity`).
    """
    if ctx.neighbors != "add-remove":
        raise UnsupportedNeighborsError(
            "the unnormalised Gram matrix is the add/remove release; under replace-one "
            "release the second moment (release_second_moment)")
    if mechanism not in ("gaussian", "laplace"):
        raise ValueError(f"mechanism must be 'gaussian' or 'laplace'; got {mechanism!r}")
    _check_budget(mechanism, budget)
    gram = np.asarray(gram, dtype=float)
    measurement = matrix_measurement(
        mechanism=mechanism, p=gram.shape[0], n=1, bounds=bounds, budget=budget,
        neighbors="add-remove", noise=ctx.noise, calibration="analytic")
    noisy, entry_std = release_matrix(measurement, (gram + gram.T) / 2, ctx.source)
    return noisy, float(entry_std), measurement.record()
