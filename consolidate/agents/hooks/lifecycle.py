"""The agent session's lifecycle as the hooks see it: harvests never taken twice, resumed sessions,
sessions whose end never fired.

Tables in ``sessions.sqlite3`` (beside consolidate.store.sessions.agents's ``agent_sessions``; their schema and
statements are consolidate.store.sessions.tables'):

- ``hook_sessions(session_id, base_session_id, transcript_path, cwd, source, started_at)``: every
  session a SessionStart hook opened, with its transcript; a resumed session's **segment** names the
  agent's own session id as its base.
- ``harvested(base_session_id, entry_key, harvested_at)``: every transcript entry block already
  harvested (``uuid:block``, consolidate/pipeline/harvest.py), per agent session id: a PreCompact harvest
  followed by a SessionEnd one, a resumed session's next end, a recovery, never take the same entry
  twice, even after the first notes were consolidated and deleted.
- ``harvest_pending(session_id, part, transcript_path, end_offset, ...)``: the harvests a hook
  recorded and did not finish yet.

**Harvests a killed hook did not finish** (Claude Code kills a SessionEnd hook after about 1.5 s, a
PreCompact hook at its timeout). An end event records the session end and its harvest as pending
(the transcript and its size then) in one transaction (``end_session``), then starts the worker
(which waits for the hook to exit), then harvests: the notes, their entry keys and the harvest's
done mark are one transaction (``add_harvest``). PreCompact and a recovery record theirs the
same way (``record_harvest``). Whatever point a SIGKILL hits, the end is queued with its
harvest pending or done, never half-made; every consolidation of a queued end makes the pending
harvests of the session first (``finish_pending``, called by consolidate.pipeline.run.run_claimed:
the worker, ``run``, ``batch``, ``import-transcripts``), reading the transcript up to the recorded
size, each entry once; the next SessionStart starts a worker when such an end waits (:func:`stranded`).

**Resumed sessions** (``claude --resume``: SessionStart with source ``resume`` on an id whose end
already ran or is queued; the rule is consolidate.store.sessions.segments'). The session end already
in the queue is left as it is; the resumed part becomes a new session, ``<id>+r<n>`` (a segment),
recorded as the store's current session: MCP notes without a session id go to it, the SessionEnd
hook of ``<id>`` ends it, and its harvest skips the entries harvested before. So the notes after a
resume are consolidated at its next end, and nothing twice. (A session consolidated as a failure stays one; its resumed part is judged on its own.)

**Sessions whose end never fired** (terminal killed, crash, usage limit). At every SessionStart,
the open sessions recorded in the store (a SessionStart and no end after it, less than 7 days old:
consolidate.store.sessions.agents.open_sessions) other than the starting one, of the same project (same
``cwd``, when both are known), are checked: a session is **still running** when one of the processes
its SessionStart hook ran under, other than the processes the new hook runs under (a shared
terminal, tmux, sshd), is alive (its agent CLI). A session that is not running is **recovered**: its
end is queued with the outcome its SessionEnd hook would have recorded (the hook's ``--outcome``,
default ``success``) and the reason ``end missed: recovered at the SessionStart of <id>``; with
``--harvest`` its transcript is harvested first (bounded, entries not taken before). The MCP
server's own sessions (``mcp-<time>-<pid>``) with notes and no end are recovered when that pid is
gone. Without ``/proc`` (the process tree cannot be read) only sessions started more than
:data:`BLIND_AGE` ago are recovered. At most :data:`MAX_RECOVERED` sessions per SessionStart (the others at the next one; ``batch``
still ends any session idle for 24 h). A recovered session then has an end after its start, so it is
never recovered (or consolidated) twice; a SessionEnd that fires late only updates the queued end.

The harvest functions (``end_session``, ``record_harvest``, ``add_harvest``, ``finish_pending``...)
are consolidate.pipeline.harvest's: every consolidation of a queued end makes the pending ones.
Only the standard library: this runs in the hook.
"""

from __future__ import annotations

import importlib
import os
import re
import time

from consolidate.agents.hooks.payload import cwd_of, source_of, transcript_path_of
from consolidate.core.spawn import alive
from consolidate.store.sessions.segments import base_of, record_start
from consolidate.rules.redaction import error_text
from consolidate.store.sessions.tables import ensure_hook_tables
from consolidate.store.sessions.tables import stranded_harvests
from consolidate.store.sessions.tables import agent_started_at, claim_recovery
from consolidate.store.sessions.agents import ancestors, open_sessions

#: The transcript harvest, imported by name when a missed session is recovered: the fast SessionStart
#: (consolidate/store/views/start_file.py) imports this module and never recovers.
HARVEST = "consolidate.pipeline.harvest"

TYPE_CHECKING = False  # typing is not imported at run time: the light SessionStart hook imports this module
if TYPE_CHECKING:
    from typing import Any

    from consolidate.pipeline import harvest  # noqa: F401 - imported by name by recover_missed (HARVEST): the edge for grimp

#: How many missed sessions one SessionStart recovers at most (each may cost a bounded harvest).
MAX_RECOVERED = 3
#: Where the process tree cannot be read (no ``/proc``: macOS, some containers) a session's agent
#: cannot be told alive or gone: an open session is recovered only when it started this long ago
#: (seconds); ``batch`` ends the others after 24 h idle.
BLIND_AGE = 12 * 3600.0
#: PreCompact reads up to this many entries (the part about to be compacted is often longer than the
#: 400 a SessionEnd reads; its hook may take 10 s).
PRECOMPACT_MAX_ENTRIES = 2000
#: A recovery claimed this many seconds ago whose end was never queued (its hook was killed) may be
#: claimed again.
CLAIM_STALE = 60.0

_MCP_OWN = re.compile(r"^mcp-\d{8}T\d{6}Z-(\d+)$")


def ensure(tier) -> None:
    """Create this module's tables in ``tier``'s database when missing."""

    ensure_hook_tables(tier.db)


def session_for_start(tier, session_id: str, payload: dict, *, now: float | None = None) -> str:
    """The session a SessionStart opens (consolidate.store.sessions.segments.record_start: ``session_id``
    itself, or a resumed session's part ``<id>+r<n>``), recorded with the payload's transcript, cwd
    and source (consolidate.agents.hooks.payload); returns its id."""
    cwd = cwd_of(payload)
    return record_start(tier, session_id, transcript_path=transcript_path_of(payload),
                        cwd=cwd if cwd and cwd.strip() else None, source=source_of(payload), now=now)


def stranded(tier) -> list[str]:
    """Sessions whose end waits with a harvest its hook did not finish, and no live process holds
    it (queued, or claimed by a worker that is gone): a worker must be started to make it."""

    return [sid for sid, status, pid in stranded_harvests(tier.db)
            if status == "queued" or not pid or not alive(pid)]


def still_running(recorded: list[int], current: list[int]) -> bool:
    """Whether a session whose SessionStart hook ran under the processes ``recorded`` still runs: one
    of them that is not among ``current`` (the new hook's ancestors) is alive."""
    shared = set(current)
    return any(alive(pid) for pid in recorded if pid not in shared and pid > 1)


def missed_sessions(tier, current_session: str, *, cwd: str | None = None, pids: list[int] | None = None,
                    now: float | None = None, blind: bool | None = None) -> list[str]:
    """The sessions whose end never fired, as the module docstring defines them, oldest first.
    ``blind``: whether the process tree cannot be read (default: no ``/proc/self/stat``)."""
    current = ancestors() if pids is None else pids
    if blind is None:
        blind = pids is None and not os.path.exists("/proc/self/stat")
    now = time.time() if now is None else now
    out = []
    for s in reversed(open_sessions(tier, now=now)):  # oldest first
        sid = s["session_id"]
        if sid == current_session or base_of(sid) == base_of(current_session):
            continue
        if cwd and s.get("cwd") and os.path.normpath(s["cwd"]) != os.path.normpath(cwd):
            continue
        if blind:
            if now - s["started_at"] < BLIND_AGE:
                continue
        elif still_running(s.get("ancestors") or [], current):
            continue
        out.append(sid)
    for sid in tier.sessions():  # the MCP server's own sessions, its process gone
        m = _MCP_OWN.match(sid)
        if m and sid not in out and tier.session_end(sid) is None and not alive(int(m.group(1))):
            out.append(sid)
    return out


def recover_missed(tier, current_session: str, *, cwd: str | None = None, outcome: str = "success",
                   harvest: bool = False, log=None, pids: list[int] | None = None,
                   now: float | None = None) -> list[dict[str, Any]]:
    """Recover up to :data:`MAX_RECOVERED` sessions whose end never fired (see the module
    docstring): harvest (``harvest``) then queue each end. Returns ``[{"session_id", "notes",
    "harvested"}]``."""
    transcript_harvest = importlib.import_module(HARVEST)
    ensure(tier)
    out = []
    for sid in missed_sessions(tier, current_session, cwd=cwd, pids=pids, now=now)[:MAX_RECOVERED]:
        # claim the recovery first: two SessionStarts at once recover a session once; a claim older than
        # the session's last start is stale (the session was resumed after an earlier recovery)
        if not claim_recovery(tier.db, sid, current_session, time.time(),
                              max(agent_started_at(tier.db, sid), time.time() - CLAIM_STALE)):
            continue  # another SessionStart is recovering it
        harvested: dict[str, int] = {}
        try:  # the end and its pending harvest first: a hook killed during the harvest leaves it to the worker
            mark = transcript_harvest.end_session(tier, sid, outcome, f"end missed: recovered at the SessionStart of {current_session}",
                               harvest=harvest, event="recovery")
        except Exception as exc:  # noqa: BLE001 - e.g. a session consolidated as a failure
            if log is not None:
                log(f"recovery session={sid} not queued: {error_text(exc, typed=True)}")
            continue
        if mark is not None:
            try:
                harvested = transcript_harvest.harvest_pending_part(tier, mark, log=log)
            except Exception as exc:  # noqa: BLE001 - the end is queued and the harvest pending: the worker makes it
                if log is not None:
                    log(f"recovery harvest session={sid} failed: {error_text(exc, typed=True)} (left to the worker)")
        out.append({"session_id": sid, "notes": tier.count(sid), "harvested": sum(harvested.values())})
    return out


