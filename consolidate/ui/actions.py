"""The decisions a page of ``consolidate ui`` posts, each run by the owner the CLI runs it with:
approve, decline and edit by consolidate.pipeline.review (as ``consolidate review --approve`` /
``--decline`` / ``--edit``), forget by consolidate.pipeline.forget (``consolidate forget``), undo by
consolidate.pipeline.undo (``consolidate undo``). Those take the store lock for their writes.

Before anything is written, each action checks that the store is writable (StoreReadOnly) and that
the form is not stale: the form carries the ``version`` of the memory or run the page showed
(consolidate.ui.reads.version), and when the store holds something else now (another process
approved, forgot, undid or re-confirmed it) the action raises StaleForm and writes nothing.
Each returns the one line the page shows when it is done.
"""

from __future__ import annotations

from collections.abc import Mapping

from consolidate.core.errors import BadInput, StaleForm
from consolidate.pipeline import review
from consolidate.pipeline.forget import forget
from consolidate.pipeline.undo import undo_run
from consolidate.ui import reads

#: The decisions a page posts about one memory.
MEMORY_ACTIONS = ("approve", "decline", "edit", "forget")


def _check_memory(store, memory_id: str, form: Mapping[str, str]) -> None:
    """StoreReadOnly on a read-only store; StaleForm when ``memory_id`` is not what the page showed."""
    store.require_writable()
    shown = form.get("version") or ""
    now = reads.stored_version(store, memory_id)
    if now is None:
        reads.memory(store, memory_id)  # BadInput for an id the store never held
        raise StaleForm(f"{memory_id} is no longer in the recall index (archived or removed since the page was"
                        " shown): nothing changed; the page shows it as it is now", subject=memory_id)
    if shown != now:
        raise StaleForm(f"{memory_id} changed since the page was shown (another process wrote to the store):"
                        " nothing changed; look at it again and decide", subject=memory_id)


def memory_action(store, action: str, memory_id: str, form: Mapping[str, str]) -> str:
    """Run ``action`` (one of :data:`MEMORY_ACTIONS`) on ``memory_id`` with the posted ``form``
    (``version``, ``reason`` or ``text``); returns the line to show. Raises BadInput (an unknown
    action or memory, a bad edit), StaleForm, StoreReadOnly, StoreLocked."""
    if action not in MEMORY_ACTIONS:
        raise BadInput(f"unknown action {action!r}: one of {', '.join(MEMORY_ACTIONS)}")
    _check_memory(store, memory_id, form)
    reason = (form.get("reason") or "").strip() or None
    if action == "approve":
        res = review.approve(store, memory_id, reason)
        extra = f"; superseded {', '.join(res['superseded'])}" if res["superseded"] else ""
        return f"approved {res['memory_id']}: active, user-stated{extra} (run {res['run_id']})"
    if action == "decline":
        res = review.decline(store, memory_id, reason)
        extra = f"; {', '.join(res['settled'])} active again" if res["settled"] else ""
        return f"declined {res['memory_id']}: archived with a tombstone{extra} (run {res['run_id']})"
    if action == "edit":
        res = review.edit(store, memory_id, form.get("text") or "")
        return f"edited {res['supersedes']}: now {res['memory_id']}, user-stated (run {res['run_id']})"
    res = forget(store, memory_id, reason)
    return (f"forgot {res['memory_id']} (run {res['run_id']}; undo that run on the Runs page to bring it back):"
            " a later session does not write it again unless the user states it or the note is flagged")


def undo(store, run_id: str, form: Mapping[str, str]) -> str:
    """Undo ``run_id`` as ``consolidate undo`` does; returns the line to show. Raises BadInput for an
    unknown run, StaleForm when the run changed since the page was shown (undone by another
    process), StoreReadOnly, StoreLocked."""
    store.require_writable()
    run = next((r for r in reads.runs(store) if r["run_id"] == run_id), None)
    if run is None:
        raise BadInput(f"unknown run {run_id!r}: the Runs page lists every run")
    if (form.get("version") or "") != reads.run_version(run):
        raise StaleForm(f"run {run_id} changed since the page was shown (undone by another process?): nothing"
                        " changed", subject=run_id)
    counts = undo_run(store, run_id)
    if counts.get("nothing_written"):
        return f"undid {run_id}: it wrote nothing to the recall index, so nothing was reverted"
    kept = f", kept {counts['kept_forgotten']} forgotten after it as forgotten" if counts.get("kept_forgotten") else ""
    return f"undid {run_id}: removed {counts['removed']} entries, restored {counts['restored']}{kept}"
