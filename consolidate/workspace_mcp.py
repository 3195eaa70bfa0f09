"""The workspace tools of ``consolidate mcp`` (see :mod:`consolidate.workspace`).

:func:`register` adds ``session_start``, ``session_write``, ``session_append`` and
``session_extract`` to a server built by :func:`consolidate.mcp_server.build_server`; the two tools
that already existed, ``session_read`` and ``session_complete``, stay in ``mcp_server`` and call
:func:`read_part` and :func:`complete_part` from here, so a caller that knows nothing of workspaces
gets what it always got.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from .session import check_session_id
from .store import Store

SESSION_ID = Field(description="Your session id (the one session_start returned).")
PATH = Field(description="A path relative to the workspace, e.g. working/plan.md or output/memory.md "
                         "(no '..', no absolute paths).")


def read_part(store: Store, session_id: str, path: str | None) -> dict[str, Any] | None:
    """For ``session_read``: with ``path``, the file's text or the folder's listing (PathRefused,
    UnknownSession when the session has no workspace); without, the workspace's description, or
    None when the session has none."""
    from . import workspace

    sid = check_session_id(session_id)
    if path is not None and str(path).strip():
        return workspace.open_workspace(store, sid).read(path)
    ws = workspace.find(store, sid)
    return ws.describe() if ws is not None else None


def complete_part(store: Store, session_id: str, outcome: str, reason: str | None,
                  ephemeral: bool = False) -> dict[str, Any] | None:
    """For ``session_complete``, before it queues the end: the workspace's share of the outcome
    (extract ``output/`` on success and remove ``working/``; remove the workspace on an ephemeral
    failure; keep everything when aborted). None when the session has no workspace."""
    from . import workspace

    ws = workspace.find(store, check_session_id(session_id))
    if ws is None:
        return None
    done = ws.complete(outcome, reason, ephemeral=ephemeral, queue=False)
    return {k: done[k] for k in ("extracted", "blocked", "working_removed", "workspace_removed", "preserved")}


def register(server, backend) -> None:
    """Add the workspace tools to ``server``; ``backend`` is its StoreThread (every call runs on the
    store thread, so the tools are serialised with note/recall)."""
    from . import workspace

    @server.tool()
    async def session_start(
        session_id: Annotated[str | None, Field(description="The session id to use (a new one when omitted); "
                                                            "an aborted session with this id is resumed.")] = None,
        task: Annotated[str | None, Field(description="What you are about to do: the memories relevant to it "
                                                      "are written to context/memories.md.")] = None,
    ) -> dict[str, Any]:
        """Start (or resume) a session and get its workspace: context/ (read-only: core.md, memories.md,
        session.json), working/ (your scratch files), output/ (durable memory candidates: Markdown list
        items or JSONL lines with `content`). Returns the session id, the workspace path and its files."""
        return await backend.run(lambda s: workspace.start(s, session_id, task)[1])

    @server.tool()
    async def session_write(
        session_id: Annotated[str, SESSION_ID],
        path: Annotated[str, PATH],
        content: Annotated[str, Field(description="The whole new text of the file.")],
    ) -> dict[str, Any]:
        """Write a file of the workspace (under working/ or output/), replacing it; returns its size."""
        return await backend.run(lambda s: workspace.open_workspace(s, session_id).write(path, content))

    @server.tool()
    async def session_append(
        session_id: Annotated[str, SESSION_ID],
        path: Annotated[str, PATH],
        content: Annotated[str, Field(description="Text to add at the end of the file (include the newline).")],
    ) -> dict[str, Any]:
        """Append to a file of the workspace (under working/ or output/), creating it; returns its size."""
        return await backend.run(lambda s: workspace.open_workspace(s, session_id).append(path, content))

    @server.tool()
    async def session_extract(
        session_id: Annotated[str, SESSION_ID],
        flag: Annotated[bool, Field(description="Flag every candidate as a keeper (promoted without a "
                                                "judge, still checked by the write policies).")] = False,
    ) -> dict[str, Any]:
        """Turn output/ into candidate notes of the session (one per Markdown list item or JSONL line),
        replacing an earlier extraction. Items holding secrets are blocked (redacted in the file too).
        session_complete(outcome=success) extracts again by itself."""
        return await backend.run(lambda s: workspace.open_workspace(s, session_id).extract(flag=flag))
