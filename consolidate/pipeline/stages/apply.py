"""Stage 10, apply: the only stage that writes.

Order: journal (fsynced) -> Chroma upserts (deterministic ids) and re-confirmations -> graph
(temporary file + rename) -> event log -> notes.md -> session rows cleaned -> queue row finished ->
journal removed. Each step is recorded in the journal when done; a crash is repaired by the next run
replaying the steps not yet done (:func:`replay`), and every step is idempotent, so a replay never
duplicates an entry. The journal's files are consolidate.store.journal's; the replay is here:
:func:`finish_pending` (the caller holds the lock: undo), :func:`recover` (takes it: the queue's drain
and ``doctor --repair``) and :func:`writing` (every locked write: session runs, maintenance plans).
"""

from __future__ import annotations

import contextlib
import json
import os

from consolidate.model.notes_files import note_digest, source_file_of
from consolidate.store.views import context_md, notes_md
from consolidate.store import events as event_log, graph, journal, snapshots
from consolidate.core.faults import crash_point, pause_point
from consolidate.model.plan import run_summary as summary
from consolidate.store.layout import EVENTS, GRAPH, JOURNAL, MEMORY, PREFLIGHT, SNAPSHOTS
from consolidate.rules.redaction import error_text
from consolidate.core.errors import ConsolidateError
from consolidate.core.errors import StoreError
from consolidate.store import graph as _graph_files
from consolidate.core.private import private_file
import json as _json
from consolidate.model.validity import stamp_plan
from consolidate.store import anchors, archive
from consolidate.store.archive import lift_tombstones
from consolidate.store.index.longterm import record_for

# The graph goes before Chroma: a graph file that cannot be read stops the run before the recall
# index changes (the journal keeps the run for a replay once `consolidate doctor --repair` ran).
STEPS = ("snapshot", "graph", "chroma", "anchors", "events", "outbox", "notes_md", "context_md", "session_rows",
         "queue")


def run(plan, ctx):
    """Write the plan. With ``ctx.dry_run`` write nothing at all.

    A failure inside apply (the recall index refusing a write, a disk that fills up) is settled at
    once: before the event log is written the run is rolled back (graph and index restored from the
    undo record, the journal removed; the session end goes back to the queue), after it the run is
    kept in the journal and finished by the next run. Either way StoreError is raised with one line
    naming the cause (exit code 4)."""
    if ctx.dry_run:
        return plan
    preflight(ctx.store)

    stamp_plan(plan)  # valid_to of every entry taken out, before the journal (a replay keeps it)
    journal.write(ctx.store, plan)
    crash_point("apply:journal")
    try:
        _apply_steps(plan, ctx.store, set())
    except StepFailed as failed:
        raise settle_failure(plan, ctx.store, failed) from None
    return plan


#: Steps a failure inside which is rolled back (nothing outside the store's index and graph was
#: written yet); a failure in a later step is rolled forward by the next run's replay.
ROLLBACK_STEPS = ("snapshot", "graph", "chroma")


class StepFailed(Exception):
    """An apply step raised: ``step`` (its name) and ``cause`` (the exception)."""

    def __init__(self, step: str, cause: BaseException):
        super().__init__(step)
        self.step = step
        self.cause = cause


def _cause_text(exc: BaseException) -> str:

    if isinstance(exc, ConsolidateError):
        return error_text(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else "")
    return f"{type(exc).__name__}: {error_text(exc, limit=240) or type(exc).__name__}"


def settle_failure(plan, store, failed: StepFailed):
    """Roll the failed run back (a failure in ROLLBACK_STEPS) or leave it to be rolled forward;
    returns the StoreError to raise (one line: the cause, then what became of the run)."""

    cause = _cause_text(failed.cause)
    if failed.step in ROLLBACK_STEPS:
        try:
            roll_back(store, plan)
        except Exception as exc:  # noqa: BLE001 - the index still refuses: the next run rolls forward
            return StoreError(f"run {plan.run_id} failed ({cause}) and could not be rolled back"
                              f" ({_cause_text(exc)}); it is kept in the journal and the next run finishes it",
                              path=str(store.path), run_id=plan.run_id)
        return StoreError(f"run {plan.run_id} failed and was rolled back, nothing written; the session stays"
                          f" queued: {cause}", path=str(store.path), run_id=plan.run_id)
    return StoreError(f"run {plan.run_id} failed at its {failed.step} step ({cause}); it is kept in the journal"
                      " and the next run finishes it", path=str(store.path), run_id=plan.run_id)


def roll_back(store, plan) -> None:
    """Undo what a run wrote before its event log step: the graph first (it needs no index), then
    the index from the undo record (the run's added entries removed, the overwritten ones restored),
    then the undo record and the journal are removed. When the index refuses, the journal's steps are
    reset to ``snapshot`` (graph and index are redone by the next run's replay) and the error is
    raised."""
    path = snapshots.path_of(store, plan.run_id)
    try:
        record = _json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        record = None
    if record is not None:
        appended = (record.get("graph") or {}).get("append")
        if appended:  # the run's appended lines cut off: nothing was appended after them (store lock)

            _graph_files.truncate_to(store.sub(GRAPH), {k: appended[k][:2] for k in ("nodes", "edges")})
        elif "graph" in journal.done_steps(store, plan.run_id) or record.get("graph"):
            reverse_graph(store, record.get("graph"))
        try:
            lt = store.longterm()
            lt.delete(record.get("added", []))
            before = record.get("before", {})
            current = lt.get(sorted(before))
            changed = {i: r for i, r in before.items()  # only what the failed write did change
                       if (current.get(i) or {}).get("metadata") != r["metadata"]
                       or (current.get(i) or {}).get("document") != r["document"]}
            lt.restore(changed)  # exactly: a key the failed write added goes too (as undo restores)
        except Exception:
            journal.reset_steps(store, plan.run_id, ["snapshot"])
            raise
        lift_tombstones(store, set(record.get("tombstoned", [])))
        path.unlink(missing_ok=True)
    journal.clear(store, plan.run_id)


#: Bytes written (then removed) in each folder before a run writes anything: a read-only or nearly
#: full store fails here, before the first write, instead of halfway through.
PREFLIGHT_BYTES = 256 * 1024


def preflight(store) -> None:
    """Check that every folder apply writes to can take a write. Raises StoreError (one line) when
    one cannot: read-only, full, or a file where a folder should be."""

    for entry in (JOURNAL, EVENTS, GRAPH, MEMORY, SNAPSHOTS):
        name, folder = entry.name, store.sub(entry)
        probe = folder / PREFLIGHT.name
        try:

            with private_file(probe, "wb") as f:
                f.write(b"\0" * PREFLIGHT_BYTES)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise StoreError(f"store {store.path} cannot be written ({name}/: {exc.strerror or exc});"
                             " nothing was changed", path=str(store.path)) from None
        finally:
            try:
                probe.unlink()
            except OSError:
                pass
    if store.events_path.exists() and not store.events_path.is_file():
        raise StoreError(f"{store.events_path} is not a file; nothing was changed", path=str(store.events_path))


def replay(store) -> list[str]:
    """Finish every run left in the journal; returns their run ids. Raises StoreError (one line)
    when a step still fails; the run stays in the journal."""

    done = []
    for plan in journal.pending(store):
        try:
            _apply_steps(plan, store, journal.done_steps(store, plan.run_id), replayed=True)
        except StepFailed as failed:
            raise StoreError(f"run {plan.run_id} left in the journal cannot be finished yet: its {failed.step}"
                             f" step failed ({_cause_text(failed.cause)}); it stays in the journal",
                             path=str(store.path), run_id=plan.run_id) from None
        done.append(plan.run_id)
    return done


def finish_pending(store) -> list[str]:
    """Finish the runs a crash left in the journal; returns their run ids (none: ``[]`` at once).
    The caller holds the store lock. Raises StoreError when a step still fails (the run stays in the
    journal; :func:`replay`)."""
    if not journal.has_pending(store):
        return []
    return replay(store)


def recover(store, lock_timeout: float = 60.0) -> list[str]:
    """:func:`finish_pending` under the store lock, taken within ``lock_timeout`` seconds and only
    when the journal holds a run; returns the run ids. Raises StoreLocked when the lock is not free
    in time, StoreError like :func:`finish_pending`."""
    if not journal.has_pending(store):
        return []
    with store.lock(lock_timeout):
        return finish_pending(store)


@contextlib.contextmanager
def writing(store, lock_timeout: float = 60.0):
    """Hold the store lock for a write (taken within ``lock_timeout`` seconds; StoreLocked when it is
    not free), having first finished the runs a crash left in the journal (:func:`finish_pending`),
    so every write applies on top of a whole store: session runs (consolidate.pipeline.run) and
    maintenance plans."""
    with store.lock(lock_timeout):
        finish_pending(store)
        yield


def _apply_steps(plan, store, done: set[str], replayed: bool = False) -> None:
    writes = plan.writes()
    durable = [c for c in writes if c.tier == "durable"]
    touches_index = bool(durable or plan.reconfirmations or plan.updates)
    for step in STEPS:
        if step in done:
            continue
        try:
            _one_step(step, plan, store, writes, durable, touches_index, replayed)
        except Exception as exc:  # noqa: BLE001 - settled by the caller (roll back or forward)
            raise StepFailed(step, exc) from exc
        crash_point(f"apply:{step}")
        journal.mark(store, plan.run_id, step)
        pause_point(f"apply:{step}:marked")
    journal.clear(store, plan.run_id)


def _one_step(step, plan, store, writes, durable, touches_index, replayed) -> None:
    if step == "snapshot" and touches_index:
        snapshots.take(store, plan, durable)
    elif step == "chroma" and touches_index:
        _chroma(plan, store, durable)
    elif step == "graph" and touches_index:
        _graph(plan, store, durable)
    elif step == "anchors" and touches_index:
        _anchors(plan, store, durable)
    elif step == "events":
        _events(plan, store, writes, replayed)
    elif step == "outbox":
        _outbox(plan, store, writes)
    elif step == "notes_md" and writes:
        _notes_md(plan, store, writes)
    elif step == "context_md" and touches_index:
        context_md.write(store, plan.scope, touched=_touched_ids(plan, durable), run_id=plan.run_id)
    elif step == "session_rows":
        _session_rows(plan, store)
    elif step == "queue":  # a replayed run says so in its summary (consolidate.model.report.run_notices)
        store.sessions.finish(plan.session_id, _queue_status(plan), plan.run_id,
                              {**summary(plan), **({"replayed": True} if replayed else {})})


def _chroma(plan, store, durable) -> None:
    lt = store.longterm()
    dead = archive.tombstones(store)
    durable = [c for c in durable if c.memory_id not in dead]  # a late write never revives a tombstone
    missing = [c for c in durable if c.embedding is None]
    if missing:
        for c, vec in zip(missing, lt.embed([c.statement for c in missing])):
            c.embedding = list(vec)
    lt.upsert([record_for(c, plan.scope) for c in durable])
    for r in plan.reconfirmations:
        lt.update_metadata(r.memory_id, {"confidence": r.confidence, "last_confirmed": r.last_confirmed,
                                         "status": r.status})
    for u in plan.updates:
        if u.action == "update":
            lt.update_metadata(u.memory_id, u.changes)
            continue
        current = lt.get([u.memory_id]).get(u.memory_id)
        if current is not None:
            current["metadata"] = {**current["metadata"], **u.changes}
            archive.save(store, u.memory_id, current, u.reason, plan.run_id)
            lt.delete([u.memory_id])
        if u.action == "tombstone":
            archive.tombstone(store, u.memory_id, u.reason, plan.run_id)


def _outbox(plan, store, writes) -> None:
    """A store with a replica (a team: consolidate/store/replica.py): the run's entry in its outbox,
    pushed after the run."""
    replica = store.replica()
    if replica is not None:
        replica.outbox(plan, writes)


def _anchors(plan, store, durable) -> None:
    """Code anchors of the written entries into manifest.json (and of entries re-anchored by a
    re-judge); archived entries leave it (consolidate.store.anchors)."""
    anchored = {c.memory_id: c.anchors for c in durable if c.anchors}
    for u in plan.updates:
        if u.action == "update" and "anchors" in u.changes:
            anchored[u.memory_id] = json.loads(u.changes["anchors"] or "[]")
    removed = [u.memory_id for u in plan.updates if u.action in ("archive", "tombstone")]
    anchors.record(store, anchored, removed)


def _graph(plan, store, durable) -> None:
    """Append the run's nodes and edges to the graph files (consolidate.store.graph.append: the graph is
    never loaded here) and record where its lines are in the undo record, from which undo and a
    roll back recover the diff (consolidate.store.snapshots.record_graph_append)."""
    folder = store.sub(GRAPH)
    nodes: list[dict] = []
    edges: list[dict] = []
    dead = archive.tombstones(store) - {u.memory_id for u in plan.updates if u.action == "tombstone"}
    for c in durable:
        if c.memory_id not in dead:
            n, e = graph.memory_lines(c, plan.scope)
            nodes += n
            edges += e
    for r in plan.reconfirmations:
        session = "session:" + r.session_id
        nodes.append({"id": session, "kind": "session"})
        nodes.append({"id": r.memory_id, "status": r.status, graph.IF: r.memory_id})
        edges.append({"source": r.memory_id, "target": session, "key": "derived_from", "kind": "derived_from",
                      "run_id": plan.run_id, graph.IF: r.memory_id})
    for u in plan.updates:
        if u.action != "update":
            nodes.append({"id": u.memory_id, "status": u.changes.get("status", "archived"), graph.IF: u.memory_id})
        elif "status" in u.changes:
            nodes.append({"id": u.memory_id, "status": u.changes["status"], graph.IF: u.memory_id})
        for source, kind in u.edges:
            edges.append({"source": source, "target": u.memory_id, "key": kind, "kind": kind, "run_id": plan.run_id,
                          graph.IF: u.memory_id})
    starts = graph.positions(folder)
    snapshots.record_graph_append(store, plan.run_id, starts, None)
    ends = graph.append(folder, nodes, edges)
    snapshots.record_graph_append(store, plan.run_id, starts, ends)


def _events(plan, store, writes, replayed: bool) -> None:
    """Append the run's event lines (consolidate/store/events.py; idempotent on a replay)."""
    event_log.append_run(store, plan, writes, replayed)


def _notes_md(plan, store, writes) -> None:
    """Append the run's block to ``memory/notes.md`` (consolidate/store/views/notes_md.py; idempotent)."""
    notes_md.append_run(store, plan, writes)


def _touched_ids(plan, durable) -> list[str]:
    """The memory ids a run wrote, re-confirmed or updated (what can move in the context's top)."""
    return list(dict.fromkeys([c.memory_id for c in durable] + [r.memory_id for r in plan.reconfirmations]
                              + [u.memory_id for u in plan.updates]))


def _queue_status(plan) -> str:
    """The session end's status after the run: ``partial`` when notes wait for a judge."""
    if plan.outcome != "success":
        return plan.outcome
    return "partial" if plan.waiting else "done"


def _session_rows(plan, store) -> None:
    ids = set(plan.delete_note_ids)
    if plan.outcome == "success":
        # judged notes go with the session; notes no judge answered wait for one (consolidate/pipeline/deferral.py)
        waiting = {w["note_id"] for w in plan.waiting}
        ids |= {n.id for n in plan.notes if n.id not in waiting}
        store.sessions.set_waiting(plan.session_id, {w["note_id"]: (w["since"], w["until"], w["reasons"])
                                                     for w in plan.waiting})
    else:  # a failed session keeps its rows: the ones holding secrets are kept redacted
        store.sessions.redact_notes({n.id: (n.content, n.metadata) for n in plan.notes
                                     if plan.note_status.get(n.id) == "blocked"})
    store.sessions.delete_notes(sorted(ids))
    if plan.notes_files and plan.outcome == "success":  # the snapshots are applied (the files' state stays)
        added: dict[str, list[str]] = {}
        for n in plan.notes:
            if (f := source_file_of(n.metadata)) is not None:
                added.setdefault(f, []).append(note_digest(n.content))
        store.sessions.settle_notes_files(plan.session_id, plan.scope, plan.run_id, added)


def reverse_graph(store, diff: dict | None, loaded=None, keep: set[str] | frozenset[str] = frozenset()) -> dict | None:
    """Reverse the run's graph diff and rewrite the graph files; ``loaded``: the graph as the files
    hold it now, when the caller has it; ``keep``: nodes left as they are (entries the undo leaves as a
    later run left them: consolidate/pipeline/undo.py). Returns the diff reversed (None: there was none)."""
    if not diff:
        return None
    if "append" in diff:  # lines appended by the run: every such record becomes a diff before the rewrite
        diff = snapshots.settle_graph_appends(store).get(diff["append"].get("run_id"))
        if not diff:
            return None
    else:
        snapshots.settle_graph_appends(store)
    folder = store.sub(GRAPH)
    g = loaded if loaded is not None else graph.load(folder)
    for u, v, k in diff.get("added_edges", []):
        if g.has_edge(u, v, key=k):
            g.remove_edge(u, v, key=k)
    for node, attrs in diff.get("changed_nodes", {}).items():
        if node in g and node not in keep:
            g.nodes[node].clear()
            g.nodes[node].update(attrs)
    for node in diff.get("added_nodes", []):
        if node in g and g.degree(node) == 0:
            g.remove_node(node)
    graph.save(g, folder)
    return diff
