"""The parsers of ``consolidate judges`` (the installed judges and whether each of the chain answers).

Declarations only: each command runs a function of consolidate.cli.commands.judges_cmd, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_json
from consolidate.cli.parsers import command


def register(sub, common) -> None:
    s = sub.add_parser("judges", parents=[common],
                       help="installed judges and whether the configured chain can be used now (no model call)")
    s.add_argument("--judge", action="append", metavar="SPEC",
                   help="judge spec, repeatable: show this chain instead of the configured one")
    s.add_argument("--no-probe", action="store_true", help="do not send GET /models to a configured api_base")
    add_json(s)
    s.set_defaults(func=command("judges_cmd", "cmd_judges"))
