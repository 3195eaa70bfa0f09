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
from consolidate.core.vocab import ACTIVE, LIVE_STATUSES, REVIEW_STATUSES
from consolidate.pipeline.maintenance import disputes
from consolidate.model.report import render_memory
from consolidate.pipeline.maintenance import apply_updates
from consolidate.store.views import context_md
from consolidate.pipeline.maintenance import new_plan
from consolidate.rules.secrets import user_reason
from consolidate.pipeline.forget import forget
from consolidate.rules.secrets import scan
from consolidate.store import archive
from consolidate.pipeline.stages.provenance import memory_id as new_id
from consolidate.store.views.notes_md import mark_statement

#: What a memory may wait for, in the order the queue lists them.
REASONS = (*REVIEW_STATUSES, "drifted", "stale")
#: The evidence every review decision carries.
EVIDENCE = "user-stated"
#: Longest edited statement, in characters (a memory is one standalone statement).
MAX_EDIT_CHARS = 2_000


def _today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


def _drift(store) -> dict[str, dict[str, list[str]]]:
    """``{memory_id: {"drifted": [paths], "stale": [paths]}}`` for every anchored memory whose code
    moved (consolidate.store.anchors.check; the drift queue is updated on a writable store)."""
    from consolidate.store.anchors import check, project_root

    try:
        return check(store.path, root=project_root(store), update=store.writable)
    except Exception:  # noqa: BLE001 - a drift check never fails the review
        return {}


def queue(store) -> list[dict[str, Any]]:
    """The memories waiting for review, disputed first, then quarantined, drifted, stale; each
    ``{"id", "statement", "type", "status", "reasons": [..], "with": [ids it disputes with],
    "drifted": [paths], "stale": [paths], "text": rendered line, "metadata"}``. [] for a store
    without a long-term tier."""

    if not store.exists or not store.has_longterm:
        return []
    lt = store.longterm()
    rows: dict[str, dict[str, Any]] = {}
    for r in disputes(store):
        rows[r["id"]] = {**r, "reasons": ["disputed"]}
    for r in lt.with_status("quarantined"):
        rows.setdefault(r["id"], {**r, "with": [], "reasons": []})["reasons"].append("quarantined")
    drift = _drift(store)
    missing = [m for m in drift if m not in rows]
    for mid, r in lt.get(missing).items():
        if (r["metadata"] or {}).get("status") in LIVE_STATUSES:
            rows[mid] = {"id": mid, **r, "with": [], "reasons": []}
    out = []
    for mid, r in rows.items():
        d = drift.get(mid) or {"drifted": [], "stale": []}
        reasons = list(r["reasons"]) + [k for k in ("drifted", "stale") if d[k]]
        meta = {**(r["metadata"] or {}), "drifted": ",".join(d["drifted"]), "stale": ",".join(d["stale"])}
        out.append({"id": mid, "statement": r["document"], "type": meta.get("type"), "status": meta.get("status"),
                    "reasons": reasons, "with": list(r.get("with") or []), "drifted": d["drifted"],
                    "stale": d["stale"], "text": render_memory(r["document"], meta), "metadata": r["metadata"]})
    out.sort(key=lambda e: (min(REASONS.index(x) for x in e["reasons"]), e["id"]))
    return out


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
    from consolidate.store.anchors import memory_anchors, project_root, read_section, reanchor

    section = read_section(store.path)
    return reanchor(project_root(store), section, memory_anchors(section, memory_id))


def _supersede_partners(plan, entry: dict[str, Any], winner: str, why: str) -> None:
    from consolidate.model.plan import MemoryUpdate

    for other in entry["with"]:
        if other != winner:
            plan.updates.append(MemoryUpdate(other, "archive", {"status": "superseded", "superseded_by": winner},
                                             event="memory.superseded", reason=why, edges=[[winner, "supersedes"]]))


def approve(store, memory_id: str, note: str | None = None) -> dict[str, Any]:
    """Approve a memory waiting for review (see the module docstring); returns ``{"memory_id",
    "decision": "approved", "run_id", "status": "active", "superseded": [ids]}``. Raises BadInput
    for an unknown id or one that waits for nothing."""
    from consolidate.model.plan import MemoryUpdate

    entry = _entry(store, memory_id)
    if not entry["reasons"]:
        raise BadInput(f"{entry['id']} waits for no review (status {entry['status']}): nothing to approve;"
                       " `consolidate review --list` shows what does", memory_id=entry["id"])

    why = user_reason(note, "approved by the user in review")
    plan = new_plan(store, "review")
    plan.scope = (entry["metadata"] or {}).get("scope") or store.project
    changes: dict[str, Any] = {"status": "active", "evidence": EVIDENCE, "confidence": "high",
                               "last_confirmed": _today(), "reviewed": f"approved {_today()}"}
    if entry["drifted"] or entry["stale"]:
        changes["anchors"] = json.dumps(_reanchored(store, entry["id"]), ensure_ascii=False)
    _decide(plan, "approved", entry, why)
    plan.updates.append(MemoryUpdate(entry["id"], "update", changes, event="memory.approved", reason=why))
    _supersede_partners(plan, entry, entry["id"], f"dispute settled in review in favour of {entry['id']}")
    _apply(store, plan)
    return {"memory_id": entry["id"], "decision": "approved", "run_id": plan.run_id, "status": ACTIVE,
            "superseded": [o for o in entry["with"]]}


def decline(store, memory_id: str, reason: str | None = None) -> dict[str, Any]:
    """Decline a memory: archived with a tombstone like ``consolidate forget`` (status
    ``declined``); an entry it disputed with and no other becomes active. Returns ``{"memory_id",
    "decision": "declined", "run_id", "status": "declined", "settled": [ids made active]}``. Any
    memory may be declined, whether it waits for review or not. Raises BadInput for an unknown id."""
    from consolidate.model.plan import MemoryUpdate

    entry = _entry(store, memory_id)

    why = user_reason(reason, "declined by the user in review")
    settled: list[str] = []

    def extend(plan, _row) -> None:

        plan.scope = (entry["metadata"] or {}).get("scope") or store.project
        _decide(plan, "declined", entry, why)
        if entry["with"]:
            partners = {r["id"]: r["with"] for r in disputes(store)}
            for other in entry["with"]:
                if set(partners.get(other) or ()) <= {entry["id"]}:
                    settled.append(other)
                    plan.updates.append(MemoryUpdate(other, "update", {"status": "active"},
                                                     event="memory.dispute_resolved",
                                                     reason=f"the entry it disputed with ({entry['id']}) was declined"
                                                            " in review"))

    res = forget(store, entry["id"], why, status="declined", event="memory.declined", label="review", extend=extend)
    return {"memory_id": entry["id"], "decision": "declined", "run_id": res["run_id"], "status": "declined",
            "settled": settled}


def check_edit_text(text: Any) -> str:
    """The edited statement on one line; BadInput when it is empty, too long, or holds secret
    material (consolidate.rules.secrets.scan)."""
    if not isinstance(text, str) or not text.strip():
        raise BadInput("no text: give the memory's new wording")
    text = " ".join(text.split())
    if len(text) > MAX_EDIT_CHARS:
        raise BadInput(f"the edited memory is {len(text)} characters; a memory is one statement of at most"
                       f" {MAX_EDIT_CHARS}")

    found = scan(text)
    if found:
        kinds = ", ".join(sorted({f.kind for f in found}))
        raise BadInput(f"the edited text holds secret material ({kinds}): nothing written; reword it without the"
                       " secret")
    return text


def edit(store, memory_id: str, text: str) -> dict[str, Any]:
    """Replace a memory by the user's wording: a new entry (evidence ``user-stated``, confidence
    high, the old type and fields) supersedes it. Returns ``{"memory_id": new id, "decision":
    "edited", "supersedes": old id, "run_id", "status": "active", "superseded": [ids]}``. Any memory
    may be edited. Raises BadInput for an unknown id or text :func:`check_edit_text` refuses."""
    from consolidate.store.anchors import find_anchors, project_root
    from consolidate.model.plan import Candidate, MemoryUpdate

    text = check_edit_text(text)
    entry = _entry(store, memory_id)
    meta = entry["metadata"] or {}
    plan = new_plan(store, "review")
    plan.scope = meta.get("scope") or store.project
    type_ = meta.get("type") or "fact"
    try:
        fields = json.loads(meta.get("fields") or "{}")
    except ValueError:
        fields = {}
    mid = new_id(plan.scope, type_, text)
    if mid in archive.tombstones(store):
        raise BadInput(f"that wording is the deleted memory {mid} (tombstone): it cannot be written again",
                       memory_id=mid)
    now = _dt.datetime.now(_dt.timezone.utc)
    why = f"edited by the user in review (was {entry['id']})"
    c = Candidate(note_ids=[], statement=text, type=type_, source="review", evidence=EVIDENCE, confidence="high",
                  reason=why, fields={k: str(v) for k, v in fields.items()} if isinstance(fields, dict) else {},
                  status="active", tier=meta.get("tier") or "durable", memory_id=mid,
                  last_confirmed=now.date().isoformat())
    c.provenance = {"session_id": plan.session_id, "run_id": plan.run_id, "date": now.isoformat(timespec="seconds"),
                    "evidence": EVIDENCE, "source": "review", "prompt_version": None, "reason": why, "note_ids": [],
                    **({"supersedes": entry["id"]} if mid != entry["id"] else {})}
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
            "status": ACTIVE, "superseded": [o for o in entry["with"] if o != mid]}


def public(entry: dict[str, Any]) -> dict[str, Any]:
    """A queue entry as JSON-ready data (``--list --json``, the MCP ``review_list`` tool)."""
    meta = entry.get("metadata") or {}
    return {"id": entry["id"], "statement": entry["statement"], "type": entry["type"], "status": entry["status"],
            "reasons": entry["reasons"], "with": entry["with"], "drifted": entry["drifted"], "stale": entry["stale"],
            "text": entry.get("text"), "evidence": meta.get("evidence"), "confidence": meta.get("confidence"),
            "last_confirmed": meta.get("last_confirmed")}
