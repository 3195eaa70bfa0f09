"""The one starter of the detached worker (issue 27 item 3: consolidate/core/spawn.py): the fast hook,
the full hook and the MCP server start the worker through it, with the same command line for the
same options, and the worker it starts is detached (its own session, stdin closed, output in
logs/worker.log)."""

from __future__ import annotations

import ast
import json
import os
import time
from pathlib import Path

import pytest

from consolidate import Store
from consolidate.agents.hooks import fast
from consolidate.agents.hooks.full import run_hook
from consolidate.core import spawn as starter
from consolidate.mcp.server import find_spawner

ROOT = Path(__file__).resolve().parents[1]
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


def test_the_worker_starts_detached_and_logs_in_the_store(tmp_path):
    """A real start: its own session, stdin /dev/null, output appended to logs/worker.log (0600),
    ``after`` and ``extra_env`` in its environment; the starter reaps it once it has exited."""
    store = tmp_path / ".memofs"
    Store(store, embedding="hash", project="p").close()
    before = os.umask(0o022)
    try:
        pid = starter.spawn_worker(store, {"embedding": "hash", "project": "p"}, after=os.getpid(),
                                   extra_env={"CONSOLIDATE_EMBEDDING": "hash"})
    finally:
        os.umask(before)
    if os.path.exists(f"/proc/{pid}/environ"):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            assert f"CONSOLIDATE_WORKER_AFTER={os.getpid()}".encode() in environ
            assert os.readlink(f"/proc/{pid}/fd/0") == os.devnull
        except (FileNotFoundError, ProcessLookupError):
            pass  # it already exited (exec'd and finished): the log below still shows it ran
    assert os.getsid(pid) == pid, "the worker leads its own session"
    deadline = time.monotonic() + 60
    while pid not in starter.reap():
        assert time.monotonic() < deadline, "the worker did not exit"
        time.sleep(0.05)
    log = store / "logs" / "worker.log"
    assert log.exists() and oct(log.stat().st_mode & 0o777) == "0o600"
    assert "Traceback" not in log.read_text(encoding="utf-8")
