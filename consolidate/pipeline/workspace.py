"""The agent workspace of one session: a folder with ``context/``, ``working/`` and ``output/``.

An agent asks for a session and gets a workspace (``<store>/workspaces/<session>/``):

- ``context/``: a read-only snapshot written at start: ``core.md`` (the project rules),
  ``memories.md`` (the memories relevant to the task, each with its suffix; the top memories when no
  task is given) and ``session.json`` (session id, task, start time, store, project).
- ``working/``: the agent's scratch files (plan, commands, errors, findings). Removed on success.
- ``output/``: what the agent proposes as durable memory, as Markdown (one candidate per list item,
  or per paragraph when a file has no list) or JSONL (one object a line, ``content`` required,
  ``flag``/``kind``/``ttl`` optional). :meth:`Workspace.extract` turns it into candidate notes of the
  session, through the secret gate at once.

Lifecycle (the outcome semantics of docs/design.md#session-outcomes):

- **start** creates the workspace and writes ``context/``; an aborted session with the same id is
  resumed as it was (its files untouched); an open one is returned as it is; a completed one is
  refused (BadInput).
- **read / write / append** take paths relative to the workspace. ``..``, absolute paths and paths
  whose real location (symlinks followed) is outside the workspace are refused with one line
  (:class:`~consolidate.core.errors.PathRefused`); writes go only to ``working/`` and ``output/``; a file
  holds at most :data:`MAX_FILE_BYTES` and the workspace at most :data:`MAX_WORKSPACE_BYTES`.
- **complete** ``success``: extract ``output/`` again (so the candidates are what the files say at
  the end), queue the session end (the normal pipeline promotes what survives it), remove
  ``working/``. ``failure``: queue the end (the run records ``session.failed`` with the reason and
  promotes nothing); the workspace is removed only with ``ephemeral=True``. ``aborted``: queue the
  end (the run touches nothing) and keep every file for a later :func:`start` with the same id.

The workspace state is ``workspace.json`` at the workspace root (agents cannot write there). Every
change to a workspace runs under its file lock (``.lock``), so two servers on one store do not
interleave. Only the standard library (and ``filelock``) is imported; the long-term tier is opened
only to write ``context/memories.md`` for a task.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from consolidate.core.errors import BadInput, PathRefused, UnknownSession
from consolidate.store.workspaces import folder_name
from consolidate.store.sessions.tier import check_session_id
from consolidate.core.vocab import ABORTED, FAILURE, MEMORY_TYPES, SESSION_OUTCOMES, SUCCESS
from consolidate.store.layout import CONTEXT_MD, WORKSPACES, WORKSPACE_CONTEXT, WORKSPACE_CORE, WORKSPACE_LOCK, WORKSPACE_MEMORIES, WORKSPACE_OUTPUT, WORKSPACE_SESSION, WORKSPACE_STATE, WORKSPACE_WORKING
from consolidate.core.jsonl import read_objects
from consolidate.store.echo import memory_texts
from consolidate.store.views import shown as agent_view
from consolidate.rules.guard import NOTICE
from consolidate.store.sessions.tier import _check_text
from consolidate.core.json_check import check_fields
from consolidate.rules.persisted import gate, gate_fields, has_redaction
from consolidate.core.errors import StoreCorrupt
from consolidate.core.atomic import write_json_atomic
from consolidate.store.sessions.tier import check_content
from consolidate.core.atomic import write_text_atomic
import io
from consolidate.core.private import FILE_MODE, private_file, private_umask
from consolidate.rules import secrets
from consolidate.store.sessions.tier import check_flag, check_kind, parse_ttl

#: Largest file in a workspace, in bytes (UTF-8). A bigger write or append is refused whole.
MAX_FILE_BYTES = 1_000_000
#: Largest total size of ``working/`` and ``output/`` together, in bytes.
MAX_WORKSPACE_BYTES = 20_000_000
#: Largest task text, in characters.
MAX_TASK_CHARS = 4_000
#: How many memories ``context/memories.md`` holds.
CONTEXT_MEMORIES = 10
#: The folders of a workspace; the agent may write only to the last two.
FOLDERS = (WORKSPACE_CONTEXT.name, WORKSPACE_WORKING.name, WORKSPACE_OUTPUT.name)
WRITABLE = (WORKSPACE_WORKING.name, WORKSPACE_OUTPUT.name)
#: Extensions :meth:`Workspace.extract` reads in ``output/``.
MARKDOWN = (".md", ".markdown", ".txt")
JSONL = (".jsonl", ".ndjson")
#: Workspace states.
STATES = ("open", ABORTED, SUCCESS, FAILURE)
#: The fields of ``workspace.json`` and their JSON kinds (consolidate/core/json_check.py).
STATE_FIELDS = {"session_id": (("string",), True), "state": ((STATES,), True),
                "task": (("string", "null"), False), "outcome": (("string", "null"), False),
                "reason": (("string", "null"), False), "resumed": (("integer",), False),
                "extracted": (("array",), False), "memories": (("integer",), False),
                "blocked_items": (("object",), False), "extract_flag": (("boolean",), False)}

#: A heading of the working file naming a memory type, singular or plural ("## Decisions").
_KIND_HEADING = {name: t for t in MEMORY_TYPES for name in (t, t + "s")}


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).isoformat(timespec="seconds")


def new_session_id(now: float | None = None) -> str:
    """A fresh session id: ``ws-YYYYMMDD-HHMMSS-<8 hex>`` (UTC)."""
    stamp = _dt.datetime.fromtimestamp(time.time() if now is None else now, _dt.timezone.utc)
    return f"ws-{stamp:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:8]}"


@dataclass
class Item:
    """One candidate found in ``output/``: its text, the file and 1-based line it starts on, and the
    ``flag``/``kind``/``ttl`` a JSONL line or a Markdown heading gave it."""

    content: str
    file: str
    line: int
    flag: bool = False
    kind: str | None = None
    ttl: Any = None


def parse_markdown(text: str, file: str, *, nested: bool = False) -> list[Item]:
    """Candidates of a Markdown file: one per list item (``-``, ``*``, ``+``, ``1.``; indented lines
    continue an item; a ``[ ]``/``[x]`` box is dropped), or, in a file without list items, one per
    paragraph. Headings are not candidates; a heading naming a memory type (``## Decisions``) gives
    that kind to the items under it. Fenced code blocks stay inside the item they follow. ``nested``:
    a list item indented any depth (a sub-item) is one of its own too, not only up to three spaces,
    and a paragraph beside list items is one too (a notes file, where an agent nests notes and mixes
    prose with lists)."""
    items: list[Item] = []
    paragraphs: list[Item] = []
    kind: str | None = None
    current: list[str] | None = None
    para: list[str] | None = None
    start = para_start = 0
    in_fence = False
    bullet = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(.*)$" if nested else r"^(\s{0,3})(?:[-*+]|\d{1,3}[.)])\s+(.*)$")

    def close_item():
        nonlocal current
        if current is not None:
            body = "\n".join(current).strip()
            body = re.sub(r"^\[[ xX]\]\s*", "", body)
            if body:
                items.append(Item(body, file, start, kind=kind))
        current = None

    def close_para():
        nonlocal para
        if para is not None:
            body = "\n".join(para).strip()
            if body:
                paragraphs.append(Item(body, file, para_start, kind=kind))
        para = None

    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith("```") or line.strip().startswith("~~~"):
            in_fence = not in_fence
            if current is not None:
                current.append(line)
            elif para is not None:
                para.append(line)
            continue
        if in_fence:
            if current is not None:
                current.append(line)
            elif para is not None:
                para.append(line)
            continue
        heading = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            close_item()
            close_para()
            word = heading.group(1).strip().lower().rstrip(":")
            kind = _KIND_HEADING.get(word.split()[-1] if word.split() else "", None) if word else None
            continue
        m = bullet.match(line)
        if m:
            close_item()
            close_para()
            current, start = [m.group(2)], lineno
            continue
        if not line.strip():
            close_item()
            close_para()
            continue
        if current is not None and (line.startswith((" ", "\t"))):
            current.append(line.strip())
            continue
        close_item()
        if para is None:
            para, para_start = [], lineno
        para.append(line.strip())
    close_item()
    close_para()
    if nested:  # a notes file: its paragraphs beside its list items are notes too, in document order
        return sorted(items + paragraphs, key=lambda i: i.line)
    return items if items else paragraphs


def parse_jsonl(raw: bytes, file: str) -> list[Item]:
    """Candidates of a JSONL file: one object a line, ``content`` required (a non-empty string),
    ``flag``, ``kind`` and ``ttl`` optional. Raises InvalidImportLine (file and line) for a bad line."""
    out = []
    for lineno, obj, bad in read_objects(io.BytesIO(raw), suffix="; nothing was extracted", name=file):
        content = obj.get("content")
        if not isinstance(content, str) or not content.strip():
            raise bad("no `content` (a non-empty string is required)")
        try:
            flag = check_flag(obj.get("flag"))
            kind = check_kind(obj.get("kind"))
            ttl = obj.get("ttl")
            parse_ttl(ttl)
        except BadInput as exc:
            raise bad(str(exc)) from None
        out.append(Item(content, file, lineno, flag=flag, kind=kind, ttl=ttl))
    return out


class Workspace:
    """The workspace of one session in one store. Use :func:`start` (or :meth:`open`) to get one.

    ``root`` is the workspace folder; ``session_id`` the session. ``max_file_bytes`` and
    ``max_workspace_bytes`` bound what the agent may write (bytes of UTF-8)."""

    def __init__(self, store, session_id: str, *, max_file_bytes: int = MAX_FILE_BYTES,
                 max_workspace_bytes: int = MAX_WORKSPACE_BYTES):
        self.store = store
        self.session_id = check_session_id(session_id)
        self.root = store.sub(WORKSPACES, folder_name(self.session_id))
        self.max_file_bytes = max_file_bytes
        self.max_workspace_bytes = max_workspace_bytes

    # -- state ----------------------------------------------------------------------------------
    @property
    def state_path(self) -> Path:
        return self.root / WORKSPACE_STATE.name

    @property
    def exists(self) -> bool:
        return self.state_path.is_file()

    def state(self) -> dict[str, Any]:
        """The workspace record: ``session_id``, ``task``, ``state`` (open, aborted, success,
        failure), ``created_at``, ``updated_at`` (ISO), ``outcome``, ``reason``, ``resumed``
        (times), ``extracted`` (note ids of the last extraction). Raises UnknownSession when the
        session has no workspace."""
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UnknownSession(f"session {self.session_id!r} has no workspace: start it first",
                                 session_id=self.session_id) from None
        except (OSError, ValueError) as exc:

            raise StoreCorrupt(f"{self.state_path} is corrupt ({exc})", path=str(self.state_path)) from None

        return check_fields(data, self.state_path, STATE_FIELDS,
                            fix="restore it or move the workspace away (nothing was changed)")

    def _save(self, data: dict[str, Any]) -> None:

        data["updated_at"] = _iso(time.time())
        # the task and the completion record's reason: consolidate/rules/persisted.py
        write_json_atomic(self.state_path, gate_fields(data, ("task", "reason")))

    def _lock(self):
        import filelock  # noqa: PLC0415 - third-party filelock: only its callers load it

        self.store.require_writable()  # a read-only store: one line naming it (StoreReadOnly), nothing tried
        private_umask()  # a workspace write: the store stays private whatever the umask
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        return filelock.FileLock(str(self.root / WORKSPACE_LOCK.name), timeout=30, mode=FILE_MODE)

    def describe(self) -> dict[str, Any]:
        """What an agent needs: session id, state, task, the workspace path and its folders, and
        the files in it (relative paths with sizes)."""
        st = self.state()
        return {"session_id": self.session_id, "state": st["state"], "task": st.get("task"),
                "path": str(self.root.resolve()),
                "folders": {f: str((self.root / f).resolve()) for f in FOLDERS if (self.root / f).is_dir()},
                "files": self.files()}

    def files(self) -> list[dict[str, Any]]:
        """Every regular file under the workspace folders: ``{"path", "bytes"}``, sorted by path."""
        out = []
        for folder in FOLDERS:
            base = self.root / folder
            if not base.is_dir():
                continue
            for dirpath, dirnames, filenames in os.walk(base):  # does not follow symlinked folders
                dirnames.sort()
                for name in sorted(filenames):
                    p = Path(dirpath) / name
                    if p.is_symlink() or not p.is_file():
                        continue
                    out.append({"path": p.relative_to(self.root).as_posix(), "bytes": p.stat().st_size})
        return out

    # -- paths ----------------------------------------------------------------------------------
    def resolve(self, path: str, *, write: bool = False) -> Path:
        """The real path of ``path`` (relative to the workspace) after checking it stays inside.

        Refused with PathRefused (one line): not text, empty, a NUL, an absolute path (``/x``,
        ``C:\\x``, ``\\\\server``), a ``..`` part, a path whose real location (symlinks followed)
        is outside the workspace, a symlink as the file itself when writing, and, for a write, any
        folder but ``working/`` and ``output/``."""
        if not isinstance(path, str):
            raise PathRefused(f"a path must be text, got {type(path).__name__}", path=None)
        raw = path.strip()
        if not raw:
            raise PathRefused("the path is empty: give a path relative to the workspace, e.g. working/plan.md", path=path)
        if "\x00" in raw:
            raise PathRefused("the path holds a NUL character", path=None)
        shown = raw if len(raw) <= 120 else raw[:117] + "..."
        if raw.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", raw) or os.path.isabs(raw):
            raise PathRefused(f"path {shown!r} refused: absolute paths are not allowed; use a path relative to "
                              "the workspace (working/..., output/...)", path=shown)
        parts = PurePosixPath(raw.replace("\\", "/")).parts
        if ".." in parts:
            raise PathRefused(f"path {shown!r} refused: '..' leaves the workspace", path=shown)
        parts = tuple(p for p in parts if p != ".")
        if not parts:
            raise PathRefused(f"path {shown!r} names the workspace itself, not a file", path=shown)
        if write and parts[0] not in WRITABLE:
            where = "context/ is a read-only snapshot" if parts[0] == WORKSPACE_CONTEXT.name else "writes go to working/ or output/"
            raise PathRefused(f"path {shown!r} refused: {where}", path=shown)
        if not write and parts[0] not in FOLDERS:
            raise PathRefused(f"path {shown!r} refused: read from context/, working/ or output/", path=shown)
        root = self.root.resolve()
        target = root.joinpath(*parts)
        real = Path(os.path.realpath(target))
        if real != root and root not in real.parents:
            raise PathRefused(f"path {shown!r} refused: it leads outside the workspace (a symlink)", path=shown)
        if write and real.parts[: len(root.parts) + 1] != root.joinpath(parts[0]).parts:
            raise PathRefused(f"path {shown!r} refused: it leads out of {parts[0]}/ (a symlink)", path=shown)
        if write and target.is_symlink():
            raise PathRefused(f"path {shown!r} refused: it is a symlink", path=shown)
        return real

    # -- file operations ------------------------------------------------------------------------
    def _require_open(self, data: dict[str, Any]) -> None:
        if data["state"] != "open":
            hint = " (start it again to resume)" if data["state"] == "aborted" else ""
            raise BadInput(f"session {self.session_id!r} is {data['state']}{hint}: its workspace takes no writes",
                           session_id=self.session_id)

    def read(self, path: str) -> dict[str, Any]:
        """A file's text (``{"path", "content", "bytes"}``) or a folder's listing (``{"path",
        "entries": [{"name", "type", "bytes"}]}``). Raises PathRefused for an escape, BadInput for
        a missing file, a file past the per-file bound or one that is not UTF-8 text."""
        self.state()
        real = self.resolve(path)
        rel = real.relative_to(self.root.resolve()).as_posix()
        if real.is_dir():
            entries = []
            for child in sorted(real.iterdir()):
                if child.is_symlink():
                    continue
                entries.append({"name": child.name, "type": "folder" if child.is_dir() else "file",
                                "bytes": child.stat().st_size if child.is_file() else None})
            return {"path": rel, "entries": entries}
        try:
            size = real.stat().st_size
        except FileNotFoundError:
            raise BadInput(f"no file {rel} in the workspace of session {self.session_id!r}", path=rel) from None
        if size > self.max_file_bytes:
            raise BadInput(f"{rel} is {size:,} bytes; the limit is {self.max_file_bytes:,}", path=rel)
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            raw = f.read(self.max_file_bytes + 1)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadInput(f"{rel} is not UTF-8 text (byte {exc.start})", path=rel) from None
        if rel.startswith("context/"):
            record_context_shown(self.store, self.session_id, text)  # read again: still shown to this session
        return {"path": rel, "content": text, "bytes": len(raw)}

    def write(self, path: str, content: str) -> dict[str, Any]:
        """Replace (or create) a file under ``working/`` or ``output/``; folders are created.
        Returns ``{"path", "bytes", "workspace_bytes"}``. Raises PathRefused, or BadInput for text
        that is not a string, holds a NUL, or would pass a size bound (nothing is written)."""
        return self._put(path, content, append=False)

    def append(self, path: str, content: str) -> dict[str, Any]:
        """Append to a file under ``working/`` or ``output/`` (created when missing); same checks
        and result as :meth:`write`, the bound applying to the file's size after the append."""
        return self._put(path, content, append=True)

    def _put(self, path: str, content: str, *, append: bool) -> dict[str, Any]:
        if not isinstance(content, str):
            raise BadInput(f"content must be text, got {type(content).__name__}")
        if "\x00" in content:
            raise BadInput("content holds a NUL character")
        try:
            size = len(content.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise BadInput(f"content is not valid UTF-8 text (lone surrogate at character {exc.start})") from None
        if size > self.max_file_bytes:  # refused before the gate scans it (a 50 MB write: 17 s of scanning)
            raise BadInput(f"{'append' if append else 'write'} to {path} refused: the content is {size:,} bytes;"
                           f" the limit is {self.max_file_bytes:,} per file (nothing was written)", path=str(path))
        data = gate(content).encode("utf-8")  # its private spans and secrets never reach the file
        with self._lock():
            self._require_open(self.state())
            real = self.resolve(path, write=True)
            rel = real.relative_to(self.root.resolve()).as_posix()
            if real.is_dir():
                raise BadInput(f"{rel} is a folder", path=rel)
            old = real.stat().st_size if real.is_file() else 0
            new = old + len(data) if append else len(data)
            if new > self.max_file_bytes:
                raise BadInput(f"{'append' if append else 'write'} to {rel} refused: the file would be {new:,} bytes;"
                               f" the limit is {self.max_file_bytes:,} per file (nothing was written)", path=rel)
            total = self._used_bytes() - old + new
            if total > self.max_workspace_bytes:
                raise BadInput(f"{'append' if append else 'write'} to {rel} refused: the workspace would hold {total:,}"
                               f" bytes; the limit is {self.max_workspace_bytes:,} (nothing was written)", path=rel)
            real.parent.mkdir(parents=True, exist_ok=True)
            # re-check after creating folders: a folder could have been swapped for a symlink meanwhile
            real = self.resolve(path, write=True)
            flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | (os.O_APPEND if append else os.O_TRUNC)
            fd = os.open(real, flags, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return {"path": rel, "bytes": new, "workspace_bytes": total}

    def _used_bytes(self) -> int:
        total = 0
        for folder in WRITABLE:
            base = self.root / folder
            for dirpath, _dirs, filenames in os.walk(base):
                for name in filenames:
                    p = os.path.join(dirpath, name)
                    try:
                        st = os.lstat(p)
                    except OSError:
                        continue
                    total += st.st_size
        return total

    # -- extract --------------------------------------------------------------------------------
    def items(self) -> tuple[list[Item], list[str]]:
        """Every candidate in ``output/`` (Markdown and JSONL files, in path order) and the files
        skipped (other extensions). Raises InvalidImportLine for a bad JSONL line."""
        items: list[Item] = []
        skipped: list[str] = []
        base = self.root / WORKSPACE_OUTPUT.name
        if not base.is_dir():
            return items, skipped
        root = self.root.resolve()
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                p = Path(dirpath) / name
                rel = p.relative_to(self.root).as_posix()
                if p.is_symlink() or root not in Path(os.path.realpath(p)).parents:
                    skipped.append(rel)
                    continue
                ext = p.suffix.lower()
                if ext not in MARKDOWN + JSONL:
                    skipped.append(rel)
                    continue
                raw = p.read_bytes()[: self.max_file_bytes]
                if ext in JSONL:
                    items += parse_jsonl(raw, rel)
                else:
                    items += parse_markdown(raw.decode("utf-8", "replace"), rel)
        return items, skipped

    def extract(self, *, flag: bool = False) -> dict[str, Any]:
        """Turn ``output/`` into candidate notes of this session, replacing the notes of an earlier
        extraction (notes written with ``note`` are kept). Every item passes the secret gate at once:
        an item holding secret material becomes no note, its text is redacted in the output file
        (and the redacted item stays blocked on later extractions), and the result lists it with the
        rule names and redacted previews only. ``flag=True`` flags
        every candidate (a keeper: promoted without a judge, still through the write policy).

        Returns ``{"session_id", "candidates", "note_ids", "blocked": [{"file", "line", "kinds",
        "previews"}], "files", "skipped", "replaced"}``. Raises BadInput (InvalidImportLine for a
        bad JSONL line, EmptyNote never: empty items are skipped) and writes nothing then."""
        with self._lock():
            data = self.state()
            self._require_open(data)
            return self._extract(data, flag=flag)

    def _extract(self, data: dict[str, Any], *, flag: bool = False) -> dict[str, Any]:
        items, skipped = self.items()
        keep: list[Item] = []
        blocked: list[dict[str, Any]] = []
        redact_files: set[str] = set()
        earlier = dict(data.get("blocked_items") or {})  # redacted items blocked before: still blocked
        for it in items:
            findings = secrets.scan(it.content)
            digest = hashlib.sha256((secrets.redact(it.content) if findings else it.content).encode()).hexdigest()[:16]
            marked = has_redaction(it.content)  # redacted when the file was written (Workspace._put)
            if findings or digest in earlier or marked:
                kinds = sorted({f.kind for f in findings}) if findings else earlier.get(digest) or sorted(set(marked))
                blocked.append({"file": it.file, "line": it.line, "kinds": kinds,
                                "previews": [f.preview for f in findings][:5] if findings else ["(redacted before)"]})
                earlier[digest] = kinds
                if findings:
                    redact_files.add(it.file)
                continue
            try:
                check_content(it.content, self.session_id, flag=flag)
            except BadInput as exc:
                raise BadInput(f"{it.file} line {it.line}: {exc}; nothing was extracted",
                               session_id=self.session_id) from None
            keep.append(it)
        for rel in sorted(redact_files):  # the secret does not stay in the store either
            p = self.root / rel

            write_text_atomic(p, gate(p.read_text(encoding="utf-8", errors="replace")))
        tier = self.store.sessions
        old = [n.id for n in tier.notes(self.session_id) if n.metadata.get("workspace_item")]

        now = time.time()
        rows = []
        for it in keep:
            seconds = parse_ttl(it.ttl) if it.ttl is not None else None
            rows.append({"content": it.content, "flag": bool(flag or it.flag), "kind": it.kind,
                         "expires_at": now + seconds if seconds else None,
                         "metadata": {"workspace_item": f"{it.file}:{it.line}", "source": "workspace"}})
        ids = tier.replace_notes(self.session_id, old, rows, now=now)
        data["extracted"] = ids
        data["extract_flag"] = bool(flag)  # complete extracts again the same way (a flag is never lost)
        data["blocked_items"] = earlier
        data["extracted_at"] = _iso(time.time())
        self._save(data)
        return {"session_id": self.session_id, "candidates": len(ids), "note_ids": ids, "blocked": blocked,
                "files": sorted({it.file for it in items}), "skipped": skipped, "replaced": len(old)}

    # -- complete -------------------------------------------------------------------------------
    def complete(self, outcome: str, reason: str | None = None, *, ephemeral: bool = False,
                 extract: bool = True, queue: bool = True) -> dict[str, Any]:
        """End the session with ``outcome`` (see the module docstring) and return what was done
        (on success ``output/`` is extracted again with the ``flag`` the last :meth:`extract` had):
        ``{"session_id", "outcome", "extracted", "working_removed", "workspace_removed",
        "preserved", "queued", "notes"}``. ``extract=False`` on success promotes only what an
        earlier :meth:`extract` took. ``queue=False`` leaves the session end to the caller (the MCP
        tool records it itself). Raises BadInput for an unknown outcome or a secret-free extraction
        failure (a bad JSONL line), and then changes nothing."""
        if outcome not in SESSION_OUTCOMES:
            raise BadInput(f"unknown outcome {outcome!r}: use one of {', '.join(SESSION_OUTCOMES)}", outcome=outcome)
        with self._lock():
            data = self.state()
            if data["state"] in (SUCCESS, FAILURE) and outcome == "aborted":
                raise BadInput(f"session {self.session_id!r} already completed ({data['state']}): it cannot be aborted",
                               session_id=self.session_id)
            result: dict[str, Any] = {"session_id": self.session_id, "outcome": outcome, "extracted": None,
                                      "blocked": [], "working_removed": False, "workspace_removed": False,
                                      "preserved": outcome == "aborted"}
            if outcome == "success" and extract and data["state"] in ("open", "aborted"):
                data["state"] = "open"
                got = self._extract(data, flag=bool(data.get("extract_flag")))  # as the last extract asked
                result["extracted"], result["blocked"] = got["candidates"], got["blocked"]
            if queue:
                self.store.sessions.end(self.session_id, outcome, reason)
            result["queued"] = queue
            result["notes"] = self.store.sessions.count(self.session_id)
            data.update(state=outcome, outcome=outcome, reason=reason, completed_at=_iso(time.time()))
            if outcome == "success":
                shutil.rmtree(self.root / WORKSPACE_WORKING.name, ignore_errors=True)
                result["working_removed"] = True
            self._save(data)
        if outcome == "failure" and ephemeral:
            shutil.rmtree(self.root, ignore_errors=True)
            result["workspace_removed"] = True
        return result


def record_context_shown(store, session_id: str, text: str) -> bool:
    """Record the memory lines of a ``context/`` file (``memories.md``) as shown to ``session_id``
    (consolidate.store.echo, through the agent view): when the same session writes them back
    (``output/`` extracted, a note), they are an echo, never a re-confirmation. Never raises (a
    read-only store records nothing)."""

    texts = memory_texts(text)
    return agent_view.record_safely(store, session_id, texts) if texts else False


def context_memories(store, task: str | None) -> tuple[str, int]:
    """``context/memories.md`` text and its number of memories: recall on the task when given, else
    the store's top memories (``memory/context.md`` with the drift check, as SessionStart prints it),
    as the agent view shows them (consolidate/store/views/shown.py, surface ``workspace-context``).
    Nothing is created in a store without a long-term tier."""

    lines, held = [], ""
    if task and store.has_longterm and store.read_manifest() is not None:
        hits = store.longterm().search(task, k=CONTEXT_MEMORIES)
        got = agent_view.view(hits, "workspace-context", drift=agent_view.drift_of(store, [h["id"] for h in hits]),
                              forgotten=agent_view.forgotten_ids(store))
        lines, held = ["- " + line for line in got.lines], got.held_line  # the held ones named, as everywhere
        head = f"# Memories recalled for the task ({len(lines)})"
    else:
        try:
            text = store.sub(CONTEXT_MD).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            text = ""
        if text:
            try:
                text = agent_view.context_text(store.path) or text
            except Exception:  # noqa: BLE001 - the file as it is when the drift check cannot run
                pass
        lines, more = agent_view.held_lines([ln for ln in text.splitlines() if ln.startswith("- ")])
        # the line memory/context.md holds names the ones its run held back; those held here only counted
        named = [ln for ln in text.splitlines() if ln.startswith("(") and "left out: worded as instructions" in ln]
        held = named[0] if named and not more else agent_view.held_back_line(more)
        head = f"# Project memory: the top {len(lines)} memories"

    if not lines:
        return "# Memories\n\nNo memories yet for this project.\n" + (f"\n{held}\n" if held else ""), 0
    return head + "\n\n" + NOTICE + "\n\n" + "\n".join(lines) + "\n" + (f"\n{held}\n" if held else ""), len(lines)


def start(store, session_id: str | None = None, task: str | None = None, **bounds) -> tuple[Workspace, dict[str, Any]]:
    """Create the workspace of a session (a new id when ``session_id`` is None or blank) and write its
    ``context/``; returns the Workspace and ``{"session_id", "path", "state", "resumed", "created",
    "context": [files], "memories"}``.

    An aborted session is resumed as it was (``resumed: true``, files untouched, ``context/`` not
    rewritten); an open one is returned as it is; a completed one (success or failure) raises
    BadInput. Raises BadInput for a task longer than MAX_TASK_CHARS or that is not text."""
    if task is not None:
        if not isinstance(task, str):
            raise BadInput(f"the task must be text, got {type(task).__name__}")
        task = task.strip() or None
        if task and len(task) > MAX_TASK_CHARS:
            raise BadInput(f"the task is {len(task):,} characters; the limit is {MAX_TASK_CHARS:,}")
        if task:

            _check_text(task, "the task")
    blank = session_id is None or (isinstance(session_id, str) and not session_id.strip())
    sid = new_session_id() if blank else check_session_id(session_id)
    ws = Workspace(store, sid, **bounds)
    with ws._lock():
        resumed = created = False
        if ws.exists:
            data = ws.state()
            if data["state"] in (SUCCESS, FAILURE):
                raise BadInput(f"session {sid!r} already completed ({data['state']}); start a new session id",
                               session_id=sid)
            if data["state"] == "aborted":
                resumed = True
                data["state"] = "open"
                data["resumed"] = int(data.get("resumed") or 0) + 1
                ws._save(data)
            memories = data.get("memories", 0)
        else:
            created = True

            private_umask()
            for folder in FOLDERS:
                (ws.root / folder).mkdir(parents=True, exist_ok=True, mode=0o700)
                os.chmod(ws.root / folder, 0o700)
            try:
                os.chmod(ws.root, 0o700)
            except OSError:
                pass
            context = ws.root / WORKSPACE_CONTEXT.name
            text, memories = context_memories(store, task)
            def put(name: str, content: str) -> None:
                p = context / name
                if p.exists():
                    os.chmod(p, 0o600)  # a resumed start rewrites its read-only context
                with private_file(p, "w") as f:
                    f.write(gate(content))  # consolidate/rules/persisted.py

            put(WORKSPACE_MEMORIES.name, text)
            record_context_shown(store, sid, text)  # shown to this session: a repeat of it is an echo
            core = store.core_rules()
            put(WORKSPACE_CORE.name, core or "# Project rules\n\n(memory/core.md is empty)\n")
            put(WORKSPACE_SESSION.name, json.dumps({
                "session_id": sid, "task": gate(task) if task else None, "started_at": _iso(time.time()),
                "store": str(store.path.resolve()), "project": store.project,
                "write_to": {WORKSPACE_WORKING.name: "scratch files (removed on success)",
                             WORKSPACE_OUTPUT.name: "durable memory candidates: Markdown list items or JSONL lines"},
            }, ensure_ascii=False, indent=1))
            for p in context.iterdir():
                os.chmod(p, 0o400)  # read-only, private to the user like the rest of the store
            now = _iso(time.time())
            ws._save({"session_id": sid, "task": gate(task) if task else None, "state": "open",
                      "created_at": now, "outcome": None, "reason": None, "resumed": 0, "extracted": [],
                      "memories": memories})
    info = ws.describe()
    info.update(resumed=resumed, created=created, memories=memories,
                context=[f["path"] for f in info["files"] if f["path"].startswith("context/")])
    return ws, info


def open_workspace(store, session_id: str, **bounds) -> Workspace:
    """The existing workspace of ``session_id``; raises UnknownSession when there is none."""
    ws = Workspace(store, session_id, **bounds)
    ws.state()
    return ws


def find(store, session_id: str) -> Workspace | None:
    """The workspace of ``session_id``, or None when the session has none (no error)."""
    try:
        ws = Workspace(store, session_id)
    except BadInput:
        return None
    return ws if ws.exists else None
