"""File recall's lookup table ``memory/files.sqlite3`` (issue 34): the index of
consolidate.agents.file_recall.build_index (memories by the files they name) keyed by path, so a
hook call looks up its file's keys instead of parsing the whole index. Its one writer is
:func:`write` (called by consolidate.agents.file_recall.load_index when the graph or the manifest
changed); it is replaced whole (a new file, under a name of its own in the same folder, renamed
over the old; a temporary file a killed writer left is removed by the next write), never updated
in place, and a reader checks its ``stamp`` (mtime and size of the sources it was built from)
before trusting it. Besides the ids by path it keeps what a hook call's answer needs of each
memory, so the light PreToolUse entry (consolidate/agents/hooks/file_hook.py) answers from it with
the standard library only: its status, its line as the agent view renders it on surface
``file-recall`` without drift marks, the digest the echo record keeps, whether the context guard
holds it back and whether it has code anchors (drift); and, in ``meta``, whether the store's
filesystem folds case (``folds``). Standard library only (the hook path)."""

from __future__ import annotations

import importlib
import json
import os
import sqlite3
import time
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from consolidate.core.spawn import alive
from consolidate.store.layout import FILE_INDEX

if TYPE_CHECKING:  # imported by name on first use (_NORMAL): the edge for grimp and mypy
    from consolidate.core import normal  # noqa: F401

#: consolidate.core.normal, imported by the writer and :meth:`FileTable.named`: the light entry
#: (consolidate/agents/hooks/file_hook.py) reads with keys it made (:meth:`FileTable.keyed`).
_NORMAL = "consolidate.core.normal"


def path_key(p: str) -> str:
    """consolidate.core.normal.path_key."""
    return importlib.import_module(_NORMAL).path_key(p)

#: The table's layout: a table of another version is stale (rebuilt).
VERSION = 5  # 5: the lines write bidi controls visibly (issue 28)
#: A temporary file of another writer older than this (seconds) is stale even when its pid lives
#: (a pid used again).
STALE_TMP_SECONDS = 600.0


class FileTable:
    """The file index as read by a hook call: an open SQLite connection on ``memory/files.sqlite3``
    (or an in-memory copy when the store is read-only). Tables ``meta(k, v)`` (the ``stamp``: mtime
    and size of the graph files and the manifest it was built from), ``files(key, pos, ids)`` (a
    path_key'd entity or anchored path, its place in :func:`build_index`'s order, the JSON list of
    memory ids) and ``memories(id, text, status, held, digest, line, anchored, terms, restates)``. Lookups are by key: no parse of the whole index."""

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
        return self.keyed(path_key(rel), exact)

    def keyed(self, key: str, exact: bool = False) -> list[str]:
        """:meth:`named` for ``key``, the path_key of the file's path already."""
        parts = key.split("/")
        tails = sorted(({"/".join(parts)} if exact else {"/".join(parts[i:]) for i in range(len(parts))}) - {""})
        if not tails:
            return []
        marks = ",".join("?" * len(tails))
        out: list[str] = []
        for (ids,) in self.conn.execute(f"SELECT ids FROM files WHERE key IN ({marks}) ORDER BY pos", tails):
            out += json.loads(ids)
        return out

    def folds(self) -> bool:
        """Whether the store's filesystem folds case (``SRC/a.py`` opens ``src/a.py``), as the writer
        found it (:func:`folds_case`)."""
        row = self.conn.execute("SELECT v FROM meta WHERE k = 'folds'").fetchone()
        return row is not None and row[0] == "1"

    def memories(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """``{id: {"text", "status", "held", "digest", "line", "anchored"}}`` of those of ``ids`` the
        index holds (``held``: the context guard holds it back, consolidate.store.views.shown.held_back;
        ``digest``: consolidate.store.echo.digest of the text; ``line``: the agent view's line of it on
        surface ``file-recall`` without drift marks; ``anchored``: it has code anchors; ``terms``: the
        terms of its text that may name a file, case kept, consolidate.agents.file_recall.cased_terms;
        ``restates``: the forget run it was written again after, '' for none)."""
        out: dict[str, dict[str, Any]] = {}
        wanted = list(dict.fromkeys(ids))
        for k in range(0, len(wanted), 500):
            chunk = wanted[k:k + 500]
            marks = ",".join("?" * len(chunk))
            for mid, text, status, held, dig, line, anchored, terms, restates in self.conn.execute(
                    f"SELECT id, text, status, held, digest, line, anchored, terms, restates FROM memories"
                    f" WHERE id IN ({marks})", chunk):
                out[mid] = {"text": text, "status": status, "held": bool(held), "digest": dig, "line": line,
                            "anchored": bool(anchored), "terms": json.loads(terms), "restates": restates}
        return out


def folds_case(store_path: Path) -> bool:
    """Whether the filesystem of the store folder folds case: the folder's name with its case
    swapped names the same folder (macOS and Windows by default; not Linux). False when the name has
    no letter to swap or it cannot be told."""
    path = os.path.abspath(store_path)
    head, name = os.path.split(path.rstrip(os.sep) or path)
    other = name.swapcase()
    if other == name:
        return False
    try:
        return os.path.samefile(path, os.path.join(head, other))
    except OSError:
        return False


def _fill(conn: sqlite3.Connection, stamp: str, guard: str, data: dict[str, Any], folds: bool) -> None:
    conn.executescript("CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT);"
                       "CREATE TABLE files(key TEXT NOT NULL, pos INTEGER NOT NULL, ids TEXT NOT NULL);"
                       "CREATE INDEX files_key ON files(key);"
                       "CREATE TABLE memories(id TEXT PRIMARY KEY, text TEXT NOT NULL, status TEXT NOT NULL,"
                       " held INTEGER NOT NULL, digest TEXT NOT NULL, line TEXT NOT NULL, anchored INTEGER NOT NULL,"
                       " terms TEXT NOT NULL, restates TEXT NOT NULL DEFAULT '');")
    conn.executemany("INSERT INTO files VALUES (?, ?, ?)",
                     [(path_key(k), pos, json.dumps(ids)) for pos, (k, ids) in enumerate(data["files"].items())
                      if path_key(k)])
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [(mid, m["text"], m.get("status") or "active", int(bool(m["held"])), m.get("digest") or "",
                       m.get("line") or "", int(bool(m.get("anchored"))), json.dumps(m.get("terms") or []),
                       str(m.get("restates") or ""))
                      for mid, m in data["memories"].items()])
    conn.executemany("INSERT INTO meta VALUES (?, ?)", [("stamp", f"{VERSION} {stamp}"), ("guard", guard),
                                                        ("folds", "1" if folds else "0")])
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


def _temp_name(cache: Path) -> Path:
    """A name of this writer's own for the new table, in the table's folder (rename stays atomic)."""
    return cache.with_name(f"{cache.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")


def _clean_stale(cache: Path, now: float) -> None:
    """Remove the temporary files of writers that are gone (killed mid-write): their pid is no
    process, or the file is older than STALE_TMP_SECONDS. Never raises."""
    try:
        names = os.listdir(cache.parent)
    except OSError:
        return
    for name in names:
        if not (name.startswith(cache.name + ".") and name.endswith(".tmp")):
            continue
        path = cache.parent / name
        pid = name[len(cache.name) + 1:].split(".", 1)[0]
        try:
            old = now - path.stat().st_mtime > STALE_TMP_SECONDS
            if old or not pid.isdigit() or not alive(int(pid)):
                path.unlink()
        except OSError:
            continue


def write(store_path: Path, stamp: str, data: dict[str, Any], held_back: Callable[[str], bool],
          guard: str) -> FileTable:
    """Replace the store's table by one of ``data`` (``{"memories": {id: {"text", "status", "digest",
    "line", "anchored"}}, "files": {key: [ids]}}``) built from the sources of ``stamp``, and open it; a
    store that cannot be written (read-only) gets an in-memory table instead. ``held_back(text)``:
    whether the context guard holds a memory back, asked for the memories the table there is (built
    with the guard of ``guard``, a stamp of the guard's code) does not hold with the same text.
    Raises nothing of its own."""
    before = _held_before(store_path, guard)
    for mid, m in data["memories"].items():
        was = before.get((mid, m["text"]))
        m["held"] = held_back(m["text"]) if was is None else was
    folds = folds_case(store_path)
    cache = FILE_INDEX.of(store_path)
    tmp = _temp_name(cache)
    try:
        cache.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _clean_stale(cache, time.time())
        conn = sqlite3.connect(tmp)
        try:
            _fill(conn, stamp, guard, data, folds)
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
    _fill(conn, stamp, guard, data, folds)
    return FileTable(conn)
