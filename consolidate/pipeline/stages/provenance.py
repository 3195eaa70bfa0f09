"""Stage 8, provenance stamp: every entry to be written gets its id, provenance and metadata.

``provenance = {session_id, run_id, date, evidence, source, prompt_version, reason, note_ids,
valid_from, origin}`` (``origin``: the weakest origin of its notes, consolidate.model.credit.origin_of,
carried into the record's flat metadata and its ``memory.written`` event, so a judge's evidence
claim is credited by it once the notes are gone); ``last_confirmed`` and ``valid_from`` come from its notes (an imported entry's dates,
else today: consolidate/model/validity.py); an entry it supersedes gets ``valid_to``. The
memory id is deterministic (``mem-`` + the first 16 hex digits of SHA-256 over scope, type and the
normalised statement), so a replayed run overwrites instead of duplicating."""

from __future__ import annotations

import datetime as _dt
import hashlib

from consolidate.core.normal import text_key
from consolidate.core.vocab import EVIDENCE_RANK
from consolidate.model.notes_files import note_digest, source_file_of
from consolidate.pipeline.stages.credibility import credited_strength, note_origin
from consolidate.store.forgotten import forgotten_match, tombstones
from consolidate.store import archive
from consolidate.model.validity import candidate_dates, plan_day
from consolidate.store.anchors import find_anchors, project_root

#: Evidence or source that may bring a forgotten statement back (consolidate/pipeline/forget.py).
OVERRIDE_EVIDENCE = ("user-stated",)
OVERRIDE_SOURCE = ("flagged",)


def memory_id(scope: str, type_: str, statement: str) -> str:
    """Deterministic id of a memory."""
    digest = hashlib.sha256(f"{scope}\x00{type_}\x00{text_key(statement)}".encode()).hexdigest()
    return "mem-" + digest[:16]


def run(plan, ctx):
    """Stamp every candidate that will be written; link supersessions and disputes to its id."""


    check_resurrections(plan, ctx.store)  # a forgotten statement comes back only user-stated or flagged
    now = _dt.datetime.fromtimestamp(ctx.now, _dt.timezone.utc)
    dead = archive.tombstones(ctx.store) if plan.writes() else set()
    for c in plan.writes():
        c.memory_id = memory_id(plan.scope, c.type, c.statement)
        if c.memory_id in dead:
            c.outcome, c.outcome_reason = "rejected", f"{c.memory_id} was deleted (tombstone): never written again"
            plan.decide("candidate.rejected", note_ids=c.note_ids, reason=c.outcome_reason, memory_id=c.memory_id)
            continue
        c.last_confirmed, valid_from = candidate_dates(plan, c)
        links = {k: c.provenance[k] for k in ("supersedes", "disputes", "updates", "type_inferred", "fields_missing", "external", "unfaithful",
                                            "restates")
                 if c.provenance.get(k)}
        origin = note_origin(plan, c)
        c.provenance = {
            "session_id": plan.session_id, "run_id": plan.run_id, "date": now.isoformat(timespec="seconds"),
            "evidence": c.evidence, "source": c.source, "prompt_version": c.provenance.get("prompt_version"),
            "reason": c.reason, "note_ids": list(c.note_ids), "valid_from": valid_from,
            **({"origin": origin} if origin else {}), **links,
            **notes_file_of(plan, c),
        }
        for u in plan.updates:
            if u.memory_id == links.get("supersedes"):
                u.changes["superseded_by"] = c.memory_id
                # it held until the statement replacing it became true; replaced by an older statement of
                # stronger evidence, it held until this run learned so (never an end before its start)
                start = u.changes.pop("_valid_from", None)
                u.changes["valid_to"] = valid_from if not start or valid_from >= start else plan_day(plan)
                u.edges.append([c.memory_id, "supersedes"])
            elif u.memory_id == links.get("disputes"):
                u.changes["disputed_with"] = c.memory_id
                u.edges.append([c.memory_id, "disputes"])
    anchor(plan, ctx)
    return plan


def notes_file_of(plan, c) -> dict:
    """``{"notes_file": name, "notes_file_keys": [digest, ...]}`` when every note of the candidate came
    from one notes file (its metadata's ``source_file``; consolidate/model/notes_files.py), else ``{}``:
    what a later snapshot of the file withdraws the memory by."""
    files, keys = set(), []
    for nid in c.note_ids:
        try:
            note = plan.note(nid)
        except KeyError:
            return {}
        f = source_file_of(note.metadata)
        if f is None:
            return {}
        files.add(f)
        keys.append(note_digest(note.content))
    if len(files) != 1:
        return {}
    return {"notes_file": files.pop(), "notes_file_keys": sorted(set(keys))}


def anchor(plan, ctx) -> None:
    """Record the code anchors of every durable entry to be written (consolidate.store.anchors): the
    project files and symbols it names, with their content hashes (reads files, writes nothing)."""

    root = project_root(ctx.store)
    for c in plan.writes():
        if c.tier == "durable" and c.memory_id:
            c.anchors = find_anchors(root, " ".join([c.statement, *c.fields.values()]), c.entities)


def _credited_user_stated(plan, c) -> bool:
    """Whether ``c``'s user-stated evidence is what its notes record (a note the user wrote), not a
    judge's claim about an agent's note: a claim is credited observed at most
    (consolidate/pipeline/stages/credibility.py), and a forgotten memory is not brought back by one."""
    return credited_strength(plan, c)[0] >= EVIDENCE_RANK[OVERRIDE_EVIDENCE[0]]


def check_resurrections(plan, store) -> None:
    """Reject every keeper of ``plan`` that states a forgotten memory again, unless flagged or
    user-stated as its notes record it (then it is written, and the event says it was restated; a
    judge's claim of user-stated for an agent's note does not count). Called by the provenance stage
    before ids are stamped."""
    rows = tombstones(store)
    if not rows:
        return
    for c in plan.writes():
        hit = forgotten_match(store, c.statement, rows)
        if hit is None:
            continue
        if c.source in OVERRIDE_SOURCE or (c.evidence in OVERRIDE_EVIDENCE and _credited_user_stated(plan, c)):
            c.provenance["restates"] = str(hit.get("run_id") or "")  # shown again: consolidate/store/views/shown.py
            plan.decide("memory.restated", note_ids=c.note_ids, memory_id=hit.get("id"),
                        reason=f"states a forgotten memory again, {'flagged' if c.source == 'flagged' else 'user-stated'}:"
                               " written again")
            continue
        c.outcome = "rejected"
        c.outcome_reason = (f"forgotten by the user ({hit.get('id')}, {str(hit.get('forgotten_at', ''))[:10]}):"
                            " not brought back unless the user states it again or the note is flagged")
        plan.decide("candidate.rejected", note_ids=c.note_ids, reason=c.outcome_reason, memory_id=hit.get("id"),
                    forgotten=True)
