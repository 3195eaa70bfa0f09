"""The agent session's whole lifecycle through the INSTALLED hook commands (issue 21).

``consolidate install-hook claude-code --harvest`` (the venv's console script, as a user runs it)
writes the hook commands into ``.claude/settings.json``; each test pipes the payloads Claude Code
documents (SessionStart with source startup/resume/compact, PreCompact, PreToolUse, SessionEnd) into
those commands through a shell, and checks the store and what the hooks print. The transcript is a
realistic one in Claude Code's JSONL shape (tests/support/transcripts.py)."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import time
import sys
from pathlib import Path

import pytest

import transcripts
from consolidate import Store
from test_hook_mcp_flow import wait_done
from consolidate.pipeline.harvest import harvest_transcript
from consolidate.store.sessions.tier import SessionTier

pytestmark = pytest.mark.integration

CONSOLE = Path(sys.executable).parent / "consolidate"

KEEP = {"verdict": "keep", "type": "fact", "evidence": "observed-success", "confidence": "high", "reason": "scripted"}
SCRIPT = {
    "We use pnpm in this repo": {**KEEP, "statement": "The repo uses pnpm, never npm; CI installs with pnpm install --frozen-lockfile",
             "type": "constraint", "evidence": "user-stated"},
    "Per the Next.js docs": {**KEEP, "statement": "Next.js 15 fetch requests are not cached by default; opt in with force-cache"},
    "Issue 142 decided": {**KEEP, "statement": "HTTP retries use exponential backoff capped at 30 s, at most five attempts"},
}


def _env(**extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update(extra)
    return env


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "app"
    root.mkdir()
    return root


def install(project: Path, *args: str, agent: str = "claude-code") -> dict:
    """``consolidate install-hook`` by the venv's console script; the settings it wrote."""
    if not CONSOLE.exists():
        pytest.fail(f"no console script at {CONSOLE}: install the package (pip install -e .)")
    out = subprocess.run([str(CONSOLE), "install-hook", agent, *args], cwd=project, capture_output=True, text=True,
                         env=_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    folder = ".claude" if agent == "claude-code" else ".gemini"
    settings = json.loads((project / folder / "settings.json").read_text())
    for groups in settings["hooks"].values():
        for g in groups:
            for h in g["hooks"]:
                first = h["command"].split()[0]
                # the installed console script; the file recall's light entry by the venv's python beside it
                assert first == str(CONSOLE) or (Path(first).parent == CONSOLE.parent
                                                  and " -m consolidate.agents.hooks.file_hook" in h["command"])
    return settings


def fire(settings: dict, event: str, payload: dict, *, tool: str | None = None, cwd: Path | None = None) -> str:
    """Run the hook commands installed for ``event`` (those whose matcher matches ``tool``) through a
    shell with ``payload`` on stdin, as the agent CLI does; their stdout, joined."""
    import re

    out = []
    for group in settings["hooks"].get(event, []):
        if tool is not None and group.get("matcher") and not re.fullmatch(group["matcher"], tool):
            continue
        for hook in group["hooks"]:
            r = subprocess.run(hook["command"], shell=True, input=json.dumps(payload), capture_output=True, text=True,
                               timeout=120, cwd=cwd, env=_env())
            assert r.returncode == 0 and r.stderr == "", r.stderr
            out.append(r.stdout)
    return "".join(out)


def payload(event: str, sid: str, project: Path, transcript: Path | None = None, **extra) -> dict:
    return {"session_id": sid, "transcript_path": str(transcript or project / f"{sid}.jsonl"), "cwd": str(project),
            "hook_event_name": event, **extra}


def by_type(notes) -> dict[str, int]:
    return dict(collections.Counter(n.metadata.get("entry_type") for n in notes))


# -- item 0: harvest what the user said ------------------------------------------------------------

def test_harvest_of_a_realistic_transcript_by_entry_type(tmp_path):
    entries = transcripts.build()
    path = transcripts.write(tmp_path / "t.jsonl", entries)
    notes = harvest_transcript(str(path))
    counts = collections.Counter(n["metadata"]["entry_type"] for n in notes)
    before, after = transcripts.EXPECTED["before_compaction"], transcripts.EXPECTED["after_compaction"]
    assert dict(counts) == {k: before[k] + after[k] for k in before}
    text = "\n".join(n["content"] for n in notes)
    for never in transcripts.EXPECTED["never"]:
        assert never not in text, never
    # each note names its transcript entry: uuid, line (the whole file was read) and byte offset
    lines = path.read_text().splitlines()
    for n in notes:
        m = n["metadata"]
        assert json.loads(lines[m["line"] - 1])["uuid"] == m["uuid"]
        with open(path, "rb") as f:
            f.seek(m["offset"])
            assert json.loads(f.readline())["uuid"] == m["uuid"]
    prompts = [n for n in notes if n["metadata"]["entry_type"] == "user_prompt"]
    assert all(n["metadata"]["source"] == "transcript:user" for n in prompts)  # credited user-stated
    assert prompts[0]["content"].startswith("We use pnpm in this repo, never npm")
    assert prompts[1]["content"] == ("Deploys target Postgres 16; we chose it over MySQL for the JSONB indexes on"
                                     " the events table.")  # the system reminder is not the user's
    # a tool error carries the call that failed and the fix that followed
    errors = [n["content"] for n in notes if n["metadata"]["entry_type"] == "tool_error"]
    assert errors[0].startswith("Tool error (Bash: pnpm test): Error: Cannot find module 'vitest/config'")
    assert "What followed: vitest is missing from the web package's devDependencies" in errors[0]
    assert "What followed: then Bash: docker compose up -d db" in errors[1]
    # a turn holding a secret is kept, the secret replaced
    secret_turn = next(n for n in notes if "blue-green" in n["content"])
    assert "[secret removed: aws-access-key]" in secret_turn["content"]
    assert secret_turn["metadata"]["secret_removed"] == ["aws-access-key"]
    # narration before a tool call is chatter; the conclusion after the tool results is kept
    assert not any(n["content"] == "Checking the docs." for n in notes)


def test_harvest_since_compaction_takes_only_the_part_about_to_be_compacted(tmp_path):
    before, after = transcripts.split_at_compaction(transcripts.build())
    path = transcripts.write(tmp_path / "t.jsonl", before[:-1])  # PreCompact fires before the boundary
    counts = collections.Counter(n["metadata"]["entry_type"] for n in harvest_transcript(str(path), since_compaction=True))
    assert dict(counts) == transcripts.EXPECTED["before_compaction"]
    transcripts.write(path, before + after)  # later: only what came after the boundary
    counts = collections.Counter(n["metadata"]["entry_type"] for n in harvest_transcript(str(path), since_compaction=True))
    assert {k: v for k, v in counts.items() if v} == {k: v for k, v in transcripts.EXPECTED["after_compaction"].items() if v}


@pytest.mark.parametrize("line", [
    {"type": "user", "uuid": "x", "message": {"content": "<local-command-stdout>Set model to opus</local-command-stdout>"}},
    {"type": "user", "uuid": "x", "isMeta": True, "message": {"content": "Caveat: The messages below were generated"}},
    {"type": "user", "uuid": "x", "isCompactSummary": True, "message": {"content": "This session is being continued"}},
    {"type": "user", "uuid": "x", "isSidechain": True, "message": {"content": "Find every caller of check_token"}},
    {"type": "user", "uuid": "x", "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}},
    {"type": "user", "uuid": "x", "message": {"content": "<system-reminder>Todo list changed</system-reminder>"}},
    {"type": "summary", "summary": "Refactor", "leafUuid": "x"},
    {"type": "system", "subtype": "compact_boundary", "uuid": "x"},
])
def test_injected_context_and_tool_output_are_not_harvested(tmp_path, line):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(line) + "\n")
    assert harvest_transcript(str(path)) == []


def test_installed_hooks_harvest_compaction_and_end_nothing_twice(project, tmp_path):
    """Item 0 and 3 through the installed hooks: PreCompact harvests the part about to be compacted;
    SessionStart with source compact prints the memory context again; SessionEnd harvests the rest;
    no transcript entry is taken twice; the worker consolidates the user's preference as
    user-stated; no private span and no secret reaches the long-term store or a log."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    settings = install(project, "--store", ".memofs", "--embedding", "hash", "--judge", f"scripted:{script}", "--harvest")
    assert set(settings["hooks"]) == {"SessionStart", "SessionEnd", "PreCompact", "PreToolUse"}
    store = project / ".memofs"
    (store / "memory").mkdir(parents=True)
    (store / "memory" / "core.md").write_text("- Never push to main directly\n")
    sid = "3f1c9a2e-demo"
    before, after = transcripts.split_at_compaction(transcripts.build(sid, str(project)))
    transcript = transcripts.write(project / f"{sid}.jsonl", before[:-1])

    out = fire(settings, "SessionStart", payload("SessionStart", sid, project, source="startup"))
    assert f"this is session {sid}" in out and "Never push to main directly" in out
    fire(settings, "PreCompact", payload("PreCompact", sid, project, trigger="auto", custom_instructions=""))
    tier = SessionTier(store / "sessions.sqlite3")
    assert by_type(tier.notes(sid)) == transcripts.EXPECTED["before_compaction"]
    transcripts.write(transcript, before + after)  # Claude Code compacted
    out = fire(settings, "SessionStart", payload("SessionStart", sid, project, source="compact"))
    assert f"this is session {sid}" in out and "Never push to main directly" in out  # context injected again
    fire(settings, "SessionEnd", payload("SessionEnd", sid, project, reason="prompt_input_exit"))
    expected = {k: v + transcripts.EXPECTED["after_compaction"][k]
                for k, v in transcripts.EXPECTED["before_compaction"].items()}
    rows = wait_done(store, [sid])
    assert rows[sid]["status"] in ("done", "partial"), (store / "logs" / "worker.log").read_text()
    log = (store / "logs" / "hook.log").read_text()
    assert f"precompact session={sid}: 12 notes harvested (assistant 5, tool_error 2, user_prompt 5)" in log
    assert f"sessionend session={sid} queued (success), 2 notes harvested (assistant 1, user_prompt 1)" in log
    assert sum(expected.values()) == 14
    s = Store(store, embedding="hash")
    active = {r["document"]: r["metadata"] for r in s.longterm().with_status("active")}
    pnpm = active["The repo uses pnpm, never npm; CI installs with pnpm install --frozen-lockfile"]
    assert pnpm["evidence"] == "user-stated"
    # external content: the web page and the other MCP server's answer wait in quarantine
    quarantined = {r["document"] for r in s.longterm().with_status("quarantined")}
    assert "Next.js 15 fetch requests are not cached by default; opt in with force-cache" in quarantined
    assert "HTTP retries use exponential backoff capped at 30 s, at most five attempts" in quarantined
    s.close()
    # nothing private or secret outside the session tier
    for path in store.rglob("*"):
        if path.is_file() and not path.name.startswith("sessions.sqlite3"):
            data = path.read_bytes()
            for needle in (b"Acme", transcripts.GITHUB_TOKEN.encode(), transcripts.AWS_KEY.encode()):
                assert needle not in data, (path, needle)


# -- item 1: sessions whose end never fired -------------------------------------------------------

AGENT = """
import json, subprocess, sys, time
settings, event_payload = json.loads(sys.argv[1]), sys.argv[2]
for g in settings["hooks"]["SessionStart"]:
    for h in g["hooks"]:
        r = subprocess.run(h["command"], shell=True, input=event_payload, capture_output=True, text=True)
print("started", flush=True)
time.sleep(600)
"""


def _agent(settings: dict, start_payload: dict, cwd: Path) -> subprocess.Popen:
    """A stand-in agent CLI process that runs the SessionStart hooks, then lives until killed."""
    proc = subprocess.Popen([sys.executable, "-c", AGENT, json.dumps(settings), json.dumps(start_payload)],
                            stdout=subprocess.PIPE, text=True, cwd=cwd, env=_env())
    assert proc.stdout.readline().strip() == "started"
    return proc


def test_killed_session_is_recovered_at_the_next_session_start(project, tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    settings = install(project, "--store", ".memofs", "--embedding", "hash", "--judge", f"scripted:{script}", "--harvest")
    store = project / ".memofs"
    transcripts.write(project / "killed.jsonl", transcripts.build("killed", str(project)))
    killed = _agent(settings, payload("SessionStart", "killed", project, source="startup"), project)
    alive = _agent(settings, payload("SessionStart", "alive", project, source="startup"), project)
    try:
        # notes written during the killed session (MCP note, here through the CLI)
        subprocess.run([str(CONSOLE), "note", "--store", str(store), "--session", "killed", "--flag", "--kind", "constraint",
                        "Release builds are signed in CI only, never on a laptop"], check=True, env=_env(), timeout=60)
        killed.send_signal(signal.SIGKILL)  # the terminal is closed: no SessionEnd ever fires
        killed.wait(10)
        out = fire(settings, "SessionStart", payload("SessionStart", "next", project, source="startup"))
        assert "this is session next" in out
        rows = wait_done(store, ["killed"])
        assert rows["killed"]["outcome"] == "success" and rows["killed"]["status"] in ("done", "partial")
        assert rows["killed"]["reason"] == "end missed: recovered at the SessionStart of next"
        tier = SessionTier(store / "sessions.sqlite3")
        assert tier.session_end("alive") is None  # its agent still runs: not recovered
        log = (store / "logs" / "hook.log").read_text()
        assert "recovered session killed whose end never fired (15 notes, 14 harvested)" in log
        s = Store(store, embedding="hash")
        active = {r["document"] for r in s.longterm().with_status("active")}
        assert "Release builds are signed in CI only, never on a laptop" in active
        assert "The repo uses pnpm, never npm; CI installs with pnpm install --frozen-lockfile" in active
        s.close()
        # the next SessionStart recovers nothing again; the late SessionEnd of the killed session
        # (it was not dead after all) harvests nothing twice
        fire(settings, "SessionStart", payload("SessionStart", "later", project, source="startup"))
        fire(settings, "SessionEnd", payload("SessionEnd", "killed", project, reason="other"))
        assert log.count("recovered session killed") == (store / "logs" / "hook.log").read_text().count(
            "recovered session killed") == 1
        assert "sessionend session=killed queued (success), 0 notes harvested" in (store / "logs" / "hook.log").read_text()
    finally:
        for p in (killed, alive):
            if p.poll() is None:
                p.kill()


# -- item 2: resumed sessions ---------------------------------------------------------------------

def test_resumed_session_notes_are_consolidated_at_its_next_end_nothing_twice(project, tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    settings = install(project, "--store", ".memofs", "--embedding", "hash", "--judge", f"scripted:{script}", "--harvest")
    store = project / ".memofs"
    entries = transcripts.build("res", str(project))
    first, rest = transcripts.split_at_compaction(entries)
    transcript = transcripts.write(project / "res.jsonl", first)
    fire(settings, "SessionStart", payload("SessionStart", "res", project, source="startup"))
    fire(settings, "SessionEnd", payload("SessionEnd", "res", project, reason="prompt_input_exit"))
    rows = wait_done(store, ["res"])
    assert rows["res"]["status"] in ("done", "partial")

    def memories():
        s = Store(store, embedding="hash")
        out = sorted((r["document"], json.loads(r["metadata"]["provenance"])["session_id"], r["metadata"]["status"])
                     for r in s.longterm().all())
        s.close()
        return out

    first = memories()
    assert first

    # claude --resume res: the same id, the same transcript, continued
    out = fire(settings, "SessionStart", payload("SessionStart", "res", project, source="resume"))
    assert "this is session res+r1" in out
    transcripts.write(transcript, first + rest)
    subprocess.run([str(CONSOLE), "note", "--store", str(store), "--session", "res+r1", "--flag", "--kind", "decision",
                    "Feature flags are read once at startup, never per request"], check=True, env=_env(), timeout=60)
    fire(settings, "SessionEnd", payload("SessionEnd", "res", project, reason="prompt_input_exit"))
    rows = wait_done(store, ["res", "res+r1"])
    assert rows["res+r1"]["status"] in ("done", "partial")
    after = memories()
    assert [m for m in after if m[1] == "res"] == first  # the first part is not consolidated again
    assert [m[0] for m in after if m[1] == "res+r1"] == ["Feature flags are read once at startup, never per request"]
    log = (store / "logs" / "hook.log").read_text()
    assert "sessionend session=res+r1 queued (success), 2 notes harvested (assistant 1, user_prompt 1)" in log
    s = Store(store, embedding="hash")
    active = {r["document"]: json.loads(r["metadata"]["provenance"])["session_id"] for r in s.longterm().with_status("active")}
    assert active["Feature flags are read once at startup, never per request"] == "res+r1"
    assert active["The repo uses pnpm, never npm; CI installs with pnpm install --frozen-lockfile"] == "res"
    s.close()
    # a second resume opens a second part
    out = fire(settings, "SessionStart", payload("SessionStart", "res", project, source="resume"))
    assert "this is session res+r2" in out


# -- item 4: recall where the agent is editing ----------------------------------------------------

def _memories(store: Path) -> None:
    """Three active memories (two about src/auth.py, one about package.json) and a quarantined one."""
    from consolidate.pipeline.run import run_queue

    s = Store(store, embedding="hash")
    s.sessions.add_note("m1", "src/auth.py: check_token() must run before refresh_session(), or expired tokens pass",
                        flag=True, kind="constraint")
    s.sessions.add_note("m1", "auth.py reads the signing key from AUTH_KEY_FILE, never from the repository",
                        flag=True, kind="fact")
    s.sessions.add_note("m1", "package.json pins vitest 2.1; 3.x breaks the workspace config", flag=True, kind="fact")
    s.sessions.end("m1", "success")
    run_queue(s, judges=["noop"])
    assert len(s.longterm().with_status("active")) == 3
    s.close()


def test_pretooluse_prints_the_memories_about_the_file_once_per_session(project):
    settings = install(project, "--store", ".memofs", "--embedding", "hash", "--judge", "noop")
    [group] = settings["hooks"]["PreToolUse"]
    assert group["matcher"] == "Read|Edit|MultiEdit|Write|NotebookEdit"
    store = project / ".memofs"
    _memories(store)
    (project / "src").mkdir()
    (project / "src" / "auth.py").write_text("def check_token():\n    pass\n")
    fire(settings, "SessionStart", payload("SessionStart", "edit", project, source="startup"))

    def tool_use(name, **data):
        p = payload("PreToolUse", "edit", project, tool_name=name, tool_input=data, tool_use_id="toolu_1")
        return fire(settings, "PreToolUse", p, tool=name)

    out = tool_use("Edit", file_path=str(project / "src" / "auth.py"), old_string="pass", new_string="return True")
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "PreToolUse"
    lines = context["additionalContext"].splitlines()
    assert lines[0].startswith("consolidate: remembered about src/auth.py")
    assert sorted(lines[1:]) == sorted([
        "- src/auth.py: check_token() must run before refresh_session(), or expired tokens pass",
        "- auth.py reads the signing key from AUTH_KEY_FILE, never from the repository"])
    assert tool_use("Read", file_path=str(project / "src" / "auth.py")) == ""  # each memory once per session
    assert tool_use("Read", file_path=str(project / "README.md")) == ""  # nothing about that file
    out = tool_use("Write", file_path=str(project / "package.json"), content="{}")
    assert "package.json pins vitest 2.1" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert tool_use("Bash", command="cat src/auth.py") == ""  # not a file tool: the matcher skips it
    # another session sees them again
    fire(settings, "SessionStart", payload("SessionStart", "other", project, source="startup"))
    p = payload("PreToolUse", "other", project, tool_name="Read", tool_input={"file_path": "src/auth.py"})
    assert "check_token()" in fire(settings, "PreToolUse", p, tool="Read")


def test_gemini_beforetool_prints_the_memories_about_the_file(project):
    settings = install(project, "--store", ".memofs", "--embedding", "hash", "--judge", "noop", agent="gemini-cli")
    [group] = settings["hooks"]["BeforeTool"]
    assert group["matcher"] == "read_file|write_file|replace|read_many_files"
    _memories(project / ".memofs")
    p = payload("BeforeTool", "gem", project, tool_name="read_file", tool_input={"file_path": str(project / "package.json")})
    out = json.loads(fire(settings, "BeforeTool", p, tool="read_file"))
    assert out["hookSpecificOutput"]["hookEventName"] == "BeforeTool"
    assert "package.json pins vitest 2.1" in out["hookSpecificOutput"]["additionalContext"]


def test_two_session_starts_at_once_recover_a_killed_session_once(project, tmp_path):
    """Two agents start at the same moment in the project where a session was killed: its end is
    queued once and its transcript harvested once."""
    from concurrent.futures import ThreadPoolExecutor

    settings = install(project, "--store", ".memofs", "--embedding", "hash", "--judge", "noop", "--harvest")
    store = project / ".memofs"
    transcripts.write(project / "killed.jsonl", transcripts.build("killed", str(project)))
    killed = _agent(settings, payload("SessionStart", "killed", project, source="startup"), project)
    killed.kill()
    killed.wait(10)
    # the starts run without a worker, so the harvested notes stay countable
    no_worker = json.loads(json.dumps(settings).replace(" hook ", " hook --no-worker "))
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda sid: fire(no_worker, "SessionStart", payload("SessionStart", sid, project, source="startup")),
                      ["one", "two"]))
    tier = SessionTier(store / "sessions.sqlite3")
    assert tier.session_end("killed")["status"] == "queued"
    assert len(tier.notes("killed")) == 14  # every entry once, whichever start harvested it
    assert (store / "logs" / "hook.log").read_text().count("recovered session killed") == 1


def test_precompact_reads_past_the_sessionend_bound(project):
    """A long stretch before compaction (600 entries): PreCompact harvests all of it."""
    from consolidate.agents.hooks.full import run_hook

    store = project / ".memofs"
    path = project / "long.jsonl"
    path.write_text("".join(json.dumps({"type": "user", "uuid": f"u{i}", "message": {
        "content": f"Rule {i}: the handler h{i} validates its payload before writing"}}) + "\n" for i in range(600)))
    p = payload("PreCompact", "long", project, path, trigger="auto")
    run_hook(store, payload=p, harvest_notes=True, spawn=False)
    assert SessionTier(store / "sessions.sqlite3").count("long") == 600


def test_resumed_failed_session_gets_a_part_of_its_own(project):
    """A session consolidated as a failure is never ended again; resumed, its new part is a session
    of its own, consolidated at its end; the failed part's notes are still never promoted."""
    from consolidate.agents.hooks.full import run_hook
    from consolidate.pipeline.run import run_queue

    store = project / ".memofs"
    s = Store(store, embedding="hash")
    run_hook(store, payload=payload("SessionStart", "f", project, source="startup"), spawn=False)
    s.sessions.add_note("f", "The nightly export job writes to the wrong bucket", flag=True, kind="fact")
    run_hook(store, payload=payload("SessionEnd", "f", project), outcome="failure", spawn=False)
    run_queue(s, judges=["noop"])
    assert s.sessions.session_end("f")["status"] == "failure"
    _, out = run_hook(store, payload=payload("SessionStart", "f", project, source="resume"), spawn=False)
    assert "this is session f+r1" in out
    s.sessions.add_note("f+r1", "Exports go to the bucket named in EXPORT_BUCKET, never a hard-coded one",
                        flag=True, kind="constraint")
    run_hook(store, payload=payload("SessionEnd", "f", project), spawn=False)
    run_queue(s, judges=["noop"])
    active = {r["document"] for r in s.longterm().with_status("active")}
    assert active == {"Exports go to the bucket named in EXPORT_BUCKET, never a hard-coded one"}
    s.close()


def test_recovery_without_a_process_tree_waits_for_age(tmp_path):
    """Where /proc cannot be read, an open session is recovered only when it started long ago."""
    from consolidate.store.sessions.agents import record_start
    from consolidate.agents.hooks.lifecycle import BLIND_AGE, missed_sessions

    tier = SessionTier(tmp_path / "sessions.sqlite3")
    now = time.time()
    record_start(tier, "recent", cwd="/p", pids=[1234], now=now - 3600)
    record_start(tier, "old", cwd="/p", pids=[1234], now=now - BLIND_AGE - 60)
    record_start(tier, "elsewhere", cwd="/q", pids=[1234], now=now - BLIND_AGE - 60)
    assert missed_sessions(tier, "new", cwd="/p", now=now, blind=True) == ["old"]


def test_mcp_servers_own_session_is_recovered_when_its_process_is_gone(tmp_path):
    from consolidate.agents.hooks.lifecycle import missed_sessions, recover_missed

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    tier = SessionTier(tmp_path / "sessions.sqlite3")
    gone, alive = f"mcp-20261130T101500Z-{dead.pid}", f"mcp-20261130T101500Z-{os.getpid()}"
    tier.add_note(gone, "The CDN purge takes 10 minutes; do not re-run it")
    tier.add_note(alive, "A note of a server still running")
    assert missed_sessions(tier, "new", pids=[]) == [gone]
    [r] = recover_missed(tier, "new", pids=[])
    assert r == {"session_id": gone, "notes": 1, "harvested": 0}
    assert tier.session_end(gone)["reason"] == "end missed: recovered at the SessionStart of new"
    assert recover_missed(tier, "newer", pids=[]) == []  # never twice


def test_lifecycle_tables_are_pruned(tmp_path):
    from consolidate.agents.hooks.lifecycle import ensure, session_for_start
    from consolidate.pipeline.harvest import KEEP_SECONDS, add_harvest

    tier = SessionTier(tmp_path / "sessions.sqlite3")
    ensure(tier)
    old = time.time() - KEEP_SECONDS - 10
    tier.db.execute("INSERT INTO harvested VALUES ('gone', 'u1:0', ?)", (old,))
    session_for_start(tier, "gone", {"transcript_path": "/t.jsonl"}, now=old)
    t = tmp_path / "t.jsonl"
    t.write_text(json.dumps({"type": "user", "uuid": "n1", "message": {"content": "Use the staging VPN for the admin"
                                                                                   " panel"}}) + "\n")
    assert add_harvest(tier, "new", str(t)) == {"user_prompt": 1}
    assert tier.db.execute("SELECT base_session_id FROM harvested").fetchall() == [("new",)]
    assert tier.db.execute("SELECT COUNT(*) FROM hook_sessions").fetchone()[0] == 0


def test_mcp_note_with_the_id_from_before_the_resume_goes_to_the_resumed_part(project):
    from consolidate.agents.hooks.full import run_hook
    from consolidate.mcp.server import resolve_session

    store = project / ".memofs"
    run_hook(store, payload=payload("SessionStart", "m", project, source="startup"), spawn=False)
    run_hook(store, payload=payload("SessionEnd", "m", project), spawn=False)
    s = Store(store, embedding="hash")
    assert resolve_session(s, "m", "own") == "m"  # ended, not resumed: itself
    run_hook(store, payload=payload("SessionStart", "m", project, source="resume"), spawn=False)
    assert resolve_session(s, "m", "own") == "m+r1"
    assert resolve_session(s, None, "own") == "m+r1"  # the current session, with no id
    assert resolve_session(s, "other", "own") == "other"
    s.close()
