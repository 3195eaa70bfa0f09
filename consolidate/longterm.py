"""The long-term tier's recall index: one ChromaDB collection, embedded (``chroma/`` in the store) or
on a Chroma server (``chromadb.HttpClient``) for a team.

Embeddings are computed here with the store's embedding function (``consolidate.embeddings``), not
by Chroma, so the store works offline and the manifest is the one authority on which function built
it. Each record is a memory: ``id`` (deterministic), ``document`` (the standalone statement), flat
``metadata`` (type, status, tier, evidence, confidence, last_confirmed, scope, session_id, run_id,
source, prompt_version, and ``provenance`` and ``fields`` as JSON strings). Importing this module
imports chromadb: it is never imported on the session-end fast path.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlparse

from .errors import ConfigError, EmbeddingMismatch, StoreCorrupt, StoreError

COLLECTION = "memories"


def _client(store):
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if store.chroma_url:
        u = urlparse(store.chroma_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ConfigError(f"bad Chroma URL {store.chroma_url!r}: use http://HOST:PORT")
        try:
            return chromadb.HttpClient(host=u.hostname, port=u.port or (443 if u.scheme == "https" else 8000),
                                       ssl=u.scheme == "https", settings=settings)
        except Exception as exc:
            raise StoreError(f"cannot reach the Chroma server at {store.chroma_url}: {exc}", path=store.chroma_url) from None
    path = store.sub("chroma")
    try:
        return chromadb.PersistentClient(path=str(path), settings=settings)
    except Exception as exc:
        raise StoreCorrupt(f"cannot open the Chroma store in {path}: {exc}", path=str(path)) from None


class LongTerm:
    """The recall index of one store. Raises EmbeddingMismatch (from the manifest check) when the
    store was built with another embedding function, StoreCorrupt when Chroma cannot open it."""

    def __init__(self, store):
        self.store = store
        self.ef = store.embedder()
        store.read_manifest()  # refuses a corrupt or newer-layout manifest before anything is opened
        self.client = _client(store)
        try:
            self.collection = self.client.get_or_create_collection(
                COLLECTION, embedding_function=None,
                metadata={"hnsw:space": "cosine", "embedding": self.ef.id, "dimension": self.ef.dimension})
        except Exception as exc:
            raise StoreCorrupt(f"cannot open the Chroma collection of {store.path}: {exc}", path=str(store.path)) from None
        # the collection remembers its embedding too: a lost manifest cannot let another one in
        built = (self.collection.metadata or {}).get("embedding")
        if built and built != self.ef.id:
            raise EmbeddingMismatch(
                f"store {store.path} was built with embedding {built}, not {self.ef.id}; use that embedding"
                f" (CONSOLIDATE_EMBEDDING) or a new store", path=str(store.path), expected=built, found=self.ef.id)
        store.check_embedding(self.ef.id, self.ef.dimension)

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of ``texts``: one list of ``dimension`` floats each, L2-normalised."""
        return self.ef.embed(texts) if texts else []

    def neighbours(self, embedding: list[float], *, type_: str | None = None, scope: str | None = None,
                   k: int = 5, statuses: tuple[str, ...] = ("active", "quarantined", "disputed")) -> list[dict[str, Any]]:
        """Up to ``k`` nearest memories: dicts with ``id``, ``document``, ``metadata``, ``similarity``
        (cosine, 1 = same direction), filtered by type, scope and status."""
        if self.collection.count() == 0:
            return []
        where = _where(type_=type_, scope=scope, statuses=statuses, tier="durable")
        res = self.collection.query(query_embeddings=[embedding], n_results=k, where=where,
                                    include=["documents", "metadatas", "distances"])
        out = []
        for i, d, m, dist in zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0]):
            out.append({"id": i, "document": d, "metadata": m, "similarity": 1.0 - float(dist)})
        return out

    def upsert(self, records: list[dict[str, Any]]) -> None:
        """Write memories: each record has ``id``, ``document``, ``metadata``, ``embedding``.
        Upsert by deterministic id: a replay overwrites, never duplicates."""
        for i in range(0, len(records), 1000):
            chunk = records[i:i + 1000]
            self.collection.upsert(ids=[r["id"] for r in chunk], documents=[r["document"] for r in chunk],
                                   metadatas=[r["metadata"] for r in chunk], embeddings=[r["embedding"] for r in chunk])

    def delete(self, ids: list[str]) -> None:
        """Remove memories from the recall index (missing ids are not an error: replay)."""
        if ids:
            self.collection.delete(ids=ids)

    def get(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """``{id: {"document", "metadata"}}`` for the ids that exist."""
        if not ids:
            return {}
        res = self.collection.get(ids=ids, include=["documents", "metadatas"])
        return {i: {"document": d, "metadata": m} for i, d, m in zip(res["ids"], res["documents"], res["metadatas"])}

    def update_metadata(self, memory_id: str, changes: dict[str, Any]) -> bool:
        """Merge ``changes`` into one memory's metadata; False when the memory does not exist."""
        cur = self.get([memory_id]).get(memory_id)
        if cur is None:
            return False
        meta = dict(cur["metadata"] or {})
        meta.update(changes)
        self.collection.update(ids=[memory_id], metadatas=[meta])
        return True

    def search(self, query: str, *, k: int = 5, scope: str | None = None,
               statuses: tuple[str, ...] = ("active",)) -> list[dict[str, Any]]:
        """Semantic recall: the ``k`` memories nearest to ``query`` with the given statuses."""
        if self.collection.count() == 0:
            return []
        return self.neighbours(self.embed([query])[0], scope=scope, k=k, statuses=statuses)

    #: Rows per ``get``: Chroma 1.5 fails a ``get`` returning more than 32,766 rows ("too many SQL
    #: variables", measured by benchmarks/bench_scale.py), so every bulk read is paged.
    PAGE = 5000

    def _get_all(self, where: dict | None = None, include=("documents", "metadatas")) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        offset = 0
        while True:
            res = self.collection.get(where=where, include=list(include), limit=self.PAGE, offset=offset)
            docs = res.get("documents") or [None] * len(res["ids"])
            metas = res.get("metadatas") or [None] * len(res["ids"])
            out += [{"id": i, "document": d, "metadata": m} for i, d, m in zip(res["ids"], docs, metas)]
            if len(res["ids"]) < self.PAGE:
                return out
            offset += self.PAGE

    def active(self, scope: str | None = None, tier: str = "durable", confidence: str | None = None) -> list[dict[str, Any]]:
        """Every active memory of ``scope`` in ``tier`` (and ``confidence`` when given): dicts with
        ``id``, ``document``, ``metadata``."""
        where = _where(scope=scope, statuses=("active",), tier=tier)
        if confidence:
            where = {"$and": [*where["$and"], {"confidence": confidence}]}
        return self._get_all(where)

    def with_status(self, *statuses: str) -> list[dict[str, Any]]:
        """Every memory (any scope and tier) with one of ``statuses``."""
        return self._get_all(_where(statuses=statuses))

    def all(self) -> list[dict[str, Any]]:
        """Every memory, in pages."""
        return self._get_all()

    def counts(self) -> dict[str, int]:
        """Memories by ``status/tier``."""
        out: dict[str, int] = {}
        for row in self._get_all(include=("metadatas",)):
            key = f"{row['metadata'].get('status', '?')}/{row['metadata'].get('tier', '?')}"
            out[key] = out.get(key, 0) + 1
        return out

def _where(*, type_=None, scope=None, statuses=(), tier=None) -> dict | None:
    clauses: list[dict] = []
    if type_:
        clauses.append({"type": type_})
    if scope:
        clauses.append({"scope": scope})
    if tier:
        clauses.append({"tier": tier})
    if statuses:
        clauses.append({"status": {"$in": list(statuses)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def record_for(candidate, scope: str) -> dict[str, Any]:
    """The Chroma record of a stamped candidate (flat metadata; nested values as JSON strings)."""
    p = candidate.provenance
    return {
        "id": candidate.memory_id,
        "document": candidate.statement,
        "embedding": candidate.embedding,
        "metadata": {
            "type": candidate.type, "status": candidate.status, "tier": candidate.tier,
            "evidence": candidate.evidence, "confidence": candidate.confidence,
            "last_confirmed": candidate.last_confirmed, "scope": scope, "session_id": p["session_id"],
            "run_id": p["run_id"], "source": candidate.source, "prompt_version": p.get("prompt_version") or "",
            "provenance": json.dumps(p, ensure_ascii=False), "fields": json.dumps(candidate.fields, ensure_ascii=False),
            **({"fields_missing": ",".join(p["fields_missing"])} if p.get("fields_missing") else {}),
        },
    }
