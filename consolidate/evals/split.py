"""The tuning / validation split of the dev labels, by session (issue 31 item 1).

A prompt is tuned on the notes of the tuning sessions and adopted only when its figures on the
validation sessions improve; nobody reads single validation notes to write a rule. Splitting by
session, not by note, keeps the notes of one session (one project, one agent's habits) on one side:
a rule fitted to a session's wording cannot score on its own siblings in validation.

The rule, a pure function of the session ids and the seed (:func:`split_sessions`):

1. take the distinct session ids;
2. rank them by the SHA-256 hex digest of ``"<seed>:<session id>"`` (UTF-8), lowest first, the id
   itself breaking a tie;
3. the first ``round(n * VALIDATION_FRACTION)`` sessions (n the number of sessions, at least one when
   there are two or more) are the validation part, the others the tuning part.

The seed is :data:`SEED`. The ranking does not depend on the order the ids come in, nor on Python's
``random`` or hash seed. Both dev label sets (``realnotes-dev-labels.jsonl`` and
``realnotes-dev-labels-2.jsonl``) cover the same 41 sessions, so ``consolidate eval`` draws the split
over those 41: 27 tuning sessions, 14 validation sessions, the same for both sets. The split is drawn
over the sessions of the label files given to one run (after ``--limit``); a note without a session
id is in neither part.

docs/design.md ("Tuning and validation split") says the same for readers of the docs; the eval report
per part is consolidate/evals/parts.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the rule itself needs no judge code: only the notes' session ids
    from consolidate.evals.judges import LabeledNote

#: The seed of the dev-label split (issue 31). Changing it draws another split: figures measured under
#: one seed are not comparable with figures measured under another.
SEED = 31
#: The share of the sessions in the validation part (the rest is the tuning part).
VALIDATION_FRACTION = 1 / 3
TUNING = "tuning"
VALIDATION = "validation"
PARTS = (TUNING, VALIDATION)


def _rank_key(seed: int, session_id: str) -> tuple[str, str]:
    return hashlib.sha256(f"{seed}:{session_id}".encode("utf-8")).hexdigest(), session_id


def validation_count(n: int, fraction: float = VALIDATION_FRACTION) -> int:
    """How many of ``n`` sessions go to validation: ``round(n * fraction)``, at least 1 when n >= 2 and
    at most n - 1 (so that both parts hold a session whenever there are two). Raises ValueError for a
    negative ``n`` or a fraction outside (0, 1)."""
    if n < 0 or not 0 < fraction < 1:
        raise ValueError(f"need n >= 0 and 0 < fraction < 1, not {n} and {fraction}")
    if n < 2:
        return 0
    return min(max(round(n * fraction), 1), n - 1)


def split_sessions(session_ids: Iterable[str], seed: int = SEED,
                   fraction: float = VALIDATION_FRACTION) -> dict[str, str]:
    """Session id -> ``"tuning"`` or ``"validation"`` for every distinct id of ``session_ids``, by the
    rule of this module. A single session is tuning. Raises ValueError as :func:`validation_count`."""
    ids = sorted(set(session_ids), key=lambda s: _rank_key(seed, s))
    k = validation_count(len(ids), fraction)
    return {sid: VALIDATION if rank < k else TUNING for rank, sid in enumerate(ids)}


def session_split(label_sets: Iterable[list[LabeledNote]], seed: int = SEED) -> dict[str, str]:
    """:func:`split_sessions` over the session ids of every note of ``label_sets`` (one list per
    label file): one split for all the files of a run."""
    return split_sessions((n.session_id for notes in label_sets for n in notes if n.session_id), seed)


def parts_of(notes: Iterable[LabeledNote], sessions: dict[str, str]) -> dict[str, str]:
    """Note id -> part for every note of ``notes`` whose session ``sessions`` (a
    :func:`session_split`) places."""
    return {n.id: sessions[n.session_id] for n in notes if n.session_id in sessions}
