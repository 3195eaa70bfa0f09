"""What the write policy does to a judge's keeps, by rule (``consolidate eval``; issue 13).

A judge's keep is not yet a memory: the write policy (stages/write_policy.py) may still reject it
(missing fields, trivia, too short), demote it to transient (temporary wording, very short) or
quarantine it (inferred, low confidence). On labeled notes, a note the annotator kept and the judge
kept but the policy rejected or demoted is a loss the judge's metrics do not show. This module runs
the real write-policy stage on the keeps of an evaluation, exactly as a consolidation run builds its
candidates (stages/judge.py: the judge's rewrite, type, fields, evidence; inferred evidence starts at
low confidence), and counts the outcomes by rule.

Beside the judge's keeps, :func:`label_keep_outcomes` runs the annotator's own keeps through the
policy the two ways a note reaches it without a judge's rewrite: as flagged notes (kind = the labeled
type; stages/flag_promote.py then the write policy) and as a judge's verbatim keep (statement = the
note, type = the labeled type, fields read from the text, observed evidence, high confidence). Every
one of them is a note a careful human kept, so each rejection or demotion there is a policy error.

A rule is the policy's reason with its particulars in parentheses removed ("too short to stand alone
(9 characters, about 1.0 words)" -> "too short to stand alone").
"""

from __future__ import annotations

import re
from typing import Any

from consolidate.core.vocab import CONFIDENCE_LEVELS, EVIDENCE_KINDS
from consolidate.rules.memory_types import TYPES, fields_from_text
from consolidate.model.plan import Candidate, Note, Plan, inferred_confidence, initial_confidence
from consolidate.pipeline.stages import flag_promote, write_policy

#: The policy's events and the outcome each means.
OUTCOMES = {"candidate.rejected": "rejected", "candidate.transient": "transient",
            "candidate.quarantined": "quarantined", "candidate.blocked": "blocked"}


#: The specifics quoted in a faithfulness reason (consolidate/rules/faithful.py: ``statement adds 'x',
#: 'y' and 2 more found in no note``), folded into one rule.
_ADDED = re.compile(r"(?<=^statement adds ).*(?= found in no note$)")


def rule_of(reason: str) -> str:
    """The rule of a policy reason: the reason without parenthesised particulars (nor the specifics a
    faithfulness reason quotes: ``statement adds <specifics> found in no note``), on one line."""
    out = " ".join(re.sub(r"\s*\([^()]*(?:\([^()]*\)[^()]*)*\)", "", reason or "").split())
    return fold_specifics(out) or "(no reason)"


def fold_specifics(reason: str) -> str:
    """``reason`` with the specifics a faithfulness reason quotes folded to ``<specifics>`` (so that
    the keeps it held count as one rule); any other reason unchanged."""
    return _ADDED.sub("<specifics>", reason)


def policy_outcomes(judged: dict[int, Any], contents: dict[int, str], sessions: dict[int, str] | None = None,
                    sections: dict[int, str | None] | None = None) -> dict[int, tuple[str, str]]:
    """``key -> (outcome, rule)`` for every keep in ``judged`` (chain result: key -> Judged), where
    outcome is ``written``, ``rejected``, ``transient``, ``quarantined`` or ``blocked``; ``contents``
    maps the keys of every note sent to the judge to its text, ``sessions`` and ``sections`` to its
    session id and section (the faithfulness rule reads a keep's notes and the other notes of its
    session, as in a run; a note without a session is a session of its own). Runs
    stages.write_policy on a throwaway plan."""
    plan = Plan(session_id="eval")
    for key, text in contents.items():
        section = (sections or {}).get(key)
        plan.notes.append(Note(id=key, session_id=(sessions or {}).get(key) or f"eval:{key}", content=text,
                               metadata={"section": section} if section else {}))
    for key, j in judged.items():
        v = j.verdict
        if v.verdict != "keep":
            continue
        evidence = v.evidence if v.evidence in EVIDENCE_KINDS else "inferred"
        confidence = v.confidence if v.confidence in CONFIDENCE_LEVELS else initial_confidence(evidence)
        confidence = inferred_confidence(evidence, confidence)
        plan.candidates.append(Candidate(
            note_ids=[key], statement=" ".join((v.statement or contents[key]).split()),
            type=(v.type or "").strip().lower() or "fact", source=f"judge:{j.judge}", evidence=evidence,
            confidence=confidence, reason=v.reason or "judged memorable", fields=dict(v.fields),
            isolated=j.isolated))
    write_policy.run(plan, None)
    out = {c.note_ids[0]: ("written", "") for c in plan.candidates}
    for e in plan.events:
        outcome = OUTCOMES.get(e["event"])
        if outcome and e.get("note_ids"):
            out[e["note_ids"][0]] = (outcome, rule_of(e.get("reason", "")))
    return out


def summarize(outcomes: dict[str, tuple[str, str]], gold: dict[str, str]) -> dict[str, Any]:
    """Counts over ``outcomes`` (note id -> (outcome, rule)) with the labels ``gold`` (id -> keep|drop):
    ``judge_keeps``, ``label_keeps_kept`` (kept by the judge and by the annotator), ``written`` and
    ``by_rule``: a list of ``{outcome, rule, label_keeps, all}``, most label keeps first."""
    by: dict[tuple[str, str], list[int]] = {}
    for nid, (outcome, rule) in outcomes.items():
        if outcome == "written":
            continue
        counts = by.setdefault((outcome, rule), [0, 0])
        counts[0] += gold.get(nid) == "keep"
        counts[1] += 1
    rows: list[dict[str, Any]] = [{"outcome": o, "rule": r, "label_keeps": c[0], "all": c[1]}
                                  for (o, r), c in by.items()]
    rows.sort(key=lambda x: (-x["label_keeps"], -x["all"], x["outcome"], x["rule"]))
    return {"judge_keeps": len(outcomes), "label_keeps_kept": sum(gold.get(n) == "keep" for n in outcomes),
            "written": sum(o == "written" for o, _ in outcomes.values()),
            "written_label_keeps": sum(o == "written" and gold.get(n) == "keep" for n, (o, _) in outcomes.items()),
            "by_rule": rows}


def render(summary: dict[str, Any]) -> list[str]:
    """The write-policy lines of the eval report."""
    s = summary
    lost = sum(r["label_keeps"] for r in s["by_rule"])
    lines = [f"write policy on the judge's {s['judge_keeps']} keeps ({s['label_keeps_kept']} labeled keep):"
             f" {s['written']} written as active durable memories ({s['written_label_keeps']} labeled keep);"
             f" labeled keeps rejected or demoted: {lost}"]
    if s["by_rule"]:
        lines.append(f"  {'outcome':<12}{'labeled keep':>13}{'all keeps':>10}  rule")
        for r in s["by_rule"]:
            lines.append(f"  {r['outcome']:<12}{r['label_keeps']:>13}{r['all']:>10}  {r['rule']}")
    return lines


def _outcomes_of(plan) -> dict[int, tuple[str, str]]:
    out = {c.note_ids[0]: ("written", "") for c in plan.candidates}
    for e in plan.events:
        outcome = OUTCOMES.get(e["event"]) or ("fields_missing" if e["event"] == "candidate.fields_missing" else None)
        if outcome and e.get("note_ids"):
            out[e["note_ids"][0]] = (outcome, rule_of(e.get("reason", "")))
    return out


def label_keep_outcomes(labels) -> dict[str, dict[str, tuple[str, str]]]:
    """For the notes labeled keep in ``labels`` (LabeledNote list): ``{"flagged": {id: (outcome,
    rule)}, "verbatim": {id: (outcome, rule)}}`` (module docstring). The secret gate is not run here
    (the eval reports notes it blocks apart)."""
    keeps = [n for n in labels if n.verdict == "keep"]
    flagged = Plan(session_id="eval-flagged")
    verbatim = Plan(session_id="eval-verbatim")
    for i, n in enumerate(keeps):
        kind = n.type if n.type in TYPES else None
        flagged.notes.append(Note(id=i, session_id="eval", content=n.content, flag=True, kind=kind))
        verbatim.notes.append(Note(id=i, session_id="eval", content=n.content))
        text = " ".join(n.content.split())
        type_ = kind or "fact"
        verbatim.candidates.append(Candidate(
            note_ids=[i], statement=text, type=type_, source="judge:verbatim", evidence="observed-success",
            confidence="high", reason="labeled keep", fields=fields_from_text(type_, n.content)))
    flag_promote.run(flagged, None)
    write_policy.run(flagged, None)
    write_policy.run(verbatim, None)
    return {mode: {keeps[k].id: o for k, o in _outcomes_of(plan).items()}
            for mode, plan in (("flagged", flagged), ("verbatim", verbatim))}


def render_label_keeps(outcomes: dict[str, dict[str, tuple[str, str]]]) -> list[str]:
    """The lines for :func:`label_keep_outcomes`."""
    lines = []
    for mode, what in (("flagged", "as flagged notes (kind = labeled type)"),
                       ("verbatim", "as a judge's verbatim keep (labeled type, high confidence)")):
        got = outcomes[mode]
        by: dict[tuple[str, str], int] = {}
        for outcome, rule in got.values():
            if outcome != "written":
                by[(outcome, rule)] = by.get((outcome, rule), 0) + 1
        lost = sum(n for (o, _), n in by.items() if o != "fields_missing")
        partial = sum(n for (o, _), n in by.items() if o == "fields_missing")
        lines.append(f"labeled keeps {what}: {len(got) - lost} of {len(got)} written"
                     + (f" ({partial} with fields_missing)" if partial else "") + f"; rejected or demoted: {lost}")
        for (outcome, rule), n in sorted(by.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {outcome:<12}{n:>4}  {rule}")
    return lines
