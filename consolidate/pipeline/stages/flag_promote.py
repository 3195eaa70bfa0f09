"""Stage 4, flag-promote: flagged rows become keepers without a judge.

Certainty recorded at write time survives a judge outage. A flagged note's statement is its content;
its type is its ``kind``, or when it has none a type inferred from its wording
(:func:`consolidate.rules.memory_types.infer_type`, recorded as ``type_inferred`` in its provenance); its evidence is the note's ``evidence`` metadata when
valid, else a default by type (``_DEFAULT_EVIDENCE``). It still passes every
write policy, which never demotes it for its wording (stages/write_policy.py)."""

from __future__ import annotations

from consolidate.rules.memory_types import TYPES, fields_from_text, infer_type
from consolidate.model.plan import Candidate, initial_confidence
from consolidate.core.vocab import EVIDENCE_KINDS, FAILURE, OBSERVED_FAILURE, PREFERENCE, USER_STATED


#: Evidence of a flagged note without ``evidence`` metadata: a preference is the user's word, a
#: failure was observed failing, anything else was observed holding when the agent flagged it.
_DEFAULT_EVIDENCE = {PREFERENCE: USER_STATED, FAILURE: OBSERVED_FAILURE}


def run(plan, ctx):
    """Turn every live flagged note into a candidate with source ``flagged``."""
    for note in plan.live_notes("live"):
        if not note.flag:
            continue
        text = " ".join(note.content.split())
        provenance = {}
        if note.kind in TYPES:
            type_ = note.kind
        else:
            type_, why = infer_type(note.content)
            provenance["type_inferred"] = why
        evidence = note.metadata.get("evidence")
        if evidence not in EVIDENCE_KINDS:
            evidence = _DEFAULT_EVIDENCE.get(type_, "observed-success")
        plan.note_status[note.id] = "flagged"
        plan.candidates.append(Candidate(
            note_ids=[note.id], statement=text, type=type_, source="flagged", evidence=evidence,
            confidence=initial_confidence(evidence), reason="flagged by the agent when written",
            fields=fields_from_text(type_, note.content, note.metadata),
            entities=[], provenance=provenance,
        ))
        plan.decide("note.flagged", note_ids=[note.id], reason="flagged: promoted without a judge", type=type_,
                    type_inferred=provenance.get("type_inferred"))
    return plan
