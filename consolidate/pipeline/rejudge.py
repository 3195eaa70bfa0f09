"""Re-judging: entries written under an older prompt version go through the current judge chain
again (``consolidate batch --rejudge``). A judged drop archives the entry; a judged keep stamps the
new prompt version; an unjudged entry is left as it is (a judge outage never deletes memories).

``--rejudge --drifted`` re-judges the entries whose anchored code changed (the ``drifted`` queue of
consolidate.store.anchors) whatever their prompt version: a keep re-anchors the entry on today's code
(which takes it out of the queue), a drop archives it, an unjudged entry stays queued."""

from __future__ import annotations

import json
import time

from consolidate.model.plan import MemoryUpdate
from consolidate.store.layout import STORE_CONFIG
from consolidate.core.dates import parse_stored, parse_user_date
from consolidate.judges.base import Item, JudgeContext
from consolidate.judges.registry import build_chain
from consolidate.store import anchors


def candidates(store, *, current: str | None, since=None, prompt_version: str | None = None):
    """Active or quarantined judge-written entries to re-judge: written under ``prompt_version`` (when
    given) or under any version other than ``current``, at or after the instant ``since`` (an aware
    datetime, or text parsed by ``consolidate.core.dates.parse_user_date``: local time). Entries are
    compared by their stored UTC time, never as strings; an entry without a date is left out when
    ``since`` is given. Raises BadInput for an unparseable ``since``."""

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


def _chain(store, judges, chain_factory):
    """The judge chain: ``chain_factory()`` when given, else the configured chain of ``store``."""
    if chain_factory is not None:
        return chain_factory()

    return build_chain(judges, store_config=store.sub(STORE_CONFIG))


def _judge_rows(store, plan, chain, rows, time_box: float | None, counts: dict[str, int], *, on_drop, on_keep) -> None:
    """Judge the memory ``rows`` (each its statement and type) with ``chain`` within ``time_box``
    seconds, add the chain's events to ``plan``, and per row: unjudged, counted and left as it is;
    a drop, archived (``rejudged-out``) with ``on_drop(row, judged)`` as the reason; a keep, updated
    with the ``(fields, reason)`` of ``on_keep(row, judged)``. ``counts`` is updated in place."""

    items = [Item(key=i, content=r["document"], kind=r["metadata"].get("type")) for i, r in enumerate(rows)]
    deadline = time.time() + time_box if time_box else None
    result = chain.run(items, JudgeContext(core=store.core_rules(), project=store.project), deadline)
    for e in result.events:
        plan.decide(e.pop("event"), **e)
    for i, row in enumerate(rows):
        judged = result.judged.get(i)
        if judged is None:
            counts["unjudged"] += 1
        elif judged.verdict.verdict == "drop":
            counts["dropped"] += 1
            plan.updates.append(MemoryUpdate(row["id"], "archive", {"status": "rejudged-out"}, event="memory.rejudged",
                                             reason=on_drop(row, judged)))
        else:
            counts["kept"] += 1
            fields, reason = on_keep(row, judged)
            plan.updates.append(MemoryUpdate(row["id"], "update", fields, event="memory.rejudged", reason=reason))


def prompt_versions(store) -> dict[str, int]:
    """How many active or quarantined judge-written entries of ``store`` each prompt version wrote
    (``{version: count}``, most first; '' for entries written before versions were recorded): what a
    ``--prompt-version`` filter of ``batch --rejudge`` can select."""
    counts: dict[str, int] = {}
    for row in store.longterm().with_status("active", "quarantined", documents=False):
        m = row["metadata"] or {}
        if str(m.get("source", "")).startswith("judge:"):
            pv = m.get("prompt_version") or ""
            counts[pv] = counts.get(pv, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def plan_rejudge(store, plan, *, judges=None, chain_factory=None, since=None, prompt_version=None,
                 time_box: float | None = 120.0) -> dict[str, int]:
    """Add re-judging updates to ``plan``; returns counts ``{considered, kept, dropped, unjudged}``."""
    chain = _chain(store, judges, chain_factory)
    current = next((j.prompt_version for j in chain.judges if j.prompt_version), None)
    rows = candidates(store, current=current, since=since, prompt_version=prompt_version)
    counts = {"considered": len(rows), "kept": 0, "dropped": 0, "unjudged": 0}
    if rows:
        _judge_rows(store, plan, chain, rows, time_box, counts,
                    on_drop=lambda row, j: (f"dropped on re-judging by {j.judge} ({j.prompt_version}):"
                                            f" {j.verdict.reason}"),
                    on_keep=lambda row, j: ({"prompt_version": j.prompt_version or ""},
                                            f"kept on re-judging by {j.judge} ({j.prompt_version})"))
    return counts


def plan_rejudge_drifted(store, plan, *, judges=None, chain_factory=None,
                         time_box: float | None = 120.0) -> dict[str, int]:
    """Add re-judging updates for the drifted entries (consolidate.store.anchors) to ``plan``; returns
    counts ``{considered, kept, dropped, unjudged}``. The judge sees the entry's statement and the
    files whose code changed."""
    section = anchors.read_section(store.path)
    queued = section["drifted"]
    rows = [{"id": i, **r} for i, r in store.longterm().get(sorted(queued)).items()]
    counts = {"considered": len(rows), "kept": 0, "dropped": 0, "unjudged": 0}
    if not rows:
        return counts
    chain = _chain(store, judges, chain_factory)
    root = anchors.project_root(store)

    def paths(row) -> str:
        return ", ".join(queued[row["id"]].get("paths") or [])

    def keep(row, j):
        fresh = anchors.reanchor(root, section, anchors.memory_anchors(section, row["id"]))
        return ({"anchors": json.dumps(fresh, ensure_ascii=False)},
                f"kept on re-judging after its code changed ({paths(row)}) by {j.judge}; re-anchored")

    _judge_rows(store, plan, chain, rows, time_box, counts,
                on_drop=lambda row, j: (f"dropped on re-judging after its code changed ({paths(row)}) by"
                                        f" {j.judge}: {j.verdict.reason}"),
                on_keep=keep)
    return counts
