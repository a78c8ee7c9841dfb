"""Error measures for matrices and graphs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpggm._lazy import lazy_exports

# Name -> module; imported on first use (see dpggm._lazy) so that start-up stays fast.
_EXPORTS = {
    "EdgeRates": "dpggm.metrics.graph",
    "adjacency_from_precision": "dpggm.metrics.graph",
    "edge_auc": "dpggm.metrics.graph",
    "edge_scores_to_roc": "dpggm.metrics.graph",
    "support_f1": "dpggm.metrics.graph",
    "tpr_fpr": "dpggm.metrics.graph",
    "NORMS": "dpggm.metrics.matrix",
    "frobenius_error": "dpggm.metrics.matrix",
    "mahalanobis_error": "dpggm.metrics.matrix",
    "matrix_error": "dpggm.metrics.matrix",
    "matrix_norm": "dpggm.metrics.matrix",
    "relative_error": "dpggm.metrics.matrix",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover
    from dpggm.metrics.graph import (
        EdgeRates,
        adjacency_from_precision,
        edge_auc,
        edge_scores_to_roc,
        support_f1,
        tpr_fpr,
    )
    from dpggm.metrics.matrix import (
        NORMS,
        frobenius_error,
        mahalanobis_error,
        matrix_error,
        matrix_norm,
        relative_error,
    )

__all__ = [
    "NORMS",
    "EdgeRates",
    "adjacency_from_precision",
    "edge_auc",
    "edge_scores_to_roc",
    "frobenius_error",
    "mahalanobis_error",
    "matrix_error",
    "matrix_norm",
    "relative_error",
    "support_f1",
    "tpr_fpr",
]
