#!/usr/bin/env python3
"""Reads the prompt, then sleeps far past any time box (dies on SIGTERM like most programs)."""
import sys
import time

sys.stdin.read()
time.sleep(120)
print("{}")
