"""The judge fault matrix through the real pipeline (issue #3): the local CLI judge against the fake
CLIs in tests/support/fake_cli/, and the API judge against a loopback OpenAI-compatible server that answers
429. In every case: flagged notes are promoted, no unjudged note is written, the events tell
judged-keep / judged-drop / unjudged apart, and the run ends within its time box.

Filed before as tests/test_cli_judge.py (issue 3).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import sys
import time

import pytest

from consolidate.core.errors import ConfigError, JudgeUnavailable
from consolidate.pipeline.run import run_queue
from consolidate.judges.api import APIJudge
from consolidate.judges.base import JudgeContext, JudgeNote
from consolidate.judges.chain import JudgeChain
from consolidate.judges.cli import CHILD_ENV, CLIJudge, extract_verdicts, parse_output, schema
from consolidate.judges.scripted import ScriptedJudge

from conftest import DROP
from judge_server import JudgeServer, Reply
from paths import SUPPORT

FAKE = SUPPORT / "fake_cli"
_spec = importlib.util.spec_from_file_location("fake_cli_common", FAKE / "_common.py")
fake_common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_common)

FLAGGED = "Builds need Node 20; Node 22 breaks the native addon"
MAYBES = [
    "Remember: the cache key includes the lockfile hash, so installs are reproducible across machines",
    "[x] write the tests for the importer",
    "Remember that the staging database is reset every night at 02:00 UTC by the ops cron job",
    "looked at the open file for a while",
]
#: What the well-behaved fake answers for MAYBES (keep when the note says "remember").
CANNED = ["keep", "drop", "keep", "drop"]
TIME_BOX = 3.0
#: seconds the fake slow CLIs sleep (tests/support/fake_cli/slow.py, stubborn.py)
FAKE_SLEEP = 120.0


def fake(script: str, **kwargs) -> CLIJudge:
    """A CLI judge running ``python tests/support/fake_cli/<script>`` (absolute paths, this interpreter)."""
    return CLIJudge(f"template:{shlex.quote(sys.executable)} {shlex.quote(str(FAKE / script))}", **kwargs)


def events(store):
    return [json.loads(line) for line in store.events_path.read_text(encoding="utf-8").splitlines()]


def memories(store):
    got = store.longterm().collection.get(include=["metadatas"])
    return [m for m in got["metadatas"]]


def run(store, *judges, time_box=30.0, max_notes=20):
    s = store.sessions
    s.add_note("s1", FLAGGED, flag=True, kind="constraint")
    for text in MAYBES:
        s.add_note("s1", text)
    s.end("s1", "success")
    started = time.monotonic()
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain(list(judges), max_notes=max_notes), time_box=time_box)
    return plan, time.monotonic() - started


def outcomes(store, plan) -> list[str]:
    """Each maybe's outcome (keep|drop|unjudged), in MAYBES order, after checking the invariants:
    the flagged note is promoted, every memory comes from a flagged or judged-keep note, and each
    maybe has exactly one outcome event that agrees with the plan."""
    flagged = [n.id for n in plan.notes if n.flag]
    maybes = [n.id for n in plan.notes if not n.flag]
    assert len(flagged) == 1 and len(maybes) == len(MAYBES)
    status = plan.note_status
    allowed = set(flagged) | {i for i in maybes if status[i] == "keep"}
    mems = memories(store)
    promoted = [m for m in mems if m["source"] == "flagged"]
    assert promoted and json.loads(promoted[0]["provenance"])["note_ids"] == flagged
    for m in mems:
        ids = json.loads(m["provenance"])["note_ids"]
        assert set(ids) <= allowed, f"memory from a note that was not flagged or judged keep: {m}"
    kinds = {"note.judged_keep": "keep", "note.judged_drop": "drop", "note.unjudged": "unjudged"}
    seen: dict[int, list[str]] = {i: [] for i in maybes}
    for e in events(store):
        if e["event"] in kinds:
            for i in e["note_ids"]:
                seen[i].append(kinds[e["event"]])
    for i in maybes:
        assert seen[i] == [status[i]], (i, seen[i], status[i])
    return [status[i] for i in maybes]


def unjudged_reasons(store) -> list[str]:
    return [" | ".join(e["judge_reasons"]) for e in events(store) if e["event"] == "note.unjudged"]


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


# -- the CLI judge: answers that count ------------------------------------------------------------


@pytest.mark.spawns
@pytest.mark.parametrize("script,parsed_from", [("answer.py", "json"), ("fenced.py", "fence"),
                                                ("rawnewline.py", "json+control-chars")])
def test_valid_answers_are_judged(store, script, parsed_from):
    judge = fake(script)
    plan, _ = run(store, judge)
    assert outcomes(store, plan) == CANNED
    call = next(e for e in events(store) if e["event"] == "judge.call")
    assert call["judge"] == "cli:template" and call["answered"] == 4 and call["parsed_from"] == parsed_from
    assert call["seconds"] >= 0 and call["exit_code"] == 0
    kept = [m for m in memories(store) if m["source"].startswith("judge:cli:template")]
    assert len(kept) == 2


@pytest.mark.spawns
def test_claude_preset_envelope_through_path(store, tmp_path, monkeypatch, claude_on_path):
    """The real ``claude`` preset argv against a stand-in ``claude`` on PATH that checks the flags and
    prints Claude Code's print-mode envelope."""
    judge = CLIJudge("claude")
    assert judge.available()[0]
    plan, _ = run(store, judge)
    assert outcomes(store, plan) == CANNED
    call = next(e for e in events(store) if e["event"] == "judge.call")
    assert call["parsed_from"] == "envelope-structured_output" and call["cost"] == 0.0012
    assert call["prompt_tokens"] == 900
    assert {m["source"] for m in memories(store)} == {"flagged", "judge:cli:claude"}


# -- the CLI judge: faults ------------------------------------------------------------------------


@pytest.mark.spawns
@pytest.mark.parametrize("script,kind,says", [
    ("prose.py", "judge-output-invalid", "no JSON in the output"),
    ("nonzero.py", "judge-unavailable", "exit 2: fake-cli: error: model 'nope' not found"),
    ("crash.py", "judge-unavailable", "exit 1: RuntimeError: fake CLI crashed mid-answer"),
])
def test_faults_leave_maybes_unjudged(store, script, kind, says):
    plan, _ = run(store, fake(script))
    assert outcomes(store, plan) == ["unjudged"] * 4
    for reason in unjudged_reasons(store):
        assert kind in reason and says in reason
    failed = [e for e in events(store) if e["event"] == "judge.failed"]
    assert [e["kind"] for e in failed] == [kind]
    assert not [e for e in events(store) if e["event"] == "note.judged_drop"]


def test_missing_executable_is_unavailable(store):
    judge = CLIJudge("template:/nonexistent/consolidate-fake-cli --json")
    assert judge.available() == (False, "/nonexistent/consolidate-fake-cli not on PATH")
    plan, _ = run(store, judge)
    assert outcomes(store, plan) == ["unjudged"] * 4
    assert all("judge-unavailable" in r and "not on PATH" in r for r in unjudged_reasons(store))
    assert judge.calls == 0


@pytest.mark.spawns
@pytest.mark.parametrize("script", ["slow.py", "stubborn.py"])
def test_timeout_kills_the_process_group_within_the_time_box(store, script):
    judge = fake(script)
    plan, elapsed = run(store, judge, time_box=TIME_BOX)
    # ended by its time box, not by the judge (which sleeps FAKE_SLEEP): a bound relative to the judge's
    # own sleep, so a loaded machine cannot fail it (the guide: no test asserts an absolute time)
    assert elapsed < FAKE_SLEEP / 2, elapsed
    assert judge.last_pgid and group_gone(judge.last_pgid)
    assert outcomes(store, plan) == ["unjudged"] * 4
    assert all("judge-timeout" in r for r in unjudged_reasons(store))
    [failed] = [e for e in events(store) if e["event"] == "judge.failed"]
    assert failed["kind"] == "judge-timeout" and failed["seconds"] < TIME_BOX + 1.5


@pytest.mark.spawns
def test_partial_answer_passes_the_rest_to_the_next_judge(store):
    second = ScriptedJudge(default=DROP, name="second")
    judge = fake("half.py")
    plan, _ = run(store, judge, second)
    # half.py answers the first half of each batch: n1, n2; asked again for n3, n4 it answers n3
    assert outcomes(store, plan) == ["keep", "drop", "keep", "drop"]
    judged_by = [e["judge"] for e in events(store) if e["event"] in ("note.judged_keep", "note.judged_drop")]
    assert judged_by == ["cli:template", "cli:template", "cli:template", "second"]
    assert judge.calls == 2 and second.batches == [["n4"]]
    [reask] = [e for e in events(store) if e["event"] == "judge.reask"]
    assert reask["judge"] == "cli:template" and reask["batch_size"] == 2


@pytest.mark.spawns
def test_unknown_ids_are_ignored_and_logged(store):
    second = ScriptedJudge(default=DROP, name="second")
    plan, _ = run(store, fake("unknown.py"), second)
    assert outcomes(store, plan) == ["drop"] * 4
    problems = next(e for e in events(store) if e["event"] == "judge.output_problems")["problems"]
    assert any("unknown id 'n91'" in p for p in problems)
    assert second.batches == [["n1", "n2", "n3", "n4"]]
    assert not [m for m in memories(store) if m["source"].startswith("judge:cli")]


@pytest.mark.spawns
def test_failed_judge_is_skipped_for_the_rest_of_the_run(store):
    down = fake("nonzero.py")
    second = ScriptedJudge(default=DROP, name="second")
    plan, _ = run(store, down, second, max_notes=2)
    assert outcomes(store, plan) == ["drop"] * 4
    assert down.calls == 1 and second.calls == 2
    assert [e["judge"] for e in events(store) if e["event"] == "judge.failed"] == ["cli:template"]


@pytest.mark.spawns
def test_failed_judge_alone_second_batch_says_skipped(store):
    down = fake("nonzero.py")
    plan, _ = run(store, down, max_notes=2)
    assert outcomes(store, plan) == ["unjudged"] * 4
    reasons = unjudged_reasons(store)
    assert all("exit 2" in r for r in reasons[:2])
    assert all("skipped (failed earlier in this run: judge-unavailable)" in r for r in reasons[2:])
    assert down.calls == 1


# -- the CLI judge: units -------------------------------------------------------------------------


def test_presets_ask_for_structured_output_and_disable_hooks():
    argv = CLIJudge("claude:sonnet").argv()
    assert argv[:4] == ["claude", "-p", "--output-format", "json"]
    assert json.loads(argv[argv.index("--json-schema") + 1]) == schema()
    assert json.loads(argv[argv.index("--settings") + 1]) == {"disableAllHooks": True}
    assert argv[-2:] == ["--model", "sonnet"]
    assert "--model" not in CLIJudge("claude").argv()
    assert CLIJudge("llm").argv()[:2] == ["llm", "--schema"] and CLIJudge("llm").argv()[-1] == "--no-log"
    assert CLIJudge("ollama:llama3.2:1b").argv() == ["ollama", "run", "llama3.2:1b", "--format", "json"]
    codex = CLIJudge("codex").argv("/tmp/s.json")
    assert codex[:2] == ["codex", "exec"] and codex[codex.index("--output-schema") + 1] == "/tmp/s.json"
    assert "$defs" not in json.dumps(schema()) and "verdicts" in schema()["properties"]
    t = CLIJudge("template:mycli --model {model} --schema-file {schema_file}", model="m1")
    assert t.argv("/tmp/f.json") == ["mycli", "--model", "m1", "--schema-file", "/tmp/f.json"]
    with pytest.raises(ConfigError, match="unknown preset"):
        CLIJudge("gemini")
    with pytest.raises(ConfigError, match="needs a command"):
        CLIJudge("template:")


@pytest.mark.spawns
def test_schema_file_is_written_and_removed(tmp_path):
    script = tmp_path / "cat_schema.py"
    script.write_text("import json, sys\nsys.stdin.read()\nschema = json.load(open(sys.argv[1]))\n"
                      "print(json.dumps({'verdicts': [{'id': 'n1', 'verdict': 'drop', 'reason': schema['title']}],"
                      " 'file': sys.argv[1]}))\n")
    judge = CLIJudge(f"template:{shlex.quote(sys.executable)} {shlex.quote(str(script))} {{schema_file}}")
    [v] = judge.judge([JudgeNote("n1", "x")], JudgeContext(), 10)
    assert v["reason"] == "Verdicts"


@pytest.mark.spawns
def test_child_env_marks_the_judge_and_guards_recursion(monkeypatch):
    judge = fake("answer.py")  # answer.py exits 3 unless CONSOLIDATE_JUDGE_CHILD=1 is set
    assert [v["verdict"] for v in judge.judge([JudgeNote("n1", "remember this fact about the build")],
                                              JudgeContext(), 10)] == ["keep"]
    monkeypatch.setenv(CHILD_ENV, "1")
    ok, why = judge.available()
    assert not ok and CHILD_ENV in why
    with pytest.raises(JudgeUnavailable):
        judge.judge([JudgeNote("n1", "x")], JudgeContext(), 10)


def test_ollama_needs_a_model(monkeypatch, tmp_path):
    monkeypatch.delenv("CONSOLIDATE_CLI_MODEL", raising=False)
    (tmp_path / "ollama").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "ollama").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert CLIJudge("ollama").available() == (False, "cli:ollama needs a model: cli:ollama:MODEL or CONSOLIDATE_CLI_MODEL")
    monkeypatch.setenv("CONSOLIDATE_CLI_MODEL", "qwen2.5:0.5b")
    assert CLIJudge("ollama").available()[0] and CLIJudge("ollama").model == "qwen2.5:0.5b"


def test_lenient_parsing():
    assert parse_output('{"verdicts": []}') == ({"verdicts": []}, "json")
    assert parse_output("Sure!\n```json\n[{\"id\": \"n1\", \"verdict\": \"drop\"}]\n```")[1] == "fence"
    assert parse_output('My answer: {"verdicts": [{"id": "n1", "verdict": "drop"}]} hope it helps')[1] == "prose"
    assert parse_output('{"verdicts": [{"id": "n1", "verdict": "drop", "reason": "a\nb"}]}')[1] == "json+control-chars"
    assert extract_verdicts({"id": "n1", "verdict": "drop"})[0] == [{"id": "n1", "verdict": "drop"}]
    envelope = {"type": "result", "is_error": False, "result": 'Here: ```json\n{"verdicts": []}\n```'}
    assert extract_verdicts(envelope) == ([], {"parsed_from": "envelope-result-fence"})
    with pytest.raises(JudgeUnavailable, match="Credit balance is too low"):
        extract_verdicts({"type": "result", "is_error": True, "result": "Credit balance is too low"})
    from consolidate.core.errors import JudgeOutputInvalid

    for bad in ("", "no json here", "[1, 2]", '{"answer": 42}'):
        with pytest.raises(JudgeOutputInvalid):
            extract_verdicts(parse_output(bad)[0])


# -- the API judge against a loopback server that rate-limits --------------------------------------


def _Server(fail_first: int | None, cut: bool = False) -> JudgeServer:
    """An OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1 (tests/support/judge_server.py) answering
    429 ``fail_first`` times (None: forever), then a tool call ``Verdicts`` with the fake CLI's canned
    verdicts (500 prompt tokens, 80 completion tokens); ``cut``: the answer JSON cut in the middle and
    the completion count at the cap, as llama.cpp answers a model stopped at max_tokens (its
    finish_reason stays tool_calls)."""
    def answer(prompt: str, body: dict):
        if fail_first is None or len(server.prompts) <= fail_first:
            return 429
        args = json.dumps({"verdicts": [fake_common.verdict(i, c) for i, c in fake_common.NOTE.findall(prompt)]})
        if cut:
            return Reply(args[:len(args) * 2 // 3], prompt_tokens=500, completion_tokens=body.get("max_tokens") or 80)
        return Reply(args, prompt_tokens=500, completion_tokens=80)

    server = JudgeServer(answer)
    return server


def _api_judge(base):
    return APIJudge(model="openai/local", api_base=base, api_key="sk-local-test")


def test_api_429_then_success(store):
    with _Server(fail_first=1) as server:
        plan, elapsed = run(store, _api_judge(server.base), time_box=20)
    assert server.requests >= 2
    assert outcomes(store, plan) == CANNED
    call = next(e for e in events(store) if e["event"] == "judge.call")
    assert call["judge"] == "api" and call["prompt_tokens"] == 500 and call["completion_tokens"] == 80
    assert {m["source"] for m in memories(store)} == {"flagged", "judge:api:openai/local"}


def test_api_answer_cut_at_max_tokens_keeps_its_complete_verdicts_and_counts_tokens(store):
    judge = _api_judge("")
    second = ScriptedJudge(default=DROP, name="second")
    with _Server(fail_first=0, cut=True) as server:
        judge.api_base = server.base
        plan, _ = run(store, judge, second, time_box=20)
    got = outcomes(store, plan)
    call = next(e for e in events(store) if e["event"] == "judge.call" and e["judge"] == "api")
    assert call["cut_at_max_tokens"] == call["completion_tokens"] == 4 * 150 + 200 and call["prompt_tokens"] == 500
    salvaged = call["salvaged"]
    assert 1 <= salvaged < 4 and call["answered"] == salvaged
    assert got[:salvaged] == CANNED[:salvaged]  # the verdicts the model completed stand
    # the rest was asked again once (the loopback server cuts that answer too), then went to the next judge
    assert [e["batch_size"] for e in events(store) if e["event"] == "judge.reask"] == [4 - salvaged]
    by = {e["note_ids"][0]: e["judge"] for e in events(store) if e["event"] in ("note.judged_keep", "note.judged_drop")}
    maybes = [n.id for n in plan.notes if not n.flag]
    for i in range(salvaged, 4):
        assert got[i] == (CANNED[i] if by[maybes[i]] == "api" else "drop")
    assert "second" in by.values()
    assert judge.usage["calls"] == 2 and judge.usage["prompt_tokens"] == 1000


def test_api_answer_cut_before_one_verdict_is_invalid_and_its_tokens_are_counted(store, monkeypatch):
    monkeypatch.setattr("consolidate.judges.api.salvage_objects", lambda text, key: [])
    judge = _api_judge("")
    with _Server(fail_first=0, cut=True) as server:
        judge.api_base = server.base
        plan, _ = run(store, judge, time_box=20)
    assert outcomes(store, plan) == ["unjudged"] * 4
    failed = next(e for e in events(store) if e["event"] == "judge.failed")
    assert failed["kind"] == "judge-output-invalid" and "before one complete verdict" in failed["reason"]
    assert failed["prompt_tokens"] == 500 and judge.usage["calls"] == 1


def test_api_429_forever_is_unjudged_with_reason(store):
    with _Server(fail_first=None) as server:
        plan, elapsed = run(store, _api_judge(server.base), time_box=8)
    assert server.requests >= 2  # retried, then gave up (returning at all shows it gave up)
    assert outcomes(store, plan) == ["unjudged"] * 4
    for reason in unjudged_reasons(store):
        assert "api: judge-unavailable" in reason and "RateLimitError" in reason
    assert [m["source"] for m in memories(store)] == ["flagged"]
