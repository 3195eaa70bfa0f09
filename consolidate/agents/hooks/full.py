"""``consolidate hook``: what agent CLIs call from their session hooks. It never blocks the agent.

Agent CLIs give session-end hooks very little time (Claude Code: about 1.5 s in total by default,
``CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS``, killing them past it; Gemini CLI does not wait; Codex
has only Stop). So for an end event the hook only records the session end in the queue and starts a
detached worker (``consolidate worker``, a new process session, output to ``logs/worker.log``), then
exits 0; ``--harvest`` then adds candidate notes from the end of the transcript (bounded: see
:func:`tail_lines`). For SessionStart it records the agent session as the store's current one (the
MCP server's notes go to it: consolidate.store.sessions.agents) and prints the session id and the recalled
context (``memory/core.md`` and ``memory/context.md``, bounded) on stdout for the agent. Whatever fails, it exits 0 and leaves a log
line in ``logs/hook.log``. Only the standard library is imported here.

Input: the hook's JSON on stdin, read with a bound (a stdin that never closes cannot hang it):
Claude Code's SessionEnd, Stop, PreCompact and SessionStart (``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name``, ``reason``), Gemini CLI's SessionEnd/SessionStart and Codex's Stop
(``session_id``/``thread-id``, ``hook_event_name``/``type``); unknown fields are ignored.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consolidate.agents.hooks.fast_start import session_line  # one wording for the full and the light SessionStart
from consolidate.agents.hooks.payload import (  # noqa: F401 - event_name and the event sets: the hook's names for them
    BEFORE_TOOL, END_EVENTS, PRE_COMPACT, PRE_TOOL_USE, SESSION_END, SESSION_START, START_EVENTS, STOP, TOOL_EVENTS,
    cwd_of, event_name, reason_of, session_id_of, transcript_path_of)
from consolidate.core.faults import crash_point
from consolidate.core.settings import JUDGE_CHILD
from consolidate.core.spawn import spawn_worker
from consolidate.store.hook_log import fallback_log, log  # noqa: F401 - log: the hook's log line, for its callers
from consolidate.store.sessions.segments import session_for_end
from consolidate.store.store import Store
from consolidate.store.layout import GITIGNORE, SESSIONS_DB, WORKER_LOG
from consolidate.rules.redaction import error_text
# what SessionStart prints (core.md and context.md, checked, guarded, bounded) and the start file made of it
from consolidate.store.views.recalled import recalled_context, refresh_start_file
from consolidate.core.private import prepare_store_dir
from consolidate.store.sessions.tier import SessionTier
from consolidate.store.worker_health import start_line
from consolidate.agents.hooks.lifecycle import PRECOMPACT_MAX_ENTRIES
from consolidate.store.sessions.agents import record_start
from consolidate.store.views import shown as agent_view
from consolidate.agents.hooks.lifecycle import recover_missed, session_for_start, stranded
from consolidate.agents.hooks import fast  # fast.read_stdin: one bounded read, shared with the light entry point
from consolidate.agents.hooks.payload import HOOK_REFUSED, EVENT_KEY, command_line_payload, gemini_output, raw_cwd, session_ids
from consolidate.core.errors import BadInput
from consolidate.pipeline import harvest as transcript_harvest
from consolidate.store import resolve
from consolidate.store.sessions.tier import check_session_id

if TYPE_CHECKING:  # imported by name by the tool events (FILE_RECALL): the edge for grimp and mypy
    from consolidate.agents import file_recall  # noqa: F401

#: File recall (PreToolUse, BeforeTool), imported by name by the events that need it: the session start
#: and end never load it.
FILE_RECALL = "consolidate.agents.file_recall"

#: Environment guard set by our own judge subprocesses (``claude -p`` fires its hooks): a hook that
#: sees it does nothing, so a judge never recurses into consolidation.
CHILD_GUARD = JUDGE_CHILD.name
#: stdin bounds: at most this many bytes, waiting at most this many seconds in total.
STDIN_MAX_BYTES = 1_000_000
STDIN_TIMEOUT = 0.5
#: Harvest bounds: the last this many transcript entries, each text cut at this many characters.
HARVEST_MAX_ENTRIES = 400
HARVEST_MAX_CHARS = 4_000
#: Harvest memory ceiling: at most this many bytes are read from the end of the transcript.
HARVEST_MAX_BYTES = 8 * 1024 * 1024
#: Crash points (consolidate.core.faults; ``CONSOLIDATE_CRASH_AT``) of an end event and of PreCompact.
CRASH_END_QUEUED = "hook:end:queued"  # the end and its pending harvest committed, no worker started
CRASH_END_HARVESTED = "hook:end:harvested"  # the harvest committed, nothing logged
CRASH_PRECOMPACT_RECORDED = "hook:precompact:recorded"  # the pending harvest committed, not made


def read_stdin(stream=None, timeout: float = STDIN_TIMEOUT, max_bytes: int = STDIN_MAX_BYTES) -> bytes:
    """Read stdin until EOF, ``max_bytes`` or ``timeout`` seconds, whichever comes first."""
    return fast.read_stdin(stream, timeout, max_bytes)


def parse_event(raw: bytes) -> dict[str, Any]:
    """The hook payload as a dict ({} for empty or invalid input)."""
    try:
        data = json.loads(raw.decode("utf-8", "replace")) if raw.strip() else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def tail_lines(path: str | os.PathLike, max_lines: int = HARVEST_MAX_ENTRIES,
               max_bytes: int = HARVEST_MAX_BYTES, block: int = 65536) -> list[bytes]:
    """The last ``max_lines`` complete lines of a file, never more than ``max_bytes`` bytes read
    from its end (consolidate.pipeline.harvest.tail_entries). Raises OSError when the file cannot be read."""
    return [line for _offset, _number, line in transcript_harvest.tail_entries(path, max_lines, max_bytes, block)]


def harvest(transcript_path: str | None, limit: int = HARVEST_MAX_ENTRIES,
            max_bytes: int = HARVEST_MAX_BYTES) -> list[dict[str, Any]]:
    """Candidate notes from a Claude Code transcript (JSONL), as ``{"content", "metadata", "key"}``
    dicts, oldest first: user prompts, assistant conclusions, tool errors with the fix that followed
    (consolidate/pipeline/harvest.py says what is taken and what is left out). Only the last ``limit`` entries
    within the last ``max_bytes`` bytes of the file are read, so a transcript of any size costs the
    same bounded time and memory."""
    return transcript_harvest.harvest_transcript(transcript_path if isinstance(transcript_path, str) else None,
                              max_entries=limit, max_bytes=max_bytes)


def _add_harvest(tier, sid: str, transcript_path: Any, store_path: Path | None = None,
                 since_compaction: bool = False, max_entries: int | None = None) -> dict[str, int]:
    """Add the harvested notes whose transcript entry was not harvested before for this agent
    session (consolidate/agents/hooks/lifecycle.py: a PreCompact harvest followed by a SessionEnd one, or a
    resumed session's next end, adds nothing twice); returns ``{entry_type: notes added}``."""
    return transcript_harvest.add_harvest(tier, sid, transcript_path if isinstance(transcript_path, str) else None,
                       since_compaction=since_compaction, max_entries=max_entries,
                       log=(lambda line: log(store_path, line)) if store_path is not None else None)


def run_hook(store_path: Path, *, payload: dict[str, Any], outcome: str = "success", harvest_notes: bool = False,
             spawn: bool = True, options: dict[str, Any] | None = None, agent: str | None = None,
             wait_worker: bool = False) -> tuple[int, str]:
    """Handle one hook event; returns (exit code, stdout text). Exit code is always 0.

    SessionStart: record the agent session as the store's current one (consolidate.store.sessions.agents)
    and return its id line and the recalled context; start a worker when a session end waits with a
    harvest its hook did not finish. An end event (SessionEnd, Stop): queue the session end with
    (``harvest_notes``) its harvest marked pending, in one transaction, then start a worker with
    ``options`` (store options and judges), then make the bounded transcript harvest and mark it
    done, in one transaction: killed anywhere, the worker makes the harvest that did not finish,
    once (consolidate/agents/hooks/lifecycle.py). ``wait_worker`` (the ``consolidate hook`` process): the
    worker waits for this process to exit before it starts its work, so it does not compete with
    the harvest for the CPU. PreCompact (``harvest_notes``): harvest only, marked pending first."""
    if JUDGE_CHILD.get():
        return 0, ""
    name = event_name(payload)
    sid = session_id_of(payload)
    if read_only(store_path):
        return 0, _on_read_only(store_path, name, sid, payload)
    try:
        if name in START_EVENTS:
            header = team_context_header(store_path)  # team mode: a bounded fresh pull first
            text = recalled_context(store_path)
            if header:
                text = header + ("\n\n" + text if text else "")

            warning = start_line(store_path)  # workers failing, ends piling up (consolidate/store/worker_health.py)
            if warning:
                text = warning + ("\n\n" + text if text else "")
            if sid:
                sid = _session_for_start(store_path, sid, payload)
                unrecorded = _record_start(store_path, sid, payload, agent, shown=text)
                text = session_line(sid, unrecorded) + ("\n\n" + text if text else "")
                _recover_missed(store_path, sid, payload, outcome=outcome, harvest_notes=harvest_notes,
                                spawn=spawn, options=options)
            if not header:
                refresh_start_file(store_path)  # the next SessionStart prints from the start file (consolidate/store/views/recalled.py)
            return 0, text
        if name in TOOL_EVENTS:
            return 0, importlib.import_module(FILE_RECALL).run(store_path, sid, payload)
        if not sid:
            log(store_path, f"ignored {name or 'unknown'} event without a session id")
            return 0, ""

        prepare_store_dir(store_path, GITIGNORE.name)
        tier = SessionTier(SESSIONS_DB.of(store_path))
        try:
            if name in END_EVENTS:
                # queue first, with what to harvest (consolidate/agents/hooks/lifecycle.py): a hook killed at its
                # time budget has still recorded the session end, and its harvest is made by the worker
                reason = reason_of(payload)
                sid = session_for_end(tier, sid)  # a resumed session's open part
                mark = transcript_harvest.end_session(tier, sid, outcome, reason, transcript_path=transcript_path_of(payload),
                                   harvest=harvest_notes, event=name)
                crash_point(CRASH_END_QUEUED)
                # the worker now: it survives this hook being killed, and waits for the harvest below
                pid = spawn_worker(store_path, options=options, log=WORKER_LOG.of(store_path), after=os.getpid() if wait_worker else None) \
                    if spawn else None
                harvested = transcript_harvest.harvest_pending_part(tier, mark, log=lambda line: log(store_path, line)) \
                    if mark is not None else {}
                crash_point(CRASH_END_HARVESTED)
                tier.close()
                log(store_path, f"{name} session={sid} queued ({outcome})"
                    + (f", {transcript_harvest.summary(harvested)}" if harvest_notes else "") + f"; worker pid {pid}")
            elif name == PRE_COMPACT and harvest_notes:
                sid = session_for_end(tier, sid)
                # recorded first: a hook killed before its harvest commits leaves it to the worker at the end
                mark = transcript_harvest.record_harvest(tier, sid, transcript_path_of(payload), part=PRE_COMPACT, event=name,
                                      since_compaction=True, max_entries=PRECOMPACT_MAX_ENTRIES)
                crash_point(CRASH_PRECOMPACT_RECORDED)
                harvested = transcript_harvest.harvest_pending_part(tier, mark, log=lambda line: log(store_path, line))
                log(store_path, f"{name} session={sid}: {transcript_harvest.summary(harvested)} (the part about to be compacted)")
            else:
                log(store_path, f"{name or 'unknown'} session={sid}: nothing to do")
        finally:
            tier.close()
    except Exception as exc:  # the hook never fails the agent
        log(store_path, f"error on {name} session={sid}: {error_text(exc, typed=True)}")
    return 0, ""


def read_only(store_path: Path) -> bool:
    """Whether the store folder exists and this process cannot write it (a read-only mount or
    folder; ``access(2)`` answers EROFS for root too)."""
    return store_path.is_dir() and not os.access(store_path, os.W_OK)


#: What each hook event could not do on a read-only store (the one line it gives).
_NOT_DONE = {SESSION_START: "session {sid} was not recorded (its MCP notes need session_id, and nothing can be"
                             " written to the store)",
             SESSION_END: "the end of session {sid} was not queued (it is not consolidated)",
             STOP: "the end of session {sid} was not queued (it is not consolidated)",
             PRE_COMPACT: "nothing was harvested for session {sid} before the compaction",
             PRE_TOOL_USE: "what session {sid} was shown about the file is not recorded (it may be shown again)",
             BEFORE_TOOL: "what session {sid} was shown about the file is not recorded (it may be shown again)"}


def _on_read_only(store_path: Path, name: str, sid: str | None, payload: dict[str, Any]) -> str:
    """Every hook event on a read-only store: what can be read is still given (SessionStart's
    context, a tool event's memories about the file), nothing is written, and the event gives one
    line saying what was not done (stderr and the fallback log, consolidate.store.hook_log.fallback_log;
    the README's "one line to stderr"). Returns the stdout text. Never raises."""
    text = ""
    try:
        if name in START_EVENTS:
            text = recalled_context(store_path)
            if sid:
                why = f"StoreReadOnly: the store {store_path} is read-only"
                text = session_line(sid, why) + ("\n\n" + text if text else "")
        elif name in TOOL_EVENTS:
            text = importlib.import_module(FILE_RECALL).run(store_path, sid, payload, record=False)
    except Exception:  # noqa: BLE001 - the hook never fails the agent
        pass
    what = _NOT_DONE.get(name, "{event} session={sid}: nothing was recorded").format(sid=sid or "?", event=name or "?")
    fallback_log(str(store_path), f"error: the store is read-only: {what}")
    return text


def team_context_header(store_path: Path) -> str:
    """For a store with a replica (a team: consolidate/store/replica.py): pull the team's changes
    within a time bound and return the header saying whether the context is fresh or the last pulled
    copy ('' otherwise; never raises). A store not in a team imports nothing of the team code."""
    try:
        replica = Store(store_path, create=False).replica()
    except Exception:  # noqa: BLE001 - the hook never fails the agent
        return ""
    return replica.start_header() if replica is not None else ""


def _record_start(store_path: Path, sid: str, payload: dict[str, Any], agent: str | None,
                  shown: str = "") -> str | None:
    """Record the agent session for the MCP server, and the memory texts of the context ``shown``
    to it (a repeat of them is an echo: consolidate.store.echo). None when recorded, else why not (one
    line; logged too). Never raises: the context is printed anyway."""
    try:

        prepare_store_dir(store_path, GITIGNORE.name)
        tier = SessionTier(SESSIONS_DB.of(store_path))
        try:
            cwd = cwd_of(payload)
            record_start(tier, sid, agent=agent, cwd=cwd)
            agent_view.record_lines(tier, sid, shown)  # a repeat is an echo (the agent view's record)
        finally:
            tier.close()
        log(store_path, f"sessionstart session={sid}: recorded as the current session")
        return None
    except Exception as exc:  # noqa: BLE001
        log(store_path, f"error recording sessionstart session={sid}: {error_text(exc, typed=True)}")
        why = getattr(exc, "strerror", None) or error_text(exc, limit=160) or type(exc).__name__
        return f"{type(exc).__name__}: {why}"


def _session_for_start(store_path: Path, sid: str, payload: dict[str, Any]) -> str:
    """The session a SessionStart opens (a resumed session's new part: consolidate/agents/hooks/lifecycle.py);
    ``sid`` itself when that cannot be decided. Never raises."""
    try:
        prepare_store_dir(store_path, GITIGNORE.name)
        tier = SessionTier(SESSIONS_DB.of(store_path))
        try:
            opened = session_for_start(tier, sid, payload)
        finally:
            tier.close()
        if opened != sid:
            log(store_path, f"sessionstart session={sid}: resumed after its end; its new part is session {opened}")
        return opened
    except Exception as exc:  # noqa: BLE001
        log(store_path, f"error opening session={sid}: {error_text(exc, typed=True)}")
        return sid


def _recover_missed(store_path: Path, sid: str, payload: dict[str, Any], *, outcome: str, harvest_notes: bool,
                    spawn: bool, options: dict[str, Any] | None) -> None:
    """Queue the ends of the sessions whose end never fired (consolidate/agents/hooks/lifecycle.py) and start
    a worker when one has notes, or when a queued session end waits with a harvest its hook did not
    finish (the worker makes it). Never raises."""
    try:

        tier = SessionTier(SESSIONS_DB.of(store_path))
        try:
            cwd = cwd_of(payload)
            recovered = recover_missed(tier, sid, cwd=cwd, outcome=outcome, harvest=harvest_notes,
                                       log=lambda line: log(store_path, line))
            unfinished = stranded(tier)
        finally:
            tier.close()
        for r in recovered:
            log(store_path, f"sessionstart session={sid}: recovered session {r['session_id']} whose end never fired"
                f" ({r['notes']} notes, {r['harvested']} harvested), queued ({outcome})")
        if unfinished:
            log(store_path, f"sessionstart session={sid}: the harvest of {', '.join(unfinished[:5])} did not finish"
                " (its hook was stopped); " + ("a worker makes it" if spawn else "the next run makes it"))
        if spawn and (any(r["notes"] or r["harvested"] for r in recovered) or unfinished):
            spawn_worker(store_path, options=options, log=WORKER_LOG.of(store_path))
    except Exception as exc:  # noqa: BLE001
        log(store_path, f"error recovering missed sessions at session={sid}: {error_text(exc, typed=True)}")


def cmd_hook(args) -> int:
    """``consolidate hook`` when the light entry point (consolidate/agents/hooks/fast.py) leaves the call to
    the full command line: the payload from stdin (or ``--session``), refused or run by :func:`run_hook`.
    Always exits 0 but for a refused call: a hook must never fail or block the agent."""

    payload: dict = {}
    try:
        payload = command_line_payload(args.session, args.event) if args.session else parse_event(read_stdin())
        if args.event and not args.session:
            payload.setdefault(EVENT_KEY, args.event)
        refused = hook_refusal(args, payload)
        if refused:
            sys.stderr.write(f"consolidate hook: refused: {refused}; nothing was written\n")
            return HOOK_REFUSED
        store = resolve.store_path(args.store, cwd=raw_cwd(payload))
        options = {"chroma_url": args.chroma_url, "project": args.project, "embedding": args.embedding,
                   "judges": args.judge}
        code, text = run_hook(Path(store), payload=payload, outcome=args.outcome, harvest_notes=args.harvest,
                              spawn=not args.no_worker, options=options, wait_worker=True,
                              agent="gemini-cli" if args.output == "gemini" else None)
        if text and event_name(payload) in TOOL_EVENTS:
            sys.stdout.write(text + "\n")  # already the JSON both agents read (consolidate/agents/file_recall.py)
        elif text and args.output == "gemini":
            sys.stdout.write(gemini_output(text) + "\n")
        elif text:
            sys.stdout.write(text + "\n")
    except BaseException as exc:  # noqa: BLE001 - the hook's promise is exit 0, whatever happens
        try:
            log(Path(resolve.store_path(args.store, cwd=raw_cwd(payload))), f"hook failed: {error_text(exc, typed=True)}")
        except Exception:
            pass
    return 0


def hook_refusal(args, payload: dict) -> str | None:
    """Why this hook call must do nothing, in one line, or None. Refused before anything is written
    (no store, no log): a payload ``cwd`` that is not an existing folder (the store would be created
    under it) when no ``--store``/``$CONSOLIDATE_STORE`` is given, and a session id holding a control
    character (``consolidate.store.sessions.tier.check_session_id``)."""

    for key, value in session_ids(payload):
        try:
            check_session_id(value)
        except BadInput as exc:
            return f"{key}: {error_text(exc)}"
    cwd = raw_cwd(payload)
    if resolve.named(args.store) or cwd is None:
        return None
    if not isinstance(cwd, str) or not cwd.strip() or "\x00" in cwd:
        return f"the payload's cwd is not a folder path ({type(cwd).__name__} {str(cwd)[:80]!r})"
    shown = cwd if len(cwd) <= 200 else cwd[:197] + "..."
    if not os.path.isabs(cwd):
        return f"the payload's cwd {shown!r} is not an absolute path"
    if resolve.payload_folder(cwd) is None:  # in the spelling on disk when only its other NFC/NFD one names it
        what = "is not a folder" if os.path.exists(cwd) else "does not exist"
        return f"the payload's cwd {shown!r} {what} (no store is created there; give --store to choose one)"
    return None
