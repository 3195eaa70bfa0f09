"""Groups of related active memories for the curation pass (``consolidate curate``).

Two memories are linked when the contradiction check would compare them, or when they name the same
thing:

- **embedding neighbours**: the nearest active memories of the same scope (LongTerm.neighbours_many,
  one batched query for the whole store, as the contradiction check asks), linked from
  ``CANDIDATE_SIMILARITY`` on for the same type and from ``CROSS_TYPE_SIMILARITY`` on across types
  (consolidate/pipeline/stages/contradiction.py: the same thresholds);
- **shared entities**: a file, package or tool both statements name (consolidate.store.graph
  ``extract_entities``: the entities the graph links memories by, which recall follows), when the
  entity is named by at most ``2 * max_group`` memories (a name every memory mentions relates nothing);
- **shared code anchors**: a project file both are anchored to (consolidate.store.anchors).

From prompt ``curate-v4`` on (:data:`WIDE_FROM`) the links are **wide**: a memory's type is a label the
judge gave when it wrote it, and the same point is often typed twice (a decision and a fact, a fact
and a failure), so every type pair links from ``CANDIDATE_SIMILARITY`` on, and every memory is also
linked to its nearest active neighbour from ``NEAREST_SIMILARITY`` on (a looser link costs only
prompt length: the judge keeps what is unrelated). Measured on the tuning stores of the dev-label
split (benchmarks/bench_curate.py, one curator's grades): every graded repeat or contradiction the
pass left active had been grouped apart, at MiniLM similarities 0.42-0.65, mostly across types.

Connected memories form a group; a group larger than ``max_group`` is cut into groups of at most
``max_group``, each grown from its most linked memory by the strongest links. Memories linked to
nothing are pooled into groups of ``max_group`` too (still judged for junk; a merge between them is
as valid as any, since the judge sees them side by side).

From prompt ``curate-v5`` on (:data:`LARGE_FROM`) a group holds up to ``LARGE_GROUP`` memories and the
groups are packed together up to that size, so a project store of up to that size is read whole, in one call, as the background consolidators of the
field read theirs (Claude Code's memory "dream", Letta's sleep-time agents: the whole memory at once).
Measured on the tuning stores of the dev-label split (benchmarks/bench_curate.py, two curators'
grades of judge-v11's stores): of the repeats and the contradiction curate-v4 left active, every one
had been cut into different groups of 8; each pair's similarity ranked 2nd to 10th among the
memory's neighbours, so no looser link threshold or nearest-neighbour bridge brings the pair together.
"""

from __future__ import annotations

import json
from typing import Any

from consolidate.pipeline.stages.contradiction import CANDIDATE_SIMILARITY, CROSS_TYPE_SIMILARITY, NEIGHBOURS
from consolidate.store.graph import extract_entities

#: Most memories shown to the judge in one group (one call each), before curate-v5.
MAX_GROUP = 8
#: The first curation prompt version whose groups hold up to LARGE_GROUP memories (module docstring).
LARGE_FROM = "curate-v5"
#: Most memories in one group from LARGE_FROM on: a small project's store in one call.
LARGE_GROUP = 40
#: The first curation prompt version whose groups use the wide links (see the module docstring); the
#: earlier versions keep the groups their recorded answers were made for.
WIDE_FROM = "curate-v4"
#: Wide links: each memory's nearest active neighbour is linked from this similarity on.
NEAREST_SIMILARITY = 0.40


def _number(version: str) -> int:
    """N of ``curate-vN`` (0 for anything else)."""
    tail = version.rsplit("-v", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def wide_links(version: str) -> bool:
    """Whether the groups of curation prompt ``version`` (``curate-vN``) use the wide links."""
    return _number(version) >= _number(WIDE_FROM)


def large_groups(version: str) -> bool:
    """Whether curation prompt ``version`` reads packed groups of up to ``LARGE_GROUP`` (module docstring)."""
    return _number(version) >= _number(LARGE_FROM)


def default_max_group(version: str) -> int:
    """Most memories per group for curation prompt ``version`` when the caller names none:
    ``LARGE_GROUP`` from ``LARGE_FROM`` on, else ``MAX_GROUP`` (the groups earlier answers were made for)."""
    return LARGE_GROUP if large_groups(version) else MAX_GROUP
#: Link weight of a shared entity and of a shared anchored file (a similarity is its own weight).
ENTITY_WEIGHT, ANCHOR_WEIGHT = 0.6, 0.7


def _names(row: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(entity names, anchored paths) of one memory row."""
    meta = row.get("metadata") or {}
    try:
        fields = json.loads(meta.get("fields") or "{}")
    except ValueError:
        fields = {}
    text = " ".join([row.get("document") or "", *(str(v) for v in (fields.values() if isinstance(fields, dict) else []))])
    entities = {name.lower() for name, _kind in extract_entities(text)}
    try:
        anchors = json.loads(meta.get("anchors") or "[]")
    except ValueError:
        anchors = []
    paths = {a["path"] for a in anchors if isinstance(a, dict) and isinstance(a.get("path"), str)} \
        if isinstance(anchors, list) else set()
    return entities, paths


def links(longterm, rows: list[dict[str, Any]], scope: str | None, max_group: int = MAX_GROUP, wide: bool = False
          ) -> dict[str, dict[str, float]]:
    """``{memory id: {linked id: weight}}`` over ``rows`` (active memories with ``id``, ``document``,
    ``metadata``; see the module docstring; ``wide``: the wide links). Reads the index (embeddings, one
    neighbour query)."""
    ids = [r["id"] for r in rows]
    known = set(ids)
    adj: dict[str, dict[str, float]] = {i: {} for i in ids}

    def link(a: str, b: str, w: float) -> None:
        if a != b and a in known and b in known:
            adj[a][b] = adj[b][a] = max(w, adj[a].get(b, 0.0))

    page = getattr(longterm, "PAGE", 5000)  # a read of more ids than Chroma's SQL bound fails: in pages
    with_vectors: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ids), page):
        with_vectors.update(longterm.get_with_embeddings(ids[start:start + page]))
    have = [i for i in ids if i in with_vectors]
    type_of = {r["id"]: (r["metadata"] or {}).get("type") for r in rows}
    found: list[list[dict[str, Any]]] = []
    for start in range(0, len(have), page):
        found += longterm.neighbours_many([with_vectors[i]["embedding"] for i in have[start:start + page]],
                                          scope=scope, k=NEIGHBOURS + 1, statuses=("active",),
                                          min_similarity=NEAREST_SIMILARITY if wide else CANDIDATE_SIMILARITY)
    for i, hits in zip(have, found):
        others = [h for h in hits if h["id"] != i and h["id"] in known]
        for h in others:
            floor = CANDIDATE_SIMILARITY if wide or type_of.get(h["id"]) == type_of[i] else CROSS_TYPE_SIMILARITY
            if h["similarity"] >= floor:
                link(i, h["id"], float(h["similarity"]))
        if wide and others:
            nearest = max(others, key=lambda h: (h["similarity"], h["id"]))
            link(i, nearest["id"], float(nearest["similarity"]))
    named: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        entities, paths = _names(r)
        for e in entities:
            named.setdefault(("entity", e), []).append(r["id"])
        for p in paths:
            named.setdefault(("path", p), []).append(r["id"])
    for (kind, _name), members in named.items():
        if 1 < len(members) <= 2 * max_group:
            for x, a in enumerate(members):
                for b in members[x + 1:]:
                    link(a, b, ANCHOR_WEIGHT if kind == "path" else ENTITY_WEIGHT)
    return adj


def _components(adj: dict[str, dict[str, float]]) -> list[list[str]]:
    """The connected parts of ``adj``, each sorted, in order of their first id."""
    seen: set[str] = set()
    out = []
    for start in sorted(adj):
        if start in seen:
            continue
        part, todo = [], [start]
        seen.add(start)
        while todo:
            node = todo.pop()
            part.append(node)
            for other in adj[node]:
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        out.append(sorted(part))
    return out


def _cut(part: list[str], adj: dict[str, dict[str, float]], max_group: int) -> list[list[str]]:
    """``part`` cut into groups of at most ``max_group``, each grown from the most linked memory
    left by the strongest total link to the group (ties by id)."""
    left = set(part)
    out = []
    while left:
        seed = max(sorted(left), key=lambda i: sum(w for o, w in adj[i].items() if o in left))
        group = [seed]
        left.discard(seed)
        while len(group) < max_group:
            pull = {o: sum(adj[o].get(g, 0.0) for g in group) for o in left}
            best = max(sorted(pull), key=lambda o: pull[o], default=None)
            if best is None or pull[best] <= 0:
                break
            group.append(best)
            left.discard(best)
        out.append(group)
    return out


def _packed(groups: list[list[str]], max_group: int) -> list[list[str]]:
    """``groups`` packed into as few groups of at most ``max_group`` as first fit by decreasing size
    finds (ties in order); each packed group lists its parts in turn."""
    bins: list[list[str]] = []
    for g in sorted(groups, key=len, reverse=True):
        into = next((b for b in bins if len(b) + len(g) <= max_group), None)
        if into is None:
            bins.append(list(g))
        else:
            into.extend(g)
    return bins


def related_groups(longterm, rows: list[dict[str, Any]], scope: str | None, max_group: int = MAX_GROUP,
                   wide: bool = False, pack: bool = False) -> list[list[str]]:
    """The memory ids of ``rows`` in groups of related ones, each of 1..``max_group`` ids (see the
    module docstring; ``wide``: the wide links; ``pack``: groups packed together up to ``max_group``,
    so a store of up to ``max_group`` memories is one group); every id is in exactly one group.
    Deterministic for one store."""
    max_group = max(2, int(max_group))
    adj = links(longterm, rows, scope, max_group, wide)
    groups: list[list[str]] = []
    alone: list[str] = []
    for part in _components(adj):
        for g in (_cut(part, adj, max_group) if len(part) > max_group else [part]):
            if len(g) == 1:
                alone.extend(g)
            else:
                groups.append(g)
    groups += [alone[i:i + max_group] for i in range(0, len(alone), max_group)]
    return _packed(groups, max_group) if pack else groups
