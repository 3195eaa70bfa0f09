"""When a memory was true: its validity interval, and recall as of a date (``recall --as-of``).

Every memory carries, beside ``last_confirmed`` (when it was last seen holding), the interval in which
it was true, as ISO dates in its metadata:

- ``valid_from``: when it became true. Stamped at the provenance stage (consolidate/pipeline/stages/provenance.py)
  from its notes: an imported AGENTS.md entry's ``since`` date, else its ``confirmed`` date (the
  teammate's observation), else the date of the run that wrote it. Also in its provenance and in the
  ``memory.written`` event.
- ``valid_to``: when it stopped being true; absent while it holds. Set by the apply stage on every
  entry taken out of the recall index (superseded, forgotten, expired, re-judged away: the
  ``archive`` and ``tombstone`` updates of a plan, :func:`stamp_plan`): the date the statement that
  superseded it became true, else the date of the run that took it out. It is in the archived copy
  (``archive/<id>.json``) and in the update's event (``changes``).

A store written before these fields existed reads sensibly (:func:`validity`): ``valid_from`` is the
earlier of the provenance date (the run that wrote it) and ``last_confirmed``; ``valid_to`` of an
archived entry is its archive date.

``recall --as-of`` (consolidate/pipeline/recall.py ``as_of``) answers "what did the store hold on DATE": the memories valid on that date, the ones
superseded since included (the one view where a superseded memory appears; marked ``[superseded
YYYY-MM-DD]`` by :func:`as_of_suffix`). Forgotten and undone entries never come back this way (the
user took them out).
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from consolidate.core.vocab import ENDED_STATUSES, LIVE_STATUSES

#: Archived statuses an as-of recall still shows for the dates they held.
AS_OF_ARCHIVED = ENDED_STATUSES


def _date(value: Any) -> str | None:
    """``YYYY-MM-DD`` from an ISO date or date-time string, else None."""
    if not isinstance(value, str) or len(value) < 10:
        return None
    try:
        return _dt.date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        return None


def _provenance(meta: dict[str, Any]) -> dict[str, Any]:
    raw = meta.get("provenance")
    if isinstance(raw, dict):
        return raw
    try:
        prov = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {}
    return prov if isinstance(prov, dict) else {}


def validity(meta: dict[str, Any], archived_at: str | None = None) -> tuple[str | None, str | None]:
    """``(valid_from, valid_to)`` of a memory's metadata, as ISO dates (None: not known / still true).

    Metadata without the fields (an older store) reads as described in the module docstring;
    ``archived_at`` is the archive copy's time stamp (``archive/<id>.json``), the end of an archived
    entry that names none. A ``valid_to`` before ``valid_from`` (written by an older version) reads as
    the archive date when that is later, else ``valid_from`` (the entry held for that day at most)."""
    start = _date(meta.get("valid_from")) or _date(_provenance(meta).get("valid_from"))
    if start is None:
        known = [d for d in (_date(_provenance(meta).get("date")), _date(meta.get("last_confirmed"))) if d]
        start = min(known) if known else None
    end = _date(meta.get("valid_to"))
    if end is None and meta.get("status") not in (None, *LIVE_STATUSES):
        end = _date(archived_at)
    if start and end and end < start:  # written so before the stage checked it: it held until archived
        archived = _date(archived_at)
        end = archived if archived and archived > start else start
    return start, end


def valid_on(meta: dict[str, Any], day: str, archived_at: str | None = None) -> bool:
    """Whether the memory held on ``day`` (ISO date): ``valid_from <= day`` (an unknown start holds
    from the beginning) and ``day < valid_to`` (a memory superseded on a day held until that day)."""
    start, end = validity(meta, archived_at)
    return (start is None or start <= day) and (end is None or day < end)


def observed_on(note_metadata: list[dict[str, Any]], today: str) -> tuple[str, str]:
    """``(last_confirmed, valid_from)`` of a memory made from notes with these metadata dicts:
    the latest ``confirmed`` date they carry and the earliest ``since`` (else ``confirmed``) date,
    each never later than ``today``; ``today`` for notes that carry none (a note of this session)."""
    confirmed, since = [], []
    for m in note_metadata:
        c = _date(m.get("confirmed")) if isinstance(m.get("confirmed"), str) and len(m["confirmed"]) == 10 else None
        if c is None:
            return today, today  # a note of this session: observed today
        confirmed.append(c)
        since.append(_date(m.get("since")) or c)
    if not confirmed:
        return today, today
    return min(max(confirmed), today), min(min(since), today)


def plan_day(plan) -> str:
    """The UTC date of the plan's run (``plan.started_at``)."""
    return _dt.datetime.fromtimestamp(plan.started_at, _dt.timezone.utc).date().isoformat()


def candidate_dates(plan, candidate) -> tuple[str, str]:
    """``(last_confirmed, valid_from)`` of a keeper of ``plan`` (:func:`observed_on` over its
    notes' metadata; a note the plan no longer holds counts as one of this session)."""
    metas = []
    for nid in candidate.note_ids:
        try:
            metas.append(plan.note(nid).metadata or {})
        except (KeyError, AttributeError):
            metas.append({})
    return observed_on(metas, plan_day(plan))


def stamp_plan(plan) -> None:
    """Give every entry a plan takes out of the recall index (``archive`` and ``tombstone``
    updates) its ``valid_to``: the one the stage named (the superseding statement's ``valid_from``),
    else the plan's date. Called by the apply stage before the journal is written, so a replay
    writes the same date."""
    today = plan_day(plan)
    for u in plan.updates:
        u.changes.pop("_valid_from", None)  # the contradiction stage's note to provenance: never stored
        if u.action in ("archive", "tombstone") and not u.changes.get("valid_to"):
            u.changes["valid_to"] = today


def parse_day(text: str, now: float | None = None) -> str:
    """The ISO date a user's ``--as-of`` names, read as every date option is
    (consolidate.core.dates.parse_user_date: ``2026-07-14``, ``2026-07``, ``yesterday``, ``3 days
    ago``; the day in the user's time zone). Raises BadInput (one line) for anything else."""
    from consolidate.core.dates import parse_user_date  # noqa: PLC0415 - off the SessionStart hook path (core.dates)

    return parse_user_date(text, now=now, what="--as-of date").date().isoformat()


def as_of_suffix(meta: dict[str, Any]) -> str:
    """`` [superseded 2026-11-02]`` for an entry no longer true (an as-of answer), else ''."""
    if meta.get("status") in (None, *LIVE_STATUSES):
        return ""
    end = validity(meta, meta.get("archived_at"))[1]
    return f" [{meta.get('status')}{' ' + end if end else ''}]"
