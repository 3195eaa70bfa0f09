"""Undo records (``snapshots/<run_id>.json``), one per run that touched the recall index.

Written by ``apply`` before its first index write: the ids the run adds, and the full earlier state
(document, metadata, embedding) of every existing entry it overwrites, re-confirms, updates, archives
or tombstones; the graph step adds the graph diff (nodes added, earlier attributes of nodes changed,
edges added) before it saves the graph. ``consolidate undo RUN_ID`` reverses exactly that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from consolidate.core.errors import BadInput, StoreCorrupt
from consolidate.core.atomic import write_json_atomic
from consolidate.store.layout import GRAPH, SNAPSHOT, SNAPSHOTS
from consolidate.core.json_check import check_fields
from consolidate.store import graph
from consolidate.rules.persisted import gate_record
from consolidate.store import archive


def path_of(store, run_id: str) -> Path:
    return store.sub(SNAPSHOT.fill(run_id))


def save(store, run_id: str, record: dict[str, Any]) -> None:
    """Write the undo record of ``run_id`` whole (atomically): ``consolidate undo`` marking it undone;
    its documents and reasons pass the gate of persisted text (consolidate/rules/persisted.py)."""
    write_json_atomic(path_of(store, run_id), gate_record(record))


#: The fields of an undo record and their JSON kinds (consolidate/core/json_check.py).
RECORD_FIELDS = {"run_id": (("string",), True), "session_id": (("string", "null"), True),
                 "outcome": (("string", "null"), False), "started_at": (("number",), False),
                 "added": (("array",), False), "before": (("object",), False), "tombstoned": (("array",), False),
                 "graph": (("object", "null"), False), "graph.added_nodes": (("array",), False),
                 "graph.changed_nodes": (("object",), False), "graph.added_edges": (("array",), False),
                 "waiting": (("integer", "null"), False), "undone": (("boolean", "string", "number", "null"), False)}
_FIX = "restore it or move it away (nothing was changed)"


def load(store, run_id: str) -> dict[str, Any]:
    """The undo record of ``run_id``. Raises BadInput for an unknown run, StoreCorrupt for a bad file
    (not JSON, or a field of the wrong type: one line naming the file and the field)."""

    p = path_of(store, run_id)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInput(f"no undo record for run {run_id!r} (see `consolidate runs`)", run_id=run_id) from None
    except ValueError as exc:
        raise StoreCorrupt(f"{p} is corrupt ({exc})", path=str(p)) from None
    return check_fields(data, p, RECORD_FIELDS, fix=_FIX)


def take(store, plan, durable) -> None:
    """Record the earlier state of everything the run will touch in the index (kept as it is on a
    replay: the first record is the true earlier state)."""
    p = path_of(store, plan.run_id)
    if p.exists():
        return
    lt = store.longterm()
    ids = [c.memory_id for c in durable] + [r.memory_id for r in plan.reconfirmations] + [u.memory_id for u in plan.updates]
    before = {}
    if ids:
        before = lt.get_with_embeddings(sorted(set(ids)))

    write_json_atomic(p, gate_record({
        "run_id": plan.run_id, "session_id": plan.session_id, "outcome": plan.outcome,
        "started_at": plan.started_at,
        "added": sorted({c.memory_id for c in durable} - set(before)),
        "before": before,
        "tombstoned": sorted({u.memory_id for u in plan.updates if u.action == "tombstone"} - archive.tombstones(store)),
        "graph": None,
        "waiting": len(getattr(plan, "waiting", []) or []),  # notes the run left waiting for a judge
    }))  # the documents and reasons of the records: consolidate/rules/persisted.py


def record_graph_diff(store, run_id: str, g_before_nodes: dict, g_before_edges: set, g_after) -> None:
    """Store the graph diff of the run in its undo record (once)."""
    p = path_of(store, run_id)
    if not p.exists():
        return
    data = json.loads(p.read_text(encoding="utf-8"))
    if data.get("graph") is not None:
        return
    added_nodes = [n for n in g_after.nodes if n not in g_before_nodes]
    changed = {n: attrs for n, attrs in g_before_nodes.items()
               if n in g_after.nodes and dict(g_after.nodes[n]) != attrs}
    added_edges = [[u, v, k] for u, v, k in g_after.edges(keys=True) if (u, v, k) not in g_before_edges]
    data["graph"] = {"added_nodes": added_nodes, "changed_nodes": changed, "added_edges": added_edges}
    write_json_atomic(p, data)


def record_graph_append(store, run_id: str, starts: dict, ends: dict | None) -> None:
    """Record where the run's graph lines are (consolidate.store.graph.append): ``starts`` and ``ends``
    are ``graph.positions`` before and after the append (``ends`` None: before it). A replay keeps
    the first start when the file is still the same one, so its lines and the first attempt's are
    one segment."""
    p = path_of(store, run_id)
    if not p.exists():
        return
    data = json.loads(p.read_text(encoding="utf-8"))
    old = (data.get("graph") or {}).get("append") or {}
    seg: dict[str, Any] = {"run_id": run_id}
    for kind in ("nodes", "edges"):
        ino, start = starts[kind]
        prev = old.get(kind)
        if prev and prev[0] == ino and prev[1] <= start:
            start = prev[1]
        end_ino, end = (ends or starts)[kind]
        seg[kind] = [end_ino if ino == 0 else ino, start, end]
        if ends is not None:  # the bytes appended, found again in a copy of the store (graph.appended_diffs)
            seg[kind].append(graph.segment_digest(store.sub(GRAPH), kind, start, end))
    data["graph"] = {"append": seg}
    write_json_atomic(p, data)


def settle_graph_appends(store) -> dict[str, dict]:
    """Turn the appended-lines records of every run not undone into explicit graph diffs (before the
    graph files are rewritten, which moves every line: undo, doctor --repair); returns
    ``{run_id: diff}``. A record whose lines are no longer in the files keeps no graph diff."""

    folder = store.sub(SNAPSHOTS)
    records = {}
    for p in folder.glob(SNAPSHOT.name) if folder.is_dir() else []:
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except ValueError:
            continue
        seg = (data.get("graph") or {}).get("append")
        if seg and not data.get("undone"):
            records[data["run_id"]] = (p, data, seg)
    if not records:
        return {}
    diffs = graph.appended_diffs(store.sub(GRAPH), {rid: seg for rid, (_, _, seg) in records.items()})
    for rid, (p, data, _) in records.items():
        data["graph"] = diffs.get(rid) or {"added_nodes": [], "changed_nodes": {}, "added_edges": []}
        write_json_atomic(p, data)
    return diffs


def list_runs(store) -> list[dict[str, Any]]:
    """Every undo record, newest first, without the bulky earlier states."""
    folder = store.sub(SNAPSHOTS)
    out = []
    for p in folder.glob(SNAPSHOT.name) if folder.is_dir() else []:
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except ValueError:
            continue

        check_fields(data, p, RECORD_FIELDS, fix=_FIX)
        out.append({"run_id": data["run_id"], "session_id": data["session_id"], "outcome": data.get("outcome"),
                    "started_at": data.get("started_at", 0), "added": len(data.get("added", [])),
                    "changed": len(data.get("before", {})), "undone": bool(data.get("undone")),
                    "waiting": int(data.get("waiting") or 0), "partial": bool(data.get("waiting"))})
    return sorted(out, key=lambda r: r["started_at"], reverse=True)


def with_partial_runs(store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (from :func:`list_runs`) plus every run that wrote nothing to the index (so has no
    undo record: every note dropped, a failed session, notes left waiting for a judge), from the
    queue of session ends; newest first. Those carry ``"undo_record": False``."""
    known = {r["run_id"] for r in rows}
    extra = []
    for end in store.sessions.last_runs(10_000):
        result = end.get("result") or {}
        if not end["run_id"] or end["run_id"] in known:
            continue
        extra.append({"run_id": end["run_id"], "session_id": end["session_id"], "outcome": end["outcome"],
                      "started_at": end["finished_at"], "added": 0, "changed": 0, "undone": False,
                      "waiting": int(result.get("waiting") or 0), "partial": end["status"] == "partial",
                      "undo_record": False})
    return sorted(rows + extra, key=lambda r: r["started_at"], reverse=True)
