"""The data user's side of a noisy data release: the bias-corrected graphical lasso of
Guo et al. (their Algorithm 1 and Theorems 4.3 and 4.5; docs/papers.md lists the papers).

A release ``X~ = X + E`` with i.i.d. noise of known variance ``v`` (``sigma^2`` for
Gaussian noise, the exact variance of ``N_Z(0, sigma^2)`` for discrete Gaussian noise,
times ``t^2`` on a grid ``tZ``) has covariance ``Sigma + v I``. Subtracting ``v I`` from the
covariance of the noisy data gives an unbiased estimate ``S^`` of the covariance of the
(clipped) original records, and the graphical lasso on ``S^`` estimates their precision
matrix and graph. ``S^`` is often indefinite; the solver's ``"auto"`` and ``"admm"`` methods
handle that (see :mod:`dpggm.solvers.glasso`).

Centering
--------
The paper assumes centered data and uses ``S~ = X~^T X~ / n``, ``S^ = S~ - v I``; that is
``assume_centered=True``. By default the noisy data are centered by their own mean, which is
post-processing of the release (it costs no privacy), so uncentered releases work too:
``S~ = (X~ - mean)^T (X~ - mean) / n`` and, because centering removes ``1/n`` of the noise
variance, ``S^ = S~ - v (n - 1) / n I``. In both cases ``E[S^]`` is the corresponding
covariance of the clipped records.

Penalty selection
-----------------
``alpha="cv"`` runs ``cv``-fold cross-validation on the noisy rows (contiguous folds, as
scikit-learn's ``KFold`` without shuffling). For each fold and each penalty of a grid the
graphical lasso is fitted on the bias-corrected covariance of the training rows, and the
score is the mean squared error, over all ``p^2`` entries, between the fitted model
covariance (the solver's dual-feasible ``W ~ Theta^-1``) and the bias-corrected
covariance of the held-out rows. Penalties for which no solution exists (the corrected
covariance is too indefinite) score ``inf``. Two rules turn the mean MSE curve into a
penalty:

``"drop"`` (default)
    The paper picks "the first alpha that causes a dramatic MSE drop". Precisely: scan the
    grid from the largest penalty to the smallest and let ``R = max(MSE) - min(MSE)``
    over the finite values. The selected penalty is the first one at which the MSE has
    fallen below ``max(MSE) - drop_fraction * R`` and the next grid step lowers it by less
    than ``tail_fraction * R``: the MSE has made its dramatic fall and the curve has
    flattened. With ``drop_fraction=0.99`` and ``tail_fraction=0.01`` (the defaults) this
    is the largest penalty (the sparsest graph) that achieves at least 99 % of the
    achievable MSE reduction and after which the curve is flat to 1 % of its range. When
    the MSE does not vary (``R = 0``) the largest penalty is taken; when no penalty
    qualifies, the one with the smallest MSE.
``"min-mse"``
    The penalty with the smallest mean MSE (the largest one among ties).

The default grid is ``n_alphas`` penalties spaced logarithmically from ``alpha_max``, the
smallest penalty whose solution is diagonal (the largest off-diagonal ``|S^_ij|``), down to
``alpha_max * alpha_min_ratio``. Cross-validation fits are warm-started along the grid and
limited to ``cv_max_iter`` solver iterations each (near the smallest penalties, where a
training fold's corrected covariance is most indefinite, ADMM can otherwise need tens of
thousands of iterations); a fit stopped by that limit still yields a dual-feasible model
covariance and is scored.

Privacy
-------
Post-processing of the release only: it consumes no budget. ``privacy_`` is the release's
guarantee when ``release`` is given; otherwise it is a :class:`PostProcessingRecord` saying
that the guarantee of the release is not known here.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.model_selection import KFold

from dpggm.data.records import RecordMatrix
from dpggm.data.tables import as_matrix, too_few_variables
from dpggm.estimators._base import PostProcessingEstimator
from dpggm.estimators._contract import (
    FLAG,
    AnyOf,
    Constraint,
    Interval,
    Optional,
    Options,
    check_number,
    fraction,
)
from dpggm.exceptions import ConvergenceWarning, NoSolutionError, NumericalError
from dpggm.mechanisms.publish import NoisyRelease, read_release_metadata
from dpggm.mechanisms.record import NoiseDescription
from dpggm.solvers.glasso import graphical_lasso
from dpggm.solvers.psd import project_psd

__all__ = [
    "RELEASE",
    "NoisyGraphicalLasso",
    "PostProcessingRecord",
    "ReleaseNoise",
    "bias_corrected_covariance",
    "check_release_data",
    "noise_record",
    "noise_variance",
    "published_guarantee",
    "release_noise",
    "repair_corrected",
    "select_alpha",
]

SELECTION_RULES = ("drop", "min-mse")
SOLVERS = ("auto", "cd", "admm")
# Relative agreement required between noise_sigma and the sigma recorded in a release's
# metadata: a JSON round trip is exact, so anything beyond rounding is a different release.
_SIGMA_RTOL = 1e-12


@dataclass(frozen=True)
class PostProcessingRecord:
    """What an estimate fitted on released data can say about privacy when the release's
    own guarantee was not supplied.

    Attributes
    ----------
    mechanism : str
    reason : str
    noise : dict
        The noise description the estimate relied on.
    validity : str
        Always ``"unknown"``.
    """

    mechanism: str
    reason: str
    noise: dict[str, Any] = field(default_factory=dict)
    validity: str = "unknown"

    @property
    def is_valid(self) -> bool:
        """False: no guarantee is known here."""
        return False

    @property
    def approx_dp(self) -> None:
        """No ``(epsilon, delta)`` form is known here."""
        return None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dictionary."""
        return {
            "budget": None,
            "approx_dp": None,
            "mechanism": self.mechanism,
            "noise": dict(self.noise),
            "validity": self.validity,
            "reason": self.reason,
        }

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as JSON text (the same interface as ``PrivacyGuarantee``)."""
        return json.dumps(self.to_dict(), **kwargs)

    def summary(self) -> str:
        """One line for people."""
        return f"{self.mechanism}: {self.reason}"


# ------------------------------------------------------------------------------ helpers


def noise_variance(sigma: float, *, discrete: bool = False, grid: float | None = None) -> float:
    """Variance of one entry of the release noise.

    Parameters
    ----------
    sigma : float
        Noise scale, ``>= 0`` (``0`` means no noise).
    discrete : bool, default=False
        Discrete Gaussian ``N_Z(0, sigma^2)`` (on ``grid * Z`` when ``grid`` is given):
        the exact variance, summed from the mass function, which is below ``sigma^2``.
    grid : float, optional
        Lattice step (discrete noise only).

    Returns
    -------
    float

    Notes
    -----
    Privacy: a function of public parameters; consumes no budget.
    """
    return NoiseDescription(kind="discrete-gaussian" if discrete else "gaussian", std=sigma,
                            grid=grid).variance


def bias_corrected_covariance(
    X: np.ndarray, *, noise_variance: float, assume_centered: bool = False
) -> np.ndarray:
    """Unbiased covariance of the records behind a noisy release.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Noisy records.
    noise_variance : float
        Variance ``v >= 0`` of the i.i.d. noise in every entry.
    assume_centered : bool, default=False
        ``True``: ``X^T X / n - v I`` (the paper's formula, for centered data). ``False``:
        center by the column means, ``(X - m)^T (X - m) / n - v (n - 1) / n I``.

    Returns
    -------
    ndarray of shape (p, p)
        Symmetric; may be indefinite.

    Notes
    -----
    Privacy: post-processing of the release; consumes no budget.
    """
    n = X.shape[0]
    if assume_centered:
        gram = X.T @ X / n
        shift = noise_variance
    else:
        centered = X - X.mean(axis=0)
        gram = centered.T @ centered / n
        shift = noise_variance * (n - 1) / n
    gram = (gram + gram.T) / 2
    gram[np.diag_indices_from(gram)] -= shift
    return gram


def _mse_curve_checks(alphas: np.ndarray, mse: np.ndarray) -> None:
    if alphas.ndim != 1 or alphas.shape != mse.shape or alphas.size == 0:
        raise ValueError(
            "alphas and mse must be one-dimensional arrays of the same non-zero length; got "
            f"shapes {alphas.shape} and {mse.shape}"
        )


def select_alpha(
    alphas: Any,
    mse: Any,
    *,
    rule: str = "drop",
    drop_fraction: float = 0.99,
    tail_fraction: float = 0.01,
) -> tuple[int, bool]:
    """Pick a penalty from a cross-validated MSE curve.

    Parameters
    ----------
    alphas : array_like of shape (k,)
        Penalties (any order).
    mse : array_like of shape (k,)
        Mean cross-validated MSE per penalty; ``inf`` marks a penalty with no solution.
    rule : {"drop", "min-mse"}, default="drop"
        See :mod:`dpggm.estimators.noisy_glasso`.
    drop_fraction : float, default=0.99
        Share of the MSE range the curve must have fallen by (``"drop"``), in (0, 1].
    tail_fraction : float, default=0.01
        Largest further fall, per grid step and as a share of the range, for the curve
        to count as flat (``"drop"``), in [0, 1).

    Returns
    -------
    index : int
        Position in ``alphas`` of the selected penalty.
    flat : bool
        True when the MSE curve was flat (``R = 0``) or had a single finite point.

    Raises
    ------
    NoSolutionError
        If no penalty has a finite MSE (a ``ValueError`` too).
    ValueError
        If the options are invalid.

    Notes
    -----
    Privacy: post-processing only; consumes no budget.
    """
    if rule not in SELECTION_RULES:
        raise ValueError(f"selection must be one of {SELECTION_RULES}; got {rule!r}")
    alphas = np.asarray(alphas, dtype=float)
    mse = np.asarray(mse, dtype=float)
    _mse_curve_checks(alphas, mse)
    if not 0 < drop_fraction <= 1:
        raise ValueError(f"drop_fraction must be a number in (0, 1]; got {drop_fraction!r}")
    if not 0 <= tail_fraction < 1:
        raise ValueError(f"tail_fraction must be a number in [0, 1); got {tail_fraction!r}")
    order = np.argsort(-alphas, kind="stable")
    curve = mse[order]
    finite = np.isfinite(curve)
    if not finite.any():
        raise NoSolutionError(
            "no penalty on the grid has a solution (every cross-validated MSE is infinite); "
            "use larger alphas or penalize_diagonal=True"
        )
    finite_values = curve[finite]
    top, bottom = float(finite_values.max()), float(finite_values.min())
    spread = top - bottom
    positions = np.flatnonzero(finite)
    if rule == "min-mse":
        # The largest penalty among exact ties: argmin returns the first in descending order.
        return int(order[positions[np.argmin(finite_values)]]), spread == 0
    if spread == 0 or positions.size == 1:
        return int(order[positions[0]]), True
    level = top - drop_fraction * spread
    for rank, position in enumerate(positions):
        if curve[position] > level:
            continue
        following = positions[rank + 1] if rank + 1 < positions.size else None
        further = 0.0 if following is None else curve[position] - curve[following]
        if further < tail_fraction * spread:
            return int(order[position]), False
    return int(order[positions[np.argmin(finite_values)]]), False


def _default_grid(S: np.ndarray, n_alphas: int, alpha_min_ratio: float) -> np.ndarray:
    off = np.abs(S - np.diag(np.diagonal(S)))
    alpha_max = float(off.max())
    if not alpha_max > 0:
        # A diagonal covariance: every penalty gives the diagonal solution.
        alpha_max = float(np.mean(np.abs(np.diagonal(S)))) or 1.0
    return alpha_max * np.logspace(0.0, math.log10(alpha_min_ratio), n_alphas)


def _fit_path(S: np.ndarray, alphas_desc: np.ndarray, options: dict[str, Any]) -> list[Any | None]:
    """Graphical lasso at decreasing penalties, warm-started; ``None`` where no solution
    exists (once one penalty has none, no smaller one has: the dual box only shrinks)."""
    results: list[Any | None] = []
    previous = None
    for position, alpha in enumerate(alphas_desc):
        try:
            previous = graphical_lasso(S, float(alpha), init=previous, **options)
        except (NumericalError, ValueError):
            results.extend([None] * (len(alphas_desc) - position))
            break
        results.append(previous)
    return results


# ---------------------------------------------------------------- the release's noise


class _Release(Constraint):
    """A published release: a :class:`~dpggm.mechanisms.publish.NoisyRelease` or its
    ``to_json_metadata()`` dictionary (whose format is checked)."""

    def describe(self) -> str:
        return "a NoisyRelease or its to_json_metadata() dictionary"

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (NoisyRelease, dict))

    def convert(self, value: Any) -> Any:
        read_release_metadata(value)  # a malformed one: its ValueError names what is wrong
        return value


class _Grid(Constraint):
    """A non-empty sequence of finite numbers >= 0 (a penalty grid)."""

    def describe(self) -> str:
        return "a non-empty sequence of finite numbers >= 0"

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (list, tuple, np.ndarray))

    def accepts(self, value: Any) -> bool:
        try:
            grid = np.asarray(value, dtype=float).ravel()
        except (TypeError, ValueError):
            return False
        return grid.size > 0 and bool(np.all(np.isfinite(grid))) and not np.any(grid < 0)


#: The ``release`` parameter of the estimators fitted to a published release.
RELEASE = Optional(_Release())


#: The public description of a published release's noise: a
#: :class:`~dpggm.mechanisms.record.NoiseDescription` (``std`` its sigma).
ReleaseNoise = NoiseDescription


def noise_record(noise: NoiseDescription) -> dict[str, Any]:
    """The noise of a published release as a post-processing record states it."""
    return {
        "sigma": noise.std,
        "distribution": "discrete-gaussian" if noise.discrete else "gaussian",
        "grid": noise.grid,
        "variance_subtracted": noise.variance,
    }


def published_guarantee(release: Any) -> Any:
    """The guarantee a published release states (``None`` without a release)."""
    return None if release is None else read_release_metadata(release)["guarantee"]


def release_noise(*, release: Any, noise_sigma: float | None, discrete: bool | None,
                  grid: float | None) -> NoiseDescription:
    """The noise description (``sigma``, ``discrete``, ``grid``), reconciled with the
    release's metadata (a value given that disagrees with it is refused: the bias correction must
    use the noise the data were published with).

    Raises
    ------
    ValueError
        A disagreement, ``grid`` without ``discrete``, or no ``noise_sigma`` and no release.
    """
    meta = None if release is None else read_release_metadata(release)
    is_discrete = discrete
    if is_discrete is None:
        is_discrete = False if meta is None else meta["discrete"]
    is_discrete = bool(is_discrete)
    step = grid
    if step is None and meta is not None and discrete is None:
        step = meta["grid"]
    if step is not None:
        if not is_discrete:
            raise ValueError(
                f"grid applies only to discrete=True; got grid={step!r} with discrete=False"
            )
        step = check_number(step, name="grid", low=0, closed="neither")
    sigma = None if noise_sigma is None else float(noise_sigma)
    if meta is not None:
        if sigma is None:
            sigma = meta["sigma"]
        elif not math.isclose(sigma, meta["sigma"], rel_tol=_SIGMA_RTOL, abs_tol=0.0):
            raise ValueError(
                f"noise_sigma={sigma!r} does not match the release's noise sigma="
                f"{meta['sigma']!r}; the bias correction must use the sigma the data "
                "were published with (omit noise_sigma to take it from the release)"
            )
        if is_discrete != meta["discrete"]:
            raise ValueError(
                f"discrete={is_discrete!r} does not match the release, whose noise is "
                f"{'discrete' if meta['discrete'] else 'continuous'} Gaussian"
            )
        release_grid = meta["grid"]
        if (step is None) != (release_grid is None) or (
            step is not None and not math.isclose(step, release_grid, rel_tol=_SIGMA_RTOL)
        ):
            raise ValueError(
                f"grid={step!r} does not match the release's grid={release_grid!r}"
            )
    if sigma is None:
        raise ValueError(
            "noise_sigma is required (the release's noise scale; 0 for no correction) "
            "unless release metadata is given"
        )
    return NoiseDescription(kind="discrete-gaussian" if is_discrete else "gaussian", std=sigma,
                            grid=step)


def check_release_data(release: Any, values: np.ndarray, columns: list[str]) -> None:
    """The release's guarantee is carried only onto the data it was given for: refuse
    records that are not those of ``release`` (``None``: nothing to check)."""
    if release is None:
        return
    if isinstance(release, NoisyRelease):
        released = np.asarray(release.data, dtype=float)
        if released.shape != values.shape or not np.array_equal(released, values):
            raise ValueError(
                "X is not the data of the release given as release=...: its guarantee "
                "cannot be carried onto other data. Fit on release.data (or omit "
                "release= and pass noise_sigma)"
            )
        return
    expected = (release.get("n_samples"), release.get("n_features"))
    if expected != values.shape:
        raise ValueError(
            f"X has shape {values.shape} but the release metadata describes "
            f"{expected[0]} x {expected[1]} records: X is not that release"
        )
    meta_columns = release.get("columns")
    if meta_columns and list(meta_columns) != list(columns) and not all(
        c.startswith("x") for c in columns
    ):
        raise ValueError(
            f"X's columns {columns} differ from the release's {list(meta_columns)}: X is "
            "not that release"
        )


def _diagonal_floor(S: np.ndarray, variance: float) -> np.ndarray:
    # One hundredth of each noisy column's variance (a released quantity, so the floor is
    # post-processing): small enough to leave a healthy diagonal alone.
    return np.maximum(0.01 * (np.diagonal(S) + variance), np.finfo(float).tiny)


def repair_corrected(S: np.ndarray, variance: float) -> tuple[np.ndarray, int, bool]:
    """Floor the corrected variances (an honest release's noise variance can exceed a
    column's own), and project a result that is not positive definite onto
    ``{eigenvalues >= the smallest floor}``: without it the corrected covariance often has
    no graphical-lasso solution. Post-processing of the release only.

    Returns the matrix, how many variances were floored and whether it was projected."""
    floor = _diagonal_floor(S, variance)
    low = np.diagonal(S) < floor
    floored = int(low.sum())
    if floored:
        S = S.copy()
        S[np.diag_indices_from(S)] = np.maximum(np.diagonal(S), floor)
    smallest = float(np.min(_diagonal_floor(S, variance)))
    if np.linalg.eigvalsh(S)[0] > 0:
        return S, floored, False
    return project_psd(S, min_eigenvalue=smallest).estimate, floored, True



# ---------------------------------------------------------------------------- estimator


class NoisyGraphicalLasso(PostProcessingEstimator):
    """Graphical lasso on the bias-corrected covariance of a noisy data release.

    Parameters
    ----------
    alpha : float or "cv", default="cv"
        ℓ1 penalty (``>= 0``), or ``"cv"`` for cross-validation on the noisy data (see
        :mod:`dpggm.estimators.noisy_glasso`).
    noise_sigma : float, optional
        The release's noise scale ``sigma`` (``>= 0``; ``0`` fits the plain, uncorrected
        graphical lasso). May be omitted when ``release`` is given.
    discrete : bool, optional
        The release used discrete Gaussian noise: the exact variance of
        ``N_Z(0, sigma^2)`` is subtracted instead of ``sigma^2``. Default: as recorded in
        ``release``, else False.
    grid : float, optional
        Lattice step of a discrete release on ``grid * Z``. Default: as recorded in
        ``release``.
    solver : {"auto", "cd", "admm"}, default="auto"
        Graphical lasso method (:func:`dpggm.solvers.glasso.graphical_lasso`). ``"auto"``
        and ``"admm"`` handle an indefinite corrected covariance; ``"cd"`` refuses it
        with a clear error when it offers no positive definite start.
    penalize_diagonal : bool, default=False
        Penalise the diagonal too (the paper's Algorithm 1 starts from
        ``W = S^ + alpha I``, i.e. a penalised diagonal).
    cv : int, default=5
        Number of folds for ``alpha="cv"`` (``>= 2``).
    alphas : array_like, optional
        Penalty grid for ``alpha="cv"``; default: ``n_alphas`` penalties from
        ``alpha_max`` down to ``alpha_max * alpha_min_ratio``.
    selection : {"drop", "min-mse"}, default="drop"
        Rule turning the MSE curve into a penalty (see the module documentation).
    release : NoisyRelease or dict, optional
        The release (or its ``to_json_metadata()`` dictionary). Its ``sigma``, noise
        distribution and grid must agree with the parameters; its guarantee becomes
        ``privacy_``.
    assume_centered : bool, default=False
        Use the paper's uncentered ``X~^T X~ / n`` (for centered data) instead of centering
        the noisy data first.
    n_alphas : int, default=12
        Size of the default grid.
    alpha_min_ratio : float, default=1e-2
        Smallest default penalty relative to ``alpha_max``, in (0, 1).
    drop_fraction : float, default=0.99
        ``"drop"`` rule: share of the MSE range that must be gained.
    tail_fraction : float, default=0.01
        ``"drop"`` rule: further gain per grid step below which the curve is flat.
    tol : float, default=1e-6
        Relative duality-gap tolerance of the solver.
    max_iter : int, optional
        Solver iteration limit of the final fit (solver default when ``None``).
    cv_max_iter : int, default=2000
        Solver iteration limit of each cross-validation fit.

    Attributes
    ----------
    precision_ : ndarray of shape (p, p)
        Estimated precision matrix (exact zeros off the selected graph).
    covariance_ : ndarray of shape (p, p)
        The solver's model covariance (dual-feasible ``W ~ precision_^-1``).
    corrected_covariance_ : ndarray of shape (p, p)
        The bias-corrected covariance ``S^`` the model was fitted to.
    noise_variance_ : float
        The variance subtracted (per entry of the noise).
    alpha_ : float
        The penalty used.
    cv_results_ : dict
        With ``alpha="cv"``: ``alphas`` (descending), ``mean_mse``, ``std_mse``,
        ``fold_mse`` (folds x alphas; ``inf`` where no solution exists), ``selected_index``,
        ``rule``, ``drop_fraction``, ``tail_fraction``, ``flat_curve``, ``n_not_converged``.
    solver_ : SolverResult
        The final solver output (duality gap, method used, ...).
    plan_ : ReleasePlan
        The empty plan: post-processing spends nothing.
    adjacency_ : ndarray of bool, shape (p, p)
        The estimated graph (``adjacency()`` with ``tol=0``).
    n_samples_, n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` is a DataFrame or a CSV file with a header.
    privacy_ : PrivacyGuarantee or PostProcessingRecord
        The release's guarantee (post-processing costs nothing more), or a record saying
        that it is not known here.

    Privacy
    -------
    Post-processing only: consumes no budget. Cross-validation, the bias correction and
    the solver all work on the released data.

    Examples
    --------
    >>> import numpy as np
    >>> from dpggm.mechanisms.bounds import RowNorm
    >>> from dpggm.mechanisms.publish import publish
    >>> X = np.random.default_rng(0).normal(size=(500, 4))
    >>> release = publish(X, bounds=RowNorm(10.0), sigma=0.5, random_state=0)
    >>> est = NoisyGraphicalLasso(alpha=0.05, release=release).fit(release.data)
    >>> est.precision_.shape
    (4, 4)
    """

    _constraints = {
        "alpha": AnyOf(Interval(0, None, closed="left"), Options("cv")),
        "noise_sigma": Optional(Interval(0, None, closed="left")),
        "discrete": Optional(FLAG),
        "grid": Optional(Interval(0, None)),
        "solver": Options(*SOLVERS),
        "penalize_diagonal": FLAG,
        "cv": Interval(2, None, closed="left", integer=True),
        "alphas": Optional(_Grid()),
        "selection": Options(*SELECTION_RULES),
        "release": RELEASE,
        "drop_fraction": Interval(0, 1, closed="right"),
        "tail_fraction": Interval(0, 1, closed="left"),
        "assume_centered": FLAG,
        "n_alphas": Interval(2, None, closed="left", integer=True),
        "alpha_min_ratio": fraction(),
        "tol": Interval(0, None),
        "max_iter": Optional(Interval(1, None, closed="left", integer=True)),
        "cv_max_iter": Interval(1, None, closed="left", integer=True),
    }

    def __init__(
        self,
        *,
        alpha: Any = "cv",
        noise_sigma: float | None = None,
        discrete: bool | None = None,
        grid: float | None = None,
        solver: str = "auto",
        penalize_diagonal: bool = False,
        cv: int = 5,
        alphas: Any = None,
        selection: str = "drop",
        release: Any = None,
        assume_centered: bool = False,
        n_alphas: int = 12,
        alpha_min_ratio: float = 1e-2,
        drop_fraction: float = 0.99,
        tail_fraction: float = 0.01,
        tol: float = 1e-6,
        max_iter: int | None = None,
        cv_max_iter: int = 2000,
    ) -> None:
        self.alpha = alpha
        self.noise_sigma = noise_sigma
        self.discrete = discrete
        self.grid = grid
        self.solver = solver
        self.penalize_diagonal = penalize_diagonal
        self.cv = cv
        self.alphas = alphas
        self.selection = selection
        self.release = release
        self.assume_centered = assume_centered
        self.n_alphas = n_alphas
        self.alpha_min_ratio = alpha_min_ratio
        self.drop_fraction = drop_fraction
        self.tail_fraction = tail_fraction
        self.tol = tol
        self.max_iter = max_iter
        self.cv_max_iter = cv_max_iter

    def _solver_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "method": self.solver,
            "penalize_diagonal": bool(self.penalize_diagonal),
            "tol": self.tol,
        }
        if self.max_iter is not None:
            options["max_iter"] = self.max_iter
        return options

    def _corrected(self, X: np.ndarray, variance: float) -> np.ndarray:
        return bias_corrected_covariance(
            X, noise_variance=variance, assume_centered=bool(self.assume_centered)
        )

    # ---------------------------------------------------------------------------- fit

    def fit(self, X: Any, y: Any = None) -> NoisyGraphicalLasso:
        """Estimate the precision matrix and graph from noisy records.

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
            Invalid parameters or data, a ``noise_sigma`` (or ``discrete``/``grid``) that
            disagrees with ``release``, or a penalty for which no solution exists.
        dpggm.exceptions.NumericalError
            The corrected covariance has a non-positive diagonal entry (the noise variance
            exceeds the variance of a noisy column), or the solver breaks down.
        """
        return super().fit(X, y)

    def _noise(self, settings: dict[str, Any]) -> NoiseDescription:
        return release_noise(release=self.release, noise_sigma=self.noise_sigma,
                             discrete=self.discrete, grid=self.grid)

    def _read(self, X: Any, settings: dict[str, Any], noise: NoiseDescription) -> RecordMatrix:
        values, columns = as_matrix(X, name="X")
        check_release_data(self.release, values, columns)
        if values.shape[1] < 2:
            raise too_few_variables(values.shape[1], minimum=2, who=type(self).__name__)
        return RecordMatrix(values, columns)

    def _solve(self, X: Any, settings: dict[str, Any], noise: NoiseDescription,
               data: RecordMatrix) -> None:
        """The graphical lasso on the bias-corrected covariance of the release."""
        values, columns = data.values, data.columns
        n, p = values.shape
        sigma, variance = noise.std, noise.variance
        corrected = self._corrected(values, variance)
        S, self.diagonal_floored_, self.projected_ = repair_corrected(corrected, variance)
        options = self._solver_options()
        if isinstance(self.alpha, str):
            alpha, cv_results = self._cross_validate(values, variance, S, options)
            self.cv_results_ = cv_results
        else:
            alpha = float(self.alpha)
        result = graphical_lasso(S, alpha, **options)
        self.corrected_covariance_ = corrected
        self.solver_covariance_ = S
        self.noise_variance_ = variance
        self.noise_sigma_ = sigma
        self.alpha_ = alpha
        self.solver_ = result
        guarantee = published_guarantee(self.release)
        privacy = (
            guarantee
            if guarantee is not None
            else PostProcessingRecord(
                mechanism="bias-corrected graphical lasso on released noisy data (post-processing)",
                reason=(
                    "post-processing of a noisy data release whose privacy guarantee is not "
                    "known here (pass release=... to carry it); this step consumes no budget"
                ),
                noise=noise_record(noise),
            )
        )
        self._set_fitted(
            X, n_samples=n, n_features=p, columns=columns, privacy=privacy,
            precision=np.asarray(result.estimate),
            covariance=np.asarray(result.covariance),
            adjacency=np.abs(np.asarray(result.estimate)) > 0,
        )

    def _cross_validate(
        self, X: np.ndarray, variance: float, S_full: np.ndarray, options: dict[str, Any]
    ) -> tuple[float, dict[str, Any]]:
        n = X.shape[0]
        folds = int(self.cv)
        if n < 2 * folds:
            raise ValueError(
                f"cv={folds} folds need at least {2 * folds} records (2 per fold); got {n}"
            )
        if self.alphas is None:
            grid = _default_grid(S_full, int(self.n_alphas), float(self.alpha_min_ratio))
        else:
            grid = np.asarray(self.alphas, dtype=float).ravel()
        alphas_desc = np.sort(grid)[::-1]
        options = {**options, "max_iter": int(self.cv_max_iter)}
        fold_mse = np.full((folds, alphas_desc.size), np.inf)
        not_converged = 0
        for k, (train, test) in enumerate(KFold(n_splits=folds).split(X)):
            S_train, _, _ = repair_corrected(self._corrected(X[train], variance), variance)
            S_test = self._corrected(X[test], variance)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                path = _fit_path(S_train, alphas_desc, options)
            not_converged += sum(issubclass(w.category, ConvergenceWarning) for w in caught)
            for j, result in enumerate(path):
                if result is None:
                    continue
                model = np.asarray(result.covariance)
                fold_mse[k, j] = float(np.mean((model - S_test) ** 2))
        solved = np.all(np.isfinite(fold_mse), axis=0)
        mean_mse = np.full(alphas_desc.size, np.inf)
        std_mse = np.full(alphas_desc.size, np.inf)
        mean_mse[solved] = fold_mse[:, solved].mean(axis=0)
        std_mse[solved] = fold_mse[:, solved].std(axis=0)
        index, flat = select_alpha(
            alphas_desc,
            mean_mse,
            rule=self.selection,
            drop_fraction=self.drop_fraction,
            tail_fraction=self.tail_fraction,
        )
        results = {
            "alphas": alphas_desc,
            "mean_mse": mean_mse,
            "std_mse": std_mse,
            "fold_mse": fold_mse,
            "selected_index": index,
            "rule": self.selection,
            "drop_fraction": self.drop_fraction,
            "tail_fraction": self.tail_fraction,
            "flat_curve": flat,
            "n_not_converged": int(not_converged),
        }
        return float(alphas_desc[index]), results

    # --------------------------------------------------------------------- utilities

    def edge_scores(self) -> np.ndarray:
        """``|precision_|`` with a zero diagonal: edge scores for ROC curves."""
        scores = np.abs(self.precision_)
        np.fill_diagonal(scores, 0.0)
        return scores

    def adjacency(self, *, tol: float = 0.0) -> np.ndarray:
        """The estimated graph: ``|precision_ij| > tol`` off the diagonal."""
        adjacency = self.edge_scores() > tol
        return adjacency | adjacency.T
