"""Test doubles shipped with the package, as httpx ships ``MockTransport``: test your hooks,
configurations and judge plug-ins offline, with no model, no server and no API key::

    from consolidate import run_queue
    from consolidate.testing import ScriptedJudge, keep, temporary_store

    with temporary_store() as store:
        store.sessions.add_note("s1", "Use pnpm, not npm: npm breaks the lockfile", flag=True)
        store.sessions.end("s1", "success")
        run_queue(store, judges=[ScriptedJudge({"pnpm": keep("Use pnpm, not npm")})])

- :class:`ScriptedJudge` answers from a script (judges/scripted.py);
- :func:`keep` and :data:`DROP` are verdicts for its script;
- :func:`temporary_store` makes a :class:`~consolidate.Store` in a temporary folder and removes it;
- :func:`crash_at` arms a crash point (consolidate/core/faults.py) for the processes you start.

Importing this module imports the store and the judge contract, not a model library.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from consolidate.core.faults import ENV as CRASH_ENV
from consolidate.store.store import Store
from consolidate.store.resolve import in_folder
from consolidate.judges.scripted import ScriptedJudge

__all__ = ["DROP", "ScriptedJudge", "crash_at", "keep", "temporary_store"]

#: A scripted drop verdict.
DROP: dict[str, Any] = {"verdict": "drop", "reason": "scripted drop"}


def keep(statement: str, type_: str = "fact", evidence: str = "observed-success", confidence: str = "high",
         **fields: Any) -> dict[str, Any]:
    """A scripted keep verdict: ``{"verdict": "keep", "statement", "type", "evidence", "confidence",
    "reason", "fields"}``; ``fields`` are the memory type's own fields (e.g. ``rationale=`` for a
    decision). The values are checked by the judge chain as a model's answer would be."""
    return {"verdict": "keep", "statement": statement, "type": type_, "evidence": evidence,
            "confidence": confidence, "reason": "scripted keep", "fields": fields}


@contextmanager
def temporary_store(embedding: str = "hash", project: str = "test", **options: Any) -> Iterator[Store]:
    """A fresh store in a temporary folder (``<tmp>/.memofs``), closed and removed on exit.

    ``embedding`` defaults to ``"hash"`` (fast, no model file; semantics are poor: pass
    ``embedding=None`` for the default MiniLM when a test needs real similarity). ``options`` go to
    :class:`~consolidate.Store` (``chroma_url=``, ...). Raises what ``Store`` raises."""
    with tempfile.TemporaryDirectory(prefix="consolidate-test-") as folder:
        store = Store(in_folder(folder), embedding=embedding, project=project, **options)
        try:
            yield store
        finally:
            store.close()


@contextmanager
def crash_at(point: str) -> Iterator[dict[str, str]]:
    """Arm the crash point ``point`` (e.g. ``"apply:journal"``, ``"hook:end:queued"``: the list is
    in consolidate/core/faults.py) in ``os.environ`` for the processes started inside the block;
    the process that reaches the point is killed with SIGKILL. Yields the environment to pass to
    ``subprocess`` (a copy with the variable set) and restores the variable on exit."""
    before = os.environ.get(CRASH_ENV)
    os.environ[CRASH_ENV] = point
    try:
        yield dict(os.environ)
    finally:
        if before is None:
            os.environ.pop(CRASH_ENV, None)
        else:
            os.environ[CRASH_ENV] = before
