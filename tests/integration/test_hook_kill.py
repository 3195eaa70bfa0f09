"""A session-end hook killed before its harvest finished (issue 29, item 1).

Claude Code gives SessionEnd hooks about 1.5 s and kills them after; PreCompact hooks are killed at
their timeout too. Killed anywhere, the harvest a hook started is made later, exactly once: by the
worker the hook started before harvesting (it waits for the hook to exit), by the worker the next
SessionStart starts, by ``consolidate run``, or by ``import-transcripts`` (which no longer calls such
a session "already consolidated by the hooks").

Real parts: the hook commands ``consolidate install-hook claude-code --harvest`` wrote, run through a
shell with Claude Code's payloads on stdin, a Claude Code JSONL transcript (tests/support/transcripts.py)
ending with the reported prompt, the scripted judge; the kill is SIGKILL, either at a named point
(``CONSOLIDATE_CRASH_AT``: consolidate.core.faults) or delivered by this test to the hook's process group
at several offsets after it started (nothing is asserted about when the hook got where)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import transcripts
from consolidate import Store
from consolidate.pipeline.deferral import EXIT_PARTIAL
from consolidate.pipeline.harvest import harvest_transcript
from consolidate.store.sessions.tier import SessionTier
from consolidate.agents.transcripts import claude_slug
from test_hook_lifecycle import CONSOLE, SCRIPT, _env, fire, install, payload
from test_hook_mcp_flow import wait_done

pytestmark = pytest.mark.integration

PROMPT = "From now on, every migration needs a down script"
STATEMENT = "Every database migration ships with a down script that reverts it"
KEEP = {"verdict": "keep", "type": "constraint", "evidence": "user-stated", "confidence": "high", "reason": "scripted"}
SID = "5b2e7c10-kill"


def _transcript(path: Path, sid: str, cwd: str) -> Path:
    t = transcripts._T(sid, cwd)
    t.entries = transcripts.build(sid, cwd)
    t.n = len(t.entries)
    t.user(PROMPT)
    t.assistant(transcripts.text("Understood: each new file under db/migrations gets a matching down script,"
                                 " and CI runs the down step after the up step."))
    return transcripts.write(path, t.entries)


@pytest.fixture
def setup(tmp_path):
    project = tmp_path / "app"
    project.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({**SCRIPT, PROMPT: {**KEEP, "statement": STATEMENT}}))
    settings = install(project, "--store", ".memofs", "--embedding", "hash", "--judge", f"scripted:{script}",
                       "--harvest")
    transcript = _transcript(project / f"{SID}.jsonl", SID, str(project))
    expected = {n["key"] for n in harvest_transcript(str(transcript))}
    fire(settings, "SessionStart", payload("SessionStart", SID, project, transcript, source="startup"))
    return project, settings, transcript, expected


def _command(settings: dict, event: str) -> str:
    [group] = settings["hooks"][event]
    [hook] = group["hooks"]
    return hook["command"]


def _fire_killed_at(settings: dict, event: str, body: dict, point: str, cwd: Path) -> None:
    """Run the installed ``event`` hook with ``CONSOLIDATE_CRASH_AT=point``: it SIGKILLs itself there."""
    r = subprocess.run(_command(settings, event), shell=True, input=json.dumps(body), capture_output=True, text=True,
                       timeout=120, cwd=cwd, env=_env(CONSOLIDATE_CRASH_AT=point))
    assert r.returncode != 0, f"the hook never reached {point}: {r.stderr}"


def _fire_killed_after(settings: dict, event: str, body: dict, seconds: float, cwd: Path) -> None:
    """Run the installed ``event`` hook through a shell in its own process group and SIGKILL the
    group ``seconds`` after it started (Claude Code killing a hook past its time budget)."""
    proc = subprocess.Popen(_command(settings, event), shell=True, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=cwd, env=_env(), start_new_session=True)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(body).encode())
    proc.stdin.close()
    time.sleep(seconds)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it had finished
    proc.wait(60)


def _check_once(project: Path, expected: set[str], *, sid: str = SID) -> dict:
    """The session is consolidated with every harvested entry exactly once, and the reported
    preference is one active memory; returns its session-end row."""
    store = project / ".memofs"
    rows = wait_done(store, [sid])
    row = rows[sid]
    assert row is not None and row["status"] in ("done", "partial"), (store / "logs" / "worker.log").read_text()
    tier = SessionTier(store / "sessions.sqlite3")
    keys = {k for (k,) in tier.db.execute("SELECT entry_key FROM harvested WHERE base_session_id=?", (sid,))}
    pending = tier.db.execute("SELECT COUNT(*) FROM harvest_pending").fetchone()[0]
    tier.close()
    assert keys == expected and pending == 0
    assert row["result"]["notes"] == len(expected), row  # one run took every harvested note, once
    s = Store(store, embedding="hash")
    docs = [r["document"] for r in s.longterm().with_status("active")]
    s.close()
    assert docs.count(STATEMENT) == 1, docs
    return row


def _worker_gone(store: Path) -> str:
    """``harvest:commit`` once the session end is claimed by a process that no longer runs."""
    tier = SessionTier(store / "sessions.sqlite3")
    row = tier.db.execute("SELECT status, claimed_by FROM session_ends WHERE session_id=?", (SID,)).fetchone()
    tier.close()
    if row and row[0] == "running" and row[1]:
        try:
            os.kill(row[1], 0)
        except ProcessLookupError:
            return "harvest:commit"
    return ""


def _log(project: Path) -> str:
    return (project / ".memofs" / "logs" / "hook.log").read_text()


def test_the_reported_case_killed_after_queueing_the_end_is_harvested_by_the_next_session_start(setup):
    """Killed after the end was queued and before anything else (no worker started): the next
    SessionStart starts a worker, which makes the harvest; the line says so."""
    project, settings, transcript, expected = setup
    _fire_killed_at(settings, "SessionEnd", payload("SessionEnd", SID, project, transcript, reason="prompt_input_exit"),
                    "hook:end:queued", project)
    tier = SessionTier(project / ".memofs" / "sessions.sqlite3")
    assert tier.session_end(SID)["status"] == "queued" and tier.count(SID) == 0  # nothing harvested yet
    tier.close()
    status = subprocess.run([str(CONSOLE), "status", "--store", ".memofs"], cwd=project, capture_output=True,
                            text=True, env=_env(), timeout=120)
    assert f"harvests not finished: 1 sessions ({SID}): their hook was stopped" in status.stdout, status.stdout
    out = fire(settings, "SessionStart", payload("SessionStart", "next-1", project, source="startup"))
    assert "this is session next-1" in out
    _check_once(project, expected)
    status = subprocess.run([str(CONSOLE), "status", "--store", ".memofs"], cwd=project, capture_output=True,
                            text=True, env=_env(), timeout=120)
    assert status.returncode == 0 and "harvests not finished" not in status.stdout
    log = _log(project)
    assert f"sessionstart session=next-1: the harvest of {SID} did not finish (its hook was stopped); a worker makes it" \
        in log
    assert f"sessionend session={SID}: its hook's harvest did not finish" in log
    assert f"made by the worker: {len(expected)} notes harvested" in log


@pytest.mark.parametrize("point", ["harvest:commit", "hook:end:harvested"])
def test_killed_during_or_after_the_harvest_commit(setup, point):
    """Killed with the harvest written but not committed, or just after its commit. The worker the
    hook started inherits the armed point, so at ``harvest:commit`` it is killed at the same place
    too (a worker killed while it makes the harvest): the next SessionStart starts a worker that
    makes it, whole. After the commit nothing is made twice."""
    project, settings, transcript, expected = setup
    _fire_killed_at(settings, "SessionEnd", payload("SessionEnd", SID, project, transcript, reason="other"), point,
                    project)
    if point == "harvest:commit":  # the hook's worker dies at the same point: wait until it is gone
        store = project / ".memofs"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "harvest:commit" not in _worker_gone(store):
            time.sleep(0.2)
    fire(settings, "SessionStart", payload("SessionStart", "next-1", project, source="startup"))
    _check_once(project, expected)
    made_later = f"sessionend session={SID}: its hook's harvest did not finish" in _log(project)
    assert made_later == (point == "harvest:commit")


def _filler(sid: str, n: int) -> list[dict]:
    """``n`` transcript entries the harvest takes nothing from (tool calls and their output)."""
    out = []
    for i in range(n // 2):
        call = {"type": "tool_use", "id": f"toolu_f{i}", "name": "Read", "input": {"file_path": f"src/m{i}.py"}}
        out.append({"type": "assistant", "uuid": f"{sid}-fa{i}", "sessionId": sid,
                    "message": {"role": "assistant", "content": [call]}})
        out.append({"type": "user", "uuid": f"{sid}-fu{i}", "sessionId": sid,
                    "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                                             "content": "x = 1"}]}})
    return out


def test_killed_precompact_is_harvested_at_the_end_as_the_transcript_was(setup):
    """PreCompact killed before its harvest: the part about to be compacted is harvested by the
    worker at the session's end, read as the transcript was when PreCompact fired, though the
    session went on past the SessionEnd harvest's bound (400 entries) after it; each entry once."""
    project, settings, transcript, _expected = setup
    entries = [json.loads(line) for line in transcript.read_text().splitlines()]
    before, after = transcripts.split_at_compaction(entries)
    transcripts.write(transcript, before[:-1])  # PreCompact fires before the boundary is written
    compacted = harvest_transcript(str(transcript), since_compaction=True, max_entries=2000)
    _fire_killed_at(settings, "PreCompact", payload("PreCompact", SID, project, transcript, trigger="auto"),
                    "hook:precompact:recorded", project)
    transcripts.write(transcript, before + _filler(SID, 420) + after)  # compacted, went on, ended
    fire(settings, "SessionEnd", payload("SessionEnd", SID, project, transcript, reason="prompt_input_exit"))
    at_end = harvest_transcript(str(transcript))
    assert not {n["key"] for n in compacted} & {n["key"] for n in at_end}  # beyond the end's bound
    _check_once(project, {n["key"] for n in compacted + at_end})
    log = _log(project)
    assert f"precompact session={SID}: its hook's harvest did not finish" in log
    assert f"made by the worker: {len(compacted)} notes harvested" in log and len(compacted) == 12


@pytest.mark.parametrize("seconds", [0.05, 0.3, 0.6, 1.0, 1.5])
def test_sigkill_at_several_offsets_loses_nothing_and_takes_nothing_twice(setup, seconds):
    """SIGKILL to the SessionEnd hook's process group at several offsets: before it queued anything
    (the next SessionStart recovers the session and harvests it), after it queued the end (the
    worker makes the harvest), after it finished (nothing to do). In every case the session is
    consolidated once with every entry once."""
    project, settings, transcript, expected = setup
    _fire_killed_after(settings, "SessionEnd", payload("SessionEnd", SID, project, transcript, reason="other"),
                       seconds, project)
    fire(settings, "SessionStart", payload("SessionStart", "next-2", project, source="startup"))
    row = _check_once(project, expected)
    log = _log(project)
    # killed before the end was queued: recovered at the next SessionStart; killed after (the end row can
    # be committed before its log line is written, so the log alone cannot tell): the end's own reason
    assert row["reason"] in ("other", "end missed: recovered at the SessionStart of next-2")
    if f"sessionend session={SID} queued" in log or "its hook's harvest did not finish" in log:
        assert row["reason"] == "other"
    print(f"killed at {seconds} s:", "recovered" if row["reason"].startswith("end missed") else
          "harvest made later" if "its hook's harvest did not finish" in log else "hook finished")
    # a later SessionStart and the late end of a resumed agent change nothing
    fire(settings, "SessionStart", payload("SessionStart", "next-3", project, source="startup"))
    assert wait_done(project / ".memofs", [SID])[SID] == row


def test_import_transcripts_makes_a_harvest_the_hooks_did_not_finish(setup, tmp_path):
    """``import-transcripts --claude-code`` after a killed SessionEnd hook whose worker never ran:
    the hooks' harvest is made into their session and consolidated (the reported case said
    "already consolidated by the hooks" and the user's rule was lost); a second import changes
    nothing."""
    project, settings, transcript, expected = setup
    _fire_killed_at(settings, "SessionEnd", payload("SessionEnd", SID, project, transcript, reason="other"),
                    "hook:end:queued", project)
    home = tmp_path / "home"
    folder = home / ".claude" / "projects" / claude_slug(project)
    folder.mkdir(parents=True)
    (folder / f"{SID}.jsonl").write_bytes(transcript.read_bytes())
    env = _env(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"))

    def run():
        return subprocess.run([str(CONSOLE), "import-transcripts", "--claude-code", "--store", ".memofs",
                               "--embedding", "hash", "--judge", f"scripted:{tmp_path / 'script.json'}"],
                              cwd=project, capture_output=True, text=True, env=env, timeout=300)

    first = run()
    assert first.returncode in (0, EXIT_PARTIAL), first.stderr  # notes the script does not answer wait
    assert (f"0 already consolidated by the hooks, 1 whose harvest by the hooks had not finished (made now:"
            f" {len(expected)} notes)") in first.stdout, first.stdout
    assert "consolidated 1 sessions" in first.stdout
    _check_once(project, expected)
    second = run()
    assert second.returncode in (0, EXIT_PARTIAL), second.stderr
    assert "1 already consolidated by the hooks" in second.stdout and "whose harvest" not in second.stdout
    _check_once(project, expected)


def test_consolidate_run_makes_the_pending_harvest_first(setup):
    """``consolidate run`` (no worker) takes a session end whose harvest did not finish: the harvest
    is made before its notes are counted; the idle fast path does not finish it with 0 notes."""
    project, settings, transcript, expected = setup
    _fire_killed_at(settings, "SessionEnd", payload("SessionEnd", SID, project, transcript, reason="other"),
                    "hook:end:queued", project)
    from consolidate.store.sessions.tables import connect, finish_idle_end

    db = connect(str(project / ".memofs" / "sessions.sqlite3"))
    assert finish_idle_end(db, SID, time.time(), "run-x") is False  # the idle run's own check: not an empty session
    db.close()
    r = subprocess.run([str(CONSOLE), "run", "--store", ".memofs", "--session", SID, "--embedding", "hash",
                        "--judge", f"scripted:{project.parent / 'script.json'}"], cwd=project,
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode in (0, EXIT_PARTIAL), r.stderr
    assert f"· {len(expected)} notes" in r.stdout, r.stdout
    _check_once(project, expected)
