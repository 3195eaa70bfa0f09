"""Team store at scale (issue 34, goal 3): a real 1,000-note run and recall with the team store on a
``chroma run`` server (127.0.0.1) holding 1,000 against ``--memories`` (default 1,000,000) memories.

The server's data folder is cached in /tmp/consolidate-bench-cache/team-million/ (or
$CONSOLIDATE_BENCH_CACHE/team-million) and reused when its ``info.json`` says a project was built
complete; a cut build resumes where it stopped. Two projects on the one server: ``small`` (1,000
memories) and ``big`` (``--memories``). Building is the fast path: records with the metadata a push
writes (consolidate/team/sync.py ``_push_memories``: the local record's metadata, as
consolidate.store.index.longterm writes it, plus ``version``, ``origin``, ``updated_at``,
``write_id``) and random unit vectors of the hash embedding's dimension (256), upserted in large
batches through the chroma client. Only the memories collection is filled (no edges). Both
projects are on the one server: a metadata ``where`` there is evaluated against every record of
the server (the small project's filtered query pays for the big one's records).

Each timed run: a fresh local store (project ``bench``, hash embedding) in the team, up to date with
the team store (its ``team/ledger.sqlite3`` and ``team/state.json`` written as a pull of the built
records leaves them; its local index does not hold the built memories: a local index at scale is
bench_scale.py's), 1,000 real notes in one ended session; then ``run_queue`` with the scripted judge
keeping 1 in 5 (the pull before the run, the run, the push after it) in its own process, which
reports its time and its peak RSS (/proc/self/status VmHWM: ``ru_maxrss`` would carry the parent's
peak over the exec). Runs alternate the sizes; medians. Recall: in one
process per size, recall's search (``LongTerm.search``, as ``consolidate.recall`` calls it) on the
server's collection, and beside it the server's own filtered query; p50/p95 (:func:`recall_side`). The server's peak RSS is /proc/PID/status VmHWM.

    python benchmarks/bench_team_scale.py [--runs 5] [--memories 1000000] [--queries 40]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _bench import (CACHE, PYTHON, check_venv, fill_session, goal_line, median, real_notes,  # noqa: E402
                    release_chroma, skip_without_notes)
from bench_team import free_port  # noqa: E402

FOLDER = CACHE / "team-million"
SCOPE = "bench"
VERSION = 1  # of the cache layout
TYPES = ("fact", "fact", "decision", "constraint", "recipe", "failure", "preference")
TOOLS = ("pnpm", "docker", "pytest", "postgres", "redis", "vite", "ruff", "terraform", "kubectl", "nginx")
BATCH = 5000
CHANGED_AT = 1764633600.0  # 2025-12-02: the built records were written long before any run

WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
from _bench import STAGE_SECONDS, install_stage_timers, scripted_chain_factory
from consolidate.pipeline.run import run_queue
from consolidate.pipeline.stages.apply import summary
from consolidate.store.store import Store
store = Store(sys.argv[1], project="bench", embedding="hash")
install_stage_timers()
from consolidate.team import sync
TEAM = {}
for _name in ("pull", "push"):
    def _timed(*a, _fn=getattr(sync, _name), _name=_name, **k):
        t = time.perf_counter()
        try:
            return _fn(*a, **k)
        finally:
            TEAM[_name] = TEAM.get(_name, 0.0) + time.perf_counter() - t
    setattr(sync, _name, _timed)
t = time.perf_counter()
plans = run_queue(store, chain_factory=scripted_chain_factory(), time_box=None)
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "durable": summary(plans[0])["written_durable"],
                  "push": getattr(plans, "team_push", None) and {k: v for k, v in plans.team_push.items() if k != "pushed"},
                  "stages": {**dict(STAGE_SECONDS), **{"team " + k: v for k, v in TEAM.items()}}, "maxrss_mb": [int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:")][0] / 1024}))
"""

def start_chroma() -> tuple[subprocess.Popen, str]:
    exe = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    port = free_port()
    log = open(FOLDER / "chroma.log", "ab")
    proc = subprocess.Popen([exe, "run", "--path", str(FOLDER / "server"), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    import urllib.request
    for _ in range(1200):
        try:
            urllib.request.urlopen(url + "/api/v2/heartbeat", timeout=1)
            return proc, url
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("chroma run exited: see " + str(FOLDER / "chroma.log")) from None
            time.sleep(0.1)
    raise SystemExit("chroma run did not answer")


def vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}


def team_config(store_path: Path, url: str, project: str, machine: str) -> None:
    from consolidate.team import local as team

    team.save_config(store_path, team.TeamConfig(url=url, project=project, machine=machine))


def memory_id(i: int) -> str:
    return "mem-" + hashlib.sha256(f"team synthetic {i}".encode()).hexdigest()[:16]


def record(i: int, stamp: str, today: str) -> tuple[str, str, dict]:
    type_ = TYPES[i % len(TYPES)]
    status = "quarantined" if i % 25 == 3 else "disputed" if i % 100 == 7 else "active"
    evidence = "inferred" if status == "quarantined" else ("user-stated", "observed-success")[i % 2]
    session, run_id = f"syn-{i // 20}", f"run-syn{i // 20:08d}"
    prov = {"session_id": session, "run_id": run_id, "date": stamp, "evidence": evidence,
            "source": "judge:api:gpt-4o-mini", "prompt_version": "judge-v1", "reason": "synthetic", "note_ids": [i]}
    doc = (f"Synthetic memory {i}: the {TOOLS[i % len(TOOLS)]} setup of component {i % 997} needs option {i % 89}"
           f" because of constraint {i % 31}.")
    meta = {"type": type_, "status": status, "tier": "durable", "evidence": evidence,
            "confidence": "low" if status == "quarantined" else ("medium", "high")[i % 2], "last_confirmed": today,
            "scope": SCOPE, "session_id": session, "run_id": run_id, "source": prov["source"],
            "prompt_version": "judge-v1", "provenance": json.dumps(prov), "fields": "{}",
            "version": 1, "origin": "builder", "updated_at": stamp, "changed_at": CHANGED_AT,
            "write_id": f"builder:{i:012x}"}
    return memory_id(i), doc, meta


def build(url: str, project: str, n: int, info: dict, as_built: bool = False) -> int:
    """Fill project ``project``'s memories collection to ``n`` records (resumes a cut build); with
    ``as_built``, build nothing more and return the size a cut build reached. Returns the size."""
    import numpy as np

    from consolidate.store.store import Store
    from consolidate.team import sync

    scratch = Path(tempfile.mkdtemp(prefix="bench-team-build-"))
    store = Store(scratch / ".memofs", project=SCOPE, embedding="hash")
    sync.init(store, url, project)
    col = sync.TeamClient(store).memories()
    dim = store.embedder().dimension
    last = col.get(ids=[memory_id(n - 1)], include=["metadatas"])["metadatas"]
    if info.get(project) == n and last and "changed_at" in (last[0] or {}):
        shutil.rmtree(scratch, ignore_errors=True)
        return n
    if as_built:
        shutil.rmtree(scratch, ignore_errors=True)
        return col.count() // BATCH * BATCH
    have = col.count() if last and "changed_at" in (last[0] or {}) or info.get(project) != n else 0
    start = (have // BATCH) * BATCH
    print(f"building project {project}: {n:,} memories ({have:,} there) ...", flush=True)
    t0 = time.time()
    now = info.setdefault("built_at", time.time())
    stamp = _dt.datetime.fromtimestamp(now, _dt.timezone.utc).isoformat(timespec="seconds")
    today = stamp[:10]
    rng = np.random.default_rng(start + 11)
    for lo in range(start, n, BATCH):
        rows = [record(i, stamp, today) for i in range(lo, min(n, lo + BATCH))]
        vecs = rng.standard_normal((len(rows), dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        col.upsert(ids=[r[0] for r in rows], documents=[r[1] for r in rows], metadatas=[r[2] for r in rows],
                   embeddings=vecs)
        if (lo // BATCH) % 20 == 0:
            print(f"  {lo + len(rows):,} ({time.time() - t0:.0f} s)", flush=True)
    assert col.count() == n, col.count()
    info[project] = n
    info[f"{project}_build_seconds"] = round(time.time() - t0, 1)
    (FOLDER / "info.json").write_text(json.dumps(info))
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"  built in {time.time() - t0:.0f} s", flush=True)
    return n


def ledger_for(folder: Path, n: int, clock) -> Path:
    """``team/ledger.sqlite3`` as a pull of the built records leaves it (every id at version 1, its
    write id; the clock token; the cursor of a pull some time after the build: the newest change
    seen later than the built ones), written once under ``folder``; returns its path."""
    from consolidate.store.layout import TEAM_LEDGER
    from consolidate.team import ledger

    class _At:
        def sub(self, entry):
            return entry.of(folder)

    seen = {memory_id(i): [1, f"builder:{i:012x}"] for i in range(n)}
    ledger.record(_At(), seen, clock=clock, cursor=CHANGED_AT + 3600, advance=True)
    return TEAM_LEDGER.of(folder)


class Fresh:
    """Fresh local stores joined to a project and up to date with it."""

    def __init__(self, tmp: Path, url: str):
        self.tmp, self.url, self.k = tmp, url, 0
        self.ledgers: dict[str, Path] = {}

    def make(self, project: str, n: int, notes) -> Path:
        from consolidate.store.layout import TEAM_LEDGER, TEAM_STATE
        from consolidate.store.store import Store
        from consolidate.team.http import CLOCK
        from consolidate.team import sync

        self.k += 1
        path = self.tmp / f"s{self.k}" / ".memofs"
        store = Store(path, project=SCOPE, embedding="hash")
        team_config(path, self.url, project, f"bench{self.k}")
        if project not in self.ledgers:
            clock = sync.TeamClient(store).collection(CLOCK).get(ids=[CLOCK], include=["documents"])
            self.ledgers[project] = ledger_for(self.tmp / f"ledger-{project}", n, (clock.get("documents") or [None])[0])
        store.sub(TEAM_LEDGER).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.ledgers[project], store.sub(TEAM_LEDGER))
        store.sub(TEAM_STATE).write_text(json.dumps({"last_pull": "2026-12-02T00:00:00+00:00"}))
        if notes:
            fill_session(store, "bench-1000", notes)
        store.close()
        release_chroma()
        return path


def reset(url: str, project: str, tmp: Path) -> None:
    """The team store back to what was built: the memories and edges the runs pushed deleted (each
    run then writes the same new memories at both sizes; the events stay)."""
    from consolidate.store.store import Store
    from consolidate.team import sync

    store = Store(tmp / f"reset-{project}" / ".memofs", project=SCOPE, embedding="hash")
    if not (store.path / "team.json").exists():
        team_config(store.path, url, project, "reset")
    client = sync.TeamClient(store)
    client.memories().delete(where={"changed_at": {"$gt": CHANGED_AT}})
    edges = client.collection(sync.EDGES)
    ids = edges.get(include=[])["ids"]
    if ids:
        edges.delete(ids=ids)
    store.close()
    release_chroma()


def timed_run(path: Path) -> dict:
    out = subprocess.run([PYTHON, "-c", WORKER, str(path), str(Path(__file__).resolve().parent)],
                         capture_output=True, text=True, env=env())
    if out.returncode:
        raise SystemExit(f"run failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--memories", type=int, default=1_000_000)
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--as-built", action="store_true",
                    help="measure at the size the cached build reached (a build cut for time), building no more")
    args = ap.parse_args()
    check_venv()
    notes = real_notes(args.notes)
    skip_without_notes(notes)
    FOLDER.mkdir(parents=True, exist_ok=True)
    info_path = FOLDER / "info.json"
    info = json.loads(info_path.read_text()) if info_path.exists() else {}
    if info.get("version") != VERSION:
        shutil.rmtree(FOLDER / "server", ignore_errors=True)
        info = {"version": VERSION}
    proc, url = start_chroma()
    tmp = Path(tempfile.mkdtemp(prefix="bench-team-scale-"))
    try:
        build(url, "small", args.small, info)
        args.memories = build(url, "big", args.memories, info, args.as_built)
        print(f"server {url}, data {FOLDER / 'server'}; VmHWM after the build/open {vm_hwm_mb(proc.pid):.0f} MB",
              flush=True)
        if args.build_only:
            return 0
        return measure(args, url, proc, tmp, notes)
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)


def measure(args, url: str, proc, tmp: Path, notes) -> int:
    fresh = Fresh(tmp, url)
    sizes = {f"{args.small:,}": ("small", args.small), f"{args.memories:,}": ("big", args.memories)}
    results: dict[str, list[dict]] = {k: [] for k in sizes}
    names = list(sizes)
    for name in names:
        timed_run(fresh.make(*sizes[name], notes))  # warm-up, not counted
        reset(url, sizes[name][0], tmp)
    for r in range(args.runs):
        for name in names[r % 2:] + names[:r % 2]:
            res = timed_run(fresh.make(*sizes[name], notes))
            results[name].append(res)
            reset(url, sizes[name][0], tmp)
            print(f"  round {r + 1} {name:>10}: {res['seconds']:.1f} s, {res['durable']} kept, push {res['push']},"
                  f" RSS {res['maxrss_mb']:.0f} MB", flush=True)
    per_kept = {n: median([x["seconds"] / x["durable"] for x in results[n]]) for n in names}
    print(f"\n{len(notes)} real notes per run, scripted judge keeping 1 in 5, hash embedding; {args.runs} interleaved"
          " rounds, medians:")
    for n in names:
        rows = results[n]
        print(f"  team store {n:>10}: run {median([x['seconds'] for x in rows]):.2f} s, "
              f"{median([x['durable'] for x in rows]):.0f} kept, {per_kept[n] * 1000:.1f} ms per kept memory;"
              f" worker peak RSS {median([x['maxrss_mb'] for x in rows]):.0f} MB (max"
              f" {max(x['maxrss_mb'] for x in rows):.0f})")
    print("  time per stage (median):")
    stages = list(results[names[0]][0]["stages"])
    for st in stages:
        print(f"    {st:<24}" + "".join(f"{median([x['stages'].get(st, 0) for x in results[n]]):>9.2f}s" for n in names))
    recall_ratio = recall_side(args, fresh, sizes, tmp)
    probe_pull(fresh, sizes, tmp)
    print(f"\nchroma run peak RSS (VmHWM) {vm_hwm_mb(proc.pid):.0f} MB (both projects on the one server)")
    ok = goal_line(f"team scale, time per kept memory at {names[1]}", per_kept[names[1]] / per_kept[names[0]], 1.5,
                   what=f"of the team store at {names[0]}")
    ok = goal_line(f"team scale, recall p95 at {names[1]}", recall_ratio, 2.0, what=f"of p95 at {names[0]}") and ok
    return 0 if ok else 1


def probe_pull(fresh: Fresh, sizes: dict, tmp: Path, limit: float = 30.0) -> None:
    """The pull's read of the memories' heads, timed alone: with the cursor (what a pull reads now)
    and the full read of every head a pull made before issue 34 (pages of 1,000 by offset; stopped
    after ``limit`` seconds)."""
    from consolidate.store.store import Store
    from consolidate.team import sync

    print("\nthe pull's read of the heads (the memories' metadata), timed alone:")
    for name, (project, _n) in sizes.items():
        store = Store(tmp / f"p-{project}" / ".memofs", project=SCOPE, embedding="hash")
        team_config(store.path, fresh.url, project, "p")
        col = sync.TeamClient(store).memories()
        t = time.perf_counter()
        rows = sync._get_all(col, ["metadatas"], {"changed_at": {"$gte": CHANGED_AT + 3600 - sync.CURSOR_SKEW}})
        cur = time.perf_counter() - t
        t, offset, done = time.perf_counter(), 0, False
        while time.perf_counter() - t < limit:
            got = len(col.get(include=["metadatas"], limit=sync.PAGE, offset=offset)["ids"])
            offset += got
            if got < sync.PAGE:
                done = True
                break
        full = time.perf_counter() - t
        print(f"  team store {name:>10}: with the cursor {cur * 1000:.0f} ms ({len(rows)} records changed since);"
              f" every head (before) {'' if done else 'NOT DONE after '}{full:.1f} s ({offset:,} records read)")


def recall_side(args, fresh: Fresh, sizes: dict, tmp: Path) -> float:
    """Recall's search on the server's collection, p50/p95 over 2 x the queries per size, in one
    process (client connected and collection opened first): the product's query
    (consolidate.store.index.longterm ``LongTerm.search`` as ``consolidate.recall`` calls it, depth
    FUSION_DEPTH, statuses RECALLED: the nearest ``k * OVERFETCH`` fetched unfiltered, their records
    read by id, the status and tier filter applied in the client, a filtered query only when too few
    pass), and beside it a query with the metadata ``where`` evaluated by the server (which the
    product makes only then). Returns the product query's p95 ratio (the larger size to the smaller)."""
    from consolidate.pipeline.recall import FUSION_DEPTH
    from consolidate.store.store import Store
    from consolidate.team import sync

    queries = [n["content"][:200] for n in real_notes(args.queries)]
    print("\nrecall's search on the team store's collection (one process per size; client connected and"
          " collection opened first), p50/p95 over 2 x the queries:")
    import numpy as np
    p95 = {}
    for name, (project, _n) in sizes.items():
        store = Store(tmp / f"q-{project}" / ".memofs", project=SCOPE, embedding="hash")
        team_config(store.path, fresh.url, project, "q")
        col = sync.TeamClient(store).memories()
        lt = store.longterm()
        lt._read = lambda fn, col=col: fn(col)  # the product's query code, on the server's collection
        vecs = [np.asarray(v).tolist() for v in store.embedder().embed(queries)]
        where = {"$and": [{"tier": "durable"}, {"status": {"$in": ["active", "disputed"]}}]}
        cases = (("product query (LongTerm.search)", lambda v, lt=lt: lt.search(v, k=FUSION_DEPTH)),
                 ("server where (status, tier)", lambda v, col=col, where=where: col.query(
                     query_embeddings=[v], n_results=FUSION_DEPTH, where=where,
                     include=["documents", "metadatas", "distances"])))
        for label, fn in cases:
            fn(vecs[0])
            xs = []
            for v in vecs * 2:
                t = time.perf_counter()
                fn(v)
                xs.append(time.perf_counter() - t)
            xs.sort()
            p95[(name, label)] = xs[int(len(xs) * 0.95)]
            print(f"  team store {name:>10}, {label:<32}: p50 {xs[len(xs) // 2] * 1000:.1f} ms,"
                  f" p95 {p95[(name, label)] * 1000:.1f} ms")
        store.close()
    a, b = list(sizes)
    label = cases[0][0]
    print(f"  p95 ratio, {label}: {p95[(b, label)] / p95[(a, label)]:.2f}x;"
          f" server where: {p95[(b, cases[1][0])] / p95[(a, cases[1][0])]:.2f}x")
    return p95[(b, label)] / p95[(a, label)]


if __name__ == "__main__":
    sys.exit(main())
