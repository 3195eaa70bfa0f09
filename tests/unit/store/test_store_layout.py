"""One owner of the store folder's layout (issue 27 item 3, design/structure-v2 rule 5):
consolidate/store/layout.py names every path and lock file of a store folder; no other module of the
package holds a string literal naming a store entry, and a store made by the CLI holds exactly the
entries the layout lists (nothing unlisted)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from consolidate.store import layout
from paths import REPO

ROOT = REPO
OWNER = "consolidate/store/layout.py"
#: Calls whose arguments are paths: a folder name such as "graph" given to one names a store entry.
PATH_CALLS = {"sub", "joinpath", "join", "Path", "open", "FileLock", "exists", "isdir", "isfile", "private_file"}


def _names():
    """(names that are store entries wherever they appear, folder names that are when used as a path)."""
    always, as_path = set(), set()
    for e in layout.ENTRIES:
        if "*" in e.rel:
            as_path.update(p for p in e.parts if "*" not in p)
            continue
        if len(e.parts) > 1 or e.kind in (layout.DIR, layout.TREE):
            always.add(e.label)  # "graph/nodes.jsonl", "graph/"
        # a file's name names it anywhere, but a bare extension (.lock, .gitignore) only as a path
        distinct = e.kind in (layout.FILE, layout.LOCK) and "." in e.name.lstrip(".")
        (always if distinct else as_path).add(e.name)
        as_path.update(e.parts[:-1])
    return always, as_path


def _docstrings(tree) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _path_context(tree, names: set[str]) -> set[int]:
    """ids of the string constants used as a path: an operand of ``/``, an argument of a PATH_CALLS
    call, a member of a table of two entry ``names`` or more (and nothing else), compared with a path's ``.name``."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            ids.update(id(n) for n in (node.left, node.right) if isinstance(n, ast.Constant))
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in PATH_CALLS:
                ids.update(id(a) for a in node.args if isinstance(a, ast.Constant))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):  # a table of entries: ("journal", "graph")
            strings = [n for n in node.elts if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            if len(strings) >= 2 and all(n.value in names for n in strings):
                ids.update(id(n) for n in strings)
        elif isinstance(node, ast.Compare):  # path.parent.name == "graph"
            sides = (node.left, *node.comparators)
            if any(isinstance(n, ast.Attribute) and n.attr == "name" for n in sides):
                ids.update(id(n) for n in sides if isinstance(n, ast.Constant))
    return ids


def store_literals(source: str) -> list[str]:
    """The string literals of ``source`` that name a store entry (docstrings aside)."""
    always, as_path = _names()
    tree = ast.parse(source)
    docs, paths = _docstrings(tree), _path_context(tree, always | as_path)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if node.value in always or (node.value in as_path and id(node) in paths):
                hits.append(f"{node.lineno}: {node.value!r}")
    return hits


def test_no_literal_outside_the_layout_module_names_a_store_entry():
    found = {}
    for pkg in ("consolidate", "judges"):
        for p in sorted((ROOT / pkg).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if rel != OWNER and (hits := store_literals(p.read_text(encoding="utf-8"))):
                found[rel] = hits
    assert found == {}


@pytest.mark.parametrize("source, hits", [
    ('store.sub("graph")', ["1: 'graph'"]),
    ('p = root / "memory" / "notes.md"', ["1: 'memory'", "1: 'notes.md'"]),
    ('os.path.join(store, "logs")', ["1: 'logs'"]),
    ('where = "events/memory-events.jsonl"', ["1: 'events/memory-events.jsonl'"]),
    ('NAME = "team.json"', ["1: 'team.json'"]),
    ('f = Finding("journal/", "waiting")', ["1: 'journal/'"]),
    ('lock = FileLock(str(store.sub(".worker.lock")))', ["1: '.worker.lock'"]),
    ('for name in ("journal", "graph"):\n    pass', ["1: 'journal'", "1: 'graph'"]),
    ('spec = F if path.parent.name == "graph" else None', ["1: 'graph'"]),
    ('lock = FileLock(str(path) + ".lock")', []),
    ('p = folder / ".lock"', ["1: '.lock'"]),
    ('kind = "graph"  # a command name, not a path', []),
    ('if action in ("archive", "tombstone"):\n    pass', []),
    ('STEPS = ("snapshot", "graph", "chroma")', []),
    ('def f():\n    """reads memory/notes.md and team.json"""', []),
    ('store.sub(GRAPH)', []),
])
def test_the_literal_check_finds_each_way_of_naming_an_entry(source, hits):
    """The check itself: a folder name used as a path, a file name anywhere, a path under the store;
    not a word that is no path, not a docstring."""
    assert sorted(store_literals(source)) == sorted(hits)


def test_the_registry_is_well_formed():
    rels = [e.rel for e in layout.ENTRIES]
    assert len(rels) == len(set(rels))
    assert all(e.kind in (layout.FILE, layout.LOCK, layout.DIR, layout.TREE) and e.what for e in layout.ENTRIES)
    folders = {e.rel for e in layout.ENTRIES if e.kind in (layout.DIR, layout.TREE)}
    for e in layout.ENTRIES:  # every entry below the top sits in a listed folder (the probe: in any)
        assert len(e.parts) == 1 or "/".join(e.parts[:-1]) in folders or e is layout.PREFLIGHT, e
    assert layout.SNAPSHOT.fill("run-1").of(Path("/s")) == Path("/s/snapshots/run-1.json")
    assert layout.HOOK_LOG.join("/s") == os.path.join("/s", "logs", "hook.log")
    assert layout.entry_of("sessions.sqlite3-wal") is layout.SESSIONS_DB
    assert layout.entry_of("chroma/abc/header.bin") is layout.CHROMA
    assert layout.entry_of("graph/other.jsonl") is None and layout.entry_of("stray.txt") is None
    with pytest.raises(ValueError):
        layout.GRAPH.fill("x")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update({"CONSOLIDATE_EMBEDDING": "hash", "CONSOLIDATE_JUDGES": "rules"}, **extra)
    return env


def _cli(cwd, *args, stdin=None, env=None):
    out = subprocess.run([sys.executable, "-m", "consolidate", *args], cwd=cwd, input=stdin, capture_output=True,
                         text=True, env=env or _env(), timeout=180)
    assert out.returncode == 0, (args, out.stdout[-2000:], out.stderr[-2000:])
    return out.stdout


#: What the CLI session below does not make: a team store's entries, the files of a run cut short (a
#: journal's plan and steps), an import of transcripts, file recall's index, the worker's log (a
#: detached worker's), memory/core.md and consolidate.toml (kept by people), tombstones (a forget's are
#: lifted by the undo), the ledger.json of earlier versions, a damaged ledger moved aside.
NOT_MADE = {layout.TEAM_JSON, layout.TEAM, layout.TEAM_OUTBOX, layout.TEAM_OUTBOX_ITEM, layout.TEAM_STATE,
            layout.TEAM_LEDGER, layout.TEAM_LEDGER_JSON, layout.TEAM_LEDGER_DAMAGED, layout.TEAM_PUSH_LOCK, layout.TEAM_FILES_LOCK, layout.TEAM_LOG,
            layout.JOURNAL_PLAN, layout.JOURNAL_STEPS, layout.IMPORTS, layout.TRANSCRIPTS_LEDGER,
            layout.WORKER_LOG, layout.FILE_INDEX, layout.PREFLIGHT, layout.CORE_MD, layout.TOMBSTONES,
            layout.STORE_CONFIG}


@pytest.mark.spawns
def test_a_store_made_by_the_cli_holds_exactly_the_listed_entries(tmp_path):
    """A real store, made by the installed command as a user would (notes, an end, a run, recall,
    forget, undo, the hooks on real payloads, a workspace, doctor): every file and folder in it is an
    entry of the layout, and every entry but NOT_MADE's is there."""
    project = tmp_path / "project"
    project.mkdir()
    _cli(project, "note", "--session", "S", "Chose SQLite over Postgres because it needs no server", "--flag",
         "--kind", "decision")
    _cli(project, "note", "--session", "S", "Never commit .env files", "--flag", "--kind", "constraint")
    _cli(project, "note", "--session", "S", "dev server is on port 5173", "--ttl", "20m")
    _cli(project, "end", "--session", "S", "--outcome", "success")
    run_id = next(w for w in _cli(project, "run").split() if w.startswith("run-"))
    _cli(project, "recall", "sqlite")
    memory_id = json.loads(_cli(project, "recall", "commit", "--json"))[0]["id"]
    _cli(project, "forget", memory_id, "--reason", "wrong")
    _cli(project, "undo", run_id)
    for event, sid in (("SessionStart", "h1"), ("SessionEnd", "h1")):
        _cli(project, "hook", "--no-worker", stdin=json.dumps({"hook_event_name": event, "session_id": sid,
                                                                "cwd": str(project)}))
    _cli(project, "worker")
    _cli(project, "session", "start", "--session", "W")
    _cli(project, "doctor")
    store = project / ".memofs"
    found = sorted(p.relative_to(store).as_posix() for p in store.rglob("*"))
    unlisted = [rel for rel in found if layout.entry_of(rel) is None]
    assert unlisted == []
    made = {layout.entry_of(rel) for rel in found}
    missing = [e.rel for e in layout.ENTRIES if e not in made and e not in NOT_MADE]
    assert missing == []
    assert layout.entry_of(next(r for r in found if r.startswith("archive/") and r.endswith(".json"))) \
        is layout.ARCHIVED
