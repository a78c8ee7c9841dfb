"""Empirical privacy audit of every mechanism (``dpggm audit``).

Each mechanism is run many times on worst-case neighbouring data sets; a family of events
is searched on half of the runs and the best are tested on the other half, which gives a
Clopper–Pearson lower bound on epsilon at the claimed delta (DP-Sniper / Google's DP
stochastic tester style). A lower bound above the claim proves the claim false (with the
stated confidence); a pass only means no violation was found.

Privacy
-------
The audit runs on synthetic data sets and seeded streams; it releases nothing private.
"""

from __future__ import annotations

from dpggm.audit.core import (
    AuditResult,
    MechanismRefused,
    Release,
    Target,
    audit_target,
    most_separated_pair,
)
from dpggm.audit.floats import gaussian_reachable, laplace_reachable, numpy_laplace_value
from dpggm.audit.stats import clopper_pearson, epsilon_lower_bound
from dpggm.audit.targets import TARGETS, get_target, register_target

__all__ = [
    "TARGETS",
    "AuditResult",
    "MechanismRefused",
    "Release",
    "Target",
    "audit",
    "audit_target",
    "clopper_pearson",
    "epsilon_lower_bound",
    "gaussian_reachable",
    "get_target",
    "laplace_reachable",
    "numpy_laplace_value",
    "register_target",
]


def audit(
    name: str,
    *,
    samples: int | None = None,
    quick: bool = False,
    seed: int = 0,
    confidence: float = 0.95,
    relations: tuple[str, ...] | None = None,
    float_support: bool = True,
) -> list[AuditResult]:
    """Audit mechanism ``name`` under each relation it claims.

    Parameters
    ----------
    name : str
        A key of :data:`TARGETS`.
    samples : int, optional
        Runs per data set; default: the target's quick or full number.
    quick : bool
        Use the target's reduced number of runs (and, for a target with a pilot and several
        pairs, only the pair a pilot of ``quick_pilot`` runs chose).
    seed : int
    confidence : float
    relations : tuple of str, optional
        A subset of the target's relations.
    float_support : bool
        Include Mironov's float-support event (see :mod:`dpggm.audit.floats`).

    Returns
    -------
    list of AuditResult
        One per relation; a relation the mechanism refuses gets verdict ``"refused"``.
    """
    target = get_target(name)
    pilot = target.quick_pilot if quick and samples is None else 0
    if samples is None:
        samples = target.quick_samples if quick else target.full_samples
    results = []
    for relation in relations or target.relations:
        try:
            pairs = None
            if pilot and len(target.pairs(relation)) > 1:
                # Two stages: a pilot of every pair (runs of its own) chooses the pair whose
                # releases are furthest apart; the quick runs all go to that pair. The
                # choice sees none of the runs the bound is computed from, so the bound
                # stays valid; only the two data sets of one pair are run many times.
                pairs = [most_separated_pair(target, relation, samples=pilot, seed=seed)]
            result = audit_target(target, relation, samples=samples, seed=seed,
                                  confidence=confidence, float_support=float_support,
                                  pairs=pairs)
            if pairs is not None:
                result.note = (f"pair {' vs '.join(pairs[0])} chosen by a pilot of {pilot} "
                               "runs per data set")
            results.append(result)
        except MechanismRefused as exc:
            results.append(AuditResult(
                mechanism=name, relation=relation, claimed={}, epsilon_lower_bound=0.0,
                samples=samples, verdict="refused", event="", pair="", confidence=confidence,
                expected=target.expected, double=target.double,
                note=str(exc),
            ))
    return results
