"""JSONL files: one JSON object a line. The one reader of input files and of the store's own files.

Input files (note imports, label files: :func:`read_objects`) are read strict and exact: one place
decides what a bad line is (invalid UTF-8, invalid or too deeply nested JSON, a line that is not an
object; blank lines are skipped), and errors name the file and the 1-based line.

The store's own JSONL files (the event log, the graph files, tombstones, ledgers) are appended by
one writer at a time (:func:`append_lines`, a torn tail cut first: :func:`cut_torn_tail`) and read
tolerantly (:func:`read_lines`; :func:`drop_lines` rewrites one without some lines).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterator

from consolidate.core.errors import BadInput, InvalidImportLine
from consolidate.core.atomic import write_text_atomic
from consolidate.core.faults import armed, crash_point
from consolidate.core.private import private_file
import os


def read_objects(source, *, what: str = "", suffix: str = "", name: str | None = None) -> Iterator[tuple[int, dict, Callable[[str], InvalidImportLine]]]:
    """Yield ``(line number, object, bad)`` for each non-blank line of ``source`` (a path, or a
    binary stream such as standard input); ``bad(why)`` builds the InvalidImportLine for that line
    (``suffix`` is appended to its message, e.g. "; nothing was imported"; ``name`` names a stream in
    messages, default ``<stdin>``).

    Raises BadInput when the file cannot be read (``what`` names it in the message, e.g. "label
    file"), InvalidImportLine for invalid UTF-8, invalid or too deeply nested JSON, or a non-object."""
    if hasattr(source, "read"):
        p, raw = Path(name or "<stdin>"), source.read()
    else:
        p = Path(source)
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise BadInput(f"cannot read {what + ' ' if what else ''}{p}: {exc.strerror or exc}", path=str(p)) from None
    if raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark, as Windows editors save: not data
        raw = raw[3:]
    for lineno, line in enumerate(raw.splitlines(), 1):
        def bad(why: str, lineno=lineno) -> InvalidImportLine:
            return InvalidImportLine(f"{p}:{lineno}: {why}{suffix}", path=str(p), line=lineno)

        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise bad(f"invalid UTF-8 at byte {exc.start}") from None
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise bad(f"invalid JSON ({exc.msg})") from None
        except RecursionError:
            raise bad("JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise bad("a line must be a JSON object")
        yield lineno, obj, bad


# -- the store's own JSONL files (event log, graph files, tombstones, ledgers) ---------------------
# A line a crash cut off (or one damaged otherwise: `consolidate doctor` reports and moves those
# aside) is skipped by readers and cut before the next append.

def read_lines(path, *, contains: str | None = None) -> Iterator[dict]:
    """Yield each line of the store's JSONL file ``path`` that is a JSON object, in order; lines that
    are not (a torn last line, a damaged one, invalid UTF-8) are skipped, and a missing file yields
    nothing. ``contains``: only lines holding this text are parsed (a fast scan of a large log).
    Raises OSError when the file exists but cannot be read."""
    needle = contains.encode("utf-8") if contains is not None else None
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return
    with f:
        for raw in f:
            if needle is not None and needle not in raw:
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(obj, dict):
                yield obj


def drop_lines(path, drop: Callable[[dict], bool]) -> int:
    """Rewrite the store's JSONL file ``path`` without the object lines ``drop(obj)`` accepts
    (atomically, consolidate/core/atomic.py; every other line kept as it is, unreadable ones included);
    returns how many were dropped (0: the file is left alone; a missing file: 0)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return 0
    keep, dropped = [], 0
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and drop(obj):
            dropped += 1
        else:
            keep.append(line)
    if dropped:

        write_text_atomic(Path(path), "".join(x + "\n" for x in keep))
    return dropped


def append_lines(path: Path, lines: list[str], partial_point: str | None = None) -> None:
    """Append ``lines`` (each ending in a newline) to ``path`` in one write, flushed and fsynced
    (created 0600). With the crash point ``partial_point`` armed (consolidate.core.faults), half of
    them and a torn one are written first, then the process is killed."""

    with private_file(path, "a") as f:
        if partial_point and armed(partial_point) and len(lines) > 1:
            f.write("".join(lines[: len(lines) // 2]) + lines[len(lines) // 2][:15])
            f.flush()
            crash_point(partial_point)
        f.write("".join(lines))
        f.flush()
        os.fsync(f.fileno())


def cut_torn_tail(path: Path) -> None:
    """Remove a last line without its newline (an append cut by a crash) from ``path`` (any JSONL
    file a run appends to: the graph files, the event log)."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    with open(path, "rb+") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        pos = size
        while pos > 0:  # back to the last newline, in blocks
            step = min(65536, pos)
            f.seek(pos - step)
            block = f.read(step)
            k = block.rfind(b"\n")
            if k >= 0:
                f.truncate(pos - step + k + 1)
                break
            pos -= step
        else:
            f.truncate(0)
        f.flush()
        os.fsync(f.fileno())
