"""Hybrid recall (issue 29 item 4): exact identifiers (versions, flags, tickets, file names, error
codes) are found by the lexical index (SQLite FTS5, consolidate/store/index/lexical.py) fused with the vectors
(consolidate/pipeline/recall.py), the same for the CLI, MCP, Python and the PreToolUse file recall; the
lexical side never returns a forgotten, superseded or undone memory; it is created for existing
stores on first use and rebuilt by ``doctor --repair``. MiniLM embeddings; a store of 300 memories
(the curated long-term memories of ../shared/data/realnotes when present)."""

from __future__ import annotations

import json
import os
import sqlite3
import string
import subprocess
import sys

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

import consolidate
from consolidate import Store
from consolidate.store.index import lexical
from consolidate.cli.main import main
from consolidate.mcp.server import build_server
from consolidate.pipeline.run import run_queue
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import keep
from preloaded import run as run_preloaded
from t30_store import stop
from test_recall import _memories

#: The reported case: memories naming a version that MiniLM puts below the floor for the version.
V19 = "The CSV importer skips rows with an empty tenant column; this changed in v1.9 together with the stricter date parser"
V18 = "Webhook signatures use HMAC-SHA256 since release v1.8; the verification helper in the payments module rejects unsigned calls"


def _record(i, text, vec, status="active"):
    return {"id": f"fill-{i:04d}", "document": text, "embedding": list(vec), "metadata": {
        "type": "fact", "status": status, "tier": "durable", "evidence": "user-stated", "confidence": "high",
        "last_confirmed": "2026-07-01", "scope": "app", "session_id": "seed", "run_id": "seed", "source": "import",
        "prompt_version": "", "provenance": "{}", "fields": "{}"}}


_VECTORS: dict[tuple, list] = {}  # (embedding, texts) -> their vectors: the module's two stores of 300 embed them once


def _fill(store, n=300):
    lt = store.longterm()
    texts = _memories(n)
    key = (store.embedding_name, tuple(texts))
    if key not in _VECTORS:
        _VECTORS[key] = [list(v) for v in lt.embed(texts)]
    lt.upsert([_record(i, t, v) for i, (t, v) in enumerate(zip(texts, _VECTORS[key]))])


def _apply(store, sid, *statements):
    """One session through the pipeline (scripted keeps): apply writes the memories."""
    for s in statements:
        store.sessions.add_note(sid, s)
    store.sessions.end(sid, "success")
    judge = ScriptedJudge({s[:40]: keep(s) for s in statements})
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([judge]))
    return plan


def _ids(store, statement):
    return [r["id"] for r in store.longterm().all() if r["document"] == statement]


def _flagged(project, texts):
    """A hash-embedding store at ``project/.memofs`` holding ``texts`` as flagged constraints of one
    consolidated session; returned open."""
    store = Store(project / ".memofs", embedding="hash")
    for t in texts:
        store.sessions.add_note("m1", t, flag=True, kind="constraint")
    store.sessions.end("m1", "success")
    run_queue(store, judges=["noop"])
    return store


def _env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def _cli(store_path, *args):
    """The installed ``consolidate recall`` command, by its console script (what the reported case ran)."""
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "consolidate"), "recall", *args,
                           "--store", str(store_path)], capture_output=True, text=True, timeout=300, env=_env())


def _mcp(store_path, **arguments):
    async def go():
        async with Client(build_server(Store(store_path), spawn=None)) as client:
            return await client.call_tool("recall", arguments)

    return anyio.run(go)


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """300 memories, and the two of the report written by a run (apply)."""
    path = tmp_path_factory.mktemp("hybrid") / ".memofs"
    store = Store(path, project="app")
    _fill(store)
    _apply(store, "s1", V19, V18)
    store.close()
    return path


@pytest.mark.spawns
def test_the_reported_identifiers_are_found_through_the_installed_command(reported):
    """``recall "v1.9"`` and ``recall "release v1.8"``: the vectors alone put the memories naming
    them under the floor (checked here); the installed command, MCP and Python return them, marked
    as lexical matches, the same ids everywhere."""
    store = Store(reported)
    ef = store.embedder()
    for query, text in (("v1.9", V19), ("release v1.8", V18)):
        q, m = ef.embed([query, text])
        assert sum(a * b for a, b in zip(q, m)) < 0.2  # what the vectors alone say: below the floor
        out = _cli(reported, query, "--json")
        assert out.returncode == 0, out.stderr
        hits = json.loads(out.stdout)
        [mine] = [h for h in hits if h["statement"] == text]
        assert mine["match"] == "lexical" and mine["similarity"] < 0.2
        py = consolidate.recall(store, query)
        assert [h["id"] for h in py.memories] == [h["id"] for h in hits]
        mcp = _mcp(reported, query=query)
        assert [m["id"] for m in mcp.structured_content["memories"]] == [h["id"] for h in hits]
        assert any(m["match"] == "lexical" for m in mcp.structured_content["memories"])
    text = _cli(reported, "v1.9")
    assert text.returncode == 0 and "v1.9 together with the stricter date parser" in text.stdout


def test_an_unrelated_query_still_finds_nothing(reported):
    """The lexical side returns below the floor only a memory holding an identifier of the query or
    all its words: a query sharing common words finds nothing at a high floor."""
    res = consolidate.recall(Store(reported), "zebra migration patterns across the Serengeti in the dry season",
                             min_similarity=0.3)
    assert res.memories == [] and res.below_floor == 5


# -- identifiers of every shape: Hypothesis ---------------------------------------------------------

_word = st.text(string.ascii_lowercase, min_size=3, max_size=8)
_IDENTIFIERS = st.one_of(
    st.builds(lambda a, b: f"v{a}.{b}", st.integers(0, 40), st.integers(0, 99)),  # version
    st.builds(lambda a, b, c: f"{a}.{b}.{c}", st.integers(0, 30), st.integers(0, 30), st.integers(0, 99)),
    st.builds(lambda a, b: f"--{a}-{b}", _word, _word),  # flag
    st.builds(lambda a: f"--{a}", _word),
    st.builds(lambda a, n: f"{a.upper()}-{n}", _word, st.integers(1, 99999)),  # ticket
    st.builds(lambda d, f, e: f"{d}/{f}.{e}", _word, _word, st.sampled_from(["py", "ts", "rs", "dart", "go"])),
    st.builds(lambda d, f: f"src/{d}/{f}.py", _word, _word),  # a path
    st.builds(lambda n: f"E{n:04d}", st.integers(0, 9999)),  # error code
    st.builds(lambda a: "E" + a.upper(), _word),  # errno-like (ECONNREFUSED)
    st.builds(lambda a, b: f"{a}_{b}", _word, _word),  # snake_case
    st.builds(lambda a, b: a.capitalize() + b.capitalize(), _word, _word),  # CamelCase
    st.text("абвгдежзиклмнопрстуфхцчшщэюя", min_size=4, max_size=9),  # Cyrillic word
    st.text("αβγδεζηθικλμνξοπρστυφχψω", min_size=4, max_size=9),  # Greek
    st.text("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年", min_size=2, max_size=5),  # Chinese
    st.text("あいうえおかきくけこさしすせそたちつてとなにぬねの", min_size=3, max_size=6),  # Japanese kana
    st.text("कखगघचछजझटठडढणतथदधनपफबभमयरलवशसह", min_size=3, max_size=6),  # Devanagari
)


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    path = tmp_path_factory.mktemp("hybrid-prop") / ".memofs"
    store = Store(path, project="app")
    _fill(store)
    yield store
    store.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ident=_IDENTIFIERS, template=st.sampled_from([
    "Remember {} when the nightly job is set up again", "The deploy broke because of {}.",
    "{}: this is what the release checklist names", "We agreed (see {}) to keep the old endpoint"]))
def test_an_identifier_written_in_a_memory_is_found_by_recall_of_it(filled, ident, template):
    lt = filled.longterm()
    text = template.format(ident)
    lt.upsert([{**_record(9999, text, lt.embed([text])[0]), "id": "probe"}])
    try:
        res = consolidate.recall(filled, ident, record=False)
        assert "probe" in [h["id"] for h in res.memories], (ident, [h["document"][:50] for h in res.memories])
    finally:
        lt.delete(["probe"])
    assert "probe" not in [h["id"] for h in consolidate.recall(filled, ident, record=False).memories]


_PIECES = list('"*^:()-+{}[]\'.,/\\ _') + ["AND", "OR", "NOT", "NEAR", "NEAR(", " AND ", " OR ", "x", "é", "日",
                                              "\u0301", "\x00", "v1.9", "--"]
_SPECIAL = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=20).map("".join)


@settings(max_examples=400, deadline=None)
@given(query=st.one_of(_SPECIAL, st.text(min_size=1, max_size=60)))
def test_fts_syntax_in_a_query_never_raises(query):
    """Any text, FTS5 operators and quotes included, is a query of terms: the lexical search answers
    (possibly nothing), never an FTS5 syntax error."""
    idx = lexical.LexicalIndex(":memory:")
    idx.upsert([{"id": "a", "document": 'use "quotes" AND stars * and NEAR(x y) -- v1.9', "metadata": {"status": "active",
                                                                                                  "tier": "durable"}}])
    idx.search(lexical.parse_query(query))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=_SPECIAL.filter(lambda q: q.strip() and "\x00" not in q))
def test_fts_syntax_through_recall_never_raises(filled, query):
    consolidate.recall(filled, query, record=False)


# -- kept in step: forget, supersede, undo, migration, repair ----------------------------------------


def test_forgotten_and_undone_memories_are_never_returned_by_the_lexical_side(minilm_store):
    store = minilm_store
    forgotten = "Builds of the billing worker must pass --no-verify-ssl to reach the staging mirror PROJ-4711"
    undone = "The mobile release train tags builds as rc-2026.11.3 before QA signs off"
    _apply(store, "s1", forgotten)
    plan = _apply(store, "s2", undone)
    [fid] = _ids(store, forgotten)
    assert fid in [h["id"] for h in consolidate.recall(store, "PROJ-4711").memories]
    assert main(["forget", "--store", str(store.path), fid, "--reason", "the mirror has a valid certificate now"]) == 0
    assert main(["undo", "--store", str(store.path), plan.run_id]) == 0
    for query, text in (("PROJ-4711", forgotten), ("--no-verify-ssl", forgotten), ("rc-2026.11.3", undone)):
        got = consolidate.recall(store, query, min_similarity=-1, k=50, include_quarantined=True).memories
        assert text not in [h["document"] for h in got]
    idx = lexical.ensure(store, store.longterm())
    try:  # the index itself: no record of either, whatever the status asked for
        q = lexical.parse_query("PROJ-4711 rc-2026.11.3")
        assert idx.search(q, statuses=("active", "disputed", "quarantined", "forgotten", "superseded"), tier=None) == []
    finally:
        idx.close()


def test_a_superseded_memory_is_left_out(minilm_store):
    """A memory archived by a later run (apply deletes it from the vectors) leaves the lexical index."""
    store = minilm_store
    old = "The API gateway listens on port 8080 behind nginx (ticket OPS-2231)"
    _apply(store, "s1", old)
    [mid] = _ids(store, old)
    lt = store.longterm()
    with store.lock():
        lt.update_metadata(mid, {"status": "superseded"})
    assert mid not in [h["id"] for h in consolidate.recall(store, "OPS-2231", min_similarity=-1).memories]
    with store.lock():
        lt.delete([mid])
    assert mid not in [h["id"] for h in consolidate.recall(store, "OPS-2231", min_similarity=-1).memories]


@pytest.mark.spawns
def test_an_existing_store_gets_its_index_on_first_use_and_doctor_repairs_it(minilm_store):
    """A store made before the lexical index (its file absent), or one whose file is out of step or
    not a database: recall builds it again; ``doctor`` reports it and ``--repair`` rebuilds it. Every
    memory written by a run (doctor checks the recall index against the event log first)."""
    _apply(minilm_store, "s1", V19, V18, "Integration tests need the Postgres container started with make db-up",
           "Deploys go through the staging cluster before production")
    path = minilm_store.path
    minilm_store.close()
    lex = path / lexical.INDEX_FILE
    lex.unlink()
    assert "lexical" in _doctor(path, repair=False)
    assert V19 in [h["document"] for h in consolidate.recall(Store(path), "v1.9").memories]
    assert lex.exists() and "lexical" not in _doctor(path, repair=False)
    db = sqlite3.connect(lex)
    with db:
        db.execute("UPDATE meta SET value = 'stale' WHERE key = 'generation'")
        db.execute("DELETE FROM docs")
    db.close()
    assert "lexical" in _doctor(path, repair=False)
    assert "lexical" in _doctor(path, repair=True)
    assert "lexical" not in _doctor(path, repair=False)
    lex.write_bytes(b"not a database at all" * 100)
    assert V18 in [h["document"] for h in consolidate.recall(Store(path), "release v1.8").memories]


def _doctor(path, repair):
    """``consolidate doctor`` in a new process forked from one with chromadb imported (tests/support/preloaded.py)."""
    args = ["doctor", "--store", str(path)] + (["--repair"] if repair else [])
    out = run_preloaded(args, env=_env(), timeout=300)
    return out.stdout + out.stderr


@pytest.mark.spawns
def test_a_read_only_store_answers_from_an_index_in_memory(reported, tmp_path):
    """A read-only store without the lexical file (made before it): recall builds the index in
    memory and finds the identifier; nothing is written."""
    import shutil

    from test_store_access import _read_only_runner

    path = tmp_path / "ro" / ".memofs"
    shutil.copytree(reported, path)
    (path / lexical.INDEX_FILE).unlink()
    ro = _read_only_runner(path)
    if ro is None:
        pytest.skip("no way to make a read-only folder here (root without mount rights)")
    try:
        out = ro("recall", "v1.9", "--json", "--store", str(path))
    finally:
        stop(("ro", str(path)))
    assert out.returncode == 0, out.stderr
    assert V19 in [h["statement"] for h in json.loads(out.stdout)]
    assert not (path / lexical.INDEX_FILE).exists()


# -- file recall (the PreToolUse hook) ----------------------------------------------------------------


@pytest.mark.spawns
def test_file_recall_finds_a_file_the_memory_names_by_its_words(tmp_path):
    """The graph's entities miss ``main.dart`` and ``Dockerfile``; the lexical index (read by the
    hook with sqlite3 alone) names them; a forgotten memory is not printed."""
    from test_hook_lifecycle import fire, install, payload

    project = tmp_path / "proj"
    project.mkdir()
    settings_ = install(project, "--store", ".memofs", "--embedding", "hash", "--judge", "noop")
    dart = "main.dart must create the Riverpod ProviderScope before runApp, or the router throws at start"
    docker = "The Dockerfile pins the base image by digest; bump it with the renovate PR, never by hand"
    store = _flagged(project, (dart, docker))
    [did] = _ids(store, dart)
    store.close()

    def context(path):
        p = payload("PreToolUse", "edit", project, tool_name="Read", tool_input={"file_path": str(project / path)})
        out = fire(settings_, "PreToolUse", p, tool="Read")
        return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""

    assert "Riverpod ProviderScope" in context("lib/main.dart")
    assert "pins the base image" in context("Dockerfile")
    assert context("lib/other.dart") == ""
    assert main(["forget", "--store", str(project / ".memofs"), did, "--reason", "wrong"]) == 0
    p = payload("PreToolUse", "edit2", project, tool_name="Read", tool_input={"file_path": str(project / "lib/main.dart")})
    assert "Riverpod" not in fire(settings_, "PreToolUse", p, tool="Read")


def test_file_recall_matches_whole_path_components(tmp_path):
    """A memory naming ``app.py`` is printed for ``src/app.py``, not for ``src/myapp.py`` nor
    ``app.pyc``; one naming ``lib/util.py`` for ``src/lib/util.py``, not for ``mylib/util.py`` nor
    the root ``util.py`` (before, both of those got it: ``mylib/util.py`` ends with ``lib/util.py``
    as a string, and the bare name ``util.py`` was taken for the path)."""
    from consolidate.agents.file_recall import file_context

    project = tmp_path / "proj"
    for f in ("src/app.py", "src/myapp.py", "app.pyc", "lib/util.py", "mylib/util.py", "util.py", "src/lib/util.py"):
        (project / f).parent.mkdir(parents=True, exist_ok=True)
        (project / f).write_text("x\n")
    app = "app.py must call check_token() before refresh_session(), or expired tokens pass"
    util = "lib/util.py must stay free of network calls so the tests run offline"
    _flagged(project, (app, util)).close()

    def shown(path):
        payload = {"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Read", "cwd": str(project),
                   "tool_input": {"file_path": str(project / path)}}
        return file_context(project / ".memofs", payload, root=project, update=False)[1]

    assert shown("src/app.py") == [app] and shown("app.pyc") == [] and shown("src/myapp.py") == []
    assert shown("lib/util.py") == [util] and shown("src/lib/util.py") == [util]
    assert shown("mylib/util.py") == [] and shown("util.py") == []


_PART = st.text("abpy_", min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PART, min_size=0, max_size=3), st.lists(_PART, min_size=0, max_size=3), _PART, _PART)
def test_names_file_is_by_whole_components(named_dirs, rel_dirs, name, ext):
    """names_file: a named path names a file exactly when it is the file's path or a tail of it
    after a ``/``; a bare name names every file of that name and no other."""
    from consolidate.agents.file_recall import names_file

    base = f"{name}.{ext}"
    named, rel = "/".join([*named_dirs, base]), "/".join([*rel_dirs, base])
    want = rel == named or rel.endswith("/" + named)
    terms = {named, base} if "/" in named else {base}
    assert names_file(rel, base, terms) == want, (named, rel)
    assert not names_file(rel, base, {"x" + base, base + "c", f"{name}.{ext}x"})


@pytest.mark.spawns
def test_the_hook_path_imports_nothing_heavy_for_the_lexical_index():
    code = ("import sys, consolidate.store.index.lexical, consolidate.agents.file_recall;"
            "print([m for m in ('chromadb', 'numpy', 'onnxruntime', 'pydantic', 'litellm') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


# -- terms ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,query", [
    ("Release v1.9 dropped the sync endpoint.", "v1.9"), ("Release v1.9 dropped it", "1.9"),
    ("never use git commit --no-verify", "--no-verify"), ("never use git commit --no-verify", "no-verify"),
    ("see PROJ-1234 for the plan", "proj-1234"), ("edit src/app/main.py first", "main.py"),
    ("edit src/app/main.py first", "app/main.py"), ("rustc says E0308 here", "e0308"),
    ("the call fails with ECONNREFUSED on CI", "ECONNREFUSED"), ("call load_user_profile() once", "load_user_profile"),
    ("HttpClientFactory is a singleton", "HttpClientFactory"), ("HttpClientFactory is a singleton", "client factory"),
    ("設定ファイルは毎回読み込む", "設定ファイル"), ("Конфигурация читается один раз", "конфигурация"),
    ("हिन्दी में लिखा गया नोट", "हिन्दी"), ("Ｖ１．９ full width", "v1.9"), ("naïve café rule", "cafe"),
])
def test_terms_of_identifiers_and_scripts(text, query):
    idx = lexical.LexicalIndex(":memory:")
    idx.upsert([{"id": "m", "document": text, "metadata": {"status": "active", "tier": "durable"}}])
    [hit] = idx.search(lexical.parse_query(query))
    assert hit.admitted


def test_a_flag_is_not_the_word():
    """``--out`` finds the memory with the flag, not one with the word ``out``."""
    idx = lexical.LexicalIndex(":memory:")
    idx.upsert([{"id": "word", "document": "write the report out to disk", "metadata": {"status": "active", "tier": "durable"}},
                {"id": "flag", "document": "pass --out report.json to the exporter", "metadata": {"status": "active",
                                                                                                 "tier": "durable"}}])
    assert [m.id for m in idx.search(lexical.parse_query("--out"))] == ["flag"]


def test_lexical_ranks_do_not_depend_on_the_order_the_index_was_written(tmp_path):
    """Equal BM25 scores share a rank and ties are ordered by id: an index written in another order
    (a rebuild by doctor --repair) gives the same ranking, so fused recall is the same after a repair
    (found by tests/unit/store/test_damaged_store.py: two memories of equal vector similarity swapped places)."""
    from consolidate.store.index import lexical

    records = [{"id": f"mem-{i:02d}", "document": f"In project proj{i}, the gateway job runs after the migration",
                "metadata": {"status": "active", "tier": "durable"}} for i in range(8)]
    ranks = []
    for name, order in (("a", records), ("b", list(reversed(records)))):
        idx = lexical.LexicalIndex(tmp_path / f"{name}.sqlite3")
        idx.upsert(order)
        ranks.append([(m.id, m.rank) for m in idx.search(lexical.parse_query("gateway migration"))])
        idx.close()
    assert ranks[0] == ranks[1]
    assert len({r for _, r in ranks[0]}) == 1 and len(ranks[0]) == 8  # one score: one shared rank
