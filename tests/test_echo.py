"""Recall echoes (issue 15, seam 5): a memory the store showed a session (SessionStart context, MCP
recall, CLI or Python recall) that comes back from that session as a note is an echo: it never
re-confirms the memory. The same note from a session that was not shown the memory does."""

from __future__ import annotations

import json
import os

import anyio
import pytest
from mcp import Client

import consolidate
from consolidate.agent_session import ancestors, record_start
from consolidate.hook import run_hook
from consolidate.mcp_server import build_server
from consolidate.pipeline import run_queue
from consolidate.stages.apply import write_context
from judges.chain import JudgeChain
from judges.scripted import ScriptedJudge

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
        from consolidate.cli import main

        assert main(["recall", "--store", str(store.path), "Postgres for integration tests"]) == 0
        assert MEMORY in capsys.readouterr().out
    store.sessions.add_note("s3", "Postgres container must be up (make db-up) before integration tests")
    plan, meta = _run(store, "s3")
    assert not plan.reconfirmations and meta["confidence"] == "medium"

