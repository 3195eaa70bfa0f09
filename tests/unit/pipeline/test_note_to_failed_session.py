"""A note to a session consolidated as a failure is refused, on every write path (new-user finding of
issue 15: it was accepted and stranded: never consolidated, never reported, since a failed session
is never ended again and batch does not take it for an orphan). The rule, one place
(``SessionTier.refuse_notes_to_a_failure``): refused in one line naming what to do (a new session
id), nothing written; a failure whose end is still queued (it may be replaced) takes notes.

And the end of an unknown session: MCP ``session_complete`` and the hooks record it (an agent's
session that wrote nothing still ended), and the answer says there was nothing to consolidate; the
CLI ``end`` refuses it (exit 3).

Filed before as tests/test_stranded_notes.py (issue 15).
"""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

from consolidate.cli.main import main
from consolidate.core.errors import BadInput
from consolidate.mcp.server import build_server
from consolidate.pipeline.run import run_queue


@pytest.fixture
def failed(store):
    """A store whose session ``f`` ended in failure and was consolidated as one."""
    store.sessions.add_note("f", "tried the migration twice, it broke the staging schema", flag=True)
    store.sessions.end("f", "failure", "tests broke")
    run_queue(store, judges=["noop"])
    assert store.sessions.session_end("f")["status"] == "failure"
    return store


def _opts(store):
    return ["--store", str(store.path), "--embedding", "hash"]


def test_cli_note_to_it_is_refused_in_one_line(failed, capsys):
    before = failed.sessions.count("f")
    assert main(["note", "--session", "f", "one more thing about the schema", *_opts(failed)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ended in failure" in err and "new session id" in err, err
    assert failed.sessions.count("f") == before


def test_a_jsonl_import_with_a_line_for_it_imports_nothing(failed, tmp_path, capsys):
    path = tmp_path / "notes.jsonl"
    path.write_text(json.dumps({"content": "a note for a fresh session", "session_id": "g"}) + "\n"
                    + json.dumps({"content": "a late note for the failed one", "session_id": "f"}) + "\n")
    before = failed.sessions.count("f")
    assert main(["import", str(path), *_opts(failed)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ended in failure" in err and "nothing was imported" in err, err
    assert failed.sessions.count("f") == before and failed.sessions.count("g") == 0


def test_the_python_api_and_a_workspace_extract_refuse_it(failed):
    with pytest.raises(BadInput, match="ended in failure"):
        failed.sessions.add_note("f", "written through the library")
    from consolidate.pipeline import workspace

    with pytest.raises(BadInput, match="ended in failure"):
        ws, _ = workspace.start(failed, "f")
        ws.write("output/memory.md", "- a finding written to the workspace of a failed session\n")
        ws.extract()
    assert all("workspace of a failed" not in n.content for n in failed.sessions.notes("f"))


def test_mcp_note_to_it_is_a_one_line_tool_error(failed):
    async def run():
        async with Client(build_server(failed, spawn=None)) as client:
            res = await client.call_tool("note", {"content": "a late note through MCP", "session_id": "f"})
            assert res.is_error and "ended in failure" in res.content[0].text and "\n" not in res.content[0].text

    anyio.run(run)
    assert all("through MCP" not in n.content for n in failed.sessions.notes("f"))


def test_a_failure_still_queued_takes_notes(store):
    store.sessions.add_note("q", "first note")
    store.sessions.end("q", "failure", "not yet consolidated")
    store.sessions.add_note("q", "a note while its end waits in the queue")  # may still be replaced by `end`
    assert store.sessions.count("q") == 2


def test_a_harvest_into_it_adds_nothing(failed, tmp_path):
    """PreCompact of an agent session that was consolidated as a failure: its harvest is refused (the
    hook logs it), nothing is added."""
    from consolidate.pipeline.harvest import add_harvest

    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "uuid": "u1", "sessionId": "f", "message": {
        "role": "user", "content": "We always deploy from the release branch, never from main"}}) + "\n")
    before = failed.sessions.count("f")
    with pytest.raises(BadInput, match="ended in failure"):
        add_harvest(failed.sessions, "f", str(transcript))
    assert failed.sessions.count("f") == before


def test_session_complete_of_an_unknown_session_is_recorded_and_says_so(store, capsys):
    """The documented rule: MCP and the hooks take any session id (an agent's session may write
    nothing), and say there was nothing to consolidate; `consolidate end` refuses it (exit 3)."""
    async def run():
        async with Client(build_server(store, spawn=None)) as client:
            res = await client.call_tool("session_complete", {"outcome": "failure", "session_id": "never-seen"})
            data = res.structured_content
            assert not res.is_error and data["notes"] == 0
            assert "has no notes" in data["note"] and "nothing will be consolidated" in data["note"]

    anyio.run(run)
    assert store.sessions.session_end("never-seen")["outcome"] == "failure"
    assert main(["end", "--session", "other-unknown", "--outcome", "success", *_opts(store)]) == 3
