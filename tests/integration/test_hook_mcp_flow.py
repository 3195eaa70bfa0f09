"""The whole agent flow with the real parts: ``consolidate install-hook`` writes the hook commands, a
stand-in agent CLI (tests/support/fake_agent.py) runs them through a shell and talks to the real MCP server
over stdio, writing notes with no session id; the SessionEnd hook's worker consolidates them.

Two agents run at once in one project, their sessions interleaved: each agent's MCP notes land in
its own session (matched through the agent process), not in the session that started last."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from consolidate import Store
from consolidate.store.sessions.tier import SessionTier
from paths import SUPPORT, TESTS

pytestmark = pytest.mark.integration

HERE = TESTS
CONSOLIDATE = [sys.executable, "-m", "consolidate"]

SCRIPT = {
    "staging database": {"verdict": "keep", "statement": "The staging database is rebuilt every night at 02:00 UTC",
                         "type": "fact", "evidence": "observed-success", "confidence": "high", "reason": "scripted"},
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    return env


FOLDERS = {"claude-code": ".claude", "gemini-cli": ".gemini"}


def install(project: Path, *args: str, agent: str = "claude-code") -> tuple[dict, str, str]:
    """Run ``consolidate install-hook AGENT ARGS`` in ``project``; returns (settings, mcp command,
    what it printed)."""
    out = subprocess.run(CONSOLIDATE + ["install-hook", agent, *args], cwd=project,
                         capture_output=True, text=True, env=_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    mcp_line = next(line for line in out.stdout.splitlines() if line.startswith("MCP server with the same store: "))
    add = mcp_line.split(": ", 1)[1]
    # claude mcp add consolidate -- CMD ... | gemini mcp add consolidate CMD ...
    mcp_command = add.split(" -- ", 1)[1] if " -- " in add else add.split("mcp add consolidate ", 1)[1]
    return json.loads((project / FOLDERS[agent] / "settings.json").read_text()), mcp_command, out.stdout


class Agent:
    """One fake agent CLI process, driven a command at a time."""

    def __init__(self, project: Path, sid: str, mcp_command: str, agent: str = "claude-code"):
        self.sid = sid
        self.proc = subprocess.Popen(
            [sys.executable, str(SUPPORT / "fake_agent.py"), str(project / FOLDERS[agent] / "settings.json"), sid,
             str(project), mcp_command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=project,
            env=_env())

    def do(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"agent {self.sid} exited ({self.proc.wait(5)})"
        return json.loads(line)

    def end(self) -> dict:
        got = self.do("end")
        assert self.proc.wait(60) == 0
        return got


def wait_done(store: Path, sids: list[str], seconds: float = 150) -> dict[str, dict]:
    tier = SessionTier(store / "sessions.sqlite3")
    deadline = time.monotonic() + seconds
    rows = {}
    while time.monotonic() < deadline:
        rows = {sid: tier.session_end(sid) for sid in sids}
        if all(r and r["status"] not in ("queued", "running") for r in rows.values()):
            break
        time.sleep(0.2)
    tier.close()
    return rows


@pytest.mark.parametrize("kind", ["claude-code", "gemini-cli"])
def test_two_agents_mcp_notes_are_consolidated_by_their_own_session_end(tmp_path, kind):
    project = tmp_path / "app"
    project.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    settings, mcp_command, printed = install(project, "--store", ".memofs", "--embedding", "hash",
                                             "--judge", f"scripted:{script}", agent=kind)
    # PreCompact only with --harvest; file-scoped recall for the file tools
    assert set(settings["hooks"]) == {"SessionStart", "SessionEnd", "PreToolUse" if kind == "claude-code" else "BeforeTool"}
    assert "judges: scripted:" in printed and "embedding: hash" in printed
    store = project / ".memofs"

    a = Agent(project, "claude-aaa", mcp_command, kind)
    b = Agent(project, "claude-bbb", mcp_command, kind)
    try:
        started = a.do("start")
        assert started["codes"] == [0] and "this is session claude-aaa" in started["stdout"]
        if kind == "gemini-cli":  # Gemini CLI reads a SessionStart hook's stdout as JSON
            context = json.loads(started["stdout"])["hookSpecificOutput"]["additionalContext"]
            assert context.startswith("consolidate: this is session claude-aaa.")
        assert "this is session claude-bbb" in b.do("start")["stdout"]  # b started last
        assert a.do("flag Release builds need the signing key from the team vault, never a local one")["id"]
        assert a.do("note The staging database is refreshed from production each night at 02:00 UTC")["id"]
        assert b.do("flag The e2e suite must run against Postgres 16, SQLite hides locking bugs")["id"]
        assert a.do("read")["session_id"] == "claude-aaa"
        assert b.do("read")["session_id"] == "claude-bbb"
        ended_a = a.end()
        assert ended_a == {"codes": [0], "count": 1}
        assert b.end() == {"codes": [0], "count": 1}
    finally:
        for agent in (a, b):
            if agent.proc.poll() is None:
                agent.proc.kill()

    rows = wait_done(store, ["claude-aaa", "claude-bbb"])
    assert rows["claude-aaa"]["status"] == "done", (store / "logs" / "worker.log").read_text()
    assert rows["claude-aaa"]["result"]["written_durable"] == 2  # the flagged note and the judged keep
    assert rows["claude-bbb"]["status"] == "done" and rows["claude-bbb"]["result"]["written_durable"] == 1
    s = Store(store, embedding="hash")
    docs = {r["document"]: r["metadata"] for r in s.longterm().with_status("active")}
    assert "The staging database is rebuilt every night at 02:00 UTC" in docs  # the scripted judge was carried
    by_session = {d: json.loads(m["provenance"])["session_id"] for d, m in docs.items()}
    assert by_session["The e2e suite must run against Postgres 16, SQLite hides locking bugs"] == "claude-bbb"
    assert by_session["The staging database is rebuilt every night at 02:00 UTC"] == "claude-aaa"
    assert s.sessions.sessions() == {}  # no orphaned notes left for a later batch
    s.close()


def test_mcp_without_a_session_start_uses_its_own_session_and_ends_it_on_close(tmp_path):
    """An MCP-only agent (no hooks): the server's own session, queued when the server closes."""
    import anyio
    from mcp import Client, StdioServerParameters

    store = tmp_path / ".memofs"
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "consolidate", "mcp", "--store", str(store), "--embedding", "hash",
                                         "--judge", "noop"], cwd=str(tmp_path), env=_env())

    async def main():
        async with Client(params, read_timeout_seconds=60) as client:
            r = await client.call_tool("note", {"content": "Deploys go out on Tuesdays only", "flag": True})
            assert not r.is_error
            return (await client.call_tool("session_read", {})).structured_content["session_id"]

    sid = anyio.run(main)
    assert sid.startswith("mcp-")
    rows = wait_done(store, [sid])
    assert rows[sid]["outcome"] == "success" and rows[sid]["status"] == "done"
    assert rows[sid]["result"]["written_durable"] == 1


def test_precompact_with_harvest_adds_transcript_notes_once(tmp_path):
    """With --harvest the PreCompact hook is installed and does something: it harvests the
    transcript; the SessionEnd harvest that follows adds nothing twice."""
    project = tmp_path / "app"
    project.mkdir()
    settings, mcp_command, _ = install(project, "--store", ".memofs", "--embedding", "hash", "--judge", "noop",
                                       "--harvest")
    assert set(settings["hooks"]) == {"SessionStart", "SessionEnd", "PreCompact", "PreToolUse"}
    entry = {"type": "assistant", "uuid": "u1", "message": {"content": [
        {"type": "text", "text": "The flaky test was a timezone bug: the fixture assumed UTC."}]}}
    (project / "transcript.jsonl").write_text(json.dumps(entry) + "\n")
    agent = Agent(project, "claude-ccc", mcp_command)
    try:
        agent.do("start")
        assert agent.do("compact") == {"codes": [0], "count": 1}
        read = agent.do("read")
        assert [n["content"] for n in read["notes"]] == ["The flaky test was a timezone bug: the fixture assumed UTC."]
        agent.do("flag Use the fixture clock, never the wall clock, in tests")
        agent.end()
    finally:
        if agent.proc.poll() is None:
            agent.proc.kill()
    rows = wait_done(project / ".memofs", ["claude-ccc"])
    assert rows["claude-ccc"]["status"] == "partial"  # consolidated; the harvested note waits for a judge (noop)
    assert rows["claude-ccc"]["result"]["written_durable"] == 1
    log = (project / ".memofs" / "logs" / "hook.log").read_text()
    assert "precompact session=claude-ccc: 1 notes harvested" in log
    assert "sessionend session=claude-ccc queued (success), 0 notes harvested" in log


def test_reinstall_without_harvest_removes_our_precompact(tmp_path):
    project = tmp_path / "app"
    project.mkdir()
    install(project, "--harvest")
    settings, _, printed = install(project)
    assert "PreCompact" not in settings["hooks"] and "removed PreCompact" in printed
