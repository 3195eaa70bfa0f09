"""Measure the contradiction check's compare prompt against labeled pairs (``consolidate eval --pairs``).

A pair file is JSONL, one pair per line: ``id``, ``type`` (the memory type both statements share),
``old`` (the statement already stored), ``new`` (the statement about to be stored), ``relation``
(the gold answer: ``duplicate``, ``updates``, ``contradicts`` or ``unrelated``), optional ``also``
(other relations a careful reader would accept, e.g. ``updates`` beside ``contradicts`` for a bare
new value with no word saying it changed), optional ``category`` (how the pair was written:
``same-fact``, ``update``, ``conflict``, ``unrelated``, ``near-miss``) and ``source`` (where it was drawn
from). :func:`evaluate_pairs` sends the pairs, in file order, through
:func:`consolidate.judges.chain.compare_pairs` (the compare prompt of every judge kind, ``MAX_PAIRS_PER_CALL`` pairs
a call) and scores each answer: *strict* when it is the gold relation, *accepted* when it is the gold
relation or one of ``also``. Accuracy is reported per gold relation and per category, with the
confusion of gold against answered relations. Unanswered pairs are reported apart, never scored.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.core.vocab import COMPARE_RELATIONS
from consolidate.core.jsonl import read_objects
from consolidate.judges.base import JudgeContext, Pair


@dataclass
class LabeledPair:
    """One line of a pair file."""

    id: str
    type: str
    old: str
    new: str
    relation: str
    also: list[str] = field(default_factory=list)
    category: str | None = None
    source: str | None = None


def load_pairs(path: str | Path, limit: int | None = None) -> list[LabeledPair]:
    """Read a JSONL pair file (all of it, or its first ``limit`` pairs). Raises BadInput for an
    unreadable or empty file or a bad ``limit``, and InvalidImportLine
    (``path``, ``line``) for a line without a unique ``id``, non-empty ``old``/``new``/``type`` strings,
    or with a ``relation`` (or an ``also`` entry) outside COMPARE_RELATIONS."""
    if limit is not None and limit < 1:
        raise BadInput(f"--limit must be at least 1 (got {limit})")

    pairs: list[LabeledPair] = []
    seen: set[str] = set()
    for _lineno, obj, bad in read_objects(Path(path), what="pair file"):
        pid = str(obj.get("id", "")).strip()
        if not pid or pid in seen:
            raise bad("no `id`, or an `id` seen before")
        seen.add(pid)
        for key in ("type", "old", "new"):
            if not isinstance(obj.get(key), str) or not obj[key].strip():
                raise bad(f"no `{key}` (a non-empty string is required)")
        rel = obj.get("relation")
        also = obj.get("also") or []
        if rel not in COMPARE_RELATIONS or not isinstance(also, list) or any(a not in COMPARE_RELATIONS for a in also):
            raise bad(f"`relation` and `also` must be among {', '.join(COMPARE_RELATIONS)} (got {rel!r}, {also!r})")
        pairs.append(LabeledPair(pid, obj["type"], obj["old"], obj["new"], rel, list(also),
                                 obj.get("category"), obj.get("source")))
        if limit is not None and len(pairs) >= limit:
            break
    if not pairs:
        raise BadInput(f"{path}: no pairs")
    return pairs


@dataclass
class PairReport:
    """What :func:`evaluate_pairs` measured. ``answers``: pair id -> relation answered (absent: no
    judge answered); ``by_relation`` / ``by_category``: name -> ``{"pairs", "answered", "strict",
    "accepted"}`` counts; ``confusion``: gold -> answered -> count; ``seconds``: wall time."""

    total: int
    answers: dict[str, str]
    by_relation: dict[str, dict[str, int]]
    by_category: dict[str, dict[str, int]]
    confusion: dict[str, dict[str, int]]
    judges: list[str]
    calls: int
    seconds: float
    events: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def evaluate_pairs(chain, pairs: list[LabeledPair], context=None, deadline: float | None = None) -> PairReport:
    """Ask ``chain`` (a JudgeChain) how each labeled pair relates and score the answers (see the
    module docstring). Never raises for a judge's failure (the pair stays unanswered), except
    CassetteMiss, which a replayed CLI judge raises for a changed prompt."""

    started = time.time()
    answered, events = chain.compare([Pair(p.id, p.new, p.old, p.type) for p in pairs], context or JudgeContext(),
                                     deadline)
    answers = {k: rel for k, (rel, _judge) in answered.items()}
    by_relation: dict[str, dict[str, int]] = {}
    by_category: dict[str, dict[str, int]] = {}
    confusion: dict[str, dict[str, int]] = {g: {a: 0 for a in COMPARE_RELATIONS} for g in COMPARE_RELATIONS}
    for p in pairs:
        got = answers.get(p.id)
        for table, key in ((by_relation, p.relation), (by_category, p.category or "-")):
            row = table.setdefault(key, {"pairs": 0, "answered": 0, "strict": 0, "accepted": 0})
            row["pairs"] += 1
            if got is not None:
                row["answered"] += 1
                row["strict"] += got == p.relation
                row["accepted"] += got == p.relation or got in p.also
        if got is not None:
            confusion[p.relation][got] += 1
    calls = sum(1 for e in events if e.get("event") == "judge.call")
    judges = sorted({j for _rel, j in answered.values()})
    return PairReport(len(pairs), answers, by_relation, by_category, confusion, judges, calls,
                      round(time.time() - started, 3), events)


def _ratio(n: int, d: int) -> str:
    return f"{n / d:.3f}" if d else "n/a"


def render_pair_report(report: PairReport, name: str = "") -> str:
    """The report as text: accuracy per gold relation and per category (strict, and accepting the
    ``also`` relations), then the confusion of gold (rows) against answered (columns)."""
    answered = len(report.answers)
    lines = [f"pairs: {name}: {report.total}; answered: {answered}; unanswered: {report.total - answered}"
             f" (not scored); judges: {', '.join(report.judges) or 'none'}; {report.calls} calls, {report.seconds:.1f} s",
             ""]
    for title, table in (("gold relation", report.by_relation), ("category", report.by_category)):
        lines.append(f"{title:<14} {'pairs':>5} {'answered':>8} {'strict':>7} {'accepted':>8}")
        order = [k for k in COMPARE_RELATIONS if k in table] + sorted(k for k in table if k not in COMPARE_RELATIONS)
        tot = {"pairs": 0, "answered": 0, "strict": 0, "accepted": 0}
        for key in order:
            row = table[key]
            for k in tot:
                tot[k] += row[k]
            lines.append(f"{key:<14} {row['pairs']:>5} {row['answered']:>8} {_ratio(row['strict'], row['answered']):>7}"
                         f" {_ratio(row['accepted'], row['answered']):>8}")
        lines.append(f"{'all':<14} {tot['pairs']:>5} {tot['answered']:>8} {_ratio(tot['strict'], tot['answered']):>7}"
                     f" {_ratio(tot['accepted'], tot['answered']):>8}")
        lines.append("")
    lines.append("confusion (rows: gold, columns: answered)")
    lines.append(f"{'':<12} " + " ".join(f"{a:>11}" for a in COMPARE_RELATIONS))
    for g in COMPARE_RELATIONS:
        lines.append(f"{g:<12} " + " ".join(f"{report.confusion[g][a]:>11}" for a in COMPARE_RELATIONS))
    return "\n".join(lines)
