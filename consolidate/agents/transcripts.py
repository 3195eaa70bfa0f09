"""Past transcripts: ``consolidate import-transcripts [PATH ...] [--claude-code] [--gemini-cli]``.

Agent CLIs delete their transcripts after some weeks (Claude Code's ``cleanupPeriodDays``, 30 by
default); what the user and the agent said there is lost unless it is harvested first. This module
finds the transcripts of the store's project and harvests each as one session, with the hook's own
harvest (:func:`consolidate.agents.hooks.full.harvest`: what is taken and what is left out is decided there, in
one place, for the hook and for this import):

- **Claude Code** keeps one JSONL file per session in ``~/.claude/projects/<slug>/<session id>.jsonl``
  (``$CLAUDE_CONFIG_DIR`` instead of ``~/.claude`` when set), the slug being the project's absolute
  path with every character other than a letter or a digit replaced by ``-``.
- **Gemini CLI** keeps chats in ``~/.gemini/tmp/<project>/chats/session-*.json`` (one JSON document:
  ``{sessionId, messages: [{id, type: user|gemini|info|error, content, toolCalls}]}``), or, in newer
  versions, ``session-*.jsonl`` (a metadata line, then one message per line, a message written again
  in full when it is updated: the last copy wins). ``<project>`` is the SHA-256 of the project's
  absolute path (older versions) or a slug of its folder name with a ``.project_root`` file naming
  the path (newer). A chat is turned into Claude Code's entry shape (user text, assistant text and
  tool calls, failed tool calls as tool errors) and harvested the same way.
- A **PATH** is a transcript file or a folder searched for both kinds.

Idempotent per transcript, wherever it lies: the ledger ``imports/transcripts.jsonl`` in the store
records each transcript's SHA-256 digest and the transcript entries it gave notes from; a second run
imports nothing (``unchanged``), a copy of an imported transcript at another path nothing
(``duplicate``: same digest; a copy that changed gives only entries not harvested before, since a
Claude Code transcript's session is the ``sessionId`` its entries hold, not its file name), and a transcript that grew since (a resumed session) gives only its new
entries. A session the store's hooks know (its SessionStart or its end recorded) is skipped: the
hooks harvest it at its end, or recover it at the next SessionStart; a harvest the hooks recorded
with its end and did not finish (a hook killed at its time budget) is made first, into the hooks'
session, and counted apart (``hook-harvest-finished``); and the entries an import
harvested are recorded in the hooks' own ``harvested`` table, so resuming that session later never
harvests them twice. The entries whose run ``consolidate undo`` undid are imported again by the next
import (consolidate/agents/undone_imports.py; each ledger row carries the time it was written, so the run
that took its notes is known). Each imported transcript is one session ``transcript-<agent>-<session
id>``, ended ``success`` and consolidated as usual (judge, write policy, secret gate) unless
``--no-run`` leaves it to a worker. A progress bar (tqdm, already a dependency) runs on a terminal.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from consolidate.core.errors import BadInput
from consolidate.store.layout import TRANSCRIPTS_LEDGER
from consolidate.pipeline.harvest import finish_agent_session, harvested_keys, mark_harvested, started, text_of
from consolidate.store.hook_log import log
from consolidate.agents.hooks.full import harvest
from consolidate.core.jsonl import read_lines
from consolidate.agents.undone_imports import runs_by_session, undone_at
from consolidate.core.private import private_file
from consolidate.store.sessions.tier import check_session_id
import time

#: The most of one transcript that is read (its end): a larger file is harvested from its last 256 MB.
MAX_BYTES = 256 * 1024 * 1024
#: The most entries of one transcript harvested.
MAX_ENTRIES = 1_000_000


@dataclass
class Transcript:
    """One transcript found: ``agent`` is ``claude-code`` or ``gemini-cli``."""

    path: Path
    agent: str
    session_id: str


@dataclass
class ImportResult:
    """What :func:`import_transcripts` did: per transcript ``{"path", "agent", "session_id",
    "status": imported|unchanged|duplicate|no-new-entries|empty|skipped-hooked|hook-harvest-finished|unreadable,
    "notes"}`` (``duplicate``: the same content as a transcript imported from another path, ``same_as``;
    ``hook-harvest-finished``: the hooks' harvest of the session had not finished, made now into
    their session, ``notes`` added)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r["status"] == status)

    @property
    def notes(self) -> int:
        return sum(r["notes"] for r in self.rows)


# -- finding transcripts -------------------------------------------------------------------------

def claude_home(environ: dict[str, str] | None = None) -> Path:
    """``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    env = os.environ if environ is None else environ
    return Path(env.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def claude_slug(project: Path) -> str:
    """Claude Code's folder name for a project: its absolute path, every character other than an
    ASCII letter or digit replaced by ``-`` (``/home/me/my.app`` -> ``-home-me-my-app``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(Path(project).resolve()))


def claude_code_transcripts(project: Path, environ: dict[str, str] | None = None) -> list[Transcript]:
    """The Claude Code transcripts of ``project``, oldest first (by modification time)."""
    folder = claude_home(environ) / "projects" / claude_slug(project)
    files = sorted(folder.glob("*.jsonl"), key=_mtime) if folder.is_dir() else []
    return [Transcript(p, "claude-code", claude_session_id(p)) for p in files if p.is_file()]


def gemini_project_folders(project: Path, home: Path | None = None) -> list[Path]:
    """Gemini CLI's folders of ``project`` under ``~/.gemini/tmp``: the one named by the SHA-256 of
    its path, and those whose ``.project_root`` names it."""
    root = (home or Path.home()) / ".gemini" / "tmp"
    if not root.is_dir():
        return []
    path = str(Path(project).resolve())
    out = []
    hashed = root / hashlib.sha256(path.encode()).hexdigest()
    if hashed.is_dir():
        out.append(hashed)
    for marker in root.glob("*/.project_root"):
        try:
            if marker.read_text(encoding="utf-8").strip() == path and marker.parent not in out:
                out.append(marker.parent)
        except OSError:
            continue
    return out


def gemini_cli_transcripts(project: Path, home: Path | None = None) -> list[Transcript]:
    """The Gemini CLI chats of ``project``, oldest first."""
    files: list[Path] = []
    for folder in gemini_project_folders(project, home):
        files += [p for p in (folder / "chats").glob("session-*.json*") if p.suffix in (".json", ".jsonl")]
    return [Transcript(p, "gemini-cli", _gemini_session_id(p)) for p in sorted(files, key=_mtime)]


def in_path(path: Path) -> list[Transcript]:
    """The transcripts a PATH names: the file itself, or every ``*.jsonl`` and ``session-*.json``
    below a folder. Raises BadInput when it does not exist."""
    path = Path(path)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted([*path.rglob("*.jsonl"), *path.rglob("session-*.json")], key=_mtime)
    else:
        raise BadInput(f"no such file or folder: {path}")
    out = []
    for p in files:
        agent = "gemini-cli" if _looks_gemini(p) else "claude-code"
        out.append(Transcript(p, agent, _gemini_session_id(p) if agent == "gemini-cli" else claude_session_id(p)))
    return out


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def _looks_gemini(path: Path) -> bool:
    if path.suffix == ".json":
        return True
    try:
        with open(path, "rb") as f:
            first = json.loads(f.readline() or b"{}")
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and "sessionId" in first and "projectHash" in first


def claude_session_id(path: Path, max_lines: int = 200) -> str:
    """The session id a Claude Code transcript holds (the ``sessionId`` of its first entries), else
    its file name's stem: a transcript copied or renamed is still the same session (its entries the
    same, already harvested)."""
    try:
        with open(path, "rb") as f:
            for _ in range(max_lines):
                line = f.readline(1_000_000)
                if not line:
                    break
                try:
                    sid = json.loads(line).get("sessionId")
                except (ValueError, AttributeError):
                    continue
                if isinstance(sid, str) and sid.strip():
                    return sid.strip()
    except OSError:
        pass
    return path.stem


def _gemini_session_id(path: Path) -> str:
    try:
        if path.suffix == ".json":
            with open(path, encoding="utf-8") as f:
                sid = json.load(f).get("sessionId")
        else:
            with open(path, encoding="utf-8") as f:
                sid = json.loads(f.readline()).get("sessionId")
        if isinstance(sid, str) and sid.strip():
            return sid.strip()
    except (OSError, ValueError, AttributeError):
        pass
    return path.stem


# -- Gemini CLI chats in Claude Code's shape --------------------------------------------------------

def gemini_messages(path: Path) -> list[dict[str, Any]]:
    """The messages of a Gemini CLI chat (``.json`` document or ``.jsonl`` record), in order; of a
    message written more than once the last copy. [] when the file cannot be read."""
    try:
        if path.suffix == ".json":
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            messages = data.get("messages") if isinstance(data, dict) else None
            return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
        order: list[str] = []
        latest: dict[str, dict] = {}
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f):
                try:
                    m = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(m, dict) or "type" not in m:
                    continue  # the metadata line, "$set" updates
                key = str(m.get("id") or f"@{n}")
                if key not in latest:
                    order.append(key)
                latest[key] = m
        return [latest[k] for k in order]
    except (OSError, ValueError):
        return []


def _gemini_text(content: Any) -> str:
    return text_of(content, "\n")


def gemini_as_claude_entries(messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Gemini CLI messages as Claude Code transcript entries: a ``user`` message as a user text
    entry, a ``gemini`` message as an assistant entry (its text, then its tool calls as
    ``tool_use``), a failed tool call as a user entry holding an ``is_error`` tool result."""
    out = []
    for m in messages:
        kind, uid = m.get("type"), str(m.get("id") or "")
        text = _gemini_text(m.get("content"))
        if kind == "user" and text.strip():
            out.append({"type": "user", "uuid": uid, "timestamp": m.get("timestamp"),
                        "message": {"role": "user", "content": [{"type": "text", "text": text}]}})
        elif kind == "gemini":
            calls = [c for c in m.get("toolCalls") or [] if isinstance(c, dict)]
            blocks: list[dict[str, Any]] = ([{"type": "text", "text": text}] if text.strip() else []) + [
                {"type": "tool_use", "id": str(c.get("id") or i), "name": c.get("name") or "tool",
                 "input": c.get("args") if isinstance(c.get("args"), dict) else {}} for i, c in enumerate(calls)]
            if blocks:
                out.append({"type": "assistant", "uuid": uid, "timestamp": m.get("timestamp"),
                            "message": {"role": "assistant", "content": blocks}})
            errors = [c for c in calls if str(c.get("status", "")).lower() in ("error", "failed", "failure")]
            for i, c in enumerate(errors):
                result = c.get("resultDisplay") or _gemini_text(c.get("result")) or json.dumps(c.get("result"))[:2000]
                out.append({"type": "user", "uuid": f"{uid}-error-{i}", "timestamp": m.get("timestamp"),
                            "message": {"role": "user", "content": [
                                {"type": "tool_result", "tool_use_id": str(c.get("id") or i), "is_error": True,
                                 "content": str(result)}]}})
    return out


# -- harvesting ------------------------------------------------------------------------------------

def digest(path: Path) -> str:
    """SHA-256 of the file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def harvest_file(t: Transcript) -> list[dict[str, Any]]:
    """The candidate notes of one transcript (``{"content", "metadata", "key"}``), through the hook's
    harvest (:func:`consolidate.agents.hooks.full.harvest`); a Gemini CLI chat is first written in Claude Code's
    shape to a private temporary file."""

    if t.agent == "claude-code":
        notes = harvest(str(t.path), MAX_ENTRIES, MAX_BYTES)
    else:
        entries = gemini_as_claude_entries(gemini_messages(t.path))
        if not entries:
            return []
        fd, tmp = tempfile.mkstemp(prefix="consolidate-gemini-", suffix=".jsonl")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                for e in entries:
                    f.write(json.dumps(e, ensure_ascii=False) + "\n")
            notes = harvest(tmp, MAX_ENTRIES, MAX_BYTES)
        finally:
            os.unlink(tmp)
    for n in notes:
        meta = n.setdefault("metadata", {})
        if not n.get("key"):  # the key names the entry (and block) a note came from
            n["key"] = f"{meta.get('uuid') or ''}:{hashlib.sha256(n['content'].encode()).hexdigest()[:16]}"
        meta["transcript"] = str(t.path)
        meta["agent"] = t.agent
    return notes


def _ledger(store) -> tuple[dict[str, dict[str, Any]], dict[str, set[str]]]:
    """``({absolute transcript path: {"digest", "keys": set, "session_id", "reopened"}}, {agent session id: keys})``
    from the ledger. A row whose notes were consolidated by a run that ``consolidate undo`` undid
    (consolidate/agents/undone_imports.py) counts as never imported: its path is left out when no other row
    names it (``reopened`` when other rows do: the file is read again though unchanged), and its entry
    keys are given in the second map (by the transcript's agent session), so the hooks' harvest table
    does not hold them back either."""

    rows = [r for r in read_lines(store.sub(TRANSCRIPTS_LEDGER)) if isinstance(r.get("path"), str)]
    runs = runs_by_session(store) if any(r.get("keys") for r in rows) else {}
    out: dict[str, dict[str, Any]] = {}
    undone_keys: dict[str, set[str]] = {}
    reopened: dict[str, set[str]] = {}
    for row in rows:
        sid = row.get("session_id")
        if row.get("keys") and isinstance(sid, str):
            if undone_at(runs.get(sid, []), row.get("ts")):
                undone_keys.setdefault(_agent_session(row), set()).update(row["keys"])
                reopened.setdefault(row["path"], set()).update(row["keys"])
                continue
        cur = out.setdefault(row["path"], {"digest": None, "keys": set(), "session_id": None, "reopened": False})
        cur["digest"] = row.get("digest")
        cur["keys"] |= set(row.get("keys") or ())
        cur["session_id"] = sid or cur["session_id"]
    for path, cur in out.items():  # a key imported again after the undo is held back again
        for keys in undone_keys.values():
            keys -= cur["keys"]
        cur["reopened"] = bool(reopened.get(path, set()) - cur["keys"])  # not unchanged: entries to take again
    return out, undone_keys


def _agent_session(row: dict[str, Any]) -> str:
    """The agent session a ledger row's transcript belongs to (rows written before it was recorded:
    from the import session ``transcript-<agent>-<session id>``)."""
    if isinstance(row.get("agent_session"), str):
        return row["agent_session"]
    sid = str(row.get("session_id") or "")
    for agent in ("claude-code", "gemini-cli"):
        if sid.startswith(f"transcript-{agent}-"):
            return sid[len(f"transcript-{agent}-"):]
    return sid


def _record(store, row: dict[str, Any]) -> None:
    row = {**row, "ts": time.time()}  # which run took its notes (an undone one: imported again)
    path = store.sub(TRANSCRIPTS_LEDGER)
    path.parent.mkdir(parents=True, exist_ok=True)
    with private_file(path, "a") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _hooked(store, session_id: str) -> bool:
    """Whether the store's hooks know the agent session ``session_id``: its end was queued, or its
    SessionStart recorded it (consolidate/agents/hooks/lifecycle.py: the hooks harvest it at its end, or
    recover it at the next SessionStart when its end never fired)."""
    if store.sessions.session_end(session_id) is not None:
        return True
    return started(store.sessions, session_id)


def _finish_hooks_harvest(store, t: Transcript, row: dict[str, Any], result: ImportResult) -> bool:
    """Make the harvests the hooks recorded for the transcript's agent session and did not finish (a
    hook killed at its time budget: consolidate/agents/hooks/lifecycle.py), into the hooks' own sessions,
    once; True when there were any (``row`` says ``hook-harvest-finished`` with the notes added, and
    the sessions whose end is queued are run with the imported ones). A session the hooks know is
    theirs, so nothing else of it is imported."""
    done = finish_agent_session(store.sessions, t.session_id, by="import-transcripts",
                                log=lambda line: log(store.path, line))
    if not done:
        return False
    row["status"] = "hook-harvest-finished"
    row["notes"] = sum(sum(d["harvested"].values()) for d in done)
    row["session_id"] = done[-1]["session_id"]
    for d in done:
        end = store.sessions.session_end(d["session_id"])
        if end is not None and end["status"] == "queued" and d["session_id"] not in result.sessions:
            result.sessions.append(d["session_id"])
    return True


def _harvested_keys(store, session_id: str) -> set[str]:
    """The transcript entries the hooks (or an earlier import) harvested for the agent session."""
    return harvested_keys(store.sessions, session_id)


def _mark_harvested(store, session_id: str, keys: list[str]) -> None:
    """Record ``keys`` as harvested for the agent session, in the hooks' table: resuming that session
    later (``claude --resume``) never harvests them again."""
    mark_harvested(store.sessions, session_id, keys)


def session_for(t: Transcript) -> str:
    """The session a transcript is imported as: ``transcript-<agent>-<session id>``."""

    return check_session_id(f"transcript-{t.agent}-{t.session_id}"[:200])


def import_transcripts(store, transcripts: list[Transcript], *, progress: bool | None = None) -> ImportResult:
    """Harvest each transcript not imported before into its own session and queue its end
    (success); returns what was done per transcript (see :class:`ImportResult`). The caller runs
    the queue. ``progress``: a tqdm bar on stderr (None: only on a terminal)."""
    from tqdm import tqdm  # noqa: PLC0415 - third-party tqdm: loaded only when a progress bar is shown

    result = ImportResult()
    ledger, undone_keys = _ledger(store)
    by_digest = {row["digest"]: path for path, row in ledger.items() if row.get("digest")}
    for t in tqdm(transcripts, desc="transcripts", unit="file", disable=(not progress) if progress is not None else None,
                  leave=False):
        key = str(t.path.resolve())
        row = {"path": str(t.path), "agent": t.agent, "session_id": None, "status": "", "notes": 0}
        result.rows.append(row)
        if _finish_hooks_harvest(store, t, row, result):
            continue
        try:
            d = digest(t.path)
        except OSError:
            row["status"] = "unreadable"
            continue
        seen = ledger.get(key)
        if seen is not None and seen["digest"] == d and not seen["reopened"]:
            row["status"] = "unchanged"
            continue
        if seen is None and d in by_digest:  # the same transcript at another path (a copy): imported already
            row["status"] = "duplicate"
            row["same_as"] = by_digest[d]
            continue
        if seen is None and _hooked(store, t.session_id):
            row["status"] = "skipped-hooked"  # the hooks saw this very session: they harvest it at its end
            _record(store, {"path": key, "digest": d, "session_id": t.session_id, "keys": [], "skipped": "hooked"})
            by_digest[d] = key
            continue
        notes = harvest_file(t)
        old_keys = (seen["keys"] if seen else set()) | (_harvested_keys(store, t.session_id)
                                                        - undone_keys.get(t.session_id, set()))
        fresh = [n for n in notes if n["key"] not in old_keys]
        sid = session_for(t)
        row["session_id"] = sid
        for n in fresh:
            store.sessions.add_note(sid, n["content"], metadata=n["metadata"])
        _mark_harvested(store, t.session_id, [n["key"] for n in fresh])
        if fresh:
            reason = f"imported from {t.agent} transcript {t.path.name}"
            store.sessions.end(sid, "success", reason)
            result.sessions.append(sid)
        row["notes"] = len(fresh)
        row["status"] = "imported" if fresh else ("no-new-entries" if seen else "empty")
        _record(store, {"path": key, "digest": d, "session_id": sid, "agent": t.agent, "agent_session": t.session_id,
                        "keys": [n["key"] for n in fresh], "notes": len(fresh)})
        by_digest[d] = key
    return result
