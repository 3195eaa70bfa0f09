"""tests/support/preloaded.py (issue 30): a command run in a process forked from the preloaded server answers
as ``python -m consolidate`` in a new interpreter does: the same exit code, stdout and stderr, its own
environment, working directory and standard input, and a SIGKILL at a crash point as -9.

Filed before as tests/test_preloaded.py (issue 30).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from preloaded import run as run_preloaded

pytestmark = pytest.mark.integration


def _env(store, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update({"CONSOLIDATE_STORE": str(store), "CONSOLIDATE_EMBEDDING": "hash", "CONSOLIDATE_JUDGES": "noop", **extra})
    return env


def _fresh(args, env, cwd=None, input=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "consolidate", *args], env=env, cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=300)


def _same(a: subprocess.CompletedProcess, b: subprocess.CompletedProcess) -> None:
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


def test_a_preloaded_command_answers_as_a_new_interpreter(tmp_path):
    """Help, a refused command line (exit 2, usage on stderr), a note read from standard input, and
    a status whose project comes from the command's own environment (set for one command, gone in
    the next)."""
    store = tmp_path / ".memofs"
    for args in (["--version"], ["status", "--help"], ["no-such-command"], ["end", "--session", "x"]):
        _same(run_preloaded(args, env=_env(store)), _fresh(args, _env(store)))
    text = "Deploys need the VPN profile corp-2"
    read = run_preloaded(["note", "--session", "s1", "--flag", "-"], env=_env(store), input=text + "\n")
    assert read.returncode == 0 and "written to session s1" in read.stdout, read.stderr
    for args in (["end", "--session", "s1", "--outcome", "success"], ["run"]):
        assert _fresh(args, _env(store)).returncode == 0
    recalled = _fresh(["recall", "--json", "VPN profile"], _env(store))
    assert [m["statement"] for m in json.loads(recalled.stdout)] == [text]
    statuses = {}
    for name, runner in (("preloaded", run_preloaded), ("fresh", None)):
        for project in ("alpha", None):
            env = _env(store, **({"CONSOLIDATE_PROJECT": project} if project else {}))
            out = runner(["status", "--json"], env=env) if runner else _fresh(["status", "--json"], env)
            assert out.returncode == 0, out.stderr
            statuses[name, project] = json.loads(out.stdout).get("project")
    assert statuses["preloaded", "alpha"] == statuses["fresh", "alpha"] == "alpha"
    assert statuses["preloaded", None] == statuses["fresh", None] != "alpha"


def test_a_preloaded_command_runs_in_its_own_working_directory(tmp_path):
    """The default store (./.memofs) is the command's working directory's, not the server's."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        env = _env(tmp_path / "unused")
        env.pop("CONSOLIDATE_STORE")
        out = run_preloaded(["note", "--session", "s", "--flag", f"Service {name} listens on port 8080"], env=env,
                            cwd=tmp_path / name)
        assert out.returncode == 0, out.stderr
        assert (tmp_path / name / ".memofs").is_dir()


@pytest.mark.parametrize("point", ["apply:chroma", "apply:events"])
def test_a_crash_point_kills_the_preloaded_process_as_it_kills_a_new_one(tmp_path, point):
    results = []
    for name, runner in (("preloaded", run_preloaded), ("fresh", None)):
        store = tmp_path / name / ".memofs"
        for args in (["note", "--session", "s1", "--flag", "Releases are cut from release branches only"],
                     ["end", "--session", "s1", "--outcome", "success"]):
            assert _fresh(args, _env(store)).returncode == 0
        env = _env(store, CONSOLIDATE_CRASH_AT=point)
        out = runner(["run"], env=env) if runner else _fresh(["run"], env)
        results.append(out.returncode)
    assert results == [-9, -9]
