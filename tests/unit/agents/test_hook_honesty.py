"""The hook never claims what it did not do, and a failure is never silent (new-user findings of
issue 15): SessionStart printed "this is session X ... consolidated when the session ends" when
recording the session failed, and a SessionEnd on a read-only store was lost without a log line.
The hook still exits 0 (it never blocks the agent); a line the store cannot take goes to the
fallback log (``$XDG_STATE_HOME/consolidate/hook.log``) and one line to stderr."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from consolidate import Store

pytestmark = pytest.mark.spawns  # starts real processes (the quick loop leaves it out)

HOOK = [sys.executable, "-m", "consolidate", "hook"]
CLAIM = "are consolidated when the session ends"


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update({"XDG_STATE_HOME": str(tmp_path / "state"), "CONSOLIDATE_EMBEDDING": "hash", **extra})
    return env


def _store(tmp_path):
    folder = tmp_path / "proj" / ".memofs"
    s = Store(folder, embedding="hash", project="proj")
    s.sessions.add_note("earlier", "Chose SQLite over Postgres because it needs no server", flag=True, kind="decision")
    s.close()
    return folder


def _payload(event, sid, cwd):
    return json.dumps({"hook_event_name": event, "session_id": sid, "cwd": str(cwd), "reason": "exit",
                       "transcript_path": str(cwd / "none.jsonl")})


def _fallback(tmp_path) -> str:
    path = tmp_path / "state" / "consolidate" / "hook.log"
    return path.read_text() if path.exists() else ""


def _read_only(tmp_path, folder):
    """A runner of the hook command with ``folder`` on a read-only bind mount (root, as in CI), else
    None (the mount prefix is test_new_user's)."""
    from test_one_line_refusals import _read_only_prefix

    prefix = _read_only_prefix(folder)
    if prefix is None:
        return None

    def run(*args, stdin):
        return subprocess.run([*prefix, *HOOK, *args], input=stdin, capture_output=True, text=True,
                              env=_env(tmp_path), timeout=120)
    return run


def _logs_blocked(tmp_path, folder):
    """A runner with the store's ``logs`` turned into a file (its log cannot be written)."""
    logs = folder / "logs"
    if logs.is_dir():
        shutil.rmtree(logs)
    logs.write_text("not a folder")

    def run(*args, stdin):
        return subprocess.run([*HOOK, *args], input=stdin, capture_output=True, text=True, env=_env(tmp_path),
                              timeout=120)
    return run


def test_session_start_on_a_read_only_store_claims_nothing(tmp_path):
    folder = _store(tmp_path)
    run = _read_only(tmp_path, folder)
    if run is None:
        pytest.skip("no read-only bind mount here (needs root and unshare)")
    out = run("--store", str(folder), stdin=_payload("SessionStart", "ro-start", folder.parent))
    assert out.returncode == 0
    assert "this is session ro-start" in out.stdout and CLAIM not in out.stdout, out.stdout
    assert "could not be recorded" in out.stdout and 'session_id "ro-start"' in out.stdout
    assert "ro-start" in _fallback(tmp_path) and out.stderr.count("\n") >= 1 and "consolidate hook:" in out.stderr


@pytest.mark.parametrize("event", ["SessionEnd", "Stop"])
def test_a_session_end_on_a_read_only_store_is_logged(tmp_path, event):
    folder = _store(tmp_path)
    run = _read_only(tmp_path, folder)
    if run is None:
        pytest.skip("no read-only bind mount here (needs root and unshare)")
    out = run("--store", str(folder), stdin=_payload(event, "ro-end", folder.parent))
    assert out.returncode == 0 and out.stdout == ""
    log = _fallback(tmp_path)
    assert "ro-end" in log and str(folder) in log and "error" in log, log
    assert "consolidate hook:" in out.stderr and "ro-end" in out.stderr
    assert Store(folder, create=False).sessions.session_end("ro-end") is None  # it really was not recorded


def test_a_store_whose_log_cannot_be_written_logs_to_the_fallback(tmp_path):
    """Another way the store's log is lost: its logs/ is not a folder. The end is still queued (the
    queue file is writable) and the line that could not go to logs/hook.log goes to the fallback."""
    folder = _store(tmp_path)
    run = _logs_blocked(tmp_path, folder)
    out = run("--store", str(folder), "--no-worker", stdin=_payload("SessionEnd", "blocked-log", folder.parent))
    assert out.returncode == 0
    assert "blocked-log" in _fallback(tmp_path) and "consolidate hook:" in out.stderr
    assert Store(folder, create=False).sessions.session_end("blocked-log")["status"] == "queued"


def test_a_healthy_store_prints_the_claim_and_writes_no_fallback(tmp_path):
    folder = _store(tmp_path)
    out = subprocess.run([*HOOK, "--store", str(folder)], input=_payload("SessionStart", "fine", folder.parent),
                         capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    assert out.returncode == 0 and CLAIM in out.stdout and out.stderr == ""
    assert _fallback(tmp_path) == ""
