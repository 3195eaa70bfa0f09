"""Deferred judging and honest outcomes (issue 12): a note no judge answered waits in the session tier
for one, within its bound; the run says it was partial everywhere; a partial answer is asked again
once. Each input runs for the API judge (against a scripted loopback OpenAI-compatible server,
tests/support/judge_server.py) and for the CLI judge (``cli:template:`` running tests/support/fake_cli/modal.py)."""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys

import pytest

from consolidate import Store
from consolidate.pipeline.batch import run_batch
from consolidate.cli.main import main
from consolidate.pipeline.deferral import EXIT_PARTIAL
from consolidate.pipeline.run import run_queue
from consolidate.judges.api import APIJudge
from consolidate.judges.chain import JudgeChain
from consolidate.judges.cli import CLIJudge
from consolidate.judges.noop import NoopJudge
from consolidate.judges.scripted import ScriptedJudge

from conftest import DROP, keep
from judge_server import JudgeServer, notes_of
from paths import SUPPORT
from preloaded import run as run_preloaded

FAKE = SUPPORT / "fake_cli"
MODAL = f"template:{shlex.quote(sys.executable)} {shlex.quote(str(FAKE / 'modal.py'))}"
DAY = 86400.0
T0 = 1_780_000_000.0  # 2026-05-28


def verdict(note_id: str, content: str) -> dict:
    """The rule both fakes follow (tests/support/fake_cli/_common.py): keep a note that says "remember"."""
    if "remember" in content.lower():
        return {"id": note_id, "verdict": "keep", "statement": content.strip().rstrip(".") + ".", "type": "fact",
                "evidence": "observed-success", "confidence": "high", "reason": "says remember"}
    return {"id": note_id, "verdict": "drop", "reason": "no keyword"}


class Switch:
    """One judge kind (``api`` or ``cli``) whose behaviour a test switches between runs with
    ``mode``: ``all`` answers every note, ``half`` the first half of each batch, ``down`` fails
    (HTTP 503 / exit 1), ``429`` rate-limits (HTTP 429 / exit 1 saying so)."""

    def __init__(self, kind: str):
        self.kind = kind
        self.mode = "all"
        self.server: JudgeServer | None = None
        self.judges: list = []

    def __enter__(self):
        if self.kind == "api":
            self.server = JudgeServer(self._answer).__enter__()
        return self

    def __exit__(self, *exc):
        if self.server is not None:
            self.server.__exit__(*exc)

    def _answer(self, prompt, body):
        if self.mode == "down":
            return 503
        if self.mode == "429":
            return 429
        found = notes_of(prompt)
        if self.mode == "half":
            found = found[: (len(found) + 1) // 2]
        return {"verdicts": [verdict(i, c) for i, c in found]}

    def judge(self):
        if self.kind == "api":
            j = APIJudge(model="openai/local", api_base=self.server.base, api_key="sk-local-test",
                         max_retries=0 if self.mode == "down" else 2)
        else:
            j = CLIJudge(MODAL, env={"FAKE_CLI_MODE": "down" if self.mode in ("down", "429") else self.mode})
        self.judges.append(j)
        return j

    def chain(self):
        return lambda: JudgeChain([self.judge()])

    def spec_env(self) -> tuple[str, dict[str, str]]:
        """The ``--judge`` spec and environment that make the CLI build this judge."""
        if self.kind == "api":
            return "api:openai/local", {"CONSOLIDATE_API_BASE": self.server.base, "CONSOLIDATE_API_KEY": "sk-local-test"}
        return "cli:" + MODAL, {"FAKE_CLI_MODE": "down" if self.mode in ("down", "429") else self.mode}

    def prompts_notes(self) -> list[list[str]]:
        """The note texts of every judge prompt sent so far (API judge only)."""
        return [[c for _, c in notes_of(p)] for p in self.server.prompts]


@pytest.fixture(params=["api", "cli"])
def switch(request):
    with Switch(request.param) as s:
        yield s


def events(store):
    if not store.events_path.exists():
        return []
    return [json.loads(line) for line in store.events_path.read_text(encoding="utf-8").splitlines()]


def judged_events(store) -> dict[int, list[str]]:
    """note id -> the judge outcome events it got, over every run."""
    out: dict[int, list[str]] = {}
    for e in events(store):
        if e["event"] in ("note.judged_keep", "note.judged_drop"):
            for i in e["note_ids"]:
                out.setdefault(i, []).append(e["event"])
    return out


def memory_note_ids(store) -> list[int]:
    if not store.has_longterm:
        return []
    got = store.longterm().collection.get(include=["metadatas"])
    return [i for m in got["metadatas"] for i in json.loads(m["provenance"])["note_ids"]]


def add(store, sid, texts, flagged=()):
    ids = [store.sessions.add_note(sid, t) for t in texts]
    ids += [store.sessions.add_note(sid, t, flag=True, kind="constraint") for t in flagged]
    store.sessions.end(sid, "success")
    return ids


SIX = [
    "Remember: the cache key includes the lockfile hash, so installs are reproducible",
    "looked at the open file for a while",
    "Remember that the staging database is reset every night at 02:00 UTC",
    "[x] write the tests for the importer",
    "Remember: the CI runners have 2 cores, so the test suite runs with -n 2",
    "tried a few things with the formatter",
]


# -- a judge that answers 3 of a batch of 6 ---------------------------------------------------------


@pytest.mark.spawns
def test_partial_answer_is_asked_again_once_then_waits_then_is_judged(store, switch):
    ids = add(store, "s1", SIX)
    switch.mode = "half"
    [plan] = run_queue(store, chain_factory=switch.chain(), time_box=30)
    # 6 asked, 3 answered; the other 3 asked once more as a smaller batch, 2 answered; 1 waits
    [reask] = [e for e in plan.events if e["event"] == "judge.reask"]
    assert reask["batch_size"] == 3
    assert [e["batch_size"] for e in plan.events if e["event"] == "judge.call"] == [6, 3]
    assert plan.partial and [w["note_id"] for w in plan.waiting] == [ids[5]]
    assert store.sessions.session_end("s1")["status"] == "partial"
    assert [n.id for n in store.sessions.notes("s1")] == [ids[5]]  # not deleted: waiting
    assert ids[5] not in memory_note_ids(store)
    [partial] = [e for e in events(store) if e["event"] == "run.partial"]
    assert partial["waiting"] == 1 and partial["note_ids"] == [ids[5]]
    applied = [e for e in events(store) if e["event"] == "run.applied"][-1]
    assert applied["summary"]["partial"] is True and applied["summary"]["waiting"] == 1

    # the judge answers again: the next run judges that note, and only it
    switch.mode = "all"
    before = len(switch.server.prompts) if switch.server else None
    [plan2] = run_queue(store, chain_factory=switch.chain(), time_box=30)
    assert [n.id for n in plan2.notes] == [ids[5]] and not plan2.partial
    if switch.server:
        assert switch.prompts_notes()[before:] == [[SIX[5]]]
    assert {i: len(v) for i, v in judged_events(store).items()} == {i: 1 for i in ids}
    assert store.sessions.waiting() == {} and store.sessions.notes("s1") == []
    assert store.sessions.session_end("s1")["status"] == "done"


def test_reask_is_one_smaller_batch_only(store):
    """A judge that keeps answering half is asked at most twice per batch, then the chain moves on."""
    add(store, "s1", SIX)
    half = ScriptedJudge(lambda n: DROP if n.id in ("n1", "n2", "n3") else None, name="half")
    nxt = ScriptedJudge(default=DROP, name="next")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([half, nxt]))
    assert half.batches == [["n1", "n2", "n3", "n4", "n5", "n6"], ["n4", "n5", "n6"]]
    assert nxt.batches == [["n4", "n5", "n6"]] and not plan.partial
    # a judge that answers nothing, or fails, is not asked again
    store.sessions.add_note("s2", "another note about the build")
    store.sessions.end("s2", "success")
    none = ScriptedJudge(name="none")
    run_queue(store, chain_factory=lambda: JudgeChain([none]))
    assert none.calls == 1


# -- a judge that answers 429 until the time box ends ------------------------------------------------


@pytest.mark.spawns
def test_rate_limited_until_the_time_box_is_a_partial_run_everywhere(tmp_path, monkeypatch, capsys, switch):
    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / ".memofs"))
    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "hash")
    switch.mode = "429"
    spec, env = switch.spec_env()
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main(["note", "--session", "s1", SIX[0]]) == 0
    assert main(["note", "--session", "s1", SIX[1]]) == 0
    assert main(["note", "--session", "s1", "Never commit .env files", "--flag", "--kind", "constraint"]) == 0
    assert main(["end", "--session", "s1", "--outcome", "success"]) == 0
    capsys.readouterr()
    code = main(["run", "--judge", spec, "--time-box", "15"])  # litellm alone may take 5-10 s to import
    out = capsys.readouterr().out
    assert code == EXIT_PARTIAL == 75
    assert "PARTIAL" in out and "2 note(s) wait for a judge" in out and "exit 75" in out
    assert "no judge available" not in out  # a judge is there; it refused
    reasons = [r for e in events(Store(tmp_path / ".memofs", embedding="hash")) if e["event"] == "note.unjudged"
               for r in e["judge_reasons"]]
    # the API judge retries 429s inside the time box: it ends on the last 429 or on the time box
    said = ("RateLimitError", "judge-timeout") if switch.kind == "api" else ("429 rate limit",)
    assert reasons and all(any(s in r for s in said) for r in reasons), reasons
    if switch.server:
        assert switch.server.prompts  # it was asked, and answered 429
    # status, text and JSON
    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["waiting"]["notes"] == 2 and status["last_run"]["partial"] is True
    assert status["last_run"]["result"]["partial"] is True
    assert main(["status"]) == 0
    text = capsys.readouterr().out
    assert "waiting for a judge: 2 notes in 1 sessions" in text and "PARTIAL" in text
    # runs
    assert main(["runs"]) == 0
    assert "PARTIAL: 2 notes left waiting for a judge" in capsys.readouterr().out
    assert main(["runs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["partial"] is True
    # --json: the summary says partial too, and the exit code is the same
    switch.mode = "429"
    assert main(["run", "--judge", spec, "--time-box", "15", "--json"]) == EXIT_PARTIAL
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line)["summary"]["partial"] is True
    # the judge is back: exit 0, nothing waits
    switch.mode = "all"
    for k, v in switch.spec_env()[1].items():
        monkeypatch.setenv(k, v)
    assert main(["run", "--judge", spec, "--time-box", "20"]) == 0
    assert "PARTIAL" not in capsys.readouterr().out
    assert main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["waiting"]["notes"] == 0


# -- a fresh store, nothing reachable ---------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fresh_env(tmp_path, **extra) -> dict[str, str]:
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CONSOLIDATE_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "LITELLM_"))}
    # a fresh machine: no agent CLI on PATH, no key
    env.update({"PATH": f"{empty}{os.pathsep}/usr/bin{os.pathsep}/bin", "CONSOLIDATE_STORE": str(tmp_path / ".memofs"),
                "CONSOLIDATE_EMBEDDING": "hash", "HOME": str(tmp_path)}, **extra)
    return env


def _cli(env, *argv, cwd):
    """``python -m consolidate ARGV`` in a process forked from one with chromadb imported
    (tests/support/preloaded.py): its own environment (the fresh machine's PATH, HOME, no key), read
    by each command at run time."""
    return run_preloaded(list(argv), env=env, cwd=cwd, timeout=120)


@pytest.mark.spawns
@pytest.mark.parametrize("chain", ["default", "api", "cli"])
def test_nothing_reachable_says_so_first_and_loses_nothing(tmp_path, chain):
    extra = {"default": {},
             "api": {"CONSOLIDATE_JUDGES": "api", "CONSOLIDATE_API_MODEL": "openai/local",
                     "CONSOLIDATE_API_BASE": f"http://127.0.0.1:{_closed_port()}/v1", "CONSOLIDATE_API_KEY": "sk-x"},
             "cli": {"CONSOLIDATE_JUDGES": "cli:claude,noop"}}[chain]
    env = _fresh_env(tmp_path, **extra)
    for text in SIX[:4]:
        assert _cli(env, "note", "--session", "s1", text, cwd=tmp_path).returncode == 0
    assert _cli(env, "note", "--session", "s1", "Never commit .env files", "--flag", cwd=tmp_path).returncode == 0
    assert _cli(env, "end", "--session", "s1", "--outcome", "success", cwd=tmp_path).returncode == 0
    done = _cli(env, "run", cwd=tmp_path)
    first = done.stdout.splitlines()[0]
    assert first.startswith("no judge available") and "`consolidate judges`" in first, done.stdout
    assert "7 days" in first
    assert done.returncode == EXIT_PARTIAL, done.stderr
    st = Store(tmp_path / ".memofs", embedding="hash", create=False)
    assert len(st.sessions.waiting("s1")) == 4 and len(st.sessions.notes("s1")) == 4
    assert len(memory_note_ids(st)) == 1  # the flagged note only
    # a second run: still nothing to answer; it says so, exits 75, and nothing is lost
    again = _cli(env, "run", cwd=tmp_path)
    assert again.returncode == EXIT_PARTIAL and again.stdout.startswith("no judge available")
    assert "4 notes still wait for a judge" in again.stdout
    assert len(st.sessions.notes("s1")) == 4


# -- the scripted outage: down for one run, back for the next, 100 notes ----------------------------


@pytest.mark.spawns
def test_outage_then_back_every_note_judged_exactly_once(store, switch):
    texts = [f"Remember: service {i} listens on port {8000 + i}" if i % 5 == 0 else f"poked at module {i} a bit"
             for i in range(100)]
    ids = add(store, "s1", texts, flagged=["Never commit .env files", "Builds need Node 20"])
    switch.mode = "down"
    [plan] = run_queue(store, chain_factory=switch.chain(), time_box=60)
    assert plan.partial and len(plan.waiting) == 100
    assert judged_events(store) == {}
    assert len(memory_note_ids(store)) == 2  # the flagged notes; nothing unjudged written
    assert len(store.sessions.waiting("s1")) == 100

    switch.mode = "all"
    [plan2] = run_queue(store, chain_factory=switch.chain(), time_box=60)
    assert not plan2.partial and sorted(n.id for n in plan2.notes) == sorted(ids[:100])
    judged = judged_events(store)
    assert sorted(judged) == sorted(ids[:100]) and all(len(v) == 1 for v in judged.values())  # exactly once
    kept = sorted(i for i, v in judged.items() if v == ["note.judged_keep"])
    assert len(kept) == 20
    assert sorted(memory_note_ids(store)) == sorted(kept + ids[100:])  # no note written unjudged
    assert store.sessions.notes("s1") == [] and store.sessions.waiting() == {}  # none lost, none left
    if switch.server:  # the second run asked about exactly the 100 notes, each once
        sent = [t for p in switch.prompts_notes()[1:] for t in p]
        assert sorted(sent) == sorted(texts)


# -- the bound ----------------------------------------------------------------------------------------


def test_a_waiting_note_expires_at_its_bound_with_an_event(store):
    ids = add(store, "s1", SIX[:2])
    noop = lambda: JudgeChain([NoopJudge()])  # noqa: E731
    [plan] = run_queue(store, chain_factory=noop, now=T0)
    until = {w["note_id"]: w["until"] for w in plan.waiting}
    assert until == {ids[0]: T0 + 7 * DAY, ids[1]: T0 + 7 * DAY}
    # before the bound, with no judge that can answer: nothing to do, the notes stay
    assert run_queue(store, chain_factory=noop, now=T0 + 6.9 * DAY) == []
    assert len(store.sessions.notes("s1")) == 2
    # a judge that is there but fails: the notes stay, their bound does not move
    down = lambda: JudgeChain([ScriptedJudge(fail="timeout")])  # noqa: E731
    [plan] = run_queue(store, chain_factory=down, now=T0 + 3 * DAY)
    assert {w["note_id"]: w["until"] for w in plan.waiting} == until
    assert {w["attempts"] for w in store.sessions.waiting().values()} == {2}
    # at the bound: deleted unjudged, each with an event saying so, nothing written
    [plan] = run_queue(store, chain_factory=noop, now=T0 + 7 * DAY)
    expired = [e for e in events(store) if e["event"] == "note.expired_unjudged"]
    assert sorted(i for e in expired for i in e["note_ids"]) == ids
    assert all("without ever being judged" in e["reason"] and e["attempts"] == 2 for e in expired)
    assert store.sessions.notes("s1") == [] and store.sessions.waiting() == {}
    assert not plan.partial and store.sessions.session_end("s1")["status"] == "done"
    assert memory_note_ids(store) == []


def test_the_bound_is_configurable(store, monkeypatch):
    ids = add(store, "s1", SIX[:1])
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([NoopJudge()]), now=T0, wait_days=2)
    assert plan.waiting[0]["until"] == T0 + 2 * DAY
    monkeypatch.setenv("CONSOLIDATE_WAIT_DAYS", "0.5")
    add(store, "s2", SIX[1:2])
    plans = run_queue(store, chain_factory=lambda: JudgeChain([NoopJudge()]), now=T0)
    assert [p.waiting[0]["until"] for p in plans] == [T0 + 0.5 * DAY]
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([NoopJudge()]), now=T0 + 0.5 * DAY)
    assert plan.session_id == "s2" and plan.note_status == {ids[0] + 1: "expired"}


def test_batch_and_the_worker_judge_waiting_notes(store):
    ids = add(store, "s1", SIX[:3])
    run_queue(store, chain_factory=lambda: JudgeChain([NoopJudge()]))
    assert store.sessions.session_end("s1")["status"] == "partial"
    judge = ScriptedJudge({"Remember": keep("The cache key includes the lockfile hash")}, default=DROP)
    result = run_batch(store, chain_factory=lambda: JudgeChain([judge]), out=open(os.devnull, "w"))
    assert result.requeued_waiting == ["s1"] and judge.batches == [["n1", "n2", "n3"]]
    assert {i: len(v) for i, v in judged_events(store).items()} == {i: 1 for i in ids}
    assert store.sessions.notes("s1") == [] and store.sessions.session_end("s1")["status"] == "done"
    # batch never re-ends a session whose notes wait (the orphan rule)
    add(store, "s2", SIX[3:4])
    run_queue(store, chain_factory=lambda: JudgeChain([NoopJudge()]), now=T0)
    res = run_batch(store, chain_factory=lambda: JudgeChain([NoopJudge()]), orphan_age=1, now=T0 + DAY,
                    out=open(os.devnull, "w"))
    assert res.orphans_ended == [] and res.requeued_waiting == []


def test_worker_judges_waiting_notes(tmp_path, monkeypatch):
    from consolidate.pipeline.worker import run_worker

    st = Store(tmp_path / ".memofs", embedding="hash", project="p")
    add(st, "s1", SIX[:2])
    monkeypatch.setenv("CONSOLIDATE_JUDGES", "noop")
    assert run_worker(st, out=open(os.devnull, "w")) == 1
    assert st.sessions.session_end("s1")["status"] == "partial"
    assert run_worker(st, out=open(os.devnull, "w")) == 0  # no judge can answer: nothing to do
    monkeypatch.setenv("CONSOLIDATE_JUDGES", "rules")
    assert run_worker(st, out=open(os.devnull, "w")) == 1
    assert st.sessions.notes("s1") == [] and st.sessions.session_end("s1")["status"] == "done"


def test_batch_says_first_when_no_judge_can_answer(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / ".memofs"))
    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "hash")
    monkeypatch.setenv("CONSOLIDATE_JUDGES", "noop")
    assert main(["note", "--session", "s1", SIX[0]]) == 0
    assert main(["end", "--session", "s1", "--outcome", "success"]) == 0
    capsys.readouterr()
    assert main(["batch"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("no judge available (chain: noop)") and "`consolidate judges`" in out[0]
    assert out[1].startswith("PARTIAL batch: 1 sessions") and "1 notes of 1 sessions wait for a judge" in out[1]
