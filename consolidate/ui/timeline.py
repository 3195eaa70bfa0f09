"""The overview's counts over time, replayed from the event log (consolidate.store.events).

:func:`timeline` walks the log once, in order, keeping each memory's status: a ``memory.written``
line sets it (the transient tier is never indexed, so it is not counted), an update or archive
line whose ``changes`` carry a ``status`` changes it, and a ``memory.undone`` line puts back what the
memory was before the undone run touched it (absent for one the run added). After each
``run.applied`` and ``run.undone`` line it takes a point: how many memories have each status. Each
run that judged notes also gives a bar: notes judged, kept and dropped (its ``run.applied``
summary)."""

from __future__ import annotations

from typing import Any

from consolidate.core.vocab import LIVE_STATUSES
from consolidate.store import events

#: The statuses the chart draws; every other status (superseded, forgotten, declined, ...) counts
#: as ``archived``.
SERIES = (*LIVE_STATUSES, "archived")


def _apply(ev: dict[str, Any], status: dict[str, str], before: dict[str, dict[str, str | None]]) -> bool:
    """Fold one event line into ``status``; True when it ends a run (a point is due)."""
    kind, mid, rid = ev.get("event"), ev.get("memory_id"), ev.get("run_id")
    if kind in ("run.applied", "run.undone"):
        return True
    if not isinstance(mid, str) or not isinstance(rid, str):
        return False
    if kind == "memory.undone":
        old = before.get(rid, {}).get(mid)
        if old is None:
            status.pop(mid, None)
        else:
            status[mid] = old
        return False
    changes: dict[str, Any] = ev["changes"] if isinstance(ev.get("changes"), dict) else {}
    new = ev.get("status") if kind == "memory.written" and ev.get("tier") != "transient" else changes.get("status")
    if isinstance(new, str):
        before.setdefault(rid, {}).setdefault(mid, status.get(mid))
        status[mid] = new
    return False


def timeline(store) -> dict[str, Any]:
    """``{"points": [{"at": ts, "run_id", "counts": {series: n}}], "runs": [{"run_id", "at", "notes",
    "kept", "dropped"}], "series": SERIES}``, oldest first (both empty for a store without a log)."""
    status: dict[str, str] = {}
    before: dict[str, dict[str, str | None]] = {}
    points: list[dict[str, Any]] = []
    bars: list[dict[str, Any]] = []
    if not store.exists:
        return {"points": points, "runs": bars, "series": list(SERIES)}
    for ev in events.read(store):
        if not _apply(ev, status, before):
            continue
        counts = dict.fromkeys(SERIES, 0)
        for s in status.values():
            counts[s if s in LIVE_STATUSES else "archived"] += 1
        points.append({"at": str(ev.get("ts") or ""), "run_id": ev.get("run_id"), "event": ev.get("event"),
                       "counts": counts})
        summary: dict[str, Any] = ev["summary"] if isinstance(ev.get("summary"), dict) else {}
        if ev.get("event") == "run.applied" and summary.get("notes"):
            bars.append({"run_id": ev.get("run_id"), "at": str(ev.get("ts") or ""), "notes": summary.get("notes", 0),
                         "kept": summary.get("notes_keep", 0), "dropped": summary.get("notes_drop", 0)})
    return {"points": points, "runs": bars, "series": list(SERIES)}
