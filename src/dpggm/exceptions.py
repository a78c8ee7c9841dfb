"""Exceptions and warnings raised by dpggm."""

from __future__ import annotations

from typing import Any

__all__ = [
    "BudgetExceededError",
    "BudgetRangeError",
    "ConvergenceWarning",  # noqa: F822 (lazy: see __getattr__)
    "CuratorWarning",
    "IncompatibleBudgetError",
    "InvalidGuaranteeError",
    "NoSolutionError",
    "NumericalError",
    "ReleaseFailedError",
    "UnsupportedNeighborsError",
]


class BudgetExceededError(RuntimeError):
    """A spend was refused because it would exceed the declared privacy budget."""


class BudgetRangeError(ValueError):
    """A budget outside the range a release can deliver (zero, or so small or so large that
    the noise cannot be drawn exactly on a grid): the message names the budget's parameter
    and the range that works for this release, computed from public parameters.

    Attributes
    ----------
    parameter : str
        ``"epsilon"``, ``"rho"`` or ``"mu"``.
    value : float
    low, high : float
        Every value in ``[low, high]`` works for this release.
    """

    def __init__(self, message: str, *, parameter: str = "", value: float = float("nan"),
                 low: float = float("nan"), high: float = float("nan")) -> None:
        super().__init__(message)
        self.parameter, self.value, self.low, self.high = parameter, value, low, high


class IncompatibleBudgetError(TypeError, ValueError):
    """A budget cannot be soundly expressed in the privacy notion that is required.

    A ``TypeError`` (the budget is of the wrong kind) and a ``ValueError``, so that one
    ``except ValueError`` catches every refused parameter, budget or bound (the error
    contract of :mod:`dpggm.estimators`)."""


class InvalidGuaranteeError(RuntimeError, ValueError):
    """A method whose published privacy guarantee is known to be invalid was not opted into
    (or such a release was offered to an accountant). A ``ValueError`` too: the parameter
    that asked for it (``allow_invalid``, a mechanism) is at fault."""


class CuratorWarning(UserWarning):
    """A warning computed from the private data, for the curator who runs the estimate
    only (for example a variable that looks like a record identifier): never publish it.
    It never changes what a release holds."""


class UnreliableInferenceWarning(UserWarning):
    """The edge inference ran, but its working model does not hold for this release: the
    partial correlations, their intervals and q-values are not to be relied on (the
    message says why). Computed from the release alone (post-processing): it may be
    published with it."""


class NumericalError(ArithmeticError):
    """A numerical computation broke down (for example a matrix that must be positive
    definite is not)."""


class NoSolutionError(NumericalError, ValueError):
    """The optimisation problem has no solution for this input (for example a graphical
    lasso on an indefinite matrix with too small a penalty). It is a ``ValueError`` too:
    the input, not the arithmetic, is at fault."""


class ReleaseFailedError(RuntimeError):
    """A release failed after its first random draw (a solver that broke down on the noisy
    statistic, a full disk while writing it, ...).

    Whether a run fails, and how, may depend on the noise drawn, so the message is
    generic: the reason is withheld (a seeded run -- an experiment, never a release --
    shows it), and the failure itself counts as a release of what ran. ``guarantee`` is
    what to charge for it (a :class:`~dpggm.privacy.guarantee.PrivacyGuarantee` of the
    whole plan: the steps that ran and the one that failed); the command line and the
    functions that take a ledger charge it before they report the failure.
    """

    def __init__(self, message: str, *, guarantee: Any = None) -> None:
        super().__init__(message)
        self.guarantee = guarantee


class UnsupportedNeighborsError(ValueError):
    """The method cannot give an honest guarantee under the neighbouring relation asked for
    (for example a statistic normalised by the private count under add/remove)."""


def __getattr__(name: str) -> Any:
    # scikit-learn's ConvergenceWarning is re-exported (so that code filtering
    # scikit-learn's warnings filters ours too), but importing scikit-learn takes about a
    # second: only on first use, so that the command line starts fast.
    if name == "ConvergenceWarning":
        from sklearn.exceptions import ConvergenceWarning

        globals()[name] = ConvergenceWarning
        return ConvergenceWarning
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
