"""The ``consolidate`` command line (argparse, standard library).

Errors: every ConsolidateError is printed as ``error: <one line>`` on stderr and exits with the
error's ``exit_code`` (see ``consolidate.errors``): 2 bad input, 3 unknown session, 4 store, 5 judge.
Ctrl-C exits 130. Heavy modules (chromadb, litellm, instructor) are imported only by the commands
that need them, never by ``note`` or ``end``.
"""

from __future__ import annotations

import argparse
import json
import sys

from .errors import ConsolidateError


def _store(args):
    from .store import Store

    return Store(args.store, chroma_url=args.chroma_url, embedding=args.embedding, project=args.project)


def cmd_note(args) -> int:
    store = _store(args)
    note_id = store.sessions.add_note(args.session, args.text, flag=args.flag, ttl=args.ttl, kind=args.kind)
    print(f"note {note_id} written to session {args.session}")
    return 0


def cmd_import(args) -> int:
    store = _store(args)
    counts = store.sessions.import_jsonl(args.file, args.session)
    for sid, n in counts.items():
        print(f"imported {n} notes into session {sid}")
    if not counts:
        print("no notes in the file (blank lines only)")
    return 0


def cmd_end(args) -> int:
    store = _store(args)
    store.sessions.end(args.session, args.outcome, args.reason)
    n = store.sessions.count(args.session)
    print(f"session {args.session} ended ({args.outcome}, {n} notes); queued for `consolidate run`")
    return 0


def cmd_run(args) -> int:
    from .pipeline import run_queue

    store = _store(args)
    if args.session:
        store.sessions.require_known(args.session)
        if not store.sessions.queued(args.session):
            print(f"session {args.session} has no queued session end; end it first"
                  f" (consolidate end --session {args.session} --outcome success)", file=sys.stderr)
            return 2
    plans = run_queue(store, session_id=args.session, judges=args.judge, dry_run=args.dry_run,
                      time_box=args.time_box)
    if not plans:
        print("nothing queued")
        return 0
    from .report import render_plan
    from .stages.apply import summary

    for plan in plans:
        if args.json:
            print(json.dumps(plan.to_dict() if args.dry_run else {"session_id": plan.session_id, "run_id": plan.run_id,
                                                                  "summary": summary(plan)}, default=str))
            continue
        print(render_plan(plan))
        s = summary(plan)
        if args.dry_run:
            print("  (dry run: nothing written)")
        else:
            print(f"  -> {s['written_durable']} durable, {s['written_quarantined']} quarantined,"
                  f" {s['written_transient']} transient, {s['reconfirmed']} re-confirmed;"
                  f" judges: {', '.join(s['judges']) or 'none'}")
    return 0


def cmd_recall(args) -> int:
    from .report import render_memory

    store = _store(args)
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
    store = _store(args)
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


def cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(keep=args.keep)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", help="store folder (default $CONSOLIDATE_STORE or ./.memofs)")
    common.add_argument("--chroma-url", help="use a Chroma server (default $CONSOLIDATE_CHROMA_URL)")
    common.add_argument("--project", help="scope of new memories (default: the folder holding the store)")
    common.add_argument("--embedding", help="embedding function: minilm (default), hash, chroma:NAME")

    p = argparse.ArgumentParser(prog="consolidate", description="Decide what an agent's working notes graduate into long-term memory.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("note", parents=[common], help="write a note to a session")
    s.add_argument("--session", required=True)
    s.add_argument("text")
    s.add_argument("--flag", action="store_true", help="a keeper: promoted without a judge")
    s.add_argument("--ttl", help="expire the note after this long (20m, 2h, 1d)")
    s.add_argument("--kind", help="decision, constraint, preference, recipe, failure or fact")
    s.set_defaults(func=cmd_note)

    s = sub.add_parser("import", parents=[common], help="import a JSONL file of notes (one per line, `content` required)")
    s.add_argument("file")
    s.add_argument("--session", help="session id (default: each line's session_id)")
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("end", parents=[common], help="record a session end in the queue")
    s.add_argument("--session", required=True)
    s.add_argument("--outcome", required=True, choices=["success", "failure", "aborted"])
    s.add_argument("--reason")
    s.set_defaults(func=cmd_end)

    s = sub.add_parser("run", parents=[common], help="consolidate queued session ends now")
    s.add_argument("--session", help="only this session")
    s.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    s.add_argument("--judge", action="append", help="judge spec, repeatable, in chain order (e.g. api:MODEL, rules, noop)")
    s.add_argument("--time-box", type=float, default=120.0, help="seconds for the whole run (default 120)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("recall", parents=[common], help="semantic search over active memories")
    s.add_argument("query")
    s.add_argument("-k", type=int, default=5)
    s.add_argument("--all", action="store_true", help="include quarantined and disputed entries")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_recall)

    s = sub.add_parser("status", parents=[common], help="counts by status and tier, queue, last run")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)

    s = sub.add_parser("demo", help="run the whole pipeline on sample sessions in a throwaway store")
    s.add_argument("--keep", action="store_true", help="keep the throwaway store and print its path")
    s.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConsolidateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
