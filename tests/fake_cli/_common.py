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
