"""The evidence the store credits a memory with, as every surface shows it (issue 28, concern 1).

A judge's claim of evidence (a memory whose ``source`` is ``judge:...``) ranked above observed is
credited ``observed``: the contradiction stage ranks it so (consolidate/pipeline/stages/credibility.py)
and every surface shows it so, the agent view (consolidate/store/views/shown.py, which re-exports
these) and a run's report of what it wrote (consolidate/model/report.py) alike. The claim itself is
kept under ``claimed_evidence``. The records a run writes (``memory/notes.md``, the event log's
``memory.written`` lines) name the evidence so too (:func:`recorded`): ``evidence`` is the credited
one, ``claimed_evidence`` the claim when it differs; the stored evidence is read back from such a
record with :func:`claimed_in`. Light: consolidate.core.vocab only.

A judge's claim is capped by where its notes came from (issue 28, concern 1): the provenance stage
records that as the memory's ``origin`` (:func:`origin_of`, the weakest origin of its notes, weakest
first: :data:`ORIGINS`), in the record's flat metadata and its ``memory.written`` event, and every
caller passes it (a memory's ``origin`` metadata, a stamped candidate's ``provenance["origin"]``):
a note the user wrote (``user``) credits the claim up to user-stated, one harvested from an assistant
turn inferred at most, a tool error harvested from a transcript observed-failure at most, an agent's
judged note (and a memory without ``origin``: an older store) observed at most. The contradiction
stage ranks by the same table (:func:`cap`; consolidate/pipeline/stages/credibility.py).
"""

from __future__ import annotations

from consolidate.core.vocab import EVIDENCE_KINDS, EVIDENCE_RANK, FAILURE, INFERRED, OBSERVED_FAILURE, OBSERVED_SUCCESS

#: The highest evidence rank credited to a stored entry whose evidence a judge claimed (its
#: ``source`` is ``judge:...``): observed (consolidate/pipeline/stages/credibility.py ranks it so).
JUDGED_MAX_RANK = 1
#: How a judge's claim above :data:`JUDGED_MAX_RANK` is shown: observed, success or failure unknown.
CREDITED_OBSERVED = "observed"


#: The origins of a memory's notes, weakest first: harvested from an assistant turn, a tool error
#: harvested from a transcript, an agent's note judged, written by the user.
ASSISTANT, TOOL_ERROR, AGENT_JUDGED, USER = "transcript:assistant", "transcript:tool_error", "agent-judged", "user"
ORIGINS = (ASSISTANT, TOOL_ERROR, AGENT_JUDGED, USER)
#: Note ``metadata["source"]`` values that mean the user wrote the note.
USER_SOURCES = frozenset({"user", "transcript:user"})
#: The highest evidence rank credited to a judge's claim about notes of each origin.
ORIGIN_CAP = {ASSISTANT: EVIDENCE_RANK[INFERRED], TOOL_ERROR: EVIDENCE_RANK[OBSERVED_FAILURE],
              AGENT_JUDGED: JUDGED_MAX_RANK, USER: EVIDENCE_RANK["user-stated"]}


def origin_of(sources: list[str]) -> str | None:
    """The origin of a memory made from notes whose ``metadata["source"]`` are ``sources`` (``""``
    unset): the weakest of theirs (:data:`ORIGINS`; a note of any other source is an agent's note,
    judged), None without notes."""
    if not sources:
        return None
    return min((USER if s in USER_SOURCES else s if s in (ASSISTANT, TOOL_ERROR) else AGENT_JUDGED for s in sources),
               key=ORIGINS.index)


def cap(origin: object) -> int:
    """The highest evidence rank credited to a judge's claim about notes of ``origin`` (a memory's
    ``origin``; None or unknown: :data:`JUDGED_MAX_RANK`, as before origins were recorded)."""
    return ORIGIN_CAP.get(origin if isinstance(origin, str) else "", JUDGED_MAX_RANK)


def claimed_by_judge(source: object) -> bool:
    """Whether a memory of ``source`` (its ``source`` metadata or a candidate's) has its evidence
    claimed by a judge (``judge:...``), not recorded with its notes (flagged, user, imported)."""
    return str(source or "").startswith("judge:")


def credited(evidence: str | None, source: object, origin: object) -> str | None:
    """The evidence a memory of ``source`` whose evidence is ``evidence`` and whose notes are of
    ``origin`` (:func:`origin_of`; None: not recorded) is credited with: its own, except a judge's
    claim ranked above what its origin supports (:func:`cap`), which is shown as the highest kind
    supported: inferred (an assistant turn), observed-failure (a tool error), else
    :data:`CREDITED_OBSERVED`."""
    limit = cap(origin)
    if not claimed_by_judge(source) or EVIDENCE_RANK.get(evidence or "", 0) <= limit:
        return evidence
    if limit <= EVIDENCE_RANK[INFERRED]:
        return INFERRED
    return OBSERVED_FAILURE if origin == TOOL_ERROR else CREDITED_OBSERVED


def recorded(evidence: str | None, source: object, origin: object) -> dict[str, str | None]:
    """How a record of a memory (an event line, a notes.md entry) names its evidence: ``{"evidence":
    credited}``, plus ``"claimed_evidence"`` (the judge's claim, as stored) when they differ."""
    shown = credited(evidence, source, origin)
    return {"evidence": shown} if shown == evidence else {"evidence": shown, "claimed_evidence": evidence}


def claimed_in(record: dict) -> str | None:
    """The evidence as stored (the claim) of a record :func:`recorded` named: its
    ``claimed_evidence``, else its ``evidence`` (a record that credits it as claimed, or an older one)."""
    return record.get("claimed_evidence") or record.get("evidence")


def said(evidence: object) -> str | None:
    """``evidence`` when it names an evidence kind or :data:`CREDITED_OBSERVED` (what an export's
    marker or suffix may say), else None."""
    return evidence if isinstance(evidence, str) and (evidence in EVIDENCE_KINDS or evidence == CREDITED_OBSERVED) else None


def imported(evidence: str, claimed: object, type_: str) -> str:
    """The evidence an import records for an exported entry of type ``type_`` whose marker (or
    suffix) says ``evidence`` (:func:`said`): no more than its exporter credited, so a judge's
    claim (the marker names it: ``claimed``) is taken at most as observed, whatever ``evidence``
    says; observed (success or failure unknown) is recorded as the observed kind of its type
    (``observed-failure`` for a failure, else ``observed-success``), the same rank."""
    if claimed and EVIDENCE_RANK.get(evidence, 0) > JUDGED_MAX_RANK:
        evidence = CREDITED_OBSERVED
    if evidence == CREDITED_OBSERVED:
        return OBSERVED_FAILURE if type_ == FAILURE else OBSERVED_SUCCESS
    return evidence


#: How ``consolidate review --approve`` marks a memory (``reviewed``: "approved <date>",
#: consolidate/pipeline/review.py); :func:`approved` reads it.
APPROVED = "approved"


def approved(meta: dict) -> bool:
    """Whether the user approved the memory of metadata ``meta`` in review (its ``reviewed`` mark)."""
    return str(meta.get("reviewed") or "").startswith(APPROVED)


def credited_entry(meta: dict) -> str | None:
    """The evidence a stored entry of metadata ``meta`` is credited with: :func:`credited`, except that
    an entry the user approved in review (:func:`approved`; the approval sets its evidence user-stated,
    consolidate/pipeline/review.py) is credited its evidence whatever judge wrote it: the user vouched
    for it (a fresh tester: an approved memory was shown ``observed``)."""
    if approved(meta):
        return meta.get("evidence")
    return credited(meta.get("evidence"), meta.get("source"), meta.get("origin"))
