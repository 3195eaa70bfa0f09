"""Every path and lock file of a store folder (default ``./.memofs/``), in one place (issue 27 item 3).

No other module names an entry of the store folder: each goes through the :class:`Entry` constants
below (``store.sub(GRAPH)``, ``store.sub(SNAPSHOTS, f"{run_id}.json")``, ``HOOK_LOG.join(store)``),
and :data:`ENTRIES` lists them all, in the order of the folder's description in docs/design.md. The
standard library only (``os``), so the light hook paths (consolidate/agents/hooks/fast.py,
consolidate/store/views/start_file.py) import it as well.

tests/unit/store/test_store_layout.py checks that no string literal naming a store entry appears outside this
module, and that a store made by the CLI holds exactly the entries listed here.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported at run time: the light hook imports this module
if TYPE_CHECKING:
    from pathlib import Path

#: Kinds of entries: a file; a lock file (filelock's, or a marker beside one); a folder whose
#: entries are listed here; a folder whose content belongs to another program or module (Chroma's
#: persistent store, a workspace) and is not listed entry by entry.
FILE, LOCK, DIR, TREE = "file", "lock", "dir", "tree"

#: What SQLite may keep beside a database file while it is open (write-ahead log, shared memory,
#: rollback journal).
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


class Entry:
    """One entry of the store folder.

    ``rel``: its path under the store folder, parts joined by ``/`` (``graph/nodes.jsonl``); one part
    may hold one ``*`` standing for any text (``snapshots/*.json``: the entries made at run time,
    named by the caller with ``store.sub(SNAPSHOTS, name)``). ``kind``: FILE, LOCK, DIR or TREE.
    ``what``: one line for people. ``sqlite``: a SQLite database (its sidecars belong to it)."""

    __slots__ = ("rel", "parts", "kind", "what", "sqlite")

    def __init__(self, rel: str, kind: str, what: str, *, sqlite: bool = False):
        self.rel = rel
        self.parts: tuple[str, ...] = tuple(rel.split("/"))
        self.kind = kind
        self.what = what
        self.sqlite = sqlite

    @property
    def name(self) -> str:
        """The last part of the path (``nodes.jsonl``)."""
        return self.parts[-1]

    @property
    def label(self) -> str:
        """How messages name it: its path, a folder's with a ``/`` after it (``graph/``)."""
        return self.rel + "/" if self.kind in (DIR, TREE) else self.rel

    def of(self, root: Path, *more: str) -> Path:
        """This entry under the store folder ``root`` (a pathlib.Path), then ``more`` parts."""
        return root.joinpath(*self.parts, *more)

    def join(self, root: str | os.PathLike, *more: str) -> str:
        """This entry under the store folder ``root`` as a ``str`` path (``os.path.join``: no pathlib,
        for the light hook paths), then ``more`` parts."""
        return os.path.join(root, *self.parts, *more)

    def fill(self, name: str) -> Entry:
        """This entry with its ``*`` replaced by ``name`` (``SNAPSHOT.fill(run_id)``:
        ``snapshots/<run_id>.json``); not added to :data:`ENTRIES`. Raises ValueError for an entry
        without a ``*``."""
        if "*" not in self.rel:
            raise ValueError(f"{self.rel} names one entry: nothing to fill")
        return Entry(self.rel.replace("*", name, 1), self.kind, self.what, sqlite=self.sqlite)

    def matches(self, rel: str) -> bool:
        """Whether ``rel`` (a path under the store folder, parts joined by ``/``) is this entry (a
        ``*`` part matches any name; a database's SQLite sidecars are the database's)."""
        parts = rel.split("/")
        if len(parts) != len(self.parts):
            return False
        *head, last = parts
        if self.sqlite:
            last = next((last[: -len(s)] for s in SQLITE_SIDECARS if last.endswith(s)), last)
        return all(_part_matches(p, q) for p, q in zip([*head, last], self.parts))

    def __repr__(self) -> str:
        return f"Entry({self.rel!r}, {self.kind})"


def _part_matches(name: str, pattern: str) -> bool:
    if "*" not in pattern:
        return name == pattern
    prefix, suffix = pattern.split("*", 1)
    return len(name) > len(prefix) + len(suffix) and name.startswith(prefix) and name.endswith(suffix)


#: Every entry of the store folder, in order.
ENTRIES: list[Entry] = []


def _entry(rel: str, kind: str, what: str, *, sqlite: bool = False) -> Entry:
    e = Entry(rel, kind, what, sqlite=sqlite)
    ENTRIES.append(e)
    return e


# -- the top of the folder -------------------------------------------------------------------------
GITIGNORE = _entry(".gitignore", FILE, "'*': nothing of the store goes to git (consolidate/core/private.py)")
MANIFEST = _entry("manifest.json", FILE, "layout version, embedding id and dimension, project, code anchors"
                  " (consolidate/store/store.py, consolidate/store/anchors.py)")
MANIFEST_LOCK = _entry(".manifest.lock", LOCK, "serialises updates of manifest.json's anchor cache"
                       " (consolidate/store/anchors.py)")
LOCK_FILE = _entry(".lock", LOCK, "the store's write lock (consolidate/core/locking.py)")
LOCK_HOLDER = _entry(".lock.holder", LOCK, "who holds the write lock: pid and a token (consolidate/core/locking.py)")
OPEN_LOCK = _entry(".open.lock", LOCK, "opening the embedded Chroma store, one process at a time"
                   " (consolidate/store/index/longterm.py)")
WORKER_LOCK = _entry(".worker.lock", LOCK, "one detached worker per store (consolidate/pipeline/worker.py)")
SESSIONS_DB = _entry("sessions.sqlite3", FILE, "the session tier (consolidate/store/sessions/)", sqlite=True)
QUEUE = _entry("queue.jsonl", FILE, "session ends appended by the fast hook, folded into sessions.sqlite3"
               " (consolidate/agents/hooks/fast.py)")
LEXICAL_DB = _entry("lexical.sqlite3", FILE, "recall's lexical index, FTS5 (consolidate/store/index/lexical.py)",
                    sqlite=True)
INDEX_GENERATION = _entry("index.generation", FILE, "token of the recall index's last write"
                          " (consolidate/store/index/longterm.py)")
CHROMA = _entry("chroma", TREE, "ChromaDB's persistent store, unless a Chroma server is used"
                " (consolidate/store/index/longterm.py)")
TEAM_JSON = _entry("team.json", FILE, "the team store this store shares with (consolidate/team/local.py)")
STORE_CONFIG = _entry("consolidate.toml", FILE, "optional, written by people: the store's judge chain (judges/registry.py)")

# -- memory/: the derived and the hand-kept files --------------------------------------------------
MEMORY = _entry("memory", DIR, "the markdown files people and agents read")
CORE_MD = _entry("memory/core.md", FILE, "project rules kept by people, given to judges as context")
NOTES_MD = _entry("memory/notes.md", FILE, "record of what graduated (consolidate/store/views/notes_md.py)")
CONTEXT_MD = _entry("memory/context.md", FILE, "the top memories an agent is given at SessionStart"
                    " (consolidate/store/views/context_md.py)")
CONTEXT_INDEX = _entry("memory/context.json", FILE, "the ids and anchors of context.md's lines"
                       " (consolidate/store/anchors.py)")
CONTEXT_TOP = _entry("memory/context.top.json", FILE, "the ranking context.md was made from"
                     " (consolidate/store/views/context_md.py)")
START_FILE = _entry("memory/context.start.json", FILE, "what the fast SessionStart prints, with its stamps"
                    " (consolidate/store/views/start_file.py)")
FILE_INDEX = _entry("memory/files.sqlite3", FILE, "memories by the files they name, keyed by path, for file"
                    " recall (consolidate/agents/file_recall.py)", sqlite=True)

# -- events/, graph/ -------------------------------------------------------------------------------
EVENTS = _entry("events", DIR, "the audit log's folder")
EVENT_LOG = _entry("events/memory-events.jsonl", FILE, "append-only audit log (consolidate/store/events.py)")
GRAPH = _entry("graph", DIR, "the entity graph (consolidate/store/graph.py)")
GRAPH_NODES = _entry("graph/nodes.jsonl", FILE, "the graph's nodes, one JSON object a line")
GRAPH_EDGES = _entry("graph/edges.jsonl", FILE, "the graph's edges, one JSON object a line")

# -- the run's records ------------------------------------------------------------------------------
JOURNAL = _entry("journal", DIR, "write-ahead journal of the run being applied (consolidate/store/journal.py)")
JOURNAL_PLAN = _entry("journal/*.json", FILE, "a run's plan, until it is applied")
JOURNAL_STEPS = _entry("journal/*.steps", FILE, "the apply steps of a run already done")
SNAPSHOTS = _entry("snapshots", DIR, "what each run changed, for undo (consolidate/store/snapshots.py)")
SNAPSHOT = _entry("snapshots/*.json", FILE, "one run's snapshot")
ARCHIVE = _entry("archive", DIR, "archived memories and tombstones (consolidate/store/archive.py)")
ARCHIVED = _entry("archive/*.json", FILE, "an archived memory (superseded, resolved, forgotten)")
TOMBSTONES = _entry("archive/tombstones.jsonl", FILE, "ids that stay archived (consolidate/store/archive.py)")
FORGOTTEN = _entry("archive/forgotten.jsonl", FILE, "forgotten statements, kept out of later runs"
                   " (consolidate/pipeline/forget.py)")

# -- logs/ -----------------------------------------------------------------------------------------
LOGS = _entry("logs", DIR, "logs of the hook, the worker and team sync")
HOOK_LOG = _entry("logs/hook.log", FILE, "the hook's one-line errors (consolidate/agents/hooks/)")
WORKER_LOG = _entry("logs/worker.log", FILE, "the detached worker's output (consolidate/agents/hooks/)")
WORKER_STATUS = _entry("logs/worker.status.json", FILE, "the last worker's outcome (consolidate/store/worker_health.py)")
TEAM_LOG = _entry("logs/team.log", FILE, "team sync's one-line errors (consolidate/team/local.py)")

# -- workspaces/, imports/, team/ ------------------------------------------------------------------
WORKSPACES = _entry("workspaces", DIR, "agent workspaces, one folder a session (consolidate/pipeline/workspace.py)")
WORKSPACE = _entry("workspaces/*", DIR, "one session's workspace (consolidate/pipeline/workspace.py)")
WORKSPACE_STATE = _entry("workspaces/*/workspace.json", FILE, "the workspace's state (agents cannot write it)")
WORKSPACE_LOCK = _entry("workspaces/*/.lock", LOCK, "one writer of the workspace at a time")
WORKSPACE_CONTEXT = _entry("workspaces/*/context", DIR, "the read-only snapshot written at start")
WORKSPACE_CORE = _entry("workspaces/*/context/core.md", FILE, "the project rules, as memory/core.md held them")
WORKSPACE_MEMORIES = _entry("workspaces/*/context/memories.md", FILE, "the memories relevant to the task")
WORKSPACE_SESSION = _entry("workspaces/*/context/session.json", FILE, "session id, task, start time, store, project")
WORKSPACE_WORKING = _entry("workspaces/*/working", TREE, "the agent's scratch files (removed when it completes)")
WORKSPACE_OUTPUT = _entry("workspaces/*/output", TREE, "the agent's results, extracted as notes at completion")
IMPORTS = _entry("imports", DIR, "records of imported transcripts")
TRANSCRIPTS_LEDGER = _entry("imports/transcripts.jsonl", FILE, "the transcripts imported, by path and size"
                            " (consolidate/agents/transcripts.py)")
TEAM = _entry("team", DIR, "this store's side of the team sync (consolidate/team/)")
TEAM_OUTBOX = _entry("team/outbox", DIR, "runs and undos not yet pushed to the team store")
TEAM_OUTBOX_ITEM = _entry("team/outbox/*.json", FILE, "one run or undo to push")
TEAM_STATE = _entry("team/state.json", FILE, "what was last pulled from the team store")
TEAM_LEDGER = _entry("team/ledger.sqlite3", FILE, "which memories, edges and tombstones came from the team store,"
                     " one row each (consolidate/team/ledger.py)")
TEAM_LEDGER_DAMAGED = _entry("team/ledger.*.damaged", FILE, "a damaged ledger (not a sound SQLite database, or a"
                             " ledger.json that is no JSON ledger), moved aside (consolidate/team/ledger.py)")
TEAM_LEDGER_JSON = _entry("team/ledger.json", FILE, "the ledger before issue 34, moved into ledger.sqlite3 by its"
                          " first open")
TEAM_PUSH_LOCK = _entry("team/.push.lock", LOCK, "one push at a time (consolidate/team/sync.py)")
TEAM_FILES_LOCK = _entry("team/.files.lock", LOCK, "state.json, one writer at a time"
                         " (consolidate/team/local.py)")

#: The probe file apply writes (and removes) in each folder it writes to, before the first write
#: (consolidate/pipeline/stages/apply.py: a full or read-only store fails there).
PREFLIGHT = _entry("*/.preflight", FILE, "apply's write probe, removed at once")


#: The one writer of each file of the store folder (issue 28, concern 5): ``module:function`` (several
#: functions of that one module after a comma). No other module opens such a file for writing,
#: replaces it or appends to it (tests/unit/store/test_store_writers.py walks the package's AST). A file whose
#: writer is another program or people is named so.
WRITERS: dict[Entry, str] = {
    GITIGNORE: "consolidate.core.private:prepare_store_dir",
    MANIFEST: "consolidate.store.anchors:update_manifest",
    SESSIONS_DB: "consolidate.store.sessions.tables:connect",
    QUEUE: "consolidate.store.sessions.queue_file:append_end",
    LEXICAL_DB: "consolidate.store.index.lexical:LexicalIndex,rebuild",
    INDEX_GENERATION: "consolidate.store.index.generation:bump_generation",
    TEAM_JSON: "consolidate.team.local:save_config",
    STORE_CONFIG: "people",
    CORE_MD: "consolidate.store.store:write_core",
    NOTES_MD: "consolidate.store.views.notes_md:append_run,mark_statement,mark_run_undone,rebuild",
    CONTEXT_MD: "consolidate.store.views.context_md:write",
    CONTEXT_INDEX: "consolidate.store.anchors:write_context_index",
    CONTEXT_TOP: "consolidate.store.views.context_md:write",
    START_FILE: "consolidate.store.views.recalled:write_start_file",
    FILE_INDEX: "consolidate.store.index.file_table:write",
    EVENT_LOG: "consolidate.store.events:append",
    GRAPH_NODES: "consolidate.store.graph:_write_lines,append,truncate_to",
    GRAPH_EDGES: "consolidate.store.graph:_write_lines,append,truncate_to",
    JOURNAL_PLAN: "consolidate.store.journal:write",
    JOURNAL_STEPS: "consolidate.store.journal:mark,reset_steps",
    SNAPSHOT: "consolidate.store.snapshots:take,save,record_graph_diff,record_graph_append,settle_graph_appends",
    ARCHIVED: "consolidate.store.archive:save",
    TOMBSTONES: "consolidate.store.archive:tombstone,lift_tombstones",
    FORGOTTEN: "consolidate.store.forgotten:append,lift",
    HOOK_LOG: "consolidate.store.hook_log:append",
    WORKER_LOG: "consolidate.core.spawn:spawn_worker",
    WORKER_STATUS: "consolidate.store.worker_health:record",
    TEAM_LOG: "consolidate.team.local:log",
    WORKSPACE_STATE: "consolidate.pipeline.workspace:_save",
    WORKSPACE_CORE: "consolidate.pipeline.workspace:start",
    WORKSPACE_MEMORIES: "consolidate.pipeline.workspace:start",
    WORKSPACE_SESSION: "consolidate.pipeline.workspace:start",
    TRANSCRIPTS_LEDGER: "consolidate.agents.transcripts:_record",
    TEAM_OUTBOX_ITEM: "consolidate.team.local:write_outbox,write_undo_outbox,put_outbox",
    TEAM_STATE: "consolidate.team.local:update_state",
    TEAM_LEDGER: "consolidate.team.ledger:_connect",
    TEAM_LEDGER_DAMAGED: "consolidate.team.ledger:_move_aside",
    TEAM_LEDGER_JSON: "consolidate.team.ledger:_migrate",
    PREFLIGHT: "consolidate.pipeline.stages.apply:preflight",
}


def writer_of(entry: Entry) -> tuple[str, tuple[str, ...]]:
    """``(module, functions)`` that write ``entry`` (:data:`WRITERS`); ``("people", ())`` for a file
    people write. Raises KeyError for an entry that is no file of the store."""
    module, _, functions = WRITERS[entry].partition(":")
    return module, tuple(f for f in functions.split(",") if f)


def entry_of(rel: str) -> Entry | None:
    """The entry ``rel`` (a path under the store folder, parts joined by ``/``) is, else None: a
    path inside a TREE entry is that entry's."""
    for e in ENTRIES:
        if e.matches(rel):
            return e
    parts = rel.split("/")
    for e in ENTRIES:
        if e.kind == TREE and len(parts) > len(e.parts) and e.matches("/".join(parts[: len(e.parts)])):
            return e
    return None
