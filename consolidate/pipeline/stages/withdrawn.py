"""Stage 9, withdrawn notes: a memory whose notes its notes file no longer holds is withdrawn.

A memory written from notes of one notes file carries the file and its notes' digests (flat metadata
``notes_file``, ``notes_file_keys``; consolidate/model/notes_files.py). This stage, reading only:

- a memory this run re-confirms follows the note that said it again: a note of its file adds its
  digest; a note of another file moves it to that file; a note of no file (``consolidate note``, a
  hook's harvest) frees it from files (never withdrawn by one again);
- for every notes file the session recorded (``plan.notes_files``), a live memory of the project
  written from that file none of whose notes the file holds any more is moved to another notes file
  of the project that holds one of them (the note moved: the file's last consolidated hand-over, or
  this session's), else archived with status ``expired`` (``memory.withdrawn``; ``consolidate undo``
  of the run brings it back). A memory this run writes or already changes is left to that decision;
  a hand-over older than the one a run already consolidated for the file (sessions ended, or a batch
  ran them, out of order) withdraws nothing."""

from __future__ import annotations

from consolidate.core.vocab import LIVE_STATUSES
from consolidate.model.notes_files import note_digest, source_file_of
from consolidate.model.plan import MemoryUpdate


def run(plan, ctx):
    """Add the re-confirmed memories' file updates, then a move or an ``archive`` update for every
    memory whose notes the session's notes files no longer hold."""
    if not ctx.store.has_longterm or not (plan.notes_files or plan.reconfirmations):
        return plan
    lt = ctx.store.longterm()
    if not plan.notes_files:  # re-confirmations alone: only a project that ever handed a notes file over has such memories
        if ctx.store.sessions.notes_file_states(plan.scope):
            _follow_reconfirming_notes(plan, lt)
        return plan
    _follow_reconfirming_notes(plan, lt)
    decided = {c.memory_id for c in plan.writes()} | {u.memory_id for u in plan.updates}
    states = {**ctx.store.sessions.notes_file_states(plan.scope), **{f: set(d) for f, d in plan.notes_files.items()}}
    recorded = ctx.store.sessions.notes_file_times(session_id=plan.session_id)
    state_at = ctx.store.sessions.notes_file_times(scope=plan.scope)
    withdrawn = 0
    for source_file, digests in sorted(plan.notes_files.items()):
        if state_at.get(source_file, float("-inf")) > recorded.get(source_file, float("inf")):
            continue  # a later hand-over of the file was consolidated first (sessions ended out of order): it decides
        held = set(digests)
        for row in lt.from_notes_file(source_file, plan.scope, LIVE_STATUSES):
            mid, meta = row["id"], row["metadata"] or {}
            keys = set(str(meta.get("notes_file_keys") or "").split())
            if mid in decided or not keys or keys & held:
                continue
            decided.add(mid)
            moved = next(((g, keys & d) for g, d in sorted(states.items()) if g != source_file and keys & d), None)
            if moved:
                plan.updates.append(MemoryUpdate(mid, "update", {"notes_file": moved[0], "notes_file_keys": " ".join(sorted(moved[1]))},
                                                 reason=f"its note moved from {source_file} to {moved[0]}"))
                continue
            plan.updates.append(MemoryUpdate(
                mid, "archive", {"status": "expired", "withdrawn_in": plan.session_id}, event="memory.withdrawn",
                reason=f"its notes are no longer in {source_file} (session {plan.session_id})"))
            withdrawn += 1
    plan.decide("notes_files.read", reason="notes files recorded by the session", files=sorted(plan.notes_files),
                withdrawn=withdrawn)
    return plan


def _follow_reconfirming_notes(plan, lt) -> None:
    """A re-confirmed memory of a notes file follows the notes that said it again (module docs)."""
    rows = lt.get([r.memory_id for r in plan.reconfirmations])
    for r in plan.reconfirmations:
        meta = (rows.get(r.memory_id) or {}).get("metadata") or {}
        current = meta.get("notes_file")
        if not current:
            continue
        pairs = []
        for nid in r.note_ids:
            try:
                note = plan.note(nid)
            except KeyError:
                continue
            pairs.append((source_file_of(note.metadata), note_digest(note.content)))
        keys = set(str(meta.get("notes_file_keys") or "").split())
        same = {d for f, d in pairs if f == current}
        if same:
            if same - keys:
                change = {"notes_file_keys": " ".join(sorted(keys | same))}
                reason = f"re-confirmed from a note of {current}"
            else:
                continue
        elif any(f is None for f, _ in pairs):
            change, reason = {"notes_file": "", "notes_file_keys": ""}, "re-confirmed by a note of no notes file"
        elif pairs:
            other = sorted(f for f, _ in pairs if f)[0]
            change = {"notes_file": other, "notes_file_keys": " ".join(sorted(d for f, d in pairs if f == other))}
            reason = f"re-confirmed from a note of {other}"
        else:
            continue
        plan.updates.append(MemoryUpdate(r.memory_id, "update", change, reason=reason))
