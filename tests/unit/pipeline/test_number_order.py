"""Numbers in a different order are a different statement: without a judge such a pair is never
folded into one memory as a re-confirmation (new-user review: "port 8080 to port 3000" was taken as a
re-confirmation of "port 3000 to port 8080" at MiniLM similarity 0.996, and the new fact was lost).
The same kind without numbers: two words exchanged ("the tests before the linter" / "the linter
before the tests")."""

from __future__ import annotations

import pytest

from consolidate.cli.main import main
from consolidate.pipeline.run import run_queue
from consolidate.pipeline.stages.contradiction import DUPLICATE_SIMILARITY, same_memory, same_numbers, swapped
from consolidate.judges.chain import JudgeChain
from consolidate.judges.noop import NoopJudge

#: (first note, the same numbers swapped): each a different fact.
SWAPS = [
    ("The proxy forwards port 8080 to port 3000 in dev", "The proxy forwards port 3000 to port 8080 in dev"),
    ("Upgrade the runtime from Python 3.11 to 3.12 before the release",
     "Upgrade the runtime from Python 3.12 to 3.11 before the release"),
    ("Use approach 1 for module 2", "Use approach 2 for module 1"),
    ("The gateway uses timeout 30 s, retry 60 s", "The gateway uses timeout 60 s, retry 30 s"),
    ("Shard 0 replicates to shard 4 nightly", "Shard 4 replicates to shard 0 nightly"),
]
#: (first note, two of its words exchanged): each a different fact, no numbers to tell them apart.
WORD_SWAPS = [
    ("Run the tests before the linter in CI", "Run the linter before the tests in CI"),
    ("The proxy forwards staging traffic to production", "The proxy forwards production traffic to staging"),
    ("Scripts use pnpm, never npm", "Scripts use npm, never pnpm"),
    ("The worker reads from the primary database and writes to the replica database",
     "The worker reads from the replica database and writes to the primary database"),
]
#: (first note, the same fact in other words, the same numbers in the same order): duplicates.
RESTATEMENTS = [
    ("The proxy forwards port 8080 to port 3000 in dev", "In dev, the proxy forwards port 8080 to port 3000"),
    ("Upgrade the runtime from Python 3.11 to 3.12 before the release",
     "Upgrade the runtime from Python 3.11 to 3.12 before releasing"),
    ("The gateway uses timeout 30 s, retry 60 s", "The gateway uses a timeout of 30 s and a retry of 60 s"),
]


def memories(store):
    return store.longterm().collection.get(include=["documents"])["documents"]


def _session(store, sid, text):
    store.sessions.add_note(sid, text, flag=True, kind="fact")
    store.sessions.end(sid, "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([NoopJudge()]))
    return plan


@pytest.mark.parametrize("a, b", SWAPS)
def test_swapped_numbers_are_not_the_same_memory(a, b):
    assert not same_numbers(a, b)
    assert same_memory(a, b, 0.999) is False
    assert same_memory(a, b, 0.999, embed=lambda texts: [[1.0, 0.0]] * len(texts)) is False


@pytest.mark.parametrize("a, b", WORD_SWAPS)
def test_exchanged_words_are_not_the_same_memory(a, b):
    assert swapped(a, b) and same_numbers(a, b)
    assert same_memory(a, b, 0.999) is False
    assert same_memory(a, b, 0.999, embed=lambda texts: [[1.0, 0.0]] * len(texts)) is False


@pytest.mark.parametrize("a, b", RESTATEMENTS)
def test_same_numbers_in_the_same_order_still_match(a, b):
    assert same_numbers(a, b) and not swapped(a, b)  # a moved phrase ("in dev, ...") is no swap
    assert same_memory(a, b, 0.999) is True
    assert same_memory(a, b, 0.9) is False  # below DUPLICATE_SIMILARITY: left to the judge


def test_swaps_are_two_memories_and_restatements_reconfirm_with_minilm(minilm_store):
    """Each pair through two sessions with the MiniLM embedding and no judge: a swap is written as its
    own memory (no re-confirmation), a restatement with the numbers in order re-confirms."""
    st = minilm_store
    for a, b in SWAPS + WORD_SWAPS + RESTATEMENTS:
        va, vb = st.embedder().embed([a, b])
        assert sum(x * y for x, y in zip(va, vb)) >= DUPLICATE_SIMILARITY, (a, b)  # the embedding alone folds them
    # one store per kind of pair would be slow: distinct topics in one store, nearest neighbour decides
    for k, (a, b) in enumerate(SWAPS + WORD_SWAPS):
        _session(st, f"swap-{k}-a", a)
        plan = _session(st, f"swap-{k}-b", b)
        assert not [e for e in plan.events if e["event"] == "memory.reconfirmed"], (a, b)
        assert a in memories(st) and b in memories(st)
    for k, (a, b) in enumerate(RESTATEMENTS):
        before = len(memories(st))
        if a not in memories(st):
            _session(st, f"same-{k}-a", a)
            before += 1
        plan = _session(st, f"same-{k}-b", b)
        assert [e["event"] for e in plan.events if e["event"] == "memory.reconfirmed"] == ["memory.reconfirmed"], (a, b)
        assert b not in memories(st) and len(memories(st)) == before


def test_reported_commands_keep_both_port_facts(tmp_path, monkeypatch, capsys):
    """The review's commands, in-process, default (MiniLM) embedding and no judge able to compare."""
    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / "sw"))
    monkeypatch.setenv("CONSOLIDATE_JUDGES", "noop")
    first, second = SWAPS[0]
    for sid, text in (("s1", first), ("s2", second)):
        assert main(["note", "--session", sid, text, "--flag", "--kind", "fact"]) == 0
        assert main(["end", "--session", sid, "--outcome", "success"]) == 0
        assert main(["run"]) == 0
    out = capsys.readouterr().out
    assert "re-confirmed" not in out.split("session s2")[-1].replace("0 re-confirmed", "")
    assert main(["recall", "proxy port"]) == 0
    recalled = capsys.readouterr().out
    assert first in recalled and second in recalled
