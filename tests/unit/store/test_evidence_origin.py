"""A judge's evidence claim is credited by where the memory's notes came from, on every surface
(issue 28, concern 1; found by a fresh review: a harvested user prompt and an assistant's conclusion,
both claimed ``user-stated`` by the judge, were both shown ``observed``).

The provenance stage records the notes' ``origin`` with the memory (consolidate/model/credit.py):
a prompt the user typed (``transcript:user``) keeps the claim, up to user-stated; an assistant's
conclusion (``transcript:assistant``) is credited inferred at most; an agent's note judged (and an
entry of an older store, without ``origin``) observed at most. Driven through the real hook
(SessionEnd ``--harvest``, SessionStart), ``run``, ``recall`` (text and ``--json``), ``export`` and
``doctor``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from consolidate.model import credit

PROMPT = "We always deploy with the blue-green script in ops/deploy.sh"
CONCLUSION = "Concluded: the flaky test in tests/test_io.py fails because it reads the system locale."
DEPLOY = "We always deploy with the blue-green script in ops/deploy.sh"
LOCALE = "The flaky test in tests/test_io.py fails because it reads the system locale"


def _claimed(statement: str, type_: str) -> dict:
    return {"verdict": "keep", "statement": statement, "type": type_, "evidence": "user-stated",
            "confidence": "high", "reason": "the judge says the user stated it"}


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}


def _hook(project: Path, event: dict, *args: str) -> str:
    """``consolidate hook`` as the agent runs it, ``event`` (a hook payload) on stdin; its stdout."""
    r = subprocess.run([sys.executable, "-m", "consolidate", "hook", "--store", str(project / ".memofs"),
                        "--embedding", "hash", "--no-worker", *args], input=json.dumps(event), cwd=project,
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _cli(capsys, project: Path, *args: str) -> str:
    from consolidate.cli.main import main

    capsys.readouterr()
    assert main([*args, "--store", str(project / ".memofs"), "--embedding", "hash"]) == 0
    return capsys.readouterr().out


def _line(text: str, needle: str) -> str:
    """The one line of ``text`` that shows the memory ``needle`` with its evidence."""
    [line] = [ln for ln in text.splitlines() if needle in ln and ("[high, " in ln or "[medium, " in ln)]
    return line


@pytest.fixture
def harvested(tmp_path, capsys):
    """A project whose session transcript holds one user prompt and one assistant conclusion,
    harvested by SessionEnd, then run with a judge that keeps both claiming ``user-stated``."""
    project = tmp_path / "app"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    transcript = project / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(e) for e in [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": PROMPT}},
        {"type": "assistant", "uuid": "a1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": CONCLUSION}]}},
    ]) + "\n", encoding="utf-8")
    _hook(project, {"hook_event_name": "SessionEnd", "session_id": "h1", "cwd": str(project),
                    "transcript_path": str(transcript), "reason": "exit"}, "--harvest")
    script = project / "judge.json"
    script.write_text(json.dumps({"blue-green": _claimed(DEPLOY, "constraint"), "locale": _claimed(LOCALE, "fact")}),
                      encoding="utf-8")
    report = _cli(capsys, project, "run", "--judge", f"scripted:{script}")
    return project, report


@pytest.mark.spawns
def test_the_run_report_credits_each_claim_by_its_origin(harvested):
    """Credited inferred, the assistant's conclusion pays inferred's confidence step (a judge's high is
    written at medium, docs/pipeline.md), whatever evidence the judge claimed (a second fresh review:
    it was [high, inferred])."""
    _, report = harvested
    assert "[high, user-stated]" in _line(report, DEPLOY)
    assert "[medium, inferred]" in _line(report, LOCALE)


@pytest.mark.spawns
def test_session_start_recall_and_export_show_the_claim_as_its_origin_credits_it(harvested, capsys):
    project, _ = harvested
    start = _hook(project, {"hook_event_name": "SessionStart", "session_id": "h2", "cwd": str(project),
                            "source": "startup", "transcript_path": str(project / "t2.jsonl")})
    recall = _cli(capsys, project, "recall", "deploy script flaky test locale", "-k", "10", "--min-similarity", "-1")
    _cli(capsys, project, "export", "--file", str(project / "AGENTS.md"))
    exported = (project / "AGENTS.md").read_text(encoding="utf-8")
    for text in (start, recall, exported):
        assert "[high, user-stated, " in _line(text, DEPLOY), text
        assert "[medium, inferred, " in _line(text, LOCALE), text
    hits = {h["statement"]: h for h in json.loads(_cli(capsys, project, "recall", "deploy script flaky test locale",
                                                       "-k", "10", "--min-similarity", "-1", "--json"))}
    assert hits[DEPLOY]["evidence"] == "user-stated" and "claimed_evidence" not in hits[DEPLOY]
    assert hits[LOCALE]["evidence"] == "inferred" and hits[LOCALE]["claimed_evidence"] == "user-stated"
    assert hits[DEPLOY]["origin"] == "user" and hits[LOCALE]["origin"] == "transcript:assistant"


@pytest.mark.spawns
def test_notes_md_the_event_log_and_doctor_agree(harvested, capsys):
    project, _ = harvested
    notes = (project / ".memofs" / "memory" / "notes.md").read_text(encoding="utf-8")
    assert "[high, user-stated]" in _line(notes, DEPLOY) and "[medium, inferred]" in _line(notes, LOCALE)
    events = [json.loads(x) for x in (project / ".memofs" / "events" / "memory-events.jsonl").read_text().splitlines()]
    written = {e["statement"]: e for e in events if e["event"] == "memory.written"}
    assert written[DEPLOY]["evidence"] == "user-stated" and written[DEPLOY]["origin"] == "user"
    assert (written[LOCALE]["evidence"], written[LOCALE]["claimed_evidence"]) == ("inferred", "user-stated")
    assert "problem" not in _cli(capsys, project, "doctor").lower()


def test_credit_table():
    judged = "judge:cli:m"
    assert credit.origin_of(["transcript:user"]) == "user"
    assert credit.origin_of(["user", "transcript:assistant", ""]) == "transcript:assistant"
    assert credit.origin_of(["transcript:tool_error", ""]) == "transcript:tool_error"
    assert credit.origin_of(["user", ""]) == "agent-judged" and credit.origin_of([]) is None
    assert credit.credited("user-stated", judged, "user") == "user-stated"
    assert credit.credited("user-stated", judged, "transcript:assistant") == "inferred"
    assert credit.credited("observed-success", judged, "transcript:assistant") == "inferred"
    assert credit.credited("user-stated", judged, "transcript:tool_error") == "observed-failure"
    assert credit.credited("observed-failure", judged, "transcript:tool_error") == "observed-failure"
    assert credit.credited("user-stated", judged, "agent-judged") == "observed"
    assert credit.credited("user-stated", judged, None) == "observed"  # an older store: as before
    assert credit.credited("user-stated", "flagged", "transcript:assistant") == "user-stated"  # recorded, not claimed
