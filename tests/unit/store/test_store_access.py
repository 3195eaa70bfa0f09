"""Read-only stores, commands that never create a store, and one validated type per option
(issue 11, inputs 5, 6 and 7)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from consolidate.cli.main import main

from many_processes import cli_env, fill_sessions, note_texts
from preloaded import run as run_preloaded
from t30_store import read_only_runner, stop


def _read_only_runner(store_path):
    """A function running the CLI with ``store_path`` read-only: a private read-only bind mount in a
    new mount namespace (root, as in CI containers), else the folder's write bits removed (a
    non-root user). None when neither is possible here. Each command a new process forked from one
    with chromadb imported (tests/support/preloaded.py; in the namespace: tests/support/t30_store.py)."""
    if os.geteuid() == 0:
        probe = subprocess.run(["unshare", "--mount", "sh", "-c", 'mount --bind -o ro "$0" "$0"', str(store_path)],
                               capture_output=True) if shutil.which("unshare") else None
        if probe is None or probe.returncode != 0:
            return None

        in_namespace = read_only_runner(store_path)

        def run(*args):
            return in_namespace(list(args), env=cli_env(store_path), timeout=600)
        return run

    def run(*args):
        modes = {p: p.stat().st_mode for p in [store_path, *store_path.rglob("*")]}
        for p in modes:
            p.chmod(modes[p] & ~0o222)
        try:
            return run_preloaded(list(args), env=cli_env(store_path), timeout=600)
        finally:
            for p, m in modes.items():
                p.chmod(m)
    return run


def _snapshot(folder):
    return {str(p.relative_to(folder)): (p.stat().st_size, p.read_bytes() if p.is_file() else b"")
            for p in sorted(folder.rglob("*"))}


@pytest.mark.spawns
def test_read_only_store_reads_and_refuses_writes_in_one_line(tmp_path):
    """Input 5: on a read-only mount the error read like corruption ("not a usable SQLite
    database") and even recall, status and doctor refused. A store of 150 memories (MiniLM)."""
    store_path = tmp_path / ".memofs"
    fill_sessions(store_path, ["seed"], 150)
    assert run_preloaded(["run"], env=cli_env(store_path), timeout=900).returncode == 0
    fill_sessions(store_path, ["waiting"], 10)  # a queued session a write command would consolidate
    ro = _read_only_runner(store_path)
    if ro is None:
        pytest.skip("no way to make a read-only folder here (root without mount rights)")
    try:
        _read_only_checks(store_path, ro)
    finally:
        stop(("ro", str(store_path)))


def _read_only_checks(store_path, ro):
    before = _snapshot(store_path)

    text = note_texts("seed", 7)[6]
    out = ro("recall", text)
    assert out.returncode == 0 and text in out.stdout, out.stderr
    out = ro("status")
    assert out.returncode == 0 and "memories: active/durable" in out.stdout and "queued session ends: 1" in out.stdout, out.stderr
    for args in (["doctor"], ["runs"], ["disputes"], ["run", "--dry-run"], ["backfill", "--dry-run"]):
        out = ro(*args)
        assert out.returncode == 0 and "Traceback" not in out.stderr, (args, out.stderr)
    for args in (["run"], ["batch"], ["worker"], ["note", "--session", "x", "A new note on a read-only store"],
                 ["end", "--session", "waiting", "--outcome", "success"], ["backfill"], ["doctor", "--repair"]):
        out = ro(*args)
        assert out.returncode == 4, (args, out.stdout, out.stderr)
        assert out.stderr.count("\n") == 1 and "is read-only" in out.stderr, (args, out.stderr)
        assert "SQLite" not in out.stderr and "corrupt" not in out.stderr
    assert _snapshot(store_path) == before


@pytest.mark.parametrize("argv", [["run", "--dry-run"], ["run"], ["batch"], ["disputes"], ["backfill", "--dry-run"],
                                  ["backfill"], ["worker"], ["recall", "anything"], ["status"], ["runs"], ["doctor"]])
def test_read_and_plan_commands_never_create_a_store(tmp_path, monkeypatch, capsys, argv):
    """Input 6: run --dry-run, batch, disputes and backfill --dry-run created .memofs/ in the folder
    they were started in."""
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith("CONSOLIDATE_")]:
        monkeypatch.delenv(name)
    assert main(argv) == 0
    assert list(tmp_path.iterdir()) == []
    assert capsys.readouterr().err == ""


BAD_SECONDS = ["-1", "0", "-0.5", "nan", "inf", "soon"]


@pytest.mark.parametrize("command", [["run"], ["batch"], ["worker"], ["eval", "--labels", "x.jsonl"]])
@pytest.mark.parametrize("value", BAD_SECONDS)
def test_every_time_box_option_is_one_validated_type(command, value, capsys):
    """Input 7: `worker --time-box -1` was accepted (every note then ended unjudged) while `run
    --time-box -1` was refused."""
    with pytest.raises(SystemExit) as exc:
        main([*command, "--time-box", value])
    assert exc.value.code == 2
    assert "--time-box" in capsys.readouterr().err


@pytest.mark.parametrize("value", BAD_SECONDS)
def test_time_box_from_the_environment_is_validated_too(store, monkeypatch, capsys, value):
    monkeypatch.setenv("CONSOLIDATE_TIME_BOX", value)
    store.sessions.add_note("s", "The deploy script needs bash 5", flag=True)
    store.sessions.end("s", "success")
    assert main(["worker", "--store", str(store.path), "--embedding", "hash"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: CONSOLIDATE_TIME_BOX") and err.count("\n") == 1
    assert store.sessions.pending()  # nothing consumed


@pytest.mark.parametrize("argv", [["batch", "--concurrency", "0"], ["batch", "--concurrency", "-2"],
                                  ["eval", "--labels", "x.jsonl", "--limit", "0"], ["runs", "--limit", "-1"]])
def test_counts_are_validated(argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
