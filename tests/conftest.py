"""Markers that let each kind of test run alone: ``python3 -m pytest -m unit`` (the library
called in-process, no command line, no statistical test), ``-m statistical`` (seeded
hypothesis tests of distributions and error rates, and the empirical privacy audit) and
``-m cli`` (the command line, in-process through Typer's runner or as a subprocess).

The marker follows from what a test calls, so a new test is marked without being listed:
the names its code refers to, through the module's own helpers and its fixtures (three
levels deep), are looked up in :data:`CLI_NAMES` and :data:`STATISTICAL_NAMES`. A test may
be both ``cli`` and ``statistical``; ``unit`` is every test that is neither. The reduced
re-run of the reproduction page keeps its own marker (``reproduction``) and is left out of
the ordinary run (pyproject.toml).
"""

from __future__ import annotations

import os
import types
from typing import Any

import pytest
from hypothesis import settings

# Property tests draw their examples from a seed fixed per test, and no example database
# carries failures between runs: the suite gives the same verdict on every run and machine
# (an unseeded search once found, on one CI run only, an example at the edge of a solver
# test's tolerance). HYPOTHESIS_PROFILE=explore searches afresh on demand.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

#: Names a test that drives the command line refers to.
CLI_NAMES = frozenset({"CliRunner", "runner", "invoke", "subprocess", "Popen", "check_output"})
#: SciPy's hypothesis tests, as the statistical tests call them.
STATISTICAL_NAMES = frozenset({
    "kstest", "chisquare", "binomtest", "false_discovery_control", "ttest_1samp",
    "ttest_ind", "cramervonmises", "anderson", "shapiro", "wilcoxon", "mannwhitneyu",
})
#: Test modules that are statistical as a whole: the empirical privacy audit.
STATISTICAL_MODULES = frozenset({"test_audit"})
DEPTH = 3


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _code_names(constant)
    return names


def _names(function: Any, module: types.ModuleType, depth: int, seen: set[int]) -> set[str]:
    function = getattr(function, "__wrapped__", function)
    code = getattr(function, "__code__", None)
    if code is None or id(code) in seen:
        return set()
    seen.add(id(code))
    names = _code_names(code)
    if depth > 0:
        for name in list(names):
            helper = getattr(module, name, None)
            if isinstance(helper, types.FunctionType) and helper.__module__ == module.__name__:
                names |= _names(helper, module, depth - 1, seen)
    return names


def _referenced(item: pytest.Function) -> set[str]:
    module = item.module
    seen: set[int] = set()
    names = _names(item.function, module, DEPTH, seen)
    info = getattr(item, "_fixtureinfo", None)
    for fixture in getattr(info, "names_closure", ()):
        for definition in (info.name2fixturedefs.get(fixture) or ()):
            names |= _names(definition.func, module, DEPTH, seen)
    return names


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not isinstance(item, pytest.Function) or item.get_closest_marker("reproduction"):
            continue
        names = _referenced(item)
        statistical = (item.module.__name__.rpartition(".")[2] in STATISTICAL_MODULES
                       or bool(names & STATISTICAL_NAMES))
        cli = bool(names & CLI_NAMES)
        if statistical:
            item.add_marker(pytest.mark.statistical)
        if cli:
            item.add_marker(pytest.mark.cli)
        if not (statistical or cli):
            item.add_marker(pytest.mark.unit)
