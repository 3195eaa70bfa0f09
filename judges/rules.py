"""The rules judge: deterministic guesses from wording. Opt-in only.

It never calls a model, so it always answers; but it guesses from surface wording ("because",
"never", "prefer", a backticked command that "works"), so the default chain never uses it. The demo
opts in when no model is reachable, and says so. Its keeps carry evidence read from the wording
(``user-stated`` for "the user wants…", ``observed-success`` for "…works", ``observed-failure``
for an error with a cause), else ``inferred``, which starts at low confidence and is quarantined.
"""

from __future__ import annotations

import re

from .base import BaseJudge
from consolidate.core.normal import canonical
from consolidate.core.textmeasure import word_count

_STATUS = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\[[ xX]\]|✅|☑|⬜|🔄|⏳|TODO\b|DONE\b|WIP\b|Next\b|Status\b|Progress\b|Task\s*\d|Phase\s*\d|Step\s*\d)",
    re.IGNORECASE)
_QUESTION = re.compile(r"\?\s*$")
_BECAUSE = re.compile(r"\b(?:because|since|so that|due to|as it|as this)\b", re.IGNORECASE)
_DECIDED = re.compile(r"\b(?:decided|chose|choose|opted|went with|switched to|instead of|rather than|over)\b", re.IGNORECASE)
_CONSTRAINT = re.compile(r"\b(?:never|always|must(?: not)?|do not|don't|required|only works with|cannot|can't)\b", re.IGNORECASE)
_PREFERENCE = re.compile(r"\b(?:prefers?|preferred|user wants|users? (?:asked|said|likes?))\b", re.IGNORECASE)
_USER = re.compile(r"\b(?:user|client|team|owner)\s+(?:said|says|wants|asked|prefers|requested|stated)\b", re.IGNORECASE)
_FAILURE = re.compile(r"\b(?:error|fails?|failed|failing|crash(?:ed|es)?|broke|bug|exception)\b", re.IGNORECASE)
_CAUSE = re.compile(r"\b(?:because|caused by|due to|root cause|the fix|fixed by|was the cause|turned out)\b", re.IGNORECASE)
_COMMAND = re.compile(r"`([^`\n]{3,200})`")
_WORKS = re.compile(r"\b(?:works?|worked|passes|passed|succeeds?|succeeded|fixed|resolved)\b", re.IGNORECASE)
_LESSON = re.compile(r"\b(?:lesson|gotcha|note to self|remember|important)\b", re.IGNORECASE)


def guess(content: str, section: str | None = None) -> dict | None:
    """A verdict dict (without ``id``) for one note, or None never (always answers). The note and its
    section are read in their consolidate.core.normal.canonical form (invisible characters removed,
    NFC, fullwidth forms and ligatures folded: ``Ne<U+200B>ver`` and ``Ｎｅｖｅｒ`` are ``Never``), and a
    keep's statement is that form with its whitespace runs one space."""

    content = canonical(content)
    section = canonical(section) if section else section
    text = " ".join(content.split())
    words = word_count(text)  # any script: Chinese or Thai text has no spaces between words
    if words < 5 or _STATUS.match(content) or _QUESTION.search(text):
        return {"verdict": "drop", "reason": "status line, question or fragment"}
    evidence = "inferred"
    if _USER.search(text):
        evidence = "user-stated"
    cmd = _COMMAND.search(text)
    lesson = bool(_LESSON.search(text) or (section and _LESSON.search(section)))
    m = _CAUSE.search(text)
    if _FAILURE.search(text) and m:
        symptom, cause = text[:m.start()].strip(" ,.;:-") or text, text[m.start():].strip()
        return _keep(text, "failure", {"symptom": symptom, "cause": cause},
                     "observed-failure" if evidence == "inferred" else evidence, "failure with a cause")
    if _PREFERENCE.search(text):
        return _keep(text, "preference", {"who": "user"}, "user-stated", "stated preference")
    m = _BECAUSE.search(text)
    if _DECIDED.search(text) and m:
        return _keep(text, "decision", {"reason": text[m.start():].strip()}, evidence, "decision with a reason")
    if cmd and _WORKS.search(text):
        return _keep(text, "recipe", {"command": cmd.group(1), "context": text}, "observed-success",
                     "command that worked")
    if _CONSTRAINT.search(text) and (lesson or words <= 40):
        return _keep(text, "constraint", {}, evidence, "rule wording")
    return {"verdict": "drop", "reason": "no keeper wording"}


def _keep(text: str, type_: str, fields: dict, evidence: str, reason: str) -> dict:
    return {"verdict": "keep", "statement": text, "type": type_, "fields": fields, "evidence": evidence,
            "confidence": "low" if evidence == "inferred" else "high", "reason": reason}


class RulesJudge(BaseJudge):
    """Deterministic wording heuristics; answers every note at once. Opt-in (``--judge rules``)."""

    name = "rules"
    model = "heuristics"
    prompt_version = "rules-v1"

    def __init__(self, arg: str | None = None):
        pass

    def judge(self, batch, context, timeout):
        return [{"id": n.id, **guess(n.content, n.section)} for n in batch]

    def available(self):
        return True, "always available (guesses from wording; opt-in)"
