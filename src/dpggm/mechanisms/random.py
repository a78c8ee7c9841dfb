"""One convention for randomness: a ``random_state`` argument.

``random_state`` may be ``None`` (fresh OS entropy), an ``int`` seed, a
:class:`numpy.random.Generator`, or the string ``"secure"``. ``"secure"`` seeds a
generator with 256 bits from the operating system's cryptographic source
(:mod:`secrets`) and is what a production release should use; seeded generators are for
reproducible experiments and tests only. In every case the bit stream itself is NumPy's
PCG64, which is a statistical, not a cryptographic, generator.
"""

from __future__ import annotations

import numbers
import secrets

import numpy as np

__all__ = [
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


def secure_generator() -> np.random.Generator:
    """Return a generator seeded from the operating system's cryptographic source."""
    return np.random.Generator(np.random.PCG64(secrets.randbits(256)))


def check_random_state(random_state: int | np.random.Generator | str | None) -> np.random.Generator:
    """Turn a ``random_state`` argument into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or "secure"
        ``None`` draws fresh OS entropy; an ``int`` seeds a reproducible stream; a
        ``Generator`` is used as is (and advanced); ``"secure"`` seeds from
        :func:`secrets.randbits`.
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, str):
        if random_state == "secure":
            return secure_generator()
        raise ValueError(
            f"random_state must be None, an int, a numpy Generator or 'secure'; got {random_state!r}"
        )
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be a non-negative integer seed; got {random_state}")
        return np.random.default_rng(int(random_state))
    if isinstance(random_state, np.random.RandomState):
        raise TypeError(
            "random_state must be None, an int, a numpy Generator or 'secure'; the legacy "
            "numpy.random.RandomState is not supported"
        )
    raise TypeError(
        "random_state must be None, an int, a numpy Generator or 'secure'; "
        f"got {type(random_state).__name__}"
    )


def is_reproducible(random_state: int | np.random.Generator | str | None) -> bool:
    """True when someone other than this process may be able to regenerate the noise: a
    fixed seed, or a generator the caller built (and may have seeded)."""
    return not (random_state is None or (isinstance(random_state, str) and random_state == "secure"))


def describe_random_state(random_state: int | np.random.Generator | str | None) -> str:
    """A short description of the seed policy, recorded in every privacy guarantee.

    The seed itself is never part of the description: a released record that carried it
    would let anyone regenerate the noise.
    """
    if random_state is None:
        return "fresh OS entropy (unseeded PCG64)"
    if isinstance(random_state, str) and random_state == "secure":
        return "cryptographically seeded PCG64 (secrets.randbits(256))"
    if isinstance(random_state, np.random.Generator):
        return "caller-supplied numpy Generator (reproducible by whoever holds it)"
    return "fixed seed (reproducible by whoever holds it; not a private release)"
