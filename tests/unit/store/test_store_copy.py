"""A copy of a store (``cp -a``, ``shutil.copytree``, a backup restored) is the same store: every file
that tells "the same file" by its inode also finds its content again in the copy (fresh tester 208:
undo in a copy reverted the index and not the graph; every session end the hook had queued was queued
and run again). ``INODE_USERS`` registers every module that keys anything on an inode, with the test
here that shows a copy behaves as its original; the last test walks the package so that a new one is
registered too."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import consolidate
from consolidate import Store
from consolidate.cli.main import main
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge
from consolidate.pipeline import doctor
from consolidate.pipeline.run import run_queue
from consolidate.store.sessions.queue_file import append_end

from conftest import keep

PACKAGE = Path(consolidate.__file__).resolve().parent

#: module (relative to the package) -> the test showing its inode-keyed state survives a copy
INODE_USERS = {
    "store/graph.py": "test_undo_in_a_copy_reverts_the_graph_too",
    "store/snapshots.py": "test_undo_in_a_copy_reverts_the_graph_too",
    "store/sessions/queue_file.py": "test_a_copy_does_not_queue_the_hooks_session_ends_again",
    "store/sessions/tables.py": "test_a_copy_does_not_queue_the_hooks_session_ends_again",
    "store/views/start_file.py": "test_a_copy_starts_with_the_same_context",
}


def _run(store, sid: str, note: str, statement: str) -> str:
    store.sessions.add_note(sid, note)
    store.sessions.end(sid, "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge({note[:12]: keep(statement)})]))
    return plan.run_id


def _copy(store, tmp_path: Path) -> Store:
    store.close()
    shutil.copytree(store.path, tmp_path / "copy" / ".memofs", symlinks=True, copy_function=shutil.copy2)
    return Store(tmp_path / "copy" / ".memofs", embedding="hash", project="testproj")


def _graph_memories(store) -> set[str]:
    from consolidate.store import graph
    from consolidate.store.layout import GRAPH

    g = graph.load(store.sub(GRAPH))
    return {n for n, a in g.nodes(data=True) if a.get("kind") == "memory" and a.get("status") == "active"}


def test_undo_in_a_copy_reverts_the_graph_too(store, tmp_path):
    _run(store, "s1", "use pnpm to install packages", "Use pnpm to install packages")
    last = _run(store, "s2", "the api listens on port 8080", "The API server listens on port 8080")
    copy = _copy(store, tmp_path)
    try:
        assert main(["undo", "--store", str(copy.path), "--embedding", "hash", last]) == 0
        active = {r["id"] for r in copy.longterm().with_status("active")}
        assert len(active) == 1 and _graph_memories(copy) == active
        assert doctor.check(copy) == []
    finally:
        copy.close()


def test_a_copy_does_not_queue_the_hooks_session_ends_again(store, tmp_path):
    store.sessions.add_note("s1", "use pnpm to install packages")
    append_end(store.path, {"session_id": "s1", "outcome": "success", "reason": "hook", "ended_at": time.time(),
                            "event": "SessionEnd"})
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge({"pnpm": keep("Use pnpm to install packages")})]))
    assert plan.writes()
    copy = _copy(store, tmp_path)
    try:
        assert copy.sessions.queued() == [] and run_queue(copy, chain_factory=lambda: JudgeChain([])) == []
        # a new end appended to the copy's file still reaches its queue, once
        copy.sessions.add_note("s2", "tests need TZ=UTC")
        append_end(copy.path, {"session_id": "s2", "outcome": "success", "reason": "hook", "ended_at": time.time(),
                               "event": "SessionEnd"})
        assert [e["session_id"] for e in copy.sessions.queued()] == ["s2"]
    finally:
        copy.close()


def test_a_copy_starts_with_the_same_context(store, tmp_path):
    """The start file's stamps hold the inode of the files it was made from: a copy's differ, so the
    copy's first start makes the text again, the same text."""
    from consolidate.agents.hooks.full import run_hook

    _run(store, "s1", "use pnpm to install packages", "Use pnpm to install packages")
    start = {"hook_event_name": "SessionStart", "session_id": "a1", "source": "startup"}
    _, original = run_hook(store.path, payload=start, spawn=False)
    copy = _copy(store, tmp_path)
    try:
        _, copied = run_hook(copy.path, payload=start, spawn=False)
        assert "Use pnpm to install packages" in original
        assert copied.replace(str(copy.path), str(store.path)) == original
    finally:
        copy.close()


def test_every_module_keying_state_on_an_inode_is_registered():
    users = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if re.search(r"st_ino|\binode\b|\bino\b", p.read_text(encoding="utf-8"))}
    assert users == set(INODE_USERS), "register the module in INODE_USERS with a test of a copied store"
    tests = {n for n in globals() if n.startswith("test_")}
    assert set(INODE_USERS.values()) <= tests
