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
    cutoff = (_dt.datetime.fromtimestamp(now, _dt.timezone.utc) - _dt.timedelta(days=ttl_days)).date().isoformat()
    n = 0
    for row in store.longterm().with_status("quarantined"):
        if (row["metadata"].get("last_confirmed") or "") < cutoff:
            plan.updates.append(MemoryUpdate(row["id"], "archive", {"status": "expired"}, event="memory.expired",
                                             reason=f"quarantined and unconfirmed for more than {ttl_days:g} days"))
            n += 1
    return n
