"""The parsers of ``consolidate ui`` (the local web page over the store).

Declarations only: each command runs a function of consolidate.cli.commands.ui_cmd, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import port
from consolidate.cli.parsers import command


def register(sub, common) -> None:
    s = sub.add_parser("ui", parents=[common],
                       help="a local web page to browse, search and review the store (prints its URL with a token)")
    s.add_argument("--port", type=port, default=0, help="port to listen on (default 0: a free one)")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; another one is reachable beyond this machine:"
                        " a warning is printed)")
    s.add_argument("--no-browser", action="store_true", help="print the URL only; do not open a browser")
    s.set_defaults(func=command("ui_cmd", "cmd_ui"))
