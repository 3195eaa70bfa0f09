"""What a run did is said where the user looks (issue 29, item 10), each by ``consolidate`` commands
in their own processes: judge answers for unknown note ids, a disputed memory, a crash replay and a
failed team push are said by ``run`` (and ``runs``, ``status``, ``batch``, the worker's log); an
embedding refused for its dimension names both; ``run --session`` of a session already consolidated
says so; ``end --outcome failure`` after a consolidated success refuses; runs of sessions without
notes are listed and can be undone; a read-only store gives one line at every hook event; a flagged
note longer than a memory's statement (10,000 characters) is refused by every writer.

The worker and the hook run as the installed ``consolidate`` command; the other commands in processes
forked preloaded (tests/support/preloaded.py: their start-up is not the subject), and the stores
most tests start from (session s1 queued; and consolidated) are built once per module and copied."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consolidate import Store
from consolidate.core.errors import BadInput, EmptyNote
from consolidate.core.textmeasure import MAX_STATEMENT_CHARS, statement_length
from consolidate.store.sessions.tier import check_content
from paths import REPO, SUPPORT
from preloaded import run as run_preloaded

FAKE = SUPPORT / "fake_cli"
#: the installed command (the venv's script), running this tree's code through PYTHONPATH
EXE = shutil.which("consolidate", path=str(Path(sys.executable).parent)) or shutil.which("consolidate")
UNKNOWN_JUDGE = f"cli:template:{shlex.quote(sys.executable)} {shlex.quote(str(FAKE / 'unknown.py'))}"
MODAL_JUDGE = f"cli:template:{shlex.quote(sys.executable)} {shlex.quote(str(FAKE / 'modal.py'))}"


def _env(**extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env["PYTHONPATH"] = str(REPO)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def cli(store: Path, *args: str, env: dict | None = None, stdin: str | None = None,
        prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    """One command on ``store`` in its own process: forked preloaded (tests/support/preloaded.py), or
    the installed command after ``prefix`` when one is given."""
    argv = [args[0], "--store", str(store), "--embedding", "hash", *args[1:]]
    if prefix is None:
        return run_preloaded(argv, env=_env(**(env or {})), input=stdin, timeout=300)
    assert EXE, "the consolidate command is not installed in this environment"
    return subprocess.run([*prefix, EXE, *argv], capture_output=True, text=True, env=_env(**(env or {})),
                          input=stdin, timeout=300)


def _session(store: Path, sid: str, *notes: str, flag: bool = True, kind: str = "fact") -> None:
    for text in notes:
        out = cli(store, "note", "--session", sid, *(["--flag", "--kind", kind] if flag else []), text)
        assert out.returncode == 0, out.stderr
    out = cli(store, "end", "--session", sid, "--outcome", "success")
    assert out.returncode == 0, out.stderr


S1 = "The staging db listens on port 5433"


@pytest.fixture(scope="module")
def _s1_built(tmp_path_factory) -> tuple[Path, Path]:
    """Two stores built once: session s1 (one flagged fact, S1) ended and queued; and the same run
    by the rules judge (consolidated)."""
    queued = tmp_path_factory.mktemp("s1-queued") / ".memofs"
    _session(queued, "s1", S1)
    done = tmp_path_factory.mktemp("s1-done") / ".memofs"
    shutil.copytree(queued, done)
    assert cli(done, "run", "--judge", "rules").returncode == 0
    return queued, done


@pytest.fixture
def s1_queued(_s1_built, tmp_path) -> Path:
    """``tmp_path / ".memofs"``: a store whose session s1 (S1, flagged) is ended and queued."""
    shutil.copytree(_s1_built[0], tmp_path / ".memofs")
    return tmp_path / ".memofs"


@pytest.fixture
def s1_done(_s1_built, tmp_path) -> Path:
    """``tmp_path / ".memofs"``: s1 consolidated by ``run --judge rules`` (one durable memory)."""
    shutil.copytree(_s1_built[1], tmp_path / ".memofs")
    return tmp_path / ".memofs"


# -- judge answers for unknown note ids ---------------------------------------------------------------------


@pytest.mark.spawns
def test_judge_answers_for_unknown_ids_are_said_by_run_runs_status_and_the_worker_log(tmp_path):
    st_ = tmp_path / ".memofs"
    _session(st_, "s1", "remember the staging db listens on port 5433", "looked at the logs", flag=False)
    run = cli(st_, "run", "--judge", UNKNOWN_JUDGE)
    assert run.returncode == 75, run.stderr
    line = "judge answers ignored (2): cli:template: verdict for unknown id 'n91' ignored;" \
           " cli:template: verdict for unknown id 'n92' ignored"
    assert f"  ! {line}" in run.stdout.splitlines(), run.stdout
    assert line in cli(st_, "runs").stdout
    assert line in cli(st_, "status").stdout
    as_json = cli(st_, "run", "--session", "s1", "--judge", UNKNOWN_JUDGE, "--json")
    assert json.loads(as_json.stdout.splitlines()[-1])["summary"]["judge_problems"][0].endswith(
        "verdict for unknown id 'n91' ignored")
    assert "s1: judge answers ignored (2)" in as_json.stderr
    # the worker's log says it too (the worker a hook starts)
    _session(st_, "s2", "remember the deploy runs from main", flag=False)
    log = tmp_path / "worker.log"
    with open(log, "w") as f:
        subprocess.run([EXE, "worker", "--store", str(st_), "--embedding", "hash", "--judge", UNKNOWN_JUDGE],
                       stdout=f, stderr=subprocess.STDOUT, env=_env(), timeout=300)
    assert "session s2: judge answers ignored (1): cli:template: verdict for unknown id 'n91' ignored" \
        in log.read_text()


@pytest.mark.spawns
def test_a_run_without_judge_problems_says_none(tmp_path, s1_queued):
    st_ = s1_queued
    run = cli(st_, "run", "--judge", "rules")
    assert run.returncode == 0 and "  ! " not in run.stdout and "judge answers ignored" not in run.stdout


# -- a disputed memory ----------------------------------------------------------------------------------


@pytest.mark.spawns
def test_a_run_that_wrote_a_disputed_memory_says_so(tmp_path, s1_queued):
    st_ = s1_queued
    assert cli(st_, "run", "--judge", MODAL_JUDGE).returncode == 0
    _session(st_, "s2", "The staging db listens on port 6543")
    run = cli(st_, "run", "--judge", MODAL_JUDGE, env={"FAKE_CLI_RELATION": "contradicts"})
    assert run.returncode == 0, run.stderr
    assert "-> 0 durable, 0 quarantined, 0 transient, 0 re-confirmed, 1 disputed;" in run.stdout, run.stdout
    said = "1 disputed memory written: contradicted by an existing memory with equal evidence"
    assert said in run.stdout and "`consolidate disputes`" in run.stdout
    assert said in cli(st_, "runs").stdout and said in cli(st_, "status").stdout
    assert "[disputed]" in cli(st_, "recall", "staging db port").stdout


@pytest.mark.spawns
def test_a_forgotten_side_of_a_dispute_is_named_nowhere(tmp_path, s1_queued):
    """Two memories dispute the first; one of them forgotten, the first still disputes the other, and
    no surface names the forgotten one (its ``with``, its ``disputed_with``)."""
    st_ = s1_queued
    assert cli(st_, "run", "--judge", MODAL_JUDGE).returncode == 0
    for sid, port in (("s2", 6543), ("s3", 7000)):
        _session(st_, sid, f"The staging db listens on port {port}")
        assert cli(st_, "run", "--judge", MODAL_JUDGE, env={"FAKE_CLI_RELATION": "contradicts"}).returncode == 0
    rows = {r["statement"]: r for r in json.loads(cli(st_, "disputes", "--json").stdout)}
    first, gone = rows["The staging db listens on port 5433"], rows["The staging db listens on port 7000"]["id"]
    assert gone in first["with"] and first["disputed_with"] == gone  # the last to dispute it
    assert cli(st_, "forget", gone).returncode == 0
    for args in (("disputes",), ("disputes", "--json"), ("review", "--list"), ("review", "--list", "--json"),
                 ("recall", "--json", "staging db port"), ("hook", "--event", "SessionStart")):
        out = cli(st_, *args, stdin='{"hook_event_name": "SessionStart", "session_id": "s9"}')
        assert out.returncode == 0 and "port 5433" in out.stdout and gone not in out.stdout, (args, out.stdout)
    assert "port 7000" not in cli(st_, "disputes").stdout


# -- a crash: the next run says it finished the interrupted one ------------------------------------------------


@pytest.mark.spawns
@pytest.mark.parametrize("point", ["apply:journal", "apply:chroma", "apply:events"])
def test_after_a_crash_run_says_it_finished_the_interrupted_run(tmp_path, point, s1_queued):
    st_ = s1_queued
    crashed = cli(st_, "run", "--judge", "rules", env={"CONSOLIDATE_CRASH_AT": point})
    assert crashed.returncode == -9
    run = cli(st_, "run", "--judge", "rules")
    assert run.returncode == 0, run.stderr
    first = run.stdout.splitlines()[0]
    assert first.startswith("finished the interrupted run run-") and "of session s1 (a crash stopped it" in first
    assert first.endswith("1 durable, 0 quarantined, 0 transient, 0 re-confirmed"), first
    assert "nothing queued" not in run.stdout
    assert "finished after a crash" in cli(st_, "runs").stdout
    assert cli(st_, "run").stdout.strip() == "nothing queued"  # said once, by the run that finished it


@pytest.mark.spawns
def test_batch_says_the_interrupted_run_it_finished(tmp_path, s1_queued):
    st_ = s1_queued
    assert cli(st_, "run", "--judge", "rules", env={"CONSOLIDATE_CRASH_AT": "apply:journal"}).returncode == -9
    batch = cli(st_, "batch", "--judge", "rules")
    assert batch.returncode == 0, batch.stderr
    assert "  finished the interrupted run run-" in batch.stdout and "of session s1" in batch.stdout


# -- run --session of a session already consolidated ----------------------------------------------------------


@pytest.mark.spawns
def test_run_session_of_a_consolidated_session_says_so(tmp_path, s1_queued):
    st_ = s1_queued
    worker = subprocess.run([EXE, "worker", "--store", str(st_), "--embedding", "hash", "--judge", "rules"],
                            capture_output=True, text=True, env=_env(), timeout=300)
    assert worker.returncode == 0
    run_id = Store(st_, create=False).sessions.session_end("s1")["run_id"]
    out = cli(st_, "run", "--session", "s1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (f"session s1 was already consolidated (success, done, run {run_id}): 1 durable,"
                                  " 0 quarantined, 0 transient, 0 re-confirmed; nothing queued (`consolidate runs`"
                                  " lists it)")
    assert cli(st_, "note", "--session", "s1", "a later note about the logs").returncode == 0
    later = cli(st_, "run", "--session", "s1")
    assert "1 note(s) written since wait for its next end (consolidate end --session s1)" in later.stdout
    assert cli(st_, "run", "--session", "never").returncode == 3  # unknown: still an error


# -- end --outcome failure after a consolidated success --------------------------------------------------------


@pytest.mark.spawns
def test_end_failure_after_a_consolidated_success_refuses(tmp_path, s1_done):
    st_ = s1_done
    run_id = Store(st_, create=False).sessions.session_end("s1")["run_id"]
    out = cli(st_, "end", "--session", "s1", "--outcome", "failure", "--reason", "tests red")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (f"error: session s1 was already consolidated as a success (run {run_id}) and has no notes"
                          f" since: a failure now changes nothing (`consolidate undo {run_id}` reverts its memories);"
                          " a session that failed later takes a new session id\n")
    assert Store(st_, create=False).sessions.session_end("s1")["status"] == "done"  # nothing queued
    again = cli(st_, "end", "--session", "s1", "--outcome", "success")
    assert again.returncode == 0 and "queued for" not in again.stdout and "already consolidated" in again.stdout
    assert Store(st_, create=False).sessions.queued() == []
    # notes written since: the failure keeps them back (allowed)
    assert cli(st_, "note", "--session", "s1", "tried the deploy with --force").returncode == 0
    later = cli(st_, "end", "--session", "s1", "--outcome", "failure")
    assert later.returncode == 0 and "ended (failure, 1 notes); queued" in later.stdout


@pytest.mark.spawns
def test_the_library_and_the_hook_refuse_the_same_failure(tmp_path):
    s = Store(tmp_path / ".memofs", embedding="hash")
    s.sessions.add_note("s1", "The staging db listens on port 5433", flag=True, kind="fact")
    s.sessions.end("s1", "success")
    from consolidate.pipeline.run import run_queue

    run_queue(s, judges=["rules"])
    with pytest.raises(BadInput, match="already consolidated as a success"):
        s.sessions.end("s1", "failure")
    s.close()
    hook = subprocess.run([EXE, "hook", "--store", str(tmp_path / ".memofs"), "--session", "s1", "--outcome",
                           "failure", "--no-worker"], capture_output=True, text=True, env=_env(), timeout=120)
    assert hook.returncode == 0  # a hook never fails the agent; the end was refused and logged
    assert "already consolidated as a success" in (tmp_path / ".memofs" / "logs" / "hook.log").read_text()
    assert Store(tmp_path / ".memofs", create=False).sessions.session_end("s1")["outcome"] == "success"


# -- runs of sessions without notes ---------------------------------------------------------------------------


@pytest.mark.spawns
def test_a_run_of_a_session_without_notes_is_listed_and_can_be_undone(tmp_path, s1_queued):
    st_ = s1_queued
    s = Store(st_, embedding="hash")
    s.sessions.end("empty", "success")  # as the MCP server and the hooks end a session that wrote nothing
    s.close()
    run = cli(st_, "run", "--judge", "rules")
    assert run.returncode == 0 and "session empty (success) · run run-" in run.stdout
    assert "no judge available" not in run.stdout  # no note of it needs one
    rows = {r["session_id"]: r for r in json.loads(cli(st_, "runs", "--json").stdout)}
    assert set(rows) == {"s1", "empty"} and rows["empty"]["undo_record"] is False
    # --limit holds for --json as for the text: the newest run only (it printed every run)
    assert [r["session_id"] for r in json.loads(cli(st_, "runs", "--json", "--limit", "1").stdout)] == ["empty"]
    run_id = rows["empty"]["run_id"]
    assert run_id in run.stdout
    undo = cli(st_, "undo", run_id)
    assert undo.returncode == 0 and undo.stdout.startswith(f"undid {run_id}: it wrote nothing")
    listed = [line for line in cli(st_, "runs").stdout.splitlines() if line.startswith(run_id)]
    assert listed and listed[0].endswith("(undone)")
    again = cli(st_, "undo", run_id)
    assert again.returncode == 2 and f"run {run_id} was already undone" in again.stderr
    assert cli(st_, "undo", "run-000000000000").returncode == 2  # unknown: still refused
    events = [json.loads(x) for x in (st_ / "events" / "memory-events.jsonl").read_text().splitlines()]
    assert any(e["event"] == "run.undone" and e["run_id"] == run_id for e in events)
    assert cli(st_, "recall", "staging db").stdout.startswith("The staging db")  # s1's memory untouched


@pytest.mark.spawns
def test_a_run_that_dropped_every_note_can_be_undone(tmp_path):
    st_ = tmp_path / ".memofs"
    _session(st_, "d1", "looked at the logs for a while", flag=False)
    assert cli(st_, "run", "--judge", "rules").returncode == 0
    run_id = json.loads(cli(st_, "runs", "--json").stdout)[0]["run_id"]
    assert cli(st_, "undo", run_id).returncode == 0


# -- an embedding refused for its dimension ---------------------------------------------------------------------


@pytest.mark.spawns
@pytest.mark.parametrize("embedding, said", [
    ("hash-128", "not hash-128 (dimension 128)"),
    ("minilm", "not minilm-l6-v2-int8-onnx (dimension 384)"),
    ("chroma:default", "not chroma:default (dimension not known until it is built)"),
])
def test_an_embedding_refused_says_both_dimensions(tmp_path, embedding, said, s1_done):
    st_ = s1_done
    for cmd in (["recall", "db"], ["status"], ["note", "--session", "s2", "a note"]):
        out = run_preloaded([*cmd, "--store", str(st_), "--embedding", embedding], env=_env(), timeout=300)
        if cmd[0] == "note":  # writes only the session tier: no embedding is needed
            continue
        assert out.returncode == 4, (cmd, out.stderr)
        assert out.stderr.startswith(f"error: store {st_} was built with embedding hash-256 (dimension 256), {said};")
        assert out.stderr.count("\n") == 1


def test_the_index_refuses_an_embedding_of_another_dimension_when_the_manifest_is_lost(tmp_path):
    from consolidate.core.errors import EmbeddingMismatch

    s = Store(tmp_path / ".memofs", embedding="hash")
    s.longterm().counts()
    s.close()
    (tmp_path / ".memofs" / "manifest.json").unlink()
    with pytest.raises(EmbeddingMismatch, match=r"hash-256 \(dimension 256\), not hash-64 \(dimension 64\)"):
        Store(tmp_path / ".memofs", embedding="hash-64").longterm()


# -- a read-only store at every hook event -----------------------------------------------------------------------


def _read_only_prefix(folder: Path) -> list[str] | None:
    from test_one_line_refusals import _read_only_prefix as prefix

    return prefix(folder)


@pytest.mark.spawns
@pytest.mark.parametrize("event, said", [
    ("SessionStart", "session ro was not recorded"),
    ("SessionEnd", "the end of session ro was not queued"),
    ("Stop", "the end of session ro was not queued"),
    ("PreCompact", "nothing was harvested for session ro before the compaction"),
    ("PreToolUse", "what session ro was shown about the file is not recorded"),
])
def test_a_read_only_store_gives_one_line_at_every_hook_event(tmp_path, event, said):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "db.py").write_text("PORT = 5433\n")
    folder = project / ".memofs"
    _session(folder, "s1", "src/db.py sets the staging db port to 5433")
    assert cli(folder, "run", "--judge", "rules").returncode == 0
    prefix = _read_only_prefix(folder)
    if prefix is None:
        pytest.skip("no read-only bind mount here (needs root and unshare)")
    payload = {"hook_event_name": event, "session_id": "ro", "cwd": str(project), "tool_name": "Read",
               "tool_input": {"file_path": str(project / "src" / "db.py")},
               "transcript_path": str(project / "none.jsonl")}
    out = subprocess.run([*prefix, EXE, "hook", "--store", str(folder), "--harvest", "--no-worker"],
                         input=json.dumps(payload), capture_output=True, text=True,
                         env=_env(XDG_STATE_HOME=tmp_path / "state", CONSOLIDATE_EMBEDDING="hash"), timeout=120)
    assert out.returncode == 0
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"consolidate hook: store={folder}: error: the store is read-only: {said}"), lines[0]
    if event == "SessionStart":  # what can be read is still given, claiming nothing
        assert "this is session ro, but it could not be recorded in the store (StoreReadOnly:" in out.stdout
        assert "src/db.py sets the staging db port to 5433" in out.stdout
    elif event == "PreToolUse":
        assert "src/db.py sets the staging db port to 5433" in json.loads(out.stdout)["hookSpecificOutput"][
            "additionalContext"]
    else:
        assert out.stdout == ""


# -- a flagged note longer than a memory's statement ------------------------------------------------------------


LONG = "The deploy script needs the staging credentials file; " * 200  # 11,000 characters


@pytest.mark.spawns
def test_a_long_flagged_note_is_refused_by_note_and_import_and_kept_unflagged(tmp_path):
    st_ = tmp_path / ".memofs"
    out = cli(st_, "note", "--session", "s1", "--flag", LONG)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (f"error: flagged note is {len(LONG.strip()):,} characters; a memory's statement is at most"
                          " 10,000 (a flagged note is kept as it is written): shorten it to the one fact to remember,"
                          " or write it without the flag for a judge to condense\n")
    assert cli(st_, "note", "--session", "s1", LONG).returncode == 0  # unflagged: the judge condenses it
    lines = tmp_path / "notes.jsonl"
    lines.write_text(json.dumps({"content": "A short kept note about the build cache", "flag": True}) + "\n"
                     + json.dumps({"content": LONG, "flag": True}) + "\n")
    imported = cli(st_, "import", str(lines), "--session", "s2")
    assert imported.returncode == 2 and f"{lines}:2: flagged note is" in imported.stderr
    assert "nothing was imported" in imported.stderr
    assert Store(st_, create=False).sessions.count("s2") == 0


def test_a_long_flagged_note_is_refused_by_the_mcp_note_tool(tmp_path):
    import anyio
    from mcp import Client

    from consolidate.mcp.server import build_server

    s = Store(tmp_path / ".memofs", embedding="hash")

    async def main():
        async with Client(build_server(s, spawn=None)) as client:
            return await client.call_tool("note", {"content": LONG, "flag": True, "session_id": "m1"})

    result = anyio.run(main)
    assert result.is_error
    text = result.content[0].text
    assert "\n" not in text and "a memory's statement is at most 10,000" in text, text
    assert s.sessions.count("m1") == 0


def test_a_long_flagged_workspace_item_is_refused(tmp_path):
    from consolidate.pipeline import workspace

    s = Store(tmp_path / ".memofs", embedding="hash")
    ws, _ = workspace.start(s, "w1", task="the deploy")
    (ws.root / "output" / "memory.md").write_text(f"- {LONG}\n- A short fact about the deploy cache\n")
    with pytest.raises(BadInput, match="output/memory.md line 1: flagged note is .* nothing was extracted"):
        ws.extract(flag=True)
    assert s.sessions.count("w1") == 0
    ws.extract()  # unflagged: kept for the judge
    assert s.sessions.count("w1") == 2


def test_a_judge_statement_longer_than_a_memory_is_rejected_with_its_reason(tmp_path):
    from consolidate.pipeline.run import run_queue
    from consolidate.judges.chain import JudgeChain
    from consolidate.judges.scripted import ScriptedJudge

    s = Store(tmp_path / ".memofs", embedding="hash")
    s.sessions.add_note("j1", "the deploy needs the credentials file")
    s.sessions.end("j1", "success")
    keep = {"verdict": "keep", "statement": LONG, "type": "fact", "reason": "said", "evidence": "user-stated",
            "confidence": "high"}
    (plan,) = run_queue(s, chain_factory=lambda: JudgeChain([ScriptedJudge(default=keep)]))
    rejected = [e for e in plan.events if e["event"] == "candidate.rejected"]
    assert rejected and rejected[0]["reason"].startswith(f"too long for a memory ({len(LONG.strip()):,} characters")
    assert not plan.writes()


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40),
       st.integers(min_value=9900, max_value=10100))
def test_the_limit_counts_characters_as_written_in_nfc(unit, target):
    """Any script, composed or decomposed: a flagged note is refused exactly when its NFC length
    (stripped) passes the limit; the same letters typed decomposed count as many as composed."""
    text = (unit * (target // len(unit) + 1))[:target]
    nfd = unicodedata.normalize("NFD", text)
    assert statement_length(nfd) == statement_length(text)
    for form in (text, nfd):
        try:
            check_content(form, "s1", flag=True)
            accepted = True
        except EmptyNote:
            continue
        except BadInput as exc:
            accepted = False
            assert str(exc).startswith("flagged note is"), str(exc)
        assert accepted == (statement_length(form) <= MAX_STATEMENT_CHARS), (len(form), statement_length(form))
        check_content(form, "s1")  # unflagged: any length up to the note limit


# -- a team push that failed --------------------------------------------------------------------------------------


@pytest.mark.spawns
def test_a_failed_team_push_is_said_by_run_batch_and_the_worker_log(tmp_path):
    from test_team import ChromaServer, machine

    server = ChromaServer(tmp_path).start()
    try:
        a = machine(tmp_path, "a", server)
    finally:
        server.stop()  # the team store goes away: every push of A fails
    fast = {"CONSOLIDATE_TEAM_PULL_SECONDS": 2, "CONSOLIDATE_TEAM_PUSH_SECONDS": 5}
    _session(a, "a1", "The nightly job rebuilds the search index at 03:00 UTC")
    run = cli(a, "run", "--judge", "rules", env=fast)
    assert run.returncode == 0, run.stderr
    said = [line for line in run.stdout.splitlines() if line.startswith("team: push failed, 1 waiting in the outbox")]
    assert said and said[0].endswith("; `consolidate sync` retries (the next run does too)"), run.stdout
    assert "graduated" in run.stdout  # the run itself completed locally
    _session(a, "a2", "The search index lives in the search-prod cluster")
    batch = cli(a, "batch", "--judge", "rules", env=fast)
    assert "  team: push failed, 2 waiting in the outbox" in batch.stdout, batch.stdout
    _session(a, "a3", "The search cluster has three nodes in staging")
    log = tmp_path / "worker.log"
    with open(log, "w") as f:
        subprocess.run([EXE, "worker", "--store", str(a), "--embedding", "hash", "--judge", "rules"], stdout=f,
                       stderr=subprocess.STDOUT, env=_env(**fast), timeout=300)
    assert " team: push failed, 3 waiting in the outbox" in log.read_text()


def test_mcp_session_read_says_the_run_report_lines(tmp_path):
    import anyio
    from mcp import Client

    from consolidate.mcp.server import build_server
    from consolidate.pipeline.run import run_queue
    from consolidate.judges.chain import JudgeChain
    from consolidate.judges.scripted import ScriptedJudge

    s = Store(tmp_path / ".memofs", embedding="hash")
    s.sessions.add_note("m1", "remember the db port is 5433")
    s.sessions.end("m1", "success")
    unknown = ScriptedJudge(handler=lambda batch, context: [{"id": "n9", "verdict": "drop", "reason": "x"}])
    run_queue(s, chain_factory=lambda: JudgeChain([unknown]))

    async def main():
        async with Client(build_server(s, spawn=None)) as client:
            return await client.call_tool("session_read", {"session_id": "m1"})

    end = anyio.run(main).structured_content["end"]
    assert end["result"]["judge_problems"] == ["scripted: verdict for unknown id 'n9' ignored"]
    assert end["notices"] == ["judge answers ignored (1): scripted: verdict for unknown id 'n9' ignored"]


@pytest.mark.spawns
def test_doctor_repair_names_the_interrupted_run_it_finished(tmp_path, s1_queued):
    st_ = s1_queued
    assert cli(st_, "run", "--judge", "rules", env={"CONSOLIDATE_CRASH_AT": "apply:journal"}).returncode == -9
    out = cli(st_, "doctor", "--repair")
    run_id = Store(st_, create=False).sessions.session_end("s1")["run_id"]
    assert f"journal/: an interrupted run was waiting to be replayed: finished {run_id} [repaired]" in out.stdout
