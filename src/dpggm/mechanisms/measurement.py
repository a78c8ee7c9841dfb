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

from fractions import Fraction
from typing import Any

from dpggm.mechanisms.plan import PlannedMeasurement
from dpggm.privacy.budgets import ZCDP, Budget, budget_from_cost, compose, exact_cost

__all__ = ["Measurement", "RuledMeasurement", "repeated"]


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


class RuledMeasurement(Measurement):
    """A planned measurement whose mechanism is calibrated only when the step runs: its
    sensitivity follows a rule on a value released by an earlier step (a private norm
    bound, private ranges) or on the records' declared clipping, its budget is fixed by the
    plan.

    Parameters
    ----------
    mechanism : str
        The mechanism's name in plans and records.
    budget : Budget
        What the step delivers (:attr:`delivered`), whatever the value the rule reads.
    unit : Measurement, optional
        The mechanism calibrated to sensitivity 1 with the step's budget: its privacy map
        is this measurement's, for a query of ``sensitivity`` times the one the rule sets
        (the noise scales with the rule's sensitivity, so the ratio is what counts).
    calibrate : callable, optional
        ``calibrate(*released, **public)`` builds the calibrated mechanism (a
        :class:`Measurement` whose ``release`` draws the noise) once the rule's value is
        known.
    runs : int
        Independent queries one release answers.
    """

    def __init__(self, mechanism: str, budget: Budget, *, unit: Measurement | None = None,
                 calibrate: Any = None, runs: int = 1) -> None:
        self.mechanism = mechanism
        self.delivered = budget
        self.unit = unit
        self._calibrate = calibrate
        self.runs = int(runs)
        #: The sensitivity in units of the rule's: 1.
        self.sensitivity = 1.0

    def privacy_map(self, sensitivity: float) -> Budget:
        """The guarantee for a query of ``sensitivity`` times the rule's sensitivity: the
        planned budget at 1 (or below); beyond, the unit mechanism's map or, without one,
        the scaling every Gaussian and exponential step obeys (``rho`` grows as the square
        of the sensitivity, a pure ``epsilon`` linearly), rounded up."""
        ratio = float(sensitivity)
        if ratio <= 1.0:
            return self.delivered
        if self.unit is not None:
            return self.unit.privacy_map(ratio)
        notion = type(self.delivered)
        (cost, *rest) = exact_cost(self.delivered, notion)
        if rest:
            raise ValueError(f"no scaling rule for a {notion.__name__} step")
        factor = Fraction(ratio) ** 2 if notion is ZCDP else Fraction(ratio)
        return budget_from_cost(notion, (cost * factor,), rounding="up")

    def record(self, prefix: str = "") -> dict[str, Any]:
        """No fixed figures: the plan states the rule and the noise multiplier."""
        return {}

    def calibrated(self, *args: Any, **kwargs: Any) -> Any:
        """The mechanism for the value the rule reads (see ``calibrate``)."""
        if self._calibrate is None:
            raise TypeError(f"the {self.mechanism!r} step is calibrated inside its release")
        return self._calibrate(*args, **kwargs)

    def release(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a ruled measurement releases through its calibrated mechanism "
                        "(calibrated(...).release)")
