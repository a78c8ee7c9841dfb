"""One convention for randomness: a ``random_state`` argument, and one
:class:`RandomSource` that carries it to every sampler of a release.

``random_state`` may be ``None``, the string ``"secure"``, an ``int`` seed or a
:class:`numpy.random.Generator`.

* ``None`` and ``"secure"`` (the same thing: the command line's default) make a
  *cryptographic* source: every random word of a release -- the exact discrete Gaussian and
  Laplace samplers, the exponential mechanism, AboveThreshold, the private quantiles, and
  the float samplers behind ``noise="float"`` and the Wishart mechanisms -- is read from the
  operating system's cryptographically secure generator (:func:`os.urandom`). NumPy's
  PCG64 is a statistical generator (its state can be recovered from its outputs), so it
  never supplies release noise under these settings.
* An ``int`` seed or a caller's Generator make a *reproducible* source whose words come
  from that PCG64 stream: an experiment, never a private release (whoever holds the seed
  can regenerate the noise; such records have validity ``"none"``).

A fit builds one :class:`RandomSource` (held by its
:class:`~dpggm.mechanisms.context.ReleaseContext`) and every sampler takes it, so no call
site can reach for another stream. Randomness that only post-processes released values
(MCMC chains, cross-validation shuffles, synthetic data) may stay PCG64: it draws from
:func:`check_random_state`, seeded from the operating system when ``random_state`` is
``None`` or ``"secure"``.
"""

from __future__ import annotations

import numbers
import os
import secrets
from typing import Any

import numpy as np

__all__ = [
    "RandomSource",
    "RandomState",
    "SEEDED_REASON",
    "check_random_state",
    "describe_random_state",
    "is_reproducible",
    "secure_generator",
]

#: Why a seeded run is reported with validity "none".
SEEDED_REASON = (
    "seeded for reproducibility: whoever holds the seed (or the generator) can regenerate "
    "the noise and remove it, so this is an experiment, not a private release; use "
    "random_state=None or 'secure' for a release"
)

RandomState = "int | np.random.Generator | str | None"

_MESSAGE = "random_state must be None, an int, a numpy Generator, 'secure' or a RandomSource"
# Doubles in (0, 1) from the top 53 bits of a word: (k + 1/2) / 2**53.
_HALF_ULP = 2.0**-54
_DOUBLE_SCALE = 2.0**-53


def _is_secure_string(value: Any) -> bool:
    return isinstance(value, str) and value == "secure"


def _check_seed(random_state: Any) -> None:
    """Refuse what is not a ``random_state`` (no generator is built here)."""
    if random_state is None or isinstance(random_state, (np.random.Generator, RandomSource)):
        return
    if isinstance(random_state, str):
        if random_state != "secure":
            raise ValueError(f"{_MESSAGE}; got {random_state!r}")
        return
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be a non-negative integer seed; got {random_state}")
        return
    if isinstance(random_state, np.random.RandomState):
        raise TypeError(f"{_MESSAGE}; the legacy numpy.random.RandomState is not supported")
    raise TypeError(f"{_MESSAGE}; got {type(random_state).__name__}")


class RandomSource:
    """The random words of one release, from one ``random_state``.

    Parameters
    ----------
    random_state : None, "secure", int, numpy.random.Generator or RandomSource
        ``None`` / ``"secure"``: every word from :func:`os.urandom`. An ``int``: a fresh
        ``numpy.random.default_rng(seed)``. A Generator: that generator (advanced by every
        draw). A ``RandomSource`` is returned by :meth:`of` unchanged.

    Notes
    -----
    Every sampler of the library reads its randomness through :meth:`words` (the exact
    integer samplers, the exponential mechanism, AboveThreshold) or through the float
    draws below (``noise="float"``, the Wishart mechanisms). With a reproducible source the
    float draws are NumPy's own samplers, so seeded runs stay bit-for-bit reproducible; with
    a cryptographic source they are inverse-CDF transforms of uniform doubles made from
    :func:`os.urandom` words (still floating-point samplers: such releases are reported
    ``"invalid"``, see :data:`~dpggm.mechanisms.additive.FLOAT_NOISE_REASON`).
    """

    __slots__ = ("_draws", "_generator")

    def __init__(self, random_state: Any = None) -> None:
        _check_seed(random_state)
        # Whether anything was drawn, shared with the sources built from this one.
        self._draws = random_state._draws if isinstance(random_state, RandomSource) else [False]
        if isinstance(random_state, RandomSource):
            self._generator = random_state._generator
        elif random_state is None or _is_secure_string(random_state):
            self._generator = None
        elif isinstance(random_state, np.random.Generator):
            self._generator = random_state
        else:
            self._generator = np.random.default_rng(int(random_state))

    @classmethod
    def of(cls, random_state: Any) -> RandomSource:
        """``random_state`` itself if it is a source, else a new source built from it (an
        ``int`` then starts a fresh stream: convert once per release, not per draw)."""
        return random_state if isinstance(random_state, RandomSource) else cls(random_state)

    @property
    def cryptographic(self) -> bool:
        """Whether every word comes from the operating system's cryptographic generator."""
        return self._generator is None

    @property
    def reproducible(self) -> bool:
        """Whether the words come from a seeded (PCG64) stream someone else may hold."""
        return self._generator is not None

    @property
    def drawn(self) -> bool:
        """Whether any random word was drawn (by this source or one built from it): from
        then on, whatever happens may depend on the noise."""
        return self._draws[0]

    def words(self, count: int) -> np.ndarray:
        """``count`` uniform 64-bit words (``uint64``)."""
        self._draws[0] = True
        count = int(count)
        if self._generator is None:
            return np.frombuffer(os.urandom(8 * count), dtype=np.uint64).copy()
        return self._generator.integers(0, 1 << 64, size=count, dtype=np.uint64)

    def _uniform(self, size: Any) -> np.ndarray:
        """Uniform doubles in the open interval (0, 1), 53 random bits each."""
        shape = () if size is None else size
        count = int(np.prod(shape, dtype=np.int64)) if shape != () else 1
        top = (self.words(count) >> np.uint64(11)).astype(np.float64)
        return (top * _DOUBLE_SCALE + _HALF_ULP).reshape(shape)

    # Float draws: NumPy's samplers for a reproducible source (bit-for-bit as before),
    # inverse-CDF transforms of cryptographic uniforms otherwise.

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Any:
        if self._generator is not None:
            self._draws[0] = True
            return self._generator.normal(loc, scale, size=size)
        from scipy import special

        return loc + scale * special.ndtri(self._uniform(size))

    def standard_normal(self, size: Any = None) -> Any:
        return self.normal(0.0, 1.0, size=size)

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Any:
        if self._generator is not None:
            self._draws[0] = True
            return self._generator.laplace(loc, scale, size=size)
        u = self._uniform(size)
        # Inverse CDF: log(2u) below one half, -log(2 - 2u) above (both exact doublings).
        return loc + scale * np.where(u < 0.5, np.log(u + u), -np.log((2.0 - u) - u))

    def chisquare(self, df: Any, size: Any = None) -> Any:
        if self._generator is not None:
            self._draws[0] = True
            return self._generator.chisquare(df, size=size)
        from scipy import special

        degrees = np.asarray(df, dtype=float)
        shape = degrees.shape if size is None else size
        return 2.0 * special.gammaincinv(degrees / 2.0, self._uniform(shape))

    def post_processing_generator(self) -> np.random.Generator:
        """A NumPy Generator for randomness that only post-processes released values: the
        caller's stream when reproducible, else PCG64 seeded from the operating system."""
        if self._generator is not None:
            return self._generator
        return secure_generator()

    def describe(self) -> str:
        """The seed policy as recorded in a guarantee (never the seed)."""
        if self._generator is None:
            return (
                "cryptographic: every random word of the release from the operating "
                "system's CSPRNG (os.urandom)"
            )
        return "seeded PCG64 stream (reproducible by whoever holds the seed; not a private release)"

    def __repr__(self) -> str:
        return "RandomSource('secure')" if self._generator is None else "RandomSource(<seeded>)"


def secure_generator() -> np.random.Generator:
    """A NumPy Generator seeded with 256 bits from the operating system's cryptographic
    source: for post-processing randomness only (its PCG64 stream is not cryptographic;
    release noise comes from :class:`RandomSource`)."""
    return np.random.Generator(np.random.PCG64(secrets.randbits(256)))


def check_random_state(random_state: int | np.random.Generator | str | None) -> np.random.Generator:
    """Turn a ``random_state`` argument into a :class:`numpy.random.Generator`, for
    randomness that is not release noise (post-processing, synthetic data).

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator, "secure" or RandomSource
        ``None`` draws fresh OS entropy; an ``int`` seeds a reproducible stream; a
        ``Generator`` is used as is (and advanced); ``"secure"`` seeds from
        :func:`secrets.randbits`; a :class:`RandomSource` gives its post-processing
        generator.
    """
    _check_seed(random_state)
    if isinstance(random_state, RandomSource):
        return random_state.post_processing_generator()
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if _is_secure_string(random_state):
        return secure_generator()
    return np.random.default_rng(int(random_state))


def is_reproducible(random_state: Any) -> bool:
    """True when someone other than this process may be able to regenerate the noise: a
    fixed seed, or a generator the caller built (and may have seeded)."""
    if isinstance(random_state, RandomSource):
        return random_state.reproducible
    return not (random_state is None or _is_secure_string(random_state))


def describe_random_state(random_state: Any) -> str:
    """A short description of the seed policy, recorded in every privacy guarantee.

    The seed itself is never part of the description: a released record that carried it
    would let anyone regenerate the noise.
    """
    if isinstance(random_state, RandomSource):
        return random_state.describe()
    if random_state is None or _is_secure_string(random_state):
        return RandomSource(None).describe()
    if isinstance(random_state, np.random.Generator):
        return "caller-supplied numpy Generator (reproducible by whoever holds it)"
    return "fixed seed (reproducible by whoever holds it; not a private release)"
