"""The README's and the docs pages' examples work as written (issue 13; issue 32 moved most of the
README into docs/*.md, and every page is walked the same way): docs as tests.

Every fenced block of README.md and of each page docs/*.md (docs/history/ excepted: dated benchmark
runs) carries a marker on the line before it:

- ``<!-- readme-test: run -->``: the block is run, command by command, in a fresh folder (its own
  ``./.memofs``, its own HOME, no API key, no agent CLI on PATH: a new user's machine). Optional parts
  written ``[--flag]`` are left out. A line ``# → TEXT`` under a command is what that command prints:
  TEXT must be one of its output lines (dates such as ``2026-07`` match any date). A line ``# exit N``
  says the command exits N; every other command must exit 0. A Python block is run as a script.
- ``<!-- readme-test: syntax -->``: reference lines with placeholders (``MEMORY_ID``, ``[--since
  DATE]``): each ``consolidate`` line must parse with the real CLI parser, with and without its
  optional parts.
- ``<!-- readme-test: skip: REASON -->``: not commands, or needs a model server (the reason says).
- ``<!-- demo-command -->``: the demo is run; ``<!-- test-command -->`` is this test suite itself.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO

ROOT = REPO
README = ROOT / "README.md"
#: The pages whose blocks are checked: the README first, then every docs page (not docs/history/).
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
_MARKER = re.compile(r"<!--\s*(readme-test:\s*(run|syntax|skip)(?::\s*(.+?))?|demo-command|test-command)\s*-->\s*$")
_DATE = re.compile(r"\d{4}-\d{2}(?:-\d{2})?(?:T[\d:]+Z?)?")
_OPTIONAL = re.compile(r"\s*\[[^\[\]]*\]")


def blocks() -> list[dict]:
    """Every fenced block of the README and the docs pages: language, text, where (``PAGE:LINE``),
    marker kind and reason."""
    out = []
    for page in PAGES:
        out += _page_blocks(page)
    return out


def _page_blocks(page: Path) -> list[dict]:
    text = page.read_text(encoding="utf-8")
    name = page.relative_to(ROOT).as_posix()
    out = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mk = _MARKER.search(before)
        kind = reason = None
        if mk:
            kind = mk.group(2) or mk.group(1)
            reason = mk.group(3)
        out.append({"lang": m.group(1), "body": m.group(2), "line": line, "kind": kind, "reason": reason,
                    "where": f"{name}:{line}"})
    return out


def _blocks_of(kind: str) -> list[dict]:
    return [b for b in blocks() if b["kind"] == kind]


def test_every_block_is_marked():
    unmarked = [b["where"] for b in blocks() if b["kind"] is None]
    assert not unmarked, f"blocks without a readme-test marker: {unmarked}"
    assert all(b["reason"] for b in _blocks_of("skip")), "a skipped block says why"
    assert len(_blocks_of("run")) >= 3
    # the pages moved out of the README are walked too (issue 32): at least the pages that hold blocks
    assert {b["where"].split(":")[0] for b in blocks()} >= {"README.md", "docs/hooks.md", "docs/commands.md",
                                                            "docs/judges.md", "docs/workspace.md", "docs/cli.md"}


def test_the_readme_keeps_the_demo_and_test_commands_first():
    """.ci/run takes the test command from the block after ``<!-- test-command -->``: both stay first."""
    kinds = [b["kind"] for b in _page_blocks(README)]
    assert kinds[:2] == ["demo-command", "test-command"]


def steps(body: str) -> list[dict]:
    """The commands of a shell block with what they should print and exit with."""
    out: list[dict] = []
    for raw in body.splitlines():
        line = raw.strip()
        if line.startswith("# →"):
            out[-1]["expect"].append(line[3:].strip())
        elif (m := re.match(r"#\s*exit (\d+)", line)) and out:
            out[-1]["exit"] = int(m.group(1))
        elif line and not line.startswith("#"):
            out.append({"command": _OPTIONAL.sub("", raw), "expect": [], "exit": 0})
    return out


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CONSOLIDATE_") and not k.endswith("_API_KEY") and k not in ("PYTHONPATH",)}
    env.update({"HOME": str(home), "PATH": f"{BIN}:/usr/bin:/bin", "ANONYMIZED_TELEMETRY": "False"})
    return env


def _norm(text: str) -> str:
    return _DATE.sub("<date>", " ".join(text.split()))


def _check(step: dict, r: subprocess.CompletedProcess, where: str) -> None:
    said = f"{where}: {step['command'].strip()}\nexit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert r.returncode == step["exit"], said
    lines = {_norm(x) for x in r.stdout.splitlines()}
    for want in step["expect"]:
        assert _norm(want) in lines, f"the docs show {want!r}\n{said}"


@pytest.mark.spawns
@pytest.mark.parametrize("block", _blocks_of("run"), ids=lambda b: b["where"])
def test_run_block(block, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    env = _env(tmp_path)
    where = block["where"]
    if block["lang"] == "python":
        script = work / "example.py"
        script.write_text(block["body"], encoding="utf-8")
        expect = [ln.strip()[3:].strip() for ln in block["body"].splitlines() if ln.strip().startswith("# →")]
        r = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True,
                           timeout=300)
        _check({"command": "python example.py", "expect": expect, "exit": 0}, r, where)
        return
    todo = steps(block["body"])
    assert todo, where
    for step in todo:
        r = subprocess.run(["bash", "-c", step["command"]], cwd=work, env=env, capture_output=True, text=True,
                           timeout=300)
        _check(step, r, where)


def test_python_examples_read_memories_through_the_guarded_api():
    """The README's Python tour and the docs pages read memories through ``consolidate.recall`` (the
    agent view: tombstones, evidence as credited, the context guard), never ``Store.longterm()``'s
    raw rows (issue 28: every surface goes through the one view)."""
    python = [b for b in blocks() if b["lang"] == "python"]
    assert python
    raw = [b["where"] for b in python if re.search(r"\.longterm\(\)\s*\.\s*(search|all|active|get)\(", b["body"])]
    assert raw == [], f"blocks reading the index unguarded: {raw}"


def test_readme_recall_example_answers_the_question(tmp_path):
    """Issue 13's failing example: `recall "which database and why"` printed nothing after the README's
    own commands (a first-seen judged decision is quarantined). Now the note is flagged and answers."""
    [cli] = [b for b in _blocks_of("run") if "which database and why" in b["body"]]
    recall = [s for s in steps(cli["body"]) if "recall" in s["command"]]
    assert recall and recall[0]["expect"] and "SQLite" in recall[0]["expect"][0]


def _syntax_lines(body: str) -> list[str]:
    joined = body.replace("\\\n", " ")
    return [ln.split("#", 1)[0].strip() for ln in joined.splitlines() if ln.strip().startswith("consolidate ")]


@pytest.mark.parametrize("block", _blocks_of("syntax"), ids=lambda b: b["where"])
def test_syntax_block_parses(block):
    from consolidate.cli.main import build_parser

    placeholders = {"MEMORY_ID": "mem-0123456789abcdef", "RUN_ID": "run-0123456789ab", "N": "5"}
    lines = _syntax_lines(block["body"])
    assert lines
    for line in lines:
        for variant in (re.sub(r"[\[\]]", "", line), _OPTIONAL.sub("", line)):
            argv = [placeholders.get(a, a) for a in shlex.split(variant)[1:]]
            try:
                build_parser().parse_args(argv)
            except SystemExit as exc:
                pytest.fail(f"{block['where']}: `{variant}` does not parse (exit {exc.code})")


@pytest.mark.spawns
def test_demo_command(tmp_path):
    [demo] = [b for b in _page_blocks(README) if b["kind"] == "demo-command"]
    command = demo["body"].strip().split("&&")[-1].strip()
    assert command == "consolidate demo"
    r = subprocess.run([str(BIN / "consolidate"), "demo"], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert 'recall "why do the login tests time out on CI?":' in r.stdout
