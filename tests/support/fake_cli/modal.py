#!/usr/bin/env python3
"""Behaves as ``$FAKE_CLI_MODE`` says (read per call, so a test can switch it between runs):

- ``down``: exits 1 with a rate-limit message on stderr (an outage);
- ``half``: answers the first half of the batch (rounded up), like half.py;
- ``all`` (default): answers every note (keep when it says "remember", as _common.verdict);
- ``keepall``: keeps every note as written (_common.keep_all).

It answers the contradiction prompt too (``{"relations": [...]}``): ``$FAKE_CLI_RELATION`` for every
pair, or by rule (_common.relation) when it is unset or ``auto``."""
import json
import os
import re
import sys

from _common import answer, keep_all, notes, relation

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
    fixed = os.environ.get("FAKE_CLI_RELATION", "auto")
    print(json.dumps({"relations": [{"id": pid, "relation": relation(new, old) if fixed == "auto" else fixed,
                                     "reason": "fake CLI"} for pid, _t, new, old in pairs]}))
    sys.exit(0)
from _common import NOTE  # noqa: E402

found = NOTE.findall(prompt)
if mode == "keepall":
    from _common import KIND_NOTE  # noqa: E402

    print(json.dumps({"verdicts": keep_all(KIND_NOTE.findall(prompt))}))
    sys.exit(0)
if mode == "half":
    found = found[: (len(found) + 1) // 2]
print(answer(found))
