"""Resumed sessions as the session tier records them: the **segment** rule.

An agent session resumed after its end ran or was queued (``claude --resume``: SessionStart with
source ``resume`` on such an id) keeps the end already in the queue as it is; its resumed part
becomes a new session ``<id>+r<n>`` (a segment) whose base is the agent's own session id, recorded in
``hook_sessions`` (consolidate.store.sessions.tables). An end event of ``<id>`` then ends its open
segment, and a note written with the id from before the resume goes to it: the notes after a resume
are consolidated at its next end, and nothing twice (consolidate/agents/hooks/lifecycle.py tells
the whole lifecycle).

Every function takes ``tier``, an object with ``db`` (an autocommit connection to
``sessions.sqlite3``) and ``session_end(session_id)`` (the queued end's row, or None): a
:class:`consolidate.store.sessions.tier.SessionTier`, or the fast SessionStart's
:class:`consolidate.store.sessions.tables.LightTier`. Only the standard library: the fast
SessionStart and the fold of the queue file use it.
"""

from __future__ import annotations

import time

from consolidate.store.sessions.tables import ensure_hook_tables, record_hook_session, segments

#: Between an agent session id and its segment's number: ``abc+r2``.
SEGMENT_SEP = "+r"


def base_of(session_id: str) -> str:
    """The agent's session id of a segment (``abc+r2`` -> ``abc``; any other id -> itself)."""
    return session_id.split(SEGMENT_SEP, 1)[0]


def open_segment(tier, session_id: str) -> str | None:
    """The newest segment of the agent session ``session_id`` that has no end yet, or None."""
    ensure_hook_tables(tier.db)
    for seg in segments(tier.db, session_id):
        if tier.session_end(seg) is None:
            return seg
    return None


def record_start(tier, session_id: str, *, transcript_path: str | None = None, cwd: str | None = None,
                 source: str | None = None, now: float | None = None) -> str:
    """The session a SessionStart of the agent session ``session_id`` opens: ``session_id`` itself,
    or for a session whose end is already recorded (a resume), its open segment or a new one
    (``<id>+r<n>``). Records it in ``hook_sessions`` with its ``transcript_path``, ``cwd`` and
    ``source`` (what the hook payload says; None: not known) and ``now`` (Unix seconds; default: the
    clock); returns its id."""
    ensure_hook_tables(tier.db)
    now = time.time() if now is None else now
    sid = session_id
    if tier.session_end(session_id) is not None:
        segment = open_segment(tier, session_id)
        if segment is not None:
            sid = segment
        else:
            sid = f"{session_id}{SEGMENT_SEP}{len(segments(tier.db, session_id)) + 1}"
    record_hook_session(tier.db, sid, session_id, transcript_path=transcript_path, cwd=cwd, source=source,
                        started_at=now)
    return sid


def session_for_end(tier, session_id: str) -> str:
    """The session an end event of the agent session ``session_id`` ends: its open segment when it
    was resumed, else itself."""
    return open_segment(tier, session_id) or session_id


def resumed_part(tier, session_id: str) -> str:
    """``session_id``, or its open resumed part when the session has an end and was resumed (an
    agent that names the session id it had before the resume writes to the part that will be
    consolidated). Never raises: ``session_id`` when the store cannot tell."""
    try:
        if tier.session_end(session_id) is None:
            return session_id
        return open_segment(tier, session_id) or session_id
    except Exception:  # noqa: BLE001 - a read-only store
        return session_id
