"""Crash injection: SIGKILL at every named point of a run, then a rerun. The store must converge to
the store of the same run without a crash: the same memories, no duplicate, no unjudged entry,
complete events, nothing left in the journal."""

import pytest

from consolidate import Store

from robustness import SECRET, dump, run_cli, scenario_notes, seed, write_script

POINTS = ["judge", "apply:journal", "apply:snapshot", "apply:chroma", "apply:graph", "apply:graph:partial", "apply:events",
          "apply:events:partial", "apply:notes_md", "apply:context_md", "apply:session_rows", "apply:queue"]

pytestmark = pytest.mark.robustness


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
