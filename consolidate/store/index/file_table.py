"""File recall's lookup table ``memory/files.sqlite3`` (issue 34): the index of
consolidate.agents.file_recall.build_index (memories by the files they name) keyed by path, so a
hook call looks up its file's keys instead of parsing the whole index. Its one writer is
:func:`write` (called by consolidate.agents.file_recall.load_index when the graph or the manifest
changed); it is replaced whole (a new file renamed over the old), never updated in place, and a
reader checks its ``stamp`` (mtime and size of the sources it was built from) before trusting it.
Standard library only (the hook path)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from consolidate.core.normal import path_key
from consolidate.store.layout import FILE_INDEX

#: The table's layout: a table of another version is stale (rebuilt).
VERSION = 2


class FileTable:
    """The file index as read by a hook call: an open SQLite connection on ``memory/files.sqlite3``
    (or an in-memory copy when the store is read-only). Tables ``meta(k, v)`` (the ``stamp``: mtime
    and size of the graph files and the manifest it was built from), ``files(key, pos, ids)`` (a
    path_key'd entity or anchored path, its place in :func:`build_index`'s order, the JSON list of
    memory ids) and ``memories(id, text, status)``. Lookups are by key: no parse of the whole index."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def empty(self) -> bool:
        """Whether the index holds no memory."""
        return self.conn.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is None

    def named(self, rel: str, exact: bool = False) -> list[str]:
        """Ids of the memories whose entity or anchor names the file ``rel`` (:func:`matches`: the
        keys equal to one of ``rel``'s tails by whole components; ``exact``: only the key equal to
        ``rel`` itself, for a file outside the project), in :func:`build_index`'s order."""
        parts = path_key(rel).split("/")
        tails = sorted(({"/".join(parts)} if exact else {"/".join(parts[i:]) for i in range(len(parts))}) - {""})
        if not tails:
            return []
        marks = ",".join("?" * len(tails))
        out: list[str] = []
        for (ids,) in self.conn.execute(f"SELECT ids FROM files WHERE key IN ({marks}) ORDER BY pos", tails):
            out += json.loads(ids)
        return out

    def memories(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """``{id: {"text", "status", "held"}}`` of those of ``ids`` the index holds (``held``: the
        context guard holds it back, consolidate.store.views.shown.held_back)."""
        out: dict[str, dict[str, Any]] = {}
        wanted = list(dict.fromkeys(ids))
        for k in range(0, len(wanted), 500):
            chunk = wanted[k:k + 500]
            marks = ",".join("?" * len(chunk))
            for mid, text, status, held in self.conn.execute(
                    f"SELECT id, text, status, held FROM memories WHERE id IN ({marks})", chunk):
                out[mid] = {"text": text, "status": status, "held": bool(held)}
        return out


def _fill(conn: sqlite3.Connection, stamp: str, guard: str, data: dict[str, Any]) -> None:
    conn.executescript("CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT);"
                       "CREATE TABLE files(key TEXT NOT NULL, pos INTEGER NOT NULL, ids TEXT NOT NULL);"
                       "CREATE INDEX files_key ON files(key);"
                       "CREATE TABLE memories(id TEXT PRIMARY KEY, text TEXT NOT NULL, status TEXT NOT NULL,"
                       " held INTEGER NOT NULL);")
    conn.executemany("INSERT INTO files VALUES (?, ?, ?)",
                     [(path_key(k), pos, json.dumps(ids)) for pos, (k, ids) in enumerate(data["files"].items())
                      if path_key(k)])
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?)",
                     [(mid, m["text"], m.get("status") or "active", int(bool(m["held"])))
                      for mid, m in data["memories"].items()])
    conn.executemany("INSERT INTO meta VALUES (?, ?)", [("stamp", f"{VERSION} {stamp}"), ("guard", guard)])
    conn.commit()


def open_current(store_path: Path, stamp: str) -> FileTable | None:
    """The store's table when it was built from the sources of ``stamp``, else None (missing,
    stale or damaged)."""
    path = FILE_INDEX.of(store_path)
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT v FROM meta WHERE k = 'stamp'").fetchone()
        if row is not None and row[0] == f"{VERSION} {stamp}":
            return FileTable(conn)
    except sqlite3.Error:
        pass
    conn.close()
    return None


def _held_before(store_path: Path, guard: str) -> dict[tuple[str, str], bool]:
    """``{(id, text): held}`` of the table there is, when it was built with the guard of ``guard``."""
    path = FILE_INDEX.of(store_path)
    if not path.exists():
        return {}
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    except sqlite3.Error:
        return {}
    try:
        row = conn.execute("SELECT v FROM meta WHERE k = 'guard'").fetchone()
        if row is None or row[0] != guard:
            return {}
        return {(mid, text): bool(held) for mid, text, held in conn.execute("SELECT id, text, held FROM memories")}
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def write(store_path: Path, stamp: str, data: dict[str, Any], held_back: Callable[[str], bool],
          guard: str) -> FileTable:
    """Replace the store's table by one of ``data`` (``{"memories": {id: {"text", "status"}},
    "files": {key: [ids]}}``) built from the sources of ``stamp``, and open it; a store that cannot
    be written (read-only) gets an in-memory table instead. ``held_back(text)``: whether the context
    guard holds a memory back, asked for the memories the table there is (built with the guard of
    ``guard``, a stamp of the guard's code) does not hold with the same text. Raises nothing of its
    own."""
    before = _held_before(store_path, guard)
    for mid, m in data["memories"].items():
        was = before.get((mid, m["text"]))
        m["held"] = held_back(m["text"]) if was is None else was
    cache = FILE_INDEX.of(store_path)
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    try:
        tmp.unlink(missing_ok=True)
        conn = sqlite3.connect(tmp)
        try:
            _fill(conn, stamp, guard, data)
        finally:
            conn.close()
        os.replace(tmp, cache)
        got = open_current(store_path, stamp)
        if got is not None:
            return got
    except (OSError, sqlite3.Error):  # a read-only store: answer without caching
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
    conn = sqlite3.connect(":memory:")
    _fill(conn, stamp, guard, data)
    return FileTable(conn)
