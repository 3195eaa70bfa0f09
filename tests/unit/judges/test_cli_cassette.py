"""Record and replay for CLI judges (judges/cli_cassette.py, issue 19 item 1): a fake CLI is recorded
with CONSOLIDATE_RECORD=1, replayed offline without the CLI, and a changed prompt fails loudly, naming
the prompt version. Cassettes keep prompt digests only, never note text."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest
import yaml

from consolidate.core.errors import CassetteMiss, ConfigError
from consolidate.judges.base import JudgeContext
from consolidate.judges.chain import Item, JudgeChain, Pair, compare_pairs
from consolidate.judges.cli import CLIJudge, schema
from consolidate.judges.cli_cassette import prompt_digest
from paths import REPO, SUPPORT

FAKE = SUPPORT / "fake_cli"
NOTES = [
    "Remember: the cache key includes the lockfile hash, so installs are reproducible across machines",
    "[x] write the tests for the importer",
    "Remember that the staging database is reset every night at 02:00 UTC by the ops cron job",
]
CTX = JudgeContext(project="cassettes")


def fake(script: str) -> str:
    return f"template:{shlex.quote(sys.executable)} {shlex.quote(str(FAKE / script))}"


def items(texts=NOTES):
    return [Item(key=i, content=t) for i, t in enumerate(texts, 1)]


def verdicts(result) -> dict[int, str]:
    return {k: j.verdict["verdict"] if isinstance(j.verdict, dict) else j.verdict.verdict
            for k, j in result.judged.items()}


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A cassette recorded from answer.py (one judge call) and modal.py's compare answer."""
    path = tmp_path / "cassettes" / "fake.yaml"
    monkeypatch.setenv("CONSOLIDATE_RECORD", "1")
    monkeypatch.setenv("CONSOLIDATE_CASSETTE", str(path))
    judge = CLIJudge(fake("answer.py"))
    result = JudgeChain([judge]).run(items(), CTX)
    assert judge.calls == 1 and result.judged
    modal = CLIJudge(fake("modal.py"), env={"FAKE_CLI_RELATION": "updates"})
    answered, _ = compare_pairs(JudgeChain([modal]), [Pair("k1", "Postgres 16 now", "Postgres 15", "fact")], CTX)
    assert answered == {"k1": ("updates", "cli:template")}
    monkeypatch.delenv("CONSOLIDATE_RECORD")
    return path, verdicts(result)


@pytest.mark.spawns
def test_record_writes_digests_command_answer_and_seconds(recorded):
    path, _ = recorded
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert data["format"] == "consolidate-cli-cassette/1"
    judge, compare = data["interactions"]
    assert judge["kind"] == "judge" and judge["prompt_version"] == "judge-v1"
    assert compare["kind"] == "compare" and compare["prompt_version"] == "contradiction-v2"
    for row in (judge, compare):
        assert row["prompt_sha256"].startswith("sha256:") and len(row["prompt_sha256"]) == 71
        assert row["prompt_chars"] > 500 and row["seconds"] >= 0
        assert row["command"][0] == sys.executable and row["recorded"]
    assert json.loads(judge["answer"])["verdicts"][0]["verdict"] == "keep"
    # no prompt text (the notes, the pairs, the rules); only what the CLI answered (here it echoes keeps)
    for needle in ("write the tests", "Postgres 15", "You curate", "<<<NOTES"):
        assert needle not in text


@pytest.mark.spawns
def test_replay_answers_offline_without_the_cli(recorded, monkeypatch):
    path, live = recorded
    monkeypatch.setenv("CONSOLIDATE_CASSETTE", str(path))
    judge = CLIJudge("template:/nonexistent/cli --never-run")  # replay never starts the command
    assert judge.available() == (True, f"replaying cassette {path}")
    result = JudgeChain([judge]).run(items(), CTX)
    assert verdicts(result) == live == {1: "keep", 2: "drop", 3: "keep"}
    assert judge.calls == 0 and judge.last_call["replayed"] is True
    answered, events = compare_pairs(JudgeChain([judge]), [Pair("k1", "Postgres 16 now", "Postgres 15", "fact")], CTX)
    assert answered == {"k1": ("updates", "cli:template")}
    assert [e for e in events if e["event"] == "judge.call"][0]["replayed"] is True


@pytest.mark.spawns
def test_changed_note_fails_loudly_naming_the_prompt_version(recorded, monkeypatch):
    path, _ = recorded
    monkeypatch.setenv("CONSOLIDATE_CASSETTE", str(path))
    changed = NOTES[:2] + ["Remember that the staging database is reset every night at 03:00 UTC"]
    with pytest.raises(CassetteMiss) as exc:
        JudgeChain([CLIJudge(fake("answer.py"))]).run(items(changed), CTX)
    msg = str(exc.value)
    assert "prompt version judge-v1" in msg and "the prompt changed since it was recorded" in msg
    assert str(path) in msg and "CONSOLIDATE_RECORD=1" in msg
    assert exc.value.prompt_version == "judge-v1"


@pytest.mark.spawns
def test_changed_prompt_version_fails_naming_both_versions(recorded, monkeypatch, tmp_path):
    """A prompt version the cassette never saw (a copy of judge-v1 with one rule reworded)."""
    path, _ = recorded
    monkeypatch.setenv("CONSOLIDATE_CASSETTE", str(path))
    judge = CLIJudge(fake("answer.py"))
    import consolidate.judges.cli as cli_mod

    real = cli_mod.render_prompt
    monkeypatch.setattr(cli_mod, "render_prompt",
                        lambda b, c, v: real(b, c, "judge-v1").replace("Keep only", "Keep just"))
    judge.prompt_version = "judge-v9"
    with pytest.raises(CassetteMiss, match=r"prompt version judge-v9 .*no judge-v9 exchange.*recorded versions: judge-v1"):
        JudgeChain([judge]).run(items(), CTX)


@pytest.mark.spawns
def test_changed_compare_pair_fails_loudly(recorded, monkeypatch):
    path, _ = recorded
    monkeypatch.setenv("CONSOLIDATE_CASSETTE", str(path))
    with pytest.raises(CassetteMiss, match="compare prompt, prompt version contradiction-v2"):
        compare_pairs(JudgeChain([CLIJudge(fake("modal.py"))]),
                      [Pair("k1", "Postgres 17 now", "Postgres 15", "fact")], CTX)


@pytest.mark.spawns
def test_rerecording_replaces_the_same_prompt_and_keeps_others(recorded, monkeypatch):
    path, _ = recorded
    monkeypatch.setenv("CONSOLIDATE_RECORD", "1")
    JudgeChain([CLIJudge(fake("answer.py"))]).run(items(), CTX)  # same prompt again
    JudgeChain([CLIJudge(fake("answer.py"))]).run(items(NOTES[:1]), CTX)  # a new one
    rows = yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"]
    assert [r["kind"] for r in rows] == ["compare", "judge", "judge"]
    assert len({r["prompt_sha256"] for r in rows}) == 3


@pytest.mark.spawns
def test_model_id_reported_by_claude_code_is_recorded(tmp_path, monkeypatch, claude_on_path):
    monkeypatch.setenv("CONSOLIDATE_RECORD", "1")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONSOLIDATE_CASSETTE_DIR")
    JudgeChain([CLIJudge("claude")]).run(items(), CTX)
    path = tmp_path / "cassettes" / "cli-claude.yaml"  # the default name, in ./cassettes
    [row] = yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"]
    assert row["model"] == "claude-fake-sonnet-1" and row["model_from"] == "cli"
    assert row["command"][:2] == ["claude", "-p"] and "{schema}" in row["command"]
    assert row["schema_sha256"] == prompt_digest(json.dumps(schema(), separators=(",", ":")))


@pytest.mark.spawns
def test_recorder_names_the_model_when_the_cli_does_not(tmp_path, monkeypatch):
    path = tmp_path / "c.yaml"
    monkeypatch.setenv("CONSOLIDATE_RECORD", "1")
    monkeypatch.setenv("CONSOLIDATE_CASSETTE", str(path))
    monkeypatch.setenv("CONSOLIDATE_CASSETTE_MODEL", "some capable model, 2026-11-30")
    monkeypatch.setenv("CONSOLIDATE_CASSETTE_HOW", "answers written by hand for a test")
    JudgeChain([CLIJudge(fake("answer.py"))]).run(items(), CTX)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["model"] == "some capable model, 2026-11-30" and data["how"].startswith("answers written")
    assert data["interactions"][0]["model_from"] == "recorder"


def test_missing_cassette_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CONSOLIDATE_CASSETTE", str(tmp_path / "none.yaml"))
    with pytest.raises(ConfigError, match="does not exist"):
        CLIJudge(fake("answer.py"))


@pytest.mark.spawns
def test_eval_command_records_then_replays_and_a_changed_label_file_exits_5(tmp_path):
    """The round trip through ``consolidate eval`` in real processes: record, replay with the CLI
    gone, then a changed note: one-line error naming judge-v1, exit 5 (judge problem)."""
    labels = tmp_path / "labels.jsonl"
    rows = [{"id": f"l{i}", "content": t, "verdict": "keep" if "Remember" in t else "drop"}
            for i, t in enumerate(NOTES)]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cassette = tmp_path / "eval.yaml"
    env = {**os.environ, "CONSOLIDATE_CASSETTE": str(cassette)}
    env.pop("CONSOLIDATE_RECORD", None)
    cmd = [sys.executable, "-m", "consolidate", "eval", "--json", "--labels", str(labels), "--judge"]
    live = subprocess.run(cmd + ["cli:" + fake("answer.py")], env={**env, "CONSOLIDATE_RECORD": "1"},
                          capture_output=True, text=True, timeout=120)
    assert live.returncode == 0, live.stderr
    replay = subprocess.run(cmd + ["cli:template:/nonexistent/cli"], env=env, capture_output=True, text=True, timeout=120)
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout)["confusion"] == json.loads(live.stdout)["confusion"]
    rows[2]["content"] = rows[2]["content"].replace("02:00", "04:00")
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    changed = subprocess.run(cmd + ["cli:template:/nonexistent/cli"], env=env, capture_output=True, text=True, timeout=120)
    assert changed.returncode == 5
    assert "prompt version judge-v1" in changed.stderr and "Traceback" not in changed.stderr
    assert len(changed.stderr.strip().splitlines()) == 1


# -- a replay cassette is parsed once per process (issue 30: 48 of 85 s of a 20-session replay) -----

CLI_CASSETTES = sorted(p for p in (REPO / "cassettes").glob("*-capable.yaml"))


@pytest.mark.parametrize("path", CLI_CASSETTES, ids=lambda p: p.stem)
def test_libyaml_reads_every_cli_cassette_as_safe_load_does(path):
    from consolidate.judges.cli_cassette import _safe_load

    text = path.read_text(encoding="utf-8")
    assert _safe_load(text) == yaml.safe_load(text)


def test_a_replay_cassette_is_parsed_once_while_unchanged_and_again_when_changed(tmp_path, monkeypatch):
    from consolidate.judges import cli_cassette

    path = tmp_path / "c.yaml"

    def write(answer: str, kind: str = "judge") -> None:
        path.write_text(yaml.safe_dump({"format": cli_cassette.FORMAT, "interactions": [
            {"kind": kind, "prompt_version": "v", "prompt_sha256": prompt_digest("p"), "answer": answer}]}))

    write("first")
    parsed = []
    real = cli_cassette._safe_load
    monkeypatch.setattr(cli_cassette, "_safe_load", lambda text: parsed.append(1) or real(text))
    for _ in range(3):  # one judge chain per session: the same file, parsed once
        assert cli_cassette.CLICassette(path, record=False).replay("judge", "p", "v")["answer"] == "first"
    assert len(parsed) == 1
    write("second, longer")  # re-recorded: another size (and modification time)
    assert cli_cassette.CLICassette(path, record=False).replay("judge", "p", "v")["answer"] == "second, longer"
    assert len(parsed) == 2
    with pytest.raises(CassetteMiss):  # the kind still counts
        cli_cassette.CLICassette(path, record=False).replay("compare", "p", "v")
    path.unlink()
    with pytest.raises(ConfigError, match="does not exist"):
        cli_cassette.CLICassette(path, record=False)
