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


def test_the_cursor_never_moves_back_nor_past_this_machines_clock(tmp_path):
    """The cursor (where the next pull reads from) keeps the latest stamp read, bounded by this
    machine's clock when the pull started: a record a fast clock stamped a day ahead does not move
    it past what correct clocks write meanwhile. ``newest`` keeps the latest stamp, unbounded."""
    store = _Store(tmp_path)
    assert ledger.marks(store) == {"clock": None, "cursor": None, "newest": None}
    ledger.record(store, {}, clock="tok-1", cursor=100.5, newest=100.5, now=200.0, advance=True)
    ledger.record(store, {}, clock="tok-2", cursor=50.0, newest=50.0, now=210.0, advance=True)
    assert ledger.marks(store) == {"clock": "tok-2", "cursor": 100.5, "newest": 100.5}
    ledger.record(store, {}, clock="tok-3", cursor=86_600.0, newest=86_600.0, now=300.0, advance=True)
    assert ledger.marks(store) == {"clock": "tok-3", "cursor": 300.0, "newest": 86_600.0}
    ledger.record(store, {}, clock=None, cursor=None, now=400.0, advance=True)
    assert ledger.marks(store) == {"clock": None, "cursor": 300.0, "newest": 86_600.0}


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
    assert ledger.read(store) == {**old, "newest": None}
    assert not path.exists()
    assert ledger.known(store, ["mem-1", "mem-2"]) == {"mem-1": (2, None), "mem-2": (3, "m:2")}


@pytest.mark.parametrize("text", ['{"memories": {"mem-1": 1', "[1, 2]", "null", "\udcff", "\xff\xfe{}"])
def test_a_json_ledger_that_is_no_ledger_is_moved_aside_once(tmp_path, text):
    """Not JSON, not UTF-8, not an object: kept beside as ledger.json.damaged (logged), the ledger
    starts empty (a full pull), and the file is not read again at every open."""
    path = TEAM_LEDGER_JSON.of(tmp_path)
    path.parent.mkdir(parents=True)
    data = text.encode("utf-8", "surrogateescape") if "\udcff" not in text else b"\xff\xfe\x00"
    path.write_bytes(data)
    store = _Store(tmp_path)
    assert ledger.read(store)["memories"] == {}
    assert not path.exists() and path.with_name("ledger.json.damaged").read_bytes() == data
    assert "moved aside as ledger.json.damaged" in (tmp_path / "logs" / "team.log").read_text()


def test_the_entries_of_a_json_ledger_of_the_wrong_type_are_left_out(tmp_path):
    """Each entry that is not what the ledger held (a version that is no positive int, a write id
    that is no string, a list where a map was, a cursor that is no finite number) is left out: that
    memory is pulled again; the others come along."""
    old = {"memories": {"mem-ok": 2, "mem-str": "v1", "mem-dict": {"v": 1}, "mem-huge": 10**30, "mem-bool": True,
                        "mem-neg": -1},
           "etags": {"mem-ok": "m:1", "mem-str": "m:2"}, "edges": 7, "tombstones": ["t1", 3], "cursor": "abc",
           "clock": ["x"]}
    path = TEAM_LEDGER_JSON.of(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old))
    store = _Store(tmp_path)
    got = ledger.read(store)
    assert got == {"memories": {"mem-ok": 2}, "etags": {"mem-ok": "m:1"}, "edges": [], "tombstones": ["t1"],
                   "clock": None, "cursor": None, "newest": None}
    assert not path.exists()
    for bad in ("NaN", "Infinity", "[1]"):
        path.write_text('{"memories": {}, "cursor": %s}' % bad)
        assert ledger.marks(store)["cursor"] is None


def test_a_ledger_damaged_inside_is_moved_aside_and_started_again(tmp_path):
    """Pages overwritten past the header (``database disk image is malformed`` at a read): moved
    aside as ledger.sqlite3.damaged, the read answered by a new, empty ledger."""
    store = _Store(tmp_path)
    ledger.record(store, {f"mem-{i}": [1, f"m:{i}"] for i in range(3000)}, [f"e{i}" for i in range(3000)])
    path = TEAM_LEDGER.of(tmp_path)
    with open(path, "r+b") as f:
        f.seek(4096)
        f.write(b"\xa5" * 8192)
    assert ledger.known(store, [f"mem-{i}" for i in range(3000)]) == {}
    assert path.with_name("ledger.sqlite3.damaged").exists()
    ledger.record(store, {"mem-1": [2, "b:1"]})
    assert ledger.known(store, ["mem-1"]) == {"mem-1": (2, "b:1")}


def test_a_ledger_that_cannot_be_opened_is_a_one_line_store_error(tmp_path):
    """A folder in its place: StoreError naming the file (the CLI prints one line), nothing moved
    aside, nothing lost."""
    from consolidate.core.errors import StoreError

    store = _Store(tmp_path)
    path = TEAM_LEDGER.of(tmp_path)
    path.mkdir(parents=True)
    (path / "kept").write_text("x")
    for call in (lambda: ledger.record(store, {"mem-2": [1, "a:2"]}), lambda: ledger.marks(store)):
        with pytest.raises(StoreError, match="the team ledger .*ledger.sqlite3 cannot be used"):
            call()
    assert (path / "kept").read_text() == "x" and not path.with_name("ledger.sqlite3.damaged").exists()


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
