#!/usr/bin/env python3
"""Claude Code's print-mode envelope (``claude -p --output-format json --json-schema ...``): the answer
in ``structured_output`` (and as text in ``result``), cost, usage and the model id (``modelUsage``) beside it. Exits 64 without
``-p`` and ``--json-schema``, 65 when ``--settings`` does not disable hooks."""
import json
import sys

from _common import notes, verdict

args = sys.argv[1:]
if "--json-schema" not in args or "-p" not in args:
    print("fake claude: -p and --json-schema expected", file=sys.stderr)
    sys.exit(64)
if "--settings" not in args or not json.loads(args[args.index("--settings") + 1]).get("disableAllHooks"):
    print("fake claude: hooks are not disabled for this call", file=sys.stderr)
    sys.exit(65)
answer = {"verdicts": [verdict(i, c) for i, c in notes()]}
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": json.dumps(answer),
                  "structured_output": answer, "total_cost_usd": 0.0012,
                  "usage": {"input_tokens": 900, "output_tokens": 120},
                  "modelUsage": {"claude-fake-sonnet-1": {"inputTokens": 900, "outputTokens": 120}}}))
