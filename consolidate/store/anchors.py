"""Memories anchored to code: anchors, the hash cache in ``manifest.json``, and the drift check.

When a memory names files of the project (its entities: ``src/auth.py``), the provenance stage
records an **anchor** per file: the path (relative to the project root, POSIX) and a content hash
(SHA-256, first 16 hex digits) of the file or, where the memory names a symbol defined in it
(``check_token()``, ``TokenStore.refresh``, `` `check_token` ``, ``src/auth.py:check_token``), of
that symbol's text (Python: the ``ast`` node with its decorators; other languages: the definition's
brace block or indented block). Anchors are kept in the memory's metadata (``anchors``, JSON) and in
the manifest's ``anchors`` section, which also caches what each anchored file looked like when last
hashed::

    "anchors": {
      "files":    {"src/auth.py": {"size": 812, "mtime_ns": 1764..., "sha": "9f2c...", "symbols": {"check_token": "51aa..."}}},
      "memories": {"mem-...": [["src/auth.py", "check_token", "51aa..."]]},  (path, symbol or null, hash)
      "renamed":  {"src/auth.py": "src/security.py"},
      "drifted":  {"mem-...": {"paths": ["src/auth.py"], "since": "2026-11-30T08:00:00+00:00"}},
      "stale":    {"mem-...": {"paths": ["src/gone.py"], "since": "..."}}
    }

The **drift check** (:func:`check`) stats every anchored file and compares size and mtime with the
cache; only a file whose size or mtime changed is read and hashed again (then the cache is updated).
A memory whose anchor hash differs from the file's (or symbol's) current hash is **drifted**: recall
and the SessionStart context show ``[drifted: path]`` after its suffix, and it is queued in
``drifted`` for re-judging (``consolidate batch --rejudge --drifted``). A memory whose file is gone
is **stale**: recall shows ``[stale: path gone]``, the SessionStart context leaves it out. In a git
repository a missing file is first looked up in git's renames (staged ``git mv`` and the last 500
commits, ``-M``): the anchor follows the file to its new path (``renamed``).

``manifest.json`` is rewritten atomically under ``.manifest.lock`` (read, merge, write), so a recall
and a run never lose each other's cache entries. Only the standard library is imported here (the
SessionStart hook uses it).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Iterable
from consolidate.store.layout import CONTEXT_MD, MANIFEST, MANIFEST_LOCK, CONTEXT_INDEX as _INDEX
from consolidate.core.settings import PROJECT_ROOT
from consolidate.store.graph import extract_entities
from consolidate.core.atomic import write_json_atomic
from consolidate.core.normal import path_forms
from consolidate.store.views.start_file import check_root
import ast

SECTION = "anchors"
#: Files larger than this are not anchored (a memory about a 50 MB data file is not about code).
MAX_ANCHOR_BYTES = 2_000_000
#: How many commits back git renames are looked up.
GIT_RENAME_COMMITS = 500
#: Seconds a git command may take before the rename lookup gives up (the file is then stale).
GIT_TIMEOUT = 5.0

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_QUAL = rf"{_IDENT}(?:\.{_IDENT})*"
_SYMBOL_PATTERNS = (
    re.compile(rf"\b({_QUAL})\(\)"),                                   # check_token(), Store.close()
    re.compile(rf"`({_QUAL})(?:\(\))?`"),                              # `check_token`
    re.compile(rf"(?:[\w./-]+\.\w+)(?::|::)({_QUAL})\b"),              # src/auth.py:check_token
    re.compile(rf"\b(?:function|method|class|def|func|fn|struct|interface)\s+`?({_QUAL})", re.IGNORECASE),
)
_DEF_LINE = re.compile(r"^(\s*)(?:export\s+)?(?:default\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:static\s+)?"
                       r"(?:def|class|function\*?|func|fn|struct|interface|enum|trait|impl|type|const|let|var)\s+"
                       r"(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")


def _now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def sha(data: bytes) -> str:
    """First 16 hex digits of SHA-256 (64 bits: collisions are not a concern for drift)."""
    return hashlib.sha256(data).hexdigest()[:16]


def project_root(store) -> Path:
    """The project the store's memories are about: ``$CONSOLIDATE_PROJECT_ROOT``, else the folder
    holding the store (``./.memofs`` lives in the project)."""

    env = PROJECT_ROOT.get()
    return Path(env).resolve() if env else Path(store.path).resolve().parent


# -- symbols ------------------------------------------------------------------------------------

def named_symbols(text: str) -> list[str]:
    """Symbol names a memory's text names, in order, without repeats (``check_token()``,
    ``Store.close()``, backticked identifiers, ``path.py:name``, ``function name``)."""
    out: dict[str, None] = {}
    for pat in _SYMBOL_PATTERNS:
        for m in pat.finditer(text):
            name = m.group(1)
            if name and not re.fullmatch(r"[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|md|json|toml|ya?ml)", name):
                out.setdefault(name, None)
    return list(out)


def python_symbols(source: str) -> dict[str, str]:
    """``{qualified name: text}`` of every function and class in Python source (methods as
    ``Class.method``; decorators included); {} when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    lines = source.splitlines()
    out: dict[str, str] = {}

    def visit(node, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                out.setdefault(name, "\n".join(lines[first - 1: child.end_lineno]))
                visit(child, name + ".")

    visit(tree, "")
    return out


def generic_symbols(source: str) -> dict[str, str]:
    """``{name: text}`` of definitions in C-like or indentation-based source: from a definition
    line to the end of its brace block (or, without a brace, of its indented block)."""
    lines = source.splitlines()
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        m = _DEF_LINE.match(line)
        if not m or m.group(2) in out:
            continue
        indent = len(m.group(1).expandtabs())
        depth, opened, end = 0, False, i
        for j in range(i, len(lines)):
            code = re.sub(r"(\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|//.*$)", "", lines[j])
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            end = j
            if opened and depth <= 0:
                break
            if not opened and j > i + 2:  # no brace block: the indented block
                end = i
                for k in range(i + 1, len(lines)):
                    if lines[k].strip() and len(lines[k]) - len(lines[k].lstrip()) <= indent:
                        break
                    end = k
                break
        out[m.group(2)] = "\n".join(lines[i:end + 1])
    return out


def symbols_of(path: str, data: bytes) -> dict[str, str]:
    """Definitions in a file: Python through ``ast``, anything else through :func:`generic_symbols`."""
    text = data.decode("utf-8", "replace")
    if path.endswith((".py", ".pyi")):
        return python_symbols(text) or generic_symbols(text)
    return generic_symbols(text)


def match_symbol(name: str, defined: Iterable[str]) -> str | None:
    """The defined symbol ``name`` refers to: the same qualified name, else the one definition whose
    last part is the name's last part (``refresh()`` -> ``TokenStore.refresh``); None otherwise."""
    defined = list(defined)
    if name in defined:
        return name
    last = name.rsplit(".", 1)[-1]
    same = [d for d in defined if d.rsplit(".", 1)[-1] == last]
    return same[0] if len(same) == 1 else None


def symbol_hash(text: str) -> str:
    """Hash of a symbol's text, trailing whitespace of each line ignored."""
    return sha("\n".join(line.rstrip() for line in text.splitlines()).encode("utf-8"))


# -- finding anchors ----------------------------------------------------------------------------

def _inside(root: Path, rel: str) -> Path | None:
    if not rel or rel.startswith(("/", "~")) or ".." in Path(rel).parts:
        return None
    p = root / rel
    try:
        real = p.resolve()
    except OSError:
        return None
    if root not in real.parents or not real.is_file():
        return None
    return p


def find_anchors(root: Path, text: str, entities: Iterable[str] = ()) -> list[dict[str, str | None]]:
    """Anchors of a memory whose text (statement and fields) is ``text``: for each file entity that
    is a file under ``root``, one anchor per named symbol defined in it, else one for the whole file.
    Each anchor is ``{"path", "symbol" (or None), "sha"}``."""

    root = Path(root).resolve()
    files = [name for name, kind in extract_entities(text, list(entities)) if kind in ("file", "named")]
    symbols = named_symbols(text)
    out: list[dict[str, str | None]] = []
    seen: set[tuple[str, str | None]] = set()
    for named in files:
        p = next((q for q in (_inside(root, form) for form in path_forms(named)) if q is not None), None)
        if p is None:
            continue
        try:
            if p.stat().st_size > MAX_ANCHOR_BYTES:
                continue
            data = p.read_bytes()
        except OSError:
            continue
        rel = p.resolve().relative_to(root).as_posix()
        defined = symbols_of(rel, data) if symbols else {}
        matched = [(s, match_symbol(s, defined)) for s in symbols]
        hits = [(s, d) for s, d in matched if d]
        if hits:
            for _s, d in hits:
                if (rel, d) not in seen:
                    seen.add((rel, d))
                    out.append({"path": rel, "symbol": d, "sha": symbol_hash(defined[d])})
        elif (rel, None) not in seen:
            seen.add((rel, None))
            out.append({"path": rel, "symbol": None, "sha": sha(data)})
    return out


# -- the manifest section -----------------------------------------------------------------------

def _empty() -> dict[str, Any]:
    return {"files": {}, "memories": {}, "renamed": {}, "drifted": {}, "stale": {}}


def read_section(store_path: Path) -> dict[str, Any]:
    """The manifest's ``anchors`` section (empty when the manifest or the section is missing or
    unreadable: a drift check never fails a recall)."""
    try:
        with open(MANIFEST.of(Path(store_path)), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return _empty()
    section = data.get(SECTION) if isinstance(data, dict) else None
    if not isinstance(section, dict):
        return _empty()
    for key, value in _empty().items():
        if not isinstance(section.get(key), dict):
            section[key] = value
    return section


def update_manifest(store_path: Path, change, *, initial: dict[str, Any] | None = None) -> bool:
    """The one writer of ``manifest.json`` (consolidate.store.layout.WRITERS): read it under
    ``.manifest.lock``, call ``change(data)`` (``data`` the manifest as a dict, changed in place) and
    write it back atomically. With ``initial``, a store without a manifest gets ``initial`` (then
    ``change``), and one that has it meanwhile (another process) is changed as it is; without it,
    nothing is written and False is returned when there is none. Returns True when written.

    Raises OSError when it cannot be written, ValueError when it is not a JSON object, and
    filelock.Timeout after 10 s waiting for another writer; nothing is changed then."""
    import filelock  # noqa: PLC0415 - third-party filelock: only its callers load it

    store_path = Path(store_path)
    path = MANIFEST.of(store_path)
    with filelock.FileLock(str(MANIFEST_LOCK.of(store_path)), timeout=10):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            if initial is None:
                return False
            data = dict(initial)
        if not isinstance(data, dict):
            raise ValueError(f"{path} is not a JSON object")
        change(data)
        write_json_atomic(path, data, compact=True)  # compact: parsed on every recall
    return True


def update_section(store_path: Path, change) -> bool:
    """Apply ``change(section)`` to the manifest's anchors section, through :func:`update_manifest`.
    Returns False (and changes nothing) when there is no manifest yet or it cannot be written (a
    read-only store, a damaged manifest, a writer holding the lock over 10 s)."""
    import filelock  # noqa: PLC0415 - third-party filelock: only its callers load it

    store_path = Path(store_path)
    if not MANIFEST.of(store_path).exists() or not os.access(store_path, os.W_OK):  # read-only: check, never write
        return False

    def on_data(data: dict) -> None:
        section = data.get(SECTION)
        section = section if isinstance(section, dict) else {}
        for key, value in _empty().items():
            if not isinstance(section.get(key), dict):
                section[key] = value
        change(section)
        data[SECTION] = section

    try:
        return update_manifest(store_path, on_data)
    except (OSError, ValueError, filelock.Timeout):
        return False


def _file_entry(root: Path, rel: str, symbols: Iterable[str | None]) -> dict[str, Any] | None:
    p = root / rel
    try:
        st = p.stat()
        data = p.read_bytes()
    except OSError:
        return None
    entry: dict[str, Any] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha": sha(data), "symbols": {}}
    wanted = [s for s in symbols if s]
    if wanted:
        defined = symbols_of(rel, data)
        for s in wanted:
            entry["symbols"][s] = symbol_hash(defined[s]) if s in defined else None
    return entry


def record(store, anchored: dict[str, list[dict]], removed: Iterable[str] = ()) -> bool:
    """Record the anchors of newly written memories (``{memory_id: anchors}``) in the manifest and
    cache their files; forget ``removed`` memories (archived, tombstoned). Idempotent."""
    root = project_root(store)
    removed = list(removed)
    if not anchored and not removed:
        return False
    entries: dict[str, dict] = {}
    by_path: dict[str, set] = {}
    for anchors in anchored.values():
        for a in anchors:
            by_path.setdefault(a["path"], set()).add(a.get("symbol"))
    for rel, syms in by_path.items():
        e = _file_entry(root, rel, syms)
        if e is not None:
            entries[rel] = e

    def change(section):
        for rel, e in entries.items():
            old = section["files"].get(rel) or {}
            if old.get("sha") == e["sha"]:
                e["symbols"] = {**(old.get("symbols") or {}), **e["symbols"]}
            section["files"][rel] = e
            section["renamed"].pop(rel, None)
        for mid, anchors in anchored.items():
            section["memories"][mid] = [[a["path"], a.get("symbol"), a["sha"]] for a in anchors]
            section["drifted"].pop(mid, None)
            section["stale"].pop(mid, None)
        for mid in removed:
            for key in ("memories", "drifted", "stale"):
                section[key].pop(mid, None)

    return update_section(store.path, change)


# -- git ----------------------------------------------------------------------------------------

def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=GIT_TIMEOUT,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None


def git_renames(root: Path) -> dict[str, str]:
    """``{old path: new path}`` from git's view, relative to ``root``: staged renames (``git mv``)
    and renames in the last GIT_RENAME_COMMITS commits (``-M``), chains followed to the newest
    path. {} outside a git repository or when git is missing."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None:
        return {}
    top_path = Path(top.strip()).resolve()
    renames: dict[str, str] = {}
    log = _git(root, "log", "-M", "--diff-filter=R", "--name-status", "--format=", "-z",
               f"-n{GIT_RENAME_COMMITS}", "HEAD")
    steps: list[tuple[str, str]] = []
    if log:
        parts = [p for p in log.split("\0")]
        i = 0
        while i + 2 < len(parts):
            status = parts[i].strip()
            if status.startswith("R"):
                steps.append((parts[i + 1], parts[i + 2]))
                i += 3
            else:
                i += 1
        steps.reverse()  # oldest first
    porcelain = _git(root, "status", "--porcelain=v1", "-z", "-M")
    if porcelain:
        parts = porcelain.split("\0")
        i = 0
        while i < len(parts):
            entry = parts[i]
            if len(entry) > 3 and entry[0] == "R":
                steps.append((parts[i + 1], entry[3:]))  # "R  new\0old"
                i += 2
            else:
                i += 1
    for old, new in steps:
        renames[old] = new
        for k, v in list(renames.items()):
            if v == old:
                renames[k] = new
    rel_root = root.resolve()
    out = {}
    for old, new in renames.items():
        try:
            o = (top_path / old).relative_to(rel_root).as_posix()
            n = (top_path / new).relative_to(rel_root).as_posix()
        except ValueError:
            continue
        out[o] = n
    return out


# -- the drift check ----------------------------------------------------------------------------

def reanchor(root: Path, section: dict, old: list[dict]) -> list[dict]:
    """The anchors ``old`` on today's code: each path followed through the recorded renames, each
    hash taken again (of the symbol when it still exists, else of the whole file); anchors whose
    file is gone are dropped."""
    out = []
    for a in old:
        path = _follow(section.get("renamed") or {}, a["path"])
        entry = _file_entry(Path(root), path, [a.get("symbol")])
        if entry is None:
            continue
        h = entry["symbols"].get(a.get("symbol")) if a.get("symbol") else None
        out.append({"path": path, "symbol": a.get("symbol") if h else None, "sha": h or entry["sha"]})
    return out


def _follow(renamed: dict[str, str], path: str) -> str:
    """Where ``path`` is now after the recorded renames (chains followed, cycles stopped)."""
    seen = set()
    while path in renamed and path not in seen:
        seen.add(path)
        path = renamed[path]
    return path


def anchored_paths(section: dict, memory_ids: Iterable[str | None]) -> dict[str, set]:
    """Where the anchored files of ``memory_ids`` are now (after the recorded renames), each with the
    symbols of it that are anchored (None for the whole file): ``{path: {symbol, ...}}``."""
    memories, renamed = section["memories"], section["renamed"]
    wanted: dict[str, set] = {}
    for mid in memory_ids:
        for path, symbol, _h in memories.get(mid) or ():
            if renamed and path in renamed:
                path = _follow(renamed, path)
            syms = wanted.get(path)
            if syms is None:
                wanted[path] = syms = set()
            syms.add(symbol)
    return wanted


def memory_anchors(section: dict, memory_id: str) -> list[dict]:
    """A memory's anchors from the manifest section, as ``{"path", "symbol", "sha"}`` dicts."""
    return [{"path": p, "symbol": s, "sha": h} for p, s, h in section["memories"].get(memory_id) or []]


def check(store_path: Path, memory_ids: Iterable[str] | None = None, *, root: Path | None = None,
          update: bool = True, section: dict | None = None) -> dict[str, dict[str, list[str]]]:
    """Check the anchors of ``memory_ids`` (default: every anchored memory). Returns, for each
    memory whose anchors moved, ``{"drifted": [paths], "stale": [paths]}`` (memories whose code is
    unchanged are not in the result). Paths are shown where the file is now (after a git rename).

    Cheap on an unchanged tree: one ``stat`` per anchored file, compared with the cached size and
    mtime; a file is read and hashed only when they changed. With ``update``, changed cache entries,
    renames, and newly drifted or stale memories (the re-judge queue) are written back to the
    manifest (never when nothing changed)."""

    store_path = Path(store_path)
    top = str(root) if root is not None else check_root(store_path)
    section = section if section is not None else read_section(store_path)
    memories = section["memories"]
    files = section["files"]
    renamed = section["renamed"]
    if memory_ids is None:
        ids = list(memories)
    else:
        ids = [m for m in memory_ids if m in memories]
    if not ids:
        return {}
    wanted = anchored_paths(section, ids)
    current: dict[str, dict | None] = {}
    changed: dict[str, dict] = {}
    missing: list[str] = []
    stat = os.stat
    sep = os.sep
    for rel, syms in wanted.items():
        try:
            st = stat(top + sep + rel)
        except OSError:
            missing.append(rel)
            continue
        cached = files.get(rel)
        if cached is not None and cached.get("size") == st.st_size and cached.get("mtime_ns") == st.st_mtime_ns:
            csyms = cached.get("symbols") or {}
            if all(s is None or s in csyms for s in syms):
                current[rel] = cached
                continue
        entry = _file_entry(Path(top), rel, syms)
        current[rel] = entry
        if entry is not None:
            changed[rel] = entry
    new_renames: dict[str, str] = {}
    if missing:
        moves = git_renames(Path(top))
        for rel in missing:
            new = _follow(moves, rel) if rel in moves else None
            entry = _file_entry(Path(top), new, wanted[rel]) if new else None
            current[rel] = None
            if new is None or entry is None:
                continue
            new_renames[rel] = new
            current[new] = entry
            changed[new] = entry
    all_renames = {**renamed, **new_renames} if new_renames else renamed
    result: dict[str, dict[str, list[str]]] = {}
    for mid in ids:
        drifted = stale = None
        for path, symbol, h in memories[mid]:
            now_path = _follow(all_renames, path) if all_renames and path in all_renames else path
            entry = current.get(now_path)
            if entry is None:
                stale = (stale or []) + [path]
                continue
            now = entry["symbols"].get(symbol) if symbol else entry["sha"]
            if now != h:
                drifted = (drifted or []) + [now_path]
        if drifted or stale:
            result[mid] = {"drifted": sorted(set(drifted or [])), "stale": sorted(set(stale or []))}
    if update:
        queue_d, queue_s = section["drifted"], section["stale"]
        newly_drifted = {m: r for m, r in result.items()
                         if r["drifted"] and (queue_d.get(m) or {}).get("paths") != r["drifted"]}
        newly_stale = {m: r for m, r in result.items()
                       if r["stale"] and (queue_s.get(m) or {}).get("paths") != r["stale"]}
        if changed or new_renames or newly_drifted or newly_stale:
            stamp = _now_iso()

            def change(sec):
                for rel, e in changed.items():
                    old = sec["files"].get(rel) or {}
                    if old.get("sha") == e["sha"]:
                        e["symbols"] = {**(old.get("symbols") or {}), **e["symbols"]}
                    sec["files"][rel] = e
                sec["renamed"].update(new_renames)
                for m, r in newly_drifted.items():
                    sec["drifted"][m] = {"paths": r["drifted"], "since": stamp}
                for m, r in newly_stale.items():
                    sec["stale"][m] = {"paths": r["stale"], "since": stamp}

            update_section(store_path, change)
    return result


def mark_hits(store, hits: list[dict], *, for_context: bool = False) -> list[dict]:
    """Recall hits with their drift: a drifted hit's metadata gets ``drifted`` (paths), a stale
    one's ``stale`` (paths), which :func:`consolidate.model.report.render_memory` shows after the suffix.
    ``for_context=True`` leaves stale hits out. Hits without anchors are returned as they are."""
    if not hits:
        return hits
    try:
        drift = check(store.path, [h["id"] for h in hits], root=project_root(store),
                      update=getattr(store, "writable", True))
    except Exception:  # noqa: BLE001 - a drift check never fails a recall
        return hits
    out = []
    for h in hits:
        d = drift.get(h["id"])
        if d:
            if for_context and d["stale"]:
                continue
            h = {**h, "metadata": {**h["metadata"], "drifted": ",".join(d["drifted"]),
                                   "stale": ",".join(d["stale"])}}
        out.append(h)
    return out


# -- the SessionStart context -------------------------------------------------------------------

CONTEXT_INDEX = _INDEX.name


def write_context_index(store, rows: list[dict], lines: list[str]) -> None:
    """Write ``memory/context.json``: the memory id beside each line of ``memory/context.md``, so
    the SessionStart hook can mark drifted lines and leave stale ones out."""

    write_json_atomic(_INDEX.of(Path(store.path)),
                      [{"id": r["id"], "line": line} for r, line in zip(rows, lines)])


def context_text(store_path: Path) -> str | None:
    """``memory/context.md`` as the SessionStart hook prints it, with the drift check applied: a
    drifted memory's line ends with ``[drifted: path]``, a stale one is left out. None when there
    is no ``memory/context.json`` (then the hook prints context.md as it is)."""
    store_path = Path(store_path)
    try:
        index = json.loads(_INDEX.of(store_path).read_text(encoding="utf-8"))
        md = CONTEXT_MD.of(store_path).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    if not isinstance(index, list):
        return None
    section = read_section(store_path)
    drift = check(store_path, [e["id"] for e in index if isinstance(e, dict) and isinstance(e.get("id"), str)], section=section) \
        if section["memories"] else {}
    if not drift:
        return md
    by_line = {e["line"]: e["id"] for e in index if isinstance(e, dict) and "line" in e and "id" in e}
    out = []
    for line in md.splitlines():
        mid = by_line.get(line[2:]) if line.startswith("- ") else None
        d = drift.get(mid) if mid else None
        if d and d["stale"]:
            continue
        if d and d["drifted"]:
            line += f" [drifted: {', '.join(d['drifted'])}]"
        out.append(line)
    return "\n".join(out) + "\n"
