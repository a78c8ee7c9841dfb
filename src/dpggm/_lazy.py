"""Lazy exports for package ``__init__`` modules (PEP 562).

The command line must start fast: ``dpggm --help`` and the ``budget`` commands need
neither scikit-learn nor numba nor SciPy's optimisers, so a package names its exports and
the module each lives in, and imports that module only when the name is first used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, exports: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, importing ``exports[name]`` (a
    module path) on first access of ``name`` and caching the value in ``namespace``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


class LazyModule:
    """A module imported on first attribute access (``optimize = LazyModule("scipy.optimize")``)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"LazyModule({self._name!r})"
