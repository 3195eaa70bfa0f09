"""Every judge kind compares; updates are not conflicts (issue 12).

The contradiction check through the real pipeline with the MiniLM embedding, for the API judge
(against the scripted loopback server of tests/support/judge_server.py) and the CLI judge (``cli:template:``
running tests/support/fake_cli/modal.py). Both fakes keep every note as written and relate pairs by the same
rule (tests/support/fake_cli/_common.py: ``relation``): a new statement that says something changed updates
the old one; other numbers or negations contradict it; mostly the same words duplicate it."""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys

import pytest

from consolidate.pipeline.run import run_queue
from consolidate.judges.api import APIJudge, CompareAnswer, Relations, compare_model, render_compare_prompt
from consolidate.judges.base import JudgeContext
from consolidate.judges.chain import JudgeChain, Pair, compare_pairs
from consolidate.judges.cli import CLIJudge, extract_relations, schema
from consolidate.judges.scripted import ScriptedJudge

from conftest import keep
from judge_server import KIND_NOTE_LINE, JudgeServer, pairs_of
from paths import SUPPORT

FAKE = SUPPORT / "fake_cli"
MODAL = f"template:{shlex.quote(sys.executable)} {shlex.quote(str(FAKE / 'modal.py'))}"
_spec = importlib.util.spec_from_file_location("fake_cli_common_cmp", FAKE / "_common.py")
fake_common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_common)


def _answer(prompt, body):
    pairs = pairs_of(prompt)
    if pairs:
        return {"relations": [{"id": pid, "relation": fake_common.relation(new, old), "reason": "rule"}
                              for pid, _t, new, old in pairs]}
    return {"verdicts": fake_common.keep_all(KIND_NOTE_LINE.findall(prompt))}


class Judges:
    """A keep-everything judge of one kind that compares by rule."""

    def __init__(self, kind):
        self.kind = kind
        self.server = JudgeServer(_answer) if kind == "api" else None

    def __enter__(self):
        if self.server:
            self.server.__enter__()
        return self

    def __exit__(self, *exc):
        if self.server:
            self.server.__exit__(*exc)

    def judge(self):
        if self.kind == "api":
            return APIJudge(model="openai/local", api_base=self.server.base, api_key="sk-local-test")
        return CLIJudge(MODAL, env={"FAKE_CLI_MODE": "keepall", "FAKE_CLI_RELATION": "auto"})

    def chain(self):
        return lambda: JudgeChain([self.judge()])


@pytest.fixture(params=["api", "cli"])
def judges(request):
    with Judges(request.param) as j:
        yield j


def session(store, sid, text, judges, **note):
    store.sessions.add_note(sid, text, **note)
    store.sessions.end(sid, "success")
    [plan] = run_queue(store, chain_factory=judges.chain(), time_box=60)
    return plan


def active_docs(store):
    return sorted(r["document"] for r in store.longterm().active())


def archived(store):
    return {json.loads(p.read_text())["document"]: json.loads(p.read_text())
            for p in store.sub("archive").glob("mem-*.json")}


def compare_calls(plan):
    return [e for e in plan.events if e["event"] == "judge.call" and e.get("stage") == "contradiction"]


# -- the inputs of the issue -------------------------------------------------------------------------


@pytest.mark.spawns
def test_keep_everything_judge_update_supersedes_the_old_entry(minilm_store, judges):
    store = minilm_store
    session(store, "one", "Integration tests run against Postgres 15 in CI", judges)
    plan = session(store, "two", "Integration tests run against Postgres 16 in CI now; 15 is gone", judges)
    assert compare_calls(plan) and compare_calls(plan)[0]["judge"] == judges.judge().name
    assert active_docs(store) == ["Integration tests run against Postgres 16 in CI now; 15 is gone"]
    old = archived(store)["Integration tests run against Postgres 15 in CI"]
    new_id = store.longterm().active()[0]["id"]
    assert old["metadata"]["status"] == "superseded" and old["metadata"]["superseded_by"] == new_id
    [sup] = [e for e in plan.events if e["event"] == "memory.superseded"]
    assert sup["relation"] == "updates"
    hits = store.longterm().search("which Postgres version do the CI integration tests use", k=5)
    assert [h["document"] for h in hits] == ["Integration tests run against Postgres 16 in CI now; 15 is gone"]


@pytest.mark.spawns
def test_user_stated_indentation_update_supersedes_instead_of_disputing(minilm_store, judges):
    store = minilm_store
    session(store, "one", "Python files use 2-space indentation", judges, flag=True, kind="preference")
    plan = session(store, "two", "the user now wants 4-space indentation in Python files; 2 spaces is no longer allowed",
                   judges, flag=True, kind="preference")
    assert not [e for e in plan.events if e["event"] == "memory.disputed"]
    assert active_docs(store) == ["the user now wants 4-space indentation in Python files; 2 spaces is no longer allowed"]
    assert archived(store)["Python files use 2-space indentation"]["metadata"]["status"] == "superseded"
    hits = store.longterm().search("indentation in Python files", k=5)
    assert [h["document"] for h in hits][:1] == [
        "the user now wants 4-space indentation in Python files; 2 spaces is no longer allowed"]


@pytest.mark.spawns
def test_true_conflict_with_equal_evidence_is_disputed_and_shown(minilm_store, judges, capsys, monkeypatch):
    store = minilm_store
    session(store, "one", "The API gateway timeout is 30 seconds for every route", judges, flag=True, kind="constraint")
    plan = session(store, "two", "The API gateway timeout is 60 seconds for every route", judges, flag=True,
                   kind="constraint")
    assert [e["event"] for e in plan.events if e["event"] == "memory.disputed"] == ["memory.disputed"]
    rows = store.longterm().collection.get(include=["documents", "metadatas"])
    assert sorted(m["status"] for m in rows["metadatas"]) == ["disputed", "disputed"]
    # recall shows both, each with its [disputed] suffix, instead of nothing on the topic
    from consolidate.cli.main import main

    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "minilm")
    assert main(["--store", str(store.path), "recall", "API gateway timeout"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all(line.endswith("[disputed]") for line in out)
    assert {"30 seconds", "60 seconds"} <= {w for line in out for w in ("30 seconds", "60 seconds") if w in line}
    # and so does the SessionStart context
    context = store.sub("memory", "context.md").read_text(encoding="utf-8")
    assert context.count("[disputed]") == 2 and "30 seconds" in context and "60 seconds" in context


@pytest.mark.spawns
def test_reworded_duplicate_is_found_by_the_judge(minilm_store, judges):
    store = minilm_store
    session(store, "one", "The staging database is reset every night at 02:00 UTC", judges, flag=True, kind="fact")
    plan = session(store, "two", "Every night at 02:00 UTC the staging DB gets wiped and reset", judges, flag=True,
                   kind="fact")
    # below the near-exact rule, above the candidate similarity: the judge said duplicate
    assert compare_calls(plan)
    [rec] = [e for e in plan.events if e["event"] == "memory.reconfirmed"]
    assert "similarity" in rec["reason"]
    assert active_docs(store) == ["The staging database is reset every night at 02:00 UTC"]


# -- the rules beyond the inputs ---------------------------------------------------------------------


def test_weaker_update_is_quarantined_until_another_session_confirms_it(minilm_store):
    store = minilm_store
    relate = lambda pair: "updates" if "now" in pair.new else "duplicate"  # noqa: E731
    new = "The dev server now listens on port 5173; port 3000 is no longer used"
    inferred = ScriptedJudge({"dev server": keep(new, evidence="inferred", confidence="low")}, relations=relate)
    store.sessions.add_note("one", "The dev server listens on port 3000", flag=True, kind="fact",
                            metadata={"evidence": "observed-success"})
    store.sessions.end("one", "success")
    run_queue(store, chain_factory=lambda: JudgeChain([inferred]))
    store.sessions.add_note("two", "the dev server seems to be on 5173 now")
    store.sessions.end("two", "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([inferred]))
    [q] = [e for e in plan.events if e["event"] == "candidate.quarantined" and "updates" in e["reason"]]
    rows = {r["document"]: r["metadata"] for r in store.longterm().all()}
    assert rows[new]["status"] == "quarantined" and rows["The dev server listens on port 3000"]["status"] == "active"
    assert json.loads(rows[new]["provenance"])["updates"] == q["memory_id"]
    # a third session observes it again: the update becomes active, the old entry is superseded
    observed = ScriptedJudge({"dev server": keep(new, evidence="observed-success")}, relations=relate)
    store.sessions.add_note("three", "checked: the dev server answers on 5173 now, and 3000 refuses")
    store.sessions.end("three", "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([observed]))
    rows = {r["document"]: r["metadata"] for r in store.longterm().all()}
    assert rows[new]["status"] == "active" and "The dev server listens on port 3000" not in rows
    old = archived(store)["The dev server listens on port 3000"]["metadata"]
    assert old["status"] == "superseded" and old["superseded_by"] == store.longterm().active()[0]["id"]


def test_update_within_one_run_keeps_the_later_statement(minilm_store):
    store = minilm_store
    judge = ScriptedJudge(relations=lambda p: "updates" if "now" in p.new else None)
    store.sessions.add_note("one", "Builds need Node 18", flag=True, kind="constraint")
    store.sessions.add_note("one", "Builds now need Node 20; Node 18 support was dropped", flag=True, kind="constraint")
    store.sessions.end("one", "success")
    run_queue(store, chain_factory=lambda: JudgeChain([judge]))
    assert active_docs(store) == ["Builds now need Node 20; Node 18 support was dropped"]


@pytest.mark.spawns
def test_cli_compare_fails_soft_and_guesses_nothing(minilm_store):
    """A CLI judge that cannot answer the compare prompt (exit 1, then a time-out): an event, the
    pair left uncompared (``candidate.related``), both entries kept; never a guessed contradiction."""
    store = minilm_store
    down = CLIJudge(MODAL, env={"FAKE_CLI_MODE": "down"})
    store.sessions.add_note("one", "Integration tests run against Postgres 15 in CI", flag=True)
    store.sessions.end("one", "success")
    run_queue(store, chain_factory=lambda: JudgeChain([down]))
    store.sessions.add_note("two", "Integration tests run against Postgres 16 in CI now; 15 is gone", flag=True)
    store.sessions.end("two", "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([down]))
    [failed] = [e for e in plan.events if e["event"] == "judge.failed" and e.get("stage") == "contradiction"]
    assert failed["judge"] == "cli:template" and "429 rate limit" in failed["reason"]
    assert [e["event"] for e in plan.events if e["event"] == "candidate.related"] == ["candidate.related"]
    assert len(active_docs(store)) == 2
    slow = CLIJudge(f"template:{shlex.quote(sys.executable)} {shlex.quote(str(FAKE / 'slow.py'))}")
    store.sessions.add_note("three", "Integration tests run against Postgres 17 in CI now; 16 is gone", flag=True)
    store.sessions.end("three", "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([slow]), time_box=3)
    assert [e["kind"] for e in plan.events if e["event"] == "judge.failed" and e.get("stage") == "contradiction"] == [
        "judge-timeout"]
    assert len(active_docs(store)) == 3


def test_cli_judge_sends_the_compare_schema_and_reads_relations():
    judge = CLIJudge("claude")
    argv = judge.argv(None, compare_model(judge.compare_prompt_version))
    sent = json.loads(argv[argv.index("--json-schema") + 1])
    assert "relations" in sent["properties"] and "$defs" not in json.dumps(sent)
    assert "updates" in json.dumps(schema(CompareAnswer))
    envelope = {"type": "result", "is_error": False, "structured_output": {"relations": [{"id": "p1", "relation": "updates"}]}}
    assert extract_relations(envelope)[0] == [{"id": "p1", "relation": "updates"}]
    assert extract_relations([{"id": "p1", "relation": "duplicate"}])[0] == [{"id": "p1", "relation": "duplicate"}]


def test_relation_spellings():
    judge = ScriptedJudge(relations=lambda p: {"a": "update", "b": "Conflict", "c": "same"}[p.key])
    got, _ = compare_pairs(JudgeChain([judge]), [Pair(k, "n", "o", "fact") for k in "abc"], JudgeContext())
    assert {k: r for k, (r, _) in got.items()} == {"a": "updates", "b": "contradicts", "c": "duplicate"}


def test_compare_prompt_versions():
    pairs = [("p1", Pair("0", "Builds now need Node 20", "Builds need Node 18", "constraint"))]
    v2 = render_compare_prompt(pairs, JudgeContext(project="x"))
    v1 = render_compare_prompt(pairs, JudgeContext(project="x"), "contradiction-v1")
    assert "updates" in v2 and "updates" not in v1  # v1 is kept for provenance, unchanged
    assert compare_model("contradiction-v1") is Relations and compare_model("contradiction-v2") is CompareAnswer
    assert APIJudge(model="x").compare_prompt_version == CLIJudge("claude").compare_prompt_version == "contradiction-v2"


def test_keepers_of_one_run_typed_differently_are_compared(minilm_store):
    """The same rule kept from two notes of one run and typed twice (the failure that taught it and
    the constraint it gave) reaches the compare prompt as one pair with both types and is folded into
    one memory; a keeper far from both (below CROSS_TYPE_SIMILARITY) is not sent (issue 19: curators
    graded every duplicate of two 20-session end-to-end runs as such a cross-type pair)."""
    store = minilm_store
    seen = []

    def relation(pair):
        seen.append(pair)
        return "duplicate"

    judge = ScriptedJudge(relations=relation)
    store.sessions.add_note("one", "Never install home-manager with nix-env in the Dockerfile: the imperative install"
                            " clashed with the declarative one", flag=True, kind="failure")
    store.sessions.add_note("one", "home-manager is managed only declaratively in home.nix and is never installed with"
                            " nix-env in the Dockerfile", flag=True, kind="constraint")
    store.sessions.add_note("one", "The CI cache key includes the hash of the lockfile", flag=True, kind="fact")
    store.sessions.end("one", "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([judge]))
    assert [p.type for p in seen] == ["constraint / failure"]
    assert len(active_docs(store)) == 2 and "The CI cache key includes the hash of the lockfile" in active_docs(store)
    assert any(e["event"] == "candidate.duplicate" for e in plan.events)
