"""What follows from releases of a network: differences between groups and node centrality,
with intervals and tests (post-processing of the releases and of their edge inference).

Everything here reads the :class:`~dpggm.solvers.inference.EdgeInference` of one release
(or two) and the public description of the release's noise (the number of records, the
noise variance of one entry, its distribution): no data, no budget.

Linearised fluctuations
    A release's de-biased partial correlations move, to first order, by
    ``dr_jk = c_jk W_jk + a_jk W_jj + b_jk W_kk`` with ``W = Theta dS Theta``
    (:func:`~dpggm.solvers.inference.delta_method_terms`), ``dS`` the sampling error of
    the second moment plus the privacy noise. :func:`linearised_draws` simulates ``dS``
    from the public description -- Gaussian records of covariance ``Theta^-1`` (``W``'s
    sampling part is ``L^-T G L^-1`` with ``Theta^-1 = L L^T`` and ``G`` symmetric with
    independent entries of variance ``1/n`` off the diagonal and ``2/n`` on it) and
    symmetric noise of the release's entry variance -- and rescales every pair's draws to
    the standard error the inference reports (which also holds the heavy-tail and
    missing-value terms). The draws carry what a closed form per pair does not: how the
    estimates of different pairs move together.

Differences between two groups
    :func:`compare_inferences`: per pair ``d = r_A - r_B`` with standard error
    ``sqrt(se_A**2 + se_B**2)`` (the releases are independent given the data, and so are
    the two groups' records: sampling and noise variances add), Wald's z, two-sided
    p-values, Benjamini-Hochberg q-values and intervals. The global test of "the two
    networks are equal" is the largest ``|z|`` over the pairs, calibrated by the largest
    ``|z*|`` of the linearised draws of both releases (the correlated normals the
    ``z``'s are under the null), with the Sidak bound ``1 - (1 - p_min)**m`` beside it.

Centrality
    :func:`node_centrality`: strength (the sum of ``|partial correlation|`` over a node's
    edges) and expected influence (the signed sum) of every node, over the pairs Holm's
    procedure selects at family-wise error ``1 - confidence_level`` (``support=
    "familywise"``, so that a false edge -- large because it was selected -- rarely enters
    a node's sum), the release's false-discovery selection (``"selected"``) or every pair
    (``"all"``), with intervals by
    the delta method with the covariance of the node's pairs (:func:`pair_covariance`, in
    closed form), the edges taken as given. :func:`compare_centrality`: their differences
    between two groups.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dpggm.solvers.inference import (
    EdgeInference,
    delta_method_terms,
    false_discovery_control,
)

__all__ = [
    "CENTRALITY_SUPPORTS",
    "DEFAULT_DRAWS",
    "CentralityInference",
    "CentralityDifference",
    "DifferenceInference",
    "compare_centrality",
    "compare_inferences",
    "holm_selected",
    "linearised_draws",
    "node_centrality",
    "pair_covariance",
]

#: Linearised draws per release for the global test and the centrality intervals: the
#: Monte-Carlo error of a p-value near 0.05 is then about 0.005, of a standard error 1.6 %.
DEFAULT_DRAWS = 2000

#: Which pairs a node's centrality sums over.
CENTRALITY_SUPPORTS = ("familywise", "selected", "all")

#: Draws simulated at once (memory: ``batch * p**2`` floats, several arrays).
_BATCH = 250


def _check_level(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"{name} must be a number in (0, 1); got {value!r}")
    return float(value)


def linearised_draws(inference: EdgeInference, *, n_samples: int, noise_variance: float,
                     noise_distribution: str = "gaussian", n_draws: int = DEFAULT_DRAWS,
                     random_state: int | np.random.Generator = 0) -> np.ndarray:
    """``n_draws`` simulated fluctuations of a release's de-biased partial correlations
    (one row per draw, the pairs in the order of ``inference``), to first order: sampling
    error of ``n_samples`` Gaussian records and the release's noise (entry variance
    ``noise_variance``, Gaussian or Laplace), each pair rescaled to the standard error the
    inference reports.

    The seed drives a simulation of public quantities only (post-processing): it makes the
    figures reproducible and has no bearing on privacy.
    """
    if noise_distribution not in ("gaussian", "laplace"):
        raise ValueError(f"noise_distribution must be 'gaussian' or 'laplace'; got "
                         f"{noise_distribution!r}")
    if isinstance(n_draws, bool) or not isinstance(n_draws, int) or n_draws < 50:
        raise ValueError(f"n_draws must be an integer >= 50; got {n_draws!r}")
    n = int(n_samples)
    if n < 2:
        raise ValueError(f"n_samples must be an integer >= 2; got {n_samples!r}")
    variance = float(noise_variance)
    if not (math.isfinite(variance) and variance >= 0):
        raise ValueError(f"noise_variance must be a finite number >= 0; got {noise_variance!r}")
    rng = (random_state if isinstance(random_state, np.random.Generator)
           else np.random.default_rng(int(random_state)))
    theta, c, a, b = delta_method_terms(inference)
    p = theta.shape[0]
    rows, cols = inference.source, inference.target
    factor = np.linalg.cholesky(np.linalg.inv(theta))
    # W's sampling part: L^-T G L^-1 (Theta^-1 = L L^T).
    inverse = np.linalg.inv(factor)
    upper = np.triu_indices(p)
    out = np.empty((n_draws, rows.size))
    done = 0
    while done < n_draws:
        k = min(_BATCH, n_draws - done)
        sampling = _symmetric(rng, k, p, upper, off=1.0 / n, diagonal=2.0 / n, laplace=False)
        W = np.einsum("ji,bjk,kl->bil", inverse, sampling, inverse, optimize=True)
        if variance > 0:
            noise = _symmetric(rng, k, p, upper, off=variance, diagonal=variance,
                               laplace=noise_distribution == "laplace")
            W += np.einsum("ij,bjk,kl->bil", theta, noise, theta, optimize=True)
        diagonal = np.diagonal(W, axis1=1, axis2=2)
        out[done:done + k] = (c[rows, cols] * W[:, rows, cols]
                              + a[rows, cols] * diagonal[:, rows]
                              + b[rows, cols] * diagonal[:, cols])
        done += k
    spread = out.std(axis=0)
    return out * (np.asarray(inference.std_error) / np.where(spread > 0, spread, 1.0))


def _symmetric(rng: np.random.Generator, k: int, p: int, upper: tuple[np.ndarray, np.ndarray],
               *, off: float, diagonal: float, laplace: bool) -> np.ndarray:
    """``k`` symmetric ``p x p`` matrices with independent upper-triangle entries of
    variance ``off`` (``diagonal`` on the diagonal), Gaussian or Laplace."""
    scale = np.where(upper[0] == upper[1], math.sqrt(diagonal), math.sqrt(off))
    if laplace:
        values = rng.laplace(0.0, 1.0 / math.sqrt(2.0), size=(k, scale.size)) * scale
    else:
        values = rng.standard_normal((k, scale.size)) * scale
    out = np.zeros((k, p, p))
    out[:, upper[0], upper[1]] = values
    out[:, upper[1], upper[0]] = values
    return out


@dataclass(frozen=True)
class DifferenceInference:
    """Per-pair differences of two releases' partial correlations, and the global test.

    Pair arrays are in the order of ``numpy.triu_indices(p, 1)``.

    Attributes
    ----------
    source, target : ndarray of int
    first, second : ndarray
        The two groups' de-biased partial correlations.
    difference : ndarray
        ``first - second``.
    std_error, z, p_value, q_value : ndarray
        Wald's test of "equal in both groups", two-sided, and its false-discovery-adjusted
        p-value.
    ci_low, ci_high : ndarray
        The interval of the difference at ``confidence_level`` (within ``[-2, 2]``).
    selected : ndarray of bool
        ``q_value <= fdr`` (all False when ``withheld``).
    global_statistic : float
        The largest ``|z|``.
    global_p_value : float
        Its p-value from the linearised draws of both releases.
    global_critical : float
        The 95 % point of the largest ``|z*|`` under the null.
    sidak_p_value : float
        ``1 - (1 - p_min)**m``: valid whatever the correlation of the tests (conservative).
    n_draws : int
    confidence_level, fdr : float
    fdr_method : str
    withheld : str or None
        Why the selection (and the global test) is withheld, if it is.
    """

    source: np.ndarray
    target: np.ndarray
    first: np.ndarray
    second: np.ndarray
    difference: np.ndarray
    std_error: np.ndarray
    z: np.ndarray
    p_value: np.ndarray
    q_value: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    selected: np.ndarray
    global_statistic: float
    global_p_value: float
    global_critical: float
    sidak_p_value: float
    n_draws: int
    confidence_level: float
    fdr: float
    fdr_method: str
    withheld: str | None = None

    @property
    def n_features(self) -> int:
        m = self.source.size
        return int(round((1 + math.sqrt(1 + 8 * m)) / 2))

    def matrix(self, name: str) -> np.ndarray:
        """A pair attribute as a symmetric ``p x p`` matrix (diagonal 0)."""
        values = np.asarray(getattr(self, name))
        p = self.n_features
        out = np.zeros((p, p), dtype=values.dtype)
        out[self.source, self.target] = values
        out[self.target, self.source] = values
        return out

    def to_frame(self, names: list[str] | None = None):
        """``source, target, difference, ci_low, ci_high, p_value, q_value, selected``, one
        row per pair, strongest evidence first."""
        import pandas as pd

        p = self.n_features
        labels = [str(j) for j in range(p)] if names is None else [str(x) for x in names]
        if len(labels) != p:
            raise ValueError(f"names must have {p} entries; got {len(labels)}")
        frame = pd.DataFrame({
            "source": [labels[j] for j in self.source],
            "target": [labels[k] for k in self.target],
            "difference": self.difference,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_value": self.p_value,
            "q_value": self.q_value,
            "selected": self.selected,
        })
        order = np.lexsort((-np.abs(self.difference), self.p_value))
        return frame.iloc[order].reset_index(drop=True)

    def global_record(self) -> dict[str, Any]:
        """The global test for a result record (public)."""
        record: dict[str, Any] = {
            "null": "the two networks are equal (every pair's partial correlation the same "
                    "in both groups)",
            "statistic": "largest |z| over the pairs",
            "value": float(self.global_statistic),
            "p_value": None if self.withheld else float(self.global_p_value),
            "critical_value_at_0.05": float(self.global_critical),
            "calibration": f"largest |z*| of {self.n_draws} linearised draws of both releases "
                           "(sampling and privacy noise; the pairs' correlation kept)",
            "sidak_p_value": None if self.withheld else float(self.sidak_p_value),
            "pairs": int(self.source.size),
        }
        if self.withheld:
            record["withheld"] = self.withheld
        return record


def compare_inferences(first: EdgeInference, second: EdgeInference, *,
                       first_draws: np.ndarray, second_draws: np.ndarray,
                       confidence_level: float = 0.9, fdr: float = 0.1,
                       fdr_method: str = "bh", withheld: str | None = None
                       ) -> DifferenceInference:
    """Per-pair differences ``first - second`` of two independent releases' de-biased
    partial correlations, with intervals, Wald p-values and q-values, and the global test
    of "the networks are equal" (largest ``|z|``), calibrated by the releases' linearised
    draws (:func:`linearised_draws`, one row per draw). ``withheld`` (a reason) reports no
    selection and no global p-value.

    Privacy: post-processing of two releases; nothing is read from data.
    """
    level = _check_level(confidence_level, "confidence_level")
    fdr = _check_level(fdr, "fdr")
    if first.n_features != second.n_features:
        raise ValueError(f"the releases have {first.n_features} and {second.n_features} "
                         "variables; a comparison needs the same variables")
    if first_draws.shape[1] != first.source.size or second_draws.shape[1] != second.source.size:
        raise ValueError("the draws must hold one column per pair of their release")
    difference = np.asarray(first.partial_correlation) - np.asarray(second.partial_correlation)
    se = np.hypot(first.std_error, second.std_error)
    z = difference / np.maximum(se, 1e-300)
    p_value = 2.0 * stats.norm.sf(np.abs(z))
    q_value = false_discovery_control(p_value, method=fdr_method)
    quantile = float(stats.norm.ppf(0.5 + level / 2))
    ci_low = np.clip(difference - quantile * se, -2.0, 2.0)
    ci_high = np.clip(difference + quantile * se, -2.0, 2.0)
    # The null: both releases' fluctuations, standardised as the z's are.
    draws = min(first_draws.shape[0], second_draws.shape[0])
    null = first_draws[:draws] - second_draws[:draws]
    spread = null.std(axis=0)
    largest = np.max(np.abs(null / np.where(spread > 0, spread, 1.0)), axis=1)
    statistic = float(np.max(np.abs(z))) if z.size else 0.0
    global_p = float((1 + np.sum(largest >= statistic)) / (draws + 1))
    m = z.size
    smallest = float(np.min(p_value)) if m else 1.0
    sidak = float(-np.expm1(m * np.log1p(-min(smallest, 1.0 - 1e-16)))) if smallest < 1 else 1.0
    selected = (q_value <= fdr) & (withheld is None)
    return DifferenceInference(
        source=first.source, target=first.target,
        first=np.asarray(first.partial_correlation), second=np.asarray(second.partial_correlation),
        difference=difference, std_error=se, z=z, p_value=p_value, q_value=q_value,
        ci_low=ci_low, ci_high=ci_high, selected=selected, global_statistic=statistic,
        global_p_value=global_p, global_critical=float(np.quantile(largest, 0.95)),
        sidak_p_value=min(1.0, sidak), n_draws=draws, confidence_level=level, fdr=fdr,
        fdr_method=fdr_method, withheld=withheld)


@dataclass(frozen=True)
class CentralityInference:
    """Strength and expected influence of every node of one release, with intervals.

    Attributes
    ----------
    strength, strength_se, strength_ci_low, strength_ci_high : ndarray of shape (p,)
        The sum of ``|partial correlation|`` over the node's edges (the support), its
        standard error and interval.
    expected_influence, expected_influence_se, expected_influence_ci_low,
    expected_influence_ci_high : ndarray of shape (p,)
        The signed sum, likewise.
    support : str
        ``"selected"`` (the release's selected edges) or ``"all"`` (every pair).
    edges : ndarray of bool, shape (p, p)
        The pairs summed over.
    confidence_level : float
    withheld : str or None
        Why no centrality is stated (the release's selection was withheld).
    """

    strength: np.ndarray
    strength_se: np.ndarray
    strength_ci_low: np.ndarray
    strength_ci_high: np.ndarray
    expected_influence: np.ndarray
    expected_influence_se: np.ndarray
    expected_influence_ci_low: np.ndarray
    expected_influence_ci_high: np.ndarray
    support: str
    edges: np.ndarray
    confidence_level: float
    withheld: str | None = None

    def to_frame(self, names: list[str] | None = None):
        """One row per node: ``node, strength, strength_ci_low, strength_ci_high,
        expected_influence, expected_influence_ci_low, expected_influence_ci_high``."""
        import pandas as pd

        p = self.strength.size
        labels = [str(j) for j in range(p)] if names is None else [str(x) for x in names]
        if len(labels) != p:
            raise ValueError(f"names must have {p} entries; got {len(labels)}")
        return pd.DataFrame({
            "node": labels,
            "strength": self.strength,
            "strength_ci_low": self.strength_ci_low,
            "strength_ci_high": self.strength_ci_high,
            "expected_influence": self.expected_influence,
            "expected_influence_ci_low": self.expected_influence_ci_low,
            "expected_influence_ci_high": self.expected_influence_ci_high,
        })


def pair_covariance(inference: EdgeInference, first: np.ndarray, second: np.ndarray, *,
                    n_samples: int, noise_variance: float) -> np.ndarray:
    """The covariance of the de-biased partial correlations of the pairs ``first[i]`` and
    ``second[i]`` (indices into the release's pairs), to first order: the delta method of
    :func:`~dpggm.solvers.inference.edge_inference` for two pairs at once (Gaussian
    sampling of ``n_samples`` records, symmetric noise of entry variance
    ``noise_variance``), rescaled so that a pair's variance is the squared standard error
    the inference reports (which also holds its heavy-tail and missing-value terms).

    With ``M_e = U_e D_e U_e^T`` (``U_e`` the pilot's columns of the pair's variables,
    ``D_e = [[a, c/2], [c/2, b]]``), the sampling covariance is
    ``2 tr(D_1 K D_2 K^T) / n`` with ``K = U_1^T Theta^-1 U_2`` (entries of ``Theta``),
    and the noise covariance ``sigma**2 (2 tr(D_1 H D_2 H^T) - sum_i (M_1)_ii (M_2)_ii)``
    with ``H = U_1^T U_2`` (entries of ``Theta**2``).

    Privacy: post-processing of a release; nothing is read from data.
    """
    theta, c, a, b = delta_method_terms(inference)
    square = theta @ theta
    rows, cols = inference.source, inference.target
    first = np.asarray(first, dtype=np.intp)
    second = np.asarray(second, dtype=np.intp)

    def covariance(one: np.ndarray, two: np.ndarray) -> np.ndarray:
        x, y, z, w = rows[one], cols[one], rows[two], cols[two]
        d1 = (a[x, y], c[x, y] / 2, b[x, y])
        d2 = (a[z, w], c[z, w] / 2, b[z, w])

        def trace(matrix: np.ndarray) -> np.ndarray:
            # tr(D1 K D2 K^T) with K = [[m_xz, m_xw], [m_yz, m_yw]].
            k = ((matrix[x, z], matrix[x, w]), (matrix[y, z], matrix[y, w]))
            D1 = ((d1[0], d1[1]), (d1[1], d1[2]))
            D2 = ((d2[0], d2[1]), (d2[1], d2[2]))
            total = 0.0
            for i in range(2):
                for j in range(2):
                    for m in range(2):
                        for q in range(2):
                            total = total + D1[i][j] * k[j][m] * D2[m][q] * k[i][q]
            return total

        m1 = (d1[0][:, None] * theta[:, x].T ** 2 + 2 * d1[1][:, None] * theta[:, x].T
              * theta[:, y].T + d1[2][:, None] * theta[:, y].T ** 2)
        m2 = (d2[0][:, None] * theta[:, z].T ** 2 + 2 * d2[1][:, None] * theta[:, z].T
              * theta[:, w].T + d2[2][:, None] * theta[:, w].T ** 2)
        sampling = 2.0 * trace(theta) / float(n_samples)
        noise = float(noise_variance) * (2.0 * trace(square) - np.sum(m1 * m2, axis=1))
        return sampling + noise

    se = np.asarray(inference.std_error, dtype=float)
    out = np.empty(first.size)
    # In chunks: every item holds two vectors of length p.
    chunk = max(1, 2_000_000 // max(theta.shape[0], 1))
    for start in range(0, first.size, chunk):
        one, two = first[start:start + chunk], second[start:start + chunk]
        value = covariance(one, two)
        # Rescaled to the reported standard errors.
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = se[one] * se[two] / np.sqrt(covariance(one, one) * covariance(two, two))
        out[start:start + chunk] = value * np.where(np.isfinite(scale), scale, 0.0)
    return out


def holm_selected(p_values: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step-down selection at family-wise error rate ``alpha``: the pairs whose
    ``i``-th smallest p-value and every smaller one are at most ``alpha / (m - i + 1)``."""
    p_values = np.asarray(p_values, dtype=float)
    m = p_values.size
    chosen = np.zeros(m, dtype=bool)
    if m == 0:
        return chosen
    order = np.argsort(np.where(np.isfinite(p_values), p_values, np.inf), kind="stable")
    limits = alpha / (m - np.arange(m))
    passed = p_values[order] <= limits
    stop = int(np.argmin(passed)) if not passed.all() else m
    chosen[order[:stop]] = True
    return chosen


def node_centrality(inference: EdgeInference, *, n_samples: int, noise_variance: float,
                    support: str = "familywise", confidence_level: float | None = None,
                    withheld: str | None = None) -> CentralityInference:
    """Strength and expected influence of every node from one release, with intervals.

    A node's measure is a (signed) sum of its pairs' estimates; its standard error comes
    from the delta method with the covariance of those estimates
    (:func:`pair_covariance`; pairs that share the node are correlated). The support
    (which pairs are the node's edges) is taken as given. ``withheld`` (a reason) states
    no centrality (NaN).

    Privacy: post-processing of a release; nothing is read from data.
    """
    if support not in CENTRALITY_SUPPORTS:
        raise ValueError(f"support must be one of {CENTRALITY_SUPPORTS}; got {support!r}")
    level = _check_level(inference.confidence_level if confidence_level is None
                         else confidence_level, "confidence_level")
    p = inference.n_features
    if withheld is not None:
        nan = np.full(p, np.nan)
        return CentralityInference(nan, nan, nan, nan, nan, nan, nan, nan, support,
                                   np.zeros((p, p), dtype=bool), level, withheld)
    rows, cols = inference.source, inference.target
    r = np.asarray(inference.partial_correlation, dtype=float)
    if support == "selected":
        on = np.asarray(inference.selected, dtype=bool)
    elif support == "familywise":
        on = holm_selected(np.asarray(inference.p_value, dtype=float), 1.0 - level)
    else:
        on = np.ones(rows.size, dtype=bool)
    sign = np.sign(r)
    strength = np.zeros(p)
    influence = np.zeros(p)
    strength_var = np.zeros(p)
    influence_var = np.zeros(p)
    # Every node's pairs, and every two of them (the node's covariance terms).
    incident = [np.flatnonzero(on & ((rows == j) | (cols == j))) for j in range(p)]
    owners = np.concatenate([np.full(e.size**2, j) for j, e in enumerate(incident)]
                            ) if p else np.empty(0, dtype=int)
    first = np.concatenate([np.repeat(e, e.size) for e in incident]).astype(np.intp)
    second = np.concatenate([np.tile(e, e.size) for e in incident]).astype(np.intp)
    if first.size:
        cov = pair_covariance(inference, first, second, n_samples=n_samples,
                              noise_variance=noise_variance)
        np.add.at(strength_var, owners, sign[first] * sign[second] * cov)
        np.add.at(influence_var, owners, cov)
    for j, e in enumerate(incident):
        strength[j] = np.sum(np.abs(r[e]))
        influence[j] = np.sum(r[e])
    quantile = float(stats.norm.ppf(0.5 + level / 2))
    strength_se = np.sqrt(np.maximum(strength_var, 0.0))
    influence_se = np.sqrt(np.maximum(influence_var, 0.0))
    edges = np.zeros((p, p), dtype=bool)
    edges[rows[on], cols[on]] = True
    edges |= edges.T
    return CentralityInference(
        strength=strength, strength_se=strength_se,
        strength_ci_low=np.maximum(strength - quantile * strength_se, 0.0),
        strength_ci_high=strength + quantile * strength_se,
        expected_influence=influence, expected_influence_se=influence_se,
        expected_influence_ci_low=influence - quantile * influence_se,
        expected_influence_ci_high=influence + quantile * influence_se,
        support=support, edges=edges, confidence_level=level)


@dataclass(frozen=True)
class CentralityDifference:
    """Differences of every node's strength and expected influence between two groups
    (``first - second``), with standard errors, intervals and two-sided p-values (Wald;
    the groups' releases are independent)."""

    strength: np.ndarray
    strength_se: np.ndarray
    strength_ci_low: np.ndarray
    strength_ci_high: np.ndarray
    strength_p_value: np.ndarray
    expected_influence: np.ndarray
    expected_influence_se: np.ndarray
    expected_influence_ci_low: np.ndarray
    expected_influence_ci_high: np.ndarray
    expected_influence_p_value: np.ndarray
    confidence_level: float

    def to_frame(self, names: list[str] | None = None):
        """One row per node: ``node``, then for ``strength`` and ``expected_influence`` the
        ``_difference``, ``_ci_low``, ``_ci_high`` and ``_p_value``."""
        import pandas as pd

        p = self.strength.size
        labels = [str(j) for j in range(p)] if names is None else [str(x) for x in names]
        columns: dict[str, Any] = {"node": labels}
        for measure in ("strength", "expected_influence"):
            columns[f"{measure}_difference"] = getattr(self, measure)
            columns[f"{measure}_ci_low"] = getattr(self, f"{measure}_ci_low")
            columns[f"{measure}_ci_high"] = getattr(self, f"{measure}_ci_high")
            columns[f"{measure}_p_value"] = getattr(self, f"{measure}_p_value")
        return pd.DataFrame(columns)


def compare_centrality(first: CentralityInference,
                       second: CentralityInference) -> CentralityDifference:
    """The differences of two independent releases' centralities, with intervals at the
    first one's level and Wald p-values.

    Privacy: post-processing of two releases; nothing is read from data.
    """
    level = first.confidence_level
    quantile = float(stats.norm.ppf(0.5 + level / 2))
    out: dict[str, np.ndarray] = {}
    for measure in ("strength", "expected_influence"):
        difference = getattr(first, measure) - getattr(second, measure)
        se = np.hypot(getattr(first, f"{measure}_se"), getattr(second, f"{measure}_se"))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(se > 0, difference / se, np.where(difference == 0, 0.0, np.inf))
        out[measure] = difference
        out[f"{measure}_se"] = se
        out[f"{measure}_ci_low"] = difference - quantile * se
        out[f"{measure}_ci_high"] = difference + quantile * se
        out[f"{measure}_p_value"] = 2.0 * stats.norm.sf(np.abs(z))
    return CentralityDifference(confidence_level=level, **out)
