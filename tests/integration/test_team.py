"""Team memory on a Chroma server (issue 16): two store folders as two machines, each command in its
own process (``python -m consolidate``, forked from a process that imported chromadb already:
tests/support/preloaded.py), against a real ``chroma run`` on 127.0.0.1 (one per module, each test on a
project of its own; a test that stops the server has its own) and, for token authentication,
Chroma's own Python server with its token provider (``chroma run`` 1.x has none)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from consolidate.team.local import database_name
from preloaded import run as run_preloaded
from servers import wait_until_answers
from paths import REPO, SUPPORT

pytestmark = [pytest.mark.chroma_server, pytest.mark.integration]

CONSOLIDATE = [sys.executable, "-m", "consolidate"]
FAKE = SUPPORT / "fake_cli"
#: A keep-everything CLI judge that relates pairs by rule (tests/support/fake_cli/_common.py: relation).
MODAL_JUDGE = f"cli:template:{shlex.quote(sys.executable)} {shlex.quote(str(FAKE / 'modal.py'))}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ChromaServer:
    """``chroma run`` on 127.0.0.1 with its data in ``folder``; ``stop()`` and ``start()`` again on
    the same port and data (a server that goes away and comes back)."""

    project = "payments"

    def __init__(self, folder: Path):
        self.folder = folder
        self.database = database_name(self.project)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def start(self):
        exe = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
        self.log = open(self.folder / "chroma.log", "ab")
        self.proc = subprocess.Popen([exe, "run", "--path", str(self.folder / "server-data"), "--host", "127.0.0.1",
                                      "--port", str(self.port)], stdout=self.log, stderr=subprocess.STDOUT)
        wait_until_answers(self.url + "/api/v2/heartbeat", self.proc, 60, "chroma run", self.folder / "chroma.log")
        return self

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None
            self.log.close()


class TeamOnServer:
    """One test's team on the module's shared ``chroma run``: its own project (so its own database,
    ``consolidate_<project>``), nothing shared with another test but the server process."""

    def __init__(self, chroma: ChromaServer, project: str):
        self.url, self.project, self.database = chroma.url, project, database_name(project)


@pytest.fixture(scope="module")
def shared_chroma(tmp_path_factory):
    """One ``chroma run`` for the module's tests that do not stop their server (about 3 s of start
    each, issue 30); each test has its own project on it (``server``)."""
    s = ChromaServer(tmp_path_factory.mktemp("chroma")).start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def server(shared_chroma, request):
    """This test's team: a project of its own on the module's server, named after the test."""
    return TeamOnServer(shared_chroma, "payments-" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:12])


@pytest.fixture
def own_server(tmp_path):
    """A ``chroma run`` of the test's own (project ``payments``), for a test that stops and starts it."""
    s = ChromaServer(tmp_path).start()
    try:
        yield s
    finally:
        s.stop()


def env(**extra) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    out.update({k: str(v) for k, v in extra.items()})
    return out


def cli(store: Path, *args, extra_env: dict | None = None, check: bool = True, timeout: float = 300,
        stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """One consolidate command on one machine: a new process, forked from one that imported chromadb
    and the other heavy packages already (tests/support/preloaded.py: about 2 s less per command)."""
    out = run_preloaded([args[0], "--store", str(store), *args[1:]], env=env(**(extra_env or {})), timeout=timeout,
                        input=stdin, cwd=cwd)
    if check:
        assert out.returncode in (0, 75), f"{args}: {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


class Background:
    """One consolidate command started in the background, as ``subprocess.Popen(CONSOLIDATE + args)``
    with its output piped: its own process (preloaded.run, waited on in a thread), so a test can act
    while it runs; ``poll()``, ``communicate(timeout)`` and ``returncode`` as Popen's. For a command
    whose interpreter start-up is not what the test pins (about 0.8 s of CPU less than a new one)."""

    def __init__(self, args: list[str], env: dict[str, str], timeout: float = 300):
        self.result: subprocess.CompletedProcess | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(list(args), env, timeout), daemon=True)
        self.thread.start()

    def _run(self, args, env, timeout):
        try:
            self.result = run_preloaded(args, env=env, timeout=timeout)
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread (communicate)
            self.error = exc

    def poll(self) -> int | None:
        return None if self.thread.is_alive() or self.result is None else self.result.returncode

    @property
    def returncode(self) -> int | None:
        return self.poll()

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise subprocess.TimeoutExpired(["consolidate"], timeout)
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result.stdout, self.result.stderr


def machine(tmp_path: Path, name: str, server, embedding: str = "hash", extra_env: dict | None = None) -> Path:
    """A store folder ``tmp_path/name/.memofs`` in ``server``'s team (its ``url`` and ``project``)."""
    store = tmp_path / name / ".memofs"
    out = cli(store, "team", "init", "--chroma-url", server.url, "--project", server.project, "--embedding", embedding,
              extra_env=extra_env)
    assert "team store: " + server.url in out.stdout
    return store


def read_ledger(store_path: Path) -> dict:
    """The store's team ledger (consolidate/team/ledger.py), as one dict."""
    from consolidate.store.store import Store
    from consolidate.team import ledger

    store = Store(store_path)
    try:
        return ledger.read(store)
    finally:
        store.close()


def session(store: Path, sid: str, *notes: str, judge: str = "noop", flag: bool = True, outcome: str = "success",
            extra_env: dict | None = None, kind: str | None = None) -> subprocess.CompletedProcess:
    for text in notes:
        cli(store, "note", "--session", sid, *(["--flag"] if flag else []), *(["--kind", kind] if kind else []), text,
            extra_env=extra_env)
    cli(store, "end", "--session", sid, "--outcome", outcome, extra_env=extra_env)
    return cli(store, "run", "--judge", judge, extra_env=extra_env)


def server_records(server, collection: str = "memories", headers: dict | None = None) -> list[dict]:
    """Every record of a collection of ``server``'s project database, read with Chroma's own client in
    this process."""
    import chromadb
    from chromadb.config import Settings

    host, port = server.url.rsplit(":", 1)
    client = chromadb.HttpClient(host=host.split("//")[1], port=int(port), database=server.database,
                                 settings=Settings(anonymized_telemetry=False))
    try:
        col = client.get_collection(collection)
    except Exception:  # noqa: BLE001 - no such collection yet: no records
        return []
    res = col.get(include=["documents", "metadatas"])
    return [{"id": i, "document": d, "metadata": m} for i, d, m in zip(res["ids"], res["documents"], res["metadatas"])]


def graph_of(store: Path):
    from consolidate.store import graph

    return graph.load(store / "graph")


def stored_docs(store: Path) -> list[str]:
    """The documents of every active memory in ``store``'s local index, read in pages (exact), in a
    new process."""
    code = ("import json, sys; from consolidate.store.store import Store; "
            "print(json.dumps([r['document'] for r in Store(sys.argv[1]).longterm().with_status('active')]))")
    out = subprocess.run([sys.executable, "-c", code, str(store)], capture_output=True, text=True, env=env(), timeout=300)
    assert out.returncode == 0, out.stderr
    return sorted(json.loads(out.stdout))


def local_docs(store: Path, statuses=("active",)) -> list[str]:
    out = cli(store, "recall", "--json", "-k", "1000", "--min-similarity", "-1", "--all", "anything")
    return sorted(m["statement"] if "statement" in m else m["document"] for m in json.loads(out.stdout)
                  if m.get("status", "active") in statuses)


# -- a memory consolidated on A is recalled on B and is in B's graph ------------------------------------


def test_memory_from_a_reaches_b_context_recall_and_graph(tmp_path, server):
    a = machine(tmp_path, "a", server, embedding="minilm")
    b = machine(tmp_path, "b", server, embedding="minilm")
    text = "Run pnpm install --frozen-lockfile before tests; package.json pins pnpm 9"
    out = session(a, "a1", text)
    assert "graduated" in out.stdout
    status_a = cli(a, "status").stdout
    assert f"team store: {server.url} project {server.project}" in status_a and "pending pushes: 0" in status_a
    [record] = server_records(server)
    assert record["document"] == text and record["metadata"]["version"] == 1
    # B: the installed SessionStart hook, run as Claude Code runs it, pulls first and shows it
    project = tmp_path / "b"
    hook = subprocess.run(CONSOLIDATE + ["hook", "--store", str(b)], input=json.dumps(
        {"session_id": "b1", "hook_event_name": "SessionStart", "cwd": str(project)}), capture_output=True, text=True,
        env=env(), timeout=120)
    assert hook.returncode == 0
    assert "pulled from the team store just now" in hook.stdout and text in hook.stdout
    hits = cli(b, "recall", "which package manager installs dependencies before the tests").stdout
    assert hits.splitlines()[0].startswith(text)
    g = graph_of(b)
    mid = record["id"]
    assert g.nodes[mid]["kind"] == "memory" and g.nodes[mid]["statement"] == text
    assert g.has_edge(mid, "session:a1", key="derived_from") and g.nodes["session:a1"]["kind"] == "session"
    assert g.has_edge(mid, "entity:package.json", key="mentions") and g.nodes["entity:package.json"]["kind"] == "entity"
    assert g.has_edge(mid, "entity:pnpm", key="mentions")
    # B pushes nothing back that it only pulled
    assert cli(b, "sync").stdout.startswith("pushed 0 runs")
    [again] = server_records(server)
    assert again["metadata"]["version"] == 1


# -- contradictions across machines: the same outcomes as on one machine ---------------------------------

CASES = {  # name: (old statement, new statement, the old note flagged, kind of both notes)
    "supersede": ("Integration tests run against Postgres 15 in CI",
                  "Integration tests run against Postgres 16 in CI now; 15 is gone", False, None),
    # a flagged preference is the user's word (user-stated); a judged note is credited observed at most
    "reject": ("Deploys go out on Friday at 18:00 UTC", "Deploys go out on Friday at 20:00 UTC", True, "preference"),
    "disputed": ("The API gateway timeout is 30 seconds for every route",
                 "The API gateway timeout is 60 seconds for every route", False, None),
}
JUDGE_ENV = {"FAKE_CLI_MODE": "keepall", "FAKE_CLI_RELATION": "auto"}


def _outcome(store: Path) -> list[tuple[str, str]]:
    out = cli(store, "recall", "--json", "-k", "50", "--min-similarity", "-1", "--all", "timeout deploys Postgres")
    return sorted((m["statement"], m["status"]) for m in json.loads(out.stdout))


def test_contradiction_across_machines_has_the_one_machine_outcomes(tmp_path, server):
    solo = tmp_path / "solo" / ".memofs"
    a = machine(tmp_path, "a", server, embedding="minilm", extra_env=JUDGE_ENV)
    b = machine(tmp_path, "b", server, embedding="minilm", extra_env=JUDGE_ENV)
    for name, (old, new, old_flagged, kind) in CASES.items():
        for first, second in ((solo, solo), (a, b)):  # one machine, then A and B
            session(first, f"{name}-1", old, judge=MODAL_JUDGE, flag=old_flagged, kind=kind, extra_env=JUDGE_ENV)
            session(second, f"{name}-2", new, judge=MODAL_JUDGE, flag=False, kind=kind, extra_env=JUDGE_ENV)
    solo_outcome = _outcome(solo)
    assert _outcome(b) == solo_outcome
    assert not list((b / "team" / "outbox").glob("*.json")), (b / "logs" / "team.log").read_text()
    cli(a, "sync")
    assert _outcome(a) == solo_outcome
    statuses = dict(solo_outcome)
    assert statuses[CASES["supersede"][1]] == "active" and CASES["supersede"][0] not in statuses
    assert statuses[CASES["reject"][0]] == "active" and CASES["reject"][1] not in statuses
    assert statuses[CASES["disputed"][0]] == statuses[CASES["disputed"][1]] == "disputed"
    # the team store says the same: the superseded entry is kept there with its status, for every machine
    on_server = {r["document"]: r["metadata"]["status"] for r in server_records(server)}
    assert on_server[CASES["supersede"][0]] == "superseded" and on_server[CASES["supersede"][1]] == "active"
    assert on_server[CASES["disputed"][0]] == on_server[CASES["disputed"][1]] == "disputed"
    assert CASES["reject"][1] not in on_server
    # one graph: A sees B's supersedes edge
    g = graph_of(a)
    new_id = next(r["id"] for r in server_records(server) if r["document"] == CASES["supersede"][1])
    old_id = next(r["id"] for r in server_records(server) if r["document"] == CASES["supersede"][0])
    assert g.has_edge(new_id, old_id, key="supersedes") and g.nodes[old_id]["status"] == "superseded"


# -- A and B apply at the same time, 20 times -----------------------------------------------------------

MACHINE_LOOP = r"""
import sys, time
from pathlib import Path
from consolidate import Store
from consolidate.pipeline.run import run_queue
name, path, rounds, gate = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
other = "B" if name == "A" else "A"
store = Store(path)
def barrier(i):
    # round i starts when both machines are there (both ended round i - 1): the two applies of a
    # round start together, without a fixed start time or round length to wait out
    (gate / f"{name}-{i}").touch()
    deadline = time.monotonic() + 600
    while not (gate / f"{other}-{i}").exists():
        assert time.monotonic() < deadline, f"machine {other} never reached round {i}"
        time.sleep(0.002)
for i in range(rounds):
    barrier(i)
    sid = f"{name}-{i}"
    store.sessions.add_note(sid, f"Machine {name} round {i}: the build of service {name}{i} takes {100 + i} seconds", flag=True, kind="fact")
    store.sessions.add_note(sid, f"Shared round {i}: the cache of job {i} lives in .cache/job-{i}", flag=True, kind="fact")
    store.sessions.end(sid, "success")
    run_queue(store, judges=["noop"])
print("done", name)
"""


def test_two_machines_apply_at_the_same_time_twenty_times(tmp_path, server):
    """Both machines write the same "Shared round i" memory (one id) and one of their own each round;
    the races between their pushes are the ones test_a_write_overwritten_by_another_machine... and
    test_a_push_that_outlives_its_time_bound... replay deterministically. Each round starts on a
    barrier (a file per machine and round), so both applies of every round overlap; the twenty rounds
    stay (the count is what makes a lost or doubled push likely to show), only the waits are gone."""
    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    rounds = 20
    gate = tmp_path / "gate"
    gate.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", MACHINE_LOOP, name, str(store), str(rounds), str(gate)],
                              env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name, store in (("A", a), ("B", b))]
    for p in procs:
        out, err = p.communicate(timeout=900)
        assert p.returncode == 0, err
    for store in (a, b):
        cli(store, "sync")
    for store in (a, b):
        cli(store, "sync")  # the second pulls what the other pushed after the first
    records = server_records(server)
    docs = [r["document"] for r in records]
    expected = {f"Machine {n} round {i}: the build of service {n}{i} takes {100 + i} seconds"
                for n in "AB" for i in range(rounds)} | {f"Shared round {i}: the cache of job {i} lives in .cache/job-{i}"
                                                         for i in range(rounds)}
    assert len(docs) == len(set(docs)) == len(expected) and set(docs) == expected  # nothing lost, nothing twice
    assert all(r["metadata"]["status"] == "active" for r in records)
    events = [json.loads(r["document"]) for r in server_records(server, collection="events")]
    applied = sorted(e["session_id"] for e in events if e["event"] == "run.applied")
    assert applied == sorted(f"{n}-{i}" for n in "AB" for i in range(rounds))
    for store in (a, b):
        # every memory is in each machine's index (read by id, not by the approximate nearest-neighbour
        # search recall uses: an HNSW query over records upserted many times may return fewer than all)
        assert set(stored_docs(store)) == expected
        assert not list((store / "team" / "outbox").glob("*.json"))


def test_a_write_overwritten_by_another_machine_at_the_same_version_is_found_and_merged(tmp_path, server):
    """Chroma has no compare-and-set, so two machines may both write version n of one memory: B's
    push reads the memory (v1), A forgets it and pushes v2 (forgotten), then B writes its own v2
    (re-confirmed, active) over A's. B's read-back sees its own write; A's forget was silently gone
    from the team store and B kept a forgotten memory for ever. Now A's next pull sees version 2
    written by another machine where it wrote version 2 itself, queues its write again, and the push
    merges the two (forgotten is kept over active): v3, forgotten on every machine."""
    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    text = "The nightly export writes to the bucket reports-eu"
    script = tmp_path / "low.json"  # written with low confidence: B's re-confirmation raises it (a real change)
    script.write_text(json.dumps({"nightly export": {
        "verdict": "keep", "statement": text, "type": "fact", "evidence": "observed-success", "confidence": "low",
        "reason": "scripted keep"}}))
    session(a, "a1", text, judge=f"scripted:{script}", flag=False)
    assert [r["metadata"]["confidence"] for r in server_records(server)] == ["low"]
    assert cli(b, "sync").stdout.splitlines()[1].startswith("pulled 1 memories")  # (no recall: it would be an echo)
    [mid] = [r["id"] for r in server_records(server)]
    # B re-confirms it; its push stops right after reading the team store's copy (v1)
    pause = tmp_path / "pause"
    pause.mkdir()
    cli(b, "note", "--session", "b1", "--flag", "--kind", "fact", text)
    cli(b, "end", "--session", "b1", "--outcome", "success")
    paused = {"CONSOLIDATE_PAUSE_AT": "team:push:read", "CONSOLIDATE_PAUSE_DIR": str(pause),
              "CONSOLIDATE_TEAM_PUSH_SECONDS": "300"}
    b_run = Background(["run", "--store", str(b), "--judge", "noop"], env=env(**paused))
    try:
        deadline = time.monotonic() + 240
        while not (pause / "team_push_read.reached").exists():
            assert b_run.poll() is None, b_run.communicate()
            assert time.monotonic() < deadline, "B's push never reached its read"
            time.sleep(0.05)
        cli(a, "forget", mid)  # A: forgotten, pushed as v2
        [r] = server_records(server)
        assert (r["metadata"]["status"], r["metadata"]["version"]) == ("forgotten", 2)
    finally:
        (pause / "team_push_read.go").touch()
        out, err = b_run.communicate(timeout=300)
    assert b_run.returncode == 0, err
    [r] = server_records(server)  # B wrote its v2 over A's: the race, reproduced
    assert (r["metadata"]["status"], r["metadata"]["version"]) == ("active", 2)
    assert r["metadata"]["origin"] != json.loads((a / "team.json").read_text())["machine"]
    # A's next sync finds its lost write and pushes it again, merged
    cli(a, "sync")
    [r] = server_records(server)
    assert (r["metadata"]["status"], r["metadata"]["version"]) == ("forgotten", 3)
    assert "overwritten on the team store" in (a / "logs" / "team.log").read_text()
    cli(b, "sync")
    assert local_docs(a) == [] and local_docs(b) == []
    assert not list((a / "team" / "outbox").glob("*.json")) and not list((b / "team" / "outbox").glob("*.json"))
    cli(a, "sync")
    assert server_records(server)[0]["metadata"]["version"] == 3  # converged: no further writes


SLOW_PUSH = r"""
import json, os, sys, time
from pathlib import Path
from consolidate import Store
from consolidate.team import local as team
from consolidate.pipeline.run import run_queue
from consolidate.team.sync import push
store, pause = Store(sys.argv[1]), Path(os.environ["CONSOLIDATE_PAUSE_DIR"])
store.sessions.add_note("s1", "The payments service reads its secrets from Vault path kv/payments", flag=True, kind="fact")
store.sessions.end("s1", "success")
run_queue(store, judges=["noop"])  # its push times out (1 s) while it waits inside, after its read
while not (pause / "team_push_read.reached").exists():
    time.sleep(0.05)
second = push(store, seconds=5)  # the same process, the timed-out push still running
(pause / "team_push_read.go").touch()
deadline = time.monotonic() + 120
while team.pending(store) and time.monotonic() < deadline:
    time.sleep(0.1)
print(json.dumps({"second": second, "state": team.read_state(store), "pending": len(team.pending(store))}))
"""


def test_a_push_that_outlives_its_time_bound_keeps_its_lock_until_it_ends(tmp_path, server):
    """A push that takes longer than its bound goes on in its thread (Chroma's client has no
    timeout): it used to release the push lock when the caller gave up, so the next push or sync of
    the same process pushed the same entries beside it, each rewriting the ledger from its own copy.
    Now the thread holds the lock: the second push is skipped, the first finishes and pushes once."""
    a = machine(tmp_path, "a", server)
    pause = tmp_path / "pause"
    pause.mkdir()
    out = subprocess.run([sys.executable, "-c", SLOW_PUSH, str(a)], capture_output=True, text=True, timeout=600,
                         env=env(CONSOLIDATE_PAUSE_AT="team:push:read", CONSOLIDATE_PAUSE_DIR=str(pause),
                                 CONSOLIDATE_TEAM_PUSH_SECONDS="1"))
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["second"]["skipped"] == "another push is running" and result["pending"] == 0
    assert "did not answer the push within 1 s" in (a / "logs" / "team.log").read_text()
    [r] = server_records(server)
    assert r["metadata"]["version"] == 1
    events = [json.loads(x["document"]) for x in server_records(server, collection="events")]
    assert [e["event"] for e in events].count("memory.written") == 1
    led = read_ledger(a)
    assert led["memories"] == {r["id"]: 1} and led["etags"][r["id"]] == r["metadata"]["write_id"]


def _run_id(store: Path, session_prefix: str) -> str:
    """The run id of the last applied run of a session whose id starts with ``session_prefix``."""
    lines = [json.loads(x) for x in (store / "events" / "memory-events.jsonl").read_text().splitlines() if x.strip()]
    return [e["run_id"] for e in lines if e.get("event") == "run.applied"
            and str(e.get("session_id")).startswith(session_prefix)][-1]


def test_undo_on_a_reaches_the_team_store_and_b(tmp_path, server):
    """``consolidate undo`` of a run is pushed like the run was: the memories it added are ``undone``
    on the team store and leave B (index and graph), and do not come back on A's next pull; an
    undone ``forget`` restores the memory on the team store and on B, and lifts its tombstone there
    (B may state it again)."""
    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    added = ["The ledger service batches writes every 200 ms", "Invoices are numbered per tenant, not globally"]
    session(a, "a1", *added)
    kept = "The payments API is versioned in the URL path (/v2/)"
    session(a, "a2", kept)
    cli(b, "sync")
    assert set(local_docs(b)) == set(added) | {kept}
    ids = {r["document"]: r["id"] for r in server_records(server)}
    assert graph_of(b).has_edge(ids[added[0]], "session:a1", key="derived_from")
    # undo a1 on A: pushed at once
    out = cli(a, "undo", _run_id(a, "a1"))
    assert "removed 2 entries" in out.stdout
    on_server = {r["document"]: r["metadata"]["status"] for r in server_records(server)}
    assert on_server == {added[0]: "undone", added[1]: "undone", kept: "active"}
    assert not list((a / "team" / "outbox").glob("*.json"))
    events = [json.loads(r["document"]) for r in server_records(server, collection="events")]
    assert [e["run_id"] for e in events if e["event"] == "run.undone"] == [_run_id(a, "a1")]
    assert [e["event"] for e in events].count("run.applied") == 2  # the run's own events are kept
    cli(b, "sync")
    assert local_docs(b) == [kept]
    g = graph_of(b)
    assert ids[added[0]] not in g and not g.has_edge(ids[added[0]], "session:a1", key="derived_from")
    assert g.has_edge(ids[kept], "session:a2", key="derived_from")
    cli(a, "sync")
    assert local_docs(a) == [kept]  # A's pull does not bring them back
    # forget on A, pulled by B; then the forget undone on A: restored everywhere, tombstone lifted
    cli(a, "forget", ids[kept])
    cli(b, "sync")
    assert local_docs(b) == []
    forgotten = b / "archive" / "forgotten.jsonl"
    assert ids[kept] in {json.loads(x)["id"] for x in forgotten.read_text().splitlines()}
    cli(a, "undo", _run_id(a, "maintenance:"))
    [restored] = [r for r in server_records(server) if r["id"] == ids[kept]]
    assert restored["metadata"]["status"] == "active"
    cli(b, "sync")
    assert local_docs(b) == [kept] and local_docs(a) == [kept]
    assert ids[kept] not in forgotten.read_text()  # B may state it again
    # nothing was pushed twice: one write per change
    assert restored["metadata"]["version"] == 3


def test_mcp_recall_on_b_reads_what_a_pushed_after_b_started(tmp_path, own_server):
    """B's MCP server (``consolidate mcp``, a stdio process, started before A's run) answers
    ``recall`` with a memory A pushed after it started: recall pulls first, bounded as SessionStart.
    With the server stopped it answers from the last pulled copy and says so."""
    server = own_server  # stopped and started again: not the module's shared server
    import anyio
    from mcp import Client, StdioServerParameters

    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    params = StdioServerParameters(command=sys.executable, args=["-m", "consolidate", "mcp", "--store", str(b)],
                                   env=env(), cwd=str(tmp_path / "b"))
    text = "Refund webhooks are signed with the key in vault path kv/refunds"
    results = []

    async def main():
        with anyio.fail_after(400):
            async with Client(params, read_timeout_seconds=120) as client:
                first = await client.call_tool("recall", {"query": "refund webhooks signing key", "k": 5})
                results.append(first.structured_content)
                await anyio.to_thread.run_sync(lambda: session(a, "a1", text))
                second = await client.call_tool("recall", {"query": "refund webhooks signing key", "k": 5})
                results.append(second.structured_content)
                await anyio.to_thread.run_sync(server.stop)
                third = await client.call_tool("recall", {"query": "refund webhooks signing key", "k": 5})
                results.append(third.structured_content)

    anyio.run(main)
    first, second, third = results
    assert first["count"] == 0 and "pulled from the team store just now" in first["team"]
    assert [m["text"].split(" [")[0] for m in second["memories"]] == [text]
    assert "pulled from the team store just now" in second["team"]
    assert [m["text"].split(" [")[0] for m in third["memories"]] == [text]  # the last pulled copy
    assert "the team store was not reached" in third["team"] and "as last pulled at" in third["team"]


def test_cli_recall_on_b_pulls_what_a_pushed_and_says_where_memories_come_from(tmp_path, own_server):
    """``consolidate recall`` (the CLI, as MCP recall) on a store in a team pulls first, bounded as
    SessionStart: a memory A pushed after B's last pull is found, in text and --json output; with the
    server stopped it answers from the last pulled copy and says so on stderr (stdout stays the
    results, so --json is still one JSON value)."""
    server = own_server  # stopped and started again: not the module's shared server
    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    query = ("recall", "refund webhooks signing key", "-k", "5", "--min-similarity", "-1")
    first = cli(b, *query)
    assert "pulled from the team store just now" in first.stderr and "refund" not in first.stdout.lower()
    text = "Refund webhooks are signed with the key in vault path kv/refunds"
    session(a, "a1", text)
    second = cli(b, *query, "--json")
    assert [m["statement"] for m in json.loads(second.stdout)] == [text]
    assert "team: project payments, pulled from the team store just now" in second.stderr
    server.stop()
    third = cli(b, *query)
    assert third.stdout.splitlines()[0].split(" [")[0] == text  # the last pulled copy
    assert "the team store was not reached" in third.stderr and "as last pulled at" in third.stderr


# -- outcome gating ---------------------------------------------------------------------------------------


def test_aborted_session_sends_nothing_and_failed_only_its_failure_event(tmp_path, server):
    a = machine(tmp_path, "a", server)
    session(a, "gone", "The release branch is cut on Mondays at 09:00", outcome="aborted")
    assert server_records(server) == [] and server_records(server, collection="events") == []
    assert not list((a / "team" / "outbox").glob("*.json"))
    session(a, "broken", "Deploys need the VPN profile corp-2 to reach the cluster", outcome="failure")
    assert server_records(server) == []
    events = [json.loads(r["document"]) for r in server_records(server, collection="events")]
    assert [(e["event"], e["session_id"]) for e in events] == [("session.failed", "broken")]
    assert server_records(server, collection="edges") == []
    session(a, "fine", "The release branch is cut on Tuesdays at 09:00")
    events = [json.loads(r["document"]) for r in server_records(server, collection="events")]
    assert {e["session_id"] for e in events if e["event"] == "run.applied"} == {"fine"}


# -- the server goes away during A's work and comes back ------------------------------------------------


#: A CLI judge that keeps every note once the test has stopped the server (it stops it while the
#: judge thinks, and then creates the file ``go``: the judge waits on that, not a fixed pause). It
#: creates ``thinking`` first: the run has pulled by then (the pull comes before the judge).
SLOW_JUDGE = """
import json, os, sys, time
sys.path.insert(0, {fake!r})
from _common import KIND_NOTE, keep_all
prompt = sys.stdin.read()
open({thinking!r}, "w").close()
deadline = time.monotonic() + 120
while not os.path.exists({go!r}) and time.monotonic() < deadline:
    time.sleep(0.02)
print(json.dumps({{"verdicts": keep_all(KIND_NOTE.findall(prompt))}}))
"""


def test_server_down_run_completes_locally_and_one_sync_pushes_exactly_once(tmp_path, own_server):
    server = own_server  # stopped and started again: not the module's shared server
    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    session(b, "b0", "The staging cluster runs in eu-west-1")
    hook_start = lambda store: subprocess.run(CONSOLIDATE + ["hook", "--store", str(store)], input=json.dumps(
        {"session_id": "s", "hook_event_name": "SessionStart", "cwd": str(tmp_path)}), capture_output=True, text=True,
        env=env(CONSOLIDATE_TEAM_PULL_SECONDS=2), timeout=120)
    assert "The staging cluster runs in eu-west-1" in hook_start(a).stdout
    # A's run: it pulls (server up), its judge thinks, the server is stopped meanwhile, it applies
    judge = tmp_path / "slow_judge.py"
    go = tmp_path / "go"
    thinking = tmp_path / "thinking"
    judge.write_text(SLOW_JUDGE.format(fake=str(FAKE), go=str(go), thinking=str(thinking)))
    text = "The nightly job rebuilds the search index at 03:00 UTC"
    cli(a, "note", "--session", "a1", text)
    cli(a, "end", "--session", "a1", "--outcome", "success")
    state = a / "team" / "state.json"
    pulled_before = (os.stat(state).st_ino, os.stat(state).st_mtime_ns)  # the state file as the hook's pull left it
    run = Background(["run", "--store", str(a), "--judge",
                      f"cli:template:{shlex.quote(sys.executable)} {shlex.quote(str(judge))}"], env=env())
    deadline = time.monotonic() + 120  # a hang guard only
    while not thinking.exists():  # not last_pull's change: ISO seconds, the same second as the hook's pull
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(0.05)
    assert (os.stat(state).st_ino, os.stat(state).st_mtime_ns) != pulled_before  # the run's pull wrote it
    server.stop()  # while the judge thinks
    go.touch()
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0 and "graduated" in out, err  # the run completed locally
    assert local_docs(a) == sorted([text, "The staging cluster runs in eu-west-1"])
    assert len(list((a / "team" / "outbox").glob("*.json"))) == 1
    status = cli(a, "status").stdout
    assert "pending pushes: 1" in status and "last team error: push failed" in status
    # SessionStart with the server down: the last pulled copy, and the header says so
    shown = hook_start(a).stdout
    assert "the team store was not reached" in shown and "memories as last pulled at" in shown
    assert "The staging cluster runs in eu-west-1" in shown and text in shown
    bad = cli(a, "sync", check=False)
    assert bad.returncode == 4 and bad.stderr.count("\n") == 1 and "cannot be reached" in bad.stderr
    assert len(list((a / "team" / "outbox").glob("*.json"))) == 1
    server.start()
    synced = cli(a, "sync")
    assert synced.stdout.startswith("pushed 1 runs (1 memories")
    assert cli(a, "sync").stdout.startswith("pushed 0 runs")
    records = server_records(server)
    assert sorted(r["document"] for r in records) == sorted([text, "The staging cluster runs in eu-west-1"])
    assert all(r["metadata"]["version"] == 1 for r in records)
    events = [json.loads(r["document"]) for r in server_records(server, collection="events")]
    assert sorted(e["session_id"] for e in events if e["event"] == "run.applied") == ["a1", "b0"]
    assert "pending pushes: 0" in cli(a, "sync", "--status").stdout
    cli(b, "sync")
    assert text in local_docs(b)


# -- only the team gets in --------------------------------------------------------------------------------


class AuthServer:
    """Chroma's Python server (``uvicorn chromadb.app:app``) with Chroma's token authentication and
    consolidate's per-database authorization: ``chroma run`` (the Rust server of Chroma 1.x) has no
    authentication of its own. ``tokens``: {project: token}, each bound to its project's database."""

    def __init__(self, folder: Path, tokens: dict[str, str], tls: tuple[Path, Path] | None = None):
        import secrets

        self.port = _free_port()
        self.project, self.database = "payments", database_name("payments")
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        users = "users:\n" + "".join(
            f"  - id: {project}\n    tenant: default_tenant\n    databases: [\"consolidate_{project}\"]\n"
            f"    tokens: [\"{token}\"]\n" for project, token in tokens.items())
        creds = folder / "server-users.yaml"
        creds.write_text(users)
        creds.chmod(0o600)
        self.log_path = folder / "auth-server.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "chromadb.app:app", "--host", "127.0.0.1", "--port", str(self.port),
             *(["--ssl-keyfile", str(tls[0]), "--ssl-certfile", str(tls[1])] if tls else [])],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=folder,
            env={**env(), "IS_PERSISTENT": "TRUE", "PERSIST_DIRECTORY": str(folder / "auth-data"),
                 "ANONYMIZED_TELEMETRY": "False",
                 "CHROMA_SERVER_AUTHN_PROVIDER": "chromadb.auth.token_authn.TokenAuthenticationServerProvider",
                 "CHROMA_SERVER_AUTHN_CREDENTIALS_FILE": str(creds),
                 "CHROMA_SERVER_AUTHZ_PROVIDER": "consolidate.team.authz.DatabaseAuthorizationProvider",
                 "PYTHONPATH": str(REPO)})
        self.secrets = secrets
        if tls:
            _wait_tls(self.url + "/api/v2/heartbeat", tls[1], self.proc, 90, self.log_path)
        else:
            wait_until_answers(self.url + "/api/v2/heartbeat", self.proc, 90, "chroma server with token auth",
                               self.log_path)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def _records_with_token(url: str, token: str, database: str, collection: str = "memories") -> list[str]:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.HttpClient(host="127.0.0.1", port=int(url.rsplit(":", 1)[1]), database=database,
                                 settings=Settings(anonymized_telemetry=False,
                                                   chroma_client_auth_provider="chromadb.auth.token_authn.TokenAuthClientProvider",
                                                   chroma_client_auth_credentials=token))
    return client.get_collection(collection).get()["documents"]


def test_token_auth_wrong_or_missing_token_and_project_isolation(tmp_path):
    import secrets

    tokens = {"payments": "ck-" + secrets.token_hex(16), "search": "ck-" + secrets.token_hex(16)}
    srv = AuthServer(tmp_path, tokens)
    try:
        good = {"CONSOLIDATE_TEAM_TOKEN": tokens["payments"]}
        a = machine(tmp_path, "a", srv, extra_env=good)
        session(a, "a1", "Card refunds go through the refunds-v2 queue", extra_env=good)
        assert _records_with_token(srv.url, tokens["payments"], "consolidate_payments") == [
            "Card refunds go through the refunds-v2 queue"]
        # a wrong or missing token: one clear line, exit 4, and B stays out of the team
        b = tmp_path / "b" / ".memofs"
        for bad in ({"CONSOLIDATE_TEAM_TOKEN": "ck-" + secrets.token_hex(16)}, {}):
            out = cli(b, "team", "init", "--chroma-url", srv.url, "--project", "payments", "--embedding", "hash",
                      extra_env=bad, check=False)
            assert out.returncode == 4 and out.stderr.count("\n") == 1, out.stderr
            assert "refused the token" in out.stderr and "Traceback" not in out.stderr
            assert not (b / "team.json").exists()
        # A with a wrong token: the run completes locally, nothing reaches the server, the push waits
        wrong = {"CONSOLIDATE_TEAM_TOKEN": "ck-" + secrets.token_hex(16)}
        out = session(a, "a2", "Refund webhooks retry 5 times with backoff", extra_env=wrong)
        assert "graduated" in out.stdout
        assert len(_records_with_token(srv.url, tokens["payments"], "consolidate_payments")) == 1
        status = cli(a, "status", extra_env=wrong).stdout
        assert "pending pushes: 1" in status and "refused the token" in status
        assert cli(a, "sync", extra_env=good).stdout.startswith("pushed 1 runs")
        assert len(_records_with_token(srv.url, tokens["payments"], "consolidate_payments")) == 2
        # the token from a file: refused while others can read it, used once it is 0600
        token_file = tmp_path / "secrets" / "team-token"
        token_file.parent.mkdir()
        token_file.write_text(tokens["payments"] + "\n")
        token_file.chmod(0o644)
        out = cli(b, "team", "init", "--chroma-url", srv.url, "--project", "payments", "--embedding", "hash",
                  "--token-file", str(token_file), check=False)
        assert out.returncode == 2 and "readable by others" in out.stderr and not (b / "team.json").exists()
        token_file.chmod(0o600)
        cli(b, "team", "init", "--chroma-url", srv.url, "--project", "payments", "--embedding", "hash",
            "--token-file", str(token_file))
        assert set(local_docs(b)) == {"Card refunds go through the refunds-v2 queue",
                                      "Refund webhooks retry 5 times with backoff"}
        # project isolation: payments' token cannot open search's database; search's store sees none of payments
        c = tmp_path / "c" / ".memofs"
        out = cli(c, "team", "init", "--chroma-url", srv.url, "--project", "search", "--embedding", "hash",
                  extra_env=good, check=False)
        assert out.returncode == 4 and "refused the token" in out.stderr
        other = {"CONSOLIDATE_TEAM_TOKEN": tokens["search"]}
        cli(c, "team", "init", "--chroma-url", srv.url, "--project", "search", "--embedding", "hash", extra_env=other)
        session(c, "c1", "The search index is rebuilt from Postgres every hour", extra_env=other)
        assert local_docs(c) == ["The search index is rebuilt from Postgres every hour"]
        with pytest.raises(Exception, match="(?i)forbidden"):
            _records_with_token(srv.url, tokens["search"], "consolidate_payments")
        with pytest.raises(Exception, match="(?i)forbidden"):
            _records_with_token(srv.url, tokens["payments"], "consolidate_search")
        assert "The search index is rebuilt from Postgres every hour" not in _records_with_token(
            srv.url, tokens["payments"], "consolidate_payments")
        # the installed hook command carries no token, and its SessionStart works with the token in the environment
        project = tmp_path / "a"
        installed = cli(a, "install-hook", "claude-code", extra_env=good, cwd=project).stdout
        assert f"team store: {srv.url} project payments" in installed and "$CONSOLIDATE_TEAM_TOKEN" in installed
        assert tokens["payments"] not in installed
        settings = project / ".claude" / "settings.json"
        assert "hook --store" in settings.read_text()
        shown = subprocess.run(CONSOLIDATE + ["hook", "--store", str(a)], input=json.dumps(
            {"session_id": "a3", "hook_event_name": "SessionStart", "cwd": str(project)}), capture_output=True,
            text=True, env=env(**good), timeout=120).stdout
        assert "pulled from the team store just now" in shown
        # the token is in no file of any store folder (logs included) and in no hook command
        for folder in (a, b, c, settings.parent):
            for path in folder.rglob("*"):
                if path.is_file():
                    data = path.read_bytes()
                    for token in tokens.values():
                        assert token.encode() not in data, f"token found in {path}"
    finally:
        srv.stop()


def _readme_auth_server_block() -> str:
    import re
    import textwrap

    readme = (REPO / "docs" / "team.md").read_text()  # the README's, moved (issue 32)
    blocks = re.findall(r"^( *)```bash\n(.*?)^\1```", readme, re.MULTILINE | re.DOTALL)
    [block] = [textwrap.dedent(body) for _indent, body in blocks if "uvicorn chromadb.app:app" in body]
    return block


def test_readme_token_server_command_right_wrong_and_missing_token(tmp_path):
    """The README's command for a team server with token authentication, run as written (a fresh
    token, a temporary data folder, a loopback port): the right token works, a wrong or a missing
    one gets one line (exit 4) and writes nothing, and the token is in no file of either store folder
    (logs included), in no installed hook command and in no line the commands printed."""
    import secrets

    token = "ck-" + secrets.token_hex(24)
    port = _free_port()
    script = (_readme_auth_server_block().replace("PAYMENTS-TOKEN", token)
              .replace("/srv/chroma", str(tmp_path / "server-data"))
              .replace("--host 0.0.0.0", "--host 127.0.0.1").replace("--port 8000", f"--port {port}"))
    assert token in script and "--host 127.0.0.1" in script
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(["bash", "-c", script], cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
                                env={**env(), "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
                                     "ANONYMIZED_TELEMETRY": "False"}, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    printed = []
    try:
        wait_until_answers(url + "/api/v2/heartbeat", proc, 120, "the README's chroma server", log_path)
        assert (tmp_path / "users.yaml").stat().st_mode & 0o077 == 0
        good = {"CONSOLIDATE_TEAM_TOKEN": token}
        a = tmp_path / "a" / ".memofs"
        out = cli(a, "team", "init", "--chroma-url", url, "--project", "payments", "--embedding", "hash", extra_env=good)
        printed.append(out.stdout + out.stderr)
        out = session(a, "a1", "Chargebacks are answered within 7 days", extra_env=good)
        printed.append(out.stdout + out.stderr)
        assert _records_with_token(url, token, "consolidate_payments") == ["Chargebacks are answered within 7 days"]
        b = tmp_path / "b" / ".memofs"
        for bad in ({"CONSOLIDATE_TEAM_TOKEN": "ck-" + secrets.token_hex(24)}, {}):
            out = cli(b, "team", "init", "--chroma-url", url, "--project", "payments", "--embedding", "hash",
                      extra_env=bad, check=False)
            assert out.returncode == 4 and out.stderr.count("\n") == 1 and "refused the token" in out.stderr, out.stderr
            assert not (b / "team.json").exists()
        # A with a wrong token: the run completes locally, the push is refused and waits, nothing is written
        out = session(a, "a2", "Disputed charges freeze the payout for 3 days",
                      extra_env={"CONSOLIDATE_TEAM_TOKEN": "ck-" + secrets.token_hex(24)})
        printed.append(out.stdout + out.stderr)
        assert _records_with_token(url, token, "consolidate_payments") == ["Chargebacks are answered within 7 days"]
        out = cli(a, "sync", extra_env=good)
        printed.append(out.stdout + out.stderr)
        assert len(_records_with_token(url, token, "consolidate_payments")) == 2
        cli(b, "team", "init", "--chroma-url", url, "--project", "payments", "--embedding", "hash", extra_env=good)
        assert len(local_docs(b)) == 2
        installed = cli(a, "install-hook", "claude-code", extra_env=good, cwd=tmp_path / "a")
        printed.append(installed.stdout + installed.stderr)
        for folder in (a, b, tmp_path / "a" / ".claude"):
            for path in folder.rglob("*"):
                if path.is_file():
                    assert token.encode() not in path.read_bytes(), f"token found in {path}"
        assert not any(token in text for text in printed)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def test_insecure_urls_are_refused_without_the_flag(tmp_path):
    store = tmp_path / ".memofs"
    for url, token, why in (("http://10.1.2.3:8000", "ck-x", "plain http on a non-loopback address"),
                            ("https://chroma.example:8000", None, "no team token"),
                            ("ftp://chroma.example", "ck-x", "bad team server URL")):
        extra = {"CONSOLIDATE_TEAM_TOKEN": token} if token else {}
        out = cli(store, "team", "init", "--chroma-url", url, "--project", "p", "--embedding", "hash",
                  extra_env=extra, check=False)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and why in out.stderr, out.stderr
        assert not (store / "team.json").exists()
    from consolidate.team.local import check_url

    assert check_url("http://10.1.2.3:8000", None, insecure=True) == ("10.1.2.3", 8000, False)
    assert check_url("http://localhost:8000", None, insecure=False) == ("localhost", 8000, False)
    assert check_url("http://[::1]:9000", None, insecure=False)[1] == 9000
    assert check_url("https://chroma.example", "ck-x", insecure=False) == ("chroma.example", 443, True)


@pytest.mark.parametrize("point", ["apply:events", "apply:outbox", "team:push"])
def test_a_run_killed_before_or_during_its_push_pushes_exactly_once(tmp_path, server, point):
    """SIGKILL before the outbox entry is written (the journal replays it), after it (the next run
    pushes it) and after the server took the writes but before the entry was removed (pushed again:
    the same records, no second version, no second event)."""
    a = machine(tmp_path, "a", server)
    for text in ("Feature flags live in config/flags.yaml", "The billing service owns the invoices table"):
        cli(a, "note", "--session", "k1", "--flag", text)
    cli(a, "end", "--session", "k1", "--outcome", "success")
    crashed = cli(a, "run", "--judge", "noop", extra_env={"CONSOLIDATE_CRASH_AT": point}, check=False)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-500:]
    cli(a, "run", "--judge", "noop")
    assert cli(a, "sync").stdout.startswith("pushed 0 runs")
    records = server_records(server)
    assert sorted(r["document"] for r in records) == ["Feature flags live in config/flags.yaml",
                                                      "The billing service owns the invoices table"]
    assert [r["metadata"]["version"] for r in records] == [1, 1]
    events = [json.loads(r["document"]) for r in server_records(server, collection="events")]
    assert [e["session_id"] for e in events if e["event"] == "run.applied"] == ["k1"]
    assert len([e for e in events if e["event"] == "memory.written"]) == 2


def test_forget_on_a_is_forgotten_on_b(tmp_path, server):
    """``consolidate forget`` is a maintenance plan: it is pushed too; B drops the memory and holds
    back a later session that states it again, as A does."""
    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    text = "The legacy payments API key rotates every 30 days"
    session(a, "a1", text)
    cli(b, "sync")
    assert local_docs(b) == [text]
    [mid] = [r["id"] for r in server_records(server)]
    cli(a, "forget", mid)
    assert [r["metadata"]["status"] for r in server_records(server)] == ["forgotten"]
    cli(b, "sync")
    assert local_docs(b) == []
    script = tmp_path / "keep.json"
    script.write_text(json.dumps({"payments API key": {
        "verdict": "keep", "statement": text, "type": "fact", "evidence": "observed-success", "confidence": "high",
        "reason": "scripted keep"}}))
    out = session(b, "b1", text, judge=f"scripted:{script}", flag=False)  # judged, not flagged: held back
    assert local_docs(b) == [] and "forgotten" in out.stdout.lower(), out.stdout


def test_b_recalls_an_identifier_a_pushed_and_not_once_a_forgot_it(tmp_path, server):
    """Hybrid recall on a team store (issue 29 item 4): a pull writes B's lexical index with its
    vectors, so ``recall PROJ-4821`` on B finds the memory A pushed and B's lexical index holds it;
    once A forgets it and B pulls, B's lexical index drops it and recall returns nothing."""
    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    text = "Refunds over 500 EUR wait for the fraud review queue, ticket PROJ-4821"
    session(a, "a1", text)
    from consolidate.store.index import lexical

    def lexical_ids(store: Path) -> list[str]:
        idx = lexical.LexicalIndex(store / lexical.INDEX_FILE, readonly=True)
        try:
            return [m.id for m in idx.search(lexical.parse_query("PROJ-4821"), statuses=lexical.ALL_STATUSES, tier=None)]
        finally:
            idx.close()

    hits = json.loads(cli(b, "recall", "PROJ-4821", "--json").stdout)
    assert [(h["statement"], h["match"] in ("lexical", "both")) for h in hits] == [(text, True)]
    [mid] = [r["id"] for r in server_records(server)]
    assert lexical_ids(b) == [mid]  # written by the pull, with the vectors
    cli(a, "forget", mid)
    cli(b, "sync")
    assert lexical_ids(b) == []
    assert json.loads(cli(b, "recall", "PROJ-4821", "--json", "--min-similarity", "-1", "--all").stdout) == []


def _wait_tls(url: str, cert: Path, proc, seconds: float, log: Path) -> None:
    import ssl
    import urllib.request

    ctx = ssl.create_default_context(cafile=str(cert))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1, context=ctx)
            return
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"the TLS chroma server exited: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
    pytest.fail("the TLS chroma server did not answer")


def test_https_team_store_checks_its_certificate(tmp_path):
    """TLS when the URL is https: a certificate the machine does not trust is refused in one line,
    and nothing is written; trusted (its CA in SSL_CERT_FILE) the team store works, SessionStart's
    standard-library path included."""
    import secrets

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    token = "ck-" + secrets.token_hex(16)
    srv = AuthServer(tmp_path, {"payments": token}, tls=(key, cert))
    try:
        assert srv.url.startswith("https://")
        good = {"CONSOLIDATE_TEAM_TOKEN": token}
        a = tmp_path / "a" / ".memofs"
        out = cli(a, "team", "init", "--chroma-url", srv.url, "--project", "payments", "--embedding", "hash",
                  extra_env=good, check=False)
        assert out.returncode == 4 and out.stderr.count("\n") == 1 and "TLS certificate" in out.stderr, out.stderr
        assert not (a / "team.json").exists()
        trusted = {**good, "SSL_CERT_FILE": str(cert)}
        machine(tmp_path, "a", srv, extra_env=trusted)
        session(a, "a1", "Card refunds go through the refunds-v2 queue", extra_env=trusted)
        assert "memories 1," in cli(a, "sync", "--status", extra_env=trusted).stdout
        b = machine(tmp_path, "b", srv, extra_env=trusted)
        shown = subprocess.run(CONSOLIDATE + ["hook", "--store", str(b)], input=json.dumps(
            {"session_id": "b1", "hook_event_name": "SessionStart", "cwd": str(tmp_path)}), capture_output=True,
            text=True, env=env(**trusted), timeout=120).stdout
        assert "pulled from the team store just now" in shown and "refunds-v2 queue" in shown
        untrusted = subprocess.run(CONSOLIDATE + ["hook", "--store", str(b)], input=json.dumps(
            {"session_id": "b2", "hook_event_name": "SessionStart", "cwd": str(tmp_path)}), capture_output=True,
            text=True, env=env(**good), timeout=120).stdout
        assert "the team store was not reached" in untrusted and "refunds-v2 queue" in untrusted
    finally:
        srv.stop()


# -- the layout: a team store's folder holds only the entries consolidate/store/layout.py lists --------


def test_the_stores_of_a_team_hold_only_the_layouts_entries(tmp_path, server):
    """Two machines in a team (a run pushed on A, pulled by B's SessionStart hook and a sync): every
    file and folder of both stores is an entry of consolidate.store.layout, and the team's own
    entries are among them (issue 27 item 3; tests/unit/store/test_store_layout.py does one store alone)."""
    from consolidate.store import layout

    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    session(a, "a1", "Run pnpm install --frozen-lockfile before tests; package.json pins pnpm 9")
    hook = subprocess.run(CONSOLIDATE + ["hook", "--store", str(b)], input=json.dumps(
        {"session_id": "b1", "hook_event_name": "SessionStart", "cwd": str(tmp_path / "b")}), capture_output=True,
        text=True, env=env(), timeout=120)
    assert hook.returncode == 0, hook.stderr
    cli(b, "sync")
    made = set()
    for store in (a, b):
        found = sorted(p.relative_to(store).as_posix() for p in store.rglob("*"))
        assert [rel for rel in found if layout.entry_of(rel) is None] == []
        made |= {layout.entry_of(rel) for rel in found}
    assert {layout.TEAM_JSON, layout.TEAM, layout.TEAM_STATE, layout.TEAM_LEDGER} <= made


# -- a pull reads what changed since its cursor, not the whole team store (issue 34) -----------------


def test_a_pull_reads_only_the_records_changed_since_its_cursor(tmp_path, server):
    """Every server write carries ``changed_at``; a store that pulled once reads only the records
    changed since the newest it saw (less CURSOR_SKEW): a record on the server stamped before that
    window and unknown to B is not read by B's next pull, what A pushes meanwhile is; a new machine
    (no cursor) reads every record."""
    import chromadb
    from chromadb.config import Settings

    from consolidate.team.sync import CURSOR_SKEW

    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    session(a, "a1", "Service alpha listens on port 7001")
    cli(b, "sync")
    [first] = server_records(server)
    assert isinstance(first["metadata"]["changed_at"], float)
    cursor = read_ledger(b)["cursor"]
    assert cursor >= first["metadata"]["changed_at"]
    host, port = server.url.rsplit(":", 1)
    col = chromadb.HttpClient(host=host.split("//")[1], port=int(port), database=server.database,
                              settings=Settings(anonymized_telemetry=False)).get_collection("memories")
    old = "Service omega listens on port 7999"
    got = col.get(ids=[first["id"]], include=["embeddings", "metadatas"])
    col.upsert(ids=["mem-old-unseen"], documents=[old], embeddings=[list(got["embeddings"][0])],
               metadatas=[{**got["metadatas"][0], "changed_at": cursor - 2 * CURSOR_SKEW, "write_id": "old:1"}])
    session(a, "a2", "Service beta listens on port 7002")
    cli(b, "sync")
    on_b = stored_docs(b)
    assert "Service beta listens on port 7002" in on_b and old not in on_b
    assert read_ledger(b)["cursor"] > cursor
    c = machine(tmp_path, "c", server)
    assert old in stored_docs(c) and "Service beta listens on port 7002" in stored_docs(c)


def test_a_store_with_the_json_ledger_of_an_earlier_version_keeps_what_it_knew(tmp_path, server):
    """A store that pulled with an earlier version has ``team/ledger.json`` (read and rewritten whole
    by every pull and push). Its next ``sync`` moves it into ``team/ledger.sqlite3``: the memories it
    had are not pulled again (their versions and write ids came along, and the cursor), what A pushed
    since is, and the JSON file is gone."""
    from consolidate.store.layout import TEAM_LEDGER, TEAM_LEDGER_JSON

    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    session(a, "a1", "Service alpha listens on port 7001")
    cli(b, "sync")
    before = read_ledger(b)
    assert len(before["memories"]) == 1 and before["cursor"]
    TEAM_LEDGER_JSON.of(b).write_text(json.dumps(before))  # as the earlier version left it
    TEAM_LEDGER.of(b).unlink()
    session(a, "a2", "Service beta listens on port 7002")
    out = cli(b, "sync").stdout
    assert "pulled 1 memories" in out, out
    assert not TEAM_LEDGER_JSON.of(b).exists()
    after = read_ledger(b)
    assert len(after["memories"]) == 2 and before["memories"].items() <= after["memories"].items()
    assert after["cursor"] > before["cursor"]
    assert stored_docs(b) == ["Service alpha listens on port 7001", "Service beta listens on port 7002"]


def test_a_machine_whose_clock_is_a_day_fast_hides_nothing_from_the_others(tmp_path, server):
    """Machine F's clock runs a day ahead: its record is stamped ``changed_at`` a day in the future,
    and its push leaves that stamp in the team clock. B pulls it; A (a right clock) then pushes, and
    B's next pull still gets A's memory: B's cursor did not pass B's own clock, and A stamped its
    write no earlier than the latest stamp on the team store. The future stamp is logged."""
    import time as _time

    import chromadb
    from chromadb.config import Settings

    a = machine(tmp_path, "a", server)
    b = machine(tmp_path, "b", server)
    session(a, "a1", "Service alpha listens on port 7001")
    cli(b, "sync")
    [first] = server_records(server)
    host, port = server.url.rsplit(":", 1)
    client = chromadb.HttpClient(host=host.split("//")[1], port=int(port), database=server.database,
                                 settings=Settings(anonymized_telemetry=False))
    col = client.get_collection("memories")
    got = col.get(ids=[first["id"]], include=["embeddings", "metadatas"])
    future = _time.time() + 86_400
    fast = "Service fast listens on port 7100"
    col.upsert(ids=["mem-fast-clock"], documents=[fast], embeddings=[list(got["embeddings"][0])],
               metadatas=[{**got["metadatas"][0], "changed_at": future, "write_id": "f:1", "origin": "f"}])
    client.get_collection("clock").upsert(ids=["clock"], documents=["tok-f"], embeddings=[[1.0]],
                                          metadatas=[{"origin": "f", "stamp": future}])
    cli(b, "sync")
    assert fast in stored_docs(b)
    assert read_ledger(b)["cursor"] < future - 3600
    session(a, "a2", "Service beta listens on port 7002")
    beta = [r for r in server_records(server) if r["document"] == "Service beta listens on port 7002"]
    assert beta and beta[0]["metadata"]["changed_at"] >= future
    out = cli(b, "sync").stdout
    assert "pulled 1 memories" in out, out
    assert "Service beta listens on port 7002" in stored_docs(b)
    assert "stamped more than 900 s ahead of this machine's clock (written by f)" in (b / "logs" / "team.log").read_text()


def test_a_team_ledger_that_cannot_be_opened_is_one_line_and_loses_nothing(tmp_path, server):
    """A folder where team/ledger.sqlite3 should be: ``sync`` says so in one line naming the file
    (no traceback, exit 4), the local run still applies, and once the folder is gone the next sync
    pushes what waited and converges."""
    from consolidate.store.layout import TEAM_LEDGER

    a = machine(tmp_path, "a", server)
    session(a, "a1", "Service alpha listens on port 7001")
    path = TEAM_LEDGER.of(a)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.mkdir()
    out = cli(a, "sync", check=False)
    assert out.returncode == 4 and "Traceback" not in out.stderr, out.stderr
    assert f"the team ledger {path} cannot be used" in out.stderr + out.stdout
    session(a, "a2", "Service beta listens on port 7002")
    assert "Service beta listens on port 7002" in stored_docs(a)
    path.rmdir()
    cli(a, "sync")
    assert sorted(r["document"] for r in server_records(server)) == ["Service alpha listens on port 7001",
                                                                   "Service beta listens on port 7002"]
