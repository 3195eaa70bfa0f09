"""Stage 2, purge: rows past their TTL are deleted (not archived) and never judged."""

from __future__ import annotations


def run(plan, ctx):
    """Load the session's notes into the plan; mark expired ones ``purged`` for deletion."""
    plan.notes = ctx.store.sessions.notes(plan.session_id)
    expired = [n.id for n in plan.notes if n.expires_at is not None and n.expires_at <= ctx.now]
    for nid in expired:
        plan.note_status[nid] = "purged"
    if expired:
        plan.delete_note_ids.extend(expired)
        plan.decide("note.purged", note_ids=expired, reason="TTL expired before the session ended")
    return plan
