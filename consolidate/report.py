"""Human-readable renderings: a memory with its suffix, a plan's decisions, a store's status."""

from __future__ import annotations

import json
import re

from .plan import Plan

#: C0/C1 control characters (tab and newline kept) and bidirectional overrides: printed escaped on a
#: terminal so a note cannot move the cursor, recolour the screen or reverse the text around it.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """``text`` with control characters and bidi overrides shown as ``\\xNN`` / ``\\uNNNN``."""
    return _UNSAFE.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def memory_json(hit: dict) -> dict:
    """A recall hit as JSON-ready data, with provenance and fields as objects, not strings."""
    meta = dict(hit["metadata"])
    for key in ("provenance", "fields"):
        try:
            meta[key] = json.loads(meta[key]) if isinstance(meta.get(key), str) else meta.get(key)
        except ValueError:
            pass
    return {"id": hit["id"], "statement": hit["document"], "similarity": round(hit["similarity"], 4), **meta}

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


def suffix(meta: dict) -> str:
    """``[high, user-stated, 2026-07]``: confidence, evidence, month last confirmed."""
    month = (meta.get("last_confirmed") or "")[:7]
    parts = [meta.get("confidence") or "?", meta.get("evidence") or "?"]
    if month:
        parts.append(month)
    return "[" + ", ".join(parts) + "]"


def render_memory(document: str, meta: dict) -> str:
    """One memory on one line: ``Use pnpm, not npm [high, user-stated, 2026-07]``, with
    ``[disputed]`` or ``[quarantined]`` after it where that applies, and ``[drifted: path]`` or
    ``[stale: path gone]`` for a memory whose anchored code changed or is gone (see
    :func:`consolidate.anchors.mark_hits`)."""
    status = meta.get("status")
    extra = f" [{status}]" if status in ("disputed", "quarantined") else ""
    if meta.get("drifted") or meta.get("stale"):  # set by consolidate.anchors.mark_hits
        from .anchors import drift_suffix

        extra += drift_suffix(meta)
    return f"{' '.join(document.split())} {suffix(meta)}{extra}"


def shorten(text: str, width: int = 90) -> str:
    """``text`` on one line, terminal-safe, cut to ``width`` characters with an ellipsis."""
    one = terminal_safe(" ".join(text.split()))
    return one if len(one) <= width else one[: width - 1] + "…"


def render_plan(plan: Plan, *, show_notes: bool = True, width: int = 90) -> str:
    """The decisions of a plan, one line per note decision, then the writes and a summary line."""
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
            out.append(f"    + {c.type:<10} {shorten(c.statement, width)} [{c.confidence}, {c.evidence}]"
                       f" ({c.status}; {c.source})")
    if audit:
        out.append("  recorded as transient (audit trail and notes.md only, never recalled):")
        for c in audit:
            out.append(f"    ~ {c.type:<10} {shorten(c.statement, width)} ({c.source})")
    return "\n".join(out)
