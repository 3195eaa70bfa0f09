"""The forgotten statements of a store (``archive/forgotten.jsonl``): what ``consolidate forget``
laid (consolidate/pipeline/forget.py) and a later keeper must not bring back
(consolidate/pipeline/stages/provenance.py). One row per forgotten memory: ``{id, statement, type,
run_id, reason, forgotten_at}``. Read, appended and lifted here only."""

from __future__ import annotations

import difflib
import json
from typing import Any

from consolidate.core.jsonl import append_lines, drop_lines, read_lines
from consolidate.core.normal import fixed_words, text_key
from consolidate.store.layout import FORGOTTEN
from consolidate.rules.persisted import gate_record

#: Two statements this similar (difflib ratio over their consolidate.core.normal.text_key), with the same
#: numbers, relations and negations (consolidate.core.normal.fixed_words), are the same statement.
SIMILAR = 0.9


def path(store):
    """``archive/forgotten.jsonl`` of ``store``."""
    return store.sub(FORGOTTEN)


def tombstones(store) -> list[dict[str, Any]]:
    """The forgotten statements: ``[{id, statement, type, run_id, reason, forgotten_at}]``."""
    return [row for row in read_lines(path(store)) if isinstance(row.get("statement"), str)]  # torn lines skipped


def forgotten_match(store, statement: str, rows: list[dict] | None = None) -> dict[str, Any] | None:
    """The tombstone whose statement is ``statement`` (one text_key, or SIMILAR alike with the same
    fixed words: a forgotten "port 5432" does not hold back a new "port 5433", nor "do not use X"
    a "do use X"), or None."""
    rows = tombstones(store) if rows is None else rows
    folded = text_key(statement)
    fixed = fixed_words(folded)
    for row in rows:
        other = text_key(row["statement"])
        if other == folded or (difflib.SequenceMatcher(None, other, folded).ratio() >= SIMILAR
                               and fixed_words(other) == fixed):
            return row
    return None


def append(store, row: dict[str, Any]) -> None:
    """Append one forgotten statement (its row, see the module docstring)."""
    append_lines(path(store), [json.dumps(gate_record(row), ensure_ascii=False) + "\n"])


def lift(store, run_id: str | None = None, ids: set[str] | None = None, keep: set[str] | frozenset[str] = frozenset()
         ) -> int:
    """Remove the tombstones laid by ``run_id`` (``consolidate undo`` of a forget), or those of the
    memory ids ``ids`` (a forget undone on another machine of the team), but those of the ids ``keep``;
    returns how many."""
    return drop_lines(path(store), lambda row: row.get("id") not in keep and (
        (run_id is not None and row.get("run_id") == run_id) or bool(ids and row.get("id") in ids)))
