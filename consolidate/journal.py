"""The write-ahead journal of the run being applied (``journal/`` in the store).

``journal/<run_id>.json`` holds the whole plan, written and fsynced before the first store write.
``journal/<run_id>.steps`` gets one line per apply step completed. A run that finds a journal left
behind by a crash replays the steps not yet completed (every step is idempotent), then removes it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .errors import StoreCorrupt
from .plan import Plan


def _folder(store) -> Path:
    folder = store.sub("journal")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def write(store, plan: Plan) -> Path:
    """Write the plan to the journal, fsynced; returns its path."""
    folder = _folder(store)
    path = folder / f"{plan.run_id}.json"
    tmp = path.with_suffix(".tmp")
    try:
        from .private import private_file

        with private_file(tmp, "w") as f:
            json.dump(plan.to_dict(), f, ensure_ascii=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk must not keep a half journal (and the notes in it)
        raise
    dfd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return path


def done_steps(store, run_id: str) -> set[str]:
    """Names of the apply steps already completed for ``run_id``."""
    p = _folder(store) / f"{run_id}.steps"
    try:
        return {line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()}
    except FileNotFoundError:
        return set()


def mark(store, run_id: str, step: str) -> None:
    """Record that ``step`` completed (appended and fsynced)."""
    from .private import private_file

    with private_file(_folder(store) / f"{run_id}.steps", "a") as f:
        f.write(step + "\n")
        f.flush()
        os.fsync(f.fileno())


def clear(store, run_id: str) -> None:
    """Remove the journal of a fully applied run."""
    for suffix in (".json", ".steps"):
        try:
            (_folder(store) / f"{run_id}{suffix}").unlink()
        except FileNotFoundError:
            pass


def pending(store) -> list[Plan]:
    """Plans left in the journal by an interrupted apply, oldest first.

    Raises StoreCorrupt for a journal file that is not a plan."""
    folder = store.sub("journal")
    if not folder.is_dir():
        return []
    plans = []
    for p in sorted(folder.glob("*.json"), key=lambda x: x.stat().st_mtime):
        try:
            plans.append(Plan.from_dict(json.loads(p.read_text(encoding="utf-8"))))
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreCorrupt(f"journal file {p} is corrupt ({exc}); move it away to continue", path=str(p)) from None
    return plans
