"""Privacy budgets as immutable, validated values.

Four privacy notions are supported, each a frozen dataclass:

* :class:`PureDP` -- ``epsilon``-differential privacy;
* :class:`ApproxDP` -- ``(epsilon, delta)``-differential privacy;
* :class:`ZCDP` -- ``rho``-zero-concentrated differential privacy (Bun & Steinke 2016);
* :class:`GDP` -- ``mu``-Gaussian differential privacy (Dong, Roth & Su 2022).

:class:`NonPrivate` is an explicit marker for reference runs that release the exact
statistic; it is never a default.

Composition (``+``) follows the notion: pure DP adds epsilon, approximate DP adds
``(epsilon, delta)`` (basic composition), zCDP adds rho and GDP adds ``mu**2``. Budgets
of different notions compose only where one converts soundly into the other (pure DP into
approximate DP or zCDP; GDP into zCDP); anything else raises
:class:`~dpggm.exceptions.IncompatibleBudgetError`.

Accounting is done on exact rationals (:class:`fractions.Fraction` of the floats'
binary values) so that no real overspend is ever rounded away; see :func:`exact_cost`.
A composed budget is the smallest float budget whose cost is at least the exact sum, so
it never understates what was spent; a remainder is rounded the other way.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from dpggm.exceptions import BudgetRangeError, IncompatibleBudgetError
from dpggm.privacy import conversion

__all__ = [
    "NEIGHBOR_RELATIONS",
    "ApproxDP",
    "Budget",
    "GDP",
    "NonPrivate",
    "PureDP",
    "ZCDP",
    "accounting_total",
    "budget_from_dict",
    "dyadic_share",
    "exact_cost",
    "budget_from_cost",
    "float_at_least",
    "float_at_most",
    "parameter_of",
    "compose",
    "scale_budget",
    "split_budget",
]


def _check_number(name: str, value: Any, *, upper: float | None = None, upper_open=False) -> float:
    # numbers.Real admits numpy scalars (np.float32, np.int64) but not np.bool_; a Python
    # bool is an int and must be excluded by hand.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:
        value = math.inf if value > 0 else -math.inf
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    if upper is not None and (value >= upper if upper_open else value > upper):
        bound = f"< {upper}" if upper_open else f"<= {upper}"
        raise ValueError(f"{name} must be {bound}; got {value!r}")
    return value


class Budget:
    """Base class of privacy budgets. Use one of the concrete notions."""

    notion: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form, inverse of :func:`budget_from_dict`."""
        return {"notion": self.notion, **{k: getattr(self, k) for k in self._fields()}}

    @classmethod
    def _fields(cls) -> tuple[str, ...]:
        # dataclasses.fields, unlike __dataclass_fields__, leaves out the ClassVar ``notion``.
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    def __add__(self, other: Budget) -> Budget:
        if not isinstance(other, Budget):
            return NotImplemented
        if isinstance(self, NonPrivate) or isinstance(other, NonPrivate):
            return NonPrivate()
        target = _common_notion(type(self), type(other))
        # A composed guarantee is rounded up: rounding down would state less privacy loss
        # than was incurred, and an accountant opened with ``a + b`` would then refuse the
        # spend of ``b`` after ``a``.
        return budget_from_cost(
            target,
            tuple(a + b for a, b in zip(exact_cost(self, target), exact_cost(other, target))),
            rounding="up",
        )

    def __radd__(self, other: Any) -> Budget:
        # Lets ``sum(budgets)`` start from 0.
        if other == 0:
            return self
        return NotImplemented


@dataclass(frozen=True)
class PureDP(Budget):
    """``epsilon``-differential privacy.

    Parameters
    ----------
    epsilon : float
        Finite and non-negative.
    """

    epsilon: float
    notion: ClassVar[str] = "pure-dp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_number("epsilon", self.epsilon))

    def to_approx(self, delta: float) -> ApproxDP:
        """The smallest ``epsilon'`` with which every ``epsilon``-DP mechanism is
        ``(epsilon', delta)``-DP (tight: attained by randomised response)."""
        return ApproxDP(conversion.pure_to_approx_epsilon(self.epsilon, delta), delta)

    def to_zcdp(self) -> ZCDP:
        """``epsilon``-DP implies ``epsilon**2 / 2``-zCDP (Bun & Steinke 2016, Prop. 1.4).

        ``rho`` is rounded up, so that it is never below the exact cost an accountant
        charges for this budget."""
        return budget_from_cost(ZCDP, exact_cost(self, ZCDP), rounding="up")

    def __str__(self) -> str:
        return f"PureDP(epsilon={self.epsilon:g})"


@dataclass(frozen=True)
class ApproxDP(Budget):
    """``(epsilon, delta)``-differential privacy.

    Parameters
    ----------
    epsilon : float
        Finite and non-negative.
    delta : float
        In ``[0, 1)``.
    """

    epsilon: float
    delta: float
    notion: ClassVar[str] = "approx-dp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_number("epsilon", self.epsilon))
        object.__setattr__(
            self, "delta", _check_number("delta", self.delta, upper=1.0, upper_open=True)
        )

    def to_approx(self, delta: float | None = None) -> ApproxDP:
        """Return itself, or the same ``epsilon`` at a larger ``delta``; a smaller
        ``delta`` cannot be derived soundly."""
        if delta is not None:
            delta = _check_number("delta", delta, upper=1.0, upper_open=True)
        if delta is not None and delta != self.delta:
            if delta > self.delta:
                # A larger delta never hurts: the same epsilon still holds.
                return ApproxDP(self.epsilon, delta)
            raise IncompatibleBudgetError(
                f"an (epsilon, delta={self.delta:g}) guarantee says nothing about "
                f"delta={delta:g} < {self.delta:g}"
            )
        return self

    def __str__(self) -> str:
        return f"ApproxDP(epsilon={self.epsilon:g}, delta={self.delta:g})"


@dataclass(frozen=True)
class ZCDP(Budget):
    """``rho``-zero-concentrated differential privacy.

    Parameters
    ----------
    rho : float
        Finite and non-negative.
    """

    rho: float
    notion: ClassVar[str] = "zcdp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _check_number("rho", self.rho))

    def to_approx(self, delta: float) -> ApproxDP:
        """Smallest ``epsilon`` for ``delta`` by the tight conversion of Canonne, Kamath
        and Steinke (2020), Proposition 12 / Corollary 13."""
        return ApproxDP(conversion.zcdp_to_approx_epsilon(self.rho, delta), delta)

    def __str__(self) -> str:
        return f"ZCDP(rho={self.rho:g})"


@dataclass(frozen=True)
class GDP(Budget):
    """``mu``-Gaussian differential privacy.

    Parameters
    ----------
    mu : float
        Finite and non-negative.
    """

    mu: float
    notion: ClassVar[str] = "gdp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", _check_number("mu", self.mu))

    def to_approx(self, delta: float) -> ApproxDP:
        """Smallest ``epsilon`` for ``delta`` from the exact GDP privacy profile
        ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``."""
        return ApproxDP(conversion.gdp_to_approx_epsilon(self.mu, delta), delta)

    def delta_at(self, epsilon: float) -> float:
        """The exact ``delta`` of ``mu``-GDP at ``epsilon``."""
        return conversion.gdp_delta(self.mu, epsilon)

    def to_zcdp(self) -> ZCDP:
        """``mu``-GDP implies ``mu**2 / 2``-zCDP: every pair with trade-off at least
        ``G_mu`` is a post-processing of the Gaussian pair, whose Renyi divergence of order
        ``a`` is ``a mu**2 / 2``. ``rho`` is rounded up, as for :meth:`PureDP.to_zcdp`."""
        return budget_from_cost(ZCDP, exact_cost(self, ZCDP), rounding="up")

    def __str__(self) -> str:
        return f"GDP(mu={self.mu:g})"


@dataclass(frozen=True)
class NonPrivate(Budget):
    """Explicit marker for a reference run that releases exact, non-private statistics.

    It carries no guarantee and is never a default: a caller must ask for it by name.
    """

    notion: ClassVar[str] = "non-private"

    def to_approx(self, delta: float | None = None) -> None:
        """There is no (epsilon, delta) form of a non-private release."""
        return None

    def __str__(self) -> str:
        return "NonPrivate()"


#: The neighbouring relations a guarantee may be stated under (the one list): replace one
#: record (bounded DP, ``n`` public), or add or remove one (unbounded DP, ``n`` private).
NEIGHBOR_RELATIONS: tuple[str, ...] = ("replace", "add-remove")

_BY_NOTION: dict[str, type[Budget]] = {
    cls.notion: cls for cls in (PureDP, ApproxDP, ZCDP, GDP, NonPrivate)
}

# Which notion's accountant can soundly absorb a spend of another notion.
_SOUND_INTO: dict[type[Budget], tuple[type[Budget], ...]] = {
    PureDP: (PureDP,),
    ApproxDP: (ApproxDP, PureDP),
    ZCDP: (ZCDP, PureDP, GDP),
    GDP: (GDP,),
}

_WHY_NOT = {
    (ApproxDP, ZCDP): "converting rho-zCDP or mu-GDP to (epsilon, delta) needs a delta per spend; "
    "declare the total as ZCDP (or GDP) instead",
    (ApproxDP, GDP): "converting rho-zCDP or mu-GDP to (epsilon, delta) needs a delta per spend; "
    "declare the total as ZCDP (or GDP) instead",
    (GDP, ZCDP): "rho-zCDP does not imply mu-GDP",
    (GDP, PureDP): "declare the total as ZCDP to combine pure-DP spends with GDP spends",
    (GDP, ApproxDP): "an (epsilon, delta) guarantee does not imply mu-GDP",
    (PureDP, ApproxDP): "an (epsilon, delta) guarantee with delta > 0 is not pure DP",
    (PureDP, ZCDP): "rho-zCDP does not imply pure DP",
    (PureDP, GDP): "mu-GDP does not imply pure DP",
    (ZCDP, ApproxDP): "an (epsilon, delta) guarantee does not imply any zCDP guarantee",
}


def _article(name: str) -> str:
    return "an" if name[0] in "AEIOU" else "a"


def _common_notion(a: type[Budget], b: type[Budget]) -> type[Budget]:
    if a is b:
        return a
    if a in _SOUND_INTO.get(b, ()):
        return b
    if b in _SOUND_INTO.get(a, ()):
        return a
    if {a, b} == {PureDP, GDP}:
        return ZCDP
    raise IncompatibleBudgetError(
        f"cannot compose {a.__name__} with {b.__name__}: {_WHY_NOT.get((a, b), _WHY_NOT.get((b, a), 'no sound conversion'))}"
    )


def exact_cost(budget: Budget, notion: type[Budget]) -> tuple[Fraction, ...]:
    """The additive cost of ``budget`` in ``notion``, as exact rationals.

    The cost is ``(epsilon,)`` for pure DP, ``(epsilon, delta)`` for approximate DP,
    ``(rho,)`` for zCDP and ``(mu**2,)`` for GDP: the quantities that add up under
    composition. Floats are taken at their exact binary value, so comparisons of sums of
    costs against a total are exact.

    Raises
    ------
    IncompatibleBudgetError
        If ``budget`` does not soundly convert into ``notion``.
    """
    if isinstance(budget, NonPrivate):
        raise IncompatibleBudgetError("a non-private run has no privacy cost to account")
    source = type(budget)
    if source is notion:
        if notion is PureDP:
            return (Fraction(budget.epsilon),)
        if notion is ApproxDP:
            return (Fraction(budget.epsilon), Fraction(budget.delta))
        if notion is ZCDP:
            return (Fraction(budget.rho),)
        if notion is GDP:
            return (Fraction(budget.mu) ** 2,)
    if notion is ApproxDP and source is PureDP:
        return (Fraction(budget.epsilon), Fraction(0))
    if notion is ZCDP and source is PureDP:
        return (Fraction(budget.epsilon) ** 2 / 2,)
    if notion is ZCDP and source is GDP:
        return (Fraction(budget.mu) ** 2 / 2,)
    reason = _WHY_NOT.get((notion, source), "no sound conversion is known")
    raise IncompatibleBudgetError(
        f"{_article(source.__name__)} {source.__name__} spend cannot be accounted against "
        f"{_article(notion.__name__)} {notion.__name__} total: {reason}"
    )


_LARGEST_FLOAT = 1.7976931348623157e308


def float_at_most(value: Fraction) -> float:
    """The largest float not above ``value`` (so a reported remainder is always spendable,
    and an epsilon taken from a budget never exceeds it); any sign."""
    result = float(value)
    if Fraction(result) > value:
        result = math.nextafter(result, -math.inf)
    return result


def float_at_least(value: Fraction) -> float:
    """The smallest float not below ``value`` (so a reported cost is never understated);
    any sign."""
    result = float(value)
    if Fraction(result) < value:
        result = math.nextafter(result, math.inf)
    return result


def _mu_from_squared(cost: Fraction, rounding: str) -> float:
    if cost == 0:
        return 0.0
    # Logarithms of the integer numerator and denominator do not overflow where float(cost)
    # would (mu up to the largest float has mu**2 far beyond it). The estimate is a few ulps
    # off either way, so it is then adjusted against the exact square.
    mu = math.exp(0.5 * (math.log(cost.numerator) - math.log(cost.denominator)))
    mu = min(mu, _LARGEST_FLOAT)
    if rounding == "down":
        while mu > 0 and Fraction(mu) ** 2 > cost:
            mu = math.nextafter(mu, -math.inf)
        while mu < _LARGEST_FLOAT and Fraction(math.nextafter(mu, math.inf)) ** 2 <= cost:
            mu = math.nextafter(mu, math.inf)
    else:
        while Fraction(mu) ** 2 < cost:
            mu = math.nextafter(mu, math.inf)
        while mu > 0 and Fraction(math.nextafter(mu, -math.inf)) ** 2 >= cost:
            mu = math.nextafter(mu, -math.inf)
    return mu


def budget_from_cost(
    notion: type[Budget], cost: tuple[Fraction, ...], *, rounding: str = "down"
) -> Budget:
    """Inverse of :func:`exact_cost` within one notion.

    Parameters
    ----------
    notion : type
        ``PureDP``, ``ApproxDP``, ``ZCDP`` or ``GDP``.
    cost : tuple of Fraction
        The exact additive cost, as returned by :func:`exact_cost`.
    rounding : {"down", "up"}
        ``"down"`` gives each parameter as the largest float whose cost is not above
        ``cost`` (right for a remainder, which must stay spendable); ``"up"`` gives the
        smallest float whose cost is not below it (right for a guarantee, which must not
        be understated).
    """
    if rounding not in ("down", "up"):
        raise ValueError(f"rounding must be 'down' or 'up'; got {rounding!r}")
    largest = Fraction(_LARGEST_FLOAT) ** 2 if notion is GDP else Fraction(_LARGEST_FLOAT)
    if any(c > largest for c in cost):
        raise ValueError(
            f"the {notion.__name__} parameters of this cost exceed the largest finite float"
        )
    if notion is GDP:
        return GDP(_mu_from_squared(cost[0], rounding))
    to_float = float_at_most if rounding == "down" else float_at_least
    return notion(*(to_float(c) for c in cost))


def budget_from_dict(data: dict[str, Any]) -> Budget:
    """Rebuild a budget from :meth:`Budget.to_dict` output."""
    try:
        cls = _BY_NOTION[data["notion"]]
    except KeyError as exc:
        raise ValueError(
            f"unknown privacy notion {data.get('notion')!r}; expected one of {sorted(_BY_NOTION)}"
        ) from exc
    missing = [k for k in cls._fields() if k not in data]
    if missing:
        raise ValueError(f"a {data['notion']!r} budget needs the field(s) {missing}; got {data!r}")
    return cls(**{k: data[k] for k in cls._fields()})


def compose(budgets: list[Budget] | tuple[Budget, ...]) -> Budget:
    """The composition of ``budgets``, summed exactly and rounded up once.

    Summing pairwise with ``+`` rounds after every addition; a guarantee assembled from
    parts that were split off one total must come back to no more than that total, which
    one rounding of the exact sum guarantees.
    """
    parts = list(budgets)
    if not parts:
        raise ValueError("compose needs at least one budget")
    if any(isinstance(b, NonPrivate) for b in parts):
        return NonPrivate()
    notion = type(parts[0])
    for other in parts[1:]:
        notion = _common_notion(notion, type(other))
    width = len(exact_cost(parts[0], notion))
    total = [Fraction(0)] * width
    for part in parts:
        for i, c in enumerate(exact_cost(part, notion)):
            total[i] += c
    return budget_from_cost(notion, tuple(total), rounding="up")


def split_budget(budget: Budget, fraction: float) -> tuple[Budget, Budget]:
    """Split ``budget`` into a ``fraction`` part and the rest, such that the two compose
    back to no more than ``budget`` -- exactly to it for pure DP, approximate DP and zCDP
    (the part is a multiple of the budget's last binary digit: :func:`dyadic_share`).

    The split is by additive cost: epsilon (and delta) for pure and approximate DP, rho for
    zCDP, ``mu**2`` for GDP.
    """
    if not (isinstance(fraction, (int, float)) and 0 < fraction < 1):
        raise ValueError(f"fraction must be a number in (0, 1); got {fraction!r}")
    if isinstance(budget, NonPrivate):
        return NonPrivate(), NonPrivate()
    notion = type(budget)
    cost = exact_cost(budget, notion)
    first = dyadic_share(budget, Fraction(fraction))
    used = exact_cost(first, notion)
    second = budget_from_cost(notion, tuple(c - u for c, u in zip(cost, used)))
    return first, second


def _last_digit(value: Fraction) -> Fraction:
    """The last binary digit (ulp) of the float ``value`` (0 for 0)."""
    return Fraction(math.ulp(float(value))) if value > 0 else Fraction(1)


def scale_budget(budget: Budget, fraction: Fraction | float) -> Budget:
    """The budget whose additive cost is ``fraction`` of ``budget``'s, rounded down."""
    notion = type(budget)
    return budget_from_cost(
        notion, tuple(c * Fraction(fraction) for c in exact_cost(budget, notion))
    )


def dyadic_share(budget: Budget, fraction: Fraction | float) -> Budget:
    """``fraction`` of ``budget``'s additive cost, rounded down -- for pure DP, approximate
    DP and zCDP to a multiple of the budget's own last binary digit, so that the budget
    minus any sum of such shares is an exact float and a last step can take exactly what
    remains (the parts add up to the budget exactly). GDP (whose cost ``mu**2`` is no
    parameter): :func:`scale_budget`."""
    notion = type(budget)
    if notion is GDP:
        return scale_budget(budget, fraction)
    cost = exact_cost(budget, notion)
    share = Fraction(fraction)
    digits = tuple(_last_digit(c) for c in cost)
    return budget_from_cost(notion, tuple(
        math.floor(c * share / d) * d for c, d in zip(cost, digits)))


def parameter_of(budget: Budget) -> tuple[str, float]:
    """The name and value of a budget's main parameter: ``rho`` (zCDP), ``mu`` (GDP),
    ``epsilon`` (pure and approximate DP) -- for messages that name it."""
    if isinstance(budget, ZCDP):
        return "rho", budget.rho
    if isinstance(budget, GDP):
        return "mu", budget.mu
    return "epsilon", budget.epsilon


def _rho_implying(epsilon: float, delta: float) -> float:
    """The largest ``rho`` whose tight conversion implies ``(epsilon, delta)``; where that
    search overflows (an enormous ``epsilon``), the simple conversion ``epsilon = rho +
    2 sqrt(rho ln(1/delta))`` solved for ``rho`` (a smaller ``rho``, so still implying it)."""
    if epsilon == 0:
        return 0.0
    try:
        return conversion.zcdp_rho_for(epsilon, delta)
    except (OverflowError, ArithmeticError):
        # Aimed inside epsilon by the conversions' relative margin, which also covers the
        # rounding of log(1/delta) (raised by it) and of the float expression checked.
        log_term = -math.log(delta) * (1.0 + conversion.PROFILE_MARGIN)
        target = epsilon * (1.0 - conversion.PROFILE_MARGIN)
        root = math.sqrt(log_term + target) - math.sqrt(log_term)
        rho = root * root
        while rho > 0 and rho + 2 * math.sqrt(rho * log_term) > target:
            rho = math.nextafter(rho, 0.0)
        return rho


def accounting_total(budget: Budget, notion: type[Budget]) -> Budget:
    """The total, in ``notion``, that a release given ``budget`` may spend: the one place a
    requested budget is converted into the notion its steps compose in.

    * the same notion (and ``NonPrivate()``): ``budget`` itself;
    * ``ZCDP`` from ``PureDP(epsilon)`` or ``GDP(mu)``: ``epsilon**2 / 2`` or ``mu**2 / 2``
      (Bun & Steinke 2016, Prop. 1.4; Gaussian DP implies this zCDP), computed exactly and
      rounded **down**, so the steps never spend more than the budget implies. The release
      then guarantees this zCDP budget, *not* the pure-DP or GDP one;
    * ``ZCDP`` from ``ApproxDP(epsilon, delta)``: the largest ``rho`` whose tight conversion
      (Canonne, Kamath & Steinke 2020) implies ``(epsilon, delta)`` (``delta = 0`` is
      ``PureDP(epsilon)``); the release then holds both forms;
    * ``PureDP`` from ``ApproxDP(epsilon, 0)``: ``PureDP(epsilon)``.

    Raises
    ------
    IncompatibleBudgetError
        ``budget`` implies no guarantee in ``notion``.
    BudgetRangeError
        The converted parameter would exceed the largest float.
    """
    if isinstance(budget, NonPrivate) or type(budget) is notion:
        return budget
    if isinstance(budget, ApproxDP) and budget.delta == 0:
        return accounting_total(PureDP(budget.epsilon), notion)
    if notion is ZCDP and isinstance(budget, ApproxDP):
        return ZCDP(_rho_implying(budget.epsilon, budget.delta))
    cost = exact_cost(budget, notion)
    try:
        return budget_from_cost(notion, cost, rounding="down")
    except ValueError:
        name, value = parameter_of(budget)
        raise BudgetRangeError(
            f"budget: {name} must be below 1.8e+154 to be accounted in {notion.__name__} "
            f"({name}**2/2 exceeds the largest float); got {name}={value!r}",
            parameter=name, value=value,
        ) from None
