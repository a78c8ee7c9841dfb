"""Noise calibration: from a sensitivity and a budget to a noise scale.

Privacy
-------
Every function here maps *public* quantities (a sensitivity computed from declared
bounds, and a budget) to a noise scale; none of them looks at data.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from fractions import Fraction

from dpggm.privacy.budgets import (
    GDP,
    ZCDP,
    ApproxDP,
    Budget,
    NonPrivate,
    PureDP,
    float_at_least,
)
from dpggm.privacy.conversion import PROFILE_MARGIN, gdp_delta, gdp_mu_for

__all__ = [
    "ANALYTIC_DELTA_MARGIN",
    "EXPONENTIAL_MECHANISM_ZCDP",
    "PURE_DP_ZCDP",
    "classical_gaussian_sigma",
    "epsilon_for_zcdp",
    "gaussian_mu",
    "gaussian_sigma",
    "gaussian_zcdp",
    "laplace_epsilon",
    "laplace_scale",
]

#: Relative margin below delta that the analytic calibration (like every conversion, see
#: :data:`~dpggm.privacy.conversion.PROFILE_MARGIN`) aims at.
ANALYTIC_DELTA_MARGIN = PROFILE_MARGIN

#: ``rho / epsilon**2`` of the exponential mechanism: ``epsilon``-DP selection is
#: ``epsilon**2 / 8``-zCDP (Cesar & Rogers 2021, Lemma 3.2).
EXPONENTIAL_MECHANISM_ZCDP = Fraction(1, 8)
#: ``rho / epsilon**2`` of any pure ``epsilon``-DP mechanism: ``epsilon**2 / 2``-zCDP
#: (Bun & Steinke 2016, Proposition 1.4).
PURE_DP_ZCDP = Fraction(1, 2)

_LARGEST_FLOAT = 1.7976931348623157e308


def _check_sensitivity(sensitivity: float) -> float:
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, numbers.Real):
        raise TypeError(f"sensitivity must be a real number; got {type(sensitivity).__name__}")
    sensitivity = float(sensitivity)
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be a finite number > 0; got {sensitivity!r}")
    return sensitivity


def _round_up_until(scale: float, enough: Callable[[float], bool]) -> float:
    # A quotient like D / mu can round to a float just below the exact scale; the noise
    # must never be (even by an ulp) smaller than the guarantee requires.
    while not enough(scale):
        scale = math.nextafter(scale, math.inf)
    return scale


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be > 0 to calibrate noise; got {value!r}")


def classical_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """The classical calibration ``sigma = D sqrt(2 ln(1.25/delta)) / epsilon``.

    Dwork & Roth (2014, Theorem A.1) prove it only for ``epsilon < 1``; larger epsilon is
    refused rather than silently mis-calibrated.
    """
    sensitivity = _check_sensitivity(sensitivity)
    budget = ApproxDP(epsilon, delta)
    _positive("epsilon", budget.epsilon)
    _positive("delta", budget.delta)
    if budget.epsilon >= 1:
        raise ValueError(
            "the classical Gaussian calibration is proven only for epsilon < 1; got "
            f"epsilon={budget.epsilon!r}. Use calibration='analytic' (valid for every epsilon)."
        )
    return sensitivity * math.sqrt(2 * math.log(1.25 / budget.delta)) / budget.epsilon


def gaussian_sigma(sensitivity: float, budget: Budget, *, calibration: str = "analytic") -> float:
    """Standard deviation of the Gaussian mechanism for ``budget``.

    Parameters
    ----------
    sensitivity : float
        The l2 sensitivity of the released quantity, from public parameters.
    budget : ApproxDP, ZCDP or GDP
        ``ApproxDP`` uses the analytic calibration of Balle & Wang (2018) by default
        (valid for every epsilon) or, with ``calibration="classical"``, the textbook
        formula (refused for ``epsilon >= 1``). ``ZCDP(rho)`` gives ``D / sqrt(2 rho)``;
        ``GDP(mu)`` gives ``D / mu``.
    calibration : {"analytic", "classical"}
        Only used for ``ApproxDP``.

    Returns
    -------
    float
        The noise standard deviation.
    """
    sensitivity = _check_sensitivity(sensitivity)
    if calibration not in ("analytic", "classical"):
        raise ValueError(f"calibration must be 'analytic' or 'classical'; got {calibration!r}")
    if isinstance(budget, ApproxDP):
        if calibration == "classical":
            return classical_gaussian_sigma(sensitivity, budget.epsilon, budget.delta)
        _positive("epsilon", budget.epsilon)
        _positive("delta", budget.delta)
        epsilon, delta = budget.epsilon, budget.delta
        # The profile is evaluated in floating point, with a relative error that grows
        # as epsilon shrinks; gdp_delta raises it by a 2^-20 relative margin and by an
        # estimate of its rounding, which keeps the true delta(sigma) below delta.
        return _round_up_until(
            sensitivity / gdp_mu_for(epsilon, delta),
            lambda s: gdp_delta(sensitivity / s, epsilon) <= delta,
        )
    if isinstance(budget, ZCDP):
        _positive("rho", budget.rho)
        # sigma^2 >= D^2 / (2 rho), checked exactly.
        return _round_up_until(
            sensitivity / math.sqrt(2 * budget.rho),
            lambda s: 2 * Fraction(budget.rho) * Fraction(s) ** 2 >= Fraction(sensitivity) ** 2,
        )
    if isinstance(budget, GDP):
        _positive("mu", budget.mu)
        return _round_up_until(
            sensitivity / budget.mu,
            lambda s: Fraction(budget.mu) * Fraction(s) >= Fraction(sensitivity),
        )
    if isinstance(budget, PureDP):
        raise TypeError("the Gaussian mechanism cannot satisfy pure epsilon-DP; use laplace_scale")
    if isinstance(budget, NonPrivate):
        raise TypeError("a NonPrivate run adds no noise; there is no sigma to calibrate")
    raise TypeError(f"budget must be ApproxDP, ZCDP or GDP; got {type(budget).__name__}")


def laplace_scale(sensitivity: float, budget: Budget) -> float:
    """Scale ``D1 / epsilon`` of the Laplace mechanism for ``PureDP(epsilon)``.

    ``sensitivity`` is the l1 sensitivity.
    """
    sensitivity = _check_sensitivity(sensitivity)
    if not isinstance(budget, PureDP):
        raise TypeError(
            f"the Laplace mechanism is calibrated for PureDP; got {type(budget).__name__}"
        )
    _positive("epsilon", budget.epsilon)
    return _round_up_until(
        sensitivity / budget.epsilon,
        lambda b: Fraction(budget.epsilon) * Fraction(b) >= Fraction(sensitivity),
    )


def epsilon_for_zcdp(rho: float | Fraction, *, coefficient: Fraction = EXPONENTIAL_MECHANISM_ZCDP
                     ) -> float:
    """The largest float ``epsilon`` with ``coefficient * epsilon**2 <= rho``, exactly.

    The one conversion from a zCDP share to the ``epsilon`` of a pure-DP step run inside
    a zCDP budget: the exponential mechanism (``coefficient = 1/8``, the default) or any
    other pure-DP mechanism (:data:`PURE_DP_ZCDP`, ``1/2``). A square root rounded to
    nearest exceeds the share for about half the values; the float returned here is
    checked against the share in exact rational arithmetic, so the step never costs more
    than it was booked for.

    Parameters
    ----------
    rho : float or fractions.Fraction
        The zCDP share, finite and >= 0 (a float at its exact binary value).
    coefficient : fractions.Fraction, default=EXPONENTIAL_MECHANISM_ZCDP
        ``rho / epsilon**2`` of the step, > 0.

    Returns
    -------
    float
        ``0.0`` for ``rho = 0``; never above the largest finite float.
    """
    exact = Fraction(rho)
    factor = Fraction(coefficient)
    if not factor > 0:
        raise ValueError(f"coefficient must be > 0; got {coefficient!r}")
    if exact < 0:
        raise ValueError(f"rho must be >= 0; got {rho!r}")
    square = exact / factor
    if square == 0:
        return 0.0
    # sqrt(num / den) from the logarithms of the integers: no overflow or underflow where
    # float(square) would; the estimate is then moved to the exact edge.
    if square >= Fraction(_LARGEST_FLOAT) ** 2:
        return _LARGEST_FLOAT
    estimate = math.exp(0.5 * (math.log(square.numerator) - math.log(square.denominator)))
    epsilon = min(estimate, _LARGEST_FLOAT)
    while epsilon > 0 and Fraction(epsilon) ** 2 > square:
        epsilon = math.nextafter(epsilon, 0.0)
    while epsilon < _LARGEST_FLOAT and Fraction(math.nextafter(epsilon, math.inf)) ** 2 <= square:
        epsilon = math.nextafter(epsilon, math.inf)
    return epsilon


def gaussian_zcdp(sensitivity: float, sigma: float | Fraction) -> float:
    """``rho = Delta**2 / (2 sigma**2)``: the zCDP a Gaussian (or discrete Gaussian) noise of
    scale ``sigma`` gives a query of l2 sensitivity ``Delta`` (Bun & Steinke 2016, Prop.
    1.6; Canonne, Kamath & Steinke 2020, Thm 4 and 14 for the discrete one).

    The one place this map is computed: exactly, from the binary values of the floats,
    rounded **up** (a stated guarantee is never below the true loss); ``sigma`` may be an
    exact :class:`~fractions.Fraction` (a lattice scale). The inverse is
    :func:`gaussian_sigma` with a ``ZCDP`` budget.
    """
    sensitivity = _check_sensitivity(sensitivity)
    if not (math.isfinite(float(sigma)) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0; got {sigma!r}")
    rho = float_at_least(Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2))
    if not math.isfinite(rho):
        raise ValueError(
            f"sigma={sigma!r} is too small for the sensitivity {sensitivity!r}: "
            "rho = Delta**2 / (2 sigma**2) overflows"
        )
    return rho


def gaussian_mu(sensitivity: float, sigma: float) -> float:
    """``mu = Delta / sigma``: the Gaussian DP of continuous Gaussian noise of scale
    ``sigma`` on a query of l2 sensitivity ``Delta`` (Dong, Roth & Su 2022, Thm 2.7),
    rounded up (checked exactly)."""
    sensitivity = _check_sensitivity(sensitivity)
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0; got {sigma!r}")
    mu = sensitivity / sigma
    if not math.isfinite(mu):
        raise ValueError(
            f"sigma={sigma!r} is too small for the sensitivity {sensitivity!r}: the privacy "
            "parameter Delta / sigma overflows"
        )
    return _round_up_until(mu, lambda m: Fraction(m) * Fraction(sigma) >= Fraction(sensitivity))


def laplace_epsilon(sensitivity: float, scale: float) -> float:
    """``epsilon = Delta_1 / scale``: the pure DP of Laplace (or discrete Laplace) noise of
    ``scale`` on a query of l1 sensitivity ``Delta_1``, rounded up (checked exactly). The
    inverse of :func:`laplace_scale`."""
    sensitivity = _check_sensitivity(sensitivity)
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0; got {scale!r}")
    return _round_up_until(
        sensitivity / scale, lambda e: Fraction(e) * Fraction(scale) >= Fraction(sensitivity)
    )
