"""Commands on the long-term store itself: ``disputes``, ``resolve``, ``backfill``, ``runs``, ``undo``."""

from __future__ import annotations

import json

from consolidate.cli.commands import open_store
from consolidate.pipeline.maintenance import disputes
from consolidate.store.views import shown as agent_view
from consolidate.pipeline.maintenance import apply_updates, plan_resolve
from consolidate.pipeline.maintenance import plan_backfill
from consolidate.pipeline.forget import forget
from consolidate.core.errors import BadInput
from consolidate.store.snapshots import list_runs, with_partial_runs
from consolidate.core.dates import display
from consolidate.model.report import run_notices
from consolidate.pipeline.undo import undo_run
from consolidate.pipeline.doctor import check, exit_code


def cmd_disputes(args) -> int:
    store = open_store(args, create=False)
    rows = disputes(store) if store.exists and store.read_manifest() else []
    got = agent_view.view(rows, "disputes", forgotten=agent_view.forgotten_ids(store) if rows else ())
    rows = got.rows  # as the agent view shows them: evidence as credited, the guard's held back left out
    if args.json:
        print(json.dumps(agent_view.json_answer([{"id": r["id"], "statement": r["document"], "with": r["with"], **r["metadata"]}
                                                 for r in rows]),
                         ensure_ascii=False))
        return 0
    if not rows and not got.held:
        print("no disputes")
    if got.held:
        print(got.held_line)
    for r in rows:
        print(f"{r['id']}  {agent_view.line(r['document'], r['metadata'], 'disputes')}")
        if r["with"]:
            print(f"    disputes with {', '.join(r['with'])}; settle with: consolidate resolve {r['id']} --keep ID")
    return 0


def cmd_resolve(args) -> int:
    store = open_store(args, create=False, writes=True)
    plan = apply_updates(store, plan_resolve(store, args.memory_id, args.keep))
    archived = [u.memory_id for u in plan.updates if u.action == "archive"]
    print(f"kept {args.keep}; archived {', '.join(archived) or 'nothing'} (run {plan.run_id})")
    return 0


def cmd_backfill(args) -> int:
    store = open_store(args, create=False, writes=not args.dry_run)
    if not store.exists or not store.has_longterm:
        print("0 entries would be backfilled (dry run: nothing written)" if args.dry_run else "backfilled 0 entries")
        return 0
    plan = plan_backfill(store)
    if args.dry_run:
        for u in plan.updates:
            print(u.memory_id, json.dumps(u.changes, ensure_ascii=False))
        print(f"{len(plan.updates)} entries would be backfilled (dry run: nothing written)")
        return 0
    if plan.updates:
        apply_updates(store, plan)
    print(f"backfilled {len(plan.updates)} entries" + (f" (run {plan.run_id})" if plan.updates else ""))
    return 0


def cmd_forget(args) -> int:
    store = open_store(args, create=False)
    if not store.exists:
        raise BadInput(f"unknown memory {args.memory_id!r}: no store at {store.path}")
    store = open_store(args, create=False, writes=True)  # it exists: opened for writing
    res = forget(store, args.memory_id, args.reason)
    print(f"forgot {res['memory_id']}: {res['statement']} (run {res['run_id']}; `consolidate undo"
          f" {res['run_id']}` brings it back). The same statement from a later session is not written again"
          " unless the user states it or the note is flagged.")
    return 0




def cmd_runs(args) -> int:
    store = open_store(args, create=False)
    rows = with_partial_runs(store, list_runs(store)) if store.exists else []
    if args.json:  # the same newest ``--limit`` runs as the text (it printed every run)
        print(json.dumps(rows[: args.limit]))
        return 0
    if not rows:
        print("no runs")

    results = {e["run_id"]: e.get("result") for e in store.sessions.last_runs(10_000) if e.get("run_id")} \
        if rows else {}
    for r in rows[: args.limit]:
        when = display(r["started_at"])
        print(f"{r['run_id']}  {when}  {r['session_id']:<30} {r['outcome'] or '':<11} +{r['added']} added,"
              f" {r['changed']} changed" + ("  (undone)" if r["undone"] else "")
              + (f"  PARTIAL: {r['waiting']} notes left waiting for a judge" if r.get("partial") else "")
              + ("  (nothing written)" if r.get("undo_record") is False else ""))
        for line in run_notices(results.get(r["run_id"])):  # the last run of each session: its queue row
            print(f"    ! {line}")
    return 0


def cmd_undo(args) -> int:
    store = open_store(args, create=False, writes=True)
    counts = undo_run(store, args.run_id)
    if counts.get("nothing_written"):
        print(f"undid {args.run_id}: it wrote nothing to the recall index (a session without notes, every note"
              " dropped or a failure), so nothing was reverted; `consolidate runs` shows it undone")
        return 0
    kept = f", kept {counts['kept_forgotten']} forgotten after it as forgotten" if counts.get("kept_forgotten") else ""
    kept += f", kept {counts['kept_approved']} approved after it as approved" if counts.get("kept_approved") else ""
    kept += (f", left {counts['kept_gone']} gone: the runs that wrote them were undone" if counts.get("kept_gone")
             else "")
    print(f"undid {args.run_id}: removed {counts['removed']} entries, restored {counts['restored']}{kept}")
    return 0




def cmd_doctor(args) -> int:
    store = open_store(args, create=False, writes=args.repair)
    if not store.exists:
        print(f"no store at {store.path}")
        return 0
    findings = check(store, repair=args.repair)
    for f in findings:
        print(f.line())
    print("healthy" if not findings else f"{len(findings)} finding(s)")
    return exit_code(findings)
