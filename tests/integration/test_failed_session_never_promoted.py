"""A failed session is never promoted, by any path (issue 11, input 4): after `end --outcome failure`
and `run`, neither `batch --orphan-age 0.0001` (which took it for an orphan, overwrote its failure
record and promoted its notes as observed-success), nor a later hook or hand-typed `end --outcome
success`, nor the MCP server's session_complete promotes its notes. Realistic size: a store of 150
memories (MiniLM) and a failed session of 150 flagged notes.

Filed before as tests/test_failed_sessions.py (issue 11).
"""

from __future__ import annotations

import json

import pytest

from consolidate import Store
from consolidate.core.errors import BadInput

from many_processes import cli_env, fill_sessions, note_texts
from preloaded import run as run_preloaded

pytestmark = [pytest.mark.processes, pytest.mark.integration]


def cli(store_path, *args):
    """``python -m consolidate ARGS`` on the store, in a process forked from one with chromadb imported
    (tests/support/preloaded.py)."""
    return run_preloaded(list(args), env=cli_env(store_path), timeout=600)


def promoted_from(store_path, sid: str) -> list[dict]:
    events = [json.loads(x) for x in (store_path / "events" / "memory-events.jsonl").read_text().splitlines()]
    return [e for e in events if e.get("event") == "memory.written" and e.get("session_id") == sid]


def test_failed_session_is_never_promoted(tmp_path):
    store_path = tmp_path / ".memofs"
    fill_sessions(store_path, ["seed"], 150)
    assert cli(store_path, "run").returncode == 0
    fill_sessions(store_path, ["failed"], 150, end=False)
    assert cli(store_path, "end", "--session", "failed", "--outcome", "failure", "--reason", "tests broke").returncode == 0
    assert cli(store_path, "run").returncode == 0
    store = Store(store_path, create=False)
    count = store.longterm().count()
    record = store.sessions.session_end("failed")
    assert record["outcome"] == "failure" and store.sessions.count("failed") == 150  # kept, as a record
    store.close()

    out = cli(store_path, "batch", "--orphan-age", "0.0001")
    assert out.returncode == 0, out.stderr
    store = Store(store_path, create=False)
    assert store.sessions.session_end("failed") == record  # the failure record is not overwritten
    assert store.longterm().count() == count
    store.close()

    out = cli(store_path, "end", "--session", "failed", "--outcome", "success")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "ended in failure" in out.stderr, out.stderr
    assert cli(store_path, "run").returncode == 0
    assert cli(store_path, "batch", "--orphan-age", "0.0001").returncode == 0
    assert promoted_from(store_path, "failed") == []
    store = Store(store_path, create=False)
    assert store.longterm().count() == count and store.sessions.session_end("failed") == record
    assert not any(h["document"] in note_texts("failed", 150) for h in store.longterm().search(note_texts("failed", 3)[2], k=10))
    store.close()


def test_a_queued_failure_can_still_be_corrected_but_not_a_consolidated_one(store):
    """Before its run a session end may be replaced (the MCP tool says so); once consolidated as a
    failure it may not, through the library as through the CLI."""
    store.sessions.add_note("s", "The deploy script needs bash 5", flag=True)
    store.sessions.end("s", "failure", "wrong branch")
    store.sessions.end("s", "success")  # still queued: replaced
    assert store.sessions.session_end("s")["outcome"] == "success"
    store.sessions.add_note("t", "The deploy script needs bash 5", flag=True)
    store.sessions.end("t", "failure", "tests broke")
    from consolidate.pipeline.run import run_queue

    run_queue(store, judges=["noop"])
    for outcome in ("success", "failure", "aborted"):
        with pytest.raises(BadInput, match="ended in failure"):
            store.sessions.end("t", outcome)
    from consolidate.pipeline.batch import end_orphans

    assert "t" not in end_orphans(store, orphan_age=0.0)
