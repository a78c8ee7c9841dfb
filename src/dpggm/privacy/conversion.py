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
    "gdp_delta",
    "gdp_mu_for",
    "gdp_to_approx_epsilon",
    "pure_to_approx_epsilon",
    "zcdp_delta",
    "zcdp_rho_for",
    "zcdp_to_approx_epsilon",
]


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
    # occurs: eps - eps' is exact for nearby values and expm1 keeps its digits.
    return -math.expm1(epsilon_prime - epsilon) / (1.0 + math.exp(-epsilon))


def pure_to_approx_epsilon(epsilon: float, delta: float) -> float:
    """Smallest ``eps'`` such that every ``epsilon``-DP mechanism is ``(eps', delta)``-DP."""
    epsilon = _check_nonnegative("epsilon", epsilon)
    delta = _check_delta(delta, allow_zero=True)
    if delta == 0:
        return epsilon
    if _pure_delta(epsilon, 0.0) <= delta:
        return 0.0
    # e^eps' = e^eps - delta (1 + e^eps), i.e. eps' = eps + log1p(-delta (1 + e^-eps)).
    epsilon_prime = max(0.0, epsilon + math.log1p(-delta * (1.0 + math.exp(-epsilon))))
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


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Tight ``delta`` of ``rho``-zCDP at ``epsilon`` (Canonne, Kamath & Steinke 2020)."""
    rho = _check_nonnegative("rho", rho)
    epsilon = _check_nonnegative("epsilon", epsilon)
    if rho == 0:
        return 0.0
    # The exponent is convex in a on (1, inf); search on log(a - 1).
    res = optimize.minimize_scalar(
        lambda t: _zcdp_log_delta(rho, epsilon, t),
        bounds=(-30.0, 30.0),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return float(min(1.0, math.exp(res.fun)))


def zcdp_to_approx_epsilon(rho: float, delta: float) -> float:
    """Smallest ``epsilon`` for which ``rho``-zCDP implies ``(epsilon, delta)``-DP."""
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
    guess = math.log(math.sqrt(-log_delta / rho) + 1e-12)
    best = min(
        (
            optimize.minimize_scalar(
                eps_at, bounds=(guess - w, guess + w), method="bounded", options={"xatol": 1e-13}
            )
            for w in (3.0, 12.0, 40.0)
        ),
        key=lambda r: r.fun,
    )
    epsilon = float(best.fun)
    if epsilon <= 0:
        return 0.0
    # Every order a gives a valid bound, so the guarantee only needs the bound at the order
    # found to hold; rounding can leave best.fun an ulp or two short of it.
    while _zcdp_log_delta(rho, epsilon, best.x) > log_delta:
        epsilon = math.nextafter(epsilon, math.inf)
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
    """Largest float ``rho`` whose tight zCDP conversion gives ``(epsilon, delta)``-DP.

    Used to calibrate mechanisms whose (epsilon, delta) guarantee is proven through zCDP
    (the discrete Gaussian).
    """
    return _largest_parameter(zcdp_delta, epsilon, delta)


def gdp_delta(mu: float, epsilon: float) -> float:
    """Exact ``delta(epsilon)`` of ``mu``-GDP, computed without catastrophic cancellation."""
    mu = _check_nonnegative("mu", mu)
    epsilon = _check_nonnegative("epsilon", epsilon)
    if mu == 0:
        return 0.0
    a = -epsilon / mu + mu / 2
    b = -epsilon / mu - mu / 2
    log_pa = special.log_ndtr(a)
    log_pb = special.log_ndtr(b)
    ratio_log = epsilon + log_pb - log_pa
    if ratio_log >= 0:
        return 0.0
    return float(math.exp(log_pa) * -math.expm1(ratio_log))


def gdp_to_approx_epsilon(mu: float, delta: float) -> float:
    """Smallest ``epsilon`` with ``delta(epsilon) <= delta`` for ``mu``-GDP."""
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
    ``gdp_delta(mu, epsilon) <= delta`` (Balle & Wang 2018, Theorem 8).
    """
    return _largest_parameter(gdp_delta, epsilon, delta)
