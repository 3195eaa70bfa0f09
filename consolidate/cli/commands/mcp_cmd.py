"""``consolidate mcp``: the MCP server over stdio (imports the ``mcp`` package only when run)."""

from __future__ import annotations

from consolidate.core.errors import ConfigError
from consolidate.cli.options import add_judge, open_store


def cmd_mcp(args) -> int:
    try:
        from consolidate.mcp.server import serve
    except ImportError as exc:  # mcp missing, or 1.x (no mcp.server.mcpserver)
        raise ConfigError(f"the MCP server needs the mcp package 2.x (pip install 'mcp>=2,<3'): {exc}") from None

    # Open once here so a bad --store is a one-line error before the server starts; the server
    # opens its own Store on the same folder, on its store thread.
    store = open_store(args, writes=False)
    store.close()
    read_only_notice(store)
    serve(store, judges=args.judge)
    return 0


def read_only_notice(store) -> bool:
    """On a read-only store the server starts read-only: recall and session_read work, a writing tool
    answers one line (StoreReadOnly). Says so once on stderr (the client's log); returns whether."""
    import sys

    if store.exists and not store.writable:
        sys.stderr.write(f"consolidate mcp: the store {store.path} is read-only: recall and session_read work;"
                         " writing tools answer that the store is read-only\n")
        return True
    return False


def register(sub, common) -> None:
    s = sub.add_parser("mcp", parents=[common],
                       help="MCP server over stdio: note, recall, session_start/read/write/append/extract/complete")
    add_judge(s, "judge spec for the workers it starts")
    s.set_defaults(func=cmd_mcp)
