"""The store folder (default ``./.memofs/``): paths, manifest, lock, and its two tiers.

Layout (docs/design.md#store-layout)::

    manifest.json              layout version, embedding function id and dimension, code anchors
                               and their hash cache (consolidate.store.anchors)
    sessions.sqlite3           session tier (consolidate.store.sessions.tier)
    memory/core.md             project rules kept by people, given to judges as context
    memory/notes.md            timestamped record of what graduated (and transients)
    events/memory-events.jsonl append-only audit log
    chroma/                    ChromaDB persistent store (unless a Chroma server is used)
    lexical.sqlite3            recall's lexical index (FTS5), derived from chroma/ (consolidate/store/index/lexical.py)
    graph/nodes.jsonl, graph/edges.jsonl
    journal/                   write-ahead journal of the run being applied
    logs/                      worker logs
    .gitignore                 ``*``: nothing of the store goes to git (consolidate/core/private.py)

Every folder is 0700 and every file 0600, whatever the umask (consolidate/core/private.py).

Opening a store imports only the standard library; the long-term tier (ChromaDB) is opened on first
use through :meth:`Store.longterm`.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from consolidate.core import settings
from consolidate.core.errors import EmbeddingMismatch, StoreCorrupt, StorePathError
from consolidate.store import replica as _replica
from consolidate.store import resolve
from consolidate.store.layout import CHROMA, CORE_MD, EVENT_LOG, GITIGNORE, LOCK_FILE, LOCK_HOLDER, MANIFEST, NOTES_MD, SESSIONS_DB, STORE_CONFIG, TEAM_JSON, Entry
from consolidate.store.sessions.tier import SessionTier
from consolidate.core.private import prepare_store_dir
from consolidate.core.private import private_umask
from consolidate.core.errors import StoreReadOnly
from consolidate.core.errors import SecretBlocked
from consolidate.core.errors import StoreError

LAYOUT_VERSION = 1
DEFAULT_STORE = resolve.STORE_FOLDER
DEFAULT_EMBEDDING = "minilm"
#: The fields of ``manifest.json`` that are read back, and their JSON kinds (consolidate/core/json_check.py).
MANIFEST_FIELDS = {"layout_version": (("integer",), False), "embedding": (("object",), False),
                   "project": (("string",), False),
                   "embedding.id": (("string",), True), "embedding.dimension": (("integer",), True)}


def resolve_store_path(path: str | os.PathLike | None = None) -> Path:
    """The store folder: ``path`` if given, else the one the environment and the working folder mean
    (``$CONSOLIDATE_STORE``, the agent's project folder, the nearest enclosing store, the git root:
    consolidate/store/resolve.py)."""
    return Path(resolve.store_path(path))


class Store:
    """One store folder.

    ``chroma_url`` (or ``$CONSOLIDATE_CHROMA_URL``) points the long-term tier at a Chroma server
    instead of the embedded ``chroma/`` folder. ``embedding`` names the embedding function
    (``$CONSOLIDATE_EMBEDDING``; default: the one recorded in the store's manifest, else ``minilm``);
    a store is bound to the function that built it. ``project`` is the scope of new memories
    (default ``$CONSOLIDATE_PROJECT``, else a team store's project, else the project the store
    recorded in its manifest when it was created, else the name of the folder holding the store;
    ``project_source`` says which). ``create=False`` opens an existing store
    only (read commands): ``exists`` tells whether there is one, and nothing is created. A store
    opened for writing is private to its user (consolidate/core/private.py: the process umask narrows
    to 077, folders 0700, files 0600) and holds a ``.gitignore`` that ignores all of it; opening an
    existing store with ``create=False`` narrows the umask too (a later write is private).

    Raises StorePathError when the path is a file, empty, or cannot be created."""

    def __init__(self, path: str | os.PathLike | None = None, *, chroma_url: str | None = None,
                 embedding: str | None = None, project: str | None = None, create: bool = True):
        if path is not None and not str(path).strip():
            raise StorePathError("the store path is empty", path="")
        self.path = resolve_store_path(path)
        if self.path.exists() and not self.path.is_dir():
            raise StorePathError(f"store path {self.path} is a file, not a folder", path=str(self.path))
        if create:
            try:

                prepare_store_dir(self.path, GITIGNORE.name)  # 0700 folders, 0600 files, a .gitignore (consolidate/core/private.py)
            except OSError as exc:
                raise StorePathError(f"cannot create store folder {self.path}: {exc.strerror or exc}",
                                     path=str(self.path)) from None
        elif self.path.is_dir():

            private_umask()  # whatever this process writes to the store later (SQLite, Chroma) is private
        self.chroma_url = chroma_url or settings.CHROMA_URL.get()
        self._embedding = embedding or settings.EMBEDDING.get()
        #: The project the store recorded when its manifest was first written (None: an older store,
        #: or no run yet): a copied or moved store folder keeps its project (consolidate/store/store.py).
        self.recorded_project = _recorded_project(self.path)
        sources = (("option", project), ("environment", settings.PROJECT.get()),
                   ("team", _team_project(self.path)), ("store", self.recorded_project),
                   ("folder", self.path.resolve().parent.name or "default"))
        #: Where ``project`` came from: option, environment, team, store (recorded) or folder.
        self.project_source, self.project = next((k, v) for k, v in sources if v)
        self._sessions: SessionTier | None = None
        self._longterm = None
        self._open_lock = threading.RLock()

    @property
    def exists(self) -> bool:
        """Whether the store folder exists."""
        return self.path.is_dir()

    @property
    def writable(self) -> bool:
        """Whether this process can write the store folder (False on a read-only mount or folder)."""
        return self.path.is_dir() and os.access(self.path, os.W_OK)

    def require_writable(self) -> None:
        """Raises StoreReadOnly (one line) when the store folder cannot be written."""
        if self.path.is_dir() and not self.writable:

            raise StoreReadOnly(f"the store {self.path} is read-only: read commands work, writes need a writable"
                                " folder", path=str(self.path))

    @property
    def embedding_name(self) -> str:
        """The configured embedding function, else the store's own (manifest), else the default."""
        if self._embedding:
            return self._embedding
        manifest = self.read_manifest()
        return ((manifest or {}).get("embedding") or {}).get("id") or DEFAULT_EMBEDDING

    @property
    def has_longterm(self) -> bool:
        """Whether the long-term tier exists (a manifest, an embedded Chroma folder, or a server)."""
        return bool(self.chroma_url) or self.sub(MANIFEST).exists() or self.sub(CHROMA).is_dir()

    def replica(self) -> _replica.Replica | None:
        """The store's replica (consolidate/store/replica.py): the team store's local side for a store
        in a team (``team.json``), else None. Every caller that pulls, pushes or writes the outbox
        goes through here; the team code is imported only for a store in a team."""
        return _replica.load(self)

    # -- paths ----------------------------------------------------------------------------------
    def sub(self, *parts: Entry | str) -> Path:
        """A path inside the store: an entry of consolidate.store.layout (``store.sub(GRAPH)``), then
        names under it (``store.sub(SNAPSHOTS, f"{run_id}.json")``)."""
        return self.path.joinpath(*(q for p in parts for q in (p.parts if isinstance(p, Entry) else (p,))))

    @property
    def judges_config(self) -> Path:
        """The store's own judge configuration file (``consolidate.toml``: consolidate.judges.registry reads it)."""
        return self.sub(STORE_CONFIG)

    @property
    def events_path(self) -> Path:
        return self.sub(EVENT_LOG)

    @property
    def notes_md_path(self) -> Path:
        return self.sub(NOTES_MD)

    @property
    def core_md_path(self) -> Path:
        return self.sub(CORE_MD)

    # -- tiers ----------------------------------------------------------------------------------
    @property
    def sessions(self) -> SessionTier:
        """The session tier (opened on first use)."""
        if self._sessions is None:
            self._sessions = SessionTier(self.sub(SESSIONS_DB))
        return self._sessions

    def embedder(self):
        """The store's embedding function (``consolidate.store.index.embeddings``), loaded once per Store."""
        if getattr(self, "_embedder", None) is None:
            with self._open_lock:
                if getattr(self, "_embedder", None) is None:
                    from consolidate.store.index.embeddings import get_embedding_function  # noqa: PLC0415 - off the SessionStart hook path (store.index, store.index.embeddings)

                    self.check_embedding_name()  # before any model is loaded or downloaded
                    self._embedder = get_embedding_function(self.embedding_name)
        return self._embedder

    def release_embedder(self) -> bool:
        """Free the embedding model's memory when the long-term index is not open in this process
        (``MiniLMOnnx.release``; the next embed loads it again): the worker calls it between
        embedding a run's keepers and opening the index, so one process never holds both (at
        100,000 memories the index is about 200 MB, the model about 230 MB: issue 18,
        benchmarks/bench_memory_scale.py). Returns whether it released anything."""
        ef = getattr(self, "_embedder", None)
        if ef is None or self._longterm is not None or not hasattr(ef, "release"):
            return False
        ef.release()
        import gc  # noqa: PLC0415 - off the SessionStart hook path (gc)

        gc.collect()
        try:  # glibc keeps freed heap pages; give them back (Linux only; elsewhere nothing to do)
            import ctypes  # noqa: PLC0415 - off the SessionStart hook path (3 modules)

            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass
        return True

    def longterm(self):
        """The long-term tier (``consolidate.store.index.longterm.LongTerm``); imports ChromaDB on first use.

        Raises EmbeddingMismatch when the store was built with another embedding function."""
        if self._longterm is None:
            with self._open_lock:  # batch threads may ask at once: open it once
                if self._longterm is None:
                    from consolidate.store.index.longterm import LongTerm  # noqa: PLC0415 - off the SessionStart hook path (13 modules)

                    self._longterm = LongTerm(self)
        return self._longterm

    def core_rules(self) -> str:
        """Text of ``memory/core.md`` ('' when absent)."""
        try:
            return self.core_md_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreCorrupt(f"cannot read {self.core_md_path}: {exc}", path=str(self.core_md_path)) from None

    def write_core(self, text: str) -> None:
        """Replace ``memory/core.md`` (the project rules given to judges). The text passes the secret
        gate first: raises SecretBlocked (kinds and redacted previews only) and writes nothing when it
        holds secret material."""
        from consolidate.rules.secrets import scan  # noqa: PLC0415 - keeps `consolidate note` light (37 modules)

        findings = scan(text)
        if findings:
            kinds = sorted({f.kind for f in findings})
            previews = [f.preview for f in findings][:5]
            raise SecretBlocked(f"core.md not written: it holds secret material ({', '.join(kinds)}: {' '.join(previews)})",
                                kinds=kinds, previews=previews)
        write_text_atomic(self.core_md_path, text)

    # -- manifest -------------------------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any] | None:
        """The manifest, or None for a store that has no long-term tier yet.

        Raises StoreCorrupt when manifest.json is not a JSON object."""
        p = self.sub(MANIFEST)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StoreCorrupt(f"{p} is corrupt ({exc}); restore it or move it away", path=str(p)) from None
        from consolidate.core.json_check import check_fields  # noqa: PLC0415 - off the SessionStart hook path (core.json_check)

        check_fields(data, p, MANIFEST_FIELDS, fix="restore it or move it away (nothing was changed)")
        version = data.get("layout_version")
        if isinstance(version, int) and version > LAYOUT_VERSION:
            raise StoreCorrupt(f"store {self.path} has layout version {version}; this consolidate reads up to"
                               f" {LAYOUT_VERSION}: upgrade consolidate", path=str(p))
        return data

    def check_embedding_name(self) -> None:
        """Refuse a configured embedding function other than the one the manifest records, from
        their names alone (nothing is built: a model that would be downloaded is not). Raises
        EmbeddingMismatch; the dimension is checked once the function is built (check_embedding)."""
        if not self._embedding:
            return
        from consolidate.store.index.embeddings import embedding_id  # noqa: PLC0415 - off the SessionStart hook path (store.index, store.index.embeddings)

        wanted = embedding_id(self._embedding)
        emb = (self.read_manifest() or {}).get("embedding") or {}
        if wanted and emb.get("id") and emb["id"] != wanted:
            from consolidate.store.index.embeddings import known_dimension, mismatch_message  # noqa: PLC0415 - off the SessionStart hook path (store.index, store.index.embeddings)

            raise EmbeddingMismatch(
                mismatch_message(f"store {self.path}", emb["id"], emb.get("dimension"), wanted,
                                 known_dimension(wanted), "use that embedding (CONSOLIDATE_EMBEDDING) or a new store"),
                path=str(self.path), expected=emb["id"], found=wanted)

    def check_embedding(self, embedding_id: str, dimension: int) -> None:
        """Write the manifest on first use; refuse a store built with another embedding function.

        Raises EmbeddingMismatch with ``expected`` (the store's) and ``found`` (the configured)."""
        manifest = self.read_manifest()
        if manifest is None:
            import filelock  # noqa: PLC0415 - third-party filelock: only its callers load it

            from consolidate.store.anchors import update_manifest  # noqa: PLC0415 - off the SessionStart hook path (4 modules)

            try:
                update_manifest(self.path, lambda data: None, initial={
                    "layout_version": LAYOUT_VERSION,
                    "embedding": {"id": embedding_id, "dimension": dimension},
                    "project": self.project,  # the store's own project from now on, wherever it is copied
                })
                self.recorded_project = self.project
            except (OSError, filelock.Timeout) as exc:

                raise StoreError(f"store {self.path} cannot be written (manifest.json: {getattr(exc, 'strerror', None) or exc});"
                                 " nothing was changed", path=str(self.path)) from None
            return
        emb = manifest.get("embedding") or {}
        if emb.get("id") != embedding_id or emb.get("dimension") != dimension:
            from consolidate.store.index.embeddings import mismatch_message  # noqa: PLC0415 - off the SessionStart hook path (store.index, store.index.embeddings)

            raise EmbeddingMismatch(
                mismatch_message(f"store {self.path}", emb.get("id"), emb.get("dimension"), embedding_id, dimension,
                                 "use that embedding (CONSOLIDATE_EMBEDDING) or a new store"),
                path=str(self.path), expected=emb.get("id"), found=embedding_id,
            )

    def lock(self, timeout: float = 60.0):
        """The store's write lock (a filelock.FileLock on ``.lock``); raises StoreLocked on timeout
        when used as a context manager through :func:`consolidate.core.locking.store_lock`."""
        from consolidate.core.locking import store_lock  # noqa: PLC0415 - off the SessionStart hook path (4 modules)

        return store_lock(self, self.sub(LOCK_FILE), self.sub(LOCK_HOLDER), timeout)

    def close(self) -> None:
        if self._sessions is not None:
            self._sessions.close()
            self._sessions = None


def _recorded_project(path: Path) -> str | None:
    """The project recorded in ``manifest.json`` (when it was first written), else None; a manifest
    that cannot be read counts as none here (read_manifest reports it)."""
    try:
        data = json.loads(MANIFEST.of(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("project") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def project_note(store) -> str | None:
    """One line when the project in use is not the one the store recorded (an option or variable
    naming another; a store whose manifest predates the record, when its memories carry another
    scope is checked by the caller), else None."""
    if store.recorded_project and store.project != store.recorded_project:
        return (f"note: project {store.project!r} ({store.project_source}) is not the store's own project"
                f" {store.recorded_project!r} (recorded when it was created); memories of {store.project!r} are used")
    return None


def _team_project(path: Path) -> str | None:
    """The project of a store in a team (``team.json``, consolidate/team/local.py), else None."""
    try:
        data = json.loads(TEAM_JSON.of(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("project") if isinstance(data, dict) and isinstance(data.get("project"), str) else None


# the store's atomic file writes (consolidate/core/atomic.py), importable from here as before
from consolidate.core.atomic import write_json_atomic, write_text_atomic  # noqa: E402,F401
