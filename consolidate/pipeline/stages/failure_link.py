"""For a failed session: entries linked to the failure lose one confidence step (docs/design.md#evidence-and-confidence).

A note links to an entry explicitly (metadata ``memory_id``, e.g. the agent followed that memory and
it failed) or by restating it (:func:`same_memory` with an active entry). Nothing is
promoted from a failed session; this only weakens what it contradicts in practice."""

from __future__ import annotations

from consolidate.model.plan import MemoryUpdate, step_confidence
from consolidate.pipeline.stages.contradiction import same_memory
from consolidate.rules import secrets


def run(plan, ctx):
    """Add a ``memory.weakened`` update per linked active entry."""
    if not ctx.store.has_longterm:
        return plan  # no long-term tier: nothing to weaken
    notes = ctx.store.sessions.notes(plan.session_id)
    lt = ctx.store.longterm()
    linked: dict[str, list[int]] = {}
    for n in notes:
        for mid in [n.metadata.get("memory_id"), *(n.metadata.get("memory_ids") or [])]:
            if isinstance(mid, str) and mid:
                linked.setdefault(mid, []).append(n.id)

    clean = [n for n in notes if not secrets.scan(n.content)]  # a secret never goes to the embedder either
    for n, vec in zip(clean, lt.embed([n.content for n in clean])):
        for hit in lt.neighbours(vec, scope=plan.scope, k=1, statuses=("active",)):
            if same_memory(hit["document"], n.content, hit["similarity"], lt.embed):
                linked.setdefault(hit["id"], []).append(n.id)
    current = lt.get(sorted(linked))
    for mid, note_ids in linked.items():
        meta = (current.get(mid) or {}).get("metadata")
        if not meta:
            continue
        plan.updates.append(MemoryUpdate(mid, "update", {"confidence": step_confidence(meta.get("confidence", "low"), -1)},
                                         event="memory.weakened",
                                         reason=f"linked to failed session {plan.session_id} (notes {note_ids})"))
    return plan
