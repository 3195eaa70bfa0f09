"""``consolidate install-hook``: merge our hook commands into an agent CLI's settings file.

Claude Code (``.claude/settings.json``, project or user) and Gemini CLI (``.gemini/settings.json``)
share one shape: ``{"hooks": {EVENT: [{"matcher": ..., "hooks": [{"type": "command", "command":
..., "timeout": ...}]}]}}``. Claude Code's ``timeout`` is in seconds; Gemini CLI's in milliseconds,
and its hooks carry a ``name`` (used by ``/hooks enable|disable``) and a ``description``. We add one
group per event: with no ``matcher`` for session events (every source/reason of the event), with the
file tools as ``matcher`` for PreToolUse (Claude Code) and BeforeTool (Gemini CLI).

The merge keeps every other setting and every other hook; it is idempotent (a hook that already runs
``consolidate hook`` is ours: left alone, or its command updated in place when the path to
``consolidate`` changed); before an existing file is changed it is copied to
``settings.json.bak-<timestamp>``; the change is returned as a unified diff. A settings file that is
not valid JSON (or not a JSON object) is an error and is left untouched. Only the standard library.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import os
import re
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from consolidate.agents.hooks.payload import (BEFORE_TOOL_NAME, PRE_COMPACT_NAME, PRE_TOOL_USE_NAME, SESSION_END_NAME,
                                              SESSION_START_NAME, STOP_NAME)
from consolidate.core import settings
from consolidate.store import resolve
from consolidate.core.errors import BadInput
from consolidate.pipeline.run_options import check_options
from consolidate.core.atomic import write_atomic

if TYPE_CHECKING:
    import argparse

SCOPES = ("project", "user")


@dataclass(frozen=True)
class HookSpec:
    """One event we hook: its name in the agent's vocabulary and the fields of our hook entry."""

    event: str
    timeout: int
    name: str | None = None
    description: str | None = None
    #: installed only with --harvest (without it the event has nothing to do, so it is not installed)
    harvest_only: bool = False
    #: the tools the hook runs for (a regex over tool names), for tool events
    matcher: str | None = None


@dataclass(frozen=True)
class Agent:
    key: str
    label: str
    folder: str
    hooks: tuple[HookSpec, ...]
    project_notes: tuple[str, ...] = ()  # printed after a project-scope install
    #: the JSON file (in ``folder``) holding the hooks
    settings_file: str = "settings.json"
    #: ``(table, key)`` of a feature flag in ``folder/config.toml`` that must be true for hooks to run
    toml_flag: tuple[str, str] | None = None


AGENTS: dict[str, Agent] = {
    # https://docs.claude.com/en/docs/claude-code/hooks : timeout in seconds; SessionEnd hooks
    # share about 1.5 s in total by default (CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS).
    "claude-code": Agent(
        key="claude-code", label="Claude Code", folder=".claude",
        hooks=(HookSpec(SESSION_END_NAME, 5), HookSpec(SESSION_START_NAME, 10),
               HookSpec(PRE_COMPACT_NAME, 10, harvest_only=True),
               HookSpec(PRE_TOOL_USE_NAME, 5, matcher="Read|Edit|MultiEdit|Write|NotebookEdit")),
    ),
    # https://geminicli.com/docs/hooks/reference : timeout in milliseconds (default 60000); Gemini
    # CLI does not wait for SessionEnd hooks. PreCompact is called PreCompress there.
    "gemini-cli": Agent(
        key="gemini-cli", label="Gemini CLI", folder=".gemini",
        hooks=(
            HookSpec(SESSION_END_NAME, 5000, "consolidate-session-end",
                     "consolidate: queue the session end; a background worker consolidates the notes"),
            HookSpec(SESSION_START_NAME, 10000, "consolidate-session-start",
                     "consolidate: recall project memory as context for the new session"),
            HookSpec(BEFORE_TOOL_NAME, 5000, "consolidate-file-recall",
                     "consolidate: recall the memories about the file a tool reads or edits",
                     matcher="read_file|write_file|replace|read_many_files"),
        ),
        project_notes=("Gemini CLI runs a project's hooks only when the folder is trusted.",),
    ),
    # https://developers.openai.com/codex/hooks : hooks.json beside config.toml (project .codex/ or
    # ~/.codex/), the shape and seconds of Claude Code's; the payload has session_id, cwd,
    # transcript_path, hook_event_name (SessionStart with source startup|resume|clear, Stop after each
    # turn: no SessionEnd event). SessionStart's plain stdout is added to the model's context. Hooks
    # need `[features] codex_hooks = true` in versions before they were on by default (`hooks` is the
    # newer name of the flag; both are read).
    "codex": Agent(
        key="codex", label="Codex CLI", folder=".codex", settings_file="hooks.json",
        toml_flag=("features", "codex_hooks"),
        hooks=(HookSpec(STOP_NAME, 5), HookSpec(SESSION_START_NAME, 10)),
        project_notes=("Codex reads a project's .codex/ only when the project is trusted.",),
    ),
}


@dataclass
class InstallResult:
    agent: str
    path: Path
    command: str
    actions: list[str] = field(default_factory=list)  # "added SessionEnd", "updated SessionStart"
    diff: str = ""
    config: dict[str, Any] = field(default_factory=dict)  # what the hook will use (see hook_config)
    mcp_command: str = ""  # how to add the MCP server with the same store options
    backup: Path | None = None
    other_backups: list[Path] = field(default_factory=list)  # Codex: config.toml's
    written: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.actions)


def consolidate_argv() -> list[str]:
    """How to run this very ``consolidate`` from anywhere (no venv activated, any PATH): the console
    script being run, else the one beside this interpreter, else ``<python> -m consolidate``.
    Paths are absolute but symlinks are kept (a venv's ``bin/python`` must stay the venv's)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and Path(argv0).name in ("consolidate", "consolidate.exe") and Path(argv0).is_file():
        return [os.path.abspath(argv0)]
    bindir = Path(os.path.abspath(sys.executable)).parent
    for name in ("consolidate", "consolidate.exe"):
        candidate = bindir / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return [str(candidate)]
    return [os.path.abspath(sys.executable), "-m", "consolidate"]


#: The options that select the store and the judges, in the order they go on a command line.
CONFIG_KEYS = ("store", "chroma_url", "project", "embedding", "judges")
_SETTINGS: dict[str, settings.Setting] = {"chroma_url": settings.CHROMA_URL, "project": settings.PROJECT,
                                          "embedding": settings.EMBEDDING, "judges": settings.JUDGES}


def hook_config(*, store: str | os.PathLike | None = None, chroma_url: str | None = None,
                project: str | None = None, embedding: str | None = None, judges: list[str] | None = None,
                environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The configuration the installed hook (and the MCP server) will carry: each option as given,
    else from its environment variable at install time (``CONSOLIDATE_STORE`` ... ``CONSOLIDATE_JUDGES``,
    comma-separated), else None (the hook's own default then: the project's ``.memofs``,
    consolidate/store/resolve.py; the folder's name as project, the store's embedding, the default
    judge chain). ``store`` is made absolute (an option from the working folder, the setting from the
    project folder). Values are ``str`` except ``judges`` (a list or None)."""
    given = {"store": store, "chroma_url": chroma_url, "project": project, "embedding": embedding, "judges": judges}
    config: dict[str, Any] = {}
    for key in CONFIG_KEYS:
        if key == "store":  # an option from the working folder, the setting from the project's
            named = resolve.named(store, environ)
            config[key] = os.path.abspath(resolve.store_path(store or None, environ=environ)) if named else None
            continue
        config[key] = given[key] or _SETTINGS[key].get(environ) or None
    return config


def config_argv(config: dict[str, Any]) -> list[str]:
    """``--store S --chroma-url U --project P --embedding E --judge J ...`` for the options set in
    ``config`` (see :func:`hook_config`)."""
    argv: list[str] = []
    for key in ("store", "chroma_url", "project", "embedding"):
        if config.get(key):
            argv += ["--" + key.replace("_", "-"), str(config[key])]
    for judge in config.get("judges") or ():
        argv += ["--judge", str(judge)]
    return argv


def hook_command(*, store: str | os.PathLike | None = None, harvest: bool = False, output: str | None = None,
                 config: dict[str, Any] | None = None) -> str:
    """The shell command our hooks run: ``/abs/consolidate hook [--output gemini] [--store /abs/store]
    [--chroma-url U] [--project P] [--embedding E] [--judge J ...] [--harvest]`` (Gemini CLI reads a
    SessionStart hook's stdout as JSON only). ``config`` is :func:`hook_config`'s result; without
    it only ``store`` is used."""
    argv = consolidate_argv() + ["hook"]
    if output:
        argv += ["--output", output]
    argv += config_argv(config if config is not None else {"store": os.path.abspath(store) if store else None})
    if harvest:
        argv.append("--harvest")
    return shlex.join(argv)


#: The module the file recall hook (a tool event's: PreToolUse, BeforeTool) runs, its light entry.
FILE_HOOK_MODULE = "consolidate.agents.hooks.file_hook"
#: The same entry as a console script (pyproject.toml ``[project.scripts]``): the plugin's and the
#: extension's tool event run it from PATH (consolidate/agents/manifests.py).
FILE_RECALL_SCRIPT = "consolidate-file-recall"


def file_hook_command(command: str) -> str:
    """The command of the tool events (PreToolUse, BeforeTool) for the hook ``command``
    (:func:`hook_command`'s): ``<python> -m consolidate.agents.hooks.file_hook OPTIONS``, the same
    options, run by the interpreter of this ``consolidate`` (the file recall's light entry, which
    hands what it cannot answer to ``consolidate hook``; the console script costs the imports of
    the command line at every file the agent reads)."""
    tokens = shlex.split(command)
    i = tokens.index("hook")
    python = tokens[0] if i > 1 else os.path.abspath(sys.executable)  # `<python> -m consolidate hook`
    return shlex.join([python, "-m", FILE_HOOK_MODULE, *[t for t in tokens[i + 1:] if t != "--harvest"]])


def hook_argv(command: str) -> list[str]:
    """The ``consolidate hook`` arguments of one of our commands (``["hook", OPTION ...]``)."""
    tokens = shlex.split(command)
    if FILE_HOOK_MODULE in tokens:
        return ["hook", *tokens[tokens.index(FILE_HOOK_MODULE) + 1:]]
    if tokens and Path(tokens[0]).name in (FILE_RECALL_SCRIPT, FILE_RECALL_SCRIPT + ".exe"):
        return ["hook", *tokens[1:]]
    return tokens[tokens.index("hook"):]


def mcp_command(agent: str, config: dict[str, Any]) -> str:
    """How to add our MCP server to ``agent`` with the same store options as the hooks."""
    server = shlex.join(consolidate_argv() + ["mcp"] + config_argv(config))
    if agent == "gemini-cli":
        return f"gemini mcp add consolidate {server}"
    if agent == "codex":
        return f"codex mcp add consolidate -- {server}"
    return f"claude mcp add consolidate -- {server}"


def check_command(command: str, *, parse_hook_argv: Callable[[list[str]], argparse.Namespace],
                  default_store: Path | None = None, project_dir: str | os.PathLike | None = None) -> None:
    """Check the hook command about to be written as the hook will run it, so that a setting the
    worker would refuse is refused here instead (exit 2 or 4, one line, nothing written): its
    arguments (from ``hook`` on) parsed by ``parse_hook_argv``, the ``consolidate hook`` command's
    own parser (the CLI's, consolidate.cli.main.parse_hook_argv: it exits with one line on stderr for
    arguments it refuses), then its store options and judge chain checked as ``run`` checks them
    (consolidate.pipeline.run_options.check_options; no model is built or called).
    ``default_store``: the store the hook uses when the command names none (a project install: the
    project's ``.memofs``; a user install: None, any project's).

    Raises BadInput when the parser refuses the arguments; ConfigError, StorePathError or
    EmbeddingMismatch from the option check."""
    argv = hook_argv(command)
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            args = parse_hook_argv(argv)
    except SystemExit:
        line = " ".join(said.getvalue().split()) or "its arguments are refused"
        raise BadInput(f"the hook command would not run: {line}; nothing was written") from None
    store = getattr(args, "store", None) or default_store
    check_options(store=store, chroma_url=getattr(args, "chroma_url", None) or settings.CHROMA_URL.get(),
                  embedding=getattr(args, "embedding", None) or settings.EMBEDDING.get(), judges=args.judge,
                  project_dir=project_dir)


def is_our_command(command: Any) -> bool:
    """True for a command that runs ``consolidate hook`` (any path to it, ``-m consolidate`` too) or
    the file recall's light entry (``-m consolidate.agents.hooks.file_hook``)."""
    if not isinstance(command, str):
        return False
    try:
        tokens = shlex.split(command)
    except ValueError:
        return False
    for i, tok in enumerate(tokens[:-1]):
        if Path(tok).name in ("consolidate", "consolidate.exe") and tokens[i + 1] == "hook":
            return True
        if tok == "-m" and tokens[i + 1] == "consolidate" and i + 2 < len(tokens) and tokens[i + 2] == "hook":
            return True
        if tok == "-m" and tokens[i + 1] == FILE_HOOK_MODULE:
            return True
    return bool(tokens) and Path(tokens[0]).name in (FILE_RECALL_SCRIPT, FILE_RECALL_SCRIPT + ".exe")


def settings_path(agent: str, scope: str = "project", *, cwd: str | os.PathLike | None = None) -> Path:
    """``<cwd>/.claude/settings.json`` (project) or ``$HOME/.claude/settings.json`` (user);
    ``.codex/hooks.json`` for Codex."""
    spec = _agent(agent)
    if scope not in SCOPES:
        raise BadInput(f"unknown scope {scope!r}: use project or user")
    base = Path(cwd or os.getcwd()) if scope == "project" else Path.home()
    return base / spec.folder / spec.settings_file


def merge_hooks(data: dict[str, Any], agent: str, command: str, *, where: str = "settings",
                harvest: bool = True, tool_command: str | None = None) -> list[str]:
    """Merge our hooks into ``data`` (a parsed settings file) in place; returns what changed
    (``["added SessionEnd", ...]``, empty when everything was already there). Without ``harvest``
    the harvest-only events (PreCompact) get no hook of ours, and one installed earlier is removed
    (``"removed PreCompact"``): every hook we install does something. A tool event (one with a
    ``matcher``: PreToolUse, BeforeTool) gets ``tool_command`` when given (:func:`install`: the file
    recall's light entry, :func:`file_hook_command`), else ``command``.

    Raises BadInput when ``hooks`` or an event's value does not have the documented shape."""
    spec = _agent(agent)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise BadInput(f"{where}: `hooks` is a {type(hooks).__name__}, not an object; fix it by hand")
    actions = []
    for h in spec.hooks:
        if h.harvest_only and not harvest:
            if _remove_ours(hooks, h.event):
                actions.append(f"removed {h.event}")
            continue
        groups = hooks.setdefault(h.event, [])
        if not isinstance(groups, list):
            raise BadInput(f"{where}: `hooks.{h.event}` is a {type(groups).__name__}, not a list; fix it by hand")
        wanted = tool_command if h.matcher and tool_command else command
        ours = [entry for group in groups if isinstance(group, dict) and isinstance(group.get("hooks"), list)
                for entry in group["hooks"] if isinstance(entry, dict) and is_our_command(entry.get("command"))]
        if ours:
            stale = [entry for entry in ours if entry.get("command") != wanted]
            for entry in stale:
                entry["command"] = wanted
            if stale:
                actions.append(f"updated {h.event}")
            continue
        new: dict[str, Any] = {}
        if h.name:
            new["name"] = h.name
        new.update({"type": "command", "command": wanted, "timeout": h.timeout})
        if h.description:
            new["description"] = h.description
        groups.append({**({"matcher": h.matcher} if h.matcher else {}), "hooks": [new]})
        actions.append(f"added {h.event}")
    return actions


def _remove_ours(hooks: dict[str, Any], event: str) -> bool:
    """Remove our hook entries from ``hooks[event]`` (and groups left empty); whether any was there."""
    groups = hooks.get(event)
    if not isinstance(groups, list):
        return False
    removed = False
    kept_groups = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            entries = [e for e in group["hooks"] if not (isinstance(e, dict) and is_our_command(e.get("command")))]
            if len(entries) != len(group["hooks"]):
                removed = True
                if not entries:
                    continue
                group["hooks"] = entries
        kept_groups.append(group)
    if removed:
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    return removed


def install(agent: str, scope: str = "project", *, dry_run: bool = False, store: str | None = None,
            harvest: bool = False, cwd: str | os.PathLike | None = None, now: float | None = None,
            chroma_url: str | None = None, project: str | None = None, embedding: str | None = None,
            judges: list[str] | None = None, environ: dict[str, str] | None = None,
            parse_hook_argv: Callable[[list[str]], argparse.Namespace]) -> InstallResult:
    """Install our hooks for ``agent`` (``claude-code`` or ``gemini-cli``) in its ``scope`` settings
    file. Writes nothing when ``dry_run`` or when the hooks are already there. The store options
    and judges (given, else from the environment: :func:`hook_config`) go into the hook command,
    checked first by :func:`check_command` with ``parse_hook_argv`` (consolidate.cli.main's);
    ``result.config`` says what the hook will use, ``result.mcp_command`` how to add the MCP server.

    Raises BadInput when the existing file cannot be read, is not valid JSON or not a JSON object;
    what :func:`check_command` raises for a command the hook would refuse (nothing written)."""
    spec = _agent(agent)
    if harvest and agent == "codex":
        raise BadInput("--harvest reads Claude Code's transcripts, not Codex's: install the Codex hooks without it"
                       " (the agent writes notes with the MCP `note` tool)")
    path = settings_path(agent, scope, cwd=cwd)
    config = hook_config(store=store, chroma_url=chroma_url, project=project, embedding=embedding, judges=judges,
                         environ=environ)
    command = hook_command(harvest=harvest, output="gemini" if agent == "gemini-cli" else None, config=config)
    default_store = Path(resolve.store_path(cwd=os.path.abspath(cwd) if cwd else None, environ={})) if scope == "project" else None
    check_command(command, parse_hook_argv=parse_hook_argv, default_store=default_store, project_dir=cwd)
    result = InstallResult(agent=spec.key, path=path, command=command, config=config,
                           mcp_command=mcp_command(spec.key, config))

    old_text = None
    if path.exists():
        try:
            old_text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}; nothing was changed",
                           path=str(path)) from None
    if old_text is None or not old_text.strip():
        data: Any = {}
    else:
        try:
            data = json.loads(old_text)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path} is not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg});"
                           f" fix it or move it away; nothing was changed", path=str(path)) from None
        if not isinstance(data, dict):
            raise BadInput(f"{path} holds a JSON {type(data).__name__}, not an object; nothing was changed",
                           path=str(path))
    result.actions = merge_hooks(data, agent, command, where=str(path), harvest=harvest,
                                 tool_command=file_hook_command(command))
    if agent == "gemini-cli":
        hooks_config = data.get("hooksConfig")
        if isinstance(hooks_config, dict) and hooks_config.get("enabled") is False:
            result.warnings.append(f"hooks are disabled in {path} (hooksConfig.enabled is false):"
                                   " Gemini CLI will not run them until you enable them")
    if scope == "project":
        result.warnings.extend(spec.project_notes)
    toml_change = _toml_flag_change(path.parent / "config.toml", spec.toml_flag, result) if spec.toml_flag else None
    if not result.changed:
        return result

    changes = []
    if result.actions and any(not a.startswith("enabled ") for a in result.actions):
        changes.append((path, old_text, json.dumps(data, indent=_indent_of(old_text), ensure_ascii=False) + "\n"))
    if toml_change is not None:
        changes.append(toml_change)
    result.diff = "".join("".join(difflib.unified_diff(
        (old or "").splitlines(keepends=True), new.splitlines(keepends=True),
        fromfile=str(where) if old is not None else "/dev/null", tofile=str(where))) for where, old, new in changes)
    if dry_run:
        return result
    for where, old, new in changes:
        target = where.resolve() if where.is_symlink() else where  # keep a dotfiles symlink a symlink
        target.parent.mkdir(parents=True, exist_ok=True)
        if old is not None:
            backup = _backup(target, now)
            if where == path:
                result.backup = backup
            else:
                result.other_backups.append(backup)
        _write_atomic(target, new)
    result.written = True
    return result


def _toml_flag_change(path: Path, flag: tuple[str, str], result: InstallResult) -> tuple[Path, str | None, str] | None:
    """The change of the agent's ``config.toml`` that turns its hooks feature flag on (Codex:
    ``[features] codex_hooks = true``), with every other setting, comment and layout kept (tomlkit):
    ``(path, old text or None, new text)``, or None when the flag (or its newer name ``hooks``) is
    already true; a flag set to false is left as the user set it, with a warning. Appends
    ``"enabled TABLE.KEY"`` to ``result.actions`` when there is a change.

    Raises BadInput when the file cannot be read or is not valid TOML (nothing is changed)."""
    import tomlkit  # noqa: PLC0415 - third-party tomlkit: loaded only when a TOML config is edited
    from tomlkit.exceptions import TOMLKitError  # noqa: PLC0415 - third-party tomlkit, as above

    table, key = flag
    old_text = None
    if path.exists():
        try:
            old_text = path.read_bytes().decode("utf-8")  # as written: CRLF line ends stay CRLF
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}; nothing was changed",
                           path=str(path)) from None
    try:
        doc = tomlkit.parse(old_text or "")
    except TOMLKitError as exc:
        raise BadInput(f"{path} is not valid TOML ({' '.join(str(exc).split())}); fix it or move it away;"
                       " nothing was changed", path=str(path)) from None
    section = doc.get(table)
    if section is not None and not isinstance(section, dict):
        raise BadInput(f"{path}: `{table}` is not a table; fix it by hand; nothing was changed", path=str(path))
    names = (key, "hooks")
    values = {n: section.get(n) for n in names} if section is not None else {}
    if any(v is True for v in values.values()):
        return None
    off = [n for n, v in values.items() if v is False]
    if off:
        result.warnings.append(f"{table}.{off[0]} is false in {path}: Codex will not run the hooks until you set it"
                               " to true")
        return None
    if section is None:
        section = tomlkit.table()
        doc[table] = section
    section[key] = True
    result.actions.append(f"enabled {table}.{key}")
    new_text = tomlkit.dumps(doc)
    if old_text and "\r\n" in old_text:  # a CRLF file: the lines added are CRLF too, the rest as it was
        new_text = re.sub(r"(?<!\r)\n", "\r\n", new_text)
    return path, old_text, new_text


def _agent(agent: str) -> Agent:
    try:
        return AGENTS[agent]
    except KeyError:
        raise BadInput(f"unknown agent {agent!r}: use {' or '.join(AGENTS)}") from None


def _indent_of(text: str | None) -> int | str:
    """The indent of an existing file (so the diff shows only our change); 2 by default."""
    m = re.search(r"^\{[ \t]*\r?\n([ \t]+)\S", text or "")
    if not m:
        return 2
    ws = m.group(1)
    return ws if "\t" in ws else len(ws)


def _backup(path: Path, now: float | None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    backup = path.with_name(f"{path.name}.bak-{stamp}")
    n = 1
    while backup.exists():
        backup = path.with_name(f"{path.name}.bak-{stamp}-{n}")
        n += 1
    shutil.copy2(path, backup)
    return backup


def _write_atomic(path: Path, text: str) -> None:
    """Replace a user's settings file atomically, keeping its permission bits (consolidate/core/atomic.py)."""

    write_atomic(path, text, private=False)
