"""``consolidate batch``: re-consolidation of a whole store.

In order: end orphaned sessions (notes older than ``orphan_age`` seconds with no session end) with
outcome ``success``; drain the queue (consolidate.pipeline.run.drain: an unfinished journal replayed
first, the team pulled first and pushed after on a team store, then every pending session end), with
up to ``concurrency`` sessions judged at once (their judge calls run concurrently; the read-check-write
section of each run is serialised by the store lock); expire quarantine past its TTL; apply decay;
with ``rejudge``, re-run the judge over entries written under other prompt versions (with
``drifted`` too: over the entries whose anchored code changed, consolidate.store.anchors); with
``curate``, the store curation pass last (consolidate/pipeline/curate/: its own undoable run). A progress bar
shows on a terminal (tqdm), plain lines otherwise. Ctrl-C stops taking new sessions, lets the
running ones finish their (journaled) apply, and leaves the rest in the queue.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from consolidate.core.vocab import END_PENDING
from consolidate.pipeline.maintenance import apply_updates, new_plan, plan_decay
from consolidate.pipeline.run import drain
from consolidate.model.plan import run_summary as summary
from consolidate.pipeline.stages.purge import expire_quarantine
from consolidate.pipeline.deferral import requeue_ready
from consolidate.core.dates import parse_user_date
from consolidate.model.report import drain_notices
from consolidate.pipeline.rejudge import plan_rejudge_drifted
from consolidate.pipeline.rejudge import plan_rejudge
from consolidate.pipeline.curate.curation import run_curate, summary as curate_summary
from consolidate.store import anchors

#: Sessions with notes and no session end for this long (seconds) are orphaned.
ORPHAN_AGE = 24 * 3600.0


@dataclass
class BatchResult:
    """What a batch run did."""

    orphans_ended: list[str] = field(default_factory=list)
    sessions: list[dict[str, Any]] = field(default_factory=list)
    expired: int = 0
    decayed: int = 0
    rejudged: dict[str, int] = field(default_factory=dict)
    drift: dict[str, int] = field(default_factory=dict)
    rejudged_drifted: dict[str, int] = field(default_factory=dict)
    interrupted: bool = False
    left_in_queue: int = 0
    seconds: float = 0.0
    #: partial session ends queued again to judge their waiting notes (consolidate/pipeline/deferral.py)
    requeued_waiting: list[str] = field(default_factory=list)
    #: what the drain said around its runs (consolidate.model.report.drain_notices): a crash replay, a failed team push
    notices: list[str] = field(default_factory=list)
    #: with ``curate``: the curation pass's run (consolidate/pipeline/curate/): ``run_id`` and counts
    curated: dict[str, Any] = field(default_factory=dict)
    #: with ``curate``: the pass itself (a CurateResult: its proposals with reasons, its deferred groups)
    curation: Any = None


def end_orphans(store, orphan_age: float = ORPHAN_AGE, now: float | None = None) -> list[str]:
    """Queue a ``success`` end for every session whose newest note is older than ``orphan_age``
    seconds and that has no pending session end, was not aborted and did not fail (a failed
    session's kept notes are never promoted); returns their ids."""
    now = time.time() if now is None else now
    rows = store.sessions.newest_note_times()
    ended = []
    for sid, newest in rows:
        end = store.sessions.session_end(sid)
        if end is not None and end["status"] in END_PENDING:
            continue
        if end is not None and end["status"] in ("aborted", "partial"):
            continue  # an aborted session waits to be resumed; a partial one's notes wait for a judge
        if end is not None and end["outcome"] == "failure":
            continue  # a failed session keeps its notes as a record: they are never promoted
        if newest < now - orphan_age:
            store.sessions.end(sid, "success", f"orphaned: no session end for {orphan_age / 3600:g} h", now=now)
            ended.append(sid)
    return ended


def check_drift(store) -> dict[str, int]:
    """Check the code anchors of every memory still in the store (consolidate.store.anchors): drifted
    ones join the re-judge queue, stale ones are marked. Returns ``{"drifted": n, "stale": n}``."""
    section = anchors.read_section(store.path)
    if not section["memories"]:
        return {"drifted": 0, "stale": 0}
    present = set(store.longterm().get(sorted(section["memories"])))
    drift = anchors.check(store.path, sorted(present), root=anchors.project_root(store), section=section)
    return {"drifted": sum(1 for d in drift.values() if d["drifted"]),
            "stale": sum(1 for d in drift.values() if d["stale"])}


def _progress(total: int, out):
    """A tqdm bar on a terminal, else a function that prints plain lines."""
    if getattr(out, "isatty", lambda: False)():
        from tqdm import tqdm  # noqa: PLC0415 - third-party tqdm: only its callers load it

        bar = tqdm(total=total, unit="session", file=out)
        return bar.update, bar.set_postfix_str, bar.close
    state = {"n": 0}

    def update(n=1):
        state["n"] += n

    def postfix(text):
        print(f"[{state['n']}/{total}] {text}", file=out, flush=True)

    return update, postfix, lambda: None


def run_batch(store, *, concurrency: int = 4, judges: list[str] | None = None, chain_factory: Callable | None = None,
              time_box: float | None = 120.0, orphan_age: float = ORPHAN_AGE, rejudge: bool = False,
              since=None, prompt_version: str | None = None, now: float | None = None,
              out=None, drifted: bool = False, curate: bool = False) -> BatchResult:
    """Run the batch (see the module docstring). ``concurrency`` >= 1 sessions at once. The code
    anchors of every memory are checked (``drift``: counts of drifted and stale memories); with
    ``rejudge`` and ``drifted``, the drifted ones are re-judged (``rejudged_drifted``) instead of
    the entries of other prompt versions. With ``curate``, the curation pass runs last, as its own
    undoable run (``curated``: consolidate.pipeline.curate.curation.summary)."""

    out = out or sys.stderr
    if isinstance(since, str):  # a bad date fails before anything runs

        since = parse_user_date(since, what="--since date")
    started = time.perf_counter()
    result = BatchResult()
    result.orphans_ended = end_orphans(store, orphan_age, now)

    result.requeued_waiting = requeue_ready(store, judges=judges, chain_factory=chain_factory, now=now)
    update, postfix, close = _progress(len(store.sessions.pending()), out)

    def done(taken) -> None:
        sid = taken.row["session_id"]
        if taken.error is not None:
            res = {"session_id": sid, "error": f"{type(taken.error).__name__}: {taken.error}"}
        elif taken.plan is None:
            res = {"session_id": sid, "skipped": "held by another process"}
        else:
            res = {"session_id": taken.plan.session_id, "run_id": taken.plan.run_id, **summary(taken.plan)}
        result.sessions.append(res)
        update(1)
        postfix(f"{res['session_id']}: " + ("error" if "error" in res else res.get("skipped") or
                                            f"{res.get('written_durable', 0)} durable"))

    try:  # a run a crash left in the journal is finished first (by the drain)
        drained = drain(store, concurrency=max(1, concurrency), keep_going=True, on_done=done, judges=judges,
                        chain_factory=chain_factory, time_box=time_box)

        result.notices = drain_notices(drained)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        close()
    result.left_in_queue = len(store.sessions.pending())
    if result.interrupted:
        result.seconds = time.perf_counter() - started
        return result
    if store.has_longterm:
        plan = new_plan(store, "batch")
        result.expired = expire_quarantine(plan, store, time.time() if now is None else now, complete=True)
        decay = plan_decay(store, now)
        plan.updates += decay.updates
        result.decayed = len(decay.updates)
        result.drift = check_drift(store)
        if rejudge and drifted:

            result.rejudged_drifted = plan_rejudge_drifted(store, plan, judges=judges, chain_factory=chain_factory,
                                                           time_box=time_box)
        elif rejudge:

            result.rejudged = plan_rejudge(store, plan, judges=judges, chain_factory=chain_factory, since=since,
                                           prompt_version=prompt_version, time_box=time_box)
        if plan.updates or plan.events:
            apply_updates(store, plan)
        if curate:
            result.curation = run_curate(store, judges=judges, chain_factory=chain_factory, time_box=time_box)
            result.curated = curate_summary(result.curation)
    result.seconds = time.perf_counter() - started
    return result
