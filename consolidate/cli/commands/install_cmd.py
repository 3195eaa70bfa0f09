"""``consolidate install-hook AGENT [--project|--user] [--dry-run]``: wire our hooks into an agent CLI.

Its parser does not take the common ``--project`` after the command: there it means the project's
settings file. The store options (``consolidate --chroma-url URL --project NAME --embedding E
install-hook ... --store S --judge J``; ``--chroma-url`` and ``--embedding`` also after the command,
or their environment variables at install time) are written into the hook command, and the command
prints the configuration the hooks will use and the matching ``mcp add`` command."""

from __future__ import annotations

import sys

from consolidate.cli.parser import parse_hook_argv
from consolidate.agents.install import AGENTS, install
from consolidate.cli.commands.status_cmd import install_note


def cmd_install_hook(args) -> int:
    res = install(args.agent, args.scope, dry_run=args.dry_run, store=args.store, harvest=args.harvest,
                  chroma_url=args.chroma_url, project=args.project, embedding=args.embedding, judges=args.judge,
                  parse_hook_argv=parse_hook_argv)
    label = AGENTS[res.agent].label
    if not res.changed:
        print(f"{label} hooks already installed in {res.path}: nothing to change")
    else:
        sys.stdout.write(res.diff if res.diff.endswith("\n") else res.diff + "\n")
        what = ", ".join(res.actions)
        where = str(res.path) + (f" and {res.path.parent / 'config.toml'}"
                                 if any(a.startswith("enabled ") for a in res.actions) else "")
        if res.written:
            backups = [str(b) for b in ([res.backup] if res.backup else []) + res.other_backups]
            print(f"{label}: {what} in {where}" + (f" (backup: {', '.join(backups)})" if backups else ""))
        else:
            print(f"dry run: {label}: would have {what} in {where}; nothing written")
    print(describe_config(res.config, harvest=args.harvest))

    team_line = install_note(res.config.get("store"))
    if team_line:
        print(team_line)
    print(f"MCP server with the same store: {res.mcp_command}")
    for w in res.warnings:
        print(f"note: {w}")
    return 0


def describe_config(config: dict, *, harvest: bool) -> str:
    """The configuration the hook will use, one ``name: value`` per line (defaults spelled out)."""
    defaults = {"store": "the project's .memofs (the agent's project folder, else the nearest enclosing store,"
                         " else the git root, else the session's folder)", "chroma_url": "none (embedded Chroma in the store)",
                "project": "the name of the folder holding the store", "embedding": "the store's own (minilm for a new one)",
                "judges": "the default chain (`consolidate judges`)"}
    lines = ["the hooks will use:"]
    for key, default in defaults.items():
        value = config.get(key)
        shown = ", ".join(value) if isinstance(value, list) else value
        lines.append(f"  {key.replace('_', ' ')}: {shown or default}")
    lines.append(f"  transcript harvest: {'on (SessionEnd, PreCompact)' if harvest else 'off'}")
    return "\n".join(lines)
