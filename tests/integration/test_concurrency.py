"""Concurrency: 8 processes consolidating 8 sessions into one store at once, and 2 processes on the
same session: no lost write, no duplicate entry, no corrupt JSONL line, no Chroma error. Undo
restores the exact earlier store."""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from consolidate import Store
from consolidate.store import graph
from consolidate.pipeline.run import run_queue
from consolidate.pipeline.undo import undo_run

from preloaded import run as run_preloaded
from robustness import dump, run_cli, scenario_notes, seed

pytestmark = [pytest.mark.robustness, pytest.mark.integration]


def _cli_env(store_path):
    import os

    return {**os.environ, "CONSOLIDATE_STORE": str(store_path), "CONSOLIDATE_EMBEDDING": "hash",
            "CONSOLIDATE_PROJECT": "p", "CONSOLIDATE_JUDGES": "noop"}


def _at_once(argvs, env):
    """Each argv as a ``python -m consolidate`` process, all started at once (one thread waiting on each;
    forked from one with chromadb imported, tests/support/preloaded.py): their CompletedProcess in order."""
    with ThreadPoolExecutor(len(argvs)) as pool:
        return list(pool.map(lambda argv: run_preloaded(argv, env=env, timeout=300), argvs))


def _all_jsonl_valid(store):
    for path in [store.events_path, store.sub("graph", "nodes.jsonl"), store.sub("graph", "edges.jsonl")]:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            json.loads(line)  # raises on a corrupt line


def test_eight_processes_eight_sessions(tmp_path):
    store = Store(tmp_path / ".memofs", embedding="hash", project="p")
    for i in range(8):
        for j in range(5):
            store.sessions.add_note(f"c{i}", f"Service {i} component {j} listens on port {7000 + 10 * i + j}", flag=True)
        store.sessions.end(f"c{i}", "success")
    env = _cli_env(store.path)
    for p in _at_once([["run", "--session", f"c{i}"] for i in range(8)], env):
        assert p.returncode == 0, p.stderr[-800:]
    store = Store(tmp_path / ".memofs", embedding="hash", project="p")
    col = store.longterm().collection
    assert col.count() == 40  # no lost write
    ids = col.get()["ids"]
    assert len(ids) == len(set(ids))
    _all_jsonl_valid(store)
    events = [json.loads(x) for x in store.events_path.read_text().splitlines()]
    assert sum(1 for e in events if e["event"] == "run.applied") == 8
    written = [e["memory_id"] for e in events if e["event"] == "memory.written"]
    assert len(written) == 40 == len(set(written))
    g = graph.load(store.sub("graph"))
    assert sum(1 for _, a in g.nodes(data=True) if a["kind"] == "memory") == 40
    assert store.sessions.sessions() == {}


def test_two_processes_same_session(tmp_path):
    store = Store(tmp_path / ".memofs", embedding="hash", project="p")
    for j in range(30):
        store.sessions.add_note("same", f"Worker {j} drains queue {j} every {j + 1} minutes", flag=True)
    store.sessions.end("same", "success")
    env = _cli_env(store.path)
    for p in _at_once([["run"], ["run"]], env):
        assert p.returncode == 0, p.stderr[-800:]
    store = Store(tmp_path / ".memofs", embedding="hash", project="p")
    assert store.longterm().collection.count() == 30
    events = [json.loads(x) for x in store.events_path.read_text().splitlines()]
    assert sum(1 for e in events if e["event"] == "run.applied") == 1  # consolidated once
    assert not [e for e in events if e["event"] == "memory.reconfirmed"]
    _all_jsonl_valid(store)


def test_undo_restores_the_exact_earlier_store(tmp_path):
    store = Store(tmp_path / ".memofs", embedding="hash", project="p")
    seed(store)
    before = dump(store)
    scenario_notes(store)
    [plan] = run_queue(store, judges=["rules"])
    assert dump(store)["chroma"] != before["chroma"]
    out = run_cli(store.path, "runs")
    assert plan.run_id in out.stdout
    assert "undone" not in run_cli(store.path, "status").stdout
    undo_run(store, plan.run_id)
    status = run_cli(store.path, "status")
    assert f"last run: {plan.run_id}" in status.stdout and "(undone by `consolidate undo`)" in status.stdout
    assert json.loads(run_cli(store.path, "status", "--json").stdout)["last_run"]["undone"]
    after = dump(store)
    assert after["chroma"] == before["chroma"]
    assert after["nodes"] == before["nodes"] and after["edges"] == before["edges"]
    # a re-confirmation raised confidence/last_confirmed: restored too (the metadata compare above)
    out = run_cli(store.path, "undo", plan.run_id)
    assert out.returncode == 2 and "already undone" in out.stderr


def test_undo_restores_superseded_entry(tmp_path):
    from consolidate.judges.chain import JudgeChain
    from consolidate.judges.scripted import ScriptedJudge

    store = Store(tmp_path / ".memofs", embedding="hash", project="p")
    store.sessions.add_note("a", "The gateway timeout is 30 seconds on every route", flag=True, kind="constraint")
    store.sessions.end("a", "success")
    run_queue(store, judges=["noop"])
    before = dump(store)
    store.sessions.add_note("b", "The gateway timeout is 60 seconds on every route", flag=True, kind="constraint",
                            metadata={"evidence": "user-stated"})
    store.sessions.end("b", "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge(relations={"60": "contradicts"})]))
    assert any(e["event"] == "memory.superseded" for e in plan.events)
    undo_run(store, plan.run_id)
    after = dump(store)
    assert after["chroma"] == before["chroma"] and after["nodes"] == before["nodes"] and after["edges"] == before["edges"]


def test_the_store_lock_waits_while_writers_ahead_make_progress(store):
    """The cause of test_eight_processes_eight_sessions' flakes under load: eight runs queued on one
    store, each waiting at most 60 s in all, so under load the last waiter gave up (StoreLocked)
    while the runs ahead of it were all progressing. The wait now starts again each time the lock
    changes hands: twelve holders of 0.3 s each, waited for by every thread with a 3 s bound (more
    than 3 s in all), all get it."""
    import threading
    import time

    from consolidate.core.errors import StoreLocked

    got, failed = [], []

    def writer(i):
        try:
            with store.lock(timeout=3.0):
                got.append(i)
                time.sleep(0.3)
        except StoreLocked as exc:
            failed.append(str(exc))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failed and sorted(got) == list(range(12))


def test_the_store_lock_gives_up_on_a_holder_that_does_not_let_go(store):
    import threading
    import time

    from consolidate.core.errors import StoreLocked

    taken, release = threading.Event(), threading.Event()

    def stuck():
        with store.lock():
            taken.set()
            release.wait(30)

    t = threading.Thread(target=stuck)
    t.start()
    try:
        assert taken.wait(30)
        started = time.monotonic()
        with pytest.raises(StoreLocked, match="held 0.5 s by one process"):
            with store.lock(timeout=0.5):
                pass
        assert time.monotonic() - started < 25  # a hang guard, not a timing claim
        with pytest.raises(StoreLocked):
            with store.lock(timeout=0):
                pass
    finally:
        release.set()
        t.join()
