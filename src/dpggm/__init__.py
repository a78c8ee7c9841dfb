"""dpggm: differentially private covariance, precision and Gaussian graphical models.

Every estimator takes an explicit privacy ``budget`` and declared ``bounds`` and records
what it spent in ``privacy_``.
"""

from dpggm.estimators import (
    SCIO,
    AdaptiveCovariance,
    AdaSSP,
    DiagonalCovariance,
    GraphicalLasso,
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
    IncompatibleBudgetError,
    InvalidGuaranteeError,
    NumericalError,
)
from dpggm.mechanisms import Box, NoisyRelease, RowNorm, bounds_from_data, publish
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

__version__ = "0.1.0"

__all__ = [
    "SCIO",
    "AdaSSP",
    "AdaptiveCovariance",
    "DiagonalCovariance",
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
    "ThresholdedCovariance",
    "publish",
    "GDP",
    "ZCDP",
    "ApproxDP",
    "Box",
    "BudgetExceededError",
    "ConvergenceWarning",
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
