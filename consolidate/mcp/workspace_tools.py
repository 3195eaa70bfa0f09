"""The workspace tools of ``consolidate mcp`` (see :mod:`consolidate.pipeline.workspace`).

:func:`register` adds ``session_start``, ``session_write``, ``session_append`` and
``session_extract`` to a server built by :func:`consolidate.mcp.server.build_server`; the two tools
that already existed, ``session_read`` and ``session_complete``, stay in ``mcp_server`` and call
:func:`read_part` and :func:`complete_part` from here, so a caller that knows nothing of workspaces
gets what it always got.

The current session: every tool takes ``session_id`` as optional. Left out, it is the current
session (:func:`current_session_id`), the same rule as ``note``: ``session_start`` records the
session it started (or resumed) as the current session of this server's agent, so the calls after it
go to that workspace until ``session_complete`` ends it; before any ``session_start`` (or after the
completion) it is the agent session the SessionStart hook recorded.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from consolidate.store.sessions.tier import check_session_id
from consolidate.store.store import Store
from consolidate.store.sessions.agents import current_session
from consolidate.core.errors import BadInput, StoreReadOnly
from consolidate.store.sessions.agents import record_start
from consolidate.pipeline import workspace

SESSION_ID = Field(description="Leave empty: the current session is used (the one your last session_start "
                               "returned, else the agent session recorded by the SessionStart hook). Give an "
                               "id only to work in another session's workspace.")
PATH = Field(description="A path relative to the workspace, e.g. working/plan.md or output/memory.md "
                         "(no '..', no absolute paths).")


def current_session_id(store: Store, session_id: str | None) -> str:
    """The session a workspace tool call is about: ``session_id`` when given (checked); else the
    current session of the store for this server (consolidate.store.sessions.agents: the newest open session
    started under this server's agent: its last ``session_start``, which records itself there, else
    the session the SessionStart hook recorded). BadInput (one line) when there is none."""
    if session_id is not None and session_id != "":  # "" is how some clients leave an option out
        return check_session_id(session_id)

    try:
        sid = current_session(store.sessions)[0]
    except StoreReadOnly:
        sid = None
    if sid is None:
        raise BadInput("no session_id given and no current session: call session_start first (or give session_id)")
    return sid


def record_started(store: Store, session_id: str) -> None:
    """Record a session started (or resumed) through ``session_start`` as the current session of this
    server's agent (consolidate.store.sessions.agents.record_start, under this process's ancestors), so that
    the tools called without ``session_id`` (note, session_write, ..., session_complete) use it."""

    record_start(store.sessions, session_id, agent="mcp-session-start")


def read_part(store: Store, session_id: str, path: str | None) -> dict[str, Any] | None:
    """For ``session_read``: with ``path``, the file's text or the folder's listing (PathRefused,
    UnknownSession when the session has no workspace); without, the workspace's description, or
    None when the session has none."""

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

    ws = workspace.find(store, check_session_id(session_id))
    if ws is None:
        return None
    done = ws.complete(outcome, reason, ephemeral=ephemeral, queue=False)
    return {k: done[k] for k in ("extracted", "blocked", "working_removed", "workspace_removed", "preserved")}


def register(server, backend) -> None:
    """Add the workspace tools to ``server``; ``backend`` is its StoreThread (every call runs on the
    store thread, so the tools are serialised with note/recall)."""

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
        def begin(s: Store) -> dict[str, Any]:
            info = workspace.start(s, session_id, task)[1]
            record_started(s, info["session_id"])
            return info

        return await backend.run(begin)

    @server.tool()
    async def session_write(
        path: Annotated[str, PATH],
        content: Annotated[str, Field(description="The whole new text of the file.")],
        session_id: Annotated[str | None, SESSION_ID] = None,
    ) -> dict[str, Any]:
        """Write a file of the workspace (under working/ or output/), replacing it; returns its size."""
        return await backend.run(lambda s: workspace.open_workspace(s, current_session_id(s, session_id))
                                 .write(path, content))

    @server.tool()
    async def session_append(
        path: Annotated[str, PATH],
        content: Annotated[str, Field(description="Text to add at the end of the file (include the newline).")],
        session_id: Annotated[str | None, SESSION_ID] = None,
    ) -> dict[str, Any]:
        """Append to a file of the workspace (under working/ or output/), creating it; returns its size."""
        return await backend.run(lambda s: workspace.open_workspace(s, current_session_id(s, session_id))
                                 .append(path, content))

    @server.tool()
    async def session_extract(
        flag: Annotated[bool, Field(description="Flag every candidate as a keeper (promoted without a "
                                                "judge, still checked by the write policies).")] = False,
        session_id: Annotated[str | None, SESSION_ID] = None,
    ) -> dict[str, Any]:
        """Turn output/ into candidate notes of the session (one per Markdown list item or JSONL line),
        replacing an earlier extraction. Items holding secrets are blocked (redacted in the file too).
        session_complete(outcome=success) extracts again by itself."""
        return await backend.run(lambda s: workspace.open_workspace(s, current_session_id(s, session_id))
                                 .extract(flag=flag))
