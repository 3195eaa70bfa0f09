"""The parser of ``consolidate hook`` (what agent CLIs call), alone in its module: a hook the light entry
point leaves to the full command line builds this parser only (consolidate.agents.hooks.fast.command_modules).

Declarations only: the command runs consolidate.agents.hooks.full.cmd_hook, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_judge, add_outcome, add_session
from consolidate.cli.parsers import command


def register(sub, common) -> None:
    s = sub.add_parser("hook", parents=[common],
                       help="for agent CLI hooks: queue a session end and start a worker, or print context")
    s.add_argument("--harvest", action="store_true", help="also take notes from the Claude Code transcript")
    add_outcome(s, "outcome recorded for an end event", default="success")
    add_session(s, "plain form: end this session (no JSON on stdin)")
    s.add_argument("--event", help="event name when stdin does not say (SessionEnd, SessionStart, Stop)")
    s.add_argument("--no-worker", action="store_true", help="queue only; do not start a worker")
    s.add_argument("--output", choices=["text", "gemini"], default="text",
                   help="SessionStart context as plain text (Claude Code) or Gemini CLI's JSON")
    add_judge(s, "judge spec for the worker it starts")
    s.set_defaults(func=command("consolidate.agents.hooks.full", "cmd_hook"))
