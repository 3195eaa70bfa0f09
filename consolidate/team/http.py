"""The SessionStart fast path of team mode: one look at the team store's clock over Chroma's HTTP
API (v2), with the standard library only, so a session that starts when nothing changed, or while
the server is down, never imports chromadb.

Every push ends by writing a new random token to the ``clock`` collection (record ``clock``); every
pull reads the token before it reads the records and keeps it in the ledger. A push writes its
records before its token, and a pull reads the token before the records, so a token equal to the
one kept means no push finished since that pull's reads: nothing new to pull.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from urllib.parse import quote
import time

CLOCK = "clock"


class Unreachable(Exception):
    """The server did not answer (refused, timed out) or refused the token (``refused``)."""

    def __init__(self, message: str, *, timeout: bool = False, refused: bool = False):
        super().__init__(message)
        self.timeout = timeout
        self.refused = refused


def _call(url: str, token: str | None, seconds: float, body: dict | None = None):
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                 method="POST" if body is not None else "GET",
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(req, timeout=seconds) as resp:
            return json.loads(resp.read().decode("utf-8") or "null")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise Unreachable("the team store refused the token", refused=True) from None
        if exc.code == 404:
            return None
        raise Unreachable(f"the team store answered HTTP {exc.code}") from None
    except (socket.timeout, TimeoutError):
        raise Unreachable(f"the team store did not answer within {seconds:g} s", timeout=True) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        timeout = isinstance(reason, (socket.timeout, TimeoutError))
        raise Unreachable(f"the team store cannot be reached ({reason})", timeout=timeout) from None


def clock(cfg, token: str | None, seconds: float) -> str | None:
    """The team store's clock token (None when nothing was ever pushed), within ``seconds`` for both
    requests. Raises Unreachable (refused, timed out, or the token refused)."""
    deadline = time.monotonic() + seconds  # both requests together, not each
    base = cfg.url.rstrip("/") + f"/api/v2/tenants/{quote(cfg.tenant)}/databases/{quote(cfg.database)}/collections"
    col = _call(f"{base}/{CLOCK}", token, seconds)
    if not col or not col.get("id"):
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise Unreachable(f"the team store did not answer within {seconds:g} s", timeout=True)
    got = _call(f"{base}/{col['id']}/get", token, left, {"ids": [CLOCK], "include": ["documents"]})
    docs = (got or {}).get("documents") or []
    return docs[0] if docs else None
