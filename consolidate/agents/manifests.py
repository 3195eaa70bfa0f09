"""The Claude Code plugin and the Gemini CLI extension this repository ships, written from one place.

Files (paths from the repository root)::

    .claude-plugin/marketplace.json              the marketplace: `/plugin marketplace add OWNER/REPO`
    plugins/consolidate/.claude-plugin/plugin.json   the plugin: userConfig (store options) and the MCP server
    plugins/consolidate/hooks/hooks.json         its hooks (Claude Code's default location)
    gemini-extension.json                        the extension: settings (store options) and the MCP server
    hooks/hooks.json                             its hooks (Gemini CLI reads only this file)

The Claude Code plugin lives in ``plugins/consolidate`` and not at the root because both agent CLIs
load ``hooks/hooks.json`` from their root by default, in their own vocabularies (Claude Code's
``PreCompact``, Gemini CLI's millisecond timeouts): one root cannot serve both. The hook entries are
the ones ``consolidate install-hook`` merges into a settings file (:data:`consolidate.agents.install.AGENTS`,
with ``--harvest`` for Claude Code), so both ways to install run the same hooks; only the command
differs: it runs the ``consolidate`` on PATH and takes the store options from the plugin's or
extension's settings (consolidate/agents/plugin_env.py) instead of from its command line.

``python -m consolidate.agents.manifests`` writes the files; ``--check`` exits 1 when a committed
file differs from what would be written (tests/unit/agents/test_plugin_manifests.py checks the committed files
against the documented fields and runs their commands).

Field sources: Claude Code's plugin manifest reference and plugin marketplaces page (code.claude.com
/docs/en/plugins, manifest-reference: ``name`` required; ``userConfig`` options need ``type``,
``title``, ``description``; keys are identifiers, passed to hooks as ``CLAUDE_PLUGIN_OPTION_<KEY>``,
to MCP configs as ``${user_config.KEY}``; ``${CLAUDE_PLUGIN_ROOT}``); Gemini CLI's extension
reference (docs/extensions/reference.md: ``name``, ``version``, ``description``, ``mcpServers``,
``settings`` of ``name``/``description``/``envVar``/``sensitive``, hooks only in ``hooks/hooks.json``,
``${extensionPath}``, ``${workspacePath}``, ``${/}``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from consolidate import __version__
from consolidate.agents.install import FILE_RECALL_SCRIPT, merge_hooks

NAME = "consolidate"
DESCRIPTION = ("Long-term memory for coding agents: notes written during a session are judged at its end; what"
               " deserves it graduates into a per-project memory recalled at the next session start.")
PLUGIN_DIR = Path("plugins") / NAME

#: The store options the user is asked for: (key, title, description). The key is the userConfig key
#: (Claude Code) and, upper-cased after ``CONSOLIDATE_``, the environment variable (Gemini CLI).
OPTIONS = (
    ("store", "Store folder",
     "Where the memory store lives; relative paths are taken from the project folder. Empty: .memofs in"
     " the project."),
    ("chroma_url", "Chroma server URL",
     "A team's Chroma server (http://HOST:PORT) holding the long-term memories. Empty: the store's own"
     " embedded index."),
    ("project", "Memory project", "The scope of new memories. Empty: the name of the folder holding the store."),
    ("embedding", "Embedding", "minilm (default), hash, or chroma:NAME. Empty: the store's own."),
    ("judges", "Judges", "Judge chain, comma-separated (api:MODEL, cli:PRESET, rules, noop). Empty: the default"
                         " chain (the first agent CLI on PATH, then api, then noop)."),
)


def _version() -> str:

    return __version__


def claude_hook_command() -> str:
    """What the plugin's hooks run: the installed ``consolidate`` with --harvest (the options come
    from ``CLAUDE_PLUGIN_OPTION_*``)."""
    return "consolidate hook --harvest"


def gemini_hook_command() -> str:
    """What the extension's hooks run (the options come from the extension's ``.env``)."""
    return 'consolidate --env-file-if-exists "${extensionPath}${/}.env" hook --output gemini'


def claude_tool_command() -> str:
    """What the plugin's tool event (PreToolUse) runs: the file recall's light entry as a console
    script (consolidate/agents/hooks/file_hook.py; ``consolidate hook`` would cost the imports of the
    command line at every file the agent reads)."""
    return FILE_RECALL_SCRIPT


def gemini_tool_command() -> str:
    """What the extension's tool event (BeforeTool) runs: the light entry, with the extension's ``.env``."""
    return FILE_RECALL_SCRIPT + ' --env-file-if-exists "${extensionPath}${/}.env" --output gemini'


def hooks_file(agent: str, command: str, tool_command: str | None = None) -> dict[str, Any]:
    """``{"hooks": {...}}`` as ``consolidate install-hook AGENT --harvest`` would merge it into an
    empty settings file (its tool events running ``tool_command`` when given)."""

    data: dict[str, Any] = {}
    merge_hooks(data, agent, command, harvest=True, tool_command=tool_command)
    return {"hooks": data["hooks"]}


def plugin_json() -> dict[str, Any]:
    return {
        "name": NAME,
        "version": _version(),
        "description": DESCRIPTION,
        "author": {"name": "consolidate maintainers"},
        "license": "MIT",
        "keywords": ["memory", "mcp", "hooks", "agents"],
        "userConfig": {key: {"type": "string", "title": title, "description": text, "required": False,
                             "default": ""} for key, title, text in OPTIONS},
        "mcpServers": {NAME: {"command": "consolidate", "args": ["mcp"],
                              "env": {f"CLAUDE_PLUGIN_OPTION_{key.upper()}": "${user_config.%s}" % key
                                      for key, _t, _d in OPTIONS}}},
    }


def marketplace_json() -> dict[str, Any]:
    return {
        "name": NAME,
        "owner": {"name": "consolidate maintainers"},
        "description": "The consolidate plugin for Claude Code",
        "plugins": [{"name": NAME, "source": "./" + PLUGIN_DIR.as_posix(), "description": DESCRIPTION,
                     "version": _version(), "license": "MIT"}],
    }


def gemini_extension_json() -> dict[str, Any]:
    return {
        "name": NAME,
        "version": _version(),
        "description": DESCRIPTION,
        "mcpServers": {NAME: {"command": "consolidate", "args": ["--env-file-if-exists", "${extensionPath}${/}.env", "mcp"],
                              "cwd": "${workspacePath}"}},
        "settings": [{"name": title, "description": text, "envVar": "CONSOLIDATE_" + key.upper()}
                     for key, title, text in OPTIONS],
    }


def files() -> dict[str, dict[str, Any]]:
    """``{path relative to the repository root: JSON data}`` of every manifest."""
    return {
        ".claude-plugin/marketplace.json": marketplace_json(),
        (PLUGIN_DIR / ".claude-plugin" / "plugin.json").as_posix(): plugin_json(),
        (PLUGIN_DIR / "hooks" / "hooks.json").as_posix(): hooks_file("claude-code", claude_hook_command(), claude_tool_command()),
        "gemini-extension.json": gemini_extension_json(),
        "hooks/hooks.json": hooks_file("gemini-cli", gemini_hook_command(), gemini_tool_command()),
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``[--check] [ROOT]``: write the manifests under ROOT (default: the repository holding this
    package), or with --check report the ones that differ and exit 1."""
    argv = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in argv
    rest = [a for a in argv if a != "--check"]
    root = Path(rest[0]) if rest else Path(__file__).resolve().parents[2]
    stale = []
    for rel, data in files().items():
        path = root / rel
        text = render(data)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for rel in stale:
        print(f"out of date: {rel} (python -m consolidate.agents.manifests writes it)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
