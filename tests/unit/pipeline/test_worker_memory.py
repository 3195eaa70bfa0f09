"""Worker memory (issue 18): the worker's run releases the embedding model after embedding its
keepers and before it first reads the index, so one process never holds the onnxruntime session
and the loaded index at once (benchmarks/bench_memory_scale.py measures the peak); runs that do not
ask for it (a batch's threads, the MCP server, a library caller) keep the model."""

from __future__ import annotations

import consolidate.store.index.embeddings as embeddings
import consolidate.store.index.longterm as longterm
from consolidate import Store
from consolidate.pipeline.run import run_queue
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import keep

OLD = "The staging database is restored from the nightly snapshot at 02:00 UTC"
NEW = "Deploys to production need two approvals in the release channel"


def _store_with_an_index(tmp_path):
    """A MiniLM store whose index holds one memory, opened again as a new worker process would."""
    first = Store(tmp_path / ".memofs", project="p")
    first.sessions.add_note("s0", OLD, flag=True)
    first.sessions.end("s0", "success")
    run_queue(first, chain_factory=lambda: JudgeChain([ScriptedJudge({"staging": keep(OLD)})]))
    first.close()
    longterm.close_all()
    embeddings._LOADED.clear()
    store = Store(tmp_path / ".memofs", project="p")
    store.sessions.add_note("s1", NEW, flag=True)
    store.sessions.end("s1", "success")
    return store


def _watch_index_open(monkeypatch) -> list:
    """Record, each time the index is opened, whether an onnxruntime session is loaded then."""
    seen: list = []
    original = longterm.LongTerm.__init__

    def init(self, store, *a, **k):
        ef = store.embedder()
        seen.append(getattr(ef, "_session", None) is not None or bool(embeddings._LOADED))
        return original(self, store, *a, **k)

    monkeypatch.setattr(longterm.LongTerm, "__init__", init)
    return seen


def _judge():
    return JudgeChain([ScriptedJudge({"Deploys": keep(NEW)})])


def test_the_worker_run_releases_the_model_before_the_index_loads(tmp_path, monkeypatch):
    store = _store_with_an_index(tmp_path)
    seen = _watch_index_open(monkeypatch)
    [plan] = run_queue(store, chain_factory=_judge, release_model=True)
    assert seen == [False]  # the model was loaded (the keeper embedded) and released before the index
    assert [c.statement for c in plan.writes()] == [NEW]
    hits = store.longterm().search("how many approvals does a production deploy need", k=1)
    assert hits[0]["document"] == NEW  # the model loads again for a query, and the new memory is found
    assert {h["document"] for h in store.longterm().search("staging snapshot restore", k=2)} == {OLD, NEW}
    store.close()


def test_a_run_that_does_not_ask_keeps_the_model(tmp_path, monkeypatch):
    store = _store_with_an_index(tmp_path)
    seen = _watch_index_open(monkeypatch)
    run_queue(store, chain_factory=_judge)
    assert seen == [True]
    store.close()


def test_the_worker_command_asks_for_it(tmp_path, monkeypatch):
    """consolidate worker (what the hook starts) runs its sessions with release_model."""
    import consolidate.pipeline.run as pipeline
    from consolidate.pipeline.worker import run_worker

    store = _store_with_an_index(tmp_path)
    asked = []
    original = pipeline.run_session

    def run_session(*a, **k):
        asked.append(k.get("release_model"))
        return original(*a, **k)

    monkeypatch.setattr(pipeline, "run_session", run_session)
    monkeypatch.setattr(pipeline, "_share_chain", lambda store, kwargs: {**kwargs, "chain_factory": _judge})
    assert run_worker(store) == 1
    assert asked == [True]
    store.close()
