"""Cold copies and tombstones (``archive/`` in the store).

``archive/<memory-id>.json`` is a full-fidelity copy of an entry taken out of the recall index
(superseded, expired, re-judged away, undone). ``archive/tombstones.jsonl`` lists ids that must never
come back: a late or replayed write of a tombstoned id is refused.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from consolidate.core.atomic import write_json_atomic
from consolidate.store.layout import ARCHIVE, TOMBSTONES
from consolidate.rules.persisted import gate, gate_record
from consolidate.core.jsonl import append_lines, drop_lines, read_lines


def _folder(store) -> Path:
    return store.sub(ARCHIVE)


def save(store, memory_id: str, record: dict[str, Any], reason: str, run_id: str) -> Path:
    """Write the cold copy of one entry (``record``: ``document``, ``metadata``); idempotent."""
    path = _folder(store) / f"{memory_id}.json"
    if not path.exists():
        write_json_atomic(path, gate_record({"id": memory_id, **record, "archived_reason": reason, "archived_by": run_id,
                                             "archived_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}))
    return path


def load(store, memory_id: str) -> dict[str, Any] | None:
    """The cold copy of ``memory_id``, or None."""
    try:
        return json.loads((_folder(store) / f"{memory_id}.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def records(store) -> list[dict[str, Any]]:
    """Every cold copy in ``archive/`` (``{"id", "document", "metadata", "archived_reason",
    "archived_by", "archived_at"}``), in id order; an unreadable file is skipped."""
    out = []
    for path in sorted(_folder(store).glob("*.json")):
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(row, dict) and isinstance(row.get("metadata"), dict):
            out.append(row)
    return out


def tombstones(store) -> set[str]:
    """Ids that must never be written again."""
    # a torn last line from a crash is skipped: the tombstone is re-appended by the replay
    return {row["id"] for row in read_lines(_folder(store) / TOMBSTONES.name) if isinstance(row.get("id"), str)}


def lift_tombstones(store, ids: set[str]) -> int:
    """Remove the tombstones of ``ids`` (undo, a rolled-back run); returns how many lines went."""
    if not ids:
        return 0

    return drop_lines(_folder(store) / TOMBSTONES.name, lambda row: isinstance(row.get("id"), str) and row["id"] in ids)


def tombstone(store, memory_id: str, reason: str, run_id: str) -> None:
    """Record that ``memory_id`` must never come back (idempotent)."""
    if memory_id in tombstones(store):
        return

    append_lines(_folder(store) / TOMBSTONES.name, [json.dumps({"id": memory_id, "reason": gate(reason), "run_id": run_id}) + "\n"])
