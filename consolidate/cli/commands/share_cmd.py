"""``consolidate export`` and ``consolidate import`` (a JSONL file, or ``--agents-md``): memory shared through a marked block
of AGENTS.md or CLAUDE.md (consolidate/agents/export_md.py)."""

from __future__ import annotations

import json
import sys

from consolidate.cli.commands.session import _tell_redacted, print_policy
from consolidate.cli.commands import open_store
from consolidate.store.anchors import project_root
from consolidate.agents.export_md import export
from consolidate.store.store import project_note
from collections import Counter
from consolidate.agents.export_md import import_block
from consolidate.core.errors import BadInput
from consolidate.pipeline.run import run_queue
from consolidate.model.plan import run_summary as summary
from consolidate.model.report import drain_notices, run_notices
from consolidate.pipeline.deferral import EXIT_PARTIAL


def cmd_export(args) -> int:
    store = open_store(args, create=False)
    path = args.file
    if path is None:
        path = project_root(store) / "AGENTS.md"

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
    if res.get("held_back"):
        print(res["held_back"])
    return 0


#: How a project's source reads in a message.
_SOURCES = {"option": "--project", "environment": "CONSOLIDATE_PROJECT", "team": "the team store's",
            "store": "the store's own", "folder": "the name of the folder holding the store"}


def _other_projects(store) -> list[tuple[str, int]]:
    """``[(project, active memories)]`` of the store's other projects, most memories first."""

    if not store.exists or not store.has_longterm:
        return []
    counts = Counter((r["metadata"] or {}).get("scope") for r in store.longterm().active(documents=False))
    counts.pop(store.project, None)
    return [(project, n) for project, n in counts.most_common() if project is not None]


def cmd_import_agents_md(args) -> int:
    if args.file is not None:
        raise BadInput("give either a JSONL file or --agents-md FILE, not both")
    if args.session:
        raise BadInput("--session is for a JSONL import: a block is imported as its own session")
    store = open_store(args)
    res = import_block(store, args.agents_md, args.rev)
    where = res["origin"]["file"] + (f" at {res['origin']['commit'][:12]}" if res["origin"].get("commit") else "")
    if res["already_imported"]:
        print(f"{where}: this block was imported before (session {res['session_id']}); nothing to do")
        return 0
    for notice in res.get("secret", []):
        print(f"secret: {notice}", file=sys.stderr)
    if res.get("cut"):
        print(f"{where}: {res['cut']} entries cut by the export's size budget left out (their text is not all there)")
    if not res["notes"]:
        print(f"{where}: nothing new ({res['known']} memories already in the store)")
        return 0
    print(f"imported {res['notes']} memories from {where} as notes of session {res['session_id']}"
          " (each with the evidence and dates it was exported with)"
          + (f" ({res['known']} already in the store)" if res["known"] else ""))
    if args.no_run:
        print("queued: `consolidate run` (or the next worker) consolidates it")
        return 0

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

    for line in run_notices(s) + drain_notices(plans):
        print(f"  ! {line}")

    return EXIT_PARTIAL if plan.partial else 0


def cmd_import(args) -> int:
    """``consolidate import FILE``: notes from a JSONL file, or ``--agents-md FILE``: a consolidate block."""
    if args.agents_md:  # a consolidate block of AGENTS.md / CLAUDE.md (consolidate/agents/export_md.py)

        return cmd_import_agents_md(args)
    if args.file is None:
        raise BadInput("give a JSONL file of notes (- for standard input) or --agents-md FILE")
    store = open_store(args)
    written: list[dict] = []
    counts = store.sessions.import_jsonl(sys.stdin.buffer if args.file == "-" else args.file, args.session,
                                         written=written)
    for sid, n in counts.items():
        print(f"imported {n} notes into session {sid}")
    blocked_lines = {line for line, _ in getattr(counts, "notices", [])}
    for row in written:
        print_policy(row["content"], flag=row["flag"], kind=row["kind"], metadata=row["metadata"],
                     prefix=f"line {row['line']} (note {row['note_id']}): ", blocked=row["line"] in blocked_lines)
    if not counts:
        print("no notes in the file (blank lines only)")
    _tell_redacted(f"line {line}: {notice}" for line, notice in getattr(counts, "notices", []))
    return 0
