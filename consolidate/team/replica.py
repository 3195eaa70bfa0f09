"""Team memory on a Chroma server: the store's replica (consolidate/store/replica.py), built by
``Store.replica()`` for a store in a team, and the calls behind it: the bounded pull before a run,
the push after it, and the fresh pull of SessionStart and ``recall``.

This module joins the two halves of the team code: the local side (consolidate/team/local.py:
configuration, outbox, ledger, state; standard library only) and the server side
(consolidate/team/sync.py, which imports chromadb when it talks to the server). sync.py builds on
local.py; this module builds on both, so neither half imports the other back (no import cycle).
sync.py is imported only when a pull or a push has to reach the server (:func:`_sync`): a
SessionStart whose team clock has not moved, or whose server is down, never imports it.
Never raises: a team problem is logged and reported in the result, and the local run goes on.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import ModuleType
from typing import Any

from consolidate.rules.redaction import error_text
from consolidate.store.store import Store
from consolidate.team import ledger
from consolidate.team.http import Unreachable, clock
from consolidate.team.local import (RUN_PULL_SECONDS, START_PULL_SECONDS, TeamConfig, check_url, config_path,
                                    load_config, log, now_iso, pending, pull_seconds, push_seconds,
                                    read_state, read_token, update_state, write_outbox, write_undo_outbox)


def _sync() -> ModuleType:
    """consolidate.team.sync, imported when a pull or a push reaches the server (it is the heavier
    half: 13 more of the project's modules and chromadb when it connects)."""
    from consolidate.team import sync  # noqa: PLC0415 - keeps SessionStart light when nothing is pulled

    return sync


def pull_before_run(store) -> dict | None:
    """The bounded pull a run does before its contradiction check (team mode only); None when the
    store is not in a team. A failure is logged and recorded in the state, never raised: the run goes
    on with the last pulled copy."""
    if not store.path.is_dir() or load_config(store.path) is None:
        return None
    try:
        return _sync().pull(store, seconds=pull_seconds(RUN_PULL_SECONDS))
    except Exception as exc:  # noqa: BLE001 - a team problem never stops a local run
        message = f"pull failed: {_one_line(exc)}"
        log(store, message)
        update_state(store, last_error=message, last_error_at=now_iso())
        return {"ok": False, "error": message}


def push_after_run(store) -> dict | None:
    """Push what waits in the outbox after a run (team mode only); never raises: a push that fails
    stays in the outbox, logged, for the next run or ``consolidate sync``."""
    if not store.path.is_dir() or load_config(store.path) is None or not pending(store):
        return None
    try:
        return _sync().push(store, seconds=push_seconds())
    except Exception as exc:  # noqa: BLE001
        message = f"push failed, {len(pending(store))} waiting in the outbox: {_one_line(exc)}"
        log(store, message)
        update_state(store, last_error=message, last_error_at=now_iso())
        return {"ok": False, "error": message, "pending": len(pending(store))}


def _one_line(exc: BaseException) -> str:
    return error_text(exc, limit=300) or type(exc).__name__


def fresh_pull(store_path: Path, *, context: bool) -> tuple[dict[str, Any], TeamConfig | None, float]:
    """The bounded pull of SessionStart and of MCP ``recall``: ``(result, cfg, seconds)``; ``cfg`` None
    for a store not in a team (nothing done). Pulls within START_PULL_SECONDS
    ($CONSOLIDATE_TEAM_PULL_SECONDS); ``context`` rewrites ``memory/context.md``. Never raises: a
    failure is ``{"ok": False, "error"}`` and the last pulled copy stays in use.

    The team store's clock is read first over HTTP with the standard library
    (consolidate/team/http.py): when it equals the one of the last pull, or the server cannot be
    reached, chromadb is never imported."""

    try:
        cfg = load_config(store_path)
        if cfg is None:
            return {"ok": True}, None, 0.0
        store = Store(store_path, create=False)
        token = read_token(cfg, store_path)
        check_url(cfg.url, token, cfg.insecure)
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "unread": True, "error": _one_line(exc)}, TeamConfig(url="", project=""), 0.0
    seconds = pull_seconds(START_PULL_SECONDS)
    t0 = time.monotonic()
    result: dict[str, Any]
    try:

        try:
            now = clock(cfg, token, seconds)
        except Unreachable as exc:
            result = {"ok": False, "timeout": exc.timeout, "error": error_text(exc)}
            log(store, f"fresh pull: {error_text(exc)}; the last pulled copy is used")
        else:
            if now is not None and now == ledger.marks(store)["clock"] and not pending(store):
                update_state(store, last_pull=now_iso())
                result = {"ok": True}
            else:
                result = _sync().pull(store, seconds=max(0.5, seconds - (time.monotonic() - t0)), context=context)
    except Exception as exc:  # noqa: BLE001
        result = {"ok": False, "error": _one_line(exc)}
        log(store, f"fresh pull failed: {result['error']}")
    if not result.get("ok"):
        result["last_pull"] = read_state(store).get("last_pull")
    return result, cfg, seconds


def where_from(store_path: Path, *, context: bool) -> str:
    """Pull (:func:`fresh_pull`) and say where the memories come from: ``project P, pulled from the
    team store just now``, ``not read: ...``, or the fallback to the last pulled copy with its time
    ('' for a store not in a team). Never raises."""
    result, cfg, seconds = fresh_pull(store_path, context=context)
    if cfg is None:
        return ""
    if result.get("unread"):
        return f"not read: {result['error']}"
    if result.get("ok"):
        return f"project {cfg.project}, pulled from the team store just now"
    why = "not reached within %g s" % seconds if result.get("timeout") else "not reached"
    last = result.get("last_pull")
    return f"the team store was {why}; memories as last pulled {'at ' + last if last else ': never'}"


def context_header(store_path: Path) -> str:
    """SessionStart in team mode: pull within START_PULL_SECONDS, rewrite the context, and return the
    header line saying where the memories come from ('' for a store not in a team). Never raises."""
    line = where_from(store_path, context=True)
    return f"(team memory: {line})" if line else ""


def recall_line(store: Any) -> str:
    """``recall`` (CLI and MCP) on a store in a team (``team.json``, a local store): the same bounded
    pull as SessionStart first, so a memory another machine pushed since the session started is
    found; returns where the memories come from ('' for a store not in a team or one read from a
    Chroma server). ``store`` is a :class:`consolidate.store.store.Store`. Never raises."""
    if store.chroma_url or not config_path(store.path).exists():
        return ""
    return where_from(store.path, context=False)


class TeamReplica:
    """The team store's local side as the store's replica (consolidate.store.replica.Replica),
    built by ``Store.replica()`` for a store in a team. Each method is the module function of the
    same job (looked up when called), so it never raises and is bounded in time as they are."""

    def __init__(self, store: Any):
        self.store = store

    def pull(self) -> dict | None:
        return pull_before_run(self.store)

    def push(self) -> dict | None:
        return push_after_run(self.store)

    def outbox(self, plan: Any, writes: list) -> None:
        write_outbox(plan, self.store, writes)

    def undo_outbox(self, run_id: str, record: dict, lines: list[dict], removed_edges: list) -> None:
        write_undo_outbox(self.store, run_id, record, lines, removed_edges)

    def start_header(self) -> str:
        return context_header(self.store.path)

    def recall_line(self) -> str:
        return recall_line(self.store)
