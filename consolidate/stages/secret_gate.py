"""Stage 3, secret gate: a row holding secret material is blocked before any judge sees it.

It is never sent to a judge and never stored; the event keeps only redacted previews (first 3
characters + "…" + last character). The same check runs again on every text a judge writes
(:func:`gate_candidate`, called by the judge stage)."""

from __future__ import annotations

from .. import secrets


def run(plan, ctx):
    """Mark every live note that holds a secret ``blocked``."""
    for note in plan.live_notes("live"):
        findings = secrets.scan(note.content)
        if findings:
            plan.note_status[note.id] = "blocked"
            plan.decide("note.blocked", note_ids=[note.id], reason="secret material",
                        kinds=sorted({f.kind for f in findings}), previews=[f.preview for f in findings][:5])
    return plan


def gate_candidate(plan, candidate) -> bool:
    """Scan a judge-written candidate's statement and fields; on a secret, take it out of the write
    set with an event and return True."""
    texts = [candidate.statement, *candidate.fields.values(), *candidate.entities]
    findings = [f for t in texts for f in secrets.scan(t)]
    if not findings:
        return False
    candidate.outcome = "rejected"
    candidate.outcome_reason = "secret material in the judge's text"
    candidate.statement = secrets.redact(candidate.statement)
    candidate.fields = {k: secrets.redact(v) for k, v in candidate.fields.items()}
    plan.decide("candidate.blocked", note_ids=candidate.note_ids, reason=candidate.outcome_reason,
                kinds=sorted({f.kind for f in findings}), previews=[f.preview for f in findings][:5])
    return True
