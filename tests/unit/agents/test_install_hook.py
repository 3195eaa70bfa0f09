"""``consolidate install-hook``: merge into Claude Code's and Gemini CLI's settings.json, keep what is
there, idempotent, back up first, print the diff, refuse a corrupt file. HOME and cwd are tmp dirs."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from consolidate.cli.main import main, parse_hook_argv
from consolidate.agents.install import consolidate_argv, file_hook_command, hook_argv, hook_command, install, is_our_command

EXISTING = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(.env)"]},
    "hooks": {
        "SessionEnd": [{"hooks": [{"type": "command", "command": "~/bin/log-session.sh", "timeout": 3}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}],
    },
}


@pytest.fixture
def env(tmp_path, monkeypatch, capsys):
    """tmp HOME and tmp project cwd; ``run(*argv)`` runs the CLI in process -> (code, out, err)."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)

    def run(*argv):
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    run.home, run.project = home, project
    return run


def ours(settings: dict, event: str) -> list[dict]:
    return [h for g in settings["hooks"].get(event, []) for h in g["hooks"] if is_our_command(h.get("command"))]


def backups(folder: Path) -> list[Path]:
    return sorted(folder.glob("settings.json.bak-*"))


def test_fresh_project_install(env):
    code, out, err = env("install-hook", "claude-code")
    assert code == 0 and err == ""
    path = env.project / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    cmd = hook_command()
    for event, timeout in (("SessionEnd", 5), ("SessionStart", 10)):
        assert settings["hooks"][event] == [{"hooks": [{"type": "command", "command": cmd, "timeout": timeout}]}]
    # file-scoped recall runs only for the file tools (consolidate/agents/file_recall.py), through its
    # light entry (consolidate/agents/hooks/file_hook.py) with the same options
    file_cmd = file_hook_command(cmd)
    assert shlex.split(file_cmd)[1:] == ["-m", "consolidate.agents.hooks.file_hook"] + shlex.split(cmd)[2:]
    assert is_our_command(file_cmd) and hook_argv(file_cmd) == shlex.split(cmd)[1:]
    assert settings["hooks"]["PreToolUse"] == [{"matcher": "Read|Edit|MultiEdit|Write|NotebookEdit",
                                                "hooks": [{"type": "command", "command": file_cmd, "timeout": 5}]}]
    assert "PreCompact" not in settings["hooks"]  # it would do nothing without --harvest
    assert out.startswith("--- /dev/null\n+++ " + str(path))
    assert "added SessionEnd, added SessionStart, added PreToolUse in" in out
    assert backups(path.parent) == []  # nothing existed, nothing to back up
    assert not (env.home / ".claude").exists()


def test_round_trip_keeps_existing_hooks_and_settings(env):
    path = env.project / ".claude" / "settings.json"
    path.parent.mkdir()
    original = json.dumps(EXISTING, indent=4) + "\n"
    path.write_text(original)

    code, out, _ = env("install-hook", "claude-code", "--project")
    assert code == 0
    after = json.loads(path.read_text())
    # every other setting and hook kept as it was
    assert after["model"] == "opus" and after["permissions"] == EXISTING["permissions"]
    assert after["hooks"]["PreToolUse"][0] == EXISTING["hooks"]["PreToolUse"][0]  # theirs kept, ours added
    assert len(after["hooks"]["PreToolUse"]) == 2 and ours(after, "PreToolUse")
    assert after["hooks"]["SessionEnd"][0] == EXISTING["hooks"]["SessionEnd"][0]
    assert len(after["hooks"]["SessionEnd"]) == 2
    for event in ("SessionEnd", "SessionStart"):
        assert len(ours(after, event)) == 1
    # the file's own indent is kept, so the diff is only our addition
    assert path.read_text().startswith('{\n    "model"')
    assert not any(line.startswith("-") and not line.startswith("---") for line in out.splitlines())
    assert "+                        \"command\": " in out
    # the backup holds the original, byte for byte
    [bak] = backups(path.parent)
    assert bak.read_text() == original and f"(backup: {bak})" in out

    # idempotent: a second run changes nothing and writes no backup
    before = path.read_text()
    code, out, _ = env("install-hook", "claude-code")
    assert code == 0 and "already installed" in out and "nothing to change" in out
    assert path.read_text() == before and len(backups(path.parent)) == 1


def test_user_scope_honours_home(env):
    code, out, _ = env("install-hook", "claude-code", "--user")
    assert code == 0
    path = env.home / ".claude" / "settings.json"
    assert str(path) in out and len(ours(json.loads(path.read_text()), "SessionStart")) == 1
    assert not (env.project / ".claude").exists()


def test_dry_run_writes_nothing(env):
    path = env.project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(EXISTING))
    code, out, _ = env("install-hook", "claude-code", "--dry-run")
    assert code == 0 and "dry run" in out and "nothing written" in out and "+++ " + str(path) in out
    assert json.loads(path.read_text()) == EXISTING and backups(path.parent) == []
    code, out, _ = env("install-hook", "gemini-cli", "--user", "--dry-run")
    assert code == 0 and not (env.home / ".gemini").exists()


@pytest.mark.parametrize("text,message", [
    ('{"hooks": {,}}', "is not valid JSON (line 1 column 12"),
    ('["not", "an", "object"]', "holds a JSON list, not an object"),
    ('{"hooks": []}', "`hooks` is a list, not an object"),
    ('{"hooks": {"SessionStart": {"type": "command"}}}', "`hooks.SessionStart` is a dict, not a list"),
])
def test_bad_settings_file_is_a_one_line_error_and_untouched(env, text, message):
    path = env.project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(text)
    code, out, err = env("install-hook", "claude-code")
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert path.read_text() == text and backups(path.parent) == []


def test_an_old_path_to_consolidate_is_updated_not_duplicated(env):
    path = env.project / ".claude" / "settings.json"
    path.parent.mkdir()
    old = {"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "/old/venv/bin/consolidate hook",
                                                "timeout": 2}]}],
                     "SessionStart": [{"hooks": [{"type": "command", "command": "/usr/bin/python3 -m consolidate hook"}]}]}}
    path.write_text(json.dumps(old, indent=2))
    code, out, _ = env("install-hook", "claude-code")
    assert code == 0 and "updated SessionEnd" in out and "updated SessionStart" in out and "PreCompact" not in out
    after = json.loads(path.read_text())
    assert after["hooks"]["SessionEnd"] == [{"hooks": [{"type": "command", "command": hook_command(), "timeout": 2}]}]
    assert len(ours(after, "SessionStart")) == 1 and ours(after, "SessionStart")[0]["command"] == hook_command()


def test_gemini_cli_format(env):
    code, out, _ = env("install-hook", "gemini-cli")
    assert code == 0 and "trusted" in out
    settings = json.loads((env.project / ".gemini" / "settings.json").read_text())
    assert set(settings["hooks"]) == {"SessionEnd", "SessionStart", "BeforeTool"}
    [tool] = ours(settings, "BeforeTool")
    assert tool["name"] == "consolidate-file-recall" and tool["timeout"] == 5000
    [end] = ours(settings, "SessionEnd")
    assert end["name"] == "consolidate-session-end" and end["type"] == "command"
    assert end["timeout"] == 5000 and end["description"]  # milliseconds in Gemini CLI
    assert ours(settings, "SessionStart")[0]["timeout"] == 10000
    assert env("install-hook", "gemini-cli")[1].startswith("Gemini CLI hooks already installed")


def test_gemini_hooks_disabled_is_reported(env):
    path = env.home / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"hooksConfig": {"enabled": False}, "theme": "GitHub"}))
    code, out, _ = env("install-hook", "gemini-cli", "--user")
    assert code == 0 and "hooksConfig.enabled is false" in out
    after = json.loads(path.read_text())
    assert after["hooksConfig"] == {"enabled": False} and after["theme"] == "GitHub"  # the user's choice stays


def test_store_and_harvest_go_into_the_command(env, tmp_path):
    code, _, _ = env("install-hook", "claude-code", "--store", "mem", "--harvest")
    assert code == 0
    settings = json.loads((env.project / ".claude" / "settings.json").read_text())
    argv = shlex.split(ours(settings, "PreCompact")[0]["command"])
    assert argv[-4:] == ["hook", "--store", str(env.project / "mem"), "--harvest"]


def test_symlinked_settings_stay_a_symlink(env, tmp_path):
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(json.dumps({"model": "sonnet"}))
    link = env.home / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    assert env("install-hook", "claude-code", "--user")[0] == 0
    assert link.is_symlink() and len(ours(json.loads(dotfiles.read_text()), "SessionEnd")) == 1
    assert json.loads(dotfiles.read_text())["model"] == "sonnet"


@pytest.mark.spawns
def test_command_is_absolute_and_runs_without_the_venv_on_path(env, tmp_path):
    argv = consolidate_argv()
    assert os.path.isabs(argv[0]) and os.access(argv[0], os.X_OK)
    assert is_our_command(hook_command()) and not is_our_command("~/bin/log-session.sh")
    assert not is_our_command("echo consolidate") and is_our_command("'/a b/consolidate' hook --harvest")
    # run the installed SessionStart command the way an agent CLI would: a shell, a bare PATH
    assert env("install-hook", "claude-code")[0] == 0
    settings = json.loads((env.project / ".claude" / "settings.json").read_text())
    command = ours(settings, "SessionStart")[0]["command"]
    store = tmp_path / "store"
    (store / "memory").mkdir(parents=True)
    (store / "memory" / "core.md").write_text("Always run the tests before a commit.\n")
    payload = json.dumps({"session_id": "n1", "hook_event_name": "SessionStart", "source": "startup",
                          "cwd": str(env.project)})
    res = subprocess.run(command, shell=True, input=payload, capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(env.home), "CONSOLIDATE_STORE": str(store)})
    assert res.returncode == 0 and "Always run the tests before a commit." in res.stdout


def test_unknown_agent_is_refused(env):
    with pytest.raises(SystemExit):
        main(["install-hook", "cursor"])
    from consolidate.core.errors import BadInput

    with pytest.raises(BadInput, match="unknown agent 'cursor'"):
        install("cursor", parse_hook_argv=parse_hook_argv)


#: Settings whose value the ``consolidate hook`` parser would take for an option (it begins with a
#: dash): the command install-hook writes from them would not run.
DASHED = [("CONSOLIDATE_PROJECT", "-x"), ("CONSOLIDATE_JUDGES", "-noop"), ("CONSOLIDATE_CHROMA_URL", "-http://h:1"),
          ("CONSOLIDATE_EMBEDDING", "--hash")]


@pytest.mark.spawns
@pytest.mark.parametrize("agent", ["claude-code", "gemini-cli"])
@pytest.mark.parametrize("name,value", DASHED, ids=[d[0] for d in DASHED])
def test_a_command_the_hook_parser_refuses_is_not_written(tmp_path, agent, name, value):
    """install-hook parses the command it is about to write with the ``consolidate hook`` command's own
    parser (the CLI hands it to consolidate.agents.install: consolidate.cli.main.parse_hook_argv), so
    what the hook would refuse is refused here: one line, exit 2, the settings file as it was."""
    folder = tmp_path / (".claude" if agent == "claude-code" else ".gemini")
    folder.mkdir()
    (folder / "settings.json").write_text('{"theme": "dark"}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update({"HOME": str(tmp_path), "CONSOLIDATE_EMBEDDING": "hash", name: value})
    out = subprocess.run(["consolidate", "install-hook", agent], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == "", out
    [line] = out.stderr.splitlines()
    assert line.startswith("error: the hook command would not run: error: consolidate hook: argument --")
    assert line.endswith("expected one argument (see consolidate hook --help); nothing was written")
    assert (folder / "settings.json").read_text() == '{"theme": "dark"}\n' and not list(folder.glob("*.bak-*"))


def test_parse_hook_argv_is_the_hook_command_s_parser(capsys):
    """What the installed hook parses is what install-hook checks: the same options, the same refusals."""
    args = parse_hook_argv(["hook", "--store", "/s", "--judge", "noop", "--judge", "rules", "--harvest"])
    assert (args.command, args.store, args.judge, args.harvest) == ("hook", "/s", ["noop", "rules"], True)
    with pytest.raises(SystemExit) as refused:
        parse_hook_argv(["hook", "--no-such-option"])
    assert refused.value.code == 2
    assert capsys.readouterr().err.startswith("error: consolidate hook: unrecognized arguments: --no-such-option")
