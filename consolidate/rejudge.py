"""Re-judging: entries written under an older prompt version go through the current judge chain
again (``consolidate batch --rejudge``). A judged drop archives the entry; a judged keep stamps the
new prompt version; an unjudged entry is left as it is (a judge outage never deletes memories).

``--rejudge --drifted`` re-judges the entries whose anchored code changed (the ``drifted`` queue of
consolidate.anchors) whatever their prompt version: a keep re-anchors the entry on today's code
(which takes it out of the queue), a drop archives it, an unjudged entry stays queued."""

from __future__ import annotations

import json
import time

from .plan import MemoryUpdate


def candidates(store, *, current: str | None, since=None, prompt_version: str | None = None):
    """Active or quarantined judge-written entries to re-judge: written under ``prompt_version`` (when
    given) or under any version other than ``current``, at or after the instant ``since`` (an aware
    datetime, or text parsed by ``consolidate.dates.parse_user_date``: local time). Entries are
    compared by their stored UTC time, never as strings; an entry without a date is left out when
    ``since`` is given. Raises BadInput for an unparseable ``since``."""
    from .dates import parse_stored, parse_user_date

    if isinstance(since, str):
        since = parse_user_date(since, what="--since date")
    out = []
    for row in store.longterm().with_status("active", "quarantined"):
        m = row["metadata"]
        if not str(m.get("source", "")).startswith("judge:"):
            continue
        pv = m.get("prompt_version") or ""
        if prompt_version is not None and pv != prompt_version:
            continue
        if prompt_version is None and current is not None and pv == current:
            continue
        if since is not None:
            written = parse_stored(json.loads(m.get("provenance") or "{}").get("date"))
            if written is None or written < since:
                continue
        out.append(row)
    return out


def plan_rejudge(store, plan, *, judges=None, chain_factory=None, since=None, prompt_version=None,
                 time_box: float | None = 120.0) -> dict[str, int]:
    """Add re-judging updates to ``plan``; returns counts ``{considered, kept, dropped, unjudged}``."""
    from judges.base import JudgeContext
    from judges.chain import Item

    if chain_factory is not None:
        chain = chain_factory()
    else:
        from judges.registry import build_chain

        chain = build_chain(judges, store_path=store.path)
    current = next((j.prompt_version for j in chain.judges if getattr(j, "prompt_version", None)), None)
    rows = candidates(store, current=current, since=since, prompt_version=prompt_version)
    counts = {"considered": len(rows), "kept": 0, "dropped": 0, "unjudged": 0}
    if not rows:
        return counts
    items = [Item(key=i, content=r["document"], kind=r["metadata"].get("type")) for i, r in enumerate(rows)]
    deadline = time.time() + time_box if time_box else None
    result = chain.run(items, JudgeContext(core=store.core_rules(), project=store.project), deadline)
    for e in result.events:
        plan.decide(e.pop("event"), **e)
    for i, row in enumerate(rows):
        judged = result.judged.get(i)
        if judged is None:
            counts["unjudged"] += 1
            continue
        if judged.verdict.verdict == "drop":
            counts["dropped"] += 1
            plan.updates.append(MemoryUpdate(row["id"], "archive", {"status": "rejudged-out"}, event="memory.rejudged",
                                             reason=f"dropped on re-judging by {judged.judge} ({judged.prompt_version}):"
                                                    f" {judged.verdict.reason}"))
        else:
            counts["kept"] += 1
            plan.updates.append(MemoryUpdate(row["id"], "update", {"prompt_version": judged.prompt_version or ""},
                                             event="memory.rejudged",
                                             reason=f"kept on re-judging by {judged.judge} ({judged.prompt_version})"))
    return counts


def plan_rejudge_drifted(store, plan, *, judges=None, chain_factory=None,
                         time_box: float | None = 120.0) -> dict[str, int]:
    """Add re-judging updates for the drifted entries (consolidate.anchors) to ``plan``; returns
    counts ``{considered, kept, dropped, unjudged}``. The judge sees the entry's statement and the
    files whose code changed."""
    from judges.base import JudgeContext
    from judges.chain import Item

    from . import anchors

    section = anchors.read_section(store.path)
    queued = section["drifted"]
    rows = [{"id": i, **r} for i, r in store.longterm().get(sorted(queued)).items()]
    counts = {"considered": len(rows), "kept": 0, "dropped": 0, "unjudged": 0}
    if not rows:
        return counts
    if chain_factory is not None:
        chain = chain_factory()
    else:
        from judges.registry import build_chain

        chain = build_chain(judges, store_path=store.path)
    items = [Item(key=i, content=r["document"], kind=r["metadata"].get("type")) for i, r in enumerate(rows)]
    deadline = time.time() + time_box if time_box else None
    result = chain.run(items, JudgeContext(core=store.core_rules(), project=store.project), deadline)
    for e in result.events:
        plan.decide(e.pop("event"), **e)
    root = anchors.project_root(store)
    for i, row in enumerate(rows):
        judged = result.judged.get(i)
        paths = ", ".join(queued[row["id"]].get("paths") or [])
        if judged is None:
            counts["unjudged"] += 1
            continue
        if judged.verdict.verdict == "drop":
            counts["dropped"] += 1
            plan.updates.append(MemoryUpdate(row["id"], "archive", {"status": "rejudged-out"}, event="memory.rejudged",
                                             reason=f"dropped on re-judging after its code changed ({paths}) by"
                                                    f" {judged.judge}: {judged.verdict.reason}"))
        else:
            counts["kept"] += 1
            fresh = anchors.reanchor(root, section, anchors.memory_anchors(section, row["id"]))
            plan.updates.append(MemoryUpdate(row["id"], "update", {"anchors": json.dumps(fresh, ensure_ascii=False)},
                                             event="memory.rejudged",
                                             reason=f"kept on re-judging after its code changed ({paths}) by"
                                                    f" {judged.judge}; re-anchored"))
    return counts
