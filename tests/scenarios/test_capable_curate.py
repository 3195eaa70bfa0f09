"""Capable-model answers to the curation prompts (issue 31 items 2 and 5), replayed offline through
``consolidate curate`` and the CLI judge's cassettes (judges/cli_cassette.py).

How they were made (written in each cassette's ``how``): the stores judge-v1 wrote for the 14
validation sessions of the dev-label split (benchmarks/bench_curate.py ``build``: the capable judge-v1
end-to-end cassette replayed, MiniLM, every ``last_confirmed`` pinned to 2026-12-02), every group's
prompt captured with ../shared/tools/judgelab, answered by fresh helpers who saw only the prompt files,
replayed and recorded. Two curators graded the stores before any pass (cassettes/curate-grades/).

The test builds the same stores, replays each cassette with the CLI absent (a changed prompt, member
line or grouping misses the cassette: the group is deferred and the counts differ), and checks the
counts and figures recorded beside the cassettes (``curate-capable.expected.json``; rewritten by
``python tests/scenarios/test_capable_curate.py``), then what the issue asks of the default prompt
against the first one. Skipped, with the reason, when ../shared is absent."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from paths import REPO

_spec = importlib.util.spec_from_file_location("bench_curate", REPO / "benchmarks" / "bench_curate.py")
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

CASSETTES = REPO / "cassettes"
GRADES = [CASSETTES / "curate-grades" / f"validation-{n}.json" for n in (1, 2)]
EXPECTED = CASSETTES / "curate-capable.expected.json"

#: The prompt templates these cassettes cover (read by tests/scenarios/test_prompt_regression.py's meta-test).
PROMPT_CASSETTES = {
    "curate-v1": ("curate-v1-validation-2-capable.yaml", "curate-v1-tuning-capable.yaml"),
    "curate-v2": ("curate-v2-validation-capable.yaml", "curate-v2-tuning-capable.yaml"),
    "curate-v3": ("curate-v3-validation-capable.yaml", "curate-v3-validation-2-capable.yaml",
                  "curate-v3-tuning-capable.yaml", "curate-v3-validation-judge-v11-capable.yaml"),
    "curate-v4": ("curate-v4-validation-capable.yaml", "curate-v4-validation-2-capable.yaml",
                  "curate-v4-validation-judge-v11-capable.yaml", "curate-v4-validation-judge-v11-2-capable.yaml"),
    "curate-v5": ("curate-v5-validation-capable.yaml", "curate-v5-validation-judge-v11-capable.yaml",
                  "curate-v5-validation-judge-v11-2-capable.yaml"),
}
#: The counts of a pass's summary (consolidate/pipeline/curate/curation.py ``summary``) pinned here.
COUNTS = ("considered", "groups", "kept", "merged", "dropped", "conflicts", "for_review", "deferred_groups")
#: after-store name -> (prompt version, validation answers: a CLI cassette, or a judgelab answer folder
#: replayed by ../shared/tools/judgelab/replay.sh)
PASSES = {"after-curate-v1": ("curate-v1", "curate-v1-validation-capable"),
          "after-curate-v1-2": ("curate-v1", "curate-v1-validation-2-capable.yaml"),
          "after-curate-v2": ("curate-v2", "curate-v2-validation-capable.yaml"),
          "after-curate-v3": ("curate-v3", "curate-v3-validation-capable.yaml"),
          "after-curate-v3-2": ("curate-v3", "curate-v3-validation-2-capable.yaml"),
          "after-curate-v4": ("curate-v4", "curate-v4-validation-capable.yaml"),
          "after-curate-v4-2": ("curate-v4", "curate-v4-validation-2-capable.yaml"),
          "after-curate-v5": ("curate-v5", "curate-v5-validation-capable.yaml")}
#: Groups per pass over the 14 validation stores: v4's wide links join more, v5 packs them into groups of
#: up to 40, so a store is one group (consolidate/pipeline/curate/groups.py).
GROUPS = {"curate-v4": 30, "curate-v5": 13}


@pytest.fixture(scope="module")
def passes(tmp_path_factory):
    """The validation stores, then each recorded pass replayed on a copy (see :func:`replay_passes`)."""
    if not bench.LABELS.is_file():
        pytest.skip(f"labels not found at {bench.LABELS} (../shared is absent)")
    return replay_passes(tmp_path_factory.mktemp("curate-capable"))


def replay_passes(data: Path) -> dict:
    """Build the validation stores under ``data`` and replay every pass of PASSES on its own copy:
    ``{"counts": {pass: curate counts}, "grades": the curators' figures, "gold": the gold figures}``."""
    bench.build(data, "validation")
    counts = {}
    for name, (version, answers) in PASSES.items():
        if answers.endswith(".yaml"):
            got = bench.curate(data, name, "cli:template:/nonexistent/capable-model", version,
                               CONSOLIDATE_CASSETTE=str(CASSETTES / answers))
        else:
            got = bench.curate(data, name, f"cli:template:{bench.JUDGELAB / 'replay.sh'}", version,
                               JUDGELAB_ANSWERS=str(CASSETTES / answers))
        total = {k: sum(r["summary"][k] for r in got.values()) for k in COUNTS}
        counts[name] = total
    return {"counts": counts, "grades": bench.grade_figures(data, GRADES), "gold": bench.gold_figures(data)}


def _shares(figures: dict, what: str) -> list[float]:
    return [c[what] for c in figures["curators"]]


@pytest.mark.spawns
def test_recorded_passes_come_out_again(passes):
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    got = _expected(passes)
    assert got["counts"] == expected["counts"]
    assert all(c["deferred_groups"] == 0 for c in got["counts"].values())  # no miss
    assert {name: c["groups"] for name, c in got["counts"].items()} == {name: GROUPS.get(version, 27)
                                                                        for name, (version, _) in PASSES.items()}
    assert got["grades"] == expected["grades"] and got["gold"] == expected["gold"]


@pytest.mark.spawns
def test_the_default_prompt_leaves_fewer_repeats_and_less_junk_than_v1_and_keeps_every_gold_keeper(passes):
    """curate-v3, curate-v4 and curate-v5, the default, each on its answer sets, against curate-v1:
    fewer duplicates among the active memories by each curator, no contradicting pair left active,
    every gold keeper that was active before still active (merged ones count in their survivor), less
    junk than before the pass. The answer sets made before the helpers were told that runs of x are
    redactions (v1, v3, v4's first) also leave no more junk than v1's; the later ones (v4's second,
    v5's) drop fewer memories: one curator counts 5.4-5.5 % junk after them, above the issue's 5 %."""
    g, gold = passes["grades"], passes["gold"]
    for name in ("after-curate-v3", "after-curate-v3-2", "after-curate-v4", "after-curate-v4-2", "after-curate-v5"):
        for v1 in (g["after-curate-v1"], g["after-curate-v1-2"]):
            assert all(a <= b for a, b in zip(_shares(g[name], "duplicates"), _shares(v1, "duplicates")))
            if name in ("after-curate-v3", "after-curate-v3-2", "after-curate-v4"):
                assert all(a <= b for a, b in zip(_shares(g[name], "junk"), _shares(v1, "junk")))
        assert sum(_shares(g[name], "duplicates")) < sum(_shares(g["before"], "duplicates"))
        assert all(a < b for a, b in zip(_shares(g[name], "junk"), _shares(g["before"], "junk")))
        assert _shares(g[name], "unresolved_contradictions") == [0, 0]
        assert gold[name]["gold_keepers_active"] == gold["before"]["gold_keepers_active"]
    # curate-v2 leaves the fewest repeats, but folds away memories no curator read as repeats
    v2 = g["after-curate-v2"]["proposals"]
    v3 = g["after-curate-v3"]["proposals"]
    assert v2["merges"] - max(v2["merges_graded_duplicate"]) > v3["merges"] - max(v3["merges_graded_duplicate"])


#: The validation stores judge-v11 wrote, curated by curate-v3 (issue 31 item 5), graded by two more curators.
V11_EXPECTED = CASSETTES / "curate-judge-v11-capable.expected.json"
V11_GRADES = [CASSETTES / "curate-grades" / f"validation-judge-v11-{n}.json" for n in (1, 2)]


#: after-store name -> prompt version, for judge-v11's validation stores; the answers are
#: ``<version>-validation-judge-v11[-2]-capable.yaml`` (``-2``: the second answer set).
V11_PASSES = {"after-curate-v3": "curate-v3", "after-curate-v4": "curate-v4", "after-curate-v4-2": "curate-v4",
              "after-curate-v5": "curate-v5", "after-curate-v5-2": "curate-v5"}


def replay_v11(data: Path) -> dict:
    """judge-v11's validation stores (its all-sessions cassette) under ``data``, each recorded pass of
    V11_PASSES on a copy: counts, both curators' figures, gold figures (as :func:`_expected`)."""
    bench.build(data, "validation", "judge-v11")
    counts = {}
    for name, version in V11_PASSES.items():
        answers = f"{version}-validation-judge-v11{'-2' if name.endswith('-2') else ''}-capable.yaml"
        got = bench.curate(data, name, "cli:template:/nonexistent/capable-model", version,
                           CONSOLIDATE_CASSETTE=str(CASSETTES / answers))
        counts[name] = {k: sum(r["summary"][k] for r in got.values()) for k in COUNTS}
    return _expected({"counts": counts, "grades": bench.grade_figures(data, V11_GRADES),
                      "gold": bench.gold_figures(data)})


@pytest.fixture(scope="module")
def v11(tmp_path_factory):
    """:func:`replay_v11` once for the tests below."""
    if not bench.LABELS.is_file():
        pytest.skip(f"labels not found at {bench.LABELS} (../shared is absent)")
    return replay_v11(tmp_path_factory.mktemp("curate-v11") / "v11")


@pytest.mark.spawns
def test_curate_v3_on_the_stores_judge_v11_wrote(v11):
    """The more generous judge-v11 (23 of 32 validation gold keepers active, against judge-v5's 17) with
    the default curation pass after it: the recorded figures come out again; the pass keeps every gold
    keeper, leaves fewer repeats and no more junk by each curator. What it does not reach (the issue's
    goals): duplicates stay above 2 % and a contradicting pair stays active."""
    got = v11
    assert got == json.loads(V11_EXPECTED.read_text(encoding="utf-8"))
    c, g, gold = got["counts"]["after-curate-v3"], got["grades"], got["gold"]
    assert c["deferred_groups"] == 0 and c["merged"] > 0
    assert gold["after-curate-v3"]["gold_keepers_active"] == gold["before"]["gold_keepers_active"]
    assert all(a < b for a, b in zip(_shares(g["after-curate-v3"], "duplicates"), _shares(g["before"], "duplicates")))
    assert all(a <= b for a, b in zip(_shares(g["after-curate-v3"], "junk"), _shares(g["before"], "junk")))


@pytest.mark.spawns
def test_curate_v4_s_wide_groups_leave_fewer_repeats_on_validation(v11):
    """curate-v4 (groups linked across types and to each memory's nearest neighbour, written from the
    tuning stores' misses: every repeat curate-v3 left active there had been grouped apart) against
    curate-v3 on judge-v11's validation stores: fewer duplicates by each curator, junk within the
    issue's 5 %, every gold keeper kept. Not reached: duplicates <= 2 %, no contradicting pair left."""
    got = v11
    c, g, gold = got["counts"]["after-curate-v4"], got["grades"], got["gold"]
    assert c["deferred_groups"] == 0
    assert all(a < b for a, b in zip(_shares(g["after-curate-v4"], "duplicates"), _shares(g["after-curate-v3"], "duplicates")))
    assert all(share <= 0.05 for share in _shares(g["after-curate-v4"], "junk_share_of_the_rest"))
    assert gold["after-curate-v4"]["gold_keepers_active"] == gold["before"]["gold_keepers_active"]


@pytest.mark.spawns
def test_curate_v5_reading_whole_stores_leaves_fewer_repeats_on_validation(v11):
    """curate-v5 (packed groups of up to 40: a small project's store read whole; written from the tuning
    stores, where every repeat v4 left active had been cut into different groups of 8) against curate-v4
    on judge-v11's validation stores, two answer sets each: fewer duplicates by each curator in every
    pairing, junk within the issue's 5 %. Gold keepers: the answer set told that runs of x are
    redactions keeps every one; the set not told dropped some redacted memories as garbled (3 fewer).
    Not reached in one set: no contradicting pair left (one pair, left by a v4 set too)."""
    got = v11
    g, gold = got["grades"], got["gold"]
    for v5 in ("after-curate-v5", "after-curate-v5-2"):
        assert got["counts"][v5]["deferred_groups"] == 0 and got["counts"][v5]["groups"] < got["counts"]["after-curate-v4"]["groups"]
        for v4 in ("after-curate-v4", "after-curate-v4-2"):
            assert all(a < b for a, b in zip(_shares(g[v5], "duplicates"), _shares(g[v4], "duplicates")))
        assert all(share <= 0.05 for share in _shares(g[v5], "junk_share_of_the_rest"))
    assert gold["after-curate-v5"]["gold_keepers_active"] == gold["before"]["gold_keepers_active"]
    assert all(share <= 0.02 for share in _shares(g["after-curate-v5-2"], "duplicate_share"))


def _expected(passes: dict) -> dict:
    gold = {k: {x: v[x] for x in ("gold_keepers", "gold_keepers_active", "labeled_drops_active")}
            for k, v in passes["gold"].items()}
    return {"counts": passes["counts"], "grades": passes["grades"], "gold": gold}


if __name__ == "__main__":  # rewrite the expected figures from a replay (after re-recording a cassette)
    import tempfile

    EXPECTED.write_text(json.dumps(_expected(replay_passes(Path(tempfile.mkdtemp(prefix="curate-capable")))), indent=1)
                        + "\n", encoding="utf-8")
    V11_EXPECTED.write_text(json.dumps(replay_v11(Path(tempfile.mkdtemp(prefix="curate-v11"))), indent=1) + "\n",
                            encoding="utf-8")
