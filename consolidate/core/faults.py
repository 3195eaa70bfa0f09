"""Crash injection for tests: ``CONSOLIDATE_CRASH_AT=<point>`` kills the process with SIGKILL (not an
exception: no ``finally``, no flush) when it reaches that point.

Points: ``judge`` (inside the judge stage, after the first batch was judged), ``apply:journal``
(after the journal is written), ``apply:<step>`` (after a step's writes, before the step is marked
done: the replay must redo it without duplicating), ``apply:events:partial`` (half of the
run's event lines appended, the last one torn) and ``apply:graph:partial`` (the run's graph node
lines appended, half of its edge lines, the last one torn). The hooks' (consolidate/agents/hooks/full.py,
consolidate/agents/hooks/lifecycle.py): ``hook:end:queued`` (the session end and its pending harvest
committed, no worker started), ``harvest:commit`` (a harvest's notes, keys and done mark written,
not committed), ``hook:end:harvested`` (the harvest committed, nothing logged) and
``hook:precompact:recorded`` (PreCompact's pending harvest committed, not made); the light hook's
``hook:queue-file:partial`` and ``queue-file:fold`` (consolidate/store/sessions/queue_file.py).

Pause injection for race tests: ``CONSOLIDATE_PAUSE_AT=<point>`` and ``CONSOLIDATE_PAUSE_DIR=<folder>``
make the process create ``<folder>/<point>.reached`` when it reaches that point and wait (up to
120 s) until ``<folder>/<point>.go`` exists, so a test lets another process act inside the window.
Points: ``team:push:read`` (a push has read the team store's records, before it writes) and
``apply:<step>:marked`` (a run's apply step done and marked in the journal, the next not started:
``apply:graph:marked`` is a run whose graph holds its memories while the recall index does not yet).
"""

from __future__ import annotations

import os
import signal

from consolidate.core.settings import CRASH_AT
from consolidate.core.settings import PAUSE_AT, PAUSE_DIR
import time
from pathlib import Path

ENV = CRASH_AT.name


def crash_point(name: str) -> None:
    """SIGKILL this process if ``CONSOLIDATE_CRASH_AT`` names ``name``."""
    if CRASH_AT.get() == name:
        os.kill(os.getpid(), signal.SIGKILL)


def pause_point(name: str) -> None:
    """Wait at ``name`` while a test acts (see the module docstring); nothing unless armed."""

    pause_dir = PAUSE_DIR.get()
    if PAUSE_AT.get() != name or not pause_dir:
        return
    folder = Path(pause_dir)
    stem = name.replace(":", "_")
    (folder / f"{stem}.reached").touch()
    deadline = time.monotonic() + 120
    while not (folder / f"{stem}.go").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def armed(name: str) -> bool:
    """Whether ``CONSOLIDATE_CRASH_AT`` names ``name`` (for points that must crash mid-write)."""
    return CRASH_AT.get() == name
