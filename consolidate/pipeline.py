"""The consolidation pipeline: one ended session through the stages of docs/design.md#the-pipeline.

``run_session`` builds a plan stage by stage (count, purge, secret gate, flag-promote, judge, write
policy, contradiction check, provenance stamp) and hands it to ``apply``, the only stage that writes.
The stages are the typed lists of ``consolidate.stages`` (``SESSION``, ``FAILURE``): each stage says
whether it runs under the store lock. A session with no rows returns after ``count`` without
importing chromadb, litellm or instructor. The long-term read-check-write section (contradiction
check to apply) runs under the store lock; judging and embedding do not hold it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from . import stages
from .plan import Plan
from .stages import Stage
from .store import Store

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
    #: days an unjudged note waits for a judge (None: $CONSOLIDATE_WAIT_DAYS or 7; consolidate/deferral.py)
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
                from judges.registry import build_chain

                self._chain = build_chain(self.judge_specs, store_path=self.store.path)
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
    ``judges`` are judge specs (see ``judges.registry``) or judge objects (``ScriptedJudge(...)``), in
    chain order; ``chain_factory`` a callable returning a
    ready chain (tests). ``time_box`` in seconds bounds the run; judging gets what is left. ``now``
    (Unix seconds) fixes the run's clock for TTLs and dates (simulations; default: the real time).
    ``wait_days`` bounds how long a note no judge answered waits in the session tier for one
    (default ``$CONSOLIDATE_WAIT_DAYS`` or 7; consolidate/deferral.py). ``release_model`` (the
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
    if (plan.note_count == 0 and outcome != "failure") or outcome == "aborted":
        if not dry_run:
            store.sessions.finish(session_id, "done" if outcome != "aborted" else "aborted", None,
                                  {"notes": plan.note_count})
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
    (consolidate.journal.writing). A dry run takes no lock and leaves out the stages that write.
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
        from .journal import writing

        with writing(ctx.store, lock_timeout):
            for stage in locked:
                _run_stage(stage, plan, ctx)
    plan.finished = True
    return plan


def apply_plan(store: Store, plan: Plan, lock_timeout: float = LOCK_TIMEOUT) -> Plan:
    """Write a plan built outside a session run (maintenance, consolidate/maintenance.py) through the
    same locked, journaled ``apply`` stage as a session run. Raises StoreLocked like
    :func:`run_stages`, StoreError when a write fails (the run rolled back or kept in the journal)."""
    return run_stages((stages.APPLY,), plan, RunContext(store=store), lock_timeout)


def _run_stage(stage: Stage, plan: Plan, ctx: RunContext) -> None:
    """Run one stage, its seconds recorded in ``plan.stage_seconds`` under its name."""
    t = time.perf_counter()
    stage.run(plan, ctx)
    plan.stage_seconds[stage.name] = round(time.perf_counter() - t, 6)


def run_queue(store: Store, *, session_id: str | None = None, stale_after: float = 600.0, **kwargs) -> list[Plan]:
    """Run every pending session end, oldest first (only ``session_id``'s when given); returns the
    plans. Each session end is claimed first, so two processes never consolidate the same session;
    one claimed by a process that died (or longer ago than ``stale_after`` seconds) is taken over.
    Session ends left ``partial`` (notes waiting for a judge) are queued again first when a judge
    can answer now or a waiting note is past its bound (consolidate/deferral.py), so this run judges
    exactly their waiting notes. Without a ``chain_factory`` the sessions of one call share one judge
    chain, so a judge that failed is skipped for the rest of the call (the circuit breaker), not
    tried again, time box after time box, for every waiting session. Keyword arguments go to
    :func:`run_session`; a dry run claims nothing."""
    plans = []
    kwargs = _share_chain(store, kwargs)
    team = _team_mode(store, kwargs)
    _requeue_waiting(store, session_id, kwargs)
    if not kwargs.get("dry_run"):
        from .journal import recover

        recover(store, kwargs.get("lock_timeout", LOCK_TIMEOUT))  # a crashed run first: never consolidated twice
    rows = store.sessions.pending(session_id)
    if team and rows:
        from .team import pull_before_run

        pull_before_run(store)  # the team's memories before any contradiction check (bounded)
    if kwargs.get("dry_run"):
        rows = sorted(rows + _partial_rows(store, session_id), key=lambda r: (r["ended_at"], r["session_id"]))
    for row in rows:
        if kwargs.get("dry_run"):
            if row in store.sessions.queued(row["session_id"]) or row in store.sessions.partial():
                plans.append(run_session(store, row["session_id"], outcome=row["outcome"], reason=row["reason"], **kwargs))
            continue
        plan = run_claimed(store, row["session_id"], stale_after=stale_after, **kwargs)
        if plan is not None:
            plans.append(plan)
    if team:
        from .team import push_after_run

        push_after_run(store)  # failures stay in the outbox for the next run or `consolidate sync`
    return plans


def run_claimed(store: Store, session_id: str, *, stale_after: float = 600.0, **kwargs) -> Plan | None:
    """Claim ``session_id``'s queued session end and consolidate it (:func:`run_session` with
    ``kwargs``); None when it is not queued or another live process holds it (a claim older than
    ``stale_after`` seconds, or of a process that died, is taken over). An exception, Ctrl-C
    included, puts the session end back in the queue and propagates."""
    with store.sessions.claimed(session_id, stale_after=stale_after) as row:
        if row is None:
            return None
        return run_session(store, row["session_id"], outcome=row["outcome"], reason=row["reason"], **kwargs)


def drain(store: Store, *, on_plan: Callable[[Plan], None] | None = None, **kwargs) -> list[Plan]:
    """:func:`run_queue` again until a round consolidates nothing or the queue is empty, so session
    ends queued while it ran are taken too (the worker); ``on_plan(plan)`` is called for each plan
    as its round ends. Returns every plan. Keyword arguments go to :func:`run_queue`."""
    done: list[Plan] = []
    while True:
        plans = run_queue(store, **kwargs)
        for plan in plans:
            if on_plan is not None:
                on_plan(plan)
        done += plans
        if not plans or not store.sessions.pending():
            return done


def _team_mode(store, kwargs: dict) -> bool:
    """Whether this call pulls before and pushes after (a store in a team; not a dry run)."""
    return not kwargs.get("dry_run") and store.sub("team.json").exists()


def _requeue_waiting(store, session_id: str | None, kwargs: dict) -> list[str]:
    """Re-queue partial session ends whose waiting notes can move (not for a dry run)."""
    if kwargs.get("dry_run"):
        return []
    from .deferral import requeue_ready

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
            from judges.registry import build_chain

            box["chain"] = build_chain(judges, store_path=store.path)
        return box["chain"]

    return {**kwargs, "chain_factory": factory}
