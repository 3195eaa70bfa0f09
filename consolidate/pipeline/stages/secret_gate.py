"""Stage 3, secret gate: a row holding secret material is blocked before any judge sees it.

It is never sent to a judge and never stored; the event keeps only redacted previews (kind and
length; for 16+ characters at most the first eighth: ``consolidate.rules.secrets.redact_preview``), and the plan keeps only the redacted text (so the journal and
``run --dry-run --json`` hold no secret either). The same check runs again on every candidate before
the write policy (:func:`gate_candidate`: judge-written text, flagged notes' fields taken from
metadata) and, as a last net, on every event line (consolidate.rules.redaction ``redact_value``)."""

from __future__ import annotations

from consolidate.rules import persisted, secrets
from consolidate.rules.redaction import redact_value
from consolidate.rules.private_spans import strip_plan
from consolidate.store.sessions.write_gate import REDACTED_KEY


def run(plan, ctx):
    """Mark every live note that holds a secret ``blocked`` (and every note the gate redacted when it
    was written: :func:`redacted_at_write`). First the private spans of every note are replaced
    (consolidate/rules/private_spans.py): nothing past the session tier sees them."""

    strip_plan(plan)
    for note in plan.live_notes("live"):
        if redacted_at_write(plan, note):
            continue
        findings = secrets.scan(note.content)
        # a metadata value is read with its field's name (a bare 40-hex ``commit`` is no key) and in NFC
        meta_findings = [f for k, v in note.metadata.items() if isinstance(v, str)
                         for f in persisted.findings(v, key=k if isinstance(k, str) else None)]
        if findings or meta_findings:
            findings = findings + meta_findings
            plan.note_status[note.id] = "blocked"
            note.content = secrets.redact(note.content)
            note.metadata = redact_value(note.metadata)
            plan.decide("note.blocked", note_ids=[note.id], reason="secret material",
                        kinds=sorted({f.kind for f in findings}), previews=[f.preview for f in findings][:5])
    return plan


def redacted_at_write(plan, note) -> bool:
    """A note the secret gate redacted when it was written (consolidate/store/sessions/tier.py,
    ``secret_gate_at_write``) is blocked as it would have been here: its text was a secret's
    carrier, and what is left of it is not a memory. True when it blocked the note."""

    redaction = note.metadata.get(REDACTED_KEY)
    if not isinstance(redaction, dict):
        return False
    plan.note_status[note.id] = "blocked"
    plan.decide("note.blocked", note_ids=[note.id], reason="secret material (stored redacted when written)",
                kinds=list(redaction.get("kinds") or []), previews=list(redaction.get("previews") or [])[:5])
    return True


def gate_candidate(plan, candidate) -> bool:
    """Scan a candidate's statement, fields, entities, relations and reason; on a secret, take it out of the
    write set with an event and return True."""
    texts = [candidate.statement, *candidate.fields.values(), *candidate.entities, candidate.reason,
             *(name for r in getattr(candidate, "relations", []) for name in (r[0], r[2]))]
    findings = [f for t in texts for f in secrets.scan(t)]
    if not findings:
        return False
    candidate.outcome = "rejected"
    candidate.outcome_reason = "secret material in the candidate's text"
    candidate.statement = secrets.redact(candidate.statement)
    candidate.fields = {k: secrets.redact(v) for k, v in candidate.fields.items()}
    candidate.entities = [secrets.redact(e) for e in candidate.entities]
    candidate.relations = []
    candidate.reason = secrets.redact(candidate.reason)
    plan.decide("candidate.blocked", note_ids=candidate.note_ids, reason=candidate.outcome_reason,
                kinds=sorted({f.kind for f in findings}), previews=[f.preview for f in findings][:5])
    return True
