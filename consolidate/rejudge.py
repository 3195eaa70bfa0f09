"""Re-judging: entries written under an older prompt version go through the current judge chain
again (``consolidate batch --rejudge``). A judged drop archives the entry; a judged keep stamps the
new prompt version; an unjudged entry is left as it is (a judge outage never deletes memories)."""

from __future__ import annotations

import json
import time

from .plan import MemoryUpdate


def candidates(store, *, current: str | None, since: str | None = None, prompt_version: str | None = None):
    """Active or quarantined judge-written entries to re-judge: written under ``prompt_version`` (when
    given) or under any version other than ``current``, on or after ``since`` (ISO date)."""
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
        date = json.loads(m.get("provenance") or "{}").get("date", "")
        if since and date[:10] < since:
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
