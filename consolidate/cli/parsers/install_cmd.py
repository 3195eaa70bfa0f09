"""The parsers of ``consolidate install-hook AGENT`` (wire the hooks into an agent CLI).

Declarations only: each command runs a function of consolidate.cli.commands.install_cmd, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

import argparse
from consolidate.cli.parsers import command
from consolidate.cli.options import add_dry_run, add_judge


def register(sub, common) -> None:
    s = sub.add_parser("install-hook", help="add our hooks (session start and end, file recall, compaction) to an agent CLI's settings (Codex: .codex/hooks.json and config.toml)")
    s.add_argument("agent", choices=["claude-code", "gemini-cli", "codex"],
                   help="the agent CLI whose settings get the hooks")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--project", dest="scope", action="store_const", const="project",
                       help="./.claude/settings.json, ./.gemini/settings.json or ./.codex/hooks.json (default)")
    where.add_argument("--user", dest="scope", action="store_const", const="user",
                       help="~/.claude/settings.json, ~/.gemini/settings.json or ~/.codex/hooks.json")
    add_dry_run(s, "print the change, write nothing")
    s.add_argument("--store", default=argparse.SUPPRESS,  # SUPPRESS: a --store before the command is kept
                   help="store folder for the hook (default: the project's .memofs: the agent's project folder,"
                        " else the nearest enclosing store, else the git root, else the session's folder)")
    s.add_argument("--harvest", action="store_true",
                   help="hooks also take notes from the Claude Code transcript (consolidate hook --harvest);"
                        " adds the PreCompact hook")
    s.add_argument("--chroma-url", default=argparse.SUPPRESS, help="Chroma server the hook's worker uses")
    s.add_argument("--embedding", default=argparse.SUPPRESS, help="embedding function the hook's worker uses")
    add_judge(s, "judge spec for the hook's worker")
    s.set_defaults(func=command("install_cmd", "cmd_install_hook"), scope="project")
