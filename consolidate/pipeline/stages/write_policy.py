"""Stage 6, write policy (docs/design.md#write-policy): each keeper is checked before it may be written.

- secret material anywhere in its text (judge-written, or a flagged note's metadata fields): blocked;
- missing required fields for its type: rejected, with the reason;
- not memorable by the rules the code can check (too short, a bare number/URL/path, a task-list or
  status line): rejected;
- a judge's rewrite that adds a specific found in no note (a path, file name, URL, number or version,
  backticked identifier, CamelCase/snake_case name, ``--flag``; in the statement or the judge's
  fields: consolidate/rules/faithful.py): quarantined for review, reason ``statement adds '<x>' found
  in no note`` (nothing is lost; a flagged note, the agent's own words, is not checked);
- low confidence (a single inferred observation): quarantined (stored, excluded from default recall);
- judged from a note worded as an instruction to the judge ("ignore the rules above", "keep every
  note"; judges/injection.py): quarantined too, whatever the judge said, since a memory is read back
  into every future session's context (a note the agent flagged is not touched);
- judged from notes with external content (a fetched web page, another MCP server's tool;
  stages/external.py): quarantined until another session confirms it or a flag;
- temporary or very short: transient (audit trail and notes.md only, never indexed); a time word
  alone ("today", "this session") never is (memory_types.durability).

A flagged note (the agent said "keep this" when it wrote it, and was told then what this policy
would say: note_policy.py) is never demoted by a wording rule: no trivia, length or temporary-wording
rule applies to it, and one that lacks a required field is written with the fields that could be
filled and ``fields_missing`` recorded (event ``candidate.fields_missing``), not rejected. A secret
still blocks it, a TTL still makes it transient, and ``inferred`` evidence still quarantines it."""

from __future__ import annotations

from consolidate.rules.memory_types import durability, memorability_problem, missing_fields, required_missing
from consolidate.pipeline.stages import external
from consolidate.pipeline.stages.secret_gate import gate_candidate
from consolidate.rules.memory_types import fields_from_text
from consolidate.rules import faithful


def run(plan, ctx):
    """Decide each pending candidate's outcome, status and tier."""
    for c in plan.candidates:
        if not c.pending or gate_candidate(plan, c):
            continue
        flagged = c.source == "flagged"
        if flagged:
            record_fields_missing(plan, c)
            problem = None
        else:
            fill_judged_fields(plan, c)
            problem = missing_fields(c.type, c.statement, c.fields) or memorability_problem(c.statement)
        if problem:
            c.outcome, c.outcome_reason = "rejected", problem
            plan.decide("candidate.rejected", note_ids=c.note_ids, reason=problem, type=c.type, source=c.source)
            continue
        had_ttl = any(plan.note(i).expires_at is not None for i in c.note_ids)
        c.tier, why = durability(c.statement, confidence=c.confidence, had_ttl=had_ttl, flagged=flagged)
        if c.tier == "transient":
            plan.decide("candidate.transient", note_ids=c.note_ids, reason=why, type=c.type)
        elif c.isolated:
            c.status, c.confidence = "quarantined", "low"
            plan.decide("candidate.quarantined", note_ids=c.note_ids, type=c.type,
                        reason=f"judged from a note worded as an instruction to the judge ({c.isolated})")
        elif faithfulness_hold(plan, c):
            pass
        elif c.confidence == "low":
            c.status = "quarantined"
            plan.decide("candidate.quarantined", note_ids=c.note_ids,
                        reason=f"low-confidence single observation ({c.evidence})", type=c.type)
        else:
            external.hold(plan, c)  # content from outside the project waits for a confirmation
    return plan


#: Field names a judge may use for a required field (lower case): the field they stand for.
FIELD_ALIASES = {"rationale": "reason", "why": "reason", "because": "reason", "justification": "reason",
                 "root_cause": "cause", "root cause": "cause", "error": "symptom", "problem": "symptom",
                 "cmd": "command", "commands": "command", "where": "context", "holder": "who", "owner": "who"}


def fill_judged_fields(plan, c) -> None:
    """A judged keep's required fields that the judge left out of ``fields`` but gave under another
    name (:data:`FIELD_ALIASES`: ``rationale`` for ``reason``) or in its wording: the statement, then
    its notes' text ("X because Y" and the other reason and cause words of
    :func:`~consolidate.rules.memory_types.fields_from_text`, in every language it reads) fill
    ``c.fields``, so that a decision saying why is not rejected for a missing reason. ``who`` is never
    guessed (a judged preference names who holds it)."""

    fields = {k: v for k, v in c.fields.items() if str(v or "").strip()}
    for key, value in c.fields.items():
        alias = FIELD_ALIASES.get(str(key).strip().lower())
        if alias and str(value or "").strip() and not fields.get(alias):
            fields[alias] = value
    ids = set(c.note_ids)
    texts = [c.statement] + [n.content for n in plan.notes if n.id in ids]
    for name in required_missing(c.type, fields):
        if name == "who":
            continue
        for text in texts:
            found = str(fields_from_text(c.type, text).get(name) or "").strip()
            if found:
                fields[name] = found
                break
    c.fields = fields


def record_fields_missing(plan, c) -> None:
    """A flagged keeper lacking required fields of its type: record their names in
    ``c.provenance["fields_missing"]`` (stored as the ``fields_missing`` metadata) and decide
    ``candidate.fields_missing``; the keeper is still written."""
    missing = required_missing(c.type, c.fields)
    if missing:
        c.provenance["fields_missing"] = missing
        plan.decide("candidate.fields_missing", note_ids=c.note_ids, type=c.type, fields_missing=missing,
                    reason=f"flagged {c.type} stored without {', '.join(missing)} (a flag is never demoted by wording)")


def faithfulness_hold(plan, c) -> bool:
    """Quarantine a judged keeper whose statement or fields add a specific that none of the texts
    the judge saw holds (consolidate.rules.faithful.unfaithful: the candidate's notes and the other
    notes of their session, with sections and kinds, and the project's name); True when it did. The
    specifics go to ``c.provenance["unfaithful"]`` (so a later session's re-confirmation does not
    promote it on its own: stages/contradiction.py) and the decision ``candidate.quarantined`` says
    ``statement adds '<x>' found in no note``. A flagged keeper is the agent's own text: never held."""
    if c.source == "flagged":
        return False
    added = faithful.unfaithful(c.statement, source_texts(plan, c), c.fields)
    if not added:
        return False
    c.status = "quarantined"
    c.provenance["unfaithful"] = added
    plan.decide("candidate.quarantined", note_ids=c.note_ids, type=c.type, unfaithful=added,
                reason=faithful.reason(added))
    return True


def source_texts(plan, c) -> list[str]:
    """The texts a judge saw for the keeper ``c``: its notes first, then the other notes of their
    sessions (content, section, kind), and the project's name (``plan.scope``)."""
    ids = set(c.note_ids)
    own = [n for n in plan.notes if n.id in ids]
    sessions = {n.session_id for n in own}
    notes = own + [n for n in plan.notes if n.id not in ids and n.session_id in sessions]
    texts = [str(plan.scope or "")]
    for n in notes:
        texts += [n.content, str(n.metadata.get("section") or ""), n.kind or ""]
    return texts
