"""The parsers of ``consolidate import-transcripts`` (harvest past agent transcripts).

Declarations only: each command runs a function of consolidate.cli.commands.transcripts_cmd, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_json, add_judge
from consolidate.cli.parsers import command


def register(sub, common) -> None:
    s = sub.add_parser("import-transcripts", parents=[common],
                       help="harvest past Claude Code / Gemini CLI transcripts (each once) into the store")
    s.add_argument("paths", nargs="*", metavar="PATH", help="a transcript file or a folder of them")
    s.add_argument("--claude-code", action="store_true",
                   help="the project's Claude Code transcripts (~/.claude/projects/<slug>/*.jsonl)")
    s.add_argument("--gemini-cli", action="store_true",
                   help="the project's Gemini CLI chats (~/.gemini/tmp/<project>/chats/)")
    s.add_argument("--project-dir", help="the project whose transcripts are taken (default: the folder holding"
                                         " the store)")
    s.add_argument("--no-run", action="store_true", help="queue the sessions, do not consolidate them now")
    add_judge(s)
    add_json(s)
    s.set_defaults(func=command("transcripts_cmd", "cmd_import_transcripts"))
