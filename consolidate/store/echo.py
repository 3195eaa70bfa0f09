"""Recall echoes: text the store showed an agent that comes back as a note.

A memory printed at SessionStart (``memory/context.md``), returned by ``recall`` (CLI, MCP, Python),
given in a workspace's ``context/memories.md`` (written at ``session start``, read back through
``session_read``/``consolidate session read``/``Workspace.read``) or shown in MCP output may be repeated by the agent in the same session; a harvest or a note then
carries it back. That is an echo, not an independent observation: it must never re-confirm the
memory (raise its confidence, promote it out of quarantine).

So every read path records what it showed in ``sessions.sqlite3`` (table ``shown``, its statements in
consolidate.store.sessions.tables): the session it
was shown to (the SessionStart hook's session, the MCP server's current session) or none (a CLI or
Python recall), the time, and the memory texts. The contradiction stage asks :func:`is_echo` before
counting a keeper that matches an existing memory as a re-confirmation: it is an echo when the
memory's text was shown to that session, or shown to no session in particular while the session
was being written (from an hour before its first note to its end). Rows older than
``KEEP_SECONDS`` are pruned on write. Only the standard library.
"""

from __future__ import annotations

import re
import time
from consolidate.core.normal import text_key
from consolidate.store.sessions.tables import record_shown as record
from consolidate.store.sessions.tables import shown_digests
TYPE_CHECKING = False  # typing is not imported at run time: the light SessionStart hook imports this module
if TYPE_CHECKING:
    from typing import Iterable

#: Shown texts older than this are pruned (seconds).
KEEP_SECONDS = 30 * 86400.0
#: A recall without a session counts for sessions whose notes were written from this long after it.
UNATTRIBUTED_WINDOW = 3600.0

#: A rendered memory line's suffix and any marks after it (``[high, user-stated, 2026-07] [drifted: a.py]``).
SUFFIX = re.compile(r"(?:\s*\[[^\[\]]*\])+\s*$")
_SUFFIX = SUFFIX


def digest(text: str) -> str:
    """The 16-hex-digit SHA-1 of a memory text's consolidate.core.normal.text_key: what ``shown`` records."""
    import hashlib  # noqa: PLC0415 - here: the light SessionStart hook records precomputed digests without it

    return hashlib.sha1(text_key(text).encode("utf-8")).hexdigest()[:16]


def memory_texts(rendered: str) -> list[str]:
    """The memory texts in rendered lines (``- Use pnpm, not npm [high, user-stated, 2026-07]``):
    each line without its list marker and its ``[...]`` suffix."""
    out = []
    for line in rendered.splitlines():
        line = line.strip()
        if not line.startswith(("- ", "* ")) or not line.endswith("]"):
            continue
        text = _SUFFIX.sub("", line[2:]).strip()
        if text:
            out.append(text)
    return out


def record_shown(tier, session_id: str | None, texts: Iterable[str], *, now: float | None = None) -> None:
    """Record that the memory ``texts`` were shown (to ``session_id``, or to no session in particular)."""
    record_digests(tier, session_id, sorted({digest(t) for t in texts if t and t.strip()}), now=now)


def record_digests(tier, session_id: str | None, digests: list[str], *, now: float | None = None) -> None:
    """:func:`record_shown` for texts already digested (:func:`digest`; the SessionStart start file
    holds its context's digests: consolidate/store/views/start_file.py)."""
    if not digests:
        return

    now = time.time() if now is None else now
    record(tier.db, session_id, digests, now, now - KEEP_SECONDS)


def shown_to(tier, session_id: str, *, first_note_at: float | None = None, until: float | None = None) -> set[str]:
    """Digests of the memory texts shown to ``session_id``, and of those shown to no session from
    UNATTRIBUTED_WINDOW before ``first_note_at`` up to ``until``."""

    window = None if first_note_at is None else (first_note_at - UNATTRIBUTED_WINDOW, until or time.time())
    return shown_digests(tier.db, session_id, window)


def is_echo(shown: set[str], memory_text: str) -> bool:
    """Whether the memory ``memory_text`` is among the ``shown`` digests (see :func:`shown_to`)."""
    return bool(shown) and digest(memory_text) in shown


def record_shown_safely(store, session_id: str | None, texts: Iterable[str]) -> bool:
    """:func:`record_shown` on ``store``'s session tier; never raises (a read-only store, a locked
    database): a read path does not fail because it could not record. Returns whether it recorded."""
    try:
        record_shown(store.sessions, session_id, texts)
        return True
    except Exception:  # noqa: BLE001
        return False


def echo_reason(plan, ctx, match: dict) -> str | None:
    """Why the existing memory ``match`` (a neighbour dict with ``id`` and ``document``) must not be
    re-confirmed by this run's keeper: its text was shown to the session (see the module docstring);
    None when it was not. The shown texts are read once per run (cached on ``ctx``)."""
    shown = getattr(ctx, "_echo_shown", None)
    if shown is None:
        first = min((n.created_at for n in plan.notes), default=None)
        try:
            shown = shown_to(ctx.store.sessions, plan.session_id, first_note_at=first, until=plan.started_at)
        except Exception:  # noqa: BLE001 - no record (an old store, a read-only one): nothing is an echo
            shown = set()
        ctx._echo_shown = shown
    if is_echo(shown, match.get("document") or ""):
        return (f"same as {match.get('id')}, whose text the store showed this session (context or recall):"
                " an echo, not counted as a confirmation")
    return None
