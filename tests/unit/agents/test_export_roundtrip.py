"""Export, then import (issue 29, item 7): every exported store imports back, whatever its texts hold.

The block's markers are HTML comments, so a memory text holding ``<!--`` or ``-->`` (a Mermaid
diagram's arrows, an HTML template), line breaks, headings, backticks or text that looks like our
own markers must still round-trip: the entry line shows the text escaped, the marker carries the
exact text, the import reads it back (consolidate/agents/export_md.py). Checked three ways: a Hypothesis
property over the block format (any text of several scripts), the block a previous version wrote
(raw comment markers in the line, which the import refused), and stores built from
../shared/data/realnotes exported and imported into a fresh store by ``python -m consolidate`` commands
(forked from a process with chromadb imported: tests/support/preloaded.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consolidate.agents.export_md import BEGIN, END, parse_block, render_block, visible
from consolidate.rules.memory_types import TYPES
from consolidate.core.vocab import EVIDENCE_KINDS
from paths import REPO
from preloaded import run as run_preloaded

REALNOTES = REPO.parent / "shared" / "data" / "realnotes"
if not REALNOTES.is_dir():
    REALNOTES = Path("/work/shared/data/realnotes")

#: Pieces a memory text may hold that the block format itself uses.
TRICKY = ["<!--", "-->", "<!-- consolidate:end -->", BEGIN, "<!-- consolidate {\"id\": \"x\"} -->", "## Heading",
          "# H1", "`code`", "```mermaid\ngraph TD\n  A --> B\n```", "\n", "\r\n", "\u2028", "\x85", "- **fact**: ",
          " [high, user-stated, 2026-07]", "[x]", "]", "&lt;!--", "--&gt;", "--!>", "\\u002d", "\"", "\\", "{", "}",
          "Привет, мир", "日本語のテキスト", "中文记忆", "مرحبا", "नमस्ते", "ελληνικά", "🙂", "e\u0301", "\t"]

texts = st.lists(st.one_of(st.sampled_from(TRICKY),
                           st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)),
                 min_size=1, max_size=8).map("".join).filter(lambda t: t.split())


def _row(i, text, type_, evidence, fields, day):
    return {"id": f"mem-{i:016x}", "document": text,
            "metadata": {"type": type_, "evidence": evidence, "confidence": "high", "last_confirmed": day,
                         "valid_from": "2024-02-29", "status": "active", "fields": json.dumps(fields)}}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(texts, st.sampled_from(sorted(TYPES)), st.sampled_from(EVIDENCE_KINDS),
                          st.dictionaries(st.sampled_from(["reason", "who", "command", "context"]), texts, max_size=2),
                          st.dates().map(lambda d: d.isoformat())), min_size=1, max_size=5),
       st.sampled_from(["\n", "\r\n"]), texts)
def test_any_text_round_trips_through_the_block(entries, newline, around):
    rows = [_row(i, *e) for i, e in enumerate(entries)]
    block = render_block(None, rows, newline)
    page = "# Guide" + newline + around.replace("<!-- consolidate", "") + newline + block + "tail" + newline
    if BEGIN in page[: page.index(block)]:
        return  # the hand-written part holds a begin marker of its own: a different (refused) file
    got = parse_block(page)
    assert [(e["statement"], e["type"], e["evidence"], e["confirmed"], e["since"], e["fields"]) for e in got] == \
        [(r["document"], r["metadata"]["type"], r["metadata"]["evidence"], r["metadata"]["last_confirmed"],
          "2024-02-29", {k: v for k, v in json.loads(r["metadata"]["fields"]).items() if v}) for r in rows]
    for line in block.split(newline)[5:-2]:  # the entry lines: no comment opens or closes before the marker
        shown = line.rsplit(" <!-- consolidate ", 1)[0]
        assert "<!--" not in shown and "-->" not in shown
        assert line.count("<!--") == 1 and line.endswith("-->")


def test_a_hand_edited_entry_line_wins_over_the_marker_text():
    row = _row(1, "Use <!-- x --> markers\nin templates", "fact", "observed-success", {}, "2026-11-02")
    block = render_block(None, [row])
    shown = visible(row["document"])
    assert shown == "Use &lt;!-- x --&gt; markers in templates"
    edited = block.replace(shown, "Use --&gt; arrows in templates")
    [e] = parse_block(edited)
    assert e["statement"] == "Use --> arrows in templates"


@pytest.mark.parametrize("text", ["graph TD A --> B", "keep <!-- generated --> blocks", "use `<!-- x -->`",
                                  "стрелка --> дальше", "矢印 --> 次"])
def test_a_block_an_earlier_version_wrote_imports(text):
    """Before issue 29 the entry line held the raw text: the import refused the whole block."""
    marker = json.dumps({"id": "mem-0000000000000001", "fields": {}, "confirmed": "2026-11-02"}).replace("--", "-\\u002d")
    page = (f"{BEGIN} -->\n## Project memory (consolidate)\n\n- **fact**: {text} [high, observed-success, 2026-11]"
            f" <!-- consolidate {marker} -->\n{END}\n")
    [e] = parse_block(page)
    assert e["statement"] == text and e["evidence"] == "observed-success" and e["confirmed"] == "2026-11-02"


@pytest.mark.parametrize("line", ['- **fact**: cut marker [high, user-stated, 2026-11] <!-- consolidate {"id": "mem-1"',
                                  '- **fact**: not json [high, user-stated, 2026-11] <!-- consolidate {nope} -->'])
def test_a_cut_marker_is_still_refused(line):
    from consolidate.core.errors import InvalidImportLine

    with pytest.raises(InvalidImportLine):
        parse_block(f"{BEGIN} -->\n{line}\n{END}\n")


# -- stores built from real notes, through the command line ----------------------------------------

def _cli(*args, cwd, check=True):
    """``consolidate ARGS`` in a new process forked from one with chromadb imported (tests/support/preloaded.py)."""
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    out = run_preloaded(list(args), cwd=cwd, env=env, timeout=600)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def _memories(path):
    """``{id: [text, type, evidence, last confirmed, valid from, fields]}`` of the store's index, read in
    this process after the commands ended (each command opened and closed the store in its own)."""
    from consolidate import Store
    from consolidate.store.index.longterm import close_all

    close_all()
    s = Store(path, create=False)
    try:
        got = {r["id"]: [r["document"], r["metadata"]["type"], r["metadata"]["evidence"],
                         r["metadata"]["last_confirmed"], r["metadata"].get("valid_from"), r["metadata"].get("fields")]
               for r in s.longterm().all()}
    finally:
        s.close()
        close_all()
    return json.loads(json.dumps(got))


@pytest.mark.spawns
@pytest.mark.skipif(not REALNOTES.is_dir(), reason="needs ../shared/data/realnotes")
def test_stores_of_real_notes_export_and_import_back(tmp_path):
    """Notes of real agents (the two sessions holding Mermaid diagrams with ``-->``, and two
    curated CLAUDE.md/AGENTS.md files) become a store; its export imports into a fresh store as the
    same memories: ids, texts, types, evidence, dates, fields; but for the few entries over the agent
    view's line budget, exported cut and left out by the import (issue 28)."""
    lines = []
    for name in ("sessions/mb-nftbk.jsonl", "sessions/mb-travel-stipend.jsonl", "longterm/gastropro.jsonl",
                 "longterm/cargo-tools.jsonl"):
        for raw in (REALNOTES / name).read_text(encoding="utf-8").splitlines():
            note = json.loads(raw)
            lines.append(json.dumps({"content": note["content"], "flag": True,
                                     "session_id": "rn-" + Path(name).stem}, ensure_ascii=False))
    src = tmp_path / "notes.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert any("-->" in json.loads(x)["content"] for x in lines)
    _cli("import", str(src), "--store", "a", cwd=tmp_path)
    for sid in sorted({json.loads(x)["session_id"] for x in lines}):
        _cli("end", "--session", sid, "--outcome", "success", "--store", "a", cwd=tmp_path)
    _cli("run", "--store", "a", "--judge", "noop", cwd=tmp_path)
    _cli("export", "--store", "a", "--file", "AGENTS.md", "--limit", "1000", cwd=tmp_path)
    block = (tmp_path / "AGENTS.md").read_text(encoding="utf-8")
    entries = parse_block(block)
    exported = {e["id"] for e in entries if not e["cut"]}  # an entry over the view's budget is cut: not imported
    cut = len(entries) - len(exported)
    assert cut < len(entries) // 10
    mine = _memories(tmp_path / "a")
    assert len(exported) >= 100 and any("-->" in mine[i][0] for i in exported)
    out = _cli("import", "--agents-md", "AGENTS.md", "--store", "b", "--judge", "noop", cwd=tmp_path)
    assert f"imported {len(exported)} memories" in out.stdout and " 0 rejected" in out.stdout
    assert not cut or f"{cut} entries cut by the export's size budget left out" in out.stdout
    theirs = _memories(tmp_path / "b")
    assert {i: mine[i] for i in exported} == theirs
    # and back again: the fresh store's export is the same block
    _cli("export", "--store", "b", "--file", "B.md", "--limit", "1000", cwd=tmp_path)
    assert (tmp_path / "B.md").read_text(encoding="utf-8") == "".join(
        ln for ln in block.splitlines(keepends=True) if '"cut": true' not in ln)
