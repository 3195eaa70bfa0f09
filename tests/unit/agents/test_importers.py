"""The importers as a new user meets them (new-user findings of issue 15).

``import --agents-md``: an entry holding a secret was dropped without the promised ``secret:`` line;
a type written ``**bogus**`` was accepted; a cut marker was kept in the memory's text; dates were
shifted (the exported month was replaced by the import's). Now the block is read strictly, all or
nothing as a JSONL import (one line naming the file and line), a secret is said, and the date the
entry carries is kept. ``import-transcripts``: a transcript copied to another path was imported
twice; it is one transcript by its content and its session. ``export --file`` created missing
folders; it refuses them.

Filed before as tests/test_imports_kind.py (issue 15).
"""

from __future__ import annotations

import json
import shutil

import pytest

from consolidate import Store

from many_processes import cli_env
from preloaded import run as run_preloaded

pytestmark = pytest.mark.spawns  # starts real processes (the quick loop leaves it out)

ENTRY = "- **{type}**: {statement} [high, user-stated, {month}]"


def _cli(store_path, *args, cwd=None):
    """One CLI command in a new process forked from one with chromadb imported (tests/support/preloaded.py):
    a separate process reading its store from disk, as ``python -m consolidate`` (its start-up is not the subject)."""
    env = cli_env(store_path, CONSOLIDATE_EMBEDDING="hash", CONSOLIDATE_JUDGES="noop")
    return run_preloaded(list(args), env=env, timeout=600, cwd=cwd)


def _block(*lines: str) -> str:
    return ("# Agents\n\nSome text of the team.\n\n<!-- consolidate:begin (written by `consolidate export`) -->\n"
            "## Project memory (consolidate)\n\n" + "\n".join(lines) + "\n<!-- consolidate:end -->\n")


GOOD = ENTRY.format(type="decision", statement="Chose SQLite over Postgres because it needs no server",
                    month="2026-07")


def _memories(store_path):
    from consolidate.store.index.longterm import close_all

    close_all()
    s = Store(store_path, embedding="hash", create=False)
    try:
        return {r["document"]: r["metadata"] for r in s.longterm().all()} if s.exists and s.has_longterm else {}
    finally:
        s.close()
        close_all()


BAD_LINES = {
    "unknown type": ENTRY.format(type="bogus", statement="Something typed with an unknown type here", month="2026-08"),
    "capital type": ENTRY.format(type="Decision", statement="Chose uv over pip for the lock file", month="2026-08"),
    "no type": "- Deploys go out on Tuesdays and Thursdays only",
    "cut marker": GOOD.replace("Chose SQLite", "Chose DuckDB") + ' <!-- consolidate {"id": "mem-4"',
    "marker not JSON": GOOD.replace("Chose SQLite", "Chose Redis") + ' <!-- consolidate {"id": "mem-3", broken} -->',
    "marker not an object": GOOD.replace("Chose SQLite", "Chose Kafka") + " <!-- consolidate [1, 2] -->",
    "month 13": ENTRY.format(type="fact", statement="The API listens on port 8443 behind nginx", month="2026-13"),
    "bad marker date": GOOD.replace("Chose SQLite", "Chose Caddy") + ' <!-- consolidate {"confirmed": "2026-02-30"} -->',
}


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_a_malformed_entry_is_refused_naming_its_line_and_nothing_is_imported(tmp_path, kind):
    agents = tmp_path / "AGENTS.md"
    agents.write_text(_block(GOOD, BAD_LINES[kind]))
    store_path = tmp_path / ".memofs"
    out = _cli(store_path, "import", "--agents-md", str(agents))
    assert out.returncode == 2, (kind, out.stdout, out.stderr)
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: AGENTS.md:9: ")
    assert "nothing was imported" in out.stderr and "Traceback" not in out.stderr
    assert _memories(store_path) == {}
    if store_path.exists():
        assert Store(store_path, embedding="hash", create=False).sessions.sessions() == {}


def test_an_entry_holding_a_secret_is_said_in_a_secret_line(tmp_path):
    secret = ENTRY.format(type="constraint", statement="The staging database password is hunter2-Xy9#kq7!Lm for the"
                                                       " deploy user", month="2026-08")
    agents = tmp_path / "AGENTS.md"
    agents.write_text(_block(GOOD, secret))
    store_path = tmp_path / ".memofs"
    out = _cli(store_path, "import", "--agents-md", str(agents))
    assert out.returncode == 0, out.stderr
    [line] = [x for x in out.stderr.splitlines() if x.startswith("secret: ")]
    assert "held secret material" in line and "hunter2" not in line and "hunter2" not in out.stdout
    assert "1 blocked (secret material)" in out.stdout
    assert not any("hunter2" in d or "password" in d for d in _memories(store_path))


@pytest.mark.parametrize("month", [f"2026-{m:02d}" for m in range(1, 13)] + ["2025-12", "2026-1"])
def test_the_month_an_entry_carries_is_kept(tmp_path, month):
    agents = tmp_path / "AGENTS.md"
    agents.write_text(_block(ENTRY.format(type="decision", statement="Chose SQLite over Postgres because it needs no"
                                                                     " server", month=month)))
    store_path = tmp_path / ".memofs"
    assert _cli(store_path, "import", "--agents-md", str(agents)).returncode == 0
    [meta] = _memories(store_path).values()
    year, mon = month.split("-")
    import datetime as dt

    want = min(f"{year}-{int(mon):02d}-01", dt.datetime.now(dt.timezone.utc).date().isoformat())  # never later
    assert meta["last_confirmed"] == want
    out = _cli(store_path, "recall", "Chose SQLite over Postgres")
    assert out.stdout.strip().endswith(f"[high, user-stated, {want[:7]}]"), out.stdout


def test_export_then_import_keeps_each_memorys_date(tmp_path):
    """The round trip between two stores: the exported marker carries the exact date."""
    a = tmp_path / "a" / ".memofs"
    lines = [json.dumps({"content": f"Service {i} listens on port {9000 + i} behind the gateway, never directly",
                         "flag": True, "kind": "constraint"}) for i in range(12)]
    (tmp_path / "n.jsonl").write_text("\n".join(lines) + "\n")
    for args in (["import", str(tmp_path / "n.jsonl"), "--session", "s"], ["end", "--session", "s", "--outcome",
                                                                             "success"], ["run"]):
        assert _cli(a, *args).returncode == 0
    s = Store(a, embedding="hash", create=False)
    lt = s.longterm()
    with s.lock():
        for i, r in enumerate(sorted(lt.all(), key=lambda r: r["document"])):
            lt.update_metadata(r["id"], {"last_confirmed": f"{2025 + i // 11}-{i % 11 + 1:02d}-{i + 14:02d}"})
    want = {r["document"]: r["metadata"]["last_confirmed"] for r in lt.all()}
    s.close()
    agents = tmp_path / "AGENTS.md"
    assert _cli(a, "export", "--file", str(agents)).returncode == 0
    b = tmp_path / "b" / ".memofs"
    assert _cli(b, "import", "--agents-md", str(agents)).returncode == 0
    assert {d: m["last_confirmed"] for d, m in _memories(b).items()} == want


def _transcript(path, session, extra=()):
    entries = [{"type": "user", "uuid": "u1", "sessionId": session, "message": {
                    "role": "user", "content": "We always deploy from the release branch, never from main: the"
                                               " smoke suite only runs there and main skips it"}},
               {"type": "assistant", "uuid": "a1", "sessionId": session, "message": {"content": [
                   {"type": "text", "text": "The staging database is reset every night at 02:00 UTC by the cron"
                                            " job in ops/cron.yaml, so load fixtures from the seed script."}]}},
               *extra]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def _notes_imported(store_path) -> int:
    s = Store(store_path, embedding="hash", create=False)
    try:
        return sum(s.sessions.sessions().values())
    finally:
        s.close()


@pytest.mark.parametrize("how", ["copied", "renamed", "copied into a folder", "copied and grown"])
def test_a_transcript_at_another_path_is_not_imported_twice(tmp_path, how):
    store_path = tmp_path / ".memofs"
    first = _transcript(tmp_path / "t" / "5b2c7f10-1111-4222-8333-444455556666.jsonl", "5b2c7f10-1111-4222-8333-444455556666")
    out = _cli(store_path, "import-transcripts", str(first), "--no-run")
    assert out.returncode == 0 and "1 imported (2 notes)" in out.stdout, out.stdout + out.stderr
    if how == "copied":
        other = tmp_path / "backup" / first.name
        other.parent.mkdir()
        shutil.copy(first, other)
    elif how == "renamed":
        other = first.with_name("session-copy.jsonl")
        first.rename(other)
    elif how == "copied into a folder":
        other = tmp_path / "archive"
        (other / "nested").mkdir(parents=True)
        shutil.copy(first, other / "nested" / "copy.jsonl")
    else:
        other = _transcript(tmp_path / "grown" / "copy.jsonl", "5b2c7f10-1111-4222-8333-444455556666", extra=[
            {"type": "user", "uuid": "u9", "sessionId": "5b2c7f10-1111-4222-8333-444455556666", "message": {
                "role": "user", "content": "Releases are tagged only after the smoke suite passes on staging"}}])
    out = _cli(store_path, "import-transcripts", str(other), "--no-run")
    assert out.returncode == 0, out.stderr
    assert _notes_imported(store_path) == (3 if how == "copied and grown" else 2), out.stdout


@pytest.fixture(scope="module")
def one_memory(tmp_path_factory):
    """A store of one memory written by the CLI (note, end, run), built once: each test copies it."""
    store_path = tmp_path_factory.mktemp("one-memory") / ".memofs"
    assert _cli(store_path, "note", "--session", "s", "--flag", "--kind", "decision",
                "Chose SQLite over Postgres because it needs no server").returncode == 0
    assert _cli(store_path, "end", "--session", "s", "--outcome", "success").returncode == 0
    assert _cli(store_path, "run").returncode == 0
    return store_path


@pytest.mark.parametrize("target", ["missing/dir/AGENTS.md", "missing/AGENTS.md"])
def test_export_to_a_missing_folder_is_refused(tmp_path, target, one_memory):
    store_path = tmp_path / ".memofs"
    shutil.copytree(one_memory, store_path)
    out = _cli(store_path, "export", "--file", str(tmp_path / target))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "no such folder" in out.stderr, out.stderr
    assert not (tmp_path / "missing").exists()
    assert _cli(store_path, "export", "--file", str(tmp_path / "AGENTS.md")).returncode == 0  # an existing folder
