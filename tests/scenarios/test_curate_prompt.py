"""The curation prompt (prompts/curate-v1.md) through ``consolidate curate`` with a real model judge (the
recording model of tests/support/cassettes.py, behind llama.cpp's server), replayed from a cassette. What the
model answered, and what the pass made of it, is recorded beside the cassette; a changed prompt,
member line, schema or grouping misses the cassette and fails.

This pins the prompt and the path, not the quality of a 0.5B model's curation: whatever it answers is
checked like any answer (an answer naming ids outside the group or merging into a non-member defers
its group, nothing changes).

Re-record: CONSOLIDATE_RECORD=1 python -m pytest tests/scenarios/test_curate_prompt.py -q (starts the server on
127.0.0.1:8769; needs the ``record`` extra)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from consolidate.judges.api import APIJudge
from consolidate.judges.chain import JudgeChain
from consolidate.pipeline.curate import run_curate

from cassettes import CASSETTES, MODEL, RECORDING, REFRESH_EXPECTED, cassette_name, recorder
from cassettes import model_server as cassette_server
from test_curate import JUNK, OTHER, PNPM_A, PNPM_B, T30, T60, _by_text, _write
from consolidate.testing import keep
from paths import REPO

PROMPT_CASSETTES = {"curate-v1": ["curate-qwen05b.yaml"]}  # literal: read by the meta-test
PORT = 8769
API_BASE = f"http://127.0.0.1:{PORT}/v1"
PROMPT = REPO / "prompts" / "curate-v1.md"
RECORDED_ON = "2026-12-02"  # the day the cassette was recorded (its member lines' last confirmed date)
EXPECTED = CASSETTES / (Path(cassette_name("curate")).stem + ".expected.json")


@pytest.fixture(scope="module")
def model_server():
    """The recording server (see tests/support/cassettes.py: model_server); None when replaying."""
    with cassette_server(PORT) as base:
        yield base


def test_curation_with_recorded_model(store, model_server, monkeypatch):
    monkeypatch.setenv("CONSOLIDATE_CURATE_PROMPT_VERSION", "curate-v1")  # the version the cassette holds
    # the member lines carry each memory's last confirmed date: fixed to the recording's day, or the
    # request (and the cassette's match) would change with the day the test runs
    day = RECORDED_ON
    _write(store, "s1", {PNPM_A: keep(PNPM_A, "preference", who="the team"), JUNK: keep(JUNK), OTHER: keep(OTHER)}, day)
    _write(store, "s2", {PNPM_B: keep(PNPM_B, "preference", who="the team"), T30: keep(T30, "constraint")}, day)
    _write(store, "s3", {T60: keep(T60, "constraint")}, day)
    text = {r["id"]: t for t, r in _by_text(store).items()}
    judge = APIJudge(model=MODEL, api_base=API_BASE, api_key="sk-local", max_retries=0)
    with recorder().use_cassette(cassette_name("curate")):
        res = run_curate(store, chain_factory=lambda: JudgeChain([judge]), time_box=None)
    # the store's only curation pass (one that wrote nothing names no run, so its events are not picked by run id)
    events = [json.loads(x) for x in store.events_path.read_text().splitlines()]
    calls = [e for e in events if e["event"] == "judge.call" and e.get("stage") == "curate"]
    assert len(calls) == res.groups and all(c["prompt_tokens"] > 0 for c in calls)  # every group went to the model
    outcome = {
        "proposals": sorted([p["action"], p["statement"], text.get(p.get("into") or p.get("with") or "", None),
                             p["outcome"]] for p in res.proposals),
        "deferred": sorted(sorted(text[i] for i in d["memory_ids"]) for d in res.deferred),
        "active": sorted(t for t, r in _by_text(store).items() if r["metadata"]["status"] == "active"),
    }
    digest = "sha256:" + hashlib.sha256(PROMPT.read_bytes()).hexdigest()
    if RECORDING or REFRESH_EXPECTED:
        EXPECTED.write_text(json.dumps({"template_sha256": digest, **outcome}, indent=1, ensure_ascii=False) + "\n")
    expected = json.loads(EXPECTED.read_text())
    assert outcome == {k: expected[k] for k in outcome}
    # whatever the model answered, only what an applied proposal names has left the active set
    named = {x for p in outcome["proposals"] if p[3] == "applied" for x in (p[1], p[2] if p[0] == "conflict" else None)}
    assert set(text.values()) - set(outcome["active"]) <= named
