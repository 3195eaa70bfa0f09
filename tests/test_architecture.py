"""The shape of the package (issue 27; docs/design.md, "Layers"): the import contracts of
pyproject.toml ([tool.importlinter]), the size budgets, and the in-function imports and the import
cycle that may only shrink. .ci/lint runs the contracts too; these tests make plain pytest fail."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("consolidate", "judges")

#: Size budgets: modules per folder (its ``__init__`` not counted), lines per module, lines per function.
MAX_MODULES, MAX_MODULE_LINES, MAX_FUNCTION_LINES = 16, 800, 80
#: Over budget today: the allowlists may only shrink (a split deletes its entry, a number only goes down).
LONG_MODULES = {"consolidate/store/sessions/tier.py": 841}
LONG_FUNCTIONS = {
    "consolidate/pipeline/harvest.py:harvest_lines": 110,
    "consolidate/agents/hooks/full.py:run_hook": 86,
    "consolidate/team/sync.py:_apply_pulled": 103,
    "consolidate/cli/commands/run.py:cmd_run": 91,
    "consolidate/cli/commands/read.py:cmd_status": 95,
    "consolidate/store/anchors.py:check": 95,
    "consolidate/mcp/server.py:build_server": 206,
}
#: Imports of the project's own modules inside functions, and the biggest import cycle counting
#: them (strongly connected modules of the graph grimp builds): both may only go down, to 0 and 1.
OWN_IMPORTS_IN_FUNCTIONS = 287
LARGEST_CYCLE = 2
#: Upward imports still listed in the layers contract's ignore_imports: only goes down, to 0.
LAYER_IGNORES = 0


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


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


def test_imports_of_own_modules_inside_functions_only_go_down():
    count = 0
    for path in _sources():
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                count += sum(1 for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)) and _own(n))
    assert count <= OWN_IMPORTS_IN_FUNCTIONS, f"{count} in-function imports of the project's own modules"


def test_the_largest_import_cycle_only_shrinks():
    import grimp  # installed with import-linter (the test and lint extras)
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    edges = nx.DiGraph()
    for module in graph.modules:
        edges.add_node(module)
        edges.add_edges_from((module, target) for target in graph.find_modules_directly_imported_by(module))
    largest = max(len(c) for c in nx.strongly_connected_components(edges))
    assert largest <= LARGEST_CYCLE, f"an import cycle of {largest} modules"


def test_the_distribution_lists_every_package():
    """A subpackage missing from [tool.setuptools] packages is left out of a wheel or ``pip install .``
    (an editable install hides it: it maps the source folder): the list is every folder with an
    ``__init__.py`` under consolidate/ and judges/, plus judges.prompts (mapped to prompts/)."""
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = {_rel(p.parent).replace("/", ".") for p in _sources() if p.name == "__init__.py"}
    assert sorted(listed) == sorted(found | {"judges.prompts"})
