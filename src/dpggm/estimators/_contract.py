"""The estimator contract: declared parameter constraints, one validation, one error policy,
and one place that sets the common fitted attributes.

Every estimator declares ``_constraints``, a mapping from constructor parameter to a
:class:`Constraint` (in the spirit of scikit-learn's private ``_parameter_constraints``;
ours is in-house so that it can check budgets and bounds). :meth:`ContractMixin._validate_params`
checks every declared parameter before any data is read and any budget is spent.

Error policy
------------
* a value of the wrong type raises :class:`ParameterTypeError` -- a ``TypeError`` that is
  also a ``ValueError`` (as scikit-learn's ``InvalidParameterError`` is), so callers that
  catch ``ValueError`` for any bad parameter keep working;
* a value of the right type outside its allowed set raises ``ValueError`` (a budget of a
  notion the method cannot deliver: :class:`~dpggm.exceptions.IncompatibleBudgetError`, a
  ``ValueError`` too; a row-norm bound where a box is required: ``ValueError``);
* the message names the parameter, the constraint and the value:
  ``"alpha must be a finite number >= 0 or 'auto'; got -1"``;
* all of it before any random word is drawn (the test suite generates bad values of every
  declared constraint and counts the draws).

``0 == False`` in Python: booleans are never accepted as numbers, and numbers never as flags.
"""

from __future__ import annotations

import inspect
import math
import numbers
import os
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from dpggm.exceptions import IncompatibleBudgetError
from dpggm.mechanisms.bounds import Bounds, check_bounds
from dpggm.privacy.budgets import NEIGHBOR_RELATIONS, Budget

__all__ = [
    "BOUNDS",
    "BUDGET",
    "COLUMN_RANGES",
    "FLAG",
    "NEIGHBORS",
    "NOISE",
    "RANDOM_STATE",
    "Required",
    "REPORT_DELTA",
    "AnyOf",
    "BoxBounds",
    "BudgetOf",
    "Constraint",
    "ContractMixin",
    "FittedOnPrivateDataWarning",
    "Interval",
    "Optional",
    "Options",
    "ParameterTypeError",
    "check_budget",
    "check_feature_names",
    "check_flag",
    "check_fraction",
    "check_integer",
    "check_number",
    "check_param",
    "declared_constraints",
    "fraction",
    "preprocessing_reasons",
    "validate_params",
]


class ParameterTypeError(TypeError, ValueError):
    """A parameter of the wrong type. A ``TypeError``; also a ``ValueError`` so that one
    ``except ValueError`` catches every bad parameter, like scikit-learn's
    ``InvalidParameterError``."""


class FittedOnPrivateDataWarning(UserWarning):
    """A preprocessing step fitted on the private data (or not confirmed as a fixed
    per-record function) runs before this estimator: the transformed records may depend on
    every record, so the declared bounds and the privacy guarantee no longer hold; the
    record is then ``"data-dependent"``."""


class Constraint:
    """One declared constraint: ``describe()`` for messages, ``accepts_type`` and
    ``accepts`` for the two halves of the error policy, ``convert`` for the checked value."""

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def accepts_type(self, value: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def accepts(self, value: Any) -> bool:
        return True

    #: Set on constraints of required parameters: ``None`` is then refused with
    #: ``"{name} is required: {required_hint}"`` (a ValueError: nothing was given).
    required_hint: str | None = None

    def convert(self, value: Any) -> Any:
        return value

    #: What a value of the right type outside the allowed set raises (a ValueError).
    error: type[ValueError] = ValueError

    def message(self, name: str, value: Any) -> str:
        if value is None and self.required_hint:
            return f"{name} is required: {self.required_hint}"
        return f"{name} must be {self.describe()}; got {value!r}"


class Required(Constraint):
    """``constraint``, with ``None`` refused as a missing required parameter."""

    def __init__(self, constraint: Constraint, hint: str) -> None:
        self.constraint, self.required_hint = constraint, hint

    def describe(self) -> str:
        return self.constraint.describe()

    def accepts_type(self, value: Any) -> bool:
        return self.constraint.accepts_type(value)

    def accepts(self, value: Any) -> bool:
        return self.constraint.accepts(value)

    def convert(self, value: Any) -> Any:
        return self.constraint.convert(value)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _is_integral(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


class Interval(Constraint):
    """A finite real (or integral, ``integer=True``) number in an interval.

    ``closed`` is ``"neither"``, ``"left"``, ``"right"`` or ``"both"``; an unbounded end is
    ``None``.
    """

    def __init__(self, low: float | None, high: float | None, *, closed: str = "neither",
                 integer: bool = False) -> None:
        self.low, self.high, self.closed, self.integer = low, high, closed, integer

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a finite number"
        if self.low is not None and self.high is not None and not self.integer:
            kind = "a number"
        left = self.closed in ("left", "both")
        right = self.closed in ("right", "both")
        if self.low is not None and self.high is not None:
            return f"{kind} in {'[' if left else '('}{self.low}, {self.high}{']' if right else ')'}"
        if self.low is not None:
            return f"{kind} {'>=' if left else '>'} {self.low}"
        if self.high is not None:
            return f"{kind} {'<=' if right else '<'} {self.high}"
        return kind

    def accepts_type(self, value: Any) -> bool:
        return _is_integral(value) if self.integer else _is_real(value)

    def accepts(self, value: Any) -> bool:
        if not math.isfinite(float(value)):
            return False
        if self.low is not None:
            if value < self.low or (value == self.low and self.closed not in ("left", "both")):
                return False
        if self.high is not None:
            if value > self.high or (value == self.high and self.closed not in ("right", "both")):
                return False
        return True

    def convert(self, value: Any) -> Any:
        return int(value) if self.integer else float(value)


class Options(Constraint):
    """One of a fixed set of strings (or other hashable values)."""

    def __init__(self, *options: Any) -> None:
        self.options = options

    def describe(self) -> str:
        shown = [repr(o) for o in self.options]
        return "one of " + ", ".join(shown) if len(shown) > 1 else shown[0]

    def accepts_type(self, value: Any) -> bool:
        # isinstance, so that numpy strings pass; booleans are never options of numbers.
        return any(
            isinstance(value, type(o)) and not isinstance(value, (bool, np.bool_))
            for o in self.options
        )

    def accepts(self, value: Any) -> bool:
        return any(value == o for o in self.options)


class Optional(Constraint):
    """``constraint`` or ``None`` (for "use the default" / "take it from elsewhere")."""

    def __init__(self, constraint: Constraint) -> None:
        self.constraint = constraint

    def describe(self) -> str:
        return self.constraint.describe()

    def accepts_type(self, value: Any) -> bool:
        return value is None or self.constraint.accepts_type(value)

    def accepts(self, value: Any) -> bool:
        return value is None or self.constraint.accepts(value)

    def convert(self, value: Any) -> Any:
        return None if value is None else self.constraint.convert(value)


class _Flag(Constraint):
    def describe(self) -> str:
        return "True or False"

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (bool, np.bool_))

    def convert(self, value: Any) -> bool:
        return bool(value)


class _NoneC(Constraint):
    def describe(self) -> str:
        return "None"

    def accepts_type(self, value: Any) -> bool:
        return value is None


class _Callable(Constraint):
    def describe(self) -> str:
        return "a callable"

    def accepts_type(self, value: Any) -> bool:
        return callable(value)


class _Vector(Constraint):
    """A finite one-dimensional vector of numbers (a public mean, say)."""

    def describe(self) -> str:
        return "a finite one-dimensional vector"

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (list, tuple, np.ndarray, pd.Series))

    def accepts(self, value: Any) -> bool:
        try:
            vector = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            return False
        return vector.ndim == 1 and bool(np.all(np.isfinite(vector)))


class AnyOf(Constraint):
    """Any one of several constraints (``None`` allowed if one of them is :data:`NONE`)."""

    def __init__(self, *constraints: Constraint) -> None:
        self.constraints = constraints

    def describe(self) -> str:
        return " or ".join(c.describe() for c in self.constraints)

    def accepts_type(self, value: Any) -> bool:
        return any(c.accepts_type(value) for c in self.constraints)

    def accepts(self, value: Any) -> bool:
        return any(c.accepts_type(value) and c.accepts(value) for c in self.constraints)

    def convert(self, value: Any) -> Any:
        for c in self.constraints:
            if c.accepts_type(value) and c.accepts(value):
                return c.convert(value)
        return value  # pragma: no cover - accepts() was checked first


class _Budget(Constraint):
    required_hint = (
        "pass PureDP, ApproxDP, ZCDP or GDP, or NonPrivate() for a non-private reference run"
    )

    def describe(self) -> str:
        return "a PureDP, ApproxDP, ZCDP, GDP or NonPrivate value"

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, Budget)


class BudgetOf(Constraint):
    """A budget of one of the given notions (a method whose noise delivers only these):
    another notion raises :class:`~dpggm.exceptions.IncompatibleBudgetError` (a
    ``ValueError``)."""

    error = IncompatibleBudgetError

    def __init__(self, *notions: type, why: str = "", positive_delta: bool = False) -> None:
        self.notions, self.why, self.positive_delta = notions, why, positive_delta
        self.required_hint = _Budget.required_hint

    def describe(self) -> str:
        names = " or ".join(n.__name__ for n in self.notions)
        delta = " (ApproxDP with delta > 0)" if self.positive_delta else ""
        return f"a {names} budget{delta}" + (f" ({self.why})" if self.why else "")

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, Budget)

    def accepts(self, value: Any) -> bool:
        from dpggm.privacy.budgets import ApproxDP

        if self.positive_delta and isinstance(value, ApproxDP) and not value.delta > 0:
            return False
        return isinstance(value, self.notions)


class BoxBounds(Constraint):
    """Coordinate-wise bounds only: ``Box(b)`` or the text ``'box:B'`` (a row-norm bound is
    a bad value for a method that measures entries one by one)."""

    required_hint = "declare Box(b) (|x_j| <= b_j) from domain knowledge"

    def __init__(self, owner: str = "") -> None:
        self.owner = owner

    def describe(self) -> str:
        return "Box(b) or the text 'box:B'" + (
            f" ({self.owner} needs coordinate-wise bounds)" if self.owner else "")

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (Bounds, str))

    def accepts(self, value: Any) -> bool:
        from dpggm.mechanisms.bounds import Box

        try:
            return isinstance(check_bounds(value), Box)
        except ValueError:
            return True  # a malformed text: convert() names what is wrong with it

    def convert(self, value: Any) -> Bounds:
        return check_bounds(value)


class _Bounds(Constraint):
    """``RowNorm``/``Box`` objects or the ``"l2:B"``/``"box:B"`` strings, everywhere."""

    required_hint = (
        "declare RowNorm(B) or Box(b) from domain knowledge (or, giving up the formal "
        "guarantee, dpggm.mechanisms.bounds_from_data)"
    )

    def describe(self) -> str:
        return "RowNorm(B), Box(b), or the text 'l2:B' or 'box:B'"

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (Bounds, str))

    def convert(self, value: Any) -> Bounds:
        # check_bounds parses the text form and raises ValueError naming ``bounds``.
        return check_bounds(value)


class _RandomState(Constraint):
    def describe(self) -> str:
        return "None, a non-negative integer seed, a numpy Generator or 'secure'"

    def accepts_type(self, value: Any) -> bool:
        # A RandomSource is how an estimator hands its own stream to an inner one.
        from dpggm.mechanisms.random import RandomSource

        return (
            value is None
            or _is_integral(value)
            or isinstance(value, (np.random.Generator, str, RandomSource))
        )

    def accepts(self, value: Any) -> bool:
        if isinstance(value, str):
            return value == "secure"
        if _is_integral(value):
            return value >= 0
        return True


class _Estimator(Constraint):
    def describe(self) -> str:
        return "an estimator of this package (with fit and get_params)"

    def accepts_type(self, value: Any) -> bool:
        return hasattr(value, "fit") and hasattr(value, "get_params")


class _ColumnRanges(Constraint):
    """Declared public ranges of some columns: ``None`` or a mapping from a column name
    (``str``) or a 0-based position (``int``) to ``(low, high)``, finite with
    ``low < high``. Converts to a tuple of ``(key, low, high)``; whether the names exist
    is checked against the data."""

    def describe(self) -> str:
        return ("None or a mapping from column names (str) or 0-based positions (int) to "
                "(low, high) pairs of finite numbers with low < high")

    def accepts_type(self, value: Any) -> bool:
        return value is None or isinstance(value, Mapping)

    @staticmethod
    def _problem(key: Any, pair: Any) -> str | None:
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (str, numbers.Integral)):
            return f"the key {key!r} must be a column name (str) or a 0-based position (int)"
        if isinstance(key, numbers.Integral) and key < 0:
            return f"the position {key!r} must be >= 0"
        if isinstance(key, str) and not key:
            return "a column name must not be empty"
        if isinstance(pair, (str, bytes)) or not isinstance(pair, (tuple, list, np.ndarray)) \
                or len(pair) != 2:
            return f"the range of {key!r} must be a pair (low, high); got {pair!r}"
        low, high = pair
        if not (_is_real(low) and _is_real(high)):
            return f"the range of {key!r} must be two numbers; got {pair!r}"
        if not (math.isfinite(float(low)) and math.isfinite(float(high))):
            return f"the range of {key!r} must be finite; got {pair!r}"
        if not float(low) < float(high):
            return f"the range of {key!r} must have low < high; got {pair!r}"
        return None

    def accepts(self, value: Any) -> bool:
        return value is None or all(self._problem(k, v) is None for k, v in value.items())

    def message(self, name: str, value: Any) -> str:
        if isinstance(value, Mapping):
            for key, pair in value.items():
                problem = self._problem(key, pair)
                if problem is not None:
                    return f"{name}: {problem}"
        return f"{name} must be {self.describe()}; got {value!r}"

    def convert(self, value: Any) -> tuple[tuple[str | int, float, float], ...]:
        if value is None:
            return ()
        return tuple((k if isinstance(k, str) else int(k), float(v[0]), float(v[1]))
                     for k, v in value.items())


#: The shared declarations.
BUDGET = _Budget()
BOUNDS = _Bounds()
NEIGHBORS = Options(*NEIGHBOR_RELATIONS)
RANDOM_STATE = _RandomState()
NOISE = Options("exact", "float")
FLAG = _Flag()
NONE = _NoneC()
CALLABLE = _Callable()
VECTOR = _Vector()
COLUMN_RANGES = _ColumnRanges()
ESTIMATOR = _Estimator()
REPORT_DELTA = Interval(0, 1)
CALIBRATION = Options("analytic", "classical")


def fraction() -> Interval:
    """A share of a budget or a probability: a number in (0, 1)."""
    return Interval(0, 1)


def check_param(value: Any, constraint: Constraint, *, name: str) -> Any:
    """Check one value against one constraint; return the converted value."""
    if not constraint.accepts_type(value):
        if value is None and constraint.required_hint:
            raise ValueError(constraint.message(name, value))
        raise ParameterTypeError(constraint.message(name, value))
    if not constraint.accepts(value):
        raise constraint.error(constraint.message(name, value))
    try:
        return constraint.convert(value)
    except ValueError as exc:
        # A parser's message (the bound text, say) is prefixed with the parameter's name.
        if str(exc).startswith(name):
            raise
        raise ValueError(f"{name}: {exc}") from None


def declared_constraints(cls: type) -> dict[str, Constraint]:
    """Every constraint ``cls`` declares, its base classes' included (a subclass may
    override one by name)."""
    merged: dict[str, Constraint] = {}
    for klass in reversed(cls.__mro__):
        merged.update(klass.__dict__.get("_constraints", {}))
    return merged


def validate_params(estimator: Any) -> dict[str, Any]:
    """Check every declared parameter of ``estimator``; return the converted values.

    Parameters are read through ``get_params(deep=False)`` (never ``getattr`` with a
    default): a declared parameter that the constructor does not take is a programming
    error and raises ``AttributeError``.
    """
    params = estimator.get_params(deep=False)
    checked: dict[str, Any] = {}
    for name, constraint in declared_constraints(type(estimator)).items():
        if name not in params:
            raise AttributeError(
                f"{type(estimator).__name__} declares a constraint on {name!r}, which its "
                "constructor does not take"
            )
        checked[name] = check_param(params[name], constraint, name=name)
    return checked


# ------------------------------------------------------------------ scalar validators
# The one set of scalar checks the estimators and solvers share.


def check_budget(budget: Any, *, name: str = "budget") -> Budget:
    """A budget must be given explicitly; ``NonPrivate()`` for a reference run."""
    return check_param(budget, BUDGET, name=name)


def check_fraction(value: Any, *, name: str) -> float:
    """A number in (0, 1)."""
    return check_param(value, fraction(), name=name)


def check_number(value: Any, *, name: str, low: float | None = None,
                 high: float | None = None, closed: str = "left") -> float:
    """A finite real number in the given interval (``>= low`` by default)."""
    return check_param(value, Interval(low, high, closed=closed), name=name)


def check_integer(value: Any, *, name: str, low: int | None = 1,
                  high: int | None = None) -> int:
    """An integer in ``[low, high]`` (``>= 1`` by default)."""
    return check_param(value, Interval(low, high, closed="both", integer=True), name=name)


def check_flag(value: Any, *, name: str) -> bool:
    """``True`` or ``False`` (NumPy booleans included; ``0`` and ``1`` are not flags)."""
    return check_param(value, FLAG, name=name)


# ------------------------------------------------------------------ the contract mixin


def _has_named_columns(X: Any) -> bool:
    """DataFrames (pandas or Dask) and files (whose header or schema names the columns)
    carry feature names; arrays do not."""
    from dpggm.data.tables import TableFile, is_dask_collection

    if is_dask_collection(X):
        return hasattr(X, "columns")
    return isinstance(X, (pd.DataFrame, str, os.PathLike, TableFile))


#: How far up the call stack a running ``Pipeline.fit`` is looked for (it sits a few frames
#: above the estimator's ``fit``, more when this estimator is fitted by a wrapper).
_MAX_FRAMES = 40
#: A public probe for the per-record check: fixed positive values, so that ``log``,
#: ``sqrt`` and reciprocals are defined.
_PROBE_ROWS = 5


def _running_pipelines(estimator: Any) -> list[tuple[Any, bool, Any]]:
    """The scikit-learn ``Pipeline`` objects whose ``fit`` (or ``fit_transform`` /
    ``fit_predict``) is running now and whose final step is ``estimator`` -- or an estimator
    whose ``fit`` is running and fits ``estimator`` (a wrapper such as
    ``PrivateLinearRegression``), or an enclosing pipeline of such a pipeline -- found by
    walking the caller frames, innermost first. Each comes as ``(pipeline, direct, X)``:
    ``direct`` when ``estimator`` is itself the final step, ``X`` the pipeline's input (read
    for its shape and column names only)."""
    try:
        from sklearn.pipeline import Pipeline
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return []
    frame = inspect.currentframe()
    running: list[Any] = [estimator]
    found: list[tuple[Any, bool, Any]] = []
    try:
        for _ in range(_MAX_FRAMES):
            if frame is None:
                break
            owner = frame.f_locals.get("self")
            if isinstance(owner, Pipeline) and owner.steps:
                final = owner.steps[-1][1]
                if any(final is candidate for candidate in running) and not any(
                    owner is pipeline for pipeline, _, _ in found
                ):
                    found.append((owner, final is estimator, frame.f_locals.get("X")))
            if owner is not None and not any(owner is candidate for candidate in running):
                running.append(owner)
            frame = frame.f_back
    finally:
        del frame
    return found


def _learns_from_data(step: Any) -> bool:
    """Whether a transformer learns from the data it is fitted on, by scikit-learn's own
    estimator tags (``requires_fit``; ``stateless`` in older versions). Unknown objects
    are taken to learn."""
    try:
        from sklearn.utils import get_tags
    except ImportError:  # pragma: no cover - scikit-learn < 1.6
        try:
            return not bool(step._get_tags().get("stateless", False))
        except Exception:
            return True
    try:
        return bool(get_tags(step).requires_fit)
    except Exception:
        return True


def _probe(X: Any) -> Any:
    """Public stand-in records with the columns of ``X`` (only its width and column names
    are read, never its values)."""
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2 or int(shape[1]) < 1:
        return None
    values = np.random.default_rng(20).uniform(0.5, 2.0, size=(_PROBE_ROWS, int(shape[1])))
    if isinstance(X, pd.DataFrame):
        return pd.DataFrame(values, columns=X.columns)
    return values


def _rows(data: Any, i: int) -> Any:
    return data.iloc[i:i + 1] if isinstance(data, (pd.DataFrame, pd.Series)) else data[i:i + 1]


def _dense(data: Any) -> np.ndarray:
    if hasattr(data, "toarray"):
        data = data.toarray()
    return np.asarray(data, dtype=float)


def _per_record_problem(step: Any, probe: Any) -> tuple[str | None, Any]:
    """Check on the public probe that ``step.transform`` maps each record to one record
    whatever the other records are. Returns (the problem, or None; the transformed probe)."""
    if probe is None:
        return "the pipeline's input has no shape to build a public probe from", None
    try:
        whole = step.transform(probe)
        alone = [_dense(step.transform(_rows(probe, i))) for i in range(_PROBE_ROWS)]
        dense = _dense(whole)
    except Exception as exc:  # any failure means the step could not be verified
        return f"transforming a public probe raised {type(exc).__name__}", None
    if dense.ndim != 2 or dense.shape[0] != _PROBE_ROWS or any(
        a.shape != (1, dense.shape[1]) for a in alone
    ):
        return "it does not map each record to exactly one record", None
    same = all(
        np.allclose(a[0], dense[i], rtol=1e-9, atol=1e-12, equal_nan=True)
        for i, a in enumerate(alone)
    )
    if not same:
        return "its output for a record changes with the other records", None
    return None, whole


def preprocessing_reasons(estimator: Any) -> tuple[tuple[str, ...], bool]:
    """Why the steps before ``estimator`` in a running scikit-learn ``Pipeline`` void the
    guarantee, one reason per step; and whether ``estimator`` is the pipeline's final step
    itself (rather than fitted by it through a wrapper).

    A step is harmless only if it is a fixed public function applied to each record alone:
    scikit-learn's tags say it does not learn from the data (``requires_fit=False``:
    ``FunctionTransformer``, ``Normalizer``, ``Binarizer``...) *and* a public probe shows
    that it transforms each record independently of the others (which rules out, say,
    ``FunctionTransformer(lambda X: X - X.mean(0))``). A step that learned from the data
    (``StandardScaler``), mixes records, or cannot be checked gives a reason. The probe
    uses only the width (and column names) of the pipeline's input, never its values, so
    the verdict is a function of public quantities.

    What cannot be detected: a transformer fitted by hand on the private data before
    ``fit`` is called (only its output reaches the estimator), meta-estimators other than
    ``Pipeline`` (``make_pipeline`` builds a ``Pipeline`` and is covered), and a stateless
    function whose parameters were computed from the private data (``kw_args`` of a
    ``FunctionTransformer`` set from the data). Those remain the caller's responsibility.
    """
    pipelines = _running_pipelines(estimator)
    reasons: list[str] = []
    for pipeline, _, X in pipelines:
        probe = _probe(X)
        for name, step in pipeline.steps[:-1]:
            if step is None or (isinstance(step, str) and step == "passthrough"):
                continue
            label = f"the Pipeline step {name!r} ({type(step).__name__})"
            if _learns_from_data(step):
                reasons.append(
                    f"{label} was fitted on the private data before this estimator: every "
                    "transformed record depends on all the records, so the declared bounds "
                    "and sensitivities do not hold"
                )
                probe = None
                continue
            problem, probe = _per_record_problem(step, probe)
            if problem is not None:
                reasons.append(
                    f"{label} could not be confirmed as a fixed per-record function "
                    f"({problem}), so the declared bounds and sensitivities may not hold"
                )
    return tuple(reasons), bool(pipelines) and pipelines[0][1]


class ContractMixin:
    """The estimator contract: declared constraints and the common fitted attributes.

    Subclasses declare ``_constraints``; those of base classes are inherited and may be
    overridden by name.
    """

    _constraints: ClassVar[Mapping[str, Constraint]] = {}
    #: Whether the estimator reads private records (so that preprocessing fitted on them
    #: matters); post-processing estimators of a noisy release do not.
    _reads_private_records: ClassVar[bool] = False

    def _validate_params(self) -> dict[str, Any]:
        """Check every declared parameter (before any data is read or budget spent), and
        find the preprocessing steps that void the guarantee (:func:`preprocessing_reasons`):
        they are kept in ``_preprocessing_reasons``, which the release context turns into a
        ``"data-dependent"`` record, and announced by a warning when this estimator is the
        pipeline's final step."""
        checked = validate_params(self)
        reasons, direct = (
            preprocessing_reasons(self) if self._reads_private_records else ((), False)
        )
        self._preprocessing_reasons = reasons
        if reasons and direct:
            warnings.warn(
                f"{type(self).__name__} is fitted inside a Pipeline after step(s) that void "
                f"the privacy guarantee: {'; '.join(reasons)}. The record says "
                "validity='data-dependent' and no ledger books it. Fit preprocessing on "
                "public data, or use fixed public per-record transformations",
                FittedOnPrivateDataWarning,
                stacklevel=3,
            )
        return checked

    def _set_fitted(
        self,
        X: Any,
        *,
        n_samples: int | None,
        n_features: int,
        columns: list[str],
        privacy: Any,
        covariance: np.ndarray | None = None,
        precision: np.ndarray | None = None,
        adjacency: np.ndarray | None = None,
    ) -> None:
        """Set the fitted attributes every estimator shares.

        ``feature_names_in_`` is set, as an ndarray of str, only when ``X`` names its
        columns (a DataFrame or a CSV file with a header), as in scikit-learn; otherwise it
        is removed. ``adjacency_`` is a boolean matrix with a zero diagonal.
        """
        if n_samples is not None:
            # As given: under add/remove it is the released noisy count, not rounded here.
            self.n_samples_ = n_samples
        self.n_features_in_ = int(n_features)
        if _has_named_columns(X):
            self.feature_names_in_ = np.asarray([str(c) for c in columns], dtype=object)
        elif "feature_names_in_" in self.__dict__:
            del self.feature_names_in_
        if covariance is not None:
            self.covariance_ = covariance
        if precision is not None:
            self.precision_ = precision
        if adjacency is not None:
            self._set_graph(adjacency)
        self.privacy_ = privacy

    def _set_graph(self, adjacency: np.ndarray) -> None:
        """``adjacency_``: the estimated graph as a symmetric boolean matrix with a zero
        diagonal (every graph estimator sets it)."""
        graph = np.asarray(adjacency, dtype=bool)
        graph = graph | graph.T
        np.fill_diagonal(graph, False)
        self.adjacency_ = graph


def feature_names(estimator: Any) -> list[str]:
    """The fitted estimator's column names: ``feature_names_in_`` when the input named its
    columns, ``x0 .. x{p-1}`` otherwise (for tables and files written from a fit)."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        return [f"x{j}" for j in range(int(estimator.n_features_in_))]
    return [str(c) for c in names]


def check_feature_names(estimator: Any, X: Any) -> None:
    """At ``predict``: the columns of ``X`` must be those seen in ``fit``, in that order
    (scikit-learn's rule; reordered columns would silently change predictions)."""
    fitted = getattr(estimator, "feature_names_in_", None)
    given = [str(c) for c in X.columns] if isinstance(X, pd.DataFrame) else None
    if fitted is None:
        if given is not None:
            warnings.warn(
                f"X has feature names, but {type(estimator).__name__} was fitted without "
                "feature names; the columns are taken by position",
                UserWarning,
                stacklevel=3,
            )
        return
    if given is None:
        warnings.warn(
            f"X has no feature names, but {type(estimator).__name__} was fitted with feature "
            "names; the columns are taken in the fitted order",
            UserWarning,
            stacklevel=3,
        )
        return
    if list(given) != list(fitted):
        missing = [c for c in fitted if c not in given]
        unseen = [c for c in given if c not in set(fitted)]
        detail = []
        if unseen:
            detail.append(f"unseen at fit time: {unseen}")
        if missing:
            detail.append(f"seen at fit time, yet now missing: {missing}")
        if not detail:
            detail.append("the same names in a different order")
        raise ValueError(
            "The feature names should match those that were passed during fit ("
            + "; ".join(detail) + f"). Expected {list(fitted)}"
        )

