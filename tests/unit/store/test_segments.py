"""The segment rule of resumed sessions (consolidate/store/sessions/segments.py), on a real session
tier and on the fast SessionStart's plain connection (LightTier): the same decisions on both."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from consolidate.store.sessions.segments import (SEGMENT_SEP, base_of, open_segment, record_start, resumed_part,
                                                 session_for_end)
from consolidate.store.sessions.tables import LightTier, connect
from consolidate.store.sessions.tier import SessionTier


@pytest.fixture(params=["tier", "light"])
def tiers(request, tmp_path):
    """``(reader, ender)``: the tier the rule reads (SessionTier or LightTier on one connection) and a
    SessionTier on the same file that records the ends."""
    path = tmp_path / "sessions.sqlite3"
    ender = SessionTier(path)
    ender.count("x")  # the file and its tables
    reader = ender if request.param == "tier" else LightTier(connect(str(path)))
    yield reader, ender
    if reader is not ender:
        reader.db.close()
    ender.close()


def test_a_session_without_an_end_is_its_own_part(tiers):
    tier, _ = tiers
    assert record_start(tier, "abc", transcript_path="/t/abc.jsonl", cwd="/p", source="startup", now=1.0) == "abc"
    assert open_segment(tier, "abc") is None
    assert session_for_end(tier, "abc") == "abc" and resumed_part(tier, "abc") == "abc"


def test_a_resume_after_the_end_opens_a_segment_and_its_end_ends_it(tiers):
    tier, ender = tiers
    record_start(tier, "abc", now=1.0)
    ender.end("abc", "success")
    first = record_start(tier, "abc", source="resume", now=2.0)
    assert first == f"abc{SEGMENT_SEP}1" and base_of(first) == "abc"
    assert record_start(tier, "abc", source="resume", now=3.0) == first  # still open: the same part
    assert session_for_end(tier, "abc") == first and resumed_part(tier, "abc") == first
    ender.end(first, "success")
    assert open_segment(tier, "abc") is None and session_for_end(tier, "abc") == "abc"
    assert record_start(tier, "abc", source="resume", now=4.0) == f"abc{SEGMENT_SEP}2"


def test_resumed_part_never_raises():
    class Broken:
        db = None

        def session_end(self, sid):
            raise sqlite3.OperationalError("attempt to write a readonly database")

    assert resumed_part(Broken(), "abc") == "abc"


@given(st.text(min_size=1, max_size=40).filter(lambda s: SEGMENT_SEP not in s), st.integers(min_value=1, max_value=10**6))
def test_base_of_a_segment_is_the_agent_session(sid, n):
    assert base_of(f"{sid}{SEGMENT_SEP}{n}") == sid
    assert base_of(sid) == sid
