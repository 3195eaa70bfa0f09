"""The SessionStart hook on the light entry point (issue 18): the context printed from a file written
when the context changed, the session recorded on one SQLite connection, nothing of the package
imported but a few standard-library modules.

**The start file** ``memory/context.start.json`` holds what the full SessionStart hook would print
after its session line (``consolidate.agents.hooks.full.recalled_context``: ``core.md`` and ``context.md`` with
the drift check of the memories' code anchors, the context guard and control characters written
visibly, cut to its bound) and the echo digests of its memory lines (``consolidate.store.echo``), with
the **stamps** of everything that output depends on:

- ``memory/core.md``, ``memory/context.md``, ``memory/context.json`` and ``manifest.json``
  (inode, size, mtime in ns; None when absent): a file edited by hand or by another version is
  noticed;
- every file the context's memories are anchored to (the paths the drift check stats, after the
  recorded renames), under the project root the check uses: an edited or removed file is noticed;
- the package's code (how many top-level modules and the newest mtime): an upgrade is noticed;
- ``team.json`` (a team store pulls first: the full hook).

It is written by every writer of ``context.md`` (``consolidate.store.views.context_md.write``: runs,
undo, forget, review, team pulls) and by the full SessionStart hook whenever it finds the file
missing or stale, so one slow start after a change makes the next ones fast again. The stamps are
taken before and after the text is computed and the file is written only when they agree.

**The fast SessionStart** (:func:`session_start`, called by ``consolidate.agents.hooks.fast``) prints the
start file's text when every stamp still holds, and records the session as the full hook does:
``hook_sessions`` (consolidate.agents.hooks.lifecycle), ``agent_sessions`` (consolidate.store.sessions.agents) and
the shown digests (consolidate.store.echo), on one connection after folding the queue file. It hands the
event to the full hook (:class:`Fallback`, before writing anything of its own) for a team store, a
stale or missing start file, a store or session database that does not exist yet, a session that
already has an end (a resume: its new part is decided there), sessions whose end never fired
(recovered there), and a queued session end whose harvest its hook did not finish (a worker is
started there). At exit the connection is left to the operating system (``exit_now``): SQLite's
close-time checkpoint (two fsyncs, most of a SQLite write's cost here) is left to the next
connection that closes normally; WAL mode keeps every committed write across a process exit.

Only the standard library at module level; the fast SessionStart imports ``fastpath``, ``session_tables``,
``hook_lifecycle``, ``agent_session``, ``echo`` and ``worker_health`` (the line saying workers are failing) (standard library only, ``typing`` for type checkers only).
"""

from __future__ import annotations

import json
import os

from consolidate.store.layout import CONTEXT_INDEX, CONTEXT_MD, CORE_MD, MANIFEST, MEMORY, SESSIONS_DB, TEAM_JSON, START_FILE as _START

START_FILE = _START.name
#: Format of the start file; a file of another format is stale.
FORMAT = 1
#: The store files the printed context is made from (under ``memory/``, and the store's manifest).
_STAMPED = (CORE_MD, CONTEXT_MD, CONTEXT_INDEX, MANIFEST, TEAM_JSON)


class Fallback(Exception):
    """The full SessionStart hook must handle this event (nothing was written by the fast one)."""


def session_line(sid: str, unrecorded: str | None = None) -> str:
    """What SessionStart tells the agent about its session (printed before the recalled context).
    With ``unrecorded`` (why the session could not be recorded in the store) it claims nothing the
    hook did not do: the MCP ``note`` tool cannot find the session by itself then."""
    if unrecorded:
        return (f"consolidate: this is session {sid}, but it could not be recorded in the store ({unrecorded}):"
                f" pass session_id \"{sid}\" to the consolidate MCP `note` tool; whether its notes are consolidated"
                " depends on the store taking its end.")
    return (f"consolidate: this is session {sid}. Notes you write with the consolidate MCP `note` tool"
            " (no session_id needed) belong to it and are consolidated when the session ends.")


def check_root(store_path) -> str:
    """The project root the drift check stats anchored files under (consolidate.store.anchors.check):
    ``$CONSOLIDATE_PROJECT_ROOT``, else the folder holding the store."""
    from consolidate.core.settings import PROJECT_ROOT

    return PROJECT_ROOT.get() or os.path.dirname(os.path.realpath(store_path))


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def code_stamp() -> list[int]:
    """``[modules, newest mtime in ns]`` of the package's modules, every subpackage included."""
    n, newest = 0, 0
    folders = [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]
    while folders:
        with os.scandir(folders.pop()) as it:
            for entry in it:
                if entry.name.endswith(".py"):
                    n += 1
                    newest = max(newest, entry.stat().st_mtime_ns)
                elif entry.name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
    return [n, newest]


def stamps(store_path, anchored: list[str], root: str) -> dict:
    """The stamps of the module docstring for a store whose context is anchored to ``anchored``
    (paths relative to ``root``)."""
    store = str(store_path)
    files = {e.name: _stat(e.join(store)) for e in _STAMPED}
    return {"files": files, "root": root, "anchored": {rel: _stat(root + os.sep + rel) for rel in anchored},
            "code": code_stamp()}


def load(store_path) -> dict | None:
    """The start file of ``store_path`` when every stamp holds (``{"text", "digests", ...}``), else
    None (missing, unreadable, another format, or stale)."""
    try:
        with open(_START.join(str(store_path)), encoding="utf-8") as f:
            data = json.load(f)
        saved = data["stamps"]
        if data.get("format") != FORMAT or not isinstance(data["text"], str) or not isinstance(data["digests"], list):
            return None
        if saved["files"].get(TEAM_JSON.name) is not None:
            return None
        now = stamps(store_path, list(saved["anchored"]), check_root(store_path))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return data if now == saved else None


def write(store_path) -> bool:
    """Write the start file of ``store_path`` (see the module docstring); returns whether it was
    written (False when a stamped file changed while the text was computed, or a store without a
    memory folder). Raises OSError when it cannot be written."""
    from consolidate.store.echo import digest, memory_texts
    from consolidate.agents.hooks.full import recalled_context
    from consolidate.store.store import write_json_atomic

    store = str(store_path)
    if not os.path.isdir(MEMORY.join(store)):
        return False
    root = check_root(store)
    for _attempt in range(2):  # the drift check may update the manifest's hash cache the first time
        before = stamps(store, _anchored(store), root)
        text = recalled_context(_path(store))
        after = stamps(store, _anchored(store), root)
        if before == after:
            break
    else:
        return False  # changed meanwhile
    if any(v is None for v in before["anchored"].values()):
        return False  # an anchored file is gone: the full hook looks for a rename every time
    digests = sorted({digest(t) for t in memory_texts(text) if t and t.strip()})
    write_json_atomic(_START.of(_path(store)),
                      {"format": FORMAT, "stamps": before, "text": text, "digests": digests})
    return True


def refresh(store_path) -> None:
    """Write the start file when it is missing or stale (the full SessionStart hook calls this after
    printing). Never raises."""
    try:
        if load(store_path) is None:
            write(store_path)
    except Exception:  # noqa: BLE001 - the next start takes the full path again
        pass


def _path(store: str):
    from pathlib import Path

    return Path(store)


def _anchored(store: str) -> list[str]:
    """The files the memories of ``memory/context.json`` are anchored to (consolidate.store.anchors)."""
    from consolidate.store.anchors import anchored_paths, read_section

    try:
        with open(CONTEXT_INDEX.join(store), encoding="utf-8") as f:
            index = json.load(f)
    except (OSError, ValueError):
        return []
    ids = [e.get("id") for e in index if isinstance(e, dict)] if isinstance(index, list) else []
    return sorted(anchored_paths(read_section(_path(store)), ids))


# --- the fast SessionStart ------------------------------------------------------------------------


#: Connections a fast SessionStart leaves open for the process exit (see ``fastpath.exit_now``).
LEFT_OPEN: list = []


def session_start(store: str, sid: str, payload: dict, *, cwd: str | None = None, gemini: bool = False) -> str:
    """The SessionStart hook for ``sid`` (a plain session id) on the private store ``store``: record
    the session and return the text to print (the session line and the start file's context), or
    raise Fallback (see the module docstring). ``cwd``: the payload's
    (consolidate.agents.hooks.payload.cwd_of); ``gemini``: the session is Gemini CLI's."""
    from consolidate.store.sessions.queue_file import fold_queue_file
    from consolidate.store.sessions.segments import session_for_end
    from consolidate.store.sessions.tables import LightTier, connect

    db_path = SESSIONS_DB.join(store)
    if os.path.exists(TEAM_JSON.join(store)) or not os.path.exists(db_path):
        raise Fallback
    start = load(store)
    if start is None:
        raise Fallback
    conn = connect(db_path)
    try:
        from consolidate.agents.hooks.lifecycle import missed_sessions, session_for_start, stranded

        tier = LightTier(conn)
        fold_queue_file(conn, store, lambda s: session_for_end(tier, s))
        if tier.session_end(sid) is not None or missed_sessions(tier, sid, cwd=cwd) or stranded(tier):
            raise Fallback  # a resume, sessions to recover, or a harvest a killed hook left: the full hook
        from consolidate.store.sessions.agents import insert_start
        from consolidate.store.echo import record_digests

        session_for_start(tier, sid, payload)
        insert_start(conn, sid, agent="gemini-cli" if gemini else None, cwd=cwd)
        record_digests(tier, sid, [str(d) for d in start["digests"]])
    except BaseException:
        conn.close()
        raise
    from consolidate.store.worker_health import start_line

    warning = start_line(store, conn)  # workers failing, ends piling up: read at every start
    LEFT_OPEN.append(conn)
    context = (warning + "\n\n" + start["text"] if start["text"] else warning) if warning else start["text"]
    return session_line(sid) + ("\n\n" + context if context else "")
