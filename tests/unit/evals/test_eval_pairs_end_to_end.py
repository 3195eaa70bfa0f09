"""``consolidate eval --pairs`` (the compare prompt against labeled pairs) and ``consolidate eval
--end-to-end`` (labeled sessions through the whole pipeline, scored by note id), issue 19 items 3 and 5,
with scripted judges and fake CLIs. The capable-model figures are replayed from cassettes in
tests/scenarios/test_capable_cassettes.py."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from consolidate.evals.compare import evaluate_pairs, load_pairs, render_pair_report
from consolidate.evals.end_to_end import evaluate_end_to_end, pick_sessions, label_rows, render_end_to_end
from consolidate.evals.split import SEED, split_sessions
from consolidate.core.errors import BadInput, ConfigError, InvalidImportLine
from consolidate.judges.api import APIJudge, selected_prompt_version
from consolidate.judges.base import JudgeContext
from consolidate.judges.chain import JudgeChain
from consolidate.judges.cli import CLIJudge
from consolidate.judges.scripted import ScriptedJudge

from conftest import keep
from consolidate.cli.main import main
from paths import REPO

PAIRS = REPO / "tests" / "support" / "labels" / "contradiction-realnotes.jsonl"
FAKE = REPO / "tests" / "support" / "fake_cli"


def fake(script: str) -> str:
    return f"template:{shlex.quote(sys.executable)} {shlex.quote(str(FAKE / script))}"


# -- the contradiction set ------------------------------------------------------------------------


def test_contradiction_set_shape():
    """At least 60 pairs of every kind the issue names, written from ../shared/data/realnotes (the
    source project is named, the text is ours: short paraphrases)."""
    pairs = load_pairs(PAIRS)
    assert len(pairs) >= 60
    cats = {p.category for p in pairs}
    assert cats == {"same-fact", "update", "conflict", "unrelated", "near-miss"}
    assert all(sum(p.category == c for p in pairs) >= 10 for c in cats)
    assert {p.relation for p in pairs} == {"duplicate", "updates", "contradicts", "unrelated"}
    assert all(p.source for p in pairs) and len({p.id for p in pairs}) == len(pairs)
    assert max(len(p.old) + len(p.new) for p in pairs) < 400  # short statements, no note copied at length


def test_evaluate_pairs_scores_per_relation_and_category():
    """A scripted judge answering the gold relation for all but three pairs: the misses land in the
    right rows, ``also`` is accepted but not strict, and a pair no one answers is not scored."""
    pairs = load_pairs(PAIRS)
    gold = {p.id: p.relation for p in pairs}
    near = next(p for p in pairs if p.also)
    wrong = [p for p in pairs if p.relation == "duplicate"][:2]
    skipped = next(p for p in pairs if p.relation == "unrelated")

    class Judge(ScriptedJudge):
        def compare(self, items, context, timeout):
            out = []
            for pid, pair in items:
                rel = gold[pair.key]
                if pair.key == near.id:
                    rel = near.also[0]
                elif pair.key in {w.id for w in wrong}:
                    rel = "unrelated"
                elif pair.key == skipped.id:
                    continue
                out.append({"id": pid, "relation": rel, "reason": "scripted"})
            return out

    report = evaluate_pairs(JudgeChain([Judge()]), pairs, JudgeContext())
    assert len(report.answers) == len(pairs) - 1 and skipped.id not in report.answers
    dup = report.by_relation["duplicate"]
    assert (dup["strict"], dup["accepted"]) == (dup["answered"] - 2, dup["answered"] - 2)
    row = report.by_relation[near.relation]
    assert row["accepted"] == row["answered"] and row["strict"] == row["answered"] - 1
    assert report.confusion["duplicate"]["unrelated"] == 2
    assert report.calls == 2  # 40 pairs a call
    text = render_pair_report(report, "set")
    assert "unanswered: 1" in text and "near-miss" in text


@pytest.mark.parametrize("line,says", [
    ({"id": "a", "type": "fact", "old": "x", "new": "y", "relation": "same"}, "`relation` and `also`"),
    ({"id": "a", "type": "fact", "old": "", "new": "y", "relation": "duplicate"}, "no `old`"),
    ({"id": "a", "type": "fact", "old": "x", "new": "y", "relation": "duplicate", "also": ["maybe"]}, "`also`"),
])
def test_bad_pair_lines_are_refused_with_the_line(tmp_path, line, says):
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(InvalidImportLine, match=says):
        load_pairs(f)


@pytest.mark.spawns
def test_eval_pairs_command_through_a_cli_judge(tmp_path):
    """``consolidate eval --pairs`` with the fake CLI's rule-based relations, in a real process."""
    cmd = [sys.executable, "-m", "consolidate", "eval", "--pairs", str(PAIRS), "--json", "--judge", "cli:" + fake("modal.py")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["total"] == len(load_pairs(PAIRS)) and len(report["answers"]) == report["total"]
    assert report["calls"] == 2 and set(report["by_category"]) >= {"near-miss", "update"}


# -- prompt versions --------------------------------------------------------------------------------


def test_prompt_version_is_selectable(monkeypatch):
    monkeypatch.delenv("CONSOLIDATE_PROMPT_VERSION", raising=False)
    assert CLIJudge(fake("answer.py")).prompt_version == selected_prompt_version()
    monkeypatch.setenv("CONSOLIDATE_PROMPT_VERSION", "judge-v1")
    assert CLIJudge(fake("answer.py")).prompt_version == "judge-v1"
    assert APIJudge(model="openai/x").prompt_version == "judge-v1"
    assert CLIJudge(fake("answer.py"), prompt_version="judge-v2").prompt_version == "judge-v2"
    monkeypatch.setenv("CONSOLIDATE_PROMPT_VERSION", "judge-v99")
    with pytest.raises(ConfigError, match="judge-v99"):
        CLIJudge(fake("answer.py"))


@pytest.mark.parametrize("version", ["judge-v2", "judge-v5", "judge-v7", "judge-v8", "judge-v10", "judge-v11"])
def test_judge_prompt_names_no_labeled_note(version):
    """judge-v2, judge-v5, judge-v7, judge-v8 and judge-v10 hold general rules only: no run of six words of any labeled
    real note (when ../shared is there; judge-v10 of both label sets) and no project name of the label set."""
    from conftest import SHARED

    labels = SHARED / "data" / "labels" / "realnotes-dev-labels.jsonl"
    if not labels.is_file():
        pytest.skip("../shared/data/labels is absent")
    prompt = (REPO / "prompts" / f"{version}.md").read_text(encoding="utf-8").lower()
    flat = " ".join(prompt.replace("\\n", " ").split())
    lines = labels.read_text(encoding="utf-8").splitlines()
    if version in ("judge-v10", "judge-v11"):  # written after the second set came, against its tuning part's misses only
        lines += (labels.parent / "realnotes-dev-labels-2.jsonl").read_text(encoding="utf-8").splitlines()
    for line in lines:
        row = json.loads(line)
        words = row["content"].lower().split()
        for i in range(len(words) - 5):
            assert " ".join(words[i:i + 6]) not in flat, row["id"]
        slug = row["session_id"].split("-", 1)[1]
        assert slug not in flat, slug


# -- end to end -------------------------------------------------------------------------------------

NOTES = {
    "alpha": [
        ("a1", "Remember: the deploy needs NODE_ENV=production or the CDN serves stale bundles", "keep", "failure"),
        ("a2", "[x] wrote the importer tests", "drop", None),
        ("a3", "Remember the staging database is reset every night at 02:00 UTC by the ops cron", "keep", "fact"),
        ("a4", "Remember that we probably should cache the API later, maybe", "drop", None),
        ("a5", "looked at the open file for a while", "drop", None),
    ],
    "beta": [
        ("b1", "Remember: for now the build uses the old webpack config until the migration", "keep", "fact"),
        ("b2", "Remember: payments go through the Stripe test account in every non-production environment",
         "keep", "constraint"),
        ("b3", "Next: deploy", "drop", None),
    ],
    "gamma": [("g1", "Remember: the team reviews every migration before merge", "keep", "preference")]
    + [(f"g{i}", f"working note number {i} about nothing in particular", "drop", None) for i in range(2, 9)],
}


@pytest.fixture
def labeled(tmp_path):
    sessions = tmp_path / "realnotes" / "sessions"
    sessions.mkdir(parents=True)
    rows = []
    for sid, notes in NOTES.items():
        with open(sessions / f"{sid}.jsonl", "w", encoding="utf-8") as f:
            for nid, text, verdict, type_ in notes:
                f.write(json.dumps({"id": nid, "session_id": sid, "section": "Notes", "content": text}) + "\n")
                if nid != "a5":  # one note of the session is not labeled
                    rows.append({"id": nid, "session_id": sid, "content": text, "verdict": verdict, "type": type_})
    labels = tmp_path / "labels" / "l.jsonl"
    labels.parent.mkdir()
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return labels


def _script(note):
    """Keep what says "remember": the maybe-cache note as inferred (quarantined), the rest observed."""
    text = note.content
    if "remember" not in text.lower():
        return {"verdict": "drop", "reason": "scripted"}
    if "probably" in text:
        return keep("A response cache in front of the payments API would probably cut the latency of the checkout page"
                    " by half", evidence="inferred", confidence="low")
    if "Stripe" in text:
        return keep("Payments use the Stripe test account outside production", "constraint")
    if "team reviews" in text:
        return keep("The team reviews every migration before it is merged", "preference", who="the team")
    if "NODE_ENV" in text:  # a failure without its cause: the write policy rejects it
        return keep("The deploy serves stale bundles from the CDN", "failure", symptom="stale bundles")
    return keep(text.replace("Remember: ", "").replace("Remember ", ""))


def test_end_to_end_scores_each_labeled_note_by_id(labeled, tmp_path):
    report = evaluate_end_to_end(labeled, lambda: JudgeChain([ScriptedJudge(_script)]),
                                 keep_stores=tmp_path / "stores", embedding="hash")
    by_id = {nid: o for s in report.sessions for nid, o in s.outcomes.items()}
    assert by_id == {"a1": "rejected", "a2": "dropped", "a3": "active", "a4": "quarantined",
                     "b1": "transient", "b2": "active", "b3": "dropped",
                     "g1": "active", **{f"g{i}": "dropped" for i in range(2, 9)}}
    f = report.figures()
    assert (f["gold_keepers"], f["gold_keepers_active"]) == (5, 3)
    assert (f["labeled_drops_active"], f["labeled_drops_written"]) == (0, 1)  # a4: written, quarantined
    assert f["judge_keeps"] == 6 and f["written"] == {"active": 3, "quarantined": 1, "disputed": 0, "transient": 1}
    assert f["notes"] == 16 and f["sessions"] == 3  # a5 imported and judged, not labeled
    assert (tmp_path / "stores" / "alpha" / ".memofs").is_dir()
    text = render_end_to_end(report)
    assert "gold keepers active after one session: 3 of 5 (60.0 %" in text
    assert "rejected: a failure needs cause" in text and "quarantined: low-confidence single observation" in text


def test_end_to_end_reads_two_label_files_and_reports_each_part_of_the_split(labeled, tmp_path):
    """Two label files (the dev sets' case): their labeled notes together, a two-annotator file's
    disagreement left out as the plain eval leaves it out; the figures of the tuning and validation
    parts (consolidate/evals/split.py over the labeled sessions) add up to the whole. Two files that
    share an id are refused: the same note must not count twice."""
    second = labeled.parent / "l2.jsonl"
    second.write_text(json.dumps({"id": "a5", "session_id": "alpha", "content": NOTES["alpha"][4][1], "verdict": "drop",
                                  "verdict_a": "drop", "verdict_b": "drop", "agree": True}) + "\n"
                      + json.dumps({"id": "x9", "session_id": "gamma", "content": "disputed", "verdict": None,
                                    "verdict_a": "keep", "verdict_b": "drop", "agree": False}) + "\n", encoding="utf-8")
    report = evaluate_end_to_end([labeled, second], lambda: JudgeChain([ScriptedJudge(_script)]), embedding="hash")
    by_id = {nid: o for s in report.sessions for nid, o in s.outcomes.items()}
    assert by_id["a5"] == "dropped" and "x9" not in by_id
    f = report.figures()
    assert f["labeled_notes"] == 16 and (f["gold_keepers"], f["gold_keepers_active"]) == (5, 3)
    split = report.to_dict()["split"]
    assert split["seed"] == SEED
    parts = {p: split[p] for p in ("tuning", "validation")}
    assert sorted(parts["tuning"]["session_ids"] + parts["validation"]["session_ids"]) == ["alpha", "beta", "gamma"]
    assert all(parts[p]["session_ids"] for p in parts)  # three sessions: one of them is validation
    want = split_sessions(["alpha", "beta", "gamma"])
    assert all(want[s] == p for p in parts for s in parts[p]["session_ids"])
    for key in ("labeled_notes", "gold_keepers", "gold_keepers_active", "labeled_drops_active", "judge_keeps"):
        assert parts["tuning"]["figures"][key] + parts["validation"]["figures"][key] == f[key], key
    assert "validation part (1 session): gold keepers active" in render_end_to_end(report)
    with pytest.raises(BadInput, match="given twice"):
        evaluate_end_to_end([labeled, labeled], lambda: JudgeChain([ScriptedJudge(_script)]), embedding="hash")
    copy = labeled.parent / "copy.jsonl"
    copy.write_text(labeled.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(BadInput, match="also in"):
        evaluate_end_to_end([labeled, copy], lambda: JudgeChain([ScriptedJudge(_script)]), embedding="hash")


def test_end_to_end_refuses_a_labeled_note_its_session_lacks_and_an_empty_session(labeled, tmp_path, capsys):
    """A labeled id no note of its session file carries would count as never judged: refused, naming it,
    exit 2 (not the exit 5 of a judge that answered nothing); so is an empty session file."""
    ghost = labeled.parent / "ghost.jsonl"
    ghost.write_text(labeled.read_text(encoding="utf-8") + json.dumps({"id": "zz", "session_id": "beta", "content": "x",
                                                                       "verdict": "keep"}) + "\n", encoding="utf-8")
    with pytest.raises(BadInput, match="session beta not in .*'zz'"):
        evaluate_end_to_end(ghost, lambda: JudgeChain([ScriptedJudge(_script)]), embedding="hash")
    (labeled.parent.parent / "realnotes" / "sessions" / "beta.jsonl").write_text("\n", encoding="utf-8")
    assert main(["--embedding", "hash", "eval", "--end-to-end", "--labels", str(labeled), "--judge", "noop"]) == 2
    assert "beta.jsonl holds no note" in capsys.readouterr().err


@pytest.mark.parametrize("sid", ["../beta", "sub/beta", "..", "a\\b"])
def test_end_to_end_refuses_a_session_id_that_names_a_file_elsewhere(labeled, tmp_path, capsys, sid):
    """A fresh tester: a label's session id ``../x`` read ``x.jsonl`` outside the sessions folder."""
    outside = labeled.parent.parent / "realnotes" / f"{sid.split('/')[-1]}.jsonl"
    outside.write_text(json.dumps({"id": "o1", "session_id": sid, "content": "Remember the outside note"}) + "\n",
                       encoding="utf-8")
    bad = labeled.parent / "bad.jsonl"
    bad.write_text(json.dumps({"id": "o1", "session_id": sid, "content": "x", "verdict": "keep"}) + "\n", encoding="utf-8")
    assert main(["--embedding", "hash", "eval", "--end-to-end", "--labels", str(bad), "--judge", "noop"]) == 2
    err = capsys.readouterr().err
    assert f"session id {sid!r} of the labels is not a file name" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("where, said", [("file", "is a file, not a folder"), ("nowhere", "not found")])
def test_end_to_end_says_what_is_wrong_with_the_sessions_folder(labeled, tmp_path, capsys, where, said):
    """A fresh tester: --sessions-dir naming a file said "not found"."""
    path = tmp_path / where
    if where == "file":
        path.write_text("x\n", encoding="utf-8")
    assert main(["--embedding", "hash", "eval", "--end-to-end", "--labels", str(labeled), "--judge", "noop",
                 "--sessions-dir", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"sessions folder {path} {said}" in err and len(err.strip().splitlines()) == 1


def test_end_to_end_split_option_shows_one_part(labeled, capsys):
    assert main(["--embedding", "hash", "eval", "--end-to-end", "--labels", str(labeled), "--judge", "noop", "--json",
                 "--split", "validation"]) == 5  # noop answers nothing: figures undefined, still printed
    split = json.loads(capsys.readouterr().out)["split"]
    assert set(split) == {"seed", "validation"}


def test_end_to_end_subset_is_deterministic(labeled):
    rows = label_rows(labeled)
    sdir = labeled.parent.parent / "realnotes" / "sessions"
    assert pick_sessions(rows, sdir, 2) == ["alpha", "beta"]  # the two with the fewest notes
    assert pick_sessions(rows, sdir, None) == ["alpha", "beta", "gamma"]
    assert pick_sessions(rows, sdir, ["gamma"]) == ["gamma"]
    with pytest.raises(BadInput, match="no labeled note"):
        pick_sessions(rows, sdir, ["delta"])


@pytest.mark.spawns
def test_end_to_end_command(labeled, tmp_path):
    """``consolidate eval --end-to-end`` with a fake CLI (keeps what says "remember"), in a real
    process; the default sessions folder is ../realnotes/sessions beside the labels' folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env["CONSOLIDATE_EMBEDDING"] = "hash"
    cmd = [sys.executable, "-m", "consolidate", "eval", "--end-to-end", "--labels", str(labeled), "--sessions", "2",
           "--json", "--judge", "cli:" + fake("answer.py")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [s["session_id"] for s in report["sessions"]] == ["alpha", "beta"]
    assert "fewest notes" in report["subset"] and report["figures"]["judge_calls"] == 2
    assert report["gold_keepers"]["active"] + report["gold_keepers"]["transient"] >= 3
    bad = subprocess.run(cmd[:-2] + ["--judge", "noop"], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert bad.returncode == 5 and "no judge answered any labeled note" in bad.stderr


@pytest.mark.spawns
def test_batch_rejudge_moves_a_store_between_prompt_versions(tmp_path):
    """Memories written under judge-v1 are re-judged under judge-v2 by ``batch --rejudge
    --prompt-version judge-v1`` with CONSOLIDATE_PROMPT_VERSION=judge-v2, and back again."""
    from consolidate import Store

    path = tmp_path / ".memofs"
    store = Store(path, embedding="hash", project="p")
    store.sessions.add_note("s1", "Remember: the staging database is reset every night at 02:00 UTC by the ops cron")
    store.sessions.add_note("s1", "Remember: payments use the Stripe test account in every non-production environment")
    store.sessions.end("s1", "success")
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    judge = "cli:" + fake("answer.py")

    def cli(version, *args):
        done = subprocess.run([sys.executable, "-m", "consolidate", *args, "--store", str(path), "--judge", judge],
                              capture_output=True, text=True, timeout=300,
                              env={**env, "CONSOLIDATE_PROMPT_VERSION": version})
        assert done.returncode == 0, done.stderr
        return done.stdout

    def versions():
        s = Store(path)
        try:
            got = s.longterm().collection.get(include=["metadatas"])
            return sorted(m["prompt_version"] for m in got["metadatas"])
        finally:
            s.close()

    cli("judge-v1", "run")
    assert versions() == ["judge-v1", "judge-v1"]
    out = cli("judge-v2", "batch", "--rejudge", "--prompt-version", "judge-v1")
    assert "(2 kept, 0 dropped" in out and versions() == ["judge-v2", "judge-v2"]
    cli("judge-v1", "batch", "--rejudge", "--prompt-version", "judge-v2")
    assert versions() == ["judge-v1", "judge-v1"]
    # a filter naming no version of this store (a typo) says which versions are here, changes nothing
    done = subprocess.run([sys.executable, "-m", "consolidate", "batch", "--rejudge", "--prompt-version", "judge-v99",
                           "--store", str(path), "--judge", judge], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0 and "0 entries considered" in done.stdout, done.stderr
    assert "no judge-written entry of this store was written under prompt version 'judge-v99'" in done.stderr
    assert "versions here: judge-v1 (2)" in done.stderr and versions() == ["judge-v1", "judge-v1"]
