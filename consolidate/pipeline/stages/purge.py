"""Stage 2, purge: rows past their TTL are deleted (not archived) and never judged; quarantined
long-term entries idle past the quarantine TTL (default 14 days, ``CONSOLIDATE_QUARANTINE_TTL_DAYS``)
expire (archived, out of the index: :func:`expire`, which the pipeline runs after the keepers are
embedded, before the store lock: the run's first read of the index)."""

from __future__ import annotations

import datetime as _dt

from consolidate.model.plan import MemoryUpdate
from consolidate.core.settings import QUARANTINE_TTL_DAYS as TTL
from consolidate.pipeline.deferral import expire_waiting
from consolidate.store.index.longterm import _where

#: Days a quarantined entry may stay unconfirmed before it expires (docs/design.md#quarantine).
QUARANTINE_TTL_DAYS = 14.0


def quarantine_ttl_days() -> float:
    """``$CONSOLIDATE_QUARANTINE_TTL_DAYS`` (consolidate/core/settings.py), else QUARANTINE_TTL_DAYS.
    Raises ConfigError for a value that is not a positive number of days."""

    return TTL.get() if TTL.raw() is not None else QUARANTINE_TTL_DAYS


def run(plan, ctx):
    """Load the session's notes into the plan; mark expired ones ``purged`` for deletion."""
    plan.notes = ctx.store.sessions.notes(plan.session_id)
    expired = [n.id for n in plan.notes if n.expires_at is not None and n.expires_at <= ctx.now]
    for nid in expired:
        plan.note_status[nid] = "purged"
    if expired:
        plan.delete_note_ids.extend(expired)
        plan.decide("note.purged", note_ids=expired, reason="TTL expired before the session ended")

    expire_waiting(plan, ctx)  # notes that waited for a judge past their bound
    return plan


def expire(plan, ctx):
    """Expire idle quarantine (:func:`expire_quarantine`) when a long-term tier exists. The pipeline
    calls this after the keepers are embedded, as the run's first read of the index: the model can
    be released before the index is loaded (consolidate.pipeline.run; issue 18)."""
    if ctx.store.has_longterm:
        expire_quarantine(plan, ctx.store, ctx.now)
    return plan


def expire_quarantine(plan, store, now: float, ttl_days: float | None = None, complete: bool = False) -> int:
    """Add an ``archive`` update for every quarantined entry last confirmed more than ``ttl_days``
    ago; returns how many. A run looks only at entries last confirmed in the WINDOW_DAYS days before
    the cutoff (an index lookup, whatever the store's size); ``complete`` (``consolidate batch``)
    reads every quarantined entry that is not recent, so an entry older than that window (a store
    unused for more than a year, an entry restored with an old date, one without a date) expires
    at the next batch."""
    ttl_days = quarantine_ttl_days() if ttl_days is None else ttl_days
    today = _dt.datetime.fromtimestamp(now, _dt.timezone.utc).date()
    cutoff = (_dt.datetime.fromtimestamp(now, _dt.timezone.utc) - _dt.timedelta(days=ttl_days)).date().isoformat()
    n = 0
    for row in _quarantined_before(store.longterm(), cutoff, today, complete):
        if (row["metadata"].get("last_confirmed") or "") < cutoff:
            plan.updates.append(MemoryUpdate(row["id"], "archive", {"status": "expired"}, event="memory.expired",
                                             reason=f"quarantined and unconfirmed for more than {ttl_days:g} days"))
            n += 1
    return n


#: Most dates the index is asked to leave out (a longer TTL reads every quarantined entry).
MAX_WINDOW_DAYS = 400
#: Days before the cutoff a run looks at (see :func:`expire_quarantine`).
WINDOW_DAYS = 400


def _quarantined_before(lt, cutoff: str, today, complete: bool = False) -> list[dict]:
    """The quarantined entries that may be last confirmed before ``cutoff`` (ISO date), metadata only.
    A run asks the index for those confirmed on one of the WINDOW_DAYS dates before the cutoff: an
    index lookup that reads only what expires (at 100,000 memories, 4,000 quarantined: about 16 ms
    against 1.2 s for reading every quarantined entry and 0.2-0.3 s for leaving the recent dates out;
    benchmarks/bench_scale.py). ``complete``: every quarantined entry not confirmed from the cutoff
    to ``today`` (or all of them when that is more than MAX_WINDOW_DAYS dates). The caller compares
    the dates again."""

    start = _dt.date.fromisoformat(cutoff)
    status = _where(statuses=("quarantined",))
    if not complete:
        window = [(start - _dt.timedelta(days=d)).isoformat() for d in range(1, WINDOW_DAYS + 1)]
        return lt._get_all({"$and": [{"last_confirmed": {"$in": window + [""]}}, status]}, include=("metadatas",))
    days = (today - start).days
    if days < 0 or days > MAX_WINDOW_DAYS:
        return lt.with_status("quarantined", documents=False)
    recent = [(start + _dt.timedelta(days=d)).isoformat() for d in range(days + 1)]
    return lt._get_all({"$and": [status, {"last_confirmed": {"$nin": recent}}]}, include=("metadatas",))
