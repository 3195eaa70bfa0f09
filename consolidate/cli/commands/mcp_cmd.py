"""``consolidate mcp``: the MCP server over stdio (imports the ``mcp`` package only when run)."""

from __future__ import annotations

from consolidate.core.errors import ConfigError
from consolidate.cli.commands import open_store
from consolidate.mcp.server import serve
import sys


def cmd_mcp(args) -> int:
    try:
        pass
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

    if store.exists and not store.writable:
        sys.stderr.write(f"consolidate mcp: the store {store.path} is read-only: recall and session_read work;"
                         " writing tools answer that the store is read-only\n")
        return True
    return False
