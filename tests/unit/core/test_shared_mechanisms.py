"""The shared mechanisms of issue 20 (items 2-4), each written once: the stage lists the pipeline runs,
the atomic file write, the store's JSONL reader, the queue claim and the journal replay.

Filed before as tests/test_structure.py (issue 20).
"""

import json
import os
import re
import stat

import pytest

from consolidate.store import journal
from consolidate.pipeline import stages
from consolidate.pipeline.stages import apply as apply_stage
from consolidate.core.atomic import write_atomic, write_json_atomic
from consolidate.core.jsonl import append_lines, cut_torn_tail, drop_lines, read_lines
from consolidate.pipeline.run import RunContext, run_claimed, run_session, run_stages
from consolidate.model.plan import Plan
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge
from paths import REPO


# -- stage lists ----------------------------------------------------------------------------------

def test_stage_lists_order_and_locks():
    names = [s.name for s in stages.SESSION]
    assert len(names) == len(set(names))  # a name is the key of plan.stage_seconds
    for before, after in (("purge", "secret_gate"), ("secret_gate", "flag_promote"), ("flag_promote", "judge"),
                          ("judge", "write_policy"), ("write_policy", "embed"), ("embed", "contradiction"),
                          ("contradiction", "provenance"), ("provenance", "withdrawn"), ("withdrawn", "apply")):
        assert names.index(before) < names.index(after)
    assert names[-1] == "apply" and stages.SESSION[-1] is stages.APPLY
    assert [s.name for s in stages.SESSION if s.locked] == ["contradiction", "provenance", "withdrawn", "apply"]
    assert [s.name for s in stages.FAILURE] == ["secret_gate", "failure_link", "apply"]
    assert [s.name for s in (*stages.SESSION, *stages.FAILURE) if s.writes] == ["apply", "apply"]
    # every locked stage comes after every unlocked one: the lock is held once, for the end of the run
    for run in (stages.SESSION, stages.FAILURE):
        locks = [s.locked for s in run]
        assert locks == sorted(locks)


def test_locked_stages_run_under_the_lock_once_and_a_dry_run_skips_writers(store, monkeypatch):
    held = []
    real_lock = type(store).lock

    def lock(self, timeout=60.0):
        held.append("lock")
        return real_lock(self, timeout)

    monkeypatch.setattr(type(store), "lock", lock)
    seen = []

    def stage(name, locked=False, writes=False):
        return stages.Stage(name, lambda plan, ctx: seen.append((name, len(held))), locked=locked, writes=writes)

    run = (stage("a"), stage("b", locked=True), stage("w", locked=True, writes=True))
    plan = Plan(session_id="s", scope="p")
    run_stages(run, plan, RunContext(store=store))
    assert seen == [("a", 0), ("b", 1), ("w", 1)] and plan.finished
    assert set(plan.stage_seconds) == {"a", "b", "w"}
    seen.clear()
    held.clear()
    dry = Plan(session_id="s", scope="p")
    run_stages(run, dry, RunContext(store=store, dry_run=True))
    assert seen == [("a", 0), ("b", 0)] and not dry.finished and not held


def test_embed_is_timed_as_its_own_stage(store):
    store.sessions.add_note("s1", "The API listens on port 8443 behind the proxy", flag=True)
    store.sessions.end("s1", "success")
    plan = run_session(store, "s1", chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert list(plan.stage_seconds) == ["count", *[s.name for s in stages.SESSION]]


def test_a_patched_stage_module_run_is_what_runs(store, monkeypatch):
    from consolidate.pipeline.stages import purge

    calls = []
    real = purge.run
    monkeypatch.setattr(purge, "run", lambda plan, ctx: calls.append(plan.session_id) or real(plan, ctx))
    store.sessions.add_note("s1", "Builds use the cached wheels in ~/.cache/pip", flag=True)
    store.sessions.end("s1", "success")
    run_session(store, "s1", chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert calls == ["s1"]


# -- queue claim ----------------------------------------------------------------------------------

def test_run_claimed_puts_the_session_back_on_an_error(store, monkeypatch):
    store.sessions.add_note("s1", "Logs rotate daily at midnight UTC", flag=True)
    store.sessions.end("s1", "success")

    def boom(plan, ctx):
        raise KeyboardInterrupt

    monkeypatch.setattr("consolidate.pipeline.stages.judge.run", boom)
    with pytest.raises(KeyboardInterrupt):
        run_claimed(store, "s1", chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert [r["session_id"] for r in store.sessions.queued()] == ["s1"]
    monkeypatch.undo()
    plan = run_claimed(store, "s1", chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert plan is not None and plan.finished
    assert run_claimed(store, "s1") is None  # done: nothing to claim


# -- one queue drain (issue 20 item 4) ------------------------------------------------------------

PACKAGE = REPO / "consolidate"


def _sources():
    return {p.relative_to(PACKAGE).as_posix(): p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py")}


def test_the_queue_is_drained_in_one_place():
    """run, the worker and batch take queued session ends through consolidate.pipeline.run.drain: the
    claim/run/release (run_claimed), the pool of threads and the journal replay before a drain are
    written there only."""
    src = _sources()
    assert sorted(n for n, t in src.items() if "run_claimed(" in t) == ["pipeline/run.py"]
    assert sorted(n for n, t in src.items() if "ThreadPoolExecutor(" in t and "drain" in t) == ["pipeline/run.py"]
    assert sorted(n for n, t in src.items() if re.search(r"(?<!def )\brecover\(store", t)) == ["pipeline/doctor.py", "pipeline/run.py"]
    assert "drain(" in src["pipeline/batch.py"] and "run_queue(" in src["pipeline/worker.py"]
    assert "finish_pending" not in src["pipeline/batch.py"] + src["pipeline/worker.py"]


#: What SQL on the session database looks like in the source: a statement, a cursor call, a connection.
SQL = re.compile(r"\bexecute(?:many|script)?\(|\b(?:SELECT|INSERT|UPDATE|DELETE FROM|CREATE (?:TABLE|INDEX)|PRAGMA)\s"
                 r"|sqlite3\.connect\(")
SESSION_TIER = ["store/sessions/tier.py", "store/sessions/tables.py"]
#: The other SQLite file of the store and its one owner: recall's lexical index (FTS5).
LEXICAL = "store/index/lexical.py"
#: File recall's lookup table (memory/files.sqlite3) and its one owner.
FILE_TABLE = "store/index/file_table.py"
#: The team ledger (team/ledger.sqlite3) and its one owner.
TEAM_LEDGER = "team/ledger.py"


def test_sql_is_only_in_the_session_tier():
    """Every table of sessions.sqlite3 has one owner: SessionTier (consolidate/store/sessions/tier.py) or
    consolidate/store/sessions/tables.py; no other module of the package holds a statement or opens a
    connection (the hooks, echo, file recall, the light entry point call their functions). The
    lexical index (lexical.sqlite3, owned by consolidate/store/index/lexical.py, which never names the session
    database), file recall's table (memory/files.sqlite3, consolidate/store/index/file_table.py) and the
    team ledger (team/ledger.sqlite3, consolidate/team/ledger.py) are the others."""
    src = _sources()
    hits = {name: [line.strip() for line in text.splitlines() if SQL.search(line)] for name, text in src.items()}
    outside = {name: lines[:3] for name, lines in hits.items() if lines and name not in SESSION_TIER + [LEXICAL, FILE_TABLE, TEAM_LEDGER]}
    assert outside == {}
    assert "sessions.sqlite3" not in src[LEXICAL] + src[FILE_TABLE] + src[TEAM_LEDGER] and 'INDEX_FILE = LEXICAL_DB.name' in src[LEXICAL]
    assert all(len(hits[name]) > 10 for name in SESSION_TIER)  # the pattern finds the tier's own statements


def test_the_session_tables_module_imports_only_the_standard_library_lightly():
    """The light hooks import consolidate.store.sessions.tables: json and os at module level, and of the
    package only consolidate.core.vocab (which imports nothing); the persisted-text gate (the secret
    rules) only inside the function that records a SessionStart's source."""
    import ast

    tree = ast.parse((PACKAGE / "store" / "sessions" / "tables.py").read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = sorted(a.name for n in top for a in n.names)
    assert names == ["END_PENDING", "annotations", "json", "os"]
    own = {n.module for n in top if isinstance(n, ast.ImportFrom) and n.module.startswith("consolidate")}
    assert own == {"consolidate.core.vocab"}


def _queue(store, *sids):
    for sid in sids:
        store.sessions.add_note(sid, f"Service {sid} listens on port 8080", flag=True)
        store.sessions.end(sid, "success")


@pytest.mark.parametrize("concurrency", [None, 1, 3])
def test_drain_takes_every_pending_end_in_order_and_reports_each(store, concurrency):
    from consolidate.pipeline.run import drain

    _queue(store, "a", "b", "c", "d")
    seen = []
    plans = drain(store, concurrency=concurrency, on_done=seen.append,
                  chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert sorted(p.session_id for p in plans) == ["a", "b", "c", "d"] and all(p.finished for p in plans)
    assert sorted(t.row["session_id"] for t in seen) == ["a", "b", "c", "d"]
    assert all(t.error is None and t.plan is not None for t in seen)
    if concurrency is None:  # one at a time in this thread: oldest first
        assert [p.session_id for p in plans] == ["a", "b", "c", "d"]
    assert store.sessions.pending() == []


@pytest.mark.parametrize("concurrency", [None, 2])
def test_drain_keep_going_reports_an_error_and_goes_on_else_raises(store, monkeypatch, concurrency):
    from consolidate.pipeline.run import drain
    from consolidate.pipeline.stages import judge as judge_stage

    real = judge_stage.run

    def flaky(plan, ctx):
        if plan.session_id == "b":
            raise RuntimeError("judge stage broke")
        return real(plan, ctx)

    monkeypatch.setattr("consolidate.pipeline.stages.judge.run", flaky)
    _queue(store, "a", "b", "c")
    store.sessions.add_note("a", "a maybe")  # every session reaches the judge stage
    store.sessions.add_note("b", "a maybe")
    store.sessions.add_note("c", "a maybe")
    seen = []
    plans = drain(store, concurrency=concurrency, keep_going=True, on_done=seen.append,
                  chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert sorted(p.session_id for p in plans) == ["a", "c"]
    [bad] = [t for t in seen if t.error is not None]
    assert bad.row["session_id"] == "b" and isinstance(bad.error, RuntimeError) and bad.plan is None
    assert [r["session_id"] for r in store.sessions.queued()] == ["b"]  # released, not lost
    with pytest.raises(RuntimeError):
        drain(store, concurrency=concurrency, chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert [r["session_id"] for r in store.sessions.queued()] == ["b"]


def test_drain_rounds_take_ends_queued_meanwhile(store):
    from consolidate.pipeline.run import drain

    _queue(store, "a")

    def queue_another(taken):
        if taken.row["session_id"] == "a":
            _queue(store, "late")

    one_round = drain(store, on_done=queue_another, chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert [p.session_id for p in one_round] == ["a"] and [r["session_id"] for r in store.sessions.queued()] == ["late"]
    _queue(store, "b")
    rounds = drain(store, rounds=True, on_done=lambda t: t.row["session_id"] == "b" and _queue(store, "later"),
                   chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert [p.session_id for p in rounds] == ["late", "b", "later"] and store.sessions.pending() == []


@pytest.mark.parametrize("how", ["run_queue", "batch", "worker"])
def test_every_drain_pulls_before_and_pushes_after_on_a_team_store(store, monkeypatch, how):
    """The README: every run pulls the team's changes before its contradiction check (batch did not)."""
    import consolidate.team.replica as team

    calls = []
    monkeypatch.setattr(team, "pull_before_run", lambda st: calls.append(("pull", len(st.sessions.pending()))))
    monkeypatch.setattr(team, "push_after_run", lambda st: calls.append(("push", len(st.sessions.pending()))))
    monkeypatch.setattr(type(store), "replica", lambda self: team.TeamReplica(self))  # as with a team.json
    _queue(store, "a", "b")
    factory = lambda: JudgeChain([ScriptedJudge()])  # noqa: E731
    if how == "run_queue":
        from consolidate.pipeline.run import run_queue

        run_queue(store, chain_factory=factory)
    elif how == "batch":
        from consolidate.pipeline.batch import run_batch

        monkeypatch.setattr(type(store), "has_longterm", property(lambda self: False))  # the drain only
        run_batch(store, concurrency=2, chain_factory=factory, out=open(os.devnull, "w"))
    else:
        from consolidate.pipeline.worker import run_worker

        monkeypatch.setattr("consolidate.judges.registry.build_chain", lambda *a, **k: factory())
        run_worker(store, out=open(os.devnull, "w"))
    assert calls == [("pull", 2), ("push", 0)]


def test_drain_replays_a_crashed_run_first_and_a_held_end_is_reported(store, monkeypatch):
    from consolidate.pipeline.run import drain

    calls = []
    real = apply_stage.recover
    monkeypatch.setattr(apply_stage, "recover", lambda *a, **k: calls.append("recover") or real(*a, **k))
    _queue(store, "a")
    assert store.sessions.claim("a") is not None  # this process holds it: claimable again by it
    monkeypatch.setattr(type(store.sessions), "claim", lambda self, sid, **k: None)  # another live process
    seen = []
    assert drain(store, on_done=seen.append, chain_factory=lambda: JudgeChain([ScriptedJudge()])) == []
    assert calls == ["recover"] and [(t.row["session_id"], t.plan, t.error) for t in seen] == [("a", None, None)]
    calls.clear()
    drain(store, dry_run=True, chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert calls == []  # a dry run replays nothing


# -- journal replay -------------------------------------------------------------------------------

def test_recover_takes_no_lock_when_the_journal_is_empty(store, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the lock was taken")

    monkeypatch.setattr(type(store), "lock", refuse)
    assert not journal.has_pending(store)
    assert apply_stage.recover(store) == []


# -- atomic writes --------------------------------------------------------------------------------

def test_write_atomic_private_and_user_modes(tmp_path):
    store_file = tmp_path / "store" / "x.json"
    write_json_atomic(store_file, {"a": "ä"})
    assert json.loads(store_file.read_text(encoding="utf-8")) == {"a": "ä"}
    assert stat.S_IMODE(store_file.stat().st_mode) == 0o600
    write_json_atomic(store_file, {"a": 1}, compact=True)
    assert store_file.read_text(encoding="utf-8") == '{"a":1}'
    user = tmp_path / "settings.json"
    user.write_text("{}", encoding="utf-8")
    os.chmod(user, 0o644)
    write_atomic(user, "[1]\n", private=False)
    assert user.read_text(encoding="utf-8") == "[1]\n" and stat.S_IMODE(user.stat().st_mode) == 0o644
    write_atomic(tmp_path / "rows.jsonl", (f"{i}\n" for i in range(3)))
    assert (tmp_path / "rows.jsonl").read_text(encoding="utf-8") == "0\n1\n2\n"
    assert not list(tmp_path.rglob("*.tmp"))


def test_write_atomic_failure_keeps_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "x.txt"
    write_atomic(path, "old")

    def rows():
        yield "new"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_atomic(path, rows())
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.txt"]


# -- the store's JSONL files ----------------------------------------------------------------------

def test_read_lines_skips_torn_and_foreign_lines(tmp_path):
    path = tmp_path / "log.jsonl"
    assert list(read_lines(path)) == []  # no file yet
    path.write_text('{"a": 1}\n[1, 2]\nnot json\n\n{"a": 2, "run_id": "r"}\n{"a": 3', encoding="utf-8")
    assert list(read_lines(path)) == [{"a": 1}, {"a": 2, "run_id": "r"}]
    assert list(read_lines(path, contains='"run_id": "r"')) == [{"a": 2, "run_id": "r"}]
    cut_torn_tail(path)
    append_lines(path, ['{"a": 4}\n'])
    assert [o["a"] for o in read_lines(path)] == [1, 2, 4]
    assert drop_lines(path, lambda o: o["a"] == 2) == 1
    assert path.read_text(encoding="utf-8") == '{"a": 1}\n[1, 2]\nnot json\n\n{"a": 4}\n'
    before = path.stat().st_mtime_ns
    assert drop_lines(path, lambda o: False) == 0 and path.stat().st_mtime_ns == before
    assert drop_lines(tmp_path / "missing.jsonl", lambda o: True) == 0


def test_read_lines_skips_invalid_utf8_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"a": "\xc3\xa4"}\n{"a": "\xff"}\n{"a": 2}\n')
    assert list(read_lines(path)) == [{"a": "\u00e4"}, {"a": 2}]
    assert list(read_lines(path, contains="\u00e4")) == [{"a": "\u00e4"}]
