"""Privacy profiles in 60-digit arithmetic (mpmath), independent of the library's code.

* rho-zCDP at epsilon: the Canonne-Kamath-Steinke bound
  ``delta = inf_{a>1} exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)^a``, minimised at the root
  of its log-derivative ``(2a - 1) rho - eps + log(1 - 1/a)`` (increasing in ``a``), found by
  bisection;
* mu-GDP at epsilon: ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``;
* epsilon-DP at epsilon': randomised response, ``(e^eps - e^eps') / (1 + e^eps)``.
"""

from __future__ import annotations

import mpmath

DIGITS = 60


def zcdp_delta(rho: float, epsilon: float) -> mpmath.mpf:
    with mpmath.workdps(DIGITS):
        rho, epsilon = mpmath.mpf(rho), mpmath.mpf(epsilon)
        if rho == 0:
            return mpmath.mpf(0)

        def slope(a):
            return (2 * a - 1) * rho - epsilon + mpmath.log(1 - 1 / a)

        # Bisection on log(a - 1): the slope is -inf at a = 1 and +inf as a grows.
        low, high = mpmath.mpf(-200), mpmath.mpf(1)
        while slope(1 + mpmath.exp(high)) < 0:
            high += 10
        for _ in range(400):
            middle = (low + high) / 2
            if slope(1 + mpmath.exp(middle)) < 0:
                low = middle
            else:
                high = middle
        a = 1 + mpmath.exp((low + high) / 2)
        log_delta = (a - 1) * (a * rho - epsilon) - mpmath.log(a - 1) + a * mpmath.log(1 - 1 / a)
        return min(mpmath.mpf(1), mpmath.exp(log_delta))


def gdp_delta(mu: float, epsilon: float) -> mpmath.mpf:
    with mpmath.workdps(DIGITS):
        mu, epsilon = mpmath.mpf(mu), mpmath.mpf(epsilon)
        if mu == 0:
            return mpmath.mpf(0)
        return (mpmath.ncdf(-epsilon / mu + mu / 2)
                - mpmath.exp(epsilon) * mpmath.ncdf(-epsilon / mu - mu / 2))


def pure_delta(epsilon: float, epsilon_prime: float) -> mpmath.mpf:
    with mpmath.workdps(DIGITS):
        e, e_prime = mpmath.exp(mpmath.mpf(epsilon)), mpmath.exp(mpmath.mpf(epsilon_prime))
        return max(mpmath.mpf(0), (e - e_prime) / (1 + e))
