"""scikit-learn style private estimators."""

from dpggm.estimators.baselines import (
    AdaptiveCovariance,
    DiagonalCovariance,
    SeparateCovariance,
    SSPCovariance,
)
from dpggm.estimators.covariance import PrivateCovariance
from dpggm.estimators.graph import PrivateGraph
from dpggm.estimators.graph_baselines import SCIO, NeighborhoodSelection
from dpggm.estimators.noisy_glasso import NoisyGraphicalLasso
from dpggm.estimators.pace import PACECovariance
from dpggm.estimators.precision import (
    GraphicalLasso,
    OutputPerturbationPrecision,
    RidgePrecision,
    ThresholdedCovariance,
)
from dpggm.estimators.registry import make_estimator
from dpggm.estimators.regression import AdaSSP, PrivateLinearRegression

__all__ = [
    "SCIO",
    "AdaSSP",
    "AdaptiveCovariance",
    "DiagonalCovariance",
    "GraphicalLasso",
    "NeighborhoodSelection",
    "NoisyGraphicalLasso",
    "OutputPerturbationPrecision",
    "PACECovariance",
    "PrivateCovariance",
    "PrivateGraph",
    "PrivateLinearRegression",
    "RidgePrecision",
    "SSPCovariance",
    "SeparateCovariance",
    "ThresholdedCovariance",
    "make_estimator",
]
