"""Dates the user gives and reads: one rule for every command.

- **Input** (``--since`` and any other date option): a date or a time in the user's local time zone
  (``$TZ``, else the system's), parsed with ``python-dateutil``: ``2026-07-01``, ``2026-7-1``,
  ``1 July 2026``, ``2026-07-01 08:30``, an explicit offset (``2026-07-01T08:30+10:00``, ``...Z``);
  or a relative word: ``now``, ``today``, ``yesterday``, ``last-week`` / ``last week`` (7 days
  before today), ``last-month`` (30 days), ``N days ago`` / ``N weeks ago`` / ``Nd`` / ``Nw``.
  A date without a time means the start of that day, local time. Anything else is BadInput (exit 2).
  Day-first or month-first ambiguity is not guessed: ``01/07/2026`` is refused; use ISO order.
- **Storage**: every timestamp is stored in UTC with its offset (``2026-06-30T22:30:00+00:00``).
- **Display**: times are shown in local time with their offset (``2026-07-01 08:30 +10:00``).

A stored date is compared as an instant, never as a string.
"""

from __future__ import annotations

import datetime as _dt
import re

from consolidate.core.errors import BadInput
import os
import time

_RELATIVE = re.compile(r"^(\d+)\s*(d|day|days|w|week|weeks)(?:\s+ago)?$")
_WORDS = {"today": 0, "yesterday": 1, "last-week": 7, "last week": 7, "lastweek": 7,
          "last-month": 30, "last month": 30, "lastmonth": 30}
_AMBIGUOUS = re.compile(r"^\s*\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b")


def local_zone() -> _dt.tzinfo:
    """The user's time zone: ``$TZ`` (an IANA name such as ``Australia/Sydney``), else the system's."""
    from dateutil import tz  # noqa: PLC0415 - third-party dateutil: only its callers load it

    name = os.environ.get("TZ")
    if name:
        zone = tz.gettz(name.lstrip(":"))
        if zone is not None:
            return zone
    return tz.tzlocal()


def now_local(now: float | None = None) -> _dt.datetime:
    """The current time (or the Unix time ``now``) in the local time zone, aware."""
    return _dt.datetime.fromtimestamp(time.time() if now is None else now, local_zone())


def parse_user_date(text: str, *, now: float | None = None, what: str = "date") -> _dt.datetime:
    """Parse a date the user gave (see the module docstring) into an aware datetime.

    Raises BadInput (exit 2) with a one-line message naming the accepted forms."""
    if not isinstance(text, str) or not text.strip():
        raise BadInput(f"empty {what}: give a date such as 2026-07-01, yesterday or last-week")
    raw = " ".join(text.strip().lower().split())
    today = now_local(now).replace(hour=0, minute=0, second=0, microsecond=0)
    if raw == "now":
        return now_local(now)
    if raw in _WORDS:
        return _shift_days(today, _WORDS[raw])
    m = _RELATIVE.match(raw)
    if m:
        n = int(m.group(1)) * (7 if m.group(2).startswith("w") else 1)
        return _shift_days(today, n)
    if _AMBIGUOUS.match(raw):
        raise BadInput(f"ambiguous {what} {text!r}: day and month order is not guessed; use 2026-07-01")
    from dateutil import parser  # noqa: PLC0415 - third-party dateutil: only its callers load it

    try:
        parsed = parser.isoparse(text.strip())
    except (ValueError, OverflowError):
        try:
            parsed = parser.parse(text.strip(), default=today.replace(tzinfo=None))
        except (ValueError, OverflowError, parser.ParserError):
            raise BadInput(f"bad {what} {text!r}: use a date such as 2026-07-01 (local time),"
                           " 2026-07-01T08:30+10:00, today, yesterday, last-week or '3 days ago'") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=local_zone())
    return parsed


def _shift_days(day: _dt.datetime, days: int) -> _dt.datetime:
    """``days`` calendar days before ``day`` (local midnight stays local midnight across DST)."""
    back = (day.replace(tzinfo=None) - _dt.timedelta(days=days))
    return back.replace(tzinfo=day.tzinfo)


def parse_stored(value: str | None) -> _dt.datetime | None:
    """A stored timestamp (ISO 8601, UTC with offset; a bare date is taken as UTC midnight) as an
    aware datetime; None when absent or unreadable."""
    if not value:
        return None
    from dateutil import parser  # noqa: PLC0415 - third-party dateutil: only its callers load it

    try:
        parsed = parser.isoparse(str(value))
    except (ValueError, OverflowError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=_dt.timezone.utc)


def iso(ts: float) -> str:
    """Unix seconds as an ISO date-time in UTC, to the minute (``2026-12-07T08:10Z``): a deferral's
    bounds in events and summaries (consolidate/pipeline/deferral.py)."""
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def utc_iso(ts: float) -> str:
    """Unix time as stored: ISO 8601 in UTC with its offset (``2026-06-30T22:30:00+00:00``)."""
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).isoformat(timespec="seconds")


def display(ts: float | _dt.datetime | str | None) -> str:
    """A time for people: local time with its offset, ``2026-07-01 08:30 +10:00`` ('-' for None)."""
    if ts is None:
        return "-"
    if isinstance(ts, str):
        when = parse_stored(ts)
        if when is None:
            return ts
    elif isinstance(ts, _dt.datetime):
        when = ts if ts.tzinfo else ts.replace(tzinfo=_dt.timezone.utc)
    else:
        when = _dt.datetime.fromtimestamp(ts, _dt.timezone.utc)
    local = when.astimezone(local_zone())
    offset = local.strftime("%z")
    return local.strftime("%Y-%m-%d %H:%M ") + (offset[:3] + ":" + offset[3:] if offset else "")
