"""Curator grading of written stores (consolidate/evals/curation.py) and the end-to-end scorer's folded
keepers (issue 19, item 5): a keeper folded into another keeper of the same run lives on in that
keeper's memory; the curator export shows memories only (no label, no note id); grades turn into
the duplicate, junk and unresolved-contradiction figures.

Filed before as tests/test_curation.py (issue 19).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from consolidate.evals.curation import export_stores, read_stores, score_grades
from consolidate.evals.end_to_end import evaluate_end_to_end, render_end_to_end
from consolidate.core.errors import BadInput
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import keep
from paths import REPO


NOTES = [
    ("o1", "Remember: the payments gateway rejects requests after 30 s, so batch jobs send at most 200 rows", "keep"),
    ("o2", "Again: payments gateway drops anything slower than 30 s; keep batches at 200 rows or fewer", "keep"),
    ("o3", "[x] wired the export button", "drop"),
    ("o4", "Remember: the nightly backup of the orders table runs at 03:00 UTC from the ops cron", "keep"),
    ("o5", "Remember: quarantine me, I am a guess about caching", "drop"),
]


@pytest.fixture
def labeled(tmp_path):
    sessions = tmp_path / "realnotes" / "sessions"
    sessions.mkdir(parents=True)
    with open(sessions / "omega.jsonl", "w", encoding="utf-8") as f:
        for nid, text, _ in NOTES:
            f.write(json.dumps({"id": nid, "session_id": "omega", "section": "Notes", "content": text}) + "\n")
    labels = tmp_path / "labels" / "l.jsonl"
    labels.parent.mkdir()
    labels.write_text("".join(json.dumps({"id": nid, "session_id": "omega", "content": text, "verdict": v,
                                          "type": "constraint" if v == "keep" else None}) + "\n"
                              for nid, text, v in NOTES), encoding="utf-8")
    return labels


def _script(note):
    text = note.content
    if "gateway" in text:  # two notes, one rule: both kept with the same statement
        return keep("The payments gateway rejects requests slower than 30 s, so batch jobs send at most 200 rows.",
                    "constraint")
    if "backup" in text:
        return keep("The orders table is backed up nightly at 03:00 UTC by the ops cron.")
    if "guess" in text:
        return keep("A response cache would probably halve the checkout latency.", evidence="inferred",
                    confidence="low")
    return {"verdict": "drop", "reason": "scripted"}


@pytest.fixture
def run(labeled, tmp_path):
    report = evaluate_end_to_end(labeled, lambda: JudgeChain([ScriptedJudge(_script)]),
                                 keep_stores=tmp_path / "stores", embedding="hash")
    return report, tmp_path / "stores"


def test_a_keeper_folded_into_another_lives_on_in_its_memory(run):
    report, _ = run
    (s,) = report.sessions
    assert s.outcomes == {"o1": "active", "o2": "active", "o3": "dropped", "o4": "active", "o5": "quarantined"}
    assert s.folded == ["o2"]
    f = report.figures()
    assert (f["gold_keepers"], f["gold_keepers_active"], f["gold_keepers_active_folded"]) == (3, 3, 1)
    assert f["keeps_folded_as_duplicates"] == 1 and f["written"]["active"] == 2
    assert "of them folded into another keeper's memory: 1" in render_end_to_end(report)


def test_export_shows_memories_only(run, tmp_path):
    _, stores = run
    out = tmp_path / "curate" / "memories.md"
    got = export_stores(stores, out)
    assert got == {"memories": 3, "stores": 1, "file": str(out)}
    text = out.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.startswith("S01-")]
    assert len(lines) == 3 and any(ln.startswith("S01-M001 [active] ") for ln in lines)
    assert any("[quarantined] fact (inferred): A response cache" in ln for ln in lines)
    for hidden in ("o1", "o2", "keep", "drop", "scripted"):  # no note id, label or judge reason
        assert hidden not in text.replace("kept", "")
    key = json.loads(Path(f"{out}.key.json").read_text(encoding="utf-8"))
    assert set(key) == {ln.split()[0] for ln in lines} and all("text" not in v for v in key.values())
    assert [m["id"] for m in read_stores(stores)] == sorted(key)


def _grades(path, memories, contradictions=()):
    path.write_text(json.dumps({"memories": [{"id": i, "grade": g, **({"duplicate_of": d} if d else {})}
                                             for i, g, d in memories],
                                "contradictions": [{"ids": list(p), "why": "t"} for p in contradictions]}),
                    encoding="utf-8")
    return path


def test_grades_give_the_curator_figures(run, tmp_path):
    _, stores = run
    out = tmp_path / "memories.md"
    export_stores(stores, out)
    key = json.loads(Path(f"{out}.key.json").read_text(encoding="utf-8"))
    ids = sorted(key)
    active = [i for i in ids if key[i]["status"] == "active"]
    quarantined = [i for i in ids if key[i]["status"] == "quarantined"]
    a = _grades(tmp_path / "a.json", [(active[0], "ok", None), (active[1], "duplicate", active[0]),
                                      (quarantined[0], "junk", None)], [(active[0], quarantined[0])])
    b = _grades(tmp_path / "b.json", [(active[0], "ok", None), (active[1], "ok", None),
                                      (quarantined[0], "junk", None)], [(active[0], active[1])])
    r = score_grades(f"{out}.key.json", [a, b])
    ca, cb = r["curators"]
    assert ca["written"]["duplicates"] == 1 and ca["written"]["duplicate_share"] == pytest.approx(1 / 3)
    assert ca["written"]["junk"] == 1 and ca["written"]["junk_share_of_the_rest"] == pytest.approx(1 / 2)
    assert ca["active"]["junk"] == 0
    # a pair with a quarantined side waits for review; two active sides are unresolved
    assert (ca["unresolved_contradictions"], ca["flagged_contradictions"]) == (0, 1)
    assert (cb["unresolved_contradictions"], cb["unresolved_pairs"]) == (1, [sorted(active)])
    assert r["agreement"] == pytest.approx(2 / 3) and r["agreed"]["written"]["graded"] == 2
    assert r["agreed"]["contradictions"] == 0


def test_bad_grades_are_refused(run, tmp_path):
    _, stores = run
    out = tmp_path / "memories.md"
    export_stores(stores, out)
    bad = _grades(tmp_path / "bad.json", [("S09-M001", "ok", None)])
    with pytest.raises(BadInput, match="bad entry"):
        score_grades(f"{out}.key.json", [bad])
    (tmp_path / "worse.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(BadInput, match="memories"):
        score_grades(f"{out}.key.json", [tmp_path / "worse.json"])
    with pytest.raises(BadInput, match="no store"):
        export_stores(tmp_path / "nowhere", tmp_path / "x.md")


@pytest.mark.spawns
def test_benchmark_script_exports_and_scores(run, tmp_path):
    _, stores = run
    out = tmp_path / "m.md"
    script = str(REPO / "benchmarks" / "curator_grades.py")
    done = subprocess.run([sys.executable, script, "export", "--stores", str(stores), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    key = json.loads(Path(f"{out}.key.json").read_text(encoding="utf-8"))
    g = _grades(tmp_path / "g.json", [(i, "ok", None) for i in key])
    done = subprocess.run([sys.executable, script, "score", "--key", f"{out}.key.json", str(g)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "duplicates 0 of 3 written (0.0 %" in done.stdout and "unresolved contradictions: 0" in done.stdout


def test_a_repeat_of_a_memory_no_longer_active_is_no_repeat_among_the_active(tmp_path):
    """Grades made on the store before a curation pass score the store after it: among the active
    memories a repeat counts only while another memory of its repeated group is active too; a
    ``duplicate`` grade with no valid ``duplicate_of`` always counts (issue 31 item 5)."""
    key = {"S01-M001": {"status": "active"}, "S01-M002": {"status": "active"}, "S01-M003": {"status": "active"},
           "S01-M004": {"status": "archived"}, "S01-M005": {"status": "active"}, "S01-M006": {"status": "active"},
           "S01-M007": {"status": "active"}}
    for v in key.values():
        v.update(store="p", memory_id="x", type="fact", evidence="inferred")
    key_file = tmp_path / "key.json"
    key_file.write_text(json.dumps(key), encoding="utf-8")
    grades = _grades(tmp_path / "g.json", [
        ("S01-M001", "ok", None), ("S01-M002", "duplicate", "S01-M001"), ("S01-M003", "duplicate", "S01-M001"),
        ("S01-M004", "ok", None), ("S01-M005", "duplicate", "S01-M004"),  # its twin was merged away
        ("S01-M006", "duplicate", None),  # no target named: still a repeat
        ("S01-M007", "junk", None)])
    (f,) = score_grades(key_file, [grades])["curators"]
    assert f["written"]["duplicates"] == 4 and f["written"]["graded"] == 7  # M002, M003, M005, M006
    assert f["active"]["graded"] == 6 and f["active"]["duplicates"] == 3  # M005 is alone now
    assert f["active"]["junk"] == 1 and f["active"]["junk_share_of_the_rest"] == 1 / 3
