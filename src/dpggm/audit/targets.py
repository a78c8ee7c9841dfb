"""The mechanisms the audit knows, with their worst-case neighbouring pairs.

Every target runs the library's public code path (the estimator's ``fit`` or the
mechanism function) and audits the statistic it releases before post-processing where
that is exposed (``noisy_covariance_``, PACE's measurements), which gives the sharpest
events. Budgets are chosen so that the claimed epsilon at the report delta is about 1:
small enough for a violation to show in a few thousand runs.

Worst-case pairs (from the sensitivity analyses of :mod:`dpggm.mechanisms.sensitivity`):

* row-norm bound ``B = 1``, ``p = 2``, replace-one on ``n = 10`` rows: the zero data set
  against one row ``e1`` (the largest diagonal change; the pair of Jiang et al.'s
  counterexample), ``e1`` against ``e2`` (the l2-worst change ``diag(1, -1)`` of
  ``x x^T``), ``e1`` against ``-e1`` (the mean's worst change), and zero against
  ``(1, 1)/sqrt(2)`` (the l1-worst row);
* box bound ``|x_j| <= 1``: zero against ``(1, 1)``, ``(1, 1)`` against ``(1, -1)`` and
  ``-(1, 1)``;
* add/remove on ``n = 2`` rows: adding ``e1`` (or ``(1, 1)``), the l1-worst row, or a zero
  row -- the last changes only ``n``, which a mechanism must not reveal.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from dpggm.audit.core import MechanismRefused, Release, Target
from dpggm.estimators.covariance import PrivateCovariance
from dpggm.estimators.registry import make_estimator
from dpggm.estimators.regression import AdaSSP
from dpggm.mechanisms.bounds import Box, RowNorm
from dpggm.mechanisms.discrete_gaussian import sample_discrete_gaussian
from dpggm.mechanisms.noise import exponential_mechanism
from dpggm.mechanisms.publish import publish
from dpggm.privacy.budgets import ZCDP, ApproxDP, NonPrivate, PureDP
from dpggm.privacy.calibration import gaussian_sigma

__all__ = ["TARGETS", "get_target", "register_target"]

TARGETS: dict[str, Target] = {}

#: Runs that raise this many times in a row before any success: the relation is refused.
_REFUSAL_RUNS = 5


def register_target(target: Target) -> Target:
    """Add ``target`` to the audit (by name)."""
    TARGETS[target.name] = target
    return target


#: Targets' earlier names, still accepted.
RENAMED_TARGETS = {"private-centre-cell": "private-center-cell"}


def get_target(name: str) -> Target:
    """The target called ``name`` (or by its earlier name, :data:`RENAMED_TARGETS`)."""
    name = RENAMED_TARGETS.get(name, name)
    if name not in TARGETS:
        raise ValueError(f"mechanism must be one of {sorted(TARGETS)}; got {name!r}")
    return TARGETS[name]


# ------------------------------------------------------------------------- data sets

_ROW_NORM_ROWS = {
    "e1": (1.0, 0.0),
    "e2": (0.0, 1.0),
    "-e1": (-1.0, 0.0),
    "(1,1)/sqrt2": (math.sqrt(0.5), math.sqrt(0.5)),
    "0": (0.0, 0.0),
}
_BOX_ROWS = {"(1,1)": (1.0, 1.0), "(1,-1)": (1.0, -1.0), "-(1,1)": (-1.0, -1.0), "0": (0.0, 0.0)}


class RowPairs:
    """Data sets made of a base and one changed (replace) or added (add/remove) row.

    Parameters
    ----------
    rows : dict
        Named extreme rows.
    replace : list of (str, str)
        Pairs of row names: the base with row 0 set to each (``"base"`` for the base).
    add : list of str
        Rows appended to the small base under add/remove.
    base, small_base : ndarray
        The base data sets for replace-one and add/remove.
    """

    def __init__(self, rows: dict[str, tuple[float, ...]], replace: list[tuple[str, str]],
                 add: list[str], base: np.ndarray, small_base: np.ndarray) -> None:
        self.rows = {k: np.asarray(v, dtype=float) for k, v in rows.items()}
        self.replace, self.add = replace, add
        self.base, self.small_base = base, small_base

    def _replace_name(self, row: str) -> str:
        return "D" if row == "base" else f"D[0]={row}"

    def datasets(self, relation: str) -> dict[str, np.ndarray]:
        if relation == "add-remove":
            out = {"D": self.small_base}
            for row in self.add:
                out[f"D+{row}"] = np.vstack([self.small_base, self.rows[row]])
            return out
        out = {"D": self.base}
        for pair in self.replace:
            for row in pair:
                if row != "base":
                    data = self.base.copy()
                    data[0] = self.rows[row]
                    out[self._replace_name(row)] = data
        return out

    def pairs(self, relation: str) -> list[tuple[str, str]]:
        if relation == "add-remove":
            return [("D", f"D+{row}") for row in self.add]
        return [(self._replace_name(a), self._replace_name(b)) for a, b in self.replace]


_ROW_NORM = RowPairs(
    _ROW_NORM_ROWS,
    replace=[("base", "e1"), ("e1", "e2"), ("e1", "-e1"), ("base", "(1,1)/sqrt2")],
    add=["e1", "(1,1)/sqrt2", "0"],
    base=np.zeros((10, 2)),
    small_base=np.zeros((2, 2)),
)
_BOX = RowPairs(
    _BOX_ROWS,
    replace=[("base", "(1,1)"), ("(1,1)", "(1,-1)"), ("(1,1)", "-(1,1)")],
    add=["(1,1)", "(1,-1)", "0"],
    base=np.zeros((10, 2)),
    small_base=np.zeros((2, 2)),
)


# ------------------------------------------------------------------------- helpers

def _claim(guarantee: Any) -> tuple[float, float]:
    """``(epsilon, delta)`` claimed at the report delta (a pure-DP claim has delta 0)."""
    budget = guarantee.budget
    if isinstance(budget, PureDP):
        return float(budget.epsilon), 0.0
    approx = guarantee.approx_dp
    return float(approx.epsilon), float(approx.delta)


def _upper(matrix: np.ndarray) -> np.ndarray:
    return matrix[np.triu_indices(matrix.shape[0])]


def _run_estimator(
    build: Callable[..., Any],
    outputs: Callable[[Any], tuple[np.ndarray, np.ndarray | None]],
    *,
    fit_args: Callable[[np.ndarray], tuple] = lambda data: (data,),
    float_noise: tuple[str, str] | None = None,
) -> Callable[[Any, str, np.random.Generator, int], Release]:
    """A release function fitting ``build(relation, rng)`` ``runs`` times.

    ``float_noise = (kind, key)``: every released value is the exact statistic plus one
    draw of NumPy's ``kind`` sampler at the scale ``privacy_.noise[key]`` (when the release
    records that key, i.e. when it used float noise).
    """

    def release(data: Any, relation: str, rng: np.random.Generator, runs: int) -> Release:
        values: list[np.ndarray | None] = []
        matrices: list[np.ndarray | None] = []
        raised = np.zeros(runs, dtype=bool)
        claim, noise, first_error = None, None, None
        with warnings.catch_warnings():
            # Convergence warnings of post-processing are irrelevant to the audit.
            warnings.simplefilter("ignore")
            for i in range(runs):
                try:
                    est = build(relation, rng).fit(*fit_args(data))
                except Exception as exc:  # an error is an output of the mechanism too
                    if claim is None and i + 1 >= _REFUSAL_RUNS:
                        error = first_error or exc
                        raise MechanismRefused(f"{type(error).__name__}: {error}") from error
                    first_error = first_error or exc
                    raised[i] = True
                    values.append(None)
                    matrices.append(None)
                    continue
                if claim is None:
                    claim = _claim(est.privacy_)
                    if float_noise is not None:
                        scale = est.privacy_.noise.get(float_noise[1])
                        noise = None if scale is None else (float_noise[0], float(scale))
                vector, matrix = outputs(est)
                values.append(np.asarray(vector, dtype=float))
                matrices.append(matrix)
        width = next(len(v) for v in values if v is not None)
        value_array = np.full((runs, width), np.nan)
        shape = next((m.shape for m in matrices if m is not None), None)
        matrix_array = None if shape is None else np.full((runs, *shape), np.nan)
        for i, (v, m) in enumerate(zip(values, matrices)):
            if v is not None:
                value_array[i, : len(v)] = v[:width]
            if m is not None and matrix_array is not None:
                matrix_array[i] = m
        if noise is not None:
            noise = (*noise, tuple(range(width)))
        return Release(value_array, claim, matrix_array, raised, noise)

    return release


def _statistic_by_non_private(build_np: Callable[[str], Any], matrix: Callable[[Any], np.ndarray]):
    """The exact statistic: the same code path with ``NonPrivate()``."""

    def statistic(data: Any, relation: str) -> np.ndarray | None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return np.asarray(matrix(build_np(relation).fit(data)), dtype=float)
            except Exception:  # a target without a non-private path has no support events
                return None

    return statistic


def _noisy_covariance(est: Any) -> tuple[np.ndarray, np.ndarray]:
    return _upper(est.noisy_covariance_), est.noisy_covariance_


def _method_target(name: str, budget: Any, *, pairs: RowPairs = _ROW_NORM,
                   relations=("replace", "add-remove"), expected: str = "pass",
                   float_noise: tuple[str, str] | None = None, outputs=_noisy_covariance, quick: int = 1000,
                   full: int = 5000, pilot: int = 200, summary: str = "",
                   factory: Callable[..., Any] | None = None, **options: Any) -> Target:
    """The estimator registered as ``name`` (or built by ``factory``), audited as ``name``."""
    bounds = RowNorm(1.0) if pairs is _ROW_NORM else Box(1.0)
    make = factory or (lambda **params: make_estimator(name, **params))

    def build(relation: str, rng: Any, budget_override: Any = None) -> Any:
        return make(budget=budget_override or budget, bounds=bounds, neighbors=relation,
                    random_state=rng, **options)

    return Target(
        name=name,
        summary=summary or f"`dpggm estimate --method {name}` ({budget})",
        relations=relations,
        datasets=pairs.datasets,
        pairs=pairs.pairs,
        release=_run_estimator(build, outputs, float_noise=float_noise),
        statistic=_statistic_by_non_private(
            lambda relation: build(relation, 0, NonPrivate()), lambda est: outputs(est)[1]
        ),
        exact_values=_statistic_by_non_private(
            lambda relation: build(relation, 0, NonPrivate()), lambda est: outputs(est)[0]
        ),
        expected=expected,
        quick_samples=quick,
        full_samples=full,
        quick_pilot=pilot,
    )


# Runs of --quick (the CI step). A fit costs 1-5 ms (18 ms for threshold, whose fit also
# computes the edge inference); the two-stage quick audit (a pilot of `pilot` runs per data
# set chooses one pair per relation) puts the runs where they separate most. Measured
# lower bounds at these numbers (seed 0; the claims are about 1):
# * informative: ssp 0.22 / 0.23 (4000), laplace 0.25 / 0.27, publish 0.16,
#   publish-discrete 0.17 (8000), and the primitives below (0.24-0.76);
# * not cheaply informative, left at 1000 runs: sulq, private-mean and adassp split the
#   budget over several outputs (each separates by a fraction of the claim); wishart's
#   claim (Sheffet's analysis) is loose; the zCDP targets at rho = 0.02 (sigma = 5
#   Delta) need about 50 000 runs per data set for a bound of 0.25 (about 15 CPU-minutes
#   each); threshold and pace cost 18 and 45 ms a fit. Their full audits use more runs.
_APPROX = ApproxDP(1.0, 1e-3)
_RHO = ZCDP(0.02)  # about (1, 1e-6)

register_target(_method_target("ssp", _APPROX, float_noise=("gaussian", "sigma"), quick=4000))
register_target(_method_target("laplace", PureDP(1.0), float_noise=("laplace", "laplace_scale"),
                               quick=2000))
register_target(_method_target("sulq", _APPROX))
register_target(_method_target("wishart", ApproxDP(0.9, 1e-3)))
register_target(_method_target(
    "wishart-pure", PureDP(1.0), allow_invalid=True, expected="fail",
    summary="Jiang et al. pure-DP Wishart (known invalid; allow_invalid=True)",
))
register_target(_method_target("ssp-zcdp", _RHO, pairs=_BOX))
register_target(_method_target("diagonal", _RHO, pairs=_BOX))
register_target(_method_target("separate", _RHO))
register_target(_method_target(
    "adaptive", _RHO,
    outputs=lambda est: (np.append(_upper(est.noisy_covariance_), est.noisy_trace_),
                         est.noisy_covariance_),
))
register_target(_method_target("threshold", _APPROX, float_noise=("gaussian", "sigma"),
                               quick=300, pilot=60))

# The float path (noise="float"): NumPy's samplers leak through floating-point gaps
# (Mironov 2012). Such releases are reported "invalid"; the floating-point support event
# must refute their claim here, so a correct audit fails them.
register_target(_method_target(
    "ssp-float", _APPROX, factory=PrivateCovariance, mechanism="gaussian", noise="float",
    relations=("replace",),
    float_noise=("gaussian", "sigma"), expected="fail",
    summary=f"`PrivateCovariance(noise='float')`, Gaussian ({_APPROX}); known invalid",
))
register_target(_method_target(
    "laplace-float", PureDP(1.0), factory=PrivateCovariance, mechanism="laplace", noise="float",
    relations=("replace",),
    float_noise=("laplace", "laplace_scale"), expected="fail",
    summary="`PrivateCovariance(mechanism='laplace', noise='float')` (PureDP(epsilon=1)); "
            "known invalid",
))


def _pace_outputs(est: Any) -> tuple[np.ndarray, np.ndarray]:
    # The released measurements, by entry (NaN where an entry was not measured).
    p = est.n_features_in_
    measured = np.full((p, p), np.nan)
    for (i, j), value in zip(est.measurements_["entries"], est.measurements_["values"]):
        measured[i, j] = measured[j, i] = value
    return _upper(measured), est.covariance_


register_target(_method_target(
    "pace", _RHO, pairs=_BOX, outputs=_pace_outputs, quick=100, full=300, pilot=0,
    summary=f"`dpggm estimate --method pace` ({_RHO}); slow fit: fewer runs",
))

# Output perturbation needs a positive diagonal (the graphical lasso of S is then finite):
# half the rows e1, half e2.
_ALTERNATING = RowPairs(
    _ROW_NORM_ROWS,
    replace=[("base", "e2"), ("base", "(1,1)/sqrt2")],
    add=["e1", "e2"],
    base=np.tile(np.eye(2), (5, 1)),
    small_base=np.tile(np.eye(2), (2, 1)),
)
register_target(_method_target(
    "output-perturbation", PureDP(1.0), pairs=_ALTERNATING, allow_invalid=True, alpha=1.0,
    expected="fail", outputs=lambda est: (_upper(est.precision_), est.precision_),
    summary="graphical lasso + Wishart output perturbation (Wang, Huai & Xu; known invalid)",
))


def _private_mean_outputs(est: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([est.noisy_mean_, _upper(est.noisy_covariance_)]), est.noisy_covariance_


def _private_mean_build(relation: str, rng: Any) -> Any:
    return PrivateCovariance(budget=_APPROX, bounds=RowNorm(1.0), center="private",
                             neighbors=relation, random_state=rng)


register_target(Target(
    name="private-mean",
    summary=f'PrivateCovariance(center="private"): noisy mean and second moment ({_APPROX})',
    relations=("replace", "add-remove"),
    datasets=_ROW_NORM.datasets,
    pairs=_ROW_NORM.pairs,
    release=_run_estimator(_private_mean_build, _private_mean_outputs),
    quick_pilot=200,
))

# AdaSSP: rows (x1, x2, y) with |x| <= 1 and |y| <= 1.
_REGRESSION = RowPairs(
    {"(e1,1)": (1.0, 0.0, 1.0), "(e2,-1)": (0.0, 1.0, -1.0), "(-e1,-1)": (-1.0, 0.0, -1.0),
     "0": (0.0, 0.0, 0.0)},
    replace=[("base", "(e1,1)"), ("(e1,1)", "(e2,-1)"), ("(e1,1)", "(-e1,-1)")],
    add=["(e1,1)", "0"],
    base=np.zeros((10, 3)),
    small_base=np.zeros((2, 3)),
)


def _adassp_build(relation: str, rng: Any) -> Any:
    return AdaSSP(budget=_APPROX, bounds=RowNorm(1.0), y_bound=1.0, neighbors=relation,
                  random_state=rng)


register_target(Target(
    name="adassp",
    summary=f"AdaSSP linear regression: coefficients, ridge and noisy lambda_min ({_APPROX})",
    relations=("replace", "add-remove"),
    datasets=_REGRESSION.datasets,
    pairs=_REGRESSION.pairs,
    release=_run_estimator(
        _adassp_build,
        lambda est: (np.concatenate([est.coef_, [est.ridge_, est.noisy_min_eigenvalue_]]), None),
        fit_args=lambda data: (data[:, :2], data[:, 2]),
    ),
    quick_pilot=200,
))


# ------------------------------------------------------------------------- publish

def _publish_release(discrete: bool):
    def release(data: np.ndarray, relation: str, rng: np.random.Generator, runs: int) -> Release:
        values = np.empty((runs, 1 + 2 * data.shape[1]))
        claim, noise = None, None
        records = data.astype(np.int64) if discrete else data
        for i in range(runs):
            try:
                noisy = publish(records, bounds=RowNorm(1.0), epsilon=1.0, delta=1e-3,
                                discrete=discrete, neighbors=relation, random_state=rng)
            except (ValueError, TypeError) as exc:
                if i == 0:
                    raise MechanismRefused(f"{type(exc).__name__}: {exc}") from exc
                raise
            rows = np.asarray(noisy.data, dtype=float)
            # The number of rows, the changed row (first) and the added row (last).
            values[i] = np.concatenate([[rows.shape[0]], rows[0], rows[-1]])
            if claim is None:
                claim = _claim(noisy.privacy_)
                if not discrete:
                    # Continuous publish adds one numpy normal(0, sigma) draw per entry.
                    noise = ("gaussian", float(noisy.sigma), tuple(range(1, values.shape[1])))
        return Release(values, claim, float_noise=noise)

    return release


_INTEGER_ROWS = RowPairs(
    {k: _ROW_NORM_ROWS[k] for k in ("e1", "e2", "-e1", "0")},
    replace=[("base", "e1"), ("e1", "e2"), ("e1", "-e1")],
    add=["e1", "0"],
    base=np.zeros((10, 2)),
    small_base=np.zeros((2, 2)),
)
register_target(Target(
    name="publish",
    summary="publish(): noisy rows, Gaussian noise, epsilon=1, delta=1e-3",
    relations=("replace", "add-remove"),
    datasets=_ROW_NORM.datasets,
    pairs=_ROW_NORM.pairs,
    release=_publish_release(False),
    exact_values=lambda data, relation: np.concatenate([[len(data)], data[0], data[-1]]),
    quick_samples=8000,
    quick_pilot=200,
))
register_target(Target(
    name="publish-discrete",
    summary="publish(discrete=True): integer rows, discrete Gaussian noise, epsilon=1, delta=1e-3",
    relations=("replace", "add-remove"),
    datasets=_INTEGER_ROWS.datasets,
    pairs=_INTEGER_ROWS.pairs,
    release=_publish_release(True),
    quick_samples=8000,
    quick_pilot=200,
))


# ------------------------------------------------------------------------- primitives

_SCORES = 21


def _exponential_datasets(relation: str) -> dict[str, np.ndarray]:
    # Scores move by at most the sensitivity 1: one candidate up and all others down is
    # the worst case (its probability ratio tends to e^epsilon as it gets rarer).
    up = -np.ones(_SCORES)
    up[0] = 1.0
    return {"u=0": np.zeros(_SCORES), "u=(+1,-1,...)": up, "u=(-1,+1,...)": -up}


def _exponential_release(scores: np.ndarray, relation: str, rng: np.random.Generator,
                         runs: int) -> Release:
    picks = [exponential_mechanism(scores, sensitivity=1.0, epsilon=1.0, rng=rng)
             for _ in range(runs)]
    return Release(np.asarray(picks, dtype=float)[:, None], (1.0, 0.0))


register_target(Target(
    name="exponential",
    summary=f"exponential_mechanism: {_SCORES} candidates, sensitivity 1, epsilon=1",
    relations=("scores +-1",),
    datasets=_exponential_datasets,
    pairs=lambda relation: [("u=0", "u=(+1,-1,...)"), ("u=0", "u=(-1,+1,...)")],
    release=_exponential_release,
    quick_samples=40000,
    full_samples=100000,
))

_DG_SIGMA = 5  # rho = 1 / (2 sigma^2) = 0.02 for a sensitivity-1 count


def _discrete_gaussian_release(count: int, relation: str, rng: np.random.Generator,
                               runs: int) -> Release:
    noise = np.asarray(sample_discrete_gaussian(_DG_SIGMA, size=runs, random_state=rng))
    claim = ZCDP(1.0 / (2 * _DG_SIGMA**2)).to_approx(1e-6)
    return Release((count + noise).astype(float)[:, None], (claim.epsilon, claim.delta))


register_target(Target(
    name="discrete-gaussian",
    summary=f"count + exact discrete Gaussian (sigma={_DG_SIGMA}): rho=0.02-zCDP",
    relations=("count +-1",),
    datasets=lambda relation: {"count=0": 0, "count=1": 1},
    pairs=lambda relation: [("count=0", "count=1")],
    release=_discrete_gaussian_release,
    quick_samples=100000,
    full_samples=100000,
))


# Private bounds: the quantile mechanisms behind ``bounds="auto"``. Eleven values, one of
# which moves from far below every candidate to far above (or is added/removed there):
# every count in the score moves by one, the worst case of the sensitivity analysis.
_QUANTILE_BASE = np.array([0.3, 0.5, 0.7, 1.1, 1.3, 1.7, 2.1, 2.9, 3.7, 5.0])
_QUANTILE_GRID = np.array([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def _quantile_datasets(relation: str) -> dict[str, np.ndarray]:
    if relation == "replace":
        return {"low": np.append(_QUANTILE_BASE, -100.0), "high": np.append(_QUANTILE_BASE, 100.0)}
    return {"base": _QUANTILE_BASE, "low": np.append(_QUANTILE_BASE, -100.0),
            "high": np.append(_QUANTILE_BASE, 100.0)}


def _quantile_pairs(relation: str) -> list[tuple[str, str]]:
    if relation == "replace":
        return [("low", "high")]
    return [("base", "low"), ("base", "high")]


def _median_cell_release(values: np.ndarray, relation: str, rng: np.random.Generator,
                         runs: int) -> Release:
    from dpggm.mechanisms.private_bounds import private_quantile_cell

    ordered = np.sort(values)
    picks = [private_quantile_cell(ordered, 0.5, edges=_QUANTILE_GRID, epsilon=1.0, rng=rng)[0]
             for _ in range(runs)]
    return Release(np.asarray(picks, dtype=float)[:, None], (1.0, 0.0))


register_target(Target(
    name="private-median-cell",
    summary="private_quantile_cell (bounds='auto' medians and MADs): 11 values, 8 cells, "
            "epsilon=1",
    relations=("replace", "add-remove"),
    datasets=_quantile_datasets,
    pairs=_quantile_pairs,
    release=_median_cell_release,
    quick_samples=20000,
    full_samples=100000,
))


_NORM_CAP = 8.0


def _norm_datasets(relation: str) -> dict[str, np.ndarray]:
    # Row norms: 0 lies below every candidate of the grid (which ends at cap / 256) and the
    # cap itself is never below one, so the changed row moves every count by one.
    rows = {"low": np.append(_QUANTILE_BASE, 0.0), "high": np.append(_QUANTILE_BASE, _NORM_CAP)}
    if relation != "replace":
        rows["base"] = _QUANTILE_BASE
    return rows


def _norm_bound_release(norms: np.ndarray, relation: str, rng: np.random.Generator,
                        runs: int) -> Release:
    from dpggm.mechanisms.private_bounds import private_norm_bound

    rows = norms[:, None]
    picks = [private_norm_bound(rows, cap=_NORM_CAP, budget=ZCDP(1 / 8), quantile=0.5,
                                rng=rng).bound for _ in range(runs)]
    return Release(np.asarray(picks, dtype=float)[:, None], (1.0, 0.0))


register_target(Target(
    name="private-norm-bound",
    summary="private_norm_bound (bounds='auto' row-norm quantile): rho=1/8, epsilon=1",
    relations=("replace", "add-remove"),
    datasets=_norm_datasets,
    pairs=_quantile_pairs,
    release=_norm_bound_release,
    quick_samples=20000,
    full_samples=100000,
))


# The center's stages of bounds='auto' (median cell, refinement) score a cell by its rank
# distance plus its count (weight 1): sensitivity 2. Five of ten values sit at 0, three at
# 2 and two at 3; the changed record moves from below every cell into the cell [3, 4)
# above the median (or is added there): that cell's rank distance and its count both move
# by one, the worst case of the two terms together, while the cells around the median,
# which carry most of the probability, move the other way. (Found by a search over small
# data sets: the largest exact loss on an event of probability >= 0.1, 0.59 at the stated
# sensitivity, and 1.27 if it were stated as 1.)
_CENTER_BASE = np.array([0.0] * 5 + [2.0] * 3 + [3.0] * 2)
_CENTER_GRID = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0])


def _center_datasets(relation: str) -> dict[str, np.ndarray]:
    rows = {"below": np.append(_CENTER_BASE, -100.0), "inside": np.append(_CENTER_BASE, 3.0)}
    if relation != "replace":
        rows["base"] = _CENTER_BASE
    return rows


def _center_pairs(relation: str) -> list[tuple[str, str]]:
    if relation == "replace":
        return [("below", "inside")]
    return [("base", "below"), ("base", "inside")]


def center_cell_release(values: np.ndarray, relation: str, rng: np.random.Generator,
                        runs: int, *, sensitivity: float | None = None) -> Release:
    """The median stage of ``bounds="auto"`` on ``values`` (``sensitivity`` overrides the
    stated one, for the test that an understated sensitivity is caught)."""
    from dpggm.mechanisms.private_bounds import (
        STAGE_COUNT_WEIGHTS,
        cell_scores,
        score_sensitivity,
        target_rank,
    )

    weight = STAGE_COUNT_WEIGHTS["median"]
    below = np.searchsorted(np.sort(values), _CENTER_GRID, side="left")
    scores = cell_scores(below, target_rank(values.size, 0.5), weight)
    stated = score_sensitivity(weight) if sensitivity is None else sensitivity
    picks = [exponential_mechanism(scores, sensitivity=stated, epsilon=1.0, rng=rng)
             for _ in range(runs)]
    return Release(np.asarray(picks, dtype=float)[:, None], (1.0, 0.0))


register_target(Target(
    name="private-center-cell",
    summary="the median and refinement stages of bounds='auto': rank distance plus count "
            "(sensitivity 2), 11 values, 6 cells, epsilon=1",
    relations=("replace", "add-remove"),
    datasets=_center_datasets,
    pairs=_center_pairs,
    release=center_cell_release,
    quick_samples=4000,
    full_samples=100000,
    # Its earlier name: the runs recorded in docs/audit.md drew from streams with it.
    stream_label="private-centre-cell",
))


# The spread stage targets the rank ties + round((m - ties) / 2) of the deviations (the
# median of the untied ones). Six of twelve values are tied with the center; the changed
# record moves from a tie (deviation 0) to the middle of the grid (2.5), or is added or
# removed as either: the number of ties, hence the target, moves by one while only the
# counts below 2.5 follow it.
_SPREAD_BASE = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.3, 0.5, 0.7, 1.1, 1.3, 1.7])
_SPREAD_GRID = np.array([0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
_SPREAD_TIE = 0.1


def _spread_datasets(relation: str) -> dict[str, np.ndarray]:
    rows = {"tied": np.append(_SPREAD_BASE, 0.0), "far": np.append(_SPREAD_BASE, 2.5)}
    if relation != "replace":
        rows["base"] = _SPREAD_BASE
    return rows


def _spread_pairs(relation: str) -> list[tuple[str, str]]:
    if relation == "replace":
        return [("tied", "far")]
    return [("base", "tied"), ("base", "far")]


def _spread_cell_release(deviations: np.ndarray, relation: str, rng: np.random.Generator,
                         runs: int) -> Release:
    from dpggm.mechanisms.private_bounds import choose_cell, spread_target

    ordered = np.sort(deviations)
    tied = np.searchsorted(ordered, _SPREAD_TIE, side="right")
    below = np.searchsorted(ordered, _SPREAD_GRID, side="left")
    target = int(spread_target(np.array([ordered.size]), np.array([tied]))[0])
    picks = [choose_cell(below, target, epsilon=1.0, rng=rng) for _ in range(runs)]
    return Release(np.asarray(picks, dtype=float)[:, None], (1.0, 0.0))


register_target(Target(
    name="private-spread-cell",
    summary="the spread stage of bounds='auto': the cell of the median of the untied "
            "deviations, 13 values (6 or 7 tied), 7 cells, epsilon=1",
    relations=("replace", "add-remove"),
    datasets=_spread_datasets,
    pairs=_spread_pairs,
    release=_spread_cell_release,
    quick_samples=20000,
    full_samples=100000,
))


# The missing-value path: a quantile counts only the values present, and its target rank
# is set from their number. The changed record moves between missing and far above every
# cell (or is added or removed as either): the counts and the target move together.


def _missing_datasets(relation: str) -> dict[str, np.ndarray]:
    rows = {"missing": np.append(_QUANTILE_BASE, np.nan),
            "far": np.append(_QUANTILE_BASE, 100.0)}
    if relation != "replace":
        rows["base"] = _QUANTILE_BASE
    return rows


def _missing_pairs(relation: str) -> list[tuple[str, str]]:
    if relation == "replace":
        return [("missing", "far")]
    return [("base", "missing"), ("base", "far")]


def _median_cell_missing_release(values: np.ndarray, relation: str, rng: np.random.Generator,
                                 runs: int) -> Release:
    from dpggm.mechanisms.private_bounds import choose_cell, target_rank

    present = np.sort(values[~np.isnan(values)])
    below = np.searchsorted(present, _QUANTILE_GRID, side="left")
    target = target_rank(present.size, 0.5)
    picks = [choose_cell(below, target, epsilon=1.0, rng=rng) for _ in range(runs)]
    return Release(np.asarray(picks, dtype=float)[:, None], (1.0, 0.0))


register_target(Target(
    name="private-median-cell-missing",
    summary="the median cell of bounds='auto' with missing values (counts and target from "
            "the values present): 10 values and one missing or far, epsilon=1",
    relations=("replace", "add-remove"),
    datasets=_missing_datasets,
    pairs=_missing_pairs,
    release=_median_cell_missing_release,
    quick_samples=20000,
    full_samples=100000,
))


# ------------------------------------------------------------------------- test double

def _broken_release(data: np.ndarray, relation: str, rng: np.random.Generator,
                    runs: int) -> Release:
    n, p = data.shape
    S = data.T @ data / n
    # The replace-one l2 sensitivity of the second moment is sqrt(2) B^2 / n; this double
    # calibrates to half of it, so its claim is false by construction.
    sigma = gaussian_sigma(math.sqrt(2.0) / n / 2.0, _APPROX)
    iu = np.triu_indices(p)
    draws = rng.normal(0.0, sigma, size=(runs, len(iu[0])))
    matrices = np.repeat(S[None], runs, axis=0)
    matrices[:, iu[0], iu[1]] += draws
    matrices[:, iu[1], iu[0]] = matrices[:, iu[0], iu[1]]
    return Release(_upper_rows(matrices), (_APPROX.epsilon, _APPROX.delta), matrices)


def _upper_rows(matrices: np.ndarray) -> np.ndarray:
    iu = np.triu_indices(matrices.shape[1])
    return matrices[:, iu[0], iu[1]]


register_target(Target(
    name="broken-ssp-half-sensitivity",
    summary="TEST DOUBLE: the Gaussian covariance mechanism calibrated to half its sensitivity",
    relations=("replace",),
    datasets=_ROW_NORM.datasets,
    pairs=_ROW_NORM.pairs,
    release=_broken_release,
    statistic=lambda data, relation: data.T @ data / data.shape[0],
    expected="fail",
    double=True,
    quick_samples=20000,
    full_samples=200000,
))
