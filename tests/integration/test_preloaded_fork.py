"""tests/support/preloaded.py (issue 30): a command run in a process forked from the preloaded server answers
as ``python -m consolidate`` in a new interpreter does: the same exit code, stdout and stderr, its own
environment, working directory and standard input, and a SIGKILL at a crash point as -9. ``run_code``
answers as ``python -c`` does; ``popen`` gives a Popen over pipes whose exit code is the command's,
whose TERM reaches the command and whose SIGKILL kills it.

Filed before as tests/test_preloaded.py (issue 30).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from preloaded import popen as popen_preloaded
from preloaded import run as run_preloaded
from preloaded import run_code

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


ECHO = r"""
import os, sys
print(sys.argv, repr(sys.path[0]), __name__, os.getcwd(), os.environ.get("PRELOADED_PROBE"), flush=True)
for line in sys.stdin:
    if line.strip() == "boom":
        raise ValueError("boom asked")
    print("echo", line.strip(), flush=True)
sys.exit(int(os.environ.get("PRELOADED_EXIT", "0")))
"""


def test_run_code_answers_as_python_c(tmp_path):
    """argv, sys.path[0], __name__, working directory, environment, standard input and exit status as
    ``python -c`` gives them; an uncaught exception: exit 1 and its traceback's last line."""
    for extra, text in (({"PRELOADED_EXIT": "3"}, "a\nb\n"), ({}, "a\nboom\n")):
        env = {**os.environ, "PRELOADED_PROBE": "probe-1", **extra}
        got = run_code(ECHO, ["x", "--y"], env=env, cwd=tmp_path, input=text, timeout=120)
        fresh = subprocess.run([sys.executable, "-c", ECHO, "x", "--y"], env=env, cwd=tmp_path, input=text,
                               capture_output=True, text=True, timeout=120)
        assert (got.returncode, got.stdout) == (fresh.returncode, fresh.stdout), got.stderr
        assert got.stderr.splitlines()[-1:] == fresh.stderr.splitlines()[-1:]
    assert got.returncode == 1 and got.stderr.splitlines()[-1] == "ValueError: boom asked"
    assert "['-c', 'x', '--y'] '' __main__" in got.stdout and "probe-1" in got.stdout


def test_popen_talks_over_pipes_and_passes_signals_on(tmp_path):
    """A long-lived command over stdin/stdout pipes (as the MCP server is), its exit code; TERM sent to
    the Popen reaches the command (-15); a SIGKILL of the Popen's process kills the command too."""
    env = {**os.environ, "PRELOADED_PROBE": "probe-2", "PRELOADED_EXIT": "4"}
    p = popen_preloaded([], code=ECHO, env=env, cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    assert "['-c'] '' __main__" in first and str(tmp_path) in first and "probe-2" in first
    p.stdin.write("hello\n")
    p.stdin.flush()
    assert p.stdout.readline() == "echo hello\n"
    out, err = p.communicate("bye\n", timeout=120)
    assert (p.returncode, out) == (4, "echo bye\n"), err
    pid_code = "import os, sys, time; print(os.getpid(), flush=True); sys.stdin.read(); time.sleep(600)"
    for sig, expected in ((15, -15), (9, -9)):
        p = popen_preloaded([], code=pid_code, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        child = int(p.stdout.readline())
        assert child != p.pid
        p.send_signal(sig)
        assert p.wait(120) == expected
        for _ in range(2400):  # the command is gone (a zombie until the server reaps it counts as gone)
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                break
            if _zombie(child):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the command {child} outlived its Popen (signal {sig})")
        p.stdin.close()
        p.stdout.close()


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has exited and waits to be reaped (its /proc state is Z; False where /proc is absent).
    Under load the server reaps it late (CI 29: still a zombie after the 10 s this loop once waited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def test_popen_runs_a_consolidate_command(tmp_path):
    store = tmp_path / ".memofs"
    p = popen_preloaded(["note", "--session", "s1", "--flag", "-"], env=_env(store), stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate("The staging database is reset every Monday\n", timeout=120)
    assert p.returncode == 0 and "written to session s1" in out, err
    bad = popen_preloaded(["no-such-command"], env=_env(store), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    _same(subprocess.CompletedProcess([], bad.wait(120), *bad.communicate()), _fresh(["no-such-command"], _env(store)))
