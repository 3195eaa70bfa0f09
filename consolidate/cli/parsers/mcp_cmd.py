"""The parsers of ``consolidate mcp`` (the MCP server over stdio).

Declarations only: each command runs a function of consolidate.cli.commands.mcp_cmd, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_judge
from consolidate.cli.parsers import command


def register(sub, common) -> None:
    s = sub.add_parser("mcp", parents=[common],
                       help="MCP server over stdio: note, recall, session_start/read/write/append/extract/complete")
    add_judge(s, "judge spec for the workers it starts")
    s.set_defaults(func=command("mcp_cmd", "cmd_mcp"))
