"""Stage 1, count: how many rows the session has, and the notes files it recorded. Zero notes and no
notes file means the run ends here, having imported nothing heavy and called no model."""

from __future__ import annotations


def run(plan, ctx):
    """Set ``plan.note_count`` and ``plan.notes_files`` from the session tier."""
    plan.note_count = ctx.store.sessions.count(plan.session_id)
    plan.notes_files = ctx.store.sessions.notes_files(plan.session_id)
    return plan
