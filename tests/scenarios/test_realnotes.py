"""The main job on real agent notes: three sessions of ../shared/data/realnotes through the whole
pipeline with a real model judge (the recording model of tests/support/cassettes.py behind llama.cpp's
OpenAI-compatible server, through litellm + instructor), replayed offline from cassettes/.

Select it alone with ``-m realnotes``. Re-record with CONSOLIDATE_RECORD=1 (needs ``.[record]``): the
test then starts the server itself on 127.0.0.1.
"""

from __future__ import annotations

import json
import os

import pytest

from consolidate import Store
from consolidate.pipeline.run import run_queue
from consolidate.judges.api import APIJudge
from consolidate.judges.chain import JudgeChain

from cassettes import MODEL, RECORDING, cassette_name, echo_scrubber, recorder
from cassettes import model_server as cassette_server
from cassettes import no_reask_in_old_cassettes  # noqa: F401 - autouse: replay without re-asks
from conftest import REALNOTES

pytestmark = pytest.mark.realnotes

SESSIONS = ("sp-medicertai", "sp-jetski", "sp-financialiq")
PORT = 8765
API_BASE = f"http://127.0.0.1:{PORT}/v1"




@pytest.fixture(scope="module")
def model_server():
    """The recording server (see tests/support/cassettes.py: model_server); None when replaying."""
    with cassette_server(PORT) as base:
        yield base


def _flag_lessons(src, dst):
    """Copy a session file, flagging the notes of its Lessons sections (what an agent would flag)."""
    flagged = 0
    with open(src, encoding="utf-8") as fin, open(dst, "w", encoding="utf-8") as fout:
        for line in fin:
            obj = json.loads(line)
            if "lesson" in (obj.get("section") or "").lower():
                obj["flag"] = True
                flagged += 1
            fout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    return flagged


def _store_with_sessions(path):
    store = Store(path, project="realnotes")
    flagged_total = 0
    for sid in SESSIONS:
        f = path.parent / f"{sid}.jsonl"
        flagged_total += _flag_lessons(REALNOTES / "sessions" / f"{sid}.jsonl", f)
        store.sessions.import_jsonl(f, sid)
        store.sessions.end(sid, "success")
    return store, flagged_total


def _run(store):
    judge = APIJudge(model=MODEL, api_base=API_BASE, api_key="sk-local", max_retries=0)
    return run_queue(store, chain_factory=lambda: JudgeChain([judge]), time_box=None)


def test_realnotes_whole_pipeline(tmp_path, model_server):
    if not REALNOTES.is_dir():
        pytest.skip(f"real notes not found at {REALNOTES} (../shared is absent)")
    # the model's answers echo the notes: every 40+ character run of note text is masked in the
    # cassette (tests/support/cassettes.py: echo_scrubber), so the project keeps none of their text
    corpus = "\n".join(json.loads(line)["content"] for sid in SESSIONS
                       for line in (REALNOTES / "sessions" / f"{sid}.jsonl").read_text(encoding="utf-8").splitlines()
                       if line.strip())
    name, scrub = cassette_name("realnotes"), echo_scrubber(corpus)
    if RECORDING:
        # Pass 1: every call live, saved masked. The run below is pass 2: the judge calls replay the
        # masked answers, and the contradiction calls built from those statements go live, so a
        # replay later sends exactly the requests recorded (pass 1's unused ones are dropped).
        (tmp_path / "prime").mkdir()
        prime, _ = _store_with_sessions(tmp_path / "prime" / ".memofs")
        with recorder().use_cassette(name, before_record_response=scrub):
            _run(prime)
        prime.close()
    (tmp_path / "run").mkdir()
    store, flagged_total = _store_with_sessions(tmp_path / "run" / ".memofs")
    assert flagged_total > 0
    with recorder().use_cassette(name, before_record_response=scrub,
                                 record_mode="new_episodes" if RECORDING else "none"):
        plans = _run(store)
    assert [p.session_id for p in plans] == list(SESSIONS)

    events = [json.loads(x) for x in store.events_path.read_text(encoding="utf-8").splitlines()]
    judged_keep = {(e["session_id"], i) for e in events if e["event"] == "note.judged_keep" for i in e["note_ids"]}
    flagged = {(e["session_id"], i) for e in events if e["event"] == "note.flagged" for i in e["note_ids"]}
    assert len(flagged) == flagged_total  # every flagged note was promoted to a candidate
    # the judge really ran: verdicts came back from the recorded model
    assert any(e["event"] in ("note.judged_keep", "note.judged_drop") for e in events)
    assert any(e["event"] == "judge.call" and e.get("prompt_tokens") for e in events)

    col = store.longterm().collection
    got = col.get(include=["documents", "metadatas"])
    assert got["ids"], "nothing graduated"
    sources = set()
    for doc, meta in zip(got["documents"], got["metadatas"]):
        prov = json.loads(meta["provenance"])
        for key in ("session_id", "run_id", "date", "evidence", "source", "reason", "note_ids"):
            assert prov.get(key), (key, prov)
        assert meta["type"] and meta["status"] and meta["tier"] and meta["confidence"] and meta["last_confirmed"]
        sources.add(meta["source"])
        # no unjudged note was written: every entry comes from a flag or a judged keep
        for nid in prov["note_ids"]:
            assert (prov["session_id"], nid) in flagged | judged_keep
        if meta["source"].startswith("judge:"):
            assert prov["prompt_version"] == "judge-v1"
    assert "flagged" in sources
    # every note of the three sessions ended in a recorded decision or waits for a judge
    for p in plans:
        assert len(p.note_status) == p.note_count
        # only the notes no judge answered stay, waiting for one (issue 12); the rest were cleaned
        assert store.sessions.count(p.session_id) == len(p.waiting)
    hits = store.longterm().search("what did we learn about deployment and configuration", k=3)
    assert hits


def test_the_old_cassettes_replay_without_re_asks():
    """The shared autouse fixture (tests/support/cassettes.py) applies to this module."""
    assert RECORDING or os.environ.get("CONSOLIDATE_REASK") == "0"
