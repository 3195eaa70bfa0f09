"""Every statement on ``sessions.sqlite3`` that runs outside :class:`consolidate.store.sessions.tier.SessionTier`'s
own methods, with the schema of the tables it owns: the session tier's one place for SQL besides
session.py (tests/unit/core/test_shared_mechanisms.py checks that no other module of the package holds any).

Tables owned here (each created on first use, ``CREATE ... IF NOT EXISTS``):

- ``hook_sessions(session_id, base_session_id, transcript_path, cwd, source, started_at)``,
  ``recovered(session_id, by_session, recovered_at)`` and ``harvested(base_session_id, entry_key,
  harvested_at)``: what the hooks saw of an agent session (consolidate.agents.hooks.lifecycle says why);
- ``harvest_pending(session_id, part, transcript_path, end_offset, since_compaction, max_entries,
  event, recorded_at, recorded_by)``: the transcript harvests a hook recorded (with its session end,
  or at PreCompact) and did not finish yet (consolidate.agents.hooks.lifecycle: a hook killed at its time
  budget; the worker finishes them);
- ``agent_sessions(session_id, agent, started_at, ancestors, cwd)``: the SessionStart record that
  tells the MCP server which session is current (consolidate.store.sessions.agents);
- ``shown(id, session_id, shown_at, digests)``: memory texts a read path showed (consolidate.store.echo);
- ``file_recall_shown(session_id, digest, shown_at)``: memory texts the file-read hook printed to a
  session (consolidate.agents.file_recall);
- ``queue_file(name, inode, offset)``: how far the queue file the light hook appends to was folded
  into ``session_ends`` (consolidate.agents.hooks.fast).

Also here, because the light entry point runs them on a plain connection without a SessionTier: the
connection set-up (:func:`set_up`, :func:`connect`), the session-end upsert and the failure check
(:func:`record_end`, :func:`failure_consolidated`; SessionTier calls them too), the idle run's
finish (:func:`finish_idle_end`) and the reads the fast SessionStart makes (:class:`LightTier`).

Every function takes ``db``, an autocommit connection (``isolation_level=None``) to the file. Times
are Unix seconds. Only the standard library, imported when used: the session-end and SessionStart
hooks import this module.
"""

from __future__ import annotations

import json

from consolidate.core.vocab import END_PENDING
import os

TYPE_CHECKING = False  # typing is not imported at run time: the light SessionStart hook imports this module
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any


# -- the connection -------------------------------------------------------------------------------

def set_up(db: sqlite3.Connection) -> None:
    """WAL (readers never block the writer), ``synchronous=NORMAL``, and ``secure_delete`` (deleted
    notes may hold secrets: their pages are overwritten, not left on disk)."""
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA secure_delete=ON")


def connect(db_path: str) -> sqlite3.Connection:
    """An autocommit connection to ``sessions.sqlite3`` set up as SessionTier sets its own
    (:func:`set_up`, 10 s busy timeout), files created 0600."""
    import sqlite3  # noqa: PLC0415 - loaded on the first connection: the fast hooks import this module without one

    os.umask(0o077)
    conn = sqlite3.connect(db_path, timeout=10.0, isolation_level=None)
    try:
        set_up(conn)
    except BaseException:
        conn.close()
        raise
    return conn


class transaction:
    """``with transaction(db):`` a ``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception,
    which propagates); inside a transaction already (a harvest adding its notes), part of it."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.outer = False

    def __enter__(self) -> sqlite3.Connection:
        self.outer = self.db.in_transaction
        if not self.outer:
            self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type, *_) -> None:
        if not self.outer:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")


# -- session ends and notes (the tables SessionTier owns, as the light paths read and write them) ----

def record_end(db: sqlite3.Connection, session_id: str, outcome: str, reason: str | None, ended_at: float,
               updated_at: float) -> None:
    """Queue the session end (a second end of a session updates its outcome and reason and queues it
    again). The caller checked the values and :func:`failure_consolidated`."""
    db.execute(
        "INSERT INTO session_ends(session_id, outcome, reason, ended_at, status, updated_at)"
        " VALUES (?,?,?,?,'queued',?) ON CONFLICT(session_id) DO UPDATE SET outcome=excluded.outcome,"
        " reason=excluded.reason, ended_at=excluded.ended_at, status='queued', run_id=NULL, result=NULL,"
        " updated_at=excluded.updated_at",
        (session_id, outcome, reason, ended_at, updated_at))


def _known_end(db: sqlite3.Connection, session_id: str, ended_at: float) -> bool:
    """Whether the queue table already holds this end of ``session_id`` or a later one: a queue-file
    record folded before, read again from the start because the file is another inode now (a copy of
    the store, ``cp -a``, a backup restored; a fresh tester: every session end of the copy was queued
    again and run once more)."""
    r = db.execute("SELECT ended_at FROM session_ends WHERE session_id=?", (session_id,)).fetchone()
    return r is not None and r[0] is not None and float(r[0]) >= float(ended_at)


def failure_consolidated(db: sqlite3.Connection, session_id: str) -> bool:
    """Whether the session ended in failure and that end was consolidated (not queued or running):
    such a session is never ended again and takes no more notes."""
    r = db.execute("SELECT outcome, status FROM session_ends WHERE session_id=?", (session_id,)).fetchone()
    return r is not None and r[0] == "failure" and r[1] not in END_PENDING


def session_end(db: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    """The session-end row of ``session_id`` (any status): ``{session_id, outcome, reason, ended_at,
    status, run_id, result}``, or None."""
    r = db.execute("SELECT session_id, outcome, reason, ended_at, status, run_id, result FROM session_ends"
                   " WHERE session_id=?", (session_id,)).fetchone()
    if r is None:
        return None
    return dict(session_id=r[0], outcome=r[1], reason=r[2], ended_at=r[3], status=r[4], run_id=r[5],
                result=json.loads(r[6]) if r[6] else None)


def note_counts(db: sqlite3.Connection) -> dict[str, int]:
    """Every session with notes: ``{session_id: note count}``."""
    return dict(db.execute("SELECT session_id, COUNT(*) FROM notes GROUP BY session_id").fetchall())


def queue_counts(db: sqlite3.Connection) -> tuple[int, float | None, float | None]:
    """``(session ends waiting: queued or running, ended_at of the oldest of them, updated_at of the
    last session end a run finished)``, Unix seconds; ``(0, None, None)`` when the table is not
    there yet (consolidate/store/worker_health.py)."""
    try:
        n, oldest = db.execute("SELECT COUNT(*), MIN(ended_at) FROM session_ends"
                               " WHERE status IN ('queued', 'running')").fetchone()
        (done,) = db.execute("SELECT MAX(updated_at) FROM session_ends"
                             " WHERE status NOT IN ('queued', 'running')").fetchone()
    except Exception:  # noqa: BLE001 - a store that never queued an end
        return 0, None, None
    return int(n or 0), (float(oldest) if n and oldest is not None else None), (float(done) if done is not None else None)


def connect_read_only(db_path: str) -> sqlite3.Connection:
    """A read-only connection to an existing ``sessions.sqlite3`` (1 s busy timeout). Raises
    sqlite3.Error when it cannot be opened."""
    import sqlite3  # noqa: PLC0415 - loaded on the first connection: the fast hooks import this module without one

    return sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=1.0)


#: What a run of a session without notes did (consolidate.model.plan.run_summary of such a run; a test
#: compares them): the idle run's queue-row result.
EMPTY_RUN_SUMMARY: dict = {"notes": 0, "written_durable": 0, "written_quarantined": 0, "written_transient": 0,
                           "written_disputed": 0, "rejected": 0, "reconfirmed": 0, "judges": [],
                           "partial": False, "waiting": 0}


def finish_idle_end(db: sqlite3.Connection, session_id: str, now: float, run_id: str) -> bool:
    """The idle run (consolidate.agents.hooks.fast): in one transaction, mark the queued ``success`` end of a
    session with no notes, none waiting, no notes file and no harvest left to finish (``harvest_pending``) ``done``
    under ``run_id`` with result :data:`EMPTY_RUN_SUMMARY`, as the full run does (listed by
    ``consolidate runs``, undone as a run that wrote nothing); False, changing nothing, for any
    other session."""
    with transaction(db):
        if _harvest_pending(db, session_id):
            return False  # its hook's harvest did not finish: the full run finishes it first
        row = db.execute("SELECT outcome, status FROM session_ends WHERE session_id=?", (session_id,)).fetchone()
        notes = db.execute("SELECT COUNT(*) FROM notes WHERE session_id=?", (session_id,)).fetchone()[0]
        waiting = db.execute("SELECT COUNT(*) FROM waiting WHERE session_id=?", (session_id,)).fetchone()[0]
        if row is None or row[0] != "success" or row[1] != "queued" or notes or waiting:
            return False
        if _has_notes_file(db, session_id):
            return False  # it handed a notes file over: the full run withdraws what the file no longer holds
        db.execute("UPDATE session_ends SET status='done', run_id=?, result=?, updated_at=?, claimed_by=NULL,"
                   " claimed_at=NULL WHERE session_id=?", (run_id, json.dumps(EMPTY_RUN_SUMMARY), now, session_id))
    return True


def _has_notes_file(db: sqlite3.Connection, session_id: str) -> bool:
    """Whether the session recorded a notes file (:func:`record_notes_file`), without creating the table."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='notes_files'").fetchone() is None:
        return False
    return db.execute("SELECT 1 FROM notes_files WHERE session_id=? LIMIT 1", (session_id,)).fetchone() is not None


class LightTier:
    """The reads of a SessionTier that consolidate.agents.hooks.lifecycle, agent_session and echo make, on
    one plain connection (the fast SessionStart: consolidate/agents/hooks/fast_start.py). Its caller folds the
    queue file once, before them."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def session_end(self, session_id: str) -> dict[str, Any] | None:
        """As SessionTier.session_end, without folding the queue file first."""
        return session_end(self.db, session_id)

    def sessions(self) -> dict[str, int]:
        """As SessionTier.sessions."""
        return note_counts(self.db)


# -- queue_file (the light hook's queue file, folded into session_ends) ----------------------------

_QUEUE_FILE = "CREATE TABLE IF NOT EXISTS queue_file (name TEXT PRIMARY KEY, inode INTEGER NOT NULL, offset INTEGER NOT NULL)"


def queue_file_offset(db: sqlite3.Connection, name: str) -> tuple[int, int] | None:
    """``(inode, offset)`` up to which the queue file ``name`` was folded, or None (never folded; the
    table is created when missing)."""
    try:
        row = db.execute("SELECT inode, offset FROM queue_file WHERE name=?", (name,)).fetchone()
    except Exception:  # noqa: BLE001 - no table yet
        db.execute(_QUEUE_FILE)
        return None
    return None if row is None else (row[0], row[1])


def fold_ends(db: sqlite3.Connection, name: str, inode: int, start: int, end: int,
              records: Iterable[tuple[str, str, str | None, float]], now: float,
              before_commit: Callable[[], None] | None = None) -> int | None:
    """In one transaction: queue each ``(session_id, outcome, reason, ended_at)`` (:func:`record_end`;
    a session whose failure was consolidated is skipped) and move the queue file ``name``'s folded
    offset from ``start`` to ``end`` (inode ``inode``); ``before_commit()`` runs last (a crash
    point). Returns how many ends were queued, or None, changing nothing, when the recorded offset is
    no longer ``start`` (another process folded meanwhile)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        now_at = db.execute("SELECT inode, offset FROM queue_file WHERE name=?", (name,)).fetchone()
        if (now_at[1] if now_at is not None and now_at[0] == inode else 0) != start:
            db.execute("ROLLBACK")
            return None
        n = 0
        for sid, outcome, reason, ended_at in records:
            if failure_consolidated(db, sid) or _known_end(db, sid, ended_at):
                continue  # never re-ended after a failure (SessionTier._refuse_reending_a_failure)
            record_end(db, sid, outcome, reason, ended_at, now)
            n += 1
        db.execute("INSERT INTO queue_file(name, inode, offset) VALUES (?,?,?) ON CONFLICT(name) DO UPDATE"
                   " SET inode=excluded.inode, offset=excluded.offset", (name, inode, end))
        if before_commit is not None:
            before_commit()
        db.execute("COMMIT")
        return n
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


# -- hook_sessions, recovered, harvested (consolidate.agents.hooks.lifecycle) --------------------------------

_HOOK_TABLES = """
CREATE TABLE IF NOT EXISTS hook_sessions (
    session_id TEXT PRIMARY KEY,
    base_session_id TEXT NOT NULL,
    transcript_path TEXT,
    cwd TEXT,
    source TEXT,
    started_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS hook_sessions_base ON hook_sessions(base_session_id);
CREATE TABLE IF NOT EXISTS recovered (
    session_id TEXT PRIMARY KEY,
    by_session TEXT NOT NULL,
    recovered_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS harvested (
    base_session_id TEXT NOT NULL,
    entry_key TEXT NOT NULL,
    harvested_at REAL NOT NULL,
    PRIMARY KEY (base_session_id, entry_key)
);
CREATE TABLE IF NOT EXISTS harvest_pending (
    session_id TEXT NOT NULL,
    part TEXT NOT NULL,
    transcript_path TEXT,
    end_offset INTEGER,
    since_compaction INTEGER NOT NULL DEFAULT 0,
    max_entries INTEGER,
    event TEXT,
    recorded_at REAL NOT NULL,
    recorded_by INTEGER,
    PRIMARY KEY (session_id, part)
);
"""


def ensure_hook_tables(db: sqlite3.Connection) -> None:
    """Create ``hook_sessions``, ``recovered``, ``harvested`` and ``harvest_pending`` when missing
    (inside a transaction, as part of it: ``executescript`` would commit it)."""
    if not db.in_transaction:
        db.executescript(_HOOK_TABLES)
        return
    for statement in _HOOK_TABLES.split(";"):
        if statement.strip():
            db.execute(statement)


def segments(db: sqlite3.Connection, base_session_id: str) -> list[str]:
    """The resumed parts (segments) recorded for the agent session, newest first."""
    return [r[0] for r in db.execute("SELECT session_id FROM hook_sessions WHERE base_session_id=? AND session_id!=?"
                                     " ORDER BY started_at DESC", (base_session_id, base_session_id)).fetchall()]


def record_hook_session(db: sqlite3.Connection, session_id: str, base_session_id: str, *, transcript_path: str | None,
                        cwd: str | None, source: str | None, started_at: float) -> None:
    """Record the session a SessionStart opened (again: its transcript and cwd kept when not given,
    its start time kept); ``source`` (an agent's free text) passes the gate of persisted text."""
    from consolidate.rules.persisted import gate  # noqa: PLC0415 - the secret gate's rules load here only: the light hooks import this module

    db.execute(
        "INSERT INTO hook_sessions(session_id, base_session_id, transcript_path, cwd, source, started_at)"
        " VALUES (?,?,?,?,?,?) ON CONFLICT(session_id) DO UPDATE SET"
        " transcript_path=COALESCE(excluded.transcript_path, hook_sessions.transcript_path),"
        " cwd=COALESCE(excluded.cwd, hook_sessions.cwd), source=excluded.source",
        (session_id, base_session_id, transcript_path, cwd, gate(source), started_at))  # an agent's free text


def transcript_path(db: sqlite3.Connection, session_id: str) -> str | None:
    """The transcript a SessionStart recorded for the session, or None."""
    r = db.execute("SELECT transcript_path FROM hook_sessions WHERE session_id=?", (session_id,)).fetchone()
    return r[0] if r else None


def hook_session_started(db: sqlite3.Connection, base_session_id: str) -> bool:
    """Whether a SessionStart recorded a part of the agent session."""
    return db.execute("SELECT 1 FROM hook_sessions WHERE base_session_id=? LIMIT 1",
                      (base_session_id,)).fetchone() is not None


def add_harvested_key(db: sqlite3.Connection, base_session_id: str, key: str, now: float) -> bool:
    """Record the transcript entry ``key`` as harvested for the agent session; False when it was."""
    cur = db.execute("INSERT OR IGNORE INTO harvested(base_session_id, entry_key, harvested_at) VALUES (?,?,?)",
                     (base_session_id, key, now))
    return cur.rowcount > 0


def harvested_keys(db: sqlite3.Connection, base_session_id: str) -> set[str]:
    """The transcript entry keys harvested for the agent session."""
    return {k for (k,) in db.execute("SELECT entry_key FROM harvested WHERE base_session_id=?", (base_session_id,))}


def mark_harvested(db: sqlite3.Connection, base_session_id: str, keys: list[str], now: float) -> None:
    """Record ``keys`` as harvested for the agent session, in one transaction (a key there is kept)."""
    with transaction(db):
        db.executemany("INSERT OR IGNORE INTO harvested(base_session_id, entry_key, harvested_at) VALUES (?,?,?)",
                       [(base_session_id, k, now) for k in keys])


def claim_recovery(db: sqlite3.Connection, session_id: str, by_session: str, now: float, stale_before: float) -> bool:
    """Claim the recovery of ``session_id`` for the SessionStart of ``by_session``: True when no
    recovery of it was claimed, or the last one before ``stale_before``; two SessionStarts at once
    recover a session once."""
    cur = db.execute("INSERT INTO recovered(session_id, by_session, recovered_at) VALUES (?,?,?)"
                     " ON CONFLICT(session_id) DO UPDATE SET by_session=excluded.by_session,"
                     " recovered_at=excluded.recovered_at WHERE recovered.recovered_at < ?",
                     (session_id, by_session, now, stale_before))
    return cur.rowcount > 0


def record_pending_harvest(db: sqlite3.Connection, session_id: str, part: str, *, transcript_path: str | None,
                           end_offset: int | None, since_compaction: bool, max_entries: int | None,
                           event: str | None, now: float, pid: int) -> None:
    """Record (or record again) the harvest ``part`` (``end``, ``precompact@<offset>``) of the session
    as not finished: the transcript at ``transcript_path`` read up to byte ``end_offset``."""
    db.execute("INSERT INTO harvest_pending(session_id, part, transcript_path, end_offset, since_compaction,"
               " max_entries, event, recorded_at, recorded_by) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(session_id, part)"
               " DO UPDATE SET transcript_path=excluded.transcript_path, end_offset=excluded.end_offset,"
               " since_compaction=excluded.since_compaction, max_entries=excluded.max_entries, event=excluded.event,"
               " recorded_at=excluded.recorded_at, recorded_by=excluded.recorded_by",
               (session_id, part, transcript_path, end_offset, int(since_compaction), max_entries, event, now, pid))


def pending_harvests(db: sqlite3.Connection, session_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The harvests not finished (of ``session_ids`` only, when given), oldest first: ``[{session_id,
    part, transcript_path, end_offset, since_compaction, max_entries, event, recorded_at, recorded_by}]``."""
    sql = ("SELECT session_id, part, transcript_path, end_offset, since_compaction, max_entries, event, recorded_at,"
           " recorded_by FROM harvest_pending")
    args: tuple = ()
    if session_ids is not None:
        ids = tuple(session_ids)
        if not ids:
            return []
        sql += f" WHERE session_id IN ({','.join('?' * len(ids))})"
        args = ids
    rows = db.execute(sql + " ORDER BY recorded_at, session_id, part", args).fetchall()
    keys = ("session_id", "part", "transcript_path", "end_offset", "since_compaction", "max_entries", "event",
            "recorded_at", "recorded_by")
    return [{**dict(zip(keys, r)), "since_compaction": bool(r[4])} for r in rows]


def clear_pending_harvest(db: sqlite3.Connection, session_id: str, part: str) -> None:
    """The harvest ``part`` of the session is finished."""
    db.execute("DELETE FROM harvest_pending WHERE session_id=? AND part=?", (session_id, part))


def stranded_harvests(db: sqlite3.Connection) -> list[tuple[str, str, int | None]]:
    """``[(session_id, status, claimed_by)]`` of the session ends queued or running with a harvest
    not finished (its hook was killed before it finished); [] when the table does not exist yet."""
    try:
        rows = db.execute("SELECT DISTINCT p.session_id, e.status, e.claimed_by FROM harvest_pending p JOIN session_ends e"
                          " ON e.session_id = p.session_id WHERE e.status IN ('queued', 'running')").fetchall()
    except Exception:  # noqa: BLE001 - no table yet: nothing pending
        return []
    return [(r[0], r[1], r[2]) for r in rows]


def pending_harvest_sessions(db: sqlite3.Connection) -> list[str]:
    """Sessions with a harvest not finished, oldest first; [] when the table does not exist yet."""
    try:
        rows = db.execute("SELECT session_id, MIN(recorded_at) FROM harvest_pending GROUP BY session_id"
                          " ORDER BY 2, 1").fetchall()
    except Exception:  # noqa: BLE001 - no table yet (a read-only store is not changed)
        return []
    return [r[0] for r in rows]


def _harvest_pending(db: sqlite3.Connection, session_id: str) -> bool:
    try:
        return db.execute("SELECT 1 FROM harvest_pending WHERE session_id=? LIMIT 1", (session_id,)).fetchone() is not None
    except Exception:  # noqa: BLE001 - no table yet
        return False


def prune_hook_tables(db: sqlite3.Connection, before: float) -> None:
    """Delete the rows of ``harvested``, ``hook_sessions``, ``recovered`` and ``harvest_pending`` older
    than ``before``."""
    db.execute("DELETE FROM harvest_pending WHERE recorded_at < ?", (before,))
    db.execute("DELETE FROM harvested WHERE harvested_at < ?", (before,))
    db.execute("DELETE FROM hook_sessions WHERE started_at < ?", (before,))
    db.execute("DELETE FROM recovered WHERE recovered_at < ?", (before,))


# -- agent_sessions (consolidate.store.sessions.agents) ----------------------------------------------------

_AGENT_SESSIONS = """
CREATE TABLE IF NOT EXISTS agent_sessions (
    session_id TEXT PRIMARY KEY,
    agent TEXT,
    started_at REAL NOT NULL,
    ancestors TEXT NOT NULL DEFAULT '[]',
    cwd TEXT
);
"""


def ensure_agent_sessions(db: sqlite3.Connection) -> None:
    """Create ``agent_sessions`` when missing."""
    db.executescript(_AGENT_SESSIONS)


def record_agent_start(db: sqlite3.Connection, session_id: str, *, agent: str | None, started_at: float,
                       ancestors: list[int], cwd: str | None) -> None:
    """Record (or update) the SessionStart of the agent session."""
    ensure_agent_sessions(db)
    db.execute(
        "INSERT INTO agent_sessions(session_id, agent, started_at, ancestors, cwd) VALUES (?,?,?,?,?)"
        " ON CONFLICT(session_id) DO UPDATE SET agent=excluded.agent, started_at=excluded.started_at,"
        " ancestors=excluded.ancestors, cwd=excluded.cwd",
        (session_id, agent, started_at, json.dumps(ancestors), cwd))


def open_agent_sessions(db: sqlite3.Connection, started_since: float) -> list[dict[str, Any]]:
    """Recorded agent sessions started at or after ``started_since`` with no session end after their
    last start, newest first: ``[{session_id, agent, started_at, ancestors, cwd}]``."""
    ensure_agent_sessions(db)
    rows = db.execute(
        "SELECT a.session_id, a.agent, a.started_at, a.ancestors, a.cwd FROM agent_sessions a"
        " LEFT JOIN session_ends e ON e.session_id = a.session_id"
        " WHERE a.started_at >= ? AND (e.session_id IS NULL OR e.ended_at < a.started_at)"
        " ORDER BY a.started_at DESC", (started_since,)).fetchall()
    return [dict(session_id=r[0], agent=r[1], started_at=r[2], ancestors=json.loads(r[3] or "[]"), cwd=r[4])
            for r in rows]


def agent_started_at(db: sqlite3.Connection, session_id: str) -> float:
    """When the agent session last started (0 when not recorded)."""
    r = db.execute("SELECT started_at FROM agent_sessions WHERE session_id=?", (session_id,)).fetchone()
    return float(r[0]) if r else 0.0


# -- shown (consolidate.store.echo) ------------------------------------------------------------------------

_SHOWN = """
CREATE TABLE IF NOT EXISTS shown (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT,
    shown_at REAL NOT NULL,
    digests TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS shown_session ON shown(session_id);
"""


def record_shown(db: sqlite3.Connection, session_id: str | None, digests: list[str], now: float,
                 keep_since: float) -> None:
    """Record the memory text ``digests`` shown (to ``session_id``, or to no session) at ``now``;
    rows shown before ``keep_since`` are deleted."""
    db.executescript(_SHOWN)
    db.execute("INSERT INTO shown(session_id, shown_at, digests) VALUES (?,?,?)",
               (session_id, now, json.dumps(digests)))
    db.execute("DELETE FROM shown WHERE shown_at < ?", (keep_since,))


def shown_digests(db: sqlite3.Connection, session_id: str, unattributed: tuple[float, float] | None = None) -> set[str]:
    """Digests shown to ``session_id``, and with ``unattributed = (start, end)`` those shown to no
    session in that time; a row that is not a JSON list is skipped."""
    db.executescript(_SHOWN)
    rows = db.execute("SELECT digests FROM shown WHERE session_id = ?", (session_id,)).fetchall()
    if unattributed is not None:
        rows += db.execute("SELECT digests FROM shown WHERE session_id IS NULL AND shown_at BETWEEN ? AND ?",
                           unattributed).fetchall()
    return set(_digests(rows))


def _digests(rows: list) -> Iterator[str]:
    for (d,) in rows:
        try:
            yield from json.loads(d)
        except ValueError:
            continue


# -- file_recall_shown (consolidate.agents.file_recall) -----------------------------------------------------

_FILE_RECALL_SHOWN = """
CREATE TABLE IF NOT EXISTS file_recall_shown (
    session_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    shown_at REAL NOT NULL,
    PRIMARY KEY (session_id, digest)
);
"""


def printed_digests(db: sqlite3.Connection, session_id: str) -> set[str]:
    """Digests of the memory texts the file-read hook printed to the session."""
    db.executescript(_FILE_RECALL_SHOWN)
    return {r[0] for r in db.execute("SELECT digest FROM file_recall_shown WHERE session_id=?", (session_id,))}


def record_printed(db: sqlite3.Connection, session_id: str, digests: Iterable[str], now: float,
                   keep_since: float) -> None:
    """Record the ``digests`` the file-read hook printed to the session; rows printed before
    ``keep_since`` are deleted."""
    db.executemany("INSERT OR IGNORE INTO file_recall_shown(session_id, digest, shown_at) VALUES (?,?,?)",
                   [(session_id, d, now) for d in digests])
    db.execute("DELETE FROM file_recall_shown WHERE shown_at < ?", (keep_since,))


# -- notes_files, notes_file_state (consolidate.model.notes_files) ------------------------------------

_NOTES_FILES = """
CREATE TABLE IF NOT EXISTS notes_files (
    session_id TEXT NOT NULL,
    source_file TEXT NOT NULL,
    digests TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    PRIMARY KEY (session_id, source_file)
);
CREATE TABLE IF NOT EXISTS notes_file_state (
    scope TEXT NOT NULL,
    source_file TEXT NOT NULL,
    digests TEXT NOT NULL,
    session_id TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    PRIMARY KEY (scope, source_file)
);
CREATE TABLE IF NOT EXISTS notes_file_runs (
    run_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    source_file TEXT NOT NULL,
    added TEXT NOT NULL,
    PRIMARY KEY (run_id, scope, source_file)
);
"""


def ensure_notes_files(db: sqlite3.Connection) -> None:
    """Create the notes-file tables when missing (one statement at a time: also inside a transaction)."""
    for statement in _NOTES_FILES.split(";"):
        if statement.strip():
            db.execute(statement)


def record_notes_file(db: sqlite3.Connection, scope: str, session_id: str, source_file: str,
                      digests: list[str], now: float) -> None:
    """Record what ``source_file`` holds as of ``session_id`` (the note digests of
    :func:`consolidate.model.notes_files.note_digest`): the session's snapshot, read by its run and
    made the file's state in ``scope`` when the run applies (:func:`settle_notes_files`). Call inside a
    transaction, after :func:`ensure_notes_files`."""
    data = json.dumps(sorted(set(digests)))
    db.execute("INSERT OR REPLACE INTO notes_files(session_id, source_file, digests, recorded_at) VALUES (?,?,?,?)",
               (session_id, source_file, data, now))


def notes_files(db: sqlite3.Connection, session_id: str) -> dict[str, list[str]]:
    """``{source_file: [digest, ...]}``: the notes files the session recorded (:func:`record_notes_file`)."""
    ensure_notes_files(db)
    return {f: json.loads(d) for f, d in db.execute(
        "SELECT source_file, digests FROM notes_files WHERE session_id=? ORDER BY source_file", (session_id,))}


def notes_file_state(db: sqlite3.Connection, scope: str, source_file: str) -> set[str]:
    """The digests ``source_file`` held at its latest snapshot in ``scope`` (empty: never recorded);
    after :func:`ensure_notes_files`."""
    row = db.execute("SELECT digests FROM notes_file_state WHERE scope=? AND source_file=?",
                     (scope, source_file)).fetchone()
    return set(json.loads(row[0])) if row else set()


def settle_notes_files(db: sqlite3.Connection, scope: str, session_id: str, run_id: str,
                       added: dict[str, list[str]], now: float) -> None:
    """The session's run ``run_id`` applied its snapshots: each becomes its file's state in ``scope``
    (what the next hand-over's new notes are told by), the digests of the notes the run took from each
    file (``added``) are kept for its undo (:func:`unsettle_notes_files`), and the session's rows go. A
    session that failed or has not run leaves the state as it was, so the notes it added are new again
    to the next session."""
    ensure_notes_files(db)
    with transaction(db):
        for source_file, data, recorded_at in db.execute(
                "SELECT source_file, digests, recorded_at FROM notes_files WHERE session_id=?", (session_id,)).fetchall():
            # an older hand-over applied after a newer one (sessions ended or run out of order) leaves the newer state
            db.execute("INSERT INTO notes_file_state(scope, source_file, digests, session_id, recorded_at)"
                       " VALUES (?,?,?,?,?) ON CONFLICT(scope, source_file) DO UPDATE SET digests=excluded.digests,"
                       " session_id=excluded.session_id, recorded_at=excluded.recorded_at"
                       " WHERE excluded.recorded_at >= notes_file_state.recorded_at",
                       (scope, source_file, data, session_id, recorded_at))
        for source_file, digests in added.items():
            db.execute("INSERT OR REPLACE INTO notes_file_runs(run_id, scope, source_file, added) VALUES (?,?,?,?)",
                       (run_id, scope, source_file, json.dumps(sorted(set(digests)))))
        db.execute("DELETE FROM notes_files WHERE session_id=?", (session_id,))


def unsettle_notes_files(db: sqlite3.Connection, run_id: str) -> int:
    """``run_id`` was undone: the notes it took from notes files leave the files' state, so the next
    hand-over of a file that still holds them adds them again (nothing the undo took out is lost).
    Returns how many files' states changed."""
    ensure_notes_files(db)
    n = 0
    with transaction(db):
        for scope, source_file, added in db.execute(
                "SELECT scope, source_file, added FROM notes_file_runs WHERE run_id=?", (run_id,)).fetchall():
            held = notes_file_state(db, scope, source_file)
            left = held - set(json.loads(added))
            if left != held:
                db.execute("UPDATE notes_file_state SET digests=? WHERE scope=? AND source_file=?",
                           (json.dumps(sorted(left)), scope, source_file))
                n += 1
        db.execute("DELETE FROM notes_file_runs WHERE run_id=?", (run_id,))
    return n


def notes_of_file(db: sqlite3.Connection, session_id: str, source_file: str) -> dict[int, str]:
    """``{note id: content}``: the session's notes taken from the notes file ``source_file`` (metadata
    ``source_file``)."""
    return {i: c for i, c, m in db.execute("SELECT id, content, metadata FROM notes WHERE session_id=?", (session_id,))
            if json.loads(m or "{}").get("source_file") == source_file}


def drop_notes(db: sqlite3.Connection, note_ids: list[int]) -> None:
    """Delete the notes ``note_ids`` and their waiting rows, inside the caller's transaction (a notes file
    handed over again that no longer holds them; ``secure_delete`` overwrites their pages)."""
    for i in range(0, len(note_ids), 500):
        chunk = note_ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        db.execute(f"DELETE FROM notes WHERE id IN ({marks})", chunk)
        db.execute(f"DELETE FROM waiting WHERE note_id IN ({marks})", chunk)


def notes_file_times(db: sqlite3.Connection, session_id: str | None = None, scope: str | None = None) -> dict[str, float]:
    """``{source_file: recorded_at}`` (Unix seconds): when the session's hand-overs were recorded
    (``session_id``), or when the hand-over that is each file's state in ``scope`` was (``scope``)."""
    ensure_notes_files(db)
    if session_id is not None:
        rows = db.execute("SELECT source_file, recorded_at FROM notes_files WHERE session_id=?", (session_id,))
    else:
        rows = db.execute("SELECT source_file, recorded_at FROM notes_file_state WHERE scope=?", (scope,))
    return {f: float(t) for f, t in rows}


def notes_file_states(db: sqlite3.Connection, scope: str) -> dict[str, set[str]]:
    """``{source_file: digests}``: every notes file's state in ``scope`` (what it held at its last
    consolidated hand-over)."""
    ensure_notes_files(db)
    return {f: set(json.loads(d)) for f, d in db.execute(
        "SELECT source_file, digests FROM notes_file_state WHERE scope=?", (scope,))}
