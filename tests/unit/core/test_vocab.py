"""One copy of each vocabulary (issue 27 item 3; structure-v2 rule 4): the closed word lists are
defined in consolidate/core/vocab.py, and no other module of consolidate/ or judges/ writes a tuple,
list, set or dict literal (a ``Literal[...]`` subscript included) holding two or more words of one
list, nor a string spelling a whole list of three or more words joined for a model or a message
(``"low|medium|high"``; "keep or drop" is prose).
Prompts (prompts/*.md) and docstrings are text and keep their wording."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from consolidate.core import vocab
from paths import REPO

ROOT = REPO
OWNER = ROOT / "consolidate" / "core" / "vocab.py"

#: The vocabularies the walk checks, by name.
VOCABULARIES: dict[str, tuple[str, ...]] = {
    "memory types": vocab.MEMORY_TYPES,
    "evidence kinds": vocab.EVIDENCE_KINDS,
    "confidence levels": vocab.CONFIDENCE_LEVELS,
    "verdicts": vocab.VERDICTS,
    "compare relations": vocab.COMPARE_RELATIONS,
    "entity relations": vocab.ENTITY_RELATIONS,
    "memory statuses": vocab.MEMORY_STATUSES + vocab.REMOVED_STATUSES,
    "session outcomes": vocab.SESSION_OUTCOMES,
    "pending end statuses": vocab.END_PENDING,
}
_SEPARATORS = ("|", " | ", ", ", " or ", "/")


def _modules() -> list[Path]:
    return sorted(p for d in ("consolidate", "judges") for p in (ROOT / d).rglob("*.py") if p != OWNER)


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    out.add(id(stmt.value))
    return out


def copies(source: str, where: str = "<source>") -> list[str]:
    """Each literal of ``source`` holding two or more words of one vocabulary, and each string (not a
    docstring) spelling a whole vocabulary of three or more words joined by a separator, as
    ``where:line: vocabulary: words``."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            elts = [*(k for k in node.keys if k is not None), *node.values] if isinstance(node, ast.Dict) else node.elts
            words = {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            for name, vocabulary in VOCABULARIES.items():
                hit = sorted(words & set(vocabulary))
                if len(hit) >= 2:
                    found.append(f"{where}:{node.lineno}: {name}: {hit}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            for name, vocabulary in VOCABULARIES.items():
                if len(vocabulary) >= 3 and any(sep.join(vocabulary) in node.value for sep in _SEPARATORS):
                    found.append(f"{where}:{node.lineno}: {name} spelled out: {node.value[:60]!r}")
    return found


def test_no_module_but_vocab_lists_a_vocabulary():
    found = [c for p in _modules() for c in copies(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert not found, "import the list from consolidate/core/vocab.py:\n" + "\n".join(found)


@pytest.mark.parametrize("source", [
    'TYPES = ("decision", "fact")',
    'x = {"low": 0, "high": 2}',
    'def f(v):\n    return v in {"keep", "drop"}',
    'from typing import Literal\nV = Literal["keep", "drop"]',
    'rank = [("inferred", 0), ("user-stated", 2)]\nok = ["inferred", "user-stated"]',
    'd = {"x": "depends_on", "y": "uses"}',
    'desc = "duplicate | updates | contradicts | unrelated"',
    'msg = f"one of low|medium|high, got {x}"',
    'def ok(row):\n    return row["status"] not in ("queued", "running")',
    'RANK = {"quarantined": 0, "active": 1}',
    'choices = ["success", "failure", "aborted"]',
])
def test_the_walk_finds_a_copy(source):
    assert copies(source)


@pytest.mark.parametrize("source", [
    'x = ("decision",)',
    'def f():\n    """keep or drop, low|medium|high"""',
    'x = {"type": "fact", "status": "active"}',
    'from consolidate.core.vocab import MEMORY_TYPES\nx = (*MEMORY_TYPES, "other")',
])
def test_the_walk_lets_one_word_and_docstrings_pass(source):
    assert not copies(source)


def test_the_lists_hold_distinct_words_and_the_ranks_cover_them():
    for name, vocabulary in VOCABULARIES.items():
        assert len(set(vocabulary)) == len(vocabulary) >= 2, name
    assert set(vocab.EVIDENCE_RANK) == set(vocab.EVIDENCE_KINDS)
    assert [vocab.CONFIDENCE_RANK[c] for c in vocab.CONFIDENCE_LEVELS] == [0, 1, 2]
    assert set(vocab.RELATION_ALIASES.values()) <= set(vocab.ENTITY_RELATIONS)
    assert set(vocab.COMPARE_ALIASES.values()) <= set(vocab.COMPARE_RELATIONS)
    assert vocab.NOTE_KINDS == vocab.MEMORY_TYPES
    statuses = set(vocab.MEMORY_STATUSES)
    for group in (vocab.LIVE_STATUSES, vocab.RECALLED_STATUSES, vocab.ENDED_STATUSES, vocab.REVIEW_STATUSES):
        assert set(group) <= statuses
    assert set(vocab.LIVE_STATUSES) | set(vocab.ENDED_STATUSES) == statuses
    assert not statuses & set(vocab.REMOVED_STATUSES)


@pytest.mark.spawns
def test_vocab_imports_nothing_and_the_fast_hook_stays_light():
    """vocab.py imports nothing but __future__; importing it loads no other module of the project
    and not ``typing`` (the session-end fast hook may import it)."""
    tree = ast.parse(OWNER.read_text(encoding="utf-8"))
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in imports)
    code = ("import sys, json; before = set(sys.modules); import consolidate.core.vocab; "
            "print(json.dumps(sorted(set(sys.modules) - before)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                       cwd=ROOT).stdout)
    assert "typing" not in loaded and set(loaded) <= {"consolidate", "consolidate.core", "consolidate.core.vocab"}


def test_the_judge_schemas_spell_the_lists_as_before():
    """The answer schemas sent to a model are built from the tuples and read as they were written
    (a capable cassette is keyed on the exact request: tests/scenarios/test_capable_cassettes.py replays them)."""
    from consolidate.judges import prompting

    verdict = prompting.Verdicts.model_json_schema()["$defs"]["_ApiVerdict"]["properties"]
    assert verdict["verdict"]["description"] == "keep or drop"
    assert verdict["type"]["description"] == "decision|constraint|preference|recipe|failure|fact"
    assert verdict["evidence"]["description"] == "user-stated|observed-success|observed-failure|inferred"
    assert verdict["confidence"]["description"] == "low|medium|high"
    v9 = prompting.VerdictsV9.model_json_schema()["$defs"]["_RelationTriple"]["properties"]
    assert v9["relation"]["description"] == "depends_on|uses|part_of|replaces|conflicts_with"
    v1 = prompting.Relations.model_json_schema()["$defs"]["_Relation"]["properties"]
    assert v1["relation"]["description"] == "duplicate | contradicts | unrelated"
    v2 = prompting.CompareAnswer.model_json_schema()["$defs"]["_RelationV2"]["properties"]
    assert v2["relation"]["description"] == "duplicate | updates | contradicts | unrelated"
