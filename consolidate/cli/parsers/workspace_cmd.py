"""The parsers of ``consolidate session start|read|write|append|extract|complete`` (the agent workspace
from a shell).

Declarations only: each command runs a function of consolidate.cli.commands.workspace_cmd, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_json, add_outcome, add_session
from consolidate.cli.parsers import command


def register(sub, common) -> None:
    s = sub.add_parser("session", help="an agent workspace: start, read, write, append, extract, complete")
    ss = s.add_subparsers(dest="session_command", required=True, metavar="ACTION")

    def action(name, func, help_text, session_required=True):
        p = ss.add_parser(name, parents=[common], help=help_text)
        add_session(p, required=session_required)
        add_json(p, "print the result as JSON")
        p.set_defaults(func=command("workspace_cmd", func))
        return p

    p = action("start", "cmd_start", "create (or resume an aborted) session workspace; writes context/",
               session_required=False)
    p.add_argument("--task", help="what the session is for: memories relevant to it go to context/memories.md")
    p = action("read", "cmd_read", "print a workspace file or folder (no path: list the workspace)")
    p.add_argument("path", nargs="?", help="relative to the workspace, e.g. context/memories.md")
    for name, func in (("write", "cmd_write"), ("append", "cmd_append")):
        p = action(name, func, f"{name} a file under working/ or output/")
        p.add_argument("path", help="relative to the workspace, e.g. output/memory.md")
        p.add_argument("text", help="the text; - reads it from standard input")
    p = action("extract", "cmd_extract", "turn output/ into candidate notes (through the secret gate)")
    p.add_argument("--flag", action="store_true", help="flag every candidate (promoted without a judge)")
    p = action("complete", "cmd_complete", "end the session: success, failure or aborted")
    add_outcome(p)
    p.add_argument("--reason", help="why it ended so (kept in the session.failed event)")
    p.add_argument("--ephemeral", action="store_true", help="on failure, also remove the workspace")
