"""The store is private to its user and ignored by git (issue 14, input 6): 0700 folders and 0600 files
(sessions.sqlite3 and its WAL, memories, Chroma, events, logs, journal, snapshots, locks) whatever the
umask of the processes that write it, and a .gitignore inside it, so `git add -A` commits none of it."""

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from consolidate import Store
from consolidate.core.private import GITIGNORE, make_private
from t30_store import run_with_umask, server_umask

PW = "Qm7#vLx29pK"


def modes(root):
    """{relative path: mode} of the store folder and everything under it."""
    out = {".": stat.S_IMODE(os.stat(root).st_mode)}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                out[os.path.relpath(p, root)] = stat.S_IMODE(os.stat(p).st_mode)
    return out


def not_private(root):
    """Entries that are not 0700 folders or 0600 files (0400: a read-only private file, the workspace's
    context/ files, is private too)."""
    return {p: oct(m) for p, m in modes(root).items()
            if m != (0o700 if os.path.isdir(os.path.join(root, p)) else 0o600)
            and not (m == 0o400 and os.path.isfile(os.path.join(root, p)))}


def consolidate(project, umask, *args, stdin=None):
    """``python -m consolidate ARGS`` in a process whose umask is ``umask``: forked from a server with
    chromadb imported and that umask (tests/support/t30_store.py; the start-up is not what is pinned)."""
    env = {**os.environ, "CONSOLIDATE_EMBEDDING": "hash", "CONSOLIDATE_JUDGES": "rules"}
    return run_with_umask(list(args), umask=umask, env=env, cwd=project, input=stdin, timeout=300)


@pytest.mark.spawns
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o000, 0o077])
def test_the_commands_here_run_under_the_umask_they_are_given(umask):
    """The processes :func:`consolidate` starts are forked from a server started with that umask (tests/support/t30_store.py)."""
    assert server_umask(umask) == umask


@pytest.mark.spawns
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o000])
def test_every_file_and_folder_is_private_whatever_the_umask(tmp_path, umask):
    project = tmp_path / "app"
    project.mkdir()
    for args in (("note", "--session", "s1", "--flag", "--kind", "decision",
                  "Chose SQLite for the session tier because it needs no server"),
                 ("note", "--session", "s1", f"the staging password is {PW}"),
                 ("note", "--session", "s1", "a maybe note about the build cache"),
                 ("end", "--session", "s1", "--outcome", "success"),
                 ("run",),
                 ("hook", "--harvest", "--no-worker"),):
        r = consolidate(project, umask, *args,
                        stdin=json.dumps({"hook_event_name": "SessionEnd", "session_id": "s2"}) if args[0] == "hook" else None)
        assert r.returncode == 0, (args, r.stderr)
    store = project / ".memofs"
    # the run wrote the usual parts: memories, events, logs, journal, snapshots
    names = set(modes(store))
    for part in ("sessions.sqlite3", "events/memory-events.jsonl", "memory/notes.md", "graph", "chroma", "logs/hook.log",
                 ".gitignore"):
        assert part in names, (part, sorted(names))
    assert any(n.startswith("journal") for n in names) and any(n.startswith("snapshots") for n in names), sorted(names)
    assert not_private(store) == {}
    assert (store / ".gitignore").read_text(encoding="utf-8") == GITIGNORE


@pytest.mark.spawns
def test_git_add_all_commits_nothing_of_the_store(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")  # the .gitignore content is checked above
    project = tmp_path / "app"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "main.py").write_text("print('hi')\n")
    assert consolidate(project, 0o022, "note", "--session", "s", f"the staging password is {PW}").returncode == 0
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    staged = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=project, capture_output=True, text=True,
                            check=True).stdout.split()
    assert staged == ["main.py"]


def test_an_older_world_readable_store_is_made_private_when_opened(tmp_path):
    root = tmp_path / ".memofs"
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "worker.log").write_text("old log\n")
    (root / "sessions.sqlite3").write_bytes(b"")
    os.chmod(root, 0o755)
    os.chmod(root / "logs", 0o755)
    os.chmod(root / "logs" / "worker.log", 0o644)
    os.chmod(root / "sessions.sqlite3", 0o644)
    (root / "sessions.sqlite3").unlink()  # an empty file is not a database: start from none
    Store(root, embedding="hash").sessions.add_note("s", "a note")
    assert not_private(root) == {}
    assert (root / ".gitignore").exists()


def test_read_commands_create_no_store(tmp_path):
    s = Store(tmp_path / ".memofs", create=False)
    assert not s.exists and not (tmp_path / ".memofs").exists()


def test_make_private_leaves_symlinks_alone(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    os.chmod(outside, 0o644)
    root = tmp_path / "store"
    root.mkdir()
    (root / "link").symlink_to(outside)
    make_private(root)
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


def _store_with_a_run(project, umask):
    for args in (("note", "--session", "s1", "--flag", "--kind", "decision",
                  "Chose SQLite for the session tier because it needs no server"),
                 ("end", "--session", "s1", "--outcome", "success"), ("run",)):
        r = consolidate(project, umask, *args)
        assert r.returncode == 0, (args, r.stderr)
    r = consolidate(project, umask, "runs")
    return r.stdout.split()[0]


@pytest.mark.spawns
@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_every_writing_command_keeps_the_store_private(tmp_path, umask):
    """undo, doctor --repair (rewritten events and the *.corrupt copies), the workspace commands
    (start, write, append, extract, complete), backfill, batch, resolve-free maintenance: each run
    under a wide umask leaves no file or folder readable by others (issue 14 follow-up, part 2)."""
    project = tmp_path / "app"
    project.mkdir()
    run_id = _store_with_a_run(project, umask)
    store = project / ".memofs"
    assert run_id.startswith("run-") and not_private(store) == {}
    steps = [("undo", run_id), ("doctor", "--repair"),
             ("session", "start", "--session", "w1", "--task", "fix the login bug"),
             ("session", "write", "--session", "w1", "output/notes.md", "- decided: keep SQLite for sessions"),
             ("session", "append", "--session", "w1", "working/scratch.md", "tried the cache"),
             ("session", "extract", "--session", "w1"),
             ("session", "complete", "--session", "w1", "--outcome", "success"),
             ("backfill",), ("batch",), ("run",)]
    for args in steps:
        if args[0] == "doctor":  # something to repair: a torn event line and a torn graph line
            with open(store / "events" / "memory-events.jsonl", "a") as f:
                f.write('{"broken\n')
            with open(store / "graph" / "nodes.jsonl", "a") as f:
                f.write('{"broken\n')
        r = consolidate(project, umask, *args)
        assert r.returncode in (0, 1), (args, r.returncode, r.stderr)  # doctor exits 1 when it found problems
        assert not_private(store) == {}, args
    names = set(modes(store))
    assert "events/memory-events.jsonl.corrupt" in names, sorted(names)
    assert any(n.startswith("workspaces/") and n.endswith("context/memories.md") for n in names), sorted(names)


@pytest.mark.spawns
def test_workspace_context_files_are_read_only_and_private(tmp_path):
    project = tmp_path / "app"
    project.mkdir()
    r = consolidate(project, 0o022, "session", "start", "--session", "w1", "--task", "t")
    assert r.returncode == 0, r.stderr
    context = [p for p in (project / ".memofs").rglob("context/*") if p.is_file()]
    assert context and {oct(stat.S_IMODE(p.stat().st_mode)) for p in context} == {oct(0o400)}
    r = consolidate(project, 0o022, "session", "start", "--session", "w1", "--task", "t")  # resume
    assert r.returncode == 0, r.stderr
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in context} == {oct(0o400)}


PYTHON_API = r"""
import os, sys
os.umask(0o022)
from consolidate import Store
from consolidate.pipeline.doctor import check
from consolidate.pipeline.undo import undo_run
from consolidate.pipeline.workspace import start
path, run_id, what = sys.argv[1], sys.argv[2], sys.argv[3]
store = Store(path, create=False)
if what == "undo":
    undo_run(store, run_id)
elif what == "repair":
    with open(os.path.join(path, "events", "memory-events.jsonl"), "a") as f:
        f.write('{"broken\n')
    check(store, repair=True)
elif what == "workspace":
    start(store, "w2", "a task")
elif what == "note":
    store.sessions.add_note("s9", "another note about the deploy script")
"""


@pytest.mark.spawns
@pytest.mark.parametrize("what", ["undo", "repair", "workspace", "note"])
def test_python_api_writers_keep_the_store_private(tmp_path, what):
    """The same through the Python API, with the store opened create=False in a process whose umask is
    022: undo_run, doctor.check(repair=True), workspace.start, and a note."""
    project = tmp_path / "app"
    project.mkdir()
    run_id = _store_with_a_run(project, 0o077)
    store = project / ".memofs"
    env = {**os.environ, "CONSOLIDATE_EMBEDDING": "hash", "CONSOLIDATE_JUDGES": "rules"}
    r = subprocess.run([sys.executable, "-c", PYTHON_API, str(store), run_id, what], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert not_private(store) == {}


def test_private_file_narrows_an_existing_wide_file(tmp_path):
    from consolidate.core.private import private_file

    p = tmp_path / "sub" / "events.jsonl"
    p.parent.mkdir()
    p.write_text("old\n")
    os.chmod(p, 0o644)
    with private_file(p, "a") as f:
        f.write("new\n")
    assert stat.S_IMODE(p.stat().st_mode) == 0o600 and p.read_text() == "old\nnew\n"
    with private_file(tmp_path / "fresh" / "x.bin", "wb") as f:
        f.write(b"x")
    assert stat.S_IMODE((tmp_path / "fresh" / "x.bin").stat().st_mode) == 0o600
