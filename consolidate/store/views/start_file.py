"""The start file ``memory/context.start.json``: what the light SessionStart hook prints, and the
stamps that tell whether it still holds. The owner of its name, its format and its stamps; the text
is written by consolidate.store.views.recalled (:func:`~consolidate.store.views.recalled.write_start_file`,
from what the store holds) and only read here (:func:`load`, by consolidate/agents/hooks/fast_start.py).

**The file** holds ``{"format", "stamps", "text", "digests"}``: the text the full SessionStart hook
would print after its session line (``consolidate.store.views.recalled.recalled_context``: ``core.md``
and ``context.md`` with the drift check of the memories' code anchors, the context guard and
control characters written visibly, cut to its bound), the echo digests of its memory lines
(``consolidate.store.echo``), and the **stamps** of everything that output depends on:

- ``memory/core.md``, ``memory/context.md``, ``memory/context.json`` and ``manifest.json``
  (inode, size, mtime in ns; None when absent): a file edited by hand or by another version is
  noticed;
- every file the context's memories are anchored to (the paths the drift check stats, after the
  recorded renames), under the project root the check uses: an edited or removed file is noticed;
- the package's code (how many modules and the newest mtime, every subpackage): an upgrade is
  noticed;
- ``team.json`` (a team store pulls first: the full hook).

It is written by every writer of ``context.md`` (``consolidate.store.views.context_md.write``: runs,
undo, forget, review, team pulls) and by the full SessionStart hook whenever it finds the file
missing or stale, so one slow start after a change makes the next ones fast again.

Only the standard library (``json``, ``os``) and consolidate.core.settings: the light SessionStart
hook imports this module.
"""

from __future__ import annotations

import json
import os

from consolidate.core.settings import PROJECT_ROOT
from consolidate.store.layout import CONTEXT_INDEX, CONTEXT_MD, CORE_MD, MANIFEST, TEAM_JSON
from consolidate.store.layout import START_FILE as _START

START_FILE = _START.name
#: Format of the start file; a file of another format is stale.
FORMAT = 1
#: The store files the printed context is made from (under ``memory/``, and the store's manifest).
_STAMPED = (CORE_MD, CONTEXT_MD, CONTEXT_INDEX, MANIFEST, TEAM_JSON)


def check_root(store_path) -> str:
    """The project root the drift check stats anchored files under (consolidate.store.anchors.check):
    ``$CONSOLIDATE_PROJECT_ROOT``, else the folder holding the store."""
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

