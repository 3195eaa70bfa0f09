"""Stage 1, count: how many rows the session has. Zero means the run ends here, having imported
nothing heavy and called no model."""

from __future__ import annotations


def run(plan, ctx):
    """Set ``plan.note_count`` from the session tier."""
    plan.note_count = ctx.store.sessions.count(plan.session_id)
    return plan
