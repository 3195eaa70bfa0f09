#!/usr/bin/env python3
"""Answers in prose with no JSON at all."""
import sys

sys.stdin.read()
print("I looked at the notes. Most of them seem fine to keep; the task list could go.")
