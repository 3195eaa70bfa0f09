"""The hooks' log (issue 27: one writer): ``logs/hook.log`` in the store, one line per hook event
and per harvest the worker or a run made for a hook, and its fallback when the store cannot take the
line (read-only, full, gone): ``hook.log`` in the user's state folder with the store's path, and one
line on stderr. Written by the fast hook (consolidate/agents/hooks/fast.py), the full hook, the
transcript import and the pipeline's run (the harvests it finishes).

Each line is ``<UTC time, seconds> <message on one line, at most 500 characters>``, appended to a
file created 0600 (an existing one with group or other bits is narrowed), through the gate of persisted
text (consolidate/rules/persisted.py: private spans and secrets). Standard library only (the fast hook
imports this module), consolidate.core.private and the gate (the secret gate loads on first use).
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
from pathlib import Path

from consolidate.core.private import FILE_MODE, prepare_store_dir
from consolidate.store.layout import GITIGNORE, HOOK_LOG
from consolidate.rules.persisted import gate

#: The log's file name (under the store's ``logs/``, and in the fallback folder).
LOG_FILE = os.path.basename(HOOK_LOG.name)
#: At most this many characters of a message are written.
MAX_CHARS = 500


def log(store: str | os.PathLike, message: str, *, prepare: bool = True) -> None:
    """Append ``message`` to the store's ``logs/hook.log``; with ``prepare`` (default) the store
    folder is created or made private first (consolidate.core.private.prepare_store_dir: the fast
    hook, which only logs in a store already private, passes False). When the store cannot take the
    line, :func:`fallback_log`. Never raises."""
    try:
        if prepare:
            prepare_store_dir(Path(store), GITIGNORE.name)
        append(os.path.dirname(HOOK_LOG.join(store)), message)
    except OSError as exc:
        fallback_log(os.fspath(store), message, exc)


def append(folder: str, message: str) -> None:
    """Append one stamped line to ``folder``/hook.log (``folder`` created 0700). Raises OSError."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    fd = os.open(os.path.join(folder, LOG_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, FILE_MODE)
        line = gate(" ".join(message.split()))  # private spans and secrets: consolidate/rules/persisted.py
        os.write(fd, f"{stamp} {line[:MAX_CHARS]}\n".encode("utf-8", "replace"))
    finally:
        os.close(fd)


def fallback_dir() -> str:
    """Where the hooks log when a store cannot take its own log line: ``$XDG_STATE_HOME/consolidate``
    (default ``~/.local/state/consolidate``)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "consolidate")


def fallback_log(store: str, message: str, cause: BaseException | None = None) -> None:
    """A hook's log line that the store could not take (read-only, full, gone): appended to
    ``hook.log`` in :func:`fallback_dir` with the store's path, and one line on stderr (the hook
    still exits 0: the agent is not blocked). Never raises."""
    why = f" (the store's log could not be written: {getattr(cause, 'strerror', None) or cause})" if cause else ""
    line = gate(f"store={store}: {message}{why}")
    where = ""
    try:
        append(fallback_dir(), line)
        where = f" (logged in {os.path.join(fallback_dir(), LOG_FILE)})"
    except OSError:
        pass
    try:
        sys.stderr.write("consolidate hook: " + " ".join(line.split())[:MAX_CHARS] + where + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
