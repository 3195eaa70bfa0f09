"""Waiting for a server a test started on 127.0.0.1 (llama.cpp's for cassette recording, Chroma's)."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path


def wait_until_answers(url: str, proc: subprocess.Popen, seconds: float, name: str, log: Path | None = None) -> None:
    """Poll ``GET url`` every 0.1 s until it answers. Fails the test (pytest.fail) when ``proc``
    exits first, with the tail of ``log`` when given, or when ``seconds`` pass without an answer."""
    import pytest

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:] if log is not None else f"exit code {proc.returncode}"
                pytest.fail(f"{name} exited: {tail}")
            time.sleep(0.1)
    pytest.fail(f"{name} did not answer within {seconds:.0f} s")
