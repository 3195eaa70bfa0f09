"""``consolidate eval --curate-groups FILE``: measure a judge chain's curation answers (prompts/curate-v3.md, or the version selected)
against labeled groups of memories, as ``--pairs`` measures the compare prompt.

The file is JSONL, one group per line::

    {"id": "g1", "memories": [
      {"id": "a", "statement": "...", "type": "fact", "evidence": "observed-success", "last_confirmed": "2026-11-02",
       "action": "keep" | "drop" | "merge" | "conflict", "into": "<merge: the id that stays>",
       "with": "<conflict: the other id>"}, ...]}

Each group is sent as it stands (one call, the members in file order) through the chain's curating
judges, answered and checked exactly as ``consolidate curate`` does (an answer the check rejects
defers the group). Figures over the members of the answered groups: ``accuracy`` (the action and, for
a merge or a conflict, the other member both right; a merge of the right pair with the other member
kept counts as ``merge_pair`` right, with a wrong survivor), precision and recall per action, and
``lost``: memories labeled keep or conflict that the judge dropped or merged away (the costly error:
a memory gone from the agent's view). ``deferred_groups`` counts the groups no judge answered.

Raises BadInput for a file that is not this shape (the line number and what is wrong).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.core.vocab import CONFLICT, CURATE_ACTIONS, DROP, KEEP, MERGE
from consolidate.judges.base import CurateMember, JudgeContext
from consolidate.judges.registry import curate_prompt_version
from consolidate.model.run_lines import counted


def load_groups(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The labeled groups of ``path`` (at most ``limit``), each ``{"id", "memories": [...]}`` as the
    module docstring shows. Raises BadInput for a missing file or a malformed line."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise BadInput(f"cannot read {p}: {exc.strerror or exc}") from None
    groups = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            g = json.loads(line)
        except ValueError as exc:
            raise BadInput(f"{p}:{n}: not JSON ({exc})") from None
        _check_group(g, f"{p}:{n}")
        groups.append(g)
        if limit is not None and len(groups) >= limit:
            break
    return groups


def _check_group(g: Any, where: str) -> None:
    members = g.get("memories") if isinstance(g, dict) else None
    if not isinstance(members, list) or len(members) < 1 or not all(isinstance(m, dict) for m in members):
        raise BadInput(f"{where}: a group is an object with a list of memories")
    ids = [m.get("id") for m in members]
    if len(set(map(str, ids))) != len(ids):
        raise BadInput(f"{where}: memory ids repeat")
    for m in members:
        if not isinstance(m.get("statement"), str) or m.get("action") not in CURATE_ACTIONS:
            raise BadInput(f"{where}: memory {m.get('id')!r} needs a statement and an action ({', '.join(CURATE_ACTIONS)})")
        target = m.get("into") if m["action"] == MERGE else m.get("with") if m["action"] == CONFLICT else None
        if m["action"] in (MERGE, CONFLICT) and target not in ids:
            raise BadInput(f"{where}: memory {m.get('id')!r} ({m['action']}) names no other memory of its group")


@dataclass
class CurateReport:
    """What :func:`evaluate_groups` measured (see the module docstring); ``rows``: per member
    ``{"group", "id", "expected", "got", "target_expected", "target_got"}``."""

    groups: int = 0
    memories: int = 0
    deferred_groups: int = 0
    prompt_version: str = ""
    answered: int = 0
    correct: int = 0
    merge_pair: int = 0
    lost: int = 0
    per_action: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def accuracy(self) -> float | None:
        """Right actions (and targets) over the members of the answered groups; None for none."""
        return self.correct / self.answered if self.answered else None

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (with ``accuracy``)."""
        return {**asdict(self), "accuracy": self.accuracy}


def evaluate_groups(chain, groups: list[dict[str, Any]], context: JudgeContext,
                    deadline: float | None = None) -> CurateReport:
    """Ask ``chain`` (a JudgeChain: ``chain.curate``) for each labeled group and score the answers
    (see the module docstring). Never raises for a judge's failure (its group is deferred)."""
    report = CurateReport(groups=len(groups), prompt_version=curate_prompt_version())
    for g in groups:
        labels = g["memories"]
        report.memories += len(labels)
        short = {str(m["id"]): f"m{i}" for i, m in enumerate(labels, 1)}
        back = {v: k for k, v in short.items()}
        members = [CurateMember(short[str(m["id"])], m["statement"], str(m.get("type") or "fact"),
                                str(m.get("evidence") or ""), str(m.get("last_confirmed") or "")) for m in labels]
        got = chain.curate(members, context, deadline)
        report.events += got.events
        if got.actions is None:
            report.deferred_groups += 1
            continue
        for m in labels:
            a = got.actions.get(short[str(m["id"])])
            action = a.action if a is not None else KEEP
            target = (a.into if action == MERGE else a.with_ if action == CONFLICT else None) if a is not None else None
            want = m.get("into") if m["action"] == MERGE else m.get("with") if m["action"] == CONFLICT else None
            report.rows.append({"group": g.get("id"), "id": m["id"], "expected": m["action"], "got": action,
                                "target_expected": want, "target_got": back.get(target) if target else None})
    _score(report, {str(g.get("id")): {str(m["id"]): m for m in g["memories"]} for g in groups})
    return report


def _score(report: CurateReport, labels: dict[str, dict[str, dict]]) -> None:
    """Fill the report's figures from its rows."""
    report.answered = len(report.rows)
    got_of = {(str(r["group"]), str(r["id"])): r for r in report.rows}
    for r in report.rows:
        same_target = r["target_expected"] is None or str(r["target_expected"]) == str(r["target_got"])
        if r["expected"] == r["got"] and same_target:
            report.correct += 1
        if r["expected"] in (KEEP, CONFLICT) and r["got"] in (DROP, MERGE):
            report.lost += 1
        if r["expected"] == MERGE and r["got"] != MERGE:
            other = got_of.get((str(r["group"]), str(r["target_expected"])))
            if other is not None and other["got"] == MERGE and str(other["target_got"]) == str(r["id"]):
                report.merge_pair += 1  # the right pair, merged the other way round
    for action in CURATE_ACTIONS:
        tp = sum(1 for r in report.rows if r["expected"] == action and r["got"] == action)
        predicted = sum(1 for r in report.rows if r["got"] == action)
        labeled = sum(1 for r in report.rows if r["expected"] == action)
        report.per_action[action] = {"labeled": labeled, "predicted": predicted,
                                     "precision": round(tp / predicted, 3) if predicted else None,
                                     "recall": round(tp / labeled, 3) if labeled else None}


def render_curate_report(report: CurateReport, source: str) -> str:
    """The report as the lines ``consolidate eval --curate-groups`` prints."""
    acc = f"{report.accuracy:.3f}" if report.accuracy is not None else "undefined"
    lines = [f"curation eval of {source} ({report.prompt_version}): {counted(report.groups, 'group')},"
             f" {counted(report.memories, 'memory', 'memories')}; {counted(report.deferred_groups, 'group')} deferred"
             " (no valid answer)",
             f"accuracy {acc} over {report.answered} answered memories; {report.lost} kept or conflicting memories"
             f" dropped or merged away; {report.merge_pair} merges of the right pair the other way round"]
    for action, d in report.per_action.items():
        p = "-" if d["precision"] is None else f"{d['precision']:.3f}"
        r = "-" if d["recall"] is None else f"{d['recall']:.3f}"
        lines.append(f"  {action:<9} labeled {d['labeled']:>3}  predicted {d['predicted']:>3}  precision {p}  recall {r}")
    return "\n".join(lines)

