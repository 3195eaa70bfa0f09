"""Undo reaches the importers' memory of what they imported: a source imported again after
``consolidate undo`` of the run that consolidated it is imported again, not taken as done.

``import --agents-md`` takes a block as imported when its session ``agents-md-<digest>`` has an end,
and ``import-transcripts`` keeps a ledger of the transcripts (and entries) it imported. Neither knew of
undo: after ``consolidate undo RUN_ID`` of the import's run the memories were gone, yet the same block
or transcript was refused as already imported. Here both ask the undo records (consolidate/snapshots.py)
which of a session's runs were undone. Read-only: nothing is written at undo time, so an undo of a
run of any other kind, an interrupted undo finished later, and a team's undo need nothing more.
"""

from __future__ import annotations

from typing import Any


def session_runs(store, session_id: str) -> list[dict[str, Any]]:
    """The runs with an undo record that consolidated ``session_id``, oldest first (snapshots.list_runs
    rows: ``run_id``, ``started_at`` in Unix seconds, ``undone``)."""
    from .snapshots import list_runs

    return sorted((r for r in list_runs(store) if r["session_id"] == session_id), key=lambda r: r["started_at"])


def all_undone(store, session_id: str) -> bool:
    """Whether ``session_id`` was consolidated by at least one run with an undo record and every such
    run was undone: what the session brought into memory is gone (a run that wrote nothing has no
    record and could not be undone)."""
    runs = session_runs(store, session_id)
    return bool(runs) and all(r["undone"] for r in runs)


def undone_at(runs: list[dict[str, Any]], ts: float | None) -> bool:
    """Whether the notes written at ``ts`` (Unix seconds; None: before any run) were consolidated by an
    undone run: the first of ``runs`` (oldest first) that started at or after ``ts`` (a run takes every
    note queued before it starts). False while no run took them yet."""
    for r in runs:
        if ts is None or r["started_at"] >= ts:
            return bool(r["undone"])
    return False
