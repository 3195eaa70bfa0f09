"""The light entry point (issue 18): what ``consolidate`` does before argparse and the package's
modules are imported, for the invocations users pay for every session.

- ``consolidate hook`` on a session-end event (SessionEnd, Stop) without ``--harvest``: the session
  end is appended as one JSON line to the store's queue file ``queue.jsonl`` (no SQLite open, no
  WAL checkpoint at close), then the detached worker is started (fork + exec, unless
  ``--no-worker``) and one line goes to ``logs/hook.log``, as the full hook does. Every reader of
  the session tier folds the file into ``sessions.sqlite3`` first (:func:`fold_queue_file`, called
  when a connection opens and by ``pending``/``queued``), so a queued end is seen by the worker,
  ``consolidate run``, ``status`` and the MCP server as before.
- ``consolidate hook`` on SessionStart: the context printed from ``memory/context.start.json`` and
  the session recorded on one connection (consolidate/agents/hooks/fast_start.py), when nothing needs
  the full hook.
- ``consolidate run --session S`` for an ended session with no notes (the idle run): the queue row is
  finished in one SQLite transaction and the run's two summary lines printed, without importing the
  pipeline.

Anything else, or any doubt (a store folder that is missing or not private, a reason or session
id the gate would need to look at, a run left in the journal, an unknown option), returns None and
the full command line handles it: the fast path never decides what the full one would decide
differently. Standard library only; nothing of the package is imported here but
``consolidate.core.settings`` (the environment variables; ``os`` only) and the queue file's module
(``consolidate.store.sessions.queue_file``: the append, the fold and the format of a record), and,
for the SQLite work of the idle run, ``consolidate.store.sessions.tables``; a SessionStart imports
consolidate.agents.hooks.fast_start (standard library only too). The session-end hook opens no
database and imports neither.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

# the variables, declared in consolidate/core/settings.py (standard library only, like this module)
from consolidate.agents.hooks.payload import (END_EVENTS, EVENT_KEY, START_EVENTS, TOOL_EVENTS, cwd_of, event_name,
                                              gemini_output, raw_cwd, read_stdin, reason_of, replace_stdin,
                                              session_id_of)
from consolidate.core.settings import JUDGE_CHILD
from consolidate.core.spawn import spawn_worker
# the session outcomes (consolidate/core/vocab.py: no imports)
from consolidate.core.vocab import SESSION_OUTCOMES
from consolidate.store import hook_log
# which store a call means (standard library only)
from consolidate.store import resolve
# the queue file's append and fold, and its record's text check (standard library only)
from consolidate.store.sessions.queue_file import append_end, fold_queue_file
from consolidate.store.sessions.queue_file import simple as _simple
from consolidate.store.layout import GITIGNORE, JOURNAL, SESSIONS_DB, WORKER_LOG

if TYPE_CHECKING:  # imported by name where an event needs them (_FAST_START ...): the edges for grimp and mypy
    from consolidate.agents import file_recall  # noqa: F401
    from consolidate.agents.hooks import fast_start  # noqa: F401
    from consolidate.store.sessions import tables  # noqa: F401

_STORE_OPTIONS = ("--store", "--chroma-url", "--project", "--embedding")


def main(argv: list[str]) -> int | None:
    """Handle ``argv`` (the arguments after the program name) on a fast path and return the exit
    code, or None when the full command line must handle it."""
    try:
        opts = _parse(argv)
        if opts is None:
            return None
        if opts["command"] == "hook":
            return _hook(opts)
        if opts["command"] == "run":
            return _idle_run(opts)
    except Exception:  # noqa: BLE001 - any doubt: the full command line decides
        return None
    return None


#: Commands whose parser alone is built (consolidate.cli.main.main): ``hook`` runs on every agent session
#: start, where importing and registering every other command module costs tens of milliseconds.
_OWN_MODULE = {"hook": "hook"}


def command_modules(argv: list[str], modules: tuple[str, ...]) -> tuple[str, ...]:
    """The command modules the parser of ``argv`` needs: ``(module,)`` for a command of
    ``_OWN_MODULE`` written before any help flag, else every one of ``modules``."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help", "--version"):
            return modules
        if arg in _STORE_OPTIONS or arg in ("--env-file", "--env-file-if-exists"):
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        own = _OWN_MODULE.get(arg)
        return (own,) if own in modules else modules
    return modules


def _parse(argv: list[str]) -> dict | None:
    """The options of ``hook`` / ``run`` invocations this module handles; None for anything else."""
    opts: dict = {"judges": [], "command": None}
    allowed = {"hook": {"--outcome", "--event", "--output", "--judge", "--no-worker"}, "run": {"--session"}}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            if opts["command"] is not None or arg not in allowed:
                return None
            opts["command"] = arg
            i += 1
            continue
        name, eq, value = arg.partition("=")
        if name == "--no-worker" and not eq:
            opts["no_worker"] = True
            i += 1
            continue
        if name not in _STORE_OPTIONS and (opts["command"] is None or name not in allowed[opts["command"]]):
            return None
        if not eq:
            if i + 1 >= len(argv):
                return None
            value = argv[i + 1]
            i += 1
        i += 1
        if name == "--judge":
            opts["judges"].append(value)
        else:
            opts[name[2:].replace("-", "_")] = value
    if opts["command"] is None or (opts.get("no_worker") and opts["command"] != "hook"):
        return None
    return opts


def _private_store(path: str) -> bool:
    """Whether ``path`` is an existing store folder already made private (0700, with its
    .gitignore): the full path creates or repairs one."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_mode & 0o777) == 0o700 and os.path.exists(GITIGNORE.join(path)) \
        and os.access(path, os.W_OK)


class _Fallback(Exception):
    """The full hook must handle this event (stdin already read: its payload goes with it)."""


def _hook(opts: dict) -> int | None:
    if JUDGE_CHILD.get():
        return 0  # a judge's own agent session: the full hook does nothing either
    outcome = opts.get("outcome", "success")
    if outcome not in SESSION_OUTCOMES or opts.get("output", "text") not in ("text", "gemini"):
        return None
    raw = read_stdin()
    try:
        return _hook_end(opts, raw, outcome)
    except _Fallback:
        pass
    except Exception:  # noqa: BLE001
        pass
    # stdin is read: give the payload to the full hook through a pipe of our own
    replace_stdin(raw)
    return None


def _hook_end(opts: dict, raw: bytes, outcome: str) -> int:
    try:
        payload = json.loads(raw.decode("utf-8", "replace")) if raw.strip() else {}
    except ValueError:
        raise _Fallback from None
    if not isinstance(payload, dict):
        raise _Fallback
    if opts.get("event") and EVENT_KEY not in payload:
        payload[EVENT_KEY] = opts["event"]  # as the full hook: setdefault
    name = event_name(payload)
    if name not in END_EVENTS and name not in START_EVENTS and name not in TOOL_EVENTS:
        raise _Fallback
    sid = session_id_of(payload)
    reason = reason_of(payload)
    if sid is None or not _simple(sid, 200, "-.:@+/") or (reason and not _simple(reason, 64)):
        raise _Fallback  # the full hook checks the id and scans the reason for secrets
    cwd = raw_cwd(payload)
    if not resolve.named(opts.get("store")) and cwd is not None and not (isinstance(cwd, str) and os.path.isabs(cwd)):
        raise _Fallback  # the full hook refuses it (consolidate.agents.hooks.full.hook_refusal)
    store = resolve.store_path(opts.get("store"), cwd=cwd)
    if not _private_store(store):
        raise _Fallback
    if name in START_EVENTS:
        return _session_start(store, sid, payload, opts)
    if name in TOOL_EVENTS:
        return _file_recall(store, sid, payload, cwd)
    os.umask(0o077)
    record = {"session_id": sid, "outcome": outcome, "reason": reason or None, "ended_at": time.time(), "event": name}
    append_end(store, record)
    pid = None if opts.get("no_worker") else spawn_worker(store, opts, log=WORKER_LOG.join(store))
    _log(store, f"{name} session={sid} queued ({outcome}); worker pid {pid}")
    return 0


def _session_start(store: str, sid: str, payload: dict, opts: dict) -> int:
    """SessionStart from the start file (consolidate/agents/hooks/fast_start.py), or _Fallback."""
    start = importlib.import_module(_FAST_START)  # here: the session-end hook never loads it
    try:
        gemini = opts.get("output") == "gemini"
        text = start.session_start(store, sid, payload, cwd=cwd_of(payload), gemini=gemini)
    except start.Fallback:
        raise _Fallback from None
    sys.stdout.write((gemini_output(text) if gemini else text) + "\n")
    _log(store, f"sessionstart session={sid}: recorded as the current session")
    return 0


def _file_recall(store: str, sid: str, payload: dict, cwd) -> int:
    """PreToolUse/BeforeTool: what the full hook prints (consolidate.agents.file_recall.run, the same
    call), without the command line's parser and the full hook's modules (issue 34). The full hook's
    refusals are checked first: a ``cwd`` that is not a folder goes to it."""
    if cwd is not None and resolve.payload_folder(cwd) is None:
        raise _Fallback  # the full hook refuses it (consolidate.agents.hooks.full.hook_refusal)
    text = importlib.import_module(_FILE_RECALL).run(Path(store), sid, payload)  # here: the other hooks never load it
    if text:
        sys.stdout.write(text + "\n")
    return 0


def exit_now(code: int) -> None:
    """End the process at once with ``code`` (stdout and stderr flushed) when a fast SessionStart left
    its SQLite connection open (consolidate/agents/hooks/fast_start.py): the close-time checkpoint is
    left to the next connection that closes normally. Returns when there is none."""
    fast_start = sys.modules.get(_FAST_START)
    if fast_start is None or not fast_start.LEFT_OPEN:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def close_left_open() -> None:
    """Close the connections a fast SessionStart left open (an in-process caller of cli.main)."""
    fast_start = sys.modules.get(_FAST_START)
    while fast_start is not None and fast_start.LEFT_OPEN:
        fast_start.LEFT_OPEN.pop().close()


#: The fast SessionStart's module, looked up (not imported: only a SessionStart loads it).
_FAST_START = "consolidate.agents.hooks.fast_start"
#: File recall (PreToolUse, BeforeTool) and the session tables (the idle run): imported by name by the
#: events that need them, so the session-end hook loads neither.
_FILE_RECALL = "consolidate.agents.file_recall"
_TABLES = "consolidate.store.sessions.tables"


def _log(store: str, message: str) -> None:
    """One line in the store's logs/hook.log (consolidate.store.hook_log; the store is private already)."""
    hook_log.log(store, message, prepare=False)


# --- the idle run ------------------------------------------------------------------------------------


def _idle_run(opts: dict) -> int | None:
    sid = opts.get("session")
    if not sid or not _simple(sid, 200, "-.:@+/") or any(opts.get(k) for k in ("chroma_url",)):
        return None
    store = resolve.store_path(opts.get("store"))
    db_path = SESSIONS_DB.join(store)
    if not _private_store(store) or not os.path.exists(db_path):
        return None
    journal = JOURNAL.join(store)
    if os.path.isdir(journal) and any(n.endswith(".json") for n in os.listdir(journal)):
        return None  # a crashed run is replayed first by the full run
    tables = importlib.import_module(_TABLES)
    conn = tables.connect(db_path)
    try:
        fold_queue_file(conn, store)
        run_id = "run-" + os.urandom(6).hex()
        if not tables.finish_idle_end(conn, sid, time.time(), run_id):
            return None
    finally:
        conn.close()
    sys.stdout.write(f"session {sid} (success) · run {run_id} · 0 notes\n"
                     "  -> 0 durable, 0 quarantined, 0 transient, 0 re-confirmed; judges: none\n")
    return 0
