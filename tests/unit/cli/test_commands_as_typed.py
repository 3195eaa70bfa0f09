"""Every CLI command as a user types it, and every bad input: one-line error, exit code, nothing lost.

Filed before as tests/test_cli.py.
"""

import json
import os
import subprocess
import sys

import pytest

from consolidate.cli.main import main


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """Run the CLI in-process against a store in tmp_path; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / ".memofs"))
    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "hash")
    monkeypatch.setenv("CONSOLIDATE_JUDGES", "rules")

    def run(*argv):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # a usage error (argparse, one line): the console script's exit code
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_note_end_run_recall_status(cli):
    assert cli("note", "--session", "s1", "--flag", "--kind", "preference",
               "The user prefers pnpm over npm in this repo")[0] == 0
    assert cli("note", "--session", "s1", "--ttl", "20m", "dev server on port 5173")[0] == 0
    code, out, _ = cli("end", "--session", "s1", "--outcome", "success")
    assert code == 0 and "queued" in out
    code, out, _ = cli("run", "--dry-run")
    assert code == 0 and "dry run: nothing written" in out
    code, out, _ = cli("run", "--session", "s1")
    assert code == 0 and "1 durable" in out
    code, out, _ = cli("recall", "package manager pnpm")
    assert code == 0 and out.startswith("The user prefers pnpm over npm in this repo [high, user-stated, ")
    code, out, _ = cli("recall", "pnpm", "--json")
    assert json.loads(out)[0]["type"] == "preference"
    code, out, _ = cli("status", "--json")
    st = json.loads(out)
    assert st["memories"] == {"active/durable": 1} and st["queued"] == [] and st["last_run"]["session_id"] == "s1"
    code, out, _ = cli("status")
    assert "active/durable 1" in out
    [last] = [line for line in out.splitlines() if line.startswith("last run:")]
    # in words, not the queue row's JSON (a fresh tester: "last run: ... (done): {"notes": 2, ...}")
    assert last.endswith("(done): 2 notes: 1 durable, 0 quarantined, 0 transient, 0 re-confirmed;"
                         " judges: rules") and "{" not in last, last


def test_import_command(cli, tmp_path):
    f = tmp_path / "n.jsonl"
    f.write_text("\n".join(json.dumps({"content": f"note {i} here", "section": "Notes"}) for i in range(3)), encoding="utf-8")
    code, out, _ = cli("import", str(f), "--session", "imp")
    assert code == 0 and "imported 3 notes into session imp" in out


@pytest.mark.parametrize("argv,code,message", [
    (("note", "--session", "s1", "   "), 2, "empty note"),
    (("note", "--session", "s1", "--ttl", "soon", "x y z"), 2, "bad TTL"),
    (("run", "--session", "ghost"), 3, "unknown session 'ghost'"),
    (("run", "--judge", "nosuchjudge"), 2, "unknown judge 'nosuchjudge'"),  # checked before anything runs
])
def test_bad_input_one_line(cli, argv, code, message):
    got, out, err = cli(*argv)
    assert got == code
    if message:
        assert err.startswith("error: ") and message in err and err.count("\n") == 1
        assert "Traceback" not in err


def test_unknown_judge_is_a_clear_error(cli):
    cli("note", "--session", "s1", "a maybe note with words")
    cli("end", "--session", "s1", "--outcome", "success")
    code, _, err = cli("run", "--judge", "nosuchjudge")
    assert code == 2 and "unknown judge 'nosuchjudge'" in err
    assert cli("status", "--json")[1] and json.loads(cli("status", "--json")[1])["queued"] == ["s1"]


def test_import_invalid_utf8(cli, tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_bytes(b'{"content": "fine"}\n{"content": "caf\xe9"}\n')
    code, _, err = cli("import", str(f), "--session", "s1")
    assert code == 2 and "bad.jsonl:2: invalid UTF-8" in err and "nothing was imported" in err
    code, _, err = cli("run", "--session", "s1")
    assert code == 3  # nothing half-written: the session does not exist


def test_import_line_without_content(cli, tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"content": "fine"}\n{"text": "wrong field"}\n', encoding="utf-8")
    code, _, err = cli("import", str(f), "--session", "s1")
    assert code == 2 and ":2: no `content`" in err


def test_store_path_is_a_file(cli, tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    code, _, err = cli("note", "--store", str(f), "--session", "s1", "hello there")
    assert code == 4 and "is a file" in err


def test_corrupt_manifest(cli, tmp_path):
    cli("note", "--session", "s1", "--flag", "Builds need Node 20 on CI runners")
    cli("end", "--session", "s1", "--outcome", "success")
    assert cli("run")[0] == 0
    (tmp_path / ".memofs" / "manifest.json").write_text("{not json")
    code, _, err = cli("recall", "node")
    assert code == 4 and "manifest.json is corrupt" in err


def test_embedding_mismatch_refused(cli, monkeypatch):
    cli("note", "--session", "s1", "--flag", "Builds need Node 20 on CI runners")
    cli("end", "--session", "s1", "--outcome", "success")
    assert cli("run")[0] == 0
    code, _, err = cli("recall", "node", "--embedding", "minilm")
    assert code == 4 and "was built with embedding hash-256" in err


@pytest.mark.spawns
def test_console_script_and_module_entry(tmp_path):
    env = {**os.environ, "CONSOLIDATE_STORE": str(tmp_path / "st")}
    out = subprocess.run([sys.executable, "-m", "consolidate", "end", "--session", "x", "--outcome", "success"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 3 and out.stderr.startswith("error: unknown session 'x'")  # README: 3
    assert not (tmp_path / "st").exists()  # nothing created, nothing queued
    subprocess.run([sys.executable, "-m", "consolidate", "note", "--session", "x", "a first note here"], env=env,
                   check=True, capture_output=True)
    out = subprocess.run([sys.executable, "-m", "consolidate", "end", "--session", "x", "--outcome", "success"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "queued" in out.stdout
    out = subprocess.run([sys.executable, "-m", "consolidate", "end", "--session", "x", "--outcome", "meh"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 2 and "invalid choice" in out.stderr
