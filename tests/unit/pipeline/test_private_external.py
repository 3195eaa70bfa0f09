"""Private spans never leave the session tier (issue 21 item 8); external content waits in quarantine
until confirmed or flagged (item 9). The judge records what it was sent; every store file outside the
session tier is searched for the private text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from consolidate import Store
from consolidate.pipeline.run import run_queue
from consolidate.rules.private_spans import MARK, only_private, strip
from consolidate.judges.scripted import ScriptedJudge

PRIVATE = "the client is Zorblax Industries"
KEEP = {"verdict": "keep", "type": "fact", "evidence": "observed-success", "confidence": "high", "reason": "scripted"}


def _outside_session_tier(store: Path, needle: str) -> list[str]:
    """Store files other than the session tier's SQLite files that hold ``needle``."""
    return [str(p) for p in store.rglob("*") if p.is_file() and not p.name.startswith("sessions.sqlite3")
            and needle.encode() in p.read_bytes()]


@pytest.mark.parametrize("text,expected", [
    (f"Staging is on port 8443 <private>{PRIVATE}</private> and restarts nightly",
     f"Staging is on port 8443 {MARK} and restarts nightly"),
    (f"A <PRIVATE>{PRIVATE}</Private> b < private >x</ private > c", f"A {MARK} b {MARK} c"),
    (f"Unclosed <private>{PRIVATE} and the rest", f"Unclosed {MARK}"),  # the safe side
    ("a stray </private> closing tag", "a stray  closing tag"),
    ("<privateer> is not a tag", "<privateer> is not a tag"),
    (f"多行\n<private>\n{PRIVATE}\n</private>\n終わり", f"多行\n{MARK}\n終わり"),
])
def test_strip(text, expected):
    assert strip(text) == expected
    assert PRIVATE not in strip(text)


def test_only_private():
    assert only_private(f"<private>{PRIVATE}</private>")
    assert only_private(f"  <private>{PRIVATE}</private> . ")
    assert not only_private(f"keep this <private>{PRIVATE}</private>")
    assert not only_private("no tags")


def test_private_spans_never_reach_the_judge_the_store_or_the_logs(tmp_path):
    store_path = tmp_path / ".memofs"
    s = Store(store_path, embedding="hash")
    seen: list[str] = []

    def script(note):
        seen.append(note.content)
        return {**KEEP, "statement": note.content.replace(MARK, "").strip()}

    s.sessions.add_note("p", f"Staging restarts nightly at 02:00 UTC <private>{PRIVATE}</private>")
    s.sessions.add_note("p", f"<private>{PRIVATE}, budget 40k</private>")  # nothing but private text
    s.sessions.add_note("p", f"The deploy runs blue-green on port 8443 <private>{PRIVATE}</private>", flag=True,
                        kind="fact", metadata={"section": f"ops <private>{PRIVATE}</private>"})
    s.sessions.end("p", "success")
    [plan] = run_queue(s, judges=[ScriptedJudge(script)])
    assert seen and not any(PRIVATE in t for t in seen)
    assert len(seen) == 1  # the all-private note was never judged
    active = sorted(r["document"] for r in s.longterm().with_status("active"))
    assert active == ["Staging restarts nightly at 02:00 UTC", f"The deploy runs blue-green on port 8443 {MARK}"]
    assert _outside_session_tier(store_path, "Zorblax") == []
    assert '"note.private"' in (store_path / "events" / "memory-events.jsonl").read_text()
    s.close()


def test_private_span_in_a_failed_session_stays_in_the_session_tier(tmp_path):
    store_path = tmp_path / ".memofs"
    s = Store(store_path, embedding="hash")
    s.sessions.add_note("f", f"The migration failed on the orders table <private>{PRIVATE}</private>", kind="failure")
    s.sessions.end("f", "failure", "tests red")
    run_queue(s, judges=["noop"])
    assert _outside_session_tier(store_path, "Zorblax") == []
    s.close()


@pytest.mark.spawns
def test_notice_and_hook_log_never_show_a_private_span(tmp_path):
    """A note holding a secret and a private span: the one-line notice the writer gets (and the
    hook log for a harvest) shows the private span replaced."""
    store_path = tmp_path / ".memofs"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    out = subprocess.run([sys.executable, "-m", "consolidate", "note", "--store", str(store_path), "--session", "n",
                          f"token {token} <private>{PRIVATE}</private>"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0 and "secret" in (out.stdout + out.stderr)
    assert "Zorblax" not in out.stdout + out.stderr
    t = tmp_path / "t.jsonl"
    entry = {"type": "user", "uuid": "u1", "message": {"content": f"password=Hunter2Hunter2! <private>{PRIVATE}</private>"}}
    t.write_text(json.dumps(entry) + "\n")
    payload = {"hook_event_name": "SessionEnd", "session_id": "h", "transcript_path": str(t)}
    subprocess.run([sys.executable, "-m", "consolidate", "hook", "--store", str(store_path), "--harvest", "--no-worker"],
                   input=json.dumps(payload), text=True, env=env, timeout=60, check=True)
    assert "Zorblax" not in (store_path / "logs" / "hook.log").read_text()


# -- external content --------------------------------------------------------------------------------

EXTERNAL = {"source": "transcript:assistant", "entry_type": "assistant", "external": True, "external_tools": ["WebFetch"]}
STATEMENT = "Next.js 15 fetch requests are not cached by default; opt in with force-cache"


def _judge():
    return ScriptedJudge({"Next.js": {**KEEP, "statement": STATEMENT}})


def _status(s: Store) -> str | None:
    rows = [r for r in s.longterm().all() if r["document"] == STATEMENT]
    return rows[0]["metadata"]["status"] if rows else None


def test_external_note_is_quarantined_on_a_judges_keep(tmp_path):
    s = Store(tmp_path / ".memofs", embedding="hash")
    s.sessions.add_note("e1", "Per the Next.js docs, fetch is not cached by default since 15", metadata=EXTERNAL)
    s.sessions.end("e1", "success")
    [plan] = run_queue(s, judges=[_judge()])
    assert _status(s) == "quarantined"
    [row] = [r for r in s.longterm().all() if r["document"] == STATEMENT]
    assert json.loads(row["metadata"]["provenance"])["external"] == ["WebFetch"]
    # the same page read again in another session is no confirmation
    s.sessions.add_note("e2", "Per the Next.js docs, fetch is not cached by default since 15", metadata=EXTERNAL)
    s.sessions.end("e2", "success")
    run_queue(s, judges=[_judge()])
    assert _status(s) == "quarantined"
    # an observation of the project's own (not external) in another session confirms it
    s.sessions.add_note("e3", "Checked in our app on Next.js 15: fetch is not cached unless force-cache is set",
                        metadata={"source": "transcript:assistant"})
    s.sessions.end("e3", "success")
    run_queue(s, judges=[_judge()])
    assert _status(s) == "active"
    s.close()


def test_flagged_external_note_is_written_active(tmp_path):
    s = Store(tmp_path / ".memofs", embedding="hash")
    s.sessions.add_note("f1", STATEMENT, flag=True, kind="fact", metadata=EXTERNAL)
    s.sessions.end("f1", "success")
    run_queue(s, judges=["noop"])
    assert _status(s) == "active"  # the agent's flag is its confirmation
    s.close()


def test_not_external_note_is_written_active(tmp_path):
    s = Store(tmp_path / ".memofs", embedding="hash")
    s.sessions.add_note("n1", "Per the Next.js docs, fetch is not cached by default since 15",
                        metadata={"source": "transcript:assistant"})
    s.sessions.end("n1", "success")
    run_queue(s, judges=[_judge()])
    assert _status(s) == "active"
    s.close()
