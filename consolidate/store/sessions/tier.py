"""The session tier: scratch notes per session and the queue of session ends, in one SQLite file.

The file is ``sessions.sqlite3`` in the store folder, in WAL mode (readers never block the writer),
with a 10 s busy timeout so that concurrent hooks wait instead of failing. Only the standard library
is imported here: this module is on the session-end fast path. The tables beside these three (the
hooks', the echo records', the queue file's) and the statements the light entry point runs are
consolidate.store.sessions.tables'. The secret gate a note passes on its way in (redacted before it is
stored) is consolidate.store.sessions.write_gate's.

Tables:
- ``notes(id, session_id, content, flag, kind, created_at, expires_at, metadata)``; times are Unix
  seconds, ``metadata`` is a JSON object (fields of an import line other than the known ones).
- ``session_ends(session_id, outcome, reason, ended_at, status, run_id, result, updated_at,
  claimed_by, claimed_at)``: the queue. ``status`` is ``queued``; ``running`` while a process (pid
  ``claimed_by``) holds it; then ``done``, ``failure`` or ``aborted``. A ``running`` row whose process
  is gone, or whose claim is older than the stale age, is claimable again: a dead worker loses nothing.
  ``partial``: the run left notes waiting for a judge (see ``waiting``).
- ``waiting(note_id, session_id, since, until, attempts, reasons)``: notes no judge answered, kept in
  the session tier until a run with an answering judge judges them or ``until`` (Unix seconds) passes
  (``consolidate.pipeline.deferral``); ``reasons`` is the JSON list of the last run's judge failures.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from consolidate.core.spawn import alive as _alive  # the one liveness check of a pid (consolidate/core/spawn.py)
from consolidate.core.normal import blank
from consolidate.core.textmeasure import MAX_STATEMENT_CHARS, statement_length
from consolidate.core.vocab import END_PENDING, NOTE_KINDS, SESSION_OUTCOMES
from consolidate.core.errors import StoreReadOnly

if TYPE_CHECKING:
    from consolidate.model.plan import Note

from consolidate.store.sessions import tables as session_tables
from consolidate.store.sessions.queue_file import fold_queue_file
from consolidate.store.sessions.notes_files import NotesFilesMixin
from consolidate.store.sessions.segments import session_for_end
from consolidate.store.sessions.write_gate import redaction_notice, secret_gate_at_write
from consolidate.rules import persisted  # the gate of persisted free text; the secret gate loads on first use
from consolidate.core.errors import BadInput, EmptyNote, StoreCorrupt, UnknownSession
import unicodedata
from urllib.parse import quote

#: Largest note accepted, in characters (1 MB of ASCII). A working note past this is almost surely a
#: pasted file or log; it is refused with a clear error rather than stored.
MAX_NOTE_CHARS = 1_000_000
MAX_TTL_SECONDS = 10 * 365 * 86400.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    content TEXT NOT NULL,
    flag INTEGER NOT NULL DEFAULT 0,
    kind TEXT,
    created_at REAL NOT NULL,
    expires_at REAL,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS notes_session ON notes(session_id);
CREATE TABLE IF NOT EXISTS session_ends (
    session_id TEXT PRIMARY KEY,
    outcome TEXT NOT NULL,
    reason TEXT,
    ended_at REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'queued',
    run_id TEXT,
    result TEXT,
    updated_at REAL NOT NULL,
    claimed_by INTEGER,
    claimed_at REAL
);
CREATE TABLE IF NOT EXISTS waiting (
    note_id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    since REAL NOT NULL,
    until REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 1,
    reasons TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS waiting_session ON waiting(session_id);
"""

_KNOWN_IMPORT_FIELDS = {"content", "flag", "kind", "ttl", "session_id"}
_TTL_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_TTL_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_ttl(value: str | int | float | None) -> float | None:
    """Parse a TTL such as ``20m``, ``2h``, ``90`` (seconds), ``1d`` into seconds.

    Raises BadInput for anything else or for a TTL that is not positive."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        m = _TTL_RE.match(str(value))
        if not m:
            raise BadInput(f"bad TTL {value!r}: use a positive number with s, m, h, d or w (e.g. 20m)", value=value)
        seconds = float(m.group(1)) * _TTL_UNITS[m.group(2)]
    if seconds <= 0:
        raise BadInput(f"bad TTL {value!r}: it must be positive", value=value)
    if seconds > MAX_TTL_SECONDS:
        raise BadInput(f"bad TTL {value!r}: at most 10 years", value=value)
    return seconds


def check_session_id(session_id) -> str:
    """Return the session id stripped (a number is taken as its text); BadInput when it is empty,
    longer than 200 characters, not valid text, or holds a control character anywhere (a newline,
    a tab, an escape, a bidi or zero-width mark: :func:`_check_id_characters`). Every entry point
    (CLI ``--session``, MCP tools, hook payloads, the Python API) passes its id through here. An id
    holding a secret (``ghp_...``) is returned as its pseudonym (consolidate.rules.persisted.identifier)."""
    if isinstance(session_id, (int, float)) and not isinstance(session_id, bool):
        session_id = str(session_id)
    if not isinstance(session_id, str):
        raise BadInput(f"a session id must be text, got {type(session_id).__name__}", session_id=None)
    _check_id_characters(session_id)
    sid = session_id.strip()
    if not sid:
        raise BadInput("the session id is empty", session_id=session_id)
    if len(sid) > 200:
        raise BadInput(f"the session id is {len(sid)} characters; the limit is 200", session_id=sid[:20])
    _check_text(sid, "the session id")
    return persisted.identifier(sid)  # an id holding a secret is kept under its pseudonym


#: Unicode categories a session id may not hold: controls (Cc: newline, tab, escape, DEL, C1),
#: format characters (Cf: bidi overrides, zero-width marks, BOM), line and paragraph separators.
_ID_REFUSED_CATEGORIES = ("Cc", "Cf", "Zl", "Zp")


_CONTROL_NAMES = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\x1b": "an escape",
                  "\x00": "a NUL", "\x7f": "a delete"}


def _check_id_characters(session_id: str) -> None:
    """BadInput naming the first control character of ``session_id`` (its code point, name and
    1-based position): a session id is one line of visible text, shown in logs, events and names."""
    for i, ch in enumerate(session_id, 1):
        if unicodedata.category(ch) in _ID_REFUSED_CATEGORIES:
            name = _CONTROL_NAMES.get(ch) or unicodedata.name(ch, "a control character")
            raise BadInput(f"the session id holds U+{ord(ch):04X} ({name}) at character {i}: a session id is one"
                           " line of visible text (letters, digits, spaces, punctuation)", session_id=None)


def _check_text(text: str, what: str) -> None:
    """BadInput for a NUL character or a lone surrogate (invalid UTF-8 given on a command line
    arrives as lone surrogates)."""
    if "\x00" in text:
        raise BadInput(f"{what} holds a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadInput(f"{what} is not valid UTF-8 text (undecodable byte or lone surrogate at character {exc.start})") from None


def check_content(content: str, session_id: str, *, flag: bool = False) -> str:
    """Validate a note's content: BadInput when it is not text, empty (whitespace or invisible
    characters only), past MAX_NOTE_CHARS (past MAX_STATEMENT_CHARS for a ``flag``-ged note, which
    becomes a memory as it is written), or holds NUL or invalid UTF-8. Every writer of notes checks
    here: ``note``, ``import``, MCP ``note``, the workspace's extract and the hook's harvest."""
    if not isinstance(content, str):
        raise BadInput(f"note content must be text, got {type(content).__name__}", session_id=session_id)
    if blank(content):  # whitespace and invisible characters only (consolidate/core/normal.py)
        raise EmptyNote("empty note: the content is empty or whitespace only", session_id=session_id)
    if len(content) > MAX_NOTE_CHARS:
        raise BadInput(
            f"note is {len(content):,} characters; the limit is {MAX_NOTE_CHARS:,}",
            session_id=session_id,
        )
    if flag and len(content) > MAX_STATEMENT_CHARS and statement_length(content) > MAX_STATEMENT_CHARS:
        raise BadInput(
            f"flagged note is {statement_length(content):,} characters; a memory's statement is at most"
            f" {MAX_STATEMENT_CHARS:,} (a flagged note is kept as it is written): shorten it to the one fact to"
            " remember, or write it without the flag for a judge to condense", session_id=session_id)
    _check_text(content, "note content")
    return content


def check_kind(kind) -> str | None:
    """The kind in lower case, None for no kind; BadInput for anything but the six memory types."""
    if kind is None or (isinstance(kind, str) and not kind.strip()):
        return None
    k = kind.strip().lower() if isinstance(kind, str) else None
    if k not in NOTE_KINDS:
        raise BadInput(f"unknown kind {kind!r}: use one of {', '.join(NOTE_KINDS)}", kind=kind)
    return k


def check_flag(flag) -> bool:
    """A note's flag: JSON true/false (or 1/0); BadInput for anything else (``"false"`` is not false)."""
    if flag is None:
        return False
    if isinstance(flag, bool) or flag in (0, 1):
        return bool(flag)
    raise BadInput(f"flag must be true or false, got {flag!r}")


class NoteId(int):
    """A note id (an ``int``) that also carries ``notice``: one line for the writer when the secret
    gate redacted the note before it was stored (None otherwise)."""

    notice: str | None = None

    def __new__(cls, value: int, notice: str | None = None):
        obj = super().__new__(cls, value)
        obj.notice = notice
        return obj


class ImportCounts(dict):
    """``{session_id: notes imported}`` that also carries ``notices``: ``[(line number, one line)]``
    for the lines whose notes the secret gate redacted before they were stored."""

    def __init__(self, *args, notices: list[tuple[int, str]] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.notices: list[tuple[int, str]] = list(notices or [])


_SCHEMA_ONLY = re.compile(r"^\s*CREATE\s+(?:TABLE|INDEX)\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.IGNORECASE)


class ReadOnlyConnection(sqlite3.Connection):
    """The connection of a session tier on a read-only store (``SessionTier._connect_read_only``):
    a write through it raises :class:`~consolidate.core.errors.StoreReadOnly` naming the store (one line,
    exit 4 on the CLI, a tool error over MCP), never sqlite3's "attempt to write a readonly
    database". A script that only creates missing tables and indexes (``CREATE ... IF NOT EXISTS``,
    how readers make sure of their table) is a no-op when they all exist."""

    store_path = "?"

    def _refuse(self, exc: sqlite3.Error):

        return StoreReadOnly(f"the store {self.store_path} is read-only: read commands work, writes need a"
                             " writable folder", path=self.store_path)

    def _mapped(self, call, *args):
        try:
            return call(*args)
        except sqlite3.OperationalError as exc:
            if "readonly" in str(exc) or "read-only" in str(exc):
                raise self._refuse(exc) from None
            raise

    def execute(self, sql, parameters=(), /):
        return self._mapped(super().execute, sql, parameters)

    def executemany(self, sql, parameters, /):
        return self._mapped(super().executemany, sql, parameters)

    def executescript(self, script, /):
        statements = [x for x in script.split(";") if x.strip()]
        names = [_SCHEMA_ONLY.match(x) for x in statements]
        if statements and all(names):
            known = {r[0] for r in super().execute("SELECT name FROM sqlite_master").fetchall()}
            if all(m.group(1) in known for m in names):
                return super().cursor()
        return self._mapped(super().executescript, script)


class SessionTier(NotesFilesMixin):
    """The session tier of one store. ``path`` is the SQLite file; it is created on first use.

    Raises StoreCorrupt when the file exists but is not a SQLite database of this layout."""

    _check_session_id = staticmethod(check_session_id)  # for NotesFilesMixin (consolidate/store/sessions/notes_files.py)

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._local = threading.local()
        _ = self.db  # open now, so a corrupt file is reported at once

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection (batch runs consolidate sessions in several threads)."""
        conn = getattr(self._local, "db", None)
        if conn is None and self.read_only:
            conn = self._local.db = self._connect_read_only()
        if conn is None:
            try:
                conn = sqlite3.connect(str(self.path), timeout=10.0, isolation_level=None)
                # WAL, and secure_delete: deleted notes may hold secrets (the secret gate blocks them from
                # the long-term store, not from the scratch tier); their pages are overwritten
                session_tables.set_up(conn)
                conn.executescript(_SCHEMA)
            except sqlite3.DatabaseError as exc:
                raise StoreCorrupt(f"{self.path} is not a usable SQLite database ({exc}); `consolidate doctor`"
                                   " says what to do", path=str(self.path), cause=str(exc)) from None
            self._local.db = conn
            self.fold_queue_file()
        return conn

    def fold_queue_file(self) -> int:
        """Fold the session ends the light hook appended to ``queue.jsonl`` into the queue table
        (consolidate.store.sessions.queue_file), each ending a resumed session's open part
        (consolidate.store.sessions.segments.session_for_end); returns how many. Never raises: they
        are folded next time."""
        if self.read_only or getattr(self._local, "folding", False):
            return 0
        self._local.folding = True  # session_for_end reads the tier: no fold inside the fold
        try:
            return fold_queue_file(self.db, self.path.parent, lambda sid: session_for_end(self, sid))
        except (sqlite3.Error, OSError, ValueError):
            return 0
        finally:
            self._local.folding = False

    @property
    def read_only(self) -> bool:
        """Whether the file exists in a folder this process cannot write (a read-only mount)."""
        return self.path.exists() and not os.access(self.path.parent, os.W_OK)

    def _connect_read_only(self) -> sqlite3.Connection:
        """A read-only connection (``mode=ro``; ``immutable=1`` when SQLite cannot even take its
        read lock on a read-only mount). Writes through it fail; commands refuse before writing."""
        last = None
        for flags in ("mode=ro", "immutable=1"):
            try:
                conn = sqlite3.connect(f"file:{quote(str(self.path.resolve()))}?{flags}", uri=True, timeout=10.0,
                                       isolation_level=None, factory=ReadOnlyConnection)
                conn.store_path = str(self.path.parent)
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                conn.execute("PRAGMA query_only=ON")
                return conn
            except sqlite3.DatabaseError as exc:
                last = exc
        raise StoreCorrupt(f"{self.path} cannot be read on this read-only store ({last})", path=str(self.path))

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "db", None)
        if conn is not None:
            conn.close()
            self._local.db = None

    # -- notes -------------------------------------------------------------------------------------

    def add_note(
        self,
        session_id: str,
        content: str,
        *,
        flag: bool = False,
        ttl: str | float | None = None,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
        now: float | None = None,
    ) -> int:
        """Write one note and return its id. ``ttl`` in seconds or as ``20m``/``2h``/``1d``.

        A note holding secret material is stored redacted (consolidate.store.sessions.write_gate); the
        returned :class:`NoteId` then carries a one-line ``notice`` for the writer.

        Raises BadInput (EmptyNote for an empty note)."""
        sid = check_session_id(session_id)
        check_content(content, sid, flag=bool(flag))
        kind = check_kind(kind)
        seconds = parse_ttl(ttl)
        now = time.time() if now is None else now
        content, metadata, redaction = secret_gate_at_write(content, metadata)
        with self._transaction():
            self.refuse_notes_to_a_failure(sid)
            cur = self.db.execute(
                "INSERT INTO notes(session_id, content, flag, kind, created_at, expires_at, metadata)"
                " VALUES (?,?,?,?,?,?,?)",
                (sid, content, int(bool(flag)), kind, now, now + seconds if seconds else None,
                 json.dumps(metadata or {}, ensure_ascii=False)),
            )
        note_id = int(cur.lastrowid or 0)  # set after an INSERT
        return NoteId(note_id, redaction_notice(note_id, content, redaction) if redaction else None)

    def import_jsonl(self, path: str | Path, session_id: str | None = None, *, now: float | None = None,
                     written: list[dict[str, Any]] | None = None) -> dict[str, int]:
        """Import a JSONL file, one note per line, all or nothing.

        ``content`` is required; ``flag``, ``kind`` and ``ttl`` are used when present; every other
        field is kept as note metadata (an ``id`` field is kept as ``metadata["id"]``). The session is
        ``session_id`` or, when None, each line's own ``session_id`` field. Blank lines are skipped.
        Returns ``{session_id: notes imported}`` (an :class:`ImportCounts` whose ``notices`` name the
        lines whose notes held secret material: those are stored redacted, see
        consolidate.store.sessions.write_gate). When ``written`` is a list, one dict per note imported is
        appended to it: ``line`` (1-based), ``note_id``, ``session_id``, ``flag``, ``kind``, ``content``
        (as stored), ``metadata`` (the CLI answers the write policy for flagged ones from it).

        Raises BadInput for an unreadable file, InvalidImportLine (with ``path`` and ``line``) for
        invalid UTF-8, invalid JSON, a missing/empty ``content``, or a missing session id."""
        from consolidate.core.jsonl import read_objects  # noqa: PLC0415 - off the SessionStart hook path (core.jsonl)

        rows = []
        notices: list[tuple[int, str]] = []
        for lineno, obj, bad in read_objects(path, suffix="; nothing was imported"):
            content = obj.get("content")
            if not isinstance(content, str) or not content.strip():
                raise bad("no `content` (a non-empty string is required)")
            sid = session_id or obj.get("session_id")
            if sid is None or (isinstance(sid, str) and not sid.strip()):
                raise bad("no session id: pass --session or give a `session_id` field")
            try:
                sid = check_session_id(sid)
                flag = check_flag(obj.get("flag"))
                check_content(content, sid, flag=flag)
                ttl = parse_ttl(obj.get("ttl")) if obj.get("ttl") is not None else None
                kind = check_kind(obj.get("kind"))
                meta = {k: v for k, v in obj.items() if k not in _KNOWN_IMPORT_FIELDS}
                _check_text(json.dumps(meta, ensure_ascii=False), "a metadata field")
            except BadInput as exc:
                raise bad(str(exc)) from None
            content, meta, redaction = secret_gate_at_write(content, meta)
            if redaction:
                notices.append((lineno, redaction_notice(None, content, redaction)))
            rows.append((sid, content, flag, kind, ttl, meta, lineno))
        now = time.time() if now is None else now
        counts = ImportCounts(notices=notices)
        with self._transaction():
            for sid in dict.fromkeys(r[0] for r in rows):
                try:
                    self.refuse_notes_to_a_failure(sid)
                except BadInput as exc:
                    raise BadInput(f"{exc}; nothing was imported", session_id=sid) from None
            for sid, content, flag, kind, ttl, meta, lineno in rows:
                cur = self.db.execute(
                    "INSERT INTO notes(session_id, content, flag, kind, created_at, expires_at, metadata)"
                    " VALUES (?,?,?,?,?,?,?)",
                    (sid, content, int(flag), kind, now, now + ttl if ttl else None, json.dumps(meta, ensure_ascii=False)),
                )
                counts[sid] = counts.get(sid, 0) + 1
                if written is not None:
                    written.append({"line": lineno, "note_id": int(cur.lastrowid or 0), "session_id": sid, "flag": flag,
                                    "kind": kind, "content": content, "metadata": meta})
        return counts

    def count(self, session_id: str) -> int:
        """Number of notes of the session (expired ones included)."""
        return self.db.execute("SELECT COUNT(*) FROM notes WHERE session_id=?", (session_id,)).fetchone()[0]

    def notes(self, session_id: str) -> list[Note]:
        """The session's notes, oldest first."""
        from consolidate.model.plan import Note  # here, not at the top: the hooks open the session tier without plan's imports  # noqa: PLC0415 - off the SessionStart hook path (5 modules)

        rows = self.db.execute(
            "SELECT id, session_id, content, flag, kind, created_at, expires_at, metadata"
            " FROM notes WHERE session_id=? ORDER BY id",
            (session_id,),
        ).fetchall()
        return [
            Note(id=r[0], session_id=r[1], content=r[2], flag=bool(r[3]), kind=r[4], created_at=r[5],
                 expires_at=r[6], metadata=json.loads(r[7] or "{}"))
            for r in rows
        ]

    def delete_notes(self, note_ids: Iterable[int]) -> int:
        """Delete notes by id, overwriting their content on disk (``secure_delete`` and a WAL
        checkpoint); returns how many existed. Deleting a missing id is not an error (replay)."""
        ids = list(note_ids)
        n = 0
        with self._transaction():
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                cur = self.db.execute(f"DELETE FROM notes WHERE id IN ({','.join('?' * len(chunk))})", chunk)
                n += cur.rowcount
                self.db.execute(f"DELETE FROM waiting WHERE note_id IN ({','.join('?' * len(chunk))})", chunk)
        if n:
            # Old WAL frames still hold the deleted rows: fold them into the database and truncate.
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return n

    def replace_notes(self, session_id: str, old_ids: list[int], notes: list[dict[str, Any]], *,
                      now: float | None = None) -> list[int]:
        """In one transaction, delete the notes ``old_ids`` and add ``notes`` to ``session_id``
        (dicts: ``content``, ``flag``, ``kind``, ``expires_at`` (Unix seconds or None), ``metadata``),
        created at ``now``; returns the new note ids in order. The caller has checked the contents
        (the workspace extract: consolidate/pipeline/workspace.py); no secret gate runs here. Raises BadInput,
        changing nothing, when the session was consolidated as a failure
        (:meth:`refuse_notes_to_a_failure`)."""
        now = time.time() if now is None else now
        ids = []
        with self._transaction():
            self.refuse_notes_to_a_failure(session_id)
            if old_ids:
                self.db.execute(f"DELETE FROM notes WHERE id IN ({','.join('?' * len(old_ids))})", list(old_ids))
            for n in notes:
                cur = self.db.execute(
                    "INSERT INTO notes(session_id, content, flag, kind, created_at, expires_at, metadata)"
                    " VALUES (?,?,?,?,?,?,?)",
                    (session_id, n["content"], int(bool(n.get("flag"))), n.get("kind"), now, n.get("expires_at"),
                     json.dumps(n.get("metadata") or {}, ensure_ascii=False)))
                ids.append(int(cur.lastrowid or 0))  # set after an INSERT
        return ids

    def redact_notes(self, redacted: dict[int, tuple[str, dict]]) -> None:
        """Overwrite notes with their redacted content and metadata (kept rows of a failed session
        that held secrets), on disk too (``secure_delete`` and a WAL checkpoint)."""
        if not redacted:
            return
        with self._transaction():
            for nid, (content, meta) in redacted.items():
                self.db.execute("UPDATE notes SET content=?, metadata=? WHERE id=?",
                                (content, json.dumps(meta, ensure_ascii=False), nid))
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- notes waiting for a judge (consolidate.pipeline.deferral) ------------------------------------------

    def set_waiting(self, session_id: str, waits: dict[int, tuple[float, float, list[str]]]) -> None:
        """Record notes as waiting for a judge: ``{note_id: (since, until, reasons)}`` (Unix seconds).
        A note already waiting keeps its ``since`` and ``until`` (its bound never moves) and counts
        one more attempt. Idempotent per run only in effect (a replay adds one attempt)."""
        if not waits:
            return
        with self._transaction():
            for nid, (since, until, reasons) in waits.items():
                self.db.execute(
                    "INSERT INTO waiting(note_id, session_id, since, until, attempts, reasons) VALUES (?,?,?,?,1,?)"
                    " ON CONFLICT(note_id) DO UPDATE SET attempts=waiting.attempts+1, reasons=excluded.reasons",
                    (nid, session_id, since, until, json.dumps(persisted.gate_value(list(reasons[:5])), ensure_ascii=False)))

    def waiting(self, session_id: str | None = None) -> dict[int, dict[str, Any]]:
        """Notes waiting for a judge (of ``session_id`` when given): ``{note_id: {"session_id",
        "since", "until", "attempts", "reasons"}}``. Rows whose note is gone are left out."""
        sql = ("SELECT w.note_id, w.session_id, w.since, w.until, w.attempts, w.reasons FROM waiting w"
               " JOIN notes n ON n.id = w.note_id")
        args: tuple = ()
        if session_id is not None:
            sql += " WHERE w.session_id=?"
            args = (session_id,)
        return {r[0]: {"session_id": r[1], "since": r[2], "until": r[3], "attempts": r[4],
                       "reasons": json.loads(r[5] or "[]")} for r in self.db.execute(sql + " ORDER BY w.note_id", args)}

    def clear_waiting(self, note_ids: Iterable[int]) -> None:
        """Forget the waiting rows of these notes (judged, expired or deleted)."""
        ids = list(note_ids)
        with self._transaction():
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                self.db.execute(f"DELETE FROM waiting WHERE note_id IN ({','.join('?' * len(chunk))})", chunk)

    def partial(self) -> list[dict[str, Any]]:
        """Session ends whose run left notes waiting for a judge, oldest first."""
        return self._ends(("partial",), None)

    def requeue_partial(self, session_id: str) -> bool:
        """Put a ``partial`` session end back in the queue, so the next claim judges its waiting
        notes; True when it was partial."""
        cur = self.db.execute("UPDATE session_ends SET status='queued', updated_at=? WHERE session_id=?"
                              " AND status='partial'", (time.time(), session_id))
        return cur.rowcount > 0

    def sessions(self) -> dict[str, int]:
        """Every session with notes: ``{session_id: note count}``."""
        return session_tables.note_counts(self.db)

    # -- session ends (the queue) -----------------------------------------------------------------

    def end(self, session_id: str, outcome: str, reason: str | None = None, *, now: float | None = None) -> None:
        """Record the session end in the queue (idempotent: a second end of a queued session updates
        its outcome and reason). A reason holding secret material is stored redacted. Raises BadInput
        for an unknown outcome, and for a session already consolidated as a failure."""
        sid = check_session_id(session_id)
        if outcome not in SESSION_OUTCOMES:
            raise BadInput(f"unknown outcome {outcome!r}: use one of {', '.join(SESSION_OUTCOMES)}", outcome=outcome)
        reason = persisted.gate(reason)  # its private spans and secrets never reach the file
        now = time.time() if now is None else now
        with self._transaction():
            self._refuse_reending_a_failure(sid)
            if outcome == "failure":
                self._refuse_failing_a_consolidated_success(sid)
            self._record_end(sid, outcome, reason, now)

    def refuse_notes_to_a_failure(self, sid: str) -> None:
        """A session consolidated as a failure takes no more notes: nothing would ever consolidate
        them (its notes are never promoted, and it is never ended again), so a note written to it
        would be stranded. Raises BadInput naming what to do (a new session id); a failure whose
        end is still queued may still be replaced, and takes notes. The note, import, MCP ``note``,
        workspace and hook harvest paths all write through here."""
        if session_tables.failure_consolidated(self.db, sid):
            raise BadInput(f"session {sid} ended in failure and was consolidated as one: a note written to it would"
                           " never be consolidated; write it to a new session id", session_id=sid)

    def ended_hint(self, sid: str) -> str:
        """One line for a note just written to ``sid`` when that session already ended and was
        consolidated ('' otherwise: open, its end still queued or running, or a partial run that
        the next run finishes): the note waits until the session is ended again, and how to start
        a new one. ``consolidate note`` prints it (a note after its session ended gave no hint)."""
        end = self.session_end(sid)
        if end is None or end["status"] in (*END_PENDING, "partial"):
            return ""
        return (f"session {sid} already ended and was consolidated ({end['status']}): this note waits until it is"
                f" ended again (`consolidate end --session {sid} --outcome success`); for new work start a new"
                " session (a new --session id, or `consolidate session start --session ID --task TEXT`)")

    def _refuse_reending_a_failure(self, sid: str) -> None:
        """A session consolidated as a failure is never ended again (its notes must never be
        promoted by any path: batch's orphan sweep, a later hook, a hand-typed end). Raises BadInput."""
        if session_tables.failure_consolidated(self.db, sid):
            raise BadInput(f"session {sid} ended in failure and was consolidated as one: its notes are never"
                           " promoted; use a new session id", session_id=sid)

    def _refuse_failing_a_consolidated_success(self, sid: str) -> None:
        """A session consolidated as a success with no note written since cannot be ended as a
        failure: its keepers are already memories, and a failure run would have nothing to keep back
        (it would only record a ``session.failed`` for notes that are gone). Raises BadInput naming
        the run and what to do (``consolidate undo`` reverts its memories). A session with notes
        written since may fail: those notes are kept back."""
        r = self.db.execute("SELECT outcome, status, run_id FROM session_ends WHERE session_id=?", (sid,)).fetchone()
        if r is None or r[0] != "success" or r[1] in END_PENDING or self.count(sid):
            return
        run = f" (run {r[2]})" if r[2] else ""
        undo = f"`consolidate undo {r[2]}` reverts its memories" if r[2] else "its run wrote nothing"
        raise BadInput(f"session {sid} was already consolidated as a success{run} and has no notes since: a failure"
                       f" now changes nothing ({undo}); a session that failed later takes a new session id",
                       session_id=sid)

    def _record_end(self, sid: str, outcome: str, reason: str | None, now: float) -> None:
        session_tables.record_end(self.db, sid, outcome, reason, now, now)

    def queued(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Queued session ends (not yet taken by a run), oldest first (only ``session_id``'s when given)."""
        self.fold_queue_file()
        return self._ends(("queued",), session_id)

    def _ends(self, statuses: tuple[str, ...], session_id: str | None) -> list[dict[str, Any]]:
        sql = (f"SELECT session_id, outcome, reason, ended_at FROM session_ends"
               f" WHERE status IN ({','.join('?' * len(statuses))})")
        args: tuple = statuses
        if session_id is not None:
            sql += " AND session_id=?"
            args += (session_id,)
        rows = self.db.execute(sql + " ORDER BY ended_at, session_id", args).fetchall()
        return [dict(session_id=r[0], outcome=r[1], reason=r[2], ended_at=r[3]) for r in rows]

    def session_end(self, session_id: str) -> dict[str, Any] | None:
        """The session-end row of ``session_id`` (any status), or None."""
        self.fold_queue_file()
        return session_tables.session_end(self.db, session_id)

    def claim(self, session_id: str, *, stale_after: float = 600.0, now: float | None = None) -> dict[str, Any] | None:
        """Atomically take a queued session end for this process; returns the row, or None when it
        is not queued or another live process holds it (claimed less than ``stale_after`` seconds ago)."""
        now = time.time() if now is None else now
        with self._transaction():
            r = self.db.execute(
                "SELECT session_id, outcome, reason, ended_at, status, claimed_by, claimed_at FROM session_ends"
                " WHERE session_id=?", (session_id,)).fetchone()
            if r is None or r[4] not in END_PENDING:
                return None
            if r[4] == "running" and r[5] != os.getpid() and _alive(r[5]) and (now - (r[6] or 0)) < stale_after:
                return None
            self.db.execute("UPDATE session_ends SET status='running', claimed_by=?, claimed_at=?, updated_at=?"
                            " WHERE session_id=?", (os.getpid(), now, now, session_id))
        return dict(session_id=r[0], outcome=r[1], reason=r[2], ended_at=r[3])

    def release(self, session_id: str) -> None:
        """Put a session end this process claimed back in the queue (after an interruption)."""
        self.db.execute("UPDATE session_ends SET status='queued', claimed_by=NULL, claimed_at=NULL"
                        " WHERE session_id=? AND status='running' AND claimed_by=?", (session_id, os.getpid()))

    @contextlib.contextmanager
    def claimed(self, session_id: str, *, stale_after: float = 600.0):
        """:meth:`claim` for a block: yields the claimed row (None when the session end is not
        queued or another live process holds it); an exception in the block (Ctrl-C included) puts
        it back in the queue (:meth:`release`) and propagates."""
        row = self.claim(session_id, stale_after=stale_after)
        if row is None:
            yield None
            return
        try:
            yield row
        except BaseException:
            self.release(session_id)
            raise

    def dead_claims(self) -> list[tuple[str, int | None]]:
        """``(session_id, pid)`` of the running session ends whose claiming process is gone."""
        rows = self.db.execute("SELECT session_id, claimed_by FROM session_ends WHERE status='running'").fetchall()
        return [(r[0], r[1]) for r in rows if not _alive(r[1])]

    def requeue_claim(self, session_id: str) -> None:
        """Put a running session end back in the queue whoever claimed it (``consolidate doctor
        --repair`` for a claim whose process is gone)."""
        self.db.execute("UPDATE session_ends SET status='queued', claimed_by=NULL, claimed_at=NULL"
                        " WHERE session_id=? AND status='running'", (session_id,))

    def finished_since(self, since: float) -> list[tuple[str, str | None, str]]:
        """``(session_id, run_id, status)`` of the session ends a run finished at or after ``since``
        (Unix seconds), oldest first."""
        return [tuple(r) for r in self.db.execute(
            "SELECT session_id, run_id, status FROM session_ends WHERE updated_at >= ? AND status NOT IN"
            " ('queued', 'running') ORDER BY updated_at", (since,)).fetchall()]

    def newest_note_times(self) -> list[tuple[str, float]]:
        """``(session_id, created_at of its newest note)`` for every session with notes."""
        return [tuple(r) for r in self.db.execute(
            "SELECT session_id, MAX(created_at) FROM notes GROUP BY session_id").fetchall()]

    def integrity(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` of the session tier: ``"ok"`` or the first problem."""
        return self.db.execute("PRAGMA integrity_check").fetchone()[0]

    def pending(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Session ends a run may take, oldest first: queued ones and running ones (a live claim is
        refused later by :meth:`claim`)."""
        self.fold_queue_file()
        return self._ends(END_PENDING, session_id)

    def finish(self, session_id: str, status: str, run_id: str | None, result: dict[str, Any] | None = None) -> None:
        """Record the result of a run for a queued session end."""
        self.db.execute(
            "UPDATE session_ends SET status=?, run_id=?, result=?, updated_at=?, claimed_by=NULL, claimed_at=NULL"
            " WHERE session_id=?",
            (status, run_id, json.dumps(persisted.gate_record(result or {}), ensure_ascii=False), time.time(), session_id),
        )

    def last_runs(self, limit: int = 1) -> list[dict[str, Any]]:
        """The most recently finished session ends, newest first."""
        rows = self.db.execute(
            "SELECT session_id, outcome, status, run_id, result, updated_at FROM session_ends"
            " WHERE status!='queued' ORDER BY updated_at DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [dict(session_id=r[0], outcome=r[1], status=r[2], run_id=r[3],
                     result=json.loads(r[4]) if r[4] else None, finished_at=r[5]) for r in rows]

    def require_known(self, session_id: str) -> None:
        """Raise UnknownSession when the session has neither notes nor a session end."""
        if self.count(session_id) == 0 and self.session_end(session_id) is None:
            raise UnknownSession(f"unknown session {session_id!r}: it has no notes and no session end",
                                 session_id=session_id)

    def _transaction(self) -> session_tables.transaction:
        """A write transaction; inside one already (the hook's harvest), part of it."""
        return session_tables.transaction(self.db)
