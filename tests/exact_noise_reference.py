"""Independent reference figures for the exact (grid) releases, computed here from the
documented rule rather than from the library: the grid is the largest power of two ``t``
with ``t * inflation <= sensitivity / 1024`` (``inflation`` = sqrt(k) for l2, k for l1) and
``t <= scale / 1024`` (``scale`` the continuous noise scale for the budget), and the
calibration uses the sensitivity ``(sensitivity + t * inflation) * (1 + 2^-20)``."""

from __future__ import annotations

import math


def grid_and_inflated(
    sensitivity: float, inflation: float, scale: float
) -> tuple[float, float]:
    limit = min(sensitivity / inflation, scale) / 1024.0 * inflation
    t = 1.0
    while t * inflation > limit:
        t /= 2.0
    while 2.0 * t * inflation <= limit:
        t *= 2.0
    return t, (sensitivity + t * inflation) * (1.0 + 2.0**-20)


def exact_gaussian_sigma_zcdp(sensitivity: float, k: int, rho: float) -> tuple[float, float]:
    """(sigma, grid) of an exact Gaussian release of k coordinates under rho-zCDP."""
    t, inflated = grid_and_inflated(
        sensitivity, math.sqrt(k), sensitivity / math.sqrt(2.0 * rho)
    )
    return inflated / math.sqrt(2.0 * rho), t


def exact_laplace_scale(l1_sensitivity: float, k: int, epsilon: float) -> tuple[float, float]:
    """(scale, grid) of an exact Laplace release of k coordinates under epsilon-DP."""
    t, inflated = grid_and_inflated(l1_sensitivity, float(k), l1_sensitivity / epsilon)
    return inflated / epsilon, t


def zcdp_delta_reference(rho: float, epsilon: float) -> float:
    """Canonne, Kamath & Steinke (2020), Corollary 13, minimised over the order on a fine
    logarithmic grid and then by a bounded scalar search (scipy), independently of the
    library's implementation."""
    import numpy as np
    from scipy import optimize

    def log_delta(log_excess: float) -> float:
        a = 1.0 + math.exp(log_excess)
        return (a - 1) * (a * rho - epsilon) - math.log(a - 1) + a * math.log1p(-1 / a)

    grid = np.linspace(-25, 25, 2001)
    values = [log_delta(t) for t in grid]
    best = int(np.argmin(values))
    res = optimize.minimize_scalar(
        log_delta, bounds=(grid[max(best - 1, 0)], grid[min(best + 1, 2000)]), method="bounded",
        options={"xatol": 1e-12},
    )
    return min(1.0, math.exp(min(res.fun, values[best])))


def largest_rho_reference(epsilon: float, delta: float) -> float:
    low, high = 1e-12, 1e3
    for _ in range(200):
        middle = math.sqrt(low * high)
        if zcdp_delta_reference(middle, epsilon) <= delta:
            low = middle
        else:
            high = middle
    return low
