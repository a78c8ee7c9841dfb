"""Declared data bounds, clipping, and the neighbouring relation.

Bounds are public inputs. A record is clipped to its bound (rescaled for a row-norm bound,
coordinate-clipped for a box) before any statistic is computed, so the sensitivities in
:mod:`dpggm.mechanisms.sensitivity` hold whatever the data are.

A bound read off the private data leaks information. :func:`bounds_from_data` does it
only when called by name, and the bound it returns is flagged ``data_derived``; any
result computed with it reports "no formal guarantee".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from dpggm.privacy.budgets import NEIGHBOR_RELATIONS

__all__ = [
    "NEIGHBOR_RELATIONS",
    "Box",
    "Bounds",
    "RowNorm",
    "bounds_from_data",
    "check_bounds",
    "check_neighbors",
    "parse_bounds",
]

Neighbors = Literal["replace", "add-remove"]


def check_neighbors(neighbors: str) -> str:
    """Validate the neighbouring relation name."""
    if neighbors not in NEIGHBOR_RELATIONS:
        raise ValueError(
            f"neighbors must be 'replace' (change one record; n is public) or 'add-remove'; "
            f"got {neighbors!r}"
        )
    return neighbors


class Bounds:
    """Base class of declared bounds."""

    data_derived: bool

    def clip(self, X: np.ndarray, *, in_place: bool = False) -> tuple[np.ndarray, int]:
        """Return the clipped rows and how many rows were changed (curator-only).

        With ``in_place=True`` the changed rows of ``X`` (a float array the caller owns)
        are overwritten and ``X`` itself is returned, so a blocked reduction clips its
        buffer without a copy; otherwise ``X`` is never modified.
        """
        raise NotImplementedError

    def check_dimension(self, n_features: int) -> None:
        """Raise if the bound cannot apply to ``n_features`` columns."""

    def row_norm(self, n_features: int) -> float:
        """An l2 bound on every clipped row."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class RowNorm(Bounds):
    """Every record satisfies ``||x||_2 <= bound``; larger rows are rescaled onto the ball.

    Parameters
    ----------
    bound : float
        Finite and positive.
    data_derived : bool
        Set only by :func:`bounds_from_data`; marks a bound read off the private data.
    """

    bound: float
    data_derived: bool = False

    def __post_init__(self) -> None:
        value = self.bound
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise TypeError(f"RowNorm bound must be a real number; got {type(value).__name__}")
        value = float(value)
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"RowNorm bound must be a finite number > 0; got {value!r}")
        object.__setattr__(self, "bound", value)

    def clip(self, X: np.ndarray, *, in_place: bool = False) -> tuple[np.ndarray, int]:
        # A float sum of squares has relative error up to about p * 2^-53, and rescaling by
        # B / norm rounds again: without care a rescaled row can end an ulp above B, which
        # the sensitivity analysis does not allow. Rows clearly inside are kept; rows within
        # the rounding error of B are settled exactly (rationals); rows outside are rescaled
        # onto (1 - margin) B, whose exact norm is then below B.
        p = X.shape[1]
        margin = 4.0 * (p + 4) * np.finfo(float).eps
        squared = np.einsum("ij,ij->i", X, X)
        b2 = self.bound**2
        over = squared > b2 * (1.0 + margin)
        near = np.flatnonzero((squared > b2 * (1.0 - margin)) & ~over)
        if near.size:
            exact_b2 = Fraction(self.bound) ** 2
            for i in near:
                if sum((Fraction(float(v)) ** 2 for v in X[i]), Fraction(0)) > exact_b2:
                    over[i] = True
        if not over.any():
            return X, 0
        if not in_place:
            # order="K": a column-major block stays column-major (a C-order copy of it
            # costs more than the whole clip).
            X = X.copy(order="K")
        target = self.bound * (1.0 - 2.0 * margin)
        X[over] *= (target / np.sqrt(squared[over]))[:, None]
        return X, int(over.sum())

    def row_norm(self, n_features: int) -> float:
        return self.bound

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "l2", "bound": self.bound, "data_derived": self.data_derived}


@dataclass(frozen=True)
class Box(Bounds):
    """Every coordinate satisfies ``|x_j| <= bound_j``; values outside are clipped.

    Parameters
    ----------
    bound : float or sequence of float
        One bound for every column, or one per column. Finite and positive.
    data_derived : bool
        Set only by :func:`bounds_from_data`.
    """

    bound: float | tuple[float, ...]
    data_derived: bool = False

    def __post_init__(self) -> None:
        raw = self.bound
        if isinstance(raw, (list, tuple, np.ndarray)):
            values = np.asarray(raw, dtype=float).ravel()
            if values.size == 0:
                raise ValueError("Box bound must not be empty")
            stored: float | tuple[float, ...] = tuple(float(v) for v in values)
        elif isinstance(raw, bool) or not isinstance(raw, (int, float, np.floating, np.integer)):
            raise TypeError(f"Box bound must be a number or a sequence of numbers; got {raw!r}")
        else:
            values = np.array([float(raw)])
            stored = float(raw)
        if not (np.all(np.isfinite(values)) and np.all(values > 0)):
            raise ValueError(f"Box bound must be finite and > 0 in every column; got {raw!r}")
        object.__setattr__(self, "bound", stored)

    @property
    def per_column(self) -> bool:
        return isinstance(self.bound, tuple)

    def vector(self, n_features: int) -> np.ndarray:
        """The bound of each of ``n_features`` columns."""
        self.check_dimension(n_features)
        if self.per_column:
            return np.asarray(self.bound, dtype=float)
        return np.full(n_features, float(self.bound))

    def check_dimension(self, n_features: int) -> None:
        if self.per_column and len(self.bound) != n_features:
            raise ValueError(
                f"Box bound has {len(self.bound)} entries but the data has {n_features} columns"
            )

    def clip(self, X: np.ndarray, *, in_place: bool = False) -> tuple[np.ndarray, int]:
        b = self.vector(X.shape[1])
        changed = np.any(np.abs(X) > b, axis=1)
        if not changed.any():
            return X, 0
        return np.clip(X, -b, b, out=X if in_place else None), int(changed.sum())

    def row_norm(self, n_features: int) -> float:
        """``||b||_2`` rounded up, so that it bounds every clipped row's norm."""
        squared = sum((Fraction(float(v)) ** 2 for v in self.vector(n_features)), Fraction(0))
        value = math.sqrt(float(squared))
        while Fraction(value) ** 2 < squared:
            value = math.nextafter(value, math.inf)
        return value

    def to_dict(self) -> dict[str, Any]:
        bound: Any = list(self.bound) if self.per_column else self.bound
        return {"kind": "box", "bound": bound, "data_derived": self.data_derived}


def parse_bounds(spec: str | Bounds, *, per_column: Sequence[float] | None = None) -> Bounds:
    """Parse ``"l2:B"`` or ``"box:B"`` (the command-line form) into bounds.

    ``per_column`` replaces ``B`` for a box with one bound per column.
    """
    if isinstance(spec, Bounds):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"bound must look like 'l2:B' or 'box:B'; got {spec!r}")
    kind, _, value = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "box" and per_column is not None:
        return Box(tuple(per_column))
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"bound value must be a number; got {value!r} in {spec!r}") from None
    if kind in ("l2", "rownorm", "norm"):
        return RowNorm(number)
    if kind == "box":
        return Box(number)
    raise ValueError(f"bound kind must be 'l2' or 'box'; got {kind!r} in {spec!r}")


def check_bounds(bounds: Any) -> Bounds:
    """Validate a declared bound (``RowNorm``, ``Box`` or the ``"l2:B"`` / ``"box:B"`` text)."""
    if bounds is None:
        raise ValueError(
            "bounds is required: declare RowNorm(B) or Box(b) from domain knowledge (or, "
            "giving up the formal guarantee, dpggm.mechanisms.bounds_from_data)"
        )
    if isinstance(bounds, str):
        return parse_bounds(bounds)
    if not isinstance(bounds, Bounds):
        raise TypeError(f"bounds must be RowNorm(B) or Box(b); got {bounds!r}")
    return bounds


def bounds_from_data(X: Any, *, kind: Literal["l2", "box"]) -> Bounds:
    """Read a bound off the data. **This leaks information and voids the guarantee.**

    Only for exploration or reproducing papers that did it. Results computed with the
    returned bound report ``validity="data-dependent"`` ("no formal guarantee").
    """
    X = np.asarray(X, dtype=float)
    if kind == "l2":
        return RowNorm(float(np.max(np.linalg.norm(X, axis=1))) or 1.0, data_derived=True)
    if kind == "box":
        b = np.max(np.abs(X), axis=0)
        b[b == 0] = 1.0
        return Box(tuple(b), data_derived=True)
    raise ValueError(f"kind must be 'l2' or 'box'; got {kind!r}")
