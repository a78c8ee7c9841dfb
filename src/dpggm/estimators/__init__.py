"""scikit-learn style private estimators.

They follow one contract (:mod:`dpggm.estimators._contract`): every constructor parameter
is declared with its constraint and checked before any data are read or any random word is
drawn; every bad value, budget or bound raises a ``ValueError`` (a subclass for a budget out
of range, of the wrong notion, an invalid mechanism, a relation without an analysis; for a
value of the wrong type a ``ParameterTypeError``, which is also a ``TypeError``) naming the
parameter, the constraint and the value. They follow one of two fit templates
(:mod:`dpggm.estimators._base`): the estimators that read private records plan their
measurements from public facts (``plan(n_samples=, n_features=)``) and run exactly that
plan; the estimators fitted to a published release spend nothing. A fit sets ``privacy_``,
``plan_``, ``n_samples_``, ``n_features_in_``, ``covariance_`` and/or ``precision_``,
``adjacency_`` for graph estimators, ``solver_`` for a solver's outcome, and
``feature_names_in_`` (an ndarray of str) only for a DataFrame or a CSV file with a header.
Sparse and complex inputs are refused; ``save(directory, ledger=...)`` writes a fit's
released files whole or not at all (:mod:`dpggm.io`).

Preprocessing voids the guarantee when it is fitted on the private data: a
``StandardScaler`` (or any fitted transformer) in a ``Pipeline`` before one of these
estimators makes every transformed record depend on all the records, so the declared bounds
and sensitivities no longer hold. The record follows the truth: after such a step
``privacy_.validity`` is ``"data-dependent"`` with the step named (accountants and ledgers
refuse it) and :class:`~dpggm.estimators._contract.FittedOnPrivateDataWarning` is issued;
a fixed public per-record function (``FunctionTransformer(np.log)``, ``Normalizer``:
stateless by scikit-learn's tags and checked on a public probe to act on each record alone)
changes nothing. A transformer fitted by hand before ``fit``, meta-estimators other than
``Pipeline`` and a function whose parameters were computed from the data cannot be detected
(:func:`~dpggm.estimators._contract.preprocessing_reasons`): transform only with fixed,
public parameters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpggm._lazy import lazy_exports

# Name -> module; imported on first use (see dpggm._lazy) so that start-up stays fast.
_EXPORTS = {
    "AdaptiveCovariance": "dpggm.estimators.baselines",
    "DiagonalCovariance": "dpggm.estimators.baselines",
    "SeparateCovariance": "dpggm.estimators.baselines",
    "SSPCovariance": "dpggm.estimators.baselines",
    "PrivateCovariance": "dpggm.estimators.covariance",
    "SCIO": "dpggm.estimators.graph_baselines",
    "NeighborhoodSelection": "dpggm.estimators.graph_baselines",
    "NoisyGraphicalLasso": "dpggm.estimators.noisy_glasso",
    "PACECovariance": "dpggm.estimators.pace",
    "PrivateGraph": "dpggm.estimators.graph",
    "PrivateGraphComparison": "dpggm.estimators.comparison",
    "GWishartGraph": "dpggm.estimators.gwishart",
    "GraphicalLasso": "dpggm.estimators.precision",
    "OutputPerturbationPrecision": "dpggm.estimators.precision",
    "RidgePrecision": "dpggm.estimators.precision",
    "ThresholdedCovariance": "dpggm.estimators.precision",
    "make_estimator": "dpggm.estimators.registry",
    "feature_names": "dpggm.estimators._contract",
    "result_record": "dpggm.estimators._base",
    "AdaSSP": "dpggm.estimators.regression",
    "PrivateLinearRegression": "dpggm.estimators.regression",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover
    from dpggm.estimators._base import result_record
    from dpggm.estimators._contract import feature_names
    from dpggm.estimators.baselines import (
        AdaptiveCovariance,
        DiagonalCovariance,
        SeparateCovariance,
        SSPCovariance,
    )
    from dpggm.estimators.comparison import PrivateGraphComparison
    from dpggm.estimators.covariance import (
        PrivateCovariance,
    )
    from dpggm.estimators.graph import PrivateGraph
    from dpggm.estimators.graph_baselines import (
        SCIO,
        NeighborhoodSelection,
    )
    from dpggm.estimators.gwishart import GWishartGraph
    from dpggm.estimators.noisy_glasso import (
        NoisyGraphicalLasso,
    )
    from dpggm.estimators.pace import (
        PACECovariance,
    )
    from dpggm.estimators.precision import (
        GraphicalLasso,
        OutputPerturbationPrecision,
        RidgePrecision,
        ThresholdedCovariance,
    )
    from dpggm.estimators.registry import (
        make_estimator,
    )
    from dpggm.estimators.regression import (
        AdaSSP,
        PrivateLinearRegression,
    )

__all__ = [
    "SCIO",
    "AdaSSP",
    "AdaptiveCovariance",
    "DiagonalCovariance",
    "GWishartGraph",
    "GraphicalLasso",
    "NeighborhoodSelection",
    "NoisyGraphicalLasso",
    "OutputPerturbationPrecision",
    "PACECovariance",
    "PrivateGraph",
    "PrivateGraphComparison",
    "PrivateCovariance",
    "PrivateLinearRegression",
    "RidgePrecision",
    "SSPCovariance",
    "SeparateCovariance",
    "ThresholdedCovariance",
    "feature_names",
    "make_estimator",
    "result_record",
]
