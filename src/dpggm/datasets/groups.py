"""Two (or more) groups of records whose networks share most edges and differ in a few:
the data of a group comparison (patients and controls, before and after a treatment).

Each group's records are Gaussian with a precision matrix built from a matrix ``R`` of
partial correlations (``Theta = D (I - R) D``: the partial correlation of ``j`` and ``k``
given the rest is exactly ``R_jk``): a chain shared by every group, and in the first group
only a few more edges between variables far apart on the chain. The columns are in raw
units of different sizes (as measurements are), which leaves every partial correlation
unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["GroupNetworks", "make_group_networks"]


@dataclass(frozen=True, eq=False)
class GroupNetworks:
    """Records of several groups and the truth about their networks.

    Attributes
    ----------
    frame : DataFrame
        Every record, the variables ``x0 .. x{p-1}`` and the column ``group`` (the level
        of each record), the groups' records interleaved at random.
    levels : tuple of str
        The groups, in order; the first one has the extra edges.
    partial_correlations : dict
        Level -> the population partial-correlation matrix (diagonal 1).
    precisions : dict
        Level -> the population precision matrix (raw units).
    differences : list of (int, int)
        The pairs whose partial correlation differs between the first group and the others.
    """

    frame: pd.DataFrame
    levels: tuple[str, ...]
    partial_correlations: dict[str, np.ndarray]
    precisions: dict[str, np.ndarray]
    differences: list[tuple[int, int]]

    @property
    def variables(self) -> list[str]:
        return [c for c in self.frame.columns if c != "group"]

    def difference_matrix(self, first: str | None = None, second: str | None = None) -> np.ndarray:
        """``R_first - R_second`` (the population differences of the partial correlations;
        by default the first level minus the second)."""
        a = self.levels[0] if first is None else first
        b = self.levels[1] if second is None else second
        return self.partial_correlations[a] - self.partial_correlations[b]


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _check_strength(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 0.5:
        raise ValueError(f"{name} must be a number in [0, 0.5); got {value!r}")
    return float(value)


def make_group_networks(
    *, n_samples: tuple[int, ...] | int = (4000, 4000), n_features: int = 15,
    chain: float = 0.3, n_differences: int = 3, difference: float = 0.35,
    levels: tuple[str, ...] = ("patients", "controls"), random_state: Any = None,
) -> GroupNetworks:
    """Groups of Gaussian records whose networks share a chain of partial correlation
    ``chain`` and differ by ``n_differences`` edges of partial correlation ``difference``
    present in the first group only.

    Parameters
    ----------
    n_samples : int or tuple of int
        Records per group (one number: the same for every group).
    n_features : int
        Variables (at least 4).
    chain : float in [0, 0.5)
        Partial correlation of the shared edges ``(j, j + 1)``.
    n_differences : int
        Extra edges of the first group, between variables spread along the chain (none
        adjacent on it); 0 makes the groups' networks equal.
    difference : float in [0, 0.5)
        Their partial correlation.
    levels : tuple of str
        The groups' names (at least two).
    random_state : None, int or Generator

    Returns
    -------
    GroupNetworks

    Notes
    -----
    Privacy: synthetic public data; consumes no budget.
    """
    p = _check_int("n_features", n_features, 4)
    k = _check_int("n_differences", n_differences, 0)
    chain = _check_strength("chain", chain)
    difference = _check_strength("difference", difference)
    levels = tuple(str(level) for level in levels)
    if len(levels) < 2 or len(set(levels)) != len(levels):
        raise ValueError(f"levels must name at least two distinct groups; got {levels!r}")
    sizes = ((n_samples,) * len(levels) if isinstance(n_samples, (int, np.integer))
             else tuple(n_samples))
    if len(sizes) != len(levels):
        raise ValueError(f"n_samples must give one size per level ({len(levels)}); got "
                         f"{n_samples!r}")
    sizes = tuple(_check_int("n_samples", n, 2) for n in sizes)
    rng = np.random.default_rng(random_state)
    shared = np.zeros((p, p))
    for j in range(p - 1):
        shared[j, j + 1] = shared[j + 1, j] = chain
    # Extra edges (j, j + p // 2), their first ends spread along the chain.
    pairs: list[tuple[int, int]] = []
    half = p // 2
    for j in np.linspace(0, p - half - 1, k).round().astype(int) if k else []:
        pair = (int(j), int(j) + half)
        if pair not in pairs:
            pairs.append(pair)
    if len(pairs) < k:
        raise ValueError(f"n_differences={k} extra edges do not fit among {p} variables")
    first = shared.copy()
    for j, l in pairs:
        first[j, l] = first[l, j] = difference
    means = np.geomspace(3.0, 300.0, p)
    scales = np.geomspace(0.5, 20.0, p)
    scales[1::2] = scales[1::2][::-1]
    partials, precisions, blocks = {}, {}, []
    for index, (level, n) in enumerate(zip(levels, sizes)):
        R = first if index == 0 else shared
        unit = np.eye(p) - R
        if np.linalg.eigvalsh(unit)[0] <= 0.05:
            raise ValueError("these partial correlations make no positive-definite precision; "
                             "use a weaker chain or difference")
        covariance = np.linalg.inv(unit)
        standard = np.sqrt(np.diag(covariance))
        # Raw units: each column rescaled, which leaves the partial correlations.
        theta = unit * np.outer(standard, standard) / np.outer(scales, scales)
        partial = R.copy()
        np.fill_diagonal(partial, 1.0)
        partials[level], precisions[level] = partial, theta
        values = rng.multivariate_normal(np.zeros(p), covariance, size=n, method="cholesky")
        block = pd.DataFrame(means + scales * values / standard,
                             columns=[f"x{j}" for j in range(p)])
        block["group"] = level
        blocks.append(block)
    frame = pd.concat(blocks, ignore_index=True)
    frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    return GroupNetworks(frame=frame, levels=levels, partial_correlations=partials,
                         precisions=precisions, differences=pairs)
