"""The session-end hook and the detached worker: never block, never fail, never lose a session end.

Filed before as tests/test_hook.py.
"""

import json
import os
import subprocess
import sys
import time

import pytest

from consolidate import Store
from consolidate.agents.hooks.full import harvest, run_hook
from consolidate.pipeline.run import run_queue
from consolidate.store.sessions.tier import SessionTier

HOOK = [sys.executable, "-m", "consolidate", "hook"]


def _env(store_path, **extra):
    env = {k: v for k, v in os.environ.items() if k != "CONSOLIDATE_JUDGE_CHILD"}
    env.update({"CONSOLIDATE_STORE": str(store_path), "CONSOLIDATE_EMBEDDING": "hash", "CONSOLIDATE_JUDGES": "noop"})
    env.update(extra)
    return env


@pytest.mark.spawns
def test_claude_session_end_queues_and_worker_consolidates(tmp_path):
    st = tmp_path / ".memofs"
    Store(st).sessions.add_note("s-claude", "Tests must run with TZ=UTC or the date fixtures fail", flag=True,
                                kind="constraint")
    payload = {"session_id": "s-claude", "transcript_path": "/nope.jsonl", "cwd": str(tmp_path),
               "hook_event_name": "SessionEnd", "reason": "prompt_input_exit", "unknown_field": {"x": 1}}
    out = subprocess.run(HOOK, input=json.dumps(payload), capture_output=True, text=True, env=_env(st), timeout=30)
    assert out.returncode == 0 and out.stdout == ""  # its latency: benchmarks/bench_hook*.py
    tier = SessionTier(st / "sessions.sqlite3")
    for _ in range(900):  # the detached worker finishes on its own (up to 90 s on a loaded machine)
        row = tier.session_end("s-claude")
        if row and row["status"] == "done":
            break
        time.sleep(0.1)
    assert row["status"] == "done" and row["result"]["written_durable"] == 1
    assert "queued (success)" in (st / "logs" / "hook.log").read_text()
    # SessionStart prints the recalled context for the next session
    out = subprocess.run(HOOK, input=json.dumps({"hook_event_name": "SessionStart", "session_id": "s2"}),
                         capture_output=True, text=True, env=_env(st), timeout=30)
    assert out.returncode == 0 and "TZ=UTC" in out.stdout and "[high, observed-success," in out.stdout


@pytest.mark.spawns
def test_stdin_that_never_closes_does_not_hang(tmp_path):
    proc = subprocess.Popen(HOOK, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(tmp_path / ".memofs"))
    proc.stdin.write(b'{"hook_event_name": "SessionEnd", "session_id": "open"}')
    proc.stdin.flush()  # and never closed
    try:
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.stdin.close()
    assert SessionTier(tmp_path / ".memofs" / "sessions.sqlite3").session_end("open") is not None


@pytest.mark.spawns
@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1,2]", b"\xff\xfe", b'{"hook_event_name": "SessionEnd"}'])
def test_garbage_input_exits_zero(tmp_path, stdin):
    out = subprocess.run(HOOK, input=stdin, capture_output=True, env=_env(tmp_path / ".memofs"), timeout=30)
    assert out.returncode == 0 and out.stderr == b""


@pytest.mark.spawns
def test_store_that_is_a_file_still_exits_zero(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    out = subprocess.run(HOOK + ["--store", str(f)], input=b'{"hook_event_name":"SessionEnd","session_id":"a"}',
                         capture_output=True, env=_env(f), timeout=30)
    assert out.returncode == 0


@pytest.mark.spawns
def test_judge_child_guard_does_nothing(tmp_path):
    st = tmp_path / ".memofs"
    out = subprocess.run(HOOK, input=b'{"hook_event_name":"SessionEnd","session_id":"g"}', capture_output=True,
                         env=_env(st, CONSOLIDATE_JUDGE_CHILD="1"), timeout=30)
    assert out.returncode == 0 and not (st / "sessions.sqlite3").exists()


@pytest.mark.parametrize("payload,sid", [
    ({"hook_event_name": "SessionEnd", "session_id": "gem-1", "reason": "exit", "timestamp": "2026-11-29"}, "gem-1"),
    ({"type": "agent-turn-complete", "thread-id": "codex-1", "turn-id": "t", "last-assistant-message": "done"}, "codex-1"),
    ({"hook_event_name": "Stop", "session_id": "claude-stop", "stop_hook_active": False}, "claude-stop"),
])
def test_other_clients_payloads(tmp_path, payload, sid):
    st = tmp_path / ".memofs"
    assert run_hook(st, payload=payload, spawn=False) == (0, "")
    assert SessionTier(st / "sessions.sqlite3").queued() == [
        {"session_id": sid, "outcome": "success", "reason": payload.get("reason"),
         "ended_at": pytest.approx(time.time(), abs=60)}]


def test_end_is_idempotent(tmp_path):
    st = tmp_path / ".memofs"
    for _ in range(3):
        run_hook(st, payload={"hook_event_name": "SessionEnd", "session_id": "same"}, spawn=False)
    assert len(SessionTier(st / "sessions.sqlite3").queued()) == 1


def test_harvest_transcript(tmp_path):
    t = tmp_path / "t.jsonl"
    lines = [
        {"type": "assistant", "uuid": "a1", "message": {"content": [
            {"type": "text", "text": "The build needs Node 20; Node 22 breaks the native addon."},
            {"type": "tool_use", "name": "Bash", "input": {}}]}},
        {"type": "user", "uuid": "u1", "message": {"content": [
            {"type": "tool_result", "is_error": True, "content": "Error: EADDRINUSE port 3000"},
            {"type": "tool_result", "is_error": False, "content": "ok"}]}},
        {"type": "summary", "summary": "whatever"},
        {"type": "assistant", "message": {"content": "plain string content"}},
    ]
    t.write_text("\n".join(json.dumps(x) for x in lines) + "\n{broken json\n", encoding="utf-8")
    got = harvest(str(t))
    # the tool error carries the text that followed it (the fix); that text is a note of its own too
    assert [g["content"] for g in got] == ["The build needs Node 20; Node 22 breaks the native addon.",
                                           "Tool error: Error: EADDRINUSE port 3000\nWhat followed: plain string content",
                                           "plain string content"]
    assert got[1]["metadata"]["source"] == "transcript:tool_error"
    assert [g["metadata"]["entry_type"] for g in got] == ["assistant", "tool_error", "assistant"]
    st = tmp_path / ".memofs"
    run_hook(st, payload={"hook_event_name": "SessionEnd", "session_id": "h", "transcript_path": str(t)},
             harvest_notes=True, spawn=False)
    notes = SessionTier(st / "sessions.sqlite3").notes("h")
    assert len(notes) == 3 and not any(n.flag for n in notes)
    # ended again (a resumed session's next end): no entry is harvested twice, even after the first
    # notes are gone (consolidated)
    tier = SessionTier(st / "sessions.sqlite3")
    tier.delete_notes([n.id for n in notes])
    run_hook(st, payload={"hook_event_name": "SessionEnd", "session_id": "h", "transcript_path": str(t)},
             harvest_notes=True, spawn=False)
    assert tier.notes("h") == []


@pytest.mark.spawns
def test_second_worker_exits_at_once(tmp_path):
    import filelock

    st = tmp_path / ".memofs"
    store = Store(st, embedding="hash")
    store.sessions.add_note("w", "a note that waits for the worker")
    store.sessions.end("w", "success")
    with filelock.FileLock(str(st / ".worker.lock")):
        out = subprocess.run([sys.executable, "-m", "consolidate", "worker"], capture_output=True, text=True,
                             env=_env(st), timeout=60)
    assert out.returncode == 0 and "another worker" in out.stdout
    assert store.sessions.queued() and store.sessions.count("w") == 1  # the queue stays


@pytest.mark.spawns
def test_dead_workers_claim_is_taken_over(tmp_path):
    store = Store(tmp_path / ".memofs", embedding="hash")
    store.sessions.add_note("d", "Feature flags are read once at startup", flag=True)
    store.sessions.end("d", "success")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    store.sessions.db.execute("UPDATE session_ends SET status='running', claimed_by=?, claimed_at=? WHERE session_id='d'",
                              (dead.pid, time.time()))
    [plan] = run_queue(store, judges=["noop"])
    assert plan.session_id == "d" and store.sessions.session_end("d")["status"] == "done"


@pytest.mark.spawns
def test_live_claim_is_respected(tmp_path):
    store = Store(tmp_path / ".memofs", embedding="hash")
    store.sessions.add_note("l", "a note")
    store.sessions.end("l", "success")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        store.sessions.db.execute("UPDATE session_ends SET status='running', claimed_by=?, claimed_at=? WHERE session_id='l'",
                                  (other.pid, time.time()))
        assert run_queue(store, judges=["noop"]) == []
        assert store.sessions.count("l") == 1
    finally:
        other.kill()


@pytest.mark.spawns
def test_session_start_json_for_gemini(tmp_path):
    st = tmp_path / ".memofs"
    (st / "memory").mkdir(parents=True)
    (st / "memory" / "core.md").write_text("- Never push to main directly\n")
    out = subprocess.run(HOOK + ["--output", "gemini"], input=b'{"hook_event_name":"SessionStart","session_id":"g"}',
                         capture_output=True, env=_env(st), timeout=30)
    data = json.loads(out.stdout)
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Never push to main" in data["hookSpecificOutput"]["additionalContext"]


def _transcript(path, megabytes: int, tail_text: str = "The last thing said") -> None:
    """A Claude Code-like transcript of about ``megabytes`` MB: assistant text, tool calls and
    results of about 2 KB each, the last assistant entry holding ``tail_text``."""
    filler = "x" * 1800
    entries = [
        {"type": "assistant", "uuid": "a", "message": {"content": [{"type": "text", "text": "Looked at the logs " + filler}]}},
        {"type": "user", "uuid": "u", "message": {"content": [{"type": "tool_result", "is_error": False, "content": filler}]}},
        {"type": "user", "uuid": "e", "message": {"content": [{"type": "tool_result", "is_error": True,
                                                               "content": "Error: ENOENT " + filler[:200]}]}},
    ]
    block = "".join(json.dumps({**e, "uuid": f"{e['uuid']}{i}"}) + "\n" for i in range(200) for e in entries)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(max(1, megabytes * 1024 * 1024 // len(block))):
            f.write(block)
        f.write(json.dumps({"type": "assistant", "uuid": "last", "message": {"content": [
            {"type": "text", "text": tail_text}]}}) + "\n")


def _measure(fn, repeat: int = 3) -> tuple[float, int, object]:
    """(median CPU seconds, peak traced bytes, result) of ``fn()``."""
    import statistics
    import tracemalloc

    times, peak, result = [], 0, None
    for _ in range(repeat):
        tracemalloc.start()
        t = time.process_time()
        result = fn()
        times.append(time.process_time() - t)
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return statistics.median(times), peak, result


def test_harvest_cost_does_not_grow_with_the_transcript(tmp_path):
    """A transcript 10x larger costs the same time and memory: the harvest reads a bounded tail."""
    from consolidate.agents.hooks.full import HARVEST_MAX_BYTES, HARVEST_MAX_ENTRIES

    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    _transcript(small, 6)
    _transcript(large, 60)
    assert large.stat().st_size > 9 * small.stat().st_size
    t_small, m_small, got_small = _measure(lambda: harvest(str(small)))
    t_large, m_large, got_large = _measure(lambda: harvest(str(large)))
    assert got_large[-1]["content"] == "The last thing said" and len(got_large) == len(got_small)
    assert m_large < 4 * HARVEST_MAX_BYTES and m_small < 4 * HARVEST_MAX_BYTES  # the memory ceiling
    assert m_large / m_small < 1.5  # not 10x
    assert t_large / max(t_small, 1e-4) < 3  # CPU time, not 10x
    assert len(got_large) <= 2 * HARVEST_MAX_ENTRIES  # at most the last entries (<= 2 candidates each)


@pytest.mark.spawns
def test_installed_hook_on_a_large_transcript_queues_and_harvests_the_end(tmp_path):
    st = tmp_path / ".memofs"
    big = tmp_path / "big.jsonl"
    _transcript(big, 40, tail_text="Node 22 breaks the native addon: pin Node 20 in .nvmrc")
    payload = {"session_id": "big", "transcript_path": str(big), "hook_event_name": "SessionEnd", "cwd": str(tmp_path)}
    out = subprocess.run(HOOK + ["--harvest", "--no-worker"], input=json.dumps(payload), capture_output=True,
                         text=True, env=_env(st), timeout=60)
    assert out.returncode == 0
    tier = SessionTier(st / "sessions.sqlite3")
    assert tier.session_end("big")["status"] == "queued"
    contents = [n.content for n in tier.notes("big")]
    assert contents[-1] == "Node 22 breaks the native addon: pin Node 20 in .nvmrc"
    assert len(contents) <= 2 * 400


def test_session_end_is_queued_before_the_harvest(tmp_path, monkeypatch):
    """A hook killed during the harvest (its time budget) has already queued the session end."""
    def killed(*_a, **_k):
        raise SystemExit("killed at the time budget")

    import consolidate.pipeline.harvest as harvest_module

    monkeypatch.setattr(harvest_module, "harvest_transcript", killed)
    st = tmp_path / ".memofs"
    with pytest.raises(SystemExit):
        run_hook(st, payload={"hook_event_name": "SessionEnd", "session_id": "k", "transcript_path": "/t.jsonl"},
                 harvest_notes=True, spawn=False)
    assert SessionTier(st / "sessions.sqlite3").session_end("k")["status"] == "queued"


def test_harvest_skips_a_fifo_instead_of_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert harvest(str(fifo)) == []
