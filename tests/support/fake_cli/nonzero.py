#!/usr/bin/env python3
"""Exits 2 with an error message on stderr (after some noise)."""
import sys

sys.stdin.read()
print("loading model...", file=sys.stderr)
print("fake-cli: error: model 'nope' not found", file=sys.stderr)
sys.exit(2)
