"""A scripted OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1, for the API judge.

``answer(prompt, body)`` decides each reply: an int is an HTTP error status (429, 503, ...), a dict is
the forced tool call's arguments (``{"verdicts": [...]}`` or ``{"relations": [...]}``), a
:class:`Reply` gives the arguments as text (JSON cut short, as a model stopped at max_tokens answers)
and the token counts. The server records every prompt in ``prompts`` (``requests`` counts them).
``GET /v1/models`` answers (the availability probe).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

#: One note line of the judge prompt: ``[n3] (kind: fact) text``.
NOTE = re.compile(r"^\[(n\d+)\](?: \(section: [^)]*\))?(?: \(kind: [^)]*\))? (.*)$", re.M)
#: A note line with its kind: ``(id, kind or "", text)`` (the keep-everything fake's input).
KIND_NOTE_LINE = re.compile(r"^\[(n\d+)\](?: \(section: [^)]*\))?(?: \(kind: ([^)]*)\))? (.*)$", re.M)
#: One pair line of the compare prompt: ``[p1] (fact) NEW: ... || OLD: ...``.
PAIR = re.compile(r"^\[(p\d+)\] \(([^)]*)\) NEW: (.*?) \|\| OLD: (.*)$", re.M)


@dataclass
class Reply:
    """A tool-call reply: ``arguments`` as JSON text or a dict, and the ``usage`` token counts."""

    arguments: str | dict
    prompt_tokens: int = 100
    completion_tokens: int = 50


class JudgeServer:
    """Use as a context manager; ``base`` is the URL for ``CONSOLIDATE_API_BASE``."""

    def __init__(self, answer: Callable[[str, dict], int | dict]):
        self.answer = answer
        self.prompts: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if code == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "local", "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
                outer.prompts.append(prompt)
                got = outer.answer(prompt, body)
                if isinstance(got, int):
                    self._send(got, {"error": {"message": f"scripted HTTP {got}", "type": "scripted",
                                               "code": str(got)}})
                    return
                tool = body.get("tools", [{}])[0].get("function", {}).get("name", "Verdicts")
                reply = got if isinstance(got, Reply) else Reply(got)
                args = reply.arguments if isinstance(reply.arguments, str) else json.dumps(reply.arguments)
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": "local",
                    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                        "role": "assistant", "content": None,
                        "tool_calls": [{"id": "call_1", "type": "function",
                                        "function": {"name": tool, "arguments": args}}]}}],
                    "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                              "total_tokens": reply.prompt_tokens + reply.completion_tokens}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def requests(self) -> int:
        """How many completions were asked for (errors answered included)."""
        return len(self.prompts)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def notes_of(prompt: str) -> list[tuple[str, str]]:
    """``[(id, text)]`` of the notes in a judge prompt."""
    return NOTE.findall(prompt)


def pairs_of(prompt: str) -> list[tuple[str, str, str, str]]:
    """``[(id, type, new, old)]`` of the pairs in a compare prompt."""
    return PAIR.findall(prompt)
