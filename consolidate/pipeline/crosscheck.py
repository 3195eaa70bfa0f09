"""Every derived file of the store checked against the event log, the store's source of truth
(``consolidate doctor``; ``--repair`` rebuilds each damaged one from the source that is whole).

The event log (``events/memory-events.jsonl``, consolidate/store/events.py) records every memory a run
wrote (``memory.written``: id, type, status, tier, evidence, confidence, source, session, run,
statement, fields), every later change (``memory.reconfirmed``; updates, supersessions, disputes,
forgets and tombstones: an ``action`` with its ``changes``) and every undo (``memory.undone``
removed/restored, ``run.undone``). :func:`replay` folds it into what each memory is now. The
derived files are compared with that:

- the graph (``graph/nodes.jsonl``, ``graph/edges.jsonl``): a node per memory the log holds (not
  undone) with the log's status, its ``derived_from`` edge and the ``mentions`` edges its
  statement names;
- the recall index (``chroma/``): every live memory (:data:`consolidate.store.index.reindex.LIVE`) with the
  log's status, type and statement, and nothing else;
- ``memory/notes.md``: one line per memory a run wrote, in the run's block
  (consolidate/store/views/notes_md.py);
- ``memory/context.md`` and ``memory/context.top.json``: the top memories of the recall index
  (consolidate/store/views/context_md.py).

Missing, extra and stale entries are reported with counts, one finding per file. The event log
itself is checked against the undo records (``snapshots/``: every run that touched the index
leaves one, naming the ids it added and changed): runs and memories they name that the log lacks
mean lines were lost from the log (cut, deleted); then the graph and the index are the whole
source for those, and ``--repair`` appends recovered events (``"recovered": "doctor"``) built from
the index record (else the archive copy, else the graph node). A memory no file of record names
(no event, no undo record) is an extra entry of the file holding it and is removed by the repair
(a copy kept: ``<file>.corrupt``, ``archive/<id>.json``).

A team store (``team.json``) also receives memories by ``consolidate sync``, which writes no local
event: there only what the log holds and a derived file lacks is reported.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Any
from consolidate.store.layout import ARCHIVE, CHROMA, CONTEXT_MD, EVENT_LOG, FORGOTTEN, GRAPH, GRAPH_NODES, NOTES_MD, SNAPSHOT, SNAPSHOTS, TOMBSTONES
from consolidate.rules.redaction import error_text
from consolidate.pipeline.findings import Finding, memories as _memories, move_aside as _move_aside
from consolidate.store import events as event_log
from consolidate.model import credit
from consolidate.store import journal
from consolidate.store import archive
from consolidate.core.errors import EmbeddingMismatch, StoreError
from consolidate.store.index.longterm import close_all
from consolidate.store.index.reindex import LIVE
from consolidate.store.graph import extract_entities
from consolidate.core.private import private_file
from consolidate.store.index.reindex import rebuild
from consolidate.store.views import notes_md
from consolidate.store.views import context_md
from consolidate.store import forgotten as forgotten_file
from types import SimpleNamespace
from consolidate.store import graph, snapshots

#: The mark of an event line appended by ``doctor --repair`` from a derived file.
RECOVERED = "doctor"


@dataclass
class History:
    """The event log folded (:func:`replay`).

    ``memories``: ``{id: state}`` of every durable memory, each ``{"metadata"`` (the index
    metadata the log gives), ``"statement"`` (None for an event written before statements were
    logged), ``"fields"``, ``"status"``, ``"type"``, ``"session_id"``, ``"run_id"``, ``"removed"``
    (its run was undone)}``. ``runs``: every run id the log names. ``blocks``: ``{run_id: {"ts",
    "session_id", "writes": [memory.written events of every tier], "undone": ts or None}}`` in log
    order (``memory/notes.md``). ``struck``: ``{statement: label}`` of forgotten memories."""

    memories: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: set[str] = field(default_factory=set)
    blocks: dict[str, dict[str, Any]] = field(default_factory=dict)
    struck: dict[str, str] = field(default_factory=dict)
    undone: set[str] = field(default_factory=set)
    #: runs some of whose lines the log lost (doctor recovered events of them): notes.md is the
    #: whole source for their blocks
    partial: set[str] = field(default_factory=set)
    #: ``(memory id, event name)`` of every removal the log holds, undone ones included
    removals: set[tuple[str, str]] = field(default_factory=set)

    def live(self) -> dict[str, dict[str, Any]]:
        """The memories the recall index must hold: ``{id: state}``."""

        return {m: s for m, s in self.memories.items() if s["status"] in LIVE and not s["removed"]}


def _day(ts: Any) -> str:
    return ts[:10] if isinstance(ts, str) and len(ts) >= 10 else _dt.date.today().isoformat()


def _written(e: dict[str, Any]) -> dict[str, Any]:
    """The state a ``memory.written`` event gives its memory."""
    prov = {"session_id": e.get("session_id"), "run_id": e.get("run_id"), "date": e.get("ts"),
            "evidence": credit.claimed_in(e), "source": e.get("source"),
            "prompt_version": e.get("prompt_version"), "reason": e.get("reason", ""),
            "note_ids": e.get("note_ids") or [], **(e.get("links") or {})}
    fields = e.get("fields") if isinstance(e.get("fields"), dict) else None
    if isinstance(e.get("metadata"), dict):  # recovered by doctor from the index record: exact
        meta = dict(e["metadata"])
    else:
        meta = {"type": e.get("type"), "status": e.get("status"), "tier": "durable",
                "evidence": credit.claimed_in(e), "confidence": e.get("confidence"),
                "last_confirmed": _day(e.get("ts")), "session_id": e.get("session_id") or "unknown",
                "run_id": e.get("run_id") or "unknown", "source": e.get("source") or "unknown",
                "prompt_version": e.get("prompt_version") or "",
                "provenance": json.dumps(prov, ensure_ascii=False),
                "fields": json.dumps(fields or {}, ensure_ascii=False)}
        if prov.get("fields_missing"):
            meta["fields_missing"] = ",".join(prov["fields_missing"])
        if isinstance(e.get("valid_from"), str):  # when it became true (consolidate/model/validity.py)
            meta["valid_from"] = prov["valid_from"] = e["valid_from"]
            meta["provenance"] = json.dumps(prov, ensure_ascii=False)
        if isinstance(e.get("last_confirmed"), str):  # an imported entry's own date
            meta["last_confirmed"] = e["last_confirmed"]
        if isinstance(e.get("origin"), str):  # where its notes came from (consolidate/model/credit.py)
            meta["origin"] = prov["origin"] = e["origin"]
            meta["provenance"] = json.dumps(prov, ensure_ascii=False)
    meta["status"] = meta.get("status") or e.get("status") or "active"
    return {"metadata": meta, "statement": e.get("statement") if isinstance(e.get("statement"), str) else None,
            "fields": fields, "status": meta["status"], "type": meta.get("type") or e.get("type") or "fact",
            "session_id": e.get("session_id") or "unknown", "run_id": e.get("run_id") or "unknown",
            "removed": False, "recovered": e.get("recovered") == RECOVERED}


def replay(store, events=None) -> History:
    """Fold the event log of ``store`` (or ``events``, dicts in log order) into a :class:`History`.
    A line that is not a JSON object is skipped (doctor reports it); a log that cannot be read
    gives an empty history."""
    if events is None:

        try:
            events = list(event_log.read(store))
        except OSError:
            events = []
    h = History()
    for e in events:
        rid, mid, kind = e.get("run_id"), e.get("memory_id"), e.get("event")
        if isinstance(rid, str):
            h.runs.add(rid)
            if e.get("recovered") == RECOVERED:
                h.partial.add(rid)
        if kind == "memory.written" and isinstance(mid, str):
            if isinstance(rid, str) and not e.get("recovered"):
                block = h.blocks.setdefault(rid, {"ts": e.get("ts"), "session_id": e.get("session_id"),
                                                  "writes": [], "undone": None})
                block["writes"].append(e)
            if e.get("tier") == "durable":
                h.memories[mid] = _written(e)
            continue
        if kind == "run.undone" and isinstance(rid, str):
            h.undone.add(rid)
            for state in h.memories.values():  # the undo took the run's derived_from edges away
                if any(r == rid for _, r in state.get("confirmed") or []):
                    state["confirmed"] = [(sid, r) for sid, r in state["confirmed"] if r != rid]
            if rid in h.blocks:
                h.blocks[rid]["undone"] = e.get("ts")
        if not isinstance(mid, str) or mid not in h.memories:
            continue
        state = h.memories[mid]
        m = state["metadata"]
        if kind == "memory.reconfirmed":
            if isinstance(e.get("session_id"), str):
                state.setdefault("confirmed", []).append((e["session_id"], rid))
            for key in ("confidence", "status"):
                if isinstance(e.get(key), str):
                    m[key] = e[key]
            m["last_confirmed"] = _day(e.get("ts"))
        elif kind == "memory.undone":
            if e.get("action") == "removed":
                state["removed"] = True
            elif e.get("action") == "restored":
                try:
                    before = (snapshots.load(store, rid or "").get("before") or {}).get(mid)
                except Exception:  # noqa: BLE001 - a lost undo record: keep what the log says
                    before = None
                if isinstance(before, dict) and isinstance(before.get("metadata"), dict):
                    state["metadata"] = m = dict(before["metadata"])
                    if isinstance(before.get("document"), str):
                        state["statement"] = before["document"]
                state["removed"] = False
                state.pop("removal", None)
        elif isinstance(e.get("changes"), dict) and e.get("action") in ("update", "archive", "tombstone"):
            m.update({k: v for k, v in e["changes"].items() if isinstance(v, (str, int, float, bool))})
            if e["action"] != "update":
                m["status"] = e["changes"].get("status") if isinstance(e["changes"].get("status"), str) else "archived"
                h.removals.add((mid, "tombstone" if e["action"] == "tombstone" else str(kind)))
                state["removal"] = {"event": kind, "action": e["action"], "run_id": rid, "ts": e.get("ts"),
                                    "reason": e.get("reason") or "", "status": m["status"]}
                if kind in ("memory.forgotten", "memory.declined") and state["statement"]:
                    h.struck[state["statement"]] = f"{m['status']} {_day(e.get('ts'))}: {e.get('reason') or ''}"
        state["status"] = m.get("status") or state["status"]
        state["type"] = m.get("type") or state["type"]
    return h


# -- the files of record beside the log ----------------------------------------------------------
def _undo_records(store) -> dict[str, dict[str, Any]]:
    """``{run_id: {"ids": set of memory ids it added or changed, "undone": bool}}`` of every readable
    undo record."""
    folder = store.sub(SNAPSHOTS)
    out = {}
    for p in sorted(folder.glob(SNAPSHOT.name)) if folder.is_dir() else []:
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("run_id"), str):
            added = [i for i in data.get("added") or [] if isinstance(i, str)]
            before = [i for i in data.get("before") or {} if isinstance(i, str)]
            out[data["run_id"]] = {"ids": set(added) | set(before), "added": added, "before": before,
                                   "undone": data.get("undone") or None, "session_id": data.get("session_id")}
    return out


def _pending_runs(store) -> set[str]:

    try:
        return {p.run_id for p in journal.pending(store)}
    except Exception:  # noqa: BLE001 - the journal's own finding
        return set()


def _archived(store, mid: str) -> dict[str, Any] | None:

    try:
        rec = archive.load(store, mid)
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("metadata"), dict) else None


# -- reading the derived files -------------------------------------------------------------------
def _graph(store):
    """The graph as its files hold it (bad lines skipped: their own finding)."""
    return graph.load(store.sub(GRAPH), strict=False)


def _graph_memories(g) -> dict[str, dict[str, Any]]:
    return {n: dict(a) for n, a in g.nodes(data=True) if a.get("kind") == "memory"}


def _index_rows(store) -> dict[str, dict[str, Any]]:
    """``{id: {"document", "metadata"}}`` of every record of the index. Raises StoreError when it
    cannot be read."""
    return {r["id"]: {"document": r["document"], "metadata": r["metadata"] or {}} for r in store.longterm().all()}


def _counts(parts: list[tuple[int, str]]) -> str:
    return "; ".join(text for n, text in parts if n)


# -- the check -----------------------------------------------------------------------------------
def check(store, repair: bool) -> list:
    """Every derived file against the event log (see the module docstring); returns doctor
    Findings, repaired when ``repair``. The caller allows a missing index (reindex.allow_missing)."""
    found: list = []
    team = store.replica() is not None  # a team store: sync writes memories without local events
    hist = replay(store)
    g = _graph(store)
    nodes = _graph_memories(g)
    rows, opened = _read_index(store, repair, len(hist.live())) if store.has_longterm else ({}, None)
    readable = opened is None or opened.repaired
    if opened is not None and not opened.repaired:
        found.append(opened)
    # 1. the event log against the undo records and what the derived files hold
    if not team and readable:
        f, hist = _check_log(store, hist, nodes, rows or {}, repair)
        if f is not None:
            found.append(f)
    # 2. the graph
    f = _check_graph(store, hist, g, nodes, rows or {}, team, repair)
    if f is not None:
        found.append(f)
    # 3. the recall index
    if readable:
        f = _check_index(store, hist, nodes, rows, team, repair, opened)
        if f is not None:
            found.append(f)
        elif opened is not None:
            found.append(opened)
    # 4. the tombstones and the forgotten statements (archive/)
    f = _check_tombstones(store, hist, team, repair)
    if f is not None:
        found.append(f)
    # 5. memory/notes.md
    f = _check_notes(store, hist, team, repair)
    if f is not None:
        found.append(f)
    # 6. the context files, from an index that is whole
    if readable and store.has_longterm and all(x.repaired for x in found if x.where.startswith("chroma")):
        f = _check_context(store, repair)
        if f is not None:
            found.append(f)
    return found


def _read_index(store, repair: bool, n_live: int):
    """``(rows or None, finding or None)``: the index's records, or why they cannot be read (a
    missing folder: ``{}`` and no finding here; a corrupt one moved aside by ``repair``)."""

    embedded = not store.chroma_url
    if embedded and not store.sub(CHROMA).exists():
        return {}, None
    try:
        return _index_rows(store), None
    except EmbeddingMismatch as exc:
        return None, Finding(CHROMA.label, error_text(exc), repairable=False)
    except StoreError as exc:
        if not embedded:
            return None, Finding(store.chroma_url, error_text(exc), repairable=False)
        cause = getattr(exc, "cause", None) or error_text(exc)
        f = Finding(CHROMA.label, f"the recall index cannot be opened ({cause}); --repair moves it to chroma.corrupt"
                               f" and rebuilds it from the event log ({_memories(n_live)})")
        if repair:

            close_all()
            aside = _move_aside(store.sub(CHROMA))
            f.problem += f" (moved to {aside.name})"
            f.repaired = True  # provisionally: the rebuild below says what it put back
            return {}, f
        return None, f


def _check_log(store, hist: History, nodes: dict, rows: dict, repair: bool):
    """The event log against the undo records: ``(finding or None, history)`` (the history with
    the recovered events when repaired)."""

    records = _undo_records(store)
    pending = _pending_runs(store)
    named = {i for r in records.values() for i in r["ids"]}
    lost_runs = sorted(set(records) - hist.runs - pending)
    unknown = (set(nodes) | set(rows)) - set(hist.memories)
    lost = sorted(m for m in unknown if m in named
                  or ((rows.get(m) or {}).get("metadata") or {}).get("run_id") in records)
    # a status change the log lost: the archive copy was made by a run the log does not name
    lost_changes = {}
    for mid in hist.live():
        if mid in rows:
            continue
        rec = _archived(store, mid)
        if rec is not None and rec.get("archived_by") in records and rec.get("archived_by") not in hist.runs:
            lost_changes[mid] = rec
    # an undo the log lost: its undo record says undone
    lost_undos = sorted(rid for rid, r in records.items() if r["undone"] and rid not in hist.undone)
    if lost_runs or lost_undos:  # the derived files saw changes the log lost: theirs are the later state

        for mid, s in hist.memories.items():
            row, node = rows.get(mid), nodes.get(mid) or {}
            if mid in lost_changes or s["removed"]:
                continue
            if row is not None and ((row["metadata"].get("status"), row["metadata"].get("type"))
                                    != (s["status"], s["type"])):
                lost_changes[mid] = {"metadata": row["metadata"], "archived_by": row["metadata"].get("run_id"),
                                     "action": "update"}
            elif row is None and s["status"] in LIVE and node.get("status") and node["status"] not in LIVE:
                lost_changes[mid] = {"metadata": {"status": node["status"]}, "archived_by": None}
    if not (lost_runs or lost or lost_changes or lost_undos):
        return None, hist
    parts = [(len(lost_runs), f"lacks {len(lost_runs)} run(s) the undo records name"),
             (len(lost_undos), f"{len(lost_undos)} undo(s) the undo records name"),
             (len(lost), f"{_memories(len(lost))} the graph and the recall index hold have no event"),
             (len(lost_changes), f"{len(lost_changes)} later change(s) of memories (their removal, status or type) are not in it")]
    f = Finding(EVENT_LOG.rel, "the event log is damaged (lines lost or cut): " + _counts(parts)
                + "; the graph and the recall index are the whole source for those")
    if not repair:
        return f, hist

    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    lines: list[dict[str, Any]] = [{"ts": now, "event": "run.recovered", "run_id": rid, "recovered": RECOVERED}
                                   for rid in lost_runs]
    for mid in lost:
        lines.append(_recovered_event(store, mid, rows.get(mid), nodes.get(mid), now))
    for mid, rec in lost_changes.items():
        changes = {"status": rec["metadata"].get("status") or "archived"}
        if rec.get("action") == "update":
            changes.update({k: rec["metadata"][k] for k in ("type", "confidence") if rec["metadata"].get(k)})
        lines.append({"ts": now, "event": "memory.updated", "memory_id": mid, "run_id": rec.get("archived_by"),
                      "action": rec.get("action") or "archive", "changes": changes,
                      "reason": rec.get("archived_reason") or "", "recovered": RECOVERED})
    for rid in lost_undos:
        r, ts = records[rid], str(records[rid]["undone"])
        lines += [{"ts": ts, "event": "memory.undone", "run_id": rid, "memory_id": i, "action": "removed",
                   "recovered": RECOVERED} for i in r["added"]]
        lines += [{"ts": ts, "event": "memory.undone", "run_id": rid, "memory_id": i, "action": "restored",
                   "recovered": RECOVERED} for i in r["before"]]
        lines.append({"ts": ts, "event": "run.undone", "run_id": rid, "session_id": r["session_id"],
                      "removed": len(r["added"]), "restored": len(r["before"]), "recovered": RECOVERED})
    event_log.append(store, lines)
    f.problem += f"; appended {len(lines)} recovered event(s)"
    f.repaired = True
    return f, replay(store)


def _recovered_event(store, mid: str, row: dict | None, node: dict | None, now: str) -> dict[str, Any]:
    """A ``memory.written`` event for ``mid`` from the best record of it: its index record (exact
    metadata), else its archive copy, else its graph node."""
    rec = row or _archived(store, mid)
    if rec is not None:
        meta = dict(rec.get("metadata") or {})
        if node is not None and node.get("status") and row is None:
            meta["status"] = node["status"]
        statement = rec.get("document") or (node or {}).get("statement") or ""
    else:
        meta = {"type": (node or {}).get("type") or "fact", "status": (node or {}).get("status") or "active",
                "tier": "durable", "evidence": "inferred", "confidence": "low", "source": "rebuilt",
                "scope": (node or {}).get("scope") or store.project}
        statement = (node or {}).get("statement") or ""
    try:
        fields = json.loads(meta.get("fields") or "{}")
    except (TypeError, ValueError):
        fields = {}
    return {"ts": now, "event": "memory.written", "memory_id": mid, "run_id": meta.get("run_id") or "unknown",
            "session_id": meta.get("session_id") or "unknown", "type": meta.get("type") or "fact",
            "status": meta.get("status") or "active", "tier": "durable",
            **credit.recorded(meta.get("evidence"), meta.get("source"), meta.get("origin")),
            "confidence": meta.get("confidence"), "source": meta.get("source"), "statement": statement,
            **({"fields": fields} if isinstance(fields, dict) and fields else {}),
            "metadata": meta, "recovered": RECOVERED}


def _expected_edges(mid: str, s: dict[str, Any]) -> list[tuple[str, str, str, dict]]:
    """``(source, target, key, target node attributes)`` of the edges a memory's write adds."""

    out = [(mid, "session:" + s["session_id"], "derived_from", {"kind": "session"})]
    out += [(mid, "session:" + sid, "derived_from", {"kind": "session"}) for sid, _ in s.get("confirmed") or []]
    if s["statement"]:
        text = s["statement"] + " " + " ".join(str(v) for v in (s["fields"] or {}).values())
        for name, kind in extract_entities(text):
            out.append((mid, "entity:" + name, "mentions", {"kind": "entity", "entity_kind": kind, "name": name}))
    return out


def _edge_run(s: dict[str, Any], session: str) -> str:
    """The run of a memory's ``derived_from`` edge to ``session``: a re-confirming run's, else the writing run's."""
    for sid, rid in s.get("confirmed") or []:
        if "session:" + sid == session and rid:
            return rid
    return s["run_id"]


def _check_graph(store, hist: History, g, nodes: dict, rows: dict, team: bool, repair: bool):

    expected = {m: s for m, s in hist.memories.items() if not s["removed"]}
    missing = sorted(m for m in expected if m not in nodes)
    stale = sorted(m for m, s in expected.items() if m in nodes and nodes[m].get("status") != s["status"]) \
        if not team else []
    undone = sorted(m for m, s in hist.memories.items() if s["removed"] and m in nodes
                    and nodes[m].get("status") in LIVE) if not team else []
    extra = sorted(m for m in nodes if m not in hist.memories) if not team else []
    lost_edges = []
    for m, s in expected.items():
        if m not in nodes or s["session_id"] == "unknown":
            continue
        lost_edges += [e for e in _expected_edges(m, s) if not g.has_edge(e[0], e[1], key=e[2])]
    if not (missing or stale or undone or extra or lost_edges):
        return None
    parts = [(len(missing), f"lacks {len(missing)}"), (len(stale), f"{len(stale)} with another status"),
             (len(undone), f"{len(undone)} undone but live"), (len(extra), f"{len(extra)} no event describes"),
             (len(lost_edges), f"{len(lost_edges)} edge(s) missing")]
    f = Finding(GRAPH.label, f"the event log holds {_memories(len(expected))}; the graph " + _counts(parts))
    if not repair:
        return f

    snapshots.settle_graph_appends(store)  # the rewrite moves the lines undo records point to
    for m in missing:
        s = expected[m]
        row = rows.get(m) or {}
        scope = (row.get("metadata") or {}).get("scope") or s["metadata"].get("scope") or store.project
        c = SimpleNamespace(memory_id=m, type=s["type"], status=s["status"], entities=[],
                            statement=s["statement"] or row.get("document") or "",
                            fields={k: str(v) for k, v in (s["fields"] or {}).items()},
                            provenance={"session_id": s["session_id"], "run_id": s["run_id"]})
        new_nodes, new_edges = graph.memory_lines(c, scope)
        for n in new_nodes:
            n = dict(n)
            node = n.pop("id")
            if n.pop(graph.KEEP, False) and node in g:
                continue
            g.add_node(node, **{**(dict(g.nodes[node]) if node in g else {}), **n})
        for e in new_edges:
            e = dict(e)
            g.add_edge(e.pop("source"), e.pop("target"), key=e.pop("key"), **e)
    if missing:  # the edges a later run added (re-confirmations) of the nodes put back
        lost_edges = [e for m in missing if expected[m]["session_id"] != "unknown"
                      for e in _expected_edges(m, expected[m]) if not g.has_edge(e[0], e[1], key=e[2])] + lost_edges
    for m in stale:
        g.nodes[m]["status"] = expected[m]["status"]
    for m in undone:
        g.nodes[m]["status"] = "undone"
    for u, v, k, attrs in lost_edges:
        if v not in g:
            g.add_node(v, **attrs)
        if not g.has_edge(u, v, key=k):
            g.add_edge(u, v, key=k, kind=k, **({"run_id": _edge_run(expected[u], v)} if k == "derived_from" else {}))
    if extra:
        with private_file(store.sub(GRAPH, GRAPH_NODES.name + ".corrupt"), "a") as out:
            for m in extra:
                out.write(json.dumps({"id": m, **g.nodes[m]}, ensure_ascii=False, sort_keys=True) + "\n")
        g.remove_nodes_from(extra)
    graph.save(g, store.sub(GRAPH))
    f.problem += "; rebuilt from the event log" + (" (the extra nodes kept in graph/nodes.jsonl.corrupt)"
                                                   if extra else "")
    f.repaired = True
    return f


def _check_index(store, hist: History, nodes: dict, rows: dict | None, team: bool, repair: bool, opened):
    """The recall index against the live memories of the log (and, in a team store, the graph's live
    memories no local event describes: pulled)."""

    live = hist.live()
    if team:  # a sync records changes made on other machines in the graph, not in the local log
        live = {m: s for m, s in live.items() if (nodes.get(m) or {}).get("status", s["status"]) in LIVE}
    pulled = {m: a for m, a in nodes.items() if team and m not in hist.memories and a.get("status") in LIVE}
    want = set(live) | set(pulled)
    rows = rows or {}
    missing = sorted(want - set(rows))
    not_live = sorted(m for m in rows if m in hist.memories and m not in live) if not team else []
    extra = sorted(m for m in rows if m not in hist.memories) if not team else []
    stale = []
    if not team:
        for m, s in live.items():
            r = rows.get(m)
            if r is None:
                continue
            meta = r["metadata"]
            if meta.get("status") != s["status"] or meta.get("type") != s["type"] \
                    or (s["statement"] is not None and r["document"] != s["statement"]):
                stale.append(m)
    if not (missing or not_live or extra or stale):
        if opened is not None and repair:
            opened.problem += "; nothing to rebuild (the event log holds no live memory)"
        return None
    n = len(want)
    if missing and not (not_live or extra or stale):
        what = ("is missing" if not store.chroma_url and not store.sub(CHROMA).exists() and opened is None
                else "is empty" if len(missing) == n and not rows else f"lacks {len(missing)} of them")
        text = f"the event log holds {_memories(n)}; the recall index {what}"
        if what == "is missing":
            text += " (recall finds none until it is rebuilt)"
    else:
        parts = [(len(missing), f"lacks {len(missing)}"),
                 (len(not_live), f"holds {len(not_live)} the log archived, forgot or undid"),
                 (len(extra), f"{len(extra)} no event describes"),
                 (len(stale), f"{len(stale)} whose status, type or statement differ from the log")]
        text = f"the event log holds {_memories(n)}; the recall index " + _counts(parts)
    f = opened if opened is not None else Finding(CHROMA.label, text)
    if opened is not None:
        f.problem += f"; {text}"
    if not repair:
        return f

    lt = store.longterm()
    with store.lock():
        for m in not_live + extra:
            archive.save(store, m, rows[m], "removed by doctor --repair: not live in the event log", "doctor")
        lt.delete(not_live + extra)
        for m in stale:
            s, r = live[m], rows[m]
            if s["statement"] is not None and r["document"] != s["statement"]:
                missing.append(m)  # embedded again with the log's statement
            else:
                lt.update_metadata(m, {"status": s["status"], "type": s["type"]})
    done = rebuild(store, hist.live(), ids=missing, live=_as_nodes(store, live, pulled, nodes)) if missing else \
        {"rebuilt": 0, "graph_only": 0}
    f.problem += f"; rebuilt {_memories(done['rebuilt'])}"
    if done["graph_only"]:
        f.problem += (f" ({done['graph_only']} from the graph alone: no event describes them, so their evidence"
                      " and confidence are best effort)")
    f.repaired = True
    return f


def _as_nodes(store, live: dict, pulled: dict, nodes: dict) -> dict[str, dict[str, Any]]:
    """The node-like attributes (type, status, scope, statement) reindex.records reads, of the
    log's live memories and the pulled ones."""
    out = dict(pulled)
    for m, s in live.items():
        scope = (nodes.get(m) or {}).get("scope") or s["metadata"].get("scope") or store.project
        out[m] = {"kind": "memory", "type": s["type"], "status": s["status"], "scope": scope,
                  "statement": s["statement"] or (nodes.get(m) or {}).get("statement") or ""}
    return out


def _check_notes(store, hist: History, team: bool, repair: bool):

    diff = notes_md.differences(store, hist, whole=not team)
    if diff is None:
        return None
    missing, extra = diff
    parts = [(missing, f"lacks {missing} line(s) of memories the log says were written"),
             (extra, f"{extra} line(s) no event describes")]
    f = Finding(NOTES_MD.rel, _counts(parts))
    if repair:
        aside = notes_md.rebuild(store, hist, whole=not team)
        f.problem += f"; rebuilt from the event log (the old file kept as {aside})"
        f.repaired = True
    return f


def _check_context(store, repair: bool):

    problem = context_md.differences(store)
    if problem is None:
        return None
    f = Finding(CONTEXT_MD.rel, problem)
    if repair:
        top = context_md.read_top(store) or {}
        scope = top.get("scope")
        context_md.write(store, scope if isinstance(scope, str) else str(store.project))
        f.problem += "; written again from the recall index"
        f.repaired = True
    return f


def _check_tombstones(store, hist: History, team: bool, repair: bool):
    """``archive/tombstones.jsonl`` (ids never written again: ``memory.tombstoned``) and
    ``archive/forgotten.jsonl`` (statements a session may not bring back: ``memory.forgotten``,
    ``memory.declined``) against the log's removals that no undo reversed."""

    def removed_by(*kinds, action=None):
        return {m: s for m, s in hist.memories.items() if (s.get("removal") or {}).get("status") == s["status"]
                and ((s["removal"]["event"] in kinds) if kinds else s["removal"]["action"] == action)}

    want_dead = removed_by(action="tombstone")
    want_forgotten = removed_by("memory.forgotten", "memory.declined")
    dead = archive.tombstones(store)
    forgotten = {row.get("id") for row in forgotten_file.tombstones(store)}
    lack_dead = sorted(set(want_dead) - dead)
    lack_forgotten = sorted(m for m in want_forgotten if m not in forgotten and want_forgotten[m]["statement"])
    # extra: a line for a memory the log holds and never removed that way (a restated memory keeps
    # its forgotten line: it was forgotten once)
    extra_dead = sorted(m for m in dead - set(want_dead) if m in hist.memories
                        and (m, "tombstone") not in hist.removals) if not team else []
    extra_forgotten = sorted(m for m in forgotten - set(want_forgotten) if isinstance(m, str) and m in hist.memories
                             and not {(m, "memory.forgotten"), (m, "memory.declined")} & hist.removals) \
        if not team else []
    if not (lack_dead or lack_forgotten or extra_dead or extra_forgotten):
        return None
    parts = [(len(lack_dead), f"tombstones.jsonl lacks {len(lack_dead)} tombstone(s) the log laid"),
             (len(extra_dead), f"tombstones.jsonl holds {len(extra_dead)} the log lifted or never laid"),
             (len(lack_forgotten), f"forgotten.jsonl lacks {len(lack_forgotten)} forgotten memory(ies) (a session"
                                   " could write them again)"),
             (len(extra_forgotten), f"forgotten.jsonl holds {len(extra_forgotten)} the log does not say are forgotten")]
    f = Finding(ARCHIVE.label, _counts(parts))
    if not repair:
        return f
    for m in lack_dead:
        r = want_dead[m]["removal"]
        archive.tombstone(store, m, r["reason"], r["run_id"] or "doctor")
    for m in lack_forgotten:
        s, r = want_forgotten[m], want_forgotten[m]["removal"]
        forgotten_file.append(store, {"id": m, "statement": s["statement"], "type": s["type"], "run_id": r["run_id"],
                               "reason": r["reason"], "forgotten_at": r["ts"]})
    for name, ids in ((TOMBSTONES.name, extra_dead), (FORGOTTEN.name, extra_forgotten)):
        if not ids:
            continue
        path = store.sub(ARCHIVE, name)
        keep = set(ids)
        with private_file(path.with_name(name + ".corrupt"), "a") as out:
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    if json.loads(line).get("id") in keep:
                        out.write(line + "\n")
                except (ValueError, AttributeError):
                    continue
    archive.lift_tombstones(store, set(extra_dead))
    if extra_forgotten:
        forgotten_file.lift(store, ids=set(extra_forgotten))
    f.problem += "; rebuilt from the event log" + (" (the extra lines kept in archive/*.corrupt)"
                                                   if extra_dead or extra_forgotten else "")
    f.repaired = True
    return f
