"""The recall index (``chroma/``) checked against, and rebuilt from, the store's own records.

The recall index is derived data: every memory it holds was also written to the graph
(``graph/nodes.jsonl``: id, type, status, scope, statement), the event log
(``events/memory-events.jsonl``: each ``memory.written`` with its type, status, tier, evidence,
confidence, source, session, run, reason and note ids, since this change its statement and fields
too; then every update, re-confirmation and undo), ``memory/notes.md`` (the full statement), the
manifest (code anchors) and the undo records (``snapshots/``: the exact earlier state of an entry a
run changed). So an index that was deleted (``rm -rf .memofs/chroma``), emptied, or moved aside
because it was corrupt is rebuilt from them (``consolidate doctor --repair``; embeddings are made
again with the store's embedding function).

- :func:`live_memories`: the memories the graph says the index must hold (status active, quarantined
  or disputed, see :data:`LIVE`).
- :func:`missing_index_error`: the one-line StoreCorrupt that every command opening an index that is
  missing or empty while the graph holds memories raises (recall, run, export, status, ...): they
  never answer "no memories" or write into a new empty index as if nothing were lost.
- :func:`rebuild`: upsert every live memory missing from the index; returns how many, and how many of
  them came from the graph alone (a memory a team pull brought in has no local ``memory.written``
  event: its metadata is best effort).
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any
from consolidate.store.layout import CHROMA, GRAPH, GRAPH_NODES

from consolidate.core.vocab import LIVE_STATUSES
from consolidate.store import graph, journal
from consolidate.core.errors import StoreCorrupt
import re

#: The statuses of memories the recall index holds (archived, superseded, expired and tombstoned
#: entries live in ``archive/``); consolidate/team/local.py uses the same three.
LIVE = LIVE_STATUSES
#: The repair named in every message about a missing or damaged index.
REPAIR = "`consolidate doctor --repair` rebuilds it from the graph and the event log"
#: How long a statement the graph keeps (consolidate/store/graph.py ``memory_lines``).
GRAPH_STATEMENT_CHARS = 300


def live_memories(store, g=None) -> dict[str, dict[str, Any]]:
    """``{memory id: graph node attributes}`` of every memory node of the graph (``g``, else loaded
    from the store) whose status is live (:data:`LIVE`). Raises StoreCorrupt when a graph file
    cannot be read (doctor reports it)."""

    g = graph.load(store.sub(GRAPH)) if g is None else g
    return {n: dict(a) for n, a in g.nodes(data=True) if a.get("kind") == "memory" and a.get("status") in LIVE}


def _only_from(g, memory_id: str, runs: set[str]) -> bool:
    """Whether every ``derived_from`` edge of ``memory_id`` in the graph ``g`` names a run of ``runs``
    (a memory with no such edge was not written by a run of the journal)."""
    seen = [a.get("run_id") for _, _, a in g.out_edges(memory_id, data=True) if a.get("kind") == "derived_from"]
    return bool(seen) and all(run in runs for run in seen)


def graph_has_memory_lines(store) -> bool:
    """Whether ``graph/nodes.jsonl`` holds any memory node line (a cheap scan that stops at the first)."""
    path = store.sub(GRAPH_NODES)
    try:
        with open(path, "rb") as f:
            return any(b'"kind": "memory"' in line for line in f)
    except OSError:
        return False


def missing_index_error(store, count_in_index: int, recheck=None):
    """The StoreCorrupt to raise when the embedded index of ``store`` holds ``count_in_index`` records
    while the graph holds live memories, else None (a new store, or every memory archived).

    Memories whose only runs are still in the journal before their index step
    (consolidate.store.journal ``unindexed_runs``: another process applying them right now, the
    graph step going first, or a crashed run the next one replays) do not count: they are not in
    the index yet, and nothing is lost. ``recheck`` (no arguments, returns a truth value) is asked
    again after the graph and then the journal were read, before refusing. The order matters: a run
    writes its journal before its graph lines and removes it only after its index step, so a run
    whose lines the graph read holds is, at the later journal read, either still in the journal
    (skipped while before its index step) or past its index step, which ``recheck`` then sees (the
    index's count, or whether its folder exists now). Read the other way round, a run another
    process started between the two reads was refused as a lost index (8 runs at once, issue 30's
    CI runs).

    Only called when the index folder is missing or the index is empty (cheap otherwise: nothing is
    read unless the graph has memory lines)."""

    if count_in_index or not graph_has_memory_lines(store):
        return None
    try:
        g = graph.load(store.sub(GRAPH))
    except StoreCorrupt:
        return None  # the graph itself is damaged: doctor reports that first
    unindexed = journal.unindexed_runs(store)  # after the graph: see the docstring
    live = live_memories(store, g)
    if unindexed:
        live = {mid: a for mid, a in live.items() if not _only_from(g, mid, unindexed)}
    if not live:
        return None
    if recheck is not None and recheck():
        return None
    folder = store.sub(CHROMA)
    state = "is missing" if not folder.exists() else "is empty"
    return StoreCorrupt(f"the recall index {folder} {state} while the store holds {len(live)} memories"
                        f" (graph and event log); {REPAIR}. Nothing was changed", path=str(folder),
                        memories=len(live))


def _full_statements(store) -> list[str]:
    """The statements of ``memory/notes.md`` (its ``- **type**: statement [confidence, evidence]
    (source)`` lines), for graph statements cut at :data:`GRAPH_STATEMENT_CHARS`."""
    try:
        text = store.notes_md_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    line = re.compile(r"^- \*\*[^*]+\*\*: (.*) \[[a-z]+, [a-z-]+\] \([^)]*\)$")
    return [m.group(1) for m in map(line.match, text.splitlines()) if m]


def _anchors(store) -> dict[str, str]:
    """``{memory id: anchors JSON}`` from the manifest (consolidate/store/anchors.py)."""
    try:
        section = ((store.read_manifest() or {}).get("anchors") or {}).get("memories") or {}
    except Exception:  # noqa: BLE001 - the manifest is doctor's finding of its own
        return {}
    out = {}
    for mid, rows in section.items() if isinstance(section, dict) else ():
        try:
            out[mid] = json.dumps([{"path": p, "symbol": s, "sha": h} for p, s, h in rows], ensure_ascii=False)
        except (TypeError, ValueError):
            continue
    return out


def records(store, live: dict[str, dict[str, Any]],
            described: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The index records (``id``, ``document``, ``metadata``; no embedding yet) of the ``live``
    memories (:func:`live_memories`), and how many of them the event log does not describe (their
    metadata is read from the graph: type, status, scope, the session and run of its derived_from
    edge; evidence ``inferred`` and confidence ``low`` as for an unconfirmed observation).

    ``described``: ``{id: {"metadata": dict, "statement": str or None, ...}}``, what the event log
    says of each live memory (the last ``memory.written``, then updates, re-confirmations and undos
    in order), as the caller folded it (consolidate.pipeline.crosscheck.History.live); ids not in
    ``live`` are ignored."""
    anchors = _anchors(store)
    long_statements = None
    out, graph_only = [], 0
    for mid, node in live.items():
        r = described.get(mid)
        statement = (r or {}).get("statement") or node.get("statement") or ""
        if not (r or {}).get("statement") and len(statement) >= GRAPH_STATEMENT_CHARS:
            if long_statements is None:
                long_statements = _full_statements(store)
            statement = next((s for s in long_statements if s.startswith(statement)), statement)
        if r is not None:
            meta = dict(r["metadata"])
        else:
            graph_only += 1
            meta = {"type": node.get("type") or "fact", "tier": "durable", "evidence": "inferred",
                    "confidence": "low", "last_confirmed": _dt.date.today().isoformat(), "session_id": "unknown",
                    "run_id": "unknown", "source": "rebuilt", "prompt_version": "",
                    "provenance": json.dumps({"reason": "rebuilt from the graph (no event describes it)"}),
                    "fields": "{}"}
        meta.update({"status": node.get("status") or meta.get("status") or "active",
                     "type": node.get("type") or meta.get("type") or "fact",
                     "scope": node.get("scope") or meta.get("scope") or store.project})
        if mid in anchors:
            meta["anchors"] = anchors[mid]
        out.append({"id": mid, "document": statement,
                    "metadata": {k: v for k, v in meta.items() if v is not None}})
    return out, graph_only


def missing_from_index(store, live: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Ids of live graph memories the recall index does not hold (opens the index; the caller allows
    a missing one with :func:`allow_missing`)."""
    live = live_memories(store) if live is None else live
    if not live:
        return []
    held = set(store.longterm().get(sorted(live)))
    return [m for m in live if m not in held]


class allow_missing:
    """Context: opening the index of ``store`` inside it does not refuse a missing or empty index
    (doctor looks at it and rebuilds it)."""

    def __init__(self, store):
        self.store = store

    def __enter__(self):
        self.store.allow_missing_index = True
        return self.store

    def __exit__(self, *exc):
        self.store.allow_missing_index = False
        return False


def rebuild(store, described: dict[str, dict[str, Any]], ids: list[str] | None = None,
            live: dict[str, dict[str, Any]] | None = None) -> dict[str, int]:
    """Upsert the live memories missing from the recall index (or ``ids``), embedded again with the
    store's embedding function, under the store lock. ``described``: what the event log says of the
    live memories (see :func:`records`; doctor folds the log, consolidate/pipeline/crosscheck.py).
    ``live``: ``{id: node attributes}`` of the memories the index must hold (default: the graph's,
    :func:`live_memories`; doctor gives the event log's). Returns ``{"rebuilt", "graph_only"}``."""
    with allow_missing(store), store.lock():
        live = live_memories(store) if live is None else live
        wanted = missing_from_index(store, live) if ids is None else [i for i in ids if i in live]
        if not wanted:
            return {"rebuilt": 0, "graph_only": 0}
        recs, graph_only = records(store, {m: live[m] for m in wanted}, described)
        lt = store.longterm()
        for start in range(0, len(recs), 256):
            chunk = recs[start:start + 256]
            for r, vec in zip(chunk, lt.embed([r["document"] for r in chunk])):
                r["embedding"] = list(vec)
            lt.upsert(chunk)
        return {"rebuilt": len(recs), "graph_only": graph_only}
