"""benchmarks/bench_timelines.py's metrics on a tiny synthetic timeline (issue 31 item 4): the note
map through provenance, stale survival by session, text_key duplicates, one end-to-end run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from consolidate.testing import DROP, ScriptedJudge, keep
from paths import REPO

_spec = importlib.util.spec_from_file_location("bench_timelines", REPO / "benchmarks" / "bench_timelines.py")
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _write(folder: Path, name: str, rows: list[dict]) -> None:
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _note(slug: str, seq: int, n: int, content: str) -> dict:
    return {"id": f"{slug}-s{seq:02d}-n{n:03d}", "session_id": f"{slug}-s{seq:02d}", "timeline": slug, "seq": seq,
            "commit": "ab" * 20, "date": "2026-01-01T00:00:00+00:00", "section": "Notes", "subsection": None,
            "content": content, "source_file": "NOTES.md"}


def test_provenance_maps_product_note_ids_back_to_timeline_ids():
    note_map = {("t-s01", 1): "t-s01-n001", ("t-s02", 1): "t-s02-n001", ("t-s02", 2): "t-s02-n002"}
    meta = {"session_id": "t-s02", "provenance": json.dumps({"session_id": "t-s02", "note_ids": [2]})}
    assert bench.timeline_ids(meta, note_map) == {"t-s02-n002"}
    merged = {"provenance": json.dumps([{"session_id": "t-s01", "note_ids": [1]}, {"session_id": "t-s02", "note_ids": [1]}])}
    assert bench.timeline_ids(merged, note_map) == {"t-s01-n001", "t-s02-n001"}
    assert bench.timeline_ids({"provenance": "not json"}, note_map) == set()


def test_stale_survival_counts_only_notes_gone_stale_by_the_session():
    stale = {"a": 2, "b": 3, "c": 5}
    assert bench.stale_survival(stale, 1, {"a"}, {"a"})["share"] is None
    s = bench.stale_survival(stale, 3, {"a"}, {"a", "b"})
    assert (s["n"], s["with_memory"], s["active"], s["share"]) == (2, 2, 1, 0.5)


def test_duplicates_by_text_key_and_cosine():
    d = bench.duplicates(["Use pnpm, not npm.", "use PNPM not npm", "Port is 8080"],
                         [[1.0, 0.0], [0.99, 0.01], [0.0, 1.0]])
    assert d == {"text_key_extra": 1, "text_key_groups": 1, "cosine_pairs": 1}
    assert "cosine_pairs" not in bench.duplicates(["a"])


def test_run_timeline_end_to_end(tmp_path):
    slug = "t"
    folder = tmp_path / slug
    folder.mkdir()
    _write(folder, "s01.jsonl", [_note(slug, 1, 1, "The API server listens on port 8080"),
                                 _note(slug, 1, 2, "Plan: write the login page")])
    _write(folder, "s02.jsonl", [_note(slug, 2, 1, "The API server listens on port 9090")])
    _write(folder, "changes.jsonl", [{"old_id": "t-s01-n001", "new_id": "t-s02-n001", "old_seq": 1, "new_seq": 2}])
    _write(folder, "removed.jsonl", [{"id": "t-s01-n002", "removed_in_seq": 2}])
    tl = bench.load_timeline(folder)
    assert [s for s, _ in tl["sessions"]] == [1, 2] and tl["edited"] == {"t-s01-n001": 2}
    judge = ScriptedJudge({"8080": keep("The API server listens on port 8080"), "login": DROP,
                           "9090": keep("The API server listens on port 9090")})
    r = bench.run_timeline(tl, [judge], "hash", tmp_path / "stores")
    assert [row["seq"] for row in r["per_session"]] == [1, 2]
    assert r["per_session"][0]["active"] == 1 and r["per_session"][0]["edited"]["n"] == 0
    assert r["edited"]["n"] == 1 and r["edited"]["with_memory"] == 1
    assert r["deleted"] == {"n": 1, "with_memory": 0, "active": 0, "share": 0.0}
