#!/usr/bin/env python3
"""A valid answer but with a raw newline inside a JSON string (what llama.cpp's grammar allows)."""
from _common import answer, notes

print(answer(notes()).replace("fake CLI: no keyword", "fake CLI:\nno keyword"))
