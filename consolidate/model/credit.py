"""The evidence the store credits a memory with, as every surface shows it (issue 28, concern 1).

A judge's claim of evidence (a memory whose ``source`` is ``judge:...``) ranked above observed is
credited ``observed``: the contradiction stage ranks it so (consolidate/pipeline/stages/credibility.py)
and every surface shows it so, the agent view (consolidate/store/views/shown.py, which re-exports
these) and a run's report of what it wrote (consolidate/model/report.py) alike. The claim itself is
kept under ``claimed_evidence``. The records a run writes (``memory/notes.md``, the event log's
``memory.written`` lines) name the evidence so too (:func:`recorded`): ``evidence`` is the credited
one, ``claimed_evidence`` the claim when it differs; the stored evidence is read back from such a
record with :func:`claimed_in`. Light: consolidate.core.vocab only.
"""

from __future__ import annotations

from consolidate.core.vocab import EVIDENCE_KINDS, EVIDENCE_RANK, FAILURE, OBSERVED_FAILURE, OBSERVED_SUCCESS

#: The highest evidence rank credited to a stored entry whose evidence a judge claimed (its
#: ``source`` is ``judge:...``): observed (consolidate/pipeline/stages/credibility.py ranks it so).
JUDGED_MAX_RANK = 1
#: How a judge's claim above :data:`JUDGED_MAX_RANK` is shown: observed, success or failure unknown.
CREDITED_OBSERVED = "observed"


def claimed_by_judge(source: object) -> bool:
    """Whether a memory of ``source`` (its ``source`` metadata or a candidate's) has its evidence
    claimed by a judge (``judge:...``), not recorded with its notes (flagged, user, imported)."""
    return str(source or "").startswith("judge:")


def credited(evidence: str | None, source: object) -> str | None:
    """The evidence a memory of ``source`` whose evidence is ``evidence`` is credited with: its own,
    except a judge's claim ranked above :data:`JUDGED_MAX_RANK`, which is :data:`CREDITED_OBSERVED`."""
    if claimed_by_judge(source) and EVIDENCE_RANK.get(evidence or "", 0) > JUDGED_MAX_RANK:
        return CREDITED_OBSERVED
    return evidence


def recorded(evidence: str | None, source: object) -> dict[str, str | None]:
    """How a record of a memory (an event line, a notes.md entry) names its evidence: ``{"evidence":
    credited}``, plus ``"claimed_evidence"`` (the judge's claim, as stored) when they differ."""
    shown = credited(evidence, source)
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
