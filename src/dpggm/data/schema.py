"""The public schema of a table: which columns are variables, which are identifiers or
left out, and what the questionnaire or the protocol makes public about each variable.

A :class:`TableSchema` is a list of declarations, each for a column name or a glob pattern
(``item_*``, ``q?``, ``lab_[abc]``):

* ``kind`` -- ``continuous``, ``ordinal`` or ``binary`` (a variable), ``id`` (a record
  identifier: never a variable) or ``drop`` (not used);
* ``bounds`` -- a declared range ``(low, high)`` for a variable, such as ``(1, 6)`` for a
  Likert item answered 1 to 6. A declared range is public: an estimator that needs a
  column's range (:class:`~dpggm.estimators.graph.PrivateGraph` under ``bounds="auto"``)
  takes it as given and spends nothing on that column.

Columns no declaration names are variables of no declared kind (``others="keep"``), or are
left out (``others="drop"``), or make the table refused (``others="refuse"``: a column the
schema does not expect).

A schema is resolved against the column names of a table (:meth:`TableSchema.resolve`),
which are public; nothing here reads a value. Every name or pattern must match a column
(a misspelt ``--drop itme_*`` is an error, not a no-op), an exact name wins over a
pattern, and two patterns that say different things of one column are refused.

Schema files (``--schema FILE``) are JSON or YAML (YAML needs PyYAML, in
``dpggm[formats]``)::

    columns:
      id: id
      date: drop
      sex: {kind: binary, bounds: [1, 2]}
      "item_*": {kind: ordinal, bounds: [1, 6]}
      crp: {kind: continuous, bounds: [0, 300]}
    others: keep        # or drop, or refuse

Privacy
-------
A schema is a public declaration about the table's format, like a codebook: what it says
is taken as true. A declared range that the data exceed is not widened: values beyond it
are clipped onto it (and counted for the curator only).
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "KINDS",
    "VARIABLE_KINDS",
    "ColumnRule",
    "ResolvedColumns",
    "TableSchema",
]

#: Kinds of a variable (a column used in the estimate).
VARIABLE_KINDS = ("continuous", "ordinal", "binary")
#: Every kind a column may be declared.
KINDS = (*VARIABLE_KINDS, "id", "drop")
_OTHERS = ("keep", "drop", "refuse")
_GLOB_CHARACTERS = frozenset("*?[")


def _is_pattern(text: str) -> bool:
    return any(ch in _GLOB_CHARACTERS for ch in text)


def _check_bounds(bounds: Any, *, origin: str) -> tuple[float, float] | None:
    if bounds is None:
        return None
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, Sequence) or len(bounds) != 2:
        raise ValueError(f"{origin}: bounds must be two numbers (low, high); got {bounds!r}")
    values = []
    for value in bounds:
        if isinstance(value, bool):
            raise ValueError(f"{origin}: bounds must be numbers; got {value!r}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{origin}: bounds must be numbers; got {value!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"{origin}: bounds must be finite; got {value!r}")
        values.append(number)
    low, high = values
    if not low < high:
        raise ValueError(f"{origin}: the lower bound must be below the upper one; got "
                         f"{low:g} and {high:g}")
    return low, high


@dataclass(frozen=True)
class ColumnRule:
    """One declaration: a column name or glob ``pattern``, with a ``kind`` and/or declared
    ``bounds``; ``origin`` says where it was declared, in the caller's terms (used in
    messages: ``"--scale 'item_*=1:6'"``, ``"schema.yaml"``, ``"drop"``)."""

    pattern: str
    kind: str | None = None
    bounds: tuple[float, float] | None = None
    origin: str = ""

    def __post_init__(self) -> None:
        origin = self.origin or f"column {self.pattern!r}"
        if not isinstance(self.pattern, str) or not self.pattern:
            raise ValueError(f"{origin}: a column name or pattern must be a non-empty string; "
                             f"got {self.pattern!r}")
        if self.kind is not None and self.kind not in KINDS:
            raise ValueError(f"{origin}: kind of {self.pattern!r} must be one of "
                             f"{', '.join(KINDS)}; got {self.kind!r}")
        bounds = _check_bounds(self.bounds, origin=origin)
        object.__setattr__(self, "bounds", bounds)
        if bounds is not None and self.kind in ("id", "drop"):
            raise ValueError(f"{origin}: column {self.pattern!r} is declared {self.kind!r}, "
                             "which is not a variable: it takes no bounds")
        if self.kind is None and bounds is None:
            raise ValueError(f"{origin}: a declaration of {self.pattern!r} needs a kind or "
                             "bounds")

    @property
    def is_pattern(self) -> bool:
        return _is_pattern(self.pattern)

    def matches(self, name: str) -> bool:
        if self.pattern == name:
            return True
        return self.is_pattern and fnmatch.fnmatchcase(name, self.pattern)

    def describe(self) -> str:
        return self.origin or repr(self.pattern)


@dataclass(frozen=True)
class ResolvedColumns:
    """A schema applied to the column names of one table (public facts only).

    Attributes
    ----------
    names : list of str
        Every column of the table, in its order.
    variables : list of str
        The columns used as variables, in output order.
    positions : list of int
        Their 0-based positions among ``names``.
    kinds : dict
        Declared kind of each variable (``None``: not declared).
    ranges : dict
        Declared range ``(low, high)`` of the variables that have one.
    identifiers, dropped : list of str
        Columns left out as record identifiers, and for any other reason.
    """

    names: list[str]
    variables: list[str]
    positions: list[int]
    kinds: dict[str, str | None] = field(default_factory=dict)
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    identifiers: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (public: names and declarations only)."""
        return {
            "variables": [
                {"name": name, "kind": self.kinds.get(name),
                 "declared_range": list(self.ranges[name]) if name in self.ranges else None}
                for name in self.variables],
            "identifiers": list(self.identifiers),
            "dropped": list(self.dropped),
        }


def _listing(names: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


@dataclass(frozen=True)
class TableSchema:
    """The public schema of a table: column roles and declared ranges.

    Parameters
    ----------
    rules : sequence of ColumnRule
        The declarations, for column names or glob patterns.
    columns : sequence of str, optional
        Use only these columns as variables, in this order (names or patterns; a pattern
        adds its matches in the table's order). Default: every column that is not an
        identifier or dropped.
    others : {"keep", "drop", "refuse"}
        What becomes of a column that no declaration (and no ``columns`` entry) names:
        a variable, left out, or the table is refused.
    terms : {"python", "cli"}
        How messages name the options (``drop=[...]`` or ``--drop``).

    Examples
    --------
    >>> schema = TableSchema.build(id=["id"], drop=["date", "sex"],
    ...                            scales={"item_*": (1, 6)})
    >>> resolved = schema.resolve(["id", "date", "sex", "item_1", "item_2"])
    >>> resolved.variables, resolved.ranges["item_2"]
    (['item_1', 'item_2'], (1.0, 6.0))

    Privacy
    -------
    Public declarations, resolved against public column names; no value is read. A
    declared range is taken as true: the data are clipped onto it, never it onto the data.
    """

    rules: tuple[ColumnRule, ...] = ()
    columns: tuple[str, ...] | None = None
    others: str = "keep"
    terms: str = "python"

    def __post_init__(self) -> None:
        rules = tuple(self.rules)
        for rule in rules:
            if not isinstance(rule, ColumnRule):
                raise TypeError(f"rules must be ColumnRule objects; got {rule!r}")
        object.__setattr__(self, "rules", rules)
        if self.columns is not None:
            if isinstance(self.columns, str):
                raise TypeError(f"columns must be a list of names; got the string "
                                f"{self.columns!r}")
            columns = tuple(self.columns)
            for name in columns:
                if not isinstance(name, str) or not name:
                    raise ValueError(f"{self._option('columns')} must hold column names; "
                                     f"got {name!r}")
            object.__setattr__(self, "columns", columns)
        if self.others not in _OTHERS:
            raise ValueError(f"others must be one of {', '.join(_OTHERS)}; got {self.others!r}")
        if self.terms not in ("python", "cli"):
            raise ValueError(f"terms must be 'python' or 'cli'; got {self.terms!r}")

    # -- construction --------------------------------------------------------------------

    @classmethod
    def build(
        cls, *, columns: Sequence[str] | None = None, drop: Iterable[str] = (),
        id: Iterable[str] = (), scales: Mapping[str, Sequence[float]] | None = None,
        kinds: Mapping[str, str] | None = None, others: str = "keep", terms: str = "python",
    ) -> TableSchema:
        """A schema from the usual keyword arguments: ``columns`` to use, columns to
        ``drop``, identifier columns ``id``, declared ranges ``scales`` (name or pattern ->
        ``(low, high)``) and ``kinds`` (name or pattern -> kind)."""
        cli = terms == "cli"
        rules: list[ColumnRule] = []
        for option, kind, names in (("drop", "drop", drop), ("id", "id", id)):
            if isinstance(names, str):
                names = [names]
            label = {"drop": "--drop", "id": "--id-col"}[option] if cli else option
            rules.extend(ColumnRule(name, kind=kind, origin=f"{label} {name!r}")
                         for name in names)
        for pattern, kind in (kinds or {}).items():
            rules.append(ColumnRule(pattern, kind=kind, origin=f"kinds[{pattern!r}]"))
        for pattern, bounds in (scales or {}).items():
            origin = (f"--scale '{pattern}={_number(bounds)}'" if cli
                      else f"scales[{pattern!r}]")
            rules.append(ColumnRule(pattern, bounds=tuple(bounds), origin=origin))
        return cls(tuple(rules), None if columns is None else tuple(columns), others, terms)

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any], *, origin: str = "schema",
                  terms: str = "python") -> TableSchema:
        """A schema from a mapping such as a parsed schema file: ``columns`` (a mapping of
        name or pattern to a kind or to ``{kind, bounds}``, or a list of
        ``{name, kind, bounds}``), optional ``use`` (the columns to use, in order) and
        ``others``."""
        if not isinstance(spec, Mapping):
            raise ValueError(f"{origin}: a schema is a mapping with a 'columns' entry; got "
                             f"{type(spec).__name__}")
        unknown = sorted(set(spec) - {"columns", "use", "others"})
        if unknown:
            raise ValueError(f"{origin}: unknown entr{'y' if len(unknown) == 1 else 'ies'} "
                             f"{', '.join(repr(k) for k in unknown)}; a schema has 'columns' "
                             "and optionally 'use' and 'others'")
        entries = spec.get("columns", {})
        items: list[tuple[str, Any]]
        if isinstance(entries, Mapping):
            items = [(str(name), value) for name, value in entries.items()]
        elif isinstance(entries, list):
            items = []
            for k, entry in enumerate(entries, start=1):
                if not isinstance(entry, Mapping) or "name" not in entry:
                    raise ValueError(f"{origin}: entry {k} of 'columns' needs a 'name'; got "
                                     f"{entry!r}")
                rest = {key: value for key, value in entry.items() if key != "name"}
                items.append((str(entry["name"]), rest))
        else:
            raise ValueError(f"{origin}: 'columns' must be a mapping (name: kind or "
                             f"{{kind, bounds}}) or a list; got {type(entries).__name__}")
        rules = [_rule_from_entry(name, value, origin=origin) for name, value in items]
        use = spec.get("use")
        if use is not None and (isinstance(use, str) or not isinstance(use, list)):
            raise ValueError(f"{origin}: 'use' must be a list of column names; got {use!r}")
        return cls(tuple(rules), None if use is None else tuple(str(u) for u in use),
                   str(spec.get("others", "keep")), terms)

    @classmethod
    def from_file(cls, path: str | os.PathLike, *, terms: str = "python") -> TableSchema:
        """A schema from a JSON (``.json``) or YAML (``.yaml``, ``.yml``) file."""
        path = Path(path)
        label = f"schema file {str(path)!r}"
        if not path.exists():
            raise FileNotFoundError(f"no such schema file: {str(path)!r}")
        if path.is_dir():
            raise ValueError(f"{label} is a directory; give a JSON or YAML file")
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".json":
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{label} is not valid JSON: {exc}") from None
        elif path.suffix.lower() in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:
                raise ImportError(f"reading the YAML {label} needs PyYAML: pip install "
                                  "'dpggm[formats]' (or write the schema as JSON)") from None
            try:
                spec = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise ValueError(f"{label} is not valid YAML: "
                                 f"{' '.join(str(exc).split())}") from None
        else:
            raise ValueError(f"{label}: give a .json, .yaml or .yml file; got "
                             f"{path.suffix or 'no suffix'!r}")
        return cls.from_dict(spec or {}, origin=label, terms=terms)

    def merged(self, other: TableSchema) -> TableSchema:
        """Both schemas' declarations (``other``'s ``columns`` and ``others`` when set)."""
        columns = other.columns if other.columns is not None else self.columns
        if self.columns is not None and other.columns is not None:
            raise ValueError(
                f"the columns to use are given twice ({_listing(self.columns)} and "
                f"{_listing(other.columns)}); give them once")
        others = other.others if other.others != "keep" else self.others
        return TableSchema(self.rules + other.rules, columns, others, self.terms)

    @property
    def declares_ranges(self) -> bool:
        return any(rule.bounds is not None for rule in self.rules)

    def _option(self, name: str) -> str:
        if self.terms == "cli":
            return {"columns": "--columns", "others": "others"}.get(name, name)
        return name

    # -- resolution --------------------------------------------------------------------

    def resolve(self, names: Sequence[str], *, where: str = "the table",
                identifiers_at: Sequence[int] = ()) -> ResolvedColumns:
        """Apply the schema to the column names of a table (all public); the columns at
        ``identifiers_at`` (0-based positions) are identifiers whatever their names.

        Raises
        ------
        ValueError
            A declaration or a ``columns`` entry that matches no column; a column named
            twice in ``columns``, or twice in the table and used; two patterns that say
            different things of one column; an identifier or dropped column listed in
            ``columns``; with ``others="refuse"``, a column nothing declares.
        """
        names = [str(n) for n in names]
        for rule in self.rules:
            if not any(rule.matches(name) for name in names):
                raise ValueError(f"{rule.describe()} matches no column of {where}; its "
                                 f"columns are {_listing(names)}")
        kinds: dict[int, str | None] = {}
        ranges: dict[int, tuple[float, float]] = {}
        declared: set[int] = set()
        fixed = set(identifiers_at)
        for j, name in enumerate(names):
            if j in fixed:
                kinds[j] = "id"
                declared.add(j)
                continue
            kind, bounds = self._declaration(name, where)
            if kind is not None or bounds is not None:
                declared.add(j)
            kinds[j] = kind
            if bounds is not None:
                ranges[j] = bounds
        leaving = {j for j, kind in kinds.items() if kind in ("id", "drop")}
        if self.columns is not None:
            positions = self._selected(names, leaving, where)
            declared.update(positions)
        else:
            positions = [j for j in range(len(names)) if j not in leaving]
            undeclared = [j for j in positions if j not in declared]
            if undeclared and self.others == "refuse":
                raise ValueError(
                    f"{where} has column(s) the schema does not declare: "
                    f"{_listing([names[j] for j in undeclared])}; declare them or set "
                    "others: keep (or drop)")
            if self.others == "drop":
                positions = [j for j in positions if j in declared]
        self._check_unique(names, positions, where)
        variables = [names[j] for j in positions]
        used = set(positions)
        return ResolvedColumns(
            names=names, variables=variables, positions=positions,
            kinds={names[j]: kinds[j] for j in positions},
            ranges={names[j]: ranges[j] for j in positions if j in ranges},
            identifiers=[names[j] for j in range(len(names)) if kinds[j] == "id"],
            dropped=[names[j] for j in range(len(names))
                     if j not in used and kinds[j] != "id"],
        )

    def _declaration(self, name: str, where: str) -> tuple[str | None, tuple[float, float] | None]:
        """The kind and bounds declared for ``name``: an exact name wins over patterns;
        patterns that disagree on an attribute are refused."""
        matching = [rule for rule in self.rules if rule.matches(name)]
        exact = [rule for rule in matching if rule.pattern == name]
        result: dict[str, tuple[Any, ColumnRule]] = {}
        for group in (exact, [r for r in matching if r.pattern != name]):
            found: dict[str, tuple[Any, ColumnRule]] = {}
            for rule in group:
                for attribute, value in (("kind", rule.kind), ("bounds", rule.bounds)):
                    if value is None:
                        continue
                    if attribute in found and found[attribute][0] != value:
                        first = found[attribute][1]
                        raise ValueError(
                            f"column {name!r} of {where} is declared twice with different "
                            f"{attribute}: {first.describe()} and {rule.describe()}; make one "
                            "of them name it exactly, or remove one")
                    found.setdefault(attribute, (value, rule))
            for attribute, entry in found.items():
                result.setdefault(attribute, entry)
        kind = result["kind"][0] if "kind" in result else None
        bounds = result["bounds"][0] if "bounds" in result else None
        if bounds is not None and kind in ("id", "drop"):
            raise ValueError(
                f"column {name!r} of {where} is declared {kind!r} by "
                f"{result['kind'][1].describe()} and given bounds by "
                f"{result['bounds'][1].describe()}; an identifier or dropped column is not "
                "a variable")
        return kind, bounds

    def _selected(self, names: list[str], leaving: set[int], where: str) -> list[int]:
        option = self._option("columns")
        positions: list[int] = []
        for entry in self.columns or ():
            if entry in names:
                matched = [j for j, name in enumerate(names) if name == entry]
            elif _is_pattern(entry):
                matched = [j for j, name in enumerate(names) if fnmatch.fnmatchcase(name, entry)]
            else:
                matched = []
            if not matched:
                raise ValueError(f"{option}: {entry!r} is not a column of {where}; its "
                                 f"columns are {_listing(names)}")
            for j in matched:
                if j in leaving:
                    raise ValueError(
                        f"column {names[j]!r} of {where} is listed in {option} but declared "
                        "an identifier or dropped; an identifier is never a variable")
                if j in positions:
                    raise ValueError(
                        f"column {names[j]!r} is listed twice in {option}; each column is "
                        "one variable (a duplicated column would make the covariance "
                        "singular)")
                positions.append(j)
        return positions

    @staticmethod
    def _check_unique(names: list[str], positions: list[int], where: str) -> None:
        first: dict[str, int] = {}
        for j, name in enumerate(names):
            if name in first and (j in positions or first[name] in positions):
                raise ValueError(
                    f"{where} has the column name {name!r} twice (columns {first[name] + 1} "
                    f"and {j + 1}); rename one so that each variable is named once")
            first.setdefault(name, j)

    def apply(self, frame: Any) -> Any:
        """The variables of a pandas DataFrame: ``frame`` restricted to them, in order."""
        resolved = self.resolve([str(c) for c in frame.columns], where="the DataFrame")
        return frame.iloc[:, resolved.positions]

    def to_dict(self) -> dict[str, Any]:
        """The schema as a mapping :meth:`from_dict` reads back (a list of declarations)."""
        columns = []
        for rule in self.rules:
            entry: dict[str, Any] = {"name": rule.pattern}
            if rule.kind is not None:
                entry["kind"] = rule.kind
            if rule.bounds is not None:
                entry["bounds"] = list(rule.bounds)
            columns.append(entry)
        out: dict[str, Any] = {"columns": columns, "others": self.others}
        if self.columns is not None:
            out["use"] = list(self.columns)
        return out


def _number(bounds: Sequence[float]) -> str:
    return ":".join(f"{float(b):g}" for b in bounds)


def _rule_from_entry(name: str, value: Any, *, origin: str) -> ColumnRule:
    where = f"{origin}, column {name!r}"
    if isinstance(value, str):
        return ColumnRule(name, kind=value, origin=where)
    if value is None or not isinstance(value, Mapping):
        raise ValueError(f"{where}: give a kind ({', '.join(KINDS)}) or a mapping with "
                         f"'kind' and/or 'bounds'; got {value!r}")
    unknown = sorted(set(value) - {"kind", "bounds"})
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(repr(k) for k in unknown)}; a "
                         "column takes 'kind' and 'bounds'")
    bounds = value.get("bounds")
    if isinstance(bounds, str):
        low, sep, high = bounds.partition(":")
        if not sep:
            raise ValueError(f"{where}: bounds must be [low, high] or 'low:high'; got "
                             f"{bounds!r}")
        bounds = (low.strip(), high.strip())
    return ColumnRule(name, kind=value.get("kind"), bounds=bounds, origin=where)
