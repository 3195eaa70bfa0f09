"""The review queue: ``consolidate review`` and the MCP ``review_*`` tools.

What waits for the user: **quarantined** memories (a single inferred observation, an isolated or
external note: the write policy kept them out of default recall), **disputed** ones (two entries of
equal evidence that contradict each other) and **drifted** or **stale** ones (the code they are
anchored to changed or is gone: consolidate.store.anchors). For each, the user decides:

- **approve**: the memory holds. It becomes ``active`` with evidence ``user-stated`` and confidence
  ``high``, confirmed today; a disputed one wins its dispute (the entries it disputes with are
  archived as ``superseded`` by it, as ``consolidate resolve`` does); a drifted or stale one is
  re-anchored on today's code (which takes it out of the drift queue).
- **decline**: the memory is wrong. It is archived with a tombstone like ``consolidate forget``
  (status ``declined``): a later session does not bring it back unless the user states it or the
  note is flagged. An entry it disputed with, left with no other dispute, becomes active.
- a memory waiting with a **curation proposal** (``consolidate curate --review``, or a proposal to
  drop or merge away a memory the user stated: consolidate/pipeline/curate/) stays as it is until
  decided: approve refuses a drop or a merge away (the memory holds) and settles a conflict in the
  memory's favour (the memory it conflicts with is archived ``superseded`` by it, as for a dispute);
  decline accepts the proposal: a drop archives it as below, a merge folds it into the memory it
  repeats (its provenance moves there, it is archived ``superseded``, no tombstone: the survivor says
  it), as the curation pass would have, and a conflict archives it so the other holds.
- **edit**: the memory, reworded by the user. A new entry with the user's text (evidence
  ``user-stated``, the old type and fields, fresh code anchors) supersedes the old one (archived
  ``superseded``, a ``supersedes`` edge in the graph); a disputed one's partners are superseded too.

Every decision is one journaled maintenance run (``consolidate runs`` lists it, ``consolidate undo
RUN_ID`` reverts it) whose events include ``review.approved`` / ``review.declined`` /
``review.edited`` with ``evidence: user-stated``, the memory id and what the memory was waiting for.
Edited text passes the secret gate: text holding secret material is refused (BadInput), nothing
written.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.core.vocab import ACTIVE, LIVE_STATUSES, REVIEW_STATUSES, SUPERSEDED
from consolidate.pipeline.maintenance import disputes
from consolidate.store.views import shown as agent_view
from consolidate.pipeline.maintenance import apply_updates
from consolidate.store.views import context_md
from consolidate.pipeline.maintenance import new_plan
from consolidate.model.credit import APPROVED
from consolidate.model.plan import Candidate, MemoryUpdate
from consolidate.rules.memory_types import fields_after_edit, required_missing
from consolidate.rules.secrets import user_reason
from consolidate.pipeline.forget import forget
from consolidate.pipeline.curate.curation import PROPOSAL as CURATE_PROPOSAL, PROPOSED as CURATE_MARK, absorbs, merged_away
from consolidate.rules.persisted import findings
from consolidate.rules.private_spans import strip as strip_private
from consolidate.store import archive
from consolidate.pipeline.stages.provenance import memory_id as new_id
from consolidate.store.views.notes_md import mark_statement
from consolidate.store.anchors import find_anchors, memory_anchors, project_root, read_section, reanchor

#: What a memory may wait for, in the order the queue lists them (``curate``: a proposal of the
#: curation pass, consolidate/pipeline/curate/, sent to review).
REASONS = (*REVIEW_STATUSES, "drifted", "stale", "curate")
#: The evidence every review decision carries.
EVIDENCE = "user-stated"
#: What the review queue shows of a memory the context guard holds back (its text is never shown).
HELD_BACK = ("(held back: worded as instructions or to run remote code; `consolidate forget ID` removes it,"
             " `consolidate review` declines it)")
#: Longest edited statement, in characters (a memory is one standalone statement).
MAX_EDIT_CHARS = 2_000


def _today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


def _drift(store) -> dict[str, dict[str, list[str]]]:
    """``{memory_id: {"drifted": [paths], "stale": [paths]}}`` for every anchored memory whose code
    moved (consolidate.store.anchors.check; the drift queue is updated on a writable store)."""
    return agent_view.drift_of(store, None)  # a drift check never fails the review


def queue(store, surface: str = "review-list") -> list[dict[str, Any]]:
    """The memories waiting for review, disputed first, then quarantined, drifted, stale; each
    ``{"id", "statement", "type", "status", "reasons": [..], "with": [ids it disputes with],
    "drifted": [paths], "stale": [paths], "text": rendered line, "metadata"}`` (as the agent view
    shows them on ``surface``: ``review-list``, or ``ui-review`` for the ui's Review page). [] for a
    store without a long-term tier."""

    if not store.exists or not store.has_longterm:
        return []
    lt = store.longterm()
    rows: dict[str, dict[str, Any]] = {}
    for r in disputes(store):
        rows[r["id"]] = {**r, "reasons": ["disputed"]}
    for r in lt.with_status("quarantined"):
        rows.setdefault(r["id"], {**r, "with": [], "reasons": []})["reasons"].append("quarantined")
    for r in lt.marked(CURATE_MARK):
        if (r["metadata"] or {}).get("status") in LIVE_STATUSES:
            rows.setdefault(r["id"], {**r, "with": [], "reasons": []})["reasons"].append("curate")
    drift = _drift(store)
    missing = [m for m in drift if m not in rows]
    for mid, r in lt.get(missing).items():
        if (r["metadata"] or {}).get("status") in LIVE_STATUSES:
            rows[mid] = {"id": mid, **r, "with": [], "reasons": []}
    # the agent view (consolidate/store/views/shown.py): tombstones, drift marks, evidence as credited, the guard
    got = agent_view.view([{"id": mid, "document": r["document"], "metadata": r["metadata"] or {}, "with": r["with"]}
                           for mid, r in rows.items()], surface, drift=drift,
                          forgotten=agent_view.forgotten_ids(store), statuses=LIVE_STATUSES)
    shown = {v["id"]: text for v, text in zip(got.rows, got.lines)}
    credited = {v["id"]: v["metadata"] for v in got.rows}  # evidence as credited, no forgotten disputed_with
    partners = {v["id"]: v["with"] for v in got.rows}  # a forgotten side never named
    out: list[dict[str, Any]] = []
    for mid, r in rows.items():
        if mid not in shown and mid not in got.held:
            continue  # forgotten: never shown
        d = drift.get(mid) or {"drifted": [], "stale": []}
        reasons = list(r["reasons"]) + [k for k in ("drifted", "stale") if d[k]]
        meta = credited.get(mid) or r["metadata"] or {}
        text = shown.get(mid) or HELD_BACK
        out.append({"id": mid, "statement": r["document"] if mid in shown else HELD_BACK, "type": meta.get("type"),
                    "status": meta.get("status"), "reasons": reasons, "with": list(partners.get(mid, r.get("with")) or []),
                    "drifted": d["drifted"], "stale": d["stale"], "text": text, "metadata": meta,
                    **({"held_back": True} if mid in got.held else {}),
                    **({"proposal": _proposal(r["metadata"])} if "curate" in reasons else {})})
    out.sort(key=lambda e: (min(REASONS.index(x) for x in e["reasons"]), e["id"]))
    return out


def _proposal(meta: dict[str, Any] | None) -> dict[str, Any]:
    """The curation proposal a memory waits with (``{"action", "into"/"with", "reason", "judge",
    "run_id"}``; ``{}`` when unreadable)."""
    try:
        got = json.loads((meta or {}).get(CURATE_PROPOSAL) or "{}")
    except (TypeError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def _entry(store, memory_id: Any) -> dict[str, Any]:
    """The queue entry of ``memory_id``, or the memory as it is (``reasons`` empty) when it waits
    for nothing. Raises BadInput for a blank or unknown id."""
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise BadInput("no memory id: give the id `consolidate review --list` shows")
    memory_id = memory_id.strip()
    if not store.exists or not store.has_longterm:
        raise BadInput(f"unknown memory {memory_id!r}: the store has no memories yet", memory_id=memory_id)
    for e in queue(store):
        if e["id"] == memory_id:
            return e
    row = store.longterm().get([memory_id]).get(memory_id)
    if row is None:
        raise BadInput(f"unknown memory {memory_id!r}: not in the store (already declined or archived?)",
                       memory_id=memory_id)
    meta = row["metadata"] or {}
    return {"id": memory_id, "statement": row["document"], "type": meta.get("type"), "status": meta.get("status"),
            "reasons": [], "with": [], "drifted": [], "stale": [], "metadata": meta}


def _decide(plan, decision: str, entry: dict[str, Any], reason: str, **detail) -> None:
    plan.decide(f"review.{decision}", memory_id=entry["id"], evidence=EVIDENCE, reason=reason,
                waiting_for=entry["reasons"], **detail)


def _apply(store, plan) -> None:

    apply_updates(store, plan)
    context_md.write(store, plan.scope)


def _reanchored(store, memory_id: str) -> list[dict]:
    section = read_section(store.path)
    return reanchor(project_root(store), section, memory_anchors(section, memory_id))


def _supersede_partners(plan, entry: dict[str, Any], winner: str, why: str, others: list[str] | None = None) -> None:
    """Archive ``others`` (default: the entries ``entry`` disputes with) as superseded by ``winner``."""
    for other in entry["with"] if others is None else others:
        if other != winner:
            plan.updates.append(MemoryUpdate(other, "archive", {"status": SUPERSEDED, "superseded_by": winner},
                                             event="memory.superseded", reason=why, edges=[[winner, "supersedes"]]))


def approve(store, memory_id: str, note: str | None = None) -> dict[str, Any]:
    """Approve a memory waiting for review (see the module docstring); returns ``{"memory_id",
    "decision": "approved", "run_id", "status": "active", "superseded": [ids]}``. Raises BadInput
    for an unknown id or one that waits for nothing."""
    entry = _entry(store, memory_id)
    if not entry["reasons"]:
        raise BadInput(f"{entry['id']} waits for no review (status {entry['status']}): nothing to approve;"
                       " `consolidate review --list` shows what does", memory_id=entry["id"])

    why = user_reason(note, "approved by the user in review")
    plan = new_plan(store, "review")
    plan.scope = (entry["metadata"] or {}).get("scope") or store.project
    changes: dict[str, Any] = {"status": "active", "evidence": EVIDENCE, "confidence": "high",
                               "last_confirmed": _today(), "reviewed": f"{APPROVED} {_today()}",
                               "reviewed_run": plan.run_id}  # an undo of another run keeps it (pipeline/undo.py)
    if entry["drifted"] or entry["stale"]:
        changes["anchors"] = json.dumps(_reanchored(store, entry["id"]), ensure_ascii=False)
    rival = None
    if "curate" in entry["reasons"]:  # a drop or merge refused: the memory holds; a conflict settled for it
        changes.update({CURATE_MARK: False, CURATE_PROPOSAL: ""})
        rival = _live_target(store, entry, "conflict", "with")
    _decide(plan, "approved", entry, why)
    plan.updates.append(MemoryUpdate(entry["id"], "update", changes, event="memory.approved", reason=why))
    _supersede_partners(plan, entry, entry["id"], f"dispute settled in review in favour of {entry['id']}")
    if rival and rival not in entry["with"]:
        _supersede_partners(plan, entry, entry["id"], f"curation conflict settled in review in favour of {entry['id']}",
                            [rival])
    _apply(store, plan)
    return {"memory_id": entry["id"], "decision": "approved", "run_id": plan.run_id, "status": ACTIVE,
            "superseded": [*entry["with"], *([rival] if rival and rival not in entry["with"] else [])]}


def _live_target(store, entry: dict[str, Any], action: str, key: str) -> str | None:
    """The memory that ``entry``'s curation proposal of ``action`` names under ``key`` (``into`` of a
    merge, ``with`` of a conflict) when it is still active; else None."""
    proposal = entry.get("proposal") or {}
    target = proposal.get(key) if proposal.get("action") == action else None
    if not isinstance(target, str) or target == entry["id"]:
        return None
    row = store.longterm().get([target]).get(target)
    return target if row and (row["metadata"] or {}).get("status") == ACTIVE else None


def decline(store, memory_id: str, reason: str | None = None) -> dict[str, Any]:
    """Decline a memory: archived with a tombstone like ``consolidate forget`` (status
    ``declined``); an entry it disputed with and no other becomes active. Returns ``{"memory_id",
    "decision": "declined", "run_id", "status": "declined", "settled": [ids made active]}``. A memory
    waiting with a curation proposal to merge it into another, still active, is merged instead
    (``"status": "superseded", "merged_into": id``; see the module docstring). Any memory may be
    declined, whether it waits for review or not. Raises BadInput for an unknown id."""
    entry = _entry(store, memory_id)

    why = user_reason(reason, "declined by the user in review")
    into = _live_target(store, entry, "merge", "into") if "curate" in entry["reasons"] else None
    if into:
        return _merge(store, entry, into, why)

    def extend(plan, _row) -> None:

        plan.scope = (entry["metadata"] or {}).get("scope") or store.project
        _decide(plan, "declined", entry, why)

    # forget settles the disputes the entry was the only other side of (consolidate/pipeline/forget.py)
    res = forget(store, entry["id"], why, status="declined", event="memory.declined", label="review", extend=extend)
    return {"memory_id": entry["id"], "decision": "declined", "run_id": res["run_id"], "status": "declined",
            "settled": res["settled"]}


def _merge(store, entry: dict[str, Any], into: str, why: str) -> dict[str, Any]:
    """Decline of a merge proposal: ``entry`` folded into ``into`` as the curation pass merges
    (consolidate/pipeline/curate/curation.py ``merged_away``, ``absorbs``), as one journaled run."""
    lt = store.longterm()
    rows = lt.get([entry["id"], into])
    plan = new_plan(store, "review")
    plan.scope = (entry["metadata"] or {}).get("scope") or store.project
    _decide(plan, "declined", entry, why, merged_into=into)
    plan.updates.append(merged_away(entry["id"], into, f"merged into {into} in review: {why}"))
    plan.updates.append(absorbs(into, rows[into], [(entry["id"], rows[entry["id"]])], plan.run_id, "review"))
    _apply(store, plan)
    return {"memory_id": entry["id"], "decision": "declined", "run_id": plan.run_id, "status": SUPERSEDED,
            "merged_into": into, "settled": []}


def check_edit_text(text: Any) -> str:
    """The edited statement on one line, its private spans replaced by ``[private]`` (a memory never
    holds one: consolidate/rules/private_spans.py); BadInput when it is empty, too long, or holds
    secret material (consolidate.rules.persisted ``findings``: as written or in NFC)."""
    if not isinstance(text, str) or not text.strip():
        raise BadInput("no text: give the memory's new wording")
    text = " ".join(strip_private(text).split())
    if len(text) > MAX_EDIT_CHARS:
        raise BadInput(f"the edited memory is {len(text)} characters; a memory is one statement of at most"
                       f" {MAX_EDIT_CHARS}")

    found = findings(text)
    if found:
        kinds = ", ".join(sorted({f.kind for f in found}))
        raise BadInput(f"the edited text holds secret material ({kinds}): nothing written; reword it without the"
                       " secret")
    return text


def edit(store, memory_id: str, text: str) -> dict[str, Any]:
    """Replace a memory by the user's wording: a new entry (evidence ``user-stated``, confidence
    high, the old type) supersedes it. Its fields follow the new wording
    (consolidate.rules.memory_types.fields_after_edit: re-derived from it, an old field taken from
    the old wording dropped, others kept), and its provenance records the edit (``edited``: ``{"from":
    old id, "fields_rederived"/"fields_dropped"/"fields_kept": [names]}``, and ``fields_missing``
    for required fields now lacking). Returns ``{"memory_id": new id, "decision": "edited",
    "supersedes": old id, "run_id", "status": "active", "superseded": [ids], "fields": {...},
    "fields_changed": {"rederived"/"dropped": [names]}, "fields_missing"?: [names]}``. Any memory may
    be edited. Raises BadInput for an unknown id or text :func:`check_edit_text` refuses."""
    text = check_edit_text(text)
    entry = _entry(store, memory_id)
    meta = entry["metadata"] or {}
    plan = new_plan(store, "review")
    plan.scope = meta.get("scope") or store.project
    type_ = meta.get("type") or "fact"
    try:
        old_fields = json.loads(meta.get("fields") or "{}")
    except ValueError:
        old_fields = {}
    fields, changes = fields_after_edit(type_, entry["statement"], text,
                                        old_fields if isinstance(old_fields, dict) else {})
    missing = required_missing(type_, fields)
    mid = new_id(plan.scope, type_, text)
    if mid in archive.tombstones(store):
        raise BadInput(f"that wording is the deleted memory {mid} (tombstone): it cannot be written again",
                       memory_id=mid)
    now = _dt.datetime.now(_dt.timezone.utc)
    why = f"edited by the user in review (was {entry['id']})"
    c = Candidate(note_ids=[], statement=text, type=type_, source="review", evidence=EVIDENCE, confidence="high",
                  reason=why, fields=fields,
                  status="active", tier=meta.get("tier") or "durable", memory_id=mid,
                  last_confirmed=now.date().isoformat())
    c.provenance = {"session_id": plan.session_id, "run_id": plan.run_id, "date": now.isoformat(timespec="seconds"),
                    "evidence": EVIDENCE, "source": "review", "prompt_version": None, "reason": why, "note_ids": [],
                    **({"supersedes": entry["id"]} if mid != entry["id"] else {}),
                    "edited": {"from": entry["id"], **{f"fields_{k}": v for k, v in changes.items() if v}},
                    **({"fields_missing": missing} if missing else {})}
    if c.tier == "durable":
        c.anchors = find_anchors(project_root(store), " ".join([text, *c.fields.values()]))
    _decide(plan, "edited", entry, why, new_memory_id=mid)
    plan.candidates.append(c)
    if mid != entry["id"]:
        plan.updates.append(MemoryUpdate(entry["id"], "archive", {"status": "superseded", "superseded_by": mid},
                                         event="memory.superseded", reason=why, edges=[[mid, "supersedes"]]))
    _supersede_partners(plan, entry, mid, f"dispute settled in review by the user's wording ({mid})")
    _apply(store, plan)
    if mid != entry["id"]:

        mark_statement(store, entry["statement"], f"edited {now.date().isoformat()}: now {mid}")
    return {"memory_id": mid, "decision": "edited", "supersedes": entry["id"], "run_id": plan.run_id,
            "status": ACTIVE, "superseded": [o for o in entry["with"] if o != mid], "fields": fields,
            "fields_changed": {k: v for k, v in changes.items() if v and k != "kept"},
            **({"fields_missing": missing} if missing else {})}


def public(entry: dict[str, Any]) -> dict[str, Any]:
    """A queue entry as JSON-ready data (``--list --json``, the MCP ``review_list`` tool): each string
    written as the agent view writes it (consolidate.store.views.shown.json_answer: bidi and control
    characters visible); the queue's own entries keep the stored text (an edit marks its notes by it)."""
    meta = entry.get("metadata") or {}
    return agent_view.json_answer({"id": entry["id"], "statement": entry["statement"], "type": entry["type"], "status": entry["status"],
            "reasons": entry["reasons"], "with": entry["with"], "drifted": entry["drifted"], "stale": entry["stale"],
            "text": entry.get("text"), "evidence": meta.get("evidence"), "confidence": meta.get("confidence"),
            "last_confirmed": meta.get("last_confirmed"), **({"proposal": entry["proposal"]} if "proposal" in entry else {})})
