"""``consolidate install-hook AGENT [--project|--user] [--dry-run]``: wire our hooks into an agent CLI.

Its parser does not take the common store options: ``--project`` here means the project's settings
file, not the scope of memories. ``--store`` is written into the hook command when given."""

from __future__ import annotations

import sys


def cmd_install_hook(args) -> int:
    from ..install_hook import AGENTS, install

    res = install(args.agent, args.scope, dry_run=args.dry_run, store=args.store, harvest=args.harvest)
    label = AGENTS[res.agent].label
    if not res.changed:
        print(f"{label} hooks already installed in {res.path}: nothing to change")
    else:
        sys.stdout.write(res.diff if res.diff.endswith("\n") else res.diff + "\n")
        what = ", ".join(res.actions)
        if res.written:
            print(f"{label}: {what} in {res.path}" + (f" (backup: {res.backup})" if res.backup else ""))
        else:
            print(f"dry run: {label}: would have {what} in {res.path}; nothing written")
    for w in res.warnings:
        print(f"note: {w}")
    return 0


def register(sub, common) -> None:
    s = sub.add_parser("install-hook", help="add our SessionStart/SessionEnd hooks to an agent CLI's settings.json")
    s.add_argument("agent", choices=["claude-code", "gemini-cli"])
    where = s.add_mutually_exclusive_group()
    where.add_argument("--project", dest="scope", action="store_const", const="project",
                       help="./.claude/settings.json or ./.gemini/settings.json (default)")
    where.add_argument("--user", dest="scope", action="store_const", const="user",
                       help="~/.claude/settings.json or ~/.gemini/settings.json")
    s.add_argument("--dry-run", action="store_true", help="print the change, write nothing")
    s.add_argument("--store", help="store folder for the hook (default: the session's cwd/.memofs)")
    s.add_argument("--harvest", action="store_true",
                   help="hooks also take notes from the Claude Code transcript (consolidate hook --harvest)")
    s.set_defaults(func=cmd_install_hook, scope="project")
