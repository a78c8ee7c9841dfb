"""The guarantee record every private result carries (``privacy_``)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from dpggm.privacy.budgets import (
    NEIGHBOR_RELATIONS,
    ApproxDP,
    Budget,
    NonPrivate,
    PureDP,
    budget_from_dict,
)

__all__ = ["PrivacyGuarantee", "DEFAULT_REPORT_DELTA"]

Validity = Literal["valid", "data-dependent", "invalid", "none"]

#: The delta at which a zCDP or GDP guarantee is also reported in (epsilon, delta) form
#: when the caller does not choose one.
DEFAULT_REPORT_DELTA = 1e-6


def jsonable(value: Any) -> Any:
    if isinstance(value, Budget):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict())
    return value


def _round_up(value: float) -> str:
    """``value`` to four significant digits, rounded up (a shortened privacy figure may
    only weaken the claim); exact when four digits state it exactly."""
    text = f"{value:.4g}"
    if float(text) < value:
        unit = 10.0 ** (math.floor(math.log10(abs(float(text)))) - 3)
        text = f"{float(text) + unit:.4g}"
    return text


@dataclass(frozen=True)
class PrivacyGuarantee:
    """What a release spent and what it guarantees.

    Attributes
    ----------
    budget : Budget
        The privacy notion and parameters actually spent (``NonPrivate()`` for a
        reference run).
    neighbors : {"replace", "add-remove"}
        The neighbouring relation the guarantee is stated for.
    bounds : dict
        The declared bounds (``bounds.to_dict()``), or a description of derived ones.
    mechanism : str
        The mechanism that produced the release.
    noise : dict
        Noise scales and sensitivities (e.g. ``{"sigma": ..., "sensitivity": ...}``).
    validity : {"valid", "data-dependent", "invalid", "none"}
        ``"valid"``: a formal guarantee holds. ``"data-dependent"``: a parameter (e.g. a
        bound) was read off the private data, so there is no formal guarantee.
        ``"invalid"``: the published guarantee of this method is known to be wrong.
        ``"none"``: a non-private reference run.
    reason : str
        Why the guarantee is not ``"valid"`` (empty when it is).
    report_delta : float
        The delta at which the ``(epsilon, delta)`` form is stated.
    random_state : str
        The seed policy.
    notes : dict
        Further public figures and explanations (how the guarantee was derived, the
        centering, the budget breakdown). Everything here is part of the release.
    equivalent : tuple of Budget
        Other forms of the same guarantee that also hold, for accounts in another notion
        (e.g. the zCDP budget an ``(epsilon, delta)`` pipeline was run in, or the
        ``epsilon**2 / 2``-zCDP a pure-DP release implies). A ledger or accountant charges
        the first of ``budget`` and these that converts soundly into its notion.
    curator_notes : dict
        Figures for the data curator only -- computed from the private data (e.g. a
        paper's data-dependent accounting, how many rows were clipped). They are **never**
        part of :meth:`to_dict`, :meth:`to_json` or anything written by the command line;
        read them by name (``privacy_.curator_notes``).
    """

    budget: Budget
    neighbors: str
    bounds: dict[str, Any]
    mechanism: str
    noise: dict[str, Any] = field(default_factory=dict)
    validity: Validity = "valid"
    reason: str = ""
    report_delta: float = DEFAULT_REPORT_DELTA
    random_state: str = ""
    notes: dict[str, Any] = field(default_factory=dict)
    curator_notes: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    equivalent: tuple[Budget, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.budget, Budget):
            raise TypeError(
                "budget must be a PureDP, ApproxDP, ZCDP, GDP or NonPrivate budget; "
                f"got {type(self.budget).__name__}"
            )
        if self.neighbors not in NEIGHBOR_RELATIONS:
            raise ValueError(f"neighbors must be 'replace' or 'add-remove'; got {self.neighbors!r}")
        if self.validity not in ("valid", "data-dependent", "invalid", "none"):
            raise ValueError(
                "validity must be 'valid', 'data-dependent', 'invalid' or 'none'; "
                f"got {self.validity!r}"
            )
        if self.validity != "valid" and not (isinstance(self.reason, str) and self.reason.strip()):
            raise ValueError(
                f"a guarantee with validity {self.validity!r} needs a non-empty reason; "
                f"got {self.reason!r}"
            )
        # A non-private release marked anything but "none" would claim a guarantee that
        # does not exist. A private budget may still be "none": a seeded run spends its
        # budget on paper, but whoever holds the seed can remove the noise.
        if isinstance(self.budget, NonPrivate) and self.validity != "none":
            raise ValueError(
                "a NonPrivate() budget must have validity 'none'; got "
                f"validity={self.validity!r}"
            )
        object.__setattr__(self, "equivalent", tuple(self.equivalent))
        if not all(isinstance(b, Budget) and not isinstance(b, NonPrivate)
                   for b in self.equivalent):
            raise TypeError("equivalent must hold PureDP, ApproxDP, ZCDP or GDP budgets")
        if self.equivalent and isinstance(self.budget, NonPrivate):
            raise ValueError("a NonPrivate() release has no equivalent guarantee")
        if isinstance(self.report_delta, bool) or not (
            isinstance(self.report_delta, (int, float)) and 0 < self.report_delta < 1
        ):
            raise ValueError(f"report_delta must be a number in (0, 1); got {self.report_delta!r}")

    @property
    def forms(self) -> tuple[Budget, ...]:
        """``budget`` followed by :attr:`equivalent`: every form that holds."""
        return (self.budget, *self.equivalent)

    @property
    def is_valid(self) -> bool:
        """True only when a formal differential-privacy guarantee holds."""
        return self.validity == "valid"

    @property
    def approx_dp(self) -> ApproxDP | None:
        """The guarantee in ``(epsilon, delta)`` form at :attr:`report_delta`
        (``None`` for a non-private run)."""
        if isinstance(self.budget, NonPrivate):
            return None
        if isinstance(self.budget, ApproxDP):
            return self.budget
        return self.budget.to_approx(self.report_delta)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dictionary of the public record (``curator_notes`` is left
        out: it holds figures computed from the private data)."""
        approx = self.approx_dp
        return jsonable(
            {
                "budget": self.budget,
                "approx_dp": None if approx is None else approx.to_dict(),
                "neighbors": self.neighbors,
                "bounds": self.bounds,
                "mechanism": self.mechanism,
                "noise": self.noise,
                "validity": self.validity,
                "reason": self.reason,
                "report_delta": self.report_delta,
                "random_state": self.random_state,
                "notes": self.notes,
                "equivalent": [b.to_dict() for b in self.equivalent],
            }
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyGuarantee:
        """Rebuild a record from :meth:`to_dict` output (curator notes are not stored there
        and come back empty).

        Raises
        ------
        ValueError
            If a required field is missing or invalid.
        """
        if not isinstance(data, dict):
            raise TypeError(f"a privacy record must be a dict; got {type(data).__name__}")
        missing = [k for k in ("budget", "neighbors", "bounds", "mechanism") if k not in data]
        if missing:
            raise ValueError(f"the privacy record lacks the field(s) {missing}")
        return cls(
            budget=budget_from_dict(data["budget"]),
            neighbors=data["neighbors"],
            bounds=dict(data["bounds"]),
            mechanism=str(data["mechanism"]),
            noise=dict(data.get("noise") or {}),
            validity=data.get("validity", "valid"),
            reason=data.get("reason", ""),
            report_delta=float(data.get("report_delta", DEFAULT_REPORT_DELTA)),
            random_state=str(data.get("random_state", "")),
            notes=dict(data.get("notes") or {}),
            equivalent=tuple(budget_from_dict(b) for b in data.get("equivalent") or ()),
        )

    def to_json(self, **kwargs: Any) -> str:
        """The record as JSON text."""
        return json.dumps(self.to_dict(), **kwargs)

    def summary(self) -> str:
        """One line for people."""
        if isinstance(self.budget, NonPrivate):
            return f"{self.mechanism}: non-private reference run (no guarantee)"
        approx = self.approx_dp
        text = f"{self.mechanism}: {self.budget}"
        # Pure DP is already in its strongest (epsilon, 0) form; restating it at a positive
        # delta would only weaken it. A shortened figure is rounded up, never down.
        if approx is not None and approx is not self.budget and not isinstance(
                self.budget, PureDP):
            text += (f" ~ (epsilon={_round_up(approx.epsilon)}, "
                     f"delta={_round_up(approx.delta)})")
        text += f", {self.neighbors} neighbours"
        if self.validity != "valid":
            label = "NO GUARANTEE" if self.validity == "none" else self.validity.upper()
            text += f" -- {label}: {self.reason}"
        return text
