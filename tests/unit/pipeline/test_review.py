"""The review queue (issue 21, item 6): ``consolidate review`` and the MCP ``review_*`` tools list
the quarantined, disputed and drifted memories of a MiniLM store of a hundred memories and approve,
decline or edit each; every decision is an event with evidence ``user-stated``."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import time

import anyio
import pytest
from mcp import Client

import consolidate
from consolidate import Store
from consolidate.cli.main import main
from consolidate.mcp.server import build_server
from consolidate.pipeline.run import run_queue
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import keep
import preloaded

GUESS = "The nightly export job probably retries three times before it gives up"
T30 = "The API gateway timeout is 30 seconds for every route"
T60 = "The API gateway timeout is 60 seconds for every route"
ANCHORED = "check_token() in src/auth.py rejects tokens that expired more than 30 seconds ago"
AUTH = "def check_token(token, now):\n    return token.expires_at + 30 > now\n"
TOPICS = ("the build cache", "the staging database", "the billing service", "the search index", "the docs site",
          "the mobile app", "the payment webhook", "the metrics pipeline", "the admin panel", "the mail queue")


def _run(store, sid, notes, script, relations=None):
    for text in notes:
        store.sessions.add_note(sid, text)
    store.sessions.end(sid, "success")
    judge = ScriptedJudge(script, relations=relations or {})
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([judge]), time_box=120)
    return plan


def _events(store):
    return [json.loads(x) for x in store.events_path.read_text().splitlines()]


def _ids(store):
    return {r["document"]: (r["id"], r["metadata"]["status"]) for r in store.longterm().all()}


@pytest.fixture(scope="module")
def _queued_built(tmp_path_factory):
    """A project folder (``src/auth.py`` and its ``.memofs``) built once per module: a store of 100 active
    memories plus one quarantined, two disputed and one drifted memory; each test copies it."""
    root = tmp_path_factory.mktemp("review-queued")
    store = Store(root / ".memofs", project="testproj")
    try:
        (root / "src").mkdir()
        (root / "src" / "auth.py").write_text(AUTH)
        fillers = [f"Fact {i}: {TOPICS[i % 10]} is owned by team {i} and deploys on day {i % 28 + 1}"
                   for i in range(100)]
        _run(store, "fill", fillers, lambda n: keep(n.content))
        _run(store, "s1", ["the export job seems to retry a few times", "the gateway timeout is 30 s",
                           "check_token in src/auth.py and its 30 s grace"],
             {"export": keep(GUESS, evidence="inferred", confidence="low"), "30 s grace": keep(ANCHORED),
              "gateway": keep(T30, "constraint")})
        _run(store, "s2", ["the gateway timeout is 60 s"], {"gateway": keep(T60, "constraint")},
             relations={"60 seconds": "contradicts"})
        (root / "src" / "auth.py").write_text(AUTH.replace("+ 30", "+ 60"))  # the code changed
    finally:
        store.close()
    return root


@pytest.fixture
def queued(_queued_built, tmp_path):
    """A copy (at ``tmp_path``) of the module's store of 100 active memories plus one quarantined, two
    disputed and one drifted memory."""
    shutil.copytree(_queued_built / "src", tmp_path / "src")
    shutil.copytree(_queued_built / ".memofs", tmp_path / ".memofs", symlinks=True)
    store = Store(tmp_path / ".memofs", project="testproj")
    ids = _ids(store)
    assert ids[GUESS][1] == "quarantined" and ids[T30][1] == ids[T60][1] == "disputed"
    assert sum(1 for _i, s in ids.values() if s == "active") == 101
    yield store, {k: v[0] for k, v in ids.items()}
    store.close()


def _cli(capsys, store, *args):
    code = main(["review", "--store", str(store.path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list_shows_quarantined_disputed_and_drifted_only(queued, capsys):
    store, ids = queued
    code, out, _ = _cli(capsys, store, "--list", "--json")
    rows = json.loads(out)
    assert code == 0
    by_id = {r["id"]: r for r in rows}
    assert set(by_id) == {ids[GUESS], ids[T30], ids[T60], ids[ANCHORED]}
    assert by_id[ids[GUESS]]["reasons"] == ["quarantined"]
    assert by_id[ids[T30]]["reasons"] == ["disputed"] and by_id[ids[T30]]["with"] == [ids[T60]]
    assert by_id[ids[ANCHORED]]["reasons"] == ["drifted"] and by_id[ids[ANCHORED]]["drifted"] == ["src/auth.py"]
    assert [r["reasons"][0] for r in rows] == ["disputed", "disputed", "quarantined", "drifted"]
    code, out, _ = _cli(capsys, store)  # stdin is not a terminal under pytest: the list
    assert code == 0 and "4 to review" in out and "[drifted: src/auth.py]" in out and "[quarantined]" in out
    # status counts the same queue (a fresh tester: it was absent from status)
    assert main(["status", "--store", str(store.path)]) == 0
    assert "to review: 4 memories (`consolidate review --list`)" in capsys.readouterr().out.splitlines()
    assert main(["status", "--store", str(store.path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["to_review"] == 4


def test_approve_quarantined_makes_it_active_and_user_stated(queued, capsys):
    store, ids = queued
    assert GUESS not in [h["document"] for h in consolidate.recall(store, "nightly export job retries").memories]
    code, out, _ = _cli(capsys, store, "--approve", ids[GUESS], "--reason", "I checked the job config")
    assert code == 0 and out.startswith(f"approved {ids[GUESS]}: active, user-stated")
    meta = store.longterm().get([ids[GUESS]])[ids[GUESS]]["metadata"]
    assert (meta["status"], meta["evidence"], meta["confidence"]) == ("active", "user-stated", "high")
    [decision] = [e for e in _events(store) if e["event"] == "review.approved"]
    assert decision["evidence"] == "user-stated" and decision["memory_id"] == ids[GUESS]
    assert decision["waiting_for"] == ["quarantined"] and decision["reason"] == "I checked the job config"
    assert GUESS in [h["document"] for h in consolidate.recall(store, "nightly export job retries").memories]
    assert ids[GUESS] not in [r["id"] for r in json.loads(_cli(capsys, store, "--list", "--json")[1])]


def test_approve_disputed_wins_the_dispute(queued, capsys):
    store, ids = queued
    assert _cli(capsys, store, "--approve", ids[T60])[0] == 0
    now = _ids(store)
    assert now[T60][1] == "active" and T30 not in now
    cold = json.loads(store.sub("archive", f"{ids[T30]}.json").read_text())
    assert cold["metadata"]["status"] == "superseded" and cold["metadata"]["superseded_by"] == ids[T60]
    from consolidate.store import graph

    g = graph.load(store.sub("graph"))
    assert g.has_edge(ids[T60], ids[T30], key="supersedes")


def test_decline_archives_with_a_tombstone_and_settles_the_dispute(queued, capsys):
    store, ids = queued
    code, out, _ = _cli(capsys, store, "--decline", ids[T30], "--reason", "the gateway moved to 60 s")
    assert code == 0 and f"declined {ids[T30]}" in out and f"{ids[T60]} active again" in out
    now = _ids(store)
    assert T30 not in now and now[T60][1] == "active"
    assert json.loads(store.sub("archive", f"{ids[T30]}.json").read_text())["metadata"]["status"] == "declined"
    [decision] = [e for e in _events(store) if e["event"] == "review.declined"]
    assert decision["evidence"] == "user-stated" and decision["waiting_for"] == ["disputed"]
    # like forget: a later session stating it again (not user-stated, not flagged) does not bring it back
    plan = _run(store, "s3", ["gateway 30 s again"], {"gateway": keep(T30, "constraint")})
    assert not plan.writes() and T30 not in _ids(store)
    assert any(e.get("forgotten") for e in plan.events if e["event"] == "candidate.rejected")


def test_edit_supersedes_with_the_users_wording_and_undo_restores(queued, capsys):
    store, ids = queued
    text = "The nightly export job retries five times, then pages the on-call engineer"
    code, out, _ = _cli(capsys, store, "--edit", ids[GUESS], text)
    assert code == 0 and out.startswith(f"edited {ids[GUESS]}: now mem-")
    now = _ids(store)
    assert GUESS not in now and now[text][1] == "active"
    new = store.longterm().get([now[text][0]])[now[text][0]]["metadata"]
    assert new["evidence"] == "user-stated" and new["source"] == "review" and new["confidence"] == "high"
    assert json.loads(new["provenance"])["supersedes"] == ids[GUESS]
    old = json.loads(store.sub("archive", f"{ids[GUESS]}.json").read_text())["metadata"]
    assert old["status"] == "superseded" and old["superseded_by"] == now[text][0]
    [decision] = [e for e in _events(store) if e["event"] == "review.edited"]
    assert decision["evidence"] == "user-stated" and decision["new_memory_id"] == now[text][0]
    assert text in [h["document"] for h in consolidate.recall(store, "how many times does the export retry").memories]
    run_id = decision["run_id"]
    assert main(["undo", "--store", str(store.path), run_id]) == 0
    back = _ids(store)
    assert back[GUESS][1] == "quarantined" and text not in back


def test_approve_drifted_reanchors_it_on_todays_code(queued, capsys):
    store, ids = queued
    assert ids[ANCHORED] in _cli(capsys, store, "--list")[1]  # the drift check queues it for re-judging
    assert ids[ANCHORED] in consolidate.store.anchors.read_section(store.path)["drifted"]
    assert _cli(capsys, store, "--approve", ids[ANCHORED])[0] == 0
    section = consolidate.store.anchors.read_section(store.path)
    assert ids[ANCHORED] not in section["drifted"]
    assert not consolidate.store.anchors.check(store.path, [ids[ANCHORED]])
    hits = consolidate.recall(store, "what does check_token reject").memories
    assert hits[0]["document"] == ANCHORED and not hits[0]["metadata"].get("drifted")
    assert _cli(capsys, store, "--list", "--json")[1].count(ids[ANCHORED]) == 0


def test_edit_of_a_drifted_memory_is_anchored_afresh(queued, capsys):
    store, ids = queued
    text = "check_token() in src/auth.py rejects tokens that expired more than 60 seconds ago"
    assert _cli(capsys, store, "--edit", ids[ANCHORED], text)[0] == 0
    section = consolidate.store.anchors.read_section(store.path)
    new_id = _ids(store)[text][0]
    assert ids[ANCHORED] not in section["memories"] and section["memories"][new_id][0][:2] == ["src/auth.py",
                                                                                                "check_token"]
    assert not consolidate.store.anchors.check(store.path, [new_id])


@pytest.mark.parametrize("args, needle", [
    (["--approve", "mem-doesnotexist"], "unknown memory 'mem-doesnotexist'"),
    (["--decline", "mem-doesnotexist"], "unknown memory 'mem-doesnotexist'"),
    (["--edit", "mem-doesnotexist", "some new text"], "unknown memory 'mem-doesnotexist'"),
    (["--edit", "GUESS", "   "], "no text"),
    (["--edit", "GUESS", "the deploy key is ghp_" + "x7Yq2LmN9pR4sT6vW8zA1bC3dE5fG7hJ9kLm"], "secret material"),
    (["--approve", "FILLER"], "waits for no review"),
    (["--approve", ""], "no memory id"),  # an empty id is refused, not read as "list" (a fresh tester)
    (["--decline", ""], "no memory id"),
    (["--approve", "GUESS", "--decline", "GUESS"], "one of --approve, --decline, --edit"),
])
def test_bad_review_input_is_one_line_and_changes_nothing(queued, capsys, args, needle):
    store, ids = queued
    filler = next(i for d, i in ids.items() if d.startswith("Fact 7:"))
    args = [a.replace("GUESS", ids[GUESS]).replace("FILLER", filler) if a in ("GUESS", "FILLER") else a for a in args]
    before = _ids(store)
    events = len(_events(store))
    code, out, err = _cli(capsys, store, *args)
    assert code == 2 and needle in err and err.startswith("error: ") and err.count("\n") == 1
    assert _ids(store) == before and len(_events(store)) == events


def test_mcp_review_tools(queued):
    store, ids = queued

    async def run():
        async with Client(build_server(store, spawn=None)) as client:
            listed = (await client.call_tool("review_list", {})).structured_content
            assert listed["count"] == 4 and {m["id"] for m in listed["memories"]} == {
                ids[GUESS], ids[T30], ids[T60], ids[ANCHORED]}
            done = await client.call_tool("review_approve", {"memory_id": ids[GUESS]})
            assert not done.is_error and done.structured_content["status"] == "active"
            done = await client.call_tool("review_decline", {"memory_id": ids[T30], "reason": "moved to 60 s"})
            assert done.structured_content["settled"] == [ids[T60]]
            done = await client.call_tool("review_edit", {"memory_id": ids[ANCHORED], "text": "check_token() in"
                                                          " src/auth.py allows a 60 second grace after expiry"})
            assert done.structured_content["supersedes"] == ids[ANCHORED]
            bad = await client.call_tool("review_approve", {"memory_id": ids[GUESS]})
            assert bad.is_error and "waits for no review" in bad.content[0].text and "\n" not in bad.content[0].text
            left = (await client.call_tool("review_list", {})).structured_content
            assert left["count"] == 0

    anyio.run(run)
    decisions = [e for e in _events(store) if e["event"].startswith("review.")]
    assert [e["event"] for e in decisions] == ["review.approved", "review.declined", "review.edited"]
    assert all(e["evidence"] == "user-stated" for e in decisions)


@pytest.mark.spawns
def test_prompt_loop_on_a_terminal(queued):
    """``consolidate review`` with a terminal on stdin asks about each entry: approve the first
    disputed one (its partner is superseded: skipped when its turn comes), decline the quarantined
    one, edit the drifted one."""
    store, ids = queued
    master, slave = pty.openpty()
    env = {**os.environ, "CONSOLIDATE_EMBEDDING": "minilm"}
    proc = preloaded.popen(["review", "--store", str(store.path)], stdin=slave, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=env, cwd=str(store.path.parent))
    os.close(slave)
    answers = ["a", "d", "not true", "e", "check_token() in src/auth.py allows a 60 second grace"]
    for line in answers:
        os.write(master, (line + "\n").encode())
        time.sleep(0.05)
    out, err = proc.communicate(timeout=240)
    os.close(master)
    text = out.decode()
    assert proc.returncode == 0, err.decode()
    assert text.count("[a]pprove, [d]ecline, [e]dit, [s]kip, [q]uit?") == 3
    assert "settled by an earlier decision" in text
    assert "approved " in text and "declined " in text and "edited " in text and "3 decided, 0 left" in text
    assert [e["event"] for e in _events(store) if e["event"].startswith("review.")] == [
        "review.approved", "review.declined", "review.edited"]
