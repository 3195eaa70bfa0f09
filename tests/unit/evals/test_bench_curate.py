"""benchmarks/bench_curate.py (issue 31 item 5): the notes behind a memory after a curate merge, and
the validation sessions it builds stores for."""

from __future__ import annotations

import importlib.util
import json

import pytest
from paths import REPO

_spec = importlib.util.spec_from_file_location("bench_curate", REPO / "benchmarks" / "bench_curate.py")
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_notes_behind_a_memory_include_those_merged_into_it():
    prov = {"note_ids": [3], "merged": [{"memory_id": "m2", "note_ids": [7, 9]}, {"memory_id": "m5", "note_ids": []}]}
    assert bench.behind({"provenance": json.dumps(prov)}) == [3, 7, 9]
    assert bench.behind({}) == []


def test_the_parts_are_the_splits_sessions_over_both_label_sets():
    if not bench.LABELS.is_file():
        pytest.skip(f"labels not found at {bench.LABELS} (../shared is absent)")
    from consolidate.evals.split import session_split
    from consolidate.evals.judges import read_label_file

    tuning, validation = bench.part_sessions("tuning"), bench.part_sessions("validation")
    assert len(validation) == 14 and len(tuning) == 27 and not set(tuning) & set(validation)
    assert validation == sorted(set(validation))
    # the split ``eval --split`` reports over the same files
    split = session_split([read_label_file(p).notes for p in bench.LABEL_SETS])
    assert sorted(s for s, p in split.items() if p == "validation") == validation
    rows = bench.label_rows()
    assert rows and all(r["verdict"] in ("keep", "drop") for r in rows)  # the second set's disagreements left out
