"""What the pages of ``consolidate ui`` read from the store, through the owners the CLI uses: the
recall index (consolidate.store.index.longterm), recall (consolidate.pipeline.recall), the review
queue (consolidate.pipeline.review), the undo records (consolidate.store.snapshots, as ``consolidate
runs``), the archive (consolidate.store.archive) and the event log (consolidate.store.events). What
a page shows of a memory goes through the one agent view (consolidate/store/views/shown.py, its
``ui-*`` surfaces): a forgotten or declined memory's text never, the drift marks, the evidence as
credited (a judge's claim kept in ``claimed_evidence``), a memory the context guard holds back named
by its id with :data:`HELD_BACK` in place of its text. Nothing here writes, except what those owners
do on a read (the drift check updates the drift queue on a writable store, as a recall does).

A memory row is ``{"id", "document", "metadata", "archived": {...} | None}`` (``held_back``: True for
one held back); :func:`version` is the fingerprint of a row as the store holds it, which a form
posts back (a stale form is refused).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.core.vocab import ENDED_STATUSES, EVIDENCE_KINDS, LIVE_STATUSES, MEMORY_TYPES, REMOVED_STATUSES
from consolidate.model.validity import parse_day
from consolidate.pipeline.recall import MIN_SIMILARITY, recall
from consolidate.pipeline.review import HELD_BACK
from consolidate.store import archive, events
from consolidate.store.anchors import memory_anchors, read_section
from consolidate.store.snapshots import list_runs, with_partial_runs
from consolidate.store.views import shown

#: Every status a memory may have, live (in the recall index) or archived.
STATUSES = (*LIVE_STATUSES, *ENDED_STATUSES, *REMOVED_STATUSES)
#: Memories a page of the list shows.
PAGE_SIZE = 100
#: Most hits a search asks recall for.
SEARCH_K = 200
#: What a page shows in place of a forgotten or declined memory's text (it is never shown).
FORGOTTEN_TEXT = "(forgotten: its text is not shown; undo the run that forgot it on the Runs page to bring it back)"


def version(document: str | None, metadata: dict | None) -> str:
    """The fingerprint of a memory as shown: 16 hex digits of SHA-256 over its text and metadata."""
    blob = json.dumps([document, metadata or {}], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def loads(value: Any) -> Any:
    """A JSON-encoded metadata field (provenance, fields, anchors) decoded; the value itself when it
    is not JSON text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


@dataclass
class Filters:
    """The list's filters, as the query string gives them: ``q`` (search words), ``type``,
    ``status`` (a status, ``live``: the default, or ``all``), ``evidence``, ``since`` and
    ``until`` (days, on the last confirmation), ``page`` (from 1)."""

    q: str = ""
    type: str = ""
    status: str = "live"
    evidence: str = ""
    since: str = ""
    until: str = ""
    page: int = 1
    days: tuple[str | None, str | None] = field(default=(None, None))

    @classmethod
    def parse(cls, params: Any) -> Filters:
        """Filters from query parameters (a mapping). Raises BadInput for an unknown type, status or
        evidence, a date that is not a date, or a bad page number."""
        f = cls(q=(params.get("q") or "").strip(), type=params.get("type") or "", status=params.get("status") or "live",
                evidence=params.get("evidence") or "", since=(params.get("since") or "").strip(),
                until=(params.get("until") or "").strip())
        for name, known in (("type", MEMORY_TYPES), ("status", ("live", "all", *STATUSES)), ("evidence", EVIDENCE_KINDS)):
            value = getattr(f, name)
            if value and value not in known:
                raise BadInput(f"unknown {name} {value!r}: one of {', '.join(known)}")
        try:
            f.page = int(params.get("page") or 1)
        except ValueError:
            raise BadInput(f"bad page {params.get('page')!r}: a whole number from 1") from None
        if f.page < 1:
            raise BadInput(f"bad page {f.page}: a whole number from 1")
        f.days = (parse_day(f.since) if f.since else None, parse_day(f.until) if f.until else None)
        return f

    def keeps(self, row: dict[str, Any]) -> bool:
        """Whether ``row`` passes the type, status, evidence and date filters."""
        meta = row["metadata"] or {}
        status = meta.get("status")
        if self.status == "live" and status not in LIVE_STATUSES:
            return False
        if self.status not in ("live", "all") and status != self.status:
            return False
        if (self.type and meta.get("type") != self.type) or (self.evidence and meta.get("evidence") != self.evidence):
            return False
        day = str(meta.get("last_confirmed") or meta.get("valid_from") or "")[:10]
        since, until = self.days
        return not ((since and (not day or day < since)) or (until and (not day or day > until)))


def live_rows(store) -> list[dict[str, Any]]:
    """Every memory in the recall index ([] before the first run)."""
    if not store.exists or not store.has_longterm:
        return []
    return [{**r, "archived": None} for r in store.longterm().all()]


def archived_rows(store, live_ids: set[str]) -> list[dict[str, Any]]:
    """Every archived memory (``archive/``) that is not back in the index (an undone forget is)."""
    out = []
    for r in archive.records(store):
        if r.get("id") in live_ids or not isinstance(r.get("document"), str):
            continue
        out.append({"id": r["id"], "document": r["document"], "metadata": r["metadata"],
                    "archived": {k: r.get(k) for k in ("archived_reason", "archived_by", "archived_at")}})
    return out


def _sort_key(row: dict[str, Any]) -> tuple:
    meta = row["metadata"] or {}
    status = meta.get("status")
    return (MEMORY_TYPES.index(meta["type"]) if meta.get("type") in MEMORY_TYPES else len(MEMORY_TYPES),
            STATUSES.index(status) if status in STATUSES else len(STATUSES),
            "".join(chr(0x10FFFF - ord(c)) for c in str(meta.get("last_confirmed") or "")), row["id"])


@dataclass
class Listing:
    """One page of the memories list: ``rows`` (as the agent view shows them on ``ui-memories``),
    ``total`` (rows passing the filters), ``counts`` (``{type: {status: n}}`` over every memory),
    ``searched`` (recall ran), ``note`` (recall's line about a quarantined best match), ``held`` (a
    search's hits the context guard held back: ids), ``unlisted`` (forgotten or declined memories
    passing the filters, never listed)."""

    rows: list[dict[str, Any]]
    total: int
    counts: dict[str, dict[str, int]]
    searched: bool = False
    note: str = ""
    held: list[str] = field(default_factory=list)
    unlisted: int = 0


def shown_rows(store, rows: list[dict[str, Any]], surface: str, *, statuses: tuple[str, ...] | None = None,
               drift: bool = True) -> list[dict[str, Any]]:
    """``rows`` (in order) as the agent view shows them on ``surface`` (shown.view): forgotten ones
    and those of other statuses (the surface's, or ``statuses``) left out; the others with the drift
    marks (``drift``: checked for the live ones) and the evidence as credited; one the context guard
    holds back kept with ``"held_back": True``, :data:`HELD_BACK` as its document and no fields."""
    live = [r["id"] for r in rows if r.get("archived") is None]
    got = shown.view(rows, surface, drift=shown.drift_of(store, live) if drift and live else None,
                     forgotten=shown.forgotten_ids(store) if rows else (), statuses=statuses)
    by_id = {r["id"]: r for r in got.rows}
    held = set(got.held)
    out = []
    for r in rows:
        if r["id"] in by_id:
            out.append(by_id[r["id"]])
        elif r["id"] in held:
            meta = {k: v for k, v in (r.get("metadata") or {}).items() if k != "fields"}
            credited = shown.credited_evidence(meta)
            if credited != meta.get("evidence"):
                meta["claimed_evidence"], meta["evidence"] = meta.get("evidence"), credited
            out.append({**r, "document": HELD_BACK, "metadata": meta, "held_back": True})
    return out


def listing(store, f: Filters) -> Listing:
    """The memories page's rows for ``f``, as the agent view shows them on ``ui-memories``: live
    ones by default, every status but forgotten and declined on an explicit status filter (those
    are never listed: :attr:`Listing.unlisted` counts them); filtered (on the credited evidence) and
    sorted by type, status and last confirmation (newest first); with ``f.q``, recall's hits for it
    (quarantined ones included) in recall's order, then filtered. Raises BadInput for a query recall
    refuses."""
    live = live_rows(store)
    rows = live + (archived_rows(store, {r["id"] for r in live}) if f.status != "live" else [])
    counts: dict[str, dict[str, int]] = {}
    for r in rows:
        meta = r["metadata"] or {}
        by = counts.setdefault(str(meta.get("type") or "?"), {})
        by[str(meta.get("status") or "?")] = by.get(str(meta.get("status") or "?"), 0) + 1
    statuses = None if f.status == "live" else shown.BROWSED_STATUSES
    note, held = "", []
    if f.q:
        res = recall(store, f.q, k=SEARCH_K, min_similarity=MIN_SIMILARITY, include_quarantined=True, record=False)
        note, held = res.note, list(res.held_back)
        by_id = {r["id"]: r for r in rows}
        candidates = [{**by_id.get(h["id"], {"archived": None}), **h} for h in res.memories]
    else:
        candidates = sorted(rows, key=_sort_key)
    visible = shown_rows(store, candidates, "ui-memories", statuses=statuses, drift=False)
    seen = {r["id"] for r in visible}
    unlisted = sum(1 for r in candidates if r["id"] not in seen and f.keeps(r))
    kept = [r for r in visible if f.keeps(r)]
    start = (f.page - 1) * PAGE_SIZE
    page = kept[start:start + PAGE_SIZE]
    marks = {r["id"]: r for r in shown_rows(store, [r for r in page if not r.get("held_back")], "ui-memories",
                                            statuses=shown.BROWSED_STATUSES)}
    return Listing([marks.get(r["id"], r) for r in page], len(kept), counts, searched=bool(f.q), note=note,
                   held=held, unlisted=unlisted)


def memory(store, memory_id: str) -> dict[str, Any]:
    """One memory, live or archived, as the agent view shows it on ``ui-memory`` (:func:`shown_rows`;
    a forgotten or declined one with ``"forgotten": True``, :data:`FORGOTTEN_TEXT` as its document
    and no fields); raises BadInput (``unknown memory``) for an id the store does not hold."""
    row = None
    if store.exists and store.has_longterm:
        got = store.longterm().get([memory_id]).get(memory_id)
        if got is not None:
            row = {"id": memory_id, **got, "archived": None}
    if row is None:
        row = next((r for r in archived_rows(store, set()) if r["id"] == memory_id), None)
    if row is None:
        raise BadInput(f"unknown memory {memory_id!r}: not in the store (never written, or removed by an undo)",
                       memory_id=memory_id)
    seen = next(iter(shown_rows(store, [row], "ui-memory")), None)
    if seen is None:  # forgotten or declined: its text is never shown
        meta = {k: v for k, v in (row["metadata"] or {}).items() if k != "fields"}
        return {**row, "document": FORGOTTEN_TEXT, "metadata": meta, "forgotten": True}
    return seen


def stored_version(store, memory_id: str) -> str | None:
    """The fingerprint of ``memory_id`` as the store holds it now (None: not in the recall index)."""
    if not store.exists or not store.has_longterm:
        return None
    got = store.longterm().get([memory_id]).get(memory_id)
    return None if got is None else version(got["document"], got["metadata"])


def _mentions(event: dict[str, Any], memory_id: str) -> bool:
    if memory_id in (event.get("memory_id"), event.get("new_memory_id")):
        return True
    changes: dict[str, Any] = event["changes"] if isinstance(event.get("changes"), dict) else {}
    links: dict[str, Any] = event["links"] if isinstance(event.get("links"), dict) else {}
    return memory_id in (changes.get("superseded_by"), links.get("supersedes")) or memory_id in (event.get("with") or [])


def history(store, memory_id: str) -> list[dict[str, Any]]:
    """Every event of the log about ``memory_id`` (written, re-confirmed, superseded, approved,
    forgotten, undone, ... and the writes of the memories that superseded it), in order."""
    if not store.exists:
        return []
    return [ev for ev in events.read(store, contains=memory_id) if _mentions(ev, memory_id)]


def anchors_of(store, memory_id: str) -> list[dict[str, Any]]:
    """The code anchors of ``memory_id`` as the manifest records them (``[{"path", "symbol", "sha"}]``)."""
    try:
        return memory_anchors(read_section(store.path), memory_id)
    except (TypeError, ValueError):  # a hand-edited section: no anchors shown, the rest of the page is
        return []


def run_events(store) -> tuple[dict[str, dict], dict[str, list[dict]], dict[str, str]]:
    """From the event log: ``(summaries, written, undone)``: each run's ``run.applied`` summary,
    what it wrote (its ``memory.written`` lines, and its update and archive lines: approved,
    superseded, forgotten, ...) and when it was undone."""
    summaries: dict[str, dict] = {}
    written: dict[str, list[dict]] = {}
    undone: dict[str, str] = {}
    if not store.exists:
        return summaries, written, undone
    for ev in events.read(store):
        rid = ev.get("run_id")
        if not isinstance(rid, str):
            continue
        if ev.get("event") == "run.applied" and isinstance(ev.get("summary"), dict):
            summaries[rid] = ev["summary"]
        elif ev.get("event") == "memory.written" or (isinstance(ev.get("memory_id"), str)
                                                     and ev.get("action") in ("update", "archive")):
            written.setdefault(rid, []).append(ev)
        elif ev.get("event") == "run.undone":
            undone[rid] = str(ev.get("ts") or "")
    return summaries, written, undone


def runs(store) -> list[dict[str, Any]]:
    """Every run, newest first, as ``consolidate runs`` lists them (undo records and the runs that
    wrote nothing), each with ``summary`` (its counts) and ``written`` (what it wrote: event lines;
    a ``memory.written`` line's ``statement`` as the agent view shows it on ``ui-runs``: kept for a
    memory live in the recall index now, :data:`HELD_BACK` for one the context guard holds back,
    None for the others: forgotten, declined, superseded, archived, undone; ``marks``: its drift
    marks)."""
    if not store.exists:
        return []
    rows = with_partial_runs(store, list_runs(store))
    summaries, written, _ = run_events(store)
    _shown_statements(store, [ev for evs in written.values() for ev in evs if ev.get("event") == "memory.written"])
    results = {e["run_id"]: e.get("result") for e in store.sessions.last_runs(10_000) if e.get("run_id")}
    return [{**r, "summary": summaries.get(r["run_id"]) or results.get(r["run_id"]) or {},
             "written": written.get(r["run_id"], [])} for r in rows]


def _shown_statements(store, wrote: list[dict[str, Any]]) -> None:
    """Set each ``memory.written`` line's ``statement`` as ``ui-runs`` shows it (see :func:`runs`)."""
    ids = sorted({ev["memory_id"] for ev in wrote if isinstance(ev.get("memory_id"), str)})
    now = store.longterm().get(ids) if ids and store.has_longterm else {}
    rows = [{"id": i, "document": next((ev.get("statement") for ev in wrote if ev.get("memory_id") == i), None),
             "metadata": (now.get(i) or {}).get("metadata") or {"status": "archived"},
             "archived": None if i in now else {}} for i in ids]
    got = {r["id"]: r for r in shown_rows(store, rows, "ui-runs")}
    for ev in wrote:
        r = got.get(ev.get("memory_id"))
        ev["statement"] = r["document"] if r else None
        ev["marks"] = "" if r is None or r.get("held_back") else shown.drift_marks(r["metadata"])


def run_version(run: dict[str, Any]) -> str:
    """The fingerprint of a run as the runs page showed it (its undone state and counts)."""
    return version(run["run_id"], {"undone": bool(run.get("undone")), "added": run.get("added"),
                                   "changed": run.get("changed")})
