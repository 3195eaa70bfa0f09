"""The parsers of ``consolidate export`` (memory shared through a marked block of AGENTS.md or CLAUDE.md) and
the options of ``import --agents-md``.

Declarations only: each command runs a function of consolidate.cli.commands.share_cmd, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_json, add_judge, add_limit
from consolidate.cli.parsers import command


def add_import_options(parser) -> None:
    """``consolidate import``'s options for a consolidate block (called where ``import`` is registered)."""
    parser.add_argument("--agents-md", metavar="FILE",
                        help="import the consolidate block of AGENTS.md or CLAUDE.md (written by `consolidate"
                             " export`) as notes keeping the evidence and dates they were exported with, then consolidate"
                             " them")
    parser.add_argument("--rev", metavar="COMMIT", help="with --agents-md: read the file at this git commit")
    parser.add_argument("--no-run", action="store_true", help="with --agents-md: queue the session, do not run it")
    add_judge(parser)

def register(sub, common) -> None:
    s = sub.add_parser("export", parents=[common],
                       help="write the top durable memories into a marked block of AGENTS.md or CLAUDE.md")
    s.add_argument("--file", help="the file (default: AGENTS.md in the project, the folder holding the store)")
    add_limit(s, 1000, 50, "at most this many memories")
    add_json(s)
    s.set_defaults(func=command("share_cmd", "cmd_export"))
