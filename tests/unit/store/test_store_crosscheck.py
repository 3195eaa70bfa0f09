"""Every derived file of a store is checked against the event log (issue 29 item 3).

The reported case: ``truncate -s 50% graph/nodes.jsonl`` then ``doctor --repair`` said "1 corrupt
line ... repaired" and "healthy" with 117 of 254 memory nodes gone; after deleting ``chroma/`` the
repair rebuilt 137 memories though the log held 254. Now each derived file (graph nodes and edges,
the recall index, ``memory/notes.md``, the context files) and the event log itself (against the
undo records) is compared, the difference reported with counts, and ``--repair`` rebuilds the
damaged one from the source that is whole. One store of 254 live memories (a scripted judge, a
forget and an undo in its history, MiniLM) is built once by ``consolidate`` commands (processes forked
from one with chromadb imported: tests/support/preloaded.py); each test damages a copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from many_processes import cli_env, note_texts
from preloaded import run as run_preloaded

SESSIONS = {f"s{i}": 52 for i in range(5)}  # 260 notes, every 13th dropped
EXTRA = {"t0": 30}  # 255 memories written (a few notes re-confirm one), one then forgotten: 254 live
UNDONE = {"u0": 4}  # a run whose 4 memories are undone


def _consolidate(folder, *args, judge=None):
    """``consolidate ARGS`` in a new process forked from one with chromadb imported (tests/support/preloaded.py)."""
    env = cli_env(folder, **({"CONSOLIDATE_JUDGES": f"scripted:{judge}"} if judge else {}))
    return run_preloaded(list(args), env=env, timeout=600)


def _script(sessions: dict[str, int]) -> dict:
    """A scripted judge's verdicts: every note kept as a rewritten statement (three types, three
    confidences, non-ASCII text in a third), every 13th dropped."""
    script = {}
    for sid, n in sessions.items():
        for i, text in enumerate(note_texts(sid, n)):
            tag = f"(note {i} of {sid})"
            if i % 13 == 12:
                script[tag] = {"verdict": "drop", "reason": "scripted drop"}
                continue
            statement = text.replace("In project", "Project") + (" — vérifié" if i % 3 == 1 else "")
            script[tag] = {"verdict": "keep", "statement": statement, "type": ["fact", "decision", "constraint"][i % 3],
                           "evidence": "observed-success", "confidence": ["high", "medium", "low"][i % 3],
                           "reason": "scripted keep",
                           "fields": {"reason": "the team measured it"} if i % 3 == 1 else {}}
    return script


def _notes(folder, sessions):
    from consolidate import Store

    store = Store(folder, project="p")
    try:
        for sid, n in sessions.items():
            for text in note_texts(sid, n):
                store.sessions.add_note(sid, text)
            store.sessions.end(sid, "success")
    finally:
        store.close()


def _run(folder, sessions, tmp):
    judge = Path(tmp) / f"judge-{'-'.join(sessions)}.json"
    judge.write_text(json.dumps(_script(sessions)), encoding="utf-8")
    _notes(folder, sessions)
    out = _consolidate(folder, "run", judge=judge)
    assert out.returncode == 0, out.stdout + out.stderr


def state(folder) -> dict:
    """What the store holds: the index's records (document, status, type, scope, confidence,
    evidence), the graph's memory nodes (status) and derived_from edges, and the entry lines of
    ``memory/notes.md``."""
    from consolidate import Store
    from consolidate.store import graph
    from consolidate.store.index.longterm import close_all

    close_all()
    s = Store(folder, create=False)
    try:
        index = {r["id"]: (r["document"], *(r["metadata"].get(k) for k in ("status", "type", "scope", "confidence",
                                                                              "evidence")))
                 for r in s.longterm().all()}
    finally:
        s.close()
        close_all()
    g = graph.load(Path(folder) / "graph")
    nodes = {n: a.get("status") for n, a in g.nodes(data=True) if a.get("kind") == "memory"}
    edges = Counter(k for _, _, k in g.edges(keys=True))
    text = (Path(folder) / "memory" / "notes.md").read_text(encoding="utf-8")
    entries = Counter(line.split("~~ (")[0].lstrip("- ~") for line in text.splitlines()
                      if line.startswith(("- **", "- ~~**")))
    return {"index": index, "nodes": nodes, "edges": edges, "notes": entries}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The store of 254 live memories, built by the command line, and its state."""
    tmp = tmp_path_factory.mktemp("crosscheck")
    folder = tmp / ".memofs"
    _run(folder, {**SESSIONS, **EXTRA}, tmp)  # one `consolidate run`: a run per queued session
    before = state(folder)
    victim = sorted(before["index"])[7]
    out = _consolidate(folder, "forget", victim, "--reason", "wrong")
    assert out.returncode == 0, out.stderr
    _run(folder, UNDONE, tmp)
    from consolidate import Store
    from consolidate.store import snapshots

    s = Store(folder, create=False)
    last = max((r for r in snapshots.list_runs(s) if r["added"]), key=lambda r: r["started_at"])
    s.close()
    assert _consolidate(folder, "undo", last["run_id"]).returncode == 0
    after = state(folder)
    assert len(after["index"]) == 254, len(after["index"])
    assert sum(1 for e in _events(folder) if e.get("event") == "memory.written") > 255  # the undone run's too
    assert _consolidate(folder, "doctor").stdout.strip() == "healthy"
    return folder, after


def _events(folder):
    return [json.loads(x) for x in (Path(folder) / "events" / "memory-events.jsonl").read_text().splitlines()]


@pytest.fixture
def store(built, tmp_path):
    folder = tmp_path / ".memofs"
    shutil.copytree(built[0], folder)
    return folder, built[1]


def _cut(path: Path, fraction: float) -> None:
    os.truncate(path, int(path.stat().st_size * fraction))


def _lines(path: Path, edit) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(edit(lines)), encoding="utf-8")


def _in_process(capsys):
    """``consolidate doctor ...`` through the CLI's entry point in this process (the command the
    other cases run as a subprocess; the model stays loaded, which keeps the module short)."""
    from consolidate.cli.main import main
    from consolidate.store.index.longterm import close_all

    def run(folder, *args):
        close_all()
        capsys.readouterr()
        code = main([*args, "--store", str(folder), "--embedding", "minilm", "--project", "p"])
        out = capsys.readouterr()
        close_all()
        return subprocess.CompletedProcess(args, code, out.out, out.err)
    return run


def _repaired(folder, before, *expect, cli=_consolidate):
    """doctor reports the damage (exit 1, not healthy, ``expect`` in its lines), --repair brings
    every memory back (the same ids, texts, statuses in the index, graph and notes.md), doctor is
    healthy again."""
    doctor = cli(folder, "doctor")
    assert doctor.returncode == 1 and "healthy" not in doctor.stdout, doctor.stdout + doctor.stderr
    for text in expect:
        assert text in doctor.stdout, doctor.stdout
    repair = cli(folder, "doctor", "--repair")
    assert repair.returncode == 0 and "[repaired]" in repair.stdout, repair.stdout + repair.stderr
    again = cli(folder, "doctor")
    assert again.stdout.strip() == "healthy", repair.stdout + "\n--\n" + again.stdout
    now = state(folder)
    for part in ("index", "nodes", "notes"):
        assert now[part] == before[part], part
    assert now["edges"]["derived_from"] == before["edges"]["derived_from"]
    return doctor.stdout, repair.stdout


def _repaired_here(capsys, folder, before, *expect):
    return _repaired(folder, before, *expect, cli=_in_process(capsys))


@pytest.mark.spawns
def test_the_reported_case_half_the_nodes_then_the_index(store):
    """`truncate -s 50% graph/nodes.jsonl`: not healthy, the graph's loss counted, all 255 memory
    nodes back (254 live, 1 forgotten); then `rm -rf chroma/`: 254 memories rebuilt, not the graph's."""
    folder, before = store
    _cut(folder / "graph" / "nodes.jsonl", 0.5)
    out, repair = _repaired(folder, before, "graph/: the event log holds 255 memories; the graph lacks")
    shutil.rmtree(folder / "chroma")
    out, repair = _repaired(folder, before, "chroma/: the event log holds 254 memories; the recall index is missing")
    assert "rebuilt 254 memories [repaired]" in repair


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.9])
def test_graph_nodes_cut(store, fraction, capsys):
    folder, before = store
    _cut(folder / "graph" / "nodes.jsonl", fraction)
    _repaired_here(capsys, folder, before, "graph/")


@pytest.mark.parametrize("fraction", [0.0, 0.5])
def test_graph_edges_cut(store, fraction, capsys):
    folder, before = store
    _cut(folder / "graph" / "edges.jsonl", fraction)
    _repaired_here(capsys, folder, before, "edge(s) missing")


def test_graph_folder_deleted(store, capsys):
    folder, before = store
    shutil.rmtree(folder / "graph")
    _repaired_here(capsys, folder, before, "graph/: the event log holds 255 memories; the graph lacks 255")


def test_graph_lines_deleted_in_the_middle_a_corrupt_and_an_extra_line(store, capsys):
    """Ten node lines gone from the middle, one replaced by garbage, one fake memory added."""
    folder, before = store

    def edit(lines):
        mid = len(lines) // 2
        fake = json.dumps({"id": "mem-0000000000000000", "kind": "memory", "type": "fact", "status": "active",
                           "scope": "p", "statement": "a memory no run wrote"}) + "\n"
        return lines[:mid] + ["{not json\n"] + lines[mid + 11:] + [fake]
    _lines(folder / "graph" / "nodes.jsonl", edit)
    out, _ = _repaired_here(capsys, folder, before, "1 corrupt line(s)", "1 no event describes")
    assert "mem-0000000000000000" in (folder / "graph" / "nodes.jsonl.corrupt").read_text()


@pytest.mark.parametrize("how", ["lacks", "extra", "stale"])
def test_index_records_lost_extra_or_stale(store, how, capsys):
    """Records deleted from the index, a record no event describes, a record whose status differs."""
    from consolidate import Store
    from consolidate.store.index.longterm import close_all

    folder, before = store
    close_all()
    s = Store(folder, create=False)
    try:
        lt = s.longterm()
        ids = sorted(before["index"])
        with s.lock():
            if how == "lacks":
                lt.delete(ids[40:140])
            elif how == "extra":
                lt.upsert([{"id": "mem-ffffffffffffffff", "document": "an entry no run wrote",
                            "metadata": {"status": "active", "tier": "durable", "type": "fact", "scope": "p"},
                            "embedding": lt.embed(["an entry no run wrote"])[0]}])
            else:
                lt.update_metadata(ids[3], {"status": "quarantined"})
    finally:
        s.close()
        close_all()
    _repaired_here(capsys, folder, before, {"lacks": "the recall index lacks 100 of them", "extra": "1 no event describes",
                               "stale": "1 whose status, type or statement differ"}[how])


@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.8])
def test_notes_md_cut(store, fraction, capsys):
    folder, before = store
    _cut(folder / "memory" / "notes.md", fraction)
    _repaired_here(capsys, folder, before, "memory/notes.md: lacks")


def test_notes_md_lines_deleted_and_added(store, capsys):
    folder, before = store
    _lines(folder / "memory" / "notes.md",
           lambda lines: lines[:30] + lines[60:] + ["- **fact**: a line no run wrote [high, observed] (x)\n"])
    _repaired_here(capsys, folder, before, "memory/notes.md: lacks", "line(s) no event describes")


@pytest.mark.parametrize("how", ["cut", "deleted", "top deleted", "memory folder deleted"])
def test_context_files(store, how, capsys):
    folder, before = store
    mem = folder / "memory"
    if how == "cut":
        _cut(mem / "context.md", 0.5)
    elif how == "deleted":
        (mem / "context.md").unlink()
    elif how == "top deleted":
        (mem / "context.top.json").unlink()
    else:
        shutil.rmtree(mem)
    _repaired_here(capsys, folder, before, "memory/context.md")
    assert (mem / "context.md").read_text().count("\n- ") == 30


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.97])
def test_event_log_cut(store, fraction, capsys):
    """The event log cut: the undo records name runs it lacks; the graph and the index are the
    whole source; the forget and the undo whose events were lost are not undone by the repair."""
    folder, before = store
    _cut(folder / "events" / "memory-events.jsonl", fraction)
    _repaired_here(capsys, folder, before, "events/memory-events.jsonl: the event log is damaged")


def test_event_log_lines_deleted_in_the_middle(store, capsys):
    folder, before = store
    _lines(folder / "events" / "memory-events.jsonl", lambda lines: lines[:100] + lines[400:])
    _repaired_here(capsys, folder, before, "events/memory-events.jsonl: the event log is damaged")


@pytest.mark.parametrize("how", ["forgotten emptied", "tombstone added"])
def test_archive_lines(store, capsys, how):
    """``archive/forgotten.jsonl`` lost its line (the forgotten statement could be written again), or
    ``archive/tombstones.jsonl`` holds a tombstone the log never laid (a live memory refused)."""
    folder, before = store
    if how == "forgotten emptied":
        (folder / "archive" / "forgotten.jsonl").write_text("")
        expect = "forgotten.jsonl lacks 1"
    else:
        with open(folder / "archive" / "tombstones.jsonl", "a") as f:
            f.write(json.dumps({"id": sorted(before["index"])[0], "reason": "x", "run_id": "run-x"}) + "\n")
        expect = "tombstones.jsonl holds 1"
    _repaired_here(capsys, folder, before, "archive/: " + expect)
