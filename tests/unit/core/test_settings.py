"""One settings object for every CONSOLIDATE_* variable (issue 20, item 5): each declared once in
consolidate/core/settings.py, read only through it, and a value that cannot be read is a one-line error
naming the variable and the value (exit 2), never the default in silence (reviewer's inputs:
CONSOLIDATE_TIME_BOX=abc and CONSOLIDATE_WAIT_DAYS=abc were ignored; --env-file /nonexistent too).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from consolidate.core import settings
from consolidate.cli.main import main
from consolidate.core.errors import ConfigError
from paths import REPO

ROOT = REPO
NUMERIC = [s for s in settings.ALL if s.unit in ("seconds", "days")]
BAD_NUMBERS = ["abc", "0", "-1", "nan", "inf", "1e999", "12 s", "7 days", "0x10"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update(extra)
    return env


# -- the declarations --------------------------------------------------------------------------------

def _source_files():
    for folder in ("consolidate", "judges"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_every_variable_the_code_names_is_declared_once():
    declared = [s.name for s in settings.ALL]
    assert len(declared) == len(set(declared))
    named = set()
    for path in _source_files():
        named |= set(re.findall(r"CONSOLIDATE_[A-Z][A-Z_0-9]*[A-Z0-9]", path.read_text(encoding="utf-8")))
    # CONSOLIDATE_<KEY> written by consolidate/agents/plugin_env.py from a plugin option key: the same five
    missing = named - set(declared)
    assert not missing, f"named in the code but not declared in consolidate/core/settings.py: {sorted(missing)}"


def test_no_module_reads_a_consolidate_variable_from_the_environment_itself():
    """Only consolidate/core/settings.py reads CONSOLIDATE_* from os.environ (the other reads left are
    other programs' variables: TZ, provider keys, a team's own token variable)."""
    pattern = re.compile(r"(environ|getenv)\b[^\n]{0,40}CONSOLIDATE_")
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in _source_files() if p.name != "settings.py"
                 for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not offenders


@pytest.mark.parametrize("setting", settings.ALL, ids=lambda s: s.name)
def test_each_setting_has_its_documentation_and_default(setting):
    assert setting.name.startswith("CONSOLIDATE_") and setting.doc.endswith(".")
    assert setting.default_text and setting.audience in ("user", "test", "internal")
    assert setting.get({}) == setting.default
    assert setting.get({setting.name: ""}) == setting.default  # empty means unset


@pytest.mark.parametrize("setting", NUMERIC, ids=lambda s: s.name)
@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_a_number_that_is_not_a_positive_number_is_an_error_naming_it(setting, value):
    with pytest.raises(ConfigError) as exc:
        setting.get({setting.name: value})
    text = str(exc.value)
    assert text.startswith(f"{setting.name}={value!r}:") and "\n" not in text


@pytest.mark.parametrize("setting", NUMERIC, ids=lambda s: s.name)
def test_good_numbers_are_read(setting):
    assert setting.get({setting.name: " 2.5 "}) == 2.5
    assert setting.get({setting.name: "30"}) == 30.0


def test_flags_and_lists():
    assert settings.REASK.get({"CONSOLIDATE_REASK": "0"}) is False
    assert settings.REASK.get({"CONSOLIDATE_REASK": "1"}) is True
    with pytest.raises(ConfigError, match=r"CONSOLIDATE_REASK='no': must be 0 or 1"):
        settings.REASK.get({"CONSOLIDATE_REASK": "no"})
    assert settings.JUDGES.get({"CONSOLIDATE_JUDGES": " rules, ,noop "}) == ["rules", "noop"]
    assert settings.JUDGES.get({"CONSOLIDATE_JUDGES": " , "}) == []
    assert settings.DEBUG.get({"CONSOLIDATE_DEBUG": "yes"}) is True
    assert settings.RECORD.get({"CONSOLIDATE_RECORD": "expected"}) is False


def test_a_long_bad_value_is_cut_in_the_message():
    with pytest.raises(ConfigError) as exc:
        settings.WAIT_DAYS.get({"CONSOLIDATE_WAIT_DAYS": "x" * 500})
    assert len(str(exc.value)) < 160


@pytest.mark.spawns
def test_the_settings_module_imports_only_os():
    """The hook's fast path reads its variables here: nothing else may load with it."""
    code = ("import sys; before = set(sys.modules); import consolidate.core.settings; "
            "print(sorted(m for m in set(sys.modules) - before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_env())
    assert json.loads(out.stdout.replace("'", '"')) == ["consolidate", "consolidate.core", "consolidate.core.settings"]


# -- the command line -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, value", [("CONSOLIDATE_TIME_BOX", "abc"), ("CONSOLIDATE_WAIT_DAYS", "abc"),
                                         ("CONSOLIDATE_QUARANTINE_TTL_DAYS", "-3"),
                                         ("CONSOLIDATE_TEAM_PULL_SECONDS", "soon"), ("CONSOLIDATE_REASK", "off")])
@pytest.mark.parametrize("argv", [["status"], ["run"], ["doctor"], ["recall", "deploy"], ["judges"]])
def test_every_command_refuses_a_bad_setting_in_one_line(tmp_path, monkeypatch, capsys, name, value, argv):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(name, value)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {name}={value!r}: ") and err.count("\n") == 1
    assert not (tmp_path / ".memofs").exists()  # nothing written


@pytest.mark.spawns
def test_a_bad_setting_in_the_environment_of_a_real_process(tmp_path):
    out = subprocess.run([sys.executable, "-m", "consolidate", "run"], cwd=tmp_path, capture_output=True, text=True,
                         env=_env(CONSOLIDATE_WAIT_DAYS="abc"), timeout=120)
    assert out.returncode == 2
    assert out.stderr == "error: CONSOLIDATE_WAIT_DAYS='abc': not a number (days)\n"


@pytest.mark.spawns
def test_the_hook_queues_the_session_end_whatever_the_settings(tmp_path):
    """The hook never fails an agent and loses nothing: the end is queued; the worker reports it."""
    payload = json.dumps({"session_id": "s1", "hook_event_name": "SessionEnd", "cwd": str(tmp_path)})
    out = subprocess.run([sys.executable, "-m", "consolidate", "hook", "--no-worker"], input=payload, cwd=tmp_path,
                         capture_output=True, text=True, env=_env(CONSOLIDATE_TIME_BOX="abc"), timeout=120)
    assert out.returncode == 0, out.stderr
    from consolidate.store.store import Store

    store = Store(tmp_path / ".memofs", embedding="hash", create=False)
    assert [p["session_id"] for p in store.sessions.pending()] == ["s1"]
    env = _env(CONSOLIDATE_TIME_BOX="abc")
    worker = subprocess.run([sys.executable, "-m", "consolidate", "worker", "--store", str(store.path),
                             "--embedding", "hash"], capture_output=True, text=True, env=env, timeout=120)
    assert worker.returncode == 2 and worker.stderr == "error: CONSOLIDATE_TIME_BOX='abc': not a number (seconds)\n"
    assert [p["session_id"] for p in store.sessions.pending()] == ["s1"]  # still queued


# -- --env-file -------------------------------------------------------------------------------------

@pytest.mark.parametrize("make, why", [(lambda p: None, "No such file or directory"),
                                       (lambda p: p.mkdir(), "Is a directory"),
                                       (lambda p: p.write_bytes(b"CONSOLIDATE_STORE=\xff\xfe\n"), "UnicodeDecodeError")])
def test_env_file_that_cannot_be_read_is_an_error(tmp_path, monkeypatch, capsys, make, why):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "settings.env"
    make(path)
    assert main(["--env-file", str(path), "status"]) == 2
    assert capsys.readouterr().err == f"error: --env-file {path}: {why}\n"


def test_env_file_if_exists_skips_a_missing_file_only(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["--env-file-if-exists", str(tmp_path / "none.env"), "status"]) == 0
    (tmp_path / "folder.env").mkdir()
    assert main(["--env-file-if-exists", str(tmp_path / "folder.env"), "status"]) == 2


def test_env_file_values_are_checked_like_the_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CONSOLIDATE_STORE", "")  # restored (unset) after the test: load_env_file sets it
    env_file = tmp_path / ".env"
    env_file.write_text(f"CONSOLIDATE_STORE={tmp_path / 'elsewhere'}\n", encoding="utf-8")
    assert main(["--env-file", str(env_file), "status"]) == 0
    assert str(tmp_path / "elsewhere") in capsys.readouterr().out


@pytest.mark.spawns
def test_the_hook_with_a_missing_env_file_still_queues_the_session_end(tmp_path):
    """An extension copy installed before --env-file-if-exists passes --env-file for a .env that may
    not exist: the hook says so in one line and queues the end (nothing lost)."""
    payload = json.dumps({"session_id": "s1", "hook_event_name": "SessionEnd", "cwd": str(tmp_path)})
    out = subprocess.run([sys.executable, "-m", "consolidate", "--env-file", str(tmp_path / "none.env"), "hook",
                          "--no-worker"], input=payload, cwd=tmp_path, capture_output=True, text=True, env=_env(),
                         timeout=120)
    assert out.returncode == 0
    assert out.stderr.startswith("consolidate hook: --env-file ") and out.stderr.count("\n") == 1
    from consolidate.store.store import Store

    store = Store(tmp_path / ".memofs", embedding="hash", create=False)
    assert [p["session_id"] for p in store.sessions.pending()] == ["s1"]


@pytest.mark.spawns
def test_the_hook_with_an_unreadable_env_file_is_refused_without_writing(tmp_path):
    """A .env that exists but cannot be read may name another store: refused (exit 1), nothing written."""
    (tmp_path / "folder.env").mkdir()
    payload = json.dumps({"session_id": "s1", "hook_event_name": "SessionEnd", "cwd": str(tmp_path)})
    out = subprocess.run([sys.executable, "-m", "consolidate", "--env-file", str(tmp_path / "folder.env"), "hook"],
                         input=payload, cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=120)
    assert out.returncode == 1  # non-blocking: shown to the user, the agent goes on
    assert out.stderr.startswith("consolidate hook: refused: --env-file ") and out.stderr.count("\n") == 1
    assert not (tmp_path / ".memofs").exists()


def test_the_extension_reads_its_env_file_only_if_it_exists():
    hooks = (ROOT / "hooks" / "hooks.json").read_text(encoding="utf-8")
    ext = json.loads((ROOT / "gemini-extension.json").read_text(encoding="utf-8"))
    assert "--env-file-if-exists" in hooks and '"--env-file "' not in hooks
    assert ext["mcpServers"]["consolidate"]["args"][0] == "--env-file-if-exists"


# -- a bad value inside --env-file (issue 20 item 4: it was ignored, exit 0) ---------------------------

ENV_FILE_BAD = [("CONSOLIDATE_TIME_BOX", "abc"),           # a number
                ("CONSOLIDATE_WAIT_DAYS", "-1"),           # a number that must be positive
                ("CONSOLIDATE_QUARANTINE_TTL_DAYS", "7 days"),  # a duration with its unit written
                ("CONSOLIDATE_TEAM_PULL_SECONDS", "0"),    # a duration of nothing
                ("CONSOLIDATE_REASK", "yes")]              # one of a few values (0 or 1)


@pytest.mark.parametrize("option", ["--env-file", "--env-file-if-exists"])
@pytest.mark.parametrize("name, value", ENV_FILE_BAD)
def test_a_bad_value_in_an_env_file_fails_as_in_the_environment_naming_file_and_line(
        tmp_path, monkeypatch, capsys, option, name, value):
    monkeypatch.chdir(tmp_path)
    for s in settings.ALL:
        monkeypatch.delenv(s.name, raising=False)
    monkeypatch.setenv(name, value)
    assert main(["status"]) == 2
    from_environment = capsys.readouterr().err
    assert from_environment.startswith(f"error: {name}=") and from_environment.count("\n") == 1
    monkeypatch.delenv(name)
    env_file = tmp_path / "settings.env"
    env_file.write_text(f"# consolidate\nCONSOLIDATE_PROJECT=demo\n\n{name}={value}\n", encoding="utf-8")
    assert main([option, str(env_file), "status"]) == 2
    err = capsys.readouterr().err
    assert err == from_environment.replace("error: ", f"error: --env-file {env_file} line 4: ", 1)
    assert "CONSOLIDATE_PROJECT" not in os.environ  # nothing of a refused file is set


@pytest.mark.parametrize("line", ["not a setting", "CONSOLIDATE_STORE", "CONSOLIDATE_STORE='unclosed",
                                  "= value without a name"])
def test_an_env_file_line_that_is_not_key_value_is_an_error_naming_it(tmp_path, monkeypatch, capsys, line):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONSOLIDATE_PROJECT", raising=False)
    env_file = tmp_path / "settings.env"
    env_file.write_text(f"CONSOLIDATE_PROJECT=demo\n# a comment\n\n{line}\nCONSOLIDATE_TIME_BOX=30\n",
                        encoding="utf-8")
    assert main(["--env-file", str(env_file), "status"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --env-file {env_file} line 4: not a KEY=VALUE line: ") and err.count("\n") == 1
    assert line.split("=")[0].strip() in err
    assert "CONSOLIDATE_PROJECT" not in os.environ


def test_an_env_file_sets_every_declared_setting_and_ignores_the_rest(tmp_path):
    from consolidate.agents.plugin_env import load_env_file

    env_file = tmp_path / "settings.env"
    env_file.write_text("export CONSOLIDATE_TIME_BOX=30\nCONSOLIDATE_REASK=0\nCONSOLIDATE_JUDGE_CHILD=1\n"
                        "OTHER=x\nCONSOLIDATE_NOT_A_SETTING=1\nCONSOLIDATE_WAIT_DAYS=\n", encoding="utf-8")
    environ: dict[str, str] = {}
    assert load_env_file(env_file, environ) == {"CONSOLIDATE_TIME_BOX": "30", "CONSOLIDATE_REASK": "0"}
    assert environ == {"CONSOLIDATE_TIME_BOX": "30", "CONSOLIDATE_REASK": "0"}
    assert settings.TIME_BOX.get(environ) == 30.0 and settings.REASK.get(environ) is False


@pytest.mark.spawns
def test_the_hook_with_a_bad_value_in_its_env_file_still_queues_the_session_end(tmp_path):
    """As with a bad value in the environment, the hook never fails the agent over a setting: the end
    is queued and the worker it starts reports the value (exit 2 there)."""
    env_file = tmp_path / "settings.env"
    env_file.write_text("CONSOLIDATE_TIME_BOX=abc\nnot a setting\n", encoding="utf-8")
    payload = json.dumps({"session_id": "s1", "hook_event_name": "SessionEnd", "cwd": str(tmp_path)})
    out = subprocess.run([sys.executable, "-m", "consolidate", "--env-file", str(env_file), "hook", "--no-worker"],
                         input=payload, cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=120)
    assert out.returncode == 0
    from consolidate.store.store import Store

    store = Store(tmp_path / ".memofs", embedding="hash", create=False)
    assert [p["session_id"] for p in store.sessions.pending()] == ["s1"]
    worker = subprocess.run([sys.executable, "-m", "consolidate", "--env-file", str(env_file), "worker",
                             "--store", str(store.path), "--embedding", "hash"],
                            capture_output=True, text=True, env=_env(), timeout=120)
    assert worker.returncode == 2 and worker.stderr.startswith(f"error: --env-file {env_file} line 2: ")


@pytest.mark.parametrize("value", ["${NOPE_UNDEFINED}/st", "a${NOPE}b", "${HOME}/memory", "${extensionPath}/.memofs"])
def test_an_env_file_value_is_taken_as_written_a_placeholder_is_an_error(tmp_path, monkeypatch, capsys, value):
    """New-user review: python-dotenv expanded ``${...}`` in an env file (an unset name to '', so
    ``${NOPE}/st`` put the store at /st), while the same value in the environment is not expanded.
    Values are taken as written; a placeholder is one line naming the file, line and variable, and
    nothing of the file is set. The hook (no check) treats it as not set, as a plugin's unfilled option."""
    monkeypatch.chdir(tmp_path)
    for s in settings.ALL:
        monkeypatch.delenv(s.name, raising=False)
    env_file = tmp_path / "settings.env"
    env_file.write_text(f"CONSOLIDATE_PROJECT=demo\nCONSOLIDATE_STORE={value}\n", encoding="utf-8")
    assert main(["--env-file", str(env_file), "status"]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: --env-file {env_file} line 2: CONSOLIDATE_STORE holds a ${{...}} placeholder;"
                   " values are taken as written, write the value itself\n")
    assert "CONSOLIDATE_PROJECT" not in os.environ and "CONSOLIDATE_STORE" not in os.environ
    from consolidate.agents.plugin_env import load_env_file

    environ: dict[str, str] = {}
    assert load_env_file(env_file, environ, check=False) == {"CONSOLIDATE_PROJECT": "demo"} == environ
