"""``consolidate run``: consolidate queued session ends in the foreground.

Exit codes: 0 when every note was decided; 75 (``consolidate.pipeline.deferral.EXIT_PARTIAL``) when a run
left notes waiting for a judge (a partial run: they are judged by the next run with an answering
judge, or expire at their bound); the error codes 2-5 as every command. With no judge that can
answer, the first line of output says so and names ``consolidate judges``."""

from __future__ import annotations

import json
import sys

from consolidate.core.dates import iso
from consolidate.pipeline.deferral import EXIT_PARTIAL
from consolidate.cli.commands import open_store
from consolidate.core.errors import UnknownSession
from consolidate.core.errors import BadInput
from consolidate.pipeline.deferral import no_judge_line
from consolidate.pipeline.run import run_queue
from consolidate.judges.registry import chain_specs, check_specs
from consolidate.model.run_lines import consolidated_line
import time
from consolidate.model.report import count_line, drain_notices, run_notices
from consolidate.model.report import render_plan
from consolidate.model.plan import run_summary as summary


def cmd_run(args) -> int:
    if args.judge:  # refused before the store is opened: the check install-hook makes (consolidate/pipeline/run_options.py)

        check_specs(chain_specs(args.judge))
    store = open_store(args, create=False, writes=not args.dry_run)
    if not store.exists:  # nothing can be queued: a run (dry or not) never creates a store
        if args.session:
            raise UnknownSession(f"unknown session {args.session!r}: it has no notes and no session end"
                                 f" (no store at {store.path})", session_id=args.session)
        print(f"nothing queued (no store at {store.path})")
        return 0
    if args.session:
        store.sessions.require_known(args.session)
        if not store.sessions.pending(args.session) and not _partial(store, args.session):
            end = store.sessions.session_end(args.session)
            if end is not None:  # consolidated already (by the worker, another run, batch): say so, with its run

                since = store.sessions.count(args.session)
                print(consolidated_line(args.session, end)
                      + (f"; {since} note(s) written since wait for its next end (consolidate end --session"
                         f" {args.session})" if since else ""))
                return 0

            raise BadInput(f"session {args.session} has no queued session end; end it first"
                           f" (consolidate end --session {args.session} --outcome success)")
        if not args.dry_run:
            store.sessions.requeue_partial(args.session)  # asked for by name: its waiting notes are tried now
    pending = store.sessions.pending(args.session)
    # no note needs a judge: every queued session end is of a session without notes
    idle = not any(store.sessions.count(r["session_id"]) for r in pending)
    if _partial(store, args.session) or (pending and not idle):
        _say_when_no_judge(store, args)

    started = time.time()
    try:
        plans = run_queue(store, session_id=args.session, judges=args.judge, dry_run=args.dry_run,
                          time_box=args.time_box, wait_days=args.wait_days)
    except KeyboardInterrupt:
        if args.dry_run:
            raise
        return _interrupted(store, started, args.session)

    notices = drain_notices(plans)
    for line in notices:  # a crash replay, a failed team push: said whatever else the run did
        print(line, file=sys.stderr if args.json else sys.stdout)
    if not plans:
        if args.session and not args.dry_run and store.sessions.pending(args.session):
            print(f"session {args.session} is being consolidated by another process (the worker);"
                  " `consolidate status` shows its run when it is done")
            return 0
        if plans.replayed:
            return 0
        waiting = store.sessions.waiting() if not args.dry_run else {}
        if waiting:
            first = iso(min(w["until"] for w in waiting.values()))
            print(f"nothing queued; {len(waiting)} notes still wait for a judge (the first bound {first};"
                  f" exit {EXIT_PARTIAL})")
            return EXIT_PARTIAL
        print("nothing queued")
        return 0

    for plan in plans:
        if args.json:
            print(json.dumps(plan.to_dict() if args.dry_run else {"session_id": plan.session_id, "run_id": plan.run_id,
                                                                  "summary": summary(plan)}, default=str))
            for line in [] if args.dry_run else run_notices(summary(plan)):
                print(f"{plan.session_id}: {line}", file=sys.stderr)
            continue
        print(render_plan(plan))
        s = summary(plan)
        if args.dry_run:
            print("  (dry run: nothing written)" + (f"; {s['waiting']} note(s) would wait for a judge" if s["partial"] else ""))
        else:
            print(f"  -> {'PARTIAL: ' if s['partial'] else ''}{count_line(s)};"
                  + (f" {s['waiting']} note(s) wait for a judge (until {s['waiting_until']} at the latest;"
                     f" exit {EXIT_PARTIAL});" if s["partial"] else "")
                  + f" judges: {', '.join(s['judges']) or 'none'}")
            for line in run_notices(s):
                print(f"  ! {line}")
    if not args.dry_run and any(p.partial for p in plans):
        return EXIT_PARTIAL
    return 0


def _interrupted(store, started: float, session_id: str | None) -> int:
    """Ctrl-C during a run: say which sessions were applied (with their runs) and which are left in
    the queue (the one being consolidated goes back to it; its journal makes the next run finish or
    redo it), on stderr; exit 130."""

    rows = store.sessions.finished_since(started)
    done = [f"{sid} ({status}{', run ' + run_id if run_id else ''})" for sid, run_id, status in rows
            if session_id is None or sid == session_id]
    left = [r["session_id"] for r in store.sessions.pending(session_id)]
    print("interrupted: " + (f"applied {len(done)}: {', '.join(done)}" if done else "no session was applied")
          + (f"; left in the queue {len(left)}: {', '.join(left[:20])}{' ...' if len(left) > 20 else ''}"
             " (run `consolidate run` again)" if left else "; nothing left in the queue"), file=sys.stderr)
    return 130


def _partial(store, session_id: str | None) -> bool:
    return any(session_id is None or r["session_id"] == session_id for r in store.sessions.partial())


def _say_when_no_judge(store, args) -> None:
    """With no judge of the chain able to answer now, say so first (stdout; stderr with --json),
    naming ``consolidate judges``."""

    line = no_judge_line(store, args.judge, args.wait_days)
    if line:
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)
