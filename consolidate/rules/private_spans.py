"""Private spans: text between ``<private>`` and ``</private>`` never leaves the session tier.

A user (or an agent) may mark part of a note or of a prompt private: ``deploy with the staging key
<private>the client is Acme, do not name them</private>``. The session tier keeps the note as written
(it is the session's own scratch space), but nothing past it sees the private text:

- the consolidation replaces every span with :data:`MARK` as soon as it loads the notes (the secret
  gate stage, :func:`strip_plan`), so no judge prompt, candidate, memory, event, journal or
  ``notes.md`` line can hold it; a note made only of private text is left out (event
  ``note.private``) and goes with the session's rows;
- the hook's log lines and the one-line notices a writer is shown are built from the stripped text
  (:func:`strip`).

Rules: tags are matched case-insensitively and may hold spaces (``< private >``); spans do not nest
(the first ``</private>`` closes); an opening tag with no closing tag makes the rest of the text
private (the safe side: a forgotten closing tag never leaks the end of a prompt); a closing tag with
no opening tag is dropped. Only the standard library: this runs in the hook.
"""

from __future__ import annotations

import re

#: What a private span becomes outside the session tier.
MARK = "[private]"

_OPEN = re.compile(r"<\s*private\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*private\s*>", re.IGNORECASE)
_SPAN = re.compile(r"<\s*private\s*>.*?(?:<\s*/\s*private\s*>|\Z)", re.IGNORECASE | re.DOTALL)


def has_private(text: str) -> bool:
    """Whether ``text`` holds a private tag (an opening or a stray closing one)."""
    return isinstance(text, str) and "<" in text and bool(_OPEN.search(text) or _CLOSE.search(text))


def strip(text: str, mark: str = MARK) -> str:
    """``text`` with every private span (tags included) replaced by ``mark`` and stray closing tags
    removed; the text itself when it holds no tag."""
    if not has_private(text):
        return text
    out = _SPAN.sub(mark, text)
    return _CLOSE.sub("", out)


def only_private(text: str) -> bool:
    """Whether nothing but private spans, whitespace and punctuation is left of ``text``."""
    if not has_private(text):
        return False
    return not re.search(r"\w", strip(text, ""))


def strip_plan(plan) -> int:
    """Replace the private spans of every note of ``plan`` (content and string metadata) in place,
    before any stage past the session tier sees them; a note left with no text of its own is marked
    ``blocked`` with a ``note.private`` event (it goes with the session's rows, unjudged). Returns
    how many notes held a private span."""
    n = 0
    left_out = []
    for note in plan.notes:
        meta_private = any(has_private(v) for v in note.metadata.values() if isinstance(v, str))
        if not has_private(note.content) and not meta_private:
            continue
        n += 1
        if only_private(note.content):
            left_out.append(note.id)
        note.content = strip(note.content)
        note.metadata = {k: strip(v) if isinstance(v, str) else v for k, v in note.metadata.items()}
    for nid in left_out:
        plan.note_status[nid] = "blocked"
    if left_out:
        plan.decide("note.private", note_ids=left_out,
                    reason="only private text (<private>...</private>): never judged, never stored")
    return n
