"""Queue and store commands: ``worker`` (what the hook starts, detached), ``batch`` and ``curate``."""

from __future__ import annotations

import json
import sys

from consolidate.cli.commands import open_store
from consolidate.rules.redaction import error_text
from consolidate.core.errors import BadInput, ConsolidateError
from consolidate.pipeline.worker import run_worker
from consolidate.store.worker_health import record
from consolidate.store.store import resolve_store_path
from consolidate.pipeline.batch import run_batch
from consolidate.core.dates import parse_user_date
from consolidate.pipeline.deferral import EXIT_PARTIAL, no_judge_line
from consolidate.model.report import run_notices
from consolidate.model.run_lines import counted
from consolidate.pipeline.rejudge import prompt_versions
import dataclasses
from consolidate.pipeline.curate.curation import run_curate, summary
from consolidate.judges import registry


def cmd_worker(args) -> int:
    """Drain the queue. A worker that fails is recorded (consolidate/store/worker_health.py): here for an
    unexpected error, by the CLI's error path for a ConsolidateError (:func:`worker_failed`), so that
    ``status`` and the next SessionStart say so."""

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

    try:
        path = resolve_store_path(getattr(args, "store", None))
    except Exception:  # noqa: BLE001
        return
    if path.is_dir():
        record(path, error_text(exc) if isinstance(exc, ConsolidateError) and error_text(exc) else error_text(exc, typed=True))


def cmd_batch(args) -> int:
    args.rejudge = args.rejudge or args.drifted  # --drifted alone means: re-judge the drifted memories
    if args.prompt_version and not args.rejudge:
        raise BadInput("batch --prompt-version selects the entries of --rejudge; the curation prompt of --curate"
                       " is $CONSOLIDATE_CURATE_PROMPT_VERSION (or `consolidate curate --prompt-version`)")
    if args.curate:
        registry.curate_prompt_version()  # a bad $CONSOLIDATE_CURATE_PROMPT_VERSION: one line, before anything
    since = parse_user_date(args.since, what="--since date") if args.since is not None else None
    store = open_store(args, create=False, writes=True)
    if not store.exists:
        print(f"batch: no store at {store.path}; nothing to do")
        return 0

    line = no_judge_line(store, args.judge) if store.sessions.sessions() else None  # notes that may need one
    if line:
        print(line, flush=True, file=sys.stderr if args.json else sys.stdout)
    r = run_batch(store, concurrency=args.concurrency, judges=args.judge, time_box=args.time_box,
                  orphan_age=args.orphan_age * 3600, rejudge=args.rejudge, since=since,
                  prompt_version=args.prompt_version, drifted=args.drifted, curate=args.curate)
    errors = [s for s in r.sessions if "error" in s]
    partial = [s for s in r.sessions if s.get("partial")]
    _say_unmatched_prompt_version(args, store, r)
    unanswered = r.curation is not None and _nothing_answered(r.curation)  # curate's exit 75, as `curate` says it
    if args.json:
        print(json.dumps(_batch_json(r), ensure_ascii=False, default=str))
        return 130 if r.interrupted else (1 if errors else EXIT_PARTIAL if unanswered else 0)
    print(("PARTIAL " if partial else "")
          + f"batch: {len(r.sessions)} sessions ({len(errors)} errors), {len(r.orphans_ended)} orphans ended,"
          f" {r.expired} quarantined entries expired, {r.decayed} decayed"
          + (f", re-judged {_rejudged(r.rejudged)}" if args.rejudge and not args.drifted else "")
          + (f", {r.drift.get('drifted', 0)} drifted and {r.drift.get('stale', 0)} stale (code anchors)" if r.drift else "")
          + (f", re-judged drifted {_rejudged(r.rejudged_drifted)}" if args.rejudge and args.drifted else "")
          + (f", {curated_words(r.curated)}" if args.curate else "")
          + (f" ({undo_hint(r.curated)} the curation)" if args.curate and changed(r.curated) else "")
          + f" in {r.seconds:.1f} s"
          + (f"; {sum(s['waiting'] for s in partial)} notes of {len(partial)} sessions wait for a judge"
             " (`consolidate status`, `consolidate judges`)" if partial else ""))

    for s in r.sessions:  # judge answers ignored, disputed memories written: per session
        for line in run_notices(s):
            print(f"  {s['session_id']}: {line}")
    if r.curation is not None:
        print_curation(r.curation)
    for line in r.notices:  # a crash replay, a failed team push
        print(f"  {line}")
    for s in errors:
        print(f"  {s['session_id']}: {s['error']}", file=sys.stderr)
    if r.interrupted:
        applied = [f"{s['session_id']} (run {s['run_id']})" for s in r.sessions if s.get("run_id")]
        print("interrupted: " + (f"applied {len(applied)}: {', '.join(applied)}" if applied else "no session was applied")
              + f"; {r.left_in_queue} session ends left in the queue; run `consolidate batch` again", file=sys.stderr)
        return 130
    return 1 if errors else EXIT_PARTIAL if unanswered else 0


def _say_unmatched_prompt_version(args, store, r) -> None:
    """``batch --rejudge --prompt-version V`` that selected nothing: say which versions the store's
    entries were written under (a typo such as ``judge-v99`` otherwise reads as a store with nothing
    to re-judge)."""
    if not (args.rejudge and not args.drifted and args.prompt_version and not (r.rejudged or {}).get("considered")):
        return

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

    return dataclasses.asdict(r) if dataclasses.is_dataclass(r) and not isinstance(r, type) else dict(vars(r))


def undo_hint(c: dict) -> str:
    """How to revert the pass of summary ``c`` (the words ``curate`` and ``batch --curate`` print)."""
    return f"`consolidate undo {c['run_id']}` reverts"


def changed(c: dict) -> bool:
    """Whether the pass of summary ``c`` wrote a run there is something to undo in (an applied
    merge, drop or conflict, or a proposal sent to review)."""
    return bool(c.get("run_id")) and any(c.get(k) for k in ("merged", "dropped", "conflicts", "for_review"))


def curated_words(c: dict) -> str:
    """A curation pass's counts in words (``batch --curate``, ``curate``)."""
    how = f" with {c['prompt_version']}" if c.get("prompt_version") else ""
    return (f"curated {counted(c.get('considered', 0), 'memory', 'memories')} in {counted(c.get('groups', 0), 'group')}"
            f"{how}: {c.get('merged', 0)} merged, {c.get('dropped', 0)} dropped,"
            f" {counted(c.get('conflicts', 0), 'memory', 'memories')} disputed,"
            f" {c.get('for_review', 0)} sent to review, {counted(c.get('deferred_groups', 0), 'group')} deferred"
            + (f" (run {c['run_id']})" if changed(c) else "")
            + ("; stale: another run changed its memories while the judge answered, nothing applied, run curate"
               " again" if c.get("stale") else ""))


def cmd_curate(args) -> int:
    """``consolidate curate``: the store curation pass (consolidate/pipeline/curate/)."""

    registry.select_curate_prompt_version(args.prompt_version)  # checked before anything; the judges read it
    store = open_store(args, create=False, writes=not args.dry_run)
    if not store.exists:
        if args.json:
            print(json.dumps({"store": str(store.path), "exists": False, "proposals": [], "deferred": [],
                              "summary": {"run_id": None, "considered": 0, "groups": 0}}))
        else:
            print(f"curate: no store at {store.path}; nothing to do")
        return 0
    res = run_curate(store, judges=args.judge, time_box=args.time_box, review=args.review, dry_run=args.dry_run,
                     max_group=args.max_group)
    if args.json:
        print(json.dumps({**dataclasses.asdict(res), "summary": summary(res)}, ensure_ascii=False, default=str))
        return EXIT_PARTIAL if _nothing_answered(res) else 0
    counts = summary(res)
    print(("DRY RUN, nothing written: " if args.dry_run else "") + curated_words(counts)
          + (f"; {undo_hint(counts)} it" if changed(counts) else ""))
    print_curation(res)
    return EXIT_PARTIAL if _nothing_answered(res) else 0


def print_curation(res) -> None:
    """A curation pass's proposals (outcome, action, memory, reason, statement) and deferred groups, one
    or two lines each: what ``curate`` and ``batch --curate`` print under their count line."""
    for p in res.proposals:
        target = f" into {p['into']}" if p.get("into") else f" with {p['with']}" if p.get("with") else ""
        held = "" if not p.get("held") else f" ({p['held']}: not proposed again)" if (
            p.get("would") or p["outcome"]) == "reviewed" else f" ({p['held']}: sent to review)"
        print(f"  {p['outcome']}: {p['action']} {p['memory_id']}{target}{held}"
              + (f": {p['reason']}" if p.get("reason") else ""))
        print(f"      {p['statement'][:160]}")
    for d in res.deferred:
        print(f"  deferred: {len(d['memory_ids'])} memories unchanged: {d['reason'][:200]}")


def _nothing_answered(res) -> bool:
    """A pass (a dry run too: it previews nothing) with groups none of which a judge answered: ``curate``
    exits 75, as ``run`` does when notes wait for a judge, so a script can tell nothing was curated."""
    return res.groups > 0 and len(res.deferred) == res.groups
