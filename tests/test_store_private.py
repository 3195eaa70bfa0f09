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
from consolidate.private import GITIGNORE, make_private

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
    return {p: oct(m) for p, m in modes(root).items()
            if m != (0o700 if os.path.isdir(os.path.join(root, p)) else 0o600)}


def consolidate(project, umask, *args, stdin=None):
    env = {**os.environ, "CONSOLIDATE_EMBEDDING": "hash", "CONSOLIDATE_JUDGES": "rules"}
    return subprocess.run([sys.executable, "-m", "consolidate", *args], cwd=project, env=env, input=stdin,
                          capture_output=True, text=True, timeout=300, preexec_fn=lambda: os.umask(umask))


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
