#!/usr/bin/env python3
"""A valid answer for every note; from its second call on it first records the call and waits for a
gate: ``$FAKE_GATE_DIR/calls`` gets one line per call (written before waiting), and every call after
the first waits until ``$FAKE_GATE_DIR/release`` exists (at most 120 s). A test can so know that the
run is inside a judge call, and keep it there, before it acts (tests/unit/cli/test_says_what_it_did.py, Ctrl-C)."""
import os
import time
from pathlib import Path

from _common import answer, notes

pairs = notes()
gate = Path(os.environ["FAKE_GATE_DIR"])
with open(gate / "calls", "a") as f:
    f.write(f"{os.getpid()}\n")
calls = len((gate / "calls").read_text().splitlines())
deadline = time.monotonic() + 120
while calls > 1 and not (gate / "release").exists() and time.monotonic() < deadline:
    time.sleep(0.05)
print(answer(pairs))
