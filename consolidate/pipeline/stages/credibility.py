"""Who may overrule whom in a contradiction, and how much a judge's evidence claim is worth.

Used by the contradiction stage (consolidate/pipeline/stages/contradiction.py) before it ranks two
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

   The same cap applies to a stored entry through its ``source`` and ``origin`` metadata (the
   provenance stage records the weakest origin of its notes, :func:`note_origin`, since its notes
   are gone; consolidate/model/credit.py holds the table, and every surface shows the evidence so):
   ``flagged`` keeps its evidence, a judged entry is credited as its origin supports (an entry
   without ``origin``, from an older store: observed at most).

The candidate's recorded ``evidence`` is not changed: only its rank in the comparison is.

3. **Which of two statements stands** (:func:`prevails`, the one rule for every path that lets one
   statement replace another: a session run, an AGENTS.md import, a teammate's imported block):
   stronger credited evidence wins, whatever the dates. Between statements of equal evidence the
   date each was last observed holding decides (``last_confirmed``, or the date an imported entry
   carries): the older one never wins (it neither supersedes nor rejects the newer); the newer one
   wins when its standing is equal, i.e. its evidence was recorded as the other's was (a note
   flagged or written by the user, an imported entry) or both are judges' claims; a judge's claim
   newer than a recorded statement only disputes it (a note planted in a session, credited
   observed, never takes out a flagged rule by being newer). Same day or dates unknown: the higher
   confidence, else neither (a dispute).
"""

from __future__ import annotations

from typing import Any

from consolidate.core.vocab import CONFIDENCE_RANK, EVIDENCE_RANK
from consolidate.model import credit
from consolidate.store.views.shown import judge_claimed

_USER_CAP = credit.ORIGIN_CAP[credit.USER]


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


def note_origin(plan, candidate) -> str | None:
    """The origin of the candidate's notes (consolidate.model.credit.origin_of: several notes, the
    weakest counts; None without notes), which the provenance stage records with the memory."""
    return credit.origin_of(note_sources(plan, candidate))


def evidence_cap(plan, candidate) -> int:
    """Highest evidence rank the candidate's origin supports (see the module table)."""
    if candidate.isolated:
        return 0
    origin = note_origin(plan, candidate)
    if origin == credit.USER or candidate.source == "flagged":
        return _USER_CAP
    return credit.cap(origin)


def credited_strength(plan, candidate) -> tuple[int, int]:
    """(evidence rank, confidence rank) of a candidate with its evidence claim capped by its origin."""
    rank = min(EVIDENCE_RANK.get(candidate.evidence or "", 0), evidence_cap(plan, candidate))
    return rank, CONFIDENCE_RANK.get(candidate.confidence or "", 0)


def entry_strength(meta: dict[str, Any]) -> tuple[int, int]:
    """(evidence rank, confidence rank) of a stored entry: a judged entry's evidence is credited as
    its ``origin`` supports (consolidate.model.credit.cap; none recorded: observed at most), as
    every surface shows it; a flagged one keeps its own."""
    rank = EVIDENCE_RANK.get(meta.get("evidence") or "", 0)
    if judge_claimed(meta) and not credit.approved(meta):  # an approval is the user's word
        rank = min(rank, credit.cap(meta.get("origin")))
    return rank, CONFIDENCE_RANK.get(meta.get("confidence") or "", 0)


def _day(value: Any) -> str | None:
    return value[:10] if isinstance(value, str) and len(value) >= 10 and value[:4].isdigit() else None


def recorded(plan, candidate) -> bool:
    """Whether the candidate's evidence was recorded with its notes (flagged, or every note written
    by the user: an imported entry is) rather than claimed by a judge."""
    return not candidate.isolated and evidence_cap(plan, candidate) == _USER_CAP


def entry_recorded(meta: dict[str, Any]) -> bool:
    """Whether a stored entry's evidence was recorded (not a judge's claim: ``source`` ``judge:...``),
    or stands as recorded: judged from notes the user wrote (``origin`` ``user``), as :func:`recorded`
    counts such a candidate."""
    return not judge_claimed(meta) or meta.get("origin") == credit.USER


#: One side of :func:`prevails`: ((evidence rank, confidence rank), ISO date last observed or None,
#: evidence recorded rather than claimed by a judge).
Standing = tuple[tuple[int, int], Any, bool]


def prevails(new: Standing, old: Standing, *, by_confidence: bool = True) -> str:
    """Which of two incompatible statements stands: ``"new"``, ``"old"`` or ``"tie"`` (the rule of
    the module docstring, point 3).

    Each side is a :data:`Standing`: its credited strength (:func:`credited_strength`,
    :func:`entry_strength`), the ISO date it was last observed holding (None or ``unknown``: no
    recency) and whether its evidence was recorded (:func:`recorded`, :func:`entry_recorded`).
    ``by_confidence=False`` leaves confidence out (an update replaces a statement of equal evidence
    whatever its confidence): a tie instead."""
    (new_ev, new_conf), (old_ev, old_conf) = new[0], old[0]
    if new_ev != old_ev:
        return "new" if new_ev > old_ev else "old"
    new_day, old_day = _day(new[1]), _day(old[1])
    if new_day and old_day and new_day != old_day:
        newer, older, side = (new, old, "new") if new_day > old_day else (old, new, "old")
        return side if newer[2] or not older[2] else "tie"  # never the older; the newer when of equal standing
    if by_confidence and new_conf != old_conf:
        return "new" if new_conf > old_conf else "old"
    return "tie"


def may_overrule(candidate, target_status: str | None) -> str | None:
    """None when the candidate may supersede, reject or dispute an entry of ``target_status``;
    else why not (one short clause, for the event's reason)."""
    if candidate.isolated:
        return f"judged from a note worded as an instruction to the judge ({candidate.isolated})"
    if candidate.status == "quarantined" and (target_status or "active") != "quarantined":
        return "a quarantined candidate never supersedes, rejects or disputes an active entry"
    return None
