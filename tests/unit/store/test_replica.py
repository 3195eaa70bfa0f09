"""The store's replica (consolidate/store/replica.py): the team code behind a Protocol the store
defines, loaded by name only for a store in a team (issue 27). Every surface that pulls, pushes or
writes the outbox (a run, undo, forget, recall in the CLI and MCP, the SessionStart hook) goes
through ``Store.replica()``; these tests run them as ``python -m consolidate`` commands (forked from a
process with chromadb imported: tests/support/preloaded.py)."""

from __future__ import annotations

import pytest
import inspect
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from consolidate.store import replica as replica_mod
from consolidate.store.replica import IMPLEMENTATIONS, Replica, TEAM_FILE
from consolidate.store.store import Store
from consolidate.team.local import TeamConfig, save_config
from consolidate.team.replica import TeamReplica
from paths import REPO
from preloaded import run as run_preloaded

ROOT = REPO


def _env(**extra) -> dict[str, str]:
    """This tree's code in the child (PYTHONPATH kept), no store settings of the caller's."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    out.update({"CONSOLIDATE_EMBEDDING": "hash", "CONSOLIDATE_TEAM_PULL_SECONDS": "2",
                "CONSOLIDATE_TEAM_PUSH_SECONDS": "2", **extra})
    return out


def _cli(store: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``consolidate ARGS`` in a new process forked from one with chromadb imported (tests/support/preloaded.py):
    what a surface does is pinned here, not the console script (the import test below runs its own interpreter)."""
    out = run_preloaded([args[0], "--store", str(store), *args[1:]], env=_env(), timeout=300, input=stdin)
    assert out.returncode in (0, 75), f"{args}: {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def _closed_port() -> int:
    """A loopback port nothing listens on (a team server that is down)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session(store: Path, sid: str, text: str) -> subprocess.CompletedProcess:
    _cli(store, "note", "--session", sid, "--flag", text)
    _cli(store, "end", "--session", sid, "--outcome", "success")
    return _cli(store, "run", "--judge", "noop")


def test_the_team_implementation_has_every_method_of_the_protocol_with_its_signature():
    module_name, _, attr = IMPLEMENTATIONS["team"].partition(":")
    assert (module_name, attr) == (TeamReplica.__module__, TeamReplica.__name__)
    wanted = {n for n, v in vars(Replica).items() if callable(v) and not n.startswith("_")}
    assert wanted == {"pull", "push", "outbox", "undo_outbox", "start_header", "recall_line"}
    for name in wanted:
        assert list(inspect.signature(getattr(TeamReplica, name)).parameters) == \
            list(inspect.signature(getattr(Replica, name)).parameters), name


def test_a_store_is_given_the_team_replica_only_with_a_team_configuration(tmp_path):
    store = Store(tmp_path / ".memofs", embedding="hash", project="p")
    try:
        assert store.replica() is None
        save_config(store.path, TeamConfig(url=f"http://127.0.0.1:{_closed_port()}", project="p"))
        assert (store.path / TEAM_FILE).exists()
        got = store.replica()
        assert isinstance(got, TeamReplica) and got.store is store
    finally:
        store.close()


@pytest.mark.spawns
def test_a_store_not_in_a_team_runs_every_surface_without_importing_the_team_code(tmp_path):
    """A run, recall, undo, forget and SessionStart on a store without ``team.json``, in one process:
    nothing of consolidate.team is imported (the replica is loaded by name, only for a team)."""
    store = tmp_path / ".memofs"
    code = f"""
import io, json, sys, contextlib
from pathlib import Path
from consolidate.cli.main import main
from consolidate.agents.hooks.full import run_hook
s = {str(store)!r}
with contextlib.redirect_stdout(io.StringIO()):
    main(["note", "--store", s, "--session", "s1", "--flag", "The deploy script lives in tools/deploy.sh"])
    main(["end", "--store", s, "--session", "s1", "--outcome", "success"])
    main(["run", "--store", s, "--judge", "noop"])
    main(["recall", "--store", s, "deploy script"])
    found = io.StringIO()
    with contextlib.redirect_stdout(found):
        main(["recall", "--store", s, "--json", "deploy script"])
    main(["forget", "--store", s, json.loads(found.getvalue())[0]["id"]])
    run_hook(Path(s), payload={{"session_id": "s2", "hook_event_name": "SessionStart"}}, spawn=False)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("consolidate.team"))))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


@pytest.mark.spawns
def test_a_team_store_with_its_server_down_goes_through_its_replica_on_every_surface(tmp_path):
    """The server is down: the run completes locally, its entry waits in the outbox and the failed
    push is recorded; undo writes its own outbox entry; recall and SessionStart say the team store
    was not reached; forget's maintenance plan reaches the outbox too (each through ``Store.replica()``)."""
    store = tmp_path / ".memofs"
    _cli(store, "note", "--session", "s0", "first note so the store exists")
    save_config(store, TeamConfig(url=f"http://127.0.0.1:{_closed_port()}", project="payments"))
    run = _session(store, "s1", "The staging cluster runs in eu-west-1")
    assert "graduated" in run.stdout, run.stdout + run.stderr
    outbox = store / "team" / "outbox"
    entries = sorted(p.name for p in outbox.glob("*.json"))
    assert len(entries) == 1, entries
    state = json.loads((store / "team" / "state.json").read_text())
    assert "push failed" in state["last_error"]
    run_id = entries[0][: -len(".json")]
    _cli(store, "undo", run_id)
    assert (outbox / f"undo-{run_id}.json").exists()
    recalled = _cli(store, "recall", "staging cluster")
    assert "team: " in recalled.stderr and "not reached" in recalled.stderr
    shown = _cli(store, "hook", stdin=json.dumps({"session_id": "s2", "hook_event_name": "SessionStart",
                                                   "cwd": str(tmp_path)}))
    assert "(team memory: the team store was not reached" in shown.stdout
    _session(store, "s3", "The nightly job rebuilds the search index at 03:00 UTC")
    memory_id = json.loads(_cli(store, "recall", "--json", "nightly job").stdout)[0]["id"]
    before = set(outbox.glob("*.json"))
    _cli(store, "forget", memory_id)  # maintenance: its plan reaches the outbox through apply
    assert len(set(outbox.glob("*.json")) - before) == 1


def test_load_imports_nothing_for_a_store_without_team_json(tmp_path, monkeypatch):
    """The named implementation is imported only when ``team.json`` is there."""
    imported = []
    monkeypatch.setattr(replica_mod.importlib, "import_module", lambda name: imported.append(name))
    store = Store(tmp_path / ".memofs", embedding="hash", project="p", create=False)
    assert replica_mod.load(store) is None and imported == []


@pytest.mark.spawns
def test_a_pull_from_a_team_store_that_never_answers_gives_up_at_its_bound_and_keeps_the_last_copy(tmp_path):
    """A team server that takes the connection and never answers (a hung server, not a refused
    port): the pull gives up at its bound (``seconds``, consolidate/team/sync.py ``bounded``), returns
    a timeout, logs that the last pulled copy stays in use, and changes nothing local (no pull is
    recorded in the team state)."""
    from consolidate.team import sync

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepted by the kernel, never read nor answered
    try:
        store_path = tmp_path / ".memofs"
        _cli(store_path, "note", "--session", "s0", "first note so the store exists")
        save_config(store_path, TeamConfig(url=f"http://127.0.0.1:{silent.getsockname()[1]}", project="payments"))
        store = Store(store_path, embedding="hash", create=False)
        try:
            result = sync.pull(store, seconds=0.5)
        finally:
            store.close()
        assert result["ok"] is False and result["timeout"] is True, result
        log = (store_path / "logs" / "team.log").read_text(encoding="utf-8")
        assert "pull: " in log and "using the copy pulled at None" in log, log
        state = store_path / "team" / "state.json"
        assert not state.exists() or "last_pull" not in json.loads(state.read_text(encoding="utf-8"))
    finally:
        silent.close()
