"""Forgetting a wrong memory: ``consolidate forget ID``, the MCP ``forget`` tool, :func:`forget`.

The memory is archived like any other removal (a journaled maintenance run: ``archive/<id>.json``
keeps the cold copy, the recall index and the graph drop it, ``consolidate undo RUN_ID`` restores
it) and a **tombstone** is laid in ``archive/forgotten.jsonl``: its statement, type, the run and the
reason. A later session that writes the same statement again (the same words after folding case,
punctuation and spacing, or a near-identical wording: difflib ratio >= ``SIMILAR``) does not bring
it back: the keeper is rejected at the provenance stage (:func:`check_resurrections`: consolidate/pipeline/stages/provenance.py), unless the
note was **flagged** or the judge found it **user-stated**, which writes it again (the user said it
anew). The tombstone is written before the index changes, so a crash cannot leave a forgotten memory
unprotected. ``memory/notes.md`` marks the memory's lines as forgotten.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.store.forgotten import append as _append
from consolidate.store.forgotten import forgotten_match, lift, tombstones  # noqa: F401 - forget's API: the statements it keeps
from consolidate.pipeline.maintenance import apply_updates, disputes, new_plan
from consolidate.model.plan import MemoryUpdate
from consolidate.rules.secrets import user_reason
from consolidate.store.views import context_md
from consolidate.store.views.notes_md import mark_statement

def forget(store, memory_id: str, reason: str | None = None, *, lock_timeout: float = 60.0,
           status: str = "forgotten", event: str = "memory.forgotten", label: str = "forget",
           extend=None) -> dict[str, Any]:
    """Forget ``memory_id`` (any status); returns ``{memory_id, statement, run_id, status, settled}``
    (``settled``: the entries it disputed with and no other, made active in the same run: the dispute
    ends with one side gone, and ``consolidate disputes`` would list them no more).

    ``status``, ``event`` and ``label`` name the archive status, the event and the maintenance run
    (``consolidate review --decline`` says ``declined``); ``extend(plan, row)`` may add decisions and
    updates to the same run before it is written (row: ``{"document", "metadata"}``).
    Raises BadInput for an unknown id (already forgotten or archived included)."""

    if not isinstance(memory_id, str) or not memory_id.strip():
        raise BadInput("no memory id: give the id shown by `consolidate recall --json` or the MCP recall tool")
    memory_id = memory_id.strip()
    store.require_writable()  # StoreReadOnly (one line) before the tombstone is attempted
    if not store.has_longterm:
        raise BadInput(f"unknown memory {memory_id!r}: the store has no memories yet")
    row = store.longterm().get([memory_id]).get(memory_id)
    if row is None:
        raise BadInput(f"unknown memory {memory_id!r}: not in the store (already forgotten or archived?)",
                       memory_id=memory_id)

    why = user_reason(reason, f"{status} by the user")
    plan = new_plan(store, label)
    plan.updates.append(MemoryUpdate(memory_id, "archive", {"status": status}, event=event, reason=why))
    settled = _settled(store, memory_id)
    for other in settled:
        plan.updates.append(MemoryUpdate(other, "update", {"status": "active"}, event="memory.dispute_resolved",
                                         reason=f"the entry it disputed with ({memory_id}) was {status}"))
    if extend is not None:
        extend(plan, row)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    _append(store, {"id": memory_id, "statement": row["document"], "type": row["metadata"].get("type"),
                    "run_id": plan.run_id, "reason": why, "forgotten_at": now})
    apply_updates(store, plan, lock_timeout)

    context_md.write(store, store.project, touched=[u.memory_id for u in plan.updates], run_id=plan.run_id)  # merged

    mark_statement(store, row["document"], f"{status} {now[:10]}: {why}")
    return {"memory_id": memory_id, "statement": row["document"], "run_id": plan.run_id, "status": status,
            "settled": settled}


def _settled(store, memory_id: str) -> list[str]:
    """The disputed entries whose only dispute is with ``memory_id``."""
    partners = {r["id"]: r["with"] for r in disputes(store)}
    return [o for o in partners.get(memory_id) or [] if set(partners.get(o) or ()) <= {memory_id}]
