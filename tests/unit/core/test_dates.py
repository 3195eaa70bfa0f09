"""Dates and time zones (issue 15, seam 4): every date the user gives is local time, parsed with
python-dateutil; stored times are UTC with their offset; comparisons are on instants; an
unparseable date exits 2 with one line."""

from __future__ import annotations

import datetime as _dt
import json
import os

import pytest

from consolidate.core.dates import display, parse_stored, parse_user_date
from consolidate.core.errors import BadInput
from preloaded import run as run_preloaded

# 08:30 on 1 July 2026 in Sydney (AEST, +10:00) is 22:30 on 30 June in UTC
SYDNEY_MORNING = _dt.datetime(2026, 6, 30, 22, 30, tzinfo=_dt.timezone.utc).timestamp()


@pytest.fixture
def tz(monkeypatch):
    def set_tz(name: str) -> None:
        monkeypatch.setenv("TZ", name)
    return set_tz


@pytest.mark.parametrize("text", ["2026-07-01", "2026-7-1", "1 July 2026", "July 1, 2026", "2026-07-01 00:00",
                                  "2026-07-01T00:00:00+10:00"])
def test_one_day_many_spellings_same_instant(tz, text):
    tz("Australia/Sydney")
    got = parse_user_date(text)
    assert got == _dt.datetime(2026, 6, 30, 14, 0, tzinfo=_dt.timezone.utc)  # local midnight, +10:00


@pytest.mark.parametrize("zone, utc_hour", [("UTC", 0), ("America/New_York", 4), ("Asia/Kolkata", -5.5)])
def test_a_date_means_local_midnight(tz, zone, utc_hour):
    tz(zone)
    got = parse_user_date("2026-07-01").astimezone(_dt.timezone.utc)
    assert got == _dt.datetime(2026, 7, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(hours=utc_hour)


def test_relative_words_count_local_days(tz):
    tz("Australia/Sydney")
    now = SYDNEY_MORNING  # 1 July, 08:30 local
    local_midnight = _dt.datetime(2026, 6, 30, 14, 0, tzinfo=_dt.timezone.utc)
    assert parse_user_date("today", now=now) == local_midnight
    assert parse_user_date("yesterday", now=now) == local_midnight - _dt.timedelta(days=1)
    for text in ("last-week", "last week", "7 days ago", "7d", "1 week ago", "1w"):
        assert parse_user_date(text, now=now) == local_midnight - _dt.timedelta(days=7), text
    assert parse_user_date("now", now=now).timestamp() == now


@pytest.mark.parametrize("text", ["", "   ", "next blursday", "2026-13-45", "2026-02-30", "01/07/2026",
                                  "7/1/2026", "soon", "last-fortnight", "-3 days"])
def test_unparseable_or_ambiguous_dates_are_bad_input(text):
    with pytest.raises(BadInput) as err:
        parse_user_date(text)
    assert "\n" not in str(err.value)


def test_stored_times_are_utc_with_offset_and_shown_local(tz):
    from consolidate.core.dates import utc_iso

    assert utc_iso(SYDNEY_MORNING) == "2026-06-30T22:30:00+00:00"
    assert parse_stored("2026-06-30T22:30:00+00:00").timestamp() == SYDNEY_MORNING
    assert parse_stored("2026-06-30").tzinfo is not None and parse_stored("garbage") is None
    tz("Australia/Sydney")
    assert display(SYDNEY_MORNING) == "2026-07-01 08:30 +10:00"
    tz("UTC")
    assert display("2026-06-30T22:30:00+00:00") == "2026-06-30 22:30 +00:00"


def _store_with_memory_written_at(path, when: float):
    from consolidate import Store
    from consolidate.pipeline.run import run_queue
    from consolidate.judges.chain import JudgeChain
    from consolidate.judges.scripted import ScriptedJudge

    from conftest import keep

    store = Store(path, embedding="hash", project="p")
    store.sessions.add_note("s1", "the migration note", now=when)
    store.sessions.end("s1", "success", now=when)
    judge = ScriptedJudge({"migration": keep("Database migrations run before the app starts, never after")})
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([judge]), now=when)
    assert len(plan.writes()) == 1
    prov = json.loads(store.longterm().with_status("active")[0]["metadata"]["provenance"])
    store.close()
    return prov


def _batch(store_path, tz_name, since, script, *extra):
    """``consolidate batch`` in a new process whose environment holds ``TZ`` (read by consolidate.core.dates
    when a date is parsed), forked from one with chromadb imported (tests/support/preloaded.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env["TZ"] = tz_name
    return run_preloaded(["batch", "--store", str(store_path), "--embedding", "hash", "--rejudge", "--prompt-version",
                          "scripted", "--judge", f"scripted:{script}", "--since", since, *extra], env=env, timeout=120)


def _considered(out) -> int:
    """How many entries ``batch --rejudge --json`` says it considered."""
    return json.loads(out.stdout)["rejudged"]["considered"]


@pytest.mark.spawns
def test_sydney_morning_is_selected_by_its_local_date(tmp_path):
    """The reported case: a memory written at 08:30 on 1 July in Sydney, ``--since 2026-07-01``."""
    prov = _store_with_memory_written_at(tmp_path / ".memofs", SYDNEY_MORNING)
    assert prov["date"] == "2026-06-30T22:30:00+00:00"  # stored in UTC, with its offset
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"Database": {"verdict": "keep", "statement": "Database migrations run before the"
                                               " app starts, never after", "type": "fact",
                                               "evidence": "observed-success", "confidence": "high", "reason": "r"}}))
    for zone, since, considered in [("Australia/Sydney", "2026-07-01", 1), ("Australia/Sydney", "2026-7-1", 1),
                                    ("Australia/Sydney", "2026-07-02", 0), ("UTC", "2026-07-01", 0),
                                    ("UTC", "2026-06-30", 1), ("Australia/Sydney", "2026-07-01T08:29+10:00", 1),
                                    ("Australia/Sydney", "2026-07-01T08:31+10:00", 0)]:
        out = _batch(tmp_path / ".memofs", zone, since, script, "--json")
        assert out.returncode == 0, out.stderr
        assert _considered(out) == considered, (zone, since, out.stdout)


@pytest.mark.spawns
@pytest.mark.parametrize("since", ["next blursday", "2026-13-45", "01/07/2026"])
def test_batch_with_an_unparseable_since_exits_2_and_runs_nothing(tmp_path, since):
    from consolidate import Store

    store = Store(tmp_path / ".memofs", embedding="hash")
    store.sessions.add_note("q", "Deploys need the VPN up", flag=True)
    store.sessions.end("q", "success")
    store.close()
    out = _batch(tmp_path / ".memofs", "UTC", since, tmp_path / "none.json")
    assert out.returncode == 2 and out.stderr.count("\n") <= 2 and "Traceback" not in out.stderr
    assert "--since" in out.stderr
    assert Store(tmp_path / ".memofs", embedding="hash").sessions.queued()  # nothing was drained


@pytest.mark.spawns
def test_last_week_selects_what_was_written_this_week(tmp_path):
    import time

    _store_with_memory_written_at(tmp_path / ".memofs", time.time() - 3 * 86400)
    script = tmp_path / "s.json"
    script.write_text("{}")
    out = _batch(tmp_path / ".memofs", "Europe/Berlin", "last-week", script, "--json")
    assert out.returncode == 0 and _considered(out) == 1
    out = _batch(tmp_path / ".memofs", "Europe/Berlin", "yesterday", script, "--json")
    assert out.returncode == 0 and _considered(out) == 0
    out = _batch(tmp_path / ".memofs", "Europe/Berlin", "yesterday", script)  # for people: words, not a dict
    assert out.returncode == 0 and ", re-judged 0 entries considered" in out.stdout and "{" not in out.stdout


@pytest.mark.spawns
def test_batch_rejudge_prints_a_readable_summary(tmp_path):
    """`batch --rejudge` printed a raw Python dict ({'considered': 1, 'kept': 1, ...})."""
    _store_with_memory_written_at(tmp_path / ".memofs", SYDNEY_MORNING)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"Database": {"verdict": "keep", "statement": "Database migrations run before the"
                                               " app starts, never after", "type": "fact",
                                               "evidence": "observed-success", "confidence": "high", "reason": "r"}}))
    out = _batch(tmp_path / ".memofs", "UTC", "2026-06-01", script)
    assert out.returncode == 0, out.stderr
    assert "re-judged 1 entry considered (1 kept, 0 dropped, 0 left unjudged)" in out.stdout, out.stdout
    assert "{" not in out.stdout and "'" not in out.stdout
    data = json.loads(_batch(tmp_path / ".memofs", "UTC", "2026-06-01", script, "--json").stdout)
    assert data["rejudged"]["considered"] == 1 and isinstance(data["sessions"], list)
