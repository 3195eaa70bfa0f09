"""The recalled context: what the SessionStart hook prints after its session line, made from what the
store holds, and the start file written from it for the light SessionStart.

:func:`recalled_context` reads ``memory/core.md`` and ``memory/context.md`` (consolidate.store.views.context_md
writes it), runs the drift check of the memories' code anchors (consolidate.store.anchors), passes the
memory lines through the context guard again (consolidate.rules.guard), and fits both into one bound
(consolidate.rules.context_budget) under a header that counts what is printed
(consolidate.rules.context_count). The full SessionStart hook prints it.

:func:`write_start_file` writes that text, the echo digests of its memory lines
(consolidate.store.echo) and the stamps of everything it depends on to ``memory/context.start.json``
(the format and the stamps are consolidate.store.views.start_file's), so the light SessionStart
(consolidate/agents/hooks/fast_start.py) prints it without this module: every writer of
``context.md`` calls it (consolidate.store.views.context_md.write), and the full SessionStart hook
calls :func:`refresh_start_file` when the file is missing or stale. The stamps are taken before and
after the text is computed and the file is written only when they agree.

Standard library at module level; the context guard (its patterns take 50-140 ms to compile) and
the anchors' drift check are imported when a context is made.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from consolidate.core.atomic import write_json_atomic
from consolidate.rules.context_budget import CONTEXT_MAX_CHARS
from consolidate.rules.context_count import memory_lines, recount
from consolidate.store.echo import digest, memory_texts
from consolidate.store.layout import CONTEXT_INDEX, CONTEXT_MD, CORE_MD, MEMORY
from consolidate.store.layout import START_FILE as START
from consolidate.store.views import shown as agent_view
from consolidate.store.views.start_file import FORMAT, check_root, load, stamps

#: Characters the memories' header may grow by when it says what was left out (context_count.recount).
HEADER_RESERVE = 120


def recalled_context(store_path: Path, max_chars: int = CONTEXT_MAX_CHARS) -> str:
    """``memory/core.md`` then ``memory/context.md`` (written by each run) of the store folder
    ``store_path``, within ``max_chars`` characters: one budget shared by both, a share of it kept
    for the memories, and a first line saying what was cut (consolidate/rules/context_budget.py). The
    memories pass the context guard again as they are printed (consolidate/rules/guard.py: none
    worded as an order or running remote code), under the notice that they are notes, not
    instructions; their header counts what is printed (consolidate/rules/context_count.py). ''
    when the store holds neither file. Never raises for a missing or unreadable file."""
    try:
        core = CORE_MD.of(store_path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        core = ""
    context, stale = "", 0
    try:
        text = CONTEXT_MD.of(store_path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        text = ""
    if text:
        written = memory_lines(text)
        text = _checked_context(store_path, text)
        stale = max(0, written - memory_lines(text))
        context = agent_view.guard_context(text) if text else ""
    fitted = agent_view.fit_context(core, context, max_chars, reserve=HEADER_RESERVE if context else 0)
    if not context:
        return fitted.text()
    # the header counts what is printed, and says what was left out
    return fitted.text(recount(fitted.memories, stale=stale, before_cut=memory_lines(context)))


def _checked_context(store_path: Path, text: str) -> str:
    """context.md with the drift check of its memories' code anchors (consolidate.store.anchors): a
    drifted memory ends with ``[drifted: path]``, one whose file is gone is left out. The text as
    it is when the check cannot run."""
    try:
        checked = agent_view.context_text(store_path)
    except Exception:  # noqa: BLE001 - the hook never fails the agent
        return text
    return checked.strip() if checked is not None else text


def write_start_file(store_path: str | os.PathLike) -> bool:
    """Write the start file of the store folder ``store_path`` (see the module docstring); returns
    whether it was written (False when a stamped file changed while the text was computed, an
    anchored file is gone, or the store has no memory folder). Raises OSError when it cannot be
    written."""
    store = str(store_path)
    if not os.path.isdir(MEMORY.join(store)):
        return False
    root = check_root(store)
    for _attempt in range(2):  # the drift check may update the manifest's hash cache the first time
        before = stamps(store, _anchored(store), root)
        text = recalled_context(Path(store))
        after = stamps(store, _anchored(store), root)
        if before == after:
            break
    else:
        return False  # changed meanwhile
    if any(v is None for v in before["anchored"].values()):
        return False  # an anchored file is gone: the full hook looks for a rename every time
    digests = sorted({digest(t) for t in memory_texts(text) if t and t.strip()})
    write_json_atomic(START.of(Path(store)),
                      {"format": FORMAT, "stamps": before, "text": text, "digests": digests})
    return True


def refresh_start_file(store_path: str | os.PathLike) -> None:
    """Write the start file when it is missing or stale (the full SessionStart hook calls this after
    printing). Never raises."""
    try:
        if load(store_path) is None:
            write_start_file(store_path)
    except Exception:  # noqa: BLE001 - the next start takes the full path again
        pass


def _anchored(store: str) -> list[str]:
    """The files the memories of ``memory/context.json`` are anchored to (consolidate.store.anchors)."""
    from consolidate.store.anchors import anchored_paths, read_section  # noqa: PLC0415 - off the SessionStart hook path (4 modules)

    try:
        with open(CONTEXT_INDEX.join(store), encoding="utf-8") as f:
            index = json.load(f)
    except (OSError, ValueError):
        return []
    ids = [e.get("id") for e in index if isinstance(e, dict)] if isinstance(index, list) else []
    return sorted(anchored_paths(read_section(Path(store)), ids))
