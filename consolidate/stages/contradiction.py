"""Stage 7, contradiction check (basic form; SPEC section 4.7).

Each durable keeper is compared with the existing same-type, same-scope memories (vector neighbours
from Chroma) and with the keepers of the same run:
- the same statement (equal after normalisation, or cosine similarity >= DUPLICATE_SIMILARITY) is a
  duplicate: the existing entry is re-confirmed (last_confirmed bumped, confidence one step up, a
  quarantined entry seen in another session promoted to active) and nothing new is written;
- a close but different neighbour (>= RELATED_SIMILARITY) is recorded as ``candidate.related`` for
  review (supersede and dispute resolution by a judge come with the write-policy work).
Two active entries with the same statement are never kept."""

from __future__ import annotations

import datetime as _dt

from ..memory_types import normalize
from ..plan import Reconfirmation, step_confidence

#: Cosine similarity at or above which two statements are the same memory. Chosen on MiniLM-L6-v2,
#: where paraphrases of one rule score 0.85-0.95 and rewrites of the same sentence score above 0.95.
DUPLICATE_SIMILARITY = 0.95
RELATED_SIMILARITY = 0.80
NEIGHBOURS = 5


def _cos(a, b) -> float:
    return float(sum(x * y for x, y in zip(a, b)))  # embeddings are L2-normalised


def run(plan, ctx):
    """Mark duplicates, add re-confirmations, compute embeddings of what will be indexed."""
    durable = [c for c in plan.candidates if c.pending and c.tier == "durable"]
    if not durable:
        return plan
    longterm = ctx.store.longterm()
    vectors = longterm.embed([c.statement for c in durable])
    today = _dt.datetime.fromtimestamp(ctx.now, _dt.timezone.utc).date().isoformat()
    kept = []
    for c, vec in zip(durable, vectors):
        c.embedding = list(vec)
        # 1. keepers of this run
        twin = next((k for k in kept if k.type == c.type and (normalize(k.statement) == normalize(c.statement)
                                                             or _cos(k.embedding, c.embedding) >= DUPLICATE_SIMILARITY)), None)
        if twin is not None:
            c.outcome, c.outcome_reason, c.duplicate_of = "duplicate", "same as another keeper of this run", None
            twin.note_ids = sorted(set(twin.note_ids) | set(c.note_ids))
            plan.decide("candidate.duplicate", note_ids=c.note_ids, reason=c.outcome_reason)
            continue
        # 2. the store
        match, related = None, []
        for hit in longterm.neighbours(c.embedding, type_=c.type, scope=plan.scope, k=NEIGHBOURS):
            same = normalize(hit["document"]) == normalize(c.statement) or hit["similarity"] >= DUPLICATE_SIMILARITY
            if same and match is None:
                match = hit
            elif hit["similarity"] >= RELATED_SIMILARITY:
                related.append(hit["id"])
        if match is not None:
            meta = match["metadata"]
            other_session = meta.get("session_id") != plan.session_id
            status = "active" if (meta.get("status") == "quarantined" and other_session) else meta.get("status", "active")
            confidence = step_confidence(meta.get("confidence", "low"), 1 if other_session else 0)
            if status == "active" and meta.get("status") == "quarantined" and confidence == "low":
                confidence = "medium"
            c.outcome, c.duplicate_of = "duplicate", match["id"]
            c.outcome_reason = f"re-confirms {match['id']} (similarity {match['similarity']:.3f})"
            plan.reconfirmations.append(Reconfirmation(
                memory_id=match["id"], confidence=confidence, last_confirmed=today, status=status,
                session_id=plan.session_id, note_ids=c.note_ids))
            plan.decide("memory.reconfirmed", note_ids=c.note_ids, reason=c.outcome_reason, memory_id=match["id"],
                        confidence=confidence, status=status)
            continue
        if related:
            plan.decide("candidate.related", note_ids=c.note_ids, reason="close to existing memories; kept both",
                        related=related)
        kept.append(c)
    return plan
