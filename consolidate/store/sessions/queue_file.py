"""The queue file ``queue.jsonl``: session ends the light session-end hook appended
(consolidate/agents/hooks/fast.py), folded into the ``session_ends`` table of ``sessions.sqlite3`` by
every reader of the session tier (``SessionTier`` when a connection opens and before ``pending`` /
``queued``; the fast SessionStart and the idle run on their plain connection).

The one owner of the file: its name, its record, the append and the fold.

Append: each record is written as ``"\\n" + JSON + "\\n"`` in one ``write`` to a file opened
``O_APPEND`` (0600), so concurrent hooks never interleave, and a line cut by a crash (the hook killed
mid-write) stands alone and is skipped, never glued to the next one. The file is not fsynced (as the
SQLite queue with ``synchronous=NORMAL``: a killed process loses nothing, a power cut may lose the
last ends).

Fold: reads from the offset recorded in ``sessions.sqlite3`` (table ``queue_file``: inode and
offset), inserts every complete record and moves the offset in the same transaction (the statements
are consolidate.store.sessions.tables'): a fold that dies before its commit is redone whole, one that
committed is never redone, so each session end reaches the queue table exactly once.

Only the standard library (and consolidate.core.settings, ``os`` only, and the gate of persisted text,
consolidate/rules/persisted.py, which loads the secret gate only for a reason that may hold a secret):
the session-end hook imports this module and nothing else of the store (the fold's statements, consolidate.store.sessions.tables,
are imported by the fold).
"""

from __future__ import annotations

import json
import os
import time

from consolidate.core.settings import CRASH_AT
from consolidate.core.vocab import SESSION_OUTCOMES
from consolidate.store.layout import QUEUE
from consolidate.rules.persisted import gate_fields  # standard library only; the secret gate loads on first use

TYPE_CHECKING = False  # typing is not imported at run time: the light hook imports this module
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable

QUEUE_FILE = QUEUE.name
#: Crash points (consolidate.core.faults; ``CONSOLIDATE_CRASH_AT``) of the queue file.
CRASH_APPEND = "hook:queue-file:partial"  # half a record written, then SIGKILL
CRASH_FOLD = "queue-file:fold"  # records inserted, offset moved, before the commit
#: The outcomes a session end may record.
#: What a session id of a record may hold besides ASCII letters, digits and ``_`` (at most 200).
ID_EXTRA = "-.:@+/"


def simple(text: object, limit: int, extra: str = "") -> bool:
    """Whether ``text`` is a str of 1 to ``limit`` characters, each an ASCII letter, digit, ``_`` or
    one of ``extra``: what needs no secret scan and no text check (a session id, a hook's reason)."""
    return isinstance(text, str) and 0 < len(text) <= limit and all(
        c.isascii() and (c.isalnum() or c == "_" or c in extra) for c in text)


def _crash(point: str) -> None:
    if CRASH_AT.get() == point:
        import signal  # noqa: PLC0415 - keeps `consolidate --help` light (signal)

        os.kill(os.getpid(), signal.SIGKILL)


def append_end(store: str | os.PathLike, record: dict) -> None:
    """Append one session-end record (``{"session_id", "outcome", "reason", "ended_at", "event"}``;
    ``ended_at`` in Unix seconds) to the queue file of the store folder ``store`` (see the module
    docstring); its ``reason`` passes the gate of persisted text (consolidate/rules/persisted.py).
    Raises OSError when the file cannot be written."""
    record = gate_fields(record, ("reason",))
    data = ("\n" + json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(os.path.join(store, QUEUE_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        if CRASH_AT.get() == CRASH_APPEND:
            os.write(fd, data[: len(data) // 2])
            _crash(CRASH_APPEND)
        os.write(fd, data)
    finally:
        os.close(fd)


def fold_queue_file(conn: sqlite3.Connection, folder: str | os.PathLike,
                    session_for_end: Callable[[str], str] | None = None) -> int:
    """Insert the session ends appended to ``folder``/queue.jsonl since the last fold into the
    ``session_ends`` table of ``conn`` (an autocommit connection to sessions.sqlite3), as
    ``SessionTier.end`` records them; returns how many. ``session_for_end(session_id)`` names the
    session an end event ends (a resumed agent session's open part:
    consolidate.store.sessions.segments.session_for_end); it is asked before the fold's transaction.
    A session consolidated as a failure is not queued again (as ``end`` refuses it); a malformed
    record is skipped. Cheap when there is nothing new (a stat and one read of the recorded offset).
    Raises sqlite3.Error and OSError as the connection and the file do."""
    # here, not at the top: the session-end hook appends and never folds (the statements cost it 3 ms)
    from consolidate.store.sessions.tables import fold_ends, queue_file_offset  # noqa: PLC0415 - off the SessionEnd hook path (store.sessions.tables)

    path = os.path.join(folder, QUEUE_FILE)
    for _attempt in range(5):
        try:
            st = os.stat(path)
        except OSError:
            return 0
        row = queue_file_offset(conn, QUEUE_FILE)
        if row is not None and row[0] == st.st_ino and row[1] >= st.st_size:
            return 0
        start = row[1] if row is not None and row[0] == st.st_ino else 0
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read()
        end = data.rfind(b"\n") + 1  # complete records only; a record being written waits
        records = [r for r in (_record(line) for line in data[:end].split(b"\n")) if r is not None]
        if session_for_end is not None:
            records = [(session_for_end(sid), *rest) for sid, *rest in records]
        n = fold_ends(conn, QUEUE_FILE, st.st_ino, start, start + end, records, time.time(),
                      before_commit=lambda: _crash(CRASH_FOLD))
        if n is not None:
            return n
        # another process folded meanwhile: read again from its offset
    return 0


def _record(line: bytes):
    """``(session_id, outcome, reason, ended_at)`` of a queue-file line, or None (blank, cut by a
    crash, or not a record :func:`append_end` wrote)."""
    if not line.strip():
        return None
    try:
        obj = json.loads(line.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    sid, outcome, reason, ended_at = obj.get("session_id"), obj.get("outcome"), obj.get("reason"), obj.get("ended_at")
    if not simple(sid, 200, ID_EXTRA) or outcome not in SESSION_OUTCOMES or (reason is not None and not simple(reason, 64)):
        return None
    if not isinstance(ended_at, (int, float)):
        return None
    return sid, outcome, reason, float(ended_at)
