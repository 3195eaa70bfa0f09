"""Candidate notes from an agent transcript (Claude Code's JSONL), for agents that never call ``note``.

What is harvested, each as one note whose metadata names its transcript entry (``uuid``, ``line``
when the whole file was read, byte ``offset`` always, ``entry_type``):

=================  ==========================================  ============================  ==========
entry type         what                                        ``metadata["source"]``        evidence
=================  ==========================================  ============================  ==========
``user_prompt``    a prompt the user typed (``type: user``,    ``transcript:user``           user-stated
                   text content, not a tool result)
``assistant``      an assistant turn's text: its conclusions   ``transcript:assistant``      inferred
                   and findings, except narration before a
                   tool call (a short text in a message with
                   ``tool_use`` announcing it: ``Let me ...``)
``tool_error``     a tool result with ``is_error``, with the   ``transcript:tool_error``     observed-
                   call that failed and the fix that followed                                failure
                   (the next assistant text, else the next call)
=================  ==========================================  ============================  ==========

(Evidence: the highest credited to the note's origin, consolidate/pipeline/stages/credibility.py.)

Left out: tool output (results without ``is_error``), injected context (our own SessionStart block,
``<system-reminder>`` spans, ``isMeta`` entries, slash-command and local-command echoes, hook
output, compaction summaries ``isCompactSummary`` and ``summary`` entries), subagent
(``isSidechain``) prompts (the main agent wrote them, not the user), and interruptions.

Secrets: a turn holding secret material is kept with each secret replaced by ``[secret removed:
KIND]`` (``metadata["secret_removed"]`` lists the kinds), not dropped. Private spans
(``<private>...</private>``) are kept in the session tier and stripped before anything leaves it
(consolidate/rules/private_spans.py).

External content: notes from a turn (one user prompt to the next) that fetched web pages or used an
external tool (``WebFetch``, ``WebSearch``, an MCP tool of a server other than ours) carry
``metadata["external"] = true`` and ``external_tools``; the write policy keeps such a note in
quarantine until a flag or another session confirms it (consolidate/pipeline/stages/external.py). The user's
own prompts are never external.

Compaction: :func:`harvest_lines` can stop at the last compaction boundary (``PreCompact`` harvests
only the part about to be compacted).

Bounded: only the last ``max_entries`` entries within the last ``max_bytes`` bytes are read
(:func:`tail_entries`), so any transcript costs the same. Only the standard library (the hook).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

#: Harvest bounds: the last this many transcript entries, each text cut at this many characters.
MAX_ENTRIES = 400
MAX_CHARS = 4_000
#: At most this many bytes are read from the end of the transcript.
MAX_BYTES = 8 * 1024 * 1024
#: An assistant text shorter than this in a message that also calls a tool, announcing the call
#: (ending with ``:``, or opening with ``Let me``, ``I'll``, ``Now I``, ``Checking`` ...), is narration,
#: not a conclusion.
NARRATION_CHARS = 200
_NARRATION = re.compile(r"^(?:let me|let's|i'll|i will|i'm going to|i am going to|now,? (?:i|let)|next,? i|first,? i"
                        r"|okay,? (?:i|let)|ok,? (?:i|let)|checking|looking|reading|running|searching|trying|fetching)\b",
                        re.IGNORECASE)
#: How much of the fix that followed a tool error goes into the error's note.
FIX_CHARS = 500
#: Tools whose results come from outside the project (web pages, search results).
EXTERNAL_TOOLS = frozenset({"WebFetch", "WebSearch", "web_fetch", "google_web_search", "fetch"})
#: MCP servers that are ours (their tools are not external): Claude Code names MCP tools
#: ``mcp__<server>__<tool>`` (a plugin's ``mcp__plugin_<plugin>_<server>__<tool>``), Gemini CLI
#: ``mcp_<server>_<tool>``.
OUR_SERVERS = ("consolidate",)

_REMINDER = re.compile(r"<\s*system-reminder\s*>.*?(?:<\s*/\s*system-reminder\s*>|\Z)", re.DOTALL | re.IGNORECASE)
#: Text blocks that Claude Code or a hook injected into a user entry, not typed by the user.
_INJECTED_PREFIXES = (
    "<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>", "<local-command-stderr>",
    "<bash-input>", "<bash-stdout>", "<bash-stderr>", "<user-prompt-submit-hook>", "<session-start-hook>",
    "caveat: the messages below were generated", "[request interrupted by user", "this session is being continued",
    "consolidate: this is session", "sessionstart hook additional context",
)


def tail_entries(path: str | os.PathLike, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES,
                 block: int = 65536, end: int | None = None) -> list[tuple[int, int | None, bytes]]:
    """``[(byte offset, line number or None, line)]``: the last ``max_entries`` complete non-blank
    lines of the file, read backwards from its end (or from byte ``end``: the file as it was when a
    hook recorded its size, a later harvest reading what that hook would have read) in
    ``block``-byte steps, never more than ``max_bytes`` bytes in all. Line numbers (1-based) are
    known only when the read reached the start of the file. Raises OSError when the file is not a
    regular file or cannot be read."""
    if not os.path.isfile(path):  # a FIFO or a device would block or never end
        raise OSError(f"not a regular file: {path}")
    chunks: list[bytes] = []
    newlines = 0
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        end = pos = f.tell() if end is None else max(0, min(end, f.tell()))
        while pos > 0 and newlines <= max_entries and end - pos < max_bytes:
            step = min(block, pos, max_bytes - (end - pos))
            pos -= step
            f.seek(pos)
            chunk = f.read(step)
            newlines += chunk.count(b"\n")
            chunks.append(chunk)
    lines = b"".join(reversed(chunks)).split(b"\n")
    offset = pos
    if pos > 0:  # the first line is cut (or the read stopped at the byte ceiling)
        offset += len(lines[0]) + 1
        lines = lines[1:]
    out: list[tuple[int, int | None, bytes]] = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            out.append((offset, number if pos == 0 else None, line))
        offset += len(line) + 1
    return out[-max_entries:]


def is_external_tool(name: object) -> bool:
    """Whether a tool's results come from outside the project: web fetch/search, or an MCP tool of a
    server that is not ours."""
    if not isinstance(name, str):
        return False
    if name in EXTERNAL_TOOLS:
        return True
    if name.startswith("mcp__") or name.startswith("mcp_"):
        server = name[5:].split("__", 1)[0] if name.startswith("mcp__") else name[4:]
        return not any(ours in server for ours in OUR_SERVERS)
    return False


def _blocks(entry: dict) -> list[dict]:
    message = entry.get("message")
    message = message if isinstance(message, dict) else {}
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def text_of(content: Any, sep: str = " ") -> str:
    """The text of a transcript message's content: a string as it is, a list of parts (Claude Code's
    blocks, Gemini CLI's parts) as their ``text`` fields joined by ``sep``; '' for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return sep.join(c.get("text", "") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str))
    return ""


def user_text(text: str) -> str:
    """What the user typed in a user text block: ``<system-reminder>`` spans removed; '' for a block
    that Claude Code or a hook injected (see ``_INJECTED_PREFIXES``)."""
    text = _REMINDER.sub("", text).strip()
    low = text.lower()
    if not text or any(low.startswith(p) for p in _INJECTED_PREFIXES):
        return ""
    from consolidate.rules.guard import NOTICE

    if NOTICE[:60] in text:  # our own SessionStart block, repeated back
        return ""
    return text


def _call_summary(block: dict) -> str:
    """``Bash: npm test`` for a tool call (its most telling input, cut)."""
    name = block.get("name") or "tool"
    data = block.get("input")
    data = data if isinstance(data, dict) else {}
    for key in ("command", "file_path", "absolute_path", "path", "url", "query", "pattern"):
        if isinstance(data.get(key), str):
            return f"{name}: {data[key][:200]}"
    return str(name)


def _is_compact_boundary(entry: dict) -> bool:
    return entry.get("type") == "system" and entry.get("subtype") == "compact_boundary"


def harvest_lines(lines: list[tuple[int, int | None, bytes]], *, since_compaction: bool = False,
                  max_chars: int = MAX_CHARS) -> list[dict[str, Any]]:
    """Candidate notes (``{"content", "metadata", "key"}``, oldest first) from transcript lines
    (``[(byte offset, line number or None, raw line)]``, as :func:`tail_entries` returns them). ``key`` identifies the
    transcript entry and block (``uuid:index``, or ``@offset:index`` for an entry without uuid): the
    same key is never harvested twice (consolidate/agents/hooks/lifecycle.py records them).
    ``since_compaction``: only the entries after the last compaction boundary."""
    entries = []
    for offset, number, raw in lines:
        try:
            entry = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append((number, offset, entry))
    if since_compaction:
        last = max((k for k, (_i, _o, e) in enumerate(entries) if _is_compact_boundary(e)), default=None)
        if last is not None:
            entries = entries[last + 1:]
    numbers = {offset: number for number, offset, _e in entries}
    out: list[dict[str, Any]] = []
    calls: dict[str, dict] = {}
    external: list[str] = []  # external tools used in the current turn
    pending: dict[str, Any] | None = None  # a tool error waiting for the fix that followed

    def meta(entry, offset, index, entry_type, source):
        m = {"source": source, "entry_type": entry_type, "uuid": entry.get("uuid"), "offset": offset,
             "block": index}
        if numbers.get(offset) is not None:
            m["line"] = numbers[offset]
        if entry_type != "user_prompt" and external:
            m["external"] = True
            m["external_tools"] = sorted(set(external))
        return m

    def key(entry, offset, index):
        return f"{entry.get('uuid') or '@' + str(offset)}:{index}"

    def flush(fix: str | None) -> None:
        nonlocal pending
        if pending is None:
            return
        text = pending["text"] + (f"\nWhat followed: {fix}" if fix else "")
        out.append({"content": text[:max_chars], "metadata": pending["metadata"], "key": pending["key"]})
        pending = None

    for _i, offset, entry in entries:
        kind = entry.get("type")
        if kind not in ("user", "assistant") or entry.get("isMeta") or entry.get("isCompactSummary") \
                or entry.get("isVisibleInTranscriptOnly"):
            continue
        blocks = _blocks(entry)
        if kind == "user":
            results = [b for b in blocks if b.get("type") == "tool_result"]
            if results:
                for index, b in enumerate(blocks):
                    if b.get("type") != "tool_result" or not b.get("is_error"):
                        continue  # tool output is not harvested
                    error = text_of(b.get("content")).strip()
                    if not error:
                        continue
                    flush(None)
                    call = calls.get(b.get("tool_use_id") or "") or {}
                    head = f"Tool error ({_call_summary(call)})" if call else "Tool error"
                    m = meta(entry, offset, index, "tool_error", "transcript:tool_error")
                    if call and is_external_tool(call.get("name")):
                        m["external"] = True
                        m["external_tools"] = sorted(set(external) | {call["name"]})
                    pending = {"text": f"{head}: {error[:max_chars // 2]}", "metadata": m,
                               "key": key(entry, offset, index)}
                continue
            if entry.get("isSidechain"):
                continue  # a subagent's prompt is the main agent's text, not the user's
            texts = [(index, user_text(b.get("text") or "")) for index, b in enumerate(blocks)
                     if b.get("type") == "text" and isinstance(b.get("text"), str)]
            texts = [(index, t) for index, t in texts if t]
            if not texts:
                continue
            flush(None)
            external = []  # a new turn begins
            for index, text in texts:
                out.append({"content": text[:max_chars], "metadata": meta(entry, offset, index, "user_prompt",
                                                                           "transcript:user"),
                            "key": key(entry, offset, index)})
            continue
        # assistant
        has_call = any(b.get("type") == "tool_use" for b in blocks)
        for index, b in enumerate(blocks):
            if b.get("type") == "tool_use":
                if b.get("id"):
                    calls[b["id"]] = b
                if is_external_tool(b.get("name")):
                    external.append(b["name"])
                if pending is not None:
                    flush(f"then {_call_summary(b)}")
                continue
            if b.get("type") != "text" or not isinstance(b.get("text"), str):
                continue
            text = b["text"].strip()
            if not text:
                continue
            if pending is not None:
                flush(text[:FIX_CHARS])
            if has_call and len(text) < NARRATION_CHARS and (text.endswith(":") or _NARRATION.match(text)):
                continue  # narration before a tool call
            out.append({"content": text[:max_chars], "metadata": meta(entry, offset, index, "assistant",
                                                                       "transcript:assistant"),
                        "key": key(entry, offset, index)})
    flush(None)
    return out


def harvest_transcript(path: str | None, *, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES,
                       since_compaction: bool = False, end: int | None = None) -> list[dict[str, Any]]:
    """:func:`harvest_lines` of the bounded tail of the transcript at ``path`` (up to byte ``end``
    when given; [] when there is none or it cannot be read), with secrets redacted turn by turn
    (:func:`redact_secrets`)."""
    if not path:
        return []
    try:
        lines = tail_entries(path, max_entries, max_bytes, end=end)
    except OSError:
        return []
    notes = harvest_lines(lines, since_compaction=since_compaction)
    for note in notes:
        redact_secrets(note)
    return notes


def redact_secrets(note: dict[str, Any]) -> None:
    """Replace every secret in ``note["content"]`` by ``[secret removed: KIND]`` in place and record
    the kinds in ``metadata["secret_removed"]``: the turn is kept, its secrets are not. Text the
    write-time prefilter finds nothing in is not scanned (consolidate.store.sessions.tier._worth_scanning)."""
    from consolidate.store.sessions.tier import _worth_scanning

    text = note["content"]
    if not _worth_scanning(text):
        return
    from consolidate.rules.secrets import scan

    findings = scan(text)
    if not findings:
        return
    parts, pos = [], 0
    for f in findings:  # sorted, non-overlapping
        parts.append(text[pos:f.start])
        parts.append(f"[secret removed: {f.kind}]")
        pos = f.end
    parts.append(text[pos:])
    cleaned = "".join(parts)
    if scan(cleaned):  # what is left still reads as a secret (a rule that matches its context)
        from consolidate.rules.secrets import redact

        cleaned = redact(cleaned)
    note["content"] = cleaned
    note["metadata"]["secret_removed"] = sorted({f.kind for f in findings})
