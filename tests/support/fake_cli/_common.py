"""Shared by the fake CLIs: read the judge prompt on stdin, find the batch's notes, build verdicts.

A note is kept when it holds the keyword ``remember`` (any case), dropped otherwise. A fake that
answers exits 3 when ``CONSOLIDATE_JUDGE_CHILD=1`` is missing from its environment (the CLI judge
must set it in every child)."""

import json
import os
import re
import sys

NOTE = re.compile(r"^\[(n\d+)\](?: \(section: [^)]*\))?(?: \(kind: [^)]*\))? (.*)$", re.M)
KEYWORD = "remember"


def notes():
    """``[(id, content)]`` of the prompt on stdin."""
    if os.environ.get("CONSOLIDATE_JUDGE_CHILD") != "1":
        print("fake-cli: CONSOLIDATE_JUDGE_CHILD=1 is not set", file=sys.stderr)
        sys.exit(3)
    return NOTE.findall(sys.stdin.read())


def verdict(note_id, content):
    if KEYWORD in content.lower():
        return {"id": note_id, "verdict": "keep", "statement": content.strip().rstrip(".") + ".",
                "type": "fact", "fields": {}, "evidence": "observed-success", "confidence": "high",
                "reason": "fake CLI: the note says remember", "entities": []}
    return {"id": note_id, "verdict": "drop", "reason": "fake CLI: no keyword"}


def answer(pairs):
    return json.dumps({"verdicts": [verdict(i, c) for i, c in pairs]})


#: A note line with its kind: ``(id, kind or "", content)``.
KIND_NOTE = re.compile(r"^\[(n\d+)\](?: \(section: [^)]*\))?(?: \(kind: ([^)]*)\))? (.*)$", re.M)


def keep_all(triples):
    """A keep-everything judge's verdicts for ``KIND_NOTE.findall(prompt)``: every note kept as it is
    written; ``user-stated`` when the note speaks of the user, else ``observed-success``; the note's
    kind, else ``fact``."""
    out = []
    for note_id, kind, text in triples:
        text = text.strip()
        fields = {"who": "the user"} if kind == "preference" else {}
        out.append({"id": note_id, "verdict": "keep", "statement": text, "type": kind or "fact",
                    "fields": fields, "evidence": "user-stated" if "user" in text.lower() else "observed-success",
                    "confidence": "high", "reason": "fake CLI: keeps everything", "entities": []})
    return out


_CHANGE = re.compile(r"\b(now|no longer|is gone|switched|moved|was raised|renamed|changed)\b", re.I)
_NEG = re.compile(r"\b(not|never|no|don't|must not)\b", re.I)
_WORD = re.compile(r"[a-z0-9]+")


def relation(new, old):
    """How a careful judge relates two statements, by rule: NEW says something changed -> updates;
    other numbers or negations -> contradicts; most words shared -> duplicate; else unrelated."""
    if _CHANGE.search(new):
        return "updates"
    if sorted(re.findall(r"\d+", new)) != sorted(re.findall(r"\d+", old)) or \
            sorted(m.lower() for m in _NEG.findall(new)) != sorted(m.lower() for m in _NEG.findall(old)):
        return "contradicts"
    a, b = set(_WORD.findall(new.lower())), set(_WORD.findall(old.lower()))
    return "duplicate" if len(a & b) / max(1, len(a | b)) >= 0.3 else "unrelated"
