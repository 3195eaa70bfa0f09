"""The pipeline end to end with scripted judges: every stage's decision, every outcome, the store."""

import json
import subprocess
import sys
import textwrap

import networkx as nx
import pytest

from consolidate.store import graph as graphmod
from consolidate.pipeline.run import run_queue
from consolidate.rules.secrets import redact_preview
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import DROP, keep


def chain_of(*judges):
    return lambda: JudgeChain(list(judges))


def events(store):
    return [json.loads(line) for line in store.events_path.read_text(encoding="utf-8").splitlines()]


def memories(store):
    col = store.longterm().collection
    got = col.get(include=["documents", "metadatas"])
    return {i: (d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])}


def test_every_stage_decides(store):
    s = store.sessions
    s.add_note("s1", "The deploy script needs AWS_PROFILE=prod set", flag=True, kind="constraint")
    s.add_note("s1", "Chose SQLite over Postgres for the session tier because it needs no server")
    s.add_note("s1", "[x] write the tests")
    s.add_note("s1", "port for this run is 5173", ttl="1m", now=0.0)  # expired long ago
    key = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    s.add_note("s1", f"token {key} from my shell")
    s.end("s1", "success")
    judge = ScriptedJudge({
        "Chose SQLite": keep("The session tier uses SQLite, not Postgres, because it needs no server",
                             "decision", reason="it needs no server"),
        "[x]": DROP,
    })
    [plan] = run_queue(store, chain_factory=chain_of(judge))
    status = plan.note_status
    assert sorted(status.values()) == ["blocked", "drop", "flagged", "keep", "purged"]
    # the secret never reached the judge
    assert judge.calls == 1 and len(judge.batches[0]) == 2
    mems = memories(store)
    assert len(mems) == 2
    for doc, meta in mems.values():
        prov = json.loads(meta["provenance"])
        assert set(prov) == {"session_id", "run_id", "date", "evidence", "source", "prompt_version", "reason", "note_ids",
                             "valid_from", "origin"}  # origin: the notes' (model/credit.py), agent-judged here
        assert prov["origin"] == "agent-judged"
        assert meta["session_id"] == "s1" and meta["scope"] == "testproj" and meta["tier"] == "durable"
        assert key not in doc
    sources = sorted(m["source"] for _, m in mems.values())
    assert sources == ["flagged", "judge:scripted:script"]
    # the secret is nowhere in the store folder, only its redacted preview
    for path in store.path.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    blocked = [e for e in events(store) if e["event"] == "note.blocked"]
    assert blocked and blocked[0]["previews"] == [redact_preview(key, blocked[0]["kinds"][0])]
    # session rows cleaned, queue row done
    assert store.sessions.count("s1") == 0
    assert store.sessions.session_end("s1")["status"] == "done"
    # graph: memory nodes, the session node, derived_from and mentions edges
    g = graphmod.load(store.sub("graph"))
    assert isinstance(g, nx.MultiDiGraph)
    kinds = {d["kind"] for _, d in g.nodes(data=True)}
    assert kinds == {"memory", "session", "entity"}
    assert any(d["kind"] == "mentions" for *_, d in g.edges(data=True))
    assert sum(1 for *_, d in g.edges(data=True) if d["kind"] == "derived_from") == 2
    md = store.notes_md_path.read_text(encoding="utf-8")
    assert "SQLite" in md and "AWS_PROFILE" in md


@pytest.mark.spawns
def test_zero_rows_imports_nothing_heavy(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        from consolidate import Store, run_queue
        st = Store({str(tmp_path / 's')!r})
        st.sessions.end("idle", "success")
        plans = run_queue(st)
        assert plans[0].note_count == 0
        heavy = [m for m in ("chromadb", "litellm", "instructor", "onnxruntime", "pydantic") if m in sys.modules]
        print(",".join(heavy))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_judge_outage_promotes_flagged_and_writes_nothing_unjudged(store):
    store.sessions.add_note("s1", "Builds need Node 20; Node 22 breaks the native addon", flag=True, kind="constraint")
    store.sessions.add_note("s1", "The cache key includes the lockfile hash so installs are reproducible")
    store.sessions.end("s1", "success")
    down = ScriptedJudge(fail="unavailable", name="down")
    [plan] = run_queue(store, chain_factory=chain_of(down))
    assert sorted(plan.note_status.values()) == ["flagged", "unjudged"]
    mems = memories(store)
    assert [m["source"] for _, m in mems.values()] == ["flagged"]
    ev = events(store)
    unjudged = [e for e in ev if e["event"] == "note.unjudged"]
    assert unjudged and "judge-unavailable" in unjudged[0]["judge_reasons"][0]
    assert not [e for e in ev if e["event"] == "note.judged_drop"]  # unjudged is never a judged drop


def test_partial_answer_goes_to_next_judge_and_breaker(store):
    for i in range(4):
        store.sessions.add_note("s1", f"note number {i} about the build cache layout")
    store.sessions.end("s1", "success")
    half = ScriptedJudge(lambda n: DROP if n.id in ("n1", "n2") else None, name="half")
    second = ScriptedJudge(default=DROP, name="second")
    [plan] = run_queue(store, chain_factory=chain_of(half, second))
    assert list(plan.note_status.values()) == ["drop"] * 4
    judged_by = [e["judge"] for e in plan.events if e["event"] == "note.judged_drop"]
    assert judged_by == ["half", "half", "second", "second"]
    assert second.batches == [["n3", "n4"]]


def test_garbage_verdicts_are_ignored(store):
    store.sessions.add_note("s1", "alpha note with some words")
    store.sessions.add_note("s1", "beta note with some words")
    store.sessions.end("s1", "success")

    def garbage(batch, context):
        return [{"id": "n99", "verdict": "keep", "statement": "invented"}, {"id": "n1", "verdict": "maybe"},
                {"id": "n2", "verdict": "drop", "reason": "first"}, {"id": "n2", "verdict": "keep", "statement": "again"},
                "not a dict"]

    [plan] = run_queue(store, chain_factory=chain_of(ScriptedJudge(handler=garbage, name="garbage", model="x")))
    assert plan.note_status == {plan.notes[0].id: "unjudged", plan.notes[1].id: "drop"}
    problems = next(e for e in plan.events if e["event"] == "judge.output_problems")["problems"]
    assert any("unknown id 'n99'" in p for p in problems) and any("second verdict" in p for p in problems)


def test_judge_raising_plain_exception_is_contained(store):
    store.sessions.add_note("s1", "gamma note with some words")
    store.sessions.end("s1", "success")

    def buggy(batch, context):
        raise ZeroDivisionError("oops")

    [plan] = run_queue(store, chain_factory=chain_of(ScriptedJudge(handler=buggy, name="buggy")))
    assert list(plan.note_status.values()) == ["unjudged"]


def test_failure_outcome_promotes_nothing_and_keeps_rows(store):
    store.sessions.add_note("s1", "Migrations must run before the app starts", flag=True, kind="constraint")
    store.sessions.end("s1", "failure", "deploy rolled back")
    [plan] = run_queue(store, chain_factory=chain_of(ScriptedJudge(default=DROP)))
    assert store.sessions.count("s1") == 1
    ev = events(store)
    assert [e["event"] for e in ev][0] == "session.failed" and ev[0]["reason"] == "deploy rolled back"
    assert store.read_manifest() is None  # the recall index was never opened


def test_failed_session_keeps_rows_but_not_secrets(store):
    key = "sk-" + "proj-" + "Hx7Kd2Lq9Wm4Zr8Tn3Vb6Yc1Pf5Gs0Ja2Ue4Io7"
    store.sessions.add_note("f", f"exported OPENAI_API_KEY={key} in the shell", metadata={"context": f"key {key}"})
    store.sessions.add_note("f", "the deploy broke on the migration step")
    store.sessions.end("f", "failure", f"failed with {key}")
    run_queue(store, judges=["noop"])
    assert store.sessions.count("f") == 2  # rows kept...
    for path in store.path.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path  # ...but no secret anywhere


def test_aborted_touches_nothing_and_can_resume(store):
    store.sessions.add_note("s1", "Feature flags live in config/flags.toml", flag=True)
    store.sessions.end("s1", "aborted")
    run_queue(store)
    assert store.sessions.count("s1") == 1 and not store.events_path.exists()
    store.sessions.end("s1", "success")
    [plan] = run_queue(store, chain_factory=chain_of(ScriptedJudge()))
    assert plan.writes() and store.sessions.count("s1") == 0


def test_dry_run_writes_nothing(store):
    store.sessions.add_note("s1", "Use ruff for linting, configured in pyproject.toml", flag=True, kind="preference")
    store.sessions.end("s1", "success")
    [plan] = run_queue(store, dry_run=True, chain_factory=chain_of(ScriptedJudge()))
    assert plan.writes()
    assert not store.events_path.exists() and not store.sub("graph").exists()
    assert store.sessions.count("s1") == 1 and store.sessions.queued()


def test_duplicate_reconfirms_existing(store):
    text = "The API rate limit is 100 requests per minute per key"
    store.sessions.add_note("s1", text, flag=True, kind="constraint", metadata={"evidence": "inferred"})
    store.sessions.end("s1", "success")
    run_queue(store, chain_factory=chain_of(ScriptedJudge()))
    [(mid, (doc, meta))] = memories(store).items()
    assert meta["status"] == "quarantined" and meta["confidence"] == "low"
    # the same memory seen in another session: re-confirmed and promoted, not duplicated
    store.sessions.add_note("s2", text + ".", flag=True, kind="constraint", metadata={"evidence": "inferred"})
    store.sessions.end("s2", "success")
    [plan] = run_queue(store, chain_factory=chain_of(ScriptedJudge()))
    assert not plan.writes() and plan.reconfirmations[0].memory_id == mid
    mems = memories(store)
    assert len(mems) == 1 and mems[mid][1]["status"] == "active" and mems[mid][1]["confidence"] == "medium"


def test_duplicates_within_a_run_merge(store):
    for _ in range(2):
        store.sessions.add_note("s1", "Tests must run with TZ=UTC or the date fixtures fail", flag=True, kind="constraint")
    store.sessions.end("s1", "success")
    [plan] = run_queue(store, chain_factory=chain_of(ScriptedJudge()))
    assert len(plan.writes()) == 1 and len(plan.writes()[0].note_ids) == 2
    assert len(memories(store)) == 1


def test_write_policy_outcomes(store):
    """Judged keeps are rejected, made transient or quarantined by the policy; flagged notes are never
    demoted by wording: stored, with fields_missing when a field could not be filled."""
    s = store.sessions
    s.add_note("s1", "Decided to drop the legacy endpoints", flag=True, kind="decision")  # no reason
    s.add_note("s1", "42", flag=True)  # trivia, but flagged
    s.add_note("s1", "For now the staging DB is used for tests", flag=True)  # temporary, but flagged
    for n in ("maybe one", "maybe two", "maybe three", "maybe four"):
        s.add_note("s1", n, flag=False)
    s.end("s1", "success")
    judge = ScriptedJudge({
        "maybe one": keep("The search index is rebuilt nightly by cron on the worker host",
                          evidence="inferred", confidence="medium"),
        "maybe two": keep("Decided to retire the v1 API", type_="decision"),  # no reason
        "maybe three": keep("For now the staging DB serves the integration tests"),
        "maybe four": keep("17"),
    })
    [plan] = run_queue(store, chain_factory=chain_of(judge))
    outcomes = {e["event"] for e in plan.events}
    assert {"candidate.rejected", "candidate.transient", "candidate.quarantined", "candidate.fields_missing"} <= outcomes
    reasons = [e["reason"] for e in plan.events if e["event"] == "candidate.rejected"]
    assert any("needs reason" in r for r in reasons) and any("a bare number" in r for r in reasons)
    transient = [e for e in plan.events if e["event"] == "candidate.transient"]
    assert [plan.note(e["note_ids"][0]).content for e in transient] == ["maybe three"]
    mems = memories(store)
    by_doc = {doc: m for doc, m in mems.values()}
    assert set(by_doc) == {"The search index is rebuilt nightly by cron on the worker host",
                           "Decided to drop the legacy endpoints", "42", "For now the staging DB is used for tests"}
    assert by_doc["The search index is rebuilt nightly by cron on the worker host"]["status"] == "quarantined"
    assert by_doc["The search index is rebuilt nightly by cron on the worker host"]["confidence"] == "low"
    assert by_doc["Decided to drop the legacy endpoints"]["fields_missing"] == "reason"
    assert all(by_doc[d]["tier"] == "durable" and by_doc[d]["status"] == "active"
               for d in ("42", "For now the staging DB is used for tests"))
    assert "staging DB serves" in store.notes_md_path.read_text(encoding="utf-8")


def test_judge_text_with_secret_is_blocked(store):
    store.sessions.add_note("s1", "the service account setup for staging")
    store.sessions.end("s1", "success")
    leaked = "AKIA" + "IOSFODNN7EXAMPLQ"
    judge = ScriptedJudge(default=keep(f"Staging uses the access key {leaked} for uploads"))
    [plan] = run_queue(store, chain_factory=chain_of(judge))
    assert not plan.writes()
    assert any(e["event"] == "candidate.blocked" for e in plan.events)
    assert leaked not in store.events_path.read_text(encoding="utf-8")


def test_time_box_leaves_maybes_unjudged(store):
    store.sessions.add_note("s1", "Feature flags are read once at startup", flag=True)
    store.sessions.add_note("s1", "a maybe that needs a slow judge")
    store.sessions.end("s1", "success")
    slow = ScriptedJudge(default=DROP, latency=5.0)
    [plan] = run_queue(store, chain_factory=chain_of(slow), time_box=0.5)
    assert sorted(plan.note_status.values()) == ["flagged", "unjudged"]
    assert len(plan.writes()) == 1


def test_replay_of_interrupted_apply(store, monkeypatch):
    """A crash after the journal and Chroma steps: the next run finishes the job, no duplicates."""
    from consolidate.pipeline.stages import apply as apply_mod

    store.sessions.add_note("s1", "Images are stored in S3 under media/<year>/<month>/", flag=True)
    store.sessions.end("s1", "success")
    real = apply_mod._events

    def crash(*a, **k):
        raise SystemExit("simulated crash")

    monkeypatch.setattr(apply_mod, "_events", crash)
    with pytest.raises(SystemExit):
        run_queue(store, chain_factory=chain_of(ScriptedJudge()))
    assert list(store.sub("journal").glob("*.json"))
    monkeypatch.setattr(apply_mod, "_events", real)
    store.sessions.add_note("s2", "another session note", flag=False)
    store.sessions.end("s2", "success")
    run_queue(store, session_id="s2", chain_factory=chain_of(ScriptedJudge(default=DROP)))
    assert not list(store.sub("journal").glob("*.json"))
    assert len(memories(store)) == 1
    applied = [e for e in events(store) if e["event"] == "run.applied"]
    assert len(applied) == 2 and store.sessions.count("s1") == 0
