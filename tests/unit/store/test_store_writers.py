"""One writer per store file kind (issue 28, concern 5): consolidate/store/layout.py's WRITERS names,
for every FILE entry of the store folder, the module and functions that write it; an AST walk of
the package finds every write (an open for writing, ``os.open`` with a write flag, ``os.replace`` /
``os.rename`` onto it, ``write_text``/``write_bytes``, the atomic writers and JSONL appenders of
consolidate/core, ``sqlite3.connect`` not read-only) whose target names a store entry (a layout
constant, a name or attribute assigned from one, or a helper function returning one) and fails
when it is not in the entry's writer."""

from __future__ import annotations

import ast

from consolidate.store import layout
from paths import REPO

ROOT = REPO
ENTRY_NAMES = {n for n, v in vars(layout).items() if isinstance(v, layout.Entry)}
BY_NAME = {n: v for n, v in vars(layout).items() if isinstance(v, layout.Entry)}
#: Calls that write the path given as their first argument (consolidate/core/atomic.py, jsonl.py, private.py).
WRITE_CALLS = {"write_json_atomic", "write_atomic", "write_text_atomic", "append_lines", "drop_lines", "private_file"}
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_APPEND", "O_CREAT", "O_TRUNC")


def _modules() -> dict[str, ast.Module]:
    out = {}
    for p in sorted((ROOT / "consolidate").rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        mod = p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
        out[mod] = ast.parse(p.read_text(encoding="utf-8"))
    return out


def write_target(node: ast.Call) -> ast.AST | None:
    """The path expression a call writes to, or None for a call that writes no file."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    os_call = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "os"
    if name in WRITE_CALLS and node.args:
        return node.args[0]
    if name in ("write_text", "write_bytes") and isinstance(f, ast.Attribute):
        return f.value
    if name in ("replace", "rename") and os_call and len(node.args) > 1:
        return node.args[1]
    if name == "open" and os_call:
        return node.args[0] if node.args and any(flag in ast.unparse(node) for flag in _WRITE_FLAGS) else None
    if name == "open":
        args, mode = node.args, None
        if isinstance(f, ast.Attribute):  # Path.open(mode)
            target, mode = f.value, (args[0].value if args and isinstance(args[0], ast.Constant) else None)
        else:
            target, mode = (args[0] if args else None), (args[1].value if len(args) > 1 and isinstance(args[1], ast.Constant) else None)
        mode = next((k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)), mode)
        return target if isinstance(mode, str) and any(c in mode for c in "wax+") else None
    if name == "connect" and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "sqlite3":
        return node.args[0] if node.args and "mode=ro" not in ast.unparse(node.args[0]) else None
    return None


class _Resolver:
    """Which store entries an expression names, module by module."""

    def __init__(self, modules: dict[str, ast.Module]):
        self.modules = modules
        self._imports: dict[str, dict[str, tuple[str, str]]] = {}
        self.aliases = {m: self._aliases(t) for m, t in modules.items()}
        self.helpers: dict[tuple[str, str], set[str]] = {}
        for _ in range(3):  # helpers built on helpers (a path function calling another)
            for m, tree in modules.items():
                for fn in _functions(tree):
                    got = set().union(*[self.entries(m, r.value, {}) for r in ast.walk(fn)
                                        if isinstance(r, ast.Return) and r.value is not None] or [set()])
                    if got:
                        self.helpers[(m, fn.name)] = got

    def _aliases(self, tree: ast.Module) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.module == "consolidate.store.layout":
                out.update({a.asname or a.name: {a.name} for a in n.names if a.name in ENTRY_NAMES})
        for n in tree.body:  # INDEX = FILE_INDEX.name
            if isinstance(n, ast.Assign):
                got = {e for x in ast.walk(n.value) if isinstance(x, ast.Name) for e in out.get(x.id, ())}
                for t in n.targets:
                    if isinstance(t, ast.Name) and got:
                        out[t.id] = got
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):  # self.state_path = ...
            for n in ast.walk(cls):
                if isinstance(n, ast.Assign):
                    got = {e for x in ast.walk(n.value) if isinstance(x, ast.Name) for e in out.get(x.id, ())}
                    for t in n.targets:
                        if isinstance(t, ast.Attribute) and got:
                            out["self." + t.attr] = got
        return out

    def _imported(self, module: str, name: str) -> tuple[str, str] | None:
        """Where the name ``name`` of ``module`` comes from: ``(module, function)`` of a helper
        imported by name, ``(module, "")`` of a module imported (``from consolidate.store import
        snapshots``), None for a name not imported."""
        table = self._imports.get(module)
        if table is None:
            table = {}
            for n in ast.walk(self.modules[module]):
                if isinstance(n, ast.ImportFrom) and n.module:
                    for a in n.names:
                        table[a.asname or a.name] = (n.module, a.name)
            self._imports[module] = table
        found = table.get(name)
        if found is None:
            return None
        return found if found in self.helpers else (f"{found[0]}.{found[1]}", "")

    def entries(self, module: str, expr: ast.AST, local: dict[str, set[str]]) -> set[str]:
        """The entries ``expr`` names (an entry's name with a suffix added, ``GRAPH_NODES.name +
        ".corrupt"``, names another file: an aside, not the entry)."""
        aliases = self.aliases[module]
        out: set[str] = set()
        todo = [expr]
        while todo:
            x = todo.pop()
            if isinstance(x, ast.BinOp) and isinstance(x.op, ast.Add) and isinstance(x.right, ast.Constant):
                continue
            todo.extend(ast.iter_child_nodes(x))
            if isinstance(x, ast.Name):
                out |= local.get(x.id, set()) | aliases.get(x.id, set())
            elif isinstance(x, ast.Attribute) and isinstance(x.value, ast.Name) and x.value.id == "self":
                out |= aliases.get("self." + x.attr, set()) | self.helpers.get((module, x.attr), set())
            if isinstance(x, ast.Call):
                f = x.func
                if isinstance(f, ast.Name):
                    out |= self.helpers.get((module, f.id), set())
                    found = self._imported(module, f.id)
                    if found:
                        out |= self.helpers.get(found, set())
                elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                    found = self._imported(module, f.value.id)
                    if found:
                        out |= self.helpers.get((found[0], f.attr), set())
        return out


def _functions(tree: ast.Module):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def store_writes() -> list[tuple[str, str, int, str]]:
    """Every write of the package to a store entry: ``(module, function, line, entry constant)``."""
    modules = _modules()
    res = _Resolver(modules)
    out = []
    for m, tree in modules.items():
        for fn in _functions(tree):
            local: dict[str, set[str]] = {}
            for n in ast.walk(fn):
                if isinstance(n, ast.Assign):
                    got = res.entries(m, n.value, local)
                    for t in n.targets:
                        if isinstance(t, ast.Name) and got:
                            local[t.id] = local.get(t.id, set()) | got
            for n in ast.walk(fn):
                if isinstance(n, ast.Call):
                    target = write_target(n)
                    if target is not None:
                        out += [(m, fn.name, n.lineno, e) for e in sorted(res.entries(m, target, local))]
    return out


#: Writes by another module than the entry's writer, known today; this may only shrink (manifest.json's
#: two, the store creating it and ``doctor --repair`` recording a project, now go through
#: consolidate.store.anchors.update_manifest under ``.manifest.lock``).
KNOWN_OTHER_WRITERS: set[tuple[str, str, str]] = set()


def _defined(module: str) -> set[str]:
    path = ROOT / (module.replace(".", "/") + ".py")
    return {n.name for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def test_every_store_file_has_one_writer_that_exists():
    files = [e for e in layout.ENTRIES if e.kind == layout.FILE]
    assert [e.rel for e in files if e not in layout.WRITERS] == []
    for entry in files:
        module, functions = layout.writer_of(entry)
        if module == "people":
            continue
        assert functions and set(functions) <= _defined(module), (entry.rel, module, functions)


def test_no_module_but_the_writer_writes_a_store_file():
    """Every write the AST walk finds to a FILE entry is made in the entry's writer (a function of
    it, or a function nested in one)."""
    by_call: dict[tuple[str, int, str], set[str]] = {}
    for module, function, line, name in store_writes():
        by_call.setdefault((module, line, name), set()).add(function)
    found, others = 0, set()
    for (module, line, name), functions in sorted(by_call.items()):
        entry = BY_NAME[name]
        if entry.kind != layout.FILE:
            continue  # a write inside a folder entry (a workspace's output) or its aside
        found += 1
        writer, allowed = layout.writer_of(entry)
        if module != writer or not functions & set(allowed):
            others |= {(module, f, name) for f in functions}
    assert found >= 35  # the walk sees the writes (39 today): a resolver that finds nothing fails here
    assert others <= KNOWN_OTHER_WRITERS, sorted(others - KNOWN_OTHER_WRITERS)
    assert others == KNOWN_OTHER_WRITERS, "a known other writer is gone: drop it from KNOWN_OTHER_WRITERS"


def test_the_walk_sees_a_write_by_another_module():
    """The check fails for a new writer: a module writing events/memory-events.jsonl itself."""
    source = ("from consolidate.store.layout import EVENT_LOG\n"
              "def sneak(store):\n    with open(store.sub(EVENT_LOG), 'a') as f:\n        f.write('{}')\n")
    tree = ast.parse(source)
    res = _Resolver({"consolidate.sneaky": tree})
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and write_target(n) is not None)
    assert res.entries("consolidate.sneaky", write_target(call), {}) == {"EVENT_LOG"}
