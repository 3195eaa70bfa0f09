"""One-line tool errors for ``consolidate mcp``.

The MCP SDK answers a tool call whose arguments fail the tool's schema with pydantic's report: a
count line, then per field its name, the message with the rejected value and type, and a link to
pydantic's docs (four lines for one bad field). :class:`OneLineErrorServer` answers with one line
instead, like every other tool error of this server (``consolidate.core.errors``): ``Error executing tool
recall: bad argument k: Input should be a valid integer, unable to parse string as an integer``.
The rejected values are left out (they are the caller's data; a note may be long or secret).

A call of a tool the server does not have is a protocol error, as the MCP specification's tools page
shows it (``-32602``, ``Unknown tool: NAME``, with the tool names in ``data``), not a tool result.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import ValidationError


def validation_line(tool: str, exc: ValidationError) -> str:
    """One line naming every rejected argument of ``tool`` and why (pydantic's messages, no values)."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__") or "arguments"
        msg = "required" if err.get("type") == "missing" else err.get("msg", "invalid")
        parts.append(f"{where}: {' '.join(str(msg).split())}")
    noun = "argument" if len(parts) == 1 else "arguments"
    return f"Error executing tool {tool}: bad {noun} " + "; ".join(parts)


class OneLineErrorServer(MCPServer):
    """An MCPServer whose argument-validation errors are one line (see the module docstring)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        names = [t.name for t in await self.list_tools()]
        if name not in names:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}", {"tools": sorted(names)})
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(validation_line(name, cause)) from cause
