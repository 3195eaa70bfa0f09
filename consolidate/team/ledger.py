"""The team ledger, ``team/ledger.sqlite3``: what this machine knows of the team store, one row per
memory (issue 34, goal 3). Standard library only.

Tables::

    memories(id, version, etag)   the server version of each memory this machine last pulled or
                                  pushed, and the write id of that version (consolidate.team.sync.write_id)
    keys(kind, key)               the edge (``kind`` 'edge') and tombstone ('tombstone') records it
                                  already has, by their ledger key (consolidate.team.sync._key)
    meta(k, v)                    ``clock`` (the team clock token of the last pull), ``cursor`` (where
                                  the next pull starts reading, seconds since the epoch) and
                                  ``newest`` (the latest ``changed_at`` any pull saw; see
                                  consolidate/team/sync.py, "Clocks")

A pull and a push read and write only the rows they touch, in one transaction each (``BEGIN
IMMEDIATE``: a push, a pull and a SessionStart of one store may run at once, and each keeps what
the others recorded). It replaced ``team/ledger.json``, read and rewritten whole by every pull and
push: 28 MB and about 0.7 s per rewrite at 375,000 memories (docs/history/benchmarks.md, "Team
store at scale"). A store that still has ``ledger.json`` has it moved into the table by the first
open (:func:`_migrate`: entries of the wrong type are left out, as are a cursor that is no finite
number), then the JSON file is removed; one that is not a JSON ledger is moved aside as
``team/ledger.json.damaged``.

A ledger that is damaged (not a SQLite database, or its pages malformed) is moved aside as
``team/ledger.sqlite3.damaged``, logged in ``logs/team.log`` and started again empty: the next pull
reads every record, as a new machine's first pull does (the server holds every version; what waits
in the outbox is never overwritten by a pull). One that cannot be opened (its permissions, a folder
in its place, a read-only disk) raises StoreError naming the file, never a traceback.

Every function here opens its own short connection (a pull reads in one thread and writes in
another), created 0600; the one writer of the file is :func:`_connect`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from consolidate.core.errors import StoreError
from consolidate.store.layout import TEAM_LEDGER, TEAM_LEDGER_JSON
from consolidate.rules.redaction import error_text
from consolidate.team.local import log

T = TypeVar("T")

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
    moved in first when there is one), 10 s busy timeout. Raises sqlite3.Error."""
    path = _path(store)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileExistsError):  # another process created it meanwhile
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    conn = sqlite3.connect(str(path), timeout=10.0, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
        _migrate(store, conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _damaged(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file is not a sound SQLite database (not: locked, busy, cannot be
    opened or written, which are the machine's conditions, not the file's)."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


def _use(store, fn: Callable[[sqlite3.Connection], T]) -> T:
    """``fn(conn)`` on a new connection, closed after. A damaged ledger is moved aside and ``fn`` run
    again on a new, empty one (see the module docstring). Raises StoreError (one line, naming the
    file) for a ledger that cannot be opened or written."""
    path = _path(store)
    for attempt in (1, 2):
        try:
            conn = _connect(store)
            try:
                return fn(conn)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            if not _damaged(exc) or attempt == 2:
                raise StoreError(f"the team ledger {path} cannot be used: {error_text(exc)}", path=str(path)) from None
            _move_aside(store, path, exc)
        except OSError as exc:
            raise StoreError(f"the team ledger {path} cannot be used: {exc.strerror or exc}", path=str(path)) from None
    raise AssertionError("unreachable")


def _move_aside(store, path: Path, exc: BaseException) -> None:
    aside = path.with_name(path.name + ".damaged")
    try:
        os.replace(path, aside)
    except FileNotFoundError:
        return  # another process moved it aside meanwhile
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(path) + suffix)
    log(store, f"{path.parent.name}/{path.name} was damaged ({error_text(exc)}); moved aside as {aside.name}, a new"
               " ledger started (the next pull reads every record)")


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _finite(value: Any) -> float | None:
    """``value`` as a finite float (seconds since the epoch), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


#: The largest version and the longest id or key a row takes (a JSON ledger's other entries are left out).
MAX_VERSION, MAX_KEY = 2**62, 512


def _json_rows(data: dict) -> tuple[list, list, dict]:
    """The memory rows, key rows and meta values of a ``ledger.json``, each entry of the wrong type
    (or out of range) left out: that memory, edge or tombstone is pulled again, nothing else."""
    memories: dict = m if isinstance(m := data.get("memories"), dict) else {}
    etags: dict = e if isinstance(e := data.get("etags"), dict) else {}
    rows = []
    for mid, v in memories.items():
        if isinstance(v, int) and not isinstance(v, bool) and 0 < v < MAX_VERSION and len(mid) <= MAX_KEY:
            etag = etags.get(mid)
            rows.append((mid, v, etag if isinstance(etag, str) and len(etag) <= MAX_KEY else None))
    keys = [(kind, k) for name, kind in KINDS.items() if isinstance(data.get(name), list)
            for k in data[name] if isinstance(k, str) and len(k) <= MAX_KEY]
    meta = {}
    if isinstance(data.get("clock"), str):
        meta["clock"] = data["clock"]
    if (cursor := _finite(data.get("cursor"))) is not None:
        meta["cursor"] = cursor
    return rows, keys, meta


def _migrate(store, conn: sqlite3.Connection) -> None:
    """Move ``team/ledger.json`` (the ledger before issue 34) into the tables, in one transaction,
    then remove it; one that is not a JSON object is moved aside as ``ledger.json.damaged`` (a
    full pull refills the ledger: nothing is lost that the server does not hold)."""
    old = store.sub(TEAM_LEDGER_JSON)
    if not old.exists():
        return
    try:
        data = json.loads(old.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return  # another process moved it meanwhile
    except (OSError, ValueError) as exc:
        _move_aside(store, old, exc)
        return
    if not isinstance(data, dict):
        _move_aside(store, old, ValueError(f"a JSON {type(data).__name__}, not a ledger"))
        return
    rows, keys, meta = _json_rows(data)
    with _transaction(conn):
        if old.exists():  # another process moved it meanwhile: it is in the tables already
            conn.executemany("INSERT OR REPLACE INTO memories(id, version, etag) VALUES (?, ?, ?)", rows)
            conn.executemany("INSERT OR IGNORE INTO keys(kind, key) VALUES (?, ?)", keys)
            conn.executemany("INSERT OR REPLACE INTO meta(k, v) VALUES (?, ?)",
                             [(k, json.dumps(v)) for k, v in meta.items()])
            old.unlink()


def _chunks(items: list, n: int = CHUNK) -> Iterator[list]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


def known(store, ids: Iterable[str]) -> dict[str, tuple[int, str | None]]:
    """``{id: (version, write id)}`` of the ``ids`` this machine has recorded (an id it never pulled
    or pushed is absent). Raises StoreError for a ledger that cannot be used."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}

    def read(conn):
        out: dict[str, tuple[int, str | None]] = {}
        for chunk in _chunks(wanted):
            marks = ",".join("?" * len(chunk))
            for mid, version, etag in conn.execute(f"SELECT id, version, etag FROM memories WHERE id IN ({marks})", chunk):
                out[mid] = (int(version), etag)
        return out

    return _use(store, read)


def known_keys(store, name: str, keys: Iterable[str]) -> set[str]:
    """The ``keys`` recorded in ``name`` (``edges`` or ``tombstones``). Raises KeyError for another
    name, StoreError for a ledger that cannot be used."""
    kind, wanted = KINDS[name], list(dict.fromkeys(keys))
    if not wanted:
        return set()

    def read(conn):
        out: set[str] = set()
        for chunk in _chunks(wanted):
            marks = ",".join("?" * len(chunk))
            out.update(k for (k,) in conn.execute(f"SELECT key FROM keys WHERE kind = ? AND key IN ({marks})",
                                                  [kind, *chunk]))
        return out

    return _use(store, read)


def _marks(conn: sqlite3.Connection) -> dict[str, Any]:
    rows = dict(conn.execute("SELECT k, v FROM meta WHERE k IN ('clock', 'cursor', 'newest')").fetchall())
    out: dict[str, Any] = {}
    for k in ("clock", "cursor", "newest"):
        try:
            value = json.loads(rows[k]) if k in rows else None
        except ValueError:
            value = None
        out[k] = (value if isinstance(value, str) else None) if k == "clock" else _finite(value)
    return out


def marks(store) -> dict[str, Any]:
    """``{"clock": token or None, "cursor": seconds or None, "newest": seconds or None}`` of the last
    pull (a value of the wrong type reads as None: the pull then reads every record). Raises
    StoreError for a ledger that cannot be used."""
    return _use(store, _marks)


def read(store) -> dict[str, Any]:
    """The whole ledger as ``team/ledger.json`` held it: ``memories`` ({id: version}), ``etags``
    ({id: write id}), ``edges`` and ``tombstones`` (sorted keys), ``clock``, ``cursor``, ``newest``.
    For reports and tests; a pull or a push reads only its rows. Raises StoreError."""

    def whole(conn):
        rows = conn.execute("SELECT id, version, etag FROM memories").fetchall()
        keys = conn.execute("SELECT kind, key FROM keys ORDER BY key").fetchall()
        return {"memories": {m: int(v) for m, v, _ in rows}, "etags": {m: e for m, _, e in rows if e},
                **{name: [k for kd, k in keys if kd == kind] for name, kind in KINDS.items()}, **_marks(conn)}

    return _use(store, whole)


def _flip(conn: sqlite3.Connection, kind: str, key: str, suffix: str) -> None:
    """Record ``key``; its opposite (the key with its mark ``suffix`` added or taken off) is removed:
    an edge removed and added again, a tombstone lifted and laid again, is pulled again."""
    base = key[:-len(suffix)] if key.endswith(suffix) else key
    conn.execute("DELETE FROM keys WHERE kind = ? AND key = ?", (kind, base if key.endswith(suffix) else base + suffix))
    conn.execute("INSERT OR IGNORE INTO keys(kind, key) VALUES (?, ?)", (kind, key))


def record(store, seen: dict[str, list], edges: Iterable[str] = (), tombstones: Iterable[str] = (),
           clock: Any = None, cursor: float | None = None, newest: float | None = None, now: float | None = None,
           advance: bool = False) -> None:
    """One push's or pull's findings, in one transaction: each ``seen`` ``{id: [version, write id]}``
    unless the ledger holds a newer version (an equal one takes the new write id; None clears it),
    the edge and tombstone keys (each replacing its opposite: :data:`REMOVED`, :data:`LIFTED`) and,
    with ``advance``, a pull's marks: its clock token; the cursor, which never moves back but never
    past ``now`` (this machine's clock when the pull started reading) either, so a record stamped
    in the future by a machine whose clock is fast does not hide what others write meanwhile; and
    ``newest``, the latest stamp seen, which never moves back. Raises StoreError."""

    def write(conn):
        with _transaction(conn):
            conn.executemany(
                "INSERT INTO memories(id, version, etag) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
                " version = excluded.version, etag = excluded.etag WHERE excluded.version >= memories.version",
                ((mid, int(version), wid or None) for mid, (version, wid) in seen.items()))
            for kind, keys, suffix in (("edge", edges, REMOVED), ("tombstone", tombstones, LIFTED)):
                for key in keys:
                    _flip(conn, kind, key, suffix)
            if not advance:
                return
            old = _marks(conn)
            values: dict[str, Any] = {"clock": clock if isinstance(clock, str) else None}
            stamps = [x for x in (_finite(cursor), old["cursor"]) if x is not None]
            if stamps:
                values["cursor"] = min(max(stamps), _finite(now) or math.inf)
            if (latest := [x for x in (_finite(newest), old["newest"]) if x is not None]):
                values["newest"] = max(latest)
            conn.executemany("INSERT OR REPLACE INTO meta(k, v) VALUES (?, ?)",
                             [(k, json.dumps(v)) for k, v in values.items()])

    _use(store, write)
