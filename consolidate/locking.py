"""The store lock: one writer of the long-term tier at a time (filelock, a well-kept library)."""

from __future__ import annotations

import contextlib

from .errors import StoreLocked


@contextlib.contextmanager
def store_lock(store, timeout: float = 60.0):
    """Hold ``<store>/.lock`` for the block; raises StoreLocked after ``timeout`` seconds
    (``timeout=0``: fail at once when another process holds it)."""
    import filelock

    from .private import FILE_MODE, private_umask

    require = getattr(store, "require_writable", None)
    if require is not None:
        require()  # a read-only store: StoreReadOnly naming it, before any lock file is attempted
    private_umask()  # the holder of the store lock writes the store
    lock = filelock.FileLock(str(store.sub(".lock")), mode=FILE_MODE)
    try:
        lock.acquire(timeout=timeout)
    except filelock.Timeout:
        raise StoreLocked(f"store {store.path} is locked by another consolidate process"
                          f" (waited {timeout:g} s); try again later", path=str(store.path), timeout=timeout) from None
    try:
        yield
    finally:
        lock.release()
