"""The context of one release and the one place a guarantee record is assembled.

Every private result states the same things (docs/privacy.md reads them): the budget the mechanism
delivered, the neighbouring relation, the bounds, the noise parameters, and whether the
guarantee is valid. :class:`ReleaseContext` holds what is common to all the mechanisms of
one fit (relation, bounds, randomness, the report delta, exact or float noise), and
:meth:`ReleaseContext.guarantee` turns a mechanism's outcome into the
:class:`~dpggm.privacy.guarantee.PrivacyGuarantee`, applying one rule for validity:

``"invalid"``
    the method's published guarantee is known to be wrong, or the release was computed in
    a way the library itself warns about: noise drawn by a floating-point sampler
    (``noise="float"``, or the Wishart mechanisms' float Gaussian vectors), which leaks
    through the gaps between doubles (Mironov 2012);
``"data-dependent"``
    a bound or another privacy parameter was read off the private data;
``"none"``
    a non-private reference run, or a seeded run (whoever holds the seed can remove the
    noise: an experiment, not a release);
``"valid"``
    otherwise.

The most severe applicable status is reported; every reason that applies is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from dpggm.mechanisms.additive import FLOAT_NOISE_REASON, check_noise_mode
from dpggm.mechanisms.bounds import Bounds, check_neighbors
from dpggm.mechanisms.plan import PlanRun, ReleasePlan
from dpggm.mechanisms.random import (
    SEEDED_REASON,
    RandomSource,
    describe_random_state,
    is_reproducible,
)
from dpggm.privacy.budgets import Budget, NonPrivate
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA, PrivacyGuarantee

__all__ = ["DATA_DERIVED_BOUND_REASON", "NON_PRIVATE_REASON", "ReleaseContext"]

DATA_DERIVED_BOUND_REASON = (
    "the bound was read off the private data, so there is no formal guarantee"
)
NON_PRIVATE_REASON = "NonPrivate() was requested: the exact statistic is released"


@dataclass(frozen=True)
class ReleaseContext:
    """What every mechanism of one fit shares.

    Parameters
    ----------
    neighbors : {"replace", "add-remove"}
    bounds : Bounds or dict or None
        The declared bounds (a dict for a record read back from a file; ``None`` when the
        release is post-processing of an earlier release).
    random_state : None, int, numpy.random.Generator, "secure" or RandomSource
        The caller's argument. It builds :attr:`source`, the one
        :class:`~dpggm.mechanisms.random.RandomSource` every mechanism of the fit draws
        from (the operating system's cryptographic generator for ``None`` and
        ``"secure"``), and decides the seed policy; it is never written into a record.
    report_delta : float
        The delta at which zCDP and GDP guarantees are also stated as (epsilon, delta).
    noise : {"exact", "float"}
        Exact noise on a grid (default) or floating-point samplers; a float release is
        reported ``validity="invalid"`` (:data:`~dpggm.mechanisms.additive.FLOAT_NOISE_REASON`).
    data_dependent_reasons : tuple of str
        Why every release of this fit has no formal guarantee although its mechanisms are
        sound -- e.g. a preprocessing step fitted on the private data before the estimator
        (found by the estimator layer). Each is reported with ``"data-dependent"``.
    """

    neighbors: str
    bounds: Bounds | dict[str, Any] | None
    random_state: Any = field(default=None, repr=False)
    report_delta: float = DEFAULT_REPORT_DELTA
    noise: str = "exact"
    data_dependent_reasons: tuple[str, ...] = ()
    source: RandomSource = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_neighbors(self.neighbors)
        check_noise_mode(self.noise)
        object.__setattr__(self, "data_dependent_reasons", tuple(self.data_dependent_reasons))
        object.__setattr__(self, "source", RandomSource.of(self.random_state))

    @property
    def bounds_record(self) -> dict[str, Any]:
        if self.bounds is None:
            return {}
        if isinstance(self.bounds, dict):
            return dict(self.bounds)
        return self.bounds.to_dict()

    def _data_derived(self) -> bool:
        if isinstance(self.bounds, dict):
            return bool(self.bounds.get("data_derived", False))
        return bool(getattr(self.bounds, "data_derived", False))

    def validity(
        self,
        budget: Budget,
        *,
        invalid_reason: str | None = None,
        data_dependent_reasons: tuple[str, ...] | list[str] = (),
    ) -> tuple[str, str]:
        """The validity and reason for a release of ``budget`` in this context."""
        if isinstance(budget, NonPrivate):
            return "none", NON_PRIVATE_REASON
        levels: list[tuple[str, str]] = []
        if invalid_reason:
            levels.append(("invalid", invalid_reason))
        if self.noise == "float":
            levels.append(("invalid", FLOAT_NOISE_REASON))
        dependent = list(self.data_dependent_reasons) + list(data_dependent_reasons)
        if self._data_derived():
            dependent.insert(0, DATA_DERIVED_BOUND_REASON)
        levels.extend(("data-dependent", reason) for reason in dependent)
        if is_reproducible(self.random_state):
            levels.append(("none", SEEDED_REASON))
        if not levels:
            return "valid", ""
        return levels[0][0], "; ".join(reason for _, reason in levels)

    def guarantee(
        self,
        *,
        budget: Budget,
        mechanism: str,
        noise: dict[str, Any] | None = None,
        notes: dict[str, Any] | None = None,
        curator_notes: dict[str, Any] | None = None,
        invalid_reason: str | None = None,
        data_dependent_reasons: tuple[str, ...] | list[str] = (),
        caveats: tuple[str, ...] | list[str] = (),
    ) -> PrivacyGuarantee:
        """The guarantee record of a release made in this context.

        ``budget`` is what the mechanism delivered (not what was asked); ``noise`` holds
        public mechanism parameters only (identical for neighbouring data sets);
        ``curator_notes`` holds figures computed from the private data and is never
        serialised.
        """
        validity, reason = self.validity(
            budget, invalid_reason=invalid_reason, data_dependent_reasons=data_dependent_reasons
        )
        record_notes = dict(notes or {})
        if caveats:
            record_notes["caveats"] = list(record_notes.get("caveats", [])) + list(caveats)
        return PrivacyGuarantee(
            budget=budget,
            neighbors=self.neighbors,
            bounds=self.bounds_record,
            mechanism=mechanism,
            noise=dict(noise or {}),
            validity=validity,
            reason=reason,
            report_delta=self.report_delta,
            random_state=describe_random_state(self.random_state),
            notes=record_notes,
            curator_notes=dict(curator_notes or {}),
        )


    def planned_guarantee(
        self,
        plan: ReleasePlan,
        run: PlanRun | None,
        *,
        mechanism: str,
        noise: dict[str, Any] | None = None,
        notes: dict[str, Any] | None = None,
        invalid_reason: str | None = None,
        caveats: tuple[str, ...] | list[str] = (),
        curator_notes: dict[str, Any] | None = None,
    ) -> PrivacyGuarantee:
        """The guarantee of a release made by running ``plan`` (``run`` holds what ran).

        The budget is what the steps delivered (their composition), or the requested
        ``(epsilon, delta)`` when the steps ran in the zCDP that implies it; ``equivalent``
        holds every other form that holds (:meth:`ReleasePlan.forms`);
        ``noise["breakdown"]`` lists every step run (mechanism, budget, noise), and
        ``notes["plan"]`` the plan -- so record and plan cannot disagree.
        """
        record_notes = dict(notes or {})
        if plan.non_private or run is None:
            return self.guarantee(budget=plan.requested, mechanism=mechanism, noise=noise,
                                  notes=record_notes, curator_notes=curator_notes)
        budget = run.spent
        forms = plan.forms(self.report_delta)
        if type(plan.requested) is not type(plan.accounting):
            record_notes["requested_budget"] = plan.requested
            record_notes["accounted_as"] = plan.accounting
            if plan.requested.notion in forms:
                # An (epsilon, delta) budget run in the largest zCDP that implies it.
                budget = plan.requested
        record_notes["plan"] = plan.to_dict(self.report_delta)
        record_notes["spent_exactly_total"] = run.spent_exactly_total
        record = self.guarantee(
            budget=budget, mechanism=mechanism,
            noise={**(noise or {}), "breakdown": run.breakdown}, notes=record_notes,
            invalid_reason=invalid_reason, caveats=caveats, curator_notes=curator_notes,
        )
        if budget == run.spent:
            forms = {**forms, budget.notion: budget}
        return replace(record, equivalent=tuple(b for b in forms.values() if b != budget))
