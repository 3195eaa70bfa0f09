"""A store's project comes from the store itself (new-user finding of issue 15): `export` in a copied
store folder exported 0 memories, the project being the name of the folder holding the store. The
store records its project in manifest.json when the manifest is first written; a copied or moved
folder keeps it; an option or variable naming another project is said in one line; an older store
without the record gets it from `doctor --repair` (from its memories' scope)."""

from __future__ import annotations

import json
import shutil

import pytest

from many_processes import cli_env
from preloaded import run as run_preloaded

pytestmark = pytest.mark.spawns  # starts real processes (the quick loop leaves it out)


def _cli(store_path, *args, cwd=None, **env):
    """One CLI command in a new process forked from one with chromadb imported (tests/support/preloaded.py)."""
    environ = cli_env(store_path)
    environ.pop("CONSOLIDATE_PROJECT", None)
    environ.update(env)
    return run_preloaded(list(args), env=environ, timeout=600, cwd=cwd)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A store in ``orig/`` (project ``orig`` from its folder) with 40 flagged memories, built once."""
    tmp_path = tmp_path_factory.mktemp("identity")
    root = tmp_path / "orig"
    root.mkdir()
    store_path = root / ".memofs"
    lines = [json.dumps({"content": f"Service {i} listens on port {9000 + i} behind the gateway, never directly",
                         "flag": True, "kind": "constraint"}) for i in range(40)]
    (tmp_path / "notes.jsonl").write_text("\n".join(lines) + "\n")
    for args in (["import", str(tmp_path / "notes.jsonl"), "--session", "s1"],
                 ["end", "--session", "s1", "--outcome", "success"], ["run"]):
        out = _cli(store_path, *args, "--embedding", "hash", CONSOLIDATE_JUDGES="noop")
        assert out.returncode == 0, out.stderr
    assert json.loads((store_path / "manifest.json").read_text())["project"] == "orig"
    return store_path


@pytest.fixture
def original(built, tmp_path):
    """A copy of the built store in this test's ``orig/`` (the same folder name as where it was built)."""
    (tmp_path / "orig").mkdir()
    shutil.copytree(built, tmp_path / "orig" / ".memofs")
    return tmp_path / "orig" / ".memofs"


def _copy(original, tmp_path, name="copy"):
    target = tmp_path / name
    target.mkdir()
    shutil.copytree(original, target / ".memofs")
    return target / ".memofs"


def _exported(store_path, out_file, *extra):
    out = _cli(store_path, "export", "--file", str(out_file), "--embedding", "hash", *extra)
    assert out.returncode == 0, out.stderr
    return out


def test_export_in_a_copied_store_folder_exports_its_memories(original, tmp_path):
    copy = _copy(original, tmp_path)
    out = _exported(copy, tmp_path / "AGENTS.md")
    assert out.stdout.startswith("exported 40 memories"), out.stdout + out.stderr
    assert out.stderr == ""


def test_every_command_of_a_moved_store_uses_its_own_project(original, tmp_path):
    """The kind beyond export: status names the project and where it comes from, a run writes its new
    memories in the store's project, context.md is of that project."""
    moved = tmp_path / "elsewhere" / "deep"
    moved.mkdir(parents=True)
    shutil.move(str(original), str(moved / ".memofs"))
    store_path = moved / ".memofs"
    status = _cli(store_path, "status", "--embedding", "hash")
    assert "project: orig (recorded in the store)" in status.stdout, status.stdout
    for args in (["note", "--session", "s2", "--flag", "--kind", "decision",
                  "Chose SQLite over Postgres because it needs no server"],
                 ["end", "--session", "s2", "--outcome", "success"], ["run"]):
        assert _cli(store_path, *args, "--embedding", "hash", CONSOLIDATE_JUDGES="noop").returncode == 0
    recall = _cli(store_path, "recall", "Chose SQLite over Postgres", "--json", "--embedding", "hash")
    [hit] = [m for m in json.loads(recall.stdout) if "SQLite" in m["statement"]]
    assert hit["scope"] == "orig"
    assert (store_path / "memory" / "context.md").read_text().startswith("# Project memory (orig)")


def test_another_project_given_is_said_in_one_line(original, tmp_path):
    out = _exported(original, tmp_path / "AGENTS.md", "--project", "other")
    lines = out.stderr.splitlines()
    assert "project 'other' (option) is not the store's own project 'orig'" in lines[0]
    assert "no memories of project 'other' (--project); the store holds 40 of 'orig': use --project orig" in lines[1]
    status = _cli(original, "status", "--embedding", "hash", CONSOLIDATE_PROJECT="other")
    assert "project: other (CONSOLIDATE_PROJECT)" in status.stdout
    assert "is not the store's own project 'orig'" in status.stdout


def test_an_older_store_gets_its_project_recorded_by_doctor(original, tmp_path):
    manifest = json.loads((original / "manifest.json").read_text())
    del manifest["project"]  # as written before this change
    (original / "manifest.json").write_text(json.dumps(manifest))
    copy = _copy(original, tmp_path)
    out = _exported(copy, tmp_path / "AGENTS.md")
    assert out.stdout.startswith("exported 0 memories")
    assert "the store holds 40 of 'orig': use --project orig (or `consolidate doctor --repair`" in out.stderr

    doctor = _cli(copy, "doctor", "--embedding", "hash")
    assert doctor.returncode == 1 and "manifest.json: no project recorded" in doctor.stdout
    assert "its 40 memories belong to 'orig' [repairable with --repair]" in doctor.stdout
    assert _cli(copy, "doctor", "--repair", "--embedding", "hash").returncode == 0
    assert json.loads((copy / "manifest.json").read_text())["project"] == "orig"
    assert _exported(copy, tmp_path / "AGENTS2.md").stdout.startswith("exported 40 memories")
    assert _cli(copy, "doctor", "--embedding", "hash").stdout.strip() == "healthy"
