"""The SessionStart hook on the light entry point (issue 18): the context printed from the start file
(consolidate/store/views/start_file.py), the session recorded on one SQLite connection, nothing of
the package imported but modules of the standard library only.

:func:`session_start` (called by consolidate.agents.hooks.fast, which prints) returns the start
file's text when every stamp still holds (consolidate.store.views.start_file.load), and records the session as the full
hook does: ``hook_sessions`` (consolidate.store.sessions.segments), ``agent_sessions``
(consolidate.store.sessions.agents) and the shown digests (consolidate.store.echo), on one connection
after folding the queue file (consolidate.store.sessions.queue_file). It hands the event to the full
hook (:class:`Fallback`, before writing anything of its own) for a team store, a stale or missing
start file, a store or session database that does not exist yet, a session that already has an end
(a resume: its new part is decided there), sessions whose end never fired (recovered there:
consolidate.agents.hooks.lifecycle), and a queued session end whose harvest its hook did not finish
(a worker is started there). At exit the connection is left to the operating system
(``consolidate.agents.hooks.fast.exit_now``, through :data:`LEFT_OPEN`): SQLite's close-time
checkpoint (two fsyncs, most of a SQLite write's cost here) is left to the next connection that
closes normally; WAL mode keeps every committed write across a process exit.

Only modules of the standard library at run time (``typing`` for type checkers only): the start
file's reader, the session tier's statements (tables), the segment rule, the queue file, the
lifecycle's checks, agent sessions, echo and worker health (the line saying workers are failing).
"""

from __future__ import annotations

import os

from consolidate.agents.hooks.lifecycle import missed_sessions, session_for_start, stranded
from consolidate.store.views.shown import record_digests
from consolidate.store.layout import SESSIONS_DB, TEAM_JSON
from consolidate.store.sessions.agents import insert_start
from consolidate.store.sessions.queue_file import fold_queue_file
from consolidate.store.sessions.segments import session_for_end
from consolidate.store.sessions.tables import LightTier, connect
from consolidate.store.views.start_file import load
from consolidate.store.worker_health import start_line

#: Connections a fast SessionStart leaves open for the process exit (``fast.exit_now`` ends the
#: process without closing them; ``fast.close_left_open`` closes them for an in-process caller).
LEFT_OPEN: list = []


class Fallback(Exception):
    """The full SessionStart hook must handle this event (nothing was written by the fast one)."""


def session_line(sid: str, unrecorded: str | None = None) -> str:
    """What SessionStart tells the agent about its session (printed before the recalled context).
    With ``unrecorded`` (why the session could not be recorded in the store) it claims nothing the
    hook did not do: the MCP ``note`` tool cannot find the session by itself then."""
    if unrecorded:
        return (f"consolidate: this is session {sid}, but it could not be recorded in the store ({unrecorded}):"
                f" pass session_id \"{sid}\" to the consolidate MCP `note` tool; whether its notes are consolidated"
                " depends on the store taking its end.")
    return (f"consolidate: this is session {sid}. Notes you write with the consolidate MCP `note` tool"
            " (no session_id needed) belong to it and are consolidated when the session ends.")


def session_start(store: str, sid: str, payload: dict, *, cwd: str | None = None, gemini: bool = False) -> str:
    """The SessionStart hook for ``sid`` (a plain session id) on the private store folder ``store``:
    record the session and return the text to print (the session line and the start file's
    context), or raise :class:`Fallback` (see the module docstring). ``cwd``: the payload's
    (consolidate.agents.hooks.payload.cwd_of); ``gemini``: the session is Gemini CLI's."""
    db_path = SESSIONS_DB.join(store)
    if os.path.exists(TEAM_JSON.join(store)) or not os.path.exists(db_path):
        raise Fallback
    start = load(store)
    if start is None:
        raise Fallback
    conn = connect(db_path)
    try:
        tier = LightTier(conn)
        fold_queue_file(conn, store, lambda s: session_for_end(tier, s))
        if tier.session_end(sid) is not None or missed_sessions(tier, sid, cwd=cwd) or stranded(tier):
            raise Fallback  # a resume, sessions to recover, or a harvest a killed hook left: the full hook
        session_for_start(tier, sid, payload)
        insert_start(conn, sid, agent="gemini-cli" if gemini else None, cwd=cwd)
        record_digests(tier, sid, [str(d) for d in start["digests"]])
    except BaseException:
        conn.close()
        raise
    warning = start_line(store, conn)  # workers failing, ends piling up: read at every start
    LEFT_OPEN.append(conn)
    context = (warning + "\n\n" + start["text"] if start["text"] else warning) if warning else start["text"]
    return session_line(sid) + ("\n\n" + context if context else "")
