"""PACE-GGM: private adaptive covariance estimation via Gaussian graphical models
(Ferrando, Fuentes, Mullins, Musco & Sheldon; SPEC section 3, seed 003).

Under coordinate-wise (box) bounds one entry of the second moment is far cheaper to
measure than the whole matrix. PACE-GGM spends part of a zCDP budget on the diagonal,
then repeatedly *selects* the worst-approximated entry with the exponential mechanism,
*measures* it with the Gaussian mechanism, and *reconstructs* the maximum-entropy
covariance consistent with all measurements -- whose inverse is zero off the measured
pattern, i.e. a Gaussian graphical model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpggm import _progress
from dpggm.estimators._base import DPEstimator, make_context
from dpggm.estimators._contract import CALLABLE, NOISE, NONE, AnyOf, Interval, Options, fraction
from dpggm.estimators.data import clipped_second_moment
from dpggm.exceptions import BudgetRangeError, IncompatibleBudgetError, UnsupportedNeighborsError
from dpggm.mechanisms.additive import NoisePart, check_budget_range
from dpggm.mechanisms.bounds import Box
from dpggm.mechanisms.noise import exponential_mechanism
from dpggm.mechanisms.release import release_value
from dpggm.mechanisms.sensitivity import second_moment_entry_sensitivity
from dpggm.privacy.accountant import PrivacyAccountant
from dpggm.privacy.budgets import GDP, ZCDP, NonPrivate, budget_from_cost, exact_cost
from dpggm.privacy.calibration import epsilon_for_zcdp
from dpggm.privacy.guarantee import DEFAULT_REPORT_DELTA

__all__ = ["PACECovariance", "PACERound"]


@dataclass(frozen=True)
class PACERound:
    """One select-measure-reconstruct round."""

    entry: tuple[int, int]
    rho_select: float
    rho_measure: float
    sigma: float
    annealed: bool


def _as_zcdp(budget: Any) -> ZCDP:
    try:
        # Rounded down: the total a filter may spend must never exceed what was declared.
        return budget_from_cost(ZCDP, exact_cost(budget, ZCDP), rounding="down")
    except ValueError:
        name, value = ("mu", budget.mu) if isinstance(budget, GDP) else ("epsilon", budget.epsilon)
        raise BudgetRangeError(
            f"budget: {name} must be below 1.8e+154 to be accounted in zCDP ({name}**2/2 "
            f"exceeds the largest float); got {name}={value!r}",
            parameter=name, value=value,
        ) from None
    except IncompatibleBudgetError as exc:
        raise IncompatibleBudgetError(
            f"PACECovariance runs under zCDP; {exc}. Pass a ZCDP budget (or PureDP / GDP, "
            "which convert soundly)."
        ) from None


def pace_noise_parts(sens: np.ndarray, box: np.ndarray, *, diag_fraction: Fraction,
                     select_fraction: Fraction, max_rounds: int,
                     scale: Fraction = Fraction(1)) -> list[NoisePart]:
    """Every Gaussian measurement PACE may make, with its share of the total (times
    ``scale``) for :func:`~dpggm.mechanisms.additive.check_budget_range`. The diagonal ones
    get ``diag_fraction / d``; an off-diagonal one at least ``(1 - diag_fraction)(1 -
    select_fraction) / max_rounds`` (the first round's; the last round spends at least one
    round's share) and at most ``1 - diag_fraction``. Public parameters only."""
    d = sens.shape[0]
    largest = float(np.max(box)) ** 2
    diagonal, off = np.diag(sens), sens[~np.eye(d, dtype=bool)]
    parts = [NoisePart(share=scale * diag_fraction / d, sensitivity=s, size=1,
                       value_bound=largest) for s in {float(diagonal.min()), float(diagonal.max())}]
    rest = 1 - diag_fraction
    if off.size:
        for share in (rest * (1 - select_fraction) / max_rounds, rest):
            for s in {float(off.min()), float(off.max())}:
                parts.append(NoisePart(share=scale * share, sensitivity=s, size=1,
                                       value_bound=largest))
    return parts


def _check_pace_budget(requested: Any, sens: np.ndarray, box: np.ndarray, *, n: int, d: int,
                       noise: str, diag_fraction: Fraction, select_fraction: Fraction,
                       max_rounds: int) -> None:
    """Before any draw: every Gaussian measurement PACE may make must be drawable."""
    parts = [] if noise == "float" else pace_noise_parts(
        sens, box, diag_fraction=diag_fraction, select_fraction=select_fraction,
        max_rounds=max_rounds)
    check_budget_range(requested, parts, release=f"PACE-GGM on {d} columns from n = {n} rows")


def _selection_scores(S, estimate, scores, changed) -> np.ndarray:
    """Scores ``|S_jk - estimate_jk|`` of the candidates ``(j, k)``, ``j >= k``, in the
    order of ``np.tril_indices``, updated in place on the block ``changed x changed``.

    The reconstruction only changes on the components it re-solved (it is block diagonal
    over the components), so the other scores stay as they are; the updated ones are
    computed by the same float64 operations as a full recomputation, hence identical.
    """
    if changed.size:
        J, K = np.meshgrid(changed, changed, indexing="ij")
        low = J >= K
        J, K = J[low], K[low]
        scores[J * (J + 1) // 2 + K] = np.abs(S[J, K] - estimate[J, K])
    # A copy: the selection must not be able to alter the running scores.
    return scores.copy()


class PACECovariance(DPEstimator):
    """PACE-GGM private covariance estimation under rho-zCDP.

    Parameters
    ----------
    budget : ZCDP, PureDP or GDP
        Total budget; PureDP(eps) counts as eps^2/2-zCDP and GDP(mu) as mu^2/2-zCDP.
        ``NonPrivate()`` returns the exact second moment (reference only).
    bounds : Box or str
        Declared coordinate-wise bound (one value or one per column; ``"box:B"``
        accepted). Required.
    diag_fraction : float in (0, 1), default=0.3
        Share of the budget spent measuring the diagonal (the paper's alpha).
    select_fraction : float in (0, 1), default=0.5
        Share of each round's budget spent on selection (the paper's beta).
    max_rounds : int or None, default=None
        The paper's T; ``None`` means ``d(d-1)``. The per-round budget starts at the
        remainder over ``max_rounds``; annealing may finish sooner.
    entry_sensitivity : {"tight", "paper"}, default="tight"
        ``"paper"`` uses ``2 b^2 / n`` for every entry; ``"tight"`` uses the per-entry
        sensitivities of SPEC section 2 (diagonal ``b_j^2 / n``; off-diagonal
        ``2 b_j b_k / n``), which is valid and never larger.
    reconstruction : str, default="auto"
        Method of :class:`dpggm.solvers.maxent.MaxEntropyReconstructor`
        (``"ipm-cholesky"`` is the paper's reference solver).
    neighbors : {"replace", "add-remove"}, default="replace"
    report_delta : float, default=1e-6
    random_state : None, int, Generator or "secure"
    progress : callable or None
        Called as ``progress(rho_used, rho_total)`` after every round (for progress bars).

    Attributes
    ----------
    covariance_ : ndarray (d, d)
    precision_ : ndarray (d, d) or None
        Inverse of ``covariance_``, exactly zero off the measured pattern; ``None`` when the
        noisy measurements admit no positive-definite completion and the reconstruction
        is singular (common at small budgets).
    adjacency_ : ndarray of bool (d, d)
        The measured off-diagonal pattern: the graph of the Gaussian graphical model.
    measurements_ : dict
        ``entries`` (list of (j, k), j >= k), ``values`` and ``precisions`` (the
        precision-weighted measurement and its combined precision per entry).
    n_rounds_ : int
    n_measured_offdiag_ : int
    history_ : list of PACERound
    privacy_ : PrivacyGuarantee

    Privacy
    -------
    The diagonal phase spends ``diag_fraction * rho`` (the ``d`` diagonal measurements
    compose), each round spends ``rho_sel`` on an exponential-mechanism selection
    (``eps``: the largest float with ``eps^2/8 <= rho_sel``, checked exactly, so a square
    root rounded up never costs more than is booked) and ``rho_meas`` on one Gaussian
    measurement. All spends go through a :class:`~dpggm.privacy.PrivacyAccountant` used as a
    filter, so whatever the data-dependent annealing does the total never exceeds
    ``rho``; the last round spends exactly the remainder. The rounds compose
    adaptively (fully adaptive zCDP composition, Whitehouse et al. 2023).
    Reconstruction is post-processing.
    """

    _constraints = {
        "diag_fraction": fraction(),
        "select_fraction": fraction(),
        "max_rounds": AnyOf(Interval(1, None, closed="left", integer=True), NONE),
        "entry_sensitivity": Options("tight", "paper"),
        "progress": AnyOf(CALLABLE, NONE),
        "noise": NOISE,
    }

    def __init__(
        self,
        *,
        budget: Any = None,
        bounds: Any = None,
        diag_fraction: float = 0.3,
        select_fraction: float = 0.5,
        max_rounds: int | None = None,
        entry_sensitivity: str = "tight",
        reconstruction: str = "auto",
        neighbors: str = "replace",
        report_delta: float = DEFAULT_REPORT_DELTA,
        random_state: Any = None,
        progress: Any = None,
        noise: str = "exact",
    ) -> None:
        self.budget = budget
        self.bounds = bounds
        self.diag_fraction = diag_fraction
        self.select_fraction = select_fraction
        self.max_rounds = max_rounds
        self.entry_sensitivity = entry_sensitivity
        self.reconstruction = reconstruction
        self.neighbors = neighbors
        self.report_delta = report_delta
        self.random_state = random_state
        self.progress = progress
        self.noise = noise

    def _validate(self) -> tuple[Any, Box]:
        params = self._validate_params()
        budget, bounds = params["budget"], params["bounds"]
        if not isinstance(bounds, Box):
            raise TypeError(
                "PACECovariance needs coordinate-wise bounds: bounds must be Box(b) or "
                f"'box:B'; got {self.bounds!r}"
            )
        if not isinstance(budget, NonPrivate):
            budget = _as_zcdp(budget)
            if not budget.rho > 0:
                raise ValueError(f"rho must be > 0; got {budget.rho!r}")
        self._ctx = make_context(self, bounds)
        if self._ctx.neighbors == "add-remove":
            raise UnsupportedNeighborsError(
                "PACECovariance measures entries of X^T X / n, and n is private under "
                "add/remove neighbours; it has no honest add/remove version here. Use "
                "neighbors='replace'"
            )
        return budget, bounds

    def fit(self, X: Any, y: Any = None) -> PACECovariance:
        """Run PACE-GGM on ``X`` (array, DataFrame or CSV path)."""
        budget, bounds = self._validate()
        stats = clipped_second_moment(X, bounds=bounds)
        return self._fit_second_moment(X, stats.second_moment, n=stats.n,
                                       columns=stats.columns, budget=budget, bounds=bounds)

    # One piece (over 120 lines): the select-measure-reconstruct loop of Algorithms 1-3 reads
    # as the paper does, with every spend checked by the filter just before its mechanism.
    def _fit_second_moment(self, X: Any, S: np.ndarray, *, n: int, columns: list[str],
                           budget: Any, bounds: Box) -> PACECovariance:
        """PACE-GGM on the exact second moment ``S`` of ``n`` records clipped to
        ``bounds`` (validated by :meth:`_validate`); ``X`` only names the columns."""
        from dpggm.solvers.maxent import MaxEntropyReconstructor

        d = S.shape[0]
        stats_columns = columns
        ctx = self._ctx
        if isinstance(budget, NonPrivate):
            precision = np.linalg.pinv(S)
            self.measurements_ = {"entries": [], "values": [], "precisions": []}
            self.n_rounds_, self.n_measured_offdiag_, self.history_ = 0, 0, []
            self._set_fitted(
                X, n_samples=n, n_features=d, columns=stats_columns, covariance=S.copy(),
                precision=precision, adjacency=np.abs(precision) > 0,
                privacy=ctx.guarantee(budget=budget, mechanism="pace-ggm (non-private reference)"),
            )
            return self

        rng = ctx.source  # every draw of the fit, selections included
        exact = {"noise": ctx.noise}
        tight = second_moment_entry_sensitivity(bounds, n=n, p=d, neighbors=self.neighbors)
        if self.entry_sensitivity == "paper":
            b_max = float(np.max(bounds.vector(d)))
            sens = np.full((d, d), 2 * b_max**2 / n)
        else:
            sens = tight
        select_sensitivity = float(sens.max())
        max_rounds = self.max_rounds if self.max_rounds is not None else max(1, d * (d - 1))
        _check_pace_budget(self.budget, sens, bounds.vector(d), n=n, d=d, noise=ctx.noise,
                           diag_fraction=Fraction(self.diag_fraction),
                           select_fraction=Fraction(self.select_fraction), max_rounds=max_rounds)
        rows, cols = np.tril_indices(d)  # candidates (j, k) with j >= k
        accountant = PrivacyAccountant(budget)
        rho = Fraction(budget.rho)

        # Initialisation (Algorithm 2): every diagonal entry with rho_diag / d.
        # Rounded down: the d diagonal spends never add up to more than their share.
        rho_diag_each = budget_from_cost(ZCDP, (rho * Fraction(self.diag_fraction) / d,)).rho
        values = np.zeros((d, d))
        precisions = np.zeros((d, d))
        for j in range(d):
            accountant.spend(ZCDP(rho_diag_each), mechanism="gaussian", entry=(j, j))
            values[j, j], sigma = release_value(
                S[j, j], sensitivity=sens[j, j], budget=ZCDP(rho_diag_each), rng=rng, **exact
            )
            precisions[j, j] = sigma**-2
        reconstructor = MaxEntropyReconstructor(values, precisions, method=self.reconstruction)
        estimate = reconstructor.covariance
        scores = np.abs(S[rows, cols] - estimate[rows, cols])
        reconstructor.pop_changed()

        beta = self.select_fraction
        per_round = accountant.remaining.rho / max_rounds
        rho_sel, rho_meas = beta * per_round, (1 - beta) * per_round
        history: list[PACERound] = []
        final = False
        while not final:
            remaining = accountant.remaining.rho
            if remaining <= 0:
                break
            if remaining < 2 * (rho_sel + rho_meas):
                # Algorithm 3, lines 4-6: spend exactly what is left in this round.
                rho_sel = beta * remaining
                final = True
            err = _selection_scores(S, estimate, scores, reconstructor.pop_changed())
            accountant.spend(ZCDP(rho_sel), mechanism="exponential", score="|S_jk - estimate_jk|")
            pick = exponential_mechanism(
                err, sensitivity=select_sensitivity, epsilon=epsilon_for_zcdp(rho_sel), rng=rng
            )
            j, k = int(rows[pick]), int(cols[pick])
            if final:
                rho_meas = accountant.remaining.rho
            accountant.spend(ZCDP(rho_meas), mechanism="gaussian", entry=(j, k))
            z, sigma = release_value(
                S[j, k], sensitivity=sens[j, k], budget=ZCDP(rho_meas), rng=rng, **exact
            )
            lam = precisions[j, k]
            values[j, k] = values[k, j] = (lam * values[j, k] + z / sigma**2) / (lam + sigma**-2)
            precisions[j, k] = precisions[k, j] = lam + sigma**-2
            reconstructor.update(j, k, values[j, k], precisions[j, k])
            previous = estimate[j, k]
            estimate = reconstructor.covariance
            annealed = abs(estimate[j, k] - previous) <= math.sqrt(2 / math.pi) * sigma
            history.append(PACERound((j, k), rho_sel, rho_meas, sigma, annealed and not final))
            if annealed and not final:
                rho_sel, rho_meas = 2 * rho_sel, 4 * rho_meas
            spent = float(sum(accountant.exact_spent))
            if self.progress is not None:
                self.progress(spent, budget.rho)
            _progress.report("PACE rounds: share of the budget spent", spent, budget.rho)

        lower = np.argwhere(np.tril(precisions > 0))
        self.measurements_ = {
            "entries": [(int(a), int(b)) for a, b in lower],
            "values": [float(values[a, b]) for a, b in lower],
            "precisions": [float(precisions[a, b]) for a, b in lower],
        }
        self.n_rounds_ = len(history)
        self.n_measured_offdiag_ = int(sum(a != b for a, b in self.measurements_["entries"]))
        self.history_ = history
        self.spent_exact_ = sum(accountant.exact_spent, Fraction(0))
        self.accountant_ = accountant
        privacy = ctx.guarantee(
            budget=budget,
            mechanism="pace-ggm (exponential selection + Gaussian measurement, zCDP filter)",
            noise={
                "entry_sensitivity": self.entry_sensitivity,
                "selection_sensitivity": select_sensitivity,
                "rho_diagonal": float(rho * Fraction(self.diag_fraction)),
                "rounds": self.n_rounds_,
                "spent_rho": float(self.spent_exact_),
            },
        )
        self._set_fitted(
            X, n_samples=n, n_features=d, columns=stats_columns, covariance=estimate,
            precision=reconstructor.precision, adjacency=precisions > 0, privacy=privacy,
        )
        # None (documented) when the reconstruction is singular, never a previous fit's.
        self.precision_ = reconstructor.precision
        return self
