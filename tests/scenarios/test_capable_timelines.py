"""The timelines benchmark (issue 31 item 4) replayed from its capable-model answers
(``cassettes/timelines-judge-v1-capable/``: every judge-v1 prompt and every compare prompt of the 9
timelines, answered through judgelab; see its README.md), on the two smallest timelines, both modes.

A prompt the answers do not cover (a changed prompt, batch layout or contradiction candidate) is
counted by the replay judge and fails the test; the figures written beside the answers
(``cassettes/timelines-judge-v1-capable.expected.json``, from the run over all 9) must come out again,
and stale survival stays within the issue's goal (<= 10 %) with the notes files handed over. MiniLM,
as the benchmark runs. Skipped, with the reason, when ../shared is absent (the timelines are read
from there)."""

from __future__ import annotations

import importlib.util
import json
import os
import stat

import pytest

from conftest import SHARED
from paths import REPO

ANSWERS = REPO / "cassettes" / "timelines-judge-v1-capable"
EXPECTED = REPO / "cassettes" / "timelines-judge-v1-capable.expected.json"
TIMELINES = SHARED / "data" / "timelines"
SMALL = ("mb-vibe-station", "sp-sttbot")

pytestmark = pytest.mark.skipif(not TIMELINES.is_dir(), reason=f"no timelines at {TIMELINES} (../shared absent)")

#: The replay judge: the answer of the prompt's sha1-12, or the prompt's digest appended to $MISSES, exit 3.
REPLAY = """#!/bin/sh
t=$(mktemp); cat > "$t"; h=$(sha1sum "$t" | cut -c1-12); rm -f "$t"
if [ -f "$ANSWERS/$h.json" ]; then cat "$ANSWERS/$h.json"; exit 0; fi
echo "$h" >> "$MISSES"; exit 3
"""


def _bench():
    spec = importlib.util.spec_from_file_location("bench_timelines", REPO / "benchmarks" / "bench_timelines.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _strip(result: dict) -> dict:
    out = {k: v for k, v in result.items() if k not in ("seconds", "per_session")}
    out["per_session"] = [{k: v for k, v in s.items() if k != "seconds"} for s in result["per_session"]]
    return out


@pytest.mark.parametrize("notes_files", [False, True], ids=["notes-alone", "with-notes-files"])
def test_the_timelines_replay_their_capable_answers(tmp_path, monkeypatch, notes_files):
    bench = _bench()
    script = tmp_path / "replay.sh"
    script.write_text(REPLAY, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    misses = tmp_path / "misses.txt"
    monkeypatch.setenv("ANSWERS", str(ANSWERS))
    monkeypatch.setenv("MISSES", str(misses))
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", os.environ.get("ANONYMIZED_TELEMETRY", "False"))
    mode = "with notes files" if notes_files else "notes alone"
    expected = {r["timeline"]: r for r in json.loads(EXPECTED.read_text(encoding="utf-8"))["modes"][mode]}
    for slug in SMALL:
        got = bench.run_timeline(bench.load_timeline(TIMELINES / slug), [f"cli:template:{script}"], None,
                                 tmp_path / "stores", notes_files=notes_files)
        assert not misses.exists(), f"{slug}: prompts without an answer: {misses.read_text().split()[:5]}"
        assert _strip(got) == expected[slug], slug
        if notes_files:
            for kind in ("edited", "deleted"):
                assert got[kind]["share"] is None or got[kind]["share"] <= 0.10, (slug, kind, got[kind])
