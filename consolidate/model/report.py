"""Human-readable renderings: a memory with its suffix, a plan's decisions, a store's status."""

from __future__ import annotations

import json

from consolidate.model.credit import credited
from consolidate.model.plan import Plan
from consolidate.model.run_lines import consolidated_line, count_line  # noqa: F401 - re-exported
from consolidate.model.memory_line import drift_suffix, marks, render_memory, suffix  # noqa: F401 - re-exported

def terminal_safe(text: str) -> str:
    """``text`` with control characters, bidi controls and tag characters shown as ``\\xNN`` /
    ``\\uNNNN`` / ``\\UNNNNNNNN``, so a note cannot move the cursor, recolour the screen, reverse the
    text around it or hide words from the person reading: the one escape of what is shown,
    consolidate.rules.guard.printable (every surface of the agent view writes them so too)."""
    from consolidate.rules.guard import printable  # noqa: PLC0415 - keeps this module's import light (rules.guard)

    return printable(text)


def memory_json(hit: dict) -> dict:
    """A recall hit as JSON-ready data, with provenance and fields as objects, not strings, and
    ``match`` (vector, lexical or both) when recall says how it found it."""
    meta = dict(hit["metadata"])
    for key in ("provenance", "fields"):
        try:
            meta[key] = json.loads(meta[key]) if isinstance(meta.get(key), str) else meta.get(key)
        except ValueError:
            pass
    out = {"id": hit["id"], "statement": hit["document"], "similarity": round(hit["similarity"], 4)}
    if hit.get("match"):  # how recall found it: vector, lexical or both (consolidate/pipeline/recall.py)
        out["match"] = hit["match"]
    if hit.get("via"):  # the relation that linked it (graph hits)
        out["via"] = hit["via"]
    return {**out, **meta}

_LABELS = {
    "note.purged": "expired (TTL)",
    "note.blocked": "BLOCKED (secret)",
    "note.flagged": "flagged",
    "note.judged_keep": "judged keep",
    "note.judged_drop": "judged drop",
    "note.unjudged": "unjudged: waits",
    "note.expired_unjudged": "EXPIRED unjudged",
    "candidate.rejected": "rejected by policy",
    "candidate.blocked": "BLOCKED (secret in judge text)",
    "candidate.transient": "transient (audit only)",
    "candidate.fields_missing": "kept, fields missing",
    "candidate.quarantined": "quarantined",
    "candidate.duplicate": "duplicate in run",
    "memory.reconfirmed": "re-confirmed existing",
    "candidate.related": "related to existing",
    "session.failed": "session failed",
}


def shorten(text: str, width: int = 90) -> str:
    """``text`` on one line, terminal-safe, cut to ``width`` characters with an ellipsis."""
    one = terminal_safe(" ".join(text.split()))
    return one if len(one) <= width else one[: width - 1] + "…"


def render_plan(plan: Plan, *, show_notes: bool = True, width: int = 90) -> str:
    """The decisions of a plan, one line per note decision, then the writes and a summary line. A
    write's evidence is shown as the store credits it (consolidate.model.credit.credited: a judge's
    claim of user-stated is observed), as every surface shows the memory."""
    out = [f"session {plan.session_id} ({plan.outcome}) · run {plan.run_id} · {plan.note_count} notes"]
    if plan.outcome == "aborted":
        out.append("  aborted: nothing promoted, nothing cleaned; resume the session with the same id")
        return "\n".join(out)
    contents = {n.id: n.content for n in plan.notes}
    for e in plan.events:
        label = _LABELS.get(e["event"])
        if label is None:
            if e["event"] == "judge.failed":
                out.append(f"  judge {e.get('judge')} failed ({e.get('kind')}): {shorten(e.get('reason', ''), width)}")
            elif e["event"] == "judge.reask":
                out.append(f"  judge {e.get('judge')} answered part of a batch: {e.get('batch_size')} notes asked again")
            continue
        why = e.get("reason", "")
        if e["event"] in ("note.judged_keep", "note.judged_drop") and e.get("judge"):
            why = f"{e['judge']}: {why}"
        if e["event"] == "note.unjudged" and e.get("judge_reasons"):
            why = f"until {e.get('waiting_until')}: " + "; ".join(e["judge_reasons"])
        if e["event"] in ("note.blocked", "candidate.blocked"):
            why = f"{', '.join(e.get('kinds', []))} {' '.join(e.get('previews', []))}"
        ids = e.get("note_ids") or []
        text = ""
        if show_notes and ids and e["event"] not in ("note.blocked", "candidate.blocked"):
            text = " " + shorten(contents.get(ids[0], ""), 60) if ids[0] in contents else ""
        which = f"#{ids[0]}" if len(ids) == 1 else (f"{len(ids)} notes" if ids else "")
        out.append(f"  {label:<22} {which:>6}{text}  ({shorten(why, width)})")
    writes = plan.writes()
    indexed = [c for c in writes if c.tier == "durable"]
    audit = [c for c in writes if c.tier != "durable"]
    if indexed:
        out.append("  graduated (recall index):")
        for c in indexed:
            out.append(f"    + {c.type:<10} {shorten(c.statement, width)} [{c.confidence}, {credited(c.evidence, c.source, c.provenance.get('origin'))}]"
                       f" ({c.status}; {c.source})")
    if audit:
        out.append("  recorded as transient (audit trail and notes.md only, never recalled):")
        for c in audit:
            out.append(f"    ~ {c.type:<10} {shorten(c.statement, width)} ({c.source})")
    return "\n".join(out)


def run_notices(summary: dict | None) -> list[str]:
    """What a run did that its count line does not show, one line each, from its summary
    (:func:`consolidate.model.plan.run_summary`, as the run, the queue row and the event log keep it):
    judge answers the chain ignored (verdicts for note ids not in the batch, second answers,
    invalid ones), disputed memories it wrote, and that it was finished after a crash. The one
    owner of these lines: ``run``, ``batch``, the worker's log, ``runs`` and ``status`` print them
    (MCP ``session_read`` returns the summary itself). ``[]`` for a run with none."""
    s = summary or {}
    out = []
    problems = s.get("judge_problems") or []
    if problems:
        more = s.get("judge_problems_total", len(problems)) - len(problems)
        out.append(f"judge answers ignored ({len(problems) + max(0, more)}): "
                   + "; ".join(shorten(p, 120) for p in problems[:5])
                   + (f"; and {len(problems) - 5 + max(0, more)} more (event log: judge.output_problems)"
                      if len(problems) + max(0, more) > 5 else ""))
    if s.get("written_disputed"):
        n = s["written_disputed"]
        out.append(f"{n} disputed {'memory' if n == 1 else 'memories'} written: contradicted by an existing memory"
                   " with equal evidence, both are recalled marked [disputed] until `consolidate resolve`"
                   " (`consolidate disputes` lists them)")
    if s.get("replayed"):
        out.append("finished after a crash: the run was interrupted, its journal replayed (nothing twice)")
    return out


def drain_notices(drained) -> list[str]:
    """What a drain of the queue did around its runs (:class:`consolidate.pipeline.run.Drained`), one
    line each: the interrupted runs it finished first (a crash left them in the journal) and a team
    push that failed (its writes wait in the outbox). ``run``, ``batch`` and the worker's log print
    these; ``[]`` when there is nothing to say."""
    out = []
    for r in getattr(drained, "replayed", None) or []:
        out.append(f"finished the interrupted run {r['run_id']} of session {r['session_id']}"
                   f" (a crash stopped it; its journal was replayed): {count_line(r.get('result'))}")
    push = getattr(drained, "team_push", None)
    if push and not push.get("ok", True):
        out.append(f"team: {shorten(push.get('error') or 'push failed', 300)}; `consolidate sync` retries"
                   " (the next run does too)")
    return out
