"""Notes files: the file an agent keeps its working notes in and edits over sessions (a Cursor
scratchpad ``.cursor/scratchpad.md``, a Cline memory bank ``memory-bank/*.md``, an ``AGENTS.md`` or
``CLAUDE.md`` the agent maintains).

A session may record what such a file holds at its end (a *snapshot*: the digest of every note in
it, ``SessionTier.add_notes_file``, ``consolidate notes-file``). A memory written from notes of one
notes file carries that file (flat metadata ``notes_file``) and its notes' digests
(``notes_file_keys``, space-separated). When a later session's snapshot of the file holds none of a
memory's notes any more (the agent deleted the note, or edited it into another), the memory is
*withdrawn*: archived with status ``expired`` and the event ``memory.withdrawn``, undone with its
run (consolidate/pipeline/stages/withdrawn.py). The notes file is the agent's own statement of
what still holds; a note it no longer keeps stops steering sessions.

Memories from notes of no notes file, or of several, are never withdrawn this way. Only the
standard library: the session tier imports this module."""

from __future__ import annotations

import hashlib

from consolidate.core.normal import text_key

__all__ = ["note_digest", "DIGEST_CHARS", "MAX_SOURCE_FILE_CHARS", "source_file_of"]

#: Hex digits of a note digest: 48 bits, a collision among the notes of one file (hundreds) is
#: about 1 in 10^10; short enough never to read as key material (32 hex digits and more do).
DIGEST_CHARS = 12
MAX_SOURCE_FILE_CHARS = 1024


def note_digest(text: str) -> str:
    """The digest a note is known by in a notes file: the first :data:`DIGEST_CHARS` hex digits of
    SHA-256 over its :func:`consolidate.core.normal.text_key`, so the same note written in another
    Unicode form, case or spacing is the same note (``- [ ] task`` and ``- [x] task`` are two).
    Raises TypeError for a non-string."""
    return hashlib.sha256(text_key(text).encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def source_file_of(metadata: dict | None) -> str | None:
    """The notes file a note came from (its metadata's ``source_file``, a non-empty string), or None."""
    value = (metadata or {}).get("source_file")
    return value if isinstance(value, str) and value.strip() else None
