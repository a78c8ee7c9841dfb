"""Noise primitives: symmetric Gaussian and Laplace matrices, Wishart matrices, and the
exponential mechanism.

Every function takes its randomness as ``rng``: a
:class:`~dpggm.mechanisms.random.RandomSource` (a fit passes its context's ``source``) or
anything it accepts (``None`` / ``"secure"``: every word from the operating system's
cryptographic generator; a seed or a Generator: a reproducible experiment).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import special

from dpggm.mechanisms._exact_selection import exact_exponential_selection
from dpggm.mechanisms.discrete_gaussian import sample_discrete_laplace
from dpggm.mechanisms.random import RandomSource

__all__ = [
    "above_threshold",
    "above_threshold_min_epsilon",
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


def symmetric_gaussian_noise(p: int, sigma: float, rng: RandomSource | Any) -> np.ndarray:
    """A ``p x p`` symmetric matrix whose upper triangle (with diagonal) is i.i.d.
    ``N(0, sigma^2)`` from a floating-point sampler (not a release mechanism: releases use
    :class:`~dpggm.mechanisms.additive.GaussianMechanism`)."""
    sigma = _check_scale("sigma", sigma)
    return _mirror_upper(p, RandomSource.of(rng).normal(0.0, sigma, size=p * (p + 1) // 2))


def symmetric_laplace_noise(p: int, scale: float, rng: RandomSource | Any) -> np.ndarray:
    """A ``p x p`` symmetric matrix whose upper triangle (with diagonal) is i.i.d.
    ``Laplace(0, scale)`` from a floating-point sampler (see
    :func:`symmetric_gaussian_noise`)."""
    scale = _check_scale("scale", scale)
    return _mirror_upper(p, RandomSource.of(rng).laplace(0.0, scale, size=p * (p + 1) // 2))


def wishart_noise(p: int, df: int, scale: float, rng: RandomSource | Any) -> np.ndarray:
    """A draw from ``Wishart_p(df, scale * I)``: the sum of ``df`` outer products of
    ``N(0, scale * I)`` vectors (Bartlett decomposition, ``O(p^2)`` normal draws).

    The draws are floating-point (normal and chi-square), so a release that adds this
    noise is reported ``"invalid"`` (Mironov 2012); under a cryptographic source their
    uniforms come from the operating system's generator."""
    scale = _check_scale("scale", scale)
    if int(df) != df or df < p:
        raise ValueError(f"df must be an integer >= p = {p}; got {df!r}")
    df = int(df)
    source = RandomSource.of(rng)
    # Bartlett: A lower triangular, A_ii ~ sqrt(chi2(df - i)), A_ij ~ N(0, 1) below.
    lower = np.tril(source.standard_normal((p, p)), -1)
    lower[np.diag_indices(p)] = np.sqrt(source.chisquare(df - np.arange(p)))
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
    scores: np.ndarray, *, sensitivity: float, epsilon: float, rng: RandomSource | Any
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
    rng : RandomSource, None, "secure", int or numpy.random.Generator
        Source of the random words (a fit passes its context's ``source``): ``None`` or
        ``"secure"`` reads every word from :func:`os.urandom`; a seed or a Generator
        supplies them from its PCG64 stream (reproducible experiments).

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


def _exact_scale_at_least(value: Fraction) -> Fraction:
    """A dyadic rational >= value with a numerator below 2**51 (a slightly larger noise
    scale only strengthens the guarantee; the exact samplers need short rationals)."""
    shift = max(0, 50 - value.numerator.bit_length() + value.denominator.bit_length())
    return Fraction(math.ceil(value * 2**shift), 2**shift)


# The exact AboveThreshold works on the grid t Z with t the power of two at 2**-20 of the
# sensitivity: rounding a query to the grid moves it by at most t/2, which adds at most
# one step (a relative 2**-20) to the sensitivity in grid units.
_THRESHOLD_GRID_BITS = 20
_GRID_LIMIT = float(2**52)


def _to_grid(values: np.ndarray, step: float) -> np.ndarray:
    """round(values / step), clipped to +-2**52: monotone, and moves a difference of d by
    at most d / step + 1 steps."""
    with np.errstate(over="ignore"):
        scaled = np.rint(np.asarray(values, dtype=float) / step)
    return np.clip(scaled, -_GRID_LIMIT, _GRID_LIMIT).astype(np.int64)


def above_threshold_min_epsilon(*, sensitivity: float, monotonic: bool = False) -> float:
    """The smallest ``epsilon`` :func:`above_threshold` can run at: its discrete Laplace
    scales, ``(2 or 4) D / epsilon`` grid steps, must stay within the exact sampler's
    ``2**48`` (public parameters only; a hair is added for the rounding of the scales)."""
    sensitivity = _check_scale("sensitivity", sensitivity)
    step = math.ldexp(1.0, math.frexp(sensitivity)[1] - 1 - _THRESHOLD_GRID_BITS)
    grid_sensitivity = math.ceil(Fraction(sensitivity) / Fraction(step)) + 1
    return (2 if monotonic else 4) * grid_sensitivity / 2.0**48 * (1 + 2.0**-30)


def above_threshold(
    queries: np.ndarray,
    *,
    threshold: float,
    sensitivity: float,
    epsilon: float,
    rng: RandomSource | Any,
    monotonic: bool = False,
) -> int:
    """AboveThreshold (Dwork & Roth 2014, Algorithm 1; Lyu, Su & Li 2017, Algorithm 1):
    the index of the first query whose noisy value reaches the noisy threshold, or
    ``len(queries)`` if none does.

    The noise is exact: queries and threshold are rounded to the grid ``t Z`` (``t`` the
    power of two at ``2**-20`` of ``sensitivity``'s binade), and integer discrete Laplace
    noise (:func:`dpggm.mechanisms.discrete_gaussian.sample_discrete_laplace`) is added in
    grid units; the comparison is between integers. ``rng`` is the source of random words
    (a :class:`~dpggm.mechanisms.random.RandomSource` or anything it accepts; both noise
    draws read the same stream).

    Privacy
    -------
    ``epsilon``-DP (hence ``epsilon**2 / 2``-zCDP) when every query has sensitivity at most
    ``sensitivity``, whatever the number of queries. In grid units the rounded queries have
    sensitivity at most ``D = ceil(sensitivity / t) + 1``; the threshold gets discrete
    ``Laplace(b_T)`` noise and every query discrete ``Laplace(b_Q)``, with ``b_T >= 2 D /
    epsilon`` and ``b_Q >= 4 D / epsilon`` (rounded up to short dyadic rationals). With
    ``monotonic=True``, ``b_Q >= 2 D / epsilon``, which is ``epsilon``-DP only for monotonic
    queries -- for every pair of neighbours, all queries move in the same direction (Lyu,
    Su & Li 2017, section 4.2): the caller must guarantee that. The proofs hold verbatim
    for integer queries with two-sided geometric noise (shifts by the integer ``D``). Only
    the index is released.
    """
    sensitivity = _check_scale("sensitivity", sensitivity)
    epsilon = _check_scale("epsilon", epsilon)
    queries = np.asarray(queries, dtype=float)
    if queries.ndim != 1 or not np.all(np.isfinite(queries)):
        raise ValueError("queries must be a one-dimensional array of finite numbers")
    if not math.isfinite(float(threshold)):
        raise ValueError(f"threshold must be a finite number; got {threshold!r}")
    step = math.ldexp(1.0, math.frexp(sensitivity)[1] - 1 - _THRESHOLD_GRID_BITS)
    grid_sensitivity = math.ceil(Fraction(sensitivity) / Fraction(step)) + 1
    per_unit = Fraction(grid_sensitivity) / Fraction(epsilon)
    threshold_scale = _exact_scale_at_least(2 * per_unit)
    query_scale = _exact_scale_at_least((2 if monotonic else 4) * per_unit)
    rng = RandomSource.of(rng)
    noisy_threshold = int(_to_grid(np.array([threshold]), step)[0]) + sample_discrete_laplace(
        threshold_scale, random_state=rng
    )
    noisy_queries = _to_grid(queries, step) + sample_discrete_laplace(
        query_scale, len(queries), random_state=rng
    )
    above = np.flatnonzero(noisy_queries >= noisy_threshold)
    return int(above[0]) if above.size else len(queries)
