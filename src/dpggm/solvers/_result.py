"""The result object every solver returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["SolverResult"]


@dataclass(frozen=True)
class SolverResult:
    """Outcome of a deterministic post-processing solver.

    Attributes
    ----------
    estimate : ndarray
        The main output: :attr:`precision` for precision solvers, :attr:`covariance` for
        covariance solvers (kept for code that treats every solver alike).
    iterations : int
        Iterations used (0 for closed forms).
    converged : bool
        Whether the stopping criterion was met.
    objective : float
        Final objective value (``nan`` when the method has none).
    precision : ndarray or None
        The precision matrix, when the solver produces one.
    covariance : ndarray or None
        The covariance matrix, when the solver produces one.
    message : str
        How the solver stopped, in words (empty when there is nothing to add).
    extra : dict
        Method-specific outputs, e.g. ``duality_gap``, ``method``.
    """

    estimate: np.ndarray
    iterations: int = 0
    converged: bool = True
    objective: float = float("nan")
    extra: dict[str, Any] = field(default_factory=dict)
    precision: np.ndarray | None = None
    covariance: np.ndarray | None = None
    message: str = ""

    def __post_init__(self) -> None:
        # A solver that reports its precision or covariance among its extra outputs gets
        # them in the named fields too.
        for name in ("precision", "covariance"):
            if getattr(self, name) is None and name in self.extra:
                object.__setattr__(self, name, self.extra[name])

    def __getattr__(self, name: str) -> Any:
        # Method-specific outputs read like attributes (``result.duality_gap``).
        extra = object.__getattribute__(self, "extra")
        if name in extra:
            return extra[name]
        raise AttributeError(name)
