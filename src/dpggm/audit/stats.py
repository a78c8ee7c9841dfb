"""Clopper–Pearson intervals and the epsilon lower bound they give for one event."""

from __future__ import annotations

import math

from scipy import stats

__all__ = ["clopper_pearson", "epsilon_lower_bound"]


def _check_counts(k: int, n: int) -> tuple[int, int]:
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    if int(k) != k or not 0 <= k <= n:
        raise ValueError(f"k must be an integer in [0, n={n}]; got {k!r}")
    return int(k), int(n)


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper–Pearson bounds for a binomial proportion.

    Parameters
    ----------
    k, n : int
        Successes and trials.
    alpha : float in (0, 1)
        Error probability of *each* one-sided bound.

    Returns
    -------
    lower, upper : float
        ``P[p >= lower] >= 1 - alpha`` and ``P[p <= upper] >= 1 - alpha``: ``lower`` is the
        ``alpha`` quantile of ``Beta(k, n - k + 1)`` (0 when ``k = 0``) and ``upper`` the
        ``1 - alpha`` quantile of ``Beta(k + 1, n - k)`` (1 when ``k = n``).
    """
    k, n = _check_counts(k, n)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}")
    lower = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))
    return lower, upper


def epsilon_lower_bound(
    k_first: int, n_first: int, k_second: int, n_second: int, *, delta: float, alpha: float
) -> float:
    """A lower bound on the epsilon of a mechanism from one event, at confidence
    ``1 - alpha``.

    With ``p`` = P[M(D) in E] and ``q`` = P[M(D') in E], (epsilon, delta)-DP implies
    ``p <= e^epsilon q + delta``, so ``epsilon >= ln((p - delta) / q)``. ``p`` is replaced by
    its lower and ``q`` by its upper Clopper–Pearson bound, each at ``alpha / 2`` (union
    bound), so the figure is a valid lower bound with probability ``1 - alpha``.

    Returns 0 when the data do not show ``p - delta > q`` with confidence.
    """
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1); got {delta!r}")
    p_lower, _ = clopper_pearson(k_first, n_first, alpha / 2)
    _, q_upper = clopper_pearson(k_second, n_second, alpha / 2)
    if p_lower - delta <= q_upper:
        return 0.0
    return math.log((p_lower - delta) / q_upper)
