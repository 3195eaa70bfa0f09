"""Whether the background workers are consolidating (issue 29, item 9: with a setting the worker
refuses, every worker the hook started died at once, said so only in ``logs/worker.log``, and the
session ends piled up in the queue with nothing telling the user).

The one owner of ``logs/worker.status.json``: each ``consolidate worker`` records how it ended
(:func:`record`, called by consolidate.pipeline.worker and by the CLI's error path for a worker that fails
before it runs): ``{"failures": consecutive failed workers since the last good one, "last_error":
its one line, "last_failed": ISO UTC, "failed_at": the same in Unix seconds, "last_ok": ISO UTC}``. :func:`queue_state` counts the session
ends waiting in the queue (queued or running) and the age of the oldest, on a SQLite connection the
caller has open. :func:`health_line` turns both into the one line ``status`` and the next
SessionStart print when workers are failing or ends are piling up ('' when all is well).

Only the standard library and consolidate.store.sessions.tables (which owns the SQL): the light SessionStart
path (consolidate/agents/hooks/fast_start.py) reads it.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import time
from consolidate.store.layout import SESSIONS_DB, WORKER_STATUS
from consolidate.rules.redaction import redacted
from consolidate.store.sessions.tables import queue_counts
from consolidate.store.sessions.tables import connect_read_only

STATUS_FILE = WORKER_STATUS.name
#: A queued session end older than this (seconds) is piling up: a worker normally takes it within
#: its time box (120 s a session) of the session's end.
PILING_UP_AFTER = 30 * 60
#: The longest error text kept and printed.
MAX_ERROR_CHARS = 300


def status_path(store_path) -> str:
    """``<store>/logs/worker.status.json``."""
    return WORKER_STATUS.join(str(store_path))


def read(store_path) -> dict:
    """The recorded status (``{}`` when no worker recorded one, or the file cannot be read)."""
    try:
        with open(status_path(store_path), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(store_path, error: str | None = None, *, now: float | None = None) -> None:
    """Record how a worker ended: ``error`` None for a worker that drained the queue, else the one
    line it failed with. Never raises (a store that cannot take it has its worker.log line)."""
    try:
        now = time.time() if now is None else now
        stamp = _iso(now)
        data = read(store_path)
        if error is None:
            data = {"failures": 0, "last_ok": stamp,
                    **{k: data[k] for k in ("last_error", "last_failed", "failed_at") if k in data}}
        else:
            failures = data["failures"] if isinstance(data.get("failures"), int) else 0
            data.update({"failures": failures + 1, "last_error": redacted(" ".join(str(error).split()))[:MAX_ERROR_CHARS],
                         "last_failed": stamp, "failed_at": now})
        from consolidate.core.atomic import write_json_atomic  # noqa: PLC0415 - the fast SessionStart hook reads worker health without the writers

        os.makedirs(os.path.dirname(status_path(store_path)), exist_ok=True)
        write_json_atomic(status_path(store_path), data)
    except Exception:  # noqa: BLE001 - recording the failure must not hide it
        pass


def queue_state(conn, *, now: float | None = None) -> dict:
    """The queue on the session tier's connection ``conn``: ``{"count": session ends waiting (queued
    or running), "oldest_age_seconds": age of the oldest or None, "last_done": Unix time a run last
    finished a session end, or None}`` (all 0/None when the table is not there yet)."""

    n, oldest, done = queue_counts(conn)
    now = time.time() if now is None else now
    return {"count": n, "oldest_age_seconds": max(0.0, now - oldest) if oldest is not None else None,
            "last_done": done}


def health_line(status: dict, queue: dict, *, status_hint: bool = True) -> str:
    """One line saying that the workers are failing and/or the session ends are piling up, what the
    last failure said and what to do; '' when all is well. Failures count while ends are queued and
    no run (a worker, ``consolidate run``) finished a session end since the last of them (a user who
    fixed the setting and ran ``consolidate run`` is not told again; the next failing worker records
    itself again); ends pile up when the oldest waits longer than PILING_UP_AFTER. ``queue``:
    :func:`queue_state`. ``status_hint``: end by naming ``consolidate status``."""
    queued, oldest_age, done = queue.get("count") or 0, queue.get("oldest_age_seconds"), queue.get("last_done")
    failures = status["failures"] if isinstance(status.get("failures"), int) and queued > 0 else 0
    failed_at = status.get("failed_at")
    if failures and isinstance(failed_at, (int, float)) and done is not None and done > failed_at:
        failures = 0  # a run consolidated since: the failure is not the news any more
    piling = queued > 0 and oldest_age is not None and oldest_age > PILING_UP_AFTER
    if not failures and not piling:
        return ""
    parts = []
    if failures:
        parts.append(f"the background worker failed {_times(failures)} since its last good run"
                     f" (last at {status.get('last_failed', '?')}: {status.get('last_error') or 'no message'};"
                     " logs/worker.log in the store)")
    if queued:
        parts.append(f"{queued} session {'end is' if queued == 1 else 'ends are'} queued, the oldest "
                     + (f"{age(oldest_age)} old" if oldest_age is not None else "of unknown age"))
    todo = ("fix what the worker names, then run `consolidate run`" if failures
            else "`consolidate run` consolidates them now")
    return ("consolidate: WARNING: " + "; ".join(parts) + f"; {todo}"
            + (" (`consolidate status` shows the queue)." if status_hint else "."))


def start_line(store_path, conn=None) -> str:
    """:func:`health_line` for the store at ``store_path``, on ``conn`` (the session tier's connection,
    after the queue file was folded) or a read-only connection of its own; '' when all is well or
    the session tier cannot be read. Never raises."""
    try:
        status = read(store_path)
        own = None
        if conn is None:

            db = SESSIONS_DB.join(str(store_path))
            if not os.path.exists(db):
                return ""
            own = conn = connect_read_only(db)
        try:
            queue = queue_state(conn)
        finally:
            if own is not None:
                own.close()
        return health_line(status, queue)
    except Exception:  # noqa: BLE001 - the context is printed anyway
        return ""


def age(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.5 h``, ``2.1 days``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).isoformat(timespec="seconds")
