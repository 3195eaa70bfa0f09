"""Read-side commands: ``recall``, ``graph`` and ``status``."""

from __future__ import annotations

import json
import sys
from typing import Any

from consolidate.core.dates import iso
from consolidate.cli.options import add_json, count_1_to, open_store, similarity
from consolidate.store.layout import GRAPH
from consolidate.rules.redaction import error_text
from consolidate.core.errors import BadInput
from consolidate.core.errors import StoreCorrupt
from consolidate.store.views import shown as agent_view


def cmd_recall(args) -> int:
    from consolidate.model.report import memory_json, terminal_safe
    from consolidate.pipeline.recall import check_options, recall
    from consolidate.store.views.shown import line

    from consolidate.pipeline.recall import as_of_day

    check_options(args.query, args.k, args.min_similarity)  # bad input before the store is opened
    day = as_of_day(args.as_of)
    store = open_store(args, create=False)
    replica = store.replica()
    team_line = replica.recall_line() if replica is not None else ""  # a team: pull first, as MCP recall and SessionStart do
    result = recall(store, args.query, k=args.k, min_similarity=args.min_similarity, include_quarantined=args.all,
                    as_of=day)
    hits = result.memories
    if team_line:
        print("team: " + terminal_safe(team_line), file=sys.stderr)
    if args.json:
        print(json.dumps([memory_json(h) for h in hits], ensure_ascii=False))
        return 0
    if not hits and result.below_floor:
        print(f"no memory at similarity {args.min_similarity:g} or more ({result.below_floor} less similar:"
              f" --min-similarity 0 shows them)")
    elif not hits and not result.held_back:
        print("no memories" + (f" valid on {day}" if day else "") + ("" if store.exists else f" (no store at {store.path})"))
    for h in hits:
        print(terminal_safe(line(h["document"], h["metadata"], "cli-recall")
                            + (f"  ({h['via']})" if h.get("via") else "")))
    if result.note:
        print("note: " + terminal_safe(result.note))
    if result.held_back:  # the agent view's guard (consolidate/store/views/shown.py): named, not printed
        print(f"held back: {', '.join(result.held_back)} {result.held_line} (`consolidate forget ID` removes one)")
    return 0


def cmd_graph(args) -> int:
    """``consolidate graph ENTITY [--depth N] [--json]``: the entity's relations (consolidate.store.graph.relations_of)."""
    from consolidate.model.report import terminal_safe

    store = open_store(args, create=False)
    from consolidate.store.graph import load, relations_of
    from consolidate.store.relations import entity_name

    name = entity_name(args.entity)
    if not name:

        raise BadInput("empty entity name: give the name of a package, module, service or file")
    g = load(store.sub(GRAPH)) if store.exists else None
    res: dict[str, Any] = (relations_of(g, name, args.depth) if g is not None
                           else {"entity": name, "found": False, "relations": [], "memories": {}})
    if g is not None:
        agent_view.graph_view(res, store, "cli-graph")  # as the agent view shows them (consolidate/store/views/shown.py)
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
        return 0
    if not res["found"]:
        print(terminal_safe(f"no entity {name!r} in the graph" + ("" if store.exists else f" (no store at {store.path})")))
        return 0
    if not res["relations"]:
        print(terminal_safe(f"{name}: no relations (named by memories, related to nothing)"))
        return 0
    for r in res["relations"]:
        print(terminal_safe(f"{r['source']} {r['relation']} {r['target']}" + (f"  (depth {r['depth']})" if r["depth"] > 1
                                                                                 else "")))
        for mid in r["memory_ids"]:
            m = res["memories"][mid]
            print(terminal_safe(f"  {mid} [{m['status']}] {m['statement']}"))
    return 0


def _anchor_counts(store) -> dict:
    """Memories anchored to code, and how many are drifted or stale (consolidate.store.anchors), from
    the manifest as the last check left it."""
    from consolidate.store.anchors import read_section

    section = read_section(store.path)
    return {"anchored": len(section["memories"]), "drifted": len(section["drifted"]), "stale": len(section["stale"])}


#: How ``status`` says where the project comes from.
_PROJECT_SOURCES = {"option": "--project", "environment": "CONSOLIDATE_PROJECT", "team": "the team store's",
                    "store": "recorded in the store", "folder": "the folder's name: the store records none yet"}


def cmd_status(args) -> int:
    store = open_store(args, create=False)
    if not store.exists:
        if args.json:
            print(json.dumps({"store": str(store.path), "exists": False}))
        else:
            print(f"store: {store.path} (none yet: `consolidate note` or `import` creates it)")
        return 0
    queued = store.sessions.queued()
    status: dict = {"store": str(store.path), "project": store.project, "project_source": store.project_source,
                    "recorded_project": store.recorded_project, "queued": [q["session_id"] for q in queued],
                    "sessions_with_notes": store.sessions.sessions(), "memories": {},
                    "last_run": (store.sessions.last_runs(1) or [None])[0]}
    last = status["last_run"]
    if last and last.get("run_id"):
        from consolidate.store.snapshots import path_of

        try:  # the undo record says whether `consolidate undo` reverted that run
            record = json.loads(path_of(store, last["run_id"]).read_text(encoding="utf-8"))
            last["undone"] = record.get("undone")
        except (OSError, ValueError):
            last["undone"] = None
    damaged = None
    if store.has_longterm:

        try:
            status["memories"] = store.longterm().counts()
        except StoreCorrupt as exc:  # a missing or unreadable recall index: the rest is still shown
            damaged = exc
            status["memories_error"] = error_text(exc)
        status["anchors"] = _anchor_counts(store)
    status["waiting"] = _waiting_status(store)
    from consolidate.store.worker_health import health_line, queue_state, read as worker_status

    queue = queue_state(store.sessions.db)  # queued or running ends (the queue file folded above)
    oldest = queue["oldest_age_seconds"]
    status["queue"] = {"count": queue["count"], "oldest_age_seconds": round(oldest, 1) if oldest is not None else None}
    status["worker"] = worker_status(store.path)  # logs/worker.status.json: failures since the last good run
    warning = health_line(status["worker"], queue, status_hint=False)
    from consolidate.store.sessions.tables import pending_harvest_sessions

    status["harvests_pending"] = pending_harvest_sessions(store.sessions.db)
    from consolidate.team.local import status as team_status

    status["team"] = team_status(store)
    if last:
        last["partial"] = last.get("status") == "partial"
    if args.json:
        print(json.dumps(status, ensure_ascii=False, default=str))
        return damaged.exit_code if damaged else 0
    print(f"store: {status['store']}")
    print(f"project: {store.project} ({_PROJECT_SOURCES[store.project_source]})")
    from consolidate.store.store import project_note

    if project_note(store):
        print(project_note(store))
    mem = status["memories"]
    print("memories: " + (f"unavailable: {damaged}" if damaged else
                          ", ".join(f"{k} {v}" for k, v in sorted(mem.items())) if mem else "none"))
    anchored = status.get("anchors") or {}
    if anchored.get("anchored"):
        print(f"anchored to code: {anchored['anchored']} memories; {anchored['drifted']} drifted"
              f" (queued for `consolidate batch --rejudge --drifted`), {anchored['stale']} stale (file gone)")
    from consolidate.store.worker_health import age

    print(f"queued session ends: {len(queued)}" + (f" ({', '.join(status['queued'][:10])})" if queued else "")
          + (f"; the oldest ended {age(oldest)} ago" if oldest is not None else ""))
    if warning:
        print(warning.removeprefix("consolidate: "))
    swn = status["sessions_with_notes"]
    print(f"sessions with notes: {len(swn)}" + (f" ({sum(swn.values())} notes)" if swn else ""))
    if status["harvests_pending"]:
        hp = status["harvests_pending"]
        print(f"harvests not finished: {len(hp)} sessions ({', '.join(hp[:10])}): their hook was stopped before its"
              " transcript harvest finished; the worker or the next `consolidate run` of the session makes it")
    if status["team"]:
        from consolidate.cli.commands.team_cmd import team_lines

        for line in team_lines(status["team"]):
            print(line)
    w = status["waiting"]
    if w["notes"]:
        print(f"waiting for a judge: {w['notes']} notes in {len(w['sessions'])} sessions (partial runs); the first"
              f" bound {w['first_until']}: judged by the next run with an answering judge (`consolidate judges`)")
    if last:
        partial = (f"  PARTIAL: {(last['result'] or {}).get('waiting', '?')} notes left waiting for a judge"
                   if last["partial"] else "")
        print(f"last run: {last['run_id'] or '-'} session {last['session_id']} ({last['status']}): "
              + json.dumps(last["result"] or {}) + ("  (undone by `consolidate undo`)" if last.get("undone") else "")
              + partial)
        from consolidate.model.report import run_notices

        for line in run_notices(last["result"]):
            print(f"  ! {line}")
    return damaged.exit_code if damaged else 0


def _waiting_status(store) -> dict:
    """Notes waiting for a judge: ``{"notes", "sessions": {id: count}, "first_until"}`` (ISO UTC)."""
    rows = store.sessions.waiting()
    sessions: dict[str, int] = {}
    for w in rows.values():
        sessions[w["session_id"]] = sessions.get(w["session_id"], 0) + 1
    first = min((w["until"] for w in rows.values()), default=None)
    return {"notes": len(rows), "sessions": sessions, "first_until": iso(first) if first is not None else None}


def register(sub, common) -> None:
    s = sub.add_parser("recall", parents=[common], help="hybrid search (meaning and exact identifiers) over active memories")
    s.add_argument("query", help="what to look for, in words or an exact identifier (at most 4,000 characters;"
                                 " one beginning with - after --: recall -- --no-verify)")
    s.add_argument("-k", type=count_1_to(1000), default=5, help="how many memories (1 to 1000, default 5)")
    s.add_argument("--min-similarity", type=similarity, default=0.2,
                   help="leave out memories less similar than this (cosine, -1 to 1, default 0.2), except those"
                        " holding an identifier of the query or all its words")
    s.add_argument("--all", "--include-quarantined", dest="all", action="store_true",
                   help="include quarantined and disputed entries")
    s.add_argument("--as-of", metavar="DATE",
                   help="the memories valid on DATE (2026-07-14, 2026-07, yesterday, '3 days ago'),"
                        " those superseded since included and marked [superseded DATE]")
    add_json(s, "print the memories as one JSON list, an object per memory")
    s.set_defaults(func=cmd_recall)
    s = sub.add_parser("graph", parents=[common],
                       help="an entity's relations (depends_on, uses, ...) and the memories behind them")
    s.add_argument("entity", help="the entity's name (case and Unicode form do not matter)")
    s.add_argument("--depth", type=count_1_to(5), default=1, help="follow relations this many hops (1 to 5, default 1)")
    add_json(s, "print {entity, found, relations: [{source, relation, target, depth, memory_ids}], memories}")
    s.set_defaults(func=cmd_graph)
    s = sub.add_parser("status", parents=[common], help="counts by status and tier, queue, last run")
    add_json(s)
    s.set_defaults(func=cmd_status)
