"""``consolidate doctor [--repair]``: check a store and repair what can be repaired safely.

Checks, in order: the manifest; the session database (not a SQLite database: repair moves it aside
to ``sessions.sqlite3.corrupt``; SQLite's ``integrity_check`` failing needs a person); leftover
temporary files (repair: remove); corrupt lines in the event log and the graph files (repair: move
them to ``<file>.corrupt`` beside it, keep the rest); an unfinished journal (repair: replay it);
then every derived file against the event log, the source of truth (consolidate/pipeline/crosscheck.py):
the event log itself against the undo records (lines lost: repair appends recovered events from
the graph and the recall index), the graph, the recall index (a corrupt one is moved aside to
``chroma.corrupt``; rebuilt from the log, consolidate/store/index/reindex.py), ``memory/notes.md`` and the
context files, each difference counted (missing, extra, stale entries; repair rebuilds the file from
the log); claims held by dead processes (repair: put the session end back in the queue). Nothing
is deleted without a copy.
"""

from __future__ import annotations

import json
from pathlib import Path

from consolidate.core.errors import ConsolidateError
from consolidate.pipeline.stages import apply as apply_stage
from consolidate.store import journal
from consolidate.store.anchors import update_manifest
from consolidate.store.layout import CHROMA, EVENT_LOG, GRAPH, GRAPH_EDGES, GRAPH_NODES, JOURNAL, MANIFEST, SESSIONS_DB, TOMBSTONES
from consolidate.rules.redaction import error_text
from consolidate.pipeline.findings import Finding, memories as _memories, move_aside as _move_aside
from consolidate.core.errors import StoreCorrupt
from consolidate.store.graph import LINE_FIELDS
from consolidate.core.json_check import check_fields
from consolidate.core.atomic import write_text_atomic
from consolidate.core.private import private_file
from consolidate.core.private import private_umask
from consolidate.pipeline import crosscheck
from consolidate.store.index.reindex import allow_missing
from consolidate.store import snapshots
from consolidate.store.index import reindex
from consolidate.store.index import lexical
from consolidate.core.errors import StoreError
import sqlite3
from collections import Counter


def _bad_lines(path: Path) -> list[int]:
    """Line numbers of ``path`` that are not JSON, or (graph files) whose fields have the wrong type."""

    spec = LINE_FIELDS.get(path.name) if path.parent.name == GRAPH.name else None
    bad = []
    with open(path, "rb") as f:
        for i, raw in enumerate(f, 1):
            try:
                if raw.strip():
                    obj = json.loads(raw.decode("utf-8"))
                    if spec:
                        check_fields(obj, path, spec, fix="")
            except (ValueError, UnicodeDecodeError, StoreCorrupt):
                bad.append(i)
    return bad


def _quarantine_lines(path: Path, bad: list[int]) -> None:
    """Move the bad lines of a JSONL file to ``<file>.corrupt`` and rewrite the file without them."""

    lines = path.read_bytes().splitlines(keepends=True)
    bad_set = set(bad)

    with private_file(path.with_name(path.name + ".corrupt"), "ab") as f:
        for i in sorted(bad_set):
            f.write(lines[i - 1].rstrip(b"\n") + b"\n")
    keep = b"".join(x if x.endswith(b"\n") else x + b"\n" for i, x in enumerate(lines, 1) if i not in bad_set)
    write_text_atomic(path, keep.decode("utf-8"))


def check(store, repair: bool = False) -> list[Finding]:
    """Run every check; with ``repair`` fix what can be fixed safely. Returns the findings."""
    if repair:

        private_umask()  # what the repair writes is private whatever the umask
    found: list[Finding] = []
    try:
        store.read_manifest()
    except ConsolidateError as exc:
        found.append(Finding(MANIFEST.rel, error_text(exc), repairable=False))
    sessions_ok = _check_sessions(store, repair, found)
    if not found or found[0].where != MANIFEST.rel:
        found += _check_project(store, repair)
    for path in sorted(store.path.rglob("*.tmp")):
        if CHROMA.name in path.parts:
            continue
        f = Finding(str(path.relative_to(store.path)), "leftover temporary file from an interrupted write")
        if repair:
            path.unlink(missing_ok=True)
            f.repaired = True
        found.append(f)
    for entry in (EVENT_LOG, GRAPH_NODES, GRAPH_EDGES, TOMBSTONES):
        rel, path = entry.rel, store.sub(entry)
        if not path.exists():
            continue
        if not path.is_file():
            found.append(Finding(rel, "is not a file", repairable=False))
            continue
        bad = _bad_lines(path)
        if bad:
            f = Finding(rel, f"{len(bad)} corrupt line(s): {', '.join(map(str, bad[:10]))}"
                              + (" …" if len(bad) > 10 else ""))
            if repair:
                if entry in (GRAPH_NODES, GRAPH_EDGES):

                    snapshots.settle_graph_appends(store)  # the lines undo records point to move
                _quarantine_lines(path, bad)
                f.repaired = True
            found.append(f)
    if journal.has_pending(store):
        f = Finding(JOURNAL.label, "an interrupted run is waiting to be replayed")
        if repair:
            done = apply_stage.recover(store)
            if done:  # which runs were finished, as `run` says it (consolidate.model.report.drain_notices)
                f.problem = f"an interrupted run was waiting to be replayed: finished {', '.join(done)}"
            f.repaired = True
        found.append(f)
    if not any(x.where.startswith((MANIFEST.rel, JOURNAL.label)) and not x.repaired for x in found):
        # every derived file against the event log (consolidate/pipeline/crosscheck.py); not while a run
        # waits in the journal (its lines are half written) or the log's own lines are bad

        with allow_missing(store):
            found += crosscheck.check(store, repair)
            if not any(not x.repaired for x in found if x.where.startswith((CHROMA.rel, MANIFEST.rel))):
                found += _check_lexical(store, repair)
    for sid, pid in (store.sessions.dead_claims() if sessions_ok else ()):
        f = Finding(f"queue:{sid}", f"claimed by process {pid}, which is gone")
        if repair:
            store.sessions.requeue_claim(sid)
            f.repaired = True
        found.append(f)
    return found


def _check_project(store, repair: bool) -> list[Finding]:
    """A manifest written before the store recorded its project (consolidate/store/store.py): the project
    its memories carry (when they all carry one) is recorded by ``--repair``, so that a copied or
    moved store folder keeps it; memories of several projects need a person (``--project``)."""
    if store.recorded_project or store.chroma_url or not store.sub(MANIFEST).exists():
        return []
    try:

        scopes = Counter(a.get("scope") for a in reindex.live_memories(store).values() if a.get("scope"))
    except ConsolidateError:
        return []
    if not scopes:
        return []
    if len(scopes) > 1:
        names = ", ".join(f"{p!r} ({n})" for p, n in scopes.most_common(5))
        return [Finding(MANIFEST.rel, f"no project recorded and the memories belong to several: {names}; give"
                        " --project (or CONSOLIDATE_PROJECT) wherever the store is used", repairable=False)]
    [(project, n)] = scopes.items()
    f = Finding(MANIFEST.rel, f"no project recorded (a copied or moved store would take the folder's name);"
                                 f" its {n} memories belong to {project!r}")
    if repair:

        update_manifest(store.path, lambda data: data.update(project=project))
        store.recorded_project = project
        f.problem += "; recorded"
        f.repaired = True
    return [f]


#: What a damaged session tier costs, said in every finding about it.
_SESSIONS_LOSS = "its notes and queued session ends cannot be read (the memories are not affected)"


def _check_sessions(store, repair: bool, found: list[Finding]) -> bool:
    """The session tier (``sessions.sqlite3``): not a SQLite database (garbage, truncated) is moved
    aside by ``--repair`` (to ``sessions.sqlite3.corrupt``, with its -wal and -shm files) so the store
    works again with an empty session tier; a database that opens but fails SQLite's integrity check
    needs a person (``sqlite3 sessions.sqlite3 .recover``). True when the tier can be used."""
    path = store.sub(SESSIONS_DB)
    try:
        ok = store.sessions.integrity()
    except (ConsolidateError, sqlite3.DatabaseError) as exc:
        cause = getattr(exc, "cause", None) or error_text(exc)
        f = Finding(SESSIONS_DB.rel, f"not a usable SQLite database ({cause}): {_SESSIONS_LOSS};"
                                        " --repair moves it to sessions.sqlite3.corrupt and starts an empty session tier"
                                        " (restore the file from a backup instead if you have one)")
        if repair:
            store.close()
            aside = _move_aside(path, ("-wal", "-shm"))
            f.problem += f" (moved to {aside.name})"
            f.repaired = True
            found.append(f)
            return True
        found.append(f)
        return False
    if ok != "ok":
        found.append(Finding(SESSIONS_DB.rel, f"integrity check: {' '.join(str(ok).split())[:200]}: some of"
                             " its notes may be unreadable; copy the store, then recover the file with"
                             " `sqlite3 sessions.sqlite3 .recover`", repairable=False))
    return True


def _check_lexical(store, repair: bool) -> list[Finding]:
    """The lexical index (``lexical.sqlite3``, consolidate/store/index/lexical.py) against the recall index: a
    missing, damaged or out-of-step one (another token, or another number of records) is rebuilt
    from the recall index's records by ``--repair`` (recall would rebuild it on first use too)."""

    path = lexical.index_path(store.path)
    try:
        lt = store.longterm()
        total = lt.count()
    except StoreError:
        return []  # the recall index's own finding
    if not path.exists():
        if not total:
            return []
        problem = f"the lexical index (exact identifiers in recall) is missing while the recall index holds {_memories(total)}"
    else:
        try:
            idx = lexical.LexicalIndex(path, readonly=True)
            try:
                ok = lexical.in_step(store, idx, lt) and idx.count() == total
                held = idx.count()
            finally:
                idx.close()
            problem = "" if ok else (f"the lexical index holds {_memories(held)} and is out of step with the recall"
                                     f" index ({_memories(total)})")
        except sqlite3.Error as exc:
            problem = f"the lexical index cannot be read ({error_text(exc)})"
        if not problem:
            return []
    f = Finding(lexical.INDEX_FILE, problem + "; --repair rebuilds it from the recall index (recall does on first use)")
    if repair:
        try:
            lexical.rebuild(store, lt).close()
            f.repaired = True
        except (sqlite3.Error, OSError) as exc:
            f.problem += f" (rebuild failed: {error_text(exc)})"
            f.repairable = False
    return [f]


def exit_code(findings: list[Finding]) -> int:
    """0 when nothing is left to fix, 1 otherwise."""
    return 0 if all(f.repaired for f in findings) else 1
