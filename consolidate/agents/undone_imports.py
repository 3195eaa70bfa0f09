"""Undo reaches the importers' memory of what they imported: a source imported again after
``consolidate undo`` of the run that consolidated it is imported again, not taken as done.

``import --agents-md`` takes a block as imported when its session ``agents-md-<digest>`` has an end,
and ``import-transcripts`` keeps a ledger of the transcripts (and entries) it imported. Neither knew of
undo: after ``consolidate undo RUN_ID`` of the import's run the memories were gone, yet the same block
or transcript was refused as already imported. Here both ask the undo records (consolidate/store/snapshots.py)
whether the run that took a session's notes was undone. Read-only: nothing is written at undo time,
so an undo of a run of any other kind, an interrupted undo finished later, and a team's undo need
nothing more.
"""

from __future__ import annotations

from typing import Any
from consolidate.core.errors import ConsolidateError
from consolidate.store.snapshots import load
from consolidate.store.snapshots import list_runs


def last_run_undone(store, end: dict[str, Any] | None) -> bool:
    """Whether the run named in the session end ``end`` (the session's last run) has an undo record
    marked undone. A session re-imported after an undo has a newer run, so a block comes back once;
    a run that wrote nothing has no record and could not be undone (False)."""
    run_id = (end or {}).get("run_id")
    if not run_id:
        return False

    try:
        return bool(load(store, run_id).get("undone"))
    except ConsolidateError:  # no record (nothing written), or a damaged one: `consolidate doctor` says so
        return False


def runs_by_session(store) -> dict[str, list[dict[str, Any]]]:
    """``{session id: its runs with an undo record, oldest first}`` (snapshots.list_runs rows:
    ``run_id``, ``started_at`` in Unix seconds, ``undone``); one pass over the records."""

    out: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(list_runs(store), key=lambda r: r["started_at"]):
        out.setdefault(r["session_id"], []).append(r)
    return out


def undone_at(runs: list[dict[str, Any]], ts: float | None) -> bool:
    """Whether the notes written at ``ts`` (Unix seconds; None: before any run) were consolidated by an
    undone run: the first of ``runs`` (oldest first) that started at or after ``ts`` (a run takes every
    note queued before it starts). False while no run took them yet."""
    for r in runs:
        if ts is None or r["started_at"] >= ts:
            return bool(r["undone"])
    return False
