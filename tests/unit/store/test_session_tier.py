"""The session tier: notes, TTLs, imports, session ends, and bad input that must lose nothing.

Filed before as tests/test_session.py.
"""

import json

import pytest

from consolidate.core.errors import BadInput, EmptyNote, InvalidImportLine, StoreCorrupt, UnknownSession
from consolidate.store.sessions.tier import MAX_NOTE_CHARS, parse_ttl


def test_note_round_trip(store):
    nid = store.sessions.add_note("s1", "Use pnpm, not npm", flag=True, kind="preference", ttl="20m", now=1000.0)
    [note] = store.sessions.notes("s1")
    assert note.id == nid and note.flag and note.kind == "preference"
    assert note.expires_at == pytest.approx(1000.0 + 1200)


def test_wal_mode(store):
    store.sessions.add_note("s1", "x y z note")
    assert store.sessions.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize("ttl,seconds", [("20m", 1200), ("2h", 7200), ("90", 90), ("1d", 86400), (30, 30)])
def test_parse_ttl(ttl, seconds):
    assert parse_ttl(ttl) == seconds


@pytest.mark.parametrize("ttl", ["soon", "-5m", "0", "5y"])
def test_parse_ttl_rejects(ttl):
    with pytest.raises(BadInput):
        parse_ttl(ttl)


@pytest.mark.parametrize("content", ["", "   ", "\n\t "])
def test_empty_note_rejected(store, content):
    with pytest.raises(EmptyNote):
        store.sessions.add_note("s1", content)
    assert store.sessions.count("s1") == 0


def test_megabyte_note(store):
    store.sessions.add_note("s1", "a" * MAX_NOTE_CHARS)  # at the limit: accepted
    with pytest.raises(BadInput, match="limit"):
        store.sessions.add_note("s1", "a" * (MAX_NOTE_CHARS + 1))
    assert store.sessions.count("s1") == 1


def test_import_keeps_metadata(store, tmp_path):
    f = tmp_path / "notes.jsonl"
    f.write_text(
        json.dumps({"id": "x-n1", "content": "Decided on WAL mode", "section": "Lessons", "flag": True, "kind": "decision"}) + "\n"
        + "\n"
        + json.dumps({"content": "second", "ttl": "5m"}) + "\n", encoding="utf-8")
    assert store.sessions.import_jsonl(f, "s1") == {"s1": 2}
    a, b = store.sessions.notes("s1")
    assert a.metadata == {"id": "x-n1", "section": "Lessons"} and a.flag and a.kind == "decision"
    assert b.expires_at is not None


def test_import_session_from_lines(store, tmp_path):
    f = tmp_path / "n.jsonl"
    f.write_text(json.dumps({"content": "a note here", "session_id": "from-line"}) + "\n", encoding="utf-8")
    assert store.sessions.import_jsonl(f) == {"from-line": 1}


@pytest.mark.parametrize("body,why", [
    (b'{"content": "ok"}\n{"content": "bad \xff byte"}\n', "invalid UTF-8"),
    (b'{"content": "ok"}\n{"section": "no content"}\n', "no `content`"),
    (b'{"content": "ok"}\n{"content": "   "}\n', "no `content`"),
    (b'{"content": "ok"}\nnot json\n', "invalid JSON"),
    (b'{"content": "ok"}\n["a list"]\n', "JSON object"),
])
def test_import_bad_line_imports_nothing(store, tmp_path, body, why):
    f = tmp_path / "bad.jsonl"
    f.write_bytes(body)
    with pytest.raises(InvalidImportLine, match=why) as info:
        store.sessions.import_jsonl(f, "s1")
    assert info.value.line == 2
    assert store.sessions.count("s1") == 0  # all or nothing


def test_import_missing_file(store, tmp_path):
    with pytest.raises(BadInput, match="cannot read"):
        store.sessions.import_jsonl(tmp_path / "nope.jsonl", "s1")


def test_end_queue_idempotent(store):
    store.sessions.add_note("s1", "a note")
    store.sessions.end("s1", "success", now=10)
    store.sessions.end("s1", "failure", "it broke", now=11)
    [row] = store.sessions.queued()
    assert row["outcome"] == "failure" and row["reason"] == "it broke"
    with pytest.raises(BadInput, match="unknown outcome"):
        store.sessions.end("s1", "meh")


def test_unknown_session(store):
    with pytest.raises(UnknownSession):
        store.sessions.require_known("nobody")


def test_corrupt_sqlite(tmp_path):
    from consolidate import Store

    folder = tmp_path / "st"
    folder.mkdir()
    (folder / "sessions.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreCorrupt):
        Store(folder).sessions.count("s1")


@pytest.mark.spawns
def test_a_note_after_its_session_ended_says_so_in_one_line(tmp_path):
    """``consolidate note`` to a session already ended and consolidated: the note is written (nothing
    lost) and one line says the session ended and how to end it again or start a new one; a note
    to an open session, or to one whose end is still queued (it goes with that run), says nothing."""
    import subprocess
    import sys

    def cli(*args):
        r = subprocess.run([sys.executable, "-m", "consolidate", *args, "--store", str(tmp_path / "s")],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert "ended" not in cli("note", "--session", "s1", "--flag", "The build uses make")
    cli("end", "--session", "s1", "--outcome", "success")
    assert "ended" not in cli("note", "--session", "s1", "--flag", "The linter is ruff")  # queued: goes with it
    cli("run", "--judge", "noop")
    out = cli("note", "--session", "s1", "--flag", "The docs use mkdocs")
    hint = [ln for ln in out.splitlines() if "already ended" in ln]
    assert len(hint) == 1 and "consolidate end --session s1" in hint[0] and "new session" in hint[0]
