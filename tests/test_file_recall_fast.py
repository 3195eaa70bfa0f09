"""The file recall hook's fast path (issue 34): ``consolidate hook`` on a PreToolUse/BeforeTool payload
is answered by consolidate/agents/hooks/fast.py without the command line's parser or the full hook,
with the same answer as the full hook (consolidate.agents.hooks.full.run_hook) gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from consolidate import Store
from consolidate.agents.hooks.full import run_hook
from consolidate.store.index.lexical import LexicalIndex, index_path

ROOT = Path(__file__).resolve().parent.parent
FAST = ("import sys\nfrom consolidate.agents.hooks import fast\ncode = fast.main(sys.argv[1:])\n"
        "sys.stdout.write('\\nFAST %s %s\\n' % (code, 'consolidate.agents.hooks.full' in sys.modules))")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project with a store of 300 memories naming 40 files (in their text and by a mentions
    edge), one in 25 quarantined, some naming a file by its bare name only."""
    project = tmp_path_factory.mktemp("fr") / "app"
    (project / "src" / "lib").mkdir(parents=True)
    store = project / ".memofs"
    Store(store, embedding="hash").close()
    (store / "graph").mkdir(exist_ok=True)
    records = []
    with open(store / "graph" / "nodes.jsonl", "w") as nodes, open(store / "graph" / "edges.jsonl", "w") as edges:
        for i in range(300):
            f = f"src/lib/mod{i % 40}.py"
            status = "quarantined" if i % 25 == 3 else "active"
            doc = f"{f}: part {i} needs flag {i % 7}" if i % 3 else f"mod{i % 40}.py is loaded lazily, part {i}"
            nodes.write(json.dumps({"id": f"m{i:04d}", "kind": "memory", "status": status, "statement": doc}) + "\n")
            if i % 2:
                edges.write(json.dumps({"source": f"m{i:04d}", "target": "entity:" + f, "kind": "mentions"}) + "\n")
            records.append({"id": f"m{i:04d}", "document": doc, "metadata": {"status": status, "tier": "durable"}})
        for j in range(40):
            nodes.write(json.dumps({"id": f"entity:src/lib/mod{j}.py", "kind": "entity", "entity_kind": "file"}) + "\n")
    idx = LexicalIndex(index_path(store))
    idx.upsert(records)
    idx.close()
    for j in range(40):
        (project / "src" / "lib" / f"mod{j}.py").write_text(f"X = {j}\n")
    return project


def _payload(project: Path, sid: str, path: str, tool: str = "Read") -> dict:
    key = "file_path" if tool == "Read" else "absolute_path"
    return {"session_id": sid, "hook_event_name": "PreToolUse" if tool == "Read" else "BeforeTool",
            "cwd": str(project), "tool_name": tool, "tool_input": {key: path}}


def _fast(project: Path, payload: dict) -> tuple[str, str]:
    r = subprocess.run([sys.executable, "-c", FAST, "hook"], input=json.dumps(payload), capture_output=True,
                       text=True, cwd=project, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=60)
    out, _, tail = r.stdout.rpartition("\nFAST ")
    return out.strip(), tail.strip()


@pytest.mark.parametrize("tool", ["Read", "read_file"])
def test_the_fast_file_recall_answers_as_the_full_hook(project, tool):
    said = 0
    for j in (0, 3, 7, 11, 28, 39):
        for path in (str(project / "src" / "lib" / f"mod{j}.py"), f"src/lib/mod{j}.py", "src/lib/nothing.py"):
            fast, tail = _fast(project, _payload(project, f"fast-{tool}-{j}-{len(path)}", path, tool))
            assert tail == "0 False", tail  # answered there, without the full hook
            code, full = run_hook(project / ".memofs", payload=_payload(project, f"full-{tool}-{j}-{len(path)}",
                                                                        path, tool))
            assert code == 0 and fast == full.strip()
            said += bool(fast)
    assert said >= 10  # the answers compared hold memories


def test_a_memory_shown_once_per_session_on_the_fast_path(project):
    path = str(project / "src" / "lib" / "mod5.py")
    first, _ = _fast(project, _payload(project, "once-1", path))
    assert "mod5.py" in json.loads(first)["hookSpecificOutput"]["additionalContext"]
    again, tail = _fast(project, _payload(project, "once-1", path))
    lines = [set(json.loads(t)["hookSpecificOutput"]["additionalContext"].splitlines()[1:]) for t in (first, again)]
    assert tail == "0 False" and lines[1] and not lines[0] & lines[1]  # the next ones, none twice


def test_a_cwd_that_is_no_folder_goes_to_the_full_hook(project):
    p = _payload(project, "gone-1", "src/lib/mod1.py")
    p["cwd"] = str(project / "no-such-folder")
    _, tail = _fast(project, p)
    assert tail.startswith("None")


def test_a_file_outside_the_project_with_the_same_tail_gets_nothing(project, tmp_path):
    """A fresh review: a Read of another checkout's src/lib/mod2.py (an absolute path outside the
    project root) was shown this project's memories about src/lib/mod2.py. Fast and full hook alike,
    by path, by tail and by bare name, while the project's own file still gets them."""
    other = tmp_path / "other" / "src" / "lib"
    other.mkdir(parents=True)
    (other / "mod2.py").write_text("X = 2\n")
    for n, path in enumerate((str(other / "mod2.py"), str(tmp_path / "mod2.py"))):
        fast, tail = _fast(project, _payload(project, f"outside-fast-{n}", path))
        code, full = run_hook(project / ".memofs", payload=_payload(project, f"outside-full-{n}", path))
        assert tail == "0 False" and code == 0 and fast == "" and full.strip() == ""
    own, _ = _fast(project, _payload(project, "outside-own", str(project / "src" / "lib" / "mod2.py")))
    assert "mod2.py" in own
