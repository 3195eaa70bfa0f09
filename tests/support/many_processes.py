"""Helpers of the many-processes tests and of benchmarks/bench_processes.py: distinct realistic notes,
sessions of flagged notes, the CLI as separate processes, an MCP server over real stdio, and the
silent-loss check (every memory ever written is found by a vector query for its own text)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SUBJECTS = ["billing", "search", "auth", "gateway", "scheduler", "exporter", "importer", "mailer", "cache",
            "uploader", "renderer", "notifier", "ledger", "crawler", "indexer", "webhook", "reporting", "sync",
            "payments", "analytics", "thumbnailer", "geocoder", "translator", "inventory", "checkout",
            "onboarding", "audit", "metrics", "feature-flag", "session"]
FACTS = [
    "service reads its settings from config/{s}.toml at startup only",
    "module keeps retries at three with exponential backoff capped near a minute",
    "tests need the fake clock fixture or they hang on the {s} timer",
    "job must run after the nightly migration finishes, never before",
    "client pins protocol version 2 because version 3 drops the {s} batch endpoint",
    "worker logs go to logs/{s}.log and rotate daily",
    "team decided to keep {s} data in Postgres rather than Redis for durability",
    "handler returns 409 on a duplicate {s} request id instead of retrying",
    "queue consumer acks only after the database commit succeeds",
    "build uses pnpm workspaces; running npm install breaks the {s} lockfile",
    "schema changes go through alembic revisions, never hand-edited SQL",
    "endpoint is rate limited per tenant and returns Retry-After headers",
    "integration tests run against docker compose profile {s}-it",
    "CLI flag --dry-run prints the {s} plan and writes nothing",
    "cron entry lives in deploy/cron/{s}.yaml and runs hourly at minute seven",
    "secrets come from the vault path kv/{s} and are never committed",
    "feature is behind the flag enable_{s}_v2 until the rollout ends",
    "library must stay compatible with Python 3.11 for the {s} plugin",
    "dashboard panel for {s} latency uses the p95 not the mean",
    "bug was a timezone mix-up: store {s} timestamps in UTC everywhere",
    "owner asked that {s} error messages name the failing field",
    "deploy needs a manual approval step for the {s} production stage",
    "cache entries for {s} expire after fifteen minutes",
    "parser rejects {s} files larger than ten megabytes with a clear error",
    "benchmark for {s} showed the ORM query dominated; use a raw select",
    "the {s} websocket reconnects with jitter to avoid thundering herds",
    "recipe: to rebuild the {s} index run make reindex-{s} then restart",
    "gotcha: the {s} container needs ulimit nofile raised to 65536",
    "preference: the user wants {s} pull requests squashed on merge",
    "constraint: {s} must never call the payment provider from a test",
    "the {s} migration script is idempotent and safe to re-run",
    "the {s} API paginates with cursors; offset pagination was removed",
    "on macOS the {s} watcher needs fsevents; inotify is Linux only",
    "{s} health checks hit /healthz and must answer within two seconds",
    "the {s} importer skips rows with an empty external id and logs them",
    "monorepo path packages/{s} owns its own eslint config",
    "the {s} nightly report email goes to the ops list, not to users",
    "the {s} retry budget is shared across pods through Redis counters",
    "lesson: the {s} flaky test came from ordering; sort before comparing",
    "lesson: mocking the {s} clock hid a real daylight saving bug",
]


def note_texts(session: str, n: int) -> list[str]:
    """``n`` distinct notes for ``session`` (deterministic), each naming the session and a subject."""
    out = []
    i = 0
    while len(out) < n:
        subject = SUBJECTS[i % len(SUBJECTS)]
        fact = FACTS[(i // len(SUBJECTS) + i) % len(FACTS)].format(s=subject)
        out.append(f"In project {session}, the {subject} {fact} (note {i} of {session})")
        i += 1
    return out


def fill_sessions(store_path: Path, sessions: list[str], per_session: int, *, end: bool = True) -> None:
    """Write ``per_session`` flagged notes in each session (through the library) and end them."""
    from consolidate import Store

    store = Store(store_path, project="p")
    try:
        for sid in sessions:
            for text in note_texts(sid, per_session):
                store.sessions.add_note(sid, text, flag=True)
            if end:
                store.sessions.end(sid, "success")
    finally:
        store.close()


def cli_env(store_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a CLI process on ``store_path`` with the MiniLM embedding and no judge."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env.update({"CONSOLIDATE_STORE": str(store_path), "CONSOLIDATE_PROJECT": "p", "CONSOLIDATE_JUDGES": "noop",
                "CONSOLIDATE_EMBEDDING": "minilm"})
    env.update(extra)
    return env


def start_cli(store_path: Path, *args: str, **extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "consolidate", *args], env=cli_env(store_path, **extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def start_preloaded(store_path: Path, *args: str, **extra: str) -> subprocess.Popen:
    """:func:`start_cli` in a process forked from the preloaded server (tests/support/preloaded.py):
    a separate process all the same, with its own pipes, environment and exit code."""
    from preloaded import popen

    return popen(list(args), env=cli_env(store_path, **extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 text=True)


def finish(procs: list[subprocess.Popen], timeout: float = 900) -> list[tuple[int, str, str]]:
    """Wait for every process (``timeout`` is a hang guard only); returns (exit code, stdout, stderr)."""
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=timeout)
        out.append((p.returncode, stdout, stderr))
    return out


def expected_memories(store_path: Path) -> set[str]:
    """Ids of every durable memory the event log says is in the index: written, not archived or
    tombstoned later."""
    ids: set[str] = set()
    path = Path(store_path) / "events" / "memory-events.jsonl"
    if not path.exists():
        return ids
    for line in path.read_text(encoding="utf-8").splitlines():
        e = json.loads(line)
        if e.get("event") == "memory.written" and e.get("tier") == "durable":
            ids.add(e["memory_id"])
        elif e.get("action") in ("archive", "tombstone"):
            ids.discard(e.get("memory_id"))
    return ids


CHECK = r"""
import json, os, sys
from consolidate import Store
store = Store(sys.argv[1], project="p", create=False)
lt = store.longterm()
rows = lt.all()
full = sys.argv[2] == "full"
cache = sys.argv[3] if len(sys.argv) > 3 else None  # {text: its embedding} from this store's earlier checks
known = {}
if full and cache and os.path.exists(cache):
    with open(cache, encoding="utf-8") as f:
        known = json.load(f)
texts = [r["document"] for r in rows]
todo = sorted({t for t in texts if t not in known}) if full else []
known.update(zip(todo, (list(map(float, v)) for v in lt.embed(todo))) if todo else ())
if full and cache:
    with open(cache, "w", encoding="utf-8") as f:
        json.dump(known, f)
vectors = [known[t] for t in texts] if full else []
hits = lt.neighbours_many(vectors, k=5, statuses=("active", "quarantined", "disputed")) if vectors else []
missing = [row["id"] for row, near in zip(rows, hits) if row["id"] not in [h["id"] for h in near]]
print(json.dumps({"count": lt.count(), "docs": {r["id"]: r["document"] for r in rows}, "not_found": missing}))
"""


def check_index(store_path: Path, full: bool = True, timeout: float = 600, vectors: Path | None = None) -> dict:
    """In a fresh process: ``{"count", "docs": {id: text}, "not_found": [ids]}``: the index count,
    every memory, and (``full``) the ids a vector query for their own text does not find (top 5, the
    queries of all memories batched in one index call: LongTerm.neighbours_many). ``vectors``: a JSON
    file (outside the store) keeping each text's MiniLM embedding for the next checks of the same
    test, so a text is embedded once, every memory still queried at every check."""
    args = [str(store_path), "full" if full else "ids", *([str(vectors)] if vectors else [])]
    out = subprocess.run([sys.executable, "-c", CHECK, *args], env=cli_env(store_path), capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


def applied_per_session(store_path: Path) -> dict[str, int]:
    """How many times each session was applied (``run.applied`` events)."""
    counts: dict[str, int] = {}
    path = Path(store_path) / "events" / "memory-events.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        e = json.loads(line)
        if e.get("event") == "run.applied":
            counts[e["session_id"]] = counts.get(e["session_id"], 0) + 1
    return counts


class MCPSession:
    """``consolidate mcp`` as a real subprocess over stdio (``preloaded``: forked from the preloaded
    server, :func:`preloaded.starter_argv`). One thread runs the client session in
    its own event loop; ``call`` hands it one tool call at a time, so a synchronous test can call
    ``recall`` between steps."""

    def __init__(self, store_path: Path, *, preloaded: bool = False):
        import queue

        self.store_path = store_path
        self.preloaded = preloaded
        self.requests: queue.Queue = queue.Queue()
        self.ready: queue.Queue = queue.Queue()
        self.thread = None

    def _serve(self) -> None:
        import anyio
        from mcp import Client, StdioServerParameters

        cwd = str(self.store_path.parent)
        argv = [sys.executable, "-m", "consolidate", "mcp"]
        if self.preloaded:  # forked from the preloaded server, its stdio handed over by a small starter
            from preloaded import starter_argv

            argv = starter_argv(["mcp"], cwd=cwd)
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=cli_env(self.store_path), cwd=cwd)

        async def main():
            async with Client(params, read_timeout_seconds=600) as client:
                self.ready.put(None)
                while True:
                    item = await anyio.to_thread.run_sync(self.requests.get)
                    if item is None:
                        return
                    name, arguments, reply = item
                    try:
                        reply.put(("ok", await client.call_tool(name, arguments)))
                    except Exception as exc:  # noqa: BLE001 - handed to the test thread
                        reply.put(("error", exc))

        try:
            anyio.run(main)
        except Exception as exc:  # noqa: BLE001
            self.ready.put(exc)

    def __enter__(self):
        import threading

        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        first = self.ready.get(timeout=300)
        if isinstance(first, Exception):
            raise first
        return self

    def __exit__(self, *exc):
        self.requests.put(None)
        self.thread.join(timeout=120)

    def call(self, name: str, **arguments):
        import queue

        reply: queue.Queue = queue.Queue()
        self.requests.put((name, arguments, reply))
        kind, value = reply.get(timeout=600)
        if kind == "error":
            raise value
        return value

    def data(self, name: str, **arguments):
        """A tool's structured result; fails on a tool error."""
        result = self.call(name, **arguments)
        assert not result.is_error, result.content[0].text
        sc = result.structured_content
        return sc["result"] if set(sc) == {"result"} else sc

    def recall_ids(self, query: str, k: int = 5) -> list[str]:
        """Ids of the memories the recall tool returns for ``query``."""
        return [m["id"] for m in self.data("recall", query=query, k=k)["memories"]]
