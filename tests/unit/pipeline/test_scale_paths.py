"""The paths that keep a run's cost flat as the store grows (issue 18): batched neighbour queries
that filter metadata here instead of in Chroma, graph lines appended instead of the graph rewritten,
the SessionStart context merged instead of searched. Each is checked against the slow path it
replaces, on stores with several types, statuses and scopes."""

from __future__ import annotations

import json
import random

import pytest

from consolidate import Store
from consolidate.store import graph
from consolidate.store.index.longterm import _where
from consolidate.pipeline.run import run_queue
from consolidate.store.views import context_md
from consolidate.pipeline.undo import undo_run
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import keep
from robustness import dump

TYPES = ("fact", "decision", "constraint", "recipe")
CLUSTERED = 12  # queries near a cluster of memories (as a keeper near its duplicates); then 4 random ones
STATUSES = ("active", "active", "active", "quarantined", "disputed", "superseded")


def _unit(rng, dim):
    v = [rng.gauss(0, 1) for _ in range(dim)]
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


def _near(rng, base, spread):
    v = [x + rng.gauss(0, spread) for x in base]
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


@pytest.fixture
def mixed(tmp_path):
    """600 memories in clusters around 6 centres: four types, six statuses, two scopes, two tiers."""
    store = Store(tmp_path / ".memofs", embedding="hash", project="p")
    lt = store.longterm()
    rng = random.Random(5)
    dim = lt.ef.dimension
    centres = [_unit(rng, dim) for _ in range(6)]
    records = []
    for i in range(600):
        records.append({"id": f"m{i}", "document": f"memory {i}", "embedding": _near(rng, centres[i % 6], 0.04 * (1 + i % 5)),
                        "metadata": {"type": TYPES[i % 4], "status": STATUSES[i % 6], "scope": "p" if i % 7 else "q",
                                     "tier": "durable" if i % 11 else "working", "confidence": "high"}})
    with store.lock():
        lt.upsert(records)
    queries = [_near(rng, centres[j % 6], 0.05) for j in range(CLUSTERED)] + [_unit(rng, dim) for _ in range(4)]
    yield store, lt, queries
    store.close()


def _filtered(lt, vec, k, **filters):
    """What Chroma's own filtered query answers (the slow path the batched one replaces)."""
    res = lt.collection.query(query_embeddings=[vec], n_results=k, where=_where(tier="durable", **filters),
                              include=["distances"])
    return res["ids"][0]


@pytest.mark.parametrize("filters", [
    {"type_": "fact", "scope": "p", "statuses": ("active", "quarantined", "disputed")},
    {"scope": "p", "statuses": ("active", "disputed")},
    {"statuses": ("quarantined",)},  # few pass the unfiltered neighbours: asked again with the filter
    {"type_": "recipe", "scope": "q", "statuses": ("quarantined",)},  # 6 of 600 anywhere
])
@pytest.mark.parametrize("k", [1, 5, 20])
def test_batched_neighbours_equal_the_filtered_query(mixed, filters, k):
    store, lt, queries = mixed
    got = lt.neighbours_many(queries, k=k, **filters)
    assert len(got) == len(queries)
    for q, (vec, hits) in enumerate(zip(queries, got)):
        want = _filtered(lt, vec, k, **filters)
        assert len(hits) == len(want)
        assert [h["similarity"] for h in hits] == sorted((h["similarity"] for h in hits), reverse=True)
        if q < CLUSTERED:
            # both are approximate graph searches (HNSW, built by several threads): the nearest one
            # and at least 90 % of the rest agree (measured: all of them, or all but one of 20)
            assert not want or hits[0]["id"] == want[0]
            assert len({h["id"] for h in hits} & set(want)) >= 0.9 * len(want)
        for h in hits:
            meta = h["metadata"]
            assert meta["tier"] == "durable" and meta["status"] in filters["statuses"]
            assert filters.get("type_") in (None, meta["type"]) and filters.get("scope") in (None, meta["scope"])


def test_floor_returns_every_neighbour_above_it(mixed):
    """With min_similarity the answer is the filtered query's neighbours at or above the floor, even
    when fewer than k of the unfiltered ones pass the filter."""
    store, lt, queries = mixed
    filters = {"type_": "constraint", "scope": "q", "statuses": ("active", "quarantined", "disputed")}
    for floor in (0.2, 0.5, 0.9):
        got = lt.neighbours_many(queries, k=5, min_similarity=floor, **filters)
        for vec, hits in zip(queries[:CLUSTERED], got):
            res = lt.collection.query(query_embeddings=[vec], n_results=5, include=["distances"],
                                      where=_where(tier="durable", **filters))
            want = [i for i, d in zip(res["ids"][0], res["distances"][0]) if 1 - d >= floor]
            assert len({h["id"] for h in hits} ^ set(want)) <= 1  # approximate searches, as above
            assert all(h["similarity"] >= floor for h in hits)


def test_neighbours_of_an_empty_index(store):
    lt = store.longterm()
    assert lt.neighbours_many([[0.0] * lt.ef.dimension] * 2, k=3) == [[], []]
    assert lt.search("anything") == []


# --- graph appended, not rewritten ------------------------------------------------------------------


def _chain(relations=None, **verdicts):
    return lambda: JudgeChain([ScriptedJudge(dict(verdicts), relations=relations or {})])


def _session(store, sid, notes, **kw):
    for text in notes:
        store.sessions.add_note(sid, text, flag=True, kind="constraint")
    store.sessions.end(sid, "success")
    return run_queue(store, **kw)


def _graph_state(store):
    g = graph.load(store.sub("graph"))
    return ({n: dict(a) for n, a in g.nodes(data=True)},
            {(u, v, k): dict(a) for u, v, k, a in g.edges(keys=True, data=True)})


def test_runs_append_to_the_graph_and_the_graph_equals_a_rewrite(store):
    _session(store, "a", ["The API listens on port 8080 behind nginx", "Builds run with pnpm in docker"],
             judges=["noop"])
    size = store.sub("graph", "nodes.jsonl").stat().st_size
    first = store.sub("graph", "nodes.jsonl").read_bytes()
    _session(store, "b", ["The API listens on port 8080 behind nginx", "Migrations run with alembic upgrade head"],
             judges=["noop"])
    nodes_file = store.sub("graph", "nodes.jsonl").read_bytes()
    assert nodes_file.startswith(first) and len(nodes_file) > size  # appended, earlier lines untouched
    nodes, edges = _graph_state(store)
    # the same graph as the one a full load + add + save would hold: saved and loaded again
    g = graph.load(store.sub("graph"))
    graph.save(g, store.path / "copy")
    again = graph.load(store.path / "copy")
    assert {n: dict(a) for n, a in again.nodes(data=True)} == nodes
    assert all(a.get("kind") in ("memory", "session", "entity") for a in nodes.values())
    assert not any(graph.KEEP in a or graph.IF in a for a in nodes.values())
    assert ("session:b" in nodes) and sum(1 for a in nodes.values() if a["kind"] == "memory") == 3


def test_an_entity_keeps_the_kind_it_was_first_seen_with(store):
    _session(store, "a", ["Run pip install pytest before the test job"], judges=["noop"])
    kind = _graph_state(store)[0]["entity:pytest"]["entity_kind"]
    _session(store, "b", ["pytest runs with -x in CI so the first failure stops the job"], judges=["noop"])
    assert _graph_state(store)[0]["entity:pytest"]["entity_kind"] == kind == "package"


def test_undo_of_an_earlier_run_after_later_appends(store):
    """Undo reverses exactly one run's graph lines though later runs appended after them."""
    _session(store, "a", ["The gateway timeout is 30 seconds on every route"], judges=["noop"])
    after_a = dump(store)
    [b] = _session(store, "b", ["Deploys go through the staging cluster first", "Builds run with pnpm in docker"],
                   judges=["noop"])
    [c] = _session(store, "c", ["Releases are cut from the main branch on Fridays"], judges=["noop"])
    undo_run(store, b.run_id)
    nodes, edges = _graph_state(store)
    assert not any(n.startswith("session:b") for n in nodes)
    assert any(n == "session:c" for n in nodes)
    assert not any(u in [w.memory_id for w in b.writes()] for u, _, _ in edges)
    undo_run(store, c.run_id)  # its record was settled into a diff before undo b rewrote the files
    after = dump(store)
    assert after["nodes"] == after_a["nodes"] and after["edges"] == after_a["edges"]


def test_a_torn_graph_line_is_cut_before_the_next_append(store):
    _session(store, "a", ["The API listens on port 8080 behind nginx"], judges=["noop"])
    with open(store.sub("graph", "edges.jsonl"), "a") as f:
        f.write('{"source": "mem-x", "targ')  # a crash in the middle of an append
    assert graph.load(store.sub("graph"))  # the torn last line is not read
    _session(store, "b", ["Builds run with pnpm in docker"], judges=["noop"])
    for name in ("nodes.jsonl", "edges.jsonl"):
        for line in store.sub("graph", name).read_text().splitlines():
            json.loads(line)


# --- the SessionStart context merged, not searched --------------------------------------------------


_SCAN = context_md._top_by_scan


def _scan_top(store):
    """The top a full read of the index gives (the path the merge replaces)."""
    return [r["id"] for r in _SCAN(store.longterm(), "p", context_md.CONTEXT_MEMORIES, set())]


def _context_ids(store):
    return [e["id"] for e in json.loads(store.sub("memory", "context.json").read_text())]


def test_context_merge_equals_the_full_scan(tmp_path, monkeypatch):
    """Runs over a store with more memories than the context holds: after each run the merged top is
    the one a full read of the index gives, with re-confirmations, weakened and superseded entries."""
    monkeypatch.setattr(context_md, "CONTEXT_MEMORIES", 6)
    monkeypatch.setattr(context_md, "CONTEXT_RESERVE", 2)
    monkeypatch.setattr(context_md.write, "__defaults__", (6, None, None, None))  # limit, touched, run_id, undoing
    store = Store(tmp_path / ".memofs", embedding="hash", project="p")
    scans = []
    real_scan = context_md._top_by_scan

    def counting_scan(*a, **kw):
        scans.append(1)
        return real_scan(*a, **kw)

    monkeypatch.setattr(context_md, "_top_by_scan", counting_scan)
    levels = ("high", "medium", "low")
    for day in range(8):
        sid = f"s{day}"
        verdicts = {}
        for j in range(5):
            text = f"Service {day}-{j} listens on port {7000 + 10 * day + j}"
            store.sessions.add_note(sid, text)
            verdicts[text] = keep(text, confidence=levels[(day + j) % 3])
        store.sessions.end(sid, "success")
        run_queue(store, chain_factory=_chain(**verdicts), now=1_800_000_000 + day * 86400)
        assert _context_ids(store) == _scan_top(store)[: len(_context_ids(store))]
        assert set(_context_ids(store)) == set(_scan_top(store))
    assert len(scans) == 1  # only the first run read the index (no previous top yet); the others merged
    # a member is weakened below the previous last: merged while the reserve holds
    lt = store.longterm()
    last = _context_ids(store)[-1]
    first = _context_ids(store)[0]
    with store.lock():
        lt.update_metadata(first, {"confidence": "low", "last_confirmed": "2000-01-01"})
        context_md.write(store, "p", limit=6, touched=[first])
    assert len(scans) == 1 and _context_ids(store) == _scan_top(store) and first not in _context_ids(store)
    assert last in _context_ids(store)
    # members of the top leave the index (forget, undo): the reserve below them comes up, merged
    with store.lock():
        gone = _context_ids(store)[:1]
        lt.delete(gone)
        context_md.write(store, "p", limit=6, touched=gone)
    assert len(scans) == 1 and _context_ids(store) == _scan_top(store) and len(_context_ids(store)) == 6
    assert not json.loads(store.sub("memory", context_md.CONTEXT_TOP).read_text())["all"]  # more than 8 could show
    # more members leave than the reserve holds: who comes next is unknown, the index is read
    with store.lock():
        gone = json.loads(store.sub("memory", context_md.CONTEXT_TOP).read_text())["ids"][:7]
        lt.delete(gone)
        context_md.write(store, "p", limit=6, touched=gone)
    assert len(scans) == 2 and _context_ids(store) == _scan_top(store)
    # an undo restores the top before the run without reading the index, even when the run pushed the
    # whole list out (more of its memories rank first than the list and its reserve hold)
    before = _context_ids(store)
    texts = [f"Worker {i} drains queue {i} every {i + 1} minutes" for i in range(10)]
    store.sessions.add_note("late", " ".join(texts[:1]))
    for t in texts[1:]:
        store.sessions.add_note("late", t)
    store.sessions.end("late", "success")
    [plan] = run_queue(store, chain_factory=_chain(**{t: keep(t, confidence="high") for t in texts}),
                       now=1_800_000_000 + 30 * 86400)
    assert set(_context_ids(store)) <= {c.memory_id for c in plan.writes()}
    undo_run(store, plan.run_id)
    assert len(scans) == 2 and _context_ids(store) == before == _scan_top(store)
    store.close()


# --- purge reads only the quarantined entries that may expire ---------------------------------------


@pytest.mark.parametrize("complete", [False, True])
@pytest.mark.parametrize("ttl", [0.0, 3.0, 14.0, 500.0])
def test_quarantine_expiry_reads_the_same_entries_as_a_full_read(store, ttl, complete):
    """Entries confirmed on every day of a month and a half, two in the future, one without a date:
    the bounded reads expire exactly those the old full read of every quarantined entry did (a run
    leaves the entry without a date to ``consolidate batch``, which reads completely)."""
    import datetime as _dt

    from consolidate.model.plan import Plan
    from consolidate.pipeline.stages.purge import expire_quarantine

    lt = store.longterm()
    now = 1_800_000_000.0
    today = _dt.datetime.fromtimestamp(now, _dt.timezone.utc).date()
    dates = [(today - _dt.timedelta(days=d)).isoformat() for d in range(-2, 40)] + [""]
    vec = [1.0] + [0.0] * (lt.ef.dimension - 1)
    records = [{"id": f"q{i}", "document": f"quarantined {i}", "embedding": vec,
                "metadata": {"status": status, "tier": "durable", "scope": "p", "type": "fact",
                             **({"last_confirmed": d} if d else {})}}
               for i, d in enumerate(dates) for status in ("quarantined",)]
    records += [{"id": f"a{i}", "document": f"active {i}", "embedding": vec,
                 "metadata": {"status": "active", "tier": "durable", "scope": "p", "type": "fact", "last_confirmed": d}}
                for i, d in enumerate(dates) if d]
    with store.lock():
        lt.upsert(records)
    cutoff = (_dt.datetime.fromtimestamp(now, _dt.timezone.utc) - _dt.timedelta(days=ttl)).date().isoformat()
    expected = sorted(r["id"] for r in lt.with_status("quarantined")
                      if (r["metadata"].get("last_confirmed") or "") < cutoff)
    assert "q42" in expected  # the entry without a date
    if not complete:
        expected = [i for i in expected if i != "q42"]
    plan = Plan(session_id="s")
    assert expire_quarantine(plan, store, now, ttl_days=ttl, complete=complete) == len(expected)
    assert sorted(u.memory_id for u in plan.updates) == expected


# --- the journal, written shallowly with float32 embeddings ------------------------------------------


def test_journal_round_trip_keeps_the_whole_plan(store):
    """A plan written to the journal and read back for a replay equals the plan (embeddings are
    float32 values, stored as base64 float32: nothing is lost); an older journal with embeddings as
    decimal lists still reads."""
    import array

    from consolidate.store import journal
    from consolidate.model.plan import Candidate, MemoryUpdate, Note, Plan, Reconfirmation

    rng = random.Random(3)
    vec = array.array("f", [rng.gauss(0, 1) for _ in range(384)]).tolist()  # float32 values, as embed gives
    plan = Plan(session_id="s", scope="p", notes=[Note(id=1, session_id="s", content="ünïcode note", flag=True,
                                                       kind="fact", created_at=1.5, expires_at=None, metadata={"a": [1]})],
                candidates=[Candidate(note_ids=[1], statement="The API listens on 8080", type="fact", source="judge",
                                      evidence="observed-success", confidence="high", reason="r", embedding=vec,
                                      fields={"k": "v"}, provenance={"session_id": "s"}),
                            Candidate(note_ids=[2], statement="x", type="fact", source="judge", evidence="inferred",
                                      confidence="low", reason="r")],
                reconfirmations=[Reconfirmation(memory_id="m", confidence="high", last_confirmed="2026-11-30",
                                                status="active", session_id="s", note_ids=[1])],
                updates=[MemoryUpdate("m2", "archive", {"status": "superseded"}, event="memory.superseded",
                                      edges=[["m", "supersedes"]])],
                note_status={1: "keep"})
    plan.decide("note.kept", note_ids=[1], reason="scripted")
    path = journal.write(store, plan)
    assert b"f32" in path.read_bytes()
    [back] = journal.pending(store)
    assert back.to_dict() == plan.to_dict()
    old = plan.to_dict()  # an older journal: embeddings as lists of decimals
    path.write_text(json.dumps(old))
    [back] = journal.pending(store)
    assert back.to_dict() == plan.to_dict()
