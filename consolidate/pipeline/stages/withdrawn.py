"""Stage 9, withdrawn notes: a memory whose notes its notes file no longer holds is withdrawn.

For every notes file the session recorded (``plan.notes_files``, consolidate/model/notes_files.py), the
live memories of the project written from notes of that file (flat metadata ``notes_file``) are read
(an index lookup); one none of whose notes (``notes_file_keys``) the file holds any more is archived
with status ``expired`` (``memory.withdrawn``; ``consolidate undo`` of the run brings it back). A memory
this run writes, re-confirms or already changes is left to that decision; a memory this run
re-confirms from a note of the file gets the note's digest added, so the file keeps it while it
holds either note. Reads only; apply writes."""

from __future__ import annotations

from consolidate.core.vocab import LIVE_STATUSES
from consolidate.model.notes_files import note_digest, source_file_of
from consolidate.model.plan import MemoryUpdate


def run(plan, ctx):
    """Add an ``archive`` update for every memory withdrawn by the session's notes files, and a
    keys update for every memory re-confirmed from a note of one."""
    if not plan.notes_files or not ctx.store.has_longterm:
        return plan
    lt = ctx.store.longterm()
    decided = {c.memory_id for c in plan.writes()} | {u.memory_id for u in plan.updates}
    reconfirmed = {r.memory_id: r for r in plan.reconfirmations}
    for source_file, digests in sorted(plan.notes_files.items()):
        held = set(digests)
        for row in lt.from_notes_file(source_file, plan.scope, LIVE_STATUSES):
            mid, meta = row["id"], row["metadata"] or {}
            keys = set(str(meta.get("notes_file_keys") or "").split())
            if mid in reconfirmed:
                extra = _reconfirming_keys(plan, reconfirmed[mid], source_file) - keys
                if extra:
                    plan.updates.append(MemoryUpdate(mid, "update", {"notes_file_keys": " ".join(sorted(keys | extra))},
                                                     reason=f"re-confirmed from a note of {source_file}"))
                continue
            if mid in decided or not keys or keys & held:
                continue
            plan.updates.append(MemoryUpdate(
                mid, "archive", {"status": "expired", "withdrawn_in": plan.session_id}, event="memory.withdrawn",
                reason=f"its notes are no longer in {source_file} (session {plan.session_id})"))
            decided.add(mid)
    if plan.notes_files:
        plan.decide("notes_files.read", reason="notes files recorded by the session",
                    files=sorted(plan.notes_files), withdrawn=sum(u.event == "memory.withdrawn" for u in plan.updates))
    return plan


def _reconfirming_keys(plan, reconfirmation, source_file: str) -> set[str]:
    """The digests of the re-confirming notes that came from ``source_file``."""
    out = set()
    for nid in reconfirmation.note_ids:
        try:
            note = plan.note(nid)
        except KeyError:
            continue
        if source_file_of(note.metadata) == source_file:
            out.add(note_digest(note.content))
    return out
