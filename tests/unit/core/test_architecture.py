"""The shape of the package (issue 27; docs/design.md, "Layers"): the import contracts of
pyproject.toml ([tool.importlinter]), the size budgets, and the in-function imports and the import
cycle that may only shrink. .ci/lint runs the contracts too; these tests make plain pytest fail."""

from __future__ import annotations

import pytest
import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import networkx as nx
from paths import REPO

ROOT = REPO
#: The one top-level package; judges/ is its subpackage consolidate.judges (the symlink
#: consolidate/judges -> ../judges, and judges/prompts -> ../prompts: docs/design.md, "Layout").
PACKAGES = ("consolidate",)

#: Size budgets: modules per folder (its ``__init__`` not counted), lines per module, lines per function.
MAX_MODULES, MAX_MODULE_LINES, MAX_FUNCTION_LINES = 16, 800, 80
#: Over budget today: the allowlists may only shrink (a split deletes its entry, a number only goes down).
LONG_MODULES: dict[str, int] = {}
LONG_FUNCTIONS = {
    "consolidate/pipeline/harvest.py:harvest_lines": 110,
    "consolidate/team/sync.py:_apply_pulled": 94,
    "consolidate/cli/commands/run.py:cmd_run": 82,
    "consolidate/store/anchors.py:check": 95,
    "consolidate/mcp/server.py:build_server": 193,
}
#: Imports of the project's own modules inside functions, and the biggest import cycle counting
#: them (strongly connected modules of the graph grimp builds): both may only go down, to 0 and 1.
OWN_IMPORTS_IN_FUNCTIONS = 47
LARGEST_CYCLE = 1
#: Upward imports still listed in the layers contract's ignore_imports: only goes down, to 0.
LAYER_IGNORES = 0


def _sources() -> list[Path]:
    """Every module of the package, by its path under consolidate/ (os.walk follows the judges symlink;
    Path.rglob would not)."""
    return sorted(Path(folder, name) for pkg in PACKAGES for folder, _, names in os.walk(ROOT / pkg, followlinks=True)
                  if "__pycache__" not in Path(folder).parts for name in names if name.endswith(".py"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.spawns
def test_the_import_contracts_are_kept():
    """Both contracts of [tool.importlinter] (the layers; nothing heavy on the hook path), run as CI does."""
    out = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports;"
                          " sys.exit(lint_imports(config_filename='pyproject.toml'))"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in out.stdout


def test_the_layer_ignores_only_shrink():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["id"] == "layers")
    assert len(layers.get("ignore_imports", [])) <= LAYER_IGNORES, "a new upward import: cut it, do not list it"


def test_no_folder_holds_more_than_16_modules():
    folders: dict[str, int] = {}
    for path in _sources():
        if path.name != "__init__.py":
            folders[_rel(path.parent)] = folders.get(_rel(path.parent), 0) + 1
    assert {f: n for f, n in folders.items() if n > MAX_MODULES} == {}


def test_modules_and_functions_keep_their_size_budget():
    long_modules, long_functions = {}, {}
    for path in _sources():
        source = path.read_text(encoding="utf-8")
        lines = source.count("\n")
        if lines > MAX_MODULE_LINES:
            long_modules[_rel(path)] = lines
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions[f"{_rel(path)}:{node.name}"] = length
    grown = {k: v for k, v in long_modules.items() if v > LONG_MODULES.get(k, MAX_MODULE_LINES)}
    grown |= {k: v for k, v in long_functions.items() if v > LONG_FUNCTIONS.get(k, MAX_FUNCTION_LINES)}
    assert grown == {}, "over the size budget: split it (the allowlists only shrink)"
    # a split that landed must take its entry out (or lower it), so the allowlist cannot hide a regrowth
    assert {k: v for k, v in LONG_MODULES.items() if long_modules.get(k, 0) < v} == {}
    assert {k: v for k, v in LONG_FUNCTIONS.items() if long_functions.get(k, 0) < v} == {}


def _own(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").split(".")[0] in PACKAGES
    return any(alias.name.split(".")[0] in PACKAGES for alias in node.names)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _in_function_own_imports() -> list[tuple[Path, ast.Import | ast.ImportFrom]]:
    """``[(module file, import node)]``: each import of the project's own modules written inside a
    function, once (an import in a nested function is one import, not one per enclosing function)."""
    found = []
    for path in _sources():
        seen: set[int] = set()
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for n in ast.walk(fn):
                    if isinstance(n, (ast.Import, ast.ImportFrom)) and _own(n) and id(n) not in seen:
                        seen.add(id(n))
                        found.append((path, n))
    return found


def test_imports_of_own_modules_inside_functions_only_go_down():
    count = len(_in_function_own_imports())
    assert count <= OWN_IMPORTS_IN_FUNCTIONS, f"{count} in-function imports of the project's own modules"


def _targets(path: Path, node: ast.Import | ast.ImportFrom, modules: set[str]) -> set[str]:
    """The modules an import in the file ``path`` names (``from a import b``: ``a.b`` when that is a
    module, else ``a``; a relative import resolved from the file's package)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        package = _module_name(path.parent / "__init__.py").split(".")
        base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
    return {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}


def test_the_largest_import_cycle_only_shrinks():
    """The cycle is counted on grimp's graph, which holds every import the AST has: module level,
    inside functions, under ``if TYPE_CHECKING``. That the graph has each in-function import is
    checked here too, so the count cannot miss the imports that hid the cycles before."""
    import grimp  # noqa: PLC0415 - installed with import-linter (the test and lint extras); only this test needs it
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    edges = nx.DiGraph()
    for module in graph.modules:
        edges.add_node(module)
        edges.add_edges_from((module, target) for target in graph.find_modules_directly_imported_by(module))
    unseen = [(_rel(path), node.lineno) for path, node in _in_function_own_imports()
              if not _targets(path, node, set(graph.modules)) <= set(edges.successors(_module_name(path)))]
    assert unseen == [], "in-function imports missing from the graph the cycle is counted on"
    largest = max(len(c) for c in nx.strongly_connected_components(edges))
    assert largest <= LARGEST_CYCLE, f"an import cycle of {largest} modules"


def test_the_distribution_lists_every_package():
    """A subpackage missing from [tool.setuptools] packages is left out of a wheel or ``pip install .``
    (an editable install hides it: it maps the source folder): the list is every folder with an
    ``__init__.py`` under consolidate/, consolidate.judges and consolidate.judges.prompts included."""
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = {_rel(p.parent).replace("/", ".") for p in _sources() if p.name == "__init__.py"}
    assert {"consolidate.judges", "consolidate.judges.prompts"} <= found
    assert sorted(listed) == sorted(found)


def test_judges_and_prompts_are_subpackages_of_consolidate():
    """judges/ and prompts/ stay at the top of the repository and are found as consolidate.judges and
    consolidate.judges.prompts through two relative symlinks, the same from a checkout on PYTHONPATH,
    an editable install, grimp and mypy (a wheel holds their files)."""
    assert os.readlink(ROOT / "consolidate" / "judges") == "../judges"
    assert os.readlink(ROOT / "judges" / "prompts") == "../prompts"


def test_nothing_imports_a_top_level_judges_package():
    """``judges`` is not a package of its own (another distribution publishes one): every import of it
    is ``consolidate.judges`` (a stray ``import judges`` would still work from a checkout, whose root
    holds judges/, and load each module a second time)."""
    stray = []
    for folder in ("consolidate", "judges", "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                         else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
                stray += [f"{_rel(path)}:{node.lineno}" for n in names if n.split(".")[0] == "judges"]
    assert stray == []
