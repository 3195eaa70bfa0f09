"""Store options given at install time reach every process the hook and the MCP server start
(issue 15, seam 3): the installed hook command, run as an agent CLI runs it, and the MCP server
started from the printed ``mcp add`` line both have their workers write to a real ``chroma run``
server under the given project, with the given judge, and nothing into a local index."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from consolidate import Store
from consolidate.store.sessions.tier import SessionTier

from test_chroma_server import chroma_server  # noqa: F401  (the fixture: a real `chroma run`)

pytestmark = pytest.mark.integration

CONSOLIDATE = [sys.executable, "-m", "consolidate"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}


def _wait(store: Path, sid: str, seconds: float = 180) -> dict:
    tier = SessionTier(store / "sessions.sqlite3")
    deadline = time.monotonic() + seconds
    row = None
    while time.monotonic() < deadline:
        row = tier.session_end(sid)
        if row and row["status"] not in ("queued", "running"):
            break
        time.sleep(0.2)
    tier.close()
    return row


@pytest.mark.chroma_server
def test_installed_hook_and_mcp_workers_write_to_the_chroma_server(tmp_path, chroma_server):  # noqa: F811
    project = tmp_path / "checkout"
    project.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"nightly": {
        "verdict": "keep", "statement": "The staging database is rebuilt every night at 02:00 UTC", "type": "fact",
        "evidence": "observed-success", "confidence": "high", "reason": "scripted"}}))
    out = subprocess.run(CONSOLIDATE + ["--chroma-url", chroma_server, "--project", "team", "install-hook",
                                        "claude-code", "--store", ".memofs", "--judge", f"scripted:{script}"],
                         cwd=project, capture_output=True, text=True, env=_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    # it says what the hooks will use
    assert f"chroma url: {chroma_server}" in out.stdout and "project: team" in out.stdout
    assert f"judges: scripted:{script}" in out.stdout and f"store: {project / '.memofs'}" in out.stdout
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    argv = shlex.split(command)
    assert argv[argv.index("--chroma-url") + 1] == chroma_server and argv[argv.index("--project") + 1] == "team"

    store = project / ".memofs"
    # notes written the plain way, then the installed SessionEnd command run as Claude Code runs it:
    # a shell, the payload on stdin, a bare environment (no CONSOLIDATE_* variables)
    subprocess.run(CONSOLIDATE + ["note", "--store", str(store), "--session", "h1", "--flag", "--kind", "constraint",
                                  "Releases are cut from the release/* branches only"],
                   check=True, capture_output=True, env=_env())
    subprocess.run(CONSOLIDATE + ["note", "--store", str(store), "--session", "h1",
                                  "The staging database is refreshed nightly at 02:00 UTC from a production snapshot"],
                   check=True, capture_output=True, env=_env())
    payload = {"session_id": "h1", "hook_event_name": "SessionEnd", "cwd": str(project), "reason": "other"}
    res = subprocess.run(command, shell=True, input=json.dumps(payload), capture_output=True, text=True,
                         env=_env(), cwd=tmp_path, timeout=60)
    assert res.returncode == 0
    row = _wait(store, "h1")
    assert row["status"] == "done", (store / "logs" / "worker.log").read_text()
    assert row["result"]["written_durable"] == 2  # the scripted judge was carried to the worker

    # the MCP server from the printed line: its worker writes to the same server
    add = next(line for line in out.stdout.splitlines() if line.startswith("MCP server with the same store: "))
    mcp_argv = shlex.split(add.split(" -- ", 1)[1])
    assert mcp_argv[mcp_argv.index("--chroma-url") + 1] == chroma_server

    async def mcp_session():
        params = StdioServerParameters(command=mcp_argv[0], args=mcp_argv[1:], cwd=str(project), env=_env())
        async with Client(params, read_timeout_seconds=120) as client:
            for args in ({"content": "Feature flags live in config/flags.toml and are read once at startup",
                          "flag": True, "kind": "fact", "session_id": "m1"},):
                assert not (await client.call_tool("note", args)).is_error
            r = await client.call_tool("session_complete", {"session_id": "m1", "outcome": "success"})
            assert r.structured_content["worker"] == "started"

    anyio.run(mcp_session)
    row = _wait(store, "m1")
    assert row["status"] == "done" and row["result"]["written_durable"] == 1, (store / "logs" / "worker.log").read_text()

    assert not (store / "chroma").exists()  # nothing in a local index
    other = Store(tmp_path / "elsewhere", chroma_url=chroma_server, project="team")
    docs = {r["document"]: r["metadata"] for r in other.longterm().with_status("active")}
    assert set(docs) == {"Releases are cut from the release/* branches only",
                         "The staging database is rebuilt every night at 02:00 UTC",
                         "Feature flags live in config/flags.toml and are read once at startup"}
    assert {m["scope"] for m in docs.values()} == {"team"}
    hits = other.longterm().search("where are feature flags configured", k=1)
    assert hits[0]["document"].startswith("Feature flags live in config/flags.toml")
