"""dpggm: differentially private covariance, precision and Gaussian graphical models.

Every estimator takes an explicit privacy ``budget`` and declared ``bounds`` and records
what it spent in ``privacy_``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpggm._lazy import lazy_exports

__version__ = "0.1.0"

# Name -> module; imported on first use (see dpggm._lazy) so that start-up stays fast.
_EXPORTS = {
    "SCIO": "dpggm.estimators",
    "AdaptiveCovariance": "dpggm.estimators",
    "AdaSSP": "dpggm.estimators",
    "DiagonalCovariance": "dpggm.estimators",
    "GWishartGraph": "dpggm.estimators",
    "GraphicalLasso": "dpggm.estimators",
    "NeighborhoodSelection": "dpggm.estimators",
    "NoisyGraphicalLasso": "dpggm.estimators",
    "OutputPerturbationPrecision": "dpggm.estimators",
    "PACECovariance": "dpggm.estimators",
    "PrivateGraph": "dpggm.estimators",
    "PrivateCovariance": "dpggm.estimators",
    "PrivateLinearRegression": "dpggm.estimators",
    "RidgePrecision": "dpggm.estimators",
    "SeparateCovariance": "dpggm.estimators",
    "SSPCovariance": "dpggm.estimators",
    "ThresholdedCovariance": "dpggm.estimators",
    "TableFile": "dpggm.data",
    "TableSchema": "dpggm.data",
    "make_estimator": "dpggm.estimators",
    "BudgetExceededError": "dpggm.exceptions",
    "ConvergenceWarning": "dpggm.exceptions",
    "IncompatibleBudgetError": "dpggm.exceptions",
    "InvalidGuaranteeError": "dpggm.exceptions",
    "NumericalError": "dpggm.exceptions",
    "CuratorWarning": "dpggm.exceptions",
    "Box": "dpggm.mechanisms",
    "NoisyRelease": "dpggm.mechanisms",
    "RowNorm": "dpggm.mechanisms",
    "bounds_from_data": "dpggm.mechanisms",
    "publish": "dpggm.mechanisms",
    "GDP": "dpggm.privacy",
    "ZCDP": "dpggm.privacy",
    "ApproxDP": "dpggm.privacy",
    "Ledger": "dpggm.privacy",
    "NonPrivate": "dpggm.privacy",
    "PrivacyAccountant": "dpggm.privacy",
    "PrivacyGuarantee": "dpggm.privacy",
    "PureDP": "dpggm.privacy",
    "gaussian_sigma": "dpggm.privacy",
    "laplace_scale": "dpggm.privacy",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover
    from dpggm.data import TableFile, TableSchema
    from dpggm.estimators import (
        SCIO,
        AdaptiveCovariance,
        AdaSSP,
        DiagonalCovariance,
        GraphicalLasso,
        GWishartGraph,
        NeighborhoodSelection,
        NoisyGraphicalLasso,
        OutputPerturbationPrecision,
        PACECovariance,
        PrivateCovariance,
        PrivateGraph,
        PrivateLinearRegression,
        RidgePrecision,
        SeparateCovariance,
        SSPCovariance,
        ThresholdedCovariance,
        make_estimator,
    )
    from dpggm.exceptions import (
        BudgetExceededError,
        ConvergenceWarning,
        CuratorWarning,
        IncompatibleBudgetError,
        InvalidGuaranteeError,
        NumericalError,
    )
    from dpggm.mechanisms import (
        Box,
        NoisyRelease,
        RowNorm,
        bounds_from_data,
        publish,
    )
    from dpggm.privacy import (
        GDP,
        ZCDP,
        ApproxDP,
        Ledger,
        NonPrivate,
        PrivacyAccountant,
        PrivacyGuarantee,
        PureDP,
        gaussian_sigma,
        laplace_scale,
    )

__all__ = [
    "SCIO",
    "AdaSSP",
    "AdaptiveCovariance",
    "DiagonalCovariance",
    "GWishartGraph",
    "GraphicalLasso",
    "Ledger",
    "NeighborhoodSelection",
    "NoisyGraphicalLasso",
    "NoisyRelease",
    "OutputPerturbationPrecision",
    "PACECovariance",
    "PrivateGraph",
    "PrivateLinearRegression",
    "RidgePrecision",
    "SSPCovariance",
    "SeparateCovariance",
    "TableFile",
    "TableSchema",
    "ThresholdedCovariance",
    "publish",
    "GDP",
    "ZCDP",
    "ApproxDP",
    "Box",
    "BudgetExceededError",
    "ConvergenceWarning",
    "CuratorWarning",
    "IncompatibleBudgetError",
    "InvalidGuaranteeError",
    "NonPrivate",
    "NumericalError",
    "PrivacyAccountant",
    "PrivacyGuarantee",
    "PrivateCovariance",
    "PureDP",
    "RowNorm",
    "bounds_from_data",
    "gaussian_sigma",
    "laplace_scale",
    "make_estimator",
]
