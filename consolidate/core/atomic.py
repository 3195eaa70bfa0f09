"""Replacing a file atomically: the one way this package rewrites a whole file.

The new content goes to a temporary file beside the target (``<name>.<pid>-<thread>.tmp``, so two
writers never share one), is flushed and fsynced, and is renamed over the target (``os.replace``:
atomic on POSIX), so a reader sees the old file or the new one, never half of one, and a crash
leaves at worst a ``*.tmp`` file (``consolidate doctor`` removes those in a store). A failed write
removes its temporary file and raises.

Only the standard library is imported here (the hook's fast path).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Iterable
from consolidate.core.private import private_file


def write_atomic(path, content: str | bytes | Iterable[str], *, private: bool = True,
                 sync_folder: bool = False) -> None:
    """Replace ``path`` with ``content`` (text as UTF-8, bytes as they are, or an iterable of text
    chunks written one after the other: rows streamed, never joined in memory).

    ``private`` (a file of a store): the file is ``0600`` and a missing folder is created ``0700``
    (consolidate/core/private.py). Otherwise (a user's file: settings, an exported AGENTS.md) the file
    keeps its permission bits, and a new one gets the umask's. ``sync_folder``: the folder is
    fsynced after the rename too, so the new name survives a power cut (the journal).

    Raises OSError like ``open``; the temporary file is removed first."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    mode = None
    if not private:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
    try:
        if private:

            f = private_file(tmp, "wb")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            f = open(tmp, "wb")
        with f:
            if isinstance(content, bytes):
                f.write(content)
            elif isinstance(content, str):
                f.write(content.encode("utf-8"))
            else:
                for chunk in content:
                    f.write(chunk.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    if sync_folder:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_text_atomic(path, text: str) -> None:
    """Replace the store file ``path`` with ``text`` (:func:`write_atomic`, ``0600``)."""
    write_atomic(path, text)


def write_json_atomic(path, data: Any, *, compact: bool = False) -> None:
    """Replace the store file ``path`` with ``data`` as JSON (non-ASCII kept; indented one space, or
    ``compact``: no spaces, for a file parsed on every recall). Raises TypeError for data JSON cannot
    hold, OSError like :func:`write_atomic`."""
    text = (json.dumps(data, ensure_ascii=False, separators=(",", ":")) if compact
            else json.dumps(data, ensure_ascii=False, indent=1))
    write_atomic(path, text)
