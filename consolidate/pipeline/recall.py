"""One recall for the CLI (``consolidate recall``), the MCP ``recall`` tool and Python
(``consolidate.recall(store, query, ...)``).

:func:`recall` searches the long-term store and applies the same options everywhere:

- ``k``: how many memories at most (1 to 1000; the MCP tool allows up to 50);
- ``min_similarity``: the floor (cosine similarity, default 0.2, measured with MiniLM: unrelated
  memories score around 0, related ones 0.3 and up); memories below it are left out and counted;
- ``include_quarantined``: also return quarantined entries (default: active and disputed ones, a disputed entry shown with its ``[disputed]`` suffix).
- ``as_of``: a date (``2026-07-14``, ``2026-07``, ``yesterday``, ...; or a ``datetime.date``): the
  memories that were valid on that day (consolidate/model/validity.py), those superseded since included,
  each with its ``status`` (``superseded`` ones shown ``[superseded YYYY-MM-DD]``).

The search is **hybrid**: the nearest memories by embedding (cosine) and the best lexical matches
(SQLite FTS5 BM25 over words and identifiers, consolidate/store/index/lexical.py) are fused by reciprocal rank
fusion (:func:`fuse`). An embedding alone misses exact identifiers (``v1.9``, ``--no-verify``,
``PROJ-1234``, ``E0308``: issue 29); a lexical match is returned even below the floor when it holds
an identifier of the query or every content word of it (``match`` says ``lexical``). Each hit says
how it was found in ``match``: ``vector``, ``lexical``, ``both`` or ``graph`` (below).

The graph adds to the nearest memories: when the query names an entity (a package, module,
service) that a relation edge touches (``analytics depends_on ledgerkit``, consolidate/store/relations.py),
the memories stating those relations are added after the nearest ones, at most GRAPH_EXTRA of them,
ordered by their own similarity to the query, with ``match`` ``graph`` and ``via`` (``"graph: analytics depends_on
ledgerkit"``); they need not reach the floor (the named entity links them), they must be in the
index with a recalled status (a forgotten, superseded or undone memory is never added). One hop:
``consolidate graph ENTITY --depth N`` follows more.

When the best match of the query is quarantined (left out by default) the result says so in
``note``, so an agent knows a low-confidence observation exists and can ask for it. A store with no
long-term tier yet is not created by a recall: the result is empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.store.layout import GRAPH
from consolidate.model.validity import AS_OF_ARCHIVED, parse_day, valid_on
from consolidate.store import archive
from consolidate.store.views import shown as agent_view
import datetime as _dt
import sqlite3
from consolidate.store.graph import relation_edges
from consolidate.store.index import lexical
from consolidate.store.index.longterm import RECALLED
from consolidate.store.relations import match_key

#: Default similarity floor (cosine). Unrelated memories score near 0 with MiniLM (-0.05 was seen
#: for an unrelated memory over MCP); 0.2 keeps the related ones.
MIN_SIMILARITY = 0.2
MAX_K = 1000
#: The most memories the graph adds to a recall (see the module docstring).
GRAPH_EXTRA = 3


@dataclass
class RecallResult:
    """What :func:`recall` found: ``memories`` (dicts with ``id``, ``document``, ``metadata``,
    ``similarity``), best first; ``below_floor`` (how many nearest ones were under the floor);
    ``quarantined_best`` (the quarantined entry that matched best, when it beat every returned one
    and the caller did not ask for quarantined entries); ``note`` (one line saying so, or '')."""

    query: str
    memories: list[dict[str, Any]] = field(default_factory=list)
    below_floor: int = 0
    quarantined_best: dict[str, Any] | None = None
    store_exists: bool = True
    held_back: list[str] = field(default_factory=list)

    @property
    def note(self) -> str:
        if self.quarantined_best is None:
            return ""
        q = self.quarantined_best
        return (f"the best match is quarantined (a single low-confidence observation, left out of recall):"
                f" {agent_view.line(q['document'], q['metadata'])} (similarity {q['similarity']:.2f});"
                " ask with include_quarantined (CLI: --all) to see it")

    @property
    def held_line(self) -> str:
        """The one line saying how many memories the context guard held back ('' for none)."""
        return agent_view.held_back_line(len(self.held_back), self.held_back)


#: The longest recall query (characters): about 1,000 tokens, four times what the MiniLM embedding
#: reads at once; a 600 KB query blocked the MCP server for 90 s (new-user review, 2026-11-30).
MAX_QUERY_CHARS = 4000


def check_options(query: Any, k: Any, min_similarity: Any, max_k: int = MAX_K) -> tuple[str, int, float]:
    """Validate recall options; BadInput with a one-line message for an empty query, a k out of
    1..max_k or a floor outside -1..1."""
    if not isinstance(query, str) or not query.strip():
        raise BadInput("empty query: say what you want to recall")
    if len(query) > MAX_QUERY_CHARS:
        raise BadInput(f"query too long ({len(query):,} characters): at most {MAX_QUERY_CHARS:,}; recall takes a"
                       " question or a few key words, not a document")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max_k:
        raise BadInput(f"bad k {k!r}: use 1 to {max_k}")
    try:
        floor = float(min_similarity)
    except (TypeError, ValueError):
        raise BadInput(f"bad min_similarity {min_similarity!r}: a number from -1 to 1") from None
    if not -1.0 <= floor <= 1.0:
        raise BadInput(f"bad min_similarity {min_similarity!r}: a number from -1 to 1")
    return query, k, floor


def as_of_day(as_of: Any) -> str | None:
    """The ISO day of an ``as_of`` option (None: now). Raises BadInput for one that is not a date."""
    if as_of is None:
        return None
    if isinstance(as_of, _dt.datetime):
        return as_of.date().isoformat()
    if isinstance(as_of, _dt.date):
        return as_of.isoformat()
    if not isinstance(as_of, str):
        raise BadInput(f"bad as_of {as_of!r}: a date such as 2026-07-14")
    return parse_day(as_of)


def recall(store, query: str, *, k: int = 5, min_similarity: float = MIN_SIMILARITY,
           include_quarantined: bool = False, max_k: int = MAX_K, shown_to: str | None = None,
           record: bool = True, as_of: Any = None) -> RecallResult:
    """Search ``store`` for ``query`` (see the module docstring). Raises BadInput for bad options
    (an ``as_of`` that is not a date included).

    The texts returned are recorded as shown (to the session ``shown_to``, or to none in particular:
    consolidate.store.echo), so that the same text coming back as a note is never counted as a new
    observation; ``record=False`` skips that."""
    query, k, floor = check_options(query, k, min_similarity, max_k)
    day = as_of_day(as_of)
    result = RecallResult(query=query, store_exists=store.exists)
    if not store.exists or not store.has_longterm:  # nothing consolidated yet: create nothing
        return result
    if day is not None:
        hits, result.below_floor = recall_as_of(store, query, day, k=k, floor=floor,
                                                include_quarantined=include_quarantined)
        _show(store, result, hits, agent_view.as_of_statuses(include_quarantined))
        return result  # a view of the past: nothing is recorded as shown to a session
    lt = store.longterm()

    statuses = (*RECALLED, "quarantined") if include_quarantined else RECALLED
    vector = lt.embed([query])[0]  # embedded once for both searches below
    depth = max(k, FUSION_DEPTH)
    near = lt.search(vector, k=depth, statuses=statuses)
    lexical = lexical_matches(store, lt, query, depth, statuses)
    fused = fuse(near, lexical, floor)
    have = {h["id"] for h in near}
    extra = [m.id for m in fused[:k] if m.id not in have]
    if extra:  # lexical-only hits: their records and their cosine to the query
        got = lt.get_with_embeddings(extra)
        near_of = {i: {"id": i, "document": r["document"], "metadata": r["metadata"],
                       "similarity": sum(a * b for a, b in zip(vector, r["embedding"]))} for i, r in got.items()}
    else:
        near_of = {}
    near_of.update({h["id"]: h for h in near})
    found = [{**near_of[m.id], "match": m.match} for m in fused if m.id in near_of][:k]
    returned = {h["id"] for h in found}
    result.below_floor = sum(1 for h in near[:k] if h["similarity"] < floor and h["id"] not in returned)
    if not include_quarantined:
        best_q = lt.search(vector, k=1, statuses=("quarantined",), min_similarity=floor)
        if best_q and best_q[0]["similarity"] >= floor and (
                not found or best_q[0]["similarity"] > max(h["similarity"] for h in found)):
            q = agent_view.view(best_q, "python-api", drift=agent_view.drift_of(store, [best_q[0]["id"]]),
                                forgotten=agent_view.forgotten_ids(store), statuses=("quarantined",))
            result.quarantined_best = q.rows[0] if q.rows else None  # a held back one is not named
    found += _graph_linked(store, lt, query, vector, found, statuses)
    _show(store, result, found, statuses)
    if record and result.memories:
        agent_view.record_safely(store, shown_to, [h["document"] for h in result.memories])
    return result


def _show(store, result: RecallResult, hits: list[dict[str, Any]], statuses: tuple[str, ...]) -> None:
    """``hits`` as the agent view shows them (consolidate/store/views/shown.py): tombstones and
    statuses, drift marks (code anchors: a drifted memory says so), evidence as credited, the context
    guard (``result.held_back``: the ids held back)."""
    got = agent_view.view(hits, "python-api", drift=agent_view.drift_of(store, [h["id"] for h in hits]),
                          forgotten=agent_view.forgotten_ids(store), statuses=statuses)
    result.memories, result.held_back = got.rows, got.held


#: How deep each ranking is read before fusion (at least ``k``).
FUSION_DEPTH = 20
#: The reciprocal rank fusion constant (Cormack, Clarke and Buettcher 2009).
RRF_K = 60


@dataclass
class Fused:
    """One fused hit: ``id``, ``score`` (the RRF sum), ``match`` (vector, lexical or both)."""

    id: str
    score: float
    match: str
    similarity: float


def fuse(near: list[dict[str, Any]], lexical: list, floor: float, rrf_k: int = RRF_K) -> list[Fused]:
    """Reciprocal rank fusion of the vector ranking ``near`` (hits with ``id`` and ``similarity``,
    nearest first) and the lexical ranking ``lexical`` (consolidate.store.index.lexical.Match, best first):
    each memory scores the sum over the rankings holding it of ``1 / (rrf_k + rank)``, rank from 1
    (G. V. Cormack, C. L. A. Clarke, S. Buettcher, "Reciprocal rank fusion outperforms Condorcet and
    individual rank learning methods", SIGIR 2009; k = 60 as there). Kept: the vector hits at or
    above ``floor``, and the lexical hits that are admitted (an identifier of the query or all its
    content words, :attr:`consolidate.store.index.lexical.Match.admitted`) or above the floor. Best first; ties
    by similarity."""
    score: dict[str, float] = {}
    sim: dict[str, float] = {}
    how: dict[str, set[str]] = {}
    keep: set[str] = set()
    for rank, h in enumerate(near, 1):
        score[h["id"]] = score.get(h["id"], 0.0) + 1.0 / (rrf_k + rank)
        sim[h["id"]] = float(h["similarity"])
        if h["similarity"] >= floor:
            keep.add(h["id"])
            how.setdefault(h["id"], set()).add("vector")
    for m in lexical:
        score[m.id] = score.get(m.id, 0.0) + 1.0 / (rrf_k + m.rank)
        if m.admitted or m.id in keep:
            keep.add(m.id)
            how.setdefault(m.id, set()).add("lexical")
    out = [Fused(i, score[i], "both" if len(how[i]) == 2 else next(iter(how[i])), sim.get(i, -1.0))
           for i in keep]
    out.sort(key=lambda f: (-f.score, -f.similarity, f.id))
    return out


def lexical_matches(store, lt, query: str, limit: int, statuses: tuple[str, ...]) -> list:
    """The lexical ranking of ``query`` (consolidate.store.index.lexical), the index brought in step first; []
    when the index cannot be read (the vector ranking alone answers)."""
    q = lexical.parse_query(query)
    if not q.terms:
        return []
    try:
        idx = lexical.ensure(store, lt)
    except (sqlite3.Error, OSError):
        return []
    try:
        return idx.search(q, limit=limit, statuses=statuses)
    except sqlite3.Error:
        return []
    finally:
        if not idx.shared:
            idx.close()

def _named_in(key: str, text: str) -> bool:
    """Whether the entity name ``key`` occurs in ``text`` (both consolidate.store.relations.match_key
    forms): a name beginning or ending with an ASCII letter or digit must not run on into one
    (``ledger`` is not named by ``ledgerkit``); any other script matches as a substring (Han or kana
    text has no spaces between words)."""
    if len(key) < 2:
        return False
    start = text.find(key)
    while start >= 0:
        end = start + len(key)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not ((key[0].isascii() and key[0].isalnum() and before.isascii() and before.isalnum())
                or (key[-1].isascii() and key[-1].isalnum() and after.isascii() and after.isalnum())):
            return True
        start = text.find(key, start + 1)
    return False


def _graph_linked(store, lt, query: str, vector, hits: list[dict], statuses) -> list[dict]:
    """The memories the graph links to an entity ``query`` names (see the module docstring)."""
    edges = relation_edges(store.sub(GRAPH))
    if not edges:
        return []
    q = match_key(query)
    have = {h["id"] for h in hits}
    via: dict[str, str] = {}
    for src, kind, dst, mid in edges:
        if mid not in have and mid not in via and (_named_in(match_key(src), q) or _named_in(match_key(dst), q)):
            via[mid] = f"graph: {src} {kind} {dst}"
    if not via:
        return []
    rows = {i: r for i, r in lt.get(sorted(via)).items() if (r["metadata"] or {}).get("status") in statuses}
    if not rows:
        return []
    ids = sorted(rows)
    got = lt.get_with_embeddings(ids)  # embeddings are L2-normalised: the dot product is the cosine
    sims = [sum(a * b for a, b in zip(vector, got[i]["embedding"])) if i in got else -1.0 for i in ids]
    ranked = sorted(zip(ids, sims), key=lambda t: (-float(t[1]), t[0]))[:GRAPH_EXTRA]
    return [{"id": i, "document": rows[i]["document"], "metadata": rows[i]["metadata"], "similarity": float(sim),
             "match": "graph", "via": via[i]} for i, sim in ranked]


def recall_as_of(store, query: str, day: str, *, k: int, floor: float, include_quarantined: bool = False
          ) -> tuple[list[dict[str, Any]], int]:
    """The memories valid on ``day`` nearest ``query``: ``(hits, below_floor)``, hits best first
    as recall returns them (``id``, ``document``, ``metadata``, ``similarity``), archived ones with
    ``metadata["archived_at"]``. Live entries come from the recall index, superseded and expired
    ones from the archive (embedded here: an as-of recall reads the whole archive)."""
    lt = store.longterm()
    statuses = (*RECALLED, "quarantined") if include_quarantined else RECALLED
    rows = [r for r in lt.with_status(*statuses) if valid_on(r["metadata"] or {}, day)]
    old = [r for r in archive.records(store)
           if (r.get("metadata") or {}).get("status") in AS_OF_ARCHIVED and isinstance(r.get("document"), str)
           and valid_on(r["metadata"], day, r.get("archived_at"))]
    back = set(lt.get([r["id"] for r in old])) if old else set()  # archived, then restored (an undo)
    rows += [{"id": r["id"], "document": r["document"],
              "metadata": {**r["metadata"], "archived_at": r.get("archived_at")}}
             for r in old if r["id"] not in back]
    if not rows:
        return [], 0
    import numpy as np  # noqa: PLC0415 - heavy (numpy): loaded only when used

    vectors = np.asarray(lt.embed([query] + [r["document"] for r in rows]), dtype=np.float32)
    for r, sim in zip(rows, vectors[1:] @ vectors[0]):  # cosine: the embeddings are L2-normalised
        r["similarity"] = float(sim)
    rows.sort(key=lambda r: -r["similarity"])
    hits = [r for r in rows if r["similarity"] >= floor][:k]
    return hits, len([r for r in rows[:k] if r["similarity"] < floor])
