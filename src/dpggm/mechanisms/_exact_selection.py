"""Exact sampling for the exponential mechanism.

Candidate ``r`` is selected with probability proportional to ``exp(-gamma_r)``, where
``gamma_r = epsilon (u_max - u_r) / (2 sensitivity)`` is formed exactly from the binary
values of the floats (``fractions.Fraction``). The sampler is a rejection sampler whose
proposal is uniform over the candidates and whose acceptance coin is an exact
Bernoulli(``exp(-gamma_r)``), split in two independent exact coins:

1. ``exp(-L_r)`` for an integer ``L_r <= gamma_r`` (``L_r`` Bernoulli(``exp(-1)``) coins,
   compiled; most far-below candidates are rejected here at a cost of a few bits);
2. ``exp(-(gamma_r - L_r))`` with the exact rational remainder (Canonne, Kamath and
   Steinke 2020, Algorithm 1, on Python integers), run only for the few proposals that
   pass step 1 (on average at most ``e`` per selection).

Each attempt selects ``r`` with probability ``exp(-gamma_r) / N``, so the output has
exactly the exponential mechanism's distribution however far below the best a candidate
is. ``L_r`` is computed in floating point with a proven margin (``L_r <= gamma_r``
always); it only decides how the exact acceptance probability is split between the two
coins, never the probability itself, and step 2 checks ``gamma_r - L_r >= 0`` exactly.
The expected number of attempts is ``N / sum_r exp(-gamma_r) <= N``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpggm.mechanisms import _exact_kernels as kernels
from dpggm.mechanisms.discrete_gaussian import bernoulli_exp_minus, exact_rational
from dpggm.mechanisms.random import RandomSource

__all__ = ["exact_exponential_selection", "exact_exponential_selections"]

# Bound on the whole part used by the compiled coins (a lower bound stays a lower bound).
_MAX_WHOLE = float(1 << 31)
# fl(fl(a - b) * fl(c)) <= (1 + 2**-53)**3 * (a - b) c when fl(c) is a normal float, so
# multiplying by (1 - 2**-48) (itself rounded up by at most 2**-53) stays below the exact
# value. Below this factor fl(c) may be subnormal, and then every L_r is taken as 0.
_SHRINK = 1.0 - 2.0**-48
_SMALLEST_SAFE_FACTOR = 2.0**-1000
_INITIAL_WORDS = 64
_MAX_BLOCK_WORDS = 1 << 16


def _positive(value: object, name: str) -> Fraction:
    exact = exact_rational(value, name)
    if exact <= 0:
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return exact


def _whole_parts(scores: np.ndarray, factor: Fraction) -> np.ndarray:
    """Integers L_r <= gamma_r = factor * (max(scores) - scores[r]), as int64; for a matrix,
    per row (each row's own maximum), with the same floating-point operations."""
    try:
        factor_float = float(factor)
    except OverflowError:
        factor_float = math.inf
    if not (_SMALLEST_SAFE_FACTOR <= factor_float < math.inf):
        return np.zeros(scores.shape, dtype=np.int64)
    best = scores.max(axis=-1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        gamma = (best - scores) * factor_float * _SHRINK
    gamma = np.where(np.isfinite(gamma), gamma, 0.0)
    return np.floor(np.minimum(gamma, _MAX_WHOLE)).astype(np.int64)


def _exact_score(value: float) -> Fraction | int:
    """A score's exact value: an ``int`` when it is a whole number (the common case: rank
    and count scores), a ``Fraction`` otherwise -- the same rational either way."""
    return int(value) if value.is_integer() else Fraction(value)


def _select(scores: np.ndarray, whole: np.ndarray, factor: Fraction, n_bits: int,
            stream: Any) -> int:
    """One exact selection from ``scores`` (with their whole parts ``whole``), reading a
    fresh ``stream`` (:class:`~dpggm.mechanisms._exact_kernels.BitStream`):
    ``_INITIAL_WORDS`` words, doubled when used up, the rest dropped at the end -- so that
    consecutive selections on one source read it exactly as they always have, and a
    seeded run gives the same indices one at a time or in a batch. (Pulling words for
    many selections at once would leave the last ones unread and shift every later draw
    from the same source.)"""
    best = _exact_score(float(scores.max()))
    block = _INITIAL_WORDS
    stream.refill(block)
    while True:
        status, r, stream.pos = kernels.selection_kernel(stream.words, stream.pos, whole, n_bits)
        if status == kernels.EXHAUSTED:
            block = min(2 * block, _MAX_BLOCK_WORDS)
            stream.refill(block)
            continue
        remainder = factor * (best - _exact_score(float(scores[r]))) - int(whole[r])
        if remainder < 0:
            raise AssertionError("the whole part of an exponent exceeded the exponent")
        if bernoulli_exp_minus(remainder.numerator, remainder.denominator, stream.next_word):
            return int(r)


def exact_exponential_selection(
    scores: np.ndarray, *, sensitivity: object, epsilon: object, random_state: object
) -> int:
    """Index ``r`` drawn exactly with probability proportional to
    ``exp(epsilon * scores[r] / (2 * sensitivity))``.

    ``scores`` must be a validated one-dimensional float64 array of finite values;
    ``random_state`` is anything :class:`dpggm.mechanisms._exact_kernels.BitStream`
    accepts.
    """
    factor = _positive(epsilon, "epsilon") / (2 * _positive(sensitivity, "sensitivity"))
    return _select(scores, _whole_parts(scores, factor), factor,
                   kernels.bit_length(scores.shape[0]), kernels.BitStream(random_state))


def exact_exponential_selections(
    scores: np.ndarray, *, sensitivity: object, epsilon: object, random_state: object
) -> np.ndarray:
    """One index per row of ``scores`` (``m x k``), row ``j``'s drawn exactly with
    probability proportional to ``exp(epsilon * scores[j, r] / (2 * sensitivity))``,
    independently, in row order: the same indices, from the same words, as ``m`` calls
    of :func:`exact_exponential_selection` on one random source (a seeded batch equals the
    selections one by one). The whole parts of the exponents are formed for every row at
    once; each row then costs one compiled rejection loop and, on average, at most ``e``
    exact remainder coins.

    ``scores`` must be a validated two-dimensional float64 array of finite values.
    """
    factor = _positive(epsilon, "epsilon") / (2 * _positive(sensitivity, "sensitivity"))
    whole = _whole_parts(scores, factor)
    n_bits = kernels.bit_length(scores.shape[1])
    source = RandomSource.of(random_state)
    return np.array([_select(scores[j], whole[j], factor, n_bits, kernels.BitStream(source))
                     for j in range(scores.shape[0])], dtype=np.int64)
