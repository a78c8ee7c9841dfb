"""The audit engine: runs, a family of events, and a held-out Clopper–Pearson bound.

For one mechanism and one neighbouring relation, every data set of the target's worst-case
pairs is run ``samples`` times with a seeded stream. Each run's output is turned into a few
scalar statistics; an *event* is a threshold on one of them (``T > t`` or ``T <= t``) for one
pair and one order of the pair. As in DP-Sniper (Bichsel et al. 2021) and Google's DP
stochastic tester, the event is *chosen* on the first half of the runs and its
probabilities are *estimated* on the second half, which the choice never saw, so the
Clopper–Pearson bound on the second half is a valid lower bound on epsilon. The
``n_candidates`` best events of the first half are all tested on the second half, each at
``alpha / n_candidates`` (Bonferroni), so the largest of their bounds holds with
confidence ``1 - alpha``.

Statistics (all fixed from the first half only):

* each released coordinate;
* the projection on the difference of the two data sets' median outputs, and the
  Laplace and Gaussian log-likelihood ratios ``|y - m0|_1 - |y - m1|_1`` and
  ``|y - m0|^2 - |y - m1|^2`` around those medians;
* the distances ``|y - m|_2`` and ``|y - m|_inf`` from each median (a change of noise
  scale);
* ``lambda_min(Y - S)`` for a matrix output ``Y`` and the exact statistic ``S`` of either
  data set (a support event for PSD noise);
* indicators ``y_j == v`` for coordinates with few values (a selected candidate);
* whether the run raised an error;
* for releases with NumPy float noise (Laplace or Gaussian), whether every noisy entry
  is reachable from the first data set's exact statistic by that float sampler
  (:mod:`dpggm.audit.floats`): Mironov's floating-point attack.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from dpggm.audit.floats import gaussian_reachable, laplace_reachable
from dpggm.audit.stats import epsilon_lower_bound

__all__ = ["AuditResult", "MechanismRefused", "Release", "Target", "audit_target",
           "most_separated_pair"]


class MechanismRefused(Exception):
    """The mechanism refuses the data sets of a relation (every first run raised): the
    relation is reported as refused, not audited."""

_QUANTILES = (
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5,
    0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999,
)
_MAX_DISCRETE = 40


@dataclass
class Release:
    """The outputs of ``runs`` runs of a mechanism on one data set.

    Attributes
    ----------
    values : ndarray of shape (runs, d)
        The released numbers of each run (NaN where a run raised).
    claim : tuple of (epsilon, delta)
        What the mechanism claims for this release, at the report delta.
    matrices : ndarray of shape (runs, p, p) or None
        A released matrix, for the ``lambda_min`` events.
    raised : ndarray of bool, shape (runs,)
    float_noise : tuple (kind, scale, columns) or None
        Set when ``values[:, columns]`` are ``exact + z`` with ``z`` from NumPy's float
        sampler ``kind`` (``"laplace"`` or ``"gaussian"``) at ``scale``, one draw per entry:
        enables the float-support event (with the target's ``exact_values``).
    """

    values: np.ndarray
    claim: tuple[float, float]
    matrices: np.ndarray | None = None
    raised: np.ndarray | None = None
    float_noise: tuple[str, float, tuple[int, ...]] | None = None


@dataclass(frozen=True)
class Target:
    """A mechanism to audit.

    Attributes
    ----------
    name : str
    summary : str
    relations : tuple of str
        The neighbouring relations the mechanism claims.
    datasets : callable
        ``relation -> {name: data set}``.
    pairs : callable
        ``relation -> [(first name, second name), ...]``: neighbouring pairs under
        ``relation``, from the sensitivity analysis.
    release : callable
        ``(data set, relation, rng, runs) -> Release``.
    statistic : callable or None
        ``(data set, relation) -> ndarray (p, p)``: the exact statistic, for support events.
    exact_values : callable or None
        ``(data set, relation) -> ndarray (d,)``: the exact values in the coordinates of
        ``Release.values``, as the mechanism computes them (for the float-support event).
    expected : {"pass", "fail"}
        What a correct audit must say (``"fail"`` for mechanisms known to be broken).
    double : bool
        A deliberately broken test double, not a library mechanism.
    quick_samples, full_samples : int
        Runs per data set for ``--quick`` and for a full audit.
    quick_pilot : int
        With ``--quick`` and several pairs: runs per data set of a pilot audit that
        chooses the one pair the quick runs go to (0: every pair gets the quick runs).
    stream_label : str or None
        The label the target's random streams are drawn under; ``None`` for its name. A
        renamed target keeps its earlier label, so that its recorded audits repeat.
    """

    name: str
    summary: str
    relations: tuple[str, ...]
    datasets: Callable[[str], dict[str, Any]]
    pairs: Callable[[str], list[tuple[str, str]]]
    release: Callable[[Any, str, np.random.Generator, int], Release]
    statistic: Callable[[Any, str], np.ndarray | None] | None = None
    exact_values: Callable[[Any, str], np.ndarray | None] | None = None
    expected: str = "pass"
    double: bool = False
    quick_samples: int = 1000
    full_samples: int = 5000
    quick_pilot: int = 0
    stream_label: str | None = None

    @property
    def streams(self) -> str:
        """The label of the target's random streams."""
        return self.name if self.stream_label is None else self.stream_label


@dataclass
class AuditResult:
    """The audit of one mechanism under one neighbouring relation."""

    mechanism: str
    relation: str
    claimed: dict[str, float]
    epsilon_lower_bound: float
    samples: int
    verdict: str
    event: str
    pair: str
    confidence: float
    expected: str
    double: bool = False
    note: str = ""
    candidates: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable record."""
        return {
            "mechanism": self.mechanism,
            "relation": self.relation,
            "claimed": self.claimed,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "samples": self.samples,
            "verdict": self.verdict,
            "event": self.event,
            "pair": self.pair,
            "confidence": self.confidence,
            "expected": self.expected,
            "test_double": self.double,
            "note": self.note,
        }


def _generator(seed: int, *names: str) -> np.random.Generator:
    # A stream per (target, relation, data set), stable across runs and Python sessions.
    key = tuple(zlib.crc32(name.encode()) for name in names)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _lambda_min(matrices: np.ndarray, statistic: np.ndarray) -> np.ndarray:
    diff = matrices - statistic
    out = np.full(len(matrices), np.nan)
    ok = np.all(np.isfinite(diff), axis=(1, 2))
    if ok.any():
        out[ok] = np.linalg.eigvalsh((diff[ok] + np.swapaxes(diff[ok], 1, 2)) / 2)[:, 0]
    return out


def _upper(matrices: np.ndarray) -> np.ndarray:
    iu = np.triu_indices(matrices.shape[1])
    return matrices[:, iu[0], iu[1]]


class _Statistics:
    """Statistics of a pair, fixed from the selection halves of its two releases."""

    def __init__(self, first: Release, second: Release, refs: tuple[Any, Any],
                 names: tuple[str, str], exact_first: np.ndarray | None = None) -> None:
        self.names = names
        self.exact_first = exact_first
        self.m0 = np.nanmedian(first.values, axis=0)
        self.m1 = np.nanmedian(second.values, axis=0)
        self.refs = refs
        self.float_noise = first.float_noise
        pooled = np.vstack([first.values, second.values])
        self.discrete = []
        for j in range(pooled.shape[1]):
            column = pooled[:, j][np.isfinite(pooled[:, j])]
            levels = np.unique(column)
            if 1 < len(levels) <= _MAX_DISCRETE:
                self.discrete.extend((j, float(v)) for v in levels)

    def compute(self, release: Release) -> dict[str, np.ndarray]:
        y = release.values
        out: dict[str, np.ndarray] = {}
        with np.errstate(invalid="ignore"):
            for j in range(y.shape[1]):
                out[f"output[{j}]"] = y[:, j]
            direction = self.m1 - self.m0
            if np.any(direction != 0):
                out["projection on the median difference"] = (y - (self.m0 + self.m1) / 2) @ direction
                out["Laplace log-likelihood ratio"] = (
                    np.abs(y - self.m0).sum(axis=1) - np.abs(y - self.m1).sum(axis=1)
                )
                out["Gaussian log-likelihood ratio"] = (
                    ((y - self.m0) ** 2).sum(axis=1) - ((y - self.m1) ** 2).sum(axis=1)
                )
            for label, m in zip(self.names, (self.m0, self.m1)):
                out[f"l2 distance from the median on {label}"] = np.sqrt(((y - m) ** 2).sum(axis=1))
                out[f"max distance from the median on {label}"] = np.abs(y - m).max(axis=1)
            for j, v in self.discrete:
                out[f"output[{j}] == {v:g}"] = (y[:, j] == v).astype(float)
        if release.raised is not None:
            out["run raised an error"] = release.raised.astype(float)
        if release.matrices is not None:
            for label, ref in zip(self.names, self.refs):
                if ref is not None:
                    out[f"lambda_min(output - statistic of {label})"] = _lambda_min(
                        release.matrices, ref
                    )
        if self.float_noise is not None and self.exact_first is not None:
            kind, scale, columns = self.float_noise
            cols = list(columns)
            ok = np.all(np.isfinite(y[:, cols]), axis=1)
            reach = np.zeros(len(y))
            if ok.any():
                check = laplace_reachable if kind == "laplace" else gaussian_reachable
                reach[ok] = check(y[ok][:, cols], self.exact_first[cols], scale).all(axis=1)
            out[f"reachable from {self.names[0]} by NumPy's {kind} sampler"] = reach
        return out


def _thresholds(name: str, pooled: np.ndarray) -> np.ndarray:
    finite = pooled[np.isfinite(pooled)]
    if finite.size == 0:
        return np.array([])
    levels = np.unique(finite)
    if len(levels) <= _MAX_DISCRETE:
        cuts = levels
    else:
        cuts = np.unique(np.quantile(finite, _QUANTILES))
    if name.startswith("lambda_min"):
        # A PSD support boundary: rounding can put exact zeros a few ulps below 0.
        cuts = np.unique(np.concatenate([cuts, [0.0, -1e-9 * (1.0 + np.abs(finite).max())]]))
    return cuts


def _counts(values: np.ndarray, cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Numbers of runs with ``value > t`` and ``value <= t`` for each cut (NaN in neither)."""
    finite = np.sort(values[np.isfinite(values)])
    above = finite.size - np.searchsorted(finite, cuts, side="right")
    below = np.searchsorted(finite, cuts, side="right")
    return above, below


def _split(release: Release, half: slice) -> Release:
    return Release(
        values=release.values[half],
        claim=release.claim,
        matrices=None if release.matrices is None else release.matrices[half],
        raised=None if release.raised is None else release.raised[half],
        float_noise=release.float_noise,
    )


def _selection_scores(ka: np.ndarray, kb: np.ndarray, n: int, delta: float,
                      alpha: float) -> np.ndarray:
    """The bound each event would give if the held-out half looked like the selection
    half (the Clopper–Pearson bound at the held-out level), plus a small tie-breaker by the
    point estimate: ranks events by their likely held-out bound, not by lucky rare counts."""
    ka, kb = np.asarray(ka, dtype=float), np.asarray(kb, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = np.where(ka > 0, stats.beta.ppf(alpha / 2, ka, n - ka + 1), 0.0)
        upper = np.where(kb < n, stats.beta.ppf(1 - alpha / 2, kb + 1, n - kb), 1.0)
        bound = np.where(lower - delta > upper, np.log((lower - delta) / upper), 0.0)
        point = np.log(np.maximum(ka - delta * n, 1e-300) / (kb + 1.0))
    return bound + 1e-6 * np.tanh(point)


def most_separated_pair(target: Target, relation: str, *, samples: int,
                        seed: int = 0) -> tuple[str, str]:
    """The pair whose two releases are furthest apart, from ``samples`` runs per data set
    on streams of their own (a pilot: the audit that follows never sees these runs).

    The separation of a pair is the difference of the means of the projection of its
    outputs on the difference of their medians, in pooled standard deviations (a
    Gaussian mechanism's is its ``Delta / sigma`` along the worst direction); a pair whose
    outputs differ in whether a run raised counts as fully separated.
    """
    datasets = target.datasets(relation)
    pairs = target.pairs(relation)
    used = sorted({name for pair in pairs for name in pair}, key=list(datasets).index)
    releases = {
        name: target.release(datasets[name], relation,
                             _generator(seed, target.streams, relation, "pilot", name), samples)
        for name in used
    }
    best, chosen = -1.0, pairs[0]
    for pair in pairs:
        first, second = releases[pair[0]], releases[pair[1]]
        separation = _separation(first, second)
        if separation > best:
            best, chosen = separation, pair
    return chosen


def _separation(first: Release, second: Release) -> float:
    if first.raised is not None and second.raised is not None and (
            first.raised.mean() != second.raised.mean()):
        return math.inf
    a, b = first.values, second.values
    direction = np.nanmedian(b, axis=0) - np.nanmedian(a, axis=0)
    with np.errstate(invalid="ignore"):
        ta, tb = a @ np.nan_to_num(direction), b @ np.nan_to_num(direction)
    ta, tb = ta[np.isfinite(ta)], tb[np.isfinite(tb)]
    if ta.size < 2 or tb.size < 2:
        return 0.0
    spread = math.sqrt((ta.var() + tb.var()) / 2)
    gap = abs(tb.mean() - ta.mean())
    if spread == 0:
        return math.inf if gap > 0 else 0.0
    return gap / spread


# One piece (over 120 lines): selection half, held-out half and the Bonferroni bound are
# one statistical procedure; the halves must not be computed apart.
def audit_target(
    target: Target,
    relation: str,
    *,
    samples: int,
    seed: int = 0,
    confidence: float = 0.95,
    n_candidates: int = 5,
    float_support: bool = True,
    pairs: list[tuple[str, str]] | None = None,
    stream: str = "",
) -> AuditResult:
    """Audit ``target`` under ``relation``; see the module documentation.

    Parameters
    ----------
    target : Target
    relation : {"replace", "add-remove"}
    samples : int
        Runs per data set (split in two halves).
    seed : int
        Seed of the sample streams (an audit is an experiment: it is seeded).
    confidence : float in (0, 1)
    n_candidates : int
        Events carried from the selection half to the held-out half.
    float_support : bool
        Include the float-support event; without it the audit looks only for violations
        that exact (grid) noise would not remove.
    pairs : list of (str, str), optional
        Audit only these of the target's pairs (chosen by a pilot, say).
    stream : str
        Tag of the sample streams (a pilot's runs are independent of the audit's).
    """
    if int(samples) != samples or samples < 20:
        raise ValueError(f"samples must be an integer >= 20; got {samples!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}")
    samples = int(samples)
    alpha = 1.0 - confidence
    datasets = target.datasets(relation)
    pairs = target.pairs(relation) if pairs is None else list(pairs)
    used = sorted({name for pair in pairs for name in pair}, key=list(datasets).index)
    names = (target.streams, relation) if not stream else (target.streams, relation, stream)
    releases = {
        name: target.release(datasets[name], relation, _generator(seed, *names, name), samples)
        for name in used
    }
    claims = {release.claim for release in releases.values()}
    epsilon, delta = max(claims)
    claimed = {"epsilon": float(epsilon), "delta": float(delta)}
    refs = {
        name: (None if target.statistic is None else target.statistic(datasets[name], relation))
        for name in used
    }
    exact = {
        name: (None if target.exact_values is None
               else target.exact_values(datasets[name], relation))
        for name in used
    }
    half = samples // 2
    selection, holdout = slice(0, half), slice(half, 2 * half)

    candidates = []
    for pair in pairs:
        first, second = (_split(releases[name], selection) for name in pair)
        statistics = _Statistics(first, second, (refs[pair[0]], refs[pair[1]]), pair,
                                 exact[pair[0]] if float_support else None)
        s0, s1 = statistics.compute(first), statistics.compute(second)
        for name in [key for key in s0 if key in s1]:
            cuts = _thresholds(name, np.concatenate([s0[name], s1[name]]))
            if cuts.size == 0:
                continue
            above0, below0 = _counts(s0[name], cuts)
            above1, below1 = _counts(s1[name], cuts)
            for side, k0s, k1s in ((">", above0, above1), ("<=", below0, below1)):
                for order, kas, kbs in ((0, k0s, k1s), (1, k1s, k0s)):
                    scores = _selection_scores(kas, kbs, half, delta, alpha / n_candidates)
                    for cut, score in zip(cuts, scores):
                        candidates.append(
                            (float(score), pair, statistics, name, side, float(cut), order)
                        )
    candidates.sort(key=lambda c: -c[0])
    chosen, seen = [], set()
    for cand in candidates:
        key = (cand[1], cand[3], cand[4], cand[5], cand[6])
        if key not in seen:
            seen.add(key)
            chosen.append(cand)
        if len(chosen) == n_candidates:
            break

    cache: dict[tuple[int, str], dict[str, np.ndarray]] = {}

    def held_out(statistics: _Statistics, which: str) -> dict[str, np.ndarray]:
        key = (id(statistics), which)
        if key not in cache:
            cache[key] = statistics.compute(_split(releases[which], holdout))
        return cache[key]

    best, best_event, best_pair, tested = 0.0, "none separates", "", []
    per_test_alpha = alpha / max(len(chosen), 1)
    for score, pair, statistics, name, side, cut, order in chosen:
        a, b = (pair if order == 0 else pair[::-1])
        ta, tb = (held_out(statistics, which)[name] for which in (a, b))
        if side == ">":
            ka, kb = int(np.sum(ta > cut)), int(np.sum(tb > cut))
        else:
            ka, kb = int(np.sum(ta <= cut)), int(np.sum(tb <= cut))
        n = len(ta)
        bound = epsilon_lower_bound(ka, n, kb, n, delta=delta, alpha=per_test_alpha)
        description = f"{name} {side} {cut:.6g}: {ka}/{n} on {a} vs {kb}/{n} on {b}"
        tested.append({"event": description, "selection_score": score, "bound": bound})
        if not best_pair or bound > best:
            best, best_event, best_pair = bound, description, f"{a} vs {b}"
    verdict = "pass" if best <= epsilon else "fail"
    return AuditResult(
        mechanism=target.name,
        relation=relation,
        claimed=claimed,
        epsilon_lower_bound=best,
        samples=samples,
        verdict=verdict,
        event=best_event,
        pair=best_pair,
        confidence=confidence,
        expected=target.expected,
        double=target.double,
        candidates=tested,
    )
