"""Crash injection for tests: ``CONSOLIDATE_CRASH_AT=<point>`` kills the process with SIGKILL (not an
exception: no ``finally``, no flush) when it reaches that point.

Points: ``judge`` (inside the judge stage, after the first batch was judged), ``apply:journal``
(after the journal is written), ``apply:<step>`` (after a step's writes, before the step is marked
done: the replay must redo it without duplicating), ``apply:events:partial`` (half of the
run's event lines appended, the last one torn) and ``apply:graph:partial`` (the run's graph node
lines appended, half of its edge lines, the last one torn).
"""

from __future__ import annotations

import os
import signal

ENV = "CONSOLIDATE_CRASH_AT"


def crash_point(name: str) -> None:
    """SIGKILL this process if ``CONSOLIDATE_CRASH_AT`` names ``name``."""
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def armed(name: str) -> bool:
    """Whether ``CONSOLIDATE_CRASH_AT`` names ``name`` (for points that must crash mid-write)."""
    return os.environ.get(ENV) == name
