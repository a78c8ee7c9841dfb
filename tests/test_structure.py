"""The package's structure, checked from its source: no import cycle between its modules,
no private name of one module used by another, no function over 120 lines without its
reason stated where it starts, and words a reader of the source can follow (no sections of
an unpublished specification or issue numbers, the papers' experiments by their methods'
names, one spelling of "center")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "dpggm"
LONGEST = 120
#: Private names of other libraries the package has to use (no public equivalent): the
#: tags of scikit-learn older than 1.6, and the partition layout of a Dask collection.
# Underscored names of other libraries used on purpose: scikit-learn's tags, Dask's
# partition metadata; os._exit is documented, and atexit._run_exitfuncs lets the command
# line's fast exit (which skips the interpreter's tear-down) still run the exit handlers.
THIRD_PARTY_PRIVATE = {"_get_tags", "_dataset_info", "_partitions", "_exit", "_run_exitfuncs"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


MODULES = _modules()
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _nodes(tree: ast.AST):
    """Every node, skipping ``if TYPE_CHECKING:`` blocks (never run)."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for node in child.orelse:
                yield node
                yield from _nodes(node)
            continue
        yield child
        yield from _nodes(child)


def _imports(name: str) -> set[str]:
    """The package's modules ``name`` imports, at module level or inside a function."""
    found = set()
    for node in _nodes(TREES[name]):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                target = submodule if submodule in MODULES else node.module
                if target in MODULES:
                    found.add(target)
    found.discard(name)
    return found


def _cycles() -> list[list[str]]:
    graph = {name: _imports(name) for name in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def test_no_import_cycle():
    assert _cycles() == []


def _defined_private_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)  # __slots__ entries
    return {n for n in names if n.startswith("_")}


def _private_uses() -> list[str]:
    problems = []
    for name, tree in TREES.items():
        own = _defined_private_names(tree)
        for node in _nodes(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dpggm"):
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and f"{node.module}.{alias.name}" not in MODULES:
                        problems.append(f"{name}:{node.lineno} imports {node.module}.{alias.name}")
            elif isinstance(node, ast.Attribute):
                attr = node.attr
                if not attr.startswith("_") or attr.startswith("__"):
                    continue
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                if attr in own or attr in THIRD_PARTY_PRIVATE:
                    continue
                problems.append(f"{name}:{node.lineno} uses {ast.unparse(node)}")
    return problems


def test_no_private_name_of_another_module_is_used():
    assert _private_uses() == []


def _long_functions_without_a_reason() -> list[str]:
    problems = []
    for name, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(TREES[name]):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            if node.end_lineno - start + 1 <= LONGEST:
                continue
            above = []
            line = start - 2
            while line >= 0 and lines[line].strip().startswith("#"):
                above.append(lines[line])
                line -= 1
            first = lines[node.body[0].lineno - 1: node.body[0].lineno + 4]
            if not any("over 120 lines" in text for text in above + first):
                problems.append(f"{name}.{node.name} ({node.end_lineno - start + 1} lines)")
    return problems


def test_no_function_over_120_lines_without_its_reason():
    assert _long_functions_without_a_reason() == []


# ------------------------------------------------------------------ words


def _lines_matching(pattern: re.Pattern[str], allowed: re.Pattern[str] | None = None
                    ) -> list[str]:
    found = []
    for name, path in sorted(MODULES.items()):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line) and not (allowed and allowed.search(line)):
                found.append(f"{name}:{number}: {line.strip()}")
    return found


#: References a reader of the repository cannot follow: sections of the team's specification
#: and numbers of its issue tracker (a comment says why in words, or names the module, the
#: paper or the page of docs/ that holds the reason).
UNFOLLOWABLE = re.compile(r"\bSPEC\b|SPEC\.md|\b[Ii]ssues? #?\d|\(#\d+\)|"
                          r"\b[Aa]cceptance (item )?\d")


def test_no_specification_sections_or_issue_numbers_in_the_source():
    assert _lines_matching(UNFOLLOWABLE) == []


#: The papers' numbers in the source collection ("seed 002", seed003) name nothing a reader
#: knows; the experiments carry their methods' names. The numbers stay only as aliases that
#: keep earlier commands and imports working, and as the labels of the random streams the
#: committed reproduction runs drew from (another label would change every draw).
PAPER_NUMBER = re.compile(r"seed[ _]?00[0-9]|seeds 00[0-9]", re.IGNORECASE)
PAPER_NUMBER_ALLOWED = re.compile(r'_STREAMS = "seed00\d"|"seed00\d": "|\("seed00\d", "|'
                                  r"make_seed00\d_\w+|``seed00\d``")


def test_the_papers_experiments_are_named_by_their_methods():
    assert _lines_matching(PAPER_NUMBER, PAPER_NUMBER_ALLOWED) == []


#: One spelling (scikit-learn's ``assume_centered``, the ``center=`` parameter): the British
#: one stays only in the deprecated keyword that still accepts it and in the audit target's
#: earlier name (its alias, and the label of the streams its recorded runs drew from).
BRITISH_CENTER = re.compile(r"[Cc]entr(e|es|ed|ing)(?![a-z])|[Cc]entre|CENTRE")


def test_one_spelling_of_center():
    allowed = re.compile(r'\brecentre\b|"private-centre-cell"')
    assert _lines_matching(BRITISH_CENTER, allowed) == []


# ------------------------------------------------------------------ layers

#: The package's layers, top to bottom: a module imports only from its own package and
#: from the layers above its own. First the foundation every layer may use (lazy exports,
#: the errors, progress reports) and the root's lazy names; last the command line and the
#: process entry point. The data path (``data``) transforms records: it clips to the
#: mechanisms' declared bounds, is read by the estimators, and never adds noise.
LAYERS = (
    ("dpggm._lazy", "dpggm.exceptions", "dpggm.progress"),
    ("dpggm",),
    ("dpggm.privacy",),
    ("dpggm.io",),
    ("dpggm.mechanisms",),
    ("dpggm.solvers",),
    ("dpggm.data",),
    ("dpggm.estimators",),
    ("dpggm.datasets", "dpggm.metrics"),
    ("dpggm.audit", "dpggm.report"),
    ("dpggm.experiments",),
    ("dpggm.cli",),
    ("dpggm.__main__",),
)


def _unit(name: str) -> tuple[int, str] | None:
    """``(layer, package)`` of a module: the longest entry of :data:`LAYERS` it is in (the
    root, ``dpggm``, holds only its own module: its names are lazy exports)."""
    best = None
    for layer, units in enumerate(LAYERS):
        for unit in units:
            inside = name == unit or (unit != "dpggm" and name.startswith(unit + "."))
            if inside and (best is None or len(unit) > len(best[1])):
                best = (layer, unit)
    return best


def _root_exports() -> dict[str, str]:
    """The names the package's root exports lazily, and the module each comes from."""
    for node in ast.walk(TREES["dpggm"]):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


ROOT_EXPORTS = _root_exports()


def _layered_imports(name: str) -> set[str]:
    """The modules ``name`` imports, a name the root exports (``from dpggm import ZCDP``)
    counted as an import of the module it comes from."""
    found = _imports(name) - {"dpggm"}
    for node in _nodes(TREES[name]):
        if isinstance(node, ast.ImportFrom) and node.module == "dpggm" and not node.level:
            for alias in node.names:
                submodule = f"dpggm.{alias.name}"
                found.add(submodule if submodule in MODULES
                          else ROOT_EXPORTS.get(alias.name, "dpggm"))
    return {target for target in found if target != name}


def test_every_module_is_in_a_layer():
    assert [name for name in MODULES if _unit(name) is None] == []


def test_a_module_imports_only_from_its_package_and_the_layers_above():
    problems = []
    for name in sorted(MODULES):
        layer, unit = _unit(name)
        for target in sorted(_layered_imports(name)):
            found = _unit(target)
            assert found is not None, f"{name} imports {target}, in no layer"
            if found[1] != unit and found[0] >= layer:
                problems.append(f"{name} (layer {layer}) imports {target} (layer {found[0]})")
    assert problems == []


def test_the_command_line_imports_no_private_module():
    """The command line is a thin layer over the public API: every module it imports has a
    public name (``dpggm.data.records``, never ``dpggm.estimators._passes``)."""
    problems = []
    for name in sorted(MODULES):
        if _unit(name)[1] != "dpggm.cli":
            continue
        for target in sorted(_layered_imports(name)):
            if any(part.startswith("_") for part in target.split(".")[1:]):
                problems.append(f"{name} imports {target}")
    assert problems == []


def test_the_data_path_is_one_package():
    """Reading records and computing their statistics live in ``dpggm.data``: no module of
    the estimators reads a file, a Dask collection or runs a pass of its own."""
    data_path = {"tables", "formats", "schema", "kernels", "passes", "records",
                 "file_records", "dask_records", "data", "_passes", "_dask", "_formats",
                 "_count_kernels", "_dask_publish"}
    stray = [name for name in MODULES
             if name.startswith("dpggm.estimators.") and name.rsplit(".", 1)[1] in data_path]
    assert stray == []
