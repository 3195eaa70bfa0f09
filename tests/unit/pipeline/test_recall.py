"""One recall everywhere (issue 15, seam 6): ``consolidate recall``, the MCP ``recall`` tool and
``consolidate.recall`` run the same function with the same options: the similarity floor, the
quarantined-best-match note, the validation of k and the floor. A store of 300 memories (curated
project memories from ../shared/data/realnotes/longterm when present) with the MiniLM embedding."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest
from mcp import Client

import consolidate
from consolidate import Store
from consolidate.core.errors import BadInput
from consolidate.mcp.server import build_server

import preloaded
from conftest import SHARED

QUARANTINED = "The nightly export job writes its CSV files to /srv/exports/nightly on the batch host"


def _memories(n: int = 300) -> list[str]:
    texts: list[str] = []
    for path in sorted((SHARED / "data" / "realnotes" / "longterm").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            content = json.loads(line).get("content", "").strip()
            if 40 <= len(content) <= 400 and content not in texts:
                texts.append(content)
    if len(texts) < n:  # ../shared absent: generated statements of the same shape
        tools = ["pnpm", "ruff", "pytest", "docker compose", "alembic", "vite", "terraform", "celery", "redis", "nginx"]
        for i in range(n - len(texts)):
            texts.append(f"Use {tools[i % 10]} for task {i} in module m{i // 10}; it was chosen in review {i * 7}")
    return texts[:n]


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("recall") / ".memofs"
    store = Store(path, project="app")
    lt = store.longterm()
    texts = _memories()
    vectors = lt.embed(texts + [QUARANTINED])
    records = []
    for i, (text, vec) in enumerate(zip(texts + [QUARANTINED], vectors)):
        quarantined = text == QUARANTINED
        records.append({"id": f"mem-{i:04d}", "document": text, "embedding": vec, "metadata": {
            "type": "fact", "status": "quarantined" if quarantined else "active", "tier": "durable",
            "evidence": "inferred" if quarantined else "user-stated", "confidence": "low" if quarantined else "high",
            "last_confirmed": "2026-07-01", "scope": "app", "session_id": "seed", "run_id": "seed", "source": "import",
            "prompt_version": "", "provenance": "{}", "fields": "{}"}})
    lt.upsert(records)
    store.close()
    return path


def _cli(store_path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    argv = ["recall", "--store", str(store_path), *args]
    if sum(len(a) for a in args) > 10_000:  # a query near the argv limit: a real exec (and over the fork server's request size)
        return subprocess.run([sys.executable, "-m", "consolidate", *argv], capture_output=True, text=True, env=env,
                              timeout=300)
    # a forked command process (issue 30): its start-up is not what these tests pin
    return preloaded.run(argv, env=env, timeout=300)


def _mcp(store_path, **arguments):
    async def main():
        async with Client(build_server(Store(store_path), spawn=None)) as client:
            return await client.call_tool("recall", arguments)

    return anyio.run(main)


@pytest.mark.spawns
@pytest.mark.parametrize("query", ["which package manager does the project use",
                                   "how are database migrations run",
                                   "banana bread recipe with walnuts and cinnamon"])
def test_cli_mcp_and_python_return_the_same_memories(big_store, query):
    py = consolidate.recall(Store(big_store), query, k=8)
    cli = _cli(big_store, query, "-k", "8", "--json")
    assert cli.returncode == 0, cli.stderr
    mcp = _mcp(big_store, query=query, k=8)
    assert not mcp.is_error
    ids = [h["id"] for h in py.memories]
    assert [h["id"] for h in json.loads(cli.stdout)] == ids
    assert [m["id"] for m in mcp.structured_content["memories"]] == ids
    # the floor holds everywhere: nothing below 0.2 (MCP returned -0.05 before) but an exact match of
    # the lexical index (consolidate/store/index/lexical.py), which says so
    assert all(h["similarity"] >= 0.2 or h["match"] == "lexical" for h in py.memories)
    assert all(m["similarity"] >= 0.2 or m["match"] == "lexical" for m in mcp.structured_content["memories"])
    assert mcp.structured_content["below_floor"] == py.below_floor


@pytest.mark.spawns
def test_unrelated_query_finds_nothing_and_says_how_many_were_below(big_store):
    query = "zebra migration patterns across the Serengeti in the dry season"
    py = consolidate.recall(Store(big_store), query, k=5, min_similarity=0.3)
    assert py.memories == [] and py.below_floor == 5
    assert _mcp(big_store, query=query, k=5, min_similarity=0.3).structured_content["count"] == 0
    out = _cli(big_store, query, "--min-similarity", "0.3")
    assert out.returncode == 0 and "no memory at similarity 0.3 or more (5 less similar" in out.stdout
    assert len(consolidate.recall(Store(big_store), query, k=5, min_similarity=-1).memories) == 5


@pytest.mark.spawns
def test_a_quarantined_best_match_is_named_not_hidden(big_store):
    query = "where does the nightly export write its CSV files"
    py = consolidate.recall(Store(big_store), query, k=3)
    assert QUARANTINED not in [h["document"] for h in py.memories]
    assert py.quarantined_best["document"] == QUARANTINED and "best match is quarantined" in py.note
    mcp = _mcp(big_store, query=query, k=3).structured_content
    assert "best match is quarantined" in mcp["note"] and QUARANTINED in mcp["note"]
    cli = _cli(big_store, query, "-k", "3")
    assert cli.returncode == 0 and "note: the best match is quarantined" in cli.stdout
    # asked for, it is returned, marked, and the note is gone
    with_q = consolidate.recall(Store(big_store), query, k=3, include_quarantined=True)
    assert with_q.memories[0]["document"] == QUARANTINED and with_q.note == ""
    cli = _cli(big_store, query, "-k", "3", "--include-quarantined")
    assert cli.stdout.splitlines()[0].endswith("[quarantined]")
    mcp = _mcp(big_store, query=query, k=3, include_quarantined=True).structured_content
    assert mcp["memories"][0]["status"] == "quarantined" and "note" not in mcp


@pytest.mark.spawns
@pytest.mark.parametrize("bad", [{"k": 0}, {"k": 51}, {"min_similarity": 2.0}, {"query": "  "},
                                 {"query": "why do migrations " * 223},  # 4,014 characters: just over the bound
                                 {"query": "почему миграции " * 2500}],  # 40,000 characters in another script (80 KB: under the argv limit)
                         ids=["k0", "k51", "floor", "blank", "long", "very-long-cyrillic"])
def test_bad_options_are_refused_the_same_way(big_store, bad):
    args = {"query": "database migrations", "k": 5, "min_similarity": 0.2, **bad}
    with pytest.raises(BadInput):
        consolidate.recall(Store(big_store), args["query"], k=args["k"], min_similarity=args["min_similarity"],
                           max_k=50)
    res = _mcp(big_store, **args)
    assert res.is_error and "\n" not in res.content[0].text
    if "min_similarity" in bad or "query" in bad:
        out = _cli(big_store, args["query"], "--min-similarity", str(args["min_similarity"]))
        assert out.returncode == 2 and out.stderr.startswith("error: ")


def test_a_query_at_the_bound_is_answered(big_store):
    from consolidate.pipeline.recall import MAX_QUERY_CHARS

    query = ("database migrations " * 400)[:MAX_QUERY_CHARS]
    assert len(consolidate.recall(Store(big_store), query, k=3, min_similarity=-1).memories) == 3


def test_recall_on_a_missing_store_creates_nothing(tmp_path):
    result = consolidate.recall(Store(tmp_path / "none", create=False), "anything")
    assert result.memories == [] and not result.store_exists and not (tmp_path / "none").exists()
