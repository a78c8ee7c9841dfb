"""Mironov's floating-point attack on the covariance mechanism: a float-noise release must
fail it, the exact samplers must pass it (docs/audit.md)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpggm.audit.floats import gaussian_reachable, laplace_reachable
from dpggm.audit.stats import epsilon_lower_bound
from dpggm.estimators.covariance import PrivateCovariance
from dpggm.mechanisms.bounds import RowNorm
from dpggm.privacy.budgets import ApproxDP, PureDP
from dpggm.privacy.calibration import gaussian_sigma

__all__ = ["float_support_attack"]


def float_support_attack(
    mechanism: str = "laplace",
    *,
    releases: int = 2000,
    seed: int = 2026,
    confidence: float = 0.95,
    **options: Any,
) -> dict[str, Any]:
    """Run the float-support attack on ``PrivateCovariance``.

    ``PrivateCovariance(mechanism=..., bounds=RowNorm(1))`` with ``PureDP(1)`` (Laplace) or
    ``ApproxDP(1, 1e-3)`` (Gaussian), on ``n = 10`` rows of ``p = 2``: all zeros against one
    row ``(1, 0)``, ``releases`` releases each. The event is "some released entry of
    ``noisy_covariance_`` is not reachable from the zero statistic by NumPy's float
    sampler"; it has probability 0 on the zero data set. The event is fixed in advance, so
    all releases estimate it.

    Parameters
    ----------
    mechanism : {"laplace", "gaussian"}
    releases : int
    seed : int
    confidence : float
    **options
        Further ``PrivateCovariance`` parameters (e.g. a noise option).

    Returns
    -------
    dict
        ``epsilon_lower_bound``, ``claimed_epsilon``, ``unreachable`` (counts on each data
        set), ``releases``.
    """
    if mechanism not in ("laplace", "gaussian"):
        raise ValueError(f"mechanism must be 'laplace' or 'gaussian'; got {mechanism!r}")
    budget = PureDP(1.0) if mechanism == "laplace" else ApproxDP(1.0, 1e-3)
    zeros = np.zeros((10, 2))
    one = zeros.copy()
    one[0] = (1.0, 0.0)
    rng = np.random.default_rng(seed)
    unreachable = {}
    for name, data in (("zeros", zeros), ("one row (1, 0)", one)):
        values, noise = [], {}
        for _ in range(releases):
            est = PrivateCovariance(mechanism=mechanism, budget=budget, bounds=RowNorm(1.0),
                                    random_state=rng, **options).fit(data)
            values.append(est.noisy_covariance_[np.triu_indices(2)])
            noise = est.privacy_.noise
        values = np.array(values)
        if mechanism == "laplace":
            # The scale a float sampler would use, (p + 1) B^2 / n / epsilon, unless the
            # release states its own.
            reachable = laplace_reachable(values, 0.0, noise.get("laplace_scale", 0.3))
        else:
            sigma = noise.get("sigma") or gaussian_sigma(math.sqrt(2) / 10, budget)
            reachable = gaussian_reachable(values, 0.0, sigma)
        unreachable[name] = int((~reachable.all(axis=1)).sum())
    bound = epsilon_lower_bound(unreachable["one row (1, 0)"], releases, unreachable["zeros"],
                                releases, delta=0.0 if mechanism == "laplace" else 1e-3,
                                alpha=1 - confidence)
    return {"mechanism": mechanism, "epsilon_lower_bound": bound,
            "claimed_epsilon": budget.epsilon, "unreachable": unreachable, "releases": releases}
