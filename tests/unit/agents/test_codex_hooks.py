"""``install-hook codex`` (issue 29, item 11): Codex CLI's hooks (``.codex/hooks.json``, the shape
and seconds of Claude Code's; SessionStart and Stop) and the feature flag in ``.codex/config.toml``
(``[features] codex_hooks = true``), written with the user's other settings, comments and layout
kept, a backup first, idempotent; then the installed hook command run on Codex's own payloads."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spawns  # starts real processes (the quick loop leaves it out)

CONSOLE = str(Path(sys.executable).parent / "consolidate")

USER_CONFIG = """# my Codex settings
model = "gpt-5-codex"  # the fast one
approval_policy = "on-request"

[mcp_servers.docs]
command = "docs-mcp"
args = ["--port", "7000"]

[features]
web_search_request = true
"""


def _env(home: Path, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update({"HOME": str(home), "CONSOLIDATE_EMBEDDING": "hash", **extra})
    return env


def cli(cwd: Path, *argv, stdin: str | None = None, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([CONSOLE, *argv], cwd=cwd, input=stdin, text=True, capture_output=True,
                          env=_env(cwd / "home", **extra), timeout=120)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(USER_CONFIG)
    return tmp_path


def _ours(hooks: dict, event: str) -> list[dict]:
    return [h for g in hooks["hooks"].get(event, []) for h in g["hooks"] if " hook " in h["command"] + " "]


def test_install_writes_hooks_json_and_turns_the_flag_on_keeping_the_user_s_config(project):
    out = cli(project, "install-hook", "codex", "--store", str(project / ".memofs"), "--judge", "rules")
    assert out.returncode == 0, out.stderr
    config = (project / ".codex" / "config.toml").read_text()
    assert config == USER_CONFIG + "codex_hooks = true\n"  # every other line, comment and table as it was
    [backup] = list((project / ".codex").glob("config.toml.bak-*"))
    assert backup.read_text() == USER_CONFIG
    hooks = json.loads((project / ".codex" / "hooks.json").read_text())
    assert set(hooks["hooks"]) == {"SessionStart", "Stop"}
    for event, timeout in (("SessionStart", 10), ("Stop", 5)):
        [entry] = _ours(hooks, event)
        assert entry["type"] == "command" and entry["timeout"] == timeout
        argv = shlex.split(entry["command"])
        assert Path(argv[0]).name == "consolidate" and argv[1] == "hook"
        assert argv[argv.index("--store") + 1] == str(project / ".memofs") and "--judge" in argv
        assert "--output" not in argv and "--harvest" not in argv  # Codex reads SessionStart's plain stdout
    assert "codex mcp add consolidate -- " in out.stdout
    assert "Codex CLI: added Stop, added SessionStart, enabled features.codex_hooks in" in out.stdout
    again = cli(project, "install-hook", "codex", "--store", str(project / ".memofs"), "--judge", "rules")
    assert again.returncode == 0 and "nothing to change" in again.stdout
    assert len(list((project / ".codex").glob("*.bak-*"))) == 1  # a second run wrote nothing


def test_other_hooks_stay_and_a_user_install_writes_home(project):
    other = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 3}]}],
                       "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}]}}
    (project / ".codex" / "hooks.json").write_text(json.dumps(other, indent=2) + "\n")
    assert cli(project, "install-hook", "codex").returncode == 0
    hooks = json.loads((project / ".codex" / "hooks.json").read_text())
    assert hooks["hooks"]["PreToolUse"] == other["hooks"]["PreToolUse"]
    assert [h["command"] for g in hooks["hooks"]["Stop"] for h in g["hooks"]][0] == "notify-send done"
    assert len(_ours(hooks, "Stop")) == 1
    user = cli(project, "install-hook", "codex", "--user")
    assert user.returncode == 0, user.stderr
    home = project / "home" / ".codex"
    assert _ours(json.loads((home / "hooks.json").read_text()), "SessionStart")
    assert (home / "config.toml").read_text() == "[features]\ncodex_hooks = true\n"


@pytest.mark.parametrize("flag,changed", [("hooks = true", False), ("codex_hooks = true", False),
                                          ("codex_hooks = false", False), ("hooks = false", False)])
def test_a_flag_the_user_set_is_left_as_set(project, flag, changed):
    text = USER_CONFIG.replace("web_search_request = true", flag)
    (project / ".codex" / "config.toml").write_text(text)
    out = cli(project, "install-hook", "codex")
    assert out.returncode == 0, out.stderr
    assert (project / ".codex" / "config.toml").read_text() == text
    assert not list((project / ".codex").glob("config.toml.bak-*"))
    assert ("is false in" in out.stdout) == flag.endswith("false")


@pytest.mark.parametrize("argv,config,said", [
    (["--harvest"], USER_CONFIG, "--harvest reads Claude Code's transcripts"),
    ([], USER_CONFIG + "[features\n", "is not valid TOML"),
    ([], "features = 1\n", "`features` is not a table"),
    (["--judge", "cli:bogus"], USER_CONFIG, "unknown preset 'bogus'"),
])
def test_refused_with_one_line_and_nothing_written(project, argv, config, said):
    (project / ".codex" / "config.toml").write_text(config)
    out = cli(project, "install-hook", "codex", *argv)
    assert out.returncode == 2 and said in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert (project / ".codex" / "config.toml").read_text() == config
    assert not (project / ".codex" / "hooks.json").exists() and not list((project / ".codex").glob("*.bak-*"))


def _codex(sid: str, root: Path, event: str, **fields) -> str:
    """A payload as Codex sends it to a command hook (JSON on stdin)."""
    return json.dumps({"session_id": sid, "transcript_path": str(root / f"rollout-{sid}.jsonl"), "cwd": str(root),
                       "hook_event_name": event, "model": "gpt-5-codex", "permission_mode": "default", **fields})


def _wait(root: Path, store: Path, memories: int) -> dict:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        status = json.loads(cli(root, "--store", str(store), "status", "--json").stdout)
        if sum(status["memories"].values()) >= memories and not status["queued"]:
            return status
        time.sleep(0.3)
    raise AssertionError((store / "logs" / "worker.log").read_text())


def test_the_installed_hooks_on_codex_payloads(project):
    store = project / ".memofs"
    assert cli(project, "install-hook", "codex", "--store", str(store), "--judge", "rules").returncode == 0
    hooks = json.loads((project / ".codex" / "hooks.json").read_text())
    start_cmd, stop_cmd = (shlex.split(_ours(hooks, e)[0]["command"]) for e in ("SessionStart", "Stop"))

    def run(argv, payload):
        p = subprocess.run(argv, cwd=project, input=payload, text=True, capture_output=True,
                           env=_env(project / "home"), timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout

    sid = "019a7d2e-5f1c-7c33-b2a4-3e9f0c1d2b44"
    printed = run(start_cmd, _codex(sid, project, "SessionStart", source="startup"))
    assert printed.startswith(f"consolidate: this is session {sid}.")  # plain text: Codex adds it to the context
    note = cli(project, "--store", str(store), "note", "--session", sid,
               "The deploy script needs AWS_PROFILE=staging before it runs", "--flag")
    assert note.returncode == 0, note.stderr
    # Stop fires after every turn: each one queues the session's end and a worker consolidates its notes
    assert run(stop_cmd, _codex(sid, project, "Stop", turn_id="1", stop_hook_active=False,
                                last_assistant_message="Deployed to staging.")) == ""
    _wait(project, store, 1)
    cli(project, "--store", str(store), "note", "--session", sid,
        "Integration tests need the local Postgres container from make db-up", "--flag")
    run(stop_cmd, _codex(sid, project, "Stop", turn_id="2", stop_hook_active=True, last_assistant_message=None))
    _wait(project, store, 2)
    again = run(start_cmd, _codex("019a7d2e-0000-7000-8000-000000000001", project, "SessionStart", source="startup"))
    assert "AWS_PROFILE=staging" in again and "Postgres container" in again


@pytest.mark.parametrize("config", [USER_CONFIG, "# top\nmodel = \"o3\"\n\n[profiles.fast]\nmodel = \"o4-mini\"\n"])
def test_a_crlf_config_stays_crlf_byte_for_byte(project, config):
    """A config.toml with CRLF line ends (a fresh tester's find: it was rewritten with LF, read through
    universal newlines): every byte kept, the lines added in CRLF too; the backup is the file as it was."""
    crlf = config.replace("\n", "\r\n").encode()
    path = project / ".codex" / "config.toml"
    path.write_bytes(crlf)
    out = cli(project, "install-hook", "codex", "--store", str(project / ".memofs"), "--judge", "rules")
    assert out.returncode == 0, out.stderr
    new = path.read_bytes()
    assert new.startswith(crlf) and b"\n" not in new.replace(b"\r\n", b"")
    assert b"codex_hooks = true\r\n" in new[len(crlf):]
    [backup] = list((project / ".codex").glob("config.toml.bak-*"))
    assert backup.read_bytes() == crlf
