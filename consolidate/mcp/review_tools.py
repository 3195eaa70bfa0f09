"""The review tools of ``consolidate mcp`` (consolidate/pipeline/review.py): ``review_list``,
``review_approve``, ``review_decline`` and ``review_edit``, the same decisions as ``consolidate
review``. :func:`register` adds them to a server built by
:func:`consolidate.mcp.server.build_server`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from consolidate.pipeline.review import public, queue
from consolidate.pipeline.review import approve
from consolidate.pipeline.review import decline
from consolidate.pipeline.review import edit

MEMORY_ID = Field(description="The memory's id, as review_list returns it.")


def register(server, backend) -> None:
    """Add the four review tools to ``server``; they run on ``backend`` (the store thread)."""

    @server.tool()
    async def review_list() -> dict[str, Any]:
        """The memories waiting for the user's review: quarantined, disputed, and drifted or stale
        (their code changed or is gone). Each has its id, statement, status, ``reasons`` and the
        ids it disputes with. Ask the user, then call review_approve, review_decline or review_edit."""
        def run(s) -> dict[str, Any]:

            entries = [public(e) for e in queue(s)]
            return {"count": len(entries), "memories": entries}

        return await backend.run(run)

    @server.tool()
    async def review_approve(
        memory_id: Annotated[str, MEMORY_ID],
        note: Annotated[str | None, Field(description="Why (kept in the event log).")] = None,
    ) -> dict[str, Any]:
        """The user says the memory holds: it becomes active with evidence user-stated (a disputed one
        wins its dispute, as does one a curation proposal found in conflict; a drifted one is re-anchored on
        today's code). Only on the user's word."""
        def run(s) -> dict[str, Any]:

            return approve(s, memory_id, note)

        return await backend.run(run)

    @server.tool()
    async def review_decline(
        memory_id: Annotated[str, MEMORY_ID],
        reason: Annotated[str | None, Field(description="Why it is wrong (kept in the event log).")] = None,
    ) -> dict[str, Any]:
        """The user says the memory is wrong: archived with a tombstone (a later session does not bring
        it back unless the user states it again). One a curation proposal would merge into another
        memory is merged there instead (its provenance folded in). Only on the user's word."""
        def run(s) -> dict[str, Any]:

            return decline(s, memory_id, reason)

        return await backend.run(run)

    @server.tool()
    async def review_edit(
        memory_id: Annotated[str, MEMORY_ID],
        text: Annotated[str, Field(description="The memory in the user's words: one standalone statement.")],
    ) -> dict[str, Any]:
        """Replace the memory by the user's wording: a new entry (evidence user-stated) supersedes it.
        Only with the user's words."""
        def run(s) -> dict[str, Any]:

            return edit(s, memory_id, text)

        return await backend.run(run)
