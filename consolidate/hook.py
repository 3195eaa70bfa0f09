"""``consolidate hook``: what agent CLIs call from their session hooks. It never blocks the agent.

Agent CLIs give session-end hooks very little time (Claude Code: about 1.5 s in total by default,
``CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS``, killing them past it; Gemini CLI does not wait; Codex
has only Stop). So for an end event the hook only records the session end in the queue and starts a
detached worker (``consolidate worker``, a new process session, output to ``logs/worker.log``), then
exits 0. For SessionStart it prints the recalled context (``memory/core.md`` and
``memory/context.md``, bounded) on stdout for the agent. Whatever fails, it exits 0 and leaves a log
line in ``logs/hook.log``. Only the standard library is imported here.

Input: the hook's JSON on stdin, read with a bound (a stdin that never closes cannot hang it):
Claude Code's SessionEnd, Stop, PreCompact and SessionStart (``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name``, ``reason``), Gemini CLI's SessionEnd/SessionStart and Codex's Stop
(``session_id``/``thread-id``, ``hook_event_name``/``type``); unknown fields are ignored.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: Environment guard set by our own judge subprocesses (``claude -p`` fires its hooks): a hook that
#: sees it does nothing, so a judge never recurses into consolidation.
CHILD_GUARD = "CONSOLIDATE_JUDGE_CHILD"
#: stdin bounds: at most this many bytes, waiting at most this many seconds in total.
STDIN_MAX_BYTES = 1_000_000
STDIN_TIMEOUT = 0.5
#: SessionStart output bound, in characters.
CONTEXT_MAX_CHARS = 8_000
END_EVENTS = {"sessionend", "stop"}
START_EVENTS = {"sessionstart"}
_ALIASES = {"agentturncomplete": "stop"}  # Codex's notify payload
#: Harvest bounds: the last this many transcript entries, each text cut at this many characters.
HARVEST_MAX_ENTRIES = 400
HARVEST_MAX_CHARS = 4_000


def read_stdin(stream=None, timeout: float = STDIN_TIMEOUT, max_bytes: int = STDIN_MAX_BYTES) -> bytes:
    """Read stdin until EOF, ``max_bytes`` or ``timeout`` seconds, whichever comes first."""
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


def parse_event(raw: bytes) -> dict[str, Any]:
    """The hook payload as a dict ({} for empty or invalid input)."""
    try:
        data = json.loads(raw.decode("utf-8", "replace")) if raw.strip() else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def event_name(payload: dict[str, Any]) -> str:
    """Normalised event name: ``sessionend``, ``stop``, ``precompact``, ``sessionstart``, or ''."""
    name = payload.get("hook_event_name") or payload.get("type") or payload.get("event") or ""
    name = str(name).replace("-", "").replace("_", "").lower()
    return _ALIASES.get(name, name)


def session_id_of(payload: dict[str, Any]) -> str | None:
    for key in ("session_id", "sessionId", "thread-id", "thread_id", "conversation_id"):
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def log(store_path: Path, message: str) -> None:
    """Append one line to ``logs/hook.log``; never raises."""
    try:
        from .private import prepare_store_dir

        prepare_store_dir(store_path)
        folder = store_path / "logs"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        with open(folder / "hook.log", "a", encoding="utf-8") as f:
            f.write(f"{stamp} {' '.join(message.split())[:500]}\n")
    except OSError:
        pass


def spawn_worker(store_path: Path, extra_env: dict[str, str] | None = None) -> int | None:
    """Start ``consolidate worker`` detached (new process session, stdin closed, output appended to
    ``logs/worker.log``); returns its pid, or None when it could not be started."""
    folder = store_path / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "worker.log", "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "consolidate", "worker", "--store", str(store_path)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **(extra_env or {})}, close_fds=True,
        )
    return proc.pid


def harvest(transcript_path: str | None, limit: int = HARVEST_MAX_ENTRIES) -> list[dict[str, Any]]:
    """Candidate notes from a Claude Code transcript (JSONL): assistant text blocks and tool errors,
    as ``{"content", "metadata"}`` dicts, oldest first; unknown entry types and malformed lines are
    skipped. Only the last ``limit`` entries are read."""
    if not transcript_path:
        return []
    try:
        with open(transcript_path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()[-limit:]
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        message = entry.get("message") if isinstance(entry.get("message"), dict) else {}
        blocks = message.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if not isinstance(blocks, list):
            continue
        for block in blocks:
            if not isinstance(block, dict):
                continue
            text, source = None, None
            if entry.get("type") == "assistant" and block.get("type") == "text":
                text, source = block.get("text"), "transcript:assistant"
            elif entry.get("type") == "user" and block.get("type") == "tool_result" and block.get("is_error"):
                content = block.get("content")
                if isinstance(content, list):
                    content = " ".join(c.get("text", "") for c in content if isinstance(c, dict))
                text, source = content, "transcript:tool_error"
            if isinstance(text, str) and text.strip():
                out.append({"content": text.strip()[:HARVEST_MAX_CHARS],
                            "metadata": {"source": source, "uuid": entry.get("uuid")}})
    return out


def recalled_context(store_path: Path, max_chars: int = CONTEXT_MAX_CHARS) -> str:
    """``memory/core.md`` then ``memory/context.md`` (written by each run), cut to ``max_chars``. The
    memories pass the context guard again as they are printed (consolidate/context_guard.py: none
    worded as an order or running remote code), under the notice that they are notes, not
    instructions."""
    parts = []
    for name in ("core.md", "context.md"):
        try:
            text = (store_path / "memory" / name).read_text(encoding="utf-8").strip()
            if name == "context.md":
                text = _checked_context(store_path, text)
        except (OSError, UnicodeDecodeError):
            continue
        if text and name == "context.md":
            text = _guarded(text)
        if text:
            parts.append(text)
    out = "\n\n".join(parts)
    if len(out) > max_chars:
        out = out[: max_chars - 40].rsplit("\n", 1)[0] + "\n[… more in consolidate recall]"
    return out


def _guarded(context: str) -> str:
    """``memory/context.md`` as it may be printed: memory lines worded as orders or running remote
    code left out (a file written by an older version, or edited by hand), and the notice on top."""
    from .context_guard import NOTICE, filter_lines, held_back_line

    lines, held = filter_lines(context.splitlines())
    if NOTICE not in lines:
        lines[1:1] = ["", NOTICE] if lines and lines[0].startswith("#") else [NOTICE, ""]
    if held:
        lines += ["", held_back_line(held)]
    return "\n".join(lines).strip()


def _checked_context(store_path: Path, text: str) -> str:
    """context.md with the drift check of its memories' code anchors (consolidate.anchors): a
    drifted memory ends with ``[drifted: path]``, one whose file is gone is left out. The text as
    it is when the check cannot run."""
    try:
        from .anchors import context_text

        checked = context_text(store_path)
    except Exception:  # noqa: BLE001 - the hook never fails the agent
        return text
    return checked.strip() if checked is not None else text


def run_hook(store_path: Path, *, payload: dict[str, Any], outcome: str = "success", harvest_notes: bool = False,
             spawn: bool = True) -> tuple[int, str]:
    """Handle one hook event; returns (exit code, stdout text). Exit code is always 0."""
    if os.environ.get(CHILD_GUARD):
        return 0, ""
    name = event_name(payload)
    sid = session_id_of(payload)
    try:
        if name in START_EVENTS:
            return 0, recalled_context(store_path)
        if not sid:
            log(store_path, f"ignored {name or 'unknown'} event without a session id")
            return 0, ""
        from .private import prepare_store_dir
        from .session import SessionTier

        prepare_store_dir(store_path)
        tier = SessionTier(store_path / "sessions.sqlite3")
        if harvest_notes and name in END_EVENTS | {"precompact"}:
            for note in harvest(payload.get("transcript_path")):
                note_id = tier.add_note(sid, note["content"], metadata=note["metadata"])
                if getattr(note_id, "notice", None):
                    log(store_path, f"harvest session={sid}: {note_id.notice}")
        if name in END_EVENTS:
            reason = payload.get("reason") if isinstance(payload.get("reason"), str) else None
            tier.end(sid, outcome, reason)
            tier.close()
            pid = spawn_worker(store_path) if spawn else None
            log(store_path, f"{name} session={sid} queued ({outcome}); worker pid {pid}")
        else:
            tier.close()
            log(store_path, f"{name or 'unknown'} session={sid}: nothing to do")
    except Exception as exc:  # the hook never fails the agent
        log(store_path, f"error on {name} session={sid}: {type(exc).__name__}: {exc}")
    return 0, ""
