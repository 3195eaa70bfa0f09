"""The compare prompts (prompts/contradiction-v1.md, and contradiction-v2.md which tells an update from
a conflict) through the whole pipeline with a real model judge (the recording model of
tests/support/cassettes.py) behind llama.cpp's server, replayed from a cassette. The relations the model gave
are recorded beside the cassette; a changed prompt, parser or schema misses the cassette and fails.

Re-record: CONSOLIDATE_RECORD=1 python -m pytest tests/scenarios/test_contradiction_prompt.py -q (starts the
server on 127.0.0.1:8767)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from consolidate import Store
from consolidate.pipeline.run import run_queue
from consolidate.judges.api import APIJudge
from consolidate.judges.chain import JudgeChain

from cassettes import CASSETTES, MODEL, RECORDING, REFRESH_EXPECTED, cassette_name, recorder
from cassettes import model_server as cassette_server
from cassettes import no_reask_in_old_cassettes  # noqa: F401 - autouse: replay without re-asks
from paths import REPO

PROMPT_CASSETTES = {"contradiction-v1": ["contradiction-qwen05b.yaml"],
                    "contradiction-v2": ["contradiction-v2-qwen05b.yaml"]}  # literal: read by the meta-test
PORT = 8767
API_BASE = f"http://127.0.0.1:{PORT}/v1"
PROMPTS = REPO / "prompts"
EXPECTED = CASSETTES / (Path(cassette_name("contradiction")).stem + ".expected.json")
EXPECTED_V2 = CASSETTES / (Path(cassette_name("contradiction-v2")).stem + ".expected.json")




@pytest.fixture(scope="module")
def model_server():
    """The recording server (see tests/support/cassettes.py: model_server); None when replaying."""
    with cassette_server(PORT) as base:
        yield base


def test_contradiction_check_with_recorded_model(tmp_path, model_server):
    store = Store(tmp_path / ".memofs", project="contra")
    store.sessions.add_note("a", "The API gateway timeout is 30 seconds for every route", flag=True, kind="constraint")
    store.sessions.end("a", "success")
    run_queue(store, judges=["noop"])
    store.sessions.add_note("b", "The API gateway timeout is 60 seconds for every route", flag=True, kind="constraint",
                            metadata={"evidence": "user-stated"})
    store.sessions.end("b", "success")
    judge = APIJudge(model=MODEL, api_base=API_BASE, api_key="sk-local", max_retries=0,
                     compare_prompt_version="contradiction-v1")  # the cassette was recorded with v1
    with recorder().use_cassette(cassette_name("contradiction")):
        [plan] = run_queue(store, chain_factory=lambda: JudgeChain([judge]), time_box=None)
    calls = [e for e in plan.events if e["event"] == "judge.call" and e.get("stage") == "contradiction"]
    assert len(calls) == 1 and calls[0]["prompt_tokens"] > 0  # the pair really went to the model
    outcome = sorted({e["event"] for e in plan.events} & {"memory.superseded", "memory.disputed", "candidate.rejected",
                                                          "memory.reconfirmed", "candidate.related"})
    docs = sorted(store.longterm().collection.get()["documents"])
    digest = "sha256:" + hashlib.sha256((PROMPTS / "contradiction-v1.md").read_bytes()).hexdigest()
    if RECORDING or REFRESH_EXPECTED:
        EXPECTED.write_text(json.dumps({"template_sha256": digest, "outcome": outcome, "documents": docs}, indent=1))
    expected = json.loads(EXPECTED.read_text())
    assert (outcome, docs) == (expected["outcome"], expected["documents"])


def test_update_and_conflict_with_recorded_model_v2(tmp_path, model_server):
    """contradiction-v2 (the default compare prompt): an update (Postgres 15 -> 16, "15 is gone"), a
    user's changed preference (2 -> 4 spaces, "no longer allowed") and a plain conflict (30 s vs 60 s)
    in one compare call; what the model answered is pinned in the expected file."""
    store = Store(tmp_path / ".memofs", project="contra")
    old = [("Integration tests run against Postgres 15 in CI", "fact"),
           ("Python files use 2-space indentation", "preference"),
           ("The API gateway timeout is 30 seconds for every route", "constraint")]
    new = [("Integration tests run against Postgres 16 in CI now; 15 is gone", "fact"),
           ("The user now wants 4-space indentation in Python files; 2 spaces is no longer allowed", "preference"),
           ("The API gateway timeout is 60 seconds for every route", "constraint")]
    for text, kind in old:
        store.sessions.add_note("a", text, flag=True, kind=kind)
    store.sessions.end("a", "success")
    run_queue(store, judges=["noop"])
    for text, kind in new:
        store.sessions.add_note("b", text, flag=True, kind=kind)
    store.sessions.end("b", "success")
    judge = APIJudge(model=MODEL, api_base=API_BASE, api_key="sk-local", max_retries=0)
    assert judge.compare_prompt_version == "contradiction-v2"
    with recorder().use_cassette(cassette_name("contradiction-v2")):
        [plan] = run_queue(store, chain_factory=lambda: JudgeChain([judge]), time_box=None)
    calls = [e for e in plan.events if e["event"] == "judge.call" and e.get("stage") == "contradiction"]
    assert len(calls) == 1 and calls[0]["prompt_tokens"] > 0 and calls[0]["batch_size"] == 3
    outcome = sorted((e["event"], e.get("relation", "")) for e in plan.events
                     if e["event"] in ("memory.superseded", "memory.disputed", "candidate.rejected",
                                       "memory.reconfirmed", "candidate.related", "candidate.quarantined"))
    rows = store.longterm().collection.get(include=["documents", "metadatas"])
    docs = sorted(f"{d} [{m['status']}]" for d, m in zip(rows["documents"], rows["metadatas"]))
    digest = "sha256:" + hashlib.sha256((PROMPTS / "contradiction-v2.md").read_bytes()).hexdigest()
    if RECORDING or REFRESH_EXPECTED:
        EXPECTED_V2.write_text(json.dumps({"template_sha256": digest, "outcome": outcome, "documents": docs}, indent=1))
    expected = json.loads(EXPECTED_V2.read_text())
    assert (outcome, docs) == ([tuple(x) for x in expected["outcome"]], expected["documents"])


def test_the_old_cassettes_replay_without_re_asks():
    """The shared autouse fixture (tests/support/cassettes.py) applies to this module."""
    assert RECORDING or os.environ.get("CONSOLIDATE_REASK") == "0"
