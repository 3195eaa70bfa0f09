"""Capable-model answers on the second label set (issue 31 item 1): the 972 agreed notes of
../shared/data/labels/realnotes-dev-labels-2.jsonl, which no prompt was written against, judged with
judge-v1 (the default), judge-v8 (the best on the first set) and judge-v11 (written against the
tuning part's misses, 2026-12-07), replayed offline from
cassettes/eval-realnotes2-<version>-capable.yaml.

How they were made (also in each cassette's ``model`` and ``how``): the 38 prompts per version were
captured exactly with ../shared/tools/judgelab/capture.py, answered by fresh helper sessions given
only the prompt files (never the labels; three helpers per version, not the same ones for the two
versions), and recorded by replaying those answers under CONSOLIDATE_RECORD=1.

What they pin: the recorded figures come out again, the tuning / validation columns are the recorded
verdicts counted over the session split (consolidate/evals/split.py, seed 31), and the product's
default prompt version is the one with the best validation keep-F1 among the versions measured here
(the rule of issue 31: a prompt is adopted only when validation improves). Skipped, with the reason,
when ../shared is absent.

Filed before as tests/test_capable_labels2.py (issue 31).
"""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import SHARED
from test_capable_cassettes import CASSETTES, check_split, expected, replay, strip

from consolidate.judges.prompting import PROMPT_VERSION

LABELS_2 = SHARED / "data" / "labels" / "realnotes-dev-labels-2.jsonl"
MODEL = "capable model answered via judgelab helpers, 2026-12-02"
#: judge-v11 (written against the tuning part's misses) was answered later, by other helpers.
MODELS = {"judge-v11": "capable model answered via judgelab helpers, 2026-12-07"}
VERSIONS = ("judge-v1", "judge-v8", "judge-v11")


def name_of(version: str) -> str:
    return f"eval-realnotes2-{version}-capable"


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    """Each version's eval report over the second label set, replayed in a real process."""
    if not LABELS_2.is_file():
        pytest.skip(f"labels not found at {LABELS_2} (../shared is absent)")
    return {v: replay(name_of(v), "--prompt-version", v, "--labels", str(LABELS_2)) for v in VERSIONS}


@pytest.mark.parametrize("version", VERSIONS)
def test_cassette_says_how_it_was_made_and_keeps_no_prompt(version):
    text = (CASSETTES / f"{name_of(version)}.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert data["model"] == MODELS.get(version, MODEL) and "never saw the labels" in data["how"]
    assert len(data["interactions"]) == 38
    assert all(i["prompt_version"] == version and i["prompt_sha256"].startswith("sha256:") for i in data["interactions"])
    assert "<<<NOTES" not in text and "You curate" not in text


@pytest.mark.spawns
@pytest.mark.parametrize("version", VERSIONS)
def test_recorded_figures_and_split(reports, version):
    """The replay gives the recorded report; only the agreed notes are judged; each part's confusion
    is the recorded verdicts against the agreed labels of that part's sessions."""
    report = reports[version]
    assert strip(report) == expected(name_of(version))
    rows = [json.loads(line) for line in LABELS_2.read_text(encoding="utf-8").splitlines() if line.strip()]
    agreed = [r for r in rows if r["verdict"] is not None]
    assert report["judged"] == report["notes"] == len(agreed) and report["disagreements_left_out"] == len(rows) - len(agreed)
    check_split(report, LABELS_2)


def test_default_prompt_is_the_best_on_validation(reports):
    """judge-v8 was written against the first label set (keep-F1 0.90 there); on notes no prompt saw
    its validation keep-F1 falls below judge-v1's, so judge-v1 stays the default. judge-v11 keeps more
    gold keepers end to end, but judged note by note it keeps too much (validation precision 0.49,
    keep-F1 0.62 against judge-v1's 0.88): not the default either."""
    validation = {v: r["split"]["parts"]["validation"]["metrics"]["keep_f1"] for v, r in reports.items()}
    assert PROMPT_VERSION == max(validation, key=validation.__getitem__), validation
