"""The examples in the package's docstrings (``>>>``) run as doctests with the suite, so
an example that stops being true fails here (and the README's test command runs them).

Every module of ``src/dpggm`` whose source holds ``>>>`` is collected, so a new example is
run without being listed; :data:`MIN_EXAMPLES` notices examples that silently stop being
found."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
#: The examples found when this test was written (46 lines of ``>>>`` in 10 modules).
MIN_EXAMPLES = 46
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted((SRC / "dpggm").rglob("*.py")):
        if ">>>" in path.read_text(encoding="utf-8"):
            names.append(".".join(path.relative_to(SRC).with_suffix("").parts)
                         .removesuffix(".__init__"))
    return names


MODULES = _modules_with_examples()


def _doctests(name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(name)
    return [test for test in doctest.DocTestFinder().find(module, name) if test.examples]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    tests = _doctests(name)
    assert tests, f"{name} holds '>>>' but no docstring example is found in it"
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in tests:
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_every_example_is_found():
    found = sum(len(test.examples) for name in MODULES for test in _doctests(name))
    assert found >= MIN_EXAMPLES, (found, MODULES)
