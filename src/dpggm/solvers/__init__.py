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
    "ClippingModel": "dpggm.solvers.inference",
    "EdgeInference": "dpggm.solvers.inference",
    "detectable_partial_correlation": "dpggm.solvers.inference",
    "edge_inference": "dpggm.solvers.inference",
    "expected_row_norm_bound": "dpggm.solvers.inference",
    "false_discovery_control": "dpggm.solvers.inference",
    "noise_calibrated_alpha": "dpggm.solvers.inference",
    "support_refit": "dpggm.solvers.inference",
    "MaxEntropyReconstructor": "dpggm.solvers.maxent",
    "max_entropy_completion": "dpggm.solvers.maxent",
    "project_psd": "dpggm.solvers.psd",
    "auto_alpha": "dpggm.solvers.released",
    "solve_released": "dpggm.solvers.released",
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
    from dpggm.solvers.inference import (
        ClippingModel,
        EdgeInference,
        detectable_partial_correlation,
        edge_inference,
        expected_row_norm_bound,
        false_discovery_control,
        noise_calibrated_alpha,
        support_refit,
    )
    from dpggm.solvers.maxent import (
        MaxEntropyReconstructor,
        max_entropy_completion,
    )
    from dpggm.solvers.psd import (
        project_psd,
    )
    from dpggm.solvers.released import (
        auto_alpha,
        solve_released,
    )
    from dpggm.solvers.ridge import (
        ridge_precision,
    )
    from dpggm.solvers.threshold import (
        hard_threshold,
    )

__all__ = [
    "ClippingModel",
    "EdgeInference",
    "MaxEntropyReconstructor",
    "SolverResult",
    "auto_alpha",
    "detectable_partial_correlation",
    "edge_inference",
    "expected_row_norm_bound",
    "false_discovery_control",
    "graphical_lasso",
    "graphical_lasso_objective",
    "graphical_lasso_path",
    "hard_threshold",
    "max_entropy_completion",
    "noise_calibrated_alpha",
    "project_psd",
    "ridge_precision",
    "solve_released",
    "support_refit",
]
