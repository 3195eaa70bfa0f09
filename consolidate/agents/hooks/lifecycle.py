"""The agent session's lifecycle as the hooks see it: harvests never taken twice, resumed sessions,
sessions whose end never fired.

Tables in ``sessions.sqlite3`` (beside consolidate.store.sessions.agents's ``agent_sessions``; their schema and
statements are consolidate.store.sessions.tables'):

- ``hook_sessions(session_id, base_session_id, transcript_path, cwd, source, started_at)``: every
  session a SessionStart hook opened, with its transcript; a resumed session's **segment** names the
  agent's own session id as its base.
- ``harvested(base_session_id, entry_key, harvested_at)``: every transcript entry block already
  harvested (``uuid:block``, consolidate/agents/harvest.py), per agent session id: a PreCompact harvest
  followed by a SessionEnd one, a resumed session's next end, a recovery, never take the same entry
  twice, even after the first notes were consolidated and deleted.
- ``harvest_pending(session_id, part, transcript_path, end_offset, ...)``: the harvests a hook
  recorded and did not finish yet.

**Harvests a killed hook did not finish** (Claude Code kills a SessionEnd hook after about 1.5 s, a
PreCompact hook at its timeout). An end event records the session end and its harvest as pending
(the transcript and its size then) in one transaction (:func:`end_session`), then starts the worker
(which waits for the hook to exit), then harvests: the notes, their entry keys and the harvest's
done mark are one transaction (:func:`add_harvest`). PreCompact and a recovery record theirs the
same way (:func:`record_harvest`). Whatever point a SIGKILL hits, the end is queued with its
harvest pending or done, never half-made; every consolidation of a queued end makes the pending
harvests of the session first (:func:`finish_pending`, called by consolidate.pipeline.run.run_claimed:
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

Only the standard library: this runs in the hook.
"""

from __future__ import annotations

import os
import re
import time

from consolidate.agents.hooks.payload import cwd_of, source_of, transcript_path_of
from consolidate.store.sessions.segments import base_of, record_start
from consolidate.core.vocab import END_PENDING
from consolidate.rules.redaction import error_text

TYPE_CHECKING = False  # typing is not imported at run time: the light SessionStart hook imports this module
if TYPE_CHECKING:
    from typing import Any

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
#: Rows of ``harvested``, ``hook_sessions`` and ``recovered`` older than this are pruned (seconds): a
#: transcript that old is not resumed (agent CLIs delete theirs after some weeks).
KEEP_SECONDS = 60 * 86400.0

_MCP_OWN = re.compile(r"^mcp-\d{8}T\d{6}Z-(\d+)$")


def ensure(tier) -> None:
    """Create this module's tables in ``tier``'s database when missing."""
    from consolidate.store.sessions.tables import ensure_hook_tables

    ensure_hook_tables(tier.db)


def session_for_start(tier, session_id: str, payload: dict, *, now: float | None = None) -> str:
    """The session a SessionStart opens (consolidate.store.sessions.segments.record_start: ``session_id``
    itself, or a resumed session's part ``<id>+r<n>``), recorded with the payload's transcript, cwd
    and source (consolidate.agents.hooks.payload); returns its id."""
    cwd = cwd_of(payload)
    return record_start(tier, session_id, transcript_path=transcript_path_of(payload),
                        cwd=cwd if cwd and cwd.strip() else None, source=source_of(payload), now=now)


def transcript_of(tier, session_id: str) -> str | None:
    """The transcript the SessionStart of ``session_id`` recorded, or None."""
    from consolidate.store.sessions.tables import transcript_path

    ensure(tier)
    return transcript_path(tier.db, session_id)


def add_harvest(tier, session_id: str, transcript_path: Any, *, since_compaction: bool = False,
                log=None, max_entries: int | None = None, end: int | None = None,
                part: str | None = None) -> dict[str, int]:
    """Harvest the transcript (consolidate/agents/harvest.py; up to byte ``end`` when given) into
    ``session_id``, skipping every entry block already harvested for its agent session; returns
    ``{entry_type: notes added}``. The keys, the notes and the end of the pending harvest ``part``
    (:func:`record_harvest`) are written in one transaction: two processes harvesting at once never
    add an entry twice, and a process killed before the commit leaves the harvest pending, whole.
    ``log`` (a callable taking one line) gets the secret gate's notices."""
    from consolidate.core.faults import crash_point
    from consolidate.agents.harvest import MAX_ENTRIES, harvest_transcript
    from consolidate.store.sessions.tables import add_harvested_key, clear_pending_harvest, transaction

    path = transcript_path if isinstance(transcript_path, str) and transcript_path else transcript_of(tier, session_id)
    notes = harvest_transcript(path, since_compaction=since_compaction, max_entries=max_entries or MAX_ENTRIES,
                               end=end)
    counts: dict[str, int] = {}
    if not notes and part is None:
        return counts
    ensure(tier)
    base = base_of(session_id)
    now = time.time()
    with transaction(tier.db):
        for note in notes:
            if not add_harvested_key(tier.db, base, note["key"], now):
                continue
            note_id = tier.add_note(session_id, note["content"], metadata=note["metadata"])
            if log is not None and getattr(note_id, "notice", None):
                log(f"harvest session={session_id}: {note_id.notice}")
            elif log is not None and note["metadata"].get("secret_removed"):
                log(f"harvest session={session_id}: note {int(note_id)} (entry {note['key']}) held secret material"
                    f" ({', '.join(note['metadata']['secret_removed'])}): kept with the secret removed")
            kind = note["metadata"].get("entry_type", "other")
            counts[kind] = counts.get(kind, 0) + 1
        if part is not None:
            clear_pending_harvest(tier.db, session_id, part)
        crash_point(CRASH_HARVEST_COMMIT)
    if notes:
        prune(tier, now=now)
    return counts


#: Crash point (consolidate.core.faults): the harvest's notes, keys and done mark written, not committed.
CRASH_HARVEST_COMMIT = "harvest:commit"
#: The pending harvest part of a session end (a PreCompact's is ``precompact@<transcript size>``).
END_PART = "end"


def _size(path: str | None) -> int | None:
    try:
        return os.stat(path).st_size if path else None
    except OSError:
        return None


def record_harvest(tier, session_id: str, transcript_path: Any, *, part: str = END_PART, event: str | None = None,
                   since_compaction: bool = False, max_entries: int | None = None,
                   now: float | None = None) -> dict[str, Any]:
    """Record the harvest ``part`` of ``session_id`` as pending (``harvest_pending``) before it is
    made: the transcript (the payload's, else the one its SessionStart recorded) and its size now,
    so the harvest made later by another process (:func:`finish_pending`) reads what this one
    would have read. Returns the mark ``{session_id, part, transcript_path, end_offset,
    since_compaction, max_entries, event}`` to pass to :func:`harvest_pending_part`. Part of the
    caller's transaction when there is one."""
    from consolidate.store.sessions.tables import record_pending_harvest
    from consolidate.store.sessions.tables import transcript_path as recorded_transcript

    if not tier.db.in_transaction:  # executescript (ensure) would commit the caller's transaction
        ensure(tier)
    path = transcript_path if isinstance(transcript_path, str) and transcript_path \
        else recorded_transcript(tier.db, session_id)
    size = _size(path)
    if part != END_PART and size is not None:
        part = f"{part}@{size}"
    mark = {"session_id": session_id, "part": part, "transcript_path": path, "end_offset": size,
            "since_compaction": since_compaction, "max_entries": max_entries, "event": event}
    record_pending_harvest(tier.db, session_id, part, transcript_path=path, end_offset=size,
                           since_compaction=since_compaction, max_entries=max_entries, event=event,
                           now=time.time() if now is None else now, pid=os.getpid())
    return mark


def end_session(tier, session_id: str, outcome: str, reason: str | None, *, transcript_path: Any = None,
                harvest: bool = False, event: str | None = None) -> dict[str, Any] | None:
    """Queue the session end and, with ``harvest``, record its transcript harvest as pending, in one
    transaction (the hook's first write: a hook killed after it has left the end and what to
    harvest). Returns the pending mark (:func:`record_harvest`), or None without ``harvest``.
    Raises as SessionTier.end (BadInput for a session consolidated as a failure)."""
    from consolidate.store.sessions.tables import transaction

    if not harvest:
        tier.end(session_id, outcome, reason)
        return None
    ensure(tier)
    with transaction(tier.db):
        mark = record_harvest(tier, session_id, transcript_path, event=event)
        tier.end(session_id, outcome, reason)
    return mark


def harvest_pending_part(tier, mark: dict[str, Any], *, log=None) -> dict[str, int]:
    """Make the pending harvest ``mark`` (a row of ``harvest_pending``) and mark it done, in one
    transaction (:func:`add_harvest`); returns ``{entry_type: notes added}``."""
    return add_harvest(tier, mark["session_id"], mark["transcript_path"], since_compaction=bool(mark["since_compaction"]),
                       max_entries=mark["max_entries"], end=mark["end_offset"], part=mark["part"], log=log)


#: How long a process finishing the pending harvests waits for the live hook that recorded one to
#: finish it itself (seconds): a hook is killed at its agent's time budget (Claude Code: about
#: 1.5 s for SessionEnd, 10 s for PreCompact as we install it).
HOOK_GRACE = 12.0


def finish_pending(tier, session_ids: list[str] | None = None, *, by: str = "the worker", log=None,
                   wait: float = HOOK_GRACE) -> list[dict[str, Any]]:
    """Make every harvest a hook recorded and did not finish (of ``session_ids`` only, when given):
    a hook killed at its time budget after it queued the session end. Each is made once (the
    entries already harvested are skipped, in the transaction that marks it done), with what it
    recorded (the transcript up to its size then). A harvest whose recording process still runs
    (the hook itself, harvesting now) is waited for up to ``wait`` seconds first. A session end
    already consolidated gets its end queued again when notes were added (they would be stranded
    otherwise). ``log`` gets one line per harvest made here (``by`` says who made it). Returns
    ``[{"session_id", "part", "event", "harvested": {entry_type: n}}]``; a harvest that fails is
    logged and left pending (tried again next time), except for a session consolidated as a failure
    (it takes no notes: dropped)."""
    from consolidate.core.errors import BadInput
    from consolidate.store.sessions.tables import clear_pending_harvest, pending_harvests

    ensure(tier)
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + wait
    for mark in pending_harvests(tier.db, session_ids):
        pid = mark.get("recorded_by") if time.time() - (mark.get("recorded_at") or 0) < wait else None
        while pid and pid != os.getpid() and _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # the hook that recorded it is still harvesting
            if not any(m["part"] == mark["part"] for m in pending_harvests(tier.db, [mark["session_id"]])):
                break
        if not any(m["part"] == mark["part"] for m in pending_harvests(tier.db, [mark["session_id"]])):
            continue  # the hook finished it
        sid, what = mark["session_id"], mark.get("event") or mark["part"]
        try:
            harvested = harvest_pending_part(tier, mark, log=log)
        except BadInput as exc:
            clear_pending_harvest(tier.db, sid, mark["part"])
            if log is not None:
                log(f"{what} session={sid}: its hook's harvest did not finish and cannot be made now ({error_text(exc)}); dropped")
            continue
        except Exception as exc:  # noqa: BLE001 - left pending, tried again by the next worker
            if log is not None:
                log(f"{what} session={sid}: its hook's harvest did not finish; {by} could not make it either:"
                    f" {error_text(exc, typed=True)} (left pending)")
            continue
        if harvested:
            row = tier.session_end(sid)
            if row is not None and row["status"] not in END_PENDING:
                tier.end(sid, row["outcome"], row["reason"])  # consolidated already: its new notes need a run
        if log is not None:
            log(f"{what} session={sid}: its hook's harvest did not finish (the hook was stopped, e.g. at its"
                f" time budget); made by {by}: {summary(harvested)}")
        out.append({"session_id": sid, "part": mark["part"], "event": mark.get("event"), "harvested": harvested})
    return out


def finish_agent_session(tier, base_session_id: str, *, by: str, log=None) -> list[dict[str, Any]]:
    """:func:`finish_pending` for every part (the session and its resumed segments) of the agent
    session ``base_session_id``."""
    from consolidate.store.sessions.tables import segments

    ensure(tier)
    return finish_pending(tier, [base_session_id, *segments(tier.db, base_session_id)], by=by, log=log)


def stranded(tier) -> list[str]:
    """Sessions whose end waits with a harvest its hook did not finish, and no live process holds
    it (queued, or claimed by a worker that is gone): a worker must be started to make it."""
    from consolidate.store.sessions.tables import stranded_harvests

    return [sid for sid, status, pid in stranded_harvests(tier.db)
            if status == "queued" or not pid or not _alive(pid)]


def prune(tier, *, now: float | None = None) -> None:
    """Delete the rows older than :data:`KEEP_SECONDS` from this module's tables."""
    from consolidate.store.sessions.tables import prune_hook_tables

    ensure(tier)
    prune_hook_tables(tier.db, (time.time() if now is None else now) - KEEP_SECONDS)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def still_running(recorded: list[int], current: list[int]) -> bool:
    """Whether a session whose SessionStart hook ran under the processes ``recorded`` still runs: one
    of them that is not among ``current`` (the new hook's ancestors) is alive."""
    shared = set(current)
    return any(_alive(pid) for pid in recorded if pid not in shared and pid > 1)


def missed_sessions(tier, current_session: str, *, cwd: str | None = None, pids: list[int] | None = None,
                    now: float | None = None, blind: bool | None = None) -> list[str]:
    """The sessions whose end never fired, as the module docstring defines them, oldest first.
    ``blind``: whether the process tree cannot be read (default: no ``/proc/self/stat``)."""
    from consolidate.store.sessions.agents import ancestors, open_sessions

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
        if m and sid not in out and tier.session_end(sid) is None and not _alive(int(m.group(1))):
            out.append(sid)
    return out


def recover_missed(tier, current_session: str, *, cwd: str | None = None, outcome: str = "success",
                   harvest: bool = False, log=None, pids: list[int] | None = None,
                   now: float | None = None) -> list[dict[str, Any]]:
    """Recover up to :data:`MAX_RECOVERED` sessions whose end never fired (see the module
    docstring): harvest (``harvest``) then queue each end. Returns ``[{"session_id", "notes",
    "harvested"}]``."""
    from consolidate.store.sessions.tables import agent_started_at, claim_recovery

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
            mark = end_session(tier, sid, outcome, f"end missed: recovered at the SessionStart of {current_session}",
                               harvest=harvest, event="recovery")
        except Exception as exc:  # noqa: BLE001 - e.g. a session consolidated as a failure
            if log is not None:
                log(f"recovery session={sid} not queued: {error_text(exc, typed=True)}")
            continue
        if mark is not None:
            try:
                harvested = harvest_pending_part(tier, mark, log=log)
            except Exception as exc:  # noqa: BLE001 - the end is queued and the harvest pending: the worker makes it
                if log is not None:
                    log(f"recovery harvest session={sid} failed: {error_text(exc, typed=True)} (left to the worker)")
        out.append({"session_id": sid, "notes": tier.count(sid), "harvested": sum(harvested.values())})
    return out


def summary(counts: dict[str, int]) -> str:
    """``3 notes harvested (user_prompt 1, assistant 1, tool_error 1)``."""
    total = sum(counts.values())
    if not counts:
        return "0 notes harvested"
    return f"{total} notes harvested ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})"


def started(tier, base_session_id: str) -> bool:
    """Whether a SessionStart hook recorded a part of the agent session ``base_session_id``."""
    from consolidate.store.sessions.tables import hook_session_started

    ensure(tier)
    return hook_session_started(tier.db, base_session_id)


def harvested_keys(tier, base_session_id: str) -> set[str]:
    """The transcript entry keys harvested for the agent session ``base_session_id``."""
    from consolidate.store.sessions.tables import harvested_keys as keys

    ensure(tier)
    return keys(tier.db, base_session_id)


def mark_harvested(tier, base_session_id: str, keys: list[str], *, now: float | None = None) -> None:
    """Record ``keys`` as harvested for the agent session (one transaction; a key already there is
    kept): resuming that session later never harvests them again."""
    if not keys:
        return
    from consolidate.store.sessions.tables import mark_harvested as mark

    mark(tier.db, base_session_id, keys, time.time() if now is None else now)
