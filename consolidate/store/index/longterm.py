"""The long-term tier's recall index: one ChromaDB collection, embedded (``chroma/`` in the store) or
on a Chroma server (``chromadb.HttpClient``) for a team.

Embeddings are computed here with the store's embedding function (``consolidate.store.index.embeddings``), not
by Chroma, so the store works offline and the manifest is the one authority on which function built
it. Each record is a memory: ``id`` (deterministic), ``document`` (the standalone statement), flat
``metadata`` (type, status, tier, evidence, confidence, last_confirmed, scope, session_id, run_id,
source, origin (where its notes came from, consolidate/model/credit.py), prompt_version, and ``provenance`` and ``fields`` as JSON strings). Importing this module
imports chromadb: it is never imported on the session-end fast path.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from consolidate.core.errors import ConsolidateError, EmbeddingMismatch, StoreCorrupt, StoreError
from consolidate.core.option_check import check_chroma_url
from consolidate.rules.redaction import error_text
from consolidate.store.index.generation import GENERATION_FILE, bump_generation, read_generation  # noqa: F401 - GENERATION_FILE: named in docs
from consolidate.core.vocab import LIVE_STATUSES, RECALLED_STATUSES
from consolidate.store.layout import CHROMA, OPEN_LOCK
from consolidate.store.index.reindex import missing_index_error
from consolidate.store.index.embeddings import known_dimension, mismatch_message
from consolidate.store.index import lexical as _lexical
from consolidate.store.index import chroma_load
import shutil
import tempfile

COLLECTION = "memories"


def _client(store, path=None):
    """A Chroma client: an HttpClient for ``store.chroma_url``, else a PersistentClient on ``path``
    (default: the store's ``chroma/`` folder)."""
    chromadb = chroma_load.chromadb()  # the one import of chromadb (its @override checks skipped)
    from chromadb.config import Settings  # noqa: PLC0415 - heavy (chromadb, dotenv, httpx, numpy, pydantic, tenacity, yaml): loaded only when used

    settings = Settings(anonymized_telemetry=False)
    if store.chroma_url:
        host, port, tls = check_chroma_url(store.chroma_url)
        try:
            return chromadb.HttpClient(host=host, port=port, ssl=tls, settings=settings)
        except Exception as exc:
            raise StoreError(f"cannot reach the Chroma server at {store.chroma_url}: {_one_line(exc)}",
                             path=store.chroma_url) from None
    path = path or store.sub(CHROMA)
    try:
        return chromadb.PersistentClient(path=str(path), settings=settings)
    except Exception as exc:
        _forget_system(str(path))  # a half-built system stays in Chroma's cache and breaks the next open
        raise StoreCorrupt(f"cannot open the Chroma store in {path}: {_one_line(exc)}; `consolidate doctor --repair`"
                           " moves it aside and rebuilds it from the graph and the event log", path=str(path),
                           cause=_one_line(exc)) from None


def _forget_system(identifier: str) -> None:
    """Drop the system Chroma cached for ``identifier`` (a folder path) and stop it."""
    try:
        from chromadb.api.shared_system_client import SharedSystemClient  # noqa: PLC0415 - heavy (chromadb, dotenv, httpx, numpy, pydantic, tenacity, yaml): loaded only when used

        system = SharedSystemClient._identifier_to_system.pop(identifier, None)
        SharedSystemClient._identifier_to_refcount.pop(identifier, None)
        if system is not None:
            system.stop()
    except Exception:  # noqa: BLE001 - cleaning after a failure must not hide it
        pass


def _refuse_missing(store, recheck=None) -> None:
    """Raise StoreCorrupt (one line, naming the repair) when the embedded index is missing or empty
    while the graph holds live memories (consolidate/store/index/reindex.py): a command never answers "no
    memories", nor writes into a new empty index, as if nothing were lost. ``recheck``: as
    ``missing_index_error``'s (a run of another process that finished meanwhile)."""

    err = missing_index_error(store, 0, recheck)
    if err is not None:
        raise err


def _one_line(exc: BaseException, limit: int = 240) -> str:
    text = error_text(exc) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: Attempts of one read that fails because another process wrote while it ran (then reopened).
READ_ATTEMPTS = 4


class _Index:
    """The Chroma client of one store folder in this process, shared by every LongTerm on it.

    Chroma's PersistentClient is not process-safe: a process caches the system (and the in-memory
    HNSW segment) of a folder in ``chromadb.api.shared_system_client.SharedSystemClient`` by path,
    so a new client in the same process gets the same, stale segment; a stale segment answers
    queries with ``Error finding id`` once another process wrote, and one that writes persists an
    index missing the other process's records. So every operation first compares the store's
    generation token (:data:`GENERATION_FILE`) with the one read when the client was opened; when
    they differ, the client is closed, its system dropped from Chroma's cache, and a new one opened
    (which loads the index from disk). Writes run under the store lock and change the token. A
    Chroma server (``chroma_url``) is process-safe: its client is never reopened."""

    def __init__(self, key: str):
        self.key = key
        self.lock = threading.RLock()
        self.client: Any = None
        self.collection: Any = None
        self.seen: str | None = None
        self.metadata: dict | None = None
        self.copy_dir = None  # a read-only store's private copy (tempfile.TemporaryDirectory)
        self.reopened = 0

    def current(self, store):
        """The collection, reopened first when another process wrote since it was opened."""
        if self.collection is None:
            self._open(store)
        elif not store.chroma_url and read_generation(store) != self.seen:
            self.close()
            self._open(store)
            self.reopened += 1
        return self.collection

    def _open(self, store) -> None:
        guard = not store.chroma_url and not getattr(store, "allow_missing_index", False)
        if guard and not store.sub(CHROMA).exists():
            _refuse_missing(store, store.sub(CHROMA).exists)  # before Chroma creates a new, empty folder in its place
        self.seen = read_generation(store) if not store.chroma_url else None
        if store.chroma_url:
            self.client = _client(store)
        elif not store.writable:
            self.client = _client(store, self._private_copy(store))
        else:
            import filelock  # noqa: PLC0415 - third-party filelock: only its callers load it

            # Chroma's embedded client fails ("database is locked") when several processes open the
            # same folder at the same instant: open it one process at a time.
            with filelock.FileLock(str(store.sub(OPEN_LOCK)), timeout=60):
                self.client = _client(store)
        try:
            self.collection = self.client.get_or_create_collection(COLLECTION, embedding_function=None,
                                                                   metadata=self.metadata)
        except Exception as exc:
            self.close()
            raise StoreCorrupt(f"cannot open the Chroma collection of {store.path}: {_one_line(exc)}",
                               path=str(store.path)) from None
        if guard and self.collection.count() == 0:
            try:
                _refuse_missing(store, self.collection.count)
            except StoreCorrupt:
                self.close()
                raise

    def _private_copy(self, store):
        """A read-only store's index, copied to a temporary folder (Chroma's embedded client writes
        to its folder even to read it)."""
        if self.copy_dir is not None:
            self.copy_dir.cleanup()
        self.copy_dir = tempfile.TemporaryDirectory(prefix="consolidate-ro-")
        target = CHROMA.join(self.copy_dir.name)
        src = store.sub(CHROMA)
        try:
            if src.is_dir():
                shutil.copytree(src, target)
        except OSError as exc:
            raise StoreError(f"cannot read the recall index of read-only store {store.path}: {exc.strerror or exc}",
                             path=str(store.path)) from None
        return target

    def close(self) -> None:
        """Close the client and drop its system from Chroma's process-wide cache."""
        client, self.client, self.collection = self.client, None, None
        if client is None:
            return
        identifier: Any = getattr(client, "_identifier", None)
        try:
            client.close()
        except Exception:  # noqa: BLE001 - closing a broken client must not hide the real error
            pass
        try:
            from chromadb.api.shared_system_client import SharedSystemClient  # noqa: PLC0415 - heavy (chromadb, dotenv, httpx, numpy, pydantic, tenacity, yaml): loaded only when used

            # only this folder's entry: clear_system_cache() would also drop other stores' systems
            system = SharedSystemClient._identifier_to_system.pop(identifier, None)
            SharedSystemClient._identifier_to_refcount.pop(identifier, None)
            if system is not None:
                system.stop()
        except Exception:  # noqa: BLE001
            pass


_INDEXES: dict[str, _Index] = {}
_INDEXES_LOCK = threading.Lock()


def _index_for(store) -> _Index:
    key = store.chroma_url or str(store.sub(CHROMA).resolve())
    with _INDEXES_LOCK:
        idx = _INDEXES.get(key)
        if idx is None:
            idx = _INDEXES[key] = _Index(key)
        return idx


def close_all() -> None:
    """Close every index client of this process (tests; a long-lived process that moves on)."""
    with _INDEXES_LOCK:
        indexes = list(_INDEXES.values())
        _INDEXES.clear()
    for idx in indexes:
        with idx.lock:
            idx.close()


#: The statuses recall and the SessionStart context show: active entries, and disputed ones (two
#: entries of equal evidence that contradict each other, each shown with its ``[disputed]`` suffix,
#: issue 12) instead of nothing on the topic. Quarantined entries only on request.
RECALLED = RECALLED_STATUSES

class LongTerm:
    """The recall index of one store. Raises EmbeddingMismatch (from the manifest check) when the
    store was built with another embedding function, StoreCorrupt when Chroma cannot open it.

    Every read sees every write any process completed before it started (see :class:`_Index`);
    writes must run under the store lock (``Store.lock``), as apply, undo and maintenance do. A
    Chroma error becomes a StoreError with a one-line message."""

    def __init__(self, store):
        self.store = store
        self.ef = store.embedder()
        store.read_manifest()  # refuses a corrupt or newer-layout manifest before anything is opened
        self._index = _index_for(store)
        with self._index.lock:
            self._index.metadata = {"hnsw:space": "cosine", "embedding": self.ef.id, "dimension": self.ef.dimension}
            collection = self._index.current(store)
        # the collection remembers its embedding too: a lost manifest cannot let another one in
        built = (collection.metadata or {}).get("embedding")
        built_dimension = (collection.metadata or {}).get("dimension")
        if built and (built != self.ef.id or (isinstance(built_dimension, int) and built_dimension != self.ef.dimension)):

            raise EmbeddingMismatch(
                mismatch_message(f"store {store.path}", built, (collection.metadata or {}).get("dimension")
                                 or known_dimension(built), self.ef.id, self.ef.dimension,
                                 "use that embedding (CONSOLIDATE_EMBEDDING) or a new store"),
                path=str(store.path), expected=built, found=self.ef.id)
        if store.writable or store.chroma_url:
            store.check_embedding(self.ef.id, self.ef.dimension)

    @property
    def collection(self):
        """The Chroma collection, fresh (reopened when another process wrote since it was opened)."""
        with self._index.lock:
            return self._index.current(self.store)

    @property
    def client(self):
        with self._index.lock:
            self._index.current(self.store)
            return self._index.client

    def _read(self, fn) -> Any:
        """``fn(collection)`` on a fresh collection; a Chroma error (another process wrote while it
        ran) reopens the client and tries again, up to READ_ATTEMPTS times; then StoreError."""
        for attempt in range(READ_ATTEMPTS):
            with self._index.lock:
                collection = self._index.current(self.store)
                try:
                    return fn(collection)
                except ConsolidateError:
                    raise
                except Exception as exc:  # noqa: BLE001 - Chroma raises many kinds
                    if attempt == READ_ATTEMPTS - 1:
                        raise StoreError(f"the recall index of {self.store.path} cannot be read:"
                                         f" {type(exc).__name__}: {_one_line(exc)}", path=str(self.store.path)) from None
                    self._index.close()
            time.sleep(0.05 * (attempt + 1))

    def _write(self, fn, lexical=None) -> None:
        """``fn(collection)`` on a fresh collection, changing the generation token before and
        after, then ``lexical(index)`` on the lexical index (consolidate/store/index/lexical.py: kept in step
        here, so every writer of the vectors writes it too). A Chroma error becomes a StoreError
        naming the cause."""

        with self._index.lock:
            collection = self._index.current(self.store)
            embedded = not self.store.chroma_url
            before = read_generation(self.store) if embedded else f"count:{collection.count()}"
            if embedded:
                bump_generation(self.store)
            ok = False
            try:
                fn(collection)
                ok = True
            except ConsolidateError:
                raise
            except Exception as exc:  # noqa: BLE001
                if embedded:
                    self._index.close()  # its in-memory state may hold part of the failed write
                raise StoreError(f"the recall index write failed: {type(exc).__name__}: {_one_line(exc)}",
                                 path=str(self.store.chroma_url or self.store.path)) from None
            finally:
                token = None
                if embedded:  # a failed write may have changed part of the index: others reopen too
                    token = bump_generation(self.store)
                    if self._index.client is not None:
                        self._index.seen = token
            if ok and lexical is not None:
                after = token if token is not None else f"count:{collection.count()}"
                _lexical.write(self.store, self, lexical, before, after)

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of ``texts``: one list of ``dimension`` floats each, L2-normalised."""
        return self.ef.embed(texts) if texts else []

    def neighbours(self, embedding: list[float], *, type_: str | None = None, scope: str | None = None,
                   k: int = 5, statuses: tuple[str, ...] = LIVE_STATUSES,
                   min_similarity: float | None = None) -> list[dict[str, Any]]:
        """Up to ``k`` nearest memories: dicts with ``id``, ``document``, ``metadata``, ``similarity``
        (cosine, 1 = same direction), filtered by type, scope and status. With ``min_similarity``
        only those at least that similar are returned (and needed: see :meth:`neighbours_many`)."""
        return self.neighbours_many([embedding], type_=type_, scope=scope, k=k, statuses=statuses,
                                    min_similarity=min_similarity)[0]

    #: Unfiltered neighbours fetched per wanted one before the metadata filter is applied here.
    OVERFETCH = 10

    def neighbours_many(self, embeddings: list[list[float]], *, type_: str | None = None, scope: str | None = None,
                        k: int = 5, statuses: tuple[str, ...] = LIVE_STATUSES,
                        min_similarity: float | None = None) -> list[list[dict[str, Any]]]:
        """:meth:`neighbours` of each of ``embeddings`` (one list per embedding, in order), in as few
        index calls as possible.

        Chroma evaluates a metadata filter (``where``) over every record's metadata for each query
        call: at 100,000 memories one filtered query costs about 350 ms against 2 ms unfiltered
        (benchmarks/bench_scale.py). So the nearest ``k * OVERFETCH`` are fetched unfiltered for all
        embeddings in ONE query call and filtered here; the answer is exact (as exact as the
        index's approximate search) when at least ``k`` pass, when the unfiltered list held every
        record, or, with ``min_similarity``, when the farthest fetched is already below it (every
        passing record at or above it was fetched). Only the other embeddings are asked again with
        the filter, in one batched call. The unfiltered query fetches distances only; documents and
        metadata are read by id for the neighbours at or above ``min_similarity`` (all of them
        without one)."""
        if not embeddings:
            return []
        where = _where(type_=type_, scope=scope, statuses=statuses, tier="durable")
        want = max(1, int(k))

        def query(collection):
            # no count() first (23 ms at 100,000 memories): a query asking for more than the index
            # holds returns what it holds, and fewer rows than asked means every record was seen
            n = min(want * self.OVERFETCH, want + 1000)
            near = collection.query(query_embeddings=list(embeddings), n_results=n, include=["distances"])
            ranked = [[(i, 1.0 - float(d)) for i, d in zip(near["ids"][qi], near["distances"][qi])]
                      for qi in range(len(embeddings))]
            # documents and metadata only of the neighbours that can count (at or above the floor)
            wanted = sorted({i for rows in ranked for i, sim in rows
                             if min_similarity is None or sim >= min_similarity})
            rows_of = {}
            for start in range(0, len(wanted), self.PAGE):
                got = collection.get(ids=wanted[start:start + self.PAGE], include=["documents", "metadatas"])
                rows_of.update({i: (d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])})
            out: list[list[dict[str, Any]] | None] = []
            for rows in ranked:
                passing = [{"id": i, "document": rows_of[i][0], "metadata": rows_of[i][1], "similarity": sim}
                           for i, sim in rows if i in rows_of and _matches(rows_of[i][1], where)]
                exact = (len(passing) >= want or len(rows) < n
                         or (min_similarity is not None and rows[-1][1] < min_similarity))
                out.append(passing[:want] if exact else None)
            redo = [qi for qi, rows in enumerate(out) if rows is None]
            if redo:
                res = collection.query(query_embeddings=[embeddings[qi] for qi in redo], n_results=want, where=where,
                                       include=["documents", "metadatas", "distances"])
                for j, qi in enumerate(redo):
                    out[qi] = _rows(res, j)
            return out

        found = self._read(query)
        if min_similarity is not None:
            found = [[h for h in hits or [] if h["similarity"] >= min_similarity] for hits in found]
        return [hits or [] for hits in found]

    def upsert(self, records: list[dict[str, Any]]) -> None:
        """Write memories: each record has ``id``, ``document``, ``metadata``, ``embedding``.
        Upsert by deterministic id: a replay overwrites, never duplicates; an id given twice is
        written once, with its last record (Chroma refuses a write naming an id twice)."""
        if not records:
            return
        records = list({r["id"]: r for r in records}.values())

        def write(collection):
            for i in range(0, len(records), 1000):
                chunk = records[i:i + 1000]
                collection.upsert(ids=[r["id"] for r in chunk], documents=[r["document"] for r in chunk],
                                  metadatas=[r["metadata"] for r in chunk], embeddings=[r["embedding"] for r in chunk])

        self._write(write, lambda index: index.upsert(records))

    def restore(self, records: dict[str, dict[str, Any]]) -> None:
        """Put memories back exactly as ``records`` (``{id: {"document", "metadata", "embedding"}}``,
        an undo record's ``before``) held them: each is deleted, then written whole, because an upsert
        merges metadata and a key written since (``disputed_with``, a review mark) would survive. The
        one restore of ``consolidate undo`` and of a failed run's roll back."""
        if not records:
            return
        self.delete(list(records))
        self.upsert([{"id": i, "document": r["document"], "metadata": r["metadata"], "embedding": r["embedding"]}
                     for i, r in records.items()])

    def delete(self, ids: list[str]) -> None:
        """Remove memories from the recall index (missing ids are not an error: replay)."""
        ids = list(dict.fromkeys(ids))
        if ids:
            self._write(lambda collection: collection.delete(ids=ids), lambda index: index.delete(ids))

    def get(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """``{id: {"document", "metadata"}}`` for the ids that exist (an id given twice is read once:
        Chroma refuses a ``get`` naming an id twice, DuplicateIDError)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        res = self._read(lambda collection: collection.get(ids=ids, include=["documents", "metadatas"]))
        return {i: {"document": d, "metadata": m} for i, d, m in zip(res["ids"], res["documents"], res["metadatas"])}

    def update_metadata(self, memory_id: str, changes: dict[str, Any]) -> bool:
        """Merge ``changes`` into one memory's metadata; False when the memory does not exist."""
        cur = self.get([memory_id]).get(memory_id)
        if cur is None:
            return False
        meta = dict(cur["metadata"] or {})
        meta.update(changes)
        self._write(lambda collection: collection.update(ids=[memory_id], metadatas=[meta]),
                    lambda index: index.update(memory_id, meta))
        return True

    def search(self, query: str | list[float], *, k: int = 5, scope: str | None = None,
               statuses: tuple[str, ...] | None = None, min_similarity: float | None = None) -> list[dict[str, Any]]:
        """Semantic recall: the ``k`` memories nearest to ``query`` (a text, or its embedding) with
        the given statuses (default RECALLED: active and disputed; a disputed entry is shown with its
        ``[disputed]`` suffix rather than leaving the topic blank); with ``min_similarity``, only
        those at least that similar."""
        statuses = RECALLED if statuses is None else statuses
        if isinstance(query, str) and self.count() == 0:
            return []  # nothing to find: the embedding model is not loaded for it
        vector = self.embed([query])[0] if isinstance(query, str) else query
        return self.neighbours(vector, scope=scope, k=k, statuses=statuses, min_similarity=min_similarity)

    #: Rows per ``get``: Chroma 1.5 fails a ``get`` returning more than 32,766 rows ("too many SQL
    #: variables", measured by benchmarks/bench_scale.py), so every bulk read is paged.
    PAGE = 5000

    def _get_all(self, where: dict | None = None, include=("documents", "metadatas")) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        offset = 0
        while True:
            res = self._read(lambda collection, offset=offset: collection.get(
                where=where, include=list(include), limit=self.PAGE, offset=offset))
            docs = res.get("documents") or [None] * len(res["ids"])
            metas = res.get("metadatas") or [None] * len(res["ids"])
            out += [{"id": i, "document": d, "metadata": m} for i, d, m in zip(res["ids"], docs, metas)]
            if len(res["ids"]) < self.PAGE:
                return out
            offset += self.PAGE

    def active(self, scope: str | None = None, tier: str = "durable", confidence: str | None = None,
               statuses: tuple[str, ...] = ("active",), documents: bool = True) -> list[dict[str, Any]]:
        """Every active memory (or of ``statuses``) of ``scope`` in ``tier`` (and ``confidence`` when
        given): dicts with ``id``, ``document`` (None with ``documents=False``), ``metadata``."""
        where = _where(scope=scope, statuses=statuses, tier=tier, confidence=confidence)
        return self._get_all(where, include=("documents", "metadatas") if documents else ("metadatas",))

    def with_status(self, *statuses: str, documents: bool = True) -> list[dict[str, Any]]:
        """Every memory (any scope and tier) with one of ``statuses`` (``document`` None with
        ``documents=False``)."""
        return self._get_all(_where(statuses=statuses), include=("documents", "metadatas") if documents else ("metadatas",))

    def from_notes_file(self, source_file: str, scope: str, statuses: tuple[str, ...]) -> list[dict[str, Any]]:
        """The memories of ``scope`` with one of ``statuses`` written from notes of the notes file
        ``source_file`` (flat metadata ``notes_file``; consolidate/model/notes_files.py), metadata only
        (``document`` None): an index lookup."""
        return self._get_all({"$and": [{"notes_file": source_file}, {"scope": scope}, {"status": {"$in": list(statuses)}}]},
                             include=("metadatas",))

    def marked(self, key: str) -> list[dict[str, Any]]:
        """Every memory whose metadata ``key`` is True (a mark such as ``curate_proposed``: a curation
        proposal waiting for review, consolidate/pipeline/curate/), with document and metadata."""
        return self._get_all({key: True})

    def all(self) -> list[dict[str, Any]]:
        """Every memory, in pages."""
        return self._get_all()

    def count(self) -> int:
        """How many records the index holds (every status and tier)."""
        return self._read(lambda collection: collection.count())

    def get_with_embeddings(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """``{id: {"document", "metadata", "embedding"}}`` for the ids that exist (undo records; an
        id given twice is read once)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        res = self._read(lambda collection: collection.get(ids=ids, include=["documents", "metadatas", "embeddings"]))
        return {i: {"document": d, "metadata": m, "embedding": [float(x) for x in e]}
                for i, d, m, e in zip(res["ids"], res["documents"], res["metadatas"], res["embeddings"])}

    def counts(self) -> dict[str, int]:
        """Memories by ``status/tier``."""
        out: dict[str, int] = {}
        for row in self._get_all(include=("metadatas",)):
            key = f"{row['metadata'].get('status', '?')}/{row['metadata'].get('tier', '?')}"
            out[key] = out.get(key, 0) + 1
        return out

def _rows(res: dict, qi: int) -> list[dict[str, Any]]:
    """The ``qi``-th query's hits of a Chroma query result, nearest first."""
    return [{"id": i, "document": d, "metadata": m, "similarity": 1.0 - float(dist)}
            for i, d, m, dist in zip(res["ids"][qi], res["documents"][qi], res["metadatas"][qi], res["distances"][qi])]


def _matches(meta: dict | None, where: dict | None) -> bool:
    """Whether ``meta`` passes a filter built by :func:`_where` (``$and`` of equalities and ``$in``),
    as Chroma would decide it."""
    if where is None:
        return True
    meta = meta or {}
    for clause in where.get("$and", [where]):
        for key, cond in clause.items():
            value = meta.get(key)
            if isinstance(cond, dict):
                if "$in" in cond and value not in cond["$in"]:
                    return False
            elif value != cond:
                return False
    return True


def _where(*, type_=None, scope=None, statuses=(), tier=None, confidence=None) -> dict | None:
    """A Chroma ``where`` filter: the equalities given (``$in`` for ``statuses``), one clause bare,
    several under ``$and``, None when nothing is given."""
    clauses: list[dict] = []
    if type_:
        clauses.append({"type": type_})
    if scope:
        clauses.append({"scope": scope})
    if tier:
        clauses.append({"tier": tier})
    if statuses:
        clauses.append({"status": {"$in": list(statuses)}})
    if confidence:
        clauses.append({"confidence": confidence})
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
            **({"valid_from": p["valid_from"]} if p.get("valid_from") else {}),
            # where its notes came from: a judge's evidence claim is credited by it (consolidate/model/credit.py)
            **({"origin": p["origin"]} if p.get("origin") else {}),
            "run_id": p["run_id"], "source": candidate.source, "prompt_version": p.get("prompt_version") or "",
            "provenance": json.dumps(p, ensure_ascii=False), "fields": json.dumps(candidate.fields, ensure_ascii=False),
            **({"fields_missing": ",".join(p["fields_missing"])} if p.get("fields_missing") else {}),
            # written again after a forget (that run): the tombstone no longer hides it (consolidate/store/views/shown.py)
            **({"restates": p["restates"]} if p.get("restates") else {}),
            **({"anchors": json.dumps(candidate.anchors, ensure_ascii=False)} if candidate.anchors else {}),
            # the notes file its notes came from and their digests (consolidate/model/notes_files.py)
            **({"notes_file": p["notes_file"], "notes_file_keys": " ".join(p["notes_file_keys"])}
               if p.get("notes_file") else {}),
        },
    }
