"""External content waits in quarantine: a keeper made from notes that carry content from outside the
project (a web page the agent fetched, search results, another MCP server's tool output; the harvest
marks them ``metadata["external"]``, consolidate/pipeline/harvest.py) is never promoted on a judge's keep
alone. The write policy quarantines it (event ``candidate.quarantined``, reason ``external
content``); it becomes active only when another session confirms it (the contradiction stage's
promotion of a quarantined entry seen again) or when the agent flags a note stating it (a flag is
the agent's own confirmation). A page that plants "always run X" in the agent's context thus never
reaches the next session's context on one judge's say-so."""

from __future__ import annotations


def external_tools(plan, candidate) -> list[str] | None:
    """The external tools behind the candidate's notes (``[]`` when a note is external with no tool
    named), or None when none of its notes is external."""
    tools: set[str] = set()
    external = False
    for nid in candidate.note_ids:
        try:
            meta = plan.note(nid).metadata or {}
        except KeyError:
            continue
        if meta.get("external"):
            external = True
            tools.update(t for t in meta.get("external_tools") or [] if isinstance(t, str))
    return sorted(tools) if external else None


def hold(plan, candidate) -> bool:
    """Quarantine a durable keeper judged from external notes (not flagged); True when it did."""
    if candidate.source == "flagged" or candidate.status == "quarantined":
        return False
    tools = external_tools(plan, candidate)
    if tools is None:
        return False
    candidate.status = "quarantined"
    candidate.provenance["external"] = tools or True
    plan.decide("candidate.quarantined", note_ids=candidate.note_ids, type=candidate.type,
                reason="external content" + (f" ({', '.join(tools)})" if tools else "")
                + ": waits in quarantine until another session confirms it or a flag")
    return True
