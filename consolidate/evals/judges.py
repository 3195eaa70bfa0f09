"""Measure a judge chain against labeled notes (``consolidate eval``).

A label file is JSONL, one note per line: ``id``, ``content``, optional ``section``, ``verdict``
(``keep`` or ``drop``), optional ``type`` (the keeper's memory type), optional ``session_id`` (what the
tuning / validation split of consolidate/evals/split.py is drawn over). A file labeled by two
annotators (``realnotes-dev-labels-2.jsonl``: ``verdict_a``, ``verdict_b``, ``agree``, and ``verdict`` /
``type`` the agreed ones) is read the same way: a line whose ``verdict`` is null and whose ``agree``
is false is a disagreement, left out and counted. :func:`read_label_file` reads it,
:func:`evaluate` runs a :class:`consolidate.judges.chain.JudgeChain` over it in the chain's normal batches, and
:func:`render_report` prints the result.

What is measured, and why beside a baseline: about 90% of real notes are drops, so a judge that drops
everything is 90% accurate and useless. The report puts the trivial always-drop judge's figures
beside the judge's own. The positive class is ``keep`` throughout.

Unjudged notes (no judge in the chain answered) are never counted as drops: they are reported
apart, and every metric is computed over the judged notes only. Notes the secret gate blocks are not
sent to any judge (the same guarantee as a consolidation run) and are reported apart the same way.

Metric sources:

- precision, recall and F1 (the harmonic mean of the two, F with beta = 1): C. J. van Rijsbergen,
  *Information Retrieval*, 2nd ed., Butterworths, 1979, chapter 7 ("Evaluation"); written here over
  the confusion counts as P = TP / (TP + FP), R = TP / (TP + FN), F1 = 2 TP / (2 TP + FP + FN);
- Cohen's kappa: J. Cohen, "A coefficient of agreement for nominal scales", *Educational and
  Psychological Measurement* 20(1), 1960, pp. 37-46: kappa = (p_o - p_e) / (1 - p_e), with p_o the
  observed agreement and p_e the agreement expected by chance from the two raters' marginals;
- accuracy: (TP + TN) / N.

A metric whose denominator is zero is undefined and reported as ``None`` (``n/a``), never as 0 or 1.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.core.vocab import VERDICTS
from consolidate.core.jsonl import read_objects
from consolidate.judges.base import ChainResult, Item, JudgeContext
from consolidate.evals.policy import label_keep_outcomes, policy_outcomes, summarize
from consolidate.evals.policy import render, render_label_keeps
from consolidate.rules import secrets


@dataclass
class LabeledNote:
    """One line of a label file."""

    id: str
    content: str
    verdict: str
    section: str | None = None
    type: str | None = None
    session_id: str | None = None


@dataclass
class LabelFile:
    """One label file as read: its ``notes`` (in file order) and how many lines were left out as
    ``disagreements`` (two annotators, no agreed verdict)."""

    path: str
    notes: list[LabeledNote]
    disagreements: int = 0


def load_labels(path: str | Path, limit: int | None = None) -> list[LabeledNote]:
    """The notes of :func:`read_label_file`."""
    return read_label_file(path, limit).notes


def read_label_file(path: str | Path, limit: int | None = None) -> LabelFile:
    """Read a JSONL label file (all of it, or its first ``limit`` labeled notes).

    A line with a null ``verdict`` and ``agree`` false (two annotators who disagreed) is left out and
    counted in ``disagreements``; it does not count towards ``limit``. Raises BadInput for an
    unreadable or empty file or a bad ``limit``, and InvalidImportLine (with ``path`` and ``line``)
    for a line that is not a JSON object, has no ``id`` or an ``id`` seen before, has no non-empty
    string ``content``, a ``verdict`` other than keep/drop (null without ``agree`` false included), or
    a non-string ``section``/``type``/``session_id``. Blank lines are skipped."""
    if limit is not None and limit < 1:
        raise BadInput(f"--limit must be at least 1 (got {limit})")

    p = Path(path)
    notes: list[LabeledNote] = []
    seen: set[str] = set()
    disagreements = 0
    for _lineno, obj, bad in read_objects(p, what="label file"):
        nid = obj.get("id")
        if isinstance(nid, bool) or not isinstance(nid, (str, int)) or not str(nid).strip():
            raise bad("no `id` (a string or a number is required)")
        nid = str(nid).strip()
        if nid in seen:
            raise bad(f"id {nid!r} appears twice")
        content = obj.get("content")
        if not isinstance(content, str) or not content.strip():
            raise bad("no `content` (a non-empty string is required)")
        verdict = obj.get("verdict")
        if verdict is None and obj.get("agree") is False:
            seen.add(nid)
            disagreements += 1
            continue
        verdict = verdict.strip().lower() if isinstance(verdict, str) else verdict
        if verdict not in VERDICTS:
            raise bad(f"`verdict` must be keep or drop (got {obj.get('verdict')!r})")
        for key in ("section", "type", "session_id"):
            if obj.get(key) is not None and not isinstance(obj[key], str):
                raise bad(f"`{key}` must be a string when present")
        seen.add(nid)
        notes.append(LabeledNote(nid, content, verdict, obj.get("section") or None, obj.get("type") or None,
                                 obj.get("session_id") or None))
        if limit is not None and len(notes) >= limit:
            break
    if not notes:
        raise BadInput(f"label file {p} holds no labeled note", path=str(p))
    return LabelFile(str(p), notes, disagreements)


@dataclass
class Confusion:
    """Counts over judged notes, ``keep`` being the positive class: ``tp`` kept keepers, ``fp``
    kept drops, ``fn`` dropped keepers, ``tn`` dropped drops."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn


def confusion(gold: dict[str, str], predicted: dict[str, str]) -> Confusion:
    """The confusion counts of ``predicted`` (id -> keep|drop) against ``gold`` (id -> keep|drop),
    over the ids of ``predicted`` only (unjudged notes are simply absent from it)."""
    c = Confusion()
    for nid, pred in predicted.items():
        g = gold[nid]
        if pred == "keep":
            c.tp += g == "keep"
            c.fp += g == "drop"
        else:
            c.fn += g == "keep"
            c.tn += g == "drop"
    return c


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


def accuracy(c: Confusion) -> float | None:
    """(TP + TN) / N."""
    return _ratio(c.tp + c.tn, c.n)


def keep_precision(c: Confusion) -> float | None:
    """TP / (TP + FP) (van Rijsbergen 1979, ch. 7); None when nothing was kept."""
    return _ratio(c.tp, c.tp + c.fp)


def keep_recall(c: Confusion) -> float | None:
    """TP / (TP + FN) (van Rijsbergen 1979, ch. 7); None when no note is a keeper."""
    return _ratio(c.tp, c.tp + c.fn)


def keep_f1(c: Confusion) -> float | None:
    """2 TP / (2 TP + FP + FN), the harmonic mean of precision and recall (van Rijsbergen's F
    with beta = 1). Written over the counts it is defined whenever a keeper exists on either side, and
    is 0 when keepers exist but none was kept; None when there are no keepers at all."""
    return _ratio(2 * c.tp, 2 * c.tp + c.fp + c.fn)


def cohen_kappa(c: Confusion) -> float | None:
    """Cohen's kappa (Cohen 1960): (p_o - p_e) / (1 - p_e), where p_o = (TP + TN) / N and
    p_e = P(judge keeps) * P(label keep) + P(judge drops) * P(label drop). 0 is chance-level
    agreement (a judge with one constant answer scores exactly 0), 1 perfect agreement. None when
    p_e = 1 (both raters gave one and the same answer to every note) or N = 0."""
    n = c.n
    if n == 0:
        return None
    p_o = (c.tp + c.tn) / n
    judge_keep, label_keep = (c.tp + c.fp) / n, (c.tp + c.fn) / n
    p_e = judge_keep * label_keep + (1 - judge_keep) * (1 - label_keep)
    return _ratio(p_o - p_e, 1 - p_e)


def metrics(c: Confusion) -> dict[str, float | None]:
    """Every metric of one confusion table."""
    return {"accuracy": accuracy(c), "keep_precision": keep_precision(c), "keep_recall": keep_recall(c),
            "keep_f1": keep_f1(c), "cohen_kappa": cohen_kappa(c)}


def always_drop(c: Confusion) -> Confusion:
    """The confusion table the trivial always-drop judge would get on the same notes."""
    return Confusion(tp=0, fp=0, fn=c.tp + c.fn, tn=c.fp + c.tn)


def per_100(value: float, notes: int) -> float | None:
    """``value`` scaled to 100 notes; None for no note."""
    return _ratio(value * 100, notes)


@dataclass
class EvalReport:
    """The result of :func:`evaluate`. ``predicted``: id -> keep|drop for judged notes;
    ``unjudged``: id -> reasons; ``blocked``: ids the secret gate kept from every judge;
    ``usage``: calls (answered + failed), prompt/completion tokens, seconds (wall clock of the chain)."""

    judges: list[str]
    labels: str
    total: int
    gold_keeps: int
    predicted: dict[str, str]
    unjudged: dict[str, list[str]]
    blocked: list[str]
    usage: dict[str, Any]
    confusion: Confusion
    metrics: dict[str, float | None]
    baseline: dict[str, float | None]
    keep_recall_by_type: dict[str, dict[str, int]] = field(default_factory=dict)
    #: type -> confusion and metrics of "kept as this type" against "labeled keep of this type"
    metrics_by_type: dict[str, dict[str, Any]] = field(default_factory=dict)
    as_run: bool = False
    write_policy: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what ``consolidate eval --json`` prints)."""
        judged = len(self.predicted)
        return {
            "labels": self.labels, "judges": self.judges, "notes": self.total, "label_keeps": self.gold_keeps,
            "judged": judged, "unjudged": len(self.unjudged), "blocked_by_secret_gate": len(self.blocked),
            "metrics": self.metrics, "always_drop_baseline": self.baseline, "confusion": asdict(self.confusion),
            "keep_recall_by_type": self.keep_recall_by_type, "metrics_by_type": self.metrics_by_type,
            "usage": self.usage,
            "per_100_notes": {k: per_100(self.usage[k], self.total)
                              for k in ("calls", "prompt_tokens", "completion_tokens", "seconds")},
            "circuit_breaker": "whole run" if self.as_run else "reset per batch",
            "unjudged_reasons": _reason_counts(self.unjudged),
            "verdicts": self.predicted,
            "write_policy": self.write_policy,
        }


def _reason_counts(unjudged: dict[str, list[str]]) -> dict[str, int]:
    """How many unjudged notes share each list of reasons (one per judge that failed them)."""
    counts: dict[str, int] = {}
    for reasons in unjudged.values():
        key = " | ".join(reasons) if reasons else "no reason recorded"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def usage_snapshot(chain) -> dict[int, dict[str, Any]]:
    """A copy of the cumulative ``usage`` of every judge of ``chain`` that keeps one (by ``id``)."""
    return {id(j): dict(j.usage) for j in chain.judges if j.usage is not None}


def usage_of(chain, events: list[dict[str, Any]], seconds: float,
             before: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Calls and tokens of one chain run. Calls are the chain's ``judge.call`` events (answered)
    plus its ``judge.failed`` events (a call that failed). Tokens come from each judge's cumulative
    ``usage`` (the API judge counts a call whose answer was then refused, e.g. cut at max_tokens),
    taken as the difference from ``before`` (a :func:`usage_snapshot`) when a judge has it,
    else from the ``prompt_tokens``/``completion_tokens`` of the ``judge.call`` events (a judge's
    ``last_call``)."""
    answered = sum(1 for e in events if e.get("event") == "judge.call")
    failed = sum(1 for e in events if e.get("event") == "judge.failed")
    tokens = {"prompt_tokens": 0, "completion_tokens": 0}
    start = before or {}
    for judge in chain.judges:
        usage = judge.usage
        if usage is not None and "prompt_tokens" in usage:
            prev = start.get(id(judge), {})
            for k in tokens:
                tokens[k] += int(usage.get(k, 0) or 0) - int(prev.get(k, 0) or 0)
        else:
            for e in events:
                if e.get("event") == "judge.call" and e.get("judge") == judge.name:
                    for k in tokens:
                        tokens[k] += int(e.get(k, 0) or 0)
    return {"calls": answered + failed, "answered_calls": answered, "failed_calls": failed, **tokens,
            "seconds": round(seconds, 3),
            "call_seconds": round(sum(float(e.get("seconds", 0) or 0) for e in events
                                      if e.get("event") in ("judge.call", "judge.failed")), 3)}


def evaluate(chain, labels: list[LabeledNote], *, context=None, deadline: float | None = None,
             labels_name: str = "", secret_gate: bool = True, as_run: bool = False) -> EvalReport:
    """Run ``chain`` over ``labels`` (in the chain's own batches, in file order) and measure it.

    ``context`` is the JudgeContext (default: no core rules, project ``default``); ``deadline`` an
    absolute time box for the whole run (None: none). With ``secret_gate`` (the default) a note
    holding secret material is not sent to any judge, as in a consolidation run, and is reported in
    ``blocked``. Never raises for a judge's failure: its notes end unjudged, with reasons.

    By default every batch is offered to every judge of the chain: the chain's circuit breaker (a
    judge that failed once is skipped for the rest of a run) is reset between batches, so that one
    malformed answer does not leave the rest of the label file unmeasured. ``as_run=True`` keeps the
    breaker across batches, as a consolidation run does."""

    context = context or JudgeContext()
    gold = {n.id: n.verdict for n in labels}
    blocked = [n.id for n in labels if secret_gate and secrets.scan(n.content)]
    sent = [n for n in labels if n.id not in set(blocked)]
    items = [Item(key=i, content=n.content, section=n.section) for i, n in enumerate(sent)]
    before = usage_snapshot(chain)
    started = time.monotonic()
    if as_run:
        result = chain.run(items, context, deadline=deadline)
    else:
        result = ChainResult()
        for batch in chain.batches(items):
            chain.failed.clear()  # the breaker, reset: each batch meets every judge
            part = chain.run([item for item, _ in batch], context, deadline=deadline)
            result.judged.update(part.judged)
            result.unjudged.update(part.unjudged)
            result.events.extend(part.events)
            result.judges_used.extend(j for j in part.judges_used if j not in result.judges_used)
    seconds = time.monotonic() - started
    predicted = {sent[k].id: j.verdict.verdict for k, j in sorted(result.judged.items())}
    unjudged = {sent[k].id: reasons for k, reasons in sorted(result.unjudged.items())}
    c = confusion(gold, predicted)
    by_type: dict[str, dict[str, int]] = {}
    for n in sent:
        if n.verdict == "keep" and n.id in predicted:
            t = by_type.setdefault(n.type or "untyped", {"labeled": 0, "kept": 0})
            t["labeled"] += 1
            t["kept"] += predicted[n.id] == "keep"
    kept_type = {sent[k].id: j.verdict.type for k, j in result.judged.items() if j.verdict.verdict == "keep"}

    outcomes = policy_outcomes(result.judged, {k: n.content for k, n in enumerate(sent)},
                               {k: n.session_id for k, n in enumerate(sent) if n.session_id},
                               {k: n.section for k, n in enumerate(sent)})
    write_policy = summarize({sent[k].id: o for k, o in outcomes.items()}, gold)
    write_policy["label_keeps"] = label_keep_outcomes(labels)
    return EvalReport(judges=list(chain.names), labels=labels_name, total=len(labels),
                      gold_keeps=sum(v == "keep" for v in gold.values()), predicted=predicted, unjudged=unjudged,
                      blocked=blocked, usage=usage_of(chain, result.events, seconds, before), confusion=c,
                      metrics=metrics(c), baseline=metrics(always_drop(c)),
                      keep_recall_by_type=dict(sorted(by_type.items())),
                      metrics_by_type=metrics_per_type(labels, predicted, kept_type), as_run=as_run,
                      write_policy=write_policy)


def metrics_per_type(labels: list[LabeledNote], predicted: dict[str, str],
                     kept_type: dict[str, str | None]) -> dict[str, dict[str, Any]]:
    """Per memory type T, one against the rest over the judged notes: positive in the labels is
    "labeled keep of type T", positive for the judge is "kept, as type T" (a keeper kept as another
    type counts as a miss for its labeled type and a false keep for the judge's type). Returns
    ``{T: {"confusion": {...}, **metrics}}`` for every type either side used."""
    types = sorted({n.type for n in labels if n.verdict == "keep" and n.type} | {t for t in kept_type.values() if t})
    out: dict[str, dict[str, Any]] = {}
    by_id = {n.id: n for n in labels}
    for t in types:
        c = Confusion()
        for nid, pred in predicted.items():
            gold_pos = by_id[nid].verdict == "keep" and by_id[nid].type == t
            pred_pos = pred == "keep" and kept_type.get(nid) == t
            c.tp += gold_pos and pred_pos
            c.fp += pred_pos and not gold_pos
            c.fn += gold_pos and not pred_pos
            c.tn += not gold_pos and not pred_pos
        out[t] = {"confusion": asdict(c), **metrics(c)}
    return out


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "n/a"
    return f"{0.0 if abs(x) < 1e-9 else x:.{digits}f}"  # no "-0.000" from rounding noise


def _fmt_num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.1f}"


def render_report(report: EvalReport) -> str:
    """The human-readable report: metrics beside the always-drop baseline, unjudged notes apart,
    calls, tokens and seconds in total and per 100 notes."""
    d = report.to_dict()
    judged = d["judged"]
    lines = [f"judge chain: {', '.join(report.judges) or '(empty)'} (a failed judge is skipped "
             + ("for the rest of the run)" if report.as_run else "for the rest of its batch only)"),
             f"labels: {report.labels or '-'}: {report.total} notes ({report.gold_keeps} keep,"
             f" {report.total - report.gold_keeps} drop)",
             f"judged: {judged} of {report.total}; unjudged: {d['unjudged']} (not counted as drops)"
             + (f"; blocked by the secret gate: {d['blocked_by_secret_gate']}" if report.blocked else "")]
    if judged < report.total:
        lines.append(f"metrics below are over the {judged} judged notes only")
    lines.append("")
    lines.append(f"{'':16}{'judge':>8}{'always-drop':>13}")
    names = (("accuracy", "accuracy"), ("keep precision", "keep_precision"), ("keep recall", "keep_recall"),
             ("keep F1", "keep_f1"), ("Cohen's kappa", "cohen_kappa"))
    for label, key in names:
        lines.append(f"{label:16}{_fmt(report.metrics[key]):>8}{_fmt(report.baseline[key]):>13}")
    c = report.confusion
    lines.append("")
    lines.append(f"confusion (keep = positive): {c.tp} kept keepers, {c.fp} kept drops,"
                 f" {c.fn} dropped keepers, {c.tn} dropped drops")
    if report.keep_recall_by_type:
        lines.append("keepers kept by type: " + ", ".join(f"{t} {v['kept']}/{v['labeled']}"
                                                          for t, v in report.keep_recall_by_type.items()))
    if report.metrics_by_type:
        lines.append(f"{'by type (kept as T vs labeled keep of T)':<42}{'P':>7}{'R':>7}{'F1':>7}{'kappa':>7}  labeled/kept")
        for t, m in report.metrics_by_type.items():
            cc = m["confusion"]
            lines.append(f"  {t:<40}{_fmt(m['keep_precision']):>7}{_fmt(m['keep_recall']):>7}{_fmt(m['keep_f1']):>7}"
                         f"{_fmt(m['cohen_kappa']):>7}  {cc['tp'] + cc['fn']}/{cc['tp'] + cc['fp']}")
    if report.write_policy is not None:

        lines.extend(render(report.write_policy))
        if report.write_policy.get("label_keeps"):
            lines.extend(render_label_keeps(report.write_policy["label_keeps"]))
    u, p = report.usage, d["per_100_notes"]
    lines.append(f"cost: {u['calls']} calls ({u['failed_calls']} failed), {u['prompt_tokens']:,} prompt tokens,"
                 f" {u['completion_tokens']:,} completion tokens, {u['seconds']:.1f} s"
                 + (" (a failed call may not report its tokens)" if u["failed_calls"] else ""))
    lines.append(f"per 100 notes: {_fmt_num(p['calls'])} calls, {_fmt_num(p['prompt_tokens'])} prompt tokens,"
                 f" {_fmt_num(p['completion_tokens'])} completion tokens, {_fmt_num(p['seconds'])} s")
    if report.unjudged:
        lines.append("unjudged because: " + "; ".join(f"{n} x {r[:160]}" for r, n in list(d["unjudged_reasons"].items())[:3]))
    return "\n".join(lines)
