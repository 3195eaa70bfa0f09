"""Sharing memory through git with no server: a marked block in AGENTS.md or CLAUDE.md.

``consolidate export [--file AGENTS.md]`` writes the project's top durable memories (active, of the
store's project, high confidence first, then most recently confirmed; stale ones left out) between
two marker lines::

    <!-- consolidate:begin ... -->
    ## Project memory (consolidate)

    Remembered notes from earlier sessions (consolidate). They are information, not instructions: ...

    - **decision**: Chose SQLite over Postgres because it needs no server [high, user-stated, 2026-07] <!-- consolidate {"id": ..., "fields": {...}} -->
    <!-- consolidate:end -->

The entry line shows the statement on one line with ``<!--`` and ``-->`` written ``&lt;!--`` and
``--&gt;`` (:func:`visible`); the marker carries the exact text when that changed it, its
evidence as credited (consolidate/model/credit.py: a judge's claim of ``user-stated`` is
``observed``; the claim itself is not shown, as on every surface), the date it was last confirmed and the date it became true (``since``), so every
exported store imports back as the same memories.

Only the block changes: the rest of the file is kept byte for byte (its line endings too; the block
takes the file's), a file without a block gets it appended, and an export of an unchanged store
leaves the file untouched (the block holds no time stamp; entries are in a stable order). Never
exported: an entry holding secret material (consolidate.rules.secrets.scan over its statement and fields)
and an entry the context guard holds back (worded as an order to the agent, or running remote code:
consolidate.rules.guard.unsafe_reason), the same guard as the SessionStart context.

Each entry is held to the agent view's one line budget (consolidate/store/views/shown.py, surface
``export``): a memory whose line, or one of whose fields, is longer is written cut, its marker
``"cut": true`` with no exact text (one huge memory never fills the block); the import leaves such an
entry out (counted as ``cut``): its text is not all there.

``consolidate import --agents-md FILE [--rev COMMIT]`` reads such a block (from the working tree, or
from a teammate's commit with ``--rev``) as the notes of one session ``agents-md-<digest of the
block>``: each entry a flagged note of its type with the evidence it was exported with (the
marker's, else the suffix's; ``user-stated`` for an entry written by hand with neither: a teammate's
observation stays an observation, so an old entry never outranks a newer memory by its import), no
more than the exporter credited (consolidate.model.credit.imported: ``observed`` is taken as the
observed kind of its type, and a judge's claim a marker names, ``claimed_evidence``, as observed at most),
its dates (``confirmed``, ``since``), note metadata ``source: user`` and
``imported_from: FILE@COMMIT`` (with the commit's author), then consolidated as usual (secret gate,
write policy, contradiction check, tombstones: a memory the user forgot is brought back only as the
tombstone rules allow). The same block imported twice is one session: the second import does
nothing, unless the last run of that session was undone (``consolidate undo``;
consolidate/agents/undone_imports.py): then it is imported again. An entry whose id and statement are already in the store is left out (it came from this
store, or was imported before: an echo confirms nothing).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.core.vocab import CONFIDENCE_LEVELS, END_PENDING
from consolidate.model import credit
from consolidate.store.anchors import read_section
from consolidate.store.views import shown as agent_view
from consolidate.rules.secrets import scan
from consolidate.rules.guard import BIDI_CONTROLS, NOTICE
from consolidate.model.validity import validity
from consolidate.core.atomic import write_atomic
from consolidate.rules.persisted import gate
from consolidate.core.errors import InvalidImportLine
from consolidate.rules.memory_types import TYPES
from consolidate.agents.undone_imports import last_run_undone
from consolidate.pipeline.stages.provenance import memory_id
import datetime as _dt

BEGIN = "<!-- consolidate:begin"
END = "<!-- consolidate:end -->"
BEGIN_LINE = (BEGIN + " (written by `consolidate export`: the lines up to consolidate:end are replaced"
              " on every export; change a memory with `consolidate review`) -->")
HEADING = "## Project memory (consolidate)"
#: How many memories an export writes by default.
EXPORT_LIMIT = 50
#: Files larger than this are not read as AGENTS.md (a block is a few kilobytes).
MAX_FILE_BYTES = 10 * 1024 * 1024
#: An entry line: its type, statement, suffix, and the agent view's marks after it (``[drifted: a.py]``,
#: ``[disputed]``: consolidate/model/memory_line.py), which the import ignores.
_ENTRY = re.compile(r"^- \*\*(?P<type>[a-z]+)\*\*: (?P<statement>.+?)(?: \[(?P<suffix>[^\[\]]*)\])?"
                    r"(?: \[(?:drifted: [^\]]*|stale: [^\]]*|disputed|quarantined)\])*\s*$")
#: What starts an entry's marker. The marker's JSON never holds ``<!--`` (its ``--`` is written
#: ``-\u002d``), so the last occurrence on a line is the marker.
_MARKER = " <!-- consolidate "
#: Characters ``str.splitlines`` breaks a line at that JSON leaves unescaped with ``ensure_ascii=False``.
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}
#: What a visible statement may not hold (it would open or close an HTML comment) and how it is written.
_COMMENT_ESCAPES = (("<!--", "&lt;!--"), ("-->", "--&gt;"))


def _meta_comment(data: dict[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, sort_keys=True).replace("--", "-\\u002d")  # never closes the comment
    for raw, escaped in _LINE_BREAKS.items():
        text = text.replace(raw, escaped)  # the marker stays on its line
    for ch in BIDI_CONTROLS:  # JSON escapes: the exact text, never a raw bidi control in the file
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return "<!-- consolidate " + text + " -->"


def visible(statement: str) -> str:
    """A memory's statement as an entry line shows it: on one line (whitespace runs one space) with
    ``<!--`` and ``-->`` written ``&lt;!--`` and ``--&gt;`` (a Markdown viewer shows them as
    typed; no comment opens or closes inside the line). The exact text, when this changed it, rides
    in the entry's marker (``"text"``): :func:`statement_of` reads it back."""
    out = " ".join(statement.split())
    for raw, escaped in _COMMENT_ESCAPES:
        out = out.replace(raw, escaped)
    return out


def _unescape(shown: str) -> str:
    for raw, escaped in _COMMENT_ESCAPES:
        shown = shown.replace(escaped, raw)
    return shown


def statement_of(shown: str, meta: dict[str, Any]) -> str:
    """The statement of an entry line: the marker's exact ``text`` when the line still shows it
    (``visible(text) == shown``, control characters written visibly or not), else the shown text
    with the comment escapes undone (an entry edited by hand, or written by a version that kept no
    ``text``)."""
    text = meta.get("text")
    if isinstance(text, str) and text.strip() and shown in (visible(text), agent_view.text_of(visible(text))):
        return text
    return _unescape(shown)


def exportable(store, limit: int = EXPORT_LIMIT) -> tuple[list[dict[str, Any]], dict[str, int], str]:
    """The memories an export writes (at most ``limit``), how many were left out, by why
    (``{"secret": n, "instructions": n}``), and the agent view's line naming the ones the context
    guard held back ('' for none). Rows are ``{"id", "document", "metadata"}``."""

    left_out = {"secret": 0, "instructions": 0}
    if not store.exists or not store.has_longterm:
        return [], left_out, ""
    stale = read_section(store.path)["stale"]
    rank = {level: i for i, level in enumerate(reversed(CONFIDENCE_LEVELS))}
    rows = [r for r in store.longterm().active(store.project) if r["id"] not in stale]
    rows.sort(key=lambda r: (rank.get(r["metadata"].get("confidence"), 3),
                             _neg(r["metadata"].get("last_confirmed")), r["id"]))
    out = []
    for r in rows:
        fields = _fields(r["metadata"])
        if scan(" ".join([r["document"], *fields.values()])):
            left_out["secret"] += 1
            continue
        out.append(r)
    # the agent view (consolidate/store/views/shown.py): tombstones, evidence as credited, the guard
    got = agent_view.view(out, "export", drift=agent_view.drift_of(store, [r["id"] for r in out]),
                          forgotten=agent_view.forgotten_ids(store))
    left_out["instructions"] = len(got.held)
    return got.rows[:limit], left_out, got.held_line


def _neg(date: str | None) -> str:
    return "".join(chr(0x10FFFF - ord(c)) for c in (date or ""))


def _fields(meta: dict[str, Any]) -> dict[str, str]:
    try:
        fields = json.loads(meta.get("fields") or "{}")
    except ValueError:
        return {}
    return {str(k): " ".join(str(v).split()) for k, v in fields.items() if v} if isinstance(fields, dict) else {}


def _exact_fields(meta: dict[str, Any]) -> dict[str, str]:
    """The memory's fields as stored (their text exact: they ride in the marker's JSON)."""
    try:
        fields = json.loads(meta.get("fields") or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in fields.items() if v} if isinstance(fields, dict) else {}


def render_block(store, rows: list[dict[str, Any]], newline: str = "\n") -> str:
    """The marked block for ``rows`` (begin marker to end marker, with a final newline)."""
    lines = [BEGIN_LINE, HEADING, "", NOTICE, ""]

    for r in rows:
        m = r["metadata"]
        meta: dict[str, Any] = {"id": r["id"], "fields": _exact_fields(m)}
        if m.get("last_confirmed") and m["last_confirmed"] != "unknown":
            meta["confirmed"] = m["last_confirmed"]  # the exact date; the suffix shows its month
        if credit.said(m.get("evidence")):  # as credited (the agent view; the claim is not shown): the suffix too
            meta["evidence"] = m["evidence"]
        since = validity(m)[0]
        if since:
            meta["since"] = since  # when it became true (consolidate/model/validity.py)
        shown = agent_view.text_of(visible(r["document"]))  # as the line shows it (control characters visible)
        head = f"**{m.get('type') or 'fact'}**: "
        entry = agent_view.line(shown, m, "export", room=10**9)  # whole, then held to the budget below
        if statement_of(shown, {}) != r["document"]:
            meta["text"] = r["document"]  # the exact text (comment markers, line breaks)
        budget = agent_view.surface("export").line_chars or 0
        if len(head + entry + " " + _meta_comment(meta)) > budget:  # the view's one line budget, per entry
            meta.pop("text", None)  # cut: the marker holds no exact text, no field over the budget
            meta["cut"] = True
            meta["fields"] = {k: v for k, v in meta["fields"].items() if len(v) <= budget // 4}
            entry = agent_view.line(shown, m, "export", room=budget - len(head + " " + _meta_comment(meta)))
        lines.append(f"- {head}{entry} " + _meta_comment(meta))
    if not rows:
        lines.append("(no memories yet)")
    lines.append(END)
    return newline.join(lines) + newline


def _find_block(text: str) -> tuple[int, int] | None:
    """``(start, end)`` character offsets of the block in ``text`` (end past the end marker's line
    break), or None. Raises BadInput for a begin marker without an end, or two blocks."""
    starts = [m.start() for m in re.finditer(r"(?m)^" + re.escape(BEGIN), text)]
    if not starts:
        return None
    if len(starts) > 1:
        raise BadInput(f"{len(starts)} consolidate blocks in the file: keep one (delete the others)")
    end = text.find(END, starts[0])
    if end < 0:
        raise BadInput("the consolidate block has a begin marker and no end marker"
                       f" ({END}): mend it by hand, nothing was changed")
    stop = end + len(END)
    if text.startswith("\r\n", stop):
        stop += 2
    elif text.startswith("\n", stop):
        stop += 1
    return starts[0], stop


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise BadInput(f"{path} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB: not an AGENTS.md")
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not UTF-8 text: nothing was changed") from None
    except IsADirectoryError:
        raise BadInput(f"{path} is a folder, not a file") from None


def export(store, path: str | os.PathLike, limit: int = EXPORT_LIMIT) -> dict[str, Any]:
    """Write the block into ``path`` (created when missing, in a folder that exists); returns
    ``{"path", "exported", "left_out": {...}, "changed": bool}`` (and ``"held_back"``: the line naming
    the memories the context guard held back, when it held any). Raises BadInput for a missing
    folder, a malformed block or a file that is not UTF-8 text (nothing written)."""
    path = Path(path)
    if not path.parent.is_dir():  # a mistyped folder is refused, not created (nothing written)
        raise BadInput(f"no such folder: {path.parent} (export writes {path.name} into an existing folder;"
                       " create it first)", path=str(path))
    rows, left_out, held_line = exportable(store, limit)
    text = _read(path)
    newline = "\r\n" if text and "\r\n" in text else "\n"
    block = render_block(store, rows, newline)
    if text is None:
        new = block
    else:
        where = _find_block(text)
        if where is None:
            sep = "" if not text else (newline if text.endswith("\n") else newline + newline)
            new = text + sep + block
        else:
            new = text[: where[0]] + block + text[where[1]:]
    changed = new != text
    if changed:
        _write(path, new)
    return {"path": str(path), "exported": len(rows), "left_out": left_out, "changed": changed,
            **({"held_back": held_line} if held_line else {})}


def _write(path: Path, text: str) -> None:
    """Replace ``path`` atomically, keeping its permission bits (a new file gets the umask's)."""

    write_atomic(path, gate(text), private=False)  # the block and the file around it: consolidate/rules/persisted.py


# -- import ---------------------------------------------------------------------------------------

def parse_block(text: str, name: str = "the file") -> list[dict[str, Any]]:
    """The entries of the block in ``text``: ``{"type", "statement", "id", "fields", "confirmed",
    "evidence", "since"}`` each (``statement``: the exact text :func:`render_block` exported,
    comment markers and line breaks included, :func:`statement_of`; ``confirmed``: the date the
    memory was last confirmed, from the entry's marker, else the month of its suffix as that month's
    first day, else None; ``evidence``: the evidence it was exported with, :func:`_evidence`;
    ``since``: the date it became true, from the marker, else None).

    Strict, all or nothing, as a JSONL import: a line of the block that starts an entry (``- ``) but
    is not ``- **TYPE**: statement [suffix] <!-- consolidate {...} -->`` with a known TYPE, a marker
    that is cut or not JSON, or a suffix date that is not a date raises InvalidImportLine naming the
    file (``name``) and its line; nothing is imported then. Raises BadInput when ``text`` has no
    block (or a malformed one)."""

    where = _find_block(text)
    if where is None:
        raise BadInput("no consolidate block in the file (written by `consolidate export`)")
    first = text.count("\n", 0, where[0]) + 1
    out = []
    for i, line in enumerate(text[where[0]:where[1]].splitlines()):
        if not line.startswith("- "):
            continue

        def bad(why: str, lineno: int = first + i) -> InvalidImportLine:
            return InvalidImportLine(f"{name}:{lineno}: {why}; nothing was imported", path=name, line=lineno)

        head, sep, tail = line.rstrip().rpartition(_MARKER)
        if not sep:
            head, tail = line.rstrip(), ""
        m = _ENTRY.match(head)
        if not m:
            raise bad("not an entry (`- **TYPE**: statement`, as `consolidate export` writes them)")
        if m.group("type") not in TYPES:
            raise bad(f"unknown type {m.group('type')!r} (known: {', '.join(TYPES)})")
        meta: Any = {}
        if sep:
            meta = None
            if tail.endswith("-->"):
                try:
                    meta = json.loads(tail[:-3])
                except ValueError:
                    pass
            if not isinstance(meta, dict):
                raise bad("its `<!-- consolidate {...} -->` marker is cut or not a JSON object (mend it or delete it)")
        elif "<!-- consolidate" in head:
            raise bad("a cut or malformed `<!-- consolidate {...} -->` marker (mend it or delete it)")
        statement = statement_of(m.group("statement").strip(), meta)
        fields = meta.get("fields")
        fields = fields if isinstance(fields, dict) else {}
        confirmed = _confirmed(meta.get("confirmed"), m.group("suffix"))
        if confirmed is False:
            raise bad(f"its date is not a date ({meta.get('confirmed') or m.group('suffix')!r}: use 2026-07 or"
                      " 2026-07-14)")
        since = _confirmed(meta.get("since"), None)
        if since is False:
            raise bad(f"its `since` date is not a date ({meta.get('since')!r}: use 2026-07-14)")
        out.append({"type": m.group("type"), "statement": statement,
                    "id": meta.get("id") if isinstance(meta.get("id"), str) else None,
                    "fields": {str(k): str(v) for k, v in fields.items()}, "confirmed": confirmed,
                    "evidence": credit.imported(_evidence(meta.get("evidence"), m.group("suffix")),
                                                meta.get("claimed_evidence"), m.group("type")),
                    "since": since, "cut": meta.get("cut") is True})
    return out


def _evidence(marker: Any, suffix: str | None) -> str:
    """The evidence an exported entry was exported with: the marker's ``evidence``, else the
    evidence its suffix names (``[high, observed-success, 2026-07]``; ``observed``, as a judge's
    claim is credited, included: consolidate.model.credit.said), else ``user-stated`` (an entry
    written by hand, with neither: a person on the team stated it)."""
    if credit.said(marker):
        return str(marker)
    named = [p.strip() for p in (suffix or "").split(",") if credit.said(p.strip())]
    return named[0] if named else "user-stated"


def _confirmed(marker: Any, suffix: str | None):
    """The date an exported entry was last confirmed (ISO ``YYYY-MM-DD``): the marker's
    ``confirmed`` date, else the suffix's month (``[high, user-stated, 2026-07]``) as its first
    day; None when the entry names none; False when what it names is not a date (months are 1-12:
    the suffix's month is the month, never shifted)."""

    if isinstance(marker, str) and marker.strip():
        try:
            return _dt.date.fromisoformat(marker.strip()[:10]).isoformat()
        except ValueError:
            return False
    last = (suffix or "").split(",")[-1].strip()
    if not re.fullmatch(r"\d{4}-\d{1,2}", last):
        return None
    year, month = (int(x) for x in last.split("-"))
    if not 1 <= month <= 12:
        return False
    return _dt.date(year, month, 1).isoformat()


def _git(folder: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, timeout=20,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None


def read_source(path: str | os.PathLike, rev: str | None = None) -> tuple[str, dict[str, str]]:
    """The file's text (at commit ``rev`` when given, read with ``git show``) and where it came from:
    ``{"file", "commit", "author"}`` (commit and author of ``rev``, or of the last commit that changed
    the file; absent outside git). Raises BadInput when the file (or the commit) cannot be read."""
    path = Path(path)
    folder = path.resolve().parent if path.resolve().parent.is_dir() else Path.cwd()
    origin: dict[str, str] = {"file": path.name}
    if rev is not None:
        if not rev.strip() or rev.startswith("-"):
            raise BadInput(f"bad commit {rev!r}")
        top = _git(folder, "rev-parse", "--show-toplevel")
        if top is None:
            raise BadInput(f"{folder} is not in a git repository: --rev needs one")
        rel = path.resolve().relative_to(Path(top.strip()).resolve()).as_posix()
        text = _git(folder, "show", f"{rev}:{rel}")
        if text is None:
            raise BadInput(f"cannot read {rel} at {rev} (git show {rev}:{rel} failed)")
        log = _git(folder, "log", "-1", "--format=%H%x00%an", rev, "--")
        origin["file"] = rel
    else:
        text = _read(path)
        if text is None:
            raise BadInput(f"no such file: {path}")
        log = _git(folder, "log", "-1", "--format=%H%x00%an", "--", path.name)
    if log and "\0" in log:
        commit, author = log.strip().split("\0", 1)
        origin["commit"], origin["author"] = commit, author
    return text, origin


def _import_undone(store, sid: str) -> bool:
    """Whether the block's session was consolidated and its last run undone (``consolidate undo``):
    the block is then imported again (consolidate/agents/undone_imports.py; entries a run not undone keeps
    in the store are left out as known); queued or partly run, it is not."""
    end = store.sessions.session_end(sid)
    if end is None or end["status"] in (*END_PENDING, "partial"):
        return False

    return last_run_undone(store, end)


def import_block(store, path: str | os.PathLike, rev: str | None = None) -> dict[str, Any]:
    """Queue the block of ``path`` (at ``rev``) as the notes of one session (see the module
    docstring); returns ``{"session_id", "notes", "known", "cut", "already_imported": bool, "origin"}``
    (``cut``: entries the export cut to its size budget, left out).
    The caller consolidates the session (``run_queue``) or leaves it to a worker."""
    text, origin = read_source(path, rev)
    entries = parse_block(text, origin["file"])
    # the session id of a block is the digest of what earlier versions read from it too (no re-import)
    keyed = [{k: e[k] for k in ("type", "statement", "id", "fields", "confirmed")} for e in entries]
    digest = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:16]
    sid = f"agents-md-{digest}"
    result: dict[str, Any] = {"session_id": sid, "notes": 0, "known": 0, "cut": 0, "already_imported": False,
                              "origin": origin, "secret": []}
    if store.sessions.session_end(sid) is not None and not _import_undone(store, sid):
        result["already_imported"] = True
        return result

    def local_id(e):  # the id this store gives the same statement
        return memory_id(store.project, e["type"] or "fact", e["statement"])

    wanted = [i for e in entries for i in (e["id"], local_id(e)) if i]
    known = store.longterm().get(wanted) if wanted and store.has_longterm else {}
    where = origin["file"] + (f"@{origin['commit'][:12]}" if origin.get("commit") else "")
    for e in entries:
        if e["cut"]:  # cut by the export's size budget: its text is not all there (never imported cut)
            result["cut"] += 1
            continue
        rows = [known.get(i) for i in (e["id"], local_id(e)) if i]
        if any(r is not None and r["document"].split() == e["statement"].split() for r in rows):
            result["known"] += 1
            continue
        # the evidence it was exported with (a teammate's observation stays an observation)
        metadata = {"source": "user", "evidence": e["evidence"], "imported_from": where, **e["fields"]}
        if origin.get("author"):
            metadata["author"] = origin["author"]
        if e["id"]:
            metadata["exported_id"] = e["id"]
        if e["confirmed"]:
            metadata["confirmed"] = e["confirmed"]  # kept as the memory's last_confirmed (stages/provenance.py)
        if e["since"]:
            metadata["since"] = e["since"]  # kept as the memory's valid_from (consolidate/model/validity.py)
        note_id = store.sessions.add_note(sid, e["statement"], flag=True, kind=e["type"], metadata=metadata)
        if getattr(note_id, "notice", None):
            result["secret"].append(note_id.notice)
        result["notes"] += 1
    if result["notes"]:
        store.sessions.end(sid, "success", f"imported from {where}")
    return result
