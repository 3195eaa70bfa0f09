"""``consolidate import-transcripts [PATH ...] [--claude-code] [--gemini-cli]``: harvest past agent
transcripts into the store (consolidate/agents/transcripts.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from consolidate.cli.commands import open_store
from consolidate.agents import transcripts as tr
from consolidate.store.anchors import project_root
from consolidate.core.errors import BadInput
from consolidate.pipeline.deferral import EXIT_PARTIAL
from consolidate.pipeline.run import run_queue
from consolidate.model.plan import run_summary as summary
from consolidate.model.report import drain_notices, run_notices


def cmd_import_transcripts(args) -> int:
    if not (args.paths or args.claude_code or args.gemini_cli):
        raise BadInput("give a transcript file or folder, --claude-code or --gemini-cli")
    store = open_store(args)
    project = Path(args.project_dir).resolve() if args.project_dir else project_root(store)
    found: list = []
    for p in args.paths:
        found += tr.in_path(Path(p))
    where = []
    if args.claude_code:
        cc = tr.claude_code_transcripts(project)
        found += cc
        where.append(f"{len(cc)} Claude Code ({tr.claude_home() / 'projects' / tr.claude_slug(project)})")
    if args.gemini_cli:
        gc = tr.gemini_cli_transcripts(project)
        found += gc
        where.append(f"{len(gc)} Gemini CLI (~/.gemini/tmp/<project>/chats of {project})")
    if where and not args.json:
        print("found " + ", ".join(where))
    res = tr.import_transcripts(store, found, progress=None if not args.json else False)
    if args.json:
        print(json.dumps({"transcripts": res.rows, "sessions": res.sessions}, ensure_ascii=False))
    else:
        imported = sum(r["notes"] for r in res.rows if r["status"] == "imported")
        print(f"{len(found)} transcripts: {res.count('imported')} imported ({imported} notes),"
              f" {res.count('unchanged')} unchanged since the last import,"
              + (f" {res.count('duplicate')} copies of a transcript imported from another path,"
                 if res.count("duplicate") else "")
              + f" {res.count('no-new-entries')} with no new"
              f" entries, {res.count('skipped-hooked')} already consolidated by the hooks,"
              + (f" {res.count('hook-harvest-finished')} whose harvest by the hooks had not finished (made now:"
                 f" {sum(r['notes'] for r in res.rows if r['status'] == 'hook-harvest-finished')} notes),"
                 if res.count("hook-harvest-finished") else "")
              + f" {res.count('empty') + res.count('unreadable')} empty or unreadable")
    if not res.sessions:
        return 0
    if args.no_run:
        print(f"{len(res.sessions)} sessions queued: `consolidate run` (or the next worker) consolidates them",
              file=sys.stderr if args.json else sys.stdout)
        return 0

    partial = False
    totals = {"written_durable": 0, "written_quarantined": 0, "reconfirmed": 0, "waiting": 0}

    notices: list[str] = []
    for sid in res.sessions:
        plans = run_queue(store, session_id=sid, judges=args.judge)
        for plan in plans:
            s = summary(plan)
            for k in totals:
                totals[k] += s.get(k, 0)
            partial = partial or plan.partial
            notices += [f"{sid}: {line}" for line in run_notices(s)]
        notices += drain_notices(plans)
    line = (f"consolidated {len(res.sessions)} sessions: {totals['written_durable']} durable,"
            f" {totals['written_quarantined']} quarantined, {totals['reconfirmed']} re-confirmed"
            + (f"; {totals['waiting']} notes wait for a judge (exit {EXIT_PARTIAL})" if partial else ""))
    print(line, file=sys.stderr if args.json else sys.stdout)
    for notice in notices:  # judge answers ignored, disputed memories, a crash replay, a failed team push
        print(f"  ! {notice}", file=sys.stderr if args.json else sys.stdout)
    return EXIT_PARTIAL if partial else 0
