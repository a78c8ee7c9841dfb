"""Conversions between privacy notions.

All functions work on plain floats; the budget classes in :mod:`dpggm.privacy.budgets`
wrap them. Every conversion here is the tight one the literature offers:

* pure DP to (epsilon, delta): the privacy profile of randomised response,
  ``delta(eps') = (e^eps - e^eps') / (1 + e^eps)``;
* rho-zCDP to (epsilon, delta): Canonne, Kamath & Steinke (2020), Corollary 13,
  ``delta = inf_{a>1} exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)^a``, inverted for eps as
  ``eps = inf_{a>1} a rho + log(1 - 1/a) - (log delta + log a) / (a - 1)``;
* mu-GDP to (epsilon, delta): the exact profile
  ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Dong, Roth & Su 2022,
  Corollary 2.13), and its inverse in mu, which is also the analytic Gaussian mechanism
  of Balle & Wang (2018).

Rounding
    Every figure here is aimed *inside* its target, never on the edge: a profile
    (:func:`zcdp_delta`, :func:`gdp_delta`) is evaluated in floating point and then raised
    by :data:`PROFILE_MARGIN` (a relative 2**-20) plus an estimate of the rounding error of
    the differences it forms, so that it bounds the exact profile from above; every
    conversion is then settled against that raised profile (an epsilon is the smallest
    float, a rho or mu the largest, whose raised profile meets delta). So the exact delta
    of every figure returned is at most the delta asked for, with the margin to spare
    (checked against 60-digit mpmath in the tests).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from dpggm._lazy import LazyModule

# SciPy is imported on first use: the command line's budget commands need no root finding.
optimize = LazyModule("scipy.optimize")
special = LazyModule("scipy.special")

__all__ = [
    "PROFILE_MARGIN",
    "gdp_delta",
    "gdp_mu_for",
    "gdp_to_approx_epsilon",
    "pure_to_approx_epsilon",
    "zcdp_delta",
    "zcdp_rho_for",
    "zcdp_to_approx_epsilon",
]


#: Relative allowance by which every delta computed here is raised above its
#: floating-point value (the exact profile is then below it; see the module notes).
PROFILE_MARGIN = 2.0**-20

_UNIT = 2.0**-52  # the spacing of floats at 1: every elementary operation errs by at most half


def _raise(delta: float, log_error: float = 0.0) -> float:
    """``delta`` raised above its rounding: by an absolute error ``log_error`` of its
    logarithm, then by the relative :data:`PROFILE_MARGIN`."""
    if delta <= 0.0:
        return 0.0
    if log_error > 1.0:
        return 1.0  # the rounding swamps the figure: only the trivial bound is sure
    return min(1.0, delta * math.exp(log_error) * (1.0 + PROFILE_MARGIN))


def _check_delta(delta: float, *, allow_zero: bool = False) -> float:
    delta = float(delta)
    low_ok = delta >= 0 if allow_zero else delta > 0
    if not (math.isfinite(delta) and low_ok and delta < 1):
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"delta must be in {interval}; got {delta!r}")
    return delta


def _check_nonnegative(name: str, value: float) -> float:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a real number; got bool")
    value = float(value)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return value


def _pure_delta(epsilon: float, epsilon_prime: float) -> float:
    # (e^eps - e^eps') / (1 + e^eps), written so that neither cancellation nor overflow
    # occurs: eps - eps' is exact for nearby values and expm1 keeps its digits; raised
    # by the margin (an upper bound of the exact profile).
    return _raise(-math.expm1(epsilon_prime - epsilon) / (1.0 + math.exp(-epsilon)))


def pure_to_approx_epsilon(epsilon: float, delta: float) -> float:
    """Smallest ``eps'`` such that every ``epsilon``-DP mechanism is ``(eps', delta)``-DP
    (the profile of randomised response, raised by the margin, is at most ``delta``)."""
    epsilon = _check_nonnegative("epsilon", epsilon)
    delta = _check_delta(delta, allow_zero=True)
    if delta == 0:
        return epsilon
    if _pure_delta(epsilon, 0.0) <= delta:
        return 0.0
    # e^eps' = e^eps - delta (1 + e^eps), i.e. eps' = eps + log1p(-delta (1 + e^-eps)),
    # aimed at delta less the margin.
    target = delta / (1.0 + PROFILE_MARGIN)
    epsilon_prime = max(0.0, epsilon + math.log1p(-target * (1.0 + math.exp(-epsilon))))
    # For a tiny delta, eps' sits within a few ulps of eps, where one ulp changes the
    # profile by a large factor: settle on the smallest float that meets delta.
    while _pure_delta(epsilon, epsilon_prime) > delta:
        epsilon_prime = math.nextafter(epsilon_prime, math.inf)
    while epsilon_prime > 0 and _pure_delta(epsilon, math.nextafter(epsilon_prime, 0.0)) <= delta:
        epsilon_prime = math.nextafter(epsilon_prime, 0.0)
    return epsilon_prime


def _log_one_minus_inverse(t: float, excess: float) -> float:
    """``log(1 - 1/a)`` at ``a = 1 + excess``, ``excess = e^t``, to full relative accuracy.

    Near ``a = 1`` it is ``t - log1p(excess)`` (forming ``1/a`` would lose the digits of
    ``1 - 1/a``); for large ``a`` that difference cancels, and ``log1p(-1/a)`` is exact.
    """
    if excess < 1.0:
        return t - math.log1p(excess)
    return math.log1p(-1.0 / (1.0 + excess))


def _zcdp_log_delta(rho: float, epsilon: float, t: float) -> float:
    """log of the CKS bound at the order ``a = 1 + e^t``.

    Working in ``t = log(a - 1)`` keeps ``a - 1`` exact for orders close to 1, where
    forming ``a`` first would lose its low digits.
    """
    excess = math.exp(t)
    order = 1.0 + excess
    return excess * (order * rho - epsilon) - t + order * _log_one_minus_inverse(t, excess)


def _zcdp_log_delta_error(rho: float, epsilon: float, t: float) -> float:
    """A bound on the rounding error of :func:`_zcdp_log_delta` (a few units in the last
    place of each term it adds, of ``t`` against ``log(e^t)`` and of ``1 + e^t``)."""
    excess = math.exp(t)
    order = 1.0 + excess
    terms = (excess * (order * rho + epsilon) + excess * order * rho + abs(t) + 1.0
             + order * abs(_log_one_minus_inverse(t, excess)))
    return 8.0 * _UNIT * terms


def _zcdp_log_delta_upper(rho: float, epsilon: float, t: float) -> float:
    """log of the CKS bound at the order ``a = 1 + e^t``, raised above its rounding and by
    the margin: at least the exact log bound at that order."""
    return (_zcdp_log_delta(rho, epsilon, t) + _zcdp_log_delta_error(rho, epsilon, t)
            + math.log1p(PROFILE_MARGIN))


def _best_order(rho: float, epsilon: float) -> float:
    """``t = log(a - 1)`` of (nearly) the best order for the delta of ``rho``-zCDP at
    ``epsilon``: the exponent is convex in ``a`` on ``(1, inf)``. Any order gives a valid
    bound, so only the bound's value at the order found matters."""
    return float(optimize.minimize_scalar(
        lambda t: _zcdp_log_delta(rho, epsilon, t),
        bounds=(-30.0, 30.0),
        method="bounded",
        options={"xatol": 1e-12},
    ).x)


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Tight ``delta`` of ``rho``-zCDP at ``epsilon`` (Canonne, Kamath & Steinke 2020),
    raised above its rounding and by :data:`PROFILE_MARGIN`: never below the exact one."""
    rho = _check_nonnegative("rho", rho)
    epsilon = _check_nonnegative("epsilon", epsilon)
    if rho == 0:
        return 0.0
    t = _best_order(rho, epsilon)
    return math.exp(min(0.0, _zcdp_log_delta_upper(rho, epsilon, t)))


def zcdp_to_approx_epsilon(rho: float, delta: float) -> float:
    """Smallest ``epsilon`` for which ``rho``-zCDP implies ``(epsilon, delta)``-DP, settled
    so that the raised bound (see :func:`zcdp_delta`) at the order used meets ``delta``:
    never below the exact tight epsilon."""
    delta = _check_delta(delta)
    rho = _check_nonnegative("rho", rho)
    if rho == 0:
        return 0.0
    log_delta = math.log(delta)

    def eps_at(t: float) -> float:
        # The delta bound solved for epsilon at the order a = 1 + e^t (see _zcdp_log_delta).
        excess = math.exp(t)
        return (
            (1.0 + excess) * rho
            + _log_one_minus_inverse(t, excess)
            - (log_delta + math.log1p(excess)) / excess
        )

    # eps_at is unimodal in t = log(a - 1); bracket around the classical optimum
    # a ~ 1 + sqrt(log(1/delta) / rho) before a bounded scalar search.
    ratio = -log_delta / rho
    if not ratio < 1e300:
        # rho so small that the best order overflows: the simple conversion (Bun & Steinke
        # 2016, Prop. 1.3), an upper bound of the tight one, raised by the margin.
        simple = rho + 2.0 * math.sqrt(rho) * math.sqrt(-log_delta)
        return math.nextafter(simple * (1.0 + PROFILE_MARGIN), math.inf)
    guess = math.log(math.sqrt(ratio) + 1e-12)
    best = min(
        (
            optimize.minimize_scalar(
                eps_at, bounds=(guess - w, guess + w), method="bounded", options={"xatol": 1e-13}
            )
            for w in (3.0, 12.0, 40.0)
        ),
        key=lambda r: r.fun,
    )
    t = float(best.x)
    excess = math.exp(t)
    # Every order a gives a valid bound, so the guarantee only needs the raised bound at the
    # order found to meet delta; it falls by e^t per unit of epsilon.
    epsilon = max(0.0, float(best.fun))
    for _ in range(200):
        gap = _zcdp_log_delta_upper(rho, epsilon, t) - log_delta
        if gap <= 0:
            break
        epsilon = math.nextafter(epsilon + gap / excess, math.inf)
    else:
        raise ArithmeticError(f"no epsilon found for rho={rho!r}, delta={delta!r}")
    return _smallest_sound_epsilon(rho, delta, epsilon)


def _smallest_sound_epsilon(rho: float, delta: float, epsilon: float) -> float:
    """Move a sound ``epsilon`` down to the smallest float at which :func:`zcdp_delta` (the
    bound at its own best order) still meets ``delta``: the two searches for the best
    order agree only to a few ulps, and an epsilon taken from :func:`zcdp_rho_for`'s rho
    must come back no larger than the epsilon it was found for."""

    def sound(value: float) -> bool:
        return value >= 0 and zcdp_delta(rho, value) <= delta

    step, low = math.ulp(epsilon), None
    while epsilon > 0:
        candidate = max(0.0, epsilon - step)
        if not sound(candidate):
            low = candidate
            break
        epsilon, step = candidate, 2.0 * step
    if low is None:
        return epsilon
    # Bisection between an unsound low and a sound epsilon, on floats.
    for _ in range(64):
        middle = low + (epsilon - low) / 2.0
        if middle in (low, epsilon):
            break
        if sound(middle):
            epsilon = middle
        else:
            low = middle
    return epsilon


def _largest_parameter(delta_at: Any, epsilon: float, delta: float) -> float:
    """The largest float ``x`` with ``delta_at(x, epsilon) <= delta``, for a privacy profile
    ``delta_at`` increasing in ``x``: root-finding on ``log x``, then stepped down until the
    profile, evaluated at the float returned, meets ``delta``."""
    delta = _check_delta(delta)
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0; got {epsilon!r}")

    def excess(log_x: float) -> float:
        return math.log(delta_at(math.exp(log_x), epsilon) + 1e-300) - math.log(delta)

    low, high = -1.0, 1.0
    while excess(low) > 0:
        low -= 2.0
    while excess(high) < 0:
        high += 2.0
    value = math.exp(optimize.brentq(excess, low, high, xtol=1e-15, rtol=4 * np.finfo(float).eps))
    # The root can round either way: the calibrated noise must never be below what the
    # guarantee requires.
    while delta_at(value, epsilon) > delta:
        value = math.nextafter(value, 0.0)
    return value


@functools.lru_cache(maxsize=1024)
def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """Largest float ``rho`` whose tight zCDP conversion gives ``(epsilon, delta)``-DP, the
    bound raised as in :func:`zcdp_delta` (the exact delta at the ``rho`` returned is below
    ``delta`` by at least the margin).

    Used to calibrate mechanisms whose (epsilon, delta) guarantee is proven through zCDP
    (the discrete Gaussian).
    """
    return _largest_parameter(zcdp_delta, epsilon, delta)


def _log_ndtr_error(x: float, log_p: float) -> float:
    """A bound on the absolute error of ``log Phi(x)`` as computed: a few units in the last
    place of the value, plus the rounding of ``x`` itself (relative ``2 u``) times the
    slope ``phi(x) / Phi(x) <= |x| + 1``."""
    return 4.0 * _UNIT * abs(log_p) + 4.0 * _UNIT * abs(x) * (abs(x) + 1.0)


def gdp_delta(mu: float, epsilon: float) -> float:
    """``delta(epsilon)`` of ``mu``-GDP, computed without catastrophic cancellation and
    raised above its rounding (and by :data:`PROFILE_MARGIN`): never below the exact one.

    ``delta = Phi(a) (1 - e^r)`` with ``a = -epsilon/mu + mu/2`` and
    ``r = epsilon + log Phi(a - mu) - log Phi(a) <= 0``; for a small ``mu`` the two
    logarithms nearly cancel in ``r``, and the bound allows for their rounding.
    """
    mu = _check_nonnegative("mu", mu)
    epsilon = _check_nonnegative("epsilon", epsilon)
    if mu == 0:
        return 0.0
    a = -epsilon / mu + mu / 2
    b = -epsilon / mu - mu / 2
    log_pa = float(special.log_ndtr(a))
    log_pb = float(special.log_ndtr(b))
    error_a = _log_ndtr_error(a, log_pa)
    ratio_log = epsilon + log_pb - log_pa
    ratio_error = (error_a + _log_ndtr_error(b, log_pb)
                   + 4.0 * _UNIT * (epsilon + abs(log_pa) + abs(log_pb)))
    # 1 - e^r is decreasing in r: the smallest r the rounding allows bounds delta above.
    lowest = ratio_log - ratio_error
    if lowest >= 0:
        return 0.0
    log_delta = log_pa + error_a + 4.0 * _UNIT + math.log(-math.expm1(lowest))
    if log_delta >= 0:
        return 1.0
    # Below the smallest float the figure is 0, as its exact value rounds (far below any
    # delta a conversion aims at).
    return _raise(math.exp(log_delta))


def gdp_to_approx_epsilon(mu: float, delta: float) -> float:
    """Smallest ``epsilon`` with ``delta(epsilon) <= delta`` for ``mu``-GDP, the profile
    raised as in :func:`gdp_delta` (never below the exact epsilon)."""
    delta = _check_delta(delta)
    mu = _check_nonnegative("mu", mu)
    if mu == 0 or gdp_delta(mu, 0.0) <= delta:
        return 0.0
    high = 1.0
    while gdp_delta(mu, high) > delta:
        high *= 2.0
    epsilon = float(
        optimize.brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, high, xtol=1e-15, rtol=1e-15)
    )
    # brentq may stop on either side of the root; the guarantee needs the side where
    # delta(epsilon) <= delta.
    while gdp_delta(mu, epsilon) > delta:
        epsilon = math.nextafter(epsilon, math.inf)
    return epsilon


def gdp_mu_for(epsilon: float, delta: float) -> float:
    """Largest ``mu`` for which ``mu``-GDP implies ``(epsilon, delta)``-DP.

    This is the analytic Gaussian calibration: a Gaussian mechanism with sensitivity
    ``D`` and standard deviation ``D / mu`` is ``(epsilon, delta)``-DP exactly when
    ``delta(mu, epsilon) <= delta`` (Balle & Wang 2018, Theorem 8). The profile is raised
    as in :func:`gdp_delta`, so the exact delta at the ``mu`` returned is below ``delta``
    by at least the margin.
    """
    return _largest_parameter(gdp_delta, epsilon, delta)
