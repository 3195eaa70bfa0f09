"""Undo reaches the importers (new-user review): after ``consolidate undo`` of the run that imported a
block with ``import --agents-md``, the same block was taken as already imported and could never come
back; ``import-transcripts`` kept its ledger the same way. Now a source whose run was undone is
imported again (consolidate/agents/undone_imports.py), and only what the undone run took: a block still
queued, a transcript's entries a run that was not undone took, and a second import after the
re-import still count as imported. Real CLI processes (forked preloaded, tests/support/preloaded.py), the fake CLI judge that keeps notes saying
"remember"."""

from __future__ import annotations

import pytest
import json
import shutil
import sys
from pathlib import Path

from consolidate import Store

from many_processes import cli_env
from paths import SUPPORT
from preloaded import run as run_preloaded

pytestmark = pytest.mark.spawns  # starts real processes (the quick loop leaves it out)

FAKE = SUPPORT / "fake_cli"
KEEPER = f"cli:template:{sys.executable} {FAKE / 'answer.py'}"


def _cli(store_path, *args):
    """One CLI command in a new process forked from one with chromadb imported (tests/support/preloaded.py):
    a separate process reading its store from disk, as ``python -m consolidate`` (its start-up is not the subject)."""
    env = cli_env(store_path, CONSOLIDATE_EMBEDDING="hash", CONSOLIDATE_JUDGES="noop")
    return run_preloaded(list(args), env=env, timeout=600)


def _ok(store_path, *args) -> str:
    out = _cli(store_path, *args)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out.stdout


def _memories(store_path) -> set[str]:
    from consolidate.store.index.longterm import close_all

    close_all()
    s = Store(store_path, embedding="hash", create=False)
    try:
        return {r["document"] for r in s.longterm().active()} if s.has_longterm else set()
    finally:
        s.close()
        close_all()


def _runs(store_path, session_prefix: str) -> list[dict]:
    """The runs of sessions starting with ``session_prefix``, newest first."""
    rows = json.loads(_ok(store_path, "runs", "--json"))
    return [r for r in rows if r["session_id"].startswith(session_prefix)]


def _block(*entries: tuple[str, str]) -> str:
    lines = "\n".join(f"- **{t}**: {s} [high, user-stated, 2026-08]" for t, s in entries)
    return ("# Agents\n\n<!-- consolidate:begin (written by `consolidate export`) -->\n"
            "## Project memory (consolidate)\n\n" + lines + "\n<!-- consolidate:end -->\n")


SQLITE = ("decision", "Chose SQLite over Postgres because it needs no server")
REGION = ("fact", "The staging cluster runs in eu-west-1")
PNPM = ("preference", "The user wants pnpm, not npm, in every script")


def test_an_undone_agents_md_import_can_be_imported_again(tmp_path):
    """The review's input: import, undo its run, import the same block again."""
    st = tmp_path / ".memofs"
    agents = tmp_path / "AGENTS.md"
    agents.write_text(_block(SQLITE, REGION))
    _ok(st, "import", "--agents-md", str(agents))
    assert _memories(st) == {SQLITE[1], REGION[1]}
    [run] = _runs(st, "agents-md-")
    _ok(st, "undo", run["run_id"])
    assert _memories(st) == set()
    out = _ok(st, "import", "--agents-md", str(agents))
    assert "imported 2 memories" in out and "imported before" not in out, out
    assert _memories(st) == {SQLITE[1], REGION[1]}
    assert "imported before" in _ok(st, "import", "--agents-md", str(agents))  # now it is imported again
    # and the kind holds for a second round: undo the re-import, import once more
    newest = _runs(st, "agents-md-")[0]
    assert newest["run_id"] != run["run_id"]
    _ok(st, "undo", newest["run_id"])
    assert _memories(st) == set()
    assert "imported 2 memories" in _ok(st, "import", "--agents-md", str(agents))
    assert _memories(st) == {SQLITE[1], REGION[1]}


def test_undo_of_one_block_leaves_the_others_imported(tmp_path):
    st = tmp_path / ".memofs"
    a, b = tmp_path / "AGENTS.md", tmp_path / "CLAUDE.md"
    a.write_text(_block(SQLITE))
    b.write_text(_block(PNPM, REGION))
    _ok(st, "import", "--agents-md", str(a))
    _ok(st, "import", "--agents-md", str(b))
    run_a = next(r for r in _runs(st, "agents-md-") if r["added"] == 1)
    _ok(st, "undo", run_a["run_id"])
    assert "imported before" in _ok(st, "import", "--agents-md", str(b))
    assert "imported 1 memories" in _ok(st, "import", "--agents-md", str(a))
    assert _memories(st) == {SQLITE[1], PNPM[1], REGION[1]}


def test_a_block_still_queued_is_not_imported_twice(tmp_path):
    """Only an undone run reopens a block: one queued (--no-run) or never run is imported already."""
    st = tmp_path / ".memofs"
    agents = tmp_path / "AGENTS.md"
    agents.write_text(_block(SQLITE))
    assert "queued" in _ok(st, "import", "--agents-md", str(agents), "--no-run")
    assert "imported before" in _ok(st, "import", "--agents-md", str(agents), "--no-run")
    s = Store(st, embedding="hash", create=False)
    try:
        [sid] = [sid for sid in s.sessions.sessions()]
        assert len(s.sessions.notes(sid)) == 1  # not two copies of the entry
    finally:
        s.close()


def test_an_undone_run_with_other_sessions_reopens_only_its_own(tmp_path):
    """A run of an ordinary session undone does not reopen an imported block."""
    st = tmp_path / ".memofs"
    agents = tmp_path / "AGENTS.md"
    agents.write_text(_block(SQLITE))
    _ok(st, "import", "--agents-md", str(agents))
    _ok(st, "note", "--session", "work", "--flag", "--kind", "fact", "The CI cache lives in the ci-cache bucket")
    _ok(st, "end", "--session", "work", "--outcome", "success")
    _ok(st, "run")
    [work] = _runs(st, "work")
    _ok(st, "undo", work["run_id"])
    assert "imported before" in _ok(st, "import", "--agents-md", str(agents))


SESSION = "7c1d2e30-aaaa-4bbb-8ccc-ddddeeeeffff"


def _transcript(path: Path, *prompts: str) -> Path:
    entries = [{"type": "user", "uuid": f"u{i}", "sessionId": SESSION, "message": {"role": "user", "content": p}}
               for i, p in enumerate(prompts)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


P1 = "Remember: we always deploy from the release branch, never from main, because main skips the smoke suite"
P2 = "Remember that the staging database is reset every night at 02:00 UTC by the cron job"
P3 = "Remember: releases are tagged only after the smoke suite passes on staging"


def _import(st, *paths) -> str:
    return _ok(st, "import-transcripts", *map(str, paths), "--judge", KEEPER)


def test_an_undone_transcript_import_can_be_imported_again(tmp_path):
    st = tmp_path / ".memofs"
    t = _transcript(tmp_path / "t" / f"{SESSION}.jsonl", P1, P2)
    assert "1 imported (2 notes)" in _import(st, t)
    assert len(_memories(st)) == 2
    assert "1 unchanged" in _import(st, t)
    [run] = _runs(st, "transcript-")
    _ok(st, "undo", run["run_id"])
    assert _memories(st) == set()
    out = _import(st, t)
    assert "1 imported (2 notes)" in out, out
    assert len(_memories(st)) == 2
    assert "1 unchanged" in _import(st, t)  # imported again: a fourth import takes nothing


def test_undo_of_a_grown_transcripts_second_import_reopens_only_its_entries(tmp_path):
    """A transcript imported, grown (a resumed session) and imported again: two runs. Undoing the
    second reopens only the entries it took; undoing the first too reopens the rest."""
    st = tmp_path / ".memofs"
    t = _transcript(tmp_path / "t" / f"{SESSION}.jsonl", P1, P2)
    _import(st, t)
    _transcript(t, P1, P2, P3)
    assert "1 imported (1 notes)" in _import(st, t)
    assert len(_memories(st)) == 3
    second, first = _runs(st, "transcript-")
    _ok(st, "undo", second["run_id"])
    assert len(_memories(st)) == 2
    assert "1 imported (1 notes)" in _import(st, t)  # P3 again, not P1 and P2 a second time
    assert len(_memories(st)) == 3
    _ok(st, "undo", first["run_id"])
    assert len(_memories(st)) == 1
    assert "1 imported (2 notes)" in _import(st, t)
    assert len(_memories(st)) == 3


def test_after_undo_a_copy_is_imported_once(tmp_path):
    """Undone, the transcript may come back from a copy at another path, once: the original then
    counts as imported again (same content)."""
    st = tmp_path / ".memofs"
    t = _transcript(tmp_path / "t" / f"{SESSION}.jsonl", P1, P2)
    _import(st, t)
    copy = tmp_path / "backup" / "copy.jsonl"
    copy.parent.mkdir()
    shutil.copy(t, copy)
    [run] = _runs(st, "transcript-")
    _ok(st, "undo", run["run_id"])
    assert "1 imported (2 notes)" in _import(st, copy)
    out = _import(st, t)
    assert "0 imported" in out and "1 copies of a transcript imported from another path" in out, out
    assert len(_memories(st)) == 2


def test_an_exported_block_imports_into_a_store_with_memories_and_again_after_undo(tmp_path):
    """New-user review: a block written by ``export`` (entries carry their memory ids) failed to import
    into any store that already held memories (exit 4, DuplicateIDError from the recall index: the
    exported id and the id this store gives the statement were asked for twice when equal), so an
    export could not come back to its own store, go to a teammate's, or be imported again after undo."""
    src, other = tmp_path / "a" / ".memofs", tmp_path / "b" / ".memofs"
    seed = tmp_path / "seed.md"
    seed.write_text(_block(SQLITE, REGION, PNPM))
    _ok(src, "import", "--agents-md", str(seed))
    exported = tmp_path / "AGENTS.md"
    _ok(src, "export", "--file", str(exported))
    assert "id" in exported.read_text()  # the markers name the memories
    out = _ok(src, "import", "--agents-md", str(exported))  # back into its own store: all known
    assert _memories(src) == {SQLITE[1], REGION[1], PNPM[1]}, out
    other_block = tmp_path / "other.md"
    other_block.write_text(_block(("fact", "Nightly backups run at 02:00 UTC")))
    _ok(other, "import", "--agents-md", str(other_block))
    for project in (None, "elsewhere"):
        extra = ("--project", project) if project else ()
        out = _ok(other, *extra, "import", "--agents-md", str(exported))
        assert "imported 3 memories" in out or "imported before" in out, out
    assert {SQLITE[1], REGION[1], PNPM[1]} <= _memories(other)
    newest = _runs(other, "agents-md-")[0]
    _ok(other, "undo", newest["run_id"])
    assert "imported 3 memories" in _ok(other, "import", "--agents-md", str(exported))
    assert _memories(other) == {"Nightly backups run at 02:00 UTC", SQLITE[1], REGION[1], PNPM[1]}
