"""``consolidate mcp`` over stdio: every request gets its reply, and every line its JSON-RPC answer.

The MCP SDK's stdio loop (``mcp.server.stdio`` with the JSON-RPC dispatcher of ``mcp`` 2.x) has
two gaps a client meets at once:

- When stdin closes, the dispatcher cancels the requests still being handled: a client that writes
  its requests and closes its stdin (``printf ... | consolidate mcp``, a batch client) loses their
  replies. Here the end of stdin is held back from the server until every request read so far has
  been answered (or the client cancelled it with ``notifications/cancelled``), at most
  :data:`DRAIN_SECONDS`; then the server closes as before (its own session's end is queued).
- A line that is not JSON, or JSON that is not a JSON-RPC 2.0 message, is only logged by the SDK
  (at debug level): the client waits for a reply that never comes. Here it gets the JSON-RPC error
  the specification names (https://www.jsonrpc.org/specification#error_object): ``-32700 Parse
  error`` (id null) for a line that is not JSON, ``-32600 Invalid Request`` for a message that is
  not a request, notification or response (with its id when it has a usable one, else null),
  ``-32602 Invalid params`` for a request whose only fault is ``params`` that is not an object.
  Blank lines are skipped. (Unknown methods, ``-32601``, and bad arguments of a known method,
  ``-32602``, are answered by the SDK itself.)
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from consolidate.rules.redaction import error_text

log = logging.getLogger("consolidate.mcp")

#: Longest wait, in seconds, after stdin closed for the replies still owed before the server closes
#: anyway (a tool that hangs cannot keep the process alive forever); the first recall loads the
#: embedding model, which takes tens of seconds on a loaded machine.
DRAIN_SECONDS = 300.0


def error_reply(code: int, message: str, data: str | None = None, request_id: Any = None) -> SessionMessage:
    """A JSON-RPC error message ``{"jsonrpc": "2.0", "id": request_id, "error": {...}}`` to write."""
    error = types.ErrorData(code=code, message=message, data=data)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def reply_for_bad_line(exc: Exception) -> SessionMessage | None:
    """The error reply owed for a line the transport could not read as a JSON-RPC message (``exc``,
    pydantic's ValidationError of ``mcp_types.jsonrpc_message_adapter``); None for a blank line.
    See the module docstring for the codes."""
    if not isinstance(exc, ValidationError):
        return error_reply(types.PARSE_ERROR, "Parse error", error_text(exc, typed=True, limit=300))
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        line = next((e.get("input") for e in errors if e.get("type") == "json_invalid"), "")
        if isinstance(line, str) and not line.strip():
            return None
        why = next((e.get("msg") for e in errors if e.get("type") == "json_invalid"), "invalid JSON")
        return error_reply(types.PARSE_ERROR, "Parse error", f"the line is not JSON ({why})")
    message = _whole_message(errors)
    request_id = _usable_id(message)
    if (isinstance(message, dict) and message.get("jsonrpc") == "2.0" and isinstance(message.get("method"), str)
            and request_id is not None and "params" in message and not isinstance(message["params"], dict)):
        return error_reply(types.INVALID_PARAMS, "Invalid params",
                           f"params of {message['method']} must be an object, not {type(message['params']).__name__}",
                           request_id)
    return error_reply(types.INVALID_REQUEST, "Invalid Request", _invalid_why(message), request_id)


def _whole_message(errors: list) -> Any:
    """The decoded line, as pydantic hands it back: the input of a model-level error (a missing field
    of one of the union's message models, or a value that is no object at all)."""
    for e in errors:
        loc = e.get("loc", ())
        if len(loc) <= 1 or (len(loc) == 2 and e.get("type") == "missing"):
            return e.get("input")
    return None


def _usable_id(message: Any) -> int | str | None:
    """The message's id when JSON-RPC allows it (a string or an integer), else None."""
    if not isinstance(message, dict):
        return None
    rid = message.get("id")
    if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
        return rid
    return None


def _invalid_why(message: Any) -> str:
    """One line: what the message lacks to be a JSON-RPC 2.0 request, notification or response."""
    if not isinstance(message, dict):
        return f"a message is one JSON object, not {type(message).__name__ if message is not None else 'this'}"
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if "method" in message and not isinstance(message["method"], str):
        return "method must be a string"
    if "method" not in message and not ("result" in message or "error" in message):
        return "a request needs a method (and an id); a response a result or an error"
    return "not a JSON-RPC 2.0 request, notification or response"


class _Owed:
    """The ids of requests read from stdin and not yet answered (nor cancelled by the client)."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.settled = anyio.Event()

    def add(self, rid: Any) -> None:
        self.ids.add(_key(rid))

    def done(self, rid: Any) -> None:
        self.ids.discard(_key(rid))
        if not self.ids:
            self.settled.set()
            self.settled = anyio.Event()

    async def drained(self, seconds: float) -> bool:
        """Wait until nothing is owed, at most ``seconds``; whether nothing is owed."""
        with anyio.move_on_after(seconds):
            while self.ids:
                await self.settled.wait()
        return not self.ids


def _key(rid: Any) -> str:
    return str(rid)


async def _pump_in(wire_in, to_server, wire_out, owed: _Owed, drain_seconds: float) -> None:
    """stdin -> server; bad lines answered at once; at the end of stdin, wait for the replies owed."""
    async with to_server, wire_out:
        async for item in wire_in:
            if isinstance(item, Exception):
                reply = reply_for_bad_line(item)
                if reply is not None:
                    await wire_out.send(reply)
                continue
            msg = item.message
            if isinstance(msg, types.JSONRPCRequest):
                owed.add(msg.id)
            elif isinstance(msg, types.JSONRPCNotification) and msg.method == "notifications/cancelled":
                rid = (msg.params or {}).get("requestId")
                if rid is not None:
                    owed.done(rid)
            await to_server.send(item)
        if not await owed.drained(drain_seconds):
            log.warning("stdin closed; closing with %d request(s) unanswered after %.0f s: %s", len(owed.ids),
                        drain_seconds, ", ".join(sorted(owed.ids))[:300])


async def _pump_out(from_server, wire_out, owed: _Owed) -> None:
    """server -> stdout, noting each request answered."""
    async with from_server, wire_out:
        async for item in from_server:
            await wire_out.send(item)
            msg = item.message
            if isinstance(msg, (types.JSONRPCResponse, types.JSONRPCError)) and msg.id is not None:
                owed.done(msg.id)


async def serve_stdio(server, *, drain_seconds: float = DRAIN_SECONDS) -> None:
    """Serve ``server`` (an ``mcp.server.mcpserver.MCPServer``) over the process's stdin and stdout
    until stdin closes and every request read has its reply (see the module docstring)."""
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs (mcp 2.x)
    async with stdio_server() as (wire_in, wire_out):
        to_server_send, to_server_recv = create_context_streams[SessionMessage | Exception](0)
        from_server_send, from_server_recv = create_context_streams[SessionMessage](0)
        owed = _Owed()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pump_in, wire_in, to_server_send, wire_out.clone(), owed, drain_seconds)
            tg.start_soon(_pump_out, from_server_recv, wire_out, owed)
            await lowlevel.run(to_server_recv, from_server_send, lowlevel.create_initialization_options())
