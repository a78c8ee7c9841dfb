"""Exact check-then-spend accounting: one core for the in-memory accountant and the ledger.

A :class:`PrivacyAccountant` holds a total budget and the exact sum of what was spent.
:meth:`~PrivacyAccountant.spend` checks *before* spending and refuses (raising
:class:`~dpggm.exceptions.BudgetExceededError`) a spend that would take the sum above the
total; a spend that brings the sum exactly to the total succeeds. Sums are kept as exact
rationals, so floating-point rounding can never hide an overspend.

Used as a privacy filter, it makes an adaptive algorithm safe whatever its data-dependent
choices: each step asks the filter first, and a step that would overspend never runs
(Rogers, Roth, Ullman & Vadhan 2016; Whitehouse et al. 2023 for zCDP filters).

The persistent :class:`~dpggm.privacy.ledger.Ledger` uses the same functions
(:func:`charge`, :func:`reported_spent`, :func:`reported_remaining`,
:func:`guarantee_budget`), so both follow one rule:

* a spend is converted into the total's notion exactly (:func:`~dpggm.privacy.budgets.exact_cost`)
  or refused before anything is recorded;
* the exact sum may reach the exact total but never exceed it;
* a reported ``spent`` is rounded *up* (the loss is never understated) and a reported
  ``remaining`` *down* (spending exactly ``remaining`` always succeeds);
* a :class:`~dpggm.privacy.guarantee.PrivacyGuarantee` is charged at its ``budget`` (what
  the release guarantees) and only when its validity is ``"valid"`` and its neighbouring
  relation is the one the total was declared for.

Anything with ``check(budget)`` and ``spend(guarantee)`` is a :class:`SpendSink`: a
:class:`PrivacyAccountant`, or a ledger bound to one dataset (:meth:`Ledger.sink`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from dpggm.exceptions import BudgetExceededError, IncompatibleBudgetError, InvalidGuaranteeError
from dpggm.privacy.budgets import Budget, NonPrivate, budget_from_cost, exact_cost

if TYPE_CHECKING:
    from dpggm.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "NEIGHBOR_RELATIONS",
    "PrivacyAccountant",
    "Spend",
    "SpendSink",
    "charge",
    "check_neighbors",
    "form_for",
    "guarantee_budget",
    "guarantee_forms",
    "reported_remaining",
    "reported_spent",
]

NEIGHBOR_RELATIONS = ("replace", "add-remove")


@runtime_checkable
class SpendSink(Protocol):
    """Where a release's privacy spend is booked.

    ``check(budget)`` raises (``BudgetExceededError``, ``IncompatibleBudgetError``) if the
    budget could not be booked now, recording nothing; ``spend(guarantee)`` books what a
    release guarantees, atomically, or raises and records nothing.
    """

    def check(self, budget: Budget) -> None: ...

    def spend(self, guarantee: PrivacyGuarantee) -> Any: ...


def check_neighbors(neighbors: Any) -> str:
    """The neighbouring relation, validated."""
    if neighbors not in NEIGHBOR_RELATIONS:
        raise ValueError(f"neighbors must be 'replace' or 'add-remove'; got {neighbors!r}")
    return neighbors


def charge(
    limit: tuple[Fraction, ...],
    spent: tuple[Fraction, ...],
    budget: Budget,
    notion: type[Budget],
    *,
    what: str,
) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """The exact cost of ``budget`` and the new exact sum, or a refusal.

    Parameters
    ----------
    limit, spent : tuple of Fraction
        Exact cost of the total and of what was spent, in ``notion``.
    budget : Budget
        The spend.
    notion : type
        The total's notion.
    what : str
        Names the account in messages (e.g. ``"dataset 'census'"``).

    Returns
    -------
    (cost, new_spent)

    Raises
    ------
    IncompatibleBudgetError
        ``budget`` does not convert soundly into ``notion`` (or is non-private).
    BudgetExceededError
        The exact sum would exceed the exact total.
    """
    if isinstance(budget, NonPrivate):
        raise IncompatibleBudgetError(
            f"{what}: a non-private run carries no privacy guarantee and cannot be charged"
        )
    try:
        cost = exact_cost(budget, notion)
    except IncompatibleBudgetError as exc:
        raise IncompatibleBudgetError(f"{what}: {exc}") from exc
    new = tuple(s + c for s, c in zip(spent, cost))
    if any(n > lim for n, lim in zip(new, limit)):
        raise BudgetExceededError(
            f"{what}: spending {budget} would exceed the total "
            f"{budget_from_cost(notion, limit)}; {reported_remaining(notion, limit, spent)} remains"
        )
    return cost, new


def reported_spent(notion: type[Budget], spent: tuple[Fraction, ...]) -> Budget:
    """What was spent, each parameter rounded up (the loss is never understated)."""
    return budget_from_cost(notion, spent, rounding="up")


def reported_remaining(
    notion: type[Budget], limit: tuple[Fraction, ...], spent: tuple[Fraction, ...]
) -> Budget:
    """What is left, each parameter rounded down (spending it exactly always succeeds)."""
    return budget_from_cost(notion, tuple(lim - s for lim, s in zip(limit, spent)), rounding="down")


def form_for(forms: tuple[Budget, ...], notion: type[Budget]) -> Budget:
    """The first of ``forms`` (a guarantee's budget, then its equivalent forms) that
    converts soundly into ``notion``; the first form when none does (charging it then
    raises the reason)."""
    for form in forms:
        try:
            exact_cost(form, notion)
        except IncompatibleBudgetError:
            continue
        return form
    return forms[0]


def guarantee_forms(guarantee: Any, *, neighbors: str | None, what: str) -> tuple[Budget, ...]:
    """Every budget a release may be charged at (:attr:`PrivacyGuarantee.forms`), refused
    unless it is valid and stated for ``neighbors`` (when the account has a relation)."""
    guarantee_budget(guarantee, neighbors=neighbors, what=what)
    return guarantee.forms


def guarantee_budget(guarantee: Any, *, neighbors: str | None, what: str) -> Budget:
    """The budget to charge for a release: its guaranteed budget, refused unless valid and
    stated for ``neighbors`` (when the account has a relation)."""
    from dpggm.privacy.guarantee import PrivacyGuarantee

    if not isinstance(guarantee, PrivacyGuarantee):
        raise TypeError(
            f"expected a PrivacyGuarantee (an estimator's privacy_); got {type(guarantee).__name__}"
        )
    if guarantee.validity != "valid":
        raise InvalidGuaranteeError(
            f"{what}: a release with validity {guarantee.validity!r} ({guarantee.reason}) "
            "carries no formal guarantee and is not booked against a privacy budget"
        )
    if neighbors is not None and guarantee.neighbors != neighbors:
        raise IncompatibleBudgetError(
            f"{what}: the total is declared for {neighbors!r} neighbours; a spend under "
            f"{guarantee.neighbors!r} neighbours cannot be added to it"
        )
    return guarantee.budget


@dataclass(frozen=True)
class Spend:
    """One recorded spend: what ran, and what it cost."""

    budget: Budget
    mechanism: str
    details: dict[str, Any]


class PrivacyAccountant:
    """Check-then-spend accountant over one total budget.

    Parameters
    ----------
    total : Budget
        The total that may be spent. Spends of another notion are converted into the
        total's notion where that is sound and refused otherwise.
    neighbors : {"replace", "add-remove"} or None, default None
        The relation the total is stated for. When set, a guarantee under another
        relation is refused; budget-form spends are taken as stated for it.

    Notes
    -----
    Privacy: check before running a mechanism (:meth:`check` or :meth:`can_spend`), then
    :meth:`spend` what ran. ``spent`` is rounded up, ``remaining`` down.

    Examples
    --------
    >>> from dpggm.privacy import PrivacyAccountant, ZCDP
    >>> acc = PrivacyAccountant(ZCDP(1.0))
    >>> acc.spend(ZCDP(0.25), mechanism="gaussian")
    >>> acc.remaining
    ZCDP(rho=0.75)
    """

    def __init__(self, total: Budget, *, neighbors: str | None = None) -> None:
        if not isinstance(total, Budget) or isinstance(total, NonPrivate):
            raise TypeError(f"total must be a PureDP, ApproxDP, ZCDP or GDP budget; got {total!r}")
        self._total = total
        self._notion = type(total)
        self._neighbors = None if neighbors is None else check_neighbors(neighbors)
        self._limit = exact_cost(total, self._notion)
        self._spent = tuple(Fraction(0) for _ in self._limit)
        self._log: list[Spend] = []

    @property
    def total(self) -> Budget:
        """The declared total."""
        return self._total

    @property
    def neighbors(self) -> str | None:
        """The neighbouring relation of the total (None: not declared)."""
        return self._neighbors

    @property
    def spent(self) -> Budget:
        """What has been spent, in the total's notion, rounded up to floats."""
        return reported_spent(self._notion, self._spent)

    @property
    def remaining(self) -> Budget:
        """What is left, in the total's notion; each parameter is the largest float not
        above the exact remainder, so spending exactly ``remaining`` always succeeds."""
        return reported_remaining(self._notion, self._limit, self._spent)

    @property
    def exact_spent(self) -> tuple[Fraction, ...]:
        """The exact additive cost spent so far (see :func:`~dpggm.privacy.exact_cost`)."""
        return self._spent

    @property
    def spends(self) -> tuple[Spend, ...]:
        """Every spend, in order."""
        return tuple(self._log)

    def can_spend(self, budget: Budget) -> bool:
        """Whether ``budget`` fits in what remains (raises if the notions are incompatible)."""
        try:
            self.check(budget)
        except BudgetExceededError:
            return False
        return True

    def check(self, budget: Budget) -> None:
        """Raise unless ``budget`` could be spent now; records nothing."""
        charge(self._limit, self._spent, budget, self._notion, what="accountant")

    def spend(
        self, budget: Budget | PrivacyGuarantee, *, mechanism: str | None = None, **details: Any
    ) -> None:
        """Record a spend, or refuse it if it would exceed the total.

        Parameters
        ----------
        budget : Budget or PrivacyGuarantee
            What ran. A guarantee is charged at its ``budget`` and refused unless its
            validity is ``"valid"`` (and, if the accountant has a relation, stated for it).
        mechanism : str, optional
            What ran (default: the guarantee's mechanism, or ``"unspecified"``).

        Raises
        ------
        BudgetExceededError
            The spend does not fit; nothing is recorded.
        IncompatibleBudgetError
            It cannot be soundly accounted in the total's notion or relation.
        InvalidGuaranteeError
            A guarantee that is not valid.
        """
        if isinstance(budget, Budget):
            amount = budget
            name = "unspecified" if mechanism is None else mechanism
        else:
            amount = form_for(guarantee_forms(budget, neighbors=self._neighbors,
                                              what="accountant"), self._notion)
            name = budget.mechanism if mechanism is None else mechanism
        _, new = charge(self._limit, self._spent, amount, self._notion, what=f"{name!r}")
        self._spent = new
        self._log.append(Spend(amount, name, dict(details)))

    def __repr__(self) -> str:
        return f"PrivacyAccountant(total={self._total}, spent={self.spent})"
