"""The store lock: one writer of the long-term tier at a time (filelock, a well-kept library)."""

from __future__ import annotations

import contextlib
import os
import time
import uuid

from consolidate.core.errors import StoreLocked
from consolidate.core.private import FILE_MODE, private_umask
from consolidate.core.private import private_file


#: How often a waiter looks at the holder file, in seconds.
POLL = 0.5


@contextlib.contextmanager
def store_lock(store, lock_path, holder_path, timeout: float = 60.0):
    """Hold ``lock_path`` (the store's ``.lock``, consolidate.store.layout) for the block; raises StoreLocked when one holder kept it for
    ``timeout`` seconds while this process waited (``timeout=0``: fail at once when another process
    holds it). The wait starts again each time the lock changes hands: eight runs queued on one store
    each wait for the runs ahead of them, however long they take together, and only a holder that is
    stuck (or a run longer than ``timeout``) makes a waiter give up. The holder of the lock writes
    ``holder_path`` (its pid and a random token) when it takes it: a waiter that sees it change knows
    the lock changed hands, so the writers ahead of it make progress."""
    import filelock  # noqa: PLC0415 - third-party filelock: only its callers load it

    require = getattr(store, "require_writable", None)
    if require is not None:
        require()  # a read-only store: StoreReadOnly naming it, before any lock file is attempted
    private_umask()  # the holder of the store lock writes the store
    lock = filelock.FileLock(str(lock_path), mode=FILE_MODE)
    holder = holder_path
    seen = _holder(holder)
    deadline = time.monotonic() + timeout
    while True:
        try:
            lock.acquire(timeout=max(0.0, min(POLL, deadline - time.monotonic())) if timeout > 0 else 0)
            break
        except filelock.Timeout:
            now = _holder(holder)
            if now != seen:  # another writer took it since: progress, wait for the next one afresh
                seen, deadline = now, time.monotonic() + timeout
            elif time.monotonic() >= deadline:
                raise StoreLocked(f"store {store.path} is locked by another consolidate process"
                                  f" (held {timeout:g} s by one process while this one waited); try again later",
                                  path=str(store.path), timeout=timeout) from None
    try:
        try:

            with private_file(holder, "w") as f:
                f.write(f"{os.getpid()} {uuid.uuid4().hex}\n")
        except OSError:
            pass  # the marker only shortens others' waits
        yield
    finally:
        lock.release()


def _holder(path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""
