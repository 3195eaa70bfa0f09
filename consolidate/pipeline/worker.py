"""``consolidate worker``: the detached process a session-end hook starts.

It takes the worker lock (``.worker.lock``; a second worker exits at once and the queue stays for
the running one), drains the queue oldest first, each session within its time box, and records each
result in the queue row. If it dies, the claimed rows are taken over by the next worker (their
claiming process is gone), so nothing queued is lost.
"""

from __future__ import annotations

import datetime as _dt
import sys

from consolidate.core.settings import TIME_BOX
from consolidate.store.layout import WORKER_LOCK
import os
import time
from consolidate.model.plan import run_summary as summary
from consolidate.model.report import drain_notices, run_notices
from consolidate.pipeline.run import run_queue
from consolidate.store.worker_health import record

#: Default time box of one session in the worker, in seconds (configurable: --time-box or
#: CONSOLIDATE_TIME_BOX).
DEFAULT_TIME_BOX = TIME_BOX.default


#: How long a worker started by a session-end hook waits for that hook to exit, at most (seconds).
HOOK_WAIT = 15.0


def wait_for_hook(pid_text: str, *, timeout: float = HOOK_WAIT, step: float = 0.02) -> None:
    """Wait while the process ``pid_text`` (the session-end hook that started this worker) is this
    process's parent, i.e. until it has exited, at most ``timeout`` seconds: the hook's harvest has the CPU to itself, and a
    hook killed before it finished leaves its harvest to this worker (consolidate/agents/hooks/lifecycle.py).
    Returns at once for a pid that is not a number or not running. Never raises."""
    try:
        pid = int(pid_text)
    except ValueError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and pid > 1 and os.getppid() == pid:  # reparented once the hook exits
        time.sleep(step)


def time_box_from_env(default: float = DEFAULT_TIME_BOX) -> float:
    """``$CONSOLIDATE_TIME_BOX`` (seconds; consolidate/core/settings.py), else ``default``. Raises
    ConfigError for a value that is not a positive number."""
    return TIME_BOX.get() if TIME_BOX.raw() is not None else default


def run_worker(store, *, time_box: float | None = None, judges: list[str] | None = None, out=None) -> int:
    """Drain the queue under the worker lock; returns the number of sessions consolidated (0 when
    another worker holds the lock). A worker that drained the queue is recorded as a good run in
    ``logs/worker.status.json`` (consolidate/store/worker_health.py)."""
    import filelock  # noqa: PLC0415 - third-party filelock: only its callers load it

    out = out or sys.stdout
    time_box = time_box or time_box_from_env()
    lock = filelock.FileLock(str(store.sub(WORKER_LOCK)))
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        print(_stamp(), "another worker is draining this store; leaving the queue to it", file=out, flush=True)
        return 0

    def say(taken) -> None:
        plan = taken.plan
        if plan is None:
            return
        print(_stamp(), f"session {plan.session_id} ({plan.outcome}) run {plan.run_id}:", summary(plan),
              file=out, flush=True)
        for line in run_notices(summary(plan)):
            print(_stamp(), f"session {plan.session_id}: {line}", file=out, flush=True)

    try:
        # one thread, one session at a time: the model's memory goes before the index loads
        plans = run_queue(store, rounds=True, judges=judges, time_box=time_box, on_done=say, release_model=True)
        for line in drain_notices(plans):  # a crash replay, a failed team push
            print(_stamp(), line, file=out, flush=True)
        done = len(plans)
    finally:
        lock.release()

    record(store.path)  # a good run (a failed one is recorded by `consolidate worker`: cli/commands/worker_cmd.py)
    return done


def _stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
