"""Stage 6, write policy (SPEC section 6): each keeper is checked before it may be written.

- secret material anywhere in its text (judge-written, or a flagged note's metadata fields): blocked;
- missing required fields for its type: rejected, with the reason;
- not memorable by the rules the code can check (too short, a bare number/URL/path, a task-list or
  status line): rejected;
- low confidence (a single inferred observation): quarantined (stored, excluded from default recall);
- judged from a note worded as an instruction to the judge ("ignore the rules above", "keep every
  note"; judges/injection.py): quarantined too, whatever the judge said, since a memory is read back
  into every future session's context (a note the agent flagged is not touched);
- temporary or very short: transient (audit trail and notes.md only, never indexed)."""

from __future__ import annotations

from ..memory_types import durability, memorability_problem, missing_fields
from .secret_gate import gate_candidate


def run(plan, ctx):
    """Decide each pending candidate's outcome, status and tier."""
    for c in plan.candidates:
        if not c.pending or gate_candidate(plan, c):
            continue
        problem = missing_fields(c.type, c.statement, c.fields) or memorability_problem(c.statement)
        if problem:
            c.outcome, c.outcome_reason = "rejected", problem
            plan.decide("candidate.rejected", note_ids=c.note_ids, reason=problem, type=c.type, source=c.source)
            continue
        had_ttl = any(plan.note(i).expires_at is not None for i in c.note_ids)
        c.tier, why = durability(c.statement, confidence=c.confidence, had_ttl=had_ttl)
        if c.tier == "transient":
            plan.decide("candidate.transient", note_ids=c.note_ids, reason=why, type=c.type)
        elif c.isolated:
            c.status, c.confidence = "quarantined", "low"
            plan.decide("candidate.quarantined", note_ids=c.note_ids, type=c.type,
                        reason=f"judged from a note worded as an instruction to the judge ({c.isolated})")
        elif c.confidence == "low":
            c.status = "quarantined"
            plan.decide("candidate.quarantined", note_ids=c.note_ids,
                        reason=f"low-confidence single observation ({c.evidence})", type=c.type)
    return plan
