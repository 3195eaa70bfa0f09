"""The secret gate at note-write time (issue 14, input 4): every way a note is written (Python API, CLI
``note`` and ``import``, MCP ``note``, hook harvest) stores the redacted form, tells the writer in one
line, and the raw value is never in ``sessions.sqlite3`` (also after ``--outcome aborted``)."""

import json

import anyio
import pytest
from mcp import Client

from consolidate import Store
from consolidate.cli.main import main
from consolidate.mcp.server import build_server
from consolidate.pipeline.run import run_session
from consolidate.store.sessions.write_gate import REDACTED_KEY
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import keep

PW = "Qm7#vLx29pK"
KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
NOTES = [
    f"Das Passwort für die Staging-Datenbank ist {PW}",
    f"export OPENAI_API_KEY={KEY}",
    f"postgres://app:{PW}@db.internal:5432/app",
]


def raw_bytes(store) -> bytes:
    """Every byte of the session tier on disk (database, WAL and shared memory files)."""
    return b"".join(p.read_bytes() for p in store.path.glob("sessions.sqlite3*"))


def assert_clean(store, *secrets):
    blob = raw_bytes(store)
    for s in secrets:
        assert s.encode() not in blob


@pytest.mark.parametrize("text", NOTES)
def test_python_api_stores_the_redacted_form(store, text):
    note_id = store.sessions.add_note("s", text)
    assert note_id.notice and "\n" not in note_id.notice and "held secret material" in note_id.notice
    [note] = store.sessions.notes("s")
    assert PW not in note.content and KEY not in note.content and "chars>" in note.content
    assert note.metadata[REDACTED_KEY]["kinds"]
    assert_clean(store, PW, KEY)


def test_clean_note_has_no_notice(store):
    note_id = store.sessions.add_note("s", "Use pnpm, not npm: npm breaks the lockfile")
    assert note_id.notice is None and isinstance(note_id, int)
    assert REDACTED_KEY not in store.sessions.notes("s")[0].metadata


def test_metadata_values_are_redacted_too(store):
    store.sessions.add_note("s", "deploy works again", metadata={"command": f"psql -h db -U app --password {PW}"})
    [note] = store.sessions.notes("s")
    assert PW not in json.dumps(note.metadata) and note.metadata[REDACTED_KEY]


def test_cli_note_tells_the_writer_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / ".memofs"))
    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "hash")
    assert main(["note", "--session", "s", NOTES[0]]) == 0
    out, err = capsys.readouterr()
    assert "written to session s" in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("secret: note ") and "secret-assignment" in lines[0]
    assert PW not in out + err and "<secret-assignment, 11 chars>" in lines[0]
    assert_clean(Store(tmp_path / ".memofs"), PW)


def test_cli_import_names_the_lines(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / ".memofs"))
    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "hash")
    f = tmp_path / "notes.jsonl"
    f.write_text("\n".join(json.dumps({"content": c}) for c in ["an ordinary note about the build", *NOTES]) + "\n",
                 encoding="utf-8")
    assert main(["import", "--session", "s", str(f)]) == 0
    out, err = capsys.readouterr()
    assert "imported 4 notes" in out
    lines = err.strip().splitlines()
    assert [ln.split(":", 2)[1].strip() for ln in lines] == ["line 2", "line 3", "line 4"]
    assert PW not in err and KEY not in err
    assert_clean(Store(tmp_path / ".memofs"), PW, KEY)


def test_mcp_note_answers_with_the_notice(store):
    server = build_server(store, spawn=lambda s: None)

    async def main_():
        async with Client(server) as client:
            clean = await client.call_tool("note", {"session_id": "s", "content": "plain note about ruff"})
            dirty = await client.call_tool("note", {"session_id": "s", "content": NOTES[0]})
            return clean, dirty

    clean, dirty = anyio.run(main_)
    assert not clean.is_error and not dirty.is_error
    assert clean.structured_content["result"] == 1
    text = dirty.content[0].text
    assert "note 2 held secret material" in text and PW not in text and "\n" not in text
    assert_clean(store, PW)


def test_hook_harvest_stores_redacted_and_logs(tmp_path):
    from consolidate.agents.hooks.full import run_hook

    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "assistant", "uuid": "u1", "message": {
        "content": [{"type": "text", "text": f"Logged in; the staging password is {PW}, noted for later."}]}}) + "\n",
        encoding="utf-8")
    st = tmp_path / ".memofs"
    run_hook(st, payload={"hook_event_name": "SessionEnd", "session_id": "h", "transcript_path": str(transcript)},
             harvest_notes=True, spawn=False)
    store = Store(st, embedding="hash")
    [note] = store.sessions.notes("h")
    # the turn is kept (issue 21): the secret replaced, the rest of it still a note to judge
    assert PW not in note.content and REDACTED_KEY not in note.metadata
    assert note.content.startswith("Logged in; the staging password is [secret removed: ")
    assert note.content.endswith(", noted for later.") and note.metadata["secret_removed"]
    assert "held secret material" in (st / "logs" / "hook.log").read_text(encoding="utf-8")
    assert_clean(store, PW)


def test_aborted_session_never_held_the_secret(store):
    store.sessions.add_note("s", NOTES[1])
    store.sessions.end("s", "aborted")
    run_session(store, "s", outcome="aborted", chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert store.sessions.count("s") == 1
    assert_clean(store, KEY)


SHA = "3f9c2a7e1b4d5c6f7a8b9c0d1e2f3a4b5c6d7e8f"


@pytest.mark.parametrize("field", ["commit", "sha", "head_commit", "revision"])
def test_a_commit_id_in_its_field_is_no_secret(store, field):
    """A bare 40-hex value is key material to the gate; under a field that names a revision (read as
    ``commit: <sha>``, the gate's own context rule) it is a commit id: kept as written, and the note is
    consolidated (the timelines benchmark had every note of a session blocked by its ``commit``)."""
    store.sessions.add_note("s", "The nightly build is cut from release/2.x", flag=True, metadata={field: SHA})
    [note] = store.sessions.notes("s")
    assert note.metadata[field] == SHA and REDACTED_KEY not in note.metadata
    store.sessions.end("s", "success")
    plan = run_session(store, "s", chain_factory=lambda: JudgeChain([]), time_box=None)
    assert not [e for e in plan.events if e["event"] == "note.blocked"] and len(plan.writes()) == 1


@pytest.mark.parametrize("field, value", [("x", SHA), ("commit", KEY), ("token", SHA), ("sha", f"--password {PW}")])
def test_a_field_name_never_clears_a_key(store, field, value):
    """The field's name only clears a context-free key-material finding it explains: a bare hex under an
    unnamed or secret-named field, or a provider key or password under any name, stays a secret."""
    store.sessions.add_note("s", "The nightly build is cut from release/2.x", metadata={field: value})
    [note] = store.sessions.notes("s")
    assert note.metadata[REDACTED_KEY] and value not in json.dumps(note.metadata)


def test_redacted_note_is_blocked_at_consolidation(store):
    """Flagged or judged, a note redacted at write time is blocked (never judged, never stored), with
    the kinds and previews in its event."""
    store.sessions.add_note("s", NOTES[0], flag=True)
    store.sessions.add_note("s", NOTES[1])
    judge = ScriptedJudge(lambda note: keep(note.content))
    store.sessions.end("s", "success")
    plan = run_session(store, "s", chain_factory=lambda: JudgeChain([judge]), time_box=None)
    blocked = [e for e in plan.events if e["event"] == "note.blocked"]
    assert len(blocked) == 2 and judge.calls == 0
    assert {k for e in blocked for k in e["kinds"]} == {"secret-assignment", "openai-key"}
    assert all("chars>" in p for e in blocked for p in e["previews"])
    assert not plan.writes()


def test_prefilter_never_skips_a_secret_of_the_corpus():
    """The write-time gate skips scanning text in which the gate can find nothing (no import cost for
    an ordinary note); it must never skip a note the gate blocks."""
    from consolidate.rules.secrets import scan
    from consolidate.store.sessions.write_gate import worth_scanning
    from secret_corpus import load

    from test_secrets_multilingual import OTHER_SHAPES, SENTENCES

    texts = [e.text for seed in range(5) for e in load(seed)] + list(SENTENCES.values()) + OTHER_SHAPES
    missed = [t[:80] for t in texts if scan(t) and not worth_scanning(t)]
    assert missed == []


@pytest.mark.spawns
def test_plain_note_imports_no_gate(tmp_path):
    import subprocess
    import sys

    code = ("import sys; from consolidate import Store; s = Store(sys.argv[1], embedding='hash');"
            " s.sessions.add_note('s', 'Use pnpm, not npm: npm breaks the lockfile');"
            " s.sessions.add_note('s', 'the dev server listens on port 5173');"
            " print('consolidate.rules.secrets' in sys.modules, 'detect_secrets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / ".memofs")], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == ["False", "False"]
