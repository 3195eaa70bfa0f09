"""The event log (``events/memory-events.jsonl`` in the store): the one owner of that file.

One JSON object a line, appended only, each flushed and fsynced: what every run decided and wrote
(``memory.written``, ``memory.superseded``, ``run.applied`` ...) and what undo reverted. A run's
lines carry its ``run_id`` and a sequence number ``seq``, so a replayed run appends only the lines
it had not written yet. A last line cut by a crash is removed before the next append. A
``memory.written`` line names its evidence as credited (``evidence``) and a judge's claim beside it
(``claimed_evidence``): consolidate.model.credit.recorded.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Iterator
from consolidate.model import credit
from consolidate.model.plan import run_summary
from consolidate.core.jsonl import append_lines, cut_torn_tail
from consolidate.core.jsonl import read_lines
from consolidate.rules.persisted import gate_record


def path_of(store) -> Path:
    """The event log's path in ``store``."""
    return store.events_path


def run_lines(plan, writes) -> list[dict]:
    """Every event line of a run, each with the run id and a sequence number (the replay key).
    ``writes``: the plan's writes (``plan.writes()``)."""

    ts = _dt.datetime.fromtimestamp(plan.started_at, _dt.timezone.utc).isoformat(timespec="seconds")
    lines = [{"ts": ts, **e} for e in plan.events]
    base = {"ts": ts, "run_id": plan.run_id, "session_id": plan.session_id}
    for c in writes:
        lines.append({**base, "event": "memory.written", "memory_id": c.memory_id, "type": c.type, "status": c.status,
                      "tier": c.tier, **credit.recorded(c.evidence, c.source, c.provenance.get("origin")), "confidence": c.confidence, "source": c.source,
                      "note_ids": c.note_ids, "reason": c.reason, "prompt_version": c.provenance.get("prompt_version"),
                      **written_detail(c)})
    for u in plan.updates:
        lines.append({**base, "event": u.event, "memory_id": u.memory_id, "action": u.action, "reason": u.reason,
                      "changes": u.changes})
    lines.append({**base, "event": "run.applied", "outcome": plan.outcome, "summary": run_summary(plan),
                  "stage_seconds": plan.stage_seconds})
    for i, line in enumerate(lines):
        line["seq"] = i
    return lines


#: Provenance links a memory.written event keeps (consolidate/pipeline/stages/provenance.py).
_LINKS = ("supersedes", "disputes", "updates", "type_inferred", "fields_missing", "external", "unfaithful", "edited")


def written_detail(c) -> dict:
    """What a ``memory.written`` event keeps besides its decision, so that the recall index can be
    rebuilt from the log (consolidate/store/index/reindex.py): the statement, the fields, the notes' origin
    (consolidate/model/credit.py), the provenance links
    and the judge's relations between entities (``[[source, kind, target]]``, consolidate.store.relations)."""
    links = {k: c.provenance[k] for k in _LINKS if c.provenance.get(k)}
    relations = getattr(c, "relations", None)
    return {"statement": c.statement, **({"fields": c.fields} if c.fields else {}),
            **({"origin": c.provenance["origin"]} if c.provenance.get("origin") else {}),
            **({"valid_from": c.provenance["valid_from"]} if c.provenance.get("valid_from") else {}),
            **({"last_confirmed": c.last_confirmed} if c.last_confirmed else {}),
            **({"links": links} if links else {}), **({"relations": relations} if relations else {})}


def append_run(store, plan, writes, replayed: bool = False) -> None:
    """Append a run's event lines (:func:`run_lines`). Idempotent: a torn last line (a crash
    mid-write) is cut off, and on a replay the lines of this run already in the log (same run id and
    seq) are not appended again. The crash point ``apply:events:partial`` tears the append (tests).
    Raises OSError when the log cannot be written."""
    path = path_of(store)
    present = _seqs_of_run(path, plan.run_id) if replayed else set()
    append(store, [x for x in run_lines(plan, writes) if x["seq"] not in present], "apply:events:partial")


def append(store, lines: list[dict], partial_point: str | None = None) -> None:
    """Append event lines (dicts, written as one JSON object a line, non-ASCII kept) in one write,
    flushed and fsynced, after cutting a torn last line. ``partial_point``: a crash point that tears
    the append (consolidate.core.jsonl.append_lines). Raises OSError when the log cannot be written."""

    path = path_of(store)
    path.parent.mkdir(parents=True, exist_ok=True)
    cut_torn_tail(path)
    lines = [gate_record(x) for x in lines]  # every free-text field: consolidate/rules/persisted.py
    append_lines(path, [json.dumps(x, ensure_ascii=False) + "\n" for x in lines], partial_point)


def read(store, *, contains: str | None = None) -> Iterator[dict]:
    """The event lines in order (a torn or damaged line skipped; none when there is no log yet);
    ``contains``: only the lines holding this text are parsed."""

    return read_lines(path_of(store), contains=contains)


def _seqs_of_run(path, run_id: str) -> set[int | None]:
    """Sequence numbers of ``run_id``'s lines already in the log (scanned only on a replay; a
    substring test comes before any JSON parsing)."""

    return {obj.get("seq") for obj in read_lines(path, contains=f'"run_id": "{run_id}"')}
