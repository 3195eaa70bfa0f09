"""Who may overrule whom in a contradiction, and how much a judge's evidence claim is worth.

Used by the contradiction stage (consolidate/stages/contradiction.py) before it ranks two
contradicting statements. Two rules, both against memory poisoning (a note planted in a session, for
instance through a tool result or a web page the agent read, that tries to replace a project rule):

1. **Held back candidates never act on an active entry.** A candidate judged from a note worded as an
   instruction to the judge (``Candidate.isolated``, judges/injection.py) never supersedes, rejects or
   disputes any entry; a quarantined candidate (low confidence, or instruction-derived) never
   supersedes, rejects or disputes an *active* or *disputed* one. Such a candidate that contradicts
   an entry is rejected itself: quarantine keeps it out of recall, and this keeps it from taking the
   entry out (:func:`may_overrule`).
2. **A judge's evidence is a claim.** What a judge says about evidence (``user-stated``,
   ``observed-success``) is capped by where the note came from (:func:`credited_evidence`) before
   it ranks:

   ==========================================  ======================  ==========================
   note source                                 how it is known         highest evidence credited
   ==========================================  ======================  ==========================
   written by the user                         note metadata           user-stated
                                               ``source`` ``user`` or
                                               ``transcript:user``
   flagged by the agent when written           ``Candidate.source``    the evidence it recorded
                                               ``flagged``             (user-stated at most)
   written by the agent, judged                any other note          observed-success/-failure
   tool error harvested from a transcript      ``transcript:tool_error``  observed-failure
   harvested from an assistant turn            ``transcript:assistant``   inferred
   worded as an instruction to the judge       ``Candidate.isolated``  inferred
   ==========================================  ======================  ==========================

   The same cap applies to a stored entry through its ``source`` metadata: ``flagged`` keeps its
   evidence, a judged entry is credited observed at most (its note is gone; the judge's claim is
   all there is).

The candidate's recorded ``evidence`` is not changed: only its rank in the comparison is.
"""

from __future__ import annotations

from typing import Any

#: Rank of each evidence kind (user-stated > observed > inferred), as docs/design.md#evidence-and-confidence orders them.
EVIDENCE_RANK = {"inferred": 0, "observed-failure": 1, "observed-success": 1, "user-stated": 2}
CONFIDENCE_RANK = {"low": 0, "medium": 1, "high": 2}

#: Note ``metadata["source"]`` values that mean the user wrote the note.
USER_SOURCES = frozenset({"user", "transcript:user"})
#: Highest evidence rank credited to a judged note, by its ``metadata["source"]``.
_SOURCE_CAP = {"transcript:assistant": 0, "transcript:tool_error": 1}
_JUDGED_CAP = 1
_USER_CAP = 2


def note_sources(plan, candidate) -> list[str]:
    """The ``metadata["source"]`` of each note the candidate was made from (``""`` when unset)."""
    out = []
    for nid in candidate.note_ids:
        try:
            src = (plan.note(nid).metadata or {}).get("source")
        except KeyError:
            src = None
        out.append(src if isinstance(src, str) else "")
    return out


def evidence_cap(plan, candidate) -> int:
    """Highest evidence rank the candidate's origin supports (see the module table)."""
    if candidate.isolated:
        return 0
    sources = note_sources(plan, candidate)
    if sources and all(s in USER_SOURCES for s in sources):
        return _USER_CAP
    if candidate.source == "flagged":
        return _USER_CAP
    # several notes: the weakest origin counts
    return min((_SOURCE_CAP.get(s, _JUDGED_CAP) for s in sources), default=_JUDGED_CAP)


def credited_strength(plan, candidate) -> tuple[int, int]:
    """(evidence rank, confidence rank) of a candidate with its evidence claim capped by its origin."""
    rank = min(EVIDENCE_RANK.get(candidate.evidence or "", 0), evidence_cap(plan, candidate))
    return rank, CONFIDENCE_RANK.get(candidate.confidence or "", 0)


def entry_strength(meta: dict[str, Any]) -> tuple[int, int]:
    """(evidence rank, confidence rank) of a stored entry: a judged entry's evidence is credited
    observed at most; a flagged one keeps its own."""
    rank = EVIDENCE_RANK.get(meta.get("evidence") or "", 0)
    if str(meta.get("source") or "").startswith("judge:"):
        rank = min(rank, _JUDGED_CAP)
    return rank, CONFIDENCE_RANK.get(meta.get("confidence") or "", 0)


def may_overrule(candidate, target_status: str | None) -> str | None:
    """None when the candidate may supersede, reject or dispute an entry of ``target_status``;
    else why not (one short clause, for the event's reason)."""
    if candidate.isolated:
        return f"judged from a note worded as an instruction to the judge ({candidate.isolated})"
    if candidate.status == "quarantined" and (target_status or "active") != "quarantined":
        return "a quarantined candidate never supersedes, rejects or disputes an active entry"
    return None
