"""New-user findings (issue 15, review): each reported input is one case of its kind.

- the hook given a payload whose ``cwd`` does not exist (or is not a folder) refuses in one line and
  writes nothing;
- argparse and MCP argument errors are one line;
- a session id holding a newline or another control character is refused by every entry point;
- ``consolidate mcp`` on a read-only store starts read-only; the library raises StoreReadOnly;
- the workspace MCP tools take the current session when ``session_id`` is left out.

Filed before as tests/test_new_user.py (issue 15).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters

from consolidate import Store
from consolidate.store.sessions.agents import ancestors, record_start
from consolidate.cli.main import main
from consolidate.core.errors import BadInput, StoreReadOnly
from consolidate.mcp.server import build_server

import preloaded  # the hook commands below: a forked process (issue 30); their start-up is not what they pin

def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update({"CONSOLIDATE_EMBEDDING": "hash", "CONSOLIDATE_JUDGES": "noop"})
    env.update(extra)
    return env


def _tree(folder) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and err.endswith("\n") and "Traceback" not in err


# -- a. the hook and a cwd that does not exist ------------------------------------------------------


@pytest.mark.spawns
@pytest.mark.parametrize("event", ["SessionEnd", "SessionStart", "PreCompact", "Stop"])
@pytest.mark.parametrize("cwd_kind", ["missing", "missing-parent", "a-file", "relative", "not-text"])
def test_hook_refuses_a_payload_cwd_it_cannot_place_and_writes_nothing(tmp_path, event, cwd_kind):
    """The reported input: SessionEnd/SessionStart with a cwd that does not exist created
    <cwd>/.memofs. Refused with one line on stderr, exit 1 (a non-blocking error in the hook docs),
    nothing created anywhere (not there, not in the hook's own working folder)."""
    run_in = tmp_path / "run"
    run_in.mkdir()
    (tmp_path / "file.txt").write_text("x")
    cwd = {"missing": str(tmp_path / "gone"), "missing-parent": str(tmp_path / "gone" / "deeper"),
           "a-file": str(tmp_path / "file.txt"), "relative": "some/project", "not-text": 12}[cwd_kind]
    before = _tree(tmp_path)
    payload = {"hook_event_name": event, "session_id": "s-1", "cwd": cwd, "transcript_path": "/nope.jsonl"}
    out = preloaded.run(["hook", "--harvest", "--no-worker"], input=json.dumps(payload),
                         env=_env(), cwd=run_in, timeout=60)
    assert out.returncode == 1 and out.stdout == ""
    assert _one_line(out.stderr) and out.stderr.startswith("consolidate hook: refused: ")
    assert "nothing was written" in out.stderr
    assert _tree(tmp_path) == before


@pytest.mark.spawns
def test_hook_with_an_existing_cwd_still_creates_its_store_there(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    payload = {"hook_event_name": "SessionEnd", "session_id": "s-1", "cwd": str(project)}
    out = preloaded.run(["hook", "--no-worker"], input=json.dumps(payload),
                         env=_env(), cwd=tmp_path, timeout=60)
    assert out.returncode == 0 and out.stderr == ""
    assert Store(project / ".memofs", create=False).sessions.session_end("s-1")["status"] == "queued"


@pytest.mark.spawns
def test_hook_with_an_explicit_store_ignores_the_payload_cwd(tmp_path):
    store = tmp_path / "team" / ".memofs"
    payload = {"hook_event_name": "SessionEnd", "session_id": "s-1", "cwd": str(tmp_path / "gone")}
    out = preloaded.run(["hook", "--no-worker", "--store", str(store)], input=json.dumps(payload),
                         env=_env(), cwd=tmp_path, timeout=60)
    assert out.returncode == 0 and not (tmp_path / "gone").exists()
    assert Store(store, create=False).sessions.session_end("s-1") is not None


# -- c. one-line argument errors --------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["note", "a note without a session"],              # a required option missing
    ["recall", "-k", "zz", "query"],                   # a bad value
    ["nosuch"],                                         # an unknown command
    ["session", "frob"],                                # an unknown action
    ["run", "--no-such-option"],                        # an unknown option
    ["end", "--session", "s", "--outcome", "maybe"],    # a bad choice
    ["batch", "--concurrency", "0"],                    # a custom type's refusal
])
def test_argparse_errors_are_one_line(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and _one_line(err) and err.startswith("error: consolidate")
    assert "--help" in err and "usage:" not in err


def test_help_is_unchanged(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["recall", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: consolidate recall") and out.count("\n") > 5


@pytest.mark.spawns
def test_argparse_errors_are_one_line_from_the_installed_command(tmp_path):
    out = subprocess.run([sys.executable, "-m", "consolidate", "recall", "-k", "many", "q"], capture_output=True,
                         text=True, env=_env(), cwd=tmp_path, timeout=60)
    assert out.returncode == 2 and _one_line(out.stderr) and "argument -k" in out.stderr


@pytest.mark.parametrize("tool,args,names", [
    ("recall", {"query": "x", "k": "abc"}, ["k"]),
    ("note", {}, ["content"]),
    ("note", {"content": 5, "flag": "maybe"}, ["content", "flag"]),
    ("session_write", {"path": "working/x.md"}, ["content"]),
    ("session_complete", {"outcome": "success", "ephemeral": "sometimes"}, ["ephemeral"]),
    ("forget", {"memory_id": ["a", "b"]}, ["memory_id"]),
])
def test_mcp_argument_errors_are_one_line(store, tool, args, names):
    """pydantic's report was four lines a field (with the rejected value and a docs link)."""
    async def run():
        async with Client(build_server(store, spawn=None)) as client:
            return await client.call_tool(tool, args)

    result = anyio.run(run)
    assert result.is_error
    text = result.content[0].text
    assert "\n" not in text and "errors.pydantic.dev" not in text and "input_value" not in text
    assert text.startswith(f"Error executing tool {tool}: bad argument")
    for name in names:
        assert f"{name}: " in text


# -- d. session ids with control characters ---------------------------------------------------------

BAD_IDS = ["a\nb", "a\r\nb", "a\tb", "red\x1b[31m", "a\x7fb", "a\x85b", "rtl\u202eoverride", "a\u2028b",
           "zero\u200bwidth", "trailing\n"]


@pytest.mark.parametrize("sid", BAD_IDS)
@pytest.mark.parametrize("argv", [
    ["note", "--session", "{sid}", "A note for a session with a bad id"],
    ["end", "--session", "{sid}", "--outcome", "success"],
    ["run", "--session", "{sid}"],
    ["import", "-", "--session", "{sid}"],
    ["session", "start", "--session", "{sid}"],
    ["session", "read", "--session", "{sid}"],
])
def test_cli_refuses_a_session_id_with_a_control_character(tmp_path, monkeypatch, capsys, sid, argv):
    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / ".memofs"))
    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "hash")
    assert main([a.replace("{sid}", sid) for a in argv]) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and err.startswith("error: the session id holds U+")
    assert not (tmp_path / ".memofs").exists()


@pytest.mark.parametrize("sid", BAD_IDS)
def test_python_api_refuses_a_session_id_with_a_control_character(store, sid):
    from consolidate.pipeline.workspace import start

    for call in (lambda: store.sessions.add_note(sid, "A note for a session with a bad id"),
                 lambda: store.sessions.end(sid, "success"),
                 lambda: start(store, sid),
                 lambda: record_start(store.sessions, sid)):
        with pytest.raises(BadInput, match="the session id holds U\\+") as exc:
            call()
        assert "\n" not in str(exc.value)
    assert not store.sessions.sessions() and not store.sub("workspaces").exists()


@pytest.mark.parametrize("sid", ["a\nb", "a\tb", "rtl\u202eoverride", "trailing\n"])
def test_mcp_tools_refuse_a_session_id_with_a_control_character(store, sid):
    calls = [("note", {"content": "A note for a session with a bad id", "session_id": sid}),
             ("session_read", {"session_id": sid}),
             ("session_start", {"session_id": sid}),
             ("session_write", {"session_id": sid, "path": "working/x.md", "content": "x"}),
             ("session_complete", {"session_id": sid, "outcome": "success"})]

    async def run():
        async with Client(build_server(store, spawn=None)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    for result in anyio.run(run):
        assert result.is_error and "\n" not in result.content[0].text
        assert "the session id holds U+" in result.content[0].text
    assert not store.sessions.sessions() and not store.sub("workspaces").exists()


@pytest.mark.spawns
@pytest.mark.parametrize("key", ["session_id", "sessionId", "thread-id"])
@pytest.mark.parametrize("event", ["SessionEnd", "SessionStart"])
def test_hook_payload_with_a_control_character_in_its_session_id_is_refused(tmp_path, key, event):
    store = tmp_path / ".memofs"
    payload = {"hook_event_name": event, key: "abc\ndef", "cwd": str(tmp_path)}
    out = preloaded.run(["hook", "--no-worker"], input=json.dumps(payload),
                         env=_env(), cwd=tmp_path, timeout=60)
    assert out.returncode == 1 and out.stdout == "" and _one_line(out.stderr)
    assert "the session id holds U+000A" in out.stderr and not store.exists()
    out = preloaded.run(["hook", "--no-worker", "--session", "abc\tdef"],
                         env=_env(CONSOLIDATE_STORE=str(store)), cwd=tmp_path, timeout=60)
    assert out.returncode == 1 and _one_line(out.stderr) and not store.exists()


@pytest.mark.parametrize("sid", ["fix-oauth", "ws 2026 07 01", "日本語のセッション", "Сессия-1", "a:b/c@d"])
def test_ordinary_session_ids_still_work(store, sid):
    store.sessions.add_note(sid, "An ordinary note with an ordinary id")
    assert store.sessions.count(sid) == 1


# -- g, h. read-only stores: the MCP server and the library ------------------------------------------


def _read_only_prefix(folder) -> list[str] | None:
    """A command prefix running the rest with ``folder`` bind-mounted read-only in a new mount
    namespace (root, as in CI containers); None when this machine cannot."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return None
    probe = subprocess.run(["unshare", "--mount", "sh", "-c", 'mount --bind -o ro "$0" "$0"', str(folder)],
                           capture_output=True)
    if probe.returncode != 0:
        return None
    return ["unshare", "--mount", "sh", "-c", 'mount --bind -o ro "$0" "$0" && shift && exec "$@"', str(folder), "_"]


@pytest.fixture
def read_only_store(tmp_path):
    """A store with one memory and one queued session end, and the read-only prefix for it."""
    path = tmp_path / "project" / ".memofs"
    s = Store(path, embedding="hash")
    s.sessions.add_note("s1", "Integration tests need the Postgres container started with make db-up first",
                        flag=True, kind="constraint")
    s.sessions.end("s1", "success")
    from consolidate.pipeline.run import run_queue

    run_queue(s, judges=["noop"])
    [memory] = s.longterm().with_status("active")
    s.sessions.add_note("s2", "Deploys go through the staging cluster before production", flag=True)
    s.sessions.end("s2", "success")
    from consolidate.pipeline.workspace import start

    start(s, "ws-ro", task="Postgres")  # a workspace started before the store became read-only
    s.close()
    prefix = _read_only_prefix(path)
    if prefix is None:
        pytest.skip("no way to make a read-only folder here (root without mount rights)")
    return path, prefix, memory["id"]


def _snapshot(folder):
    """Every file's bytes, left out: SQLite's shared-memory and WAL files, which a reader may create,
    and the store lock's holder record (consolidate.store.layout.LOCK_HOLDER: who holds the lock, rewritten
    by every command that takes it, data of the lock, not of the store)."""
    from consolidate.store.layout import LOCK_HOLDER

    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"" for p in sorted(folder.rglob("*"))
            if not p.name.endswith(("-shm", "-wal")) and p.name != LOCK_HOLDER.name}


@pytest.mark.spawns
def test_mcp_starts_read_only_on_a_read_only_store(read_only_store):
    """`consolidate mcp` refused to start; it starts read-only: recall and session_read answer,
    writing tools answer one line naming the store."""
    path, prefix, memory_id = read_only_store
    before = _snapshot(path)
    params = StdioServerParameters(command=prefix[0], args=[*prefix[1:], sys.executable, "-m", "consolidate", "mcp",
                                                            "--store", str(path), "--embedding", "hash"],
                                   env=_env(), cwd=str(path.parent))

    async def run():
        with anyio.fail_after(180):
            async with Client(params, read_timeout_seconds=90) as client:
                hits = await client.call_tool("recall", {"query": "Postgres container for integration tests"})
                assert not hits.is_error and hits.structured_content["memories"][0]["id"] == memory_id
                read = await client.call_tool("session_read", {"session_id": "s2"})
                assert not read.is_error and read.structured_content["count"] == 1
                assert not (await client.call_tool("session_read", {})).is_error
                mem = await client.call_tool("session_read", {"session_id": "ws-ro", "path": "context/memories.md"})
                assert not mem.is_error and "Postgres container" in mem.structured_content["content"]
                errors = {}
                for name, args in [("note", {"content": "A note on a read-only store"}),
                                   ("session_start", {"task": "anything"}),
                                   ("session_write", {"session_id": "ws-ro", "path": "working/x.md", "content": "x"}),
                                   ("session_extract", {"session_id": "ws-ro"}),
                                   ("session_complete", {"session_id": "s2", "outcome": "success"}),
                                   ("forget", {"memory_id": memory_id})]:
                    r = await client.call_tool(name, args)
                    assert r.is_error, name
                    errors[name] = r.content[0].text
                return errors

    errors = anyio.run(run)
    for name, text in errors.items():
        assert "\n" not in text and f"the store {path} is read-only" in text, (name, text)
        assert "internal error" not in text and "sqlite" not in text.lower()
    assert _snapshot(path) == before


_LIBRARY_SCRIPT = r"""
import json, sys
import consolidate
from consolidate import Store
from consolidate.core.errors import ConsolidateError
from consolidate.pipeline.forget import forget
from consolidate.pipeline.workspace import start

path, memory_id = sys.argv[1], sys.argv[2]
out = {}
def t(name, fn):
    try:
        fn()
        out[name] = ["ok", ""]
    except Exception as exc:
        out[name] = [type(exc).__name__, str(exc), isinstance(exc, ConsolidateError)]
for create in (False, True):
    s = Store(path, embedding="hash", create=create)
    t(f"recall/{create}", lambda: consolidate.recall(s, "Postgres container").memories[0])
    t(f"status/{create}", lambda: s.sessions.pending())
    t(f"add_note/{create}", lambda: s.sessions.add_note("s9", "A note on a read-only store"))
    t(f"end/{create}", lambda: s.sessions.end("s2", "failure"))
    t(f"run_queue/{create}", lambda: consolidate.run_queue(s, judges=["noop"]))
    t(f"run_session/{create}", lambda: consolidate.run_session(s, "s2", judges=["noop"]))
    t(f"forget/{create}", lambda: forget(s, memory_id))
    t(f"workspace/{create}", lambda: start(s, "ws-1"))
    s.close()
print(json.dumps(out))
"""


@pytest.mark.spawns
def test_library_api_raises_store_read_only_naming_the_store(read_only_store):
    """The library raised sqlite3.OperationalError ('attempt to write a readonly database') and raw
    OSErrors; every write now raises StoreReadOnly (a StoreError) naming the store, reads work."""
    path, prefix, memory_id = read_only_store
    before = _snapshot(path)
    out = subprocess.run([*prefix, sys.executable, "-c", _LIBRARY_SCRIPT, str(path), memory_id], capture_output=True,
                         text=True, env=_env(), timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    for name, result in got.items():
        if name.split("/")[0] in ("recall", "status"):
            assert result[0] == "ok", (name, result)
        else:
            assert result[0] == "StoreReadOnly" and result[2], (name, result)
            assert f"the store {path} is read-only" in result[1] and "\n" not in result[1]
    assert _snapshot(path) == before
    assert issubclass(StoreReadOnly, __import__("consolidate.core.errors").core.errors.StoreError)


# -- i. the workspace MCP tools and the current session ---------------------------------------------


def _call(client, name, args=None):
    async def go():
        r = await client.call_tool(name, args or {})
        if r.is_error:
            return {"error": r.content[0].text}
        sc = r.structured_content
        return sc["result"] if set(sc) == {"result"} else sc
    return go()


def test_workspace_tools_use_the_current_session_without_an_id(store):
    """After session_start every workspace tool (and note) works without session_id; after
    session_complete the agent session of the SessionStart hook is current again."""
    record_start(store.sessions, "agent-1", pids=ancestors())  # what our agent's SessionStart hook records

    async def run():
        async with Client(build_server(store, spawn=None)) as client:
            first = await _call(client, "note", {"content": "The agent session's own note"})
            started = await _call(client, "session_start", {"task": "fix the OAuth redirect loop"})
            sid = started["session_id"]
            assert sid.startswith("ws-")
            w = await _call(client, "session_write", {"path": "working/plan.md", "content": "1. reproduce\n"})
            assert w["bytes"] == 13
            await _call(client, "session_append", {"path": "output/m.md",
                                                   "content": "- Chose PKCE because tokens never reach the history\n"})
            ex = await _call(client, "session_extract", {})
            assert ex["session_id"] == sid and ex["candidates"] == 1
            await _call(client, "note", {"content": "A note written while the workspace is current"})
            read = await _call(client, "session_read", {"path": "working/plan.md"})
            assert read["session_id"] == sid and read["content"] == "1. reproduce\n"
            notes = await _call(client, "session_read", {})
            assert notes["session_id"] == sid and notes["count"] == 2
            done = await _call(client, "session_complete", {"outcome": "success"})
            assert done["session_id"] == sid and done["workspace"]["extracted"] == 1
            after = await _call(client, "note", {"content": "Back in the agent session"})
            return first, sid, after

    first, sid, after = anyio.run(run)
    assert isinstance(first, int) and isinstance(after, int)
    assert [n.content for n in store.sessions.notes("agent-1")] == ["The agent session's own note",
                                                                     "Back in the agent session"]
    assert store.sessions.session_end(sid)["outcome"] == "success"


def test_workspace_tools_without_an_id_and_without_a_session_say_so_in_one_line(store):
    async def run():
        async with Client(build_server(store, spawn=None)) as client:
            return [await _call(client, name, args) for name, args in (
                ("session_write", {"path": "working/x.md", "content": "x"}),
                ("session_append", {"path": "working/x.md", "content": "x"}),
                ("session_extract", {}))]

    for got in anyio.run(run):
        assert "no session_id given and no current session: call session_start first" in got["error"]
        assert "\n" not in got["error"]
    assert not store.sub("workspaces").exists()


def test_an_explicit_session_id_still_wins(store):
    async def run():
        async with Client(build_server(store, spawn=None)) as client:
            await _call(client, "session_start", {"session_id": "ws-a"})
            await _call(client, "session_start", {"session_id": "ws-b"})  # the current one now
            await _call(client, "session_write", {"path": "output/m.md", "content": "- b\n"})
            await _call(client, "session_write", {"session_id": "ws-a", "path": "output/m.md", "content": "- a\n"})
            return ((await _call(client, "session_read", {"session_id": "ws-a", "path": "output/m.md"}))["content"],
                    (await _call(client, "session_read", {"path": "output/m.md"}))["content"])

    assert anyio.run(run) == ("- a\n", "- b\n")


# -- b. store JSON files with fields of the wrong type ----------------------------------------------


def _store_with_a_memory_and_a_workspace(tmp_path):
    st = tmp_path / ".memofs"
    s = Store(st, embedding="hash")
    s.sessions.add_note("s1", "Integration tests need the Postgres container started first", flag=True,
                        kind="constraint")
    s.sessions.end("s1", "success")
    from consolidate.pipeline.run import run_queue
    from consolidate.pipeline.workspace import start

    run_queue(s, judges=["noop"])
    start(s, "w1")
    s.close()
    return st


MANIFEST_CASES = [
    ({"layout_version": 1, "embedding": "hash-256"}, "'embedding' should be an object, found a string"),
    ({"layout_version": "one", "embedding": {"id": "hash-256", "dimension": 256}}, "'layout_version' should be an integer"),
    ({"layout_version": 1, "embedding": None}, "'embedding' should be an object, found null"),
    ({"layout_version": 1, "embedding": {"id": 5, "dimension": 256}}, "'embedding.id' should be a string"),
    ({"layout_version": 1, "embedding": {"id": "hash-256", "dimension": "256"}}, "'embedding.dimension' should be an integer"),
    ({"layout_version": 1, "embedding": {"id": "hash-256"}}, "'embedding.dimension' is missing"),
    ([1, 2], "not a JSON object but an array"),
]


@pytest.mark.parametrize("manifest,message", MANIFEST_CASES)
@pytest.mark.parametrize("argv", [["status"], ["recall", "Postgres"], ["run"], ["disputes"],
                                  ["note", "--session", "s2", "Another note for the next session"]])
def test_a_manifest_with_wrong_types_is_one_line_naming_file_and_field(tmp_path, capsys, manifest, message, argv):
    st = _store_with_a_memory_and_a_workspace(tmp_path)
    (st / "manifest.json").write_text(json.dumps(manifest))
    before = _snapshot(st)
    code = main([*argv, "--store", str(st), "--embedding", "hash"])
    err = capsys.readouterr().err
    if argv[0] in ("run", "note"):  # these do not read the manifest: they go on as before
        assert "Traceback" not in err
        return
    assert code == 4 and _one_line(err) and str(st / "manifest.json") in err
    assert message in err and "nothing was changed" in err
    assert _snapshot(st) == before


@pytest.mark.parametrize("state,message", [
    ({"session_id": "w1", "state": 5}, "'state' should be one of open, aborted, success, failure, found an integer"),
    ({"session_id": "w1", "state": "open", "blocked_items": [1]}, "'blocked_items' should be an object"),
    ({"session_id": "w1", "state": "aborted", "resumed": "two"}, "'resumed' should be an integer"),
    ({"session_id": "w1", "state": "open", "task": ["a"]}, "'task' should be a string or a null"),
    ({"session_id": "w1"}, "'state' is missing"),
    ({"session_id": 12, "state": "open"}, "'session_id' should be a string"),
    ([], "not a JSON object but an array"),
])
@pytest.mark.parametrize("argv", [["session", "read", "--session", "w1"],
                                  ["session", "write", "--session", "w1", "output/m.md", "- a memory to keep here"],
                                  ["session", "extract", "--session", "w1"],
                                  ["session", "start", "--session", "w1"],
                                  ["session", "complete", "--session", "w1", "--outcome", "success"]])
def test_a_workspace_state_with_wrong_types_is_one_line_and_changes_nothing(tmp_path, capsys, state, message, argv):
    st = _store_with_a_memory_and_a_workspace(tmp_path)
    path = st / "workspaces" / "w1" / "workspace.json"
    path.write_text(json.dumps(state))
    before = _snapshot(st)
    assert main([*argv, "--store", str(st), "--embedding", "hash"]) == 4
    err = capsys.readouterr().err
    assert _one_line(err) and str(path) in err and message in err and "nothing was changed" in err
    assert _snapshot(st) == before  # no session end queued, no file written


def test_a_workspace_state_with_wrong_types_over_mcp(tmp_path):
    st = _store_with_a_memory_and_a_workspace(tmp_path)
    (st / "workspaces" / "w1" / "workspace.json").write_text(json.dumps({"session_id": "w1", "state": 5}))

    async def run():
        async with Client(build_server(Store(st, embedding="hash"), spawn=None)) as client:
            return [await _call(client, n, a) for n, a in (("session_read", {"session_id": "w1", "path": "context"}),
                                                           ("session_complete", {"session_id": "w1", "outcome": "success"}))]

    for got in anyio.run(run):
        assert "field 'state' should be one of" in got["error"] and "\n" not in got["error"]
        assert "internal error" not in got["error"]


# -- e. session extract --flag survives session complete -----------------------------------------


@pytest.mark.parametrize("route", ["python", "cli", "mcp"])
def test_an_extract_flag_survives_complete(tmp_path, capsys, route):
    """`session extract --flag` then `session complete` re-extracted output/ without the flag."""
    st = tmp_path / ".memofs"
    s = Store(st, embedding="hash")
    from consolidate.pipeline.workspace import start

    ws, _ = start(s, "w1")
    ws.write("output/m.md", "- Chose PKCE for the OAuth flow because tokens never reach the history\n"
                            "- Deploys go through the staging cluster first\n")
    if route == "python":
        assert ws.extract(flag=True)["candidates"] == 2
        ws.complete("success")
    elif route == "cli":
        base = ["--store", str(st), "--embedding", "hash"]
        assert main(["session", "extract", "--session", "w1", "--flag", *base]) == 0
        assert main(["session", "complete", "--session", "w1", "--outcome", "success", *base]) == 0
        capsys.readouterr()
    else:
        async def run():
            async with Client(build_server(s, spawn=None)) as client:
                await _call(client, "session_extract", {"session_id": "w1", "flag": True})
                return await _call(client, "session_complete", {"session_id": "w1", "outcome": "success"})

        assert anyio.run(run)["workspace"]["extracted"] == 2
    notes = Store(st, embedding="hash").sessions.notes("w1")
    assert len(notes) == 2 and all(n.flag for n in notes)


def test_a_later_extract_without_the_flag_is_what_complete_repeats(store):
    from consolidate.pipeline.workspace import start

    ws, _ = start(store, "w1")
    ws.write("output/m.md", "- Deploys go through the staging cluster first\n")
    ws.extract(flag=True)
    ws.extract()  # the agent changed its mind: no flag
    ws.complete("success")
    assert [n.flag for n in store.sessions.notes("w1")] == [False]


def test_jsonl_item_flags_are_kept_by_complete_too(store):
    from consolidate.pipeline.workspace import start

    ws, _ = start(store, "w1")
    ws.write("output/m.jsonl", '{"content": "Deploys go through the staging cluster first", "flag": true}\n'
                               '{"content": "The retry loop was a red herring here"}\n')
    ws.complete("success")
    assert [n.flag for n in store.sessions.notes("w1")] == [True, False]


# -- f. a judged keep that says why is not rejected for a missing reason ----------------------------


def _judged(store, note: str, verdict: dict):
    from consolidate.pipeline.run import run_queue
    from consolidate.judges.chain import JudgeChain
    from consolidate.judges.scripted import ScriptedJudge

    store.sessions.add_note("s1", note)
    store.sessions.end("s1", "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge(default=verdict)]))
    return plan


@pytest.mark.parametrize("statement", [
    "Chose PKCE for the OAuth flow because tokens never reach the browser history",
    "Chose SQLite over Postgres since the session tier needs no server",
    "Went with pnpm workspaces in order to keep one lockfile for every package",
    "Picked Vite given that webpack builds took four minutes on CI",
    "Elegimos SQLite porque el nivel de sesión no necesita servidor",
    "Nous avons choisi SQLite puisque la couche de session n'a pas besoin de serveur",
    "Wir haben SQLite gewählt, weil die Sitzungsebene keinen Server braucht",
    "Выбрали SQLite, потому что не нужен отдельный сервер",
    "我们选择了SQLite，因为会话层不需要服务器",
    "サーバーが不要なのでSQLiteを選んだ",
    "اخترنا SQLite لأن طبقة الجلسة لا تحتاج إلى خادم",
    "서버가 필요 없기 때문에 SQLite를 선택했다",
])
def test_a_judged_decision_saying_why_keeps_its_reason(store, statement):
    """A judge's keep (unflagged) whose statement gives the reason but whose `fields` do not was
    rejected ('a decision needs reason'); the reason is read from the wording, in any language."""
    verdict = {"verdict": "keep", "statement": statement, "type": "decision", "evidence": "observed-success",
               "confidence": "high", "reason": "a decision with its reason", "fields": {}}
    plan = _judged(store, statement, verdict)
    assert not [e for e in plan.events if e["event"] == "candidate.rejected"], plan.events
    [row] = store.longterm().with_status("active")
    assert json.loads(row["metadata"]["fields"])["reason"]


@pytest.mark.parametrize("fields,field", [({"rationale": "tokens never reach the browser history"}, "reason"),
                                          ({"why": "tokens never reach the browser history"}, "reason")])
def test_a_judged_decision_with_its_reason_under_another_name(store, fields, field):
    verdict = {"verdict": "keep", "statement": "Chose PKCE for the OAuth flow", "type": "decision",
               "evidence": "observed-success", "confidence": "high", "reason": "kept", "fields": fields}
    plan = _judged(store, "Chose PKCE for the OAuth flow: tokens never reach the history", verdict)
    assert not [e for e in plan.events if e["event"] == "candidate.rejected"]


def test_the_reason_may_be_in_the_note_when_the_judge_rewrote_it_away(store):
    verdict = {"verdict": "keep", "statement": "The OAuth flow uses PKCE", "type": "decision",
               "evidence": "observed-success", "confidence": "high", "reason": "kept", "fields": {}}
    plan = _judged(store, "Chose PKCE for the OAuth flow because tokens never reach the history", verdict)
    assert not [e for e in plan.events if e["event"] == "candidate.rejected"]


def test_a_judged_decision_with_no_reason_anywhere_is_still_rejected(store):
    verdict = {"verdict": "keep", "statement": "Decided to drop the legacy endpoints", "type": "decision",
               "evidence": "observed-success", "confidence": "high", "reason": "kept", "fields": {}}
    plan = _judged(store, "Decided to drop the legacy endpoints", verdict)
    [e] = [e for e in plan.events if e["event"] == "candidate.rejected"]
    assert e["reason"].startswith("a decision needs reason")


def test_a_judged_failure_with_its_cause_in_the_wording(store):
    verdict = {"verdict": "keep", "statement": "The nightly build fails because the runner image lacks Node 20",
               "type": "failure", "evidence": "observed-failure", "confidence": "high", "reason": "kept", "fields": {}}
    plan = _judged(store, "nightly build fails: the runner image lacks Node 20", verdict)
    assert not [e for e in plan.events if e["event"] == "candidate.rejected"]


@pytest.mark.parametrize("rel,key,wrong,argv", [
    ("graph/nodes.jsonl", "id", ["x"], ["undo", "{run}"]),
    ("graph/edges.jsonl", "source", ["x"], ["undo", "{run}"]),
    ("graph/edges.jsonl", "key", {"a": 1}, ["undo", "{run}"]),
    ("snapshots/{run}.json", "added", 7, ["runs"]),
    ("snapshots/{run}.json", "run_id", ["x"], ["runs"]),
    ("snapshots/{run}.json", "started_at", "yesterday", ["runs"]),
    ("snapshots/{run}.json", "before", ["x"], ["undo", "{run}"]),
    ("snapshots/{run}.json", "graph", ["x"], ["undo", "{run}"]),
    ("snapshots/{run}.json", "tombstoned", 7, ["undo", "{run}"]),
])
def test_graph_lines_and_undo_records_with_wrong_types_are_one_line(tmp_path, capsys, rel, key, wrong, argv):
    """Found by putting wrong-typed values in every field of every JSON file of a store and running
    the read commands (doctor, runs, undo): tracebacks from the graph files and the undo records."""
    st = _store_with_a_memory_and_a_workspace(tmp_path)
    [run] = [p.stem for p in (st / "snapshots").glob("*.json")]
    path = st / rel.replace("{run}", run)
    whole = path.suffix == ".json"
    lines = [json.loads(path.read_text())] if whole else [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    assert any(key in obj for obj in lines)
    lines = [{**obj, key: wrong} if key in obj else obj for obj in lines]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    before = _snapshot(st)
    code = main([a.replace("{run}", run) for a in argv] + ["--store", str(st), "--embedding", "hash"])
    err = capsys.readouterr().err
    assert code == 4 and _one_line(err) and str(path) in err and f"field {key!r} should be" in err, err
    assert _snapshot(st) == before


@pytest.mark.parametrize("rel,key", [("graph/nodes.jsonl", "id"), ("graph/edges.jsonl", "target")])
def test_doctor_reports_and_repairs_graph_lines_with_wrong_types(tmp_path, capsys, rel, key):
    st = _store_with_a_memory_and_a_workspace(tmp_path)
    path = st / rel
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    lines[0][key] = ["x"]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert main(["doctor", "--store", str(st), "--embedding", "hash"]) != 0 or True
    out = capsys.readouterr()
    assert "Traceback" not in out.err and f"{rel}: 1 corrupt line(s): 1" in out.out
    main(["doctor", "--repair", "--store", str(st), "--embedding", "hash"])
    capsys.readouterr()
    assert (path.parent / (path.name + ".corrupt")).read_text().count("\n") == 1  # moved aside, not lost


@pytest.mark.parametrize("argv, says", [
    (["note", "--sesion", "s1", "text"], "consolidate note: unrecognized arguments: --sesion (did you mean --session?)"
                                         " (see consolidate note --help)"),
    (["end", "--sesion", "s1", "--outcome", "success"], "consolidate end: unrecognized arguments: --sesion (did you mean"
                                                        " --session?)"),
    (["status", "--bogus"], "consolidate status: unrecognized arguments: --bogus (see consolidate status --help)"),
    (["recall", "q", "--jsn"], "consolidate recall: unrecognized arguments: --jsn (did you mean --json?)"),
    (["--bogus", "status"], "consolidate: unrecognized arguments: --bogus (see consolidate --help)"),
    (["--stroe", "x", "status"], "consolidate: unrecognized arguments: --stroe (did you mean --store?)"),
    (["--sesion", "s3", "run"], "--sesion (did you mean --session, an option of 'run'? give it after the command)"),
    (["--json", "status"], "--json (--json is an option of 'status': give it after the command)"),
    (["statuss"], "consolidate: unknown command 'statuss' (did you mean status?)"),
    (["curat", "--dry-run"], "consolidate: unknown command 'curat' (did you mean curate?)"),
    (["recall", "--k", "3", "foo"], "(did you mean -k?)"),
    (["status", "--stor", "x"], "consolidate status: unrecognized arguments: --stor x (did you mean --store?)"),
    (["batch", "--curate", "--rejudg"], "consolidate batch: unrecognized arguments: --rejudg (did you mean --rejudge?)"),
    (["eval", "--lables", "x"], "consolidate eval: unrecognized arguments: --lables (did you mean --labels?)"),
    (["curate", "--prompt-version", ""], "an empty curation prompt version"),
    (["eval", "--labels", "x.jsonl", "--prompt-version", ""], "an empty judge prompt version"),
])
def test_a_mistyped_option_is_named_with_its_command_s_help(tmp_path, capsys, argv, says):
    """Fresh testers: ``note --sesion s1`` said the required --session was missing, an unknown option
    of a command pointed to the top-level help, a unique prefix was taken for the option (``--rejudg``
    ran a re-judging batch), a typo before the command read as an invalid command; the typo is named
    now, with the closest option or command."""
    code = None
    try:
        code = main(["--store", str(tmp_path / "s"), *argv])
    except SystemExit as refused:
        code = refused.code
    assert code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert says in line and not (tmp_path / "s").exists()
