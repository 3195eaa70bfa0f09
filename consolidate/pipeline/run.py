"""The consolidation pipeline: one ended session through the stages of docs/design.md#the-pipeline.

``run_session`` builds a plan stage by stage (count, purge, secret gate, flag-promote, judge, write
policy, contradiction check, provenance stamp) and hands it to ``apply``, the only stage that writes.
The stages are the typed lists of ``consolidate.pipeline.stages`` (``SESSION``, ``FAILURE``): each stage says
whether it runs under the store lock. A session with no rows returns after ``count`` without
importing chromadb, litellm or instructor. The long-term read-check-write section (contradiction
check to apply) runs under the store lock; judging and embedding do not hold it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from consolidate.pipeline import stages
from consolidate.pipeline.harvest import finish_pending
from consolidate.model.plan import Plan
from consolidate.pipeline.stages import Stage
from consolidate.pipeline.stages import apply as apply_stage
from consolidate.store.replica import Replica
from consolidate.store.hook_log import log
from consolidate.store.store import Store
from consolidate.store.layout import STORE_CONFIG
from consolidate.rules.redaction import error_text
from consolidate.model.plan import run_summary
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from consolidate.pipeline.deferral import requeue_ready

#: Default time box of one run, in seconds (the whole run: judging gets what is left).
DEFAULT_TIME_BOX = 120.0
#: Seconds to wait for the store lock before giving up with StoreLocked.
LOCK_TIMEOUT = 60.0


@dataclass
class RunContext:
    """What stages may read: the store, the judge chain (built on first use), the clock (Unix
    seconds, fixed at the start of the run) and whether this is a dry run."""

    store: Store
    judge_specs: list[str] | None = None
    chain_factory: Callable | None = None
    now: float = field(default_factory=time.time)
    dry_run: bool = False
    #: days an unjudged note waits for a judge (None: $CONSOLIDATE_WAIT_DAYS or 7; consolidate/pipeline/deferral.py)
    wait_days: float | None = None
    #: release the embedding model after the keepers are embedded, before the index is first read
    #: (the worker: one thread; Store.release_embedder)
    release_model: bool = False
    _chain: object = None

    def chain(self):
        """The judge chain: ``chain_factory()`` when given, else built from the judge specs."""
        if self._chain is None:
            if self.chain_factory is not None:
                self._chain = self.chain_factory()
            else:
                from consolidate.judges.registry import build_chain  # noqa: PLC0415 - heavy (pydantic): loaded only when used

                self._chain = build_chain(self.judge_specs, store_config=self.store.sub(STORE_CONFIG))
        return self._chain


def run_session(store: Store, session_id: str, *, outcome: str = "success", reason: str | None = None,
                judges: list | None = None, chain_factory: Callable | None = None,
                dry_run: bool = False, time_box: float | None = DEFAULT_TIME_BOX,
                lock_timeout: float = LOCK_TIMEOUT, now: float | None = None,
                wait_days: float | None = None, release_model: bool = False) -> Plan:
    """Consolidate one session and return its plan (applied unless ``dry_run``).

    ``outcome`` gates everything (docs/design.md#session-outcomes): ``success`` runs every stage; ``failure``
    promotes nothing and records ``session.failed`` (also for a session without notes, e.g. a
    workspace session that extracted nothing), keeping the rows; ``aborted`` touches nothing.
    ``judges`` are judge specs (see ``consolidate.judges.registry``) or judge objects (``ScriptedJudge(...)``), in
    chain order; ``chain_factory`` a callable returning a
    ready chain (tests). ``time_box`` in seconds bounds the run; judging gets what is left. ``now``
    (Unix seconds) fixes the run's clock for TTLs and dates (simulations; default: the real time).
    ``wait_days`` bounds how long a note no judge answered waits in the session tier for one
    (default ``$CONSOLIDATE_WAIT_DAYS`` or 7; consolidate/pipeline/deferral.py). ``release_model`` (the
    worker, one thread): the embedding model is released after the keepers are embedded when the
    index is not open yet, so the process never holds both (Store.release_embedder).

    Raises StoreLocked when the store lock is not free within ``lock_timeout`` seconds; judge
    failures never raise (they become events and unjudged notes)."""
    ctx = RunContext(store=store, judge_specs=judges, chain_factory=chain_factory, dry_run=dry_run,
                     wait_days=wait_days, release_model=release_model)
    if now is not None:
        ctx.now = now
    plan = Plan(session_id=session_id, outcome=outcome, reason=reason, scope=store.project,
                deadline=time.time() + time_box if time_box else None, started_at=ctx.now)
    _run_stage(stages.COUNT, plan, ctx)
    if (plan.note_count == 0 and not plan.notes_files and outcome != "failure") or outcome == "aborted":
        if not dry_run:  # a run of its own (listed by `consolidate runs`, undone as one that wrote nothing)

            store.sessions.finish(session_id, "done" if outcome != "aborted" else "aborted", plan.run_id,
                                  run_summary(plan))
        plan.finished = True
        return plan
    if outcome == "failure":
        plan.decide("session.failed", reason=reason or "the session failed", notes_kept=plan.note_count)
        plan.notes = store.sessions.notes(session_id)
        # a failure without notes still leaves its session.failed event
        return run_stages(stages.FAILURE if plan.notes else (stages.APPLY,), plan, ctx, lock_timeout)
    return run_stages(stages.SESSION, plan, ctx, lock_timeout)


def run_stages(run: Sequence[Stage], plan: Plan, ctx: RunContext, lock_timeout: float = LOCK_TIMEOUT) -> Plan:
    """Run ``run``'s stages on ``plan``: the unlocked ones in order, then the locked ones in order
    under one hold of the store lock, after the runs a crash left in the journal are finished
    (consolidate.pipeline.stages.apply.writing). A dry run takes no lock and leaves out the stages that write.
    Returns the plan (``finished`` once applied). Raises StoreLocked when the lock is not free within
    ``lock_timeout`` seconds."""
    for stage in run:
        if not stage.locked:
            _run_stage(stage, plan, ctx)
    locked = [s for s in run if s.locked]
    if ctx.dry_run:
        for stage in locked:
            if not stage.writes:
                _run_stage(stage, plan, ctx)
        return plan
    if locked:
        with apply_stage.writing(ctx.store, lock_timeout):
            for stage in locked:
                _run_stage(stage, plan, ctx)
    plan.finished = True
    return plan


def apply_plan(store: Store, plan: Plan, lock_timeout: float = LOCK_TIMEOUT) -> Plan:
    """Write a plan built outside a session run (maintenance, consolidate/pipeline/maintenance.py) through the
    same locked, journaled ``apply`` stage as a session run. Raises StoreLocked like
    :func:`run_stages`, StoreError when a write fails (the run rolled back or kept in the journal)."""
    return run_stages((stages.APPLY,), plan, RunContext(store=store), lock_timeout)


def _run_stage(stage: Stage, plan: Plan, ctx: RunContext) -> None:
    """Run one stage, its seconds recorded in ``plan.stage_seconds`` under its name."""
    t = time.perf_counter()
    stage.run(plan, ctx)
    plan.stage_seconds[stage.name] = round(time.perf_counter() - t, 6)


def run_queue(store: Store, *, session_id: str | None = None, stale_after: float = 600.0, rounds: bool = False,
              on_done: Callable[[Taken], None] | None = None, **kwargs) -> "Drained":
    """Run every pending session end, oldest first (only ``session_id``'s when given); returns the
    plans. Each session end is claimed first, so two processes never consolidate the same session;
    one claimed by a process that died (or longer ago than ``stale_after`` seconds) is taken over.
    Session ends left ``partial`` (notes waiting for a judge) are queued again first when a judge
    can answer now or a waiting note is past its bound (consolidate/pipeline/deferral.py), so this run judges
    exactly their waiting notes. Without a ``chain_factory`` the sessions of one call share one judge
    chain, so a judge that failed is skipped for the rest of the call (the circuit breaker), not
    tried again, time box after time box, for every waiting session. The sessions are taken by
    :func:`drain` (``rounds`` and ``on_done`` are its own: the worker drains until the queue stays
    empty). Keyword arguments go to :func:`run_session`; a dry run claims nothing."""
    kwargs = _share_chain(store, kwargs)
    _requeue_waiting(store, session_id, kwargs)
    return drain(store, session_id=session_id, stale_after=stale_after, rounds=rounds, on_done=on_done, **kwargs)


def run_claimed(store: Store, session_id: str, *, stale_after: float = 600.0, **kwargs) -> Plan | None:
    """Claim ``session_id``'s queued session end and consolidate it (:func:`run_session` with
    ``kwargs``); None when it is not queued or another live process holds it (a claim older than
    ``stale_after`` seconds, or of a process that died, is taken over). An exception, Ctrl-C
    included, puts the session end back in the queue and propagates."""
    with store.sessions.claimed(session_id, stale_after=stale_after) as row:
        if row is None:
            return None
        _finish_harvests(store, row["session_id"])
        return run_session(store, row["session_id"], outcome=row["outcome"], reason=row["reason"], **kwargs)


def _finish_harvests(store: Store, session_id: str) -> None:
    """Make the transcript harvests of ``session_id`` that its hooks recorded and did not finish (a
    hook killed at its time budget: consolidate/pipeline/harvest.py), before its notes are counted;
    one line each in ``logs/hook.log``. Never raises: a harvest that fails stays pending, logged."""
    try:
        finish_pending(store.sessions, [session_id], log=lambda line: log(store.path, line))
    except Exception as exc:  # noqa: BLE001 - the notes already there are consolidated anyway
        log(store.path, f"session={session_id}: its pending harvest could not be checked: {error_text(exc, typed=True)}")


@dataclass
class Taken:
    """One session end :func:`drain` took from the queue: its queue ``row`` (``session_id``,
    ``outcome``, ``reason``, ``ended_at``), the ``plan`` of its run (None when another live process
    holds it), or the ``error`` its run raised (only with ``keep_going``)."""

    row: dict
    plan: Plan | None = None
    error: BaseException | None = None


def drain(store: Store, *, session_id: str | None = None, concurrency: int | None = None, rounds: bool = False,
          keep_going: bool = False, on_done: Callable[[Taken], None] | None = None, stale_after: float = 600.0,
          **kwargs) -> "Drained":
    """The queue drain every consolidation of queued session ends goes through (``run``, the worker,
    ``batch``): a run a crash left in the journal is finished first (never consolidated twice), the
    team's memories are pulled before the first run (a store in a team) and the outbox pushed after,
    and every pending session end (only ``session_id``'s when given), oldest first, is claimed, run
    and released by :func:`run_claimed` with ``kwargs`` (:func:`run_session`'s). ``on_done(Taken)``
    is called as each one finishes. Returns the plans of the runs (the session ends another process
    held are left out) as a :class:`Drained`, which also holds the runs it finished after a crash
    and the team push's result.

    ``concurrency``: None runs one session at a time in this thread (the worker: one model in
    memory); ``n`` >= 1 runs up to ``n`` at once in a pool of threads (``batch``: their judge calls
    overlap, the read-check-write section of each is serialised by the store lock), and Ctrl-C there
    stops taking new session ends, lets the running ones finish their (journaled) apply and then
    raises KeyboardInterrupt; the rest stay in the queue. ``rounds``: drain again until a round
    consolidates nothing or the queue is empty (session ends queued meanwhile). An exception in a
    run propagates (the session end back in the queue), after the running ones finished; with
    ``keep_going`` it is reported as ``Taken.error`` and the drain goes on. A dry run claims
    nothing and shows what the queued and partial session ends would do."""
    dry_run = bool(kwargs.get("dry_run"))
    plans = Drained()
    if not dry_run:
        plans.replayed = _replayed(store, apply_stage.recover(store, kwargs.get("lock_timeout", LOCK_TIMEOUT)))
    replica = _replica(store, kwargs)
    pulled = False
    while True:
        rows = store.sessions.pending(session_id)
        if replica is not None and rows and not pulled:
            replica.pull()  # the team's memories before any contradiction check (bounded)
            pulled = True
        if dry_run:
            rows = sorted(rows + _partial_rows(store, session_id), key=lambda r: (r["ended_at"], r["session_id"]))
            for row in rows:
                if row in store.sessions.queued(row["session_id"]) or row in store.sessions.partial():
                    plans.append(run_session(store, row["session_id"], outcome=row["outcome"], reason=row["reason"],
                                             **kwargs))
            return plans

        def one(row: dict) -> Taken:
            return Taken(row, run_claimed(store, row["session_id"], stale_after=stale_after, **kwargs))

        if concurrency is None:
            taken = _take_here(rows, one, keep_going, on_done)
        else:
            taken = _take_in_threads(rows, one, concurrency, keep_going, on_done)
        round_plans = [t.plan for t in taken if t.plan is not None]
        plans.extend(round_plans)
        if not rounds or not round_plans or not store.sessions.pending(session_id):
            break
    if replica is not None:
        plans.team_push = replica.push()  # failures stay in the outbox for the next run or `consolidate sync`
    return plans


class Drained(list):
    """The plans of one :func:`drain` (a list of :class:`Plan`), with what happened around them:
    ``replayed``, the runs a crash had left in the journal that the drain finished first
    (``{"run_id", "session_id", "result"}``, ``result`` the run's summary); ``team_push``, the
    result of the push after the runs (``{"ok": False, "error", ...}`` when it failed; None: no
    push). ``consolidate.model.report.drain_notices`` says them."""

    def __init__(self, plans=()):
        super().__init__(plans)
        self.replayed: list[dict] = []
        self.team_push: dict | None = None


def _replayed(store, run_ids: list[str]) -> list[dict]:
    """The session and summary of each run a crash left in the journal, now finished."""
    if not run_ids:
        return []
    ends = {e["run_id"]: e for e in store.sessions.last_runs(10_000) if e.get("run_id") in run_ids}
    return [{"run_id": r, "session_id": (ends.get(r) or {}).get("session_id", "?"),
             "result": (ends.get(r) or {}).get("result")} for r in run_ids]


def _finished(taken: Taken, out: list[Taken], on_done: Callable[[Taken], None] | None) -> None:
    out.append(taken)
    if on_done is not None:
        on_done(taken)


def _take_here(rows: list[dict], one: Callable[[dict], Taken], keep_going: bool,
               on_done: Callable[[Taken], None] | None) -> list[Taken]:
    """:func:`drain`'s rows one after another in this thread."""
    out: list[Taken] = []
    for row in rows:
        try:
            taken = one(row)
        except Exception as exc:
            if not keep_going:
                raise
            taken = Taken(row, error=exc)
        _finished(taken, out, on_done)
    return out


def _take_in_threads(rows: list[dict], one: Callable[[dict], Taken], concurrency: int, keep_going: bool,
                     on_done: Callable[[Taken], None] | None) -> list[Taken]:
    """:func:`drain`'s rows, up to ``concurrency`` at once in a pool of threads."""
    width = max(1, concurrency)
    out: list[Taken] = []
    queue = list(rows)
    futures: dict = {}
    failed: BaseException | None = None
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="drain")

    def collect(future, row) -> None:
        nonlocal failed
        try:
            taken = future.result()
        except Exception as exc:  # one session's error: reported, or raised once the running ones finished
            if not keep_going:
                failed = failed or exc
                return
            taken = Taken(row, error=exc)
        _finished(taken, out, on_done)

    try:
        while (queue and failed is None) or futures:
            while queue and failed is None and len(futures) < width:
                row = queue.pop(0)
                futures[pool.submit(one, row)] = row
            done, _ = wait(list(futures), return_when=FIRST_COMPLETED)
            for f in done:
                collect(f, futures.pop(f))
    except KeyboardInterrupt:
        queue.clear()
        for f, row in list(futures.items()):  # the running sessions finish their journaled apply
            try:
                collect(f, row)
            except BaseException as exc:  # noqa: BLE001 - reported, the interruption goes on
                _finished(Taken(row, error=exc), out, on_done)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    if failed is not None:
        raise failed
    return out


def _replica(store, kwargs: dict) -> Replica | None:
    """The replica this call pulls from before and pushes to after (a store in a team, not a dry
    run: consolidate/store/replica.py), else None."""
    return None if kwargs.get("dry_run") else store.replica()


def _requeue_waiting(store, session_id: str | None, kwargs: dict) -> list[str]:
    """Re-queue partial session ends whose waiting notes can move (not for a dry run)."""
    if kwargs.get("dry_run"):
        return []

    return requeue_ready(store, judges=kwargs.get("judges"), chain_factory=kwargs.get("chain_factory"),
                         now=kwargs.get("now"), session_id=session_id)


def _partial_rows(store, session_id: str | None) -> list[dict]:
    """Partial session ends (a dry run shows what a run would do with their waiting notes)."""
    return [r for r in store.sessions.partial() if session_id is None or r["session_id"] == session_id]


def _share_chain(store, kwargs: dict) -> dict:
    """``kwargs`` with a ``chain_factory`` that builds the configured chain once, on first use, and
    hands the same chain to every session of the call (its circuit breaker included)."""
    if kwargs.get("chain_factory") is not None:
        return kwargs
    box: dict = {}
    judges = kwargs.get("judges")

    def factory():
        if "chain" not in box:
            from consolidate.judges.registry import build_chain  # noqa: PLC0415 - heavy (pydantic): loaded only when used

            box["chain"] = build_chain(judges, store_config=store.sub(STORE_CONFIG))
        return box["chain"]

    return {**kwargs, "chain_factory": factory}
