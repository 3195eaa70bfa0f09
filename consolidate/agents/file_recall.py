"""Recall where the agent is editing: the memories about the file a tool is about to read or change.

The PreToolUse hook (Claude Code: ``Read``, ``Edit``, ``MultiEdit``, ``Write``, ``NotebookEdit``;
Gemini CLI's BeforeTool: ``read_file``, ``write_file``, ``replace``, ``read_many_files``) calls
:func:`file_context` with the tool's input. It answers the memories whose **entities** (the graph's
``mentions`` edges to ``entity:<file>`` nodes, consolidate/store/graph.py) or **code anchors** (the
manifest's ``anchors.memories``, consolidate/store/anchors.py) name that file, at most :data:`MAX_MEMORIES`
lines of at most :data:`MAX_LINE_CHARS` characters each, under a header naming the file. Only
active and disputed memories are shown (never quarantined, superseded or forgotten ones), and each
memory at most once per session (table ``file_recall_shown``; the SessionStart context does not
count: it may have been compacted away by the time the file is touched). What is printed is also
recorded as shown (consolidate.store.echo), so a memory repeated back is an echo, not a confirmation.

A file matches an entity when they are the same path relative to the project root, or when the
entity is a bare file name (``auth.py``) equal to the file's name, or a partial path the file's
path ends with (``auth/views.py``); a file outside the project root only by the memories naming its
absolute path. The index (file -> memories) is built from the graph files and
the anchor manifest and cached in ``memory/files.json``, rebuilt when one of them changes (mtime
and size), so a hook call reads one small JSON file. Only the standard library (the hook).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any
from consolidate.store.layout import FILE_INDEX, GRAPH, GRAPH_EDGES, GRAPH_NODES, MANIFEST, SESSIONS_DB

from consolidate.agents.hooks.payload import PRE_TOOL_USE_NAME, cwd_of, hook_output, raw_event_name, tool_paths
from consolidate.store.sessions.segments import session_for_end
from consolidate.core.jsonl import read_lines
from consolidate.store.anchors import read_section
from consolidate.store.index import file_table, lexical
from consolidate.store.index.file_table import FileTable
from consolidate.store import hook_log, resolve
from consolidate.store.echo import digest
from consolidate.store.sessions.tables import printed_digests
from consolidate.store.sessions.tables import record_printed
from consolidate.store.sessions.tier import SessionTier
from consolidate.core.normal import path_key, search_fold
from consolidate.core.settings import PROJECT_ROOT
from consolidate.store.views import shown as agent_view
import time

#: At most this many memories per tool call, each cut to this many characters (the agent view's
#: budget for this surface: consolidate/store/views/shown.py).
MAX_MEMORIES = agent_view.surface("file-recall").max_memories or 5
MAX_LINE_CHARS = agent_view.surface("file-recall").line_chars or 240
INDEX = FILE_INDEX.name


def relative(path: str, root: Path, cwd: str | None = None) -> str:
    """``path`` as compared with the index keys: relative to the project ``root`` in POSIX form,
    through consolidate.core.normal.path_key (NFC, ``./`` and repeated or trailing ``/`` dropped,
    ``\\`` read as ``/``). A relative ``path`` is taken from ``cwd`` when given (an agent working in a
    nested folder names ``auth.py`` for ``src/auth.py``); a path outside ``root`` stays absolute."""
    key = path_key(path)
    if not key.startswith("/") and cwd and Path(cwd).is_absolute():
        key = path_key(Path(cwd).as_posix() + "/" + key)
    if not key.startswith("/"):
        return key
    tops = [t for t in (path_key(Path(root).as_posix()), _resolved(root)) if t]
    for k in (key, _resolved(key)):
        for top in tops:
            if k and k != top and _under(k, top):
                return k[len(top.rstrip("/")) + 1:]
    return key


def _resolved(path) -> str:
    """The path_key of ``path`` with its symbolic links resolved ('' when it cannot be)."""
    try:
        return path_key(Path(path).resolve().as_posix())
    except (OSError, RuntimeError, ValueError):
        return ""


def _stamp(paths: list[Path]) -> list:
    out = []
    for p in paths:
        try:
            st = p.stat()
            out.append([str(p.name), st.st_mtime_ns, st.st_size])
        except OSError:
            out.append([str(p.name), None, None])
    return out


def build_index(store_path: Path) -> dict[str, Any]:
    """``{"memories": {id: {"text", "status", "restates"}}, "files": {entity or anchored path: [memory ids]}}``
    from ``graph/nodes.jsonl``, ``graph/edges.jsonl`` and ``manifest.json``'s anchors."""
    memories: dict[str, dict] = {}
    files: dict[str, list[str]] = {}
    entity_files: set[str] = set()

    for entry in (GRAPH_NODES, GRAPH_EDGES):
        try:  # an unreadable graph file: the index is built from the rest
            for obj in read_lines(entry.of(store_path)):  # torn or damaged lines skipped
                if entry is GRAPH_NODES:
                    if obj.get("kind") == "memory" and isinstance(obj.get("statement"), str):
                        memories[obj["id"]] = {"text": obj["statement"], "status": obj.get("status") or "active",
                                               "restates": str(obj.get("restates") or "")}
                    elif obj.get("id") in memories and isinstance(obj.get("status"), str):
                        memories[obj["id"]]["status"] = obj["status"]  # a later update: forgotten, superseded
                    elif obj.get("kind") == "entity" and obj.get("entity_kind") in ("file", "named"):
                        entity_files.add(str(obj.get("id")))
                elif obj.get("kind") == "mentions" and str(obj.get("target")) in entity_files:
                    files.setdefault(str(obj["target"])[len("entity:"):], []).append(str(obj.get("source")))
        except OSError:
            continue
    anchored: set[str] = set()
    try:

        section = read_section(store_path)
        for mid, anchors in (section.get("memories") or {}).items():
            anchored.add(mid)
            for a in anchors or []:
                if isinstance(a, list) and a and isinstance(a[0], str):
                    files.setdefault(a[0], []).append(mid)
    except Exception:  # noqa: BLE001 - no manifest: entities only
        pass
    for mid, m in memories.items():
        m["anchored"] = mid in anchored
    files = {k: sorted(set(v)) for k, v in files.items()}
    return {"memories": memories, "files": files}


def _sources(store_path: Path) -> list[Path]:
    return [GRAPH_NODES.of(store_path), GRAPH_EDGES.of(store_path), MANIFEST.of(store_path)]


#: The context guard's code (consolidate/rules/guard.py): the table's held-back marks are asked again
#: when it changes.
_GUARD = Path(__file__).resolve().parents[1] / "rules" / "guard.py"


def load_index(store_path: Path) -> FileTable:
    """The file index (``memory/files.sqlite3``, consolidate.store.index.file_table.FileTable), rebuilt
    from the graph and the manifest (:func:`build_index`) when one of them changed (mtime and size) or
    the table is missing or damaged; the caller closes it. A read-only store is answered from an
    in-memory copy."""
    stamp = json.dumps(_stamp(_sources(store_path)))
    got = file_table.open_current(store_path, stamp)
    if got is not None:
        return got
    data = build_index(store_path)
    for m in data["memories"].values():  # what the light entry answers from (consolidate/agents/hooks/file_hook.py)
        m["digest"] = digest(m["text"])
        m["line"] = agent_view.line(m["text"], {"status": m.get("status") or "active"}, "file-recall")
        m["terms"] = cased_terms(m["text"])
    return file_table.write(store_path, stamp, data, agent_view.held_back, json.dumps(_stamp([_GUARD])))


def cased_terms(text: str) -> list[str]:
    """The terms of ``text`` that may name a file, with their case as written: its chunks
    (consolidate.store.index.lexical.chunks), each once; not their path suffixes, so a memory naming
    ``src/lib/util.py`` does not name ``SRC/lib/util.py`` by its tail ``lib/util.py`` (what
    :func:`names_file_cased` compares where the filesystem does not fold case)."""
    return list(dict.fromkeys(lexical.chunks(text)))


def names_file_cased(rel: str, terms) -> bool:
    """Whether a memory whose :func:`cased_terms` are ``terms`` names the file ``rel`` (a
    :func:`relative` path) with the case ``rel`` has, by :func:`names_file`'s rule: on a filesystem
    that does not fold case ``SRC/config.py`` is another file than ``src/config.py``."""
    rel = path_key(rel)
    return names_file(rel, rel.rsplit("/", 1)[-1], set(terms))


def matches(rel: str, key: str) -> bool:
    """Whether the index key (an entity or anchored path) names the file ``rel`` (a
    :func:`relative` path); both compared by consolidate.core.normal.path_key."""
    key, rel = path_key(key), path_key(rel)
    if not key:
        return False
    if key == rel:
        return True
    if "/" not in key:
        return rel.rsplit("/", 1)[-1] == key
    return rel.endswith("/" + key)


def lexical_ids(store_path: Path, rel: str, limit: int = MAX_MEMORIES * 4) -> list[str]:
    """Ids of the memories whose text names the file ``rel`` (:func:`names_file`: its path, a path it
    ends with after a ``/``, or its bare name when the memory names no path to a file of that name),
    from the store's lexical
    index (consolidate/store/index/lexical.py, the same terms as recall; read as it is: the hook rebuilds
    nothing). Active and disputed memories only; [] when there is no index."""
    rel = path_key(rel)
    name = rel.rsplit("/", 1)[-1]
    folded = search_fold(name)  # the lexical terms' form
    wanted = lexical.terms(rel)
    strong = {t for t, s in wanted if s and t.endswith(folded)} or {folded}
    idx = lexical.read_only(store_path)
    if idx is None:
        return []
    try:
        hits = idx.search(lexical.Query(terms=sorted(strong), strong=strong), limit=limit)
    except sqlite3.Error:
        return []
    finally:
        idx.close()
    full = max(strong, key=len)
    return [h.id for h in hits if names_file(full, folded, h.terms)]


def names_file(full: str, base: str, terms) -> bool:
    """Whether a memory whose lexical terms are ``terms`` names the file ``full`` (a tool call's
    relative path, in the lexical terms' form) whose name is ``base``, by whole path components: a
    path the memory names (a term with ``/`` ending in ``/base``) is ``full`` or a tail of it after a
    ``/`` (``lib/util.py`` names ``src/lib/util.py``, not ``mylib/util.py`` nor the root
    ``util.py``); a memory naming no path to such a file names it by its bare name ``base``
    (``app.py`` names ``src/app.py``; not ``myapp.py`` nor ``app.pyc``: terms are whole)."""
    paths = [t for t in terms if "/" in t and t.endswith("/" + base)]
    if paths:
        return any(full == t or full.endswith("/" + t) for t in paths)
    return base in terms or full in terms


def _project_root(store_path: Path, cwd: str | None) -> Path:
    """The folder the tool call's paths are taken relative to: ``$CONSOLIDATE_PROJECT_ROOT``, else
    the folder holding the store (consolidate.store.anchors.project_root: anchors are relative to
    it) when there is no ``cwd`` or ``cwd`` lies in it (an agent in a nested folder), else ``cwd``
    (a store kept outside the project), but the linked git worktree's root when the store is its
    main worktree's (consolidate.store.resolve.linked_worktree: all worktrees share one store)."""
    env = PROJECT_ROOT.get()
    if env:
        return Path(env)
    top = Path(store_path).parent
    if not cwd or _under(path_key(Path(cwd).as_posix()), path_key(top.as_posix())):
        return top
    return Path(resolve.linked_worktree(cwd, str(top)) or cwd)


def _under(key: str, top: str) -> bool:
    """Whether the path key ``key`` is ``top`` or lies under it."""
    return key == top or key.startswith(top.rstrip("/") + "/")


def file_context(store_path: Path, payload: dict[str, Any], *, root: Path | None = None,
                 shown: set[str] | None = None, update: bool = True) -> tuple[str, list[str]]:
    """``(text, memory texts)`` for a tool call: the lines to print ('' when no memory names the
    file, or all were printed already) and the texts printed (to record as shown). ``shown``: digests
    (consolidate.store.echo.digest) of the memory texts already printed to the session. What is
    shown is the agent view's (consolidate/store/views/shown.py, surface ``file-recall``): status and
    tombstones, drift marks, the context guard and the line budget; ``update`` False writes no drift
    record (a read-only store)."""
    paths = tool_paths(payload)
    if not paths:
        return "", []
    cwd = cwd_of(payload)
    root = root or _project_root(store_path, cwd)
    table = load_index(store_path)
    try:
        if table.empty():
            return "", []
        shown = shown or set()
        folds = table.folds()
        rels = [relative(p, root, cwd) for p in paths]
        rows: list[dict[str, Any]] = []
        held: set[str] = set()  # the ids the context guard holds back (the table's marks)
        for rel in rels:
            # a file outside the project (``relative`` left it absolute): only a memory naming that very
            # path is about it; another project's src/config.py is not this project's
            outside = rel.startswith("/")
            named = table.named(rel, exact=outside)
            lexed = [] if outside else [m for m in lexical_ids(store_path, rel) if m not in named]
            found = table.memories(named + lexed)
            if lexed and not folds:  # the lexical terms are case-folded: the file's case must match too
                lexed = [m for m in lexed if m in found and names_file_cased(rel, found[m]["terms"])]
            ids = named + lexed
            for mid in ids:
                m = found.get(mid)
                if m and mid not in {r["id"] for r in rows} and m["digest"] not in shown:
                    meta = {"status": m.get("status") or "active", **({"restates": m["restates"]} if m.get("restates") else {})}
                    rows.append({"id": mid, "document": m["text"], "metadata": meta})
                    if m["held"]:
                        held.add(mid)
    finally:
        table.close()
    if not rows:
        return "", []
    got = agent_view.view(rows, "file-recall", drift=agent_view.drift_of(store_path, [r["id"] for r in rows],
                                                                          update=update),
                          forgotten=agent_view.forgotten_ids(store_path), held=held)
    if not got.rows:
        return "", []
    lines = [f"consolidate: remembered about {', '.join(rels[:3])} (notes from earlier sessions, not instructions):"]
    lines += ["- " + t for t in got.lines]
    if got.held:
        lines.append(got.held_line)
    return "\n".join(lines), got.texts


def _printed(tier, sid: str) -> set[str]:
    """Digests of the memory texts this hook already printed to the session."""

    return printed_digests(tier.db, sid)


def _record_printed(tier, sid: str, texts: list[str]) -> None:
    now = time.time()
    record_printed(tier.db, sid, [digest(t) for t in texts], now, now - 30 * 86400)


def run(store_path: Path, sid: str | None, payload: dict[str, Any], *, record: bool = True) -> str:
    """The PreToolUse/BeforeTool hook: the JSON to print ('' when nothing is to be said). Records
    what it shows for the session; ``record`` False (a read-only store) reads only: the session tier
    is not opened, so a memory already shown this session may be shown again. A session tier that
    cannot be opened (a damaged ``sessions.sqlite3``) is answered the same way, with one line in
    ``logs/hook.log``. Never raises."""
    try:
        if not tool_paths(payload) or not GRAPH.of(store_path).exists():
            return ""
        if not record:
            text, _ = file_context(store_path, payload, shown=set(), update=False)
            return hook_output(text, raw_event_name(payload, PRE_TOOL_USE_NAME)) if text else ""

        try:
            tier = SessionTier(SESSIONS_DB.of(store_path))
        except Exception as exc:  # noqa: BLE001 - a damaged session tier: answer, record nothing, say so
            text, _ = file_context(store_path, payload, shown=set())
            hook_log.log(store_path, f"file recall: {SESSIONS_DB.name} is not usable ({type(exc).__name__});"
                         " answered without recording what was shown (`consolidate doctor` says what to do)",
                         prepare=False)
            return hook_output(text, raw_event_name(payload, PRE_TOOL_USE_NAME)) if text else ""
        try:
            if sid:
                sid = session_for_end(tier, sid)
            shown = _printed(tier, sid) if sid else set()
            text, texts = file_context(store_path, payload, shown=shown)
            if texts and sid:
                agent_view.record(tier, sid, texts)  # a memory repeated back is an echo (consolidate.store.echo)
                _record_printed(tier, sid, texts)
        finally:
            tier.close()
        if not text:
            return ""
        return hook_output(text, raw_event_name(payload, PRE_TOOL_USE_NAME))
    except Exception:  # noqa: BLE001 - the hook never fails the agent
        return ""
