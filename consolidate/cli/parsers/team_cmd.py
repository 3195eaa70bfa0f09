"""The parsers of the team memory commands: ``team init`` and ``sync [--status]``.

Declarations only: each command runs a function of consolidate.cli.commands.team_cmd, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_json
from consolidate.cli.options import positive_float
from consolidate.cli.parsers import command


def register(sub, common) -> None:
    s = sub.add_parser("team", parents=[common], help="team memory on a Chroma server")
    tsub = s.add_subparsers(dest="team_command", required=True, metavar="TEAM_COMMAND")
    i = tsub.add_parser("init", parents=[common], help="join this store to a project's team store on a Chroma server",
                       description="--chroma-url URL (https://HOST:PORT; http only on loopback or with --insecure)"
                                   " and --project P (its own database on the server) are required")
    i.add_argument("--tenant", default="default_tenant", help="Chroma tenant (default default_tenant)")
    i.add_argument("--token-env", default=None, metavar="NAME",
                   help="environment variable holding the token (default CONSOLIDATE_TEAM_TOKEN); never the token itself")
    i.add_argument("--token-file", default=None, metavar="PATH",
                   help="file holding the token, mode 0600, outside the store")
    i.add_argument("--insecure", action="store_true",
                   help="allow plain http or no token on a non-loopback address")
    i.set_defaults(func=command("team_cmd", "cmd_team_init"))
    s = sub.add_parser("sync", parents=[common], help="push what waits in the team outbox, then pull the team's changes")
    s.add_argument("--status", action="store_true", help="show the team store, last push and pull, pending pushes")
    s.add_argument("--timeout", type=positive_float, default=60.0, help="seconds for the push and for the pull (default 60)")
    add_json(s)
    s.set_defaults(func=command("team_cmd", "cmd_sync"))
