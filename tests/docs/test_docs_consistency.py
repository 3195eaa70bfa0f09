"""Docs as tests (issue 15, seam 8): the docs, ``--help`` and the exit codes say the same thing.

"The docs" are README.md and the hand-written pages of docs/ (issue 32 moved the README's reference
there): docs/cli.md is generated from the parser, so it is checked by being generated again
(:func:`test_the_generated_pages_are_up_to_date`), not counted as documenting a command.

- every command of the parser is documented in the docs, and every ``consolidate COMMAND`` the
  docs show is a real command whose ``--options`` exist;
- the exit codes listed in the README are the error classes' codes and ``consolidate --help``'s;
- the default judge chain reads the same in the README, every ``--judge`` help and consolidate.judges.registry;
- the demo's session count, the MCP tools and the hooks install-hook adds are the ones the README names.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from consolidate.cli.main import build_parser, exit_codes
from paths import REPO

ROOT = REPO
#: Pages written from the code (consolidate.cli.reference), not by hand.
GENERATED = {"cli.md"}
#: README.md and every hand-written page of docs/ (docs/history/: dated benchmark runs, left out).
PAGES = [ROOT / "README.md", *(p for p in sorted((ROOT / "docs").glob("*.md")) if p.name not in GENERATED)]
README = "\n\n".join(p.read_text(encoding="utf-8") for p in PAGES)
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


PARSER = build_parser()
COMMANDS = _subparsers(PARSER)
TOP_OPTIONS = _options(PARSER)


def _readme_command_lines() -> list[str]:
    """Each README line (code blocks and inline code) that runs ``consolidate COMMAND ...``."""
    lines = []
    for page in PAGES:  # page by page: a fence is paired with its own page's closing fence
        text = page.read_text(encoding="utf-8")
        for lang, block in re.findall(r"^ *```(\w*)\n(.*?)^ *```", text, re.S | re.M):
            if lang in ("", "sh", "bash"):
                lines += [line.split("#", 1)[0] for line in block.splitlines()]
        prose = re.sub(r"^ *```.*?^ *```", "", text, flags=re.S | re.M)
        lines += re.findall(r"`([^`\n]*consolidate [^`\n]*)`", prose)
    out = []
    for line in lines:
        for m in re.finditer(r"(?:^|[\s\"(/])consolidate((?: +[^|;&\n]+)?)", line):
            rest = m.group(1).strip()
            if rest:
                out.append("consolidate " + rest)
    return out


def test_every_command_is_documented():
    missing = [name for name in COMMANDS if not re.search(rf"consolidate {re.escape(name)}\b", README)]
    assert not missing, f"commands missing from README.md and docs/: {missing}"


def test_every_command_and_option_the_readme_shows_exists():
    seen = 0
    for line in _readme_command_lines():
        try:
            tokens = shlex.split(line.replace("[", " ").replace("]", " "))
        except ValueError:
            tokens = line.replace("[", " ").replace("]", " ").split()
        # a word right after a store option is its value (``--project team``), not a command
        words = [t for i, t in enumerate(tokens[1:], 1) if not t.startswith("-")
                 and tokens[i - 1] not in ("--store", "--chroma-url", "--project", "--embedding")]
        options = [t.split("=")[0] for t in tokens[1:] if t.startswith("--") and t != "--"]
        command = next((w for w in words if w in COMMANDS), None)
        if command is None:
            # "consolidate is the gate ...", "consolidate/stages": prose and paths, not a command
            continue
        seen += 1
        known = _options(COMMANDS[command]) | TOP_OPTIONS
        for sub in _subparsers(COMMANDS[command]).values() if any(
                isinstance(a, argparse._SubParsersAction) for a in COMMANDS[command]._actions) else []:
            known |= _options(sub)
        unknown = [o for o in options if o not in known]
        assert not unknown, f"README shows {line!r}: {command} has no {unknown}"
    assert seen >= 25  # the README's command lines were found


def test_exit_codes_match_readme_help_and_error_classes():
    sentence = re.search(r"with an exit code: (.*?)\.", README, re.S).group(1)
    documented = {int(code): " ".join(label.split()) for code, label in re.findall(r"(\d) ([a-z ]+?)(?:,|$)",
                                                                                    sentence.replace("\n", " "))}
    codes = dict(exit_codes())
    assert documented == {c: label for c, label in codes.items() if 2 <= c <= 5}
    for code in (75, 130):
        assert f"exits {code}" in README.replace("**", "")
    epilog = PARSER.format_help().split("exit codes: ", 1)[1]
    for code, label in codes.items():
        assert f"{code} {label}" in " ".join(epilog.split())


def test_exit_codes_are_real(tmp_path, capsys):
    """The codes the README names, produced by the commands it names."""
    from consolidate.cli.main import main

    store = str(tmp_path / ".memofs")
    assert main(["note", "--store", store, "--session", "s", ""]) == 2  # bad input
    assert main(["end", "--store", store, "--session", "nobody", "--outcome", "success"]) == 3  # unknown session
    (tmp_path / "file").write_text("x")
    assert main(["status", "--store", str(tmp_path / "file")]) == 4  # store problem
    capsys.readouterr()


def test_default_chain_reads_the_same_everywhere():
    from consolidate.cli.options import DEFAULT_CHAIN_TEXT
    from consolidate.judges.cli import PRESET_ORDER
    from consolidate.judges.registry import DEFAULT_CHAIN

    assert DEFAULT_CHAIN_TEXT == (f"the first agent CLI on PATH ({', '.join(PRESET_ORDER)}), then "
                                  + ", then ".join(DEFAULT_CHAIN))
    assert DEFAULT_CHAIN_TEXT in " ".join(README.replace("`", "").split())
    helps = {name: a.help for name, p in COMMANDS.items() for a in p._actions if "--judge" in a.option_strings}
    assert {"run", "eval", "batch", "worker", "hook", "mcp", "install-hook"} <= set(helps)
    for name, text in helps.items():
        if name != "judges":
            assert DEFAULT_CHAIN_TEXT in text, f"{name} --judge help: {text}"


def test_demo_session_count():
    from consolidate.evals.demo import SAMPLE_SESSIONS

    m = re.search(r"a throwaway store, (\w+) sample sessions", README)
    assert m and WORDS.get(m.group(1), m.group(1)) == SAMPLE_SESSIONS


def test_mcp_tools_are_the_ones_the_readme_names():
    import anyio
    from mcp import Client

    from consolidate import Store
    from consolidate.mcp.server import build_server

    async def tools(path):
        async with Client(build_server(Store(path, embedding="hash"), spawn=None)) as client:
            return {t.name for t in (await client.list_tools()).tools}

    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        names = anyio.run(tools, Path(folder) / ".memofs")
    # docs/mcp.md, its generated tool list left out (it names every tool by construction)
    page = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    section = re.sub(r"<!-- mcp-tools -->.*?<!-- /mcp-tools -->", "", page, flags=re.S)
    assert "<!-- mcp-tools -->" in page and "`note(" not in section.split("## Tools", 1)[1]
    named = set(re.findall(r"`(\w+)\(", section)) | set(re.findall(r"`(session_\w+|forget|recall|note)`", section))
    assert names <= named, f"tools not in the README's MCP section: {names - named}"


@pytest.mark.parametrize("agent, events", [("claude-code", {"SessionStart", "SessionEnd", "PreToolUse"}),
                                           ("gemini-cli", {"SessionStart", "SessionEnd", "BeforeTool"})])
def test_installed_hooks_match_the_readme(agent, events):
    from consolidate.agents.install import AGENTS

    spec = AGENTS[agent]
    assert {h.event for h in spec.hooks if not h.harvest_only} == events
    harvest_only = {h.event for h in spec.hooks if h.harvest_only}
    assert harvest_only == ({"PreCompact"} if agent == "claude-code" else set())
    flat = " ".join(README.split())
    assert "Both agents get `SessionStart`, `SessionEnd` and the file-recall hook (`PreToolUse` for Claude Code," \
           " `BeforeTool` for Gemini CLI" in flat
    assert "with `--harvest` Claude Code also gets `PreCompact`" in flat


def test_the_settings_table_is_the_settings_module():
    """The README's table of CONSOLIDATE_* variables is consolidate/core/settings.py's (issue 20, item 5):
    `python -m consolidate.core.settings` prints it."""
    from consolidate.core.settings import markdown_table

    found = re.search(r"<!-- settings-table -->\n(.*?)\n<!-- /settings-table -->", README, re.S)
    assert found, "no <!-- settings-table --> block in README.md or docs/"
    assert found.group(1) == markdown_table()


def test_every_variable_the_readme_names_is_a_setting():
    from consolidate.core.settings import ALL

    tests_own = {"CONSOLIDATE_SHARED", "CONSOLIDATE_CASSETTE_GGUF", "CONSOLIDATE_SCREENSHOTS"}  # read by tests/ only
    named = set(re.findall(r"CONSOLIDATE_[A-Z][A-Z_0-9]*[A-Z0-9]", README))
    assert named - tests_own <= {s.name for s in ALL}


def test_the_generated_pages_are_up_to_date():
    """docs/cli.md (every command's --help), the MCP tool list of docs/mcp.md, the settings table
    of docs/settings.md and the public names of docs/python-api.md are what ``python -m
    consolidate.cli.reference`` writes from the code now (issue 32): a changed option, tool, setting
    or public name fails here until the pages are written again."""
    from consolidate.cli.reference import rendered

    pages = rendered(ROOT / "docs")
    assert {p.name for p in pages} == {"cli.md", "mcp.md", "settings.md", "python-api.md"}
    stale = [p.name for p, text in pages.items() if p.read_text(encoding="utf-8") != text]
    assert not stale, f"out of date: {stale}; run `python -m consolidate.cli.reference`"
    cli = pages[ROOT / "docs" / "cli.md"]
    assert all(f"## consolidate {name}\n" in cli for name in COMMANDS)


def test_the_generator_sees_a_changed_parser(monkeypatch):
    """The check above can fail: an option added to a command changes docs/cli.md's text."""
    import consolidate.cli.reference as reference

    real = reference.build_parser

    def with_extra(*args, **kwargs):
        parser = real(*args, **kwargs)
        _subparsers(parser)["status"].add_argument("--brand-new-option", help="not documented yet")
        return parser

    before = reference.cli_markdown()
    monkeypatch.setattr(reference, "build_parser", with_extra)
    after = reference.cli_markdown()
    assert "--brand-new-option" in after and "--brand-new-option" not in before


def test_the_docs_pages_are_in_the_site_and_the_readme_is_short():
    """Every docs page is in mkdocs.yml's nav and linked from docs/index.md; the README is at most 300
    lines (issue 32), keeps the demo and test commands first and links to the pages."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert len(pages) >= 15
    assert [p for p in pages if f": {p}" not in nav] == []
    assert [p for p in pages if p != "index.md" and f"]({p}" not in index] == []
    assert ": history/benchmarks.md" in nav and "](history/benchmarks.md)" in index
    assert len(readme.splitlines()) <= 300
    assert readme.index("<!-- demo-command -->") < readme.index("<!-- test-command -->") < readme.index("\n## ")
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", readme))
    assert linked >= {"cli.md", "hooks.md", "mcp.md", "settings.md", "judges.md", "evaluation.md",
                      "python-api.md", "testing.md", "design.md", "team.md", "workspace.md"}


def test_the_benchmarks_table_names_real_scripts():
    """benchmarks/README.md holds the latest figure of each benchmark, one row each with its script,
    date and commit; the dated runs are in docs/history/benchmarks.md (issue 32)."""
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    rows = [r for r in text.splitlines() if r.startswith("| ") and "(`" in r.split("|")[1]]
    assert len(rows) >= 20
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        script = re.search(r"`((?:bench_|secrets_|guard_)\w+\.py)", cells[0])
        assert script is None or (ROOT / "benchmarks" / script.group(1)).is_file(), row
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", cells[-2]), row
        assert re.fullmatch(r"`[0-9a-f]{7,40}`", cells[-1]), row
    history = (ROOT / "docs" / "history" / "benchmarks.md").read_text(encoding="utf-8")
    assert "## Secret gate (`secrets_bench.py`)" in history and "## Faithfulness" in history
