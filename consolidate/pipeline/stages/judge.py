"""Stage 5, judge: unflagged live notes go, in batches, to the judge chain.

Each note ends ``keep`` (a candidate carrying the judge's standalone rewrite, type, fields, evidence
and reason), ``drop``, or ``unjudged`` (no judge answered: the note waits in the session tier for a
judge until its bound, consolidate/pipeline/deferral.py; never written, never recorded as a judged drop). Every text a judge writes passes the secret gate again at the
start of the write policy stage."""

from __future__ import annotations

from consolidate.core.faults import crash_point
from consolidate.model import credit
from consolidate.model.plan import Candidate, inferred_confidence, initial_confidence
from consolidate.core.vocab import CONFIDENCE_LEVELS, EVIDENCE_KINDS
from consolidate.judges.base import Item, JudgeContext
from consolidate.pipeline.deferral import announce, defer
from consolidate.store.relations import parse as parse_relations


def run(plan, ctx):
    """Judge the maybes; add keep/drop/unjudged decisions and the keepers' candidates."""
    maybes = [n for n in plan.live_notes("live") if not n.flag]
    if not maybes:
        return plan

    chain = ctx.chain()
    items = [Item(key=n.id, content=n.content, section=n.metadata.get("section"), kind=n.kind) for n in maybes]
    context = JudgeContext(core=ctx.store.core_rules(), project=plan.scope)
    result = chain.run(items, context, deadline=plan.deadline)
    crash_point("judge")
    plan.judges_used = result.judges_used
    for event in result.events:
        plan.decide(event.pop("event"), **event)

    waiting = ctx.store.sessions.waiting(plan.session_id)
    for note in maybes:
        judged = result.judged.get(note.id)
        if judged is None:
            defer(plan, ctx, note.id, result.unjudged.get(note.id, []), waiting)
            continue
        v = judged.verdict
        source = f"judge:{judged.judge}:{judged.model}" if judged.model else f"judge:{judged.judge}"
        detail = {"judge": judged.judge, "model": judged.model, "prompt_version": judged.prompt_version,
                  "truncated_from": judged.truncated_from}
        if judged.isolated:
            detail["isolated"] = f"judged alone: {judged.isolated}"
        if v.verdict == "drop":
            plan.note_status[note.id] = "drop"
            plan.decide("note.judged_drop", note_ids=[note.id], reason=v.reason or "judged not memorable", **detail)
            continue
        plan.note_status[note.id] = "keep"
        evidence = v.evidence if v.evidence in EVIDENCE_KINDS else "inferred"
        # the confidence step of inferred evidence follows the evidence the note's origin credits, not
        # the claim: a harvested assistant turn the judge calls user-stated is inferred (model/credit.py)
        credited = credit.credited(evidence, source, credit.origin_of([_source_of(note)]))
        confidence = v.confidence if v.confidence in CONFIDENCE_LEVELS else initial_confidence(credited or evidence)
        confidence = inferred_confidence(credited or evidence, confidence)

        relations, dropped = parse_relations(v.relations)
        if dropped:
            detail["relations_dropped"] = dropped
        candidate = Candidate(
            note_ids=[note.id], statement=" ".join(v.statement.split()), type=(v.type or "").strip().lower() or "fact",
            source=source, evidence=evidence, confidence=confidence, reason=v.reason or "judged memorable",
            fields=dict(v.fields), entities=[e for e in v.entities if isinstance(e, str)][:20],
            relations=relations,
            provenance={"prompt_version": judged.prompt_version}, isolated=judged.isolated,
        )
        plan.decide("note.judged_keep", note_ids=[note.id], reason=candidate.reason, type=candidate.type, **detail)
        plan.candidates.append(candidate)
    announce(plan)
    return plan


def _source_of(note) -> str:
    """The note's ``metadata["source"]`` (``""`` unset: an agent's note)."""
    src = (getattr(note, "metadata", None) or {}).get("source")
    return src if isinstance(src, str) else ""
