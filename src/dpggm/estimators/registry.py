"""Estimators by method name, as the command line and experiments refer to them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["GRAPH_METHODS", "METHODS", "make_estimator", "register_method"]

#: The methods :class:`~dpggm.estimators.graph.PrivateGraph` (``dpggm graph``) can finish
#: with: the one table, read by the estimator and the command line alike.
GRAPH_METHODS = ("glasso", "pace")

_FACTORIES: dict[str, tuple[Callable[..., Any] | str, dict[str, Any], frozenset[str]]] = {}


def register_method(
    name: str, factory: Callable[..., Any] | str, *, fixed: dict[str, Any] | None = None,
    options: tuple[str, ...] = (),
) -> None:
    """Make ``factory`` available as method ``name``; ``fixed`` parameters are preset and
    ``options`` lists the method-specific parameters it accepts. ``factory`` may be given
    as ``"module:attribute"``, imported only when the method is built (so that listing the
    methods, e.g. in ``dpggm --help``, imports no estimator)."""
    _FACTORIES[name] = (factory, dict(fixed or {}), frozenset(options))


_COMMON = ("budget", "bounds", "neighbors", "random_state")

register_method("ssp", "dpggm.estimators.covariance:PrivateCovariance", fixed={"mechanism": "gaussian"},
                options=("missing",))
register_method("laplace", "dpggm.estimators.covariance:PrivateCovariance", fixed={"mechanism": "laplace"},
                options=("missing",))
register_method("sulq", "dpggm.estimators.covariance:PrivateCovariance", fixed={"mechanism": "sulq"},
                options=("missing",))
register_method("wishart", "dpggm.estimators.covariance:PrivateCovariance", fixed={"mechanism": "wishart"},
                options=("missing",))
register_method(
    "wishart-pure", "dpggm.estimators.covariance:PrivateCovariance", fixed={"mechanism": "wishart-pure"},
    options=("allow_invalid", "missing"),
)

_PERTURBATION_OPTIONS = ("mechanism", "calibration", "center", "allow_invalid", "missing")
register_method("ridge", "dpggm.estimators.precision:RidgePrecision", options=("ridge",) + _PERTURBATION_OPTIONS)
register_method(
    "glasso", "dpggm.estimators.precision:GraphicalLasso",
    options=("alpha", "solver", "penalize_diagonal") + _PERTURBATION_OPTIONS,
)
register_method("threshold", "dpggm.estimators.precision:ThresholdedCovariance", options=("gamma",) + _PERTURBATION_OPTIONS)
register_method(
    "output-perturbation", "dpggm.estimators.precision:OutputPerturbationPrecision",
    options=("alpha", "solver", "allow_invalid"),
)
register_method("pace", "dpggm.estimators.pace:PACECovariance", options=(
    "diag_fraction", "select_fraction", "max_rounds", "reconstruction", "progress",
    "entry_sensitivity",
))

register_method("ssp-zcdp", "dpggm.estimators.baselines:SSPCovariance", options=("center", "psd"))
register_method("diagonal", "dpggm.estimators.baselines:DiagonalCovariance", options=("center",))
register_method("separate", "dpggm.estimators.baselines:SeparateCovariance", options=("center", "eigenvector_fraction"))
register_method("adaptive", "dpggm.estimators.baselines:AdaptiveCovariance", options=(
    "center", "trace_fraction", "radius_fraction", "failure_probability", "n_radii",
))

METHODS = _FACTORIES  # live view: later registrations appear here too


def make_estimator(method: str, **params: Any) -> Any:
    """Build the estimator registered as ``method`` with ``params``.

    Raises
    ------
    ValueError
        Unknown method, or a parameter the method does not take.
    """
    if method not in _FACTORIES:
        raise ValueError(f"method must be one of {sorted(_FACTORIES)}; got {method!r}")
    factory, fixed, options = _FACTORIES[method]
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        factory = getattr(importlib.import_module(module), attribute)
    unexpected = sorted(set(params) - set(_COMMON) - options)
    if unexpected:
        raise ValueError(
            f"method {method!r} does not take {', '.join(unexpected)}; it accepts "
            f"{', '.join(sorted(options)) or 'no method-specific options'}"
        )
    return factory(**fixed, **params)
