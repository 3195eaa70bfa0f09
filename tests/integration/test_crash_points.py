"""Crash injection: SIGKILL at every named point of a run, then a rerun. The store must converge to
the store of the same run without a crash: the same memories, no duplicate, no unjudged entry,
complete events, nothing left in the journal.

Filed before as tests/test_crash.py.
"""

import pytest

from consolidate import Store

from robustness import SECRET, dump, run_cli, scenario_notes, seed, write_script

POINTS = ["judge", "apply:journal", "apply:snapshot", "apply:chroma", "apply:graph", "apply:graph:partial", "apply:events",
          "apply:events:partial", "apply:notes_md", "apply:context_md", "apply:session_rows", "apply:queue"]

pytestmark = [pytest.mark.robustness, pytest.mark.integration]


def _prepare(folder):
    store = Store(folder / ".memofs", embedding="hash", project="p")
    seed(store)
    scenario_notes(store)
    return store


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    store = _prepare(folder)
    out = run_cli(store.path, "run", "--judge", write_script(folder))
    assert out.returncode == 0, out.stderr
    return dump(Store(folder / ".memofs", embedding="hash", project="p"))


@pytest.mark.parametrize("point", POINTS)
def test_crash_point_converges(tmp_path, reference, point):
    store = _prepare(tmp_path)
    judge = write_script(tmp_path)
    crashed = run_cli(store.path, "run", "--judge", judge, crash_at=point)
    assert crashed.returncode == -9, (point, crashed.returncode, crashed.stderr[-500:])
    rerun = run_cli(store.path, "run", "--judge", judge)
    assert rerun.returncode == 0, rerun.stderr
    after = dump(Store(tmp_path / ".memofs", embedding="hash", project="p"))
    assert after == reference
    assert after["duplicate_event_keys"] == 0 and after["journal"] == []
    for path in store.path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_reference_is_complete(reference):
    """The no-crash store the crash tests compare against holds what the scenario decides."""
    docs = [d for _, d, _ in reference["chroma"]]
    assert len(docs) == 3 and any("Releases are cut" in d for d in docs) and any("CI cache key" in d for d in docs)
    events = " ".join(e for e, _ in reference["events"])
    for kind in ("note.blocked", "memory.reconfirmed", "candidate.transient", "note.judged_drop", "run.applied"):
        assert kind in events
    assert reference["session_rows"] == {} and reference["queue"] == [("s0", "done"), ("s1", "done")]


# --- the queue file of the light session-end hook (consolidate/agents/hooks/fast.py) ---------------------------

QUEUE_POINTS = ["hook:queue-file:partial", "queue-file:fold"]


def _prepare_unended(folder):
    """The scenario's notes, the session not ended yet (the hook ends it)."""
    store = Store(folder / ".memofs", embedding="hash", project="p")
    seed(store)
    real_end = store.sessions.end
    store.sessions.end = lambda *a, **k: None
    scenario_notes(store)
    store.sessions.end = real_end
    store.close()
    return store


def _hook_end(store_path, sid, crash_at=None):
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "CONSOLIDATE_CRASH_AT"}
    env.update({"CONSOLIDATE_STORE": str(store_path), "CONSOLIDATE_EMBEDDING": "hash", "CONSOLIDATE_PROJECT": "p"})
    if crash_at:
        env["CONSOLIDATE_CRASH_AT"] = crash_at
    payload = json.dumps({"session_id": sid, "hook_event_name": "SessionEnd", "cwd": str(store_path.parent)})
    return subprocess.run([sys.executable, "-m", "consolidate", "hook", "--no-worker"], input=payload, text=True,
                          capture_output=True, env=env, timeout=60)


@pytest.mark.parametrize("point", QUEUE_POINTS)
def test_queue_file_crash_point_converges(tmp_path, reference, point):
    """A hook killed halfway through its queue-file line: the torn line is skipped and the next end
    of the session (the agent's SessionEnd after its Stop) is read whole. A run killed while folding
    the file into the queue table, before its commit: the next run folds it again, once."""
    store = _prepare_unended(tmp_path)
    judge = write_script(tmp_path)
    queue = store.path / "queue.jsonl"
    if point == "hook:queue-file:partial":
        crashed = _hook_end(store.path, "s1", crash_at=point)
        assert crashed.returncode == -9, crashed.stderr[-500:]
        assert queue.read_bytes() and not queue.read_bytes().endswith(b"\n")  # torn
        assert Store(store.path, embedding="hash", project="p").sessions.session_end("s1") is None
        assert _hook_end(store.path, "s1").returncode == 0
    else:
        assert _hook_end(store.path, "s1").returncode == 0
        crashed = run_cli(store.path, "run", "--judge", judge, crash_at=point)
        assert crashed.returncode == -9, (crashed.returncode, crashed.stderr[-500:])
    assert b'"session_id":"s1"' in queue.read_bytes()  # the light hook wrote it, not SQLite
    rerun = run_cli(store.path, "run", "--judge", judge)
    assert rerun.returncode == 0, rerun.stderr
    after = dump(Store(tmp_path / ".memofs", embedding="hash", project="p"))
    assert after == reference
    assert after["duplicate_event_keys"] == 0 and after["journal"] == []
    again = run_cli(store.path, "run", "--judge", judge)  # folded once: nothing is queued again
    assert again.returncode == 0 and "nothing queued" in again.stdout
    for path in store.path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_roll_back_restores_an_entry_exactly(store):
    """A failed run is rolled back (consolidate/pipeline/stages/apply.py roll_back) through the one
    restore undo uses (LongTerm.restore): a metadata key the failed write added to an entry it
    overwrote does not survive (an upsert would merge it in)."""
    from types import SimpleNamespace

    from consolidate.judges.chain import JudgeChain
    from consolidate.judges.scripted import ScriptedJudge
    from consolidate.pipeline.run import run_queue
    from consolidate.pipeline.stages.apply import roll_back
    from consolidate.store import snapshots

    store.sessions.add_note("s1", "The build uses make, never a shell script", flag=True, kind="fact")
    store.sessions.end("s1", "success")
    run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge({})]))
    lt = store.longterm()
    [mid] = [r["id"] for r in lt.all()]
    before = lt.get_with_embeddings([mid])
    snapshots.save(store, "run-failed", {"added": [], "before": before})
    lt.update_metadata(mid, {"disputed_with": "mem-other", "status": "disputed"})  # what the failed write did
    roll_back(store, SimpleNamespace(run_id="run-failed"))
    assert store.longterm().get([mid])[mid]["metadata"] == before[mid]["metadata"]
    assert not snapshots.path_of(store, "run-failed").exists()
