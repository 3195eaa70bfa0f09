"""One memory on one line: ``Use pnpm, not npm [high, user-stated, 2026-07]`` with its status and
drift marks. The line format only: what is shown, and with which evidence, is decided by the one
agent view (consolidate/store/views/shown.py), the only caller of :func:`render_memory` outside
this module and consolidate.model.report (which re-exports these). Light: consolidate.core.vocab and
consolidate.model.validity only (the file-recall hook renders through it).
"""

from __future__ import annotations

from consolidate.core.vocab import ENDED_STATUSES, REVIEW_STATUSES
from consolidate.model.validity import as_of_suffix


def suffix(meta: dict) -> str:
    """``[high, user-stated, 2026-07]``: confidence, evidence, month last confirmed."""
    month = (meta.get("last_confirmed") or "")[:7]
    parts = [meta.get("confidence") or "?", meta.get("evidence") or "?"]
    if month:
        parts.append(month)
    return "[" + ", ".join(parts) + "]"


def render_memory(document: str, meta: dict) -> str:
    """One memory on one line: ``Use pnpm, not npm [high, user-stated, 2026-07]``, with
    ``[disputed]`` or ``[quarantined]`` after it where that applies (``[superseded 2026-11-02]``:
    an as-of recall's entry no longer true since that date), and ``[drifted: path]`` or
    ``[stale: path gone]`` for a memory whose anchored code changed or is gone (see
    :func:`consolidate.store.anchors.mark_hits`)."""
    return f"{' '.join(document.split())} {suffix(meta)}{marks(meta)}"


def marks(meta: dict) -> str:
    """The marks after a memory's suffix: `` [disputed]`` / `` [quarantined]``, an as-of recall's
    `` [superseded 2026-11-02]``, and the drift marks (:func:`drift_suffix`); '' for none."""
    status = meta.get("status")
    extra = f" [{status}]" if status in REVIEW_STATUSES else ""
    if status in ENDED_STATUSES:  # only an as-of recall shows one (consolidate/model/validity.py)
        extra = as_of_suffix(meta)
    if meta.get("drifted") or meta.get("stale"):  # set by the agent view (consolidate/store/views/shown.py)
        extra += drift_suffix(meta)
    return extra


def drift_suffix(meta: dict) -> str:
    """`` [drifted: a.py, b.py]`` / `` [stale: a.py gone]`` for a memory's metadata ('' for none): the
    comma-joined ``drifted`` / ``stale`` paths that consolidate.store.anchors.mark_hits sets."""
    out = ""
    if meta.get("drifted"):
        out += f" [drifted: {', '.join(meta['drifted'].split(','))}]"
    if meta.get("stale"):
        out += f" [stale: {', '.join(meta['stale'].split(','))} gone]"
    return out
