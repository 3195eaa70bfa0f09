"""Recall echoes (issue 15, seam 5): a memory the store showed a session (SessionStart context, MCP
recall, CLI or Python recall) that comes back from that session as a note is an echo: it never
re-confirms the memory. The same note from a session that was not shown the memory does.

Filed before as tests/test_echo.py (issue 15).
"""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

import consolidate
from consolidate.store.sessions.agents import ancestors, record_start
from consolidate.agents.hooks.full import run_hook
from consolidate.mcp.server import build_server
from consolidate.pipeline.run import run_queue
from consolidate.store.views.context_md import write as write_context
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import keep

MEMORY = "Integration tests need the local Postgres container started with make db-up first"


def _seed(store) -> str:
    """One active memory at medium confidence, and memory/context.md listing it."""
    lt = store.longterm()
    [vec] = lt.embed([MEMORY])
    lt.upsert([{"id": "mem-seed", "document": MEMORY, "embedding": vec, "metadata": {
        "type": "fact", "status": "active", "tier": "durable", "evidence": "observed-success", "confidence": "medium",
        "last_confirmed": "2026-06-01", "scope": store.project, "session_id": "s0", "run_id": "seed",
        "source": "flagged", "prompt_version": "", "provenance": "{}", "fields": "{}"}}])
    write_context(store, store.project)
    return "mem-seed"


def _judge():
    return JudgeChain([ScriptedJudge({"Postgres": keep(MEMORY)})])


def _run(store, sid):
    store.sessions.end(sid, "success")
    [plan] = run_queue(store, chain_factory=_judge)
    meta = store.longterm().get(["mem-seed"])["mem-seed"]["metadata"]
    return plan, meta


def _transcript(tmp_path, text: str):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"type": "assistant", "uuid": "a1", "message": {"content": [
        {"type": "text", "text": text}]}}) + "\n")
    return str(path)


def test_context_printed_at_session_start_then_repeated_is_not_a_reconfirmation(minilm_store, tmp_path):
    """The reported case: medium memory printed at SessionStart, repeated by the assistant, harvested."""
    store = minilm_store
    _seed(store)
    _, text = run_hook(store.path, payload={"hook_event_name": "SessionStart", "session_id": "s1"})
    assert MEMORY in text
    run_hook(store.path, payload={"hook_event_name": "SessionEnd", "session_id": "s1",
                                  "transcript_path": _transcript(tmp_path, f"Remember: {MEMORY}.")},
             harvest_notes=True, spawn=False)
    [plan] = run_queue(store, chain_factory=_judge)
    meta = store.longterm().get(["mem-seed"])["mem-seed"]["metadata"]
    assert meta["confidence"] == "medium" and meta["last_confirmed"] == "2026-06-01"  # untouched
    assert not plan.reconfirmations and not plan.writes()
    [dup] = [e for e in plan.events if e["event"] == "candidate.duplicate"]
    assert dup["echo"] is True and "showed this session" in dup["reason"]


def test_the_same_note_from_a_session_not_shown_the_memory_reconfirms(minilm_store):
    store = minilm_store
    _seed(store)
    _, text = run_hook(store.path, payload={"hook_event_name": "SessionStart", "session_id": "other"})
    store.sessions.add_note("s2", "Postgres container must be up (make db-up) before integration tests")
    plan, meta = _run(store, "s2")
    assert [r.memory_id for r in plan.reconfirmations] == ["mem-seed"] and meta["confidence"] == "high"


def test_mcp_recall_then_note_in_the_same_session_is_an_echo(minilm_store):
    store = minilm_store
    _seed(store)
    record_start(store.sessions, "agent-1", pids=ancestors())  # as the SessionStart hook of our agent does

    async def main():
        async with Client(build_server(store, spawn=None)) as client:
            got = (await client.call_tool("recall", {"query": "how to start Postgres for the integration tests"}))
            assert got.structured_content["memories"][0]["id"] == "mem-seed"
            r = await client.call_tool("note", {"content": "Postgres must be started (make db-up) first"})
            assert not r.is_error

    anyio.run(main)
    assert store.sessions.count("agent-1") == 1
    plan, meta = _run(store, "agent-1")
    assert not plan.reconfirmations and meta["confidence"] == "medium"


@pytest.mark.parametrize("where", ["python", "cli"])
def test_a_recall_outside_any_session_counts_for_sessions_written_after_it(minilm_store, where, capsys):
    store = minilm_store
    _seed(store)
    if where == "python":
        assert consolidate.recall(store, "Postgres for integration tests").memories
    else:
        from consolidate.cli.main import main

        assert main(["recall", "--store", str(store.path), "Postgres for integration tests"]) == 0
        assert MEMORY in capsys.readouterr().out
    store.sessions.add_note("s3", "Postgres container must be up (make db-up) before integration tests")
    plan, meta = _run(store, "s3")
    assert not plan.reconfirmations and meta["confidence"] == "medium"



# -- the workspace (issue 15, seam 5 through the workspace): context/memories.md is text from the store


def _shown(store, sid) -> set[str]:
    from consolidate.store.echo import shown_to

    return shown_to(store.sessions, sid)


def _forget_shown(store) -> None:
    """Clear the record of what was shown (to test one read route at a time)."""
    store.sessions.db.execute("DELETE FROM shown")


@pytest.mark.parametrize("task", ["start Postgres for the integration tests", None])
def test_memories_given_in_a_workspace_context_then_noted_are_echoes(minilm_store, task):
    """With a task (recall on it) or without (the store's top memories), context/memories.md shows the
    memory to the session: a note saying it again is an echo, not a re-confirmation."""
    from consolidate.store.echo import digest
    from consolidate.pipeline.workspace import start

    store = minilm_store
    _seed(store)
    ws, _info = start(store, "ws-1", task=task)
    assert MEMORY in ws.read("context/memories.md")["content"]
    assert digest(MEMORY) in _shown(store, "ws-1")
    store.sessions.add_note("ws-1", "Postgres container must be up (make db-up) before integration tests")
    plan, meta = _run(store, "ws-1")
    assert not plan.reconfirmations and meta["confidence"] == "medium" and meta["last_confirmed"] == "2026-06-01"
    [dup] = [e for e in plan.events if e["event"] == "candidate.duplicate"]
    assert dup["echo"] is True and dup["memory_id"] == "mem-seed"


def test_memories_given_in_a_workspace_context_then_written_to_output_are_echoes(minilm_store):
    """The memory copied from context/memories.md into output/ and extracted (the workspace's own
    write-back path, on complete) is an echo too; another session writing the same is not."""
    from consolidate.pipeline.workspace import start

    store = minilm_store
    _seed(store)
    ws, _ = start(store, "ws-2", task="Postgres integration tests")
    ws.write("output/memory.md", "- Postgres container must be up (make db-up) before integration tests\n")
    done = ws.complete("success")
    assert done["extracted"] == 1
    [plan] = run_queue(store, chain_factory=_judge)
    meta = store.longterm().get(["mem-seed"])["mem-seed"]["metadata"]
    assert not plan.reconfirmations and meta["confidence"] == "medium"
    other, _ = start(store, "ws-3")  # its context lists the top memories too
    _forget_shown(store)  # as if it had not been shown: then it is an independent observation
    other.write("output/memory.md", "- Postgres container must be up (make db-up) before integration tests\n")
    other.complete("success")
    [plan] = run_queue(store, chain_factory=_judge)
    assert [r.memory_id for r in plan.reconfirmations] == ["mem-seed"]


@pytest.mark.parametrize("route", ["python", "cli", "cli-json", "mcp"])
def test_every_workspace_read_of_context_memories_records_what_it_showed(minilm_store, route, capsys):
    """session_read over MCP, `consolidate session read` and Workspace.read each record the memories
    of context/memories.md as shown to the session (not only session start)."""
    from consolidate.store.echo import digest
    from consolidate.pipeline.workspace import start

    store = minilm_store
    _seed(store)
    ws, _ = start(store, "ws-r", task="Postgres integration tests")
    _forget_shown(store)
    assert digest(MEMORY) not in _shown(store, "ws-r")
    if route == "python":
        assert MEMORY in ws.read("context/memories.md")["content"]
    elif route.startswith("cli"):
        from consolidate.cli.main import main

        extra = ["--json"] if route == "cli-json" else []
        assert main(["session", "read", "--store", str(store.path), "--session", "ws-r", *extra,
                     "context/memories.md"]) == 0
        assert MEMORY in capsys.readouterr().out
    else:
        async def main_():
            async with Client(build_server(store, spawn=None)) as client:
                got = await client.call_tool("session_read", {"session_id": "ws-r", "path": "context/memories.md"})
                assert not got.is_error and MEMORY in got.structured_content["content"]

        anyio.run(main_)
    assert digest(MEMORY) in _shown(store, "ws-r")
    assert digest(MEMORY) not in _shown(store, "someone-else")


@pytest.mark.parametrize("route", ["session-start", "mcp-recall", "cli-recall", "python-recall"])
def test_every_read_path_records_what_it_showed(minilm_store, route, capsys):
    """SessionStart context, MCP recall, CLI recall and Python recall each leave a `shown` row with the
    memory's digest: for the session they showed it to (hook, MCP with a current session) or for no
    session in particular (CLI, Python)."""
    from consolidate.store.echo import digest

    store = minilm_store
    _seed(store)
    sid = None
    if route == "session-start":
        sid = "hook-1"
        _, text = run_hook(store.path, payload={"hook_event_name": "SessionStart", "session_id": sid})
        assert MEMORY in text
    elif route == "mcp-recall":
        sid = "agent-r"
        record_start(store.sessions, sid, pids=ancestors())

        async def main_():
            async with Client(build_server(store, spawn=None)) as client:
                got = await client.call_tool("recall", {"query": "Postgres for integration tests"})
                assert got.structured_content["memories"][0]["id"] == "mem-seed"

        anyio.run(main_)
    elif route == "cli-recall":
        from consolidate.cli.main import main

        assert main(["recall", "--store", str(store.path), "Postgres for integration tests"]) == 0
        assert MEMORY in capsys.readouterr().out
    else:
        assert consolidate.recall(store, "Postgres for integration tests").memories
    rows = store.sessions.db.execute("SELECT session_id, digests FROM shown").fetchall()
    assert [(s, digest(MEMORY) in json.loads(d)) for s, d in rows] == [(sid, True)]
