"""Session lifecycle commands: ``hook`` (what agent CLIs call) and ``worker`` (what the hook starts)."""

from __future__ import annotations

import json

import os
import sys
from pathlib import Path

from consolidate.agents.hooks.payload import (EVENT_KEY, TOOL_EVENTS, command_line_payload, event_name, gemini_output,
                                              raw_cwd, session_ids)
from consolidate.store import resolve
from consolidate.cli.options import add_dry_run, add_json, add_judge, add_outcome, add_session, add_time_box, open_store
from consolidate.rules.redaction import error_text
from consolidate.cli.options import count_1_to, count_from_to, positive_hours, user_date


def cmd_hook(args) -> int:
    """Always exits 0: a hook must never fail or block the agent."""
    from consolidate.agents.hooks.full import log, parse_event, read_stdin, run_hook

    payload: dict = {}
    try:
        payload = command_line_payload(args.session, args.event) if args.session else parse_event(read_stdin())
        if args.event and not args.session:
            payload.setdefault(EVENT_KEY, args.event)
        refused = hook_refusal(args, payload)
        if refused:
            sys.stderr.write(f"consolidate hook: refused: {refused}; nothing was written\n")
            return HOOK_REFUSED
        store = resolve.store_path(args.store, cwd=raw_cwd(payload))
        options = {"chroma_url": args.chroma_url, "project": args.project, "embedding": args.embedding,
                   "judges": args.judge}
        code, text = run_hook(Path(store), payload=payload, outcome=args.outcome, harvest_notes=args.harvest,
                              spawn=not args.no_worker, options=options, wait_worker=True,
                              agent="gemini-cli" if args.output == "gemini" else None)
        if text and event_name(payload) in TOOL_EVENTS:
            sys.stdout.write(text + "\n")  # already the JSON both agents read (consolidate/agents/file_recall.py)
        elif text and args.output == "gemini":
            sys.stdout.write(gemini_output(text) + "\n")
        elif text:
            sys.stdout.write(text + "\n")
    except BaseException as exc:  # noqa: BLE001 - the hook's promise is exit 0, whatever happens
        try:
            log(Path(resolve.store_path(args.store, cwd=raw_cwd(payload))), f"hook failed: {error_text(exc, typed=True)}")
        except Exception:
            pass
    return 0


#: Exit code of a refused hook call: a non-blocking error in Claude Code's and Gemini CLI's hook
#: contracts (0 success, 2 blocking, any other code: shown to the user, the agent goes on).
HOOK_REFUSED = 1


def hook_refusal(args, payload: dict) -> str | None:
    """Why this hook call must do nothing, in one line, or None. Refused before anything is written
    (no store, no log): a payload ``cwd`` that is not an existing folder (the store would be created
    under it) when no ``--store``/``$CONSOLIDATE_STORE`` is given, and a session id holding a control
    character (``consolidate.store.sessions.tier.check_session_id``)."""
    from consolidate.core.errors import BadInput
    from consolidate.store.sessions.tier import check_session_id

    for key, value in session_ids(payload):
        try:
            check_session_id(value)
        except BadInput as exc:
            return f"{key}: {error_text(exc)}"
    cwd = raw_cwd(payload)
    if resolve.named(args.store) or cwd is None:
        return None
    if not isinstance(cwd, str) or not cwd.strip() or "\x00" in cwd:
        return f"the payload's cwd is not a folder path ({type(cwd).__name__} {str(cwd)[:80]!r})"
    shown = cwd if len(cwd) <= 200 else cwd[:197] + "..."
    if not os.path.isabs(cwd):
        return f"the payload's cwd {shown!r} is not an absolute path"
    if not os.path.isdir(cwd):
        what = "is not a folder" if os.path.exists(cwd) else "does not exist"
        return f"the payload's cwd {shown!r} {what} (no store is created there; give --store to choose one)"
    return None


def cmd_worker(args) -> int:
    """Drain the queue. A worker that fails is recorded (consolidate/store/worker_health.py): here for an
    unexpected error, by the CLI's error path for a ConsolidateError (:func:`worker_failed`), so that
    ``status`` and the next SessionStart say so."""
    from consolidate.core.errors import ConsolidateError
    from consolidate.pipeline.worker import run_worker

    try:
        store = open_store(args, create=False, writes=True)
        if not store.exists:
            return 0
        run_worker(store, time_box=args.time_box, judges=args.judge)
    except (ConsolidateError, OSError):
        raise  # recorded by the CLI's error path, which prints them
    except Exception as exc:
        worker_failed(args, exc)
        raise
    return 0


def worker_failed(args, exc: BaseException) -> None:
    """Record that this ``consolidate worker`` failed with ``exc`` in its store (the one its options
    mean: consolidate/store/resolve.py). Never raises."""
    from consolidate.store.worker_health import record

    try:
        from consolidate.store.store import resolve_store_path

        path = resolve_store_path(getattr(args, "store", None))
    except Exception:  # noqa: BLE001
        return
    if path.is_dir():
        from consolidate.core.errors import ConsolidateError

        record(path, error_text(exc) if isinstance(exc, ConsolidateError) and error_text(exc) else error_text(exc, typed=True))


def register(sub, common) -> None:
    s = sub.add_parser("hook", parents=[common],
                       help="for agent CLI hooks: queue a session end and start a worker, or print context")
    s.add_argument("--harvest", action="store_true", help="also take notes from the Claude Code transcript")
    add_outcome(s, "outcome recorded for an end event", default="success")
    add_session(s, "plain form: end this session (no JSON on stdin)")
    s.add_argument("--event", help="event name when stdin does not say (SessionEnd, SessionStart, Stop)")
    s.add_argument("--no-worker", action="store_true", help="queue only; do not start a worker")
    s.add_argument("--output", choices=["text", "gemini"], default="text",
                   help="SessionStart context as plain text (Claude Code) or Gemini CLI's JSON")
    add_judge(s, "judge spec for the worker it starts")
    s.set_defaults(func=cmd_hook)

    s = sub.add_parser("worker", parents=[common], help="drain the queue (what the hook starts, detached)")
    add_time_box(s, None, "seconds per session (default $CONSOLIDATE_TIME_BOX or 120)")
    add_judge(s)
    s.set_defaults(func=cmd_worker)
    register_batch(sub, common)


def cmd_batch(args) -> int:
    from consolidate.pipeline.batch import run_batch
    from consolidate.core.dates import parse_user_date

    args.rejudge = args.rejudge or args.drifted  # --drifted alone means: re-judge the drifted memories
    since = parse_user_date(args.since, what="--since date") if args.since is not None else None
    store = open_store(args, create=False, writes=True)
    if not store.exists:
        print(f"batch: no store at {store.path}; nothing to do")
        return 0
    from consolidate.pipeline.deferral import no_judge_line

    line = no_judge_line(store, args.judge) if store.sessions.sessions() else None  # notes that may need one
    if line:
        print(line, flush=True, file=sys.stderr if args.json else sys.stdout)
    r = run_batch(store, concurrency=args.concurrency, judges=args.judge, time_box=args.time_box,
                  orphan_age=args.orphan_age * 3600, rejudge=args.rejudge, since=since,
                  prompt_version=args.prompt_version, drifted=args.drifted, curate=args.curate)
    errors = [s for s in r.sessions if "error" in s]
    partial = [s for s in r.sessions if s.get("partial")]
    _say_unmatched_prompt_version(args, store, r)
    if args.json:
        print(json.dumps(_batch_json(r), ensure_ascii=False, default=str))
        return 130 if r.interrupted else (1 if errors else 0)
    print(("PARTIAL " if partial else "")
          + f"batch: {len(r.sessions)} sessions ({len(errors)} errors), {len(r.orphans_ended)} orphans ended,"
          f" {r.expired} quarantined entries expired, {r.decayed} decayed"
          + (f", re-judged {_rejudged(r.rejudged)}" if args.rejudge and not args.drifted else "")
          + (f", {r.drift.get('drifted', 0)} drifted and {r.drift.get('stale', 0)} stale (code anchors)" if r.drift else "")
          + (f", re-judged drifted {_rejudged(r.rejudged_drifted)}" if args.rejudge and args.drifted else "")
          + (f", {curated_words(r.curated)}" if args.curate else "")
          + f" in {r.seconds:.1f} s"
          + (f"; {sum(s['waiting'] for s in partial)} notes of {len(partial)} sessions wait for a judge"
             " (`consolidate status`, `consolidate judges`)" if partial else ""))
    from consolidate.model.report import run_notices

    for s in r.sessions:  # judge answers ignored, disputed memories written: per session
        for line in run_notices(s):
            print(f"  {s['session_id']}: {line}")
    for line in r.notices:  # a crash replay, a failed team push
        print(f"  {line}")
    for s in errors:
        print(f"  {s['session_id']}: {s['error']}", file=sys.stderr)
    if r.interrupted:
        applied = [f"{s['session_id']} (run {s['run_id']})" for s in r.sessions if s.get("run_id")]
        print("interrupted: " + (f"applied {len(applied)}: {', '.join(applied)}" if applied else "no session was applied")
              + f"; {r.left_in_queue} session ends left in the queue; run `consolidate batch` again", file=sys.stderr)
        return 130
    return 1 if errors else 0


def _say_unmatched_prompt_version(args, store, r) -> None:
    """``batch --rejudge --prompt-version V`` that selected nothing: say which versions the store's
    entries were written under (a typo such as ``judge-v99`` otherwise reads as a store with nothing
    to re-judge)."""
    if not (args.rejudge and not args.drifted and args.prompt_version and not (r.rejudged or {}).get("considered")):
        return
    from consolidate.pipeline.rejudge import prompt_versions

    found = prompt_versions(store) if store.has_longterm else {}
    listed = ", ".join(f"{v or 'unrecorded'} ({n})" for v, n in found.items()) or "none"
    print(f"note: no judge-written entry of this store was written under prompt version {args.prompt_version!r};"
          f" versions here: {listed}", file=sys.stderr)


def _rejudged(counts: dict) -> str:
    """A re-judge's counts in words: ``3 entries considered: 1 kept, 1 dropped, 1 left unjudged``."""
    n = counts.get("considered", 0)
    parts = [f"{counts.get(k, 0)} {word}" for k, word in (("kept", "kept"), ("dropped", "dropped"),
                                                           ("unjudged", "left unjudged")) if k in counts]
    parts += [f"{v} {k}" for k, v in counts.items() if k not in ("considered", "kept", "dropped", "unjudged")]
    return f"{n} {'entry' if n == 1 else 'entries'} considered" + (f" ({', '.join(parts)})" if parts else "")


def _batch_json(r) -> dict:
    """``batch --json``: what the batch did, for machines (the fields of consolidate.pipeline.batch's result)."""
    import dataclasses

    return dataclasses.asdict(r) if dataclasses.is_dataclass(r) and not isinstance(r, type) else dict(vars(r))


def register_batch(sub, common) -> None:

    s = sub.add_parser("batch", parents=[common],
                       help="drain the queue and orphaned sessions, expire quarantine, decay, optionally re-judge")
    s.add_argument("--concurrency", type=count_1_to(64), default=4, help="sessions judged at once (1 to 64, default 4)")
    add_judge(s)
    add_time_box(s, 120.0, "seconds per session")
    s.add_argument("--orphan-age", type=positive_hours, default=24.0,
                   help="hours after its last note a session without an end counts as orphaned (default 24)")
    s.add_argument("--rejudge", action="store_true", help="re-judge entries written under other prompt versions")
    s.add_argument("--since", type=user_date,
                   help="with --rejudge: only entries written on or after this date, local time"
                        " (2026-07-01, 2026-07-01T08:30+10:00, yesterday, last-week, '3 days ago')")
    s.add_argument("--prompt-version", help="with --rejudge: only entries written under this prompt version")
    s.add_argument("--drifted", action="store_true",
                   help="with --rejudge: re-judge the memories whose anchored code changed instead")
    s.add_argument("--curate", action="store_true",
                   help="last, the store curation pass (`consolidate curate`), as its own undoable run")
    add_json(s, "print what the batch did as one JSON object")
    s.set_defaults(func=cmd_batch)
    register_curate(sub, common)


def curated_words(c: dict) -> str:
    """A curation pass's counts in words (``batch --curate``, ``curate``)."""
    return (f"curated {c.get('considered', 0)} memories in {c.get('groups', 0)} groups: {c.get('merged', 0)} merged,"
            f" {c.get('dropped', 0)} dropped, {c.get('conflicts', 0)} conflicts disputed,"
            f" {c.get('for_review', 0)} sent to review, {c.get('deferred_groups', 0)} groups deferred"
            + (f" (run {c['run_id']})" if c.get("run_id") else ""))


def cmd_curate(args) -> int:
    """``consolidate curate``: the store curation pass (consolidate/pipeline/curate/)."""
    import dataclasses

    from consolidate.pipeline.curate.curation import run_curate, summary

    store = open_store(args, create=False, writes=not args.dry_run)
    if not store.exists:
        print(f"curate: no store at {store.path}; nothing to do")
        return 0
    res = run_curate(store, judges=args.judge, time_box=args.time_box, review=args.review, dry_run=args.dry_run,
                     max_group=args.max_group)
    if args.json:
        print(json.dumps({**dataclasses.asdict(res), "summary": summary(res)}, ensure_ascii=False, default=str))
        return 0
    print(("DRY RUN, nothing written: " if args.dry_run else "") + curated_words(summary(res))
          + (f"; `consolidate undo {res.run_id}` reverts it" if res.run_id and (res.proposals) else ""))
    for p in res.proposals:
        target = f" into {p['into']}" if p.get("into") else f" with {p['with']}" if p.get("with") else ""
        print(f"  {p['outcome']}: {p['action']} {p['memory_id']}{target}"
              + (f" ({p['held']}: sent to review)" if p.get("held") else "")
              + (f": {p['reason']}" if p.get("reason") else ""))
        print(f"      {p['statement'][:160]}")
    for d in res.deferred:
        print(f"  deferred: {len(d['memory_ids'])} memories unchanged: {d['reason'][:200]}")
    return 0


def register_curate(sub, common) -> None:
    s = sub.add_parser("curate", parents=[common],
                       help="the judge reads the active memories in groups of related ones: keep, drop junk,"
                            " merge repeats, dispute conflicts (one undoable run)")
    add_judge(s)
    add_time_box(s, 120.0, "seconds for every judge call of the pass (groups left after it are deferred)")
    s.add_argument("--review", action="store_true",
                   help="send every proposal to the review queue (`consolidate review`) instead of applying it")
    add_dry_run(s, "print the proposals, write nothing")
    s.add_argument("--max-group", type=count_from_to(2, 64), default=8,
                   help="most memories the judge sees in one group (at least 2, at most 64; default 8)")
    add_json(s, "print the proposals and counts as one JSON object")
    s.set_defaults(func=cmd_curate)
