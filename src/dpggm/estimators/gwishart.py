"""Bayesian graph structure learning with G-Wishart priors on a noisy data release: the
G-Wishart baseline of Guo et al. (who compare with BDgraph, Mohammadi & Wit 2015).

Model
-----
Given a graph ``G`` the precision matrix has the G-Wishart prior ``W_G(b, D)`` with density
proportional to ``|K|^{(b-2)/2} exp(-tr(K D)/2)`` on the positive definite matrices with
zeros off ``G`` (Dobra, Lenkoski & Rodriguez 2011; BDgraph's parameterisation: ``b = 3``,
``D = I`` by default). The records are Gaussian, so with ``m`` degrees of freedom and
scatter matrix ``U`` the posterior given ``G`` is ``W_G(b + m, D + U)`` and the marginal
likelihood is, up to a factor that does not depend on ``G``,
``p(U | G) = I_G(b + m, D + U) / I_G(b, D)``.

For a decomposable (chordal) graph the normalising constant is closed-form (Roverato
2000): ``I_G(b, D) = prod_C I_C(b, D_C) / prod_S I_S(b, D_S)`` over the cliques ``C`` and
separators ``S`` of a junction tree, where on a complete set ``A`` of size ``k``
``I_A(b, D_A) = 2^{(b+k-1)k/2} Gamma_k((b+k-1)/2) |D_A|^{-(b+k-1)/2}`` (the Wishart
constant with ``b + k - 1`` degrees of freedom). :func:`gwishart_log_normalizing_constant`
computes it.

Sampler and its restriction
---------------------------
**The chain moves on decomposable graphs only**, which keeps every constant exact (no
Monte Carlo estimate of ``I_G`` for non-chordal graphs, as Atay-Kayis & Massam 2005 or
BDgraph's birth-death sampler need) and makes each step cheap. Each iteration picks one of
the ``p(p-1)/2`` vertex pairs uniformly and proposes to toggle it; a proposal whose result
is not chordal is rejected, so the proposal is symmetric and the Metropolis-Hastings
acceptance probability is the posterior ratio. Toggling ``(u, v)`` keeps a chordal graph
chordal iff, for an addition, the common neighbours ``S`` of ``u`` and ``v`` separate them
(Ibarra 2008) and, for a removal, ``S`` is complete (the edge lies in one maximal clique;
Frydenberg & Lauritzen 1989); in both cases the log marginal-likelihood ratio is local
(Giudici & Green 1999): ``h(S+u+v) + h(S) - h(S+u) - h(S+v)`` with
``h(A) = log I_A(b + m, (D + U)_A) - log I_A(b, D_A)``.

The graph prior puts independent probability ``edge_prior`` on each edge, restricted to
the decomposable graphs (``0.5``: uniform over decomposable graphs). Posterior edge
inclusion probabilities are the time averages of the edge indicators after ``burn_in``
iterations, pooled over ``n_chains`` chains that start from the empty graph (even chains)
and a uniformly random spanning tree (odd chains).

Single-edge moves restricted to chordal graphs mix slowly when the signal is strong and
``p`` is large: an edge can be added only once the common neighbours of its ends separate
them, so a chain that attached a vertex to the wrong part of the graph must first undo
that. On a 10-node chain with ``n = 500`` the default 20 000 iterations agree across chains
to 0.1; on a 50-node chain the chains reach graphs within about ten log units of the
true graph's posterior after 200 000 iterations but still disagree on some edges. The
diagnostic (``solver_``) reports this; it is not hidden by the defaults.

Estimates
---------
``precision_`` is the **posterior mean of the precision matrix, averaged over the sampled
graphs** (Bayesian model averaging). Given a decomposable ``G`` it is exact:
``E[K | G] = sum_C (b'+|C|-1) [(D'_C)^{-1}]^0 - sum_S (b'+|S|-1) [(D'_S)^{-1}]^0`` with
``b' = b + m``, ``D' = D + U`` (``[.]^0``: padded with zeros). It has no exact zeros; the
graph is ``adjacency_``, the median-probability graph (inclusion probability > 0.5), which
need not be decomposable. ``covariance_`` is ``inv(precision_)``.

Data
----
The scatter is ``U = m S^`` with ``S^`` the bias-corrected covariance of the release
(:func:`~dpggm.estimators.noisy_glasso.bias_corrected_covariance`), repaired to be positive
definite exactly as :class:`~dpggm.estimators.noisy_glasso.NoisyGraphicalLasso` does;
``m = n - 1`` when the release is centered by its own mean (the default), ``n`` with
``assume_centered=True``.

Convergence
-----------
``solver_`` records, per edge, how far the chains' inclusion estimates are apart:
``max_abs_diff`` (the largest difference between two chains) and ``rhat_max`` (the
Gelman-Rubin potential scale reduction of the edge indicators, largest over edges whose
indicator varies). A :class:`~dpggm.exceptions.ConvergenceWarning` is issued when
``max_abs_diff > convergence_tol``.

Privacy
-------
Post-processing of the release only: it consumes no budget. ``privacy_`` is the
release's guarantee when ``release`` is given (a seeded MCMC run changes nothing about
it: the chain only reads released data).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from scipy.special import multigammaln

from dpggm.data.records import RecordMatrix
from dpggm.data.tables import as_matrix, too_few_records, too_few_variables
from dpggm.estimators._base import PostProcessingEstimator
from dpggm.estimators._contract import (
    FLAG,
    RANDOM_STATE,
    Interval,
    Optional,
    fraction,
)
from dpggm.estimators.noisy_glasso import (
    RELEASE,
    PostProcessingRecord,
    bias_corrected_covariance,
    check_release_data,
    noise_record,
    published_guarantee,
    release_noise,
    repair_corrected,
)
from dpggm.exceptions import ConvergenceWarning
from dpggm.mechanisms.random import check_random_state
from dpggm.mechanisms.record import NoiseDescription
from dpggm.solvers import SolverResult

__all__ = [
    "GWishartGraph",
    "complete_log_normalizing_constant",
    "gwishart_log_normalizing_constant",
]


# ------------------------------------------------------------------ normalising constants


def complete_log_normalizing_constant(b: float, D: np.ndarray) -> float:
    """``log I(b, D)`` of the G-Wishart on a complete graph (a Wishart constant).

    Parameters
    ----------
    b : float
        Degrees of freedom, ``> 2`` (the Wishart has ``b + k - 1``).
    D : ndarray of shape (k, k)
        Positive definite scale (``k = 0`` gives 0).

    Returns
    -------
    float
        ``(b+k-1)k/2 log 2 + log Gamma_k((b+k-1)/2) - (b+k-1)/2 log|D|``.

    Notes
    -----
    Privacy: a function of its arguments only.
    """
    D = np.atleast_2d(np.asarray(D, dtype=float))
    k = D.shape[0]
    if k == 0:
        return 0.0
    nu = b + k - 1
    sign, logdet = np.linalg.slogdet(D)
    if sign <= 0:
        raise ValueError("D must be positive definite")
    return float(0.5 * nu * k * math.log(2.0) + multigammaln(0.5 * nu, k) - 0.5 * nu * logdet)


def _junction_tree(adjacency: np.ndarray) -> tuple[list[list[int]], list[list[int]]]:
    """Cliques and separators (a maximum-weight spanning forest of the clique graph)."""
    import networkx as nx

    p = adjacency.shape[0]
    graph = nx.Graph()
    graph.add_nodes_from(range(p))
    graph.add_edges_from(zip(*np.nonzero(np.triu(adjacency, 1))))
    if not nx.is_chordal(graph):
        raise ValueError("the graph is not decomposable (chordal); no closed form exists")
    cliques = [sorted(c) for c in nx.chordal_graph_cliques(graph)]
    clique_graph = nx.Graph()
    clique_graph.add_nodes_from(range(len(cliques)))
    for i in range(len(cliques)):
        for j in range(i + 1, len(cliques)):
            shared = len(set(cliques[i]) & set(cliques[j]))
            if shared:
                clique_graph.add_edge(i, j, weight=shared)
    tree = nx.maximum_spanning_tree(clique_graph)
    separators = [sorted(set(cliques[i]) & set(cliques[j])) for i, j in tree.edges()]
    return cliques, separators


def gwishart_log_normalizing_constant(adjacency: Any, b: float, D: Any) -> float:
    """``log I_G(b, D)`` of the G-Wishart ``W_G(b, D)`` for a decomposable graph ``G``.

    Parameters
    ----------
    adjacency : array_like of bool, shape (p, p)
        A symmetric chordal graph (the diagonal is ignored).
    b : float
        Degrees of freedom, ``> 2``.
    D : array_like of shape (p, p)
        Positive definite scale matrix.

    Returns
    -------
    float
        ``sum_C log I_C(b, D_C) - sum_S log I_S(b, D_S)`` over cliques and separators.

    Raises
    ------
    ValueError
        If the graph is not chordal.

    Notes
    -----
    Privacy: a function of its arguments only.
    """
    adjacency = np.asarray(adjacency, dtype=bool)
    D = np.asarray(D, dtype=float)
    cliques, separators = _junction_tree(adjacency)
    total = sum(complete_log_normalizing_constant(b, D[np.ix_(c, c)]) for c in cliques)
    total -= sum(complete_log_normalizing_constant(b, D[np.ix_(s, s)]) for s in separators)
    return float(total)


# ------------------------------------------------------------------------------ sampler


def _members(mask: int) -> list[int]:
    out = []
    index = 0
    while mask:
        if mask & 1:
            out.append(index)
        mask >>= 1
        index += 1
    return out


class _Chain:
    """One Metropolis-Hastings chain on decomposable graphs (graphs held as bit masks)."""

    def __init__(self, *, D: np.ndarray, D_post: np.ndarray, b: float, b_post: float,
                 log_prior_odds: float) -> None:
        self.D = D
        self.D_post = D_post
        self.b = b
        self.b_post = b_post
        self.log_prior_odds = log_prior_odds
        self.p = D.shape[0]
        self._h: dict[int, float] = {0: 0.0}

    def h(self, mask: int) -> float:
        value = self._h.get(mask)
        if value is None:
            idx = _members(mask)
            block = np.ix_(idx, idx)
            value = complete_log_normalizing_constant(
                self.b_post, self.D_post[block]
            ) - complete_log_normalizing_constant(self.b, self.D[block])
            self._h[mask] = value
        return value

    def mean_term(self, mask: int) -> tuple[list[int], np.ndarray]:
        """``(b'+|A|-1) (D'_A)^{-1}``: the mean of the clique marginal of K."""
        idx = _members(mask)
        return idx, (self.b_post + len(idx) - 1) * np.linalg.inv(self.D_post[np.ix_(idx, idx)])

    @staticmethod
    def separates(nbr: list[int], u: int, v: int, cut: int) -> bool:
        reached = (1 << u) | cut
        frontier = 1 << u
        target = 1 << v
        while frontier:
            grown = 0
            for w in _members(frontier):
                grown |= nbr[w]
            grown &= ~reached
            if grown & target:
                return False
            reached |= grown
            frontier = grown
        return True

    @staticmethod
    def is_complete(nbr: list[int], mask: int) -> bool:
        return all((mask & ~(1 << w)) & ~nbr[w] == 0 for w in _members(mask))

    def start_mean(self, nbr: list[int]) -> np.ndarray:
        """``E[K | G]`` of a forest: its edges are the cliques, its vertices (with their
        degree minus one) the separators."""
        p = self.p
        mean = np.zeros((p, p))
        for i in range(p):
            degree = len(_members(nbr[i]))
            idx, term = self.mean_term(1 << i)
            mean[np.ix_(idx, idx)] += (1 - degree) * term
            for j in _members(nbr[i]):
                if j > i:
                    idx, term = self.mean_term((1 << i) | (1 << j))
                    mean[np.ix_(idx, idx)] += term
        return mean

    def run(self, *, start: list[int], n_iter: int, burn_in: int,
            rng: np.random.Generator) -> dict[str, Any]:
        p = self.p
        nbr = list(start)
        iu, ju = np.triu_indices(p, 1)
        mean = self.start_mean(nbr)
        since = np.zeros((p, p), dtype=np.int64)  # the start's edges are present from 0
        kept = n_iter - burn_in
        inclusion = np.zeros((p, p))
        mean_sum = np.zeros((p, p))
        last_change = 0
        accepted = 0
        pairs = rng.integers(iu.size, size=n_iter)
        log_u = np.log(rng.random(n_iter))

        def overlap(start: int, stop: int) -> int:
            return max(0, min(stop, n_iter) - max(start, burn_in))

        for t in range(n_iter):
            k = pairs[t]
            u, v = int(iu[k]), int(ju[k])
            common = nbr[u] & nbr[v]
            present = bool(nbr[u] >> v & 1)
            if present:
                if not self.is_complete(nbr, common):
                    continue
            elif not self.separates(nbr, u, v, common):
                continue
            bu, bv = 1 << u, 1 << v
            delta = (self.h(common | bu | bv) + self.h(common)
                     - self.h(common | bu) - self.h(common | bv) + self.log_prior_odds)
            if present:
                delta = -delta
            if log_u[t] >= delta:
                continue
            accepted += 1
            mean_sum += mean * overlap(last_change, t)
            last_change = t
            sign = -1.0 if present else 1.0
            for mask, factor in ((common | bu | bv, sign), (common, sign),
                                 (common | bu, -sign), (common | bv, -sign)):
                if mask:
                    idx, term = self.mean_term(mask)
                    mean[np.ix_(idx, idx)] += factor * term
            if present:
                inclusion[u, v] += overlap(int(since[u, v]), t)
                nbr[u] &= ~bv
                nbr[v] &= ~bu
            else:
                since[u, v] = t
                nbr[u] |= bv
                nbr[v] |= bu
        mean_sum += mean * overlap(last_change, n_iter)
        adjacency = np.zeros((p, p), dtype=bool)
        for i in range(p):
            for j in _members(nbr[i]):
                adjacency[i, j] = True
        final = np.triu(adjacency, 1)
        inclusion[final] += [overlap(int(s), n_iter) for s in since[final]]
        inclusion = inclusion + inclusion.T
        return {
            "inclusion": inclusion / kept,
            "mean_precision": mean_sum / kept,
            "acceptance_rate": accepted / n_iter,
            "final_graph": adjacency,
            "final_mean": mean,
        }


def _random_tree(p: int, rng: np.random.Generator) -> list[int]:
    """Neighbour masks of a uniformly random labelled tree (from a Pruefer sequence)."""
    nbr = [0] * p
    if p == 2:
        return [2, 1]
    sequence = list(rng.integers(p, size=p - 2))
    degree = [1] * p
    for v in sequence:
        degree[v] += 1
    for v in sequence:
        leaf = min(u for u in range(p) if degree[u] == 1)
        nbr[leaf] |= 1 << int(v)
        nbr[int(v)] |= 1 << leaf
        degree[leaf] -= 1
        degree[v] -= 1
    u, w = (x for x in range(p) if degree[x] == 1)
    nbr[u] |= 1 << w
    nbr[w] |= 1 << u
    return nbr


def _rhat(freqs: np.ndarray, n: int) -> float:
    """Gelman-Rubin PSRF of Bernoulli indicators from per-chain frequencies (chains x
    edges), largest over edges whose indicator varies."""
    within = freqs * (1 - freqs) * n / max(n - 1, 1)
    W = within.mean(axis=0)
    B = n * freqs.var(axis=0, ddof=1)
    varies = (W > 0) | (B > 0)
    if not varies.any():
        return 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = ((n - 1) / n * W + B / n) / W
    ratio = ratio[varies]
    if np.any(~np.isfinite(ratio)):
        return math.inf
    return float(np.sqrt(ratio.max()))


# ---------------------------------------------------------------------------- estimator


class GWishartGraph(PostProcessingEstimator):
    """Bayesian Gaussian graphical model (G-Wishart prior, decomposable graphs) fitted to
    a noisy data release by Metropolis-Hastings over graphs.

    See :mod:`dpggm.estimators.gwishart` for the model, the sampler and the restriction
    of the chain to decomposable graphs.

    Parameters
    ----------
    release : NoisyRelease or dict, optional
        The release (or its ``to_json_metadata()`` dictionary); its noise scale is
        corrected for and its guarantee becomes ``privacy_``.
    noise_sigma : float, optional
        The release's noise scale (``>= 0``); may be omitted when ``release`` is given.
    discrete : bool, optional
        Discrete Gaussian noise (default: as recorded in ``release``, else False).
    grid : float, optional
        Lattice step of a discrete release (default: as recorded in ``release``).
    assume_centered : bool, default=False
        Use ``X~^T X~`` as the scatter (``n`` degrees of freedom) instead of centering the
        noisy data (``n - 1``).
    b : float, default=3.0
        G-Wishart degrees of freedom of the prior, ``> 2``.
    prior_scale : float, default=1.0
        The prior's ``D`` is ``prior_scale * I``; it should match the data's units.
    edge_prior : float, default=0.5
        Prior probability of each edge, in (0, 1) (restricted to decomposable graphs).
    n_iter : int, default=20000
        Metropolis-Hastings iterations per chain (one proposed edge toggle each).
    burn_in : int, optional
        Iterations discarded at the start of each chain; default ``n_iter // 2``.
    n_chains : int, default=2
        Independent chains (``>= 2`` for the convergence diagnostic).
    convergence_tol : float, default=0.1
        Warn when two chains' inclusion probabilities of some edge differ by more.
    random_state : None, int, numpy Generator or "secure", default=None
        Seeds the chains (the release's privacy does not depend on it).

    Attributes
    ----------
    edge_probabilities_ : ndarray of shape (p, p)
        Posterior edge-inclusion probabilities (zero diagonal), pooled over chains.
    chain_edge_probabilities_ : ndarray of shape (n_chains, p, p)
    adjacency_ : ndarray of bool, shape (p, p)
        Median-probability graph: inclusion probability > 0.5.
    precision_ : ndarray of shape (p, p)
        Posterior mean of the precision matrix, averaged over the sampled graphs.
    covariance_ : ndarray of shape (p, p)
        ``inv(precision_)``.
    corrected_covariance_ : ndarray of shape (p, p)
        The bias-corrected covariance before repair.
    scatter_ : ndarray of shape (p, p)
        ``U = m S^`` after repair.
    degrees_of_freedom_ : int
        ``m``.
    noise_variance_ : float
    solver_ : SolverResult
        The sampler's outcome: ``estimate`` (``precision_``), ``iterations`` (per chain),
        ``converged`` (the chains agree within ``convergence_tol``; ``None`` with one
        chain) and, in ``extra`` (readable as attributes), ``max_abs_diff``, ``rhat_max``,
        ``acceptance_rate`` (per chain), ``n_chains``, ``burn_in``.
    n_samples_, n_features_in_ : int
    privacy_ : PrivacyGuarantee or PostProcessingRecord

    Privacy
    -------
    Post-processing of the release only: consumes no budget; ``privacy_`` is the
    release's guarantee (or, without ``release``, a record saying it is not known here).

    Examples
    --------
    >>> import numpy as np
    >>> from dpggm.mechanisms.bounds import RowNorm
    >>> from dpggm.mechanisms.publish import publish
    >>> X = np.random.default_rng(0).normal(size=(300, 4))
    >>> release = publish(X, bounds=RowNorm(10.0), sigma=0.3, random_state=0)
    >>> est = GWishartGraph(release=release, n_iter=2000, random_state=0).fit(release.data)
    >>> est.edge_scores().shape
    (4, 4)
    """

    _constraints = {
        "release": RELEASE,
        "noise_sigma": Optional(Interval(0, None, closed="left")),
        "discrete": Optional(FLAG),
        "grid": Optional(Interval(0, None)),
        "assume_centered": FLAG,
        "b": Interval(2, None),
        "prior_scale": Interval(0, None),
        "edge_prior": fraction(),
        "n_iter": Interval(1, None, closed="left", integer=True),
        "burn_in": Optional(Interval(0, None, closed="left", integer=True)),
        "n_chains": Interval(1, None, closed="left", integer=True),
        "convergence_tol": Interval(0, 1, closed="right"),
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        *,
        release: Any = None,
        noise_sigma: float | None = None,
        discrete: bool | None = None,
        grid: float | None = None,
        assume_centered: bool = False,
        b: float = 3.0,
        prior_scale: float = 1.0,
        edge_prior: float = 0.5,
        n_iter: int = 20000,
        burn_in: int | None = None,
        n_chains: int = 2,
        convergence_tol: float = 0.1,
        random_state: Any = None,
    ) -> None:
        self.release = release
        self.noise_sigma = noise_sigma
        self.discrete = discrete
        self.grid = grid
        self.assume_centered = assume_centered
        self.b = b
        self.prior_scale = prior_scale
        self.edge_prior = edge_prior
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.n_chains = n_chains
        self.convergence_tol = convergence_tol
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> GWishartGraph:
        """Sample graphs from the posterior given the released records.

        Parameters
        ----------
        X : array-like of shape (n, p), DataFrame, or path of a CSV file
            The released (noisy) records.
        y : ignored

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Invalid parameters or data, ``burn_in >= n_iter``, or noise parameters that
            disagree with ``release``.
        """
        return super().fit(X, y)

    def _settings(self) -> dict[str, Any]:
        settings = self._validate_params()
        burn_in = self.n_iter // 2 if self.burn_in is None else int(self.burn_in)
        if burn_in >= self.n_iter:
            raise ValueError(
                f"burn_in must be smaller than n_iter={self.n_iter}; got burn_in={burn_in}"
            )
        return {**settings, "burn_in": burn_in}

    def _noise(self, settings: dict[str, Any]) -> NoiseDescription:
        return release_noise(release=self.release, noise_sigma=self.noise_sigma,
                             discrete=self.discrete, grid=self.grid)

    def _read(self, X: Any, settings: dict[str, Any], noise: NoiseDescription) -> Any:
        values, columns = as_matrix(X, name="X")
        check_release_data(self.release, values, columns)
        n, p = values.shape
        if p < 2:
            raise too_few_variables(p, minimum=2, who=type(self).__name__)
        if (n if self.assume_centered else n - 1) < 1:
            raise too_few_records(n)
        return RecordMatrix(values, columns)

    def _solve(self, X: Any, settings: dict[str, Any], noise: NoiseDescription, data: Any) -> None:
        """Sample graphs from the posterior given the released records."""
        values, columns = data.values, data.columns
        n, p = values.shape
        burn_in = settings["burn_in"]
        df = n if self.assume_centered else n - 1
        variance = noise.variance
        corrected = bias_corrected_covariance(
            values, noise_variance=variance, assume_centered=bool(self.assume_centered)
        )
        repaired, self.diagonal_floored_, self.projected_ = repair_corrected(corrected, variance)
        scatter = df * repaired
        D = float(self.prior_scale) * np.eye(p)
        D_post = D + scatter
        q = float(self.edge_prior)
        rng = check_random_state(self.random_state)
        seeds = rng.integers(2**63 - 1, size=int(self.n_chains))
        runs = []
        chain = _Chain(D=D, D_post=D_post, b=float(self.b), b_post=float(self.b) + df,
                       log_prior_odds=math.log(q / (1 - q)))
        for index, seed in enumerate(seeds):
            chain_rng = np.random.default_rng(int(seed))
            start = [0] * p if index % 2 == 0 else _random_tree(p, chain_rng)
            runs.append(chain.run(start=start, n_iter=int(self.n_iter), burn_in=burn_in,
                                  rng=chain_rng))
        per_chain = np.stack([r["inclusion"] for r in runs])
        probabilities = per_chain.mean(axis=0)
        np.fill_diagonal(probabilities, 0.0)
        precision = np.mean([r["mean_precision"] for r in runs], axis=0)
        precision = (precision + precision.T) / 2
        iu = np.triu_indices(p, 1)
        freqs = per_chain[:, iu[0], iu[1]]
        if len(runs) >= 2:
            spread = freqs.max(axis=0) - freqs.min(axis=0)
            max_abs_diff = float(spread.max())
            rhat = _rhat(freqs, int(self.n_iter) - burn_in)
        else:
            max_abs_diff, rhat = math.nan, math.nan
        converged = bool(max_abs_diff <= self.convergence_tol) if len(runs) >= 2 else None
        self.solver_ = SolverResult(
            estimate=precision, iterations=int(self.n_iter), converged=converged,
            message="Metropolis-Hastings over decomposable graphs",
            extra={
                "max_abs_diff": max_abs_diff,
                "rhat_max": rhat,
                "acceptance_rate": [r["acceptance_rate"] for r in runs],
                "n_chains": len(runs),
                "n_iter": int(self.n_iter),
                "burn_in": burn_in,
            },
        )
        if converged is False:
            warnings.warn(
                f"GWishartGraph: the chains disagree on some edge's inclusion probability by "
                f"{max_abs_diff:.3g} > convergence_tol={self.convergence_tol}; increase n_iter",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.edge_probabilities_ = probabilities
        self.chain_edge_probabilities_ = per_chain
        self.corrected_covariance_ = corrected
        self.scatter_ = scatter
        self.degrees_of_freedom_ = df
        self.noise_variance_ = variance
        self.noise_sigma_ = noise.std
        guarantee = published_guarantee(self.release)
        privacy = guarantee if guarantee is not None else PostProcessingRecord(
            mechanism="G-Wishart structure learning on released noisy data (post-processing)",
            reason=(
                "post-processing of a noisy data release whose privacy guarantee is not "
                "known here (pass release=... to carry it); this step consumes no budget"
            ),
            noise=noise_record(noise),
        )
        self._set_fitted(
            X, n_samples=n, n_features=p, columns=columns, privacy=privacy,
            precision=precision, covariance=np.linalg.inv(precision),
            adjacency=probabilities > 0.5,
        )

    def edge_scores(self) -> np.ndarray:
        """Posterior edge-inclusion probabilities (zero diagonal): scores for ROC curves."""
        return self.edge_probabilities_.copy()

