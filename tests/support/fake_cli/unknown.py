#!/usr/bin/env python3
"""Answers with ids that are not in the batch (n91, n92, ...)."""
import json

from _common import notes, verdict

out = [verdict(f"n{90 + k}", content) for k, (_, content) in enumerate(notes(), 1)]
print(json.dumps({"verdicts": out}))
