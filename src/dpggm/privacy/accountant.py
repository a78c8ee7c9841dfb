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
(:func:`charge_forms`, :func:`charge`, :func:`reported_spent`, :func:`reported_remaining`,
:func:`composed_spent`, :func:`guarantee_forms`), so both follow one rule:

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

Two compositions
    ``"additive"``: the spends' costs in the total's notion add up (epsilon for pure DP,
    rho for zCDP, ``mu**2`` for GDP, ``(epsilon, delta)`` by basic composition for
    approximate DP). ``"zcdp"``, for an ``(epsilon, delta)`` total with ``delta > 0``: the
    spends are composed in zCDP -- their rho add up, and the total holds while the sum
    implies ``(epsilon, delta)`` by the tight conversion (Canonne, Kamath & Steinke 2020) --
    so a first release no longer spends the whole delta (docs/budget.md). A pure
    ``epsilon``-DP spend counts ``epsilon**2 / 2`` and a ``mu``-GDP spend ``mu**2 / 2``
    there. A release that holds *only* an ``(epsilon, delta)`` guarantee (no zCDP form) can
    be booked only before the first zCDP spend, by basic composition; the zCDP spends that
    follow may then add up to the largest rho that implies what is left of
    ``(epsilon, delta)`` (:func:`zcdp_limit`). This is basic composition of two parts -- the
    ``(epsilon, delta)`` spends, then one zCDP filter whose total is fixed when its first
    spend is made -- and every part is a valid filter under fully adaptive choices (Rogers,
    Roth, Ullman & Vadhan 2016 for basic composition; Feldman & Zrnic 2021 and Whitehouse,
    Ramdas, Rogers & Wu 2023 for zCDP). The ledger composes every ``(epsilon, delta)``
    total so; the in-memory accountant keeps ``"additive"`` unless asked (the steps of one
    release split their total additively).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from dpggm.exceptions import BudgetExceededError, IncompatibleBudgetError, InvalidGuaranteeError
from dpggm.privacy import conversion
from dpggm.privacy.budgets import (
    GDP,
    NEIGHBOR_RELATIONS,
    ZCDP,
    ApproxDP,
    Budget,
    NonPrivate,
    PureDP,
    accounting_total,
    budget_from_cost,
    exact_cost,
    float_at_least,
    float_at_most,
)

if TYPE_CHECKING:
    from dpggm.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "ADDITIVE",
    "COMPOSITIONS",
    "NEIGHBOR_RELATIONS",
    "ZCDP_COMPOSED",
    "Charge",
    "PrivacyAccountant",
    "Spend",
    "SpendSink",
    "charge",
    "charge_forms",
    "composed_spent",
    "default_composition",
    "largest_release",
    "start_cost",
    "zcdp_limit",
    "check_neighbors",
    "form_for",
    "guarantee_budget",
    "guarantee_forms",
    "reported_remaining",
    "reported_spent",
]

#: The spends' costs in the total's notion add up.
ADDITIVE = "additive"
#: An ``(epsilon, delta)`` total whose spends are composed in zCDP.
ZCDP_COMPOSED = "zcdp"
COMPOSITIONS = (ADDITIVE, ZCDP_COMPOSED)


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


def default_composition(total: Budget) -> str:
    """How spends against ``total`` compose: in zCDP for an ``(epsilon, delta)`` total with
    ``delta > 0`` (:data:`ZCDP_COMPOSED`), additively in the total's notion otherwise."""
    if isinstance(total, ApproxDP) and total.delta > 0:
        return ZCDP_COMPOSED
    return ADDITIVE


def _check_composition(total: Budget, composition: str) -> str:
    if composition not in COMPOSITIONS:
        raise ValueError(f"composition must be one of {COMPOSITIONS}; got {composition!r}")
    if composition == ZCDP_COMPOSED and not (isinstance(total, ApproxDP) and total.delta > 0):
        raise ValueError(
            f"composition='zcdp' is for an (epsilon, delta) total with delta > 0; got {total}")
    return composition


def start_cost(total: Budget, composition: str) -> tuple[Fraction, ...]:
    """The exact cost of nothing: ``(0,)`` per additive parameter; for the zCDP composition
    ``(epsilon, delta, rho)`` -- the ``(epsilon, delta)`` of releases booked by basic
    composition, and the summed rho."""
    if composition == ZCDP_COMPOSED:
        return (Fraction(0),) * 3
    return tuple(Fraction(0) for _ in exact_cost(total, type(total)))


def zcdp_limit(total: ApproxDP, spent: tuple[Fraction, ...]) -> Fraction:
    """The largest rho the zCDP spends against ``total`` may add up to, once ``spent[:2]``
    (the ``(epsilon, delta)`` of releases booked by basic composition) is taken off.

    The float rho whose tight conversion implies what is left
    (:func:`~dpggm.privacy.budgets.accounting_total`, aimed inside the target by the
    conversions' margin), as an exact rational; what is left is rounded down first, so the
    limit never exceeds the exact one. Zero when nothing is left of epsilon or delta.
    """
    epsilon_left = Fraction(total.epsilon) - spent[0]
    delta_left = Fraction(total.delta) - spent[1]
    if epsilon_left <= 0 or delta_left <= 0:
        return Fraction(0)
    epsilon, delta = float_at_most(epsilon_left), float_at_most(delta_left)
    if epsilon <= 0 or delta <= 0:
        return Fraction(0)
    return Fraction(accounting_total(ApproxDP(epsilon, delta), ZCDP).rho)


def _zcdp_cost(budget: Budget) -> Fraction | None:
    """The rho a spend counts in the zCDP composition, or None if it implies no zCDP
    guarantee: rho itself, ``epsilon**2 / 2`` of pure DP (also ``(epsilon, 0)``), ``mu**2 /
    2`` of GDP (Bun & Steinke 2016, Prop. 1.4; Gaussian DP implies it)."""
    if isinstance(budget, ApproxDP) and budget.delta == 0:
        budget = PureDP(budget.epsilon)
    if isinstance(budget, (ZCDP, PureDP, GDP)):
        return exact_cost(budget, ZCDP)[0]
    return None


@dataclass(frozen=True)
class Charge:
    """What a spend would book: the form charged, its exact cost, the exact sum after it
    and (zCDP composition) the rho the zCDP spends may add up to after it."""

    budget: Budget
    cost: tuple[Fraction, ...]
    spent: tuple[Fraction, ...]
    rho_limit: Fraction | None = None


def _release_text(total: ApproxDP, spent: tuple[Fraction, ...],
                  rho_limit: Fraction) -> str:
    """What remains of a zCDP-composed total, for messages."""
    left = rho_limit - spent[2]
    if left <= 0:
        return "nothing remains"
    text = f"rho = {float_at_most(left):.6g} remains"
    release = largest_release(total, spent, rho_limit)
    if release is not None and release.epsilon > 0:
        text += (f" (one more release of (epsilon = {release.epsilon:.6g}, delta = "
                 f"{release.delta:.6g}), run in the zCDP it implies)")
    return text


def _basic_form(budget: Budget) -> ApproxDP | None:
    """A form as ``(epsilon, delta)`` for basic composition (pure DP as ``(epsilon, 0)``)."""
    if isinstance(budget, ApproxDP):
        return budget
    if isinstance(budget, PureDP):
        return ApproxDP(budget.epsilon, 0.0)
    return None


def _charge_composed(total: ApproxDP, spent: tuple[Fraction, ...], rho_limit: Fraction,
                     forms: tuple[Budget, ...], what: str) -> Charge:
    epsilon_a, delta_a, rho = spent
    in_zcdp = [(cost, form) for form in forms if (cost := _zcdp_cost(form)) is not None]
    if in_zcdp:
        # Every form holds: book the cheapest rho.
        cost, form = min(in_zcdp, key=lambda pair: pair[0])
        if rho + cost <= rho_limit:
            return Charge(form, (Fraction(0), Fraction(0), cost),
                          (epsilon_a, delta_a, rho + cost), rho_limit)
    basic = next((b for f in forms if (b := _basic_form(f)) is not None), None)
    if rho == 0 and basic is not None:
        # Before the first zCDP spend, a release may be booked by basic composition
        # (an (epsilon, delta)-only release must be; a pure one when zCDP cannot take it).
        new = (epsilon_a + Fraction(basic.epsilon), delta_a + Fraction(basic.delta), rho)
        if new[0] <= Fraction(total.epsilon) and new[1] <= Fraction(total.delta):
            booked = PureDP(basic.epsilon) if basic.delta == 0 else basic
            return Charge(booked, (Fraction(basic.epsilon), Fraction(basic.delta), Fraction(0)),
                          new, zcdp_limit(total, new))
    if in_zcdp:
        raise BudgetExceededError(
            f"{what}: spending {form} (rho = {float_at_least(cost):.6g} in zCDP) would "
            f"exceed the total {total}, whose spends compose in zCDP up to rho = "
            f"{float_at_most(rho_limit):.6g}; {_release_text(total, spent, rho_limit)}")
    if basic is None:
        raise IncompatibleBudgetError(
            f"{what}: {', '.join(map(str, forms))} cannot be accounted against the "
            f"(epsilon, delta) total {total} (its spends are composed in zCDP)")
    if rho > 0:
        raise IncompatibleBudgetError(
            f"{what}: this release holds only {basic}, an (epsilon, delta) guarantee that "
            f"implies no zCDP one; the total {total} composes its spends in zCDP and already "
            "holds zCDP spends, after which an (epsilon, delta)-only release cannot be added. "
            f"Make the release in zCDP (e.g. --rho): {_release_text(total, spent, rho_limit)}")
    remaining = budget_from_cost(
        ApproxDP, (Fraction(total.epsilon) - epsilon_a, Fraction(total.delta) - delta_a))
    raise BudgetExceededError(
        f"{what}: spending {basic} (an (epsilon, delta)-only release, booked by basic "
        f"composition) would exceed the total {total}; {remaining} remains for it")


def charge_forms(total: Budget, composition: str, spent: tuple[Fraction, ...],
                 rho_limit: Fraction | None, forms: tuple[Budget, ...] | list[Budget], *,
                 what: str) -> Charge:
    """What booking a release that holds every budget of ``forms`` would record, or a
    refusal: the one rule of the ledger and the accountant.

    Additive composition: the first form that converts into the total's notion, added
    exactly (:func:`charge`). zCDP composition: the first form with a zCDP cost (rho,
    pure DP, GDP) if the summed rho stays within ``rho_limit``; otherwise an
    ``(epsilon, delta)``-only form by basic composition, allowed only before the first
    zCDP spend (see the module notes).

    Raises
    ------
    BudgetExceededError, IncompatibleBudgetError
    """
    forms = tuple(forms)
    if not forms or any(isinstance(f, NonPrivate) for f in forms):
        raise IncompatibleBudgetError(
            f"{what}: a non-private run carries no privacy guarantee and cannot be charged")
    if composition == ZCDP_COMPOSED:
        if rho_limit is None:
            raise ValueError("the zCDP composition needs its rho limit")
        return _charge_composed(total, spent, rho_limit, forms, what)
    notion = type(total)
    chosen = form_for(forms, notion)
    cost, new = charge(exact_cost(total, notion), spent, chosen, notion, what=what)
    return Charge(chosen, cost, new, None)


def composed_spent(total: ApproxDP, spent: tuple[Fraction, ...]) -> ApproxDP:
    """The ``(epsilon, delta)`` guarantee of everything booked against a zCDP-composed
    ``total`` (rounded up, never understated): ``(epsilon_a, delta_a)`` of the releases
    booked by basic composition, plus the summed rho converted at the rest of delta -- for
    spends within the limit (:func:`charge_forms` keeps them so), never above the total."""
    epsilon_a, delta_a, rho = spent
    if rho == 0:
        return ApproxDP(float_at_least(epsilon_a), float_at_least(delta_a))
    delta_left = float_at_most(Fraction(total.delta) - delta_a)
    epsilon = conversion.zcdp_to_approx_epsilon(float_at_least(rho), delta_left)
    # Within the limit, the total itself holds (the limit was certified by the tight
    # conversion at what the basic part left); the two searches' orders may differ by a
    # hair, which must not state more than the total.
    stated = min(float_at_least(epsilon_a + Fraction(epsilon)), total.epsilon)
    return ApproxDP(stated, total.delta)


def largest_release(total: ApproxDP, spent: tuple[Fraction, ...],
                    rho_limit: Fraction) -> ApproxDP | None:
    """The largest ``(epsilon, delta)`` one further release may ask for against a
    zCDP-composed ``total``, with delta what is left of the total's (its own delta as a
    rule): the largest epsilon (to a relative 2**-40) whose zCDP form -- the rho that
    implies it, as a release run in zCDP computes it -- fits in what remains. ``None``
    when no rho remains."""
    left = rho_limit - spent[2]
    delta_left = Fraction(total.delta) - spent[1]
    if left <= 0 or delta_left <= 0:
        return None
    delta = float_at_most(delta_left)
    rho_left = float_at_most(left)
    if rho_left <= 0 or delta <= 0:
        return None
    def fits(epsilon: float) -> bool:
        return Fraction(accounting_total(ApproxDP(epsilon, delta), ZCDP).rho) <= left

    # Nothing spent in zCDP: what the basic part left is itself the answer.
    whole = float_at_most(Fraction(total.epsilon) - spent[0])
    if spent[2] == 0 and whole > 0 and fits(whole):
        return ApproxDP(whole, delta)
    epsilon = conversion.zcdp_to_approx_epsilon(rho_left, delta)
    step = epsilon * 2.0**-40
    while epsilon > 0 and not fits(epsilon):
        epsilon = max(0.0, epsilon - step)
        step *= 2.0
    return ApproxDP(epsilon, delta)


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
    composition : {"additive", "zcdp"}, default "additive"
        How spends add up. ``"zcdp"`` (an ``(epsilon, delta)`` total with ``delta > 0``
        only) composes them in zCDP as the ledger does (see the module notes);
        ``"additive"`` adds ``(epsilon, delta)`` by basic composition -- right for the
        steps of one release, whose shares were split off the total additively.

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

    def __init__(self, total: Budget, *, neighbors: str | None = None,
                 composition: str = ADDITIVE) -> None:
        if not isinstance(total, Budget) or isinstance(total, NonPrivate):
            raise TypeError(f"total must be a PureDP, ApproxDP, ZCDP or GDP budget; got {total!r}")
        self._total = total
        self._notion = type(total)
        self._neighbors = None if neighbors is None else check_neighbors(neighbors)
        self._composition = _check_composition(total, composition)
        self._limit = exact_cost(total, self._notion)
        self._spent = start_cost(total, self._composition)
        self._rho_limit = (zcdp_limit(total, self._spent)
                           if self._composition == ZCDP_COMPOSED else None)
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
    def composition(self) -> str:
        """How spends add up: ``"additive"`` or ``"zcdp"``."""
        return self._composition

    @property
    def spent(self) -> Budget:
        """What has been spent, rounded up to floats: in the total's notion; for the zCDP
        composition, the ``(epsilon, delta)`` guarantee of everything spent."""
        if self._composition == ZCDP_COMPOSED:
            return composed_spent(self._total, self._spent)
        return reported_spent(self._notion, self._spent)

    @property
    def remaining(self) -> Budget:
        """What is left, rounded down so that spending exactly ``remaining`` always
        succeeds: in the total's notion; for the zCDP composition, the rho left."""
        if self._composition == ZCDP_COMPOSED:
            return budget_from_cost(ZCDP, (self._rho_limit - self._spent[2],))
        return reported_remaining(self._notion, self._limit, self._spent)

    @property
    def rho_limit(self) -> Fraction | None:
        """For the zCDP composition, the rho the zCDP spends may add up to (exact)."""
        return self._rho_limit

    @property
    def exact_spent(self) -> tuple[Fraction, ...]:
        """The exact additive cost spent so far (see :func:`~dpggm.privacy.exact_cost`);
        ``(epsilon, delta, rho)`` for the zCDP composition (:func:`start_cost`)."""
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
        self._charge((budget,), "accountant")

    def _charge(self, forms: tuple[Budget, ...], what: str) -> Charge:
        return charge_forms(self._total, self._composition, self._spent, self._rho_limit,
                            forms, what=what)

    def spend(
        self, budget: Budget | PrivacyGuarantee, *, mechanism: str | None = None, **details: Any
    ) -> None:
        """Record a spend, or refuse it if it would exceed the total.

        Parameters
        ----------
        budget : Budget or PrivacyGuarantee
            What ran. A guarantee is charged at its ``budget`` (or another of its forms,
            see :func:`charge_forms`) and refused unless its validity is ``"valid"`` (and,
            if the accountant has a relation, stated for it).
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
            forms: tuple[Budget, ...] = (budget,)
            name = "unspecified" if mechanism is None else mechanism
        else:
            forms = guarantee_forms(budget, neighbors=self._neighbors, what="accountant")
            name = budget.mechanism if mechanism is None else mechanism
        booked = self._charge(forms, f"{name!r}")
        self._spent = booked.spent
        self._rho_limit = booked.rho_limit
        self._log.append(Spend(booked.budget, name, dict(details)))

    def __repr__(self) -> str:
        return f"PrivacyAccountant(total={self._total}, spent={self.spent})"
