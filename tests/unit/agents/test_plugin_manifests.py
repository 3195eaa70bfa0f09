"""The Claude Code plugin and the Gemini CLI extension (issue 21, item 10): the committed manifests are
current, carry only documented fields of the documented types, and every command they declare works
when run the way the agent CLI runs it: each hook with its documented payload on stdin, each MCP
server as a real stdio process, with the store options chosen in the plugin's or extension's settings.

Field rules (what each agent CLI documents and validates):
- Claude Code, plugin manifest reference and plugin marketplaces (code.claude.com/docs/en/plugins):
  plugin ``name`` required (kebab-case); ``userConfig`` keys are identifiers, each option an object of
  ``type`` (string, number, boolean, directory, file), ``title``, ``description`` (all three required)
  and optionally ``required``, ``default``, ``multiple``, ``sensitive``, ``min``, ``max``, nothing else;
  ``mcpServers`` stdio entries ``command`` (required), ``args``, ``env``; hook events from the
  documented list, ``command`` hooks with ``type``, ``command`` and a positive ``timeout`` in seconds;
  a marketplace has ``name``, ``owner.name`` and ``plugins`` of ``name`` and ``source`` (a relative
  source starts with ``./``).
- Gemini CLI, docs/extensions/reference.md and docs/hooks: ``name`` (lowercase, dashes), ``version``,
  ``description``, ``mcpServers``, ``settings`` entries of ``name``, ``description``, ``envVar``
  (``sensitive`` optional); hooks in ``hooks/hooks.json`` only, events from the documented list,
  timeouts in milliseconds; variables ``${extensionPath}``, ``${workspacePath}``, ``${/}``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import anyio
import jsonschema
import pytest

from consolidate import Store
from consolidate.agents import manifests as pm
from consolidate.agents.install import AGENTS
from paths import REPO

ROOT = REPO
BIN = str(Path(sys.executable).parent)  # where the installed `consolidate` is

CLAUDE_EVENTS = ["PreToolUse", "PostToolUse", "PostToolUseFailure", "Notification", "UserPromptSubmit",
                 "SessionStart", "SessionEnd", "Stop", "SubagentStart", "SubagentStop", "PreCompact",
                 "PostCompact", "PermissionRequest"]
GEMINI_EVENTS = ["SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeModel", "AfterModel",
                 "BeforeToolSelection", "BeforeTool", "AfterTool", "PreCompress", "Notification"]


def _hooks_schema(events, *, gemini):
    entry = {"type": "object", "required": ["type", "command"],
             "properties": {"type": {"const": "command"}, "command": {"type": "string", "minLength": 1},
                            "timeout": {"type": "number", "exclusiveMinimum": 0}}}
    if gemini:
        entry["properties"].update({"name": {"type": "string"}, "description": {"type": "string"}})
    entry["additionalProperties"] = False
    return {"type": "object", "required": ["hooks"], "additionalProperties": False,
            "properties": {"hooks": {"type": "object", "propertyNames": {"enum": events},
                                     "additionalProperties": {"type": "array", "minItems": 1, "items": {
                                         "type": "object", "required": ["hooks"], "additionalProperties": False,
                                         "properties": {"matcher": {"type": "string"},
                                                        "hooks": {"type": "array", "minItems": 1,
                                                                  "items": entry}}}}}}}


USER_CONFIG_OPTION = {"type": "object", "required": ["type", "title", "description"], "additionalProperties": False,
                      "properties": {"type": {"enum": ["string", "number", "boolean", "directory", "file"]},
                                     "title": {"type": "string"}, "description": {"type": "string"},
                                     "required": {"type": "boolean"}, "default": {"type": ["string", "number",
                                                                                          "boolean", "array"]},
                                     "multiple": {"type": "boolean"}, "sensitive": {"type": "boolean"},
                                     "min": {"type": "number"}, "max": {"type": "number"}}}
STDIO_SERVER = {"type": "object", "required": ["command"],
                "properties": {"command": {"type": "string", "minLength": 1},
                               "args": {"type": "array", "items": {"type": "string"}},
                               "env": {"type": "object", "additionalProperties": {"type": "string"}},
                               "cwd": {"type": "string"}}}
PLUGIN = {"type": "object", "required": ["name"],
          "properties": {"name": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"},
                         "version": {"type": "string"}, "description": {"type": "string"},
                         "author": {"type": "object", "required": ["name"]}, "license": {"type": "string"},
                         "keywords": {"type": "array", "items": {"type": "string"}},
                         "userConfig": {"type": "object", "propertyNames": {"pattern": r"^[A-Za-z_]\w*$"},
                                        "additionalProperties": USER_CONFIG_OPTION},
                         "mcpServers": {"type": "object", "additionalProperties": STDIO_SERVER}},
          "additionalProperties": False}
MARKETPLACE = {"type": "object", "required": ["name", "owner", "plugins"],
               "properties": {"name": {"type": "string", "minLength": 1}, "description": {"type": "string"},
                              "owner": {"type": "object", "required": ["name"]},
                              "plugins": {"type": "array", "minItems": 1, "items": {
                                  "type": "object", "required": ["name", "source"],
                                  "properties": {"name": {"type": "string"},
                                                 "source": {"type": "string", "pattern": r"^\./"},
                                                 "description": {"type": "string"}, "version": {"type": "string"},
                                                 "license": {"type": "string"}}}}},
               "additionalProperties": False}
GEMINI = {"type": "object", "required": ["name", "version"],
          "properties": {"name": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"},
                         "version": {"type": "string"}, "description": {"type": "string"},
                         "mcpServers": {"type": "object", "additionalProperties": STDIO_SERVER},
                         "contextFileName": {"type": ["string", "array"]},
                         "excludeTools": {"type": "array", "items": {"type": "string"}},
                         "settings": {"type": "array", "items": {
                             "type": "object", "required": ["name", "description", "envVar"],
                             "additionalProperties": False,
                             "properties": {"name": {"type": "string"}, "description": {"type": "string"},
                                            "envVar": {"type": "string", "pattern": "^[A-Z_][A-Z0-9_]*$"},
                                            "sensitive": {"type": "boolean"}}}}},
          "additionalProperties": False}


def _load(rel):
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


def test_committed_manifests_are_the_generated_ones():
    assert pm.main(["--check", str(ROOT)]) == 0


def test_claude_code_plugin_and_marketplace_have_the_documented_fields():
    market = _load(".claude-plugin/marketplace.json")
    jsonschema.validate(market, MARKETPLACE)
    [entry] = market["plugins"]
    plugin_dir = ROOT / entry["source"]
    plugin = json.loads((plugin_dir / ".claude-plugin" / "plugin.json").read_text())
    jsonschema.validate(plugin, PLUGIN)
    assert plugin["name"] == entry["name"] == "consolidate"
    assert plugin_dir.resolve().is_relative_to(ROOT)  # a relative source stays inside the marketplace
    hooks = json.loads((plugin_dir / "hooks" / "hooks.json").read_text())
    jsonschema.validate(hooks, _hooks_schema(CLAUDE_EVENTS, gemini=False))
    # the MCP server gets every userConfig option, by the documented substitution
    env = plugin["mcpServers"]["consolidate"]["env"]
    assert {v for v in env.values()} == {"${user_config.%s}" % k for k in plugin["userConfig"]}


def test_gemini_cli_extension_has_the_documented_fields():
    ext = _load("gemini-extension.json")
    jsonschema.validate(ext, GEMINI)
    assert "hooks" not in ext  # hooks are read from hooks/hooks.json only
    jsonschema.validate(_load("hooks/hooks.json"), _hooks_schema(GEMINI_EVENTS, gemini=True))
    used = re.findall(r"\$\{([^}]*)\}", json.dumps(ext) + (ROOT / "hooks" / "hooks.json").read_text())
    assert set(used) <= {"extensionPath", "workspacePath", "/", "pathSeparator"}


@pytest.mark.parametrize("agent, rel", [("claude-code", "plugins/consolidate/hooks/hooks.json"),
                                        ("gemini-cli", "hooks/hooks.json")])
def test_the_hooks_are_the_ones_install_hook_installs(agent, rel):
    """Both ways to install run the same events with the same budgets (install-hook --harvest)."""
    spec = {h.event: h for h in AGENTS[agent].hooks}
    hooks = _load(rel)["hooks"]
    assert {"SessionStart", "SessionEnd"} <= set(hooks) <= set(spec)
    for event, groups in hooks.items():
        [group] = groups
        [entry] = group["hooks"]
        assert entry["timeout"] == spec[event].timeout and group.get("matcher") == getattr(spec[event], "matcher", None)


# -- the commands, run as the agent CLI runs them ----------------------------------------------------

def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONSOLIDATE_", "CLAUDE_PLUGIN_OPTION_"))}
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env.update(extra)
    return env


def _run_hook(command, payload, *, env, cwd):
    out = subprocess.run(["bash", "-c", command], input=json.dumps(payload), capture_output=True, text=True,
                         env=env, cwd=cwd, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _wait_done(store_path, sid, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        s = Store(store_path, embedding="hash")
        try:
            end = s.sessions.session_end(sid)
        finally:
            s.close()
        if end and end["status"] not in ("queued", "running"):
            return end
        time.sleep(0.5)
    return end


AUTH = "auth.py: check_token() rejects tokens that expired more than 30 seconds ago"


def _seed(store_path):
    """One memory about auth.py in the chosen store (for the file-recall hook)."""
    from consolidate.pipeline.run import run_queue
    from consolidate.judges.chain import JudgeChain
    from consolidate.judges.scripted import ScriptedJudge

    s = Store(store_path, embedding="hash")
    s.sessions.add_note("seed", AUTH, flag=True, kind="fact")
    s.sessions.end("seed", "success")
    run_queue(s, chain_factory=lambda: JudgeChain([ScriptedJudge({})]))
    s.close()


def _transcript(path):
    text = ("The integration tests need the Postgres container from docker-compose.test.yml running first,"
            " because the fixtures connect to port 5433 and nothing else provides it.")
    path.write_text(json.dumps({"type": "assistant", "uuid": "a1", "message": {"content": [
        {"type": "text", "text": text}]}}) + "\n")
    return str(path)


@pytest.mark.spawns
def test_claude_code_plugin_hooks_run_with_the_plugin_options(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    store = tmp_path / "chosen" / "store"  # the store the user chose in the plugin's dialog
    plugin_dir = ROOT / "plugins" / "consolidate"
    hooks = json.loads((plugin_dir / "hooks" / "hooks.json").read_text())["hooks"]
    env = _env(CLAUDE_PLUGIN_ROOT=str(plugin_dir), CLAUDE_PROJECT_DIR=str(project),
               CLAUDE_PLUGIN_OPTION_STORE=str(store), CLAUDE_PLUGIN_OPTION_EMBEDDING="hash",
               CLAUDE_PLUGIN_OPTION_JUDGES="noop", CLAUDE_PLUGIN_OPTION_PROJECT="chosen-project",
               CLAUDE_PLUGIN_OPTION_CHROMA_URL="")
    _seed(store)
    sid = "3f2a9c1e-claude-plugin"
    base = {"session_id": sid, "transcript_path": _transcript(tmp_path / "t.jsonl"), "cwd": str(project)}
    payloads = {"SessionStart": {**base, "hook_event_name": "SessionStart", "source": "startup"},
                "PreToolUse": {**base, "hook_event_name": "PreToolUse", "tool_name": "Read",
                               "tool_input": {"file_path": str(project / "src" / "auth.py")}},
                "PreCompact": {**base, "hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": ""},
                "SessionEnd": {**base, "hook_event_name": "SessionEnd", "reason": "exit"}}
    assert set(hooks) <= set(payloads)
    for event in payloads:
        if event not in hooks:
            continue
        group = hooks[event][0]
        if group.get("matcher"):
            assert re.fullmatch(group["matcher"], payloads[event]["tool_name"])
        command = group["hooks"][0]["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(plugin_dir))
        out = _run_hook(command, payloads[event], env=env, cwd=project)
        if event == "SessionStart":
            assert out.startswith(f"consolidate: this is session {sid}") and AUTH in out
        if event == "PreToolUse":
            assert "check_token() rejects tokens" in out
        if event == "PreCompact":
            s = Store(store, embedding="hash")
            assert any("Postgres container" in n.content for n in s.sessions.notes(sid))
            s.close()
    assert not (project / ".memofs").exists()  # the chosen store, not the default one
    end = _wait_done(store, sid)
    assert end and end["outcome"] == "success" and end["status"] != "queued"
    log = (store / "logs" / "worker.log").read_text() if (store / "logs" / "worker.log").exists() else ""
    assert "Traceback" not in log


def _mcp_note(command, args, env, cwd, content):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run():
        params = StdioServerParameters(command=command, args=args, env=env, cwd=str(cwd))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = {t.name for t in (await session.list_tools()).tools}
                result = await session.call_tool("note", {"content": content, "session_id": "plugin-mcp"})
                return tools, result

    return anyio.run(run)


@pytest.mark.spawns
def test_claude_code_plugin_mcp_server_uses_the_plugin_options(tmp_path):
    plugin = _load("plugins/consolidate/.claude-plugin/plugin.json")
    server = plugin["mcpServers"]["consolidate"]
    chosen = {"store": str(tmp_path / "chosen"), "embedding": "hash", "judges": "noop", "project": "",
              "chroma_url": ""}
    env = {k: re.sub(r"\$\{user_config\.(\w+)\}", lambda m: chosen[m.group(1)], v) for k, v in server["env"].items()}
    project = tmp_path / "project"
    project.mkdir()
    tools, result = _mcp_note(shutil.which(server["command"], path=BIN), server["args"], _env(**env), project,
                              "the deploy script needs AWS_REGION set explicitly")
    assert {"note", "recall", "review_list"} <= tools and not result.is_error
    s = Store(tmp_path / "chosen", embedding="hash")
    assert [n.content for n in s.sessions.notes("plugin-mcp")] == ["the deploy script needs AWS_REGION set explicitly"]
    s.close()
    assert not (project / ".memofs").exists()


def _gemini_install(tmp_path, settings: dict[str, str]) -> Path:
    """The extension as `gemini extensions install` leaves it: a copy of the repository's manifest and
    hooks in ~/.gemini/extensions/consolidate, with the settings the user gave in its .env."""
    ext = tmp_path / "home" / ".gemini" / "extensions" / "consolidate"
    (ext / "hooks").mkdir(parents=True)
    shutil.copy(ROOT / "gemini-extension.json", ext / "gemini-extension.json")
    shutil.copy(ROOT / "hooks" / "hooks.json", ext / "hooks" / "hooks.json")
    (ext / ".env").write_text("".join(f'{k}="{v}"\n' for k, v in settings.items()))
    return ext


def _gemini_vars(text: str, ext: Path, workspace: Path) -> str:
    return text.replace("${extensionPath}", str(ext)).replace("${workspacePath}", str(workspace)).replace("${/}", "/")


@pytest.mark.spawns
def test_gemini_cli_extension_hooks_and_mcp_server_use_the_extension_settings(tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    store = tmp_path / "gemini-store"
    ext = _gemini_install(tmp_path, {"CONSOLIDATE_STORE": str(store), "CONSOLIDATE_EMBEDDING": "hash",
                                     "CONSOLIDATE_JUDGES": "noop", "CONSOLIDATE_CHROMA_URL": ""})
    hooks = json.loads((ext / "hooks" / "hooks.json").read_text())["hooks"]
    sid = "gemini-session-0001"
    base = {"session_id": sid, "transcript_path": str(tmp_path / "none.json"), "cwd": str(workspace),
            "timestamp": "2026-11-30T11:00:00Z"}
    env = _env(GEMINI_PROJECT_DIR=str(workspace))
    _seed(store)
    start = _run_hook(_gemini_vars(hooks["SessionStart"][0]["hooks"][0]["command"], ext, workspace),
                      {**base, "hook_event_name": "SessionStart", "source": "startup"}, env=env, cwd=workspace)
    context = json.loads(start)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart" and f"this is session {sid}" in context["additionalContext"]
    assert AUTH in context["additionalContext"]
    if "BeforeTool" in hooks:
        group = hooks["BeforeTool"][0]
        assert re.fullmatch(group["matcher"], "read_file")
        out = _run_hook(_gemini_vars(group["hooks"][0]["command"], ext, workspace),
                        {**base, "hook_event_name": "BeforeTool", "tool_name": "read_file",
                         "tool_input": {"absolute_path": str(workspace / "src" / "auth.py")}}, env=env, cwd=workspace)
        assert "check_token() rejects tokens" in out
    ext_json = json.loads((ext / "gemini-extension.json").read_text())
    server = ext_json["mcpServers"]["consolidate"]
    args = [_gemini_vars(a, ext, workspace) for a in server["args"]]
    tools, result = _mcp_note(shutil.which(server["command"], path=BIN), args, env,
                              Path(_gemini_vars(server["cwd"], ext, workspace)),
                              "the staging bucket is eu-west-1 only")
    assert "note" in tools and not result.is_error
    _run_hook(_gemini_vars(hooks["SessionEnd"][0]["hooks"][0]["command"], ext, workspace),
              {**base, "hook_event_name": "SessionEnd", "reason": "exit"}, env=env, cwd=workspace)
    end = _wait_done(store, sid)
    assert end and end["outcome"] == "success"
    s = Store(store, embedding="hash")
    assert [n.content for n in s.sessions.notes("plugin-mcp")] == ["the staging bucket is eu-west-1 only"]
    s.close()
    assert not (workspace / ".memofs").exists()


def test_plugin_options_map_to_the_store_options():
    from consolidate.agents.plugin_env import apply

    env = {"CLAUDE_PLUGIN_OPTION_STORE": " /x/store ", "CLAUDE_PLUGIN_OPTION_PROJECT": "${user_config.project}",
           "CLAUDE_PLUGIN_OPTION_embedding": "hash", "CLAUDE_PLUGIN_OPTION_JUDGES": "",
           "CONSOLIDATE_CHROMA_URL": "http://kept:8000", "CLAUDE_PLUGIN_OPTION_CHROMA_URL": "http://other:1"}
    assert apply(env) == {"CONSOLIDATE_STORE": "/x/store", "CONSOLIDATE_EMBEDDING": "hash"}
    assert env["CONSOLIDATE_CHROMA_URL"] == "http://kept:8000" and "CONSOLIDATE_PROJECT" not in env


def _imports(stderr: str) -> set[str]:
    """The modules a process imported, from ``-X importtime``'s lines on stderr (PYTHONPROFILEIMPORTTIME)."""
    return {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def _tool_call(command, payload, *, env, cwd):
    out = subprocess.run(["bash", "-c", command], input=json.dumps(payload), capture_output=True, text=True,
                         env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, cwd=cwd, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout, _imports(out.stderr)


@pytest.mark.spawns
@pytest.mark.parametrize("agent", ["claude-code", "gemini-cli"])
def test_the_plugin_and_extension_file_recall_is_the_light_entry(tmp_path, agent):
    """The plugin's PreToolUse and the extension's BeforeTool run the file recall's light entry (the
    ``consolidate-file-recall`` console script, issue 34 goal 1) with the store chosen in their
    settings: once the full hook has written the file table, a call answers without the command line
    (consolidate.cli.main never imported), the same as the full hook; a settings file the light
    entry cannot take whole (a line that is not KEY=VALUE) goes to the full hook, which answers."""
    project = tmp_path / "project"
    project.mkdir()
    store = tmp_path / "chosen"
    _seed(store)
    if agent == "claude-code":
        [group] = _load("plugins/consolidate/hooks/hooks.json")["hooks"]["PreToolUse"]
        command = group["hooks"][0]["command"]
        env = _env(CLAUDE_PROJECT_DIR=str(project), CLAUDE_PLUGIN_OPTION_STORE=str(store),
                   CLAUDE_PLUGIN_OPTION_EMBEDDING="hash", CLAUDE_PLUGIN_OPTION_JUDGES="noop")
        tool = {"hook_event_name": "PreToolUse", "tool_name": "Read"}
        path_key = "file_path"
    else:
        ext = _gemini_install(tmp_path, {"CONSOLIDATE_STORE": str(store), "CONSOLIDATE_EMBEDDING": "hash",
                                         "CONSOLIDATE_JUDGES": "noop"})
        [group] = json.loads((ext / "hooks" / "hooks.json").read_text())["hooks"]["BeforeTool"]
        command = _gemini_vars(group["hooks"][0]["command"], ext, project)
        env = _env(GEMINI_PROJECT_DIR=str(project))
        tool = {"hook_event_name": "BeforeTool", "tool_name": "read_file"}
        path_key = "absolute_path"
    assert command.split()[0] == "consolidate-file-recall"

    def payload(sid):
        return {"session_id": sid, "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(project), **tool,
                "tool_input": {path_key: str(project / "src" / "auth.py")}}

    first, _ = _tool_call(command, payload("light-1"), env=env, cwd=project)  # may be the full hook's (the table)
    light, modules = _tool_call(command, payload("light-2"), env=env, cwd=project)
    assert "check_token() rejects tokens" in first and light == first.replace("light-1", "light-2")
    assert "consolidate.agents.hooks.file_hook" in modules and "consolidate.cli.main" not in modules
    assert not (project / ".memofs").exists()  # the chosen store, not the default one
    if agent == "gemini-cli":
        (ext / ".env").write_text((ext / ".env").read_text() + "not a setting line\n")
        full, modules = _tool_call(command, payload("light-3"), env=env, cwd=project)
        assert "consolidate.cli.main" in modules and "check_token() rejects tokens" in full
