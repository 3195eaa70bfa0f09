"""The consolidation pipeline: one ended session through the stages of SPEC section 4.

``run_session`` builds a plan stage by stage (count, purge, secret gate, flag-promote, judge, write
policy, contradiction check, provenance stamp) and hands it to ``apply``, the only stage that writes.
A session with no rows returns after ``count`` without importing chromadb, litellm or instructor.
The long-term read-check-write section (contradiction check to apply) runs under the store lock;
judging does not hold it.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from typing import Callable

from .plan import Plan
from .stages import ORDER
from .store import Store

#: Default time box of one run, in seconds (the whole run: judging gets what is left).
DEFAULT_TIME_BOX = 120.0
#: Seconds to wait for the store lock before giving up with StoreLocked.
LOCK_TIMEOUT = 60.0

_LOCKED_STAGES = ("contradiction", "provenance", "apply")


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


def _stage(name: str):
    return importlib.import_module(f"consolidate.stages.{name}").run


def run_session(store: Store, session_id: str, *, outcome: str = "success", reason: str | None = None,
                judges: list | None = None, chain_factory: Callable | None = None,
                dry_run: bool = False, time_box: float | None = DEFAULT_TIME_BOX,
                lock_timeout: float = LOCK_TIMEOUT, now: float | None = None,
                wait_days: float | None = None) -> Plan:
    """Consolidate one session and return its plan (applied unless ``dry_run``).

    ``outcome`` gates everything (SPEC section 3): ``success`` runs every stage; ``failure``
    promotes nothing and records ``session.failed`` (also for a session without notes, e.g. a
    workspace session that extracted nothing), keeping the rows; ``aborted`` touches nothing.
    ``judges`` are judge specs (see ``judges.registry``) or judge objects (``ScriptedJudge(...)``), in
    chain order; ``chain_factory`` a callable returning a
    ready chain (tests). ``time_box`` in seconds bounds the run; judging gets what is left. ``now``
    (Unix seconds) fixes the run's clock for TTLs and dates (simulations; default: the real time).
    ``wait_days`` bounds how long a note no judge answered waits in the session tier for one
    (default ``$CONSOLIDATE_WAIT_DAYS`` or 7; consolidate/deferral.py).

    Raises StoreLocked when the store lock is not free within ``lock_timeout`` seconds; judge
    failures never raise (they become events and unjudged notes)."""
    ctx = RunContext(store=store, judge_specs=judges, chain_factory=chain_factory, dry_run=dry_run,
                     wait_days=wait_days)
    if now is not None:
        ctx.now = now
    plan = Plan(session_id=session_id, outcome=outcome, reason=reason, scope=store.project,
                deadline=time.time() + time_box if time_box else None, started_at=ctx.now)
    t0 = time.perf_counter()
    _stage("count")(plan, ctx)
    plan.stage_seconds["count"] = round(time.perf_counter() - t0, 6)
    if (plan.note_count == 0 and outcome != "failure") or outcome == "aborted":
        if not dry_run:
            store.sessions.finish(session_id, "done" if outcome != "aborted" else "aborted", None,
                                  {"notes": plan.note_count})
        plan.finished = True
        return plan
    if outcome == "failure":
        plan.decide("session.failed", reason=reason or "the session failed", notes_kept=plan.note_count)
        plan.notes = store.sessions.notes(session_id)
        if plan.notes:  # a failure without notes still leaves its session.failed event
            _run_timed("secret_gate", plan, ctx)  # the kept rows are redacted in place by apply
            _run_timed("failure_link", plan, ctx)
        return _apply(plan, ctx, lock_timeout)
    for name in ORDER[1:]:
        if name in _LOCKED_STAGES:
            from .stages.contradiction import embed_keepers

            _timed("embed", embed_keepers, plan, ctx)  # outside the lock: runs embed in parallel
            return _apply(plan, ctx, lock_timeout, start=name)
        _run_timed(name, plan, ctx)
    return plan  # not reached: the loop returns at the first locked stage


def _apply(plan: Plan, ctx: RunContext, lock_timeout: float, start: str = "apply") -> Plan:
    """Run the stages from ``start`` to apply under the store lock (none for a dry run)."""
    names = ORDER[ORDER.index(start):]
    if ctx.dry_run:
        for name in names[:-1]:
            _run_timed(name, plan, ctx)
        return plan
    with ctx.store.lock(lock_timeout):
        from .stages.apply import replay

        replay(ctx.store)
        for name in names:
            _run_timed(name, plan, ctx)
    plan.finished = True
    return plan


def _run_timed(name: str, plan: Plan, ctx: RunContext) -> None:
    _timed(name, _stage(name), plan, ctx)


def _timed(name: str, fn, plan: Plan, ctx: RunContext) -> None:
    t = time.perf_counter()
    fn(plan, ctx)
    plan.stage_seconds[name] = round(time.perf_counter() - t, 6)


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
    if not kwargs.get("dry_run") and any(store.sub("journal").glob("*.json")):
        # a crashed run first: its session must not be consolidated twice
        from .stages.apply import replay

        with store.lock(kwargs.get("lock_timeout", LOCK_TIMEOUT)):
            replay(store)
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
        claimed = store.sessions.claim(row["session_id"], stale_after=stale_after)
        if claimed is None:
            continue
        try:
            plans.append(run_session(store, claimed["session_id"], outcome=claimed["outcome"],
                                     reason=claimed["reason"], **kwargs))
        except BaseException:
            store.sessions.release(claimed["session_id"])
            raise
    if team:
        from .team import push_after_run

        push_after_run(store)  # failures stay in the outbox for the next run or `consolidate sync`
    return plans


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
