#!/usr/bin/env python3
"""A well-behaved CLI: one JSON object with a verdict for every note (keep if it says remember)."""
from _common import answer, notes

print(answer(notes()))
