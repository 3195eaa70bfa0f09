"""The folder of a session's workspace under the store's ``workspaces/`` (consolidate/pipeline/workspace.py
owns what is in it): standard library only, so ``consolidate end`` names it without the workspace code."""

from __future__ import annotations

import hashlib
import re

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


def folder_name(session_id: str) -> str:
    """The workspace folder of a session id: the id itself when it is a plain name (letters, digits,
    ``.``, ``_``, ``-``; at most 80 characters), else ``ws-`` + 16 hex digits of its SHA-256 (an id
    holding ``/`` or spaces never names a path)."""
    if _SAFE_ID.match(session_id) and session_id not in (".", ".."):
        return session_id
    return "ws-" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:16]
