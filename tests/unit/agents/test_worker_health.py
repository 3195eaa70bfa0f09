"""Settings a worker would refuse are refused at install time, and failing workers are said
(issue 29, item 9: ``install-hook --judge bogus`` was written with exit 0; every worker then died
with ``unknown judge``, only in logs/worker.log, while the session ends piled up).

- ``install-hook`` parses the hook command it would write with the real parser and checks its
  options as ``run`` does (consolidate/pipeline/run_options.py): exit 2 (4 for the store), one line, the
  settings file untouched; the same bad judge gives ``run`` the same line.
- a worker that fails is recorded (logs/worker.status.json, consolidate/store/worker_health.py); ``status``
  and the next SessionStart (full and light path) say so, with the queued ends and the oldest's age,
  until the queue is drained."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from consolidate import Store
from consolidate.store.worker_health import PILING_UP_AFTER, health_line
from paths import SUPPORT
from preloaded import run as run_preloaded

sys.path.insert(0, str(SUPPORT))
from test_fast_start import _seed, end, hook, hook_modules, is_light, start_payload  # noqa: E402


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update({"CONSOLIDATE_EMBEDDING": "hash", **extra})
    return env


def cli(cwd, *argv, **env) -> subprocess.CompletedProcess:
    """``consolidate ARGV`` in a process forked from one with chromadb imported (tests/support/preloaded.py:
    ``python -m consolidate``, the same main as the console script; the hook commands install-hook writes
    name the console script beside the interpreter either way). The installed command itself runs in
    test_a_judge_option_naming_no_judge_is_refused_at_install_and_run and through :func:`hook`."""
    return run_preloaded(list(argv), cwd=cwd, env=_env(**env), timeout=120)


BAD = [
    (["--judge", "bogus"], {}, 2, "unknown judge 'bogus'"),
    (["--judge", "cli:bogus"], {}, 2, "unknown preset 'bogus'"),
    (["--judge", "cli:template:"], {}, 2, "cli:template needs a command"),
    (["--judge", "rules,bogus"], {}, 2, "unknown judge 'bogus'"),
    ([], {"CONSOLIDATE_JUDGES": "noop,nope"}, 2, "unknown judge 'nope'"),
    (["--judge", "api"], {"CONSOLIDATE_PROMPT_VERSION": "judge-v99"}, 2, "unknown judge prompt version 'judge-v99'"),
    (["--embedding", "nope"], {}, 2, "unknown embedding function 'nope'"),
    (["--chroma-url", "ftp://chroma:8000"], {}, 2, "bad Chroma URL 'ftp://chroma:8000'"),
    (["--chroma-url", "http://chroma:99999"], {}, 2, "bad Chroma URL 'http://chroma:99999'"),
    (["--store", "a-file"], {}, 4, "is a file, not a folder"),
]


@pytest.mark.spawns
@pytest.mark.parametrize("agent", ["claude-code", "gemini-cli"])
@pytest.mark.parametrize("argv,env,code,said", BAD, ids=[b[3][:30] for b in BAD])
def test_install_hook_refuses_what_the_worker_would_refuse(tmp_path, agent, argv, env, code, said):
    (tmp_path / "a-file").write_text("not a store\n")
    settings = tmp_path / (".claude" if agent == "claude-code" else ".gemini") / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"theme": "dark"}\n')
    out = cli(tmp_path, "install-hook", agent, *argv, **env)
    assert out.returncode == code, out
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert settings.read_text() == '{"theme": "dark"}\n' and not list(settings.parent.glob("*.bak-*"))


@pytest.mark.spawns
@pytest.mark.parametrize("spec", ["bogus", "cli:bogus", "cli:template:"])
def test_run_refuses_the_same_judge_with_the_same_line(tmp_path, spec):
    installed = cli(tmp_path, "install-hook", "claude-code", "--judge", spec)
    run = cli(tmp_path, "run", "--judge", spec)
    assert installed.returncode == run.returncode == 2
    assert installed.stderr == run.stderr


@pytest.mark.spawns
def test_the_store_s_own_judge_file_and_embedding_are_checked(tmp_path):
    store = Store(tmp_path / ".memofs", embedding="hash", project="p")
    _seed(store)
    store.close()
    (tmp_path / ".memofs" / "consolidate.toml").write_text('judges = ["rules", "cli:nosuch"]\n')
    out = cli(tmp_path, "install-hook", "claude-code")
    assert out.returncode == 2 and "unknown preset 'nosuch'" in out.stderr
    (tmp_path / ".memofs" / "consolidate.toml").unlink()
    out = cli(tmp_path, "install-hook", "claude-code", "--embedding", "minilm")  # the store is hash-256
    assert out.returncode == 4 and "was built with embedding hash-256" in out.stderr
    assert not (tmp_path / ".claude").exists()


@pytest.mark.spawns
@pytest.mark.parametrize("argv", [["--judge", "rules", "--judge", "noop"], ["--judge", "cli:claude"],
                                  ["--embedding", "hash"], ["--chroma-url", "http://127.0.0.1:1"]])
def test_good_options_are_written(tmp_path, argv):
    out = cli(tmp_path, "install-hook", "claude-code", *argv)
    assert out.returncode == 0, out.stderr
    written = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    command = written["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    assert all(a in command for a in argv if not a.startswith("--"))


def _wait_for_worker(store_path: Path, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    path = store_path / "logs" / "worker.status.json"
    while time.monotonic() < deadline:
        if path.exists():
            return json.loads(path.read_text())
        time.sleep(0.1)
    raise AssertionError(f"no worker recorded itself; worker.log: {(store_path / 'logs' / 'worker.log').read_text()}")


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    store = Store(root / ".memofs", embedding="hash", project="proj")
    _seed(store)
    store.close()
    return root, root / ".memofs"


@pytest.mark.spawns
def test_a_failing_worker_is_said_by_status_and_the_next_session_start(project):
    root, store_path = project
    # a hook command edited by hand (or an agent environment) names a judge no worker can build
    out = cli(root, "note", "--session", "w1", "The deploy script needs AWS_PROFILE=staging before it runs")
    assert out.returncode == 0, out.stderr
    payload = {"session_id": "w1", "hook_event_name": "SessionEnd", "reason": "exit", "cwd": str(root)}
    ended = hook(store_path, payload, "--judge", "bogus")
    assert ended.returncode == 0 and ended.stdout == ""
    recorded = _wait_for_worker(store_path)
    assert recorded["failures"] == 1 and "unknown judge 'bogus'" in recorded["last_error"]

    status = cli(root, "status", "--json")
    data = json.loads(status.stdout)
    assert data["worker"]["failures"] == 1 and data["queue"]["count"] == 1
    assert data["queue"]["oldest_age_seconds"] >= 0
    text = cli(root, "status").stdout
    assert "WARNING: the background worker failed once" in text and "unknown judge 'bogus'" in text
    assert "1 session end is queued, the oldest" in text

    first = hook(store_path, start_payload("w2", root))  # the full path (the end of w1 changed nothing shown)
    warning = [line for line in first.stdout.splitlines() if line.startswith("consolidate: WARNING:")]
    assert len(warning) == 1 and "unknown judge 'bogus'" in warning[0] and "1 session end is queued" in warning[0]
    end(store_path, "w2")
    printed, modules = hook_modules(store_path, start_payload("w3", root))
    assert is_light(modules) and "consolidate.store.worker_health" in modules
    assert "consolidate: WARNING: the background worker failed once" in printed
    assert "2 session ends are queued" in printed  # w2's end too (queued with --no-worker)

    # the user fixes it and drains the queue: nothing is said any more
    drained = cli(root, "run", "--judge", "rules")
    assert drained.returncode in (0, 75), drained.stderr
    assert "WARNING" not in cli(root, "status").stdout
    end(store_path, "w3")
    printed, _ = hook_modules(store_path, start_payload("w4", root))
    assert "WARNING" not in printed


@pytest.mark.spawns
def test_ends_piling_up_without_a_worker_are_said(project):
    root, store_path = project
    for sid in ("p1", "p2", "p3"):
        end(store_path, sid)  # queued, no worker (--no-worker)
    store = Store(store_path, embedding="hash", project="proj")
    assert [q["session_id"] for q in store.sessions.queued()] == ["p1", "p2", "p3"]  # the queue file folded
    store.close()
    db = sqlite3.connect(store_path / "sessions.sqlite3")
    db.execute("UPDATE session_ends SET ended_at = ended_at - ? WHERE session_id='p1'", (2 * 3600,))
    db.commit()
    db.close()
    printed, modules = hook_modules(store_path, start_payload("p4", root))
    assert is_light(modules)
    [warning] = [line for line in printed.splitlines() if "WARNING" in line]
    assert "3 session ends are queued, the oldest 2.0 h old" in warning and "failed" not in warning
    assert "`consolidate run` consolidates them now" in warning


def test_health_line_kinds():
    def q(count, age=None, done=None):
        return {"count": count, "oldest_age_seconds": age, "last_done": done}

    failed = {"failures": 2, "last_error": "boom", "last_failed": "t", "failed_at": 1000.0}
    assert health_line({}, q(0)) == ""
    assert health_line(failed, q(0)) == ""  # drained since: nothing waits
    assert health_line({"failures": 0}, q(4, PILING_UP_AFTER - 1)) == ""  # a worker is on it
    assert "failed 2 times" in health_line(failed, q(1, 5.0, 999.0))
    assert health_line(failed, q(1, 5.0, 1001.0)) == ""  # a run consolidated an end since the failure
    assert "1 session end is queued, the oldest 3.0 days old" in health_line({}, q(1, 3 * 86400))


@pytest.mark.spawns
@pytest.mark.parametrize("spec", ["", " ", ",", " , "])
def test_a_judge_option_naming_no_judge_is_refused_at_install_and_run(tmp_path, spec):
    """``--judge ''`` (or ``,``) was written into the hook with exit 0 and the worker then used the
    default chain silently (a fresh tester's find): it names no judge, so install-hook and run refuse
    it with one line, exit 2, the settings untouched."""
    env = {**os.environ, "HOME": str(tmp_path)}
    proj = tmp_path / "proj"
    proj.mkdir()
    out = subprocess.run(["consolidate", "install-hook", "claude-code", "--judge", spec], cwd=proj,
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 2 and "names no judge" in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert not (proj / ".claude" / "settings.json").exists()
    run = subprocess.run(["consolidate", "run", "--store", str(proj / ".memofs"), "--judge", spec], cwd=proj,
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 2 and "names no judge" in run.stderr, run.stderr
