"""The parsers of ``consolidate review`` (the memories waiting for the user).

Declarations only: each command runs a function of consolidate.cli.commands.review_cmd, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_json
from consolidate.cli.parsers import command


def register(sub, common) -> None:
    s = sub.add_parser("review", parents=[common],
                       help="approve, decline or edit the quarantined, disputed and drifted memories")
    s.add_argument("--list", action="store_true", help="list what waits for review (the default off a terminal)")
    add_json(s, "JSON output")
    s.add_argument("--approve", metavar="ID", help="the memory holds: active, user-stated")
    s.add_argument("--decline", metavar="ID", help="the memory is wrong: archived with a tombstone")
    s.add_argument("--edit", nargs=2, metavar=("ID", "TEXT"), help="replace the memory by TEXT (supersedes it)")
    s.add_argument("--reason", help="why (kept in the event log) with --approve or --decline")
    s.set_defaults(func=command("review_cmd", "cmd_review"))
