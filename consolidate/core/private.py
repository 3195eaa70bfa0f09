"""The store is private to its user and ignored by git.

A store holds raw working notes (``sessions.sqlite3``), memories, logs, the journal and snapshots:
whatever an agent wrote down. So, whatever the umask of the process that writes it:

- every folder of the store is ``0700`` and every file ``0600``: a process that writes a store narrows
  its umask to ``077`` (:func:`private_umask`; called by ``Store(create=True)``, by ``Store(create=False)``
  on an existing store, by the hook, and again by every entry point that writes: ``undo_run``,
  ``doctor.check(repair=True)``, ``workspace.start`` and workspace writes, the store lock), and the
  files this package writes itself are created ``0600`` whatever the umask (:func:`private_file`), so
  files made by this package, by SQLite (WAL and shared-memory files), by ChromaDB and by filelock
  are created private; a store made before this rule is made private once when it is next opened
  for writing (:func:`prepare_store_dir`);
- a ``.gitignore`` inside the store ignores all of it (:data:`GITIGNORE`), so that ``git add -A`` in
  the project commits neither the raw notes nor the memories. What a user wants in git, they export
  on purpose (``git add -f`` or a copy outside the store).

Only the standard library is imported here (the hook's fast path).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: Mode of every folder of a store.
DIR_MODE = 0o700
#: Mode of every file of a store.
FILE_MODE = 0o600
#: The umask a process writing a store runs with: no bit for group or others.
UMASK = 0o077
GITIGNORE = (
    "# consolidate store: raw session notes, memories, logs and snapshots, private to their user.\n"
    "# Nothing here is meant for git; export what you want to share on purpose (git add -f).\n"
    "*\n"
)


def private_umask() -> None:
    """Narrow the process umask so that nothing it creates is readable by group or others (keeps any
    stricter bits already set). Process-wide, like any umask: called by the processes that write a
    store."""
    current = os.umask(UMASK)
    os.umask(current | UMASK)


def private_file(path, mode: str = "w", encoding: str | None = "utf-8"):
    """``open(path, mode)`` for a file of a store, created ``0600`` whatever the umask (an existing file
    with group or other bits is narrowed to ``0600``); its folder is created ``0700``. ``mode`` is one
    of ``w``, ``a``, ``wb``, ``ab``. Raises OSError like ``open``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    # through open() (an opener sets the mode), so that code and tests wrapping open() see it
    f = open(path, mode, encoding=None if "b" in mode else encoding,
             opener=lambda p, flags: os.open(p, flags, FILE_MODE))
    try:
        if stat.S_IMODE(os.fstat(f.fileno()).st_mode) & ~FILE_MODE:
            os.fchmod(f.fileno(), FILE_MODE)
    except BaseException:
        f.close()
        raise
    return f


def prepare_store_dir(path: Path, gitignore: str) -> None:
    """Create the store folder ``0700`` (with its ignore file ``gitignore``, ``.gitignore``:
    consolidate.store.layout.GITIGNORE), or make an existing one private:
    a folder that is not ``0700`` gets every folder and file under it set to ``0700``/``0600``.

    Raises OSError when the folder cannot be created."""
    private_umask()
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    if stat.S_IMODE(path.stat().st_mode) != DIR_MODE:
        make_private(path)
    ignore = path / gitignore
    if not ignore.exists():
        try:
            fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            return
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(GITIGNORE)


def make_private(path: Path) -> None:
    """Set ``path`` and every folder under it to ``0700`` and every file to ``0600`` (symlinks are not
    followed). Errors on single entries (a file removed meanwhile, one owned by another user) are
    skipped."""
    path = Path(path)
    _chmod(path, DIR_MODE)
    for root, dirs, files in os.walk(path):
        for d in dirs:
            _chmod(Path(root, d), DIR_MODE)
        for f in files:
            _chmod(Path(root, f), FILE_MODE)


def _chmod(p: Path, mode: int) -> None:
    try:
        if not p.is_symlink():
            os.chmod(p, mode)
    except OSError:
        pass
