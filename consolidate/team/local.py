"""Team memory on a Chroma server: the local side (standard library only; the session-end path and
the hook import this module, never chromadb).

A store joins a team with ``consolidate team init`` (consolidate/team/sync.py checks the server),
which writes ``team.json`` in the store: the server URL, the project, the tenant, where the token is
(the NAME of an environment variable, or the path of a file readable only by its owner: never the
token itself), whether an insecure URL was allowed, and this machine's id. Local files of team mode,
all under ``team/`` in the store::

    team/outbox/<run_id>.json   one entry per applied run, waiting to be pushed (deleted once pushed)
    team/ledger.sqlite3         the server version of each memory this machine last pulled or pushed,
                                and the edge and tombstone ids it already has (consolidate/team/ledger.py)
    team/state.json             last push and last pull (times, counts, last error)

The outbox entry is written by apply's ``outbox`` step (journaled: a crash replays it) and names what
to push, not a copy of it: the push reads the memories' current records from the local index, so a
push repeated after a crash writes the same records again (upserts by deterministic ids).

The pull before a run, the push after it and the fresh pull of SessionStart and ``recall`` (the
store's replica) are in consolidate/team/replica.py, which builds on this module and on sync.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import ipaddress
import json
import os
import stat
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from consolidate.core.errors import ConfigError
from consolidate.store.replica import TEAM_FILE  # noqa: F401 - the one name of the team configuration file
from consolidate.store.layout import LOGS, TEAM, TEAM_FILES_LOCK, TEAM_JSON, TEAM_LOG, TEAM_OUTBOX, TEAM_OUTBOX_ITEM, TEAM_STATE
from consolidate.core.atomic import write_json_atomic
from consolidate.core.settings import TEAM_TOKEN
from consolidate.store.events import run_lines as event_lines
from consolidate.core.settings import TEAM_PULL_SECONDS
from consolidate.core.settings import TEAM_PUSH_SECONDS
from consolidate.core.private import private_file
from consolidate.rules.persisted import gate, gate_record
#: Default environment variable holding the team token.
TOKEN_ENV = "CONSOLIDATE_TEAM_TOKEN"  # consolidate/core/settings.py: TEAM_TOKEN
#: Seconds a SessionStart waits for the team's changes before using the last pulled copy, and the
#: same for a run's pull before its contradiction check ($CONSOLIDATE_TEAM_PULL_SECONDS overrides both).
START_PULL_SECONDS = 3.0
RUN_PULL_SECONDS = 10.0
#: Seconds a run's push may take before it is left in the outbox for the next run or ``sync``.
PUSH_SECONDS = 30.0
#: Statuses a memory keeps in a recall index; a server record with any other status (superseded,
#: archived, expired, forgotten, deleted, rejudged-out) is dropped from each machine's index.


@dataclasses.dataclass
class TeamConfig:
    """``team.json``: ``url`` (http(s)://HOST:PORT), ``project``, ``tenant``, ``token_env`` (the name of
    the variable holding the token), ``token_file`` (a path outside the store, mode 0600),
    ``insecure`` (plain http or no token allowed on a non-loopback address), ``machine`` (this store's
    id, recorded as each write's ``origin``)."""

    url: str
    project: str
    tenant: str = "default_tenant"
    token_env: str = TOKEN_ENV
    token_file: str | None = None
    insecure: bool = False
    machine: str = ""

    @property
    def database(self) -> str:
        """The project's Chroma database: ``consolidate_<project>`` (letters, digits, ``_`` and ``-``)."""
        return database_name(self.project)


def database_name(project: str) -> str:
    """``consolidate_<project>`` with every character outside ``[A-Za-z0-9_-]`` as ``_``. Raises
    ConfigError for an empty project."""
    clean = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-") else "_" for ch in project.strip())
    if not clean.strip("_"):
        raise ConfigError(f"bad team project name {project!r}: use letters, digits, - or _")
    return f"consolidate_{clean}"[:63]


def config_path(store_path: Path) -> Path:
    return TEAM_JSON.of(Path(store_path))


def load_config(store_path: Path) -> TeamConfig | None:
    """The store's team configuration, or None for a store that is not in a team. Raises
    ConfigError for a team.json that cannot be read."""
    path = config_path(store_path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read ({exc}); run `consolidate team init` again") from None
    if not isinstance(data, dict) or not data.get("url") or not data.get("project"):
        raise ConfigError(f"{path} is not a team configuration; run `consolidate team init` again")
    fields = {f.name for f in dataclasses.fields(TeamConfig)}
    return TeamConfig(**{k: v for k, v in data.items() if k in fields})


def save_config(store_path: Path, cfg: TeamConfig) -> None:
    """Write ``team.json`` (0600, atomically). Raises ConfigError when a token value would be written."""

    if not cfg.machine:
        cfg.machine = uuid.uuid4().hex[:12]
    write_json_atomic(config_path(store_path), dataclasses.asdict(cfg))


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name or address (localhost, 127.0.0.0/8, ::1)."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str, token: str | None, insecure: bool) -> tuple[str, int, bool]:
    """``(host, port, tls)`` of a team server URL. Raises ConfigError (one line) for a URL that is not
    ``http(s)://HOST[:PORT]``, and, unless ``insecure``, for a plain-http URL or a missing token on an
    address that is not loopback (the token would cross the network in clear, or anyone could write)."""
    u = urlparse(url or "")
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ConfigError(f"bad team server URL {url!r}: use https://HOST:PORT (or http://127.0.0.1:PORT)")
    try:
        port = u.port or (443 if u.scheme == "https" else 8000)
    except ValueError:
        raise ConfigError(f"bad team server URL {url!r}: the port is not a number") from None
    if not insecure and not is_loopback(u.hostname):
        if u.scheme != "https":
            raise ConfigError(f"refused: {url} is plain http on a non-loopback address (the token and the"
                              " memories would cross the network in clear); use https, or pass --insecure")
        if not token:
            raise ConfigError(f"refused: no team token for {url} (set ${TOKEN_ENV} or give --token-file);"
                              " a server anyone can write is allowed only with --insecure")
    return u.hostname, port, u.scheme == "https"


def read_token(cfg: TeamConfig, store_path: Path | None = None) -> str | None:
    """The team token: from ``$<token_env>``, else from ``token_file``. Raises ConfigError when the
    file is readable by group or others, is inside the store folder, or cannot be read. None when
    neither gives one."""

    name = cfg.token_env or TOKEN_ENV
    value = TEAM_TOKEN.get() if name == TEAM_TOKEN.name else os.environ.get(name)  # a variable the team named
    if value and value.strip():
        return value.strip()
    if not cfg.token_file:
        return None
    path = Path(cfg.token_file).expanduser()
    check_token_file(path, store_path)
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"cannot read the team token file {path}: {exc.strerror or exc}") from None
    return text or None


def check_token_file(path: Path, store_path: Path | None = None) -> None:
    """Raises ConfigError unless ``path`` is a regular file readable only by its owner (mode 0600 or
    0400) and outside the store folder."""
    try:
        st = path.stat()
    except OSError as exc:
        raise ConfigError(f"team token file {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"team token file {path} is not a file")
    if st.st_mode & 0o077:
        raise ConfigError(f"refused: team token file {path} is readable by others (mode"
                          f" {stat.S_IMODE(st.st_mode):04o}); chmod 600 it")
    if store_path is not None:
        try:
            path.resolve().relative_to(Path(store_path).resolve())
        except ValueError:
            return
        raise ConfigError(f"refused: the team token file {path} is inside the store folder; keep it outside")


# -- outbox -------------------------------------------------------------------------------------
def outbox_dir(store) -> Path:
    return store.sub(TEAM_OUTBOX)


def outbox_entry(plan, writes, store) -> dict[str, Any] | None:
    """What a run pushes (None: nothing). Success (and a maintenance plan: forget, batch maintenance,
    a resolved dispute): its memories (written, re-confirmed, updated, removed with their last
    status), tombstones and event lines. Failure: only its ``session.failed`` event. Aborted runs
    never reach apply."""

    lines = event_lines(plan, writes)
    base = {"run_id": plan.run_id, "session_id": plan.session_id, "outcome": plan.outcome,
            "created": time.time()}
    if plan.outcome not in ("success", "maintenance"):  # maintenance: forget, batch, dispute resolution
        failed = [x for x in lines if x.get("event") == "session.failed"]
        return {**base, "memories": [], "removed": {}, "tombstones": [], "events": failed} if failed else None
    memories = [c.memory_id for c in writes if c.tier == "durable"]
    memories += [r.memory_id for r in plan.reconfirmations]
    removed: dict[str, dict] = {}
    tombstoned: list[str] = []
    for u in plan.updates:
        if u.action == "update":
            memories.append(u.memory_id)
        else:
            removed[u.memory_id] = {"status": u.changes.get("status", "archived"),
                                    **{k: v for k, v in u.changes.items() if isinstance(v, (str, int, float, bool))}}
            if u.action == "tombstone":
                tombstoned.append(u.memory_id)
        for source, _kind in u.edges:
            memories.append(source)
    memories = [m for m in dict.fromkeys(memories) if m not in removed]
    return {**base, "memories": memories, "removed": removed, "tombstones": tombstoned, "events": lines}


def write_outbox(plan, store, writes) -> None:
    """Apply's ``outbox`` step: write the run's entry (idempotent: the same file again on a replay)."""
    if load_config(store.path) is None:
        return
    entry = outbox_entry(plan, writes, store)
    if entry is None:
        return

    folder = outbox_dir(store)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / TEAM_OUTBOX_ITEM.fill(plan.run_id).name
    if not path.exists():
        write_json_atomic(path, gate_record(entry))  # what is pushed: consolidate/rules/persisted.py


def put_outbox(store, run_id: str, entry: dict) -> None:
    """Write the outbox entry ``run_id`` (``team/outbox/<run_id>.json``, atomically): a repair
    queued by the team sync (consolidate/team/sync.py)."""
    folder = outbox_dir(store)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_json_atomic(folder / TEAM_OUTBOX_ITEM.fill(run_id).name, gate_record(entry))  # consolidate/rules/persisted.py


def write_undo_outbox(store, run_id: str, record: dict, lines: list[dict], removed_edges: list) -> None:
    """``consolidate undo`` of a run in a team store: an outbox entry ``undo-<run_id>`` that pushes the
    undo as the run's writes were pushed. The memories the run added get status ``undone`` on the
    team store (every machine drops them), the ones it changed are written back as they were before
    it (``restore``: this machine's records are the truth, not merged), the tombstones it laid are
    lifted, the graph edges it added are marked removed, and the undo's events are added. Written
    once (an interrupted undo run again finds it); pushed by the undo, else by the next run or sync."""
    if load_config(store.path) is None:
        return

    before = record.get("before") or {}
    entry = {"run_id": f"undo-{run_id}", "session_id": record.get("session_id"), "outcome": "undo",
             "created": time.time(), "restore": True, "memories": sorted(before),
             "removed": {i: {"status": "undone", "undone_by": run_id} for i in record.get("added") or [] if i not in before},
             "tombstones": [], "lifted": sorted(record.get("tombstoned") or []),
             "edges_removed": [[str(u), str(v), str(k)] for u, v, k in removed_edges],
             "events": [{**x, "event_id": f"undo-{run_id}:{i}"} for i, x in enumerate(lines)]}
    folder = outbox_dir(store)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / TEAM_OUTBOX_ITEM.fill(f"undo-{run_id}").name
    if not path.exists():
        write_json_atomic(path, gate_record(entry))  # what is pushed: consolidate/rules/persisted.py


def pending(store) -> list[Path]:
    """Outbox entries waiting to be pushed, oldest first."""
    folder = outbox_dir(store)
    if not folder.is_dir():
        return []
    return sorted(folder.glob(TEAM_OUTBOX_ITEM.name), key=lambda p: (p.stat().st_mtime, p.name))


def pending_memory_ids(store) -> set[str]:
    """Memory ids named by waiting outbox entries (a pull must not overwrite these local changes)."""
    out: set[str] = set()
    for path in pending(store):
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        out.update(entry.get("memories") or [])
        out.update(entry.get("removed") or {})
    return out


# -- state --------------------------------------------------------------------------------------
def _read_json(path: Path, default):
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, type(default)) else default
    except (OSError, ValueError):
        return default


def read_state(store) -> dict[str, Any]:
    """``team/state.json``: ``last_push``, ``last_pull`` (ISO UTC), counts and the last errors."""
    return _read_json(store.sub(TEAM_STATE), {})


@contextlib.contextmanager
def _files_lock(store):
    """``team/.files.lock`` held for one read-modify-write of ``state.json``: a
    push, a pull and a SessionStart of one store may run at once (the worker, the hook, the MCP
    server, a timed-out push still finishing in its thread), and a whole-file rewrite from a copy
    read earlier would drop what another wrote meanwhile."""
    import filelock  # noqa: PLC0415 - third-party filelock: only its callers load it

    folder = store.sub(TEAM)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = filelock.FileLock(str(folder / TEAM_FILES_LOCK.name), mode=0o600, thread_local=False)
    with lock.acquire(timeout=60):
        yield folder


def update_state(store, **changes) -> None:
    """Merge ``changes`` into ``team/state.json`` (under the team files lock)."""

    with _files_lock(store) as folder:
        state = read_state(store)
        state.update(changes)
        write_json_atomic(folder / TEAM_STATE.name, state)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def pull_seconds(default: float) -> float:
    """``$CONSOLIDATE_TEAM_PULL_SECONDS`` (consolidate/core/settings.py), else ``default``. Raises
    ConfigError for a value that is not a positive number of seconds."""

    value = TEAM_PULL_SECONDS.get()
    return default if value is None else value


def push_seconds() -> float:
    """``$CONSOLIDATE_TEAM_PUSH_SECONDS`` (consolidate/core/settings.py), else PUSH_SECONDS. Raises
    ConfigError for a value that is not a positive number of seconds."""

    value = TEAM_PUSH_SECONDS.get()
    return PUSH_SECONDS if value is None else value


def status(store) -> dict[str, Any] | None:
    """The team part of ``consolidate status``: ``url``, ``project``, ``database``, ``last_push``,
    ``last_pull``, ``pending_pushes``, ``last_error`` (None for a store not in a team)."""
    cfg = load_config(store.path)
    if cfg is None:
        return None
    state = read_state(store)
    return {"url": cfg.url, "project": cfg.project, "database": cfg.database, "machine": cfg.machine,
            "last_push": state.get("last_push"), "last_pull": state.get("last_pull"),
            "pending_pushes": len(pending(store)), "last_error": state.get("last_error")}


# -- calls from the pipeline and the hook (never raise) -----------------------------------------
def log(store, message: str) -> None:
    """One line in ``logs/team.log`` (never the token: messages are built without it)."""
    try:

        folder = store.sub(LOGS)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with private_file(store.sub(TEAM_LOG), "a") as f:
            f.write(f"{now_iso()} {gate(' '.join(str(message).split()))[:500]}\n")
    except OSError:
        pass
