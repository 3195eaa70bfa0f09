"""The folders the tests name: REPO (the checkout), TESTS (tests/), SUPPORT (tests/support/)."""

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
TESTS = SUPPORT.parent
REPO = TESTS.parent
