"""The agent workspace (consolidate.pipeline.workspace) through the Python API and the CLI: confinement, size
bounds, extraction through the secret gate, and the three outcomes with resume."""

from __future__ import annotations

import json
import os

import pytest

from consolidate.pipeline import workspace
from consolidate.cli.main import main
from consolidate.core.errors import BadInput, PathRefused, UnknownSession
from consolidate.pipeline.run import run_queue

from conftest import keep
from consolidate.judges.scripted import ScriptedJudge

_FAKE_KEY = "sk-" + "proj-" + "Zq7uT2mB9xKc4LwR8nVd1YhE6fJp3sGa"


def events(store):
    if not store.events_path.exists():
        return []
    return [json.loads(x) for x in store.events_path.read_text(encoding="utf-8").splitlines()]


def test_start_writes_the_three_folders_and_a_read_only_context(store):
    ws, info = workspace.start(store, "s1", task="fix the OAuth redirect loop")
    assert info["session_id"] == "s1" and info["created"] and not info["resumed"] and info["state"] == "open"
    for folder in ("context", "working", "output"):
        assert (ws.root / folder).is_dir()
    assert set(info["context"]) == {"context/core.md", "context/memories.md", "context/session.json"}
    assert json.loads(ws.read("context/session.json")["content"])["task"] == "fix the OAuth redirect loop"
    with pytest.raises(PathRefused, match="context/ is a read-only snapshot"):
        ws.write("context/core.md", "overwritten")
    # private to the user, like the whole store: the folder 0700, the snapshot read-only 0400
    assert ws.root.stat().st_mode & 0o777 == 0o700
    assert {(ws.root / f).stat().st_mode & 0o777 for f in info["context"]} == {0o400}
    # a store without a long-term tier gets no Chroma folder from a start
    assert not store.sub("chroma").exists()


def test_start_without_an_id_makes_one(store):
    ws, info = workspace.start(store)
    assert info["session_id"].startswith("ws-") and ws.exists


@pytest.mark.parametrize("path, why", [
    ("../outside.md", "'..' leaves the workspace"),
    ("working/../../outside.md", "'..' leaves the workspace"),
    ("working/..\\..\\x.md", "'..' leaves the workspace"),
    ("/etc/passwd", "absolute paths are not allowed"),
    ("\\\\server\\share\\x", "absolute paths are not allowed"),
    ("C:\\Windows\\x.txt", "absolute paths are not allowed"),
    ("~/.ssh/id_rsa", "absolute paths are not allowed"),
    ("workspace.json", "writes go to working/ or output/"),
    ("", "the path is empty"),
])
def test_escapes_are_refused_with_one_line(store, path, why):
    ws, _ = workspace.start(store, "s1")
    before = ws.files()
    for op in (lambda: ws.write(path, "x"), lambda: ws.append(path, "x")):
        with pytest.raises(PathRefused) as err:
            op()
        assert why in str(err.value) and "\n" not in str(err.value)
    assert ws.files() == before


def test_a_symlink_leading_outside_is_refused_for_read_and_write(store, tmp_path):
    secret = tmp_path / "outside.txt"
    secret.write_text("do not read me")
    ws, _ = workspace.start(store, "s1")
    os.symlink(secret, ws.root / "working" / "link.txt")
    os.symlink(tmp_path, ws.root / "output" / "dir")
    for op in (lambda: ws.read("working/link.txt"), lambda: ws.write("working/link.txt", "x"),
               lambda: ws.append("output/dir/new.md", "x"), lambda: ws.read("output/dir/outside.txt")):
        with pytest.raises(PathRefused, match="outside the workspace"):
            op()
    assert secret.read_text() == "do not read me" and not (tmp_path / "new.md").exists()
    # a symlink inside the workspace from working/ into context/ cannot be used to write there
    os.symlink(ws.root / "context" / "core.md", ws.root / "working" / "core.md")
    with pytest.raises(PathRefused):
        ws.write("working/core.md", "x")


def test_size_bounds_per_file_and_per_workspace(store):
    ws, _ = workspace.start(store, "s1")
    with pytest.raises(BadInput, match="the limit is 1,000,000 per file"):
        ws.write("working/big.log", "x" * 50_000_000)  # a 50 MB write
    assert not (ws.root / "working" / "big.log").exists()
    ws.write("working/a.log", "x" * 900_000)
    with pytest.raises(BadInput, match="would be 1,000,001 bytes"):
        ws.append("working/a.log", "y" * 100_001)
    assert (ws.root / "working" / "a.log").stat().st_size == 900_000
    small = workspace.Workspace(store, "s1", max_workspace_bytes=1_000_000)
    with pytest.raises(BadInput, match="the workspace would hold 1,000,100 bytes"):
        small.write("output/more.md", "z" * 100_100)
    # multi-byte text counts in bytes, not characters
    with pytest.raises(BadInput, match="per file"):
        ws.write("working/wide.md", "é" * 500_001)


def test_read_write_append_and_listing(store):
    ws, _ = workspace.start(store, "s1")
    ws.write("working/notes/plan.md", "1. reproduce\n")
    ws.append("working/notes/plan.md", "2. fix\n")
    assert ws.read("working/notes/plan.md")["content"] == "1. reproduce\n2. fix\n"
    assert ws.read("./working/notes")["entries"] == [{"name": "plan.md", "type": "file", "bytes": 20}]
    with pytest.raises(BadInput, match="no file working/missing.md"):
        ws.read("working/missing.md")
    (ws.root / "working" / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(BadInput, match="not UTF-8 text"):
        ws.read("working/bin")
    with pytest.raises(UnknownSession, match="has no workspace"):
        workspace.open_workspace(store, "never-started")


def test_markdown_and_jsonl_items():
    md = ("# Summary\n\nFixed the loop.\n\n## Decisions\n\n- Chose PKCE over implicit flow because tokens\n"
          "  never reach the browser history\n- [x] Use pnpm, not npm\n\n## Follow-ups\n\n* check staging\n"
          "```sh\nnpm ci\n```\n")
    items = workspace.parse_markdown(md, "output/m.md")
    assert [(i.content, i.kind, i.line) for i in items] == [
        ("Chose PKCE over implicit flow because tokens\nnever reach the browser history", "decision", 7),
        ("Use pnpm, not npm", "decision", 9), ("check staging\n```sh\nnpm ci\n```", None, 13)]
    paras = workspace.parse_markdown("First fact here.\n\nSecond fact,\nover two lines.\n", "o.md")
    assert [p.content for p in paras] == ["First fact here.", "Second fact,\nover two lines."]
    lines = workspace.parse_jsonl(b'{"content": "Node 20 only", "flag": true, "kind": "constraint"}\n\n'
                                  b'{"content": "port 5173", "ttl": "20m"}\n', "output/m.jsonl")
    assert [(i.content, i.flag, i.kind, i.ttl, i.line) for i in lines] == [
        ("Node 20 only", True, "constraint", None, 1), ("port 5173", False, None, "20m", 3)]
    with pytest.raises(BadInput, match="output/x.jsonl:1: no `content`"):
        workspace.parse_jsonl(b'{"text": "x"}\n', "output/x.jsonl")


def test_extract_gates_secrets_at_once_and_replaces_an_earlier_extraction(store):
    ws, _ = workspace.start(store, "s1")
    store.sessions.add_note("s1", "a note written with the note tool")
    ws.write("output/memory.md", f"- Deploys go through the staging cluster first\n- OPENAI_API_KEY={_FAKE_KEY}\n")
    ws.write("output/extra.jsonl", '{"content": "Builds need Node 20", "kind": "constraint", "flag": true}\n')
    ws.write("output/diagram.png", "not text")
    got = ws.extract()
    assert got["candidates"] == 2 and got["skipped"] == ["output/diagram.png"]
    assert got["blocked"][0]["file"] == "output/memory.md" and got["blocked"][0]["line"] == 2
    assert _FAKE_KEY not in json.dumps(got) and got["blocked"][0]["previews"]
    # the secret is neither a note nor left in the output file
    assert all(_FAKE_KEY not in n.content for n in store.sessions.notes("s1"))
    assert _FAKE_KEY not in (ws.root / "output" / "memory.md").read_text()
    # the redacted item left in the file stays blocked: it never becomes a note
    assert [b["line"] for b in ws.extract()["blocked"]] == [2] and store.sessions.count("s1") == 3
    notes = {n.content: n for n in store.sessions.notes("s1")}
    assert notes["Builds need Node 20"].flag and notes["Builds need Node 20"].kind == "constraint"
    # a second extract replaces the first one's notes, never the note tool's
    ws.write("output/memory.md", "- Deploys go through the staging cluster first\n")
    again = ws.extract(flag=True)
    assert again["replaced"] == 2 and again["candidates"] == 2
    assert sorted(n.content for n in store.sessions.notes("s1")) == [
        "Builds need Node 20", "Deploys go through the staging cluster first", "a note written with the note tool"]
    assert all(n.flag for n in store.sessions.notes("s1") if n.metadata.get("workspace_item"))
    # a bad JSONL line changes nothing
    ws.write("output/extra.jsonl", "{not json\n")
    with pytest.raises(BadInput, match="invalid JSON"):
        ws.extract()
    assert store.sessions.count("s1") == 3


def judge():
    return ScriptedJudge({"staging cluster": keep("Deploys go through the staging cluster first", "constraint"),
                          "flaky": {"verdict": "drop", "reason": "scripted drop"}})


def test_success_promotes_through_the_pipeline_and_removes_working(store):
    ws, _ = workspace.start(store, "s1")
    ws.write("working/plan.md", "try things")
    ws.write("output/memory.md", "- Deploys go through the staging cluster first\n- the flaky test passed once\n")
    done = ws.complete("success")
    assert done["extracted"] == 2 and done["working_removed"] and not (ws.root / "working").exists()
    assert (ws.root / "output" / "memory.md").exists() and ws.state()["state"] == "success"
    run_queue(store, judges=[judge()])
    hits = store.longterm().search("staging cluster deploys", k=3)
    assert hits[0]["document"] == "Deploys go through the staging cluster first"
    assert store.sessions.count("s1") == 0
    with pytest.raises(BadInput, match="already completed"):
        workspace.start(store, "s1")
    with pytest.raises(BadInput, match="takes no writes"):
        ws.write("output/late.md", "x")


def test_failure_promotes_nothing_records_the_reason_and_removes_only_when_ephemeral(store):
    for sid, ephemeral in (("f1", False), ("f2", True)):
        ws, _ = workspace.start(store, sid)
        ws.write("output/memory.md", "- Deploys go through the staging cluster first\n")
        ws.extract()
        done = ws.complete("failure", "OAuth endpoint returns 500", ephemeral=ephemeral)
        assert done["workspace_removed"] is ephemeral and ws.root.exists() is not ephemeral
    run_queue(store, judges=[judge()])
    failed = [e for e in events(store) if e["event"] == "session.failed"]
    assert {e["session_id"] for e in failed} == {"f1", "f2"}
    assert all(e["reason"] == "OAuth endpoint returns 500" for e in failed)
    assert not store.has_longterm or not store.longterm().search("staging", k=3)


def test_failure_without_any_note_still_records_session_failed(store):
    ws, _ = workspace.start(store, "empty")
    ws.complete("failure", "gave up before writing anything")
    run_queue(store, judges=[judge()])
    failed = [e for e in events(store) if e["event"] == "session.failed"]
    assert [e["reason"] for e in failed] == ["gave up before writing anything"]
    assert store.sessions.session_end("empty")["status"] == "failure"


def test_aborted_keeps_everything_and_is_resumed_as_it_was(store):
    ws, _ = workspace.start(store, "a1", task="migrate settings")
    ws.write("working/plan.md", "step 1 done")
    ws.write("output/memory.md", "- Deploys go through the staging cluster first\n")
    done = ws.complete("aborted")
    assert done["preserved"] and not done["working_removed"]
    run_queue(store, judges=[judge()])
    assert not store.has_longterm and store.sessions.session_end("a1")["status"] == "aborted"
    with pytest.raises(BadInput, match="start it again to resume"):
        ws.write("working/plan.md", "x")
    ws2, info = workspace.start(store, "a1")
    assert info["resumed"] and info["state"] == "open"
    assert ws2.read("working/plan.md")["content"] == "step 1 done"
    assert json.loads(ws2.read("context/session.json")["content"])["task"] == "migrate settings"
    ws2.append("working/plan.md", "\nstep 2 done")
    ws2.complete("success")
    run_queue(store, judges=[judge()])
    assert store.longterm().search("staging cluster", k=1)[0]["document"].startswith("Deploys go through")


def test_context_holds_memories_relevant_to_the_task(store):
    store.sessions.add_note("old", "Deploys go through the staging cluster first", flag=True, kind="constraint")
    store.sessions.end("old", "success")
    run_queue(store, judges=["noop"])
    store.write_core("# Rules\n\nNo force pushes to main.\n")
    ws, info = workspace.start(store, "s1", task="deploy the staging cluster")
    assert info["memories"] == 1
    text = ws.read("context/memories.md")["content"]
    assert "- Deploys go through the staging cluster first [high, " in text
    assert "No force pushes" in ws.read("context/core.md")["content"]


def test_odd_session_ids_never_name_a_path(store):
    ws, info = workspace.start(store, "../../etc/x y")
    assert ws.root.parent == store.sub("workspaces") and ws.root.name.startswith("ws-")
    assert info["session_id"] == "../../etc/x y"


def test_cli_round_trip(tmp_path, capsys):
    s = ["--store", str(tmp_path / ".memofs"), "--embedding", "hash"]
    assert main(["session", "start", "--session", "c1", "--task", "try the CLI", *s]) == 0
    assert "session c1 started: workspace" in capsys.readouterr().out
    assert main(["session", "write", "--session", "c1", "output/m.md", "- Use ruff, not flake8", *s]) == 0
    assert main(["session", "append", "--session", "c1", "output/m.md", "\n- Keep CI under 5 minutes\n", *s]) == 0
    capsys.readouterr()
    assert main(["session", "read", "--session", "c1", "output/m.md", *s]) == 0
    assert capsys.readouterr().out == "- Use ruff, not flake8\n- Keep CI under 5 minutes\n"
    assert main(["session", "write", "--session", "c1", "../x", "y", *s]) == 2
    assert capsys.readouterr().err.startswith("error: path '../x' refused")
    assert main(["session", "extract", "--session", "c1", "--json", *s]) == 0
    assert json.loads(capsys.readouterr().out)["candidates"] == 2
    assert main(["session", "complete", "--session", "c1", "--outcome", "aborted", *s]) == 0
    assert "resumes it" in capsys.readouterr().out
    assert main(["session", "start", "--session", "c1", *s]) == 0
    assert "c1 resumed" in capsys.readouterr().out
    assert main(["session", "complete", "--session", "c1", "--outcome", "success", *s]) == 0
    assert "2 candidates extracted" in capsys.readouterr().out
    assert main(["session", "read", "--session", "nope", *s]) == 3
