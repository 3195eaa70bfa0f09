"""The hook payload (issue 27): what the agent CLIs send ``consolidate hook`` on stdin, read in one
place by the fast hook (consolidate/agents/hooks/fast.py), the full hook and the ``hook``
command (full.py) and the file recall (consolidate/agents/file_recall.py).

The payloads, as the agent CLIs document them:

- **Claude Code** (hooks reference): ``hook_event_name`` (``SessionStart``, ``SessionEnd``, ``Stop``,
  ``PreCompact``, ``PreToolUse``...), ``session_id``, ``transcript_path``, ``cwd``; SessionEnd adds
  ``reason``, SessionStart ``source`` (startup, resume, clear, compact), PreCompact ``trigger``.
  The hook process also gets ``CLAUDE_PROJECT_DIR`` (the project's root folder).
- **Gemini CLI** (hooks reference): the same base fields (``session_id``, ``transcript_path``, ``cwd``,
  ``hook_event_name``, ``timestamp``) for ``SessionStart``, ``SessionEnd``, ``BeforeTool`` and
  ``PreCompress`` (our ``precompact``), with the start's kind in ``source`` or ``trigger``; the
  process gets ``GEMINI_PROJECT_DIR`` (and ``CLAUDE_PROJECT_DIR``, for compatibility).
- **Codex**: its hooks (``Stop``, ``SessionStart``) send ``session_id``, ``transcript_path``, ``cwd``,
  ``hook_event_name``; its older ``notify`` program gets ``type: agent-turn-complete`` (our ``stop``)
  and ``thread-id``.
- Other clients name the session ``sessionId``, ``thread_id`` or ``conversation_id`` (Cursor), and
  the event ``event``.

Event names are normalised (lower case, ``-`` and ``_`` removed, aliases applied): ``sessionend``,
``stop``, ``sessionstart``, ``precompact``, ``pretooluse``, ``beforetool``; anything else is passed on
as normalised and does nothing. Unknown fields are ignored. Standard library only (the fast hook
imports this module). Which store a payload means is decided by consolidate/store/resolve.py.
"""

from __future__ import annotations

import json
import os
import sys
import importlib
import re
import time

from consolidate.store import resolve

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported by name on first use (_PERSISTED): the edge for grimp and mypy
    from consolidate.rules import persisted  # noqa: F401

#: consolidate.rules.persisted, imported for a session id that is not a UUID (its identifier rule).
_PERSISTED = "consolidate.rules.persisted"

#: Exit code of a refused hook call: a non-blocking error in Claude Code's and Gemini CLI's hook
#: contracts (0 success, 2 blocking, any other code: shown to the user, the agent goes on).
HOOK_REFUSED = 1

#: The events, normalised (:func:`normalise`).
SESSION_END = "sessionend"
STOP = "stop"
SESSION_START = "sessionstart"
PRE_COMPACT = "precompact"
PRE_TOOL_USE = "pretooluse"
BEFORE_TOOL = "beforetool"
#: Session-end events (Claude Code's and Gemini CLI's SessionEnd; Codex's Stop, and Claude Code's
#: after each turn), the session start, and the tool events (Claude Code's PreToolUse, Gemini CLI's
#: BeforeTool: recall about the file a tool reads or edits).
END_EVENTS = frozenset({SESSION_END, STOP})
START_EVENTS = frozenset({SESSION_START})
TOOL_EVENTS = frozenset({PRE_TOOL_USE, BEFORE_TOOL})
#: Other spellings of an event, normalised: Codex's notify, Gemini CLI's PreCompress.
ALIASES = {"agentturncomplete": STOP, "precompress": PRE_COMPACT}

#: The events as the agent CLIs spell them (their hook settings, their payloads, their hook output).
SESSION_END_NAME = "SessionEnd"
STOP_NAME = "Stop"
SESSION_START_NAME = "SessionStart"
PRE_COMPACT_NAME = "PreCompact"
PRE_TOOL_USE_NAME = "PreToolUse"
BEFORE_TOOL_NAME = "BeforeTool"

#: The keys an event name is read from, first present wins.
EVENT_KEYS = ("hook_event_name", "type", "event")
#: The key ``--event`` fills when the payload has none.
EVENT_KEY = EVENT_KEYS[0]
#: The keys a session id is read from, first non-blank string wins.
SESSION_ID_KEYS = ("session_id", "sessionId", "thread-id", "thread_id", "conversation_id")
#: The key ``--session`` fills (a payload made on the command line).
SESSION_ID_KEY = SESSION_ID_KEYS[0]
#: The keys of the transcript file (JSONL), of the session's working folder, of why a session ended,
#: and of how a session started (``startup``, ``resume``, ``clear``, ``compact``).
TRANSCRIPT_KEYS = ("transcript_path",)
CWD_KEY = "cwd"
REASON_KEY = "reason"
SOURCE_KEYS = ("source", "trigger")


def normalise(name: object) -> str:
    """``name`` lower-cased, without ``-`` and ``_``, its alias applied: ``SessionEnd`` ->
    ``sessionend``, ``agent-turn-complete`` -> ``stop``, ``PreCompress`` -> ``precompact``."""
    text = str(name).replace("-", "").replace("_", "").lower()
    return ALIASES.get(text, text)


def event_name(payload: dict) -> str:
    """The normalised event name of ``payload`` (:func:`normalise`; '' when it names none)."""
    for key in EVENT_KEYS:
        if payload.get(key):
            return normalise(payload[key])
    return ""


def raw_event_name(payload: dict, default: str) -> str:
    """The event name as the agent wrote it (for an answer in its own spelling), else ``default``."""
    name = payload.get(EVENT_KEY)
    return name if isinstance(name, str) and name else default


def session_ids(payload: dict) -> list[tuple[str, str]]:
    """Every ``(key, value)`` of ``payload`` naming a session id (a non-blank string), in
    :data:`SESSION_ID_KEYS` order, as written."""
    out = []
    for key in SESSION_ID_KEYS:
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            out.append((key, value))
    return out


def session_id_of(payload: dict) -> str | None:
    """The session id of ``payload`` (the first of :data:`SESSION_ID_KEYS` holding a non-blank
    string, stripped; one holding a secret as its pseudonym, consolidate.rules.persisted.identifier,
    as the session tier keeps it), or None."""
    found = session_ids(payload)
    if not found:
        return None
    sid = found[0][1].strip()
    if len(sid) < 6 or _UUID.fullmatch(sid):  # what the agent CLIs send: no import on the hook path
        return sid
    return importlib.import_module(_PERSISTED).identifier(sid)  # the hook path's imports stay light


#: A UUID session id (Claude Code, Gemini CLI, Codex): as consolidate.rules.persisted._UUID.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?:\+r[0-9]+)?")


def _text(payload: dict, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def transcript_path_of(payload: dict) -> str | None:
    """The transcript file the payload names (a non-blank string), or None."""
    return _text(payload, TRANSCRIPT_KEYS)


def cwd_of(payload: dict) -> str | None:
    """The payload's ``cwd`` when it is a string (not checked further), in the Unicode spelling on
    disk when only that one names a folder (consolidate.store.resolve.spelled_on_disk), else None."""
    value = payload.get(CWD_KEY)
    return resolve.spelled_on_disk(value) if isinstance(value, str) else None


def raw_cwd(payload: dict) -> object:
    """The payload's ``cwd`` as sent (any JSON value; None when absent): what a refusal names."""
    return payload.get(CWD_KEY)


def reason_of(payload: dict) -> str | None:
    """Why the session ended (a string), or None."""
    value = payload.get(REASON_KEY)
    return value if isinstance(value, str) else None


def source_of(payload: dict) -> str | None:
    """How the session started (``startup``, ``resume``, ...: a non-blank string), or None."""
    return _text(payload, SOURCE_KEYS)


def command_line_payload(session_id: str, event: str | None) -> dict:
    """The payload of ``consolidate hook --session S [--event E]`` (no stdin): SessionEnd by default."""
    return {EVENT_KEY: event or SESSION_END_NAME, SESSION_ID_KEY: session_id}


def gemini_output(text: str) -> str:
    """Gemini CLI takes a SessionStart hook's stdout as JSON only: ``text`` as its additional context."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": SESSION_START_NAME, "additionalContext": text}})


#: A hook reads at most this much of stdin, for at most this long (seconds).
STDIN_MAX_BYTES = 1_000_000
STDIN_TIMEOUT = 0.5


def read_stdin(stream=None, timeout: float = STDIN_TIMEOUT, max_bytes: int = STDIN_MAX_BYTES) -> bytes:
    """Read ``stream`` (default stdin) until EOF, ``max_bytes`` or ``timeout`` seconds, whichever
    comes first: a stdin that never closes cannot hang a hook (consolidate.agents.hooks.full.read_stdin)."""
    import select  # noqa: PLC0415 - the session-end hook reads stdin, the others too: here, not for every importer

    stream = stream or sys.stdin
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return b""
    if os.isatty(fd):
        return b""
    deadline = time.monotonic() + timeout
    chunks, size = [], 0
    while size < max_bytes:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, min(65536, max_bytes - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def replace_stdin(raw: bytes) -> None:
    """Make ``raw`` (stdin as already read) the process's stdin again, through a pipe of its own, for
    the full hook the light entries hand an event to."""
    r, w = os.pipe()
    if raw:
        pid = os.fork() if len(raw) > 60000 else 0
        if pid == 0 and len(raw) > 60000:  # a writer child for payloads bigger than a pipe's buffer
            os.close(r)
            os.write(w, raw)
            os._exit(0)
        if len(raw) <= 60000:
            os.write(w, raw)
    os.close(w)
    os.dup2(r, 0)
    os.close(r)
    sys.stdin = open(0, closefd=False)


#: Tools whose input names a file the agent reads or edits (the file recall hook: consolidate.agents.file_recall).
FILE_TOOLS = frozenset({"Read", "Edit", "MultiEdit", "Write", "NotebookEdit",
                        "read_file", "write_file", "replace", "read_many_files"})


def tool_paths(payload: dict) -> list[str]:
    """The file paths a tool call names (``tool_input.file_path``, ``notebook_path``,
    ``absolute_path``, ``path``, ``paths``); [] for another tool."""
    if payload.get("tool_name") not in FILE_TOOLS:
        return []
    data = payload.get("tool_input")
    data = data if isinstance(data, dict) else {}
    out = []
    for key in ("file_path", "notebook_path", "absolute_path", "path"):
        if isinstance(data.get(key), str) and data[key].strip():
            out.append(data[key])
    if isinstance(data.get("paths"), list):
        out += [p for p in data["paths"] if isinstance(p, str) and p.strip()][:10]
    return out


def hook_output(text: str, event: str) -> str:
    """The JSON a PreToolUse (Claude Code) or BeforeTool (Gemini CLI) hook prints to add ``text`` to
    the model's context: ``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}, ensure_ascii=False)
