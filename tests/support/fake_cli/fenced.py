#!/usr/bin/env python3
"""Answers in prose with the JSON inside a ```json markdown fence."""
from _common import answer, notes

print("Here are my verdicts for the notes:\n\n```json\n" + answer(notes()) + "\n```\n\nLet me know if you need more.")
