"""Stage 7, contradiction check (docs/design.md#contradiction-check and docs/design.md#quarantine).

Each durable keeper, flagged ones included, is compared with the keepers of the same run (of the same
type from CANDIDATE_SIMILARITY on, of another type from CROSS_TYPE_SIMILARITY on: the same rule kept
from two notes is often typed twice) and with the existing same-type, same-scope memories (Chroma
neighbours, nearest first, with cosine similarity at least CANDIDATE_SIMILARITY):

- the same statement (:func:`same_memory`: one consolidate.core.normal.text_key, or similarity >=
  DUPLICATE_SIMILARITY with the same numbers in the same order, the same negations and every
  differing part of the two whole texts as similar, so two long notes differing only at the end are
  not, nor "port 8080 to 3000" and "port 3000 to 8080") is a duplicate: the existing entry is re-confirmed (last_confirmed today; confidence one step up when seen
  in another session; a quarantined entry seen in another session is promoted to active and its
  evidence upgraded) and nothing new is written;
- the other candidates go to the judge chain's compare prompt (every judge kind that has a
  ``compare`` method: the API and the CLI judge), which answers duplicate, updates, contradicts or
  unrelated.
- ``updates`` (the new statement replaces the old one: "switched from X to Y", "now X; Y is gone",
  "no longer"; :func:`_update`): with equal or stronger evidence (the evidence kind: user-stated >
  observed > inferred) the new entry supersedes the old (archived with ``superseded_by``, a
  ``supersedes`` graph edge); with weaker evidence the new entry is quarantined, linked to the old
  (``provenance.updates``), until another session confirms it: then it becomes active and the old
  entry is superseded (:func:`_confirm_update`).
- which side stands is decided by :func:`consolidate.pipeline.stages.credibility.prevails` (one rule for
  every path): stronger credited evidence, then the newer observation (an older statement never
  supersedes a newer one without stronger evidence; an update observed before the entry it would
  replace is rejected), then confidence.
- ``contradicts`` (both claim to be true now): stronger new evidence (or equal and newer) supersedes,
  weaker (or equal and older) new evidence is rejected (the event cites the existing entry), a tie
  makes both ``disputed`` (shown with a ``[disputed]`` suffix by recall and in the SessionStart context, listed
  by ``consolidate disputes``). A quarantined entry contradicted by a new observation is deleted with
  a tombstone.
- with no judge able to compare, nothing is guessed to be a contradiction: only duplicates act.

Never are two contradicting entries left active. A new fact that only mentions an entity does not
retire other facts about it: only the judge's ``contradicts`` does.
"""

from __future__ import annotations

import datetime as _dt
import re

from consolidate.core.normal import canonical, fold, text_key
from consolidate.model.plan import MemoryUpdate, Reconfirmation, step_confidence
from consolidate.core.vocab import CONFIDENCE_RANK, EVIDENCE_RANK, LIVE_STATUSES
from consolidate.pipeline.stages.provenance import memory_id
from consolidate.store.echo import echo_reason
from consolidate.model.validity import candidate_dates
from consolidate.pipeline.stages.credibility import may_overrule
from consolidate.pipeline.stages.credibility import credited_strength, entry_recorded, entry_strength, note_origin, recorded
from consolidate.model import credit
from consolidate.judges.base import JudgeContext, Pair
from consolidate.pipeline.stages.credibility import prevails
from consolidate.model.validity import validity
import difflib
import json

#: Cosine similarity at or above which two statements are the same memory without asking a judge.
#: MiniLM-L6-v2 scores rewrites of one sentence above 0.95 and paraphrases of one rule 0.85-0.95.
DUPLICATE_SIMILARITY = 0.95
#: Neighbours at or above this similarity are shown to the judge's compare prompt. Measured on the 60
#: labelled pairs of tests/support/labels/compare-regression.jsonl with MiniLM-L6-v2
#: (benchmarks/bench_candidate_threshold.py): the related pairs (reworded duplicates, updates,
#: conflicts) score 0.590 to 0.966, the unrelated same-topic pairs -0.063 to 0.603. At 0.55 every
#: related pair reaches the judge and 2 of 18 unrelated pairs do (11 %); the former 0.60 missed an
#: update (0.590, "switched the bundler from webpack to Vite") and a conflict (0.593).
CANDIDATE_SIMILARITY = 0.55
#: Keepers of one run with different types are compared from this similarity on: the same rule kept
#: from two notes is often typed twice (a decision and the failure that taught it, a constraint and a
#: fact). Curators graded all 8 duplicates of two 20-session end-to-end runs as such cross-type
#: pairs, at MiniLM similarities 0.68-0.89 (issue 19); below 0.65 two different types rarely say
#: the same thing, and each pair costs compare-prompt length. Measured with capable-model compare
#: answers on the 20-session end-to-end runs (curator grades carried over by memory text):
#: duplicates judge-v5 5.9 % -> 2.2 % of written memories, judge-v2 5.8 % -> 0 %, judge-v1
#: 2.4 % -> 1.2 %, gold keepers active unchanged (cassettes/e2e-realnotes-*-capable).
CROSS_TYPE_SIMILARITY = 0.65
NEIGHBOURS = 5


def strength(evidence: str | None, confidence: str | None) -> tuple[int, int]:
    """Comparable strength of an entry: evidence rank (user-stated > observed > inferred), then
    confidence."""
    return EVIDENCE_RANK.get(evidence or "", 0), CONFIDENCE_RANK.get(confidence or "", 0)


#: A number, with its minus sign when it has one (``-5``; not the hyphen of ``gpt-4`` or ``1-5``).
_NUMBER = re.compile(r"(?<![\w.])-(?=\d)\d+(?:[.,]\d+)?|\d+(?:[.,]\d+)?")
#: A relation written as a symbol: ``x < 5`` and ``x > 5``, ``a != b`` and ``a == b`` differ.
_RELATION = re.compile(r"[<>!=]=|[<>\u2260\u2264\u2265]")
_RELATION_ASCII = str.maketrans({"\u2212": "-", "\u2260": "!=", "\u2264": "<=", "\u2265": ">="})
_NEGATION = re.compile(r"\b(?:not|never|no|don't|doesn't|isn't|aren't|without|instead|cannot|can't|won't)\b", re.IGNORECASE)


def same_numbers(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` carry the same numbers in the same order (the sequence of
    :data:`_NUMBER` matches, compared as written). Order matters: "forwards port 8080 to port 3000" and
    "forwards port 3000 to port 8080", "upgrade from 3.11 to 3.12" and "from 3.12 to 3.11", "timeout
    30 s, retry 60 s" and "timeout 60 s, retry 30 s" hold the same numbers but say different things,
    and MiniLM scores such swaps 0.99 alike. A true restatement with its numbers reordered is then
    left to the judge's compare prompt (or, with no judge, written as its own memory): a possible
    duplicate, never a lost fact."""
    a, b = a.translate(_RELATION_ASCII), b.translate(_RELATION_ASCII)
    return _NUMBER.findall(a) == _NUMBER.findall(b)


def same_relations(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` hold the same relations written as symbols (``< > <= >= != ==``, ``≠ ≤
    ≥`` read as ``!= <= >=``), in the same order: "retries < 5" and "retries > 5" embed alike but
    say opposite things."""
    a, b = a.translate(_RELATION_ASCII), b.translate(_RELATION_ASCII)
    return _RELATION.findall(a) == _RELATION.findall(b)


def swapped(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with words exchanged in place (case-folded words of equal count, and
    every word that differs maps to another that differs back: x <-> y): "run the tests before the
    linter" / "run the linter before the tests", "forwards staging traffic to production" /
    "production traffic to staging" (MiniLM: 0.991 and 0.996). A swap says a different thing as
    often as the same, so it is never folded without a judge. A rewording that moves a phrase ("in
    dev, the proxy ..." / "the proxy ... in dev") is no swap."""
    wa, wb = _UNITS.findall(fold(a)), _UNITS.findall(fold(b))
    if len(wa) != len(wb) or wa == wb:
        return False
    pairs = {(x, y) for x, y in zip(wa, wb) if x != y}
    forward = dict(pairs)
    return len(forward) == len(pairs) and all(forward.get(y) == x for x, y in pairs)


def same_memory(a: str, b: str, similarity: float, embed=None) -> bool:
    """Whether two statements are the same memory without asking a judge: equal after
    normalisation (one text_key: a number's sign and a relation are part of it), or at least
    DUPLICATE_SIMILARITY similar AND carrying the same numbers, signs included, in the same order
    (:func:`same_numbers`), the same relations (:func:`same_relations`), not two words exchanged (:func:`swapped`), and the same negations (embeddings score "timeout is 30 s" and "timeout is 60 s" at 0.97: a contradiction, not
    a re-confirmation) AND, given ``embed`` (texts -> unit vectors), every part where the two texts
    differ is itself at least DUPLICATE_SIMILARITY similar (:func:`differing_regions`, compared
    whole-text by words): two long notes that share a preamble and differ at the end ("... deployed
    with Helm charts" / "... with Kustomize overlays; Helm was removed") score 0.98 as wholes, since
    the shared text dominates a pooled vector, but their differing ends do not match."""
    if text_key(a) == text_key(b):
        return True
    a, b = canonical(a), canonical(b)  # fullwidth digits and negations read as such below
    if not (similarity >= DUPLICATE_SIMILARITY and same_numbers(a, b) and same_relations(a, b) and not swapped(a, b)
            and sorted(m.lower() for m in _NEGATION.findall(a)) == sorted(m.lower() for m in _NEGATION.findall(b))):
        return False
    if embed is None:
        return True
    regions = differing_regions(a, b)
    if not regions:
        return True
    vectors = embed([text for pair in regions for text in pair])
    return all(sum(x * y for x, y in zip(vectors[2 * k], vectors[2 * k + 1])) >= DUPLICATE_SIMILARITY
               for k in range(len(regions)))


#: Words, with each Han/kana character a word of its own (those scripts have no spaces).
_UNITS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
                    r"|[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
#: Words of shared text kept on each side of a differing part when it is compared.
REGION_CONTEXT = 8
#: More differing parts than this: the texts are a rewording, compared as wholes only.
MAX_REGIONS = 8


def differing_regions(a: str, b: str) -> list[tuple[str, str]]:
    """The parts where ``a`` and ``b`` differ (a word-level diff, difflib's SequenceMatcher), each
    with REGION_CONTEXT words of the shared text on either side, as ``(part of a, part of b)``
    pairs. [] when the texts are the same words, when a part would be a whole text (short texts,
    compared as wholes), or when they differ in more than MAX_REGIONS places (a rewording)."""
    wa, wb = _UNITS.findall(fold(a)), _UNITS.findall(fold(b))
    spans: list[list[int]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lo_a, hi_a, lo_b, hi_b = max(0, i1 - REGION_CONTEXT), i2 + REGION_CONTEXT, max(0, j1 - REGION_CONTEXT), j2 + REGION_CONTEXT
        if spans and (lo_a <= spans[-1][1] or lo_b <= spans[-1][3]):
            spans[-1][1], spans[-1][3] = hi_a, hi_b  # parts whose context overlaps: one part
        else:
            spans.append([lo_a, hi_a, lo_b, hi_b])
    if not spans or len(spans) > MAX_REGIONS:
        return []
    regions = []
    for lo_a, hi_a, lo_b, hi_b in spans:
        ra, rb = wa[lo_a:hi_a], wb[lo_b:hi_b]
        if len(ra) == len(wa) and len(rb) == len(wb):
            return []  # the part is the whole of both texts: their similarity already decided
        regions.append((" ".join(ra), " ".join(rb)))
    return regions


class _NoIndex:
    """Stands in for an index that does not exist yet: embeds, finds no neighbours."""

    def __init__(self, store):
        self.ef = store.embedder()

    def embed(self, texts):
        return self.ef.embed(texts) if texts else []

    def neighbours(self, *args, **kwargs):
        return []

    def get(self, ids):
        return {}

    def neighbours_many(self, embeddings, **kwargs):
        return [[] for _ in embeddings]


def run(plan, ctx):
    """Mark duplicates, re-confirmations, supersessions, rejections and disputes."""
    import numpy as np  # noqa: PLC0415 - heavy (numpy): loaded only when used

    durable = [c for c in plan.candidates if c.pending and c.tier == "durable"]
    if not durable:
        return plan
    longterm = _index(ctx)
    embed_keepers(plan, ctx, longterm)
    sims = np.asarray([c.embedding for c in durable], dtype=np.float32)
    sims = sims @ sims.T  # cosine: the embeddings are L2-normalised
    today = _dt.datetime.fromtimestamp(ctx.now, _dt.timezone.utc).date().isoformat()
    kept: list[int] = []
    to_compare = []
    nearby = _neighbours_by_type(longterm, durable, plan.scope)
    for i, c in enumerate(durable):
        twin = next((durable[k] for k in kept if durable[k].type == c.type
                     and same_memory(durable[k].statement, c.statement, float(sims[k, i]), longterm.embed)), None)
        if twin is not None:
            c.outcome, c.outcome_reason = "duplicate", "same as another keeper of this run"
            twin.note_ids = sorted(set(twin.note_ids) | set(c.note_ids))
            plan.decide("candidate.duplicate", note_ids=c.note_ids, reason=c.outcome_reason)
            continue
        hits = nearby[i]
        match = next((h for h in hits if same_memory(h["document"], c.statement, h["similarity"], longterm.embed)),
                     None)
        if match is not None and c.isolated:
            # judged from a note worded as an instruction to the judge: it may not vouch for anything
            c.outcome, c.duplicate_of = "duplicate", match["id"]
            c.outcome_reason = (f"same as {match['id']}; not counted as a confirmation (judged from a note worded"
                                f" as an instruction to the judge)")
            plan.decide("candidate.duplicate", note_ids=c.note_ids, reason=c.outcome_reason, memory_id=match["id"])
            continue
        if match is not None and _echo(plan, ctx, c, match):
            continue
        if match is not None:
            _reconfirm(plan, c, match, today)
            continue
        kept.append(i)
        to_compare.extend((c, h) for h in hits)
    # keepers of the same run against each other (below the duplicate threshold)
    for x, i in enumerate(kept):
        a = durable[i]
        for j in kept[x + 1:]:
            b, sim = durable[j], float(sims[i, j])
            if sim >= (CANDIDATE_SIMILARITY if a.type == b.type else CROSS_TYPE_SIMILARITY):
                to_compare.append((b, {"id": None, "document": a.statement, "candidate": a, "type": a.type,
                                       "metadata": {"evidence": a.evidence, "confidence": a.confidence,
                                                    "status": a.status, "session_id": plan.session_id},
                                       "similarity": sim}))
    if to_compare:
        _judge_pairs(plan, ctx, to_compare, today)
    return plan


def _neighbours_by_type(longterm, durable, scope) -> list[list[dict]]:
    """The existing neighbours (at least CANDIDATE_SIMILARITY similar, NEIGHBOURS at most) of each
    durable keeper, in keeper order: one batched index query per memory type
    (LongTerm.neighbours_many), not one filtered query per keeper (at 100,000 memories a filtered
    query costs about 350 ms; benchmarks/bench_scale.py)."""
    out: list[list[dict]] = [[] for _ in durable]
    by_type: dict[str, list[int]] = {}
    for i, c in enumerate(durable):
        by_type.setdefault(c.type, []).append(i)
    for type_, idx in by_type.items():
        found = longterm.neighbours_many([durable[i].embedding for i in idx], type_=type_, scope=scope,
                                         k=NEIGHBOURS, min_similarity=CANDIDATE_SIMILARITY)
        for i, hits in zip(idx, found):
            out[i] = hits
    return _with_same_ids(longterm, durable, scope, out)


def _with_same_ids(longterm, durable, scope, out: list[list[dict]]) -> list[list[dict]]:
    """``out`` with, first in each keeper's list, the live memory whose id the keeper's statement
    gives (consolidate.pipeline.stages.provenance.memory_id: of its consolidate.core.normal.text_key),
    when the vector neighbours missed it: the same statement in another Unicode form (fullwidth, NFD,
    with zero-width characters) is found whatever its embedding."""
    ids = [memory_id(scope, c.type, c.statement) for c in durable]
    found = longterm.get(ids)
    for i, mid in enumerate(ids):
        row = found.get(mid)
        if row is None or (row["metadata"] or {}).get("status", "active") not in LIVE_STATUSES:
            continue
        if all(h["id"] != mid for h in out[i]):
            out[i].insert(0, {"id": mid, "document": row["document"], "metadata": row["metadata"] or {},
                              "similarity": 1.0})
    return out


def _index(ctx):
    if ctx.dry_run and not ctx.store.has_longterm:
        return _NoIndex(ctx.store)  # a dry run creates no index to compare with
    return ctx.store.longterm()


def embed_keepers(plan, ctx, longterm=None) -> None:
    """Embed the durable keepers that have no embedding yet. The pipeline calls this before taking
    the store lock, so concurrent runs embed in parallel and hold the lock only to compare and write."""
    todo = [c for c in plan.candidates if c.pending and c.tier == "durable" and c.embedding is None]
    if todo:
        # the embedding function alone: no Chroma client is opened outside the lock
        vectors = (longterm.embed if longterm is not None else ctx.store.embedder().embed)([c.statement for c in todo])
        for c, vec in zip(todo, vectors):
            c.embedding = [float(x) for x in vec]


def _echo(plan, ctx, c, match) -> bool:
    """A keeper repeating a memory the store showed this session (consolidate.store.echo) is a duplicate
    that confirms nothing; True when it was one (decided here)."""

    why = echo_reason(plan, ctx, match)
    if why is None:
        return False
    c.outcome, c.duplicate_of, c.outcome_reason = "duplicate", match["id"], why
    plan.decide("candidate.duplicate", note_ids=c.note_ids, reason=why, memory_id=match["id"], echo=True)
    return True


def _reconfirm(plan, c, match, today) -> None:
    meta = match["metadata"]
    other_session = meta.get("session_id") != plan.session_id
    status = meta.get("status", "active")
    evidence = meta.get("evidence") or c.evidence
    origin = meta.get("origin")  # where the evidence comes from: it goes with it (consolidate/model/credit.py)
    confidence = step_confidence(meta.get("confidence", "low"), 1 if other_session else 0)
    if status == "quarantined" and other_session and not (c.provenance.get("external") or c.provenance.get("unfaithful")):
        # a second, consistent observation in another session promotes it (one made from external
        # content does not: the same page read again is no confirmation; stages/external.py; nor a
        # rewrite adding what its own notes do not say: stages/write_policy.faithfulness_hold)
        status = "active"
        if strength(c.evidence, None) > strength(evidence, None):
            evidence, origin = c.evidence, note_origin(plan, c) or origin
        elif evidence == "inferred":
            evidence = "observed-success"  # corroborated by an independent session
            if origin == credit.ASSISTANT:
                origin = credit.AGENT_JUDGED  # credited observed, as an agent's note judged
        confidence = max(confidence, "medium", key=CONFIDENCE_RANK.__getitem__)
    c.outcome, c.duplicate_of = "duplicate", match["id"]
    c.outcome_reason = f"re-confirms {match['id']} (similarity {match['similarity']:.3f})"

    # seen again on the date the keeper was observed (today; an imported entry: its own date), never
    # moving an entry's date back
    seen = candidate_dates(plan, c)[0]
    last = meta.get("last_confirmed") if str(meta.get("last_confirmed") or "")[:4].isdigit() else ""
    plan.reconfirmations.append(Reconfirmation(
        memory_id=match["id"], confidence=confidence, last_confirmed=max(seen, last or seen), status=status,
        session_id=plan.session_id, note_ids=c.note_ids))
    if evidence != meta.get("evidence"):
        plan.updates.append(MemoryUpdate(match["id"], "update",
                                         {"evidence": evidence, **({"origin": origin} if origin != meta.get("origin") else {})},
                                         event="memory.promoted", reason="corroborated in another session"))
    if meta.get("status") == "quarantined" and status == "active":
        _confirm_update(plan, match)
    plan.decide("memory.reconfirmed", note_ids=c.note_ids, reason=c.outcome_reason, memory_id=match["id"],
                confidence=confidence, status=status)


def _held_back(plan, c, h, judge) -> bool:
    """A quarantined or instruction-derived candidate never overrules an active entry (nor an
    active keeper of this run overruled by one): the held-back side is rejected instead
    (consolidate/pipeline/stages/credibility.py). True when it decided the pair."""

    other = h.get("candidate")
    why = may_overrule(c, other.status if other is not None else h["metadata"].get("status"))
    loser, target = c, h["id"] or "another keeper of this run"
    if why is None and other is not None:
        why = may_overrule(other, c.status)
        loser, target = other, "another keeper of this run"
    if why is None:
        return False
    loser.outcome = "rejected"
    loser.outcome_reason = f"contradicts {target}, which it may not overrule: {why}"
    plan.decide("candidate.rejected", note_ids=loser.note_ids, reason=loser.outcome_reason,
                memory_id=h["id"] if loser is c else None, judge=judge)
    return True


def _standings(plan, c, h) -> tuple[tuple, tuple]:
    """(new, old) standings for :func:`consolidate.pipeline.stages.credibility.prevails`: each side's
    strength (a judge's evidence claim capped by the note's origin), the date it was last
    observed (a keeper: its notes' date, an imported entry's own, else today; an entry: its
    ``last_confirmed``) and whether its evidence was recorded rather than a judge's claim."""

    other = h.get("candidate")
    if other is not None:
        old = (credited_strength(plan, other), candidate_dates(plan, other)[0], recorded(plan, other))
    else:
        old = (entry_strength(h["metadata"]), h["metadata"].get("last_confirmed"), entry_recorded(h["metadata"]))
    return (credited_strength(plan, c), candidate_dates(plan, c)[0], recorded(plan, c)), old


def _why(new, old, verdict: str) -> str:
    """Why ``verdict`` (``new``/``old``) won, in words: stronger evidence, or the newer observation."""
    (winner, loser) = (new, old) if verdict == "new" else (old, new)
    if winner[0][0] != loser[0][0]:
        return "stronger evidence"
    if winner[1] and loser[1] and str(winner[1])[:10] != str(loser[1])[:10]:
        return f"a newer observation ({str(winner[1])[:10]} after {str(loser[1])[:10]}) of equal evidence"
    return "higher confidence"


def _judge_pairs(plan, ctx, to_compare, today) -> None:

    pairs = [Pair(key=str(i), new=c.statement, old=h["document"],
                  type=c.type if h.get("type", c.type) == c.type else f"{c.type} / {h['type']}")
             for i, (c, h) in enumerate(to_compare)]
    answered, events = ctx.chain().compare(pairs, JudgeContext(core=ctx.store.core_rules(), project=plan.scope),
                                           plan.deadline)
    for e in events:
        plan.decide(e.pop("event"), **e)
    for i, (c, h) in enumerate(to_compare):
        if not c.pending:
            continue
        rel, judge = answered.get(str(i), (None, None))
        if rel is None:
            if h["id"]:
                plan.decide("candidate.related", note_ids=c.note_ids, memory_id=h["id"],
                            reason="close to an existing memory; no judge compared them, nothing guessed")
            continue
        if rel == "unrelated":
            continue
        if rel == "updates":
            _update(plan, c, h, judge)
            continue
        other = h.get("candidate")
        if rel == "duplicate":
            if other is not None:
                c.outcome, c.outcome_reason = "duplicate", f"same as another keeper of this run ({judge})"
                other.note_ids = sorted(set(other.note_ids) | set(c.note_ids))
                plan.decide("candidate.duplicate", note_ids=c.note_ids, reason=c.outcome_reason)
            elif not _echo(plan, ctx, c, h):
                _reconfirm(plan, c, h, today)
            continue
        _contradiction(plan, c, h, judge)


def _contradiction(plan, c, h, judge) -> None:
    meta, other = h["metadata"], h.get("candidate")
    old_id = h["id"] or "(this run)"
    if _held_back(plan, c, h, judge):
        return

    new_s, old_s = _standings(plan, c, h)
    verdict = prevails(new_s, old_s)
    if meta.get("status") == "quarantined" and other is None:
        # a contradicting observation deletes a quarantined entry, for good
        plan.updates.append(MemoryUpdate(h["id"], "tombstone", {"status": "deleted"}, event="memory.tombstoned",
                                         reason=f"quarantined entry contradicted by a new observation ({judge})"))
        plan.decide("memory.contradicted", note_ids=c.note_ids, memory_id=h["id"], judge=judge,
                    reason="contradicts a quarantined entry: the entry is deleted")
        return
    if verdict == "new":
        why = _why(new_s, old_s, verdict)
        if other is not None:
            other.outcome, other.outcome_reason = "rejected", f"superseded in the same run by {why} ({judge})"
            plan.decide("candidate.rejected", note_ids=other.note_ids, reason=other.outcome_reason)
            return
        plan.updates.append(MemoryUpdate(h["id"], "archive", _superseded(meta), event="memory.superseded",
                                         reason=f"superseded by {why} ({c.evidence}, {c.confidence}; {judge})"))
        c.provenance["supersedes"] = h["id"]
        plan.decide("memory.superseded", note_ids=c.note_ids, memory_id=h["id"], judge=judge,
                    reason=f"new evidence {c.evidence}/{c.confidence} beats {meta.get('evidence')}/{meta.get('confidence')}"
                           f" ({why})")
    elif verdict == "old":
        c.outcome = "rejected"
        c.outcome_reason = (f"contradicts {old_id} which has {_why(new_s, old_s, verdict)}"
                            f" ({meta.get('evidence')}, {meta.get('confidence')})")
        plan.decide("candidate.rejected", note_ids=c.note_ids, reason=c.outcome_reason, memory_id=h["id"], judge=judge)
    else:
        c.status = "disputed"
        if other is not None:
            other.status = "disputed"
            c.provenance["disputes"] = "run"
        else:
            c.provenance["disputes"] = h["id"]
            plan.updates.append(MemoryUpdate(h["id"], "update", {"status": "disputed"}, event="memory.disputed",
                                             reason=f"contradicted by equally strong evidence ({judge})"))
        plan.decide("memory.disputed", note_ids=c.note_ids, memory_id=h["id"], judge=judge,
                    reason="equal evidence, incompatible statements: both disputed, listed by `consolidate disputes`")


def _update(plan, c, h, judge) -> None:
    """The judge says ``c`` replaces the statement of ``h`` (an existing entry, or another keeper of
    this run when ``h["candidate"]`` is set). Equal or stronger evidence kind: the old one is
    superseded (an existing entry archived with ``superseded_by``; an earlier keeper of the run not
    written). Weaker, or ``c`` already quarantined (by the write policy): ``c`` is quarantined, linked
    to the old entry, until another session confirms it. The evidence kinds compared are those
    credited by consolidate/pipeline/stages/credibility.py; a candidate judged from a note worded as an
    instruction to the judge never updates anything (it is rejected, as for a contradiction)."""
    meta, other = h["metadata"], h.get("candidate")
    old_id = h["id"] or "(this run)"
    if c.isolated and _held_back(plan, c, h, judge):
        return

    new_s, old_s = _standings(plan, c, h)
    (new_rank, _), (old_rank, _) = new_s[0], old_s[0]
    if new_rank == old_rank and prevails(new_s, old_s, by_confidence=False) == "old":
        # an older observation never replaces a newer one of equal evidence (an old AGENTS.md entry)
        c.outcome = "rejected"
        c.outcome_reason = (f"would replace {old_id}, which is {_why(new_s, old_s, 'old')}: an older statement"
                            " never supersedes a newer one without stronger evidence")
        plan.decide("candidate.rejected", note_ids=c.note_ids, reason=c.outcome_reason, memory_id=h["id"], judge=judge,
                    relation="updates")
        return
    if new_rank < old_rank or c.status == "quarantined":
        c.status = "quarantined"
        if h["id"]:
            c.provenance["updates"] = h["id"]
        plan.decide("candidate.quarantined", note_ids=c.note_ids, memory_id=h["id"], judge=judge,
                    reason=f"updates {old_id}"
                           + (f" with weaker evidence ({c.evidence} < {meta.get('evidence')})" if new_rank < old_rank
                              else " but is quarantined itself")
                           + ": quarantined until another session confirms it")
        return
    if other is not None:
        if not other.pending:
            return
        other.outcome = "rejected"
        other.outcome_reason = f"replaced in the same run by a later statement (update; {judge})"
        plan.decide("candidate.rejected", note_ids=other.note_ids, reason=other.outcome_reason)
        return
    plan.updates.append(MemoryUpdate(h["id"], "archive", _superseded(meta), event="memory.superseded",
                                     reason=f"updated by a newer statement ({c.evidence}; {judge})"))
    c.provenance["supersedes"] = h["id"]
    plan.decide("memory.superseded", note_ids=c.note_ids, memory_id=h["id"], judge=judge, relation="updates",
                reason=f"the new statement replaces it (update); evidence {c.evidence} >= {meta.get('evidence')}")


def _confirm_update(plan, match) -> None:
    """A quarantined update confirmed in another session becomes active: the entry it updates
    (``provenance.updates``) is superseded now."""
    try:
        prov = json.loads(match["metadata"].get("provenance") or "{}")
    except (TypeError, ValueError):
        return
    old = prov.get("updates") if isinstance(prov, dict) else None
    if not old or any(u.memory_id == old for u in plan.updates):
        return
    plan.updates.append(MemoryUpdate(old, "archive", {"status": "superseded", "superseded_by": match["id"]},
                                     event="memory.superseded", edges=[[match["id"], "supersedes"]],
                                     reason=f"the update {match['id']} was confirmed in another session"))
    plan.decide("memory.superseded", memory_id=old, relation="updates",
                reason=f"the update {match['id']} was confirmed in another session")


def _superseded(meta: dict) -> dict:
    """The changes of a memory taken out as superseded: its status, and its start (``_valid_from``,
    read by the provenance stage so that its ``valid_to`` never falls before it; never stored)."""

    return {"status": "superseded", "_valid_from": validity(meta)[0]}
