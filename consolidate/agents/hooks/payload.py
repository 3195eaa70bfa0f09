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
    string, stripped), or None."""
    found = session_ids(payload)
    return found[0][1].strip() if found else None


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
    """The payload's ``cwd`` when it is a string (not checked further), else None."""
    value = payload.get(CWD_KEY)
    return value if isinstance(value, str) else None


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
