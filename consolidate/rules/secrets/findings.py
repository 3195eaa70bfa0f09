"""What the secret gate reports: a :class:`Finding` per secret, its redacted preview, and how the
rules' candidate spans are resolved into findings (the most specific rule wins an overlap)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class Finding:
    """One secret found in a text.

    ``kind`` names the rule that fired; ``preview`` is :func:`redact_preview` of the secret;
    ``start``/``end`` are the character offsets of the secret value in the scanned text
    (``text[start:end]`` is the secret, e.g. only the password of a connection string).
    """

    kind: str
    preview: str
    start: int
    end: int


#: Values shorter than this show no character at all in a preview: only their kind and length.
PREVIEW_MIN_CHARS = 16

#: At most this fraction of a value's characters, and at most PREVIEW_MAX_SHOWN, appear in a preview.
PREVIEW_FRACTION = 1 / 8
PREVIEW_MAX_SHOWN = 4


def redact_preview(value: str, kind: str = "secret") -> str:
    """What may be shown of a secret: its kind and length, and for long values a few leading characters.

    ``"hunter22"`` -> ``"<secret, 8 chars>"``; a 51-character OpenAI key -> ``"sk-p…<openai-key, 51
    chars>"``. A value under :data:`PREVIEW_MIN_CHARS` characters shows none of them; a longer one
    shows its first ``min(PREVIEW_MAX_SHOWN, len * PREVIEW_FRACTION)`` characters (at most 1/8 of
    it, the documented prefix of a provider key rather than its random part), never its end. The
    preview is a placeholder to the gate: ``redact(redact(x)) == redact(x)`` and ``scan(redact(x))``
    is empty."""
    n = len(value)
    shown = min(PREVIEW_MAX_SHOWN, int(n * PREVIEW_FRACTION)) if n >= PREVIEW_MIN_CHARS else 0
    label = f"<{kind}, {n} chars>"
    return f"{value[:shown]}…{label}" if shown else label


class _Candidate(NamedTuple):
    priority: int
    kind: str
    start: int
    end: int


_P_PRIVATE_KEY, _P_JWT, _P_PROVIDER, _P_VENDOR, _P_CONNECTION, _P_HEADER, _P_ASSIGNMENT, _P_KEY_MATERIAL = range(8)


def _resolve(candidates: list[_Candidate]) -> list[_Candidate]:
    """Keep the most specific candidate where candidates overlap; sort by position."""
    starts: list[int] = []  # kept spans, sorted by start and disjoint
    kept: list[_Candidate] = []
    for cand in sorted(candidates, key=lambda c: (c.priority, c.start, -c.end)):
        if cand.end <= cand.start:
            continue
        i = bisect.bisect_right(starts, cand.start)
        if i and kept[i - 1].end > cand.start:
            continue
        if i < len(kept) and kept[i].start < cand.end:
            continue
        starts.insert(i, cand.start)
        kept.insert(i, cand)
    return kept
