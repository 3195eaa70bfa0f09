"""Forgetting (issue 15, seam 7): ``consolidate forget ID`` and the MCP ``forget`` tool archive a
wrong memory with a tombstone; a later session does not bring the statement back unless it is
user-stated or flagged; ``undo`` restores it and lifts the tombstone; undone runs are marked in
``memory/notes.md``."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

import consolidate
from consolidate.cli.main import main
from consolidate.mcp.server import build_server
from consolidate.pipeline.run import run_queue
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import keep

WRONG = "The API server must run on port 8080 because the load balancer only forwards that port"


def _session(store, sid, note, *, flag=False, evidence="observed-success", source=None):
    store.sessions.add_note(sid, note, flag=flag, kind="constraint" if flag else None,
                            metadata={"source": source} if source else None)
    store.sessions.end(sid, "success")
    judge = ScriptedJudge({"port": keep(WRONG, "constraint", evidence=evidence),
                           "PORT": keep(WRONG.upper().replace("BECAUSE", "because") + "!", "constraint",
                                        evidence=evidence)})
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([judge]))
    return plan


def _active(store):
    return {r["document"]: r["id"] for r in store.longterm().with_status("active", "quarantined")}


@pytest.fixture
def forgotten(minilm_store, capsys):
    store = minilm_store
    _session(store, "s1", "the api needs port 8080 for the load balancer")
    memory_id = _active(store)[WRONG]
    code = main(["forget", "--store", str(store.path), memory_id, "--reason", "the balancer forwards any port now"])
    out = capsys.readouterr().out
    assert code == 0 and f"forgot {memory_id}" in out
    return store, memory_id, out


def test_forget_archives_the_memory_and_leaves_a_trace(forgotten):
    store, memory_id, _ = forgotten
    assert WRONG not in _active(store)
    assert not consolidate.recall(store, "which port does the API server run on", min_similarity=-1).memories
    cold = json.loads(store.sub("archive", f"{memory_id}.json").read_text())
    assert cold["metadata"]["status"] == "forgotten" and cold["archived_reason"] == "the balancer forwards any port now"
    events = [json.loads(x) for x in store.events_path.read_text().splitlines()]
    assert any(e["event"] == "memory.forgotten" and e.get("memory_id") == memory_id for e in events)
    notes_md = store.notes_md_path.read_text()
    assert f"~~**constraint**: {WRONG}" in notes_md and "(forgotten " in notes_md
    assert WRONG not in store.sub("memory", "context.md").read_text()
    import stat

    assert stat.S_IMODE(store.sub("archive", "forgotten.jsonl").stat().st_mode) == 0o600  # private store


@pytest.mark.parametrize("note", ["the api needs port 8080 for the load balancer",  # the same wording
                                  "PORT 8080 again"])  # case and punctuation changed
def test_a_later_session_does_not_resurrect_it(forgotten, note):
    store, memory_id, _ = forgotten
    plan = _session(store, "s2", note)
    assert not plan.writes() and WRONG not in _active(store) and WRONG.upper() + "!" not in _active(store)
    [rejected] = [e for e in plan.events if e["event"] == "candidate.rejected"]
    assert rejected["forgotten"] is True and memory_id in rejected["reason"]


@pytest.mark.parametrize("how", ["flagged", "user-stated"])
def test_stated_again_by_the_user_or_flagged_it_comes_back(forgotten, how):
    store, _, _ = forgotten
    if how == "flagged":
        plan = _session(store, "s3", WRONG, flag=True)
    else:  # a note the user wrote (a transcript's user turn), judged user-stated
        plan = _session(store, "s3", "the api needs port 8080 for the load balancer", evidence="user-stated",
                        source="transcript:user")
    assert WRONG in _active(store)
    assert any(e["event"] == "memory.restated" for e in plan.events)


def test_a_judges_user_stated_claim_on_an_agents_note_does_not_bring_it_back(forgotten):
    """The judge saying "user-stated" of a note the agent wrote is a claim, credited observed at most
    (consolidate/pipeline/stages/credibility.py): the tombstone holds (a fresh review: such a claim
    wrote a forgotten memory again, active, on every surface that counts it)."""
    store, memory_id, _ = forgotten
    plan = _session(store, "s3", "the api needs port 8080 for the load balancer", evidence="user-stated")
    assert not plan.writes() and WRONG not in _active(store)
    assert not any(e["event"] == "memory.restated" for e in plan.events)
    [rejected] = [e for e in plan.events if e["event"] == "candidate.rejected"]
    assert rejected["forgotten"] is True and memory_id in rejected["reason"]


def test_undo_of_forget_restores_it_and_lifts_the_tombstone(forgotten, capsys):
    store, memory_id, out = forgotten
    run_id = out.split("(run ")[1].split(";")[0]
    assert main(["undo", "--store", str(store.path), run_id]) == 0
    assert _active(store)[WRONG] == memory_id
    plan = _session(store, "s4", "the api needs port 8080 for the load balancer")
    assert not any(e.get("forgotten") for e in plan.events)  # confirmed again, not rejected
    assert [r.memory_id for r in plan.reconfirmations] == [memory_id]


def test_undo_marks_the_runs_entries_in_notes_md(minilm_store, capsys):
    store = minilm_store
    plan = _session(store, "s1", "the api needs port 8080 for the load balancer")
    assert main(["undo", "--store", str(store.path), plan.run_id]) == 0
    text = store.notes_md_path.read_text()
    [heading] = [line for line in text.splitlines() if plan.run_id in line]
    assert heading.endswith("by consolidate undo)")
    assert f"- ~~**constraint**: {WRONG}" in text and WRONG not in _active(store)


def test_forget_unknown_id_is_bad_input(minilm_store, capsys):
    store = minilm_store
    _session(store, "s1", "the api needs port 8080 for the load balancer")
    assert main(["forget", "--store", str(store.path), "mem-doesnotexist"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown memory 'mem-doesnotexist'") and err.count("\n") == 1
    assert main(["forget", "--store", str(store.path / "nowhere"), "mem-x"]) == 2
    assert not (store.path / "nowhere").exists()


def test_mcp_forget_tool(minilm_store):
    store = minilm_store
    _session(store, "s1", "the api needs port 8080 for the load balancer")

    async def run():
        async with Client(build_server(store, spawn=None)) as client:
            hit = (await client.call_tool("recall", {"query": "API server port"})).structured_content["memories"][0]
            done = await client.call_tool("forget", {"memory_id": hit["id"], "reason": "wrong since the move"})
            assert not done.is_error and done.structured_content["status"] == "forgotten"
            again = await client.call_tool("forget", {"memory_id": hit["id"]})
            assert again.is_error and "unknown memory" in again.content[0].text and "\n" not in again.content[0].text
            left = (await client.call_tool("recall", {"query": "API server port"})).structured_content
            assert hit["id"] not in [m["id"] for m in left["memories"]]

    anyio.run(run)


def test_undoing_the_forget_after_the_session_that_wrote_it_brings_nothing_back(store, capsys):
    """The session that wrote a memory undone after the memory was forgotten (allowed: a later forget
    is kept), then the forget undone: the memory stays gone, its tombstone kept, the graph and the
    index in step (a fresh tester: it came back active, a memory of an undone run the graph lacked)."""
    from consolidate.pipeline import doctor

    plan = _session(store, "s1", "the api needs port 8080 for the load balancer")
    memory_id = _active(store)[WRONG]
    assert main(["forget", "--store", str(store.path), "--embedding", "hash", memory_id]) == 0
    forget_run = capsys.readouterr().out.split("(run ")[1].split(";")[0]
    assert main(["undo", "--store", str(store.path), "--embedding", "hash", plan.run_id]) == 0
    capsys.readouterr()
    assert main(["undo", "--store", str(store.path), "--embedding", "hash", forget_run]) == 0
    out = capsys.readouterr().out
    assert "restored 0" in out and "left 1 gone: the runs that wrote them were undone" in out
    assert WRONG not in _active(store) and not store.longterm().get([memory_id])
    assert doctor.check(store) == []
    again = _session(store, "s2", "the api needs port 8080 for the load balancer")
    assert not again.writes()  # its tombstone holds: the forget's undo could not bring it back


def test_a_memory_stated_again_after_its_forget_is_the_later_runs_and_refuses_the_undo(store, capsys):
    """Forgotten, then written again by a flagged note (the same id): the forget no longer keeps it, so
    undoing the session that first wrote it is refused, naming the restating run, and changes nothing
    (a fresh tester: the undo went through and took the restatement with it, the store inconsistent)."""
    from consolidate.pipeline import doctor

    first = _session(store, "s1", "the api needs port 8080 for the load balancer")
    memory_id = _active(store)[WRONG]
    assert main(["forget", "--store", str(store.path), "--embedding", "hash", memory_id]) == 0
    again = _session(store, "s2", WRONG, flag=True)
    assert _active(store)[WRONG] == memory_id and again.writes()
    capsys.readouterr()
    assert main(["undo", "--store", str(store.path), "--embedding", "hash", first.run_id]) == 2
    err = capsys.readouterr().err
    assert f"cannot be undone before {again.run_id}" in err and "nothing was changed" in err
    assert _active(store)[WRONG] == memory_id and doctor.check(store) == []
    # newest first works: the restatement undone, the first session after it; the memory stays forgotten
    assert main(["undo", "--store", str(store.path), "--embedding", "hash", again.run_id]) == 0
    assert main(["undo", "--store", str(store.path), "--embedding", "hash", first.run_id]) == 0
    assert WRONG not in _active(store) and doctor.check(store) == []
