"""One budget for the SessionStart context (issue 29, item 6): a 13.9 KB ``memory/core.md`` filled
the bound and none of the 45 memories was shown. core.md and the memories share the budget, the
memories keep a share of it, and the first line says what was cut (consolidate/rules/context_budget.py).
Through the installed command with real SessionStart payloads: the full hook, the light path (the
start file), the re-injection after a compaction (source ``compact``) and Gemini CLI's JSON."""

from __future__ import annotations

import json
import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consolidate import Store
from consolidate.rules.context_budget import CONTEXT_MAX_CHARS, CUT_LINE_RESERVE, MEMORY_SHARE, fit
from consolidate.store.views.context_md import write as write_context
from paths import SUPPORT

sys.path.insert(0, str(SUPPORT))
from test_fast_start import end, hook, hook_modules, is_light, start_payload  # noqa: E402

CUT = re.compile(r"^consolidate: context cut to fit ([\d,]+) characters: (.*)$", re.M)
CORE_CUT = re.compile(r"memory/core\.md cut \(([\d,]+) of ([\d,]+) characters shown")
NOT_SHOWN = re.compile(r"(\d+) memor(?:y|ies) not shown")


def _core(size: int) -> str:
    """A core.md of about ``size`` characters: project rules, as people write them."""
    rules = ["# Project rules", ""]
    i = 0
    while sum(len(r) + 1 for r in rules) < size:
        rules.append(f"- Rule {i}: every change to the billing module needs a second reviewer and a migration note"
                     f" in docs/billing/{i}.md before it is merged")
        i += 1
    return "\n".join(rules)[:size] + "\n"


def _seed(store, n: int) -> None:
    lt = store.longterm()
    texts = [f"Service {i} listens on port {9000 + i} behind the gateway and logs to /var/log/svc{i}.log"
             for i in range(n)]
    vecs = lt.embed(texts)
    lt.upsert([{"id": f"mem-{i}", "document": text, "embedding": vec, "metadata": {
        "type": "fact", "status": "active", "tier": "durable", "evidence": "observed-success", "confidence": "high",
        "last_confirmed": f"2026-11-{1 + i % 28:02d}", "scope": store.project, "session_id": "s0", "run_id": "seed",
        "source": "flagged", "prompt_version": "", "provenance": "{}", "fields": "{}"}}
        for i, (text, vec) in enumerate(zip(texts, vecs))])
    write_context(store, store.project)
    store.sessions.count("s0")


@pytest.fixture
def crowded(tmp_path):
    """The reported store: a 13.9 KB core.md and 45 memories (context.md holds the top 30)."""
    root = tmp_path / "proj"
    root.mkdir()
    store = Store(root / ".memofs", embedding="hash", project="proj")
    (store.path / "memory").mkdir(parents=True, exist_ok=True)
    (store.path / "memory" / "core.md").write_text(_core(13_900), encoding="utf-8")
    _seed(store, 45)
    store.close()
    return root, root / ".memofs"


def _context_of(printed: str) -> str:
    """The recalled context: what follows the session line."""
    first, _, rest = printed.partition("\n\n")
    assert first.startswith("consolidate: this is session"), printed[:200]
    return rest.rstrip("\n")


def _check_cut(context: str, memories_in_file: int) -> tuple[int, int]:
    """The cut line says what was cut, and it is what is missing; returns (core chars shown, memories shown)."""
    assert len(context) <= CONTEXT_MAX_CHARS
    m = CUT.search(context)
    assert m and context.startswith(m.group(0)), context[:300]
    core = CORE_CUT.search(m.group(2))
    assert core, m.group(0)
    shown_core, total_core = (int(g.replace(",", "")) for g in core.groups())
    assert total_core == 13_900 and 0 < shown_core < total_core
    shown = sum(1 for line in context.splitlines() if line.startswith("- Service "))
    header = next(line for line in context.splitlines() if line.startswith("# Project memory"))
    assert f"the top {shown} active memories" in header
    said = NOT_SHOWN.search(m.group(2))
    assert shown + (int(said.group(1)) if said else 0) == memories_in_file
    return shown_core, shown


@pytest.mark.spawns
def test_a_large_core_md_leaves_the_memories_their_share(crowded):
    root, store_path = crowded
    out = hook(store_path, start_payload("s1", root))
    assert out.returncode == 0 and out.stderr == ""
    context = _context_of(out.stdout)
    shown_core, shown = _check_cut(context, 30)
    assert shown == 30  # before: 0 of them; all 30 of context.md fit in the memories' share
    rules = [line for line in context.splitlines() if line.startswith("- Rule ")]
    assert rules and "Rule 0:" in rules[0]  # core.md from its start
    assert "memory/core.md continues" in context
    memories = context[context.index("# Project memory"):]
    assert len(memories) >= MEMORY_SHARE * (CONTEXT_MAX_CHARS - CUT_LINE_RESERVE) - 200
    # the light path prints the same context from the start file
    end(store_path, "s1")
    printed, modules = hook_modules(store_path, start_payload("s2", root))
    assert is_light(modules), modules
    assert _context_of(printed) == context


@pytest.mark.spawns
def test_the_re_injection_after_a_compaction_and_gemini_get_the_same_budget(crowded):
    root, store_path = crowded
    compact = hook(store_path, start_payload("s3", root, source="compact"))
    assert compact.returncode == 0
    context = _context_of(compact.stdout)
    _check_cut(context, 30)
    gemini = hook(store_path, start_payload("s4", root), "--output", "gemini")
    text = json.loads(gemini.stdout)["hookSpecificOutput"]["additionalContext"]
    assert _context_of(text) == context


@pytest.mark.spawns
def test_memories_use_what_a_small_core_md_leaves(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    store = Store(root / ".memofs", embedding="hash", project="proj")
    (store.path / "memory").mkdir(parents=True, exist_ok=True)
    (store.path / "memory" / "core.md").write_text("# Project rules\n\n- Releases are cut on Tuesdays\n")
    _seed(store, 45)
    store.close()
    out = hook(root / ".memofs", start_payload("t1", root))
    context = _context_of(out.stdout)
    assert "Releases are cut on Tuesdays" in context and CUT.search(context) is None  # all fits: no cut line
    assert sum(1 for line in context.splitlines() if line.startswith("- Service ")) == 30


def test_a_core_md_of_one_long_line_is_cut_inside_it():
    core = "x" * 20_000
    fitted = fit(core, "# Project memory (p): the top 1 active memories\n\n- one memory [high]")
    text = fitted.text()
    assert len(text) <= CONTEXT_MAX_CHARS and "- one memory [high]" in text
    assert fitted.core_shown > 0 and "memory/core.md cut" in fitted.cut_line()


def test_only_memories_cut_says_only_that():
    lines = [f"- memory {i} " + "w" * 300 for i in range(60)]
    fitted = fit("# rules\n\n- short rule", "# Project memory (p): the top 60 active memories\n\n" + "\n".join(lines))
    line = fitted.cut_line()
    assert "core.md" not in line and f"{fitted.memories_dropped} memories not shown" in line
    assert 0 < fitted.memories_dropped < 60 and len(fitted.text()) <= CONTEXT_MAX_CHARS


_line = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85"
                                                                                "\u2028\u2029"),
                min_size=0, max_size=700)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(core_lines=st.lists(_line, max_size=60), memories=st.lists(_line.map(lambda s: "- " + s), max_size=60),
       max_chars=st.integers(2 * CUT_LINE_RESERVE + 120, 20_000), held=st.booleans())
def test_fit_stays_in_the_budget_and_says_what_it_cut(core_lines, memories, max_chars, held):
    core = "\n".join(core_lines)
    text = "# Project memory (p): the top N active memories\n\nnotice\n\n" + "\n".join(memories)
    if held:
        text += "\n\n(2 remembered entries left out: worded as instructions)"
    fitted = fit(core, text, max_chars, reserve=100)
    out = fitted.text()
    assert len(out) <= max_chars - 100
    shown = [line for line in fitted.memories.splitlines() if line.startswith("- ")]
    given_lines = [line for line in text.strip().splitlines() if line.startswith("- ")]
    assert shown == given_lines[:len(shown)]  # the top ones, in order
    assert len(shown) + fitted.memories_dropped == len(given_lines)
    assert fitted.core.startswith(core.strip()[:fitted.core_shown].rstrip()) if fitted.core_shown else True
    assert bool(fitted.cut_line()) == (fitted.core_shown < len(core.strip()) or fitted.memories_dropped > 0)
    if len(core.strip()) + len(text.strip()) + 2 <= max_chars - 100:
        assert not fitted.cut and out.endswith(text.strip())
    room = (max_chars - 100 - CUT_LINE_RESERVE - 4) * MEMORY_SHARE
    head = text.strip().split("\n- ", 1)[0]
    if given_lines and len(head) + 1 + len(given_lines[0]) + 60 <= room:
        assert shown  # the share kept for the memories holds at least the first one
