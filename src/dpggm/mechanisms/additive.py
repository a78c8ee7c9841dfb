"""Additive noise mechanisms that carry their privacy maps: Gaussian and Laplace noise on
a vector of statistics, drawn exactly on a grid by default.

A mechanism object is built from public quantities only -- the sensitivity of the
statistic (from declared bounds), the number of coordinates released, and the budget --
and knows its noise scale, its grid, the guarantee it delivers and how to draw its noise.

Exact releases on a grid
------------------------
Floating-point samplers leak through the gaps between representable numbers (Mironov
2012): the set of outputs a float Laplace or Gaussian sampler can produce around one
input differs from the set around another. With ``noise="exact"`` (the default) a
statistic ``f`` with ``k`` coordinates is instead

1. rounded to the lattice ``t Z`` with ``t`` a power of two chosen from public
   parameters: the largest ``t`` with ``t sqrt(k) <= Delta_2 2^-10`` (Gaussian) or
   ``t k <= Delta_1 2^-10`` (Laplace);
2. shifted by integer noise drawn exactly -- the discrete Gaussian (Canonne, Kamath &
   Steinke 2020) or the discrete Laplace -- in units of ``t``;
3. returned as ``t * (round(f / t) + noise)``, an exact multiple of ``t``.

Rounding moves each coordinate by at most ``t / 2``, so the integer statistic
``round(f / t)`` has l2 sensitivity at most ``Delta_2 / t + sqrt(k)`` (l1: ``Delta_1 / t
+ k``), as in OpenDP's treatment of rounding. The calibration uses that inflated
sensitivity, enlarged by a further factor ``1 + 2^-20`` that absorbs the floating-point
error of computing ``f`` itself (a relative error far below ``2^-20`` of the
sensitivity for any data set of up to ``2^30`` records).

Guarantees of the exact mechanisms:

* discrete Gaussian, ``ZCDP(rho)``: ``sigma = Delta' / sqrt(2 rho)`` gives exactly
  ``rho``-zCDP (Canonne, Kamath & Steinke 2020, Theorem 4 and its multivariate form,
  Theorem 14: the Renyi divergence of shifted discrete Gaussians is at most the
  continuous one);
* discrete Gaussian, ``ApproxDP(epsilon, delta)``: calibrated to the largest ``rho`` whose
  tight zCDP conversion (their Corollary 13) gives ``(epsilon, delta)``; the analytic
  Gaussian calibration is proven for continuous noise only, so an exact release needs
  somewhat more noise than a float one at the same ``(epsilon, delta)``;
* discrete Gaussian, ``GDP(mu)``: ``sigma = Delta' / mu``; the guarantee delivered is
  ``mu^2 / 2``-zCDP, not ``mu``-GDP (the discrete privacy profile can exceed the
  continuous one);
* discrete Laplace, ``PureDP(epsilon)``: scale ``Delta_1' / epsilon`` gives
  ``epsilon``-DP.

``noise="float"`` keeps floating-point samplers for fast exploratory runs. Such a release
is never reported ``"valid"``: its record has ``validity="invalid"`` with the reason
:data:`FLOAT_NOISE_REASON`, so no accountant or ledger books it.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpggm.exceptions import BudgetRangeError, IncompatibleBudgetError
from dpggm.mechanisms.discrete_gaussian import (
    exact_scale_supported,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from dpggm.mechanisms.grid import (
    FLOAT_SLACK,
    GRID_MARGIN,
    from_grid,
    grid_step,
    inflated_sensitivity,
    to_grid,
)
from dpggm.mechanisms.measurement import Measurement
from dpggm.mechanisms.random import RandomSource
from dpggm.privacy.budgets import (
    GDP,
    ZCDP,
    ApproxDP,
    Budget,
    NonPrivate,
    PureDP,
    accounting_total,
    parameter_of,
)
from dpggm.privacy.calibration import (
    gaussian_mu,
    gaussian_sigma,
    gaussian_zcdp,
    laplace_epsilon,
    laplace_scale,
)
from dpggm.privacy.conversion import zcdp_rho_for

__all__ = [
    "FLOAT_NOISE_REASON",
    "FLOAT_SLACK",
    "GRID_MARGIN",
    "MAX_RECORDS",
    "NOISE_MODES",
    "GaussianMechanism",
    "LaplaceMechanism",
    "NoisePart",
    "NoisyCount",
    "check_budget_range",
    "check_noise_mode",
    "exact_parameter_range",
    "grid_step",
]

NOISE_MODES = ("exact", "float")

#: The most records a release is analysed for (the allowance above assumes it); under
#: add/remove, where n is private, it bounds the count and the Gram matrix publicly.
MAX_RECORDS = 2**30

FLOAT_NOISE_REASON = (
    "noise='float': the noise was drawn by a floating-point sampler, whose set of possible "
    "outputs differs between neighbouring data sets (Mironov 2012, 'On significance of the "
    "least significant bits for differential privacy'); the stated budget holds only for "
    "the idealised continuous mechanism, and the floating-point support attack of "
    "`dpggm audit` refutes it for this release. Use noise='exact' (the default)"
)


def check_noise_mode(noise: Any) -> str:
    """Validate the ``noise`` option."""
    if not isinstance(noise, str) or noise not in NOISE_MODES:
        raise ValueError(f"noise must be 'exact' or 'float'; got {noise!r}")
    return noise


def _add_noise(
    values: Any, *, size: int, independent: bool, grid: float | None, scale: float,
    float_draw: Any, exact_sampler: Any, random_state: Any,
) -> np.ndarray:
    """``values`` plus noise of ``scale``: drawn by ``float_draw(0, scale)`` without a grid,
    else ``values`` rounded to the grid plus ``exact_sampler(scale / grid)`` grid steps."""
    values = np.asarray(values, dtype=float)
    if not independent and values.size != size:
        raise ValueError(f"this mechanism was calibrated for {size} coordinates; got {values.size}")
    if grid is None:
        return values + float_draw(0.0, scale, size=values.shape)
    coordinates = to_grid(values, grid)
    noise = exact_sampler(
        Fraction(scale) / Fraction(grid), size=values.shape, random_state=random_state
    )
    return from_grid(coordinates + np.asarray(noise, dtype=np.int64), grid)


def _zcdp_target(budget: Budget) -> float:
    """The zCDP parameter an exact Gaussian release is calibrated to for ``budget``: the
    largest ``rho`` the budget implies (:func:`~dpggm.privacy.budgets.accounting_total`;
    for ``GDP(mu)`` the largest float not above ``mu**2 / 2``, so the release never costs
    more than the ``mu**2 / 2`` that mu-GDP books in zCDP)."""
    if isinstance(budget, ApproxDP):
        # The tight conversion itself (delta = 0 is refused there: Gaussian noise is never
        # (epsilon, 0)-DP; an overflow is a BudgetRangeError upstream).
        return zcdp_rho_for(budget.epsilon, budget.delta)
    return accounting_total(budget, ZCDP).rho


@dataclass(frozen=True)
class GaussianMechanism(Measurement):
    """The Gaussian mechanism on ``size`` coordinates of l2 sensitivity ``sensitivity``.

    Parameters
    ----------
    sensitivity : float
        The l2 sensitivity of the released vector, from public parameters.
    size : int
        Number of coordinates released (fixes the grid's rounding allowance).
    budget : ApproxDP, ZCDP or GDP
        What the release may spend.
    calibration : {"analytic", "classical"}
        Calibration of an ``ApproxDP`` budget for ``noise="float"`` (the exact release
        always calibrates through zCDP; see the module documentation).
    noise : {"exact", "float"}

    Attributes
    ----------
    sigma : float
        Standard deviation of the noise in the statistic's units (for the discrete
        Gaussian, its scale parameter; its variance is slightly below ``sigma**2``).
    grid : float or None
        The lattice step of an exact release.
    delivered : Budget
        The guarantee the release delivers (see the module documentation for GDP).
    """

    sensitivity: float
    size: int
    budget: Budget | None
    calibration: str = "analytic"
    noise: str = "exact"
    fixed_sigma: float | None = None
    sigma: float = field(init=False)
    grid: float | None = field(init=False)
    delivered: Budget = field(init=False)
    derivation: str = field(init=False)

    @property
    def mechanism(self) -> str:  # type: ignore[override]
        return "discrete gaussian" if self.noise == "exact" else "gaussian"

    def __post_init__(self) -> None:
        check_noise_mode(self.noise)
        if int(self.size) != self.size or self.size < 1:
            raise ValueError(f"size must be a positive integer; got {self.size!r}")
        if self.fixed_sigma is not None:
            self._calibrate_to_sigma(float(self.fixed_sigma))
            return
        if not isinstance(self.budget, (ApproxDP, ZCDP, GDP)):
            if isinstance(self.budget, PureDP):
                raise IncompatibleBudgetError(
                    "the Gaussian mechanism cannot satisfy pure epsilon-DP: use the Laplace "
                    "mechanism, or a ZCDP / ApproxDP / GDP budget"
                )
            raise IncompatibleBudgetError(
                f"the Gaussian mechanism needs an ApproxDP, ZCDP or GDP budget; got {self.budget!r}"
            )
        budget = self.budget
        if self.noise == "float":
            sigma = gaussian_sigma(self.sensitivity, budget, calibration=self.calibration)
            grid, delivered = None, budget
            derivation = "continuous Gaussian mechanism" + (
                f" ({self.calibration} calibration)" if isinstance(budget, ApproxDP) else ""
            )
        else:
            rho_target = _zcdp_target(budget)
            grid = grid_step(
                self.sensitivity, math.sqrt(self.size), self.sensitivity / math.sqrt(2 * rho_target)
            )
            inflated = inflated_sensitivity(self.sensitivity, grid, math.sqrt(self.size))
            sigma = gaussian_sigma(inflated, ZCDP(rho_target))
            if isinstance(budget, ZCDP):
                delivered = budget
                derivation = "discrete Gaussian: rho = Delta'^2 / (2 sigma^2) (CKS 2020, Thm 4/14)"
            elif isinstance(budget, GDP):
                delivered = ZCDP(rho_target)
                derivation = (
                    "discrete Gaussian with sigma = Delta'/mu delivers mu^2/2-zCDP; mu-GDP is "
                    "not claimed for discrete noise"
                )
            else:
                delivered = budget
                derivation = (
                    f"discrete Gaussian calibrated to rho={rho_target!r}-zCDP, the largest rho "
                    "whose tight conversion (CKS 2020, Corollary 13) gives the (epsilon, delta) "
                    "asked"
                )
        object.__setattr__(self, "sigma", float(sigma))
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "delivered", delivered)
        object.__setattr__(self, "derivation", derivation)

    @classmethod
    def for_sigma(
        cls, *, sensitivity: float, size: int, sigma: float, noise: str = "exact"
    ) -> GaussianMechanism:
        """The mechanism with noise scale ``sigma``, and the smallest budget that scale pays
        for: ``Delta'^2 / (2 sigma^2)``-zCDP (exact) or ``Delta / sigma``-GDP (float), each
        rounded up."""
        return cls(sensitivity=sensitivity, size=size, budget=None, noise=noise, fixed_sigma=sigma)

    def _calibrate_to_sigma(self, sigma: float) -> None:
        if not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be a finite number > 0; got {sigma!r}")
        grid = None if self.noise == "float" else grid_step(
            self.sensitivity, math.sqrt(self.size), sigma)
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "grid", grid)
        delivered = self.privacy_map(self.sensitivity)
        object.__setattr__(self, "budget", delivered)
        object.__setattr__(self, "delivered", delivered)
        object.__setattr__(self, "derivation", (
            "continuous Gaussian mechanism: mu = Delta / sigma" if grid is None
            else "discrete Gaussian: rho = Delta'^2 / (2 sigma^2) (CKS 2020, Thm 4/14)"))

    def privacy_map(self, sensitivity: float) -> Budget:
        """The guarantee this noise gives a query of l2 ``sensitivity`` and :attr:`size`
        coordinates: ``Delta'**2 / (2 sigma**2)``-zCDP with ``Delta'`` the sensitivity on
        the grid (exact noise; CKS 2020, Thm 4 and 14), ``Delta / sigma``-GDP for float noise
        (whose ``(epsilon, delta)`` calibration is that GDP's profile); rounded up."""
        if self.grid is None:
            return GDP(gaussian_mu(sensitivity, self.sigma))
        inflated = inflated_sensitivity(float(sensitivity), self.grid, math.sqrt(self.size))
        return ZCDP(gaussian_zcdp(inflated, self.sigma))

    def release(
        self,
        values: np.ndarray,
        source: RandomSource | Any,
        *,
        independent: bool = False,
    ) -> np.ndarray:
        """``values`` plus noise (an exact multiple of :attr:`grid` for an exact release),
        every random word from ``source`` (a :class:`~dpggm.mechanisms.random.RandomSource`,
        or anything it accepts).

        With ``independent=True`` every coordinate of ``values`` is a separate query of
        :attr:`size` coordinates (for example many one-entry queries at once); the caller
        accounts for each of them.
        """
        source = RandomSource.of(source)
        return _add_noise(
            values, size=self.size, independent=independent, grid=self.grid, scale=self.sigma,
            float_draw=source.normal, exact_sampler=sample_discrete_gaussian,
            random_state=source,
        )

    def record(self, prefix: str = "") -> dict[str, Any]:
        """The public noise parameters (identical for neighbouring data sets)."""
        out: dict[str, Any] = {
            f"{prefix}distribution": "discrete-gaussian" if self.grid is not None else "gaussian",
            f"{prefix}sigma": self.sigma,
            f"{prefix}l2_sensitivity": self.sensitivity,
        }
        if self.grid is not None:
            out[f"{prefix}grid"] = self.grid
        return out


@dataclass(frozen=True)
class LaplaceMechanism(Measurement):
    """The Laplace mechanism on ``size`` coordinates of l1 sensitivity ``sensitivity``,
    for a ``PureDP`` budget; exact (discrete Laplace on a grid) by default."""

    sensitivity: float
    size: int
    budget: Budget
    noise: str = "exact"
    scale: float = field(init=False)
    grid: float | None = field(init=False)
    delivered: Budget = field(init=False)
    derivation: str = field(init=False)

    @property
    def mechanism(self) -> str:  # type: ignore[override]
        return "discrete laplace" if self.noise == "exact" else "laplace"

    def __post_init__(self) -> None:
        check_noise_mode(self.noise)
        if isinstance(self.budget, NonPrivate) or not isinstance(self.budget, PureDP):
            raise IncompatibleBudgetError(
                f"the Laplace mechanism is calibrated for a PureDP budget; got {self.budget!r}"
            )
        if int(self.size) != self.size or self.size < 1:
            raise ValueError(f"size must be a positive integer; got {self.size!r}")
        if self.noise == "float":
            scale = laplace_scale(self.sensitivity, self.budget)
            grid = None
            derivation = "continuous Laplace mechanism"
        else:
            grid = grid_step(
                self.sensitivity, float(self.size), self.sensitivity / self.budget.epsilon
            )
            scale = laplace_scale(
                inflated_sensitivity(self.sensitivity, grid, float(self.size)), self.budget)
            derivation = "discrete Laplace on the grid: epsilon = Delta_1' / scale"
        object.__setattr__(self, "scale", float(scale))
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "delivered", self.budget)
        object.__setattr__(self, "derivation", derivation)

    def privacy_map(self, sensitivity: float) -> Budget:
        """``Delta_1' / scale``-DP for a query of l1 ``sensitivity`` (``Delta_1'`` its
        sensitivity on the grid for exact noise), rounded up."""
        if self.grid is not None:
            sensitivity = inflated_sensitivity(float(sensitivity), self.grid, float(self.size))
        return PureDP(laplace_epsilon(sensitivity, self.scale))

    def release(self, values: np.ndarray, source: RandomSource | Any) -> np.ndarray:
        """``values`` plus noise, every random word from ``source``."""
        source = RandomSource.of(source)
        return _add_noise(
            values, size=self.size, independent=False, grid=self.grid, scale=self.scale,
            float_draw=source.laplace, exact_sampler=sample_discrete_laplace,
            random_state=source,
        )

    def record(self, prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {
            f"{prefix}distribution": "discrete-laplace" if self.grid is not None else "laplace",
            f"{prefix}laplace_scale": self.scale,
            f"{prefix}l1_sensitivity": self.sensitivity,
        }
        if self.grid is not None:
            out[f"{prefix}grid"] = self.grid
        return out


class NoisyCount(Measurement):
    """A count of sensitivity 1 (the number of records, private under add/remove
    neighbours): discrete Laplace for a ``PureDP`` budget, the discrete Gaussian otherwise.
    The count is an integer, so the release is one (the grid is a power of two that
    divides 1)."""

    mechanism = "noisy count"
    sensitivity = 1.0

    def __init__(self, budget: Budget, *, noise: str = "exact") -> None:
        self.inner: GaussianMechanism | LaplaceMechanism
        if isinstance(budget, PureDP):
            self.inner = LaplaceMechanism(sensitivity=1.0, size=1, budget=budget, noise=noise)
        else:
            self.inner = GaussianMechanism(sensitivity=1.0, size=1, budget=budget, noise=noise)
        self.delivered = self.inner.delivered

    def privacy_map(self, sensitivity: float) -> Budget:
        return self.inner.privacy_map(sensitivity)

    def record(self, prefix: str = "count_") -> dict[str, Any]:
        return self.inner.record(prefix)

    def release(self, count: int, source: RandomSource | Any) -> float:
        """The noisy count (an integer-valued float)."""
        return float(self.inner.release(np.array([float(count)]), source)[0])


# ----------------------------------------------------------------- budgets that work

#: A release whose statistic reaches this many grid steps leaves the exact range.
_COORDINATE_LIMIT = Fraction(2**52)
# Search window for the parameter (rho or epsilon): every float of interest lies inside.
_LOG2_LOW, _LOG2_HIGH = -1070.0, 1020.0


def _part_feasible(value: float, *, sensitivity: float, size: int, value_bound: float | None,
                   laplace: bool) -> bool:
    """Whether an exact release with parameter ``value`` (rho of a Gaussian part, epsilon of
    a Laplace part) can be drawn: the sampler accepts its scale in grid units, and the
    public bound of the statistic stays inside the exactly representable grid."""
    try:
        if laplace:
            mechanism: Any = LaplaceMechanism(sensitivity=sensitivity, size=size,
                                               budget=PureDP(value))
            scale = mechanism.scale
        else:
            mechanism = GaussianMechanism(sensitivity=sensitivity, size=size, budget=ZCDP(value))
            scale = mechanism.sigma
    except (ValueError, OverflowError, ZeroDivisionError, ArithmeticError):
        return False
    if not (math.isfinite(scale) and scale > 0 and mechanism.grid is not None):
        return False
    grid = Fraction(mechanism.grid)
    if not exact_scale_supported(Fraction(scale) / grid, laplace=laplace):
        return False
    # Headroom: the statistic plus 12 noise scales (exceeded with probability below 1e-32
    # per coordinate) must stay inside the grid's range.
    reach = (0 if value_bound is None else Fraction(value_bound)) + 12 * Fraction(scale)
    return reach / grid < _COORDINATE_LIMIT


@functools.lru_cache(maxsize=512)
def exact_parameter_range(*, sensitivity: float, size: int, value_bound: float | None = None,
                          laplace: bool = False) -> tuple[float, float]:
    """The range of budgets an exact release of ``size`` coordinates of ``sensitivity`` can
    deliver: ``rho`` of the discrete Gaussian (``laplace=False``, l2 sensitivity) or
    ``epsilon`` of the discrete Laplace (l1 sensitivity).

    Below the range the noise exceeds ``2**48`` grid steps (the exact samplers' limit);
    above it a statistic of absolute value up to ``value_bound`` (a public bound; ``None``
    when only the noise matters) no longer fits in ``2**52`` grid steps. Found by bisection
    on the mechanism's own calibration; the ends returned are feasible (every value between
    them is). Public parameters only.

    Returns
    -------
    (low, high) : tuple of float
        ``(nan, nan)`` if no budget works.
    """
    def ok(log2_value: float) -> bool:
        return _part_feasible(2.0**log2_value, sensitivity=sensitivity, size=size,
                              value_bound=value_bound, laplace=laplace)

    # A feasible point: the middle of the window, else a coarse scan.
    inside = next((x for x in (0.0, *[float(k) for k in range(-1000, 1000, 8)]) if ok(x)), None)
    if inside is None:
        return math.nan, math.nan

    def edge(feasible: float, infeasible: float) -> float:
        if ok(infeasible):
            return infeasible
        for _ in range(80):
            middle = (feasible + infeasible) / 2
            if middle in (feasible, infeasible):
                break
            if ok(middle):
                feasible = middle
            else:
                infeasible = middle
        return feasible

    low, high = edge(inside, _LOG2_LOW), edge(inside, _LOG2_HIGH)
    return 2.0**low, 2.0**high


@dataclass(frozen=True)
class NoisePart:
    """One exact noisy statistic of a release, for :func:`check_budget_range`.

    ``share`` is the part's share of the total's additive cost (as
    :func:`~dpggm.privacy.budgets.split_budget` and ``scale_budget`` split it);
    ``sensitivity`` is l2 for a Gaussian part and l1 for a Laplace part (a part is Laplace
    when the total is ``PureDP`` and the release uses the Laplace mechanism);
    ``value_bound`` a public bound on the statistic's coordinates (``None`` if there is
    none, e.g. a Gram matrix under add/remove, whose size depends on the private ``n``).
    """

    share: Fraction
    sensitivity: float
    size: int
    value_bound: float | None = None
    laplace: bool = False


def _part_parameter(total: Budget, part: NoisePart) -> float | None:
    """The parameter ``part`` receives from ``total`` (rho of a Gaussian part, epsilon of a
    Laplace part), or ``None`` when it cannot be formed."""
    share = Fraction(part.share)
    try:
        if part.laplace:
            return _to_float(Fraction(parameter_of(total)[1]) * share)
        if isinstance(total, ZCDP):
            return _to_float(Fraction(total.rho) * share)
        if isinstance(total, (GDP, PureDP)):
            return _to_float(Fraction(parameter_of(total)[1]) ** 2 / 2 * share)
        return _quiet_rho_for(total.epsilon * float(share), total.delta * float(share))
    except (ValueError, OverflowError, ArithmeticError):
        return None


def _quiet_rho_for(epsilon: float, delta: float) -> float:
    """:func:`zcdp_rho_for` without the root finder's overflow warnings, which far outside
    the range say nothing to the user (the error that follows does)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return zcdp_rho_for(epsilon, delta)


def _part_fits(total: Budget, part: NoisePart) -> bool:
    value = _part_parameter(total, part)
    return value is not None and value > 0 and math.isfinite(value) and _part_feasible(
        value, sensitivity=float(part.sensitivity), size=int(part.size),
        value_bound=part.value_bound, laplace=part.laplace)


@functools.lru_cache(maxsize=256)
def _total_interval(total: Budget, part: NoisePart) -> tuple[str, float, float, float]:
    """The interval of the total's parameter for which ``part`` is feasible."""
    low, high = exact_parameter_range(sensitivity=float(part.sensitivity), size=int(part.size),
                                      value_bound=part.value_bound, laplace=part.laplace)
    share = Fraction(part.share)
    if math.isnan(low):
        return parameter_of(total) + (math.inf, -math.inf)
    if part.laplace:
        name, value = parameter_of(total)
        return name, value, _to_float(Fraction(low) / share), _to_float(Fraction(high) / share)
    if isinstance(total, ZCDP):
        return "rho", total.rho, _to_float(Fraction(low) / share), _to_float(Fraction(high) / share)
    if isinstance(total, (GDP, PureDP)):
        # Accounted in zCDP as mu^2 / 2 (epsilon^2 / 2): the part gets share * that.
        name, value = parameter_of(total)
        return (name, value, math.sqrt(_to_float(2 * Fraction(low) / share)),
                math.sqrt(_to_float(2 * Fraction(high) / share)))
    # ApproxDP(eps, delta): the part is ApproxDP(share eps, share delta), calibrated to the
    # largest rho with that conversion; the interval is found on epsilon at this delta.
    delta = total.delta * float(share)

    def rho_of(epsilon: float) -> float:
        try:
            return _quiet_rho_for(epsilon * float(share), delta)
        except (ValueError, OverflowError, ArithmeticError):
            # Out of the conversion's reach: an underflow at the bottom, an overflow on top.
            return 0.0 if epsilon < 1 else math.inf

    def bisect(target: float) -> float:
        lo, hi = -1070.0, 1020.0
        for _ in range(90):
            middle = (lo + hi) / 2
            if rho_of(2.0**middle) < target:
                lo = middle
            else:
                hi = middle
        return 2.0**hi if target == low else 2.0**lo

    return "epsilon", total.epsilon, bisect(low), bisect(high)


def _three_digits(value: float, *, up: bool) -> str:
    """``value`` to three significant digits, rounded up or down (never across it)."""
    if not (math.isfinite(value) and value > 0):
        return f"{value:.3g}"
    exponent = math.floor(math.log10(value)) - 2
    mantissa = value / 10.0**exponent
    mantissa = math.ceil(mantissa * (1 - 1e-12)) if up else math.floor(mantissa * (1 + 1e-12))
    text = f"{mantissa * 10.0**exponent:.3g}"
    while (float(text) < value) if up else (float(text) > value):
        mantissa += 1 if up else -1
        text = f"{mantissa * 10.0**exponent:.3g}"
    return text


def _to_float(value: Fraction) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf


def check_budget_range(total: Budget, parts: list[NoisePart] | tuple[NoisePart, ...], *,
                       release: str, minimum: float = 0.0) -> None:
    """Refuse, before any random draw, a ``total`` budget for which one of the release's
    exact noisy ``parts`` cannot be drawn: a one-line
    :class:`~dpggm.exceptions.BudgetRangeError` naming the budget's parameter and the
    range that works for this release (computed from public parameters only).

    ``release`` describes the release in the message (e.g. ``"the second moment of p = 5
    columns"``); ``minimum`` is a further lower bound on the total's parameter set by
    another step (AboveThreshold, say). A ``NonPrivate`` total passes; without parts only a
    zero budget is refused.
    """
    if isinstance(total, NonPrivate):
        return
    name, value = parameter_of(total)
    if not parts:
        if value > 0:
            return
        raise BudgetRangeError(
            f"budget: {name} must be > 0 for {release}; got {name}={value!r} (a zero budget "
            "allows no release; use NonPrivate() for an exact reference run)",
            parameter=name, value=value, low=0.0, high=math.inf,
        )
    if value >= minimum and value > 0 and all(_part_fits(total, part) for part in parts):
        return  # the usual case: no range needs to be computed
    lows, highs = [minimum], []
    for part in parts:
        _, _, low, high = _total_interval(total, part)
        lows.append(low)
        highs.append(high)
    # Shares are split in rounded floats: keep a relative margin inside the edges found.
    low, high = max(lows) * (1 + 1e-9), min(highs) * (1 - 1e-9)
    if low <= value <= high and value > 0:
        return
    if not low <= high:
        raise BudgetRangeError(
            f"budget: no {name} can be delivered exactly for {release} (the noise would not "
            f"fit the exact samplers' grid); got {total}",
            parameter=name, value=value,
        )
    if value == 0:
        why = "a zero budget allows no release; use NonPrivate() for an exact reference run"
    elif value < low:
        why = ("smaller budgets call for noise beyond 2**48 grid steps, which the exact "
               "samplers cannot draw (and which would hide every value anyway)")
    else:
        why = ("larger budgets call for a grid so fine that the statistic no longer fits in "
               "2**52 steps; use NonPrivate() for an exact reference run")
    # Three significant digits, rounded inwards so that the range stated still works;
    # below the smallest normal float the lower end is "any positive value".
    top = _three_digits(high, up=False)
    interval = f"(0, {top}]" if low < 2.3e-308 else f"[{_three_digits(low, up=True)}, {top}]"
    raise BudgetRangeError(
        f"budget: {name} must be in {interval} for {release}; got {name}={value!r} ({why})",
        parameter=name, value=value, low=low, high=high,
    )
