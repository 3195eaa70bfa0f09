#!/usr/bin/env python3
"""A valid answer for every note, after a pause of 1 s (a slow judge that always answers in time)."""
import time

from _common import answer, notes

pairs = notes()
time.sleep(1.0)
print(answer(pairs))
