"""Exact sampling from the discrete Gaussian and discrete Laplace, and exact moments.

The discrete Gaussian ``N_Z(0, sigma^2)`` puts mass proportional to
``exp(-k^2 / (2 sigma^2))`` on every integer ``k``; the discrete Laplace of scale ``b``
puts mass proportional to ``exp(-|k| / b)``. Both are sampled **exactly** by compiled
integer kernels (:mod:`dpggm.mechanisms._exact_kernels`): the discrete Gaussian with
Karney's (2016) Algorithm D, the discrete Laplace with Algorithm 2 of Canonne, Kamath and
Steinke (2020). Every random decision compares uniform random bits with the binary
expansion of a ratio of integers; no floating-point number takes part in any decision,
so the output distribution is exactly the stated one given uniform bits.

Randomness: ``random_state=None`` or ``"secure"`` reads every random word from the
operating system's cryptographic source (:func:`os.urandom`); an ``int`` seed or a
:class:`numpy.random.Generator` draws the words from that generator (reproducible
experiments only).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

import numpy as np

from dpggm.mechanisms import _exact_kernels as kernels

__all__ = [
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
    "sample_bernoulli_exp",
    "discrete_gaussian_pmf",
    "discrete_gaussian_variance",
    "exact_scale_supported",
]

_WORD_BITS = 64
_WORD_SPAN = 1 << _WORD_BITS
# Thresholds floor(2^64 / k) for the Bernoulli(1/k) coins of Bernoulli(exp(-1)).
_INVERSE_THRESHOLDS = tuple(_WORD_SPAN // k if k else 0 for k in range(64))

# Samples are returned as int64 (or as floats k*grid); capping the integer scale at
# 2**48 keeps |k| < 2**53 except with probability below exp(-2**9), so the float
# products k*grid are correctly rounded and int64 never overflows.
_MAX_INTEGER_SCALE_LOG2 = 48
_MAX_INTEGER_SCALE = Fraction(1 << _MAX_INTEGER_SCALE_LOG2)
# The kernels compare random bits with ratios of integers whose numerator and
# denominator are below 2**62 (twice the denominator must fit in int64).
_MAX_TERM_LOG2 = 62
# Smallest accepted multiple of the scale that a sample may reach before it would overflow
# int64 (the kernels raise OverflowError beyond it): 40 scales for the discrete Gaussian
# (probability below exp(-800)), 40 for the discrete Laplace (below exp(-40)).
_MIN_REACH = 40
_INT64_SPAN = 1 << 63

WordSource = Callable[[], int]


# --------------------------------------------------------------------------- validation


def exact_rational(value: object, name: str, constraint: str = "> 0") -> Fraction:
    """The exact rational value of a real number (a float's binary value, not its repr)."""
    if isinstance(value, bool) or isinstance(value, str):
        raise TypeError(f"{name} must be a real number; got {value!r}")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{name} must be a finite number {constraint}; got {value!r}")
        return Fraction(value)
    if isinstance(value, numbers.Real):
        as_float = float(value)
        if not math.isfinite(as_float):
            raise ValueError(f"{name} must be a finite number {constraint}; got {value!r}")
        return Fraction(as_float)
    raise TypeError(f"{name} must be a real number; got {type(value).__name__}")


def _positive_rational(value: object, name: str) -> Fraction:
    exact = exact_rational(value, name)
    if exact <= 0:
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return exact


def _integer_variance_unbounded(sigma: object, grid: object) -> tuple[Fraction, Fraction | None]:
    """sigma^2 / grid^2 as an exact rational, and the grid step (None for the integers)."""
    sigma_exact = _positive_rational(sigma, "sigma")
    if grid is None:
        return sigma_exact**2, None
    step = _positive_rational(grid, "grid")
    return (sigma_exact / step) ** 2, step


def _kernel_scale(value: object, name: str, grid: object = None) -> Fraction:
    """The scale in grid units as an exact rational that the integer kernels accept."""
    scale = _positive_rational(value, name)
    what = name
    if grid is not None:
        scale = scale / _positive_rational(grid, "grid")
        what = f"{name}/grid"
    if scale > _MAX_INTEGER_SCALE:
        raise ValueError(
            f"{what} must be <= 2**{_MAX_INTEGER_SCALE_LOG2} so that samples fit exactly in "
            f"int64 and float64; got {what}={float(scale)!r}"
        )
    limit = 1 << _MAX_TERM_LOG2
    if scale.numerator >= limit or scale.denominator >= limit:
        raise ValueError(
            f"{what} must be a ratio of integers below 2**{_MAX_TERM_LOG2} (every float "
            f"from 2**-9 to 2**48 is; pass a nearby Fraction otherwise); got {what}={scale!r}"
        )
    return scale


def exact_scale_supported(scale: Fraction, *, laplace: bool = False) -> bool:
    """Whether the exact sampler accepts the scale ``scale`` (in grid units): the checks of
    :func:`sample_discrete_gaussian` / :func:`sample_discrete_laplace`, without drawing."""
    scale = Fraction(scale)
    limit = 1 << _MAX_TERM_LOG2
    if not (0 < scale <= _MAX_INTEGER_SCALE):
        return False
    if scale.numerator >= limit or scale.denominator >= limit:
        return False
    if laplace:
        return (_INT64_SPAN - 1) // scale.numerator - 1 >= _MIN_REACH
    return (_INT64_SPAN - 1 - 2 * scale.denominator) // scale.numerator - 2 >= _MIN_REACH


def _too_fine(what: str, scale: Fraction) -> str:
    return (
        f"{what} has too long a binary expansion for exact 64-bit sampling (every float from "
        f"2**-9 to 2**48 is fine; pass a nearby Fraction with a smaller denominator); "
        f"got {what}={scale!r}"
    )


def _check_size(size: object) -> tuple[int, tuple[int, ...] | None]:
    """Number of samples and output shape (None for a scalar)."""
    if size is None:
        return 1, None
    message = (
        "size must be None, a non-negative integer or a tuple of non-negative integers; "
        f"got {size!r}"
    )
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        dims = (int(size),)
    elif isinstance(size, tuple):
        if not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in size):
            raise TypeError(message)
        dims = tuple(int(d) for d in size)
    else:
        raise TypeError(message)
    if any(d < 0 for d in dims):
        raise ValueError(message)
    return math.prod(dims), dims


# ------------------------------------------------------------------ exact Bernoulli coins


def _bernoulli_rational(numerator: int, denominator: int, next_word: WordSource) -> bool:
    """Exact Bernoulli(numerator/denominator) for 0 <= numerator, 0 < denominator.

    Compares a uniform U in [0, 1), revealed 64 bits at a time, with the rational: after a
    tie on the current 64 bits, U's remaining bits are again uniform and the comparison
    continues with the remainder of the rational's expansion.
    """
    if numerator >= denominator:
        return True
    while numerator > 0:
        threshold, numerator = divmod(numerator << _WORD_BITS, denominator)
        word = next_word()
        if word != threshold:
            return word < threshold
    return False


def _bernoulli_exp_minus_one(next_word: WordSource) -> bool:
    """Exact Bernoulli(exp(-1)): CKS Algorithm 1 with gamma = 1.

    The chain of coins A_k ~ Bernoulli(1/k) runs until the first failure; the first coin
    (k = 1) always succeeds, so the chain starts at k = 2. The output is whether the
    index of the first failure is odd.
    """
    k = 2
    while True:
        word = next_word()
        threshold = _INVERSE_THRESHOLDS[k] if k < 64 else _WORD_SPAN // k
        if word < threshold or (
            word == threshold and _bernoulli_rational(_WORD_SPAN % k, k, next_word)
        ):
            k += 1
            continue
        return bool(k & 1)


def _bernoulli_exp_minus_unit(numerator: int, denominator: int, next_word: WordSource) -> bool:
    """Exact Bernoulli(exp(-gamma)) for gamma = numerator/denominator in [0, 1].

    CKS Algorithm 1: draw A_k ~ Bernoulli(gamma/k) for k = 1, 2, ... until the first
    failure at index K; Pr[K > k] = gamma^k / k!, so Pr[K odd] = exp(-gamma).
    """
    if numerator == 0:
        return True
    k = 1
    scaled = numerator << _WORD_BITS
    while True:
        # Inline of _bernoulli_rational(numerator, denominator * k): this is the hot path.
        bound = denominator * k
        if numerator < bound:
            threshold, remainder = divmod(scaled, bound)
            word = next_word()
            if word > threshold or (
                word == threshold and not _bernoulli_rational(remainder, bound, next_word)
            ):
                return bool(k & 1)
        k += 1


def bernoulli_exp_minus(numerator: int, denominator: int, next_word: WordSource) -> bool:
    """Exact Bernoulli(exp(-gamma)) for any rational gamma = numerator/denominator >= 0.

    CKS Algorithm 1: exp(-gamma) = exp(-1)^floor(gamma) * exp(-(gamma - floor(gamma))),
    sampled as independent coins that must all succeed.
    """
    whole, numerator = divmod(numerator, denominator)
    while whole > 0:
        if not _bernoulli_exp_minus_one(next_word):
            return False
        whole -= 1
    return _bernoulli_exp_minus_unit(numerator, denominator, next_word)


def _run_kernel(
    kernel, count: int, random_state: object, bits_per_sample: int, *parameters
) -> np.ndarray:
    """Run a sampling kernel until ``count`` int64 samples are drawn, refilling its bits.

    ``bits_per_sample`` (a slight overestimate of the mean) only sizes the blocks of words.
    """
    out = np.empty(count, dtype=np.int64)
    stream = kernels.BitStream(random_state)
    filled = 0
    while filled < count:
        words_needed = ((count - filled) * bits_per_sample) // 64 + 16
        stream.refill(min(words_needed, 1 << 20))
        status, filled, stream.pos = kernel(out, filled, stream.words, stream.pos, *parameters)
        if status == kernels.OVERFLOW:
            # Reaching this needs a sample beyond ~2**62 / scale standard deviations.
            raise OverflowError("a sample does not fit in int64")
    return out


def _shaped(values: np.ndarray, shape: tuple[int, ...] | None):
    return int(values[0]) if shape is None else values.reshape(shape)


def _on_grid(values: np.ndarray, step: Fraction, shape: tuple[int, ...] | None, grid: object):
    """The floats closest to k * step (correctly rounded products)."""
    try:
        exactly_representable = Fraction(float(step)) == step
        if exactly_representable and np.all(np.abs(values) < (1 << 53)):
            # Both factors are exact doubles, so IEEE multiplication rounds the exact product.
            scaled = np.array(values, dtype=np.float64) * float(step)
        else:
            scaled = np.array([float(int(v) * step) for v in values], dtype=np.float64)
    except OverflowError:
        raise ValueError(
            f"grid must be small enough for the samples to be float64 values; got {grid!r}"
        ) from None
    if not np.all(np.isfinite(scaled)):
        raise ValueError(
            f"grid must be small enough for the samples to be float64 values; got {grid!r}"
        )
    if shape is None:
        return float(scaled[0])
    return scaled.reshape(shape)


# ------------------------------------------------------------------------- public API


def sample_discrete_gaussian(sigma, size=None, *, random_state=None, grid=None):
    """Draw exact samples of the discrete Gaussian N_Z(0, sigma^2).

    The discrete Gaussian has ``Pr[k] = exp(-k^2 / (2 sigma^2)) / Z`` for every integer
    ``k``. Samples come from Karney's (2016) exact Algorithm D ("Sampling exactly from
    the normal distribution", section 6) run in 64-bit integer arithmetic by a compiled
    kernel: ``k`` with ``Pr`` proportional to ``exp(-k^2/2)`` from exact
    Bernoulli(``exp(-1/2)``) and Bernoulli(``exp(-1)``) coins, a uniform integer in
    ``[ceil(k sigma), ceil(k sigma) + ceil(sigma))``, and an exact acceptance coin with
    probability ``exp(-x(2k + x)/2)`` for the rational ``x = n/sigma - k``. Every coin
    compares random bits with the expansion of a ratio of integers; the distribution of
    the output is exactly the discrete Gaussian, given uniform random bits. The expected
    cost does not depend on ``sigma`` (about two attempts per sample).

    Parameters
    ----------
    sigma : float, int, fractions.Fraction or decimal.Decimal
        Scale parameter, finite and > 0. A float is used at its exact binary value
        (``fractions.Fraction(sigma)``), not at its decimal repr: ``sigma = 0.1`` means
        ``0.1000000000000000055511151231257827...``. Pass a ``Fraction`` to use an exact
        decimal or rational scale. ``sigma`` (divided by ``grid``) must be at most
        ``2**48`` and a ratio of integers below ``2**62``; every float from ``2**-9`` to
        ``2**48`` is.
    size : None, int or tuple of int, optional
        Output shape. ``None`` returns one Python ``int`` (or ``float`` with ``grid``).
    random_state : None, int, numpy.random.Generator or "secure", optional
        ``None`` or ``"secure"``: every random word comes from :func:`os.urandom` (the
        operating system's cryptographic source). An ``int`` or a Generator: words are
        drawn from ``numpy.random.default_rng(seed)`` or from the Generator, in blocks,
        so a supplied Generator is advanced by an amount that depends on ``size`` and on
        the outcomes. Seeded draws are reproducible and for experiments only.
    grid : float, int, fractions.Fraction or decimal.Decimal, optional
        Grid step ``t > 0``. If given, the samples follow the discrete Gaussian on
        ``tZ`` with ``Pr[t k]`` proportional to ``exp(-(t k)^2 / (2 sigma^2))``, i.e.
        ``t * N_Z(0, sigma^2 / t^2)``; ``sigma / t`` is formed exactly. They are
        returned as float64 values equal to the correctly rounded product ``t * k``
        (exact whenever ``t * k`` is representable, e.g. for ``t`` a power of two).

    Returns
    -------
    int, float or numpy.ndarray
        Without ``grid``: an ``int`` (``size=None``) or an int64 array of shape ``size``.
        With ``grid``: a ``float`` or a float64 array.

    Raises
    ------
    ValueError
        If ``sigma`` or ``grid`` is not finite and > 0, if ``sigma`` (or
        ``sigma / grid``) exceeds ``2**48`` or is not a ratio of integers below
        ``2**62``, or if ``size`` has a negative entry.
    TypeError
        If ``sigma``, ``grid`` or ``size`` has the wrong type.
    OverflowError
        If a sample would not fit in int64 (an event of probability below
        ``exp(-800)`` in the valid range: it needs ``|k| > 40 sigma``).

    Notes
    -----
    Privacy: adding N_Z(0, sigma^2) noise to an integer-valued query with l2 sensitivity
    ``Delta`` satisfies ``Delta^2 / (2 sigma^2)``-zCDP (Canonne, Kamath, Steinke 2020,
    Theorem 4); this function only draws the noise and accounts for nothing.

    Examples
    --------
    >>> sample_discrete_gaussian(3.0, size=4, random_state=0).dtype
    dtype('int64')
    """
    scale = _kernel_scale(sigma, "sigma", grid)
    count, shape = _check_size(size)
    a, b = scale.numerator, scale.denominator
    m = -(-a // b)
    # k_max keeps (k + 2) a + 2 b, the largest intermediate of the kernel, below 2**63.
    k_max = (_INT64_SPAN - 1 - 2 * b) // a - 2
    if k_max < _MIN_REACH:
        raise ValueError(_too_fine("sigma" if grid is None else "sigma/grid", scale))
    m_bits = kernels.bit_length(m)
    # Measured: about 24 + 1.45 m_bits random bits per sample.
    bits = 36 + (3 * m_bits) // 2
    values = _run_kernel(kernels.gaussian_kernel, count, random_state, bits, a, b, m, m_bits, k_max)
    if grid is None:
        return _shaped(values, shape)
    return _on_grid(values, _positive_rational(grid, "grid"), shape, grid)


def sample_discrete_laplace(scale, size=None, *, random_state=None):
    """Draw exact samples of the discrete Laplace distribution on the integers.

    ``Pr[k] = (e^(1/scale) - 1) / (e^(1/scale) + 1) * exp(-|k| / scale)`` for every integer
    ``k`` (the two-sided geometric distribution). Sampled with Canonne, Kamath and
    Steinke (2020, Algorithm 2) by a compiled kernel in 64-bit integer arithmetic: with
    ``scale = t/s`` in lowest terms, ``U`` uniform below ``t`` kept with probability
    ``exp(-U/t)``, ``V`` geometric, ``|k| = floor((U + t V) / s)`` and a random sign.

    Parameters
    ----------
    scale : float, int, fractions.Fraction or decimal.Decimal
        Scale, finite and > 0; a float is used at its exact binary value. At most
        ``2**48`` and a ratio of integers below ``2**62`` (every float from ``2**-9`` to
        ``2**48`` is).
    size : None, int or tuple of int, optional
        Output shape; ``None`` returns one Python ``int``.
    random_state : None, int, numpy.random.Generator or "secure", optional
        As in :func:`sample_discrete_gaussian`: ``None`` and ``"secure"`` read
        :func:`os.urandom`; a seed or a Generator gives reproducible draws.

    Returns
    -------
    int or numpy.ndarray
        An ``int`` or an int64 array of shape ``size``.

    Raises
    ------
    ValueError
        If ``scale`` is not finite and > 0, exceeds ``2**48`` or is not a ratio of
        integers below ``2**62``, or ``size`` is negative.
    OverflowError
        If a sample would not fit in int64 (probability below ``exp(-40)`` in the valid
        range: it needs ``|k| > 40 scale``).

    Notes
    -----
    Privacy: adding this noise with ``scale = Delta_1 / epsilon`` to an integer-valued
    query with l1 sensitivity ``Delta_1`` is ``epsilon``-DP; this function only draws the
    noise and accounts for nothing.
    """
    exact_scale = _kernel_scale(scale, "scale")
    count, shape = _check_size(size)
    t, s = exact_scale.numerator, exact_scale.denominator
    # v_max keeps t (v + 1), the largest intermediate of the kernel, below 2**63.
    v_max = (_INT64_SPAN - 1) // t - 1
    if v_max < _MIN_REACH:
        raise ValueError(_too_fine("scale", exact_scale))
    t_bits = kernels.bit_length(t)
    # Measured: about 2 t_bits + 8 random bits per sample.
    bits = 16 + (9 * t_bits) // 4
    values = _run_kernel(kernels.laplace_kernel, count, random_state, bits, t, s, t_bits, v_max)
    return _shaped(values, shape)


def sample_bernoulli_exp(gamma, size=None, *, random_state=None):
    """Draw exact Bernoulli(exp(-gamma)) coins for a rational gamma >= 0.

    Canonne, Kamath and Steinke (2020, Algorithm 1); ``gamma`` may exceed 1.

    Parameters
    ----------
    gamma : float, int, fractions.Fraction or decimal.Decimal
        Finite and >= 0; a float is used at its exact binary value.
    size : None, int or tuple of int, optional
        Output shape; ``None`` returns one Python ``bool``.
    random_state : None, int, numpy.random.Generator or "secure", optional
        Source of randomness (see :func:`dpggm.mechanisms.random.check_random_state`).

    Returns
    -------
    bool or numpy.ndarray
        A ``bool`` or a boolean array of shape ``size``.

    Raises
    ------
    ValueError
        If ``gamma`` is negative or not finite, or ``size`` is negative.
    """
    exact_gamma = exact_rational(gamma, "gamma", ">= 0")
    if exact_gamma < 0:
        raise ValueError(f"gamma must be a finite number >= 0; got {gamma!r}")
    count, shape = _check_size(size)
    next_word = kernels.BitStream(random_state).next_word
    numerator, denominator = exact_gamma.numerator, exact_gamma.denominator
    coins = [bernoulli_exp_minus(numerator, denominator, next_word) for _ in range(count)]
    if shape is None:
        return coins[0]
    return np.array(coins, dtype=bool).reshape(shape)


# ------------------------------------------------------------------------ exact moments

# Below this sigma the defining series are summed directly; above it the dual series from
# Poisson summation converges after one or two terms. Both are exact identities.
_DIRECT_SUM_MAX_SIGMA = 1.0
# Direct sums stop at |k| = 12 sigma + 2, where terms are below exp(-72) of the largest.
_DIRECT_SUM_WIDTH = 12.0


def _float_or_inf(value: Fraction) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _float_scale(sigma: object, grid: object) -> tuple[float, float, Fraction]:
    """(s, 1/(2 s), grid^2) with s = sigma^2 / grid^2, the floats rounded once from exact values.

    ``1/(2 s)`` is rounded separately so that a tiny ``sigma`` whose square underflows
    still gives correctly rounded (zero) tail terms instead of a division by zero.
    """
    variance, step = _integer_variance_unbounded(sigma, grid)
    variance_float = _float_or_inf(variance)
    if not math.isfinite(variance_float):
        raise ValueError(
            "sigma**2 (divided by grid**2) must be representable as a float64; "
            f"got sigma={sigma!r}, grid={grid!r}"
        )
    half_precision = _float_or_inf(1 / (2 * variance))
    step_squared = Fraction(1) if step is None else step**2
    return variance_float, half_precision, step_squared


def _direct_terms(variance: float, half_precision: float) -> tuple[np.ndarray, np.ndarray]:
    """k = 1..K and exp(-k^2 / (2 variance)) for the direct sums."""
    k_max = math.ceil(_DIRECT_SUM_WIDTH * math.sqrt(variance)) + 2
    k = np.arange(1, k_max + 1, dtype=np.float64)
    return k, np.exp(-(k * k) * half_precision)


def _dual_terms(variance: float) -> tuple[np.ndarray, np.ndarray]:
    """m = 1..M and exp(-2 pi^2 variance m^2), the Poisson-dual terms, until negligible."""
    decay = 2.0 * math.pi**2 * variance
    # exp(-decay m^2) < 2^-80 once decay m^2 > 56.
    m_max = max(1, math.ceil(math.sqrt(56.0 / decay)))
    m = np.arange(1, m_max + 1, dtype=np.float64)
    return m, np.exp(-decay * m * m)


def _normaliser(variance: float, half_precision: float) -> float:
    """Z = sum over integers k of exp(-k^2 / (2 variance))."""
    if math.sqrt(variance) < _DIRECT_SUM_MAX_SIGMA:
        _, terms = _direct_terms(variance, half_precision)
        return math.fsum([1.0, *(2.0 * terms).tolist()])
    # Poisson summation: Z = sqrt(2 pi variance) * sum over m of exp(-2 pi^2 variance m^2).
    _, terms = _dual_terms(variance)
    return (
        math.sqrt(2.0 * math.pi) * math.sqrt(variance) * math.fsum([1.0, *(2.0 * terms).tolist()])
    )


def discrete_gaussian_variance(sigma, *, grid=None):
    """Exact variance of the discrete Gaussian N_Z(0, sigma^2), to double precision.

    ``Var = sum_k k^2 exp(-k^2/(2 sigma^2)) / sum_k exp(-k^2/(2 sigma^2))`` over all
    integers ``k``. It is smaller than ``sigma^2``, and the relative difference,
    about ``8 pi^2 sigma^2 exp(-2 pi^2 sigma^2)``, is below double precision from
    ``sigma = 1.5`` on; it is nonetheless computed, not assumed.

    Parameters
    ----------
    sigma : float, int, fractions.Fraction or decimal.Decimal
        Scale, finite and > 0 (a float at its exact binary value), with ``sigma**2``
        representable as a float64.
    grid : float, int, fractions.Fraction or decimal.Decimal, optional
        Grid step ``t > 0``: return the variance of ``t * N_Z(0, sigma^2 / t^2)``, the
        discrete Gaussian on ``tZ`` drawn by :func:`sample_discrete_gaussian` with the
        same ``grid``, i.e. ``t^2 * Var N_Z(0, sigma^2 / t^2)``.

    Returns
    -------
    float
        The variance, with a relative error of a few units in the last place.

    Raises
    ------
    ValueError
        If ``sigma`` or ``grid`` is not finite and > 0, or ``sigma^2 / grid^2`` or the
        result overflows float64.

    Notes
    -----
    Privacy: a function of public parameters only; consumes no budget.

    For ``sigma < 1`` both series are summed directly with :func:`math.fsum` up to
    ``|k| = 12 sigma + 2``. For larger ``sigma`` the Poisson summation identity
    ``Var = s - 4 pi^2 s^2 sum_m m^2 e^(-2 pi^2 s m^2) / sum_m e^(-2 pi^2 s m^2)``
    (with ``s = sigma^2``), which is exact, is summed instead: its terms decay like
    ``exp(-2 pi^2 sigma^2 m^2)``. For ``sigma`` below about 0.026 the variance is below
    the smallest normal float64 and loses relative (not absolute) precision.
    """
    variance, half_precision, step_squared = _float_scale(sigma, grid)
    if math.sqrt(variance) < _DIRECT_SUM_MAX_SIGMA:
        k, terms = _direct_terms(variance, half_precision)
        numerator = math.fsum((2.0 * k * k * terms).tolist())
        denominator = math.fsum([1.0, *(2.0 * terms).tolist()])
        result = numerator / denominator
    else:
        m, terms = _dual_terms(variance)
        ratio = math.fsum((2.0 * m * m * terms).tolist()) / math.fsum(
            [1.0, *(2.0 * terms).tolist()]
        )
        # Grouped so that a huge variance times a vanishing ratio cannot become inf * 0.
        result = variance - 4.0 * math.pi**2 * (variance * (variance * ratio))
    if step_squared == 1:
        return result
    scaled = _float_or_inf(Fraction(result) * step_squared)
    if not math.isfinite(scaled):
        raise ValueError(
            f"the variance on the grid must be representable as a float64; got sigma={sigma!r}, "
            f"grid={grid!r}"
        )
    return scaled


def discrete_gaussian_pmf(k, sigma):
    """Probability mass function of N_Z(0, sigma^2) at integer points.

    Parameters
    ----------
    k : int or array_like of int
        Integer points (integral floats are accepted).
    sigma : float, int, fractions.Fraction or decimal.Decimal
        Scale, finite and > 0 (a float at its exact binary value).

    Returns
    -------
    float or numpy.ndarray
        ``exp(-k^2 / (2 sigma^2)) / Z`` with the normaliser ``Z`` summed as in
        :func:`discrete_gaussian_variance`; a float for scalar ``k``.

    Raises
    ------
    ValueError
        If ``k`` is not integer-valued or ``sigma`` is invalid.

    Notes
    -----
    Privacy: a function of public parameters only; consumes no budget.
    """
    variance, half_precision, _ = _float_scale(sigma, None)
    points = np.asarray(k)
    if points.dtype == bool or not (
        np.issubdtype(points.dtype, np.integer) or np.issubdtype(points.dtype, np.floating)
    ):
        raise ValueError(f"k must be integer-valued; got dtype {points.dtype}")
    points = points.astype(np.float64)
    if not np.all(np.isfinite(points)) or not np.all(points == np.round(points)):
        raise ValueError("k must be integer-valued; got non-integer or non-finite entries")
    squares = points * points
    # 0 * inf would be NaN when 1/(2 sigma^2) overflows; the exponent at k = 0 is 0.
    exponents = np.multiply(squares, half_precision, out=np.zeros_like(squares), where=squares != 0)
    pmf = np.exp(-exponents) / _normaliser(variance, half_precision)
    if pmf.ndim == 0:
        return float(pmf)
    return pmf
