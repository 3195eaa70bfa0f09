"""Read-side commands: ``recall`` and ``status``."""

from __future__ import annotations

import json
import sys

from ._common import open_store


def cmd_recall(args) -> int:
    from ..report import render_memory

    store = open_store(args)
    statuses = ("active", "quarantined", "disputed") if args.all else ("active",)
    hits = store.longterm().search(args.query, k=args.k, statuses=statuses)
    if args.json:
        print(json.dumps([{"id": h["id"], "statement": h["document"], "similarity": round(h["similarity"], 4),
                           **{k: v for k, v in h["metadata"].items()}} for h in hits], ensure_ascii=False))
        return 0
    if not hits:
        print("no memories")
    for h in hits:
        print(render_memory(h["document"], h["metadata"]))
    return 0


def cmd_status(args) -> int:
    store = open_store(args)
    queued = store.sessions.queued()
    status: dict = {"store": str(store.path), "queued": [q["session_id"] for q in queued],
                    "sessions_with_notes": store.sessions.sessions(), "memories": {},
                    "last_run": (store.sessions.last_runs(1) or [None])[0]}
    if store.read_manifest() is not None:
        status["memories"] = store.longterm().counts()
    if args.json:
        print(json.dumps(status, ensure_ascii=False, default=str))
        return 0
    print(f"store: {status['store']}")
    mem = status["memories"]
    print("memories: " + (", ".join(f"{k} {v}" for k, v in sorted(mem.items())) if mem else "none"))
    print(f"queued session ends: {len(queued)}" + (f" ({', '.join(status['queued'][:10])})" if queued else ""))
    swn = status["sessions_with_notes"]
    print(f"sessions with notes: {len(swn)}" + (f" ({sum(swn.values())} notes)" if swn else ""))
    last = status["last_run"]
    if last:
        print(f"last run: {last['run_id'] or '-'} session {last['session_id']} ({last['status']}): "
              + json.dumps(last["result"] or {}))
    return 0


def register(sub, common) -> None:
    s = sub.add_parser("recall", parents=[common], help="semantic search over active memories")
    s.add_argument("query")
    s.add_argument("-k", type=int, default=5)
    s.add_argument("--all", action="store_true", help="include quarantined and disputed entries")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_recall)
    s = sub.add_parser("status", parents=[common], help="counts by status and tier, queue, last run")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)
