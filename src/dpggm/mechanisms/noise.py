"""Noise primitives: symmetric Gaussian and Laplace matrices, Wishart matrices, and the
exponential mechanism.

Every function takes an explicit :class:`numpy.random.Generator` (see
:func:`dpggm.mechanisms.random.check_random_state`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpggm.mechanisms._exact_selection import exact_exponential_selection

__all__ = [
    "above_threshold",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "symmetric_gaussian_noise",
    "symmetric_laplace_noise",
    "wishart_noise",
]


def _mirror_upper(p: int, draws: np.ndarray) -> np.ndarray:
    out = np.zeros((p, p))
    iu = np.triu_indices(p)
    out[iu] = draws
    return out + np.triu(out, 1).T


def _check_scale(name: str, value: float) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return value


def symmetric_gaussian_noise(p: int, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """A ``p x p`` symmetric matrix whose upper triangle (with diagonal) is i.i.d.
    ``N(0, sigma^2)``."""
    sigma = _check_scale("sigma", sigma)
    return _mirror_upper(p, rng.normal(0.0, sigma, size=p * (p + 1) // 2))


def symmetric_laplace_noise(p: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """A ``p x p`` symmetric matrix whose upper triangle (with diagonal) is i.i.d.
    ``Laplace(0, scale)``."""
    scale = _check_scale("scale", scale)
    return _mirror_upper(p, rng.laplace(0.0, scale, size=p * (p + 1) // 2))


def wishart_noise(p: int, df: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """A draw from ``Wishart_p(df, scale * I)``: the sum of ``df`` outer products of
    ``N(0, scale * I)`` vectors (Bartlett decomposition, ``O(p^2)`` normal draws)."""
    scale = _check_scale("scale", scale)
    if int(df) != df or df < p:
        raise ValueError(f"df must be an integer >= p = {p}; got {df!r}")
    df = int(df)
    # Bartlett: A lower triangular, A_ii ~ sqrt(chi2(df - i)), A_ij ~ N(0, 1) below.
    lower = np.tril(rng.standard_normal((p, p)), -1)
    lower[np.diag_indices(p)] = np.sqrt(rng.chisquare(df - np.arange(p)))
    return scale * (lower @ lower.T)


def exponential_mechanism_probabilities(
    scores: np.ndarray, *, sensitivity: float, epsilon: float
) -> np.ndarray:
    """Selection probabilities ``exp(epsilon u_r / (2 sensitivity))``, normalised.

    A float helper for display and tests; :func:`exponential_mechanism` does not use it.
    """
    sensitivity = _check_scale("sensitivity", sensitivity)
    epsilon = _check_scale("epsilon", epsilon)
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1 or scores.size == 0 or not np.all(np.isfinite(scores)):
        raise ValueError("scores must be a non-empty one-dimensional array of finite numbers")
    logits = epsilon * scores / (2 * sensitivity)
    return np.exp(logits - special.logsumexp(logits))


def exponential_mechanism(
    scores: np.ndarray, *, sensitivity: float, epsilon: float, rng: np.random.Generator
) -> int:
    """Index chosen with probability proportional to ``exp(epsilon u_r / (2 sensitivity))``.

    The selection is drawn **exactly** (:mod:`dpggm.mechanisms._exact_selection`): the
    exponents ``epsilon (max(u) - u_r) / (2 sensitivity)`` are exact rationals formed from
    the binary values of the floats, and a rejection sampler with a uniform proposal and an
    exact Bernoulli(``exp(-exponent)``) acceptance coin (Canonne, Kamath, Steinke 2020,
    Algorithm 1, in integer arithmetic) draws from exactly these probabilities, including
    candidates whose float probability would underflow. The expected number of proposals
    is at most the number of candidates; far-below candidates are rejected after a few
    random bits.

    Parameters
    ----------
    scores : array_like of float
        Finite utilities, one per candidate (one-dimensional, non-empty).
    sensitivity, epsilon : float
        Finite and > 0; used at their exact binary values.
    rng : numpy.random.Generator, int, None or "secure"
        Source of the random words: a Generator (or seed) supplies them itself
        (reproducible experiments: a Generator seeded from ``"secure"`` supplies PCG64
        words); ``None`` or ``"secure"`` reads every word from :func:`os.urandom`.

    Returns
    -------
    int
        The selected index.

    Privacy
    -------
    ``epsilon``-DP and ``epsilon**2 / 8``-zCDP when every score has sensitivity at most
    ``sensitivity`` (Cesar & Rogers 2021); the exact sampler makes these bounds hold for
    the released index as computed, not only for an idealised float sampler.
    """
    sensitivity = _check_scale("sensitivity", sensitivity)
    epsilon = _check_scale("epsilon", epsilon)
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1 or scores.size == 0 or not np.all(np.isfinite(scores)):
        raise ValueError("scores must be a non-empty one-dimensional array of finite numbers")
    return exact_exponential_selection(
        scores, sensitivity=sensitivity, epsilon=epsilon, random_state=rng
    )


def above_threshold(
    queries: np.ndarray,
    *,
    threshold: float,
    sensitivity: float,
    epsilon: float,
    rng: np.random.Generator,
    monotonic: bool = False,
) -> int:
    """AboveThreshold (Dwork & Roth 2014, Algorithm 1; Lyu, Su & Li 2017, Algorithm 1):
    the index of the first query whose noisy value reaches the noisy threshold, or
    ``len(queries)`` if none does.

    Privacy
    -------
    ``epsilon``-DP (hence ``epsilon**2 / 2``-zCDP) when every query has sensitivity at most
    ``sensitivity``, whatever the number of queries: the threshold gets
    ``Laplace(2 sensitivity / epsilon)`` and every query ``Laplace(4 sensitivity /
    epsilon)``. With ``monotonic=True`` the queries get ``Laplace(2 sensitivity /
    epsilon)``, which is ``epsilon``-DP only for monotonic queries -- for every pair of
    neighbours, all queries move in the same direction (Lyu, Su & Li 2017, section 4.2):
    the caller must guarantee that. Only the index is released.
    """
    query_scale = (2.0 if monotonic else 4.0) * sensitivity / epsilon
    noisy_threshold = threshold + rng.laplace(0.0, 2.0 * sensitivity / epsilon)
    query_noise = rng.laplace(0.0, query_scale, size=len(queries))
    above = np.flatnonzero(np.asarray(queries) + query_noise >= noisy_threshold)
    return int(above[0]) if above.size else len(queries)
