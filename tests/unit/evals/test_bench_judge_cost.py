"""benchmarks/bench_judge_cost.py's cost per graduated memory (issue 34 goal 4): the per-kind totals
and ratios of :func:`cost_rows`, and the per-note design's one-verdict answer."""

from __future__ import annotations

import importlib.util
import json
from paths import REPO

_spec = importlib.util.spec_from_file_location("bench_judge_cost", REPO / "benchmarks" / "bench_judge_cost.py")
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_cost_rows_totals_each_kind_per_session_and_per_memory():
    calls = [{"kind": "judge", "prompt": 100, "completion": 30}, {"kind": "judge", "prompt": 50, "completion": 10},
             {"kind": "compare", "prompt": 20, "completion": 4}, {"kind": "per-note", "prompt": 7, "completion": 3}]
    got = bench.cost_rows(calls, sessions=2, notes=9, memories=4)
    assert (got["sessions"], got["notes"], got["memories"]) == (2, 9, 4)
    j = got["judge"]
    assert (j["calls"], j["prompt"], j["completion"]) == (2, 150, 40)
    assert j["prompt_per_session"] == 75 and j["completion_per_memory"] == 10 and j["calls_per_memory"] == 0.5
    assert got["compare"]["prompt_per_memory"] == 5 and got["per-note"]["completion_per_session"] == 1.5
    none = bench.cost_rows(calls[:1], sessions=1, notes=1, memories=0)
    assert none["judge"]["prompt_per_memory"] is None and "compare" not in none


def test_per_note_completion_is_that_verdict_alone_renumbered():
    v = {"id": "n17", "verdict": "keep", "statement": "Use uv, not pip.", "reason": "tool choice"}
    text = bench.per_note_completion(v)
    assert json.loads(text) == {"verdicts": [{**v, "id": "n1"}]}
    assert text.startswith('{\n "verdicts": [\n  {\n   "id": "n1"')
