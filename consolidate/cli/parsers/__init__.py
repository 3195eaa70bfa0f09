"""The parser of every command, one module per group (``register(sub, common)``), apart from what the
commands do: the standard lazy-subcommand pattern. A parser names the function its command runs
(``command("read", "cmd_recall")``: consolidate.cli.commands.read.cmd_recall), and that module is
imported when the command runs, so ``consolidate --help`` and the hook load only the declarations;
each command module imports what it needs at module level.

:data:`COMMANDS` is the one place that lists every command: the parser module that registers it and
one example, shown at the end of its ``--help`` (tests/unit/cli/test_command_table.py parses every example and
checks that each command has its help and example). To add a command: register it in a module here,
add its row, and write what it does in a module of consolidate.cli.commands."""

from __future__ import annotations

import importlib
from typing import Any

#: Every command, in ``--help`` order: (module that registers it, an example).
COMMANDS: dict[str, tuple[str, str]] = {
    "note": ("session", 'consolidate note --session s1 "Use pnpm, not npm: npm rewrites the lockfile" --flag'
                        " --kind preference"),
    "import": ("session", "consolidate import notes.jsonl --session s1"),
    "notes-file": ("session", "consolidate notes-file memory-bank/progress.md --session s1"),
    "end": ("session", 'consolidate end --session s1 --outcome failure --reason "tests still red"'),
    "session": ("workspace_cmd", 'consolidate session start --session s1 --task "fix the login timeout"'),
    "run": ("run", "consolidate run --session s1 --judge rules --time-box 60"),
    "recall": ("read", 'consolidate recall "package manager" -k 5'),
    "graph": ("read", "consolidate graph ledgerkit --depth 2"),
    "status": ("read", "consolidate status --json"),
    "hook": ("hook", "consolidate hook --session s1 --outcome success --no-worker"),
    "worker": ("lifecycle", "consolidate worker --time-box 60"),
    "batch": ("lifecycle", "consolidate batch --concurrency 4 --since 2026-11-01"),
    "curate": ("lifecycle", "consolidate curate --review --judge cli:claude"),
    "eval": ("eval_cmd", "consolidate eval --labels labels.jsonl --judge rules --limit 100"),
    "demo": ("eval_cmd", "consolidate demo --keep"),
    "judges": ("judges_cmd", "consolidate judges --no-probe"),
    "mcp": ("mcp_cmd", "consolidate mcp --store ~/my-app/.memofs"),
    "install-hook": ("install_cmd", "consolidate install-hook claude-code --harvest --dry-run"),
    "disputes": ("memory_cmd", "consolidate disputes --json"),
    "resolve": ("memory_cmd", "consolidate resolve MEMORY_ID --keep OTHER_MEMORY_ID"),
    "forget": ("memory_cmd", 'consolidate forget MEMORY_ID --reason "the service moved to port 8443"'),
    "backfill": ("memory_cmd", "consolidate backfill --dry-run"),
    "doctor": ("memory_cmd", "consolidate doctor --repair"),
    "runs": ("memory_cmd", "consolidate runs --limit 10"),
    "undo": ("memory_cmd", "consolidate undo RUN_ID"),
    "team": ("team_cmd", "consolidate team init --chroma-url https://chroma.example.com --project my-app"),
    "sync": ("team_cmd", "consolidate sync --status"),
    "review": ("review_cmd", "consolidate review --approve MEMORY_ID"),
    "export": ("share_cmd", "consolidate export --file AGENTS.md --limit 30"),
    "import-transcripts": ("transcripts_cmd", "consolidate import-transcripts --claude-code"),
    "ui": ("ui_cmd", "consolidate ui --port 8800 --no-browser"),
}

#: The command modules, in registration order.
MODULES = tuple(dict.fromkeys(module for module, _ in COMMANDS.values()))

#: The package of the modules the commands run.
COMMANDS_PACKAGE = "consolidate.cli.commands"


class Command:
    """A command's function by name: ``module`` (under consolidate.cli.commands) and ``name``,
    imported on the first call. Called as the function itself: ``args.func(args)``."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def resolve(self) -> Any:
        """The function itself (its module imported now)."""
        module = self.module if "." in self.module else f"{COMMANDS_PACKAGE}.{self.module}"
        return getattr(importlib.import_module(module), self.name)

    def __call__(self, args) -> int:
        return self.resolve()(args)

    def __repr__(self) -> str:
        return f"{self.module if '.' in self.module else COMMANDS_PACKAGE + '.' + self.module}.{self.name}"


def command(module: str, name: str) -> Command:
    """The function ``name`` of consolidate.cli.commands.``module`` (or of ``module`` when it is a dotted
    name: ``consolidate.agents.hooks.full``), imported when the command runs."""
    return Command(module, name)
