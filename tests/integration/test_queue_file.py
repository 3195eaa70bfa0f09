"""The light session-end hook and its queue file (consolidate/agents/hooks/fast.py, issue 18): real hook
payloads piped into the installed command, several hooks at once, a worker that folds the file
while hooks append, and the cases that must go to the full hook instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from consolidate import Store
from consolidate.store.sessions.queue_file import QUEUE_FILE
from paths import SUPPORT

pytestmark = pytest.mark.integration

CONSOLE = str(Path(sys.executable).parent / "consolidate")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update({"CONSOLIDATE_EMBEDDING": "hash", **extra})
    return env


def hook(store_path: Path, payload: dict, *args: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([CONSOLE, "hook", "--store", str(store_path), *args], input=json.dumps(payload), text=True,
                          capture_output=True, env=_env(**env), timeout=60)


def end_payload(sid, reason="prompt_input_exit", event="SessionEnd", cwd="/tmp"):
    return {"session_id": sid, "transcript_path": f"{cwd}/{sid}.jsonl", "cwd": cwd, "hook_event_name": event,
            "reason": reason}


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / ".memofs", embedding="hash", project="p")
    s.sessions.add_note("s1", "The API listens on port 8080 behind nginx", flag=True, kind="constraint")
    s.close()
    return s


def queue_lines(store):
    path = store.path / QUEUE_FILE
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def test_session_end_goes_to_the_queue_file_and_every_reader_sees_it(store):
    out = hook(store.path, end_payload("s1"), "--no-worker")
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    [line] = queue_lines(store)
    assert line["session_id"] == "s1" and line["outcome"] == "success" and line["reason"] == "prompt_input_exit"
    assert oct((store.path / QUEUE_FILE).stat().st_mode & 0o777) == "0o600"
    assert "sessionend session=s1 queued (success); worker pid None" in (store.path / "logs" / "hook.log").read_text()
    fresh = Store(store.path, embedding="hash", project="p")
    row = fresh.sessions.session_end("s1")
    assert row["status"] == "queued" and row["reason"] == "prompt_input_exit"
    status = subprocess.run([CONSOLE, "status", "--store", str(store.path)], capture_output=True, text=True,
                            env=_env())
    assert status.returncode == 0
    run = subprocess.run([CONSOLE, "run", "--store", str(store.path), "--judge", "noop"], capture_output=True,
                         text=True, env=_env())
    assert run.returncode == 0, run.stderr
    assert "session s1 (success)" in run.stdout and "1 durable" in run.stdout
    assert Store(store.path, embedding="hash", project="p").sessions.session_end("s1")["status"] == "done"


def test_a_stop_then_a_session_end_queue_one_session(store):
    """Codex and Claude Code send several end events for one session: one queue row."""
    for event in ("Stop", "SessionEnd"):
        assert hook(store.path, end_payload("s1", event=event), "--no-worker").returncode == 0
    assert len(queue_lines(store)) == 2
    fresh = Store(store.path, embedding="hash", project="p")
    assert [r["session_id"] for r in fresh.sessions.queued()] == ["s1"]


def test_the_worker_the_hook_starts_consolidates_it(store):
    out = hook(store.path, end_payload("s1"), "--judge", "noop")
    assert out.returncode == 0
    pid = int((store.path / "logs" / "hook.log").read_text().split("worker pid ")[-1].split()[0])
    deadline = time.time() + 120
    while time.time() < deadline:
        row = Store(store.path, embedding="hash", project="p").sessions.session_end("s1")
        if row and row["status"] == "done":
            break
        time.sleep(0.5)
    assert row["status"] == "done", (store.path / "logs" / "worker.log").read_text()[-2000:]
    assert oct((store.path / "logs" / "worker.log").stat().st_mode & 0o777) == "0o600"
    for _ in range(100):  # the detached worker exits on its own
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)


@pytest.mark.parametrize("case", ["secret-like reason", "spaces in the session id", "harvest", "new store",
                                  "session start", "plain --session form", "failure outcome"])
def test_what_the_light_hook_leaves_to_the_full_one(tmp_path, store, case):
    """Each of these goes through the full hook (SQLite, the secret gate, the store created private):
    nothing lands in the queue file, and the result is the full hook's."""
    path = store.path
    args = ["--no-worker"]
    payload = end_payload("s1")
    if case == "secret-like reason":
        payload["reason"] = "token ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5 from the shell"
    elif case == "spaces in the session id":
        payload["session_id"] = "session with spaces"
    elif case == "harvest":
        args.append("--harvest")
    elif case == "new store":
        path = tmp_path / "new" / ".memofs"
    elif case == "session start":
        payload["hook_event_name"] = "SessionStart"
    elif case == "failure outcome":
        args += ["--outcome", "failure"]
    if case == "plain --session form":
        out = subprocess.run([CONSOLE, "hook", "--store", str(path), "--session", "s1", "--no-worker"],
                             capture_output=True, text=True, env=_env(), stdin=subprocess.DEVNULL)
    else:
        out = hook(path, payload, *args)
    assert out.returncode == 0, out.stderr
    if case == "failure outcome":  # a plain outcome flag still takes the light path
        assert queue_lines(store)[0]["outcome"] == "failure"
        return
    assert not (path / QUEUE_FILE).exists()
    tier = Store(path, embedding="hash", project="p").sessions
    if case == "session start":
        assert out.stdout.startswith("consolidate: this is session s1")
        return
    sid = payload["session_id"] if case != "plain --session form" else "s1"
    row = tier.session_end(sid)
    assert row is not None and row["status"] == "queued"
    if case == "secret-like reason":
        assert "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5" not in (row["reason"] or "")
        assert b"aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5" not in (path / "sessions.sqlite3").read_bytes()
    if case == "new store":
        assert oct(path.stat().st_mode & 0o777) == "0o700" and (path / ".gitignore").exists()


def test_eight_hooks_at_once_while_a_worker_folds(store):
    """Eight hook processes append while another process keeps folding the file: every session end
    reaches the queue table exactly once and the file holds only whole lines."""
    folder = store.path
    stop = folder / "stop"
    folder_script = (f"import time, sys\nsys.path.insert(0, {str(SUPPORT)!r})\n"
                     "from consolidate import Store\n"
                     f"while not __import__('os').path.exists({str(stop)!r}):\n"
                     f"    s = Store({str(folder)!r}, embedding='hash', project='p'); s.sessions.pending(); s.close()\n")
    folder_proc = subprocess.Popen([sys.executable, "-c", folder_script], env=_env())
    procs = [subprocess.Popen([CONSOLE, "hook", "--store", str(folder), "--no-worker"], stdin=subprocess.PIPE,
                              env=_env(), text=True) for _ in range(8)]
    for i, p in enumerate(procs):
        p.stdin.write(json.dumps(end_payload(f"c{i}")))
        p.stdin.close()
    assert all(p.wait(timeout=60) == 0 for p in procs)
    stop.write_text("")
    assert folder_proc.wait(timeout=60) == 0
    lines = queue_lines(store)
    assert sorted(x["session_id"] for x in lines) == [f"c{i}" for i in range(8)]
    tier = Store(folder, embedding="hash", project="p").sessions
    rows = tier.queued()
    assert sorted(r["session_id"] for r in rows) == [f"c{i}" for i in range(8)]
    assert tier.fold_queue_file() == 0  # nothing left to fold, nothing folded twice


def test_a_session_consolidated_as_a_failure_is_not_queued_again(store):
    tier = Store(store.path, embedding="hash", project="p").sessions
    tier.end("s1", "failure")
    run = subprocess.run([CONSOLE, "run", "--store", str(store.path), "--judge", "noop"], capture_output=True,
                         text=True, env=_env())
    assert run.returncode == 0, run.stderr
    assert hook(store.path, end_payload("s1"), "--no-worker").returncode == 0
    row = Store(store.path, embedding="hash", project="p").sessions.session_end("s1")
    assert row["outcome"] == "failure" and row["status"] != "queued"


def test_idle_run_light_and_full_paths_say_and_do_the_same(tmp_path):
    """``consolidate run --session S`` for an ended session without notes: the light path (no
    pipeline import) and the full one (forced with an option the light path leaves to it) print the
    same lines and leave the same queue row."""
    results = {}
    for how, extra in (("light", []), ("full", ["--time-box", "120"])):
        s = Store(tmp_path / how / ".memofs", embedding="hash", project="p")
        s.sessions.end("idle", "success")
        s.close()
        out = subprocess.run([CONSOLE, "run", "--session", "idle", "--store", str(s.path), *extra],
                             capture_output=True, text=True, env=_env())
        assert out.returncode == 0, out.stderr
        row = Store(s.path, embedding="hash", project="p").sessions.session_end("idle")
        assert row["run_id"] and f"run {row['run_id']} " in out.stdout  # the run it printed is the row's
        text = " ".join(w if not w.startswith("run-") else "RUN" for w in out.stdout.split(" "))
        results[how] = (text, row["status"], row["result"])
        undone = subprocess.run([CONSOLE, "undo", row["run_id"], "--store", str(s.path)],
                                capture_output=True, text=True, env=_env())  # a run of its own: it can be undone
        assert undone.returncode == 0, undone.stderr
        listed = subprocess.run([CONSOLE, "runs", "--store", str(s.path)], capture_output=True, text=True, env=_env())
        assert row["run_id"] in listed.stdout and "undone" in listed.stdout, listed.stdout
    assert results["light"] == results["full"]
    assert results["light"][1] == "done" and "0 notes" in results["light"][0]


def test_idle_run_light_path_imports_no_pipeline(tmp_path):
    s = Store(tmp_path / ".memofs", embedding="hash", project="p")
    s.sessions.end("idle", "success")
    s.close()
    code = ("import sys; from consolidate.cli.main import main; rc = main(['run', '--session', 'idle', '--store', sys.argv[1]]);"
            " print(sorted(m for m in sys.modules if m.startswith('consolidate')))")
    out = subprocess.run([sys.executable, "-c", code, str(s.path)], capture_output=True, text=True, env=_env())
    assert out.returncode == 0, out.stderr
    loaded = out.stdout.strip().splitlines()[-1]
    assert "consolidate.pipeline.run" not in loaded and "consolidate.store.store" not in loaded and "argparse" not in loaded


def test_a_resumed_session_ends_its_open_part(store):
    """Start, end (light path), resume, end again (light path): the second end ends the resumed
    part, as the full hook decides it (consolidate.store.sessions.segments.session_for_end)."""
    start = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup", "cwd": "/tmp"}
    assert hook(store.path, start).returncode == 0
    assert hook(store.path, end_payload("s1"), "--no-worker").returncode == 0
    resumed = hook(store.path, {**start, "source": "resume"})
    assert resumed.returncode == 0
    part = resumed.stdout.split("this is session ")[1].split(".")[0]
    assert part != "s1" and part.startswith("s1")
    assert hook(store.path, end_payload("s1"), "--no-worker").returncode == 0
    assert len(queue_lines(store)) == 2  # both ends went through the queue file
    tier = Store(store.path, embedding="hash", project="p").sessions
    assert tier.session_end(part)["status"] == "queued"
    assert [r["session_id"] for r in tier.queued()] == ["s1", part]


def test_idle_run_summary_is_a_run_summary_of_no_notes():
    """The light path's queue-row result (session_tables.EMPTY_RUN_SUMMARY, standard library only) is
    what consolidate.model.plan.run_summary says of a run of a session without notes."""
    from consolidate.model.plan import Plan, run_summary
    from consolidate.store.sessions.tables import EMPTY_RUN_SUMMARY

    assert run_summary(Plan("idle")) == EMPTY_RUN_SUMMARY


def test_the_session_end_hook_imports_the_queue_file_module_and_no_database_code(store):
    """The light session-end hook (a real SessionEnd payload on stdin, through cli.main in a fresh
    interpreter) appends through consolidate.store.sessions.queue_file and loads nothing else of the
    store: not the session tier, not its SQL (tables), not the segment rule, not sqlite3."""
    code = ("import json, sys; from consolidate.cli.main import main; rc = main(sys.argv[1:]);"
            " print(json.dumps(sorted(m for m in sys.modules if m.startswith(('consolidate', 'sqlite3')))))")
    out = subprocess.run([sys.executable, "-c", code, "hook", "--store", str(store.path), "--no-worker"],
                         input=json.dumps(end_payload("s1")), capture_output=True, text=True, env=_env(), timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert "consolidate.store.sessions.queue_file" in loaded and queue_lines(store)[-1]["session_id"] == "s1"
    assert not loaded & {"consolidate.store.sessions.tier", "consolidate.store.sessions.tables",
                         "consolidate.store.sessions.segments", "consolidate.store.store", "sqlite3",
                         "consolidate.agents.hooks.full", "consolidate.agents.hooks.lifecycle"}, sorted(loaded)
