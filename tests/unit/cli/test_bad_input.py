"""Bad input: each gets a clear one-line error and loses nothing, or is taken and kept exactly."""

import errno
import json

import pytest

from consolidate.store import graph
from consolidate.cli.main import main
from consolidate.core.errors import StoreCorrupt
from consolidate.pipeline.doctor import check
from consolidate.pipeline.run import run_queue
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import DROP

pytestmark = pytest.mark.robustness


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / ".memofs"))
    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "hash")
    monkeypatch.setenv("CONSOLIDATE_JUDGES", "noop")

    def run(*argv, stdin=None):
        if stdin is not None:
            import io
            import sys

            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def one_line_error(err):
    return err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("text", ["bad \udcff byte", "lone \ud800 surrogate", "nul \x00 byte", "\u200b\u200b", "   "])
def test_bad_note_text(cli, text):
    code, _, err = cli("note", "--session", "s", text)
    assert code == 2 and one_line_error(err)
    assert cli("status", "--json")[1] and json.loads(cli("status", "--json")[1])["sessions_with_notes"] == {}


def test_note_from_stdin_and_invalid_utf8_stdin(cli):
    assert cli("note", "--session", "s", "-", stdin="Notes can come from standard input too".encode())[0] == 0
    code, _, err = cli("note", "--session", "s", "-", stdin=b"caf\xe9")
    assert code == 2 and "not valid UTF-8" in err


def test_import_lone_surrogate_and_deep_json(cli, tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text('{"content": "ok note"}\n{"content": "x \\ud800 y"}\n', encoding="utf-8")
    code, _, err = cli("import", str(f), "--session", "s")
    assert code == 2 and ":2:" in err and one_line_error(err)
    f.write_text('{"content": "ok", "x": ' + "[" * 5000 + "]" * 5000 + "}\n", encoding="utf-8")
    code, _, err = cli("import", str(f), "--session", "s")
    assert code == 2 and "nested too deeply" in err


@pytest.mark.parametrize("argv,message", [
    (("recall", "x", "-k", "0"), "must be from 1"),
    (("recall", "x", "-k", "-3"), "must be from 1"),
    (("recall", "x", "-k", "99999999999999999999"), "must be from 1"),
    (("run", "--time-box", "-1"), "positive"),
    (("note", "--session", "s", "--kind", "opinion", "text here"), "unknown kind"),
    (("note", "--session", "s", "--ttl", "999999999d", "text here"), "at most 10 years"),
    (("recall", "   "), "empty query"),
])
def test_bad_options(cli, argv, message, capsys):
    try:
        code, _, err = cli(*argv)
    except SystemExit as exc:  # argparse rejects it before our code runs
        code, err = exc.code, capsys.readouterr().err
    assert code == 2 and message in err


def test_import_flag_must_be_boolean(cli, tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text('{"content": "a note", "flag": "false"}\n', encoding="utf-8")
    code, _, err = cli("import", str(f), "--session", "s")
    assert code == 2 and "flag must be true or false" in err


def test_megabyte_note_through_the_pipeline(store):
    store.sessions.add_note("big", "x " * 500_000)
    store.sessions.end("big", "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge(default=DROP)]))
    [e] = [e for e in plan.events if e["event"] == "note.judged_drop"]
    assert e["truncated_from"] == 1_000_000


def test_ten_thousand_notes_in_one_session(store):
    for i in range(10_000):
        store.sessions.add_note("many", f"note {i}: the worker {i % 7} retried job {i}")
    store.sessions.add_note("many", "Jobs are retried three times with exponential backoff", flag=True)
    store.sessions.end("many", "success")
    judge = ScriptedJudge(default=DROP)
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([judge]), time_box=None)
    assert plan.note_count == 10_001 and judge.calls == 400  # one call per 25 notes: 4 calls per 100 notes
    assert list(plan.note_status.values()).count("drop") == 10_000
    assert store.sessions.count("many") == 0 and store.longterm().collection.count() == 1


TEXTS = ["Deploys use 🚀 emoji tags in the changelog", "配置文件在 config/settings.toml 中，启动时读取一次",
         "ملف الإعدادات موجود في config/settings.toml ويُقرأ عند البدء",
         "Cafe\u0301 names use combining accents: e\u0301 is not \u00e9 here"]


def test_unicode_stored_and_recalled_byte_exact(minilm_store):
    for t in TEXTS:
        minilm_store.sessions.add_note("u", t, flag=True)
    minilm_store.sessions.end("u", "success")
    run_queue(minilm_store, judges=["noop"])
    docs = minilm_store.longterm().collection.get()["documents"]
    assert sorted(d.encode() for d in docs) == sorted(t.encode() for t in TEXTS)
    for t in TEXTS:
        hit = minilm_store.longterm().search(t, k=1)[0]
        assert hit["document"].encode() == t.encode()


def test_corrupt_graph_and_events_lines_doctor(store, capsys):
    """A run appends to the graph and the event log without reading them (issue 18: at 100,000
    memories reading the graph took seconds a run), so a corrupt line there no longer stops runs:
    the run writes whole, its lines after the bad one; doctor finds the bad lines and moves them
    aside, and the graph then holds every memory."""
    store.sessions.add_note("s", "Feature flags live in config/flags.toml", flag=True)
    store.sessions.end("s", "success")
    run_queue(store, judges=["noop"])
    nodes = store.sub("graph", "nodes.jsonl")
    nodes.write_text(nodes.read_text() + "{broken\n")
    with open(store.events_path, "a") as f:
        f.write("not json at all\n")
    with pytest.raises(StoreCorrupt, match="nodes.jsonl:.*doctor --repair"):
        graph.load(store.sub("graph"))
    store.sessions.add_note("t", "Releases are cut from release branches only", flag=True)
    store.sessions.end("t", "success")
    code = main(["run", "--store", str(store.path), "--embedding", "hash"])
    assert code == 0, capsys.readouterr().err
    assert store.longterm().collection.count() == 2 and store.sessions.session_end("t")["status"] == "done"
    assert not list(store.sub("journal").glob("*.json"))
    findings = check(store)
    assert {f.where for f in findings} >= {"graph/nodes.jsonl", "events/memory-events.jsonl"}
    check(store, repair=True)
    assert check(store) == []
    assert store.sub("graph", "nodes.jsonl.corrupt").read_text() == "{broken\n"
    g = graph.load(store.sub("graph"))
    assert sum(1 for _, a in g.nodes(data=True) if a.get("kind") == "memory") == 2
    assert run_queue(store, judges=["noop"]) == []  # nothing lost, nothing done twice


@pytest.mark.parametrize("err_no", [errno.EROFS, errno.ENOSPC])
def test_read_only_or_full_store_fails_before_writing(store, monkeypatch, err_no):
    """Fault-injected: the first write of apply fails (root ignores file modes, so a read-only
    folder cannot be made here; a small tmpfs would need mount rights)."""
    import builtins

    from consolidate.pipeline.stages import apply as apply_mod

    store.sessions.add_note("s", "Feature flags live in config/flags.toml", flag=True)
    store.sessions.end("s", "success")
    real_open = builtins.open

    def failing_open(path, mode="r", *a, **k):
        if ("w" in mode or "a" in mode) and str(store.path) in str(path) and "sessions" not in str(path):
            raise OSError(err_no, "injected")
        return real_open(path, mode, *a, **k)

    monkeypatch.setattr(builtins, "open", failing_open)
    from consolidate.core.errors import StoreError

    with pytest.raises(StoreError, match="cannot be written"):
        run_queue(store, judges=["noop"])
    monkeypatch.setattr(builtins, "open", real_open)
    assert not store.sub("journal").exists() or not list(store.sub("journal").glob("*"))
    assert store.sessions.count("s") == 1 and store.sessions.pending()  # nothing lost: runs again later
    run_queue(store, judges=["noop"])
    assert store.longterm().collection.count() == 1
    assert apply_mod.PREFLIGHT_BYTES > 0
