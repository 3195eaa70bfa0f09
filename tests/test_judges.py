"""Judges: the contract's validation, batching, the registry, the rules judge, the API judge offline."""

import socket

import pytest

from consolidate.errors import ConfigError, JudgeUnavailable
from judges import registry
from judges.api import APIJudge, Verdicts, render_prompt
from judges.base import JudgeContext, JudgeNote, validate_verdicts
from judges.chain import Item, JudgeChain, make_batches
from judges.rules import RulesJudge, guess
from judges.scripted import ScriptedJudge


def test_validate_verdicts_one_place():
    batch = [JudgeNote("n1", "a"), JudgeNote("n2", "b"), JudgeNote("n3", "c")]
    report = validate_verdicts(batch, [
        {"id": "n1", "verdict": "KEEP", "statement": "A standalone statement"},
        {"id": "n1", "verdict": "drop"},
        {"id": "n7", "verdict": "drop"},
        {"id": "n2", "verdict": "keep"},  # keep without a statement
        {"verdict": "drop"},
    ])
    assert set(report.verdicts) == {"n1"} and report.verdicts["n1"].verdict == "keep"
    assert report.missing(batch) == ["n2", "n3"]
    assert len(report.problems) == 4


def test_batches_bounded_by_count_and_characters():
    items = [Item(i, "x" * 100) for i in range(45)] + [Item(99, "y" * 50_000)] + [Item(100, "z")]
    batches = make_batches(items, max_notes=20, max_chars=12_000, max_note_chars=4_000)
    assert [len(b) for b in batches] == [20, 20, 5, 1, 1]
    big = batches[3][0][1]
    assert big.truncated_from == 50_000 and len(big.content) < 4_100
    assert [jn.id for _, jn in batches[1]][:3] == ["n1", "n2", "n3"]  # short ids restart per batch


def test_truncation_is_recorded_in_events(store):
    from consolidate.pipeline import run_queue

    store.sessions.add_note("s1", "word " * 10_000)
    store.sessions.end("s1", "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge(default={"verdict": "drop"})]))
    [drop] = [e for e in plan.events if e["event"] == "note.judged_drop"]
    assert drop["truncated_from"] == 50_000


def test_registry_specs_and_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv("CONSOLIDATE_JUDGES", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no agent CLI on PATH: the default chain has no CLI judge
    monkeypatch.chdir(tmp_path)
    assert registry.chain_specs() == ["api", "noop"]
    monkeypatch.setenv("CONSOLIDATE_JUDGES", "rules, noop")
    assert registry.chain_specs() == ["rules", "noop"]
    assert registry.chain_specs(["api:openai/x"]) == ["api:openai/x"]
    assert registry.load("api:openai/x").model == "openai/x"
    with pytest.raises(ConfigError, match="unknown judge"):
        registry.load("nope")
    assert {"noop", "rules", "scripted", "api"} <= set(registry.installed())


def test_rules_judge_guesses():
    assert guess("[x] implement login")["verdict"] == "drop"
    assert guess("Should we use Redis?")["verdict"] == "drop"
    d = guess("Chose Redis over Postgres for sessions because lookups happen on every request")
    assert d["verdict"] == "keep" and d["type"] == "decision" and d["fields"]["reason"].startswith("because")
    f = guess("The build failed because the lockfile was out of date")
    assert f["type"] == "failure" and f["evidence"] == "observed-failure"
    assert RulesJudge().judge([JudgeNote("n1", "The user prefers tabs over spaces in every file")], None, 1)[0]["type"] == "preference"


def test_api_judge_unavailable_without_model(monkeypatch):
    for var in ("CONSOLIDATE_API_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    judge = APIJudge()
    ok, why = judge.available()
    assert not ok and "CONSOLIDATE_API_MODEL" in why
    with pytest.raises(JudgeUnavailable):
        judge.judge([JudgeNote("n1", "x")], JudgeContext(), 5)


def test_api_judge_connection_refused_is_unavailable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens
    judge = APIJudge(model="openai/none", api_base=f"http://127.0.0.1:{port}/v1", api_key="sk-local", max_retries=0)
    with pytest.raises(JudgeUnavailable):
        judge.judge([JudgeNote("n1", "x")], JudgeContext(), 20)


def test_verdicts_parse_raw_control_characters():
    raw = '{"verdicts": [{"id": "n1", "verdict": "keep", "statement": "line one\nline two", "reason": "r"}]}'
    from judges import api

    api._LENIENT.parsed = False
    parsed = Verdicts.model_validate_json(raw)
    assert parsed.verdicts[0].statement == "line one\nline two"
    assert api._LENIENT.parsed  # recorded, and reported as parsed_leniently in the judge.call event


def test_prompt_has_notes_ids_and_core():
    text = render_prompt([JudgeNote("n1", "Use pnpm", section="Lessons")], JudgeContext(core="- never push to main", project="p"))
    assert "[n1] (section: Lessons) Use pnpm" in text and "never push to main" in text and '"p"' in text


def test_compare_answers_for_unknown_pairs_and_relations_are_logged_not_used():
    from judges.chain import Pair, compare_pairs

    class Garbled:
        name, model, prompt_version = "garbled", None, None

        def compare(self, pairs, context, timeout):
            return [{"id": "p1", "relation": "contradicts"}, {"id": "p1", "relation": "duplicate"},
                    {"id": "p9", "relation": "duplicate"}, {"id": "2", "relation": "maybe"}, "prose"]

    pairs = [Pair("a", "timeout is 60 s", "timeout is 30 s", "fact"), Pair("b", "uses pnpm", "uses npm", "fact")]
    answered, events = compare_pairs(JudgeChain([Garbled()]), pairs, JudgeContext())
    assert answered == {"a": ("contradicts", "garbled")}  # b: its only answer named no known relation
    [problems] = [e for e in events if e["event"] == "judge.output_problems"]
    assert problems["stage"] == "contradiction" and len(problems["problems"]) == 4
    text = " ".join(problems["problems"])
    assert "second relation for pair 'p1'" in text and "unknown pair id 'p9'" in text
    assert "unknown relation 'maybe' for pair 'p2'" in text and "not an object" in text
