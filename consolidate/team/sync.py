"""Team memory on a Chroma server: the server side (imports chromadb; never on the session-end path).

Server layout (one Chroma database per project, ``consolidate_<project>``; see consolidate/team/local.py
and the README's "Team memory on a Chroma server")::

    memories    id = memory id; statement, embedding, metadata (+ version, origin, updated_at, changed_at)
    edges       id = sha1(source, target, key); document = the edge and both ends' node attributes
    tombstones  id = memory id; document = the reason

Every memory, edge and tombstone write carries ``changed_at`` (the writer's clock, seconds since the
epoch), and a pull reads only the records changed since the newest one its last pull saw, less
CURSOR_SKEW (clock skew between machines, a push still landing): a pull costs what changed, not what
the team store holds (issue 34: a full read of the heads of a million memories took minutes). A
store without a cursor (its first pull, a ledger from before ``changed_at``) reads every record.

Clocks. A machine's clock may be wrong by more than CURSOR_SKEW. So a push stamps its writes with
:func:`_stamp`, never earlier than the latest stamp on the team store (kept in the clock record by
each push, and the ``newest`` mark of this machine's ledger): a machine whose clock is slow does
not write below the others' cursors. And a pull's cursor never passes this machine's own clock
(consolidate/team/ledger.py ``record``): a record stamped in the future by a machine whose clock is
fast would otherwise move every reader's cursor past what correct clocks write meanwhile (those
writes were then never pulled). A record stamped more than CURSOR_SKEW ahead is logged.
    events      id = <run_id>:<seq>; document = the event line

Collections other than ``memories`` hold no vectors worth searching: each record carries the
one-dimensional embedding ``[1.0]`` (Chroma stores records with an embedding).

Every write is an upsert by a deterministic id, so a push repeated after a crash or a timeout
writes the same records again: nothing is applied twice. Network calls run in a worker thread with
a deadline (Chroma's HTTP client has no timeout of its own); on timeout the caller goes on (a push
stays in the outbox, a pull leaves the last pulled copy).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

from consolidate.core import interruptible
from consolidate.team import ledger, local as team
from consolidate.team.ledger import LIFTED, REMOVED
from consolidate.core.errors import ConfigError, ConsolidateError, EmbeddingMismatch, TeamError, TeamTimeout
from consolidate.core.faults import crash_point, pause_point
from consolidate.core.vocab import (ACTIVE, ARCHIVED, DELETED, DISPUTED, EXPIRED, FORGOTTEN, LIVE_STATUSES,
                                    QUARANTINED, REJUDGED_OUT, SUPERSEDED, UNDONE)
from consolidate.store.layout import GRAPH, TEAM_PUSH_LOCK
from consolidate.rules.redaction import error_text
from consolidate.team.http import CLOCK
from consolidate.store.views import context_md
from consolidate.store.forgotten import lift
from consolidate.store.forgotten import append as forgotten_append, tombstones as forgotten_rows
from consolidate.store.index.embeddings import known_dimension, mismatch_message
from consolidate.store.index import chroma_load
import uuid
from consolidate.store import archive, graph

MEMORIES, EDGES, TOMBSTONES, EVENTS = "memories", "edges", "tombstones", "events"
UNIT = [1.0]
PAGE = 1000
#: Status precedence when two machines changed one memory concurrently: the higher rank is kept.
STATUS_RANK: dict[Any, int] = {QUARANTINED: 0, ACTIVE: 1, DISPUTED: 2, SUPERSEDED: 3, EXPIRED: 3,
                               REJUDGED_OUT: 3, ARCHIVED: 3, UNDONE: 3, FORGOTTEN: 4, DELETED: 4}
#: Metadata keys that are bookkeeping, not content (a change in them alone is not a change).
BOOKKEEPING = ("version", "origin", "updated_at", "write_id", "changed_at")
#: Seconds a pull reads back before its cursor: the clocks of a team's machines may disagree by this
#: much, and a push stamped before a pull's read may land after it.
CURSOR_SKEW = 900.0


def _one_line(exc: BaseException) -> str:
    return error_text(exc, limit=300) or type(exc).__name__


def explain(exc: BaseException, url: str) -> str:
    """One line for a Chroma client error (never the token)."""
    text = _one_line(exc)
    name = type(exc).__name__
    chain: list[str] = []
    cause: BaseException | None = exc
    while cause is not None and len(chain) < 8:  # chromadb wraps the connection error: look inside
        chain.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    if any("CERTIFICATE_VERIFY_FAILED" in c or "certificate verify failed" in c for c in chain):
        return (f"the team store at {url} failed the TLS certificate check (an untrusted or wrong certificate);"
                " trust its CA with SSL_CERT_FILE, never with --insecure")
    low = text.lower()
    if "auth" in name.lower() or "401" in low or "403" in low or "unauthorized" in low or "forbidden" in low \
            or "permission" in low:
        return f"the team store at {url} refused the token (wrong or missing token, or no access to this project)"
    if "could not connect" in low or "connect" in low and "refused" in low or "connecterror" in name.lower():
        return f"the team store at {url} cannot be reached"
    return f"the team store at {url} failed: {name}: {text}"


def bounded(fn, seconds: float | None, what: str):
    """``fn()`` in a daemon thread; its result, its exception, or TeamTimeout after ``seconds``."""
    if not seconds:
        return fn()
    box: dict[str, Any] = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True, name=f"team-{what}")
    t.start()
    if not interruptible.join(t, seconds):  # Ctrl-C heard at once, not after the server's answer
        raise TeamTimeout(f"the team store did not answer the {what} within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


class TeamClient:
    """The project's collections on the team server. Raises ConfigError for a refused URL or token
    file, TeamError (one line) when the server cannot be reached or refuses the token."""

    def __init__(self, store, cfg: team.TeamConfig | None = None, *, create: bool = False):
        self.store = store
        #: The ``changed_at`` of this client's writes (set by a push: :func:`_stamp`).
        self.stamp: float = time.time()
        found = cfg or team.load_config(store.path)
        if found is None:
            raise ConfigError(f"store {store.path} is not in a team: run `consolidate team init --chroma-url URL"
                              " --project P` first")
        self.cfg: team.TeamConfig = found
        token = team.read_token(self.cfg, store.path)
        host, port, tls = team.check_url(self.cfg.url, token, self.cfg.insecure)
        chromadb = chroma_load.chromadb()  # the one import of chromadb (consolidate/store/index/chroma_load.py)
        from chromadb.config import Settings  # noqa: PLC0415 - heavy (chromadb, dotenv, httpx, numpy, pydantic, tenacity, yaml): loaded only when used

        auth: dict[str, Any] = {"chroma_client_auth_provider": "chromadb.auth.token_authn.TokenAuthClientProvider",
                "chroma_client_auth_credentials": token} if token else {}
        settings = Settings(anonymized_telemetry=False, **auth)
        try:
            if create:
                admin = chromadb.AdminClient(Settings(anonymized_telemetry=False, chroma_api_impl="chromadb.api.fastapi.FastAPI",
                                                      chroma_server_host=host, chroma_server_http_port=port,
                                                      chroma_server_ssl_enabled=tls, **auth))
                try:
                    admin.get_database(self.cfg.database, tenant=self.cfg.tenant)
                except Exception as exc:  # noqa: BLE001 - missing: create it (a refused token raises again)
                    if "auth" in type(exc).__name__.lower():
                        raise
                    admin.create_database(self.cfg.database, tenant=self.cfg.tenant)
            self.client = chromadb.HttpClient(host=host, port=port, ssl=tls, settings=settings,
                                              tenant=self.cfg.tenant, database=self.cfg.database)
            self.client.list_collections(limit=1)  # an authenticated call: a wrong token fails here
        except ConsolidateError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise TeamError(explain(exc, self.cfg.url), path=self.cfg.url) from None
        self._collections: dict[str, Any] = {}

    def collection(self, name: str, embedding: dict | None = None):
        if name not in self._collections:
            meta = {"hnsw:space": "cosine" if name == MEMORIES else "l2"}
            if name == MEMORIES and embedding:
                meta.update(embedding)
            self._collections[name] = self.client.get_or_create_collection(name, embedding_function=None, metadata=meta)
        return self._collections[name]

    def memories(self):
        """The memories collection; raises EmbeddingMismatch when the team store was built with
        another embedding function than this store's."""
        ef = self.store.embedder()
        col = self.collection(MEMORIES, {"embedding": ef.id, "dimension": ef.dimension})
        built = (col.metadata or {}).get("embedding")
        if built and built != ef.id:

            raise EmbeddingMismatch(mismatch_message(
                f"the team store {self.cfg.url} (project {self.cfg.project})", built,
                (col.metadata or {}).get("dimension") or known_dimension(built), ef.id, ef.dimension,
                f"use {built} (--embedding) for this store"), path=self.cfg.url, expected=built, found=ef.id)
        return col


def _get_all(col, include: list[str], where=None) -> list[dict[str, Any]]:
    out, offset = [], 0
    while True:
        res = col.get(include=include, limit=PAGE, offset=offset, where=where)
        ids = res["ids"]
        docs = res.get("documents") or [None] * len(ids)
        metas = res.get("metadatas") or [None] * len(ids)
        out += [{"id": i, "document": d, "metadata": m} for i, d, m in zip(ids, docs, metas)]
        if len(ids) < PAGE:
            return out
        offset += PAGE


def _content(meta: dict | None, document: str | None) -> tuple:
    meta = {k: v for k, v in (meta or {}).items() if k not in BOOKKEEPING}
    return document, json.dumps(meta, sort_keys=True, ensure_ascii=False)


def merge(server: dict, local: dict) -> dict:
    """Metadata of one memory changed on two machines since their common version: the later
    ``last_confirmed`` wins, then the status of higher rank (STATUS_RANK) is kept over it."""
    newer, older = (local, server) if (local.get("last_confirmed") or "") >= (server.get("last_confirmed") or "") \
        else (server, local)
    out = {**older, **newer}
    if STATUS_RANK.get(older.get("status"), 1) > STATUS_RANK.get(newer.get("status"), 1):
        out["status"] = older["status"]
        for key in ("superseded_by", "disputed_with", "valid_to"):  # the status with its link and end
            if key in older:
                out[key] = older[key]
    return out


def edge_id(source: str, target: str, key: str) -> str:
    return hashlib.sha1(f"{source}\x00{target}\x00{key}".encode()).hexdigest()


def _edge_records(g, memory_ids: set[str], stamp: float) -> list[dict[str, Any]]:
    """Every graph edge touching ``memory_ids``, with both ends' node attributes (each edge once)."""
    out: dict[str, dict[str, Any]] = {}
    for mid in memory_ids:
        if mid not in g:
            continue
        for u, v, k, attrs in list(g.out_edges(mid, keys=True, data=True)) + list(g.in_edges(mid, keys=True, data=True)):
            doc = {"source": u, "target": v, "key": k, "attrs": attrs,
                   "source_node": dict(g.nodes[u]), "target_node": dict(g.nodes[v])}
            out[edge_id(u, v, str(k))] = {"id": edge_id(u, v, str(k)),
                                          "document": json.dumps(doc, ensure_ascii=False, sort_keys=True),
                                          "metadata": {"kind": str(attrs.get("kind") or k), "source": u, "target": v,
                                                       "changed_at": stamp}}
    return list(out.values())


# -- push ---------------------------------------------------------------------------------------
#: Times a push writes one memory again after another machine's write came in between its read and
#: its read-back; then the entry stays in the outbox for the next push.
PUSH_ATTEMPTS = 4


def write_id(machine: str) -> str:
    """A new write id, ``<machine>:<12 hex digits>``: each server write of a memory carries one
    (metadata ``write_id``), so a machine tells its own write from another machine's write of the
    same version number (Chroma has no compare-and-set: two machines may both write version n)."""
    return f"{machine}:{uuid.uuid4().hex[:12]}"


def push(store, seconds: float | None = None) -> dict[str, Any]:
    """Push every outbox entry, oldest first; each entry is deleted once the server took all its
    writes. Returns ``{"ok", "pushed": [run ids], "memories", "events", "pending"}``. Raises TeamError
    (one line) when the server cannot be used; what was not pushed stays in the outbox. A second
    push running at the same time on this store leaves the work to the first (``skipped``).

    The push lock is taken and released by the thread that pushes, so a push that outlives its
    time bound (TeamTimeout for the caller) keeps the lock until it really ends: a later push or
    ``sync`` in the same process never runs beside it."""
    import filelock  # noqa: PLC0415 - third-party filelock: only its callers load it

    if not team.pending(store):
        return {"ok": True, "pushed": [], "memories": 0, "events": 0, "pending": 0}
    _load_local_parts(store)
    lock = filelock.FileLock(str(store.sub(TEAM_PUSH_LOCK)), mode=0o600, thread_local=False)

    def work():
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            return {"ok": True, "skipped": "another push is running", "pushed": [], "memories": 0, "events": 0,
                    "pending": len(team.pending(store))}
        try:
            return _push(store, team.pending(store))
        finally:
            lock.release()

    return bounded(work, seconds, "push")


def _push(store, entries: list[Path]) -> dict[str, Any]:
    client = TeamClient(store)
    pushed, n_memories, n_events = [], 0, 0
    g = None
    try:
        client.stamp = _stamp(client, store)
        for path in entries:
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                continue  # pushed by another process meanwhile
            except (OSError, ValueError) as exc:
                team.log(store, f"outbox entry {path.name} unreadable ({error_text(exc)}); moved aside")
                path.rename(path.with_suffix(".bad"))
                continue
            seen: dict[str, list] = {}  # what this entry wrote or found: {id: [version, write id]}
            edges: set[str] = set()
            if entry.get("memories") or entry.get("removed"):
                if g is None:
                    g = graph.load(store.sub(GRAPH))
                written, edges = _push_memories(client, store, entry, g, seen)
                n_memories += written
            if entry.get("tombstones"):
                client.collection(TOMBSTONES).upsert(
                    ids=list(entry["tombstones"]), embeddings=[UNIT] * len(entry["tombstones"]),
                    documents=[f"tombstoned by run {entry['run_id']}"] * len(entry["tombstones"]),
                    metadatas=[{"run_id": entry["run_id"], "origin": client.cfg.machine, "changed_at": client.stamp}]
                    * len(entry["tombstones"]))
            if entry.get("lifted"):  # an undo lifted them: every machine lifts them
                client.collection(TOMBSTONES).upsert(
                    ids=list(entry["lifted"]), embeddings=[UNIT] * len(entry["lifted"]),
                    documents=[f"lifted by {entry['run_id']}"] * len(entry["lifted"]),
                    metadatas=[{"run_id": entry["run_id"], "lifted": entry["run_id"], "origin": client.cfg.machine,
                                "changed_at": client.stamp}]
                    * len(entry["lifted"]))
            gone_edges: list[dict[str, Any]] = [{"id": edge_id(u, v, k), "document": json.dumps({"source": u, "target": v, "key": k,
                                                                            "removed": True}),
                           "metadata": {"kind": k, "source": u, "target": v, "removed": entry["run_id"],
                                        "changed_at": client.stamp}}
                          for u, v, k in entry.get("edges_removed") or []]
            if gone_edges:  # an undo took them out of the graph: every machine does
                client.collection(EDGES).upsert(ids=[e["id"] for e in gone_edges], embeddings=[UNIT] * len(gone_edges),
                                                documents=[e["document"] for e in gone_edges],
                                                metadatas=[e["metadata"] for e in gone_edges])
                edges = edges | {str(e["id"]) + REMOVED for e in gone_edges}
            events = entry.get("events") or []
            for i in range(0, len(events), PAGE):
                chunk = events[i:i + PAGE]
                client.collection(EVENTS).upsert(
                    ids=[e.get("event_id") or f"{e.get('run_id', entry['run_id'])}:{e.get('seq', j)}"
                         for j, e in enumerate(chunk, i)],
                    embeddings=[UNIT] * len(chunk), documents=[json.dumps(e, ensure_ascii=False) for e in chunk],
                    metadatas=[{"event": str(e.get("event")), "run_id": entry["run_id"],
                                "session_id": str(entry.get("session_id")), "origin": client.cfg.machine}
                               for e in chunk])
            n_events += len(events)
            tombstones = list(entry.get("tombstones") or []) + [t + LIFTED for t in entry.get("lifted") or []]
            ledger.record(store, seen, edges, tombstones)
            crash_point("team:push")  # tests: killed after the server took the writes, before the entry went
            path.unlink(missing_ok=True)  # only now: every write of the entry was taken
            pushed.append(entry["run_id"])
            team.log(store, f"pushed run {entry['run_id']} ({entry.get('outcome')}): {len(entry.get('memories') or [])}"
                     f" memories, {len(entry.get('removed') or {})} removed, {len(events)} events")
    except ConsolidateError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise TeamError(explain(exc, client.cfg.url), path=client.cfg.url) from None
    finally:
        if pushed:
            _tick(client, client.stamp)
            team.update_state(store, last_push=team.now_iso(), last_push_runs=len(pushed), last_error=None)
    return {"ok": True, "pushed": pushed, "memories": n_memories, "events": n_events, "pending": len(team.pending(store))}


def _clock_stamp(clock: dict) -> float:
    """The latest write stamp the team's clock record holds (0 for none, or a clock before it)."""
    meta = ((clock.get("metadatas") or [None])[0]) or {}
    value = meta.get("stamp")
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def _stamp(client, store) -> float:
    """The ``changed_at`` of a push's writes: this machine's clock, or the latest stamp on the team
    store (the clock record's, this ledger's ``newest``) when that is later (see "Clocks" above)."""
    clock = client.collection(CLOCK).get(ids=[CLOCK], include=["metadatas"])
    return max(time.time(), _clock_stamp(clock), ledger.marks(store)["newest"] or 0.0)


def _tick(client, stamp: float) -> None:
    """A new token in the team store's clock, written after a push's records (consolidate/team/http.py),
    with the push's ``stamp`` when it is the latest: a pull that read the former token also read
    these records. A failure here is left to the next push (the records are on the server; a full
    pull finds them)."""

    try:
        clock = client.collection(CLOCK)
        latest = max(stamp, _clock_stamp(clock.get(ids=[CLOCK], include=["metadatas"])))
        clock.upsert(ids=[CLOCK], documents=[uuid.uuid4().hex], embeddings=[UNIT],
                     metadatas=[{"origin": client.cfg.machine, "stamp": latest}])
    except Exception as exc:  # noqa: BLE001
        team.log(client.store, f"the team clock was not moved ({_one_line(exc)}); the next push moves it")


def _known(store, ids) -> dict[str, tuple[int, str | None]]:
    """``{id: (version, write id)}`` for each of ``ids``: the version this machine last wrote or
    pulled and that write's id; ``(0, None)`` for one it never had (consolidate/team/ledger.py)."""
    got = ledger.known(store, ids)
    return {mid: got.get(mid, (0, None)) for mid in ids}


def _unseen(server_meta: dict, known: tuple[int, str | None]) -> bool:
    """Whether the server's record is a write this machine has not seen: a higher version, or the
    same version written by someone else (two machines wrote version n at once)."""
    sv, wid = int(server_meta.get("version") or 0), server_meta.get("write_id")
    return sv > known[0] or (sv == known[0] and bool(known[1]) and wid != known[1])


def _push_memories(client, store, entry: dict, g, seen: dict[str, list]) -> tuple[int, set[str]]:
    """Write one outbox entry's memories (their current local records) and removals. Chroma has no
    compare-and-set, so each write is read back by its write id: when another machine's write came
    in between, the two are merged (:func:`merge`) and written again, up to PUSH_ATTEMPTS times;
    then TeamError (the entry stays in the outbox). Fills ``seen``; returns (writes, edge ids)."""
    col = client.memories()
    lt = store.longterm()
    ids = list(entry.get("memories") or [])
    removed = dict(entry.get("removed") or {})
    local = lt.get_with_embeddings(ids)
    wanted = [i for i in ids if i in local] + [i for i in removed]
    if not wanted:
        return 0, set()
    known: dict[str, Any] = _known(store, wanted)
    written = 0
    for _attempt in range(PUSH_ATTEMPTS):
        server = {r["id"]: r for r in _get(col, wanted, ["documents", "metadatas"])}
        pause_point("team:push:read")  # tests: another machine writes between this read and the writes
        upserts, updates = [], []
        for mid in wanted:
            s = server.get(mid)
            sv = int((s or {}).get("metadata", {}).get("version") or 0)
            if mid in local:
                doc, meta = local[mid]["document"], dict(local[mid]["metadata"] or {})
            elif s is not None:
                doc, meta = s["document"], {**s["metadata"], **removed[mid]}
            else:
                continue  # removed before it ever reached the team: nothing to tell
            meta = {k: v for k, v in meta.items() if k not in BOOKKEEPING}
            if s is not None and not entry.get("restore") and _unseen(s["metadata"], known[mid]) and \
                    _content(s["metadata"], s["document"]) != _content(meta, doc):
                meta = merge({k: v for k, v in s["metadata"].items() if k not in BOOKKEEPING}, meta)
            if s is not None and _content(s["metadata"], s["document"]) == _content(meta, doc):
                seen[mid] = [sv, s["metadata"].get("write_id")]
                continue  # the server has it already (a repeated push): no new version
            meta = {**meta, "version": sv + 1, "origin": client.cfg.machine, "updated_at": team.now_iso(),
                    "changed_at": client.stamp, "write_id": write_id(client.cfg.machine)}
            if mid in local:
                upserts.append({"id": mid, "document": doc, "metadata": meta, "embedding": local[mid]["embedding"]})
            else:
                updates.append({"id": mid, "metadata": meta})
        for i in range(0, len(upserts), PAGE):
            chunk = upserts[i:i + PAGE]
            col.upsert(ids=[r["id"] for r in chunk], documents=[r["document"] for r in chunk],
                       metadatas=[r["metadata"] for r in chunk], embeddings=[r["embedding"] for r in chunk])
        for i in range(0, len(updates), PAGE):
            chunk = updates[i:i + PAGE]
            col.update(ids=[r["id"] for r in chunk], metadatas=[r["metadata"] for r in chunk])
        mine = {r["id"]: r["metadata"] for r in upserts + updates}
        if not mine:
            break
        crash_point("team:push:written")
        back = {r["id"]: r["metadata"] for r in _get(col, list(mine), ["metadatas"])}
        overtaken = [mid for mid, meta in mine.items() if (back.get(mid) or {}).get("write_id") != meta["write_id"]]
        for mid, meta in mine.items():
            if mid not in overtaken:
                seen[mid] = known[mid] = [meta["version"], meta["write_id"]]
                written += 1
        if not overtaken:
            break
        wanted = overtaken  # another writer came in between: merge with what it wrote
    else:
        raise TeamError(f"{len(wanted)} memories changed on the team store {client.cfg.url} by another machine"
                        f" during each of {PUSH_ATTEMPTS} writes; run {entry.get('run_id')} stays in the outbox",
                        path=client.cfg.url)
    edges = _edge_records(g, set(ids) | set(removed), client.stamp)
    for i in range(0, len(edges), PAGE):
        chunk = edges[i:i + PAGE]
        client.collection(EDGES).upsert(ids=[e["id"] for e in chunk], documents=[e["document"] for e in chunk],
                                        metadatas=[e["metadata"] for e in chunk], embeddings=[UNIT] * len(chunk))
    return written, {e["id"] for e in edges}


def _get(col, ids: list[str], include: list[str]) -> list[dict[str, Any]]:
    out = []
    for i in range(0, len(ids), PAGE):
        res = col.get(ids=ids[i:i + PAGE], include=include)
        docs = res.get("documents") or [None] * len(res["ids"])
        metas = res.get("metadatas") or [None] * len(res["ids"])
        embs = res.get("embeddings") if "embeddings" in include else None
        for j, mid in enumerate(res["ids"]):
            row = {"id": mid, "document": docs[j], "metadata": metas[j] or {}}
            if embs is not None:
                row["embedding"] = [float(x) for x in embs[j]]
            out.append(row)
    return out


# -- pull ---------------------------------------------------------------------------------------
def pull(store, seconds: float | None = None, context: bool = False) -> dict[str, Any]:
    """Bring the team's changes into the local index and graph: memories whose server version is not
    the one this machine has, edges and tombstones it has not seen. The network part is bounded by
    ``seconds``: on timeout (or an error) nothing local changes and ``{"ok": False, "timeout": bool,
    "error"}`` is returned; the last pulled copy stays in use. Memories with unpushed local changes
    (in the outbox) are not overwritten: their push merges them. ``context`` rewrites
    ``memory/context.md`` even when nothing changed. Returns ``{"ok", "memories", "removed", "edges",
    "tombstones", "seconds"}``."""
    t0 = time.perf_counter()
    marks = ledger.marks(store)
    _load_local_parts(store)  # imports and the embedding model: local costs, outside the network bound
    try:
        fetched = bounded(lambda: _fetch(store, marks), seconds, "pull")
    except TeamTimeout as exc:
        team.log(store, f"pull: {error_text(exc)}; using the copy pulled at {team.read_state(store).get('last_pull')}")
        return {"ok": False, "timeout": True, "error": error_text(exc)}
    except ConsolidateError as exc:
        team.log(store, f"pull failed: {error_text(exc)}")
        team.update_state(store, last_error=f"pull failed: {error_text(exc)}", last_error_at=team.now_iso())
        if isinstance(exc, (EmbeddingMismatch, ConfigError)):
            raise
        return {"ok": False, "timeout": False, "error": error_text(exc)}
    result = _apply_pulled(store, fetched, marks, context)
    result["seconds"] = round(time.perf_counter() - t0, 3)
    team.update_state(store, last_pull=team.now_iso(), last_pull_changes=result["memories"] + result["removed"])
    return result


def _load_local_parts(store) -> None:
    """Import chromadb and load the store's embedding function before a time bound starts: the
    bound is on waiting for the server, not on this machine's start-up."""
    chroma_load.chromadb()
    import chromadb.api.fastapi  # noqa: F401, PLC0415 - heavy (chromadb): loaded only when used

    store.embedder()


def _fetch(store, marks: dict) -> dict[str, Any]:
    """What changed on the team store since the pull of ``marks`` (:func:`ledger.marks`: its cursor):
    the memories whose server version this machine has not seen (their records and embeddings), the
    edge and tombstone records it has not recorded, the clock token read first, and the marks to
    record: ``cursor`` (the latest stamp read), ``newest`` (with the clock record's) and ``now``
    (this machine's clock before the read: the cursor's bound, see "Clocks" above)."""
    client = TeamClient(store)
    started = time.time()
    try:

        clock = client.collection(CLOCK).get(ids=[CLOCK], include=["documents", "metadatas"])  # before the records
        col = client.memories()
        cursor = marks.get("cursor")
        since = {"changed_at": {"$gte": float(cursor) - CURSOR_SKEW}} if isinstance(cursor, (int, float)) else None
        heads = _get_all(col, ["metadatas"], since)
        had = ledger.known(store, [r["id"] for r in heads])
        changed = [r["id"] for r in heads if r["id"] not in had or _unseen(r["metadata"] or {}, had[r["id"]])]
        memories = _get_with_embeddings(store, col, changed) if changed else []
        ecol = client.collection(EDGES)
        edge_heads = _get_all(ecol, ["metadatas"], since)
        known_edges = ledger.known_keys(store, "edges", [_key(r, "removed", REMOVED) for r in edge_heads])
        new_edges = [r["id"] for r in edge_heads if _key(r, "removed", REMOVED) not in known_edges]
        edges = _get(ecol, new_edges, ["documents", "metadatas"]) if new_edges else []
        tcol = client.collection(TOMBSTONES)
        tomb_heads = _get_all(tcol, ["metadatas"], since)
        known_t = ledger.known_keys(store, "tombstones", [_key(r, "lifted", LIFTED) for r in tomb_heads])
        tombstones = [r for r in tomb_heads if _key(r, "lifted", LIFTED) not in known_t]
    except ConsolidateError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise TeamError(explain(exc, client.cfg.url), path=client.cfg.url) from None
    stamps = [float(t) for r in heads + edge_heads + tomb_heads
              if isinstance(t := (r["metadata"] or {}).get("changed_at"), (int, float)) and math.isfinite(t)]
    ahead = [r for r in heads + edge_heads + tomb_heads
             if isinstance(t := (r["metadata"] or {}).get("changed_at"), (int, float)) and t > started + CURSOR_SKEW]
    if ahead:
        origins = sorted({str((r["metadata"] or {}).get("origin") or "?") for r in ahead})
        team.log(store, f"{len(ahead)} team records are stamped more than {CURSOR_SKEW:.0f} s ahead of this machine's"
                 f" clock (written by {', '.join(origins)[:200]}): a clock is wrong; pulls read them again until"
                 " this clock passes them")
    latest = max(stamps + ([float(cursor)] if isinstance(cursor, (int, float)) else []), default=None)
    return {"memories": memories, "edges": edges, "tombstones": tombstones, "scope": client.cfg.project,
            "clock": (clock.get("documents") or [None])[0], "cursor": latest, "now": started,
            "newest": max(stamps + [_clock_stamp(clock)], default=None) or None}


def _key(record: dict, flag: str, suffix: str) -> str:
    """The ledger key of an edge or tombstone record: its id, with ``suffix`` when an undo marked it
    (metadata ``flag``)."""
    return record["id"] + (suffix if (record.get("metadata") or {}).get(flag) else "")


def _get_with_embeddings(store, col, ids: list[str]) -> list[dict[str, Any]]:
    """Records with their embeddings. Chroma's Python server (1.5.9) fails to send embeddings back
    (``'list' object has no attribute 'tolist'``): then the documents are embedded here with the
    store's embedding function, the one the team collection was built with (checked by
    :meth:`TeamClient.memories`), so the vectors are the ones the server holds."""
    try:
        return _get(col, ids, ["documents", "metadatas", "embeddings"])
    except Exception as exc:  # noqa: BLE001
        if "tolist" not in str(exc):
            raise
    rows = _get(col, ids, ["documents", "metadatas"])
    for row, vec in zip(rows, store.embedder().embed([r["document"] or "" for r in rows]) if rows else []):
        row["embedding"] = [float(x) for x in vec]
    return rows


def _node_fields(r: dict) -> dict:
    """The graph memory node's fields of a pulled record (as consolidate.store.graph.memory_lines writes them)."""
    m = r["metadata"] or {}
    return {"type": m.get("type"), "status": m.get("status"), "scope": m.get("scope"),
            "statement": (r["document"] or "")[:300], **({"restates": m["restates"]} if m.get("restates") else {})}


def _apply_pulled(store, fetched: dict, marks: dict, context: bool) -> dict[str, Any]:
    """Write what a pull fetched into the local index, archive, graph and ledger, under the store
    lock. What may have changed locally since the fetch is decided under that lock, not before it:
    memories named by an outbox entry (a run applied meanwhile: its push merges them), and those
    whose ledger already holds a newer version (pushed or pulled meanwhile) are left alone. A
    memory whose version on the server is this machine's own version number written by another
    machine (both wrote version n at once; Chroma has no compare-and-set) lost this machine's write:
    it is queued for a push again (:func:`_requeue_lost`), which merges the two."""
    if not (fetched["memories"] or fetched["edges"] or fetched["tombstones"] or context):
        if any(marks.get(k) != fetched[k] for k in ("clock", "cursor", "newest")):
            ledger.record(store, {}, **{k: fetched[k] for k in ("clock", "cursor", "newest", "now")}, advance=True)
        return {"ok": True, "memories": 0, "removed": 0, "edges": 0, "tombstones": 0}
    machine = (team.load_config(store.path) or team.TeamConfig(url="", project="")).machine
    with store.lock(30):
        mine = team.pending_memory_ids(store)  # under the lock: a run that applied meanwhile is in it
        now = _known(store, [r["id"] for r in fetched["memories"]])  # under the lock: a push meanwhile is in it
        live: list = []
        gone: list = []
        lost: list = []
        for r in fetched["memories"]:
            meta = r["metadata"] or {}
            version, known = int(meta.get("version") or 0), now[r["id"]]
            if r["id"] in mine:
                continue  # a local change waits to be pushed: the push merges the two
            if known[0] and version < known[0]:
                continue  # a newer version was pushed or pulled since this fetch
            if known[0] and version == known[0] and not _unseen(meta, known):
                continue  # this one is here already
            if version == known[0] and (known[1] or "").startswith(machine + ":") and machine:
                lost.append(r)
                continue
            (live if meta.get("status") in LIVE_STATUSES else gone).append(r)
        lt = store.longterm()
        if lost:
            _requeue_lost(store, lt, lost)
        if live:
            lt.upsert([{"id": r["id"], "document": r["document"], "metadata": r["metadata"], "embedding": r["embedding"]}
                       for r in live])

            lift(store, ids={r["id"] for r in live})  # forgotten here, restored on the team store (an undo)
        if gone:

            known_forgotten = {row.get("id") for row in forgotten_rows(store)}
            for r in gone:
                archive.save(store, r["id"], {"document": r["document"], "metadata": r["metadata"]},
                             f"{r['metadata'].get('status')} on the team store", "team-pull")
                if r["metadata"].get("status") == "forgotten" and r["id"] not in known_forgotten:
                    # forgotten on another machine: a session here stating it again is held back too
                    forgotten_append(store, {"id": r["id"], "statement": r["document"], "type": r["metadata"].get("type"),
                                             "run_id": r["metadata"].get("run_id"), "reason": "forgotten on the team store",
                                             "forgotten_at": r["metadata"].get("updated_at") or team.now_iso()})
            lt.delete([r["id"] for r in gone])
        lifted = {t["id"] for t in fetched["tombstones"] if (t["metadata"] or {}).get("lifted")}
        for t in fetched["tombstones"]:
            if t["id"] not in lifted:
                archive.tombstone(store, t["id"], "tombstoned on the team store", (t["metadata"] or {}).get("run_id") or "team")
        if lifted:
            archive.lift_tombstones(store, lifted)  # an undo on another machine lifted them
        if live or gone or fetched["edges"]:
            folder = store.sub(GRAPH)
            g = graph.load(folder)
            for r in live + gone:
                g.add_node(r["id"], **{**g.nodes.get(r["id"], {}), "kind": "memory", **_node_fields(r)})
            for e in fetched["edges"]:
                try:
                    doc = json.loads(e["document"])
                except (TypeError, ValueError):
                    continue
                if doc.get("removed"):  # an undo took it out of the graph
                    if g.has_edge(doc["source"], doc["target"], key=doc["key"]):
                        g.remove_edge(doc["source"], doc["target"], key=doc["key"])
                    continue
                for end in ("source", "target"):
                    node = doc[end]
                    attrs = doc.get(f"{end}_node") or {}
                    if node in g:
                        if g.nodes[node].get("kind") != "memory":
                            g.nodes[node].update(attrs)
                    else:
                        g.add_node(node, **attrs)
                g.add_edge(doc["source"], doc["target"], key=doc["key"], **(doc.get("attrs") or {}))
            for r in gone:  # an undone memory leaves the graph as it left the undoing machine's
                if (r["metadata"] or {}).get("status") == "undone" and r["id"] in g and g.degree(r["id"]) == 0:
                    g.remove_node(r["id"])
            graph.save(g, folder)
        seen = {r["id"]: [int((r["metadata"] or {}).get("version") or 0), (r["metadata"] or {}).get("write_id")]
                for r in live + gone}
        ledger.record(store, seen, {_key(e, "removed", REMOVED) for e in fetched["edges"]},
                      [_key(t, "lifted", LIFTED) for t in fetched["tombstones"]], clock=fetched["clock"],
                      cursor=fetched["cursor"], newest=fetched["newest"], now=fetched["now"], advance=True)
        if live or gone or context:
            context_md.write(store, store.project)
    return {"ok": True, "memories": len(live), "removed": len(gone), "edges": len(fetched["edges"]),
            "tombstones": len(fetched["tombstones"]), "lost_writes": len(lost)}


def _requeue_lost(store, lt, lost: list[dict]) -> None:
    """An outbox entry pushing again this machine's records of memories whose write on the team
    store was overwritten by another machine's write of the same version (found by a pull); the
    push merges the two. A memory no longer in the local index was removed here: its removal is
    pushed again with the status it has in the local archive."""
    here = lt.get([r["id"] for r in lost])
    removed = {}
    for r in lost:
        if r["id"] not in here:
            rec = archive.load(store, r["id"]) or {}
            status = (rec.get("metadata") or {}).get("status") or "archived"
            removed[r["id"]] = {"status": status}
    memories = [r["id"] for r in lost if r["id"] in here]
    run_id = f"repair-{write_id('x').split(':')[1]}"
    team.put_outbox(store, run_id, {"run_id": run_id, "session_id": None, "outcome": "repair",
                                    "created": time.time(), "memories": memories, "removed": removed,
                                    "tombstones": [], "events": []})
    team.log(store, f"{len(lost)} memories written here were overwritten on the team store by another machine's"
             f" write of the same version; queued again as {run_id} (the push merges them)")


# -- init and status ----------------------------------------------------------------------------
def init(store, url: str, project: str, *, tenant: str = "default_tenant", token_env: str | None = None,
         token_file: str | None = None, insecure: bool = False) -> dict[str, Any]:
    """Join ``store`` to the team store of ``project`` at ``url``: check the URL and the token, create
    the project's database and collections when missing, check the embedding, write ``team.json``
    (no token in it) and pull. Raises ConfigError or TeamError (one line); writes nothing then."""
    if token_file:
        team.check_token_file(Path(token_file).expanduser(), store.path)
        token_file = str(Path(token_file).expanduser().resolve())
    cfg = team.TeamConfig(url=url.rstrip("/"), project=project, tenant=tenant, token_env=token_env or team.TOKEN_ENV,
                          token_file=token_file, insecure=insecure)
    if store.chroma_url:
        raise ConfigError("a team store keeps a local index and pushes to the server: drop --chroma-url"
                          " (or $CONSOLIDATE_CHROMA_URL) for this store")
    existing = team.load_config(store.path)
    cfg.machine = existing.machine if existing else ""
    client = bounded(lambda: TeamClient(store, cfg, create=True), 30, "connection")
    bounded(lambda: [client.memories(), client.collection(EDGES), client.collection(TOMBSTONES),
                     client.collection(EVENTS)], 30, "setup")
    team.save_config(store.path, cfg)
    pulled = pull(store, seconds=60, context=True)
    return {"url": cfg.url, "project": cfg.project, "database": cfg.database, "machine": cfg.machine,
            "token": "from $" + cfg.token_env if os.environ.get(cfg.token_env) else
            ("from " + cfg.token_file if cfg.token_file else "none"), "pulled": pulled}


def server_counts(store, seconds: float = 10) -> dict[str, int]:
    """Records on the team store by collection (``sync --status``)."""
    def count():
        client = TeamClient(store)
        return {name: client.collection(name).count() for name in (MEMORIES, EDGES, TOMBSTONES, EVENTS)}

    return bounded(count, seconds, "status")
