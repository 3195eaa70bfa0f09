"""Changes to the long-term store outside a session: disputes, backfill, decay, re-judging.

Each function builds a plan of ``MemoryUpdate``s (reading only) and :func:`apply_updates` writes it
through the same journaled ``apply`` stage as a session run, under the store lock, so these changes
are explainable in the event log, undoable and crash-safe like any other run.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.model.plan import MemoryUpdate, Plan, step_confidence
from consolidate.pipeline.run import apply_plan

#: Confidence decays one step when an entry has not been confirmed for this many days, at most once
#: per period (docs/design.md#evidence-and-confidence: decay).
DECAY_DAYS = 180


def new_plan(store, label: str) -> Plan:
    """An empty maintenance plan (``session_id`` is ``maintenance:<label>``; no session rows)."""
    return Plan(session_id=f"maintenance:{label}", outcome="maintenance", scope=store.project)


def apply_updates(store, plan: Plan, lock_timeout: float = 60.0) -> Plan:
    """Write a maintenance plan (journal first, under the store lock; consolidate.pipeline.run.apply_plan)."""

    apply_plan(store, plan, lock_timeout)
    replica = store.replica()
    if replica is not None:
        replica.push()  # a store in a team: forget, batch maintenance and resolutions reach it too
    return plan


def disputes(store) -> list[dict[str, Any]]:
    """Disputed entries: dicts with ``id``, ``document``, ``metadata``, ``with`` (ids it disputes)."""
    rows = store.longterm().with_status("disputed")
    by_id = {r["id"]: r for r in rows}
    for r in rows:
        m = r["metadata"]
        partners = {m.get("disputed_with")} | {json.loads(m.get("provenance") or "{}").get("disputes")}
        partners |= {o["id"] for o in rows if o["metadata"].get("disputed_with") == r["id"]
                     or json.loads(o["metadata"].get("provenance") or "{}").get("disputes") == r["id"]}
        r["with"] = sorted(p for p in partners if p and p in by_id and p != r["id"])
    return rows


def plan_resolve(store, dispute_id: str, keep_id: str) -> Plan:
    """Settle a dispute: ``keep_id`` becomes active, every entry it disputes with is archived with a
    ``superseded_by`` link. Raises BadInput when the ids are not a dispute."""
    rows = {r["id"]: r for r in disputes(store)}
    if dispute_id not in rows:
        raise BadInput(f"{dispute_id} is not a disputed entry (see `consolidate disputes`)", memory_id=dispute_id)
    group = {dispute_id, *rows[dispute_id]["with"]}
    if keep_id not in group:
        raise BadInput(f"{keep_id} is not part of the dispute of {dispute_id} ({', '.join(sorted(group))})",
                       memory_id=keep_id)
    plan = new_plan(store, "resolve")
    plan.updates.append(MemoryUpdate(keep_id, "update", {"status": "active"}, event="memory.dispute_resolved",
                                     reason="kept by the user"))
    for other in sorted(group - {keep_id}):
        plan.updates.append(MemoryUpdate(other, "archive", {"status": "superseded", "superseded_by": keep_id},
                                         event="memory.superseded", reason=f"dispute settled in favour of {keep_id}",
                                         edges=[[keep_id, "supersedes"]]))
    return plan


_DEFAULTS = {"type": "fact", "status": "active", "tier": "durable", "evidence": "inferred"}
_UNKNOWN = ("session_id", "run_id", "source", "prompt_version", "last_confirmed")


def plan_backfill(store) -> Plan:
    """Best-effort metadata for entries that lack it (written by older versions or other tools):
    type ``fact``, status ``active``, tier ``durable``, evidence ``inferred`` and the confidence
    that follows (low), scope = the store's project; ``unknown`` for what cannot be guessed
    (session_id, run_id, source, prompt_version, last_confirmed). The filled fields are listed in
    ``backfilled`` so nobody mistakes a guess for a record."""
    plan = new_plan(store, "backfill")
    for row in store.longterm().all():
        meta = row["metadata"] or {}
        changes: dict[str, Any] = {}
        for key, value in _DEFAULTS.items():
            if key not in meta:
                changes[key] = value
        if "confidence" not in meta:
            changes["confidence"] = "low" if (meta.get("evidence") or changes.get("evidence")) == "inferred" else "high"
        if "scope" not in meta:
            changes["scope"] = store.project
        for key in _UNKNOWN:
            if key not in meta:
                changes[key] = "unknown"
        if "provenance" not in meta:
            changes["provenance"] = json.dumps({"source": meta.get("source") or "unknown", "backfilled": True})
        if changes:
            changes["backfilled"] = ",".join(sorted(changes))
            plan.updates.append(MemoryUpdate(row["id"], "update", changes, event="memory.backfilled",
                                             reason="missing metadata filled best-effort; unknowns marked"))
    return plan


def plan_decay(store, now: float | None = None, days: float = DECAY_DAYS) -> Plan:
    """One confidence step down for active entries not confirmed (nor decayed) for ``days`` days."""
    now = time.time() if now is None else now
    today = _dt.datetime.fromtimestamp(now, _dt.timezone.utc).date()
    cutoff = (today - _dt.timedelta(days=days)).isoformat()
    plan = new_plan(store, "decay")
    for row in store.longterm().with_status("active"):
        m = row["metadata"]
        last = max(m.get("last_confirmed") or "", m.get("last_decayed") or "")
        if last and last != "unknown" and last < cutoff and m.get("confidence") != "low":
            plan.updates.append(MemoryUpdate(
                row["id"], "update", {"confidence": step_confidence(m.get("confidence", "low"), -1),
                                      "last_decayed": today.isoformat()},
                event="memory.decayed", reason=f"not confirmed for more than {days:g} days"))
    return plan
