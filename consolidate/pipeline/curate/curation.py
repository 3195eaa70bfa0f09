"""``consolidate curate``: the judge reads the project's active memories in groups of related ones
(consolidate/pipeline/curate/groups.py) and answers per memory keep, drop, merge or conflict
(prompts/curate-v3.md by default, ``--prompt-version`` another, asked through ``JudgeChain.curate``). The answers become ONE maintenance
run through the journaled apply stage: ``consolidate runs`` lists it, ``consolidate undo RUN_ID``
reverts all of it.

- **drop** (junk): the memory is archived with status ``curated-out`` and the judge's reason;
- **merge** into another member: the survivor stays active; the provenance of the memory merged into
  it (its session, run, note ids, and what was merged into it before) is folded into the survivor's
  (``provenance.merged``, ``provenance.sessions``), its ``last_confirmed`` moves to the later of the
  two; the other is archived ``superseded`` by it (``superseded_by``, ``merged_into``, a
  ``supersedes`` graph edge);
- **conflict** with another member: both become ``disputed`` (``disputed_with`` each other), so the
  pair is in the review queue (``consolidate review --list``, ``consolidate disputes``);
- **keep**, or a member the answer leaves out: nothing changes.

A memory the user stated, pinned or approved in review (credited evidence ``user-stated``:
consolidate/model/credit.py; source ``flagged``, ``user`` or ``review``; ``reviewed`` "approved ...")
is never dropped or merged away without review: such a
proposal is sent to the review queue instead. With ``review``, every proposal is: the memory is only
marked (``curate_proposed``, ``curate_proposal``: what the judge proposed, as JSON), stays as it is,
and waits in ``consolidate review`` (approve: it holds, the mark is cleared, a conflict is settled
for it; decline: the proposal is applied, a merge as this pass merges: consolidate/pipeline/review.py). A group no judge answered validly is deferred: nothing of it changes (never a deletion).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from consolidate.core.vocab import CONFLICT, CURATED_OUT, DISPUTED, DROP, MERGE, SUPERSEDED, USER_STATED
from consolidate.judges.base import CurateMember, JudgeContext
from consolidate.judges.registry import curate_prompt_version
from consolidate.model.credit import approved, credited_entry
from consolidate.model.plan import MemoryUpdate, Plan
from consolidate.pipeline.curate.groups import default_max_group, large_groups, related_groups, wide_links
from consolidate.pipeline.maintenance import new_plan
from consolidate.pipeline.run import RunContext, run_stages
from consolidate.pipeline.stages import APPLY, Stage
from consolidate.pipeline.rejudge import _chain

#: Sources of a memory the user wrote or pinned: never dropped or merged away without review.
PROTECTED_SOURCES = frozenset({"flagged", "user", "review"})
#: Metadata of a memory waiting in review for a curation proposal (consolidate/pipeline/review.py).
PROPOSED, PROPOSAL = "curate_proposed", "curate_proposal"


def protected(meta: dict[str, Any]) -> str | None:
    """Why a memory of metadata ``meta`` may not be dropped or merged away without review (its
    credited evidence is user-stated, the user approved it in review, or its source is one of
    PROTECTED_SOURCES), or None."""
    if approved(meta):
        return "approved in review"
    if credited_entry(meta) == USER_STATED:
        return "user-stated"
    source = str(meta.get("source") or "")
    return f"source {source}" if source in PROTECTED_SOURCES else None


@dataclass
class CurateResult:
    """What a curation pass did. ``mode``: ``apply``, ``review`` or ``dry-run``; ``proposals``: one
    dict per non-keep answer (``action``, ``memory_id``, ``statement``, ``into`` / ``with``,
    ``reason``, ``judge``, ``outcome``: ``applied``, ``review``, ``dry-run``, ``reviewed`` (a
    protected memory the user already approved in review: not asked again) or ``stale`` (another run
    changed a memory of the pass while the judge answered: nothing applied), and ``held`` when a
    protected memory sent it to review); ``deferred``: ``{"memory_ids", "reason"}`` per group no
    judge answered; ``run_id`` is None when nothing was written."""

    mode: str = "apply"
    prompt_version: str = ""
    run_id: str | None = None
    considered: int = 0
    groups: int = 0
    kept: int = 0
    proposals: list[dict[str, Any]] = field(default_factory=list)
    deferred: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, action: str, outcome: str | None = None) -> int:
        """How many proposals of ``action`` (with ``outcome`` when given) the pass made."""
        return sum(1 for p in self.proposals if p["action"] == action and outcome in (None, p["outcome"]))


def _members(rows: dict[str, dict], ids: list[str]) -> list[CurateMember]:
    out = []
    for n, mid in enumerate(ids, 1):
        meta = rows[mid]["metadata"] or {}
        out.append(CurateMember(f"m{n}", rows[mid]["document"] or "", str(meta.get("type") or "fact"),
                                str(credited_entry(meta) or ""),
                                str(meta.get("last_confirmed") or "")[:10]))
    return out


def _ask(store, plan: Plan, result: CurateResult, rows: dict[str, dict], chain, groups, deadline) -> None:
    """Ask the chain for every group; fill ``result.proposals`` (outcome unset) and ``deferred``. A
    chain with no judge that can curate (noop, rules) is not asked: every group is deferred, and no
    event is logged (``batch --curate`` with such a chain writes no run)."""
    if not any(getattr(j, "can_curate", False) for j in chain.judges):
        why = f"no judge of the chain can curate ({', '.join(chain.names) or 'none'})"
        result.deferred += [{"memory_ids": list(ids), "reason": why} for ids in groups]
        return
    context = JudgeContext(core=store.core_rules(), project=store.project)
    for ids in groups:
        members = _members(rows, ids)
        got = chain.curate(members, context, deadline)
        for e in got.events:
            plan.decide(e.pop("event"), **e)
        if got.actions is None:
            why = "; ".join(got.reasons)[:400]
            result.deferred.append({"memory_ids": list(ids), "reason": why})
            plan.decide("curate.deferred", memory_ids=list(ids), reason=f"no valid curation answer, nothing changed: {why}")
            continue
        real = {m.id: mid for m, mid in zip(members, ids)}
        result.kept += len(ids) - sum(1 for a in got.actions.values() if a.action in (DROP, MERGE, CONFLICT))
        for mid_short, a in got.actions.items():
            if a.action not in (DROP, MERGE, CONFLICT):
                continue
            p: dict[str, Any] = {"action": a.action, "memory_id": real[mid_short],
                                 "statement": rows[real[mid_short]]["document"], "reason": a.reason,
                                 "judge": got.judge, "prompt_version": got.prompt_version or ""}
            if a.action == MERGE:
                p["into"] = real[str(a.into)]  # a member: validate_curation checked it
            if a.action == CONFLICT:
                p["with"] = real[str(a.with_)]
            result.proposals.append(p)


def merged_away(memory_id: str, into: str, reason: str) -> MemoryUpdate:
    """The update that archives ``memory_id`` as merged into ``into`` (status ``superseded``,
    ``superseded_by``/``merged_into``, a ``supersedes`` edge from ``into``): the loser's half of a merge,
    applied by the pass and by ``consolidate review --decline`` of a merge proposal (pipeline/review.py)."""
    return MemoryUpdate(memory_id, "archive", {"status": SUPERSEDED, "superseded_by": into, "merged_into": into},
                        event="memory.merged", edges=[[into, "supersedes"]], reason=reason)


def absorbs(survivor_id: str, survivor: dict, losers: list[tuple[str, dict]], run_id: str, by: str) -> MemoryUpdate:
    """The survivor's half of a merge: ``losers`` (``(id, row)``) folded into ``survivor`` (a row with
    ``metadata``) by ``_fold``; ``by`` names who merged (``curation``, ``review``)."""
    return MemoryUpdate(survivor_id, "update", _fold(survivor, losers, run_id), event="memory.merged_into",
                        reason=f"absorbed {', '.join(m for m, _ in losers)} ({by}): provenance folded in")


def _fold(survivor: dict, losers: list[tuple[str, dict]], run_id: str) -> dict[str, Any]:
    """The survivor's metadata changes of a merge: the losers' provenance folded into its own
    (``merged``: one entry per memory merged in, with its session, run and note ids, and what was
    merged into it before; ``sessions``: every session behind it) and the later ``last_confirmed``."""
    meta = survivor["metadata"] or {}
    prov = _provenance(meta)
    merged = list(prov.get("merged") or [])
    sessions = set(prov.get("sessions") or []) | {prov.get("session_id") or meta.get("session_id")}
    last = [str(meta.get("last_confirmed") or "")]
    for mid, row in losers:
        lmeta = row["metadata"] or {}
        lp = _provenance(lmeta)
        merged.append({"memory_id": mid, "session_id": lp.get("session_id") or lmeta.get("session_id"),
                       "run_id": lp.get("run_id") or lmeta.get("run_id"), "note_ids": lp.get("note_ids") or [],
                       "source": lmeta.get("source"), "evidence": lmeta.get("evidence"), "merged_by": run_id})
        merged += list(lp.get("merged") or [])
        sessions |= set(lp.get("sessions") or []) | {lp.get("session_id") or lmeta.get("session_id")}
        last.append(str(lmeta.get("last_confirmed") or ""))
    prov["merged"] = merged
    prov["sessions"] = sorted(s for s in sessions if isinstance(s, str) and s)
    changes: dict[str, Any] = {"provenance": json.dumps(prov, ensure_ascii=False)}
    dated = [d for d in last if d[:4].isdigit()]
    if dated and max(dated) != meta.get("last_confirmed"):
        changes["last_confirmed"] = max(dated)
    return changes


def _provenance(meta: dict[str, Any]) -> dict[str, Any]:
    try:
        prov = json.loads(meta.get("provenance") or "{}")
    except (TypeError, ValueError):
        return {}
    return prov if isinstance(prov, dict) else {}


def _mark(plan: Plan, p: dict[str, Any], why: str) -> None:
    """Send proposal ``p`` to the review queue: the memory is only marked (see the module docstring)."""
    proposal = {k: p[k] for k in ("action", "into", "with", "reason", "judge", "prompt_version") if p.get(k)}
    proposal["run_id"] = plan.run_id
    plan.updates.append(MemoryUpdate(p["memory_id"], "update",
                                     {PROPOSED: True, PROPOSAL: json.dumps(proposal, ensure_ascii=False)},
                                     event="curate.proposed", reason=f"curation proposes {_words(p)}; {why}"))
    plan.decide("curate.proposed", memory_id=p["memory_id"], reason=f"{_words(p)}: {why}", judge=p["judge"],
                prompt_version=p["prompt_version"])


def _words(p: dict[str, Any]) -> str:
    """A proposal in words: ``drop (reason)``, ``merge into mem-... (reason)``, ``conflict with ...``."""
    target = f" into {p['into']}" if p.get("into") else f" with {p['with']}" if p.get("with") else ""
    return f"{p['action']}{target}" + (f" ({p['reason']})" if p.get("reason") else "")


def _plan_updates(plan: Plan, result: CurateResult, rows: dict[str, dict], review: bool) -> None:
    """Turn the proposals into the plan's updates (or review marks); sets each proposal's outcome."""
    into: dict[str, list[str]] = {}
    disputes: set[tuple[str, str]] = set()
    for p in result.proposals:
        meta = rows[p["memory_id"]]["metadata"] or {}
        held = protected(meta) if p["action"] in (DROP, MERGE) else None
        if held and meta.get("reviewed"):  # the user already decided it holds: not asked again
            p["outcome"], p["held"] = "reviewed", f"{held}, {meta['reviewed']}"
            plan.decide("curate.declined", memory_id=p["memory_id"], judge=p["judge"],
                        reason=f"{_words(p)} not proposed again: {meta['reviewed']} in review")
            continue
        if review or held:
            p["outcome"] = "review"
            if held:
                p["held"] = held
            _mark(plan, p, f"held for review: the memory is {held}" if held else "sent to review (--review)")
            continue
        p["outcome"] = "applied"
        how = f"by curation ({p['judge']}, {p['prompt_version']})"
        if p["action"] == DROP:
            plan.updates.append(MemoryUpdate(p["memory_id"], "archive", {"status": CURATED_OUT},
                                             event="memory.curated_out", reason=f"dropped as junk {how}: {p['reason']}"))
            plan.decide("curate.dropped", memory_id=p["memory_id"], reason=p["reason"] or "junk", judge=p["judge"], prompt_version=p["prompt_version"])
        elif p["action"] == MERGE:
            into.setdefault(p["into"], []).append(p["memory_id"])
            plan.updates.append(merged_away(p["memory_id"], p["into"], f"merged into {p['into']} {how}: {p['reason']}"))
            plan.decide("curate.merged", memory_id=p["memory_id"], into=p["into"], reason=p["reason"] or "a repeat",
                        judge=p["judge"], prompt_version=p["prompt_version"])
        else:
            one, other = sorted((p["memory_id"], p["with"]))
            disputes.add((one, other))
            plan.decide("curate.conflict", memory_id=p["memory_id"], reason=p["reason"] or "incompatible statements",
                        judge=p["judge"], prompt_version=p["prompt_version"], **{"with": p["with"]})
    for survivor, losers in sorted(into.items()):
        plan.updates.append(absorbs(survivor, rows[survivor], [(m, rows[m]) for m in losers], plan.run_id, "curation"))
    for a, b in sorted(disputes):
        for one, other in ((a, b), (b, a)):
            plan.updates.append(MemoryUpdate(one, "update", {"status": DISPUTED, "disputed_with": other},
                                             event="memory.disputed", edges=[[other, "disputes"]],
                                             reason=f"conflicts with {other} (curation): a person decides"))


def newest_first(groups: list[list[str]], rows: dict[str, dict]) -> list[list[str]]:
    """``groups`` with the group holding the most recently written memory first (its provenance
    ``date``, else ``last_confirmed``; ties keep their order): when the time box runs out, the groups
    left for the next pass are those that changed least (a new memory is what repeats an old one)."""
    def newest(ids: list[str]) -> str:
        return max(str(_provenance(rows[i]["metadata"] or {}).get("date")
                       or (rows[i]["metadata"] or {}).get("last_confirmed") or "") for i in ids)

    return sorted(groups, key=newest, reverse=True)


def plan_curate(store, *, judges=None, chain_factory=None, time_box: float | None = 120.0, review: bool = False,
                max_group: int | None = None) -> tuple[Plan, CurateResult]:
    """The curation plan of ``store`` (reading only: nothing is written) and what it proposes (see
    the module docstring). ``judges``: judge specs (default: the store's chain), or ``chain_factory``
    (a callable returning a JudgeChain); ``time_box``: seconds for every judge call of the pass (the
    groups left when it runs out are deferred; the groups go newest first, :func:`newest_first`);
    ``max_group``: most memories per group (default: the prompt version's,
    consolidate.pipeline.curate.groups.default_max_group)."""
    plan, result, _seen = _plan(store, judges=judges, chain_factory=chain_factory, time_box=time_box, review=review,
                                max_group=max_group)
    return plan, result


def _plan(store, *, judges, chain_factory, time_box, review, max_group) -> tuple[Plan, CurateResult, dict]:
    """:func:`plan_curate`, and the metadata of every memory its updates touch as it was read
    (``{id: metadata}``: :func:`_unchanged` compares it under the lock)."""
    started = time.perf_counter()
    plan = new_plan(store, "curate")
    result = CurateResult(mode="review" if review else "apply", prompt_version=curate_prompt_version())
    if not (store.exists and store.has_longterm):
        return plan, result, {}
    lt = store.longterm()
    everything = lt.active(scope=store.project)
    active = [r for r in everything if not (r["metadata"] or {}).get(PROPOSED)]
    rows = {r["id"]: r for r in active}
    pending = {r["id"]: r for r in everything if (r["metadata"] or {}).get(PROPOSED)}
    result.considered = len(rows)
    wide = wide_links(result.prompt_version)
    size = max_group or default_max_group(result.prompt_version)
    groups = newest_first(related_groups(lt, active, store.project, size, wide, large_groups(result.prompt_version))
                          if active else [], rows)
    result.groups = len(groups)
    if groups:
        deadline = time.time() + time_box if time_box else None
        _ask(store, plan, result, rows, _chain(store, judges, chain_factory), groups, deadline)
        _plan_updates(plan, result, rows, review)
        _void_pending(plan, pending)
    result.seconds = round(time.perf_counter() - started, 3)
    read = {**rows, **pending}
    return plan, result, {u.memory_id: read[u.memory_id]["metadata"] for u in plan.updates}


def _void_pending(plan: Plan, pending: dict[str, dict]) -> None:
    """A proposal waiting in review that names a memory this pass archives (merge into it, conflict
    with it) no longer holds: its mark is cleared, the memory stays as it is (a fresh tester: declining
    such a merge archived the last memory that said it)."""
    gone = {u.memory_id for u in plan.updates if u.action == "archive"}
    for mid, row in sorted(pending.items()):
        try:
            proposal = json.loads((row["metadata"] or {}).get(PROPOSAL) or "{}")
        except ValueError:
            proposal = {}
        target = (proposal.get("into") or proposal.get("with")) if isinstance(proposal, dict) else None
        if target in gone and mid not in gone:
            why = f"its proposal ({proposal.get('action')} {target}) no longer holds: this pass archives {target}"
            plan.updates.append(MemoryUpdate(mid, "update", {PROPOSED: False, PROPOSAL: ""},
                                             event="curate.proposal_void", reason=why))
            plan.decide("curate.proposal_void", memory_id=mid, reason=why)


def run_curate(store, *, dry_run: bool = False, lock_timeout: float = 60.0, **options) -> CurateResult:
    """:func:`plan_curate` (``options`` are its keywords), then, unless ``dry_run``, the plan applied
    as one journaled run (``result.run_id``; when it changes nothing but has events to log, it is
    applied all the same, with nothing to undo). Raises StoreLocked, StoreError like every apply."""
    plan, result, seen = _plan(store, **{"judges": None, "chain_factory": None, "time_box": 120.0, "review": False,
                                        "max_group": None, **options})
    if dry_run:
        result.mode = "dry-run"
        for p in result.proposals:
            p["would"], p["outcome"] = p.get("outcome"), "dry-run"  # ``would``: what applying would do
        return result
    if plan.updates or plan.events:
        started = time.perf_counter()
        check = Stage("curate-check", lambda p, _ctx: _unchanged(store, p, result, seen), locked=True)
        run_stages((check, APPLY), plan, RunContext(store=store), lock_timeout)
        replica = store.replica()
        if replica is not None:
            replica.push()  # a store in a team: the pass reaches it too (as maintenance.apply_updates does)
        # the run's id only when it wrote (there is something for ``runs`` to list and ``undo`` to revert); a
        # pass whose events alone were logged (every memory kept) names no run (a fresh tester: its id was unknown)
        result.run_id = plan.run_id if plan.updates else None
        result.seconds = round(result.seconds + time.perf_counter() - started, 3)
    return result


#: The events of the decisions a pass takes out when it applies nothing (:func:`_unchanged`).
_DECISIONS = frozenset({"curate.dropped", "curate.merged", "curate.conflict", "curate.proposed", "curate.declined"})


def _unchanged(store, plan: Plan, result: CurateResult, seen: dict[str, dict]) -> Plan:
    """Under the store lock, before apply: when a memory the plan changes is no longer as it was read
    (another run wrote to it while the judge answered), nothing of the pass is applied (its updates
    are cleared, every applied or review proposal becomes ``stale``) and a ``curate.stale`` event
    says so: the next pass sees the store as it is."""
    now = store.longterm().get(sorted(seen))
    changed = sorted(i for i, meta in seen.items() if (now.get(i) or {}).get("metadata") != meta)
    if changed:
        plan.updates.clear()
        plan.events[:] = [e for e in plan.events if e["event"] not in _DECISIONS]  # none of them holds now
        for n, e in enumerate(plan.events):
            e["seq"] = n
        for p in result.proposals:
            if p.get("outcome") in ("applied", "review"):
                p["outcome"] = "stale"
        plan.decide("curate.stale", memory_ids=changed, reason="changed by another run while the judge answered:"
                                                               " nothing of this pass applied; run curate again")
    return plan


def summary(result: CurateResult) -> dict[str, Any]:
    """A pass's counts: ``run_id``, ``mode``, ``prompt_version``, ``considered``, ``groups``, ``kept``,
    ``merged``, ``dropped``, ``conflicts`` (applied; in a dry run, what applying would do),
    ``for_review`` (sent to review), ``deferred_groups``."""
    def n(action: str | None, outcome: str) -> int:
        return sum(1 for p in result.proposals if action in (None, p["action"])
                   and (p.get("would") if result.mode == "dry-run" else p.get("outcome")) == outcome)

    return {"run_id": result.run_id, "mode": result.mode, "prompt_version": result.prompt_version,
            "considered": result.considered, "groups": result.groups, "kept": result.kept,
            "merged": n(MERGE, "applied"), "dropped": n(DROP, "applied"), "conflicts": n(CONFLICT, "applied"),
            "for_review": n(None, "review"), "deferred_groups": len(result.deferred), "stale": n(None, "stale")}
