"""Past transcripts (issue 21, item 7): ``consolidate import-transcripts`` finds the project's Claude
Code and Gemini CLI transcripts in a fake HOME laid out as the agent CLIs lay them out, harvests each
with the hook's harvest into its own session, consolidates them, and imports each transcript once."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from consolidate import Store
from consolidate.agents.transcripts import Transcript, claude_slug, gemini_as_claude_entries, gemini_messages, import_transcripts

from conftest import DROP, keep

PNPM = ("The test suite must be run with `pnpm test`: npm fails here because the repository only has a"
        " pnpm-lock.yaml, and npm rewrites the lockfile into a package-lock.json that CI then rejects.")
CACHE = ("The CI cache key includes the Node version and the hash of pnpm-lock.yaml, so bumping Node"
         " invalidates every cached store: expect the first pipeline after a bump to take twelve minutes.")
STAGING = ("The staging database is reset every night at 02:00 UTC by the cron job in ops/cron.yaml, so"
           " fixtures loaded by hand are gone the next morning; load them from the seed script instead.")
LATER = ("Releases are cut from the release branch only after the smoke suite passes on staging; tagging"
         " main directly skips the smoke suite and was the cause of the broken 2.3.0 release.")


def _claude_entries(extra=()):
    return [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "run the tests please"}},
        {"type": "assistant", "uuid": "a1", "message": {"content": [
            {"type": "text", "text": "Let me run the tests."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "npm test"}}]}},
        {"type": "user", "uuid": "u2", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
             "content": "npm ERR! code EUSAGE: lockfile package-lock.json does not match pnpm-lock.yaml"}]}},
        {"type": "user", "uuid": "u3", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "ok 312 tests passed"}]}},
        {"type": "assistant", "uuid": "a2", "message": {"content": [{"type": "text", "text": PNPM}]}},
        *extra,
    ]


def _write_jsonl(path: Path, entries) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))


@pytest.fixture
def home(tmp_path):
    """A fake HOME with two Claude Code transcripts and one Gemini CLI chat of the project
    ``tmp_path/app`` (store ``app/.memofs``), and one Claude Code transcript of another project."""
    home = tmp_path / "home"
    project = tmp_path / "app"
    project.mkdir()
    cc = home / ".claude" / "projects" / claude_slug(project)
    _write_jsonl(cc / "11111111-aaaa-4bbb-8ccc-000000000001.jsonl", _claude_entries())
    _write_jsonl(cc / "11111111-aaaa-4bbb-8ccc-000000000002.jsonl", [
        {"type": "user", "uuid": "v1", "message": {"role": "user", "content": "why is CI slow after the bump?"}},
        {"type": "assistant", "uuid": "b1", "message": {"content": [{"type": "text", "text": CACHE}]}}])
    _write_jsonl(home / ".claude" / "projects" / claude_slug(tmp_path / "other") / "x.jsonl", [
        {"type": "assistant", "uuid": "z1", "message": {"content": [{"type": "text", "text": LATER}]}}])
    chats = home / ".gemini" / "tmp" / hashlib.sha256(str(project.resolve()).encode()).hexdigest() / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-11-01T10-00-abcd1234.json").write_text(json.dumps({
        "sessionId": "gem-0001", "projectHash": "x", "startTime": "2026-11-01T10:00:00Z",
        "messages": [
            {"id": "g1", "type": "user", "content": [{"text": "the fixtures vanished again"}]},
            {"id": "g2", "type": "gemini", "content": "", "toolCalls": [
                {"id": "c1", "name": "run_shell_command", "args": {"command": "psql -c 'select 1'"},
                 "status": "error", "resultDisplay": "psql: error: connection refused on port 5433"}]},
            {"id": "g3", "type": "gemini", "content": STAGING},
            {"id": "g4", "type": "info", "content": "Request cancelled."}]}))
    script = tmp_path / "judge.json"
    script.write_text(json.dumps({"pnpm test": keep(PNPM, "constraint"), "CI cache key": keep(CACHE),
                                  "staging database": keep(STAGING), "smoke suite": keep(LATER, "decision",
                                                                                         reason="tagging main skips it"),
                                  "": DROP}))
    return home, project, script


def _run(home, project, script, *args):
    env = {**os.environ, "HOME": str(home)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    return subprocess.run([sys.executable, "-m", "consolidate", "import-transcripts", "--store",
                           str(project / ".memofs"), "--judge", f"scripted:{script}", *args],
                          capture_output=True, text=True, env=env, cwd=str(project), timeout=600)


def _memories(project):
    s = Store(project / ".memofs")
    try:
        return {r["document"]: r["metadata"] for r in s.longterm().all()}
    finally:
        s.close()


@pytest.mark.spawns
def test_import_then_nothing_twice_then_only_what_grew(home):
    home, project, script = home
    first = _run(home, project, script, "--claude-code", "--gemini-cli")
    assert first.returncode == 0, first.stderr
    assert "found 2 Claude Code" in first.stdout and "1 Gemini CLI" in first.stdout
    assert "3 transcripts: 3 imported" in first.stdout and "consolidated 3 sessions" in first.stdout
    got = _memories(project)
    assert {PNPM, CACHE, STAGING} <= set(got) and LATER not in got  # another project's transcript left alone
    assert got[PNPM]["session_id"] == "transcript-claude-code-11111111-aaaa-4bbb-8ccc-000000000001"
    assert got[STAGING]["session_id"] == "transcript-gemini-cli-gem-0001"
    events = (project / ".memofs" / "events" / "memory-events.jsonl").read_text()
    # a second run: every transcript unchanged, nothing imported, nothing written
    second = _run(home, project, script, "--claude-code", "--gemini-cli")
    assert second.returncode == 0 and "3 transcripts: 0 imported (0 notes), 3 unchanged" in second.stdout
    assert (project / ".memofs" / "events" / "memory-events.jsonl").read_text() == events
    # a resumed session grew its transcript: only the new entries are harvested
    cc = home / ".claude" / "projects" / claude_slug(project) / "11111111-aaaa-4bbb-8ccc-000000000001.jsonl"
    _write_jsonl(cc, _claude_entries([{"type": "assistant", "uuid": "a9", "message": {
        "content": [{"type": "text", "text": LATER}]}}]))
    third = _run(home, project, script, "--claude-code")
    assert third.returncode == 0 and "2 transcripts: 1 imported (1 notes), 1 unchanged" in third.stdout
    assert "0 re-confirmed" in third.stdout
    assert LATER in _memories(project)


@pytest.mark.spawns
def test_a_session_the_hooks_consolidated_is_not_imported_again(home):
    home, project, script = home
    s = Store(project / ".memofs")
    s.sessions.add_note("11111111-aaaa-4bbb-8ccc-000000000002", "ci is slow after the node bump")
    s.sessions.end("11111111-aaaa-4bbb-8ccc-000000000002", "success")
    s.close()
    out = _run(home, project, script, "--claude-code", "--no-run")
    assert out.returncode == 0 and "2 transcripts: 1 imported" in out.stdout and "1 already consolidated by the hooks" \
        in out.stdout and "1 sessions queued" in out.stdout


@pytest.mark.spawns
def test_a_path_and_gemini_jsonl_records(home, tmp_path):
    """A folder given as PATH; a newer Gemini CLI record (``.jsonl``: a metadata line, messages written
    again when updated, the last copy wins)."""
    home, project, script = home
    folder = tmp_path / "exported"
    lines = [{"sessionId": "gem-0002", "projectHash": "x", "startTime": "2026-11-02T09:00:00Z", "kind": "main"},
             {"id": "m1", "type": "user", "content": [{"text": "why did 2.3.0 break?"}]},
             {"id": "m2", "type": "gemini", "content": "Looking."},
             {"$set": {"lastUpdated": "2026-11-02T09:01:00Z"}},
             {"id": "m2", "type": "gemini", "content": LATER}]
    _write_jsonl(folder / "session-2026-11-02T09-00-ffff0000.jsonl", lines)
    msgs = gemini_messages(folder / "session-2026-11-02T09-00-ffff0000.jsonl")
    assert [m["content"] for m in msgs if m["type"] == "gemini"] == [LATER]
    out = _run(home, project, script, str(folder))
    assert out.returncode == 0, out.stderr
    assert "1 transcripts: 1 imported" in out.stdout
    assert _memories(project)[LATER]["session_id"] == "transcript-gemini-cli-gem-0002"


def test_gemini_failed_tool_calls_become_tool_errors():
    entries = gemini_as_claude_entries([
        {"id": "g2", "type": "gemini", "content": "", "toolCalls": [
            {"id": "c1", "name": "run_shell_command", "args": {"command": "make"}, "status": "error",
             "resultDisplay": "make: *** No rule to make target 'all'"},
            {"id": "c2", "name": "read_file", "args": {"path": "a"}, "status": "success", "resultDisplay": "x"}]}])
    assert [e["type"] for e in entries] == ["assistant", "user"]
    [err] = entries[1]["message"]["content"]
    assert err["is_error"] and err["tool_use_id"] == "c1" and "No rule" in err["content"]


def test_progress_bar_and_the_python_api(home, capsys):
    home, project, _script = home
    store = Store(project / ".memofs", embedding="hash")
    cc = home / ".claude" / "projects" / claude_slug(project)
    found = [Transcript(p, "claude-code", p.stem) for p in sorted(cc.glob("*.jsonl"))]
    res = import_transcripts(store, found, progress=True)
    err = capsys.readouterr().err
    assert "transcripts:" in err and "/2 " in err  # a bar over the 2 transcripts
    assert res.count("imported") == 2 and len(res.sessions) == 2 and res.notes >= 2
    assert store.sessions.count(res.sessions[0]) >= 1
    again = import_transcripts(store, found, progress=False)
    assert again.count("unchanged") == 2 and again.notes == 0
    store.close()


@pytest.mark.spawns
@pytest.mark.parametrize("args, needle", [([], "give a transcript file or folder"),
                                          (["/nonexistent/folder"], "no such file or folder")])
def test_bad_input(home, args, needle):
    home, project, script = home
    out = _run(home, project, script, *args)
    assert out.returncode == 2 and needle in out.stderr and out.stderr.count("\n") == 1


def test_the_hooks_and_the_import_never_harvest_an_entry_twice(home):
    """A session whose SessionStart the hooks recorded is theirs (harvested at its end); a session
    the import took and that is resumed later (`claude --resume`) gives the hook only its new entries."""
    from consolidate.agents.hooks.full import run_hook

    home, project, _script = home
    store_path = project / ".memofs"
    store = Store(store_path, embedding="hash")
    cc = home / ".claude" / "projects" / claude_slug(project)
    one, two = sorted(cc.glob("*.jsonl"))
    # the hooks saw session two start (it is still running): the import leaves it to them
    run_hook(store_path, payload={"hook_event_name": "SessionStart", "session_id": two.stem, "source": "startup",
                                  "cwd": str(project), "transcript_path": str(two)}, spawn=False)
    res = import_transcripts(store, [Transcript(p, "claude-code", p.stem) for p in (one, two)], progress=False)
    assert [r["status"] for r in res.rows] == ["imported", "skipped-hooked"]
    imported = res.rows[0]["notes"]
    assert imported >= 1
    # session one is resumed in Claude Code and ends: its transcript grew by one answer
    _write_jsonl(one, _claude_entries([{"type": "assistant", "uuid": "a9", "message": {
        "content": [{"type": "text", "text": LATER}]}}]))
    base = {"session_id": one.stem, "cwd": str(project), "transcript_path": str(one)}
    run_hook(store_path, payload={**base, "hook_event_name": "SessionStart", "source": "resume"}, spawn=False)
    run_hook(store_path, payload={**base, "hook_event_name": "SessionEnd", "reason": "exit"}, harvest_notes=True,
             spawn=False)
    hooked = [n.content for n in store.sessions.notes(one.stem)]
    assert hooked == [LATER]  # only the new entry; the imported ones are not harvested again
    store.close()
