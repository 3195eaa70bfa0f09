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

**Harvests into the session tier, and the ones a killed hook did not finish** (the second part of
this module; the hooks' side of it is consolidate/agents/hooks/lifecycle.py). An end event records
the session end and its harvest as pending (the transcript and its size then) in one transaction
(:func:`end_session`, :func:`record_harvest`); the notes, their entry keys (``harvested``: an entry is
never harvested twice for an agent session) and the harvest's done mark are one transaction
(:func:`add_harvest`). Every consolidation of a queued end makes the pending harvests of its session
first (:func:`finish_pending`, called by consolidate.pipeline.run.run_claimed: the worker, ``run``,
``batch``, ``import-transcripts``), reading each transcript up to the recorded size. The tables and
their statements are consolidate.store.sessions.tables'.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.core.faults import crash_point
from consolidate.core.spawn import alive
from consolidate.core.vocab import END_PENDING
from consolidate.rules.redaction import error_text
from consolidate.store.sessions import tables
from consolidate.store.sessions.segments import base_of
from consolidate.store.sessions.write_gate import worth_scanning
from consolidate.rules.secrets import redact, scan

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
    from consolidate.rules.guard import NOTICE  # noqa: PLC0415 - off the SessionStart hook path (rules.guard)

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
    write-time prefilter finds nothing in is not scanned (consolidate.store.sessions.write_gate.worth_scanning)."""

    text = note["content"]
    if not worth_scanning(text):
        return

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

        cleaned = redact(cleaned)
    note["content"] = cleaned
    note["metadata"]["secret_removed"] = sorted({f.kind for f in findings})


# --- harvests into the session tier; the pending ones a killed hook left -------------------------------

#: Rows of ``harvested``, ``hook_sessions`` and ``recovered`` older than this are pruned (seconds): a
#: transcript that old is not resumed (agent CLIs delete theirs after some weeks).
KEEP_SECONDS = 60 * 86400.0


def transcript_of(tier, session_id: str) -> str | None:
    """The transcript the SessionStart of ``session_id`` recorded, or None."""

    tables.ensure_hook_tables(tier.db)
    return tables.transcript_path(tier.db, session_id)


def add_harvest(tier, session_id: str, transcript_path: Any, *, since_compaction: bool = False,
                log=None, max_entries: int | None = None, end: int | None = None,
                part: str | None = None) -> dict[str, int]:
    """Harvest the transcript (consolidate/pipeline/harvest.py; up to byte ``end`` when given) into
    ``session_id``, skipping every entry block already harvested for its agent session; returns
    ``{entry_type: notes added}``. The keys, the notes and the end of the pending harvest ``part``
    (:func:`record_harvest`) are written in one transaction: two processes harvesting at once never
    add an entry twice, and a process killed before the commit leaves the harvest pending, whole.
    ``log`` (a callable taking one line) gets the secret gate's notices."""

    path = transcript_path if isinstance(transcript_path, str) and transcript_path else transcript_of(tier, session_id)
    notes = harvest_transcript(path, since_compaction=since_compaction, max_entries=max_entries or MAX_ENTRIES,
                               end=end)
    counts: dict[str, int] = {}
    if not notes and part is None:
        return counts
    tables.ensure_hook_tables(tier.db)
    base = base_of(session_id)
    now = time.time()
    with tables.transaction(tier.db):
        for note in notes:
            if not tables.add_harvested_key(tier.db, base, note["key"], now):
                continue
            note_id = tier.add_note(session_id, note["content"], metadata=note["metadata"])
            if log is not None and getattr(note_id, "notice", None):
                log(f"harvest session={session_id}: {note_id.notice}")
            elif log is not None and note["metadata"].get("secret_removed"):
                log(f"harvest session={session_id}: note {int(note_id)} (entry {note['key']}) held secret material"
                    f" ({', '.join(note['metadata']['secret_removed'])}): kept with the secret removed")
            kind = note["metadata"].get("entry_type", "other")
            counts[kind] = counts.get(kind, 0) + 1
        if part is not None:
            tables.clear_pending_harvest(tier.db, session_id, part)
        crash_point(CRASH_HARVEST_COMMIT)
    if notes:
        prune(tier, now=now)
    return counts


#: Crash point (consolidate.core.faults): the harvest's notes, keys and done mark written, not committed.
CRASH_HARVEST_COMMIT = "harvest:commit"
#: The pending harvest part of a session end (a PreCompact's is ``precompact@<transcript size>``).
END_PART = "end"


def _size(path: str | None) -> int | None:
    try:
        return os.stat(path).st_size if path else None
    except OSError:
        return None


def record_harvest(tier, session_id: str, transcript_path: Any, *, part: str = END_PART, event: str | None = None,
                   since_compaction: bool = False, max_entries: int | None = None,
                   now: float | None = None) -> dict[str, Any]:
    """Record the harvest ``part`` of ``session_id`` as pending (``harvest_pending``) before it is
    made: the transcript (the payload's, else the one its SessionStart recorded) and its size now,
    so the harvest made later by another process (:func:`finish_pending`) reads what this one
    would have read. Returns the mark ``{session_id, part, transcript_path, end_offset,
    since_compaction, max_entries, event}`` to pass to :func:`harvest_pending_part`. Part of the
    caller's transaction when there is one."""

    if not tier.db.in_transaction:  # executescript (ensure) would commit the caller's transaction
        tables.ensure_hook_tables(tier.db)
    path = transcript_path if isinstance(transcript_path, str) and transcript_path \
        else tables.transcript_path(tier.db, session_id)
    size = _size(path)
    if part != END_PART and size is not None:
        part = f"{part}@{size}"
    mark = {"session_id": session_id, "part": part, "transcript_path": path, "end_offset": size,
            "since_compaction": since_compaction, "max_entries": max_entries, "event": event}
    tables.record_pending_harvest(tier.db, session_id, part, transcript_path=path, end_offset=size,
                           since_compaction=since_compaction, max_entries=max_entries, event=event,
                           now=time.time() if now is None else now, pid=os.getpid())
    return mark


def end_session(tier, session_id: str, outcome: str, reason: str | None, *, transcript_path: Any = None,
                harvest: bool = False, event: str | None = None) -> dict[str, Any] | None:
    """Queue the session end and, with ``harvest``, record its transcript harvest as pending, in one
    transaction (the hook's first write: a hook killed after it has left the end and what to
    harvest). Returns the pending mark (:func:`record_harvest`), or None without ``harvest``.
    Raises as SessionTier.end (BadInput for a session consolidated as a failure)."""

    if not harvest:
        tier.end(session_id, outcome, reason)
        return None
    tables.ensure_hook_tables(tier.db)
    with tables.transaction(tier.db):
        mark = record_harvest(tier, session_id, transcript_path, event=event)
        tier.end(session_id, outcome, reason)
    return mark


def harvest_pending_part(tier, mark: dict[str, Any], *, log=None) -> dict[str, int]:
    """Make the pending harvest ``mark`` (a row of ``harvest_pending``) and mark it done, in one
    transaction (:func:`add_harvest`); returns ``{entry_type: notes added}``."""
    return add_harvest(tier, mark["session_id"], mark["transcript_path"], since_compaction=bool(mark["since_compaction"]),
                       max_entries=mark["max_entries"], end=mark["end_offset"], part=mark["part"], log=log)


#: How long a process finishing the pending harvests waits for the live hook that recorded one to
#: finish it itself (seconds): a hook is killed at its agent's time budget (Claude Code: about
#: 1.5 s for SessionEnd, 10 s for PreCompact as we install it).
HOOK_GRACE = 12.0


def finish_pending(tier, session_ids: list[str] | None = None, *, by: str = "the worker", log=None,
                   wait: float = HOOK_GRACE) -> list[dict[str, Any]]:
    """Make every harvest a hook recorded and did not finish (of ``session_ids`` only, when given):
    a hook killed at its time budget after it queued the session end. Each is made once (the
    entries already harvested are skipped, in the transaction that marks it done), with what it
    recorded (the transcript up to its size then). A harvest whose recording process still runs
    (the hook itself, harvesting now) is waited for up to ``wait`` seconds first. A session end
    already consolidated gets its end queued again when notes were added (they would be stranded
    otherwise). ``log`` gets one line per harvest made here (``by`` says who made it). Returns
    ``[{"session_id", "part", "event", "harvested": {entry_type: n}}]``; a harvest that fails is
    logged and left pending (tried again next time), except for a session consolidated as a failure
    (it takes no notes: dropped)."""

    tables.ensure_hook_tables(tier.db)
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + wait
    for mark in tables.pending_harvests(tier.db, session_ids):
        pid = mark.get("recorded_by") if time.time() - (mark.get("recorded_at") or 0) < wait else None
        while pid and pid != os.getpid() and alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # the hook that recorded it is still harvesting
            if not any(m["part"] == mark["part"] for m in tables.pending_harvests(tier.db, [mark["session_id"]])):
                break
        if not any(m["part"] == mark["part"] for m in tables.pending_harvests(tier.db, [mark["session_id"]])):
            continue  # the hook finished it
        sid, what = mark["session_id"], mark.get("event") or mark["part"]
        try:
            harvested = harvest_pending_part(tier, mark, log=log)
        except BadInput as exc:
            tables.clear_pending_harvest(tier.db, sid, mark["part"])
            if log is not None:
                log(f"{what} session={sid}: its hook's harvest did not finish and cannot be made now ({error_text(exc)}); dropped")
            continue
        except Exception as exc:  # noqa: BLE001 - left pending, tried again by the next worker
            if log is not None:
                log(f"{what} session={sid}: its hook's harvest did not finish; {by} could not make it either:"
                    f" {error_text(exc, typed=True)} (left pending)")
            continue
        if harvested:
            row = tier.session_end(sid)
            if row is not None and row["status"] not in END_PENDING:
                tier.end(sid, row["outcome"], row["reason"])  # consolidated already: its new notes need a run
        if log is not None:
            log(f"{what} session={sid}: its hook's harvest did not finish (the hook was stopped, e.g. at its"
                f" time budget); made by {by}: {summary(harvested)}")
        out.append({"session_id": sid, "part": mark["part"], "event": mark.get("event"), "harvested": harvested})
    return out


def finish_agent_session(tier, base_session_id: str, *, by: str, log=None) -> list[dict[str, Any]]:
    """:func:`finish_pending` for every part (the session and its resumed segments) of the agent
    session ``base_session_id``."""

    tables.ensure_hook_tables(tier.db)
    return finish_pending(tier, [base_session_id, *tables.segments(tier.db, base_session_id)], by=by, log=log)


def prune(tier, *, now: float | None = None) -> None:
    """Delete the rows older than :data:`KEEP_SECONDS` from this module's tables."""

    tables.ensure_hook_tables(tier.db)
    tables.prune_hook_tables(tier.db, (time.time() if now is None else now) - KEEP_SECONDS)


def summary(counts: dict[str, int]) -> str:
    """``3 notes harvested (user_prompt 1, assistant 1, tool_error 1)``."""
    total = sum(counts.values())
    if not counts:
        return "0 notes harvested"
    return f"{total} notes harvested ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})"


def started(tier, base_session_id: str) -> bool:
    """Whether a SessionStart hook recorded a part of the agent session ``base_session_id``."""

    tables.ensure_hook_tables(tier.db)
    return tables.hook_session_started(tier.db, base_session_id)


def harvested_keys(tier, base_session_id: str) -> set[str]:
    """The transcript entry keys harvested for the agent session ``base_session_id``."""

    tables.ensure_hook_tables(tier.db)
    return tables.harvested_keys(tier.db, base_session_id)


def mark_harvested(tier, base_session_id: str, keys: list[str], *, now: float | None = None) -> None:
    """Record ``keys`` as harvested for the agent session (one transaction; a key already there is
    kept): resuming that session later never harvests them again."""
    if not keys:
        return

    tables.mark_harvested(tier.db, base_session_id, keys, time.time() if now is None else now)
