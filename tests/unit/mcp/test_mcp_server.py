"""The MCP server (``consolidate mcp``) driven by the SDK's own client: in process (``mcp.Client`` on
the server object, in the direct and the JSON-RPC in-memory modes) and once over real stdio.

Filed before as tests/test_mcp.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest

from mcp import Client, StdioServerParameters

from consolidate.mcp.server import build_server
from consolidate.pipeline.run import run_queue

TOOLS = {"note", "session_read", "recall", "session_complete", "forget", "graph",
         "review_list", "review_approve", "review_decline", "review_edit",
         "session_start", "session_write", "session_append", "session_extract"}


def call(client, name, **arguments):
    return client.call_tool(name, arguments)


def data(result):
    """The structured result of a successful call (a bare value comes wrapped as ``{"result": v}``)."""
    assert not result.is_error, result.content[0].text
    sc = result.structured_content
    return sc["result"] if set(sc) == {"result"} else sc


def error_text(result) -> str:
    assert result.is_error
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text
    return text


class Spawns:
    """A stand-in worker starter that records the stores it was given."""

    def __init__(self, fail: bool = False):
        self.calls = []
        self.fail = fail

    def __call__(self, store):
        self.calls.append(store.path)
        if self.fail:
            raise OSError("no such file: consolidate")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_client_writes_notes_completes_and_recalls(store, mode):
    spawns = Spawns()
    server = build_server(store, spawn=spawns)

    async def main():
        async with Client(server, mode=mode) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            kept = data(await call(client, "note", session_id="s1", flag=True, kind="preference",
                                   content="The user prefers pnpm over npm in this repo"))
            temp = data(await call(client, "note", session_id="s1", ttl="20m", content="dev server on port 5173"))
            # a flagged note is answered with what the write policy says about it, at once
            assert kept == {"id": kept["id"], "policy": "policy: kept as a preference"}
            assert isinstance(temp, int) and temp == kept["id"] + 1
            recipe = data(await call(client, "note", session_id="s9", flag=True, kind="recipe",
                                     content="Fix the peer dependency conflict somehow"))
            assert "missing command" in recipe["policy"] and "fields_missing" in recipe["policy"]
            inferred = data(await call(client, "note", session_id="s9", flag=True,
                                       content="Never commit .env files to this repository"))
            assert inferred["policy"].startswith("policy: kept as a constraint (type inferred")

            read = data(await call(client, "session_read", session_id="s1"))
            assert read["count"] == 2 and read["end"] is None
            assert [n["content"] for n in read["notes"]] == ["The user prefers pnpm over npm in this repo",
                                                              "dev server on port 5173"]
            assert read["notes"][0]["flag"] is True and read["notes"][0]["kind"] == "preference"
            assert read["notes"][1]["expires_at"] and read["notes"][1]["expired"] is False

            done = data(await call(client, "session_complete", session_id="s1", outcome="success"))
            assert done["status"] == "queued" and done["notes"] == 2 and done["worker"] == "started"
            assert spawns.calls == [store.path]
            # it returned at once: nothing consolidated yet, the notes are still in the scratch tier
            assert store.read_manifest() is None and store.sessions.count("s1") == 2
            assert [q["session_id"] for q in store.sessions.queued()] == ["s1"]
            assert data(await call(client, "session_read", session_id="s1"))["end"]["status"] == "queued"

            # the worker's job, done here in the test
            plans = await anyio.to_thread.run_sync(lambda: run_queue(store, judges=["rules"]))
            assert [p.session_id for p in plans] == ["s1"]

            got = data(await call(client, "recall", query="package manager pnpm", k=3))
            assert got["count"] >= 1
            top = got["memories"][0]
            assert top["text"].startswith("The user prefers pnpm over npm in this repo [high, user-stated, ")
            assert top["id"] and top["type"] == "preference" and top["status"] == "active"
            assert store.longterm().get([top["id"]])  # the id is the memory's real id

    anyio.run(main)


def test_bad_input_is_a_one_line_tool_error(store):
    server = build_server(store, spawn=None)

    async def main():
        async with Client(server) as client:
            assert "empty note" in error_text(await call(client, "note", session_id="s1", content="   "))
            assert "bad TTL 'soon'" in error_text(await call(client, "note", session_id="s1", content="x y", ttl="soon"))
            assert "session id" in error_text(await call(client, "note", session_id=" ", content="x y"))
            text = error_text(await call(client, "session_complete", session_id="s1", outcome="won"))
            assert "unknown outcome 'won': use one of success, failure, aborted" in text
            assert "empty query" in error_text(await call(client, "recall", query=" "))
            assert "bad k 0" in error_text(await call(client, "recall", query="x", k=0))
            # nothing was written by any of them
            assert data(await call(client, "session_read", session_id="s1"))["count"] == 0
            assert store.sessions.session_end("s1") is None
            # the server still works after errors
            assert isinstance(data(await call(client, "note", session_id="s1", content="fine now")), int)

    anyio.run(main)


def test_outcome_is_an_enum_in_the_tool_schema(store):
    async def main():
        async with Client(build_server(store, spawn=None)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            schema = tools["session_complete"].input_schema
            assert schema["properties"]["outcome"]["enum"] == ["success", "failure", "aborted"]
            assert set(tools["note"].input_schema["required"]) == {"content"}  # session_id: the current one
            assert set(schema["required"]) == {"outcome"}

    anyio.run(main)


def test_without_a_worker_the_end_stays_queued_and_says_so(store):
    async def main():
        async with Client(build_server(store, spawn=None)) as client:
            await call(client, "note", session_id="s2", content="Chose SQLite because it needs no server")
            done = data(await call(client, "session_complete", session_id="s2", outcome="failure", reason="tests red"))
            assert done["worker"] == "not started" and "queued" in done["message"]
        async with Client(build_server(store, spawn=Spawns(fail=True))) as client:
            done = data(await call(client, "session_complete", session_id="s2", outcome="failure", reason="tests red"))
            assert done["worker"] == "failed to start" and "no such file" in done["message"]
    anyio.run(main)
    assert store.sessions.queued("s2")[0]["reason"] == "tests red"
    assert store.sessions.count("s2") == 1


def test_aborted_session_is_resumed_and_completed_later(store):
    async def main():
        async with Client(build_server(store, spawn=None)) as client:
            await call(client, "note", session_id="s3", flag=True, kind="constraint",
                       content="Never commit .env files to this repository")
            await call(client, "session_complete", session_id="s3", outcome="aborted")
            await anyio.to_thread.run_sync(lambda: run_queue(store, judges=["rules"]))
            assert data(await call(client, "recall", query="env files"))["count"] == 0
            assert data(await call(client, "session_read", session_id="s3"))["count"] == 1  # untouched

            await call(client, "note", session_id="s3", content="resumed: the build passes again")
            assert data(await call(client, "session_complete", session_id="s3", outcome="success"))["notes"] == 2
            await anyio.to_thread.run_sync(lambda: run_queue(store, judges=["rules"]))
            hits = data(await call(client, "recall", query="commit .env files"))["memories"]
            assert hits and hits[0]["text"].startswith("Never commit .env files to this repository [")

    anyio.run(main)


def test_a_note_after_its_session_ended_says_so_like_the_cli(store):
    async def main():
        async with Client(build_server(store, spawn=None)) as client:
            first = data(await call(client, "note", session_id="s5", content="The build uses make"))
            assert isinstance(first, int)  # an open session: no hint
            await call(client, "session_complete", session_id="s5", outcome="success")
            await anyio.to_thread.run_sync(lambda: run_queue(store, judges=["rules"]))
            late = data(await call(client, "note", session_id="s5", content="The tests use pytest"))
            hint = store.sessions.ended_hint("s5")  # the line `consolidate note` prints (SessionTier owns it)
            assert hint and "\n" not in hint and late == {"id": late["id"], "ended": hint}
    anyio.run(main)


def test_recall_on_an_empty_store_creates_nothing(store):
    async def main():
        async with Client(build_server(store, spawn=None)) as client:
            assert data(await call(client, "recall", query="anything")) == {"count": 0, "memories": [], "below_floor": 0}

    anyio.run(main)
    assert store.read_manifest() is None and not store.sub("chroma").exists()


def test_spawn_auto_starts_the_worker_through_the_one_starter(monkeypatch, store):
    from consolidate.core import spawn as starter
    from consolidate.mcp import server as mcp_server

    seen = {}
    monkeypatch.setattr(starter, "_launch", lambda argv, env, out: seen.update(argv=argv) or 4242)
    spawner, name = mcp_server.find_spawner(["scripted:x.json", "noop"])
    assert name == "consolidate.core.spawn.spawn_worker"
    assert spawner(store) == 4242
    argv = seen["argv"]
    assert argv[argv.index("--store") + 1] == str(store.path.resolve())
    assert argv[argv.index("--embedding") + 1] == "hash" and argv[argv.index("--project") + 1] == "testproj"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--judge"] == ["scripted:x.json", "noop"]


@pytest.mark.spawns
def test_stdio_server_subprocess(tmp_path):
    """``consolidate mcp`` as an agent CLI starts it: a subprocess speaking JSON-RPC on stdio."""
    store_dir = tmp_path / ".memofs"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "consolidate", "mcp", "--store", str(store_dir), "--embedding", "hash"],
        env={"PATH": os.environ.get("PATH", ""),  # PYTHONPATH kept: the tree under test, not the installed one
             **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})}, cwd=str(tmp_path))

    async def main():
        with anyio.fail_after(120):
            async with Client(params, read_timeout_seconds=60) as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                note_id = data(await call(client, "note", session_id="io", content="Use ruff, not flake8"))
                read = data(await call(client, "session_read", session_id="io"))
                assert read["notes"][0]["id"] == note_id
                assert "empty note" in error_text(await call(client, "note", session_id="io", content=""))

    anyio.run(main)
    from consolidate import Store

    s = Store(store_dir, embedding="hash")
    assert [n.content for n in s.sessions.notes("io")] == ["Use ruff, not flake8"]
    s.close()


@pytest.mark.spawns
def test_session_end_fast_path_does_not_import_mcp(tmp_path):
    code = ("import sys; from consolidate.cli.main import main; "
            f"main(['note', '--store', {str(tmp_path / '.memofs')!r}, '--session', 's', 'a note here']); "
            f"main(['end', '--store', {str(tmp_path / '.memofs')!r}, '--session', 's', '--outcome', 'success']); "
            "print(json.dumps(sorted(m for m in ('mcp', 'mcp_types', 'consolidate.mcp.server') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == []


def test_mcp_command_reports_a_bad_store_in_one_line(tmp_path, capsys):
    from consolidate.cli.main import main

    f = tmp_path / "file"
    f.write_text("x")
    assert main(["mcp", "--store", str(f)]) == 4
    err = capsys.readouterr().err
    assert err.startswith("error: store path") and err.count("\n") == 1
