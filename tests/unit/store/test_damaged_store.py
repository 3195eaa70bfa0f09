"""A damaged store is noticed and repaired (new-user findings of issue 15): a recall index that was
deleted, emptied or corrupted, and a session tier that is not a SQLite database.

- every command that reads the index says it is missing in one line (exit 4), never "no memories";
- ``doctor`` reports each damaged file in one line with what to do (exit 1, never 4), and
  ``doctor --repair`` rebuilds the index from the graph and the event log (consolidate/store/index/reindex.py):
  the same memories, documents and metadata, and recall answers as before;
- a run on a store whose index is missing refuses and leaves its session queued (nothing lost).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from consolidate import Store
from consolidate.cli.main import main
from consolidate.pipeline.run import run_queue
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import keep
from many_processes import cli_env, fill_sessions, note_texts
from preloaded import run as run_preloaded


def _cli(store_path, *args, **env):
    """One CLI command in a new process forked from one with chromadb imported (tests/support/preloaded.py)."""
    return run_preloaded(list(args), env=cli_env(store_path, **env), timeout=600)


def _cli_fresh(store_path, *args, **env):
    """One CLI command in a new interpreter (``python -m consolidate``): for an environment the heavy
    packages read when imported (HOME: where a model is looked for and cached)."""
    return subprocess.run([sys.executable, "-m", "consolidate", *args], env=cli_env(store_path, **env),
                          capture_output=True, text=True, timeout=600)


def _records(store_path, embedding=None):
    """``{id: (document, metadata without the provenance date)}`` of every record of the index."""
    from consolidate.store.index.longterm import close_all

    close_all()
    s = Store(store_path, embedding=embedding, create=False)
    try:
        out = {}
        for r in s.longterm().all():
            meta = dict(r["metadata"])
            prov = json.loads(meta.pop("provenance", "{}"))
            prov.pop("date", None)  # the run's clock vs its event's stamp: the same second or the next
            out[r["id"]] = (r["document"], meta, prov)
        return out
    finally:
        s.close()
        close_all()


def _recalled(folder, queries):
    """What recall answers for each query (the function the CLI, MCP and Python share): ids,
    statements and similarities to 4 places."""
    import consolidate
    from consolidate.store.index.longterm import close_all

    close_all()
    s = Store(folder, create=False)
    try:
        return [[(m["id"], m["document"], round(m["similarity"], 4)) for m in consolidate.recall(s, q).memories]
                for q in queries]
    finally:
        s.close()
        close_all()


def _one_line(err: str) -> None:
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err


def _damage(folder, how):
    db = folder / "chroma" / "chroma.sqlite3"
    if how == "folder deleted":
        shutil.rmtree(folder / "chroma")
    elif how == "database deleted":
        db.unlink()
    elif how == "truncated to 0":
        db.write_bytes(b"")
    elif how == "truncated":
        with open(db, "r+b") as f:
            f.truncate(db.stat().st_size // 3)
    elif how == "garbage":
        db.write_bytes(bytes(range(256)) * 64)
    elif how == "zeros":
        db.write_bytes(b"\0" * db.stat().st_size)


@pytest.fixture(scope="module")
def minilm_store_150(tmp_path_factory):
    """A store of 150 memories in 5 sessions with the MiniLM embedding, run by the CLI (a preloaded
    process: the run's start-up is not what these tests pin). Never written by a test: each copies it."""
    folder = tmp_path_factory.mktemp("damaged") / ".memofs"
    fill_sessions(folder, [f"proj{i}" for i in range(5)], 30)
    out = _cli(folder, "run")
    assert out.returncode == 0, out.stderr
    return folder


#: Three notes' texts recalled before the damage and after the repair.
QUERIES = [note_texts(f"proj{i}", 30)[j] for i, j in ((0, 3), (2, 17), (4, 29))]


@pytest.fixture(scope="module")
def minilm_before(minilm_store_150, tmp_path_factory):
    """The records and recall answers of the 150-memory store, read once (from a copy: the
    fixture's folder is left as the run wrote it); every test's copy holds the same files."""
    folder = tmp_path_factory.mktemp("damaged-before") / ".memofs"
    shutil.copytree(minilm_store_150, folder)
    return _records(folder), _recalled(folder, QUERIES)


DAMAGE = ["folder deleted", "database deleted", "truncated to 0", "truncated", "garbage", "zeros"]


@pytest.mark.spawns
@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_index_is_reported_then_rebuilt_from_the_store(minilm_store_150, minilm_before, tmp_path, how):
    """The reported input (`rm -rf .memofs/chroma`: recall empty, doctor healthy) and the other ways
    the index file is lost or damaged; 150 memories, MiniLM, the real CLI."""
    folder = tmp_path / ".memofs"
    shutil.copytree(minilm_store_150, folder)
    before, answers = minilm_before  # read from an identical copy of the same store
    assert len(before) == 150
    queries = QUERIES
    _damage(folder, how)

    for args in (["recall", queries[0]], ["status"], ["export", "--file", str(tmp_path / "AGENTS.md")]):
        out = _cli(folder, *args)
        assert out.returncode == 4, (args, out.stdout, out.stderr)
        assert "doctor --repair" in out.stdout + out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
    assert not (tmp_path / "AGENTS.md").exists()

    doctor = _cli(folder, "doctor")
    assert doctor.returncode == 1 and doctor.stderr == "", doctor.stderr
    [line] = [x for x in doctor.stdout.splitlines() if x.startswith("chroma/")]
    assert "150 memories" in line and "[repairable with --repair]" in line
    assert "healthy" not in doctor.stdout

    repair = _cli(folder, "doctor", "--repair")
    assert repair.returncode == 0 and "rebuilt 150 memories [repaired]" in repair.stdout, repair.stdout + repair.stderr
    assert _cli(folder, "doctor").stdout.strip() == "healthy"
    assert _records(folder) == before
    assert _recalled(folder, queries) == answers
    if how in ("truncated", "garbage", "zeros"):  # the damaged index is kept aside, not deleted
        assert (folder / "chroma.corrupt" / "chroma.sqlite3").exists()


@pytest.mark.spawns
def test_a_run_on_a_store_whose_index_is_missing_keeps_its_session_queued(minilm_store_150, tmp_path):
    """Without the check the run wrote into a new empty index (the old memories gone from recall and
    every new note a 'new' memory): it refuses, the session waits, and runs after the repair."""
    folder = tmp_path / ".memofs"
    shutil.copytree(minilm_store_150, folder)
    shutil.rmtree(folder / "chroma")
    fill_sessions(folder, ["later"], 3)
    out = _cli(folder, "run")
    assert out.returncode == 4 and "doctor --repair" in out.stderr, out.stdout + out.stderr
    assert not (folder / "chroma").exists()
    status = _cli(folder, "status")
    assert "queued session ends: 1 (later)" in status.stdout and "memories: unavailable" in status.stdout
    assert _cli(folder, "doctor", "--repair").returncode == 0
    assert _cli(folder, "run").returncode == 0
    assert len(_records(folder)) == 153


def _scripted_run(store, sid, notes, verdicts):
    for text, flag in notes:
        store.sessions.add_note(sid, text, flag=flag)
    store.sessions.end(sid, "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge(verdicts)]))
    return plan


def test_the_rebuild_replays_the_whole_history(store, capsys):
    """Re-confirmations, a supersession, fields, a forget, an undo and a quarantined entry: the
    rebuilt index holds exactly what the index held (hash embedding, the library)."""
    long = "The staging deploy needs the VPN up first because " + "the bastion only accepts VPN addresses " * 9
    _scripted_run(store, "a", [("we use postgres 15 for the main database", False), (long, True),
                               ("pytest needs TZ=UTC or the date fixtures fail", False),
                               ("maybe the redis cache drops keys under load", False)],
                  {"postgres": keep("The main database is Postgres 15", "decision", reason="managed backups"),
                   "pytest": keep("Tests must run with TZ=UTC or the date fixtures fail", "constraint"),
                   "redis": keep("The Redis cache drops keys under heavy load", "fact", evidence="inferred",
                                 confidence="low")})
    _scripted_run(store, "b", [("the main database is postgres 15", False)],
                  {"postgres": keep("The main database is Postgres 15", "decision", reason="managed backups")})
    plan = _scripted_run(store, "c", [("we switched the main database to postgres 16", False)],
                         {"postgres": keep("Switched the main database from Postgres 15 to Postgres 16", "decision",
                                           reason="the upgrade window", evidence="user-stated")})
    ids = {r["document"]: r["id"] for r in store.longterm().all()}
    assert main(["forget", "--store", str(store.path), "--embedding", "hash", ids["Tests must run with TZ=UTC or the"
                                                                                 " date fixtures fail"]]) == 0
    undone = _scripted_run(store, "d", [("the linter is ruff", True)], {})
    assert main(["undo", "--store", str(store.path), "--embedding", "hash", undone.run_id]) == 0
    capsys.readouterr()
    before = _records(store.path, "hash")
    statuses = sorted(m["status"] for _, m, _ in before.values())
    assert "quarantined" in statuses and len(before) >= 3, (statuses, [d for d, _, _ in before.values()])
    assert any(d.startswith(long[:200]) and len(d) > 300 for d, _, _ in before.values())
    store.close()

    shutil.rmtree(store.path / "chroma")
    assert main(["doctor", "--store", str(store.path), "--embedding", "hash"]) == 1
    assert main(["doctor", "--repair", "--store", str(store.path), "--embedding", "hash"]) == 0
    assert _records(store.path, "hash") == before
    assert main(["doctor", "--store", str(store.path), "--embedding", "hash"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "healthy"
    del plan


def test_a_partly_lost_index_is_completed(store, capsys):
    """Some records gone (not all): doctor counts them and the repair puts back only those."""
    _scripted_run(store, "a", [(f"Service {i} listens on port {9000 + i} behind the gateway", True) for i in range(6)], {})
    before = _records(store.path, "hash")
    lt = store.longterm()
    gone = sorted(before)[:2]
    with store.lock():
        lt.delete(gone)
    store.close()
    assert main(["doctor", "--store", str(store.path), "--embedding", "hash"]) == 1
    assert "the recall index lacks 2 of them [repairable with --repair]" in capsys.readouterr().out
    assert main(["doctor", "--repair", "--store", str(store.path), "--embedding", "hash"]) == 0
    assert "rebuilt 2 memories [repaired]" in capsys.readouterr().out
    assert _records(store.path, "hash") == before


@pytest.mark.parametrize("how", ["garbage", "truncated", "zeros"])
def test_a_corrupt_session_tier_is_reported_and_moved_aside(store, tmp_path, how, capsys):
    """`doctor` exited 4 on a corrupt sessions.sqlite3: it reports it in one line (exit 1), the other
    commands say it in one line, `--repair` keeps a copy and the store works again; memories stay."""
    _scripted_run(store, "a", [("Chose SQLite over Postgres because it needs no server", True)], {})
    for i in range(40):
        store.sessions.add_note("open", f"note {i} of a session still open, long enough to fill pages " * 4)
    store.close()
    db = store.path / "sessions.sqlite3"
    for extra in ("-wal", "-shm"):
        (store.path / f"sessions.sqlite3{extra}").unlink(missing_ok=True)
    if how == "garbage":
        db.write_bytes(b"this is not a database at all " * 300)
    elif how == "truncated":
        with open(db, "r+b") as f:
            f.truncate(db.stat().st_size // 2)
    else:
        db.write_bytes(b"\0" * db.stat().st_size)
    damaged = db.read_bytes()
    opts = ["--store", str(store.path), "--embedding", "hash"]
    capsys.readouterr()

    assert main(["doctor", *opts]) == 1
    out = capsys.readouterr()
    [line] = [x for x in out.out.splitlines() if x.startswith("sessions.sqlite3")]
    assert "--repair moves it to sessions.sqlite3.corrupt" in line and out.err == ""
    for args in (["note", "--session", "x", "a new note"], ["status"], ["end", "--session", "x", "--outcome", "success"]):
        assert main([*args, *opts]) == 4
        _one_line(capsys.readouterr().err)
    assert main(["recall", "Chose SQLite over Postgres", *opts]) == 0  # the memories do not need the session tier
    assert "SQLite" in capsys.readouterr().out

    assert main(["doctor", "--repair", *opts]) == 0
    assert "[repaired]" in capsys.readouterr().out
    assert (store.path / "sessions.sqlite3.corrupt").read_bytes() == damaged
    assert main(["note", "--session", "x", "a new note after the repair", *opts]) == 0
    assert main(["doctor", *opts]) == 0


def test_doctor_and_the_main_help_document_doctors_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0 healthy" in text and "1 findings left" in text
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "1 batch: a session's run failed with an error; doctor: findings left to repair" in text


def _offline_env(tmp_path):
    """No network for a model download: every proxy points at a closed port, and an empty home (no
    cached model)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    dead = "http://127.0.0.1:9"
    return {"HOME": str(home), "HTTPS_PROXY": dead, "HTTP_PROXY": dead, "https_proxy": dead, "http_proxy": dead,
            "CONSOLIDATE_JUDGES": "noop"}


@pytest.mark.spawns
@pytest.mark.parametrize("embedding", ["chroma:default", "chroma:onnx_mini_lm_l6_v2", "hash", "hash-384"])
@pytest.mark.parametrize("args", [["run", "--dry-run"], ["run"], ["recall", "which database"], ["status"]])
def test_an_embedding_mismatch_is_refused_before_any_model_is_built(minilm_store_150, tmp_path, embedding, args):
    """`--embedding chroma:default run --dry-run` on a MiniLM store, offline, gave an httpx traceback:
    the model was downloaded before the manifest's check. One line, exit 4, nothing fetched."""
    env = _offline_env(tmp_path)
    out = _cli_fresh(minilm_store_150, "--embedding", embedding, *args, **env)
    assert out.returncode == 4, (out.stdout, out.stderr)
    assert out.stderr.startswith("error: store ") and "was built with embedding minilm" in out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert not (tmp_path / "home" / ".cache").exists()  # no model was looked for


@pytest.mark.spawns
def test_a_model_that_cannot_be_fetched_is_one_line_and_the_session_waits(tmp_path):
    """A new store with a Chroma embedding whose model must be downloaded, offline: one line naming
    the cause, and the queued session stays queued."""
    env = _offline_env(tmp_path)
    folder = tmp_path / ".memofs"
    assert _cli_fresh(folder, "--embedding", "chroma:default", "note", "--session", "A", "--flag", "--kind", "decision",
                "Chose SQLite over Postgres because it needs no server", **env).returncode == 0
    assert _cli_fresh(folder, "end", "--session", "A", "--outcome", "success", **env).returncode == 0
    for args in (["run"], ["recall", "which database"]):
        out = _cli_fresh(folder, "--embedding", "chroma:default", *args, **env)
        assert out.returncode in (0, 4) and "Traceback" not in out.stderr, (args, out.stderr)
        if args == ["run"]:
            assert out.returncode == 4
            assert out.stderr.splitlines()[-1].startswith("error: Chroma embedding function 'default' cannot embed now")
    assert "queued session ends: 1 (A)" in _cli_fresh(folder, "status", **env).stdout


def test_the_empty_index_refusal_asks_again_and_skips_runs_not_yet_indexed(store):
    """The refusal of an emptied index (consolidate/store/index/reindex.py ``missing_index_error``)
    is not raised for a run another process is applying (its memories in the graph, the journal not
    past its index step), nor when the index is seen filled on asking again (that run finished
    between the caller's count and the journal read); it is raised for a lost index otherwise."""
    from consolidate.store.index.longterm import close_all
    from consolidate.store.index.reindex import missing_index_error

    plan = _scripted_run(store, "a", [(f"Service {i} listens on port {9000 + i} behind the gateway", True)
                                      for i in range(3)], {})
    store.close()
    close_all()
    shutil.rmtree(store.path / "chroma")
    assert missing_index_error(store, 0) is not None
    assert missing_index_error(store, 0, recheck=lambda: 3) is None
    assert missing_index_error(store, 0, recheck=lambda: 0) is not None
    journal_dir = store.path / "journal"
    journal_dir.mkdir(exist_ok=True)
    (journal_dir / f"{plan.run_id}.json").write_text("{}", encoding="utf-8")  # only its name is read
    (journal_dir / f"{plan.run_id}.steps").write_text("snapshot\ngraph\n", encoding="utf-8")
    assert missing_index_error(store, 0) is None
    (journal_dir / f"{plan.run_id}.steps").write_text("snapshot\ngraph\nchroma\n", encoding="utf-8")
    assert missing_index_error(store, 0) is not None


def test_a_run_that_another_process_starts_while_the_refusal_reads_the_store_is_not_a_lost_index(store, monkeypatch):
    """``missing_index_error`` reads the graph, then the journal: a run of another process that writes
    its journal (then its graph lines) while the check reads is skipped, not refused as a lost index.
    Read the other way round (journal first), eight runs started at once on a new store had one
    refused with "the recall index ... is empty while the store holds 5 memories" (CI, issue 30)."""
    from consolidate.store import graph as graph_files
    from consolidate.store.index.longterm import close_all
    from consolidate.store.index.reindex import missing_index_error

    plan = _scripted_run(store, "a", [(f"Worker {i} drains queue {i} every {5 + i} seconds", True) for i in range(3)], {})
    store.close()
    close_all()
    shutil.rmtree(store.path / "chroma")
    journal_dir = store.path / "journal"
    real_load = graph_files.load

    def load_as_another_run_starts(folder):
        # the other process's apply begins now: its journal, then its graph lines (already on disk here)
        journal_dir.mkdir(exist_ok=True)
        (journal_dir / f"{plan.run_id}.json").write_text("{}", encoding="utf-8")
        (journal_dir / f"{plan.run_id}.steps").write_text("snapshot\ngraph\n", encoding="utf-8")
        return real_load(folder)

    monkeypatch.setattr(graph_files, "load", load_as_another_run_starts)
    assert missing_index_error(store, 0, recheck=lambda: 0) is None
