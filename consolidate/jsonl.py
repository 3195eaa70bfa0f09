"""Reading JSONL input files (note imports, label files): one JSON object a line, strict and exact.

One place decides what a bad line is: invalid UTF-8, invalid or too deeply nested JSON, a line that
is not an object. Blank lines are skipped. Errors name the file and the 1-based line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterator

from .errors import BadInput, InvalidImportLine


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
