"""The judge contract written down (issue 20, item 1): consolidate.judges.base.BaseJudge declares every optional
part the chain and the stages use, with defaults; a plain judge object is seen through it
(consolidate.judges.base.as_judge); the shipped ScriptedJudge answers from a script or a handler; the prompts
are rendered in one module; the core imports the contract and the registry, never a concrete judge."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from consolidate import ConfigError, judges, run_queue
from consolidate.evals.judges import usage_of, usage_snapshot
from consolidate.judges import BaseJudge, ScriptedJudge, as_judge, registry
from consolidate.judges.base import Item, JudgeContext, Pair
from consolidate.judges.chain import JudgeChain
from paths import REPO

ROOT = REPO
KEEP = {"verdict": "keep", "statement": "Use pnpm, not npm", "type": "decision", "reason": "stated",
        "fields": {"reason": "the lockfile"}, "evidence": "user-stated"}


class OnlyJudges(BaseJudge):
    """The least subclass: a name and judge()."""

    name = "only"

    def judge(self, batch, context, timeout):
        return [{"id": n.id, **KEEP} for n in batch]


class Plain:
    """A plug-in that does not subclass BaseJudge: only what it chose to have."""

    def __init__(self):
        self.name, self.model, self.calls = "plain", "m1", 0
        self.last_call = {}
        self.usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}

    def judge(self, batch, context, timeout):
        self.calls += 1
        self.usage["prompt_tokens"] += 7
        self.last_call = {"prompt_tokens": 7, "completion_tokens": 3}
        return [{"id": n.id, **KEEP} for n in batch]


def test_the_defaults_of_the_contract():
    j = OnlyJudges()
    assert (j.model, j.prompt_version, j.answers_notes, j.api_base, j.api_key, j.usage) == (None, None, True, None,
                                                                                            None, None)
    assert dict(j.last_call) == {} and j.missing_keys() == []
    assert j.available() == (True, "no availability check (assumed available)")
    assert not j.can_compare
    with pytest.raises(NotImplementedError):
        j.compare([], JudgeContext(), None)
    with pytest.raises(TypeError):
        BaseJudge()  # judge() is the one thing a judge must have


@pytest.mark.parametrize("spec,compares,answers", [
    ("noop", False, False), ("rules", False, True), ("scripted", True, True),
    ("api:openai/gpt-4o-mini", True, True), ("cli:template:mycli --json", True, True)])
def test_every_built_in_judge_is_a_base_judge(spec, compares, answers):
    j = registry.load(spec)
    assert isinstance(j, BaseJudge) and as_judge(j) is j
    assert j.can_compare is compares and j.answers_notes is answers
    ok, why = j.available()
    assert isinstance(ok, bool) and isinstance(why, str) and why
    assert isinstance(j.name, str) and j.name


def test_a_subclass_with_only_judge_runs_and_is_not_asked_to_compare():
    comparer = ScriptedJudge(relations={"pnpm": "duplicate"}, name="comparer")
    chain = JudgeChain([OnlyJudges(), comparer])
    result = chain.run([Item(key=1, content="Use pnpm, not npm: npm breaks the lockfile")], JudgeContext())
    judged = result.judged[1]
    assert (judged.judge, judged.model, judged.prompt_version) == ("only", None, None)
    answered, events = chain.compare([Pair("k", "Use pnpm", "Use npm", "decision")], JudgeContext())
    assert answered == {"k": ("duplicate", "comparer")}
    assert [e["judge"] for e in events if e["event"] == "judge.call"] == ["comparer"]


def test_a_plain_object_is_seen_through_the_contract():
    plain = Plain()
    chain = JudgeChain([plain])
    seen = chain.judges[0]
    assert isinstance(seen, BaseJudge) and seen is not plain
    assert (seen.name, seen.model, seen.prompt_version, seen.answers_notes) == ("plain", "m1", None, True)
    assert not seen.can_compare and seen.calls == 0  # anything else it has reads through
    before = usage_snapshot(chain)
    result = chain.run([Item(key=1, content="Use pnpm, not npm: npm breaks the lockfile")], JudgeContext())
    assert plain.calls == 1 and result.judged[1].model == "m1"
    [call] = [e for e in result.events if e["event"] == "judge.call"]
    assert call["prompt_tokens"] == 7 and call["completion_tokens"] == 3  # its last_call, in the event
    assert usage_of(chain, result.events, 0.1, before)["prompt_tokens"] == 7  # its usage, by difference
    plain.model = "m2"  # read when asked, not copied when the chain was built
    assert chain.run([Item(key=2, content="Never push to main directly")], JudgeContext()).judged[2].model == "m2"


def test_availability_of_plain_and_broken_objects():
    assert registry.availability(Plain()) == (True, "no availability check (assumed available)")

    class Broken(Plain):
        def available(self):
            raise RuntimeError("oops")

    ok, why = registry.availability(Broken())
    assert not ok and "RuntimeError: oops" in why


def test_the_api_judge_names_the_provider_key_it_misses(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("CONSOLIDATE_API_BASE", raising=False)
    monkeypatch.delenv("CONSOLIDATE_API_KEY", raising=False)
    j = registry.load("api:openai/gpt-4o-mini")
    assert j.missing_keys() == ["OPENAI_API_KEY"]
    ok, why = registry.availability(j, probe=False)
    assert not ok and why.endswith("OPENAI_API_KEY not set")
    with_key = registry.load("api:openai/gpt-4o-mini")
    with_key.api_key = "sk-given"
    assert with_key.missing_keys() == []


def test_what_is_not_a_judge_is_refused_where_judges_are_configured(store):
    with pytest.raises(ConfigError, match="not a judge spec or a judge"):
        as_judge(object())
    with pytest.raises(ConfigError, match="not a judge spec or a judge"):
        registry.build_chain([object()])
    # a plug-in class found through the registry without a name gets its spec's name
    nameless = type("Nameless", (), {"judge": lambda self, b, c, t: []})()
    assert as_judge(nameless, name="myjudge").name == "myjudge"


def test_the_shipped_double_answers_from_a_handler(store):
    store.sessions.add_note("s1", "alpha note with some words")
    store.sessions.add_note("s1", "beta note with some words")
    store.sessions.end("s1", "success")
    seen = []

    def handler(batch, context):
        seen.append((len(batch), context.project))
        return [{"id": "n99", "verdict": "keep", "statement": "invented"}, {"id": "n2", "verdict": "drop"}]

    double = ScriptedJudge(handler=handler, name="handled")
    [plan] = run_queue(store, judges=[double])
    # the batch, then the note it left unanswered, asked once more (the chain's re-ask)
    assert seen == [(2, "testproj"), (1, "testproj")] and double.calls == 2
    assert sorted(plan.note_status.values()) == ["drop", "unjudged"]
    problems = next(e for e in plan.events if e["event"] == "judge.output_problems")["problems"]
    assert any("unknown id 'n99'" in p for p in problems)


def test_a_handler_that_raises_fails_soft(store):
    store.sessions.add_note("s1", "gamma note with some words")
    store.sessions.end("s1", "success")

    def handler(batch, context):
        raise ZeroDivisionError("oops")

    [plan] = run_queue(store, judges=[ScriptedJudge(handler=handler, name="buggy")])
    assert list(plan.note_status.values()) == ["unjudged"]
    failed = next(e for e in plan.events if e["event"] == "judge.failed")
    assert failed["kind"] == "judge-error" and "ZeroDivisionError" in failed["reason"]


def _judge_imports(path: Path) -> set[str]:
    """The modules of consolidate.judges the file imports (``from consolidate.judges import base``:
    ``consolidate.judges.base``)."""
    pkg, out = "consolidate.judges", set()

    def inside(name: str) -> bool:
        return name == pkg or name.startswith(pkg + ".")

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and inside(node.module or ""):
            out |= {node.module} if node.module != pkg else {f"{pkg}.{a.name}" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "consolidate":
            out |= {pkg for a in node.names if a.name == "judges"}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if inside(a.name)}
    return out


def test_the_core_imports_the_contract_and_the_registry_only():
    allowed = {"consolidate.judges.base", "consolidate.judges.registry"}
    # consolidate/testing.py ships the test doubles: it re-exports the scripted judge, and nothing else of judges;
    # rglob does not follow the consolidate/judges symlink, so the scan is the core without consolidate.judges
    found = {str(p.relative_to(ROOT)): _judge_imports(p) - allowed - ({"consolidate.judges.scripted"} if p.name == "testing.py" else set())
             for p in sorted((ROOT / "consolidate").rglob("*.py"))}
    assert _judge_imports(ROOT / "consolidate" / "testing.py") == {"consolidate.judges.scripted"}
    assert {k: v for k, v in found.items() if v} == {}
    assert any(_judge_imports(p) for p in (ROOT / "consolidate").rglob("*.py"))  # the scan sees imports


def test_prompts_are_rendered_in_one_module():
    from consolidate.judges import api, cli, prompting

    assert api.render_prompt is prompting.render_prompt and cli.render_prompt is prompting.render_prompt
    assert api.render_compare_prompt is cli.render_compare_prompt is prompting.render_compare_prompt
    assert api.Verdicts is cli.Verdicts is prompting.Verdicts
    for path in sorted((ROOT / "judges").glob("*.py")):
        if path.name == "prompting.py":
            continue
        text = path.read_text(encoding="utf-8")
        assert "load_prompt(" not in text and ".format(project=" not in text, path.name


def test_the_contract_is_public_and_documented():
    assert {"BaseJudge", "ScriptedJudge", "as_judge", "Judge"} <= set(judges.__all__)
    for name in ("judge", "compare", "available", "missing_keys"):
        assert inspect.getdoc(getattr(BaseJudge, name))
    doc = inspect.getdoc(judges.base)
    for part in ("name", "model", "prompt_version", "answers_notes", "api_base", "usage", "last_call",
                 "can_compare", "available()", "missing_keys()"):
        assert part in doc, part
