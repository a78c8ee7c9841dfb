"""Synthetic Gaussian data with a known covariance, precision matrix and graph.

Every generator draws the ground truth first and then ``n_samples`` rows from
``N(0, covariance)``, all from one generator built by
:func:`dpggm.mechanisms.random.check_random_state`, so a fixed ``random_state`` reproduces
both. The generators follow the simulation designs of the source papers:

- :func:`make_precision_model`: Su, Guo, Zhang, models 1-4 (dense, full, AR(2), Cai et al.);
- :func:`make_uut_precision`: Wang, Huai, Xu, precision ``U Uᵀ`` with sparse ±1 ``U``;
- :func:`make_chain`: Guo et al., 50-node chain;
- :func:`make_sparse_precision`: Guo et al., 1000 nodes, off-diagonal 0.1 at a sparsity;
- :func:`make_sparse_covariance`: Wang, Xu, He, sparse covariance ``(Ũ + 50 I)/200``.

The data are synthetic and public; none of these functions touches private data or
consumes privacy budget.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.linalg

from dpggm.exceptions import NumericalError
from dpggm.mechanisms.random import check_random_state
from dpggm.solvers.psd import extreme_eigenvalue

__all__ = [
    "make_questionnaire",
    "SyntheticData",
    "make_chain",
    "make_raw_chain",
    "make_precision_model",
    "make_uut_precision",
    "make_sparse_covariance",
    "make_sparse_precision",
    "sample_gaussian",
]


@dataclass(frozen=True, eq=False)
class SyntheticData:
    """A sample together with the distribution it was drawn from.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
        Rows drawn i.i.d. from ``N(0, covariance)`` (then scaled to unit ℓ2 norm when
        ``rows_normalized`` is true).
    covariance : ndarray of shape (n_features, n_features)
        The true covariance Σ of the Gaussian the rows were drawn from (before any row
        normalisation). Read-only.
    precision : ndarray of shape (n_features, n_features)
        The true precision matrix Θ = Σ⁻¹. Read-only.
    adjacency : ndarray of bool, shape (n_features, n_features)
        The true conditional-independence graph: ``adjacency[i, j]`` is true when
        ``i != j`` and ``Θ_ij != 0``. Symmetric, false on the diagonal. Read-only.
    name : str
        Short identifier, e.g. ``"private_precision-model3"``.
    description : str
        One-sentence description of the design.
    rows_normalized : bool
        Whether each row of ``X`` was rescaled to unit ℓ2 norm after sampling.

    Notes
    -----
    The truth matrices are read-only so that repeated experiments cannot corrupt them;
    copy them before modifying. ``X`` is an ordinary writable array.
    """

    X: np.ndarray
    covariance: np.ndarray
    precision: np.ndarray
    adjacency: np.ndarray
    name: str
    description: str
    rows_normalized: bool = False

    @property
    def n_samples(self) -> int:
        """Number of rows of ``X``."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of columns of ``X``."""
        return int(self.X.shape[1])

    def resample(self, *, n_samples: int, random_state=None) -> SyntheticData:
        """Draw a fresh sample from the same ground truth.

        Parameters
        ----------
        n_samples : int
            Number of rows of the new sample (>= 1).
        random_state : None, int, numpy.random.Generator or "secure"
            Randomness for the new sample.

        Returns
        -------
        SyntheticData
            A copy of this object with a new ``X`` (row-normalised again when
            ``rows_normalized`` is true); the truth matrices are shared.
        """
        X = sample_gaussian(self.covariance, n_samples=n_samples, random_state=random_state)
        if self.rows_normalized:
            X = _normalize_rows(X)
        return dataclasses.replace(self, X=X)


# ---------------------------------------------------------------------------------------
# validation


def _check_int(name: str, value, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}; got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value}")
    return int(value)


def _check_real(
    name: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    constraint = _describe_interval(low, high, low_open, high_open)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite number {constraint}; got {value!r}")
    number = float(value)
    ok = math.isfinite(number)
    if ok and low is not None:
        ok = number > low if low_open else number >= low
    if ok and high is not None:
        ok = number < high if high_open else number <= high
    if not ok:
        raise ValueError(f"{name} must be a finite number {constraint}; got {value!r}")
    return number


def _describe_interval(low, high, low_open, high_open) -> str:
    if low is not None and high is not None:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        return f"in {left}{low}, {high}{right}"
    if low is not None:
        return f"{'>' if low_open else '>='} {low}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high}"
    return ""


# ---------------------------------------------------------------------------------------
# sampling


def sample_gaussian(covariance, *, n_samples: int, random_state=None) -> np.ndarray:
    """Draw rows from ``N(0, covariance)``.

    Parameters
    ----------
    covariance : array_like of shape (p, p)
        Symmetric positive definite covariance matrix.
    n_samples : int
        Number of rows (>= 1).
    random_state : None, int, numpy.random.Generator or "secure"
        Randomness; see :func:`dpggm.mechanisms.random.check_random_state`.

    Returns
    -------
    ndarray of shape (n_samples, p)
        ``Z Lᵀ`` with ``Z`` standard normal and ``L`` the Cholesky factor of
        ``covariance``.

    Raises
    ------
    ValueError
        If ``covariance`` is not a finite symmetric square matrix.
    dpggm.exceptions.NumericalError
        If ``covariance`` is not numerically positive definite.
    """
    n_samples = _check_int("n_samples", n_samples, minimum=1)
    covariance = np.asarray(covariance, dtype=float)
    if covariance.ndim != 2 or covariance.shape[0] != covariance.shape[1] or covariance.size == 0:
        raise ValueError(
            f"covariance must be a non-empty square 2-D array; got shape {covariance.shape}"
        )
    if not np.all(np.isfinite(covariance)):
        raise ValueError("covariance must contain only finite values")
    scale = max(float(np.max(np.abs(covariance))), np.finfo(float).tiny)
    if not np.allclose(covariance, covariance.T, rtol=0.0, atol=1e-10 * scale):
        raise ValueError("covariance must be symmetric")
    try:
        lower = np.linalg.cholesky(covariance)
    except np.linalg.LinAlgError as exc:
        raise NumericalError(
            "covariance must be positive definite; its Cholesky factorisation failed"
        ) from exc
    rng = check_random_state(random_state)
    standard = rng.standard_normal((n_samples, covariance.shape[0]))
    return standard @ lower.T


def _normalize_rows(X: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    # A zero row has no direction; leaving it at zero keeps it inside the unit ball.
    return X / np.where(norms > 0.0, norms, 1.0)


def _inverse_pd(matrix: np.ndarray, what: str) -> np.ndarray:
    try:
        factor = scipy.linalg.cho_factor(matrix, lower=True)
    except np.linalg.LinAlgError as exc:
        raise NumericalError(f"the {what} is not numerically positive definite") from exc
    inverse = scipy.linalg.cho_solve(factor, np.eye(matrix.shape[0]))
    return (inverse + inverse.T) / 2.0


def _read_only(array: np.ndarray) -> np.ndarray:
    array = np.array(array, copy=True)
    array.setflags(write=False)
    return array


def _finish(
    *,
    precision: np.ndarray,
    covariance: np.ndarray,
    adjacency: np.ndarray,
    n_samples: int,
    rng: np.random.Generator,
    name: str,
    description: str,
    normalize_rows: bool = False,
) -> SyntheticData:
    X = sample_gaussian(covariance, n_samples=n_samples, random_state=rng)
    if normalize_rows:
        X = _normalize_rows(X)
    adjacency = np.asarray(adjacency, dtype=bool).copy()
    np.fill_diagonal(adjacency, False)
    return SyntheticData(
        X=X,
        covariance=_read_only(covariance),
        precision=_read_only(precision),
        adjacency=_read_only(adjacency),
        name=name,
        description=description,
        rows_normalized=bool(normalize_rows),
    )


def _from_precision(precision: np.ndarray, **kwargs) -> SyntheticData:
    precision = (precision + precision.T) / 2.0
    covariance = _inverse_pd(precision, "precision matrix")
    return _finish(precision=precision, covariance=covariance, **kwargs)


def _random_symmetric_pattern(p: int, probability: float, rng: np.random.Generator) -> np.ndarray:
    """Symmetric boolean matrix, zero diagonal, each pair i < j present independently."""
    upper = np.triu(rng.random((p, p)) < probability, k=1)
    return upper | upper.T


def _random_symmetric_pairs(p: int, n_pairs: int, rng: np.random.Generator) -> np.ndarray:
    """Symmetric boolean matrix, zero diagonal, exactly ``n_pairs`` pairs i < j chosen."""
    rows, cols = np.triu_indices(p, k=1)
    chosen = rng.choice(rows.size, size=n_pairs, replace=False)
    pattern = np.zeros((p, p), dtype=bool)
    pattern[rows[chosen], cols[chosen]] = True
    return pattern | pattern.T


# ---------------------------------------------------------------------------------------
# Su, Guo & Zhang


_MODEL4_MAX_DRAWS = 100


def make_precision_model(
    model: int,
    *,
    n_samples: int,
    n_features: int = 100,
    inner_dimension: int = 10_000,
    random_state=None,
) -> SyntheticData:
    """The four precision-matrix models of Su, Guo and Zhang.

    Parameters
    ----------
    model : {1, 2, 3, 4}
        1. ``Θ = W Wᵀ / inner_dimension`` with ``W`` a ``p × inner_dimension`` standard
           normal matrix (unstructured, dense).
        2. ``θ_ii = 1``, ``θ_ij = 0.5`` for every ``i != j`` (structured, dense).
        3. AR(2): ``θ_ii = 1``, ``θ_i,i±1 = 0.5``, ``θ_i,i±2 = 0.25`` (structured,
           sparse). The paper prints ``θ_ii = 0``, which is not positive definite; ``1``
           is the intended value.
        4. Cai et al.: ``Θ₀ = A + a I`` where each off-diagonal pair of ``A`` is ``0.5``
           with probability 0.1 (symmetric, zero diagonal) and ``a`` solves
           ``(λ_max(A) + a)/(λ_min(A) + a) = p`` exactly, i.e.
           ``a = (λ_max − p λ_min)/(p − 1)``; ``Θ₀`` is then rescaled to unit diagonal.
           Its diagonal is constant, so the rescaling divides by ``a`` and keeps
           ``cond(Θ) = p``. A draw with ``A = 0`` (possible only for tiny ``p``) cannot
           reach condition number ``p`` and is redrawn.
    n_samples : int
        Number of rows (>= 1).
    n_features : int, default 100
        Dimension ``p`` (the paper uses 100; 20 for its ROC curves). Model 4 needs
        ``p >= 2``.
    inner_dimension : int, default 10000
        Number of columns of ``W`` in model 1 (the paper's 10000). Must be at least
        ``n_features`` so that ``Θ`` is positive definite; a smaller value speeds up
        tests. Ignored by the other models.
    random_state : None, int, numpy.random.Generator or "secure"
        Randomness for ``W`` / ``A`` and for the sample.

    Returns
    -------
    SyntheticData
        Rows from ``N(0, Θ⁻¹)`` with the truth attached.

    Notes
    -----
    The paper also normalises rows by the data's largest norm; that is a data-dependent
    bound and is left to the caller (declare a public bound instead).

    Privacy: synthetic public data; consumes no budget.
    """
    if (
        isinstance(model, bool)
        or not isinstance(model, numbers.Integral)
        or model not in (1, 2, 3, 4)
    ):
        raise ValueError(f"model must be one of 1, 2, 3, 4; got {model!r}")
    n_samples = _check_int("n_samples", n_samples, minimum=1)
    p = _check_int("n_features", n_features, minimum=2 if model == 4 else 1)
    rng = check_random_state(random_state)
    common = {"n_samples": n_samples, "rng": rng, "name": f"private_precision-model{int(model)}"}

    if model == 1:
        inner = _check_int("inner_dimension", inner_dimension, minimum=1)
        if inner < p:
            raise ValueError(
                "inner_dimension must be >= n_features for W Wᵀ to be positive definite; "
                f"got inner_dimension={inner}, n_features={p}"
            )
        W = rng.standard_normal((p, inner))
        precision = W @ W.T / inner
        return _from_precision(
            precision,
            adjacency=precision != 0.0,
            description=f"dense precision W Wᵀ/{inner}, W standard normal {p}×{inner}",
            **common,
        )

    if model == 2:
        precision = np.full((p, p), 0.5)
        np.fill_diagonal(precision, 1.0)
        return _from_precision(
            precision,
            adjacency=np.ones((p, p), dtype=bool),
            description="full precision: 1 on the diagonal, 0.5 elsewhere",
            **common,
        )

    if model == 3:
        offsets = np.subtract.outer(np.arange(p), np.arange(p))
        distance = np.abs(offsets)
        precision = np.select([distance == 0, distance == 1, distance == 2], [1.0, 0.5, 0.25], 0.0)
        return _from_precision(
            precision,
            adjacency=(distance >= 1) & (distance <= 2),
            description="AR(2) precision: 1 on the diagonal, 0.5 and 0.25 on the first two "
            "off-diagonals",
            **common,
        )

    for _ in range(_MODEL4_MAX_DRAWS):
        pattern = _random_symmetric_pattern(p, 0.1, rng)
        if pattern.any():
            break
    else:
        raise NumericalError(
            f"model 4 drew an empty graph {_MODEL4_MAX_DRAWS} times for n_features={p}; "
            "use a larger n_features"
        )
    A = np.where(pattern, 0.5, 0.0)
    eigenvalues = scipy.linalg.eigvalsh(A)
    lam_min, lam_max = float(eigenvalues[0]), float(eigenvalues[-1])
    shift = (lam_max - p * lam_min) / (p - 1)
    precision = (A + shift * np.eye(p)) / shift
    return _from_precision(
        precision,
        adjacency=pattern,
        description="Cai et al. precision: A + aI with A_ij = 0.5 w.p. 0.1, "
        f"cond = {p}, unit diagonal",
        **common,
    )


# ---------------------------------------------------------------------------------------
# Wang, Huai & Xu


def make_uut_precision(
    *,
    n_samples: int,
    n_features: int = 400,
    density: float = 0.005,
    normalize_rows: bool = False,
    random_state=None,
) -> SyntheticData:
    """Precision ``U Uᵀ`` with ``U`` the identity plus sparse ±1 entries (Wang, Huai, Xu).

    The paper only says that ``U`` is sparse with ±1 entries. To make ``U Uᵀ`` positive
    definite for every draw, ``U = P (I + N) Pᵀ`` where ``N`` is strictly upper
    triangular with each entry ``±1`` (equal probability) with probability ``density``
    and ``P`` is a uniformly random permutation. Then ``det U = 1``, so ``U`` is
    invertible and ``U Uᵀ`` is positive definite; the permutation removes the ordering
    the triangular form would otherwise impose on the variables.

    Parameters
    ----------
    n_samples : int
        Number of rows (>= 1). The paper uses ``n = r·p`` with ``r ∈ {0.5, 1, 1.5}``.
    n_features : int, default 400
        Dimension ``p`` (the paper's 400).
    density : float, default 0.005
        Probability that each of the ``p(p−1)/2`` strictly-upper entries of ``N`` is
        non-zero, in [0, 1]. The conditioning of ``U Uᵀ`` worsens quickly with the
        number of non-zeros per row (products of ±1 entries accumulate in ``U⁻¹``); the
        default gives about one non-zero per row of ``U`` at ``p = 400``.
    normalize_rows : bool, default False
        Rescale every sampled row to unit ℓ2 norm, as the paper does before applying its
        ``B = 1`` mechanisms. ``covariance`` and ``precision`` then describe the
        Gaussian before normalisation, not the distribution of the returned rows.
    random_state : None, int, numpy.random.Generator or "secure"
        Randomness for ``U`` and for the sample.

    Returns
    -------
    SyntheticData

    Notes
    -----
    Privacy: synthetic public data; consumes no budget.
    """
    n_samples = _check_int("n_samples", n_samples, minimum=1)
    p = _check_int("n_features", n_features, minimum=1)
    density = _check_real("density", density, low=0.0, high=1.0)
    rng = check_random_state(random_state)
    present = np.triu(rng.random((p, p)) < density, k=1)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(p, p))
    U = np.eye(p) + np.where(present, signs, 0.0)
    order = rng.permutation(p)
    U = U[np.ix_(order, order)]
    precision = U @ U.T
    # The graph is the structural support of U Uᵀ: cancellations to exactly zero are
    # possible with ±1 entries and the floating-point product records them exactly.
    return _from_precision(
        precision,
        adjacency=precision != 0.0,
        n_samples=n_samples,
        rng=rng,
        name="covariance_perturbation-uut",
        description=f"precision U Uᵀ, U = identity plus sparse ±1 entries (density {density})",
        normalize_rows=bool(normalize_rows),
    )


# ---------------------------------------------------------------------------------------
# Guo et al.


def make_chain(*, n_samples: int, n_features: int = 50, random_state=None) -> SyntheticData:
    """Chain graph: ``θ_ii = 1``, ``θ_i,i±1 = 0.5`` (Guo et al., after Yuan & Lin).

    Parameters
    ----------
    n_samples : int
        Number of rows (>= 1); the paper uses 50, 500 and 5000.
    n_features : int, default 50
        Number of nodes.
    random_state : None, int, numpy.random.Generator or "secure"
        Randomness for the sample.

    Returns
    -------
    SyntheticData
        ``adjacency`` is the path ``0 — 1 — … — p−1``.

    Notes
    -----
    Privacy: synthetic public data; consumes no budget.
    """
    n_samples = _check_int("n_samples", n_samples, minimum=1)
    p = _check_int("n_features", n_features, minimum=1)
    rng = check_random_state(random_state)
    off = np.full(p - 1, 0.5)
    precision = np.eye(p) + np.diag(off, 1) + np.diag(off, -1)
    adjacency = np.zeros((p, p), dtype=bool)
    index = np.arange(p - 1)
    adjacency[index, index + 1] = True
    adjacency[index + 1, index] = True
    return _from_precision(
        precision,
        adjacency=adjacency,
        n_samples=n_samples,
        rng=rng,
        name="noisy_data-chain",
        description=f"chain graph on {p} nodes: 1 on the diagonal, 0.5 on the first off-diagonal",
    )


def make_sparse_precision(
    *,
    n_samples: int,
    n_features: int = 1000,
    sparsity: float = 0.99,
    off_diagonal: float = 0.1,
    diagonal: str = "eigenvalue",
    margin: float = 0.1,
    random_state=None,
) -> SyntheticData:
    """Random sparse precision matrix with constant off-diagonal entries (Guo et al.).

    Exactly ``round((1 − sparsity)·p(p−1)/2)`` pairs ``i < j``, chosen uniformly, get
    ``θ_ij = θ_ji = off_diagonal``; every other off-diagonal entry is zero. ``sparsity``
    is therefore the fraction of zero *off-diagonal* entries (the paper counts the whole
    matrix; the difference is ``p`` diagonal entries). The diagonal is constant and just
    large enough for positive definiteness:

    - ``"eigenvalue"`` (default): ``θ_ii = max(0, −λ_min(A)) + margin`` where ``A`` is
      the off-diagonal part, so ``λ_min(Θ) = margin`` when ``λ_min(A) <= 0``;
    - ``"row_sum"``: the paper's rule ``θ_ii = Σ_{j≠i} |θ_ij| + margin`` (per row;
      strict diagonal dominance, so positive definite for any ``margin > 0``).

    Parameters
    ----------
    n_samples : int
        Number of rows (>= 1); the paper uses 10 000.
    n_features : int, default 1000
        Number of nodes.
    sparsity : float, default 0.99
        Fraction of zero off-diagonal entries, in [0, 1]; the paper uses 0.99, 0.98,
        0.95 and 0.90.
    off_diagonal : float, default 0.1
        Value of every non-zero off-diagonal entry (non-zero, finite).
    diagonal : {"eigenvalue", "row_sum"}, default "eigenvalue"
        How the diagonal is chosen (see above).
    margin : float, default 0.1
        Positive amount added to the diagonal beyond the positive-definiteness limit.
    random_state : None, int, numpy.random.Generator or "secure"
        Randomness for the graph and the sample.

    Returns
    -------
    SyntheticData

    Notes
    -----
    Only the smallest eigenvalue of ``A`` is computed (``O(p²)`` memory, one partial
    symmetric eigensolve); inverting ``Θ`` for the covariance is ``O(p³)``, about a
    tenth of a second at ``p = 1000``.

    Privacy: synthetic public data; consumes no budget.
    """
    n_samples = _check_int("n_samples", n_samples, minimum=1)
    p = _check_int("n_features", n_features, minimum=1)
    sparsity = _check_real("sparsity", sparsity, low=0.0, high=1.0)
    off_diagonal = _check_real("off_diagonal", off_diagonal)
    if off_diagonal == 0.0:
        raise ValueError(f"off_diagonal must be a finite non-zero number; got {off_diagonal!r}")
    margin = _check_real("margin", margin, low=0.0, low_open=True)
    if diagonal not in ("eigenvalue", "row_sum"):
        raise ValueError(f"diagonal must be 'eigenvalue' or 'row_sum'; got {diagonal!r}")
    rng = check_random_state(random_state)
    n_off = p * (p - 1) // 2
    n_pairs = int(round((1.0 - sparsity) * n_off))
    pattern = _random_symmetric_pairs(p, n_pairs, rng)
    A = np.where(pattern, off_diagonal, 0.0)
    if diagonal == "eigenvalue":
        lam_min = (
            extreme_eigenvalue(A, which="smallest")
            if p > 1
            else 0.0
        )
        diag_values = np.full(p, max(0.0, -lam_min) + margin)
    else:
        diag_values = np.abs(A).sum(axis=1) + margin
    precision = A + np.diag(diag_values)
    return _from_precision(
        precision,
        adjacency=pattern,
        n_samples=n_samples,
        rng=rng,
        name="noisy_data-sparse",
        description=(
            f"random sparse precision on {p} nodes, {n_pairs} edges of weight {off_diagonal}, "
            f"diagonal by '{diagonal}' rule with margin {margin}"
        ),
    )


# ---------------------------------------------------------------------------------------
# Wang, Xu & He


def make_sparse_covariance(
    *,
    n_samples: int,
    n_features: int = 100,
    sparsity_ratio: float = 0.2,
    entries: str = "uniform",
    shift: float = 50.0,
    scale: float = 200.0,
    random_state=None,
) -> SyntheticData:
    """Sparse covariance ``U = (Ũ + shift·I)/scale`` (Wang, Xu, He; shift 50, scale 200).

    ``Ũ`` is symmetric with zero diagonal and ``2·round(sparsity_ratio·p²/2)``
    off-diagonal non-zeros (the paper's "``sr × p × p`` non-zero entries"), placed on
    uniformly chosen pairs ``i < j`` and mirrored. The paper does not say what the
    non-zero values are; this function draws them i.i.d.

    - ``"uniform"`` (default): uniform on [−1, 1];
    - ``"sign"``: ±1 with equal probability.

    Parameters
    ----------
    n_samples : int
        Number of rows (>= 1).
    n_features : int, default 100
        Dimension ``p``; the paper uses 50, 100, 200 and 500.
    sparsity_ratio : float, default 0.2
        Fraction ``sr`` of entries of ``Ũ`` that are non-zero; the paper uses 0.1, 0.2,
        0.3 and 0.5. Must satisfy ``sr·p² <= p(p−1)`` (there are only that many
        off-diagonal positions).
    entries : {"uniform", "sign"}, default "uniform"
        Distribution of the non-zero values of ``Ũ``.
    shift, scale : float, default 50 and 200
        The paper's ``λ`` and ``c``.
    random_state : None, int, numpy.random.Generator or "secure"
        Randomness for ``Ũ`` and for the sample.

    Returns
    -------
    SyntheticData
        ``covariance`` is ``U`` (sparse); ``precision`` is ``U⁻¹`` (generally dense);
        ``adjacency`` is the graph of ``U⁻¹``, with entries below ``1e-12·max|U⁻¹|``
        treated as zero because ``U⁻¹`` is computed numerically.

    Raises
    ------
    dpggm.exceptions.NumericalError
        If ``U`` is not positive definite (``shift`` too small for this ``p``,
        ``sparsity_ratio`` and ``entries``: random ±1 matrices with ``k`` non-zeros per
        row have spectral radius about ``2√k``). Lower ``sparsity_ratio``, use
        ``"uniform"`` entries or raise ``shift``.

    Notes
    -----
    Privacy: synthetic public data; consumes no budget. The paper scales by 200 so that
    rows have ℓ2 norm below 1 "with high probability". That does not hold: ``E‖x‖² =
    tr(U) = p·shift/scale``, i.e. ``p/4`` with the paper's constants, so for ``p = 100``
    typical rows have norm about 5. Rows must be clipped to the declared norm bound
    before a private mechanism is applied, and the clipping changes the covariance.
    """
    n_samples = _check_int("n_samples", n_samples, minimum=1)
    p = _check_int("n_features", n_features, minimum=1)
    sparsity_ratio = _check_real("sparsity_ratio", sparsity_ratio, low=0.0, high=1.0)
    if entries not in ("uniform", "sign"):
        raise ValueError(f"entries must be 'uniform' or 'sign'; got {entries!r}")
    shift = _check_real("shift", shift)
    scale = _check_real("scale", scale, low=0.0, low_open=True)
    n_pairs = int(round(sparsity_ratio * p * p / 2.0))
    n_off = p * (p - 1) // 2
    if n_pairs > n_off:
        raise ValueError(
            "sparsity_ratio must satisfy sparsity_ratio·p² <= p(p−1), the number of "
            f"off-diagonal positions; got sparsity_ratio={sparsity_ratio} with n_features={p}"
        )
    rng = check_random_state(random_state)
    pattern = _random_symmetric_pairs(p, n_pairs, rng)
    if entries == "uniform":
        values = rng.uniform(-1.0, 1.0, size=(p, p))
    else:
        values = rng.choice(np.array([-1.0, 1.0]), size=(p, p))
    values = np.triu(values, k=1)
    values = values + values.T
    U_tilde = np.where(pattern, values, 0.0)
    covariance = (U_tilde + shift * np.eye(p)) / scale
    lam_min = extreme_eigenvalue(covariance, which="smallest")
    if not lam_min > 0.0:
        raise NumericalError(
            "the covariance (Ũ + shift·I)/scale is not positive definite "
            f"(smallest eigenvalue {lam_min:.3g}) for n_features={p}, "
            f"sparsity_ratio={sparsity_ratio}, entries={entries!r}, shift={shift}; lower "
            "sparsity_ratio, use entries='uniform' or raise shift"
        )
    precision = _inverse_pd(covariance, "covariance (Ũ + shift·I)/scale")
    threshold = 1e-12 * float(np.max(np.abs(precision)))
    return _finish(
        precision=precision,
        covariance=covariance,
        adjacency=np.abs(precision) > threshold,
        n_samples=n_samples,
        rng=rng,
        name="thresholding-sparse-covariance",
        description=(
            f"sparse covariance (Ũ + {shift:g} I)/{scale:g}, Ũ with {2 * n_pairs} off-diagonal "
            f"{entries} non-zeros on {p} variables"
        ),
    )


def make_raw_chain(
    *, n_samples: int = 20000, n_features: int = 10, random_state=None
) -> tuple[pd.DataFrame, np.ndarray]:
    """A chain graph (:func:`make_chain`) in raw, uncentered units of different sizes.

    Column ``j`` has mean ``geomspace(3, 300)[j]`` and scale ``geomspace(0.5, 20)[j]``
    (alternated, so large means meet small scales), as raw measurements would: grams next
    to milligrams. Rescaling columns leaves the graph unchanged.

    Returns
    -------
    frame : DataFrame
        ``n_samples`` rows, columns ``x0 .. x{p-1}``.
    adjacency : ndarray of bool, shape (p, p)
        The true chain.

    Notes
    -----
    Privacy: synthetic public data; consumes no budget.
    """
    base = make_chain(n_samples=n_samples, n_features=n_features, random_state=random_state)
    p = base.X.shape[1]
    means = np.geomspace(3.0, 300.0, p)
    scales = np.geomspace(0.5, 20.0, p)
    # Reverse every other scale so that the largest mean is not always the largest scale.
    scales[1::2] = scales[1::2][::-1]
    standardised = base.X / np.sqrt(np.diag(base.covariance))
    frame = pd.DataFrame(means + scales * standardised, columns=[f"x{j}" for j in range(p)])
    return frame, np.asarray(base.adjacency, dtype=bool)


def make_questionnaire(
    *, n_samples: int = 2400, n_factors: int = 5, items_per_factor: int = 5, levels: int = 6,
    loading: float = 0.8, skew: float = 0.4, random_state=None,
) -> tuple[pd.DataFrame, np.ndarray]:
    """A Likert questionnaire: ``n_factors`` independent latent factors, each measured by
    ``items_per_factor`` items answered on ``1 .. levels`` by cutting a Gaussian.

    Item ``k`` of factor ``f`` is ``loading * F_f + sqrt(1 - loading**2) * E_k`` cut at the
    standard normal quantiles of ``1/levels, 2/levels, ...`` shifted by an item-specific
    offset in ``[-skew, skew]``: some items are answered symmetrically, others lean to the
    lowest or the highest answer (ties, ordinal levels), as real items do. At
    ``skew=0.75`` the most skewed items put about 40 % of the answers on one level.

    Returns
    -------
    frame : DataFrame
        ``n_samples`` rows of integer answers (as floats), columns ``f{f}_q{k}``.
    blocks : ndarray of bool, shape (p, p)
        True between two items of the same factor: where the latent Gaussian's
        conditional-dependence graph can have edges (its items are dependent within a
        factor and independent across factors).

    Notes
    -----
    Privacy: synthetic public data; consumes no budget.
    """
    from scipy.stats import norm

    n_samples = _check_int("n_samples", n_samples, minimum=2)
    n_factors = _check_int("n_factors", n_factors, minimum=1)
    items_per_factor = _check_int("items_per_factor", items_per_factor, minimum=2)
    levels = _check_int("levels", levels, minimum=2)
    loading = _check_real("loading", loading, low=0, high=1, low_open=True, high_open=True)
    skew = _check_real("skew", skew, low=0)
    rng = check_random_state(random_state)
    p = n_factors * items_per_factor
    factors = rng.standard_normal((n_samples, n_factors))
    latent = (loading * np.repeat(factors, items_per_factor, axis=1)
              + math.sqrt(1 - loading**2) * rng.standard_normal((n_samples, p)))
    cuts = norm.ppf(np.arange(1, levels) / levels)
    offsets = np.linspace(-skew, skew, p)[rng.permutation(p)]
    answers = np.empty((n_samples, p))
    for j in range(p):
        answers[:, j] = 1 + np.searchsorted(cuts + offsets[j], latent[:, j])
    names = [f"f{f + 1}_q{k + 1}" for f in range(n_factors) for k in range(items_per_factor)]
    group = np.repeat(np.arange(n_factors), items_per_factor)
    blocks = group[:, None] == group[None, :]
    np.fill_diagonal(blocks, False)
    return pd.DataFrame(answers, columns=names), blocks


# ------------------------------------------------------------------ earlier names


def _renamed(old: str, new: Any) -> Any:
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"{old} is now called {new.__name__}; the old name will be removed",
                      DeprecationWarning, stacklevel=2)
        return new(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated alias of :func:`{new.__name__}` (its earlier name)."
    return alias


#: The generators' earlier names (the papers' numbers in the source collection).
make_seed000_model = _renamed("make_seed000_model", make_precision_model)
make_seed001_uut = _renamed("make_seed001_uut", make_uut_precision)
