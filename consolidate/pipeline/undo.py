"""``consolidate undo RUN_ID``: revert one run from its undo record (``snapshots/<run_id>.json``).

Removes the entries the run added, restores every entry it overwrote, re-confirmed, updated, archived
or tombstoned to its earlier state (document, metadata and embedding), reverses its graph diff,
lifts the tombstones it laid (a ``forget`` included), appends ``memory.undone`` / ``run.undone``
events, and marks the run's entries in ``memory/notes.md`` as undone (struck through). Every step is
idempotent, and the record is marked undone only at the end, so an interrupted undo is finished by
running it again. Session notes the run consumed are not restored (they were scratch). A memory
forgotten after the run (by a later ``forget``) stays forgotten: its earlier state is not brought back,
and the counts say how many were kept so (``kept_forgotten``). An entry the run removed whose earlier
state an undone run wrote stays gone, its tombstones kept (``kept_gone``: undoing a forget after the
session that wrote the memory brings nothing back). Likewise a memory the user approved in
review after the run (``consolidate review --approve``) keeps that approval: its earlier state comes back
with the approval's fields (``reviewed``, ``evidence``, ``confidence``, ``last_confirmed``) as they are
now (``kept_approved``). Any other entry the run changed or added that a later run (not undone)
changed or added too refuses the undo, before anything changes, naming the later runs: undo them first
(newest first always works). An earlier state waiting with a curation proposal of a run since undone
comes back without it.
"""

from __future__ import annotations

import datetime as _dt

import json

from consolidate.pipeline.stages import apply as apply_stage
from consolidate.store import anchors, events as event_log, graph, snapshots
from consolidate.store.layout import GRAPH, SESSIONS_DB
from consolidate.store.archive import lift_tombstones
from consolidate.core.errors import BadInput
from consolidate.model.credit import approved
from consolidate.pipeline.curate.curation import PROPOSAL, PROPOSED
from consolidate.core.private import private_umask
from consolidate.store.views import context_md
from consolidate.store.forgotten import lift, tombstones
from consolidate.store.views.notes_md import mark_run_undone


def undo_run(store, run_id: str, lock_timeout: float = 60.0) -> dict:
    """Revert ``run_id``; returns counts ``{removed, restored, kept_forgotten}`` (``kept_forgotten``: the
    entries the run changed that a later ``forget`` tombstoned, left forgotten) (and ``nothing_written: True`` for a
    run that wrote nothing: no notes, every note dropped, a failure; its undo only records itself).
    Raises BadInput for an unknown run or one already undone."""
    private_umask()  # the store stays private whatever the umask (consolidate/core/private.py)
    try:
        record = snapshots.load(store, run_id)
    except BadInput:
        end = _run_without_record(store, run_id)
        if end is None:
            raise
        return _undo_nothing_written(store, run_id, end, lock_timeout)
    if record.get("undone"):
        raise BadInput(f"run {run_id} was already undone")
    with store.lock(lock_timeout):

        # a graph file that cannot be read: refused before anything changes; the graph loaded here is the
        # one reversed below unless a crashed run's replay appends to it first (one read, not two)
        loaded = graph.load(store.sub(GRAPH)) if record.get("graph") else None
        if apply_stage.finish_pending(store):
            loaded = None
        lt = store.longterm()
        added = record.get("added", [])
        # an entry a later run forgot stays forgotten: restoring its earlier state would bring back what
        # the user forgot (its tombstone, laid by that later run, is not this undo's to lift)
        runs = snapshots.list_runs(store)
        records = _Records(store)
        later = _still_forgotten(records, runs, [row for row in tombstones(store) if row.get("run_id") != run_id])
        kept_forgotten = sorted(set(record.get("before", {})) & later)
        now = lt.get(sorted(record.get("before", {}))) if record.get("before") else {}  # the entries as they are now
        approvals = _approved_later(now, record.get("before", {}), run_id)
        _refuse_if_later_runs_changed_them(records, runs, run_id, record, {str(i) for i in later if i} | set(approvals))
        undone = {r["run_id"] for r in runs if r["undone"]}
        orphans = _written_by_undone_runs(now, record.get("before", {}), undone)
        before = {i: r for i, r in record.get("before", {}).items() if i not in later and i not in orphans}
        _clear_void_proposals(before, undone)
        kept_approved = _keep_later_approvals(before, approvals)
        # the entries it changed go too and come back whole: an upsert merges metadata, so a key the run
        # added (``disputed_with``, a review mark) would outlive the undo
        lt.delete(list(added))
        lt.restore(before)
        lift_tombstones(store, set(record.get("tombstoned", [])) - orphans)
        # the code anchors come back with their entries (an archive or a forget took them out of the
        # manifest), as stored: a file edited since shows as drifted; the added entries' leave
        anchors.record(store, {i: _anchors_of(r) for i, r in before.items() if _anchors_of(r)}, removed=added)

        lift(store, run_id, keep=orphans)  # an undone `forget` protects nothing any more (but what stays gone)
        if store.sub(SESSIONS_DB).exists():  # the notes it took from notes files are new again to their next hand-over
            store.sessions.unsettle_notes_files(run_id)
        reversed_graph = apply_stage.reverse_graph(store, record.get("graph"), loaded,
                                                    keep=set(kept_forgotten) | orphans)
        ts = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        lines = [{"ts": ts, "event": "memory.undone", "run_id": run_id, "memory_id": i, "action": "removed"} for i in added]
        lines += [{"ts": ts, "event": "memory.undone", "run_id": run_id, "memory_id": i, "action": "restored"}
                  for i in before]
        lines.append({"ts": ts, "event": "run.undone", "run_id": run_id, "session_id": record.get("session_id"),
                      "removed": len(added), "restored": len(before)})
        event_log.append(store, lines)
        context_md.write(store, store.project, touched=list(added) + list(before), undoing=run_id)  # merged: no full read
        replica = store.replica()
        if replica is not None:  # a store in a team: the undo reaches the team store too
            replica.undo_outbox(run_id, record, lines, (reversed_graph or {}).get("added_edges") or [])
        mark_run_undone(store, run_id, f"undone {ts[:10]} by consolidate undo")
        record["undone"] = ts
        snapshots.save(store, run_id, record)
    replica = store.replica()
    if replica is not None:
        replica.push()  # failures wait in the outbox for the next run or `consolidate sync`
    return {"removed": len(added), "restored": len(before), "kept_forgotten": len(kept_forgotten),
            "kept_approved": len(kept_approved), "kept_gone": len(orphans)}


class _Records:
    """The undo records of other runs, each read once for one undo (snapshots.load; None for a run
    whose record cannot be read)."""

    def __init__(self, store):
        self.store, self._seen = store, {}

    def get(self, run_id: str) -> dict | None:
        if run_id not in self._seen:
            try:
                self._seen[run_id] = snapshots.load(self.store, run_id)
            except BadInput:
                self._seen[run_id] = None
        return self._seen[run_id]


def _still_forgotten(records: _Records, runs: list[dict], rows: list[dict]) -> set:
    """The ids of the tombstone rows ``rows`` (``forgotten.jsonl``: ``id``, ``run_id`` of the forget)
    that no later run (not undone) wrote again: a memory stated again after its forget (flagged,
    user-stated: the same id, in that session's ``added``) is no longer the forget's to keep, and the
    run that wrote it refuses the undo like any other (a fresh tester: undoing the first session took
    the flagged restatement with it; the store left inconsistent, or the restatement lost for good).
    ``runs``: snapshots.list_runs."""
    started = {r["run_id"]: r.get("started_at") or 0 for r in runs}
    forgotten_at: dict[str, float] = {}
    for row in rows:
        if row.get("id"):
            forgotten_at[row["id"]] = min(forgotten_at.get(row["id"], float("inf")), started.get(row.get("run_id"), 0))
    restated: set[str] = set()
    for r in runs:
        if r["undone"] or not r["added"] or not forgotten_at:
            continue
        later = {i for i, at in forgotten_at.items() if (r.get("started_at") or 0) > at}
        if not later:
            continue
        theirs = records.get(r["run_id"])
        if theirs is not None:
            restated |= later & set(theirs.get("added", []))
    return set(forgotten_at) - restated


def _written_by_undone_runs(now: dict[str, dict], before: dict[str, dict], undone: set[str]) -> set[str]:
    """The ids of ``before`` (the undo record's earlier states) that are in the index no more and whose
    earlier state a run since undone wrote (``undone``: their ids): such an entry stays gone, its
    tombstones kept (a fresh tester: a memory forgotten, the session that wrote it undone, then the
    forget undone came back active, a memory of an undone run, missing from the graph). ``now``: the
    entries of ``before`` as the index holds them now."""
    return {i for i, row in before.items()
            if i not in now and (row.get("metadata") or {}).get("run_id") in undone}


def _approved_later(now: dict[str, dict], before: dict[str, dict], run_id: str) -> dict[str, dict]:
    """``{id: metadata now}`` of the entries of ``before`` (the undo record's earlier states) that the
    user approved in review after run ``run_id`` (an approval stamps its own run, ``reviewed_run``;
    undoing the approving run itself takes the approval back; ``now``: those entries as the index
    holds them now)."""
    out = {}
    for i, row in before.items():
        meta_now = (now.get(i) or {}).get("metadata") or {}
        by = meta_now.get("reviewed_run")
        if approved(meta_now) and by and by != run_id and by != (row.get("metadata") or {}).get("reviewed_run"):
            out[i] = meta_now
    return out


#: The maintenance runs that forget a memory (``forget``; ``review --decline`` is a forget): undoing an
#: earlier run after one keeps what it forgot forgotten and restores the rest (``kept_forgotten``).
FORGETTING = frozenset({"maintenance:forget"})


def _refuse_if_later_runs_changed_them(records: _Records, runs: list[dict], run_id: str, record: dict,
                                       exempt: set[str]) -> None:
    """BadInput, before anything changes, when a later run that is not undone changed or added one of the
    entries run ``run_id`` changed or added (its undo record's ``before`` and ``added``): restoring this
    run's earlier states would undo that run's work on them too, or bring back beside it what it replaced
    (fresh testers: an old value active beside its replacement, memories of undone runs alive again, index
    and graph out of step). Undoing newest first always works. ``exempt``: entries a later ``forget``
    tombstoned or a later review approved (kept as they are: see the module docstring); ``runs``:
    snapshots.list_runs."""
    mine = (set(record.get("before", {})) | set(record.get("added", []))) - exempt
    if not mine:
        return
    started = record.get("started_at") or 0
    blocking = []
    for r in runs:
        if r["run_id"] == run_id or r["undone"] or (r.get("started_at") or 0) < started \
                or r["session_id"] in FORGETTING:  # a forget after the run is kept (its entry stays forgotten)
            continue
        theirs = records.get(r["run_id"])
        if theirs is None:
            continue
        if mine & (set(theirs.get("before", {})) | set(theirs.get("added", []))):
            blocking.append(r["run_id"])
    if blocking:
        raise BadInput(f"run {run_id} cannot be undone before {', '.join(blocking[:5])}"
                       f"{' and more' if len(blocking) > 5 else ''}: later runs that changed the same memories;"
                       " undo them first, newest first (`consolidate runs` lists them); nothing was changed",
                       run_id=run_id)


def _clear_void_proposals(before: dict[str, dict], undone: set[str]) -> None:
    """An earlier state that waits with a curation proposal of a run since undone (``undone``: their ids)
    comes back without it (a fresh tester: undoing the review runs after their curate run brought back
    its proposals, which still acted when decided)."""
    for row in before.values():
        meta = row.get("metadata") or {}
        if not meta.get(PROPOSED):
            continue
        try:
            made_by = json.loads(meta.get(PROPOSAL) or "{}").get("run_id")
        except (ValueError, AttributeError):
            made_by = None
        if made_by in undone:
            row["metadata"] = {**meta, PROPOSED: False, PROPOSAL: ""}


#: The fields a review approval sets (consolidate/pipeline/review.py ``approve``) that an undo keeps.
APPROVAL_FIELDS = ("reviewed", "reviewed_run", "evidence", "confidence", "last_confirmed")


def _keep_later_approvals(before: dict[str, dict], approvals: dict[str, dict]) -> list[str]:
    """The ids of ``before`` (the undo record's earlier states, changed in place) approved after the run
    (``approvals``: :func:`_approved_later`): their earlier state takes the approval's fields as they are now."""
    kept = []
    for i, meta_now in approvals.items():
        if i in before:
            before[i]["metadata"] = {**(before[i].get("metadata") or {}),
                                     **{k: meta_now[k] for k in APPROVAL_FIELDS if k in meta_now}}
            kept.append(i)
    return kept


def _anchors_of(row: dict) -> list[dict]:
    """The code anchors an entry's metadata holds (``anchors``: JSON, consolidate.store.anchors); []."""
    try:
        found = json.loads((row.get("metadata") or {}).get("anchors") or "[]")
    except ValueError:
        return []
    return [a for a in found if isinstance(a, dict) and a.get("path") and a.get("sha")] if isinstance(found, list) else []


def _run_without_record(store, run_id: str) -> dict | None:
    """The queue row of a run that wrote nothing to the index (no notes, every note dropped, a
    failure, notes left waiting), so has no undo record; None for a run the queue does not know."""
    if not store.exists or not store.sub(SESSIONS_DB).exists():
        return None
    return next((e for e in store.sessions.last_runs(10**6) if e.get("run_id") == run_id), None)


def _undo_nothing_written(store, run_id: str, end: dict, lock_timeout: float) -> dict:
    """Undo a run that wrote nothing: there is nothing to revert, so the undo only records itself
    (a ``run.undone`` event and an undo record marked undone, so ``runs`` shows it undone and a
    second undo is refused like any other). Returns ``{removed: 0, restored: 0}``."""
    with store.lock(lock_timeout):
        ts = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        event_log.append(store, [{"ts": ts, "event": "run.undone", "run_id": run_id, "session_id": end["session_id"],
                                  "removed": 0, "restored": 0}])
        snapshots.save(store, run_id, {
            "run_id": run_id, "session_id": end["session_id"], "outcome": end.get("outcome"),
            "started_at": end.get("finished_at") or 0.0, "added": [], "before": {}, "tombstoned": [], "graph": None,
            "waiting": int((end.get("result") or {}).get("waiting") or 0), "undone": ts})
        store.sessions.unsettle_notes_files(run_id)  # its notes-file notes are new again to their next hand-over
    return {"removed": 0, "restored": 0, "nothing_written": True}


