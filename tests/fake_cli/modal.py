#!/usr/bin/env python3
"""Behaves as ``$FAKE_CLI_MODE`` says (read per call, so a test can switch it between runs):

- ``down``: exits 1 with a rate-limit message on stderr (an outage);
- ``half``: answers the first half of the batch (rounded up), like half.py;
- ``all`` (default): answers every note (keep when it says "remember", as _common.verdict).

It answers the contradiction prompt too (``{"relations": [...]}``): ``$FAKE_CLI_RELATION`` for every
pair (default ``unrelated``)."""
import json
import os
import re
import sys

from _common import answer, notes

mode = os.environ.get("FAKE_CLI_MODE", "all")
if mode == "down":
    sys.stdin.read()
    print("fake-cli: error: 429 rate limit reached, try again later", file=sys.stderr)
    sys.exit(1)
if os.environ.get("CONSOLIDATE_JUDGE_CHILD") != "1":
    sys.exit(3)
prompt = sys.stdin.read()
pairs = re.findall(r"^\[(p\d+)\] \(([^)]*)\) NEW: (.*?) \|\| OLD: (.*)$", prompt, re.M)
if pairs:
    relation = os.environ.get("FAKE_CLI_RELATION", "unrelated")
    print(json.dumps({"relations": [{"id": pid, "relation": relation, "reason": "fake CLI"}
                                    for pid, _t, _new, _old in pairs]}))
    sys.exit(0)
from _common import NOTE  # noqa: E402

found = NOTE.findall(prompt)
if mode == "half":
    found = found[: (len(found) + 1) // 2]
print(answer(found))
