"""Grids: the one place where released values meet the lattice their exact noise lives on.

Every exact release of the library rounds a statistic to a lattice ``t Z`` (``t`` a power
of two chosen from public parameters), adds integer noise drawn exactly in units of ``t``,
and maps the result back. The choices involved, each rounding toward the safe side, are
made here:

* :func:`grid_step` -- the step of an additive (Gaussian or Laplace) release: the largest
  power of two at most ``2**-10`` of the sensitivity per coordinate and of the noise scale;
* :func:`binade_step` -- the step of a comparison mechanism (AboveThreshold): the power of
  two ``2**-bits`` below the sensitivity's binade;
* :func:`inflated_sensitivity` -- the sensitivity of the rounded statistic: rounding moves
  each coordinate by at most ``t / 2``, so the integer statistic has l2 sensitivity at
  most ``Delta / t + sqrt(k)`` (l1: ``+ k``), enlarged by :data:`FLOAT_SLACK` for the
  floating-point error of the statistic itself, rounded **up**;
* :func:`sampler_scale_at_least` -- a noise scale in grid units the exact samplers take,
  never below the one asked for (more noise only strengthens a guarantee);
* :func:`to_grid` / :func:`from_grid` -- the exact maps between values and grid
  coordinates.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpggm.exceptions import NumericalError

__all__ = [
    "FLOAT_SLACK",
    "GRID_MARGIN",
    "MAX_GRID_COORDINATE",
    "binade_step",
    "from_grid",
    "grid_step",
    "inflated_sensitivity",
    "round_up",
    "sampler_scale_at_least",
    "to_grid",
    "to_grid_clipped",
]

#: Rounding to the grid may inflate the sensitivity by at most this share.
GRID_MARGIN = 2.0**-10
#: Relative allowance for the floating-point error of the statistic itself.
FLOAT_SLACK = 2.0**-20
#: Grid coordinates must stay below this so that ``t * k`` is an exact double.
MAX_GRID_COORDINATE = 2.0**52
#: Scales in grid units the exact samplers take as they are (numerator and denominator
#: below this); longer ones are rounded up to :data:`_SCALE_BITS` significant bits.
_SAMPLER_TERM_LIMIT = 1 << 57
_SCALE_BITS = 56


def round_up(value: float) -> float:
    """The next float above ``value``."""
    return math.nextafter(value, math.inf)


def grid_step(sensitivity: float, inflation_per_step: float, scale: float) -> float:
    """The largest power of two ``t`` with ``t * inflation_per_step <= sensitivity * 2^-10``
    and ``t <= scale * 2^-10``.

    ``inflation_per_step`` is ``sqrt(k)`` for an l2 sensitivity and ``k`` for an l1
    sensitivity of a ``k``-coordinate statistic; ``scale`` is the continuous noise scale
    the budget calls for. The first condition keeps the rounding allowance below 2^-10 of
    the sensitivity, the second keeps the grid 1024 times finer than the noise. Public
    parameters only.
    """
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be a finite number > 0; got {sensitivity!r}")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"noise scale must be a finite number > 0; got {scale!r}")
    limit = GRID_MARGIN * min(sensitivity / inflation_per_step, scale)
    step = 2.0 ** math.floor(math.log2(limit))
    while step > limit:
        step /= 2.0
    while 2.0 * step <= limit:
        step *= 2.0
    return step


def binade_step(value: float, bits: int) -> float:
    """The power of two ``2**(e - bits)`` where ``2**e <= value < 2**(e + 1)``."""
    return math.ldexp(1.0, math.frexp(value)[1] - 1 - bits)


def inflated_sensitivity(sensitivity: float, grid: float, inflation_per_step: float) -> float:
    """The sensitivity of a statistic rounded to the grid ``grid``: ``(sensitivity + grid *
    inflation_per_step) * (1 + FLOAT_SLACK)``, rounded up."""
    return round_up((sensitivity + grid * inflation_per_step) * (1.0 + FLOAT_SLACK))


def sampler_scale_at_least(units: Fraction, *, significant_bits: int | None = None) -> Fraction:
    """``units`` (a noise scale in grid units) as a rational the exact samplers take,
    never below it (a slightly larger noise scale only strengthens the guarantee).

    By default ``units`` itself when its numerator and denominator are below ``2**57``,
    else rounded **up** to a dyadic rational with 56 significant bits (at most 56 binary
    digits after the point); with ``significant_bits``, always rounded so (short rationals
    keep the samplers' integer arithmetic small)."""
    units = Fraction(units)
    if significant_bits is None:
        if units.numerator < _SAMPLER_TERM_LIMIT and units.denominator < _SAMPLER_TERM_LIMIT:
            return units
        significant_bits = _SCALE_BITS
    # Binary digits after the point: a denominator never beyond 2**significant_bits.
    magnitude = units.numerator.bit_length() - units.denominator.bit_length() + 1
    bits = significant_bits - max(magnitude, 0)
    return Fraction(-((-units.numerator << bits) // units.denominator) if bits >= 0
                    else -((-units.numerator) // (units.denominator << -bits)) << -bits,
                    1 << max(bits, 0))


def to_grid(values: np.ndarray, step: float) -> np.ndarray:
    """``round(values / step)`` as int64; dividing by a power of two is exact."""
    scaled = np.asarray(values, dtype=float) / step
    if not np.all(np.isfinite(scaled)) or np.max(np.abs(scaled), initial=0.0) >= MAX_GRID_COORDINATE:
        raise NumericalError(
            "the statistic is too large for an exact release on the grid "
            f"{step!r} (|value / grid| must stay below 2^52); check that the data were "
            "clipped to sensible bounds"
        )
    return np.rint(scaled).astype(np.int64)


def to_grid_clipped(values: np.ndarray, step: float) -> np.ndarray:
    """``round(values / step)`` clipped to ``+-2**52``: monotone, and moves a difference of
    ``d`` by at most ``d / step + 1`` steps (for comparisons, where a huge value only needs
    to stay huge)."""
    with np.errstate(over="ignore"):
        scaled = np.rint(np.asarray(values, dtype=float) / step)
    return np.clip(scaled, -MAX_GRID_COORDINATE, MAX_GRID_COORDINATE).astype(np.int64)


def from_grid(coordinates: np.ndarray, step: float) -> np.ndarray:
    """``coordinates * step`` as float64 (exact below ``2**52`` coordinates)."""
    if np.max(np.abs(coordinates), initial=0) >= MAX_GRID_COORDINATE:
        raise NumericalError(
            "the noisy release left the exactly representable range of the grid; the noise "
            "scale is too large for the grid chosen"
        )
    return coordinates.astype(np.float64) * step
