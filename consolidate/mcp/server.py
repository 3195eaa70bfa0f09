"""``consolidate mcp``: the session tools for any MCP-speaking agent, over stdio.

Built on the ``mcp`` package 2.x (``mcp.server.mcpserver.MCPServer``). Tools:

- ``note(content, flag, ttl, kind, session_id)`` writes one working note; returns its id (for a
  flagged note, ``{"id", "policy"}``: what the write policy says about it, note_policy.py).
- ``session_read(session_id, path)`` returns the session's id, notes, its queued end and its
  workspace, if any; with ``path``, a file or folder of its workspace.
- ``recall(query, k, include_quarantined, min_similarity, as_of)`` returns the best memories (hybrid:
  meaning and exact identifiers, consolidate/pipeline/recall.py), each rendered with its suffix (``Use pnpm,
  not npm [high, user-stated, 2026-07]``), its id and how it was found (``match``).
- ``session_complete(outcome, reason, ephemeral, session_id)`` records the session end in the queue
  (after the workspace's share of the outcome, see ``consolidate.pipeline.workspace``) and returns at once:
  it never runs the pipeline inline. A worker consolidates the queue (started here when one
  is available, else by the next hook, ``consolidate worker`` or ``consolidate run``).

- ``graph(entity, depth)`` the entity's relations (depends_on, uses, ...) and the memories behind
  them, as ``consolidate graph ENTITY --json`` (consolidate.store.graph.relations_of).
- ``forget(memory_id, reason)`` archives a wrong memory with a tombstone (consolidate.pipeline.forget).
- ``review_list``, ``review_approve``, ``review_decline``, ``review_edit``: the review queue
  (``consolidate.mcp.review_tools``).
- ``session_start``, ``session_write``, ``session_append``, ``session_extract``: the agent
  workspace (``consolidate.mcp.workspace_tools``).

Bad input (an empty note, an unknown outcome, a bad TTL) comes back as a tool error whose text is the
one-line message of the ConsolidateError, never a traceback.

All store access runs on one dedicated thread that owns the Store (its SQLite connection and, on
first recall, its Chroma client), so calls are serialized and never block the event loop. This
module imports ``mcp``: only ``consolidate mcp`` imports it, never the hook's fast path.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import traceback
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Annotated, Any, Callable

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from consolidate import __version__
from consolidate.core.errors import ConsolidateError
from consolidate.core.spawn import spawn_worker
from consolidate.rules.redaction import error_text, redacted
from consolidate.pipeline.recall import MIN_SIMILARITY
from consolidate.store.sessions.segments import resumed_part
from consolidate.store.sessions.tier import check_session_id
from consolidate.store.store import Store
from consolidate.core.vocab import SESSION_OUTCOMES
from consolidate.store.layout import GRAPH, WORKER_LOG
from consolidate.store.views import shown as agent_view
from consolidate.store.sessions.tier import check_kind
from consolidate.core.errors import StoreReadOnly
from consolidate.core.errors import BadInput
from consolidate.mcp.errors import OneLineErrorServer
from consolidate.mcp.review_tools import register as register_review_tools
from consolidate.mcp.stdio import serve_stdio
from consolidate.mcp.workspace_tools import complete_part, read_part, register as register_workspace_tools
from consolidate.model.report import run_notices
from consolidate.pipeline.forget import forget as forget_memory
from consolidate.pipeline.recall import recall
from consolidate.rules.note_policy import check_note
from consolidate.store.graph import load, relations_of
from consolidate.store.index.longterm import RECALLED
from consolidate.store.relations import entity_name
from consolidate.store.sessions.agents import current_session

log = logging.getLogger("consolidate.mcp")

SERVER_NAME = "consolidate"
INSTRUCTIONS = (
    "Working memory for this project. While you work, write short notes with `note` (flag=true for a "
    "keeper you are sure of: a decision with its reason, a gotcha that just bit; ttl for temporary "
    "values such as a port). Leave session_id empty: your notes go to the current session, which is "
    "consolidated when it ends (by the session-end hook, or call `session_complete` with its "
    "outcome). On success the notes worth keeping graduate into long-term memory, which `recall` searches. "
    "For a longer task, `session_start` gives a workspace: read context/, keep scratch files in working/, "
    "write what deserves to be remembered to output/ (one Markdown list item per memory), then "
    "`session_complete`."
)
#: Largest ``k`` a recall may ask for.
MAX_K = 50

#: ``spawn`` argument of :func:`build_server`: "auto" starts the worker the project provides.
AUTO = "auto"


def note_answer(s: Store, sid: str, note_id, content: str, *, flag: bool, kind: str | None) -> int | str | dict[str, Any]:
    """The note tool's answer for ``note_id`` just written to ``sid``: the id; the secret gate's line
    when it redacted the note; else ``{"id", "policy"?, "ended"?, "secret"?}`` with the write policy's
    line and ``ended``: the line ``consolidate note`` prints when the session already ended
    (SessionTier.ended_hint owns it)."""
    notice = getattr(note_id, "notice", None)
    policy = note_policy_line(content, flag=flag, kind=kind, blocked=bool(notice))
    ended = s.sessions.ended_hint(sid)
    if policy or ended:
        return {"id": int(note_id), **({"policy": policy} if policy else {}),
                **({"ended": ended} if ended else {}), **({"secret": notice} if notice else {})}
    return notice or int(note_id)


def note_policy_line(content: str, *, flag: bool, kind: str | None, blocked: bool = False) -> str | None:
    """The write policy's one-line answer for a note just written (note_policy.check_note); ``blocked``:
    the secret gate redacted it."""
    return check_note(content, flag=bool(flag), kind=check_kind(kind or None), blocked=blocked)


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).isoformat(timespec="seconds")


def _one_line(exc: BaseException, limit: int = 300) -> str:
    one = error_text(exc)
    return one if len(one) <= limit else one[: limit - 1] + "…"


def tool_error(exc: Exception) -> ToolError:
    """The ToolError a client is sent for ``exc``, a tool's failure: a ConsolidateError's one-line
    message; for any other exception ``internal error: <class>: <message>`` (cut to 300 characters),
    its traceback logged on stderr. Both pass the secret gate (consolidate.rules.redaction)."""
    if isinstance(exc, ConsolidateError):
        return ToolError(error_text(exc))
    log.error("tool failed: %s", redacted("".join(traceback.format_exception(exc)).rstrip()))
    return ToolError(f"internal error: {type(exc).__name__}: {_one_line(exc)}")


def find_spawner(judges: list[str] | None = None) -> tuple[Callable[[Store], Any] | None, str]:
    """The function that starts a detached worker for a store, and its name: the one starter
    (``consolidate.core.spawn.spawn_worker``) with the store's options (Chroma URL, project,
    embedding) and ``judges`` on the worker's command line, so the worker opens the same store the
    same way."""
    def spawn(store: Store) -> int:
        options = {"chroma_url": store.chroma_url, "project": store.project,
                   "embedding": store.embedding_name, "judges": list(judges or ())}
        return spawn_worker(store.path.resolve(), options, log=store.sub(WORKER_LOG).resolve())

    return spawn, "consolidate.core.spawn.spawn_worker"


def recall_result(s: Store, query: Any, *, k: Any, include_quarantined: bool, min_similarity: Any,
                  session_id: str | None = None, as_of: str | None = None) -> dict[str, Any]:
    """The MCP ``recall`` answer from the shared :func:`consolidate.pipeline.recall.recall`, as the
    agent view shows it (consolidate/store/views/shown.py: the recall applied it; the lines are the
    ``mcp-recall`` surface's)."""

    result = recall(s, query, k=k, min_similarity=min_similarity, include_quarantined=include_quarantined,
                    max_k=MAX_K, shown_to=session_id, as_of=as_of or None)
    safe = result.memories  # MCP output goes straight into the model's context: the guard held some back
    held = len(result.held_back)
    memories = [{"id": h["id"], "text": agent_view.line(h["document"], h["metadata"], "mcp-recall"),
                 "type": h["metadata"].get("type"), "status": h["metadata"].get("status"),
                 "similarity": round(float(h["similarity"]), 4), "match": h.get("match", "vector"),
                 **({"via": h["via"]} if h.get("via") else {})} for h in safe]
    out: dict[str, Any] = {"count": len(memories), "memories": memories, "below_floor": result.below_floor}
    if held:
        out["held_back"] = held
        out["held_back_note"] = result.held_line
    if result.note:
        out["note"] = result.note
    return out


def _current_or_none(s: Store) -> str | None:
    """The current agent session, or None (what a recall's output is recorded against)."""
    try:
        return current_session(s.sessions)[0]
    except Exception:  # noqa: BLE001 - recording an echo never fails a recall
        return None


def own_session_id(now: float | None = None) -> str:
    """The MCP server's own session id, used when no agent session is current:
    ``mcp-<UTC time>-<pid>``."""
    stamp = _dt.datetime.fromtimestamp(now, _dt.timezone.utc) if now else _dt.datetime.now(_dt.timezone.utc)
    return f"mcp-{stamp.strftime('%Y%m%dT%H%M%SZ')}-{os.getpid()}"


def resolve_session(s: Store, session_id: str | None, own_id: str) -> str:
    """The session a tool call is about: ``session_id`` when given (BadInput when blank or bad; an
    agent session resumed after its end means its open resumed part, consolidate/store/sessions/segments.py);
    else the store's current agent
    session (recorded by the SessionStart hook, see consolidate.store.sessions.agents); else ``own_id``."""
    if session_id is not None and session_id != "":  # "" is how some clients leave an option out
        return resumed_part(s.sessions, check_session_id(session_id))

    try:
        current, _how = current_session(s.sessions)
    except StoreReadOnly:  # a read-only store that never recorded a session start: there is none
        current = None
    return current or own_id


def close_own_session(s: Store, own_id: str) -> bool:
    """When the server closes: queue the end (success) of its own session if it has notes and no
    end yet; returns whether it did."""
    if s.sessions.count(own_id) and s.sessions.session_end(own_id) is None:
        s.sessions.end(own_id, "success", "MCP server closed")
        return True
    return False


class StoreThread:
    """Runs functions of the store on one dedicated thread that opens (and later closes) the Store.

    ``open_store`` is called on that thread on first use. ``start``/``stop`` are reference
    counted, so one server object can serve several connections in turn (tests)."""

    def __init__(self, open_store: Callable[[], Store]):
        self._open = open_store
        self._store: Store | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._users = 0

    def start(self) -> None:
        self._users += 1
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="consolidate-store")

    def stop(self) -> None:
        self._users = max(0, self._users - 1)
        if self._users or self._pool is None:
            return
        pool, self._pool = self._pool, None
        pool.submit(self._close).result()
        pool.shutdown(wait=True)

    def _close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def _call(self, fn: Callable[[Store], Any]) -> Any:
        if self._store is None:
            self._store = self._open()
        return fn(self._store)

    async def run(self, fn: Callable[[Store], Any]) -> Any:
        """``fn(store)`` on the store thread. A ConsolidateError becomes a ToolError with its one-line
        message; any other exception is logged (with its traceback, on stderr) and reported in one
        line. The answer goes into the model's context: each of its strings written as the agent view
        writes it (consolidate.store.views.shown.json_answer: bidi and control characters visible)."""
        if self._pool is None:
            self.start()
        assert self._pool is not None  # start() made it
        future = self._pool.submit(self._call, fn)
        try:
            got = await anyio.to_thread.run_sync(future.result)
        except Exception as exc:  # noqa: BLE001 - a tool never answers with a traceback
            raise tool_error(exc) from None
        return agent_view.json_answer(got)  # into the model's context: every string as the agent view writes it


def build_server(store: Store | Callable[[], Store] | None = None, *,
                 spawn: Callable[[Store], Any] | str | None = AUTO, judges: list[str] | None = None) -> MCPServer:
    """The MCP server over one store.

    ``store`` is a Store (the server opens its own Store on the same folder with the same settings),
    a callable returning a Store, or None for the one consolidate/store/resolve.py picks. ``spawn`` is
    called with the store after ``session_complete`` queues a session end, to start a detached
    worker: ``"auto"`` finds the project's (see :func:`find_spawner`; it gets ``judges``), None
    starts nothing.

    A tool call without ``session_id`` is about the current agent session (:func:`resolve_session`);
    when there is none, the server's own session, whose end is queued when the server closes."""
    if isinstance(store, Store):
        path, chroma_url, embedding, project = store.path, store.chroma_url, store.embedding_name, store.project

        def open_store() -> Store:
            return Store(path, chroma_url=chroma_url, embedding=embedding, project=project)
    elif store is None:
        open_store = Store
    else:
        open_store = store
    backend = StoreThread(open_store)
    own_id = own_session_id()
    own_used: list[bool] = []  # set once a note went to the server's own session
    if spawn == AUTO:
        spawner, spawner_name = find_spawner(judges)
    elif spawn is None:
        spawner, spawner_name = None, "worker start disabled"
    elif callable(spawn):
        spawner, spawner_name = spawn, getattr(spawn, "__name__", "spawn")
    else:
        raise ValueError(f"spawn must be a callable, None or {AUTO!r}")

    @asynccontextmanager
    async def lifespan(_server):
        backend.start()
        try:
            yield {}
        finally:
            try:
                if own_used and await backend.run(lambda s: close_own_session(s, own_id)) and spawner is not None:
                    await backend.run(spawner)
            except Exception as exc:  # noqa: BLE001 - closing never fails the client
                log.warning("could not queue the end of session %s: %s", own_id, error_text(exc))
            await anyio.to_thread.run_sync(backend.stop)

    server = OneLineErrorServer(SERVER_NAME, instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING", version=__version__)

    @server.tool()
    async def note(
        content: Annotated[str, Field(description="The note: one fact, decision (with its reason), "
                                                  "gotcha, recipe or failure, in plain words.")],
        flag: Annotated[bool, Field(description="True when you already know this is worth keeping "
                                                "(promoted without a judge).")] = False,
        ttl: Annotated[str | None, Field(description="Expire the note after this long: 20m, 2h, 1d "
                                                     "(for temporary values such as a port).")] = None,
        kind: Annotated[str | None, Field(description="decision, constraint, preference, recipe, "
                                                      "failure or fact")] = None,
        session_id: Annotated[str | None, Field(description="Leave empty: the current agent session (recorded by the "
                                                          "SessionStart hook) is used. Give an id only to "
                                                          "write to another session.")] = None,
    ) -> int | str | dict[str, Any]:
        """Write one working note to the session's scratch tier; returns the note's id. A note that held
        secret material is stored redacted: the answer is then one line saying so (with the id). For a
        flagged note, returns ``{"id": note id, "policy": one line}`` (and ``"secret"``: that line, when
        it was redacted): what the write policy says about it now (the type it is kept as, missing
        fields, trivia), so you can rewrite it while you know the context. A note written to a session that
        already ended and was consolidated returns the dict with ``"ended"``: one line saying so."""
        def write(s: Store) -> int | str | dict[str, Any]:
            sid = resolve_session(s, session_id, own_id)
            note_id = s.sessions.add_note(sid, content, flag=flag, ttl=ttl or None, kind=kind or None)
            if sid == own_id and not own_used:
                own_used.append(True)
            return note_answer(s, sid, note_id, content, flag=flag, kind=kind)

        return await backend.run(write)

    @server.tool()
    async def session_read(
        session_id: Annotated[str | None, Field(description="Leave empty: the current agent session (recorded by the "
                                                          "SessionStart hook) is used. Give an id only to "
                                                          "write to another session.")] = None,
        path: Annotated[str | None, Field(description="A file or folder of the session's workspace "
                                                      "(e.g. context/memories.md); omit for the notes.")] = None,
    ) -> dict[str, Any]:
        """The session's id, its notes, oldest first, its recorded end (None while it is open) and its
        workspace (None without one); with ``path``, that workspace file's text or folder's listing."""
        def read(s: Store) -> dict[str, Any]:
            sid = resolve_session(s, session_id, own_id)
            if path is not None and path.strip():
                return {"session_id": sid, **(read_part(s, sid, path) or {})}  # (a dict, given a path)
            now = _dt.datetime.now(_dt.timezone.utc).timestamp()
            notes = [{"id": n.id, "content": n.content, "flag": n.flag, "kind": n.kind,
                      "created_at": _iso(n.created_at), "expires_at": _iso(n.expires_at),
                      "expired": n.expires_at is not None and n.expires_at <= now}
                     for n in s.sessions.notes(sid)]
            end = s.sessions.session_end(sid)
            if end is not None:
                end = {k: (_iso(v) if k == "ended_at" else v) for k, v in end.items()
                       if k in ("outcome", "reason", "ended_at", "status", "run_id", "result")}

                end["notices"] = run_notices(end.get("result"))  # the run report's own lines, as `run` says them
            return {"session_id": sid, "count": len(notes), "notes": notes, "end": end,
                    "workspace": read_part(s, sid, None)}

        return await backend.run(read)

    @server.tool()
    async def recall(
        query: Annotated[str, Field(description="What you want to know, in plain words, or an exact "
                                                "identifier (a version, flag, file name, error code, ticket).")],
        k: Annotated[int, Field(description=f"How many memories, 1 to {MAX_K}.")] = 5,
        include_quarantined: Annotated[bool, Field(description="Also return quarantined and disputed entries "
                                                               "(low-confidence single observations).")] = False,
        min_similarity: Annotated[float, Field(description="Leave out memories less similar than this "
                                                           "(cosine, -1 to 1).")] = MIN_SIMILARITY,
        as_of: Annotated[str | None, Field(description="A date (2026-07-14): the memories valid then, those "
                                                       "superseded since included and marked.")] = None,
    ) -> dict[str, Any]:
        """Hybrid search over long-term memory (meaning and exact words; the same search as
        ``consolidate recall``): each memory rendered with its suffix ``[confidence, evidence, month
        last confirmed]``, its id, type, status, similarity and ``match`` (vector, lexical: an exact
        identifier or all the words, even below ``min_similarity``, or both; graph: it states a relation of
        an entity the query names, with ``via`` the relation); ``below_floor`` counts
        nearer ones under ``min_similarity``; ``note`` says when the best match is a quarantined
        entry left out; ``as_of``: the memories valid on that date (superseded ones marked
        ``[superseded DATE]``)."""
        def search(s: Store) -> dict[str, Any]:
            replica = s.replica()
            team_line = replica.recall_line() if replica is not None else ""  # a team: its fresh memories first (bounded)
            out = recall_result(s, query, k=k, include_quarantined=include_quarantined,
                                min_similarity=min_similarity, session_id=_current_or_none(s), as_of=as_of)
            if team_line:
                out["team"] = team_line
            return out

        return await backend.run(search)

    @server.tool()
    async def session_complete(
        outcome: Annotated[str, Field(description="success: consolidate the notes; failure: promote "
                                                  "nothing, record why; aborted: touch nothing (the "
                                                  "session can be resumed with the same id).",
                                      json_schema_extra={"enum": list(SESSION_OUTCOMES)})],
        reason: Annotated[str | None, Field(description="Why the session ended (kept in the audit "
                                                        "log for a failure).")] = None,
        ephemeral: Annotated[bool, Field(description="On failure, also remove the session's workspace.")] = False,
        session_id: Annotated[str | None, Field(description="Leave empty: the current agent session (recorded by the "
                                                          "SessionStart hook) is used. Give an id only to "
                                                          "write to another session.")] = None,
    ) -> dict[str, Any]:
        """Record the session end in the queue and return at once; a background worker consolidates
        it. Completing the same session again replaces its outcome while it is still queued. Any
        session id is taken, with or without notes (an agent's session that wrote nothing still
        ended; a failure is still recorded), as the hooks do; ``consolidate end``, typed by a
        person, refuses an id with no notes, no end and no workspace (exit 3). A session already
        consolidated as a failure is refused (use a new session id)."""
        def complete(s: Store) -> dict[str, Any]:
            sid = resolve_session(s, session_id, own_id)
            if outcome not in SESSION_OUTCOMES:
                s.sessions.end(sid, outcome, reason or None)  # raises the one-line BadInput
            ws = complete_part(s, sid, outcome, reason or None, ephemeral)
            s.sessions.end(sid, outcome, reason or None)
            result = {"session_id": sid, "outcome": outcome, "notes": s.sessions.count(sid), "status": "queued"}
            if not result["notes"] and ws is None:
                result["note"] = (f"session {sid} has no notes: its end is recorded ({outcome}), nothing will be"
                                  " consolidated")
            if ws is not None:
                result["workspace"] = ws
            if spawner is None:
                result["worker"] = "not started"
                result["message"] = (f"queued; no worker was started ({spawner_name}): it will be consolidated "
                                     "by the next session-end hook, `consolidate worker` or `consolidate run`")
                return result
            try:
                spawner(s)
            except Exception as exc:  # noqa: BLE001 - the session end is queued whatever happens
                log.warning("could not start a worker: %s", error_text(exc))
                result["worker"] = "failed to start"
                result["message"] = (f"queued, but the worker could not be started ({type(exc).__name__}: "
                                     f"{_one_line(exc)}); `consolidate run` will consolidate it")
                return result
            result["worker"] = "started"
            result["message"] = "queued; a background worker is consolidating it"
            return result

        return await backend.run(complete)

    register_workspace_tools(server, backend)
    register_forget(server, backend)

    register_review_tools(server, backend)
    return server


def graph_result(s: Store, entity: Any, depth: Any) -> dict[str, Any]:
    """The MCP ``graph`` answer: consolidate.store.graph.relations_of for ``entity`` (BadInput for an
    empty name or a depth outside 1..5). Like recall's, only active and disputed memories count and their
    statements pass the context guard."""
    name = entity_name(entity)
    if not name:
        raise BadInput("empty entity name: give the name of a package, module, service or file")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 5:
        raise BadInput(f"bad depth {depth!r}: use 1 to 5")
    if not s.exists:
        return {"entity": name, "found": False, "relations": [], "memories": {}}

    res = relations_of(load(s.sub(GRAPH)), name, depth, statuses=RECALLED)  # what recall shows an agent
    return agent_view.graph_view(res, s)  # the agent view (consolidate/store/views/shown.py)


def register_forget(server: MCPServer, backend: StoreThread) -> None:
    """The ``forget`` tool (consolidate.pipeline.forget): archive a wrong memory with a tombstone."""

    @server.tool()
    async def graph(
        entity: Annotated[str, Field(description="A package, module, service or file name, as memories name it "
                                                 "(case and Unicode form do not matter).")],
        depth: Annotated[int, Field(description="Follow relations this many hops, 1 to 5.")] = 1,
    ) -> dict[str, Any]:
        """How an entity relates to others (depends_on, uses, part_of, replaces, conflicts_with), from the
        relations judges read in the memories, and the active or disputed memories behind each relation (as
        ``consolidate graph ENTITY --json`` answers); ``found`` is false for a name the graph does
        not hold."""
        return await backend.run(lambda s: graph_result(s, entity, depth))

    @server.tool()
    async def forget(
        memory_id: Annotated[str, Field(description="The memory's id, as `recall` returns it.")],
        reason: Annotated[str | None, Field(description="Why it is wrong (kept in the event log).")] = None,
    ) -> dict[str, Any]:
        """Forget a wrong memory: it leaves recall, and the same statement written by a later session is
        not brought back unless the user states it again or the note is flagged. `consolidate undo
        RUN_ID` (the run id returned) restores it."""
        def run(s: Store) -> dict[str, Any]:
            return forget_memory(s, memory_id, reason)

        return await backend.run(run)


def serve(store: Store | Callable[[], Store] | None = None, *, judges: list[str] | None = None) -> None:
    """Run the server over stdio until the client closes its stdin and every request read has its
    reply (consolidate.mcp.stdio, which also answers lines that are no JSON-RPC message); ``judges``
    go to the workers it starts."""
    anyio.run(serve_stdio, build_server(store, judges=judges))
