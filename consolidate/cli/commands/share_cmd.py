"""``consolidate export`` and ``consolidate import --agents-md``: memory shared through a marked block
of AGENTS.md or CLAUDE.md (consolidate/agents/export_md.py)."""

from __future__ import annotations

import json
import sys

from consolidate.cli.options import add_json, add_judge, add_limit, open_store


def cmd_export(args) -> int:
    from consolidate.store.anchors import project_root
    from consolidate.agents.export_md import export

    store = open_store(args, create=False)
    path = args.file
    if path is None:
        path = project_root(store) / "AGENTS.md"
    from consolidate.store.store import project_note

    note = project_note(store)
    if note:
        print(note, file=sys.stderr)
    res = export(store, path, args.limit)
    if not res["exported"]:
        other = _other_projects(store)
        if other:
            print(f"note: no memories of project {store.project!r} ({_SOURCES[store.project_source]}); the store holds "
                  + ", ".join(f"{n} of {p!r}" for p, n in other) + f": use --project {other[0][0]}"
                  + ("" if store.recorded_project else
                     " (or `consolidate doctor --repair`, which records the store's own project)"), file=sys.stderr)
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
        return 0
    held = res["left_out"]
    why = [f"{n} holding secret material" if k == "secret" else f"{n} worded as instructions or running remote code"
           for k, n in held.items() if n]
    print(f"exported {res['exported']} memories to {res['path']}"
          + ("" if res["changed"] else " (unchanged)")
          + (f"; left out: {', '.join(why)}" if why else ""))
    return 0


#: How a project's source reads in a message.
_SOURCES = {"option": "--project", "environment": "CONSOLIDATE_PROJECT", "team": "the team store's",
            "store": "the store's own", "folder": "the name of the folder holding the store"}


def _other_projects(store) -> list[tuple[str, int]]:
    """``[(project, active memories)]`` of the store's other projects, most memories first."""
    from collections import Counter

    if not store.exists or not store.has_longterm:
        return []
    counts = Counter((r["metadata"] or {}).get("scope") for r in store.longterm().active(documents=False))
    counts.pop(store.project, None)
    return [(project, n) for project, n in counts.most_common() if project is not None]


def cmd_import_agents_md(args) -> int:
    from consolidate.agents.export_md import import_block

    if args.file is not None:
        from consolidate.core.errors import BadInput

        raise BadInput("give either a JSONL file or --agents-md FILE, not both")
    if args.session:
        from consolidate.core.errors import BadInput

        raise BadInput("--session is for a JSONL import: a block is imported as its own session")
    store = open_store(args)
    res = import_block(store, args.agents_md, args.rev)
    where = res["origin"]["file"] + (f" at {res['origin']['commit'][:12]}" if res["origin"].get("commit") else "")
    if res["already_imported"]:
        print(f"{where}: this block was imported before (session {res['session_id']}); nothing to do")
        return 0
    for notice in res.get("secret", []):
        print(f"secret: {notice}", file=sys.stderr)
    if not res["notes"]:
        print(f"{where}: nothing new ({res['known']} memories already in the store)")
        return 0
    print(f"imported {res['notes']} memories from {where} as notes of session {res['session_id']}"
          " (each with the evidence and dates it was exported with)"
          + (f" ({res['known']} already in the store)" if res["known"] else ""))
    if args.no_run:
        print("queued: `consolidate run` (or the next worker) consolidates it")
        return 0
    from consolidate.pipeline.run import run_queue
    from consolidate.model.plan import run_summary as summary

    plans: list = run_queue(store, session_id=res["session_id"], judges=args.judge) or [None]
    [plan] = plans
    if plan is None:
        print("queued: `consolidate run` consolidates it")
        return 0
    s = summary(plan)
    print(f"  -> {s['written_durable']} durable, {s['written_quarantined']} quarantined,"
          f" {s['reconfirmed']} re-confirmed, {s['rejected']} rejected"
          + (f", {s['notes_blocked']} blocked (secret material)" if s.get("notes_blocked") else "")
          + f" (run {plan.run_id})")
    from consolidate.model.report import drain_notices, run_notices

    for line in run_notices(s) + drain_notices(plans):
        print(f"  ! {line}")
    from consolidate.pipeline.deferral import EXIT_PARTIAL

    return EXIT_PARTIAL if plan.partial else 0


def add_import_options(parser) -> None:
    """``consolidate import``'s options for a consolidate block (called where ``import`` is registered)."""
    parser.add_argument("--agents-md", metavar="FILE",
                        help="import the consolidate block of AGENTS.md or CLAUDE.md (written by `consolidate"
                             " export`) as notes keeping the evidence and dates they were exported with, then consolidate"
                             " them")
    parser.add_argument("--rev", metavar="COMMIT", help="with --agents-md: read the file at this git commit")
    parser.add_argument("--no-run", action="store_true", help="with --agents-md: queue the session, do not run it")
    add_judge(parser)


def register(sub, common) -> None:
    s = sub.add_parser("export", parents=[common],
                       help="write the top durable memories into a marked block of AGENTS.md or CLAUDE.md")
    s.add_argument("--file", help="the file (default: AGENTS.md in the project, the folder holding the store)")
    add_limit(s, 1000, 50, "at most this many memories")
    add_json(s)
    s.set_defaults(func=cmd_export)
