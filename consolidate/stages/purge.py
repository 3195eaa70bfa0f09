"""Stage 2, purge: rows past their TTL are deleted (not archived) and never judged; quarantined
long-term entries idle past the quarantine TTL (default 14 days, ``CONSOLIDATE_QUARANTINE_TTL_DAYS``)
expire (archived, out of the index)."""

from __future__ import annotations

import datetime as _dt
import os

from ..plan import MemoryUpdate

#: Days a quarantined entry may stay unconfirmed before it expires (SPEC section 6).
QUARANTINE_TTL_DAYS = 14.0


def quarantine_ttl_days() -> float:
    try:
        return float(os.environ.get("CONSOLIDATE_QUARANTINE_TTL_DAYS") or QUARANTINE_TTL_DAYS)
    except ValueError:
        return QUARANTINE_TTL_DAYS


def run(plan, ctx):
    """Load the session's notes into the plan; mark expired ones ``purged`` for deletion."""
    plan.notes = ctx.store.sessions.notes(plan.session_id)
    expired = [n.id for n in plan.notes if n.expires_at is not None and n.expires_at <= ctx.now]
    for nid in expired:
        plan.note_status[nid] = "purged"
    if expired:
        plan.delete_note_ids.extend(expired)
        plan.decide("note.purged", note_ids=expired, reason="TTL expired before the session ended")
    from ..deferral import expire_waiting

    expire_waiting(plan, ctx)  # notes that waited for a judge past their bound
    if ctx.store.has_longterm:  # a long-term tier exists: expire idle quarantine
        expire_quarantine(plan, ctx.store, ctx.now)
    return plan


def expire_quarantine(plan, store, now: float, ttl_days: float | None = None) -> int:
    """Add an ``archive`` update for every quarantined entry last confirmed more than ``ttl_days``
    ago; returns how many."""
    ttl_days = quarantine_ttl_days() if ttl_days is None else ttl_days
    today = _dt.datetime.fromtimestamp(now, _dt.timezone.utc).date()
    cutoff = (_dt.datetime.fromtimestamp(now, _dt.timezone.utc) - _dt.timedelta(days=ttl_days)).date().isoformat()
    n = 0
    for row in _quarantined_before(store.longterm(), cutoff, today):
        if (row["metadata"].get("last_confirmed") or "") < cutoff:
            plan.updates.append(MemoryUpdate(row["id"], "archive", {"status": "expired"}, event="memory.expired",
                                             reason=f"quarantined and unconfirmed for more than {ttl_days:g} days"))
            n += 1
    return n


#: Most dates the index is asked to leave out (a longer TTL reads every quarantined entry).
MAX_WINDOW_DAYS = 400


def _quarantined_before(lt, cutoff: str, today) -> list[dict]:
    """The quarantined entries that may be last confirmed before ``cutoff`` (ISO date), metadata only:
    the index leaves out those confirmed on a date from ``cutoff`` to ``today``, so a run reads the
    few that expire instead of every quarantined entry (at 100,000 memories, 4,000 quarantined:
    0.3 s instead of 1.3 s; benchmarks/bench_scale.py). The caller compares the dates again."""
    from ..longterm import _where

    start = _dt.date.fromisoformat(cutoff)
    days = (today - start).days
    if days < 0 or days > MAX_WINDOW_DAYS:
        return lt.with_status("quarantined", documents=False)
    recent = [(start + _dt.timedelta(days=d)).isoformat() for d in range(days + 1)]
    where = {"$and": [_where(statuses=("quarantined",)), {"last_confirmed": {"$nin": recent}}]}
    return lt._get_all(where, include=("metadatas",))
