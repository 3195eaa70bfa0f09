"""A store of a few hundred memories made from real agent notes (../shared/data/realnotes, read at
run time, never copied): the store the browser tests of ``consolidate ui`` open
(tests/integration/test_ui_browser.py) and the quick tests of its pages (tests/unit/ui/test_ui.py).

:func:`build` imports :data:`SESSIONS`, ends each and runs the queue with a scripted judge that keeps
every note of more than a few words in its own words, with a type, evidence and confidence picked
by the note's position (so every type, evidence kind and status shows up), and drops the rest. One
run per session; every seventh kept note is a low-confidence inferred observation, which the write
policy quarantines (the review queue)."""

from __future__ import annotations

import json
from pathlib import Path

from consolidate import Store
from consolidate.pipeline.run import run_queue
from consolidate.testing import DROP, ScriptedJudge, keep

from conftest import REALNOTES

#: Sessions of ../shared/data/realnotes: four Cursor scratchpads and two Cline memory banks.
SESSIONS = ("sp-jetski", "sp-medicertai", "sp-financialiq", "sp-textwallet", "mb-travel-stipend", "mb-app-mcp")
FIELDS = {"decision": {"reason": "it was measured"}, "preference": {"who": "the user"},
          "recipe": {"command": "make test", "context": "the repository root"},
          "failure": {"symptom": "the build fails", "cause": "a stale lockfile"}}
TYPES = ("fact", "decision", "constraint", "preference", "recipe", "failure")


def _verdict(note) -> dict:
    """Keep a note of five words or more as it is written; the n-th note's type, evidence and
    confidence follow n (every seventh: inferred, low: quarantined)."""
    text = " ".join(note.content.split())
    if len(text.split()) < 5 or len(text) > 600:
        return DROP
    n = sum(map(ord, text)) % 1000
    type_ = TYPES[n % len(TYPES)]
    if n % 7 == 0:
        return keep(text, type_, evidence="inferred", confidence="low", **FIELDS.get(type_, {}))
    evidence = ("observed-success", "observed-failure", "user-stated")[n % 3]
    return keep(text, type_, evidence=evidence, confidence="high" if n % 2 else "medium", **FIELDS.get(type_, {}))


def build(path: Path, sessions: tuple[str, ...] = SESSIONS) -> Store:
    """A store at ``path`` with one run per session of ``sessions`` (hash embedding: fast, and the
    UI's search still finds words and identifiers through the lexical half of recall)."""
    store = Store(path, embedding="hash", project="realnotes")
    for sid in sessions:
        lines = (REALNOTES / "sessions" / f"{sid}.jsonl").read_text(encoding="utf-8").splitlines()
        notes = path.parent / f"{sid}.jsonl"
        notes.write_text("".join(json.dumps({"content": json.loads(x)["content"]}, ensure_ascii=False) + "\n"
                                 for x in lines if x.strip()), encoding="utf-8")
        store.sessions.import_jsonl(notes, sid)
        store.sessions.end(sid, "success")
        run_queue(store, judges=[ScriptedJudge(_verdict)], time_box=None)
    return store
