"""Deterministic post-processing on matrices: never raw data, never budget."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpggm._lazy import lazy_exports

# Name -> module; imported on first use (see dpggm._lazy) so that start-up stays fast.
_EXPORTS = {
    "SolverResult": "dpggm.solvers._result",
    "graphical_lasso": "dpggm.solvers.glasso",
    "graphical_lasso_objective": "dpggm.solvers.glasso",
    "graphical_lasso_path": "dpggm.solvers.glasso",
    "MaxEntropyReconstructor": "dpggm.solvers.maxent",
    "max_entropy_completion": "dpggm.solvers.maxent",
    "project_psd": "dpggm.solvers.psd",
    "ridge_precision": "dpggm.solvers.ridge",
    "hard_threshold": "dpggm.solvers.threshold",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover
    from dpggm.solvers._result import (
        SolverResult,
    )
    from dpggm.solvers.glasso import (
        graphical_lasso,
        graphical_lasso_objective,
        graphical_lasso_path,
    )
    from dpggm.solvers.maxent import (
        MaxEntropyReconstructor,
        max_entropy_completion,
    )
    from dpggm.solvers.psd import (
        project_psd,
    )
    from dpggm.solvers.ridge import (
        ridge_precision,
    )
    from dpggm.solvers.threshold import (
        hard_threshold,
    )

__all__ = [
    "MaxEntropyReconstructor",
    "SolverResult",
    "graphical_lasso",
    "graphical_lasso_objective",
    "graphical_lasso_path",
    "hard_threshold",
    "max_entropy_completion",
    "project_psd",
    "ridge_precision",
]
