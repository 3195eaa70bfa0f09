"""Which agent session is current: the join between the SessionStart hook and the MCP server.

An agent CLI (Claude Code, Gemini CLI) names its session (``session_id`` in every hook payload) but
never tells its MCP servers that name. So:

1. The SessionStart hook records the agent's session in the store (table ``agent_sessions`` of
   ``sessions.sqlite3``, its statements in consolidate.store.sessions.tables): its id, the agent, the time, and the hook's nearest ancestor processes
   (the agent CLI is one of them: it runs the hook, directly or through a shell).
2. The MCP server (a child of the same agent CLI) resolves a tool call without ``session_id`` to the
   **current session** of the store: among the recorded sessions that are still open (no session end
   recorded after their last SessionStart, started less than 7 days ago), the newest one whose hook
   ran under one of the MCP server's ``MATCH_DEPTH`` nearest ancestors (its agent, or a wrapper such
   as ``npx``); when none matches (no ``/proc``, a container) and exactly one session is open, that
   one. Otherwise there is no current session and the caller falls back to its own id (the MCP
   server uses ``mcp-<UTC time>-<pid>`` and queues that session's end when it closes), never to a
   guess between two agents' sessions.
3. The SessionEnd hook ends the same ``session_id``, so the notes written through MCP are
   consolidated with the session, with no id passed by hand.

Only the standard library: this runs in the hook's fast path.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from consolidate.store.sessions.tables import record_agent_start
from consolidate.store.sessions.tables import open_agent_sessions
TYPE_CHECKING = False  # typing is not imported at run time: the light SessionStart hook imports this module
if TYPE_CHECKING:
    from typing import Any

#: How many ancestor processes a SessionStart record keeps (the agent is within the first few).
MAX_ANCESTORS = 16
#: How many of the resolving process's nearest ancestors may be the agent (the MCP server's parent,
#: or a wrapper between them); a record matches when one of them is among its first MAX_ANCESTORS.
MATCH_DEPTH = 3
#: A recorded session older than this (seconds since its SessionStart) is never current.
MAX_AGE = 7 * 86400.0

def ancestors(pid: int | None = None, limit: int = MAX_ANCESTORS) -> list[int]:
    """The ancestor process ids of ``pid`` (default: this process), nearest first, without pid 1
    and 0. Read from ``/proc/<pid>/stat`` (Linux); elsewhere only the parent is known."""
    pid = os.getpid() if pid is None else pid
    out: list[int] = []
    proc = Path("/proc")
    if not (proc / str(pid) / "stat").exists():
        ppid = os.getppid() if pid == os.getpid() else 0
        return [ppid] if ppid > 1 else []
    current = pid
    while len(out) < limit:
        try:
            stat = (proc / str(current) / "stat").read_text()
            # the command name (field 2) is in parentheses and may hold spaces: split after it
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if ppid <= 1:
            break
        out.append(ppid)
        current = ppid
    return out


def record_start(tier, session_id: str, *, agent: str | None = None, cwd: str | None = None,
                 pids: list[int] | None = None, now: float | None = None) -> None:
    """Record that the agent session ``session_id`` started (or resumed) now, under the processes
    ``pids`` (default: this process's ancestors). ``tier`` is a SessionTier."""
    from consolidate.store.sessions.tier import check_session_id  # noqa: PLC0415 - the fast SessionStart hook records agents without the session tier

    insert_start(tier.db, check_session_id(session_id), agent=agent, cwd=cwd, pids=pids, now=now)


def insert_start(db, session_id: str, *, agent: str | None = None, cwd: str | None = None,
                 pids: list[int] | None = None, now: float | None = None) -> None:
    """:func:`record_start` on the connection ``db`` for a ``session_id`` already checked
    (consolidate.store.sessions.tier.check_session_id; the light SessionStart hook checks its plainer rule)."""

    record_agent_start(db, session_id, agent=agent, started_at=time.time() if now is None else now,
                       ancestors=ancestors() if pids is None else pids, cwd=cwd)


def open_sessions(tier, *, now: float | None = None) -> list[dict[str, Any]]:
    """Recorded agent sessions still open (no session end after their last SessionStart, started
    within MAX_AGE), newest first: ``[{session_id, agent, started_at, ancestors, cwd}]``."""

    return open_agent_sessions(tier.db, (time.time() if now is None else now) - MAX_AGE)


def current_session(tier, *, pids: list[int] | None = None, now: float | None = None) -> tuple[str | None, str]:
    """The current agent session of the store for a process whose ancestors are ``pids`` (default:
    this process's): ``(session_id, how)`` where ``how`` is ``"agent process <pid>"`` (its SessionStart
    hook ran under that ancestor), ``"only open session"``, or ``"none"`` (``session_id`` None:
    no open session, or several and none of them ours). See the module docstring for the rule."""
    candidates = open_sessions(tier, now=now)
    if not candidates:
        return None, "none"
    pids = ancestors(limit=MATCH_DEPTH) if pids is None else pids[:MATCH_DEPTH]
    for pid in pids:
        for c in candidates:  # newest first
            if pid in c["ancestors"]:
                return c["session_id"], f"agent process {pid}"
    if len(candidates) == 1:
        return candidates[0]["session_id"], "only open session"
    return None, "none"
