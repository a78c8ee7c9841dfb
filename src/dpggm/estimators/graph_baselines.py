"""Graph-recovery baselines the seed-002 paper (Guo et al.) compares with, fitted to a noisy
data release: neighbourhood selection (Meinshausen & Bühlmann 2006) and SCIO (Liu & Luo
2015).

Both work on the covariance of the noisy records, bias-corrected as in
:func:`dpggm.estimators.noisy_glasso.bias_corrected_covariance` (``noise_sigma=0`` gives
the plain, uncorrected methods). The corrected covariance ``S^`` can be indefinite, which
makes the lasso-type problems below unbounded, so it is first replaced by its nearest
positive semidefinite matrix in Frobenius norm (negative eigenvalues set to zero), the
convex-surrogate idea of CoCoLasso (Datta & Zou 2017, who project in the elementwise max
norm instead). Optionally (``standardize=True``, the default) the matrix is scaled to
unit diagonal first; the graph is invariant to that scaling.

The paper's third baseline, the Bayesian G-Wishart sampler, is out of scope here.

Privacy
-------
Post-processing of the release only; consumes no budget.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning
from sklearn.linear_model import Lasso

from dpggm.data.records import RecordMatrix
from dpggm.data.tables import as_matrix, too_few_variables
from dpggm.estimators._base import PostProcessingEstimator
from dpggm.estimators._contract import FLAG, Interval, Optional, Options
from dpggm.estimators.noisy_glasso import (
    PostProcessingRecord,
    bias_corrected_covariance,
)
from dpggm.exceptions import ConvergenceWarning, NumericalError
from dpggm.mechanisms.record import NoiseDescription
from dpggm.solvers import SolverResult
from dpggm.solvers.psd import project_psd

__all__ = ["NeighborhoodSelection", "SCIO"]

RULES = ("and", "or")


class _CorrectedCovarianceMixin(PostProcessingEstimator):
    """The post-processing template for both: noisy records -> bias-corrected, PSD,
    optionally scaled matrix -> :meth:`_fit_graph`."""

    _constraints = {
        "alpha": Interval(0, None),
        "noise_sigma": Interval(0, None, closed="left"),
        "discrete": FLAG,
        "grid": Optional(Interval(0, None)),
        "assume_centered": FLAG,
        "standardize": FLAG,
        "tol": Interval(0, None),
        "max_iter": Interval(1, None, closed="left", integer=True),
    }

    def fit(self, X: Any, y: Any = None) -> Any:
        """Estimate the graph from noisy records.

        Parameters
        ----------
        X : array-like of shape (n, p), DataFrame, or path of a CSV file
        y : ignored

        Returns
        -------
        self
        """
        return super().fit(X, y)

    def _noise(self, settings: dict[str, Any]) -> NoiseDescription:
        sigma, discrete, grid = settings["noise_sigma"], settings["discrete"], settings["grid"]
        if grid is not None and not discrete:
            raise ValueError(
                f"grid applies only to discrete=True; got grid={grid!r} with discrete=False"
            )
        return NoiseDescription(kind="discrete-gaussian" if discrete else "gaussian", std=sigma,
                                grid=grid)

    def _read(self, X: Any, settings: dict[str, Any], noise: NoiseDescription) -> Any:
        values, columns = as_matrix(X, name="X")
        if values.shape[1] < 2:
            raise too_few_variables(values.shape[1], minimum=2, who=type(self).__name__)
        return RecordMatrix(values, columns)

    def _solve(self, X: Any, settings: dict[str, Any], noise: NoiseDescription, data: Any) -> None:
        values, columns = data.values, data.columns
        variance = noise.variance
        S = bias_corrected_covariance(
            values,
            noise_variance=variance,
            assume_centered=settings["assume_centered"],
        )
        S = project_psd(S).estimate
        diagonal = np.diagonal(S).copy()
        if not np.all(diagonal > 0):
            j = int(np.flatnonzero(~(diagonal > 0))[0])
            raise NumericalError(
                f"after bias correction and projection onto the PSD cone, variable "
                f"{columns[j]!r} has no variance left (S^[{j}, {j}] = {diagonal[j]:.3g}); "
                "check noise_sigma against the release"
            )
        scale = np.ones_like(diagonal)
        if settings["standardize"]:
            scale = 1.0 / np.sqrt(diagonal)
            S = S * np.outer(scale, scale)
        self.noise_variance_ = variance
        privacy = PostProcessingRecord(
            mechanism=f"{type(self).__name__} on released noisy data (post-processing)",
            reason=(
                "post-processing of a noisy data release whose privacy guarantee is not "
                "known here; this step consumes no budget"
            ),
            noise={
                "sigma": noise.std,
                "discrete": noise.discrete,
                "grid": noise.grid,
                "variance_subtracted": variance,
            },
        )
        self._set_fitted(X, n_samples=values.shape[0], n_features=values.shape[1],
                         columns=columns, privacy=privacy)
        self._fit_graph(S, scale)

    def _fit_graph(self, S: np.ndarray, scale: np.ndarray) -> None:  # pragma: no cover
        raise NotImplementedError



class NeighborhoodSelection(_CorrectedCovarianceMixin):
    """Neighbourhood selection (Meinshausen & Bühlmann 2006) on a noisy release.

    For every variable ``j`` a lasso regresses it on the others, in covariance form:
    ``min_b ½ bᵀ S^_{-j,-j} b - S^_{-j,j}ᵀ b + alpha ‖b‖₁`` with ``S^`` the bias-corrected,
    PSD-projected (and, by default, unit-diagonal) covariance. Each lasso is solved by
    scikit-learn's :class:`~sklearn.linear_model.Lasso` on a square root of ``S^``
    (``p`` pseudo-records whose Gram matrix is ``p S^``), which gives exactly this
    objective. Pair ``{i, j}`` is an edge when both coefficients are non-zero
    (``rule="and"``) or either is (``rule="or"``).

    Parameters
    ----------
    alpha : float
        ℓ1 penalty of each node-wise lasso (> 0).
    rule : {"and", "or"}, default="and"
    noise_sigma : float, default=0.0
        The release's noise scale; ``0`` fits the uncorrected method.
    discrete : bool, default=False
        Discrete Gaussian release noise (its exact variance is subtracted).
    grid : float, optional
        Lattice step of a discrete release.
    assume_centered : bool, default=False
        Use ``X^T X / n`` instead of centering the noisy data.
    standardize : bool, default=True
        Scale the corrected covariance to unit diagonal first.
    tol : float, default=1e-6
        Tolerance of scikit-learn's coordinate descent.
    max_iter : int, default=10000
        Iteration limit of each lasso.

    Attributes
    ----------
    coef_ : ndarray of shape (p, p)
        Row ``j``: the coefficients of variable ``j`` on the others (zero diagonal), on the
        scale of the (standardised) covariance.
    adjacency_ : ndarray of bool, shape (p, p)
        The estimated graph.
    solver_ : SolverResult
        Whether every node-wise lasso converged.
    privacy_ : PostProcessingRecord
    n_samples_, n_features_in_, feature_names_in_, noise_variance_

    Privacy
    -------
    Post-processing only; consumes no budget.
    """

    _constraints = {"rule": Options(*RULES)}

    def __init__(
        self,
        *,
        alpha: float = 0.1,
        rule: str = "and",
        noise_sigma: float = 0.0,
        discrete: bool = False,
        grid: float | None = None,
        assume_centered: bool = False,
        standardize: bool = True,
        tol: float = 1e-6,
        max_iter: int = 10_000,
    ) -> None:
        self.alpha = alpha
        self.rule = rule
        self.noise_sigma = noise_sigma
        self.discrete = discrete
        self.grid = grid
        self.assume_centered = assume_centered
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter

    def _fit_graph(self, S: np.ndarray, scale: np.ndarray) -> None:
        """A lasso per variable on the corrected covariance, combined by ``rule``."""
        alpha, tol, max_iter = float(self.alpha), float(self.tol), int(self.max_iter)
        p = S.shape[0]
        values, vectors = np.linalg.eigh(S)
        root = (vectors * np.sqrt(np.maximum(values, 0.0) * p)).T
        coef = np.zeros((p, p))
        others = np.ones(p, dtype=bool)
        lasso = Lasso(alpha=alpha, fit_intercept=False, tol=tol, max_iter=max_iter)
        not_converged = 0
        for j in range(p):
            others[:] = True
            others[j] = False
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SklearnConvergenceWarning)
                lasso.fit(root[:, others], root[:, j])
            not_converged += any(issubclass(w.category, SklearnConvergenceWarning) for w in caught)
            coef[j, others] = lasso.coef_
        if not_converged:
            warnings.warn(
                f"{not_converged} of {p} node-wise lassos did not converge within "
                f"max_iter={max_iter}; increase max_iter or tol",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.coef_ = coef
        self.solver_ = SolverResult(estimate=coef, converged=not not_converged,
                                    message=f"{p - not_converged} of {p} node-wise lassos "
                                            "converged")
        support = coef != 0
        self._set_graph((support & support.T) if self.rule == "and" else (support | support.T))

    def edge_scores(self) -> np.ndarray:
        """Symmetric edge scores for ROC curves: ``min(|b_ij|, |b_ji|)`` for the "and"
        rule, ``max`` for "or"."""
        magnitude = np.abs(self.coef_)
        combine = np.minimum if self.rule == "and" else np.maximum
        scores = combine(magnitude, magnitude.T)
        np.fill_diagonal(scores, 0.0)
        return scores


def _soft(values: np.ndarray, threshold: float) -> np.ndarray:
    return np.sign(values) * np.maximum(np.abs(values) - threshold, 0.0)


def scio_columns(
    S: np.ndarray, alpha: float, *, tol: float, max_iter: int
) -> tuple[np.ndarray, int, bool]:
    """Solve ``min_b ½ bᵀ S b - e_iᵀ b + alpha ‖b‖₁`` for every column ``i`` at once by
    cyclic coordinate descent (Liu & Luo 2015).

    Returns the ``p x p`` matrix of solutions (column ``i`` for ``e_i``), the number of
    sweeps and whether the largest coefficient change fell below
    ``tol * max(1, max |b|)``.
    """
    p = S.shape[0]
    diagonal = np.diagonal(S).copy()
    B = np.diag(1.0 / (diagonal + alpha))
    # Gradient of the smooth part, kept exact: G = S B - I.
    G = S @ B - np.eye(p)
    for sweep in range(1, max_iter + 1):
        largest = 0.0
        for j in range(p):
            row = B[j]
            target = row - G[j] / diagonal[j]
            new = _soft(target, alpha / diagonal[j])
            change = new - row
            if np.any(change):
                B[j] = new
                G += np.outer(S[:, j], change)
                largest = max(largest, float(np.max(np.abs(change))))
        if largest <= tol * max(1.0, float(np.max(np.abs(B)))):
            return B, sweep, True
    return B, max_iter, False


class SCIO(_CorrectedCovarianceMixin):
    """Sparse column-wise inverse operator (Liu & Luo 2015) on a noisy release.

    Column ``i`` of the precision estimate solves
    ``min_b ½ bᵀ S^ b - e_iᵀ b + alpha ‖b‖₁`` (coordinate descent) with ``S^`` the
    bias-corrected, PSD-projected (and, by default, unit-diagonal) covariance; the
    estimate is then symmetrised by keeping, for each pair, the entry of smaller
    magnitude: ``w_ij = b_ij 1{|b_ij| <= |b_ji|} + b_ji 1{|b_ij| > |b_ji|}`` (the mean of
    the two when their magnitudes are equal).

    Parameters
    ----------
    alpha : float
        ℓ1 penalty (> 0).
    noise_sigma, discrete, grid, assume_centered, standardize
        As for :class:`NeighborhoodSelection`.
    tol : float, default=1e-6
        Coordinate descent stops when no coefficient changes by more than
        ``tol * max(1, max |b|)`` in a sweep.
    max_iter : int, default=1000
        Maximum number of sweeps.

    Attributes
    ----------
    precision_ : ndarray of shape (p, p)
        Symmetric sparse precision estimate, on the scale of the data.
    adjacency_ : ndarray of bool, shape (p, p)
    solver_ : SolverResult
        The coordinate descent's outcome (``iterations``: sweeps, ``converged``).
    privacy_ : PostProcessingRecord
    n_samples_, n_features_in_, feature_names_in_, noise_variance_

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` sweeps are not enough.

    Privacy
    -------
    Post-processing only; consumes no budget.
    """

    def __init__(
        self,
        *,
        alpha: float = 0.1,
        noise_sigma: float = 0.0,
        discrete: bool = False,
        grid: float | None = None,
        assume_centered: bool = False,
        standardize: bool = True,
        tol: float = 1e-6,
        max_iter: int = 1000,
    ) -> None:
        self.alpha = alpha
        self.noise_sigma = noise_sigma
        self.discrete = discrete
        self.grid = grid
        self.assume_centered = assume_centered
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter

    def _fit_graph(self, S: np.ndarray, scale: np.ndarray) -> None:
        """The column-wise solutions, symmetrised, in data units."""
        alpha, tol, max_iter = float(self.alpha), float(self.tol), int(self.max_iter)
        B, sweeps, converged = scio_columns(S, alpha, tol=tol, max_iter=max_iter)
        if not converged:
            warnings.warn(
                f"SCIO coordinate descent did not converge in max_iter={max_iter} sweeps; "
                "increase max_iter or tol",
                ConvergenceWarning,
                stacklevel=2,
            )
        magnitude = np.abs(B)
        # Equal magnitudes of opposite signs would leave the rule asymmetric; average them.
        symmetric = np.where(
            magnitude < magnitude.T, B, np.where(magnitude > magnitude.T, B.T, (B + B.T) / 2)
        )
        # Undo the unit-diagonal scaling: Theta = D^-1/2 Omega D^-1/2 in data units.
        self.precision_ = symmetric * np.outer(scale, scale)
        self._set_graph(self.precision_ != 0)
        self.solver_ = SolverResult(estimate=self.precision_, iterations=sweeps,
                                    converged=converged)

    def edge_scores(self) -> np.ndarray:
        """``|precision_|`` with a zero diagonal, for ROC curves."""
        scores = np.abs(self.precision_)
        np.fill_diagonal(scores, 0.0)
        return scores
