"""``consolidate mcp`` over real stdio, as a client that pipes its requests and closes stdin sees it
(consolidate/mcp/stdio.py): every request read gets its reply before the server exits, and every
line that is no JSON-RPC message gets the JSON-RPC error the specification names (-32700, -32600,
-32602; -32601 for an unknown method). The installed ``consolidate`` command, a real subprocess, for
the first server of each test function and for the MiniLM one (its model cache is read at import);
the others the same command forked from tests/support/hooks_fast.py's server (its own process, stdin
closed after the lines, stdout read to its end; issue 30: the interpreter's start-up is not pinned here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hooks_fast
from consolidate import Store

pytestmark = pytest.mark.integration

CONSOLE = str(Path(sys.executable).parent / "consolidate")
INIT = [{"jsonrpc": "2.0", "id": "init", "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]


#: The test functions whose first server ran as the installed command (the others: hooks_fast).
_REAL: set[str] = set()


def _env():
    return {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}


def pipe(tmp_path, lines, *, embedding="hash", timeout=600):
    """Write ``lines`` (dicts become JSON; strings go as they are) to the installed server's stdin,
    close it, and return ``(replies by id, replies in order, completed process)``."""
    text = "".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in INIT + list(lines))
    args = ["mcp", "--store", str(tmp_path / ".memofs"), "--embedding", embedding]
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split("[")[0].split(" ")[0]
    if embedding != "hash" or test not in _REAL:
        _REAL.add(test)
        proc = subprocess.run([CONSOLE, *args], input=text, capture_output=True, text=True, env=_env(),
                              cwd=str(tmp_path), timeout=timeout)
    else:
        proc = hooks_fast.run(args, input=text, env=_env(), cwd=str(tmp_path), timeout=timeout)
    replies = [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]
    by_id: dict = {}
    for r in replies:
        by_id.setdefault(json.dumps(r.get("id")), []).append(r)
    return by_id, replies, proc


def tool(rid, name, **arguments):
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def result_of(reply):
    assert "result" in reply, reply
    return reply["result"]


def test_every_request_is_answered_when_stdin_closes_right_after_it(tmp_path):
    """The review's input: requests written and stdin closed at once; the replies of the tool calls
    still running (notes, a recall, a session read) used to be dropped."""
    notes = [tool(i, "note", content=f"Service {i} listens on port {8000 + i}", session_id="piped") for i in range(25)]
    by_id, replies, proc = pipe(tmp_path, notes + [tool("r", "recall", query="which port does service 3 use"),
                                                   tool("s", "session_read", session_id="piped"),
                                                   {"jsonrpc": "2.0", "id": "t", "method": "tools/list"}])
    assert proc.returncode == 0, proc.stderr
    assert len(replies) == 1 + 25 + 3  # initialize, the notes, recall, session_read, tools/list: no more, no less
    for i in range(25):
        assert result_of(by_id[json.dumps(i)][0])["isError"] is False
    assert result_of(by_id['"r"'][0])["isError"] is False
    read = result_of(by_id['"s"'][0])["structuredContent"]
    assert len(read["notes"]) == 25
    assert "note" in {t["name"] for t in result_of(by_id['"t"'][0])["tools"]}
    s = Store(tmp_path / ".memofs", embedding="hash")
    try:
        assert len(s.sessions.notes("piped")) == 25
    finally:
        s.close()


def test_first_recall_with_the_minilm_embedding_is_answered_before_exit(tmp_path):
    """The slow first call (the MiniLM model loads, Chroma opens) is the one a closing stdin cut off."""
    pytest.importorskip("chromadb")
    by_id, replies, proc = pipe(tmp_path, [tool(1, "note", content="Deploys go through the staging cluster first",
                                                session_id="m"),
                                           tool(2, "recall", query="how do deploys go")], embedding="minilm")
    assert proc.returncode == 0, proc.stderr
    assert result_of(by_id["2"][0])["isError"] is False
    assert "count" in result_of(by_id["2"][0])["structuredContent"]


@pytest.mark.parametrize("line", [
    "this is not json",
    '{"jsonrpc": "2.0", "id": 7, "method": "tools/list"',  # cut off
    '{"jsonrpc": "2.0", "id": 7, "method": "tools/list"} trailing',
    "{'jsonrpc': '2.0', 'id': 7, 'method': 'tools/list'}",  # Python, not JSON
    "Содержимое заметки без JSON",
])
def test_a_line_that_is_not_json_gets_a_parse_error(tmp_path, line):
    by_id, replies, proc = pipe(tmp_path, [line, {"jsonrpc": "2.0", "id": 8, "method": "tools/list"}])
    assert proc.returncode == 0, proc.stderr
    [err] = by_id["null"]
    assert err["error"]["code"] == -32700 and err["error"]["message"] == "Parse error"
    assert "not JSON" in err["error"]["data"]
    assert "result" in by_id["8"][0]  # the connection goes on after the bad line


def test_blank_lines_get_no_reply(tmp_path):
    by_id, replies, proc = pipe(tmp_path, ["", "   ", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, ""])
    assert proc.returncode == 0
    assert [r["id"] for r in replies] == ["init", 1]


@pytest.mark.parametrize("message, rid, says", [
    ({"foo": 1}, None, 'jsonrpc must be "2.0"'),
    ([1, 2], None, "one JSON object, not list"),
    ([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}], None, "one JSON object, not list"),  # a batch
    ("just a string", None, "one JSON object, not str"),
    (42, None, "one JSON object, not int"),
    ({"jsonrpc": "1.0", "id": 5, "method": "tools/list"}, 5, 'jsonrpc must be "2.0"'),
    ({"jsonrpc": "2.0", "id": "m", "method": 5}, "m", "method must be a string"),
    ({"jsonrpc": "2.0", "id": 6}, 6, "needs a method"),
])
def test_a_message_that_is_not_a_request_gets_invalid_request(tmp_path, message, rid, says):
    by_id, replies, proc = pipe(tmp_path, [json.dumps(message), {"jsonrpc": "2.0", "id": "after", "method": "tools/list"}])
    assert proc.returncode == 0, proc.stderr
    [err] = by_id[json.dumps(rid)]
    assert err["error"]["code"] == -32600 and err["error"]["message"] == "Invalid Request"
    assert says in err["error"]["data"]
    assert "result" in by_id['"after"'][0]


def test_unknown_method_gets_method_not_found(tmp_path):
    by_id, _, proc = pipe(tmp_path, [{"jsonrpc": "2.0", "id": 1, "method": "tools/run"},
                                     {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe_all", "params": {}}])
    assert proc.returncode == 0
    for rid, method in (("1", "tools/run"), ("2", "resources/subscribe_all")):
        assert by_id[rid][0]["error"] == {"code": -32601, "message": "Method not found", "data": method}


@pytest.mark.parametrize("params, says", [
    ("note", "params of tools/call must be an object, not str"),
    (["note", {"content": "x"}], "params of tools/call must be an object, not list"),
    ({"name": "no_such_tool", "arguments": {}}, "Unknown tool: no_such_tool"),
    ({"name": "Note", "arguments": {"content": "x"}}, "Unknown tool: Note"),
    ({"arguments": {"content": "x"}}, None),  # no tool name: the SDK's own -32602
    ({"name": 5}, None),
])
def test_bad_params_get_invalid_params(tmp_path, params, says):
    by_id, _, proc = pipe(tmp_path, [{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}])
    assert proc.returncode == 0, proc.stderr
    [reply] = by_id["3"]
    assert reply["error"]["code"] == -32602, reply
    if says:
        assert says in (reply["error"]["message"] + " " + str(reply["error"].get("data")))
    if "Unknown tool" in (says or ""):
        assert "note" in reply["error"]["data"]["tools"]  # the tools there are


def test_bad_tool_arguments_stay_a_one_line_tool_error(tmp_path):
    """Arguments that fail a known tool's schema are a tool result with isError (the agent reads it
    and corrects the call), one line, as before; only protocol faults are JSON-RPC errors."""
    by_id, _, proc = pipe(tmp_path, [tool(1, "note", content=5), tool(2, "note"), tool(3, "recall", query="x", k="many")])
    assert proc.returncode == 0
    for rid in ("1", "2", "3"):
        res = result_of(by_id[rid][0])
        assert res["isError"] is True and "bad argument" in res["content"][0]["text"]
        assert "\n" not in res["content"][0]["text"]


def test_a_cancelled_request_does_not_hold_the_exit(tmp_path):
    """A request the client cancelled is owed no reply: the server exits without waiting for it."""
    by_id, replies, proc = pipe(tmp_path, [
        tool(1, "recall", query="anything"),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "changed my mind"}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}], timeout=200)  # well under the 300 s drain bound
    assert proc.returncode == 0
    assert "result" in by_id["2"][0]
    assert len(by_id.get("1", [])) <= 1  # answered if it finished before the cancel, never twice


def test_the_servers_own_session_end_is_queued_after_the_replies(tmp_path):
    """Notes without a session id go to the server's own session, queued when the server closes:
    with stdin closed at once, the notes are written first, then the end is queued."""
    by_id, _, proc = pipe(tmp_path, [tool(i, "note", content=f"Cache entries expire after {i + 1} hours") for i in range(5)])
    assert proc.returncode == 0, proc.stderr
    s = Store(tmp_path / ".memofs", embedding="hash")
    try:
        [(own, _)] = s.sessions.newest_note_times()
        assert own.startswith("mcp-") and len(s.sessions.notes(own)) == 5
        assert s.sessions.session_end(own) is not None  # queued (a worker it started may have taken it since)
    finally:
        s.close()


def test_owed_requests_are_waited_for_at_most_the_bound():
    import anyio

    from consolidate.mcp.stdio import _Owed

    async def main():
        owed = _Owed()
        owed.add(1)
        owed.add("a")
        assert await owed.drained(0.05) is False  # bounded: a hung tool cannot keep the server alive
        owed.done(1)
        owed.done("a")
        assert await owed.drained(5) is True
        owed.add(2)

        async def answer_later():
            await anyio.sleep(0.05)
            owed.done(2)

        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_later)
            assert await owed.drained(30) is True

    anyio.run(main)
