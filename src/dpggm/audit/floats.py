"""The floating-point support of NumPy's Laplace and Gaussian samplers (Mironov 2012).

A release ``y = fl(s + z)`` with ``z`` drawn by ``numpy.random.Generator.laplace(0, b)``
can only take values whose noise part ``z`` is one of the doubles that sampler can return.
That set is sparse: NumPy draws ``U = k / 2**53`` (``k`` a 53-bit integer) and returns
``b * log(U + U)`` for ``U < 0.5`` and ``-(b * log(2.0 - U - U))`` otherwise, each
operation rounded to double (``numpy/random/src/distributions/distributions.c``,
``random_laplace``; ``next_double`` is ``(next_uint64 >> 11) * 2**-53`` for every bit
generator the library uses). Near any value only about one double in ``e`` or fewer is an
output, so a release from a data set ``D1`` is often *not* a value the mechanism could
have produced from ``D0``: that event has probability zero under ``D0`` and separates
the two data sets however large the noise. Exact noise on a grid closes the gap.

:func:`laplace_reachable` decides, element by element and exactly, whether an observed
double can be produced from a center ``s`` by that sampler. It evaluates ``log`` with
:func:`math.log`, which is the C library's ``log`` -- the function NumPy's C code calls
(``numpy.log`` may use its own SIMD code and differ in the last bit).

:func:`gaussian_reachable` does the same for ``Generator.normal(0, sigma)``, which returns
``sigma * x`` with ``x = +-rabs * wi[idx]`` from the 256-layer ziggurat
(``random_standard_normal``: ``rabs`` a 52-bit integer, ``idx`` a byte, both from one
64-bit word) except in the rare tail of layer 0. The layer widths ``wi`` are NumPy's
constants; :func:`ziggurat_widths` recovers them from the generator itself (one draw per
seed, matched against the raw 64-bit word of the same seed), so nothing is copied and a
change in NumPy shows up as a loss of power, never as a false bound: the audit estimates
every event's probability from runs, so an imperfect event costs power, not validity.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict

import numpy as np

__all__ = ["gaussian_reachable", "laplace_reachable", "numpy_laplace_value", "ziggurat_widths"]

_HALF = 1 << 52  # k below this gives U < 0.5
_TOP = 1 << 53
_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)


def numpy_laplace_value(k: int, scale: float) -> float:
    """The double ``Generator.laplace(0.0, scale)`` returns when its uniform is ``k / 2**53``.

    ``k`` must be in ``[1, 2**53)`` (NumPy rejects ``k = 0`` and draws again).
    """
    u = k * 2.0**-53  # exact: k < 2**53
    if k >= _HALF:
        return 0.0 - scale * math.log((2.0 - u) - u)
    return 0.0 + scale * math.log(u + u)


def _key(x: float) -> int:
    """An integer order-isomorphic to the doubles (``-0.0`` and ``0.0`` share 0)."""
    bits = int(np.float64(x).view(np.int64))
    return bits if bits >= 0 else -int(np.int64(bits) & _SIGN)


def _from_key(key: int) -> float:
    bits = key if key >= 0 else -key | (1 << 63)
    return float(np.array(bits, dtype=np.uint64).view(np.float64))


def _preimage(y: float, center: float) -> tuple[float, float] | None:
    """The doubles ``z`` with ``fl(center + z) == y``: an interval ``[lo, hi]`` (``None``
    if empty)."""
    if center == 0.0:
        return y, y
    guess = _key(y - center)
    start = next(
        (k for k in (guess, guess - 1, guess + 1, guess - 2, guess + 2)
         if center + _from_key(k) == y),
        None,
    )
    if start is None:
        return None
    bounds = []
    for direction in (-1, 1):
        # Exponential search for a key outside, then bisection back to the edge.
        inside, step = start, 1
        while center + _from_key(inside + direction * step) == y:
            inside += direction * step
            step *= 2
        outside = inside + direction * step
        while abs(outside - inside) > 1:
            middle = (inside + outside) // 2
            if center + _from_key(middle) == y:
                inside = middle
            else:
                outside = middle
        bounds.append(_from_key(inside))
    return bounds[0], bounds[1]


def _branch_hits(lo: float, hi: float, scale: float, first: int, last: int) -> bool:
    """Whether some ``k`` in ``[first, last]`` gives a value in ``[lo, hi]``.

    Along each branch the sampler is non-decreasing in ``k`` (log and a product by a
    positive constant are monotone under rounding), so the smallest ``k`` whose value
    reaches ``lo`` decides: it is found from an estimate, checked by its neighbours, and by
    bisection when the estimate is off.
    """
    def value(k: int) -> float:
        return numpy_laplace_value(k, scale)

    if value(first) > hi or value(last) < lo:
        return False
    # Estimate the crossing from the inverse map; exp/log rounding moves it by a few units.
    if first < _HALF:
        guess = math.exp(lo / scale) * 2.0**52
    else:
        guess = (1.0 - math.exp(-lo / scale) / 2.0) * 2.0**53
    guess = int(min(max(guess, first), last)) if math.isfinite(guess) else first
    a, b = max(first, guess - 8), min(last, guess + 8)
    if not (a == first or value(a) < lo):
        a = first
    if not (b == last or value(b) >= lo):
        b = last
    if value(a) >= lo:
        k = a
    else:
        # invariant: value(a) < lo <= value(b)
        while b - a > 1:
            middle = (a + b) // 2
            if value(middle) >= lo:
                b = middle
            else:
                a = middle
        k = b
    return lo <= value(k) <= hi


def laplace_reachable(values: np.ndarray, center: np.ndarray, scale: float) -> np.ndarray:
    """Whether each ``values[i]`` equals ``fl(center[i] + z)`` for some output ``z`` of
    ``numpy.random.Generator.laplace(0.0, scale)``.

    Parameters
    ----------
    values : array of float
        Observed releases.
    center : array of float, broadcastable to ``values``
        The exact statistic of the reference data set, as the mechanism computes it.
    scale : float
        The Laplace scale the mechanism used (a public parameter).

    Returns
    -------
    ndarray of bool, shape of ``values``
    """
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0; got {scale!r}")
    values = np.asarray(values, dtype=float)
    center = np.broadcast_to(np.asarray(center, dtype=float), values.shape)
    out = np.zeros(values.shape, dtype=bool)
    for index in np.ndindex(values.shape):
        y, c = float(values[index]), float(center[index])
        if not math.isfinite(y):
            continue
        interval = _preimage(y, c)
        if interval is None:
            continue
        lo, hi = interval
        out[index] = (lo <= 0.0 and _branch_hits(lo, min(hi, 0.0), scale, 1, _HALF - 1)) or (
            hi >= 0.0 and _branch_hits(max(lo, 0.0), hi, scale, _HALF, _TOP - 1)
        )
    return out


@functools.lru_cache(maxsize=1)
def ziggurat_widths(seeds: int = 12000) -> np.ndarray:
    """NumPy's ziggurat layer widths ``wi[0..255]`` for ``standard_normal``, recovered from
    draws: for each seed, the first raw word gives ``idx`` and ``rabs``, and the first
    normal is ``+-fl(rabs * wi[idx])`` unless the draw was rejected; the double ``w`` that
    reproduces most draws of a layer is its width."""
    observed: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for seed in range(seeds):
        word = int(np.random.PCG64(seed).random_raw())
        x = float(np.random.Generator(np.random.PCG64(seed)).standard_normal())
        idx, rest = word & 0xFF, word >> 8
        rabs = (rest >> 1) & 0x000FFFFFFFFFFFFF
        if rabs and (x < 0) == bool(rest & 1):
            observed[idx].append((float(rabs), abs(x)))
    widths = np.full(256, np.nan)
    for idx, pairs in observed.items():
        rabs, ax = np.array(pairs).T
        center = ax / rabs
        candidates = np.unique(np.concatenate(
            [center] + [np.nextafter(center, direction * np.inf) for direction in (-1, 1)]
            + [np.nextafter(np.nextafter(center, d * np.inf), d * np.inf) for d in (-1, 1)]
        ))
        hits = (rabs[:, None] * candidates[None, :] == ax[:, None]).sum(axis=0)
        widths[idx] = candidates[np.argmax(hits)]
    return widths


def _float_interval(y: np.ndarray, center: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lo, hi = np.full(y.shape, np.nan), np.full(y.shape, np.nan)
    ok = np.zeros(y.shape, dtype=bool)
    for i, (v, c) in enumerate(zip(y, center)):
        if math.isfinite(v):
            interval = _preimage(float(v), float(c))
            if interval is not None:
                lo[i], hi[i], ok[i] = interval[0], interval[1], True
    return lo, hi, ok


def gaussian_reachable(values: np.ndarray, center: np.ndarray, sigma: float) -> np.ndarray:
    """Whether each ``values[i]`` equals ``fl(center[i] + z)`` for some output ``z`` of
    ``numpy.random.Generator.normal(0.0, sigma)`` on its ziggurat (non-tail) path.

    Outputs of the rare tail of layer 0 (beyond about 3.65 sigma) are counted as not
    reachable; the audit measures the event's probability on both data sets, so this
    costs power only.
    """
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0; got {sigma!r}")
    values = np.asarray(values, dtype=float)
    shape = values.shape
    flat = values.ravel()
    center = np.broadcast_to(np.asarray(center, dtype=float), shape).ravel()
    lo, hi, ok = _float_interval(flat, center)
    out = np.zeros(flat.shape, dtype=bool)
    zero = ok & (lo <= 0) & (hi >= 0)
    out[zero] = True  # rabs = 0 gives exactly 0
    rest = ok & ~zero
    if rest.any():
        # |z| = fl(sigma * fl(rabs * w)): the sampler is symmetric.
        a = np.where(lo[rest] > 0, lo[rest], -hi[rest])
        b = np.where(lo[rest] > 0, hi[rest], -lo[rest])
        widths = ziggurat_widths()
        widths = widths[np.isfinite(widths)]
        guess = np.floor(a[:, None] / sigma / widths[None, :])
        found = np.zeros(len(a), dtype=bool)
        for shift in range(-3, 4):
            rabs = guess + shift
            valid = (rabs >= 0) & (rabs < 2.0**52)
            z = sigma * (rabs * widths[None, :])
            found |= np.any(valid & (z >= a[:, None]) & (z <= b[:, None]), axis=1)
        out[np.flatnonzero(rest)] = found
    return out.reshape(shape)
