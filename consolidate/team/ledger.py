"""The team ledger, ``team/ledger.sqlite3``: what this machine knows of the team store, one row per
memory (issue 34, goal 3). Standard library only.

Tables::

    memories(id, version, etag)   the server version of each memory this machine last pulled or
                                  pushed, and the write id of that version (consolidate.team.sync.write_id)
    keys(kind, key)               the edge (``kind`` 'edge') and tombstone ('tombstone') records it
                                  already has, by their ledger key (consolidate.team.sync._key)
    meta(k, v)                    ``clock`` (the team clock token of the last pull) and ``cursor``
                                  (the newest ``changed_at`` a pull saw)

A pull and a push read and write only the rows they touch, in one transaction each (``BEGIN
IMMEDIATE``: a push, a pull and a SessionStart of one store may run at once, and each keeps what
the others recorded). It replaced ``team/ledger.json``, read and rewritten whole by every pull and
push: 28 MB and about 0.7 s per rewrite at 375,000 memories (docs/history/benchmarks.md, "Team
store at scale"). A store that still has ``ledger.json`` has it moved into the table by the first
open (:func:`_migrate`), then the JSON file is removed.

Every function here opens its own short connection (a pull reads in one thread and writes in
another), created 0600; the one writer of the file is :func:`_connect`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from consolidate.store.layout import TEAM_LEDGER, TEAM_LEDGER_JSON
from consolidate.rules.redaction import error_text
from consolidate.team.local import log

#: Marks of a ledger key (consolidate.team.sync._key): an edge an undo marked removed, a tombstone an
#: undo lifted. The key without its mark is the edge or tombstone present; each replaces the other.
REMOVED, LIFTED = "!removed", "!lifted"
#: Rows per ``IN (...)`` query (SQLite's default limit of host parameters is 32,766 since 3.32).
CHUNK = 900
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories(id TEXT PRIMARY KEY, version INTEGER NOT NULL, etag TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS keys(kind TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY(kind, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID;
"""
#: The two kinds of ``keys`` rows, by the name ledger.json gave their lists.
KINDS = {"edges": "edge", "tombstones": "tombstone"}


def _path(store) -> Path:
    return store.sub(TEAM_LEDGER)


def _connect(store) -> sqlite3.Connection:
    """An autocommit connection to the ledger (created 0600 with its tables, ``team/ledger.json``
    moved in first when there is one). 10 s busy timeout. A file that is not a SQLite database
    (damaged) is moved aside as ``team/ledger.sqlite3.damaged``, logged in ``logs/team.log``, and a
    new ledger started: the next pull reads every record, as a new machine's first pull does (the
    server holds every version; what waits in the outbox is not overwritten). Raises sqlite3.Error
    for anything else (a database locked beyond the timeout)."""
    path = _path(store)
    for attempt in (1, 2):
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with contextlib.suppress(FileExistsError):  # another process created it meanwhile
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        conn = sqlite3.connect(str(path), timeout=10.0, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            _migrate(store, conn)
            return conn
        except sqlite3.DatabaseError as exc:
            conn.close()
            if isinstance(exc, sqlite3.OperationalError) or attempt == 2:
                raise
            aside = path.with_name(path.name + ".damaged")
            os.replace(path, aside)
            for suffix in ("-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(str(path) + suffix)
            log(store, f"team/ledger.sqlite3 was damaged ({error_text(exc)}); moved aside as {aside.name}, a new ledger"
                       " started (the next pull reads every record)")
        except BaseException:
            conn.close()
            raise
    raise AssertionError("unreachable")


@contextlib.contextmanager
def _open(store) -> Iterator[sqlite3.Connection]:
    conn = _connect(store)
    try:
        yield conn
    finally:
        conn.close()


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _migrate(store, conn: sqlite3.Connection) -> None:
    """Move ``team/ledger.json`` (the ledger before issue 34) into the tables, in one transaction,
    then remove it. A JSON file that cannot be read is left where it is, unused (a full pull
    refills the ledger): nothing is lost that the server does not hold."""
    old = store.sub(TEAM_LEDGER_JSON)
    if not old.exists():
        return
    try:
        data = json.loads(old.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    with _transaction(conn):
        if old.exists():  # another process moved it meanwhile: it is in the tables already
            etags = data.get("etags") or {}
            conn.executemany("INSERT OR REPLACE INTO memories(id, version, etag) VALUES (?, ?, ?)",
                             ((str(mid), int(v or 0), etags.get(mid)) for mid, v in (data.get("memories") or {}).items()))
            for name, kind in KINDS.items():
                conn.executemany("INSERT OR IGNORE INTO keys(kind, key) VALUES (?, ?)",
                                 ((kind, str(k)) for k in data.get(name) or []))
            for k in ("clock", "cursor"):
                if data.get(k) is not None:
                    conn.execute("INSERT OR REPLACE INTO meta(k, v) VALUES (?, ?)", (k, json.dumps(data[k])))
            old.unlink()


def _chunks(items: list, n: int = CHUNK) -> Iterator[list]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


def known(store, ids: Iterable[str]) -> dict[str, tuple[int, str | None]]:
    """``{id: (version, write id)}`` of the ``ids`` this machine has recorded (an id it never pulled
    or pushed is absent). Raises sqlite3.Error for a ledger that cannot be read."""
    wanted = list(dict.fromkeys(ids))
    out: dict[str, tuple[int, str | None]] = {}
    if not wanted:
        return out
    with _open(store) as conn:
        for chunk in _chunks(wanted):
            marks = ",".join("?" * len(chunk))
            for mid, version, etag in conn.execute(f"SELECT id, version, etag FROM memories WHERE id IN ({marks})", chunk):
                out[mid] = (int(version), etag)
    return out


def known_keys(store, name: str, keys: Iterable[str]) -> set[str]:
    """The ``keys`` recorded in ``name`` (``edges`` or ``tombstones``). Raises KeyError for another name."""
    kind, wanted = KINDS[name], list(dict.fromkeys(keys))
    out: set[str] = set()
    if not wanted:
        return out
    with _open(store) as conn:
        for chunk in _chunks(wanted):
            marks = ",".join("?" * len(chunk))
            out.update(k for (k,) in conn.execute(f"SELECT key FROM keys WHERE kind = ? AND key IN ({marks})",
                                                  [kind, *chunk]))
    return out


def marks(store) -> dict[str, Any]:
    """``{"clock": token or None, "cursor": seconds since the epoch or None}`` of the last pull."""
    with _open(store) as conn:
        rows = dict(conn.execute("SELECT k, v FROM meta WHERE k IN ('clock', 'cursor')").fetchall())
    return {k: json.loads(rows[k]) if k in rows else None for k in ("clock", "cursor")}


def read(store) -> dict[str, Any]:
    """The whole ledger as ``team/ledger.json`` held it: ``memories`` ({id: version}), ``etags``
    ({id: write id}), ``edges`` and ``tombstones`` (sorted keys), ``clock``, ``cursor``. For
    ``consolidate team status``-like reports and tests; a pull or a push reads only its rows."""
    with _open(store) as conn:
        rows = conn.execute("SELECT id, version, etag FROM memories").fetchall()
        keys = conn.execute("SELECT kind, key FROM keys ORDER BY key").fetchall()
    out: dict[str, Any] = {"memories": {m: int(v) for m, v, _ in rows}, "etags": {m: e for m, _, e in rows if e},
                           **{name: [k for kd, k in keys if kd == kind] for name, kind in KINDS.items()}}
    return {**out, **marks(store)}


def _flip(conn: sqlite3.Connection, kind: str, key: str, suffix: str) -> None:
    """Record ``key``; its opposite (the key with its mark ``suffix`` added or taken off) is removed:
    an edge removed and added again, a tombstone lifted and laid again, is pulled again."""
    base = key[:-len(suffix)] if key.endswith(suffix) else key
    conn.execute("DELETE FROM keys WHERE kind = ? AND key = ?", (kind, base if key.endswith(suffix) else base + suffix))
    conn.execute("INSERT OR IGNORE INTO keys(kind, key) VALUES (?, ?)", (kind, key))


def record(store, seen: dict[str, list], edges: Iterable[str] = (), tombstones: Iterable[str] = (),
           clock: Any = None, cursor: float | None = None, advance: bool = False) -> None:
    """One push's or pull's findings, in one transaction: each ``seen`` ``{id: [version, write id]}``
    unless the ledger holds a newer version (an equal one takes the new write id; None clears it),
    the edge and tombstone keys (each replacing its opposite: :data:`REMOVED`, :data:`LIFTED`) and,
    with ``advance``, the pull's clock token and cursor (a cursor never moves back). Raises
    sqlite3.Error."""
    with _open(store) as conn, _transaction(conn):
        conn.executemany(
            "INSERT INTO memories(id, version, etag) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
            " version = excluded.version, etag = excluded.etag WHERE excluded.version >= memories.version",
            ((mid, int(version), wid or None) for mid, (version, wid) in seen.items()))
        for kind, keys, suffix in (("edge", edges, REMOVED), ("tombstone", tombstones, LIFTED)):
            for key in keys:
                _flip(conn, kind, key, suffix)
        if advance:
            conn.execute("INSERT OR REPLACE INTO meta(k, v) VALUES ('clock', ?)", (json.dumps(clock),))
            if cursor is not None:
                row = conn.execute("SELECT v FROM meta WHERE k = 'cursor'").fetchone()
                old = json.loads(row[0]) if row else None
                new = max(float(cursor), float(old or 0))
                conn.execute("INSERT OR REPLACE INTO meta(k, v) VALUES ('cursor', ?)", (json.dumps(new),))
