"""Compiled kernels of the exact integer samplers (numba), and the bit stream that feeds them.

Every random decision here is a comparison of uniform random bits with the binary
expansion of a rational number ``num/den``, revealed one bit at a time (expected two
bits per coin), so all arithmetic is on 64-bit integers no larger than ``2 den``. No
floating-point number enters any decision.

The kernels read bits from a ``uint64`` buffer at a global bit position. A kernel that
runs out of bits in the middle of a sample (or attempt) reports the bit position at which
that sample started; the driver then keeps the buffer from that word on, appends fresh
words and *replays* the sample from its start. Because each sample is a deterministic
function of the bit stream from its start, the replay reproduces the same decisions and
continues where the buffer ended: the output is the same as with an unbounded stream,
so refills never bias the result. While a buffer is exhausted the kernels read 1-bits,
which make every coin with probability < 1 fail and every loop terminate.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpggm.mechanisms.random import RandomSource

__all__ = ["BitStream", "gaussian_kernel", "laplace_kernel", "selection_kernel"]

# Status codes returned by the kernels.
DONE = 0
EXHAUSTED = 1
OVERFLOW = 2

# Position state: st[0] = global bit position, st[1] = 1 once the buffer is exhausted.
_ONE = np.uint64(1)


@njit(cache=True, inline="always")
def _bit(words, st):
    pos = st[0]
    index = pos >> 6
    st[0] = pos + 1
    if index >= words.shape[0]:
        st[1] = 1
        return 1
    return np.int64((words[index] >> np.uint64(pos & 63)) & _ONE)


@njit(cache=True)
def _bits(words, st, count):
    """``count`` (1..62) random bits as a non-negative int64."""
    pos = st[0]
    index = pos >> 6
    offset = pos & 63
    st[0] = pos + count
    last = (pos + count - 1) >> 6
    if last >= words.shape[0]:
        st[1] = 1
        return (np.int64(1) << count) - 1
    value = words[index] >> np.uint64(offset)
    if offset + count > 64:
        value |= words[index + 1] << np.uint64(64 - offset)
    return np.int64(value & ((_ONE << np.uint64(count)) - _ONE))


@njit(cache=True)
def _bernoulli(num, den, words, st):
    """Exact Bernoulli(num/den) for 0 <= num and 0 < den < 2**62.

    U < num/den is decided at the first bit where U's expansion differs from that of
    num/den; if the expansion of num/den terminates first, U >= num/den.
    """
    if num >= den:
        return True
    remainder = num
    while remainder != 0:
        remainder <<= 1
        digit = 0
        if remainder >= den:
            digit = 1
            remainder -= den
        bit = _bit(words, st)
        if bit != digit:
            return bit < digit
    return False


@njit(cache=True)
def _bernoulli_exp(num, den, words, st):
    """Exact Bernoulli(exp(-num/den)) for 0 <= num <= den (Canonne, Kamath, Steinke 2020,
    Algorithm 1): coins A_k ~ Bernoulli(num/(den k)) until the first failure at K;
    Pr[K odd] = exp(-num/den). A_k is the conjunction of Bernoulli(1/k), Bernoulli(num/den).
    """
    k = 1
    while True:
        if k > 1 and not _bernoulli(1, k, words, st):
            break
        if not _bernoulli(num, den, words, st):
            break
        k += 1
    return (k & 1) == 1


@njit(cache=True)
def _bernoulli_exp_reciprocal(d, words, st):
    """Exact Bernoulli(exp(-1/d)) for an integer d >= 1: Algorithm 1 with the single coins
    A_k ~ Bernoulli(1/(d k))."""
    k = 1
    while _bernoulli(1, d * k, words, st):
        k += 1
    return (k & 1) == 1


@njit(cache=True)
def _bernoulli_exp_half_square(num, den, words, st):
    """Exact Bernoulli(exp(-x^2/2)) for x = num/den in [0, 1]: Algorithm 1 with coins
    Bernoulli(x^2/(2k)) = Bernoulli(1/(2k)) and Bernoulli(x) and Bernoulli(x)."""
    k = 1
    while True:
        if not _bernoulli(1, 2 * k, words, st):
            break
        if not _bernoulli(num, den, words, st):
            break
        if not _bernoulli(num, den, words, st):
            break
        k += 1
    return (k & 1) == 1


@njit(cache=True)
def _uniform_below(bound, n_bits, words, st):
    """Exactly uniform integer in [0, bound) by rejection from ``n_bits``-bit integers,
    where 2**(n_bits-1) < bound <= 2**n_bits (n_bits = 0 for bound = 1)."""
    if bound == 1:
        return 0
    while True:
        value = _bits(words, st, n_bits)
        if value < bound or st[1] != 0:
            return value


@njit(cache=True)
def gaussian_kernel(out, start, words, pos, a, b, m, m_bits, k_max):
    """Fill out[start:] with N_Z(0, (a/b)^2): Karney (2016), "Sampling exactly from the
    normal distribution", Algorithm D with mean 0, in integer arithmetic.

    With sigma = a/b and m = ceil(sigma): draw k >= 0 with Pr ∝ exp(-k/2) and keep it with
    probability exp(-k(k-1)/2) (so Pr[k] ∝ exp(-k^2/2)); a sign s; n = ceil(k sigma) + j
    for j uniform below m; with x = (n - k sigma)/sigma = (b n - k a)/a, reject x >= 1 and
    the second copy of zero, then accept with probability exp(-x(2k + x)/2) =
    exp(-x)^k exp(-x^2/2). The accepted n has Pr ∝ exp(-(k + x)^2/2) = exp(-n^2/(2 sigma^2)).

    Requires a, b < 2**62 and (k_max + 2) a + 2 b < 2**63; returns (status, filled, pos).
    """
    st = np.zeros(2, dtype=np.int64)
    st[0] = pos
    i = start
    while i < out.shape[0]:
        sample_start = st[0]
        while True:
            if st[1] != 0:
                return EXHAUSTED, i, sample_start
            k = 0
            while _bernoulli_exp_reciprocal(2, words, st) and st[1] == 0:
                k += 1
            keep = True
            for _ in range(k * (k - 1) // 2):
                if not _bernoulli_exp_reciprocal(1, words, st):
                    keep = False
                    break
            if st[1] != 0:
                return EXHAUSTED, i, sample_start
            if not keep:
                continue
            if k > k_max:
                return OVERFLOW, i, sample_start
            negative = _bit(words, st)
            j = _uniform_below(m, m_bits, words, st)
            if st[1] != 0:
                return EXHAUSTED, i, sample_start
            n = (k * a + b - 1) // b + j
            x = b * n - k * a
            if x >= a or (x == 0 and k == 0 and negative == 1):
                continue
            for _ in range(k):
                if not _bernoulli_exp(x, a, words, st):
                    keep = False
                    break
            if not keep or not _bernoulli_exp_half_square(x, a, words, st):
                continue
            if st[1] != 0:
                return EXHAUSTED, i, sample_start
            out[i] = -n if negative == 1 else n
            break
        i += 1
    return DONE, i, st[0]


@njit(cache=True)
def laplace_kernel(out, start, words, pos, t, s, t_bits, v_max):
    """Fill out[start:] with the discrete Laplace of scale t/s (Pr[y] ∝ exp(-|y| s/t)):
    Canonne, Kamath, Steinke (2020), Algorithm 2. U uniform below t kept with probability
    exp(-U/t), V geometric (failures of Bernoulli(exp(-1))), |y| = floor((U + t V)/s),
    a sign, and the second copy of zero rejected.

    Requires t, s < 2**62 and t (v_max + 1) < 2**63; returns (status, filled, pos).
    """
    st = np.zeros(2, dtype=np.int64)
    st[0] = pos
    i = start
    while i < out.shape[0]:
        sample_start = st[0]
        while True:
            if st[1] != 0:
                return EXHAUSTED, i, sample_start
            u = _uniform_below(t, t_bits, words, st)
            if st[1] != 0:
                return EXHAUSTED, i, sample_start
            if not _bernoulli_exp(u, t, words, st):
                continue
            v = 0
            while _bernoulli_exp_reciprocal(1, words, st) and st[1] == 0:
                v += 1
            if st[1] != 0:
                return EXHAUSTED, i, sample_start
            if v > v_max:
                return OVERFLOW, i, sample_start
            magnitude = (u + t * v) // s
            negative = _bit(words, st)
            if negative == 1 and magnitude == 0:
                continue
            if st[1] != 0:
                return EXHAUSTED, i, sample_start
            out[i] = -magnitude if negative == 1 else magnitude
            break
        i += 1
    return DONE, i, st[0]


@njit(cache=True)
def selection_kernel(words, pos, whole_exponents, n_bits):
    """One exact proposal of the exponential mechanism's rejection sampler: r uniform over
    the candidates, kept with probability exp(-L_r) (L_r Bernoulli(exp(-1)) coins), where
    L_r = whole_exponents[r] is an integer lower bound of the candidate's exponent.

    Returns (status, r, pos); with EXHAUSTED, pos is where the attempt started.
    """
    st = np.zeros(2, dtype=np.int64)
    st[0] = pos
    count = whole_exponents.shape[0]
    while True:
        attempt_start = st[0]
        r = _uniform_below(count, n_bits, words, st)
        if st[1] != 0:
            return EXHAUSTED, -1, attempt_start
        keep = True
        for _ in range(whole_exponents[r]):
            if not _bernoulli_exp_reciprocal(1, words, st):
                keep = False
                break
        if st[1] != 0:
            return EXHAUSTED, -1, attempt_start
        if keep:
            return DONE, r, st[0]


def bit_length(value: int) -> int:
    """Bits needed for the uniform draw below ``value`` (0 for ``value == 1``)."""
    return (int(value) - 1).bit_length()


class BitStream:
    """Uniform random bits from one random source, in 64-bit words.

    ``random_state`` is anything :class:`~dpggm.mechanisms.random.RandomSource` accepts:
    ``None`` and ``"secure"`` read every word from the operating system's cryptographic
    source (:func:`os.urandom`); an ``int`` seed or a :class:`numpy.random.Generator` draws
    words from that generator (reproducible experiments; a Generator is advanced by the
    number of words drawn); a ``RandomSource`` is used as it is.
    """

    def __init__(self, random_state: object) -> None:
        self.source = RandomSource.of(random_state)
        self.words = np.zeros(0, dtype=np.uint64)
        self.pos = 0

    def _fresh(self, count: int) -> np.ndarray:
        return self.source.words(count)

    def refill(self, count: int) -> None:
        """Drop whole words before the current position and append ``count`` fresh words."""
        first = self.pos >> 6
        self.words = np.concatenate([self.words[first:], self._fresh(max(int(count), 1))])
        self.pos &= 63

    def next_word(self) -> int:
        """The next whole unread word (the rest of a partly read word is skipped)."""
        index = -(-self.pos // 64)
        if index >= self.words.shape[0]:
            self.pos = index * 64
            self.refill(64)
            index = self.pos >> 6
        self.pos = (index + 1) * 64
        return int(self.words[index])
