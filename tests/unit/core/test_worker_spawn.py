"""The one starter of the detached worker (issue 27 item 3: consolidate/core/spawn.py): the fast hook,
the full hook and the MCP server start the worker through it, with the same command line for the
same options, and the worker it starts is detached (its own session, stdin closed, output in
logs/worker.log)."""

from __future__ import annotations

import ast
import json
import os
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from consolidate import Store
from consolidate.agents.hooks import fast
from consolidate.agents.hooks.full import run_hook
from consolidate.core import spawn as starter
from consolidate.mcp.server import find_spawner
from paths import REPO

ROOT = REPO
OPTIONS = {"chroma_url": None, "project": "p", "embedding": "hash", "judges": ["noop", "scripted:x.json"]}
ARGS = ["--project", "p", "--embedding", "hash", "--judge", "noop", "--judge", "scripted:x.json"]


def _end(sid: str) -> dict:
    return {"session_id": sid, "hook_event_name": "SessionEnd", "reason": "other", "cwd": "/tmp"}


def _fast_hook(store: Path, monkeypatch) -> None:
    monkeypatch.setattr(fast, "read_stdin", lambda *a, **k: json.dumps(_end("f1")).encode())
    assert fast.main(["hook", "--store", str(store), *ARGS]) == 0


def _full_hook(store: Path, monkeypatch) -> None:
    assert run_hook(store, payload=_end("h1"), options=OPTIONS)[0] == 0


def _mcp_server(store: Path, monkeypatch) -> None:
    spawner, _name = find_spawner(OPTIONS["judges"])
    assert spawner is not None
    spawner(Store(store, embedding="hash", project="p"))


#: Every surface that starts a worker, and how to make it start one.
SURFACES = {"fast hook": _fast_hook, "full hook": _full_hook, "mcp server": _mcp_server}


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_each_surface_starts_the_worker_through_the_one_starter(tmp_path, monkeypatch, surface):
    monkeypatch.delenv("CONSOLIDATE_JUDGE_CHILD", raising=False)
    monkeypatch.delenv("CONSOLIDATE_STORE", raising=False)
    store = (tmp_path / ".memofs").resolve()
    Store(store, embedding="hash", project="p").close()
    started = []

    def launch(argv, env, out):
        started.append((argv, env, os.fstat(out)))
        return 999_999_999

    monkeypatch.setattr(starter, "_launch", launch)
    SURFACES[surface](store, monkeypatch)
    assert len(started) == 1, f"{surface} started {len(started)} workers"
    argv, env, out = started[0]
    assert argv == starter.worker_argv(store, OPTIONS)
    assert argv[1:] == ["-m", "consolidate", "worker", "--store", str(store), *ARGS]
    log = (store / "logs" / "worker.log").stat()
    assert (out.st_dev, out.st_ino) == (log.st_dev, log.st_ino), "its output goes to the store's worker.log"
    assert "CONSOLIDATE_WORKER_AFTER" not in env and env.get("PYTHONPATH") == os.environ.get("PYTHONPATH")


def test_no_other_module_builds_or_starts_the_worker():
    """The worker's command line and the process calls that start it are written in core/spawn.py only."""
    owner = "consolidate/core/spawn.py"
    found = {}
    for path in sorted(p for pkg in ("consolidate", "judges") for p in (ROOT / pkg).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.List, ast.Tuple)):
                words = [e.value for e in node.elts if isinstance(e, ast.Constant)]
                if any(words[i:i + 2] == ["consolidate", "worker"] for i in range(len(words))):
                    found.setdefault(rel, []).append(f"line {node.lineno}: the worker's command line")
            if isinstance(node, ast.Attribute) and node.attr in ("posix_spawn", "execv", "execve", "setsid"):
                found.setdefault(rel, []).append(f"line {node.lineno}: os.{node.attr}")
    assert set(found) == {owner}, {k: v for k, v in found.items() if k != owner}


_CHILD = """
import json, os, sys
null = os.stat(os.devnull)
stdin = os.fstat(0)
fds = sorted(int(f) for f in os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
print(json.dumps({"leader": os.getsid(0) == os.getpid(), "stdin_null": (stdin.st_rdev, stdin.st_ino) == (null.st_rdev, null.st_ino),
                  "after": os.environ.get("CONSOLIDATE_WORKER_AFTER"), "extra": os.environ.get("X_EXTRA"), "fds": fds}))
print("to stderr", file=sys.stderr)
"""


@pytest.mark.parametrize("how", ["posix_spawn", "fork and exec"])
def test_the_start_is_detached(tmp_path, monkeypatch, how):
    """What the starter gives the process it starts: its own session, stdin /dev/null, stdout and
    stderr appended to the log, no other descriptor, the environment it was given; both ways of
    starting it (posix_spawn, and fork+exec where posix_spawn cannot start a session)."""
    if how == "fork and exec":
        def no_setsid(*args, **kwargs):
            raise NotImplementedError

        monkeypatch.setattr(os, "posix_spawn", no_setsid)
    log = tmp_path / "out.log"
    log.write_text("before\n")
    keep = os.open(tmp_path / "other", os.O_WRONLY | os.O_CREAT, 0o600)  # not inheritable (PEP 446)
    out = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        env = {**os.environ, "CONSOLIDATE_WORKER_AFTER": "123", "X_EXTRA": "yes"}
        pid = starter._launch([sys.executable, "-c", _CHILD], env, out)
    finally:
        os.close(out)
        os.close(keep)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    first, report, err = log.read_text().splitlines()
    seen = json.loads(report)
    assert first == "before" and err == "to stderr"
    assert seen["leader"] and seen["stdin_null"] and seen["after"] == "123" and seen["extra"] == "yes"
    if seen["fds"] is not None:
        assert len([fd for fd in seen["fds"] if fd > 2]) <= 1, seen  # the descriptor of listdir itself


@pytest.mark.parametrize("how", ["posix_spawn", "fork and exec"])
def test_an_inherited_descriptor_above_1023_does_not_reach_the_worker(tmp_path, monkeypatch, how):
    """A long-lived starter (the MCP server) can hold inheritable descriptors numbered above 1,023;
    neither way of starting passes them on (the fork path closed only 3-1023 before)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    high = 1500
    if soft <= high:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, high + 1), hard))
    if how == "fork and exec":
        def no_setsid(*args, **kwargs):
            raise NotImplementedError

        monkeypatch.setattr(os, "posix_spawn", no_setsid)
    log = tmp_path / "out.log"
    r, w = os.pipe()
    os.dup2(w, high, inheritable=True)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        pid = starter._launch([sys.executable, "-c", _CHILD], dict(os.environ), out)
    finally:
        for fd in (out, w, high, r):
            try:
                os.close(fd)
            except OSError:  # seen once in CI under load (EBADF): a descriptor of this worker process closed by
                pass  # another thread's cleanup; what the child inherited is checked below either way
        if soft <= high:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    seen = json.loads(log.read_text().splitlines()[0])
    assert seen["fds"] is None or high not in seen["fds"], seen


def test_an_inherited_descriptor_does_not_reach_the_worker(tmp_path):
    """A pipe the agent CLI left inheritable in the hook's process is closed in the worker (the agent
    would otherwise wait for its end as long as the worker runs)."""
    r, w = os.pipe()
    os.set_inheritable(w, True)
    out = os.open(tmp_path / "out.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        pid = starter._launch([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), out)
    finally:
        os.close(out)
        os.close(w)
    try:
        poll = select.poll()  # not select.select: this process may hold descriptors above 1,023
        poll.register(r, select.POLLIN | select.POLLHUP)
        ready = poll.poll(10_000)
        assert ready and os.read(r, 1) == b"", "the write end is closed in the worker: EOF while it runs"
    finally:
        os.close(r)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_the_starter_gives_the_worker_after_and_extra_env(tmp_path, monkeypatch):
    store = tmp_path / ".memofs"
    seen = {}

    def launch(argv, env, out):
        seen.update(argv=argv, env=env)
        return 999_999_999

    monkeypatch.setattr(starter, "_launch", launch)
    assert starter.spawn_worker(store, {"embedding": "hash"}, log=store / "logs" / "worker.log", after=4321, extra_env={"X_EXTRA": "1"}) == 999_999_999
    assert seen["env"]["CONSOLIDATE_WORKER_AFTER"] == "4321" and seen["env"]["X_EXTRA"] == "1"
    assert seen["argv"][-2:] == ["--embedding", "hash"]
    assert oct((store / "logs").stat().st_mode & 0o777) == "0o700"
    assert oct((store / "logs" / "worker.log").stat().st_mode & 0o777) == "0o600"


def test_a_real_worker_runs_and_is_reaped(tmp_path):
    """``consolidate worker`` started for real on an empty store: it runs, logs no traceback, and the
    starter reaps it once it has exited (no zombie in a long-lived starter)."""
    store = tmp_path / ".memofs"
    Store(store, embedding="hash", project="p").close()
    before = os.umask(0o022)
    try:
        pid = starter.spawn_worker(store, {"embedding": "hash", "project": "p"}, log=store / "logs" / "worker.log")
    finally:
        os.umask(before)
    deadline = time.monotonic() + 120
    while pid not in starter.reap():
        assert time.monotonic() < deadline, "the worker did not exit"
        time.sleep(0.05)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no zombie left
    log = store / "logs" / "worker.log"
    assert log.exists() and oct(log.stat().st_mode & 0o777) == "0o600"
    assert "Traceback" not in log.read_text(encoding="utf-8")
