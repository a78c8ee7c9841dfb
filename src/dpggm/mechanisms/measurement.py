"""Measurements: every noise-adding step of the library is one object.

A measurement is built from public quantities only -- the sensitivity of what it releases
(from declared bounds), its size, and a budget or a noise scale -- and carries

* its public parameters (``record()``: the noise figures a guarantee states);
* its privacy map, ``privacy_map(sensitivity) -> Budget``: the guarantee it gives a query
  of that sensitivity, in the notion its analysis is stated in, each figure rounded toward
  more privacy loss (a guarantee is never understated);
* ``delivered``: what it delivers to the query it was calibrated for (``privacy_map`` of
  its own sensitivity, or the budget that map implies when the caller asked in another
  notion, e.g. ``(epsilon, delta)`` met through zCDP);
* ``release(...)``: the noisy answer, every random word from one
  :class:`~dpggm.mechanisms.random.RandomSource`;
* ``planned(step)``: the :class:`~dpggm.mechanisms.plan.PlannedMeasurement` a release plan
  lists for it, holding the object itself, so that a fit runs exactly what its plan states.

The measurements of the library:

==========================================================  ===================================
:class:`~dpggm.mechanisms.additive.GaussianMechanism`        Gaussian noise, exact on a grid
:class:`~dpggm.mechanisms.additive.LaplaceMechanism`         Laplace noise, exact on a grid
:class:`~dpggm.mechanisms.additive.NoisyCount`               a count of sensitivity 1
:class:`~dpggm.mechanisms.noise.ExponentialMechanism`        exact selection
:class:`~dpggm.mechanisms.noise.AboveThreshold`              exact sparse vector
:class:`~dpggm.mechanisms.noise.WishartMechanism`            Wishart noise (float draws)
:class:`~dpggm.mechanisms.release.EntrywiseGaussian`         SULQ: one Gaussian query per entry
:class:`~dpggm.mechanisms.publish.RecordPublication`         noise on every published record
==========================================================  ===================================

The formulas behind the maps live in one place each: ``rho = Delta**2 / (2 sigma**2)``,
``mu = Delta / sigma`` and ``epsilon = Delta_1 / b`` in :mod:`dpggm.privacy.calibration`,
every conversion between notions in :mod:`dpggm.privacy.budgets` (``accounting_total``,
``exact_cost``), every grid choice in :mod:`dpggm.mechanisms.grid`.
"""

from __future__ import annotations

from typing import Any

from dpggm.mechanisms.plan import PlannedMeasurement
from dpggm.privacy.budgets import Budget, compose

__all__ = ["Measurement", "repeated"]


def repeated(budget: Budget, times: int) -> Budget:
    """``times`` independent runs of a step that delivers ``budget`` (composition, summed
    exactly and rounded up once)."""
    times = int(times)
    if times < 1:
        raise ValueError(f"times must be an integer >= 1; got {times!r}")
    return budget if times == 1 else compose([budget] * times)


class Measurement:
    """The interface of a measurement (see the module documentation).

    Subclasses set :attr:`mechanism` (a name), :attr:`sensitivity` and :attr:`delivered`,
    and implement :meth:`privacy_map`, :meth:`record` and ``release``.
    """

    #: The mechanism's name in plans and records.
    mechanism: str = ""
    #: Independent queries one release answers (one per coordinate for entrywise noise);
    #: :attr:`delivered` is their composition.
    runs: int = 1

    sensitivity: float
    delivered: Budget

    def privacy_map(self, sensitivity: float) -> Budget:  # pragma: no cover - abstract
        """The guarantee for a query of ``sensitivity`` (in this measurement's notion)."""
        raise NotImplementedError

    def record(self, prefix: str = "") -> dict[str, Any]:  # pragma: no cover - abstract
        """The public noise parameters (identical for neighbouring data sets)."""
        raise NotImplementedError

    def planned(self, step: str, *, repetitions: int = 1, mechanism: str | None = None,
                sensitivity_rule: str = "", **noise: Any) -> PlannedMeasurement:
        """This measurement as a step of a release plan: ``repetitions`` independent
        releases (one per column, say), their composed budget, the sensitivity of one query
        and the public noise figures of :meth:`record` (plus ``noise``); the step's
        ``repetitions`` counts every query (``repetitions`` times :attr:`runs`)."""
        return PlannedMeasurement(
            step=step,
            mechanism=mechanism or self.mechanism,
            budget=repeated(self.delivered, repetitions),
            repetitions=int(repetitions) * self.runs,
            sensitivity=float(self.sensitivity),
            sensitivity_rule=sensitivity_rule,
            noise={**self.record(), **noise},
            measurement=self,
        )
