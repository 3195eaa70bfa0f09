"""Waiting for a worker thread without deafening Ctrl-C.

Python runs signal handlers on the main thread only. A main thread blocked in one long
``Thread.join(timeout)`` is woken by a SIGINT only when the kernel delivers it to that thread while
it is inside the wait; a signal handled on another thread (the kernel may pick any thread of the
process that does not block it), or arriving just before the wait blocks, leaves the main thread
waiting for the whole timeout: Ctrl-C during ``consolidate run`` then waited for the judge's answer
(test_small_lies, under load). :func:`join` waits in slices, so a pending Ctrl-C is raised within
:data:`SLICE` seconds."""

from __future__ import annotations

import threading
import time

#: Longest single wait, in seconds.
SLICE = 0.25


def join(thread: threading.Thread, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``thread`` to end, raising a pending KeyboardInterrupt within
    :data:`SLICE` seconds; returns whether the thread has ended."""
    end = time.monotonic() + seconds
    while thread.is_alive():
        left = end - time.monotonic()
        if left <= 0:
            break
        thread.join(min(SLICE, left))
    return not thread.is_alive()
