"""The lines that say what a run did, from its counts alone (``run``, ``end``, ``batch``): standard
library only, so ``consolidate end`` prints them without the plan and report modules."""

from __future__ import annotations

import json


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun, singular for one: ``1 group``, ``2 groups``, ``1 memory``, ``0 memories``
    (``plural``: when adding ``s`` is wrong). Every line that counts in words goes through it."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def count_line(summary: dict | None) -> str:
    """A run's counts in words: ``1 durable, 0 quarantined, 0 transient, 0 re-confirmed``."""
    s = summary or {}
    return (f"{s.get('written_durable', 0)} durable, {s.get('written_quarantined', 0)} quarantined,"
            f" {s.get('written_transient', 0)} transient, {s.get('reconfirmed', 0)} re-confirmed"
            + (f", {s['written_disputed']} disputed" if s.get("written_disputed") else "")
            + (f", {s['withdrawn']} withdrawn (their notes no longer in their notes file)" if s.get("withdrawn") else ""))


def result_line(summary: dict | None) -> str:
    """A finished run's queue result in words (``status``'s ``last run:``): ``3 notes: 1 durable,
    1 quarantined, 0 transient, 0 re-confirmed; judges: claude`` (``rejected`` and ``waiting`` when
    there are any)."""
    s = summary or {}
    return (f"{counted(int(s.get('notes', 0) or 0), 'note')}: {count_line(s)}"
            + (f", {s['rejected']} rejected" if s.get("rejected") else "")
            + (f", {s['waiting']} waiting for a judge" if s.get("waiting") else "")
            + f"; judges: {', '.join(s.get('judges') or []) or 'none'}")


def consolidated_line(session_id: str, end: dict) -> str:
    """The line for a session end a run already took (``run --session``, ``end``): its status, run
    and counts, from the queue row (``consolidate.store.sessions.tier.Sessions.session_end``)."""
    status = end.get("status")
    result = end.get("result")
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except ValueError:
            result = None
    run = f", run {end['run_id']}" if end.get("run_id") else ""
    return (f"session {session_id} was already consolidated ({end.get('outcome')}, {status}{run}): "
            f"{count_line(result)}; nothing queued (`consolidate runs` lists it)")
