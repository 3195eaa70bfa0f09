"""The write policy answered at note-write time, for flagged notes (``note``, ``import``, MCP ``note``).

A flag is the agent saying "keep this". At consolidation a flagged note is never demoted by a
wording rule (stages/write_policy.py), so the time to tell the agent that its note lacks a field,
reads as trivia or is too short to stand alone is when it writes the note, while it still knows the
context and can rewrite it. :func:`check_note` gives that answer as one line; the note is stored
either way.

What the line says, in order: the type the note will be kept as (its ``kind``, or the type inferred
from its wording, with a hint to pass ``kind``), the required fields of that type that could not be
found (with how to give each), and a trivia or length problem the rules see
(memory_types.memorability_problem). A note with nothing to fix gets ``policy: kept as a <type>``.
Unflagged notes get None: a judge decides their type and fields at session end.

The secret gate at write time is a separate check (it belongs to the secret gate's own code); this
module does not scan for secrets.
"""

from __future__ import annotations

from typing import Any
from consolidate.rules.memory_types import FIELD_HINTS, TYPES, fields_from_text, infer_type, memorability_problem, required_missing


#: The policy line of a flagged note the secret gate blocked at write time: it is stored redacted and
#: never consolidated, so no type is "kept" (the ``secret:`` line that follows says what was stored).
BLOCKED_LINE = "policy: not kept: the secret gate blocked this note (see the secret line)"


def check_note(content: str, *, flag: bool, kind: str | None = None,
               metadata: dict[str, Any] | None = None, blocked: bool = False) -> str | None:
    """One line saying what the write policy would do with a flagged note, or None for an unflagged
    note. ``kind`` is a validated kind or None; ``metadata`` the note's extra fields (an import
    line's ``reason``, ``command``, ...); ``blocked``: the secret gate redacted the note when it was
    written (:data:`BLOCKED_LINE`: it will not be consolidated). Never raises for the note's text."""
    if not flag:
        return None
    if blocked:
        return BLOCKED_LINE

    if kind in TYPES:
        type_, inferred = kind, None
    else:
        type_, inferred = infer_type(content)
    fields = fields_from_text(type_, content, metadata)
    missing = required_missing(type_, fields)
    parts = []
    head = f"kept as a {type_}"
    if inferred:
        head += f" (type inferred: {inferred}; pass kind to set it)"
    parts.append(head)
    if missing:
        hints = "; ".join(FIELD_HINTS.get(n, n) for n in missing)
        parts.append(f"missing {', '.join(missing)}, stored with fields_missing unless you rewrite it ({hints})")
    problem = memorability_problem(" ".join(content.split()))
    if problem:
        parts.append(f"reads as {problem}: a judge would reject it; the flag keeps it")
    return "policy: " + "; ".join(parts)
