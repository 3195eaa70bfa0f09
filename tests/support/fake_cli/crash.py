#!/usr/bin/env python3
"""Crashes with a traceback (exit 1) after printing half an answer."""
import sys

sys.stdin.read()
sys.stdout.write('{"verdicts": [{"id": "n1", ')
sys.stdout.flush()
raise RuntimeError("fake CLI crashed mid-answer")
