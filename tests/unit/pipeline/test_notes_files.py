"""Notes files (issue 31 item 4: stale survival): a session records what the notes file an agent keeps
(a scratchpad, a memory bank, an AGENTS.md it edits) holds at its end; the memories of notes the file
no longer holds are withdrawn (archived, ``expired``, ``memory.withdrawn``) and ``undo`` brings them back.
Through the Python API and the installed ``consolidate notes-file`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consolidate.core.errors import BadInput
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge
from consolidate.model.notes_files import note_digest
from consolidate.pipeline.run import run_queue
from consolidate.pipeline.undo import undo_run

F = "memory-bank/progress.md"
PORT = "The API server listens on port 8080 behind nginx"
PG = "Integration tests need a running Postgres 16 on localhost:5433"
STAGING = "Deployments go through the staging branch before main"
OTHER = "Release notes are written in CHANGELOG.md by hand"
KEEP = {"verdict": "keep", "type": "fact", "evidence": "observed-success", "confidence": "high", "reason": "scripted"}


def _judge(*texts):
    return lambda: JudgeChain([ScriptedJudge({t: {**KEEP, "statement": t} for t in texts})])


def _session(store, sid, notes, *, file=F, judge_texts=(PORT, PG, STAGING, OTHER)):
    store.sessions.add_notes_file(sid, file, notes, scope=store.project, add_new=True)
    store.sessions.end(sid, "success")
    return run_queue(store, chain_factory=_judge(*judge_texts))[-1]


def _active(store):
    return {r["document"] for r in store.longterm().with_status("active", "quarantined", "disputed")}


def test_a_note_the_file_no_longer_holds_withdraws_its_memory_and_undo_brings_it_back(store):
    _session(store, "s1", [PORT, PG])
    assert _active(store) == {PORT, PG}
    plan = _session(store, "s2", [PORT, STAGING])  # PG deleted from the file, STAGING added
    assert _active(store) == {PORT, STAGING}
    [w] = [u for u in plan.updates if u.event == "memory.withdrawn"]
    assert F in w.reason and w.changes["status"] == "expired"
    events = [json.loads(x) for x in (store.path / "events" / "memory-events.jsonl").read_text().splitlines()]
    assert [e["memory_id"] for e in events if e["event"] == "memory.withdrawn"] == [w.memory_id]
    assert undo_run(store, plan.run_id)["restored"] == 1
    assert PG in _active(store)


def test_a_session_that_only_hands_over_the_file_still_withdraws(store):
    _session(store, "s1", [PORT, PG])
    store.sessions.add_notes_file("s2", F, [PG], scope=store.project)  # no new note: the file only shrank
    store.sessions.end("s2", "success")
    [plan] = run_queue(store, chain_factory=_judge())
    assert plan.note_count == 0 and _active(store) == {PG}
    assert store.sessions.notes_files("s2") == {}  # applied: the snapshot is gone, the file's state stays


def test_memories_of_other_files_and_of_no_file_stay(store):
    _session(store, "s1", [PORT, PG])
    _session(store, "s2", [OTHER], file="AGENTS.md")
    store.sessions.add_note("s3", STAGING)  # a note of no notes file
    store.sessions.end("s3", "success")
    run_queue(store, chain_factory=_judge(STAGING))
    _session(store, "s4", [PORT])  # progress.md lost PG: only PG's memory goes
    assert _active(store) == {PORT, OTHER, STAGING}


def test_a_memory_reconfirmed_from_a_note_still_in_the_file_stays(store):
    _session(store, "s1", [PORT])
    again = "API server: port 8080, nginx in front"  # another note the judge reads as the same statement
    store.sessions.add_notes_file("s2", F, [PORT, again], scope=store.project, add_new=True)
    store.sessions.end("s2", "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge({again: {**KEEP, "statement": PORT}})]))
    assert plan.reconfirmations and _active(store) == {PORT}
    _session(store, "s3", [again])  # the first note is gone, the second holds the memory
    assert _active(store) == {PORT}
    _session(store, "s4", [STAGING])  # both gone
    assert _active(store) == {STAGING}


def test_a_file_handed_over_twice_adds_its_notes_once_and_a_failed_session_adds_them_again(store):
    for _ in range(2):
        store.sessions.add_notes_file("s1", F, [PORT, PG], scope=store.project, add_new=True)
    assert store.sessions.count("s1") == 2
    store.sessions.end("s1", "failure", "tests red")
    run_queue(store, chain_factory=_judge(PORT, PG))
    assert _active(store) == set()
    assert store.sessions.add_notes_file("s2", F, [PORT, PG], scope=store.project, add_new=True)["new"] == 2
    store.sessions.end("s2", "success")
    run_queue(store, chain_factory=_judge(PORT, PG))
    assert _active(store) == {PORT, PG}
    assert store.sessions.add_notes_file("s3", F, [PORT, PG], scope=store.project, add_new=True)["new"] == 0


def test_an_undone_run_s_notes_come_back_with_the_next_hand_over(store):
    """A fresh tester's case: after ``undo``, the file still holds the run's notes; the next hand-over
    must add them again, not count them as known."""
    _session(store, "s1", [PORT, PG])
    plan = _session(store, "s2", [PORT, STAGING])
    undo_run(store, plan.run_id)
    assert _active(store) == {PORT, PG}
    assert store.sessions.add_notes_file("s3", F, [PORT, STAGING], scope=store.project, add_new=True)["new"] == 1
    store.sessions.end("s3", "success")
    run_queue(store, chain_factory=_judge(PORT, PG, STAGING))
    assert _active(store) == {PORT, STAGING}


def test_a_note_moved_to_another_file_follows_it(store):
    _session(store, "s1", [PORT, PG], file="a.md")
    store.sessions.add_notes_file("s2", "a.md", [PG], scope=store.project, add_new=True)
    store.sessions.add_notes_file("s2", "b.md", [PORT], scope=store.project, add_new=True)
    store.sessions.end("s2", "success")
    run_queue(store, chain_factory=_judge(PORT, PG))
    for sid in ("s3", "s4"):  # neither file changes
        store.sessions.add_notes_file(sid, "a.md", [PG], scope=store.project, add_new=True)
        store.sessions.add_notes_file(sid, "b.md", [PORT], scope=store.project, add_new=True)
        store.sessions.end(sid, "success")
        run_queue(store, chain_factory=_judge(PORT, PG))
        assert _active(store) == {PORT, PG}
    _session(store, "s5", [], file="b.md")  # now deleted from its new file
    assert _active(store) == {PG}


def test_a_note_moved_to_another_file_without_being_judged_again_follows_it(store):
    """The moved note is not judged again (an echo of a memory the session was shown, or handed over
    with ``--no-new``): the other file holding it is enough."""
    _session(store, "s1", [PORT, PG], file="a.md")
    store.sessions.add_notes_file("s2", "a.md", [PG], scope=store.project)
    store.sessions.add_notes_file("s2", "b.md", [PORT], scope=store.project)
    store.sessions.end("s2", "success")
    run_queue(store, chain_factory=_judge())
    assert _active(store) == {PORT, PG}
    store.sessions.add_notes_file("s3", "b.md", [], scope=store.project)
    store.sessions.end("s3", "success")
    run_queue(store, chain_factory=_judge())
    assert _active(store) == {PG}


def test_a_memory_said_again_by_a_note_of_no_file_is_freed_from_the_file(store):
    _session(store, "s1", [PORT])
    store.sessions.add_note("s2", "API server: port 8080, nginx in front")
    store.sessions.end("s2", "success")
    run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge({"API server:": {**KEEP, "statement": PORT}})]))
    _session(store, "s3", [PG])
    assert _active(store) == {PORT, PG}


def test_an_emptied_file_withdraws_its_memories_and_the_run_line_says_so(store):
    _session(store, "s1", [PORT, PG])
    plan = _session(store, "s2", [])
    assert _active(store) == set()
    from consolidate.model.plan import run_summary
    from consolidate.model.run_lines import count_line
    assert "2 withdrawn" in count_line(run_summary(plan))


def test_the_same_file_handed_over_again_in_a_session_drops_the_notes_it_no_longer_holds(store):
    store.sessions.add_notes_file("s1", F, [PORT, PG], scope=store.project, add_new=True)
    res = store.sessions.add_notes_file("s1", F, [PORT, STAGING], scope=store.project, add_new=True)
    assert (res["new"], res["gone"]) == (1, 1)
    assert sorted(n.content for n in store.sessions.notes("s1")) == sorted([PORT, STAGING])


@pytest.mark.parametrize("order", ["ended in reverse", "run in reverse"])
def test_an_older_hand_over_consolidated_after_a_newer_one_withdraws_nothing(store, order):
    """A fresh tester's cases: sessions that overlap and end in reverse order, and a batch that runs
    queued sessions out of order; the newer hand-over decides."""
    from consolidate.pipeline.run import run_session

    _session(store, "s1", [PORT])
    store.sessions.add_notes_file("s2", F, [PORT], scope=store.project, add_new=True, now=1000.0)
    store.sessions.add_notes_file("s3", F, [PORT, PG], scope=store.project, add_new=True, now=2000.0)
    if order == "ended in reverse":
        store.sessions.end("s3", "success")
        store.sessions.end("s2", "success")
        run_queue(store, chain_factory=_judge(PORT, PG))
    else:
        for sid in ("s2", "s3"):
            store.sessions.end(sid, "success")
        for sid in ("s3", "s2"):
            run_session(store, sid, chain_factory=_judge(PORT, PG))
    assert _active(store) == {PORT, PG}
    _session(store, "s4", [PG])  # a newer hand-over still withdraws
    assert _active(store) == {PG}


def test_a_paragraph_beside_list_items_is_a_note_of_a_notes_file():
    from consolidate.pipeline.workspace import parse_markdown

    text = "# Progress\n\n- P one\n  - Q nested\n\nR a paragraph\nstill R\n\n- S last\n"
    assert [i.content for i in parse_markdown(text, "a.md", nested=True)] == ["P one", "Q nested", "R a paragraph\nstill R",
                                                                              "S last"]
    assert [i.content for i in parse_markdown(text, "a.md")] == ["P one", "Q nested", "S last"]  # a workspace file: items only


def test_a_dry_run_withdraws_nothing(store):
    _session(store, "s1", [PORT, PG])
    store.sessions.add_notes_file("s2", F, [PORT], scope=store.project)
    store.sessions.end("s2", "success")
    [plan] = run_queue(store, chain_factory=_judge(), dry_run=True)
    assert [u.memory_id for u in plan.updates if u.event == "memory.withdrawn"] and _active(store) == {PORT, PG}


@pytest.mark.parametrize("name", ["", "   ", "x" * 1025, "a\x00b", "a\nb", "a\x1bb", None, 7])
def test_a_bad_name_is_refused_and_records_nothing(store, name):
    with pytest.raises(BadInput):
        store.sessions.add_notes_file("s1", name, [PORT], scope=store.project, add_new=True)
    assert store.sessions.count("s1") == 0 and store.sessions.notes_files("s1") == {}


def test_a_bad_note_is_refused_and_records_nothing(store):
    with pytest.raises(BadInput):
        store.sessions.add_notes_file("s1", F, [PORT, b"bytes"], scope=store.project, add_new=True)
    assert store.sessions.count("s1") == 0 and store.sessions.notes_files("s1") == {}


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=200)


@settings(max_examples=200, deadline=None)
@given(text=_TEXT, form=st.sampled_from(["NFC", "NFD", "NFKC"]))
def test_a_note_is_the_same_note_in_any_unicode_form_and_spacing(text, form):
    """The file written again by another editor (decomposed accents, other spacing) withdraws nothing."""
    again = "  " + unicodedata.normalize(form, text).replace(" ", "  ") + "\n"
    if form == "NFKC" and unicodedata.normalize("NFKC", text) != unicodedata.normalize("NFC", text):
        return  # compatibility forms may change the words (a ligature, a superscript): another note
    assert note_digest(again) == note_digest(text)


def test_the_installed_command_hands_a_markdown_file_over(tmp_path):
    """``consolidate notes-file`` twice on an edited file, through the installed command: the note the
    agent deleted stops being recalled; ``--name`` is the name across sessions; bad input is one line."""
    project = tmp_path / "project"
    (project / "memory-bank").mkdir(parents=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({t[:20]: {**KEEP, "statement": t} for t in (PORT, PG, STAGING)}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update(CONSOLIDATE_EMBEDDING="hash", CONSOLIDATE_JUDGES=f"scripted:{script}", XDG_STATE_HOME=str(tmp_path / "state"))

    def cli(*args, ok=0):
        p = subprocess.run([sys.executable, "-m", "consolidate", *args], cwd=project, env=env, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == ok, (args, p.stdout, p.stderr)
        return p

    progress = project / "memory-bank" / "progress.md"
    progress.write_text(f"# Progress\n\n- {PORT}\n- {PG}\n", encoding="utf-8")
    out = cli("notes-file", "memory-bank/progress.md", "--session", "s1").stdout
    assert "2 notes, 2 new" in out
    cli("end", "--session", "s1", "--outcome", "success")
    cli("run")
    assert "5433" in cli("recall", "Postgres integration tests").stdout
    progress.write_text(f"# Progress\n\n- {PORT}\n- {STAGING}\n", encoding="utf-8")
    assert "2 notes, 1 new" in cli("notes-file", "memory-bank/progress.md", "--session", "s2").stdout
    cli("end", "--session", "s2", "--outcome", "success")
    cli("run")
    assert "5433" not in cli("recall", "Postgres integration tests").stdout
    assert "staging" in cli("recall", "deployments staging branch").stdout
    progress.write_text(f"# Progress\n\n- {STAGING}\n", encoding="utf-8")  # only shrank: no new note
    assert "1 notes, 0 new" in cli("notes-file", "memory-bank/progress.md", "--session", "s3").stdout
    cli("end", "--session", "s3", "--outcome", "success")
    cli("run", "--session", "s3")  # a session without notes: the light path hands it to the full run
    assert "8080" not in cli("recall", "API server port nginx").stdout
    # the same file from a subfolder, or as ./path, is the same file
    (project / "memory-bank" / "progress.md").write_text(f"- {STAGING}\n- {PORT}\n", encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "consolidate", "notes-file", "progress.md", "--session", "s5"],
                       cwd=project / "memory-bank", env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.startswith("memory-bank/progress.md: 2 notes, 1 new"), p.stdout + p.stderr
    assert "2 notes, 0 new" in cli("notes-file", "./memory-bank/progress.md", "--session", "s5").stdout
    # a sub-item indented four spaces is a note of its own
    (project / "nested.md").write_text(f"- {STAGING}\n    - {PORT}\n", encoding="utf-8")
    assert "2 notes" in cli("notes-file", "nested.md", "--session", "s5").stdout
    bad = cli("notes-file", "nested.md", "--session", "s5", "--name", "", ok=2)
    assert "--name is empty" in bad.stderr
    (project / "big.md").write_bytes(b"- x\n" * 300_000)
    bad = cli("notes-file", "big.md", "--session", "s5", ok=2)
    assert "big.md is over 1,000,000 bytes" in bad.stderr and bad.stderr.count("\n") == 1
    bad = cli("notes-file", "memory-bank/missing.md", "--session", "s4", ok=2)
    assert bad.stderr.count("\n") == 1 and "missing.md" in bad.stderr and "Traceback" not in bad.stderr
    (project / "latin1.md").write_bytes("- caf\xe9 au lait\n".encode("latin-1"))
    bad = cli("notes-file", "latin1.md", "--session", "s4", ok=2)
    assert "not UTF-8" in bad.stderr and bad.stderr.count("\n") == 1
