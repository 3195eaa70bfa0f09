"""The team ledger, team/ledger.sqlite3 (consolidate/team/ledger.py, issue 34 goal 3): one row per
memory, edge and tombstone; a pull and a push touch only their rows, in one transaction each; the
ledger.json of earlier versions is moved in by the first open, losing nothing."""

from __future__ import annotations

import json
import multiprocessing
import stat

import pytest
from hypothesis import given, settings, strategies as st

from consolidate.store.layout import TEAM_LEDGER, TEAM_LEDGER_JSON
from consolidate.team import ledger
from consolidate.team.ledger import LIFTED, REMOVED


class _Store:
    """What the ledger needs of a store: ``sub(entry)``."""

    def __init__(self, path):
        self.path = path

    def sub(self, entry):
        return entry.of(self.path)


def _model_record(model: dict, seen: dict, edges, tombstones) -> None:
    """What team/ledger.json's read-modify-write did (consolidate/team/sync.py before issue 34 goal 3),
    the reference the table is held to."""
    for mid, (version, wid) in seen.items():
        if int(model["memories"].get(mid) or 0) <= int(version):
            model["memories"][mid] = int(version)
            if wid:
                model["etags"][mid] = wid
            else:
                model["etags"].pop(mid, None)
    for name, keys, suffix in (("edges", edges, REMOVED), ("tombstones", tombstones, LIFTED)):
        known = set(model[name])
        for key in keys:
            base = key[:-len(suffix)] if key.endswith(suffix) else key
            known.discard(base if key.endswith(suffix) else base + suffix)
            known.add(key)
        model[name] = sorted(known)


IDS = st.sampled_from([f"mem-{i}" for i in range(6)])
KEYS = st.sampled_from(["e1", "e2", "e1" + REMOVED, "e2" + REMOVED, "t1", "t1" + LIFTED])
STEP = st.tuples(st.dictionaries(IDS, st.tuples(st.integers(1, 4), st.one_of(st.none(), st.sampled_from(["a:1", "b:2"]))),
                                 max_size=4),
                 st.lists(KEYS, max_size=3), st.lists(KEYS, max_size=3))


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(STEP, max_size=6))
def test_the_table_records_what_the_whole_file_ledger_recorded(tmp_path_factory, steps):
    """Any order of pushes' and pulls' findings: the versions, write ids and keys the table holds
    are the ones the JSON ledger's read-modify-write kept (a newer version wins, an equal one takes
    the new write id, an edge removed and added again keeps only its last key)."""
    store = _Store(tmp_path_factory.mktemp("s"))
    model: dict = {"memories": {}, "etags": {}, "edges": [], "tombstones": []}
    for seen, edges, tombstones in steps:
        seen = {k: list(v) for k, v in seen.items()}
        ledger.record(store, seen, edges, tombstones)
        _model_record(model, seen, edges, tombstones)
    got = ledger.read(store)
    assert {k: got[k] for k in model} == model
    assert ledger.known(store, list(model["memories"]) + ["mem-never"]) == {
        m: (v, model["etags"].get(m)) for m, v in model["memories"].items()}
    assert ledger.known_keys(store, "edges", ["e1", "e1" + REMOVED, "zz"]) == set(model["edges"]) & {"e1", "e1" + REMOVED}


def test_the_cursor_never_moves_back_and_the_clock_is_the_last_pulls(tmp_path):
    store = _Store(tmp_path)
    assert ledger.marks(store) == {"clock": None, "cursor": None}
    ledger.record(store, {}, clock="tok-1", cursor=100.5, advance=True)
    ledger.record(store, {}, clock="tok-2", cursor=50.0, advance=True)
    assert ledger.marks(store) == {"clock": "tok-2", "cursor": 100.5}
    ledger.record(store, {}, clock=None, cursor=None, advance=True)
    assert ledger.marks(store) == {"clock": None, "cursor": 100.5}


def test_the_ledger_file_is_private(tmp_path):
    store = _Store(tmp_path)
    ledger.record(store, {"mem-1": [1, "a:1"]})
    assert stat.S_IMODE(TEAM_LEDGER.of(tmp_path).stat().st_mode) == 0o600


def test_a_json_ledger_of_an_earlier_version_is_moved_in_whole(tmp_path):
    """A store pulled by an earlier version has team/ledger.json: the first open moves every version,
    write id, key, the clock and the cursor into the table and removes the file."""
    old = {"memories": {f"mem-{i}": i % 3 + 1 for i in range(2500)},
           "etags": {f"mem-{i}": f"m:{i}" for i in range(0, 2500, 2)},
           "edges": ["e1", "e2" + REMOVED], "tombstones": ["t1" + LIFTED], "clock": "tok", "cursor": 1234.5}
    path = TEAM_LEDGER_JSON.of(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old))
    store = _Store(tmp_path)
    assert ledger.read(store) == old
    assert not path.exists()
    assert ledger.known(store, ["mem-1", "mem-2"]) == {"mem-1": (2, None), "mem-2": (3, "m:2")}


def test_a_json_ledger_that_cannot_be_read_is_left_where_it_is(tmp_path):
    path = TEAM_LEDGER_JSON.of(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('{"memories": {"mem-1": 1')
    store = _Store(tmp_path)
    assert ledger.read(store)["memories"] == {}
    assert path.read_text() == '{"memories": {"mem-1": 1'


def test_a_ledger_that_is_not_a_database_is_moved_aside_and_started_again(tmp_path):
    """Damaged (overwritten, truncated to garbage): its bytes are kept beside it, the reason is in
    logs/team.log, and the ledger works again empty (the next pull reads every record)."""
    path = TEAM_LEDGER.of(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a database at all" * 100)
    store = _Store(tmp_path)
    assert ledger.marks(store) == {"clock": None, "cursor": None}
    ledger.record(store, {"mem-1": [2, "a:1"]})
    assert ledger.known(store, ["mem-1"]) == {"mem-1": (2, "a:1")}
    assert path.with_name("ledger.sqlite3.damaged").read_bytes() == b"not a database at all" * 100
    assert "moved aside as ledger.sqlite3.damaged" in (tmp_path / "logs" / "team.log").read_text()


def _writer(path, k: int, n: int) -> None:
    store = _Store(path)
    for i in range(n):
        ledger.record(store, {f"mem-{k}-{i}": [1, f"m{k}:{i}"], "mem-shared": [k * n + i + 1, f"m{k}:{i}"]},
                      [f"e-{k}-{i}"], [], clock=f"tok-{k}", cursor=float(k * n + i), advance=True)


@pytest.mark.spawns
def test_processes_recording_at_once_each_keep_what_they_recorded(tmp_path):
    """Four processes record 40 findings each at once (a push, a pull and a SessionStart of one store
    may): every row of each is there, and the shared memory holds the highest version written."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(tmp_path, k, 40)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    got = ledger.read(_Store(tmp_path))
    assert all(got["memories"][f"mem-{k}-{i}"] == 1 for k in range(4) for i in range(40))
    assert got["memories"]["mem-shared"] == 160 and got["etags"]["mem-shared"] == "m3:39"
    assert len(got["edges"]) == 160 and got["cursor"] == 159.0
