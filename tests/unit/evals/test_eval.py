"""``consolidate eval`` and consolidate.evals.judges: metrics against hand-computed values, label-file
errors, unjudged notes kept apart, calls/tokens/seconds per 100 notes, the CLI's text and JSON output.
All offline (scripted judges); the runs against a recorded real model are in test_prompt_regression.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from consolidate.cli.main import main
from consolidate.core.errors import BadInput, InvalidImportLine, JudgeOutputInvalid
from consolidate.evals.judges import Confusion, accuracy, always_drop, cohen_kappa, confusion, evaluate, keep_f1, keep_precision, keep_recall, load_labels, metrics, render_report
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge
from paths import SUPPORT

REGRESSION = SUPPORT / "labels" / "judge-regression.jsonl"


def write_labels(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [
    {"id": "a", "content": "Chose SQLite because it needs no server", "verdict": "keep", "type": "decision"},
    {"id": "b", "content": "[x] task 3 done", "verdict": "drop"},
    {"id": "c", "content": "Never push to main: CI deploys from it", "verdict": "keep", "type": "constraint"},
    {"id": "d", "content": "working on the login page now", "verdict": "drop", "section": "Status"},
    {"id": "e", "content": "port 5173 this time", "verdict": "drop"},
]


@pytest.fixture
def cli(capsys):
    def run(*argv):
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


# --- metrics -------------------------------------------------------------------------------------

def test_metrics_against_hand_computed_values():
    c = Confusion(tp=3, fp=1, fn=2, tn=14)
    assert accuracy(c) == pytest.approx(17 / 20)
    assert keep_precision(c) == pytest.approx(3 / 4)
    assert keep_recall(c) == pytest.approx(3 / 5)
    assert keep_f1(c) == pytest.approx(2 * 0.75 * 0.6 / (0.75 + 0.6))  # harmonic mean = 2TP/(2TP+FP+FN)
    # p_o = 0.85; p_e = 0.2 * 0.25 + 0.8 * 0.75 = 0.65
    assert cohen_kappa(c) == pytest.approx((0.85 - 0.65) / (1 - 0.65))


def test_kappa_textbook_example():
    # The classic 50-item, two-rater yes/no example: 20 both yes, 5 and 10 disagreements, 15 both no
    # (p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5, kappa = 0.4).
    assert cohen_kappa(Confusion(tp=20, fp=5, fn=10, tn=15)) == pytest.approx(0.4)


def test_undefined_metrics_are_none_and_baseline_is_always_drop():
    c = Confusion(tp=0, fp=0, fn=3, tn=27)
    assert keep_precision(c) is None  # nothing kept: undefined, not 0 or 1
    assert keep_recall(c) == 0 and keep_f1(c) == 0
    assert cohen_kappa(c) == 0  # a constant answer agrees exactly at chance level
    assert cohen_kappa(Confusion(tn=5)) is None  # both raters said drop to everything: p_e = 1
    assert metrics(Confusion())["accuracy"] is None
    base = always_drop(Confusion(tp=2, fp=4, fn=1, tn=13))
    assert base == Confusion(tp=0, fp=0, fn=3, tn=17)
    assert accuracy(base) == pytest.approx(17 / 20)


def test_confusion_counts_only_judged_notes():
    gold = {"a": "keep", "b": "drop", "c": "keep", "d": "drop"}
    c = confusion(gold, {"a": "keep", "b": "keep", "c": "drop"})  # d unjudged: absent, not a drop
    assert c == Confusion(tp=1, fp=1, fn=1, tn=0)


# --- label files ---------------------------------------------------------------------------------

def test_load_labels_reads_fields_and_limit(tmp_path):
    f = write_labels(tmp_path / "l.jsonl", ROWS)
    notes = load_labels(f)
    assert [n.id for n in notes] == ["a", "b", "c", "d", "e"]
    assert notes[0].type == "decision" and notes[3].section == "Status" and notes[1].verdict == "drop"
    assert len(load_labels(f, limit=2)) == 2
    with pytest.raises(BadInput):
        load_labels(f, limit=0)


@pytest.mark.parametrize("line, why", [
    ("{not json", "invalid JSON"),
    ('["a"]', "JSON object"),
    ('{"content": "x", "verdict": "keep"}', "no `id`"),
    ('{"id": "z", "verdict": "keep"}', "no `content`"),
    ('{"id": "z", "content": "x", "verdict": "maybe"}', "keep or drop"),
    ('{"id": "a", "content": "x", "verdict": "drop"}', "appears twice"),
    ('{"id": "z", "content": "x", "verdict": "drop", "section": 3}', "`section`"),
])
def test_bad_label_lines_name_file_and_line(tmp_path, line, why):
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps(ROWS[0]) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InvalidImportLine) as exc:
        load_labels(f)
    assert exc.value.line == 3 and why in str(exc.value) and "\n" not in str(exc.value)


def test_missing_or_empty_label_file(tmp_path):
    with pytest.raises(BadInput, match="cannot read"):
        load_labels(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(BadInput, match="no labeled note"):
        load_labels(tmp_path / "empty.jsonl")


def test_regression_set_covers_every_type_and_the_common_drops():
    notes = load_labels(REGRESSION)
    assert len(notes) >= 60
    kept_types = {n.type for n in notes if n.verdict == "keep"}
    assert kept_types == {"decision", "constraint", "preference", "recipe", "failure", "fact"}
    drops = [n for n in notes if n.verdict == "drop"]
    assert len(drops) >= 30 and all(n.type is None for n in drops)
    sections = {n.section for n in drops}
    for kind in ("Task list", "Status", "Scratch", "Ideas", "Lessons", "Notes"):
        assert kind in sections


# --- evaluate ------------------------------------------------------------------------------------

class MeteredJudge(ScriptedJudge):
    """A scripted judge that reports usage like the API judge (10 prompt tokens a note, 5 out)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
        self.last_call = {}

    def judge(self, batch, context, timeout):
        out = super().judge(batch, context, timeout)
        self.usage["calls"] += 1
        self.usage["prompt_tokens"] += 10 * len(batch)
        self.usage["completion_tokens"] += 5 * len(out)
        self.last_call = {"prompt_tokens": 10 * len(batch), "completion_tokens": 5 * len(out)}
        return out


KEEP = {"verdict": "keep", "statement": "s", "type": "fact", "reason": "r"}
DROP = {"verdict": "drop", "reason": "r"}


def test_evaluate_keeps_unjudged_apart_and_counts_usage(tmp_path):
    labels = load_labels(write_labels(tmp_path / "l.jsonl", ROWS))
    # answers a (keep, right), b (keep, wrong), c (drop, wrong); d and e get no answer at all
    judge = MeteredJudge({"SQLite": KEEP, "task 3": KEEP, "Never push": DROP}, name="metered")
    report = evaluate(JudgeChain([judge], max_notes=2), labels, labels_name="l.jsonl")
    assert report.predicted == {"a": "keep", "b": "keep", "c": "drop"}
    assert set(report.unjudged) == {"d", "e"}
    assert report.confusion == Confusion(tp=1, fp=1, fn=1, tn=0)  # d and e are not drops
    assert report.metrics["accuracy"] == pytest.approx(1 / 3)
    assert report.baseline["accuracy"] == pytest.approx(1 / 3)  # always-drop on the same judged notes
    d = report.to_dict()
    assert d["judged"] == 3 and d["unjudged"] == 2 and d["notes"] == 5
    # batches of 2, 2 and 1, and the re-ask of d (its batch was answered in part: c)
    assert d["usage"]["calls"] == 4
    assert d["usage"]["prompt_tokens"] == 60 and d["usage"]["completion_tokens"] == 15
    assert d["per_100_notes"]["calls"] == pytest.approx(80.0)
    assert d["per_100_notes"]["prompt_tokens"] == pytest.approx(1200.0)
    assert d["keep_recall_by_type"] == {"constraint": {"labeled": 1, "kept": 0}, "decision": {"labeled": 1, "kept": 1}}
    text = render_report(report)
    assert "unjudged: 2 (not counted as drops)" in text and "over the 3 judged notes only" in text


def test_evaluate_counts_failed_calls_and_falls_through_the_chain(tmp_path):
    labels = load_labels(write_labels(tmp_path / "l.jsonl", ROWS))
    broken = ScriptedJudge(name="broken", fail="unavailable")
    backup = ScriptedJudge(default=DROP, name="backup")
    report = evaluate(JudgeChain([broken, backup]), labels)
    assert len(report.predicted) == 5 and not report.unjudged
    assert report.usage["calls"] == 2 and report.usage["failed_calls"] == 1
    assert report.metrics["accuracy"] == report.baseline["accuracy"] == pytest.approx(3 / 5)
    assert report.metrics["cohen_kappa"] == 0


class FailsOnce(ScriptedJudge):
    """Answers invalid output on its first call only."""

    def judge(self, batch, context, timeout):
        if self.calls == 0:
            self.calls += 1
            raise JudgeOutputInvalid(f"{self.name}: garbage once", judge=self.name)
        return super().judge(batch, context, timeout)


def test_one_bad_batch_does_not_void_the_rest_unless_as_run(tmp_path):
    labels = load_labels(write_labels(tmp_path / "l.jsonl", ROWS))
    report = evaluate(JudgeChain([FailsOnce(default=DROP)], max_notes=2), labels)
    assert set(report.unjudged) == {"a", "b"} and len(report.predicted) == 3  # batches 2 and 3 still judged
    assert report.usage["calls"] == 3 and report.usage["failed_calls"] == 1
    assert report.to_dict()["circuit_breaker"] == "reset per batch"
    run = evaluate(JudgeChain([FailsOnce(default=DROP)], max_notes=2), labels, as_run=True)
    assert len(run.unjudged) == 5 and not run.predicted and run.usage["calls"] == 1  # skipped after its failure
    assert "skipped (failed earlier in this run" in " ".join(run.unjudged["e"])
    assert "for the rest of the run" in render_report(run)


def test_evaluate_never_sends_secrets_to_a_judge(tmp_path):
    rows = ROWS + [{"id": "s", "content": "token is ghp_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6", "verdict": "drop"}]
    labels = load_labels(write_labels(tmp_path / "l.jsonl", rows))
    seen = []
    judge = ScriptedJudge(lambda n: seen.append(n.content) or DROP)
    report = evaluate(JudgeChain([judge]), labels)
    assert report.blocked == ["s"] and "s" not in report.predicted and len(seen) == 5
    assert not any("ghp_" in c for c in seen)


# --- the CLI -------------------------------------------------------------------------------------

def test_cli_eval_prints_metrics_beside_the_baseline(tmp_path, cli):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"SQLite": KEEP, "Never push": KEEP, "port": KEEP, "task 3": DROP,
                                         "login": DROP}), encoding="utf-8")
    f = write_labels(tmp_path / "l.jsonl", ROWS)
    code, out, err = cli("eval", "--judge", f"scripted:{script}", "--labels", str(f))
    assert code == 0 and err == ""
    for label in ("accuracy", "keep precision", "keep recall", "keep F1", "Cohen's kappa", "always-drop",
                  "per 100 notes", "calls", "prompt tokens", "completion tokens"):
        assert label in out
    # tp 2, fp 1, fn 0, tn 2: accuracy 0.8, precision 0.667, recall 1, baseline accuracy 0.6
    assert re.search(r"^accuracy +0\.800 +0\.600$", out, re.M)
    assert re.search(r"^keep precision +0\.667 +n/a$", out, re.M)
    code, out, _ = cli("eval", "--judge", f"scripted:{script}", "--labels", str(f), "--json", "--limit", "4")
    d = json.loads(out)
    assert code == 0 and d["notes"] == 4 and d["judged"] == 4 and d["confusion"] == {"tp": 2, "fp": 0, "fn": 0, "tn": 2}
    assert d["metrics"]["keep_f1"] == 1.0 and d["always_drop_baseline"]["keep_recall"] == 0.0
    assert set(d["per_100_notes"]) == {"calls", "prompt_tokens", "completion_tokens", "seconds"}


def test_cli_eval_over_the_regression_set_with_the_rules_judge(cli):
    code, out, _ = cli("eval", "--judge", "rules", "--labels", str(REGRESSION), "--json")
    d = json.loads(out)
    assert code == 0 and d["judged"] == d["notes"] >= 60
    assert d["usage"]["calls"] == d["notes"] // 25 and d["per_100_notes"]["calls"] <= 4.0  # one call per 25 notes


def test_cli_eval_bad_label_file_is_one_line_error(tmp_path, cli):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"id": "a", "content": "x", "verdict": "keep"}\n{"id": "b", "content": "y"}\n', encoding="utf-8")
    code, out, err = cli("eval", "--judge", "rules", "--labels", str(f))
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: ") and ":2:" in err
    code, _, err = cli("eval", "--judge", "rules", "--labels", str(tmp_path / "missing.jsonl"))
    assert code == 2 and err.startswith("error: cannot read label file")
    code, _, err = cli("eval", "--judge", "nosuchjudge", "--labels", str(REGRESSION))
    assert code == 2 and "unknown judge" in err


def test_cli_eval_with_no_answer_reports_unjudged_and_exits_5(tmp_path, cli):
    f = write_labels(tmp_path / "l.jsonl", ROWS)
    code, out, err = cli("eval", "--judge", "noop", "--labels", str(f))
    assert code == 5 and "judged: 0 of 5; unjudged: 5 (not counted as drops)" in out
    assert "noop: answered no note" in out and err.startswith("error: no judge answered")


def test_cli_eval_reads_a_bom_and_says_when_the_secret_gate_blocked_everything(tmp_path, cli):
    f = tmp_path / "bom.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "content": "Chose SQLite: no server", "verdict": "keep"}).encode())
    code, out, err = cli("eval", "--judge", "rules", "--labels", str(f), "--json")
    assert code in (0, 5) and json.loads(out)["notes"] == 1  # the byte-order mark is not data
    secret = write_labels(tmp_path / "s.jsonl", [{"id": "s", "content": "token is ghp_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6",
                                                   "verdict": "drop"}])
    code, _, err = cli("eval", "--judge", "rules", "--labels", str(secret))
    assert code == 5 and "all 1 notes were blocked by the secret gate" in err
