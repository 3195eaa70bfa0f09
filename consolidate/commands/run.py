"""``consolidate run``: consolidate queued session ends in the foreground."""

from __future__ import annotations

import json

from ._common import open_store, positive_float


def cmd_run(args) -> int:
    from ..pipeline import run_queue

    if args.judge:
        from judges.registry import chain_specs, installed
        from ..errors import ConfigError

        for spec in chain_specs(args.judge):
            name = spec.partition(":")[0].strip()
            if name not in installed():
                raise ConfigError(f"unknown judge {name!r}; installed: {', '.join(sorted(installed()))}", judge=name)
    store = open_store(args)
    if args.session:
        store.sessions.require_known(args.session)
        if not store.sessions.pending(args.session):
            from ..errors import BadInput

            raise BadInput(f"session {args.session} has no queued session end; end it first"
                           f" (consolidate end --session {args.session} --outcome success)")
    plans = run_queue(store, session_id=args.session, judges=args.judge, dry_run=args.dry_run,
                      time_box=args.time_box)
    if not plans:
        print("nothing queued")
        return 0
    from ..report import render_plan
    from ..stages.apply import summary

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


def register(sub, common) -> None:
    s = sub.add_parser("run", parents=[common], help="consolidate queued session ends now")
    s.add_argument("--session", help="only this session")
    s.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    s.add_argument("--judge", action="append", help="judge spec, repeatable, in chain order (e.g. api:MODEL, rules, noop)")
    s.add_argument("--time-box", type=positive_float, default=120.0, help="seconds for the whole run (default 120)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_run)
