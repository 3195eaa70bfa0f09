"""Forgetting a wrong memory: ``consolidate forget ID``, the MCP ``forget`` tool, :func:`forget`.

The memory is archived like any other removal (a journaled maintenance run: ``archive/<id>.json``
keeps the cold copy, the recall index and the graph drop it, ``consolidate undo RUN_ID`` restores
it) and a **tombstone** is laid in ``archive/forgotten.jsonl``: its statement, type, the run and the
reason. A later session that writes the same statement again (the same words after folding case,
punctuation and spacing, or a near-identical wording: difflib ratio >= ``SIMILAR``) does not bring
it back: the keeper is rejected at the provenance stage (:func:`check_resurrections`), unless the
note was **flagged** or the judge found it **user-stated**, which writes it again (the user said it
anew). The tombstone is written before the index changes, so a crash cannot leave a forgotten memory
unprotected. ``memory/notes.md`` marks the memory's lines as forgotten.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.rules.memory_types import normalize
from consolidate.store.layout import FORGOTTEN

#: Two statements this similar (difflib ratio over the folded text) are the same statement.
SIMILAR = 0.9
#: Evidence or source that may bring a forgotten statement back.
OVERRIDE_EVIDENCE = ("user-stated",)
OVERRIDE_SOURCE = ("flagged",)


def _path(store):
    return store.sub(FORGOTTEN)


def tombstones(store) -> list[dict[str, Any]]:
    """The forgotten statements: ``[{id, statement, type, run_id, reason, forgotten_at}]``."""
    from consolidate.core.jsonl import read_lines

    return [row for row in read_lines(_path(store)) if isinstance(row.get("statement"), str)]  # torn lines skipped


def forgotten_match(store, statement: str, rows: list[dict] | None = None) -> dict[str, Any] | None:
    """The tombstone whose statement is ``statement`` (see the module docstring), or None."""
    rows = tombstones(store) if rows is None else rows
    folded = normalize(statement)
    for row in rows:
        other = normalize(row["statement"])
        if other == folded or difflib.SequenceMatcher(None, other, folded).ratio() >= SIMILAR:
            return row
    return None


def forget(store, memory_id: str, reason: str | None = None, *, lock_timeout: float = 60.0,
           status: str = "forgotten", event: str = "memory.forgotten", label: str = "forget",
           extend=None) -> dict[str, Any]:
    """Forget ``memory_id`` (any status); returns ``{memory_id, statement, run_id, status}``.

    ``status``, ``event`` and ``label`` name the archive status, the event and the maintenance run
    (``consolidate review --decline`` says ``declined``); ``extend(plan, row)`` may add decisions and
    updates to the same run before it is written (row: ``{"document", "metadata"}``).
    Raises BadInput for an unknown id (already forgotten or archived included)."""
    from consolidate.pipeline.maintenance import apply_updates, new_plan
    from consolidate.model.plan import MemoryUpdate

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
    from consolidate.rules.secrets import user_reason

    why = user_reason(reason, f"{status} by the user")
    plan = new_plan(store, label)
    plan.updates.append(MemoryUpdate(memory_id, "archive", {"status": status}, event=event, reason=why))
    if extend is not None:
        extend(plan, row)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    _append(store, {"id": memory_id, "statement": row["document"], "type": row["metadata"].get("type"),
                    "run_id": plan.run_id, "reason": why, "forgotten_at": now})
    apply_updates(store, plan, lock_timeout)
    from consolidate.store.views import context_md

    context_md.write(store, store.project, touched=[u.memory_id for u in plan.updates], run_id=plan.run_id)  # merged
    from consolidate.store.views.notes_md import mark_statement

    mark_statement(store, row["document"], f"{status} {now[:10]}: {why}")
    return {"memory_id": memory_id, "statement": row["document"], "run_id": plan.run_id, "status": status}


def _append(store, row: dict[str, Any]) -> None:
    from consolidate.core.jsonl import append_lines

    append_lines(_path(store), [json.dumps(row, ensure_ascii=False) + "\n"])


def lift(store, run_id: str | None = None, ids: set[str] | None = None) -> int:
    """Remove the tombstones laid by ``run_id`` (``consolidate undo`` of a forget), or those of the
    memory ids ``ids`` (a forget undone on another machine of the team); returns how many."""
    from consolidate.core.jsonl import drop_lines

    return drop_lines(_path(store), lambda row: (run_id is not None and row.get("run_id") == run_id)
                      or bool(ids and row.get("id") in ids))


def check_resurrections(plan, store) -> None:
    """Reject every keeper of ``plan`` that states a forgotten memory again, unless flagged or
    user-stated (then it is written, and the event says it was restated). Called by the
    provenance stage before ids are stamped."""
    rows = tombstones(store)
    if not rows:
        return
    for c in plan.writes():
        hit = forgotten_match(store, c.statement, rows)
        if hit is None:
            continue
        if c.evidence in OVERRIDE_EVIDENCE or c.source in OVERRIDE_SOURCE:
            plan.decide("memory.restated", note_ids=c.note_ids, memory_id=hit.get("id"),
                        reason=f"states a forgotten memory again, {'flagged' if c.source == 'flagged' else 'user-stated'}:"
                               " written again")
            continue
        c.outcome = "rejected"
        c.outcome_reason = (f"forgotten by the user ({hit.get('id')}, {str(hit.get('forgotten_at', ''))[:10]}):"
                            " not brought back unless the user states it again or the note is flagged")
        plan.decide("candidate.rejected", note_ids=c.note_ids, reason=c.outcome_reason, memory_id=hit.get("id"),
                    forgotten=True)
