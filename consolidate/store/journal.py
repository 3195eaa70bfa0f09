"""The write-ahead journal of the run being applied (``journal/`` in the store).

``journal/<run_id>.json`` holds the whole plan, written and fsynced before the first store write.
``journal/<run_id>.steps`` gets one line per apply step completed. A run that finds a journal left
behind by a crash replays the steps not yet completed (every step is idempotent), then removes it:
the replay is the apply stage's (consolidate.pipeline.stages.apply: ``finish_pending``, ``recover``,
``writing``); this module only writes, reads and removes the journal's files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from consolidate.core.errors import StoreCorrupt
from consolidate.model.plan import Plan
from consolidate.store.layout import JOURNAL, JOURNAL_PLAN, JOURNAL_STEPS
from consolidate.core.atomic import write_atomic
from consolidate.core.private import private_file
from consolidate.rules.persisted import gate_record
import base64
import dataclasses
from array import array


def _folder(store) -> Path:
    folder = store.sub(JOURNAL)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def write(store, plan: Plan) -> Path:
    """Write the plan to the journal, fsynced; returns its path."""

    path = _folder(store) / JOURNAL_PLAN.fill(plan.run_id).name
    # a failed write (a full disk) removes its temporary file: no half journal (and the notes in it) is kept
    write_atomic(path, json.dumps(gate_record(_encoded(plan)), ensure_ascii=False), sync_folder=True)
    return path


def done_steps(store, run_id: str) -> set[str]:
    """Names of the apply steps already completed for ``run_id``."""
    p = _folder(store) / JOURNAL_STEPS.fill(run_id).name
    try:
        return {line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()}
    except FileNotFoundError:
        return set()


def mark(store, run_id: str, step: str) -> None:
    """Record that ``step`` completed (appended and fsynced)."""

    with private_file(_folder(store) / JOURNAL_STEPS.fill(run_id).name, "a") as f:
        f.write(step + "\n")
        f.flush()
        os.fsync(f.fileno())


def reset_steps(store, run_id: str, steps: list[str]) -> None:
    """Replace the completed steps of ``run_id`` by ``steps`` (atomically): a failed apply rolled
    back to its snapshot step."""
    write_atomic(_folder(store) / JOURNAL_STEPS.fill(run_id).name, "".join(s + "\n" for s in steps))


def clear(store, run_id: str) -> None:
    """Remove the journal of a fully applied run."""
    for entry in (JOURNAL_PLAN, JOURNAL_STEPS):
        try:
            (_folder(store) / entry.fill(run_id).name).unlink()
        except FileNotFoundError:
            pass


def has_pending(store) -> bool:
    """Whether a run is left in the journal (a crash between its journal write and its end)."""
    folder = store.sub(JOURNAL)
    return folder.is_dir() and any(folder.glob(JOURNAL_PLAN.name))


def unindexed_runs(store) -> set[str]:
    """Run ids left in the journal whose ``chroma`` step (the recall-index upserts) is not done yet:
    a run being applied by another process right now (the graph step goes first) or one a crash
    stopped before the index (the next run replays it). Reads only file names and steps files."""
    folder = store.sub(JOURNAL)
    if not folder.is_dir():
        return set()
    suffix = JOURNAL_PLAN.name.removeprefix("*")  # journal/<run_id>.json
    runs = {p.name[: -len(suffix)] for p in folder.glob(JOURNAL_PLAN.name)}
    return {run for run in runs if "chroma" not in done_steps(store, run)}


def pending(store) -> list[Plan]:
    """Plans left in the journal by an interrupted apply, oldest first.

    Raises StoreCorrupt for a journal file that is not a plan."""
    folder = store.sub(JOURNAL)
    if not folder.is_dir():
        return []
    plans = []
    for p in sorted(folder.glob(JOURNAL_PLAN.name), key=lambda x: x.stat().st_mtime):
        try:
            plans.append(Plan.from_dict(_decoded(json.loads(p.read_text(encoding="utf-8")))))
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreCorrupt(f"journal file {p} is corrupt ({exc}); move it away to continue", path=str(p)) from None
    return plans


def _encoded(plan: Plan) -> dict:
    """``plan.to_dict()`` as the journal stores it, built shallowly (a run's plan holds every note of
    the session: ``dataclasses.asdict`` deep-copied them all) and with each candidate's embedding as
    base64 float32 (``{"f32": ...}``: the embeddings are float32 values, so nothing is lost; as
    decimal text they were most of the file). At 1,000 notes and 154 keepers: 0.4 s -> under 0.1 s
    (benchmarks/bench_pipeline.py)."""
    def shallow(obj):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}

    data = shallow(plan)
    data["notes"] = [shallow(n) for n in plan.notes]
    data["reconfirmations"] = [shallow(r) for r in plan.reconfirmations]
    data["updates"] = [shallow(u) for u in plan.updates]
    cands = []
    for c in plan.candidates:
        d = shallow(c)
        if d.get("embedding") is not None:
            d["embedding"] = {"f32": base64.b64encode(array("f", d["embedding"]).tobytes()).decode("ascii")}
        cands.append(d)
    data["candidates"] = cands
    return data


def _decoded(data: dict) -> dict:
    """The plan data of :func:`_encoded` (or of an older journal, with embeddings as lists)."""
    for c in data.get("candidates", []):
        emb = c.get("embedding")
        if isinstance(emb, dict) and "f32" in emb:
            c["embedding"] = array("f", base64.b64decode(emb["f32"])).tolist()
    return data
